// Capture from Python programs (core/script/): the walkthrough samples run with their graph, break
// and recompile counts; captured graphs match TorchDynamo's (the fixtures' 1_dynamo_fx_N.txt);
// compiled results and gradients match the fixtures' PyTorch outputs and finite differences; a
// failing or endless script is reported and the host goes on.
#include <QtTest>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "frontend/fx_text.h"
#include "script/script.h"
#include "tensor/npy.h"

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

ls::ScriptRun run_sample(const std::string& name) {
  const std::string path = std::string(LS_SAMPLES) + "/python/" + name;
  return ls::run_script(read(path), path);
}

// Callee and node name of every op node, in order.
std::vector<std::pair<std::string, std::string>> ops_of(const ls::Graph& g) {
  std::vector<std::pair<std::string, std::string>> v;
  for (const ls::Node& n : g.nodes)
    if (!n.is_placeholder()) v.emplace_back(n.target, n.name);
  return v;
}

}  // namespace

class TestScript : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    if (!ls::have_python()) QSKIP("this build has no embedded Python (python3-dev)");
  }

  void testSincosSample() {
    const ls::ScriptRun r = run_sample("sincos.py");
    QVERIFY2(r.ok, r.error.c_str());
    QCOMPARE(r.graphs.size(), size_t(1));
    QCOMPARE(r.breaks.size(), size_t(0));
    QVERIFY(r.graphs[0].result && r.graphs[0].result->check.ok);
    QVERIFY2(r.output.find("sin^2 + cos^2 == 1: True") != std::string::npos, r.output.c_str());
    // The same ops, in the same order and with the same names, as TorchDynamo's graph.
    const ls::Graph ours = ls::import_fx_text(r.graphs[0].graph_text, "captured");
    const ls::Graph dynamo = ls::import_fx_text(read(std::string(LS_TEST_DATA) + "/stages/sincos/1_dynamo_fx_0.txt"));
    QCOMPARE(ops_of(ours), ops_of(dynamo));
    // One kernel, as Inductor.
    int generated = 0;
    for (const auto& k : r.graphs[0].result->kernels) generated += k.kind == ls::KernelKind::generated;
    QCOMPARE(generated, 1);
  }

  void testMseLossSample() {
    const ls::ScriptRun r = run_sample("mse_loss.py");
    QVERIFY2(r.ok, r.error.c_str());
    QCOMPARE(r.graphs.size(), size_t(1));
    QVERIFY2(r.output.find("matches eager: True") != std::string::npos, r.output.c_str());
    const ls::Graph ours = ls::import_fx_text(r.graphs[0].graph_text, "captured");
    const ls::Graph dynamo = ls::import_fx_text(read(std::string(LS_TEST_DATA) + "/stages/mse_loss/1_dynamo_fx_0.txt"));
    QCOMPARE(ops_of(ours), ops_of(dynamo));
  }

  // toy_example: 2 graphs and 1 break, as 1_dynamo_explain.txt; both graphs as Dynamo's.
  void testToyExampleBreaks() {
    const ls::ScriptRun r = run_sample("toy_example.py");
    QVERIFY2(r.ok, r.error.c_str());
    QCOMPARE(r.graphs.size(), size_t(2));
    QCOMPARE(r.breaks.size(), size_t(1));
    QCOMPARE(r.breaks[0].reason, std::string("generic_jump TensorVariable()"));
    QVERIFY2(r.breaks[0].code.find("if b.sum() < 0:") != std::string::npos, r.breaks[0].code.c_str());
    QVERIFY2(r.output.find("Graph Count: 2") != std::string::npos, r.output.c_str());
    QVERIFY(r.output.find("Graph Break Count: 1") != std::string::npos);
    QVERIFY(r.output.find("matches eager: True") != std::string::npos);
    QCOMPARE(r.graphs[1].function.rfind("torch_dynamo_resume_in_toy_example_at_", 0), size_t(0));
    for (int k = 0; k < 2; ++k) {
      const ls::Graph ours = ls::import_fx_text(r.graphs[k].graph_text, "captured");
      const ls::Graph dynamo = ls::import_fx_text(
          read(std::string(LS_TEST_DATA) + "/stages/toy_example/1_dynamo_fx_" + std::to_string(k) + ".txt"));
      QCOMPARE(ops_of(ours), ops_of(dynamo));
      QCOMPARE(ours.user_inputs().size(), dynamo.user_inputs().size());
      QVERIFY(r.graphs[k].result && r.graphs[k].result->check.ok);
    }
  }

  // As PyTorch: fn(x, 2) compiles with n constant, fn(x, 3) recompiles with n symbolic (automatic
  // dynamic shapes) and fn(x, 6) shares it; fn(x, -3) recompiles, naming the failed guard.
  void testRecompileOnIntGuard() {
    const ls::ScriptRun r = run_sample("recompile.py");
    QVERIFY2(r.ok, r.error.c_str());
    QCOMPARE(r.graphs.size(), size_t(3));
    QCOMPARE(r.recompiles, 2);
    QCOMPARE(r.graphs[0].calls, 1);  // n = 2, a constant of the graph
    QCOMPARE(r.graphs[1].calls, 2);  // n = 3 and 6: symbolic since a second value came
    QCOMPARE(r.graphs[2].calls, 1);  // n = -3: the other branch
    QVERIFY(std::find(r.graphs[0].guards.begin(), r.graphs[0].guards.end(), "L['n'] == 2") != r.graphs[0].guards.end());
    QVERIFY2(r.graphs[1].reason.find("guard failed: L['n'] == 2") != std::string::npos, r.graphs[1].reason.c_str());
    QVERIFY2(r.graphs[2].reason.find("L['n'] >= 0") != std::string::npos, r.graphs[2].reason.c_str());
    QVERIFY(r.output.find("False") == std::string::npos);
    QCOMPARE(std::count(r.output.begin(), r.output.end(), '\n'), 4L);
  }

  // Dynamic shapes: dynamic=True compiles once and the same kernels run at four row counts; the
  // default compiles for the first size, then once more with symbolic sizes when the size changes
  // (automatic dynamic shapes); a size outside the guards (one row) recompiles, naming the guard.
  // Every call's result against the uncompiled function (the reference kernels), in the script.
  void testDynamicShapes() {
    const ls::ScriptRun r = run_sample("dynamic_shapes.py");
    QVERIFY2(r.ok, r.error.c_str());
    QCOMPARE(r.graphs.size(), size_t(3));
    QCOMPARE(r.recompiles, 1);
    QVERIFY(r.graphs[0].dynamic);
    QCOMPARE(r.graphs[0].calls, 4);
    QCOMPARE(r.graphs[0].sizes, (std::vector<std::string>{"8x64", "24x64", "40x64", "7x64"}));
    QVERIFY(!r.graphs[1].dynamic);
    QCOMPARE(r.graphs[1].calls, 1);
    QVERIFY(r.graphs[2].dynamic);
    QCOMPARE(r.graphs[2].calls, 3);
    QVERIFY2(r.graphs[2].reason.find("size mismatch at index 0. expected 8, actual 24") != std::string::npos, r.graphs[2].reason.c_str());
    QVERIFY(r.graphs[2].reason.find("automatic dynamic shapes") != std::string::npos);
    QVERIFY(std::find(r.graphs[0].guards.begin(), r.graphs[0].guards.end(), "2 <= L['x'].size()[0]") != r.graphs[0].guards.end());
    QVERIFY(r.output.find("False") == std::string::npos);
    QCOMPARE(std::count(r.output.begin(), r.output.end(), '\n'), 4L);

    std::string one_row = read(std::string(LS_SAMPLES) + "/python/dynamic_shapes.py");
    one_row.replace(one_row.find("(8, 24, 40, 7)"), 14, "(8, 24, 1)");
    const ls::ScriptRun g = ls::run_script(one_row, "one_row.py");
    QVERIFY2(g.ok, g.error.c_str());
    QCOMPARE(g.graphs.size(), size_t(5));
    QCOMPARE(g.graphs[3].function, std::string("norm_gelu"));
    QVERIFY2(g.graphs[3].reason.find("guard failed: 2 <= L['x'].size()[0]") != std::string::npos, g.graphs[3].reason.c_str());
    QVERIFY(g.output.find("False") == std::string::npos);
  }

  void testMlpTrainingLoop() {
    const ls::ScriptRun r = run_sample("mlp_training.py");
    QVERIFY2(r.ok, r.error.c_str());
    QCOMPARE(r.graphs.size(), size_t(1));
    QVERIFY(r.graphs[0].train);
    QCOMPARE(r.graphs[0].calls, 5);
    QVERIFY(r.graphs[0].result && r.graphs[0].result->stage("backward"));
    QVERIFY2(r.output.find("weights after training match eager: True") != std::string::npos, r.output.c_str());
  }

  void testCifarSample() {
    const ls::ScriptRun r = run_sample("cifar_cnn.py");
    QVERIFY2(r.ok, r.error.c_str());
    QCOMPARE(r.graphs.size(), size_t(2));  // inference (no_grad), then the training step
    QVERIFY(!r.graphs[0].train && r.graphs[1].train);
    QVERIFY2(r.graphs[1].reason.find("grad_mode") != std::string::npos, r.graphs[1].reason.c_str());
    QVERIFY(r.output.find("False") == std::string::npos);
    QVERIFY2(r.output.find("weights after one step match eager: True") != std::string::npos, r.output.c_str());
  }

  // Compiled outputs and gradients against PyTorch's own (the fixtures' .npy files).
  void testFixtureNumbers_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("call");
    QTest::newRow("toy_example") << "toy_example"
                                 << "def f(a, b):\n    x = a / (torch.abs(a) + 1)\n    if b.sum() < 0:\n        b = b * -1\n"
                                    "    return x * b\n";
    QTest::newRow("mse_loss") << "mse_loss"
                              << "def f(x, y):\n    return F.mse_loss(torch.sin(x) ** 2 + torch.cos(x) ** 2, y)\n";
  }
  void testFixtureNumbers() {
    QFETCH(QString, name);
    QFETCH(QString, call);
    const std::string dir = std::string(LS_TEST_DATA) + "/script/" + name.toStdString();
    const std::string out = QDir::tempPath().toStdString() + "/ls_script_" + name.toStdString();
    std::filesystem::create_directories(out);
    const std::string script = "import torch\nimport torch.nn.functional as F\nimport lowerscope\n" + call.toStdString() +
                               "a = lowerscope.load_npy('" + dir + "/in0.npy').requires_grad_()\n"
                               "b = lowerscope.load_npy('" + dir + "/in1.npy').requires_grad_()\n"
                               "r = torch.compile(f)(a, b)\n"
                               "r.sum().backward()\n"
                               "lowerscope.save_npy('" + out + "/out.npy', r)\n"
                               "lowerscope.save_npy('" + out + "/grad_in0.npy', a.grad)\n"
                               "lowerscope.save_npy('" + out + "/grad_in1.npy', b.grad)\n";
    const ls::ScriptRun r = ls::run_script(script, "fixture.py");
    QVERIFY2(r.ok, r.error.c_str());
    for (const auto& g : r.graphs) QVERIFY(g.train && g.result && g.result->check.ok);
    for (const char* f : {"out.npy", "grad_in0.npy", "grad_in1.npy"}) {
      const ls::Comparison c = ls::compare(ls::load_npy(out + "/" + f), ls::load_npy(dir + "/" + f));
      QVERIFY2(c.ok, (std::string(f) + ": " + c.why).c_str());
    }
  }

  // Eager autograd (one-op graphs differentiated by the core) against central differences.
  void testEagerGradientsAgainstFiniteDifferences() {
    const std::string script = R"(
import torch, torch.nn.functional as F
torch.manual_seed(1)
x = torch.randn(3, 5).requires_grad_()
w = torch.randn(4, 5).requires_grad_()
def loss_of(x, w):
    h = F.gelu(F.linear(x, w)) * torch.sigmoid(x.sum(1, keepdim=True))
    return (h.softmax(-1) * torch.arange(4.0)).sum() + (x ** 2).mean()
loss_of(x, w).backward()
worst = 0.0
eps = 1e-2
with torch.no_grad():
    for t, g in ((x, x.grad), (w, w.grad)):
        flat = t.tolist()
        for i in range(len(flat)):
            for j in range(len(flat[0])):
                def at(d):
                    v = [row[:] for row in flat]; v[i][j] += d
                    tt = torch.tensor(v)
                    return (loss_of(tt, w) if t is x else loss_of(x, tt)).item()
                fd = (at(eps) - at(-eps)) / (2 * eps)
                worst = max(worst, abs(fd - g.tolist()[i][j]))
print("worst", worst)
assert worst < 2e-3, worst
)";
    const ls::ScriptRun r = ls::run_script(script, "fd.py");
    QVERIFY2(r.ok, (r.error + r.output).c_str());
  }

  // leaky_relu, eager and compiled, against values worked out by hand, and its gradient.
  void testLeakyRelu() {
    const std::string script = R"(
import torch, torch.nn.functional as F
x = torch.tensor([-2.0, 3.0, -0.5, 0.0]).requires_grad_()
y = F.leaky_relu(x, 0.1)
assert max(abs(a - b) for a, b in zip(y.tolist(), [-0.2, 3.0, -0.05, 0.0])) < 1e-6, y.tolist()
y.sum().backward()
assert max(abs(a - b) for a, b in zip(x.grad.tolist(), [0.1, 1.0, 0.1, 0.1])) < 1e-6, x.grad.tolist()
m = torch.nn.LeakyReLU(0.25)
f = torch.compile(lambda t: m(t) * 2)
z = f(torch.tensor([-4.0, 1.0]))
assert max(abs(a - b) for a, b in zip(z.tolist(), [-2.0, 2.0])) < 1e-6, z.tolist()
)";
    const ls::ScriptRun r = ls::run_script(script, "leaky.py");
    QVERIFY2(r.ok, (r.error + r.output).c_str());
    QCOMPARE(static_cast<int>(r.graphs.size()), 1);
  }

  void testFullgraphTurnsABreakIntoAnError() {
    const std::string script =
        "import torch\n"
        "@torch.compile(fullgraph=True)\n"
        "def f(a, b):\n"
        "    if b.sum() < 0:\n"
        "        b = -b\n"
        "    return a * b\n"
        "f(torch.randn(4), torch.randn(4))\n";
    const ls::ScriptRun r = ls::run_script(script, "full.py");
    QVERIFY(!r.ok);
    QVERIFY2(r.error.find("Unsupported") != std::string::npos, r.error.c_str());
    QVERIFY2(r.error.find("generic_jump") != std::string::npos, r.error.c_str());
    QVERIFY2(r.error.find("full.py:4") != std::string::npos, r.error.c_str());
  }

  // Views alias their base (issue 35): in-place ops and setitem through a slice, a select, a view,
  // a transpose, a permute and a detach write the base, and a view taken before an in-place op on
  // its base sees the new value; values as PyTorch gives them, worked out by hand. Autograd goes
  // through the in-place op on the view; an in-place op on a leaf that requires grad is refused.
  void testViewsAliasTheirBase() {
    const std::string script = R"(
import torch
x = torch.zeros(4)
x[1:3].add_(1)
assert x.tolist() == [0.0, 1.0, 1.0, 0.0], x.tolist()
x[0] = 5
x[-1] += 2
assert x.tolist() == [5.0, 1.0, 1.0, 2.0], x.tolist()
m = torch.zeros(2, 3)
row = m[1]
m[:, 2].fill_(7)
assert m.tolist() == [[0, 0, 7], [0, 0, 7]] and row.tolist() == [0, 0, 7], (m.tolist(), row.tolist())
m[1][0] = 3
assert row.tolist() == [3, 0, 7], row.tolist()
m.t()[0].mul_(2)
assert m.tolist() == [[0, 0, 7], [6, 0, 7]], m.tolist()
m.view(6)[5] = -1
m.detach()[0, 0] = 9
m.data[0, 1] = 8
assert m.tolist() == [[9, 8, 7], [6, 0, -1]], m.tolist()
y = torch.arange(6.0).view(2, 3).permute(1, 0)
y[2] = torch.tensor([10.0, 20.0])
assert y.tolist() == [[0, 3], [1, 4], [10, 20]], y.tolist()
c = torch.tensor([1.0, 2.0])
d = torch.tensor(c)
d.add_(1)
assert c.tolist() == [1.0, 2.0]  # torch.tensor copies
a = torch.tensor([1.0, 2.0, 3.0]).requires_grad_()
b = a * 2
b[1:].mul_(3)
assert b.tolist() == [2.0, 12.0, 18.0], b.tolist()
(b * torch.tensor([1.0, 10.0, 100.0])).sum().backward()
assert a.grad.tolist() == [2.0, 60.0, 600.0], a.grad.tolist()
try:
    a[0].add_(1)
    raise AssertionError("an in-place op on a view of a leaf that requires grad ran")
except RuntimeError as e:
    assert "in-place" in str(e), str(e)
@torch.compile
def g(t):
    t[0] = 3.0
    t[1:].add_(1)
    return t * 2
z = torch.zeros(3)
assert g(z).tolist() == [6.0, 2.0, 2.0]
assert z.tolist() == [3.0, 1.0, 1.0], z.tolist()  # the caller's tensor is mutated, as under Dynamo
print("views ok")
)";
    const ls::ScriptRun r = ls::run_script(script, "views.py");
    QVERIFY2(r.ok, (r.error + r.output).c_str());
    QCOMPARE(r.output, std::string("views ok\n"));
    QCOMPARE(r.graphs.size(), size_t(1));
    QVERIFY(r.graphs[0].result && r.graphs[0].result->check.ok);
  }

  // print() in a compiled function breaks the graph as Dynamo does: the graph before runs, the print
  // runs eagerly (with the values computed so far), a resume graph follows. fullgraph=True refuses.
  void testPrintBreaksTheGraph() {
    const std::string script =
        "import torch\n"
        "def f(x):\n"
        "    y = x * 2\n"
        "    print('y is', y)\n"
        "    return y + 1\n"
        "out = torch.compile(f)(torch.ones(3))\n"
        "print(out.tolist())\n";
    ls::ScriptRun r = ls::run_script(script, "printing.py");
    QVERIFY2(r.ok, r.error.c_str());
    QCOMPARE(r.output, std::string("y is tensor([2.0000, 2.0000, 2.0000])\n[3.0, 3.0, 3.0]\n"));
    QCOMPARE(r.graphs.size(), size_t(2));
    QCOMPARE(r.breaks.size(), size_t(1));
    QVERIFY2(r.breaks[0].reason.find("Failed to trace builtin operator") != std::string::npos, r.breaks[0].reason.c_str());
    QVERIFY2(r.breaks[0].reason.find("`print` with argument types ['str', 'Tensor']") != std::string::npos,
             r.breaks[0].reason.c_str());
    QCOMPARE(r.breaks[0].location, std::string("printing.py:4"));
    QCOMPARE(r.graphs[1].function, std::string("torch_dynamo_resume_in_f_at_4"));
    for (const auto& g : r.graphs) QVERIFY(g.result && g.result->check.ok);

    std::string full = script;
    full.replace(full.find("torch.compile(f)"), 16, "torch.compile(f, fullgraph=True)");
    r = ls::run_script(full, "printing_full.py");
    QVERIFY(!r.ok);
    QVERIFY2(r.error.find("torch._dynamo.Unsupported") != std::string::npos || r.error.find("Unsupported:") != std::string::npos,
             r.error.c_str());
    QVERIFY2(r.error.find("Failed to trace builtin operator") != std::string::npos, r.error.c_str());
    QVERIFY2(r.error.find("`print`") != std::string::npos, r.error.c_str());
    QVERIFY2(r.error.find("printing_full.py:4") != std::string::npos, r.error.c_str());
    QVERIFY(r.output.empty());
    // The exception is torch._dynamo.exc.Unsupported, catchable by the script.
    r = ls::run_script(full.substr(0, full.find("out = ")) +
                           "try:\n    torch.compile(f, fullgraph=True)(torch.ones(3))\n"
                           "except torch._dynamo.exc.Unsupported as e:\n    print('refused')\n",
                       "printing_catch.py");
    QVERIFY2(r.ok, r.error.c_str());
    QCOMPARE(r.output, std::string("refused\n"));
  }

  // Adam and AdamW against their update formulas worked out step by step in plain Python floats:
  // m = b1 m + (1-b1) g, v = b2 v + (1-b2) g^2, p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps);
  // Adam's weight decay adds wd*p to g, AdamW's scales p by 1 - lr*wd first. The defaults are
  // PyTorch's; zero_grad sets the grads to None (or to zeros with set_to_none=False).
  void testAdamAndAdamW() {
    const std::string script = R"(
import math, torch
def by_hand(p, gfun, steps, lr, b1, b2, eps, wd, decoupled, amsgrad=False):
    p = list(p); m = [0.0] * len(p); v = [0.0] * len(p); vmax = [0.0] * len(p)
    for t in range(1, steps + 1):
        g = gfun(p)
        for i in range(len(p)):
            gi = g[i]
            if wd and decoupled:
                p[i] *= 1 - lr * wd
            elif wd:
                gi += wd * p[i]
            m[i] = b1 * m[i] + (1 - b1) * gi
            v[i] = b2 * v[i] + (1 - b2) * gi * gi
            vmax[i] = max(vmax[i], v[i])
            vv = vmax[i] if amsgrad else v[i]
            p[i] -= lr / (1 - b1 ** t) * m[i] / (math.sqrt(vv) / math.sqrt(1 - b2 ** t) + eps)
    return p
c = [3.0, -0.5, 0.25, 2.0]
start = [1.0, -2.0, 0.5, 0.0]
grad = lambda p: [2 * ci * pi + 1.0 for ci, pi in zip(c, p)]   # of sum(c p^2 + p)
def run(opt_cls, steps, **kw):
    w = torch.tensor(start).requires_grad_()
    opt = opt_cls([w], **kw)
    for _ in range(steps):
        opt.zero_grad()
        (torch.tensor(c) * w * w + w).sum().backward()
        opt.step()
    return w.tolist(), opt
def close(a, b, what):
    worst = max(abs(x - y) for x, y in zip(a, b))
    assert worst < 1e-5, (what, a, b)
got, opt = run(torch.optim.Adam, 1)
g = opt.param_groups[0]
assert (g["lr"], g["betas"], g["eps"], g["weight_decay"], g["amsgrad"]) == (1e-3, (0.9, 0.999), 1e-8, 0, False), g
# The first Adam step moves every parameter by lr against its gradient's sign.
close(got, [1.0 - 1e-3, -2.0 - 1e-3, 0.5 - 1e-3, 0.0 - 1e-3], "Adam step 1")  # every gradient is > 0 here
close(run(torch.optim.Adam, 5, lr=0.1)[0], by_hand(start, grad, 5, 0.1, 0.9, 0.999, 1e-8, 0, False), "Adam")
close(run(torch.optim.Adam, 4, lr=0.05, betas=(0.8, 0.99), weight_decay=0.3)[0],
      by_hand(start, grad, 4, 0.05, 0.8, 0.99, 1e-8, 0.3, False), "Adam weight_decay")
close(run(torch.optim.Adam, 6, lr=0.2, amsgrad=True)[0],
      by_hand(start, grad, 6, 0.2, 0.9, 0.999, 1e-8, 0, False, amsgrad=True), "Adam amsgrad")
got, opt = run(torch.optim.AdamW, 5, lr=0.1)
assert opt.param_groups[0]["weight_decay"] == 1e-2
close(got, by_hand(start, grad, 5, 0.1, 0.9, 0.999, 1e-8, 1e-2, True), "AdamW")
close(run(torch.optim.AdamW, 3, lr=0.1, weight_decay=0.5)[0],
      by_hand(start, grad, 3, 0.1, 0.9, 0.999, 1e-8, 0.5, True), "AdamW weight_decay")
# zero_grad
w = torch.tensor([1.0, 2.0]).requires_grad_()
opt = torch.optim.AdamW([w])
(w * 3).sum().backward()
assert w.grad.tolist() == [3.0, 3.0]
opt.zero_grad(set_to_none=False)
assert w.grad.tolist() == [0.0, 0.0]
opt.zero_grad()
assert w.grad is None
# A compiled training step with Adam: the same weights as eagerly.
torch.manual_seed(0)
net = torch.nn.Linear(3, 2)
ref = torch.nn.Linear(3, 2)
ref.load_state_dict(net.state_dict())
x, y = torch.randn(4, 3), torch.randn(4, 2)
step = torch.compile(lambda m: ((m(x) - y) ** 2).mean())
for model, fn in ((net, step), (ref, lambda m: ((m(x) - y) ** 2).mean())):
    o = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(3):
        o.zero_grad()
        fn(model).backward()
        o.step()
close(net.weight.detach().view(6).tolist(), ref.weight.detach().view(6).tolist(), "compiled Adam")
print("adam ok")
)";
    const ls::ScriptRun r = ls::run_script(script, "adam.py");
    QVERIFY2(r.ok, (r.error + r.output).c_str());
    QCOMPARE(r.output, std::string("adam ok\n"));
  }

  // cross_entropy and nll_loss (functions and modules) against values worked out by hand from
  // -x[t] + log(sum exp x): reductions mean, sum and none, class weights, ignore_index; the
  // gradient of the mean loss is (softmax - onehot) / N; compiled as eager.
  void testCrossEntropyAndNllLoss() {
    const std::string script = R"(
import math, torch, torch.nn as nn, torch.nn.functional as F
X = [[1.0, 2.0, 0.5], [0.1, 0.2, 3.0], [0.3, -1.0, 2.0], [0.0, 0.0, 0.0]]
T = [0, 2, 1, 1]
W = [0.5, 2.0, 1.0]
lse = [math.log(sum(math.exp(v) for v in row)) for row in X]
per = [lse[i] - X[i][T[i]] for i in range(4)]
def close(a, b, what, tol=1e-5):
    a = a if isinstance(a, list) else [a]; b = b if isinstance(b, list) else [b]
    assert len(a) == len(b) and max(abs(x - y) for x, y in zip(a, b)) < tol, (what, a, b)
x, t = torch.tensor(X), torch.tensor(T)
close(F.cross_entropy(x, t).item(), sum(per) / 4, "mean")
close(F.cross_entropy(x, t, reduction="sum").item(), sum(per), "sum")
close(F.cross_entropy(x, t, reduction="none").tolist(), per, "none")
wsum = sum(W[T[i]] * per[i] for i in range(4)) / sum(W[T[i]] for i in range(4))
close(nn.CrossEntropyLoss(weight=torch.tensor(W))(x, t).item(), wsum, "weighted mean")
t_ign = torch.tensor([0, -100, 1, 1])
close(F.cross_entropy(x, t_ign).item(), (per[0] + per[2] + per[3]) / 3, "ignore_index mean")
close(nn.CrossEntropyLoss(ignore_index=2, reduction="none")(x, t).tolist(), [per[0], 0.0, per[2], per[3]], "ignore_index none")
logp = F.log_softmax(x, dim=1)
close(logp.view(12).tolist(), [X[i][j] - lse[i] for i in range(4) for j in range(3)], "log_softmax")
close(F.nll_loss(logp, t).item(), sum(per) / 4, "nll mean")
close(nn.NLLLoss(reduction="sum")(logp, t).item(), sum(per), "nll sum")
close(nn.NLLLoss(weight=torch.tensor(W))(logp, t).item(), wsum, "nll weighted")
close(F.nll_loss(x, t, reduction="none").tolist(), [-X[i][T[i]] for i in range(4)], "nll none")
# gradient of the mean cross entropy: (softmax - onehot) / N
xg = torch.tensor(X).requires_grad_()
F.cross_entropy(xg, t).backward()
want = [(math.exp(X[i][j] - lse[i]) - (1.0 if j == T[i] else 0.0)) / 4 for i in range(4) for j in range(3)]
close(xg.grad.view(12).tolist(), want, "gradient")
# compiled, as a training step, through the module
loss_fn = nn.CrossEntropyLoss()
xc = torch.tensor(X).requires_grad_()
lc = torch.compile(lambda a, b: loss_fn(a * 1.0, b))(xc, t)
close(lc.item(), sum(per) / 4, "compiled")
lc.backward()
close(xc.grad.view(12).tolist(), want, "compiled gradient")
print("losses ok")
)";
    const ls::ScriptRun r = ls::run_script(script, "losses.py");
    QVERIFY2(r.ok, (r.error + r.output).c_str());
    QCOMPARE(r.output, std::string("losses ok\n"));
    QCOMPARE(r.graphs.size(), size_t(1));
    QVERIFY(r.graphs[0].train && r.graphs[0].result && r.graphs[0].result->check.ok);
  }

  // Dropout in train mode zeroes elements with probability p and scales the rest by 1/(1-p), its
  // gradient through the same mask; model.eval() makes it the identity, model.train() again not.
  void testDropoutTrainAndEval() {
    const std::string script = R"(
import torch, torch.nn as nn
torch.manual_seed(3)
model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.25))
drop = model[1]
assert model.training and drop.training
x = torch.ones(4000).requires_grad_()
y = drop(x)
vals = y.tolist()
assert all(v == 0.0 or abs(v - 1 / 0.75) < 1e-6 for v in vals), set(vals)
zeros = sum(v == 0.0 for v in vals) / len(vals)
assert 0.2 < zeros < 0.3, zeros
y.sum().backward()
assert x.grad.tolist() == vals  # d(sum(x * mask / (1-p)))/dx = mask / (1-p) = y at x = 1
model.eval()
assert not drop.training
assert drop(torch.ones(100)).tolist() == [1.0] * 100
model.train()
assert drop.training and 0.0 in drop(torch.ones(100)).tolist()
assert nn.Dropout(0.0)(torch.ones(10)).tolist() == [1.0] * 10
f = torch.compile(drop)
out = f(torch.ones(1000)).tolist()
assert all(v == 0.0 or abs(v - 1 / 0.75) < 1e-6 for v in out) and 0.15 < out.count(0.0) / 1000 < 0.35
print("dropout ok")
)";
    const ls::ScriptRun r = ls::run_script(script, "dropout.py");
    QVERIFY2(r.ok, (r.error + r.output).c_str());
    QCOMPARE(r.output, std::string("dropout ok\n"));
  }

  // The conformance script (tests/data/script/conformance.py) prints what real PyTorch prints for
  // it: views, in-place ops and setitem, BatchNorm running statistics, dropout, losses, optimizers,
  // graph breaks and guards. Its expected text is our run's, checked against PyTorch 2.11 on the GPU
  // machine by tools/gpu/conformance.sh. On a difference the whole output is written beside the
  // temporary folder to diff against the expected file.
  void testConformanceWithPyTorch() {
    const std::string dir = std::string(LS_TEST_DATA) + "/script/";
    const ls::ScriptRun r = ls::run_script(read(dir + "conformance.py"), dir + "conformance.py");
    QVERIFY2(r.ok, (r.error + r.output).c_str());
    const std::string expected = read(dir + "conformance.expected.txt");
    if (r.output != expected) {
      const std::string actual = QDir::tempPath().toStdString() + "/conformance.actual.txt";
      std::ofstream(actual, std::ios::binary) << r.output;
      std::istringstream a(r.output), e(expected);
      std::string la, le;
      int line = 0;
      while (true) {
        ++line;
        const bool ga = static_cast<bool>(std::getline(a, la)), ge = static_cast<bool>(std::getline(e, le));
        if (!ga && !ge) break;
        if (!ga || !ge || la != le) break;
      }
      const std::string msg = "line " + std::to_string(line) + ": expected '" + le + "', got '" + la +
                              "' (whole output: " + actual + ")";
      QFAIL(msg.c_str());
    }
  }

  // What this torch lacks raises NotImplementedError naming it, where PyTorch would have it: a
  // function, a Tensor method, a module of torch.nn, a submodule; hasattr() still answers False.
  void testMissingApisAreNamed() {
    const std::string script = R"(
import torch
def named(fn, name):
    try:
        fn()
    except NotImplementedError as e:
        assert name in str(e), str(e)
        return
    raise AssertionError("no NotImplementedError for " + name)
named(lambda: torch.linspace(0, 1, 5), "torch.linspace")
named(lambda: torch.ones(3).narrow(0, 0, 1), "torch.Tensor.narrow")
named(lambda: torch.nn.GRUCell(2, 2), "torch.nn.GRUCell")
named(lambda: torch.nn.functional.unfold, "torch.nn.functional.unfold")
named(lambda: torch.optim.lr_scheduler, "torch.optim.lr_scheduler")
named(lambda: torch.optim.RMSprop([torch.zeros(1)]), "torch.optim.RMSprop")
named(lambda: __import__("torch.utils.data"), "torch.utils")
try:
    import torch.utils.data
except ImportError:
    pass
assert not hasattr(torch, "linspace") and not hasattr(torch.ones(1), "narrow")
assert getattr(torch.nn, "GRUCell", None) is None
print("named")
)";
    const ls::ScriptRun r = ls::run_script(script, "missing.py");
    QVERIFY2(r.ok, (r.error + r.output).c_str());
    QCOMPARE(r.output, std::string("named\n"));
  }

  // A script's error is a traceback naming the line; a missing function is named; the next
  // script runs as if nothing happened.
  void testErrorsAreReportedAndTheHostGoesOn() {
    ls::ScriptRun r = ls::run_script("import torch\nx = torch.randn(3)\n\nraise ValueError('bad value')\n", "err.py");
    QVERIFY(!r.ok);
    QVERIFY2(r.error.find("err.py\", line 4") != std::string::npos, r.error.c_str());
    QVERIFY(r.error.find("ValueError: bad value") != std::string::npos);
    r = ls::run_script("import torch.nn.functional as F\nimport torch\nF.interpolate(torch.randn(1, 1, 2, 3), scale_factor=2)\n",
                       "missing.py");
    QVERIFY(!r.ok);
    QVERIFY2(r.error.find("NotImplementedError") != std::string::npos, r.error.c_str());
    QVERIFY2(r.error.find("torch.nn.functional.interpolate") != std::string::npos, r.error.c_str());
    r = ls::run_script("import torch\ntorch.optim.RMSprop([torch.zeros(2)])\n", "missing_optim.py");
    QVERIFY(!r.ok);
    QVERIFY2(r.error.find("NotImplementedError: torch.optim.RMSprop") != std::string::npos, r.error.c_str());
    r = ls::run_script("import torch\nprint(torch.ones(2) * 3)\n", "ok.py");
    QVERIFY2(r.ok, r.error.c_str());
    QCOMPARE(r.output, std::string("tensor([3.0000, 3.0000])\n"));
  }

  void testAnEndlessScriptCanBeStopped() {
    std::atomic<bool> done{false};
    ls::ScriptRun r;
    std::thread t([&] {
      r = ls::run_script("import torch\nwhile True:\n    pass\n", "loop.py");
      done = true;
    });
    QTest::qWait(300);
    QVERIFY(!done);
    ls::interrupt_script();
    for (int i = 0; i < 100 && !done; ++i) QTest::qWait(50);
    QVERIFY(done);
    t.join();
    QVERIFY(!r.ok);
    QVERIFY2(r.error.find("KeyboardInterrupt") != std::string::npos, r.error.c_str());
  }

  // Every sample through the CLI, as CI users run it: exit status 0 (the script ran and every
  // compiled graph matched the reference interpreter) and the counts in its report.
  void testSamplesThroughCli_data() {
    QTest::addColumn<QString>("sample");
    QTest::addColumn<int>("graphs");
    QTest::addColumn<int>("breaks");
    QTest::addColumn<int>("recompiles");
    QTest::newRow("sincos") << "sincos.py" << 1 << 0 << 0;
    QTest::newRow("mse_loss") << "mse_loss.py" << 1 << 0 << 0;
    QTest::newRow("toy_example") << "toy_example.py" << 2 << 1 << 0;
    QTest::newRow("recompile") << "recompile.py" << 3 << 0 << 2;
    QTest::newRow("mlp_training") << "mlp_training.py" << 1 << 0 << 0;
    QTest::newRow("cifar_cnn") << "cifar_cnn.py" << 2 << 0 << 1;
    QTest::newRow("dynamic_shapes") << "dynamic_shapes.py" << 3 << 0 << 1;
  }
  void testSamplesThroughCli() {
    QFETCH(QString, sample);
    QFETCH(int, graphs);
    QFETCH(int, breaks);
    QFETCH(int, recompiles);
    const std::string report = QDir::tempPath().toStdString() + "/ls_sample_" + sample.toStdString() + ".json";
    const std::string cmd = std::string(LS_CLI) + " run " + LS_SAMPLES + "/python/" + sample.toStdString() +
                            " --quiet --report " + report;
    QCOMPARE(std::system(cmd.c_str()), 0);
    const auto j = nlohmann::json::parse(read(report));
    QCOMPARE(j["graph_count"].get<int>(), graphs);
    QCOMPARE(j["graph_break_count"].get<int>(), breaks);
    QCOMPARE(j["recompiles"].get<int>(), recompiles);
    QVERIFY(j["output"].get<std::string>().find("False") == std::string::npos);
    for (const auto& g : j["graphs"]) QCOMPARE(g["check"].get<std::string>(), std::string("ok"));
  }

  void testCliReport() {
    const std::string report = QDir::tempPath().toStdString() + "/ls_script_report.json";
    const std::string cmd = std::string(LS_CLI) + " run " + LS_SAMPLES + "/python/toy_example.py --quiet --report " + report;
    QCOMPARE(std::system(cmd.c_str()), 0);
    const auto j = nlohmann::json::parse(read(report));
    QCOMPARE(j["graph_count"].get<int>(), 2);
    QCOMPARE(j["graph_break_count"].get<int>(), 1);
    QCOMPARE(j["graphs"][0]["check"].get<std::string>(), std::string("ok"));
    QVERIFY(j["graphs"][0]["guards"].size() >= 2);
    // A failing script: exit status 2.
    const std::string bad = QDir::tempPath().toStdString() + "/ls_bad_script.py";
    std::ofstream(bad) << "import torch\ntorch.nn.Embedding(3, 4)\n";
    QCOMPARE(WEXITSTATUS(std::system((std::string(LS_CLI) + " run " + bad + " --quiet 2>/dev/null").c_str())), 2);
  }
};

QTEST_GUILESS_MAIN(TestScript)
#include "test_script.moc"
