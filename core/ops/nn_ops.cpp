// The op table's nn part: views, matrix multiply, convolution, pooling, normalization, softmax,
// attention, and the model-level ops torch.export keeps (linear, conv2d, layer_norm, ...), each
// with its schema, shape rule, reference kernel and decomposition towards Core ATen and prims.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "ops/builder.h"
#include "ops/op_table.h"

namespace ls {
namespace {

constexpr unsigned kAten = level::aten;
constexpr unsigned kCore = level::aten | level::core_aten;
constexpr unsigned kPrims = level::prims;

const TensorMeta& meta_of(const Graph& g, const Arg& a) { return g.nodes.at(a.node).meta(); }
TensorMeta like(const TensorMeta& in, DType dt, Shape shape) {
  TensorMeta m = TensorMeta::contiguous(dt, std::move(shape));
  m.device = in.device;
  return m;
}
[[noreturn]] void bad(const OpDef& op, const std::string& what) { throw std::invalid_argument(op.name + ": " + what); }


// ---------------------------------------------------------------------------------------------
// Normalization and softmax
// ---------------------------------------------------------------------------------------------

std::vector<TensorMeta> infer_layer_norm(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  const auto ns = a[1].ints();
  if (ns.size() > x.shape.size() || !std::equal(ns.begin(), ns.end(), x.shape.end() - static_cast<long>(ns.size())))
    bad(op, "normalized_shape " + shape_str(ns) + " does not end the input shape " + shape_str(x.shape));
  Shape stat(x.shape.begin(), x.shape.end() - static_cast<long>(ns.size()));
  stat.resize(x.shape.size(), 1);
  if (op.name == "aten.layer_norm.default") return {like(x, x.dtype, x.shape)};
  return {like(x, x.dtype, x.shape), like(x, x.dtype, stat), like(x, x.dtype, stat)};
}
std::vector<Tensor> ref_native_layer_norm(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  int64_t n = 1;
  for (int64_t d : a[1].ints()) n *= d;
  const int64_t rows = x.numel() / n;
  Tensor y(outs[0].dtype, outs[0].shape), mean(outs[1].dtype, outs[1].shape), rstd(outs[2].dtype, outs[2].shape);
  const double eps = a[4].number();
  for (int64_t r = 0; r < rows; ++r) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < n; ++i) m += x.get(r * n + i);
    m /= n;
    for (int64_t i = 0; i < n; ++i) v += (x.get(r * n + i) - m) * (x.get(r * n + i) - m);
    v /= n;
    const double rs = 1.0 / std::sqrt(v + eps);
    for (int64_t i = 0; i < n; ++i) {
      double o = (x.get(r * n + i) - m) * rs;
      if (a[2].is_node()) o *= in[2].get(i);
      if (a[3].is_node()) o += in[3].get(i);
      y.set(r * n + i, o);
    }
    mean.set(r, m);
    rstd.set(r, rs);
  }
  return {y, mean, rstd};
}
std::vector<Arg> decomp_layer_norm(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Arg r = b.call("aten.native_layer_norm.default", {a[0], a[1], a[2], a[3], a[4]});
  return {b.get(r, 0)};
}
// native_layer_norm -> mean, centred, variance, rsqrt, scale and shift (Core ATen ops).
std::vector<Arg> decomp_native_layer_norm(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Shape x = b.meta(a[0]).shape;
  const int64_t k = static_cast<int64_t>(a[1].ints().size()), r = static_cast<int64_t>(x.size());
  std::vector<int64_t> dims;
  for (int64_t d = r - k; d < r; ++d) dims.push_back(d);
  const Arg mean = b.call("aten.mean.dim", {a[0], Arg::of_ints(dims), Arg::of_bool(true)});
  const Arg diff = b.call("aten.sub.Tensor", {a[0], mean});
  const Arg var = b.call("aten.mean.dim", {b.call("aten.mul.Tensor", {diff, diff}), Arg::of_ints(dims), Arg::of_bool(true)});
  const Arg rstd = b.call("aten.rsqrt.default", {b.call("aten.add.Tensor", {var, a[4]})});
  Arg y = b.call("aten.mul.Tensor", {diff, rstd});
  if (a[2].is_node()) y = b.call("aten.mul.Tensor", {y, a[2]});
  if (a[3].is_node()) y = b.call("aten.add.Tensor", {y, a[3]});
  return {y, mean, rstd};
}

std::vector<TensorMeta> infer_batch_norm(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  if (x.shape.size() < 2) bad(op, "needs an input with a channel dimension");
  if (op.name == "aten.batch_norm.default") return {like(x, x.dtype, x.shape)};
  // As PyTorch's CUDA kernel reports them: the statistics used, one per channel.
  return {like(x, x.dtype, x.shape), like(x, x.dtype, {x.shape[1]}), like(x, x.dtype, {x.shape[1]})};
}
std::vector<Tensor> ref_batch_norm(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  const int64_t C = x.shape()[1], inner = x.numel() / (x.shape()[0] * C);
  const double eps = a[6].number();
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = (i / inner) % C;
    double v = (x.get(i) - in[3].get(c)) / std::sqrt(in[4].get(c) + eps);
    if (a[1].is_node()) v *= in[1].get(c);
    if (a[2].is_node()) v += in[2].get(c);
    y.set(i, v);
  }
  Tensor mean(outs[1].dtype, outs[1].shape), rstd(outs[2].dtype, outs[2].shape);
  for (int64_t c = 0; c < C; ++c) {
    mean.set(c, in[3].get(c));
    rstd.set(c, 1.0 / std::sqrt(in[4].get(c) + eps));
  }
  return {y, mean, rstd};
}
std::vector<Arg> decomp_batch_norm(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  if (a[5].b) bad(op, "training-mode batch norm is not supported yet (use the model in eval mode)");
  if (!a[3].is_node() || !a[4].is_node()) bad(op, "needs running statistics");
  const Arg r = b.call("aten._native_batch_norm_legit_no_training.default", {a[0], a[1], a[2], a[3], a[4], a[6], a[7]});
  return {b.get(r, 0)};
}
// (x - mean[c]) * rsqrt(var[c] + eps) * w[c] + b[c], with the per-channel vectors viewed as [C, 1, 1].
std::vector<Arg> decomp_batch_norm_legit(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Shape x = b.meta(a[0]).shape;
  Shape cshape(x.size() - 1, 1);
  cshape[0] = x[1];
  auto chan = [&](const Arg& v) { return b.call("aten.view.default", {v, Arg::of_ints(cshape)}); };
  const Arg rstd = b.call("aten.rsqrt.default", {b.call("aten.add.Tensor", {a[4], a[6]})});
  Arg y = b.call("aten.mul.Tensor", {b.call("aten.sub.Tensor", {a[0], chan(a[3])}), chan(rstd)});
  if (a[1].is_node()) y = b.call("aten.mul.Tensor", {y, chan(a[1])});
  if (a[2].is_node()) y = b.call("aten.add.Tensor", {y, chan(a[2])});
  return {y, a[3], rstd};
}

std::vector<TensorMeta> infer_same(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  if (op.name.find("softmax") != std::string::npos) wrap_dim(op, a[1].i, static_cast<int64_t>(x.shape.size()));
  return {like(x, x.dtype, x.shape)};
}
std::vector<Tensor> ref_softmax(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  const int64_t d = wrap_dim(op, a[1].i, x.dim());
  const int64_t n = x.shape()[d], inner = contiguous_strides(x.shape())[d], outer = x.numel() / (n * inner);
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double m = -std::numeric_limits<double>::infinity(), s = 0;
      for (int64_t k = 0; k < n; ++k) m = std::max(m, x.get((o * n + k) * inner + i));
      for (int64_t k = 0; k < n; ++k) s += std::exp(x.get((o * n + k) * inner + i) - m);
      for (int64_t k = 0; k < n; ++k) y.set((o * n + k) * inner + i, std::exp(x.get((o * n + k) * inner + i) - m) / s);
    }
  return {y};
}
std::vector<Arg> decomp_softmax_int(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  return {b.call("aten._softmax.default", {a[0], a[1], Arg::of_bool(false)})};
}
// _softmax -> amax, sub, exp, sum, div (the numerically safe form, as torch._decomp writes it).
std::vector<Arg> decomp_softmax(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Arg m = b.call("aten.amax.default", {a[0], Arg::of_ints({a[1].i}), Arg::of_bool(true)});
  const Arg e = b.call("aten.exp.default", {b.call("aten.sub.Tensor", {a[0], m})});
  const Arg s = b.call("aten.sum.dim_IntList", {e, Arg::of_ints({a[1].i}), Arg::of_bool(true)});
  return {b.call("aten.div.Tensor", {e, s})};
}

// ---------------------------------------------------------------------------------------------
// Attention
// ---------------------------------------------------------------------------------------------

std::vector<TensorMeta> infer_sdpa(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta &q = meta_of(g, a[0]), &k = meta_of(g, a[1]), &v = meta_of(g, a[2]);
  if (q.shape.size() < 3 || k.shape.size() != q.shape.size() || v.shape.size() != q.shape.size())
    bad(op, "query, key and value need the same rank (at least 3)");
  const size_t r = q.shape.size();
  if (q.shape[r - 1] != k.shape[r - 1] || k.shape[r - 2] != v.shape[r - 2]) bad(op, "key does not fit query or value");
  Shape out = q.shape;
  out[r - 1] = v.shape[r - 1];
  if (op.num_outputs == 1) return {like(q, q.dtype, out)};
  Shape lse(q.shape.begin(), q.shape.end() - 1);
  return {like(q, q.dtype, out), like(q, DType::f32, lse), like(q, DType::i64, {}), like(q, DType::i64, {})};
}
struct SdpaArgs { int mask = 3; int causal = 5; int scale = 6; };
SdpaArgs sdpa_args(const OpDef& op) {
  // efficient: (q, k, v, attn_bias, compute_log_sumexp, dropout_p, is_causal, *, scale)
  if (op.name == "aten._scaled_dot_product_efficient_attention.default") return {3, 6, 7};
  return {3, 5, 6};
}
std::vector<Tensor> ref_sdpa(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const SdpaArgs ix = sdpa_args(op);
  const Tensor &q = in[0], &k = in[1], &v = in[2];
  const size_t r = q.shape().size();
  const int64_t L = q.shape()[r - 2], E = q.shape()[r - 1], S = k.shape()[r - 2], Ev = v.shape()[r - 1];
  const int64_t B = q.numel() / (L * E);
  const bool causal = a[ix.causal].b;
  const double scale = a[ix.scale].is_none() ? 1.0 / std::sqrt(double(E)) : a[ix.scale].number();
  Tensor o(outs[0].dtype, outs[0].shape);
  Tensor lse(DType::f32, outs.size() > 1 ? outs[1].shape : Shape{B, L});
  std::vector<double> w(S);
  for (int64_t bb = 0; bb < B; ++bb)
    for (int64_t i = 0; i < L; ++i) {
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < S; ++j) {
        double s = 0;
        for (int64_t e = 0; e < E; ++e) s += q.get((bb * L + i) * E + e) * k.get((bb * S + j) * E + e);
        s *= scale;
        if (causal && j > i) s = -std::numeric_limits<double>::infinity();
        if (a[ix.mask].is_node()) s += in[ix.mask].get((i * S + j) % in[ix.mask].numel());
        w[j] = s;
        m = std::max(m, s);
      }
      double sum = 0;
      for (int64_t j = 0; j < S; ++j) sum += (w[j] = std::exp(w[j] - m));
      for (int64_t e = 0; e < Ev; ++e) {
        double acc = 0;
        for (int64_t j = 0; j < S; ++j) acc += w[j] * v.get((bb * S + j) * Ev + e);
        o.set((bb * L + i) * Ev + e, acc / sum);
      }
      lse.set(bb * L + i, m + std::log(sum));
    }
  if (op.num_outputs == 1) return {o};
  return {o, lse, Tensor(DType::i64, {}), Tensor(DType::i64, {})};
}
// softmax(q @ k^T * scale + mask) @ v through bmm, with the causal mask as a constant of the graph.
std::vector<Arg> decomp_sdpa(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const SdpaArgs ix = sdpa_args(op);
  if (op.name == "aten.scaled_dot_product_attention.default" && a[4].number() != 0.0)
    bad(op, "attention dropout is not supported");
  // No mask, same head count and float32: the fused attention kernel (its log-sum-exp kept for the
  // backward), as PyTorch dispatches to efficient attention.
  if (!a[ix.mask].is_node() && b.meta(a[0]).dtype == DType::f32 && b.meta(a[0]).shape.size() >= 3 &&
      b.meta(a[0]).shape == b.meta(a[1]).shape && b.meta(a[1]).shape == b.meta(a[2]).shape) {
    const Arg r = b.call("aten._scaled_dot_product_efficient_attention.default",
                         {a[0], a[1], a[2], Arg::none(), Arg::of_bool(true), Arg::of_real(0.0), a[ix.causal]},
                         {{"scale", a[ix.scale]}});
    return {b.get(r, 0)};
  }
  const Shape qs = b.meta(a[0]).shape, ks = b.meta(a[1]).shape, vs = b.meta(a[2]).shape;
  const size_t r = qs.size();
  const int64_t L = qs[r - 2], E = qs[r - 1], S = ks[r - 2], Ev = vs[r - 1];
  int64_t B = 1;
  for (size_t i = 0; i + 2 < r; ++i) B *= qs[i];
  const double scale = a[ix.scale].is_none() ? 1.0 / std::sqrt(double(E)) : a[ix.scale].number();
  const Arg q = b.call("aten.view.default", {a[0], Arg::of_ints({B, L, E})});
  const Arg kt = b.call("aten.permute.default", {b.call("aten.view.default", {a[1], Arg::of_ints({B, S, E})}), Arg::of_ints({0, 2, 1})});
  const Arg v = b.call("aten.view.default", {a[2], Arg::of_ints({B, S, Ev})});
  Arg s = b.call("aten.mul.Tensor", {b.call("aten.bmm.default", {q, kt}), Arg::of_real(scale)});
  if (a[ix.causal].b) {
    Tensor mask(DType::f32, {L, S});
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < S; ++j) mask.set(i * S + j, j > i ? -std::numeric_limits<double>::infinity() : 0.0);
    s = b.call("aten.add.Tensor", {s, b.constant("causal_mask", mask)});
  }
  if (a[ix.mask].is_node()) s = b.call("aten.add.Tensor", {s, a[ix.mask]});
  const Arg m = b.call("aten.amax.default", {s, Arg::of_ints({-1}), Arg::of_bool(true)});
  const Arg e = b.call("aten.exp.default", {b.call("aten.sub.Tensor", {s, m})});
  const Arg sum = b.call("aten.sum.dim_IntList", {e, Arg::of_ints({-1}), Arg::of_bool(true)});
  const Arg p = b.call("aten.div.Tensor", {e, sum});
  Shape out(qs.begin(), qs.end() - 1);
  out.push_back(Ev);
  const Arg o = b.call("aten.view.default", {b.call("aten.bmm.default", {p, v}), Arg::of_ints(out)});
  if (op.num_outputs == 1) return {o};
  Shape ls(qs.begin(), qs.end() - 1);
  const Arg lse = b.call("aten.view.default",
                         {b.call("aten.add.Tensor", {b.call("aten.log.default", {sum}), m}), Arg::of_ints(ls)});
  // The philox seed and offset of a dropout that does not run: zeros, as PyTorch returns them.
  const Arg zero = b.constant("philox_seed", Tensor(DType::i64, {}));
  return {o, lse, zero, zero};
}

std::vector<TensorMeta> infer_cudnn_batch_norm(const Graph& g, const OpDef&, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  // In eval mode the saved statistics are empty.
  return {like(x, x.dtype, x.shape), like(x, x.dtype, {0}), like(x, x.dtype, {0}), like(x, DType::u8, {0})};
}
std::vector<Arg> decomp_cudnn_batch_norm(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  if (a[5].b) bad(op, "training-mode batch norm is not supported yet");
  const Arg r = b.call("aten._native_batch_norm_legit_no_training.default", {a[0], a[1], a[2], a[3], a[4], a[6], a[7]});
  return {b.get(r, 0), Arg::none(), Arg::none(), Arg::none()};
}

OpDef view_op(const char* name, const char* schema, unsigned lv, InferFn infer, ViewFn view, DecompFn d) {
  return {.name = name, .schema = schema, .kind = OpKind::view, .levels = lv, .infer = infer, .decompose = d, .view = view};
}
OpDef ext(const char* name, const char* schema, unsigned lv, InferFn infer, RefFn ref, DecompFn d = nullptr) {
  return {.name = name, .schema = schema, .kind = OpKind::extern_kernel, .levels = lv, .infer = infer, .reference = ref, .decompose = d};
}
OpDef comp(const char* name, const char* schema, unsigned lv, InferFn infer, RefFn ref, DecompFn d) {
  return {.name = name, .schema = schema, .kind = OpKind::composite, .levels = lv, .infer = infer, .reference = ref, .decompose = d};
}

}  // namespace

void add_nn_ops(std::vector<OpDef>& t) {
  const std::vector<OpDef> ops = {
      // Matrix multiply, convolution, pooling, gathers: library kernels
      // Model-level ops and their decompositions
      comp("aten.layer_norm.default",
           "layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool "
           "cudnn_enable=True) -> Tensor",
           kAten, infer_layer_norm, nullptr, decomp_layer_norm),
      comp("aten.native_layer_norm.default",
           "native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, "
           "Tensor)",
           kCore, infer_layer_norm, ref_native_layer_norm, decomp_native_layer_norm),
      comp("aten.batch_norm.default",
           "batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float "
           "momentum, float eps, bool cudnn_enabled) -> Tensor",
           kAten, infer_batch_norm, nullptr, decomp_batch_norm),
      comp("aten._native_batch_norm_legit_no_training.default",
           "_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, "
           "float momentum, float eps) -> (Tensor, Tensor, Tensor)",
           kCore, infer_batch_norm, ref_batch_norm, decomp_batch_norm_legit),
      comp("aten.cudnn_batch_norm.default",
           "cudnn_batch_norm(Tensor input, Tensor weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, "
           "float exponential_average_factor, float epsilon) -> (Tensor, Tensor, Tensor, Tensor)",
           kAten, infer_cudnn_batch_norm, nullptr, decomp_cudnn_batch_norm),
      comp("aten.softmax.int", "softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", kAten, infer_same, ref_softmax,
           decomp_softmax_int),
      comp("aten._softmax.default", "_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", kCore, infer_same, ref_softmax,
           decomp_softmax),
      comp("aten.scaled_dot_product_attention.default",
           "scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0.0, bool "
           "is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor",
           kAten, infer_sdpa, ref_sdpa, decomp_sdpa),
      // Attention without a mask or dropout is one library kernel (fused: the scores never reach
      // memory), as PyTorch's efficient attention; with a mask it is matrix multiplies and a softmax.
      ext("aten._scaled_dot_product_efficient_attention.default",
          "_scaled_dot_product_efficient_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_bias, bool "
          "compute_log_sumexp, float dropout_p=0.0, bool is_causal=False, *, float? scale=None) -> (Tensor output, Tensor "
          "log_sumexp, Tensor philox_seed, Tensor philox_offset)",
          kCore, infer_sdpa, ref_sdpa),
  };
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
