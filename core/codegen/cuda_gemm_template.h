// CUDA GEMM templates: a float32 matrix multiply (mm, or addmm with a bias row) written as a
// generated kernel for its sizes, its epilogue (the pointwise kernel after it, where the schedule
// marked one) called on each element right after the element is stored, so the product is not
// read back by a kernel of its own. max-autotune times them against cuBLAS/cuBLASLt and keeps
// one where it wins, as Inductor's max-autotune times its Triton mm templates (their epilogues
// fused) against the extern mm.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "codegen/cuda_codegen.h"

namespace ls {

// The product of schedule kernel k as a template sees it: C (M x N) = op(A) @ op(B) (+ bias, one
// value per column), A stored K x M where ta, B stored N x K where tb; its buffers; `epilogue`:
// the index of the kernel that runs inside it (-1: none).
struct CudaGemmProblem {
  DType dtype = DType::f32;  // every operand's: float32 (the SIMT template), bfloat16 or float16 (the tensor cores')
  int64_t M = 0, N = 0, K = 0;
  bool ta = false, tb = false;
  std::string a, b, bias, c;  // bias empty: mm
  int epilogue = -1;
};

// Where a template can compute kernel k: a 2-D mm, or addmm whose bias is a row of N added
// unscaled (alpha = beta = 1), every operand float32, or every one bfloat16 or float16 with K and
// the contiguous sizes multiples of 8; nullopt otherwise. The next kernel rides along as its epilogue
// where the schedule marked it (Kernel::epilogue) and it writes no buffer it reads.
std::optional<CudaGemmProblem> cuda_gemm_problem(const LoopProgram& p, const Schedule& s, size_t k);

// The tiles max-autotune tries for a problem: those no larger than the product needs.
std::vector<CudaGemmConfig> cuda_gemm_candidates(const CudaGemmProblem& g);

struct CudaGemmSource {
  std::string text;               // the epilogue's device function (where there is one), then the kernel
  std::string function;           // the __global__ function
  std::vector<std::string> args;  // buffer per parameter: A, B, (bias), C, then the epilogue's
  CudaLaunch launch;              // form "gemm template"
};
CudaGemmSource cuda_gemm_template(const LoopProgram& p, const Schedule& s, const CudaGemmProblem& g, const CudaGemmConfig& c,
                                  const CudaCodegenOptions& o, const std::string& function);

}  // namespace ls
