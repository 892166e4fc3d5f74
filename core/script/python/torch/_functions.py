# Lowerscope's torch, second part: the functions of the torch namespace. It runs in the namespace
# of torch/__init__.py, right after it (script/python_host.cpp joins the two), so it sees that
# file's names (Tensor, _op, _new, ...) as its own.


def manual_seed(seed):
    _ls.seed(_bi.int(seed))


def seed():
    return 0


def randn(*size, dtype=None, device=None, requires_grad=False, generator=None):
    shape = _shape_args(size)
    return _new(_ls.random("normal", shape, 0.0, 1.0), "f32", shape, requires_grad)


def rand(*size, dtype=None, device=None, requires_grad=False, generator=None):
    shape = _shape_args(size)
    return _new(_ls.random("uniform", shape, 0.0, 1.0), "f32", shape, requires_grad)


def _uniform(shape, lo, hi):
    return _new(_ls.random("uniform", tuple(shape), lo, hi), "f32", shape)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    shape = tuple(size)
    if dtype is None:
        dtype = _bool_dtype if isinstance(fill_value, _bi.bool) else int64 if isinstance(fill_value, _bi.int) else float32
    return _new(_ls.full(dtype.short, shape, _bi.float(fill_value)), dtype.short, shape, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False):
    shape = _shape_args(size)
    dt = (dtype or float32).short
    return _new(_ls.full(dt, shape, 0.0), dt, shape, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False):
    shape = _shape_args(size)
    dt = (dtype or float32).short
    return _new(_ls.full(dt, shape, 1.0), dt, shape, requires_grad)


empty = zeros


def zeros_like(t, dtype=None, **kw):
    return zeros(t._shape, dtype=dtype or t.dtype)


def ones_like(t, dtype=None, **kw):
    return ones(t._shape, dtype=dtype or t.dtype)


def randn_like(t, **kw):
    return randn(t._shape)


def arange(start, end=None, step=1, dtype=None, device=None):
    if end is None:
        start, end = 0, start
    vals = []
    v = start
    while (step > 0 and v < end) or (step < 0 and v > end):
        vals.append(v)
        v += step
    isfloat = _bi.any(isinstance(x, _bi.float) for x in (start, end, step))
    dt = (dtype or (float32 if isfloat else int64)).short
    return _new(_ls.buffer(dt, (len(vals),), [_bi.float(x) for x in vals]), dt, (len(vals),))


def tensor(data, dtype=None, device=None, requires_grad=False):
    if isinstance(data, Tensor):
        return Tensor._make(data._value(), data._dt, data._shape).requires_grad_(requires_grad)  # a copy, not a view
    shape, flat = [], []

    def walk(x, depth):
        if isinstance(x, (list, tuple)):
            if len(shape) <= depth:
                shape.append(len(x))
            elif shape[depth] != len(x):
                raise ValueError("expected a rectangular nested list")
            for y in x:
                walk(y, depth + 1)
        else:
            flat.append(x)

    walk(data, 0)
    if dtype is None:
        if _bi.all(isinstance(x, _bi.bool) for x in flat) and flat:
            dtype = _bool_dtype
        elif _bi.all(isinstance(x, _bi.int) for x in flat) and flat:
            dtype = int64
        else:
            dtype = float32
    return _new(_ls.buffer(dtype.short, tuple(shape), [_bi.float(x) for x in flat]), dtype.short, tuple(shape), requires_grad)


def is_tensor(x):
    return isinstance(x, Tensor)


def numel(x):
    return x.numel()


# ---- functions ------------------------------------------------------------------------------------


def _unary(name):
    def fn(input):
        return _op("call", "torch." + name, name, [input])

    fn.__name__ = name
    return fn


for _name in ("sin", "cos", "exp", "log", "neg", "abs", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "reciprocal", "erf"):
    globals()[_name] = _unary(_name)


def add(a, b, alpha=1):
    return a + (b * alpha if alpha != 1 else b) if isinstance(a, Tensor) else b + a


def sub(a, b, alpha=1):
    return a - (b * alpha if alpha != 1 else b)


def mul(a, b):
    return a * b if isinstance(a, Tensor) else b * a


def div(a, b):
    return a / b


def pow(a, e):
    return a ** e


def maximum(a, b):
    return _op("call", "torch.maximum", "maximum", [a, b])


def minimum(a, b):
    return _op("call", "torch.minimum", "minimum", [a, b])


def where(cond, a, b):
    return _op("call", "torch.where", "where", [cond, a, b])


def clamp(x, min=None, max=None):
    return _op("call", "torch.ops.aten.clamp.default", "clamp", [x, min, max])


def cat(tensors, dim=0):
    return _op("call", "torch.cat", "cat", [list(tensors), dim])


def flatten(x, start_dim=0, end_dim=-1):
    out = _op("call", "torch.flatten", "flatten", [x, start_dim] + ([end_dim] if end_dim != -1 else []))
    _link(x, out, "flatten", (start_dim, end_dim))  # a view where the strides allow it, as PyTorch's
    return out


def softmax(x, dim, dtype=None):
    return _op("call", "torch.softmax", "softmax", [x], {"dim": dim})


def sum(x, dim=None, keepdim=False):
    return x.sum(dim, keepdim)


def mean(x, dim=None, keepdim=False):
    return x.mean(dim, keepdim)


def amax(x, dim=(), keepdim=False):
    return x.amax(dim, keepdim)


def transpose(x, d0, d1):
    return x.transpose(d0, d1)


def reshape(x, shape):
    return x.reshape(shape)


def permute(x, dims):
    return x.permute(dims)


def unsqueeze(x, dim):
    return x.unsqueeze(dim)


def split(x, size, dim=0):
    return x.split(size, dim)


def matmul(a, b):
    if a.dim() == 2 and b.dim() == 2:
        return _op("call", "torch.ops.aten.mm.default", "mm", [a, b])
    if a.dim() == 3 and b.dim() == 3:
        return _op("call", "torch.ops.aten.bmm.default", "bmm", [a, b])
    if b.dim() == 2:
        lead = a._shape[:-1]
        return matmul(a.reshape(-1, a._shape[-1]), b).view(*lead, b._shape[-1])
    _unsupported("torch.matmul of %d-d and %d-d tensors" % (a.dim(), b.dim()))


mm = matmul
bmm = matmul


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    two = lambda v: tuple(v) if isinstance(v, (list, tuple)) else (v, v)
    return _op("call", "torch.conv2d", "conv2d", [input, weight, bias, two(stride), two(padding), two(dilation), groups])


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    x, y = a.tolist() if isinstance(a, Tensor) else a, b.tolist() if isinstance(b, Tensor) else b

    def flat(v):
        return [z for w in v for z in flat(w)] if isinstance(v, list) else [v]

    xs, ys = flat(x), flat(y)
    if len(ys) == 1 and len(xs) > 1:
        ys = ys * len(xs)
    return len(xs) == len(ys) and _bi.all(_bi.abs(p - q) <= atol + rtol * _bi.abs(q) for p, q in zip(xs, ys))


def equal(a, b):
    return a._shape == b._shape and a.tolist() == b.tolist()


class _Testing:
    @staticmethod
    def assert_close(actual, expected, rtol=1.3e-6, atol=1e-5, **kw):
        if tuple(actual._shape) != tuple(expected._shape):
            raise AssertionError("shapes differ: %s vs %s" % (actual.shape, expected.shape))
        xs, ys = _ls.tolist(actual.detach()._buf), _ls.tolist(expected.detach()._buf)
        worst = _bi.max([_bi.abs(p - q) - (atol + rtol * _bi.abs(q)) for p, q in zip(xs, ys)] or [0])
        if worst > 0:
            raise AssertionError("Tensor-likes are not close! (worst excess over tolerance %g)" % worst)


testing = _Testing()


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None, disable=False):
    """Compiles a function or module: each call captures its graphs (torch._dynamo), and the
    pipeline compiles and runs them."""
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode)
    if disable:
        return model
    return _dynamo.optimize(model, fullgraph=fullgraph, dynamic=dynamic, mode=mode, backend=backend)


float = float32
double = float64
long = int64
int = int32
bool = _bool_dtype

from torch import _dynamo  # noqa: E402  (filled in after this module)
from torch import nn  # noqa: E402
from torch import optim  # noqa: E402


def __getattr__(name):
    """torch.linspace and the rest this torch lacks: NotImplementedError naming it (PEP 562)."""
    _missing_attribute("torch", name)
