#!/usr/bin/env bash
# One GPU call of session 26: the model zoo's batch B (tools/zoo/gpu_batch.sh run B), with its
# exports started beside the build; with TEST_CUDA=1 the whole CUDA suite also runs, beside the zoo.
#   OUT=... TEST_CUDA=1 ZOO_LIMIT=540 tools/gpu/zoo-call.sh 1/3
# At most 8 files come back: test_cuda.txt, run_B.json, zoo.txt, build.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:?usage: tools/gpu/zoo-call.sh I/N}
O=${OUT:-/tmp/out}; mkdir -p "$O"
limit=${ZOO_LIMIT:-540}
dir=${ZOO_DIR:-/tmp/zoo}; mkdir -p "$dir"
SECONDS=0
ej=4
for k in $(seq 1 $ej); do
  OMP_NUM_THREADS=4 python3 tools/zoo/zoo.py export --out "$dir" --batch "$B" --part "$k/$ej" --budget $((limit / 2)) \
    > "$dir/_export_$k.txt" 2>&1 &
done
if [ ! -x build-gpu/tests/cuda/test_cuda ] || [ "${TEST_CUDA:-0}" = 1 ]; then
  tools/gpu/build.sh > "$O/build.txt" 2>&1 || { tail -40 "$O/build.txt"; }
fi
grep -E "ONNX import|CUDA" build-gpu.log 2>/dev/null | head -5
echo "built at ${SECONDS}s"
if [ "${TEST_CUDA:-0}" = 1 ]; then
  ( LS_TEST_DATA=$PWD/build-gpu/data timeout $((limit - 60 - SECONDS)) build-gpu/tests/cuda/test_cuda > "$O/test_cuda.txt" 2>&1
    echo "test_cuda exit $? at ${SECONDS}s" >> "$O/test_cuda.txt" ) &
fi
# The exports first (the run needs them), then the batch's compiles with what is left.
while pgrep -f "zoo.py export" > /dev/null; do sleep 2; done
echo "exported at ${SECONDS}s"; cat "$dir"/_export_*.txt | grep -v "^\[" | tail -n 40
OUT=$O ZOO_EXPORT_JOBS=0 ZOO_LIMIT=$((limit - SECONDS)) ZOO_TRACE=0 \
  ZOO_KINDS=${ZOO_KINDS:-pt2/cuda,onnx/cuda,train/cuda,pt2/cpu} tools/zoo/gpu_batch.sh run "$B" > "$O/zoo.txt" 2>&1
echo "zoo done at ${SECONDS}s"; tail -5 "$O/zoo.txt"
wait
[ -f "$O/test_cuda.txt" ] && { tail -2 "$O/test_cuda.txt"; grep -E "^FAIL|Totals" "$O/test_cuda.txt" | head -20; }
echo "all done at ${SECONDS}s"
