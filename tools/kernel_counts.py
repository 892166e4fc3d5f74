#!/usr/bin/env python3
"""Kernel counts per compiled graph, ours next to Inductor's (PyTorch 2.11), as a Markdown table.

  tools/kernel_counts.py CLI FIXTURES_DIR

For every fixture case (its model.pt2), inference and training, CPU and CUDA scheduling: our
generated kernels k and library calls x per graph (inference; training: forward, backward), and
Inductor's from its dumps (tools/inductor-counts.py): k / x + f, where f counts the ATen
fallbacks Inductor runs eagerly (attention, convolution_backward), library calls its "x" leaves
out. "within" when ours are no more on both (k <= k, x <= x + f). A training forward Inductor's
fixture has no dump of is shown without a verdict.
"""
import json
import os
import subprocess
import sys
import tempfile


def inductor(fix):
    out = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "inductor-counts.py"), fix],
                         check=True, capture_output=True, text=True).stdout
    rows = {}
    for line in out.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        case, mode, dev, graph, k, x, f = line.split("\t")
        rows.setdefault((case, mode, dev, graph), (int(k), int(x), int(f)))
    return rows


def ours(cli, model, train, dev):
    with tempfile.NamedTemporaryFile(suffix=".json") as rep:
        args = [cli, "compile", model, "--device", dev, "--no-run", "--quiet", "--report", rep.name] + (["--train"] if train else [])
        env = dict(os.environ, LOWERSCOPE_CACHE_DIR="off")
        if subprocess.run(args, capture_output=True, env=env).returncode != 0:
            return None
        r = json.load(open(rep.name))
    if not train:
        return {"inference": (r["generated_kernels"], r["extern_kernels"])}
    return {g: (v["generated"], v["extern"]) for g, v in r["kernels_per_phase"].items()}


def main():
    cli, fix = sys.argv[1], sys.argv[2]
    ind = inductor(fix)
    print("| case | graph | ours cpu | Inductor cpu | ours cuda | Inductor cuda |")
    print("|---|---|---|---|---|---|")
    for case in sorted(os.listdir(fix)):
        model = os.path.join(fix, case, "model.pt2")
        if not os.path.exists(model):
            continue
        for mode in ("infer", "train"):
            graphs = ["inference"] if mode == "infer" else ["forward", "backward"]
            if not any((case, mode, d, g) in ind for d in ("cpu", "cuda") for g in graphs):
                continue
            per_dev = {d: ours(cli, model, mode == "train", d) for d in ("cpu", "cuda")}
            for g in graphs:
                cells = []
                for d in ("cpu", "cuda"):
                    o = (per_dev[d] or {}).get(g)
                    i = ind.get((case, mode, d, g))
                    mine = "failed" if per_dev[d] is None else "%dk/%dx" % o if o else "-"
                    if i is None:
                        theirs = "no dump"
                    else:
                        ok = o is not None and o[0] <= i[0] and o[1] <= i[1] + i[2]
                        theirs = "%dk/%dx%s %s" % (i[0], i[1], " + %d" % i[2] if i[2] else "", "within" if ok else "**over**")
                    cells += [mine, theirs]
                print("| %s | %s | %s |" % (case, g if mode == "train" else "inference", " | ".join(cells)))


main()
