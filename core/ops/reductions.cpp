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

// max.default/min.default: the extremum of every element, a 0-d tensor of the input's dtype (NaN
// propagates, as amax's). Inductor lowers them as amax/amin over every dimension; the decomposition
// is the prims reduction. An empty input has no extremum (PyTorch: "Expected reduction dim to be
// specified for input.numel() == 0").
std::vector<TensorMeta> infer_full_extremum(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  if (numel_of(x.shape) == 0)
    bad(op, "Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.");
  return {like(x, x.dtype, {})};
}
// derivatives.yaml: evenly_distribute_backward(grad, self, result): the gradient shared evenly
// among the elements equal to the result (NaNs too where the result is NaN):
// mask = (self == result) | (isnan(self) & isnan(result)); grad / mask.sum() * mask.
Args d_evenly_distribute(DerivCtx& c) {
  const Arg& x = c.args[0];
  const Arg y = c.out(0);
  const Arg both_nan = call(c, "aten.logical_and.default", {call(c, "aten.isnan.default", {x}), call(c, "aten.isnan.default", {y})});
  const Arg hit = call(c, "aten.logical_or.default", {call(c, "aten.eq.Tensor", {x, y}), both_nan});
  const Arg mask = call(c, "aten.where.self", {hit, num(1.0), num(0.0)});
  const Arg count = call(c, "aten.sum.dim_IntList", {mask, Arg::none(), Arg::of_bool(false)});
  return one(call(c, "aten.mul.Tensor", {mask, call(c, "aten.div.Tensor", {c.grads[0], count})}), c.op.params.size());
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
// sum-like result types: the dtype argument, else integers and bools accumulate in int64 (floats
// and complex values keep their type).
DType accumulate_type(const OpDef& op, DType in, const Arg& dtype) {
  if (auto t = dtype_arg(op, dtype)) return *t;
  return dtype_is_float(in) || dtype_is_complex(in) ? in : DType::i64;
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
// Kind extern_kernel with no decomposition (PyTorch has none): lower/lower.cpp makes them generated
// arg reductions, as Inductor's argmax/argmin reduction types (max.dim: amax and argmax).
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

// prod: a product reduction of generated code (lower/lower.cpp, Inductor's "prod"); integers and
// bools give int64 unless `dtype` says otherwise, as sum. The derivative (derivatives.yaml's prod_backward) as
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

// ---- linalg_vector_norm, norm (issue 33) -----------------------------------------------------

// linalg_vector_norm(x, ord, dim, keepdim, *, dtype): (sum |x|^ord)^(1/ord) over dim (None or []:
// every dimension); ord inf / -inf: max / min of |x|; ord 0: the count of nonzeros. The checks,
// the types (computed in float32 for halves, the result in dtype or x's) and the decomposition
// as torch._refs.linalg.vector_norm; the derivative as derivatives.yaml's
// linalg_vector_norm_backward (norm_backward in FunctionsManual.cpp). norm.ScalarOpt_dim and
// norm.Scalar (real inputs) are that op, as ATen's norm calls it.
struct VNorm {
  double ord;
  std::vector<int64_t> dims;  // wrapped, sorted; every dimension where dim is None or []
  bool dim_given;             // dim a non-empty list (torch._refs' `dim is not None` after [] -> None)
  bool keepdim;
  DType compute, result;
};
VNorm vnorm_spec(const OpDef& op, const TensorMeta& x, const std::vector<Arg>& a) {
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const bool is_norm = op.base_name() == "norm";
  const Arg ord = a[1];
  if (!ord.is_none() && !ord.is_number()) bad(op, "ord must be a number");
  VNorm v{ord.is_none() ? 2.0 : ord.number(), {}, false, false, x.dtype, x.dtype};
  if (!dtype_is_float(x.dtype))
    bad(op, is_norm ? "input dtype should be either floating point or complex. Got " + std::string(dtype_short(x.dtype)) + " instead."
                    : "Expected a floating point or complex tensor as input. Got " + std::string(dtype_short(x.dtype)));
  const Arg dim = op.name == "aten.norm.Scalar" ? Arg::none() : a[2];
  if (!dim.is_none()) {
    std::vector<bool> seen(std::max<int64_t>(rank, 1), false);
    for (int64_t d : dim.ints()) {
      const int64_t w = wrap_dim(op, d, rank);
      if (seen[w]) bad(op, "dim " + std::to_string(w) + " appears multiple times in the list of dims");
      seen[w] = true;
    }
  }
  v.dim_given = !dim.is_none() && !dim.ints().empty();
  v.dims = dims_of(op, dim, rank);
  v.keepdim = op.name != "aten.norm.Scalar" && a[3].kind == Arg::Kind::boolean && a[3].b;
  if (op.name == "aten.linalg_vector_norm.default")
    if (auto t = dtype_arg(op, a[4])) {
      if (!dtype_is_float(*t)) bad(op, "dtype should be floating point or complex. Got " + std::string(dtype_torch(*t)));
      if (promote(*t, x.dtype) != *t)
        bad(op, "the dtype of the input (" + std::string(dtype_torch(x.dtype)) + ") should be convertible without narrowing to the specified dtype (" +
                    std::string(dtype_torch(*t)) + ")");
      v.result = *t;
    }
  v.compute = compute_dtype(v.result);
  if (x.numel() == 0 && (v.ord < 0 || v.ord == INFINITY)) {
    if (!v.dim_given)
      bad(op, "cannot compute the " + std::to_string(v.ord) + " norm on an empty tensor because the operation does not have an identity");
    for (int64_t d : v.dims)
      if (x.shape[d] == 0)
        bad(op, "cannot compute the " + std::to_string(v.ord) + " norm on the dimension " + std::to_string(d) +
                    " because this dimension is empty and the operation does not have an identity");
  }
  return v;
}
std::vector<TensorMeta> infer_vector_norm(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  const VNorm v = vnorm_spec(op, x, a);
  return {like(x, v.result, reduced_shape(x.shape, v.dims, v.keepdim))};
}
std::vector<Tensor> ref_vector_norm(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  TensorMeta xm = TensorMeta::contiguous(x.dtype(), x.shape());
  const VNorm v = vnorm_spec(op, xm, a);
  const auto pos = reduced_positions(x.shape(), v.dims);
  const int64_t m = numel_of(outs[0].shape);
  const double init = v.ord == INFINITY ? 0.0 : v.ord == -INFINITY ? INFINITY : 0.0;
  std::vector<double> acc(m, init);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double e = std::fabs(x.get(i));
    double& r = acc[pos[i].out];
    if (v.ord == 0) r += e != 0 ? 1 : 0;
    else if (std::isinf(v.ord)) r = std::isnan(e) || std::isnan(r) ? NAN : v.ord > 0 ? std::max(r, e) : std::min(r, e);
    else r += std::pow(e, v.ord);
  }
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t o = 0; o < m; ++o) {
    const bool root = v.ord != 0 && !std::isinf(v.ord);
    y.set(o, root ? std::pow(acc[o], 1.0 / v.ord) : acc[o]);
  }
  return {y};
}
std::vector<Arg> decomp_vector_norm(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta x = b.meta(a[0]);
  const VNorm v = vnorm_spec(op, x, a);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const Arg dims = Arg::of_ints(v.dims), keep = Arg::of_bool(v.keepdim);
  auto convert = [&b](Arg t, DType to) {
    if (b.meta(t).dtype == to) return t;
    return b.call("prims.convert_element_type.default", {t, Arg::of_string(std::string(dtype_torch(to)))});
  };
  if (v.ord == 0) {
    const Arg nz = b.call("aten.ne.Scalar", {a[0], Arg::of_real(0.0)});
    return {b.call("aten.sum.dim_IntList", {nz, dims, keep}, {{"dtype", Arg::of_string(std::string(dtype_torch(v.result)))}})};
  }
  if (std::isinf(v.ord)) {
    const Arg ax = b.call("aten.abs.default", {a[0]});
    return {convert(b.call(v.ord > 0 ? "aten.amax.default" : "aten.amin.default", {ax, dims, keep}), v.result)};
  }
  const Arg xc = convert(a[0], v.compute);
  bool ones = !v.dim_given && x.numel() == 1;  // every reduced dimension of size 1: |x| itself
  if (v.dim_given && rank > 0) {
    ones = true;
    for (int64_t d : v.dims) ones = ones && x.shape[d] == 1;
  }
  if (ones) {
    const Arg ax = b.call("aten.abs.default", {xc});
    if (v.keepdim || rank == 0) return {b.call("aten.clone.default", {convert(ax, v.result)})};
    return {convert(b.call("aten.view.default", {ax, Arg::of_ints(reduced_shape(x.shape, v.dims, false))}), v.result)};
  }
  const bool even = std::fmod(v.ord, 2.0) == 0.0;
  const Arg base = even ? xc : b.call("aten.abs.default", {xc});
  const Arg p = b.call("aten.pow.Tensor_Scalar", {base, Arg::of_real(v.ord)});
  const Arg s = b.call("aten.sum.dim_IntList", {p, dims, keep});
  return {convert(b.call("aten.pow.Tensor_Scalar", {s, Arg::of_real(1.0 / v.ord)}), v.result)};
}
// norm_backward(grad, self, p, norm, dim, keepdim), its branches as FunctionsManual.cpp writes them.
Args d_vector_norm(DerivCtx& c) {
  const TensorMeta xm = c.b.meta(c.args[0]);
  const VNorm v = vnorm_spec(c.op, xm, c.args);
  const Shape in = xm.shape;
  const Arg x = c.args[0];
  Arg g = c.grads[0], n = c.out(0);
  if (!v.keepdim && !in.empty()) {
    const Shape kept = reduced_shape(in, v.dims, true);
    g = call(c, "aten.view.default", {g, ints(kept)});
    n = call(c, "aten.view.default", {n, ints(kept)});
  }
  auto masked = [&c](Arg t, Arg cond) { return call(c, "aten.masked_fill.Scalar", {t, cond, num(0.0)}); };
  auto pw = [&c](Arg t, double e) { return call(c, "aten.pow.Tensor_Scalar", {t, num(e)}); };
  const double p = v.ord;
  Arg r;
  if (p == 0.0) {
    r = zeros(c, in, xm.dtype);
  } else if (p == 1.0) {
    r = call(c, "aten.mul.Tensor", {call(c, "aten.sgn.default", {x}), g});
  } else if (p == 2.0) {
    r = call(c, "aten.mul.Tensor", {g, masked(call(c, "aten.div.Tensor", {x, n}), call(c, "aten.eq.Scalar", {n, num(0.0)}))});
  } else if (std::isinf(p)) {
    const Arg ax = call(c, "aten.abs.default", {x});
    const Arg mask = call(c, "aten.logical_or.default", {call(c, "aten.eq.Tensor", {ax, n}), call(c, "aten.isnan.default", {ax})});
    const Arg count = call(c, "aten.sum.dim_IntList", {mask, ints(v.dims), Arg::of_bool(true)});
    const Arg share = call(c, "aten.mul.Tensor", {call(c, "aten.div.Tensor", {g, count}), mask});
    r = call(c, "aten.mul.Tensor", {call(c, "aten.sgn.default", {x}), share});
  } else if (p < 1.0) {
    const Arg zero_x = call(c, "aten.eq.Scalar", {x, num(0.0)});
    const Arg scaled = call(c, "aten.mul.Tensor", {call(c, "aten.sgn.default", {x}), masked(pw(call(c, "aten.abs.default", {x}), p - 1), zero_x)});
    r = call(c, "aten.mul.Tensor", {call(c, "aten.mul.Tensor", {scaled, g}), pw(n, 1 - p)});
  } else {
    const Arg scaled = p < 2.0 ? call(c, "aten.mul.Tensor", {call(c, "aten.sgn.default", {x}), pw(call(c, "aten.abs.default", {x}), p - 1)})
                               : call(c, "aten.mul.Tensor", {x, pw(call(c, "aten.abs.default", {x}), p - 2)});
    const Arg scale = masked(call(c, "aten.div.Tensor", {g, pw(n, p - 1)}), call(c, "aten.eq.Scalar", {n, num(0.0)}));
    r = call(c, "aten.mul.Tensor", {scaled, scale});
  }
  if (c.b.meta(r).dtype != xm.dtype)
    r = call(c, "prims.convert_element_type.default", {r, Arg::of_string(std::string(dtype_torch(xm.dtype)))});
  return one(r, c.op.params.size());
}
std::vector<Arg> decomp_norm(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const VNorm v = vnorm_spec(op, b.meta(a[0]), a);
  const Arg dim = op.name == "aten.norm.Scalar" ? Arg::none() : a[2];
  return {b.call("aten.linalg_vector_norm.default", {a[0], Arg::of_real(v.ord), dim, Arg::of_bool(v.keepdim)})};
}

// _weight_norm(v, g, dim) (hf_hubert's weight-normed convolution, issue 33): v * (g / ||v||), the
// norm over every dimension but dim (dim -1: over all of them), as ATen's _weight_norm: through
// _weight_norm_interface where its fused kernel applies (dim first or last, no float16), else
// v * (g / norm_except_dim(v, 2, dim)). _weight_norm_interface(v, g, dim) -> (w, norm) as
// torch._decomp writes it (the norm kept in float32 for a bfloat16 g). Both are differentiated
// through their decompositions (_weight_norm is CompositeImplicit in PyTorch; the interface's
// _weight_norm_interface_backward computes the same gradient).
std::vector<int64_t> weight_norm_dims(const OpDef& op, const Shape& v, int64_t dim) {
  const int64_t rank = static_cast<int64_t>(v.size());
  std::vector<int64_t> dims;
  const int64_t keep = dim == -1 ? -1 : wrap_dim(op, dim, rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != keep) dims.push_back(d);
  return dims;
}
bool weight_norm_fused(const TensorMeta& v, const TensorMeta& g, int64_t dim) {
  const bool half = v.dtype == DType::f16 || g.dtype == DType::f16;
  return !half && (dim == 0 || dim == static_cast<int64_t>(v.shape.size()) - 1);
}
std::vector<Arg> decomp_weight_norm_interface(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta v = b.meta(a[0]), g = b.meta(a[1]);
  const int64_t dim = a[2].i, rank = static_cast<int64_t>(v.shape.size());
  if (op.name == "aten._weight_norm_interface.default" && dim != 0 && dim != rank - 1)
    bad(op, "fused kernels can only be applied for first or last dim");
  std::vector<int64_t> dims;  // torch._decomp: every i != dim
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim) dims.push_back(d);
  std::vector<std::pair<std::string, Arg>> kw;
  if (g.dtype == DType::bf16) kw.push_back({"dtype", Arg::of_string("torch.float32")});
  const Arg norm = b.call("aten.linalg_vector_norm.default", {a[0], Arg::of_real(2.0), Arg::of_ints(dims), Arg::of_bool(true)}, kw);
  Arg n = norm;
  if (b.meta(n).dtype != g.dtype) n = b.call("prims.convert_element_type.default", {n, Arg::of_string(std::string(dtype_torch(g.dtype)))});
  return {b.call("aten.mul.Tensor", {a[0], b.call("aten.div.Tensor", {a[1], n})}), norm};
}
std::vector<Arg> decomp_weight_norm(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta v = b.meta(a[0]), g = b.meta(a[1]);
  if (weight_norm_fused(v, g, a[2].i)) return {decomp_weight_norm_interface(b, op, a)[0]};
  const auto dims = weight_norm_dims(op, v.shape, a[2].i);
  const Arg norm = a[2].i == -1 ? b.call("aten.norm.Scalar", {a[0], Arg::of_real(2.0)})
                                : b.call("aten.linalg_vector_norm.default", {a[0], Arg::of_real(2.0), Arg::of_ints(dims), Arg::of_bool(true)});
  return {b.call("aten.mul.Tensor", {a[0], b.call("aten.div.Tensor", {a[1], norm})})};
}
// The reference: the norms in double, w = v * g / norm broadcast as the decomposition's shapes.
std::vector<Tensor> ref_weight_norm(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &v = in[0], &g = in[1];
  const int64_t dim = a[2].i;
  const auto dims = weight_norm_dims(op, v.shape(), dim);
  const auto pos = reduced_positions(v.shape(), dims);
  const Shape nshape = reduced_shape(v.shape(), dims, true);
  std::vector<double> ss(numel_of(nshape), 0.0);
  for (int64_t i = 0; i < v.numel(); ++i) ss[pos[i].out] += v.get(i) * v.get(i);
  Tensor w(outs[0].dtype, outs[0].shape);
  const Shape& ws = outs[0].shape;
  const Shape vst = broadcast_strides(v.shape(), ws), gst = broadcast_strides(g.shape(), ws), nst = broadcast_strides(nshape, ws);
  for (int64_t i = 0; i < w.numel(); ++i)
    w.set(i, v.get(offset_of(i, ws, vst)) * (g.get(offset_of(i, ws, gst)) / std::sqrt(ss[offset_of(i, ws, nst)])));
  if (outs.size() == 1) return {w};
  Tensor n(outs[1].dtype, outs[1].shape);
  for (int64_t i = 0; i < n.numel(); ++i) n.set(i, std::sqrt(ss[i]));
  return {w, n};
}

// ---- entries --------------------------------------------------------------------------------

OpDef reduction_op(const char* name, const char* schema, Reduce r, unsigned lv, DerivFn der = nullptr,
                   DecompFn d = single<decomp_reduction>) {
  return {.name = name, .schema = schema, .kind = OpKind::reduction, .levels = lv, .reduce = r, .decompose = d, .derivative = der};
}

OpDef with_infer(OpDef o, InferFn infer) {
  o.infer = infer;
  return o;
}

}  // namespace

void add_reduction_ops(std::vector<OpDef>& t) {
  const std::vector<OpDef> ops = {
      // ATen
      by_parts(summing(reduction_op("aten.sum.default", "sum(Tensor self, *, ScalarType? dtype=None) -> Tensor", Reduce::sum, kAten, d_sum,
                                    single<decomp_sum_default>))),
      by_parts(summing(reduction_op("aten.sum.dim_IntList",
                                    "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
                                    Reduce::sum, kCore, d_sum, single<decomp_sum>))),
      // Linear: a complex mean is the mean of its real parts and of its imaginary parts.
      by_parts(reduction_op("aten.mean.default", "mean(Tensor self, *, ScalarType? dtype=None) -> Tensor", Reduce::mean, kCore, d_mean)),
      by_parts(reduction_op("aten.mean.dim",
                            "mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
                            Reduce::mean, kCore, d_mean)),
      reduction_op("aten.amax.default", "amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", Reduce::max, kCore,
                   d_amax),
      reduction_op("aten.amin.default", "amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", Reduce::min, kCore,
                   d_amax),
      with_infer(reduction_op("aten.max.default", "max(Tensor self) -> Tensor", Reduce::max, kAten, d_evenly_distribute),
                 infer_full_extremum),
      with_infer(reduction_op("aten.min.default", "min(Tensor self) -> Tensor", Reduce::min, kAten, d_evenly_distribute),
                 infer_full_extremum),
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
      // Ops the model zoo met (issue 33)
      comp("aten.linalg_vector_norm.default",
           "linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
           kAten, infer_vector_norm, ref_vector_norm, decomp_vector_norm, d_vector_norm),
      comp("aten.norm.ScalarOpt_dim", "norm.ScalarOpt_dim(Tensor self, Scalar? p, int[1] dim, bool keepdim=False) -> Tensor", kAten,
           infer_vector_norm, ref_vector_norm, decomp_norm, d_vector_norm),
      comp("aten.norm.Scalar", "norm.Scalar(Tensor self, Scalar p=2) -> Tensor", kAten, infer_vector_norm, ref_vector_norm, decomp_norm,
           d_vector_norm),
      comp("aten._weight_norm.default", "_weight_norm(Tensor v, Tensor g, int dim=0) -> Tensor", kAten, infer_by_decomp, ref_weight_norm,
           decomp_weight_norm),
      comp("aten._weight_norm_interface.default", "_weight_norm_interface(Tensor v, Tensor g, int dim=0) -> (Tensor, Tensor)", kAten,
           infer_by_decomp, ref_weight_norm, decomp_weight_norm_interface),
      // prims
      by_parts(reduction_op("prims.sum.default", "sum(Tensor inp, int[]? dims, *, ScalarType? output_dtype=None) -> Tensor",
                            Reduce::sum, kPrims, nullptr, nullptr)),
      reduction_op("prims.amax.default", "amax(Tensor inp, int[]? dims) -> Tensor", Reduce::max, kPrims, nullptr, nullptr),
      reduction_op("prims.amin.default", "amin(Tensor inp, int[]? dims) -> Tensor", Reduce::min, kPrims, nullptr, nullptr),
      comp("prims.var.default", "var(Tensor inp, int[]? dims, float? correction=1, *, ScalarType? output_dtype=None) -> Tensor", kPrims,
           infer_var, ref_var, decomp_var),
  };
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
