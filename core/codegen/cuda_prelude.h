// Helpers every generated CUDA kernel file starts with, compiled by NVRTC (no system headers).
typedef long long int64_t;
typedef int int32_t;
typedef unsigned char uint8_t;

#define LS_DEV static __device__ __forceinline__
LS_DEV float ls_sin(float x) { return sinf(x); }
LS_DEV double ls_sin(double x) { return sin(x); }
LS_DEV float ls_cos(float x) { return cosf(x); }
LS_DEV double ls_cos(double x) { return cos(x); }
LS_DEV float ls_exp(float x) { return expf(x); }
// exp as 2^(x log2 e) with the SFU's ex2.approx (Triton's tl.exp): for kernels whose results are
// rounded to bf16/f16, where its few-ulp float32 error does not show.
LS_DEV float ls_exp_fast(float x) {
  float y;
  asm("ex2.approx.f32 %0, %1;" : "=f"(y) : "f"(x * 1.4426950408889634f));
  return y;
}
// a / b as div.full.f32 (Triton's float32 `/`: 2 ulps, a reciprocal and a multiply) where
// ls_exp_fast is used, instead of IEEE division's subroutine.
LS_DEV float ls_div_fast(float a, float b) {
  float q;
  asm("div.full.f32 %0, %1, %2;" : "=f"(q) : "f"(a), "f"(b));
  return q;
}
LS_DEV double ls_exp(double x) { return exp(x); }
LS_DEV float ls_log(float x) { return logf(x); }
LS_DEV double ls_log(double x) { return log(x); }
LS_DEV float ls_sqrt(float x) { return sqrtf(x); }
LS_DEV double ls_sqrt(double x) { return sqrt(x); }
LS_DEV float ls_rsqrt(float x) { return rsqrtf(x); }
LS_DEV double ls_rsqrt(double x) { return rsqrt(x); }
LS_DEV float ls_tanh(float x) { return tanhf(x); }
LS_DEV double ls_tanh(double x) { return tanh(x); }
LS_DEV float ls_erf(float x) { return erff(x); }
LS_DEV double ls_erf(double x) { return erf(x); }
LS_DEV float ls_pow(float x, float y) { return powf(x, y); }
LS_DEV double ls_pow(double x, double y) { return pow(x, y); }
LS_DEV float ls_abs(float x) { return fabsf(x); }
LS_DEV double ls_abs(double x) { return fabs(x); }
LS_DEV int64_t ls_abs(int64_t x) { return x < 0 ? -x : x; }
LS_DEV int32_t ls_abs(int32_t x) { return x < 0 ? -x : x; }
template <typename T> LS_DEV T ls_sigmoid(T x) { return T(1) / (T(1) + ls_exp(-x)); }
template <typename T> LS_DEV T ls_relu(T x) { return x > T(0) || x != x ? x : T(0); }
// maximum/minimum propagate NaN, as torch.maximum does.
template <typename T> LS_DEV T ls_maximum(T a, T b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); }
template <typename T> LS_DEV T ls_minimum(T a, T b) { return a != a ? a : (b != b ? b : (a < b ? a : b)); }
template <typename I> LS_DEV I ls_floordiv(I a, I k) { return a >= 0 ? a / k : -((-a + k - 1) / k); }
template <typename I> LS_DEV I ls_mod(I a, I k) { return a - ls_floordiv(a, k) * k; }
template <typename T> LS_DEV T ls_gelu(T x) { return T(0.5) * x * (T(1) + ls_erf(x * T(0.70710678118654752))); }
template <typename T> LS_DEV T ls_gelu_tanh(T x) {
  return T(0.5) * x * (T(1) + ls_tanh(T(0.7978845608028654) * (x + T(0.044715) * x * x * x)));
}
template <typename T> LS_DEV T ls_hardsigmoid(T x) {
  T y = x + T(3);
  y = y < T(0) ? T(0) : y;
  y = y > T(6) ? T(6) : y;
  return y / T(6);
}
template <typename T> LS_DEV T ls_hardswish(T x) { return x * ls_hardsigmoid(x); }
template <typename T> LS_DEV T ls_identity(T x) { return x; }
// Lanes of a 16-byte access: kernels that take 4 consecutive elements a thread load and store
// them as one float4 and run the body once per lane (ls_j, a constant once the loop unrolls).
LS_DEV float ls_lane(const float4& v, int j) { return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w; }
LS_DEV void ls_set_lane(float4& v, int j, float x) {
  if (j == 0) v.x = x;
  else if (j == 1) v.y = x;
  else if (j == 2) v.z = x;
  else v.w = x;
}

// Reductions: 0 sum, 1 max, 2 min; a NaN on either side sticks, as in torch (and the C++ kernels).
template <int OP, typename T> LS_DEV T ls_combine(T a, T b) {
  if (OP == 1) return (b != b || b > a) ? b : a;
  if (OP == 2) return (b != b || b < a) ? b : a;
  return a + b;
}
// Across the W lanes (a power of two, at most 32) that share a row; every lane gets the result.
template <int OP, int W, typename T> LS_DEV T ls_warp_reduce(T v) {
  const unsigned mask = __activemask();
#pragma unroll
  for (int o = W / 2; o > 0; o /= 2) v = ls_combine<OP, T>(v, static_cast<T>(__shfl_xor_sync(mask, v, o, W)));  // a bool shuffles as an int
  return v;
}
// Across the whole block (one row per block); every thread gets the result. Each warp's result
// goes to shared memory, then every warp reduces all of them the same way (so every thread gets
// the same value): two barriers, no second phase on one warp. SLOT 0 guards its buffer with a
// barrier first (the previous reduction may still be reading it); generated kernels alternate
// SLOT 1 and 2, whose buffers are apart, so a reduction's buffer is written again only after the
// next reduction's barrier, which every thread passes after reading it: one barrier a reduction.
template <int OP, int SLOT = 0, typename T> LS_DEV T ls_block_reduce(T v, T identity) {
  __shared__ double ls_smem[32];
  T* s = reinterpret_cast<T*>(ls_smem);
  v = ls_warp_reduce<OP, 32>(v);
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  if (SLOT == 0) __syncthreads();  // the previous reduction has read its result
  if (lane == 0) s[w] = v;
  __syncthreads();
  v = lane < (int)(blockDim.x >> 5) ? s[lane] : identity;
  return ls_warp_reduce<OP, 32>(v);
}
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900  // (no __CUDA_ARCH__: the host pass of nvcc, tools/gpu/*.cu)
// Thread-block clusters: a barrier across the cluster's blocks (every thread of each), and a load
// from the shared memory of the cluster's block `rank`, at the place p has in this block's.
LS_DEV void ls_cluster_sync() { asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory"); }
// The address is mapped (mapa, generic addresses) and read with an ordinary load, so the loads of
// a loop are in flight together and stay after the barrier (its asm clobbers memory).
template <typename T> LS_DEV T ls_cluster_load(const T* p, unsigned rank) {
  unsigned long long q;
  asm("mapa.u64 %0, %1, %2;" : "=l"(q) : "l"(p), "r"(rank));
  return *reinterpret_cast<const T*>(q);
}
#endif
// Column form: thread t holds column t % 32 of the block's group, lane t / 32 of its rows;
// reduces each column across the lanes, and every thread gets its column's result.
template <int OP, typename T> LS_DEV T ls_column_reduce(T v, T identity) {
  __shared__ double ls_csmem[32 * 33 + 32];
  T* s = reinterpret_cast<T*>(ls_csmem);
  const int col = threadIdx.x & 31, lane = threadIdx.x >> 5, lanes = blockDim.x >> 5;
  __syncthreads();  // the previous reduction has read its result
  s[lane * 33 + col] = v;
  __syncthreads();
  for (int c = lane; c < 32; c += lanes) {  // warp `lane` finishes columns lane, lane + lanes, ...
    T w = col < lanes ? s[col * 33 + c] : identity;
    w = ls_warp_reduce<OP, 32>(w);
    if (col == 0) s[32 * 33 + c] = w;
  }
  __syncthreads();
  return s[32 * 33 + col];
}

// Fused attention (FlashAttention's forward, one query row per thread): each block holds
// LS_ATT_BQ rows of q in registers and walks the keys in tiles of LS_ATT_BK staged in shared
// memory, keeping a running maximum and sum (the scores never reach memory). The backward
// recomputes the probabilities from the saved log-sum-exp: one kernel for dq (and the row dots
// D_i = dO_i . O_i), one for dk and dv, a key row per thread. Views: element strides (batch,
// head, row, element) so q, k and v are read in place. Instantiated per head size by
// LS_ATTENTION_FWD(D) and, where a backward runs, LS_ATTENTION_BWD(D) in the attention module.
struct LsAttnView {
  long long sb, sh, sl, se;
};
#define LS_ATT_BQ 64
#define LS_ATT_BK 32
// How many keys query row i sees: all, or (causal) keys 0 .. i (PyTorch's is_causal: the mask
// tril(ones(L, S)), aligned at the top left).
LS_DEV long long ls_attn_keys(long long i, long long L, long long S, int causal) { return causal ? min(S, i + 1) : S; }
// Stages rows r0 .. r0 + LS_ATT_BK of two operands (rows past n as zeros) in shared memory, the
// block's threads striding over the elements.
template <int D>
LS_DEV void ls_attn_stage(float (*A)[D], const float* a, LsAttnView as, float (*B)[D], const float* b, LsAttnView bs, long long r0,
                          long long n) {
  for (int t = threadIdx.x; t < LS_ATT_BK * D; t += LS_ATT_BQ) {
    const int rr = t / D, e = t % D;
    const long long r = r0 + rr;
    A[rr][e] = r < n ? a[r * as.sl + e * as.se] : 0.f;
    B[rr][e] = r < n ? b[r * bs.sl + e * bs.se] : 0.f;
  }
}
template <int D>
LS_DEV void ls_attention_fwd(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
                             float* __restrict__ o, float* __restrict__ lse, LsAttnView qs, LsAttnView ks, LsAttnView vs,
                             LsAttnView os, long long H, long long L, long long S, float scale, int causal) {
  __shared__ float Ks[LS_ATT_BK][D];
  __shared__ float Vs[LS_ATT_BK][D];
  const long long tiles = (L + LS_ATT_BQ - 1) / LS_ATT_BQ, bh = blockIdx.x / tiles, tile = blockIdx.x % tiles;
  const long long b = bh / H, h = bh % H, i = tile * LS_ATT_BQ + threadIdx.x;
  const bool active = i < L;
  const float* qb = q + b * qs.sb + h * qs.sh;
  const float* kb = k + b * ks.sb + h * ks.sh;
  const float* vb = v + b * vs.sb + h * vs.sh;
  const float log2e = 1.4426950408889634f, s2 = scale * log2e;
  float qr[D], acc[D];
#pragma unroll
  for (int e = 0; e < D; ++e) {
    qr[e] = active ? qb[i * qs.sl + e * qs.se] * s2 : 0.f;
    acc[e] = 0.f;
  }
  const float NEG = -__int_as_float(0x7f800000);
  float m = NEG, l = 0.f;
  const long long kend = ls_attn_keys(min(L - 1, tile * LS_ATT_BQ + LS_ATT_BQ - 1), L, S, causal);  // the block's
  const long long lim = ls_attn_keys(i, L, S, causal);                                                  // this row's
  for (long long j0 = 0; j0 < kend; j0 += LS_ATT_BK) {
    __syncthreads();
    ls_attn_stage<D>(Ks, kb, ks, Vs, vb, vs, j0, S);
    __syncthreads();
    if (!active) continue;
#pragma unroll 1
    for (int c0 = 0; c0 < LS_ATT_BK; c0 += 8) {  // 8 keys at a time: one rescale per 8
      if (j0 + c0 >= lim) break;
      float s[8];
      float mt = m;
#pragma unroll
      for (int jj = 0; jj < 8; ++jj) {
        float d = 0.f;
#pragma unroll
        for (int e = 0; e < D; ++e) d += qr[e] * Ks[c0 + jj][e];
        s[jj] = j0 + c0 + jj < lim ? d : NEG;
        mt = fmaxf(mt, s[jj]);
      }
      const float corr = exp2f(m - mt);
      l *= corr;
#pragma unroll
      for (int e = 0; e < D; ++e) acc[e] *= corr;
#pragma unroll
      for (int jj = 0; jj < 8; ++jj) {
        const float p = exp2f(s[jj] - mt);
        l += p;
#pragma unroll
        for (int e = 0; e < D; ++e) acc[e] += p * Vs[c0 + jj][e];
      }
      m = mt;
    }
  }
  if (!active) return;
  float* ob = o + b * os.sb + h * os.sh + i * os.sl;
  const float inv = l > 0.f ? 1.f / l : 0.f;
#pragma unroll
  for (int e = 0; e < D; ++e) ob[e * os.se] = acc[e] * inv;
  lse[bh * L + i] = l > 0.f ? (m + log2f(l)) / log2e : NEG;
}
template <int D>
LS_DEV void ls_attention_bwd_dq(const float* __restrict__ go, const float* __restrict__ q, const float* __restrict__ k,
                                const float* __restrict__ v, const float* __restrict__ o, const float* __restrict__ lse,
                                float* __restrict__ dq, float* __restrict__ drow, LsAttnView gs, LsAttnView qs, LsAttnView ks,
                                LsAttnView vs, LsAttnView os, long long H, long long L, long long S, float scale, int causal) {
  __shared__ float Ks[LS_ATT_BK][D];
  __shared__ float Vs[LS_ATT_BK][D];
  const long long tiles = (L + LS_ATT_BQ - 1) / LS_ATT_BQ, bh = blockIdx.x / tiles, tile = blockIdx.x % tiles;
  const long long b = bh / H, h = bh % H, i = tile * LS_ATT_BQ + threadIdx.x;
  const bool active = i < L;
  const float* kb = k + b * ks.sb + h * ks.sh;
  const float* vb = v + b * vs.sb + h * vs.sh;
  float qr[D], gr[D], dqr[D], Di = 0.f;
#pragma unroll
  for (int e = 0; e < D; ++e) {
    qr[e] = active ? q[b * qs.sb + h * qs.sh + i * qs.sl + e * qs.se] : 0.f;
    gr[e] = active ? go[b * gs.sb + h * gs.sh + i * gs.sl + e * gs.se] : 0.f;
    Di += active ? gr[e] * o[b * os.sb + h * os.sh + i * os.sl + e * os.se] : 0.f;
    dqr[e] = 0.f;
  }
  const float li = active ? lse[bh * L + i] : 0.f;
  const long long kend = ls_attn_keys(min(L - 1, tile * LS_ATT_BQ + LS_ATT_BQ - 1), L, S, causal);  // the block's
  const long long lim = ls_attn_keys(i, L, S, causal);                                                  // this row's
  for (long long j0 = 0; j0 < kend; j0 += LS_ATT_BK) {
    __syncthreads();
    ls_attn_stage<D>(Ks, kb, ks, Vs, vb, vs, j0, S);
    __syncthreads();
    if (!active) continue;
#pragma unroll 1
    for (int jj = 0; jj < LS_ATT_BK; ++jj) {
      if (j0 + jj >= lim) break;
      float s = 0.f, dp = 0.f;
#pragma unroll
      for (int e = 0; e < D; ++e) {
        s += qr[e] * Ks[jj][e];
        dp += gr[e] * Vs[jj][e];
      }
      const float p = __expf(s * scale - li), ds = p * (dp - Di) * scale;
#pragma unroll
      for (int e = 0; e < D; ++e) dqr[e] += ds * Ks[jj][e];
    }
  }
  if (!active) return;
#pragma unroll
  for (int e = 0; e < D; ++e) dq[(bh * L + i) * D + e] = dqr[e];
  drow[bh * L + i] = Di;
}
template <int D>
LS_DEV void ls_attention_bwd_dkv(const float* __restrict__ go, const float* __restrict__ q, const float* __restrict__ k,
                                 const float* __restrict__ v, const float* __restrict__ lse, const float* __restrict__ drow,
                                 float* __restrict__ dk, float* __restrict__ dv, LsAttnView gs, LsAttnView qs, LsAttnView ks,
                                 LsAttnView vs, long long H, long long L, long long S, float scale, int causal) {
  __shared__ float Qs[LS_ATT_BK][D];
  __shared__ float Gs[LS_ATT_BK][D];
  __shared__ float Ls[LS_ATT_BK], Ds[LS_ATT_BK];
  const long long tiles = (S + LS_ATT_BQ - 1) / LS_ATT_BQ, bh = blockIdx.x / tiles, tile = blockIdx.x % tiles;
  const long long b = bh / H, h = bh % H, j = tile * LS_ATT_BQ + threadIdx.x;
  const bool active = j < S;
  const float* qb = q + b * qs.sb + h * qs.sh;
  const float* gb = go + b * gs.sb + h * gs.sh;
  float kr[D], vr[D], dkr[D], dvr[D];
#pragma unroll
  for (int e = 0; e < D; ++e) {
    kr[e] = active ? k[b * ks.sb + h * ks.sh + j * ks.sl + e * ks.se] : 0.f;
    vr[e] = active ? v[b * vs.sb + h * vs.sh + j * vs.sl + e * vs.se] : 0.f;
    dkr[e] = dvr[e] = 0.f;
  }
  // Query i sees key j when j <= i: the block's first key bounds the first query tile.
  long long i_begin = causal ? tile * LS_ATT_BQ : 0;
  i_begin = i_begin / LS_ATT_BK * LS_ATT_BK;
  const long long first = causal ? j : 0;  // this thread's first visible query
  for (long long i0 = i_begin; i0 < L; i0 += LS_ATT_BK) {
    __syncthreads();
    ls_attn_stage<D>(Qs, qb, qs, Gs, gb, gs, i0, L);
    for (int t = threadIdx.x; t < LS_ATT_BK; t += LS_ATT_BQ) {
      const long long i = i0 + t;
      Ls[t] = i < L ? lse[bh * L + i] : 0.f;
      Ds[t] = i < L ? drow[bh * L + i] : 0.f;
    }
    __syncthreads();
    if (!active) continue;
#pragma unroll 1
    for (int ii = 0; ii < LS_ATT_BK; ++ii) {
      const long long i = i0 + ii;
      if (i >= L || i < first) continue;
      float s = 0.f, dp = 0.f;
#pragma unroll
      for (int e = 0; e < D; ++e) {
        s += Qs[ii][e] * kr[e];
        dp += Gs[ii][e] * vr[e];
      }
      const float p = __expf(s * scale - Ls[ii]), ds = p * (dp - Ds[ii]) * scale;
#pragma unroll
      for (int e = 0; e < D; ++e) {
        dvr[e] += p * Gs[ii][e];
        dkr[e] += ds * Qs[ii][e];
      }
    }
  }
  if (!active) return;
#pragma unroll
  for (int e = 0; e < D; ++e) {
    dk[(bh * S + j) * D + e] = dkr[e];
    dv[(bh * S + j) * D + e] = dvr[e];
  }
}
#define LS_ATTENTION_FWD(D)                                                                                                   \
  extern "C" __global__ void __launch_bounds__(LS_ATT_BQ) ls_attention_fwd_##D(                                              \
      const float* q, const float* k, const float* v, float* o, float* lse, LsAttnView qs, LsAttnView ks, LsAttnView vs,    \
      LsAttnView os, long long H, long long L, long long S, float scale, int causal) {                                      \
    ls_attention_fwd<D>(q, k, v, o, lse, qs, ks, vs, os, H, L, S, scale, causal);                                            \
  }
#define LS_ATTENTION_BWD(D)                                                                                                   \
  extern "C" __global__ void __launch_bounds__(LS_ATT_BQ) ls_attention_bwd_dq_##D(                                           \
      const float* go, const float* q, const float* k, const float* v, const float* o, const float* lse, float* dq,         \
      float* drow, LsAttnView gs, LsAttnView qs, LsAttnView ks, LsAttnView vs, LsAttnView os, long long H, long long L,      \
      long long S, float scale, int causal) {                                                                                 \
    ls_attention_bwd_dq<D>(go, q, k, v, o, lse, dq, drow, gs, qs, ks, vs, os, H, L, S, scale, causal);                       \
  }                                                                                                                           \
  extern "C" __global__ void __launch_bounds__(LS_ATT_BQ) ls_attention_bwd_dkv_##D(                                          \
      const float* go, const float* q, const float* k, const float* v, const float* lse, const float* drow, float* dk,      \
      float* dv, LsAttnView gs, LsAttnView qs, LsAttnView ks, LsAttnView vs, long long H, long long L, long long S,          \
      float scale, int causal) {                                                                                              \
    ls_attention_bwd_dkv<D>(go, q, k, v, lse, drow, dk, dv, gs, qs, ks, vs, H, L, S, scale, causal);                         \
  }

// Attention for long sequences, forward (FlashAttention-2 on the FP32 cores): a block of 256
// threads takes 64 query rows of one (batch, head) and walks the keys 64 at a time, the scores
// never reaching memory. Q^T, K^T and V tiles are staged in shared memory (Q and K transposed,
// lanes on consecutive rows, so neither the stores nor the 16-byte loads conflict); thread
// (ty, tx) computes the 4 x 4 scores of rows 4ty.. and keys 4tx.. from two 16-byte shared loads
// per 16 multiply-adds; each row's running maximum comes from shuffles across its 16 threads, its
// sum stays per thread until the end; the probabilities go back to shared memory over K^T
// (transposed, 16-byte groups of rows swizzled by key so the stores spread over the banks) and the
// thread accumulates output rows 4ty.. x columns (D/16)tx.. . Writes the output through its view
// and the rows' log-sum-exp (natural log) for the backward, as the other attention paths do.
// Tuning knobs of the FlashAttention kernels, set from timings on the H100 at 16 x 8 x 512 x 64:
// blocks an SM each kernel is compiled for (bounds its registers: the backward left unbounded took
// 175 registers, one block an SM, and ran 20% slower), and how far the inner products are unrolled.
#ifndef LS_FLASH_FWD_BLOCKS
#define LS_FLASH_FWD_BLOCKS 3
#endif
#ifndef LS_FLASH_BWD_BLOCKS
#define LS_FLASH_BWD_BLOCKS 2
#endif
#ifndef LS_FLASH_UNROLL
#define LS_FLASH_UNROLL 16
#endif
constexpr int ls_flash_unroll = LS_FLASH_UNROLL;  // #pragma unroll takes a constant, not a macro
// Stages rows r0 .. r0 + 63 of an operand (rows past n as zeros) in shared memory, transposed
// ("T" tile, [element][row], lanes on rows so the stores do not conflict) or as it is ("N" tile,
// [row][element]); 16-byte loads where the rows are contiguous and aligned.
LS_DEV bool ls_flash_vec(const float* src, LsAttnView v) { return v.se == 1 && (v.sl & 3) == 0 && ((unsigned long long)src & 15) == 0; }
template <int D>
LS_DEV void ls_flash_stage_t(float* t, const float* src, LsAttnView v, long long r0, long long n, float mul = 1.f) {
  if (ls_flash_vec(src, v)) {
    for (int i = threadIdx.x; i < 16 * D; i += 256) {
      const int r = i % 64, c = i / 64;
      const float4 x = r0 + r < n ? *reinterpret_cast<const float4*>(&src[(r0 + r) * v.sl + c * 4]) : make_float4(0.f, 0.f, 0.f, 0.f);
      t[(c * 4) * 64 + r] = x.x * mul;
      t[(c * 4 + 1) * 64 + r] = x.y * mul;
      t[(c * 4 + 2) * 64 + r] = x.z * mul;
      t[(c * 4 + 3) * 64 + r] = x.w * mul;
    }
    return;
  }
  for (int i = threadIdx.x; i < 64 * D; i += 256) {
    const int r = i % 64, e = i / 64;
    t[e * 64 + r] = r0 + r < n ? src[(r0 + r) * v.sl + e * v.se] * mul : 0.f;
  }
}
template <int D>
LS_DEV void ls_flash_stage_n(float* t, const float* src, LsAttnView v, long long r0, long long n) {
  if (ls_flash_vec(src, v)) {
    for (int i = threadIdx.x; i < 16 * D; i += 256) {
      const int r = i / (D / 4), c = i % (D / 4);
      *reinterpret_cast<float4*>(&t[r * D + c * 4]) =
          r0 + r < n ? *reinterpret_cast<const float4*>(&src[(r0 + r) * v.sl + c * 4]) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    return;
  }
  for (int i = threadIdx.x; i < 64 * D; i += 256) {
    const int r = i / D, e = i % D;
    t[r * D + e] = r0 + r < n ? src[(r0 + r) * v.sl + e * v.se] : 0.f;
  }
}
// c[a][b] = sum over e < D of A[e][4ta + a] * B[e][4tb + b] (two T tiles).
template <int D>
LS_DEV void ls_flash_tile(float (&c)[4][4], const float* A, int ta, const float* B, int tb) {
#pragma unroll
  for (int a = 0; a < 4; ++a)
#pragma unroll
    for (int b = 0; b < 4; ++b) c[a][b] = 0.f;
#pragma unroll ls_flash_unroll
  for (int e = 0; e < D; ++e) {
    const float4 x = *reinterpret_cast<const float4*>(&A[e * 64 + ta * 4]);
    const float4 y = *reinterpret_cast<const float4*>(&B[e * 64 + tb * 4]);
    const float xv[4] = {x.x, x.y, x.z, x.w}, yv[4] = {y.x, y.y, y.z, y.w};
#pragma unroll
    for (int a = 0; a < 4; ++a)
#pragma unroll
      for (int b = 0; b < 4; ++b) c[a][b] = fmaf(xv[a], yv[b], c[a][b]);
  }
}
template <int D>
LS_DEV void ls_flash_fwd(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v, float* __restrict__ o,
                         float* __restrict__ lse, LsAttnView qs, LsAttnView ks, LsAttnView vs, LsAttnView os, long long H, long long L,
                         long long S, float scale, int causal) {
  constexpr int BQ = 64, BK = 64, DV = D / 16, KT = D > BK ? D : BK;
  __shared__ __align__(16) float Qt[D][BQ];
  __shared__ __align__(16) float Kt[KT][BK];  // K^T, then P^T [key][row]
  __shared__ __align__(16) float Vs[BK][D];
  const int tid = threadIdx.x, ty = tid >> 4, tx = tid & 15;
  const long long tiles = (L + BQ - 1) / BQ, bh = blockIdx.x / tiles, i0 = (blockIdx.x % tiles) * BQ;
  const long long b = bh / H, h = bh % H;
  const float* qb = q + b * qs.sb + h * qs.sh;
  const float* kb = k + b * ks.sb + h * ks.sh;
  const float* vb = v + b * vs.sb + h * vs.sh;
  const float log2e = 1.4426950408889634f, s2 = scale * log2e, NEG = -__int_as_float(0x7f800000);
  ls_flash_stage_t<D>(&Qt[0][0], qb, qs, i0, L, s2);
  float m[4], l[4], acc[4][DV];
#pragma unroll
  for (int a = 0; a < 4; ++a) {
    m[a] = NEG;
    l[a] = 0.f;
#pragma unroll
    for (int c = 0; c < DV; ++c) acc[a][c] = 0.f;
  }
  const long long last = min(L - 1, i0 + BQ - 1), kend = causal ? min(S, last + 1) : S;
  for (long long j0 = 0; j0 < kend; j0 += BK) {
    __syncthreads();  // the previous tile's P^T and V are read
    ls_flash_stage_t<D>(&Kt[0][0], kb, ks, j0, S);
    ls_flash_stage_n<D>(&Vs[0][0], vb, vs, j0, S);
    __syncthreads();
    float s[4][4];
    ls_flash_tile<D>(s, &Qt[0][0], ty, &Kt[0][0], tx);
#pragma unroll
    for (int a = 0; a < 4; ++a) {
      const long long i = i0 + ty * 4 + a;
      float mt = NEG;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const long long j = j0 + tx * 4 + c;
        if (j >= S || (causal && j > i)) s[a][c] = NEG;
        mt = fmaxf(mt, s[a][c]);
      }
      mt = ls_warp_reduce<1, 16>(mt);
      const float mn = fmaxf(m[a], mt), base = mn == NEG ? 0.f : mn, corr = exp2f(m[a] - base);
      float sum = 0.f;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        s[a][c] = exp2f(s[a][c] - base);
        sum += s[a][c];
      }
      l[a] = l[a] * corr + sum;
#pragma unroll
      for (int c = 0; c < DV; ++c) acc[a][c] *= corr;
      m[a] = mn;
    }
    __syncthreads();  // every thread has read K^T
#pragma unroll
    for (int c = 0; c < 4; ++c)  // key 4tx + c: its row group ty lands at group ty ^ tx
      *reinterpret_cast<float4*>(&Kt[tx * 4 + c][(ty ^ tx) * 4]) = make_float4(s[0][c], s[1][c], s[2][c], s[3][c]);
    __syncthreads();
#pragma unroll ls_flash_unroll
    for (int kk = 0; kk < BK; ++kk) {
      const float4 pa = *reinterpret_cast<const float4*>(&Kt[kk][(ty ^ (kk >> 2)) * 4]);
      const float pv[4] = {pa.x, pa.y, pa.z, pa.w};
      float vv[DV];
      if constexpr (DV == 4) {
        const float4 t = *reinterpret_cast<const float4*>(&Vs[kk][tx * 4]);
        vv[0] = t.x, vv[1] = t.y, vv[2] = t.z, vv[3] = t.w;
      } else {
#pragma unroll
        for (int c = 0; c < DV; ++c) vv[c] = Vs[kk][tx * DV + c];
      }
#pragma unroll
      for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int c = 0; c < DV; ++c) acc[a][c] = fmaf(pv[a], vv[c], acc[a][c]);
    }
  }
  float* ob = o + b * os.sb + h * os.sh;
#pragma unroll
  for (int a = 0; a < 4; ++a) {
    const float sum = ls_warp_reduce<0, 16>(l[a]);
    const long long i = i0 + ty * 4 + a;
    if (i >= L) continue;
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
#pragma unroll
    for (int c = 0; c < DV; ++c) ob[i * os.sl + (tx * DV + c) * os.se] = acc[a][c] * inv;
    if (tx == 0) lse[bh * L + i] = sum > 0.f ? (m[a] + log2f(sum)) / log2e : NEG;
  }
}
// Attention for long sequences, backward (FlashAttention-2's, in two kernels, no atomics): the
// probabilities are recomputed tile by tile from q, k and the forward's log-sum-exp, as in the
// forward. The dq kernel (a block per 64 query rows, walking the keys) also writes the rows' dots
// D_i = dO_i . O_i; the dk/dv kernel (a block per 64 keys, walking the queries) reads them.
// Register tiles as in the forward: thread (ty, tx) holds a 4 x 4 tile of scores and accumulates
// 4 x D/16 outputs. Tiles in dynamic shared memory: "T" tiles hold an operand transposed
// ([element][row], lanes on rows when staged), "N" tiles as it is ([row][element]); a tile of
// scores is written back swizzled by 16-byte groups as in the forward.
// Writes c (rows 4ta.., columns 4tb..) transposed into a 64 x 64 tile P[column][row], the row
// group swizzled by the column group; ls_flash_swz reads it back.
LS_DEV void ls_flash_put(float* P, const float (&c)[4][4], int ta, int tb) {
#pragma unroll
  for (int b = 0; b < 4; ++b)
    *reinterpret_cast<float4*>(&P[(tb * 4 + b) * 64 + ((ta ^ tb) * 4)]) = make_float4(c[0][b], c[1][b], c[2][b], c[3][b]);
}
LS_DEV float4 ls_flash_swz(const float* P, int k, int ta) { return *reinterpret_cast<const float4*>(&P[k * 64 + ((ta ^ (k >> 2)) * 4)]); }
// acc[a][c] += sum over k < 64 of P[k][4ta + a] * N[k][tx * D/16 + c] (P swizzled, N an N tile).
template <int D>
LS_DEV void ls_flash_accumulate(float (&acc)[4][D / 16], const float* P, int ta, const float* N, int tx) {
  constexpr int DV = D / 16;
#pragma unroll ls_flash_unroll
  for (int k = 0; k < 64; ++k) {
    const float4 p = ls_flash_swz(P, k, ta);
    const float pv[4] = {p.x, p.y, p.z, p.w};
    float nv[DV];
    if constexpr (DV == 4) {
      const float4 t = *reinterpret_cast<const float4*>(&N[k * D + tx * 4]);
      nv[0] = t.x, nv[1] = t.y, nv[2] = t.z, nv[3] = t.w;
    } else {
#pragma unroll
      for (int c = 0; c < DV; ++c) nv[c] = N[k * D + tx * DV + c];
    }
#pragma unroll
    for (int a = 0; a < 4; ++a)
#pragma unroll
      for (int c = 0; c < DV; ++c) acc[a][c] = fmaf(pv[a], nv[c], acc[a][c]);
  }
}
// dq (and D_i): shared Qt, dOt [D][64], St [max(D,64)][64] (K^T, then dS), Vt [D][64], Kn [64][D], lse and D (64 each).
template <int D>
LS_DEV void ls_flash_bwd_dq(const float* __restrict__ go, const float* __restrict__ q, const float* __restrict__ k,
                            const float* __restrict__ v, const float* __restrict__ o, const float* __restrict__ lse,
                            float* __restrict__ dq, float* __restrict__ drow, LsAttnView gs, LsAttnView qs, LsAttnView ks,
                            LsAttnView vs, LsAttnView os, long long H, long long L, long long S, float scale, int causal) {
  constexpr int DV = D / 16, KT = D > 64 ? D : 64;
  extern __shared__ __align__(16) float ls_dyn[];
  float *Qt = ls_dyn, *Gt = Qt + D * 64, *St = Gt + D * 64, *Vt = St + KT * 64, *Kn = Vt + D * 64, *Ls = Kn + 64 * D, *Ds = Ls + 64;
  const int tid = threadIdx.x, ty = tid >> 4, tx = tid & 15;
  const long long tiles = (L + 63) / 64, bh = blockIdx.x / tiles, i0 = (blockIdx.x % tiles) * 64;
  const long long b = bh / H, h = bh % H;
  const float* qb = q + b * qs.sb + h * qs.sh;
  const float* gb = go + b * gs.sb + h * gs.sh;
  const float* ob = o + b * os.sb + h * os.sh;
  const float* kb = k + b * ks.sb + h * ks.sh;
  const float* vb = v + b * vs.sb + h * vs.sh;
  ls_flash_stage_t<D>(Qt, qb, qs, i0, L);
  ls_flash_stage_t<D>(Gt, gb, gs, i0, L);
  {  // D_i = dO_i . O_i: 4 threads a row
    const int r = tid >> 2, part = tid & 3;
    float d = 0.f;
    if (i0 + r < L)
      for (int e = part; e < D; e += 4) d += gb[(i0 + r) * gs.sl + e * gs.se] * ob[(i0 + r) * os.sl + e * os.se];
    d = ls_warp_reduce<0, 4>(d);
    if (part == 0) {
      Ds[r] = d;
      Ls[r] = i0 + r < L ? lse[bh * L + i0 + r] : 0.f;
      if (i0 + r < L) drow[bh * L + i0 + r] = d;
    }
  }
  float acc[4][DV];
#pragma unroll
  for (int a = 0; a < 4; ++a)
#pragma unroll
    for (int c = 0; c < DV; ++c) acc[a][c] = 0.f;
  const long long last = min(L - 1, i0 + 63), kend = causal ? min(S, last + 1) : S;
  for (long long j0 = 0; j0 < kend; j0 += 64) {
    __syncthreads();
    ls_flash_stage_t<D>(St, kb, ks, j0, S);
    ls_flash_stage_t<D>(Vt, vb, vs, j0, S);
    ls_flash_stage_n<D>(Kn, kb, ks, j0, S);
    __syncthreads();
    float s[4][4], dp[4][4];
    ls_flash_tile<D>(s, Qt, ty, St, tx);
    ls_flash_tile<D>(dp, Gt, ty, Vt, tx);
#pragma unroll
    for (int a = 0; a < 4; ++a) {
      const int r = ty * 4 + a;
      const long long i = i0 + r;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const long long j = j0 + tx * 4 + c;
        const float p = j < S && (!causal || j <= i) ? __expf(s[a][c] * scale - Ls[r]) : 0.f;
        s[a][c] = p * (dp[a][c] - Ds[r]) * scale;  // dS
      }
    }
    __syncthreads();  // K^T is read
    ls_flash_put(St, s, ty, tx);
    __syncthreads();
    ls_flash_accumulate<D>(acc, St, ty, Kn, tx);
  }
#pragma unroll
  for (int a = 0; a < 4; ++a) {
    const long long i = i0 + ty * 4 + a;
    if (i >= L) continue;
#pragma unroll
    for (int c = 0; c < DV; ++c) dq[(bh * L + i) * D + tx * DV + c] = acc[a][c];
  }
}
// dk and dv: shared Kt, Vt [D][64], Qt, Gt [max(D,64)][64] (Q^T and dO^T, then P and dS), Qn, Gn [64][D], lse and D.
template <int D>
LS_DEV void ls_flash_bwd_dkv(const float* __restrict__ go, const float* __restrict__ q, const float* __restrict__ k,
                             const float* __restrict__ v, const float* __restrict__ lse, const float* __restrict__ drow,
                             float* __restrict__ dk, float* __restrict__ dv, LsAttnView gs, LsAttnView qs, LsAttnView ks,
                             LsAttnView vs, long long H, long long L, long long S, float scale, int causal) {
  constexpr int DV = D / 16, KT = D > 64 ? D : 64;
  extern __shared__ __align__(16) float ls_dyn[];
  float *Kt = ls_dyn, *Vt = Kt + D * 64, *Qt = Vt + D * 64, *Gt = Qt + KT * 64, *Qn = Gt + KT * 64, *Gn = Qn + 64 * D, *Ls = Gn + 64 * D,
        *Ds = Ls + 64;
  const int tid = threadIdx.x, ty = tid >> 4, tx = tid & 15;
  const long long tiles = (S + 63) / 64, bh = blockIdx.x / tiles, j0 = (blockIdx.x % tiles) * 64;
  const long long b = bh / H, h = bh % H;
  const float* qb = q + b * qs.sb + h * qs.sh;
  const float* gb = go + b * gs.sb + h * gs.sh;
  ls_flash_stage_t<D>(Kt, k + b * ks.sb + h * ks.sh, ks, j0, S);
  ls_flash_stage_t<D>(Vt, v + b * vs.sb + h * vs.sh, vs, j0, S);
  float ak[4][DV], av[4][DV];
#pragma unroll
  for (int a = 0; a < 4; ++a)
#pragma unroll
    for (int c = 0; c < DV; ++c) ak[a][c] = av[a][c] = 0.f;
  // Query i sees key j when j <= i: under causal the first query tile is the keys' own.
  for (long long i0 = causal ? j0 : 0; i0 < L; i0 += 64) {
    __syncthreads();
    ls_flash_stage_t<D>(Qt, qb, qs, i0, L);
    ls_flash_stage_t<D>(Gt, gb, gs, i0, L);
    ls_flash_stage_n<D>(Qn, qb, qs, i0, L);
    ls_flash_stage_n<D>(Gn, gb, gs, i0, L);
    if (tid < 64) {
      Ls[tid] = i0 + tid < L ? lse[bh * L + i0 + tid] : 0.f;
      Ds[tid] = i0 + tid < L ? drow[bh * L + i0 + tid] : 0.f;
    }
    __syncthreads();
    float st[4][4], dpt[4][4];  // keys 4ty.., queries 4tx..
    ls_flash_tile<D>(st, Kt, ty, Qt, tx);
    ls_flash_tile<D>(dpt, Vt, ty, Gt, tx);
#pragma unroll
    for (int a = 0; a < 4; ++a) {
      const long long j = j0 + ty * 4 + a;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int r = tx * 4 + c;
        const long long i = i0 + r;
        const float p = j < S && i < L && (!causal || j <= i) ? __expf(st[a][c] * scale - Ls[r]) : 0.f;
        st[a][c] = p;
        dpt[a][c] = p * (dpt[a][c] - Ds[r]) * scale;  // dS^T
      }
    }
    __syncthreads();  // Q^T and dO^T are read
    ls_flash_put(Qt, st, ty, tx);   // P [query][key]
    ls_flash_put(Gt, dpt, ty, tx);  // dS [query][key]
    __syncthreads();
    ls_flash_accumulate<D>(av, Qt, ty, Gn, tx);  // dV += P^T dO
    ls_flash_accumulate<D>(ak, Gt, ty, Qn, tx);  // dK += dS^T Q
  }
#pragma unroll
  for (int a = 0; a < 4; ++a) {
    const long long j = j0 + ty * 4 + a;
    if (j >= S) continue;
#pragma unroll
    for (int c = 0; c < DV; ++c) {
      dk[(bh * S + j) * D + tx * DV + c] = ak[a][c];
      dv[(bh * S + j) * D + tx * DV + c] = av[a][c];
    }
  }
}
// Their dynamic shared memory (the launcher's): dq 4 D x 64 + max(D, 64) x 64 + 128 floats,
// dk/dv 4 D x 64 + 2 max(D, 64) x 64 + 128 (99 KB at D = 64: two blocks an SM).
// Instantiated per head size (32 or 64) by LS_FLASH_ATTENTION_FWD(D) / _BWD(D) in the attention
// module, as LS_ATTENTION_*: only models with long attention pay for compiling them, and only
// training steps for the backward.
#define LS_FLASH_ATTENTION_FWD(D)                                                                                              \
  extern "C" __global__ void __launch_bounds__(256, LS_FLASH_FWD_BLOCKS) ls_flash_attention_fwd_##D(                          \
      const float* q, const float* k, const float* v, float* o, float* lse, LsAttnView qs, LsAttnView ks, LsAttnView vs,    \
      LsAttnView os, long long H, long long L, long long S, float scale, int causal) {                                      \
    ls_flash_fwd<D>(q, k, v, o, lse, qs, ks, vs, os, H, L, S, scale, causal);                                                \
  }
#define LS_FLASH_ATTENTION_BWD(D)                                                                                              \
  extern "C" __global__ void __launch_bounds__(256, LS_FLASH_BWD_BLOCKS) ls_flash_attention_bwd_dq_##D(                       \
      const float* go, const float* q, const float* k, const float* v, const float* o, const float* lse, float* dq,          \
      float* drow, LsAttnView gs, LsAttnView qs, LsAttnView ks, LsAttnView vs, LsAttnView os, long long H, long long L,       \
      long long S, float scale, int causal) {                                                                                  \
    ls_flash_bwd_dq<D>(go, q, k, v, o, lse, dq, drow, gs, qs, ks, vs, os, H, L, S, scale, causal);                            \
  }                                                                                                                            \
  extern "C" __global__ void __launch_bounds__(256, LS_FLASH_BWD_BLOCKS) ls_flash_attention_bwd_dkv_##D(                      \
      const float* go, const float* q, const float* k, const float* v, const float* lse, const float* drow, float* dk,       \
      float* dv, LsAttnView gs, LsAttnView qs, LsAttnView ks, LsAttnView vs, long long H, long long L, long long S,           \
      float scale, int causal) {                                                                                               \
    ls_flash_bwd_dkv<D>(go, q, k, v, lse, drow, dk, dv, gs, qs, ks, vs, H, L, S, scale, causal);                              \
  }

// ---- on demand: each paragraph below (one helper) is written into a source only where a kernel
// calls it (codegen/emitter.h, prelude_for), so the sources that do not call it stay as they were.

// ipow: an integer power as PyTorch's powi: by squaring, wrapping as its integer type; a
// negative exponent gives 1 for a base of 1, -1 or 1 for a base of -1, else 0.
template <typename I> LS_DEV I ls_ipow(I a, I b) {
  if (b < I(0)) return a == I(1) ? I(1) : a == I(-1) ? (((-b) % 2) ? I(-1) : I(1)) : I(0);
  unsigned long long r = 1, x = static_cast<unsigned long long>(a);
  for (unsigned long long e = static_cast<unsigned long long>(b); e; e >>= 1, x *= x)
    if (e & 1) r *= x;
  return static_cast<I>(r);
}

// floor: an integer is its own value.
LS_DEV float ls_floor(float x) { return floorf(x); }
LS_DEV double ls_floor(double x) { return floor(x); }
template <typename I> LS_DEV I ls_floor(I x) { return x; }

// ceil: an integer is its own value.
LS_DEV float ls_ceil(float x) { return ceilf(x); }
LS_DEV double ls_ceil(double x) { return ceil(x); }
template <typename I> LS_DEV I ls_ceil(I x) { return x; }

// round (halves to even, as torch.round): an integer is its own value.
LS_DEV float ls_round(float x) { return rintf(x); }
LS_DEV double ls_round(double x) { return rint(x); }
template <typename I> LS_DEV I ls_round(I x) { return x; }

// trunc: an integer is its own value.
LS_DEV float ls_trunc(float x) { return truncf(x); }
LS_DEV double ls_trunc(double x) { return trunc(x); }
template <typename I> LS_DEV I ls_trunc(I x) { return x; }

// sign: -1, 0 or 1 (0 for NaN, as torch.sign's kernels compute it).
template <typename T> LS_DEV T ls_sign(T x) { return static_cast<T>((T(0) < x) - (x < T(0))); }

// log1p: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
LS_DEV float ls_log1p(float x) { return log1pf(x); }
LS_DEV double ls_log1p(double x) { return log1p(x); }
template <typename I> LS_DEV float ls_log1p(I x) { return log1pf(static_cast<float>(x)); }

// expm1: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
LS_DEV float ls_expm1(float x) { return expm1f(x); }
LS_DEV double ls_expm1(double x) { return expm1(x); }
template <typename I> LS_DEV float ls_expm1(I x) { return expm1f(static_cast<float>(x)); }

// log2: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
LS_DEV float ls_log2(float x) { return log2f(x); }
LS_DEV double ls_log2(double x) { return log2(x); }
template <typename I> LS_DEV float ls_log2(I x) { return log2f(static_cast<float>(x)); }

// log10: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
LS_DEV float ls_log10(float x) { return log10f(x); }
LS_DEV double ls_log10(double x) { return log10(x); }
template <typename I> LS_DEV float ls_log10(I x) { return log10f(static_cast<float>(x)); }

// tan: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
LS_DEV float ls_tan(float x) { return tanf(x); }
LS_DEV double ls_tan(double x) { return tan(x); }
template <typename I> LS_DEV float ls_tan(I x) { return tanf(static_cast<float>(x)); }

// asin: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
LS_DEV float ls_asin(float x) { return asinf(x); }
LS_DEV double ls_asin(double x) { return asin(x); }
template <typename I> LS_DEV float ls_asin(I x) { return asinf(static_cast<float>(x)); }

// acos: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
LS_DEV float ls_acos(float x) { return acosf(x); }
LS_DEV double ls_acos(double x) { return acos(x); }
template <typename I> LS_DEV float ls_acos(I x) { return acosf(static_cast<float>(x)); }

// atan: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
LS_DEV float ls_atan(float x) { return atanf(x); }
LS_DEV double ls_atan(double x) { return atan(x); }
template <typename I> LS_DEV float ls_atan(I x) { return atanf(static_cast<float>(x)); }

// sinh: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
LS_DEV float ls_sinh(float x) { return sinhf(x); }
LS_DEV double ls_sinh(double x) { return sinh(x); }
template <typename I> LS_DEV float ls_sinh(I x) { return sinhf(static_cast<float>(x)); }

// cosh: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
LS_DEV float ls_cosh(float x) { return coshf(x); }
LS_DEV double ls_cosh(double x) { return cosh(x); }
template <typename I> LS_DEV float ls_cosh(I x) { return coshf(static_cast<float>(x)); }

// asinh: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
LS_DEV float ls_asinh(float x) { return asinhf(x); }
LS_DEV double ls_asinh(double x) { return asinh(x); }
template <typename I> LS_DEV float ls_asinh(I x) { return asinhf(static_cast<float>(x)); }

// acosh: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
LS_DEV float ls_acosh(float x) { return acoshf(x); }
LS_DEV double ls_acosh(double x) { return acosh(x); }
template <typename I> LS_DEV float ls_acosh(I x) { return acoshf(static_cast<float>(x)); }

// atanh: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
LS_DEV float ls_atanh(float x) { return atanhf(x); }
LS_DEV double ls_atanh(double x) { return atanh(x); }
template <typename I> LS_DEV float ls_atanh(I x) { return atanhf(static_cast<float>(x)); }

// isnan, isinf: bool results; an integer is neither.
template <typename T> LS_DEV bool ls_isnan(T x) { return x != x; }

LS_DEV bool ls_isinf(float x) { return fabsf(x) == __int_as_float(0x7f800000); }
LS_DEV bool ls_isinf(double x) { return fabs(x) == __longlong_as_double(0x7ff0000000000000LL); }
template <typename I> LS_DEV bool ls_isinf(I) { return false; }

// Logical ops: nonzero is true; bitwise ops: integer and bool operands (ops/pointwise.cpp checks).
template <typename T> LS_DEV bool ls_logical_not(T x) { return x == T(0); }

LS_DEV bool ls_bitwise_not(bool x) { return !x; }
template <typename I> LS_DEV I ls_bitwise_not(I x) { return static_cast<I>(~x); }

template <typename A, typename B> LS_DEV bool ls_logical_and(A a, B b) { return (a != A(0)) & (b != B(0)); }

template <typename A, typename B> LS_DEV bool ls_logical_or(A a, B b) { return (a != A(0)) | (b != B(0)); }

template <typename A, typename B> LS_DEV bool ls_logical_xor(A a, B b) { return (a != A(0)) != (b != B(0)); }

template <typename A, typename B> LS_DEV auto ls_bitwise_and(A a, B b) { return a & b; }

template <typename A, typename B> LS_DEV auto ls_bitwise_or(A a, B b) { return a | b; }

template <typename A, typename B> LS_DEV auto ls_bitwise_xor(A a, B b) { return a ^ b; }

// remainder: the sign of the divisor (Python's %); fmod: the sign of the dividend (C's fmod).
LS_DEV float ls_remainder(float a, float b) {
  const float r = fmodf(a, b);
  return r != 0.0f && (r < 0.0f) != (b < 0.0f) ? r + b : r;
}
LS_DEV double ls_remainder(double a, double b) {
  const double r = fmod(a, b);
  return r != 0.0 && (r < 0.0) != (b < 0.0) ? r + b : r;
}
template <typename I> LS_DEV I ls_remainder(I a, I b) {
  const I r = a % b;
  return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}
template <typename A, typename B> LS_DEV auto ls_remainder(A a, B b) {
  using T = decltype(a + b);
  return ls_remainder(static_cast<T>(a), static_cast<T>(b));
}

LS_DEV float ls_fmod(float a, float b) { return fmodf(a, b); }
LS_DEV double ls_fmod(double a, double b) { return fmod(a, b); }
template <typename I> LS_DEV I ls_fmod(I a, I b) { return a % b; }
template <typename A, typename B> LS_DEV auto ls_fmod(A a, B b) {
  using T = decltype(a + b);
  return ls_fmod(static_cast<T>(a), static_cast<T>(b));
}

// atan2: integers are computed in float32.
LS_DEV float ls_atan2(float a, float b) { return atan2f(a, b); }
LS_DEV double ls_atan2(double a, double b) { return atan2(a, b); }
template <typename A, typename B> LS_DEV auto ls_atan2(A a, B b) {
  using T = decltype(a + b + 0.0f);
  return ls_atan2(static_cast<T>(a), static_cast<T>(b));
}

// An indirect index out of range (an index tensor's element): the first fault is recorded for the
// executor, which reports it naming the node, the value and the size; element 0 is read instead.
LS_DEV int64_t ls_index_fault(int64_t i, int64_t size, int64_t node);
extern __device__ int64_t ls_index_fault_state[4];  // defined after the kernels (cuda_codegen.cpp)
LS_DEV int64_t ls_index_fault(int64_t i, int64_t size, int64_t node) {
  if (atomicCAS(reinterpret_cast<unsigned long long*>(&ls_index_fault_state[0]), 0ull, 1ull) == 0ull) {
    ls_index_fault_state[1] = i;
    ls_index_fault_state[2] = size;
    ls_index_fault_state[3] = node;
  }
  return 0;
}

// ls_bf16: bfloat16, the upper 16 bits of a float32. A load widens it exactly (ls_float); a store
// rounds to nearest even with the sm_80 conversion instruction (ls_to_bf16), as __float2bfloat16_rn.
struct __align__(2) ls_bf16 { unsigned short x; };
LS_DEV float ls_float(ls_bf16 h) { return __uint_as_float(static_cast<unsigned>(h.x) << 16); }
LS_DEV ls_bf16 ls_to_bf16(float f) {
  unsigned short r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
  return ls_bf16{r};
}
// Lanes of an 8-byte access (4 halves: a group of 4 elements, as float4's lanes for float32).
LS_DEV ls_bf16 ls_lane_bf16(const uint2& v, int j) {
  const unsigned w = j < 2 ? v.x : v.y;
  return ls_bf16{static_cast<unsigned short>(j & 1 ? w >> 16 : w & 0xffffu)};
}
LS_DEV void ls_set_lane(uint2& v, int j, ls_bf16 h) {
  unsigned& w = j < 2 ? v.x : v.y;
  w = j & 1 ? (w & 0xffffu) | (static_cast<unsigned>(h.x) << 16) : (w & 0xffff0000u) | h.x;
}
// Lanes of a 16-byte access (8 halves: a group of 8 elements, where only halves move).
LS_DEV ls_bf16 ls_lane_bf16(const uint4& v, int j) {
  const unsigned w = j < 2 ? v.x : j < 4 ? v.y : j < 6 ? v.z : v.w;
  return ls_bf16{static_cast<unsigned short>(j & 1 ? w >> 16 : w & 0xffffu)};
}
LS_DEV void ls_set_lane(uint4& v, int j, ls_bf16 h) {
  unsigned& w = j < 2 ? v.x : j < 4 ? v.y : j < 6 ? v.z : v.w;
  w = j & 1 ? (w & 0xffffu) | (static_cast<unsigned>(h.x) << 16) : (w & 0xffff0000u) | h.x;
}

// ls_f16: IEEE half. A load widens it exactly (ls_float); a store rounds to nearest even
// (ls_to_f16), as __float2half_rn.
struct __align__(2) ls_f16 { unsigned short x; };
LS_DEV float ls_float(ls_f16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.x));
  return f;
}
LS_DEV ls_f16 ls_to_f16(float f) {
  unsigned short r;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(f));
  return ls_f16{r};
}
LS_DEV ls_f16 ls_lane_f16(const uint2& v, int j) {
  const unsigned w = j < 2 ? v.x : v.y;
  return ls_f16{static_cast<unsigned short>(j & 1 ? w >> 16 : w & 0xffffu)};
}
LS_DEV void ls_set_lane(uint2& v, int j, ls_f16 h) {
  unsigned& w = j < 2 ? v.x : v.y;
  w = j & 1 ? (w & 0xffffu) | (static_cast<unsigned>(h.x) << 16) : (w & 0xffff0000u) | h.x;
}
LS_DEV ls_f16 ls_lane_f16(const uint4& v, int j) {
  const unsigned w = j < 2 ? v.x : j < 4 ? v.y : j < 6 ? v.z : v.w;
  return ls_f16{static_cast<unsigned short>(j & 1 ? w >> 16 : w & 0xffffu)};
}
LS_DEV void ls_set_lane(uint4& v, int j, ls_f16 h) {
  unsigned& w = j < 2 ? v.x : j < 4 ? v.y : j < 6 ? v.z : v.w;
  w = j & 1 ? (w & 0xffffu) | (static_cast<unsigned>(h.x) << 16) : (w & 0xffff0000u) | h.x;
}

// Arg reductions (argmax, argmin), as Inductor's greater_or_nan and less_or_nan: whether the kept
// candidate (a at index ia) stays against (b at ib): a NaN beats a number, then the maximum (the
// minimum), then between equals (two NaNs too) the lower index. Then the (value, index) pairs
// reduced as the reductions above reduce values: a pair folded in, across the W lanes that share
// a row, across the block (every thread gets the result; index 0 beside the identity where a
// warp has no pair: it never wins against a real one, see ls_arg_keeps).
template <typename T> LS_DEV bool ls_arg_keeps(bool max, T a, T b, int64_t ia, int64_t ib) {
  if (a != a) return b == b || ia < ib;
  if (b != b) return false;
  if (a == b) return ia < ib;
  return max ? a > b : a < b;
}
template <bool MAX, typename T> LS_DEV void ls_arg_combine(T& v, int64_t& i, T v2, int64_t i2) {
  if (!ls_arg_keeps(MAX, v, v2, i, i2)) v = v2, i = i2;
}
template <bool MAX, int W, typename T> LS_DEV void ls_warp_arg_reduce(T& v, int64_t& i) {
  const unsigned mask = __activemask();
#pragma unroll
  for (int o = W / 2; o > 0; o /= 2) ls_arg_combine<MAX, T>(v, i, static_cast<T>(__shfl_xor_sync(mask, v, o, W)), __shfl_xor_sync(mask, i, o, W));
}
template <bool MAX, typename T> LS_DEV void ls_block_arg_reduce(T& v, int64_t& i, T identity) {
  __shared__ double ls_asmem[32];
  __shared__ int64_t ls_aidx[32];
  T* s = reinterpret_cast<T*>(ls_asmem);
  ls_warp_arg_reduce<MAX, 32>(v, i);
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  __syncthreads();  // the previous reduction has read its result
  if (lane == 0) s[w] = v, ls_aidx[w] = i;
  __syncthreads();
  const bool here = lane < (int)(blockDim.x >> 5);
  v = here ? s[lane] : identity;
  i = here ? ls_aidx[lane] : 0;
  ls_warp_arg_reduce<MAX, 32>(v, i);
}

// Product reductions: each thread's step, and reduction op 3 of the combiners above (the warp,
// block and column reductions, the split form's partials) as a product for the types reductions
// accumulate in.
template <typename T> LS_DEV T ls_prod_step(T a, T b) { return a * b; }
template <> __device__ __forceinline__ float ls_combine<3, float>(float a, float b) { return a * b; }
template <> __device__ __forceinline__ double ls_combine<3, double>(double a, double b) { return a * b; }
template <> __device__ __forceinline__ int64_t ls_combine<3, int64_t>(int64_t a, int64_t b) { return a * b; }

// philox(seed, offset, index): 53 random bits of an element, Philox4x32-10 keyed by the seed, the
// counter the index and the offset (ops/philox.h, the reference this copy must equal bit for
// bit; NVRTC's contraction cannot change it: every multiply-add is an fma).
LS_DEV int64_t ls_philox(int64_t seed, int64_t offset, int64_t index) {
  unsigned int c0 = (unsigned int)index, c1 = (unsigned int)((unsigned long long)index >> 32), c2 = (unsigned int)offset,
               c3 = (unsigned int)((unsigned long long)offset >> 32), k0 = (unsigned int)seed,
               k1 = (unsigned int)((unsigned long long)seed >> 32);
  for (int r = 0; r < 10; ++r) {
    const unsigned long long p0 = 0xD2511F53ull * c0, p1 = 0xCD9E8D57ull * c2;
    const unsigned int h0 = (unsigned int)(p0 >> 32), l0 = (unsigned int)p0, h1 = (unsigned int)(p1 >> 32), l1 = (unsigned int)p1;
    c0 = h1 ^ c1 ^ k0;
    c1 = l1;
    c2 = h0 ^ c3 ^ k1;
    c3 = l0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return (int64_t)((unsigned long long)c0 | ((unsigned long long)(c1 & 0x1FFFFFu) << 32));
}

// rand: a uniform float in [0, 1) from the top 24 of the 53 bits.
LS_DEV float ls_rand(int64_t b) { return (float)((double)((unsigned long long)b >> 29) * 0x1p-24); }

// rand_f64: a uniform double in [0, 1) from the 53 bits.
LS_DEV double ls_rand_f64(int64_t b) { return (double)b * 0x1p-53; }

// randn: Box-Muller in double, log and cos as ops/philox.h's polynomials (every multiply-add an fma).
LS_DEV double ls_randn(int64_t b) {
  const double u1 = (double)(((unsigned long long)b & 0xFFFFFFFFull) + 1) * 0x1p-32;
  int e = 0;
  double m = frexp(u1, &e);
  if (m < 0.70710678118654752) m = m * 2.0, e = e - 1;
  const double f = m - 1.0, s = f / (2.0 + f), s2 = s * s;
  double p = 2.0 / 21.0;
  p = fma(p, s2, 2.0 / 19.0);
  p = fma(p, s2, 2.0 / 17.0);
  p = fma(p, s2, 2.0 / 15.0);
  p = fma(p, s2, 2.0 / 13.0);
  p = fma(p, s2, 2.0 / 11.0);
  p = fma(p, s2, 2.0 / 9.0);
  p = fma(p, s2, 2.0 / 7.0);
  p = fma(p, s2, 2.0 / 5.0);
  p = fma(p, s2, 2.0 / 3.0);
  p = fma(p, s2, 2.0);
  const double log_u1 = fma((double)e, 0.69314718055994531, s * p);
  const unsigned long long j = (unsigned long long)b >> 32, q = j >> 19, r = j & 0x7FFFFull;
  const bool fold = r > 0x40000ull, want_cos = (q & 1) == 0;
  const double t = (double)(fold ? 0x80000ull - r : r) * 0x1p-19 * 1.5707963267948966, t2 = t * t;
  double v;
  if (want_cos != fold) {
    double c = -1.0 / 6402373705728000.0;
    c = fma(c, t2, 1.0 / 20922789888000.0);
    c = fma(c, t2, -1.0 / 87178291200.0);
    c = fma(c, t2, 1.0 / 479001600.0);
    c = fma(c, t2, -1.0 / 3628800.0);
    c = fma(c, t2, 1.0 / 40320.0);
    c = fma(c, t2, -1.0 / 720.0);
    c = fma(c, t2, 1.0 / 24.0);
    c = fma(c, t2, -0.5);
    v = fma(t2, c, 1.0);
  } else {
    double c = 1.0 / 355687428096000.0;
    c = fma(c, t2, -1.0 / 1307674368000.0);
    c = fma(c, t2, 1.0 / 6227020800.0);
    c = fma(c, t2, -1.0 / 39916800.0);
    c = fma(c, t2, 1.0 / 362880.0);
    c = fma(c, t2, -1.0 / 5040.0);
    c = fma(c, t2, 1.0 / 120.0);
    c = fma(c, t2, -1.0 / 6.0);
    v = fma(t * t2, c, t);
  }
  return sqrt(-2.0 * log_u1) * (q == 1 || q == 2 ? -v : v);
}
