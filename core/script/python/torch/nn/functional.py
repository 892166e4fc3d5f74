"""torch.nn.functional: each function records the call Dynamo's graphs show for it."""
import torch
from torch import _op


def _pair(v):
    return tuple(v) if isinstance(v, (list, tuple)) else (v, v)


def _inplace(input, out, inplace):
    """inplace=True: input takes the result (and its views see it), as PyTorch's."""
    return input._set(out, computed=True) if inplace else out


def relu(input, inplace=False):
    return _inplace(input, _op("call", "torch.nn.functional.relu", "relu", [input]), inplace)


def gelu(input, approximate="none"):
    kw = {"approximate": approximate} if approximate != "none" else None
    return _op("call", "torch._C._nn.gelu", "gelu", [input], kw)


def sigmoid(input):
    return torch.sigmoid(input)


def tanh(input):
    return torch.tanh(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _inplace(input, _op("call", "torch.nn.functional.leaky_relu", "leaky_relu", [input, negative_slope]), inplace)


def hardswish(input, inplace=False):
    return _inplace(input, _op("call", "torch.nn.functional.hardswish", "hardswish", [input]), inplace)


def hardsigmoid(input, inplace=False):
    return _inplace(input, _op("call", "torch.nn.functional.hardsigmoid", "hardsigmoid", [input]), inplace)


def linear(input, weight, bias=None):
    return _op("call", "torch._C._nn.linear", "linear", [input, weight, bias])


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return torch.conv2d(input, weight, bias, stride, padding, dilation, groups)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    if return_indices:
        torch._unsupported("max_pool2d(return_indices=True)")
    return _op("call", "torch.nn.functional.max_pool2d", "max_pool2d",
               [input, kernel_size, stride if stride is not None else kernel_size, padding, dilation],
               {"ceil_mode": ceil_mode, "return_indices": False})


def adaptive_avg_pool2d(input, output_size):
    return _op("call", "torch.nn.functional.adaptive_avg_pool2d", "adaptive_avg_pool2d", [input, output_size])


def _verify_batch_size(size):
    n = size[0]
    for d in size[2:]:
        n *= d
    if n == 1:
        raise ValueError("Expected more than 1 value per channel when training, got input size %s" % (size,))


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05):
    """Training normalizes by the batch's statistics and, as aten's batch_norm, moves the running
    statistics in place towards them: running = (1 - momentum) * running + momentum * batch, the
    variance unbiased (n / (n - 1)). Evaluation normalizes by the running statistics. As aten's
    kernel, the update leaves the statistics' _version as it was."""
    if training:
        _verify_batch_size(input.shape)
    elif running_mean is None or running_var is None:
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    if training and (running_mean is not None or running_var is not None):
        dims = [0] + list(range(2, input.dim()))
        n = input.numel() // input.shape[1]
        shape = [1, input.shape[1]] + [1] * (input.dim() - 2)
        with torch.no_grad():
            mean = input.mean(dims)
            if running_mean is not None:
                running_mean._set(mean * momentum + running_mean * (1 - momentum), bump=False)
            if running_var is not None:
                var = ((input - mean.view(shape)) ** 2).sum(dims) / (n - 1)
                running_var._set(var * momentum + running_var * (1 - momentum), bump=False)
    return _op("call", "torch.nn.functional.batch_norm", "batch_norm",
               [input, running_mean, running_var, weight, bias, training, momentum, eps])


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    return _op("call", "torch.nn.functional.layer_norm", "layer_norm",
               [input, tuple(normalized_shape), weight, bias, eps])


def dropout(input, p=0.5, training=True, inplace=False):
    if p < 0.0 or p > 1.0:
        raise ValueError("dropout probability has to be between 0 and 1, but got %s" % p)
    if not training or p == 0:
        return input
    return _inplace(input, _op("call", "torch.nn.functional.dropout", "dropout", [input, p, training]), inplace)


def softmax(input, dim=None, dtype=None):
    return _op("call", "torch.nn.functional.softmax", "softmax", [input], {"dim": dim})


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    kw = {"reduction": reduction} if reduction != "mean" else None
    return _op("call", "torch.nn.functional.mse_loss", "mse_loss", [input, target], kw)


_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}
_NAMES = ["none", "mean", "sum"]


def _reduction(reduction, size_average=None, reduce=None):
    if size_average is not None or reduce is not None:  # the legacy arguments, as torch.nn._reduction
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "none" if not reduce else "mean" if size_average else "sum"
    if reduction not in _REDUCTIONS:
        raise ValueError("%s is not a valid value for reduction" % reduction)
    return _REDUCTIONS[reduction]


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = 0 if input.dim() in (0, 1, 3) else 1  # torch.nn.functional._get_softmax_dim
    return _op("call", "torch.ops.aten.log_softmax.int", "log_softmax", [input, dim])


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """Class indices (an integer target) or class probabilities (a float target of input's shape), as
    aten's cross_entropy_loss: log_softmax over dim 1 (dim 0 unbatched), then nll_loss."""
    return _op("call", "torch.ops.aten.cross_entropy_loss.default", "cross_entropy",
               [input, target, weight, _reduction(reduction, size_average, reduce), ignore_index,
                float(label_smoothing)])


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    return _op("call", "torch.ops.aten.nll_loss.default", "nll_loss",
               [input, target, weight, _reduction(reduction, size_average, reduce), ignore_index])


def _reduce(loss, reduction):
    r = _reduction(reduction)
    return loss if r == 0 else loss.mean() if r == 1 else loss.sum()


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _reduce((input - target).abs(), _NAMES[_reduction(reduction, size_average, reduce)])


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(t log x + (1 - t) log(1 - x)), each log clamped at -100 as aten's kernel."""
    loss = -(target * input.log().clamp(min=-100) + (1 - target) * (1 - input).log().clamp(min=-100))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, _NAMES[_reduction(reduction, size_average, reduce)])


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    return _op("call", "torch.ops.aten.binary_cross_entropy_with_logits.default", "binary_cross_entropy_with_logits",
               [input, target, weight, pos_weight, _reduction(reduction, size_average, reduce)])


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    return _op("call", "torch.ops.aten.smooth_l1_loss.default", "smooth_l1_loss",
               [input, target, _reduction(reduction, size_average, reduce), float(beta)])


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """delta * smooth_l1(beta=delta): 0.5 d^2 below delta, delta (|d| - 0.5 delta) above."""
    if weight is not None:
        torch._unsupported("huber_loss(weight=...)")
    d = (input - target).abs()
    loss = torch.where(d < delta, d * d * 0.5, (d - 0.5 * delta) * delta)
    return _reduce(loss, reduction)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    if attn_mask is not None or dropout_p:
        torch._unsupported("scaled_dot_product_attention with attn_mask or dropout_p")
    kw = {"is_causal": True} if is_causal else {}
    if scale is not None:
        kw["scale"] = scale
    return _op("call", "torch._C._nn.scaled_dot_product_attention", "scaled_dot_product_attention",
               [query, key, value], kw or None)


def _missing(name):
    def fn(*a, **k):
        torch._unsupported("torch.nn.functional." + name)
    return fn


for _n in ("embedding", "avg_pool2d", "silu", "pad", "interpolate", "normalize"):
    globals()[_n] = _missing(_n)


def __getattr__(name):
    torch._missing_attribute("torch.nn.functional", name)
