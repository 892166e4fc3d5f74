#include "ops/rule_helpers.h"

namespace ls::rules {

Shape unravel(int64_t i, const Shape& shape) {
  Shape pos(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    pos[d] = i % shape[d];
    i /= shape[d];
  }
  return pos;
}

Shape broadcast_strides(const Shape& in_shape, const Shape& out_shape) {
  Shape st(out_shape.size(), 0);
  const Shape cs = contiguous_strides(in_shape);
  const size_t off = out_shape.size() - in_shape.size();
  for (size_t i = 0; i < in_shape.size(); ++i) st[off + i] = in_shape[i] == 1 ? 0 : cs[i];
  return st;
}

int64_t offset_of(int64_t linear, const Shape& shape, const Shape& strides) {
  int64_t off = 0;
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t i = linear % shape[d];
    linear /= shape[d];
    off += i * strides[d];
  }
  return off;
}

std::vector<int> operand_indices(const OpDef& op) {
  std::vector<int> v;
  for (size_t i = 0; i < op.params.size(); ++i)
    if (op.params[i].is_operand()) v.push_back(static_cast<int>(i));
  return v;
}

double alpha_of(const OpDef& op, const std::vector<Arg>& args) {
  for (size_t i = 0; i < op.params.size(); ++i)
    if (op.params[i].name == "alpha" && args[i].is_number()) return args[i].number();
  return 1.0;
}

Args one(Arg g, size_t nparams) {
  Args r(nparams, kNone);
  r[0] = std::move(g);
  return r;
}

Arg zeros(DerivCtx& c, const Shape& shape, DType t) {
  Arg z = c.b.constant("zeros", Tensor(t, {}));
  return shape.empty() ? z : call(c, "aten.expand.default", {z, ints(shape)});
}

Arg sum_to(DerivCtx& c, Arg g, const Shape& to) {
  const Shape from = shape_of(c, g);
  if (from == to) return g;
  const size_t lead = from.size() - to.size();
  std::vector<int64_t> dims;
  for (size_t d = 0; d < from.size(); ++d)
    if (d < lead || (to[d - lead] == 1 && from[d] != 1)) dims.push_back(static_cast<int64_t>(d));
  if (!dims.empty()) g = call(c, "aten.sum.dim_IntList", {g, ints(dims), Arg::of_bool(true)});
  return call(c, "aten.view.default", {g, ints(to)});
}

Arg grad_for(DerivCtx& c, size_t i, Arg g) { return wants(c, i) ? sum_to(c, g, shape_of(c, c.args[i])) : kNone; }

}  // namespace ls::rules
