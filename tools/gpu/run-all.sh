#!/usr/bin/env bash
# One command for a GPU-machine session: the CUDA test suite, then the benchmark against PyTorch.
#   tools/gpu/run-all.sh OUT_DIR [FIXTURES_DIR] [--quick]
# BENCH_SECONDS (default 420) bounds the benchmark; its log is written as it goes.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:?usage: tools/gpu/run-all.sh OUT_DIR [FIXTURES_DIR] [--quick]}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt" 2>&1
SECONDS=0
tools/gpu/test-cuda.sh "${2:-}" > "$OUT/test-cuda.txt" 2>&1
echo "test-cuda exit $? after ${SECONDS}s" >> "$OUT/test-cuda.txt"
timeout "${BENCH_SECONDS:-420}" python3 -u tools/gpu/cuda_bench.py --cli build-gpu/app/lowerscope-cli --out "$OUT/bench.md" \
  --kernels "$OUT/kernels.md" ${3:-} > "$OUT/bench-log.txt" 2>&1
echo "bench exit $? after ${SECONDS}s" >> "$OUT/bench-log.txt"
