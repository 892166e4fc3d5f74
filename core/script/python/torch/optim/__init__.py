"""torch.optim: SGD (with momentum, dampening, weight decay and Nesterov)."""
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
                p.grad = None


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


def _missing(name):
    class Missing(Optimizer):
        def __init__(self, *a, **k):
            torch._unsupported("torch.optim." + name)

    Missing.__name__ = name
    return Missing


Adam = _missing("Adam")
AdamW = _missing("AdamW")
