#!/usr/bin/env bash
# Builds everything and runs all tests (ctest: core, cpu, gui on the offscreen platform).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh
ctest --test-dir build --output-on-failure
