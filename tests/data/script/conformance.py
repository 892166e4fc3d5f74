# Conformance of Lowerscope's embedded torch with PyTorch: this script runs under real PyTorch
# (tools/gpu/conformance.sh) and under ours (`lowerscope-cli run`, test_script's
# testConformanceWithPyTorch) and must print the same text, conformance.expected.txt.
#
# It prints only what both can print identically: values as lists rounded to 4 decimals (never a
# tensor's repr), exception type names (never messages), counts, booleans. Inputs are fixed
# (arange, literal lists); dropout, the one random part, prints only what does not depend on the
# random generator.
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# torch.compile's backend under PyTorch (Inductor by default; CONFORMANCE_BACKEND=aot_eager where no C++
# compiler is at hand): graph breaks, guards and values do not depend on it. Ours compiles with the
# pipeline whatever it says.
BACKEND = os.environ.get("CONFORMANCE_BACKEND", "inductor")


def _flat(v):
    return [z for w in v for z in _flat(w)] if isinstance(v, list) else [v]


def _fmt(v):
    if isinstance(v, (bool, int, str)):
        return str(v)
    s = "%.4f" % v
    return "0.0000" if s == "-0.0000" else s


def show(label, value):
    """label: [shape] values, or label: value for a number."""
    if isinstance(value, torch.Tensor):
        shape = "x".join(str(d) for d in value.shape) or "scalar"
        print("%s: [%s] %s" % (label, shape, " ".join(_fmt(v) for v in _flat(value.detach().tolist()))))
    elif isinstance(value, (list, tuple)):
        print("%s: %s" % (label, " ".join(_fmt(v) for v in _flat(list(value)))))
    else:
        print("%s: %s" % (label, _fmt(value)))


def raises(label, fn):
    """Which exception fn raises (its type name only: messages differ)."""
    try:
        fn()
        print("%s: no error" % label)
    except Exception as e:
        print("%s: %s" % (label, type(e).__name__))


def section(name):
    print("== " + name)


def backward_or_error(label, loss, leaf):
    """leaf's gradient, or what PyTorch's version check says when backward needs a value that an
    in-place op changed after it was saved (the message up to its hint)."""
    try:
        loss.backward()
        show(label, leaf.grad)
    except RuntimeError as e:
        msg, key = str(e), "modified by an inplace operation: "
        show(label, "RuntimeError: " + msg[msg.index(key) + len(key):].split(" Hint:")[0] if key in msg else msg)


# ---- views alias their base ------------------------------------------------------------------
section("views")
x = torch.zeros(4)
x[1:3].add_(1)
show("slice add_", x)
x = torch.arange(6.0).view(2, 3)
x[:, 1] = 7
show("column setitem", x)
x = torch.arange(6.0)
x[-2:] = 1
show("negative slice setitem", x)
x = torch.arange(6.0)
x[::2].mul_(10)
show("step slice mul_", x)
x = torch.arange(6.0)
v = x.view(2, 3)
x.add_(1)
show("view sees base add_", v)
x = torch.arange(6.0)
x.detach().add_(1)
show("detach aliases", x)
x = torch.arange(6.0)
x.view(2, 3).t()[0].fill_(-1)
show("t() row fill_", x)
x = torch.arange(4.0)
y = x.clone()
y.add_(1)
show("clone is a copy", [x.tolist(), y.tolist()])
x = torch.arange(6.0)
x[1] += 5
show("item iadd", x)
x = torch.zeros(2, 3)
x[0] = torch.tensor([1.0, 2.0, 3.0])
x[1, 2] = 8
show("row and element setitem", x)
x = torch.arange(12.0).view(3, 4)
x[1:, 2:] = torch.tensor([[-1.0, -2.0], [-3.0, -4.0]])
show("block setitem", x)
x = torch.zeros(2, 3)
x[..., 0] = 5
show("ellipsis setitem", x)
x = torch.zeros(2, 3)
x[None, 1] = 5
show("None index setitem", x)
x = torch.zeros(2, 2)
x.copy_(torch.tensor([1.0, 2.0]))
show("copy_ broadcasts", x)
x = torch.arange(8.0).view(2, 2, 2)
x.permute(2, 0, 1)[0].zero_()
show("permute view zero_", x)
x = torch.arange(8.0)
a, b = x.split(4)
b.add_(100)
show("split gives views", x)
x = torch.arange(8.0)
a, b = x.chunk(2)
a.zero_()
show("chunk gives views", x)
x = torch.arange(12.0).view(3, 4)
x.unsqueeze(1).squeeze(1).view(12)[0] = 100
show("view chain setitem", x)
x = torch.arange(6.0).view(2, 3)
y = x.reshape(3, 2)
y.add_(1)
show("reshape of contiguous aliases", x)
x = torch.arange(6.0).view(2, 3)
y = x.t().reshape(-1)
y.add_(1)
show("reshape of transposed copies", [x.tolist(), y.tolist()])
x = torch.arange(6.0).view(2, 3)
x.contiguous().add_(1)
show("contiguous() of contiguous aliases", x)
x = torch.arange(6.0).view(2, 3)
x.t().contiguous().add_(1)
show("contiguous() of transposed copies", x)
x = torch.arange(12.0).view(3, 4)
torch.flatten(x[1:]).mul_(-1)
show("flatten of rows aliases", x)
x = torch.arange(12.0).view(3, 4)
torch.flatten(x[:, 1:3]).mul_(-1)
show("flatten of columns copies", x)
x = torch.arange(6.0).view(2, 3)
show("is_contiguous", [x.is_contiguous(), x.t().is_contiguous(), x[:, 1].is_contiguous(), x[1].is_contiguous()])
show("strides", list(x.t().stride()) + list(x[:, ::2].stride()))
raises("view of transposed", lambda: torch.arange(6.0).view(2, 3).t().view(-1))
x = torch.arange(4)
x[0] = 7
x.add_(1)
show("int64 setitem add_", x)
x = torch.arange(4.0)
e = x.expand(3, 4)
x.add_(1)
show("expand sees base add_", e)
x.expand(1, 4).mul_(2)
show("expand without broadcast writes base", x)
raises("in-place on a broadcast expand", lambda: x.expand(3, 4).add_(1))
e = torch.arange(4.0).view(4, 1).expand(4, 2)
show("expand strides", list(e.stride()) + [e.is_contiguous()])
y = torch.zeros(2, 3)
y[:] = torch.arange(3.0)
show("setitem broadcasts a row", y)

# ---- in-place ops ----------------------------------------------------------------------------
section("in-place ops")
x = torch.arange(6.0)
x.clamp_(1, 4)
show("clamp_", x)
x = torch.arange(6.0) - 3
x.relu_()
show("relu_", x)
x = torch.arange(6.0)
x.sub_(1, alpha=2)
show("sub_ alpha", x)
x = torch.arange(4.0)
x.addcmul_(x, x, value=0.5)
show("addcmul_", x)
x = torch.arange(4.0)
x.addcdiv_(x, x + 1, value=2)
show("addcdiv_", x)
x = torch.arange(4.0)
x.lerp_(torch.ones(4), 0.25)
show("lerp_ 0.25", x)
x = torch.arange(4.0)
x.lerp_(torch.ones(4), 0.75)
show("lerp_ 0.75", x)
x = torch.arange(4.0)
x.pow_(2)
show("pow_", x)
x = torch.arange(4.0)
x.neg_()
show("neg_", x)
x = torch.arange(4.0)
x.sqrt_()
show("sqrt_", x)
x = torch.arange(4.0) * 0.75
x.exp_()
show("exp_", x)
x = torch.arange(6.0)
x.masked_fill_(x > 2, -1)
show("masked_fill_", x)
x = torch.arange(6.0) - 3
y = nn.ReLU(inplace=True)(x)
show("ReLU(inplace=True)", x.tolist() + [y is x])
x = torch.arange(6.0) - 3
F.leaky_relu(x[2:], 0.5, inplace=True)
show("leaky_relu inplace on a view", x)
x = torch.arange(6.0) - 3
nn.ReLU()(x)
show("ReLU() leaves its input", x)
x = torch.arange(6.0)
x += torch.ones(6)
x -= 1
x *= 2
x /= 4
show("augmented assignment", x)
x = torch.arange(4)
show("int to float", x.float() / 2)
show("float to long", (torch.arange(4.0) * 1.5).long())

# ---- autograd through views and in-place ops -------------------------------------------------
section("autograd")
w = torch.ones(3, requires_grad=True)
y = w * 2
y[1] = 0
y.sum().backward()
show("grad through setitem of a constant", w.grad)
show("setitem keeps requires_grad", y.requires_grad)
w = torch.ones(3, requires_grad=True)
y = w * 2
y.zero_()
y.sum().backward()
show("grad through zero_ of a non-leaf", w.grad)
w = torch.ones(4, requires_grad=True)
y = w * 1
y[1:3].mul_(3)
y.sum().backward()
show("grad through slice mul_", w.grad)
# Version counters: an in-place op bumps its tensor's _version (shared by a view and its base);
# backward refuses a value its formula saved that an in-place op changed since.
w = torch.ones(3, requires_grad=True)
y = w * 2
y.mul_(y)  # mul_ saves a copy of self, but other is y itself
backward_or_error("grad through self mul_", y.sum(), w)
w = torch.ones(3, requires_grad=True)
y = w * 2
z = y * 3  # a mul by a constant saves nothing of y
y.add_(1)
backward_or_error("in-place after a mul by a constant", z.sum(), w)
w = torch.ones(3, requires_grad=True)
y = w * 2
z = y * w  # saves y, for w's gradient
y.add_(1)
backward_or_error("in-place after a mul by a tensor", z.sum(), w)
w = torch.tensor([0.0, 1.0, 2.0], requires_grad=True)
y = w + 1  # add saves nothing
z = y.exp()  # exp saves its result
y.mul_(2)
backward_or_error("in-place on the input of exp", z.sum(), w)
w = torch.tensor([0.0, 1.0, 2.0], requires_grad=True)
y = w.exp()
y.add_(1)
backward_or_error("in-place on the result of exp", y.sum(), w)
w = torch.tensor([-1.0, 0.5, 2.0], requires_grad=True)
y = w * 1
y.relu_()  # saves its result: y as it is after relu_
backward_or_error("relu_ alone", y.sum(), w)
w = torch.tensor([-1.0, 0.5, 2.0], requires_grad=True)
y = w * 1
y.relu_()
y[0] = 7
backward_or_error("setitem after relu_", y.sum(), w)
w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
loss = (w * w).sum()
with torch.no_grad():
    w.sub_(0.1)
backward_or_error("saved leaf changed under no_grad", loss, w)
w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = w.sin()  # sin saves its input
w.detach().add_(1)  # detach() shares w's version counter
backward_or_error("in-place through detach()", y.sum(), w)
w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = w.sin()
w.data.add_(1)  # .data has a version counter of its own
backward_or_error("in-place through .data", y.sum(), w)
x = torch.zeros(4)
v0 = x._version
x.add_(1)
x[1] = 5
x[2:].mul_(2)
v = x.view(2, 2)
v.zero_()
d = x.detach()
d.add_(1)
x[3] += 1
show("_version after in-place ops and views",
     [v0, x._version, v._version, d._version, x.data._version, (x + 1)._version, x.clone()._version])
lin, bn, ln = nn.Linear(2, 2), nn.BatchNorm1d(2), nn.LayerNorm(2)
show("_version of initialized parameters and buffers", [lin.weight._version, lin.bias._version, bn.weight._version,
                                                        bn.running_mean._version, bn.num_batches_tracked._version,
                                                        ln.weight._version])
bn(torch.arange(8.0).view(4, 2))
show("_version after a batchnorm forward", [bn.running_mean._version, bn.running_var._version,
                                            bn.num_batches_tracked._version])
versions = []
for make in (lambda p: torch.optim.SGD(p, lr=0.1), lambda p: torch.optim.AdamW(p, lr=0.1)):
    opt = make(lin.parameters())
    lin(torch.ones(3, 2)).sum().backward()
    opt.step()
    versions.append(lin.weight._version)
versions.append(opt.state[lin.weight]["step"]._version)
show("_version after optimizer steps", versions)
x = torch.zeros(2)
x.add_(1)
show("Parameter shares its data's _version", nn.Parameter(x)._version)
w = torch.ones(3, requires_grad=True)
y = (w * w).sum()
y.backward()
raises("second backward through a mul", lambda: y.backward())
w = torch.ones(3, requires_grad=True)
y = (w * 2).sum()  # saves the 2
y.backward()
raises("second backward through a mul by a constant", lambda: y.backward())
w = torch.tensor([0.0, 1.0, 2.0], requires_grad=True)
y = w * 1
z = y.exp()
z[0:2].mul_(2)
backward_or_error("in-place on a view of exp's result", z.sum(), w)
w = torch.ones(3, requires_grad=True)
y = (w + 1).sum()
y.backward()
y.backward()
show("second backward through an add", w.grad)
w = torch.ones(3, requires_grad=True)
y = (w * w).sum()
y.backward(retain_graph=True)
y.backward()
show("second backward with retain_graph", w.grad)
w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = torch.zeros(3)
y.copy_(w)
(y * y).sum().backward()
show("grad through copy_ from a leaf", w.grad)
w = torch.tensor([1.0, 2.0], requires_grad=True)
y = torch.zeros(4)
y[1:3] = w
(y * torch.arange(4.0)).sum().backward()
show("grad through setitem of a leaf", w.grad)
show("setitem makes base require grad", y.requires_grad)
w = torch.zeros(3, requires_grad=True)
raises("in-place on a leaf that requires grad", lambda: w.add_(1))
with torch.no_grad():
    w.add_(1)
show("in-place on a leaf under no_grad", w)

# ---- BatchNorm -------------------------------------------------------------------------------
section("batchnorm")
bn = nn.BatchNorm2d(2)
x = torch.arange(16.0).view(2, 2, 2, 2)
y = bn(x)
show("train output", y)
show("running_mean", bn.running_mean)
show("running_var", bn.running_var)
show("num_batches_tracked", bn.num_batches_tracked.item())
bn(x * 2 - 3)
show("running_mean after 2", bn.running_mean)
show("running_var after 2", bn.running_var)
show("num_batches_tracked after 2", bn.num_batches_tracked.item())
bn.eval()
show("eval output", bn(x))
show("eval leaves running_mean", bn.running_mean)
show("state_dict keys", " ".join(bn.state_dict().keys()))
bn1 = nn.BatchNorm1d(3)
bn1(torch.arange(12.0).view(4, 3))
show("1d running_mean", bn1.running_mean)
show("1d running_var", bn1.running_var)
bn1 = nn.BatchNorm1d(2, momentum=0.5)
show("1d 3-D input output", bn1(torch.tensor([[[1.0, 2.0, 4.0], [0.0, 1.0, 0.0]], [[3.0, -1.0, 2.0], [2.0, 2.0, 5.0]]])))
show("1d 3-D input running_var", bn1.running_var)
bnc = nn.BatchNorm2d(2, momentum=None)
bnc(x)
bnc(x * 2)
show("momentum None running_mean", bnc.running_mean)
rm, rv = torch.zeros(2), torch.ones(2)
F.batch_norm(x, rm, rv, training=True, momentum=0.3)
show("functional running_mean", rm)
show("functional running_var", rv)
bnt = nn.BatchNorm2d(2, track_running_stats=False)
show("no running stats output", bnt(x))
show("no running stats buffers", [bnt.running_mean is None, bnt.num_batches_tracked is None])
show("affine False weight", nn.BatchNorm2d(2, affine=False).weight is None)
raises("train with one value per channel", lambda: nn.BatchNorm1d(3)(torch.ones(1, 3)))
raises("2d on 3-D input", lambda: nn.BatchNorm2d(3)(torch.ones(2, 3, 4)))

# ---- dropout ---------------------------------------------------------------------------------
section("dropout")
torch.manual_seed(0)
d = nn.Dropout(0.3)
x = torch.ones(10000)
y = d(x)
zeroed = (y == 0).sum().item() / 10000
show("train zeroes about p", 0.27 < zeroed < 0.33)
kept = [v for v in y.tolist() if v != 0]
show("kept scaled by 1/(1-p)", all(abs(v - 1 / 0.7) < 1e-5 for v in kept))
d.eval()
show("eval is identity", torch.equal(d(x), x))
show("functional training=False is identity", torch.equal(F.dropout(x, 0.5, training=False), x))
show("p=0 is identity", torch.equal(F.dropout(x, 0.0), x))
show("p=1 zeroes all", (F.dropout(x[:10], 1.0) == 0).sum().item())
w = torch.ones(1000, requires_grad=True)
y = F.dropout(w, 0.5)
y.sum().backward()
show("grad values", sorted(set(round(v, 4) for v in w.grad.tolist())))
show("grad zero where output zero", ((w.grad == 0) == (y == 0)).sum().item())
raises("p out of range", lambda: nn.Dropout(1.5))
raises("functional p out of range", lambda: F.dropout(x, -0.1))

# ---- losses ----------------------------------------------------------------------------------
section("losses")
logits = torch.tensor([[1.0, 2.0, 3.0], [1.0, 0.0, -1.0], [0.5, 0.5, -2.0]])
target = torch.tensor([2, 0, 1])
show("cross_entropy", F.cross_entropy(logits, target))
show("CrossEntropyLoss sum", nn.CrossEntropyLoss(reduction="sum")(logits, target))
show("cross_entropy none", F.cross_entropy(logits, target, reduction="none"))
show("cross_entropy weight", F.cross_entropy(logits, target, weight=torch.tensor([1.0, 2.0, 3.0])))
show("cross_entropy ignore_index", F.cross_entropy(logits, torch.tensor([2, -100, 1])))
show("cross_entropy label_smoothing", F.cross_entropy(logits, target, label_smoothing=0.1))
probs = torch.tensor([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0], [0.0, 0.5, 0.5]])
show("cross_entropy probabilities", F.cross_entropy(logits, probs))
show("nll_loss of log_softmax", F.nll_loss(F.log_softmax(logits, dim=1), target))
show("NLLLoss sum", nn.NLLLoss(reduction="sum")(logits, target))
show("NLLLoss weight", nn.NLLLoss(weight=torch.tensor([1.0, 2.0, 3.0]))(F.log_softmax(logits, dim=1), target))
a = torch.tensor([1.0, 2.0, 3.0, -1.25])
b = torch.tensor([0.0, 2.5, 5.0, -1.0])
show("mse_loss", F.mse_loss(a, b))
show("MSELoss sum", nn.MSELoss(reduction="sum")(a, b))
show("l1_loss", F.l1_loss(a, b))
show("L1Loss none", nn.L1Loss(reduction="none")(a, b))
show("smooth_l1_loss", F.smooth_l1_loss(a, b))
show("SmoothL1Loss beta", nn.SmoothL1Loss(beta=0.5)(a, b))
show("huber_loss", F.huber_loss(a, b, delta=1.5))
p = torch.tensor([0.2, 0.7, 0.9, 0.5])
t = torch.tensor([0.0, 1.0, 1.0, 0.0])
show("binary_cross_entropy", F.binary_cross_entropy(p, t))
show("BCELoss weight", nn.BCELoss(weight=torch.tensor([1.0, 2.0, 1.0, 0.5]))(p, t))
show("bce_with_logits", F.binary_cross_entropy_with_logits(a, t))
show("BCEWithLogitsLoss pos_weight", nn.BCEWithLogitsLoss(pos_weight=torch.tensor([2.0, 2.0, 2.0, 2.0]))(a, t))
lg = logits.clone().requires_grad_(True)
F.cross_entropy(lg, target).backward()
show("cross_entropy grad", lg.grad)
a2 = a.clone().requires_grad_(True)
F.smooth_l1_loss(a2, b).backward()
show("smooth_l1 grad", a2.grad)

# ---- optimizers ------------------------------------------------------------------------------
section("optimizers")
inputs = torch.tensor([[1.0, 2.0], [-1.0, 0.5], [0.0, -1.5]])
wanted = torch.tensor([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]])


def fit(make, steps=3):
    model = nn.Linear(2, 2)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[0.5, -0.25], [0.125, 1.0]]))
        model.bias.copy_(torch.tensor([0.1, -0.3]))
    opt = make(model.parameters())
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.mse_loss(model(inputs), wanted)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model, opt, losses


for name, make in [
    ("SGD", lambda p: torch.optim.SGD(p, lr=0.1)),
    ("SGD momentum", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.8)),
    ("SGD nesterov weight_decay", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD dampening maximize", lambda p: torch.optim.SGD(p, lr=0.04, momentum=0.5, dampening=0.5, maximize=True)),
    ("Adam", lambda p: torch.optim.Adam(p, lr=0.1)),
    ("Adam weight_decay amsgrad", lambda p: torch.optim.Adam(p, lr=0.1, betas=(0.85, 0.95), weight_decay=0.1, amsgrad=True)),
    ("AdamW", lambda p: torch.optim.AdamW(p, lr=0.1)),
    ("AdamW weight_decay 0.5", lambda p: torch.optim.AdamW(p, lr=0.05, weight_decay=0.5, eps=1e-6)),
]:
    model, opt, losses = fit(make)
    show(name + " losses", losses)
    show(name + " weight", model.weight)
    show(name + " bias", model.bias)
model, opt, _ = fit(lambda p: torch.optim.Adam(p, lr=0.1))
show("Adam state keys", " ".join(sorted(opt.state_dict()["state"][0].keys())))
show("Adam step", float(opt.state_dict()["state"][0]["step"]))
show("Adam exp_avg of bias", opt.state_dict()["state"][1]["exp_avg"])
opt.param_groups[0]["lr"] = 0.01
opt.zero_grad()
F.mse_loss(model(inputs), wanted).backward()
opt.step()
show("Adam after lr change", model.bias)
show("grad after step", model.bias.grad)
opt.zero_grad()
show("zero_grad sets None", model.bias.grad is None)
F.mse_loss(model(inputs), wanted).backward()
opt.zero_grad(set_to_none=False)
show("zero_grad(set_to_none=False)", model.bias.grad)
F.mse_loss(model(inputs), wanted).backward()
model.zero_grad()
show("Module.zero_grad", model.weight.grad is None)
model, opt, _ = fit(lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9))
show("SGD momentum_buffer of bias", opt.state_dict()["state"][1]["momentum_buffer"])
show("param_groups", len(opt.param_groups))

# ---- torch.compile: graph breaks and guards --------------------------------------------------
section("graph breaks")


def f_clean(x):
    return (x * 2).relu().sum()


def f_print(x):
    y = x + 1
    print("side effect inside the compiled function")
    return y * 2


def f_branch(x):
    y = x.sin()
    if y.sum() > 0:
        return y + 1
    return y - 1


def f_item(x):
    s = x.sum().item()
    return x * s


def f_two_prints(x):
    print("first")
    y = x * 3
    print("second")
    return y - 1


x = torch.arange(4.0)
for fn in (f_clean, f_print, f_branch, f_item, f_two_prints):
    e = torch._dynamo.explain(fn)(x)
    # PyTorch's graph_break_count is graph_count - 1; break_reasons, the breaks that ended a graph.
    print("%s: explain graph_count %d graph_break_count %d break_reasons %d"
          % (fn.__name__, e.graph_count, e.graph_break_count, len(e.break_reasons)))
torch._dynamo.reset()
for fn in (f_clean, f_print, f_branch, f_item, f_two_prints):
    eager = fn(x)
    compiled = torch.compile(fn, backend=BACKEND)(x)
    show(fn.__name__ + " compiled equals eager", torch.allclose(eager, compiled))
    torch._dynamo.reset()
    try:
        torch.compile(fn, fullgraph=True, backend=BACKEND)(x)
        print("%s: fullgraph compiles" % fn.__name__)
    except Exception as e:
        print("%s: fullgraph raises Unsupported %s" % (fn.__name__, isinstance(e, torch._dynamo.exc.Unsupported)))

# fullgraph=True turns capture_scalar_outputs on (above: f_item compiles); the config does it alone.
torch._dynamo.reset()
torch._dynamo.config.capture_scalar_outputs = True
try:
    e = torch._dynamo.explain(f_item)(x)
    print("f_item with capture_scalar_outputs: explain graph_count %d graph_break_count %d"
          % (e.graph_count, e.graph_break_count))
    torch._dynamo.reset()
    show("f_item with capture_scalar_outputs equals eager", torch.allclose(torch.compile(f_item, backend=BACKEND)(x), f_item(x)))
finally:
    torch._dynamo.config.capture_scalar_outputs = False


def f_inplace(x):
    x.add_(1)
    x[0] = -5
    return x * 2


torch._dynamo.reset()
x = torch.arange(4.0)
out = torch.compile(f_inplace, backend=BACKEND)(x)
show("compiled in-place mutates the input", x)
show("compiled in-place output", out)


def f_views(x):
    y = x.clone()
    y[1:3].mul_(10)
    y.view(2, 2)[1, 1] = 0
    return y


show("compiled views", torch.compile(f_views, backend=BACKEND)(torch.arange(4.0)))

section("guards")


def f_flag(x, flag):
    return x + 1 if flag else x - 1


def recompiles(label, fn, first, second):
    """Whether a second call recompiles: config.error_on_recompile turns a recompile into RecompileError."""
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=BACKEND)
    compiled(*first)
    torch._dynamo.config.error_on_recompile = True
    try:
        raises(label, lambda: compiled(*second))
    finally:
        torch._dynamo.config.error_on_recompile = False


x = torch.arange(4.0)
recompiles("same shape, new values", f_clean, (x,), (x + 1,))
recompiles("new shape", f_clean, (x,), (torch.arange(5.0),))
recompiles("new dtype", f_clean, (x,), (torch.arange(4),))
recompiles("requires_grad", f_clean, (x,), (torch.arange(4.0).requires_grad_(True),))
recompiles("same bool", f_flag, (x, True), (x, True))
recompiles("other bool", f_flag, (x, True), (x, False))


def f_scale(x, n):
    return x * (n + 1) if n >= 0 else x / n


# An int argument: a constant at its first value, symbolic once another comes (automatic dynamic).
recompiles("same int", f_scale, (x, 2), (x, 2))
recompiles("other int", f_scale, (x, 2), (x, 3))
torch._dynamo.reset()
c = torch.compile(f_scale, backend=BACKEND)
show("int 2 then 3", c(x, 2).tolist() + c(x, 3).tolist())
torch._dynamo.config.error_on_recompile = True
try:
    raises("int 6 after it turned symbolic", lambda: c(x, 6))
    show("int 6 value", c(x, 6))
    raises("int -3 fails the guard n >= 0", lambda: c(x, -3))
finally:
    torch._dynamo.config.error_on_recompile = False
torch._dynamo.reset()

section("compiled training step")
torch._dynamo.reset()
# No bias before the BatchNorm: its gradient is zero up to rounding, and Adam would amplify the rounding.
model = nn.Sequential(nn.Linear(2, 3, bias=False), nn.BatchNorm1d(3), nn.ReLU(), nn.Linear(3, 2))
with torch.no_grad():
    model[0].weight.copy_(torch.tensor([[0.5, -0.5], [0.25, 1.0], [-1.0, 0.5]]))
    model[3].weight.copy_(torch.tensor([[1.0, 0.5, -0.5], [0.25, -1.0, 0.75]]))
    model[3].bias.copy_(torch.tensor([0.2, -0.2]))
cmodel = torch.compile(model, backend=BACKEND)
opt = torch.optim.Adam(model.parameters(), lr=0.05)
labels = torch.tensor([1, 0, 1])
for step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(cmodel(inputs), labels)
    loss.backward()
    opt.step()
    show("step %d loss" % step, loss.item())
show("batchnorm running_mean", model[1].running_mean)
show("batchnorm running_var", model[1].running_var)
show("batchnorm num_batches_tracked", model[1].num_batches_tracked.item())
show("first weight", model[0].weight)
show("batchnorm weight", model[1].weight)
show("last bias", model[3].bias)

section("attributes")
show("hasattr of a missing name", hasattr(torch, "no_such_function_anywhere"))
show("getattr default", getattr(torch.Tensor, "no_such_method_anywhere", "default"))
print("done")
