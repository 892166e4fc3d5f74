#!/usr/bin/env python3
"""Dynamic shapes against static shapes, kernel by kernel, on the fixture graphs.

For each graph: a static compile and a dynamic compile (--dynamic) at the traced sizes; each
generated kernel's median time in both (the same kernel, fused the same way: the dynamic one takes
its sizes as arguments), the compile times, and what a new batch size costs the dynamic program
(--at s0=N: the front half and the template check, no compile). Usage:
  python3 tools/bench/dynamic.py --cli build/app/lowerscope-cli [--external-compiler] [--out FILE.md]
"""
import argparse, json, math, os, re, subprocess, sys, tempfile

GRAPHS = ["mlp", "softmax", "layernorm_gelu", "attn_block", "cifar_net", "res_block", "mobilenet_v3_small"]


def compile_report(cli, graph, extra):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = subprocess.run([cli, "compile", graph, "--no-reference", "--report", f.name] + extra,
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError("%s %s: %s" % (graph, extra, p.stderr.strip()[-400:]))
        return json.load(open(f.name)), p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default="build/app/lowerscope-cli")
    ap.add_argument("--external-compiler", action="store_true")
    ap.add_argument("--out")
    a = ap.parse_args()
    extra = ["--external-compiler"] if a.external_compiler else []
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data", "stages")
    rows = []
    for name in GRAPHS:
        g = os.path.join(root, name, "3_core_aten.txt")
        st, _ = compile_report(a.cli, g, extra)
        dy, out = compile_report(a.cli, g, extra + ["--dynamic", "--at", "s0=3"])
        sk = {k["name"]: k["ms"] for k in st["kernels"] if k["kind"] == "generated"}
        dk = {k["name"]: k["ms"] for k in dy["kernels"] if k["kind"] == "generated"}
        ratios = [dk[n] / sk[n] for n in sk if n in dk and sk[n] > 0]
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else float("nan")
        ds = re.search(r"dynamic shapes: (\d+ of \d+) size symbols dynamic", out)
        m = re.search(r"front half and check ([\d.]+) ms", out)
        reuse = m.group(1) + " ms" if m else re.search(r"s0=3: (.*)", out).group(1)[:80]
        rows.append((name, len(sk), len(dk), sum(sk.values()), sum(dk.values()), geo, max(ratios) if ratios else float("nan"),
                     st["run_ms"], dy["run_ms"], st["compile_ms"], dy["compile_ms"], reuse,
                     ds.group(1) if ds else "?"))
    lines = ["| graph | kernels (static/dynamic) | generated kernels, static ms | dynamic ms | geomean ratio | max ratio | "
             "whole model static ms | dynamic ms | compile static ms | dynamic ms | new batch s0=3 (no compile) | symbols dynamic |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append("| %s | %d / %d | %.4f | %.4f | %.3f | %.3f | %.4f | %.4f | %.0f | %.0f | %s | %s |" % r)
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        open(a.out, "w").write(text)


if __name__ == "__main__":
    sys.exit(main())
