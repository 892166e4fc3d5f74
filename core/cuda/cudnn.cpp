#include "cuda/cudnn.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "cuda/cudnn_api.h"
#include "cuda/dl_library.h"

namespace ls {
namespace {

// The folders a Python environment keeps PyTorch's cuDNN in (the nvidia-cudnn wheel's
// site-packages/nvidia/cudnn/lib): the active virtual environment's or conda environment's, and the
// user's own site-packages.
std::vector<std::string> python_cudnn_dirs() {
  namespace fs = std::filesystem;
  std::vector<std::string> dirs;
  std::vector<fs::path> prefixes;
  for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (const char* p = std::getenv(var); p && *p) prefixes.emplace_back(fs::path(p) / "lib");
  if (const char* home = std::getenv("HOME"); home && *home) prefixes.emplace_back(fs::path(home) / ".local" / "lib");
  std::error_code ec;
  for (const fs::path& lib : prefixes) {
    if (fs::exists(lib / "libcudnn.so.9", ec)) dirs.push_back(lib.string());  // conda's own package
    for (fs::directory_iterator it(lib, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().filename().string().rfind("python3", 0) == 0) {
        const fs::path d = it->path() / "site-packages" / "nvidia" / "cudnn" / "lib";
        if (fs::exists(d / "libcudnn.so.9", ec)) dirs.push_back(d.string());
      }
  }
  return dirs;
}

// libcudnn.so.9 (cuDNN 9's shim, which loads its sub-libraries by name when first needed): from
// LS_CUDNN_LIBRARY, the toolkit CMake found, the loader's path, /usr/local/cuda, Debian's folder,
// or a Python environment's PyTorch. From a folder off the loader's path, its sub-libraries are
// loaded first (globally, as PyTorch preloads them), so that the shim finds them by name.
std::vector<DlCandidate> cudnn_candidates() {
  std::vector<DlCandidate> names;
  auto with_subs = [](const std::string& file, const std::string& folder) {
    DlCandidate c{file};
    if (!folder.empty())
      for (const char* sub : {"libcudnn_graph.so.9", "libcudnn_engines_precompiled.so.9", "libcudnn_engines_runtime_compiled.so.9",
                              "libcudnn_heuristic.so.9", "libcudnn_ops.so.9", "libcudnn_cnn.so.9", "libcudnn_adv.so.9"})
        c.preload.push_back(folder + "/" + sub);
    return c;
  };
  if (const char* p = std::getenv("LS_CUDNN_LIBRARY"); p && *p) names.push_back(with_subs(p, std::filesystem::path(p).parent_path().string()));
#ifdef LOWERSCOPE_CUDA_LIB
  names.push_back({std::string(LOWERSCOPE_CUDA_LIB) + "/libcudnn.so.9"});
#endif
  for (const char* n : {"libcudnn.so.9", "libcudnn.so", "/usr/local/cuda/lib64/libcudnn.so.9", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9"})
    names.push_back({n});
  for (const std::string& d : python_cudnn_dirs()) names.push_back(with_subs(d + "/libcudnn.so.9", d));
  return names;
}

int data_type(DType t) {
  switch (t) {
    case DType::f32: return Cudnn::Api::kFloat;
    case DType::bf16: return Cudnn::Api::kBfloat16;
    case DType::f16: return Cudnn::Api::kHalf;
    default: return -1;
  }
}

// cudnnConvolution*Algo_t's names, by pass.
std::string algo_name(ConvPass pass, int a) {
  static const char* fwd[] = {"implicit GEMM", "implicit precomputed GEMM", "GEMM", "direct", "FFT", "FFT tiling", "Winograd",
                              "Winograd nonfused"};
  static const char* data[] = {"algo 0", "algo 1", "FFT", "FFT tiling", "Winograd", "Winograd nonfused"};
  static const char* filter[] = {"algo 0", "algo 1", "FFT", "algo 3", "Winograd", "Winograd nonfused", "FFT tiling"};
  const char** names = pass == ConvPass::forward ? fwd : pass == ConvPass::grad_input ? data : filter;
  const int count = pass == ConvPass::forward ? 8 : pass == ConvPass::grad_input ? 6 : 7;
  return a >= 0 && a < count ? names[a] : "algo " + std::to_string(a);
}

std::string bytes_text(size_t b) {
  std::ostringstream s;
  if (b == 0) return "no workspace";
  s.precision(3);
  if (b >= (size_t(1) << 20)) s << static_cast<double>(b) / (1 << 20) << " MB workspace";
  else s << static_cast<double>(b) / 1024 << " KB workspace";
  return s.str();
}

constexpr size_t kMaxWorkspace = size_t(512) << 20;

}  // namespace

Cudnn::~Cudnn() = default;

Cudnn* Cudnn::get(std::string* why) {
  static std::mutex m;
  static std::unique_ptr<Cudnn> c;
  static std::string error;
  static bool tried = false;
  std::lock_guard<std::mutex> lock(m);
  if (!tried) {
    tried = true;
    std::string reason;
    if (!CudaDriver::get(&reason)) {
      error = reason;
    } else {
      auto d = std::make_unique<Cudnn>();
      d->api_ = std::make_unique<Api>();
      Api& a = *d->api_;
      a.lib = open_first_library(cudnn_candidates(), &d->library);
      if (!a.lib) {
        error = "cuDNN (libcudnn.so.9) was found neither on the loader's path, nor in /usr/local/cuda, nor in a Python environment's PyTorch (LS_CUDNN_LIBRARY names the file)";
      } else {
        DlSymbols s(a.lib, "cuDNN (" + d->library + ")");
        auto sym = [&](auto& f, const char* name) { s.need(f, name); };
        sym(a.create, "cudnnCreate");
        sym(a.set_stream, "cudnnSetStream");
        sym(a.get_version, "cudnnGetVersion");
        sym(a.error_string, "cudnnGetErrorString");
        sym(a.create_tensor, "cudnnCreateTensorDescriptor");
        sym(a.set_tensor4d, "cudnnSetTensor4dDescriptor");
        sym(a.destroy_tensor, "cudnnDestroyTensorDescriptor");
        sym(a.create_filter, "cudnnCreateFilterDescriptor");
        sym(a.set_filter4d, "cudnnSetFilter4dDescriptor");
        sym(a.destroy_filter, "cudnnDestroyFilterDescriptor");
        sym(a.create_conv, "cudnnCreateConvolutionDescriptor");
        sym(a.set_conv2d, "cudnnSetConvolution2dDescriptor");
        sym(a.set_group_count, "cudnnSetConvolutionGroupCount");
        sym(a.set_math_type, "cudnnSetConvolutionMathType");
        sym(a.destroy_conv, "cudnnDestroyConvolutionDescriptor");
        sym(a.output_dim, "cudnnGetConvolution2dForwardOutputDim");
        sym(a.fwd_algos, "cudnnGetConvolutionForwardAlgorithm_v7");
        sym(a.bwd_data_algos, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
        sym(a.bwd_filter_algos, "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
        sym(a.fwd, "cudnnConvolutionForward");
        sym(a.bwd_data, "cudnnConvolutionBackwardData");
        sym(a.bwd_filter, "cudnnConvolutionBackwardFilter");
        auto optional = [&](auto& f, const char* name) { s.optional(f, name); };
        optional(a.b_create, "cudnnBackendCreateDescriptor");
        optional(a.b_destroy, "cudnnBackendDestroyDescriptor");
        optional(a.b_finalize, "cudnnBackendFinalize");
        optional(a.b_set, "cudnnBackendSetAttribute");
        optional(a.b_get, "cudnnBackendGetAttribute");
        optional(a.b_execute, "cudnnBackendExecute");
        if (const char* e = std::getenv("LS_CUDNN_LEGACY"); e && std::string(e) == "1") a.b_create = nullptr;
        const char* tf32 = std::getenv("LS_ALLOW_TF32");
        d->allow_tf32 = tf32 && *tf32 && std::string(tf32) != "0";
        if (!s.ok()) error = s.error();
        else {
          d->version = static_cast<int>(a.get_version());
          if (d->version < 8000) error = "cuDNN " + std::to_string(d->version) + " is older than 8";
          else if (const int r = a.create(&d->handle_); r != 0) error = "cudnnCreate failed: " + a.error(r);
          else {
            d->generation_ = CudaDriver::get()->generation();
            c = std::move(d);
          }
        }
      }
    }
  }
  if (!c && why) *why = error;
  if (c) {
    CudaDriver* d = CudaDriver::get();
    if (d && d->generation() != c->generation_) {  // the device was reset: the old handle died with it,
      // and so did every execution plan (finalized with that handle, its engine's kernels loaded in
      // that context) and variant pack: made again, with the new handle, when next asked for.
      std::lock_guard<std::mutex> plans(c->mutex_);
      c->plans_.clear();
      c->sdpa_plans_.clear();
      c->sdpa_refused_.clear();
      c->stream_ = nullptr;
      void* handle = nullptr;
      if (const int r = c->api_->create(&handle); r != 0) {  // tried again at the next call
        if (why) *why = "cudnnCreate after the device reset failed: " + c->api_->error(r);
        return nullptr;
      }
      c->handle_ = handle;
      c->generation_ = d->generation();
    }
  }
  return c.get();
}

void Cudnn::use_stream() {
  if (void* s = CudaDriver::get()->stream(); s != stream_) {
    api_->check(api_->set_stream(handle_, s), "cudnnSetStream");
    stream_ = s;
  }
}

Cudnn::Plan* Cudnn::find(const ConvShape& s, DType t, ConvPass pass, std::string* why) {
  const auto key = std::make_tuple(s, static_cast<int>(t), static_cast<int>(pass));
  if (auto it = plans_.find(key); it != plans_.end()) return it->second.get();
  std::string graph_api;  // why the graph API built no plan, told where the legacy calls fail too
  auto fail = [&](const std::string& reason) -> Plan* {
    if (why) *why = reason + graph_api;
    return nullptr;
  };
  const int dt = data_type(t);
  if (dt < 0) return fail("cuDNN convolutions here take float32, bfloat16 or float16, not " + std::string(dtype_short(t)));
  if (s.G < 1 || s.C % s.G != 0 || s.O % s.G != 0) return fail("the channels do not split into the groups");
  Api& a = *api_;
  auto p = std::make_unique<Plan>();
  p->api = &a;
  auto ok = [&](int status, const char* what) {
    if (status != 0 && why) *why = std::string(what) + " failed: " + a.error(status) + graph_api;
    return status == 0;
  };
  p->math = t == DType::f32 ? (allow_tf32 ? Api::kDefaultMath : Api::kFmaMath) : Api::kTensorOpMath;
  if (!ok(a.create_tensor(&p->x), "cudnnCreateTensorDescriptor") || !ok(a.create_tensor(&p->y), "cudnnCreateTensorDescriptor") ||
      !ok(a.create_filter(&p->w), "cudnnCreateFilterDescriptor") || !ok(a.create_conv(&p->conv), "cudnnCreateConvolutionDescriptor"))
    return nullptr;
  if (!ok(a.set_tensor4d(p->x, Api::kNchw, dt, s.N, s.C, s.H, s.W), "cudnnSetTensor4dDescriptor (input)") ||
      !ok(a.set_tensor4d(p->y, Api::kNchw, dt, s.N, s.O, s.OH, s.OW), "cudnnSetTensor4dDescriptor (output)") ||
      !ok(a.set_filter4d(p->w, dt, Api::kNchw, s.O, s.C / s.G, s.KH, s.KW), "cudnnSetFilter4dDescriptor") ||
      !ok(a.set_conv2d(p->conv, s.ph, s.pw, s.sh, s.sw, s.dh, s.dw, Api::kCrossCorrelation, Api::kFloat), "cudnnSetConvolution2dDescriptor") ||
      !ok(a.set_group_count(p->conv, s.G), "cudnnSetConvolutionGroupCount") || !ok(a.set_math_type(p->conv, p->math), "cudnnSetConvolutionMathType"))
    return nullptr;
  int n = 0, c = 0, h = 0, w = 0;
  if (!ok(a.output_dim(p->conv, p->x, p->w, &n, &c, &h, &w), "cudnnGetConvolution2dForwardOutputDim")) return nullptr;
  if (n != s.N || c != s.O || h != s.OH || w != s.OW)
    return fail("cuDNN computes an output of " + std::to_string(h) + "x" + std::to_string(w) + ", the graph " + std::to_string(s.OH) + "x" +
                std::to_string(s.OW));
  if (a.backend()) {
    std::string backend_why;
    if (backend_plan(*p, s, t, pass, &backend_why)) return plans_.emplace(key, std::move(p)).first->second.get();
    graph_api = " (the graph API: " + backend_why + ")";
  }
  Api::Perf perf[16] = {};
  int count = 0;
  const int r = pass == ConvPass::forward      ? a.fwd_algos(handle_, p->x, p->w, p->conv, p->y, 16, &count, perf)
                : pass == ConvPass::grad_input ? a.bwd_data_algos(handle_, p->w, p->y, p->conv, p->x, 16, &count, perf)
                                               : a.bwd_filter_algos(handle_, p->x, p->y, p->conv, p->w, 16, &count, perf);
  if (!ok(r, "cuDNN's algorithm heuristic")) return nullptr;
  const Api::Perf* chosen = nullptr;
  for (int i = 0; i < count && !chosen; ++i)
    if (perf[i].status == 0 && perf[i].memory <= kMaxWorkspace && (t != DType::f32 || allow_tf32 || perf[i].math_type != Api::kTensorOpMath))
      chosen = &perf[i];
  if (!chosen) return fail("cuDNN has no algorithm for this convolution within " + bytes_text(kMaxWorkspace));
  p->algo = chosen->algo;
  p->workspace = chosen->memory;
  if (chosen->math_type != p->math && !ok(a.set_math_type(p->conv, chosen->math_type), "cudnnSetConvolutionMathType")) return nullptr;
  p->text = algo_name(pass, p->algo) + ", " + bytes_text(p->workspace) + (chosen->math_type == Api::kTensorOpMath ? ", tensor cores" : "");
  return plans_.emplace(key, std::move(p)).first->second.get();
}

bool Cudnn::backend_plan(Plan& p, const ConvShape& s, DType t, ConvPass pass, std::string* why) {
  Api& a = *api_;
  const PlanSteps steps{a, p, why};
  auto ok = [&](int status, const char* what) { return steps.ok(status, what); };
  auto make = [&](int type, const char* what) { return steps.make(type, what); };
  const int dt = data_type(t);
  // Tensors by unique id: 1 the input (or its gradient), 2 the filter (or its gradient), 3 the
  // output (or its gradient); contiguous NCHW, 16-byte aligned (every buffer starts on 256 bytes).
  auto tensor = [&](int64_t uid, int64_t n, int64_t c, int64_t h, int64_t w) -> void* {
    void* d = make(Api::kTensorDesc, "cudnnBackendCreateDescriptor (tensor)");
    if (!d) return nullptr;
    const int64_t dims[4] = {n, c, h, w}, strides[4] = {c * h * w, h * w, w, 1}, align = 16;
    if (!ok(a.b_set(d, Api::kAttrTensorDataType, Api::kTypeDataType, 1, &dt), "tensor data type") ||
        !ok(a.b_set(d, Api::kAttrTensorDims, Api::kTypeInt64, 4, dims), "tensor dimensions") ||
        !ok(a.b_set(d, Api::kAttrTensorStrides, Api::kTypeInt64, 4, strides), "tensor strides") ||
        !ok(a.b_set(d, Api::kAttrTensorUid, Api::kTypeInt64, 1, &uid), "tensor id") ||
        !ok(a.b_set(d, Api::kAttrTensorAlignment, Api::kTypeInt64, 1, &align), "tensor alignment") ||
        !ok(a.b_finalize(d), "cudnnBackendFinalize (tensor)"))
      return nullptr;
    return d;
  };
  void* x = tensor(1, s.N, s.C, s.H, s.W);
  void* w = x ? tensor(2, s.O, s.C / s.G, s.KH, s.KW) : nullptr;
  void* y = w ? tensor(3, s.N, s.O, s.OH, s.OW) : nullptr;
  if (!y) return false;
  void* conv = make(Api::kConvolutionDesc, "cudnnBackendCreateDescriptor (convolution)");
  if (!conv) return false;
  const int compute = Api::kFloat, mode = Api::kCrossCorrelation;
  const int64_t dims = 2, dilation[2] = {s.dh, s.dw}, stride[2] = {s.sh, s.sw}, pad[2] = {s.ph, s.pw};
  if (!ok(a.b_set(conv, Api::kAttrConvCompType, Api::kTypeDataType, 1, &compute), "convolution compute type") ||
      !ok(a.b_set(conv, Api::kAttrConvMode, Api::kTypeConvMode, 1, &mode), "convolution mode") ||
      !ok(a.b_set(conv, Api::kAttrConvSpatialDims, Api::kTypeInt64, 1, &dims), "convolution dimensions") ||
      !ok(a.b_set(conv, Api::kAttrConvDilations, Api::kTypeInt64, 2, dilation), "convolution dilations") ||
      !ok(a.b_set(conv, Api::kAttrConvFilterStrides, Api::kTypeInt64, 2, stride), "convolution strides") ||
      !ok(a.b_set(conv, Api::kAttrConvPrePaddings, Api::kTypeInt64, 2, pad), "convolution paddings") ||
      !ok(a.b_set(conv, Api::kAttrConvPostPaddings, Api::kTypeInt64, 2, pad), "convolution paddings") ||
      !ok(a.b_finalize(conv), "cudnnBackendFinalize (convolution)"))
    return false;
  // The operation: its attributes are alpha, beta, the convolution, then the filter side, the
  // input side and the output side, numbered so for each kind in cudnn_graph.h (forward: W, X, Y;
  // data: W, dX, dY; filter: dW, X, dY).
  const int kind = pass == ConvPass::forward ? Api::kConvForwardOp : pass == ConvPass::grad_input ? Api::kConvBackwardDataOp : Api::kConvBackwardFilterOp;
  const int base = Api::kAttrFwdAlpha + (pass == ConvPass::forward ? 0 : pass == ConvPass::grad_input ? 6 : 12);
  void* op = make(kind, "cudnnBackendCreateDescriptor (operation)");
  if (!op) return false;
  const float one = 1.f, zero = 0.f;
  if (!ok(a.b_set(op, base + 0, Api::kTypeFloat, 1, &one), "operation alpha") || !ok(a.b_set(op, base + 1, Api::kTypeFloat, 1, &zero), "operation beta") ||
      !ok(a.b_set(op, base + 2, Api::kTypeDescriptor, 1, &conv), "operation convolution") ||
      !ok(a.b_set(op, base + 3, Api::kTypeDescriptor, 1, &w), "operation filter") ||
      !ok(a.b_set(op, base + 4, Api::kTypeDescriptor, 1, &x), "operation input") ||
      !ok(a.b_set(op, base + 5, Api::kTypeDescriptor, 1, &y), "operation output") || !ok(a.b_finalize(op), "cudnnBackendFinalize (operation)"))
    return false;
  void* graph = make(Api::kOperationGraphDesc, "cudnnBackendCreateDescriptor (graph)");
  if (!graph || !ok(a.b_set(graph, Api::kAttrGraphOps, Api::kTypeDescriptor, 1, &op), "graph operations") ||
      !ok(a.b_set(graph, Api::kAttrGraphHandle, Api::kTypeHandle, 1, &handle_), "graph handle") ||
      !ok(a.b_finalize(graph), "cudnnBackendFinalize (graph)"))
    return false;
  return engine_plan(p, graph, t, Api::kHeurInstant, "convolution", why);
}

bool Cudnn::engine_plan(Plan& p, void* graph, DType t, int heur_mode, const char* what, std::string* why) {
  Api& a = *api_;
  const PlanSteps steps{a, p, why};
  auto ok = [&](int status, const char* step) { return steps.ok(status, step); };
  auto make = [&](int type, const char* step) { return steps.make(type, step); };
  void* heur = make(Api::kEngineHeurDesc, "cudnnBackendCreateDescriptor (heuristic)");
  if (!heur || !ok(a.b_set(heur, Api::kAttrHeurGraph, Api::kTypeDescriptor, 1, &graph), "heuristic graph") ||
      !ok(a.b_set(heur, Api::kAttrHeurMode, Api::kTypeHeurMode, 1, &heur_mode), "heuristic mode") ||
      !ok(a.b_finalize(heur), "cudnnBackendFinalize (heuristic)"))
    return false;
  int64_t count = 0;
  if (!ok(a.b_get(heur, Api::kAttrHeurResults, Api::kTypeDescriptor, 0, &count, nullptr), "heuristic results")) return false;
  count = std::min<int64_t>(count, 16);
  std::vector<void*> cfgs;
  for (int64_t i = 0; i < count; ++i)
    if (void* c = make(Api::kEngineCfgDesc, "cudnnBackendCreateDescriptor (engine config)")) cfgs.push_back(c);
    else return false;
  int64_t got = 0;
  if (!cfgs.empty() && !ok(a.b_get(heur, Api::kAttrHeurResults, Api::kTypeDescriptor, count, &got, cfgs.data()), "heuristic results"))
    return false;
  std::string tried;
  for (int64_t i = 0; i < got; ++i) {
    void* engine = make(Api::kEngineDesc, "cudnnBackendCreateDescriptor (engine)");
    int64_t n = 0, index = -1;
    if (!engine || !ok(a.b_get(cfgs[i], Api::kAttrCfgEngine, Api::kTypeDescriptor, 1, &n, &engine), "engine of a config")) continue;
    a.b_get(engine, Api::kAttrEngineIndex, Api::kTypeInt64, 1, &n, &index);
    int notes[16] = {};
    int64_t note_count = 0;
    a.b_get(engine, Api::kAttrEngineNotes, Api::kTypeNumericalNote, 16, &note_count, notes);
    bool tensor_cores = false, refused = false;
    for (int64_t k = 0; k < note_count; ++k) {
      tensor_cores = tensor_cores || notes[k] == Api::kNoteTensorCore;
      // float32 without TF32 takes no tensor-core engine and none that rounds its inputs; no type
      // takes one that accumulates in less than float32.
      refused = refused || notes[k] == Api::kNoteReducedReduction ||
                (t == DType::f32 && !allow_tf32 && (notes[k] == Api::kNoteTensorCore || notes[k] == Api::kNoteDownConvert));
    }
    if (refused) continue;
    void* exec = make(Api::kExecutionPlanDesc, "cudnnBackendCreateDescriptor (plan)");
    if (!exec || a.b_set(exec, Api::kAttrPlanHandle, Api::kTypeHandle, 1, &handle_) != 0 ||
        a.b_set(exec, Api::kAttrPlanConfig, Api::kTypeDescriptor, 1, &cfgs[i]) != 0 || a.b_finalize(exec) != 0) {
      tried += " " + std::to_string(index);
      continue;
    }
    int64_t ws = 0;
    if (a.b_get(exec, Api::kAttrPlanWorkspace, Api::kTypeInt64, 1, &n, &ws) != 0 || ws < 0 || static_cast<size_t>(ws) > kMaxWorkspace) continue;
    p.exec = exec;
    p.workspace = static_cast<size_t>(ws);
    p.algo = static_cast<int>(index);
    p.text = "engine " + std::to_string(index) + ", " + bytes_text(p.workspace) + (tensor_cores ? ", tensor cores" : "");
    return true;
  }
  if (why) *why = "cuDNN's graph API built no plan for this " + std::string(what) + " (" + std::to_string(got) + " engines" +
                  (tried.empty() ? "" : "; failed:" + tried) + ")";
  return false;
}

bool Cudnn::plan(const ConvShape& s, DType t, ConvPass pass, size_t* workspace, std::string* why) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Plan* p = find(s, t, pass, why);
  if (p && workspace) *workspace = p->workspace;
  return p != nullptr;
}

std::string Cudnn::algorithm_text(const ConvShape& s, DType t, ConvPass pass) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Plan* p = find(s, t, pass, nullptr);
  return p ? p->text : "";
}

void Cudnn::run(const ConvShape& s, DType t, ConvPass pass, DevicePtr a, DevicePtr b, DevicePtr out, DevicePtr workspace) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string why;
  Plan* p = find(s, t, pass, &why);
  if (!p) throw std::runtime_error(why);
  use_stream();
  Api& api = *api_;
  if (p->exec) {  // the graph API: pointers by tensor id (1 input, 2 filter, 3 output side)
    DevicePtr ptrs[3] = {0, 0, 0};
    switch (pass) {
      case ConvPass::forward: ptrs[0] = a, ptrs[1] = b, ptrs[2] = out; break;
      case ConvPass::grad_input: ptrs[0] = out, ptrs[1] = b, ptrs[2] = a; break;
      case ConvPass::grad_filter: ptrs[0] = a, ptrs[1] = out, ptrs[2] = b; break;
    }
    return execute(*p, {1, 2, 3}, {reinterpret_cast<void*>(ptrs[0]), reinterpret_cast<void*>(ptrs[1]), reinterpret_cast<void*>(ptrs[2])},
                   workspace);
  }
  const float one = 1.f, zero = 0.f;
  void* ws = reinterpret_cast<void*>(workspace);
  auto ptr = [](DevicePtr d) { return reinterpret_cast<void*>(d); };
  switch (pass) {
    case ConvPass::forward:
      return api.check(api.fwd(handle_, &one, p->x, ptr(a), p->w, ptr(b), p->conv, p->algo, ws, p->workspace, &zero, p->y, ptr(out)),
                       "cudnnConvolutionForward");
    case ConvPass::grad_input:
      return api.check(api.bwd_data(handle_, &one, p->w, ptr(b), p->y, ptr(a), p->conv, p->algo, ws, p->workspace, &zero, p->x, ptr(out)),
                       "cudnnConvolutionBackwardData");
    case ConvPass::grad_filter:
      return api.check(api.bwd_filter(handle_, &one, p->x, ptr(a), p->y, ptr(b), p->conv, p->algo, ws, p->workspace, &zero, p->w, ptr(out)),
                       "cudnnConvolutionBackwardFilter");
  }
}

// Runs p's execution plan on these pointers (by tensor id), through a variant pack per call site's
// pointers (layers of one shape share the plan; a call site runs on the same buffers each time),
// made once.
void Cudnn::execute(Plan& p, const std::vector<int64_t>& uids, const std::vector<void*>& pointers, DevicePtr workspace) {
  Api& api = *api_;
  std::vector<void*> key = pointers;
  key.push_back(reinterpret_cast<void*>(workspace));
  auto it = p.packs.find(key);
  if (it == p.packs.end()) {
    if (p.packs.size() >= 256) {  // rebound buffers leave stale packs behind: start again
      for (const auto& kv : p.packs) api.b_destroy(kv.second);
      p.packs.clear();
    }
    void* pack = nullptr;
    api.check(api.b_create(Api::kVariantPackDesc, &pack), "cudnnBackendCreateDescriptor (variant pack)");
    void* ws = reinterpret_cast<void*>(workspace);
    std::string failed;
    auto ok = [&](int status, const char* what) {
      if (status != 0) failed = std::string(what) + " failed: " + api.error(status);
      return status == 0;
    };
    if (!ok(api.b_set(pack, Api::kAttrPackPointers, Api::kTypeVoidPtr, static_cast<int64_t>(pointers.size()), pointers.data()),
            "variant pack pointers") ||
        !ok(api.b_set(pack, Api::kAttrPackUids, Api::kTypeInt64, static_cast<int64_t>(uids.size()), uids.data()), "variant pack ids") ||
        !ok(api.b_set(pack, Api::kAttrPackWorkspace, Api::kTypeVoidPtr, 1, &ws), "variant pack workspace") ||
        !ok(api.b_finalize(pack), "cudnnBackendFinalize (variant pack)")) {
      api.b_destroy(pack);  // not kept: the next call would execute an unfinished pack
      throw std::runtime_error(failed);
    }
    it = p.packs.emplace(std::move(key), pack).first;
  }
  api.check(api.b_execute(handle_, p.exec, it->second), "cudnnBackendExecute");
}

}  // namespace ls
