#!/usr/bin/env bash
# A short GPU call: build (tools/gpu/build.sh), then the test_cuda cases whose names contain each
# of $CASES (|-separated), then MODELS (paths under tests/data) compiled on CUDA with $ARGS sets
# (|-separated, e.g. "--dtype bfloat16|--dtype bfloat16 --train"), each checked against the reference.
#   OUT=... CASES="half convolutions|index_put" MODELS="zoo/timm_resnet10t/model.pt2" ARGS="--dtype bfloat16" tools/gpu/quick-check.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
O=${OUT:-/tmp/out}; mkdir -p "$O"
SECONDS=0
tools/gpu/build.sh > "$O/build.txt" 2>&1 || { tail -40 "$O/build.txt"; exit 2; }
echo "built at ${SECONDS}s"
IFS='|' read -ra cases <<< "${CASES:-}"
for c in "${cases[@]}"; do
  LS_TEST_DATA=$PWD/build-gpu/data timeout 200 build-gpu/tests/cuda/test_cuda "$c" 2>&1 | grep -E "^PASS|^FAIL|^SKIP|Totals|VERIFY|threw" | head -20
done
IFS='|' read -ra argsets <<< "${ARGS:-}"
for m in ${MODELS:-}; do
  for a in "${argsets[@]}"; do
    timeout 120 build-gpu/app/lowerscope-cli compile "build-gpu/data/$m" --device cuda $a > "$O/one.txt" 2>&1
    echo "$m $a: exit $? $(grep -E '^check|^compile:' "$O/one.txt" | tr '\n' ' ' | cut -c1-220)"
    grep -iE "fail|error|differ" "$O/one.txt" | head -5
  done
done
echo "all done at ${SECONDS}s"
