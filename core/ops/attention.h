// Attention's operand rule that reaches past the op table: which calls the bf16/f16
// FlashAttention-2 kernels take. One predicate, asked by the decomposition of
// scaled_dot_product_attention (ops/attention.cpp: whether a half call becomes the fused one) and
// by CUDA code generation (codegen/flash_attention_half.h: whether a fused call runs on them).
// Tests: test_cuda "flash attention in half precision" (NVRTC and the gate here; on a GPU against
// the reference interpreter).
#pragma once
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace ls {

// The head sizes the half kernels are written for.
inline bool flash_half_head_dim_ok(long long d) { return d > 0 && d <= 128 && d % 8 == 0; }

using AttentionOperand = std::pair<DType, Shape>;

// The head size where the half kernels take these operands, else 0: q, k, v, then `like_q` (the
// backward's grad_out and out), all bf16 or all f16, all of one rank (3: [B, L, D], or 4:
// [B, H, L, D]) and one batch size; k and v with the same heads, a divisor of q's (grouped-query
// attention); k and v one key length, `like_q` q's heads and length; one head size D that
// flash_half_head_dim_ok. LS_FLASH_HALF=0 in the environment turns them off (the math form, or the
// call on the host: an A/B switch for tests, not for use).
int flash_half_head_dim(const AttentionOperand& q, const AttentionOperand& k, const AttentionOperand& v,
                        const std::vector<AttentionOperand>& like_q = {});

}  // namespace ls
