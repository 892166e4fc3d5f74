// Matrix multiply: mm, addmm and bmm (library kernels: a BLAS on the CPU, cuBLAS or a GEMM template
// on CUDA, each dispatched by its handle in ops/known_ops.h), and linear, which decomposes into them.
#include <cmath>
#include <vector>

#include "ops/rule_helpers.h"

namespace ls {
namespace {

using namespace rules;

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

std::vector<TensorMeta> infer_linear(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta &x = meta_of(g, a[0]), &w = meta_of(g, a[1]);
  if (w.shape.size() != 2 || x.shape.empty() || x.shape.back() != w.shape[1])
    bad(op, "input " + shape_str(x.shape) + " does not fit weight " + shape_str(w.shape));
  Shape out = x.shape;
  out.back() = w.shape[0];
  return {like(x, x.dtype, out)};
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

// ---- derivatives ----------------------------------------------------------------------------

Arg transposed(DerivCtx& c, const Arg& m) {
  const size_t rank = shape_of(c, m).size();
  return rank == 2 ? call(c, "aten.permute.default", {m, ints({1, 0})}) : call(c, "aten.permute.default", {m, ints({0, 2, 1})});
}
Args d_mm(DerivCtx& c) {  // a @ b: ga = g b^T, gb = a^T g
  const char* mm = shape_of(c, c.args[0]).size() == 3 ? "aten.bmm.default" : "aten.mm.default";
  Args r(2, kNone);
  if (wants(c, 0)) r[0] = call(c, mm, {c.grads[0], transposed(c, c.args[1])});
  if (wants(c, 1)) r[1] = call(c, mm, {transposed(c, c.args[0]), c.grads[0]});
  return r;
}
Args d_addmm(DerivCtx& c) {  // beta * bias + alpha * m1 @ m2
  const double beta = c.args[3].number(), alpha = c.args[4].number();
  Args r(5, kNone);
  auto scaled = [&](Arg g, double s) { return s == 1.0 ? g : call(c, "aten.mul.Tensor", {g, num(s)}); };
  if (wants(c, 0)) r[0] = sum_to(c, scaled(c.grads[0], beta), shape_of(c, c.args[0]));
  if (wants(c, 1)) r[1] = scaled(call(c, "aten.mm.default", {c.grads[0], transposed(c, c.args[2])}), alpha);
  if (wants(c, 2)) r[2] = scaled(call(c, "aten.mm.default", {transposed(c, c.args[1]), c.grads[0]}), alpha);
  return r;
}

}  // namespace

// ---- distances: _cdist_forward, _pdist_forward (Core ATen) --------------------------------------
// cdist(x1 [..., P, M], x2 [..., R, M], p) -> [..., P, R]: the p-norm of each row difference
// (p = 0 counts the differing elements, p = inf takes the largest). pdist(x [N, M], p) -> the
// distances of the pairs i < j in row-major order. Decomposed as broadcast differences and
// reductions (the sum and max reductions of the loop IR); compute_mode's matrix-multiply form
// for p = 2 gives the same values up to rounding.

double pnorm(const std::vector<double>& d, double p) {
  double r = 0;
  for (double v : d) {
    const double a = std::abs(v);
    if (p == 0) r += a != 0;
    else if (std::isinf(p)) r = std::max(r, a);
    else r += std::pow(a, p);
  }
  return p == 0 || std::isinf(p) ? r : std::pow(r, 1.0 / p);
}

std::vector<TensorMeta> infer_cdist(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta &x1 = meta_of(g, a[0]), &x2 = meta_of(g, a[1]);
  const size_t r = x1.shape.size();
  if (r < 2 || x2.shape.size() != r) bad(op, "x1 and x2 must have the same rank, at least 2");
  if (x1.shape[r - 1] != x2.shape[r - 1])
    bad(op, "X1 and X2 must have the same number of columns. X1: " + std::to_string(x1.shape[r - 1]) + " X2: " + std::to_string(x2.shape[r - 1]));
  if (!dtype_is_float(x1.dtype) || x1.dtype != x2.dtype) bad(op, "cdist only supports floating-point dtypes, both the same");
  if (a[2].number() < 0) bad(op, "cdist only supports non-negative p values");
  Shape batch = broadcast_shapes(Shape(x1.shape.begin(), x1.shape.end() - 2), Shape(x2.shape.begin(), x2.shape.end() - 2));
  batch.push_back(x1.shape[r - 2]);
  batch.push_back(x2.shape[r - 2]);
  return {like(x1, x1.dtype, batch)};
}
std::vector<Tensor> ref_cdist(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &x1 = in[0], &x2 = in[1];
  const Shape& o = outs[0].shape;
  const size_t r = o.size();
  const int64_t P = o[r - 2], R = o[r - 1], M = x1.shape().back();
  const Shape b1(x1.shape().begin(), x1.shape().end() - 2), b2(x2.shape().begin(), x2.shape().end() - 2), bo(o.begin(), o.end() - 2);
  const Shape s1 = broadcast_strides(b1, bo), s2 = broadcast_strides(b2, bo);
  Tensor y(outs[0].dtype, o);
  const int64_t nb = numel_of(bo);
  std::vector<double> d(static_cast<size_t>(M));
  for (int64_t bi = 0; bi < nb; ++bi) {
    const int64_t o1 = offset_of(bi, bo, s1) * P * M, o2 = offset_of(bi, bo, s2) * R * M;
    for (int64_t i = 0; i < P; ++i)
      for (int64_t j = 0; j < R; ++j) {
        for (int64_t k = 0; k < M; ++k) d[k] = x1.get(o1 + i * M + k) - x2.get(o2 + j * M + k);
        y.set((bi * P + i) * R + j, pnorm(d, a[2].number()));
      }
  }
  return {y};
}
// The p-norm over the last dim of a difference d.
Arg pnorm_last(GraphBuilder& b, const Arg& d, double p) {
  const Arg last = ints({-1});
  if (p == 0) {  // the count of differing elements, in d's dtype
    const Arg ne = b.call("aten.ne.Scalar", {d, Arg::of_int(0)});
    const Arg as_float = b.call("aten._to_copy.default", {ne}, {{"dtype", Arg::of_string(std::string(dtype_torch(b.meta(d).dtype)))}});
    return b.call("aten.sum.dim_IntList", {as_float, last});
  }
  const Arg ad = b.call("aten.abs.default", {d});
  if (std::isinf(p)) return b.call("aten.amax.default", {ad, last});
  if (p == 1) return b.call("aten.sum.dim_IntList", {ad, last});
  if (p == 2) return b.call("aten.sqrt.default", {b.call("aten.sum.dim_IntList", {b.call("aten.mul.Tensor", {d, d}), last})});
  return b.call("aten.pow.Tensor_Scalar", {b.call("aten.sum.dim_IntList", {b.call("aten.pow.Tensor_Scalar", {ad, num(p)}), last}), num(1.0 / p)});
}
Arg decomp_cdist(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const Shape s1 = b.meta(a[0]).shape, s2 = b.meta(a[1]).shape;
  const int64_t r = static_cast<int64_t>(s1.size());
  const Arg u = b.call("aten.unsqueeze.default", {a[0], Arg::of_int(r - 1)});  // [..., P, 1, M]
  const Arg v = b.call("aten.unsqueeze.default", {a[1], Arg::of_int(r - 2)});  // [..., 1, R, M]
  return pnorm_last(b, b.call("aten.sub.Tensor", {u, v}), a[2].number());
}

std::vector<TensorMeta> infer_pdist(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  if (x.shape.size() != 2) bad(op, "pdist only supports 2D tensors, got: " + std::to_string(x.shape.size()) + "D");
  if (!dtype_is_float(x.dtype)) bad(op, "pdist only supports floating-point dtypes");
  if (a[1].number() < 0) bad(op, "pdist only supports non-negative p values");
  const int64_t n = x.shape[0];
  return {like(x, x.dtype, {n * (n - 1) / 2})};
}
std::vector<Tensor> ref_pdist(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  const int64_t n = x.shape()[0], m = x.shape()[1];
  Tensor y(outs[0].dtype, outs[0].shape);
  std::vector<double> d(static_cast<size_t>(m));
  int64_t k = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j) {
      for (int64_t c = 0; c < m; ++c) d[c] = x.get(i * m + c) - x.get(j * m + c);
      y.set(k++, pnorm(d, a[1].number()));
    }
  return {y};
}
// The pairs i < j gathered by index (constant index tensors), then their p-norms.
Arg decomp_pdist(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  const int64_t n = b.meta(a[0]).shape[0];
  const int64_t pairs = n * (n - 1) / 2;
  Tensor is(DType::i64, {pairs}), js(DType::i64, {pairs});
  int64_t k = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j) is.set(k, i), js.set(k++, j);
  Arg list_i, list_j;
  list_i.kind = list_j.kind = Arg::Kind::list;
  list_i.list = {b.constant("pdist_rows", is)};
  list_j.list = {b.constant("pdist_cols", js)};
  const Arg d = b.call("aten.sub.Tensor", {b.call("aten.index.Tensor", {a[0], list_i}), b.call("aten.index.Tensor", {a[0], list_j})});
  return pnorm_last(b, d, a[1].number());
}

namespace {
// ---- matmul (model zoo) ---------------------------------------------------------------------
// torch.matmul: 1-D @ 1-D a dot product, 2-D @ 2-D mm, a 1-D operand promoted to a matrix (a row
// on the left, a column on the right) and its dimension dropped from the result; an N-D (N >= 3)
// left operand times a 1-D or 2-D right one folds its batch into the rows of one mm; otherwise
// both are expanded to the broadcast batch shape and reshaped to a bmm, as aten's native matmul
// and torch._decomp's matmul do.
struct MatmulShapes {
  Shape batch;            // the broadcast batch shape
  int64_t n = 1, k = 1, m = 1;
  Shape out;
};
MatmulShapes matmul_shapes(const OpDef& op, const Shape& x, const Shape& y) {
  if (x.empty() || y.empty())
    bad(op, "both arguments to matmul need to be at least 1D, but they are " + std::to_string(x.size()) + "D and " +
                std::to_string(y.size()) + "D");
  const Shape xs = x.size() == 1 ? Shape{1, x[0]} : x;
  const Shape ys = y.size() == 1 ? Shape{y[0], 1} : y;
  MatmulShapes r;
  r.n = xs[xs.size() - 2];
  r.k = xs.back();
  r.m = ys.back();
  if (ys[ys.size() - 2] != r.k) bad(op, "shapes " + shape_str(x) + " and " + shape_str(y) + " cannot be multiplied");
  r.batch = broadcast_shapes(Shape(xs.begin(), xs.end() - 2), Shape(ys.begin(), ys.end() - 2));
  r.out = r.batch;
  if (x.size() > 1) r.out.push_back(r.n);
  if (y.size() > 1) r.out.push_back(r.m);
  return r;
}
std::vector<TensorMeta> infer_matmul(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta &x = meta_of(g, a[0]), &y = meta_of(g, a[1]);
  if (x.dtype != y.dtype)
    bad(op, "expected both operands to have the same dtype, but got " + std::string(dtype_torch(x.dtype)) + " and " +
                std::string(dtype_torch(y.dtype)));
  return {like(x, x.dtype, matmul_shapes(op, x.shape, y.shape).out)};
}
std::vector<Tensor> ref_matmul(const OpDef& op, const std::vector<Arg>&, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &x = in[0], &y = in[1];
  const MatmulShapes ms = matmul_shapes(op, x.shape(), y.shape());
  const Shape xb = x.dim() >= 2 ? Shape(x.shape().begin(), x.shape().end() - 2) : Shape{};
  const Shape yb = y.dim() >= 2 ? Shape(y.shape().begin(), y.shape().end() - 2) : Shape{};
  const Shape sx = broadcast_strides(xb, ms.batch), sy = broadcast_strides(yb, ms.batch);
  Tensor c(outs[0].dtype, outs[0].shape);
  const int64_t nb = numel_of(ms.batch);
  for (int64_t bi = 0; bi < nb; ++bi) {
    const int64_t ox = offset_of(bi, ms.batch, sx) * ms.n * ms.k, oy = offset_of(bi, ms.batch, sy) * ms.k * ms.m;
    for (int64_t i = 0; i < ms.n; ++i)
      for (int64_t j = 0; j < ms.m; ++j) {
        double acc = 0;
        for (int64_t kk = 0; kk < ms.k; ++kk) acc += x.get(ox + i * ms.k + kk) * y.get(oy + kk * ms.m + j);
        c.set((bi * ms.n + i) * ms.m + j, acc);
      }
  }
  return {c};
}
std::vector<Arg> decomp_matmul(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape x = b.meta(a[0]).shape, y = b.meta(a[1]).shape;
  const MatmulShapes ms = matmul_shapes(op, x, y);
  auto view = [&](const Arg& t, const Shape& s) { return b.call("aten.view.default", {t, Arg::of_ints(s)}); };
  auto reshape = [&](const Arg& t, const Shape& s) { return b.call("aten.reshape.default", {t, Arg::of_ints(s)}); };
  const Arg rhs2 = y.size() == 1 ? view(a[1], {ms.k, 1}) : a[1];
  if (x.size() <= 2 && y.size() <= 2) {  // dot, mv, vector-matrix, mm
    const Arg lhs2 = x.size() == 1 ? view(a[0], {1, ms.k}) : a[0];
    const Arg r = b.call("aten.mm.default", {lhs2, rhs2});
    return {x.size() == 2 && y.size() == 2 ? r : view(r, ms.out)};
  }
  if (x.size() >= 3 && y.size() <= 2) {  // fold the batch into the rows of one mm
    const int64_t rows = numel_of(Shape(x.begin(), x.end() - 1));
    return {view(b.call("aten.mm.default", {reshape(a[0], {rows, ms.k}), rhs2}), ms.out)};
  }
  // Batched: both expanded to the broadcast batch shape, reshaped to [B, n, k] and [B, k, m].
  const int64_t B = numel_of(ms.batch);
  Shape xe = ms.batch, ye = ms.batch;
  xe.insert(xe.end(), {ms.n, ms.k});
  ye.insert(ye.end(), {ms.k, ms.m});
  const Arg lhs = x.size() == 1 ? view(a[0], {1, ms.k}) : a[0];
  const Arg rhs = y.size() == 1 ? view(a[1], {ms.k, 1}) : a[1];
  auto batched = [&](const Arg& t, const Shape& full, int64_t r, int64_t c) {
    const Arg e = b.meta(t).shape == full ? t : b.call("aten.expand.default", {t, Arg::of_ints(full)});
    return reshape(e, {B, r, c});
  };
  const Arg r = b.call("aten.bmm.default", {batched(lhs, xe, ms.n, ms.k), batched(rhs, ye, ms.k, ms.m)});
  return {view(r, ms.out)};
}
}  // namespace

void add_linalg_ops(std::vector<OpDef>& t) {
  const std::vector<OpDef> ops = {
      ext("aten.mm.default", "mm(Tensor self, Tensor mat2) -> Tensor", kCore, infer_mm, ref_mm, nullptr, d_mm),
      ext("aten.addmm.default", "addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor", kCore,
          infer_mm, ref_mm, nullptr, d_addmm),
      ext("aten.bmm.default", "bmm(Tensor self, Tensor mat2) -> Tensor", kCore, infer_bmm, ref_mm, nullptr, d_mm),
      // Differentiated through their decompositions.
      comp("aten._cdist_forward.default", "_cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode) -> Tensor", kCore, infer_cdist,
           ref_cdist, single<decomp_cdist>),
      comp("aten._pdist_forward.default", "_pdist_forward(Tensor self, float p=2) -> Tensor", kCore, infer_pdist, ref_pdist,
           single<decomp_pdist>),
      comp("aten.matmul.default", "matmul(Tensor self, Tensor other) -> Tensor", kAten, infer_matmul, ref_matmul, decomp_matmul),
      comp("aten.linear.default", "linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor", kAten, infer_linear, nullptr,
           decomp_linear),
  };
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
