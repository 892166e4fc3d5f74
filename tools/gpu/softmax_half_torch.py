#!/usr/bin/env python3
"""softmax(x * 0.125) in bfloat16 at 16384x4096: eager and torch.compile (Inductor), CUDA events,
median of 15 batches of 20 calls; the companion of softmax_half_variants.cu (same bytes)."""
import statistics, torch
x = torch.randn(16384, 4096, device="cuda").to(torch.bfloat16)
f = lambda t: torch.softmax(t * 0.125, -1)
def ms(fn):
    for _ in range(20): fn()
    torch.cuda.synchronize()
    s, e, t = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True), []
    for _ in range(15):
        s.record()
        for _ in range(20): fn()
        e.record(); e.synchronize(); t.append(s.elapsed_time(e) / 20)
    return statistics.median(t)
c = torch.compile(f)
mc = torch.compile(f, mode="max-autotune-no-cudagraphs")
for name, fn in (("eager", lambda: f(x)), ("inductor", lambda: c(x)), ("inductor max-autotune (no graphs)", lambda: mc(x))):
    m = ms(fn); print(f"| torch {name} | {m:.4f} | {2*2*x.numel()/(m*1e6):.0f} GB/s |")
