# mse_loss over sin/cos: one Dynamo graph; the loss decomposes (sub, pow, mean) and still fuses
# into one kernel, the mean's division after the reduction loop.
import torch
import torch.nn.functional as F


def mse_fn(x, y):
    return F.mse_loss(torch.sin(x) ** 2 + torch.cos(x) ** 2, y)


x = torch.randn(1000)
y = torch.ones(1000)
loss = torch.compile(mse_fn)(x, y)
print("loss:", loss.item())
print("matches eager:", torch.allclose(loss, mse_fn(x, y), atol=1e-6))
