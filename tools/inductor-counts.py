#!/usr/bin/env python3
"""Inductor's kernel counts per graph, read from the fixtures' Inductor dumps (output_code.py).

  tools/inductor-counts.py FIXTURES_DIR > tests/data/inductor_counts.tsv

For each case, mode (infer/train) and device, and each graph Inductor compiled (inference,
forward, backward), counts the calls its wrapper makes in call(): distinct generated kernels
(Triton's `.run(` or the C++ `cpp_fused_*(`), extern library calls (`extern_kernels.*(`) and ATen
fallbacks (`torch.ops.aten.*(`: library calls Inductor runs eagerly, such as attention and
convolution_backward, which the fixtures' README table leaves out of its "x" column).
"""
import os
import re
import sys


def counts(path):
    src = open(path).read()
    body = src[src.index("def call(self, args):"):]
    body = body[: body.index("\n        return (") if "\n        return (" in body else len(body)]
    lines = [l for l in body.splitlines() if not l.strip().startswith("#")]
    text = "\n".join(lines)
    # Distinct kernels (the fixtures' README counts them so; a kernel may be launched twice).
    k = len(set(re.findall(r"^\s+(triton_\w+)\.run\(|^\s+(cpp_fused_\w+)\(", text, re.M)))
    x = len(re.findall(r"extern_kernels\.\w+\(", text))
    f = len(re.findall(r"torch\.ops\.aten\.\w+\.\w+\(", text))
    return k, x, f


def main():
    root = sys.argv[1]
    print("# case\tmode\tdevice\tgraph\tgenerated\textern\tfallback")
    for case in sorted(os.listdir(root)):
        for mode in ("infer", "train"):
            for dev in ("cpu", "cuda"):
                d = os.path.join(root, case, "5_inductor_%s_%s" % (mode, dev))
                if not os.path.isdir(d):
                    continue
                for g in sorted(os.listdir(d)):
                    p = os.path.join(d, g, "output_code.py")
                    if not os.path.exists(p):
                        continue
                    graph = "backward" if "_backward_" in g else "forward" if "_forward_" in g else "inference"
                    if mode == "infer":
                        graph = "inference"
                    k, x, f = counts(p)
                    print("%s\t%s\t%s\t%s\t%d\t%d\t%d" % (case, mode, dev, graph, k, x, f))


main()
