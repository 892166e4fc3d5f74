#!/usr/bin/env python3
"""reduce-overhead on the GPU machine: small-batch models, where launching kernels one by one
costs more than running them. Side by side in one run, CUDA events, median after warm-up:
PyTorch eager, torch.compile (default), torch.compile(mode="reduce-overhead") (CUDA graphs), and
Lowerscope default and --mode reduce-overhead (the whole model as one CUDA graph). Also the host
overhead per kernel that the graph removes: (one-by-one time - graph time) / kernels, and the
host's own time to launch a run kernel by kernel (no graph), per kernel.

    python3 tools/gpu/bench_reduce_overhead.py --cli build-gpu/app/lowerscope-cli [--out results.md]
"""
import argparse, json, os, subprocess, sys, tempfile, time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
from cuda_bench import cuda_ms, export_case  # noqa: E402
from models import MLP, Attn, Res  # noqa: E402


def cases():
    yield "MLP batch 1", MLP(), (1, 784)
    yield "res_block batch 1", Res(), (1, 32, 16, 16)
    yield "transformer block batch 1 (64x128)", Attn(), (1, 64, 128)
    try:
        import torchvision
        yield "MobileNetV3-Small batch 1", torchvision.models.mobilenet_v3_small(), (1, 3, 224, 224)
    except ImportError:
        pass


def ours(cli, folder, mode):
    report = os.path.join(folder, "report.json")
    env = dict(os.environ, LOWERSCOPE_CACHE_DIR=tempfile.mkdtemp())
    p = subprocess.run([cli, "compile", folder, "--device", "cuda", "--quiet", "--no-reference", "--mode", mode,
                        "--report", report], capture_output=True, text=True, env=env)
    if not os.path.exists(report):
        return None, f"rc={p.returncode}: {(p.stderr or p.stdout).strip()[-200:]}"
    r = json.load(open(report))
    os.remove(report)
    return r, ("ok" if r["check"]["ok"] else "CHECK FAILED")


def torch_ms(model, x, mode):
    torch._dynamo.reset()
    fn = model if mode == "eager" else torch.compile(model, mode=None if mode == "default" else mode)
    with torch.no_grad():
        for _ in range(3):
            fn(x)
        torch.cuda.synchronize()
        return cuda_ms(lambda: fn(x), min_runs=50)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--out")
    args = ap.parse_args()
    torch.manual_seed(0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, shape in cases():
            model = model.eval()
            x_cpu = torch.randn(*shape)
            folder = os.path.join(tmp, str(len(rows)))
            with torch.no_grad():
                export_case(model, [x_cpu], folder)
                np.save(os.path.join(folder, "out.npy"), model(x_cpu).numpy())
            m, x = model.cuda(), x_cpu.cuda()
            t = {k: torch_ms(m, x, k) for k in ("eager", "default", "reduce-overhead")}
            d, d_status = ours(args.cli, folder, "default")
            g, g_status = ours(args.cli, folder, "reduce-overhead")
            kernels = len(d["kernels"]) if d else 0
            graph = g is not None and "CUDA graph of" in g.get("mode_note", "")
            per_kernel = (g["launched_ms"] - g["run_ms"]) * 1e3 / kernels if graph and kernels else float("nan")
            host = d["host_ms"] * 1e3 / kernels if d and kernels and "host_ms" in d else float("nan")
            row = (name, t["eager"], t["default"], t["reduce-overhead"], d["run_ms"] if d else float("nan"),
                   g["run_ms"] if g else float("nan"), kernels, per_kernel, host,
                   f"{d_status} / {g_status}" + ("" if graph else " (no graph: " + (g or {}).get("mode_note", "?")[:80] + ")"))
            rows.append(row)
            print(row, flush=True)
    lines = ["| case | eager ms | torch.compile ms | torch.compile reduce-overhead ms | ours ms | ours reduce-overhead ms | "
             "kernels | launch overhead removed per kernel (µs) | host time to launch a kernel, no graph (µs) | check (default / graph) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append("| %s | %.4f | %.4f | %.4f | %.4f | %.4f | %d | %.2f | %.2f | %s |" % r)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        open(args.out, "w").write(f"Device: {torch.cuda.get_device_name()}, PyTorch {torch.__version__}\n\n" + text)


if __name__ == "__main__":
    main()
