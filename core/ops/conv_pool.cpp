// Convolution and pooling: convolution (a library kernel), conv2d, which decomposes into it,
// max pooling with indices (generated code, a special case of the lowering), max_pool2d and
// adaptive_avg_pool2d, and the backward ops AOTAutograd's graphs call for convolution and max
// pooling (library kernels).
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
// Convolution
// ---------------------------------------------------------------------------------------------

std::vector<TensorMeta> infer_convolution(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  const TensorMeta& w = meta_of(g, a[1]);
  if (x.shape.size() != 4 || w.shape.size() != 4) bad(op, "only 2-D convolution (4-D input and weight) is supported");
  if (a[6].b) bad(op, "transposed convolution is not supported yet");
  const auto st = spatial_pair(a[3]), pad = spatial_pair(a[4]), dil = spatial_pair(a[5]);
  check_window(op, st, pad, dil);
  const int64_t groups = a[8].i;
  if (groups <= 0 || x.shape[1] != w.shape[1] * groups || w.shape[0] % groups)
    bad(op, "input channels " + std::to_string(x.shape[1]) + " do not fit weight " + shape_str(w.shape) + " with groups=" + std::to_string(groups));
  Shape out = {x.shape[0], w.shape[0]};
  for (int d = 0; d < 2; ++d) {
    const int64_t o = (x.shape[2 + d] + 2 * pad[d] - dil[d] * (w.shape[2 + d] - 1) - 1) / st[d] + 1;
    if (o <= 0) bad(op, "output size would be " + std::to_string(o));
    out.push_back(o);
  }
  return {like(x, x.dtype, out)};
}
std::vector<Tensor> ref_convolution(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &x = in[0], &w = in[1];
  const auto st = spatial_pair(a[3]), pad = spatial_pair(a[4]), dil = spatial_pair(a[5]);
  const int64_t G = a[8].i;
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t O = w.shape()[0], CG = w.shape()[1], KH = w.shape()[2], KW = w.shape()[3];
  Tensor y(outs[0].dtype, outs[0].shape);
  const int64_t OH = y.shape()[2], OW = y.shape()[3], OG = O / G;
  // In double, whatever the element type (float64 graphs check derivatives against finite differences).
  std::vector<double> xp(static_cast<size_t>(x.numel())), wp(static_cast<size_t>(w.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) xp[i] = x.get(i);
  for (int64_t i = 0; i < w.numel(); ++i) wp[i] = w.get(i);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o) {
      const int64_t g = o / OG;
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = a[2].is_node() ? in[2].get(o) : 0.0;
          for (int64_t c = 0; c < CG; ++c)
            for (int64_t kh = 0; kh < KH; ++kh) {
              const int64_t ih = oh * st[0] - pad[0] + kh * dil[0];
              if (ih < 0 || ih >= H) continue;
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t iw = ow * st[1] - pad[1] + kw * dil[1];
                if (iw < 0 || iw >= W) continue;
                acc += xp[((n * C + g * CG + c) * H + ih) * W + iw] * wp[((o * CG + c) * KH + kh) * KW + kw];
              }
            }
          y.set(((n * O + o) * OH + oh) * OW + ow, acc);
        }
    }
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

std::vector<TensorMeta> conv_backward_meta(const Graph& g, const OpDef&, const std::vector<Arg>& a) {
  const TensorMeta &x = meta_of(g, a[1]), &w = meta_of(g, a[2]);
  return {like(x, x.shape), like(w, w.shape), like(w, {w.shape[0]})};
}
std::vector<Tensor> conv_backward_ref(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &gy = in[0], &x = in[1], &w = in[2];
  const auto st = spatial_pair(a[4]), pad = spatial_pair(a[5]), dil = spatial_pair(a[6]);
  const int64_t G = a[9].i;
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t O = w.shape()[0], CG = w.shape()[1], KH = w.shape()[2], KW = w.shape()[3];
  const int64_t OH = gy.shape()[2], OW = gy.shape()[3], OG = O / G;
  std::vector<double> gx(x.numel(), 0), gw(w.numel(), 0), gb(O, 0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o) {
      const int64_t g = o / OG;
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          const double go = gy.get(((n * O + o) * OH + oh) * OW + ow);
          gb[o] += go;
          for (int64_t c = 0; c < CG; ++c)
            for (int64_t kh = 0; kh < KH; ++kh) {
              const int64_t ih = oh * st[0] - pad[0] + kh * dil[0];
              if (ih < 0 || ih >= H) continue;
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t iw = ow * st[1] - pad[1] + kw * dil[1];
                if (iw < 0 || iw >= W) continue;
                const int64_t xi = ((n * C + g * CG + c) * H + ih) * W + iw, wi = ((o * CG + c) * KH + kh) * KW + kw;
                gx[xi] += go * w.get(wi);
                gw[wi] += go * x.get(xi);
              }
            }
        }
    }
  Tensor tx(outs[0].dtype, outs[0].shape), tw(outs[1].dtype, outs[1].shape), tb(outs[2].dtype, outs[2].shape);
  for (int64_t i = 0; i < tx.numel(); ++i) tx.set(i, gx[i]);
  for (int64_t i = 0; i < tw.numel(); ++i) tw.set(i, gw[i]);
  for (int64_t i = 0; i < tb.numel(); ++i) tb.set(i, gb[i]);
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

Args d_max_pool(DerivCtx& c) {
  const Args& a = c.args;  // self, kernel_size, stride, padding, dilation, ceil_mode
  return one(call(c, "aten.max_pool2d_with_indices_backward.default", {c.grads[0], a[0], a[1], a[2], a[3], a[4], a[5], c.out(1)}), 6);
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
          kCore, same_as<1>, max_pool_backward_ref),
      comp("aten.adaptive_avg_pool2d.default", "adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor", kCore,
           infer_adaptive_avg_pool, ref_adaptive_avg_pool, decomp_adaptive_avg_pool),
  };
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
