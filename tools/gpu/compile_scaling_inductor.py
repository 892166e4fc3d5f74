#!/usr/bin/env python3
"""Inductor's first call on the pointwise chains of tools/bench/compile_scaling.py, beside ours, in
one run on the GPU machine: a chain of N ops (relu, neg, sigmoid repeated) on a 16-element CPU
tensor, timed as torch.compile's first call (Dynamo, AOTAutograd, Inductor, the C++ compile),
each size in a fresh process with a fresh cache directory; ours as `lowerscope-cli compile` of
the same graph as FX text, with the disk cache off.

  python3 tools/gpu/compile_scaling_inductor.py --cli build-gpu/app/lowerscope-cli --sizes 1000,2500,5000
  python3 tools/gpu/compile_scaling_inductor.py --cli build-gpu/app/lowerscope-cli --layers 12,48 --devices cuda
(the second: the stacked transformer block's training step, Inductor's first forward and backward
against `lowerscope-cli compile --train --no-run` of the same graph)
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
from compile_scaling import chain, transformer  # noqa: E402

INDUCTOR = r"""
import sys, time, torch
n = int(sys.argv[1])
ops = [torch.relu, torch.neg, torch.sigmoid]
def f(x):
    for i in range(n):
        x = ops[i % 3](x)
    return x
x = torch.randn(16)
g = torch.compile(f)
t0 = time.time()
y = g(x)
print(time.time() - t0)
assert torch.allclose(y, f(x), atol=1e-6)
"""


TRANSFORMER = r"""
import sys, time, torch, torch.nn as nn, torch.nn.functional as F
L, dev = int(sys.argv[1]), sys.argv[2]
B, T, C, H = 4, 64, 128, 4
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.qkv, self.proj = nn.LayerNorm(C), nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.ln2, self.fc1, self.fc2 = nn.LayerNorm(C), nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
    def forward(self, x):
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
torch.manual_seed(0)
m = nn.Sequential(*[Block() for _ in range(L)]).to(dev)
x = torch.randn(B, T, C, device=dev, requires_grad=True)
g = torch.compile(m)
t0 = time.time()
g(x).sum().backward()
if dev == "cuda": torch.cuda.synchronize()
print(time.time() - t0)
"""


def side_by_side(torch_script, script_args, graph_text, cli, cli_args):
    """Inductor's first call (its script prints the seconds) and our compile of the same graph,
    each in a fresh process with fresh caches; returns (inductor s, ours s)."""
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(d, "inductor"), TRITON_CACHE_DIR=os.path.join(d, "triton"))
        p = subprocess.run([sys.executable, "-c", torch_script] + script_args, env=env, capture_output=True, text=True)
        if p.returncode:
            sys.exit(p.stderr[-2000:])
        inductor = float(p.stdout.strip().splitlines()[-1])
        path = os.path.join(d, "graph.txt")
        with open(path, "w") as f:
            f.write(graph_text)
        t0 = time.time()
        q = subprocess.run([cli, "compile", path, "--no-run", "--quiet"] + cli_args, env=dict(os.environ, LOWERSCOPE_CACHE_DIR="off"),
                           capture_output=True, text=True)
        ours = time.time() - t0
        if q.returncode not in (0, 1):
            sys.exit(q.stderr)
    return inductor, ours


def transformer_rows(cli, layers, devices):
    rows = []
    for dev in devices:
        for L in layers:
            inductor, ours = side_by_side(TRANSFORMER, [str(L), dev], transformer(L), cli, ["--train", "--device", dev])
            rows.append((dev, L, inductor, ours))
            print(f"transformer {dev} {L}: inductor {inductor:.1f} s, ours {ours:.2f} s", file=sys.stderr, flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default="build-gpu/app/lowerscope-cli")
    ap.add_argument("--sizes", default="1000,2500,5000")
    ap.add_argument("--layers", default="", help="transformer training steps of these many layers instead of chains")
    ap.add_argument("--devices", default="cuda")
    a = ap.parse_args()
    if a.layers:
        rows = transformer_rows(a.cli, [int(v) for v in a.layers.split(",")], a.devices.split(","))
        import torch
        print(f"Command: `python3 tools/gpu/compile_scaling_inductor.py --layers {a.layers} --devices {a.devices}` "
              f"(PyTorch {torch.__version__}, {os.cpu_count()} cores)\n")
        print("| device | layers | Inductor's first call, training step (s) | ours (s) | ours / Inductor |")
        print("|---|---|---|---|---|")
        for dev, L, i, o in rows:
            print(f"| {dev} | {L} | {i:.1f} | {o:.2f} | {o / i:.3f} |")
        return
    rows = []
    for n in [int(s) for s in a.sizes.split(",")]:
        inductor, ours = side_by_side(INDUCTOR, [str(n)], chain(n), a.cli, [])
        rows.append((n, inductor, ours))
        print(f"{n}: inductor {inductor:.1f} s, ours {ours:.2f} s", file=sys.stderr, flush=True)
    import torch
    print(f"Command: `python3 tools/gpu/compile_scaling_inductor.py --sizes {a.sizes}` (PyTorch {torch.__version__}, "
          f"{os.cpu_count()} cores)\n")
    print("| N | Inductor's first call (s) | ours (s) | ours / Inductor |")
    print("|---|---|---|---|")
    for n, i, o in rows:
        print(f"| {n} | {i:.1f} | {o:.2f} | {o / i:.3f} |")


if __name__ == "__main__":
    main()
