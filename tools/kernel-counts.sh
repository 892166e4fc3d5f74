#!/usr/bin/env bash
# Kernel counts per compiled graph, ours next to Inductor's (PyTorch 2.11), as a Markdown table:
#   tools/kernel-counts.sh FIXTURES_DIR            (e.g. ../shared/fixtures/torch-2.11)
# (tools/kernel_counts.py: CPU and CUDA scheduling, inference and training graph by graph,
# Inductor's counts read from its dumps by tools/inductor-counts.py.)
#   tools/kernel-counts.sh --saved FIXTURES_DIR    the tensors each partitioner saves for the
# backward, next to the number PyTorch's partitioned forward (2_aot_forward_0.txt) returns.
set -euo pipefail
export LOWERSCOPE_CACHE_DIR=off  # compile times are cold compiles
SAVED=0
if [ "${1:-}" = "--saved" ]; then SAVED=1; shift; fi
FIX="$(realpath "${1:?usage: tools/kernel-counts.sh [--saved] FIXTURES_DIR}")"
cd "$(dirname "$0")/.."
CLI=build/app/lowerscope-cli
[ -x "$CLI" ] || tools/build.sh
if [ $SAVED = 0 ]; then
  exec python3 tools/kernel_counts.py "$CLI" "$FIX"
fi
echo "| case | saved tensors min-cut / default / PyTorch |"
echo "|---|---|"
for dir in "$FIX"/*/; do
  case=$(basename "$dir")
  [ -f "$dir/model.pt2" ] && [ -f "$dir/2_aot_forward_0.txt" ] || continue
  [ "$case" = mobilenet_v3_small ] && continue  # inference only in the fixtures
  report=$(mktemp)
  if "$CLI" compile "$dir/model.pt2" --train --no-run --quiet --report "$report" >/dev/null 2>&1; then
    saved=$(python3 -c "
import json,sys; r=json.load(open(sys.argv[1]))['training']['partitioners']
ret=[l for l in open(sys.argv[2]) if 'return (' in l][-1]
print('%d / %d / %d' % (len(r['min_cut']['saved']), len(r['default']['saved']), ret.count(',') + 1 - 1))" "$report" "$dir/2_aot_forward_0.txt")
  else
    saved="failed"
  fi
  rm -f "$report"
  echo "| $case | $saved |"
done
