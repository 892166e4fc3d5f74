#!/usr/bin/env python3
"""The CPU executor's own time between kernels (issue 11: "on CPU the least possible wrapper
overhead between kernels"): a chain of N unfused elementwise ops on 64 floats, each its own
kernel too small to be parallel, run by lowerscope-cli; the whole model's median against the sum
of its kernels' medians, per kernel.

    python3 tools/bench/cpu_host_overhead.py --cli build/app/lowerscope-cli [--ops 40] [--runs 3]
"""
import argparse, json, os, subprocess, tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--cli", required=True)
ap.add_argument("--ops", type=int, default=40)
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--external-compiler", action="store_true")
args = ap.parse_args()

with tempfile.TemporaryDirectory() as tmp:
    graph = os.path.join(tmp, "chain.txt")
    lines = ["class GraphModule(torch.nn.Module):", '    def forward(self, x: "f32[64]"):']
    prev = "x"
    for i in range(args.ops):
        lines.append(f'        t{i}: "f32[64]" = torch.ops.aten.{["sin", "cos", "neg", "abs"][i % 4]}.default({prev})')
        prev = f"t{i}"
    lines.append(f"        return ({prev},)")
    open(graph, "w").write("\n".join(lines) + "\n")
    report = os.path.join(tmp, "r.json")
    extra = ["--external-compiler"] if args.external_compiler else []
    for _ in range(args.runs):
        subprocess.run([args.cli, "compile", graph, "--no-fusion", "--no-reference", "--quiet", "--report", report] + extra,
                       check=True, capture_output=True)
        r = json.load(open(report))
        ks = r["kernels"]
        inside = sum(k["ms"] for k in ks)
        print(f"{len(ks)} kernels: whole run {r['run_ms'] * 1e3:.2f} us, the kernels' own {inside * 1e3:.2f} us; "
              f"per kernel {r['run_ms'] / len(ks) * 1e6:.0f} ns, of which outside the kernels {(r['run_ms'] - inside) / len(ks) * 1e6:.0f} ns")
