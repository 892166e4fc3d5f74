#!/usr/bin/env python3
"""How many NVRTC modules max-autotune's rounds of candidates should compile at once: our
--mode max-autotune compile (fresh cache, a new process) of bench_max_autotune's cases, with
LOWERSCOPE_COMPILE_THREADS alternating over the given values ("default": unset), in rounds.

    python3 tools/gpu/ab_tuning_threads.py --cli build-gpu/app/lowerscope-cli [--only TEXT] [--values 16,default] [--rounds 3]
"""
import argparse, os, re, statistics, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_max_autotune  # noqa: E402
import cuda_bench  # noqa: E402
import torch  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--only", default="sincos,softmax,layernorm")
    ap.add_argument("--values", default="16,default")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    only = a.only.split(",")
    folders = []
    for name, model, shapes in bench_max_autotune.cases():
        if not any(o in name for o in only):
            continue
        torch.manual_seed(0)
        folder = os.path.join(tempfile.mkdtemp(), "case")
        cuda_bench.export_case(model.eval(), [torch.randn(*s) for s in shapes], folder)
        folders.append((name, folder))
    seen = {}
    for _ in range(a.rounds):
        for v in a.values.split(","):
            if v == "default":
                os.environ.pop("LOWERSCOPE_COMPILE_THREADS", None)
            else:
                os.environ["LOWERSCOPE_COMPILE_THREADS"] = v
            for name, folder in folders:
                _, compile_ms, status, r = cuda_bench.ours(a.cli, folder, ["--no-reference", "--mode", "max-autotune"])
                m = re.search(r"tuned in (\d+) ms \((\d+) NVRTC modules", (r or {}).get("mode_note", ""))
                tuning = int(m.group(1)) if m else None
                seen.setdefault((name, v), []).append((compile_ms, tuning))
                print(f"{name:28s} threads {v:>7}  compile {compile_ms or 0:7.0f} ms  tuning {tuning} ms  "
                      f"({m.group(2) if m else '?'} modules)  {status}", flush=True)
    print("\n| case | LOWERSCOPE_COMPILE_THREADS | compile ms (median) | tuning ms (median) | runs |")
    print("|---|---|---:|---:|---|")
    for (name, v), xs in seen.items():
        c = statistics.median(x[0] or 0 for x in xs)
        t = statistics.median(x[1] or 0 for x in xs)
        print(f"| {name} | {v} | {c:.0f} | {t:.0f} | {', '.join(str(x[1]) for x in xs)} |")


if __name__ == "__main__":
    main()
