#!/usr/bin/env bash
# Session 25's second GPU call: build, the whole CUDA suite (worker process, flash attention),
# the bf16 benchmark of the attention models, conformance under PyTorch.
set -uo pipefail
cd "$(dirname "$0")/../.."
O=${OUT:-/tmp/out}; mkdir -p "$O"
SECONDS=0
tools/gpu/build.sh > "$O/build.txt" 2>&1 || { tail -40 "$O/build.txt"; exit 2; }
echo "built at ${SECONDS}s"
tools/gpu/conformance.sh "$O" > "$O/conformance.txt" 2>&1; echo "conformance exit $? at ${SECONDS}s"
LS_TEST_DATA=$PWD/build-gpu/data timeout 200 build-gpu/tests/cuda/test_cuda > "$O/test_cuda.txt" 2>&1
echo "test_cuda exit $? at ${SECONDS}s"; grep -E "^FAIL|Totals|XFAIL|SKIP" "$O/test_cuda.txt" | head -30
timeout $((540 - SECONDS)) python3 tools/gpu/cuda_bench.py --cli build-gpu/app/lowerscope-cli --dtype bfloat16 \
  --only "transformer,decoder" --out "$O/bench-bf16.md" --kernels "$O/kernels-bf16.md" > "$O/bench.txt" 2>&1
echo "bench exit $? at ${SECONDS}s"; tail -15 "$O/bench-bf16.md" 2>/dev/null || tail -20 "$O/bench.txt"
head -40 "$O/conformance.txt"
