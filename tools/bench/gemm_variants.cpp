// How to split a float32 matrix multiply over the cores (the CPU backend's addmm: single-threaded
// BLAS calls on the generated kernels' OpenMP team), against one multi-threaded BLAS call.
// Shape as the layernorm_gelu fixture's linear layer: C[M,N] = A[M,K] @ B^T, B stored [N,K].
//   g++ -O2 -fopenmp -o gemm_variants tools/bench/gemm_variants.cpp -lopenblas && ./gemm_variants [M N K]
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

extern "C" void openblas_set_num_threads(int);

static double median_ms(const std::function<void()>& f) {
  for (int i = 0; i < 3; ++i) f();
  std::vector<double> t;
  const auto start = std::chrono::steady_clock::now();
  while (t.size() < 30 || std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 1.0) {
    const auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main(int argc, char** argv) {
  const int M = argc > 3 ? atoi(argv[1]) : 2048, N = argc > 3 ? atoi(argv[2]) : 1024, K = argc > 3 ? atoi(argv[3]) : 256;
  const int T = omp_get_max_threads();
  std::vector<float> A(size_t(M) * K), B(size_t(N) * K), C(size_t(M) * N), R(size_t(M) * N);
  for (auto& v : A) v = float(rand()) / RAND_MAX - 0.5f;
  for (auto& v : B) v = float(rand()) / RAND_MAX - 0.5f;
  auto block = [&](int m0, int m1, int n0, int n1) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m1 - m0, n1 - n0, K, 1.f, &A[size_t(m0) * K], K, &B[size_t(n0) * K], K, 0.f,
                &C[size_t(m0) * N + n0], N);
  };
  const double gflop = 2.0 * M * N * K / 1e9;
  auto report = [&](const char* what, double ms) {
    double err = 0;
    for (size_t i = 0; i < C.size(); ++i) err = std::max(err, double(std::fabs(C[i] - R[i])));
    printf("%-44s %8.3f ms  %6.0f GFLOP/s  max diff %.1e\n", what, ms, gflop / ms * 1e3, err);
  };
  printf("C[%d,%d] = A[%d,%d] @ B^T, %d OpenMP threads\n", M, N, M, K, T);
  openblas_set_num_threads(T);
  const double whole = median_ms([&] { block(0, M, 0, N); });
  R = C;
  report("one call, BLAS's own threads", whole);
  openblas_set_num_threads(1);
  for (int rows : {M / T, 64, 32}) {
    if (rows < 1) continue;
    const double ms = median_ms([&] {
#pragma omp parallel for schedule(dynamic, 1)
      for (int m0 = 0; m0 < M; m0 += rows) block(m0, std::min(M, m0 + rows), 0, N);
    });
    char what[96];
    snprintf(what, sizeof what, "blocks of %d rows, a call each (team)", rows);
    report(what, ms);
  }
  for (int cols : {N / T, 128}) {
    const double ms = median_ms([&] {
#pragma omp parallel for schedule(dynamic, 1)
      for (int n0 = 0; n0 < N; n0 += cols) block(0, M, n0, std::min(N, n0 + cols));
    });
    char what[96];
    snprintf(what, sizeof what, "blocks of %d columns, a call each (team)", cols);
    report(what, ms);
  }
  for (int tr : {2, 4, 8}) {  // tr x (T / tr) tiles
    const int tc = T / tr;
    if (tc < 2) continue;
    const int mr = (M + tr - 1) / tr, nc = (N + tc - 1) / tc;
    const double ms = median_ms([&] {
#pragma omp parallel for schedule(static, 1)
      for (int t = 0; t < tr * tc; ++t) block(t / tc * mr, std::min(M, (t / tc + 1) * mr), t % tc * nc, std::min(N, (t % tc + 1) * nc));
    });
    char what[96];
    snprintf(what, sizeof what, "%d x %d tiles, a call each (team)", tr, tc);
    report(what, ms);
  }
}
