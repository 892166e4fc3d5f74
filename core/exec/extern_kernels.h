// Library kernels behind the loop IR's ExternKernel nodes: matrix multiply (BLAS when the build
// found one), convolution (im2col + matrix multiply), and the reference kernels for the rest.
#pragma once
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "codegen/gemm_template.h"
#include "loop/loop_ir.h"
#include "ops/op_table.h"

namespace ls {
// Operand `input` of the call as its kernel takes it: the buffer under the shape the call sees
// (a flattening view), or the whole buffer when the kernel reads a strided view of it.
Tensor extern_operand(const ExternCall& c, size_t input, const Tensor& buffer);
// The call's operands as run_extern takes them, every input buffer from `buffer` (its name -> its
// contents) and seen through extern_operand.
RefInputs extern_inputs(const ExternCall& c, const std::function<Tensor(const std::string&)>& buffer);
// A matrix multiply's epilogue (Kernel::epilogue): run on the product's elements [begin, end),
// whole rows, on the thread that computed them.
using RowEpilogue = std::function<void(int64_t begin, int64_t end)>;
// How a matrix multiply runs on the CPU: cut into `rows` x `cols` blocks, one single-threaded BLAS
// call a block on the pool's threads (1 x 1: one call); {0, 0}: as the heuristic cuts it. With
// `mr` set, not BLAS but the generated GEMM template (codegen/gemm_template.h) with an mr x nr
// register tile and K in chunks of kc, its threads' blocks a rows x cols grid.
struct GemmCut {
  int64_t rows = 0, cols = 0;
  int mr = 0, nr = 0, kc = 0;
  bool heuristic() const { return mr == 0 && (rows == 0 || cols == 0); }
  bool is_template() const { return mr > 0; }
  GemmTemplate as_template() const { return {mr, nr, kc, rows, cols}; }
  static GemmCut of(const GemmTemplate& t) { return {t.rows, t.cols, t.mr, t.nr, t.kc}; }
  std::string text() const;  // "4 x 4 blocks", "one call", "template 6x64 k256, 8 x 2 blocks"
  std::string serialize() const;               // "rows cols mr nr kc"
  static bool parse(std::istream& in, GemmCut& out);
  bool operator==(const GemmCut&) const = default;
};
// The cut the heuristic takes for an M x N x K product (tools/bench/gemm_variants.cpp measured it).
GemmCut gemm_heuristic_cut(int64_t M, int64_t N, int64_t K);
// The cuts max-autotune times for it: every cut into as many blocks as the pool has threads, or
// half as many, with at least 16 rows and 16 columns a block, and one call.
std::vector<GemmCut> gemm_candidate_cuts(int64_t M, int64_t N, int64_t K);
// A matrix multiply's sizes (bmm: one of its products); false for other calls.
bool matmul_sizes(const ExternCall& c, const RefInputs& in, int64_t& M, int64_t& N, int64_t& K);
// An mm or addmm of float32 operands as the GEMM template takes it (its bias broadcast kind,
// alpha, beta), from the loop IR: the shapes the call sees its operands in, so before anything
// runs; false for other calls (bmm, other dtypes, a bias the template cannot broadcast, an
// operand read in place through strides).
bool gemm_problem(const ExternCall& c, const LoopProgram& p, GemmProblem& out);
// Its operands' pointers as the template's function takes them: A, B, the bias (null for mm), C.
struct GemmPointers {
  const float *a = nullptr, *b = nullptr, *bias = nullptr;
  float* c = nullptr;
};
GemmPointers gemm_pointers(const ExternCall& c, const RefInputs& in, std::vector<Tensor>& outs);
// Computes the call into `outs`, which are allocated with the call's output shapes. With an
// epilogue, a matrix multiply split into blocks of rows runs it on each block right after the block
// is computed; returns whether it did (otherwise the caller runs the epilogue kernel itself).
// `cut`: a matrix multiply's cut (max-autotune's choice), else the heuristic's.
bool run_extern(const ExternCall& call, const RefInputs& in, std::vector<Tensor>& outs, const RowEpilogue* epilogue = nullptr,
                const GemmCut* cut = nullptr);
bool have_blas();
// What runs a library call where it is not the usual "library" (BLAS or our runtime's loops):
// "FFTW" for the FFTs (the reference kernel where the build has no FFTW), the reference kernel for
// the other calls on complex values (lower/lower.cpp sends them here); empty for the others.
std::string extern_library(const LoopProgram& p, const ExternCall& c);
// The threads library calls (and the GEMM template's OpenMP team) run on.
int library_threads();
}
