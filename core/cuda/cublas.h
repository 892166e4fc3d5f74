// cuBLAS, loaded at run time, for the matrix multiplies behind extern kernels. Row-major
// operands, as the loop IR's buffers are; FP32 math (no TF32), as PyTorch's default, unless the
// environment has LS_ALLOW_TF32=1 (lowerscope-cli --allow-tf32 sets it, so a worker process
// inherits it): then float32 products run on the tensor cores in TF32, as PyTorch's
// torch.backends.cuda.matmul.allow_tf32 = True (CUBLAS_COMPUTE_32F_FAST_TF32, the TF32 math mode).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda/driver.h"
#include "tensor/dtype.h"

namespace ls {

// A row-major product for cuBLASLt: C[b] (M x N) = alpha * op(A[b]) @ op(B[b]) (+ bias[N] on
// every row), b < batch, each operand `stride_*` elements after the one before.
struct MatmulProblem {
  int64_t batch = 1, M = 0, N = 0, K = 0;
  bool ta = false, tb = false;  // A stored K x M, B stored N x K
  bool bias = false;            // cuBLASLt's bias epilogue
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  // The element type of A, B, C and the bias: f32 (FP32 math), or bf16/f16 on the tensor cores
  // with float32 accumulation (CUBLAS_COMPUTE_32F), as PyTorch's half matmuls.
  DType dtype = DType::f32;
  std::string text() const;     // "128x512 @ 512x2048 + bias"
};

// One of cuBLASLt's algorithms for a problem (cublasLtMatmulAlgo_t, opaque) and what it is.
struct MatmulAlgorithm {
  uint64_t data[8] = {};
  size_t workspace = 0;  // bytes it needs
  std::string text;      // "tile 128x64, stages 32x4, split-K 2, 0.8 waves"
  std::string serialize() const;                       // one line: the words in hex, the workspace, the text
  static bool parse(const std::string& line, MatmulAlgorithm& out);
};

class Cublas {
 public:
  static Cublas* get(std::string* why = nullptr);  // nullptr (with the reason) when not loadable
  // C[b] (M x N) = alpha * op(A[b]) @ op(B[b]) + beta * C[b], for b < batch; ta: A is stored
  // transposed (K x M), tb: B is stored transposed (N x K). Strides in elements.
  void sgemm(int64_t batch, int64_t M, int64_t N, int64_t K, float alpha, DevicePtr A, bool ta, int64_t stride_a, DevicePtr B,
             bool tb, int64_t stride_b, float beta, DevicePtr C, int64_t stride_c);
  // C (M x N) = alpha * op(A) @ op(B) + bias[N] on every row, through cuBLASLt's bias epilogue
  // (as PyTorch's addmm does): no pass broadcasting the bias, C not read. False where cuBLASLt is
  // absent or has no algorithm for the shape: the caller broadcasts and uses sgemm.
  bool gemm_bias(int64_t M, int64_t N, int64_t K, float alpha, DevicePtr A, bool ta, DevicePtr B, bool tb, DevicePtr bias, DevicePtr C);
  // cuBLASLt's algorithms for `p`, best first as its heuristic orders them, at most `count`
  // (those that fit the workspace); empty where cuBLASLt is absent or has none.
  std::vector<MatmulAlgorithm> algorithms(const MatmulProblem& p, int count);
  // `p` through cuBLASLt with `algo` (one of algorithms(p)'s), or its heuristic's first where
  // null; C is not read. False where cuBLASLt is absent or has no algorithm for it.
  bool gemm_lt(const MatmulProblem& p, const MatmulAlgorithm* algo, float alpha, DevicePtr A, DevicePtr B, DevicePtr bias, DevicePtr C);
  std::string library;  // the file it was loaded from
  bool allow_tf32 = false;  // float32 products in TF32 (LS_ALLOW_TF32, read when cuBLAS is loaded)

 private:
  void use_math_mode();  // the handle's math mode: TF32 tensor-op math where allowed
  struct Lt;             // cuBLASLt: its entry points, handle, workspace and plans per problem
  struct LtPlan;
  LtPlan* plan(const MatmulProblem& p);  // descriptors and the heuristic's first algorithm, made once per problem
  Lt* lt();              // loaded on first use; nullptr when it cannot be
  std::shared_ptr<Lt> lt_;
  bool lt_tried_ = false;
  void* lib_ = nullptr;
  void* handle_ = nullptr;
  int generation_ = 0;  // the device context the handle belongs to (a reset after a fault makes a new one)
  int (*create_)(void**) = nullptr;
  int (*set_stream_)(void*, void*) = nullptr;
  int (*set_math_mode_)(void*, int) = nullptr;  // cublasSetMathMode: TF32 where allowed
  void* stream_ = nullptr;  // the stream the handle is set to
  int (*gemm_)(void*, int, int, int, int, int, const float*, const float*, int, long long, const float*, int, long long,
               const float*, float*, int, long long, int) = nullptr;
};

}  // namespace ls
