// Elementwise ops: ATen's unary and binary math, comparisons and where, the activations (relu,
// sigmoid, gelu, hardswish, clamp, ...), the prims they decompose into, and the elementwise backward
// ops AOTAutograd's graphs call (threshold_backward, gelu_backward, ...). A pointwise op's shape
// rule, reference kernel and lowering are those of its kind, from its scalar `math` (ops/math.h);
// here are its decomposition (towards the prim of the same math, as torch._refs writes it) and
// its derivative (as derivatives.yaml gives it). Composites carry their own rules.
#include <algorithm>
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
  if (alpha != 1.0) {
    // An integer operand is scaled by an integer alpha as an integer (a float 2.0 would promote
    // the sum to float32; PyTorch's add of int64 tensors with alpha=2 stays int64).
    const bool integral = in[1].is_node() ? !dtype_is_float(b.meta(in[1]).dtype) : in[1].kind == Arg::Kind::integer;
    const Arg a = integral && alpha == std::floor(alpha) ? Arg::of_int(static_cast<int64_t>(alpha)) : Arg::of_real(alpha);
    in[1] = b.call("prims.mul.default", {in[1], a});
  }
  return b.call(prim->name, in);
}

Arg decomp_pow_scalar(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& args) {
  if (args[1].is_number() && args[1].number() == 2.0) return b.call("prims.mul.default", {args[0], args[0]});
  return decomp_pointwise(b, op, args);
}

// where(x <= 0, 0, x), as torch._refs; an integer input's zero an integer (the result stays int).
Arg decomp_relu(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Arg zero = dtype_is_float(b.meta(a[0]).dtype) ? Arg::of_real(0.0) : Arg::of_int(0);
  const Arg le = b.call("prims.le.default", {a[0], zero});
  return b.call("prims.where.default", {le, zero, a[0]});
}

// 1 / (1 + exp(-x)), an integer or bool x made float32 first (torch._refs' INT_TO_FLOAT: a bool's
// negation as a bool, -true == true, gave sigmoid(true) = 0.27 on CUDA).
Arg decomp_sigmoid(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  Arg x = a[0];
  if (!dtype_is_float(b.meta(x).dtype)) x = b.call("prims.convert_element_type.default", {x, Arg::of_string(std::string(dtype_torch(DType::f32)))});
  const Arg e = b.call("prims.exp.default", {b.call("prims.neg.default", {x})});
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
  // A bound keeps its integer type on an integer tensor (an integer result, as PyTorch's type
  // promotion gives); on a float tensor it is written as a float.
  Arg x = a[0];
  const bool integral = !dtype_is_float(b.meta(x).dtype);
  auto bound = [integral](const Arg& v) { return integral && v.kind != Arg::Kind::real ? Arg::of_int(static_cast<int64_t>(v.number())) : Arg::of_real(v.number()); };
  if (!a[1].is_none()) x = b.call("prims.maximum.default", {x, bound(a[1])});
  if (!a[2].is_none()) x = b.call("prims.minimum.default", {x, bound(a[2])});
  return {x};
}
// derivatives.yaml: clamp's self: clamp_backward(grad, self, min, max), the gradient where
// min <= self <= max (either bound absent: that side open), zero elsewhere.
Args d_clamp(DerivCtx& c) {
  const Arg &x = c.args[0], &lo = c.args[1], &hi = c.args[2];
  Arg inside;
  if (!lo.is_none()) inside = call(c, "aten.ge.Scalar", {x, lo});
  if (!hi.is_none()) {
    const Arg le = call(c, "aten.le.Scalar", {x, hi});
    inside = inside.is_node() ? call(c, "aten.logical_and.default", {inside, le}) : le;
  }
  if (!inside.is_node()) return one(c.grads[0], 3);
  return one(call(c, "aten.where.self", {inside, c.grads[0], num(0.0)}), 3);
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
// d/dx [x * Phi(x)] = Phi(x) + x * phi(x). The tanh approximation 0.5 x (1 + tanh(u)), u = beta (x
// + kappa x^3), as torch._decomp writes its gradient: 0.5 (1 + t) + 0.5 x (1 - t^2) beta (1 + 3 kappa x^2).
std::vector<Arg> decomp_gelu_backward(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Arg x = a[1];
  if (a[2].kind == Arg::Kind::string && a[2].s == "tanh") {
    const double beta = M_SQRT2 * M_2_SQRTPI * 0.5, kappa = 0.044715;
    auto mul = [&](const Arg& p, const Arg& q) { return call(b, "aten.mul.Tensor", {p, q}); };
    auto add = [&](const Arg& p, const Arg& q) { return call(b, "aten.add.Tensor", {p, q}); };
    const Arg x_sq = mul(x, x), x_cube = mul(x_sq, x);
    const Arg t = call(b, "aten.tanh.default", {mul(add(x, mul(x_cube, num(kappa))), num(beta))});
    const Arg left = mul(x, num(0.5)), right = add(t, num(1.0));
    const Arg left_derivative = mul(right, num(0.5));
    const Arg inner_derivative = mul(add(mul(x_sq, num(3.0 * kappa)), num(1.0)), num(beta));
    const Arg right_derivative = mul(left, mul(add(mul(mul(t, t), num(-1.0)), num(1.0)), inner_derivative));
    return {mul(a[0], add(left_derivative, right_derivative))};
  }
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
// grad * sgn(x), as derivatives.yaml; for a complex x (|rfft(x)|), sgn(x) = x / |x| (0 at 0) is
// applied to x's real view, so the rule needs no complex arithmetic: view_as_complex(view_as_real(x)
// * (grad / |x|)[..., None]), |x| taken as 1 where it is 0 (the real view is 0 there).
Args d_abs(DerivCtx& c) {
  if (!dtype_is_complex(c.b.meta(c.args[0]).dtype))
    return one(call(c, "aten.mul.Tensor", {c.grads[0], call(c, "aten.sgn.default", {c.args[0]})}), 1);
  const Arg ax = c.out(0);
  const Arg safe = call(c, "aten.add.Tensor", {ax, call(c, "aten.eq.Scalar", {ax, num(0.0)})});
  const Arg scale = call(c, "aten.unsqueeze.default", {call(c, "aten.div.Tensor", {c.grads[0], safe}), Arg::of_int(-1)});
  const Arg r = call(c, "aten.view_as_real.default", {c.args[0]});
  return one(call(c, "aten.view_as_complex.default", {call(c, "aten.mul.Tensor", {r, scale})}), 1);
}
Args d_sqrt(DerivCtx& c) {
  return one(call(c, "aten.div.Tensor", {c.grads[0], call(c, "aten.mul.Tensor", {c.out(0), num(2.0)})}), 1);
}
Args d_rsqrt(DerivCtx& c) {  // d/dx x^-1/2 = -1/2 y^3
  const Arg y3 = call(c, "aten.pow.Tensor_Scalar", {c.out(0), num(3.0)});
  return one(call(c, "aten.mul.Tensor", {call(c, "aten.mul.Tensor", {c.grads[0], y3}), num(-0.5)}), 1);
}
// tanh's and sigmoid's derivatives are one op in PyTorch (tanh_backward, sigmoid_backward:
// pw_cast_for_opmath, float32 math for half operands, rounded once): half g and y are widened
// here, the steps run in float32 and the result is rounded back (float32 graphs unchanged).
DType half_pair(DerivCtx& c, const Arg& g, const Arg& y) {
  const DType t = c.b.meta(y).dtype;
  return g.is_node() && dtype_is_half(t) && c.b.meta(g).dtype == t ? t : DType::f32;
}
Arg widen(DerivCtx& c, const Arg& a, DType half) {
  return half == DType::f32 ? a : call(c, "prims.convert_element_type.default", {a, Arg::of_string(std::string(dtype_torch(DType::f32)))});
}
Arg narrow(DerivCtx& c, const Arg& a, DType half) {
  return half == DType::f32 ? a : call(c, "prims.convert_element_type.default", {a, Arg::of_string(std::string(dtype_torch(half)))});
}
Args d_tanh(DerivCtx& c) {  // g (1 - y^2)
  const DType h = half_pair(c, c.grads[0], c.out(0));
  const Arg g = widen(c, c.grads[0], h), y = widen(c, c.out(0), h);
  const Arg gy = call(c, "aten.mul.Tensor", {g, y});
  return one(narrow(c, call(c, "aten.sub.Tensor", {g, call(c, "aten.mul.Tensor", {gy, y})}), h), 1);
}
Args d_sigmoid(DerivCtx& c) {  // g y (1 - y)
  const DType h = half_pair(c, c.grads[0], c.out(0));
  const Arg g = widen(c, c.grads[0], h), y = widen(c, c.out(0), h);
  return one(narrow(c, call(c, "aten.mul.Tensor", {g, call(c, "aten.sub.Tensor", {y, call(c, "aten.mul.Tensor", {y, y})})}), h), 1);
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
// mul and div of complex values need conj(other) (derivatives.yaml's handle_r_to_c and .conj()),
// which the table has no op for: refused by name rather than a wrong gradient.
void refuse_complex_derivative(DerivCtx& c) {
  for (size_t i = 0; i < 2 && i < c.args.size(); ++i)
    if (c.args[i].is_node() && dtype_is_complex(c.b.meta(c.args[i]).dtype))
      throw std::invalid_argument("the derivative of " + c.op.name + " on complex tensors is not supported");
}
Args d_mul(DerivCtx& c) {
  refuse_complex_derivative(c);
  Args r(2, kNone);
  if (wants(c, 0)) r[0] = grad_for(c, 0, call(c, "aten.mul.Tensor", {c.grads[0], c.args[1]}));
  if (wants(c, 1)) r[1] = grad_for(c, 1, call(c, "aten.mul.Tensor", {c.grads[0], c.args[0]}));
  return r;
}
Args d_div(DerivCtx& c) {  // d(a/b)/db = -y/b
  refuse_complex_derivative(c);
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

// ---- rounding, float functions, predicates, logical and bitwise ops (Core ATen, issue 32) -----

// The operands broadcast, their types promoted (numbers aside): what the dtype rules below adjust.
TensorMeta promoted_operands(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta* first = nullptr;
  Shape shape;
  DType dt = DType::b8;
  for (int k : operand_indices(op)) {
    if (a[k].is_node()) {
      const TensorMeta& m = meta_of(g, a[k]);
      shape = first ? broadcast_shapes(shape, m.shape) : m.shape;
      dt = first ? promote(dt, m.dtype) : m.dtype;
      if (!first) first = &m;
    } else if (!a[k].is_number()) {
      bad(op, "argument '" + op.params[k].name + "' must be a tensor or a number");
    }
  }
  if (!first) bad(op, "needs at least one tensor argument");
  return like(*first, dt, shape);
}
// INT_TO_FLOAT (torch._refs' type promotion kind of log1p, asin, atan2, ...): an integer or bool
// operand gives float32.
std::vector<TensorMeta> infer_int_to_float(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  TensorMeta m = promoted_operands(g, op, a);
  if (!dtype_is_float(m.dtype)) m = like(m, DType::f32, m.shape);
  return {m};
}
// Bitwise ops take integer and bool operands only, as torch's kernels do; an integer number with
// bool tensors gives int64 (a number of a higher category wins).
std::vector<TensorMeta> infer_bitwise(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  TensorMeta m = promoted_operands(g, op, a);
  bool int_number = false;
  for (int k : operand_indices(op)) {
    if (a[k].is_node() && dtype_is_float(meta_of(g, a[k]).dtype))
      bad(op, "takes integer and bool tensors only, got " + std::string(dtype_short(meta_of(g, a[k]).dtype)) + " for '" +
                  op.params[k].name + "'");
    if (a[k].kind == Arg::Kind::real) bad(op, "takes integer and bool values only, got a float for '" + op.params[k].name + "'");
    int_number = int_number || a[k].kind == Arg::Kind::integer;
  }
  if (int_number && m.dtype == DType::b8) m = like(m, DType::i64, m.shape);
  return {m};
}
// bitwise_not of a bool is its logical not (~true is not false in an integer).
std::vector<Tensor> ref_bitwise_not(const OpDef&, const std::vector<Arg>&, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t i = 0; i < y.numel(); ++i) {
    const int64_t v = static_cast<int64_t>(in[0].get(i));
    y.set(i, y.dtype() == DType::b8 ? !v : y.dtype() == DType::u8 ? 255 - v : ~v);
  }
  return {y};
}

// isnan: x != x; isinf: |x| == inf for floats, false for integers (torch._refs).
Arg decomp_isnan(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) { return b.call("prims.ne.default", {a[0], a[0]}); }
Arg decomp_isinf(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  if (!dtype_is_float(b.meta(a[0]).dtype)) return b.call("prims.ne.default", {a[0], a[0]});
  return b.call("prims.eq.default", {b.call("prims.abs.default", {a[0]}), Arg::of_real(INFINITY)});
}
// logical_not: x == 0 (torch._refs writes ~x for a bool: the same values); logical_and/or/xor: the
// operands as bools (x != 0), broadcast, then the bitwise op (torch._refs).
Arg as_bool(GraphBuilder& b, const Arg& x) {
  return b.meta(x).dtype == DType::b8 ? x : b.call("prims.ne.default", {x, Arg::of_int(0)});
}
Arg decomp_logical_not(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) { return b.call("prims.eq.default", {a[0], Arg::of_int(0)}); }
// bitwise_not: ~x; a bool's is its logical not, x == 0 (Math::bitwise_not's double is ~x, which is
// no bool's value).
Arg decomp_bitwise_not(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  if (b.meta(a[0]).dtype == DType::b8) return b.call("prims.eq.default", {a[0], Arg::of_int(0)});
  return b.call("prims.bitwise_not.default", {a[0]});
}
Arg decomp_logical_binary(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape shape = broadcast_shapes(b.meta(a[0]).shape, b.meta(a[1]).shape);
  const char* prim = op.math == Math::logical_and ? "prims.bitwise_and.default"
                     : op.math == Math::logical_or ? "prims.bitwise_or.default" : "prims.bitwise_xor.default";
  return b.call(prim, {broadcast_to(b, as_bool(b, a[0]), shape), broadcast_to(b, as_bool(b, a[1]), shape)});
}

// round.decimals: x rounded half to even at 10^-decimals, as PyTorch's CPU kernel
// (round_decimals_kernel) computes it in the op math type: decimals >= 0: nearbyint(x * 10^d) / 10^d;
// decimals < 0: nearbyint(x / 10^-d) * 10^-d. Floating types only ("round_cpu" not implemented for
// integers). The decomposition is the same two steps around aten.round.default.
std::vector<TensorMeta> infer_round_decimals(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  if (!dtype_is_float(x.dtype)) bad(op, "\"round_cpu\" not implemented for " + std::string(dtype_short(x.dtype)) + " (decimals need a floating point input)");
  return {like(x, x.shape)};
}
template <class T>
T round_at(T x, int64_t decimals) {
  const T p = static_cast<T>(std::pow(10.0, static_cast<double>(decimals < 0 ? -decimals : decimals)));
  return decimals < 0 ? std::nearbyint(x / p) * p : std::nearbyint(x * p) / p;
}
std::vector<Tensor> ref_round_decimals(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  Tensor y(outs[0].dtype, outs[0].shape);
  const int64_t d = a[1].i;
  for (int64_t i = 0; i < y.numel(); ++i)  // float64 in double; float32 and the half types in float (their op math type)
    y.set(i, y.dtype() == DType::f64 ? round_at<double>(in[0].get(i), d) : round_at<float>(static_cast<float>(in[0].get(i)), d));
  return {y};
}
Arg decomp_round_decimals(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const int64_t d = a[1].i;
  if (d == 0) return b.call("aten.round.default", {a[0]});
  const Arg p = Arg::of_real(std::pow(10.0, static_cast<double>(d < 0 ? -d : d)));
  const Arg scaled = b.call(d < 0 ? "aten.div.Scalar" : "aten.mul.Scalar", {a[0], p});
  return b.call(d < 0 ? "aten.mul.Scalar" : "aten.div.Scalar", {b.call("aten.round.default", {scaled}), p});
}

// Derivatives as derivatives.yaml gives them. Rounding and sign: zeros_like(grad).
Args d_zero(DerivCtx& c) { return one(zeros(c, shape_of(c, c.args[0]), c.b.meta(c.args[0]).dtype), c.op.params.size()); }
Args d_log1p(DerivCtx& c) { return one(call(c, "aten.div.Tensor", {c.grads[0], call(c, "aten.add.Tensor", {c.args[0], num(1.0)})}), 1); }
Args d_expm1(DerivCtx& c) { return one(call(c, "aten.mul.Tensor", {c.grads[0], call(c, "aten.add.Tensor", {c.out(0), num(1.0)})}), 1); }
template <int Base>  // grad / (x * ln(base))
Args d_log_base(DerivCtx& c) {
  const double ln = Base == 2 ? M_LN2 : M_LN10;
  return one(call(c, "aten.div.Tensor", {c.grads[0], call(c, "aten.mul.Tensor", {c.args[0], num(ln)})}), 1);
}
Args d_tan(DerivCtx& c) {  // g (1 + y^2)
  const Arg y = c.out(0);
  return one(call(c, "aten.mul.Tensor", {c.grads[0], call(c, "aten.add.Tensor", {call(c, "aten.mul.Tensor", {y, y}), num(1.0)})}), 1);
}
// rsqrt(k - x^2) for asin and acos (k = 1), rsqrt(x^2 + k) for asinh (k = 1) and acosh (k = -1).
Arg rsqrt_of_square(DerivCtx& c, bool negate, double k) {
  Arg x2 = call(c, "aten.mul.Tensor", {c.args[0], c.args[0]});
  if (negate) x2 = call(c, "aten.neg.default", {x2});
  return call(c, "aten.rsqrt.default", {call(c, "aten.add.Tensor", {x2, num(k)})});
}
Args d_asin(DerivCtx& c) { return one(call(c, "aten.mul.Tensor", {c.grads[0], rsqrt_of_square(c, true, 1.0)}), 1); }
Args d_acos(DerivCtx& c) {
  return one(call(c, "aten.neg.default", {call(c, "aten.mul.Tensor", {c.grads[0], rsqrt_of_square(c, true, 1.0)})}), 1);
}
Args d_asinh(DerivCtx& c) { return one(call(c, "aten.mul.Tensor", {c.grads[0], rsqrt_of_square(c, false, 1.0)}), 1); }
Args d_acosh(DerivCtx& c) { return one(call(c, "aten.mul.Tensor", {c.grads[0], rsqrt_of_square(c, false, -1.0)}), 1); }
Args d_atan(DerivCtx& c) {  // g / (x^2 + 1)
  const Arg x2 = call(c, "aten.mul.Tensor", {c.args[0], c.args[0]});
  return one(call(c, "aten.div.Tensor", {c.grads[0], call(c, "aten.add.Tensor", {x2, num(1.0)})}), 1);
}
Args d_atanh(DerivCtx& c) {  // g / (1 - x^2)
  const Arg x2 = call(c, "aten.mul.Tensor", {c.args[0], c.args[0]});
  return one(call(c, "aten.div.Tensor", {c.grads[0], call(c, "aten.add.Tensor", {call(c, "aten.neg.default", {x2}), num(1.0)})}), 1);
}
Args d_sinh(DerivCtx& c) { return one(call(c, "aten.mul.Tensor", {c.grads[0], call(c, "aten.cosh.default", {c.args[0]})}), 1); }
Args d_cosh(DerivCtx& c) { return one(call(c, "aten.mul.Tensor", {c.grads[0], call(c, "aten.sinh.default", {c.args[0]})}), 1); }
Args d_atan2(DerivCtx& c) {  // atan2_backward: g * other / (self^2 + other^2), g * -self / (self^2 + other^2)
  Args r(2, kNone);
  const Arg &x = c.args[0], &y = c.args[1];
  const Arg recip = call(c, "aten.reciprocal.default",
                         {call(c, "aten.add.Tensor", {call(c, "aten.mul.Tensor", {x, x}), call(c, "aten.mul.Tensor", {y, y})})});
  const Arg gr = call(c, "aten.mul.Tensor", {c.grads[0], recip});
  if (wants(c, 0)) r[0] = grad_for(c, 0, call(c, "aten.mul.Tensor", {gr, y}));
  if (wants(c, 1)) r[1] = grad_for(c, 1, call(c, "aten.neg.default", {call(c, "aten.mul.Tensor", {gr, x})}));
  return r;
}
// remainder: other gets -g * floor(self / other); fmod: -g * trunc(self / other). A number as
// `other` (the .Scalar overloads) has no gradient.
template <bool Floor>
Args d_remainder(DerivCtx& c) {
  Args r(2, kNone);
  if (wants(c, 0)) r[0] = grad_for(c, 0, c.grads[0]);
  if (wants(c, 1)) {
    const Arg q = call(c, Floor ? "aten.floor.default" : "aten.trunc.default", {call(c, "aten.div.Tensor", {c.args[0], c.args[1]})});
    r[1] = grad_for(c, 1, call(c, "aten.neg.default", {call(c, "aten.mul.Tensor", {c.grads[0], q})}));
  }
  return r;
}

// ---- elu, hardtanh, clamp.Tensor, pow.Scalar, rounding division (Core ATen, issue 32) --------

// The operands broadcast and promoted as PyTorch's result_type does, numbers included: a float
// number makes an integer or bool result float32, an integer number makes a bool result int64.
TensorMeta result_type(const Graph& g, const OpDef& op, const std::vector<Arg>& a, const std::vector<int>& operands) {
  const TensorMeta* first = nullptr;
  Shape shape;
  DType dt = DType::b8;
  bool real_number = false, int_number = false;
  for (int k : operands) {
    if (a[k].is_node()) {
      const TensorMeta& m = meta_of(g, a[k]);
      shape = first ? broadcast_shapes(shape, m.shape) : m.shape;
      dt = first ? promote(dt, m.dtype) : m.dtype;
      if (!first) first = &m;
    } else if (a[k].kind == Arg::Kind::real) {
      real_number = true;
    } else if (a[k].kind == Arg::Kind::integer) {
      int_number = true;
    } else if (!a[k].is_none() && !a[k].is_number()) {
      bad(op, "argument '" + op.params[k].name + "' must be a tensor or a number");
    }
  }
  if (!first) bad(op, "needs at least one tensor argument");
  if (real_number && !dtype_is_float(dt)) dt = DType::f32;
  if (int_number && dt == DType::b8) dt = DType::i64;
  return like(*first, dt, shape);
}

// clamp.default: the result type of self and the bounds (a float bound on an integer tensor gives
// float32, an integer bound on a bool tensor int64), as PyTorch promotes them.
std::vector<TensorMeta> infer_clamp(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  if (a[1].is_none() && a[2].is_none()) bad(op, "needs at least one of min and max");
  if (meta_of(g, a[0]).dtype == DType::b8) bad(op, "is not implemented for bool tensors");
  return {result_type(g, op, a, {0, 1, 2})};
}

// elu: scale * x where x > 0, else alpha * scale * expm1(x * input_scale); floating point only.
// Decomposition as torch._refs writes it; the derivative through elu_backward (torch._decomp's).
std::vector<TensorMeta> infer_float_only(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  if (!dtype_is_float(x.dtype)) bad(op, "takes floating point tensors only, got " + std::string(dtype_short(x.dtype)));
  return {like(x, x.shape)};
}
std::vector<Tensor> ref_elu(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const double alpha = a[1].number(), scale = a[2].number(), input_scale = a[3].number();
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t i = 0; i < y.numel(); ++i) {
    const double x = in[0].get(i);
    y.set(i, x > 0 ? scale * x : alpha * scale * std::expm1(x * input_scale));
  }
  return {y};
}
Arg scaled(GraphBuilder& b, const Arg& x, double k) { return k == 1.0 ? x : call(b, "aten.mul.Tensor", {x, num(k)}); }
std::vector<Arg> decomp_elu(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const double alpha = a[1].number(), scale = a[2].number(), input_scale = a[3].number();
  const Arg neg = scaled(b, call(b, "aten.expm1.default", {scaled(b, a[0], input_scale)}), alpha * scale);
  return {call(b, "aten.where.self", {call(b, "aten.gt.Scalar", {a[0], Arg::of_int(0)}), scaled(b, a[0], scale), neg})};
}
// elu_backward(grad_output, alpha, scale, input_scale, is_result, self_or_result).
std::vector<Arg> decomp_elu_backward(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const double negcoef = a[1].number() * a[2].number(), poscoef = a[2].number(), negiptcoef = a[3].number();
  const Arg& g = a[0];
  const Arg& y = a[5];
  const Arg inner = a[4].b ? call(b, "aten.add.Tensor", {y, num(negcoef)})
                           : scaled(b, call(b, "aten.exp.default", {scaled(b, y, negiptcoef)}), negcoef);
  const Arg neg = call(b, "aten.mul.Tensor", {scaled(b, g, negiptcoef), inner});
  return {call(b, "aten.where.self", {call(b, "aten.le.Scalar", {y, Arg::of_int(0)}), neg, scaled(b, g, poscoef)})};
}
Args d_elu(DerivCtx& c) {
  return one(call(c, "aten.elu_backward.default", {c.grads[0], c.args[1], c.args[2], c.args[3], Arg::of_bool(false), c.args[0]}), 4);
}

// hardtanh: clamp(x, min_val, max_val) (torch._refs; integer tensors take the bounds as integers);
// bool tensors are refused, as PyTorch does. hardtanh_backward: zero where x <= min_val or
// x >= max_val (torch._decomp).
std::vector<TensorMeta> infer_hardtanh(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  if (x.dtype == DType::b8) bad(op, "is not implemented for bool tensors");
  return {like(x, x.shape)};
}
Arg bound_for(const TensorMeta& x, const Arg& v) {
  return dtype_is_float(x.dtype) ? v : Arg::of_int(static_cast<int64_t>(v.number()));
}
std::vector<Tensor> ref_hardtanh(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const double lo = bound_for(outs[0], a[1]).number(), hi = bound_for(outs[0], a[2]).number();
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t i = 0; i < y.numel(); ++i) {
    const double v = in[0].get(i);
    y.set(i, v < lo ? lo : v > hi ? hi : v);  // NaN stays NaN
  }
  return {y};
}
std::vector<Arg> decomp_hardtanh(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const TensorMeta x = b.meta(a[0]);
  return {call(b, "aten.clamp.default", {a[0], bound_for(x, a[1]), bound_for(x, a[2])})};
}
std::vector<Arg> decomp_hardtanh_backward(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Arg outside = call(b, "aten.logical_or.default", {call(b, "aten.le.Scalar", {a[1], a[2]}), call(b, "aten.ge.Scalar", {a[1], a[3]})});
  return {call(b, "aten.where.self", {outside, num(0.0), a[0]})};
}
Args d_hardtanh(DerivCtx& c) {
  return one(call(c, "aten.hardtanh_backward.default", {c.grads[0], c.args[0], c.args[1], c.args[2]}), 3);
}

// ---- silu, silu_backward, mish, softplus, relu6, addcmul, addcdiv (model zoo) ---------------
// silu: x * sigmoid(x) (torch._refs); its derivative through silu_backward, as derivatives.yaml
// gives it, decomposed as torch._decomp: grad * s * (1 + x * (1 - s)), s = 1 / (1 + exp(-x)).
// softplus: where(x * beta > threshold, x, log1p(exp(x * beta)) / beta); mish: x * tanh(softplus(x))
// (torch._refs). relu6: hardtanh(x, 0, 6), as PyTorch's CompositeImplicit kernel.
double sigmoid_of(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double softplus_of(double x, double beta, double threshold) {
  return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
}
template <int Kind>  // 0 silu, 1 mish, 2 softplus
std::vector<Tensor> ref_silu_family(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t i = 0; i < y.numel(); ++i) {
    const double x = in[0].get(i);
    y.set(i, Kind == 0 ? x * sigmoid_of(x) : Kind == 1 ? x * std::tanh(softplus_of(x, 1.0, 20.0)) : softplus_of(x, a[1].number(), a[2].number()));
  }
  return {y};
}
// Python's operators and other spellings torch.export keeps (x & y, torch.min(x, y),
// masked_fill): the ops they name. A masked_fill keeps self's type, as PyTorch's does.
template <const char* Target>
std::vector<Arg> decomp_alias(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  return {call(b, Target, {a[0], a[1]})};
}
constexpr char kBitwiseAndT[] = "aten.bitwise_and.Tensor", kBitwiseOrT[] = "aten.bitwise_or.Tensor",
               kBitwiseXorT[] = "aten.bitwise_xor.Tensor", kBitwiseAndS[] = "aten.bitwise_and.Scalar",
               kBitwiseOrS[] = "aten.bitwise_or.Scalar", kBitwiseXorS[] = "aten.bitwise_xor.Scalar",
               kMinimum[] = "aten.minimum.default", kMaximum[] = "aten.maximum.default";
// where with Python numbers (where.ScalarOther / ScalarSelf / Scalar): where.self, which takes them.
std::vector<Arg> decomp_where_scalar(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  return {call(b, "aten.where.self", {a[0], a[1], a[2]})};
}
// x.T on a tensor of any rank (numpy_T): its dims reversed.
std::vector<Arg> decomp_numpy_t(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const int64_t n = static_cast<int64_t>(b.meta(a[0]).shape.size());
  std::vector<int64_t> perm;
  for (int64_t d = n - 1; d >= 0; --d) perm.push_back(d);
  return {call(b, "aten.permute.default", {a[0], Arg::of_ints(perm)})};
}
std::vector<Arg> decomp_masked_fill(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  if (b.meta(a[1]).dtype != DType::b8) bad(op, "expected a boolean mask, got " + std::string(dtype_short(b.meta(a[1]).dtype)));
  if (a[2].is_node() && !b.meta(a[2]).shape.empty())
    bad(op, "only supports a 0-dimension value tensor, but got tensor with " + std::to_string(b.meta(a[2]).shape.size()) + " dimension(s)");
  Arg r = call(b, "aten.where.self", {a[1], a[2], a[0]});
  const DType want = b.meta(a[0]).dtype;
  if (b.meta(r).dtype != want) r = call(b, "prims.convert_element_type.default", {r, Arg::of_string(std::string(dtype_torch(want)))});
  if (b.meta(r).shape != b.meta(a[0]).shape) bad(op, "the mask's shape does not broadcast to self's " + shape_str(b.meta(a[0]).shape));
  return {r};
}
std::vector<Arg> decomp_silu(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  return {call(b, "aten.mul.Tensor", {a[0], call(b, "aten.sigmoid.default", {a[0]})})};
}
Arg softplus_graph(GraphBuilder& b, const Arg& x, const Arg& beta, const Arg& threshold) {
  const bool unit = beta.number() == 1.0;
  const Arg scaled_input = unit ? x : call(b, "aten.mul.Tensor", {x, beta});
  Arg rhs = call(b, "aten.log1p.default", {call(b, "aten.exp.default", {scaled_input})});
  if (!unit) rhs = call(b, "aten.div.Tensor", {rhs, beta});
  return call(b, "aten.where.self", {call(b, "aten.gt.Scalar", {scaled_input, threshold}), x, rhs});
}
std::vector<Arg> decomp_softplus(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) { return {softplus_graph(b, a[0], a[1], a[2])}; }
std::vector<Arg> decomp_mish(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Arg sp = softplus_graph(b, a[0], Arg::of_int(1), Arg::of_int(20));
  return {call(b, "aten.mul.Tensor", {a[0], call(b, "aten.tanh.default", {sp})})};
}
std::vector<Tensor> ref_silu_backward(const OpDef&, const std::vector<Arg>&, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  Tensor y(outs[0].dtype, outs[0].shape);
  const Shape sg = broadcast_strides(in[0].shape(), y.shape()), sx = broadcast_strides(in[1].shape(), y.shape());
  for (int64_t i = 0; i < y.numel(); ++i) {
    const double g = in[0].get(offset_of(i, y.shape(), sg)), x = in[1].get(offset_of(i, y.shape(), sx));
    const double s = sigmoid_of(x);
    y.set(i, g * s * (1 + x * (1 - s)));
  }
  return {y};
}
std::vector<Arg> decomp_silu_backward(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Arg s = call(b, "aten.reciprocal.default",
                     {call(b, "aten.add.Tensor", {call(b, "aten.exp.default", {call(b, "aten.neg.default", {a[1]})}), Arg::of_int(1)})});
  const Arg one_minus = call(b, "aten.add.Tensor", {call(b, "aten.neg.default", {s}), Arg::of_int(1)});
  const Arg inner = call(b, "aten.add.Tensor", {call(b, "aten.mul.Tensor", {a[1], one_minus}), Arg::of_int(1)});
  return {call(b, "aten.mul.Tensor", {call(b, "aten.mul.Tensor", {a[0], s}), inner})};
}
std::vector<TensorMeta> infer_silu_backward(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  return {result_type(g, op, a, {0, 1})};  // a binary TensorIterator op: the two broadcast
}
Args d_silu(DerivCtx& c) { return one(call(c, "aten.silu_backward.default", {c.grads[0], c.args[0]}), 1); }
std::vector<Arg> decomp_relu6(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  return {call(b, "aten.hardtanh.default", {a[0], Arg::of_int(0), Arg::of_int(6)})};
}

// addcmul: self + value * tensor1 * tensor2; addcdiv: self + value * tensor1 / tensor2 (torch._refs),
// the three broadcast and promoted; addcdiv refuses integer tensor1 and tensor2, as PyTorch does.
template <bool Div>
std::vector<TensorMeta> infer_addc(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  if (Div && !dtype_is_float(meta_of(g, a[1]).dtype) && !dtype_is_float(meta_of(g, a[2]).dtype))
    bad(op, "integer division with addcdiv is no longer supported; use a floating point tensor1 or tensor2");
  TensorMeta m = result_type(g, op, a, {0, 1, 2});
  if (a[3].kind == Arg::Kind::real && !dtype_is_float(m.dtype)) bad(op, "a floating point value needs a floating point result");
  return {m};
}
template <bool Div>
std::vector<Tensor> ref_addc(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  Tensor y(outs[0].dtype, outs[0].shape);
  std::vector<Shape> st;
  for (int k = 0; k < 3; ++k) st.push_back(broadcast_strides(in[k].shape(), y.shape()));
  const double value = a[3].number();
  for (int64_t i = 0; i < y.numel(); ++i) {
    const double s = in[0].get(offset_of(i, y.shape(), st[0])), t1 = in[1].get(offset_of(i, y.shape(), st[1])),
                 t2 = in[2].get(offset_of(i, y.shape(), st[2]));
    y.set(i, Div ? s + value * t1 / t2 : s + value * t1 * t2);
  }
  return {y};
}
template <bool Div>
std::vector<Arg> decomp_addc(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  Arg t = a[1];
  if (Div) {
    if (a[3].number() != 1.0) t = call(b, "aten.mul.Tensor", {t, a[3]});
    t = call(b, "aten.div.Tensor", {t, a[2]});
  } else {
    if (a[3].number() != 1.0) t = call(b, "aten.mul.Tensor", {t, a[3]});
    t = call(b, "aten.mul.Tensor", {t, a[2]});
  }
  return {call(b, "aten.add.Tensor", {a[0], t})};
}

// clamp.Tensor(self, min?, max?): the three broadcast, their types promoted; NaN in self or in a
// bound gives NaN (torch._refs: where(ge(a, min) | isnan(a), a, min), then the same for max).
std::vector<TensorMeta> infer_clamp_tensor(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  if (a[1].is_none() && a[2].is_none()) bad(op, "needs at least one of min and max");
  return {result_type(g, op, a, {0, 1, 2})};
}
std::vector<Tensor> ref_clamp_tensor(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  Tensor y(outs[0].dtype, outs[0].shape);
  std::vector<Shape> st(3);
  for (int k = 0; k < 3; ++k)
    if (a[k].is_node()) st[k] = broadcast_strides(in[k].shape(), y.shape());
  for (int64_t i = 0; i < y.numel(); ++i) {
    double v = in[0].get(offset_of(i, y.shape(), st[0]));
    if (a[1].is_node()) {
      const double m = in[1].get(offset_of(i, y.shape(), st[1]));
      if (!(v >= m || std::isnan(v))) v = m;
    }
    if (a[2].is_node()) {
      const double m = in[2].get(offset_of(i, y.shape(), st[2]));
      if (!(v <= m || std::isnan(v))) v = m;
    }
    y.set(i, v);
  }
  return {y};
}
std::vector<Arg> decomp_clamp_tensor(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  Arg x = a[0];
  if (a[1].is_node()) {
    const Arg keep = call(b, "aten.logical_or.default", {call(b, "aten.ge.Tensor", {x, a[1]}), call(b, "aten.isnan.default", {x})});
    x = call(b, "aten.where.self", {keep, x, a[1]});
  }
  if (a[2].is_node()) {
    const Arg keep = call(b, "aten.logical_or.default", {call(b, "aten.le.Tensor", {x, a[2]}), call(b, "aten.isnan.default", {x})});
    x = call(b, "aten.where.self", {keep, x, a[2]});
  }
  return {x};
}
// derivatives.yaml: clamp_backward for self (where min <= self <= max), clamp_backward_min_max
// for the bounds (min where self < min and min < max; max where self > max or max < min).
Args d_clamp_tensor(DerivCtx& c) {
  Args r(3, kNone);
  const Arg &x = c.args[0], &lo = c.args[1], &hi = c.args[2], &g = c.grads[0];
  const Arg zero = num(0.0);
  if (wants(c, 0)) {
    Arg pred;
    if (lo.is_node()) pred = call(c, "aten.ge.Tensor", {x, lo});
    if (hi.is_node()) {
      const Arg le = call(c, "aten.le.Tensor", {x, hi});
      pred = pred.is_node() ? call(c, "aten.logical_and.default", {pred, le}) : le;
    }
    r[0] = grad_for(c, 0, call(c, "aten.where.self", {pred, g, zero}));
  }
  if (wants(c, 1)) {
    Arg pred = call(c, "aten.lt.Tensor", {x, lo});
    if (hi.is_node()) pred = call(c, "aten.logical_and.default", {pred, call(c, "aten.lt.Tensor", {lo, hi})});
    r[1] = grad_for(c, 1, call(c, "aten.where.self", {pred, g, zero}));
  }
  if (wants(c, 2)) {
    Arg pred = call(c, "aten.gt.Tensor", {x, hi});
    if (lo.is_node()) pred = call(c, "aten.logical_or.default", {pred, call(c, "aten.lt.Tensor", {hi, lo})});
    r[2] = grad_for(c, 2, call(c, "aten.where.self", {pred, g, zero}));
  }
  return r;
}

// pow.Scalar(self: a number, exponent: a tensor): derivatives.yaml's pow_backward_exponent,
// g * result * log(self), zero where self is 0 and the exponent is >= 0.
std::vector<TensorMeta> infer_pow_scalar(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  return {result_type(g, op, a, {0, 1})};
}
Args d_pow_scalar_base(DerivCtx& c) {
  Args r(2, kNone);
  if (!wants(c, 1)) return r;
  const double base = c.args[0].number();
  Arg d = call(c, "aten.mul.Tensor", {c.out(0), num(std::log(base))});
  if (base == 0.0) d = call(c, "aten.where.self", {call(c, "aten.ge.Scalar", {c.args[1], Arg::of_int(0)}), num(0.0), d});
  r[1] = grad_for(c, 1, call(c, "aten.mul.Tensor", {c.grads[0], d}));
  return r;
}

// div.Tensor_mode / div.Scalar_mode: rounding_mode None is true division (integers give
// float32); 'trunc' and 'floor' keep the promoted type, integers dividing exactly as PyTorch's
// integer kernels (a zero divisor is an error there, ZeroDivisionError), floats as its
// div_floor_floating (a zero divisor gives the true quotient).
std::string rounding_mode(const OpDef& op, const Arg& m) {
  if (m.is_none()) return "";
  if (m.kind != Arg::Kind::string || (m.s != "trunc" && m.s != "floor"))
    bad(op, "rounding_mode must be None, 'trunc' or 'floor', got '" + (m.kind == Arg::Kind::string ? m.s : std::string("?")) + "'");
  return m.s;
}
std::vector<TensorMeta> infer_div_mode(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const std::string mode = rounding_mode(op, a[2]);
  TensorMeta m = result_type(g, op, a, {0, 1});
  if (mode.empty() && !dtype_is_float(m.dtype)) m = like(m, DType::f32, m.shape);
  if (!mode.empty() && m.dtype == DType::b8) bad(op, "rounding_mode '" + mode + "' is not implemented for bool tensors");
  return {m};
}
double floor_divide_float(double a, double b) {  // ATen's div_floor_floating
  if (b == 0) return a / b;
  const double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
  if (div == 0) return std::copysign(0.0, a / b);
  double fl = std::floor(div);
  if (div - fl > 0.5) fl += 1;
  return fl;
}
std::vector<Tensor> ref_div_mode(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const std::string mode = rounding_mode(op, a[2]);
  Tensor y(outs[0].dtype, outs[0].shape);
  const Shape s0 = broadcast_strides(in[0].shape(), y.shape());
  const Shape s1 = a[1].is_node() ? broadcast_strides(in[1].shape(), y.shape()) : Shape{};
  const bool integral = !dtype_is_float(y.dtype());
  for (int64_t i = 0; i < y.numel(); ++i) {
    const double x = in[0].get(offset_of(i, y.shape(), s0));
    const double d = a[1].is_node() ? in[1].get(offset_of(i, y.shape(), s1)) : a[1].number();
    if (mode.empty()) {
      y.set(i, x / d);
    } else if (!integral) {
      y.set(i, mode == "trunc" ? std::trunc(x / d) : floor_divide_float(x, d));
    } else {
      const auto xi = static_cast<int64_t>(x), di = static_cast<int64_t>(d);
      if (di == 0) bad(op, "ZeroDivisionError: integer division by zero");
      if (di == -1) {  // INT64_MIN / -1 wraps, as in two's complement
        y.set(i, static_cast<double>(static_cast<int64_t>(0ull - static_cast<uint64_t>(xi))));
        continue;
      }
      int64_t q = xi / di;
      if (mode == "floor" && xi % di != 0 && ((xi < 0) != (di < 0))) --q;
      y.set(i, static_cast<double>(q));
    }
  }
  return {y};
}
// The overload of a binary op that fits a tensor or a number as its second operand.
std::string overload(const char* base, const Arg& other) { return std::string("aten.") + base + (other.is_node() ? ".Tensor" : ".Scalar"); }
Arg binop(GraphBuilder& b, const char* base, const Arg& x, const Arg& y) { return b.call(overload(base, y), {x, y}); }
Arg convert(GraphBuilder& b, const OpDef& op, const Arg& x, DType t) {
  if (!find_op("prims.convert_element_type.default"))
    bad(op, "integer operands need prims.convert_element_type.default, which the op table lacks");
  return b.call("prims.convert_element_type.default", {x, Arg::of_string(std::string(dtype_torch(t)))});
}
std::vector<Arg> decomp_div_mode(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const std::string mode = rounding_mode(op, a[2]);
  const Arg &x = a[0], &y = a[1];
  if (mode.empty()) return {binop(b, "div", x, y)};
  const DType out = infer_div_mode(b.graph(), op, a)[0].dtype;
  if (!dtype_is_float(out)) {
    // Integers: the exact quotient in float64, (x - r) / y with r = fmod (trunc) or remainder
    // (floor, the divisor's sign), exact for magnitudes below 2^53; then back to the integer type.
    const Arg xf = convert(b, op, x, DType::f64);
    const Arg yf = y.is_node() ? convert(b, op, y, DType::f64) : num(y.number());
    const Arg r = binop(b, mode == "trunc" ? "fmod" : "remainder", xf, yf);
    return {convert(b, op, binop(b, "div", call(b, "aten.sub.Tensor", {xf, r}), yf), out)};
  }
  if (mode == "trunc") return {call(b, "aten.trunc.default", {binop(b, "div", x, y)})};
  // torch._refs' _floor_divide_float.
  const Arg mod = binop(b, "fmod", x, y);
  Arg div = binop(b, "div", call(b, "aten.sub.Tensor", {x, mod}), y);
  const Arg x_neg = call(b, "aten.lt.Scalar", {x, Arg::of_int(0)});
  const Arg signs_differ = y.is_node() ? call(b, "aten.logical_xor.default", {x_neg, call(b, "aten.lt.Scalar", {y, Arg::of_int(0)})})
                           : y.number() < 0 ? call(b, "aten.logical_not.default", {x_neg}) : x_neg;
  const Arg mask = call(b, "aten.logical_and.default", {call(b, "aten.ne.Scalar", {mod, Arg::of_int(0)}), signs_differ});
  div = call(b, "aten.where.self", {mask, call(b, "aten.sub.Tensor", {div, num(1.0)}), div});
  Arg fl = call(b, "aten.floor.default", {div});
  fl = call(b, "aten.where.self", {call(b, "aten.gt.Scalar", {call(b, "aten.sub.Tensor", {div, fl}), num(0.5)}),
                                   call(b, "aten.add.Tensor", {fl, num(1.0)}), fl});
  const Arg basic = binop(b, "div", x, y);
  // A zero quotient takes the sign of the true quotient (copysign(0, x / y)).
  fl = call(b, "aten.where.self", {call(b, "aten.ne.Scalar", {div, Arg::of_int(0)}), fl, call(b, "aten.mul.Tensor", {basic, num(0.0)})});
  if (!y.is_node()) return {y.number() != 0 ? fl : basic};
  return {call(b, "aten.where.self", {call(b, "aten.ne.Scalar", {y, Arg::of_int(0)}), fl, basic})};
}
// floor_divide (`t // 2`, kept by torch.export): div with rounding_mode 'floor', as torch._refs
// writes it; its gradient is zero, through div's.
std::vector<Arg> decomp_floor_divide(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  return {b.call(a[1].is_node() ? "aten.div.Tensor_mode" : "aten.div.Scalar_mode", {a[0], a[1]}, {{"rounding_mode", Arg::of_string("floor")}})};
}
// derivatives.yaml: None as div.Tensor; 'trunc' and 'floor' have zero gradients.
Args d_div_mode(DerivCtx& c) {
  Args r(3, kNone);
  if (c.args[2].is_none()) {
    const Args d = d_div(c);
    r[0] = d[0];
    r[1] = d[1];
    return r;
  }
  if (wants(c, 0)) r[0] = zeros(c, shape_of(c, c.args[0]), c.b.meta(c.grads[0]).dtype);
  if (wants(c, 1)) r[1] = zeros(c, shape_of(c, c.args[1]), c.b.meta(c.grads[0]).dtype);
  return r;
}

// clamp_min / clamp_max (export level): clamp with one bound (torch._refs); the result type of
// self and the bound. Derivatives as derivatives.yaml: the gradient where self >= min (<= max).
template <bool Min>
std::vector<TensorMeta> infer_clamp_one(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  if (meta_of(g, a[0]).dtype == DType::b8) bad(op, "is not implemented for bool tensors");
  return {result_type(g, op, a, {0, 1})};
}
template <bool Min>
std::vector<Tensor> ref_clamp_one(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  Tensor y(outs[0].dtype, outs[0].shape);
  const double m = a[1].number();
  for (int64_t i = 0; i < y.numel(); ++i) {
    const double v = in[0].get(i);
    y.set(i, std::isnan(v) || std::isnan(m) ? v + m : Min ? std::max(v, m) : std::min(v, m));
  }
  return {y};
}
template <bool Min>
std::vector<Arg> decomp_clamp_one(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  return {call(b, "aten.clamp.default", {a[0], Min ? a[1] : Arg::none(), Min ? Arg::none() : a[1]})};
}
template <bool Min>
Args d_clamp_one(DerivCtx& c) {
  const Arg inside = call(c, Min ? "aten.ge.Scalar" : "aten.le.Scalar", {c.args[0], c.args[1]});
  return one(call(c, "aten.where.self", {inside, c.grads[0], num(0.0)}), 2);
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
OpDef with_infer(OpDef op, InferFn infer, RefFn ref = nullptr) {
  op.infer = infer;
  op.reference = ref;
  return op;
}
// A backward op of the ops above: a Core ATen composite shaped like its argument I.
template <int I>
OpDef backward_op(const char* name, const char* schema, DecompFn d) { return comp(name, schema, kCore, same_as<I>, nullptr, d); }

}  // namespace

void add_pointwise_ops(std::vector<OpDef>& t) {
  const std::vector<OpDef> ops = {
      // ATen, unary
      with_infer(unary_aten("sin", Math::sin, d_sin), infer_int_to_float), with_infer(unary_aten("cos", Math::cos, d_cos), infer_int_to_float), with_infer(unary_aten("exp", Math::exp, d_exp), infer_int_to_float),
      with_infer(unary_aten("log", Math::log, d_log), infer_int_to_float), unary_aten("neg", Math::neg, d_neg), unary_aten("abs", Math::abs, d_abs),
      with_infer(unary_aten("sqrt", Math::sqrt, d_sqrt), infer_int_to_float), with_infer(unary_aten("rsqrt", Math::rsqrt, d_rsqrt), infer_int_to_float), with_infer(unary_aten("tanh", Math::tanh, d_tanh), infer_int_to_float),
      with_infer(unary_aten("reciprocal", Math::reciprocal, d_reciprocal), infer_int_to_float), with_infer(unary_aten("erf", Math::erf, d_erf), infer_int_to_float),
      with_infer(unary_aten("sigmoid", Math::sigmoid, d_sigmoid, single<decomp_sigmoid>), infer_int_to_float),
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
      by_parts(pointwise_aten("aten.where.self", "where.self(Tensor condition, Tensor self, Tensor other) -> Tensor", Math::where, d_where)),
      // Rounding and sign (integers unchanged), float functions (INT_TO_FLOAT), predicates (bool)
      unary_aten("floor", Math::floor, d_zero), unary_aten("ceil", Math::ceil, d_zero), unary_aten("round", Math::round, d_zero),
      comp("aten.round.decimals", "round.decimals(Tensor self, *, int decimals) -> Tensor", kAten, infer_round_decimals,
           ref_round_decimals, single<decomp_round_decimals>, d_zero),
      unary_aten("trunc", Math::trunc, d_zero), unary_aten("sign", Math::sign, d_zero),
      with_infer(unary_aten("log1p", Math::log1p, d_log1p), infer_int_to_float),
      with_infer(unary_aten("expm1", Math::expm1, d_expm1), infer_int_to_float),
      with_infer(unary_aten("log2", Math::log2, d_log_base<2>), infer_int_to_float),
      with_infer(unary_aten("log10", Math::log10, d_log_base<10>), infer_int_to_float),
      with_infer(unary_aten("tan", Math::tan, d_tan), infer_int_to_float),
      with_infer(unary_aten("asin", Math::asin, d_asin), infer_int_to_float),
      with_infer(unary_aten("acos", Math::acos, d_acos), infer_int_to_float),
      with_infer(unary_aten("atan", Math::atan, d_atan), infer_int_to_float),
      with_infer(unary_aten("sinh", Math::sinh, d_sinh), infer_int_to_float),
      with_infer(unary_aten("cosh", Math::cosh, d_cosh), infer_int_to_float),
      with_infer(unary_aten("asinh", Math::asinh, d_asinh), infer_int_to_float),
      with_infer(unary_aten("acosh", Math::acosh, d_acosh), infer_int_to_float),
      with_infer(unary_aten("atanh", Math::atanh, d_atanh), infer_int_to_float),
      unary_aten("isnan", Math::isnan, nullptr, single<decomp_isnan>),
      unary_aten("isinf", Math::isinf, nullptr, single<decomp_isinf>),
      unary_aten("logical_not", Math::logical_not, nullptr, single<decomp_logical_not>),
      with_infer(unary_aten("bitwise_not", Math::bitwise_not, nullptr, single<decomp_bitwise_not>), infer_bitwise, ref_bitwise_not),
      pointwise_aten("aten.logical_and.default", "logical_and(Tensor self, Tensor other) -> Tensor", Math::logical_and, nullptr, kCore,
                     single<decomp_logical_binary>),
      pointwise_aten("aten.logical_or.default", "logical_or(Tensor self, Tensor other) -> Tensor", Math::logical_or, nullptr, kCore,
                     single<decomp_logical_binary>),
      pointwise_aten("aten.logical_xor.default", "logical_xor(Tensor self, Tensor other) -> Tensor", Math::logical_xor, nullptr, kCore,
                     single<decomp_logical_binary>),
      with_infer(pointwise_aten("aten.bitwise_and.Tensor", "bitwise_and.Tensor(Tensor self, Tensor other) -> Tensor", Math::bitwise_and), infer_bitwise),
      with_infer(pointwise_aten("aten.bitwise_or.Tensor", "bitwise_or.Tensor(Tensor self, Tensor other) -> Tensor", Math::bitwise_or), infer_bitwise),
      with_infer(pointwise_aten("aten.bitwise_xor.Tensor", "bitwise_xor.Tensor(Tensor self, Tensor other) -> Tensor", Math::bitwise_xor), infer_bitwise),
      with_infer(pointwise_aten("aten.bitwise_and.Scalar", "bitwise_and.Scalar(Tensor self, Scalar other) -> Tensor", Math::bitwise_and), infer_bitwise),
      with_infer(pointwise_aten("aten.bitwise_or.Scalar", "bitwise_or.Scalar(Tensor self, Scalar other) -> Tensor", Math::bitwise_or), infer_bitwise),
      with_infer(pointwise_aten("aten.bitwise_xor.Scalar", "bitwise_xor.Scalar(Tensor self, Scalar other) -> Tensor", Math::bitwise_xor), infer_bitwise),
      pointwise_aten("aten.remainder.Tensor", "remainder.Tensor(Tensor self, Tensor other) -> Tensor", Math::remainder, d_remainder<true>),
      pointwise_aten("aten.remainder.Scalar", "remainder.Scalar(Tensor self, Scalar other) -> Tensor", Math::remainder, d_remainder<true>),
      pointwise_aten("aten.fmod.Tensor", "fmod.Tensor(Tensor self, Tensor other) -> Tensor", Math::fmod, d_remainder<false>),
      pointwise_aten("aten.fmod.Scalar", "fmod.Scalar(Tensor self, Scalar other) -> Tensor", Math::fmod, d_remainder<false>),
      with_infer(pointwise_aten("aten.atan2.default", "atan2(Tensor self, Tensor other) -> Tensor", Math::atan2, d_atan2), infer_int_to_float),
      // ATen activations
      {.name = "aten.gelu.default", .schema = "gelu(Tensor self, *, str approximate='none') -> Tensor", .kind = OpKind::pointwise,
       .levels = kCore, .math = Math::gelu, .decompose = decomp_gelu, .derivative = d_gelu},
      {.name = "aten.hardsigmoid.default", .schema = "hardsigmoid(Tensor self) -> Tensor", .kind = OpKind::pointwise,
       .levels = kAten, .math = Math::hardsigmoid, .decompose = decomp_hardsigmoid, .derivative = d_hardsigmoid},
      {.name = "aten.hardswish.default", .schema = "hardswish(Tensor self) -> Tensor", .kind = OpKind::pointwise, .levels = kAten,
       .math = Math::hardswish, .decompose = decomp_hardsigmoid, .derivative = d_hardswish},
      comp("aten.clamp.default", "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor", kCore, infer_clamp, ref_clamp,
           decomp_clamp, d_clamp),
      comp("aten.leaky_relu.default", "leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor", kCore, same_as<0>,
           ref_leaky_relu, decomp_leaky_relu, d_leaky_relu),
      comp("aten.clamp_min.default", "clamp_min(Tensor self, Scalar min) -> Tensor", kAten, infer_clamp_one<true>, ref_clamp_one<true>,
           decomp_clamp_one<true>, d_clamp_one<true>),
      comp("aten.clamp_max.default", "clamp_max(Tensor self, Scalar max) -> Tensor", kAten, infer_clamp_one<false>,
           ref_clamp_one<false>, decomp_clamp_one<false>, d_clamp_one<false>),
      comp("aten.elu.default", "elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor", kCore,
           infer_float_only, ref_elu, decomp_elu, d_elu),
      comp("aten.hardtanh.default", "hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor", kCore, infer_hardtanh,
           ref_hardtanh, decomp_hardtanh, d_hardtanh),
      comp("aten.clamp.Tensor", "clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor", kCore, infer_clamp_tensor,
           ref_clamp_tensor, decomp_clamp_tensor, d_clamp_tensor),
      with_infer(pointwise_aten("aten.pow.Scalar", "pow.Scalar(Scalar self, Tensor exponent) -> Tensor", Math::pow, d_pow_scalar_base),
                 infer_pow_scalar),
      pointwise_aten("aten.le.Tensor", "le.Tensor(Tensor self, Tensor other) -> Tensor", Math::le),
      pointwise_aten("aten.ne.Tensor", "ne.Tensor(Tensor self, Tensor other) -> Tensor", Math::ne),
      comp("aten.div.Tensor_mode", "div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor", kCore,
           infer_div_mode, ref_div_mode, decomp_div_mode, d_div_mode),
      comp("aten.div.Scalar_mode", "div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor", kCore,
           infer_div_mode, ref_div_mode, decomp_div_mode, d_div_mode),
      // prims
      with_infer(unary_prim("sin", Math::sin), infer_int_to_float), with_infer(unary_prim("cos", Math::cos), infer_int_to_float), with_infer(unary_prim("exp", Math::exp), infer_int_to_float),
      with_infer(unary_prim("log", Math::log), infer_int_to_float), unary_prim("neg", Math::neg), unary_prim("abs", Math::abs),
      with_infer(unary_prim("sqrt", Math::sqrt), infer_int_to_float), with_infer(unary_prim("rsqrt", Math::rsqrt), infer_int_to_float), with_infer(unary_prim("tanh", Math::tanh), infer_int_to_float),
      with_infer(unary_prim("reciprocal", Math::reciprocal), infer_int_to_float), with_infer(unary_prim("erf", Math::erf), infer_int_to_float),
      binary_prim("add", Math::add), binary_prim("sub", Math::sub), binary_prim("mul", Math::mul),
      binary_prim("div", Math::div), binary_prim("pow", Math::pow), binary_prim("maximum", Math::maximum),
      binary_prim("minimum", Math::minimum), binary_prim("lt", Math::lt), binary_prim("le", Math::le),
      binary_prim("gt", Math::gt), binary_prim("ge", Math::ge), binary_prim("eq", Math::eq), binary_prim("ne", Math::ne),
      by_parts({.name = "prims.where.default", .schema = "where(Tensor pred, Tensor a, Tensor b) -> Tensor",
                .kind = OpKind::pointwise, .levels = kPrims, .math = Math::where}),
      // prims of the ops above (isnan, isinf and the logical ops decompose into ne, eq and the bitwise prims)
      unary_prim("floor", Math::floor), unary_prim("ceil", Math::ceil), unary_prim("round", Math::round),
      unary_prim("trunc", Math::trunc), unary_prim("sign", Math::sign),
      with_infer(unary_prim("log1p", Math::log1p), infer_int_to_float), with_infer(unary_prim("expm1", Math::expm1), infer_int_to_float),
      with_infer(unary_prim("log2", Math::log2), infer_int_to_float), with_infer(unary_prim("log10", Math::log10), infer_int_to_float),
      with_infer(unary_prim("tan", Math::tan), infer_int_to_float), with_infer(unary_prim("asin", Math::asin), infer_int_to_float),
      with_infer(unary_prim("acos", Math::acos), infer_int_to_float), with_infer(unary_prim("atan", Math::atan), infer_int_to_float),
      with_infer(unary_prim("sinh", Math::sinh), infer_int_to_float), with_infer(unary_prim("cosh", Math::cosh), infer_int_to_float),
      with_infer(unary_prim("asinh", Math::asinh), infer_int_to_float), with_infer(unary_prim("acosh", Math::acosh), infer_int_to_float),
      with_infer(unary_prim("atanh", Math::atanh), infer_int_to_float),
      with_infer(unary_prim("bitwise_not", Math::bitwise_not), infer_bitwise, ref_bitwise_not),
      with_infer(binary_prim("bitwise_and", Math::bitwise_and), infer_bitwise), with_infer(binary_prim("bitwise_or", Math::bitwise_or), infer_bitwise),
      with_infer(binary_prim("bitwise_xor", Math::bitwise_xor), infer_bitwise),
      binary_prim("remainder", Math::remainder), binary_prim("fmod", Math::fmod),
      with_infer(binary_prim("atan2", Math::atan2), infer_int_to_float),
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
      comp("aten.elu_backward.default",
           "elu_backward(Tensor grad_output, Scalar alpha, Scalar scale, Scalar input_scale, bool is_result, Tensor self_or_result) -> Tensor",
           kAten, same_as<0>, nullptr, decomp_elu_backward),
      comp("aten.hardtanh_backward.default",
           "hardtanh_backward(Tensor grad_output, Tensor self, Scalar min_val, Scalar max_val) -> Tensor", kAten, same_as<1>, nullptr,
           decomp_hardtanh_backward),
      // ---- model zoo: silu, mish, softplus, relu6, addcmul, addcdiv ----
      comp("aten.silu.default", "silu(Tensor self) -> Tensor", kAten, infer_float_only, ref_silu_family<0>, decomp_silu, d_silu),
      comp("aten.silu_backward.default", "silu_backward(Tensor grad_output, Tensor self) -> Tensor", kAten, infer_silu_backward,
           ref_silu_backward, decomp_silu_backward),
      comp("aten.mish.default", "mish(Tensor self) -> Tensor", kAten, infer_float_only, ref_silu_family<1>, decomp_mish),
      comp("aten.softplus.default", "softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor", kAten, infer_float_only,
           ref_silu_family<2>, decomp_softplus),
      comp("aten.relu6.default", "relu6(Tensor self) -> Tensor", kAten, infer_hardtanh, nullptr, decomp_relu6),
      comp("aten.addcmul.default", "addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor", kAten,
           infer_addc<false>, ref_addc<false>, decomp_addc<false>),
      comp("aten.addcdiv.default", "addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor", kAten,
           infer_addc<true>, ref_addc<true>, decomp_addc<true>),
      // ---- model zoo: Python operators and aliases torch.export keeps ----
      comp("aten.__and__.Tensor", "__and__.Tensor(Tensor self, Tensor other) -> Tensor", kAten, infer_by_decomp, nullptr, decomp_alias<kBitwiseAndT>),
      comp("aten.__or__.Tensor", "__or__.Tensor(Tensor self, Tensor other) -> Tensor", kAten, infer_by_decomp, nullptr, decomp_alias<kBitwiseOrT>),
      comp("aten.__xor__.Tensor", "__xor__.Tensor(Tensor self, Tensor other) -> Tensor", kAten, infer_by_decomp, nullptr, decomp_alias<kBitwiseXorT>),
      comp("aten.__and__.Scalar", "__and__.Scalar(Tensor self, Scalar other) -> Tensor", kAten, infer_by_decomp, nullptr, decomp_alias<kBitwiseAndS>),
      comp("aten.__or__.Scalar", "__or__.Scalar(Tensor self, Scalar other) -> Tensor", kAten, infer_by_decomp, nullptr, decomp_alias<kBitwiseOrS>),
      comp("aten.__xor__.Scalar", "__xor__.Scalar(Tensor self, Scalar other) -> Tensor", kAten, infer_by_decomp, nullptr, decomp_alias<kBitwiseXorS>),
      comp("aten.floor_divide.default", "floor_divide(Tensor self, Tensor other) -> Tensor", kAten, infer_by_decomp, nullptr,
           decomp_floor_divide),
      comp("aten.floor_divide.Scalar", "floor_divide.Scalar(Tensor self, Scalar other) -> Tensor", kAten, infer_by_decomp, nullptr,
           decomp_floor_divide),
      comp("aten.min.other", "min.other(Tensor self, Tensor other) -> Tensor", kAten, infer_by_decomp, nullptr, decomp_alias<kMinimum>),
      comp("aten.max.other", "max.other(Tensor self, Tensor other) -> Tensor", kAten, infer_by_decomp, nullptr, decomp_alias<kMaximum>),
      by_parts(comp("aten.where.ScalarOther", "where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor", kAten, infer_by_decomp,
                    nullptr, decomp_where_scalar)),
      by_parts(comp("aten.where.ScalarSelf", "where.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> Tensor", kAten, infer_by_decomp,
                    nullptr, decomp_where_scalar)),
      comp("aten.numpy_T.default", "numpy_T(Tensor(a) self) -> Tensor(a)", kAten, infer_by_decomp, nullptr, decomp_numpy_t),
      by_parts(comp("aten.masked_fill.Scalar", "masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor", kAten, infer_by_decomp,
                    nullptr, decomp_masked_fill)),
      by_parts(comp("aten.masked_fill.Tensor", "masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor", kAten, infer_by_decomp,
                    nullptr, decomp_masked_fill)),
  };
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
