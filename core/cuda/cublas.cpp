#include "cuda/cublas.h"

#include <dlfcn.h>

#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <stdexcept>
#include <vector>

namespace ls {
namespace {

// The first of the toolkit's library `base` (libcublas, libcublasLt) that loads: the CMake-found
// toolkit's, then CUDA 13's, 12's, any, /usr/local/cuda's. `which` gets the file's name.
void* open_cuda_library(const std::string& base, std::string* which = nullptr) {
  const std::vector<std::string> names = {
#ifdef LOWERSCOPE_CUDA_LIB
      std::string(LOWERSCOPE_CUDA_LIB) + "/" + base + ".so",
#endif
      base + ".so.13", base + ".so.12", base + ".so", "/usr/local/cuda/lib64/" + base + ".so"};
  for (const auto& n : names)
    if (void* lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      if (which) *which = n;
      return lib;
    }
  return nullptr;
}

}  // namespace

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
      b->lib_ = open_cuda_library("libcublas", &b->library);
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
      c->lt_.reset();  // its handle, plans and workspace died with the context too
      c->lt_tried_ = false;
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

namespace ls {

// The few cuBLASLt entry points and constants used (cublasLt.h, CUDA 12 and 13): opaque handles
// are pointers, the constants are the header's values.
struct Cublas::Lt {
  static constexpr int kCompute32F = 68, kR32F = 0;                              // CUBLAS_COMPUTE_32F, CUDA_R_32F
  static constexpr int kTransA = 3, kTransB = 4, kEpilogue = 7, kBiasPointer = 8;  // CUBLASLT_MATMUL_DESC_*
  static constexpr uint32_t kEpilogueBias = 4;                                  // CUBLASLT_EPILOGUE_BIAS
  static constexpr int kPrefMaxWorkspace = 1;                                   // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
  static constexpr size_t kWorkspace = size_t(4) << 20;
  struct Algo {
    uint64_t data[8];
  };
  struct Heuristic {  // cublasLtMatmulHeuristicResult_t
    Algo algo;
    size_t workspace;
    int state;
    float waves;
    int reserved[4];
  };
  int (*create)(void**) = nullptr;
  int (*desc_create)(void**, int, int) = nullptr;
  int (*desc_set)(void*, int, const void*, size_t) = nullptr;
  int (*layout_create)(void**, int, uint64_t, uint64_t, int64_t) = nullptr;
  int (*pref_create)(void**) = nullptr;
  int (*pref_set)(void*, int, const void*, size_t) = nullptr;
  int (*heuristic)(void*, void*, void*, void*, void*, void*, void*, int, Heuristic*, int*) = nullptr;
  int (*matmul)(void*, void*, const void*, const void*, void*, const void*, void*, const void*, const void*, void*, void*, void*,
                const Algo*, void*, size_t, void*) = nullptr;
  void* lib = nullptr;
  void* handle = nullptr;
  DeviceBuffer workspace;
  // One plan per shape and layout (descriptors and the heuristic's algorithm), found once: the
  // heuristic costs tens of microseconds, more than a small product.
  struct Plan {
    void *desc = nullptr, *a = nullptr, *b = nullptr, *c = nullptr;
    Algo algo{};
    bool ok = false;
  };
  std::map<std::tuple<int64_t, int64_t, int64_t, bool, bool>, Plan> plans;
};

Cublas::Lt* Cublas::lt() {
  if (lt_tried_) return lt_.get();
  lt_tried_ = true;
  auto lt = std::make_shared<Lt>();
  if (!(lt->lib = open_cuda_library("libcublasLt"))) return nullptr;
  auto sym = [&](auto& f, const char* name) { f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(dlsym(lt->lib, name)); return f != nullptr; };
  if (!sym(lt->create, "cublasLtCreate") || !sym(lt->desc_create, "cublasLtMatmulDescCreate") ||
      !sym(lt->desc_set, "cublasLtMatmulDescSetAttribute") || !sym(lt->layout_create, "cublasLtMatrixLayoutCreate") ||
      !sym(lt->pref_create, "cublasLtMatmulPreferenceCreate") || !sym(lt->pref_set, "cublasLtMatmulPreferenceSetAttribute") ||
      !sym(lt->heuristic, "cublasLtMatmulAlgoGetHeuristic") || !sym(lt->matmul, "cublasLtMatmul"))
    return nullptr;
  if (lt->create(&lt->handle) != 0) return nullptr;
  lt->workspace = DeviceBuffer(*CudaDriver::get(), Lt::kWorkspace);
  lt_ = std::move(lt);
  return lt_.get();
}

bool Cublas::gemm_bias(int64_t M, int64_t N, int64_t K, float alpha, DevicePtr A, bool ta, DevicePtr B, bool tb, DevicePtr bias,
                       DevicePtr C) {
  Lt* lt = this->lt();
  if (!lt) return false;
  // Column-major, as sgemm: C^T (N x M) = op(B buffer) (N x K) @ op(A buffer) (K x M); the bias
  // runs along C^T's rows, one value per column of our row-major C.
  Lt::Plan& pl = lt->plans[{M, N, K, ta, tb}];
  if (!pl.desc) {
    const int opb = tb ? 1 : 0, opa = ta ? 1 : 0;
    const uint32_t epilogue = Lt::kEpilogueBias;
    const uint64_t ws = Lt::kWorkspace;
    void* pref = nullptr;
    Lt::Heuristic h{};
    int found = 0;
    pl.ok = lt->desc_create(&pl.desc, Lt::kCompute32F, Lt::kR32F) == 0 &&
            lt->desc_set(pl.desc, Lt::kTransA, &opb, sizeof opb) == 0 && lt->desc_set(pl.desc, Lt::kTransB, &opa, sizeof opa) == 0 &&
            lt->desc_set(pl.desc, Lt::kEpilogue, &epilogue, sizeof epilogue) == 0 &&
            lt->layout_create(&pl.a, Lt::kR32F, tb ? K : N, tb ? N : K, tb ? K : N) == 0 &&
            lt->layout_create(&pl.b, Lt::kR32F, ta ? M : K, ta ? K : M, ta ? M : K) == 0 &&
            lt->layout_create(&pl.c, Lt::kR32F, N, M, N) == 0 && lt->pref_create(&pref) == 0 &&
            lt->pref_set(pref, Lt::kPrefMaxWorkspace, &ws, sizeof ws) == 0 &&
            lt->heuristic(lt->handle, pl.desc, pl.a, pl.b, pl.c, pl.c, pref, 1, &h, &found) == 0 && found > 0 && h.state == 0;
    if (pl.ok) pl.algo = h.algo;
  }
  if (!pl.ok) return false;
  void* bp = reinterpret_cast<void*>(bias);
  if (lt->desc_set(pl.desc, Lt::kBiasPointer, &bp, sizeof bp) != 0) return false;
  const float beta = 0.f;
  const int r = lt->matmul(lt->handle, pl.desc, &alpha, reinterpret_cast<const void*>(B), pl.a, reinterpret_cast<const void*>(A), pl.b,
                           &beta, reinterpret_cast<const void*>(C), pl.c, reinterpret_cast<void*>(C), pl.c, &pl.algo,
                           reinterpret_cast<void*>(lt->workspace.ptr()), Lt::kWorkspace, CudaDriver::get()->stream());
  if (r != 0) throw std::runtime_error("cublasLtMatmul failed (status " + std::to_string(r) + ")");
  return true;
}

}  // namespace ls
