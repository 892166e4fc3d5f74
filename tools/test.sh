#!/usr/bin/env bash
# Builds everything and runs all tests (ctest: core, import, cpu, gui on the offscreen platform,
# autodiff, cuda: NVRTC compiles every fixture to PTX here, and runs it where there is a GPU),
# then replays the fuzz corpus of every parser under AddressSanitizer and UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh
ctest --test-dir build --output-on-failure
# The parsers' fuzz corpus, replayed under AddressSanitizer and UBSan (a separate clang build).
cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 -DLOWERSCOPE_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz
ctest --test-dir build-fuzz --output-on-failure
