#!/usr/bin/env bash
# Process replay: `tools/replay.sh` checks that every fixture generates the sources held in
# tests/data/replay/; `tools/replay.sh update` rewrites them after an intended change (commit
# that on its own, so its diff is the change in the generated code). Needs a build (tools/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target lowerscope-replay >/dev/null
export LOWERSCOPE_CPU_TARGET=threads=16,pool=16,vector=16
exec build/tests/lowerscope-replay "${1:-check}" tests/data tests/data/replay
