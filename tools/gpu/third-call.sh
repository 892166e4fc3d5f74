#!/usr/bin/env bash
# Session 25's third GPU call: build once, then at the same time: the whole CUDA suite, the
# conformance script under PyTorch, and a zoo smoke run of five models (exports, pt2/onnx on CUDA,
# a training step). At most 8 files come back: keep $OUT small.
set -uo pipefail
cd "$(dirname "$0")/../.."
O=${OUT:-/tmp/out}; mkdir -p "$O"
SECONDS=0
tools/gpu/build.sh > /tmp/build.txt 2>&1 || { tail -40 /tmp/build.txt; exit 2; }
echo "built at ${SECONDS}s"
( tools/gpu/conformance.sh /tmp/conf > /tmp/conf.txt 2>&1; echo "conformance exit $?" >> /tmp/conf.txt; cp /tmp/conf.txt "$O/conformance.txt" ) &
( OUT=/tmp/zoo_out ZOO_LIMIT=$((480 - SECONDS)) ZOO_TRACE=0 ZOO_EXPORT_JOBS=5 ZOO_ONLY=tv_resnet18,hf_gpt2,hf_qwen3,timm_efficientvit_b0,rnn_lstm \
    ZOO_KINDS=pt2/cuda,onnx/cuda,train/cuda tools/zoo/gpu_batch.sh run 1/1 > /tmp/zoo.txt 2>&1
  cp /tmp/zoo_out/run_1_of_1.json "$O/" 2>/dev/null; tail -c 6000 /tmp/zoo.txt > "$O/zoo.txt" ) &
LS_TEST_DATA=$PWD/build-gpu/data timeout $((500 - SECONDS)) build-gpu/tests/cuda/test_cuda > "$O/test_cuda.txt" 2>&1
echo "test_cuda exit $? at ${SECONDS}s"; grep -E "^FAIL|Totals|XFAIL|SKIP" "$O/test_cuda.txt" | head -30
wait
echo "all done at ${SECONDS}s"; tail -3 "$O/conformance.txt"; head -30 /tmp/conf/conformance.diff 2>/dev/null
