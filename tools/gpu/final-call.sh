#!/usr/bin/env bash
# Session 26's last GPU call, within LIMIT seconds: the zoo's CI subset exported (tools/zoo/ci_export.sh,
# CPU only) and ONNX Runtime's op cases (tools/gpu/onnx_op_cases.py), both tarred into $OUT; the zoo
# models that failed or ran slow in the first run exported again (now with PyTorch's float64 results)
# and compiled again (pt2/onnx on CUDA, training on CUDA: $OUT/rerun_1_of_1.json); the whole CUDA
# suite beside them ($OUT/test_cuda.txt).
set -uo pipefail
cd "$(dirname "$0")/../.."
O=${OUT:-/tmp/out}; mkdir -p "$O"
LIMIT=${LIMIT:-400}
SECONDS=0
ONLY=${ZOO_ONLY:?the models to run again}
mkdir -p /tmp/ci /tmp/zoo
( ZOO_BUDGET=150 tools/zoo/ci_export.sh export /tmp/ci/zoo > "$O/ci_summary.txt" 2>&1; tar czf "$O/ci.tgz" -C /tmp/ci zoo ci_export.log
  echo "ci export done at ${SECONDS}s" >> "$O/ci_summary.txt" ) &
( python3 tools/gpu/onnx_op_cases.py --out /tmp/onnx_ops > /tmp/onnx_cases.txt 2>&1; cp /tmp/onnx_cases.txt /tmp/onnx_ops/_cases.txt
  tar czf "$O/onnx_ops.tgz" -C /tmp onnx_ops ) &
for k in 1 2 3 4 5 6; do
  OMP_NUM_THREADS=2 python3 tools/zoo/zoo.py export --out /tmp/zoo --only "$ONLY" --part $k/6 --budget 150 > /tmp/zoo/_exp_$k.txt 2>&1 &
done
tools/gpu/build.sh > /tmp/build.txt 2>&1 || { tail -30 /tmp/build.txt; }
echo "built at ${SECONDS}s"
( LS_TEST_DATA=$PWD/build-gpu/data timeout $((LIMIT - 25 - SECONDS)) build-gpu/tests/cuda/test_cuda > "$O/test_cuda.txt" 2>&1
  echo "test_cuda exit $? at ${SECONDS}s" >> "$O/test_cuda.txt" ) &
while pgrep -f "zoo.py export --out /tmp/zoo " > /dev/null; do sleep 2; done
echo "exported at ${SECONDS}s"
PYTHONUNBUFFERED=1 python3 tools/zoo/zoo.py run --models /tmp/zoo --cli build-gpu/app/lowerscope-cli --only "$ONLY" \
  --kinds pt2/cuda,onnx/cuda,train/cuda --jobs 6 --budget $((LIMIT - 20 - SECONDS)) --out-json "$O/rerun_1_of_1.json" > /tmp/rerun.txt 2>&1
echo "rerun done at ${SECONDS}s"; tail -3 /tmp/rerun.txt
wait
tail -2 "$O/test_cuda.txt"; grep -E "^FAIL" "$O/test_cuda.txt" | head; tail -4 "$O/ci_summary.txt"; tail -3 /tmp/onnx_cases.txt
echo "all done at ${SECONDS}s"
