#!/usr/bin/env bash
# The embedded torch's conformance script under real PyTorch (issue 35, item 4): runs
# tests/data/script/conformance.py with python3 and the installed torch (2.11 on the GPU machine;
# CPU tensors, torch.compile with its default Inductor backend, which needs a C++ compiler; where
# Inductor cannot compile it runs again with CONFORMANCE_BACKEND=aot_eager, and says so) and
# diffs what it prints with tests/data/script/conformance.expected.txt, the text our torch prints
# (test_script's testConformanceWithPyTorch checks that side in CI).
#   tools/gpu/conformance.sh [OUT_DIR]      (default: $OUT, else a temporary folder)
# Writes OUT_DIR/conformance.torch.txt (stdout), conformance.torch.stderr and conformance.diff;
# exit status 0 when the texts are the same, 1 when they differ, 2 when the script failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:-${OUT:-$(mktemp -d)}}
mkdir -p "$out"
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-$(mktemp -d)}
python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)' || exit 2
python3 tests/data/script/conformance.py > "$out/conformance.torch.txt" 2> "$out/conformance.torch.stderr"
rc=$?
if [ $rc -ne 0 ] && [ -z "${CONFORMANCE_BACKEND:-}" ] && grep -q "InductorError\|CppCompileError\|BackendCompilerFailed" "$out/conformance.torch.stderr"; then
  echo "Inductor could not compile here (see conformance.torch.stderr): again with CONFORMANCE_BACKEND=aot_eager"
  mv "$out/conformance.torch.stderr" "$out/conformance.inductor.stderr"
  CONFORMANCE_BACKEND=aot_eager python3 tests/data/script/conformance.py > "$out/conformance.torch.txt" \
    2> "$out/conformance.torch.stderr"
  rc=$?
fi
if [ $rc -ne 0 ]; then
  echo "conformance.py failed under PyTorch (exit $rc):"
  tail -20 "$out/conformance.torch.stderr"
  exit 2
fi
if diff -u tests/data/script/conformance.expected.txt "$out/conformance.torch.txt" > "$out/conformance.diff"; then
  echo "conformance: PyTorch prints the expected text ($(wc -l < "$out/conformance.torch.txt") lines)"
  exit 0
fi
echo "conformance: PyTorch differs from the expected text (- ours, + PyTorch):"
cat "$out/conformance.diff"
exit 1
