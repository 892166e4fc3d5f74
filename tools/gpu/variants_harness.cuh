// The timing harness of the variant benches (bandwidth_variants.cu, column_variants.cu): checked
// CUDA calls, CUDA events around batches of launches (median), random fills, the largest
// difference between two buffers, and one table row per variant against the measured copy.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#define CK(x)                                                                         \
  do {                                                                                \
    cudaError_t e_ = (x);                                                             \
    if (e_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

// ---- harness -----------------------------------------------------------------------------------
struct Timer {
  cudaEvent_t a, b;
  Timer() {
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
  }
  // median over batches of `per` launches; launch(i) gets the launch's index (for rotation)
  float ms(const std::function<void(int)>& launch, int per = 20, int batches = 15) {
    for (int i = 0; i < per; ++i) launch(i);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<float> t;
    for (int k = 0; k < batches; ++k) {
      CK(cudaEventRecord(a));
      for (int i = 0; i < per; ++i) launch(i);
      CK(cudaEventRecord(b));
      CK(cudaEventSynchronize(b));
      float m = 0;
      CK(cudaEventElapsedTime(&m, a, b));
      t.push_back(m / per);
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }
};
static void fill_random(float* d, size_t n, unsigned seed, float scale) {
  std::vector<float> h(n);
  std::mt19937 g(seed);
  std::normal_distribution<float> nd(0.f, scale);
  for (auto& v : h) v = nd(g);
  CK(cudaMemcpy(d, h.data(), n * 4, cudaMemcpyHostToDevice));
}
static double max_diff(const float* a, const float* b, size_t n) {
  std::vector<float> x(n), y(n);
  CK(cudaMemcpy(x.data(), a, n * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(y.data(), b, n * 4, cudaMemcpyDeviceToHost));
  double m = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = std::fabs(double(x[i]) - double(y[i]));
    if (!(d <= m)) m = std::isnan(d) ? INFINITY : d;
  }
  return m;
}
static double copy_gbps = 0;
static void row(const char* name, double bytes, float ms, const char* check) {
  const double gbps = bytes / (ms * 1e6);
  std::printf("| %-44s | %8.4f | %6.0f | %4.0f%% | %s |\n", name, ms, gbps, copy_gbps > 0 ? 100 * gbps / copy_gbps : 0.0, check);
}
// The ceiling: a 1 GiB device-to-device copy (read + write bytes), as cuda_bench.py measures it.
// Sets copy_gbps and prints the table's head and first row.
static void copy_ceiling(Timer& tm) {
  const size_t n = size_t(1) << 28;
  float *a, *b;
  CK(cudaMalloc(&a, n * 4));
  CK(cudaMalloc(&b, n * 4));
  fill_random(a, n, 1, 1.f);
  const float ms = tm.ms([&](int) { CK(cudaMemcpyAsync(b, a, n * 4, cudaMemcpyDeviceToDevice)); }, 5, 11);
  copy_gbps = 2.0 * n * 4 / (ms * 1e6);
  std::printf("| variant | ms | GB/s | of copy | check |\n|---|---|---|---|---|\n");
  row("cudaMemcpy D2D 1 GiB (the ceiling)", 2.0 * n * 4, ms, "-");
  CK(cudaFree(a));
  CK(cudaFree(b));
}
