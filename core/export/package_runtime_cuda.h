// Lowerscope package runtime for CUDA packages: what an exported model needs besides its kernels
// and buffers.h — the GPU (the CUDA driver API: its primary context and default stream), device
// buffers and scratch memory, the compiled modules (the cubin where it was built for this GPU,
// else the PTX, which the driver compiles), and matrix multiplies through cuBLAS (a bias per
// column in cuBLASLt's epilogue). Convolution, max pooling, concatenation and attention are
// runtime_cuda.h, the very file Lowerscope's executor makes them from, run over the Gpu here.
// Needs the CUDA toolkit (driver API, cuBLAS, cuBLASLt) and a GPU.
// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda.h>

#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>

#include "buffers.h"
#include "runtime_cuda.h"

namespace lsrt {

inline void cu_check(CUresult r, const std::string& what) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  const char* text = nullptr;
  cuGetErrorName(r, &name);
  cuGetErrorString(r, &text);
  throw std::runtime_error(what + ": " + (name ? std::string(name) : "CUDA error " + std::to_string(static_cast<int>(r))) +
                           (text ? std::string(" (") + text + ")" : std::string()));
}

inline void blas_check(cublasStatus_t s, const std::string& what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(what + " failed (cuBLAS status " + std::to_string(static_cast<int>(s)) + ")");
}

// One GPU: its primary context, the default stream, cuBLAS and cuBLASLt handles, the helper and
// attention modules, and every allocation (freed with it).
class Gpu {
 public:
  std::string name;
  int sm = 0, multiprocessors = 1;
  std::vector<std::string> loaded;  // the module files loaded, as "helpers.cubin" or "kernels.ptx"

  Gpu() {
    cu_check(cuInit(0), "cuInit (is there a GPU and its driver?)");
    cu_check(cuDeviceGet(&dev_, 0), "cuDeviceGet");
    cu_check(cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain");
    cu_check(cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
    char n[256] = {};
    cuDeviceGetName(n, sizeof n, dev_);
    name = n;
    int major = 0, minor = 0;
    cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev_);
    cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev_);
    cuDeviceGetAttribute(&multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev_);
    sm = major * 10 + minor;
    blas_check(cublasCreate(&blas_), "cublasCreate");
    blas_check(cublasLtCreate(&lt_), "cublasLtCreate");
  }
  ~Gpu() {
    for (auto& [key, plan] : plans_) {
      if (plan.desc) cublasLtMatmulDescDestroy(plan.desc);
      for (cublasLtMatrixLayout_t l : {plan.a, plan.b, plan.c})
        if (l) cublasLtMatrixLayoutDestroy(l);
    }
    cublasLtDestroy(lt_);
    cublasDestroy(blas_);
    for (CUdeviceptr p : allocations_) cuMemFree(p);
    for (CUmodule m : modules_) cuModuleUnload(m);
    cuDevicePrimaryCtxRelease(dev_);
  }
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  // Module `stem` of the package: stem.cubin when it was built for this GPU, else stem.ptx.
  CUmodule load(const std::string& dir, const std::string& stem) {
    for (const std::string ext : {".cubin", ".ptx"}) {
      std::ifstream f(dir + "/" + stem + ext, std::ios::binary);
      if (!f) continue;
      std::string image((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      image.push_back('\0');  // PTX is text the driver reads up to its end
      CUmodule m = nullptr;
      const CUresult r = cuModuleLoadData(&m, image.data());
      if (r == CUDA_SUCCESS) {
        modules_.push_back(m);
        loaded.push_back(stem + ext);
        return m;
      }
      if (ext == ".cubin") continue;  // built for another GPU: the PTX then
      cu_check(r, dir + "/" + stem + ext);
    }
    throw std::runtime_error(dir + "/" + stem + ".ptx: cannot read");
  }
  void load_helpers(const std::string& dir) { helpers_ = load(dir, "helpers"); }
  void load_attention(const std::string& dir) { attention_ = load(dir, "attention"); }

  CUfunction function(CUmodule m, const std::string& kernel) {
    CUfunction f = nullptr;
    cu_check(cuModuleGetFunction(&f, m, kernel.c_str()), "kernel " + kernel);
    // Generated column reductions may run as clusters of up to 16 blocks (non-portable above 8).
    cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
    return f;
  }
  // A helper kernel (helpers module) or attention kernel (attention module), looked up once.
  CUfunction helper(const std::string& kernel) {
    auto it = functions_.find(kernel);
    if (it != functions_.end()) return it->second;
    const bool attention = kernel.rfind("ls_attention_", 0) == 0 || kernel.rfind("ls_flash_attention_", 0) == 0;
    CUmodule m = attention ? attention_ : helpers_;
    if (!m) throw std::runtime_error("kernel " + kernel + ": its module (" + (attention ? "attention" : "helpers") + ") is not loaded");
    return functions_[kernel] = function(m, kernel);
  }

  CUdeviceptr alloc(size_t bytes) {
    CUdeviceptr p = 0;
    if (!bytes) return 0;
    cu_check(cuMemAlloc(&p, bytes), "cuMemAlloc of " + std::to_string(bytes) + " bytes");
    allocations_.push_back(p);
    return p;
  }
  void zero(CUdeviceptr p, size_t bytes) {
    if (bytes) cu_check(cuMemsetD8(p, 0, bytes), "cuMemsetD8");
  }
  void upload(CUdeviceptr dst, Buffer& b) {
    if (!b.bytes.empty()) cu_check(cuMemcpyHtoD(dst, b.data(), b.bytes.size()), "uploading " + b.name);
  }
  void download(Buffer& b, CUdeviceptr src) {
    if (!b.bytes.empty()) cu_check(cuMemcpyDtoH(b.data(), src, b.bytes.size()), "downloading " + b.name);
  }

  void launch(CUfunction f, long long grid, int block, void** args, const char* what, unsigned shared = 0) {
    if (grid <= 0) return;
    if (shared > 48 * 1024)
      cu_check(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(shared)),
               std::string("shared memory for ") + what);
    cu_check(cuLaunchKernel(f, static_cast<unsigned>(grid), 1, 1, static_cast<unsigned>(block), 1, 1, shared, nullptr, args, nullptr),
             std::string("launching ") + what);
  }
  void helper_launch(const std::string& kernel, long long grid, int block, void** args, unsigned shared = 0) {
    launch(helper(kernel), grid, block, args, kernel.c_str(), shared);
  }
  // Blocks of 256 threads covering `total` elements, at most 32 a multiprocessor (the kernels
  // loop over the rest).
  long long grid_for(long long total) const {
    return std::min<long long>(std::max<long long>((total + 255) / 256, 1), static_cast<long long>(multiprocessors) * 32);
  }
  // Device memory for the library calls (runtime_cuda.h), by slot. The calls run one after
  // another on the default stream, so they share it; a slot grows where a call needs more (the
  // smaller allocation is kept until the end: work queued before may still read it).
  CUdeviceptr scratch(size_t slot, size_t bytes) {
    if (scratch_.size() <= slot) scratch_.resize(slot + 1);
    std::pair<CUdeviceptr, size_t>& s = scratch_[slot];
    if (s.second < bytes) s = {alloc(bytes), bytes};
    return s.first;
  }

  // Waits for the GPU; a kernel's fault surfaces here, named by `what`.
  void sync(const std::string& what) { cu_check(cuCtxSynchronize(), what); }

  // C = alpha * op(A) @ op(B) + beta * C, row major, `batch` times at the given element strides.
  // Row-major C = A @ B is column-major C^T = B^T @ A^T: B's buffer read column-major is B^T (ld
  // N) unless it is stored transposed (then B, ld K, which cuBLAS transposes).
  void sgemm(long long batch, long long M, long long N, long long K, float alpha, CUdeviceptr A, bool ta, long long sa,
             CUdeviceptr B, bool tb, long long sb, float beta, CUdeviceptr C, long long sc) {
    blas_check(cublasSgemmStridedBatched(blas_, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(N),
                                         static_cast<int>(M), static_cast<int>(K), &alpha, reinterpret_cast<const float*>(B),
                                         static_cast<int>(tb ? K : N), sb, reinterpret_cast<const float*>(A),
                                         static_cast<int>(ta ? M : K), sa, &beta, reinterpret_cast<float*>(C), static_cast<int>(N),
                                         sc, static_cast<int>(batch)),
               "cublasSgemmStridedBatched");
  }

  // C[b] (M x N) = alpha * op(A[b]) @ op(B[b]) (+ bias, one value per column, in cuBLASLt's
  // epilogue where `bias`), b < batch, each operand `s*` elements after the one before; through
  // cuBLASLt with `algo` (a cublasLtMatmulAlgo_t's words, as the app's max-autotune chose it), or
  // its heuristic's first where null or where cuBLASLt finds `algo` does not fit this GPU (said
  // once on stderr). False where cuBLASLt has no algorithm for it. Operands and result of `type`
  // (CUDA_R_32F, or CUDA_R_16BF / CUDA_R_16F: half products accumulate and scale in float32).
  bool gemm_lt(long long batch, long long M, long long N, long long K, bool ta, bool tb, long long sa, long long sb, long long sc,
               float alpha, CUdeviceptr A, CUdeviceptr B, CUdeviceptr bias, CUdeviceptr C, const unsigned long long* algo = nullptr,
               const char* what = "a product", cudaDataType_t type = CUDA_R_32F) {
    Plan& pl = plans_[{batch, M, N, K, ta, tb, sa, sb, sc, bias != 0, static_cast<int>(type)}];
    if (!pl.tried) {
      pl.tried = true;
      const cublasOperation_t opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N, opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
      const cublasLtEpilogue_t epilogue = bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
      if (!workspace_) workspace_ = alloc(kWorkspace);
      const uint64_t ws = kWorkspace;
      const int32_t count = static_cast<int32_t>(batch);
      auto batched = [&](cublasLtMatrixLayout_t l, long long stride) {
        const int64_t st = stride;
        return batch == 1 ||
               (cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count) == CUBLAS_STATUS_SUCCESS &&
                cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &st, sizeof st) == CUBLAS_STATUS_SUCCESS);
      };
      cublasLtMatmulPreference_t pref = nullptr;
      cublasLtMatmulHeuristicResult_t h{};
      int found = 0;
      pl.ok = cublasLtMatmulDescCreate(&pl.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulDescSetAttribute(pl.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opb, sizeof opb) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulDescSetAttribute(pl.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opa, sizeof opa) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulDescSetAttribute(pl.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatrixLayoutCreate(&pl.a, type, tb ? K : N, tb ? N : K, tb ? K : N) == CUBLAS_STATUS_SUCCESS &&
              batched(pl.a, sb) &&
              cublasLtMatrixLayoutCreate(&pl.b, type, ta ? M : K, ta ? K : M, ta ? M : K) == CUBLAS_STATUS_SUCCESS &&
              batched(pl.b, sa) &&
              cublasLtMatrixLayoutCreate(&pl.c, type, N, M, N) == CUBLAS_STATUS_SUCCESS && batched(pl.c, sc) &&
              cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulAlgoGetHeuristic(lt_, pl.desc, pl.a, pl.b, pl.c, pl.c, pref, 1, &h, &found) == CUBLAS_STATUS_SUCCESS &&
              found > 0 && h.state == CUBLAS_STATUS_SUCCESS;
      if (pref) cublasLtMatmulPreferenceDestroy(pref);
      if (pl.ok) pl.algo = h.algo;
      if (pl.ok && algo) {  // the tuned algorithm, where cuBLASLt says it runs this problem here
        cublasLtMatmulAlgo_t tuned{};
        static_assert(sizeof tuned.data == 8 * sizeof(unsigned long long), "cublasLtMatmulAlgo_t is 8 words");
        std::memcpy(tuned.data, algo, sizeof tuned.data);
        cublasLtMatmulHeuristicResult_t check{};
        if (cublasLtMatmulAlgoCheck(lt_, pl.desc, pl.a, pl.b, pl.c, pl.c, &tuned, &check) == CUBLAS_STATUS_SUCCESS &&
            check.workspaceSize <= kWorkspace) {
          pl.algo = tuned;
        } else {
          std::fprintf(stderr, "note: %s (%lld x %lld @ %lld x %lld): its tuned cuBLASLt algorithm does not run on this GPU; "
                       "cuBLASLt's heuristic chooses instead\n", what, M, K, K, N);
        }
      }
    }
    if (!pl.ok) return false;
    if (bias) {
      void* bp = reinterpret_cast<void*>(bias);
      blas_check(cublasLtMatmulDescSetAttribute(pl.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp), "cuBLASLt bias pointer");
    }
    const float beta = 0.f;
    blas_check(cublasLtMatmul(lt_, pl.desc, &alpha, reinterpret_cast<const void*>(B), pl.a, reinterpret_cast<const void*>(A), pl.b,
                              &beta, reinterpret_cast<const void*>(C), pl.c, reinterpret_cast<void*>(C), pl.c, &pl.algo,
                              reinterpret_cast<void*>(workspace_), kWorkspace, nullptr),
               "cublasLtMatmul");
    return true;
  }

  // C = alpha * op(A) @ op(B) + bias (one value per column) in cuBLASLt's epilogue; false where
  // cuBLASLt has no algorithm for it.
  bool gemm_bias(long long M, long long N, long long K, float alpha, CUdeviceptr A, bool ta, CUdeviceptr B, bool tb,
                 CUdeviceptr bias, CUdeviceptr C, const unsigned long long* algo = nullptr, const char* what = "a product") {
    return gemm_lt(1, M, N, K, ta, tb, 0, 0, 0, alpha, A, B, bias, C, algo, what);
  }

 private:
  static constexpr size_t kWorkspace = 32 << 20;
  struct Plan {
    bool tried = false, ok = false;
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  CUmodule helpers_ = nullptr, attention_ = nullptr;
  CUdeviceptr workspace_ = 0;
  std::vector<CUmodule> modules_;
  std::vector<CUdeviceptr> allocations_;
  std::vector<std::pair<CUdeviceptr, size_t>> scratch_;
  std::map<std::string, CUfunction> functions_;
  std::map<std::tuple<long long, long long, long long, long long, bool, bool, long long, long long, long long, bool, int>, Plan> plans_;
};

// addmm: y = beta * bias + alpha * A @ B, the bias one value, a row of N, a column of M or [M, N]
// (per_row: it varies along the rows; per_col: along the columns; row_stride: its rows' stride).
// A row of N added as it is goes into cuBLASLt's epilogue.
struct Addmm {
  long long M, N, K;
  bool ta, tb;
  int per_row, per_col;
  long long row_stride;
  bool row_vector;
  float alpha, beta;
  const unsigned long long* algo = nullptr;  // max-autotune's cuBLASLt algorithm, where it chose one
  const char* what = "addmm";                 // the kernel, for messages
  void run(Gpu& g, CUdeviceptr y, CUdeviceptr bias, CUdeviceptr a, CUdeviceptr b) const {
    if (row_vector && beta == 1.f && g.gemm_bias(M, N, K, alpha, a, ta, b, tb, bias, y, algo, what)) return;
    long long MM = M, NN = N, rs = row_stride;
    int pr = per_row, pc = per_col;
    void* params[] = {&y, &bias, &MM, &NN, &pr, &pc, &rs};
    g.helper_launch("ls_broadcast_bias", (M * N + 255) / 256, 256, params);
    g.sgemm(1, M, N, K, alpha, a, ta, 0, b, tb, 0, beta, y, 0);
  }
};

// The library calls' host side, as Lowerscope's executor makes them (runtime_cuda.h); each takes
// the Gpu above.
using cuda::Attention;
using cuda::Conv;
using cuda::MaxPool;
using cuda::IndexPut;
using cuda::Cumsum;
using cuda::SortLines;
using cuda::Scatter;
using cuda::View;
using cuda::copy_rows;

// Median of CUDA-event times of `run`, after one warm-up.
template <class F>
double median_ms(int repeat, F&& run) {
  CUevent a = nullptr, b = nullptr;
  cu_check(cuEventCreate(&a, CU_EVENT_DEFAULT), "cuEventCreate");
  cu_check(cuEventCreate(&b, CU_EVENT_DEFAULT), "cuEventCreate");
  run();
  std::vector<double> times;
  for (int i = 0; i < repeat; ++i) {
    cu_check(cuEventRecord(a, nullptr), "cuEventRecord");
    run();
    cu_check(cuEventRecord(b, nullptr), "cuEventRecord");
    cu_check(cuEventSynchronize(b), "running the model");
    float ms = 0;
    cu_check(cuEventElapsedTime(&ms, a, b), "cuEventElapsedTime");
    times.push_back(ms);
  }
  cuEventDestroy(a);
  cuEventDestroy(b);
  std::sort(times.begin(), times.end());
  return times.empty() ? 0 : times[times.size() / 2];
}

}  // namespace lsrt
