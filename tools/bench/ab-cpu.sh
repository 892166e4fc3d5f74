#!/usr/bin/env bash
# Two builds of lowerscope-cli side by side on this machine's CPU (the GPU machine's 16 cores):
# this tree and an earlier commit's tree (a `git archive` tarball), each compiling the same fixture
# graphs with the external compiler, alternating A and B runs; prints every run's whole-model time
# and the median per kernel, so a change to the CPU backend is measured against its parent in one
# command. Needs the nlohmann headers in .carry/include.
#   git archive OLD -o .carry/old.tar            (here)
#   tools/bench/ab-cpu.sh .carry/old.tar CASE [CASE...] [--train]   (there; CASE: tests/data/stages/<CASE>)
set -euo pipefail
cd "$(dirname "$0")/../.."
OLD_TAR=$1; shift
TRAIN=""
CASES=()
for a in "$@"; do [ "$a" = --train ] && TRAIN=--train || CASES+=("$a"); done
OLD=$PWD/build-ab-old-src  # a fixed place: the old build folder's CMake cache names it
rm -rf "$OLD" && mkdir -p "$OLD" && tar -xf "$OLD_TAR" -C "$OLD"
build() {  # $1 source tree, $2 build dir
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOWERSCOPE_GUI=OFF -DLOWERSCOPE_TESTS=OFF \
    -DLOWERSCOPE_JSON_INCLUDE="$PWD/.carry/include" > /dev/null
  cmake --build "$2" --target lowerscope-cli > /dev/null
}
build . build-ab-new & build "$OLD" build-ab-old & wait
for c in "${CASES[@]}"; do
  for round in 1 2 3; do
    for side in old new; do
      build-ab-$side/app/lowerscope-cli compile "tests/data/stages/$c/3_core_aten.txt" $TRAIN --quiet --report "build-ab-$side/r.json" > /dev/null
      python3 - "$c${TRAIN:+ train}" "$side" "build-ab-$side/r.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[3]))
ks = "  ".join("%s %s %.3f" % (k["name"], k.get("how", ""), k["ms"]) for k in r["kernels"] if k["ms"] >= 0.01 or k.get("how") == "epilogue")
print("%-24s %s  run %.3f ms  compile %.0f ms  | %s" % (sys.argv[1], sys.argv[2], r["run_ms"], r["compile_ms"], ks))
PY
    done
  done
done
