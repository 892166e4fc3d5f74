"""Tests of the lowerscope torch.compile backend, against real PyTorch (run on a machine with torch).

    python tests/test_backend.py OUT_DIR      # every case, each in its own process; captures under OUT_DIR
    pytest tests/test_backend.py              # the same, in pytest's temporary folders

Each case compiles with backend="lowerscope", checks the results equal eager PyTorch's, and then
checks what the capture folder holds (graphs, inputs, guards, graph breaks, recompiles, failures).
"""
import copy
import json
import os
import subprocess
import sys

CASES = ("mlp_train", "recompile", "conv", "trace")


# ---- the cases, each run in a fresh process: python test_backend.py --case NAME DIR ----

def case_mlp_train(out):
    """A two-layer MLP whose forward calls print() (a graph break), trained two SGD steps."""
    import torch
    from torch import nn

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(4, 16)
            self.fc2 = nn.Linear(16, 3)

        def forward(self, x):
            h = torch.relu(self.fc1(x))
            print("mlp: a graph break")
            return torch.tanh(self.fc2(h))

    model = MLP().to(dev)
    ref = copy.deepcopy(model)
    cm = torch.compile(model, backend="lowerscope", options={"dir": out})
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ropt = torch.optim.SGD(ref.parameters(), lr=0.1)
    x, y = torch.randn(8, 4, device=dev), torch.randn(8, 3, device=dev)
    for step in range(2):
        for m, o in ((cm, opt), (ref, ropt)):
            o.zero_grad()
            loss = torch.nn.functional.mse_loss(m(x), y)
            loss.backward()
            o.step()
            if m is cm:
                lc = loss.item()
            else:
                lr = loss.item()
        assert abs(lc - lr) < 1e-5, f"step {step}: loss {lc} vs eager {lr}"
    for (n, p), q in zip(model.named_parameters(), ref.parameters()):
        assert torch.allclose(p, q, atol=1e-5), f"parameter {n} differs from eager after 2 steps"
    return f"2 SGD steps on {dev}: losses and parameters equal eager"


def case_recompile(out):
    """A function recompiled for a new size (dynamic) and a new dtype, run eagerly by the backend
    (options run=eager); a fullgraph=True compile that fails on print(); mode="eager"."""
    import torch

    dev = "cuda" if torch.cuda.is_available() else "cpu"

    def f(x):
        return torch.sin(x) * 2 + torch.cos(x).sum(dim=-1, keepdim=True)

    cf = torch.compile(f, backend="lowerscope", options={"dir": out, "run": "eager"})
    for x in (torch.randn(8, 4, device=dev), torch.randn(16, 4, device=dev),
              torch.randn(16, 4, device=dev, dtype=torch.float64)):
        assert torch.allclose(cf(x), f(x)), f"f{tuple(x.shape)} {x.dtype} differs from eager"

    def g(x):
        print("g: a graph break")
        return x + 1

    failed = ""
    try:
        torch.compile(g, fullgraph=True, backend="lowerscope", options={"dir": out})(torch.randn(4, device=dev))
    except Exception as e:
        failed = type(e).__name__
    assert failed, "fullgraph=True with print() should raise"

    def h(x):
        return torch.relu(x) - 0.5

    try:
        he = torch.compile(h, backend="lowerscope", mode="eager")
        x = torch.randn(5, device=dev)
        assert torch.allclose(he(x), h(x))
        eager_mode = "mode='eager' ran"
    except Exception as e:  # torch.compile may refuse a mode it does not know
        eager_mode = f"mode='eager' refused by torch.compile: {type(e).__name__}: {str(e)[:120]}"
    return f"3 compiles of f on {dev} equal eager; fullgraph=True raised {failed}; {eager_mode}"


def case_conv(out):
    """A small conv net (conv, batch norm, relu, max pool, linear) in eval mode on the CPU, through Inductor."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(4 * 4 * 4, 5)).eval()
    with torch.no_grad():
        model[1].running_mean.uniform_(-0.5, 0.5)
        model[1].running_var.uniform_(0.5, 1.5)
    cm = torch.compile(model, backend="lowerscope", options={"dir": out})
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        got, want = cm(x), model(x)
    assert torch.allclose(got, want, atol=1e-5), f"max abs diff {(got - want).abs().max().item()}"
    return "conv net on the CPU through Inductor equals eager"


def case_trace(out):
    """lowerscope.trace writes a TORCH_TRACE log of a compiled call."""
    import torch

    import lowerscope

    def fn(x):
        return torch.compile(lambda a: torch.relu(a) + 1)(x)

    x = torch.randn(8)
    y = lowerscope.trace(fn, x, out=out, show=False)
    assert torch.allclose(y, torch.relu(x) + 1)
    logs = [f for f in os.listdir(out) if f.endswith(".log")]
    assert logs, f"no .log in {out}"
    text = open(os.path.join(out, logs[0])).read()
    assert '"dynamo_output_graph"' in text and '"inductor_output_code"' in text, "the log lacks the graph or the output code"
    return f"{logs[0]}: {len(text.splitlines())} lines with dynamo_output_graph and inductor_output_code"


# ---- checks of the capture folders ----

def manifest(out):
    with open(os.path.join(out, "capture.json")) as f:
        m = json.load(f)
    assert m["format"] == "lowerscope-capture" and m["version"] == 1
    for g in m["graphs"]:
        assert os.path.exists(os.path.join(out, g["file"])), g["file"]
        text = open(os.path.join(out, g["file"])).read()
        assert text.startswith("class GraphModule(torch.nn.Module):"), text[:80]
        for i in g["inputs"]:
            if i["kind"] == "tensor":
                assert os.path.exists(os.path.join(out, i["file"])), i["file"]
    m["_guards"] = sum(1 for g in m["graphs"] if g.get("guards"))
    assert m["_guards"] == len(m["graphs"]), f"{len(m['graphs']) - m['_guards']} graph(s) without guards"
    return m


def check_mlp_train(out):
    import numpy as np

    m = manifest(out)
    assert len(m["graphs"]) == 2, [g.get("compile_id") for g in m["graphs"]]
    assert all(g["train"] for g in m["graphs"]), "both graphs take parameters that need gradients"
    assert any("print" in b["explanation"] or "print" in b["text"] for b in m["graph_breaks"]), m["graph_breaks"]
    g0 = m["graphs"][0]
    x = np.load(os.path.join(out, g0["inputs"][0]["file"]))
    assert list(x.shape) == g0["inputs"][0]["shape"]
    return f"{len(m['graphs'])} graphs, {len(m['graph_breaks'])} graph break(s): {m['graph_breaks'][0]['reason']}"


def check_recompile(out):
    m = manifest(out)
    ids = [g.get("compile_id") for g in m["graphs"]]
    assert len(m["graphs"]) >= 3, ids
    assert any(g.get("recompile_reasons") for g in m["graphs"]), "no recompile reasons"
    assert any(i["kind"] == "symint" for g in m["graphs"] for i in g["inputs"]), "the second compile should be dynamic"
    assert m["failures"] and m["failures"][0]["fail_type"], "the fullgraph failure is not recorded"
    reasons = [r for g in m["graphs"] for r in g.get("recompile_reasons", [])]
    return f"compiles {ids}; recompile reasons {reasons}; failure {m['failures'][0]['fail_type']}"


def check_conv(out):
    m = manifest(out)
    assert len(m["graphs"]) == 1 and not m["graphs"][0]["train"]
    assert m["graphs"][0].get("outputs"), m["graphs"][0].get("outputs_note")
    return f"1 graph, ops {m['graphs'][0]['ops']}"


def check_trace(out):
    return "ok"


def run_case(name, out):
    """Runs a case in a fresh process, then checks its folder. Returns the lines to report."""
    os.makedirs(out, exist_ok=True)
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--case", name, out],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise AssertionError(f"case {name} failed:\n{p.stdout}\n{p.stderr[-4000:]}")
    ran = p.stdout.strip().splitlines()[-1]
    return ran, globals()["check_" + name](out)


def test_entry_point():
    import torch
    from importlib.metadata import entry_points

    eps = entry_points(group="torch_dynamo_backends")
    assert any(e.name == "lowerscope" for e in eps), "the torch_dynamo_backends entry point is not installed"
    assert "lowerscope" in torch._dynamo.list_backends(exclude_tags=())


def test_mlp_train(tmp_path):
    run_case("mlp_train", str(tmp_path))


def test_recompile(tmp_path):
    run_case("recompile", str(tmp_path))


def test_conv(tmp_path):
    run_case("conv", str(tmp_path))


def test_trace(tmp_path):
    run_case("trace", str(tmp_path))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--case":
        print("RESULT", globals()["case_" + sys.argv[2]](sys.argv[3]))
        sys.exit(0)
    root = sys.argv[1] if len(sys.argv) > 1 else "lowerscope_test_out"
    failures = 0
    try:
        test_entry_point()
        print("PASS entry_point: torch_dynamo_backends has lowerscope; torch._dynamo.list_backends() lists it")
    except Exception as e:
        failures += 1
        print(f"FAIL entry_point: {e}")
    for name in CASES:
        try:
            ran, checked = run_case(name, os.path.join(root, name))
            print(f"PASS {name}: {ran.removeprefix('RESULT ')}\n     capture: {checked}")
        except Exception as e:
            failures += 1
            print(f"FAIL {name}: {e}")
    print(f"{len(CASES) + 1 - failures} passed, {failures} failed")
    sys.exit(1 if failures else 0)
