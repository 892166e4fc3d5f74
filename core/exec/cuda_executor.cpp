#include "exec/cuda_executor.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <stdexcept>

#include "cuda/cublas.h"
#include "cuda/cudnn.h"
#include "cuda/nvrtc_compiler.h"
#include "exec/attention.h"
#include "exec/extern_kernels.h"
#include "exec/flash_attention_cuda.h"
#include "exec/isolated_run.h"
#include "ops/indexing.h"
#include "ops/known_ops.h"

namespace ls {
namespace {

bool all_f32(const LoopProgram& p, const ExternCall& c) {
  for (const auto& b : c.inputs)
    if (p.buffer(b).dtype != DType::f32) return false;
  for (const auto& b : c.outputs)
    if (p.buffer(b).dtype != DType::f32) return false;
  return true;
}

// The one half type (bf16, f16) of every input and output of a call, else f32 (none, or mixed).
DType one_half_type(const LoopProgram& p, const ExternCall& c) {
  DType t = DType::f32;
  for (const auto& names : {c.inputs, c.outputs})
    for (const auto& b : names) {
      if (b.empty()) continue;
      const DType d = p.buffer(b).dtype;
      if (!dtype_is_half(d) || (t != DType::f32 && d != t)) return DType::f32;
      t = d;
    }
  return t;
}

// The shape a library call sees its tensor argument `arg` in.
Shape seen_shape(const LoopProgram& p, const ExternCall& c, size_t arg) {
  const size_t i = static_cast<size_t>(c.args.at(arg).node);
  return i < c.shapes.size() ? c.shapes[i] : p.buffer(c.inputs.at(i)).shape;
}

std::vector<int64_t> pair_of(const Arg& a, int64_t dflt) {
  std::vector<int64_t> v = a.kind == Arg::Kind::none ? std::vector<int64_t>{} : a.ints();
  if (v.empty()) v = {dflt, dflt};
  if (v.size() == 1) v.push_back(v[0]);
  return v;
}

}  // namespace

lsrt::cuda::Conv cuda_conv(const LoopProgram& p, const ExternCall& c) {
  const bool backward = c.op == &op::convolution_backward();
  const size_t xa = backward ? 1 : 0, at = backward ? 4 : 3;  // x; stride, padding, dilation, transposed, output padding, groups
  Shape x = seen_shape(p, c, xa), w = seen_shape(p, c, xa + 1), y = backward ? seen_shape(p, c, 0) : c.output_metas.at(0).shape;
  std::vector<int64_t> st = pair_of(c.args[at], 1), pad = pair_of(c.args[at + 1], 0), dil = pair_of(c.args[at + 2], 1);
  if (x.size() == 3) {  // 1-D (Whisper's, wav2vec2's): 2-D over a height of 1, the same memory
    for (Shape* s : {&x, &w, &y}) s->insert(s->begin() + 2, 1);
    st = {1, st[0]};
    pad = {0, pad[0]};
    dil = {1, dil[0]};
  }
  const int64_t groups = c.args[at + 5].i;
  auto i = [](int64_t v) { return static_cast<int>(v); };
  return {i(x[0]), i(x[1]), i(x[2]), i(x[3]), i(w[0]), i(w[1]), i(w[2]), i(w[3]), i(y[2]), i(y[3]), i(groups), i(st[0]), i(st[1]),
          i(pad[0]), i(pad[1]), i(dil[0]), i(dil[1]), groups == x[1] && w[1] == 1 && w[0] == x[1]};
}

// The convolution of call `c` as cuDNN takes it, and the passes it runs (the forward; for the
// backward, the gradients its output mask wants); `type` gets 0 float32, 1 bf16, 2 f16. Nothing
// for a transposed convolution, mixed or other types, or anything but 1-D and 2-D; nor where the
// forms without cuDNN were measured faster on the H200 (the zoo at batch 2, tools/zoo/results.md):
// float32 without TF32 (cuDNN's FMA engines: ResNet-50 2.3 -> 5.7 ms, RegNetY 1.1 -> 9.1 ms), and
// depthwise and many-group convolutions (our direct kernels).
struct DnnConv {
  ConvShape shape;
  DType dtype = DType::f32;
  int type = 0;
  std::vector<ConvPass> passes;
};
static std::optional<DnnConv> cuda_dnn_conv(const LoopProgram& p, const ExternCall& c, bool allow_tf32) {
  const bool forward = c.op == &op::convolution(), backward = c.op == &op::convolution_backward();
  if (!forward && !backward) return std::nullopt;
  if (c.args.at(forward ? 6 : 7).b) return std::nullopt;  // transposed
  const size_t rank = forward ? c.output_metas.at(0).shape.size() : seen_shape(p, c, 1).size();
  if (rank != 3 && rank != 4) return std::nullopt;
  DnnConv d;
  d.dtype = one_half_type(p, c);
  if (d.dtype == DType::f32 && !all_f32(p, c)) return std::nullopt;
  d.type = d.dtype == DType::f32 ? 0 : d.dtype == DType::bf16 ? 1 : 2;
  if (d.type == 0 && !allow_tf32) return std::nullopt;
  const lsrt::cuda::Conv g = cuda_conv(p, c);
  if (g.depthwise || g.grouped()) return std::nullopt;
  d.shape = {g.N, g.C, g.H, g.W, g.O, g.KH, g.KW, g.OH, g.OW, g.G, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw};
  if (forward) {
    d.passes = {ConvPass::forward};
  } else {
    const auto mask = c.args.at(10).list;
    auto wanted = [&](size_t i) {
      return (i >= mask.size() || mask[i].b) && i < c.outputs.size() && !c.outputs[i].empty() && p.buffer(c.outputs[i]).bytes() > 0;
    };
    if (wanted(0)) d.passes.push_back(ConvPass::grad_input);
    if (wanted(1)) d.passes.push_back(ConvPass::grad_filter);
  }
  return d;
}

// An operand as the call sees it, read as a contiguous buffer (no strides of its own, a view's
// shape over the same elements).
static bool plain_operand(const LoopProgram& p, const ExternCall& c, size_t input) {
  if (input < c.strides.size() && !c.strides[input].empty()) return false;
  return input >= c.shapes.size() || numel_of(c.shapes[input]) == numel_of(p.buffer(c.inputs.at(input)).shape);
}

static int element_code(DType t) {  // ls_index_put's, ls_scatter's and ls_cumsum's element codes
  switch (t) {
    case DType::f32: return 0;
    case DType::i32: return 1;
    case DType::i64: return 2;
    case DType::f64: return 3;
    case DType::b8:
    case DType::u8: return 4;
    default: return -1;
  }
}

// Strides that read a tensor of shape `s` broadcast to `to` (right-aligned; 0 along broadcast dims).
static std::vector<long long> broadcast_strides(const Shape& s, const Shape& to) {
  std::vector<long long> st(to.size(), 0);
  const std::vector<int64_t> own = contiguous_strides(s);
  for (size_t k = 0; k < s.size(); ++k) {
    const size_t d = to.size() - s.size() + k;
    st[d] = s[k] == 1 && to[d] != 1 ? 0 : own[k];
  }
  return st;
}

std::optional<lsrt::cuda::IndexPut> cuda_index_put(const LoopProgram& p, const ExternCall& c, std::vector<int64_t>* indexed_dims) {
  if (c.op != &op::index_put() || c.args.size() < 3 || !c.args[0].is_node() || !c.args[2].is_node()) return std::nullopt;
  const DType t = p.buffer(c.outputs.at(0)).dtype;
  const int code = element_code(t);
  if (code < 0 || code == 4) return std::nullopt;
  const size_t self = static_cast<size_t>(c.args[0].node), values = static_cast<size_t>(c.args[2].node);
  if (!plain_operand(p, c, self) || !plain_operand(p, c, values) || p.buffer(c.inputs.at(values)).dtype != t) return std::nullopt;
  std::vector<Shape> shapes;
  std::vector<bool> wide;
  for (const Arg& a : c.args[1].list) {
    if (!a.is_node()) continue;
    const size_t j = static_cast<size_t>(a.node);
    const DType it = p.buffer(c.inputs.at(j)).dtype;
    if (!plain_operand(p, c, j) || (it != DType::i64 && it != DType::i32)) return std::nullopt;
    shapes.push_back(j < c.shapes.size() ? c.shapes[j] : p.buffer(c.inputs.at(j)).shape);
    wide.push_back(it == DType::i64);
  }
  const Shape xs = seen_shape(p, c, 0), vs = seen_shape(p, c, 2);
  IndexPlan plan;
  try {
    plan = index_plan(*c.op, xs, c.args[1], shapes);
  } catch (const std::exception&) {
    return std::nullopt;  // the reference kernel says what is wrong
  }
  if (plan.out.size() > 8 || shapes.size() > 4 || shapes.empty() || !broadcasts_to(vs, plan.out)) return std::nullopt;
  lsrt::cuda::IndexPut r{};
  lsrt::cuda::IndexPutPlan& d = r.d;
  d.rank = static_cast<int>(plan.out.size());
  d.nidx = static_cast<int>(shapes.size());
  const std::vector<int64_t> xst = contiguous_strides(xs);
  const size_t nb = plan.before.size(), nB = plan.bshape.size();
  const std::vector<long long> vst = broadcast_strides(vs, plan.out);
  for (size_t k = 0; k < plan.out.size(); ++k) {
    d.shape[k] = plan.out[k];
    d.out_stride[k] = k < nb ? xst[plan.before[k]] : k < nb + nB ? 0 : xst[plan.after[k - nb - nB]];
    d.val_stride[k] = vst[k];
  }
  for (size_t j = 0; j < shapes.size(); ++j) {
    const std::vector<long long> ist = broadcast_strides(shapes[j], plan.bshape);
    for (size_t k = 0; k < nB; ++k) d.idx_stride[j][nb + k] = ist[k];
    d.dim_stride[j] = xst[plan.indexed[j]];
    d.dim_size[j] = xs[plan.indexed[j]];
    d.idx64[j] = wide[j] ? 1 : 0;
  }
  r.total = numel_of(plan.out);
  r.self_words = numel_of(xs) * dtype_size(t) / 4;
  r.code = code;
  r.accumulate = c.args.size() > 3 && c.args[3].kind == Arg::Kind::boolean && c.args[3].b;
  if (indexed_dims) *indexed_dims = plan.indexed;
  return r;
}

std::optional<lsrt::cuda::Scatter> cuda_scatter(const LoopProgram& p, const ExternCall& c) {
  const bool value = c.op == &op::scatter_value(), add = c.op == &op::scatter_add(), reduce = c.op == &op::scatter_reduce_two();
  if (!value && !add && !reduce && c.op != &op::scatter_src()) return std::nullopt;
  if (c.args.size() < 4 || !c.args[0].is_node() || !c.args[2].is_node()) return std::nullopt;
  int mode = add ? 1 : 0;
  if (reduce) {  // sum, amax, amin including self (prod, mean and include_self=False stay on the host)
    if (c.args.size() < 5 || c.args[4].kind != Arg::Kind::string || (c.args.size() > 5 && c.args[5].kind == Arg::Kind::boolean && !c.args[5].b))
      return std::nullopt;
    mode = c.args[4].s == "sum" ? 1 : c.args[4].s == "amax" ? 2 : c.args[4].s == "amin" ? 3 : -1;
    if (mode < 0) return std::nullopt;
  }
  const DType t = p.buffer(c.outputs.at(0)).dtype;
  const int code = element_code(t);
  if (code < 0 || code == 4) return std::nullopt;
  const size_t self = static_cast<size_t>(c.args[0].node), index = static_cast<size_t>(c.args[2].node);
  if (!plain_operand(p, c, self) || !plain_operand(p, c, index) || p.buffer(c.inputs.at(index)).dtype != DType::i64) return std::nullopt;
  Shape src;
  if (!value) {
    if (!c.args[3].is_node()) return std::nullopt;
    const size_t s = static_cast<size_t>(c.args[3].node);
    if (!plain_operand(p, c, s) || p.buffer(c.inputs.at(s)).dtype != t) return std::nullopt;
    src = seen_shape(p, c, 3);
  } else if (!c.args[3].is_number()) {
    return std::nullopt;
  }
  auto nonempty = [](Shape s) { return s.empty() ? Shape{1} : s; };
  const Shape xs = nonempty(seen_shape(p, c, 0)), ix = nonempty(seen_shape(p, c, 2));
  if (!value) src = nonempty(src);
  if (xs.size() > 8 || ix.size() != xs.size() || (!value && src.size() != xs.size())) return std::nullopt;
  int64_t dim = c.args[1].i;
  if (dim < 0) dim += static_cast<int64_t>(xs.size());
  if (dim < 0 || dim >= static_cast<int64_t>(xs.size())) return std::nullopt;
  lsrt::cuda::Scatter r{};
  r.d.rank = static_cast<int>(ix.size());
  r.d.dim = static_cast<int>(dim);
  r.d.dim_size = xs[static_cast<size_t>(dim)];
  const std::vector<int64_t> xst = contiguous_strides(xs), sst = value ? std::vector<int64_t>(xs.size(), 0) : contiguous_strides(src);
  for (size_t k = 0; k < ix.size(); ++k) {
    if (ix[k] > (k == static_cast<size_t>(dim) ? ix[k] : xs[k]) || (!value && ix[k] > src[k])) return std::nullopt;  // the rule refuses it
    r.d.shape[k] = ix[k];
    r.d.out_stride[k] = xst[k];
    r.d.src_stride[k] = sst[k];
  }
  r.total = numel_of(ix);
  r.self_words = numel_of(xs) * dtype_size(t) / 4;
  r.code = code;
  r.mode = mode;
  r.value = value ? c.args[3].number() : 0.0;
  return r;
}

std::optional<lsrt::cuda::Cumsum> cuda_cumsum(const LoopProgram& p, const ExternCall& c) {
  if (c.op != &op::cumsum() || !c.args[0].is_node()) return std::nullopt;
  const size_t x = static_cast<size_t>(c.args[0].node);
  const int xcode = element_code(p.buffer(c.inputs.at(x)).dtype), ycode = element_code(p.buffer(c.outputs.at(0)).dtype);
  if (xcode < 0 || ycode < 0 || ycode == 1 || ycode == 4 || !plain_operand(p, c, x)) return std::nullopt;
  const Shape s = seen_shape(p, c, 0);
  long long outer = 1, n = 1, inner = 1;
  if (!s.empty()) {
    int64_t dim = c.args[1].i;
    if (dim < 0) dim += static_cast<int64_t>(s.size());
    for (int64_t k = 0; k < static_cast<int64_t>(s.size()); ++k) (k < dim ? outer : k == dim ? n : inner) *= s[k];
  }
  return lsrt::cuda::Cumsum{outer, n, inner, xcode, ycode};
}

std::optional<lsrt::cuda::SortLines> cuda_sort(const LoopProgram& p, const ExternCall& c) {
  const bool sort = c.op == &op::sort(), topk = c.op == &op::topk();
  if ((!sort && !topk) || !c.args[0].is_node()) return std::nullopt;
  if (topk && !c.args.at(4).b) return std::nullopt;  // unsorted: the reference's order is nth_element's
  const size_t x = static_cast<size_t>(c.args[0].node);
  const DType t = p.buffer(c.inputs.at(x)).dtype;
  if ((t != DType::f32 && t != DType::bf16 && t != DType::f16) || !plain_operand(p, c, x)) return std::nullopt;
  const Shape s = seen_shape(p, c, 0);
  int64_t dim = c.args.at(sort ? 1 : 2).i;
  if (dim < 0) dim += static_cast<int64_t>(s.size());
  long long outer = 1, n = 1, inner = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) (d < dim ? outer : d == dim ? n : inner) *= s[static_cast<size_t>(d)];
  if (n > lsrt::cuda::SortLines::kMaxN) return std::nullopt;
  const long long k = sort ? n : c.args.at(1).i;
  const int code = t == DType::f32 ? 0 : t == DType::bf16 ? 1 : 2;
  return lsrt::cuda::SortLines{outer, n, inner, k, code, sort ? (c.args.at(2).b ? 1 : 0) : (c.args.at(3).b ? 1 : 0)};
}

lsrt::cuda::MaxPool cuda_max_pool(const LoopProgram& p, const ExternCall& c) {
  const Shape x = seen_shape(p, c, 0);
  const Shape& y = c.output_metas.at(0).shape;
  const std::vector<int64_t> ks = pair_of(c.args[1], 1), st = pair_of(c.args[2], 0), pad = pair_of(c.args[3], 0), dil = pair_of(c.args[4], 1);
  auto i = [](int64_t v) { return static_cast<int>(v); };
  return {x[0] * x[1], i(x[2]), i(x[3]), i(y[2]), i(y[3]), i(ks[0]), i(ks[1]), i(st[0] ? st[0] : ks[0]), i(st[1] ? st[1] : ks[1]),
          i(pad[0]), i(pad[1]), i(dil[0]), i(dil[1])};
}

lsrt::cuda::View cuda_attn_view(const AttnOperand& a) { return {a.offset, a.sb, a.sh, a.sl, a.se}; }

// A bf16/f16 attention call's sizes for the FlashAttention-2 kernels; key/value heads from k's
// shape (grouped-query attention reads head h's keys at h / group).
static FlashHalf flash_half(const LoopProgram& p, const ExternCall& c) {
  const AttnGeom geom = attn_geom(c);
  const Shape& k = c.shapes.at(static_cast<size_t>(c.args.at(is_attention_backward(c.op) ? 2 : 1).node));
  const int64_t heads = k.size() == 4 ? k[1] : 1;
  return {geom.B, geom.H, heads > 0 && geom.H % heads == 0 ? geom.H / heads : 1, geom.L, geom.S, geom.E, geom.causal,
          static_cast<float>(geom.scale), flash_half_type(p, c)};
}

// A bf16/f16 attention call as cuDNN's fused flash attention takes it (the operands through their
// views: unit element strides, 16-byte aligned rows and starts, one head size), with the element
// offsets of q, k, v, out (grad_out, q, k, v, out for the backward); nullopt where it cannot.
struct DnnAttention {
  SdpaShape shape;
  DType dtype;
  std::vector<int64_t> offsets;
};
static std::optional<DnnAttention> cuda_dnn_attention(const LoopProgram& p, const ExternCall& c) {
  const AttnGeom geom = attn_geom(c);
  if (geom.E != geom.Ev) return std::nullopt;
  const bool bwd = is_attention_backward(c.op);
  const FlashHalf h = flash_half(p, c);
  DnnAttention a{{}, h.type == "f16" ? DType::f16 : DType::bf16, {}};
  SdpaShape& s = a.shape;
  s.B = geom.B, s.H = geom.H, s.Hk = geom.H / h.group, s.L = geom.L, s.S = geom.S, s.D = geom.E;
  s.causal = geom.causal;
  s.scale = static_cast<float>(geom.scale);
  auto take = [&](const AttnOperand& o, std::array<int64_t, 4>& st) {
    if (o.se != 1 || o.sb % 8 || o.sh % 8 || o.sl % 8 || o.offset % 8) return false;
    st = {o.sb, o.sh, o.sl, o.se};
    a.offsets.push_back(o.offset);
    return true;
  };
  auto operand = [&](size_t arg) {
    const size_t i = static_cast<size_t>(c.args.at(arg).node);
    return attn_operand(c, i, c.shapes.at(i));
  };
  const bool ok = bwd ? take(operand(0), s.grad_out) && take(operand(1), s.q) && take(operand(2), s.k) && take(operand(3), s.v) &&
                            take(operand(5), s.o)
                      : take(operand(0), s.q) && take(operand(1), s.k) && take(operand(2), s.v) &&
                            take(attn_output(geom, attention_output_heads_inner(c)), s.o);
  if (!ok) return std::nullopt;
  return a;
}

// A matrix multiply whose operands and result are all of one half type, run by cuBLASLt on the
// tensor cores: addmm only with a per-column bias added unscaled (its epilogue).
bool half_matmul(const LoopProgram& p, const ExternCall& c) {
  if (!op::is_matmul(c.op)) return false;
  const DType t = p.buffer(c.outputs.at(0)).dtype;
  if (!dtype_is_half(t)) return false;
  for (const auto& b : c.inputs)
    if (p.buffer(b).dtype != t) return false;
  if (c.op == &op::addmm()) {
    const Shape bias = seen_shape(p, c, 0);
    const int64_t N = c.output_metas.at(0).shape.at(1);
    const bool row = bias.size() == 1 ? bias[0] == N : bias.size() == 2 && bias[0] == 1 && bias[1] == N;
    if (!row || !c.args[3].is_number() || c.args[3].number() != 1.0) return false;
  }
  return true;
}

std::string cuda_extern_how(const LoopProgram& p, const ExternCall& c, bool blas, bool fft) {
  if (fft && cuda_fft_plan(p, c)) return "cuFFT";
  const bool f32 = all_f32(p, c);
  if (op::is_matmul(c.op) && f32 && blas) return "cuBLAS";
  if (blas && half_matmul(p, c)) return "cuBLASLt (" + std::string(dtype_torch(p.buffer(c.outputs.at(0)).dtype).substr(6)) + ", tensor cores)";
  const std::string attention = attention_cuda_path(p, c);
  if (attention == "fused") return "attention kernel";
  if (attention == "tiled") return "flash attention kernel";
  if (attention == "half") return "flash attention kernel (" + flash_half_type(p, c) + ", tensor cores)";
  if (attention == "cublas" && blas) return "attention (cuBLAS)";
  // Half convolutions: the float32 forms on float32 copies made on the device (Conv::run_half).
  const DType half = one_half_type(p, c);
  const std::string widened = half == DType::f32 ? "" : " on float32 copies of " + std::string(dtype_short(half));
  if (c.op == &op::convolution() && (f32 || half != DType::f32) && !c.args[6].b &&
      (c.output_metas.at(0).shape.size() == 4 || c.output_metas.at(0).shape.size() == 3)) {
    const lsrt::cuda::Conv g = cuda_conv(p, c);
    if (g.depthwise) return "depthwise kernel" + widened;
    if (g.grouped()) return "grouped convolution kernel" + widened;
    if (!blas) return "host (reference kernel)";
    return (g.linear() ? "cuBLAS (a linear layer)" : g.pointwise() ? "cuBLAS (1x1: no im2col)" : "im2col + cuBLAS") + widened;
  }
  if (c.op == &op::convolution_backward() && (f32 || half != DType::f32) && !c.args[7].b &&
      (seen_shape(p, c, 1).size() == 4 || seen_shape(p, c, 1).size() == 3)) {
    const lsrt::cuda::Conv g = cuda_conv(p, c);
    if (g.depthwise) return "depthwise backward kernels" + widened;
    if (g.grouped()) return "grouped convolution backward kernels" + widened;
    if (!blas) return "host (reference kernel)";
    return (g.linear() ? "cuBLAS (a linear layer's backward)" : g.pointwise() ? "cuBLAS (1x1: no im2col or col2im)" : "im2col + cuBLAS + col2im") +
           widened;
  }
  if (cuda_index_put(p, c)) return "index_put kernel";
  if (cuda_cumsum(p, c)) return "cumsum kernel";
  if (cuda_sort(p, c)) return "sort kernel";
  if (cuda_scatter(p, c)) return "scatter kernel";
  if (c.op == &op::max_pool2d_with_indices() && p.buffer(c.inputs.at(0)).dtype == DType::f32 &&
      seen_shape(p, c, 0).size() == 4 && !c.args[5].b)
    return "pool kernel";
  if (c.op == &op::cat()) {
    // Copies of 4-byte words: elements of 4 bytes, or pairs of 2-byte ones (halves) where every
    // input's rows hold an even number of them.
    const int64_t size = dtype_size(p.buffer(c.outputs.at(0)).dtype);
    const Shape& ys = p.buffer(c.outputs.at(0)).shape;
    int64_t dim = c.args[1].i, outer = 1;
    if (dim < 0) dim += static_cast<int64_t>(ys.size());
    for (int64_t d = 0; d < dim; ++d) outer *= ys[d];
    bool words = size == 4 || size == 2;
    for (const auto& b : c.inputs)
      words = words && dtype_size(p.buffer(b).dtype) == size &&
              (size == 4 || (numel_of(p.buffer(b).shape) / std::max<int64_t>(outer, 1)) % 2 == 0);
    if (words) return "device copies";
  }
  return "host (reference kernel)";
}

void refuse_if_too_large_for_gpu(const MemoryNeed& need, CudaDriver& d) {
  const int64_t faked = memory_available_override();
  refuse_if_too_large(need, faked >= 0 ? faked : static_cast<int64_t>(d.free_memory()),
                      faked >= 0 ? "on the GPU (LOWERSCOPE_MEMORY_AVAILABLE)" : "on the GPU (" + d.device().name + ", cuMemGetInfo)");
}

namespace {

int64_t grid_for(int64_t total) { return std::clamp<int64_t>((total + 255) / 256, 1, 132 * 32); }

}  // namespace

CudaExecutable::CudaExecutable(const LoopProgram& p, const Schedule& s, const GeneratedCuda& g, CudaDriver& d, CudaModule& m,
                               CudaModule& helpers, CudaModule* attention, std::vector<int64_t> sizes)
    : p_(p), g_(g), d_(d), sizes_(sizes.begin(), sizes.end()) {
  std::string why;
  blas_ = Cublas::get(&why);
  Cublas* blas = blas_;
  // cuDNN is loaded for the first convolution it would run (LS_CUDNN=0: never); float32 ones only
  // where TF32 is allowed (LS_ALLOW_TF32, as cuBLAS and cuDNN read it).
  const char* no_dnn = std::getenv("LS_CUDNN");
  const bool want_dnn = !no_dnn || std::string(no_dnn) != "0";
  const char* tf32_env = std::getenv("LS_ALLOW_TF32");
  const bool tf32 = tf32_env && *tf32_env && std::string(tf32_env) != "0";
  for (size_t i = 0; i < g.source.kernels.size(); ++i) {
    const bool epilogue_inside = i + 1 < g.source.kernels.size() && g.source.kernels[i + 1].in_template;
    if (s.kernels.at(i).is_extern && !g.source.kernels[i].launcher.empty()) {  // max-autotune's GEMM template in its place
      void* f = m.function(g.source.kernels[i].launcher);
      functions_.push_back(f);
      externs_.push_back(&p.nodes.at(s.kernels[i].nodes.at(0)));
      registers.push_back(d.registers(f));
      // (or cumsum's generated scan, codegen/cuda_codegen.cpp: a kernel of the model's module too)
      how.push_back(g.launch.at(i).form == "scan" ? "generated scan" : epilogue_inside ? "template+epilogue" : "template");
    } else if (s.kernels.at(i).is_extern) {
      const LoopNode* n = &p.nodes.at(s.kernels[i].nodes.at(0));
      functions_.push_back(nullptr);
      externs_.push_back(n);
      registers.push_back(0);
      // The FFTs on cuFFT, loaded for the first of them; without it on the host, saying why.
      const auto fft_plan = cuda_fft_plan(p, n->ext);
      std::string no_fft;
      if (fft_plan && !fft_ && !(fft_ = Cufft::get(&no_fft)))
        no_fft = "no cuFFT: " + no_fft;
      how.push_back(cuda_extern_how(p, n->ext, blas != nullptr, fft_ != nullptr));
      if (how.back() == "cuFFT") fft_plans_[i] = *fft_plan;
      else if (fft_plan) how.back() = "host (" + extern_library(p, n->ext) + "): " + (no_fft.empty() ? "cuFFT could not be loaded" : no_fft);
      const auto dnn = want_dnn ? cuda_dnn_conv(p, n->ext, tf32) : std::nullopt;
      if (dnn && !dnn_) dnn_ = Cudnn::get();
      if (dnn && dnn_ && !dnn->passes.empty()) {  // cuDNN where it has an algorithm for every pass
        std::string words;
        size_t most = 0;
        for (const ConvPass pass : dnn->passes) {
          size_t bytes = 0;
          if (!dnn_->plan(dnn->shape, dnn->dtype, pass, &bytes)) {
            words.clear();
            break;
          }
          most = std::max(most, bytes);
          words += std::string(words.empty() ? "" : "; ") + (pass == ConvPass::grad_input ? "input gradient " : pass == ConvPass::grad_filter ? "filter gradient " : "") +
                   dnn_->algorithm_text(dnn->shape, dnn->dtype, pass);
        }
        if (!words.empty()) {
          how.back() = "cuDNN" + (dnn->type ? " " + std::string(dtype_short(dnn->dtype)) : std::string()) + ": " + words;
          dnn_workspace_bytes_ = std::max(dnn_workspace_bytes_, most);
        }
      }
      if (want_dnn && how.back().rfind("flash attention kernel (", 0) == 0) {  // bf16/f16 attention: cuDNN's, as PyTorch's
        if (const auto att = cuda_dnn_attention(p, n->ext)) {
          if (!dnn_) dnn_ = Cudnn::get();
          size_t bytes = 0;
          std::string text, why;
          if (dnn_ && dnn_->sdpa_plan(att->shape, att->dtype, is_attention_backward(n->ext.op), &bytes, &text, &why)) {
            how.back() = "cuDNN attention (" + std::string(dtype_short(att->dtype)) + "): " + text;
            dnn_workspace_bytes_ = std::max(dnn_workspace_bytes_, bytes);
          } else if (const char* dbg = std::getenv("LS_CUDNN_DEBUG"); dbg && *dbg == '1') {  // why the kernel of our own runs
            std::fprintf(stderr, "cuDNN attention for %s: %s\n", n->name.c_str(), dnn_ ? why.c_str() : "cuDNN not loaded");
          }
        }
      }
    } else if (g.source.kernels[i].in_template) {  // runs inside the template before it
      functions_.push_back(nullptr);
      externs_.push_back(nullptr);
      registers.push_back(0);
      how.push_back("epilogue");
    } else {
      void* f = m.function(g.source.kernels[i].launcher);
      functions_.push_back(f);
      externs_.push_back(nullptr);
      registers.push_back(d.registers(f));
      how.push_back("generated");
    }
  }
  if (g.source.code.find("ls_index_fault(") != std::string::npos && (index_faults_ = m.global("ls_index_fault_state")) != 0)
    d.zero(index_faults_, 4 * sizeof(int64_t));
  for (size_t i = 0; i < how.size(); ++i) {
    if ((how[i] == "attention kernel" || how[i] == "flash attention kernel") && !attention)
      throw std::runtime_error("the attention kernels' module was not compiled");
    if (how[i] == "attention kernel" || how[i] == "flash attention kernel") {  // the call's direction only
      const ExternCall& c = externs_[i]->ext;
      const std::string d = std::to_string(attention_head_dim(p, c)), kind = how[i] == "attention kernel" ? "ls_attention_" : "ls_flash_attention_";
      const std::vector<std::string> names = is_attention_backward(c.op) ? std::vector<std::string>{"bwd_dq_", "bwd_dkv_"}
                                                                              : std::vector<std::string>{"fwd_"};
      for (const std::string& n : names) helpers_[kind + n + d] = attention->function(kind + n + d);
    }
    if (how[i].rfind("flash attention kernel (", 0) == 0) {  // bf16/f16 (exec/flash_attention_cuda.h)
      if (!attention) throw std::runtime_error("the attention kernels' module was not compiled");
      for (const std::string& n : flash_half(p, externs_[i]->ext).kernels(is_attention_backward(externs_[i]->ext.op)))
        helpers_[n] = attention->function(n);
    }
  }
  // max-autotune's cuBLASLt algorithms, by kernel name (the choice made on this device and library)
  for (size_t i = 0; i < how.size(); ++i) {
    const auto chosen = g.matmul_algorithms.find(g.source.kernels[i].name);
    MatmulAlgorithm a;
    if (chosen != g.matmul_algorithms.end() && how[i] == "cuBLAS" && MatmulAlgorithm::parse(chosen->second, a)) choose_matmul(i, &a);
  }
  if (std::count(how.begin(), how.end(), "index_put kernel") || std::count(how.begin(), how.end(), "scatter kernel")) {
    extern_faults_ = DeviceBuffer(d, 4 * sizeof(int64_t));
    d.zero(extern_faults_.ptr(), 4 * sizeof(int64_t));
  }
  if (!fft_plans_.empty()) {  // the FFTs' gathers and scaling: a module of their own (the disk cache keeps its cubin)
    CudaCompileOptions fo;
    fo.sm = d.device().sm();
    fo.ptx = fo.sass = false;
    fo.module = "fft";
    fft_module_ = std::make_unique<CudaModule>(d, compile_cuda(fft_kernels_source(), fo).cubin);
    for (const char* k : {"ls_fft_gather", "ls_fft_widen", "ls_fft_scale", "ls_fft_real_ends"}) helpers_[k] = fft_module_->function(k);
  }
  bias_kernel_ = helpers.function("ls_broadcast_bias");
  for (const char* k : {"ls_add_channel_bias", "ls_im2col", "ls_max_pool2d", "ls_copy_rows", "ls_strided_copy4",
                        "ls_attn_softmax", "ls_attn_probs", "ls_attn_rowdot", "ls_attn_dscores", "ls_col2im", "ls_channel_sum", "ls_count_mismatches", "ls_square_sum", "ls_hold",
                        "ls_grouped_conv", "ls_grouped_conv_bwd_input",
                        "ls_grouped_conv_bwd_weight", "ls_index_put", "ls_cumsum", "ls_scatter", "ls_widen_half", "ls_narrow_half",
                        "ls_add_channel_bias_half", "ls_channel_sum_half", "ls_sort_lines"})
    helpers_[k] = helpers.function(k);
}

void CudaExecutable::bind(const std::vector<Tensor>& inputs) {
  if (inputs.size() != p_.inputs.size())
    throw std::invalid_argument("the model takes " + std::to_string(p_.inputs.size()) + " inputs, got " + std::to_string(inputs.size()));
  buffers_.clear();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const LoopBuffer& b = p_.buffer(p_.inputs[i]);
    if (inputs[i].shape() != b.shape || inputs[i].dtype() != b.dtype)
      throw std::invalid_argument("input '" + b.name + "' must be " + std::string(dtype_short(b.dtype)) + shape_str(b.shape));
    DeviceBuffer buf(d_, static_cast<size_t>(inputs[i].nbytes()));
    if (inputs[i].nbytes()) d_.upload(buf.ptr(), inputs[i].data(), static_cast<size_t>(inputs[i].nbytes()));
    buffers_.emplace(b.name, std::move(buf));
  }
  auto device = [&](const std::string& name) -> DevicePtr {
    auto it = buffers_.find(name);
    if (it == buffers_.end()) it = buffers_.emplace(name, DeviceBuffer(d_, static_cast<size_t>(p_.buffer(name).bytes()))).first;
    return it->second.ptr();
  };
  for (const auto& o : p_.outputs)
    if (!o.empty()) device(o);
  scratch_.clear();
  arg_values_.assign(g_.source.kernels.size(), {});
  arg_ptrs_.assign(g_.source.kernels.size(), {});
  for (size_t k = 0; k < g_.source.kernels.size(); ++k) {
    std::vector<DevicePtr>& v = arg_values_[k];
    for (const auto& a : g_.source.kernels[k].args) v.push_back(device(a));
    for (const auto& b : externs_[k] ? externs_[k]->ext.outputs : std::vector<std::string>{}) device(b);
    scratch_.emplace_back(d_, static_cast<size_t>(g_.launch[k].scratch_bytes));
    if (g_.launch[k].scratch_bytes) {
      d_.zero(scratch_.back().ptr(), static_cast<size_t>(g_.launch[k].scratch_bytes));
      v.push_back(scratch_.back().ptr());
    }
    for (DevicePtr& x : v) arg_ptrs_[k].push_back(&x);
    if (functions_[k])
      for (long long& x : sizes_) arg_ptrs_[k].push_back(&x);
  }
  bound_ = true;  // (a model of no kernels, its outputs constants, is bound too: arg_ptrs_ is empty)
}

void CudaExecutable::step(size_t k) {
  if (progress_) {
    progress_[0].store(static_cast<int64_t>(k), std::memory_order_relaxed);
    progress_[1].store(++started_, std::memory_order_relaxed);
  }
  if (functions_[k]) {
    const CudaLaunch& l = g_.launch[k];
    return d_.launch(functions_[k], l.grid, l.block, arg_ptrs_[k].data(), g_.source.kernels[k].name.c_str());
  }
  if (!externs_[k]) return;  // an epilogue: it ran inside the GEMM template before it
  try {
    if (how[k] == "cuBLAS" || how[k].rfind("cuBLASLt", 0) == 0) cublas_extern(k);
    else if (how[k] == "cuFFT") fft_extern(k);
    else if (how[k].rfind("host (", 0) == 0) host_extern(k);
    else if (how[k] == "attention kernel" || how[k] == "flash attention kernel" || how[k] == "attention (cuBLAS)") attention_extern(k);
    else if (how[k].rfind("flash attention kernel (", 0) == 0 || how[k].rfind("cuDNN attention (", 0) == 0) attention_extern(k);
    else device_extern(k);
  } catch (const std::exception& e) {
    throw std::runtime_error("extern kernel " + externs_[k]->ext.op->name + " (" + externs_[k]->graph_node + "): " + e.what());
  }
}

struct CudaExecutable::Product {
  MatmulProblem problem;   // batch, sizes, layouts; bias: a per-column bias cuBLASLt adds
  DevicePtr a = 0, b = 0, bias = 0, y = 0;
  float alpha = 1.f, beta = 0.f;
  bool lt = true;          // cuBLASLt can run it as `problem` (no bias, or a per-column one added unscaled)
  Shape bias_shape;        // addmm's bias, as the call sees it
};

CudaExecutable::Product CudaExecutable::product(size_t k) const {
  const ExternCall& c = externs_.at(k)->ext;
  auto operand = [&](size_t arg) {
    const size_t i = static_cast<size_t>(c.args.at(arg).node);
    return std::make_pair(buffers_.at(c.inputs.at(i)).ptr(), i < c.shapes.size() ? c.shapes[i] : p_.buffer(c.inputs[i]).shape);
  };
  Product m;
  m.y = buffers_.at(c.outputs.at(0)).ptr();
  MatmulProblem& p = m.problem;
  p.dtype = p_.buffer(c.outputs.at(0)).dtype;
  if (c.op == &op::bmm()) {
    const auto [a, as] = operand(0);
    const auto [b, bs] = operand(1);
    p.ta = transposed_operand(c, 0), p.tb = transposed_operand(c, 1);
    p.batch = as[0], p.M = as[p.ta ? 2 : 1], p.K = as[p.ta ? 1 : 2], p.N = bs[p.tb ? 1 : 2];
    p.stride_a = p.M * p.K, p.stride_b = p.K * p.N, p.stride_c = p.M * p.N;
    m.a = a, m.b = b;
    return m;
  }
  const bool addmm = c.op == &op::addmm();
  const size_t ia = addmm ? 1 : 0, ib = addmm ? 2 : 1;
  const auto [a, as] = operand(ia);
  const auto [b, bs] = operand(ib);
  p.ta = transposed_operand(c, ia), p.tb = transposed_operand(c, ib);
  p.M = as[p.ta ? 1 : 0], p.K = as[p.ta ? 0 : 1], p.N = bs[p.tb ? 0 : 1];
  m.a = a, m.b = b;
  if (addmm) {
    const auto [bias, bias_shape] = operand(0);
    m.bias = bias, m.bias_shape = bias_shape;
    m.beta = static_cast<float>(c.args[3].number());
    m.alpha = static_cast<float>(c.args[4].number());
    // A bias per column, unscaled: cuBLASLt adds it in the product's epilogue.
    const bool row_vector = bias_shape.size() == 1 ? bias_shape[0] == p.N : bias_shape.size() == 2 && bias_shape[0] == 1 && bias_shape[1] == p.N;
    p.bias = m.lt = row_vector && c.args[3].number() == 1.0;
  }
  return m;
}

void CudaExecutable::cublas_extern(size_t k) {
  const Product m = product(k);
  const MatmulProblem& p = m.problem;
  Cublas& blas = *blas_;
  const auto chosen = algorithms_.find(k);
  if (p.dtype != DType::f32) {  // half: cuBLASLt only (cuda_extern_how chose it for what it can run)
    if (!m.lt || !blas.gemm_lt(p, chosen != algorithms_.end() ? &chosen->second : nullptr, m.alpha, m.a, m.b, m.bias, m.y))
      throw std::runtime_error("cuBLASLt has no algorithm for " + p.text());
    return;
  }
  if (chosen != algorithms_.end() && m.lt && blas.gemm_lt(p, &chosen->second, m.alpha, m.a, m.b, m.bias, m.y)) return;
  if (p.batch > 1 || externs_[k]->ext.op == &op::bmm())
    return blas.sgemm(p.batch, p.M, p.N, p.K, 1.f, m.a, p.ta, p.stride_a, m.b, p.tb, p.stride_b, 0.f, m.y, p.stride_c);
  if (p.bias && blas.gemm_bias(p.M, p.N, p.K, m.alpha, m.a, p.ta, m.b, p.tb, m.bias, m.y)) return;
  float alpha = 1.f, beta = 0.f;
  if (externs_[k]->ext.op == &op::addmm()) {
    // Broadcast the bias into C, then C = alpha * A @ B + beta * C.
    const Shape& bias_shape = m.bias_shape;
    long long MM = p.M, NN = p.N, row_stride = bias_shape.size() == 2 ? bias_shape[1] : 0;
    int per_row = bias_shape.size() == 2 && bias_shape[0] != 1, per_col = !bias_shape.empty() && bias_shape.back() != 1;
    DevicePtr yy = m.y, bb = m.bias;
    void* params[] = {&yy, &bb, &MM, &NN, &per_row, &per_col, &row_stride};
    d_.launch(bias_kernel_, (p.M * p.N + 255) / 256, 256, params, "ls_broadcast_bias");
    beta = m.beta;
    alpha = m.alpha;
  }
  blas.sgemm(1, p.M, p.N, p.K, alpha, m.a, p.ta, 0, m.b, p.tb, 0, beta, m.y, 0);
}

std::optional<MatmulProblem> CudaExecutable::matmul_problem(size_t k) const {
  if (how.at(k) != "cuBLAS" && how[k].rfind("cuBLASLt", 0) != 0) return std::nullopt;
  if (!bound_) throw std::logic_error("the inputs are not bound yet (run or benchmark first)");
  const Product m = product(k);
  if (!m.lt) return std::nullopt;
  return m.problem;
}

void CudaExecutable::choose_matmul(size_t k, const MatmulAlgorithm* algo) {
  if (how.at(k) != "cuBLAS" && how[k].rfind("cuBLASLt", 0) != 0) throw std::logic_error("kernel " + std::to_string(k) + " is no matrix multiply");
  if (algo) {
    algorithms_[k] = *algo;
    how[k] = "cuBLASLt: " + algo->text;
  } else {
    algorithms_.erase(k);
    const DType t = p_.buffer(externs_.at(k)->ext.outputs.at(0)).dtype;
    how[k] = t == DType::f32 ? "cuBLAS" : "cuBLASLt (" + std::string(dtype_torch(t).substr(6)) + ", tensor cores)";
  }
}

void CudaExecutable::run_step_alone(size_t k) {
  if (!bound_) throw std::logic_error("the inputs are not bound yet (run or benchmark first)");
  step(k);
  try {
    d_.synchronize();
  } catch (const std::exception& e) {
    throw std::runtime_error("kernel " + g_.source.kernels[k].name + " failed on the GPU: " + e.what());
  }
}

double CudaExecutable::time_step_alone(size_t k, const TimingOptions& o) {
  return median_between_events([&] { step(k); }, o);
}

// The GPU as runtime_cuda.h's library calls see it, for library call k: the helper and attention
// kernels by name, cuBLAS, and k's scratch memory, kept between runs (a captured graph replays
// its addresses).
struct CudaExecutable::Calls {
  CudaExecutable& e;
  size_t k;
  void helper_launch(const std::string& kernel, long long grid, int block, void** params, unsigned shared = 0) {
    e.d_.launch(e.helpers_.at(kernel), grid, block, params, kernel.c_str(), shared);
  }
  long long grid_for(long long total) const { return ls::grid_for(total); }
  void sgemm(long long batch, long long M, long long N, long long K, float alpha, DevicePtr A, bool ta, long long sa, DevicePtr B, bool tb,
             long long sb, float beta, DevicePtr C, long long sc) {
    e.blas_->sgemm(batch, M, N, K, alpha, A, ta, sa, B, tb, sb, beta, C, sc);
  }
  bool gemm_bias(long long M, long long N, long long K, float alpha, DevicePtr A, bool ta, DevicePtr B, bool tb, DevicePtr bias, DevicePtr C) {
    return e.blas_->gemm_bias(M, N, K, alpha, A, ta, B, tb, bias, C);
  }
  DevicePtr scratch(size_t slot, size_t bytes) {
    std::vector<DeviceBuffer>& ws = e.call_ws_[k];
    if (ws.size() <= slot) ws.resize(slot + 1);
    if (ws[slot].bytes() < bytes) ws[slot] = DeviceBuffer(e.d_, bytes);
    return ws[slot].ptr();
  }
  void dnn_conv(const lsrt::cuda::Conv& c, int type, int pass, DevicePtr a, DevicePtr b, DevicePtr out) {
    const ConvShape s{c.N, c.C, c.H, c.W, c.O, c.KH, c.KW, c.OH, c.OW, c.G, c.sh, c.sw, c.ph, c.pw, c.dh, c.dw};
    const DType t = type == 0 ? DType::f32 : type == 1 ? DType::bf16 : DType::f16;
    const ConvPass p = pass == 0 ? ConvPass::forward : pass == 1 ? ConvPass::grad_input : ConvPass::grad_filter;
    // One workspace for every cuDNN call of the model (they run one after another on one stream),
    // of the largest size the constructor's plans need, made at the first call.
    if (e.dnn_workspace_.bytes() < e.dnn_workspace_bytes_) e.dnn_workspace_ = DeviceBuffer(e.d_, e.dnn_workspace_bytes_);
    e.dnn_->run(s, t, p, a, b, out, e.dnn_workspace_.ptr());
  }
};

// Convolution (forward and backward), max pooling and cat: the prelude's helper kernels and
// cuBLAS, as runtime_cuda.h makes them.
void CudaExecutable::device_extern(size_t k) {
  const ExternCall& c = externs_[k]->ext;
  Calls g{*this, k};
  auto in = [&](size_t arg) { return buffers_.at(c.inputs.at(static_cast<size_t>(c.args.at(arg).node))).ptr(); };
  auto out = [&](size_t i) { return buffers_.at(c.outputs.at(i)).ptr(); };
  if (c.op == &op::cat()) {
    const Shape& ys = p_.buffer(c.outputs[0]).shape;
    int64_t dim = c.args[1].i;
    if (dim < 0) dim += static_cast<int64_t>(ys.size());
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= ys[d];
    for (int64_t d = dim + 1; d < static_cast<int64_t>(ys.size()); ++d) inner *= ys[d];
    const int64_t per_word = 4 / dtype_size(p_.buffer(c.outputs[0]).dtype);  // halves go in pairs (cuda_extern_how)
    long long at = 0;
    for (const Arg& a : c.args[0].list) {
      const LoopBuffer& b = p_.buffer(c.inputs.at(static_cast<size_t>(a.node)));
      const long long src_row = numel_of(b.shape) / std::max<int64_t>(outer, 1) / per_word;
      if (src_row == 0) continue;
      lsrt::cuda::copy_rows(g, out(0), buffers_.at(b.name).ptr(), outer, src_row, ys[dim] * inner / per_word, at);
      at += src_row;
    }
    return;
  }
  if (how[k] == "index_put kernel") {  // the tensors of its index list, in order
    const lsrt::cuda::IndexPut ip = *cuda_index_put(p_, c);
    DevicePtr idx[4] = {0, 0, 0, 0};
    size_t j = 0;
    for (const Arg& a : c.args[1].list)
      if (a.is_node()) idx[j++] = buffers_.at(c.inputs.at(static_cast<size_t>(a.node))).ptr();
    return ip.run(g, in(0), idx, in(2), out(0), extern_faults_.ptr());
  }
  if (how[k] == "cumsum kernel") return cuda_cumsum(p_, c)->run(g, in(0), out(0));
  if (how[k] == "sort kernel") return cuda_sort(p_, c)->run(g, in(0), out(0), out(1));
  if (how[k] == "scatter kernel")
    return cuda_scatter(p_, c)->run(g, in(0), in(2), c.args[3].is_node() ? in(3) : 0, out(0), extern_faults_.ptr());
  if (c.op == &op::max_pool2d_with_indices())  // the indices, where not wanted, into scratch
    return cuda_max_pool(p_, c).run(g, in(0), out(0), c.outputs.size() > 1 ? out(1) : 0);
  const lsrt::cuda::Conv conv = cuda_conv(p_, c);
  const DType half = one_half_type(p_, c);
  const int type = half == DType::bf16 ? 1 : half == DType::f16 ? 2 : 0;
  const bool dnn = how[k].rfind("cuDNN", 0) == 0;
  if (dnn && c.op == &op::convolution()) return conv.run_dnn(g, type, in(0), in(1), c.args[2].is_node() ? in(2) : 0, out(0));
  if (c.op == &op::convolution() && half != DType::f32)
    return conv.run_half(g, in(0), in(1), c.args[2].is_node() ? in(2) : 0, out(0), half == DType::bf16);
  if (c.op == &op::convolution()) return conv.run(g, in(0), in(1), c.args[2].is_node() ? in(2) : 0, out(0));
  // convolution_backward(grad_y, x, w, ...): the gradients its output mask wants
  const auto mask = c.args[10].list;
  auto grad = [&](size_t i) -> DevicePtr {
    const bool wanted = i >= mask.size() || mask[i].b;
    return wanted && i < c.outputs.size() && !c.outputs[i].empty() && p_.buffer(c.outputs[i]).bytes() > 0 ? out(i) : 0;
  };
  if (dnn) return conv.backward_dnn(g, type, in(0), in(1), in(2), grad(0), grad(1), grad(2));
  if (half != DType::f32) return conv.backward_half(g, in(0), in(1), in(2), grad(0), grad(1), grad(2), half == DType::bf16);
  conv.backward(g, in(0), in(1), in(2), grad(0), grad(1), grad(2));
}

// Attention (runtime_cuda.h): the prelude's kernels in the attention module
// (GeneratedCuda::attention_source), fused (LS_ATTENTION) or, for long sequences, tiled
// (LS_FLASH_ATTENTION), operands read in place through their strides; or, for other head sizes,
// operands packed per (batch, head), the scores in scratch memory, batched cuBLAS products.
void CudaExecutable::attention_extern(size_t k) {
  const ExternCall& c = externs_[k]->ext;
  Calls g{*this, k};
  const AttnGeom geom = attn_geom(c);
  const lsrt::cuda::Attention a{geom.B, geom.H, geom.L, geom.S, geom.E, geom.Ev, geom.causal, static_cast<float>(geom.scale),
                                how[k] == "attention kernel"         ? lsrt::cuda::Attention::fused
                                : how[k] == "flash attention kernel" ? lsrt::cuda::Attention::tiled
                                                                     : lsrt::cuda::Attention::cublas};
  auto ptr = [&](size_t arg) { return buffers_.at(c.inputs.at(static_cast<size_t>(c.args.at(arg).node))).ptr(); };
  auto view = [&](size_t arg) {
    const size_t i = static_cast<size_t>(c.args.at(arg).node);
    return cuda_attn_view(attn_operand(c, i, c.shapes.at(i)));
  };
  auto out = [&](size_t i) { return buffers_.at(c.outputs.at(i)).ptr(); };
  if (how[k].rfind("cuDNN attention (", 0) == 0) {  // cuDNN's fused flash attention
    const auto att = cuda_dnn_attention(p_, c);
    if (!att) throw std::runtime_error("attention call '" + externs_[k]->name + "' no longer fits cuDNN's attention");
    if (dnn_workspace_.bytes() < dnn_workspace_bytes_) dnn_workspace_ = DeviceBuffer(d_, dnn_workspace_bytes_);
    auto at = [&](size_t arg, size_t j) { return ptr(arg) + static_cast<DevicePtr>(att->offsets.at(j) * 2); };
    if (!is_attention_backward(c.op))
      return dnn_->sdpa_forward(att->shape, att->dtype, at(0, 0), at(1, 1), at(2, 2), out(0) + static_cast<DevicePtr>(att->offsets.at(3) * 2), out(1),
                                dnn_workspace_.ptr());
    return dnn_->sdpa_backward(att->shape, att->dtype, at(0, 0), at(1, 1), at(2, 2), at(3, 3), at(5, 4), ptr(6), out(0), out(1), out(2),
                               dnn_workspace_.ptr());
  }
  if (how[k].rfind("flash attention kernel (", 0) == 0) {  // bf16/f16 on the tensor cores
    const FlashHalf h = flash_half(p_, c);
    if (!is_attention_backward(c.op))
      return h.forward(g, ptr(0), view(0), ptr(1), view(1), ptr(2), view(2), out(0),
                       cuda_attn_view(attn_output(geom, attention_output_heads_inner(c))), out(1));
    return h.backward(g, ptr(0), view(0), ptr(1), view(1), ptr(2), view(2), ptr(3), view(3), ptr(5), view(5), ptr(6), out(0), out(1), out(2));
  }
  if (!is_attention_backward(c.op))
    return a.forward(g, ptr(0), view(0), ptr(1), view(1), ptr(2), view(2), out(0),
                     cuda_attn_view(attn_output(geom, attention_output_heads_inner(c))), out(1));
  a.backward(g, ptr(0), view(0), ptr(1), view(1), ptr(2), view(2), ptr(3), view(3), ptr(5), view(5), ptr(6), out(0), out(1), out(2));
}

// The FFTs (exec/fft_cuda.h): the call's steps, cuFFT's transforms between the gathers and the
// scaling of the module's helper kernels, scratch kept per call between runs.
void CudaExecutable::fft_extern(size_t k) {
  const ExternCall& c = externs_[k]->ext;
  const FftPlan& plan = fft_plans_.at(k);
  std::vector<DeviceBuffer>& ws = call_ws_[k];
  if (ws.size() < plan.scratch_bytes.size()) ws.resize(plan.scratch_bytes.size());
  for (size_t i = 0; i < plan.scratch_bytes.size(); ++i)
    if (ws[i].bytes() < static_cast<size_t>(plan.scratch_bytes[i])) ws[i] = DeviceBuffer(d_, static_cast<size_t>(plan.scratch_bytes[i]));
  auto slot = [&](int s) -> DevicePtr {
    if (s == 0) return buffers_.at(c.inputs.at(static_cast<size_t>(c.args.at(0).node))).ptr();
    if (s == 1) return buffers_.at(c.outputs.at(0)).ptr();
    return ws.at(static_cast<size_t>(s - 2)).ptr();
  };
  // FftGeometry of exec/fft_cuda_kernels.h
  struct Geometry {
    long long shape[kFftMaxRank], stride[kFftMaxRank], limit[kFftMaxRank];
    long long offset;
    int rank;
  };
  for (const FftStep& s : plan.steps) {
    DevicePtr y = slot(s.dst), x = slot(s.src);
    if (s.kind == FftStep::Kind::transform) {
      fft_->execute(s.transform, x, y, s.forward);
    } else if (s.kind == FftStep::Kind::real_ends) {
      long long lines = s.count, n = s.transform.n.back();
      int f64 = s.f64;
      void* params[] = {&y, &lines, &n, &f64};
      d_.launch(helpers_.at("ls_fft_real_ends"), grid_for(2 * lines), 256, params, "ls_fft_real_ends");
    } else if (s.kind == FftStep::Kind::scale) {
      long long n = s.count;
      double f = s.factor;
      int f64 = s.f64;
      void* params[] = {&y, &n, &f, &f64};
      d_.launch(helpers_.at("ls_fft_scale"), grid_for(n), 256, params, "ls_fft_scale");
    } else {
      Geometry g{};
      g.rank = static_cast<int>(s.shape.size());
      g.offset = s.offset;
      for (size_t d = 0; d < s.shape.size(); ++d) g.shape[d] = s.shape[d], g.stride[d] = s.strides[d], g.limit[d] = s.limits[d];
      long long n = numel_of(s.shape);
      int last = s.widen ? s.bytes == 16 : s.bytes;  // widen: f64; gather: the element's bytes
      void* params[] = {&y, &x, &g, &n, &last};
      const char* name = s.widen ? "ls_fft_widen" : "ls_fft_gather";
      d_.launch(helpers_.at(name), grid_for(n), 256, params, name);
    }
  }
}

void CudaExecutable::host_extern(size_t k) {
  const ExternCall& c = externs_[k]->ext;
  auto download = [&](const std::string& name) {
    const LoopBuffer& b = p_.buffer(name);
    Tensor t(b.dtype, b.shape);
    if (t.nbytes()) d_.download(t.data(), buffers_.at(name).ptr(), static_cast<size_t>(t.nbytes()));
    return t;
  };
  const RefInputs in = extern_inputs(c, download);
  std::vector<Tensor> outs;
  for (const auto& o : c.outputs) outs.emplace_back(p_.buffer(o).dtype, p_.buffer(o).shape);
  run_extern(c, in, outs);
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i].nbytes()) d_.upload(buffers_.at(c.outputs[i]).ptr(), outs[i].data(), static_cast<size_t>(outs[i].nbytes()));
}

std::vector<Tensor> CudaExecutable::run(const std::vector<Tensor>& inputs) {
  run_bound(inputs);
  return download_outputs();
}

void CudaExecutable::run_bound(const std::vector<Tensor>& inputs) {
  bind(inputs);
  for (size_t k = 0; k < functions_.size(); ++k) {
    const std::string& name = g_.source.kernels[k].name;
    try {
      step(k);
      d_.synchronize();
    } catch (const CudaFault& e) {  // the context died with it; the driver has reset the device
      throw KernelFault("kernel " + name + " faulted: " + e.fault + "; " + after_fault, name);
    } catch (const std::exception& e) {
      if (std::string(e.what()).find("cuCtxSynchronize") == std::string::npos) throw;  // the step's own error
      throw std::runtime_error("kernel " + name + " failed on the GPU: " + e.what());
    }
    check_index_faults(k);
  }
}

// As CpuExecutable::check_index_faults: an index tensor's element out of range, recorded by the
// kernel (generated code reads element 0 instead; ls_index_put and ls_scatter skip the element),
// reported naming the kernel, the node, the value, the size.
void CudaExecutable::check_index_faults(size_t k) {
  if (how[k] == "index_put kernel" || how[k] == "scatter kernel") {  // the kernel's record: flag, value, size, index tensor or dim
    int64_t f[4] = {0, 0, 0, 0};
    d_.download(f, extern_faults_.ptr(), sizeof f);
    if (!f[0]) return;
    d_.zero(extern_faults_.ptr(), sizeof f);
    std::vector<int64_t> dims;
    if (how[k] == "index_put kernel") cuda_index_put(p_, externs_[k]->ext, &dims);
    const int64_t dim = f[3] >= 0 && f[3] < static_cast<int64_t>(dims.size()) ? dims[static_cast<size_t>(f[3])] : f[3];
    throw std::out_of_range("kernel " + g_.source.kernels[k].name + " (" + externs_[k]->name + ", from node '" + externs_[k]->graph_node +
                            "'): index " + std::to_string(f[1]) + " is out of bounds for dimension " + std::to_string(dim) +
                            " with size " + std::to_string(f[2]));
  }
  if (!index_faults_) return;
  int64_t f[4] = {0, 0, 0, 0};
  d_.download(f, index_faults_, sizeof f);
  if (!f[0]) return;
  d_.zero(index_faults_, sizeof f);
  throw std::out_of_range(index_fault_message(p_, g_.source.kernels[k].name, f));
}

// Kernel k's arguments for another version of it: its buffers, the version's scratch, the sizes.
struct CudaExecutable::AloneArgs {
  std::vector<DevicePtr> values;
  std::vector<void*> ptrs;
  std::unique_ptr<DeviceBuffer> scratch;
};

void CudaExecutable::alone_args(size_t k, const CudaLaunch& l, AloneArgs& a) { args_of(g_.source.kernels.at(k).args, l, a); }

void CudaExecutable::args_of(const std::vector<std::string>& buffers, const CudaLaunch& l, AloneArgs& a) {
  if (!bound_) throw std::logic_error("the inputs are not bound yet (run or benchmark first)");
  for (const auto& b : buffers) a.values.push_back(buffers_.at(b).ptr());
  if (l.scratch_bytes) {
    a.scratch = std::make_unique<DeviceBuffer>(d_, static_cast<size_t>(l.scratch_bytes));
    d_.zero(a.scratch->ptr(), static_cast<size_t>(l.scratch_bytes));
    a.values.push_back(a.scratch->ptr());
  }
  for (DevicePtr& x : a.values) a.ptrs.push_back(&x);
  for (long long& x : sizes_) a.ptrs.push_back(&x);
}

void CudaExecutable::run_alone(size_t k, void* f, const CudaLaunch& l) {
  AloneArgs a;
  alone_args(k, l, a);
  d_.launch(f, l.grid, l.block, a.ptrs.data(), g_.source.kernels[k].name.c_str());
  try {
    d_.synchronize();
  } catch (const std::exception& e) {
    throw std::runtime_error("kernel " + g_.source.kernels[k].name + " failed on the GPU: " + e.what());
  }
}

double CudaExecutable::time_alone(size_t k, void* f, const CudaLaunch& l, const TimingOptions& o) {
  AloneArgs a;
  alone_args(k, l, a);
  const char* name = g_.source.kernels[k].name.c_str();
  return median_between_events([&] { d_.launch(f, l.grid, l.block, a.ptrs.data(), name); }, o);
}

void CudaExecutable::run_function(void* f, const CudaLaunch& l, const std::vector<std::string>& buffers, const std::string& name) {
  AloneArgs a;
  args_of(buffers, l, a);
  d_.launch(f, l.grid, l.block, a.ptrs.data(), name.c_str());
  try {
    d_.synchronize();
  } catch (const std::exception& e) {
    throw std::runtime_error(name + " failed on the GPU: " + e.what());
  }
}

double CudaExecutable::time_function(void* f, const CudaLaunch& l, const std::vector<std::string>& buffers, const std::string& name,
                                     const TimingOptions& o) {
  AloneArgs a;
  args_of(buffers, l, a);
  return median_between_events([&] { d_.launch(f, l.grid, l.block, a.ptrs.data(), name.c_str()); }, o);
}

double CudaExecutable::median_between_events(const std::function<void()>& launch, const TimingOptions& o) {
  for (int w = 0; w < o.warmup; ++w) launch();
  void* e0 = d_.event();
  void* e1 = d_.event();
  std::vector<double> times;
  const auto start = std::chrono::steady_clock::now();
  auto spent = [&] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(); };
  for (int run = 0; run < o.max_runs && (run < o.min_runs || spent() < o.budget_ms); ++run) {
    d_.record(e0);
    launch();
    d_.record(e1);
    times.push_back(d_.elapsed_ms(e0, e1));
  }
  d_.destroy_event(e0);
  d_.destroy_event(e1);
  return median_of(times);
}

namespace {
// The helpers' float kinds (cuda_helpers.h ls_float_of_kind): 0 float32, 1 bfloat16, 2 float16.
int float_kind(const std::string& what, const std::string& buffer, DType t) {
  if (t == DType::f32) return 0;
  if (t == DType::bf16) return 1;
  if (t == DType::f16) return 2;
  throw std::invalid_argument(what + ": " + buffer + " is " + std::string(dtype_torch(t)) + ", not a float type");
}
}  // namespace

long long CudaExecutable::mismatches(const std::string& buffer, DevicePtr expected, double rms, Tolerance tol) {
  const LoopBuffer& b = p_.buffer(buffer);
  int kind = float_kind("mismatches", buffer, b.dtype);
  if (kind != 0) {  // a half buffer: at least its type's tolerance (two roundings of one sum may differ by an ulp)
    const Tolerance t = tolerance_for(b.dtype);
    tol.rtol = std::max(tol.rtol, t.rtol), tol.atol = std::max(tol.atol, t.atol);
  }
  DeviceBuffer count(d_, 4);
  d_.zero(count.ptr(), 4);
  DevicePtr a = buffers_.at(buffer).ptr(), e = expected, c = count.ptr();
  long long n = numel_of(b.shape);
  void* params[] = {&a, &e, &n, &tol.atol, &tol.rtol, &rms, &c, &kind};
  d_.launch(helpers_.at("ls_count_mismatches"), grid_for(n), 256, params, "ls_count_mismatches");
  unsigned got = 0;
  d_.synchronize();
  d_.download(&got, c, 4);
  return got;
}

double CudaExecutable::rms(const std::string& buffer) {
  const LoopBuffer& b = p_.buffer(buffer);
  int kind = float_kind("rms", buffer, b.dtype);
  DeviceBuffer acc(d_, 16);
  d_.zero(acc.ptr(), 16);
  DevicePtr a = buffers_.at(buffer).ptr(), sum = acc.ptr(), finite = acc.ptr() + 8;
  long long n = numel_of(b.shape);
  void* params[] = {&a, &n, &sum, &finite, &kind};
  d_.launch(helpers_.at("ls_square_sum"), grid_for(n), 256, params, "ls_square_sum");
  struct {
    double sum;
    unsigned long long finite;
  } got{};
  d_.synchronize();
  d_.download(&got, acc.ptr(), 16);
  return got.finite ? std::sqrt(got.sum / static_cast<double>(got.finite)) : 0.0;
}

Tensor CudaExecutable::download(const std::string& buffer) {
  const LoopBuffer& b = p_.buffer(buffer);
  Tensor t(b.dtype, b.shape);
  if (t.nbytes()) d_.download(t.data(), buffers_.at(buffer).ptr(), static_cast<size_t>(t.nbytes()));
  return t;
}

std::vector<Tensor> CudaExecutable::download_outputs() {
  std::vector<Tensor> outs;
  for (const auto& o : p_.outputs) {
    if (o.empty()) {
      outs.emplace_back();
      continue;
    }
    const LoopBuffer& b = p_.buffer(o);
    Tensor t(b.dtype, b.shape);
    if (t.nbytes()) d_.download(t.data(), buffers_.at(o).ptr(), static_cast<size_t>(t.nbytes()));
    outs.push_back(t);
  }
  return outs;
}

std::string CudaExecutable::capture_graph() {
  graph_.reset();
  if (!bound_) return "the inputs are not bound yet (run or benchmark first)";
  for (size_t k = 0; k < how.size(); ++k)
    if (how[k].rfind("host (", 0) == 0)
      return "kernel " + g_.source.kernels[k].name + " runs on the " + how[k] + ", which a graph cannot hold";
  if (const std::string why = d_.graphs_unsupported(); !why.empty()) return why;
  d_.synchronize();
  try {
    graph_ = std::make_unique<CudaGraph>(d_, [this] {
      for (size_t k = 0; k < functions_.size(); ++k) step(k);
    });
  } catch (const std::exception& e) {
    graph_.reset();
    return std::string("capture failed: ") + e.what();
  }
  return {};
}

size_t CudaExecutable::graph_nodes() const { return graph_ ? graph_->nodes() : 0; }

// The watchdog's count of a followed run moved on where no step() launches: before each graph
// replay, as each timed kernel is seen finished (progress[0] keeps the last kernel launched). A
// worker's parent stops a kernel whose count stood still past the limit; so each replay, each
// kernel of a timed run, has the limit to itself.
static void moved_on(std::atomic<int64_t>* progress, int64_t& started) {
  if (progress) progress[1].store(++started, std::memory_order_relaxed);
}

std::vector<Tensor> CudaExecutable::replay_graph() {
  if (!graph_) throw std::logic_error("no CUDA graph captured");
  moved_on(progress_, started_);
  graph_->replay();
  graph_->synchronize();
  return download_outputs();
}

Timings CudaExecutable::benchmark_graph(const TimingOptions& o) {
  if (!graph_) throw std::logic_error("no CUDA graph captured");
  for (int w = 0; w < o.warmup; ++w) {
    moved_on(progress_, started_);
    graph_->replay();
  }
  graph_->synchronize();
  void* a = d_.event();
  void* b = d_.event();
  std::vector<double> total;
  const auto start = std::chrono::steady_clock::now();
  auto spent = [&] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(); };
  for (int run = 0; run < o.max_runs && (run < o.min_runs || spent() < o.budget_ms / 2); ++run) {
    moved_on(progress_, started_);
    graph_->timed_replay(a, b);
    total.push_back(d_.elapsed_ms(a, b));
  }
  d_.destroy_event(a);
  d_.destroy_event(b);
  return timings_of({}, total);
}

Timings CudaExecutable::benchmark(const std::vector<Tensor>& inputs, const TimingOptions& o) {
  bind(inputs);
  return benchmark_bound(o);
}

Timings CudaExecutable::benchmark_bound(const TimingOptions& o) {
  if (!bound_) throw std::logic_error("the inputs are not bound yet (run or benchmark first)");
  const size_t n = functions_.size();
  for (int w = 0; w < o.warmup; ++w)
    for (size_t k = 0; k < n; ++k) {
      step(k);
      if (progress_) d_.synchronize();  // followed: each warm-up kernel has the watchdog's limit to itself
    }
  d_.synchronize();
  std::vector<void*> ev(n + 1);
  for (auto& e : ev) e = d_.event();
  std::vector<std::vector<double>> per(n);
  std::vector<double> total, host;
  std::vector<std::vector<double>> host_per(n);
  // Per kernel: an event between every two kernels, all queued behind ls_hold while it waits
  // longer than the host takes to issue them (twice the last run's issue time), so each kernel
  // starts as the one before it ends: the device's time, as a profiler measures it.
  const auto start = std::chrono::steady_clock::now();
  auto spent = [&] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(); };
  long long hold_ns = 20000 + 20000 * static_cast<long long>(n);
  for (int run = 0; run < o.max_runs && (run < o.min_runs || spent() < o.budget_ms / 2); ++run) {
    void* hold_params[] = {&hold_ns};
    d_.launch(helpers_.at("ls_hold"), 1, 1, hold_params, "ls_hold");
    const auto issue = std::chrono::steady_clock::now();
    d_.record(ev[0]);
    for (size_t k = 0; k < n; ++k) {
      step(k);
      d_.record(ev[k + 1]);
    }
    const double issue_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - issue).count();
    for (size_t k = 0; k < n; ++k) {
      per[k].push_back(d_.elapsed_ms(ev[k], ev[k + 1]));  // waits for kernel k
      moved_on(progress_, started_);
    }
    hold_ns = std::clamp<long long>(static_cast<long long>(2 * issue_ns) + 10000, 10000, 50000000);
  }
  // The whole model: back-to-back runs between two events, no events in between.
  const auto start2 = std::chrono::steady_clock::now();
  auto spent2 = [&] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start2).count(); };
  for (int run = 0; run < o.max_runs && (run < o.min_runs || spent2() < o.budget_ms / 2); ++run) {
    d_.record(ev[0]);
    const auto issue = std::chrono::steady_clock::now();
    auto before = issue;
    for (size_t k = 0; k < n; ++k) {
      step(k);
      const auto after = std::chrono::steady_clock::now();
      host_per[k].push_back(std::chrono::duration<double, std::milli>(after - before).count());
      before = after;
    }
    host.push_back(std::chrono::duration<double, std::milli>(before - issue).count());
    d_.record(ev[n]);
    total.push_back(d_.elapsed_ms(ev[0], ev[n]));
  }
  for (auto& e : ev) d_.destroy_event(e);
  Timings t = timings_of(per, total);
  std::sort(host.begin(), host.end());
  t.host_ms = host.empty() ? 0 : host[host.size() / 2];
  for (auto& h : host_per) t.host_kernel_ms.push_back(h.empty() ? 0 : median_of(h));
  return t;
}

}  // namespace ls
