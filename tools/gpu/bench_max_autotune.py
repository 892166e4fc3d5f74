#!/usr/bin/env python3
"""max-autotune on the GPU machine: Lowerscope's --mode max-autotune against
torch.compile(mode="max-autotune"), side by side in one run, CUDA events, median after warm-up.

    python3 tools/gpu/bench_max_autotune.py --cli build-gpu/app/lowerscope-cli [--out results.md] [--only TEXT] [--dtype bfloat16]

Per case: torch.compile default; mode="max-autotune" (Inductor tunes its Triton kernels and, for
matrix multiplies, cuBLAS against Triton templates, then replays the model as a CUDA graph) with
its first call's time (compile + tuning, fresh cache); mode="max-autotune-no-cudagraphs" (the same
tuned kernels launched one by one: the like of our run); ours default and --mode max-autotune (a
fresh cache: every kernel's candidates timed), our compile time including the tuning, and how
many kernels tuning changed (from the autotune stage's note). The check compares our output with
PyTorch's.
"""
import argparse, copy, os, re, sys, tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "bench"))
import cuda_bench  # noqa: E402
from cuda_bench import export_case  # noqa: E402
from models import Attn, LnGeluOnly, SinCos, Softmax, fixture_models  # noqa: E402


def cases():
    n = 1 << 26
    yield "sincos 2^26", SinCos(), [(n,)]
    yield "softmax 16384x4096", Softmax(), [(16384, 4096)]
    yield "layernorm+gelu 8x1024x1024", LnGeluOnly(1024), [(8, 1024, 1024)]
    fx = fixture_models()
    for name in ("mlp", "attn_block", "res_block"):
        model, shape = fx[name]
        yield name, model, [shape]
    # An LLM's MLP at a serving size (GEMM-bound): Linear 2048 -> 8192, GELU, Linear 8192 -> 2048 on 4096 tokens.
    yield "ffn 4096x2048x8192", torch.nn.Sequential(torch.nn.Linear(2048, 8192), torch.nn.GELU(), torch.nn.Linear(8192, 2048)), [(4096, 2048)]
    yield "transformer block 16x512x512", Attn(512, 8), [(16, 512, 512)]  # last: Inductor tunes it for minutes


def ours(cli, folder, mode, extra=()):
    """cuda_bench's compile of the folder, in this mode; the tuning summary from the report's mode note."""
    ms, compile_ms, status, r = cuda_bench.ours(cli, folder, ["--no-reference", "--mode", mode] + list(extra))
    m = re.search(r"max-autotune: (\d+) kernel\(s\) tuned in (\d+) ms \((\d+) NVRTC modules.*?\), (\d+) run faster",
                  (r or {}).get("mode_note", ""))
    if m:
        status += f"; {m.group(1)} tuned, {m.group(4)} changed, {m.group(2)} ms"
    start = [t["ms"] for t in (r or {}).get("compile_phases", []) if t["name"].startswith("CUDA driver: start")]
    if start and mode == "max-autotune":
        status += f"; driver start {start[0]:.0f} ms"
    for t in (r or {}).get("compile_phases", []):  # where our compile's time went (stdout only)
        print(f"    {mode:13s} {t['ms']:9.1f} ms  {t['name']}" + (f" (x{t['count']})" if t["count"] > 1 else ""), flush=True)
    return ms, compile_ms, status


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--out")
    ap.add_argument("--only", help="only the cases whose name contains one of these texts (comma-separated)")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"],
                    help="model.to(dtype) and inputs in it (half types: PyTorch's CUDA outputs and a float64 yardstick, as cuda_bench.py)")
    a = ap.parse_args()
    dt = getattr(torch, a.dtype)
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp())  # a fresh cache: Inductor tunes for real
    dev = torch.device("cuda")
    tmp = tempfile.mkdtemp()
    rows = []
    for name, model, shapes in cases():
        if a.only and not any(o in name for o in a.only.split(",")):
            continue
        model = model.eval().to(dt)
        xs_cpu = [torch.randn(*s).to(dt) for s in shapes]
        folder = os.path.join(tmp, re.sub(r"\W", "_", name))
        with torch.no_grad():
            export_case(model, xs_cpu, folder)
            if dt == torch.float32:
                np.save(os.path.join(folder, "out.npy"), model(*xs_cpu).numpy())
        m = model.to(dev)
        xs = [x.to(dev) for x in xs_cpu]
        if dt != torch.float32:  # PyTorch's CUDA outputs in that dtype, and the float64 yardstick
            with torch.no_grad():
                np.save(os.path.join(folder, "out.npy"), m(*xs).float().cpu().numpy())
                m64 = copy.deepcopy(m).double()
                np.save(os.path.join(folder, "out64.npy"), m64(*[x.double() for x in xs]).cpu().numpy())
                del m64
        with torch.no_grad():
            d, _ = cuda_bench.torch_side(m, xs, False, mode="default")
            ma, ma_first = cuda_bench.torch_side(m, xs, False, mode="max-autotune")
            mn, _ = cuda_bench.torch_side(m, xs, False, mode="max-autotune-no-cudagraphs")
        extra = [] if dt == torch.float32 else ["--expect64", os.path.join(folder, "out64.npy")]
        o, _, _ = ours(a.cli, folder, "default", extra)
        ot, otms, status = ours(a.cli, folder, "max-autotune", extra)
        rows.append((name, d, ma, mn, o, ot, ma_first, otms, status))
        print(rows[-1], flush=True)
        write_table(rows, a.out)  # after every case: a time limit keeps the rows so far
    print(write_table(rows, a.out))


def write_table(rows, path):
    def f(v, p=3):
        return "-" if v is None else f"{v:.{p}f}"
    out = ["| case | torch.compile ms | max-autotune ms | max-autotune-no-cudagraphs ms | ours default ms | ours max-autotune ms | "
           "ours / Inductor max-autotune (no graphs) | Inductor max-autotune first call ms | ours max-autotune compile ms | check; tuning |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for name, d, ma, mn, o, ot, ma_first, otms, status in rows:
        ratio = "-" if ot is None or mn is None else f"{ot / mn:.2f}x"
        out.append(f"| {name} | {f(d)} | {f(ma)} | {f(mn)} | {f(o)} | {f(ot)} | {ratio} | {f(ma_first, 0)} | {f(otms, 0)} | {status} |")
    return cuda_bench.write_markdown(out, path)


if __name__ == "__main__":
    sys.exit(main())
