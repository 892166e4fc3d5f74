#!/usr/bin/env python3
"""Inductor's first call on the pointwise chains of tools/bench/compile_scaling.py, beside ours, in
one run on the GPU machine: a chain of N ops (relu, neg, sigmoid repeated) on a 16-element CPU
tensor, timed as torch.compile's first call (Dynamo, AOTAutograd, Inductor, the C++ compile),
each size in a fresh process with a fresh cache directory; ours as `lowerscope-cli compile` of
the same graph as FX text, with the disk cache off.

  python3 tools/gpu/compile_scaling_inductor.py --cli build-gpu/app/lowerscope-cli --sizes 1000,2500,5000
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
from compile_scaling import chain  # noqa: E402

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default="build-gpu/app/lowerscope-cli")
    ap.add_argument("--sizes", default="1000,2500,5000")
    a = ap.parse_args()
    rows = []
    for n in [int(s) for s in a.sizes.split(",")]:
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(d, "inductor"), TRITON_CACHE_DIR=os.path.join(d, "triton"))
            p = subprocess.run([sys.executable, "-c", INDUCTOR, str(n)], env=env, capture_output=True, text=True)
            if p.returncode:
                sys.exit(p.stderr[-2000:])
            inductor = float(p.stdout.strip().splitlines()[-1])
            path = os.path.join(d, "chain.txt")
            with open(path, "w") as f:
                f.write(chain(n))
            t0 = time.time()
            q = subprocess.run([a.cli, "compile", path, "--no-run", "--quiet"], env=dict(os.environ, LOWERSCOPE_CACHE_DIR="off"),
                               capture_output=True, text=True)
            ours = time.time() - t0
            if q.returncode not in (0, 1):
                sys.exit(q.stderr)
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
