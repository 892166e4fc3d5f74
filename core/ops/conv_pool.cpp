// Convolution and pooling: convolution of 1, 2 or 3 spatial dims, plain or transposed (a library
// kernel), conv1d/2d/3d and conv_transpose1d/2d/3d, which decompose into it, max pooling with
// indices (generated code, a special case of the lowering), max_pool2d and adaptive_avg_pool2d,
// and the backward ops AOTAutograd's graphs call for convolution and max pooling (library
// kernels). Average pooling (2-D, 3-D), adaptive average pooling (2-D, 3-D) and 3-D max pooling
// with indices decompose into views, cat, slices and pointwise math, their backward ops likewise
// (3-D max pooling's backward: a scatter_add).
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "ops/rule_helpers.h"

namespace ls {
namespace {

using namespace rules;

// Strides and dilations must be positive, padding not negative.
void check_window(const OpDef& op, const std::vector<int64_t>& st, const std::vector<int64_t>& pad, const std::vector<int64_t>& dil) {
  for (int d = 0; d < 2; ++d)
    if (st[d] <= 0 || dil[d] <= 0 || pad[d] < 0)
      bad(op, "stride and dilation must be positive and padding not negative (stride " + std::to_string(st[d]) + ", dilation " +
                  std::to_string(dil[d]) + ", padding " + std::to_string(pad[d]) + ")");
}

// ---------------------------------------------------------------------------------------------
// Convolution: 1, 2 or 3 spatial dims, plain or transposed, any groups, stride, padding,
// dilation and output padding, as aten.convolution takes them. Input [N, Cin, in...]; weight
// [Cout, Cin/G, k...] (transposed: [Cin, Cout/G, k...]); output [N, Cout, out...].
// ---------------------------------------------------------------------------------------------

// One value per spatial dim (one value: every dim), as PyTorch's expand_param_if_needed.
std::vector<int64_t> conv_param(const OpDef& op, const Arg& a, size_t nd, const char* what) {
  std::vector<int64_t> v = a.kind == Arg::Kind::list || a.kind == Arg::Kind::integer ? a.ints() : std::vector<int64_t>{};
  if (v.size() == 1) v.assign(nd, v[0]);
  if (v.size() != nd) bad(op, std::string(what) + " must have " + std::to_string(nd) + " values, got " + shape_str(v));
  return v;
}

struct ConvGeom {
  bool transposed = false;
  int64_t N = 0, G = 1, Cin = 0, Cout = 0;
  Shape in, out, k;  // spatial sizes of the input, the output, the kernel
  std::vector<int64_t> st, pad, dil, opad;
};

// The geometry of convolution(x, w, ..., stride, padding, dilation, transposed, output_padding,
// groups) from its operands' shapes; `at`: the place of stride in the arguments. Checks what
// PyTorch's convolution checks; the output's spatial sizes follow from them.
ConvGeom conv_geom(const OpDef& op, const Shape& x, const Shape& w, const std::vector<Arg>& a, size_t at) {
  if (x.size() < 3 || x.size() > 5 || w.size() != x.size())
    bad(op, "expected a 3-D, 4-D or 5-D input (batched 1-D, 2-D or 3-D convolution) and a weight of the same rank, got input " +
                shape_str(x) + " and weight " + shape_str(w));
  const size_t nd = x.size() - 2;
  ConvGeom g;
  g.transposed = a[at + 3].b;
  g.st = conv_param(op, a[at], nd, "stride");
  g.pad = conv_param(op, a[at + 1], nd, "padding");
  g.dil = conv_param(op, a[at + 2], nd, "dilation");
  g.opad = g.transposed ? conv_param(op, a[at + 4], nd, "output_padding") : std::vector<int64_t>(nd, 0);
  g.G = a[at + 5].i;
  g.N = x[0];
  g.Cin = x[1];
  if (g.G <= 0) bad(op, "groups must be positive, got " + std::to_string(g.G));
  for (size_t d = 0; d < nd; ++d) {
    if (g.st[d] <= 0 || g.dil[d] <= 0 || g.pad[d] < 0)
      bad(op, "stride and dilation must be positive and padding not negative (stride " + std::to_string(g.st[d]) + ", dilation " +
                  std::to_string(g.dil[d]) + ", padding " + std::to_string(g.pad[d]) + ")");
    if (g.opad[d] < 0 || (g.opad[d] >= g.st[d] && g.opad[d] >= g.dil[d]))
      bad(op, "output padding must be smaller than either stride or dilation, got output_padding " + std::to_string(g.opad[d]) +
                  ", stride " + std::to_string(g.st[d]) + ", dilation " + std::to_string(g.dil[d]));
  }
  const int64_t wc = g.transposed ? w[0] : w[1] * g.G;  // the input channels the weight takes
  if (x[1] != wc || (g.transposed ? w[0] % g.G : w[0] % g.G))
    bad(op, "input channels " + std::to_string(x[1]) + " do not fit weight " + shape_str(w) + " with groups=" + std::to_string(g.G) +
                (g.transposed ? " (transposed)" : ""));
  g.Cout = g.transposed ? w[1] * g.G : w[0];
  for (size_t d = 0; d < nd; ++d) {
    const int64_t i = x[2 + d], k = w[2 + d];
    const int64_t o = g.transposed ? (i - 1) * g.st[d] - 2 * g.pad[d] + g.dil[d] * (k - 1) + g.opad[d] + 1
                                   : (i + 2 * g.pad[d] - g.dil[d] * (k - 1) - 1) / g.st[d] + 1;
    if (o <= 0 || (!g.transposed && i + 2 * g.pad[d] < g.dil[d] * (k - 1) + 1))
      bad(op, "the output's spatial size would be " + std::to_string(o) + " (input " + shape_str(x) + ", kernel " + shape_str(w) + ")");
    g.in.push_back(i);
    g.k.push_back(k);
    g.out.push_back(o);
  }
  return g;
}

// Every product of the convolution: f(xi, wi, yi) for y[yi] += x[xi] * w[wi], flat indices.
// Plain: out position o, tap k read input o*s - p + k*d. Transposed: input position i, tap k
// write output i*s - p + k*d. The table of (position, tap) -> other position is computed once.
template <class F>
void for_each_product(const ConvGeom& g, F&& f) {
  const size_t nd = g.k.size();
  const Shape& from = g.transposed ? g.in : g.out;  // the positions iterated
  const Shape& to = g.transposed ? g.out : g.in;    // the positions they meet
  const int64_t P = numel_of(from), K = numel_of(g.k), Q = numel_of(to);
  std::vector<int64_t> meet(static_cast<size_t>(P * K), -1);
  std::vector<int64_t> pi(nd, 0);
  for (int64_t p = 0; p < P; ++p) {
    int64_t r = p;
    for (size_t d = nd; d-- > 0;) pi[d] = r % from[d], r /= from[d];
    for (int64_t kk = 0; kk < K; ++kk) {
      int64_t rk = kk, q = 0, mul = 1;
      bool inside = true;
      for (size_t d = nd; d-- > 0;) {
        const int64_t kd = rk % g.k[d];
        rk /= g.k[d];
        const int64_t v = pi[d] * g.st[d] - g.pad[d] + kd * g.dil[d];
        if (v < 0 || v >= to[d]) inside = false;
        q += v * mul;
        mul *= to[d];
      }
      if (inside) meet[static_cast<size_t>(p * K + kk)] = q;
    }
  }
  const int64_t CinG = g.Cin / g.G, CoutG = g.Cout / g.G;
  const int64_t Pin = numel_of(g.in), Pout = numel_of(g.out);
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t gr = 0; gr < g.G; ++gr)
      for (int64_t oc = 0; oc < CoutG; ++oc)
        for (int64_t c = 0; c < CinG; ++c) {
          const int64_t xc = (n * g.Cin + gr * CinG + c) * Pin, yc = (n * g.Cout + gr * CoutG + oc) * Pout;
          const int64_t wc = (g.transposed ? (gr * CinG + c) * CoutG + oc : (gr * CoutG + oc) * CinG + c) * K;
          for (int64_t p = 0; p < P; ++p)
            for (int64_t kk = 0; kk < K; ++kk) {
              const int64_t q = meet[static_cast<size_t>(p * K + kk)];
              if (q < 0) continue;
              if (g.transposed) f(xc + p, wc + kk, yc + q);
              else f(xc + q, wc + kk, yc + p);
            }
        }
  (void)Q;
}

std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get(i);
  return v;
}

std::vector<TensorMeta> infer_convolution(const Graph& gr, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(gr, a[0]);
  const TensorMeta& w = meta_of(gr, a[1]);
  const ConvGeom g = conv_geom(op, x.shape, w.shape, a, 3);
  if (a[2].is_node() && numel_of(meta_of(gr, a[2]).shape) != g.Cout)
    bad(op, "bias must have " + std::to_string(g.Cout) + " elements, got " + shape_str(meta_of(gr, a[2]).shape));
  Shape out = {g.N, g.Cout};
  out.insert(out.end(), g.out.begin(), g.out.end());
  return {like(x, x.dtype, out)};
}
// In double, whatever the element type (float64 graphs check derivatives against finite differences).
std::vector<Tensor> ref_convolution(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const ConvGeom g = conv_geom(op, in[0].shape(), in[1].shape(), a, 3);
  const std::vector<double> xp = as_doubles(in[0]), wp = as_doubles(in[1]);
  std::vector<double> acc(static_cast<size_t>(numel_of(outs[0].shape)), 0.0);
  for_each_product(g, [&](int64_t xi, int64_t wi, int64_t yi) { acc[yi] += xp[xi] * wp[wi]; });
  Tensor y(outs[0].dtype, outs[0].shape);
  const int64_t P = numel_of(g.out);
  for (int64_t i = 0; i < y.numel(); ++i) y.set(i, acc[i] + (a[2].is_node() ? in[2].get((i / P) % g.Cout) : 0.0));
  return {y};
}
// conv1d, conv2d, conv3d (their int and string padding forms) and the transposed ones: composites
// of convolution, as PyTorch's (an unbatched input gets a batch dim of one, then loses it).
Arg batched(GraphBuilder& b, const Arg& x, size_t rank, bool unbatched) {
  (void)rank;
  return unbatched ? b.call("aten.unsqueeze.default", {x, Arg::of_int(0)}) : x;
}
template <int ND, bool Transposed>
std::vector<Arg> decomp_conv_nd(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const size_t rank = b.meta(a[0]).shape.size();
  if (rank != ND + 1 && rank != ND + 2)
    bad(op, "expected a " + std::to_string(ND + 1) + "-D (unbatched) or " + std::to_string(ND + 2) + "-D input, got " +
                shape_str(b.meta(a[0]).shape));
  const bool unbatched = rank == ND + 1;
  const Arg x = batched(b, a[0], rank, unbatched);
  const Arg bias = a.size() > 2 ? a[2] : Arg();
  auto param = [&](size_t i, int64_t dflt) {
    return Arg::of_ints(i < a.size() && a[i].kind != Arg::Kind::none ? conv_param(op, a[i], ND, op.params[i].name.c_str())
                                                                    : std::vector<int64_t>(ND, dflt));
  };
  Arg y;
  if (Transposed) {  // conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation)
    y = b.call("aten.convolution.default", {x, a[1], bias, param(3, 1), param(4, 0), param(7, 1), Arg::of_bool(true), param(5, 0),
                                            a.size() > 6 ? a[6] : Arg::of_int(1)});
  } else if (a.size() > 4 && a[4].kind == Arg::Kind::string) {  // padding='valid' or 'same'
    const std::vector<int64_t> st = conv_param(op, a[3], ND, "stride"), dil = conv_param(op, a[5], ND, "dilation");
    const Shape& w = b.meta(a[1]).shape;
    std::vector<int64_t> pad(ND, 0);
    Arg xin = x;
    if (a[4].s == "same") {
      for (int64_t s : st)
        if (s != 1) bad(op, "padding='same' is not supported for strided convolutions");
      std::vector<int64_t> pads(2 * ND, 0);  // F.pad's order: last dim first
      bool asymmetric = false;
      for (int d = 0; d < ND; ++d) {
        const int64_t total = dil[d] * (w[2 + d] - 1);
        pad[d] = total / 2;
        if (total % 2) pads[2 * (ND - 1 - d) + 1] = 1, asymmetric = true;  // one more on the right, as _convolution_same
      }
      if (asymmetric) xin = b.call("aten.constant_pad_nd.default", {xin, Arg::of_ints(pads), Arg::of_real(0.0)});
    } else if (a[4].s != "valid") {
      bad(op, "padding must be 'valid' or 'same', got '" + a[4].s + "'");
    }
    y = b.call("aten.convolution.default", {xin, a[1], bias, Arg::of_ints(st), Arg::of_ints(pad), Arg::of_ints(dil), Arg::of_bool(false),
                                            Arg::of_ints(std::vector<int64_t>(ND, 0)), a.size() > 6 ? a[6] : Arg::of_int(1)});
  } else {
    y = b.call("aten.convolution.default", {x, a[1], bias, param(3, 1), param(4, 0), param(5, 1), Arg::of_bool(false),
                                            Arg::of_ints(std::vector<int64_t>(ND, 0)), a.size() > 6 ? a[6] : Arg::of_int(1)});
  }
  if (unbatched) y = b.call("aten.squeeze.dim", {y, Arg::of_int(0)});
  return {y};
}
std::vector<TensorMeta> infer_conv2d(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  static const OpDef* conv = find_op("aten.convolution.default");
  (void)op;
  return infer_convolution(g, *conv, {a[0], a[1], a[2], Arg::of_ints(spatial_pair(a[3])), Arg::of_ints(spatial_pair(a[4])),
                                      Arg::of_ints(spatial_pair(a[5])), Arg::of_bool(false), Arg::of_ints({0, 0}), a[6]});
}
std::vector<Arg> decomp_conv2d(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  return {b.call("aten.convolution.default", {a[0], a[1], a[2], Arg::of_ints(spatial_pair(a[3])), Arg::of_ints(spatial_pair(a[4])),
                                              Arg::of_ints(spatial_pair(a[5])), Arg::of_bool(false), Arg::of_ints({0, 0}), a[6]})};
}

// convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
// transposed, output_padding, groups, output_mask): the gradients of input, weight and bias.
std::vector<TensorMeta> conv_backward_meta(const Graph& g, const OpDef&, const std::vector<Arg>& a) {
  const TensorMeta &gy = meta_of(g, a[0]), &x = meta_of(g, a[1]), &w = meta_of(g, a[2]);
  const Shape bias = a[3].kind == Arg::Kind::list ? Shape(a[3].ints()) : Shape{gy.shape.at(1)};
  return {like(x, x.shape), like(w, w.shape), like(w, bias)};
}
std::vector<Tensor> conv_backward_ref(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &gy = in[0], &x = in[1], &w = in[2];
  const ConvGeom g = conv_geom(op, x.shape(), w.shape(), a, 4);
  if (gy.dim() < 2 || gy.shape()[0] != g.N || gy.shape()[1] != g.Cout || Shape(gy.shape().begin() + 2, gy.shape().end()) != g.out)
    bad(op, "grad_output " + shape_str(gy.shape()) + " does not have the convolution's output shape");
  const std::vector<double> gyp = as_doubles(gy), xp = as_doubles(x), wp = as_doubles(w);
  std::vector<double> gx(static_cast<size_t>(x.numel()), 0), gw(static_cast<size_t>(w.numel()), 0), gb(static_cast<size_t>(g.Cout), 0);
  for_each_product(g, [&](int64_t xi, int64_t wi, int64_t yi) {
    gx[xi] += gyp[yi] * wp[wi];
    gw[wi] += gyp[yi] * xp[xi];
  });
  const int64_t P = numel_of(g.out);
  for (int64_t i = 0; i < gy.numel(); ++i) gb[static_cast<size_t>((i / P) % g.Cout)] += gyp[i];
  Tensor tx(outs[0].dtype, outs[0].shape), tw(outs[1].dtype, outs[1].shape), tb(outs[2].dtype, outs[2].shape);
  for (int64_t i = 0; i < tx.numel(); ++i) tx.set(i, gx[i]);
  for (int64_t i = 0; i < tw.numel(); ++i) tw.set(i, gw[i]);
  for (int64_t i = 0; i < tb.numel() && i < g.Cout; ++i) tb.set(i, gb[i]);
  return {tx, tw, tb};
}

Args d_convolution(DerivCtx& c) {
  const Args& a = c.args;
  Args r(9, kNone);
  const bool gi = wants(c, 0), gw = wants(c, 1), gb = wants(c, 2);
  if (!gi && !gw && !gb) return r;
  Arg mask;
  mask.kind = Arg::Kind::list;
  for (bool m : {gi, gw, gb}) mask.list.push_back(Arg::of_bool(m));
  const Arg bias_sizes = a[2].is_node() ? ints(shape_of(c, a[2])) : kNone;
  const Arg cb = call(c, "aten.convolution_backward.default",
                      {c.grads[0], a[0], a[1], bias_sizes, a[3], a[4], a[5], a[6], a[7], a[8], mask});
  if (gi) r[0] = c.b.get(cb, 0);
  if (gw) r[1] = c.b.get(cb, 1);
  if (gb) r[2] = c.b.get(cb, 2);
  return r;
}

// ---------------------------------------------------------------------------------------------
// Pooling
// ---------------------------------------------------------------------------------------------

struct Pool { std::vector<int64_t> k, st, pad, dil; bool ceil; };
Pool pool_of(const std::vector<Arg>& a) {
  Pool p;
  p.k = spatial_pair(a[1]);
  // An empty stride means the kernel size, as in PyTorch.
  p.st = a[2].kind == Arg::Kind::list && a[2].list.empty() ? p.k : spatial_pair(a[2]);
  p.pad = spatial_pair(a[3]);
  p.dil = spatial_pair(a[4]);
  p.ceil = a[5].b;
  return p;
}
int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil) {
  const int64_t span = in + 2 * p - d * (k - 1) - 1;
  int64_t o = (ceil ? (span + s - 1) / s : span / s) + 1;
  if (ceil && (o - 1) * s >= in + p) --o;
  return o;
}
std::vector<TensorMeta> infer_max_pool(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  if (x.shape.size() != 4 && x.shape.size() != 3) bad(op, "needs a 3-D or 4-D input");
  const Pool p = pool_of(a);
  check_window(op, p.st, p.pad, p.dil);
  if (p.k[0] <= 0 || p.k[1] <= 0) bad(op, "kernel size must be positive");
  Shape out = x.shape;
  const size_t r = out.size();
  for (int d = 0; d < 2; ++d) {
    out[r - 2 + d] = pool_out(x.shape[r - 2 + d], p.k[d], p.st[d], p.pad[d], p.dil[d], p.ceil);
    if (out[r - 2 + d] <= 0) bad(op, "output would be empty");
  }
  if (op.num_outputs == 1) return {like(x, x.dtype, out)};
  return {like(x, x.dtype, out), like(x, DType::i64, out)};
}
std::vector<Tensor> ref_max_pool(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  const Pool p = pool_of(a);
  const size_t r = x.shape().size();
  const int64_t H = x.shape()[r - 2], W = x.shape()[r - 1], planes = x.numel() / (H * W);
  Tensor y(outs[0].dtype, outs[0].shape), idx(DType::i64, outs[0].shape);
  const int64_t OH = y.shape()[r - 2], OW = y.shape()[r - 1];
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double best = -std::numeric_limits<double>::infinity();
        int64_t arg = -1;
        for (int64_t kh = 0; kh < p.k[0]; ++kh)
          for (int64_t kw = 0; kw < p.k[1]; ++kw) {
            const int64_t ih = oh * p.st[0] - p.pad[0] + kh * p.dil[0], iw = ow * p.st[1] - p.pad[1] + kw * p.dil[1];
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            const double v = x.get((pl * H + ih) * W + iw);
            if (v > best || std::isnan(v) || arg < 0) { best = v; arg = ih * W + iw; }
          }
        y.set((pl * OH + oh) * OW + ow, best);
        idx.set((pl * OH + oh) * OW + ow, static_cast<double>(arg));
      }
  if (op.num_outputs == 1) return {y};
  return {y, idx};
}
std::vector<Arg> decomp_max_pool2d(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Arg r = b.call("aten.max_pool2d_with_indices.default", {a[0], a[1], a[2], a[3], a[4], a[5]});
  return {b.get(r, 0)};
}

std::vector<TensorMeta> infer_adaptive_avg_pool(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  const auto os = spatial_pair(a[1]);
  if (x.shape.size() < 3) bad(op, "needs a 3-D or 4-D input");
  if (os[0] <= 0 || os[1] <= 0) bad(op, "output size must be positive");
  Shape out = x.shape;
  out[out.size() - 2] = os[0];
  out[out.size() - 1] = os[1];
  return {like(x, x.dtype, out)};
}
std::vector<Tensor> ref_adaptive_avg_pool(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  const auto os = spatial_pair(a[1]);
  const size_t r = x.shape().size();
  const int64_t H = x.shape()[r - 2], W = x.shape()[r - 1], planes = x.numel() / (H * W);
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t oh = 0; oh < os[0]; ++oh)
      for (int64_t ow = 0; ow < os[1]; ++ow) {
        const int64_t h0 = oh * H / os[0], h1 = ((oh + 1) * H + os[0] - 1) / os[0];
        const int64_t w0 = ow * W / os[1], w1 = ((ow + 1) * W + os[1] - 1) / os[1];
        double s = 0;
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w) s += x.get((pl * H + h) * W + w);
        y.set((pl * os[0] + oh) * os[1] + ow, s / double((h1 - h0) * (w1 - w0)));
      }
  return {y};
}
// Evenly dividing windows: a view that splits each spatial dim, then a mean over the windows.
std::vector<Arg> decomp_adaptive_avg_pool(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape x = b.meta(a[0]).shape;
  const auto os = spatial_pair(a[1]);
  const size_t r = x.size();
  const int64_t H = x[r - 2], W = x[r - 1];
  if (H % os[0] || W % os[1]) bad(op, "output size must divide the input size to decompose");
  if (os[0] == 1 && os[1] == 1)
    return {b.call("aten.mean.dim", {a[0], Arg::of_ints({-1, -2}), Arg::of_bool(true)})};
  Shape v(x.begin(), x.end() - 2);
  v.insert(v.end(), {os[0], H / os[0], os[1], W / os[1]});
  const Arg split = b.call("aten.view.default", {a[0], Arg::of_ints(v)});
  const int64_t n = static_cast<int64_t>(v.size());
  return {b.call("aten.mean.dim", {split, Arg::of_ints({n - 3, n - 1}), Arg::of_bool(false)})};
}

std::vector<Tensor> max_pool_backward_ref(const OpDef&, const std::vector<Arg>&, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &gy = in[0], &x = in[1], &idx = in[7];
  const size_t r = x.shape().size();
  const int64_t plane_in = x.shape()[r - 2] * x.shape()[r - 1], plane_out = gy.shape()[r - 2] * gy.shape()[r - 1];
  Tensor gx(outs[0].dtype, outs[0].shape);
  std::vector<double> acc(gx.numel(), 0);
  for (int64_t i = 0; i < gy.numel(); ++i) {
    const int64_t plane = i / plane_out, j = static_cast<int64_t>(idx.get(i));
    if (j < 0 || j >= plane_in) throw std::invalid_argument("max_pool2d_with_indices_backward: index out of range");
    acc[plane * plane_in + j] += gy.get(i);
  }
  for (int64_t i = 0; i < gx.numel(); ++i) gx.set(i, acc[i]);
  return {gx};
}

// max_pool2d_with_indices_backward (derivatives.yaml): grad_output: max_pool_double_backward(grad,
// indices, 2), the gradient read at each window's saved maximum (a gather over the flattened
// plane); self: zeros_like(self).
Args d_max_pool_backward(DerivCtx& c) {
  Args r(8, kNone);
  if (wants(c, 0)) {
    const Shape g = shape_of(c, c.grads[0]), ix = shape_of(c, c.args[7]);
    auto flat = [](Shape s) {
      const int64_t plane = s[s.size() - 2] * s.back();
      s.pop_back();
      s.back() = plane;
      return s;
    };
    const Arg gathered = call(c, "aten.gather.default", {call(c, "aten.reshape.default", {c.grads[0], ints(flat(g))}), Arg::of_int(-1),
                                                         call(c, "aten.reshape.default", {c.args[7], ints(flat(ix))})});
    r[0] = call(c, "aten.view.default", {gathered, ints(ix)});
  }
  if (wants(c, 1)) r[1] = zeros(c, shape_of(c, c.args[1]), c.b.meta(c.grads[0]).dtype);
  return r;
}
Args d_max_pool(DerivCtx& c) {
  const Args& a = c.args;  // self, kernel_size, stride, padding, dilation, ceil_mode
  return one(call(c, "aten.max_pool2d_with_indices_backward.default", {c.grads[0], a[0], a[1], a[2], a[3], a[4], a[5], c.out(1)}), 6);
}

// ---------------------------------------------------------------------------------------------
// Pooling of 2 or 3 spatial dimensions (the last nd dims): average pooling, adaptive average
// pooling, 3-D max pooling with indices. Their decompositions are views, cat (padding), slices and
// pointwise math, so they lower to generated code (Inductor lowers them as window loops).
// ---------------------------------------------------------------------------------------------

// One value per spatial dim of a window argument (one value means all of them).
std::vector<int64_t> spatial_n(const OpDef& op, const Arg& a, int nd, const char* what) {
  std::vector<int64_t> v = a.ints();
  if (v.size() == 1) v.assign(static_cast<size_t>(nd), v[0]);
  if (static_cast<int>(v.size()) != nd)
    bad(op, std::string(what) + " must be one value or " + std::to_string(nd) + " values, got " + shape_str(v));
  return v;
}
Shape spatial_shape(const Shape& s, int nd) { return Shape(s.end() - nd, s.end()); }

// A constant of the graph under a name no value of the graph has yet: decompose() copies the
// constants of an earlier round after the nodes before them have been expanded, and a new
// constant of the same name would take that name's value (passes/decompose.cpp renames the kept
// one without its value).
Arg constant(GraphBuilder& b, const std::string& base, const Tensor& t) {
  std::string name = base;
  for (int k = 1; b.graph().weights.count(name) || b.taken(name); ++k) name = base + "_" + std::to_string(k);
  return b.constant(name, t);
}
// A 0-d constant of this value, expanded to `shape` (a view: nothing is stored).
Arg filled(GraphBuilder& b, double v, DType dt, const Shape& shape) {
  Tensor t(dt, {});
  if (!dtype_is_float(dt) && std::isinf(v)) {  // max pooling's -inf pad of an integer tensor: its lowest value
    const bool low = v < 0;
    v = dt == DType::i64 ? (low ? -9223372036854775808.0 : 9223372036854774784.0)
        : dt == DType::i32 ? (low ? -2147483648.0 : 2147483647.0)
        : dt == DType::u8 ? (low ? 0.0 : 255.0) : (low ? 0.0 : 1.0);
  }
  t.set(0, v);
  const Arg c = constant(b, v == 0 ? "pool_zeros" : "pool_fill", t);
  return shape.empty() ? c : b.call("aten.expand.default", {c, Arg::of_ints(shape)});
}
// x padded along `dim` with `left` and `right` elements of value v (a cat).
Arg pad_dim(GraphBuilder& b, const Arg& x, int64_t dim, int64_t left, int64_t right, double v) {
  if (left <= 0 && right <= 0) return x;
  const TensorMeta m = b.meta(x);
  Arg parts;
  parts.kind = Arg::Kind::list;
  Shape s = m.shape;
  if (left > 0) { s[dim] = left; parts.list.push_back(filled(b, v, m.dtype, s)); }
  parts.list.push_back(x);
  if (right > 0) { s[dim] = right; parts.list.push_back(filled(b, v, m.dtype, s)); }
  return b.call("aten.cat.default", {parts, Arg::of_int(dim)});
}
Arg slice_dim(GraphBuilder& b, const Arg& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1) {
  return b.call("aten.slice.Tensor", {x, Arg::of_int(dim), Arg::of_int(start), Arg::of_int(end), Arg::of_int(step)});
}
// x with a dimension of size 1 inserted before `dim`, expanded to n there, merged into `dim`'s
// neighbour: each element repeated n times along dim (n = 1: x).
Arg repeat_each(GraphBuilder& b, const Arg& x, int64_t dim, int64_t n) {
  if (n == 1) return x;
  Shape s = b.meta(x).shape, e = s;
  s.insert(s.begin() + dim + 1, 1);
  e.insert(e.begin() + dim + 1, n);
  Shape merged = b.meta(x).shape;
  merged[dim] *= n;
  const Arg v = b.call("aten.view.default", {x, Arg::of_ints(s)});
  return b.call("aten.view.default", {b.call("aten.expand.default", {v, Arg::of_ints(e)}), Arg::of_ints(merged)});
}

// The sum or mean (op) of x over [lo, hi) along dim, the dim kept; a one-wide window is the slice
// itself (and a reduction over a one-wide slice is what the CPU code generator cannot write yet).
Arg window_reduce(GraphBuilder& b, const char* op, const Arg& x, int64_t dim, int64_t lo, int64_t hi) {
  const Arg sl = slice_dim(b, x, dim, lo, hi);
  return hi - lo == 1 ? sl : b.call(op, {sl, Arg::of_ints({dim}), Arg::of_bool(true)});
}

// ---- average pooling ----

struct AvgPool {
  int nd;
  std::vector<int64_t> k, st, pad, in, out;
  bool ceil, include_pad;
  int64_t divisor;  // 0: none
};
// a: self (or grad_output, self: `first` is the position of self), kernel_size, stride, padding,
// ceil_mode, count_include_pad, divisor_override.
AvgPool avg_pool_of(const OpDef& op, const Shape& x, const std::vector<Arg>& a, int nd, size_t first) {
  AvgPool p;
  p.nd = nd;
  if (static_cast<int>(x.size()) != nd + 1 && static_cast<int>(x.size()) != nd + 2)
    bad(op, "needs a " + std::to_string(nd + 1) + "-D or " + std::to_string(nd + 2) + "-D input, got " + shape_str(x));
  p.k = spatial_n(op, a[first + 1], nd, "kernel_size");
  const Arg& s = a[first + 2];
  p.st = s.kind == Arg::Kind::list && s.list.empty() ? p.k : spatial_n(op, s, nd, "stride");
  p.pad = spatial_n(op, a[first + 3], nd, "padding");
  p.ceil = a[first + 4].b;
  p.include_pad = a[first + 5].b;
  p.divisor = a[first + 6].is_none() ? 0 : a[first + 6].i;
  if (!a[first + 6].is_none() && p.divisor == 0) bad(op, "divisor must be not zero");
  p.in = spatial_shape(x, nd);
  for (int d = 0; d < nd; ++d) {
    if (p.k[d] <= 0) bad(op, "kernel size must be greater than zero, but got " + std::to_string(p.k[d]));
    if (p.st[d] <= 0) bad(op, "stride should be greater than zero, but got " + std::to_string(p.st[d]));
    if (p.pad[d] < 0 || p.pad[d] > p.k[d] / 2)
      bad(op, "pad should be at most half of effective kernel size, but got pad=" + std::to_string(p.pad[d]) +
                  ", kernel_size=" + std::to_string(p.k[d]) + " and dilation=1");
    const int64_t o = pool_out(p.in[d], p.k[d], p.st[d], p.pad[d], 1, p.ceil);
    if (o <= 0)
      bad(op, "given input size " + shape_str(p.in) + ", the calculated output size in dimension " + std::to_string(d) + " is " +
                  std::to_string(o) + ": output size is too small");
    p.out.push_back(o);
  }
  return p;
}
// One dimension of a window: its start in the input, its end, and the count PyTorch divides by
// (the window clipped to input + padding) and the number of real elements it covers.
struct Window1 { int64_t lo, hi, pool_size; };
Window1 avg_window(const AvgPool& p, int d, int64_t o) {
  int64_t lo = o * p.st[d] - p.pad[d];
  int64_t hi = std::min(lo + p.k[d], p.in[d] + p.pad[d]);
  const int64_t pool_size = hi - lo;
  lo = std::max<int64_t>(lo, 0);
  hi = std::min(hi, p.in[d]);
  return {lo, hi, pool_size};
}
// The divisor of each output position (row-major over the spatial output), as PyTorch's kernel.
std::vector<double> avg_divisors(const AvgPool& p) {
  const int64_t n = numel_of(p.out);
  std::vector<double> div(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const Shape pos = unravel(i, p.out);
    double pool = 1, real = 1;
    for (int d = 0; d < p.nd; ++d) {
      const Window1 w = avg_window(p, d, pos[d]);
      pool *= static_cast<double>(w.pool_size);
      real *= static_cast<double>(std::max<int64_t>(w.hi - w.lo, 0));
    }
    div[i] = p.divisor ? static_cast<double>(p.divisor) : p.include_pad ? pool : real;
  }
  return div;
}

template <int ND>
std::vector<TensorMeta> infer_avg_pool(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  if (x.dtype == DType::b8) bad(op, "not implemented for 'Bool'");  // integers: PyTorch's CPU kernel, a truncating division
  const AvgPool p = avg_pool_of(op, x.shape, a, ND, 0);
  Shape out = x.shape;
  for (int d = 0; d < ND; ++d) out[out.size() - ND + d] = p.out[d];
  return {like(x, x.dtype, out)};
}
template <int ND>
std::vector<Tensor> ref_avg_pool(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  const AvgPool p = avg_pool_of(op, x.shape(), a, ND, 0);
  const int64_t plane_in = numel_of(p.in), plane_out = numel_of(p.out), planes = x.numel() / plane_in;
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t o = 0; o < plane_out; ++o) {
      const Shape pos = unravel(o, p.out);
      Shape lo(ND), hi(ND);
      double pool = 1, real = 1;
      for (int d = 0; d < ND; ++d) {
        const Window1 w = avg_window(p, d, pos[d]);
        lo[d] = w.lo;
        hi[d] = w.hi;
        pool *= static_cast<double>(w.pool_size);
        real *= static_cast<double>(std::max<int64_t>(w.hi - w.lo, 0));
      }
      double s = 0;
      Shape ext(ND);
      for (int d = 0; d < ND; ++d) ext[d] = std::max<int64_t>(hi[d] - lo[d], 0);
      for (int64_t j = 0; j < numel_of(ext); ++j) {
        const Shape q = unravel(j, ext);
        int64_t off = 0;
        for (int d = 0; d < ND; ++d) off = off * p.in[d] + lo[d] + q[d];
        s += x.get(pl * plane_in + off);
      }
      const double div = p.divisor ? static_cast<double>(p.divisor) : p.include_pad ? pool : real;
      const double v = real == 0 ? 0.0 : s / div;
      y.set(pl * plane_out + o, dtype_is_float(y.dtype()) ? v : std::trunc(v));
    }
  return {y};
}
// The window sums, one spatial dim at a time (a window sum is separable): padding as a cat of
// zeros, then the sum of the k strided slices, or, where the windows tile the dim (stride ==
// kernel), a view that splits it and a sum over the window; then one division by the divisors
// (a number where they are all the same, else a constant of the output's spatial shape).
Arg divisor_arg(double d, DType dt) { return dtype_is_float(dt) ? Arg::of_real(d) : Arg::of_int(static_cast<int64_t>(d)); }
// The window sums divided by the divisors: of integers, a division that truncates (C++'s, as
// PyTorch's CPU kernel divides its int64 sum), back in the input's type.
Arg divide_windows(GraphBuilder& b, const Arg& sums, const Arg& divisor, DType dt) {
  if (dtype_is_float(dt)) return b.call("aten.div.Tensor", {sums, divisor});
  Arg q = divisor.is_node() ? b.call("aten.div.Tensor_mode", {sums, divisor}, {{"rounding_mode", Arg::of_string("trunc")}})
                            : b.call("aten.div.Scalar_mode", {sums, divisor}, {{"rounding_mode", Arg::of_string("trunc")}});
  if (b.meta(q).dtype != dt) q = b.call("prims.convert_element_type.default", {q, Arg::of_string(std::string(dtype_torch(dt)))});
  return q;
}
template <int ND>
std::vector<Arg> decomp_avg_pool(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape xs = b.meta(a[0]).shape;
  const DType dt = b.meta(a[0]).dtype;
  const AvgPool p = avg_pool_of(op, xs, a, ND, 0);
  const int64_t r = static_cast<int64_t>(xs.size());
  const std::vector<double> div = avg_divisors(p);
  const bool uniform = std::all_of(div.begin(), div.end(), [&](double v) { return v == div[0]; });
  bool tiles = uniform;
  for (int d = 0; d < ND; ++d) tiles = tiles && p.st[d] == p.k[d] && p.pad[d] == 0 && p.out[d] * p.k[d] <= p.in[d];
  if (tiles) {
    // The windows tile the input (what is left over is dropped): a view that splits every
    // spatial dim, and one mean (or sum / divisor_override) over the windows, as adaptive pooling.
    Arg x = a[0];
    for (int d = 0; d < ND; ++d)
      if (p.out[d] * p.k[d] < p.in[d]) x = slice_dim(b, x, r - ND + d, 0, p.out[d] * p.k[d]);
    Shape v(xs.begin(), xs.end() - ND);
    std::vector<int64_t> win;
    for (int d = 0; d < ND; ++d) {
      v.insert(v.end(), {p.out[d], p.k[d]});
      win.push_back(static_cast<int64_t>(v.size()) - 1);
    }
    const Arg split = b.call("aten.view.default", {x, Arg::of_ints(v)});
    if (div[0] == static_cast<double>(numel_of(p.k)) && dtype_is_float(dt))
      return {b.call("aten.mean.dim", {split, Arg::of_ints(win), Arg::of_bool(false)})};
    return {divide_windows(b, b.call("aten.sum.dim_IntList", {split, Arg::of_ints(win), Arg::of_bool(false)}), divisor_arg(div[0], dt), dt)};
  }
  Arg x = a[0];
  for (int d = 0; d < ND; ++d) {
    const int64_t dim = r - ND + d, span = (p.out[d] - 1) * p.st[d] + 1;
    const int64_t right = std::max<int64_t>(0, (p.out[d] - 1) * p.st[d] + p.k[d] - p.pad[d] - p.in[d]);
    x = pad_dim(b, x, dim, p.pad[d], right, 0.0);
    Arg s;
    for (int64_t j = 0; j < p.k[d]; ++j) {
      const Arg sl = slice_dim(b, x, dim, j, j + span, p.st[d]);
      s = j == 0 ? sl : b.call("aten.add.Tensor", {s, sl});
    }
    x = s;
  }
  if (uniform) return {divide_windows(b, x, divisor_arg(div[0], dt), dt)};
  Tensor dv(dt, p.out);
  for (int64_t i = 0; i < dv.numel(); ++i) dv.set(i, div[i]);
  return {divide_windows(b, x, constant(b, "pool_divisor", dv), dt)};
}

// avg_pool backward: grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
// divisor_override.
template <int ND>
std::vector<Tensor> ref_avg_pool_backward(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in,
                                          const std::vector<TensorMeta>& outs) {
  const Tensor &gy = in[0], &x = in[1];
  const AvgPool p = avg_pool_of(op, x.shape(), a, ND, 1);
  const int64_t plane_in = numel_of(p.in), plane_out = numel_of(p.out), planes = x.numel() / plane_in;
  if (gy.numel() != planes * plane_out) bad(op, "grad_output " + shape_str(gy.shape()) + " does not fit the pooling of " + shape_str(x.shape()));
  const std::vector<double> div = avg_divisors(p);
  std::vector<double> acc(static_cast<size_t>(x.numel()), 0.0);
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t o = 0; o < plane_out; ++o) {
      const Shape pos = unravel(o, p.out);
      Shape lo(ND), ext(ND);
      for (int d = 0; d < ND; ++d) {
        const Window1 w = avg_window(p, d, pos[d]);
        lo[d] = w.lo;
        ext[d] = std::max<int64_t>(w.hi - w.lo, 0);
      }
      const double g = gy.get(pl * plane_out + o) / div[o];
      for (int64_t j = 0; j < numel_of(ext); ++j) {
        const Shape q = unravel(j, ext);
        int64_t off = 0;
        for (int d = 0; d < ND; ++d) off = off * p.in[d] + lo[d] + q[d];
        acc[pl * plane_in + off] += g;
      }
    }
  Tensor gx(outs[0].dtype, outs[0].shape);
  for (int64_t i = 0; i < gx.numel(); ++i) gx.set(i, acc[i]);
  return {gx};
}
// The transpose of the forward's separable window sum: the gradient divided by the divisors, then
// per spatial dim either repeated over each window (stride == kernel, no padding) or spread out
// by the stride (zeros between), padded, and summed over k shifted slices of the input's length.
template <int ND>
std::vector<Arg> decomp_avg_pool_backward(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape xs = b.meta(a[1]).shape;
  const DType dt = b.meta(a[0]).dtype;
  const AvgPool p = avg_pool_of(op, xs, a, ND, 1);
  const int64_t r = static_cast<int64_t>(xs.size());
  const std::vector<double> div = avg_divisors(p);
  const bool uniform = std::all_of(div.begin(), div.end(), [&](double v) { return v == div[0]; });
  Arg g;
  if (uniform) {
    g = b.call("aten.div.Tensor", {a[0], Arg::of_real(div[0])});
  } else {
    Tensor dv(dt, p.out);
    for (int64_t i = 0; i < dv.numel(); ++i) dv.set(i, div[i]);
    g = b.call("aten.div.Tensor", {a[0], constant(b, "pool_divisor", dv)});
  }
  for (int d = 0; d < ND; ++d) {
    const int64_t dim = r - ND + d, O = p.out[d], s = p.st[d], k = p.k[d], in = p.in[d], pad = p.pad[d];
    if (s == k && pad == 0) {
      g = repeat_each(b, g, dim, k);  // [.., O*k, ..]
      if (O * k < in) g = pad_dim(b, g, dim, 0, in - O * k, 0.0);
      else if (O * k > in) g = slice_dim(b, g, dim, 0, in);  // (ceil_mode: the last window overhangs)
      continue;
    }
    // u[t] = g[t / s] where t % s == 0, else 0: g with s - 1 zeros after each element.
    Arg u = g;
    if (s > 1) {
      Shape one = b.meta(g).shape;
      one.insert(one.begin() + dim + 1, 1);
      const Arg v = b.call("aten.view.default", {g, Arg::of_ints(one)});
      Shape merged = b.meta(g).shape;
      merged[dim] *= s;
      u = b.call("aten.view.default", {pad_dim(b, v, dim + 1, 0, s - 1, 0.0), Arg::of_ints(merged)});
    }
    // grad of padded input position i = sum_{j<k} u[i - j]; with k - 1 zeros in front, the input's
    // positions [pad, pad + in) read the slices starting at pad + m, m < k.
    const int64_t right = std::max<int64_t>(0, pad + in - O * s);
    const Arg up = pad_dim(b, u, dim, k - 1, right, 0.0);
    Arg sum;
    for (int64_t m = 0; m < k; ++m) {
      const Arg sl = slice_dim(b, up, dim, pad + m, pad + m + in);
      sum = m == 0 ? sl : b.call("aten.add.Tensor", {sum, sl});
    }
    g = sum;
  }
  return {g};
}

template <int ND>
Args d_avg_pool(DerivCtx& c) {
  const Args& a = c.args;  // self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
  const char* back = ND == 2 ? "aten.avg_pool2d_backward.default" : "aten.avg_pool3d_backward.default";
  return one(call(c, back, {c.grads[0], a[0], a[1], a[2], a[3], a[4], a[5], a[6]}), 7);
}

// ---- adaptive average pooling ----

// Output o of an adaptive window over n inputs: [floor(o * n / out), ceil((o + 1) * n / out)).
int64_t adaptive_lo(int64_t o, int64_t n, int64_t out) { return (o * n) / out; }
int64_t adaptive_hi(int64_t o, int64_t n, int64_t out) { return ((o + 1) * n + out - 1) / out; }

std::vector<int64_t> adaptive_sizes(const OpDef& op, const Shape& x, const Arg& size, int nd) {
  if (static_cast<int>(x.size()) != nd + 1 && static_cast<int>(x.size()) != nd + 2)
    bad(op, "needs a " + std::to_string(nd + 1) + "-D or " + std::to_string(nd + 2) + "-D input, got " + shape_str(x));
  for (int d = 0; d < nd; ++d)
    if (x[x.size() - nd + d] <= 0) bad(op, "input " + shape_str(x) + " has an empty spatial dimension");
  const std::vector<int64_t> os = spatial_n(op, size, nd, "output_size");
  for (int64_t o : os)
    if (o <= 0) bad(op, "output size must be positive, got " + shape_str(os));
  return os;
}
template <int ND>
std::vector<TensorMeta> infer_adaptive_pool_nd(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  const std::vector<int64_t> os = adaptive_sizes(op, x.shape, a[1], ND);
  Shape out = x.shape;
  for (int d = 0; d < ND; ++d) out[out.size() - ND + d] = os[d];
  return {like(x, x.dtype, out)};
}
template <int ND>
std::vector<Tensor> ref_adaptive_pool_nd(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  const std::vector<int64_t> os = adaptive_sizes(op, x.shape(), a[1], ND);
  const Shape is = spatial_shape(x.shape(), ND);
  const int64_t plane_in = numel_of(is), plane_out = numel_of(os), planes = x.numel() / plane_in;
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t o = 0; o < plane_out; ++o) {
      const Shape pos = unravel(o, os);
      Shape lo(ND), ext(ND);
      for (int d = 0; d < ND; ++d) {
        lo[d] = adaptive_lo(pos[d], is[d], os[d]);
        ext[d] = adaptive_hi(pos[d], is[d], os[d]) - lo[d];
      }
      double s = 0;
      for (int64_t j = 0; j < numel_of(ext); ++j) {
        const Shape q = unravel(j, ext);
        int64_t off = 0;
        for (int d = 0; d < ND; ++d) off = off * is[d] + lo[d] + q[d];
        s += x.get(pl * plane_in + off);
      }
      y.set(pl * plane_out + o, s / static_cast<double>(numel_of(ext)));
    }
  return {y};
}
// Where every output size divides its input size: a view that splits each spatial dim and one
// mean over the windows. Otherwise one dim at a time (the mean over a window is separable):
// dims that divide as above, the others as the cat of each window's mean.
template <int ND>
std::vector<Arg> decomp_adaptive_pool_nd(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape x = b.meta(a[0]).shape;
  const std::vector<int64_t> os = adaptive_sizes(op, x, a[1], ND);
  const int64_t r = static_cast<int64_t>(x.size());
  bool divides = true;
  for (int d = 0; d < ND; ++d) divides = divides && x[r - ND + d] % os[d] == 0;
  if (divides) {
    Shape v(x.begin(), x.end() - ND);
    std::vector<int64_t> win;
    for (int d = 0; d < ND; ++d) {
      v.insert(v.end(), {os[d], x[r - ND + d] / os[d]});
      win.push_back(static_cast<int64_t>(v.size()) - 1);
    }
    const Arg split = b.call("aten.view.default", {a[0], Arg::of_ints(v)});
    return {b.call("aten.mean.dim", {split, Arg::of_ints(win), Arg::of_bool(false)})};
  }
  Arg y = a[0];
  for (int d = 0; d < ND; ++d) {
    const int64_t dim = r - ND + d, n = x[dim], o = os[d];
    if (n % o == 0) {
      if (n == o) continue;
      Shape v = b.meta(y).shape;
      v[dim] = o;
      v.insert(v.begin() + dim + 1, n / o);
      y = b.call("aten.mean.dim", {b.call("aten.view.default", {y, Arg::of_ints(v)}), Arg::of_ints({dim + 1}), Arg::of_bool(false)});
      continue;
    }
    Arg parts;
    parts.kind = Arg::Kind::list;
    for (int64_t i = 0; i < o; ++i)
      parts.list.push_back(window_reduce(b, "aten.mean.dim", y, dim, adaptive_lo(i, n, o), adaptive_hi(i, n, o)));
    y = b.call("aten.cat.default", {parts, Arg::of_int(dim)});
  }
  return {y};
}

// adaptive_avg_pool2d (export level): a mean over the last two dims for a 1x1 output (as ATen's
// composite does), else _adaptive_avg_pool2d.
std::vector<Arg> decomp_adaptive_avg_pool2d(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const auto os = spatial_pair(a[1]);
  if (os[0] == 1 && os[1] == 1) return {b.call("aten.mean.dim", {a[0], Arg::of_ints({-1, -2}), Arg::of_bool(true)})};
  return {b.call("aten._adaptive_avg_pool2d.default", {a[0], a[1]})};
}

// Backward (grad_output, self): each input element receives, from every window holding it, that
// window's gradient divided by its size.
template <int ND>
std::vector<TensorMeta> infer_adaptive_pool_backward(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta &gy = meta_of(g, a[0]), &x = meta_of(g, a[1]);
  if (gy.shape.size() != x.shape.size() || gy.shape.size() < ND || !std::equal(gy.shape.begin(), gy.shape.end() - ND, x.shape.begin()))
    bad(op, "grad_output " + shape_str(gy.shape) + " does not fit input " + shape_str(x.shape));
  adaptive_sizes(op, x.shape, Arg::of_ints(spatial_shape(gy.shape, ND)), ND);
  return {like(x, gy.dtype, x.shape)};
}
template <int ND>
std::vector<Tensor> ref_adaptive_pool_backward(const OpDef&, const std::vector<Arg>&, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &gy = in[0], &x = in[1];
  const Shape is = spatial_shape(x.shape(), ND), os = spatial_shape(gy.shape(), ND);
  const int64_t plane_in = numel_of(is), plane_out = numel_of(os), planes = x.numel() / plane_in;
  std::vector<double> acc(static_cast<size_t>(x.numel()), 0.0);
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t o = 0; o < plane_out; ++o) {
      const Shape pos = unravel(o, os);
      Shape lo(ND), ext(ND);
      for (int d = 0; d < ND; ++d) {
        lo[d] = adaptive_lo(pos[d], is[d], os[d]);
        ext[d] = adaptive_hi(pos[d], is[d], os[d]) - lo[d];
      }
      const double g = gy.get(pl * plane_out + o) / static_cast<double>(numel_of(ext));
      for (int64_t j = 0; j < numel_of(ext); ++j) {
        const Shape q = unravel(j, ext);
        int64_t off = 0;
        for (int d = 0; d < ND; ++d) off = off * is[d] + lo[d] + q[d];
        acc[pl * plane_in + off] += g;
      }
    }
  Tensor gx(outs[0].dtype, outs[0].shape);
  for (int64_t i = 0; i < gx.numel(); ++i) gx.set(i, acc[i]);
  return {gx};
}
// Separable as the forward: per spatial dim, a dim that divides repeats each gradient over its
// window (divided by the window size); another divides by each window's size, then each run of
// input positions held by the same windows [first, last] gets the sum of their gradients.
template <int ND>
std::vector<Arg> decomp_adaptive_pool_backward(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Shape x = b.meta(a[1]).shape, gs = b.meta(a[0]).shape;
  const DType dt = b.meta(a[0]).dtype;
  const int64_t r = static_cast<int64_t>(x.size());
  Arg g = a[0];
  double scale = 1;
  for (int d = 0; d < ND; ++d) {
    const int64_t dim = r - ND + d, n = x[dim], o = gs[dim];
    if (n % o == 0) {
      scale *= static_cast<double>(n / o);
      g = repeat_each(b, g, dim, n / o);
      continue;
    }
    Shape ws(static_cast<size_t>(r - dim), 1);
    ws[0] = o;
    Tensor inv(dt, ws);
    for (int64_t i = 0; i < o; ++i) inv.set(i, 1.0 / static_cast<double>(adaptive_hi(i, n, o) - adaptive_lo(i, n, o)));
    const Arg gw = b.call("aten.mul.Tensor", {g, constant(b, "pool_window_size", inv)});
    Arg parts;
    parts.kind = Arg::Kind::list;
    for (int64_t h = 0; h < n;) {
      int64_t first = o, last = -1;
      for (int64_t i = 0; i < o; ++i)
        if (adaptive_lo(i, n, o) <= h && h < adaptive_hi(i, n, o)) { first = std::min(first, i); last = std::max(last, i); }
      int64_t end = h + 1;
      auto same = [&](int64_t q) {
        int64_t f = o, l = -1;
        for (int64_t i = 0; i < o; ++i)
          if (adaptive_lo(i, n, o) <= q && q < adaptive_hi(i, n, o)) { f = std::min(f, i); l = std::max(l, i); }
        return f == first && l == last;
      };
      while (end < n && same(end)) ++end;
      const Arg s = window_reduce(b, "aten.sum.dim_IntList", gw, dim, first, last + 1);
      Shape e = b.meta(s).shape;
      e[dim] = end - h;
      parts.list.push_back(end - h == 1 ? s : b.call("aten.expand.default", {s, Arg::of_ints(e)}));
      h = end;
    }
    g = b.call("aten.cat.default", {parts, Arg::of_int(dim)});
  }
  if (scale != 1) g = b.call("aten.div.Tensor", {g, Arg::of_real(scale)});
  return {g};
}
template <int ND>
Args d_adaptive_pool(DerivCtx& c) {
  const char* back = ND == 2 ? "aten._adaptive_avg_pool2d_backward.default" : "aten._adaptive_avg_pool3d_backward.default";
  return one(call(c, back, {c.grads[0], c.args[0]}), 2);
}

// ---- 3-D max pooling with indices ----

struct MaxPoolN { std::vector<int64_t> k, st, pad, dil, in, out; bool ceil; };
MaxPoolN max_pool_n_of(const OpDef& op, const Shape& x, const std::vector<Arg>& a, int nd, size_t first) {
  MaxPoolN p;
  if (static_cast<int>(x.size()) != nd + 1 && static_cast<int>(x.size()) != nd + 2)
    bad(op, "needs a " + std::to_string(nd + 1) + "-D or " + std::to_string(nd + 2) + "-D input, got " + shape_str(x));
  p.k = spatial_n(op, a[first + 1], nd, "kernel_size");
  const Arg& s = a[first + 2];
  p.st = s.kind == Arg::Kind::list && s.list.empty() ? p.k : spatial_n(op, s, nd, "stride");
  p.pad = spatial_n(op, a[first + 3], nd, "padding");
  p.dil = spatial_n(op, a[first + 4], nd, "dilation");
  p.ceil = a[first + 5].b;
  p.in = spatial_shape(x, nd);
  for (int d = 0; d < nd; ++d) {
    if (p.k[d] <= 0 || p.st[d] <= 0 || p.dil[d] <= 0)
      bad(op, "kernel size, stride and dilation must be greater than zero (kernel " + std::to_string(p.k[d]) + ", stride " +
                  std::to_string(p.st[d]) + ", dilation " + std::to_string(p.dil[d]) + ")");
    if (p.pad[d] < 0 || p.pad[d] > p.k[d] / 2)
      bad(op, "pad should be smaller than or equal to half of kernel size, but got padding=" + std::to_string(p.pad[d]) +
                  ", kernel_size=" + std::to_string(p.k[d]));
    const int64_t o = pool_out(p.in[d], p.k[d], p.st[d], p.pad[d], p.dil[d], p.ceil);
    if (o <= 0) bad(op, "given input size " + shape_str(p.in) + ", the calculated output size is too small");
    p.out.push_back(o);
  }
  return p;
}
// The first input position of a window along one dim (PyTorch starts the index there).
int64_t first_in_window(const MaxPoolN& p, int d, int64_t o) {
  int64_t s = o * p.st[d] - p.pad[d];
  while (s < 0) s += p.dil[d];
  return s;
}
std::vector<TensorMeta> infer_max_pool3d(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  const MaxPoolN p = max_pool_n_of(op, x.shape, a, 3, 0);
  Shape out = x.shape;
  for (int d = 0; d < 3; ++d) out[out.size() - 3 + d] = p.out[d];
  return {like(x, x.dtype, out), like(x, DType::i64, out)};
}
std::vector<Tensor> ref_max_pool3d(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  const MaxPoolN p = max_pool_n_of(op, x.shape(), a, 3, 0);
  const int64_t plane_in = numel_of(p.in), plane_out = numel_of(p.out), planes = x.numel() / plane_in;
  Tensor y(outs[0].dtype, outs[0].shape), idx(DType::i64, outs[1].shape);
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t o = 0; o < plane_out; ++o) {
      const Shape pos = unravel(o, p.out);
      int64_t arg = 0;
      for (int d = 0; d < 3; ++d) arg = arg * p.in[d] + first_in_window(p, d, pos[d]);
      double best = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < numel_of(p.k); ++j) {
        const Shape q = unravel(j, p.k);
        int64_t off = 0;
        bool inside = true;
        for (int d = 0; d < 3; ++d) {
          const int64_t i = pos[d] * p.st[d] - p.pad[d] + q[d] * p.dil[d];
          inside = inside && i >= 0 && i < p.in[d];
          off = off * p.in[d] + i;
        }
        if (!inside) continue;
        const double v = x.get(pl * plane_in + off);
        if (v > best || std::isnan(v)) { best = v; arg = off; }
      }
      y.set(pl * plane_out + o, best);
      idx.set(pl * plane_out + o, static_cast<double>(arg));
    }
  return {y, idx};
}
// Padding of -inf (a cat), then for each window offset in PyTorch's order the strided slice it
// reads and a running maximum: taken where greater or NaN, the index with it (a constant of the
// output's spatial shape per offset). Generated code, as Inductor's window loop.
std::vector<Arg> decomp_max_pool3d(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape xs = b.meta(a[0]).shape;
  const DType dt = b.meta(a[0]).dtype;
  const MaxPoolN p = max_pool_n_of(op, xs, a, 3, 0);
  const int64_t r = static_cast<int64_t>(xs.size());
  const double inf = std::numeric_limits<double>::infinity();
  Arg x = a[0];
  for (int d = 0; d < 3; ++d) {
    const int64_t need = (p.out[d] - 1) * p.st[d] + (p.k[d] - 1) * p.dil[d] + 1;
    x = pad_dim(b, x, r - 3 + d, p.pad[d], std::max<int64_t>(0, need - p.pad[d] - p.in[d]), -inf);
  }
  Tensor first(DType::i64, p.out);
  for (int64_t o = 0; o < first.numel(); ++o) {
    const Shape pos = unravel(o, p.out);
    int64_t f = 0;
    for (int d = 0; d < 3; ++d) f = f * p.in[d] + first_in_window(p, d, pos[d]);
    first.set(o, static_cast<double>(f));
  }
  Arg best = filled(b, -inf, dt, {}), idx = constant(b, "pool_first_index", first);
  for (int64_t j = 0; j < numel_of(p.k); ++j) {
    const Shape q = unravel(j, p.k);
    Arg v = x;
    for (int d = 0; d < 3; ++d) {
      const int64_t start = q[d] * p.dil[d];
      v = slice_dim(b, v, r - 3 + d, start, start + (p.out[d] - 1) * p.st[d] + 1, p.st[d]);
    }
    Tensor at(DType::i64, p.out);
    for (int64_t o = 0; o < at.numel(); ++o) {
      const Shape pos = unravel(o, p.out);
      int64_t f = 0;
      for (int d = 0; d < 3; ++d) f = f * p.in[d] + pos[d] * p.st[d] - p.pad[d] + q[d] * p.dil[d];
      at.set(o, static_cast<double>(f));  // outside the input only where the value is padding
    }
    const Arg take = b.call("aten.logical_or.default", {b.call("aten.gt.Tensor", {v, best}), b.call("aten.isnan.default", {v})});
    best = b.call("aten.where.self", {take, v, best});
    idx = b.call("aten.where.self", {take, constant(b, "pool_window_index", at), idx});
  }
  return {best, idx};
}
std::vector<Tensor> max_pool3d_backward_ref(const OpDef& op, const std::vector<Arg>&, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &gy = in[0], &x = in[1], &idx = in[7];
  const int64_t plane_in = numel_of(spatial_shape(x.shape(), 3)), plane_out = numel_of(spatial_shape(gy.shape(), 3));
  if (idx.numel() != gy.numel()) bad(op, "indices " + shape_str(idx.shape()) + " do not match grad_output " + shape_str(gy.shape()));
  std::vector<double> acc(static_cast<size_t>(x.numel()), 0.0);
  for (int64_t i = 0; i < gy.numel(); ++i) {
    const int64_t plane = i / plane_out, j = static_cast<int64_t>(idx.get(i));
    if (j < 0 || j >= plane_in) bad(op, "index " + std::to_string(j) + " is out of bounds for a plane of size " + std::to_string(plane_in));
    acc[plane * plane_in + j] += gy.get(i);
  }
  Tensor gx(outs[0].dtype, outs[0].shape);
  for (int64_t i = 0; i < gx.numel(); ++i) gx.set(i, acc[i]);
  return {gx};
}
// As the kernel: each gradient added at its window's maximum, a scatter_add over the flattened
// planes (Inductor runs this op as a library call too).
std::vector<Arg> decomp_max_pool3d_backward(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape xs = b.meta(a[1]).shape, gs = b.meta(a[0]).shape;
  const int64_t plane_in = numel_of(spatial_shape(xs, 3)), plane_out = numel_of(spatial_shape(gs, 3));
  const int64_t planes = numel_of(xs) / plane_in;
  if (numel_of(b.meta(a[7]).shape) != numel_of(gs)) bad(op, "indices do not match grad_output " + shape_str(gs));
  const Arg g = b.call("aten.view.default", {a[0], Arg::of_ints({planes, plane_out})});
  const Arg idx = b.call("aten.view.default", {a[7], Arg::of_ints({planes, plane_out})});
  const Arg z = filled(b, 0.0, b.meta(a[0]).dtype, {planes, plane_in});
  return {b.call("aten.view.default", {b.call("aten.scatter_add.default", {z, Arg::of_int(1), idx, g}), Arg::of_ints(xs)})};
}
Args d_max_pool3d(DerivCtx& c) {
  const Args& a = c.args;  // self, kernel_size, stride, padding, dilation, ceil_mode
  return one(call(c, "aten.max_pool3d_with_indices_backward.default", {c.grads[0], a[0], a[1], a[2], a[3], a[4], a[5], c.out(1)}), 6);
}

// adaptive_avg_pool3d (export level): a mean over the last three dims for a 1x1x1 output, else
// _adaptive_avg_pool3d (ATen's composite).
std::vector<Arg> decomp_adaptive_avg_pool3d(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const auto os = spatial_n(op, a[1], 3, "output_size");
  if (os[0] == 1 && os[1] == 1 && os[2] == 1) return {b.call("aten.mean.dim", {a[0], Arg::of_ints({-1, -2, -3}), Arg::of_bool(true)})};
  return {b.call("aten._adaptive_avg_pool3d.default", {a[0], a[1]})};
}
std::vector<TensorMeta> infer_max_pool3d_values(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  return {infer_max_pool3d(g, op, a).at(0)};
}
std::vector<Arg> decomp_max_pool3d_values(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  return {b.get(b.call("aten.max_pool3d_with_indices.default", {a[0], a[1], a[2], a[3], a[4], a[5]}), 0)};
}

// ---- 1-D pooling (model zoo) ----------------------------------------------------------------
// adaptive_avg_pool1d, avg_pool1d, max_pool1d: the 2-D pool of x.unsqueeze(-2) with a window of
// height 1, squeezed back, as PyTorch's CompositeImplicit kernels do. Their reference is their
// decomposition (the 2-D pools carry reference kernels of their own).
int64_t one_of(const OpDef& op, const Arg& v, const char* what, int64_t dflt) {
  const std::vector<int64_t> x = v.is_none() ? std::vector<int64_t>{} : v.ints();
  if (x.empty()) return dflt;
  if (x.size() != 1) bad(op, std::string(what) + " must be a single int, got " + std::to_string(x.size()) + " values");
  return x[0];
}
Arg unsqueezed_1d(GraphBuilder& b, const OpDef& op, const Arg& x) {
  const size_t r = b.meta(x).shape.size();
  if (r != 2 && r != 3) bad(op, "expects a 2-D or 3-D input, got " + std::to_string(r) + "-D");
  return b.call("aten.unsqueeze.default", {x, Arg::of_int(-2)});
}
std::vector<Arg> decomp_pool1d(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Arg x = unsqueezed_1d(b, op, a[0]);
  Arg y;
  if (op.name == "aten.adaptive_avg_pool1d.default") {
    y = b.call("aten.adaptive_avg_pool2d.default", {x, Arg::of_ints({1, one_of(op, a[1], "output_size", -1)})});
  } else {
    const int64_t k = one_of(op, a[1], "kernel_size", -1), s = one_of(op, a[2], "stride", k), p = one_of(op, a[3], "padding", 0);
    if (k <= 0) bad(op, "kernel_size must be positive, got " + std::to_string(k));
    if (op.name == "aten.avg_pool1d.default")
      y = b.call("aten.avg_pool2d.default", {x, Arg::of_ints({1, k}), Arg::of_ints({1, s}), Arg::of_ints({0, p}), a[4], a[5]});
    else
      y = b.call("aten.max_pool2d.default", {x, Arg::of_ints({1, k}), Arg::of_ints({1, s}), Arg::of_ints({0, p}),
                                             Arg::of_ints({1, one_of(op, a[4], "dilation", 1)}), a[5]});
  }
  return {b.call("aten.squeeze.dim", {y, Arg::of_int(-2)})};
}
}  // namespace

void add_conv_pool_ops(std::vector<OpDef>& t) {
  const std::vector<OpDef> ops = {
      ext("aten.convolution.default",
          "convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool "
          "transposed, SymInt[] output_padding, SymInt groups) -> Tensor",
          kCore, infer_convolution, ref_convolution, nullptr, d_convolution),
      comp("aten.conv2d.default",
           "conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, SymInt[2] dilation=1, "
           "SymInt groups=1) -> Tensor",
           kAten, infer_conv2d, nullptr, decomp_conv2d),
      comp("aten.conv1d.default",
           "conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, SymInt[1] padding=0, SymInt[1] dilation=1, "
           "SymInt groups=1) -> Tensor",
           kAten, infer_by_decomp, nullptr, decomp_conv_nd<1, false>),
      comp("aten.conv3d.default",
           "conv3d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=1, SymInt[3] padding=0, SymInt[3] dilation=1, "
           "SymInt groups=1) -> Tensor",
           kAten, infer_by_decomp, nullptr, decomp_conv_nd<3, false>),
      comp("aten.conv1d.padding",
           "conv1d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, str padding=\"valid\", SymInt[1] "
           "dilation=1, SymInt groups=1) -> Tensor",
           kAten, infer_by_decomp, nullptr, decomp_conv_nd<1, false>),
      comp("aten.conv2d.padding",
           "conv2d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, str padding=\"valid\", SymInt[2] "
           "dilation=1, SymInt groups=1) -> Tensor",
           kAten, infer_by_decomp, nullptr, decomp_conv_nd<2, false>),
      comp("aten.conv3d.padding",
           "conv3d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=1, str padding=\"valid\", SymInt[3] "
           "dilation=1, SymInt groups=1) -> Tensor",
           kAten, infer_by_decomp, nullptr, decomp_conv_nd<3, false>),
      comp("aten.conv_transpose1d.default",
           "conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, SymInt[1] padding=0, SymInt[1] "
           "output_padding=0, SymInt groups=1, SymInt[1] dilation=1) -> Tensor",
           kAten, infer_by_decomp, nullptr, decomp_conv_nd<1, true>),
      comp("aten.conv_transpose2d.input",
           "conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, SymInt[2] "
           "output_padding=0, SymInt groups=1, SymInt[2] dilation=1) -> Tensor",
           kAten, infer_by_decomp, nullptr, decomp_conv_nd<2, true>),
      comp("aten.conv_transpose3d.input",
           "conv_transpose3d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=1, SymInt[3] padding=0, SymInt[3] "
           "output_padding=0, SymInt groups=1, SymInt[3] dilation=1) -> Tensor",
           kAten, infer_by_decomp, nullptr, decomp_conv_nd<3, true>),
      ext("aten.convolution_backward.default",
          "convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[]? bias_sizes, SymInt[] stride, SymInt[] "
          "padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, bool[3] output_mask) -> (Tensor, "
          "Tensor, Tensor)",
          kCore, conv_backward_meta, conv_backward_ref),
      ext("aten.max_pool2d_with_indices.default",
          "max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool "
          "ceil_mode=False) -> (Tensor, Tensor)",
          kCore, infer_max_pool, ref_max_pool, nullptr, d_max_pool),
      comp("aten.max_pool2d.default",
           "max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) "
           "-> Tensor",
           kAten, infer_max_pool, ref_max_pool, decomp_max_pool2d),
      ext("aten.max_pool2d_with_indices_backward.default",
          "max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, "
          "int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor",
          kCore, same_as<1>, max_pool_backward_ref, nullptr, d_max_pool_backward),
      comp("aten.adaptive_avg_pool2d.default", "adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor", kAten,
           infer_adaptive_avg_pool, ref_adaptive_avg_pool, decomp_adaptive_avg_pool2d),
      comp("aten.adaptive_avg_pool1d.default", "adaptive_avg_pool1d(Tensor self, int[1] output_size) -> Tensor", kAten,
           infer_by_decomp, nullptr, decomp_pool1d),
      comp("aten.avg_pool1d.default",
           "avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0, bool ceil_mode=False, bool "
           "count_include_pad=True) -> Tensor",
           kAten, infer_by_decomp, nullptr, decomp_pool1d),
      comp("aten.max_pool1d.default",
           "max_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0, int[1] dilation=1, bool ceil_mode=False) "
           "-> Tensor",
           kAten, infer_by_decomp, nullptr, decomp_pool1d),
      // ---- pooling (issue 32) ----
      comp("aten.avg_pool2d.default",
           "avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, bool "
           "count_include_pad=True, int? divisor_override=None) -> Tensor",
           kCore, infer_avg_pool<2>, ref_avg_pool<2>, decomp_avg_pool<2>, d_avg_pool<2>),
      comp("aten.avg_pool2d_backward.default",
           "avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, bool ceil_mode, "
           "bool count_include_pad, int? divisor_override) -> Tensor",
           kCore, same_as<1>, ref_avg_pool_backward<2>, decomp_avg_pool_backward<2>),
      comp("aten.avg_pool3d.default",
           "avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, bool ceil_mode=False, bool "
           "count_include_pad=True, int? divisor_override=None) -> Tensor",
           kCore, infer_avg_pool<3>, ref_avg_pool<3>, decomp_avg_pool<3>, d_avg_pool<3>),
      comp("aten.avg_pool3d_backward.default",
           "avg_pool3d_backward(Tensor grad_output, Tensor self, int[3] kernel_size, int[3] stride, int[3] padding, bool ceil_mode, "
           "bool count_include_pad, int? divisor_override) -> Tensor",
           kAten, same_as<1>, ref_avg_pool_backward<3>, decomp_avg_pool_backward<3>),
      comp("aten._adaptive_avg_pool2d.default", "_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor", kCore,
           infer_adaptive_pool_nd<2>, ref_adaptive_pool_nd<2>, decomp_adaptive_pool_nd<2>, d_adaptive_pool<2>),
      comp("aten._adaptive_avg_pool2d_backward.default", "_adaptive_avg_pool2d_backward(Tensor grad_output, Tensor self) -> Tensor", kCore,
           infer_adaptive_pool_backward<2>, ref_adaptive_pool_backward<2>, decomp_adaptive_pool_backward<2>),
      comp("aten.adaptive_avg_pool3d.default", "adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor", kAten,
           infer_adaptive_pool_nd<3>, ref_adaptive_pool_nd<3>, decomp_adaptive_avg_pool3d),
      comp("aten._adaptive_avg_pool3d.default", "_adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor", kCore,
           infer_adaptive_pool_nd<3>, ref_adaptive_pool_nd<3>, decomp_adaptive_pool_nd<3>, d_adaptive_pool<3>),
      comp("aten._adaptive_avg_pool3d_backward.default", "_adaptive_avg_pool3d_backward(Tensor grad_output, Tensor self) -> Tensor", kAten,
           infer_adaptive_pool_backward<3>, ref_adaptive_pool_backward<3>, decomp_adaptive_pool_backward<3>),
      comp("aten.max_pool3d_with_indices.default",
           "max_pool3d_with_indices(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, int[3] dilation=1, bool "
           "ceil_mode=False) -> (Tensor, Tensor)",
           kCore, infer_max_pool3d, ref_max_pool3d, decomp_max_pool3d, d_max_pool3d),
      comp("aten.max_pool3d.default",
           "max_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, int[3] dilation=1, bool ceil_mode=False) "
           "-> Tensor",
           kAten, infer_max_pool3d_values, nullptr, decomp_max_pool3d_values),
      comp("aten.max_pool3d_with_indices_backward.default",
           "max_pool3d_with_indices_backward(Tensor grad_output, Tensor self, int[3] kernel_size, int[3] stride, int[3] padding, "
           "int[3] dilation, bool ceil_mode, Tensor indices) -> Tensor",
           kAten, same_as<1>, max_pool3d_backward_ref, decomp_max_pool3d_backward),
  };
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
