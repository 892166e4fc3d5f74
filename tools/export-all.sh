#!/usr/bin/env bash
# Exports every fixture model as a package (lowerscope-cli export), inference and training step,
# builds it with CMake alone and runs it: its outputs against PyTorch's out.npy, and a training
# step's gradients against grad_in*.npy (the runner's own check).
#   tools/export-all.sh [FIXTURES_DIR] [OUT_DIR] [cpu|cuda]
#     (defaults: ../shared/fixtures/torch-2.11, /tmp/lowerscope-packages, cpu; $CLI: the lowerscope-cli to use)
# CUDA packages build with the CUDA toolkit and run on a GPU (the GPU machine: tools/gpu/run-all.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
FIX=${1:-../shared/fixtures/torch-2.11}
OUT=${2:-/tmp/lowerscope-packages}
DEVICE=${3:-cpu}
CLI=${CLI:-build/app/lowerscope-cli}
mkdir -p "$OUT"
echo "| model | export | build (s) | run (ms) | vs PyTorch |"
echo "|---|---|---:|---:|---|"
for d in "$FIX"/*/; do
  name=$(basename "$d")
  model="$d/model.pt2"
  [ -e "$model" ] || continue  # a file, or the GPU machine's unpacked folder
  for mode in "" --train; do
    row="$name${mode:+ train}"
    pkg="$OUT/$name${mode:+-train}"
    rm -rf "$pkg"
    if ! said=$($CLI export "$d" $mode --device "$DEVICE" --out "$pkg" 2>&1); then
      echo "| $row | refused: ${said#lowerscope-cli: } | | | |"
      continue
    fi
    t0=$(date +%s.%N)
    (cmake -S "$pkg" -B "$pkg/build" -G Ninja > "$pkg/build.log" 2>&1 && cmake --build "$pkg/build" >> "$pkg/build.log" 2>&1) || {
      echo "| $row | ok | build failed ($pkg/build.log) | | |"; continue; }
    t1=$(date +%s.%N)
    run=$("$pkg/build/run_model" 2>&1)
    ms=$(echo "$run" | sed -n 's/^run: \([0-9.]*\) ms.*/\1/p')
    check=$(echo "$run" | sed -n 's/.*vs expected\/\(out[0-9]*\).npy: max abs err \(.*\)/\1 \2/p' | paste -sd ';' - | sed 's/;/; /g')
    echo "| $row | ok | $(awk "BEGIN{printf \"%.1f\", $t1 - $t0}") | $ms | ${check:-no expected outputs} |"
  done
done
