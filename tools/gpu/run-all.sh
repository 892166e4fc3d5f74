#!/usr/bin/env bash
# One command for a GPU-machine session: the CUDA test suite, then the benchmark against PyTorch.
#   tools/gpu/run-all.sh OUT_DIR [FIXTURES_DIR] [--quick]
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:?usage: tools/gpu/run-all.sh OUT_DIR [FIXTURES_DIR] [--quick]}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt" 2>&1
tools/gpu/test-cuda.sh "${2:-}" 2>&1 | tee "$OUT/test-cuda.txt"
python3 tools/gpu/cuda_bench.py --cli build-gpu/app/lowerscope-cli --out "$OUT/bench.md" --kernels "$OUT/kernels.md" ${3:-} \
  2>&1 | tail -60 > "$OUT/bench-log.txt"
