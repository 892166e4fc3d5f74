// Elementwise ops: ATen's unary and binary math, comparisons and where, the activations (relu,
// sigmoid, gelu, hardswish, clamp, ...), the prims they decompose into, and the elementwise backward
// ops AOTAutograd's graphs call (threshold_backward, gelu_backward, ...). A pointwise op's shape
// rule, reference kernel and lowering are those of its kind, from its scalar `math` (ops/math.h);
// here are its decomposition (towards the prim of the same math, as torch._refs writes it) and
// its derivative (as derivatives.yaml gives it). Composites carry their own rules.
#include <cmath>
#include <stdexcept>

#include "ops/rule_helpers.h"

namespace ls {
namespace {

using namespace rules;

// ---- decompositions -------------------------------------------------------------------------

Arg broadcast_to(GraphBuilder& b, const Arg& x, const Shape& shape) {
  if (!x.is_node() || b.meta(x).shape == shape) return x;
  const Shape& s = b.meta(x).shape;
  std::vector<int64_t> bdims;
  for (size_t i = 0; i < s.size(); ++i) bdims.push_back(static_cast<int64_t>(shape.size() - s.size() + i));
  return b.call("prims.broadcast_in_dim.default", {x, Arg::of_ints(shape), Arg::of_ints(bdims)});
}

const OpDef* prim_with_math(Math m) {
  for (const OpDef& op : all_ops())
    if (op.in(level::prims) && op.kind == OpKind::pointwise && op.math == m) return &op;
  return nullptr;
}

// aten pointwise -> the prim of the same math, with explicit broadcasts (as torch._refs does).
Arg decomp_pointwise(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& args) {
  const OpDef* prim = prim_with_math(op.math);
  if (!prim) throw std::logic_error(op.name + " has no prim of the same math");
  Shape shape;
  bool first = true;
  const auto ops = operand_indices(op);
  for (int k : ops)
    if (args[k].is_node()) {
      shape = first ? b.meta(args[k]).shape : broadcast_shapes(shape, b.meta(args[k]).shape);
      first = false;
    }
  std::vector<Arg> in;
  for (int k : ops) in.push_back(broadcast_to(b, args[k], shape));
  const double alpha = alpha_of(op, args);
  if (alpha != 1.0) in[1] = b.call("prims.mul.default", {in[1], Arg::of_real(alpha)});
  return b.call(prim->name, in);
}

Arg decomp_pow_scalar(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& args) {
  if (args[1].is_number() && args[1].number() == 2.0) return b.call("prims.mul.default", {args[0], args[0]});
  return decomp_pointwise(b, op, args);
}

Arg decomp_relu(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Arg le = b.call("prims.le.default", {a[0], Arg::of_real(0.0)});
  return b.call("prims.where.default", {le, Arg::of_real(0.0), a[0]});
}

Arg decomp_sigmoid(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Arg e = b.call("prims.exp.default", {b.call("prims.neg.default", {a[0]})});
  return b.call("prims.div.default", {Arg::of_real(1.0), b.call("prims.add.default", {e, Arg::of_real(1.0)})});
}

std::vector<Arg> decomp_hardsigmoid(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Arg c = b.call("aten.clamp.default", {b.call("aten.add.Tensor", {a[0], Arg::of_int(3)}), Arg::of_int(0), Arg::of_int(6)});
  const Arg hs = b.call("aten.div.Tensor", {c, Arg::of_int(6)});
  return {op.math == Math::hardswish ? b.call("aten.mul.Tensor", {a[0], hs}) : hs};
}
std::vector<Arg> decomp_gelu(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  // 0.5 * x * (1 + erf(x / sqrt(2))), or the tanh approximation.
  if (a[1].s == "tanh") {
    const Arg x3 = b.call("prims.mul.default", {b.call("prims.mul.default", {a[0], a[0]}), a[0]});
    const Arg inner = b.call("prims.mul.default", {b.call("prims.add.default", {a[0], b.call("prims.mul.default", {x3, Arg::of_real(0.044715)})}),
                                                   Arg::of_real(0.7978845608028654)});
    const Arg t = b.call("prims.add.default", {b.call("prims.tanh.default", {inner}), Arg::of_real(1.0)});
    return {b.call("prims.mul.default", {b.call("prims.mul.default", {a[0], Arg::of_real(0.5)}), t})};
  }
  const Arg e = b.call("prims.erf.default", {b.call("prims.mul.default", {a[0], Arg::of_real(0.7071067811865476)})});
  return {b.call("prims.mul.default", {b.call("prims.mul.default", {a[0], Arg::of_real(0.5)}), b.call("prims.add.default", {e, Arg::of_real(1.0)})})};
}

std::vector<Arg> decomp_clamp(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  Arg x = a[0];
  if (!a[1].is_none()) x = b.call("prims.maximum.default", {x, Arg::of_real(a[1].number())});
  if (!a[2].is_none()) x = b.call("prims.minimum.default", {x, Arg::of_real(a[2].number())});
  return {x};
}
std::vector<TensorMeta> infer_clamp(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  if (a[1].is_none() && a[2].is_none()) bad(op, "needs at least one of min and max");
  return {like(x, x.dtype, x.shape)};
}
std::vector<Tensor> ref_clamp(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t i = 0; i < y.numel(); ++i) {
    double v = in[0].get(i);
    if (!a[1].is_none() && !(v >= a[1].number())) v = std::isnan(v) ? v : a[1].number();
    if (!a[2].is_none() && v > a[2].number()) v = a[2].number();
    y.set(i, v);
  }
  return {y};
}

// leaky_relu: x where x > 0, else x * negative_slope. Decomposition as torch._refs writes it; the
// derivative as derivatives.yaml gives it, through leaky_relu_backward (as torch._decomp writes it).
std::vector<Tensor> ref_leaky_relu(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t i = 0; i < y.numel(); ++i) y.set(i, in[0].get(i) > 0 ? in[0].get(i) : in[0].get(i) * a[1].number());
  return {y};
}
std::vector<Arg> decomp_leaky_relu(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Arg positive = call(b, "aten.gt.Scalar", {a[0], Arg::of_int(0)});
  return {call(b, "aten.where.self", {positive, a[0], call(b, "aten.mul.Scalar", {a[0], a[1]})})};
}
std::vector<Arg> decomp_leaky_relu_backward(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Arg positive = call(b, "aten.gt.Scalar", {a[1], Arg::of_int(0)});
  return {call(b, "aten.where.self", {positive, a[0], call(b, "aten.mul.Scalar", {a[0], a[2]})})};
}
Args d_leaky_relu(DerivCtx& c) {
  return one(call(c, "aten.leaky_relu_backward.default", {c.grads[0], c.args[0], c.args[1], Arg::of_bool(false)}), 2);
}

// ---- backward ops (AOTAutograd's), each a composite of the ops above -------------------------

std::vector<Arg> decomp_threshold_backward(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  return {call(b, "aten.where.self", {call(b, "aten.le.Scalar", {a[1], a[2]}), num(0.0), a[0]})};
}
std::vector<Arg> decomp_sgn(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Arg neg = call(b, "aten.where.self", {call(b, "aten.lt.Scalar", {a[0], num(0.0)}), num(-1.0), num(0.0)});
  return {call(b, "aten.where.self", {call(b, "aten.gt.Scalar", {a[0], num(0.0)}), num(1.0), neg})};
}
// d/dx [x * Phi(x)] = Phi(x) + x * phi(x)
std::vector<Arg> decomp_gelu_backward(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  if (a[2].s == "tanh") throw std::invalid_argument(op.name + ": the tanh approximation's gradient is not supported yet");
  const Arg x = a[1];
  const Arg cdf = call(b, "aten.mul.Tensor", {call(b, "aten.add.Tensor", {call(b, "aten.erf.default", {call(b, "aten.mul.Tensor", {x, num(M_SQRT1_2)})}), num(1.0)}), num(0.5)});
  const Arg pdf = call(b, "aten.mul.Tensor", {call(b, "aten.exp.default", {call(b, "aten.mul.Tensor", {call(b, "aten.mul.Tensor", {x, x}), num(-0.5)})}),
                                              num(0.3989422804014327)});
  return {call(b, "aten.mul.Tensor", {a[0], call(b, "aten.add.Tensor", {cdf, call(b, "aten.mul.Tensor", {x, pdf})})})};
}
std::vector<Arg> decomp_hardswish_backward(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Arg x = a[1];
  const Arg mid = call(b, "aten.mul.Tensor", {a[0], call(b, "aten.add.Tensor", {call(b, "aten.div.Tensor", {x, num(3.0)}), num(0.5)})});
  const Arg upper = call(b, "aten.where.self", {call(b, "aten.le.Scalar", {x, num(3.0)}), mid, a[0]});
  return {call(b, "aten.where.self", {call(b, "aten.lt.Scalar", {x, num(-3.0)}), num(0.0), upper})};
}
std::vector<Arg> decomp_hardsigmoid_backward(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Arg inside = call(b, "aten.where.self", {call(b, "aten.lt.Scalar", {a[1], num(3.0)}), call(b, "aten.div.Tensor", {a[0], num(6.0)}), num(0.0)});
  return {call(b, "aten.where.self", {call(b, "aten.gt.Scalar", {a[1], num(-3.0)}), inside, num(0.0)})};
}

// ---- derivatives ----------------------------------------------------------------------------

Args d_sin(DerivCtx& c) { return one(call(c, "aten.mul.Tensor", {c.grads[0], call(c, "aten.cos.default", {c.args[0]})}), 1); }
Args d_cos(DerivCtx& c) {
  return one(call(c, "aten.neg.default", {call(c, "aten.mul.Tensor", {c.grads[0], call(c, "aten.sin.default", {c.args[0]})})}), 1);
}
Args d_exp(DerivCtx& c) { return one(call(c, "aten.mul.Tensor", {c.grads[0], c.out(0)}), 1); }
Args d_log(DerivCtx& c) { return one(call(c, "aten.div.Tensor", {c.grads[0], c.args[0]}), 1); }
Args d_neg(DerivCtx& c) { return one(call(c, "aten.neg.default", {c.grads[0]}), 1); }
Args d_abs(DerivCtx& c) { return one(call(c, "aten.mul.Tensor", {c.grads[0], call(c, "aten.sgn.default", {c.args[0]})}), 1); }
Args d_sqrt(DerivCtx& c) {
  return one(call(c, "aten.div.Tensor", {c.grads[0], call(c, "aten.mul.Tensor", {c.out(0), num(2.0)})}), 1);
}
Args d_rsqrt(DerivCtx& c) {  // d/dx x^-1/2 = -1/2 y^3
  const Arg y3 = call(c, "aten.pow.Tensor_Scalar", {c.out(0), num(3.0)});
  return one(call(c, "aten.mul.Tensor", {call(c, "aten.mul.Tensor", {c.grads[0], y3}), num(-0.5)}), 1);
}
Args d_tanh(DerivCtx& c) {  // g (1 - y^2)
  const Arg gy = call(c, "aten.mul.Tensor", {c.grads[0], c.out(0)});
  return one(call(c, "aten.sub.Tensor", {c.grads[0], call(c, "aten.mul.Tensor", {gy, c.out(0)})}), 1);
}
Args d_sigmoid(DerivCtx& c) {  // g y (1 - y)
  const Arg y = c.out(0);
  return one(call(c, "aten.mul.Tensor", {c.grads[0], call(c, "aten.sub.Tensor", {y, call(c, "aten.mul.Tensor", {y, y})})}), 1);
}
Args d_reciprocal(DerivCtx& c) {  // -g y^2
  const Arg gy = call(c, "aten.mul.Tensor", {c.grads[0], c.out(0)});
  return one(call(c, "aten.neg.default", {call(c, "aten.mul.Tensor", {gy, c.out(0)})}), 1);
}
Args d_erf(DerivCtx& c) {  // g 2/sqrt(pi) exp(-x^2)
  const Arg x = c.args[0];
  const Arg e = call(c, "aten.exp.default", {call(c, "aten.neg.default", {call(c, "aten.mul.Tensor", {x, x})})});
  return one(call(c, "aten.mul.Tensor", {call(c, "aten.mul.Tensor", {c.grads[0], e}), num(M_2_SQRTPI)}), 1);
}
Args d_relu(DerivCtx& c) { return one(call(c, "aten.threshold_backward.default", {c.grads[0], c.out(0), Arg::of_int(0)}), 1); }
Args d_gelu(DerivCtx& c) {
  Args r(2, kNone);
  r[0] = c.b.call("aten.gelu_backward.default", {c.grads[0], c.args[0]}, {{"approximate", c.args[1]}});
  return r;
}
Args d_hardswish(DerivCtx& c) { return one(call(c, "aten.hardswish_backward.default", {c.grads[0], c.args[0]}), 1); }
Args d_hardsigmoid(DerivCtx& c) { return one(call(c, "aten.hardsigmoid_backward.default", {c.grads[0], c.args[0]}), 1); }

// Binary ops: each operand's gradient is summed back to its own shape (it may have been broadcast).
Args d_add(DerivCtx& c) {
  const double alpha = c.op.params.size() > 2 ? c.args[2].number() : 1.0;
  Args r(c.op.params.size(), kNone);
  r[0] = grad_for(c, 0, c.grads[0]);
  if (wants(c, 1)) r[1] = grad_for(c, 1, alpha == 1.0 ? c.grads[0] : call(c, "aten.mul.Tensor", {c.grads[0], num(alpha)}));
  return r;
}
Args d_sub(DerivCtx& c) {
  const double alpha = c.op.params.size() > 2 ? c.args[2].number() : 1.0;
  Args r(c.op.params.size(), kNone);
  r[0] = grad_for(c, 0, c.grads[0]);
  if (wants(c, 1)) r[1] = grad_for(c, 1, call(c, "aten.mul.Tensor", {c.grads[0], num(-alpha)}));
  return r;
}
Args d_mul(DerivCtx& c) {
  Args r(2, kNone);
  if (wants(c, 0)) r[0] = grad_for(c, 0, call(c, "aten.mul.Tensor", {c.grads[0], c.args[1]}));
  if (wants(c, 1)) r[1] = grad_for(c, 1, call(c, "aten.mul.Tensor", {c.grads[0], c.args[0]}));
  return r;
}
Args d_div(DerivCtx& c) {  // d(a/b)/db = -y/b
  Args r(2, kNone);
  if (wants(c, 0)) r[0] = grad_for(c, 0, call(c, "aten.div.Tensor", {c.grads[0], c.args[1]}));
  if (wants(c, 1)) {
    const Arg gy = call(c, "aten.mul.Tensor", {c.grads[0], c.out(0)});
    r[1] = grad_for(c, 1, call(c, "aten.neg.default", {call(c, "aten.div.Tensor", {gy, c.args[1]})}));
  }
  return r;
}
Args d_pow_scalar(DerivCtx& c) {  // g e x^(e-1)
  const double e = c.args[1].number();
  if (e == 0.0) return one(zeros(c, shape_of(c, c.args[0]), c.b.meta(c.args[0]).dtype), 2);
  const Arg xe = e == 2.0 ? c.args[0] : call(c, "aten.pow.Tensor_Scalar", {c.args[0], num(e - 1.0)});
  return one(call(c, "aten.mul.Tensor", {call(c, "aten.mul.Tensor", {c.grads[0], xe}), num(e)}), 2);
}
Args d_pow_tensor(DerivCtx& c) {  // x: g e x^(e-1); e: g y log(x)
  Args r(2, kNone);
  const Arg &x = c.args[0], &e = c.args[1];
  if (wants(c, 0)) {
    const Arg xe = call(c, "aten.pow.Tensor_Tensor", {x, call(c, "aten.sub.Tensor", {e, num(1.0)})});
    r[0] = grad_for(c, 0, call(c, "aten.mul.Tensor", {c.grads[0], call(c, "aten.mul.Tensor", {e, xe})}));
  }
  if (wants(c, 1))
    r[1] = grad_for(c, 1, call(c, "aten.mul.Tensor", {call(c, "aten.mul.Tensor", {c.grads[0], c.out(0)}), call(c, "aten.log.default", {x})}));
  return r;
}
// maximum/minimum: the gradient goes to the operand that was chosen (ties to the second).
template <bool Max>
Args d_extremum(DerivCtx& c) {
  Args r(2, kNone);
  const Arg first = call(c, Max ? "aten.gt.Tensor" : "aten.lt.Tensor", {c.args[0], c.args[1]});
  const Arg zero = num(0.0);
  if (wants(c, 0)) r[0] = grad_for(c, 0, call(c, "aten.where.self", {first, c.grads[0], zero}));
  if (wants(c, 1)) r[1] = grad_for(c, 1, call(c, "aten.where.self", {first, zero, c.grads[0]}));
  return r;
}
Args d_where(DerivCtx& c) {
  Args r(3, kNone);
  if (wants(c, 1)) r[1] = grad_for(c, 1, call(c, "aten.where.self", {c.args[0], c.grads[0], num(0.0)}));
  if (wants(c, 2)) r[2] = grad_for(c, 2, call(c, "aten.where.self", {c.args[0], num(0.0), c.grads[0]}));
  return r;
}

// ---- entries --------------------------------------------------------------------------------

OpDef unary_aten(const char* op, Math m, DerivFn der = nullptr, DecompFn d = single<decomp_pointwise>) {
  return {.name = std::string("aten.") + op + ".default", .schema = std::string(op) + "(Tensor self) -> Tensor",
          .kind = OpKind::pointwise, .levels = kCore, .math = m, .decompose = d, .derivative = der};
}
OpDef pointwise_aten(const char* name, const char* schema, Math m, DerivFn der = nullptr, unsigned lv = kCore,
                     DecompFn d = single<decomp_pointwise>) {
  return {.name = name, .schema = schema, .kind = OpKind::pointwise, .levels = lv, .math = m, .decompose = d, .derivative = der};
}
OpDef unary_prim(const char* op, Math m) {
  return {.name = std::string("prims.") + op + ".default", .schema = std::string(op) + "(Tensor self) -> Tensor",
          .kind = OpKind::pointwise, .levels = kPrims, .math = m};
}
OpDef binary_prim(const char* op, Math m) {
  return {.name = std::string("prims.") + op + ".default",
          .schema = std::string(op) + "(Tensor self, Tensor other) -> Tensor",
          .kind = OpKind::pointwise, .levels = kPrims, .math = m};
}
// A backward op of the ops above: a Core ATen composite shaped like its argument I.
template <int I>
OpDef backward_op(const char* name, const char* schema, DecompFn d) { return comp(name, schema, kCore, same_as<I>, nullptr, d); }

}  // namespace

void add_pointwise_ops(std::vector<OpDef>& t) {
  const std::vector<OpDef> ops = {
      // ATen, unary
      unary_aten("sin", Math::sin, d_sin), unary_aten("cos", Math::cos, d_cos), unary_aten("exp", Math::exp, d_exp),
      unary_aten("log", Math::log, d_log), unary_aten("neg", Math::neg, d_neg), unary_aten("abs", Math::abs, d_abs),
      unary_aten("sqrt", Math::sqrt, d_sqrt), unary_aten("rsqrt", Math::rsqrt, d_rsqrt), unary_aten("tanh", Math::tanh, d_tanh),
      unary_aten("reciprocal", Math::reciprocal, d_reciprocal), unary_aten("erf", Math::erf, d_erf),
      unary_aten("sigmoid", Math::sigmoid, d_sigmoid, single<decomp_sigmoid>),
      unary_aten("relu", Math::relu, d_relu, single<decomp_relu>),
      // ATen, binary
      pointwise_aten("aten.add.Tensor", "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", Math::add, d_add),
      pointwise_aten("aten.sub.Tensor", "sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", Math::sub, d_sub),
      pointwise_aten("aten.mul.Tensor", "mul.Tensor(Tensor self, Tensor other) -> Tensor", Math::mul, d_mul),
      pointwise_aten("aten.div.Tensor", "div.Tensor(Tensor self, Tensor other) -> Tensor", Math::div, d_div),
      pointwise_aten("aten.add.Scalar", "add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", Math::add, d_add),
      pointwise_aten("aten.sub.Scalar", "sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", Math::sub, d_sub),
      pointwise_aten("aten.mul.Scalar", "mul.Scalar(Tensor self, Scalar other) -> Tensor", Math::mul, d_mul),
      pointwise_aten("aten.div.Scalar", "div.Scalar(Tensor self, Scalar other) -> Tensor", Math::div, d_div),
      pointwise_aten("aten.pow.Tensor_Scalar", "pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor", Math::pow,
                     d_pow_scalar, kCore, single<decomp_pow_scalar>),
      pointwise_aten("aten.pow.Tensor_Tensor", "pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor", Math::pow,
                     d_pow_tensor),
      pointwise_aten("aten.maximum.default", "maximum(Tensor self, Tensor other) -> Tensor", Math::maximum, d_extremum<true>),
      pointwise_aten("aten.minimum.default", "minimum(Tensor self, Tensor other) -> Tensor", Math::minimum, d_extremum<false>),
      pointwise_aten("aten.lt.Scalar", "lt.Scalar(Tensor self, Scalar other) -> Tensor", Math::lt),
      pointwise_aten("aten.lt.Tensor", "lt.Tensor(Tensor self, Tensor other) -> Tensor", Math::lt),
      pointwise_aten("aten.le.Scalar", "le.Scalar(Tensor self, Scalar other) -> Tensor", Math::le),
      pointwise_aten("aten.gt.Scalar", "gt.Scalar(Tensor self, Scalar other) -> Tensor", Math::gt),
      pointwise_aten("aten.gt.Tensor", "gt.Tensor(Tensor self, Tensor other) -> Tensor", Math::gt),
      pointwise_aten("aten.ge.Scalar", "ge.Scalar(Tensor self, Scalar other) -> Tensor", Math::ge),
      pointwise_aten("aten.eq.Scalar", "eq.Scalar(Tensor self, Scalar other) -> Tensor", Math::eq),
      pointwise_aten("aten.eq.Tensor", "eq.Tensor(Tensor self, Tensor other) -> Tensor", Math::eq),
      pointwise_aten("aten.ge.Tensor", "ge.Tensor(Tensor self, Tensor other) -> Tensor", Math::ge),
      pointwise_aten("aten.ne.Scalar", "ne.Scalar(Tensor self, Scalar other) -> Tensor", Math::ne),
      pointwise_aten("aten.where.self", "where.self(Tensor condition, Tensor self, Tensor other) -> Tensor", Math::where, d_where),
      // ATen activations
      {.name = "aten.gelu.default", .schema = "gelu(Tensor self, *, str approximate='none') -> Tensor", .kind = OpKind::pointwise,
       .levels = kCore, .math = Math::gelu, .decompose = decomp_gelu, .derivative = d_gelu},
      {.name = "aten.hardsigmoid.default", .schema = "hardsigmoid(Tensor self) -> Tensor", .kind = OpKind::pointwise,
       .levels = kAten, .math = Math::hardsigmoid, .decompose = decomp_hardsigmoid, .derivative = d_hardsigmoid},
      {.name = "aten.hardswish.default", .schema = "hardswish(Tensor self) -> Tensor", .kind = OpKind::pointwise, .levels = kAten,
       .math = Math::hardswish, .decompose = decomp_hardsigmoid, .derivative = d_hardswish},
      comp("aten.clamp.default", "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor", kCore, infer_clamp, ref_clamp,
           decomp_clamp),
      comp("aten.leaky_relu.default", "leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor", kCore, same_as<0>,
           ref_leaky_relu, decomp_leaky_relu, d_leaky_relu),
      // prims
      unary_prim("sin", Math::sin), unary_prim("cos", Math::cos), unary_prim("exp", Math::exp),
      unary_prim("log", Math::log), unary_prim("neg", Math::neg), unary_prim("abs", Math::abs),
      unary_prim("sqrt", Math::sqrt), unary_prim("rsqrt", Math::rsqrt), unary_prim("tanh", Math::tanh),
      unary_prim("reciprocal", Math::reciprocal), unary_prim("erf", Math::erf),
      binary_prim("add", Math::add), binary_prim("sub", Math::sub), binary_prim("mul", Math::mul),
      binary_prim("div", Math::div), binary_prim("pow", Math::pow), binary_prim("maximum", Math::maximum),
      binary_prim("minimum", Math::minimum), binary_prim("lt", Math::lt), binary_prim("le", Math::le),
      binary_prim("gt", Math::gt), binary_prim("ge", Math::ge), binary_prim("eq", Math::eq), binary_prim("ne", Math::ne),
      {.name = "prims.where.default", .schema = "where(Tensor pred, Tensor a, Tensor b) -> Tensor",
       .kind = OpKind::pointwise, .levels = kPrims, .math = Math::where},
      // Backward ops
      backward_op<1>("aten.threshold_backward.default", "threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor",
                     decomp_threshold_backward),
      backward_op<1>("aten.gelu_backward.default",
                     "gelu_backward(Tensor grad_output, Tensor self, *, str approximate='none') -> Tensor", decomp_gelu_backward),
      backward_op<1>("aten.hardswish_backward.default", "hardswish_backward(Tensor grad_output, Tensor self) -> Tensor",
                     decomp_hardswish_backward),
      backward_op<1>("aten.hardsigmoid_backward.default", "hardsigmoid_backward(Tensor grad_output, Tensor self) -> Tensor",
                     decomp_hardsigmoid_backward),
      backward_op<1>("aten.leaky_relu_backward.default",
                     "leaky_relu_backward(Tensor grad_output, Tensor self, Scalar negative_slope, bool self_is_result) -> Tensor",
                     decomp_leaky_relu_backward),
      backward_op<0>("aten.sgn.default", "sgn(Tensor self) -> Tensor", decomp_sgn),
  };
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
