// Ops that move elements between several tensors: split and split_with_sizes (one input, several
// outputs), cat (several inputs; a library kernel), broadcast_tensors, and the gathers embedding
// and gather (library kernels, with reference kernels of their own).
#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "ops/rule_helpers.h"

namespace ls {
namespace {

using namespace rules;

// ---------------------------------------------------------------------------------------------
// split
// ---------------------------------------------------------------------------------------------

std::vector<int64_t> split_sizes(const OpDef& op, const Shape& in, const std::vector<Arg>& a, int64_t& dim) {
  dim = wrap_dim(op, a[2].i, static_cast<int64_t>(in.size()));
  std::vector<int64_t> sizes;
  if (op.name == "aten.split.Tensor") {
    const int64_t s = a[1].i;
    if (s <= 0) bad(op, "split_size must be positive");
    for (int64_t o = 0; o < in[dim]; o += s) sizes.push_back(std::min(s, in[dim] - o));
  } else {
    sizes = a[1].ints();
    if (std::accumulate(sizes.begin(), sizes.end(), int64_t(0)) != in[dim])
      bad(op, "split sizes add up to " + std::to_string(std::accumulate(sizes.begin(), sizes.end(), int64_t(0))) +
                  " but the dimension has " + std::to_string(in[dim]));
  }
  return sizes;
}
std::vector<TensorMeta> infer_split(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& in = meta_of(g, a[0]);
  int64_t dim;
  std::vector<TensorMeta> outs;
  for (int64_t s : split_sizes(op, in.shape, a, dim)) {
    Shape sh = in.shape;
    sh[dim] = s;
    outs.push_back(like(in, in.dtype, sh));
  }
  return outs;
}
std::vector<Tensor> ref_split(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  int64_t dim;
  const auto sizes = split_sizes(op, in[0].shape(), a, dim);
  std::vector<Tensor> r;
  int64_t off = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    Tensor t(outs[k].dtype, outs[k].shape);
    const Shape in_st = contiguous_strides(in[0].shape());
    for (int64_t i = 0; i < t.numel(); ++i) {
      Shape p = unravel(i, t.shape());
      p[dim] += off;
      int64_t o = 0;
      for (size_t d = 0; d < p.size(); ++d) o += p[d] * in_st[d];
      t.set(i, in[0].get(o));
    }
    off += sizes[k];
    r.push_back(t);
  }
  return r;
}
std::vector<Arg> decomp_split(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  int64_t dim;
  const Shape in = b.meta(a[0]).shape;
  const auto sizes = split_sizes(op, in, a, dim);
  std::vector<Arg> outs;
  if (op.name == "aten.split.Tensor") {
    Arg s = b.call("aten.split_with_sizes.default", {a[0], Arg::of_ints(sizes), Arg::of_int(dim)});
    for (size_t k = 0; k < sizes.size(); ++k) outs.push_back(b.get(s, static_cast<int>(k)));
    return outs;
  }
  int64_t off = 0;
  for (int64_t s : sizes) {  // split_with_sizes -> prims.slice per piece
    std::vector<int64_t> st(in.size(), 0), lim = in;
    st[dim] = off;
    lim[dim] = off + s;
    outs.push_back(b.call("prims.slice.default", {a[0], Arg::of_ints(st), Arg::of_ints(lim), Arg::none()}));
    off += s;
  }
  return outs;
}

// split: the pieces' gradients side by side (zeros for a piece without one).
Args d_split(DerivCtx& c) {
  const Shape& in = shape_of(c, c.args[0]);
  const int64_t dim = wrap_dim(c.op, c.args[2].i, static_cast<int64_t>(in.size()));
  Arg parts;
  parts.kind = Arg::Kind::list;
  for (size_t i = 0; i < c.grads.size(); ++i)
    parts.list.push_back(c.grads[i].is_none() ? zeros(c, shape_of(c, c.out(static_cast<int>(i))), c.b.meta(c.args[0]).dtype)
                                              : c.grads[i]);
  return one(parts.list.size() == 1 ? parts.list[0] : call(c, "aten.cat.default", {parts, Arg::of_int(dim)}), 3);
}

// unbind: one select per index of the dimension (torch._refs: the dimension's slices, squeezed);
// chunk: split.Tensor with pieces of ceil(size / chunks) (an empty dimension: `chunks` empty pieces),
// as PyTorch's chunk does. Both return Tensor[] as split does; their reference is their decomposition.
std::vector<Arg> decomp_unbind(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape in = b.meta(a[0]).shape;
  if (in.empty()) bad(op, "dimension specified as 0 but tensor has no dimensions");
  const int64_t dim = wrap_dim(op, a[1].i, static_cast<int64_t>(in.size()));
  std::vector<Arg> outs;
  for (int64_t i = 0; i < in[dim]; ++i) outs.push_back(b.call("aten.select.int", {a[0], Arg::of_int(dim), Arg::of_int(i)}));
  return outs;
}
std::vector<Arg> decomp_chunk(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape in = b.meta(a[0]).shape;
  if (a[1].i <= 0) bad(op, "chunk expects `chunks` to be greater than 0, got: " + std::to_string(a[1].i));
  if (in.empty()) bad(op, "chunk expects at least a 1-dimensional tensor");
  const int64_t dim = wrap_dim(op, a[2].i, static_cast<int64_t>(in.size()));
  const int64_t chunks = a[1].i, size = in[dim];
  Arg s = size == 0 ? b.call("aten.split_with_sizes.default", {a[0], Arg::of_ints(std::vector<int64_t>(chunks, 0)), Arg::of_int(dim)})
                    : b.call("aten.split.Tensor", {a[0], Arg::of_int((size + chunks - 1) / chunks), Arg::of_int(dim)});
  const int64_t n = static_cast<int64_t>(b.graph().nodes.at(s.node).outs.size());
  std::vector<Arg> outs;
  for (int64_t k = 0; k < n; ++k) outs.push_back(b.get(s, static_cast<int>(k)));
  return outs;
}

// ---------------------------------------------------------------------------------------------
// cat, broadcast_tensors
// ---------------------------------------------------------------------------------------------

// A 1-D empty tensor takes no part in a cat, whatever the others' shapes (PyTorch's legacy rule).
bool skipped_in_cat(const Shape& s) { return s.size() == 1 && s[0] == 0; }
std::vector<TensorMeta> infer_cat(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  if (a[0].list.empty()) bad(op, "needs at least one tensor");
  size_t first = 0;
  while (first + 1 < a[0].list.size() && skipped_in_cat(meta_of(g, a[0].list[first]).shape)) ++first;
  const TensorMeta& f = meta_of(g, a[0].list[first]);
  if (f.shape.empty()) bad(op, "zero-dimensional tensor (at position 0) cannot be concatenated");
  const int64_t d = wrap_dim(op, a[1].i, static_cast<int64_t>(f.shape.size()));
  Shape out = f.shape;
  out[d] = 0;
  for (const Arg& t : a[0].list) {
    const Shape& s = meta_of(g, t).shape;
    if (skipped_in_cat(s) && !skipped_in_cat(f.shape)) continue;
    if (s.size() != f.shape.size())
      bad(op, "tensors must have the same number of dimensions: got " + std::to_string(f.shape.size()) + " and " + std::to_string(s.size()));
    for (size_t i = 0; i < s.size(); ++i)
      if (static_cast<int64_t>(i) != d && s[i] != f.shape[i]) bad(op, "sizes differ outside dimension " + std::to_string(d));
    out[d] += s[d];
  }
  return {like(f, f.dtype, out)};
}
std::vector<Tensor> ref_cat(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  Tensor y(outs[0].dtype, outs[0].shape);
  const int64_t d = wrap_dim(op, a[1].i, y.dim());
  const Shape ys = contiguous_strides(y.shape());
  int64_t off = 0;
  for (const Tensor& x : in.lists[0]) {
    if (x.numel() == 0) continue;
    for (int64_t i = 0; i < x.numel(); ++i) {
      Shape p = unravel(i, x.shape());
      p[d] += off;
      int64_t o = 0;
      for (size_t k = 0; k < p.size(); ++k) o += p[k] * ys[k];
      if (dtype_is_complex(y.dtype())) y.set_complex(o, x.get_complex(i));  // the FFTs' gradients pad complex values
      else y.set(o, x.get(i));
    }
    off += x.shape()[d];
  }
  return {y};
}

Args d_cat(DerivCtx& c) {
  const Arg& list = c.args[0];
  const int64_t rank = static_cast<int64_t>(shape_of(c, c.out(0)).size());
  const int64_t dim = wrap_dim(c.op, c.args[1].i, rank);
  Arg grads;
  grads.kind = Arg::Kind::list;
  int64_t at = 0;
  for (const Arg& x : list.list) {
    if (skipped_in_cat(shape_of(c, x)) && rank != 1) {  // took no part: no gradient to give
      grads.list.push_back(zeros(c, {0}, c.b.meta(x).dtype));
      continue;
    }
    const int64_t n = shape_of(c, x)[dim];
    grads.list.push_back(call(c, "aten.slice.Tensor", {c.grads[0], Arg::of_int(dim), Arg::of_int(at), Arg::of_int(at + n), Arg::of_int(1)}));
    at += n;
  }
  return {grads, kNone};
}

std::vector<TensorMeta> infer_broadcast_tensors(const Graph& g, const OpDef&, const std::vector<Arg>& a) {
  Shape s;
  for (const Arg& t : a[0].list) s = broadcast_shapes(s, meta_of(g, t).shape);
  std::vector<TensorMeta> outs;
  for (const Arg& t : a[0].list) outs.push_back(like(meta_of(g, t), meta_of(g, t).dtype, s));
  return outs;
}
std::vector<Tensor> ref_broadcast_tensors(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  std::vector<Tensor> r;
  for (size_t k = 0; k < a[0].list.size(); ++k) {
    const Tensor& x = in.lists[0][k];
    Tensor y(outs[k].dtype, outs[k].shape);
    const size_t off = y.shape().size() - x.shape().size();
    const Shape xs = contiguous_strides(x.shape());
    for (int64_t i = 0; i < y.numel(); ++i) {
      const Shape p = unravel(i, y.shape());
      int64_t o = 0;
      for (size_t d = 0; d < x.shape().size(); ++d) o += (x.shape()[d] == 1 ? 0 : p[off + d]) * xs[d];
      y.set(i, x.get(o));
    }
    r.push_back(y);
  }
  return r;
}
std::vector<Arg> decomp_broadcast_tensors(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const auto outs = infer_broadcast_tensors(b.graph(), op, a);
  std::vector<Arg> r;
  for (size_t k = 0; k < outs.size(); ++k) r.push_back(b.call("aten.expand.default", {a[0].list[k], Arg::of_ints(outs[k].shape)}));
  return r;
}

// ---------------------------------------------------------------------------------------------
// Gathers
// ---------------------------------------------------------------------------------------------

std::vector<TensorMeta> infer_embedding(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta &w = meta_of(g, a[0]), &idx = meta_of(g, a[1]);
  if (w.shape.size() != 2) bad(op, "weight must be 2-D");
  if (dtype_is_float(idx.dtype)) bad(op, "indices must be integers");
  Shape out = idx.shape;
  out.push_back(w.shape[1]);
  return {like(w, w.dtype, out)};
}
std::vector<Tensor> ref_embedding(const OpDef& op, const std::vector<Arg>&, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  Tensor y(outs[0].dtype, outs[0].shape);
  const int64_t D = in[0].shape()[1], V = in[0].shape()[0];
  for (int64_t i = 0; i < in[1].numel(); ++i) {
    const int64_t r = static_cast<int64_t>(in[1].get(i));
    if (r < 0 || r >= V) bad(op, "index " + std::to_string(r) + " is out of range for " + std::to_string(V) + " rows");
    for (int64_t j = 0; j < D; ++j) y.set(i * D + j, in[0].get(r * D + j));
  }
  return {y};
}
std::vector<TensorMeta> infer_gather(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta &x = meta_of(g, a[0]), &idx = meta_of(g, a[2]);
  wrap_dim(op, a[1].i, static_cast<int64_t>(x.shape.size()));
  // An empty index gives an empty result, unchecked (PyTorch's gather meta); a 0-d tensor counts as 1-d.
  if (numel_of(idx.shape) != 0 && std::max<size_t>(idx.shape.size(), 1) != std::max<size_t>(x.shape.size(), 1))
    bad(op, "index must have the input's rank");
  return {like(x, x.dtype, idx.shape)};
}
// embedding: the weight's gradient, rows summed where indices repeat (derivatives.yaml's
// embedding_dense_backward); the indices have none.
Args d_embedding(DerivCtx& c) {
  Args r(c.op.params.size(), kNone);
  if (wants(c, 0))
    r[0] = call(c, "aten.embedding_dense_backward.default",
                {c.grads[0], c.args[1], Arg::of_int(shape_of(c, c.args[0]).at(0)), c.args[2], c.args[3]});
  return r;
}
// gather: the gradient added back at the gathered positions (scatter_add into zeros).
Args d_gather(DerivCtx& c) {
  const TensorMeta x = c.b.meta(c.args[0]);
  if (numel_of(c.b.meta(c.args[2]).shape) == 0) return one(zeros(c, x.shape, x.dtype), c.op.params.size());  // nothing gathered
  return one(call(c, "aten.scatter_add.default", {zeros(c, x.shape, x.dtype), c.args[1], c.args[2], c.grads[0]}), c.op.params.size());
}
std::vector<Tensor> ref_gather(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  Tensor y(outs[0].dtype, outs[0].shape);
  const int64_t d = wrap_dim(op, a[1].i, in[0].dim());
  if (in[0].dim() == 0) {  // a 0-d source: index 0 only
    for (int64_t i = 0; i < y.numel(); ++i) {
      if (in[2].get(i) != 0) bad(op, "index " + std::to_string(static_cast<int64_t>(in[2].get(i))) + " is out of range");
      y.set(i, in[0].get(0));
    }
    return {y};
  }
  const Shape xs = contiguous_strides(in[0].shape());
  for (int64_t i = 0; i < y.numel(); ++i) {
    Shape p = unravel(i, y.shape());
    const int64_t j = static_cast<int64_t>(in[2].get(i));
    if (j < 0 || j >= in[0].shape()[d]) bad(op, "index " + std::to_string(j) + " is out of range");
    p[d] = j;
    int64_t o = 0;
    for (size_t k = 0; k < p.size(); ++k) o += p[k] * xs[k];
    y.set(i, in[0].get(o));
  }
  return {y};
}

}  // namespace

// stack(tensors, dim): each unsqueezed at dim, then cat (torch._refs' stack).
std::vector<TensorMeta> infer_stack(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  if (a[0].list.empty()) bad(op, "stack expects a non-empty TensorList");
  const TensorMeta& first = meta_of(g, a[0].list[0]);
  for (const Arg& t : a[0].list)
    if (meta_of(g, t).shape != first.shape)
      bad(op, "stack expects each tensor to be equal size, but got " + shape_str(first.shape) + " and " + shape_str(meta_of(g, t).shape));
  const int64_t r = static_cast<int64_t>(first.shape.size());
  int64_t d = a[1].i < 0 ? a[1].i + r + 1 : a[1].i;
  if (d < 0 || d > r) bad(op, "dimension " + std::to_string(a[1].i) + " is out of range for rank " + std::to_string(r + 1));
  Shape s = first.shape;
  s.insert(s.begin() + d, static_cast<int64_t>(a[0].list.size()));
  return {like(first, s)};
}
Arg decomp_stack(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const int64_t r = static_cast<int64_t>(b.meta(a[0].list.at(0)).shape.size());
  const int64_t d = a[1].i < 0 ? a[1].i + r + 1 : a[1].i;
  Arg parts;
  parts.kind = Arg::Kind::list;
  for (const Arg& t : a[0].list) parts.list.push_back(b.call("aten.unsqueeze.default", {t, Arg::of_int(d)}));
  return b.call("aten.cat.default", {parts, Arg::of_int(d)});
}

void add_shape_ops(std::vector<OpDef>& t) {
  const std::vector<OpDef> ops = {
      by_parts(comp("aten.stack.default", "stack(Tensor[] tensors, int dim=0) -> Tensor", kAten, infer_stack, nullptr, single<decomp_stack>)),
      by_parts(comp("aten.split.Tensor", "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]", kAten, infer_split,
                    ref_split, decomp_split, d_split)),
      by_parts(comp("aten.split_with_sizes.default", "split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]",
                    kCore, infer_split, ref_split, decomp_split, d_split)),
      comp("aten.unbind.int", "unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]", kAten, infer_by_decomp, nullptr,
           decomp_unbind),
      comp("aten.chunk.default", "chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]", kAten, infer_by_decomp, nullptr,
           decomp_chunk),
      by_parts(ext("aten.cat.default", "cat(Tensor[] tensors, int dim=0) -> Tensor", kCore, infer_cat, ref_cat, nullptr, d_cat)),
      comp("aten.broadcast_tensors.default", "broadcast_tensors(Tensor[] tensors) -> Tensor[]", kAten, infer_broadcast_tensors,
           ref_broadcast_tensors, decomp_broadcast_tensors),
      by_parts(ext("aten.embedding.default",
                   "embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, bool sparse=False) -> Tensor",
                   kCore, infer_embedding, ref_embedding, nullptr, d_embedding)),
      by_parts(ext("aten.gather.default", "gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor", kCore, infer_gather,
                   ref_gather, nullptr, d_gather)),
  };
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
