#!/usr/bin/env python3
"""Dynamic shapes on the GPU machine: static against dynamic kernels, Lowerscope and Inductor, in one run.

    python3 tools/gpu/dynamic_bench.py --cli build-gpu/app/lowerscope-cli [--out results.md]

For each case and each of its sizes, timed with CUDA events (median of many runs after warm-up):
  - torch.compile(dynamic=False), compiled for that size;
  - torch.compile(dynamic=True), compiled once at the case's first size and then called at each
    size (its kernels take the sizes as arguments);
  - Lowerscope static: `lowerscope-cli compile --device cuda` of the model exported at that size;
  - Lowerscope dynamic: the same with `--dynamic`. Its kernels are the size-generic template; the
    "template" column says whether that template is token for token the one made at the case's
    first size (then one compile serves every such size: `--at` runs it with no compile), or
    another one (a guard of the first would fail: Lowerscope compiles again, as Dynamo does).
"dyn/static" divides dynamic by static time for the whole model; "worst kernel" is the largest
ratio of one generated kernel's time in the dynamic compile to the same kernel's in the static one
(named, with its static time beside it).
"""
import argparse, copy, json, os, re, shutil, subprocess, sys, tempfile, time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "bench"))
from cuda_bench import cuda_ms, export_case, write_markdown  # noqa: E402
from models import MLP, Attn, LnGeluOnly, Softmax  # noqa: E402


def cases():
    # softmax: rows and row length vary (Inductor's dynamic reductions were slowest on some row
    # lengths); layer norm + GELU: the batch; the MLP: the batch; the transformer block: batch and
    # sequence length.
    yield "softmax", Softmax(), [(8192, 1024), (8192, 1500), (12000, 1024), (8192, 4096)]
    yield "layernorm+gelu", LnGeluOnly(1024), [(8, 1024, 1024), (5, 1024, 1024), (13, 1000, 1024)]
    yield "mlp", MLP(), [(256, 784), (1000, 784), (4096, 784)]
    yield "transformer block", Attn(512, 8), [(8, 512, 512), (12, 512, 512), (8, 384, 512)]


def ours(cli, folder, dynamic):
    report = os.path.join(folder, "report.json")
    dump = os.path.join(folder, "dump")
    shutil.rmtree(dump, ignore_errors=True)
    env = dict(os.environ, LOWERSCOPE_CACHE_DIR=tempfile.mkdtemp())
    extra = ["--dynamic"] if dynamic else []
    p = subprocess.run([cli, "compile", folder, "--device", "cuda", "--quiet", "--no-reference", "--report", report, "--dump", dump] + extra,
                       capture_output=True, text=True, env=env)
    if not os.path.exists(report):
        raise RuntimeError(f"rc={p.returncode}: {(p.stderr or p.stdout).strip()[-300:]}")
    r = json.load(open(report))
    os.remove(report)
    if "error" in r:
        raise RuntimeError(r["error"]["message"][:300])
    if not r["check"]["ok"]:
        raise RuntimeError("check failed: " + p.stderr.strip()[-300:])
    src = open(os.path.join(dump, "06_source.cu")).read()
    # the kernels' text without comments (they state the traced sizes)
    code = "\n".join(re.sub(r"//.*", "", line) for line in src.splitlines())
    sym = ""
    dyn = os.path.join(dump, "07_dynamic.cu")
    if os.path.exists(dyn):
        sym = "; ".join(l.split("  (")[0] + (" dyn" if l.rstrip().endswith("dynamic") else " fixed")
                        for l in open(dyn).read().split("# Guards")[0].splitlines() if re.match(r"s\d+ = ", l))
    return r, code, sym


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--out")
    ap.add_argument("--only")
    a = ap.parse_args()
    dev = torch.device("cuda")
    for knob in ("cache_size_limit", "recompile_limit"):  # a static compile per size, beside the dynamic one
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, 64)
    tmp = tempfile.mkdtemp()
    rows = []
    for name, model, sizes in cases():
        if a.only and a.only not in name:
            continue
        model = model.eval()  # stays on the CPU: exported there, as the fixtures
        m = copy.deepcopy(model).to(dev)
        torch._dynamo.reset()
        dyn_model = torch.compile(m, dynamic=True)
        first_template = None
        for i, shape in enumerate(sizes):
            x_cpu = torch.randn(*shape)
            folder = os.path.join(tmp, f"{name.split()[0].replace('+', '_')}{i}")
            with torch.no_grad():
                export_case(model, [x_cpu], folder)
                np.save(os.path.join(folder, "out.npy"), model(x_cpu).numpy())
            x = x_cpu.to(dev)
            with torch.no_grad():
                static = torch.compile(copy.deepcopy(m), dynamic=False)
                static(x)
                ts = cuda_ms(lambda: static(x))
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                dyn_model(x)  # first size: compiles; later sizes: Dynamo reuses the dynamic graph
                torch.cuda.synchronize()
                dyn_first_ms = (time.perf_counter() - t0) * 1e3
                td = cuda_ms(lambda: dyn_model(x))
            try:
                rs, _, _ = ours(a.cli, folder, False)
                rd, template, sym = ours(a.cli, folder, True)
            except RuntimeError as e:
                rows.append((name, shape, ts, td, None, None, None, str(e)[:120], "", dyn_first_ms))
                print(rows[-1], flush=True)
                continue
            if first_template is None:
                first_template = template
            same = "first size's" if template == first_template else "another (recompile)"
            sk = {k["name"]: k["ms"] for k in rs["kernels"] if k["kind"] == "generated"}
            dk = {k["name"]: k["ms"] for k in rd["kernels"] if k["kind"] == "generated"}
            ratios = [(dk[k] / sk[k], k, sk[k]) for k in sk if k in dk and sk[k] > 0]
            worst = max(ratios, default=None)  # (ratio, kernel, its static ms)
            rows.append((name, shape, ts, td, rs["run_ms"], rd["run_ms"], worst, same, sym, dyn_first_ms))
            print(rows[-1], flush=True)

    def f(v, p=3):
        return "-" if v is None else f"{v:.{p}f}"
    out = ["| case | size | Inductor static ms | Inductor dynamic ms | dyn/static | Lowerscope static ms | Lowerscope dynamic ms | "
           "dyn/static | worst kernel | our template | our symbols | Inductor dynamic call ms (first: compile) |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, shape, ts, td, os_, od, worst, same, sym, first in rows:
        ri = f"{td / ts:.2f}x" if ts else "-"
        ro = f"{od / os_:.2f}x" if os_ and od else "-"
        out.append(f"| {name} | {'x'.join(map(str, shape))} | {f(ts)} | {f(td)} | {ri} | {f(os_)} | {f(od)} | {ro} | "
                   f"{'-' if worst is None else f'{worst[0]:.2f}x ({worst[1]}, {worst[2] * 1e3:.1f} us)'} | {same} | {sym} | {first:.0f} |")
    print(write_markdown(out, a.out))


if __name__ == "__main__":
    sys.exit(main())
