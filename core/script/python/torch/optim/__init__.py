"""torch.optim: SGD (with momentum, dampening, weight decay and Nesterov), Adam and AdamW (with
amsgrad), by PyTorch's update formulas (torch/optim/adam.py, _single_tensor_adam)."""
import torch


class Optimizer:
    def __init__(self, params, defaults):
        if isinstance(params, torch.Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, but "
                            "got torch.Tensor")
        self.defaults = defaults
        self.state = {}        # param -> its state (PyTorch keys it by the parameter, too)
        self.param_groups = []
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        for g in params if isinstance(params[0], dict) else [{"params": params}]:
            self.add_param_group(g)

    def add_param_group(self, param_group):
        g = dict(param_group)
        g["params"] = [g["params"]] if isinstance(g["params"], torch.Tensor) else list(g["params"])
        for k, v in self.defaults.items():
            g.setdefault(k, v)
        self.param_groups.append(g)

    def zero_grad(self, set_to_none=True):
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    with torch.no_grad():
                        p.grad.zero_()

    def state_dict(self):
        """As PyTorch's: parameters by their index over the groups, in order."""
        index, groups, k = {}, [], 0
        for g in self.param_groups:
            packed = {key: v for key, v in g.items() if key != "params"}
            packed["params"] = []
            for p in g["params"]:
                if id(p) not in index:
                    index[id(p)] = k
                    k += 1
                packed["params"].append(index[id(p)])
            groups.append(packed)
        state = {index[id(p)]: dict(v) for p, v in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        by_index = {}
        for g, saved in zip(self.param_groups, groups):
            if len(g["params"]) != len(saved["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                                 "optimizer's group")
            by_index.update(zip(saved["params"], g["params"]))
            g.update({k: v for k, v in saved.items() if k != "params"})
        self.state = {by_index[i]: {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in st.items()}
                      for i, st in state_dict["state"].items()}


class SGD(Optimizer):
    """torch/optim/sgd.py, _single_tensor_sgd: weight decay adds wd * p to the gradient; the momentum
    buffer starts as the gradient and then takes momentum * buf + (1 - dampening) * g; Nesterov steps
    along g + momentum * buf."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False,
                 foreach=None, differentiable=False, fused=None):
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError("Invalid SGD hyperparameters: lr=%r momentum=%r weight_decay=%r" % (lr, momentum, weight_decay))
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                d = -p.grad if g["maximize"] else p.grad
                if g["weight_decay"]:
                    d = d + p * g["weight_decay"]
                if g["momentum"]:
                    st = self.state.setdefault(p, {})
                    buf = st.get("momentum_buffer")
                    if buf is None:
                        buf = st["momentum_buffer"] = d.clone()
                    else:  # in place, as PyTorch's: the state's tensor object is the one updated
                        buf.mul_(g["momentum"]).add_(d, alpha=1 - g["dampening"])
                    d = d + buf * g["momentum"] if g["nesterov"] else buf
                p.sub_(d * g["lr"])
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
                st["step"].add_(1)  # the state's tensors are updated in place, as PyTorch's
                t = st["step"].item()
                if wd:
                    if self._decoupled:
                        p.mul_(1 - lr * wd)
                    else:
                        grad = grad + p * wd
                st["exp_avg"].lerp_(grad, 1 - b1)
                st["exp_avg_sq"].mul_(b2).addcmul_(grad, grad, value=1 - b2)
                v = st["exp_avg_sq"]
                if g["amsgrad"]:
                    st["max_exp_avg_sq"].copy_(torch.maximum(st["max_exp_avg_sq"], v))
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


def __getattr__(name):
    torch._missing_attribute("torch.optim", name)
