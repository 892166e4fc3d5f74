# The PyTorch 2 walkthrough's first example: TorchDynamo captures one graph, Inductor (here:
# Lowerscope's pipeline) makes one kernel of it.
import torch


def f(x):
    return torch.sin(x) ** 2 + torch.cos(x) ** 2


compiled = torch.compile(f)
x = torch.randn(1000)
y = compiled(x)
print(y[:4])
print("sin^2 + cos^2 == 1:", torch.allclose(y, torch.ones(1000), atol=1e-5))
