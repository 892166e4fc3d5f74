"""torch.nn: Module with parameters, buffers and state_dict, and the layers the fixtures use."""
import collections as _collections
import math as _math

import torch
from torch.nn import functional  # noqa: F401
from torch.nn import functional as F


class Parameter(torch.Tensor):
    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        data = torch.zeros(0) if data is None else data
        p = torch.Tensor._make(data._value(), data._dt, data._shape, cls)
        p.requires_grad, p._vc = requires_grad, data._vc  # data.detach()'s: the same version counter
        return p

    def __init__(self, *a, **k):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + torch.Tensor.__repr__(self)


class Module:
    def __init__(self, *args, **kwargs):
        object.__setattr__(self, "_parameters", _collections.OrderedDict())
        object.__setattr__(self, "_buffers", _collections.OrderedDict())
        object.__setattr__(self, "_modules", _collections.OrderedDict())
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign before Module.__init__() call")
        for d in (self._parameters, self._buffers, self._modules):
            d.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        elif name in self.__dict__.get("_buffer_names", ()):
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            if key in d and name in d[key]:
                return d[key][name]
        raise AttributeError("'%s' object has no attribute '%s'" % (type(self).__name__, name))

    def register_buffer(self, name, tensor, persistent=True):
        self.__dict__.setdefault("_buffer_names", set()).add(name)
        self._buffers[name] = tensor

    def register_parameter(self, name, param):
        self._parameters[name] = param

    def add_module(self, name, module):
        self._modules[name] = module

    def forward(self, *args, **kwargs):
        raise NotImplementedError("%s.forward() is not defined" % type(self).__name__)

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def named_modules(self, memo=None, prefix=""):
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, prefix + ("." if prefix else "") + name)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        yield from self._modules.items()

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named(self, attr, prefix="", recurse=True):
        seen = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mp, m in mods:
            for n, v in getattr(m, attr).items():
                if v is None or id(v) in seen:
                    continue
                seen.add(id(v))
                yield (mp + "." if mp else "") + n, v

    def named_parameters(self, prefix="", recurse=True):
        yield from self._named("_parameters", prefix, recurse)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True):
        yield from self._named("_buffers", prefix, recurse)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def train(self, mode=True):
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad.zero_()

    def to(self, *args, **kwargs):
        return self

    def cuda(self, *a, **k):
        return self

    def cpu(self):
        return self

    def state_dict(self):
        sd = _collections.OrderedDict()
        for n, p in self.named_parameters():
            sd[n] = p.detach()
        for n, b in self.named_buffers():
            sd[n] = b
        return sd

    def load_state_dict(self, state_dict, strict=True):
        own = dict(self.named_parameters())
        own.update(dict(self.named_buffers()))
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            raise RuntimeError("Error(s) in loading state_dict for %s: missing keys %s, unexpected keys %s"
                               % (type(self).__name__, missing, unexpected))
        for k, t in own.items():
            if k in state_dict:
                v = state_dict[k]
                if tuple(v._shape) != tuple(t._shape):
                    raise RuntimeError("size mismatch for %s: copying a param with shape %s, the shape in current "
                                       "model is %s" % (k, v.shape, t.shape))
                t._buf, t._dt = v._value(), v._dt
                t._vc[0] += 1  # param.copy_(input_param), under no_grad
        return _collections.namedtuple("IncompatibleKeys", "missing_keys unexpected_keys")(missing, unexpected)

    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = []
        for name, m in self._modules.items():
            sub = repr(m).replace("\n", "\n  ")
            lines.append("(%s): %s" % (name, sub))
        head = type(self).__name__ + "(" + self.extra_repr()
        if not lines:
            return head + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"


def _initialized(t):
    """t as a module's reset_parameters() leaves it: PyTorch fills it in place (init.uniform_,
    init.ones_, running_mean.zero_(), ...), which is one version."""
    if t is not None:
        t._vc[0] += 1
    return t


def _uniform_param(shape, bound):
    return _initialized(Parameter(torch._uniform(shape, -bound, bound)))


class Linear(Module):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        bound = 1 / _math.sqrt(in_features) if in_features else 0
        self.weight = _uniform_param((out_features, in_features), bound)
        self.bias = _uniform_param((out_features,), bound) if bias else None

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return "in_features=%d, out_features=%d, bias=%s" % (self.in_features, self.out_features, self.bias is not None)


class Conv2d(Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        k = F._pair(kernel_size)
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, k
        self.stride, self.padding, self.dilation, self.groups = F._pair(stride), F._pair(padding), F._pair(dilation), groups
        if padding_mode != "zeros" or isinstance(padding, str):
            torch._unsupported("Conv2d(padding=%r, padding_mode=%r)" % (padding, padding_mode))
        bound = 1 / _math.sqrt(in_channels // groups * k[0] * k[1])
        self.weight = _uniform_param((out_channels, in_channels // groups, k[0], k[1]), bound)
        self.bias = _uniform_param((out_channels,), bound) if bias else None

    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self):
        return "%d, %d, kernel_size=%s, stride=%s" % (self.in_channels, self.out_channels, self.kernel_size, self.stride)


class _BatchNorm(Module):
    """torch/nn/modules/batchnorm.py: in training the batch's statistics normalize and the running
    ones move towards them (F.batch_norm does it in place), num_batches_tracked counts the batches,
    and momentum=None makes the running statistics a cumulative average (factor 1 / batches)."""

    def __init__(self, num_features, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.weight = _initialized(Parameter(torch.ones(num_features))) if affine else None
        self.bias = _initialized(Parameter(torch.zeros(num_features))) if affine else None
        if track_running_stats:
            self.register_buffer("running_mean", _initialized(torch.zeros(num_features)))
            self.register_buffer("running_var", _initialized(torch.ones(num_features)))
            self.register_buffer("num_batches_tracked", _initialized(torch.tensor(0, dtype=torch.long)))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if keep else None, self.running_var if keep else None,
                            self.weight, self.bias, bn_training, factor, self.eps)

    def extra_repr(self):
        return "%d, eps=%g, momentum=%s, affine=%s, track_running_stats=%s" % (
            self.num_features, self.eps, self.momentum, self.affine, self.track_running_stats)


class BatchNorm1d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() not in (2, 3):
            raise ValueError("expected 2D or 3D input (got %dD input)" % input.dim())


class BatchNorm2d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError("expected 4D input (got %dD input)" % input.dim())


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-05, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.weight = _initialized(Parameter(torch.ones(*shape))) if elementwise_affine else None
        self.bias = _initialized(Parameter(torch.zeros(*shape))) if elementwise_affine and bias else None

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return "%s, eps=%g" % (self.normalized_shape, self.eps)


class MaxPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride, self.padding, self.dilation = kernel_size, stride or kernel_size, padding, dilation
        self.ceil_mode = ceil_mode
        if return_indices:
            torch._unsupported("MaxPool2d(return_indices=True)")

    def forward(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)

    def extra_repr(self):
        return "kernel_size=%s, stride=%s" % (self.kernel_size, self.stride)


class AdaptiveAvgPool2d(Module):
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        return F.adaptive_avg_pool2d(x, self.output_size)


def _activation(name, fn):
    class Act(Module):
        def __init__(self, *args, **kwargs):
            super().__init__()

        def forward(self, x):
            return fn(x)

    Act.__name__ = Act.__qualname__ = name
    return Act


class _InplaceActivation(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return self._fn(x, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class ReLU(_InplaceActivation):
    _fn = staticmethod(F.relu)


class Hardswish(_InplaceActivation):
    _fn = staticmethod(F.hardswish)


class Hardsigmoid(_InplaceActivation):
    _fn = staticmethod(F.hardsigmoid)


GELU = _activation("GELU", F.gelu)
Sigmoid = _activation("Sigmoid", torch.sigmoid)
Tanh = _activation("Tanh", torch.tanh)
Identity = _activation("Identity", lambda x: x)


class LeakyReLU(Module):
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, x):
        return F.leaky_relu(x, self.negative_slope, self.inplace)


class Dropout(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError("dropout probability has to be between 0 and 1, but got %s" % p)
        self.p, self.inplace = p, inplace

    def forward(self, x):
        return F.dropout(x, self.p, self.training, self.inplace)


class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return torch.flatten(x, self.start_dim, self.end_dim)


class Softmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.softmax(x, self.dim)


class MSELoss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        self.reduction = ["none", "mean", "sum"][F._reduction(reduction, size_average, reduce)]

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(L1Loss):
    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(Module):
    def __init__(self, reduction="mean", delta=1.0):
        super().__init__()
        self.reduction, self.delta = reduction, delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class _WeightedLoss(Module):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = ["none", "mean", "sum"][F._reduction(reduction, size_average, reduce)]
        self.reduction = reduction
        if weight is not None:
            self.register_buffer("weight", weight)
        else:
            object.__setattr__(self, "weight", None)


class CrossEntropyLoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                 label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class BCELoss(_WeightedLoss):
    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
        super().__init__(weight, size_average, reduce, reduction)
        if pos_weight is not None:
            self.register_buffer("pos_weight", pos_weight)
        else:
            object.__setattr__(self, "pos_weight", None)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class LogSoftmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.log_softmax(x, self.dim)


class _Container(Module):
    """Submodules by position."""

    def __getitem__(self, i):
        return list(self._modules.values())[i]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


class Sequential(_Container):
    def __init__(self, *mods):
        super().__init__()
        if len(mods) == 1 and isinstance(mods[0], _collections.OrderedDict):
            mods = list(mods[0].items())
        else:
            mods = [(str(i), m) for i, m in enumerate(mods)]
        for name, m in mods:
            self._modules[name] = m

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x


class ModuleList(_Container):
    def __init__(self, mods=()):
        super().__init__()
        for m in mods:
            self.append(m)

    def append(self, m):
        self._modules[str(len(self._modules))] = m
        return self


def _missing(name):
    class Missing(Module):
        def __init__(self, *a, **k):
            torch._unsupported("torch.nn." + name)

    Missing.__name__ = name
    return Missing


for _n in ("Embedding", "LSTM", "GRU", "Conv1d", "MultiheadAttention", "AvgPool2d", "SiLU"):
    globals()[_n] = _missing(_n)


def __getattr__(name):
    torch._missing_attribute("torch.nn", name)
