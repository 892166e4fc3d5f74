// Lowerscope package runtime for CUDA packages: what an exported model needs besides its kernels
// and buffers.h — the GPU (the CUDA driver API: its primary context and default stream), device
// buffers, the compiled modules (the cubin where it was built for this GPU, else the PTX, which
// the driver compiles), and the library calls as Lowerscope makes them on the GPU: matrix
// multiplies through cuBLAS (a bias per column in cuBLASLt's epilogue), convolution as im2col +
// cuBLAS or a depthwise kernel, its backward through col2im, max pooling, concatenation, and
// attention through the attention module's fused or tiled kernels or batched cuBLAS products.
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
  // once on stderr). False where cuBLASLt has no algorithm for it.
  bool gemm_lt(long long batch, long long M, long long N, long long K, bool ta, bool tb, long long sa, long long sb, long long sc,
               float alpha, CUdeviceptr A, CUdeviceptr B, CUdeviceptr bias, CUdeviceptr C, const unsigned long long* algo = nullptr,
               const char* what = "a product") {
    Plan& pl = plans_[{batch, M, N, K, ta, tb, sa, sb, sc, bias != 0}];
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
              cublasLtMatrixLayoutCreate(&pl.a, CUDA_R_32F, tb ? K : N, tb ? N : K, tb ? K : N) == CUBLAS_STATUS_SUCCESS &&
              batched(pl.a, sb) &&
              cublasLtMatrixLayoutCreate(&pl.b, CUDA_R_32F, ta ? M : K, ta ? K : M, ta ? M : K) == CUBLAS_STATUS_SUCCESS &&
              batched(pl.b, sa) &&
              cublasLtMatrixLayoutCreate(&pl.c, CUDA_R_32F, N, M, N) == CUBLAS_STATUS_SUCCESS && batched(pl.c, sc) &&
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
  std::map<std::string, CUfunction> functions_;
  std::map<std::tuple<long long, long long, long long, long long, bool, bool, long long, long long, long long, bool>, Plan> plans_;
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

// 2-D convolution, NCHW, weight [O, C/G, KH, KW]: a depthwise kernel where every channel is its
// own group, else per group im2col of every image and one batched cuBLAS product; then the bias.
// backward(): depthwise, a kernel for each gradient; else grad_w per group as the sum over images
// of grad_y[n] @ cols[n]^T, grad_x through w^T @ grad_y and col2im; grad_b the per-channel sum
// of grad_y. Null pointers: not wanted.
struct Conv {
  int N, C, H, W, O, CG, KH, KW, OH, OW, G, sh, sw, ph, pw, dh, dw;
  bool depthwise;
  CUdeviceptr cols = 0;  // the im2col columns, N x (CG KH KW) x (OH OW), allocated on the first run

  void columns(Gpu& g) {
    if (!cols) cols = g.alloc(static_cast<size_t>(N) * CG * KH * KW * OH * OW * 4);
  }
  void im2col(Gpu& g, CUdeviceptr x, int group) {
    CUdeviceptr xg = x + static_cast<CUdeviceptr>(static_cast<long long>(group) * CG * H * W * 4), colp = cols;
    int n = N, cg = CG, h = H, w = W, kh = KH, kw = KW, oh = OH, ow = OW, a = sh, b = sw, c = ph, d = pw, e = dh, f = dw;
    long long x_image = static_cast<long long>(C) * H * W;
    void* params[] = {&xg, &colp, &n, &cg, &h, &w, &kh, &kw, &oh, &ow, &a, &b, &c, &d, &e, &f, &x_image};
    g.helper_launch("ls_im2col", g.grid_for(static_cast<long long>(N) * CG * KH * KW * OH * OW), 256, params);
  }

  // As the app's executor (cuda_executor.cpp, conv_form): one output pixel whose window covers the
  // whole unpadded input, in one group, is a linear layer; a 1x1 window with stride 1 and no
  // padding reads the input as its own columns.
  bool linear() const { return G == 1 && OH == 1 && OW == 1 && KH == H && KW == W && ph == 0 && pw == 0; }
  bool pointwise() const { return KH == 1 && KW == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0; }

  void run(Gpu& g, CUdeviceptr x, CUdeviceptr w, CUdeviceptr bias, CUdeviceptr y) {
    const long long P = static_cast<long long>(OH) * OW, R = static_cast<long long>(CG) * KH * KW, OG = O / G;
    if (!depthwise && linear()) {  // y [N, O] = x [N, R] @ w [O, R]^T (+ bias in cuBLASLt's epilogue)
      if (bias && g.gemm_bias(N, O, R, 1.f, x, false, w, true, bias, y)) return;
      g.sgemm(1, N, O, R, 1.f, x, false, 0, w, true, 0, 0.f, y, 0);
    } else if (!depthwise && pointwise()) {  // y[n, group] = W_group [OG, CG] @ x[n, group] [CG, P]
      for (int group = 0; group < G; ++group)
        g.sgemm(N, OG, P, CG, 1.f, w + static_cast<CUdeviceptr>(group * OG * CG * 4), false, 0,
                x + static_cast<CUdeviceptr>(group * CG * P * 4), false, static_cast<long long>(C) * P, 0.f,
                y + static_cast<CUdeviceptr>(group * OG * P * 4), static_cast<long long>(O) * P);
    } else if (depthwise) {
      int n = N, c = C, h = H, ww = W, kh = KH, kw = KW, oh = OH, ow = OW, a = sh, b = sw, pa = ph, pb = pw, da = dh, db = dw;
      void* params[] = {&x, &w, &y, &n, &c, &h, &ww, &kh, &kw, &oh, &ow, &a, &b, &pa, &pb, &da, &db};
      g.helper_launch("ls_depthwise_conv", g.grid_for(static_cast<long long>(N) * C * P), 256, params);
    } else {
      columns(g);
      for (int group = 0; group < G; ++group) {
        im2col(g, x, group);
        // y[n, group] = W_group [OG, R] @ cols[n] [R, P], for every image n
        g.sgemm(N, OG, P, R, 1.f, w + static_cast<CUdeviceptr>(group * OG * R * 4), false, 0, cols, false, R * P, 0.f,
                y + static_cast<CUdeviceptr>(group * OG * P * 4), static_cast<long long>(O) * P);
      }
    }
    if (bias) {
      long long OO = O, PP = P, total = static_cast<long long>(N) * O * P;
      void* params[] = {&y, &bias, &OO, &PP, &total};
      g.helper_launch("ls_add_channel_bias", (total + 255) / 256, 256, params);
    }
  }

  void backward(Gpu& g, CUdeviceptr gy, CUdeviceptr x, CUdeviceptr w, CUdeviceptr gx, CUdeviceptr gw, CUdeviceptr gb) {
    const long long P = static_cast<long long>(OH) * OW, R = static_cast<long long>(CG) * KH * KW, OG = O / G;
    if (depthwise) {  // a kernel for each gradient: gathers for grad_x, a block per (channel, tap) for grad_w
      int n = N, c = C, h = H, ww = W, kh = KH, kw = KW, oh = OH, ow = OW, a = sh, b = sw, pa = ph, pb = pw, da = dh, db = dw;
      CUdeviceptr src = w, dst = gx;
      void* params[] = {&gy, &src, &dst, &n, &c, &h, &ww, &kh, &kw, &oh, &ow, &a, &b, &pa, &pb, &da, &db};
      if (gx) g.helper_launch("ls_depthwise_conv_bwd_input", g.grid_for(static_cast<long long>(N) * C * H * W), 256, params);
      src = x;
      dst = gw;
      if (gw) g.helper_launch("ls_depthwise_conv_bwd_weight", static_cast<long long>(C) * KH * KW, 256, params);
    }
    if (!depthwise && linear()) {
      if (gx) g.sgemm(1, N, R, O, 1.f, gy, false, 0, w, false, 0, 0.f, gx, 0);  // grad_x [N, R] = grad_y @ w
      if (gw) g.sgemm(1, O, R, N, 1.f, gy, true, 0, x, false, 0, 0.f, gw, 0);   // grad_w [O, R] = grad_y^T @ x
    } else if (!depthwise && pointwise()) {
      const long long image = static_cast<long long>(C) * H * W;
      for (int group = 0; group < G; ++group) {
        const CUdeviceptr gyg = gy + static_cast<CUdeviceptr>(group * OG * P * 4);
        if (gw)  // grad_w[group] = sum over images of grad_y[n, group] @ x[n, group]^T
          for (int n = 0; n < N; ++n)
            g.sgemm(1, OG, CG, P, 1.f, gyg + static_cast<CUdeviceptr>(static_cast<long long>(n) * O * P * 4), false, 0,
                    x + static_cast<CUdeviceptr>((n * image + group * CG * P) * 4), true, 0, n ? 1.f : 0.f,
                    gw + static_cast<CUdeviceptr>(group * OG * CG * 4), 0);
        if (gx)  // grad_x[n, group] = w[group]^T @ grad_y[n, group], every image at once
          g.sgemm(N, CG, P, OG, 1.f, w + static_cast<CUdeviceptr>(group * OG * CG * 4), true, 0, gyg, false,
                  static_cast<long long>(O) * P, 0.f, gx + static_cast<CUdeviceptr>(group * CG * P * 4), image);
      }
    }
    const bool by_columns = !depthwise && !linear() && !pointwise();
    if (by_columns) columns(g);
    for (int group = 0; group < G && by_columns; ++group) {
      const CUdeviceptr gyg = gy + static_cast<CUdeviceptr>(group * OG * P * 4);
      if (gw) {
        im2col(g, x, group);
        const CUdeviceptr gwg = gw + static_cast<CUdeviceptr>(group * OG * R * 4);
        for (int n = 0; n < N; ++n)  // accumulated over images, one product each
          g.sgemm(1, OG, R, P, 1.f, gyg + static_cast<CUdeviceptr>(static_cast<long long>(n) * O * P * 4), false, 0,
                  cols + static_cast<CUdeviceptr>(static_cast<long long>(n) * R * P * 4), true, 0, n ? 1.f : 0.f, gwg, 0);
      }
      if (gx) {
        g.sgemm(N, R, P, OG, 1.f, w + static_cast<CUdeviceptr>(group * OG * R * 4), true, 0, gyg, false, static_cast<long long>(O) * P,
                0.f, cols, R * P);
        CUdeviceptr colp = cols, gxg = gx + static_cast<CUdeviceptr>(static_cast<long long>(group) * CG * H * W * 4);
        int n = N, cg = CG, h = H, ww = W, kh = KH, kw = KW, oh = OH, ow = OW, a = sh, b = sw, c = ph, d = pw, e = dh, f = dw;
        long long x_image = static_cast<long long>(C) * H * W;
        void* params[] = {&colp, &gxg, &n, &cg, &h, &ww, &kh, &kw, &oh, &ow, &a, &b, &c, &d, &e, &f, &x_image};
        g.helper_launch("ls_col2im", g.grid_for(static_cast<long long>(N) * CG * H * W), 256, params);
      }
    }
    if (gb) {
      int n = N;
      long long OO = O, PP = P;
      void* params[] = {&gy, &gb, &n, &OO, &PP};
      g.helper_launch("ls_channel_sum", O, 256, params);
    }
  }
};

// 2-D max pooling over `planes` planes of H x W; idx (int64) may be null.
struct MaxPool {
  long long planes;
  int H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw;
  CUdeviceptr spare = 0;  // somewhere to write indices nobody reads
  void run(Gpu& g, CUdeviceptr x, CUdeviceptr y, CUdeviceptr idx) {
    if (!idx) {
      if (!spare) spare = g.alloc(static_cast<size_t>(planes) * OH * OW * 8);
      idx = spare;
    }
    long long pl = planes;
    int h = H, w = W, oh = OH, ow = OW, kh = KH, kw = KW, a = sh, b = sw, c = ph, d = pw, e = dh, f = dw;
    void* params[] = {&x, &y, &idx, &pl, &h, &w, &oh, &ow, &kh, &kw, &a, &b, &c, &d, &e, &f};
    g.helper_launch("ls_max_pool2d", g.grid_for(planes * OH * OW), 256, params);
  }
};

// One input of a concatenation: `rows` rows of src_row 4-byte words into rows of dst_row, at `at`.
inline void copy_rows(Gpu& g, CUdeviceptr dst, CUdeviceptr src, long long rows, long long src_row, long long dst_row, long long at) {
  void* params[] = {&dst, &src, &rows, &src_row, &dst_row, &at};
  g.helper_launch("ls_copy_rows", g.grid_for(rows * src_row), 256, params);
}

// An attention operand in its buffer: element offset and strides (batch, head, row, element).
struct View {
  long long offset, sb, sh, sl, se;
};
struct KernelView {  // as the attention kernels take it (LsAttnView)
  long long sb, sh, sl, se;
};
inline KernelView strides(const View& v) { return {v.sb, v.sh, v.sl, v.se}; }
inline CUdeviceptr at(CUdeviceptr base, const View& v) { return base + static_cast<CUdeviceptr>(v.offset * 4); }

// Scaled dot-product attention, forward (out, lse) and backward (dq, dk, dv), by one of three
// paths: the attention module's fused kernels (short sequences), its tiled FlashAttention-2
// kernels (long ones), or the scores in memory with batched cuBLAS products around softmax kernels.
struct Attention {
  enum Path { fused, tiled, cublas };
  long long B, H, L, S, E, Ev;
  bool causal;
  float scale;
  Path path;
  std::vector<CUdeviceptr> ws;  // scratch: packed operands, scores; the backward's row dots

  CUdeviceptr scratch(Gpu& g, size_t i, long long floats) {
    if (ws.size() <= i) ws.resize(i + 1, 0);
    if (!ws[i]) ws[i] = g.alloc(static_cast<size_t>(floats) * 4);
    return ws[i];
  }
  View packed(long long rows, long long cols) const { return {0, H * rows * cols, rows * cols, cols, 1}; }
  void copy4(Gpu& g, CUdeviceptr dst, CUdeviceptr src, const View& s, const View& d, long long rows, long long cols) {
    long long n0 = B, n1 = H, n2 = rows, n3 = cols, s0 = s.sb, s1 = s.sh, s2 = s.sl, s3 = s.se, d0 = d.sb, d1 = d.sh, d2 = d.sl,
              d3 = d.se;
    void* params[] = {&dst, &src, &n0, &n1, &n2, &n3, &s0, &s1, &s2, &s3, &d0, &d1, &d2, &d3};
    g.helper_launch("ls_strided_copy4", g.grid_for(B * H * rows * cols), 256, params);
  }
  CUdeviceptr pack(Gpu& g, CUdeviceptr base, const View& v, size_t slot, long long rows, long long cols) {
    const CUdeviceptr dst = scratch(g, slot, B * H * rows * cols);
    copy4(g, dst, at(base, v), v, packed(rows, cols), rows, cols);
    return dst;
  }

  void forward(Gpu& g, CUdeviceptr q, View qv, CUdeviceptr k, View kv, CUdeviceptr v, View vv, CUdeviceptr out, View ov, CUdeviceptr lse) {
    const long long bh = B * H;
    if (path == cublas) {
      const CUdeviceptr qp = pack(g, q, qv, 0, L, E), kp = pack(g, k, kv, 1, S, E), vp = pack(g, v, vv, 2, S, Ev);
      const CUdeviceptr sc = scratch(g, 3, bh * L * S), op = scratch(g, 4, bh * L * Ev);
      g.sgemm(bh, L, S, E, scale, qp, false, L * E, kp, true, S * E, 0.f, sc, L * S);
      CUdeviceptr scp = sc;
      long long rows = bh * L, LL = L, SS = S;
      int c = causal;
      void* sp[] = {&scp, &lse, &rows, &LL, &SS, &c};
      g.helper_launch("ls_attn_softmax", (rows + 7) / 8, 256, sp);
      g.sgemm(bh, L, Ev, S, 1.f, sc, false, L * S, vp, false, S * Ev, 0.f, op, L * Ev);
      copy4(g, out, op, packed(L, Ev), ov, L, Ev);
      return;
    }
    CUdeviceptr qa = at(q, qv), ka = at(k, kv), va = at(v, vv);
    KernelView qs = strides(qv), ks = strides(kv), vs = strides(vv), os = strides(ov);
    long long HH = H, LL = L, SS = S;
    float sc = scale;
    int c = causal;
    void* params[] = {&qa, &ka, &va, &out, &lse, &qs, &ks, &vs, &os, &HH, &LL, &SS, &sc, &c};
    const std::string d = std::to_string(E);
    if (path == tiled) return g.helper_launch("ls_flash_attention_fwd_" + d, bh * ((L + 63) / 64), 256, params);
    g.helper_launch("ls_attention_fwd_" + d, bh * ((L + 63) / 64), 64, params);
  }

  void backward(Gpu& g, CUdeviceptr go, View gv, CUdeviceptr q, View qv, CUdeviceptr k, View kv, CUdeviceptr v, View vv,
                CUdeviceptr o, View ov, CUdeviceptr lse, CUdeviceptr dq, CUdeviceptr dk, CUdeviceptr dv) {
    const long long bh = B * H;
    if (path == cublas) {
      const CUdeviceptr gop = pack(g, go, gv, 0, L, Ev), qp = pack(g, q, qv, 1, L, E), kp = pack(g, k, kv, 2, S, E),
                        vp = pack(g, v, vv, 3, S, Ev), op = pack(g, o, ov, 4, L, Ev);
      CUdeviceptr p = scratch(g, 5, bh * L * S), dp = scratch(g, 6, bh * L * S), drow = scratch(g, 7, bh * L);
      g.sgemm(bh, L, S, E, scale, qp, false, L * E, kp, true, S * E, 0.f, p, L * S);
      long long total = bh * L * S, rows = bh * L, n = Ev, LL = L, SS = S;
      int c = causal;
      CUdeviceptr gop2 = gop, op2 = op;
      void* pr[] = {&p, &lse, &LL, &SS, &total, &c};
      g.helper_launch("ls_attn_probs", g.grid_for(total), 256, pr);
      void* rd[] = {&drow, &gop2, &op2, &rows, &n};
      g.helper_launch("ls_attn_rowdot", g.grid_for(rows), 256, rd);
      g.sgemm(bh, S, Ev, L, 1.f, p, true, L * S, gop, false, L * Ev, 0.f, dv, S * Ev);  // dV = P^T dO
      g.sgemm(bh, L, S, Ev, 1.f, gop, false, L * Ev, vp, true, S * Ev, 0.f, dp, L * S);  // dP = dO V^T
      float sc = scale;
      void* ds[] = {&dp, &p, &drow, &SS, &total, &sc};
      g.helper_launch("ls_attn_dscores", g.grid_for(total), 256, ds);                     // dS
      g.sgemm(bh, L, E, S, 1.f, dp, false, L * S, kp, false, S * E, 0.f, dq, L * E);     // dQ = dS K
      g.sgemm(bh, S, E, L, 1.f, dp, true, L * S, qp, false, L * E, 0.f, dk, S * E);      // dK = dS^T Q
      return;
    }
    CUdeviceptr goa = at(go, gv), qa = at(q, qv), ka = at(k, kv), va = at(v, vv), oa = at(o, ov), drow = scratch(g, 0, bh * L);
    KernelView gs = strides(gv), qs = strides(qv), ks = strides(kv), vs = strides(vv), os = strides(ov);
    long long HH = H, LL = L, SS = S;
    float sc = scale;
    int c = causal;
    void* p1[] = {&goa, &qa, &ka, &va, &oa, &lse, &dq, &drow, &gs, &qs, &ks, &vs, &os, &HH, &LL, &SS, &sc, &c};
    void* p2[] = {&goa, &qa, &ka, &va, &lse, &drow, &dk, &dv, &gs, &qs, &ks, &vs, &HH, &LL, &SS, &sc, &c};
    const std::string d = std::to_string(E);
    const long long q_tiles = (L + 63) / 64, k_tiles = (S + 63) / 64;
    if (path == tiled) {  // dynamic shared memory: the tiles
      const unsigned tile = static_cast<unsigned>(E) * 64 * 4, wide = static_cast<unsigned>(std::max<long long>(E, 64)) * 64 * 4;
      g.helper_launch("ls_flash_attention_bwd_dq_" + d, bh * q_tiles, 256, p1, 4 * tile + wide + 512);
      g.helper_launch("ls_flash_attention_bwd_dkv_" + d, bh * k_tiles, 256, p2, 4 * tile + 2 * wide + 512);
      return;
    }
    g.helper_launch("ls_attention_bwd_dq_" + d, bh * q_tiles, 64, p1);
    g.helper_launch("ls_attention_bwd_dkv_" + d, bh * k_tiles, 64, p2);
  }
};

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
