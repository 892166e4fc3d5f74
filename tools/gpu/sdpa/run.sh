#!/usr/bin/env bash
# The bf16/f16 attention graphs of test_cuda's FlashAttention-2 cases through lowerscope-cli on the
# GPU (cuDNN's fused attention where it builds a plan, else our kernels), inference and training,
# each checked against the reference interpreter. LS_CUDNN_DEBUG=1 says why cuDNN refuses one,
# CUDNN_LOGLEVEL_DBG=2 CUDNN_LOGDEST_DBG=stderr what cuDNN itself says.
cd "$(dirname "$0")/../../.."
for g in tools/gpu/sdpa/*.txt; do
  for t in "" "--train"; do
    for dt in bfloat16 float16; do
      echo "== $(basename "$g") $dt $t"
      build-gpu/app/lowerscope-cli compile "$g" --device cuda --dtype $dt $t 2>&1 | grep -E "attention|check:|FAIL|error" | grep -v "^core_aten\|^prims\|^joint\|^forward\|^backward\|^capture\|^aten" | cut -c1-160 | head -8
    done
  done
done
