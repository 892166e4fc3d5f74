// Which attention calls run on the bf16/f16 FlashAttention-2 kernels (codegen/cuda_flash_half.h,
// their device code) and what the attention module compiles for them; their launches are
// exec/flash_attention_cuda.h. Tests: test_cuda "flash attention in half precision" (NVRTC for
// sm_80 and sm_90 everywhere; against the reference interpreter on a GPU).
#pragma once
#include <string>

#include "loop/loop_ir.h"
#include "ops/attention.h"

namespace ls {

// The head size of an efficient-attention call (forward or backward) the half kernels take: no
// attention bias, and its q, k, v (the backward's grad_out and out too) as ops/attention.h's
// flash_half_head_dim takes them (the one rule, which the decomposition asks too); else 0.
int flash_half_head_dim(const LoopProgram& p, const ExternCall& c);
// Its element type (bf16 or f16), as the kernels' names spell it.
std::string flash_half_type(const LoopProgram& p, const ExternCall& c);
// The instance line of one (type, head size, direction) for the attention module, and the device
// code the module needs before such lines (once).
std::string flash_half_instance(const std::string& type, int head_dim, bool backward);
std::string flash_half_device_source();

}  // namespace ls
