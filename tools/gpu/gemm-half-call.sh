#!/usr/bin/env bash
# Session 30: the tensor-core GEMM templates (bf16/f16) on the GPU: test_cuda's template and
# max-autotune cases, then max-autotune in bfloat16 against Inductor's (tools/gpu/bench_max_autotune.py).
#   OUT=... ONLY="mlp,ffn" tools/gpu/gemm-half-call.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
O=${OUT:-/tmp/out}; mkdir -p "$O"
SECONDS=0
tools/gpu/build.sh > "$O/build.txt" 2>&1 || { tail -40 "$O/build.txt"; exit 2; }
echo "built at ${SECONDS}s"
export LS_TEST_DATA=$PWD/build-gpu/data
IFS='|' read -ra cases <<< "${CASES:-GEMM templates|max-autotune}"
for c in "${cases[@]}"; do timeout 300 build-gpu/tests/cuda/test_cuda "$c"; done > "$O/test_cuda.txt" 2>&1
grep -E "^FAIL|Totals|^   Loc|^PASS" "$O/test_cuda.txt" | head -40
echo "tests at ${SECONDS}s"
[ -n "${ONLY:-}" ] && timeout ${BENCH_S:-400} python3 tools/gpu/bench_max_autotune.py --cli build-gpu/app/lowerscope-cli --dtype ${DTYPE:-bfloat16} \
  --only "$ONLY" --out "$O/max-autotune-bf16.md" > "$O/bench.txt" 2>&1
[ -f "$O/max-autotune-bf16.md" ] && cat "$O/max-autotune-bf16.md"
grep -E "template|Error|error" "$O/bench.txt" | head -20
echo "all done at ${SECONDS}s"
