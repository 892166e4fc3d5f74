// Padding and resampling: constant_pad_nd, the reflection and replication pads, upsample_nearest2d, upsample_bilinear2d, grid_sampler_2d, col2im.
//
// What each compiles to. PyTorch's decompositions of the reflection and replication pads and of
// the upsamplings gather through aten._unsafe_index with indices computed from arange; here they
// decompose without an index tensor, into ops that lower to generated code:
//   - constant_pad_nd: slices (negative pads) and a cat with full() blocks (positive pads);
//   - reflection/replication pads and their backward ops: along each padded dimension the source
//     index of every output position (torch._decomp's formulas) splits into runs that ascend
//     (a slice), descend (a slice flipped) or repeat (a slice expanded); the output is the cat of
//     the runs, the gradient the sum of each run's gradient padded into place;
//   - upsample_nearest2d: an integer factor is a view (unsqueeze, expand, reshape) and its
//     gradient a sum over the repeats; other sizes, and upsample_bilinear2d, are a product with a
//     constant [out, in] matrix along each spatial dimension (its rows hold the interpolation
//     weights of UpSample.h's source-index formulas), which mm runs.
// grid_sampler_2d decomposes as torch._decomp writes it, gathering through aten.index.Tensor
// (generated code: indirect loads); training differentiates that decomposition (index_put with
// accumulate). grid_sampler_2d_backward (in graphs that call it) decomposes as its reference
// kernel computes it, into the same gathers and index_put. col2im (a scatter) is a library
// kernel (its reference kernel).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

#include "ops/rule_helpers.h"

namespace ls {
namespace {

using namespace rules;

// ---------------------------------------------------------------------------------------------
// Building blocks of the index-free decompositions
// ---------------------------------------------------------------------------------------------

Arg slice(GraphBuilder& b, const Arg& x, int64_t d, int64_t start, int64_t end, int64_t step = 1) {
  return b.call("aten.slice.Tensor", {x, Arg::of_int(d), Arg::of_int(start), Arg::of_int(end), Arg::of_int(step)});
}
Arg reshape(GraphBuilder& b, const Arg& x, const Shape& s) { return b.call("aten.view.default", {x, Arg::of_ints(s)}); }
Arg cat(GraphBuilder& b, const std::vector<Arg>& parts, int64_t d) {
  if (parts.size() == 1) return parts[0];
  Arg l;
  l.kind = Arg::Kind::list;
  l.list = parts;
  return b.call("aten.cat.default", {l, Arg::of_int(d)});
}
// x reversed along d: aten.flip where the table has it as a view, else a cat of one-wide slices.
Arg flip(GraphBuilder& b, const Arg& x, int64_t d) {
  const int64_t n = b.meta(x).shape[d];
  if (n <= 1) return x;
  if (const OpDef* f = find_op("aten.flip.default"); f && f->kind == OpKind::view) return b.call(*f, {x, Arg::of_ints({d})});
  std::vector<Arg> parts;
  for (int64_t i = n; i-- > 0;) parts.push_back(slice(b, x, d, i, i + 1));
  return cat(b, parts, d);
}
// x placed at [before, before + size) of a dimension of size before + size + after, zeros elsewhere.
Arg place(GraphBuilder& b, const Arg& x, int64_t d, int64_t before, int64_t after) {
  if (before == 0 && after == 0) return x;
  const int64_t r = static_cast<int64_t>(b.meta(x).shape.size());
  std::vector<int64_t> pad(static_cast<size_t>(2 * (r - d)), 0);
  pad[2 * (r - 1 - d)] = before;
  pad[2 * (r - 1 - d) + 1] = after;
  return b.call("aten.constant_pad_nd.default", {x, Arg::of_ints(pad), Arg::of_int(0)});
}

// Runs of a source-index list: consecutive positions whose index ascends by one, descends by one
// or stays (a length-one run ascends).
struct Run {
  int64_t first, length, step;  // source index of the run's first position; step +1, -1 or 0
};
std::vector<Run> runs_of(const std::vector<int64_t>& src) {
  std::vector<Run> runs;
  for (size_t k = 0; k < src.size();) {
    int64_t step = k + 1 < src.size() ? src[k + 1] - src[k] : 1;
    if (step < -1 || step > 1) step = 1;
    size_t e = k + 1;
    while (e < src.size() && src[e] - src[e - 1] == step) ++e;
    runs.push_back({src[k], static_cast<int64_t>(e - k), e == k + 1 ? 1 : step});
    k = e;
  }
  return runs;
}
// out[.., o, ..] = x[.., src[o], ..] along d, as a cat of slices.
Arg gather_runs(GraphBuilder& b, const Arg& x, int64_t d, const std::vector<int64_t>& src) {
  std::vector<Arg> parts;
  for (const Run& r : runs_of(src)) {
    if (r.step == 1) parts.push_back(slice(b, x, d, r.first, r.first + r.length));
    else if (r.step == -1) parts.push_back(flip(b, slice(b, x, d, r.first - r.length + 1, r.first + 1), d));
    else {
      Shape s = b.meta(x).shape;
      s[d] = r.length;
      parts.push_back(b.call("aten.expand.default", {slice(b, x, d, r.first, r.first + 1), Arg::of_ints(s)}));
    }
  }
  return cat(b, parts, d);
}
// The gradient of gather_runs: g[.., o, ..] added into position src[o] of a dimension of size n.
Arg scatter_runs(GraphBuilder& b, const Arg& g, int64_t d, const std::vector<int64_t>& src, int64_t n) {
  std::optional<Arg> acc;
  int64_t at = 0;
  for (const Run& r : runs_of(src)) {
    Arg piece = slice(b, g, d, at, at + r.length);
    at += r.length;
    int64_t lo = r.first;
    if (r.step == -1) {
      piece = flip(b, piece, d);
      lo = r.first - r.length + 1;
    } else if (r.step == 0) {
      piece = b.call("aten.sum.dim_IntList", {piece, Arg::of_ints({d}), Arg::of_bool(true)});
    }
    const int64_t width = b.meta(piece).shape[d];
    piece = place(b, piece, d, lo, n - lo - width);
    acc = acc ? b.call("aten.add.Tensor", {*acc, piece}) : piece;
  }
  if (!acc) {  // an empty output: the gradient is zero
    Shape s = b.meta(g).shape;
    s[d] = n;
    return b.call("aten.full.default", {Arg::of_ints(s), Arg::of_int(0)}, {{"dtype", Arg::of_string(std::string(dtype_torch(b.meta(g).dtype)))}});
  }
  return *acc;
}

// A constant matrix [rows, cols] of the given dtype, from a row-major list.
Arg matrix(GraphBuilder& b, const std::vector<double>& v, int64_t rows, int64_t cols, DType t) {
  Tensor m(t, {rows, cols});
  for (int64_t i = 0; i < m.numel(); ++i) m.set(i, v[static_cast<size_t>(i)]);
  // A name no weight of the graph has yet: a decomposition sweep copies the weights first and the
  // placeholders in node order, so a constant named like one further down would take its value.
  std::string name;
  for (int k = 0; name.empty() || b.graph().weights.count(name) || b.taken(name); ++k) name = "interp_matrix" + std::to_string(k);
  return b.constant(name, m);
}
// y[.., i, ..] = sum_j w[i][j] x[.., j, ..] along d: x moved to the last dimension, flattened to
// rows, multiplied by w transposed (a constant), and moved back.
Arg contract(GraphBuilder& b, const Arg& x, int64_t d, const std::vector<double>& w, int64_t rows) {
  const Shape s = b.meta(x).shape;
  const int64_t r = static_cast<int64_t>(s.size()), cols = s[d];
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < r; ++i)
    if (i != d) perm.push_back(i);
  perm.push_back(d);
  Shape moved;
  for (int64_t p : perm) moved.push_back(s[p]);
  const Arg xm = d == r - 1 ? x : b.call("aten.permute.default", {x, Arg::of_ints(perm)});
  const Arg x2 = b.call("aten.reshape.default", {xm, Arg::of_ints({numel_of(s) / std::max<int64_t>(cols, 1), cols})});
  std::vector<double> wt(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) wt[static_cast<size_t>(j * rows + i)] = w[static_cast<size_t>(i * cols + j)];
  const Arg y2 = b.call("aten.mm.default", {x2, matrix(b, wt, cols, rows, b.meta(x).dtype)});
  moved.back() = rows;
  const Arg y = reshape(b, y2, moved);
  if (d == r - 1) return y;
  std::vector<int64_t> inv(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) inv[perm[i]] = i;
  return b.call("aten.permute.default", {y, Arg::of_ints(inv)});
}

// ---------------------------------------------------------------------------------------------
// constant_pad_nd(self, pad, value): pairs of (before, after) from the last dimension backwards;
// negative pads crop.
// ---------------------------------------------------------------------------------------------

std::vector<TensorMeta> infer_constant_pad(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  const auto pad = a[1].ints();
  const int64_t r = static_cast<int64_t>(x.shape.size());
  if (pad.size() % 2) bad(op, "Length of pad must be even but instead it equals " + std::to_string(pad.size()));
  if (static_cast<int64_t>(pad.size()) > 2 * r)
    bad(op, "Length of pad should be no more than twice the number of dimensions of the input. Pad length is " +
                std::to_string(pad.size()) + " while the input has " + std::to_string(r) + " dimensions.");
  if (!a[2].is_number()) bad(op, "value must be a number");
  Shape out = x.shape;
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    const int64_t d = r - 1 - static_cast<int64_t>(i);
    if (__builtin_add_overflow(x.shape[d], pad[2 * i], &out[d]) || __builtin_add_overflow(out[d], pad[2 * i + 1], &out[d]))
      bad(op, "padding " + shape_str(pad) + " makes dimension " + std::to_string(d) + " too large to count");
    if (out[d] < 0)
      bad(op, "The input size " + std::to_string(x.shape[d]) + ", plus negative padding " + std::to_string(pad[2 * i]) + " and " +
                  std::to_string(pad[2 * i + 1]) + " resulted in a negative output size, which is invalid. Check dimension " +
                  std::to_string(d) + " of your input.");
  }
  return {like(x, out)};
}
std::vector<Tensor> ref_constant_pad(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  const auto pad = a[1].ints();
  const int64_t r = x.dim();
  Tensor y(outs[0].dtype, outs[0].shape);
  const Shape xs = contiguous_strides(x.shape());
  for (int64_t i = 0; i < y.numel(); ++i) {
    Shape p = unravel(i, y.shape());
    bool inside = true;
    int64_t off = 0;
    for (int64_t d = 0; d < r; ++d) {
      const int64_t k = r - 1 - d;  // the pair of dimension d
      const int64_t src = p[d] - (k < static_cast<int64_t>(pad.size()) / 2 ? pad[2 * k] : 0);
      if (src < 0 || src >= x.shape()[d]) inside = false;
      off += src * xs[d];
    }
    y.set(i, inside ? x.get(off) : a[2].number());
  }
  return {y};
}
Arg decomp_constant_pad(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  infer_constant_pad(b.graph(), op, a);
  const auto pad = a[1].ints();
  const DType t = b.meta(a[0]).dtype;
  const int64_t r = static_cast<int64_t>(b.meta(a[0]).shape.size());
  Arg x = a[0];
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    const int64_t d = r - 1 - static_cast<int64_t>(i), lo = pad[2 * i], hi = pad[2 * i + 1];
    const int64_t n = b.meta(x).shape[d];
    if (lo < 0 || hi < 0) x = slice(b, x, d, std::max<int64_t>(-lo, 0), n - std::max<int64_t>(-hi, 0));
    auto block = [&](int64_t w) {
      Shape s = b.meta(x).shape;
      s[d] = w;
      return b.call("aten.full.default", {Arg::of_ints(s), a[2]}, {{"dtype", Arg::of_string(std::string(dtype_torch(t)))}});
    };
    std::vector<Arg> parts;
    if (lo > 0) parts.push_back(block(lo));
    parts.push_back(x);
    if (hi > 0) parts.push_back(block(hi));
    x = cat(b, parts, d);
  }
  return x;
}
// derivatives.yaml: constant_pad_nd_backward, the pad with every amount negated.
Args d_constant_pad(DerivCtx& c) {
  std::vector<int64_t> neg;
  for (int64_t p : c.args[1].ints()) neg.push_back(-p);
  return one(call(c, "aten.constant_pad_nd.default", {c.grads[0], ints(neg), Arg::of_int(0)}), 3);
}

// ---------------------------------------------------------------------------------------------
// Reflection and replication pads (1d, 2d, 3d) and their backward ops
// ---------------------------------------------------------------------------------------------

bool is_reflection(const OpDef& op) { return op.base_name().substr(0, 10) == "reflection"; }
int64_t pad_dims(const OpDef& op) { return op.base_name()[op.base_name().find("pad") + 3] - '0'; }

// torch._decomp's index of each output position along one dimension: with i = o - left,
// reflection (n-1) - |(n-1) - |i||, replication clamp(i, 0, n-1).
std::vector<int64_t> pad_source(bool reflect, int64_t n, int64_t left, int64_t right) {
  std::vector<int64_t> src;
  for (int64_t i = -left; i < n + right; ++i)
    src.push_back(reflect ? (n - 1) - std::abs((n - 1) - std::abs(i)) : std::clamp<int64_t>(i, 0, n - 1));
  return src;
}

// The input's shape checked against the padding; returns the padded shape. `x` is the input
// (forward) or self (backward).
Shape padded_shape(const OpDef& op, const Shape& x, const std::vector<int64_t>& pad) {
  const int64_t k = pad_dims(op), r = static_cast<int64_t>(x.size());
  if (static_cast<int64_t>(pad.size()) != 2 * k) bad(op, "padding must have " + std::to_string(2 * k) + " values, got " + std::to_string(pad.size()));
  if (r != k + 1 && r != k + 2)
    bad(op, "Expected " + std::to_string(k + 1) + "D or " + std::to_string(k + 2) + "D (batch mode) tensor for input, but got: " + shape_str(x));
  Shape out = x;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t d = r - 1 - i, lo = pad[2 * i], hi = pad[2 * i + 1], n = x[d];
    if (n <= 0) bad(op, "spatial dimension " + std::to_string(d) + " of input " + shape_str(x) + " is empty");
    if (is_reflection(op) && (lo >= n || hi >= n))
      bad(op, "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (" +
                  std::to_string(lo) + ", " + std::to_string(hi) + ") at dimension " + std::to_string(d) + " of input " + shape_str(x));
    out[d] = n + lo + hi;
    if (out[d] < 1)
      bad(op, "input " + shape_str(x) + " is too small for padding (" + std::to_string(lo) + ", " + std::to_string(hi) +
                  "): calculated output size " + std::to_string(out[d]) + " at dimension " + std::to_string(d));
  }
  return out;
}

std::vector<TensorMeta> infer_pad(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  return {like(x, padded_shape(op, x.shape, a[1].ints()))};
}
// Backward: grad_output of the padded shape, the gradient of self's.
std::vector<TensorMeta> infer_pad_backward(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta &go = meta_of(g, a[0]), &x = meta_of(g, a[1]);
  const Shape want = padded_shape(op, x.shape, a[2].ints());
  if (go.shape != want) bad(op, "grad_output has shape " + shape_str(go.shape) + ", expected " + shape_str(want));
  return {like(go, x.shape)};
}

// For every position of the padded tensor, the offset of the element it copies.
std::vector<int64_t> pad_offsets(bool reflect, const Shape& x, const Shape& out, const std::vector<int64_t>& pad) {
  const int64_t r = static_cast<int64_t>(x.size()), k = static_cast<int64_t>(pad.size()) / 2;
  std::vector<std::vector<int64_t>> src(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d) {
    const int64_t i = r - 1 - d;
    if (i < k) src[d] = pad_source(reflect, x[d], pad[2 * i], pad[2 * i + 1]);
    else {
      src[d].resize(static_cast<size_t>(x[d]));
      std::iota(src[d].begin(), src[d].end(), 0);
    }
  }
  const Shape xs = contiguous_strides(x);
  std::vector<int64_t> offs(static_cast<size_t>(numel_of(out)));
  for (int64_t o = 0; o < numel_of(out); ++o) {
    const Shape p = unravel(o, out);
    int64_t off = 0;
    for (int64_t d = 0; d < r; ++d) off += src[d][p[d]] * xs[d];
    offs[o] = off;
  }
  return offs;
}
std::vector<Tensor> ref_pad(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  Tensor y(outs[0].dtype, outs[0].shape);
  const auto offs = pad_offsets(is_reflection(op), in[0].shape(), y.shape(), a[1].ints());
  for (int64_t o = 0; o < y.numel(); ++o) y.set(o, in[0].get(offs[o]));
  return {y};
}
std::vector<Tensor> ref_pad_backward(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const auto offs = pad_offsets(is_reflection(op), in[1].shape(), in[0].shape(), a[2].ints());
  std::vector<double> acc(static_cast<size_t>(numel_of(outs[0].shape)), 0.0);
  for (int64_t o = 0; o < in[0].numel(); ++o) acc[offs[o]] += in[0].get(o);
  Tensor gx(outs[0].dtype, outs[0].shape);
  for (int64_t i = 0; i < gx.numel(); ++i) gx.set(i, acc[i]);
  return {gx};
}
Arg decomp_pad(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape x = b.meta(a[0]).shape;
  padded_shape(op, x, a[1].ints());
  const auto pad = a[1].ints();
  const int64_t r = static_cast<int64_t>(x.size());
  Arg y = a[0];
  for (int64_t i = 0; i < static_cast<int64_t>(pad.size()) / 2; ++i) {
    const int64_t d = r - 1 - i;
    const auto src = pad_source(is_reflection(op), x[d], pad[2 * i], pad[2 * i + 1]);
    bool identity = static_cast<int64_t>(src.size()) == x[d];
    for (size_t o = 0; identity && o < src.size(); ++o) identity = src[o] == static_cast<int64_t>(o);
    if (!identity) y = gather_runs(b, y, d, src);
  }
  return y;
}
Arg decomp_pad_backward(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape x = b.meta(a[1]).shape;
  padded_shape(op, x, a[2].ints());
  const auto pad = a[2].ints();
  const int64_t r = static_cast<int64_t>(x.size());
  Arg g = a[0];
  for (int64_t i = 0; i < static_cast<int64_t>(pad.size()) / 2; ++i) {
    const int64_t d = r - 1 - i;
    const auto src = pad_source(is_reflection(op), x[d], pad[2 * i], pad[2 * i + 1]);
    bool identity = static_cast<int64_t>(src.size()) == x[d];
    for (size_t o = 0; identity && o < src.size(); ++o) identity = src[o] == static_cast<int64_t>(o);
    if (!identity) g = scatter_runs(b, g, d, src, x[d]);
  }
  return g;
}
// derivatives.yaml: reflection_padNd_backward / replication_padNd_backward(grad, self, padding).
Args d_pad(DerivCtx& c) {
  const std::string backward = c.op.name.substr(0, c.op.name.rfind('.')) + "_backward.default";
  return one(c.b.call(backward, {c.grads[0], c.args[0], c.args[1]}), 2);
}

// ---------------------------------------------------------------------------------------------
// upsample_nearest2d, upsample_bilinear2d (.vec, .default) and their backward ops
// ---------------------------------------------------------------------------------------------

struct Upsample {
  int64_t in_h, in_w, out_h, out_w;
  std::optional<double> scale_h, scale_w;
  bool align_corners = false;
};
bool is_bilinear(const OpDef& op) { return op.base_name().find("bilinear") != std::string_view::npos; }
std::optional<double> opt_real(const Arg& a) { return a.is_none() ? std::nullopt : std::optional<double>(a.number()); }

void check_sizes(const OpDef& op, const Upsample& u) {
  if (u.in_h <= 0 || u.in_w <= 0 || u.out_h <= 0 || u.out_w <= 0)
    bad(op, "Input and output sizes should be greater than 0, but got input (H: " + std::to_string(u.in_h) + ", W: " +
                std::to_string(u.in_w) + ") output (H: " + std::to_string(u.out_h) + ", W: " + std::to_string(u.out_w) + ")");
}
// The forward ops (.vec: output_size or scale_factors, exactly one; .default: output_size and the
// optional scales the index formulas use).
Upsample upsample_spec(const OpDef& op, const Shape& x, const std::vector<Arg>& a) {
  if (x.size() != 4) bad(op, "Non-empty 4D data tensor expected but got a tensor with sizes " + shape_str(x));
  Upsample u{x[2], x[3], 0, 0, std::nullopt, std::nullopt, false};
  const bool vec = op.name.size() > 4 && op.name.substr(op.name.size() - 4) == ".vec";
  const bool bil = is_bilinear(op);
  if (bil) u.align_corners = a[2].b;
  if (vec) {
    const Arg& size = a[1];
    const Arg& scales = a[bil ? 3 : 2];
    if (size.is_none() == scales.is_none()) bad(op, "Must specify exactly one of output_size and scale_factors");
    if (!size.is_none()) {
      const auto s = size.ints();
      if (s.size() != 2) bad(op, "output_size must have 2 values, got " + std::to_string(s.size()));
      u.out_h = s[0];
      u.out_w = s[1];
    } else {
      std::vector<double> f;
      for (const Arg& v : scales.list) f.push_back(v.number());
      if (f.size() != 2) bad(op, "scale_factors must have 2 values, got " + std::to_string(f.size()));
      u.out_h = static_cast<int64_t>(static_cast<double>(u.in_h) * f[0]);
      u.out_w = static_cast<int64_t>(static_cast<double>(u.in_w) * f[1]);
      u.scale_h = f[0];
      u.scale_w = f[1];
    }
  } else {
    const auto s = a[1].ints();
    if (s.size() != 2) bad(op, "output_size must have 2 values, got " + std::to_string(s.size()));
    u.out_h = s[0];
    u.out_w = s[1];
    u.scale_h = opt_real(a[bil ? 3 : 2]);
    u.scale_w = opt_real(a[bil ? 4 : 3]);
  }
  check_sizes(op, u);
  return u;
}
// The backward ops: grad_output, output_size, input_size, [align_corners,] scales_h, scales_w.
Upsample upsample_backward_spec(const OpDef& op, const std::vector<Arg>& a, Shape* input) {
  const auto os = a[1].ints(), is = a[2].ints();
  if (os.size() != 2 || is.size() != 4) bad(op, "output_size needs 2 values and input_size 4");
  const bool bil = is_bilinear(op);
  Upsample u{is[2], is[3], os[0], os[1], opt_real(a[bil ? 4 : 3]), opt_real(a[bil ? 5 : 4]), bil && a[3].b};
  check_sizes(op, u);
  if (input) *input = is;
  return u;
}

// UpSample.h's compute_scales_value<float> and the nearest index (nearest_idx).
float scales_value(std::optional<double> scale, int64_t in, int64_t out) {
  return scale && *scale > 0 ? static_cast<float>(1.0 / *scale) : static_cast<float>(in) / static_cast<float>(out);
}
std::vector<int64_t> nearest_source(int64_t in, int64_t out, std::optional<double> scale) {
  std::vector<int64_t> src(static_cast<size_t>(out));
  const float s = scales_value(scale, in, out);
  for (int64_t o = 0; o < out; ++o) {
    if (out == in) src[o] = o;
    else if (out == 2 * in) src[o] = o >> 1;
    else src[o] = std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * s)), in - 1);
  }
  return src;
}
// The interpolation matrix [out, in] of one dimension: UpSample.h's area_pixel_compute_scale and
// area_pixel_compute_source_index, then guard_index_and_lambda, in the op's math type (float for
// float32, double for float64; at::opmath_type).
template <typename T>
std::vector<double> linear_weights_in(int64_t in, int64_t out, bool align, std::optional<double> scale) {
  std::vector<double> w(static_cast<size_t>(out * in), 0.0);
  T s;
  if (align) s = out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0);
  else s = scale && *scale > 0 ? static_cast<T>(1.0 / *scale) : static_cast<T>(in) / static_cast<T>(out);
  for (int64_t o = 0; o < out; ++o) {
    T real = align ? s * static_cast<T>(o) : s * (static_cast<T>(o) + T(0.5)) - T(0.5);
    if (!align && real < 0) real = 0;
    const int64_t i0 = std::min(static_cast<int64_t>(std::floor(real)), in - 1);
    const T l1 = std::min(std::max(real - static_cast<T>(i0), T(0)), T(1)), l0 = T(1) - l1;
    const int64_t i1 = i0 + (i0 < in - 1 ? 1 : 0);
    w[static_cast<size_t>(o * in + i0)] += static_cast<double>(l0);
    w[static_cast<size_t>(o * in + i1)] += static_cast<double>(l1);
  }
  return w;
}
std::vector<double> linear_weights(DType t, int64_t in, int64_t out, bool align, std::optional<double> scale) {
  return t == DType::f64 ? linear_weights_in<double>(in, out, align, scale) : linear_weights_in<float>(in, out, align, scale);
}
std::vector<double> nearest_weights(int64_t in, int64_t out, std::optional<double> scale) {
  std::vector<double> w(static_cast<size_t>(out * in), 0.0);
  const auto src = nearest_source(in, out, scale);
  for (int64_t o = 0; o < out; ++o) w[static_cast<size_t>(o * in + src[o])] = 1.0;
  return w;
}
// Both dimensions' matrices.
std::pair<std::vector<double>, std::vector<double>> upsample_weights(const OpDef& op, DType t, const Upsample& u) {
  if (is_bilinear(op))
    return {linear_weights(t, u.in_h, u.out_h, u.align_corners, u.scale_h), linear_weights(t, u.in_w, u.out_w, u.align_corners, u.scale_w)};
  return {nearest_weights(u.in_h, u.out_h, u.scale_h), nearest_weights(u.in_w, u.out_w, u.scale_w)};
}

std::vector<TensorMeta> infer_upsample(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  const Upsample u = upsample_spec(op, x.shape, a);
  if (is_bilinear(op) && !dtype_is_float(x.dtype)) bad(op, "needs a floating point input, got " + std::string(dtype_torch(x.dtype)));
  return {like(x, {x.shape[0], x.shape[1], u.out_h, u.out_w})};
}
std::vector<TensorMeta> infer_upsample_backward(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& go = meta_of(g, a[0]);
  Shape input;
  const Upsample u = upsample_backward_spec(op, a, &input);
  const Shape want = {input[0], input[1], u.out_h, u.out_w};
  if (go.shape != want) bad(op, "grad_output has shape " + shape_str(go.shape) + ", expected " + shape_str(want));
  return {like(go, input)};
}
// y[n,c,i,j] = sum_{h,w} A_h[i][h] A_w[j][w] x[n,c,h,w]; the backward with the matrices transposed.
std::vector<Tensor> apply_weights(const Tensor& x, const std::vector<double>& wh, const std::vector<double>& ww, int64_t H, int64_t W,
                                  int64_t OH, int64_t OW, bool transposed, const TensorMeta& out) {
  Tensor y(out.dtype, out.shape);
  const int64_t planes = out.shape[0] * out.shape[1];
  std::vector<double> acc(static_cast<size_t>(planes * (transposed ? H * W : OH * OW)), 0.0);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OW; ++j)
        for (int64_t h = 0; h < H; ++h) {
          const double a = wh[static_cast<size_t>(i * H + h)];
          if (a == 0) continue;
          for (int64_t w = 0; w < W; ++w) {
            const double c = ww[static_cast<size_t>(j * W + w)];
            if (c == 0) continue;
            if (transposed) acc[static_cast<size_t>((p * H + h) * W + w)] += a * c * x.get((p * OH + i) * OW + j);
            else acc[static_cast<size_t>((p * OH + i) * OW + j)] += a * c * x.get((p * H + h) * W + w);
          }
        }
  for (int64_t k = 0; k < y.numel(); ++k) y.set(k, acc[static_cast<size_t>(k)]);
  return {y};
}
std::vector<Tensor> ref_upsample(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Upsample u = upsample_spec(op, in[0].shape(), a);
  const auto [wh, ww] = upsample_weights(op, in[0].dtype(), u);
  return apply_weights(in[0], wh, ww, u.in_h, u.in_w, u.out_h, u.out_w, false, outs[0]);
}
std::vector<Tensor> ref_upsample_backward(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in,
                                          const std::vector<TensorMeta>& outs) {
  const Upsample u = upsample_backward_spec(op, a, nullptr);
  const auto [wh, ww] = upsample_weights(op, in[0].dtype(), u);
  return apply_weights(in[0], wh, ww, u.in_h, u.in_w, u.out_h, u.out_w, true, outs[0]);
}

// Nearest along one dimension whose every source index is o // k: a view (forward) or a sum
// over the k repeats (backward). 0 when the dimension is not such.
int64_t repeat_factor(int64_t in, int64_t out, std::optional<double> scale) {
  if (out % in) return 0;
  const int64_t k = out / in;
  const auto src = nearest_source(in, out, scale);
  for (int64_t o = 0; o < out; ++o)
    if (src[o] != o / k) return 0;
  return k;
}
bool is_identity(const std::vector<double>& w, int64_t in, int64_t out) {
  if (in != out) return false;
  for (int64_t i = 0; i < out; ++i)
    for (int64_t j = 0; j < in; ++j)
      if (w[static_cast<size_t>(i * in + j)] != (i == j ? 1.0 : 0.0)) return false;
  return true;
}
// One spatial dimension d of x resampled from `in` to `out` positions.
Arg upsample_dim(GraphBuilder& b, const OpDef& op, Arg x, int64_t d, int64_t in, int64_t out, const std::vector<double>& w,
                 std::optional<double> scale) {
  if (is_identity(w, in, out)) return x;
  Shape s = b.meta(x).shape;
  if (!is_bilinear(op)) {
    if (const int64_t k = repeat_factor(in, out, scale)) {
      Shape split = s, wide = s;
      split.insert(split.begin() + d + 1, 1);
      wide.insert(wide.begin() + d + 1, k);
      const Arg e = b.call("aten.expand.default", {reshape(b, x, split), Arg::of_ints(wide)});
      s[d] = out;
      return b.call("aten.reshape.default", {e, Arg::of_ints(s)});
    }
    if (!dtype_is_float(b.meta(x).dtype)) return gather_runs(b, x, d, nearest_source(in, out, scale));
  }
  return contract(b, x, d, w, out);
}
Arg upsample_dim_backward(GraphBuilder& b, const OpDef& op, Arg g, int64_t d, int64_t in, int64_t out, const std::vector<double>& w,
                          std::optional<double> scale) {
  if (is_identity(w, in, out)) return g;
  if (!is_bilinear(op)) {
    if (const int64_t k = repeat_factor(in, out, scale)) {
      Shape split = b.meta(g).shape;
      split[d] = in;
      split.insert(split.begin() + d + 1, k);
      return b.call("aten.sum.dim_IntList", {reshape(b, g, split), Arg::of_ints({d + 1}), Arg::of_bool(false)});
    }
  }
  std::vector<double> wt(static_cast<size_t>(in * out));  // [in, out]
  for (int64_t i = 0; i < out; ++i)
    for (int64_t j = 0; j < in; ++j) wt[static_cast<size_t>(j * out + i)] = w[static_cast<size_t>(i * in + j)];
  return contract(b, g, d, wt, in);
}
Arg decomp_upsample_vec(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta x = b.meta(a[0]);
  const Upsample u = upsample_spec(op, x.shape, a);
  const auto [wh, ww] = upsample_weights(op, x.dtype, u);
  const Arg y = upsample_dim(b, op, a[0], 3, u.in_w, u.out_w, ww, u.scale_w);
  return upsample_dim(b, op, y, 2, u.in_h, u.out_h, wh, u.scale_h);
}
Arg decomp_upsample_backward(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Upsample u = upsample_backward_spec(op, a, nullptr);
  const auto [wh, ww] = upsample_weights(op, b.meta(a[0]).dtype, u);
  const Arg g = upsample_dim_backward(b, op, a[0], 2, u.in_h, u.out_h, wh, u.scale_h);
  return upsample_dim_backward(b, op, g, 3, u.in_w, u.out_w, ww, u.scale_w);
}
// .default -> .vec: output_size alone, or the scale factors where they give that output size
// (the index formulas of the two then agree).
Arg decomp_upsample_default(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Upsample u = upsample_spec(op, b.meta(a[0]).shape, a);
  const bool bil = is_bilinear(op);
  const std::string vec = bil ? "aten.upsample_bilinear2d.vec" : "aten.upsample_nearest2d.vec";
  std::vector<Arg> args = {a[0]};
  if (!u.scale_h && !u.scale_w) {
    args.push_back(Arg::of_ints({u.out_h, u.out_w}));
    if (bil) args.push_back(a[2]);
    args.push_back(Arg::none());
  } else {
    if (!u.scale_h || !u.scale_w || static_cast<int64_t>(static_cast<double>(u.in_h) * *u.scale_h) != u.out_h ||
        static_cast<int64_t>(static_cast<double>(u.in_w) * *u.scale_w) != u.out_w)
      bad(op, "scales that do not give output_size are not supported");
    args.push_back(Arg::none());
    if (bil) args.push_back(a[2]);
    Arg f;
    f.kind = Arg::Kind::list;
    f.list = {Arg::of_real(*u.scale_h), Arg::of_real(*u.scale_w)};
    args.push_back(f);
  }
  return b.call(vec, args);
}
// derivatives.yaml: upsample_*2d_backward(grad, output_size, input sizes, [align_corners,] scales).
Args d_upsample(DerivCtx& c) {
  const Upsample u = upsample_spec(c.op, shape_of(c, c.args[0]), c.args);
  const bool bil = is_bilinear(c.op);
  std::vector<Arg> args = {c.grads[0], ints({u.out_h, u.out_w}), ints(shape_of(c, c.args[0]))};
  if (bil) args.push_back(c.args[2]);
  args.push_back(u.scale_h ? num(*u.scale_h) : kNone);
  args.push_back(u.scale_w ? num(*u.scale_w) : kNone);
  return one(c.b.call(bil ? "aten.upsample_bilinear2d_backward.default" : "aten.upsample_nearest2d_backward.default", args),
             c.op.params.size());
}

// ---------------------------------------------------------------------------------------------
// grid_sampler_2d (GridSampler.h) and its backward
// ---------------------------------------------------------------------------------------------

enum class Interp { bilinear = 0, nearest = 1, bicubic = 2 };
enum class Padding { zeros = 0, border = 1, reflection = 2 };

struct Sampler {
  Interp interp;
  Padding padding;
  bool align;
};
// `backward`: grid_sampler_2d_backward's reference kernel has no bicubic form.
Sampler sampler_of(const OpDef& op, const std::vector<Arg>& a, bool backward = false) {
  const int64_t mode = a[2].i, pad = a[3].i;
  if (mode < 0 || mode > 2) bad(op, "interpolation_mode must be 0 (bilinear), 1 (nearest) or 2 (bicubic), got " + std::to_string(mode));
  if (backward && mode == 2) bad(op, "bicubic interpolation is not supported by the backward kernel (training differentiates grid_sampler_2d's decomposition)");
  if (pad < 0 || pad > 2) bad(op, "padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got " + std::to_string(pad));
  return {static_cast<Interp>(mode), static_cast<Padding>(pad), a[4].b};
}

double unnormalize(double c, int64_t size, bool align, double* g) {
  if (align) {
    *g = (size - 1) / 2.0;
    return (c + 1) / 2 * (size - 1);
  }
  *g = size / 2.0;
  return ((c + 1) * size - 1) / 2;
}
double clip(double c, int64_t limit, double* g) {
  if (c <= 0) { *g = 0; return 0; }
  if (c >= limit - 1) { *g = 0; return static_cast<double>(limit - 1); }
  *g = 1;
  return c;
}
double reflect(double c, int64_t twice_low, int64_t twice_high, double* g) {
  if (twice_low == twice_high) { *g = 0; return 0; }
  const double lo = twice_low / 2.0, span = (twice_high - twice_low) / 2.0;
  c -= lo;
  double mult = 1;
  if (c < 0) { mult = -1; c = -c; }
  const double extra = std::fmod(c, span);
  const auto flips = static_cast<int64_t>(std::floor(c / span));
  if (flips % 2 == 0) { *g = mult; return extra + lo; }
  *g = -mult;
  return span - extra + lo;
}
// compute_coordinates: a source coordinate brought inside by the padding mode (zeros: as it is).
double pad_coordinate(double c, int64_t size, const Sampler& s, double* g) {
  double gc = 1, gr = 1;
  if (s.padding == Padding::border) c = clip(c, size, &gc);
  else if (s.padding == Padding::reflection) {
    c = s.align ? reflect(c, 0, 2 * (size - 1), &gr) : reflect(c, -1, 2 * size - 1, &gr);
    c = clip(c, size, &gc);
  }
  *g = gr * gc;
  return c;
}
// grid_sampler_compute_source_index_set_grad: the source coordinate and d(source)/d(grid value).
double source_index(double c, int64_t size, const Sampler& s, double* g) {
  double gu = 1, gp = 1;
  c = pad_coordinate(unnormalize(c, size, s.align, &gu), size, s, &gp);
  if (!std::isfinite(c) || std::abs(c) > 1e15) c = -100.0;  // safe_downgrade_to_int_range
  *g = gu * gp;
  return c;
}

std::vector<TensorMeta> infer_grid_sampler(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta &x = meta_of(g, a[0]), &grid = meta_of(g, a[1]);
  sampler_of(op, a);
  if (x.shape.size() != 4 || grid.shape.size() != 4 || grid.shape[3] != 2 || grid.shape[0] != x.shape[0])
    bad(op, "needs a 4-D input [N, C, H, W] and a grid [N, H_out, W_out, 2], got " + shape_str(x.shape) + " and " + shape_str(grid.shape));
  if (!dtype_is_float(x.dtype) || grid.dtype != x.dtype) bad(op, "input and grid must be floating point tensors of one dtype");
  return {like(x, {x.shape[0], x.shape[1], grid.shape[1], grid.shape[2]})};
}

// One sampling point: the input positions it reads (bilinear up to 4, bicubic up to 16), their
// weights, and the derivatives of each weight with respect to the source coordinates.
struct Taps {
  int64_t y[16], x[16];
  double w[16], dwx[16], dwy[16];
  int n = 0;
  double gx_mult = 1, gy_mult = 1;
};
// upsample_get_cubic_coefficients (A = -0.75) of the fraction t.
void cubic_coefficients(double t, double c[4]) {
  const double A = -0.75;
  auto conv1 = [A](double x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };
  auto conv2 = [A](double x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };
  c[0] = conv2(t + 1);
  c[1] = conv1(t);
  c[2] = conv1(1 - t);
  c[3] = conv2(2 - t);
}
Taps taps_of(double gx, double gy, int64_t H, int64_t W, const Sampler& s) {
  Taps t;
  auto add = [&](int64_t y, int64_t x, double w, double dwx, double dwy) {
    if (y < 0 || y >= H || x < 0 || x >= W) return;
    t.y[t.n] = y;
    t.x[t.n] = x;
    t.w[t.n] = w;
    t.dwx[t.n] = dwx;
    t.dwy[t.n] = dwy;
    ++t.n;
  };
  if (s.interp == Interp::bicubic) {  // GridSampler.h: 4x4 taps around floor(source), each brought in by the padding
    double g = 1;
    const double ix = unnormalize(gx, W, s.align, &g), iy = unnormalize(gy, H, s.align, &g);
    const double x0 = std::floor(ix), y0 = std::floor(iy);
    double cx[4], cy[4];
    cubic_coefficients(ix - x0, cx);
    cubic_coefficients(iy - y0, cy);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {
        const double px = pad_coordinate(x0 - 1 + j, W, s, &g), py = pad_coordinate(y0 - 1 + i, H, s, &g);
        if (!(std::abs(px) < 1e15 && std::abs(py) < 1e15)) continue;  // NaN or far outside: never in bounds
        add(static_cast<int64_t>(py), static_cast<int64_t>(px), cy[i] * cx[j], 0, 0);
      }
    return t;
  }
  const double ix = source_index(gx, W, s, &t.gx_mult), iy = source_index(gy, H, s, &t.gy_mult);
  if (s.interp == Interp::nearest) {
    add(static_cast<int64_t>(std::nearbyint(iy)), static_cast<int64_t>(std::nearbyint(ix)), 1, 0, 0);
    return t;
  }
  const double x0 = std::floor(ix), y0 = std::floor(iy), x1 = x0 + 1, y1 = y0 + 1;
  const auto X0 = static_cast<int64_t>(x0), Y0 = static_cast<int64_t>(y0);
  add(Y0, X0, (x1 - ix) * (y1 - iy), -(y1 - iy), -(x1 - ix));          // nw
  add(Y0, X0 + 1, (ix - x0) * (y1 - iy), (y1 - iy), -(ix - x0));      // ne
  add(Y0 + 1, X0, (x1 - ix) * (iy - y0), -(iy - y0), (x1 - ix));      // sw
  add(Y0 + 1, X0 + 1, (ix - x0) * (iy - y0), (iy - y0), (ix - x0));  // se
  return t;
}
std::vector<Tensor> ref_grid_sampler(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &x = in[0], &grid = in[1];
  const Sampler s = sampler_of(op, a);
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3], OH = grid.shape()[1], OW = grid.shape()[2];
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OW; ++j) {
        const int64_t gi = ((n * OH + i) * OW + j) * 2;
        const Taps t = taps_of(grid.get(gi), grid.get(gi + 1), H, W, s);
        for (int64_t c = 0; c < C; ++c) {
          double v = 0;
          for (int k = 0; k < t.n; ++k) v += x.get(((n * C + c) * H + t.y[k]) * W + t.x[k]) * t.w[k];
          y.set(((n * C + c) * OH + i) * OW + j, v);
        }
      }
  return {y};
}
std::vector<TensorMeta> infer_grid_sampler_backward(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const std::vector<Arg> fwd = {a[1], a[2], a[3], a[4], a[5]};
  sampler_of(op, fwd, true);
  const TensorMeta y = infer_grid_sampler(g, op, fwd)[0];
  if (meta_of(g, a[0]).shape != y.shape) bad(op, "grad_output has shape " + shape_str(meta_of(g, a[0]).shape) + ", expected " + shape_str(y.shape));
  return {like(meta_of(g, a[1]), meta_of(g, a[1]).shape), like(meta_of(g, a[2]), meta_of(g, a[2]).shape)};
}
std::vector<Tensor> ref_grid_sampler_backward(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in,
                                              const std::vector<TensorMeta>& outs) {
  const Tensor &gy = in[0], &x = in[1], &grid = in[2];
  const Sampler s = sampler_of(op, {a[1], a[2], a[3], a[4], a[5]}, true);
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3], OH = grid.shape()[1], OW = grid.shape()[2];
  std::vector<double> gx(static_cast<size_t>(x.numel()), 0.0), gg(static_cast<size_t>(grid.numel()), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OW; ++j) {
        const int64_t gi = ((n * OH + i) * OW + j) * 2;
        const Taps t = taps_of(grid.get(gi), grid.get(gi + 1), H, W, s);
        double dx = 0, dy = 0;
        for (int64_t c = 0; c < C; ++c) {
          const double go = gy.get(((n * C + c) * OH + i) * OW + j);
          for (int k = 0; k < t.n; ++k) {
            const int64_t xi = ((n * C + c) * H + t.y[k]) * W + t.x[k];
            gx[static_cast<size_t>(xi)] += go * t.w[k];
            dx += go * x.get(xi) * t.dwx[k];
            dy += go * x.get(xi) * t.dwy[k];
          }
        }
        gg[static_cast<size_t>(gi)] = dx * t.gx_mult;
        gg[static_cast<size_t>(gi + 1)] = dy * t.gy_mult;
      }
  Tensor tx(outs[0].dtype, outs[0].shape), tg(outs[1].dtype, outs[1].shape);
  for (int64_t k = 0; k < tx.numel(); ++k) tx.set(k, gx[static_cast<size_t>(k)]);
  for (int64_t k = 0; k < tg.numel(); ++k) tg.set(k, gg[static_cast<size_t>(k)]);
  return {tx, tg};
}

// grid_sampler_2d as torch._decomp writes it (_grid_sampler_2d, the grid expanded over the
// channels so that one loop over the output computes everything): source coordinates from the
// grid (unnormalize, then the padding mode: clamp, or reflect and clamp), the taps' input values
// gathered through aten.index.Tensor (generated code: indirect loads) and weighted. A tap outside
// the input reads index 0 and counts as 0: where(in bounds, value * weight, 0), the reference
// kernel's skip (PyTorch's decomposition multiplies the read by a zeroed weight, NaN for an
// infinite value there). Half inputs compute in float32 (pw_cast_for_opmath). Training
// differentiates this decomposition: the gathers' gradients are index_put with accumulate.
struct GridDecomp {
  GraphBuilder& b;
  Sampler s;
  Arg x, n_idx, c_idx;
  int64_t H, W;
  DType t;

  Arg sc(const char* op, const Arg& v, double k) const { return b.call(op, {v, Arg::of_real(k)}); }
  Arg bin(const char* op, const Arg& u, const Arg& v) const { return b.call(op, {u, v}); }
  Arg unnormalize(const Arg& c, int64_t size) const {  // [-1, 1] to [0, size - 1] (align) or [-0.5, size - 0.5]
    const double mul = s.align ? size * 0.5 - 0.5 : size * 0.5, ofs = size * 0.5 - 0.5;
    return sc("aten.add.Scalar", sc("aten.mul.Scalar", c, mul), ofs);
  }
  // Reflects coordinates until they fall between low and high (inclusive), both given twice.
  Arg reflect_coordinates(const Arg& c, int64_t twice_low, int64_t twice_high) const {
    if (twice_low == twice_high)
      return b.call("aten.full.default", {Arg::of_ints(b.meta(c).shape), Arg::of_real(0)}, {{"dtype", Arg::of_string(std::string(dtype_torch(t)))}});
    const double lo = twice_low / 2.0, span = (twice_high - twice_low) / 2.0;
    const Arg c2 = b.call("aten.abs.default", {sc("aten.sub.Scalar", c, lo)});
    const Arg extra = sc("aten.fmod.Scalar", c2, span);
    const Arg flips = b.call("aten.floor.default", {sc("aten.div.Scalar", c2, span)});
    const Arg even = sc("aten.eq.Scalar", sc("aten.fmod.Scalar", flips, 2.0), 0.0);  // flips & 1 == 0
    return b.call("aten.where.self", {even, sc("aten.add.Scalar", extra, lo), sc("aten.add.Scalar", b.call("aten.neg.default", {extra}), span + lo)});
  }
  Arg compute_coordinates(const Arg& c, int64_t size) const {
    if (s.padding == Padding::zeros) return c;
    const Arg r = s.padding == Padding::border ? c
                  : s.align                     ? reflect_coordinates(c, 0, 2 * (size - 1))
                                                : reflect_coordinates(c, -1, 2 * size - 1);
    // clamp(r, 0, size - 1), as selects (their gradient: where.self's, clamp's own)
    const double hi = static_cast<double>(size - 1);
    const Arg below = b.call("aten.where.self", {sc("aten.gt.Scalar", r, hi), Arg::of_real(hi), r});
    return b.call("aten.where.self", {sc("aten.lt.Scalar", r, 0), Arg::of_real(0), below});
  }
  // Whether (ix, iy) lies inside the input.
  Arg inside(const Arg& ix, const Arg& iy) const {
    return bin("aten.logical_and.default", sc("aten.ge.Scalar", ix, 0),
               bin("aten.logical_and.default", sc("aten.lt.Scalar", ix, static_cast<double>(W)),
                   bin("aten.logical_and.default", sc("aten.ge.Scalar", iy, 0), sc("aten.lt.Scalar", iy, static_cast<double>(H)))));
  }
  // The index list [n, c, iy, ix] of the taps, the coordinates as int64 where inside, else 0.
  Arg indices(const Arg& in, const Arg& ix, const Arg& iy) const {
    auto index = [&](const Arg& v) {
      const Arg safe = b.call("aten.where.self", {in, v, Arg::of_real(0)});
      return b.call("prims.convert_element_type.default", {safe, Arg::of_string("torch.int64")});
    };
    Arg list;
    list.kind = Arg::Kind::list;
    list.list = {n_idx, c_idx, index(iy), index(ix)};
    return list;
  }
  // input[n, c, iy, ix] * w where (ix, iy) lies inside the input, else 0 (w none: a weight of 1).
  Arg summand(const Arg& ix, const Arg& iy, const std::optional<Arg>& w) const {
    const Arg in = inside(ix, iy);
    Arg v = b.call("aten.index.Tensor", {x, indices(in, ix, iy)});
    if (w) v = bin("aten.mul.Tensor", v, *w);
    return b.call("aten.where.self", {in, v, Arg::of_real(0)});
  }
  // A source coordinate and what its derivative with respect to the grid value is made of
  // (grid_sampler_compute_source_index_set_grad): the unnormalization's factor, reflection's
  // sign (negated where `flip`) and clamping's 0 at and beyond the borders (none outside `keep`).
  struct Source {
    Arg coord;
    std::optional<Arg> keep, flip;
    double factor;
  };
  Source source_with_grad(const Arg& g, int64_t size) const {
    const double factor = s.align ? (size - 1) / 2.0 : size / 2.0;
    const Arg u = unnormalize(g, size);
    if (s.padding == Padding::zeros) return {u, std::nullopt, std::nullopt, factor};
    const double hi = static_cast<double>(size - 1);
    auto inner = [&](const Arg& c) { return bin("aten.logical_and.default", sc("aten.gt.Scalar", c, 0), sc("aten.lt.Scalar", c, hi)); };
    if (s.padding == Padding::border) return {compute_coordinates(u, size), inner(u), std::nullopt, factor};
    const int64_t twice_low = s.align ? 0 : -1, twice_high = s.align ? 2 * (size - 1) : 2 * size - 1;
    if (twice_low == twice_high) return {compute_coordinates(u, size), std::nullopt, std::nullopt, 0.0};
    const double lo = twice_low / 2.0, span = (twice_high - twice_low) / 2.0;
    const Arg c = sc("aten.sub.Scalar", u, lo);
    const Arg flips = b.call("aten.floor.default", {sc("aten.div.Scalar", b.call("aten.abs.default", {c}), span)});
    const Arg odd = sc("aten.ne.Scalar", sc("aten.fmod.Scalar", flips, 2.0), 0.0);
    const Arg r = reflect_coordinates(u, twice_low, twice_high);
    return {compute_coordinates(u, size), inner(r), bin("aten.logical_xor.default", sc("aten.lt.Scalar", c, 0), odd), factor};
  }
  // g times d(source)/d(grid value).
  Arg times_grad(Arg g, const Source& src) const {
    if (src.flip) g = b.call("aten.where.self", {*src.flip, b.call("aten.neg.default", {g}), g});
    if (src.keep) g = b.call("aten.where.self", {*src.keep, g, Arg::of_real(0)});
    return sc("aten.mul.Scalar", g, src.factor);
  }
  // _upsample_cubic_interp1d: the four values weighted by the cubic coefficients of t.
  Arg cubic(const std::vector<Arg>& v, const Arg& t) const {
    const double A = -0.75;
    auto conv1 = [&](const Arg& x) {  // ((A + 2) * x - (A + 3)) * x * x + 1
      const Arg p = sc("aten.sub.Scalar", sc("aten.mul.Scalar", x, A + 2), A + 3);
      return sc("aten.add.Scalar", bin("aten.mul.Tensor", bin("aten.mul.Tensor", p, x), x), 1.0);
    };
    auto conv2 = [&](const Arg& x) {  // ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
      const Arg p = sc("aten.sub.Scalar", sc("aten.mul.Scalar", x, A), 5 * A);
      return sc("aten.sub.Scalar", bin("aten.mul.Tensor", sc("aten.add.Scalar", bin("aten.mul.Tensor", p, x), 8 * A), x), 4 * A);
    };
    const Arg one_minus = sc("aten.add.Scalar", b.call("aten.neg.default", {t}), 1.0);
    const Arg two_minus = sc("aten.add.Scalar", b.call("aten.neg.default", {t}), 2.0);
    const std::vector<Arg> w = {conv2(sc("aten.add.Scalar", t, 1.0)), conv1(t), conv1(one_minus), conv2(two_minus)};
    Arg sum = bin("aten.mul.Tensor", v[0], w[0]);
    for (size_t k = 1; k < 4; ++k) sum = bin("aten.add.Tensor", sum, bin("aten.mul.Tensor", v[k], w[k]));
    return sum;
  }
};

// The grid sampler decompositions' pieces: v in type d (as it is where it has it), and 0 .. n-1
// as int64 viewed in `shape` (the batch's or the channel's index, broadcast against the grid).
static Arg grid_convert(GraphBuilder& b, const Arg& v, DType d) {
  return b.meta(v).dtype == d ? v : b.call("prims.convert_element_type.default", {v, Arg::of_string(std::string(dtype_torch(d)))});
}
static Arg grid_iota(GraphBuilder& b, int64_t n, const Shape& shape) {
  const Arg r = b.call("aten.arange.start_step", {Arg::of_int(0), Arg::of_int(n), Arg::of_int(1)}, {{"dtype", Arg::of_string("torch.int64")}});
  return reshape(b, r, shape);
}

Arg decomp_grid_sampler(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta xm = b.meta(a[0]), gm = b.meta(a[1]);
  infer_grid_sampler(b.graph(), op, a);
  const Sampler s = sampler_of(op, a);
  const int64_t N = xm.shape[0], C = xm.shape[1], H = xm.shape[2], W = xm.shape[3], OH = gm.shape[1], OW = gm.shape[2];
  const DType t = compute_dtype(xm.dtype);
  auto to = [&b](const Arg& v, DType d) { return grid_convert(b, v, d); };
  auto iota = [&b](int64_t n, const Shape& shape) { return grid_iota(b, n, shape); };
  const GridDecomp d{b, s, to(a[0], t), iota(N, {N, 1, 1, 1}), iota(C, {1, C, 1, 1}), H, W, t};
  const Arg grid = b.call("aten.expand.default", {reshape(b, to(a[1], t), {N, 1, OH, OW, 2}), Arg::of_ints({N, C, OH, OW, 2})});
  const Arg gx = b.call("aten.select.int", {grid, Arg::of_int(4), Arg::of_int(0)});
  const Arg gy = b.call("aten.select.int", {grid, Arg::of_int(4), Arg::of_int(1)});
  Arg y;
  if (s.interp == Interp::bilinear) {
    const Arg ix = d.compute_coordinates(d.unnormalize(gx, W), W), iy = d.compute_coordinates(d.unnormalize(gy, H), H);
    const Arg ix_nw = b.call("aten.floor.default", {ix}), iy_nw = b.call("aten.floor.default", {iy});
    const Arg ix_ne = d.sc("aten.add.Scalar", ix_nw, 1.0), iy_sw = d.sc("aten.add.Scalar", iy_nw, 1.0);
    // nw: (ix_se - ix) * (iy_se - iy), ne: (ix - ix_sw) * (iy_sw - iy), sw: (ix_ne - ix) * (iy - iy_ne), se: (ix - ix_nw) * (iy - iy_nw)
    const Arg w_nw = d.bin("aten.mul.Tensor", d.bin("aten.sub.Tensor", ix_ne, ix), d.bin("aten.sub.Tensor", iy_sw, iy));
    const Arg w_ne = d.bin("aten.mul.Tensor", d.bin("aten.sub.Tensor", ix, ix_nw), d.bin("aten.sub.Tensor", iy_sw, iy));
    const Arg w_sw = d.bin("aten.mul.Tensor", d.bin("aten.sub.Tensor", ix_ne, ix), d.bin("aten.sub.Tensor", iy, iy_nw));
    const Arg w_se = d.bin("aten.mul.Tensor", d.bin("aten.sub.Tensor", ix, ix_nw), d.bin("aten.sub.Tensor", iy, iy_nw));
    y = d.summand(ix_nw, iy_nw, w_nw);
    y = d.bin("aten.add.Tensor", y, d.summand(ix_ne, iy_nw, w_ne));
    y = d.bin("aten.add.Tensor", y, d.summand(ix_nw, iy_sw, w_sw));
    y = d.bin("aten.add.Tensor", y, d.summand(ix_ne, iy_sw, w_se));
  } else if (s.interp == Interp::nearest) {
    const Arg ix = d.compute_coordinates(d.unnormalize(gx, W), W), iy = d.compute_coordinates(d.unnormalize(gy, H), H);
    y = d.summand(b.call("aten.round.default", {ix}), b.call("aten.round.default", {iy}), std::nullopt);
  } else {  // bicubic: rows of four taps interpolated along x, then the four rows along y
    const Arg ix = d.unnormalize(gx, W), iy = d.unnormalize(gy, H);
    const Arg ix_nw = b.call("aten.floor.default", {ix}), iy_nw = b.call("aten.floor.default", {iy});
    const Arg tx = d.bin("aten.sub.Tensor", ix, ix_nw), ty = d.bin("aten.sub.Tensor", iy, iy_nw);
    std::vector<Arg> rows;
    for (int i = 0; i < 4; ++i) {
      const Arg row_y = d.compute_coordinates(d.sc("aten.add.Scalar", iy_nw, i - 1.0), H);
      std::vector<Arg> taps;
      for (int j = 0; j < 4; ++j) taps.push_back(d.summand(d.compute_coordinates(d.sc("aten.add.Scalar", ix_nw, j - 1.0), W), row_y, std::nullopt));
      rows.push_back(d.cubic(taps, tx));
    }
    y = d.cubic(rows, ty);
  }
  return to(y, xm.dtype);
}

// grid_sampler_2d_backward as its reference kernel computes it (GridSampler.h's backward),
// bilinear and nearest, on the grid as given ([N, 1, H_out, W_out] against the channels): each
// tap's share of grad_output accumulated into the input's gradient by index_put; the grid's
// gradient the sum over channels of grad_output times the taps' values times their weights'
// derivatives, times d(source)/d(grid). PyTorch has no decomposition (Inductor calls ATen's
// kernel); this one makes an exported training graph's backward device code.
std::vector<Arg> decomp_grid_sampler_backward(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  infer_grid_sampler_backward(b.graph(), op, a);
  const std::vector<Arg> fwd = {a[1], a[2], a[3], a[4], a[5]};
  const Sampler s = sampler_of(op, fwd, true);
  const TensorMeta xm = b.meta(a[1]), gm = b.meta(a[2]);
  const int64_t N = xm.shape[0], C = xm.shape[1], H = xm.shape[2], W = xm.shape[3], OH = gm.shape[1], OW = gm.shape[2];
  const DType t = compute_dtype(xm.dtype);
  auto to = [&b](const Arg& v, DType d) { return grid_convert(b, v, d); };
  auto iota = [&b](int64_t n, const Shape& shape) { return grid_iota(b, n, shape); };
  auto zeros = [&](const Shape& shape) {
    return b.call("aten.full.default", {Arg::of_ints(shape), Arg::of_real(0)}, {{"dtype", Arg::of_string(std::string(dtype_torch(t)))}});
  };
  const GridDecomp d{b, s, to(a[1], t), iota(N, {N, 1, 1, 1}), iota(C, {1, C, 1, 1}), H, W, t};
  const Arg go = to(a[0], t);
  const Arg grid = reshape(b, to(a[2], t), {N, 1, OH, OW, 2});
  const GridDecomp::Source sx = d.source_with_grad(b.call("aten.select.int", {grid, Arg::of_int(4), Arg::of_int(0)}), W);
  const GridDecomp::Source sy = d.source_with_grad(b.call("aten.select.int", {grid, Arg::of_int(4), Arg::of_int(1)}), H);
  Arg grad_input = zeros(xm.shape);
  // Adds w * grad_output (w none: 1) into the input's gradient at (ix, iy); returns the input's value there (0 outside).
  auto tap = [&](const Arg& ix, const Arg& iy, const std::optional<Arg>& w) {
    const Arg in = d.inside(ix, iy), list = d.indices(in, ix, iy);
    const Arg share = b.call("aten.where.self", {in, w ? d.bin("aten.mul.Tensor", go, *w) : go, Arg::of_real(0)});
    grad_input = b.call("aten.index_put.default", {grad_input, list, share, Arg::of_bool(true)});
    return b.call("aten.where.self", {in, b.call("aten.index.Tensor", {d.x, list}), Arg::of_real(0)});
  };
  Arg grad_grid;
  if (s.interp == Interp::bilinear) {
    const Arg ix = sx.coord, iy = sy.coord;
    const Arg ix_nw = b.call("aten.floor.default", {ix}), iy_nw = b.call("aten.floor.default", {iy});
    const Arg ix_ne = d.sc("aten.add.Scalar", ix_nw, 1.0), iy_sw = d.sc("aten.add.Scalar", iy_nw, 1.0);
    const Arg east = d.bin("aten.sub.Tensor", ix, ix_nw), west = d.bin("aten.sub.Tensor", ix_ne, ix);  // the weights along x
    const Arg south = d.bin("aten.sub.Tensor", iy, iy_nw), north = d.bin("aten.sub.Tensor", iy_sw, iy);
    const Arg v_nw = tap(ix_nw, iy_nw, d.bin("aten.mul.Tensor", west, north));
    const Arg v_ne = tap(ix_ne, iy_nw, d.bin("aten.mul.Tensor", east, north));
    const Arg v_sw = tap(ix_nw, iy_sw, d.bin("aten.mul.Tensor", west, south));
    const Arg v_se = tap(ix_ne, iy_sw, d.bin("aten.mul.Tensor", east, south));
    // d(value)/d(ix) = (ne - nw) * north + (se - sw) * south; d(value)/d(iy) = (sw - nw) * west + (se - ne) * east
    const Arg dx = d.bin("aten.add.Tensor", d.bin("aten.mul.Tensor", d.bin("aten.sub.Tensor", v_ne, v_nw), north),
                         d.bin("aten.mul.Tensor", d.bin("aten.sub.Tensor", v_se, v_sw), south));
    const Arg dy = d.bin("aten.add.Tensor", d.bin("aten.mul.Tensor", d.bin("aten.sub.Tensor", v_sw, v_nw), west),
                         d.bin("aten.mul.Tensor", d.bin("aten.sub.Tensor", v_se, v_ne), east));
    auto over_channels = [&](const Arg& dv, const GridDecomp::Source& src) {  // [N, 1, OH, OW] -> [N, OH, OW, 1]
      const Arg sum = b.call("aten.sum.dim_IntList", {d.bin("aten.mul.Tensor", go, dv), Arg::of_ints({1}), Arg::of_bool(true)});
      return reshape(b, d.times_grad(sum, src), {N, OH, OW, 1});
    };
    grad_grid = cat(b, {over_channels(dx, sx), over_channels(dy, sy)}, 3);
  } else {  // nearest: the grid's gradient is 0
    tap(b.call("aten.round.default", {sx.coord}), b.call("aten.round.default", {sy.coord}), std::nullopt);
    grad_grid = zeros(gm.shape);
  }
  return {to(grad_input, xm.dtype), to(grad_grid, gm.dtype)};
}

// ---------------------------------------------------------------------------------------------
// col2im and im2col (Im2Col.cpp, Col2Im.cpp)
// ---------------------------------------------------------------------------------------------

struct Window {
  std::vector<int64_t> k, dil, pad, st;
};
Window window_of(const OpDef& op, const Arg& k, const Arg& dil, const Arg& pad, const Arg& st) {
  Window w{spatial_pair(k), spatial_pair(dil), spatial_pair(pad), spatial_pair(st)};
  for (int d = 0; d < 2; ++d)
    if (w.k[d] <= 0 || w.dil[d] <= 0 || w.st[d] <= 0 || w.pad[d] < 0)
      bad(op, "kernel_size, dilation and stride must be positive and padding not negative");
  return w;
}
int64_t blocks(int64_t size, const Window& w, int d) { return (size + 2 * w.pad[d] - w.dil[d] * (w.k[d] - 1) - 1) / w.st[d] + 1; }

// col2im(self [N, C*kh*kw, L] or [C*kh*kw, L], output_size, kernel_size, dilation, padding, stride).
std::vector<TensorMeta> infer_col2im(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  const auto os = spatial_pair(a[1]);
  const Window w = window_of(op, a[2], a[3], a[4], a[5]);
  const bool batched = x.shape.size() == 3;
  if (x.shape.size() != 2 && !batched) bad(op, "Expected 2D or 3D (batch mode) tensor for input, but got " + shape_str(x.shape));
  const int64_t cols = x.shape[batched ? 1 : 0], L = x.shape[batched ? 2 : 1], kk = w.k[0] * w.k[1];
  if (cols % kk) bad(op, "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)=" + std::to_string(cols) + " and kernel_size=(" + std::to_string(w.k[0]) + ", " + std::to_string(w.k[1]) + ")");
  const int64_t bh = blocks(os[0], w, 0), bw = blocks(os[1], w, 1);
  if (bh < 1 || bw < 1 || bh * bw != L)
    bad(op, "Given output_size=(" + std::to_string(os[0]) + ", " + std::to_string(os[1]) + "), kernel_size, dilation, padding and stride, expected size of input's dimension 2 to match the calculated number of sliding blocks " + std::to_string(bh) + " * " + std::to_string(bw) + " = " + std::to_string(bh * bw) + ", but got input.size(2)=" + std::to_string(L));
  Shape out = {cols / kk, os[0], os[1]};
  if (batched) out.insert(out.begin(), x.shape[0]);
  return {like(x, out)};
}
// The one loop both share: (column row, block) -> image position, or none outside the image.
template <typename F>
void for_each_tap(int64_t C, int64_t H, int64_t W, const Window& w, F f) {
  const int64_t bh = blocks(H, w, 0), bw = blocks(W, w, 1);
  for (int64_t c = 0; c < C * w.k[0] * w.k[1]; ++c) {
    const int64_t kw = c % w.k[1], kh = (c / w.k[1]) % w.k[0], ci = c / (w.k[0] * w.k[1]);
    for (int64_t i = 0; i < bh; ++i)
      for (int64_t j = 0; j < bw; ++j) {
        const int64_t h = i * w.st[0] - w.pad[0] + kh * w.dil[0], x = j * w.st[1] - w.pad[1] + kw * w.dil[1];
        if (h >= 0 && h < H && x >= 0 && x < W) f(c * bh * bw + i * bw + j, (ci * H + h) * W + x);
      }
  }
}
std::vector<Tensor> ref_col2im(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Window w = window_of(op, a[2], a[3], a[4], a[5]);
  const Shape& o = outs[0].shape;
  const size_t r = o.size();
  const int64_t C = o[r - 3], H = o[r - 2], W = o[r - 1], batch = r == 4 ? o[0] : 1;
  const int64_t col_size = in[0].numel() / batch, img_size = C * H * W;
  std::vector<double> acc(static_cast<size_t>(numel_of(o)), 0.0);
  for (int64_t n = 0; n < batch; ++n)
    for_each_tap(C, H, W, w, [&](int64_t col, int64_t img) { acc[static_cast<size_t>(n * img_size + img)] += in[0].get(n * col_size + col); });
  Tensor y(outs[0].dtype, o);
  for (int64_t i = 0; i < y.numel(); ++i) y.set(i, acc[static_cast<size_t>(i)]);
  return {y};
}
Args d_col2im(DerivCtx& c) {
  return one(call(c, "aten.im2col.default", {c.grads[0], c.args[2], c.args[3], c.args[4], c.args[5]}), 6);
}

// im2col(self [N, C, H, W] or [C, H, W], kernel_size, dilation, padding, stride).
std::vector<TensorMeta> infer_im2col(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  const Window w = window_of(op, a[1], a[2], a[3], a[4]);
  const size_t r = x.shape.size();
  if (r != 3 && r != 4) bad(op, "Expected 3D or 4D (batch mode) tensor for input, but got " + shape_str(x.shape));
  const int64_t bh = blocks(x.shape[r - 2], w, 0), bw = blocks(x.shape[r - 1], w, 1);
  if (bh < 1 || bw < 1) bad(op, "the kernel does not fit the padded input " + shape_str(x.shape));
  Shape out = {x.shape[r - 3] * w.k[0] * w.k[1], bh * bw};
  if (r == 4) out.insert(out.begin(), x.shape[0]);
  return {like(x, out)};
}
std::vector<Tensor> ref_im2col(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Window w = window_of(op, a[1], a[2], a[3], a[4]);
  const Shape& x = in[0].shape();
  const size_t r = x.size();
  const int64_t C = x[r - 3], H = x[r - 2], W = x[r - 1], batch = r == 4 ? x[0] : 1;
  Tensor y(outs[0].dtype, outs[0].shape);
  const int64_t col_size = y.numel() / batch, img_size = C * H * W;
  for (int64_t n = 0; n < batch; ++n)
    for_each_tap(C, H, W, w, [&](int64_t col, int64_t img) { y.set(n * col_size + col, in[0].get(n * img_size + img)); });
  return {y};
}
// Pad, then one strided slice per kernel position, concatenated as the rows of each channel.
Arg decomp_im2col(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape out = infer_im2col(b.graph(), op, a)[0].shape;
  const Window w = window_of(op, a[1], a[2], a[3], a[4]);
  Shape s = b.meta(a[0]).shape;
  Arg x = a[0];
  if (s.size() == 3) {
    s.insert(s.begin(), 1);
    x = reshape(b, x, s);
  }
  const int64_t N = s[0], C = s[1], bh = blocks(s[2], w, 0), bw = blocks(s[3], w, 1);
  if (w.pad[0] || w.pad[1])
    x = b.call("aten.constant_pad_nd.default", {x, Arg::of_ints({w.pad[1], w.pad[1], w.pad[0], w.pad[0]}), Arg::of_int(0)});
  std::vector<Arg> rows;
  for (int64_t i = 0; i < w.k[0]; ++i)
    for (int64_t j = 0; j < w.k[1]; ++j) {
      Arg p = slice(b, x, 2, i * w.dil[0], i * w.dil[0] + w.st[0] * (bh - 1) + 1, w.st[0]);
      p = slice(b, p, 3, j * w.dil[1], j * w.dil[1] + w.st[1] * (bw - 1) + 1, w.st[1]);
      rows.push_back(b.call("aten.reshape.default", {p, Arg::of_ints({N, C, 1, bh * bw})}));
    }
  return b.call("aten.reshape.default", {cat(b, rows, 2), Arg::of_ints(out)});
}
// derivatives.yaml: im2col's gradient is col2im onto the input's spatial size.
Args d_im2col(DerivCtx& c) {
  const Shape s = shape_of(c, c.args[0]);
  return one(call(c, "aten.col2im.default", {c.grads[0], ints({s[s.size() - 2], s[s.size() - 1]}), c.args[1], c.args[2], c.args[3], c.args[4]}), 5);
}

// ---------------------------------------------------------------------------------------------
// pad(self, pad, mode, value): the export-level padding function
// ---------------------------------------------------------------------------------------------

Arg decomp_pad_modes(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const std::string mode = a[2].kind == Arg::Kind::string ? a[2].s : "constant";
  const auto pad = a[1].ints();
  const int64_t r = static_cast<int64_t>(b.meta(a[0]).shape.size()), k = static_cast<int64_t>(pad.size()) / 2;
  if (mode == "constant") return b.call("aten.constant_pad_nd.default", {a[0], a[1], a[3].is_none() ? Arg::of_int(0) : a[3]});
  if (!a[3].is_none() && a[3].number() != 0)
    bad(op, "Padding mode \"" + mode + "\" doesn't take in value argument");
  if (pad.size() % 2 || k < 1 || k > 3) bad(op, "padding of " + std::to_string(pad.size()) + " values is not supported for mode " + mode);
  if (mode == "reflect" || mode == "replicate") {
    const std::string target = std::string(mode == "reflect" ? "aten.reflection_pad" : "aten.replication_pad") + std::to_string(k) + "d.default";
    return b.call(target, {a[0], a[1]});
  }
  if (mode == "circular") {  // torch._refs' _pad_circular: wrap-around slices, concatenated; negative pads crop
    if (r < k + 1) bad(op, "circular padding needs at least " + std::to_string(k + 1) + " dimensions");
    Arg x = a[0];
    for (int64_t i = 0; i < k; ++i) {
      const int64_t d = r - 1 - i, lo = pad[2 * i], hi = pad[2 * i + 1], n = b.meta(a[0]).shape[d];
      if (lo > n || hi > n) bad(op, "Padding value causes wrapping around more than once.");
      if (n + lo + hi < 0) bad(op, "Negative padding value is resulting in an empty dimension.");
      std::vector<int64_t> src;
      for (int64_t o = -lo; o < n + hi; ++o) src.push_back(((o % n) + n) % n);
      x = gather_runs(b, x, d, src);
    }
    return x;
  }
  bad(op, "Unrecognised padding mode " + mode);
}

// ---------------------------------------------------------------------------------------------
// Entries
// ---------------------------------------------------------------------------------------------

// The reflection and replication pads and their backward ops: each element a copy or a sum of
// input elements, so they act on complex parts.
OpDef pad_op(const char* name, const char* schema, unsigned lv) {
  return by_parts(comp(name, schema, lv, infer_pad, ref_pad, single<decomp_pad>, d_pad));
}
OpDef pad_backward_op(const char* name, const char* schema) {
  return by_parts(comp(name, schema, kAten, infer_pad_backward, ref_pad_backward, single<decomp_pad_backward>));
}

// Shape and dtype of the export-level pad through its decomposition.
std::vector<TensorMeta> infer_pad_modes(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  Graph tmp;
  GraphBuilder b(tmp);
  std::vector<Arg> args = a;
  args[0] = Arg::of_node(b.placeholder("x", meta_of(g, a[0])));
  const Arg y = decomp_pad_modes(b, op, args);
  return {tmp.nodes.at(y.node).meta()};
}

}  // namespace

void add_resampling_ops(std::vector<OpDef>& t) {
  const std::vector<OpDef> ops = {
      by_parts(comp("aten.constant_pad_nd.default", "constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor", kCore,
                    infer_constant_pad, ref_constant_pad, single<decomp_constant_pad>, d_constant_pad)),
      pad_op("aten.reflection_pad1d.default", "reflection_pad1d(Tensor self, SymInt[2] padding) -> Tensor", kCore),
      pad_op("aten.reflection_pad2d.default", "reflection_pad2d(Tensor self, SymInt[4] padding) -> Tensor", kCore),
      pad_op("aten.reflection_pad3d.default", "reflection_pad3d(Tensor self, SymInt[6] padding) -> Tensor", kCore),
      pad_op("aten.replication_pad1d.default", "replication_pad1d(Tensor self, SymInt[2] padding) -> Tensor", kAten),
      pad_op("aten.replication_pad2d.default", "replication_pad2d(Tensor self, SymInt[4] padding) -> Tensor", kCore),
      pad_op("aten.replication_pad3d.default", "replication_pad3d(Tensor self, SymInt[6] padding) -> Tensor", kCore),
      pad_backward_op("aten.reflection_pad1d_backward.default",
                      "reflection_pad1d_backward(Tensor grad_output, Tensor self, SymInt[2] padding) -> Tensor"),
      pad_backward_op("aten.reflection_pad2d_backward.default",
                      "reflection_pad2d_backward(Tensor grad_output, Tensor self, SymInt[4] padding) -> Tensor"),
      pad_backward_op("aten.reflection_pad3d_backward.default",
                      "reflection_pad3d_backward(Tensor grad_output, Tensor self, SymInt[6] padding) -> Tensor"),
      pad_backward_op("aten.replication_pad1d_backward.default",
                      "replication_pad1d_backward(Tensor grad_output, Tensor self, SymInt[2] padding) -> Tensor"),
      pad_backward_op("aten.replication_pad2d_backward.default",
                      "replication_pad2d_backward(Tensor grad_output, Tensor self, SymInt[4] padding) -> Tensor"),
      pad_backward_op("aten.replication_pad3d_backward.default",
                      "replication_pad3d_backward(Tensor grad_output, Tensor self, SymInt[6] padding) -> Tensor"),
      comp("aten.upsample_nearest2d.vec", "upsample_nearest2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor",
           kCore, infer_upsample, ref_upsample, single<decomp_upsample_vec>, d_upsample),
      comp("aten.upsample_bilinear2d.vec",
           "upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor", kCore,
           infer_upsample, ref_upsample, single<decomp_upsample_vec>, d_upsample),
      comp("aten.upsample_nearest2d.default",
           "upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? scales_w=None) -> Tensor", kAten,
           infer_upsample, ref_upsample, single<decomp_upsample_default>),
      comp("aten.upsample_bilinear2d.default",
           "upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> "
           "Tensor",
           kAten, infer_upsample, ref_upsample, single<decomp_upsample_default>),
      comp("aten.upsample_nearest2d_backward.default",
           "upsample_nearest2d_backward(Tensor grad_output, SymInt[2] output_size, SymInt[4] input_size, float? scales_h=None, float? "
           "scales_w=None) -> Tensor",
           kAten, infer_upsample_backward, ref_upsample_backward, single<decomp_upsample_backward>),
      comp("aten.upsample_bilinear2d_backward.default",
           "upsample_bilinear2d_backward(Tensor grad_output, SymInt[2] output_size, SymInt[4] input_size, bool align_corners, float? "
           "scales_h=None, float? scales_w=None) -> Tensor",
           kAten, infer_upsample_backward, ref_upsample_backward, single<decomp_upsample_backward>),
      comp("aten.grid_sampler_2d.default",
           "grid_sampler_2d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners) -> Tensor", kCore,
           infer_grid_sampler, ref_grid_sampler, single<decomp_grid_sampler>),
      // Not in torch.Tag.core: Inductor runs it as a fallback kernel; here it decomposes (index_put
      // with accumulate, gathers), as its reference kernel computes it.
      comp("aten.grid_sampler_2d_backward.default",
           "grid_sampler_2d_backward(Tensor grad_output, Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool "
           "align_corners, bool[2] output_mask) -> (Tensor, Tensor)",
           kAten, infer_grid_sampler_backward, ref_grid_sampler_backward, decomp_grid_sampler_backward),
      ext("aten.col2im.default",
          "col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor",
          kCore, infer_col2im, ref_col2im, nullptr, d_col2im),
      comp("aten.im2col.default", "im2col(Tensor self, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor",
           kAten, infer_im2col, ref_im2col, single<decomp_im2col>, d_im2col),
      by_parts(comp("aten.pad.default", "pad(Tensor self, SymInt[] pad, str mode=\"constant\", float? value=None) -> Tensor", kAten,
                    infer_pad_modes, nullptr, single<decomp_pad_modes>)),
  };
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
