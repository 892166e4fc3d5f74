// Lowerscope package runtime for CPU packages: what an exported model needs besides its generated
// kernels and buffers.h. The library calls themselves (matrix multiply cut into blocks,
// convolution, attention) are runtime_cpu.h, the very file Lowerscope runs them from; this file
// only says what they run on here: OpenMP's threads and a CBLAS. No other dependency than a CBLAS
// (OpenBLAS on Debian: libopenblas-dev) and OpenMP.
// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <cblas.h>
#include <omp.h>

#include "buffers.h"
#include "runtime_cpu.h"

namespace lsrt {

// The host runtime_cpu.h's calls run on. As in Lowerscope, the library runs single-threaded on the
// kernels' own OpenMP team, a block a thread: its own threads beside a spinning OpenMP team would
// fight it for the cores (an MLP training step: 20 ms that way, against a fraction of a
// millisecond). Inside a parallel region a call runs whole on its thread.
struct Omp {
  static int threads() { return omp_in_parallel() ? 1 : omp_get_max_threads(); }
  template <class F>
  static void tasks(int64_t n, const F& f) {
    if (n <= 1 || omp_in_parallel()) {
      for (int64_t i = 0; i < n; ++i) f(i);
      return;
    }
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t i = 0; i < n; ++i) f(i);
  }
  static void gemm(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, bool ta, const float* B, int64_t ldb,
                   bool tb, float beta, float* C, int64_t ldc) {
#if defined(OPENBLAS_VERSION)
    static const bool single_threaded = (openblas_set_num_threads(1), true);
    (void)single_threaded;
#endif
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(M), static_cast<int>(N),
                static_cast<int>(K), alpha, A, static_cast<int>(lda), B, static_cast<int>(ldb), beta, C, static_cast<int>(ldc));
  }
  static float* scratch(size_t n, int slot) {
    thread_local std::vector<float> buf[2];
    std::vector<float>& b = buf[slot];
    if (b.size() < n) b.resize(n);
    return b.data();
  }
};

// C[M,N] = alpha * op(A) @ op(B) + beta * C, row major; ta/tb: the operand is stored transposed.
// `rows` x `cols` (both set): the cut max-autotune chose for this product, one call a block.
inline void sgemm(int64_t M, int64_t N, int64_t K, float alpha, const float* A, bool ta, const float* B, bool tb, float beta, float* C,
                  int64_t rows = 0, int64_t cols = 0) {
  cpu::sgemm<Omp>(M, N, K, alpha, A, ta, B, tb, beta, C, rows, cols);
}

// addmm: y = beta * bias + alpha * A @ B, the bias varying along the rows and/or the columns.
inline void addmm(float* y, const float* bias, bool per_row, bool per_col, int64_t row_stride, int64_t M, int64_t N, int64_t K,
                  const float* a, bool ta, const float* b, bool tb, float alpha, float beta, int64_t rows = 0, int64_t cols = 0) {
  cpu::addmm<Omp>(y, bias, per_row, per_col, row_stride, M, N, K, a, ta, b, tb, alpha, beta, rows, cols);
}

using Conv = cpu::Conv<Omp>;
using Attention = cpu::Attention<Omp>;
using AttentionBackward = cpu::AttentionBackward<Omp>;
using View = cpu::View;

}  // namespace lsrt
