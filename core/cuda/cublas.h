// cuBLAS, loaded at run time, for the matrix multiplies behind extern kernels. Row-major
// operands, as the loop IR's buffers are; FP32 math (no TF32), as PyTorch's default.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "cuda/driver.h"

namespace ls {

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
  std::string library;  // the file it was loaded from

 private:
  struct Lt;             // cuBLASLt: its entry points, handle, workspace and plans per shape
  Lt* lt();              // loaded on first use; nullptr when it cannot be
  std::shared_ptr<Lt> lt_;
  bool lt_tried_ = false;
  void* lib_ = nullptr;
  void* handle_ = nullptr;
  int generation_ = 0;  // the device context the handle belongs to (a reset after a fault makes a new one)
  int (*create_)(void**) = nullptr;
  int (*set_stream_)(void*, void*) = nullptr;
  void* stream_ = nullptr;  // the stream the handle is set to
  int (*gemm_)(void*, int, int, int, int, int, const float*, const float*, int, long long, const float*, int, long long,
               const float*, float*, int, long long, int) = nullptr;
};

}  // namespace ls
