// Attention: scaled_dot_product_attention as torch.export keeps it, the fused efficient attention
// it decomposes into when it has no mask (a library kernel: fused kernels, FlashAttention-2 or
// cuBLAS around softmax kernels on CUDA), and that kernel's backward. Dropout inside attention is
// refused by every one of them (their shape rules), rather than left out without a word.
#include "ops/attention.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <stdexcept>

#include "ops/rule_helpers.h"

namespace ls {
namespace {

using namespace rules;

// dropout_p: 0 only. (PyTorch draws the dropout mask inside the fused kernels; we have none that
// does, and torch-level calls with dropout become the math form with a dropout op before this.)
void refuse_dropout(const OpDef& op, const Arg& p) {
  if (p.is_none() || p.number() == 0.0) return;
  char v[32];
  std::snprintf(v, sizeof v, "%g", p.number());
  bad(op, std::string("attention dropout is not supported (dropout_p = ") + v + ")");
}

// The batch shape of q, k and v broadcast (the dims before the last two), as the math attention's
// matmuls broadcast them: q [2, 8, L, E] with k, v [8, S, E] gives [2, 8].
Shape sdpa_batch(const OpDef& op, const Shape& q, const Shape& k, const Shape& v) {
  if (q.size() < 2 || k.size() < 2 || v.size() < 2) bad(op, "query, key and value need at least 2 dimensions");
  const Shape qb(q.begin(), q.end() - 2), kb(k.begin(), k.end() - 2), vb(v.begin(), v.end() - 2);
  try {
    return broadcast_shapes(broadcast_shapes(qb, kb), vb);
  } catch (const std::exception&) {
    bad(op, "the batch dimensions of query " + shape_str(q) + ", key " + shape_str(k) + " and value " + shape_str(v) +
                " do not broadcast");
  }
}
// enable_gqa (grouped-query attention): key and value have fewer heads (dim -3) than the query,
// a divisor of its count; each of their heads serves a group of query heads, as PyTorch repeats
// them (repeat_interleave along dim -3). The repeat count, 1 without it.
int64_t gqa_repeats(const OpDef& op, const std::vector<Arg>& a, const Shape& q, const Shape& k, const Shape& v) {
  if (op.name != "aten.scaled_dot_product_attention.default" || a.size() < 8 || !a[7].b) return 1;
  if (q.size() < 3 || k.size() < 3 || v.size() < 3) bad(op, "enable_gqa needs query, key and value with a head dimension (-3)");
  const int64_t hq = q[q.size() - 3], hk = k[k.size() - 3], hv = v[v.size() - 3];
  if (hk != hv || hk == 0 || hq % hk != 0)
    bad(op, "enable_gqa: the query's " + std::to_string(hq) + " heads are not a multiple of the key's " + std::to_string(hk) + " and value's " +
                std::to_string(hv));
  return hq / hk;
}
Shape with_heads(Shape s, int64_t repeats) {
  if (repeats > 1) s[s.size() - 3] *= repeats;
  return s;
}
// PyTorch's fused attention kernels (efficient attention and its backward) take q, k and v of one
// rank with the same batch and head sizes: no broadcasting (torch checks them in
// _efficient_attention_forward); only the math form broadcasts. Ours index them the same way.
void require_same_batch(const OpDef& op, const Shape& q, const Shape& k, const Shape& v) {
  auto batch = [](const Shape& s) { return s.size() < 2 ? s : Shape(s.begin(), s.end() - 2); };
  if (q.size() < 3 || q.size() > 4 || k.size() != q.size() || v.size() != q.size() || batch(k) != batch(q) || batch(v) != batch(q))
    bad(op, "query " + shape_str(q) + ", key " + shape_str(k) + " and value " + shape_str(v) +
                " must be 3-D or 4-D with the same batch and head sizes (the fused attention kernels do not broadcast; "
                "scaled_dot_product_attention does)");
}
std::vector<TensorMeta> infer_sdpa(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  refuse_dropout(op, a[op.name == "aten._scaled_dot_product_efficient_attention.default" ? 5 : 4]);
  const TensorMeta &q = meta_of(g, a[0]), &k0 = meta_of(g, a[1]), &v0 = meta_of(g, a[2]);
  if (q.dtype != k0.dtype || q.dtype != v0.dtype)  // PyTorch's validate_sdpa_input
    bad(op, "Expected query, key, and value to have the same dtype, but got query.dtype: " + std::string(dtype_torch(q.dtype)) +
                " key.dtype: " + std::string(dtype_torch(k0.dtype)) + " and value.dtype: " + std::string(dtype_torch(v0.dtype)) + " instead.");
  if (op.name == "aten._scaled_dot_product_efficient_attention.default") require_same_batch(op, q.shape, k0.shape, v0.shape);
  const int64_t rep = gqa_repeats(op, a, q.shape, k0.shape, v0.shape);
  TensorMeta k = k0, v = v0;
  k.shape = with_heads(k.shape, rep);
  v.shape = with_heads(v.shape, rep);
  const Shape batch = sdpa_batch(op, q.shape, k.shape, v.shape);
  if (q.shape.back() != k.shape.back() || k.shape[k.shape.size() - 2] != v.shape[v.shape.size() - 2])
    bad(op, "key does not fit query or value");
  const int64_t L = q.shape[q.shape.size() - 2], S = k.shape[k.shape.size() - 2];
  if (a[3].is_node()) {
    Shape full = batch;
    full.insert(full.end(), {L, S});
    const Shape& ms = meta_of(g, a[3]).shape;
    if (ms.size() > full.size() || broadcast_shapes(ms, full) != full)
      bad(op, "attn_mask " + shape_str(ms) + " does not broadcast to the scores' shape " + shape_str(full));
  }
  Shape out = batch;
  out.insert(out.end(), {L, v.shape.back()});
  if (op.num_outputs == 1) return {like(q, q.dtype, out)};
  Shape lse = batch;
  lse.push_back(L);
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
  const int64_t rep = gqa_repeats(op, a, in[0].shape(), in[1].shape(), in[2].shape());
  auto repeated = [rep](const Tensor& t) {  // each head repeated rep times in place (dim -3)
    if (rep == 1) return t;
    const Shape& s = t.shape();
    const int64_t inner = s[s.size() - 2] * s[s.size() - 1], heads = s[s.size() - 3];
    Tensor r(t.dtype(), with_heads(s, rep));
    for (int64_t i = 0; i < r.numel(); ++i) {
      const int64_t e = i % inner, h = (i / inner) % (heads * rep), outer = i / inner / (heads * rep);
      r.set(i, t.get((outer * heads + h / rep) * inner + e));
    }
    return r;
  };
  const Tensor q = in[0], k = repeated(in[1]), v = repeated(in[2]);
  const Shape &qs = q.shape(), &ks = k.shape(), &vs = v.shape();
  const int64_t L = qs[qs.size() - 2], E = qs.back(), S = ks[ks.size() - 2], Ev = vs.back();
  const Shape batch = sdpa_batch(op, qs, ks, vs);
  const int64_t B = numel_of(batch);
  const Shape bq = broadcast_strides(Shape(qs.begin(), qs.end() - 2), batch), bk = broadcast_strides(Shape(ks.begin(), ks.end() - 2), batch),
              bv = broadcast_strides(Shape(vs.begin(), vs.end() - 2), batch);
  Shape full = batch;  // the mask, broadcast to [batch..., L, S]
  full.insert(full.end(), {L, S});
  const bool has_mask = a[ix.mask].is_node();
  const Shape bm = has_mask ? broadcast_strides(in[ix.mask].shape(), full) : Shape{};
  const bool bool_mask = has_mask && in[ix.mask].dtype() == DType::b8;
  const bool causal = a[ix.causal].b;
  const double scale = a[ix.scale].is_none() ? 1.0 / std::sqrt(double(E)) : a[ix.scale].number();
  Tensor o(outs[0].dtype, outs[0].shape);
  Tensor lse(DType::f32, outs.size() > 1 ? outs[1].shape : Shape{B, L});
  std::vector<double> w(S);
  for (int64_t bb = 0; bb < B; ++bb) {
    const int64_t oq = offset_of(bb, batch, bq), ok = offset_of(bb, batch, bk), ov = offset_of(bb, batch, bv);
    for (int64_t i = 0; i < L; ++i) {
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < S; ++j) {
        double s = 0;
        for (int64_t e = 0; e < E; ++e) s += q.get((oq * L + i) * E + e) * k.get((ok * S + j) * E + e);
        s *= scale;
        if (causal && j > i) s = -std::numeric_limits<double>::infinity();
        if (has_mask) {
          const double mv = in[ix.mask].get(offset_of((bb * L + i) * S + j, full, bm));
          if (bool_mask) s = mv != 0 ? s : -std::numeric_limits<double>::infinity();
          else s += mv;
        }
        w[j] = s;
        m = std::max(m, s);
      }
      double sum = 0;
      for (int64_t j = 0; j < S; ++j) sum += (w[j] = std::exp(w[j] - m));
      for (int64_t e = 0; e < Ev; ++e) {
        double acc = 0;
        for (int64_t j = 0; j < S; ++j) acc += w[j] * v.get((ov * S + j) * Ev + e);
        o.set((bb * L + i) * Ev + e, acc / sum);
      }
      lse.set(bb * L + i, m + std::log(sum));
    }
  }
  if (op.num_outputs == 1) return {o};
  return {o, lse, Tensor(DType::i64, {}), Tensor(DType::i64, {})};
}
// softmax(q @ k^T * scale + mask) @ v through bmm, with the causal mask as a constant of the graph.
std::vector<Arg> decomp_sdpa(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const SdpaArgs ix = sdpa_args(op);  // dropout_p is 0: infer_sdpa refused any other
  if (const int64_t rep = gqa_repeats(op, a, b.meta(a[0]).shape, b.meta(a[1]).shape, b.meta(a[2]).shape); rep > 1) {
    // key and value heads repeated, then attention as usual (scale is keyword-only)
    const int64_t dim = -3;
    const Arg k = b.call("aten.repeat_interleave.self_int", {a[1], Arg::of_int(rep), Arg::of_int(dim)});
    const Arg v = b.call("aten.repeat_interleave.self_int", {a[2], Arg::of_int(rep), Arg::of_int(dim)});
    return {b.call("aten.scaled_dot_product_attention.default", {a[0], k, v, a[3], a[4], a[5]}, {{"scale", a[6]}})};
  }
  // No mask, same head count and float32: the fused attention kernel (its log-sum-exp kept for the
  // backward), as PyTorch dispatches to efficient attention. bf16/f16 too where the half kernels
  // take the operands (ops/attention.h: FlashAttention-2 on CUDA's tensor cores, as PyTorch
  // dispatches to flash attention; the CPU widens to float32); LS_FLASH_HALF=0 keeps the math form.
  const DType dt = b.meta(a[0]).dtype;
  auto operand = [&b](const Arg& t) { return AttentionOperand{b.meta(t).dtype, b.meta(t).shape}; };
  const bool half_fused = flash_half_head_dim(operand(a[0]), operand(a[1]), operand(a[2])) > 0;
  if (!a[ix.mask].is_node() && (dt == DType::f32 || half_fused) && b.meta(a[0]).shape.size() >= 3 &&
      b.meta(a[0]).shape == b.meta(a[1]).shape && b.meta(a[1]).shape == b.meta(a[2]).shape) {
    const Arg r = b.call("aten._scaled_dot_product_efficient_attention.default",
                         {a[0], a[1], a[2], Arg::none(), Arg::of_bool(true), Arg::of_real(0.0), a[ix.causal]},
                         {{"scale", a[ix.scale]}});
    return {b.get(r, 0)};
  }
  // q, k and v expanded to the broadcast batch shape (k and v may have fewer or size-1 batch
  // dimensions), then folded to [B, ., .] for bmm; the mask broadcast to the scores' shape.
  const Shape qs = b.meta(a[0]).shape, ks = b.meta(a[1]).shape, vs = b.meta(a[2]).shape;
  const Shape batch = sdpa_batch(op, qs, ks, vs);
  const int64_t L = qs[qs.size() - 2], E = qs.back(), S = ks[ks.size() - 2], Ev = vs.back();
  const int64_t B = numel_of(batch);
  const double scale = a[ix.scale].is_none() ? 1.0 / std::sqrt(double(E)) : a[ix.scale].number();
  auto folded = [&](const Arg& t, int64_t rows, int64_t cols) {
    Shape full = batch;
    full.insert(full.end(), {rows, cols});
    const Arg e = b.meta(t).shape == full ? t : b.call("aten.expand.default", {t, Arg::of_ints(full)});
    return b.call("aten.reshape.default", {e, Arg::of_ints({B, rows, cols})});
  };
  const Arg q = folded(a[0], L, E);
  const Arg kt = b.call("aten.permute.default", {folded(a[1], S, E), Arg::of_ints({0, 2, 1})});
  const Arg v = folded(a[2], S, Ev);
  Arg s = b.call("aten.mul.Tensor", {b.call("aten.bmm.default", {q, kt}), Arg::of_real(scale)});
  if (a[ix.causal].b) {
    Tensor mask(b.meta(s).dtype, {L, S});  // in the scores' type (PyTorch's math attention), so bf16 stays bf16
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < S; ++j) mask.set(i * S + j, j > i ? -std::numeric_limits<double>::infinity() : 0.0);
    s = b.call("aten.add.Tensor", {s, b.constant("causal_mask", mask)});
  }
  if (a[ix.mask].is_node()) {
    Arg bias = a[ix.mask];  // a bool mask keeps where true: -inf elsewhere (PyTorch's math attention)
    if (b.meta(bias).dtype == DType::b8) {
      bias = b.call("aten.where.self", {bias, Arg::of_real(0.0), Arg::of_real(-std::numeric_limits<double>::infinity())});
      if (b.meta(bias).dtype != b.meta(s).dtype)
        bias = b.call("prims.convert_element_type.default", {bias, Arg::of_string(std::string(dtype_torch(b.meta(s).dtype)))});
    }
    s = b.call("aten.add.Tensor", {s, folded(bias, L, S)});
  }
  const Arg m = b.call("aten.amax.default", {s, Arg::of_ints({-1}), Arg::of_bool(true)});
  const Arg e = b.call("aten.exp.default", {b.call("aten.sub.Tensor", {s, m})});
  const Arg sum = b.call("aten.sum.dim_IntList", {e, Arg::of_ints({-1}), Arg::of_bool(true)});
  const Arg p = b.call("aten.div.Tensor", {e, sum});
  Shape out = batch;
  out.insert(out.end(), {L, Ev});
  const Arg o = b.call("aten.view.default", {b.call("aten.bmm.default", {p, v}), Arg::of_ints(out)});
  if (op.num_outputs == 1) return {o};
  Shape ls = batch;
  ls.push_back(L);
  const Arg lse = b.call("aten.view.default",
                         {b.call("aten.add.Tensor", {b.call("aten.log.default", {sum}), m}), Arg::of_ints(ls)});
  // The philox seed and offset of a dropout that does not run: zeros, as PyTorch returns them.
  const Arg zero = b.constant("philox_seed", Tensor(DType::i64, {}));
  return {o, lse, zero, zero};
}

std::vector<TensorMeta> sdpa_backward_meta(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  refuse_dropout(op, a[9]);
  const TensorMeta &q = meta_of(g, a[1]), &k = meta_of(g, a[2]), &v = meta_of(g, a[3]);
  require_same_batch(op, q.shape, k.shape, v.shape);
  Shape out = q.shape;
  out.back() = v.shape.back();
  if (meta_of(g, a[0]).shape != out) bad(op, "grad_out " + shape_str(meta_of(g, a[0]).shape) + " is not the output's shape " + shape_str(out));
  std::vector<TensorMeta> outs = {like(q, q.shape), like(k, k.shape), like(v, v.shape)};
  outs.push_back(a[4].is_node() ? like(meta_of(g, a[4]), meta_of(g, a[4]).shape) : like(q, {0}));
  return outs;
}
// Recomputes the probabilities from q, k (causal or not) and differentiates softmax(q k^T s) v.
std::vector<Tensor> sdpa_backward_ref(const OpDef&, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor &go = in[0], &q = in[1], &k = in[2], &v = in[3];
  const size_t r = q.shape().size();
  const int64_t L = q.shape()[r - 2], E = q.shape()[r - 1], S = k.shape()[r - 2], Ev = v.shape()[r - 1];
  const int64_t B = q.numel() / (L * E);
  const bool causal = a[11].b;
  const double scale = a[12].is_none() ? 1.0 / std::sqrt(double(E)) : a[12].number();
  Tensor gq(outs[0].dtype, outs[0].shape), gk(outs[1].dtype, outs[1].shape), gv(outs[2].dtype, outs[2].shape);
  std::vector<double> P(L * S), dP(L * S);
  std::vector<double> dq(L * E), dk(S * E), dv(S * Ev);
  for (int64_t bb = 0; bb < B; ++bb) {
    std::fill(dq.begin(), dq.end(), 0.0);
    std::fill(dk.begin(), dk.end(), 0.0);
    std::fill(dv.begin(), dv.end(), 0.0);
    for (int64_t i = 0; i < L; ++i) {
      double m = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t j = 0; j < S; ++j) {
        double s = 0;
        for (int64_t e = 0; e < E; ++e) s += q.get((bb * L + i) * E + e) * k.get((bb * S + j) * E + e);
        s = causal && j > i ? -std::numeric_limits<double>::infinity() : s * scale;
        P[i * S + j] = s;
        m = std::max(m, s);
      }
      for (int64_t j = 0; j < S; ++j) sum += (P[i * S + j] = std::exp(P[i * S + j] - m));
      for (int64_t j = 0; j < S; ++j) P[i * S + j] /= sum;
      double rowdot = 0;
      for (int64_t j = 0; j < S; ++j) {
        double d = 0;
        for (int64_t e = 0; e < Ev; ++e) d += go.get((bb * L + i) * Ev + e) * v.get((bb * S + j) * Ev + e);
        dP[i * S + j] = d;
        rowdot += d * P[i * S + j];
      }
      for (int64_t j = 0; j < S; ++j) {
        const double ds = P[i * S + j] * (dP[i * S + j] - rowdot) * scale;
        for (int64_t e = 0; e < Ev; ++e) dv[j * Ev + e] += P[i * S + j] * go.get((bb * L + i) * Ev + e);
        for (int64_t e = 0; e < E; ++e) {
          dq[i * E + e] += ds * k.get((bb * S + j) * E + e);
          dk[j * E + e] += ds * q.get((bb * L + i) * E + e);
        }
      }
    }
    for (int64_t i = 0; i < L * E; ++i) gq.set(bb * L * E + i, dq[i]);
    for (int64_t i = 0; i < S * E; ++i) gk.set(bb * S * E + i, dk[i]);
    for (int64_t i = 0; i < S * Ev; ++i) gv.set(bb * S * Ev + i, dv[i]);
  }
  return {gq, gk, gv, Tensor(outs[3].dtype, outs[3].shape)};
}

// Efficient attention: one backward kernel for q, k and v, from the output and its log-sum-exp.
Args d_attention(DerivCtx& c) {
  const Args& a = c.args;  // q, k, v, attn_bias, compute_log_sumexp, dropout_p, is_causal, scale
  Args r(a.size(), kNone);
  Arg mask;
  mask.kind = Arg::Kind::list;
  for (size_t i : {0, 1, 2}) mask.list.push_back(Arg::of_bool(wants(c, i)));
  mask.list.push_back(Arg::of_bool(false));
  const Arg g = c.grads[0].is_none() ? zeros(c, shape_of(c, c.out(0)), c.b.meta(a[0]).dtype) : c.grads[0];
  const Arg bw = call(c, "aten._scaled_dot_product_efficient_attention_backward.default",
                      {g, a[0], a[1], a[2], kNone, c.out(0), c.out(1), c.out(2), c.out(3), num(0.0), mask, a[6]},
                      {{"scale", a[7]}});
  for (size_t i : {0, 1, 2})
    if (wants(c, i)) r[i] = c.b.get(bw, static_cast<int>(i));
  return r;
}
}  // namespace

int flash_half_head_dim(const AttentionOperand& q, const AttentionOperand& k, const AttentionOperand& v,
                        const std::vector<AttentionOperand>& like_q) {
  if (const char* off = std::getenv("LS_FLASH_HALF"); off && std::string(off) == "0") return 0;
  const DType t = q.first;
  const Shape &qs = q.second, &ks = k.second;
  const size_t r = qs.size();
  if ((t != DType::bf16 && t != DType::f16) || (r != 3 && r != 4) || ks.size() != r) return 0;
  const int64_t heads = r == 4 ? qs[1] : 1, kv_heads = r == 4 ? ks[1] : 1;
  const int64_t d = qs.back(), L = qs[r - 2], S = ks[r - 2];
  if (kv_heads <= 0 || heads % kv_heads != 0 || !flash_half_head_dim_ok(d)) return 0;
  // Each operand: its type, rank, batch, heads, length, head size.
  auto fits = [&](const AttentionOperand& o, int64_t h, int64_t len) {
    const Shape& s = o.second;
    return o.first == t && s.size() == r && s[0] == qs[0] && (r == 3 || s[1] == h) && s[r - 2] == len && s.back() == d;
  };
  if (!fits(k, kv_heads, S) || !fits(v, kv_heads, S)) return 0;
  for (const AttentionOperand& o : like_q)
    if (!fits(o, heads, L)) return 0;
  return static_cast<int>(d);
}

void add_attention_ops(std::vector<OpDef>& t) {
  const std::vector<OpDef> ops = {
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
          kCore, infer_sdpa, ref_sdpa, nullptr, d_attention),
      ext("aten._scaled_dot_product_efficient_attention_backward.default",
          "_scaled_dot_product_efficient_attention_backward(Tensor grad_out_, Tensor query, Tensor key, Tensor value, Tensor? "
          "attn_bias, Tensor out, Tensor logsumexp, Tensor philox_seed, Tensor philox_offset, float dropout_p, bool[4] "
          "grad_input_mask, bool is_causal=False, *, float? scale=None) -> (Tensor, Tensor, Tensor, Tensor)",
          kCore, sdpa_backward_meta, sdpa_backward_ref),
  };
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
