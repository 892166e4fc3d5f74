// Reductions: ATen's sum, mean, amax and amin, the prims they decompose into, and the composite
// prim var (the variance, which normalization decomposes into). A reduction's shape rule,
// reference kernel and lowering are those of its kind, from its combiner `reduce` (ops/math.h);
// here are its decomposition and its derivative.
#include <algorithm>
#include <cmath>
#include <optional>

#include "ops/rule_helpers.h"

namespace ls {
namespace {

using namespace rules;

// ---- decompositions -------------------------------------------------------------------------

// A reduction's result with the reduced dimensions put back as size 1 (keepdim=True).
Arg keepdim(GraphBuilder& b, const Arg& reduced, const Shape& in_shape, const std::vector<int64_t>& dims) {
  Shape kept_shape;
  std::vector<int64_t> bdims;
  for (int64_t d = 0; d < static_cast<int64_t>(in_shape.size()); ++d) {
    const bool r = std::find(dims.begin(), dims.end(), d) != dims.end();
    kept_shape.push_back(r ? 1 : in_shape[d]);
    if (!r) bdims.push_back(d);
  }
  return b.call("prims.broadcast_in_dim.default", {reduced, Arg::of_ints(kept_shape), Arg::of_ints(bdims)});
}

Arg decomp_sum_default(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  if (a.size() > 1 && !a[1].is_none()) return b.call("aten.sum.dim_IntList", {a[0], Arg::none(), Arg::of_bool(false)}, {{"dtype", a[1]}});
  return b.call("aten.sum.dim_IntList", {a[0], Arg::none()});
}

// aten.{sum,mean,amax,amin} with dims -> prims reduction, a division for mean, a broadcast for keepdim.
Arg decomp_reduction(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& args) {
  const Shape in_shape = b.meta(args[0]).shape;
  const auto dims = reduction_dims(op, args, static_cast<int64_t>(in_shape.size()));
  const char* prim = op.reduce == Reduce::max ? "prims.amax.default" : op.reduce == Reduce::min ? "prims.amin.default" : "prims.sum.default";
  Arg r = b.call(prim, {args[0], Arg::of_ints(dims)});
  if (op.reduce == Reduce::mean) {
    int64_t n = 1;
    for (int64_t d : dims) n *= in_shape[d];
    r = b.call("prims.div.default", {r, Arg::of_real(static_cast<double>(n))});
  }
  if (reduction_keepdim(op, args)) r = keepdim(b, r, in_shape, dims);
  return r;
}

// ---- prims.var: a composite prim ------------------------------------------------------------

std::vector<TensorMeta> infer_var(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  const auto dims = reduction_dims(op, a, static_cast<int64_t>(x.shape.size()));
  Shape out;
  for (int64_t d = 0; d < static_cast<int64_t>(x.shape.size()); ++d)
    if (!std::count(dims.begin(), dims.end(), d)) out.push_back(x.shape[d]);
  return {like(x, x.dtype, out)};
}
double correction_of(const Arg& a) { return a.is_none() ? 1.0 : a.number(); }
std::vector<Tensor> ref_var(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  const auto dims = reduction_dims(op, a, x.dim());
  Tensor y(outs[0].dtype, outs[0].shape);
  Shape kept;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (!std::count(dims.begin(), dims.end(), d)) kept.push_back(x.shape()[d]);
  const Shape ks = contiguous_strides(kept);
  std::vector<double> s(y.numel(), 0), s2(y.numel(), 0);
  int64_t n = 1;
  for (int64_t d : dims) n *= x.shape()[d];
  for (int64_t i = 0; i < x.numel(); ++i) {
    const Shape p = unravel(i, x.shape());
    int64_t o = 0, k = 0;
    for (int64_t d = 0; d < x.dim(); ++d)
      if (!std::count(dims.begin(), dims.end(), d)) o += p[d] * ks[k++];
    s[o] += x.get(i);
  }
  for (int64_t i = 0; i < x.numel(); ++i) {
    const Shape p = unravel(i, x.shape());
    int64_t o = 0, k = 0;
    for (int64_t d = 0; d < x.dim(); ++d)
      if (!std::count(dims.begin(), dims.end(), d)) o += p[d] * ks[k++];
    const double dv = x.get(i) - s[o] / n;
    s2[o] += dv * dv;
  }
  for (int64_t o = 0; o < y.numel(); ++o) y.set(o, s2[o] / std::max(0.0, n - correction_of(a[2])));
  return {y};
}
// var -> mean, centred squares, sum, division by (n - correction).
std::vector<Arg> decomp_var(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape x = b.meta(a[0]).shape;
  const auto dims = reduction_dims(op, a, static_cast<int64_t>(x.size()));
  int64_t n = 1;
  for (int64_t d : dims) n *= x[d];
  Shape kept;
  std::vector<int64_t> bd;
  for (int64_t d = 0; d < static_cast<int64_t>(x.size()); ++d)
    if (!std::count(dims.begin(), dims.end(), d)) {
      kept.push_back(x[d]);
      bd.push_back(d);
    }
  const Arg s = b.call("prims.sum.default", {a[0], Arg::of_ints(dims)});
  const Arg mean = b.call("prims.div.default", {s, Arg::of_real(double(n))});
  const Arg mb = b.call("prims.broadcast_in_dim.default", {mean, Arg::of_ints(x), Arg::of_ints(bd)});
  const Arg d = b.call("prims.sub.default", {a[0], mb});
  const Arg ss = b.call("prims.sum.default", {b.call("prims.mul.default", {d, d}), Arg::of_ints(dims)});
  return {b.call("prims.div.default", {ss, Arg::of_real(std::max(0.0, n - correction_of(a[2])))})};
}

// ---- derivatives ----------------------------------------------------------------------------

// A gradient shaped like a reduction's output, put back over the reduced dimensions.
Arg unreduce(DerivCtx& c, Arg g, const Shape& in, const std::vector<int64_t>& dims) {
  Shape kept = in;
  for (int64_t d : dims) kept[d] = 1;
  if (dims.empty()) std::fill(kept.begin(), kept.end(), 1);
  return call(c, "aten.expand.default", {call(c, "aten.view.default", {g, ints(kept)}), ints(in)});
}

std::vector<int64_t> reduced_dims(DerivCtx& c) {
  const int64_t rank = static_cast<int64_t>(shape_of(c, c.args[0]).size());
  return reduction_dims(c.op, c.args, rank);
}
Args d_sum(DerivCtx& c) {
  return one(unreduce(c, c.grads[0], shape_of(c, c.args[0]), reduced_dims(c)), c.op.params.size());
}
Args d_mean(DerivCtx& c) {
  const Shape& in = shape_of(c, c.args[0]);
  const auto dims = reduced_dims(c);
  int64_t n = 1;
  for (size_t d = 0; d < in.size(); ++d)
    if (dims.empty() || std::count(dims.begin(), dims.end(), static_cast<int64_t>(d))) n *= in[d];
  const Arg g = unreduce(c, c.grads[0], in, dims);
  return one(call(c, "aten.div.Tensor", {g, num(static_cast<double>(n))}), c.op.params.size());
}
// amax/amin: the gradient goes to every element equal to the extremum, shared evenly among ties.
Args d_amax(DerivCtx& c) {
  const Shape& in = shape_of(c, c.args[0]);
  const auto dims = reduced_dims(c);
  const Arg y = unreduce(c, c.out(0), in, dims);
  const Arg hit = call(c, "aten.where.self", {call(c, "aten.eq.Tensor", {c.args[0], y}), num(1.0), num(0.0)});
  const Arg count = unreduce(c, call(c, "aten.sum.dim_IntList", {hit, ints(dims), Arg::of_bool(false)}), in, dims);
  const Arg g = call(c, "aten.div.Tensor", {unreduce(c, c.grads[0], in, dims), count});
  return one(call(c, "aten.mul.Tensor", {g, hit}), c.op.params.size());
}

// ---- any, argmax/argmin, max/min.dim, prod, var, cumsum (Core ATen, issue 32) ----------------

// The dimensions a `dim` argument names: one int, a list, or None (every dimension), wrapped,
// sorted, without repeats. `empty_is_all`: an empty list also means every dimension.
std::vector<int64_t> dims_of(const OpDef& op, const Arg& dim, int64_t rank, bool empty_is_all = true) {
  std::vector<int64_t> dims;
  if (!dim.is_none())
    for (int64_t d : dim.ints()) dims.push_back(wrap_dim(op, d, rank));
  if (dim.is_none() || (dims.empty() && empty_is_all))
    for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  return dims;
}
Shape reduced_shape(const Shape& in, const std::vector<int64_t>& dims, bool keep) {
  Shape out;
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d) {
    if (!std::count(dims.begin(), dims.end(), d)) out.push_back(in[d]);
    else if (keep) out.push_back(1);
  }
  return out;
}
// For every input element (row-major): the output element it reduces into, and its position
// among the elements reduced together (row-major over the reduced dimensions).
struct ReducedPos { int64_t out, pos; };
std::vector<ReducedPos> reduced_positions(const Shape& in, const std::vector<int64_t>& dims) {
  Shape kept, red;
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d) (std::count(dims.begin(), dims.end(), d) ? red : kept).push_back(in[d]);
  const Shape ks = contiguous_strides(kept), rs = contiguous_strides(red);
  std::vector<ReducedPos> v(numel_of(in));
  for (int64_t i = 0; i < numel_of(in); ++i) {
    const Shape p = unravel(i, in);
    int64_t o = 0, r = 0;
    for (int64_t d = 0, k = 0, j = 0; d < static_cast<int64_t>(in.size()); ++d)
      if (std::count(dims.begin(), dims.end(), d)) r += p[d] * rs[j++];
      else o += p[d] * ks[k++];
    v[i] = {o, r};
  }
  return v;
}
std::optional<DType> dtype_arg(const OpDef& op, const Arg& a) {
  if (a.is_none()) return std::nullopt;
  if (a.kind == Arg::Kind::string)
    if (auto t = dtype_from_name(a.s)) return t;
  bad(op, "unknown dtype '" + a.s + "'");
}
// sum-like result types: the dtype argument, else integers and bools accumulate in int64.
DType accumulate_type(const OpDef& op, DType in, const Arg& dtype) {
  if (auto t = dtype_arg(op, dtype)) return *t;
  return dtype_is_float(in) ? in : DType::i64;
}
Arg param(const OpDef& op, const std::vector<Arg>& a, const char* name) {
  for (size_t i = 0; i < op.params.size(); ++i)
    if (op.params[i].name == name && i < a.size()) return a[i];
  return Arg::none();
}
// sum: integers and bools accumulate in int64 unless `dtype` says otherwise (PyTorch's sum). The
// decomposition converts the input first, as torch._refs.sum does, then the prim (which keeps it).
std::vector<TensorMeta> infer_sum(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  const auto dims = reduction_dims(op, a, static_cast<int64_t>(x.shape.size()));
  return {like(x, accumulate_type(op, x.dtype, param(op, a, "dtype")), reduced_shape(x.shape, dims, reduction_keepdim(op, a)))};
}
Arg decomp_sum(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const DType in = b.meta(a[0]).dtype, dt = accumulate_type(op, in, param(op, a, "dtype"));
  std::vector<Arg> args = a;
  if (dt != in) args[0] = b.call("prims.convert_element_type.default", {a[0], Arg::of_string(std::string(dtype_torch(dt)))});
  return decomp_reduction(b, op, args);
}
OpDef summing(OpDef o) {
  o.infer = infer_sum;
  return o;
}
// The reduced dimensions of an op of this family: all of them for the overloads without `dim`.
std::vector<int64_t> family_dims(const OpDef& op, const std::vector<Arg>& a, int64_t rank) {
  const bool has_dim = op.params.size() > 1 && op.params[1].name == "dim";
  // any.dims: an empty list reduces nothing (torch._refs.any clones it); elsewhere [] is all.
  return has_dim ? dims_of(op, a[1], rank, op.name != "aten.any.dims") : dims_of(op, Arg::none(), rank);
}
bool family_keepdim(const OpDef& op, const std::vector<Arg>& a) {
  const Arg k = param(op, a, "keepdim");
  return k.kind == Arg::Kind::boolean && k.b;
}
void check_nonempty(const OpDef& op, const Shape& in, const std::vector<int64_t>& dims) {
  for (int64_t d : dims)
    if (in[d] == 0) bad(op, "expected reduction dim " + std::to_string(d) + " to have non-zero size");
  if (in.empty() && numel_of(in) == 0) bad(op, "cannot reduce an empty tensor");
}

// any: whether some element is nonzero (NaN counts), a bool. torch._refs: the input as bool,
// summed, compared with zero; here the sum of where(x != 0, 1, 0) in float32.
std::vector<TensorMeta> infer_any(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  const int64_t r = static_cast<int64_t>(x.shape.size());
  return {like(x, DType::b8, reduced_shape(x.shape, family_dims(op, a, r), family_keepdim(op, a)))};
}
std::vector<Tensor> ref_any(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  Tensor y(outs[0].dtype, outs[0].shape);
  const auto pos = reduced_positions(in[0].shape(), family_dims(op, a, in[0].dim()));
  for (int64_t i = 0; i < in[0].numel(); ++i)
    if (in[0].get(i) != 0) y.set(pos[i].out, 1);  // NaN != 0
  return {y};
}
std::vector<Arg> decomp_any(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const auto dims = family_dims(op, a, static_cast<int64_t>(b.meta(a[0]).shape.size()));
  const Arg nz = b.call("aten.ne.Scalar", {a[0], Arg::of_int(0)});
  if (dims.empty()) return {nz};
  const Arg ones = b.call("aten.where.self", {nz, Arg::of_real(1.0), Arg::of_real(0.0)});
  const Arg s = b.call("aten.sum.dim_IntList", {ones, Arg::of_ints(dims), Arg::of_bool(family_keepdim(op, a))});
  return {b.call("aten.ne.Scalar", {s, Arg::of_int(0)})};
}

// argmax/argmin (int64, dim None: the flat index) and max.dim/min.dim (values and int64 indices):
// the first extremum; NaN counts as the extremum of both, its first occurrence wins, as in PyTorch.
// Library kernels (extern_kernel): their reference kernel runs as the call; PyTorch has no
// decomposition for them (Inductor lowers them as its own argmax reduction).
template <bool Max>
bool better(double v, double best) {
  if (std::isnan(best)) return false;
  if (std::isnan(v)) return true;
  return Max ? v > best : v < best;
}
std::vector<int64_t> arg_dims(const OpDef& op, const std::vector<Arg>& a, int64_t rank) {
  if (a[1].is_none()) return dims_of(op, Arg::none(), rank);
  const int64_t d = wrap_dim(op, a[1].i, rank);  // checked; a 0-d tensor (dim 0 or -1) has none to reduce
  return rank == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{d};
}
std::vector<TensorMeta> infer_arg_extremum(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  const int64_t r = static_cast<int64_t>(x.shape.size());
  const auto dims = arg_dims(op, a, r);
  check_nonempty(op, x.shape, dims);
  const bool keep = a[2].kind == Arg::Kind::boolean && a[2].b;
  std::vector<TensorMeta> outs;
  if (op.num_outputs == 2) outs.push_back(like(x, x.dtype, reduced_shape(x.shape, dims, keep)));
  outs.push_back(like(x, DType::i64, reduced_shape(x.shape, dims, keep)));
  return outs;
}
template <bool Max>
std::vector<Tensor> ref_arg_extremum(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  const auto pos = reduced_positions(x.shape(), arg_dims(op, a, x.dim()));
  const TensorMeta& im = outs.back();
  std::vector<double> best(numel_of(im.shape), 0);
  std::vector<int64_t> at(numel_of(im.shape), -1);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const auto [o, p] = pos[i];
    if (at[o] < 0 || better<Max>(x.get(i), best[o])) {
      best[o] = x.get(i);
      at[o] = p;
    }
  }
  Tensor idx(DType::i64, im.shape);
  for (int64_t o = 0; o < idx.numel(); ++o) idx.set(o, static_cast<double>(at[o]));
  if (outs.size() == 1) return {idx};
  Tensor val(outs[0].dtype, outs[0].shape);
  for (int64_t o = 0; o < val.numel(); ++o) val.set(o, best[o]);
  return {val, idx};
}
// max.dim/min.dim: the gradient goes to the selected index (derivatives.yaml's
// value_selecting_reduction_backward: zeros scattered at the indices), written as a one-hot mask
// against positions along the dimension (a cumulative sum of ones, less one).
Args d_max_dim(DerivCtx& c) {
  const Shape in = shape_of(c, c.args[0]);
  const int64_t r = static_cast<int64_t>(in.size());
  const int64_t dim = wrap_dim(c.op, c.args[1].i, r);
  const bool keep = c.args[2].b;
  Args res(3, kNone);
  if (!wants(c, 0) || !c.grads[0].is_node()) return res;
  Arg g = c.grads[0], idx = c.out(1);
  if (!keep && r > 0) {
    g = call(c, "aten.unsqueeze.default", {g, Arg::of_int(dim)});
    idx = call(c, "aten.unsqueeze.default", {idx, Arg::of_int(dim)});
  }
  const Arg ones = call(c, "aten.add.Tensor", {zeros(c, in, DType::i64), Arg::of_int(1)});
  const Arg positions = call(c, "aten.sub.Tensor", {call(c, "aten.cumsum.default", {ones, Arg::of_int(dim)}), Arg::of_int(1)});
  const Arg hit = call(c, "aten.eq.Tensor", {positions, idx});
  res[0] = call(c, "aten.where.self", {hit, g, num(0.0)});
  return res;
}

// prod: a library kernel (the loop IR has no product combiner yet); integers and bools give int64
// unless `dtype` says otherwise, as sum. The derivative (derivatives.yaml's prod_backward) as
// the product of the other elements: result / x where x != 0; where x is the only zero, the
// product of the rest; where another element is zero too, 0.
std::vector<TensorMeta> infer_prod(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  const int64_t r = static_cast<int64_t>(x.shape.size());
  const auto dims = op.params[1].name == "dim" ? std::vector<int64_t>{wrap_dim(op, a[1].i, r)} : dims_of(op, Arg::none(), r);
  return {like(x, accumulate_type(op, x.dtype, param(op, a, "dtype")), reduced_shape(x.shape, dims, family_keepdim(op, a)))};
}
std::vector<int64_t> prod_dims(const OpDef& op, const std::vector<Arg>& a, int64_t rank) {
  return op.params[1].name == "dim" ? std::vector<int64_t>{wrap_dim(op, a[1].i, rank)} : dims_of(op, Arg::none(), rank);
}
std::vector<Tensor> ref_prod(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const auto pos = reduced_positions(in[0].shape(), prod_dims(op, a, in[0].dim()));
  const bool integral = !dtype_is_float(outs[0].dtype);
  std::vector<double> acc(numel_of(outs[0].shape), 1.0);
  std::vector<int64_t> iacc(acc.size(), 1);
  for (int64_t i = 0; i < in[0].numel(); ++i) {
    if (integral) iacc[pos[i].out] = static_cast<int64_t>(static_cast<uint64_t>(iacc[pos[i].out]) * static_cast<uint64_t>(static_cast<int64_t>(in[0].get(i))));
    else acc[pos[i].out] *= in[0].get(i);
  }
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t o = 0; o < y.numel(); ++o) y.set(o, integral ? static_cast<double>(iacc[o]) : acc[o]);
  return {y};
}
Args d_prod(DerivCtx& c) {
  const Shape in = shape_of(c, c.args[0]);
  const int64_t r = static_cast<int64_t>(in.size());
  const bool by_dim = c.op.params[1].name == "dim";
  const auto dims = prod_dims(c.op, c.args, r);
  const bool keep = by_dim && c.args[2].b;
  // Back over the reduced dimensions: a kept dimension, expanded to the input's shape.
  auto back = [&](Arg v, bool kept = false) {
    if (!kept) v = call(c, "aten.view.default", {v, ints(reduced_shape(in, dims, true))});
    return call(c, "aten.expand.default", {v, ints(in)});
  };
  auto reduce = [&](const char* op, const Arg& v) {
    if (by_dim) return call(c, op == std::string("prod") ? "aten.prod.dim_int" : "aten.sum.dim_IntList",
                            {v, op == std::string("prod") ? Arg::of_int(dims[0]) : ints(dims), Arg::of_bool(false)});
    return call(c, op == std::string("prod") ? "aten.prod.default" : "aten.sum.default", {v});
  };
  const Arg x = c.args[0];
  const Arg is_zero = call(c, "aten.eq.Scalar", {x, Arg::of_int(0)});
  const Arg zeros_here = back(reduce("sum", call(c, "aten.where.self", {is_zero, num(1.0), num(0.0)})));
  const Arg rest = back(reduce("prod", call(c, "aten.where.self", {is_zero, num(1.0), x})));  // product of the nonzero elements
  const Arg nonzero_part = call(c, "aten.where.self", {call(c, "aten.eq.Scalar", {zeros_here, Arg::of_int(0)}),
                                                        call(c, "aten.div.Tensor", {rest, x}), num(0.0)});
  const Arg zero_part = call(c, "aten.where.self", {call(c, "aten.eq.Scalar", {zeros_here, Arg::of_int(1)}), rest, num(0.0)});
  const Arg others = call(c, "aten.where.self", {is_zero, zero_part, nonzero_part});
  return one(call(c, "aten.mul.Tensor", {back(c.grads[0], keep), others}), c.op.params.size());
}

// var.correction and var.dim: torch._refs.var, prims.var over the dimensions then the kept ones
// put back; floating point only (PyTorch: "std and var only support floating point"). The
// derivative as derivatives.yaml's var_backward: 2 / (n - correction) * g * (x - mean(x)).
double var_correction(const OpDef& op, const std::vector<Arg>& a) {
  if (op.name == "aten.var.dim") return a[2].kind == Arg::Kind::boolean && !a[2].b ? 0.0 : 1.0;
  return a[2].is_none() ? 1.0 : a[2].number();
}
std::vector<TensorMeta> infer_var_aten(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  if (!dtype_is_float(x.dtype)) bad(op, "std and var only support floating point, got " + std::string(dtype_short(x.dtype)));
  const auto dims = reduction_dims(op, a, static_cast<int64_t>(x.shape.size()));
  return {like(x, x.dtype, reduced_shape(x.shape, dims, reduction_keepdim(op, a)))};
}
std::vector<Tensor> ref_var_aten(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const auto pos = reduced_positions(in[0].shape(), reduction_dims(op, a, in[0].dim()));
  const int64_t m = numel_of(outs[0].shape);
  std::vector<double> s(m, 0), s2(m, 0), n(m, 0);
  for (int64_t i = 0; i < in[0].numel(); ++i) {
    s[pos[i].out] += in[0].get(i);
    n[pos[i].out] += 1;
  }
  for (int64_t i = 0; i < in[0].numel(); ++i) {
    const double d = in[0].get(i) - s[pos[i].out] / n[pos[i].out];
    s2[pos[i].out] += d * d;
  }
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t o = 0; o < m; ++o) y.set(o, s2[o] / std::max(0.0, n[o] - var_correction(op, a)));
  return {y};
}
std::vector<Arg> decomp_var_aten(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape x = b.meta(a[0]).shape;
  const auto dims = reduction_dims(op, a, static_cast<int64_t>(x.size()));
  Arg r = b.call("prims.var.default", {a[0], Arg::of_ints(dims), Arg::of_real(var_correction(op, a))});
  if (reduction_keepdim(op, a)) r = keepdim(b, r, x, dims);
  return {r};
}
Args d_var(DerivCtx& c) {
  const Shape in = shape_of(c, c.args[0]);
  const auto dims = reduction_dims(c.op, c.args, static_cast<int64_t>(in.size()));
  int64_t n = 1;
  for (int64_t d : dims) n *= in[d];
  const Arg mean = call(c, "aten.mean.dim", {c.args[0], ints(dims), Arg::of_bool(true)});
  const Arg centred = call(c, "aten.sub.Tensor", {c.args[0], mean});
  Shape kept = reduced_shape(in, dims, true);
  const Arg g = call(c, "aten.view.default", {c.grads[0], ints(kept)});
  const Arg gs = call(c, "aten.mul.Tensor", {g, num(2.0 / (static_cast<double>(n) - var_correction(c.op, c.args)))});
  return one(call(c, "aten.mul.Tensor", {gs, centred}), c.op.params.size());
}

// cumsum: a library kernel (PyTorch has no decomposition; Inductor lowers it as a scan);
// integers and bools give int64 unless `dtype` says otherwise. The derivative (derivatives.yaml's
// cumsum_backward): the reversed cumulative sum of the gradient, flip(cumsum(flip(g))).
std::vector<TensorMeta> infer_cumsum(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  wrap_dim(op, a[1].i, static_cast<int64_t>(x.shape.size()));
  return {like(x, accumulate_type(op, x.dtype, a[2]), x.shape)};
}
std::vector<Tensor> ref_cumsum(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  Tensor y(outs[0].dtype, outs[0].shape);
  if (x.dim() == 0) {
    y.set(0, x.get(0));
    return {y};
  }
  const int64_t d = wrap_dim(op, a[1].i, x.dim());
  const int64_t stride = contiguous_strides(x.shape())[d], n = x.shape()[d];
  const bool integral = !dtype_is_float(y.dtype());
  for (int64_t i = 0; i < x.numel(); ++i) {
    if ((i / stride) % n != 0) continue;  // each line along d starts at position 0
    double acc = 0;
    int64_t iacc = 0;
    for (int64_t k = 0; k < n; ++k) {
      const double v = x.get(i + k * stride);
      if (integral) iacc = static_cast<int64_t>(static_cast<uint64_t>(iacc) + static_cast<uint64_t>(static_cast<int64_t>(v)));
      else acc += v;
      y.set(i + k * stride, integral ? static_cast<double>(iacc) : acc);
    }
  }
  return {y};
}
Args d_cumsum(DerivCtx& c) {
  if (shape_of(c, c.args[0]).empty()) return one(c.grads[0], 3);
  const Arg dims = ints({c.args[1].i});
  const Arg flipped = call(c, "aten.flip.default", {c.grads[0], dims});
  return one(call(c, "aten.flip.default", {call(c, "aten.cumsum.default", {flipped, c.args[1]}), dims}), 3);
}

// ---- entries --------------------------------------------------------------------------------

OpDef reduction_op(const char* name, const char* schema, Reduce r, unsigned lv, DerivFn der = nullptr,
                   DecompFn d = single<decomp_reduction>) {
  return {.name = name, .schema = schema, .kind = OpKind::reduction, .levels = lv, .reduce = r, .decompose = d, .derivative = der};
}

}  // namespace

void add_reduction_ops(std::vector<OpDef>& t) {
  const std::vector<OpDef> ops = {
      // ATen
      summing(reduction_op("aten.sum.default", "sum(Tensor self, *, ScalarType? dtype=None) -> Tensor", Reduce::sum, kAten, d_sum,
                           single<decomp_sum_default>)),
      summing(reduction_op("aten.sum.dim_IntList",
                           "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
                           Reduce::sum, kCore, d_sum, single<decomp_sum>)),
      reduction_op("aten.mean.default", "mean(Tensor self, *, ScalarType? dtype=None) -> Tensor", Reduce::mean, kCore, d_mean),
      reduction_op("aten.mean.dim",
                   "mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
                   Reduce::mean, kCore, d_mean),
      reduction_op("aten.amax.default", "amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", Reduce::max, kCore,
                   d_amax),
      reduction_op("aten.amin.default", "amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", Reduce::min, kCore,
                   d_amax),
      comp("aten.any.default", "any(Tensor self) -> Tensor", kCore, infer_any, ref_any, decomp_any),
      comp("aten.any.dim", "any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor", kCore, infer_any, ref_any, decomp_any),
      comp("aten.any.dims", "any.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor", kCore, infer_any, ref_any,
           decomp_any),
      ext("aten.argmax.default", "argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", kCore, infer_arg_extremum,
          ref_arg_extremum<true>),
      ext("aten.argmin.default", "argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", kCore, infer_arg_extremum,
          ref_arg_extremum<false>),
      ext("aten.max.dim", "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)", kCore,
          infer_arg_extremum, ref_arg_extremum<true>, nullptr, d_max_dim),
      ext("aten.min.dim", "min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)", kCore,
          infer_arg_extremum, ref_arg_extremum<false>, nullptr, d_max_dim),
      ext("aten.prod.default", "prod(Tensor self, *, ScalarType? dtype=None) -> Tensor", kCore, infer_prod, ref_prod, nullptr, d_prod),
      ext("aten.prod.dim_int", "prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", kCore,
          infer_prod, ref_prod, nullptr, d_prod),
      comp("aten.var.correction",
           "var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor", kCore,
           infer_var_aten, ref_var_aten, decomp_var_aten, d_var),
      comp("aten.var.dim", "var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor", kCore,
           infer_var_aten, ref_var_aten, decomp_var_aten, d_var),
      ext("aten.cumsum.default", "cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", kCore, infer_cumsum, ref_cumsum,
          nullptr, d_cumsum),
      // prims
      reduction_op("prims.sum.default", "sum(Tensor inp, int[]? dims, *, ScalarType? output_dtype=None) -> Tensor",
                   Reduce::sum, kPrims, nullptr, nullptr),
      reduction_op("prims.amax.default", "amax(Tensor inp, int[]? dims) -> Tensor", Reduce::max, kPrims, nullptr, nullptr),
      reduction_op("prims.amin.default", "amin(Tensor inp, int[]? dims) -> Tensor", Reduce::min, kPrims, nullptr, nullptr),
      comp("prims.var.default", "var(Tensor inp, int[]? dims, float? correction=1, *, ScalarType? output_dtype=None) -> Tensor", kPrims,
           infer_var, ref_var, decomp_var),
  };
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
