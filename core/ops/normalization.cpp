// Normalization and softmax: layer norm and batch norm (eval mode) as torch.export keeps them, the
// Core ATen forms they decompose into (native_layer_norm, _native_batch_norm_legit_no_training),
// softmax, and the backward ops AOTAutograd's graphs call for them.
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
           kAten, infer_batch_norm, nullptr, decomp_batch_norm),
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
  };
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
