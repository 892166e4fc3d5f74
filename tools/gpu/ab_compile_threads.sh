#!/usr/bin/env bash
# How many NVRTC programs (and external compiler units) a compile should run at once: the
# transformer block (inference and training step) and attn_block's training step compiled for CUDA
# with the driver started, fresh caches, LOWERSCOPE_COMPILE_THREADS alternating over the given
# values ("cores" for the default, one a core), three rounds after one warm-up compile.
#   tools/gpu/ab_compile_threads.sh [VALUES...]      (default: cores 8 6 4)
# AB_EXTRA="MODEL..." adds models compiled for inference; AB_ROUNDS sets the rounds (3).
# Needs the nlohmann headers in .carry/include and PyTorch (to export the transformer block).
set -euo pipefail
cd "$(dirname "$0")/../.."
values=("${@:-cores 8 6 4}")
read -r -a values <<< "${values[*]}"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOWERSCOPE_GUI=OFF -DLOWERSCOPE_TESTS=OFF \
  -DLOWERSCOPE_JSON_INCLUDE="$PWD/.carry/include" > /dev/null
cmake --build build-gpu --target lowerscope-cli > /dev/null
CLI=$PWD/build-gpu/app/lowerscope-cli
TB=$(mktemp -d)/transformer_block
python3 - "$TB" <<'PY' || { echo "the transformer block could not be exported (no PyTorch?): left out"; TB=""; }
import sys
sys.path.insert(0, "tools/gpu"); sys.path.insert(0, "tools/bench")
import torch
from cuda_bench import export_case
from models import Attn
torch.manual_seed(0)
export_case(Attn(512, 8).eval(), [torch.randn(16, 512, 512)], sys.argv[1])
PY
one() {  # VALUE MODEL [options]
  local v=$1 m=$2; shift 2
  local d; d=$(mktemp -d)
  if [ "$v" = cores ]; then unset LOWERSCOPE_COMPILE_THREADS; else export LOWERSCOPE_COMPILE_THREADS=$v; fi
  LOWERSCOPE_CACHE_DIR=$d "$CLI" compile "$m" --device cuda --quiet --no-reference --no-run --cuda-started --report "$d/r.json" "$@" \
    > /dev/null 2>&1 || true
  python3 - "$d/r.json" "$v" "$(basename "$(dirname "$m")")/$(basename "$m") $*" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"threads {sys.argv[2]:>5}  {sys.argv[3]:<45} no report ({e})")
    sys.exit(0)
if "error" in r:
    print(f"threads {sys.argv[2]:>5}  {sys.argv[3]:<45} error: {r['error'].get('message', '')[:80]}")
    sys.exit(0)
model = [p for p in r.get("compile_phases", []) if "(model" in p["name"]]
parts = "; ".join(f"{p['name'].split('(')[-1].rstrip(')')} {p['ms']:.0f} ms summed" for p in model)
print(f"threads {sys.argv[2]:>5}  {sys.argv[3]:<45} compile {r['compile_ms']:7.1f} ms  {parts}")
PY
}
one cores tests/data/stages/attn_block/3_core_aten.txt > /dev/null  # NVRTC's libraries read from disk once
for round in $(seq "${AB_ROUNDS:-3}"); do
  for v in "${values[@]}"; do
    if [ -n "$TB" ]; then
      one "$v" "$TB"
      one "$v" "$TB" --train
    fi
    one "$v" tests/data/stages/attn_block/3_core_aten.txt --train
    for m in ${AB_EXTRA:-}; do one "$v" "$m"; done
  done
done
