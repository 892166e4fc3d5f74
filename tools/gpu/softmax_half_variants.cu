// Row-kernel variants for softmax(x * 0.125) in bfloat16 at 16384x4096 (issue 34: memory-bound
// kernels at 90% of copy bandwidth), one build and run on the GPU machine:
//   nvcc -O3 -arch=sm_90 -o smv tools/gpu/softmax_half_variants.cu && ./smv
// G0 is the kernel Lowerscope generates (`lowerscope-cli compile softmax.txt --device cuda --dump
// DIR`: a block of 256 threads a row, the row in registers as 2 uint4 a thread, exp recomputed in
// the output loop, IEEE division). The others change one thing at a time: division as
// div.full.f32 (Triton's float32 `/`), exp values kept in registers, threads a row, rows a block,
// streaming loads and stores. Each is checked against G0 on the same random input (output poisoned
// first): the largest difference in bf16 units of the last place. Times: CUDA events around 20
// launches, median of 15 batches after warm-up. Notes and outcomes: tools/gpu/NOTES-bandwidth.md.
#include "variants_harness.cuh"

namespace lsp {
#include "../../core/codegen/cuda_prelude.h"
}
using lsp::ls_bf16;
using lsp::ls_exp_fast;
using lsp::ls_float;
using lsp::ls_lane_bf16;
using lsp::ls_set_lane;
using lsp::ls_to_bf16;

constexpr int R = 16384, C = 4096;

// ---- G0: the generated kernel (cuda_fused_mul_sm_0, grid 16384 x block 256) ---------------------
__global__ void __launch_bounds__(256) g0(const ls_bf16* __restrict__ in_ptr0, ls_bf16* __restrict__ out_ptr0) {
  const int ls_rt = threadIdx.x;
  const int x0 = blockIdx.x;
  uint4 ls_row0[2];
  float acc2 = (-__int_as_float(0x7f800000));
#pragma unroll
  for (int ls_i = 0; ls_i < 2; ++ls_i) {
    const int ls_g = ls_rt + ls_i * 256;
    ls_row0[ls_i] = *reinterpret_cast<const uint4*>(&in_ptr0[4096 * x0 + 8 * ls_g]);
#pragma unroll
    for (int ls_j = 0; ls_j < 8; ++ls_j) {
      auto tmp0 = ls_float(ls_lane_bf16(ls_row0[ls_i], ls_j));
      auto tmp1 = ls_float(ls_to_bf16(static_cast<float>(tmp0 * 0.125f)));
      auto tmp2 = static_cast<float>(tmp1);
      acc2 = (tmp2 != tmp2 || tmp2 > acc2) ? tmp2 : acc2;
    }
  }
  acc2 = lsp::ls_block_reduce<1, 1>(acc2, (-__int_as_float(0x7f800000)));
  float acc5 = 0.0f;
#pragma unroll
  for (int ls_i = 0; ls_i < 2; ++ls_i) {
#pragma unroll
    for (int ls_j = 0; ls_j < 8; ++ls_j) {
      auto tmp3 = ls_float(ls_lane_bf16(ls_row0[ls_i], ls_j));
      auto tmp4 = ls_float(ls_to_bf16(static_cast<float>(tmp3 * 0.125f)));
      auto tmp6 = static_cast<float>(tmp4 - acc2);
      auto tmp7 = static_cast<float>(ls_exp_fast(tmp6));
      acc5 = acc5 + tmp7;
    }
  }
  acc5 = lsp::ls_block_reduce<0, 2>(acc5, 0.0f);
#pragma unroll
  for (int ls_i = 0; ls_i < 2; ++ls_i) {
    const int ls_g = ls_rt + ls_i * 256;
    uint4 ls_w0;
#pragma unroll
    for (int ls_j = 0; ls_j < 8; ++ls_j) {
      auto tmp8 = ls_float(ls_lane_bf16(ls_row0[ls_i], ls_j));
      auto tmp9 = ls_float(ls_to_bf16(static_cast<float>(tmp8 * 0.125f)));
      auto tmp11 = static_cast<float>(tmp9 - acc2);
      auto tmp12 = static_cast<float>(ls_exp_fast(tmp11));
      auto tmp13 = static_cast<float>(tmp12 / acc5);
      auto tmp14 = ls_float(ls_to_bf16(static_cast<float>(tmp13)));
      ls_set_lane(ls_w0, ls_j, ls_to_bf16(static_cast<float>(tmp14)));
    }
    *reinterpret_cast<uint4*>(&out_ptr0[4096 * x0 + 8 * ls_g]) = ls_w0;
  }
}

// ---- G1: the generated kernel after 058f276 (div.full, 128 threads a row, 4 uint4 a thread), and
// three changes to it, one at a time: its loads in a loop of their own before the max (SPLIT), the
// rows' reductions as row_reduce below (OWNRED), one rounding to bf16 at the end instead of two
// (ONEROUND).
__device__ __forceinline__ float div_full(float a, float b);
template <int OP, int T, int RPB, int SLOT> __device__ __forceinline__ float row_reduce(float v);
template <bool SPLIT, bool OWNRED, bool ONEROUND>
__global__ void __launch_bounds__(128) g1(const ls_bf16* __restrict__ in_ptr0, ls_bf16* __restrict__ out_ptr0) {
  const int ls_rt = threadIdx.x;
  const int x0 = blockIdx.x;
  uint4 ls_row0[4];
  float acc2 = (-__int_as_float(0x7f800000));
  if (SPLIT) {
#pragma unroll
    for (int ls_i = 0; ls_i < 4; ++ls_i) ls_row0[ls_i] = *reinterpret_cast<const uint4*>(&in_ptr0[4096 * x0 + 8 * (ls_rt + ls_i * 128)]);
  }
#pragma unroll
  for (int ls_i = 0; ls_i < 4; ++ls_i) {
    const int ls_g = ls_rt + ls_i * 128;
    if (!SPLIT) ls_row0[ls_i] = *reinterpret_cast<const uint4*>(&in_ptr0[4096 * x0 + 8 * ls_g]);
#pragma unroll
    for (int ls_j = 0; ls_j < 8; ++ls_j) {
      auto tmp0 = ls_float(ls_lane_bf16(ls_row0[ls_i], ls_j));
      auto tmp1 = ls_float(ls_to_bf16(static_cast<float>(tmp0 * 0.125f)));
      auto tmp2 = static_cast<float>(tmp1);
      acc2 = (tmp2 != tmp2 || tmp2 > acc2) ? tmp2 : acc2;
    }
  }
  acc2 = OWNRED ? row_reduce<1, 128, 1, 0>(acc2) : lsp::ls_block_reduce<1, 1>(acc2, (-__int_as_float(0x7f800000)));
  float acc5 = 0.0f;
#pragma unroll
  for (int ls_i = 0; ls_i < 4; ++ls_i) {
#pragma unroll
    for (int ls_j = 0; ls_j < 8; ++ls_j) {
      auto tmp3 = ls_float(ls_lane_bf16(ls_row0[ls_i], ls_j));
      auto tmp4 = ls_float(ls_to_bf16(static_cast<float>(tmp3 * 0.125f)));
      auto tmp6 = static_cast<float>(tmp4 - acc2);
      auto tmp7 = static_cast<float>(ls_exp_fast(tmp6));
      acc5 = acc5 + tmp7;
    }
  }
  acc5 = OWNRED ? row_reduce<0, 128, 1, 1>(acc5) : lsp::ls_block_reduce<0, 2>(acc5, 0.0f);
#pragma unroll
  for (int ls_i = 0; ls_i < 4; ++ls_i) {
    const int ls_g = ls_rt + ls_i * 128;
    uint4 ls_w0;
#pragma unroll
    for (int ls_j = 0; ls_j < 8; ++ls_j) {
      auto tmp8 = ls_float(ls_lane_bf16(ls_row0[ls_i], ls_j));
      auto tmp9 = ls_float(ls_to_bf16(static_cast<float>(tmp8 * 0.125f)));
      auto tmp11 = static_cast<float>(tmp9 - acc2);
      auto tmp12 = static_cast<float>(ls_exp_fast(tmp11));
      auto tmp13 = static_cast<float>(lsp::ls_div_fast(tmp12, acc5));
      if (ONEROUND) {
        ls_set_lane(ls_w0, ls_j, ls_to_bf16(tmp13));
      } else {
        auto tmp14 = ls_float(ls_to_bf16(static_cast<float>(tmp13)));
        ls_set_lane(ls_w0, ls_j, ls_to_bf16(static_cast<float>(tmp14)));
      }
    }
    *reinterpret_cast<uint4*>(&out_ptr0[4096 * x0 + 8 * ls_g]) = ls_w0;
  }
}

// ---- the variants: T threads a row, V uint4 (8 elements) a thread, RPB rows a block --------------
__device__ __forceinline__ float div_full(float a, float b) {
  float q;
  asm("div.full.f32 %0, %1, %2;" : "=f"(q) : "f"(a), "f"(b));
  return q;
}
template <int OP> __device__ __forceinline__ float comb(float a, float b) { return OP == 1 ? ((b != b || b > a) ? b : a) : a + b; }
// Reduces v across the T threads of a row (RPB rows a block); every thread of the row gets it.
// SLOT: which shared buffer (two reductions in a row need no barrier between them).
template <int OP, int T, int RPB, int SLOT> __device__ __forceinline__ float row_reduce(float v) {
  constexpr int W = T < 32 ? T : 32;
#pragma unroll
  for (int o = W / 2; o > 0; o /= 2) v = comb<OP>(v, __shfl_xor_sync(0xffffffffu, v, o, W));
  if (T <= 32) return v;
  constexpr int NW = T / 32;  // warps a row
  __shared__ float s[RPB][NW > 0 ? NW : 1];
  const int sub = threadIdx.x / T, w = (threadIdx.x % T) / 32, lane = threadIdx.x & 31;
  if (lane == 0) s[sub][w] = v;
  __syncthreads();
  v = s[sub][0];
#pragma unroll
  for (int k = 1; k < NW; ++k) v = comb<OP>(v, s[sub][k]);
  return v;
}
template <int T, int V, int RPB, bool FASTDIV, bool KEEP, bool STREAM>
__global__ void __launch_bounds__(T* RPB) var(const ls_bf16* __restrict__ in, ls_bf16* __restrict__ out) {
  const int sub = threadIdx.x / T, t = threadIdx.x % T;
  const long long row = static_cast<long long>(blockIdx.x) * RPB + sub;
  const ls_bf16* x = in + row * C;
  ls_bf16* y = out + row * C;
  uint4 v[V];
#pragma unroll
  for (int i = 0; i < V; ++i) {
    const uint4* p = reinterpret_cast<const uint4*>(&x[8 * (t + i * T)]);
    v[i] = STREAM ? __ldcs(p) : *p;
  }
  float m = -__int_as_float(0x7f800000);
#pragma unroll
  for (int i = 0; i < V; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) m = comb<1>(m, ls_float(ls_to_bf16(ls_float(ls_lane_bf16(v[i], j)) * 0.125f)));
  m = row_reduce<1, T, RPB, 0>(m);
  float e[KEEP ? V * 8 : 1];
  float s = 0;
#pragma unroll
  for (int i = 0; i < V; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float ex = ls_exp_fast(ls_float(ls_to_bf16(ls_float(ls_lane_bf16(v[i], j)) * 0.125f)) - m);
      if (KEEP) e[i * 8 + j] = ex;
      s += ex;
    }
  s = row_reduce<0, T, RPB, 1>(s);
#pragma unroll
  for (int i = 0; i < V; ++i) {
    uint4 w;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float ex = KEEP ? e[i * 8 + j] : ls_exp_fast(ls_float(ls_to_bf16(ls_float(ls_lane_bf16(v[i], j)) * 0.125f)) - m);
      ls_set_lane(w, j, ls_to_bf16(FASTDIV ? div_full(ex, s) : ex / s));
    }
    uint4* p = reinterpret_cast<uint4*>(&y[8 * (t + i * T)]);
    if (STREAM) __stcs(p, w);
    else *p = w;
  }
}
// The same bytes and access shape, copied (the shape's ceiling).
template <int T, int V> __global__ void __launch_bounds__(T) copy_rows(const uint4* __restrict__ in, uint4* __restrict__ out) {
  const long long base = static_cast<long long>(blockIdx.x) * T * V;
  uint4 v[V];
#pragma unroll
  for (int i = 0; i < V; ++i) v[i] = in[base + threadIdx.x + i * T];
#pragma unroll
  for (int i = 0; i < V; ++i) out[base + threadIdx.x + i * T] = v[i];
}

__global__ void to_bf16(const float* a, ls_bf16* b, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) b[i] = ls_to_bf16(a[i]);
}
// Largest difference in bf16 ulps (as ordered 16-bit integers) between a and b.
static int max_ulp(const ls_bf16* a, const ls_bf16* b, size_t n) {
  std::vector<unsigned short> x(n), y(n);
  CK(cudaMemcpy(x.data(), a, n * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(y.data(), b, n * 2, cudaMemcpyDeviceToHost));
  int m = 0;
  for (size_t i = 0; i < n; ++i) {
    auto ord = [](unsigned short h) { return (h & 0x8000) ? -int(h & 0x7fff) : int(h); };
    m = std::max(m, std::abs(ord(x[i]) - ord(y[i])));
  }
  return m;
}

int main() {
  Timer tm;
  copy_ceiling(tm);
  const size_t n = size_t(R) * C;
  float* f;
  ls_bf16 *in, *ref, *out;
  CK(cudaMalloc(&f, n * 4));
  CK(cudaMalloc(&in, n * 2));
  CK(cudaMalloc(&ref, n * 2));
  CK(cudaMalloc(&out, n * 2));
  fill_random(f, n, 7, 4.f);
  to_bf16<<<1024, 256>>>(f, in, n);
  const double bytes = 2.0 * n * 2;
  g0<<<R, 256>>>(in, ref);
  CK(cudaDeviceSynchronize());
  row("G0 generated: 256/row, 2 uint4, recompute, IEEE /", bytes, tm.ms([&](int) { g0<<<R, 256>>>(in, ref); }), "reference");
  char check[64];
  auto run = [&](const char* name, void (*k)(const ls_bf16*, ls_bf16*), int grid, int block) {
    CK(cudaMemset(out, 0xff, n * 2));
    k<<<grid, block>>>(in, out);
    CK(cudaDeviceSynchronize());
    std::snprintf(check, sizeof check, "max %d ulp", max_ulp(out, ref, n));
    row(name, bytes, tm.ms([&](int) { k<<<grid, block>>>(in, out); }), check);
  };
  run("G1 generated after 058f276 (128/row, div.full)", g1<false, false, false>, R, 128);
  run("G1 + loads first", g1<true, false, false>, R, 128);
  run("G1 + row_reduce", g1<false, true, false>, R, 128);
  run("G1 + one rounding", g1<false, false, true>, R, 128);
  run("G1 + all three", g1<true, true, true>, R, 128);
  run("128/row, 4 uint4, div.full (no keep)", var<128, 4, 1, true, false, false>, R, 128);
  run("G0 as variant: 256/row, 2 uint4, IEEE /", var<256, 2, 1, false, false, false>, R, 256);
  run("256/row, 2 uint4, div.full", var<256, 2, 1, true, false, false>, R, 256);
  run("256/row, 2 uint4, div.full, keep exp", var<256, 2, 1, true, true, false>, R, 256);
  run("256/row, 2 uint4, div.full, keep, stream", var<256, 2, 1, true, true, true>, R, 256);
  run("512/row, 1 uint4, div.full, keep", var<512, 1, 1, true, true, false>, R, 512);
  run("128/row, 4 uint4, div.full, keep", var<128, 4, 1, true, true, false>, R, 128);
  run("128/row x 2 rows, 4 uint4, div.full, keep", var<128, 4, 2, true, true, false>, R / 2, 256);
  run("64/row x 4 rows, 8 uint4, div.full, keep", var<64, 8, 4, true, true, false>, R / 4, 256);
  run("32/row (warp) x 8 rows, 16 uint4, div.full", var<32, 16, 8, true, false, false>, R / 8, 256);
  run("32/row (warp) x 8 rows, 16 uint4, keep", var<32, 16, 8, true, true, false>, R / 8, 256);
  run("32/row (warp) x 4 rows, 16 uint4, keep", var<32, 16, 4, true, true, false>, R / 4, 128);
  run("256/row x 2 rows, 2 uint4, div.full, keep", var<256, 2, 2, true, true, false>, R / 2, 512);
  const uint4* ci = reinterpret_cast<const uint4*>(in);
  uint4* co = reinterpret_cast<uint4*>(out);
  row("copy: 256 threads x 2 uint4", bytes, tm.ms([&](int) { copy_rows<256, 2><<<R, 256>>>(ci, co); }), "-");
  row("copy: 512 threads x 1 uint4", bytes, tm.ms([&](int) { copy_rows<512, 1><<<R, 512>>>(ci, co); }), "-");
  row("copy: 256 threads x 8 uint4", bytes, tm.ms([&](int) { copy_rows<256, 8><<<R / 4, 256>>>(ci, co); }), "-");
  row("cudaMemcpy of the same bytes", bytes, tm.ms([&](int) { CK(cudaMemcpyAsync(out, in, n * 2, cudaMemcpyDeviceToDevice)); }), "-");
  return 0;
}
