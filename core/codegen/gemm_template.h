// The CPU GEMM template: a matrix multiply written as C++ for one problem's sizes (as Inductor's
// CPU max-autotune writes its C++ GEMM template), compiled with the model's kernels. Both operands
// are packed once, on every thread, into panels a register tile walks (A: MR rows, B: NR columns,
// K-major, zero-padded); each thread then computes its block of C tile by tile, the bias and alpha
// and beta applied as a tile is stored, and the product's epilogue kernel called on each block of
// rows while it is in the core's cache.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ls {

// A matrix multiply's operands: C[M,N] = alpha * op(A)[M,K] @ op(B)[K,N] + beta * bias, A and B
// dense row-major (op(X) = X^T when ta/tb: A stored [K,M], B stored [N,K]).
struct GemmProblem {
  int64_t M = 0, N = 0, K = 0;
  bool ta = false, tb = false;
  // addmm's bias, broadcast into C: none (mm), one per column ([N] or [1,N]), one per row ([M,1]),
  // a whole [M,N] matrix, or one number.
  enum class Bias { none, column, row, matrix, scalar } bias = Bias::none;
  float alpha = 1.f, beta = 0.f;
  std::string text() const;  // "2048x256 @ 256x1024 (B transposed), bias per column"
};

// One way to write it: an MR x NR register tile (NR a multiple of the vector width), K in chunks
// of KC, the threads' blocks of C a rows x cols grid.
struct GemmTemplate {
  int mr = 0, nr = 0, kc = 0;
  int64_t rows = 1, cols = 1;
  std::string text() const;  // "template 6x64, 8 x 2 blocks"
  bool operator==(const GemmTemplate&) const = default;
};

// The vector width (floats) the template's code is written for: 16 where this CPU has AVX-512,
// 8 with AVX2, else 4.
int gemm_vector_width();
// Whether the template serves the problem: float32 sizes whose packed operands fit its static
// buffers (64 MiB).
bool gemm_template_fits(const GemmProblem& p);
// The templates max-autotune times for a problem on `threads` threads: register tiles that fill
// the machine's vector registers, each on the grids of blocks the threads allow.
std::vector<GemmTemplate> gemm_template_candidates(const GemmProblem& p, int threads);

// The template default mode writes for a product instead of calling the library, where one is
// expected to win without timing (max-autotune times them all): AVX-512, float32, K at most 512 (one
// chunk; with more, BLAS won on the GPU machine's 16 cores) and at least 2^27 multiply-adds. Below
// that the template's compile (about 0.1 s of g++ each) costs more than it gains: on the GPU
// machine, the attention block's and the MLP's products (4M-17M multiply-adds) ran 0-10% faster as
// templates, and their compiles took 100-200 ms longer. 12x32 tiles on the grid that packs least.
// tools/bench/results-cpu-max-autotune.md has the measurements.
bool gemm_template_default(const GemmProblem& p, int threads, GemmTemplate& out);

// The C++ of one template as a function `name`:
//   extern "C" void name(const float* A, const float* B, const float* bias, float* C,
//                        void (*epilogue)(void**, int64_t, int64_t) noexcept, void** epilogue_args)
// (the epilogue kernels throw nothing: declared so, the OpenMP region needs no C++ unwinding, and
// the module no C++ runtime, which the external compiler's libraries do not link)
// epilogue (may be null): the product's epilogue kernel on C's elements [begin, end), whole rows
// or one row's columns of a block, called on the thread that computed them. Needs the CPU prelude
// (int64_t) before it; writes its own vector types.
std::string gemm_template_cpp(const std::string& name, const GemmProblem& p, const GemmTemplate& t);
using GemmTemplateFn = void (*)(const float*, const float*, const float*, float*, void (*)(void**, int64_t, int64_t), void**);

}  // namespace ls
