#include "cuda/cublas.h"

#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iterator>
#include <map>
#include <sstream>
#include <memory>
#include <mutex>
#include <tuple>
#include <stdexcept>
#include <vector>

#include "cuda/dl_library.h"

namespace ls {
namespace {

// The toolkit's library `base` (libcublas, libcublasLt): the CMake-found toolkit's, then CUDA 13's,
// 12's, any, /usr/local/cuda's.
std::vector<DlCandidate> cublas_candidates(const std::string& base) { return cuda_library_candidates(base, {"13", "12"}); }

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
      b->lib_ = open_first_library(cublas_candidates("libcublas"), &b->library);
      if (!b->lib_) {
        error = "cuBLAS (libcublas.so) was not found";
      } else {
        DlSymbols s(b->lib_, "cuBLAS (" + b->library + ")");
        s.need(b->create_, "cublasCreate_v2");
        s.need(b->gemm_, "cublasSgemmStridedBatched");
        s.optional(b->set_stream_, "cublasSetStream_v2");  // without it, the default stream
        s.optional(b->set_math_mode_, "cublasSetMathMode");
        const char* tf32 = std::getenv("LS_ALLOW_TF32");
        b->allow_tf32 = tf32 && *tf32 && std::string(tf32) != "0";
        if (!s.ok()) error = s.error();
        else if (int r = b->create_(&b->handle_); r != 0) error = "cublasCreate failed (status " + std::to_string(r) + ")";
        else {
          b->generation_ = CudaDriver::get()->generation();
          b->use_math_mode();
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
      c->use_math_mode();
      c->stream_ = nullptr;
      c->lt_.reset();  // its handle, plans and workspace died with the context too
      c->lt_tried_ = false;
    }
  }
  return c.get();
}

// CUBLAS_TF32_TENSOR_OP_MATH where TF32 is allowed (cublasSgemm* then rounds its inputs to TF32),
// else CUBLAS_DEFAULT_MATH.
void Cublas::use_math_mode() {
  if (set_math_mode_ && handle_) set_math_mode_(handle_, allow_tf32 ? 3 : 0);
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

struct Cublas::LtPlan {
  void *desc = nullptr, *a = nullptr, *b = nullptr, *c = nullptr;
  uint64_t algo[8] = {};
  bool ok = false;
};

// The few cuBLASLt entry points and constants used (cublasLt.h, CUDA 12 and 13): opaque handles
// are pointers, the constants are the header's values.
struct Cublas::Lt {
  static constexpr int kCompute32F = 68, kR32F = 0;                              // CUBLAS_COMPUTE_32F, CUDA_R_32F
  static constexpr int kCompute32FFastTF32 = 77;                                 // CUBLAS_COMPUTE_32F_FAST_TF32
  static constexpr int kR16F = 2, kR16BF = 14;                                    // CUDA_R_16F, CUDA_R_16BF
  static constexpr int kTransA = 3, kTransB = 4, kEpilogue = 7, kBiasPointer = 8;  // CUBLASLT_MATMUL_DESC_*
  static constexpr uint32_t kEpilogueDefault = 1, kEpilogueBias = 4;            // CUBLASLT_EPILOGUE_*
  static constexpr int kBatchCount = 5, kBatchStride = 6;                        // CUBLASLT_MATRIX_LAYOUT_*
  static constexpr int kPrefMaxWorkspace = 1;                                   // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
  // CUBLASLT_ALGO_CONFIG_*: ID, TILE_ID, SPLITK_NUM, REDUCTION_SCHEME, CTA_SWIZZLING, STAGES_ID
  static constexpr int kConfigId = 0, kConfigTile = 1, kConfigSplitK = 2, kConfigReduction = 3, kConfigSwizzle = 4, kConfigStages = 6;
  static constexpr size_t kWorkspace = size_t(4) << 20;
  struct Heuristic {  // cublasLtMatmulHeuristicResult_t
    uint64_t algo[8];
    size_t workspace;
    int state;
    float waves;
    int reserved[4];
  };
  int (*create)(void**) = nullptr;
  int (*desc_create)(void**, int, int) = nullptr;
  int (*desc_set)(void*, int, const void*, size_t) = nullptr;
  int (*layout_create)(void**, int, uint64_t, uint64_t, int64_t) = nullptr;
  int (*layout_set)(void*, int, const void*, size_t) = nullptr;
  int (*pref_create)(void**) = nullptr;
  int (*pref_set)(void*, int, const void*, size_t) = nullptr;
  int (*heuristic)(void*, void*, void*, void*, void*, void*, void*, int, Heuristic*, int*) = nullptr;
  int (*config_get)(const void*, int, void*, size_t, size_t*) = nullptr;
  int (*matmul)(void*, void*, const void*, const void*, void*, const void*, void*, const void*, const void*, void*, void*, void*,
                const void*, void*, size_t, void*) = nullptr;
  void* lib = nullptr;
  void* handle = nullptr;
  void* pref = nullptr;
  DeviceBuffer workspace;
  // One plan per problem (descriptors and the heuristic's first algorithm), found once: the
  // heuristic costs tens of microseconds, more than a small product.
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, bool, bool, bool, int64_t, int64_t, int64_t, DType>, LtPlan> plans;

  // "tile 128x64, stages 32x4, split-K 2": the algorithm's configuration, as cuBLASLt reports it.
  std::string describe(const uint64_t* algo) const {
    auto get = [&](int attr) {
      uint32_t v = 0;
      size_t written = 0;
      return config_get && config_get(algo, attr, &v, sizeof v, &written) == 0 ? v : 0u;
    };
    static const char* const tiles[] = {"?", "8x8", "8x16", "16x8", "8x32", "16x16", "32x8", "8x64", "16x32", "32x16", "64x8", "32x32",
                                        "32x64", "64x32", "32x128", "64x64", "128x32", "64x128", "128x64", "64x256", "128x128",
                                        "256x64", "64x512", "128x256", "256x128", "512x64", "64x96", "96x64", "96x128", "128x160",
                                        "160x128", "192x128", "128x192", "128x96", "32x256", "256x32"};
    std::string t = "algorithm " + std::to_string(get(kConfigId));
    const uint32_t tile = get(kConfigTile), stages = get(kConfigStages), split = get(kConfigSplitK);
    if (tile) t += ", tile " + (tile < std::size(tiles) ? std::string(tiles[tile]) : "#" + std::to_string(tile));
    if (stages >= 1 && stages <= 24) t += ", stages " + std::to_string(16 << ((stages - 1) / 6)) + "x" + std::to_string((stages - 1) % 6 + 1);
    else if (stages) t += ", stages #" + std::to_string(stages);
    if (split > 1) t += ", split-K " + std::to_string(split);
    if (const uint32_t swizzle = get(kConfigSwizzle)) t += ", swizzle " + std::to_string(swizzle);
    return t;
  }
};

std::string MatmulProblem::text() const {
  std::string t = batch > 1 ? std::to_string(batch) + " x " : "";
  t += std::to_string(M) + "x" + std::to_string(K) + (ta ? " (stored transposed)" : "") + " @ " + std::to_string(K) + "x" +
       std::to_string(N) + (tb ? " (stored transposed)" : "");
  if (bias) t += " + bias";
  return dtype == DType::f32 ? t : t + " in " + std::string(dtype_torch(dtype).substr(6));
}

std::string MatmulAlgorithm::serialize() const {
  std::ostringstream os;
  os << std::hex;
  for (uint64_t w : data) os << w << ' ';
  os << std::dec << workspace << ' ' << text;
  return os.str();
}

bool MatmulAlgorithm::parse(const std::string& line, MatmulAlgorithm& out) {
  std::istringstream is(line);
  MatmulAlgorithm a;
  is >> std::hex;
  for (uint64_t& w : a.data) is >> w;
  is >> std::dec >> a.workspace;
  if (!is) return false;
  std::getline(is >> std::ws, a.text);
  out = a;
  return true;
}

Cublas::Lt* Cublas::lt() {
  if (lt_tried_) return lt_.get();
  lt_tried_ = true;
  auto lt = std::make_shared<Lt>();
  if (!(lt->lib = open_first_library(cublas_candidates("libcublasLt")))) return nullptr;
  DlSymbols s(lt->lib, "cuBLASLt");  // without it (or any entry point), products go through cublasSgemm*
  s.need(lt->create, "cublasLtCreate");
  s.need(lt->desc_create, "cublasLtMatmulDescCreate");
  s.need(lt->desc_set, "cublasLtMatmulDescSetAttribute");
  s.need(lt->layout_create, "cublasLtMatrixLayoutCreate");
  s.need(lt->layout_set, "cublasLtMatrixLayoutSetAttribute");
  s.need(lt->pref_create, "cublasLtMatmulPreferenceCreate");
  s.need(lt->pref_set, "cublasLtMatmulPreferenceSetAttribute");
  s.need(lt->heuristic, "cublasLtMatmulAlgoGetHeuristic");
  s.need(lt->matmul, "cublasLtMatmul");
  if (!s.ok()) return nullptr;
  s.optional(lt->config_get, "cublasLtMatmulAlgoConfigGetAttribute");  // only for the algorithms' descriptions
  const uint64_t ws = Lt::kWorkspace;
  if (lt->create(&lt->handle) != 0 || lt->pref_create(&lt->pref) != 0 ||
      lt->pref_set(lt->pref, Lt::kPrefMaxWorkspace, &ws, sizeof ws) != 0)
    return nullptr;
  lt->workspace = DeviceBuffer(*CudaDriver::get(), Lt::kWorkspace);
  lt_ = std::move(lt);
  return lt_.get();
}

Cublas::LtPlan* Cublas::plan(const MatmulProblem& p) {
  Lt* lt = this->lt();
  if (!lt) return nullptr;
  LtPlan& pl = lt->plans[{p.batch, p.M, p.N, p.K, p.ta, p.tb, p.bias, p.stride_a, p.stride_b, p.stride_c, p.dtype}];
  if (pl.desc) return pl.ok ? &pl : nullptr;
  // Column-major, as sgemm: C^T (N x M) = op(B buffer) (N x K) @ op(A buffer) (K x M); the bias
  // runs along C^T's rows, one value per column of our row-major C.
  const int opb = p.tb ? 1 : 0, opa = p.ta ? 1 : 0;
  const uint32_t epilogue = p.bias ? Lt::kEpilogueBias : Lt::kEpilogueDefault;
  const int32_t batch = static_cast<int32_t>(p.batch);
  auto batched = [&](void* layout, int64_t stride) {
    return p.batch == 1 || (lt->layout_set(layout, Lt::kBatchCount, &batch, sizeof batch) == 0 &&
                            lt->layout_set(layout, Lt::kBatchStride, &stride, sizeof stride) == 0);
  };
  Lt::Heuristic h{};
  int found = 0;
  // CUDA_R_32F, CUDA_R_16BF, CUDA_R_16F; the scale type stays float32
  const int t = p.dtype == DType::bf16 ? Lt::kR16BF : p.dtype == DType::f16 ? Lt::kR16F : Lt::kR32F;
  const int compute = p.dtype == DType::f32 && allow_tf32 ? Lt::kCompute32FFastTF32 : Lt::kCompute32F;  // float32 in TF32 where allowed
  pl.ok = lt->desc_create(&pl.desc, compute, Lt::kR32F) == 0 && lt->desc_set(pl.desc, Lt::kTransA, &opb, sizeof opb) == 0 &&
          lt->desc_set(pl.desc, Lt::kTransB, &opa, sizeof opa) == 0 &&
          lt->desc_set(pl.desc, Lt::kEpilogue, &epilogue, sizeof epilogue) == 0 &&
          lt->layout_create(&pl.a, t, p.tb ? p.K : p.N, p.tb ? p.N : p.K, p.tb ? p.K : p.N) == 0 && batched(pl.a, p.stride_b) &&
          lt->layout_create(&pl.b, t, p.ta ? p.M : p.K, p.ta ? p.K : p.M, p.ta ? p.M : p.K) == 0 && batched(pl.b, p.stride_a) &&
          lt->layout_create(&pl.c, t, p.N, p.M, p.N) == 0 && batched(pl.c, p.stride_c) &&
          lt->heuristic(lt->handle, pl.desc, pl.a, pl.b, pl.c, pl.c, lt->pref, 1, &h, &found) == 0 && found > 0 && h.state == 0;
  if (pl.ok) std::memcpy(pl.algo, h.algo, sizeof pl.algo);
  return pl.ok ? &pl : nullptr;
}

std::vector<MatmulAlgorithm> Cublas::algorithms(const MatmulProblem& p, int count) {
  std::vector<MatmulAlgorithm> out;
  LtPlan* pl = plan(p);
  if (!pl || count < 1) return out;
  Lt* lt = lt_.get();
  std::vector<Lt::Heuristic> hs(static_cast<size_t>(count));
  int found = 0;
  if (lt->heuristic(lt->handle, pl->desc, pl->a, pl->b, pl->c, pl->c, lt->pref, count, hs.data(), &found) != 0) return out;
  for (int i = 0; i < found; ++i) {
    if (hs[i].state != 0) continue;
    MatmulAlgorithm a;
    std::memcpy(a.data, hs[i].algo, sizeof a.data);
    a.workspace = hs[i].workspace;
    std::ostringstream waves;
    waves << std::fixed << std::setprecision(2) << hs[i].waves;
    a.text = lt->describe(a.data) + ", " + waves.str() + " waves";
    out.push_back(std::move(a));
  }
  return out;
}

bool Cublas::gemm_lt(const MatmulProblem& p, const MatmulAlgorithm* algo, float alpha, DevicePtr A, DevicePtr B, DevicePtr bias,
                     DevicePtr C) {
  LtPlan* pl = plan(p);
  if (!pl) return false;
  Lt* lt = lt_.get();
  if (p.bias) {
    void* bp = reinterpret_cast<void*>(bias);
    if (lt->desc_set(pl->desc, Lt::kBiasPointer, &bp, sizeof bp) != 0) return false;
  }
  const float beta = 0.f;
  const int r = lt->matmul(lt->handle, pl->desc, &alpha, reinterpret_cast<const void*>(B), pl->a, reinterpret_cast<const void*>(A), pl->b,
                           &beta, reinterpret_cast<const void*>(C), pl->c, reinterpret_cast<void*>(C), pl->c, algo ? algo->data : pl->algo,
                           reinterpret_cast<void*>(lt->workspace.ptr()), Lt::kWorkspace, CudaDriver::get()->stream());
  if (r != 0) throw std::runtime_error("cublasLtMatmul failed (status " + std::to_string(r) + ")");
  return true;
}

bool Cublas::gemm_bias(int64_t M, int64_t N, int64_t K, float alpha, DevicePtr A, bool ta, DevicePtr B, bool tb, DevicePtr bias,
                       DevicePtr C) {
  MatmulProblem p;
  p.M = M, p.N = N, p.K = K, p.ta = ta, p.tb = tb, p.bias = true;
  return gemm_lt(p, nullptr, alpha, A, B, bias, C);
}

}  // namespace ls
