#include "cuda/cublas.h"

#include <dlfcn.h>

#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace ls {

Cublas* Cublas::get(std::string* why) {
  static std::mutex m;
  static std::unique_ptr<Cublas> c;
  static std::string error;
  static bool tried = false;
  std::lock_guard<std::mutex> lock(m);
  if (!tried) {
    tried = true;
    std::string reason;
    if (!CudaDriver::get(&reason)) {
      error = reason;
    } else {
      auto b = std::make_unique<Cublas>();
      const std::vector<std::string> names = {
#ifdef LOWERSCOPE_CUDA_LIB
          std::string(LOWERSCOPE_CUDA_LIB) + "/libcublas.so",
#endif
          "libcublas.so.13", "libcublas.so.12", "libcublas.so", "/usr/local/cuda/lib64/libcublas.so"};
      for (const auto& n : names)
        if ((b->lib_ = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL))) {
          b->library = n;
          break;
        }
      if (!b->lib_) {
        error = "cuBLAS (libcublas.so) was not found";
      } else {
        b->create_ = reinterpret_cast<decltype(b->create_)>(dlsym(b->lib_, "cublasCreate_v2"));
        b->gemm_ = reinterpret_cast<decltype(b->gemm_)>(dlsym(b->lib_, "cublasSgemmStridedBatched"));
        b->set_stream_ = reinterpret_cast<decltype(b->set_stream_)>(dlsym(b->lib_, "cublasSetStream_v2"));
        if (!b->create_ || !b->gemm_) error = "cuBLAS lacks cublasCreate_v2 or cublasSgemmStridedBatched";
        else if (int r = b->create_(&b->handle_); r != 0) error = "cublasCreate failed (status " + std::to_string(r) + ")";
        else {
          b->generation_ = CudaDriver::get()->generation();
          c = std::move(b);
        }
      }
    }
  }
  if (!c && why) *why = error;
  if (c) {
    CudaDriver* d = CudaDriver::get();
    if (d && d->generation() != c->generation_) {  // the device was reset: the old handle died with it
      c->generation_ = d->generation();
      c->create_(&c->handle_);
      c->stream_ = nullptr;
    }
  }
  return c.get();
}

void Cublas::sgemm(int64_t batch, int64_t M, int64_t N, int64_t K, float alpha, DevicePtr A, bool ta, int64_t sa, DevicePtr B,
                   bool tb, int64_t sb, float beta, DevicePtr C, int64_t sc) {
  // Row-major C = A @ B is column-major C^T = B^T @ A^T: B's buffer, read column-major, is B^T
  // (ld N) unless it is stored transposed (then it is B, ld K, and cuBLAS transposes it).
  // On the driver's current stream (a graph being captured has its own).
  if (void* s = CudaDriver::get()->stream(); s != stream_ && set_stream_) {
    if (const int r = set_stream_(handle_, s); r != 0) throw std::runtime_error("cublasSetStream failed (status " + std::to_string(r) + ")");
    stream_ = s;
  }
  const int opb = tb ? 1 : 0, opa = ta ? 1 : 0;
  const int ldb = static_cast<int>(tb ? K : N), lda = static_cast<int>(ta ? M : K);
  const int r = gemm_(handle_, opb, opa, static_cast<int>(N), static_cast<int>(M), static_cast<int>(K), &alpha,
                      reinterpret_cast<const float*>(B), ldb, sb, reinterpret_cast<const float*>(A), lda, sa, &beta,
                      reinterpret_cast<float*>(C), static_cast<int>(N), sc, static_cast<int>(batch));
  if (r != 0) throw std::runtime_error("cublasSgemmStridedBatched failed (status " + std::to_string(r) + ")");
}

}  // namespace ls
