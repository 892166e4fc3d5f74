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

// Helper kernels the runtime launches around library calls.
// y[m, n] = bias broadcast to (M, N): bias is (N), (1), (M, N) or (M, 1) / (1, N).
extern "C" __global__ void ls_broadcast_bias(float* __restrict__ y, const float* __restrict__ b, long long M, long long N,
                                             int per_row, int per_col, long long row_stride) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= M * N) return;
  const long long m = i / N, n = i % N;
  y[i] = b[(per_row ? m * row_stride : 0) + (per_col ? n : 0)];
}
// Per-channel bias of a convolution output (N, C, P).
extern "C" __global__ void ls_add_channel_bias(float* __restrict__ y, const float* __restrict__ b, long long C, long long P,
                                               long long total) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < total) y[i] += b[(i / P) % C];
}
// Convolution as im2col + one batched matrix multiply (cuBLAS): the columns of every image of
// one group, cols[n][r][p], r = (ci, kh, kw), p = (oh, ow); zero where the window is off the image.
extern "C" __global__ void ls_im2col(const float* __restrict__ x, float* __restrict__ cols, int N, int CG, int H, int W, int KH,
                                     int KW, int OH, int OW, int sh, int sw, int ph, int pw, int dh, int dw, long long x_image) {
  const long long P = (long long)OH * OW, R = (long long)CG * KH * KW, total = N * R * P;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
    const long long n = i / (R * P), rp = i % (R * P), r = rp / P, p = rp % P;
    const int ci = (int)(r / (KH * KW)), kh = (int)((r / KW) % KH), kw = (int)(r % KW);
    const int oh = (int)(p / OW), ow = (int)(p % OW);
    const int ih = oh * sh - ph + kh * dh, iw = ow * sw - pw + kw * dw;
    cols[i] = ih >= 0 && ih < H && iw >= 0 && iw < W ? x[n * x_image + ((long long)ci * H + ih) * W + iw] : 0.0f;
  }
}
// Depthwise convolution (one input channel per output channel): one thread per output.
extern "C" __global__ void ls_depthwise_conv(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int N,
                                             int C, int H, int W, int KH, int KW, int OH, int OW, int sh, int sw, int ph, int pw,
                                             int dh, int dw) {
  const long long total = (long long)N * C * OH * OW;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
    const int ow = (int)(i % OW), oh = (int)((i / OW) % OH);
    const long long plane = i / ((long long)OH * OW);
    const int c = (int)(plane % C);
    const float* xp = x + plane * H * W;
    const float* wp = w + (long long)c * KH * KW;
    float acc = 0.0f;
    for (int kh = 0; kh < KH; ++kh) {
      const int ih = oh * sh - ph + kh * dh;
      if (ih < 0 || ih >= H) continue;
      for (int kw = 0; kw < KW; ++kw) {
        const int iw = ow * sw - pw + kw * dw;
        if (iw >= 0 && iw < W) acc += xp[ih * W + iw] * wp[kh * KW + kw];
      }
    }
    y[i] = acc;
  }
}
// 2-D max pooling with the flat index (ih * W + iw) of each maximum, as PyTorch returns it.
extern "C" __global__ void ls_max_pool2d(const float* __restrict__ x, float* __restrict__ y, long long* __restrict__ idx,
                                         long long planes, int H, int W, int OH, int OW, int KH, int KW, int sh, int sw, int ph,
                                         int pw, int dh, int dw) {
  const long long total = planes * OH * OW;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
    const int ow = (int)(i % OW), oh = (int)((i / OW) % OH);
    const float* xp = x + (i / ((long long)OH * OW)) * H * W;
    float best = -__int_as_float(0x7f800000);
    long long arg = -1;
    for (int kh = 0; kh < KH; ++kh)
      for (int kw = 0; kw < KW; ++kw) {
        const int ih = oh * sh - ph + kh * dh, iw = ow * sw - pw + kw * dw;
        if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
        const float v = xp[ih * W + iw];
        if (v > best || v != v || arg < 0) {
          best = v;
          arg = (long long)ih * W + iw;
        }
      }
    y[i] = best;
    idx[i] = arg;
  }
}
// Concatenation: copies rows of one input into their place in the output (4-byte words).
extern "C" __global__ void ls_copy_rows(unsigned* __restrict__ dst, const unsigned* __restrict__ src, long long rows,
                                        long long src_row, long long dst_row, long long offset) {
  const long long total = rows * src_row;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x)
    dst[(i / src_row) * dst_row + offset + i % src_row] = src[i];
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
  const long long last = min(L - 1, tile * LS_ATT_BQ + LS_ATT_BQ - 1);
  const long long kend = causal ? min(S, last + S - L + 1) : S;
  const long long lim = causal ? min(S, i + S - L + 1) : S;
  for (long long j0 = 0; j0 < kend; j0 += LS_ATT_BK) {
    __syncthreads();
    for (int t = threadIdx.x; t < LS_ATT_BK * D; t += LS_ATT_BQ) {
      const int jj = t / D, e = t % D;
      const long long j = j0 + jj;
      Ks[jj][e] = j < S ? kb[j * ks.sl + e * ks.se] : 0.f;
      Vs[jj][e] = j < S ? vb[j * vs.sl + e * vs.se] : 0.f;
    }
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
  const long long last = min(L - 1, tile * LS_ATT_BQ + LS_ATT_BQ - 1);
  const long long kend = causal ? min(S, last + S - L + 1) : S;
  const long long lim = causal ? min(S, i + S - L + 1) : S;
  for (long long j0 = 0; j0 < kend; j0 += LS_ATT_BK) {
    __syncthreads();
    for (int t = threadIdx.x; t < LS_ATT_BK * D; t += LS_ATT_BQ) {
      const int jj = t / D, e = t % D;
      const long long j = j0 + jj;
      Ks[jj][e] = j < S ? kb[j * ks.sl + e * ks.se] : 0.f;
      Vs[jj][e] = j < S ? vb[j * vs.sl + e * vs.se] : 0.f;
    }
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
  // Query i sees key j when j <= i + S - L: the block's first key bounds the first query tile.
  long long i_begin = causal ? max(0LL, tile * LS_ATT_BQ - (S - L)) : 0;
  i_begin = i_begin / LS_ATT_BK * LS_ATT_BK;
  const long long first = causal ? j - (S - L) : 0;  // this thread's first visible query
  for (long long i0 = i_begin; i0 < L; i0 += LS_ATT_BK) {
    __syncthreads();
    for (int t = threadIdx.x; t < LS_ATT_BK * D; t += LS_ATT_BQ) {
      const int ii = t / D, e = t % D;
      const long long i = i0 + ii;
      Qs[ii][e] = i < L ? qb[i * qs.sl + e * qs.se] : 0.f;
      Gs[ii][e] = i < L ? gb[i * gs.sl + e * gs.se] : 0.f;
    }
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
// Attention through cuBLAS for long sequences (the scores in memory, as PyTorch's math path):
// a 4-D strided copy packs operands per (batch, head) and unpacks the output; a softmax over each
// score row (causal mask, log-sum-exp kept); the backward's probabilities from the log-sum-exp and
// its dS = P (dP - D) scale.
extern "C" __global__ void ls_strided_copy4(float* __restrict__ dst, const float* __restrict__ src, long long n0, long long n1,
                                            long long n2, long long n3, long long s0, long long s1, long long s2, long long s3,
                                            long long d0, long long d1, long long d2, long long d3) {
  const long long total = n0 * n1 * n2 * n3;
  if (total < (1ll << 31)) {  // 32-bit division where the sizes allow: several times fewer instructions
    const unsigned m3 = (unsigned)n3, m2 = (unsigned)n2, m1 = (unsigned)n1;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)total; i += gridDim.x * blockDim.x) {
      const unsigned a3 = i % m3, t = i / m3, a2 = t % m2, t2 = t / m2, a1 = t2 % m1, a0 = t2 / m1;
      dst[a0 * d0 + a1 * d1 + a2 * d2 + a3 * d3] = src[a0 * s0 + a1 * s1 + a2 * s2 + a3 * s3];
    }
    return;
  }
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
    const long long a3 = i % n3, a2 = i / n3 % n2, a1 = i / (n3 * n2) % n1, a0 = i / (n3 * n2 * n1);
    dst[a0 * d0 + a1 * d1 + a2 * d2 + a3 * d3] = src[a0 * s0 + a1 * s1 + a2 * s2 + a3 * s3];
  }
}
// A warp per score row (8 rows a block): P = softmax(row) over the visible keys (0 elsewhere),
// and the row's log-sum-exp; lanes read consecutive scores, the row's max and sum by shuffles.
extern "C" __global__ void ls_attn_softmax(float* __restrict__ sc, float* __restrict__ lse, long long rows, long long L, long long S,
                                           int causal) {
  const long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= rows) return;
  const int lane = threadIdx.x & 31;
  const long long i = row % L;
  float* r = sc + row * S;
  const long long lim = causal ? min(S, i + S - L + 1) : S;
  const float NEG = -__int_as_float(0x7f800000);
  float m = NEG;
  for (long long j = lane; j < lim; j += 32) m = fmaxf(m, r[j]);
  m = ls_warp_reduce<1, 32>(m);
  float s = 0.f;
  for (long long j = lane; j < lim; j += 32) s += __expf(r[j] - m);
  s = ls_warp_reduce<0, 32>(s);
  const float inv = s > 0.f ? 1.f / s : 0.f;
  for (long long j = lane; j < S; j += 32) r[j] = j < lim ? __expf(r[j] - m) * inv : 0.f;
  if (lane == 0) lse[row] = s > 0.f ? m + __logf(s) : NEG;
}
// Backward: P from the scores and lse (in place), D_i = dO_i . O_i, then dS = P (dP - D) scale.
extern "C" __global__ void ls_attn_probs(float* __restrict__ sc, const float* __restrict__ lse, long long L, long long S,
                                         long long total, int causal) {
  for (long long x = (long long)blockIdx.x * blockDim.x + threadIdx.x; x < total; x += (long long)gridDim.x * blockDim.x) {
    const long long row = x / S, j = x % S, i = row % L;
    sc[x] = !causal || j <= i + S - L ? __expf(sc[x] - lse[row]) : 0.f;
  }
}
extern "C" __global__ void ls_attn_rowdot(float* __restrict__ d, const float* __restrict__ a, const float* __restrict__ b, long long rows,
                                          long long n) {
  for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += (long long)gridDim.x * blockDim.x) {
    float s = 0.f;
    for (long long e = 0; e < n; ++e) s += a[r * n + e] * b[r * n + e];
    d[r] = s;
  }
}
extern "C" __global__ void ls_attn_dscores(float* __restrict__ dp, const float* __restrict__ p, const float* __restrict__ drow,
                                           long long S, long long total, float scale) {
  for (long long x = (long long)blockIdx.x * blockDim.x + threadIdx.x; x < total; x += (long long)gridDim.x * blockDim.x)
    dp[x] = p[x] * (dp[x] - drow[x / S]) * scale;
}
// Convolution backward's input gradient from the gradient columns (N x R x P per group): each
// input position gathers the column entries that read it (no atomics).
extern "C" __global__ void ls_col2im(const float* __restrict__ cols, float* __restrict__ x, int N, int CG, int H, int W, int KH, int KW,
                                     int OH, int OW, int sh, int sw, int ph, int pw, int dh, int dw, long long x_image) {
  const long long P = (long long)OH * OW, R = (long long)CG * KH * KW, total = (long long)N * CG * H * W;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
    const int iw = (int)(i % W), ih = (int)((i / W) % H), ci = (int)((i / ((long long)W * H)) % CG);
    const long long n = i / ((long long)CG * H * W);
    float acc = 0.f;
    for (int kh = 0; kh < KH; ++kh) {
      const int th = ih + ph - kh * dh;
      if (th < 0 || th % sh) continue;
      const int oh = th / sh;
      if (oh >= OH) continue;
      for (int kw = 0; kw < KW; ++kw) {
        const int tw = iw + pw - kw * dw;
        if (tw < 0 || tw % sw) continue;
        const int ow = tw / sw;
        if (ow >= OW) continue;
        acc += cols[n * R * P + ((long long)(ci * KH + kh) * KW + kw) * P + (long long)oh * OW + ow];
      }
    }
    x[n * x_image + ((long long)ci * H + ih) * W + iw] = acc;
  }
}
// Bias gradient: the sum of the output gradient over images and positions, a block per channel.
extern "C" __global__ void ls_channel_sum(const float* __restrict__ gy, float* __restrict__ gb, int N, long long O, long long P) {
  const long long o = blockIdx.x;
  float s = 0.f;
  for (long long i = threadIdx.x; i < N * P; i += blockDim.x) s += gy[(i / P) * O * P + o * P + i % P];
  s = ls_block_reduce<0>(s, 0.f);
  if (threadIdx.x == 0) gb[o] = s;
}
