#!/usr/bin/env bash
# The OpInfo corpus on CUDA, on the GPU machine (issue 32, item 3): builds the CLI, test_cuda and
# test_opinfo without Qt (tools/gpu/build.sh), then runs tests/ops/test_opinfo.cpp with
# --device cuda: every sample on the reference interpreter, and one sample per op and dtype (every
# sample with LS_OPINFO_ALL=1) compiled for CUDA, run, and compared with PyTorch's outputs and
# gradients. Writes OUT/opinfo-results-cuda.md (the table) and OUT/cuda-results.tsv (the CUDA
# columns): copy the tsv to tests/data/opinfo/cuda-results.tsv and the CPU run's
# tests/data/opinfo/RESULTS.md (LS_OPINFO_UPDATE=1 build/tests/test_opinfo) shows them.
#   tools/gpu/opinfo-cuda.sh [OUT] [CORPUS_DIR]   (defaults: build-gpu, tests/data/opinfo)
# Needs the nlohmann headers in .carry/include (cp -r /usr/include/nlohmann .carry/include/).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:-build-gpu}
corpus=${2:-tests/data/opinfo}
tools/gpu/build.sh || exit 2
mkdir -p "$out"
./build-gpu/tests/cuda/test_opinfo --device cuda --data "$corpus" \
  --table "$out/opinfo-results-cuda.md" --tsv "$out/cuda-results.tsv"
