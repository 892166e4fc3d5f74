// Losses: mse_loss, nll_loss (nll_loss_forward, what torch.export's Core ATen graphs of
// F.cross_entropy call after _log_softmax), cross_entropy_loss, smooth_l1_loss,
// binary_cross_entropy_with_logits, and the backward ops AOTAutograd's graphs call for them.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/rule_helpers.h"

namespace ls {
namespace {

using namespace rules;

std::vector<TensorMeta> infer_mse_loss(const Graph& g, const OpDef& op, const std::vector<Arg>& args) {
  const TensorMeta& a = meta_of(g, args[0]);
  const TensorMeta& b = meta_of(g, args[1]);
  const Shape s = broadcast_shapes(a.shape, b.shape);
  const int64_t red = args[2].i;
  if (red < 0 || red > 2) throw std::invalid_argument(op.name + ": reduction must be 0 (none), 1 (mean) or 2 (sum)");
  TensorMeta m = TensorMeta::contiguous(promote(a.dtype, b.dtype), red == 0 ? s : Shape{});
  m.device = a.device;
  return {m};
}

std::vector<Tensor> ref_mse_loss(const OpDef&, const std::vector<Arg>& args, const RefInputs& vals,
                                 const std::vector<TensorMeta>& outs) {
  const Tensor &a = vals[0], &b = vals[1];
  const Shape s = broadcast_shapes(a.shape(), b.shape());
  const Shape sa = broadcast_strides(a.shape(), s), sb = broadcast_strides(b.shape(), s);
  const int64_t n = numel_of(s);
  Tensor out(outs[0].dtype, outs[0].shape);
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = a.get(offset_of(i, s, sa)) - b.get(offset_of(i, s, sb));
    if (args[2].i == 0) out.set(i, d * d);
    total += d * d;
  }
  if (args[2].i == 1) out.set(0, total / static_cast<double>(n));
  if (args[2].i == 2) out.set(0, total);
  return {out};
}

Arg decomp_mse_loss(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Arg d = b.call("aten.sub.Tensor", {a[0], a[1]});
  const Arg sq = b.call("aten.pow.Tensor_Scalar", {d, Arg::of_int(2)});
  switch (a[2].i) {
    case 0: return sq;
    case 2: return b.call("aten.sum.dim_IntList", {sq, Arg::none()});
    default: return b.call("aten.mean.default", {sq});
  }
}

std::vector<Arg> decomp_mse_loss_backward(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Shape s = b.meta(a[1]).shape;
  double scale = 2.0;
  if (a[3].i == 1) scale /= static_cast<double>(std::max<int64_t>(numel_of(s), 1));
  const Arg d = call(b, "aten.mul.Tensor", {call(b, "aten.sub.Tensor", {a[1], a[2]}), num(scale)});
  return {call(b, "aten.mul.Tensor", {d, a[0]})};
}

Args d_mse_loss(DerivCtx& c) {
  Args r(3, kNone);
  const Arg gx = call(c, "aten.mse_loss_backward.default", {c.grads[0], c.args[0], c.args[1], c.args[2]});
  if (wants(c, 0)) r[0] = gx;
  if (wants(c, 1)) r[1] = call(c, "aten.neg.default", {gx});
  return r;
}


// ---- nll_loss, cross_entropy (issue 32) ----

// Class dim of an input of rank 1 ([C]) or 2 ([N, C]); the target [] or [N] (int64).
struct Nll { int64_t N, C; bool batched; };
Nll nll_dims(const OpDef& op, const Shape& x, const Shape& t) {
  if (x.empty() || x.size() > 2) bad(op, "input tensor should be 1D or 2D, got " + shape_str(x));
  if (t.size() > 1) bad(op, "0D or 1D target tensor expected, multi-target not supported");
  const bool batched = x.size() == 2;
  if ((batched && (t.size() != 1 || t[0] != x[0])) || (!batched && !t.empty()))
    bad(op, "size mismatch (got input: " + shape_str(x) + ", target: " + shape_str(t) + ")");
  return {batched ? x[0] : 1, x.back(), batched};
}
void check_reduction(const OpDef& op, int64_t r) {
  if (r < 0 || r > 2) bad(op, "reduction must be 0 (none), 1 (mean) or 2 (sum), got " + std::to_string(r));
}
// nll_loss_forward(self, target, weight, reduction, ignore_index) -> (output, total_weight)
std::vector<TensorMeta> infer_nll_loss_forward(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta &x = meta_of(g, a[0]), &t = meta_of(g, a[1]);
  const Nll d = nll_dims(op, x.shape, t.shape);
  if (dtype_is_float(t.dtype) || t.dtype == DType::b8) bad(op, "expected an integer target (class indices)");
  if (a[2].is_node() && meta_of(g, a[2]).shape != Shape{d.C})
    bad(op, "weight tensor should be defined either for all " + std::to_string(d.C) + " classes or no classes but got weight tensor of shape: " +
                shape_str(meta_of(g, a[2]).shape));
  check_reduction(op, a[3].i);
  const Shape out = a[3].i == 0 && d.batched ? Shape{d.N} : Shape{};
  std::vector<TensorMeta> m = {like(x, out), like(x, {})};
  return op.num_outputs == 1 ? std::vector<TensorMeta>{m[0]} : m;
}
std::vector<Tensor> ref_nll_loss_forward(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &x = in[0], &t = in[1];
  const Nll d = nll_dims(op, x.shape(), t.shape());
  const int64_t red = a[3].i, ignore = a[4].i;
  Tensor y(outs[0].dtype, outs[0].shape);
  double sum = 0, total = 0;
  for (int64_t n = 0; n < d.N; ++n) {
    const int64_t c = static_cast<int64_t>(t.get(n));
    double l = 0;
    if (c != ignore) {
      if (c < 0 || c >= d.C) bad(op, "Target " + std::to_string(c) + " is out of bounds.");
      const double w = a[2].is_node() ? in[2].get(c) : 1.0;
      l = -x.get(n * d.C + c) * w;
      total += w;
    }
    sum += l;
    if (red == 0 && d.batched) y.set(n, l);
  }
  if (!(red == 0 && d.batched)) y.set(0, red == 1 ? sum / total : sum);
  if (op.num_outputs == 1) return {y};
  Tensor tw(outs[1].dtype, outs[1].shape);
  tw.set(0, red == 0 && d.batched ? 0.0 : total);
  return {y, tw};
}
// As torch._decomp's nll_loss_forward, with the class picked by a one-hot mask (the target
// against the class indices, a constant) and a sum over the classes instead of a gather: generated
// code, fused with the log-softmax before it.
// A 0-d constant under a name no value of the graph has (see conv_pool.cpp's constant()).
Arg scalar(GraphBuilder& b, const std::string& base, double v, DType dt) {
  Tensor t(dt, {});
  t.set(0, v);
  std::string name = base;
  for (int k = 1; b.graph().weights.count(name) || b.taken(name); ++k) name = base + "_" + std::to_string(k);
  return b.constant(name, t);
}
struct NllParts { Arg onehot, valid; };
NllParts nll_parts(GraphBuilder& b, const Arg& target, const Nll& d, int64_t ignore) {
  Tensor classes(DType::i64, {d.C});
  for (int64_t c = 0; c < d.C; ++c) classes.set(c, static_cast<double>(c));
  std::string name = "nll_classes";
  for (int k = 1; b.graph().weights.count(name) || b.taken(name); ++k) name = "nll_classes_" + std::to_string(k);
  const Arg t2 = b.call("aten.view.default", {target, Arg::of_ints({d.N, 1})});
  return {b.call("aten.eq.Tensor", {t2, b.constant(name, classes)}), b.call("aten.ne.Scalar", {target, Arg::of_int(ignore)})};
}
std::vector<Arg> decomp_nll_loss_forward(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Nll d = nll_dims(op, b.meta(a[0]).shape, b.meta(a[1]).shape);
  const int64_t red = a[3].i;
  const NllParts p = nll_parts(b, a[1], d, a[4].i);
  const Arg x2 = b.call("aten.view.default", {a[0], Arg::of_ints({d.N, d.C})});
  const Arg xw = a[2].is_node() ? b.call("aten.mul.Tensor", {x2, a[2]}) : x2;
  auto pick = [&](const Arg& v) {  // v[n, target[n]], 0 where the target is ignored
    const Arg s = b.call("aten.sum.dim_IntList", {b.call("aten.where.self", {p.onehot, v, Arg::of_real(0.0)}), Arg::of_ints({1}), Arg::of_bool(false)});
    return b.call("aten.where.self", {p.valid, s, Arg::of_real(0.0)});
  };
  Arg result = b.call("aten.neg.default", {pick(xw)});  // [N]
  if (red == 0 && d.batched) return {result, scalar(b, "nll_total_weight", 0.0, b.meta(a[0]).dtype)};
  const DType dt = b.meta(a[0]).dtype;
  const Arg total = a[2].is_node() ? b.call("aten.sum.default", {pick(b.call("aten.expand.default", {a[2], Arg::of_ints({d.N, d.C})}))})
                                   : b.call("aten.sum.default", {b.call("aten.where.self", {p.valid, scalar(b, "nll_one", 1.0, dt), scalar(b, "nll_zero", 0.0, dt)})});
  if (red == 0) result = b.call("aten.view.default", {result, Arg::of_ints({})});
  else if (red == 2) result = b.call("aten.sum.default", {result});
  else result = b.call("aten.div.Tensor", {b.call("aten.sum.default", {result}), total});
  return {result, total};
}
// nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight):
// -grad (* weight[target], / total_weight for the mean) at each row's target, 0 elsewhere.
std::vector<Tensor> ref_nll_loss_backward(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &g = in[0], &x = in[1], &t = in[2];
  const Nll d = nll_dims(op, x.shape(), t.shape());
  const int64_t red = a[4].i, ignore = a[5].i;
  Tensor gx(outs[0].dtype, outs[0].shape);
  for (int64_t n = 0; n < d.N; ++n) {
    const int64_t c = static_cast<int64_t>(t.get(n));
    if (c == ignore) continue;
    if (c < 0 || c >= d.C) bad(op, "Target " + std::to_string(c) + " is out of bounds.");
    double v = red == 0 && d.batched ? g.get(n) : g.get(0);
    if (red == 1) v /= in[6].get(0);
    if (a[3].is_node()) v *= in[3].get(c);
    gx.set(n * d.C + c, -v);
  }
  return {gx};
}
std::vector<Arg> decomp_nll_loss_backward(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape xs = b.meta(a[1]).shape;
  const Nll d = nll_dims(op, xs, b.meta(a[2]).shape);
  const NllParts p = nll_parts(b, a[2], d, a[5].i);
  Arg g = a[0];
  if (a[4].i == 1) g = b.call("aten.div.Tensor", {g, a[6]});
  if (a[4].i == 0 && d.batched) g = b.call("aten.view.default", {g, Arg::of_ints({d.N, 1})});
  if (a[3].is_node()) g = b.call("aten.mul.Tensor", {g, a[3]});  // [N, C] (or [C])
  const Arg mask = b.call("aten.logical_and.default", {p.onehot, b.call("aten.view.default", {p.valid, Arg::of_ints({d.N, 1})})});
  const Arg gx = b.call("aten.where.self", {mask, b.call("aten.neg.default", {g}), Arg::of_real(0.0)});
  return {b.call("aten.view.default", {gx, Arg::of_ints(xs)})};  // mask is [N, C]: gx is too
}
Args d_nll_loss_forward(DerivCtx& c) {
  const Args& a = c.args;  // self, target, weight, reduction, ignore_index
  return one(call(c, "aten.nll_loss_backward.default", {c.grads[0], a[0], a[1], a[2], a[3], a[4], c.out(1)}), 5);
}
std::vector<TensorMeta> infer_nll_loss_backward(const Graph& g, const OpDef&, const std::vector<Arg>& a) {
  return {like(meta_of(g, a[1]), meta_of(g, a[1]).shape)};
}
std::vector<Arg> decomp_nll_loss(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  return {b.get(b.call("aten.nll_loss_forward.default", {a[0], a[1], a[2], a[3], a[4]}), 0)};
}

// cross_entropy_loss(self, target, weight, reduction, ignore_index, label_smoothing), as ATen's
// composite: class indices -> log_softmax + nll_loss_nd (with label smoothing, the smooth loss
// -sum(log_softmax * weight) over the classes mixed in); class probabilities (a float target of
// the input's shape) -> -sum(log_softmax * target * weight) over the classes. The input is (C),
// (N, C) or (N, C, d1, ...): the loss is per position, (N, d1, ...), where nothing reduces it.

// The shape of the loss per position: the input's without its class dimension.
Shape per_position(const Shape& x) {
  Shape s = x;
  if (!s.empty()) s.erase(s.begin() + (x.size() >= 2 ? 1 : 0));
  return s;
}
std::vector<TensorMeta> infer_cross_entropy(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta &x = meta_of(g, a[0]), &t = meta_of(g, a[1]);
  check_reduction(op, a[3].i);
  const double ls = a[5].number();
  if (ls < 0 || ls > 1) bad(op, "label_smoothing must be between 0.0 and 1.0. Got: " + std::to_string(ls));
  if (x.shape.empty()) bad(op, "needs an input with a class dimension");
  const int64_t C = x.shape[x.shape.size() >= 2 ? 1 : 0];
  if (a[2].is_node() && meta_of(g, a[2]).shape != Shape{C})
    bad(op, "weight tensor should be defined either for all " + std::to_string(C) + " classes or no classes but got weight tensor of shape: " +
                shape_str(meta_of(g, a[2]).shape));
  if (dtype_is_float(t.dtype)) {
    if (t.shape != x.shape) bad(op, "class-probability targets must have the input's shape " + shape_str(x.shape) + ", got " + shape_str(t.shape));
    if (x.shape.empty()) bad(op, "needs an input with a class dimension");
    Shape out = x.shape;
    out.erase(out.begin() + (x.shape.size() >= 2 ? 1 : 0));
    return {like(x, a[3].i == 0 ? out : Shape{})};
  }
  if (t.dtype == DType::b8) bad(op, "expected an integer target (class indices)");
  if (x.shape.size() <= 2) nll_dims(op, x.shape, t.shape);
  else if (t.shape != per_position(x.shape))
    bad(op, "Expected target size " + shape_str(per_position(x.shape)) + ", got " + shape_str(t.shape));
  return {like(x, a[3].i == 0 ? per_position(x.shape) : Shape{})};
}
std::vector<Tensor> ref_cross_entropy(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &x = in[0], &t = in[1];
  const bool probs = dtype_is_float(t.dtype());
  const int64_t C = x.dim() >= 2 ? x.shape()[1] : x.shape()[0];
  const int64_t N = x.dim() >= 1 ? x.shape()[0] : 1;
  const int64_t inner = x.dim() >= 2 ? x.numel() / (N * C) : 1, rows = x.dim() >= 2 ? N * inner : 1;
  const double ls = a[5].number();
  const int64_t red = a[3].i, ignore = a[4].i;
  Tensor y(outs[0].dtype, outs[0].shape);
  double sum = 0, total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = r / inner, i = r % inner;
    auto at = [&](int64_t c) { return (n * C + c) * inner + i; };
    double m = -std::numeric_limits<double>::infinity(), s = 0;
    for (int64_t c = 0; c < C; ++c) m = std::max(m, x.get(at(c)));
    for (int64_t c = 0; c < C; ++c) s += std::exp(x.get(at(c)) - m);
    auto lsm = [&](int64_t c) { return x.get(at(c)) - m - std::log(s); };
    auto w = [&](int64_t c) { return a[2].is_node() ? in[2].get(c) : 1.0; };
    double l = 0;
    if (probs) {
      for (int64_t c = 0; c < C; ++c) l -= lsm(c) * (t.get(at(c)) * (1 - ls) + ls / static_cast<double>(C)) * w(c);
      total += 1;
    } else {
      const int64_t k = static_cast<int64_t>(t.get(r));
      if (k != ignore) {
        if (k < 0 || k >= C) bad(op, "Target " + std::to_string(k) + " is out of bounds.");
        double smooth = 0;
        for (int64_t c = 0; c < C; ++c) smooth -= lsm(c) * w(c);
        l = (1 - ls) * -lsm(k) * w(k) + ls / static_cast<double>(C) * smooth;
        total += w(k);
      }
    }
    sum += l;
    if (red == 0) y.set(r, l);
  }
  if (red == 2) y.set(0, sum);
  if (red == 1) y.set(0, sum / total);
  return {y};
}
std::vector<Arg> decomp_cross_entropy(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape xs = b.meta(a[0]).shape;
  const int64_t cd = xs.size() >= 2 ? 1 : 0, C = xs[cd];
  const int64_t red = a[3].i;
  const double ls = a[5].number();
  const Arg lsm = b.call("aten._log_softmax.default", {a[0], Arg::of_int(cd), Arg::of_bool(false)});
  Shape ws(xs.size(), 1);
  ws[cd] = C;
  const Arg w = a[2].is_node() ? b.call("aten.view.default", {a[2], Arg::of_ints(ws)}) : Arg::none();
  auto weighted = [&](const Arg& v) { return w.is_node() ? b.call("aten.mul.Tensor", {v, w}) : v; };
  auto class_sum = [&](const Arg& v) { return b.call("aten.neg.default", {b.call("aten.sum.dim_IntList", {v, Arg::of_ints({cd}), Arg::of_bool(false)})}); };
  if (dtype_is_float(b.meta(a[1]).dtype)) {
    Arg t = a[1];
    if (ls > 0) t = b.call("aten.add.Tensor", {b.call("aten.mul.Tensor", {t, Arg::of_real(1 - ls)}), Arg::of_real(ls / static_cast<double>(C))});
    const Arg l = class_sum(weighted(b.call("aten.mul.Tensor", {lsm, t})));
    if (red == 0) return {l};
    if (red == 2) return {b.call("aten.sum.default", {l})};
    return {b.call("aten.div.Tensor", {b.call("aten.sum.default", {l}), Arg::of_real(static_cast<double>(numel_of(xs) / C))})};
  }
  // nll_loss_nd: positions beyond (N, C) folded into the batch, the classes last.
  Arg rows = lsm, target = a[1];
  if (xs.size() > 2) {
    std::vector<int64_t> perm = {0};
    for (int64_t d = 2; d < static_cast<int64_t>(xs.size()); ++d) perm.push_back(d);
    perm.push_back(1);
    const int64_t P = numel_of(per_position(xs));
    rows = b.call("aten.reshape.default", {b.call("aten.permute.default", {lsm, Arg::of_ints(perm)}), Arg::of_ints({P, C})});
    target = b.call("aten.reshape.default", {a[1], Arg::of_ints({P})});
  }
  const Arg nll = b.call("aten.nll_loss_forward.default", {rows, target, a[2], a[3], a[4]});
  Arg loss = b.get(nll, 0);
  if (xs.size() > 2 && red == 0) loss = b.call("aten.view.default", {loss, Arg::of_ints(per_position(xs))});
  if (ls == 0) return {loss};
  Arg smooth = class_sum(weighted(lsm));
  smooth = b.call("aten.where.self", {b.call("aten.ne.Scalar", {a[1], a[4]}), smooth, Arg::of_real(0.0)});
  Arg ret = smooth;
  if (red == 2) ret = b.call("aten.sum.default", {smooth});
  if (red == 1) ret = b.call("aten.div.Tensor", {b.call("aten.sum.default", {smooth}), b.get(nll, 1)});
  return {b.call("aten.add.Tensor", {b.call("aten.mul.Tensor", {loss, Arg::of_real(1 - ls)}),
                                     b.call("aten.mul.Tensor", {ret, Arg::of_real(ls / static_cast<double>(C))})})};
}

// ---- smooth_l1_loss, binary_cross_entropy_with_logits (issue 32) ----

double smooth_l1(double d, double beta) {
  const double ad = std::abs(d);
  return ad < beta ? 0.5 * d * d / beta : ad - 0.5 * beta;
}
std::vector<TensorMeta> infer_smooth_l1(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  if (a[3].number() < 0) bad(op, "smooth_l1_loss does not support negative values for beta");
  return infer_mse_loss(g, op, a);
}
std::vector<Tensor> ref_smooth_l1(const OpDef&, const std::vector<Arg>& a, const RefInputs& v, const std::vector<TensorMeta>& outs) {
  const Shape s = broadcast_shapes(v[0].shape(), v[1].shape());
  const Shape sa = broadcast_strides(v[0].shape(), s), sb = broadcast_strides(v[1].shape(), s);
  const int64_t n = numel_of(s);
  Tensor out(outs[0].dtype, outs[0].shape);
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double l = smooth_l1(v[0].get(offset_of(i, s, sa)) - v[1].get(offset_of(i, s, sb)), a[3].number());
    if (a[2].i == 0) out.set(i, l);
    total += l;
  }
  if (a[2].i == 1) out.set(0, total / static_cast<double>(n));
  if (a[2].i == 2) out.set(0, total);
  return {out};
}
Arg reduce_loss(GraphBuilder& b, const Arg& l, int64_t red) {
  if (red == 0) return l;
  return b.call(red == 2 ? "aten.sum.default" : "aten.mean.default", {l});
}
// As PyTorch's Core ATen graph of it: where(|d| < beta, 0.5 * |d|^2 / beta, |d| - 0.5 * beta).
Arg decomp_smooth_l1(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const double beta = a[3].number();
  const Arg ad = b.call("aten.abs.default", {b.call("aten.sub.Tensor", {a[0], a[1]})});
  const Arg quad = b.call("aten.div.Tensor", {b.call("aten.mul.Tensor", {b.call("aten.pow.Tensor_Scalar", {ad, Arg::of_int(2)}), Arg::of_real(0.5)}),
                                              Arg::of_real(beta)});
  const Arg lin = b.call("aten.sub.Tensor", {ad, Arg::of_real(0.5 * beta)});
  return reduce_loss(b, b.call("aten.where.self", {b.call("aten.lt.Scalar", {ad, Arg::of_real(beta)}), quad, lin}), a[2].i);
}
// smooth_l1_loss_backward(grad_output, self, target, reduction, beta), as torch._decomp.
std::vector<Arg> decomp_smooth_l1_backward(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Shape s = broadcast_shapes(b.meta(a[1]).shape, b.meta(a[2]).shape);
  const double beta = a[4].number();
  const double norm = a[3].i == 1 ? 1.0 / static_cast<double>(std::max<int64_t>(numel_of(s), 1)) : 1.0;
  const Arg x = b.call("aten.sub.Tensor", {a[1], a[2]});
  const Arg ng = b.call("aten.mul.Tensor", {a[0], Arg::of_real(norm)});
  const Arg in_quad = b.call("aten.lt.Scalar", {b.call("aten.abs.default", {x}), Arg::of_real(beta)});
  const Arg quad = b.call("aten.div.Tensor", {b.call("aten.mul.Tensor", {ng, x}), Arg::of_real(beta == 0 ? 1.0 : beta)});
  const Arg lin = b.call("aten.mul.Tensor", {ng, b.call("aten.sign.default", {x})});
  return {b.call("aten.where.self", {in_quad, quad, lin})};
}
std::vector<TensorMeta> infer_smooth_l1_backward(const Graph& g, const OpDef&, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[1]);
  return {like(x, broadcast_shapes(x.shape, meta_of(g, a[2]).shape))};
}
Args d_smooth_l1(DerivCtx& c) {
  Args r(4, kNone);
  if (wants(c, 0))
    r[0] = grad_for(c, 0, call(c, "aten.smooth_l1_loss_backward.default", {c.grads[0], c.args[0], c.args[1], c.args[2], c.args[3]}));
  if (wants(c, 1))
    r[1] = grad_for(c, 1, call(c, "aten.smooth_l1_loss_backward.default", {c.grads[0], c.args[1], c.args[0], c.args[2], c.args[3]}));
  return r;
}

// binary_cross_entropy_with_logits(self, target, weight, pos_weight, reduction), as torch._decomp:
// (1 - target) * x - log_weight * logsigmoid(x), log_weight = (pos_weight - 1) * target + 1;
// logsigmoid(x) = min(x, 0) - log1p(exp(-|x|)). Differentiated through its decomposition.
std::vector<TensorMeta> infer_bce_logits(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta &x = meta_of(g, a[0]), &t = meta_of(g, a[1]);
  if (x.shape != t.shape) bad(op, "target size " + shape_str(t.shape) + " must be the same as input size " + shape_str(x.shape));
  check_reduction(op, a[4].i);
  Shape s = x.shape;
  for (int i : {2, 3})
    if (a[i].is_node()) s = broadcast_shapes(s, meta_of(g, a[i]).shape);
  if (s != x.shape) bad(op, "weight and pos_weight must broadcast to the input's shape " + shape_str(x.shape));
  return {like(x, a[4].i == 0 ? x.shape : Shape{})};
}
std::vector<Tensor> ref_bce_logits(const OpDef&, const std::vector<Arg>& a, const RefInputs& v, const std::vector<TensorMeta>& outs) {
  const Shape s = v[0].shape();
  const int64_t n = numel_of(s);
  const Shape ws = a[2].is_node() ? broadcast_strides(v[2].shape(), s) : Shape{}, ps = a[3].is_node() ? broadcast_strides(v[3].shape(), s) : Shape{};
  Tensor out(outs[0].dtype, outs[0].shape);
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = v[0].get(i), t = v[1].get(i);
    const double logsig = std::min(x, 0.0) - std::log1p(std::exp(-std::abs(x)));
    const double lw = a[3].is_node() ? (v[3].get(offset_of(i, s, ps)) - 1) * t + 1 : 1.0;
    double l = (1 - t) * x - lw * logsig;
    if (a[2].is_node()) l *= v[2].get(offset_of(i, s, ws));
    if (a[4].i == 0) out.set(i, l);
    total += l;
  }
  if (a[4].i == 1) out.set(0, total / static_cast<double>(n));
  if (a[4].i == 2) out.set(0, total);
  return {out};
}
Arg decomp_bce_logits(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Arg x = a[0], t = a[1];
  const Arg neg_t = b.call("aten.sub.Tensor", {b.call("aten.neg.default", {t}), Arg::of_real(-1.0)});  // 1 - t
  const Arg logsig = b.call("aten.sub.Tensor", {b.call("aten.clamp.default", {x, Arg::none(), Arg::of_real(0.0)}),
                                                b.call("aten.log1p.default", {b.call("aten.exp.default", {b.call("aten.neg.default", {b.call("aten.abs.default", {x})})})})});
  Arg lw_logsig = logsig;
  if (a[3].is_node()) {
    const Arg lw = b.call("aten.add.Tensor", {b.call("aten.mul.Tensor", {b.call("aten.sub.Tensor", {a[3], Arg::of_real(1.0)}), t}), Arg::of_real(1.0)});
    lw_logsig = b.call("aten.mul.Tensor", {lw, logsig});
  }
  Arg l = b.call("aten.sub.Tensor", {b.call("aten.mul.Tensor", {neg_t, x}), lw_logsig});
  if (a[2].is_node()) l = b.call("aten.mul.Tensor", {l, a[2]});
  return reduce_loss(b, l, a[4].i);
}
}  // namespace

void add_loss_ops(std::vector<OpDef>& t) {
  const std::vector<OpDef> ops = {
      comp("aten.mse_loss.default", "mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor", kAten, infer_mse_loss,
           ref_mse_loss, single<decomp_mse_loss>, d_mse_loss),
      comp("aten.mse_loss_backward.default",
           "mse_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction) -> Tensor", kCore, same_as<1>, nullptr,
           decomp_mse_loss_backward),
      // ---- issue 32 ----
      comp("aten.nll_loss_forward.default",
           "nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index) -> (Tensor output, "
           "Tensor total_weight)",
           kAten, infer_nll_loss_forward, ref_nll_loss_forward, decomp_nll_loss_forward, d_nll_loss_forward),
      comp("aten.nll_loss_backward.default",
           "nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index, "
           "Tensor total_weight) -> Tensor",
           kAten, infer_nll_loss_backward, ref_nll_loss_backward, decomp_nll_loss_backward),
      comp("aten.nll_loss.default",
           "nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, SymInt ignore_index=-100) -> Tensor", kAten,
           infer_nll_loss_forward, ref_nll_loss_forward, decomp_nll_loss),
      comp("aten.cross_entropy_loss.default",
           "cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, SymInt ignore_index=-100, float "
           "label_smoothing=0.0) -> Tensor",
           kAten, infer_cross_entropy, ref_cross_entropy, decomp_cross_entropy),
      comp("aten.smooth_l1_loss.default", "smooth_l1_loss(Tensor self, Tensor target, int reduction=1, float beta=1.0) -> Tensor", kAten,
           infer_smooth_l1, ref_smooth_l1, single<decomp_smooth_l1>, d_smooth_l1),
      comp("aten.smooth_l1_loss_backward.default",
           "smooth_l1_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction, float beta) -> Tensor", kAten,
           infer_smooth_l1_backward, nullptr, decomp_smooth_l1_backward),
      comp("aten.binary_cross_entropy_with_logits.default",
           "binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, Tensor? pos_weight=None, int "
           "reduction=1) -> Tensor",
           kAten, infer_bce_logits, ref_bce_logits, single<decomp_bce_logits>),
  };
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
