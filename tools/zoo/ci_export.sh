#!/usr/bin/env bash
# The zoo's CI subset (tests/data/zoo/README.md), in two steps:
#   tools/zoo/ci_export.sh export [DIR]    on the GPU machine (PyTorch 2.11, transformers, timm, torchvision,
#                                          onnx, onnxscript, onnxruntime; no GPU needed): zoo.py export --ci
#                                          into DIR (default $OUT/zoo), ZOO_JOBS processes at once (8),
#                                          none started after ZOO_BUDGET seconds (480); prints ci.json's
#                                          account (kept, sizes, left out and why)
#   tools/zoo/ci_export.sh install FROM    here: tests/data/zoo's model folders and ci.json replaced by
#                                          FROM's (README.md kept, files made writable), sizes printed;
#                                          then `cmake build` (the tests are globbed at configure time) and
#                                          `cd build && ctest -L zoo -j2`
set -euo pipefail
cd "$(dirname "$0")/../.."
usage="usage: tools/zoo/ci_export.sh export [DIR] | install FROM"
summary() {  # $1: a folder holding ci.json
  python3 - "$1" <<'EOF'
import json, os, sys
d = json.load(open(os.path.join(sys.argv[1], "ci.json")))
for n in d["kept"]:
    s = d["models"][n]
    print(f"  kept {n}: {s.get('kb', 0):.0f} KB (pt2 {s.get('export')}, onnx {s.get('onnx')}, grads {s.get('grads')}, "
          f"float64 {s.get('float64')})")
for n, why in d["left_out"].items():
    print(f"  {n}: {why}")
print(f"{len(d['kept'])} models kept, {d.get('total_kb', 0):.0f} KB; {len(d['left_out'])} left out")
EOF
}
case "${1:-}" in
  export)
    dir=${2:-${OUT:?export needs DIR or \$OUT}/zoo}
    mkdir -p "$dir"
    PYTHONUNBUFFERED=1 python3 tools/zoo/zoo.py export --ci --out "$dir" --jobs "${ZOO_JOBS:-8}" --budget "${ZOO_BUDGET:-480}" \
      > "$dir/../ci_export.log" 2>&1 || { tail -40 "$dir/../ci_export.log"; exit 1; }
    summary "$dir"
    du -sh "$dir"
    ;;
  install)
    from=${2:?$usage}
    [ -f "$from/ci.json" ] || { echo "$from has no ci.json (tools/zoo/ci_export.sh export writes it)" >&2; exit 1; }
    dst=tests/data/zoo
    mkdir -p "$dst"
    for d in "$dst"/*/; do  # earlier exports (a folder with summary.json), nothing else
      [ -f "$d/summary.json" ] && rm -rf "$d"
    done
    rm -f "$dst/ci.json"
    for d in "$from"/*/; do
      [ -f "$d/summary.json" ] && cp -r "$d" "$dst/"
    done
    cp "$from/ci.json" "$dst/"
    chmod -R u+w "$dst"
    summary "$dst"
    du -sh "$dst"
    echo "next: cmake build && (cd build && ctest -L zoo -j2); git add $dst"
    ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
