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

// Reductions: 0 sum, 1 max, 2 min (max/min as the C++ kernels do them).
template <int OP, typename T> LS_DEV T ls_combine(T a, T b) {
  if (OP == 1) return a > b ? a : b;
  if (OP == 2) return a < b ? a : b;
  return a + b;
}
// Across the W lanes (a power of two, at most 32) that share a row; every lane gets the result.
template <int OP, int W, typename T> LS_DEV T ls_warp_reduce(T v) {
  const unsigned mask = __activemask();
#pragma unroll
  for (int o = W / 2; o > 0; o /= 2) v = ls_combine<OP>(v, __shfl_xor_sync(mask, v, o, W));
  return v;
}
// Across the whole block (one row per block); every thread gets the result.
template <int OP, typename T> LS_DEV T ls_block_reduce(T v, T identity) {
  __shared__ double ls_smem[33];
  T* s = reinterpret_cast<T*>(ls_smem);
  v = ls_warp_reduce<OP, 32>(v);
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  __syncthreads();  // the previous reduction has read its result
  if (lane == 0) s[w] = v;
  __syncthreads();
  if (w == 0) {
    v = lane < (int)(blockDim.x >> 5) ? s[lane] : identity;
    v = ls_warp_reduce<OP, 32>(v);
    if (lane == 0) s[32] = v;
  }
  __syncthreads();
  return s[32];
}
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
// LS_ATTENTION(D) in the generated file.
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
#define LS_ATTENTION(D)                                                                                                       \
  extern "C" __global__ void __launch_bounds__(LS_ATT_BQ) ls_attention_fwd_##D(                                              \
      const float* q, const float* k, const float* v, float* o, float* lse, LsAttnView qs, LsAttnView ks, LsAttnView vs,    \
      LsAttnView os, long long H, long long L, long long S, float scale, int causal) {                                      \
    ls_attention_fwd<D>(q, k, v, o, lse, qs, ks, vs, os, H, L, S, scale, causal);                                            \
  }                                                                                                                           \
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
