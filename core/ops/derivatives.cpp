// The op table's derivative rules (reverse mode), one per differentiable op, as
// torch/csrc/autograd's derivatives.yaml gives them: each emits its vector-Jacobian product as
// calls of other ops of the table, so the backward graph decomposes, lowers and fuses like any
// other graph. Fused backward ops (threshold_backward, native_layer_norm_backward,
// convolution_backward, _softmax_backward_data, ...) are used where PyTorch uses them.
// Tested per op against central finite differences in float64 (tests/test_autodiff.cpp).
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "ops/rule_helpers.h"

namespace ls {
namespace {

using namespace rules;

// ---- matrix multiply, convolution, normalization, pooling, softmax ---------------------------

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
Args d_softmax(DerivCtx& c) {
  return one(call(c, "aten._softmax_backward_data.default",
                  {c.grads[0], c.out(0), c.args[1], Arg::of_string(std::string(dtype_torch(c.b.meta(c.args[0]).dtype)))}),
             3);
}
// Efficient attention: one backward kernel for q, k and v, from the output and its log-sum-exp.
Args d_attention(DerivCtx& c) {
  const Args& a = c.args;  // q, k, v, attn_bias, compute_log_sumexp, dropout_p, is_causal, scale
  Args r(a.size(), kNone);
  Arg mask;
  mask.kind = Arg::Kind::list;
  for (size_t i : {0, 1, 2}) mask.list.push_back(Arg::of_bool(wants(c, i)));
  mask.list.push_back(Arg::of_bool(false));
  const Arg g = c.grads[0].is_none() ? zeros(c, shape_of(c, c.out(0)), c.b.meta(a[0]).dtype) : c.grads[0];
  const Arg bw = call(c, "aten._scaled_dot_product_efficient_attention_backward.default",
                      {g, a[0], a[1], a[2], kNone, c.out(0), c.out(1), c.out(2), c.out(3), num(0.0), mask, a[6]},
                      {{"scale", a[7]}});
  for (size_t i : {0, 1, 2})
    if (wants(c, i)) r[i] = c.b.get(bw, static_cast<int>(i));
  return r;
}
}  // namespace

void add_derivatives(std::vector<OpDef>& table) {
  static const std::pair<const char*, DerivFn> rules[] = {
      // library ops and normalization
      {"aten._native_batch_norm_legit_no_training.default", d_batch_norm_eval},
      {"aten.native_layer_norm.default", d_native_layer_norm}, {"aten._softmax.default", d_softmax},
      {"aten._scaled_dot_product_efficient_attention.default", d_attention},
  };
  for (const auto& rule : rules) {
    const std::string name = rule.first;
    auto it = std::find_if(table.begin(), table.end(), [&name](const OpDef& op) { return op.name == name; });
    if (it == table.end()) throw std::logic_error("derivative rule for unknown op " + name);
    it->derivative = rule.second;
  }
}

}  // namespace ls
