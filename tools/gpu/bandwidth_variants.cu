// Memory-bound kernel variants on the H100 (issue 8: 90% of copy bandwidth), one build and run:
//   nvcc -O3 -arch=sm_90 -o bw tools/gpu/bandwidth_variants.cu && ./bw
// Each family starts with the kernel Lowerscope generates today (copied from `lowerscope-cli
// compile MODEL --device cuda --dump DIR`, 06_source.cu) and checks every other variant against it
// on fresh random inputs (output poisoned before each check). Times: CUDA events around 20
// launches, median of 15 such batches after warm-up; "rotated" cycles through input/output sets
// larger than the L2 cache. Notes and outcomes: tools/gpu/NOTES-bandwidth.md.
#include "variants_harness.cuh"

// ---- helpers as in core/codegen/cuda_prelude.h -------------------------------------------------
template <int W> __device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = W / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o, W);
  return v;
}
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float s[33];
  v = warp_sum<32>(v);
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) s[w] = v;
  __syncthreads();
  if (w == 0) {
    v = lane < (int)(blockDim.x >> 5) ? s[lane] : 0.f;
    v = warp_sum<32>(v);
    if (lane == 0) s[32] = v;
  }
  __syncthreads();
  return s[32];
}

// ---- sin^2 + cos^2 at 2^26 ---------------------------------------------------------------------
constexpr int kN = 1 << 26;
__device__ __forceinline__ float sc(float a) {
  const float s = sinf(a), c = cosf(a);
  return s * s + c * c;
}
__device__ __forceinline__ float sc_fused(float a) {
  float s, c;
  sincosf(a, &s, &c);
  return s * s + c * c;
}
// S0: today's kernel: 4 scalar elements a thread, a block apart.
__global__ void __launch_bounds__(256) s0(const float* __restrict__ in, float* __restrict__ out) {
  const int base = blockIdx.x * 1024 + threadIdx.x;
#pragma unroll
  for (int u = 0; u < 4; ++u) out[base + u * 256] = sc(in[base + u * 256]);
}
__global__ void __launch_bounds__(256) s1_sincos(const float* __restrict__ in, float* __restrict__ out) {
  const int base = blockIdx.x * 1024 + threadIdx.x;
#pragma unroll
  for (int u = 0; u < 4; ++u) out[base + u * 256] = sc_fused(in[base + u * 256]);
}
template <int V, bool FUSED, bool STREAM>
__global__ void __launch_bounds__(256) s_vec(const float* __restrict__ in, float* __restrict__ out) {
  const int base = blockIdx.x * 256 * V + threadIdx.x;
  float4 a[V];
#pragma unroll
  for (int u = 0; u < V; ++u)
    a[u] = STREAM ? __ldcs(reinterpret_cast<const float4*>(in) + base + u * 256) : reinterpret_cast<const float4*>(in)[base + u * 256];
#pragma unroll
  for (int u = 0; u < V; ++u) {
    float4 r;
    r.x = FUSED ? sc_fused(a[u].x) : sc(a[u].x);
    r.y = FUSED ? sc_fused(a[u].y) : sc(a[u].y);
    r.z = FUSED ? sc_fused(a[u].z) : sc(a[u].z);
    r.w = FUSED ? sc_fused(a[u].w) : sc(a[u].w);
    if (STREAM)
      __stcs(reinterpret_cast<float4*>(out) + base + u * 256, r);
    else
      reinterpret_cast<float4*>(out)[base + u * 256] = r;
  }
}
// Scalar, 8 a thread.
__global__ void __launch_bounds__(256) s8(const float* __restrict__ in, float* __restrict__ out) {
  const int base = blockIdx.x * 2048 + threadIdx.x;
  float a[8];
#pragma unroll
  for (int u = 0; u < 8; ++u) a[u] = in[base + u * 256];
#pragma unroll
  for (int u = 0; u < 8; ++u) out[base + u * 256] = sc(a[u]);
}
// Copies, for the ceiling.
__global__ void __launch_bounds__(256) copy_scalar4(const float* __restrict__ in, float* __restrict__ out) {
  const int base = blockIdx.x * 1024 + threadIdx.x;
#pragma unroll
  for (int u = 0; u < 4; ++u) out[base + u * 256] = in[base + u * 256];
}
template <int V>
__global__ void __launch_bounds__(256) copy_vec(const float* __restrict__ in, float* __restrict__ out) {
  const int base = blockIdx.x * 256 * V + threadIdx.x;
  float4 a[V];
#pragma unroll
  for (int u = 0; u < V; ++u) a[u] = reinterpret_cast<const float4*>(in)[base + u * 256];
#pragma unroll
  for (int u = 0; u < V; ++u) reinterpret_cast<float4*>(out)[base + u * 256] = a[u];
}

// ---- mse_loss(sin^2 + cos^2, y) at 2^26: split reduction ----------------------------------------
// M0: today's: 528 blocks x 512, scalar, then the last block sums the partials.
template <int BLOCK, int SLICES, int VEC, bool FUSED>
__global__ void __launch_bounds__(BLOCK) mse(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out,
                                             float* __restrict__ part, unsigned* __restrict__ count) {
  const int slice = blockIdx.x;
  float acc = 0.f;
  if (VEC == 1) {
#pragma unroll 4
    for (int r = slice * BLOCK + threadIdx.x; r < kN; r += SLICES * BLOCK) {
      const float d = (FUSED ? sc_fused(x[r]) : sc(x[r])) - y[r];
      acc += d * d;
    }
  } else {
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const float4* y4 = reinterpret_cast<const float4*>(y);
#pragma unroll 2
    for (int r = slice * BLOCK + threadIdx.x; r < kN / 4; r += SLICES * BLOCK) {
      const float4 a = x4[r], b = y4[r];
      float d;
      d = (FUSED ? sc_fused(a.x) : sc(a.x)) - b.x, acc += d * d;
      d = (FUSED ? sc_fused(a.y) : sc(a.y)) - b.y, acc += d * d;
      d = (FUSED ? sc_fused(a.z) : sc(a.z)) - b.z, acc += d * d;
      d = (FUSED ? sc_fused(a.w) : sc(a.w)) - b.w, acc += d * d;
    }
  }
  acc = block_sum(acc);
  if (threadIdx.x == 0) part[slice] = acc;
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(count, 1u) == SLICES - 1u;
  __syncthreads();
  if (!last) return;
  __threadfence();
  acc = 0.f;
  for (int s = threadIdx.x; s < SLICES; s += BLOCK) acc += __ldcg(&part[s]);
  acc = block_sum(acc);
  if (threadIdx.x == 0) {
    *count = 0;
    out[0] = acc / float(kN);
  }
}

// ---- LayerNorm + GELU at 8x1024x1024 (rows of 1024) ---------------------------------------------
constexpr int kRows = 8192, kCols = 1024;
__device__ __forceinline__ float gelu_affine(float v, float mean, float rstd, float w, float b) {
  const float t = (v - mean) * rstd * w + b;
  return t * 0.5f * (erff(t * 0.707106781f) + 1.0f);
}
// L0: today's: a block of 128 per row, three passes over the row (the later two from the cache).
__global__ void __launch_bounds__(128) l0(const float* __restrict__ b, const float* __restrict__ w, const float* __restrict__ x,
                                          float* __restrict__ out) {
  const int rt = threadIdx.x, x0 = blockIdx.x;
  float acc0 = 0.f;
#pragma unroll 4
  for (int r = rt; r < 1024; r += 128) acc0 += x[1024 * x0 + r];
  acc0 = block_sum(acc0);
  float acc3 = 0.f;
#pragma unroll 4
  for (int r = rt; r < 1024; r += 128) {
    const float d = x[1024 * x0 + r] - acc0 / 1024.0f;
    acc3 += d * d;
  }
  acc3 = block_sum(acc3);
#pragma unroll 4
  for (int r = rt; r < 1024; r += 128) {
    const float d = x[1024 * x0 + r] - acc0 / 1024.0f;
    const float t = d * rsqrtf(acc3 / 1024.0f + 1e-05f) * w[r] + b[r];
    out[1024 * x0 + r] = t * 0.5f * (erff(t * 0.707106781f) + 1.0f);
  }
}
// T threads a row, V float4 a thread (T * V * 4 == 1024), the row held in registers; blocks of
// max(T, 128) threads (several rows a block when T < 128), reductions by shuffles within a warp
// and through shared memory across a row's warps.
template <int T>
__device__ __forceinline__ float row_sum(float v) {
  v = warp_sum<(T < 32 ? T : 32)>(v);
  if (T <= 32) return v;
  constexpr int WPR = T / 32;  // warps a row
  __shared__ float s[32];
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, row_w0 = (threadIdx.x / T) * WPR;
  __syncthreads();
  if (lane == 0) s[w] = v;
  __syncthreads();
  float t = 0.f;
#pragma unroll
  for (int i = 0; i < WPR; ++i) t += s[row_w0 + i];
  return t;
}
template <int T, bool STREAM>
__global__ void __launch_bounds__(T < 128 ? 128 : T) lreg(const float* __restrict__ b, const float* __restrict__ w,
                                                          const float* __restrict__ x, float* __restrict__ out) {
  constexpr int V = kCols / (4 * T);
  constexpr int RPB = (T < 128 ? 128 : T) / T;
  const int rt = threadIdx.x % T;
  const int row = blockIdx.x * RPB + threadIdx.x / T;
  const float4* xr = reinterpret_cast<const float4*>(x + (size_t)row * kCols);
  float4 v[V];
#pragma unroll
  for (int i = 0; i < V; ++i) v[i] = STREAM ? __ldcs(xr + rt + i * T) : xr[rt + i * T];
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < V; ++i) s += (v[i].x + v[i].y) + (v[i].z + v[i].w);
  const float mean = row_sum<T>(s) / 1024.0f;
  float q = 0.f;
#pragma unroll
  for (int i = 0; i < V; ++i) {
    const float a = v[i].x - mean, c = v[i].y - mean, d = v[i].z - mean, e = v[i].w - mean;
    q += (a * a + c * c) + (d * d + e * e);
  }
  const float rstd = rsqrtf(row_sum<T>(q) / 1024.0f + 1e-05f);
  float4* orow = reinterpret_cast<float4*>(out + (size_t)row * kCols);
#pragma unroll
  for (int i = 0; i < V; ++i) {
    const float4 wv = reinterpret_cast<const float4*>(w)[rt + i * T], bv = reinterpret_cast<const float4*>(b)[rt + i * T];
    float4 r;
    r.x = gelu_affine(v[i].x, mean, rstd, wv.x, bv.x);
    r.y = gelu_affine(v[i].y, mean, rstd, wv.y, bv.y);
    r.z = gelu_affine(v[i].z, mean, rstd, wv.z, bv.z);
    r.w = gelu_affine(v[i].w, mean, rstd, wv.w, bv.w);
    if (STREAM)
      __stcs(orow + rt + i * T, r);
    else
      orow[rt + i * T] = r;
  }
}
// Scalar loads (the generated indexing: element r0 = rt + i * T), the row in registers.
template <int T>
__global__ void __launch_bounds__(T) lreg_scalar(const float* __restrict__ b, const float* __restrict__ w, const float* __restrict__ x,
                                                 float* __restrict__ out) {
  constexpr int V = kCols / T;
  const int rt = threadIdx.x, row = blockIdx.x;
  float v[V];
#pragma unroll
  for (int i = 0; i < V; ++i) v[i] = x[row * kCols + rt + i * T];
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < V; ++i) s += v[i];
  const float mean = row_sum<T>(s) / 1024.0f;
  float q = 0.f;
#pragma unroll
  for (int i = 0; i < V; ++i) q += (v[i] - mean) * (v[i] - mean);
  const float rstd = rsqrtf(row_sum<T>(q) / 1024.0f + 1e-05f);
#pragma unroll
  for (int i = 0; i < V; ++i) out[row * kCols + rt + i * T] = gelu_affine(v[i], mean, rstd, w[rt + i * T], b[rt + i * T]);
}

int main() {
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  std::printf("%s, %d SMs, L2 %d MB\n\n", p.name, p.multiProcessorCount, p.l2CacheSize >> 20);
  Timer tm;
  copy_ceiling(tm);
  {
    const size_t n = size_t(1) << 28;
    float *a, *b;
    CK(cudaMalloc(&a, n * 4));
    CK(cudaMalloc(&b, n * 4));
    fill_random(a, n, 1, 1.f);
    const float mk = tm.ms([&](int) { copy_vec<2><<<n / 2048, 256>>>(a, b); }, 5, 11);
    row("copy kernel float4 x2, 1 GiB", 2.0 * n * 4, mk, "-");
    CK(cudaFree(a));
    CK(cudaFree(b));
  }
  // sincos
  {
    float *in, *ref, *out;
    CK(cudaMalloc(&in, kN * 4));
    CK(cudaMalloc(&ref, kN * 4));
    CK(cudaMalloc(&out, kN * 4));
    fill_random(in, kN, 2, 3.f);
    s0<<<kN / 1024, 256>>>(in, ref);
    CK(cudaDeviceSynchronize());
    const double bytes = 2.0 * kN * 4;
    auto run = [&](const char* name, const std::function<void()>& launch, bool check = true) {
      char c[64] = "-";
      if (check) {
        CK(cudaMemset(out, 0xff, kN * 4));  // NaN poison
        launch();
        CK(cudaDeviceSynchronize());
        std::snprintf(c, sizeof c, "max |diff| %.1e", max_diff(out, ref, kN));
      }
      row(name, bytes, tm.ms([&](int) { launch(); }), c);
    };
    run("sincos S0 today: scalar x4 (block 256)", [&] { s0<<<kN / 1024, 256>>>(in, out); });
    run("sincos S1 sincosf, scalar x4", [&] { s1_sincos<<<kN / 1024, 256>>>(in, out); });
    run("sincos scalar x8", [&] { s8<<<kN / 2048, 256>>>(in, out); });
    run("sincos float4 x1", [&] { s_vec<1, false, false><<<kN / 1024, 256>>>(in, out); });
    run("sincos float4 x2", [&] { s_vec<2, false, false><<<kN / 2048, 256>>>(in, out); });
    run("sincos float4 x1 sincosf", [&] { s_vec<1, true, false><<<kN / 1024, 256>>>(in, out); });
    run("sincos float4 x2 sincosf", [&] { s_vec<2, true, false><<<kN / 2048, 256>>>(in, out); });
    run("sincos float4 x1 streaming (ldcs/stcs)", [&] { s_vec<1, false, true><<<kN / 1024, 256>>>(in, out); });
    run("sincos float4 x2 sincosf streaming", [&] { s_vec<2, true, true><<<kN / 2048, 256>>>(in, out); });
    run("copy scalar x4 (S0's shape)", [&] { copy_scalar4<<<kN / 1024, 256>>>(in, out); }, false);
    run("copy float4 x1", [&] { copy_vec<1><<<kN / 1024, 256>>>(in, out); }, false);
    run("copy float4 x2", [&] { copy_vec<2><<<kN / 2048, 256>>>(in, out); }, false);

    // mse
    float *y, *part, *res;
    unsigned* count;
    CK(cudaMalloc(&y, kN * 4));
    CK(cudaMalloc(&part, 4096 * 4));
    CK(cudaMalloc(&res, 8));
    CK(cudaMalloc(&count, 4));
    CK(cudaMemset(count, 0, 4));
    fill_random(y, kN, 3, 1.f);
    const double mbytes = 2.0 * kN * 4;
    auto mrun = [&](const char* name, const std::function<void()>& launch) {
      CK(cudaMemset(res, 0xff, 8));
      launch();
      float r0 = 0;
      CK(cudaMemcpy(&r0, res, 4, cudaMemcpyDeviceToHost));
      mse<512, 528, 1, false><<<528, 512>>>(in, y, res + 1, part, count);
      float r1 = 0;
      CK(cudaMemcpy(&r1, res + 1, 4, cudaMemcpyDeviceToHost));
      char c[64];
      std::snprintf(c, sizeof c, "%.7g vs today's %.7g", r0, r1);
      row(name, mbytes, tm.ms([&](int) { launch(); }), c);
    };
    mrun("mse M0 today: 528 x 512 scalar", [&] { mse<512, 528, 1, false><<<528, 512>>>(in, y, res, part, count); });
    mrun("mse 528 x 512 sincosf", [&] { mse<512, 528, 1, true><<<528, 512>>>(in, y, res, part, count); });
    mrun("mse 528 x 512 float4", [&] { mse<512, 528, 4, false><<<528, 512>>>(in, y, res, part, count); });
    mrun("mse 528 x 512 float4 sincosf", [&] { mse<512, 528, 4, true><<<528, 512>>>(in, y, res, part, count); });
    mrun("mse 1056 x 256 float4", [&] { mse<256, 1056, 4, false><<<1056, 256>>>(in, y, res, part, count); });
    mrun("mse 1056 x 256 float4 sincosf", [&] { mse<256, 1056, 4, true><<<1056, 256>>>(in, y, res, part, count); });
    mrun("mse 2112 x 256 float4 sincosf", [&] { mse<256, 2112, 4, true><<<2112, 256>>>(in, y, res, part, count); });
    CK(cudaFree(y));
    CK(cudaFree(part));
    CK(cudaFree(res));
    CK(cudaFree(count));
    CK(cudaFree(in));
    CK(cudaFree(ref));
    CK(cudaFree(out));
  }
  // LayerNorm + GELU
  {
    constexpr int kSets = 4;  // 4 x (32 + 32) MB > L2
    const size_t n = size_t(kRows) * kCols;
    float *x[kSets], *o[kSets], *ref, *w, *b;
    for (int i = 0; i < kSets; ++i) {
      CK(cudaMalloc(&x[i], n * 4));
      CK(cudaMalloc(&o[i], n * 4));
      fill_random(x[i], n, 10 + i, 2.f);
    }
    CK(cudaMalloc(&ref, n * 4));
    CK(cudaMalloc(&w, kCols * 4));
    CK(cudaMalloc(&b, kCols * 4));
    fill_random(w, kCols, 20, 1.f);
    fill_random(b, kCols, 21, 1.f);
    l0<<<kRows, 128>>>(b, w, x[0], ref);
    CK(cudaDeviceSynchronize());
    const double bytes = 2.0 * n * 4;
    auto run = [&](const char* name, const std::function<void(const float*, float*)>& launch) {
      CK(cudaMemset(o[0], 0xff, n * 4));
      launch(x[0], o[0]);
      CK(cudaDeviceSynchronize());
      char c[64];
      std::snprintf(c, sizeof c, "max |diff| %.1e", max_diff(o[0], ref, n));
      row(name, bytes, tm.ms([&](int) { launch(x[0], o[0]); }), c);
      char r[96];
      std::snprintf(r, sizeof r, "  rotated over %d sets", kSets);
      row(r, bytes, tm.ms([&](int i) { launch(x[i % kSets], o[i % kSets]); }), "");
    };
    run("ln+gelu L0 today: 128/row, 3 passes", [&](const float* xi, float* oi) { l0<<<kRows, 128>>>(b, w, xi, oi); });
    run("ln+gelu 128/row scalar, row in registers", [&](const float* xi, float* oi) { lreg_scalar<128><<<kRows, 128>>>(b, w, xi, oi); });
    run("ln+gelu 256/row scalar, row in registers", [&](const float* xi, float* oi) { lreg_scalar<256><<<kRows, 256>>>(b, w, xi, oi); });
    run("ln+gelu 32/row float4 x8 (warp a row)", [&](const float* xi, float* oi) { lreg<32, false><<<kRows / 4, 128>>>(b, w, xi, oi); });
    run("ln+gelu 64/row float4 x4", [&](const float* xi, float* oi) { lreg<64, false><<<kRows / 2, 128>>>(b, w, xi, oi); });
    run("ln+gelu 128/row float4 x2", [&](const float* xi, float* oi) { lreg<128, false><<<kRows, 128>>>(b, w, xi, oi); });
    run("ln+gelu 256/row float4 x1", [&](const float* xi, float* oi) { lreg<256, false><<<kRows, 256>>>(b, w, xi, oi); });
    run("ln+gelu 128/row float4 x2 streaming", [&](const float* xi, float* oi) { lreg<128, true><<<kRows, 128>>>(b, w, xi, oi); });
    run("ln+gelu 32/row float4 x8 streaming", [&](const float* xi, float* oi) { lreg<32, true><<<kRows / 4, 128>>>(b, w, xi, oi); });
    run("copy float4 x2 (same bytes)", [&](const float* xi, float* oi) { copy_vec<2><<<n / 2048, 256>>>(xi, oi); });
  }
  return 0;
}
