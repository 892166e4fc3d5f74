#!/usr/bin/env bash
# Kernel counts per fixture model, ours next to Inductor's (PyTorch 2.11), as a Markdown table.
#   tools/kernel-counts.sh [--train] FIXTURES_DIR      (e.g. ../shared/fixtures/torch-2.11)
# Ours: lowerscope-cli on each case's model.pt2 (inference, CPU scheduling). Inductor's: the table
# in the fixtures' README ("generated kernels k / extern library calls x").
# With --train: training steps (forward + backward), and the tensors each partitioner saves next
# to the number PyTorch's partitioned forward (2_aot_forward_0.txt) returns.
set -euo pipefail
export LOWERSCOPE_CACHE_DIR=off  # compile times are cold compiles
TRAIN=0
if [ "${1:-}" = "--train" ]; then TRAIN=1; shift; fi
FIX="$(realpath "${1:?usage: tools/kernel-counts.sh [--train] FIXTURES_DIR}")"
cd "$(dirname "$0")/.."
CLI=build/app/lowerscope-cli
[ -x "$CLI" ] || tools/build.sh
# Inductor's count for a case from the fixtures' README table: inductor_count CASE COLUMN
# (columns: 3 infer cpu, 4 infer cuda, 5 train cpu, 6 train cuda).
inductor_count() {
  { grep -E "^\| $1 \|" "$FIX/README.md" || true; } | tail -1 | awk -F'|' -v c="$2" '{gsub(/ /,"",$c); print $c}'
}
# Our counts from a report: "12k/3x".
our_count() {
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('%dk/%dx' % (r['generated_kernels'], r['extern_kernels']))" "$1"
}
if [ $TRAIN = 1 ]; then
  echo "| case | Lowerscope (train, cpu) | Inductor train cpu | Inductor train cuda | saved tensors min-cut / default / PyTorch |"
  echo "|---|---|---|---|---|"
  for dir in "$FIX"/*/; do
    case=$(basename "$dir")
    [ -f "$dir/model.pt2" ] && [ -f "$dir/2_aot_forward_0.txt" ] || continue
    [ "$case" = mobilenet_v3_small ] && continue  # inference only in the fixtures
    report=$(mktemp)
    if "$CLI" compile "$dir/model.pt2" --train --no-run --quiet --report "$report" >/dev/null 2>&1; then
      ours=$(our_count "$report")
      saved=$(python3 -c "
import json,sys; r=json.load(open(sys.argv[1]))['training']['partitioners']
ret=[l for l in open(sys.argv[2]) if 'return (' in l][-1]
print('%d / %d / %d' % (len(r['min_cut']['saved']), len(r['default']['saved']), ret.count(',') + 1 - 1))" "$report" "$dir/2_aot_forward_0.txt")
    else
      ours="failed"; saved="-"
    fi
    rm -f "$report"
    cpu=$(inductor_count "$case" 5)
    cuda=$(inductor_count "$case" 6)
    echo "| $case | $ours | ${cpu:--} | ${cuda:--} | $saved |"
  done
  exit 0
fi
echo "| case | Lowerscope (infer, cpu) | Inductor infer cpu | Inductor infer cuda | compile ms |"
echo "|---|---|---|---|---|"
for dir in "$FIX"/*/; do
  case=$(basename "$dir")
  [ -f "$dir/model.pt2" ] || continue
  report=$(mktemp)
  if "$CLI" compile "$dir/model.pt2" --no-run --quiet --report "$report" >/dev/null 2>&1; then
    ours=$(our_count "$report")
    ms=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('%.0f' % r['compile_ms'])" "$report")
  else
    ours="failed"; ms="-"
  fi
  rm -f "$report"
  cpu=$(inductor_count "$case" 3)
  cuda=$(inductor_count "$case" 4)
  echo "| $case | $ours | ${cpu:--} | ${cuda:--} | $ms |"
done
