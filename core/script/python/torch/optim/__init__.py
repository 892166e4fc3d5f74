"""torch.optim: SGD (with momentum, dampening, weight decay and Nesterov), Adam and AdamW (with
amsgrad), by PyTorch's update formulas (torch/optim/adam.py, _single_tensor_adam)."""
import torch


class Optimizer:
    def __init__(self, params, defaults):
        params = list(params)
        if params and isinstance(params[0], dict):
            self.param_groups = [dict(defaults, **g) for g in params]
            for g in self.param_groups:
                g["params"] = list(g["params"])
        else:
            self.param_groups = [dict(defaults, params=params)]
        self.state = {}

    def zero_grad(self, set_to_none=True):
        for g in self.param_groups:
            for p in g["params"]:
                if set_to_none or p.grad is None:
                    p.grad = None
                else:
                    p.grad.zero_()


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False):
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov))

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                d = p.grad
                if g["weight_decay"]:
                    d = d + p * g["weight_decay"]
                if g["momentum"]:
                    buf = self.state.get(id(p))
                    buf = d if buf is None else buf * g["momentum"] + d * (1 - g["dampening"])
                    self.state[id(p)] = buf
                    d = d + buf * g["momentum"] if g["nesterov"] else buf
                p._set(p - d * g["lr"])
        return loss


class Adam(Optimizer):
    """Adam: m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2, p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
    weight_decay adds wd * p to g (Adam), or first scales p by 1 - lr * wd (decoupled: AdamW)."""

    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None):
        if lr < 0 or eps < 0 or not (0 <= betas[0] < 1 and 0 <= betas[1] < 1) or weight_decay < 0:
            raise ValueError("Invalid %s hyperparameters: lr=%r betas=%r eps=%r weight_decay=%r"
                             % (type(self).__name__, lr, betas, eps, weight_decay))
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for g in self.param_groups:
            lr, (b1, b2), eps, wd = g["lr"], g["betas"], g["eps"], g["weight_decay"]
            for p in g["params"]:
                if p.grad is None:
                    continue
                grad = -p.grad if g["maximize"] else p.grad
                st = self.state.setdefault(p, {})
                if not st:
                    st["step"] = torch.tensor(0.0)
                    st["exp_avg"] = torch.zeros_like(p)
                    st["exp_avg_sq"] = torch.zeros_like(p)
                    if g["amsgrad"]:
                        st["max_exp_avg_sq"] = torch.zeros_like(p)
                st["step"] = st["step"] + 1
                t = st["step"].item()
                if wd:
                    if self._decoupled:
                        p.mul_(1 - lr * wd)
                    else:
                        grad = grad + p * wd
                st["exp_avg"] = st["exp_avg"] * b1 + grad * (1 - b1)
                st["exp_avg_sq"] = st["exp_avg_sq"] * b2 + grad * grad * (1 - b2)
                v = st["exp_avg_sq"]
                if g["amsgrad"]:
                    st["max_exp_avg_sq"] = torch.maximum(st["max_exp_avg_sq"], v)
                    v = st["max_exp_avg_sq"]
                bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t
                denom = torch.sqrt(v) / (bc2 ** 0.5) + eps
                p.sub_(st["exp_avg"] / denom * (lr / bc1))
        return loss


class AdamW(Adam):
    """AdamW: Adam with decoupled weight decay (p *= 1 - lr * weight_decay before the step), default 1e-2."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, **kw):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, **kw)


def _missing(name):
    class Missing(Optimizer):
        def __init__(self, *a, **k):
            torch._unsupported("torch.optim." + name)

    Missing.__name__ = name
    return Missing


for _n in ("RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "LBFGS"):
    globals()[_n] = _missing(_n)
