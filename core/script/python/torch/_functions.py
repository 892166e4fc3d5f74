# Lowerscope's torch, second part: views (how a view aliases its base) and the functions of the
# torch namespace. It runs in the namespace of torch/__init__.py, right after it
# (script/python_host.cpp joins the two), so it sees that file's names (Tensor, _op, _new, ...) as
# its own.


# ---- views ---------------------------------------------------------------------------------------
# A view remembers its base and how it was taken (t._view = (base, kind, args)); the base keeps weak
# references to its views. Tensor._set writes a view's new value into its base and derives the
# base's other views again, so `x[1:3].add_(1)`, `x[0] = 5` and `x.view(2, 2).mul_(2)` change x,
# and a view taken before an in-place op on its base sees the new value, as PyTorch's aliasing.

_VIEW_CALLS = {  # kind -> (op kind, callee, node base name)
    "slice": ("call", "torch.ops.aten.slice.Tensor", "slice"),
    "select": ("call", "torch.ops.aten.select.int", "select"),
    "view": ("method", "view", "view"),
    "reshape": ("method", "reshape", "reshape"),
    "permute": ("method", "permute", "permute"),
    "transpose": ("method", "transpose", "transpose"),
    "t": ("call", "torch.ops.aten.t.default", "t"),
    "unsqueeze": ("method", "unsqueeze", "unsqueeze"),
    "squeeze": ("call", "torch.ops.aten.squeeze.dim", "squeeze"),
    "flatten": ("method", "flatten", "flatten"),
    "expand": ("call", "torch.ops.aten.expand.default", "expand"),
}


def _derive(base, kind, args, refresh=False):
    """The view `kind` of base's current value (no link recorded)."""
    if kind == "alias":
        if refresh and base._buf is None and base._graph is not None:  # a captured value: the same node
            t = Tensor._make(None, base._dt, base._shape)
            t._node, t._graph = base._node, base._graph
            base._graph.produced.append((base._node, _weakref.ref(t)))
            return t
        return Tensor._make(base._value(), base._dt, base._shape)
    k, callee, name = _VIEW_CALLS[kind]
    return _op(k, callee, name, [base] + list(args))


def _view_op(base, kind, args):
    """base's view `kind` as PyTorch takes it: view() where the strides allow it (else an error),
    reshape() and flatten() a view where they allow it and a copy where they do not."""
    out = _derive(base, kind, args)
    if not _link(base, out, kind, args) and kind == "view":
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one dimension "
                           "spans across two contiguous subspaces). Use .reshape(...) instead.")
    return out


def _link(base, out, kind, args):
    """Makes out a view of base (False where its strides cannot express it: out stays a copy)."""
    st = _view_strides(base, kind, tuple(args), out._shape)
    if st is None:
        return False
    out._view, out._st, out._vc = (base, kind, tuple(args)), st, base._vc
    if base._views is None:
        base._views = []
    elif len(base._views) > 64:
        base._views = [w for w in base._views if w() is not None]
    base._views.append(_weakref.ref(out))
    return True


# Strides, as PyTorch's: a view shares its base's storage, and whether view()/reshape() can alias and
# contiguous() is a no-op follows from them. A tensor that is no view is contiguous (_st None).


def _contiguous_strides(shape):
    st, acc = [], 1
    for d in reversed(shape):
        st.append(acc)
        acc *= _bi.max(d, 1)
    return tuple(reversed(st))


def _strides(t):
    return t._st if t._st is not None else _contiguous_strides(t._shape)


def _overlaps(t):
    """Whether elements of t share memory (a dimension expanded from one element)."""
    return t._st is not None and _bi.any(s == 0 and d > 1 for s, d in zip(t._st, t._shape))


def _is_contiguous(shape, st):
    expected = 1
    for d, s in zip(reversed(shape), reversed(st)):
        if d != 1:
            if s != expected:
                return False
            expected *= d
    return True


def _compute_stride(oldshape, oldstride, newshape):
    """ATen's computeStride (TensorUtils.cpp): the strides of a view of newshape, or None."""
    if not oldshape:
        return tuple(1 for _ in newshape)
    numel = 1
    for d in oldshape:
        numel *= d
    if numel == 0:
        return tuple(oldstride) if tuple(oldshape) == tuple(newshape) else _contiguous_strides(newshape)
    newstride = [0] * len(newshape)
    view_d = len(newshape) - 1
    chunk_base_stride = oldstride[-1]
    tensor_numel = view_numel = 1
    for tensor_d in range(len(oldshape) - 1, -1, -1):
        tensor_numel *= oldshape[tensor_d]
        if tensor_d == 0 or (oldshape[tensor_d - 1] != 1 and oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or newshape[view_d] == 1):
                newstride[view_d] = view_numel * chunk_base_stride
                view_numel *= newshape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = oldstride[tensor_d - 1]
                tensor_numel = view_numel = 1
    return tuple(newstride) if view_d == -1 else None


def _view_strides(base, kind, args, out_shape):
    st, n = list(_strides(base)), len(base._shape)
    if kind == "alias":
        return tuple(st)
    if kind in ("view", "reshape", "flatten"):
        return _compute_stride(base._shape, st, out_shape)
    if kind == "slice":
        dim, step = args[0] % n, args[3]
        st[dim] *= step
        return tuple(st)
    if kind == "select":
        del st[args[0] % n]
        return tuple(st)
    if kind == "permute":
        dims = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
        return tuple(st[d % n] for d in dims)
    if kind in ("transpose", "t"):
        if n < 2:
            return tuple(st)
        d0, d1 = (args[0] % n, args[1] % n) if kind == "transpose" else (0, 1)
        st[d0], st[d1] = st[d1], st[d0]
        return tuple(st)
    if kind == "unsqueeze":
        dim = args[0] % (n + 1)
        st.insert(dim, 1 if dim >= n else base._shape[dim] * st[dim])
        return tuple(st)
    if kind == "expand":  # broadcast dimensions (new, or of size 1 made larger) read one element: stride 0
        lead = len(out_shape) - n
        return tuple([0] * lead + [st[i] if base._shape[i] == out_shape[lead + i] else 0 for i in range(n)])
    if kind == "squeeze":
        dim = args[0] % n if n else 0
        if n and base._shape[dim] == 1:
            del st[dim]
        return tuple(st)
    raise AssertionError("no strides for a view of kind " + kind)


def _scatter(base, view, kind, args):
    """base's new value once its view `kind` holds view's value."""
    if kind == "alias":
        return view
    if kind == "slice":
        dim, start, stop, step = args
        return _op("call", "torch.ops.aten.slice_scatter.default", "slice_scatter", [base, view, dim, start, stop, step])
    if kind == "select":
        dim, index = args
        return _op("call", "torch.ops.aten.select_scatter.default", "select_scatter", [base, view, dim, index])
    if kind == "permute":
        dims = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
        dims = [d % len(dims) for d in dims]
        return _op("method", "permute", "permute", [view, [dims.index(i) for i in range(len(dims))]])
    if kind in ("transpose", "t"):
        d0, d1 = args if kind == "transpose" else (0, 1)
        return _op("method", "transpose", "transpose", [view, d0, d1]) if view.dim() > 1 else view
    return _op("method", "view", "view", [view, list(base._shape)])


def _index(t, idx):
    """x[i], x[a:b], x[:, i], x[None]: select, slice and unsqueeze ops."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    out, dim = t, 0
    for i in idx:
        if i is None:
            out = out.unsqueeze(dim)
            dim += 1
        elif i is Ellipsis:
            dim = out.dim() - (len(idx) - 1 - idx.index(Ellipsis))
        elif isinstance(i, slice):
            if i != slice(None):
                start = 0 if i.start is None else i.start
                stop = out._shape[dim] if i.stop is None else i.stop
                out = _view_op(out, "slice", [dim, start, stop, i.step or 1])
            dim += 1
        elif isinstance(i, _bi.int) or _dynamo._is_symint(i):
            out = _view_op(out, "select", [dim, _bi.int(i)])
        else:
            _unsupported("indexing with %s" % type(i).__name__)
    return out


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
