// Column-reduction variants on the H100 (issue 8: 90% of copy bandwidth), one build and run:
//   nvcc -O3 -arch=sm_90 -o col tools/gpu/column_variants.cu && ./col
// The kernel: LayerNorm's weight and bias gradients of `layernorm+gelu 8x1024x1024 --train`, sums
// over 8192 rows of two 1024-column float32 matrices (64 MB read), as Lowerscope generates it
// (`lowerscope-cli compile MODEL --device cuda --train --dump DIR`, the column form: a warp takes 32
// neighbouring columns, 8 warps share the rows, 16 slices of the rows, the last block of a column
// group sums the slices' partials). Every variant is checked against it on random inputs (outputs
// poisoned first). Times: CUDA events around 20 launches, median of 15 batches after warm-up.
// Notes and outcomes: tools/gpu/NOTES-bandwidth.md.
#include <cooperative_groups.h>

#include "variants_harness.cuh"
namespace cg = cooperative_groups;

// ---- the generated kernels' prelude, as NVRTC sees it (its typedefs kept apart in a namespace) -----
namespace lsp {
#include "../../core/codegen/cuda_prelude.h"
}
using lsp::ls_column_reduce;
using lsp::ls_combine;
using lsp::ls_lane;

// ---- the generated kernel (LayerNorm's weight and bias gradients at 8x1024x1024, training) -------
// cuda_fused_layer_norm_2: iteration (1024, 8192), column form, grid 512 x block 256, 32 columns x 8 lanes, 16 slices a column, from layer_norm
extern "C" __global__ void __launch_bounds__(256) cuda_fused_layer_norm_2(const float* __restrict__ in_ptr0, const float* __restrict__ in_ptr1, float* __restrict__ out_ptr0, float* __restrict__ out_ptr1, char* __restrict__ ls_ws) {
    const int ls_rt = threadIdx.x >> 5;  // the lane: which rows
    const int x0 = (int)(blockIdx.x / 16) * 32 + (threadIdx.x & 31);
    const int ls_slice = blockIdx.x % 16;
    float acc39 = 0.0f;
    float acc40 = 0.0f;
    #pragma unroll 4
    for (int r0 = (int)ls_slice * 8 + ls_rt; r0 < 8192; r0 += 128) {
        // op39: mul_19
        auto tmp0 = in_ptr0[1024*r0 + x0];
        auto tmp1 = in_ptr1[1024*r0 + x0];
        auto tmp2 = static_cast<float>(tmp0 * tmp1);
        // op40: sum_5
        acc39 = acc39 + tmp2;
        // op41: sum_6
        acc40 = acc40 + tmp0;
    }
    acc39 = ls_column_reduce<0>(acc39, 0.0f);
    acc40 = ls_column_reduce<0>(acc40, 0.0f);
    float* ls_part39 = reinterpret_cast<float*>(ls_ws + 0);
    if (ls_rt == 0) ls_part39[x0 * 16 + ls_slice] = acc39;
    float* ls_part40 = reinterpret_cast<float*>(ls_ws + 131072);
    if (ls_rt == 0) ls_part40[x0 * 16 + ls_slice] = acc40;
    unsigned* ls_count = reinterpret_cast<unsigned*>(ls_ws + 262144);
    __shared__ bool ls_last;
    __threadfence();
    __syncthreads();  // every partial of the block is visible before it is counted
    if (threadIdx.x == 0) ls_last = atomicAdd(&ls_count[blockIdx.x / 16], 1u) == 16u - 1u;
    __syncthreads();
    if (!ls_last) return;  // the columns' last block finishes them
    __threadfence();
    acc39 = 0.0f;
    for (int s = ls_rt; s < 16; s += 8) acc39 = ls_combine<0>(acc39, __ldcg(&ls_part39[x0 * 16 + s]));
    acc39 = ls_column_reduce<0>(acc39, 0.0f);
    acc40 = 0.0f;
    for (int s = ls_rt; s < 16; s += 8) acc40 = ls_combine<0>(acc40, __ldcg(&ls_part40[x0 * 16 + s]));
    acc40 = ls_column_reduce<0>(acc40, 0.0f);
    if (threadIdx.x == 0) ls_count[blockIdx.x / 16] = 0;  // ready for the next launch
    if (ls_rt == 0) out_ptr0[x0] = acc39;
    if (ls_rt == 0) out_ptr1[x0] = acc40;
}

// ---- the same kernel as generated with clusters (sm_90; the first warp of the first block reads) ----
using lsp::ls_cluster_load;
using lsp::ls_cluster_sync;
// cuda_fused_layer_norm_2: iteration (1024, 8192), column form, grid 512 x block 256, 32 columns x 8 lanes, 16 slices a column (a thread-block cluster), from layer_norm
extern "C" __global__ void __launch_bounds__(256) __cluster_dims__(16, 1, 1) cuda_fused_layer_norm_2_cluster(const float* __restrict__ in_ptr0, const float* __restrict__ in_ptr1, float* __restrict__ out_ptr0, float* __restrict__ out_ptr1, char* __restrict__ ls_ws) {
    const int ls_rt = threadIdx.x >> 5;  // the lane: which rows
    const int x0 = (int)(blockIdx.x / 16) * 32 + (threadIdx.x & 31);
    const int ls_slice = blockIdx.x % 16;
    float acc39 = 0.0f;
    float acc40 = 0.0f;
    #pragma unroll 4
    for (int r0 = (int)ls_slice * 8 + ls_rt; r0 < 8192; r0 += 128) {
        // op39: mul_19
        auto tmp0 = in_ptr0[1024*r0 + x0];
        auto tmp1 = in_ptr1[1024*r0 + x0];
        auto tmp2 = static_cast<float>(tmp0 * tmp1);
        // op40: sum_5
        acc39 = acc39 + tmp2;
        // op41: sum_6
        acc40 = acc40 + tmp0;
    }
    acc39 = ls_column_reduce<0>(acc39, 0.0f);
    acc40 = ls_column_reduce<0>(acc40, 0.0f);
    __shared__ float ls_cpart39[32];
    if (ls_rt == 0) ls_cpart39[threadIdx.x] = acc39;
    __shared__ float ls_cpart40[32];
    if (ls_rt == 0) ls_cpart40[threadIdx.x] = acc40;
    ls_cluster_sync();  // the cluster's blocks (the column group's 16 slices) have their sums in shared memory
    if (ls_slice == 0 && ls_rt == 0) {
        acc39 = 0.0f;
        acc40 = 0.0f;
        for (unsigned s = 0; s < 16u; ++s) {
            acc39 = ls_combine<0>(acc39, ls_cluster_load(&ls_cpart39[threadIdx.x & 31], s));
            acc40 = ls_combine<0>(acc40, ls_cluster_load(&ls_cpart40[threadIdx.x & 31], s));
        }
    }
    ls_cluster_sync();  // read: the others may leave
    if (ls_slice != 0) return;
    if (ls_rt == 0) out_ptr0[x0] = acc39;
    if (ls_rt == 0) out_ptr1[x0] = acc40;
}

constexpr int kR = 8192, kX = 1024;
// Scalar columns as generated, S slices a column, unroll U.
// FENCE 0: every thread fences before the count (as generated); 1: only the warp that wrote the
// partials; 2: no fences (wrong in general: measures what they cost).
template <int S, int U, bool FINISH = true, int FENCE = 0>
__global__ void __launch_bounds__(256) col_s(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ o0,
                                             float* __restrict__ o1, char* __restrict__ ws) {
  const int rt = threadIdx.x >> 5;
  const int x0 = (int)(blockIdx.x / S) * 32 + (threadIdx.x & 31);
  const int slice = blockIdx.x % S;
  float s0 = 0.f, s1 = 0.f;
#pragma unroll U
  for (int r = slice * 8 + rt; r < kR; r += 8 * S) {
    const float t0 = a[kX * r + x0], t1 = b[kX * r + x0];
    s0 += t0 * t1;
    s1 += t0;
  }
  s0 = ls_column_reduce<0>(s0, 0.f);
  s1 = ls_column_reduce<0>(s1, 0.f);
  float* p0 = reinterpret_cast<float*>(ws);
  float* p1 = reinterpret_cast<float*>(ws + kX * 64 * 8);
  unsigned* cnt = reinterpret_cast<unsigned*>(ws + 2 * kX * 64 * 8);
  if (rt == 0) p0[x0 * S + slice] = s0, p1[x0 * S + slice] = s1;
  if (!FINISH) return;  // the loads and the block's reduction alone
  __shared__ bool last;
  if (FENCE == 0 || (FENCE == 1 && rt == 0)) __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&cnt[blockIdx.x / S], 1u) == S - 1u;
  __syncthreads();
  if (!last) return;
  if (FENCE != 2) __threadfence();
  s0 = 0.f, s1 = 0.f;
  for (int s = rt; s < S; s += 8) s0 += __ldcg(&p0[x0 * S + s]), s1 += __ldcg(&p1[x0 * S + s]);
  s0 = ls_column_reduce<0>(s0, 0.f);
  s1 = ls_column_reduce<0>(s1, 0.f);
  if (threadIdx.x == 0) cnt[blockIdx.x / S] = 0;
  if (rt == 0) o0[x0] = s0, o1[x0] = s1;
}
// 16-byte columns: a thread 4 consecutive columns, a warp 128, S slices a column group.
template <int S, int U>
__global__ void __launch_bounds__(256) col_v(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ o0,
                                             float* __restrict__ o1, char* __restrict__ ws) {
  const int rt = threadIdx.x >> 5;
  const int g = (int)(blockIdx.x / S) * 32 + (threadIdx.x & 31);  // columns 4g .. 4g + 3
  const int slice = blockIdx.x % S;
  float s0[4] = {0.f, 0.f, 0.f, 0.f}, s1[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll U
  for (int r = slice * 8 + rt; r < kR; r += 8 * S) {
    const float4 t0 = *reinterpret_cast<const float4*>(&a[kX * r + 4 * g]);
    const float4 t1 = *reinterpret_cast<const float4*>(&b[kX * r + 4 * g]);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      s0[j] += ls_lane(t0, j) * ls_lane(t1, j);
      s1[j] += ls_lane(t0, j);
    }
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) s0[j] = ls_column_reduce<0>(s0[j], 0.f), s1[j] = ls_column_reduce<0>(s1[j], 0.f);
  float* p0 = reinterpret_cast<float*>(ws);
  float* p1 = reinterpret_cast<float*>(ws + kX * 64 * 8);
  unsigned* cnt = reinterpret_cast<unsigned*>(ws + 2 * kX * 64 * 8);
  if (rt == 0)
    for (int j = 0; j < 4; ++j) p0[(4 * g + j) * S + slice] = s0[j], p1[(4 * g + j) * S + slice] = s1[j];
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&cnt[blockIdx.x / S], 1u) == S - 1u;
  __syncthreads();
  if (!last) return;
  __threadfence();
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    float u0 = 0.f, u1 = 0.f;
    for (int s = rt; s < S; s += 8) u0 += __ldcg(&p0[(4 * g + j) * S + s]), u1 += __ldcg(&p1[(4 * g + j) * S + s]);
    u0 = ls_column_reduce<0>(u0, 0.f);
    u1 = ls_column_reduce<0>(u1, 0.f);
    if (rt == 0) o0[4 * g + j] = u0, o1[4 * g + j] = u1;
  }
  if (threadIdx.x == 0) cnt[blockIdx.x / S] = 0;
}

// Wide columns: a thread owns V*... columns outright (no reduction across threads), a block of
// 256 threads covers 256*V consecutive columns of a row (V = 4: float4, a whole 4 KB row), S slices
// of the rows; partials per column and slice, the last block of a column group sums them.
template <int S, int U, int V, bool FINISH = true>
__global__ void __launch_bounds__(256) col_w(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ o0,
                                             float* __restrict__ o1, char* __restrict__ ws) {
  constexpr int G = kX / (256 * V);  // column groups
  const int grp = blockIdx.x % G, slice = blockIdx.x / G;
  const int c = (grp * 256 + threadIdx.x) * V;  // first column
  constexpr int rows = (kR + S - 1) / S;
  const int r0 = slice * rows, r1 = min(kR, r0 + rows);
  float s0[V], s1[V];
#pragma unroll
  for (int j = 0; j < V; ++j) s0[j] = 0.f, s1[j] = 0.f;
#pragma unroll U
  for (int r = r0; r < r1; ++r) {
    if (V == 4) {
      const float4 t0 = *reinterpret_cast<const float4*>(&a[kX * r + c]);
      const float4 t1 = *reinterpret_cast<const float4*>(&b[kX * r + c]);
#pragma unroll
      for (int j = 0; j < V; ++j) s0[j] += ls_lane(t0, j) * ls_lane(t1, j), s1[j] += ls_lane(t0, j);
    } else {
      const float t0 = a[kX * r + c], t1 = b[kX * r + c];
      s0[0] += t0 * t1, s1[0] += t0;
    }
  }
  float* p0 = reinterpret_cast<float*>(ws);
  float* p1 = reinterpret_cast<float*>(ws + kX * 528 * 4);
  unsigned* cnt = reinterpret_cast<unsigned*>(ws + 2 * kX * 528 * 4);
#pragma unroll
  for (int j = 0; j < V; ++j) p0[slice * kX + c + j] = s0[j], p1[slice * kX + c + j] = s1[j];
  if (!FINISH) return;  // the loads alone
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&cnt[grp], 1u) == S - 1u;
  __syncthreads();
  if (!last) return;
  __threadfence();
#pragma unroll
  for (int j = 0; j < V; ++j) {
    float u0 = 0.f, u1 = 0.f;
    for (int k = 0; k < S; ++k) u0 += __ldcg(&p0[k * kX + c + j]), u1 += __ldcg(&p1[k * kX + c + j]);
    o0[c + j] = u0, o1[c + j] = u1;
  }
  if (threadIdx.x == 0) cnt[grp] = 0;
}
// Clusters (sm_90): the S slices of a column group are one thread-block cluster; each block puts
// its 32 columns' sums in its shared memory, and after a cluster barrier the first block reads
// the others' through distributed shared memory (no partials in global memory, no fences, no
// count), then a second barrier keeps the others' shared memory alive until it has read them.
template <int S, int U>
__global__ void __launch_bounds__(256) col_c(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ o0,
                                             float* __restrict__ o1) {
  cg::cluster_group cluster = cg::this_cluster();
  __shared__ float part[2][32];
  const int rt = threadIdx.x >> 5;
  const int x0 = (int)(blockIdx.x / S) * 32 + (threadIdx.x & 31);
  const int slice = blockIdx.x % S;  // = the block's rank in its cluster
  float s0 = 0.f, s1 = 0.f;
#pragma unroll U
  for (int r = slice * 8 + rt; r < kR; r += 8 * S) {
    const float t0 = a[kX * r + x0], t1 = b[kX * r + x0];
    s0 += t0 * t1;
    s1 += t0;
  }
  s0 = ls_column_reduce<0>(s0, 0.f);
  s1 = ls_column_reduce<0>(s1, 0.f);
  if (rt == 0) part[0][threadIdx.x] = s0, part[1][threadIdx.x] = s1;
  cluster.sync();
  if (slice == 0 && rt == 0) {
    float u0 = 0.f, u1 = 0.f;
#pragma unroll
    for (int k = 0; k < S; ++k) {
      const float* remote = cluster.map_shared_rank(&part[0][0], k);
      u0 += remote[threadIdx.x];
      u1 += remote[32 + threadIdx.x];
    }
    o0[x0] = u0, o1[x0] = u1;
  }
  cluster.sync();
}
template <int S, int U>
void launch_col_c(const float* a, const float* b, float* o0, float* o1) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(32 * S);
  cfg.blockDim = dim3(256);
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = S;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  CK(cudaLaunchKernelEx(&cfg, col_c<S, U>, a, b, o0, o1));
}
__global__ void copy_vec2(const float* __restrict__ in, float* __restrict__ out, size_t n4) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) reinterpret_cast<float4*>(out)[i] = reinterpret_cast<const float4*>(in)[i];
}
int main() {
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  std::printf("%s, %d SMs\n\n", p.name, p.multiProcessorCount);
  Timer tm;
  copy_ceiling(tm);
  const size_t n = size_t(kR) * kX;
  float *a, *b, *o0, *o1, *r0, *r1, *cp;
  char* ws;
  CK(cudaMalloc(&a, n * 4));
  CK(cudaMalloc(&b, n * 4));
  CK(cudaMalloc(&cp, n * 4));
  for (float** q : {&o0, &o1, &r0, &r1}) CK(cudaMalloc(q, kX * 4));
  const size_t ws_bytes = 2 * kX * 528 * 4 + kX * 4;
  CK(cudaMalloc(&ws, ws_bytes));
  CK(cudaMemset(ws, 0, ws_bytes));
  fill_random(a, n, 3, 1.f);
  fill_random(b, n, 4, 1.f);
  cuda_fused_layer_norm_2<<<512, 256>>>(a, b, r0, r1, ws);
  CK(cudaDeviceSynchronize());
  CK(cudaMemset(ws, 0, ws_bytes));
  const double bytes = 2.0 * n * 4;
  auto run = [&](const char* name, const std::function<void()>& launch) {
    CK(cudaMemset(o0, 0xff, kX * 4));
    CK(cudaMemset(o1, 0xff, kX * 4));
    launch();
    CK(cudaDeviceSynchronize());
    char c[96];
    std::snprintf(c, sizeof c, "max |diff| %.1e, %.1e", max_diff(o0, r0, kX), max_diff(o1, r1, kX));
    row(name, bytes, tm.ms([&](int) { launch(); }), c);
  };
  run("GENERATED column 32 x 8 lanes, 16 slices", [&] { cuda_fused_layer_norm_2<<<512, 256>>>(a, b, o0, o1, ws); });
  CK(cudaFuncSetAttribute(cuda_fused_layer_norm_2_cluster, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  run("GENERATED with clusters (16 slices a cluster)", [&] { cuda_fused_layer_norm_2_cluster<<<512, 256>>>(a, b, o0, o1, ws); });
  run("scalar 16 slices unroll 4 (= generated)", [&] { col_s<16, 4><<<32 * 16, 256>>>(a, b, o0, o1, ws); });
  run("scalar 32 slices unroll 4", [&] { col_s<32, 4><<<32 * 32, 256>>>(a, b, o0, o1, ws); });
  run("scalar 64 slices unroll 4", [&] { col_s<64, 4><<<32 * 64, 256>>>(a, b, o0, o1, ws); });
  run("scalar 16 slices unroll 8", [&] { col_s<16, 8><<<32 * 16, 256>>>(a, b, o0, o1, ws); });
  run("scalar 32 slices unroll 8", [&] { col_s<32, 8><<<32 * 32, 256>>>(a, b, o0, o1, ws); });
  run("float4 16 slices unroll 2", [&] { col_v<16, 2><<<8 * 16, 256>>>(a, b, o0, o1, ws); });
  run("float4 32 slices unroll 2", [&] { col_v<32, 2><<<8 * 32, 256>>>(a, b, o0, o1, ws); });
  run("float4 64 slices unroll 2", [&] { col_v<64, 2><<<8 * 64, 256>>>(a, b, o0, o1, ws); });
  run("float4 64 slices unroll 4", [&] { col_v<64, 4><<<8 * 64, 256>>>(a, b, o0, o1, ws); });
  run("wide float4 (a block a whole row), 132 slices, unroll 4", [&] { col_w<132, 4, 4><<<132, 256>>>(a, b, o0, o1, ws); });
  run("wide float4, 256 slices, unroll 4", [&] { col_w<256, 4, 4><<<256, 256>>>(a, b, o0, o1, ws); });
  run("wide float4, 256 slices, unroll 8", [&] { col_w<256, 8, 4><<<256, 256>>>(a, b, o0, o1, ws); });
  run("wide scalar (256 columns a block), 132 slices, unroll 4", [&] { col_w<132, 4, 1><<<4 * 132, 256>>>(a, b, o0, o1, ws); });
  run("wide scalar, 256 slices, unroll 8", [&] { col_w<256, 8, 1><<<4 * 256, 256>>>(a, b, o0, o1, ws); });
  run("wide scalar, 128 slices, unroll 8", [&] { col_w<128, 8, 1><<<4 * 128, 256>>>(a, b, o0, o1, ws); });
  run("scalar 16 slices, fence in the writing warp only", [&] { col_s<16, 4, true, 1><<<32 * 16, 256>>>(a, b, o0, o1, ws); });
  run("scalar 16 slices, no fences (cost only)", [&] { col_s<16, 4, true, 2><<<32 * 16, 256>>>(a, b, o0, o1, ws); });
  run("scalar 8 slices", [&] { col_s<8, 4><<<32 * 8, 256>>>(a, b, o0, o1, ws); });
  run("scalar 8 slices unroll 8", [&] { col_s<8, 8><<<32 * 8, 256>>>(a, b, o0, o1, ws); });
  CK(cudaFuncSetAttribute(col_c<16, 4>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  CK(cudaFuncSetAttribute(col_c<16, 8>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  run("CLUSTER of 8 slices, finish in shared memory, unroll 4", [&] { launch_col_c<8, 4>(a, b, o0, o1); });
  run("CLUSTER of 8 slices, unroll 8", [&] { launch_col_c<8, 8>(a, b, o0, o1); });
  run("CLUSTER of 16 slices (non-portable), unroll 4", [&] { launch_col_c<16, 4>(a, b, o0, o1); });
  run("CLUSTER of 16 slices (non-portable), unroll 8", [&] { launch_col_c<16, 8>(a, b, o0, o1); });
  // Without the finish (outputs not written: the check column is meaningless): what the loads reach.
  run("NO FINISH: scalar 16 slices (the generated loop)", [&] { col_s<16, 4, false><<<32 * 16, 256>>>(a, b, o0, o1, ws); });
  run("NO FINISH: wide scalar, 132 slices", [&] { col_w<132, 4, 1, false><<<4 * 132, 256>>>(a, b, o0, o1, ws); });
  run("NO FINISH: wide float4, 132 slices", [&] { col_w<132, 4, 4, false><<<132, 256>>>(a, b, o0, o1, ws); });
  run("NO FINISH: wide float4, 264 slices", [&] { col_w<264, 4, 4, false><<<264, 256>>>(a, b, o0, o1, ws); });
  run("NO FINISH: wide float4, 528 slices", [&] { col_w<528, 4, 4, false><<<528, 256>>>(a, b, o0, o1, ws); });
  run("read-only copy of the same bytes (a->cp)", [&] { copy_vec2<<<(n / 4 + 255) / 256, 256>>>(a, cp, n / 4); });
  return 0;
}
