"""Where torch.compile's time goes on the GPU, kernel by kernel (torch.profiler), for the
transformer block at 16x512x512: the reference our kernel table is compared with.
    python3 tools/gpu/profile_inductor.py [--train]"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
from models import Attn  # noqa: E402

train = "--train" in sys.argv
torch.manual_seed(0)
m = Attn(512, 8).cuda()
x = torch.randn(16, 512, 512, device="cuda", requires_grad=train)
f = torch.compile(m)
for _ in range(3):
    y = f(x)
    if train:
        y.sum().backward()
torch.cuda.synchronize()
print("allow_tf32", torch.backends.cuda.matmul.allow_tf32, "precision", torch.get_float32_matmul_precision())
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as p:
    for _ in range(10):
        y = f(x)
        if train:
            y.sum().backward()
    torch.cuda.synchronize()
# One line a kernel: its device time per step (10 steps were profiled), the longest first.
rows = [(e.device_time_total / 10 / 1000, e.count // 10, e.key) for e in p.key_averages() if e.device_time_total > 0]
for ms, calls, name in sorted(rows, reverse=True)[:30]:
    print(f"{ms:8.4f} ms  x{calls:<3d} {name[:110]}")
print(f"{sum(r[0] for r in rows):8.4f} ms  in all")
