#!/usr/bin/env python3
"""CUDA benchmark on the GPU machine: PyTorch eager, torch.compile (default; and dynamic=False) and
Lowerscope, side by side, in one run, timed with CUDA events (median of many runs after warm-up).

    python3 tools/gpu/cuda_bench.py --cli build-gpu/app/lowerscope-cli [--out results.md] [--quick] [--only TEXT]

Cases (issue 8): sin^2+cos^2 and mse_loss at 2^26 float32 elements, softmax(x*0.125) at 16384x4096,
LayerNorm(1024)+GELU at 8x1024x1024, the transformer block at 16x512x512 (inference and training),
and every fixture model at the fixtures' sizes (inference and training). Every model is exported
with torch.export on the CPU, as the fixtures were, and Lowerscope compiles that .pt2 (unpacked:
the build there has no libzip) with the same weights; PyTorch's output (and, for training, its
gradients of out.sum() for each input) lie beside the model, so the check column compares our
CUDA results with PyTorch's (--no-reference: the interpreter would take minutes on the big cases). Lowerscope's time is its executor's
(CUDA events around each call of the whole model, library calls and the launch latency in front of
the first kernel included, as PyTorch's calls are timed here); the per-kernel table (--kernels)
gives each kernel's device time (every launch of a run queued behind a wait kernel, so the kernels
run back to back, as a profiler sees them); its compile time a cold compile
(fresh cache) of the whole pipeline, NVRTC included, in a fresh process (the CUDA driver's start in
it), and again with the driver started first (--cuda-started, as in the app between compiles and as
torch.compile's first call finds CUDA, started by the eager runs before it): "compile / Inductor's"
divides that by Inductor's first call. Copy bandwidth is measured with
torch (a device-to-device copy of 1 GiB: read + write bytes / time).
"""
import argparse, contextlib, copy, json, os, statistics, subprocess, sys, tempfile, time, zipfile

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
from models import Attn, DecoderLayer, LnGeluOnly, Mse, SinCos, Softmax, fixture_models  # noqa: E402


def cuda_ms(fn, min_runs=20, budget_s=1.0):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times, start = [], time.perf_counter()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    while len(times) < min_runs or (time.perf_counter() - start < budget_s and len(times) < 1000):
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def cases(quick):
    n = 1 << (20 if quick else 26)
    yield "sincos 2^26", SinCos(), [(n,)], True
    yield "mse_loss 2^26", Mse(), [(n,), (n,)], True
    yield "softmax 16384x4096", Softmax(), [(16384 if not quick else 1024, 4096)], False
    yield "layernorm+gelu 8x1024x1024", LnGeluOnly(1024), [(8, 1024, 1024)], True
    yield "transformer block 16x512x512", Attn(512, 8), [(16, 512, 512)], True
    for name, (model, shape) in fixture_models().items():
        yield name, model, [shape], True  # training: gradients of out.sum() from PyTorch on the CPU, made here


def half_cases(quick):
    """Issue 34's bf16/f16 cases: the memory-bound pair, the transformer block, a decoder-LM layer
    at a realistic size (hidden 2048, sequence 2048, batch 4, grouped-query attention) and
    ResNet-50 at batch 32."""
    yield "softmax 16384x4096", Softmax(), [(16384 if not quick else 1024, 4096)], False
    yield "layernorm+gelu 8x1024x1024", LnGeluOnly(1024), [(8, 1024, 1024)], True
    yield "transformer block 16x512x512", Attn(512, 8), [(16, 512, 512)], True
    yield "decoder layer 4x2048x2048 (GQA 16/4)", DecoderLayer(), [(4 if not quick else 1, 2048, 2048)], True
    try:
        import torchvision
        yield "resnet50 batch 32", torchvision.models.resnet50(), [(32, 3, 224, 224)], True
    except ImportError:
        pass


def export_case(model, inputs, folder):
    """torch.export on the CPU (as the fixtures), unpacked into folder/model.pt2/, inputs beside."""
    os.makedirs(folder, exist_ok=True)
    ep = torch.export.export(model, tuple(inputs))
    path = os.path.join(folder, "model.zip")
    torch.export.save(ep, path)
    zipfile.ZipFile(path).extractall(os.path.join(folder, "model.pt2"))
    os.remove(path)
    for i, x in enumerate(inputs):  # .npy has no bfloat16: a half input is given in float32 (exactly)
        np.save(os.path.join(folder, f"in{i}.npy"), (x.float() if x.dtype in (torch.bfloat16, torch.float16) else x).numpy())


def ours(cli, folder, extra):
    report = os.path.join(folder, "report.json")
    env = dict(os.environ, LOWERSCOPE_CACHE_DIR=tempfile.mkdtemp())
    p = subprocess.run([cli, "compile", folder, "--device", "cuda", "--quiet", "--report", report] + extra,
                       capture_output=True, text=True, env=env)
    if not os.path.exists(report):
        return None, None, f"rc={p.returncode}: {(p.stderr or p.stdout).strip()[-200:]}", None
    r = json.load(open(report))
    os.remove(report)
    if "error" in r:
        return None, None, "error: " + r["error"]["message"][:160], r
    if r["check"]["ok"]:
        status = "ok (%.1e)" % r["check"]["max_abs_err"]
    else:
        status = "CHECK FAILED: " + p.stderr.strip().splitlines()[-1][:160] if p.stderr.strip() else "CHECK FAILED"
    return r["run_ms"], r["compile_ms"], status, r


def ours_compile_started(cli, folder, extra):
    """Our compile (fresh cache) in a process whose CUDA driver is already started, as in the app and
    as torch.compile's first call finds it: lowerscope-cli compile --cuda-started --no-run."""
    report = os.path.join(folder, "report-started.json")
    env = dict(os.environ, LOWERSCOPE_CACHE_DIR=tempfile.mkdtemp())
    subprocess.run([cli, "compile", folder, "--device", "cuda", "--quiet", "--no-run", "--cuda-started", "--report", report] + extra,
                   capture_output=True, text=True, env=env)
    if not os.path.exists(report):
        return None
    r = json.load(open(report))
    os.remove(report)
    return None if "error" in r else r["compile_ms"]


def torch_side(model, xs, train, dynamic=None, mode=None):
    """torch.compile's time a run (CUDA events) and its first call's time (compile and run)."""
    torch._dynamo.reset()
    cm = torch.compile(model, dynamic=dynamic, mode=mode)
    if train:
        def cfn(*a):
            cm.zero_grad(set_to_none=True)
            cm(*a).sum().backward()
    else:
        cfn = cm
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    cfn(*xs)
    torch.cuda.synchronize()
    compile_ms = (time.perf_counter() - t0) * 1e3
    return cuda_ms(lambda: cfn(*xs)), compile_ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--out")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", help="run only the cases whose name contains this text (or one of these, comma-separated)")
    ap.add_argument("--keep", help="export the models into this folder and keep them (for runs of the CLI after)")
    ap.add_argument("--kernels", help="write each case's per-kernel table (ours) to this file")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"],
                    help="bfloat16/float16: issue 34's cases, models and inputs in that dtype (model.to(dtype)); "
                         "PyTorch's outputs and gradients are its CUDA ones in that dtype")
    ap.add_argument("--skip-ours", default="",
                    help="cases (name contains) where ours is not run (comma separated)")
    args = ap.parse_args()
    dt = getattr(torch, args.dtype)
    half = dt != torch.float32
    torch.manual_seed(0)
    dev = torch.device("cuda")
    big = torch.empty(1 << 28, device=dev)
    copy_ms = cuda_ms(lambda: big.clone())
    copy_gbps = 2 * big.numel() * 4 / (copy_ms * 1e6)
    del big
    rows, kernel_tables = [], []
    with (contextlib.nullcontext(args.keep) if args.keep else tempfile.TemporaryDirectory()) as tmp:
        for name, model, shapes, trainable in (half_cases(args.quick) if half else cases(args.quick)):
            if args.only and not any(o and o in name for o in args.only.split(",")):
                continue
            model = model.eval().to(dt)
            xs_cpu = [torch.randn(*s).to(dt) for s in shapes]
            folder = os.path.join(tmp, name.split()[0].replace("+", "_") + str(len(rows)))
            try:
                with torch.no_grad():
                    export_case(model, xs_cpu, folder)
                if half:  # PyTorch's outputs in that dtype: its CUDA ones (the CPU is slow in bf16)
                    m = model.to(dev)
                    xs = [x.to(dev) for x in xs_cpu]
                    with torch.no_grad():
                        np.save(os.path.join(folder, "out.npy"), m(*xs).float().cpu().numpy())
                    if trainable:
                        xg = [x.clone().requires_grad_(True) for x in xs]
                        m(*xg).sum().backward()
                        m.zero_grad(set_to_none=True)
                        for i, x in enumerate(xg):
                            np.save(os.path.join(folder, f"grad_in{i}.npy"), x.grad.float().cpu().numpy())
                    # The yardstick of torch._dynamo's accuracy check: the same model and inputs in
                    # float64, against which our RMSE may be 3x PyTorch's own in this dtype (an
                    # elementwise check of a deep net's bf16 input gradient fails PyTorch's own
                    # runs in another order too).
                    m64 = copy.deepcopy(m).double()
                    with torch.no_grad():
                        np.save(os.path.join(folder, "out64.npy"), m64(*[x.double() for x in xs]).cpu().numpy())
                    if trainable:
                        xg = [x.double().requires_grad_(True) for x in xs]
                        m64(*xg).sum().backward()
                        for i, x in enumerate(xg):
                            np.save(os.path.join(folder, f"grad64_in{i}.npy"), x.grad.cpu().numpy())
                    del m64
                else:
                    with torch.no_grad():
                        expected = model(*xs_cpu)
                    np.save(os.path.join(folder, "out.npy"), expected.numpy())
                    if trainable:  # PyTorch's gradients of out.sum() for each input, on the CPU
                        xg = [x.clone().requires_grad_(True) for x in xs_cpu]
                        model(*xg).sum().backward()
                        model.zero_grad(set_to_none=True)
                        for i, x in enumerate(xg):
                            np.save(os.path.join(folder, f"grad_in{i}.npy"), x.grad.numpy())
            except Exception as e:  # noqa: BLE001
                rows.append((name, None, None, None, None, None, None, None, None, f"export failed: {e}"[:160]))
                continue
            m = model.to(dev)
            xs = [x.to(dev) for x in xs_cpu]
            for train in ([False, True] if trainable else [False]):
                label = name + (" train" if train else "")
                ctx = torch.enable_grad() if train else torch.no_grad()
                with ctx:
                    if train:
                        xs_g = [x.clone().requires_grad_(True) for x in xs]
                        e = cuda_ms(lambda: (m.zero_grad(set_to_none=True), m(*xs_g).sum().backward()))
                        c, cms = torch_side(m, xs_g, True)
                        cs = None
                    else:
                        e = cuda_ms(lambda: m(*xs))
                        c, cms = torch_side(m, xs, False)
                        cs, _ = torch_side(m, xs, False, dynamic=False)
                grads = ",".join(os.path.join(folder, f"grad_in{i}.npy") for i in range(len(xs)))
                extra = ["--no-reference"] + (["--train", "--expect-grads", grads] if train else [])
                if half:
                    extra += ["--expect64", os.path.join(folder, "out64.npy")]
                    if train:
                        extra += ["--expect-grads64", ",".join(os.path.join(folder, f"grad64_in{i}.npy") for i in range(len(xs)))]
                if half and any(k and k in name for k in args.skip_ours.split(",")):
                    o = oms = rep = started_ms = None
                    status = "not run (--skip-ours)"
                else:
                    o, oms, status, rep = ours(args.cli, folder, extra)
                    started_ms = ours_compile_started(args.cli, folder, extra)
                rows.append((label, e, c, cs, o, cms, oms, started_ms, rep, status))
                print(rows[-1][:8], status, flush=True)
                write_table(rows, copy_gbps, args.out)  # after every case: a time limit keeps the rows so far
                if rep and args.kernels:
                    lines = [f"## {label}", "", "| kernel | how | ms | GB/s | % of copy | regs | launch |", "|---|---|---|---|---|---|---|"]
                    for k in rep["kernels"]:
                        lines.append(f"| {k['name']} | {k['how']} | {k['ms']:.4f} | {k['gbps']:.0f} | {100 * k['gbps'] / copy_gbps:.0f}% | "
                                     f"{k['registers']} | {k['launch']} |")
                    phases = "; ".join(f"{t['name']} {t['ms']:.0f} ms" + (f" (x{t['count']})" if t.get("count", 1) > 1 else "")
                                       for t in rep.get("compile_phases", []))
                    lines += ["", f"Compile {oms:.0f} ms; by phase (summed over threads): {phases}"]
                    kernel_tables.append("\n".join(lines) + "\n")

    text = write_table(rows, copy_gbps, args.out)
    print(text)
    if args.kernels:
        open(args.kernels, "w").write(text.split("\n")[0] + "\n\n" + "\n".join(kernel_tables))


def write_table(rows, copy_gbps, path):
    def f(v, p=3):
        return "-" if v is None else f"{v:.{p}f}"
    out = ["| case | eager ms | torch.compile ms | compile dynamic=False ms | Lowerscope ms | ours / Inductor | Inductor compile ms | "
           "Lowerscope compile ms | of which CUDA start ms | compile, CUDA started ms | compile / Inductor's | kernels (ours) | check |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, e, c, cs, o, cms, oms, started_ms, rep, status in rows:
        best = min([v for v in (c, cs) if v is not None], default=None)
        ratio = "-" if o is None or best is None else f"{o / best:.2f}x"
        kern = "-" if not rep else f"{rep['generated_kernels']}k/{rep['extern_kernels']}x"
        # The CUDA driver's start (cuInit, context) is part of our cold process's compile; Inductor's
        # first call finds CUDA started by the eager runs before it.
        start = sum(t["ms"] for t in (rep or {}).get("compile_phases", []) if t["name"].startswith("CUDA driver: start"))
        cratio = "-" if started_ms is None or not cms else f"{started_ms / cms:.3f}"
        out.append(f"| {name} | {f(e)} | {f(c)} | {f(cs)} | {f(o)} | {ratio} | {f(cms, 0)} | {f(oms, 0)} | {f(start, 0)} | "
                   f"{f(started_ms, 0)} | {cratio} | {kern} | {status} |")
    return write_markdown(out, path, f"; measured device copy bandwidth {copy_gbps:.0f} GB/s")


def write_markdown(lines, path, note=""):
    """A results table under a line naming the device and the torch build; written to path (if any) and returned."""
    head = f"{torch.cuda.get_device_name()}, torch {torch.__version__}, CUDA {torch.version.cuda}" + note
    text = head + "\n\n" + "\n".join(lines) + "\n"
    if path:
        open(path, "w").write(text)
    return text


if __name__ == "__main__":
    sys.exit(main())
