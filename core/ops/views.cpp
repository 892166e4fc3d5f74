// Views and the ops that only reshape or alias: aten view, permute, expand, slice, select and
// the prims they decompose into (reshape, transpose, slice, split_dim, collapse_view,
// broadcast_in_dim), each with a shape rule and an index rule (the input position an output
// position reads), which give its reference kernel and its lowering; the ATen ops that decompose
// into them (reshape, flatten, squeeze, t, ...); and the identities (clone, detach, alias,
// dropout in eval mode). Multi-tensor shape ops (split, cat) are in shape_ops.cpp.
#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "ops/rule_helpers.h"

namespace ls {
namespace {

using namespace rules;

// Resolves one -1 in a view's size from the element count.
Shape resolve_size(const OpDef& op, Shape size, int64_t numel) {
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < size.size(); ++i) {
    if (size[i] == -1) {
      if (infer >= 0) bad(op, "only one dimension can be -1");
      infer = static_cast<int64_t>(i);
    } else {
      if (size[i] < 0) bad(op, "negative size " + std::to_string(size[i]));
      if (__builtin_mul_overflow(known, size[i], &known)) bad(op, "shape " + shape_str(size) + " is too large");
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel % known) bad(op, "cannot infer -1 in " + shape_str(size) + " for " + std::to_string(numel) + " elements");
    size[infer] = numel / known;
  } else if (known != numel) {
    bad(op, "shape " + shape_str(size) + " is invalid for " + std::to_string(numel) + " elements");
  }
  return size;
}

// ---------------------------------------------------------------------------------------------
// Views: a shape rule and an index rule (output position -> input position).
// ---------------------------------------------------------------------------------------------

std::vector<TensorMeta> infer_view(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& in = meta_of(g, a[0]);
  return {like(in, in.dtype, resolve_size(op, a[1].ints(), in.numel()))};
}
std::vector<Expr> view_view(const Graph& g, const std::vector<Arg>& a, const std::vector<Expr>& out) {
  const TensorMeta& in = meta_of(g, a[0]);
  Shape out_shape = a[1].ints();
  int64_t known = 1;
  for (int64_t d : out_shape) known *= d == -1 ? 1 : d;  // checked by infer_view already
  for (int64_t& d : out_shape) if (d == -1) d = in.numel() / known;
  return unflatten(linear_index(out, contiguous_strides(out_shape)), in.shape);
}

std::vector<TensorMeta> infer_permute(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& in = meta_of(g, a[0]);
  const auto dims = a[1].ints();
  if (dims.size() != in.shape.size()) bad(op, "needs " + std::to_string(in.shape.size()) + " dimensions, got " + std::to_string(dims.size()));
  Shape out;
  std::vector<bool> seen(dims.size(), false);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(op, d, static_cast<int64_t>(in.shape.size()));
    if (seen[w]) bad(op, "repeated dimension " + std::to_string(d));
    seen[w] = true;
    out.push_back(in.shape[w]);
  }
  return {like(in, in.dtype, out)};
}
std::vector<Expr> view_permute(const Graph& g, const std::vector<Arg>& a, const std::vector<Expr>& out) {
  const int64_t r = static_cast<int64_t>(meta_of(g, a[0]).shape.size());
  const auto dims = a[1].ints();
  std::vector<Expr> in(r);
  for (size_t i = 0; i < dims.size(); ++i) in[dims[i] < 0 ? dims[i] + r : dims[i]] = out[i];
  return in;
}

std::vector<TensorMeta> infer_expand(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& in = meta_of(g, a[0]);
  Shape size = a[1].ints();
  if (size.size() < in.shape.size()) bad(op, "cannot expand " + shape_str(in.shape) + " to fewer dimensions");
  const size_t off = size.size() - in.shape.size();
  for (size_t i = 0; i < size.size(); ++i) {
    if (i < off) { if (size[i] < 0) bad(op, "-1 is not allowed in new leading dimensions"); continue; }
    const int64_t s = in.shape[i - off];
    if (size[i] == -1) size[i] = s;
    else if (s != 1 && s != size[i]) bad(op, "cannot expand size " + std::to_string(s) + " to " + std::to_string(size[i]));
  }
  return {like(in, in.dtype, size)};
}
std::vector<Expr> view_expand(const Graph& g, const std::vector<Arg>& a, const std::vector<Expr>& out) {
  const Shape& in = meta_of(g, a[0]).shape;
  std::vector<Expr> idx(in.size());
  const size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) idx[i] = in[i] == 1 ? Expr(0) : out[off + i];
  return idx;
}

struct SliceSpec { int64_t dim, start, end, step; };
SliceSpec slice_spec(const OpDef& op, const Shape& in, const std::vector<Arg>& a) {
  const int64_t dim = wrap_dim(op, a[1].i, static_cast<int64_t>(in.size()));
  const int64_t n = in[dim];
  auto clampi = [n](int64_t v) { if (v < 0) v += n; return std::min(std::max<int64_t>(v, 0), n); };
  const int64_t start = a[2].is_none() ? 0 : clampi(a[2].i);
  const int64_t end = a[3].is_none() ? n : clampi(a[3].i);
  const int64_t step = a[4].i;
  if (step <= 0) bad(op, "step must be positive");
  return {dim, start, std::max(end, start), step};
}
std::vector<TensorMeta> infer_slice(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& in = meta_of(g, a[0]);
  const SliceSpec s = slice_spec(op, in.shape, a);
  Shape out = in.shape;
  out[s.dim] = (s.end - s.start + s.step - 1) / s.step;
  return {like(in, in.dtype, out)};
}
std::vector<Expr> view_slice(const Graph& g, const std::vector<Arg>& a, const std::vector<Expr>& out) {
  static const OpDef* op = find_op("aten.slice.Tensor");
  const SliceSpec s = slice_spec(*op, meta_of(g, a[0]).shape, a);
  std::vector<Expr> in = out;
  in[s.dim] = out[s.dim] * s.step + s.start;
  return in;
}

std::vector<TensorMeta> infer_select(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& in = meta_of(g, a[0]);
  const int64_t d = wrap_dim(op, a[1].i, static_cast<int64_t>(in.shape.size()));
  const int64_t i = a[2].i < 0 ? a[2].i + in.shape[d] : a[2].i;
  if (i < 0 || i >= in.shape[d]) bad(op, "index " + std::to_string(a[2].i) + " is out of range for size " + std::to_string(in.shape[d]));
  Shape out = in.shape;
  out.erase(out.begin() + d);
  return {like(in, in.dtype, out)};
}
std::vector<Expr> view_select(const Graph& g, const std::vector<Arg>& a, const std::vector<Expr>& out) {
  const Shape& in = meta_of(g, a[0]).shape;
  const int64_t d = a[1].i < 0 ? a[1].i + static_cast<int64_t>(in.size()) : a[1].i;
  const int64_t i = a[2].i < 0 ? a[2].i + in[d] : a[2].i;
  std::vector<Expr> idx = out;
  idx.insert(idx.begin() + d, Expr(i));
  return idx;
}

// prims.slice(a, start_indices, limit_indices, strides): the prim form of slice.
std::vector<TensorMeta> infer_prims_slice(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& in = meta_of(g, a[0]);
  const auto st = a[1].ints(), lim = a[2].ints();
  const auto str = a[3].is_none() ? std::vector<int64_t>(st.size(), 1) : a[3].ints();
  if (st.size() != in.shape.size() || lim.size() != st.size() || str.size() != st.size()) bad(op, "index lists must match the rank");
  Shape out;
  for (size_t d = 0; d < st.size(); ++d) {
    if (st[d] < 0 || lim[d] > in.shape[d] || st[d] > lim[d] || str[d] <= 0) bad(op, "slice out of range in dimension " + std::to_string(d));
    out.push_back((lim[d] - st[d] + str[d] - 1) / str[d]);
  }
  return {like(in, in.dtype, out)};
}
std::vector<Expr> view_prims_slice(const Graph&, const std::vector<Arg>& a, const std::vector<Expr>& out) {
  const auto st = a[1].ints();
  const auto str = a[3].is_none() ? std::vector<int64_t>(st.size(), 1) : a[3].ints();
  std::vector<Expr> in(out.size());
  for (size_t d = 0; d < out.size(); ++d) in[d] = out[d] * str[d] + st[d];
  return in;
}

// prims.split_dim(a, dim, outer_length) and prims.collapse_view(a, start, end): reshapes of one
// dimension into two, and of a run of dimensions into one.
Shape split_or_collapse(const OpDef& op, const Shape& in, const std::vector<Arg>& a) {
  Shape out = in;
  const int64_t r = static_cast<int64_t>(in.size());
  if (op.name == "prims.split_dim.default") {
    const int64_t d = wrap_dim(op, a[1].i, r), outer = a[2].i;
    if (outer <= 0 || in[d] % outer) bad(op, "cannot split size " + std::to_string(in[d]) + " into " + std::to_string(outer) + " rows");
    out[d] = in[d] / outer;
    out.insert(out.begin() + d, outer);
    return out;
  }
  const int64_t s = a[1].i, e = a[2].i;  // inclusive range, as torch._prims.collapse_view takes it
  if (s < 0 || e >= r || s > e) bad(op, "bad dimension range [" + std::to_string(s) + ", " + std::to_string(e) + "]");
  int64_t m = 1;
  for (int64_t d = s; d <= e; ++d) m *= in[d];
  out.erase(out.begin() + s, out.begin() + e + 1);
  out.insert(out.begin() + s, m);
  return out;
}
std::vector<TensorMeta> infer_split_collapse(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  return {like(x, x.dtype, split_or_collapse(op, x.shape, a))};
}
std::vector<Expr> view_split_collapse(const Graph& g, const std::vector<Arg>& a, const std::vector<Expr>& out) {
  static const OpDef* split = find_op("prims.split_dim.default");
  static const OpDef* collapse = find_op("prims.collapse_view.default");
  const Shape& in = meta_of(g, a[0]).shape;
  const OpDef& op = a.size() == 3 && out.size() == in.size() + 1 ? *split : *collapse;
  const Shape os = split_or_collapse(op, in, a);
  return unflatten(linear_index(out, contiguous_strides(os)), in);
}

std::vector<TensorMeta> infer_broadcast_in_dim(const Graph& g, const OpDef& op, const std::vector<Arg>& args) {
  const TensorMeta& in = meta_of(g, args[0]);
  const Shape shape = args[1].ints();
  const auto bdims = args[2].ints();
  if (bdims.size() != in.shape.size())
    throw std::invalid_argument(op.name + ": broadcast_dimensions has " + std::to_string(bdims.size()) +
                                " entries for an input of rank " + std::to_string(in.shape.size()));
  for (size_t i = 0; i < bdims.size(); ++i) {
    if (bdims[i] < 0 || bdims[i] >= static_cast<int64_t>(shape.size()) || (i && bdims[i] <= bdims[i - 1]))
      throw std::invalid_argument(op.name + ": broadcast_dimensions must be increasing dimensions of the result");
    if (in.shape[i] != 1 && in.shape[i] != shape[bdims[i]])
      throw std::invalid_argument(op.name + ": cannot broadcast size " + std::to_string(in.shape[i]) + " to " +
                                  std::to_string(shape[bdims[i]]));
  }
  TensorMeta m = TensorMeta::contiguous(in.dtype, shape);
  m.device = in.device;
  return {m};
}

std::vector<Expr> view_broadcast_in_dim(const Graph& g, const std::vector<Arg>& args, const std::vector<Expr>& out) {
  const TensorMeta& in = meta_of(g, args[0]);
  const auto bdims = args[2].ints();
  std::vector<Expr> idx(in.shape.size());
  for (size_t i = 0; i < bdims.size(); ++i) idx[i] = in.shape[i] == 1 ? Expr(0) : out.at(bdims[i]);
  return idx;
}

// aten views -> prims views.
std::vector<Arg> decomp_view_to_prims(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape x = b.meta(a[0]).shape;
  if (op.name == "aten.view.default") return {b.call("prims.reshape.default", {a[0], Arg::of_ints(resolve_size(op, a[1].ints(), numel_of(x)))})};
  if (op.name == "aten.permute.default") {
    std::vector<int64_t> p;
    for (int64_t d : a[1].ints()) p.push_back(wrap_dim(op, d, static_cast<int64_t>(x.size())));
    return {b.call("prims.transpose.default", {a[0], Arg::of_ints(p)})};
  }
  if (op.name == "aten.expand.default") {
    Graph& g = b.graph();
    const Shape out = infer_expand(g, op, a)[0].shape;
    std::vector<int64_t> bd;
    for (size_t i = 0; i < x.size(); ++i) bd.push_back(static_cast<int64_t>(out.size() - x.size() + i));
    return {b.call("prims.broadcast_in_dim.default", {a[0], Arg::of_ints(out), Arg::of_ints(bd)})};
  }
  if (op.name == "aten.slice.Tensor") {
    const SliceSpec s = slice_spec(op, x, a);
    std::vector<int64_t> st(x.size(), 0), lim = x, str(x.size(), 1);
    st[s.dim] = s.start;
    lim[s.dim] = s.end;
    str[s.dim] = s.step;
    return {b.call("prims.slice.default", {a[0], Arg::of_ints(st), Arg::of_ints(lim), Arg::of_ints(str)})};
  }
  // select: a one-wide slice, then a reshape that drops the dimension
  const int64_t d = wrap_dim(op, a[1].i, static_cast<int64_t>(x.size()));
  const int64_t i = a[2].i < 0 ? a[2].i + x[d] : a[2].i;
  std::vector<int64_t> st(x.size(), 0), lim = x;
  st[d] = i;
  lim[d] = i + 1;
  Shape out = x;
  out.erase(out.begin() + d);
  const Arg sl = b.call("prims.slice.default", {a[0], Arg::of_ints(st), Arg::of_ints(lim), Arg::none()});
  return {b.call("prims.reshape.default", {sl, Arg::of_ints(out)})};
}

std::vector<TensorMeta> infer_reshape_prim(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  return {like(x, x.dtype, resolve_size(op, a[1].ints(), x.numel()))};
}

// ---------------------------------------------------------------------------------------------
// Views that decompose into the ones above
// ---------------------------------------------------------------------------------------------

std::vector<Arg> decomp_to_view(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape x = b.meta(a[0]).shape;
  Shape out;
  if (op.name == "aten.flatten.using_ints") {
    const int64_t r = static_cast<int64_t>(x.size());
    if (r == 0) return {b.call("aten.view.default", {a[0], Arg::of_ints({1})})};
    const int64_t s = wrap_dim(op, a[1].i, r), e = wrap_dim(op, a[2].i, r);
    for (int64_t d = 0; d < s; ++d) out.push_back(x[d]);
    int64_t m = 1;
    for (int64_t d = s; d <= e; ++d) m *= x[d];
    out.push_back(m);
    for (int64_t d = e + 1; d < r; ++d) out.push_back(x[d]);
  } else if (op.name == "aten.unflatten.int") {
    out = x;
    const int64_t d = wrap_dim(op, a[1].i, static_cast<int64_t>(x.size()));
    if (x.empty()) bad(op, "cannot unflatten a 0-d tensor");
    const Shape sizes = resolve_size(op, a[2].ints(), x[d]);
    if (sizes.empty()) bad(op, "sizes must be non-empty");
    out.erase(out.begin() + d);
    out.insert(out.begin() + d, sizes.begin(), sizes.end());
  } else if (op.name == "aten.unsqueeze.default") {
    out = x;
    const int64_t d = wrap_dim(op, a[1].i, static_cast<int64_t>(x.size()) + 1);
    out.insert(out.begin() + d, 1);
  } else if (op.name == "aten.squeeze.dim") {
    out = x;
    const int64_t d = wrap_dim(op, a[1].i, static_cast<int64_t>(x.size()));
    if (!x.empty() && x[d] == 1) out.erase(out.begin() + d);
  } else {  // reshape, _unsafe_view
    out = a[1].ints();
  }
  return {b.call("aten.view.default", {a[0], Arg::of_ints(out)})};
}
std::vector<TensorMeta> infer_via_view(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  // Shape of the view the op decomposes into.
  const TensorMeta& x = meta_of(g, a[0]);
  Graph tmp;
  Node n;
  n.name = "x";
  n.outs = {x};
  tmp.add(n);
  GraphBuilder b(tmp);
  std::vector<Arg> args = a;
  args[0] = Arg::of_node(0);
  const Arg v = decomp_to_view(b, op, args)[0];
  return {tmp.nodes.at(v.node).meta()};
}

std::vector<Arg> decomp_transpose(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const int64_t r = static_cast<int64_t>(b.meta(a[0]).shape.size());
  std::vector<int64_t> perm(r);
  std::iota(perm.begin(), perm.end(), 0);
  if (op.name == "aten.t.default") {
    if (r < 2) return {a[0]};
    std::swap(perm[0], perm[1]);
  } else {
    std::swap(perm[wrap_dim(op, a[1].i, r)], perm[wrap_dim(op, a[2].i, r)]);
  }
  return {b.call("aten.permute.default", {a[0], Arg::of_ints(perm)})};
}
std::vector<TensorMeta> infer_transpose(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  Shape out = x.shape;
  const int64_t r = static_cast<int64_t>(out.size());
  if (op.name == "aten.t.default") {
    if (r > 2) bad(op, "needs a tensor of at most 2 dimensions");
    if (r == 2) std::swap(out[0], out[1]);
  } else {
    std::swap(out[wrap_dim(op, a[1].i, r)], out[wrap_dim(op, a[2].i, r)]);
  }
  return {like(x, x.dtype, out)};
}

// ---------------------------------------------------------------------------------------------
// squeeze.dims, diagonal, as_strided, flip, repeat (Core ATen, issue 32): views with an index
// rule each (repeat and flip copy in PyTorch, but their index rules are affine or a modulo, so
// they lower as views); the prims flip and as_strided decompose into (prims.rev,
// prims.as_strided), as torch._refs writes them.
// ---------------------------------------------------------------------------------------------

// squeeze.dims: the listed dimensions of size 1 dropped (others stay, as PyTorch does).
std::vector<bool> squeezed(const OpDef& op, const Shape& x, const std::vector<int64_t>& dims) {
  std::vector<bool> s(x.size(), false);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(op, d, static_cast<int64_t>(x.size()));
    if (!x.empty() && x[w] == 1) s[w] = true;
  }
  return s;
}
const OpDef& squeeze_dims_op() {
  static const OpDef* op = find_op("aten.squeeze.dims");
  return *op;
}
std::vector<TensorMeta> infer_squeeze_dims(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  const auto s = squeezed(op, x.shape, a[1].ints());
  Shape out;
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (!s[d]) out.push_back(x.shape[d]);
  return {like(x, x.dtype, out)};
}
std::vector<Expr> view_squeeze_dims(const Graph& g, const std::vector<Arg>& a, const std::vector<Expr>& out) {
  const Shape& x = meta_of(g, a[0]).shape;
  const auto s = squeezed(squeeze_dims_op(), x, a[1].ints());
  std::vector<Expr> in;
  for (size_t d = 0, k = 0; d < x.size(); ++d) in.push_back(s[d] ? Expr(0) : out[k++]);
  return in;
}
std::vector<Arg> decomp_squeeze_dims(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  return {b.call("aten.view.default", {a[0], Arg::of_ints(infer_squeeze_dims(b.graph(), op, a)[0].shape)})};
}

// diagonal(offset, dim1, dim2): the other dimensions in order, then the diagonal: element i reads
// [i + max(-offset, 0)] along dim1 and [i + max(offset, 0)] along dim2. Decomposed (as a view of
// ops that reach prims) into a permute putting dim1 and dim2 last, their flattening, and a slice
// of step n2 + 1.
struct Diag {
  int64_t d1, d2, offset, len;
  Shape out;
};
Diag diag_spec(const OpDef& op, const Shape& x, int64_t offset, int64_t dim1, int64_t dim2) {
  const int64_t r = static_cast<int64_t>(x.size());
  if (r < 2) bad(op, "needs a tensor of at least 2 dimensions, got " + std::to_string(r));
  Diag d{wrap_dim(op, dim1, r), wrap_dim(op, dim2, r), offset, 0, {}};
  if (d.d1 == d.d2) bad(op, "diagonal dimensions cannot be identical " + std::to_string(dim1) + ", " + std::to_string(dim2));
  const int64_t n1 = x[d.d1], n2 = x[d.d2];
  d.len = std::max<int64_t>(0, offset >= 0 ? std::min(n1, n2 - offset) : std::min(n1 + offset, n2));
  for (int64_t k = 0; k < r; ++k)
    if (k != d.d1 && k != d.d2) d.out.push_back(x[k]);
  d.out.push_back(d.len);
  return d;
}
const OpDef& diagonal_op() {
  static const OpDef* op = find_op("aten.diagonal.default");
  return *op;
}
std::vector<TensorMeta> infer_diagonal(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  return {like(x, x.dtype, diag_spec(op, x.shape, a[1].i, a[2].i, a[3].i).out)};
}
std::vector<Expr> view_diagonal(const Graph& g, const std::vector<Arg>& a, const std::vector<Expr>& out) {
  const Shape& x = meta_of(g, a[0]).shape;
  const Diag d = diag_spec(diagonal_op(), x, a[1].i, a[2].i, a[3].i);
  std::vector<Expr> in(x.size());
  for (size_t k = 0, j = 0; k < x.size(); ++k)
    if (static_cast<int64_t>(k) != d.d1 && static_cast<int64_t>(k) != d.d2) in[k] = out[j++];
  const Expr& i = out.back();
  in[d.d1] = i + std::max<int64_t>(-d.offset, 0);
  in[d.d2] = i + std::max<int64_t>(d.offset, 0);
  return in;
}
// The permutation putting dim1 and dim2 last (the others in order).
std::vector<int64_t> diag_perm(const Diag& d, int64_t rank) {
  std::vector<int64_t> p;
  for (int64_t k = 0; k < rank; ++k)
    if (k != d.d1 && k != d.d2) p.push_back(k);
  p.push_back(d.d1);
  p.push_back(d.d2);
  return p;
}
std::vector<Arg> decomp_diagonal(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape x = b.meta(a[0]).shape;
  const int64_t r = static_cast<int64_t>(x.size());
  const Diag d = diag_spec(op, x, a[1].i, a[2].i, a[3].i);
  const int64_t n1 = x[d.d1], n2 = x[d.d2];
  Shape flat(d.out.begin(), d.out.end() - 1);
  flat.push_back(n1 * n2);
  const Arg p = b.call("aten.permute.default", {a[0], Arg::of_ints(diag_perm(d, r))});
  const Arg f = b.call("aten.view.default", {p, Arg::of_ints(flat)});
  const int64_t start = std::min(n1 * n2, d.offset >= 0 ? d.offset : -d.offset * n2);
  const int64_t end = d.len > 0 ? start + (d.len - 1) * (n2 + 1) + 1 : start;
  return {b.call("aten.slice.Tensor", {f, Arg::of_int(r - 2), Arg::of_int(start), Arg::of_int(end), Arg::of_int(n2 + 1)})};
}
// diagonal_backward(grad_output, input_sizes, offset, dim1, dim2): zeros of the input's shape
// with the gradient on the diagonal (torch._decomp: diagonal_scatter into zeros). Decomposed
// without a scatter: each gradient element followed by n2 zeros, flattened, put at the
// diagonal's first flat position of the [n1 * n2] plane, padded with zeros, and viewed back.
Arg zeros_of(GraphBuilder& b, const Shape& shape, DType t) {
  const Arg z = b.constant("zeros", Tensor(t, {}));
  return shape.empty() ? z : b.call("aten.expand.default", {z, Arg::of_ints(shape)});
}
std::vector<TensorMeta> infer_diagonal_backward(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& gm = meta_of(g, a[0]);
  const Shape in = a[1].ints();
  for (int64_t s : in)
    if (s < 0) bad(op, "negative size in input_sizes " + shape_str(in));
  const Diag d = diag_spec(op, in, a[2].i, a[3].i, a[4].i);
  if (d.out != gm.shape) bad(op, "grad_output of shape " + shape_str(gm.shape) + " is not the diagonal of " + shape_str(in) + " (" + shape_str(d.out) + ")");
  return {like(gm, gm.dtype, in)};
}
std::vector<Tensor> ref_diagonal_backward(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  Tensor y(outs[0].dtype, outs[0].shape);
  const Diag d = diag_spec(op, y.shape(), a[2].i, a[3].i, a[4].i);
  const Shape st = contiguous_strides(y.shape());
  for (int64_t i = 0; i < in[0].numel(); ++i) {
    const Shape p = unravel(i, d.out);
    int64_t off = 0;
    for (int64_t k = 0, j = 0; k < y.dim(); ++k)
      if (k != d.d1 && k != d.d2) off += p[j++] * st[k];
    off += (p.back() + std::max<int64_t>(-d.offset, 0)) * st[d.d1] + (p.back() + std::max<int64_t>(d.offset, 0)) * st[d.d2];
    y.set(off, in[0].get(i));
  }
  return {y};
}
std::vector<Arg> decomp_diagonal_backward(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape in = a[1].ints();
  const int64_t r = static_cast<int64_t>(in.size());
  const DType t = b.meta(a[0]).dtype;
  const Diag d = diag_spec(op, in, a[2].i, a[3].i, a[4].i);
  const int64_t n1 = in[d.d1], n2 = in[d.d2];
  if (d.len == 0 || n1 * n2 == 0) return {zeros_of(b, in, t)};
  const Shape batch(d.out.begin(), d.out.end() - 1);
  auto with = [&batch](std::initializer_list<int64_t> tail) {
    Shape s = batch;
    s.insert(s.end(), tail);
    return s;
  };
  auto list = [](std::vector<Arg> v) {
    Arg l;
    l.kind = Arg::Kind::list;
    l.list = std::move(v);
    return l;
  };
  const int64_t last = r - 2;  // the flattened plane's dimension
  // [.., L] -> [.., L, 1] ++ zeros [.., L, n2] -> [.., L * (n2 + 1)]: g[i] at i * (n2 + 1).
  const Arg col = b.call("aten.view.default", {a[0], Arg::of_ints(with({d.len, 1}))});
  const Arg spaced = b.call("aten.cat.default", {list({col, zeros_of(b, with({d.len, n2}), t)}), Arg::of_int(last + 1)});
  Arg flat = b.call("aten.view.default", {spaced, Arg::of_ints(with({d.len * (n2 + 1)}))});
  const int64_t total = n1 * n2, start = d.offset >= 0 ? d.offset : -d.offset * n2;
  const int64_t keep = std::min(d.len * (n2 + 1), total - start);
  if (keep < d.len * (n2 + 1))
    flat = b.call("aten.slice.Tensor", {flat, Arg::of_int(last), Arg::of_int(0), Arg::of_int(keep), Arg::of_int(1)});
  std::vector<Arg> parts;
  if (start > 0) parts.push_back(zeros_of(b, with({start}), t));
  parts.push_back(flat);
  if (total - start - keep > 0) parts.push_back(zeros_of(b, with({total - start - keep}), t));
  const Arg plane = parts.size() == 1 ? flat : b.call("aten.cat.default", {list(parts), Arg::of_int(last)});
  const Arg square = b.call("aten.view.default", {plane, Arg::of_ints(with({n1, n2}))});
  const auto p = diag_perm(d, r);
  std::vector<int64_t> inv(r);
  for (int64_t k = 0; k < r; ++k) inv[p[k]] = k;
  return {b.call("aten.permute.default", {square, Arg::of_ints(inv)})};
}

// as_strided(size, stride, storage_offset): over the input's storage, position i reads element
// storage_offset + sum(i * stride) of it. Only for an input laid out contiguously (a graph value
// that is not a strided view of another): the storage of a permuted or sliced view is not its
// value's order. Strides and offset must stay inside the input.
struct Strided {
  Shape size, stride;
  int64_t offset;
};
Strided strided_spec(const OpDef& op, const TensorMeta& x, const std::vector<Arg>& a) {
  Strided s{a[1].ints(), a[2].ints(), a[3].is_none() ? 0 : a[3].i};
  if (s.size.size() != s.stride.size())
    bad(op, "mismatch in length of strides and shape (" + std::to_string(s.stride.size()) + " and " + std::to_string(s.size.size()) + ")");
  if (s.offset < 0) bad(op, "negative storage offset " + std::to_string(s.offset));
  int64_t last = s.offset;
  bool empty = false;
  for (size_t d = 0; d < s.size.size(); ++d) {
    if (s.size[d] < 0) bad(op, "negative size " + std::to_string(s.size[d]));
    if (s.stride[d] < 0) bad(op, "negative strides are not supported, got " + std::to_string(s.stride[d]));
    empty = empty || s.size[d] == 0;
    if (s.size[d] > 0) last += (s.size[d] - 1) * s.stride[d];
  }
  if (!empty && last >= x.numel())
    bad(op, "setting a view of size " + shape_str(s.size) + " with strides " + shape_str(s.stride) + " and offset " +
                std::to_string(s.offset) + " reads element " + std::to_string(last) + ", out of bounds for a storage of " +
                std::to_string(x.numel()) + " elements");
  return s;
}
// Views whose value is laid out as its storage (contiguous, from offset 0).
bool contiguous_view(const OpDef* op) {
  static const std::vector<const OpDef*> ok = {find_op("aten.view.default"), find_op("prims.reshape.default"),
                                               find_op("prims.split_dim.default"), find_op("prims.collapse_view.default"),
                                               find_op("aten.squeeze.dims")};
  return std::count(ok.begin(), ok.end(), op) > 0;
}
std::vector<TensorMeta> infer_as_strided(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const Node& src = g.nodes.at(a[0].node);
  const TensorMeta& x = src.meta();
  if (!x.strides.empty() && x.strides != contiguous_strides(x.shape))
    bad(op, "the input's strides " + shape_str(x.strides) + " are not contiguous; only contiguous inputs are supported");
  if (!src.is_placeholder() && src.op->kind == OpKind::view && op.in(level::aten) && !contiguous_view(src.op))
    bad(op, "the input is a strided view (" + src.op->name + "), whose storage is not its value's order; only contiguous inputs are supported");
  return {like(x, x.dtype, strided_spec(op, x, a).size)};
}
std::vector<Expr> view_as_strided(const Graph& g, const std::vector<Arg>& a, const std::vector<Expr>& out) {
  const TensorMeta& x = meta_of(g, a[0]);
  const Shape size = a[1].ints(), stride = a[2].ints();
  Expr flat(a[3].is_none() ? 0 : a[3].i);
  for (size_t d = 0; d < out.size(); ++d) flat = flat + out[d] * (size[d] == 1 ? 0 : stride[d]);
  return unflatten(flat, x.shape);
}
std::vector<Arg> decomp_as_strided(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  return {b.call("prims.as_strided.default", {a[0], a[1], a[2], Arg::of_int(a[3].is_none() ? 0 : a[3].i)})};
}
// as_strided (derivatives.yaml: as_strided_backward). Over a contiguous input (the only one
// taken), output position i reads input element offset + sum(i * stride): its gradient adds there
// (positions read twice add up), a scatter_add of the flattened gradient into zeros.
Args d_as_strided(DerivCtx& c) {
  const Shape x = shape_of(c, c.args[0]);
  const Shape size = c.args[1].ints(), stride = c.args[2].ints();
  const int64_t offset = c.args[3].is_none() ? 0 : c.args[3].i;
  const DType dt = c.b.meta(c.grads[0]).dtype;
  const int64_t n = numel_of(size);
  if (n == 0 || numel_of(x) == 0) return one(zeros(c, x, dt), 4);
  const std::vector<std::pair<std::string, Arg>> i64 = {{"dtype", Arg::of_string("torch.int64")}};
  // The position each output element reads: offset + sum over dims of arange(size[d]) * stride[d].
  Arg pos = call(c, "aten.full.default", {ints(size), Arg::of_int(offset)}, i64);
  for (size_t d = 0; d < size.size(); ++d) {
    if (size[d] == 1 || stride[d] == 0) continue;
    Shape along(size.size(), 1);
    along[d] = size[d];
    const Arg steps = call(c, "aten.arange.start_step", {Arg::of_int(0), Arg::of_int(size[d] * stride[d]), Arg::of_int(stride[d])}, i64);
    pos = call(c, "aten.add.Tensor", {pos, call(c, "aten.view.default", {steps, ints(along)})});
  }
  const Arg flat_pos = call(c, "aten.reshape.default", {pos, ints({n})});
  const Arg flat_grad = call(c, "aten.reshape.default", {c.grads[0], ints({n})});
  const Arg g = call(c, "aten.scatter_add.default", {zeros(c, {numel_of(x)}, dt), Arg::of_int(0), flat_pos, flat_grad});
  return one(call(c, "aten.view.default", {g, ints(x)}), 4);
}

// flip(dims): out[i] = in[size - 1 - i] along each listed dimension; prims.rev as torch._refs.
std::vector<bool> flipped(const OpDef& op, int64_t rank, const std::vector<int64_t>& dims) {
  std::vector<bool> f(std::max<int64_t>(rank, 1), false);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(op, d, rank);
    if (f[w]) bad(op, "dim " + std::to_string(d) + " appears multiple times in the list of dims");
    f[w] = true;
  }
  return f;
}
std::vector<TensorMeta> infer_flip(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  flipped(op, static_cast<int64_t>(x.shape.size()), a[1].ints());
  return {like(x, x.dtype, x.shape)};
}
std::vector<Expr> view_flip(const Graph& g, const std::vector<Arg>& a, const std::vector<Expr>& out) {
  static const OpDef* op = find_op("aten.flip.default");
  const Shape& x = meta_of(g, a[0]).shape;
  const auto f = flipped(*op, static_cast<int64_t>(x.size()), a[1].ints());
  std::vector<Expr> in = out;
  for (size_t d = 0; d < x.size(); ++d)
    if (f[d]) in[d] = Expr(x[d] - 1) - out[d];
  return in;
}
std::vector<Arg> decomp_flip(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const int64_t r = static_cast<int64_t>(b.meta(a[0]).shape.size());
  std::vector<int64_t> dims;
  for (int64_t d : a[1].ints()) dims.push_back(wrap_dim(op, d, r));
  return {b.call("prims.rev.default", {a[0], Arg::of_ints(dims)})};
}

// repeat(repeats): the input tiled; with the input's shape padded with leading ones to the
// length of repeats, out[i] = in[i mod size] along each dimension. Decomposed as torch._refs
// does it in effect: a view [1, s0, 1, s1, ...], an expand to [r0, s0, r1, s1, ...], a copy,
// and a view [r0 * s0, r1 * s1, ...].
Shape padded_shape(const OpDef& op, const Shape& x, const std::vector<int64_t>& reps) {
  if (reps.size() < x.size())
    bad(op, "number of dimensions of repeat dims (" + std::to_string(reps.size()) + ") can not be smaller than number of dimensions of tensor (" +
                std::to_string(x.size()) + ")");
  for (int64_t r : reps)
    if (r < 0) bad(op, "repeats cannot be negative, got " + shape_str(reps));
  Shape p(reps.size() - x.size(), 1);
  p.insert(p.end(), x.begin(), x.end());
  return p;
}
std::vector<TensorMeta> infer_repeat(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  const auto reps = a[1].ints();
  const Shape p = padded_shape(op, x.shape, reps);
  Shape out;
  for (size_t d = 0; d < p.size(); ++d) {
    int64_t n = 0;
    if (__builtin_mul_overflow(p[d], reps[d], &n)) bad(op, "repeats " + shape_str(reps) + " make a dimension too large to count");
    out.push_back(n);
  }
  return {like(x, x.dtype, out)};
}
std::vector<Expr> view_repeat(const Graph& g, const std::vector<Arg>& a, const std::vector<Expr>& out) {
  const Shape& x = meta_of(g, a[0]).shape;
  const size_t lead = out.size() - x.size();
  std::vector<Expr> in(x.size());
  for (size_t d = 0; d < x.size(); ++d) in[d] = x[d] <= 1 ? Expr(0) : out[lead + d].mod(x[d]);
  return in;
}
std::vector<Arg> decomp_repeat(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape x = b.meta(a[0]).shape;
  const auto reps = a[1].ints();
  const Shape p = padded_shape(op, x, reps);
  Shape ones_between, tiled, out;
  for (size_t d = 0; d < p.size(); ++d) {
    ones_between.insert(ones_between.end(), {1, p[d]});
    tiled.insert(tiled.end(), {reps[d], p[d]});
    out.push_back(p[d] * reps[d]);
  }
  const Arg v = b.call("aten.view.default", {a[0], Arg::of_ints(ones_between)});
  const Arg e = b.call("aten.clone.default", {b.call("aten.expand.default", {v, Arg::of_ints(tiled)})});
  return {b.call("aten.view.default", {e, Arg::of_ints(out)})};
}

// ---------------------------------------------------------------------------------------------
// Export level (issue 32): repeat_interleave with one repeat count, triu and tril
// ---------------------------------------------------------------------------------------------

// repeat_interleave.self_int(repeats, dim): each element repeated in place along dim (the input
// flattened where dim is None): out[i] = in[i // repeats]. Decomposed as an unsqueeze, an expand
// of the new dimension to `repeats`, a copy and a view merging the two.
struct Interleave {
  int64_t dim, repeats;
  Shape in, out;  // `in`: the input, flattened where dim is None
};
Interleave interleave_spec(const OpDef& op, const Shape& x, const std::vector<Arg>& a) {
  if (a[1].i < 0) bad(op, "repeats can not be negative, got " + std::to_string(a[1].i));
  Interleave s{0, a[1].i, a[2].is_none() ? Shape{numel_of(x)} : x, {}};
  if (!a[2].is_none()) s.dim = wrap_dim(op, a[2].i, static_cast<int64_t>(x.size()));
  if (s.in.empty()) s.in = {1};  // a 0-d input repeats as a vector
  s.out = s.in;
  s.out[s.dim] *= s.repeats;
  if (!a[3].is_none() && a[3].i != s.out[s.dim])
    bad(op, "output_size " + std::to_string(a[3].i) + " does not match the repeated size " + std::to_string(s.out[s.dim]));
  return s;
}
std::vector<TensorMeta> infer_repeat_interleave(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  return {like(x, x.dtype, interleave_spec(op, x.shape, a).out)};
}
std::vector<Tensor> ref_repeat_interleave(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Interleave s = interleave_spec(op, in[0].shape(), a);
  Tensor y(outs[0].dtype, outs[0].shape);
  const Shape st = contiguous_strides(s.in);
  for (int64_t i = 0; i < y.numel(); ++i) {
    Shape p = unravel(i, s.out);
    p[s.dim] /= s.repeats;
    int64_t off = 0;
    for (size_t d = 0; d < p.size(); ++d) off += p[d] * st[d];
    y.set(i, in[0].get(off));
  }
  return {y};
}
std::vector<Arg> decomp_repeat_interleave(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Interleave s = interleave_spec(op, b.meta(a[0]).shape, a);
  Arg x = b.meta(a[0]).shape == s.in ? a[0] : b.call("aten.view.default", {a[0], Arg::of_ints(s.in)});
  Shape wide = s.in;
  wide.insert(wide.begin() + s.dim + 1, s.repeats);
  x = b.call("aten.unsqueeze.default", {x, Arg::of_int(s.dim + 1)});
  x = b.call("aten.clone.default", {b.call("aten.expand.default", {x, Arg::of_ints(wide)})});
  return {b.call("aten.view.default", {x, Arg::of_ints(s.out)})};
}

// triu / tril(diagonal): the elements on and above (below) the diagonal-th diagonal of the last
// two dimensions, zeros elsewhere. torch._refs: a mask from two aranges, (col - row) >= diagonal
// (<= for tril), and where(mask, x, 0).
template <bool Upper>
std::vector<TensorMeta> infer_tri(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  if (x.shape.size() < 2) bad(op, "input tensor must have at least 2 dimensions");
  return {like(x, x.dtype, x.shape)};
}
template <bool Upper>
std::vector<Tensor> ref_tri(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  Tensor y(outs[0].dtype, outs[0].shape);
  const int64_t r = y.dim();
  for (int64_t i = 0; i < y.numel(); ++i) {
    const Shape p = unravel(i, y.shape());
    const int64_t diff = p[r - 1] - p[r - 2];
    if (Upper ? diff >= a[1].i : diff <= a[1].i) y.set(i, in[0].get(i));
  }
  return {y};
}
template <bool Upper>
std::vector<Arg> decomp_tri(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  // col >= row + diagonal (triu), col <= row + diagonal (tril): the rows' arange starts at the
  // diagonal, so the mask compares two tensors (no integer number in a comparison).
  const Shape x = b.meta(a[0]).shape;
  const int64_t h = x[x.size() - 2], w = x.back(), k = a[1].i;
  const std::vector<std::pair<std::string, Arg>> i64 = {{"dtype", Arg::of_string("torch.int64")}};
  const Arg cols = b.call("aten.arange.start_step", {Arg::of_int(0), Arg::of_int(w), Arg::of_int(1)}, i64);
  const Arg rows = b.call("aten.arange.start_step", {Arg::of_int(k), Arg::of_int(h + k), Arg::of_int(1)}, i64);
  const Arg mask = b.call(Upper ? "aten.ge.Tensor" : "aten.le.Tensor", {b.call("aten.unsqueeze.default", {cols, Arg::of_int(0)}),
                                                                       b.call("aten.unsqueeze.default", {rows, Arg::of_int(1)})});
  // The zero in the input's own kind: where(mask, bool, 0) would promote to int64.
  const Arg zero = b.meta(a[0]).dtype == DType::b8 ? Arg::of_bool(false) : Arg::of_int(0);
  return {b.call("aten.where.self", {mask, a[0], zero})};
}

// ---------------------------------------------------------------------------------------------
// Identities
// ---------------------------------------------------------------------------------------------

std::vector<Arg> decomp_identity(GraphBuilder&, const OpDef&, const std::vector<Arg>& a) { return {a[0]}; }
// dropout: the identity in eval mode (or p = 0); in training, native_dropout's output, as
// torch._decomp writes it.
std::vector<Arg> decomp_dropout(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  if (!a[2].b || a[1].number() == 0) return {a[0]};
  return {b.get(b.call("aten.native_dropout.default", {a[0], a[1], a[2]}), 0)};
}

// ---------------------------------------------------------------------------------------------
// Derivatives
// ---------------------------------------------------------------------------------------------

Args d_identity(DerivCtx& c) { return one(c.grads[0], c.op.params.size()); }
// select: the gradient put back into a zero tensor at the selected index (derivatives.yaml's
// select_backward, which torch._decomp writes as select_scatter).
Args d_select(DerivCtx& c) {
  const TensorMeta x = c.b.meta(c.args[0]);
  return one(call(c, "aten.select_scatter.default", {zeros(c, x.shape, x.dtype), c.grads[0], c.args[1], c.args[2]}), 3);
}

Args d_view(DerivCtx& c) { return one(call(c, "aten.view.default", {c.grads[0], ints(shape_of(c, c.args[0]))}), 2); }
Args d_reshape(DerivCtx& c) { return one(call(c, "aten.reshape.default", {c.grads[0], ints(shape_of(c, c.args[0]))}), c.op.params.size()); }
Args d_permute(DerivCtx& c) {
  const auto p = c.args[1].ints();
  const int64_t rank = static_cast<int64_t>(p.size());
  std::vector<int64_t> inv(p.size());
  for (int64_t i = 0; i < rank; ++i) inv[wrap_dim(c.op, p[i], rank)] = i;
  return one(call(c, "aten.permute.default", {c.grads[0], ints(inv)}), 2);
}
Args d_t(DerivCtx& c) { return one(call(c, "aten.t.default", {c.grads[0]}), 1); }
Args d_transpose(DerivCtx& c) { return one(call(c, "aten.transpose.int", {c.grads[0], c.args[1], c.args[2]}), 3); }
Args d_expand(DerivCtx& c) { return one(sum_to(c, c.grads[0], shape_of(c, c.args[0])), c.op.params.size()); }
Args d_unsqueeze(DerivCtx& c) { return one(call(c, "aten.squeeze.dim", {c.grads[0], c.args[1]}), 2); }
Args d_squeeze(DerivCtx& c) { return one(call(c, "aten.view.default", {c.grads[0], ints(shape_of(c, c.args[0]))}), 2); }
// slice: the gradient is zero outside the slice (step 1: zeros, the gradient, zeros; other steps:
// slice_backward, as derivatives.yaml).
Args d_slice(DerivCtx& c) {
  const Shape& in = shape_of(c, c.args[0]);
  const int64_t dim = wrap_dim(c.op, c.args[1].i, static_cast<int64_t>(in.size()));
  if (c.args[4].i != 1) {  // derivatives.yaml's slice_backward_wrapper: start None is 0, end None the size
    const Arg start = c.args[2].is_none() ? Arg::of_int(0) : c.args[2];
    const Arg end = c.args[3].is_none() ? Arg::of_int(in[dim]) : c.args[3];
    return one(call(c, "aten.slice_backward.default", {c.grads[0], ints(in), Arg::of_int(dim), start, end, c.args[4]}), 5);
  }
  const Shape& out = shape_of(c, c.out(0));
  int64_t start = c.args[2].is_none() ? 0 : c.args[2].i;
  if (start < 0) start += in[dim];
  start = std::clamp<int64_t>(start, 0, in[dim]);
  Arg parts;
  parts.kind = Arg::Kind::list;
  const DType t = c.b.meta(c.grads[0]).dtype;
  Shape before = in, after = in;
  before[dim] = start;
  after[dim] = in[dim] - start - out[dim];
  if (before[dim] > 0) parts.list.push_back(zeros(c, before, t));
  parts.list.push_back(c.grads[0]);
  if (after[dim] > 0) parts.list.push_back(zeros(c, after, t));
  if (parts.list.size() == 1) return one(c.grads[0], 5);
  return one(call(c, "aten.cat.default", {parts, Arg::of_int(dim)}), 5);
}
Args d_squeeze_dims(DerivCtx& c) { return one(call(c, "aten.view.default", {c.grads[0], ints(shape_of(c, c.args[0]))}), 2); }
Args d_diagonal(DerivCtx& c) {
  return one(call(c, "aten.diagonal_backward.default", {c.grads[0], ints(shape_of(c, c.args[0])), c.args[1], c.args[2], c.args[3]}), 4);
}
Args d_flip(DerivCtx& c) { return one(call(c, "aten.flip.default", {c.grads[0], c.args[1]}), 2); }
// repeat: the gradient viewed as [r0, s0, r1, s1, ...], summed over the repeats (derivatives.yaml's repeat_backward).
Args d_repeat(DerivCtx& c) {
  const Shape x = shape_of(c, c.args[0]);
  const auto reps = c.args[1].ints();
  const Shape p = padded_shape(c.op, x, reps);
  Shape tiled;
  std::vector<int64_t> sum_dims;
  for (size_t d = 0; d < p.size(); ++d) {
    tiled.insert(tiled.end(), {reps[d], p[d]});
    sum_dims.push_back(static_cast<int64_t>(2 * d));
  }
  if (std::count(reps.begin(), reps.end(), 0)) return one(zeros(c, x, c.b.meta(c.grads[0]).dtype), 2);
  Arg g = call(c, "aten.view.default", {c.grads[0], ints(tiled)});
  if (!sum_dims.empty()) g = call(c, "aten.sum.dim_IntList", {g, ints(sum_dims), Arg::of_bool(false)});
  return one(call(c, "aten.view.default", {g, ints(x)}), 2);
}
// reshape_as, view_as, expand_as: reshape, view, expand to other's shape; type_as: _to_copy to
// other's dtype (self itself where the dtypes agree), as PyTorch's CompositeImplicit kernels do.
template <int Which>  // 0 reshape, 1 view, 2 expand
std::vector<Arg> decomp_as_shape(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  static const char* const ops[] = {"aten.reshape.default", "aten.view.default", "aten.expand.default"};
  return {b.call(ops[Which], {a[0], Arg::of_ints(b.meta(a[1]).shape)})};
}
std::vector<Arg> decomp_type_as(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const DType t = b.meta(a[1]).dtype;
  if (b.meta(a[0]).dtype == t) return {a[0]};
  return {b.call("aten._to_copy.default", {a[0]}, {{"dtype", Arg::of_string(std::string(dtype_torch(t)))}})};
}

// ---------------------------------------------------------------------------------------------
// Ops the model zoo met (issue 33): swapaxes/swapdims, roll, slice_backward
// ---------------------------------------------------------------------------------------------

// swapaxes(axis0, axis1), swapdims(dim0, dim1): aliases of transpose.int (CompositeImplicit in
// ATen), differentiated through it.
std::vector<Arg> decomp_swapaxes(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  return {b.call("aten.transpose.int", {a[0], a[1], a[2]})};
}

// roll(shifts, dims): each listed dimension rotated by its shift (element i goes to i + shift,
// wrapping); dims empty: the flattened tensor rolled by the one shift, viewed back. The checks
// and the structure as torch._refs.roll (and ATen's roll_common); a roll of one dimension is
// cat(x[start:], x[:start]) with start = (n - shift) mod n, which is the index_select of
// (start + arange(n)) mod n that torch._refs writes, as views and a cat (generated code here).
struct Roll {
  std::vector<int64_t> shifts, dims;  // dims wrapped; empty: the flattened tensor
};
Roll roll_spec(const OpDef& op, const Shape& x, const std::vector<Arg>& a) {
  Roll r{a[1].ints(), a[2].ints()};
  const int64_t rank = static_cast<int64_t>(x.size());
  if (r.shifts.empty()) bad(op, "`shifts` required");
  if (!r.dims.empty() && rank == 0) bad(op, "Dimension specified as " + std::to_string(r.dims[0]) + " but tensor has no dimensions");
  if (r.dims.empty() && r.shifts.size() != 1)
    bad(op, "shifts and dimensions must align. shifts: " + std::to_string(r.shifts.size()) + ", dims:0");
  if (!r.dims.empty() && r.shifts.size() != r.dims.size())
    bad(op, "shifts and dimensions must align. shifts: " + std::to_string(r.shifts.size()) + ", dims:" + std::to_string(r.dims.size()));
  for (int64_t& d : r.dims) d = wrap_dim(op, d, rank);
  return r;
}
int64_t wrap_mod(int64_t v, int64_t n) { return ((v % n) + n) % n; }
int64_t flat_at(const Shape& pos, const Shape& strides) { return std::inner_product(pos.begin(), pos.end(), strides.begin(), int64_t{0}); }
std::vector<TensorMeta> infer_roll(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  roll_spec(op, x.shape, a);
  return {like(x, x.dtype, x.shape)};
}
std::vector<Tensor> ref_roll(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  const Roll r = roll_spec(op, x.shape(), a);
  Tensor y(outs[0].dtype, outs[0].shape);
  const int64_t n = x.numel();
  if (n == 0) return {y};
  const Shape st = contiguous_strides(x.shape());
  for (int64_t i = 0; i < n; ++i) {
    if (r.dims.empty()) {
      y.set(i, x.get(wrap_mod(i - r.shifts[0], n)));
      continue;
    }
    Shape p = unravel(i, x.shape());  // the output position; the input position it reads
    for (size_t k = 0; k < r.dims.size(); ++k) p[r.dims[k]] = wrap_mod(p[r.dims[k]] - r.shifts[k], x.shape()[r.dims[k]]);
    y.set(i, x.get(flat_at(p, st)));
  }
  return {y};
}
std::vector<Arg> decomp_roll(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape x = b.meta(a[0]).shape;
  const Roll r = roll_spec(op, x, a);
  if (numel_of(x) == 0) return {b.call("aten.clone.default", {a[0]})};
  if (r.dims.empty()) {
    const Arg flat = b.call("aten.view.default", {a[0], Arg::of_ints({numel_of(x)})});
    const Arg rolled = b.call("aten.roll.default", {flat, Arg::of_ints(r.shifts), Arg::of_ints({0})});
    return {b.call("aten.view.default", {rolled, Arg::of_ints(x)})};
  }
  Arg y = a[0];
  for (size_t k = 0; k < r.dims.size(); ++k) {
    const int64_t d = r.dims[k], n = x[d], start = wrap_mod(n - r.shifts[k], n);
    if (start == 0) continue;
    Arg parts;
    parts.kind = Arg::Kind::list;
    parts.list = {b.call("aten.slice.Tensor", {y, Arg::of_int(d), Arg::of_int(start), Arg::of_int(n), Arg::of_int(1)}),
                  b.call("aten.slice.Tensor", {y, Arg::of_int(d), Arg::of_int(0), Arg::of_int(start), Arg::of_int(1)})};
    y = b.call("aten.cat.default", {parts, Arg::of_int(d)});
  }
  return {y.node == a[0].node ? b.call("aten.clone.default", {a[0]}) : y};
}
// derivatives.yaml: grad.roll(-shifts reversed, dims reversed).
Args d_roll(DerivCtx& c) {
  std::vector<int64_t> shifts = c.args[1].ints(), dims = c.args[2].ints();
  std::reverse(shifts.begin(), shifts.end());
  std::reverse(dims.begin(), dims.end());
  for (int64_t& s : shifts) s = -s;
  return one(call(c, "aten.roll.default", {c.grads[0], ints(shifts), ints(dims)}), 3);
}

// slice_backward(grad_output, input_sizes, dim, start, end, step): zeros of input_sizes with the
// gradient at the slice's positions; torch._decomp: slice_scatter into new_zeros(input_sizes).
// Its derivative (derivatives.yaml): grad.slice(dim, start, end, step).
SliceSpec slice_backward_spec(const OpDef& op, const Shape& in, const std::vector<Arg>& a) {
  return slice_spec(op, in, {a[0], a[2], a[3], a[4], a[5]});
}
std::vector<TensorMeta> infer_slice_backward(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& gm = meta_of(g, a[0]);
  const Shape in = a[1].ints();
  for (int64_t s : in)
    if (s < 0) bad(op, "negative size in input_sizes " + shape_str(in));
  if (in.empty()) bad(op, "slice() cannot be applied to a 0-dim tensor.");
  const SliceSpec s = slice_backward_spec(op, in, a);
  Shape want = in;
  want[s.dim] = (s.end - s.start + s.step - 1) / s.step;
  if (gm.shape != want) bad(op, "grad_output of shape " + shape_str(gm.shape) + " is not the slice of " + shape_str(in) + " (" + shape_str(want) + ")");
  return {like(gm, gm.dtype, in)};
}
std::vector<Tensor> ref_slice_backward(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  Tensor y(outs[0].dtype, outs[0].shape);
  const SliceSpec s = slice_backward_spec(op, y.shape(), a);
  const Shape st = contiguous_strides(y.shape());
  for (int64_t i = 0; i < in[0].numel(); ++i) {
    Shape p = unravel(i, in[0].shape());
    p[s.dim] = s.start + p[s.dim] * s.step;
    y.set(flat_at(p, st), in[0].get(i));
  }
  return {y};
}
std::vector<Arg> decomp_slice_backward(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Arg z = zeros_of(b, a[1].ints(), b.meta(a[0]).dtype);
  return {b.call("aten.slice_scatter.default", {z, a[0], a[2], a[3], a[4], a[5]})};
}
Args d_slice_backward(DerivCtx& c) {
  return one(call(c, "aten.slice.Tensor", {c.grads[0], c.args[2], c.args[3], c.args[4], c.args[5]}), 6);
}
}  // namespace

void add_view_ops(std::vector<OpDef>& t) {
  const std::vector<OpDef> ops = {
      // Views (Core ATen), and their prims
      view_op("aten.view.default", "view(Tensor(a) self, SymInt[] size) -> Tensor(a)", kCore, infer_view, view_view, decomp_view_to_prims,
              d_view),
      by_parts(view_op("aten.permute.default", "permute(Tensor(a) self, int[] dims) -> Tensor(a)", kCore, infer_permute, view_permute,
                       decomp_view_to_prims, d_permute)),
      by_parts(view_op("aten.expand.default", "expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)", kCore, infer_expand,
                       view_expand, decomp_view_to_prims, d_expand)),
      view_op("aten.slice.Tensor", "slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)",
              kCore, infer_slice, view_slice, decomp_view_to_prims, d_slice),
      view_op("aten.select.int", "select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)", kCore, infer_select, view_select,
              decomp_view_to_prims, d_select),
      view_op("prims.reshape.default", "reshape(Tensor a, SymInt[] shape) -> Tensor", kPrims, infer_reshape_prim, view_view, nullptr),
      view_op("prims.transpose.default", "transpose(Tensor(a) a, int[] permutation) -> Tensor(a)", kPrims, infer_permute, view_permute, nullptr),
      view_op("prims.slice.default",
              "slice(Tensor(a) a, SymInt[] start_indices, SymInt[] limit_indices, SymInt[]? strides=None) -> Tensor(a)", kPrims,
              infer_prims_slice, view_prims_slice, nullptr),
      view_op("prims.split_dim.default", "split_dim(Tensor(a) a, int dim, SymInt outer_length) -> Tensor(a)", kPrims,
              infer_split_collapse, view_split_collapse, nullptr),
      view_op("prims.collapse_view.default", "collapse_view(Tensor(a) a, int start, int end) -> Tensor(a)", kPrims,
              infer_split_collapse, view_split_collapse, nullptr),
      {.name = "prims.broadcast_in_dim.default",
       .schema = "broadcast_in_dim(Tensor(a) a, SymInt[] shape, int[] broadcast_dimensions) -> Tensor(a)",
       .kind = OpKind::view, .levels = kPrims, .infer = infer_broadcast_in_dim, .view = view_broadcast_in_dim},
      // Views that decompose to the ones above
      comp("aten.reshape.default", "reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)", kAten, infer_via_view, nullptr, decomp_to_view,
           d_reshape),
      comp("aten._unsafe_view.default", "_unsafe_view(Tensor self, SymInt[] size) -> Tensor", kAten, infer_via_view, nullptr,
           decomp_to_view, d_view),
      comp("aten.flatten.using_ints", "flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)", kAten,
           infer_via_view, nullptr, decomp_to_view),
      comp("aten.unsqueeze.default", "unsqueeze(Tensor(a) self, int dim) -> Tensor(a)", kCore, infer_via_view, nullptr, decomp_to_view,
           d_unsqueeze),
      comp("aten.squeeze.dim", "squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)", kCore, infer_via_view, nullptr, decomp_to_view,
           d_squeeze),
      comp("aten.t.default", "t(Tensor(a) self) -> Tensor(a)", kAten, infer_transpose, nullptr, decomp_transpose, d_t),
      by_parts(comp("aten.transpose.int", "transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", kAten, infer_transpose, nullptr,
                    decomp_transpose, d_transpose)),
      view_op("aten.squeeze.dims", "squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)", kCore, infer_squeeze_dims, view_squeeze_dims,
              decomp_squeeze_dims, d_squeeze_dims),
      by_parts(view_op("aten.diagonal.default", "diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)", kCore,
                       infer_diagonal, view_diagonal, decomp_diagonal, d_diagonal)),
      by_parts(comp("aten.diagonal_backward.default",
                    "diagonal_backward(Tensor grad_output, SymInt[] input_sizes, int offset, int dim1, int dim2) -> Tensor", kAten,
                    infer_diagonal_backward, ref_diagonal_backward, decomp_diagonal_backward)),
      by_parts(view_op("aten.as_strided.default",
                       "as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)", kCore,
                       infer_as_strided, view_as_strided, decomp_as_strided, d_as_strided)),
      by_parts(view_op("prims.as_strided.default",
                       "as_strided(Tensor(a!) a, SymInt[] size, SymInt[] stride, SymInt storage_offset) -> Tensor(a!)", kPrims,
                       infer_as_strided, view_as_strided, nullptr, d_as_strided)),
      by_parts(view_op("aten.flip.default", "flip(Tensor self, int[] dims) -> Tensor", kCore, infer_flip, view_flip, decomp_flip, d_flip)),
      by_parts(view_op("prims.rev.default", "rev(Tensor a, int[] dims) -> Tensor", kPrims, infer_flip, view_flip, nullptr)),
      by_parts(view_op("aten.repeat.default", "repeat(Tensor self, SymInt[] repeats) -> Tensor", kCore, infer_repeat, view_repeat, decomp_repeat,
                       d_repeat)),
      comp("aten.unflatten.int", "unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)", kAten, infer_via_view, nullptr,
           decomp_to_view),
      by_parts(comp("aten.repeat_interleave.self_int",
                    "repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor", kAten,
                    infer_repeat_interleave, ref_repeat_interleave, decomp_repeat_interleave)),
      by_parts(comp("aten.triu.default", "triu(Tensor self, int diagonal=0) -> Tensor", kAten, infer_tri<true>, ref_tri<true>, decomp_tri<true>)),
      by_parts(comp("aten.tril.default", "tril(Tensor self, int diagonal=0) -> Tensor", kAten, infer_tri<false>, ref_tri<false>, decomp_tri<false>)),
      comp("aten.reshape_as.default", "reshape_as(Tensor(a) self, Tensor other) -> Tensor(a)", kAten, infer_by_decomp, nullptr,
           decomp_as_shape<0>),
      comp("aten.view_as.default", "view_as(Tensor(a) self, Tensor other) -> Tensor(a)", kAten, infer_by_decomp, nullptr,
           decomp_as_shape<1>),
      comp("aten.expand_as.default", "expand_as(Tensor(a) self, Tensor other) -> Tensor(a)", kAten, infer_by_decomp, nullptr,
           decomp_as_shape<2>),
      comp("aten.type_as.default", "type_as(Tensor self, Tensor other) -> Tensor", kAten, infer_by_decomp, nullptr, decomp_type_as),
      // Ops the model zoo met (issue 33)
      comp("aten.swapaxes.default", "swapaxes(Tensor(a) self, int axis0, int axis1) -> Tensor(a)", kAten, infer_transpose, nullptr,
           decomp_swapaxes),
      comp("aten.swapdims.default", "swapdims(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", kAten, infer_transpose, nullptr,
           decomp_swapaxes),
      by_parts(comp("aten.roll.default", "roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor", kAten, infer_roll, ref_roll,
                    decomp_roll, d_roll)),
      by_parts(comp("aten.slice_backward.default",
                    "slice_backward(Tensor grad_output, SymInt[] input_sizes, int dim, SymInt start, SymInt end, SymInt step) -> Tensor", kAten,
                    infer_slice_backward, ref_slice_backward, decomp_slice_backward, d_slice_backward)),
      // Identities
      by_parts({.name = "aten.clone.default", .schema = "clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor",
                .kind = OpKind::pointwise, .levels = kCore, .math = Math::identity, .decompose = decomp_identity,
                .derivative = d_identity}),
      comp("aten.detach.default", "detach(Tensor(a) self) -> Tensor(a)", kAten, same_as<0>, nullptr, decomp_identity),
      comp("aten.alias.default", "alias(Tensor(a) self) -> Tensor(a)", kCore, same_as<0>, nullptr, decomp_identity, d_identity),
      comp("aten.dropout.default", "dropout(Tensor input, float p, bool train) -> Tensor", kAten, same_as<0>, nullptr, decomp_dropout),
  };
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
