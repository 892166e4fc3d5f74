// Indexing: index, index_put, index_select, the scatter family, slice/select_scatter, masked_scatter, embedding_dense_backward, _embedding_bag, sort, topk, nonzero.
//
// Index tensors read data: each reference kernel checks every index it reads and throws
// std::invalid_argument naming the op, the index and the size, in PyTorch's words ("index 12 is
// out of bounds for dimension 0 with size 10"). index and index_put wrap negative indices, as
// PyTorch's advanced indexing does; index_select, gather and the scatters reject them, as
// PyTorch's kernels do. index, index_put and the scatters are extern_kernel entries, as PyTorch
// keeps them; lowering makes generated code of them where Inductor does (lower/lower.cpp: index
// as indirect loads; scatter, scatter_add, scatter_reduce "sum" and index_put as a copy of self
// and a scatter loop node), and runs the rest as library calls. The composites decompose as
// torch._refs / torch._decomp write them: index_select into index, select_scatter and
// slice_scatter into where over position masks, embedding_dense_backward into index_put with
// accumulate (so an embedding's backward is generated code).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "ops/indexing.h"
#include "ops/rule_helpers.h"

namespace ls {
namespace {

using namespace rules;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

[[noreturn]] void out_of_bounds(const OpDef& op, int64_t v, int64_t dim, int64_t size) {
  bad(op, "index " + std::to_string(v) + " is out of bounds for dimension " + std::to_string(dim) + " with size " +
              std::to_string(size));
}
bool is_index_dtype(DType t) { return t == DType::i64 || t == DType::i32; }
// PyTorch's ensure_nonempty: a 0-d tensor counts as one element in one dimension.
Shape nonempty(const Shape& s) { return s.empty() ? Shape{1} : s; }
int64_t dot(const Shape& pos, const Shape& strides) {
  int64_t o = 0;
  for (size_t d = 0; d < pos.size(); ++d) o += pos[d] * strides[d];
  return o;
}
// The element of a tensor of shape `in` that position `pos` of a broadcast shape `out` reads.
int64_t broadcast_offset(const Shape& pos, const Shape& in, const Shape& out) { return dot(pos, broadcast_strides(in, out)); }
Tensor copy_of(const Tensor& x, DType dt, const Shape& shape) {
  Tensor y(dt, shape);
  for (int64_t i = 0; i < y.numel(); ++i) y.set(i, x.get(i));
  return y;
}
// A tensor of `shape` filled with v: a 0-d constant expanded (a view: nothing is stored).
Arg full(GraphBuilder& b, const Shape& shape, DType t, double v) {
  Tensor s(t, {});
  s.set(0, v);
  const Arg z = b.constant(v == 0 ? "zeros" : "full", s);
  return shape.empty() ? z : b.call("aten.expand.default", {z, ints(shape)});
}
Arg none_list(size_t n) {
  Arg l;
  l.kind = Arg::Kind::list;
  l.list.assign(n, Arg::none());
  return l;
}
// [None] * dim + [index]: index_select's and index_add's indices as aten.index takes them.
Arg at_dim(int64_t dim, const Arg& index) {
  Arg l = none_list(static_cast<size_t>(dim));
  l.list.push_back(index);
  return l;
}

// ---------------------------------------------------------------------------------------------
// Advanced indexing (index, index_put)
// ---------------------------------------------------------------------------------------------

}  // namespace

// shapes: those of the list's tensors, in order (the None entries have none).
IndexPlan index_plan(const OpDef& op, const Shape& self, const Arg& list, const std::vector<Shape>& shapes) {
  using namespace rules;
  if (list.kind != Arg::Kind::list) bad(op, "indices must be a list of tensors or None");
  const int64_t r = static_cast<int64_t>(self.size());
  if (static_cast<int64_t>(list.list.size()) > r)
    bad(op, "too many indices for tensor of dimension " + std::to_string(r) + " (got " + std::to_string(list.list.size()) + ")");
  IndexPlan p;
  std::string seen;
  size_t k = 0;
  for (size_t d = 0; d < list.list.size(); ++d) {
    if (list.list[d].is_none()) continue;
    if (!list.list[d].is_node() || k >= shapes.size()) bad(op, "indices must be tensors or None");
    const Shape& s = shapes[k++];
    seen += (seen.empty() ? "" : ", ") + shape_str(s);
    try {
      p.bshape = p.indexed.empty() ? s : broadcast_shapes(p.bshape, s);
    } catch (const std::invalid_argument&) {
      bad(op, "shape mismatch: indexing tensors could not be broadcast together with shapes " + seen);
    }
    p.indexed.push_back(static_cast<int64_t>(d));
  }
  const bool adjacent = p.indexed.empty() || p.indexed.back() - p.indexed.front() + 1 == static_cast<int64_t>(p.indexed.size());
  for (int64_t d = 0; d < r; ++d) {
    if (std::count(p.indexed.begin(), p.indexed.end(), d)) continue;
    (adjacent && (p.indexed.empty() || d < p.indexed.front()) ? p.before : p.after).push_back(d);
  }
  for (int64_t d : p.before) p.out.push_back(self[d]);
  p.out.insert(p.out.end(), p.bshape.begin(), p.bshape.end());
  for (int64_t d : p.after) p.out.push_back(self[d]);
  return p;
}

namespace {

IndexPlan index_plan_of(const Graph& g, const OpDef& op, const TensorMeta& self, const Arg& list) {
  std::vector<Shape> shapes;
  if (list.kind == Arg::Kind::list)
    for (const Arg& x : list.list) {
      if (!x.is_node()) continue;
      const TensorMeta& m = meta_of(g, x);
      if (m.dtype == DType::b8 || m.dtype == DType::u8)
        bad(op, "boolean mask indices have a data-dependent size; export turns them into nonzero-based int64 indices, "
                "which is what this op takes");
      if (!is_index_dtype(m.dtype))
        bad(op, "tensors used as indices must be long, int, byte or bool tensors, got " + std::string(dtype_short(m.dtype)));
      shapes.push_back(m.shape);
    }
  return index_plan(op, self.shape, list, shapes);
}

// The linear offset (row-major) in self that position `pos` of the index result reads; checks
// and wraps each index.
int64_t index_source(const OpDef& op, const IndexPlan& p, const Shape& self, const std::vector<Tensor>& idx, const Shape& pos) {
  Shape sp(self.size(), 0);
  const size_t nb = p.before.size(), nB = p.bshape.size();
  for (size_t k = 0; k < nb; ++k) sp[p.before[k]] = pos[k];
  for (size_t k = 0; k < p.after.size(); ++k) sp[p.after[k]] = pos[nb + nB + k];
  const Shape bpos(pos.begin() + static_cast<long>(nb), pos.begin() + static_cast<long>(nb + nB));
  for (size_t j = 0; j < p.indexed.size(); ++j) {
    const int64_t d = p.indexed[j], n = self[d];
    const int64_t v = static_cast<int64_t>(idx.at(j).get(broadcast_offset(bpos, idx[j].shape(), p.bshape)));
    if (v < -n || v >= n) out_of_bounds(op, v, d, n);
    sp[d] = v < 0 ? v + n : v;
  }
  return dot(sp, contiguous_strides(self));
}

std::vector<TensorMeta> infer_index(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  return {like(x, x.dtype, index_plan_of(g, op, x, a[1]).out)};
}
std::vector<Tensor> ref_index(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  std::vector<Shape> shapes;
  for (const Tensor& t : in.lists[1]) shapes.push_back(t.shape());
  const IndexPlan p = index_plan(op, x.shape(), a[1], shapes);
  if (p.out != outs[0].shape) bad(op, "the indices give a result of shape " + shape_str(p.out) + ", not the inferred " + shape_str(outs[0].shape));
  Tensor y(outs[0].dtype, p.out);
  for (int64_t i = 0; i < y.numel(); ++i) y.set(i, x.get(index_source(op, p, x.shape(), in.lists[1], unravel(i, p.out))));
  return {y};
}
// index: the gradient put back where each element came from, summed where an element was read twice.
Args d_index(DerivCtx& c) {
  if (!wants(c, 0)) return {kNone, kNone};
  const TensorMeta x = c.b.meta(c.args[0]);
  return {call(c, "aten.index_put.default", {zeros(c, x.shape, x.dtype), c.args[1], c.grads[0], Arg::of_bool(true)}), kNone};
}

std::vector<TensorMeta> infer_index_put(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta &x = meta_of(g, a[0]), &v = meta_of(g, a[2]);
  const IndexPlan p = index_plan_of(g, op, x, a[1]);
  if (v.dtype != x.dtype)
    bad(op, "Index put requires the source and destination dtypes match, got " + std::string(dtype_short(x.dtype)) +
                " for the destination and " + std::string(dtype_short(v.dtype)) + " for the source.");
  if (!broadcasts_to(v.shape, p.out))
    bad(op, "shape mismatch: value tensor of shape " + shape_str(v.shape) + " cannot be broadcast to indexing result of shape " + shape_str(p.out));
  return {like(x, x.dtype, x.shape)};
}
std::vector<Tensor> ref_index_put(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &x = in[0], &v = in[2];
  std::vector<Shape> shapes;
  for (const Tensor& t : in.lists[1]) shapes.push_back(t.shape());
  const IndexPlan p = index_plan(op, x.shape(), a[1], shapes);
  if (!broadcasts_to(v.shape(), p.out))  // the shape rule checked it; checked again here, where it is read
    bad(op, "shape mismatch: value tensor of shape " + shape_str(v.shape()) + " cannot be broadcast to indexing result of shape " + shape_str(p.out));
  const bool accumulate = a[3].b;
  Tensor y = copy_of(x, outs[0].dtype, x.shape());
  const int64_t n = numel_of(p.out);
  for (int64_t i = 0; i < n; ++i) {  // in order: with repeated indices and no accumulation, the last write stays
    const Shape pos = unravel(i, p.out);
    const int64_t o = index_source(op, p, x.shape(), in.lists[1], pos);
    const double val = v.get(broadcast_offset(pos, v.shape(), p.out));
    y.set(o, accumulate ? y.get(o) + val : val);
  }
  return {y};
}
// index_put (derivatives.yaml): self: accumulate ? grad : grad.index_put(indices, zeros_like(values));
// values: grad.index(indices), summed to the values' shape where they were broadcast.
Args d_index_put(DerivCtx& c) {
  Args r(4, kNone);
  const TensorMeta v = c.b.meta(c.args[2]);
  if (wants(c, 0))
    r[0] = c.args[3].b ? c.grads[0]
                       : call(c, "aten.index_put.default", {c.grads[0], c.args[1], zeros(c, v.shape, v.dtype), Arg::of_bool(false)});
  if (wants(c, 2)) r[2] = grad_for(c, 2, call(c, "aten.index.Tensor", {c.grads[0], c.args[1]}));
  return r;
}

// ---------------------------------------------------------------------------------------------
// index_select
// ---------------------------------------------------------------------------------------------

std::vector<TensorMeta> infer_index_select(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta &x = meta_of(g, a[0]), &idx = meta_of(g, a[2]);
  const int64_t d = wrap_dim(op, a[1].i, static_cast<int64_t>(x.shape.size()));
  if (!is_index_dtype(idx.dtype)) bad(op, "Expected dtype int32/int64 for index, got " + std::string(dtype_short(idx.dtype)));
  if (idx.shape.size() > 1) bad(op, "Index is supposed to be a vector");
  if (x.shape.empty()) {
    if (idx.numel() != 1) bad(op, "Index to scalar can have only 1 value, got " + std::to_string(idx.numel()) + " value(s)");
    return {like(x, x.dtype, {})};
  }
  Shape out = x.shape;
  out[d] = idx.numel();
  return {like(x, x.dtype, out)};
}
std::vector<Tensor> ref_index_select(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &x = in[0], &idx = in[2];
  const Shape xs = nonempty(x.shape());
  const int64_t d = wrap_dim(op, a[1].i, x.dim());
  Tensor y(outs[0].dtype, outs[0].shape);
  const Shape ys = nonempty(y.shape()), st = contiguous_strides(xs);
  if (idx.numel() != ys[d]) bad(op, "index has " + std::to_string(idx.numel()) + " elements for a result dimension of " + std::to_string(ys[d]));
  for (int64_t i = 0; i < y.numel(); ++i) {
    Shape p = unravel(i, ys);
    const int64_t j = static_cast<int64_t>(idx.get(p[d]));
    if (j < 0 || j >= xs[d]) out_of_bounds(op, j, d, xs[d]);  // negative indices are rejected, as PyTorch does
    p[d] = j;
    y.set(i, x.get(dot(p, st)));
  }
  return {y};
}
// torch._refs.index_select: x[(slice(None),) * dim + (index,)]. A 0-d index drops the dimension
// there: the result is viewed back to size 1 (PyTorch makes the index a vector first; a view of an
// index tensor inside the list would reach a library call in its buffer's shape, the list entries
// of extern calls not being reshaped as their tensor arguments are: reported).
Arg decomp_index_select(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape xs = b.meta(a[0]).shape;
  const bool scalar = xs.empty();
  const Arg x = scalar ? b.call("aten.view.default", {a[0], ints({1})}) : a[0];
  const int64_t d = scalar ? 0 : wrap_dim(op, a[1].i, static_cast<int64_t>(xs.size()));
  const Arg r = b.call("aten.index.Tensor", {x, at_dim(d, a[2])});
  const Shape want = infer_index_select(b.graph(), op, a)[0].shape;
  return b.meta(r).shape == want ? r : b.call("aten.view.default", {r, ints(want)});
}
// index_select_backward: zeros(self).index_add_(dim, index, grad), as an accumulating index_put.
Args d_index_select(DerivCtx& c) {
  if (!wants(c, 0)) return {kNone, kNone, kNone};
  const TensorMeta x = c.b.meta(c.args[0]);
  if (x.shape.empty()) return one(c.grads[0], 3);
  const int64_t d = wrap_dim(c.op, c.args[1].i, static_cast<int64_t>(x.shape.size()));
  Arg g = c.grads[0];
  if (c.b.meta(c.args[2]).shape.empty()) {  // a 0-d index: the value of the dimension it dropped
    Shape s = x.shape;
    s.erase(s.begin() + d);
    g = call(c, "aten.view.default", {g, ints(s)});
  }
  return one(call(c, "aten.index_put.default", {zeros(c, x.shape, x.dtype), at_dim(d, c.args[2]), g, Arg::of_bool(true)}), 3);
}

// ---------------------------------------------------------------------------------------------
// scatter, scatter_add, scatter_reduce
// ---------------------------------------------------------------------------------------------

// PyTorch's scatter_gather_shape_check: int64 (or int32, as gather takes and hands its backward)
// indices; index, self and src of one rank (0-d counting as 1-d); index no larger than src
// anywhere, nor than self outside `dim`.
void check_scatter(const OpDef& op, const TensorMeta& self, int64_t dim, const TensorMeta& index, const TensorMeta* src) {
  wrap_dim(op, dim, static_cast<int64_t>(self.shape.size()));
  if (index.dtype != DType::i64 && index.dtype != DType::i32)
    bad(op, "Expected dtype int64 for index, got " + std::string(dtype_short(index.dtype)));
  const Shape s = nonempty(self.shape), ix = nonempty(index.shape);
  if (ix.size() != s.size()) bad(op, "Index tensor must have the same number of dimensions as self tensor");
  if (src) {
    if (src->dtype != self.dtype)
      bad(op, "Expected self.dtype to be equal to src.dtype, got " + std::string(dtype_short(self.dtype)) + " and " +
                  std::string(dtype_short(src->dtype)));
    const Shape sr = nonempty(src->shape);
    if (sr.size() != ix.size()) bad(op, "Index tensor must have the same number of dimensions as src tensor");
  }
  const int64_t d = dim < 0 ? dim + static_cast<int64_t>(s.size()) : dim;
  for (size_t k = 0; k < ix.size(); ++k) {
    const bool too_big = (static_cast<int64_t>(k) != d && ix[k] > s[k]) || (src && ix[k] > nonempty(src->shape)[k]);
    if (too_big)
      bad(op, "Expected index " + shape_str(index.shape) + " to be smaller than self " + shape_str(self.shape) + " apart from dimension " +
                  std::to_string(d) + (src ? " and to be smaller size than src " + shape_str(src->shape) : std::string()));
  }
}
std::vector<TensorMeta> infer_scatter(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta &x = meta_of(g, a[0]), &idx = meta_of(g, a[2]);
  check_scatter(op, x, a[1].i, idx, a[3].is_node() ? &meta_of(g, a[3]) : nullptr);
  return {like(x, x.dtype, x.shape)};
}
// Calls f(offset in self, offset in src) for every element of index, in order, checking each index.
template <class F>
void for_each_scatter(const OpDef& op, const Shape& self, int64_t dim, const Tensor& index, const Shape& src, F f) {
  const Shape s = nonempty(self), ix = nonempty(index.shape()), sr = nonempty(src);
  const int64_t d = wrap_dim(op, dim, static_cast<int64_t>(self.size()));
  const Shape ss = contiguous_strides(s), srs = contiguous_strides(sr);
  for (int64_t i = 0; i < index.numel(); ++i) {
    Shape p = unravel(i, ix);
    const int64_t j = static_cast<int64_t>(index.get(i));
    if (j < 0 || j >= s[d]) out_of_bounds(op, j, d, s[d]);
    const int64_t from = dot(p, srs);
    p[d] = j;
    f(dot(p, ss), from);
  }
}
std::vector<Tensor> ref_scatter(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  Tensor y = copy_of(x, outs[0].dtype, x.shape());
  const bool add = op.base_name() == "scatter_add";
  const bool value = !a[3].is_node();
  const Shape src = value ? in[2].shape() : in[3].shape();
  for_each_scatter(op, x.shape(), a[1].i, in[2], src, [&](int64_t to, int64_t from) {
    const double v = value ? a[3].number() : in[3].get(from);
    y.set(to, add ? y.get(to) + v : v);
  });
  return {y};
}
// scatter.src: self: grad.scatter(dim, index, 0); src: grad.gather(dim, index).
Arg gather_grad(DerivCtx& c) {
  if (c.b.meta(c.args[2]).shape != c.b.meta(c.args[3]).shape)
    throw std::invalid_argument(c.op.name + ": the gradient of src is grad.gather(dim, index), which has index's shape " +
                                shape_str(c.b.meta(c.args[2]).shape) + ", not src's " + shape_str(c.b.meta(c.args[3]).shape) +
                                " (PyTorch refuses it too)");
  return call(c, "aten.gather.default", {c.grads[0], c.args[1], c.args[2]});
}
Args d_scatter(DerivCtx& c) {
  Args r(4, kNone);
  if (wants(c, 0)) r[0] = call(c, "aten.scatter.value", {c.grads[0], c.args[1], c.args[2], num(0)});
  if (wants(c, 3)) r[3] = gather_grad(c);
  return r;
}
// scatter_add: self: grad; src: grad.gather(dim, index).
Args d_scatter_add(DerivCtx& c) {
  Args r(4, kNone);
  if (wants(c, 0)) r[0] = c.grads[0];
  if (wants(c, 3)) r[3] = gather_grad(c);
  return r;
}

enum class Red { sum, prod, mean, amax, amin };
Red reduction_of(const OpDef& op, const Arg& a) {
  if (a.kind != Arg::Kind::string) bad(op, "reduce must be a string");
  if (a.s == "sum") return Red::sum;
  if (a.s == "prod") return Red::prod;
  if (a.s == "mean") return Red::mean;
  if (a.s == "amax") return Red::amax;
  if (a.s == "amin") return Red::amin;
  bad(op, "reduce argument must be either sum, prod, mean, amax or amin, got " + a.s);
}
std::vector<TensorMeta> infer_scatter_reduce(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  reduction_of(op, a[4]);
  return infer_scatter(g, op, a);
}
std::vector<Tensor> ref_scatter_reduce(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in,
                                       const std::vector<TensorMeta>& outs) {
  const Tensor &x = in[0], &src = in[3];
  const Red r = reduction_of(op, a[4]);
  const bool include_self = a[5].b;
  const DType dt = outs[0].dtype;
  const bool fl = dtype_is_float(dt);
  Tensor y = copy_of(x, dt, x.shape());
  std::vector<int64_t> count(static_cast<size_t>(y.numel()), include_self ? 1 : 0);
  std::vector<bool> touched(static_cast<size_t>(y.numel()), false);
  for_each_scatter(op, x.shape(), a[1].i, in[2], src.shape(), [&](int64_t to, int64_t from) {
    // Without self, the first value to land starts the reduction (the reduction's identity
    // combined with it: no int64 or bool stand-in for an infinity).
    const bool first = !include_self && !touched[to];
    touched[to] = true;
    ++count[to];
    const double cur = y.get(to), v = src.get(from);
    double res = cur;
    if (first) {
      y.set(to, v);
      return;
    }
    switch (r) {
      case Red::sum:
      case Red::mean: res = cur + v; break;
      case Red::prod: res = cur * v; break;
      case Red::amax: res = std::isnan(cur) || std::isnan(v) ? NAN : std::max(cur, v); break;
      case Red::amin: res = std::isnan(cur) || std::isnan(v) ? NAN : std::min(cur, v); break;
    }
    y.set(to, res);
  });
  if (r == Red::mean)
    for (int64_t i = 0; i < y.numel(); ++i) {
      const double n = static_cast<double>(std::max<int64_t>(count[i], 1));
      y.set(i, fl ? y.get(i) / n : std::floor(y.get(i) / n));
    }
  return {y};
}
// The deprecated scatter.reduce / scatter.value_reduce (reduce='add' | 'multiply'), as Inductor's
// scatter_ lowers them: scatter_reduce.two with 'sum' / 'prod' and include_self; a value is a
// tensor of index's shape filled with it (full_like(index, value) in self's dtype).
std::string scatter_mode(const OpDef& op, const Arg& r) {
  if (r.kind == Arg::Kind::string && r.s == "add") return "sum";
  if (r.kind == Arg::Kind::string && r.s == "multiply") return "prod";
  bad(op, "reduce argument must be either add or multiply, got " + (r.kind == Arg::Kind::string ? r.s : std::string("?")));
}
std::vector<TensorMeta> infer_scatter_old_reduce(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  scatter_mode(op, a[4]);
  return infer_scatter(g, op, a);
}
std::vector<Tensor> ref_scatter_old_reduce(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const bool add = scatter_mode(op, a[4]) == "sum";
  const Tensor& x = in[0];
  Tensor y = copy_of(x, outs[0].dtype, x.shape());
  const bool value = !a[3].is_node();
  for_each_scatter(op, x.shape(), a[1].i, in[2], value ? in[2].shape() : in[3].shape(), [&](int64_t to, int64_t from) {
    const double v = value ? a[3].number() : in[3].get(from);
    y.set(to, add ? y.get(to) + v : y.get(to) * v);
  });
  return {y};
}
Arg decomp_scatter_old_reduce(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Arg src = a[3].is_node() ? a[3] : full(b, b.meta(a[2]).shape, b.meta(a[0]).dtype, a[3].number());
  return b.call("aten.scatter_reduce.two", {a[0], a[1], a[2], src, Arg::of_string(scatter_mode(op, a[4]))},
                {{"include_self", Arg::of_bool(true)}});
}
// scatter_reduce_backward (torch/csrc/autograd/FunctionsManual.cpp), each reduction as PyTorch
// writes it; prod handles zeros in self and single zeros in src as PyTorch does.
Args d_scatter_reduce(DerivCtx& c) {
  GraphBuilder& b = c.b;
  const Arg &self = c.args[0], &dim = c.args[1], &index = c.args[2], &src = c.args[3], &g = c.grads[0];
  const Red r = reduction_of(c.op, c.args[4]);
  const bool include_self = c.args[5].b;
  const TensorMeta xm = b.meta(self), sm = b.meta(src);
  if (wants(c, 3) && b.meta(index).shape != sm.shape)
    throw std::invalid_argument(c.op.name + ": the gradient of src needs index and src of one shape");
  auto gather = [&](const Arg& t) { return call(c, "aten.gather.default", {t, dim, index}); };
  auto where = [&](const Arg& m, const Arg& a, const Arg& o) { return call(c, "aten.where.self", {m, a, o}); };
  auto eq0 = [&](const Arg& t, double v) { return call(c, "aten.eq.Scalar", {t, num(v)}); };
  auto as_float = [&](const Arg& m, const Shape& s) { return where(m, full(b, s, xm.dtype, 1), full(b, s, xm.dtype, 0)); };
  auto reduce = [&](const Arg& s, const Arg& o) {
    return call(c, "aten.scatter_reduce.two", {s, dim, index, o, c.args[4]}, {{"include_self", Arg::of_bool(include_self)}});
  };
  Arg gs, gsrc;
  switch (r) {
    case Red::sum:
      gs = g;
      gsrc = gather(g);
      break;
    case Red::mean: {
      Arg n = call(c, "aten.scatter_add.default", {full(b, xm.shape, xm.dtype, include_self ? 1 : 0), dim, index, full(b, sm.shape, xm.dtype, 1)});
      n = where(eq0(n, 0), num(1), n);
      gs = call(c, "aten.div.Tensor", {g, n});
      gsrc = call(c, "aten.div.Tensor", {gather(g), gather(n)});
      break;
    }
    case Red::prod: {
      const Arg result = c.out(0);
      const Arg masked_self = where(eq0(self, 0), num(1), self);
      gs = call(c, "aten.div.Tensor", {call(c, "aten.mul.Tensor", {g, reduce(masked_self, src)}), masked_self});
      const Arg src_zero = eq0(src, 0);
      const Arg zeros_hit = gather(call(c, "aten.scatter_add.default", {full(b, xm.shape, xm.dtype, 0), dim, index, as_float(src_zero, sm.shape)}));
      const Arg single = call(c, "aten.logical_and.default", {src_zero, eq0(zeros_hit, 1)});
      const Arg masked_src_result = reduce(self, where(single, num(1), src));
      gsrc = where(single, gather(call(c, "aten.mul.Tensor", {g, masked_src_result})),
                   call(c, "aten.div.Tensor", {gather(call(c, "aten.mul.Tensor", {g, result})), where(src_zero, num(1), src)}));
      break;
    }
    case Red::amax:
    case Red::amin: {
      const Arg result = c.out(0);
      const Arg value = gather(result);
      const Arg self_is = call(c, "aten.eq.Tensor", {self, result}), src_is = call(c, "aten.eq.Tensor", {src, value});
      const Arg n = call(c, "aten.scatter_add.default", {as_float(self_is, xm.shape), dim, index, as_float(src_is, sm.shape)});
      const Arg distributed = call(c, "aten.div.Tensor", {g, n});
      gs = where(self_is, distributed, num(0));
      gsrc = where(src_is, gather(distributed), num(0));
      break;
    }
  }
  if (!include_self) gs = call(c, "aten.scatter.value", {gs, dim, index, num(0)});
  Args res(6, kNone);
  if (wants(c, 0)) res[0] = gs;
  if (wants(c, 3)) res[3] = gsrc;
  return res;
}

// ---------------------------------------------------------------------------------------------
// select_scatter, slice_scatter
// ---------------------------------------------------------------------------------------------

// A mask along dimension `dim` of a rank-`rank` tensor, shaped [1, .., n, .., 1]: on at the
// positions `on` picks. PyTorch's decompositions compare arange(n) with the arguments; the result
// depends on shapes and arguments only, so it is made here, a constant. (Not through eq.Scalar
// on an int64 arange: the loop lowering gives a comparison of integer tensors with a number the
// result's type, bool, so `iota == 3` compiled as `iota == true`; reported, and avoided here.)
template <class F>
Arg mask_at(GraphBuilder& b, int64_t n, int64_t dim, size_t rank, F on) {
  Shape s(rank, 1);
  s[dim] = n;
  Tensor t(DType::b8, s);
  for (int64_t i = 0; i < n; ++i) t.set(i, on(i) ? 1.0 : 0.0);
  return b.constant("mask", t);
}

int64_t select_index(const OpDef& op, const Shape& x, int64_t d, int64_t i) {
  const int64_t n = x[d];
  if (i < -n || i >= n) bad(op, "index " + std::to_string(i) + " is out of bounds for dimension " + std::to_string(d) + " with size " + std::to_string(n));
  return i < 0 ? i + n : i;
}
std::vector<TensorMeta> infer_select_scatter(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta &x = meta_of(g, a[0]), &s = meta_of(g, a[1]);
  if (x.shape.empty()) bad(op, "select() cannot be applied to a 0-dim tensor.");
  const int64_t d = wrap_dim(op, a[2].i, static_cast<int64_t>(x.shape.size()));
  select_index(op, x.shape, d, a[3].i);
  Shape want = x.shape;
  want.erase(want.begin() + d);
  if (s.shape != want) bad(op, "expected src to have a size equal to the slice of self. src size = " + shape_str(s.shape) + ", slice size = " + shape_str(want));
  if (s.dtype != x.dtype) bad(op, "expected src of self's dtype " + std::string(dtype_short(x.dtype)) + ", got " + std::string(dtype_short(s.dtype)));
  return {like(x, x.dtype, x.shape)};
}
std::vector<Tensor> ref_select_scatter(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &x = in[0], &s = in[1];
  const int64_t d = wrap_dim(op, a[2].i, x.dim()), j = select_index(op, x.shape(), d, a[3].i);
  Tensor y = copy_of(x, outs[0].dtype, x.shape());
  const Shape st = contiguous_strides(x.shape());
  for (int64_t i = 0; i < s.numel(); ++i) {
    Shape p = unravel(i, s.shape());
    p.insert(p.begin() + d, j);
    y.set(dot(p, st), s.get(i));
  }
  return {y};
}
// torch._refs.select_scatter: where(arange(n).view(mask_shape) == index, src.unsqueeze(dim), self).
Arg decomp_select_scatter(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape x = b.meta(a[0]).shape;
  const int64_t d = wrap_dim(op, a[2].i, static_cast<int64_t>(x.size())), j = select_index(op, x, d, a[3].i);
  const Arg mask = mask_at(b, x[d], d, x.size(), [j](int64_t i) { return i == j; });
  return b.call("aten.where.self", {mask, b.call("aten.unsqueeze.default", {a[1], Arg::of_int(d)}), a[0]});
}
// self: grad.select_scatter(zeros_like(src), dim, index); src: grad.select(dim, index).
Args d_select_scatter(DerivCtx& c) {
  Args r(4, kNone);
  const TensorMeta s = c.b.meta(c.args[1]);
  if (wants(c, 0)) r[0] = call(c, "aten.select_scatter.default", {c.grads[0], zeros(c, s.shape, s.dtype), c.args[2], c.args[3]});
  if (wants(c, 1)) r[1] = call(c, "aten.select.int", {c.grads[0], c.args[2], c.args[3]});
  return r;
}

struct SliceSpec { int64_t dim, start, end, step, len; };
// As aten.slice normalizes its arguments: negative bounds wrap, then clamp into [0, n].
SliceSpec slice_spec(const OpDef& op, const Shape& x, const std::vector<Arg>& a) {
  if (x.empty()) bad(op, "slice() cannot be applied to a 0-dim tensor.");
  const int64_t d = wrap_dim(op, a[2].i, static_cast<int64_t>(x.size())), n = x[d];
  auto clampi = [n](int64_t v) { if (v < 0) v += n; return std::min(std::max<int64_t>(v, 0), n); };
  const int64_t start = a[3].is_none() ? 0 : clampi(a[3].i);
  const int64_t end = std::max(start, a[4].is_none() ? n : clampi(a[4].i));
  const int64_t step = a[5].i;
  if (step <= 0) bad(op, "slice step must be positive");
  return {d, start, end, step, (end - start + step - 1) / step};
}
std::vector<TensorMeta> infer_slice_scatter(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta &x = meta_of(g, a[0]), &s = meta_of(g, a[1]);
  const SliceSpec sp = slice_spec(op, x.shape, a);
  Shape want = x.shape;
  want[sp.dim] = sp.len;
  if (s.shape != want) bad(op, "expected src to have a size equal to the slice of self. src size = " + shape_str(s.shape) + ", slice size = " + shape_str(want));
  if (s.dtype != x.dtype) bad(op, "expected src of self's dtype " + std::string(dtype_short(x.dtype)) + ", got " + std::string(dtype_short(s.dtype)));
  return {like(x, x.dtype, x.shape)};
}
std::vector<Tensor> ref_slice_scatter(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &x = in[0], &s = in[1];
  const SliceSpec sp = slice_spec(op, x.shape(), a);
  Tensor y = copy_of(x, outs[0].dtype, x.shape());
  const Shape st = contiguous_strides(x.shape());
  for (int64_t i = 0; i < s.numel(); ++i) {
    Shape p = unravel(i, s.shape());
    p[sp.dim] = sp.start + p[sp.dim] * sp.step;
    y.set(dot(p, st), s.get(i));
  }
  return {y};
}
// torch._decomp's slice_scatter: where(mask, src[..., (i - start) // step, ...], self), the mask
// (start <= i < end, (i - start) % step == 0) from positions along dim; the positions src is read
// at are clamped into range where the mask is off (PyTorch reads them unchecked, _unsafe_index).
Arg decomp_slice_scatter(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape x = b.meta(a[0]).shape;
  const SliceSpec sp = slice_spec(op, x, a);
  const int64_t n = x[sp.dim];
  if (sp.start == 0 && sp.end == n && sp.step == 1) return b.call("aten.clone.default", {a[1]});
  if (sp.len == 0) return b.call("aten.clone.default", {a[0]});
  const Arg mask = mask_at(b, n, sp.dim, x.size(), [&sp](int64_t i) { return i >= sp.start && i < sp.end && (i - sp.start) % sp.step == 0; });
  Tensor at(DType::i64, {n});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = i < sp.start ? 0 : (i - sp.start) / sp.step;
    at.set(i, static_cast<double>(std::min(k, sp.len - 1)));
  }
  const Arg src = b.call("aten.index.Tensor", {a[1], at_dim(sp.dim, b.constant("slice_positions", at))});
  return b.call("aten.where.self", {mask, src, a[0]});
}
// self: grad.slice_scatter(zeros_like(src), dim, start, end, step); src: grad.slice(dim, start, end, step).
Args d_slice_scatter(DerivCtx& c) {
  Args r(6, kNone);
  const TensorMeta s = c.b.meta(c.args[1]);
  if (wants(c, 0))
    r[0] = call(c, "aten.slice_scatter.default", {c.grads[0], zeros(c, s.shape, s.dtype), c.args[2], c.args[3], c.args[4], c.args[5]});
  if (wants(c, 1)) r[1] = call(c, "aten.slice.Tensor", {c.grads[0], c.args[2], c.args[3], c.args[4], c.args[5]});
  return r;
}

// ---------------------------------------------------------------------------------------------
// masked_scatter
// ---------------------------------------------------------------------------------------------

std::vector<TensorMeta> infer_masked_scatter(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta &x = meta_of(g, a[0]), &m = meta_of(g, a[1]), &s = meta_of(g, a[2]);
  if (m.dtype != DType::b8) bad(op, "masked_scatter_ only supports boolean masks, but got mask with dtype " + std::string(dtype_short(m.dtype)));
  if (s.dtype != x.dtype)
    bad(op, "expected self and source to have same dtypes but got " + std::string(dtype_short(x.dtype)) + " and " + std::string(dtype_short(s.dtype)));
  return {like(x, x.dtype, broadcast_shapes(x.shape, m.shape))};
}
// Row-major over the (broadcast) result: the k-th true mask position takes source's k-th element.
std::vector<Tensor> ref_masked_scatter(const OpDef& op, const std::vector<Arg>&, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &x = in[0], &m = in[1], &s = in[2];
  Tensor y(outs[0].dtype, outs[0].shape);
  int64_t k = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    const Shape p = unravel(i, y.shape());
    if (m.get(broadcast_offset(p, m.shape(), y.shape())) != 0) {
      if (k >= s.numel()) bad(op, "Number of elements of source < number of ones in mask");
      y.set(i, s.get(k++));
    } else {
      y.set(i, x.get(broadcast_offset(p, x.shape(), y.shape())));
    }
  }
  return {y};
}
std::vector<TensorMeta> infer_masked_scatter_backward(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta &gm = meta_of(g, a[0]), &m = meta_of(g, a[1]);
  if (m.dtype != DType::b8) bad(op, "mask must be boolean");
  broadcast_shapes(gm.shape, m.shape);
  return {like(gm, gm.dtype, a[2].ints())};
}
// masked_scatter_backward: grad.masked_select(mask), padded with zeros to the source's size.
std::vector<Tensor> ref_masked_scatter_backward(const OpDef&, const std::vector<Arg>&, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &gr = in[0], &m = in[1];
  Tensor y(outs[0].dtype, outs[0].shape);
  const Shape bs = broadcast_shapes(gr.shape(), m.shape());
  int64_t k = 0;
  for (int64_t i = 0; i < numel_of(bs) && k < y.numel(); ++i) {
    const Shape p = unravel(i, bs);
    if (m.get(broadcast_offset(p, m.shape(), bs)) != 0) y.set(k++, gr.get(broadcast_offset(p, gr.shape(), bs)));
  }
  return {y};
}
// self: grad.masked_fill(mask, 0); source: masked_scatter_backward(grad, mask, source.sizes()).
Args d_masked_scatter(DerivCtx& c) {
  Args r(3, kNone);
  if (wants(c, 0)) r[0] = grad_for(c, 0, call(c, "aten.where.self", {c.args[1], num(0), c.grads[0]}));
  if (wants(c, 2))
    r[2] = call(c, "aten.masked_scatter_backward.default", {c.grads[0], c.args[1], ints(shape_of(c, c.args[2]))});
  return r;
}

// ---------------------------------------------------------------------------------------------
// embedding_dense_backward, _embedding_bag
// ---------------------------------------------------------------------------------------------

std::vector<TensorMeta> infer_embedding_dense_backward(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta &gr = meta_of(g, a[0]), &idx = meta_of(g, a[1]);
  if (!is_index_dtype(idx.dtype)) bad(op, "indices must be int32 or int64, got " + std::string(dtype_short(idx.dtype)));
  if (!dtype_is_float(gr.dtype)) bad(op, "grad_output must be floating point");
  if (a[2].i < 0) bad(op, "num_weights must be non-negative");
  if (gr.shape.size() < idx.shape.size() || !std::equal(idx.shape.begin(), idx.shape.end(), gr.shape.begin()))
    bad(op, "grad_output " + shape_str(gr.shape) + " must start with the indices' shape " + shape_str(idx.shape));
  Shape out = {a[2].i};
  out.insert(out.end(), gr.shape.begin() + static_cast<long>(idx.shape.size()), gr.shape.end());
  return {like(gr, gr.dtype, out)};
}
std::vector<Tensor> ref_embedding_dense_backward(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in,
                                                 const std::vector<TensorMeta>& outs) {
  const Tensor &gr = in[0], &idx = in[1];
  const int64_t V = a[2].i, pad = a[3].i;
  Tensor y(outs[0].dtype, outs[0].shape);
  const int64_t D = V == 0 ? 0 : y.numel() / V;
  std::vector<int64_t> counts(static_cast<size_t>(V), 0);
  for (int64_t i = 0; i < idx.numel(); ++i) {
    const int64_t r = static_cast<int64_t>(idx.get(i));
    if (r < 0 || r >= V) out_of_bounds(op, r, 0, V);
    ++counts[r];
  }
  for (int64_t i = 0; i < idx.numel(); ++i) {
    const int64_t r = static_cast<int64_t>(idx.get(i));
    if (r == pad) continue;
    const double scale = a[4].b ? 1.0 / static_cast<double>(counts[r]) : 1.0;
    for (int64_t j = 0; j < D; ++j) y.set(r * D + j, y.get(r * D + j) + gr.get(i * D + j) * scale);
  }
  return {y};
}
// torch._decomp's embedding_dense_backward: rows of indices equal to padding_idx zeroed, each row
// divided by its index's count under scale_grad_by_freq, then summed into the rows they index.
Arg decomp_embedding_dense_backward(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const TensorMeta gm = b.meta(a[0]), im = b.meta(a[1]);
  const int64_t V = a[2].i;
  Arg grad = a[0];
  Arg idx_list;
  idx_list.kind = Arg::Kind::list;
  idx_list.list = {a[1]};
  if (a[4].b) {
    const Arg counts = b.call("aten.index_put.default", {full(b, {V}, im.dtype, 0), idx_list, full(b, im.shape, im.dtype, 1), Arg::of_bool(true)});
    Arg scale = b.call("aten.index.Tensor", {counts, idx_list});
    for (size_t k = im.shape.size(); k < gm.shape.size(); ++k) scale = b.call("aten.unsqueeze.default", {scale, Arg::of_int(-1)});
    grad = b.call("aten.div.Tensor", {grad, scale});
  }
  Tensor pad(im.dtype, {});  // eq.Tensor against a 0-d constant, not eq.Scalar: see mask_at
  pad.set(0, static_cast<double>(a[3].i));
  Arg mask = b.call("aten.eq.Tensor", {a[1], b.constant("padding_idx", pad)});
  for (size_t k = im.shape.size(); k < gm.shape.size(); ++k) mask = b.call("aten.unsqueeze.default", {mask, Arg::of_int(-1)});
  grad = b.call("aten.where.self", {mask, Arg::of_real(0), grad});
  Shape ws = {V};
  ws.insert(ws.end(), gm.shape.begin() + static_cast<long>(im.shape.size()), gm.shape.end());
  return b.call("aten.index_put.default", {full(b, ws, gm.dtype, 0), idx_list, grad, Arg::of_bool(true)});
}

// _embedding_bag as PyTorch's CPU kernel (EmbeddingBag.cpp) computes it, with its 4 outputs:
// output [bags, D]; offset2bag [N], the bag of each index ([0] on the fast path: mode sum, float32
// weight, no padding_idx); bag_size [bags], the non-padding indices of each bag (zeros in mode
// sum); max_indices: mode max [bags, D], the row each maximum came from, else bag_size's copy.
struct BagSpec { int64_t mode, bags, pad; bool fast_sum; };
BagSpec bag_spec(const OpDef& op, const TensorMeta& w, const TensorMeta& idx, const TensorMeta& off, const std::vector<Arg>& a) {
  if (w.shape.size() != 2) bad(op, "weight must be 2-D");
  if (!dtype_is_float(w.dtype)) bad(op, "weight must be floating point");
  if (idx.shape.size() != 1) bad(op, "input has to be a 1D Tensor (export flattens 2-D input), got dimension " + std::to_string(idx.shape.size()));
  if (off.shape.size() != 1) bad(op, "offsets has to be a 1D Tensor, but got Tensor of dimension " + std::to_string(off.shape.size()));
  if (!is_index_dtype(idx.dtype) || !is_index_dtype(off.dtype)) bad(op, "indices and offsets must be int32 or int64");
  const int64_t mode = a[4].i;
  if (mode < 0 || mode > 2) bad(op, "mode must be 0 (sum), 1 (mean) or 2 (max), got " + std::to_string(mode));
  const bool include_last = a[7].b;
  if (include_last && off.shape[0] < 1) bad(op, "include_last_offset: number of offset should be at least 1");
  if (a[6].is_node() && mode != 0) bad(op, "embedding_bag: per_sample_weights only supported with mode='sum'");
  const int64_t pad = a[8].i;
  return {mode, off.shape[0] - (include_last ? 1 : 0), pad, mode == 0 && w.dtype == DType::f32 && pad < 0};
}
std::vector<TensorMeta> infer_embedding_bag(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta &w = meta_of(g, a[0]), &idx = meta_of(g, a[1]), &off = meta_of(g, a[2]);
  const BagSpec s = bag_spec(op, w, idx, off, a);
  if (a[6].is_node()) {
    const TensorMeta& psw = meta_of(g, a[6]);
    if (psw.dtype != w.dtype || psw.shape != idx.shape) bad(op, "per_sample_weights must be 1-D, of the weight's dtype, one per index");
  }
  const DType it = promote(idx.dtype, off.dtype);
  return {like(w, w.dtype, {s.bags, w.shape[1]}), like(w, it, {s.fast_sum ? 0 : idx.shape[0]}), like(w, it, {s.bags}),
          like(w, it, s.mode == 2 ? Shape{s.bags, w.shape[1]} : Shape{s.bags})};
}
std::vector<Tensor> ref_embedding_bag(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &w = in[0], &idx = in[1], &off = in[2];
  const BagSpec s = bag_spec(op, TensorMeta::contiguous(w.dtype(), w.shape()),
                             TensorMeta::contiguous(idx.dtype(), idx.shape()), TensorMeta::contiguous(off.dtype(), off.shape()), a);
  const int64_t N = idx.numel(), V = w.shape()[0], D = w.shape()[1];
  Tensor out(outs[0].dtype, outs[0].shape), o2b(outs[1].dtype, outs[1].shape), size(outs[2].dtype, outs[2].shape),
      maxi(outs[3].dtype, outs[3].shape);
  if (off.numel() > 0) {
    if (off.get(0) != 0) bad(op, "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. However, got " +
                                     std::to_string(static_cast<int64_t>(off.get(0))));
    if (off.get(off.numel() - 1) > N)
      bad(op, "offsets[-1] can not be greater than input's length " + std::to_string(N) + " but got offsets[-1] of " +
                  std::to_string(static_cast<int64_t>(off.get(off.numel() - 1))));
  }
  for (int64_t b = 0; b < s.bags; ++b) {
    const int64_t lo = static_cast<int64_t>(off.get(b));
    const int64_t hi = b + 1 < off.numel() ? static_cast<int64_t>(off.get(b + 1)) : N;
    if (lo > hi) bad(op, "offsets must be non-decreasing");
    int64_t n = 0;
    bool first = true;
    for (int64_t k = lo; k < hi; ++k) {
      const int64_t r = static_cast<int64_t>(idx.get(k));
      if (r < 0 || r >= V) bad(op, "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be " + std::to_string(r));
      if (!s.fast_sum) o2b.set(k, static_cast<double>(b));
      if (r == s.pad) continue;
      ++n;
      const double scale = a[6].is_node() ? in[6].get(k) : 1.0;
      for (int64_t j = 0; j < D; ++j) {
        const double v = w.get(r * D + j), cur = out.get(b * D + j);
        if (s.mode != 2) {
          out.set(b * D + j, cur + v * scale);
        } else if (first || v > cur) {
          out.set(b * D + j, v);
          maxi.set(b * D + j, static_cast<double>(r));
        }
      }
      first = false;
    }
    if (s.mode == 1 && n > 0)
      for (int64_t j = 0; j < D; ++j) out.set(b * D + j, out.get(b * D + j) / static_cast<double>(n));
    size.set(b, s.mode == 0 ? 0.0 : static_cast<double>(n));
    if (s.mode != 2) maxi.set(b, size.get(b));
  }
  return {out, o2b, size, maxi};
}

// ---------------------------------------------------------------------------------------------
// sort, topk, nonzero
// ---------------------------------------------------------------------------------------------

// The lines along `dim` of a tensor: (outer, n, inner), element (o, j, i) at (o * n + j) * inner + i.
struct Lines { int64_t outer = 1, n = 1, inner = 1; };
Lines lines_of(const Shape& s, int64_t d) {
  Lines l;
  if (s.empty()) return l;
  for (int64_t k = 0; k < static_cast<int64_t>(s.size()); ++k) (k < d ? l.outer : k > d ? l.inner : l.n) *= s[k];
  return l;
}
// NaN counts as larger than every number, as PyTorch's sort and topk order it.
bool before_in(bool descending, double x, double y) {
  if (descending) return (std::isnan(x) && !std::isnan(y)) || x > y;
  return (!std::isnan(x) && std::isnan(y)) || x < y;
}
// Sorts each line (stably: equal values keep their order) and keeps its first k.
void sort_lines(const Tensor& x, int64_t d, bool descending, int64_t k, Tensor& vals, Tensor& idx) {
  const Lines in = lines_of(x.shape(), d);
  std::vector<int64_t> order(static_cast<size_t>(in.n));
  for (int64_t o = 0; o < in.outer; ++o)
    for (int64_t i = 0; i < in.inner; ++i) {
      auto at = [&](int64_t j) { return x.get((o * in.n + j) * in.inner + i); };
      std::iota(order.begin(), order.end(), int64_t(0));
      std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) { return before_in(descending, at(p), at(q)); });
      for (int64_t j = 0; j < k; ++j) {
        const int64_t to = (o * k + j) * in.inner + i;
        vals.set(to, at(order[j]));
        idx.set(to, static_cast<double>(order[j]));
      }
    }
}
std::vector<TensorMeta> infer_sort(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  wrap_dim(op, a[1].i, static_cast<int64_t>(x.shape.size()));
  return {like(x, x.dtype, x.shape), like(x, DType::i64, x.shape)};
}
std::vector<Tensor> ref_sort(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  const int64_t d = wrap_dim(op, a[1].i, x.dim());
  Tensor v(outs[0].dtype, outs[0].shape), i(outs[1].dtype, outs[1].shape);
  sort_lines(x, d, a[2].b, lines_of(x.shape(), d).n, v, i);
  return {v, i};
}
// sort.stable(self, *, stable, dim, descending): our sort is stable whatever `stable` says (PyTorch's
// CPU sort is too), so it is sort.default: the same library kernel, by decomposition.
std::vector<TensorMeta> infer_sort_stable(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  wrap_dim(op, a[2].i, static_cast<int64_t>(x.shape.size()));
  return {like(x, x.dtype, x.shape), like(x, DType::i64, x.shape)};
}
std::vector<Tensor> ref_sort_stable(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  const int64_t d = wrap_dim(op, a[2].i, x.dim());
  Tensor v(outs[0].dtype, outs[0].shape), i(outs[1].dtype, outs[1].shape);
  sort_lines(x, d, a[3].b, lines_of(x.shape(), d).n, v, i);
  return {v, i};
}
std::vector<Arg> decomp_sort_stable(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Arg s = b.call("aten.sort.default", {a[0], a[2], a[3]});
  return {b.get(s, 0), b.get(s, 1)};
}
std::vector<TensorMeta> infer_topk(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  const int64_t d = wrap_dim(op, a[2].i, static_cast<int64_t>(x.shape.size()));
  const int64_t n = x.shape.empty() ? 1 : x.shape[d];
  if (a[1].i < 0 || a[1].i > n) bad(op, "selected index k out of range (k = " + std::to_string(a[1].i) + ", size " + std::to_string(n) + ")");
  Shape out = x.shape;
  if (!out.empty()) out[d] = a[1].i;
  return {like(x, x.dtype, out), like(x, DType::i64, out)};
}
// The k largest (or smallest) of each line, chosen as PyTorch's CPU kernel (topk_impl_loop)
// chooses them, so that ties give its indices: (value, position) pairs, std::partial_sort where
// k * 64 <= n, else std::nth_element to k - 1 and, if sorted, std::sort of the first k - 1.
std::vector<Tensor> ref_topk(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  const int64_t d = wrap_dim(op, a[2].i, x.dim());
  const int64_t k = a[1].i;
  const bool largest = a[3].b, sorted = a[4].b;
  Tensor v(outs[0].dtype, outs[0].shape), ix(outs[1].dtype, outs[1].shape);
  if (k == 0) return {v, ix};
  const Lines l = lines_of(x.shape(), d);
  using Elem = std::pair<double, int64_t>;
  auto comp = [largest](const Elem& p, const Elem& q) { return before_in(largest, p.first, q.first); };
  std::vector<Elem> queue(static_cast<size_t>(l.n));
  for (int64_t o = 0; o < l.outer; ++o)
    for (int64_t i = 0; i < l.inner; ++i) {
      for (int64_t j = 0; j < l.n; ++j) queue[static_cast<size_t>(j)] = {x.get((o * l.n + j) * l.inner + i), j};
      if (k * 64 <= l.n) {
        std::partial_sort(queue.begin(), queue.begin() + k, queue.end(), comp);
      } else {
        std::nth_element(queue.begin(), queue.begin() + k - 1, queue.end(), comp);
        if (sorted) std::sort(queue.begin(), queue.begin() + k - 1, comp);
      }
      for (int64_t j = 0; j < k; ++j) {
        const int64_t to = (o * k + j) * l.inner + i;
        v.set(to, queue[static_cast<size_t>(j)].first);
        ix.set(to, static_cast<double>(queue[static_cast<size_t>(j)].second));
      }
    }
  return {v, ix};
}
// sort, topk (value_selecting_reduction_backward): zeros(self).scatter(dim, indices, grad).
Args d_value_selecting(DerivCtx& c) {
  Args r(c.op.params.size(), kNone);
  if (!wants(c, 0) || c.grads[0].is_none()) return r;
  const TensorMeta x = c.b.meta(c.args[0]);
  const Arg dim = c.op.base_name() == "topk" ? c.args[2] : c.args[1];
  r[0] = call(c, "aten.scatter.src", {zeros(c, x.shape, x.dtype), dim, c.out(1), c.grads[0]});
  return r;
}

// nonzero's result has one row per nonzero element: a size the input's values decide (PyTorch
// gives it an unbacked symbol, u0). Shapes in this IR are numbers, so no node can hold it; the
// reference kernel stands ready for when sizes can be symbols.
std::vector<TensorMeta> infer_nonzero(const Graph&, const OpDef& op, const std::vector<Arg>&) {
  bad(op, "the number of rows of its result depends on the input's values (a data-dependent size, u0 in PyTorch's graphs); "
          "this IR's shapes are static");
}
std::vector<Tensor> ref_nonzero(const OpDef&, const std::vector<Arg>&, const RefInputs& in, const std::vector<TensorMeta>&) {
  const Tensor& x = in[0];
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < x.numel(); ++i)
    if (x.get(i) != 0) hits.push_back(i);
  Tensor y(DType::i64, {static_cast<int64_t>(hits.size()), x.dim()});
  for (size_t r = 0; r < hits.size(); ++r) {
    const Shape p = unravel(hits[r], x.shape());
    for (int64_t d = 0; d < x.dim(); ++d) y.set(static_cast<int64_t>(r) * x.dim() + d, static_cast<double>(p[d]));
  }
  return {y};
}

}  // namespace

void add_indexing_ops(std::vector<OpDef>& t) {
  const std::vector<OpDef> ops = {
      by_parts(ext("aten.index.Tensor", "index.Tensor(Tensor self, Tensor?[] indices) -> Tensor", kCore, infer_index, ref_index, nullptr, d_index)),
      by_parts(ext("aten.index_put.default", "index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor", kCore,
                   infer_index_put, ref_index_put, nullptr, d_index_put)),
      by_parts(comp("aten.index_select.default", "index_select(Tensor self, int dim, Tensor index) -> Tensor", kCore, infer_index_select,
                    ref_index_select, single<decomp_index_select>, d_index_select)),
      by_parts(ext("aten.scatter.src", "scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor", kCore, infer_scatter, ref_scatter,
                   nullptr, d_scatter)),
      by_parts(ext("aten.scatter.value", "scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor", kCore, infer_scatter,
                   ref_scatter, nullptr, d_scatter)),
      by_parts(ext("aten.scatter_add.default", "scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor", kCore, infer_scatter,
                   ref_scatter, nullptr, d_scatter_add)),
      ext("aten.scatter_reduce.two",
          "scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> Tensor", kCore,
          infer_scatter_reduce, ref_scatter_reduce, nullptr, d_scatter_reduce),
      comp("aten.scatter.reduce", "scatter.reduce(Tensor self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor", kAten,
           infer_scatter_old_reduce, ref_scatter_old_reduce, single<decomp_scatter_old_reduce>),
      comp("aten.scatter.value_reduce",
           "scatter.value_reduce(Tensor self, int dim, Tensor index, Scalar value, *, str reduce) -> Tensor", kAten,
           infer_scatter_old_reduce, ref_scatter_old_reduce, single<decomp_scatter_old_reduce>),
      by_parts(comp("aten.select_scatter.default", "select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor", kCore,
                    infer_select_scatter, ref_select_scatter, single<decomp_select_scatter>, d_select_scatter)),
      by_parts(comp("aten.slice_scatter.default",
                    "slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor", kCore,
                    infer_slice_scatter, ref_slice_scatter, single<decomp_slice_scatter>, d_slice_scatter)),
      by_parts(ext("aten.masked_scatter.default", "masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor", kCore, infer_masked_scatter,
                   ref_masked_scatter, nullptr, d_masked_scatter)),
      by_parts(ext("aten.masked_scatter_backward.default", "masked_scatter_backward(Tensor grad_output, Tensor mask, SymInt[] sizes) -> Tensor",
                   kCore, infer_masked_scatter_backward, ref_masked_scatter_backward)),
      comp("aten.embedding_dense_backward.default",
           "embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, SymInt padding_idx, bool scale_grad_by_freq) -> Tensor",
           kCore, infer_embedding_dense_backward, ref_embedding_dense_backward, single<decomp_embedding_dense_backward>),
      ext("aten._embedding_bag.default",
          "_embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq=False, int mode=0, bool sparse=False, "
          "Tensor? per_sample_weights=None, bool include_last_offset=False, int padding_idx=-1) -> (Tensor, Tensor, Tensor, Tensor)",
          kCore, infer_embedding_bag, ref_embedding_bag),
      ext("aten.sort.default", "sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)", kCore, infer_sort,
          ref_sort, nullptr, d_value_selecting),
      comp("aten.sort.stable",
           "sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)", kAten,
           infer_sort_stable, ref_sort_stable, decomp_sort_stable),
      ext("aten.topk.default",
          "topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)", kCore,
          infer_topk, ref_topk, nullptr, d_value_selecting),
      ext("aten.nonzero.default", "nonzero(Tensor self) -> Tensor", kCore, infer_nonzero, ref_nonzero),
  };
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
