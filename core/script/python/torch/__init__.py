"""Lowerscope's torch: the part of PyTorch's Python API that the walkthrough scripts use.

Tensors hold buffers of the core (`_lowerscope`). Every op is spelled as the line TorchDynamo
would record for it (`torch.sin(x)`, `x + 1`, `x.sum()`), and that one line is what runs: in
eager mode as a one-op graph through the reference interpreter, under torch.compile as a node of
the graph being captured (torch._dynamo). Gradients come from the same one-op graphs,
differentiated by the core's derivative rules. What is missing raises NotImplementedError naming it.
"""
import builtins as _bi
import math as _math
import sys as _sys
import weakref as _weakref

import _lowerscope as _ls

__version__ = "2.11.0+lowerscope"

# ---- dtypes, sizes, devices ---------------------------------------------------------------------


class dtype:
    __slots__ = ("name", "short", "is_floating_point", "itemsize")

    def __init__(self, name, short, fp, size):
        self.name, self.short, self.is_floating_point, self.itemsize = name, short, fp, size

    def __repr__(self):
        return "torch." + self.name


float32 = dtype("float32", "f32", True, 4)
float64 = dtype("float64", "f64", True, 8)
int64 = dtype("int64", "i64", False, 8)
int32 = dtype("int32", "i32", False, 4)
uint8 = dtype("uint8", "u8", False, 1)
_bool_dtype = dtype("bool", "b8", False, 1)
_DTYPES = {d.short: d for d in (float32, float64, int64, int32, uint8, _bool_dtype)}


class Size(tuple):
    def __repr__(self):
        return "torch.Size([%s])" % ", ".join(_bi.str(d) for d in self)

    def numel(self):
        n = 1
        for d in self:
            n *= d
        return n


class device:
    def __init__(self, type="cpu", index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        self.type, self.index = _bi.str(type).split(":")[0], index

    def __repr__(self):
        return "device(type='%s')" % self.type

    def __eq__(self, other):
        return isinstance(other, device) and other.type == self.type


class _Cuda:
    """Tensors live on the host: compiled code runs on the CPU (the app compiles CUDA separately)."""

    @staticmethod
    def is_available():
        return False

    @staticmethod
    def synchronize():
        pass

    @staticmethod
    def manual_seed(seed):
        manual_seed(seed)


cuda = _Cuda()

# ---- grad mode --------------------------------------------------------------------------------

_grad_enabled = True


class _GradMode:
    def __init__(self, enabled):
        self.enabled = enabled

    def __enter__(self):
        global _grad_enabled
        self.prev, _grad_enabled = _grad_enabled, self.enabled

    def __exit__(self, *exc):
        global _grad_enabled
        _grad_enabled = self.prev
        return False

    def __call__(self, fn):
        def wrapper(*a, **k):
            with _GradMode(self.enabled):
                return fn(*a, **k)

        wrapper.__name__ = getattr(fn, "__name__", "wrapper")
        return wrapper


def no_grad(fn=None):
    return _GradMode(False)(fn) if callable(fn) else _GradMode(False)


def enable_grad(fn=None):
    return _GradMode(True)(fn) if callable(fn) else _GradMode(True)


def is_grad_enabled():
    return _grad_enabled


def set_grad_enabled(mode):
    global _grad_enabled
    _grad_enabled = _bi.bool(mode)


# ---- how ops are spelled ------------------------------------------------------------------------


def _float_text(v):
    if v != v:
        raise NotImplementedError("NaN as an argument of an op")
    if v in (_math.inf, -_math.inf):
        return "inf" if v > 0 else "-inf"
    return repr(v)


def _text(a, ref):
    """An argument as Dynamo's graph prints it; tensors (and symbolic ints) through ref()."""
    if isinstance(a, Tensor):
        return ref(a)
    if _dynamo._is_symint(a):
        return _bi.str(_bi.int(a))
    if a is None or isinstance(a, _bi.bool):
        return repr(a)
    if isinstance(a, _bi.int):
        return repr(a)
    if isinstance(a, _bi.float):
        return _float_text(a)
    if isinstance(a, dtype):
        return repr(a)
    if isinstance(a, _bi.str):
        return repr(a)
    if isinstance(a, list):
        return "[" + ", ".join(_text(x, ref) for x in a) + "]"
    if isinstance(a, tuple):
        inner = ", ".join(_text(x, ref) for x in a)
        return "(" + inner + ("," if len(a) == 1 else "") + ")"
    raise NotImplementedError("an argument of type %s in a torch call" % type(a).__name__)


def _tensors_in(args, kwargs):
    """The tensors among an op's arguments, in order, each once. (No recursive closure here: its
    reference cycle would keep the tensors alive, and a captured graph's outputs are the tensors
    still alive.)"""
    out, seen = [], set()
    work = list(args) + list((kwargs or {}).values())
    work.reverse()
    while work:
        a = work.pop()
        if isinstance(a, Tensor):
            if id(a) not in seen:
                seen.add(id(a))
                out.append(a)
        elif isinstance(a, (list, tuple)):
            work.extend(reversed(a))
    return out


def _render(kind, callee, args, kwargs, ref):
    """The expression of one op: kind is 'call' (callee(args)), 'method' (args[0].callee(...)),
    'binop' (args[0] callee args[1]) or 'neg'."""
    if kind == "binop":
        return "%s %s %s" % (_text(args[0], ref), callee, _text(args[1], ref))
    if kind == "neg":
        return "-" + _text(args[0], ref)
    parts = [_text(a, ref) for a in (args[1:] if kind == "method" else args)]
    parts += ["%s = %s" % (k, _text(v, ref)) for k, v in (kwargs or {}).items()]
    if kind == "method":
        return "%s.%s(%s)" % (_text(args[0], ref), callee, ", ".join(parts))
    return "%s(%s)" % (callee, ", ".join(parts))


def _op(kind, callee, base, args, kwargs=None, multi=False):
    """Runs (or, under torch.compile, records) one op. base names its node in a captured graph."""
    frame = _dynamo._active
    if frame is not None:
        return frame.record(kind, callee, base, args, kwargs, multi)
    tensors = _tensors_in(args, kwargs)
    names = {id(t): "a%d" % i for i, t in enumerate(tensors)}
    expr = _render(kind, callee, args, kwargs, lambda t: names[id(t)])
    metas = [(t._dt, t._shape) for t in tensors]
    try:
        outs = _ls.stmt(expr, metas, [t._buf for t in tensors])
    except RuntimeError as e:
        raise RuntimeError("%s: %s" % (expr, e)) from None
    results = [Tensor._make(b, d, s) for d, s, b in outs]
    if _grad_enabled and _bi.any(t.requires_grad for t in tensors):
        fn = _OpBackward(kind, callee, expr, metas, tensors, len(results))
        for i, r in enumerate(results):
            if _DTYPES[r._dt].is_floating_point:
                r.requires_grad, r.grad_fn, r._out = True, fn, i
        fn.save(args, results)
    return tuple(results) if multi else results[0]


def _unsupported(what):
    raise NotImplementedError("%s is not supported by Lowerscope's torch" % what)


class NotImplementedAttributeError(NotImplementedError, AttributeError):
    """An attribute this torch lacks (torch.linspace, Tensor.narrow): NotImplementedError naming it,
    and an AttributeError too, so hasattr() and getattr(obj, name, default) keep their meaning."""


def _missing_attribute(owner, name):
    if name.startswith("__"):
        raise AttributeError("%s has no attribute %r" % (owner, name))
    raise NotImplementedAttributeError("%s.%s is not supported by Lowerscope's torch" % (owner, name))


# ---- autograd -----------------------------------------------------------------------------------


class _Edge:
    """A non-leaf input of a backward node as it was when the op ran: an in-place op later gives the
    tensor object a new grad_fn, and the edge must keep pointing at the old one (PyTorch's next_edges)."""

    __slots__ = ("requires_grad", "grad_fn", "_out")

    def __init__(self, t):
        self.requires_grad, self.grad_fn, self._out = t.requires_grad, t.grad_fn, t._out


# Version counters and saved tensors, as PyTorch's autograd: every tensor has a version counter
# (a one-element list, shared by a view and its base as PyTorch's is shared by the storage's
# tensors) that each in-place op bumps; a backward node records the version of each tensor its
# formula saves (derivatives.yaml), and refuses to run once an in-place op changed one since. Our
# buffers are immutable, so the gradient would come out right from the old values: the check is
# there so that a script that PyTorch refuses is refused here too.

_BINOP_NAMES = {"+": "add", "-": "sub", "*": "mul", "/": "div", "**": "pow", "<": "lt", "<=": "le", ">": "gt",
                ">=": "ge", "==": "eq", "!=": "ne"}


def _op_name(kind, callee):
    """The aten name of the op that `callee` spells: mul for `*`, sin for torch.sin,
    log_softmax for torch.ops.aten.log_softmax.int."""
    if kind == "binop":
        return _BINOP_NAMES[callee]
    parts = callee.split(".")
    if len(parts) == 5 and parts[:2] == ["torch", "ops"]:
        return parts[3]
    return parts[-1]


# What each op's backward formula saves (tools/autograd/derivatives.yaml): (the argument positions
# that have a derivative formula, [(saved, the positions whose gradients need it)]), saved being an
# argument position or ("out", k). A saved value needed by one gradient only is saved only when that
# argument requires grad, where the op has several differentiable arguments (gen_variable_type's
# guard_for: so `y * 3` saves nothing of y, `y * w` saves y for w's gradient). Ops not listed save
# nothing: add, sub, neg, sum, mean, cat, views, clone, copies, dropout (a mul by its mask on CPU).
_SAVES = {
    "mul": ((0, 1), [(1, (0,)), (0, (1,))]),
    "div": ((0, 1), [(1, (0, 1)), (0, (1,))]),
    "sin": ((0,), [(0, (0,))]), "cos": ((0,), [(0, (0,))]), "log": ((0,), [(0, (0,))]),
    "abs": ((0,), [(0, (0,))]), "erf": ((0,), [(0, (0,))]),
    "exp": ((0,), [(("out", 0), (0,))]), "sqrt": ((0,), [(("out", 0), (0,))]),
    "rsqrt": ((0,), [(("out", 0), (0,))]), "tanh": ((0,), [(("out", 0), (0,))]),
    "sigmoid": ((0,), [(("out", 0), (0,))]), "relu": ((0,), [(("out", 0), (0,))]),
    "reciprocal": ((0,), [(("out", 0), (0,))]),
    "softmax": ((0,), [(("out", 0), (0,))]), "log_softmax": ((0,), [(("out", 0), (0,))]),
    "amax": ((0,), [(0, (0,)), (("out", 0), (0,))]),
    "addcmul": ((0, 1, 2), [(2, (1,)), (1, (2,))]),
    "addcdiv": ((0, 1, 2), [(1, (2,)), (2, (1, 2))]),
    "masked_fill": ((0, 2), [(1, (0, 2))]),
    "maximum": ((0, 1), [(0, (0, 1)), (1, (0, 1))]), "minimum": ((0, 1), [(0, (0, 1)), (1, (0, 1))]),
    "where": ((1, 2), [(0, (1, 2))]),
    "clamp": ((0,), [(0, (0,))]),
    "mm": ((0, 1), [(1, (0,)), (0, (1,))]), "bmm": ((0, 1), [(1, (0,)), (0, (1,))]),
    "linear": ((0, 1, 2), [(1, (0,)), (0, (1,))]),  # addmm(bias, input, weight.t())
    "conv2d": ((0, 1, 2), [(0, (0, 1, 2)), (1, (0, 1, 2))]),
    "gelu": ((0,), [(0, (0,))]), "leaky_relu": ((0,), [(0, (0,))]),
    "hardswish": ((0,), [(0, (0,))]), "hardsigmoid": ((0,), [(0, (0,))]),
    "max_pool2d": ((0,), [(0, (0,))]),
    "adaptive_avg_pool2d": ((0,), [(0, (0,))]),
    "batch_norm": ((0, 3, 4), [(0, (0, 3, 4)), (3, (0, 3, 4))]),
    "layer_norm": ((0, 2, 3), [(0, (0, 2, 3)), (2, (0, 2, 3)), (3, (0, 2, 3))]),
    "mse_loss": ((0, 1), [(0, (0, 1)), (1, (0, 1))]),
    "smooth_l1_loss": ((0, 1), [(0, (0, 1)), (1, (0, 1))]),
    "binary_cross_entropy_with_logits": ((0, 1, 2, 3), [(0, (0, 1)), (1, (0, 1)), (2, (0, 1)), (3, (0, 1))]),
    "nll_loss": ((0,), [(0, (0,)), (1, (0,)), (2, (0,))]),
    "cross_entropy_loss": ((0, 1), [(1, (0, 1)), (2, (0, 1))]),  # nll_loss's target and weight
    "scaled_dot_product_attention": ((0, 1, 2), [(0, (0, 1, 2)), (1, (0, 1, 2)), (2, (0, 1, 2)),
                                                 (("out", 0), (0, 1, 2))]),
}
# In-place variants whose formula differs from the out-of-place one's (leaky_relu_ saves its result).
_SAVES_INPLACE = {"leaky_relu": ((0,), [(("out", 0), (0,))])}


def _saves(kind, callee, args):
    name = _op_name(kind, callee)
    if name == "pow":
        if isinstance(args[1], Tensor):  # pow.Tensor_Tensor: both operands, and the result for the exponent's
            return name, ((0, 1), [(0, (0, 1)), (1, (0, 1)), (("out", 0), (1,))])
        return name, ((0,), [(0, (0,))])
    if name == "adaptive_avg_pool2d" and args[1] in (1, (1, 1), [1, 1]):
        return name, ((0,), [])  # a mean over the last two dimensions
    return name, _SAVES.get(name, ((), []))


_NODE_NAMES = {"contiguous": "CloneBackward0", "copy": "CopyBackwards", "slice_scatter": "CopySlices",
               "select_scatter": "CopySlices", "convert_element_type": "ToCopyBackward0", "reshape": "ViewBackward0",
               "flatten": "ViewBackward0", "squeeze": "SqueezeBackward1", "clamp": "ClampBackward1",
               "cross_entropy_loss": "NllLossBackward0", "dropout": "MulBackward0", "linear": "AddmmBackward0",
               "conv2d": "ConvolutionBackward0", "batch_norm": "NativeBatchNormBackward0",
               "layer_norm": "NativeLayerNormBackward0", "max_pool2d": "MaxPool2DWithIndicesBackward0",
               "adaptive_avg_pool2d": "AdaptiveAvgPool2DBackward0", "alias": "AliasBackward0"}


def _node_name(name, args):
    """The class name of PyTorch's backward node for the op (MulBackward0, SumBackward1, ...)."""
    if name in _NODE_NAMES:
        return _NODE_NAMES[name]
    overload = 0
    if name in ("sum", "mean") and len(args) > 1:
        overload = 1  # sum.dim_IntList, mean.dim
    elif name == "pow" and isinstance(args[1], Tensor):
        overload = 1  # pow.Tensor_Tensor
    return "".join(w.capitalize() for w in name.split("_")) + "Backward%d" % overload


_TENSOR_TYPES = {"f32": "torch.FloatTensor", "f64": "torch.DoubleTensor", "i64": "torch.LongTensor",
                 "i32": "torch.IntTensor", "u8": "torch.ByteTensor", "b8": "torch.BoolTensor"}

_ERR_BACKWARD_TWICE = ("Trying to backward through the graph a second time (or directly access saved tensors after "
                       "they have already been freed). Saved intermediate values of the graph are freed when you call "
                       ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
                       "graph a second time or if you need to access saved tensors after calling backward.")


class _Saved:
    """One tensor a backward node saved (PyTorch's SavedVariable): its version counter and the
    version it had. An input (arg: its position) is kept itself, and the error names the grad_fn it
    has by then; a result (arg None) is named as output k of the node that saved it."""

    __slots__ = ("vc", "version", "tensor", "arg", "slot", "is_leaf", "output_nr", "dt", "shape")

    def __init__(self, t, arg=None, output_nr=0, slot=None):
        self.vc, self.version, self.dt, self.shape = t._vc, t._vc[0], t._dt, t._shape
        self.arg, self.output_nr, self.slot = arg, output_nr, slot
        self.tensor = t if arg is not None else None
        self.is_leaf = arg is not None and t.grad_fn is None

    def check(self, saved_for):
        if self.vc[0] == self.version:
            return
        grad_fn = self.tensor.grad_fn if self.tensor is not None else None
        if grad_fn is None and not self.is_leaf:
            grad_fn = saved_for
        what = "[%s [%s]]" % (_TENSOR_TYPES.get(self.dt, self.dt), ", ".join(_bi.str(d) for d in self.shape))
        if grad_fn is not None:
            what += ", which is output %d of %s," % (self.output_nr, grad_fn.name())
        raise RuntimeError("one of the variables needed for gradient computation has been modified by an inplace "
                           "operation: %s is at version %d; expected version %d instead. Hint: enable anomaly "
                           "detection to find the operation that failed to compute its gradient, with "
                           "torch.autograd.set_detect_anomaly(True)." % (what, self.vc[0], self.version))


class _OpBackward:
    """The backward of one eager op: its one-op graph differentiated by the core."""

    def __init__(self, kind, callee, expr, metas, inputs, nout):
        self.kind, self.callee, self.expr, self.metas, self.nout = kind, callee, expr, metas, nout
        # A leaf that requires grad by itself (its .grad is filled); every other input as it is now,
        # since a later in-place op may give the tensor object a new grad_fn (or one at all).
        self.inputs = [t if t.grad_fn is None and t.requires_grad else _Edge(t) for t in inputs]
        self.bufs = [t._buf for t in inputs]
        self.saved, self.saves_any, self.freed = [], False, False
        self.op = self._name = self.self_arg = None
        self.tensors = inputs  # until save() has looked the saved ones up

    def save(self, args, results):
        """Records what the op's formula saves (_SAVES), at the versions they have now."""
        self.op, (diff, rules) = _saves(self.kind, self.callee, args)
        self._name = _node_name(self.op, args)
        self.self_arg = args[0] if args and isinstance(args[0], Tensor) else None
        for what, needed_by in rules:
            if len(diff) > 1 and len(needed_by) == 1:  # guarded: saved only for a gradient that is wanted
                a = args[needed_by[0]] if needed_by[0] < len(args) else None
                if not (isinstance(a, Tensor) and a.requires_grad):
                    continue
            if isinstance(what, tuple):
                self.saved.append(_Saved(results[what[1]], output_nr=what[1]))
                self.saves_any = True
                continue
            a = args[what] if what < len(args) else None
            if isinstance(a, Tensor):
                slot = next(i for i, b in enumerate(self.tensors) if b is a)
                self.saved.append(_Saved(a, arg=what, slot=slot))
                self.saves_any = True
            elif isinstance(a, (_bi.int, _bi.float)) and not isinstance(a, _bi.bool):
                self.saves_any = True  # a wrapped number (w * 2 saves the 2): freed by backward all the same
        self.tensors = None

    def became_inplace(self, target):
        """This op computed the new value of an in-place op on target (its argument 0), and target's
        version was just bumped. PyTorch's in-place op saves a copy of self, which nothing modifies,
        and its result is target itself, at the version after the op."""
        if self.self_arg is not target:
            return
        self.self_arg = None
        if self.op in _SAVES_INPLACE:
            self.saved = [_Saved(target, output_nr=0) for _ in _SAVES_INPLACE[self.op][1]] + \
                [s for s in self.saved if s.arg is not None]
            self.saves_any = True
        for s in self.saved:
            if s.arg is None:
                s.vc, s.version = target._vc, target._vc[0]
        self.saved = [s for s in self.saved if s.arg != 0]

    def name(self):
        return self._name or self.callee.split(".")[-1].capitalize() + "Backward0"

    def __repr__(self):
        return "<%s>" % self.name()

    def apply(self, grads, retain_graph=False):
        if self.freed:
            raise RuntimeError(_ERR_BACKWARD_TWICE)
        bufs = list(self.bufs)
        for s in self.saved:
            s.check(self)
            if s.tensor is not None and s.tensor._buf is not None and s.tensor._shape == s.shape:
                # The saved tensor itself, as PyTorch's: at the same version it can differ only by a
                # write through .data, which PyTorch's backward sees too.
                bufs[s.slot] = s.tensor._buf
        out = _ls.vjp(self.expr, self.metas, bufs, [g._buf if g is not None else None for g in grads])
        if not retain_graph and self.saves_any:  # PyTorch frees what was saved (release_variables)
            self.freed = True
        return [None if b is None else Tensor._make(b, m[0], m[1]) for b, m in zip(out, self.metas)]


def _accumulate(a, b):
    if a is None:
        return b
    with no_grad():
        return a + b


def _run_backward(roots, grads, retain_graph=False):
    """Reverse-mode over the recorded grad_fn graph, in an order where every node's output grads
    are complete before it runs."""
    deps, seen, stack = {}, set(), []
    for r in roots:
        if r.grad_fn is not None and id(r.grad_fn) not in seen:
            seen.add(id(r.grad_fn))
            stack.append(r.grad_fn)
    fns = {}
    while stack:
        fn = stack.pop()
        fns[id(fn)] = fn
        for t in fn.inputs:
            if t.requires_grad and t.grad_fn is not None:
                deps[id(t.grad_fn)] = deps.get(id(t.grad_fn), 0) + 1
                if id(t.grad_fn) not in seen:
                    seen.add(id(t.grad_fn))
                    stack.append(t.grad_fn)
    pending = {}
    with no_grad():
        for r, g in zip(roots, grads):
            if r.grad_fn is None:
                if r.requires_grad:
                    r.grad = _accumulate(r.grad, g)
                continue
            slot = pending.setdefault(id(r.grad_fn), [None] * r.grad_fn.nout)
            slot[r._out] = _accumulate(slot[r._out], g)
        ready = [fns[k] for k in fns if deps.get(k, 0) == 0]
        while ready:
            fn = ready.pop()
            outs = fn.apply(pending.pop(id(fn), [None] * fn.nout), retain_graph)
            for t, g in zip(fn.inputs, outs):
                if not t.requires_grad:
                    continue
                if t.grad_fn is None:
                    if g is not None:
                        t.grad = _accumulate(t.grad, g)
                    continue
                if g is not None:
                    slot = pending.setdefault(id(t.grad_fn), [None] * t.grad_fn.nout)
                    slot[t._out] = _accumulate(slot[t._out], g)
                deps[id(t.grad_fn)] -= 1
                if deps[id(t.grad_fn)] == 0:
                    ready.append(t.grad_fn)


# ---- tensors ------------------------------------------------------------------------------------

class Tensor:
    __slots__ = ("_buf", "_dt", "_shape", "_node", "_graph", "requires_grad", "grad", "grad_fn", "_out", "_view", "_views", "_st",
                 "_vc", "__weakref__")

    def __init__(self, *args, **kwargs):
        _unsupported("torch.Tensor(...) (use torch.tensor or torch.zeros)")

    @staticmethod
    def _make(buf, dt, shape, cls=None):
        t = object.__new__(cls or Tensor)
        t._buf, t._dt, t._shape = buf, dt, tuple(shape)
        t._node = t._graph = None
        t.requires_grad, t.grad, t.grad_fn, t._out = False, None, None, 0
        t._view = t._views = t._st = None
        t._vc = [0]  # the version counter: a view shares its base's (_link)
        return t

    def _value(self, reason="Tensor value needed"):
        """The buffer, computing a captured tensor's graph first (a graph break)."""
        if self._buf is None:
            if _dynamo._active is None:
                raise RuntimeError("this tensor belongs to a captured graph that failed to compile")
            _dynamo._active.graph_break_for(self, reason)
        return self._buf

    # metadata
    @property
    def shape(self):
        return Size(self._shape)

    def size(self, dim=None):
        return Size(self._shape) if dim is None else self._shape[dim]

    @property
    def dtype(self):
        return _DTYPES[self._dt]

    @property
    def device(self):
        return device("cpu")

    @property
    def ndim(self):
        return len(self._shape)

    def dim(self):
        return len(self._shape)

    def numel(self):
        return Size(self._shape).numel()

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    @property
    def is_leaf(self):
        return self.grad_fn is None

    @property
    def _version(self):
        """How many in-place ops changed this tensor's memory (through it or any view of it)."""
        return self._vc[0]

    @property
    def data(self):
        d = _view_op(self, "alias", ())
        d._vc = [0]  # .data's in-place ops are hidden from autograd: a version counter of its own
        return d

    @data.setter
    def data(self, other):
        with no_grad():
            self._set(other, bump=False)

    def is_floating_point(self):
        return self.dtype.is_floating_point

    def _assign(self, other, autograd=True):
        """This tensor object now holds other's value (under capture: other's node). autograd=False:
        only the value (a write through detach() or .data, which autograd does not see)."""
        if autograd and _grad_enabled and self.grad_fn is None and self.requires_grad and self._view is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        self._buf, self._dt, self._shape = other._buf, other._dt, other._shape
        self._node, self._graph = other._node, other._graph
        if other._graph is not None:
            other._graph.produced.append((other._node, _weakref.ref(self)))
        if not autograd:
            return self
        if other.grad_fn is not None:  # an in-place op recorded for autograd
            self.requires_grad, self.grad_fn, self._out = True, other.grad_fn, other._out
        elif _grad_enabled and self.grad_fn is not None and not other.requires_grad:
            # A value that depends on nothing (y[1] = 0 on a y that required grad): no gradient flows
            # through it, and the base it is scattered into takes the gradient of its other elements.
            self.requires_grad, self.grad_fn, self._out = False, None, 0
        return self

    def _set(self, other, computed=False, bump=True):
        """In-place update. Buffers are immutable, so aliasing is kept by hand: a view's new value is
        scattered into its base (slice_scatter, select_scatter, the inverse permutation, ...), up to
        the root, and every live view of the root is then derived again from its new value. The
        version counter (shared with the base and views) goes up by one. computed: other is the
        result of the in-place op's out-of-place twin on self (x.mul_(y): x * y), whose saved values
        then follow PyTorch's in-place op (_OpBackward.became_inplace)."""
        if _overlaps(self):
            raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                               "single memory location. Please clone() the tensor before performing the operation.")
        v = self._view[0] if self._view is not None else None
        while v is not None:
            if _overlaps(v):  # x.expand(3, 4)[0].add_(1) writes x's row, seen by all rows: not modelled
                _unsupported("an in-place write into part of an expanded tensor")
            v = v._view[0] if v._view is not None else None
        if _grad_enabled and self.requires_grad and self.grad_fn is not None and not other.requires_grad:
            # y.zero_(), y[1] = 0 on a y that requires grad: y still does, with a zero gradient
            # through what was overwritten (aten.copy's derivative), as PyTorch's in-place ops.
            other = _op("call", "torch.ops.aten.copy.default", "copy", [self, other])
        self._assign(other)
        if bump:
            self._vc[0] += 1
            if computed and isinstance(other.grad_fn, _OpBackward) and other._out == 0:
                other.grad_fn.became_inplace(self)
        root = self
        while root._view is not None:
            base, kind, args = root._view
            base._assign(_scatter(base, root, kind, args), autograd=kind != "alias" or root.requires_grad)
            root = base
        root._refresh_views()
        return self

    def _refresh_views(self):
        if not self._views:
            return
        alive = []
        for w in self._views:
            v = w()
            if v is None or v._view is None or v._view[0] is not self:
                continue
            v._assign(_derive(self, v._view[1], v._view[2], refresh=True))
            v._refresh_views()
            alive.append(w)
        self._views = alive

    # values
    def item(self):
        if self.numel() != 1:
            raise RuntimeError("a Tensor with %d elements cannot be converted to Scalar" % self.numel())
        frame = _dynamo._active if self._buf is None else None
        if frame is not None and (frame.fullgraph or _dynamo.config.capture_scalar_outputs) and self._dt != "b8":
            # Dynamo captures it (fullgraph=True turns capture_scalar_outputs on): no break.
            return _dynamo.ItemScalar(self if not self._shape else self.sum())
        return _ls.tolist(self._value("Tensor.item() with capture_scalar_outputs=False"))[0]

    def tolist(self):
        flat = _ls.tolist(self._value("Tensor.tolist()"))

        def nest(off, dims):
            if not dims:
                return flat[off], off + 1
            out = []
            for _ in range(dims[0]):
                v, off = nest(off, dims[1:])
                out.append(v)
            return out, off

        return nest(0, list(self._shape))[0]

    def numpy(self):
        _unsupported("Tensor.numpy() (there is no NumPy in the app's Python)")

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        frame = _dynamo._active if self._buf is None else None
        v = _bi.bool(_ls.tolist(self._value("generic_jump TensorVariable()"))[0])
        if frame is not None:
            frame.site += ":%s" % v
        return v

    def __float__(self):
        return _bi.float(self.item())

    def __int__(self):
        return _bi.int(self.item())

    def __index__(self):
        if self._dt not in ("i64", "i32", "u8", "b8"):
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return _bi.int(self.item())

    def __format__(self, spec):
        if spec and self.numel() == 1:
            return format(self.item(), spec)
        return format(_bi.str(self), spec)

    def __repr__(self):
        self._value("str() of a Tensor (printing)")
        return _format_tensor(self)

    __str__ = __repr__
    __hash__ = object.__hash__

    # autograd
    def requires_grad_(self, requires_grad=True):
        if not self.dtype.is_floating_point and requires_grad:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self.requires_grad = requires_grad
        return self

    def detach(self):
        return _view_op(self, "alias", ())

    def backward(self, gradient=None, retain_graph=None):
        self._value("Tensor.backward()")
        if not self.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        if gradient is None:
            if self.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            gradient = ones_like(self)
        _run_backward([self], [gradient], _bi.bool(retain_graph))

    def retain_grad(self):
        _unsupported("Tensor.retain_grad()")

    # conversions
    def to(self, *args, **kwargs):
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, Tensor):
                a = a.dtype
            if isinstance(a, dtype) and a.short != self._dt:
                return _op("call", "torch.ops.prims.convert_element_type.default", "convert_element_type", [self, a])
        return self

    def cpu(self):
        return self

    def cuda(self, *a, **k):
        return self

    def float(self):
        return self.to(float32)

    def double(self):
        return self.to(float64)

    def long(self):
        return self.to(int64)

    def int(self):
        return self.to(int32)

    def bool(self):
        return self.to(_bool_dtype)

    def type_as(self, other):
        return self.to(other.dtype)

    def clone(self):
        return _op("method", "contiguous", "clone", [self]) if self.requires_grad else Tensor._make(self._value(), self._dt, self._shape)

    # in-place (functional underneath: the tensor object takes the new value)
    def zero_(self):
        return self._set(zeros(self._shape, dtype=self.dtype))

    def fill_(self, v):
        if isinstance(v, Tensor):
            return self.copy_(v)
        return self._set(full(self._shape, v, dtype=self.dtype))

    def copy_(self, src, non_blocking=False):
        if not isinstance(src, Tensor):
            raise TypeError("copy_(): argument 'src' must be Tensor, not %s" % type(src).__name__)
        if src._dt != self._dt:
            src = src.to(self.dtype)
        # An op, not src itself, where the copy must carry a gradient back to a leaf src.
        if tuple(src._shape) != self._shape or (_grad_enabled and src.requires_grad and src.grad_fn is None):
            src = src.expand(*self._shape)
        return self._set(src)

    def clamp_(self, min=None, max=None):
        return self._set(self.clamp(min, max), computed=True)

    def pow_(self, e):
        return self._set(self ** e, computed=True)

    def addcmul_(self, tensor1, tensor2, value=1):
        return self._set(self.addcmul(tensor1, tensor2, value=value), computed=True)

    def addcdiv_(self, tensor1, tensor2, value=1):
        return self._set(self.addcdiv(tensor1, tensor2, value=value), computed=True)

    def lerp_(self, end, weight):
        return self._set(self.lerp(end, weight), computed=True)

    def masked_fill_(self, mask, value):
        return self._set(self.masked_fill(mask, value), computed=True)

    def add_(self, other, alpha=1):
        return self._set(self + (other * alpha if alpha != 1 else other), computed=True)

    def sub_(self, other, alpha=1):
        return self._set(self - (other * alpha if alpha != 1 else other), computed=True)

    def mul_(self, other):
        return self._set(self * other, computed=True)

    def div_(self, other):
        return self._set(self / other, computed=True)

    def __iadd__(self, other):
        return self.add_(other)

    def __isub__(self, other):
        return self.sub_(other)

    def __imul__(self, other):
        return self.mul_(other)

    def __itruediv__(self, other):
        return self.div_(other)

    # operators
    # __add__, __lt__, ...: the binary operators, generated below the class.
    def __radd__(self, o):
        return _op("binop", "+", "add", [o, self])

    def __rsub__(self, o):
        return -self + o

    def __rmul__(self, o):
        return _op("binop", "*", "mul", [o, self])

    def __rtruediv__(self, o):
        return reciprocal(self) * o

    def __neg__(self):
        return _op("neg", "neg", "neg", [self])

    def __abs__(self):
        return abs(self)

    def __matmul__(self, o):
        return matmul(self, o)

    def __getitem__(self, idx):
        return _index(self, idx)

    def __setitem__(self, idx, value):
        v = _index(self, idx)
        if not isinstance(value, Tensor):
            value = full(v._shape, value, dtype=v.dtype)
        v.copy_(value)

    def __iter__(self):
        return iter([self[i] for i in range(len(self))])

    # methods
    def sum(self, dim=None, keepdim=False, dtype=None):
        if dim is None:
            return _op("method", "sum", "sum", [self])
        return _op("method", "sum", "sum", [self, dim] + ([keepdim] if keepdim else []))

    def mean(self, dim=None, keepdim=False):
        if dim is None:
            return _op("call", "torch.ops.aten.mean.default", "mean", [self])
        return _op("method", "mean", "mean", [self, dim] + ([keepdim] if keepdim else []))

    def amax(self, dim=(), keepdim=False):
        return _op("call", "torch.ops.aten.amax.default", "amax", [self, list(_dims(dim)), keepdim])

    def view(self, *shape):
        return _view_op(self, "view", _sizes(shape))

    def reshape(self, *shape):
        return _view_op(self, "reshape", _sizes(shape))

    def permute(self, *dims):
        return _view_op(self, "permute", _sizes(dims))

    def transpose(self, d0, d1):
        return _view_op(self, "transpose", [d0, d1])

    @property
    def T(self):
        return self.t()

    def t(self):
        return _view_op(self, "t", [])

    def contiguous(self, memory_format=None):
        if self.is_contiguous():
            return self  # PyTorch returns the tensor itself
        return _op("method", "contiguous", "contiguous", [self])

    def is_contiguous(self, memory_format=None):
        return _is_contiguous(self._shape, _strides(self))

    def stride(self, dim=None):
        st = _strides(self)
        return st if dim is None else st[dim]

    def split(self, size, dim=0):
        outs = _op("method", "split", "split", [self, size], {"dim": dim}, multi=True)
        d, start = dim % self.dim(), 0
        for o in outs:  # views of self, as PyTorch's
            _link(self, o, "slice", (d, start, start + o._shape[d], 1))
            start += o._shape[d]
        return outs

    def chunk(self, chunks, dim=0):
        return self.split(-(-self._shape[dim] // chunks), dim)

    def unsqueeze(self, dim):
        return _view_op(self, "unsqueeze", [dim])

    def squeeze(self, dim):
        return _view_op(self, "squeeze", [dim])

    def flatten(self, start_dim=0, end_dim=-1):
        return _view_op(self, "flatten", [start_dim, end_dim])

    def expand(self, *sizes):
        sizes = _sizes(sizes)
        return _view_op(self, "expand", [list(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], list) else sizes])

    def expand_as(self, other):
        return self.expand(*other._shape)

    def softmax(self, dim):
        return _op("method", "softmax", "softmax", [self, dim])

    def pow(self, e):
        return self ** e

    def add(self, o, alpha=1):
        return self + (o * alpha if alpha != 1 else o)

    def sub(self, o, alpha=1):
        return self - (o * alpha if alpha != 1 else o)

    def mul(self, o):
        return self * o

    def div(self, o):
        return self / o

    def clamp(self, min=None, max=None):
        return clamp(self, min, max)

    def addcmul(self, tensor1, tensor2, value=1):
        return _op("call", "torch.ops.aten.addcmul.default", "addcmul", [self, tensor1, tensor2], {"value": value})

    def addcdiv(self, tensor1, tensor2, value=1):
        return _op("call", "torch.ops.aten.addcdiv.default", "addcdiv", [self, tensor1, tensor2], {"value": value})

    def lerp(self, end, weight):
        # aten's lerp: start + weight * (end - start) for weight < 0.5, else end - (end - start) * (1 - weight).
        if isinstance(weight, Tensor):
            _unsupported("Tensor.lerp with a tensor weight")
        return self + (end - self) * weight if _bi.abs(weight) < 0.5 else end - (end - self) * (1 - weight)

    def masked_fill(self, mask, value):
        if isinstance(value, Tensor):
            return _op("call", "torch.ops.aten.masked_fill.Tensor", "masked_fill", [self, mask, value])
        return _op("call", "torch.ops.aten.masked_fill.Scalar", "masked_fill", [self, mask, value])

    def __getattr__(self, name):
        _missing_attribute("torch.Tensor", name)

    def max(self, dim=None, keepdim=False):
        if dim is None:
            return self.amax()
        _unsupported("Tensor.max(dim) (values and indices)")


for _name, _sym in (("add", "+"), ("sub", "-"), ("mul", "*"), ("truediv", "/"), ("pow", "**"), ("lt", "<"),
                   ("le", "<="), ("gt", ">"), ("ge", ">="), ("eq", "=="), ("ne", "!=")):
    def _binary(self, o, _n=_name, _s=_sym):
        return _op("binop", _s, _n, [self, o])

    setattr(Tensor, "__%s__" % _name, _binary)


def _sizes(args):
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return [list(args[0])]
    return list(args)


def _dims(dim):
    return dim if isinstance(dim, (list, tuple)) else (dim,)


for _name in ("sin", "cos", "exp", "log", "neg", "abs", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "reciprocal", "erf"):
    def _method(self, _n=_name):
        return _op("method", _n, _n, [self])

    setattr(Tensor, _name, _method)

    def _inplace(self, _n=_name):
        return self._set(getattr(self, _n)(), computed=True)

    setattr(Tensor, _name + "_", _inplace)


def _format_tensor(t):
    vals = _ls.tolist(t._buf)
    fl = _DTYPES[t._dt].is_floating_point

    def one(v):
        if t._dt == "b8":
            return repr(_bi.bool(v))
        return ("%.4f" % v) if fl else repr(_bi.int(v))

    def rows(off, dims, depth):
        if not dims:
            return one(vals[off])
        n = dims[0]
        step = 1
        for d in dims[1:]:
            step *= d
        items = range(n)
        if len(vals) > 1000 and n > 6:
            items = list(range(3)) + [None] + list(range(n - 3, n))
        parts = ["..." if i is None else rows(off + i * step, dims[1:], depth + 1) for i in items]
        sep = ", " if len(dims) == 1 else ",\n" + " " * (depth + 8)
        return "[" + sep.join(parts) + "]"

    body = rows(0, list(t._shape), 0)
    extra = ""
    if t._dt not in ("f32", "i64", "b8"):
        extra += ", dtype=%r" % t.dtype
    if t.grad_fn is not None:
        extra += ", grad_fn=%r" % t.grad_fn
    elif t.requires_grad:
        extra += ", requires_grad=True"
    return "tensor(%s%s)" % (body, extra)


# ---- creation -----------------------------------------------------------------------------------


def _shape_args(size):
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = size[0]
    return tuple(_bi.int(s) for s in size)


def _new(buf, dt, shape, requires_grad=False):
    t = Tensor._make(buf, dt, shape)
    if requires_grad:
        t.requires_grad_(True)
    return t


# Views (_view_op, _index, strides, the scatter back into a base), the torch namespace's functions
# (creation, math, torch.compile) and the dtype aliases are in torch/_functions.py, which runs in
# this module's namespace right after this file (the runner loads the two as one module:
# script/python_host.cpp).
