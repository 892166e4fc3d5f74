// Losses: mse_loss, and the backward op AOTAutograd's graphs call for it.
#include <algorithm>

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

}  // namespace

void add_loss_ops(std::vector<OpDef>& t) {
  const std::vector<OpDef> ops = {
      comp("aten.mse_loss.default", "mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor", kAten, infer_mse_loss,
           ref_mse_loss, single<decomp_mse_loss>, d_mse_loss),
      comp("aten.mse_loss_backward.default",
           "mse_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction) -> Tensor", kCore, same_as<1>, nullptr,
           decomp_mse_loss_backward),
  };
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
