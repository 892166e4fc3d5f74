#!/usr/bin/env python3
"""Checks that every file of core/ includes only headers of its own layer or of layers below it.

The layers and what each may use are core/CMakeLists.txt's ls_layer() calls, written to
build/core/layers.txt at configure time; each layer links only the layers it names, so a call
into a layer above fails to link, and this check fails on the include itself.

  tools/check-layers.py build/core/layers.txt core
"""
import os
import re
import sys


def read_layers(path):
    layers = {}
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        name, rest = line.split(":", 1)
        fields = {}
        for part in rest.split(";"):
            key, _, value = part.strip().partition(" ")
            fields[key] = value.split()
        layers[name] = fields
    return layers


def allowed(layers, name, seen=None):
    """The layer itself and every layer it reaches through its deps."""
    seen = set() if seen is None else seen
    if name in seen:
        return seen
    seen.add(name)
    for d in layers.get(name, {}).get("deps", []):
        allowed(layers, d, seen)
    return seen


def main():
    layers_file, core = sys.argv[1], sys.argv[2]
    layers = read_layers(layers_file)
    by_dir, by_file = {}, {}
    for name, f in layers.items():
        for d in f.get("dirs", []):
            by_dir[d] = name
        for src in f.get("files", []):
            by_file[src] = name
            by_file[os.path.splitext(src)[0] + ".h"] = name

    def layer_of(rel):
        if rel in by_file:
            return by_file[rel]
        return by_dir.get(os.path.dirname(rel))

    passed = failed = 0
    unowned = []
    for root, _, files in os.walk(core):
        for f in sorted(files):
            if not f.endswith((".cpp", ".h")):
                continue
            rel = os.path.relpath(os.path.join(root, f), core)
            if rel.startswith("script" + os.sep) and "script" not in layers:
                continue
            mine = layer_of(rel)
            if mine is None:
                unowned.append(rel)
                continue
            ok_layers = allowed(layers, mine)
            bad = []
            for n, line in enumerate(open(os.path.join(root, f), errors="replace"), 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+/[^"]+)"', line)
                if not m:
                    continue
                target = layer_of(m.group(1))
                if target is None:
                    if os.path.exists(os.path.join(core, m.group(1))):
                        bad.append(f"{rel}:{n}: includes {m.group(1)}, which no layer owns")
                    continue  # a header outside core (clang/, llvm/, onnx/)
                if target not in ok_layers:
                    uses = ", ".join(sorted(ok_layers - {mine})) or "nothing of core"
                    bad.append(f"{rel}:{n}: includes {m.group(1)} (layer {target}), but {mine} may use only {uses}")
            if bad:
                failed += 1
                print("\n".join(bad))
            else:
                passed += 1
    for rel in unowned:
        print(f"{rel}: in no layer (add its folder to an ls_layer() in core/CMakeLists.txt)")
        failed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
