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
