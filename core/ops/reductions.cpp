// Reductions: ATen's sum, mean, amax and amin, the prims they decompose into, and the composite
// prim var (the variance, which normalization decomposes into). A reduction's shape rule,
// reference kernel and lowering are those of its kind, from its combiner `reduce` (ops/math.h);
// here are its decomposition and its derivative.
#include <algorithm>

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

// ---- entries --------------------------------------------------------------------------------

OpDef reduction_op(const char* name, const char* schema, Reduce r, unsigned lv, DerivFn der = nullptr,
                   DecompFn d = single<decomp_reduction>) {
  return {.name = name, .schema = schema, .kind = OpKind::reduction, .levels = lv, .reduce = r, .decompose = d, .derivative = der};
}

}  // namespace

void add_reduction_ops(std::vector<OpDef>& t) {
  const std::vector<OpDef> ops = {
      // ATen
      reduction_op("aten.sum.default", "sum(Tensor self, *, ScalarType? dtype=None) -> Tensor", Reduce::sum, kAten, d_sum,
                   single<decomp_sum_default>),
      reduction_op("aten.sum.dim_IntList",
                   "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
                   Reduce::sum, kCore, d_sum),
      reduction_op("aten.mean.default", "mean(Tensor self, *, ScalarType? dtype=None) -> Tensor", Reduce::mean, kCore, d_mean),
      reduction_op("aten.mean.dim",
                   "mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
                   Reduce::mean, kCore, d_mean),
      reduction_op("aten.amax.default", "amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", Reduce::max, kCore,
                   d_amax),
      reduction_op("aten.amin.default", "amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", Reduce::min, kCore,
                   d_amax),
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
