// cuDNN, loaded at run time, for the convolutions behind extern kernels, as PyTorch's CUDA
// convolutions run: through cuDNN's graph (backend) API, an execution plan per problem made once
// from the heuristic's first engine that builds and whose workspace fits (cudnn.benchmark off),
// else through the legacy calls (LS_CUDNN_LEGACY=1 forces them). NCHW tensors and [O, C/G, KH, KW] filters, as the loop IR's buffers
// are. float32 convolutions use FMA math (no TF32) unless LS_ALLOW_TF32=1, as Lowerscope's
// products; bf16 and f16 ones run on the tensor cores with float32 accumulation.
// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "cuda/driver.h"
#include "tensor/dtype.h"

namespace ls {

// One 2-D convolution as cuDNN takes it (a 1-D one is 2-D over a height of 1).
struct ConvShape {
  int N = 0, C = 0, H = 0, W = 0, O = 0, KH = 0, KW = 0, OH = 0, OW = 0, G = 1;
  int sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  auto key() const { return std::tie(N, C, H, W, O, KH, KW, OH, OW, G, sh, sw, ph, pw, dh, dw); }
  bool operator<(const ConvShape& o) const { return key() < o.key(); }
};

// One scaled-dot-product attention as cuDNN's fused flash attention takes it, PyTorch's
// cuDNN attention on the H100: q [B, H, L, D], k and v [B, Hk, S, D] (grouped-query attention:
// H a multiple of Hk), the output [B, H, L, D], each through its element strides (batch, head,
// row, element); the log-sum-exp [B, H, L] float32 contiguous. Causal masks key j for query i
// where j > i (top-left, as PyTorch's is_causal). The backward's gradients are contiguous.
struct SdpaShape {
  int64_t B = 0, H = 0, Hk = 0, L = 0, S = 0, D = 0;
  bool causal = false;
  float scale = 1.f;
  std::array<int64_t, 4> q{}, k{}, v{}, o{}, grad_out{};  // grad_out: the backward's
  auto key() const { return std::tie(B, H, Hk, L, S, D, causal, scale, q, k, v, o, grad_out); }
  bool operator<(const SdpaShape& x) const { return key() < x.key(); }
};

// Why cuDNN `version`'s fused flash attention cannot take this problem in type `t` (its forward,
// or with `backward` its backward), before any graph is built; "" where it may (cuDNN's engines
// still decide).
std::string sdpa_unsupported(const SdpaShape& s, DType t, bool backward, int version);

// The three products of a convolution: the forward (y from x and w), the input's gradient (from
// grad_y and w) and the filter's (from x and grad_y).
enum class ConvPass { forward, grad_input, grad_filter };

class Cudnn {
 public:
  static Cudnn* get(std::string* why = nullptr);  // nullptr (with the reason) when not loadable
  // The algorithm cuDNN's heuristic gives `pass` of `s` in dtype `t` (f32, bf16 or f16) and the
  // workspace it needs, chosen once per problem. False (with the reason) where it has none.
  bool plan(const ConvShape& s, DType t, ConvPass pass, size_t* workspace, std::string* why = nullptr);
  // Runs `pass` on the driver's current stream: forward y = conv(a = x, b = w); grad_input
  // out = grad_x from (a = grad_y, b = w); grad_filter out = grad_w from (a = x, b = grad_y).
  // `workspace` holds plan()'s bytes. Throws with cuDNN's message on failure.
  void run(const ConvShape& s, DType t, ConvPass pass, DevicePtr a, DevicePtr b, DevicePtr out, DevicePtr workspace);
  // "implicit precomputed GEMM, 1.2 MB workspace": what plan() chose, for the kernel table.
  std::string algorithm_text(const ConvShape& s, DType t, ConvPass pass);

  // Attention (bf16 or f16) through cuDNN's fused flash attention, forward or backward: the
  // execution plan's workspace and its words for the kernel table, made once per problem. False
  // (with the reason) where this cuDNN builds none.
  bool sdpa_plan(const SdpaShape& s, DType t, bool backward, size_t* workspace, std::string* text, std::string* why = nullptr);
  // out and the log-sum-exp from q, k, v.
  void sdpa_forward(const SdpaShape& s, DType t, DevicePtr q, DevicePtr k, DevicePtr v, DevicePtr out, DevicePtr lse, DevicePtr workspace);
  // dq, dk, dv from grad_out, q, k, v, the forward's output and log-sum-exp.
  void sdpa_backward(const SdpaShape& s, DType t, DevicePtr grad_out, DevicePtr q, DevicePtr k, DevicePtr v, DevicePtr out, DevicePtr lse,
                     DevicePtr dq, DevicePtr dk, DevicePtr dv, DevicePtr workspace);
  std::string library;       // the file it was loaded from
  int version = 0;           // cudnnGetVersion(), e.g. 91000
  bool allow_tf32 = false;   // LS_ALLOW_TF32, read when cuDNN is loaded

  struct Api;   // the entry points used
  struct Plan;  // descriptors and the chosen algorithm of one problem
  struct PlanSteps;  // the helpers that build a plan's descriptors
  ~Cudnn();

 private:
  Plan* find(const ConvShape& s, DType t, ConvPass pass, std::string* why);
  bool backend_plan(Plan& p, const ConvShape& s, DType t, ConvPass pass, std::string* why);  // the graph API's execution plan
  // The execution plan of an operation graph made for p: the heuristic's first engine (mode
  // `heur_mode`) that builds and fits, refusing reduced-precision accumulation (and, for float32
  // without TF32, tensor cores).
  bool engine_plan(Plan& p, void* graph, DType t, int heur_mode, const char* what, std::string* why);
  Plan* find_sdpa(const SdpaShape& s, DType t, bool backward, std::string* why);
  void execute(Plan& p, const std::vector<int64_t>& uids, const std::vector<void*>& pointers, DevicePtr workspace);
  void use_stream();
  std::unique_ptr<Api> api_;
  void* handle_ = nullptr;
  void* stream_ = nullptr;
  int generation_ = 0;
  std::map<std::tuple<ConvShape, int, int>, std::unique_ptr<Plan>> plans_;
  std::map<std::tuple<SdpaShape, int, bool>, std::unique_ptr<Plan>> sdpa_plans_;  // null: none builds (why in sdpa_refused_)
  std::map<std::tuple<SdpaShape, int, bool>, std::string> sdpa_refused_;
  std::mutex mutex_;  // plan, algorithm_text and run (compiles of the app's panels run on threads of their own)
};

}  // namespace ls
