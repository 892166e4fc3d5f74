#!/usr/bin/env bash
# Session 30: after the 16-byte half groups and cumsum's scan: all of test_cuda, then the bf16
# benchmark cases (tools/gpu/cuda_bench.py) -> $OUT/test_cuda.txt, $OUT/bench-bf16.md, $OUT/kernels-bf16.md
#   OUT=... ONLY="softmax,layernorm,transformer" tools/gpu/half-vectors-call.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
O=${OUT:-/tmp/out}; mkdir -p "$O"
SECONDS=0
tools/gpu/build.sh > "$O/build.txt" 2>&1 || { tail -40 "$O/build.txt"; exit 2; }
echo "built at ${SECONDS}s"
export LS_TEST_DATA=$PWD/build-gpu/data
if [ "${TESTS:-1}" = 1 ]; then
  timeout ${TEST_S:-330} build-gpu/tests/cuda/test_cuda ${CASE:-} > "$O/test_cuda.txt" 2>&1; echo "test_cuda exit $? at ${SECONDS}s"
  grep -E "^FAIL|Totals" -A3 "$O/test_cuda.txt" | head -40
fi
[ -n "${ONLY:-}" ] && timeout ${BENCH_S:-240} python3 tools/gpu/cuda_bench.py --cli build-gpu/app/lowerscope-cli --dtype bfloat16 \
  --only "$ONLY" --out "$O/bench-bf16.md" --kernels "$O/kernels-bf16.md" > "$O/bench.txt" 2>&1
[ -f "$O/bench-bf16.md" ] && cat "$O/bench-bf16.md"
echo "all done at ${SECONDS}s"
