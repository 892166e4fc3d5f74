// The op table's nn part: views, matrix multiply, convolution, pooling, normalization, softmax,
// attention, and the model-level ops torch.export keeps (linear, conv2d, layer_norm, ...), each
// with its schema, shape rule, reference kernel and decomposition towards Core ATen and prims.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "ops/builder.h"
#include "ops/op_table.h"

namespace ls {
namespace {

constexpr unsigned kAten = level::aten;
constexpr unsigned kCore = level::aten | level::core_aten;
constexpr unsigned kPrims = level::prims;

const TensorMeta& meta_of(const Graph& g, const Arg& a) { return g.nodes.at(a.node).meta(); }
TensorMeta like(const TensorMeta& in, DType dt, Shape shape) {
  TensorMeta m = TensorMeta::contiguous(dt, std::move(shape));
  m.device = in.device;
  return m;
}
[[noreturn]] void bad(const OpDef& op, const std::string& what) { throw std::invalid_argument(op.name + ": " + what); }


// Strides and dilations must be positive, padding not negative.
void check_window(const OpDef& op, const std::vector<int64_t>& st, const std::vector<int64_t>& pad, const std::vector<int64_t>& dil) {
  for (int d = 0; d < 2; ++d)
    if (st[d] <= 0 || dil[d] <= 0 || pad[d] < 0)
      bad(op, "stride and dilation must be positive and padding not negative (stride " + std::to_string(st[d]) + ", dilation " +
                  std::to_string(dil[d]) + ", padding " + std::to_string(pad[d]) + ")");
}

// ---------------------------------------------------------------------------------------------
// Matrix multiply
// ---------------------------------------------------------------------------------------------

std::vector<TensorMeta> infer_mm(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const bool addmm = op.name == "aten.addmm.default";
  const TensorMeta& x = meta_of(g, a[addmm ? 1 : 0]);
  const TensorMeta& y = meta_of(g, a[addmm ? 2 : 1]);
  if (x.shape.size() != 2 || y.shape.size() != 2) bad(op, "needs 2-D matrices, got " + shape_str(x.shape) + " and " + shape_str(y.shape));
  if (x.shape[1] != y.shape[0]) bad(op, "cannot multiply " + shape_str(x.shape) + " by " + shape_str(y.shape));
  if (addmm) broadcast_shapes(meta_of(g, a[0]).shape, {x.shape[0], y.shape[1]});
  return {like(x, promote(x.dtype, y.dtype), {x.shape[0], y.shape[1]})};
}
std::vector<TensorMeta> infer_bmm(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  const TensorMeta& y = meta_of(g, a[1]);
  if (x.shape.size() != 3 || y.shape.size() != 3 || x.shape[0] != y.shape[0] || x.shape[2] != y.shape[1])
    bad(op, "cannot batch-multiply " + shape_str(x.shape) + " by " + shape_str(y.shape));
  return {like(x, x.dtype, {x.shape[0], x.shape[1], y.shape[2]})};
}
// C[b] = A[b] @ B[b] in double accumulation (plain loops over float data).
void matmul(const Tensor& A, const Tensor& B, Tensor& C, int64_t batch, int64_t M, int64_t K, int64_t N) {
  for (int64_t bb = 0; bb < batch; ++bb)
    for (int64_t i = 0; i < M; ++i) {
      std::vector<double> row(N, 0.0);
      for (int64_t k = 0; k < K; ++k) {
        const double av = A.get((bb * M + i) * K + k);
        if (av == 0) continue;
        for (int64_t j = 0; j < N; ++j) row[j] += av * B.get((bb * K + k) * N + j);
      }
      for (int64_t j = 0; j < N; ++j) C.set((bb * M + i) * N + j, row[j]);
    }
}
std::vector<Tensor> ref_mm(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  Tensor c(outs[0].dtype, outs[0].shape);
  if (op.name == "aten.bmm.default") {
    matmul(in[0], in[1], c, in[0].shape()[0], in[0].shape()[1], in[0].shape()[2], in[1].shape()[2]);
    return {c};
  }
  const bool addmm = op.name == "aten.addmm.default";
  const Tensor& x = in[addmm ? 1 : 0];
  const Tensor& y = in[addmm ? 2 : 1];
  matmul(x, y, c, 1, x.shape()[0], x.shape()[1], y.shape()[1]);
  if (addmm) {
    const double beta = a[3].number(), alpha = a[4].number();
    const Tensor& bias = in[0];
    const int64_t N = c.shape()[1];
    for (int64_t i = 0; i < c.numel(); ++i) {
      const int64_t r = i / N, col = i % N;
      const double bv = bias.dim() == 2 ? bias.get((bias.shape()[0] == 1 ? 0 : r) * bias.shape()[1] + (bias.shape()[1] == 1 ? 0 : col))
                      : bias.dim() == 1 ? bias.get(bias.shape()[0] == 1 ? 0 : col) : bias.get(0);
      c.set(i, beta * bv + alpha * c.get(i));
    }
  }
  return {c};
}

// linear(x, w, b) -> x @ w.T + b, through permute, view and addmm/mm, as PyTorch decomposes it.
std::vector<Arg> decomp_linear(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Shape xs = b.meta(a[0]).shape;
  const Shape ws = b.meta(a[1]).shape;
  const Arg wt = b.call("aten.permute.default", {a[1], Arg::of_ints({1, 0})});
  Arg x = a[0];
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < xs.size(); ++i) rows *= xs[i];
  if (xs.size() != 2) x = b.call("aten.view.default", {x, Arg::of_ints({rows, xs.back()})});
  Arg y = a[2].is_none() ? b.call("aten.mm.default", {x, wt}) : b.call("aten.addmm.default", {a[2], x, wt});
  if (xs.size() != 2) {
    Shape out(xs.begin(), xs.end() - 1);
    out.push_back(ws[0]);
    y = b.call("aten.view.default", {y, Arg::of_ints(out)});
  }
  return {y};
}

// ---------------------------------------------------------------------------------------------
// Convolution and pooling
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

// ---------------------------------------------------------------------------------------------
// Normalization and softmax
// ---------------------------------------------------------------------------------------------

std::vector<TensorMeta> infer_layer_norm(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  const auto ns = a[1].ints();
  if (ns.size() > x.shape.size() || !std::equal(ns.begin(), ns.end(), x.shape.end() - static_cast<long>(ns.size())))
    bad(op, "normalized_shape " + shape_str(ns) + " does not end the input shape " + shape_str(x.shape));
  Shape stat(x.shape.begin(), x.shape.end() - static_cast<long>(ns.size()));
  stat.resize(x.shape.size(), 1);
  if (op.name == "aten.layer_norm.default") return {like(x, x.dtype, x.shape)};
  return {like(x, x.dtype, x.shape), like(x, x.dtype, stat), like(x, x.dtype, stat)};
}
std::vector<Tensor> ref_native_layer_norm(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  int64_t n = 1;
  for (int64_t d : a[1].ints()) n *= d;
  const int64_t rows = x.numel() / n;
  Tensor y(outs[0].dtype, outs[0].shape), mean(outs[1].dtype, outs[1].shape), rstd(outs[2].dtype, outs[2].shape);
  const double eps = a[4].number();
  for (int64_t r = 0; r < rows; ++r) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < n; ++i) m += x.get(r * n + i);
    m /= n;
    for (int64_t i = 0; i < n; ++i) v += (x.get(r * n + i) - m) * (x.get(r * n + i) - m);
    v /= n;
    const double rs = 1.0 / std::sqrt(v + eps);
    for (int64_t i = 0; i < n; ++i) {
      double o = (x.get(r * n + i) - m) * rs;
      if (a[2].is_node()) o *= in[2].get(i);
      if (a[3].is_node()) o += in[3].get(i);
      y.set(r * n + i, o);
    }
    mean.set(r, m);
    rstd.set(r, rs);
  }
  return {y, mean, rstd};
}
std::vector<Arg> decomp_layer_norm(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Arg r = b.call("aten.native_layer_norm.default", {a[0], a[1], a[2], a[3], a[4]});
  return {b.get(r, 0)};
}
// native_layer_norm -> mean, centred, variance, rsqrt, scale and shift (Core ATen ops).
std::vector<Arg> decomp_native_layer_norm(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Shape x = b.meta(a[0]).shape;
  const int64_t k = static_cast<int64_t>(a[1].ints().size()), r = static_cast<int64_t>(x.size());
  std::vector<int64_t> dims;
  for (int64_t d = r - k; d < r; ++d) dims.push_back(d);
  const Arg mean = b.call("aten.mean.dim", {a[0], Arg::of_ints(dims), Arg::of_bool(true)});
  const Arg diff = b.call("aten.sub.Tensor", {a[0], mean});
  const Arg var = b.call("aten.mean.dim", {b.call("aten.mul.Tensor", {diff, diff}), Arg::of_ints(dims), Arg::of_bool(true)});
  const Arg rstd = b.call("aten.rsqrt.default", {b.call("aten.add.Tensor", {var, a[4]})});
  Arg y = b.call("aten.mul.Tensor", {diff, rstd});
  if (a[2].is_node()) y = b.call("aten.mul.Tensor", {y, a[2]});
  if (a[3].is_node()) y = b.call("aten.add.Tensor", {y, a[3]});
  return {y, mean, rstd};
}

std::vector<TensorMeta> infer_batch_norm(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  if (x.shape.size() < 2) bad(op, "needs an input with a channel dimension");
  if (op.name == "aten.batch_norm.default") return {like(x, x.dtype, x.shape)};
  // As PyTorch's CUDA kernel reports them: the statistics used, one per channel.
  return {like(x, x.dtype, x.shape), like(x, x.dtype, {x.shape[1]}), like(x, x.dtype, {x.shape[1]})};
}
std::vector<Tensor> ref_batch_norm(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  const int64_t C = x.shape()[1], inner = x.numel() / (x.shape()[0] * C);
  const double eps = a[6].number();
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = (i / inner) % C;
    double v = (x.get(i) - in[3].get(c)) / std::sqrt(in[4].get(c) + eps);
    if (a[1].is_node()) v *= in[1].get(c);
    if (a[2].is_node()) v += in[2].get(c);
    y.set(i, v);
  }
  Tensor mean(outs[1].dtype, outs[1].shape), rstd(outs[2].dtype, outs[2].shape);
  for (int64_t c = 0; c < C; ++c) {
    mean.set(c, in[3].get(c));
    rstd.set(c, 1.0 / std::sqrt(in[4].get(c) + eps));
  }
  return {y, mean, rstd};
}
std::vector<Arg> decomp_batch_norm(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  if (a[5].b) bad(op, "training-mode batch norm is not supported yet (use the model in eval mode)");
  if (!a[3].is_node() || !a[4].is_node()) bad(op, "needs running statistics");
  const Arg r = b.call("aten._native_batch_norm_legit_no_training.default", {a[0], a[1], a[2], a[3], a[4], a[6], a[7]});
  return {b.get(r, 0)};
}
// (x - mean[c]) * rsqrt(var[c] + eps) * w[c] + b[c], with the per-channel vectors viewed as [C, 1, 1].
std::vector<Arg> decomp_batch_norm_legit(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Shape x = b.meta(a[0]).shape;
  Shape cshape(x.size() - 1, 1);
  cshape[0] = x[1];
  auto chan = [&](const Arg& v) { return b.call("aten.view.default", {v, Arg::of_ints(cshape)}); };
  const Arg rstd = b.call("aten.rsqrt.default", {b.call("aten.add.Tensor", {a[4], a[6]})});
  Arg y = b.call("aten.mul.Tensor", {b.call("aten.sub.Tensor", {a[0], chan(a[3])}), chan(rstd)});
  if (a[1].is_node()) y = b.call("aten.mul.Tensor", {y, chan(a[1])});
  if (a[2].is_node()) y = b.call("aten.add.Tensor", {y, chan(a[2])});
  return {y, a[3], rstd};
}

std::vector<TensorMeta> infer_same(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  if (op.name.find("softmax") != std::string::npos) wrap_dim(op, a[1].i, static_cast<int64_t>(x.shape.size()));
  return {like(x, x.dtype, x.shape)};
}
std::vector<Tensor> ref_softmax(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  const int64_t d = wrap_dim(op, a[1].i, x.dim());
  const int64_t n = x.shape()[d], inner = contiguous_strides(x.shape())[d], outer = x.numel() / (n * inner);
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double m = -std::numeric_limits<double>::infinity(), s = 0;
      for (int64_t k = 0; k < n; ++k) m = std::max(m, x.get((o * n + k) * inner + i));
      for (int64_t k = 0; k < n; ++k) s += std::exp(x.get((o * n + k) * inner + i) - m);
      for (int64_t k = 0; k < n; ++k) y.set((o * n + k) * inner + i, std::exp(x.get((o * n + k) * inner + i) - m) / s);
    }
  return {y};
}
std::vector<Arg> decomp_softmax_int(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  return {b.call("aten._softmax.default", {a[0], a[1], Arg::of_bool(false)})};
}
// _softmax -> amax, sub, exp, sum, div (the numerically safe form, as torch._decomp writes it).
std::vector<Arg> decomp_softmax(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Arg m = b.call("aten.amax.default", {a[0], Arg::of_ints({a[1].i}), Arg::of_bool(true)});
  const Arg e = b.call("aten.exp.default", {b.call("aten.sub.Tensor", {a[0], m})});
  const Arg s = b.call("aten.sum.dim_IntList", {e, Arg::of_ints({a[1].i}), Arg::of_bool(true)});
  return {b.call("aten.div.Tensor", {e, s})};
}

// ---------------------------------------------------------------------------------------------
// Attention
// ---------------------------------------------------------------------------------------------

std::vector<TensorMeta> infer_sdpa(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta &q = meta_of(g, a[0]), &k = meta_of(g, a[1]), &v = meta_of(g, a[2]);
  if (q.shape.size() < 3 || k.shape.size() != q.shape.size() || v.shape.size() != q.shape.size())
    bad(op, "query, key and value need the same rank (at least 3)");
  const size_t r = q.shape.size();
  if (q.shape[r - 1] != k.shape[r - 1] || k.shape[r - 2] != v.shape[r - 2]) bad(op, "key does not fit query or value");
  Shape out = q.shape;
  out[r - 1] = v.shape[r - 1];
  if (op.num_outputs == 1) return {like(q, q.dtype, out)};
  Shape lse(q.shape.begin(), q.shape.end() - 1);
  return {like(q, q.dtype, out), like(q, DType::f32, lse), like(q, DType::i64, {}), like(q, DType::i64, {})};
}
struct SdpaArgs { int mask = 3; int causal = 5; int scale = 6; };
SdpaArgs sdpa_args(const OpDef& op) {
  // efficient: (q, k, v, attn_bias, compute_log_sumexp, dropout_p, is_causal, *, scale)
  if (op.name == "aten._scaled_dot_product_efficient_attention.default") return {3, 6, 7};
  return {3, 5, 6};
}
std::vector<Tensor> ref_sdpa(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const SdpaArgs ix = sdpa_args(op);
  const Tensor &q = in[0], &k = in[1], &v = in[2];
  const size_t r = q.shape().size();
  const int64_t L = q.shape()[r - 2], E = q.shape()[r - 1], S = k.shape()[r - 2], Ev = v.shape()[r - 1];
  const int64_t B = q.numel() / (L * E);
  const bool causal = a[ix.causal].b;
  const double scale = a[ix.scale].is_none() ? 1.0 / std::sqrt(double(E)) : a[ix.scale].number();
  Tensor o(outs[0].dtype, outs[0].shape);
  Tensor lse(DType::f32, outs.size() > 1 ? outs[1].shape : Shape{B, L});
  std::vector<double> w(S);
  for (int64_t bb = 0; bb < B; ++bb)
    for (int64_t i = 0; i < L; ++i) {
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < S; ++j) {
        double s = 0;
        for (int64_t e = 0; e < E; ++e) s += q.get((bb * L + i) * E + e) * k.get((bb * S + j) * E + e);
        s *= scale;
        if (causal && j > i) s = -std::numeric_limits<double>::infinity();
        if (a[ix.mask].is_node()) s += in[ix.mask].get((i * S + j) % in[ix.mask].numel());
        w[j] = s;
        m = std::max(m, s);
      }
      double sum = 0;
      for (int64_t j = 0; j < S; ++j) sum += (w[j] = std::exp(w[j] - m));
      for (int64_t e = 0; e < Ev; ++e) {
        double acc = 0;
        for (int64_t j = 0; j < S; ++j) acc += w[j] * v.get((bb * S + j) * Ev + e);
        o.set((bb * L + i) * Ev + e, acc / sum);
      }
      lse.set(bb * L + i, m + std::log(sum));
    }
  if (op.num_outputs == 1) return {o};
  return {o, lse, Tensor(DType::i64, {}), Tensor(DType::i64, {})};
}
// softmax(q @ k^T * scale + mask) @ v through bmm, with the causal mask as a constant of the graph.
std::vector<Arg> decomp_sdpa(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const SdpaArgs ix = sdpa_args(op);
  if (op.name == "aten.scaled_dot_product_attention.default" && a[4].number() != 0.0)
    bad(op, "attention dropout is not supported");
  // No mask, same head count and float32: the fused attention kernel (its log-sum-exp kept for the
  // backward), as PyTorch dispatches to efficient attention.
  if (!a[ix.mask].is_node() && b.meta(a[0]).dtype == DType::f32 && b.meta(a[0]).shape.size() >= 3 &&
      b.meta(a[0]).shape == b.meta(a[1]).shape && b.meta(a[1]).shape == b.meta(a[2]).shape) {
    const Arg r = b.call("aten._scaled_dot_product_efficient_attention.default",
                         {a[0], a[1], a[2], Arg::none(), Arg::of_bool(true), Arg::of_real(0.0), a[ix.causal]},
                         {{"scale", a[ix.scale]}});
    return {b.get(r, 0)};
  }
  const Shape qs = b.meta(a[0]).shape, ks = b.meta(a[1]).shape, vs = b.meta(a[2]).shape;
  const size_t r = qs.size();
  const int64_t L = qs[r - 2], E = qs[r - 1], S = ks[r - 2], Ev = vs[r - 1];
  int64_t B = 1;
  for (size_t i = 0; i + 2 < r; ++i) B *= qs[i];
  const double scale = a[ix.scale].is_none() ? 1.0 / std::sqrt(double(E)) : a[ix.scale].number();
  const Arg q = b.call("aten.view.default", {a[0], Arg::of_ints({B, L, E})});
  const Arg kt = b.call("aten.permute.default", {b.call("aten.view.default", {a[1], Arg::of_ints({B, S, E})}), Arg::of_ints({0, 2, 1})});
  const Arg v = b.call("aten.view.default", {a[2], Arg::of_ints({B, S, Ev})});
  Arg s = b.call("aten.mul.Tensor", {b.call("aten.bmm.default", {q, kt}), Arg::of_real(scale)});
  if (a[ix.causal].b) {
    Tensor mask(DType::f32, {L, S});
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < S; ++j) mask.set(i * S + j, j > i ? -std::numeric_limits<double>::infinity() : 0.0);
    s = b.call("aten.add.Tensor", {s, b.constant("causal_mask", mask)});
  }
  if (a[ix.mask].is_node()) s = b.call("aten.add.Tensor", {s, a[ix.mask]});
  const Arg m = b.call("aten.amax.default", {s, Arg::of_ints({-1}), Arg::of_bool(true)});
  const Arg e = b.call("aten.exp.default", {b.call("aten.sub.Tensor", {s, m})});
  const Arg sum = b.call("aten.sum.dim_IntList", {e, Arg::of_ints({-1}), Arg::of_bool(true)});
  const Arg p = b.call("aten.div.Tensor", {e, sum});
  Shape out(qs.begin(), qs.end() - 1);
  out.push_back(Ev);
  const Arg o = b.call("aten.view.default", {b.call("aten.bmm.default", {p, v}), Arg::of_ints(out)});
  if (op.num_outputs == 1) return {o};
  Shape ls(qs.begin(), qs.end() - 1);
  const Arg lse = b.call("aten.view.default",
                         {b.call("aten.add.Tensor", {b.call("aten.log.default", {sum}), m}), Arg::of_ints(ls)});
  // The philox seed and offset of a dropout that does not run: zeros, as PyTorch returns them.
  const Arg zero = b.constant("philox_seed", Tensor(DType::i64, {}));
  return {o, lse, zero, zero};
}

std::vector<TensorMeta> infer_cudnn_batch_norm(const Graph& g, const OpDef&, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  // In eval mode the saved statistics are empty.
  return {like(x, x.dtype, x.shape), like(x, x.dtype, {0}), like(x, x.dtype, {0}), like(x, DType::u8, {0})};
}
std::vector<Arg> decomp_cudnn_batch_norm(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  if (a[5].b) bad(op, "training-mode batch norm is not supported yet");
  const Arg r = b.call("aten._native_batch_norm_legit_no_training.default", {a[0], a[1], a[2], a[3], a[4], a[6], a[7]});
  return {b.get(r, 0), Arg::none(), Arg::none(), Arg::none()};
}

OpDef view_op(const char* name, const char* schema, unsigned lv, InferFn infer, ViewFn view, DecompFn d) {
  return {.name = name, .schema = schema, .kind = OpKind::view, .levels = lv, .infer = infer, .decompose = d, .view = view};
}
OpDef ext(const char* name, const char* schema, unsigned lv, InferFn infer, RefFn ref, DecompFn d = nullptr) {
  return {.name = name, .schema = schema, .kind = OpKind::extern_kernel, .levels = lv, .infer = infer, .reference = ref, .decompose = d};
}
OpDef comp(const char* name, const char* schema, unsigned lv, InferFn infer, RefFn ref, DecompFn d) {
  return {.name = name, .schema = schema, .kind = OpKind::composite, .levels = lv, .infer = infer, .reference = ref, .decompose = d};
}

}  // namespace

void add_nn_ops(std::vector<OpDef>& t) {
  const std::vector<OpDef> ops = {
      // Matrix multiply, convolution, pooling, gathers: library kernels
      ext("aten.mm.default", "mm(Tensor self, Tensor mat2) -> Tensor", kCore, infer_mm, ref_mm),
      ext("aten.addmm.default", "addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor", kCore,
          infer_mm, ref_mm),
      ext("aten.bmm.default", "bmm(Tensor self, Tensor mat2) -> Tensor", kCore, infer_bmm, ref_mm),
      ext("aten.convolution.default",
          "convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool "
          "transposed, SymInt[] output_padding, SymInt groups) -> Tensor",
          kCore, infer_convolution, ref_convolution),
      ext("aten.max_pool2d_with_indices.default",
          "max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool "
          "ceil_mode=False) -> (Tensor, Tensor)",
          kCore, infer_max_pool, ref_max_pool),
      // Model-level ops and their decompositions
      comp("aten.linear.default", "linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor", kAten,
           [](const Graph& g, const OpDef& op, const std::vector<Arg>& a) -> std::vector<TensorMeta> {
             const TensorMeta &x = meta_of(g, a[0]), &w = meta_of(g, a[1]);
             if (w.shape.size() != 2 || x.shape.empty() || x.shape.back() != w.shape[1])
               bad(op, "input " + shape_str(x.shape) + " does not fit weight " + shape_str(w.shape));
             Shape out = x.shape;
             out.back() = w.shape[0];
             return {like(x, x.dtype, out)};
           },
           nullptr, decomp_linear),
      comp("aten.conv2d.default",
           "conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, SymInt[2] dilation=1, "
           "SymInt groups=1) -> Tensor",
           kAten, infer_conv2d, nullptr, decomp_conv2d),
      comp("aten.max_pool2d.default",
           "max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) "
           "-> Tensor",
           kAten, infer_max_pool, ref_max_pool, decomp_max_pool2d),
      comp("aten.adaptive_avg_pool2d.default", "adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor", kCore,
           infer_adaptive_avg_pool, ref_adaptive_avg_pool, decomp_adaptive_avg_pool),
      comp("aten.layer_norm.default",
           "layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool "
           "cudnn_enable=True) -> Tensor",
           kAten, infer_layer_norm, nullptr, decomp_layer_norm),
      comp("aten.native_layer_norm.default",
           "native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, "
           "Tensor)",
           kCore, infer_layer_norm, ref_native_layer_norm, decomp_native_layer_norm),
      comp("aten.batch_norm.default",
           "batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float "
           "momentum, float eps, bool cudnn_enabled) -> Tensor",
           kAten, infer_batch_norm, nullptr, decomp_batch_norm),
      comp("aten._native_batch_norm_legit_no_training.default",
           "_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, "
           "float momentum, float eps) -> (Tensor, Tensor, Tensor)",
           kCore, infer_batch_norm, ref_batch_norm, decomp_batch_norm_legit),
      comp("aten.cudnn_batch_norm.default",
           "cudnn_batch_norm(Tensor input, Tensor weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, "
           "float exponential_average_factor, float epsilon) -> (Tensor, Tensor, Tensor, Tensor)",
           kAten, infer_cudnn_batch_norm, nullptr, decomp_cudnn_batch_norm),
      comp("aten.softmax.int", "softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", kAten, infer_same, ref_softmax,
           decomp_softmax_int),
      comp("aten._softmax.default", "_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", kCore, infer_same, ref_softmax,
           decomp_softmax),
      comp("aten.scaled_dot_product_attention.default",
           "scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0.0, bool "
           "is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor",
           kAten, infer_sdpa, ref_sdpa, decomp_sdpa),
      // Attention without a mask or dropout is one library kernel (fused: the scores never reach
      // memory), as PyTorch's efficient attention; with a mask it is matrix multiplies and a softmax.
      ext("aten._scaled_dot_product_efficient_attention.default",
          "_scaled_dot_product_efficient_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_bias, bool "
          "compute_log_sumexp, float dropout_p=0.0, bool is_causal=False, *, float? scale=None) -> (Tensor output, Tensor "
          "log_sumexp, Tensor philox_seed, Tensor philox_offset)",
          kCore, infer_sdpa, ref_sdpa),
  };
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
