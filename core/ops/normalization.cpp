// Normalization and softmax: layer norm, batch norm (evaluation and training), group norm and
// instance norm as torch.export keeps them, the Core ATen forms they decompose into
// (native_layer_norm, _native_batch_norm_legit and its variants, native_group_norm), softmax and
// log-softmax, and the backward ops AOTAutograd's graphs call for them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "ops/rule_helpers.h"

namespace ls {
namespace {

using namespace rules;

// ---------------------------------------------------------------------------------------------
// Layer norm
// ---------------------------------------------------------------------------------------------

std::vector<TensorMeta> infer_layer_norm(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  const auto ns = a[1].ints();
  if (ns.size() > x.shape.size() || !std::equal(ns.begin(), ns.end(), x.shape.end() - static_cast<long>(ns.size())))
    bad(op, "normalized_shape " + shape_str(ns) + " does not end the input shape " + shape_str(x.shape));
  Shape stat(x.shape.begin(), x.shape.end() - static_cast<long>(ns.size()));
  stat.resize(x.shape.size(), 1);
  if (op.name == "aten.layer_norm.default") return {like(x, x.dtype, x.shape)};
  // Half inputs keep their statistics in float32 (PyTorch's CUDA kernels and torch._decomp).
  return {like(x, x.dtype, x.shape), like(x, compute_dtype(x.dtype), stat), like(x, compute_dtype(x.dtype), stat)};
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

// gx = rstd/N (N gw - sum(gw) - xhat sum(gw xhat)), with gw = g * weight over the normalized dims;
// the weight and bias gradients sum over the outer dims.
std::vector<Arg> decomp_layer_norm_backward(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
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

Args d_native_layer_norm(DerivCtx& c) {
  const Args& a = c.args;  // input, normalized_shape, weight, bias, eps
  Args r(5, kNone);
  Arg mask;
  mask.kind = Arg::Kind::list;
  for (size_t i : {0, 2, 3}) mask.list.push_back(Arg::of_bool(wants(c, i)));
  const Arg g = c.grads[0].is_none() ? zeros(c, shape_of(c, a[0]), c.b.meta(a[0]).dtype) : c.grads[0];
  const Arg lb = call(c, "aten.native_layer_norm_backward.default", {g, a[0], a[1], c.out(1), c.out(2), a[2], a[3], mask});
  if (wants(c, 0)) r[0] = c.b.get(lb, 0);
  if (wants(c, 2)) r[2] = c.b.get(lb, 1);
  if (wants(c, 3)) r[3] = c.b.get(lb, 2);
  return r;
}
// ---------------------------------------------------------------------------------------------
// Batch norm (eval mode)
// ---------------------------------------------------------------------------------------------

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

// Eval-mode batch norm is an affine map per channel: y = (x - mean) * invstd * w + b.
Args d_batch_norm_eval(DerivCtx& c) {
  const Args& a = c.args;  // input, weight, bias, running_mean, running_var, momentum, eps
  const Shape& xs = shape_of(c, a[0]);
  Shape cs(xs.size(), 1);
  cs[1] = xs[1];
  std::vector<int64_t> dims;
  for (size_t d = 0; d < xs.size(); ++d)
    if (d != 1) dims.push_back(static_cast<int64_t>(d));
  auto per_channel = [&](const Arg& v) { return call(c, "aten.view.default", {v, ints(cs)}); };
  const Arg invstd = call(c, "aten.rsqrt.default", {call(c, "aten.add.Tensor", {a[4], a[6]})});
  Args r(7, kNone);
  const Arg g = c.grads[0];
  if (wants(c, 0)) {
    const Arg scale = a[1].is_node() ? call(c, "aten.mul.Tensor", {a[1], invstd}) : invstd;
    r[0] = call(c, "aten.mul.Tensor", {g, per_channel(scale)});
  }
  if (wants(c, 1)) {
    const Arg xhat = call(c, "aten.mul.Tensor", {call(c, "aten.sub.Tensor", {a[0], per_channel(a[3])}), per_channel(invstd)});
    r[1] = call(c, "aten.sum.dim_IntList", {call(c, "aten.mul.Tensor", {g, xhat}), ints(dims), Arg::of_bool(false)});
  }
  if (wants(c, 2)) r[2] = call(c, "aten.sum.dim_IntList", {g, ints(dims), Arg::of_bool(false)});
  return r;
}
// ---------------------------------------------------------------------------------------------
// Softmax
// ---------------------------------------------------------------------------------------------

std::vector<TensorMeta> infer_softmax(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  wrap_dim(op, a[1].i, static_cast<int64_t>(x.shape.size()));
  return {like(x, x.dtype, x.shape)};
}
std::vector<Tensor> ref_softmax(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  const int64_t d = x.dim() == 0 ? (wrap_dim(op, a[1].i, 0), 0) : wrap_dim(op, a[1].i, x.dim());
  const Shape shape = x.dim() == 0 ? Shape{1} : x.shape();  // a 0-d tensor: one row of one
  const int64_t n = shape[d], inner = contiguous_strides(shape)[d], outer = x.numel() / std::max<int64_t>(n * inner, 1);
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

// grad_in = out * (grad - sum(grad * out, dim))
std::vector<Arg> decomp_softmax_backward(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Arg go = call(b, "aten.mul.Tensor", {a[0], a[1]});
  const Arg s = b.call("aten.sum.dim_IntList", {go, Arg::of_ints({a[2].i}), Arg::of_bool(true)});
  return {call(b, "aten.sub.Tensor", {go, call(b, "aten.mul.Tensor", {a[1], s})})};
}

Args d_softmax(DerivCtx& c) {
  return one(call(c, "aten._softmax_backward_data.default",
                  {c.grads[0], c.out(0), c.args[1], Arg::of_string(std::string(dtype_torch(c.b.meta(c.args[0]).dtype)))}),
             3);
}

// ---------------------------------------------------------------------------------------------
// Group norm, training-mode batch norm, instance norm (issue 32)
// ---------------------------------------------------------------------------------------------

// A per-channel vector [C] viewed to broadcast over an input of rank r: [C, 1, ..., 1].
Arg per_channel(GraphBuilder& b, const Arg& v, int64_t C, size_t r) {
  Shape s(r - 1, 1);
  s[0] = C;
  return b.call("aten.view.default", {v, Arg::of_ints(s)});
}
Arg bool_list(const std::vector<bool>& v) {
  Arg a;
  a.kind = Arg::Kind::list;
  for (bool x : v) a.list.push_back(Arg::of_bool(x));
  return a;
}

// native_group_norm(input, weight, bias, N, C, HxW, group, eps) -> (out, mean [N, G], rstd [N, G])
struct GroupDims { int64_t N, C, HxW, G, cpg; };
GroupDims group_dims(const OpDef& op, const Shape& x, int64_t N, int64_t C, int64_t HxW, int64_t G) {
  if (x.size() < 2) bad(op, "needs an input of at least 2 dimensions, got " + shape_str(x));
  if (G <= 0 || C % G != 0) bad(op, "expected the number of channels " + std::to_string(C) + " to be divisible by num_groups " + std::to_string(G));
  if (numel_of(x) != N * C * HxW || x[0] != N || x[1] != C)
    bad(op, "input " + shape_str(x) + " does not fit N=" + std::to_string(N) + ", C=" + std::to_string(C) + ", HxW=" + std::to_string(HxW));
  return {N, C, HxW, G, C / G};
}
std::vector<TensorMeta> infer_native_group_norm(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  const GroupDims d = group_dims(op, x.shape, a[3].i, a[4].i, a[5].i, a[6].i);
  for (int i : {1, 2})
    if (a[i].is_node() && meta_of(g, a[i]).shape != Shape{d.C})
      bad(op, std::string(i == 1 ? "weight" : "bias") + " must be of shape [" + std::to_string(d.C) + "], got " + shape_str(meta_of(g, a[i]).shape));
  return {like(x, x.shape), like(x, compute_dtype(x.dtype), {d.N, d.G}), like(x, compute_dtype(x.dtype), {d.N, d.G})};
}
std::vector<Tensor> ref_native_group_norm(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  const GroupDims d = group_dims(op, x.shape(), a[3].i, a[4].i, a[5].i, a[6].i);
  const double eps = a[7].number();
  const int64_t M = d.cpg * d.HxW;
  Tensor y(outs[0].dtype, outs[0].shape), mean(outs[1].dtype, outs[1].shape), rstd(outs[2].dtype, outs[2].shape);
  for (int64_t ng = 0; ng < d.N * d.G; ++ng) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < M; ++i) m += x.get(ng * M + i);
    m /= static_cast<double>(M);
    for (int64_t i = 0; i < M; ++i) v += (x.get(ng * M + i) - m) * (x.get(ng * M + i) - m);
    v /= static_cast<double>(M);
    const double rs = 1.0 / std::sqrt(v + eps);
    for (int64_t i = 0; i < M; ++i) {
      const int64_t c = (ng % d.G) * d.cpg + i / d.HxW;
      double o = (x.get(ng * M + i) - m) * rs;
      if (a[1].is_node()) o *= in[1].get(c);
      if (a[2].is_node()) o += in[2].get(c);
      y.set(ng * M + i, o);
    }
    mean.set(ng, m);
    rstd.set(ng, rs);
  }
  return {y, mean, rstd};
}
// As torch._refs.native_group_norm: the input viewed [N, G, -1], its mean and biased variance
// over the last dim, rstd, the normalized input viewed back, the per-channel weight and bias.
std::vector<Arg> decomp_native_group_norm(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape xs = b.meta(a[0]).shape;
  const GroupDims d = group_dims(op, xs, a[3].i, a[4].i, a[5].i, a[6].i);
  const Arg x3 = b.call("aten.view.default", {a[0], Arg::of_ints({d.N, d.G, d.cpg * d.HxW})});
  const Arg mean = b.call("aten.mean.dim", {x3, Arg::of_ints({2}), Arg::of_bool(true)});
  const Arg diff = b.call("aten.sub.Tensor", {x3, mean});
  const Arg var = b.call("aten.mean.dim", {b.call("aten.mul.Tensor", {diff, diff}), Arg::of_ints({2}), Arg::of_bool(true)});
  const Arg rstd = b.call("aten.rsqrt.default", {b.call("aten.add.Tensor", {var, a[7]})});
  Arg y = b.call("aten.view.default", {b.call("aten.mul.Tensor", {diff, rstd}), Arg::of_ints(xs)});
  if (a[1].is_node()) y = b.call("aten.mul.Tensor", {y, per_channel(b, a[1], d.C, xs.size())});
  if (a[2].is_node()) y = b.call("aten.add.Tensor", {y, per_channel(b, a[2], d.C, xs.size())});
  return {y, b.call("aten.view.default", {mean, Arg::of_ints({d.N, d.G})}), b.call("aten.view.default", {rstd, Arg::of_ints({d.N, d.G})})};
}

// native_group_norm_backward(grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask)
std::vector<TensorMeta> group_norm_backward_meta(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[1]);
  const GroupDims d = group_dims(op, x.shape, a[5].i, a[6].i, a[7].i, a[8].i);
  return {like(x, x.shape), like(x, {d.C}), like(x, {d.C})};
}
std::vector<Tensor> group_norm_backward_ref(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &gy = in[0], &x = in[1];
  const GroupDims d = group_dims(op, x.shape(), a[5].i, a[6].i, a[7].i, a[8].i);
  const int64_t M = d.cpg * d.HxW;
  Tensor gx(outs[0].dtype, outs[0].shape), gw(outs[1].dtype, outs[1].shape), gb(outs[2].dtype, outs[2].shape);
  std::vector<double> sw(d.C, 0), sb(d.C, 0);
  for (int64_t ng = 0; ng < d.N * d.G; ++ng) {
    const double mean = in[2].get(ng), rstd = in[3].get(ng);
    double s1 = 0, s2 = 0;
    for (int64_t i = 0; i < M; ++i) {
      const int64_t c = (ng % d.G) * d.cpg + i / d.HxW;
      const double xh = (x.get(ng * M + i) - mean) * rstd, g = gy.get(ng * M + i) * (a[4].is_node() ? in[4].get(c) : 1.0);
      s1 += g;
      s2 += g * xh;
      sw[c] += gy.get(ng * M + i) * xh;
      sb[c] += gy.get(ng * M + i);
    }
    for (int64_t i = 0; i < M; ++i) {
      const int64_t c = (ng % d.G) * d.cpg + i / d.HxW;
      const double xh = (x.get(ng * M + i) - mean) * rstd, g = gy.get(ng * M + i) * (a[4].is_node() ? in[4].get(c) : 1.0);
      gx.set(ng * M + i, rstd * (g - s1 / M - xh * s2 / M));
    }
  }
  for (int64_t c = 0; c < d.C; ++c) {
    gw.set(c, sw[c]);
    gb.set(c, sb[c]);
  }
  return {gx, gw, gb};
}
// As torch._decomp's native_group_norm_backward.
std::vector<Arg> decomp_group_norm_backward(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape xs = b.meta(a[1]).shape;
  const GroupDims d = group_dims(op, xs, a[5].i, a[6].i, a[7].i, a[8].i);
  const auto mask = a[9].list;
  auto wanted = [&](size_t i) { return i >= mask.size() || mask[i].b; };
  auto view = [&](const Arg& v, std::vector<int64_t> s) { return b.call("aten.view.default", {v, Arg::of_ints(s)}); };
  auto mul = [&](const Arg& p, const Arg& q) { return b.call("aten.mul.Tensor", {p, q}); };
  auto sum = [&](const Arg& v, int64_t dim) { return b.call("aten.sum.dim_IntList", {v, Arg::of_ints({dim}), Arg::of_bool(false)}); };
  const Arg go3 = view(a[0], {d.N, d.C, d.HxW}), x3 = view(a[1], {d.N, d.C, d.HxW});
  const Arg ds = sum(mul(go3, x3), 2), db = sum(go3, 2);  // [N, C]
  std::vector<Arg> out(3, Arg::none());
  if (wanted(0)) {
    const double s = 1.0 / static_cast<double>(d.HxW * d.cpg);
    Arg ds_val, db_val, c1;
    if (a[4].is_node()) {
      const Arg w = view(a[4], {1, d.C});
      ds_val = sum(view(mul(ds, w), {d.N, d.G, d.cpg}), 2);
      db_val = sum(view(mul(db, w), {d.N, d.G, d.cpg}), 2);
      c1 = mul(view(a[3], {d.N, d.G, 1}), view(a[4], {1, d.G, d.cpg}));
    } else {
      ds_val = sum(view(ds, {d.N, d.G, d.cpg}), 2);
      db_val = sum(view(db, {d.N, d.G, d.cpg}), 2);
      c1 = view(a[3], {d.N, d.G, 1});
    }
    const Arg rstd3 = mul(mul(a[3], a[3]), a[3]);
    const Arg c2 = mul(mul(b.call("aten.sub.Tensor", {mul(db_val, a[2]), ds_val}), rstd3), Arg::of_real(s));
    const Arg c3 = b.call("aten.sub.Tensor", {mul(b.call("aten.neg.default", {c2}), a[2]), mul(mul(db_val, a[3]), Arg::of_real(s))});
    const Shape c1s = b.meta(c1).shape;
    const Arg t1 = mul(view(a[0], {d.N, d.G, d.cpg, d.HxW}), view(c1, {c1s[0], c1s[1], c1s[2], 1}));
    const Arg t2 = mul(view(a[1], {d.N, d.G, d.cpg, d.HxW}), view(c2, {d.N, d.G, 1, 1}));
    out[0] = view(b.call("aten.add.Tensor", {b.call("aten.add.Tensor", {t1, t2}), view(c3, {d.N, d.G, 1, 1})}), xs);
  }
  if (wanted(1)) {
    const Arg centred = b.call("aten.sub.Tensor", {view(ds, {d.N, d.G, d.cpg}), mul(view(db, {d.N, d.G, d.cpg}), view(a[2], {d.N, d.G, 1}))});
    out[1] = view(sum(mul(centred, view(a[3], {d.N, d.G, 1})), 0), {d.C});
  }
  if (wanted(2)) out[2] = sum(db, 0);
  return out;
}
Args d_native_group_norm(DerivCtx& c) {
  const Args& a = c.args;  // input, weight, bias, N, C, HxW, group, eps
  Args r(8, kNone);
  const Arg g = c.grads[0].is_none() ? zeros(c, shape_of(c, a[0]), c.b.meta(a[0]).dtype) : c.grads[0];
  const Arg gb = call(c, "aten.native_group_norm_backward.default",
                      {g, a[0], c.out(1), c.out(2), a[1], a[3], a[4], a[5], a[6], bool_list({wants(c, 0), wants(c, 1), wants(c, 2)})});
  for (size_t i : {0, 1, 2})
    if (wants(c, i)) r[i] = c.b.get(gb, static_cast<int>(i));
  return r;
}
std::vector<TensorMeta> infer_group_norm(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  if (x.shape.size() < 2) bad(op, "needs an input of at least 2 dimensions, got " + shape_str(x.shape));
  group_dims(op, x.shape, x.shape[0], x.shape[1], numel_of(x.shape) / std::max<int64_t>(1, x.shape[0] * x.shape[1]), a[1].i);
  return {like(x, x.shape)};
}
std::vector<Arg> decomp_group_norm(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Shape xs = b.meta(a[0]).shape;
  const int64_t N = xs[0], C = xs[1], HxW = numel_of(xs) / std::max<int64_t>(1, N * C);
  const Arg r = b.call("aten.native_group_norm.default",
                       {a[0], a[2], a[3], Arg::of_int(N), Arg::of_int(C), Arg::of_int(HxW), a[1], a[4]});
  return {b.get(r, 0)};
}

// The batch norm variants of torch.export's graphs. Arguments by position: input, weight, bias,
// then running_mean, running_var (absent for .no_stats), training, momentum, eps.
struct BnArgs { Arg x, w, bias, rm, rv; bool training; double momentum, eps; };
BnArgs bn_args(const OpDef& op, const std::vector<Arg>& a) {
  if (op.name == "aten._native_batch_norm_legit.no_stats") return {a[0], a[1], a[2], Arg::none(), Arg::none(), a[3].b, a[4].number(), a[5].number()};
  return {a[0], a[1], a[2], a[3], a[4], a[5].b, a[6].number(), a[7].number()};
}
bool functional_bn(const OpDef& op) { return op.name == "aten._native_batch_norm_legit_functional.default"; }
// Evaluation on the CPU saves no statistics: save_mean and save_invstd are empty ([0]), as
// PyTorch's CPU kernel and torch._decomp's native_batch_norm_helper give them ("a very annoying
// inconsistency where CPU and CUDA give different shapes"); elsewhere the running ones.
bool saves_empty(const TensorMeta& x, const BnArgs& p) { return !p.training && x.device == "cpu"; }
std::vector<TensorMeta> infer_bn_legit(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  if (x.shape.size() < 2) bad(op, "needs an input with a channel dimension");
  const BnArgs p = bn_args(op, a);
  if (!p.training && !p.rm.is_node()) bad(op, "running_mean must be defined in evaluation mode");
  if (p.training && numel_of(x.shape) / x.shape[1] <= 1)
    bad(op, "expected more than 1 value per channel when training, got input size " + shape_str(x.shape));
  const int64_t saved = saves_empty(x, p) ? 0 : x.shape[1];
  std::vector<TensorMeta> m = {like(x, x.shape), like(x, compute_dtype(x.dtype), {saved}), like(x, compute_dtype(x.dtype), {saved})};
  if (functional_bn(op)) {
    m.push_back(like(meta_of(g, a[3]), meta_of(g, a[3]).shape));
    m.push_back(like(meta_of(g, a[4]), meta_of(g, a[4]).shape));
  }
  return m;
}
std::vector<Tensor> ref_bn_legit(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  const BnArgs p = bn_args(op, a);
  const int64_t C = x.shape()[1], inner = x.numel() / (x.shape()[0] * C), n = x.numel() / C;
  std::vector<double> mean(C, 0), var(C, 0), invstd(C);
  for (int64_t i = 0; i < x.numel(); ++i) mean[(i / inner) % C] += x.get(i);
  for (int64_t c = 0; c < C; ++c) mean[c] /= static_cast<double>(n);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = (i / inner) % C;
    var[c] += (x.get(i) - mean[c]) * (x.get(i) - mean[c]);
  }
  for (int64_t c = 0; c < C; ++c) {
    var[c] /= static_cast<double>(n);
    if (!p.training) {
      mean[c] = in[3].get(c);
      var[c] = in[4].get(c);
    }
    invstd[c] = 1.0 / std::sqrt(var[c] + p.eps);
  }
  Tensor y(outs[0].dtype, outs[0].shape), sm(outs[1].dtype, outs[1].shape), si(outs[2].dtype, outs[2].shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = (i / inner) % C;
    double v = (x.get(i) - mean[c]) * invstd[c];
    if (p.w.is_node()) v *= in[1].get(c);
    if (p.bias.is_node()) v += in[2].get(c);
    y.set(i, v);
  }
  for (int64_t c = 0; c < sm.numel(); ++c) {  // none where evaluation on the CPU saves none
    sm.set(c, mean[c]);
    si.set(c, invstd[c]);
  }
  if (!functional_bn(op)) return {y, sm, si};
  Tensor nm(outs[3].dtype, outs[3].shape), nv(outs[4].dtype, outs[4].shape);
  for (int64_t c = 0; c < C; ++c) {
    const double m = p.momentum;
    nm.set(c, p.training ? m * mean[c] + (1 - m) * in[3].get(c) : in[3].get(c));
    nv.set(c, p.training ? m * var[c] * static_cast<double>(n) / static_cast<double>(n - 1) + (1 - m) * in[4].get(c) : in[4].get(c));
  }
  return {y, sm, si, nm, nv};
}
// As torch._decomp's native_batch_norm_helper: training normalizes with the batch's mean and
// biased variance over every dim but the channel's, and (the functional form) returns the running
// statistics updated with the unbiased variance; evaluation uses the running statistics (the
// saved mean and invstd are those, as on CUDA).
std::vector<Arg> decomp_bn_legit(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const BnArgs p = bn_args(op, a);
  const Shape xs = b.meta(p.x).shape;
  const int64_t C = xs[1], n = numel_of(xs) / C;
  std::vector<int64_t> dims = {0};
  for (size_t d = 2; d < xs.size(); ++d) dims.push_back(static_cast<int64_t>(d));
  Arg mean, var, rstd, centred;
  if (p.training) {
    mean = b.call("aten.mean.dim", {p.x, Arg::of_ints(dims), Arg::of_bool(true)});
    centred = b.call("aten.sub.Tensor", {p.x, mean});
    var = b.call("aten.mean.dim", {b.call("aten.mul.Tensor", {centred, centred}), Arg::of_ints(dims), Arg::of_bool(true)});
    rstd = b.call("aten.rsqrt.default", {b.call("aten.add.Tensor", {var, Arg::of_real(p.eps)})});
    mean = b.call("aten.view.default", {mean, Arg::of_ints({C})});
    var = b.call("aten.view.default", {var, Arg::of_ints({C})});
    rstd = b.call("aten.view.default", {rstd, Arg::of_ints({C})});
  } else {
    mean = p.rm;
    rstd = b.call("aten.rsqrt.default", {b.call("aten.add.Tensor", {p.rv, Arg::of_real(p.eps)})});
    centred = b.call("aten.sub.Tensor", {p.x, per_channel(b, mean, C, xs.size())});
  }
  Arg y = b.call("aten.mul.Tensor", {centred, per_channel(b, rstd, C, xs.size())});
  if (p.w.is_node()) y = b.call("aten.mul.Tensor", {y, per_channel(b, p.w, C, xs.size())});
  if (p.bias.is_node()) y = b.call("aten.add.Tensor", {y, per_channel(b, p.bias, C, xs.size())});
  if (saves_empty(b.meta(p.x), p)) {
    const DType t = compute_dtype(b.meta(p.x).dtype);
    Tensor none(t, {0});
    mean = b.constant("zeros", none);
    rstd = b.constant("zeros", none);
  }
  if (!functional_bn(op)) return {y, mean, rstd};
  if (!p.training) return {y, mean, rstd, p.rm, p.rv};
  const double m = p.momentum;
  const Arg nm = b.call("aten.add.Tensor", {b.call("aten.mul.Tensor", {mean, Arg::of_real(m)}), b.call("aten.mul.Tensor", {p.rm, Arg::of_real(1 - m)})});
  const Arg nv = b.call("aten.add.Tensor", {b.call("aten.mul.Tensor", {var, Arg::of_real(m * static_cast<double>(n) / static_cast<double>(n - 1))}),
                                            b.call("aten.mul.Tensor", {p.rv, Arg::of_real(1 - m)})});
  return {y, mean, rstd, nm, nv};
}
// derivatives.yaml: native_batch_norm_backward(grad, input, weight, running_mean, running_var,
// result1, result2, training, eps, grad_input_mask).
Args d_bn_legit(DerivCtx& c) {
  const BnArgs p = bn_args(c.op, c.args);
  Args r(c.args.size(), kNone);
  if (!wants(c, 0) && !wants(c, 1) && !wants(c, 2)) return r;
  const Arg g = c.grads[0].is_none() ? zeros(c, shape_of(c, p.x), c.b.meta(p.x).dtype) : c.grads[0];
  const Arg gb = call(c, "aten.native_batch_norm_backward.default",
                      {g, p.x, p.w, p.rm, p.rv, c.out(1), c.out(2), Arg::of_bool(p.training), Arg::of_real(p.eps),
                       bool_list({wants(c, 0), wants(c, 1), wants(c, 2)})});
  for (size_t i : {0, 1, 2})
    if (wants(c, i)) r[i] = c.b.get(gb, static_cast<int>(i));
  return r;
}
// batch_norm (export level): training with running statistics -> _native_batch_norm_legit_functional
// (its updated statistics, outputs 3 and 4, are what torch.export returns as buffer mutations;
// this node has one output, so they are dropped); training without -> .no_stats; evaluation ->
// _native_batch_norm_legit_no_training.
std::vector<Arg> decomp_batch_norm_any(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  if (!a[5].b) {
    if (!a[3].is_node() || !a[4].is_node()) bad(op, "running_mean must be defined in evaluation mode");
    return {b.get(b.call("aten._native_batch_norm_legit_no_training.default", {a[0], a[1], a[2], a[3], a[4], a[6], a[7]}), 0)};
  }
  if (a[3].is_node() && a[4].is_node())
    return {b.get(b.call("aten._native_batch_norm_legit_functional.default", {a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]}), 0)};
  return {b.get(b.call("aten._native_batch_norm_legit.no_stats", {a[0], a[1], a[2], a[5], a[6], a[7]}), 0)};
}
// instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
// cudnn_enabled): with the input's statistics, as ATen's composite, a batch norm of the input
// viewed [1, N * C, ...] (the weight and bias applied per channel after it, instead of repeated
// N times); else an evaluation-mode batch norm with the running statistics.
std::vector<TensorMeta> infer_instance_norm(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  if (x.shape.size() < 3) bad(op, "needs an input of at least 3 dimensions (N, C, ...), got " + shape_str(x.shape));
  if (!a[5].b && (!a[3].is_node() || !a[4].is_node())) bad(op, "expected running_mean and running_var to be defined when use_input_stats is false");
  return {like(x, x.shape)};
}
std::vector<Arg> decomp_instance_norm(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Shape xs = b.meta(a[0]).shape;
  if (!a[5].b) return {b.get(b.call("aten._native_batch_norm_legit_no_training.default", {a[0], a[1], a[2], a[3], a[4], a[6], a[7]}), 0)};
  Shape v = xs;
  v[1] = xs[0] * xs[1];
  v[0] = 1;
  const Arg xv = b.call("aten.view.default", {a[0], Arg::of_ints(v)});
  const Arg r = b.call("aten._native_batch_norm_legit.no_stats", {xv, Arg::none(), Arg::none(), Arg::of_bool(true), a[6], a[7]});
  Arg y = b.call("aten.view.default", {b.get(r, 0), Arg::of_ints(xs)});
  if (a[1].is_node()) y = b.call("aten.mul.Tensor", {y, per_channel(b, a[1], xs[1], xs.size())});
  if (a[2].is_node()) y = b.call("aten.add.Tensor", {y, per_channel(b, a[2], xs[1], xs.size())});
  return {y};
}

// ---------------------------------------------------------------------------------------------
// Log-softmax (issue 32)
// ---------------------------------------------------------------------------------------------

std::vector<Tensor> ref_log_softmax(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  const int64_t d = wrap_dim(op, a[1].i, x.dim());
  const int64_t n = x.dim() ? x.shape()[d] : 1, inner = x.dim() ? contiguous_strides(x.shape())[d] : 1,
                outer = x.numel() / std::max<int64_t>(n * inner, 1);
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double m = -std::numeric_limits<double>::infinity(), s = 0;
      for (int64_t k = 0; k < n; ++k) m = std::max(m, x.get((o * n + k) * inner + i));
      for (int64_t k = 0; k < n; ++k) s += std::exp(x.get((o * n + k) * inner + i) - m);
      for (int64_t k = 0; k < n; ++k) y.set((o * n + k) * inner + i, x.get((o * n + k) * inner + i) - m - std::log(s));
    }
  return {y};
}
// log_softmax.int -> _log_softmax (a dtype other than the input's is not supported).
std::vector<Arg> decomp_log_softmax_int(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  if (!a[2].is_none() && a[2].s != std::string(dtype_torch(b.meta(a[0]).dtype)))
    bad(op, "a dtype other than the input's (" + a[2].s + ") is not supported");
  return {b.call("aten._log_softmax.default", {a[0], a[1], Arg::of_bool(false)})};
}
// As torch._decomp: shifted = x - amax(x), shifted - log(sum(exp(shifted))).
std::vector<Arg> decomp_log_softmax(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Arg m = b.call("aten.amax.default", {a[0], Arg::of_ints({a[1].i}), Arg::of_bool(true)});
  const Arg shifted = b.call("aten.sub.Tensor", {a[0], m});
  const Arg s = b.call("aten.sum.dim_IntList", {b.call("aten.exp.default", {shifted}), Arg::of_ints({a[1].i}), Arg::of_bool(true)});
  return {b.call("aten.sub.Tensor", {shifted, b.call("aten.log.default", {s})})};
}
// grad_input = grad - exp(output) * sum(grad, dim)
std::vector<Arg> decomp_log_softmax_backward(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Arg s = b.call("aten.sum.dim_IntList", {a[0], Arg::of_ints({a[2].i}), Arg::of_bool(true)});
  return {b.call("aten.sub.Tensor", {a[0], b.call("aten.mul.Tensor", {b.call("aten.exp.default", {a[1]}), s})})};
}
Args d_log_softmax(DerivCtx& c) {
  return one(call(c, "aten._log_softmax_backward_data.default",
                  {c.grads[0], c.out(0), c.args[1], Arg::of_string(std::string(dtype_torch(c.b.meta(c.args[0]).dtype)))}),
             3);
}
}  // namespace

void add_normalization_ops(std::vector<OpDef>& t) {
  const std::vector<OpDef> ops = {
      comp("aten.layer_norm.default",
           "layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool "
           "cudnn_enable=True) -> Tensor",
           kAten, infer_layer_norm, nullptr, decomp_layer_norm),
      comp("aten.native_layer_norm.default",
           "native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, "
           "Tensor)",
           kCore, infer_layer_norm, ref_native_layer_norm, decomp_native_layer_norm, d_native_layer_norm),
      // Core ATen keeps it; below Core ATen it becomes two row reductions and pointwise math that
      // fuse into the kernels around them (as Inductor's decomposition does).
      comp("aten.native_layer_norm_backward.default",
           "native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, Tensor mean, Tensor rstd, "
           "Tensor? weight, Tensor? bias, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
           kCore, layer_norm_backward_meta, layer_norm_backward_ref, decomp_layer_norm_backward),
      comp("aten.batch_norm.default",
           "batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float "
           "momentum, float eps, bool cudnn_enabled) -> Tensor",
           kAten, infer_batch_norm, nullptr, decomp_batch_norm_any),
      comp("aten._native_batch_norm_legit_no_training.default",
           "_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, "
           "float momentum, float eps) -> (Tensor, Tensor, Tensor)",
           kCore, infer_batch_norm, ref_batch_norm, decomp_batch_norm_legit, d_batch_norm_eval),
      comp("aten.cudnn_batch_norm.default",
           "cudnn_batch_norm(Tensor input, Tensor weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, "
           "float exponential_average_factor, float epsilon) -> (Tensor, Tensor, Tensor, Tensor)",
           kAten, infer_cudnn_batch_norm, nullptr, decomp_cudnn_batch_norm),
      ext("aten.native_batch_norm_backward.default",
          "native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, Tensor? running_mean, Tensor? running_var, "
          "Tensor? save_mean, Tensor? save_invstd, bool train, float eps, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
          kCore, batch_norm_backward_meta, batch_norm_backward_ref),
      comp("aten.softmax.int", "softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", kAten, infer_softmax, ref_softmax,
           decomp_softmax_int),
      comp("aten._softmax.default", "_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", kCore, infer_softmax, ref_softmax,
           decomp_softmax, d_softmax),
      comp("aten._softmax_backward_data.default",
           "_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor", kCore, same_as<1>,
           nullptr, decomp_softmax_backward),
      // ---- group norm, training-mode batch norm, instance norm, log-softmax (issue 32) ----
      comp("aten.native_group_norm.default",
           "native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW, int group, float eps) -> "
           "(Tensor, Tensor, Tensor)",
           kCore, infer_native_group_norm, ref_native_group_norm, decomp_native_group_norm, d_native_group_norm),
      comp("aten.native_group_norm_backward.default",
           "native_group_norm_backward(Tensor grad_out, Tensor input, Tensor mean, Tensor rstd, Tensor? weight, SymInt N, SymInt C, "
           "SymInt HxW, int group, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
           kCore, group_norm_backward_meta, group_norm_backward_ref, decomp_group_norm_backward),
      comp("aten.group_norm.default",
           "group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool "
           "cudnn_enabled=True) -> Tensor",
           kAten, infer_group_norm, nullptr, decomp_group_norm),
      comp("aten._native_batch_norm_legit.default",
           "_native_batch_norm_legit(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!) running_mean, Tensor(b!) running_var, "
           "bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
           kCore, infer_bn_legit, ref_bn_legit, decomp_bn_legit, d_bn_legit),
      comp("aten._native_batch_norm_legit.no_stats",
           "_native_batch_norm_legit.no_stats(Tensor input, Tensor? weight, Tensor? bias, bool training, float momentum, float eps) "
           "-> (Tensor, Tensor, Tensor)",
           kCore, infer_bn_legit, ref_bn_legit, decomp_bn_legit, d_bn_legit),
      comp("aten._native_batch_norm_legit_functional.default",
           "_native_batch_norm_legit_functional(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, "
           "bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor, Tensor running_mean_out, Tensor running_var_out)",
           kAten, infer_bn_legit, ref_bn_legit, decomp_bn_legit, d_bn_legit),
      comp("aten.instance_norm.default",
           "instance_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool "
           "use_input_stats, float momentum, float eps, bool cudnn_enabled) -> Tensor",
           kAten, infer_instance_norm, nullptr, decomp_instance_norm),
      comp("aten._log_softmax.default", "_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", kCore, infer_softmax,
           ref_log_softmax, decomp_log_softmax, d_log_softmax),
      comp("aten._log_softmax_backward_data.default",
           "_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor", kAten, same_as<1>,
           nullptr, decomp_log_softmax_backward),
      comp("aten.log_softmax.int", "log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", kAten, infer_softmax,
           ref_log_softmax, decomp_log_softmax_int),
  };
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
