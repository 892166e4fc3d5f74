// Matrix multiply: mm, addmm and bmm (library kernels: a BLAS on the CPU, cuBLAS or a GEMM template
// on CUDA, each dispatched by its handle in ops/known_ops.h), and linear, which decomposes into them.
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

void add_linalg_ops(std::vector<OpDef>& t) {
  const std::vector<OpDef> ops = {
      ext("aten.mm.default", "mm(Tensor self, Tensor mat2) -> Tensor", kCore, infer_mm, ref_mm, nullptr, d_mm),
      ext("aten.addmm.default", "addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor", kCore,
          infer_mm, ref_mm, nullptr, d_addmm),
      ext("aten.bmm.default", "bmm(Tensor self, Tensor mat2) -> Tensor", kCore, infer_bmm, ref_mm, nullptr, d_mm),
      // Differentiated through its decomposition.
      comp("aten.linear.default", "linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor", kAten, infer_linear, nullptr,
           decomp_linear),
  };
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
