#!/usr/bin/env python3
"""Compile time against graph size: each stage's time for graphs of N nodes, and the exponent
fitted to it (time ~ N^k, least squares on log-log between the sizes measured).

Graphs (FX text, as PyTorch prints them):
  chain  N pointwise ops in a row (relu, neg, sigmoid repeated) on a 16-element tensor
  wide   N/3 independent branches of three pointwise ops each off one input, summed pairwise
  transformer        N stacked transformer blocks (attention, LayerNorm, GELU MLP; N: layers)
  transformer-train  the same, its training step (--train)

  tools/bench/compile_scaling.py [--cli build/app/lowerscope-cli] [--sizes 2500,5000,10000,20000]
                                 [--graphs chain,wide] [--repeat R] [--out tools/bench/results-compile-scaling.md]

--repeat R compiles each size R times and keeps each column's smallest time (the whole command's
and each stage's): on a machine others share, the least disturbed of the runs.

Each compile runs with the disk cache off (LOWERSCOPE_CACHE_DIR=off) and without running the
kernels (--no-run), so what is timed is the compile alone. The machine and its cores are in the
table's header: compare only rows measured on the same machine.
"""
import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time

OPS = ["relu", "neg", "sigmoid"]


def chain(n):
    lines = ["class G(torch.nn.Module):", '    def forward(self, x: "f32[16]"):']
    prev = "x"
    for i in range(n):
        lines.append(f'        v{i}: "f32[16]" = torch.ops.aten.{OPS[i % 3]}.default({prev})')
        prev = f"v{i}"
    lines.append(f"        return ({prev},)")
    return "\n".join(lines) + "\n"


def wide(n):
    lines = ["class G(torch.nn.Module):", '    def forward(self, x: "f32[16]"):']
    ends = []
    for b in range(max(1, n // 3)):
        prev = "x"
        for k in range(3):
            name = f"b{b}_{k}"
            lines.append(f'        {name}: "f32[16]" = torch.ops.aten.{OPS[(b + k) % 3]}.default({prev})')
            prev = name
        ends.append(prev)
    i = 0
    while len(ends) > 1:  # a tree of adds, so every branch reaches the output
        nxt = []
        for a, b in zip(ends[0::2], ends[1::2]):
            name = f"s{i}"
            i += 1
            lines.append(f'        {name}: "f32[16]" = torch.ops.aten.add.Tensor({a}, {b})')
            nxt.append(name)
        if len(ends) % 2:
            nxt.append(ends[-1])
        ends = nxt
    lines.append(f"        return ({ends[0]},)")
    return "\n".join(lines) + "\n"


def transformer(layers, B=4, T=64, C=128, H=4):
    """A stack of `layers` pre-norm transformer blocks (attention with a causal mask, GELU MLP) as
    torch.export prints one (tests/data/stages/attn_block), the weights as parameters."""
    D = C // H
    params, body = [], []
    h = "x"
    for l in range(layers):
        p = f"p_l{l}_"
        for name, shape in (("ln1_weight", [C]), ("ln1_bias", [C]), ("qkv_weight", [3 * C, C]), ("qkv_bias", [3 * C]),
                            ("proj_weight", [C, C]), ("proj_bias", [C]), ("ln2_weight", [C]), ("ln2_bias", [C]),
                            ("fc1_weight", [4 * C, C]), ("fc1_bias", [4 * C]), ("fc2_weight", [C, 4 * C]), ("fc2_bias", [C])):
            params.append(f'{p}{name}: "f32[{", ".join(map(str, shape))}]"')
        t = lambda *s: '"f32[' + ", ".join(map(str, s)) + ']"'
        n = f"l{l}_"
        body += [
            f"{n}ln1: {t(B, T, C)} = torch.ops.aten.layer_norm.default({h}, [{C}], {p}ln1_weight, {p}ln1_bias, 1e-05, False)",
            f"{n}qkv: {t(B, T, 3 * C)} = torch.ops.aten.linear.default({n}ln1, {p}qkv_weight, {p}qkv_bias)",
            f"{n}split = torch.ops.aten.split.Tensor({n}qkv, {C}, 2)",
        ]
        for i, v in enumerate("qkv"):
            body += [f"{n}{v}0: {t(B, T, C)} = {n}split[{i}]",
                     f"{n}{v}1: {t(B, T, H, D)} = torch.ops.aten.view.default({n}{v}0, [{B}, {T}, {H}, {D}])",
                     f"{n}{v}: {t(B, H, T, D)} = torch.ops.aten.transpose.int({n}{v}1, 1, 2)"]
        body += [
            f"{n}att: {t(B, H, T, D)} = torch.ops.aten.scaled_dot_product_attention.default({n}q, {n}k, {n}v, None, 0.0, True)",
            f"{n}att1: {t(B, T, H, D)} = torch.ops.aten.transpose.int({n}att, 1, 2)",
            f"{n}att2: {t(B, T, C)} = torch.ops.aten.view.default({n}att1, [{B}, {T}, {C}])",
            f"{n}proj: {t(B, T, C)} = torch.ops.aten.linear.default({n}att2, {p}proj_weight, {p}proj_bias)",
            f"{n}res1: {t(B, T, C)} = torch.ops.aten.add.Tensor({h}, {n}proj)",
            f"{n}ln2: {t(B, T, C)} = torch.ops.aten.layer_norm.default({n}res1, [{C}], {p}ln2_weight, {p}ln2_bias, 1e-05, False)",
            f"{n}fc1: {t(B, T, 4 * C)} = torch.ops.aten.linear.default({n}ln2, {p}fc1_weight, {p}fc1_bias)",
            f"{n}gelu: {t(B, T, 4 * C)} = torch.ops.aten.gelu.default({n}fc1)",
            f"{n}fc2: {t(B, T, C)} = torch.ops.aten.linear.default({n}gelu, {p}fc2_weight, {p}fc2_bias)",
            f"{n}res2: {t(B, T, C)} = torch.ops.aten.add.Tensor({n}res1, {n}fc2)",
        ]
        h = f"{n}res2"
    head = "class GraphModule(torch.nn.Module):\n    def forward(self, " + ", ".join(params + [f'x: "f32[{B}, {T}, {C}]"']) + "):\n"
    return head + "".join("        " + line + "\n" for line in body) + f"        return ({h},)\n"


def fit(ns, ts):
    pts = [(math.log(n), math.log(t)) for n, t in zip(ns, ts) if t > 0]
    if len(pts) < 2:
        return float("nan")
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx if sxx else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default="build/app/lowerscope-cli")
    ap.add_argument("--sizes", default="2500,5000,10000,20000")
    ap.add_argument("--graphs", default="chain,wide")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    env = dict(os.environ, LOWERSCOPE_CACHE_DIR="off")
    rep = f" --repeat {a.repeat}" if a.repeat > 1 else ""
    out = [f"# Compile time against graph size\n",
           f"Command: `tools/bench/compile_scaling.py --sizes {a.sizes} --graphs {a.graphs}{rep}`  ",
           f"Machine: {platform.node()}, {os.cpu_count()} cores, {platform.processor() or platform.machine()}; "
           f"{time.strftime('%Y-%m-%d')}\n"]
    for graph in a.graphs.split(","):
        make = {"chain": chain, "wide": wide, "transformer": transformer, "transformer-train": transformer}[graph]
        extra = ["--train"] if graph.endswith("-train") else []
        rows, stages = [], []
        with tempfile.TemporaryDirectory() as d:
            for n in sizes:
                path = os.path.join(d, f"{graph}{n}.txt")
                with open(path, "w") as f:
                    f.write(make(n))
                report = os.path.join(d, "r.json")
                wall, ms = None, {}
                for _ in range(max(1, a.repeat)):
                    t0 = time.time()
                    p = subprocess.run([a.cli, "compile", path, "--no-run", "--quiet", "--report", report] + extra, env=env,
                                       capture_output=True, text=True)
                    took = time.time() - t0
                    if p.returncode not in (0, 1):
                        sys.exit(f"{graph} {n}: {p.stderr.strip()}")
                    r = json.load(open(report))
                    wall = took if wall is None else min(wall, took)
                    for s in r["stages"]:
                        ms[s["name"]] = min(ms.get(s["name"], s["ms"]), s["ms"])
                stages = stages or [s["name"] for s in r["stages"]]
                nodes = next(s["nodes"] for s in r["stages"] if s["name"] == "capture")
                rows.append((n, nodes, wall, ms))
                print(f"{graph} {n}: {wall:.2f} s", file=sys.stderr)
        out.append(f"\n## {graph}\n")
        out.append("| N | nodes | whole command (s) | " + " | ".join(f"{s} (ms)" for s in stages) + " |")
        out.append("|" + "---|" * (3 + len(stages)))
        for n, nodes, wall, ms in rows:
            out.append(f"| {n} | {nodes} | {wall:.2f} | " + " | ".join(f"{ms.get(s, 0):.0f}" for s in stages) + " |")
        ns = [r[0] for r in rows]
        exps = [f"{fit(ns, [r[2] for r in rows]):.2f}"] + [f"{fit(ns, [r[3].get(s, 0) for r in rows]):.2f}" for s in stages]
        out.append("| exponent | | " + " | ".join(exps) + " |")
    text = "\n".join(out) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
