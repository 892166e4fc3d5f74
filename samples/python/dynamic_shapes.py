# Dynamic shapes. torch.compile(dynamic=True) compiles once with the sizes as symbols: the rows of
# x change from call to call and the same compiled kernels run at every size. By default
# (dynamic=None), the first call compiles for its sizes, and the recompile a new size forces
# compiles with symbolic sizes (automatic dynamic shapes), which then serve every later size.
import torch


def norm_gelu(x, w):
    y = torch.nn.functional.layer_norm(x, (64,), w)
    return torch.nn.functional.gelu(y) * 2.0


def norm_gelu_again(x, w):  # another function: compiled code is cached per function, as Dynamo does
    return norm_gelu(x, w)


w = torch.randn(64)
dyn = torch.compile(norm_gelu, dynamic=True)
auto = torch.compile(norm_gelu_again)
for rows in (8, 24, 40, 7):
    x = torch.randn(rows, 64)
    a, b = dyn(x, w), auto(x, w)
    ref = norm_gelu(x, w)
    print("rows %2d: dynamic=True matches eager: %s, default matches eager: %s"
          % (rows, torch.allclose(a, ref, rtol=1e-4, atol=1e-5), torch.allclose(b, ref, rtol=1e-4, atol=1e-5)))
