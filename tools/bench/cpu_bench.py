#!/usr/bin/env python3
"""CPU benchmark: PyTorch eager, torch.compile (Inductor, CPU) and Lowerscope, side by side, in one run.

    python3 tools/bench/cpu_bench.py --cli build-bench/app/lowerscope-cli [--out results.md]

Cases: the issue's large memory-bound ones (sin^2+cos^2 at 2^24 elements, softmax(x*0.125) at
2048x4096, LayerNorm(1024)+GELU at 2x1024x1024) and every fixture model, inference and training
(a step: forward, then backward of out.sum()). PyTorch runs the models as the fixtures define them
(tools/cases.py of the fixture generator, restated below); Lowerscope compiles the Core ATen graph
PyTorch exported for them (tests/data/stages/<case>/3_core_aten.txt), with random weights: the
work is the same, only the values differ.
Times are medians of repeated runs after warm-up, in one process per system, inputs random;
Lowerscope's come from its own executor (`--report`: run_ms, compile_ms), the whole model
including library calls. Threads: all cores for everyone (torch.get_num_threads(), OpenMP).
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import fixture_models  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def median_ms(fn, min_runs=20, budget_s=2.0):
    for _ in range(3):
        fn()
    times, start = [], time.perf_counter()
    while len(times) < min_runs or time.perf_counter() - start < budget_s:
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
        if len(times) >= 2000:
            break
    return statistics.median(times)


def graph_text(name, params, body, ret):
    sig = ", ".join(f'{n}: "f32[{", ".join(map(str, s))}]"' for n, s in params)
    lines = [f"class GraphModule(torch.nn.Module):", f"    def forward(self, {sig}):"]
    lines += ["        " + l for l in body]
    lines.append(f"        return ({ret},)")
    return "\n".join(lines) + "\n"


def synthetic_cases():
    n = 1 << 24
    yield ("sincos 2^24", lambda x: torch.sin(x) ** 2 + torch.cos(x) ** 2, [(n,)],
           graph_text("sincos", [("x", (n,))], [
               f'sin: "f32[{n}]" = torch.ops.aten.sin.default(x)',
               f'pow_1: "f32[{n}]" = torch.ops.aten.pow.Tensor_Scalar(sin, 2)',
               f'cos: "f32[{n}]" = torch.ops.aten.cos.default(x)',
               f'pow_2: "f32[{n}]" = torch.ops.aten.pow.Tensor_Scalar(cos, 2)',
               f'add: "f32[{n}]" = torch.ops.aten.add.Tensor(pow_1, pow_2)'], "add"))
    r, c = 2048, 4096
    yield ("softmax 2048x4096", lambda x: torch.softmax(x * 0.125, dim=-1), [(r, c)],
           graph_text("softmax", [("x", (r, c))], [
               f'mul: "f32[{r}, {c}]" = torch.ops.aten.mul.Tensor(x, 0.125)',
               f'_softmax: "f32[{r}, {c}]" = torch.ops.aten._softmax.default(mul, -1, False)'], "_softmax"))
    b, s, h = 2, 1024, 1024
    w = torch.randn(h)
    bias = torch.randn(h)

    def ln_gelu(x, w, bias):
        return torch.nn.functional.gelu(torch.nn.functional.layer_norm(x, (h,), w, bias))
    yield ("layernorm+gelu 2x1024x1024", ln_gelu, [(b, s, h), (h,), (h,)],
           graph_text("ln", [("x", (b, s, h)), ("w", (h,)), ("bias", (h,))], [
               f'native_layer_norm = torch.ops.aten.native_layer_norm.default(x, [{h}], w, bias, 1e-05)',
               f'getitem: "f32[{b}, {s}, {h}]" = native_layer_norm[0]',
               f'gelu: "f32[{b}, {s}, {h}]" = torch.ops.aten.gelu.default(getitem)'], "gelu"))


EXTERNAL = ["--external-compiler"]


def ours(cli, model, extra, tmp):
    report = os.path.join(tmp, "report.json")
    cmd = [cli, "compile", model, "--quiet", "--report", report] + EXTERNAL + extra
    # A fresh compile cache each time: the compile column is a cold compile.
    env = dict(os.environ, LOWERSCOPE_CACHE_DIR=tempfile.mkdtemp(dir=tmp))
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = (time.perf_counter() - t0) * 1e3
    if p.returncode not in (0, 1) or not os.path.exists(report):
        return None, None, f"rc={p.returncode}: {p.stderr.strip()[:200]}"
    r = json.load(open(report))
    status = "ok" if r["check"]["ok"] else "check failed: " + p.stderr.strip().splitlines()[-1][:160]
    os.remove(report)
    return r["run_ms"], r["compile_ms"], status


def torch_side(fn, inputs):
    eager = median_ms(lambda: fn(*inputs))
    if not hasattr(torch, "compile"):  # Debian 12's torch 1.13: eager only
        return eager, None, None
    torch._dynamo.reset()
    compiled = torch.compile(fn)
    t0 = time.perf_counter()
    compiled(*inputs)
    compile_ms = (time.perf_counter() - t0) * 1e3
    return eager, median_ms(lambda: compiled(*inputs)), compile_ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--out")
    ap.add_argument("--in-process", action="store_true", help="compile with the in-process Clang JIT (default: external c++)")
    ap.add_argument("--only", help="run only the cases whose name contains this text")
    args = ap.parse_args()
    wanted = lambda name: not args.only or args.only in name  # noqa: E731
    if args.in_process:
        EXTERNAL.clear()
    torch.manual_seed(0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        with torch.no_grad():
            for name, fn, shapes, text in synthetic_cases():
                if not wanted(name):
                    continue
                path = os.path.join(tmp, name.split()[0].replace("+", "_") + ".txt")
                open(path, "w").write(text)
                inputs = [torch.randn(*s) for s in shapes]
                e, c, cms = torch_side(fn, inputs)
                o, oms, status = ours(args.cli, path, [], tmp)
                rows.append((name, e, c, o, cms, oms, status))
                print(rows[-1], flush=True)
            for m, (model, shape) in fixture_models().items():
                if not wanted(m):
                    continue
                model.eval()
                graph = os.path.join(REPO, "tests", "data", "stages", m, "3_core_aten.txt")
                x = torch.randn(*shape)
                e, c, cms = torch_side(model, [x])
                o, oms, status = ours(args.cli, graph, [], tmp)
                rows.append((m, e, c, o, cms, oms, status))
                print(rows[-1], flush=True)
        for m, (model, shape) in fixture_models().items():
            if m == "mobilenet_v3_small" or not wanted(m + " train"):
                continue  # inference only in the fixtures
            graph = os.path.join(REPO, "tests", "data", "stages", m, "3_core_aten.txt")
            x = torch.randn(*shape, requires_grad=True)

            def step(x, model=model):
                model.zero_grad(set_to_none=True)
                model(x).sum().backward()
            e = median_ms(lambda: step(x))
            c = cms = None
            if hasattr(torch, "compile"):
                torch._dynamo.reset()
                cm = torch.compile(model)

                def cstep(x):
                    cm.zero_grad(set_to_none=True)
                    cm(x).sum().backward()
                t0 = time.perf_counter()
                cstep(x)
                cms = (time.perf_counter() - t0) * 1e3
                c = median_ms(lambda: cstep(x))
            o, oms, status = ours(args.cli, graph, ["--train"], tmp)
            rows.append((m + " train", e, c, o, cms, oms, status))
            print(rows[-1], flush=True)

    def f(v, p=3):
        return "-" if v is None else f"{v:.{p}f}"
    out = ["| case | eager ms | torch.compile ms | Lowerscope ms | ours / Inductor | ours / eager | Inductor compile ms | Lowerscope compile ms | check |",
           "|---|---|---|---|---|---|---|---|---|"]
    for name, e, c, o, cms, oms, status in rows:
        ratio = "-" if o is None or c is None else f"{o / c:.2f}x"
        ratio_e = "-" if o is None else f"{o / e:.2f}x"
        out.append(f"| {name} | {f(e)} | {f(c)} | {f(o)} | {ratio} | {ratio_e} | {f(cms, 0)} | {f(oms, 0)} | {status} |")
    head = (f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
            f"{os.cpu_count()} CPUs; {os.uname().nodename}")
    text = head + "\n\n" + "\n".join(out) + "\n"
    print(text)
    if args.out:
        open(args.out, "w").write(text)


if __name__ == "__main__":
    sys.exit(main())
