#!/usr/bin/env bash
# The CUDA test suite, on the GPU machine (no Qt, LLVM headers, libzip or nlohmann-json there):
# builds lowerscope-cli and tests/cuda's test_cuda, runs test_cuda, then compiles and runs every
# fixture model on the GPU, inference and training, checked against PyTorch's out.npy and
# grad_in*.npy. .pt2 archives are unpacked into folders first (the build may lack libzip).
#   tools/gpu/test-cuda.sh [FIXTURES_DIR]     (FIXTURES_DIR: case folders with model.pt2 and *.npy)
# Needs the nlohmann headers in .carry/include (cp -r /usr/include/nlohmann .carry/include/).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
tools/gpu/build.sh || exit 2
CLI=$ROOT/build-gpu/app/lowerscope-cli

# A copy of a data folder with every model.pt2 unpacked into a folder of the same name.
unpacked() {
  local src=$1 dst=$2
  rm -rf "$dst" && cp -r "$src" "$dst"
  find "$dst" -name '*.pt2' -type f -not -path '*/bad/*' | while read -r f; do
    python3 -c "import sys, zipfile, os; f=sys.argv[1]; os.rename(f, f + '.zip'); zipfile.ZipFile(f + '.zip').extractall(f); os.remove(f + '.zip')" "$f"
  done
}

echo "== test_cuda"
LS_TEST_DATA=$ROOT/build-gpu/data ./build-gpu/tests/cuda/test_cuda
rc=$?

if [ -n "${1:-}" ]; then
  unpacked "$1" build-gpu/fixtures
  echo "== every fixture on the GPU (lowerscope-cli compile CASE --device cuda [--train])"
  for dir in build-gpu/fixtures/*/; do
    case=$(basename "$dir")
    [ -e "$dir/model.pt2" ] || continue
    for mode in "" --train; do
      [ "$case" = mobilenet_v3_small ] && [ -n "$mode" ] && continue
      out=$("$CLI" compile "$dir" --device cuda $mode --quiet --report build-gpu/r.json 2>&1)
      status=$?
      summary=$(python3 - build-gpu/r.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
c = r["check"]
outs = [o for o in c.get("outputs", [])]
grads = c.get("gradients", [])
print("%dk/%dx  run %.3f ms  compile %.0f ms  vs %s: max err %.2e%s" % (
    r["generated_kernels"], r["extern_kernels"], r.get("run_ms", 0), r.get("compile_ms", 0),
    ", ".join(sorted({o["against"] for o in outs + grads})) or "reference", c.get("max_abs_err", 0),
    "" if c["ok"] else "  FAILED"))
PY
)
      echo "$case ${mode:-infer}: exit $status  $summary"
      [ $status -eq 0 ] || { echo "$out" | tail -5; rc=1; }
    done
  done
fi
exit $rc
