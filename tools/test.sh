#!/usr/bin/env bash
# Builds everything and runs all tests (ctest: core, import, cpu, gui on the offscreen platform,
# autodiff, cuda: NVRTC compiles every fixture to PTX here, and runs it where there is a GPU),
# then builds everything again with clang, AddressSanitizer and UBSan (build-fuzz/) and runs the
# suite there too (not the zoo or the CUDA tests: see below), with the parsers' fuzz corpus replayed (tests/sanitizer_options.cpp: the
# sanitizers' options and suppressions).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh
# As many tests at once as there are cores (each is its own process; the longest start first:
# their COST in tests/CMakeLists.txt).
jobs=$(nproc)
ctest --test-dir build --output-on-failure -j"$jobs"
# The whole suite and the parsers' fuzz corpus under AddressSanitizer and UBSan (a separate clang build).
# Without libFuzzer's coverage instrumentation (LOWERSCOPE_FUZZ_COVERAGE): the corpus is replayed,
# not fuzzed (tools/fuzz.sh fuzzes, in a build of its own with it).
cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 -DLOWERSCOPE_FUZZ=ON -DLOWERSCOPE_FUZZ_COVERAGE=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz
# Qt Test stops a test function after 5 minutes; the sanitizers slow some past that.
# The model zoo's CI subset (label zoo: each model's compile through the CLI) runs in the plain build
# only: under the sanitizers it would take longer than the rest together; its parsers' inputs are
# in the fuzz corpora. The CUDA tests are not in this build (tests/CMakeLists.txt): without a GPU
# they are NVRTC's compiles, and the replay test runs the CUDA code generator on every fixture here.
# An hour a test (ctest's default is 25 minutes): under the sanitizers, beside another test, the CPU
# test took 23 minutes on a loaded 2-core machine.
QTEST_FUNCTION_TIMEOUT=1800000 ctest --test-dir build-fuzz --output-on-failure -j"$jobs" --timeout 3600 -LE zoo
