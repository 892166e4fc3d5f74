// The op table's backward ops, as AOTAutograd's backward graphs call them: elementwise ones
// decompose into ops of the table (so they lower and fuse like any other); library-style ones
// (convolution, normalization, pooling, attention) carry reference kernels.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "ops/builder.h"
#include "ops/op_table.h"

namespace ls {
namespace {

constexpr unsigned kCore = level::aten | level::core_aten;

const TensorMeta& meta_of(const Graph& g, const Arg& a) { return g.nodes.at(a.node).meta(); }
TensorMeta like(const TensorMeta& in, Shape shape) {
  TensorMeta m = TensorMeta::contiguous(in.dtype, std::move(shape));
  m.device = in.device;
  return m;
}

// Shape of the gradient: that of argument `i`.
template <int I>
std::vector<TensorMeta> same_as(const Graph& g, const OpDef&, const std::vector<Arg>& a) {
  return {like(meta_of(g, a[I]), meta_of(g, a[I]).shape)};
}

Arg call(GraphBuilder& b, const char* op, std::vector<Arg> a) { return b.call(op, std::move(a)); }
Arg num(double v) { return Arg::of_real(v); }

// grad_in = out * (grad - sum(grad * out, dim))
std::vector<Arg> softmax_backward(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Arg go = call(b, "aten.mul.Tensor", {a[0], a[1]});
  const Arg s = b.call("aten.sum.dim_IntList", {go, Arg::of_ints({a[2].i}), Arg::of_bool(true)});
  return {call(b, "aten.sub.Tensor", {go, call(b, "aten.mul.Tensor", {a[1], s})})};
}

std::vector<TensorMeta> batch_norm_backward_meta(const Graph& g, const OpDef&, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[1]);
  return {like(x, x.shape), like(x, {x.shape[1]}), like(x, {x.shape[1]})};
}
std::vector<Tensor> batch_norm_backward_ref(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &gy = in[0], &x = in[1];
  const int64_t C = x.shape()[1], inner = x.numel() / (x.shape()[0] * C), M = x.numel() / C;
  const bool train = a[7].b;
  const double eps = a[8].number();
  std::vector<double> mean(C), invstd(C), sum_g(C, 0), sum_gx(C, 0);
  for (int64_t c = 0; c < C; ++c) {
    if (train) {
      mean[c] = in[5].get(c);
      invstd[c] = in[6].get(c);
    } else {
      mean[c] = in[3].get(c);
      invstd[c] = 1.0 / std::sqrt(in[4].get(c) + eps);
    }
  }
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = (i / inner) % C;
    sum_g[c] += gy.get(i);
    sum_gx[c] += gy.get(i) * (x.get(i) - mean[c]);
  }
  Tensor gx(outs[0].dtype, outs[0].shape), gw(outs[1].dtype, outs[1].shape), gb(outs[2].dtype, outs[2].shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = (i / inner) % C;
    const double w = a[2].is_node() ? in[2].get(c) : 1.0;
    double v = gy.get(i);
    if (train) v -= sum_g[c] / M + (x.get(i) - mean[c]) * invstd[c] * invstd[c] * sum_gx[c] / M;
    gx.set(i, v * invstd[c] * w);
  }
  for (int64_t c = 0; c < C; ++c) {
    gw.set(c, sum_gx[c] * invstd[c]);
    gb.set(c, sum_g[c]);
  }
  return {gx, gw, gb};
}

std::vector<TensorMeta> layer_norm_backward_meta(const Graph& g, const OpDef&, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[1]);
  const Shape ns = a[2].ints();
  return {like(x, x.shape), like(x, ns), like(x, ns)};
}
std::vector<Tensor> layer_norm_backward_ref(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &gy = in[0], &x = in[1];
  int64_t n = 1;
  for (int64_t d : a[2].ints()) n *= d;
  const int64_t rows = x.numel() / n;
  Tensor gx(outs[0].dtype, outs[0].shape), gw(outs[1].dtype, outs[1].shape), gb(outs[2].dtype, outs[2].shape);
  std::vector<double> sw(n, 0), sb(n, 0);
  for (int64_t r = 0; r < rows; ++r) {
    const double mean = in[3].get(r), rstd = in[4].get(r);
    double s1 = 0, s2 = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double xh = (x.get(r * n + i) - mean) * rstd, g = gy.get(r * n + i) * (a[5].is_node() ? in[5].get(i) : 1.0);
      s1 += g;
      s2 += g * xh;
      sw[i] += gy.get(r * n + i) * xh;
      sb[i] += gy.get(r * n + i);
    }
    for (int64_t i = 0; i < n; ++i) {
      const double xh = (x.get(r * n + i) - mean) * rstd, g = gy.get(r * n + i) * (a[5].is_node() ? in[5].get(i) : 1.0);
      gx.set(r * n + i, rstd * (g - s1 / n - xh * s2 / n));
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    gw.set(i, sw[i]);
    gb.set(i, sb[i]);
  }
  return {gx, gw, gb};
}

std::vector<TensorMeta> sdpa_backward_meta(const Graph& g, const OpDef&, const std::vector<Arg>& a) {
  const TensorMeta &q = meta_of(g, a[1]), &k = meta_of(g, a[2]), &v = meta_of(g, a[3]);
  std::vector<TensorMeta> outs = {like(q, q.shape), like(k, k.shape), like(v, v.shape)};
  outs.push_back(a[4].is_node() ? like(meta_of(g, a[4]), meta_of(g, a[4]).shape) : like(q, {0}));
  return outs;
}
// Recomputes the probabilities from q, k (causal or not) and differentiates softmax(q k^T s) v.
std::vector<Tensor> sdpa_backward_ref(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &go = in[0], &q = in[1], &k = in[2], &v = in[3];
  const size_t r = q.shape().size();
  const int64_t L = q.shape()[r - 2], E = q.shape()[r - 1], S = k.shape()[r - 2], Ev = v.shape()[r - 1];
  const int64_t B = q.numel() / (L * E);
  const bool causal = a[11].b;
  const double scale = a[12].is_none() ? 1.0 / std::sqrt(double(E)) : a[12].number();
  Tensor gq(outs[0].dtype, outs[0].shape), gk(outs[1].dtype, outs[1].shape), gv(outs[2].dtype, outs[2].shape);
  std::vector<double> P(L * S), dP(L * S);
  std::vector<double> dq(L * E), dk(S * E), dv(S * Ev);
  for (int64_t bb = 0; bb < B; ++bb) {
    std::fill(dq.begin(), dq.end(), 0.0);
    std::fill(dk.begin(), dk.end(), 0.0);
    std::fill(dv.begin(), dv.end(), 0.0);
    for (int64_t i = 0; i < L; ++i) {
      double m = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t j = 0; j < S; ++j) {
        double s = 0;
        for (int64_t e = 0; e < E; ++e) s += q.get((bb * L + i) * E + e) * k.get((bb * S + j) * E + e);
        s = causal && j > i ? -std::numeric_limits<double>::infinity() : s * scale;
        P[i * S + j] = s;
        m = std::max(m, s);
      }
      for (int64_t j = 0; j < S; ++j) sum += (P[i * S + j] = std::exp(P[i * S + j] - m));
      for (int64_t j = 0; j < S; ++j) P[i * S + j] /= sum;
      double rowdot = 0;
      for (int64_t j = 0; j < S; ++j) {
        double d = 0;
        for (int64_t e = 0; e < Ev; ++e) d += go.get((bb * L + i) * Ev + e) * v.get((bb * S + j) * Ev + e);
        dP[i * S + j] = d;
        rowdot += d * P[i * S + j];
      }
      for (int64_t j = 0; j < S; ++j) {
        const double ds = P[i * S + j] * (dP[i * S + j] - rowdot) * scale;
        for (int64_t e = 0; e < Ev; ++e) dv[j * Ev + e] += P[i * S + j] * go.get((bb * L + i) * Ev + e);
        for (int64_t e = 0; e < E; ++e) {
          dq[i * E + e] += ds * k.get((bb * S + j) * E + e);
          dk[j * E + e] += ds * q.get((bb * L + i) * E + e);
        }
      }
    }
    for (int64_t i = 0; i < L * E; ++i) gq.set(bb * L * E + i, dq[i]);
    for (int64_t i = 0; i < S * E; ++i) gk.set(bb * S * E + i, dk[i]);
    for (int64_t i = 0; i < S * Ev; ++i) gv.set(bb * S * Ev + i, dv[i]);
  }
  return {gq, gk, gv, Tensor(outs[3].dtype, outs[3].shape)};
}

OpDef comp(const char* name, const char* schema, InferFn infer, DecompFn d) {
  return {.name = name, .schema = schema, .kind = OpKind::composite, .levels = kCore, .infer = infer, .decompose = d};
}
OpDef ext(const char* name, const char* schema, InferFn infer, RefFn ref) {
  return {.name = name, .schema = schema, .kind = OpKind::extern_kernel, .levels = kCore, .infer = infer, .reference = ref};
}

// gx = rstd/N (N gw - sum(gw) - xhat sum(gw xhat)), with gw = g * weight over the normalized dims;
// the weight and bias gradients sum over the outer dims.
std::vector<Arg> layer_norm_backward(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Shape x = b.meta(a[1]).shape;
  const Shape ns = a[2].ints();
  const int64_t r = static_cast<int64_t>(x.size()), k = static_cast<int64_t>(ns.size());
  int64_t n = 1;
  for (int64_t d : ns) n *= d;
  std::vector<int64_t> inner, outer;
  for (int64_t d = 0; d < r; ++d) (d < r - k ? outer : inner).push_back(d);
  const auto mask = a[7].list;
  auto wanted = [&](size_t i) { return i >= mask.size() || mask[i].b; };
  const Arg xhat = call(b, "aten.mul.Tensor", {call(b, "aten.sub.Tensor", {a[1], a[3]}), a[4]});
  std::vector<Arg> out(3, Arg::none());
  if (wanted(0)) {
    const Arg gw = a[5].is_node() ? call(b, "aten.mul.Tensor", {a[0], a[5]}) : a[0];
    const Arg s1 = b.call("aten.sum.dim_IntList", {gw, Arg::of_ints(inner), Arg::of_bool(true)});
    const Arg s2 = b.call("aten.sum.dim_IntList", {call(b, "aten.mul.Tensor", {gw, xhat}), Arg::of_ints(inner), Arg::of_bool(true)});
    const Arg t = call(b, "aten.sub.Tensor", {call(b, "aten.sub.Tensor", {call(b, "aten.mul.Tensor", {gw, num(static_cast<double>(n))}), s1}),
                                              call(b, "aten.mul.Tensor", {xhat, s2})});
    out[0] = call(b, "aten.mul.Tensor", {t, call(b, "aten.div.Tensor", {a[4], num(static_cast<double>(n))})});
  }
  // (An empty dim list would mean "all dims": with no outer dims there is nothing to sum.)
  auto sum_outer = [&](const Arg& v) {
    return outer.empty() ? v : b.call("aten.sum.dim_IntList", {v, Arg::of_ints(outer), Arg::of_bool(false)});
  };
  if (wanted(1) && a[5].is_node()) out[1] = sum_outer(call(b, "aten.mul.Tensor", {a[0], xhat}));
  if (wanted(2) && a[6].is_node()) out[2] = sum_outer(a[0]);
  return out;
}

}  // namespace

void add_backward_ops(std::vector<OpDef>& t) {
  const std::vector<OpDef> ops = {
      comp("aten._softmax_backward_data.default",
           "_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor", same_as<1>,
           softmax_backward),
      ext("aten.native_batch_norm_backward.default",
          "native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, Tensor? running_mean, Tensor? running_var, "
          "Tensor? save_mean, Tensor? save_invstd, bool train, float eps, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
          batch_norm_backward_meta, batch_norm_backward_ref),
      // Core ATen keeps it; below Core ATen it becomes two row reductions and pointwise math that
      // fuse into the kernels around them (as Inductor's decomposition does).
      {.name = "aten.native_layer_norm_backward.default",
       .schema = "native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, Tensor mean, Tensor rstd, "
                 "Tensor? weight, Tensor? bias, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
       .kind = OpKind::composite, .levels = kCore, .infer = layer_norm_backward_meta, .reference = layer_norm_backward_ref,
       .decompose = layer_norm_backward},
      ext("aten._scaled_dot_product_efficient_attention_backward.default",
          "_scaled_dot_product_efficient_attention_backward(Tensor grad_out_, Tensor query, Tensor key, Tensor value, Tensor? "
          "attn_bias, Tensor out, Tensor logsumexp, Tensor philox_seed, Tensor philox_offset, float dropout_p, bool[4] "
          "grad_input_mask, bool is_causal=False, *, float? scale=None) -> (Tensor, Tensor, Tensor, Tensor)",
          sdpa_backward_meta, sdpa_backward_ref),
  };
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
