# Writes PyTorch's structured trace (TORCH_TRACE) for a few small programs: graph breaks,
# a recompile, a training step, a fullgraph failure, CPU and CUDA.
import torch

def f(x, y):
    a = torch.sin(x) + y
    print("graph break here")
    return torch.relu(a) * 2

def g(x):
    if x.sum() > 0:          # data-dependent branch: a graph break
        return x.cos()
    return x.sin()

dev = "cuda" if torch.cuda.is_available() else "cpu"
cf = torch.compile(f)
cf(torch.randn(8, device=dev), torch.randn(8, device=dev))
cf(torch.randn(16, device=dev), torch.randn(16, device=dev))      # recompile: a new size
cf(torch.randn(16, device=dev, dtype=torch.float64), torch.randn(16, device=dev, dtype=torch.float64))  # dtype guard fails
torch.compile(g)(torch.randn(8, device=dev))
m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.LayerNorm(32), torch.nn.Linear(32, 4)).to(dev)
cm = torch.compile(m)
out = cm(torch.randn(4, 16, device=dev))
out.sum().backward()
cpu = torch.compile(lambda a, b: torch.softmax(a @ b, -1))
cpu(torch.randn(8, 8), torch.randn(8, 8))
try:
    torch.compile(f, fullgraph=True)(torch.randn(4), torch.randn(4))
except Exception as e:
    print("fullgraph:", type(e).__name__)
