#!/usr/bin/env bash
# Kernel counts per fixture model, ours next to Inductor's (PyTorch 2.11), as a Markdown table.
#   tools/kernel-counts.sh FIXTURES_DIR      (e.g. ../shared/fixtures/torch-2.11)
# Ours: lowerscope-cli on each case's model.pt2 (inference, CPU scheduling). Inductor's: the table
# in the fixtures' README ("generated kernels k / extern library calls x").
set -euo pipefail
FIX="$(realpath "${1:?usage: tools/kernel-counts.sh FIXTURES_DIR}")"
cd "$(dirname "$0")/.."
CLI=build/app/lowerscope-cli
[ -x "$CLI" ] || tools/build.sh
echo "| case | Lowerscope (infer, cpu) | Inductor infer cpu | Inductor infer cuda | compile ms |"
echo "|---|---|---|---|---|"
for dir in "$FIX"/*/; do
  case=$(basename "$dir")
  [ -f "$dir/model.pt2" ] || continue
  report=$(mktemp)
  if "$CLI" compile "$dir/model.pt2" --no-run --quiet --report "$report" >/dev/null 2>&1; then
    ours=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('%dk/%dx' % (r['generated_kernels'], r['extern_kernels']))" "$report")
    ms=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('%.0f' % r['compile_ms'])" "$report")
  else
    ours="failed"; ms="-"
  fi
  rm -f "$report"
  row=$(grep -E "^\| $case \|" "$FIX/README.md" | tail -1 || true)
  cpu=$(echo "$row" | awk -F'|' '{gsub(/ /,"",$3); print $3}')
  cuda=$(echo "$row" | awk -F'|' '{gsub(/ /,"",$4); print $4}')
  echo "| $case | $ours | ${cpu:--} | ${cuda:--} | $ms |"
done
