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
