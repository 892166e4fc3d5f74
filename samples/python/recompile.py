# The walkthrough's recompile example: Python ints are guarded by the conditions they decide.
# As in PyTorch, fn(x, 2) compiles with n a constant (guard `L['n'] == 2`); fn(x, 3) recompiles with
# n symbolic (automatic dynamic shapes: n is an input of the graph), which fn(x, 6) shares; fn(x, -3)
# fails the guard `L['n'] >= 0` and compiles the other branch.
import torch


def fn(x, n):
    y = x ** 2
    if n >= 0:
        return (n + 1) * y
    else:
        return y / n


x = torch.randn(200)
opt = torch.compile(fn)
for n in (2, 3, 6, -3):
    out = opt(x, n)
    print("n = %2d: matches eager: %s" % (n, torch.allclose(out, fn(x, n), rtol=1e-5, atol=1e-6)))
