// The helper kernels around cuFFT's transforms (exec/fft_cuda.h), compiled by NVRTC into a module
// of their own, embedded at build time (kFftKernels). Grid-stride loops over 256-thread blocks.
// SPDX-License-Identifier: GPL-3.0-or-later

// A gather's geometry: the contiguous destination's sizes; per dimension the source's element
// stride and the limit past which the element is zero (c2r's input padded to n/2 + 1).
struct FftGeometry {
  long long shape[8], stride[8], limit[8];
  long long offset;
  int rank;
};

// The source element for destination element i, or -1 where it is past a limit.
__device__ __forceinline__ long long ls_fft_source(const FftGeometry& g, long long i) {
  long long at = g.offset;
  for (int d = g.rank - 1; d >= 0; --d) {
    const long long q = i % g.shape[d];
    i /= g.shape[d];
    if (q >= g.limit[d]) return -1;
    at += q * g.stride[d];
  }
  return at;
}

template <typename T>
__device__ void ls_fft_gather_of(T* y, const T* x, const FftGeometry& g, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const long long at = ls_fft_source(g, i);
    T v{};
    if (at >= 0) v = x[at];
    y[i] = v;
  }
}

// y (contiguous, g.shape) = x gathered; elements of `bytes` 4, 8 or 16.
extern "C" __global__ void ls_fft_gather(void* y, const void* x, FftGeometry g, long long n, int bytes) {
  if (bytes == 16) ls_fft_gather_of((double2*)y, (const double2*)x, g, n);
  else if (bytes == 8) ls_fft_gather_of((float2*)y, (const float2*)x, g, n);
  else ls_fft_gather_of((float*)y, (const float*)x, g, n);
}

template <typename R, typename C>
__device__ void ls_fft_widen_of(C* y, const R* x, const FftGeometry& g, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const long long at = ls_fft_source(g, i);
    C v;
    v.x = at >= 0 ? x[at] : R(0);
    v.y = R(0);
    y[i] = v;
  }
}

// y (complex, contiguous, g.shape) = x (real) gathered, imaginary parts 0; f64: double.
extern "C" __global__ void ls_fft_widen(void* y, const void* x, FftGeometry g, long long n, int f64) {
  if (f64) ls_fft_widen_of((double2*)y, (const double*)x, g, n);
  else ls_fft_widen_of((float2*)y, (const float*)x, g, n);
}

// Before a C2R: the imaginary parts of elements 0 and (n even) n/2 of each of `lines` lines of
// n/2 + 1 complex values set to 0.
extern "C" __global__ void ls_fft_real_ends(void* y, long long lines, long long n, int f64) {
  const long long h = n / 2 + 1;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < 2 * lines; i += (long long)gridDim.x * blockDim.x) {
    const long long at = (i / 2) * h + (i % 2 ? n / 2 : 0);
    if (i % 2 && n % 2) continue;
    if (f64) ((double2*)y)[at].y = 0;
    else ((float2*)y)[at].y = 0;
  }
}

// The first n values of y (float, or double where f64) times s.
extern "C" __global__ void ls_fft_scale(void* y, long long n, double s, int f64) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    if (f64) ((double*)y)[i] *= s;
    else ((float*)y)[i] *= (float)s;  // as ATen's mul_ by a double scalar: in float
  }
}
