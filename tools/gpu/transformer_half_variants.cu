// Variants of the memory-bound bf16 kernels of the transformer block's training step (issue 34:
// memory-bound kernels at 90% of copy bandwidth), one build and run on the GPU machine:
//
//   nvcc -O3 -arch=sm_90 -o thv tools/gpu/transformer_half_variants.cu && ./thv
//   (PyTorch's times for the same ops: python3 tools/gpu/transformer_half_torch.py)
//
// The generated kernels (G0 of each family) are copied verbatim from
//   lowerscope-cli compile M.txt --device cuda --dtype bfloat16 --train --no-run --dump DIR  (DIR/09_source.cu)
// where M.txt is tests/data/stages/attn_block/3_export_aten.txt at the benchmark's size (Attn(512, 8)
// at 16x512x512: x [16,512,512], qkv 1536, fc1 2048, 8 heads of 64), built at 96c5442.
// Every variant is checked against its family's G0 on the same random input (outputs poisoned with
// 0xff first, so an unwritten element shows as NaN = 99999 ulp): the largest difference in bf16
// units of the last place and how many elements differ; the column sums (whose order of additions
// changes) also against a float64 sum on the host, with the relative error and whether PyTorch's
// bf16 assert_close (atol 1e-5, rtol 1.6e-2) passes. Times: CUDA events around 20 launches, median
// of 15 batches after warm-up (tools/gpu/variants_harness.cuh), each launch on the next of 2-8
// buffer sets so the sets together exceed the L2 (the kernels are 16-96 MB). "of copy": against the
// 1 GiB device-to-device copy measured first; each family ends with copies of its own bytes (the
// ceiling at that size: launch, ramp and tail).
//
// (c) LayerNorm forward rows: cuda_fused_layer_norm_0, grid 8192 x block 64 (a row of 512 a block,
//     one uint4 = 8 bf16 a thread), reads x, weight, bias; writes mean, rstd (float32) and y.
//     16.8 MB, ~4 us at copy speed: launch and per-block latency matter more than bytes.
//     Reading it: each block reduction (ls_block_reduce) runs a 5-shuffle warp tree, a barrier, then
//     a second 5-shuffle tree over the 2 warps' values (20 shuffles for the two sums); weight and
//     bias are loaded after both reductions, an L2 round trip after the second barrier, per block.
//   L1  64/row, the block sums read from shared memory (10 shuffles, not 20; PTX 275 -> 225 a
//       thread): the base of L2-L12.
//   L2  weight/bias loaded with the row, before the reductions: their latency hidden under x's.
//   L3  one pass: sum and sum of squares reduced together (one barrier, not two; var = E[x^2] -
//       mean^2, fine for LayerNorm inputs; the check shows what it changes).
//   L4  64/row x 4 rows a block (256 threads): a quarter of the blocks, 4x the bytes a block.
//   L5  a warp a row (2 uint4 a thread) x 8 rows: no barrier at all, shuffles only.
//   L6  a warp a row x 4 rows (128 threads).   L7  L5 + one pass.   L8  L5 + ld/st.global.cs.
//   L9  L5 + cvt.rn.bf16x2.f32 (one instruction rounds two outputs; generated: two cvt + merge).
//   L10 16 threads a row (4 uint4), 16 rows a block.   L11 L5 + all of L7-L9.   L12 L2 + L3 + .cs + cvt.
//   Expect: L2 and L5 the largest steps (the block's latency chain: load x, 2 barriers, load w/b,
//   store); streaming little (16 MB stays in L2 either way on the way out).
//
// (b) GELU forward, pointwise: cuda_fused_gelu_6, grid 8192 x block 256, one uint4 (8 bf16) a
//     thread, 0.5 x (1 + erff(x / sqrt 2)), 8192 x 2048 bf16 (64 MB).
//     Reading it: erff is ~33 PTX instructions an element with the unpack, multiplies and rounding
//     (the kernel's PTX: 285 instructions for 8 elements). At 16.8 M elements that is ~0.55 G
//     thread-instructions: ~17 M warp-instructions over 132 SMs x 4 schedulers = ~33 k cycles =
//     ~18 us at 1.8 GHz, against ~15 us for 64 MB at the H200's copy speed: the kernel is as much
//     issue-bound as memory-bound, so instructions an element are the lever, and one uint4 in
//     flight a thread is too little to cover the rest.
//   B1  = G0 in variant code (0 ulp expected: the check of the harness itself).
//   B2, B3  2 or 4 uint4 a thread, all loads first (more bytes in flight a thread).
//   B4  ld/st.global.cs.   B5  cvt.rn.bf16x2.f32 (PTX 285 -> 277 a thread).
//   B6  erfc_pos in place of erff: Phi(x) from a degree-5 erfc fit (rcp.approx, ex2.approx; relative
//       error 7.8e-6: max 1 ulp, 41 of 112k inputs in a host emulation; PTX 285 -> 203 a thread).
//   B7  B6 + B5 (PTX 195: -32% instructions an element).
//   B8  2 uint4 + B7.   B9  B8 + .cs.   B10  4 uint4 + B7.
//   Checks: ulps of G0 where |y| >= 1e-3 (below that G0's 1 + erff cancels: G0 is 0 for x < -5.9,
//   erfc_pos is not), and against float64 gelu (max ulp where |y| >= 1e-3, assert_close everywhere).
//   Expect: B6/B7 the largest step (issue-bound), B8 near the copy of these bytes.
//
// (a1) LayerNorm backward's weight and bias gradients: cuda_fused_layer_norm_23, column form,
//     grid 528 x block 256 (32 columns x 8 lanes of rows a block, 33 slices of the 8192 rows a
//     column group, row loop unrolled 4), sum(g * xhat) and sum(g) over 8192 rows of 512 columns, both
//     inputs float32 (32 MB; g is a widened bf16), two bf16[512] out. More than 16 slices, so no
//     cluster: partials in a workspace, a fence, an atomic count, and the group's last block adds
//     the 33 partials (two column reductions of 3 barriers each, twice).
//     Reading it: 4-byte loads (a warp's load is 128 bytes), 8 in flight a thread (unroll 4 x 2
//     inputs); the finish is a serial chain (fence, atomic, 5 dependent partial loads, 2 column
//     reductions) after the last loads, in a kernel of ~8 us.
//     Also (for the generator, not a variant here): g is convert_element_type_18, a bf16 gradient that
//     cuda_fused_layer_norm_22 writes out as float32 only for this kernel to read; reading the bf16
//     source (and recomputing the cast) would make this kernel 24 MB instead of 32 and save 16 MB of
//     writes in layer_norm_22.
//   F1  = F0's shape in variant code (block partials through one shared array: one barrier).
//   F2  unroll 8.   F3  66 slices (more blocks in flight).
//   F4  16 slices a thread-block cluster, block 0 adds the 16 blocks' sums through distributed
//       shared memory (the generated finish for <= 16 slices; no fence, count or workspace).
//   F5  F4 + unroll 8.   F6  F4 with 16 lanes (512 threads a block).
//   F7  float2 columns (8-byte loads, 64 columns a block), 16 a cluster (128 blocks).   F8  F7, 16 lanes.
//   F9  float2, 66 slices, workspace.   F10 float4 columns (16-byte loads), 33 slices (132 blocks).
//   F11 float4, 66 slices x 16 lanes.   F12 float4, 16 a cluster (64 blocks: too few, the floor).
//   Expect: F4/F5 (the cluster finish; NOTES-bandwidth.md measured 0.0320 -> 0.0280 ms for this
//   change at float32 1024 columns) and wider loads a few points; the finish is the gap.
//
// (a2) GELU backward fused with fc1's bias gradient: cuda_fused_gelu_linear_11, column form, grid
//     512 x block 256 (32 columns x 8 lanes, 8 slices a column group as one cluster), gi =
//     bf16(go * gelu'(x)) written (8192 x 2048), bias = sum of gi over the rows. 96 MB. This is also
//     the GELU backward: it is not a separate kernel.
//     Reading it: every access is a 2-byte scalar (a warp moves 64 bytes an instruction: go, x and
//     gi, 3 memory instructions for 2 bytes each), erff + ex2 an element.
//   E1  = E0 in variant code.   E2  2-byte, 16 slices.
//   E3  bf16x2 (4-byte accesses, 64 columns a block), 8 slices.   E4  the same, 16 slices.
//   E5  4 bf16 (8-byte), 16 slices.   E6  8 bf16 (16-byte, 256 columns a block), 16 slices (128 blocks).
//   E7  E6 with 16 lanes.   E8  E5 + cvt.rn.bf16x2.   E9  E1 + erfc_pos (is the 2-byte form issue-bound?).
//   E10 E8 + erfc_pos.   E11 E6 + erfc_pos + cvt.   E12 E10 with 16 lanes.
//   Expect: the wider accesses the largest step (E3-E6: 2 -> 8-16 bytes a thread an access), then
//   erfc_pos (GELU's backward has erff and ex2 an element; here the degree-7 fit, 0 ulp of the
//   correctly rounded gelu' in the host emulation, because gelu' = Phi + x phi cancels near x = -0.75).
//   PTX of the whole kernel: E1 650, E5 1364 for 4x the elements a thread, E10 1156 (erfc_pos + cvt).
//
// Outcomes go to tools/gpu/NOTES-bandwidth.md / results-bf16.md; the winners are carried into
// core/codegen (cuda_codegen.cpp, cuda_prelude.h) after the run.
#include "variants_harness.cuh"

#include <cstring>

namespace lsp {
#include "../../core/codegen/cuda_prelude.h"
}
using lsp::ls_bf16;
using lsp::ls_cluster_load;
using lsp::ls_cluster_sync;
using lsp::ls_erf;
using lsp::ls_exp_fast;
using lsp::ls_float;
using lsp::ls_rsqrt;
using lsp::ls_to_bf16;

constexpr int R = 8192;   // rows: 16 x 512 tokens
constexpr int C = 512;    // LayerNorm width (model dim)
constexpr int H = 2048;   // MLP width (GELU's columns)

// ---- the generated kernels, verbatim (`extern "C"` dropped so they live in a namespace) ----------
namespace gen {
using namespace lsp;
// cuda_fused_layer_norm_0: iteration (8192, 512), row form, grid 8192 x block 64, from layer_norm
__global__ void __launch_bounds__(64) cuda_fused_layer_norm_0(const ls_bf16* __restrict__ in_ptr0, const ls_bf16* __restrict__ in_ptr1, const ls_bf16* __restrict__ in_ptr2, float* __restrict__ out_ptr0, float* __restrict__ out_ptr1, ls_bf16* __restrict__ out_ptr2) {
    const int ls_rt = threadIdx.x;
    const int x0 = blockIdx.x;
    uint4 ls_row0[1];  // x[512*x0 + r0]: this thread's part of the row, read once
    float acc1 = 0.0f;
    #pragma unroll
    for (int ls_i = 0; ls_i < 1; ++ls_i) {
        const int ls_g = ls_rt + ls_i * 64;
        ls_row0[ls_i] = *reinterpret_cast<const uint4*>(&in_ptr0[512*x0 + 8*ls_g]);
        #pragma unroll
        for (int ls_j = 0; ls_j < 8; ++ls_j) {
            const int r0 = 8 * ls_g + ls_j;
            // op0: convert_element_type
            auto tmp0 = ls_float(ls_lane_bf16(ls_row0[ls_i], ls_j));
            auto tmp1 = static_cast<float>(tmp0);
            // op3: sum_1
            acc1 = acc1 + tmp1;
        }
    }
    acc1 = ls_block_reduce<0, 1>(acc1, 0.0f);
    // op4: div
    auto tmp2 = static_cast<float>(acc1 / 512.0f);
    if (ls_rt == 0) out_ptr0[x0] = tmp2;
    float acc5 = 0.0f;
    #pragma unroll
    for (int ls_i = 0; ls_i < 1; ++ls_i) {
        const int ls_g = ls_rt + ls_i * 64;
        #pragma unroll
        for (int ls_j = 0; ls_j < 8; ++ls_j) {
            const int r0 = 8 * ls_g + ls_j;
            // op0: convert_element_type
            auto tmp3 = ls_float(ls_lane_bf16(ls_row0[ls_i], ls_j));
            auto tmp4 = static_cast<float>(tmp3);
            // op5: sub
            auto tmp5 = static_cast<float>(tmp4 - tmp2);
            // op6: mul
            auto tmp6 = static_cast<float>(tmp5 * tmp5);
            // op7: sum_2
            acc5 = acc5 + tmp6;
        }
    }
    acc5 = ls_block_reduce<0, 2>(acc5, 0.0f);
    // op8: div_1
    auto tmp7 = static_cast<float>(acc5 / 512.0f);
    // op9: add
    auto tmp8 = static_cast<float>(tmp7 + 1e-05f);
    // op10: rsqrt
    auto tmp9 = static_cast<float>(ls_rsqrt(tmp8));
    if (ls_rt == 0) out_ptr1[x0] = tmp9;
    #pragma unroll
    for (int ls_i = 0; ls_i < 1; ++ls_i) {
        const int ls_g = ls_rt + ls_i * 64;
        const uint4 ls_v0 = *reinterpret_cast<const uint4*>(&in_ptr1[8*ls_g]);
        const uint4 ls_v1 = *reinterpret_cast<const uint4*>(&in_ptr2[8*ls_g]);
        uint4 ls_w2;
        #pragma unroll
        for (int ls_j = 0; ls_j < 8; ++ls_j) {
            const int r0 = 8 * ls_g + ls_j;
            // op0: convert_element_type
            auto tmp10 = ls_float(ls_lane_bf16(ls_row0[ls_i], ls_j));
            auto tmp11 = static_cast<float>(tmp10);
            // op5: sub
            auto tmp12 = static_cast<float>(tmp11 - tmp2);
            // op11: mul_1
            auto tmp13 = static_cast<float>(tmp12 * tmp9);
            // op12: mul_2
            auto tmp14 = ls_float(ls_lane_bf16(ls_v0, ls_j));
            auto tmp15 = static_cast<float>(tmp14);
            auto tmp16 = static_cast<float>(tmp13 * tmp15);
            // op13: add_1
            auto tmp17 = ls_float(ls_lane_bf16(ls_v1, ls_j));
            auto tmp18 = static_cast<float>(tmp17);
            auto tmp19 = static_cast<float>(tmp16 + tmp18);
            // op14: convert_element_type_3
            auto tmp20h = ls_to_bf16(static_cast<float>(tmp19));
            auto tmp20 = ls_float(tmp20h);
            ls_set_lane(ls_w2, ls_j, tmp20h);
        }
        *reinterpret_cast<uint4*>(&out_ptr2[512*x0 + 8*ls_g]) = ls_w2;
    }
}

// cuda_fused_gelu_6: iteration (16777216, 1), pointwise form, grid 8192 x block 256, from gelu
__global__ void __launch_bounds__(256) cuda_fused_gelu_6(const ls_bf16* __restrict__ in_ptr0, ls_bf16* __restrict__ out_ptr0) {
    const int ls_g = (int)blockIdx.x * 256 + threadIdx.x;  // elements 8 * ls_g .. 8 * ls_g + 7
    const uint4 ls_v0 = *reinterpret_cast<const uint4*>(&in_ptr0[8*ls_g]);
    uint4 ls_w1;
    #pragma unroll
    for (int ls_j = 0; ls_j < 8; ++ls_j) {
        const int x0 = 8 * ls_g + ls_j;
        // op35: convert_element_type_8
        auto tmp0 = ls_float(ls_lane_bf16(ls_v0, ls_j));
        auto tmp1 = static_cast<float>(tmp0);
        // op36: mul_6
        auto tmp2 = static_cast<float>(tmp1 * 0.707106781f);
        // op37: erf
        auto tmp3 = static_cast<float>(ls_erf(tmp2));
        // op38: mul_7
        auto tmp4 = static_cast<float>(tmp1 * 0.5f);
        // op39: add_5
        auto tmp5 = static_cast<float>(tmp3 + 1.0f);
        // op40: mul_8
        auto tmp6 = static_cast<float>(tmp4 * tmp5);
        // op41: convert_element_type_9
        auto tmp7h = ls_to_bf16(static_cast<float>(tmp6));
        auto tmp7 = ls_float(tmp7h);
        ls_set_lane(ls_w1, ls_j, tmp7h);
    }
    *reinterpret_cast<uint4*>(&out_ptr0[8*ls_g]) = ls_w1;
}

// cuda_fused_gelu_linear_11: iteration (2048, 8192), column form, grid 512 x block 256, 32 columns x 8 lanes, 8 slices a column (a thread-block cluster), from gelu, linear_2
__global__ void __launch_bounds__(256) __cluster_dims__(8, 1, 1) cuda_fused_gelu_linear_11(const ls_bf16* __restrict__ in_ptr0, const ls_bf16* __restrict__ in_ptr1, ls_bf16* __restrict__ out_ptr0, ls_bf16* __restrict__ out_ptr1) {
    const int ls_rt = threadIdx.x >> 5;  // the lane: which rows
    const int x0 = (int)(blockIdx.x / 8) * 32 + (threadIdx.x & 31);
    const int ls_slice = blockIdx.x % 8;
    float acc60 = 0.0f;
    #pragma unroll 4
    for (int r0 = (int)ls_slice * 8 + ls_rt; r0 < 8192; r0 += 64) {
        // op52: convert_element_type_11
        auto tmp0 = ls_float(in_ptr0[2048*r0 + x0]);
        auto tmp1 = static_cast<float>(tmp0);
        // op53: convert_element_type_12
        auto tmp2 = ls_float(in_ptr1[2048*r0 + x0]);
        auto tmp3 = static_cast<float>(tmp2);
        // op54: mul_9
        auto tmp4 = static_cast<float>(tmp3 * 0.707106781f);
        // op55: erf_1
        auto tmp5 = static_cast<float>(ls_erf(tmp4));
        // op56: add_8
        auto tmp6 = static_cast<float>(tmp5 + 1.0f);
        // op57: mul_10
        auto tmp7 = static_cast<float>(tmp6 * 0.5f);
        // op58: mul_11
        auto tmp8 = static_cast<float>(tmp3 * tmp3);
        // op59: mul_12
        auto tmp9 = static_cast<float>(tmp8 * -0.5f);
        // op60: exp
        auto tmp10 = static_cast<float>(ls_exp_fast(tmp9));
        // op61: mul_13
        auto tmp11 = static_cast<float>(tmp10 * 0.39894228f);
        // op62: mul_14
        auto tmp12 = static_cast<float>(tmp3 * tmp11);
        // op63: add_9
        auto tmp13 = static_cast<float>(tmp7 + tmp12);
        // op64: mul_15
        auto tmp14 = static_cast<float>(tmp1 * tmp13);
        // op65: convert_element_type_13
        auto tmp15h = ls_to_bf16(static_cast<float>(tmp14));
        auto tmp15 = ls_float(tmp15h);
        out_ptr0[2048*r0 + x0] = tmp15h;
        // op66: sum_6
        acc60 = acc60 + tmp15;
    }
    acc60 = ls_column_reduce<0>(acc60, 0.0f);
    __shared__ float ls_cpart60[32];
    if (ls_rt == 0) ls_cpart60[threadIdx.x] = acc60;
    ls_cluster_sync();  // the cluster's blocks (the column group's 8 slices) have their sums in shared memory
    if (ls_slice == 0 && ls_rt == 0) {
        acc60 = 0.0f;
        for (unsigned s = 0; s < 8u; ++s) {
            acc60 = ls_combine<0>(acc60, ls_cluster_load(&ls_cpart60[threadIdx.x & 31], s));
        }
    }
    ls_cluster_sync();  // read: the others may leave
    if (ls_slice != 0) return;
    // op119: reshape_23
    if (ls_rt == 0) out_ptr1[x0] = ls_to_bf16(static_cast<float>(acc60));
}

// cuda_fused_layer_norm_23: iteration (512, 8192), column form, grid 528 x block 256, 32 columns x 8 lanes, 33 slices a column, from layer_norm
__global__ void __launch_bounds__(256) cuda_fused_layer_norm_23(const float* __restrict__ in_ptr0, const float* __restrict__ in_ptr1, ls_bf16* __restrict__ out_ptr0, ls_bf16* __restrict__ out_ptr1, char* __restrict__ ls_ws) {
    const int ls_rt = threadIdx.x >> 5;  // the lane: which rows
    const int x0 = (int)(blockIdx.x / 33) * 32 + (threadIdx.x & 31);
    const int ls_slice = blockIdx.x % 33;
    float acc103 = 0.0f;
    float acc104 = 0.0f;
    #pragma unroll 4
    for (int r0 = (int)ls_slice * 8 + ls_rt; r0 < 8192; r0 += 264) {
        // op110: mul_29
        auto tmp0 = in_ptr0[512*r0 + x0];
        auto tmp1 = in_ptr1[512*r0 + x0];
        auto tmp2 = static_cast<float>(tmp0 * tmp1);
        // op111: sum_15
        acc103 = acc103 + tmp2;
        // op112: sum_16
        acc104 = acc104 + tmp0;
    }
    acc103 = ls_column_reduce<0>(acc103, 0.0f);
    acc104 = ls_column_reduce<0>(acc104, 0.0f);
    float* ls_part103 = reinterpret_cast<float*>(ls_ws + 0);
    if (ls_rt == 0) ls_part103[x0 * 33 + ls_slice] = acc103;
    float* ls_part104 = reinterpret_cast<float*>(ls_ws + 135168);
    if (ls_rt == 0) ls_part104[x0 * 33 + ls_slice] = acc104;
    unsigned* ls_count = reinterpret_cast<unsigned*>(ls_ws + 270336);
    __shared__ bool ls_last;
    if (ls_rt == 0) __threadfence();  // the threads that wrote partials make them visible ...
    __syncthreads();  // ... before the block is counted
    if (threadIdx.x == 0) ls_last = atomicAdd(&ls_count[blockIdx.x / 33], 1u) == 33u - 1u;
    __syncthreads();
    if (!ls_last) return;  // the columns' last block finishes them
    __threadfence();
    acc103 = 0.0f;
    acc104 = 0.0f;
    for (int s = ls_rt; s < 33; s += 8) {
        acc103 = ls_combine<0>(acc103, __ldcg(&ls_part103[x0 * 33 + s]));
        acc104 = ls_combine<0>(acc104, __ldcg(&ls_part104[x0 * 33 + s]));
    }
    acc103 = ls_column_reduce<0>(acc103, 0.0f);
    acc104 = ls_column_reduce<0>(acc104, 0.0f);
    if (threadIdx.x == 0) ls_count[blockIdx.x / 33] = 0;  // ready for the next launch
    // op113: convert_element_type_19
    auto tmp3h = ls_to_bf16(static_cast<float>(acc104));
    auto tmp3 = ls_float(tmp3h);
    if (ls_rt == 0) out_ptr0[x0] = tmp3h;
    // op114: convert_element_type_20
    auto tmp4h = ls_to_bf16(static_cast<float>(acc103));
    auto tmp4 = ls_float(tmp4h);
    if (ls_rt == 0) out_ptr1[x0] = tmp4h;
}

}  // namespace gen

// ---- helpers of the variants -------------------------------------------------------------------
__device__ __forceinline__ unsigned word(const uint4& v, int k) { return k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w; }
__device__ __forceinline__ void set_word(uint4& v, int k, unsigned w) {
  if (k == 0) v.x = w;
  else if (k == 1) v.y = w;
  else if (k == 2) v.z = w;
  else v.w = w;
}
// The two bf16 of a 32-bit word as floats (exact), and two floats rounded into one word:
// PACK: one cvt.rn.bf16x2.f32; else two cvt.rn.bf16.f32 and a merge, as the generated ls_set_lane.
__device__ __forceinline__ float lo_f(unsigned w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float hi_f(unsigned w) { return __uint_as_float(w & 0xffff0000u); }
template <bool PACK> __device__ __forceinline__ unsigned pack2(float lo, float hi) {
  if (PACK) {
    unsigned r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
  }
  return static_cast<unsigned>(ls_to_bf16(lo).x) | (static_cast<unsigned>(ls_to_bf16(hi).x) << 16);
}
template <bool S> __device__ __forceinline__ uint4 ld16(const void* p) {
  const uint4* q = reinterpret_cast<const uint4*>(p);
  return S ? __ldcs(q) : *q;
}
template <bool S> __device__ __forceinline__ void st16(void* p, uint4 v) {
  uint4* q = reinterpret_cast<uint4*>(p);
  if (S) __stcs(q, v);
  else *q = v;
}
__device__ __forceinline__ float rcp_approx(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
// erfc(z) for z >= 0 as t exp(-z^2 + P(t)), t = 1 / (1 + z/2) (the form of Numerical Recipes'
// erfcc, whose degree-9 P gives 1.2e-7), here P of degree DEG fitted (iteratively reweighted least
// squares over z in [0, 9.5]) to a relative error of erfc under 7.8e-6 (DEG 5) or 6.4e-7 (DEG 7):
// 1/500 or 1/6000 of a bf16 ulp, so a rounding flips by 1 ulp now and then. Relative, so GELU's far
// left tail (0.5 x erfc(|x|/sqrt 2)) keeps its accuracy, where G0's 1 + erff(x) cancels (for
// x < -5.9 it is 0 in float32). rcp.approx and ex2.approx, no branch: 2 MUFU + DEG + 4 FMA/FMUL,
// against erff's ~7 FMA + ex2 + compares and selects of both branches. The forward uses DEG 5; the
// backward DEG 7, because gelu'(x) = Phi(x) + x phi(x) cancels near its zero (x ~ -0.75), which
// multiplies Phi's relative error by ~300 (DEG 5 there: 2 ulps).
template <int DEG> __device__ __forceinline__ float erfc_pos(float z) {
  const float t = rcp_approx(fmaf(0.5f, z, 1.0f));
  float p;
  if (DEG == 5) {
    p = fmaf(t, 0.22880913f, -0.70923952f);
    p = fmaf(t, p, 0.47453672f);
    p = fmaf(t, p, 0.25442872f);
    p = fmaf(t, p, 1.018014f);
    p = fmaf(t, p, -1.2665414f);
  } else {
    p = fmaf(t, -0.18246515f, 0.72873083f);
    p = fmaf(t, p, -0.96052623f);
    p = fmaf(t, p, 0.31154193f);
    p = fmaf(t, p, -0.018917551f);
    p = fmaf(t, p, 0.38756409f);
    p = fmaf(t, p, 0.99961459f);
    p = fmaf(t, p, -1.2655431f);
  }
  return t * ls_exp_fast(fmaf(-z, z, p));
}
// Phi(x) = 0.5 (1 + erf(x / sqrt 2)), from the erfc of |x| (no cancellation in either tail).
template <int DEG> __device__ __forceinline__ float phi_fast(float x) {
  const float h = 0.5f * erfc_pos<DEG>(fabsf(x) * 0.70710678f);
  return x > 0.f ? 1.f - h : h;
}
// GELU forward: the generated op order (0.5 x * (erf(x / sqrt 2) + 1)) or x * Phi(x) with erfc_pos.
template <bool FAST> __device__ __forceinline__ float gelu_f(float x) {
  if (FAST) return x * phi_fast<5>(x);
  return (x * 0.5f) * (ls_erf(x * 0.707106781f) + 1.0f);
}
// GELU backward (go * gelu'(x)), the generated op order, or with Phi from erfc_pos.
template <bool FAST> __device__ __forceinline__ float gelu_b(float go, float x) {
  const float pdf = x * (ls_exp_fast((x * x) * -0.5f) * 0.39894228f);
  if (FAST) return go * (phi_fast<7>(x) + pdf);
  return go * (((ls_erf(x * 0.707106781f) + 1.0f) * 0.5f) + pdf);
}

// ---- (c) LayerNorm forward rows ------------------------------------------------------------------
// T threads a row (64 as generated, 32 = a warp a row, 16 = two rows a warp), RPB rows a block,
// V = 512 / (8 T) uint4 a thread. PREFETCH: weight and bias loaded with the row, before the
// reductions (G0 loads them after both: an L2 round trip after the second barrier, per block).
// ONEPASS: sum and sum of squares reduced together (one round of shuffles and one barrier; var =
// E[x^2] - mean^2). STREAM: ld.global.cs / st.global.cs for the row and the output. PACK: cvt.rn.bf16x2.
template <int T, int RPB, int SLOT> __device__ __forceinline__ float2 row_sum2(float2 v, bool both) {
  constexpr int W = T < 32 ? T : 32;
#pragma unroll
  for (int o = W / 2; o > 0; o /= 2) {
    v.x += __shfl_xor_sync(0xffffffffu, v.x, o, W);
    if (both) v.y += __shfl_xor_sync(0xffffffffu, v.y, o, W);
  }
  if constexpr (T <= 32) {
    return v;
  } else {
    constexpr int NW = T / 32;
    __shared__ float2 s[RPB][NW];
    const int sub = threadIdx.x / T, w = (threadIdx.x % T) / 32;
    if ((threadIdx.x & 31) == 0) s[sub][w] = v;
    __syncthreads();
    float2 r = s[sub][0];
#pragma unroll
    for (int k = 1; k < NW; ++k) r.x += s[sub][k].x, r.y += s[sub][k].y;
    return r;
  }
}
template <int T, int RPB, bool PREFETCH, bool ONEPASS, bool STREAM, bool PACK>
__global__ void __launch_bounds__(T* RPB) lnv(const ls_bf16* __restrict__ x, const ls_bf16* __restrict__ w, const ls_bf16* __restrict__ b,
                                              float* __restrict__ mean_out, float* __restrict__ rstd_out, ls_bf16* __restrict__ y) {
  constexpr int V = C / (8 * T);
  const int sub = threadIdx.x / T, t = threadIdx.x % T;
  const int row = blockIdx.x * RPB + sub;
  uint4 xv[V], wv[V], bv[V];
#pragma unroll
  for (int i = 0; i < V; ++i) xv[i] = ld16<STREAM>(&x[C * row + 8 * (t + i * T)]);
  if (PREFETCH) {
#pragma unroll
    for (int i = 0; i < V; ++i) wv[i] = ld16<false>(&w[8 * (t + i * T)]), bv[i] = ld16<false>(&b[8 * (t + i * T)]);
  }
  float2 s = make_float2(0.f, 0.f);
#pragma unroll
  for (int i = 0; i < V; ++i)
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float a = lo_f(word(xv[i], k)), c = hi_f(word(xv[i], k));
      s.x = s.x + a;
      s.x = s.x + c;
      if (ONEPASS) s.y = fmaf(a, a, s.y), s.y = fmaf(c, c, s.y);
    }
  float mean, var;
  if (ONEPASS) {
    s = row_sum2<T, RPB, 0>(s, true);
    mean = s.x / 512.0f;
    var = fmaxf(s.y / 512.0f - mean * mean, 0.f);
  } else {
    mean = row_sum2<T, RPB, 0>(s, false).x / 512.0f;
    float2 q = make_float2(0.f, 0.f);
#pragma unroll
    for (int i = 0; i < V; ++i)
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const float a = lo_f(word(xv[i], k)) - mean, c = hi_f(word(xv[i], k)) - mean;
        q.x = q.x + a * a;
        q.x = q.x + c * c;
      }
    var = row_sum2<T, RPB, 1>(q, false).x / 512.0f;
  }
  const float rstd = ls_rsqrt(var + 1e-05f);
  if (t == 0) mean_out[row] = mean, rstd_out[row] = rstd;
  if (!PREFETCH) {
#pragma unroll
    for (int i = 0; i < V; ++i) wv[i] = ld16<false>(&w[8 * (t + i * T)]), bv[i] = ld16<false>(&b[8 * (t + i * T)]);
  }
#pragma unroll
  for (int i = 0; i < V; ++i) {
    uint4 o;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const unsigned xw = word(xv[i], k), ww = word(wv[i], k), bw = word(bv[i], k);
      const float a = ((lo_f(xw) - mean) * rstd) * lo_f(ww) + lo_f(bw);
      const float c = ((hi_f(xw) - mean) * rstd) * hi_f(ww) + hi_f(bw);
      set_word(o, k, pack2<PACK>(a, c));
    }
    st16<STREAM>(&y[C * row + 8 * (t + i * T)], o);
  }
}

// ---- (b) GELU forward, pointwise ------------------------------------------------------------------
// V uint4 (8 elements) a thread, a block of 256 threads covering 256 V consecutive uint4 (each of
// its V loads coalesced), all loads issued before any math. STREAM: ld/st .cs. PACK: cvt.rn.bf16x2.
// FAST: erfc_pos in place of erff.
template <int V, bool STREAM, bool PACK, bool FAST>
__global__ void __launch_bounds__(256) gelv(const ls_bf16* __restrict__ in, ls_bf16* __restrict__ out) {
  const int g0 = blockIdx.x * 256 * V + threadIdx.x;
  uint4 v[V];
#pragma unroll
  for (int i = 0; i < V; ++i) v[i] = ld16<STREAM>(&in[8 * (g0 + i * 256)]);
#pragma unroll
  for (int i = 0; i < V; ++i) {
    uint4 o;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const unsigned w = word(v[i], k);
      set_word(o, k, pack2<PACK>(gelu_f<FAST>(lo_f(w)), gelu_f<FAST>(hi_f(w))));
    }
    st16<STREAM>(&out[8 * (g0 + i * 256)], o);
  }
}

// ---- (a1) LayerNorm backward's weight and bias gradients: column sums of g * xhat and g ----------
// (two float32 8192 x 512 matrices in; two bf16[512] out). A block: 32 VEC columns (VEC floats a
// thread: 4-, 8- or 16-byte loads) x LANES rows a step; S slices of the rows a column group; the
// row loop unrolled U. The block's partial sums: one shared array, one barrier, a thread an output
// column. CL: the S slices are a thread-block cluster (S <= 16) and block 0 adds the others' sums
// through distributed shared memory; else partials in a workspace, a count, and the last block of
// the group adds them (the generated form for S > 16).
template <int VEC> __device__ __forceinline__ void ldf(const float* p, float (&a)[VEC]) {
  if constexpr (VEC == 1) {
    a[0] = *p;
  } else if constexpr (VEC == 2) {
    const float2 v = *reinterpret_cast<const float2*>(p);
    a[0] = v.x, a[1] = v.y;
  } else {
    const float4 v = *reinterpret_cast<const float4*>(p);
    a[0] = v.x, a[1] = v.y, a[2] = v.z, a[3] = v.w;
  }
}
template <int VEC, int LANES, int S, int U, bool CL>
__global__ void __launch_bounds__(32 * LANES) colf(const float* __restrict__ g, const float* __restrict__ xh, ls_bf16* __restrict__ out_b,
                                                   ls_bf16* __restrict__ out_w, char* __restrict__ ws) {
  constexpr int CB = 32 * VEC, NO = 2 * CB, NT = 32 * LANES;
  const int c = threadIdx.x & 31, l = threadIdx.x >> 5;
  const int grp = blockIdx.x / S, s = blockIdx.x % S;
  const int col = grp * CB + c * VEC;
  float ab[VEC], aw[VEC];
#pragma unroll
  for (int k = 0; k < VEC; ++k) ab[k] = 0.f, aw[k] = 0.f;
#pragma unroll U
  for (int r = s * LANES + l; r < R; r += S * LANES) {
    float gv[VEC], xv[VEC];
    ldf<VEC>(&g[C * r + col], gv);
    ldf<VEC>(&xh[C * r + col], xv);
#pragma unroll
    for (int k = 0; k < VEC; ++k) aw[k] = aw[k] + gv[k] * xv[k], ab[k] = ab[k] + gv[k];
  }
  __shared__ float red[LANES][NO + 1];
  __shared__ float res[NO];
#pragma unroll
  for (int k = 0; k < VEC; ++k) red[l][c * VEC + k] = ab[k], red[l][CB + c * VEC + k] = aw[k];
  __syncthreads();
  for (int o = threadIdx.x; o < NO; o += NT) {
    float v = red[0][o];
#pragma unroll
    for (int k = 1; k < LANES; ++k) v += red[k][o];
    res[o] = v;
  }
  const int ncol = grp * CB;  // output o: column ncol + o % CB of sum (o < CB: g, else g * xhat)
  if constexpr (CL) {
    ls_cluster_sync();
    if (s == 0) {
      for (int o = threadIdx.x; o < NO; o += NT) {
        float v = 0.f;
#pragma unroll
        for (int k = 0; k < S; ++k) v += ls_cluster_load(&res[o], k);
        (o < CB ? out_b : out_w)[ncol + o % CB] = ls_to_bf16(v);
      }
    }
    ls_cluster_sync();
  } else {
    float* part = reinterpret_cast<float*>(ws);
    unsigned* count = reinterpret_cast<unsigned*>(ws + (2 << 20));
    __syncthreads();
    for (int o = threadIdx.x; o < NO; o += NT) {
      part[(grp * S + s) * NO + o] = res[o];
      __threadfence();
    }
    __shared__ bool last;
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(&count[grp], 1u) == S - 1u;
    __syncthreads();
    if (!last) return;
    __threadfence();
    for (int o = threadIdx.x; o < NO; o += NT) {
      float v0 = 0.f, v1 = 0.f, v2 = 0.f, v3 = 0.f;  // four chains of loads in flight
      int k = 0;
      for (; k + 4 <= S; k += 4) {
        v0 += __ldcg(&part[(grp * S + k) * NO + o]), v1 += __ldcg(&part[(grp * S + k + 1) * NO + o]);
        v2 += __ldcg(&part[(grp * S + k + 2) * NO + o]), v3 += __ldcg(&part[(grp * S + k + 3) * NO + o]);
      }
      for (; k < S; ++k) v0 += __ldcg(&part[(grp * S + k) * NO + o]);
      (o < CB ? out_b : out_w)[ncol + o % CB] = ls_to_bf16((v0 + v1) + (v2 + v3));
    }
    if (threadIdx.x == 0) count[grp] = 0;
  }
}

// ---- (a2)+(b') GELU backward fused with fc1's bias gradient (column sums over 8192 rows of 2048) ---
// gi = bf16(go * gelu'(x)) written, bias = sum over rows of gi. VEC bf16 a thread (1: 2-byte
// accesses as generated; 2, 4, 8: 4-, 8-, 16-byte), 32 VEC columns a block, LANES rows a step, S
// slices a column group as one cluster (the generated finish, S <= 16), unroll U. FAST: erfc_pos
// for Phi. PACK: cvt.rn.bf16x2 for the stores.
template <int VEC> __device__ __forceinline__ void ldb(const ls_bf16* p, unsigned (&w)[VEC / 2 > 0 ? VEC / 2 : 1]) {
  if constexpr (VEC == 2) {
    w[0] = *reinterpret_cast<const unsigned*>(p);
  } else if constexpr (VEC == 4) {
    const uint2 v = *reinterpret_cast<const uint2*>(p);
    w[0] = v.x, w[1] = v.y;
  } else {
    const uint4 v = *reinterpret_cast<const uint4*>(p);
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
  }
}
template <int VEC> __device__ __forceinline__ void stb(ls_bf16* p, const unsigned (&w)[VEC / 2 > 0 ? VEC / 2 : 1]) {
  if constexpr (VEC == 2) *reinterpret_cast<unsigned*>(p) = w[0];
  else if constexpr (VEC == 4) *reinterpret_cast<uint2*>(p) = make_uint2(w[0], w[1]);
  else *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
}
template <int VEC, int LANES, int S, int U, bool FAST, bool PACK>
__global__ void __launch_bounds__(32 * LANES) colg(const ls_bf16* __restrict__ go, const ls_bf16* __restrict__ x, ls_bf16* __restrict__ gi,
                                                   ls_bf16* __restrict__ bias) {
  constexpr int CB = 32 * VEC, NT = 32 * LANES, NW = VEC / 2 > 0 ? VEC / 2 : 1;
  const int c = threadIdx.x & 31, l = threadIdx.x >> 5;
  const int grp = blockIdx.x / S, s = blockIdx.x % S;
  const int col = grp * CB + c * VEC;
  float acc[VEC];
#pragma unroll
  for (int k = 0; k < VEC; ++k) acc[k] = 0.f;
#pragma unroll U
  for (int r = s * LANES + l; r < R; r += S * LANES) {
    if constexpr (VEC == 1) {
      const float d = gelu_b<FAST>(ls_float(go[H * r + col]), ls_float(x[H * r + col]));
      const ls_bf16 h = ls_to_bf16(d);
      gi[H * r + col] = h;
      acc[0] = acc[0] + ls_float(h);
    } else {
      unsigned gw[NW], xw[NW], ow[NW];
      ldb<VEC>(&go[H * r + col], gw);
      ldb<VEC>(&x[H * r + col], xw);
#pragma unroll
      for (int k = 0; k < NW; ++k) {
        ow[k] = pack2<PACK>(gelu_b<FAST>(lo_f(gw[k]), lo_f(xw[k])), gelu_b<FAST>(hi_f(gw[k]), hi_f(xw[k])));
        acc[2 * k] = acc[2 * k] + lo_f(ow[k]);
        acc[2 * k + 1] = acc[2 * k + 1] + hi_f(ow[k]);
      }
      stb<VEC>(&gi[H * r + col], ow);
    }
  }
  __shared__ float red[LANES][CB + 1];
  __shared__ float res[CB];
#pragma unroll
  for (int k = 0; k < VEC; ++k) red[l][c * VEC + k] = acc[k];
  __syncthreads();
  for (int o = threadIdx.x; o < CB; o += NT) {
    float v = red[0][o];
#pragma unroll
    for (int k = 1; k < LANES; ++k) v += red[k][o];
    res[o] = v;
  }
  ls_cluster_sync();
  if (s == 0) {
    for (int o = threadIdx.x; o < CB; o += NT) {
      float v = 0.f;
#pragma unroll
      for (int k = 0; k < S; ++k) v += ls_cluster_load(&res[o], k);
      bias[grp * CB + o] = ls_to_bf16(v);
    }
  }
  ls_cluster_sync();
}

// ---- ceilings -------------------------------------------------------------------------------------
template <int T, int V> __global__ void __launch_bounds__(T) copy_rows(const uint4* __restrict__ in, uint4* __restrict__ out) {
  const long long base = static_cast<long long>(blockIdx.x) * T * V;
  uint4 v[V];
#pragma unroll
  for (int i = 0; i < V; ++i) v[i] = in[base + threadIdx.x + i * T];
#pragma unroll
  for (int i = 0; i < V; ++i) out[base + threadIdx.x + i * T] = v[i];
}

// ---- host side ------------------------------------------------------------------------------------
__global__ void to_bf16(const float* a, ls_bf16* b, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) b[i] = ls_to_bf16(a[i]);
}
__global__ void round_f32_to_bf16_values(float* a, size_t n) {  // a float32 gradient that holds bf16 values (as generated: a widened bf16)
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) a[i] = ls_float(ls_to_bf16(a[i]));
}
static std::vector<unsigned short> get16(const ls_bf16* d, size_t n) {
  std::vector<unsigned short> h(n);
  CK(cudaMemcpy(h.data(), d, n * 2, cudaMemcpyDeviceToHost));
  return h;
}
static float bf(unsigned short h) {
  unsigned u = unsigned(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// Largest difference in bf16 ulps (as ordered 16-bit integers) where |y| >= floor, and how many
// elements differ there; a NaN anywhere (poison left) gives 99999.
static float bf(unsigned short h);
static int max_ulp(const std::vector<unsigned short>& x, const std::vector<unsigned short>& y, size_t* ndiff = nullptr, float floor = 0.f) {
  int m = 0;
  size_t nd = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    auto ord = [](unsigned short h) { return (h & 0x8000) ? -int(h & 0x7fff) : int(h); };
    if ((x[i] & 0x7fff) > 0x7f80 || (y[i] & 0x7fff) > 0x7f80) return 99999;
    if (floor > 0.f && std::fabs(bf(y[i])) < floor) continue;
    const int d = std::abs(ord(x[i]) - ord(y[i]));
    m = std::max(m, d);
    nd += d != 0;
  }
  if (ndiff) *ndiff = nd;
  return m;
}
// Against a float64 reference: the largest |a - ref| / |ref|, and whether PyTorch's bf16
// assert_close (atol 1e-5, rtol 1.6e-2) would pass.
static void vs_ref(const std::vector<unsigned short>& a, const std::vector<double>& ref, double* rel, bool* ok) {
  *rel = 0, *ok = true;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(double(bf(a[i])) - ref[i]);
    *rel = std::max(*rel, d / std::max(std::fabs(ref[i]), 1e-30));
    if (!(d <= 1e-5 + 1.6e-2 * std::fabs(ref[i]))) *ok = false;
  }
}
// Against a float64 reference, elementwise: whether PyTorch's bf16 assert_close (atol 1e-5,
// rtol 1.6e-2) passes, and the largest difference in bf16 ulps from the correctly rounded value
// where |ref| >= floor (below it atol decides; G0's own 1 + erff cancels in GELU's left tail).
static unsigned short bf16_of(double v) {
  float f = float(v);
  unsigned u;
  std::memcpy(&u, &f, 4);
  return static_cast<unsigned short>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static void vs_ref_elems(const std::vector<unsigned short>& a, const std::vector<double>& ref, double floor, int* ulp, bool* ok) {
  *ulp = 0, *ok = true;
  auto ord = [](unsigned short h) { return (h & 0x8000) ? -int(h & 0x7fff) : int(h); };
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(double(bf(a[i])) - ref[i]);
    if (!(d <= 1e-5 + 1.6e-2 * std::fabs(ref[i]))) *ok = false;
    if (std::fabs(ref[i]) >= floor) *ulp = std::max(*ulp, std::abs(ord(a[i]) - ord(bf16_of(ref[i]))));
  }
}
static double max_rel_f(const float* a, const float* b, size_t n) {
  std::vector<float> x(n), y(n);
  CK(cudaMemcpy(x.data(), a, n * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(y.data(), b, n * 4, cudaMemcpyDeviceToHost));
  double m = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = std::fabs(double(x[i]) - double(y[i])) / std::max(std::fabs(double(y[i])), 1e-30);
    if (!(d <= m)) m = std::isnan(d) ? INFINITY : d;
  }
  return m;
}
template <typename K, typename... A> static cudaError_t cluster_launch(K k, int grid, int block, int cs, A... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(block);
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = cs;
  at[0].val.clusterDim.y = 1;
  at[0].val.clusterDim.z = 1;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, k, args...);
}
static void section(const char* s) { std::printf("| **%s** | | | | |\n", s); }

// Buffer sets: every timed launch i uses set i % NS, so a family's sets together exceed the L2
// (50-60 MB) and no launch finds its input there from the previous one.
template <typename T> static std::vector<T*> alloc_sets(int ns, size_t n) {
  std::vector<T*> v(ns);
  for (auto& p : v) CK(cudaMalloc(&p, n * sizeof(T)));
  return v;
}
static void fill_bf16(ls_bf16* d, size_t n, unsigned seed, float scale, float shift = 0.f) {
  std::vector<float> h(n);
  std::mt19937 g(seed);
  std::normal_distribution<float> nd(shift, scale);
  for (auto& v : h) v = nd(g);
  float* f;
  CK(cudaMalloc(&f, n * 4));
  CK(cudaMemcpy(f, h.data(), n * 4, cudaMemcpyHostToDevice));
  to_bf16<<<1024, 256>>>(f, d, n);
  CK(cudaDeviceSynchronize());
  CK(cudaFree(f));
}

int main() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs, L2 %d MB\n\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  Timer tm;
  copy_ceiling(tm);
  char check[400];

  // ================= (c) LayerNorm forward rows ===================================================
  {
    section("(c) LayerNorm fwd: cuda_fused_layer_norm_0, 8192 x 512 bf16");
    const int NS = 8;
    const size_t n = size_t(R) * C;
    auto xs = alloc_sets<ls_bf16>(NS, n);
    auto ys = alloc_sets<ls_bf16>(NS, n);
    auto mo = alloc_sets<float>(NS, R);
    auto ro = alloc_sets<float>(NS, R);
    ls_bf16 *w, *b, *yref;
    float *mref, *rref;
    CK(cudaMalloc(&w, C * 2));
    CK(cudaMalloc(&b, C * 2));
    CK(cudaMalloc(&yref, n * 2));
    CK(cudaMalloc(&mref, R * 4));
    CK(cudaMalloc(&rref, R * 4));
    for (int k = 0; k < NS; ++k) fill_bf16(xs[k], n, 10 + k, 1.f, 0.3f);
    fill_bf16(w, C, 3, 0.2f, 1.f);
    fill_bf16(b, C, 4, 0.2f);
    const double bytes = 2.0 * n * 2 + 2.0 * R * 4 + 2.0 * C * 2;
    gen::cuda_fused_layer_norm_0<<<R, 64>>>(xs[0], w, b, mref, rref, yref);
    CK(cudaDeviceSynchronize());
    const auto yr = get16(yref, n);
    row("L0 generated: 64/row, 1 uint4, 2 passes, w/b late", bytes,
        tm.ms([&](int i) { const int k = i % NS; gen::cuda_fused_layer_norm_0<<<R, 64>>>(xs[k], w, b, mo[k], ro[k], ys[k]); }), "reference");
    auto run = [&](const char* name, auto kern, int rpb, int threads) {
      CK(cudaMemset(ys[0], 0xff, n * 2));
      CK(cudaMemset(mo[0], 0xff, R * 4));
      CK(cudaMemset(ro[0], 0xff, R * 4));
      kern<<<R / rpb, threads>>>(xs[0], w, b, mo[0], ro[0], ys[0]);
      CK(cudaDeviceSynchronize());
      size_t nd = 0;
      const int u = max_ulp(get16(ys[0], n), yr, &nd);
      std::snprintf(check, sizeof check, "y max %d ulp (%zu of %zu differ); mean, rstd rel %.1e, %.1e", u, nd, n, max_rel_f(mo[0], mref, R),
                    max_rel_f(ro[0], rref, R));
      row(name, bytes, tm.ms([&](int i) { const int k = i % NS; kern<<<R / rpb, threads>>>(xs[k], w, b, mo[k], ro[k], ys[k]); }), check);
    };
    run("L1 64/row, block sums via smem (10 shfl, not 20)", lnv<64, 1, false, false, false, false>, 1, 64);
    run("L2 64/row, w/b loaded first", lnv<64, 1, true, false, false, false>, 1, 64);
    run("L3 64/row, one pass", lnv<64, 1, false, true, false, false>, 1, 64);
    run("L4 64/row x 4 rows, w/b first", lnv<64, 4, true, false, false, false>, 4, 256);
    run("L5 warp a row (2 uint4) x 8 rows, w/b first", lnv<32, 8, true, false, false, false>, 8, 256);
    run("L6 warp a row x 4 rows, w/b first", lnv<32, 4, true, false, false, false>, 4, 128);
    run("L7 warp a row x 8, w/b first, one pass", lnv<32, 8, true, true, false, false>, 8, 256);
    run("L8 warp a row x 8, w/b first, streaming", lnv<32, 8, true, false, true, false>, 8, 256);
    run("L9 warp a row x 8, w/b first, bf16x2 cvt", lnv<32, 8, true, false, false, true>, 8, 256);
    run("L10 16/row (4 uint4) x 16 rows, w/b first", lnv<16, 16, true, false, false, false>, 16, 256);
    run("L11 warp a row x 8, all four", lnv<32, 8, true, true, true, true>, 8, 256);
    run("L12 64/row, w/b first, one pass, stream, cvt", lnv<64, 1, true, true, true, true>, 1, 64);
    row("copy: 64 threads x 1 uint4 (L0's shape)", 2.0 * n * 2,
        tm.ms([&](int i) { const int k = i % NS; copy_rows<64, 1><<<R, 64>>>(reinterpret_cast<const uint4*>(xs[k]), reinterpret_cast<uint4*>(ys[k])); }), "-");
    row("copy: 256 threads x 2 uint4", 2.0 * n * 2,
        tm.ms([&](int i) { const int k = i % NS; copy_rows<256, 2><<<R / 8, 256>>>(reinterpret_cast<const uint4*>(xs[k]), reinterpret_cast<uint4*>(ys[k])); }), "-");
    row("cudaMemcpy of the same bytes", 2.0 * n * 2, tm.ms([&](int i) { const int k = i % NS; CK(cudaMemcpyAsync(ys[k], xs[k], n * 2, cudaMemcpyDeviceToDevice)); }), "-");
    for (int k = 0; k < NS; ++k) {
      CK(cudaFree(xs[k]));
      CK(cudaFree(ys[k]));
      CK(cudaFree(mo[k]));
      CK(cudaFree(ro[k]));
    }
  }

  // ================= (b) GELU forward, pointwise ==================================================
  {
    section("(b) GELU fwd: cuda_fused_gelu_6, 8192 x 2048 bf16");
    const int NS = 2;
    const size_t n = size_t(R) * H;
    auto xs = alloc_sets<ls_bf16>(NS, n);
    auto ys = alloc_sets<ls_bf16>(NS, n);
    ls_bf16* yref;
    CK(cudaMalloc(&yref, n * 2));
    for (int k = 0; k < NS; ++k) fill_bf16(xs[k], n, 20 + k, 2.f);
    const double bytes = 2.0 * n * 2;
    const int g0 = int(n / (8 * 256));
    gen::cuda_fused_gelu_6<<<g0, 256>>>(xs[0], yref);
    CK(cudaDeviceSynchronize());
    const auto yr = get16(yref, n);
    std::vector<double> yx(n);
    {
      const auto hx = get16(xs[0], n);
      for (size_t i = 0; i < n; ++i) {
        const double v = bf(hx[i]);
        yx[i] = 0.5 * v * std::erfc(-v / std::sqrt(2.0));
      }
    }
    int u0;
    bool ok0;
    vs_ref_elems(yr, yx, 1e-3, &u0, &ok0);
    std::snprintf(check, sizeof check, "reference; vs float64: max %d ulp (|y| >= 1e-3), assert_close %s", u0, ok0 ? "ok" : "FAILS");
    row("G0 generated: 1 uint4 a thread, erff", bytes, tm.ms([&](int i) { const int k = i % NS; gen::cuda_fused_gelu_6<<<g0, 256>>>(xs[k], ys[k]); }), check);
    auto run = [&](const char* name, auto kern, int v) {
      CK(cudaMemset(ys[0], 0xff, n * 2));
      kern<<<g0 / v, 256>>>(xs[0], ys[0]);
      CK(cudaDeviceSynchronize());
      size_t nd = 0;
      const auto ya = get16(ys[0], n);
      const int u = max_ulp(ya, yr, &nd, 1e-3f);  // G0's 1 + erff cancels in the far left tail
      int ux;
      bool okx;
      vs_ref_elems(ya, yx, 1e-3, &ux, &okx);
      std::snprintf(check, sizeof check, "max %d ulp of G0 (%zu differ; |y| >= 1e-3); vs float64: max %d ulp (|y| >= 1e-3), assert_close %s", u, nd, ux, okx ? "ok" : "FAILS");
      row(name, bytes, tm.ms([&](int i) { const int k = i % NS; kern<<<g0 / v, 256>>>(xs[k], ys[k]); }), check);
    };
    run("B1 = G0 in variant code", gelv<1, false, false, false>, 1);
    run("B2 2 uint4 a thread", gelv<2, false, false, false>, 2);
    run("B3 4 uint4 a thread", gelv<4, false, false, false>, 4);
    run("B4 1 uint4, streaming", gelv<1, true, false, false>, 1);
    run("B5 1 uint4, bf16x2 cvt", gelv<1, false, true, false>, 1);
    run("B6 1 uint4, erfc_pos (no erff)", gelv<1, false, false, true>, 1);
    run("B7 1 uint4, erfc_pos + bf16x2 cvt", gelv<1, false, true, true>, 1);
    run("B8 2 uint4, erfc_pos + cvt", gelv<2, false, true, true>, 2);
    run("B9 2 uint4, erfc_pos + cvt + streaming", gelv<2, true, true, true>, 2);
    run("B10 4 uint4, erfc_pos + cvt", gelv<4, false, true, true>, 4);
    row("copy: 256 threads x 1 uint4 (G0's shape)", bytes,
        tm.ms([&](int i) { const int k = i % NS; copy_rows<256, 1><<<g0, 256>>>(reinterpret_cast<const uint4*>(xs[k]), reinterpret_cast<uint4*>(ys[k])); }), "-");
    row("copy: 256 threads x 2 uint4", bytes,
        tm.ms([&](int i) { const int k = i % NS; copy_rows<256, 2><<<g0 / 2, 256>>>(reinterpret_cast<const uint4*>(xs[k]), reinterpret_cast<uint4*>(ys[k])); }), "-");
    row("cudaMemcpy of the same bytes", bytes, tm.ms([&](int i) { const int k = i % NS; CK(cudaMemcpyAsync(ys[k], xs[k], n * 2, cudaMemcpyDeviceToDevice)); }), "-");
    for (int k = 0; k < NS; ++k) {
      CK(cudaFree(xs[k]));
      CK(cudaFree(ys[k]));
    }
    CK(cudaFree(yref));
  }

  // ================= (a1) LayerNorm backward: weight and bias gradients (column sums) ================
  {
    section("(a1) LN weight+bias grads: cuda_fused_layer_norm_23, sums over 8192 rows of 512, f32 in");
    const int NS = 4;
    const size_t n = size_t(R) * C;
    auto gs = alloc_sets<float>(NS, n);
    auto xh = alloc_sets<float>(NS, n);
    auto sc = alloc_sets<float>(NS, n);  // the copies' destination
    ls_bf16 *ob, *ow, *rb, *rw;
    char *ws0, *ws1;
    CK(cudaMalloc(&ob, C * 2));
    CK(cudaMalloc(&ow, C * 2));
    CK(cudaMalloc(&rb, C * 2));
    CK(cudaMalloc(&rw, C * 2));
    CK(cudaMalloc(&ws0, 1 << 20));
    CK(cudaMalloc(&ws1, 4 << 20));
    CK(cudaMemset(ws0, 0, 1 << 20));
    CK(cudaMemset(ws1, 0, 4 << 20));
    for (int k = 0; k < NS; ++k) {
      fill_random(gs[k], n, 30 + k, 1.f);
      round_f32_to_bf16_values<<<1024, 256>>>(gs[k], n);  // the gradient is a widened bf16 (convert_element_type_18)
      fill_random(xh[k], n, 40 + k, 1.f);
    }
    CK(cudaDeviceSynchronize());
    std::vector<double> refb(C, 0.0), refw(C, 0.0);
    {
      std::vector<float> hg(n), hx(n);
      CK(cudaMemcpy(hg.data(), gs[0], n * 4, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(hx.data(), xh[0], n * 4, cudaMemcpyDeviceToHost));
      for (size_t r = 0; r < size_t(R); ++r)
        for (int c = 0; c < C; ++c) refb[c] += hg[r * C + c], refw[c] += double(hg[r * C + c]) * hx[r * C + c];
    }
    const double bytes = 2.0 * n * 4 + 2.0 * C * 2;
    gen::cuda_fused_layer_norm_23<<<528, 256>>>(gs[0], xh[0], rb, rw, ws0);
    CK(cudaDeviceSynchronize());
    const auto vb = get16(rb, C), vw = get16(rw, C);
    double e0b, e0w;
    bool k0b, k0w;
    vs_ref(vb, refb, &e0b, &k0b);
    vs_ref(vw, refw, &e0w, &k0w);
    std::snprintf(check, sizeof check, "reference; vs float64: rel %.1e / %.1e, assert_close %s", e0b, e0w, k0b && k0w ? "ok" : "FAILS");
    row("F0 generated: 32 col x 8 lanes, 33 slices, ws finish", bytes,
        tm.ms([&](int i) { const int k = i % NS; gen::cuda_fused_layer_norm_23<<<528, 256>>>(gs[k], xh[k], ob, ow, ws0); }), check);
    auto run = [&](const char* name, auto kern, int vec, int lanes, int S, bool cl) {
      const int grid = C / (32 * vec) * S, block = 32 * lanes;
      auto launch = [&](int i) {  // i counts launches; the input set rotates
        const int k = i % NS;
        if (cl) CK(cluster_launch(kern, grid, block, S, (const float*)gs[k], (const float*)xh[k], ob, ow, ws1));
        else kern<<<grid, block>>>(gs[k], xh[k], ob, ow, ws1);
      };
      if (cl && S > 8) CK(cudaFuncSetAttribute((const void*)kern, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
      CK(cudaMemset(ob, 0xff, C * 2));
      CK(cudaMemset(ow, 0xff, C * 2));
      if (cl) {  // a cluster shape the GPU cannot place: say so and go on
        const cudaError_t e = cluster_launch(kern, grid, block, S, (const float*)gs[0], (const float*)xh[0], ob, ow, ws1);
        if (e != cudaSuccess) {
          std::printf("| %-44s | launch failed: %s | | | |\n", name, cudaGetErrorString(e));
          return;
        }
      } else {
        launch(0);
      }
      CK(cudaDeviceSynchronize());
      const auto ab = get16(ob, C), aw = get16(ow, C);
      double eb, ew;
      bool okb, okw;
      vs_ref(ab, refb, &eb, &okb);
      vs_ref(aw, refw, &ew, &okw);
      std::snprintf(check, sizeof check, "b/w max %d/%d ulp of F0; vs float64 rel %.1e / %.1e, assert_close %s", max_ulp(ab, vb), max_ulp(aw, vw), eb, ew,
                    okb && okw ? "ok" : "FAILS");
      row(name, bytes, tm.ms(launch), check);
    };
    run("F1 = F0 in variant code (33 slices, ws)", colf<1, 8, 33, 4, false>, 1, 8, 33, false);
    run("F2 33 slices, unroll 8", colf<1, 8, 33, 8, false>, 1, 8, 33, false);
    run("F3 66 slices, unroll 4", colf<1, 8, 66, 4, false>, 1, 8, 66, false);
    run("F4 16 slices a cluster (DSMEM finish)", colf<1, 8, 16, 4, true>, 1, 8, 16, true);
    run("F5 16 slices a cluster, unroll 8", colf<1, 8, 16, 8, true>, 1, 8, 16, true);
    run("F6 16 a cluster, 16 lanes (512 threads)", colf<1, 16, 16, 4, true>, 1, 16, 16, true);
    run("F7 float2 cols, 16 a cluster (128 blocks)", colf<2, 8, 16, 4, true>, 2, 8, 16, true);
    run("F8 float2 cols, 16 a cluster, 16 lanes", colf<2, 16, 16, 4, true>, 2, 16, 16, true);
    run("F9 float2 cols, 66 slices, ws", colf<2, 8, 66, 4, false>, 2, 8, 66, false);
    run("F10 float4 cols, 33 slices (132 blocks), ws", colf<4, 8, 33, 4, false>, 4, 8, 33, false);
    run("F11 float4 cols, 66 slices x 16 lanes, ws", colf<4, 16, 66, 2, false>, 4, 16, 66, false);
    run("F12 float4 cols, 16 a cluster (64 blocks)", colf<4, 16, 16, 4, true>, 4, 16, 16, true);
    row("copy of the same bytes: 256 x 2 uint4", bytes,
        tm.ms([&](int i) { const int k = i % NS; copy_rows<256, 2><<<int(n / 4 / 512), 256>>>(reinterpret_cast<const uint4*>(gs[k]), reinterpret_cast<uint4*>(sc[k])); }), "-");
    row("cudaMemcpy of the same bytes", bytes, tm.ms([&](int i) { const int k = i % NS; CK(cudaMemcpyAsync(sc[k], gs[k], n * 4, cudaMemcpyDeviceToDevice)); }), "-");
    for (int k = 0; k < NS; ++k) {
      CK(cudaFree(gs[k]));
      CK(cudaFree(xh[k]));
      CK(cudaFree(sc[k]));
    }
  }

  // ================= (a2) GELU backward + fc1's bias gradient (column sums, bf16) ====================
  {
    section("(a2) GELU bwd + bias grad: cuda_fused_gelu_linear_11, 8192 x 2048 bf16");
    const int NS = 2;
    const size_t n = size_t(R) * H;
    auto go = alloc_sets<ls_bf16>(NS, n);
    auto xs = alloc_sets<ls_bf16>(NS, n);
    auto gi = alloc_sets<ls_bf16>(NS, n);
    auto sc = alloc_sets<ls_bf16>(NS, 3 * n / 2);
    ls_bf16 *bias, *giref, *bref;
    CK(cudaMalloc(&bias, H * 2));
    CK(cudaMalloc(&giref, n * 2));
    CK(cudaMalloc(&bref, H * 2));
    for (int k = 0; k < NS; ++k) fill_bf16(go[k], n, 50 + k, 0.01f), fill_bf16(xs[k], n, 60 + k, 2.f);
    const double bytes = 3.0 * n * 2 + 2.0 * H;
    gen::cuda_fused_gelu_linear_11<<<512, 256>>>(go[0], xs[0], giref, bref);
    CK(cudaDeviceSynchronize());
    const auto gr = get16(giref, n), br = get16(bref, H);
    std::vector<double> refb(H, 0.0), gx(n);
    for (size_t r = 0; r < size_t(R); ++r)
      for (int c = 0; c < H; ++c) refb[c] += bf(gr[r * H + c]);
    {
      const auto hg = get16(go[0], n), hx = get16(xs[0], n);
      for (size_t i = 0; i < n; ++i) {
        const double v = bf(hx[i]);
        gx[i] = bf(hg[i]) * (0.5 * std::erfc(-v / std::sqrt(2.0)) + v * std::exp(-0.5 * v * v) * 0.3989422804014327);
      }
    }
    double e0;
    bool ok0, okg0;
    int ug0;
    vs_ref(br, refb, &e0, &ok0);
    vs_ref_elems(gr, gx, 1e-5, &ug0, &okg0);
    std::snprintf(check, sizeof check, "reference; gi vs float64: max %d ulp (|gi| >= 1e-5), assert_close %s; bias vs float64 sum of its gi: rel %.1e, %s", ug0,
                  okg0 ? "ok" : "FAILS", e0, ok0 ? "ok" : "FAILS");
    row("E0 generated: 2-byte accesses, 8 a cluster", bytes, tm.ms([&](int i) { const int k = i % NS; gen::cuda_fused_gelu_linear_11<<<512, 256>>>(go[k], xs[k], gi[k], bias); }), check);
    auto run = [&](const char* name, auto kern, int vec, int lanes, int S) {
      const int grid = H / (32 * vec) * S, block = 32 * lanes;
      auto launch = [&](int i) { const int k = i % NS; CK(cluster_launch(kern, grid, block, S, (const ls_bf16*)go[k], (const ls_bf16*)xs[k], gi[k], bias)); };
      if (S > 8) CK(cudaFuncSetAttribute((const void*)kern, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
      CK(cudaMemset(gi[0], 0xff, n * 2));
      CK(cudaMemset(bias, 0xff, H * 2));
      const cudaError_t le = cluster_launch(kern, grid, block, S, (const ls_bf16*)go[0], (const ls_bf16*)xs[0], gi[0], bias);
      if (le != cudaSuccess) {  // a cluster shape the GPU cannot place: say so and go on
        std::printf("| %-44s | launch failed: %s | | | |\n", name, cudaGetErrorString(le));
        return;
      }
      CK(cudaDeviceSynchronize());
      size_t nd = 0;
      const auto ga = get16(gi[0], n);
      const int u = max_ulp(ga, gr, &nd, 1e-5f);
      int ugx;
      bool okg;
      vs_ref_elems(ga, gx, 1e-5, &ugx, &okg);
      const auto b = get16(bias, H);
      double e;
      bool ok;
      vs_ref(b, refb, &e, &ok);
      std::snprintf(check, sizeof check, "gi max %d ulp of E0 (%zu differ; |gi| >= 1e-5), vs float64 %d ulp, %s; bias max %d ulp of E0, vs float64 rel %.1e, %s", u, nd, ugx,
                    okg ? "ok" : "FAILS", max_ulp(b, br), e, ok ? "ok" : "FAILS");
      row(name, bytes, tm.ms(launch), check);
    };
    run("E1 = E0 in variant code (2-byte, 8 slices)", colg<1, 8, 8, 4, false, false>, 1, 8, 8);
    run("E2 2-byte, 16 slices", colg<1, 8, 16, 4, false, false>, 1, 8, 16);
    run("E3 bf16x2 (4-byte), 8 slices", colg<2, 8, 8, 4, false, false>, 2, 8, 8);
    run("E4 bf16x2 (4-byte), 16 slices", colg<2, 8, 16, 4, false, false>, 2, 8, 16);
    run("E5 4 bf16 (8-byte), 16 slices", colg<4, 8, 16, 4, false, false>, 4, 8, 16);
    run("E6 8 bf16 (16-byte), 16 slices (128 blocks)", colg<8, 8, 16, 4, false, false>, 8, 8, 16);
    run("E7 8 bf16 (16-byte), 16 slices, 16 lanes", colg<8, 16, 16, 2, false, false>, 8, 16, 16);
    run("E8 8-byte, 16 slices, bf16x2 cvt", colg<4, 8, 16, 4, false, true>, 4, 8, 16);
    run("E9 2-byte, 8 slices, erfc_pos (no erff)", colg<1, 8, 8, 4, true, false>, 1, 8, 8);
    run("E10 8-byte, 16 slices, erfc_pos + cvt", colg<4, 8, 16, 4, true, true>, 4, 8, 16);
    run("E11 16-byte, 16 slices, erfc_pos + cvt", colg<8, 8, 16, 4, true, true>, 8, 8, 16);
    run("E12 8-byte, 16 slices x 16 lanes, erfc + cvt", colg<4, 16, 16, 2, true, true>, 4, 16, 16);
    row("copy of the same bytes: 256 x 2 uint4", bytes,
        tm.ms([&](int i) {
          const int k = i % NS;  // 48 MB: go and the first half of x are one copy's source only in size; copy go then half of x
          copy_rows<256, 2><<<int(n * 2 / 16 / 512), 256>>>(reinterpret_cast<const uint4*>(go[k]), reinterpret_cast<uint4*>(sc[k]));
          copy_rows<256, 2><<<int(n / 16 / 512), 256>>>(reinterpret_cast<const uint4*>(xs[k]), reinterpret_cast<uint4*>(sc[k] + n));
        }),
        "- (two launches)");
    row("cudaMemcpy of the same bytes", bytes, tm.ms([&](int i) {
          const int k = i % NS;
          CK(cudaMemcpyAsync(sc[k], go[k], n * 2, cudaMemcpyDeviceToDevice));
          CK(cudaMemcpyAsync(sc[k] + n, xs[k], n, cudaMemcpyDeviceToDevice));
        }),
        "- (two copies)");
  }
  return 0;
}
