// Matrix multiply: mm, addmm and bmm (library kernels: a BLAS on the CPU, cuBLAS or a GEMM template
// on CUDA, each dispatched by its handle in ops/known_ops.h), and linear, which decomposes into them.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>
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
// C[b] = A[b] @ B[b] in double accumulation: each batch's operands read into doubles once, then
// plain loops (reading B through Tensor::get in the inner loop made a 2048x256x1024 product take
// seconds; the sums and their order are the same).
void matmul(const Tensor& A, const Tensor& B, Tensor& C, int64_t batch, int64_t M, int64_t K, int64_t N) {
  std::vector<double> a(static_cast<size_t>(M * K)), b(static_cast<size_t>(K * N)), row(static_cast<size_t>(N));
  for (int64_t bb = 0; bb < batch; ++bb) {
    for (int64_t i = 0; i < M * K; ++i) a[i] = A.get(bb * M * K + i);
    for (int64_t i = 0; i < K * N; ++i) b[i] = B.get(bb * K * N + i);
    for (int64_t i = 0; i < M; ++i) {
      std::fill(row.begin(), row.end(), 0.0);
      for (int64_t k = 0; k < K; ++k) {
        const double av = a[i * K + k];
        if (av == 0) continue;
        const double* bk = b.data() + k * N;
        for (int64_t j = 0; j < N; ++j) row[j] += av * bk[j];
      }
      for (int64_t j = 0; j < N; ++j) C.set((bb * M + i) * N + j, row[j]);
    }
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

namespace {
// ---- einsum (export level; issue 32 item 2) --------------------------------------------------
// einsum(equation, tensors): PyTorch's parse (aten/src/ATen/native/Linear.cpp): labels a-z, A-Z,
// spaces ignored, one ellipsis per operand (right-aligned, broadcast across operands), a label
// repeated within an operand takes its diagonal, size-1 dimensions broadcast; without "->" the
// output is the ellipsis, then the labels seen once, in ASCII order (upper case first, as numpy).
// Reference kernel: the direct sum over every label's values. Decomposition: Linear.cpp's
// algorithm: each operand made one aligned layout (output labels, then contracted ones) through
// diagonal, unsqueeze and permute; dimensions that no later operand has summed out early; the
// operands contracted left to right, each pair as permute/reshape/bmm (sumproduct_pair).
// Differentiated through its decomposition, as PyTorch (CompositeImplicitAutograd) does.
struct EinsumSpec {
  std::vector<std::vector<int>> labels;  // per operand, per dimension: its label (ellipsis dims: 52 + k)
  std::vector<int> order;                // the aligned layout: the output's labels, then the contracted ones
  size_t out_size = 0;                   // how many of `order` the output has
  std::vector<int64_t> size;             // per label: its (broadcast) size, -1 where unused
};

int label_index(char c) { return std::isupper(static_cast<unsigned char>(c)) ? c - 'A' : 26 + (c - 'a'); }

EinsumSpec einsum_spec(const OpDef& op, const std::string& eq, const std::vector<Shape>& shapes) {
  if (shapes.empty()) bad(op, "einsum(): must provide at least one operand");
  constexpr int kEll = -1, kLetters = 52;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::vector<int>> raw(1);
  for (size_t i = 0; i < lhs.size(); ++i) {
    const char c = lhs[i];
    if (c == ' ') continue;
    if (c == ',') {
      if (raw.size() == shapes.size()) bad(op, "einsum(): fewer operands were provided than specified in the equation");
      raw.emplace_back();
    } else if (c == '.') {
      const size_t k = raw.size() - 1;
      if (std::count(raw.back().begin(), raw.back().end(), kEll))
        bad(op, "einsum(): found '.' for operand " + std::to_string(k) + " for which an ellipsis was already found");
      if (!(i + 2 < lhs.size() && lhs[i + 1] == '.' && lhs[i + 2] == '.'))
        bad(op, "einsum(): found '.' for operand " + std::to_string(k) + " that is not part of any ellipsis");
      i += 2;
      raw.back().push_back(kEll);
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      raw.back().push_back(label_index(c));
    } else {
      bad(op, "einsum(): invalid subscript given at index " + std::to_string(i) + " in the equation string, subscripts must be in [a-zA-Z]");
    }
  }
  if (raw.size() != shapes.size()) bad(op, "einsum(): more operands were provided than specified in the equation");
  std::vector<int> count(kLetters, 0);
  int64_t ell = 0;
  for (size_t k = 0; k < raw.size(); ++k) {
    const int64_t nd = static_cast<int64_t>(shapes[k].size());
    int64_t nl = 0;
    bool has_ell = false;
    for (int l : raw[k]) {
      if (l == kEll) has_ell = true;
      else ++nl, ++count[l];
    }
    if (has_ell ? nl > nd : nl != nd)
      bad(op, "einsum(): the number of subscripts in the equation (" + std::to_string(nl) +
                  (has_ell ? ") is more than the number of dimensions (" : ") does not match the number of dimensions (") +
                  std::to_string(nd) + ") for operand " + std::to_string(k) + (has_ell ? "" : " and no ellipsis was given"));
    if (has_ell) ell = std::max(ell, nd - nl);
  }
  EinsumSpec s;
  s.size.assign(kLetters + ell, -1);
  for (size_t k = 0; k < raw.size(); ++k) {  // the ellipsis expanded, right-aligned
    std::vector<int>& ls = s.labels.emplace_back();
    const int64_t e = static_cast<int64_t>(shapes[k].size()) - static_cast<int64_t>(raw[k].size()) + 1;
    for (int l : raw[k])
      if (l != kEll) ls.push_back(l);
      else
        for (int64_t j = 0; j < e; ++j) ls.push_back(static_cast<int>(kLetters + ell - e + j));
  }
  std::vector<bool> in_out(s.size.size(), false);
  auto add_ell = [&] {
    for (int64_t j = 0; j < ell; ++j) s.order.push_back(static_cast<int>(kLetters + j)), in_out[kLetters + j] = true;
  };
  if (arrow == std::string::npos) {
    add_ell();
    for (int l = 0; l < kLetters; ++l)
      if (count[l] == 1) s.order.push_back(l), in_out[l] = true;
  } else {
    const std::string rhs = eq.substr(arrow + 2);
    bool found_ell = false;
    for (size_t i = 0; i < rhs.size(); ++i) {
      const char c = rhs[i];
      if (c == ' ') continue;
      if (c == '.') {
        if (found_ell) bad(op, "einsum(): found '.' for output but an ellipsis (...) was already found");
        if (!(i + 2 < rhs.size() && rhs[i + 1] == '.' && rhs[i + 2] == '.'))
          bad(op, "einsum(): found '.' for output that is not part of any ellipsis (...)");
        i += 2;
        found_ell = true;
        add_ell();
        continue;
      }
      if (!std::isalpha(static_cast<unsigned char>(c)))
        bad(op, "einsum(): invalid subscript given at index " + std::to_string(lhs.size() + 2 + i) +
                    " in the equation string, subscripts must be in [a-zA-Z]");
      const int l = label_index(c);
      if (count[l] == 0 || in_out[l])
        bad(op, std::string("einsum(): output subscript ") + c +
                    (in_out[l] ? " appears more than once in the output" : " does not appear in the equation for any input operand"));
      s.order.push_back(l), in_out[l] = true;
    }
  }
  s.out_size = s.order.size();
  for (int64_t j = 0; j < ell; ++j)
    if (!in_out[kLetters + j]) s.order.push_back(static_cast<int>(kLetters + j));
  for (int l = 0; l < kLetters; ++l)
    if (count[l] && !in_out[l]) s.order.push_back(l);
  // Sizes: a label repeated within an operand must match there; across operands, size 1 broadcasts.
  for (size_t k = 0; k < shapes.size(); ++k) {
    std::vector<int64_t> here(s.size.size(), -1);
    for (size_t d = 0; d < shapes[k].size(); ++d) {
      const int l = s.labels[k][d];
      const int64_t n = shapes[k][d];
      if (here[l] >= 0 && here[l] != n) {
        const char c = l < 26 ? static_cast<char>('A' + l) : static_cast<char>('a' + l - 26);
        bad(op, std::string("einsum(): subscript ") + c + " is repeated for operand " + std::to_string(k) +
                    " but the sizes don't match, " + std::to_string(n) + " != " + std::to_string(here[l]));
      }
      here[l] = n;
    }
    for (size_t l = 0; l < here.size(); ++l) {
      if (here[l] < 0) continue;
      if (s.size[l] < 0 || s.size[l] == 1) s.size[l] = here[l];
      else if (here[l] != 1 && here[l] != s.size[l]) {
        std::string shapes_text;
        for (const Shape& sh : shapes) shapes_text += " " + shape_str(sh);
        bad(op, "einsum(): operands do not broadcast with remapped shapes [original->remapped]:" + shapes_text);
      }
    }
  }
  return s;
}

std::vector<Shape> operand_shapes(const Graph& g, const Arg& list) {
  std::vector<Shape> s;
  for (const Arg& x : list.list) s.push_back(meta_of(g, x).shape);
  return s;
}

std::vector<TensorMeta> infer_einsum(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  if (a[1].list.empty()) bad(op, "einsum(): must provide at least one operand");
  const EinsumSpec s = einsum_spec(op, a[0].s, operand_shapes(g, a[1]));
  const TensorMeta& x = meta_of(g, a[1].list[0]);
  for (const Arg& t : a[1].list)
    if (meta_of(g, t).dtype != x.dtype)
      bad(op, "expected scalar type " + std::string(dtype_torch(x.dtype)) + " but found " + std::string(dtype_torch(meta_of(g, t).dtype)));
  Shape out;
  for (size_t i = 0; i < s.out_size; ++i) out.push_back(s.size[s.order[i]]);
  return {like(x, x.dtype, out)};
}

// The direct sum: every assignment of the labels, the product of the operands' elements there.
std::vector<Tensor> ref_einsum(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const std::vector<Tensor>& xs = in.lists[1];
  std::vector<Shape> shapes;
  for (const Tensor& t : xs) shapes.push_back(t.shape());
  const EinsumSpec s = einsum_spec(op, a[0].s, shapes);
  Tensor y(outs[0].dtype, outs[0].shape);
  std::vector<double> acc(static_cast<size_t>(y.numel()), 0.0);
  std::vector<int64_t> sizes, idx(s.size.size(), 0);
  for (int l : s.order) sizes.push_back(s.size[l]);
  int64_t total = 1;
  for (int64_t n : sizes) total *= n;
  for (int64_t it = 0; it < total; ++it) {
    int64_t r = it;
    for (size_t p = s.order.size(); p-- > 0;) idx[s.order[p]] = r % sizes[p], r /= sizes[p];
    double prod = 1.0;
    for (size_t k = 0; k < xs.size(); ++k) {
      int64_t off = 0;
      for (size_t d = 0; d < shapes[k].size(); ++d) off = off * shapes[k][d] + (shapes[k][d] == 1 ? 0 : idx[s.labels[k][d]]);
      prod *= xs[k].get(off);
    }
    int64_t o = 0;
    for (size_t p = 0; p < s.out_size; ++p) o = o * sizes[p] + idx[s.order[p]];
    acc[static_cast<size_t>(o)] += prod;
  }
  for (int64_t i = 0; i < y.numel(); ++i) y.set(i, acc[static_cast<size_t>(i)]);
  return {y};
}

Arg permuted(GraphBuilder& b, const Arg& x, const std::vector<int64_t>& perm) {
  std::vector<int64_t> id(perm.size());
  std::iota(id.begin(), id.end(), 0);
  return perm == id ? x : b.call("aten.permute.default", {x, Arg::of_ints(perm)});
}

// Linear.cpp's sumproduct_pair: left and right of one rank, the dimensions sum_dims contracted;
// the others kept (size 1 where neither has them), as permute/reshape/bmm/reshape/permute.
Arg sumproduct_pair(GraphBuilder& b, Arg left, Arg right, const std::vector<bool>& sum_dims) {
  const Shape ls = b.meta(left).shape, rs = b.meta(right).shape;
  const int64_t dim = static_cast<int64_t>(ls.size());
  std::vector<int64_t> lro, lo, ro, sums;
  int64_t lro_size = 1, lo_size = 1, ro_size = 1, sum_size = 1;
  for (int64_t i = 0; i < dim; ++i) {
    const bool sl = ls[i] != 1, sr = rs[i] != 1;
    if (sum_dims[i]) {
      sums.push_back(i);
      if (sl && sr) sum_size *= ls[i];
      else if (sl) left = b.call("aten.sum.dim_IntList", {left, Arg::of_ints({i}), Arg::of_bool(true)});
      else if (sr) right = b.call("aten.sum.dim_IntList", {right, Arg::of_ints({i}), Arg::of_bool(true)});
    } else if (sl && sr) {
      lro.push_back(i), lro_size *= ls[i];
    } else if (sl) {
      lo.push_back(i), lo_size *= ls[i];
    } else {
      ro.push_back(i), ro_size *= rs[i];
    }
  }
  Shape out;
  std::vector<int64_t> lperm, rperm;
  for (int64_t d : lro) out.push_back(ls[d]), lperm.push_back(d), rperm.push_back(d);
  for (int64_t d : lo) out.push_back(ls[d]), lperm.push_back(d);
  for (int64_t d : sums) out.push_back(1), lperm.push_back(d), rperm.push_back(d);
  for (int64_t d : ro) out.push_back(rs[d]), lperm.push_back(d), rperm.push_back(d);
  rperm.insert(rperm.end(), lo.begin(), lo.end());
  std::vector<int64_t> operm(static_cast<size_t>(dim));
  for (int64_t k = 0; k < dim; ++k) operm[lperm[k]] = k;
  auto reshape = [&](const Arg& t, const Shape& sh) { return b.call("aten.reshape.default", {t, Arg::of_ints(sh)}); };
  left = reshape(permuted(b, left, lperm), {lro_size, lo_size, sum_size});
  right = reshape(permuted(b, right, rperm), {lro_size, sum_size, ro_size});
  Arg r = permuted(b, reshape(b.call("aten.bmm.default", {left, right}), out), operm);
  return sums.empty() ? r : b.call("aten.squeeze.dims", {r, Arg::of_ints(sums)});
}

std::vector<Arg> decomp_einsum(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const std::vector<Arg>& xs = a[1].list;
  std::vector<Shape> shapes;
  for (const Arg& x : xs) shapes.push_back(b.meta(x).shape);
  const EinsumSpec s = einsum_spec(op, a[0].s, shapes);
  const int64_t P = static_cast<int64_t>(s.order.size()), out_size = static_cast<int64_t>(s.out_size);
  // Each operand in the aligned layout: diagonals of repeated labels, missing labels unsqueezed.
  std::vector<Arg> ops;
  for (size_t k = 0; k < xs.size(); ++k) {
    Arg x = xs[k];
    std::vector<int> cur;
    for (int l : s.labels[k]) {
      const auto it = std::find(cur.begin(), cur.end(), l);
      if (it == cur.end()) {
        cur.push_back(l);
        continue;
      }
      const int64_t d = it - cur.begin(), j = static_cast<int64_t>(cur.size());
      x = b.call("aten.diagonal.default", {x, Arg::of_int(0), Arg::of_int(d), Arg::of_int(j)});
      const int64_t r = static_cast<int64_t>(b.meta(x).shape.size());
      std::vector<int64_t> perm;  // movedim(-1, d)
      for (int64_t q = 0; q < r - 1; ++q) {
        if (q == d) perm.push_back(r - 1);
        perm.push_back(q);
      }
      if (d == r - 1) perm.push_back(r - 1);
      x = permuted(b, x, perm);
    }
    for (int l : s.order)
      if (std::find(cur.begin(), cur.end(), l) == cur.end()) {
        x = b.call("aten.unsqueeze.default", {x, Arg::of_int(static_cast<int64_t>(cur.size()))});
        cur.push_back(l);
      }
    std::vector<int64_t> perm;
    for (int l : s.order) perm.push_back(std::find(cur.begin(), cur.end(), l) - cur.begin());
    ops.push_back(permuted(b, x, perm));
  }
  // The last operand holding each dimension at a size other than 1.
  std::vector<size_t> last(static_cast<size_t>(P), 0);
  bool zero = false;
  for (int64_t d = 0; d < P; ++d) {
    for (size_t k = 1; k < ops.size(); ++k)
      if (b.meta(ops[k]).shape[d] != 1) last[d] = k;
    zero |= s.size[s.order[d]] == 0;
  }
  if (zero) {
    const Shape out = infer_einsum(b.graph(), op, a)[0].shape;
    return {b.call("aten.full.default", {Arg::of_ints(out), Arg::of_int(0)},
                   {{"dtype", Arg::of_string(std::string(dtype_torch(b.meta(xs[0]).dtype)))}})};
  }
  auto size_at = [&](const Arg& t, int64_t d) { return b.meta(t).shape[static_cast<size_t>(d)]; };
  Arg result = ops[0];
  {  // contracted dimensions no later operand has: summed (or squeezed, where of size 1) now
    std::vector<int64_t> drop;
    bool any_sum = false;
    for (int64_t i = out_size; i < P; ++i)
      if (last[i] == 0) drop.push_back(i), any_sum |= size_at(result, i) != 1;
    if (!drop.empty())
      result = any_sum ? b.call("aten.sum.dim_IntList", {result, Arg::of_ints(drop), Arg::of_bool(false)})
                       : b.call("aten.squeeze.dims", {result, Arg::of_ints(drop)});
  }
  for (size_t k = 1; k < ops.size(); ++k) {
    Arg operand = ops[k];
    std::vector<int64_t> sum_dims;
    int64_t dim = out_size;
    for (int64_t j = out_size; j < P; ++j, ++dim) {
      if (last[j] < k) {
        operand = b.call("aten.squeeze.dim", {operand, Arg::of_int(dim)});
        --dim;
      } else if (last[j] == k) {
        if (size_at(result, dim) == 1) {
          operand = b.call("aten.sum.dim_IntList", {operand, Arg::of_ints({dim}), Arg::of_bool(false)});
          result = b.call("aten.squeeze.dim", {result, Arg::of_int(dim)});
          --dim;
        } else {
          sum_dims.push_back(dim);
        }
      }
    }
    if (sum_dims.empty()) {
      result = b.call("aten.mul.Tensor", {result, operand});
    } else {
      std::vector<bool> mask(b.meta(result).shape.size(), false);
      for (int64_t d : sum_dims) mask[static_cast<size_t>(d)] = true;
      result = sumproduct_pair(b, result, operand, mask);
    }
  }
  return {result};
}
// Its reference: the sums written out, in double (the independent truth for the decomposition).
std::vector<Tensor> ref_baddbmm(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &self = in[0], &x = in[1], &y = in[2];
  Tensor out(outs[0].dtype, outs[0].shape);
  const int64_t B = x.shape()[0], M = x.shape()[1], K = x.shape()[2], N = y.shape()[2];
  const double beta = a[3].number(), alpha = a[4].number();
  const Shape st = broadcast_strides(self.shape(), out.shape());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += x.get((b * M + i) * K + k) * y.get((b * K + k) * N + j);
        const int64_t o = (b * M + i) * N + j;
        out.set(o, alpha * acc + (beta == 0.0 ? 0.0 : beta * self.get(offset_of(o, out.shape(), st))));
      }
  return {out};
}
// baddbmm(self, batch1, batch2, beta, alpha) = beta * self + alpha * (batch1 @ batch2), as
// torch._decomp writes it (beta 0: self is not read, so its NaNs do not reach the result).
std::vector<Arg> decomp_baddbmm(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape s1 = b.meta(a[1]).shape, s2 = b.meta(a[2]).shape;
  if (s1.size() != 3 || s2.size() != 3) bad(op, "batch1 and batch2 must be 3-D tensors");
  if (s1[0] != s2[0] || s1[2] != s2[1])
    bad(op, "cannot multiply " + shape_str(s1) + " by " + shape_str(s2));
  Arg r = b.call("aten.bmm.default", {a[1], a[2]});
  if (a[4].number() != 1.0) r = b.call("aten.mul.Tensor", {r, a[4]});
  if (a[3].number() == 0.0) return {r};
  const Arg self = a[3].number() == 1.0 ? a[0] : b.call("aten.mul.Tensor", {a[0], a[3]});
  return {b.call("aten.add.Tensor", {self, r})};
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
      comp("aten.baddbmm.default", "baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor", kAten,
           infer_by_decomp, ref_baddbmm, decomp_baddbmm),
      comp("aten.einsum.default", "einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor", kAten, infer_einsum,
           ref_einsum, decomp_einsum),
  };
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
