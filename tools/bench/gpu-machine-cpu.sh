#!/usr/bin/env bash
# Runs the CPU benchmark on the GPU machine (Ubuntu, g++, CMake, PyTorch; no LLVM headers, Qt or
# nlohmann-json there): builds lowerscope-cli with the external compiler path, then times PyTorch
# eager, torch.compile and Lowerscope side by side. Needs the nlohmann headers carried in
# .carry/include (cp -r /usr/include/nlohmann .carry/include/ here; .carry is ignored by git).
#   tools/bench/gpu-machine-cpu.sh [OUT.md]
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOWERSCOPE_GUI=OFF -DLOWERSCOPE_TESTS=OFF \
  -DLOWERSCOPE_JSON_INCLUDE="$PWD/.carry/include" > /dev/null
cmake --build build-bench --target lowerscope-cli > /dev/null
python3 tools/bench/cpu_bench.py --cli build-bench/app/lowerscope-cli ${1:+--out "$1"}
