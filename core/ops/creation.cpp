// Creation and copies: arange, full, full_like, empty, empty_strided, scalar_tensor, fill, rand, randn, randperm, native_dropout, _to_copy, copy; the export-level zeros/ones/*_like/new_* families.
//
// A tensor made from numbers only (full, scalar_tensor, _to_copy's conversion) is a pointwise op
// of Math::identity whose operand is a Scalar: the lowering reads a number operand as a constant
// (lower.cpp's `operand`), so full([4, 4], 0.5) is a generated kernel storing 0.5 and _to_copy one
// converting each element (Inductor's ops.constant and ops.to_dtype). arange is declared as a
// library kernel (its reference runs where a graph is interpreted), and lower.cpp's lower_arange
// makes it generated code: the loop index as a value (Inductor's ops.index_expr), so a range
// fuses into what reads it (position ids, causal masks). rand and randn draw from Philox4x32-10
// (ops/philox.h) as a function of (seed, the op's offset, the element's index): declared as
// library kernels (their reference kernels the truth), lowered by lower.cpp's lower_random to
// generated code that computes the same function (Inductor's ops.rand / ops.randn), so a draw
// fuses into what reads it (dropout's mask into its multiply) and equals the reference bit for
// bit. The seed is fixed and the offset comes from the op and its shape: reproducible from run to
// run (PyTorch's stateful generator is not modelled; two calls of one shape draw the same values).
// randperm is a library kernel over a splitmix64 stream.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>

#include "ops/philox.h"
#include "ops/rule_helpers.h"

namespace ls {
namespace {

using namespace rules;

// ---------------------------------------------------------------------------------------------
// Arguments: by parameter name; dtype arguments as the importers give them ("torch.float32").
// ---------------------------------------------------------------------------------------------

const Arg& arg(const OpDef& op, const std::vector<Arg>& a, std::string_view name) {
  for (size_t i = 0; i < op.params.size() && i < a.size(); ++i)
    if (op.params[i].name == name) return a[i];
  throw std::logic_error(op.name + " has no parameter '" + std::string(name) + "'");
}

std::optional<DType> dtype_arg(const OpDef& op, const Arg& a) {
  if (a.is_none()) return std::nullopt;
  if (a.kind == Arg::Kind::string) {
    if (auto t = dtype_from_name(a.s)) return t;
    bad(op, "dtype " + a.s + " is not supported (float32, float64, bfloat16, float16, int64, int32, bool, uint8)");
  }
  if (a.kind == Arg::Kind::integer) {  // c10::ScalarType codes
    switch (a.i) {
      case 0: return DType::u8;
      case 3: return DType::i32;
      case 4: return DType::i64;
      case 5: return DType::f16;
      case 6: return DType::f32;
      case 7: return DType::f64;
      case 11: return DType::b8;
      case 15: return DType::bf16;
      default: bad(op, "dtype code " + std::to_string(a.i) + " is not supported");
    }
  }
  bad(op, "dtype must be a torch dtype");
}
Arg dtype_value(DType t) { return Arg::of_string(std::string(dtype_torch(t))); }

// The dtype a Python number gives a tensor made from it (torch.full((2,), 3) is int64).
DType scalar_dtype(const Arg& v) {
  return v.kind == Arg::Kind::boolean ? DType::b8 : v.kind == Arg::Kind::integer ? DType::i64 : DType::f32;
}

Shape size_arg(const OpDef& op, const Arg& a) {
  const Shape s = a.ints();
  for (int64_t d : s)
    if (d < 0) bad(op, "negative dimension " + std::to_string(d) + " in size " + shape_str(s));
  return s;
}

TensorMeta cpu_meta(DType t, Shape shape) { return TensorMeta::contiguous(t, std::move(shape)); }

// A full() call of the table, the form every creation op decomposes to.
Arg emit_full(GraphBuilder& b, const Shape& shape, const Arg& value, DType t) {
  return b.call("aten.full.default", {Arg::of_ints(shape), value}, {{"dtype", dtype_value(t)}});
}

// Shape and dtype through the decomposition, for the export-level composites: the metadata of
// the values their expansion gives, in a graph holding only their tensor arguments.
std::vector<TensorMeta> infer_via_decomposition(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  Graph tmp;
  GraphBuilder b(tmp);
  std::map<int, int> ids;
  auto remap = [&](const Arg& x, auto& self) -> Arg {
    if (x.is_node()) {
      if (!ids.count(x.node)) ids[x.node] = b.placeholder("in" + std::to_string(ids.size()), g.nodes.at(x.node).meta());
      return Arg::of_node(ids[x.node]);
    }
    Arg c = x;
    for (Arg& e : c.list) e = self(e, self);
    return c;
  };
  std::vector<Arg> args;
  for (const Arg& x : a) args.push_back(remap(x, remap));
  std::vector<TensorMeta> out;
  for (const Arg& v : op.decompose(b, op, args)) out.push_back(tmp.nodes.at(v.node).meta());
  return out;
}

// ---------------------------------------------------------------------------------------------
// full, scalar_tensor, empty, fill, full_like: pointwise constants and the composites over them
// ---------------------------------------------------------------------------------------------

// aten.full(size, fill_value, *, dtype, ...) and prims.full(shape, fill_value, *, dtype, ...).
std::vector<TensorMeta> infer_full(const Graph&, const OpDef& op, const std::vector<Arg>& a) {
  const Arg& v = a[1];
  if (!v.is_number()) bad(op, "fill_value must be a number");
  return {cpu_meta(dtype_arg(op, arg(op, a, "dtype")).value_or(scalar_dtype(v)), size_arg(op, a[0]))};
}
Arg decomp_full(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const DType t = infer_full(b.graph(), op, a)[0].dtype;
  return b.call("prims.full.default", {a[0], a[1]},
                {{"dtype", dtype_value(t)}, {"device", Arg::of_string("cpu")}, {"requires_grad", Arg::of_bool(false)}});
}

// scalar_tensor(s): a 0-d tensor of the default dtype (float32 whatever the number's type), as
// at::scalar_tensor; prims.scalar_tensor without a dtype takes the number's.
std::vector<TensorMeta> infer_scalar_tensor(const Graph&, const OpDef& op, const std::vector<Arg>& a) {
  if (!a[0].is_number()) bad(op, "s must be a number");
  const DType fallback = op.in(level::prims) ? scalar_dtype(a[0]) : DType::f32;
  return {cpu_meta(dtype_arg(op, arg(op, a, "dtype")).value_or(fallback), {})};
}
Arg decomp_scalar_tensor(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const DType t = infer_scalar_tensor(b.graph(), op, a)[0].dtype;
  return b.call("prims.scalar_tensor.default", {a[0]}, {{"dtype", dtype_value(t)}});
}

// empty and empty_strided: zeros here (deterministic; PyTorch leaves the memory as it was).
std::vector<TensorMeta> infer_empty(const Graph&, const OpDef& op, const std::vector<Arg>& a) {
  const Shape size = size_arg(op, a[0]);
  if (op.base_name() == "empty_strided" && a[1].ints().size() != size.size())
    bad(op, "stride " + shape_str(a[1].ints()) + " does not match size " + shape_str(size));
  return {cpu_meta(dtype_arg(op, arg(op, a, "dtype")).value_or(DType::f32), size)};
}
std::vector<Tensor> ref_zeros(const OpDef&, const std::vector<Arg>&, const RefInputs&, const std::vector<TensorMeta>& outs) {
  return {Tensor(outs[0].dtype, outs[0].shape)};
}
Arg decomp_empty(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta m = infer_empty(b.graph(), op, a)[0];
  return emit_full(b, m.shape, Arg::of_int(0), m.dtype);
}

// fill.Scalar(self, value): self's shape and dtype, every element the value (converted).
std::vector<Tensor> ref_fill(const OpDef&, const std::vector<Arg>& a, const RefInputs&, const std::vector<TensorMeta>& outs) {
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t i = 0; i < y.numel(); ++i) y.set(i, a[1].number());
  return {y};
}
Arg decomp_fill(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  if (!a[1].is_number()) bad(op, "value must be a number");
  const TensorMeta m = b.meta(a[0]);
  return emit_full(b, m.shape, a[1], m.dtype);
}

// fill.Tensor(self, value) (hf_bart's fill_.Tensor, issue 33; the in-place form runs as this,
// find_op_functional): self's shape and dtype, every element value's one element (a 0-d tensor,
// as ATen's fill_ checks). torch._decomp writes it as copy(self, value); the derivative as
// derivatives.yaml: self zeros, value grad.sum() (in value's dtype).
std::vector<TensorMeta> infer_fill_tensor(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta &x = meta_of(g, a[0]), &v = meta_of(g, a[1]);
  if (!v.shape.empty())
    bad(op, "fill_ only supports 0-dimension value tensor but got tensor with " + std::to_string(v.shape.size()) + " dimensions.");
  return {like(x, x.dtype, x.shape)};
}
std::vector<Tensor> ref_fill_tensor(const OpDef&, const std::vector<Arg>&, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t i = 0; i < y.numel(); ++i) y.set(i, in[1].get(0));
  return {y};
}
Arg decomp_fill_tensor(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  infer_fill_tensor(b.graph(), op, a);
  return b.call("aten.copy.default", {a[0], a[1]});
}
Args d_fill_tensor(DerivCtx& c) {
  Args r(2, kNone);
  if (c.grads[0].is_none()) return r;
  if (wants(c, 0)) r[0] = zeros(c, shape_of(c, c.args[0]), c.b.meta(c.args[0]).dtype);
  if (wants(c, 1)) {
    Arg g = call(c, "aten.sum.default", {c.grads[0]});
    const DType t = c.b.meta(c.args[1]).dtype;
    if (c.b.meta(g).dtype != t) g = call(c, "aten._to_copy.default", {g}, {{"dtype", dtype_value(t)}});
    r[1] = g;
  }
  return r;
}

// full_like(self, fill_value, *, dtype=None, ...): self's shape, dtype given or self's.
std::vector<TensorMeta> infer_full_like(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  if (!a[1].is_number()) bad(op, "fill_value must be a number");
  const TensorMeta& x = meta_of(g, a[0]);
  return {like(x, dtype_arg(op, arg(op, a, "dtype")).value_or(x.dtype), x.shape)};
}
std::vector<Tensor> ref_full_like(const OpDef&, const std::vector<Arg>& a, const RefInputs&, const std::vector<TensorMeta>& outs) {
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t i = 0; i < y.numel(); ++i) y.set(i, a[1].number());
  return {y};
}
Arg decomp_full_like(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta m = infer_full_like(b.graph(), op, a)[0];
  return emit_full(b, m.shape, a[1], m.dtype);
}

// ---------------------------------------------------------------------------------------------
// arange (see the file's comment: generated code through lower.cpp's lower_arange)
// ---------------------------------------------------------------------------------------------

struct Range {
  double start, step;
  int64_t length;
  DType dtype;
};
Range arange_spec(const OpDef& op, const std::vector<Arg>& a) {
  const Arg &s = a[0], &e = a[1], &st = a[2];
  for (const Arg* x : {&s, &e, &st})
    if (!x->is_number()) bad(op, "start, end and step must be numbers");
  const bool any_real = s.kind == Arg::Kind::real || e.kind == Arg::Kind::real || st.kind == Arg::Kind::real;
  const DType t = dtype_arg(op, arg(op, a, "dtype")).value_or(any_real ? DType::f32 : DType::i64);
  if (t == DType::b8) bad(op, "arange is not implemented for bool");
  double start = s.number(), end = e.number(), step = st.number();
  if (!dtype_is_float(t)) {  // an integer range computes in int64 (RangeFactories.cpp)
    start = std::trunc(start);
    end = std::trunc(end);
    step = std::trunc(step);
  }
  if (!std::isfinite(start) || !std::isfinite(end)) bad(op, "unsupported range: " + std::to_string(start) + " -> " + std::to_string(end));
  if (step == 0) bad(op, "step must be nonzero");
  if (!((step > 0 && end >= start) || (step < 0 && end <= start))) bad(op, "upper bound and larger bound inconsistent with step sign");
  const double n = std::ceil((end - start) / step);
  if (!(n < double(int64_t(1) << 40))) bad(op, "the range has too many elements");
  return {start, step, static_cast<int64_t>(n), t};
}
std::vector<TensorMeta> infer_arange(const Graph&, const OpDef& op, const std::vector<Arg>& a) {
  const Range r = arange_spec(op, a);
  return {cpu_meta(r.dtype, {r.length})};
}
std::vector<Tensor> ref_arange(const OpDef& op, const std::vector<Arg>& a, const RefInputs&, const std::vector<TensorMeta>& outs) {
  const Range r = arange_spec(op, a);
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t i = 0; i < y.numel(); ++i) y.set(i, r.start + r.step * static_cast<double>(i));
  return {y};
}
// arange(end) and arange(start, end): arange.start_step with the missing numbers.
Arg decomp_arange(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const bool has_start = op.name == "aten.arange.start";
  const Arg start = has_start ? a[0] : Arg::of_int(0), end = has_start ? a[1] : a[0];
  return b.call("aten.arange.start_step", {start, end, Arg::of_int(1)}, {{"dtype", arg(op, a, "dtype")}});
}

// ---------------------------------------------------------------------------------------------
// rand, randn: Philox4x32-10 (ops/philox.h); randperm: a splitmix64 stream
// ---------------------------------------------------------------------------------------------

uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
// randperm's stream: FNV-1a over its name and sizes, mixed with the seed.
uint64_t stream_of(std::string_view what, const Shape& shape) {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto eat = [&h](uint64_t v) { h = (h ^ v) * 0x100000001b3ULL; };
  for (char c : what) eat(static_cast<unsigned char>(c));
  for (int64_t d : shape) eat(static_cast<uint64_t>(d));
  return mix64(h ^ philox::kSeed);
}
double uniform_at(uint64_t stream, uint64_t i) { return static_cast<double>(mix64(stream ^ mix64(i)) >> 11) * 0x1.0p-53; }

// aten.rand's values for this dtype and shape: 24 random bits (float32, the half types; exact in
// float32, so rounding to a half type is the only rounding) or 53 (float64).
Tensor draw_uniform(DType t, const Shape& shape) {
  Tensor y(t, shape);
  const uint64_t off = philox::stream_offset("rand", shape);
  for (int64_t i = 0; i < y.numel(); ++i) {
    const uint64_t b = philox::bits(philox::kSeed, off, static_cast<uint64_t>(i));
    y.set(i, t == DType::f64 ? philox::uniform_f64(b) : static_cast<double>(philox::uniform_f32(b)));
  }
  return y;
}

std::vector<TensorMeta> infer_random(const Graph&, const OpDef& op, const std::vector<Arg>& a) {
  const DType t = dtype_arg(op, arg(op, a, "dtype")).value_or(DType::f32);
  if (!dtype_is_float(t)) bad(op, "needs a floating point dtype, got " + std::string(dtype_torch(t)));
  return {cpu_meta(t, size_arg(op, a[0]))};
}
std::vector<Tensor> ref_rand(const OpDef&, const std::vector<Arg>&, const RefInputs&, const std::vector<TensorMeta>& outs) {
  return {draw_uniform(outs[0].dtype, outs[0].shape)};
}
// Box-Muller in double (philox::normal), rounded to the dtype (through float32 for the half
// types, as generated code computes them).
std::vector<Tensor> ref_randn(const OpDef&, const std::vector<Arg>&, const RefInputs&, const std::vector<TensorMeta>& outs) {
  Tensor y(outs[0].dtype, outs[0].shape);
  const uint64_t off = philox::stream_offset("randn", outs[0].shape);
  for (int64_t i = 0; i < y.numel(); ++i) {
    const double z = philox::normal(philox::bits(philox::kSeed, off, static_cast<uint64_t>(i)));
    y.set(i, y.dtype() == DType::f64 ? z : static_cast<double>(static_cast<float>(z)));
  }
  return {y};
}

// randperm(n): int64 unless told (PyTorch's schema spells the default dtype=long, which our
// schema reader cannot hold; None stands for it).
std::vector<TensorMeta> infer_randperm(const Graph&, const OpDef& op, const std::vector<Arg>& a) {
  if (a[0].kind != Arg::Kind::integer || a[0].i < 0) bad(op, "n must be a non-negative integer");
  const DType t = dtype_arg(op, arg(op, a, "dtype")).value_or(DType::i64);
  if (t == DType::b8) bad(op, "randperm is not implemented for bool");
  return {cpu_meta(t, {a[0].i})};
}
// Fisher-Yates, drawing from the stream of (randperm, n).
std::vector<Tensor> ref_randperm(const OpDef&, const std::vector<Arg>& a, const RefInputs&, const std::vector<TensorMeta>& outs) {
  const int64_t n = a[0].i;
  std::vector<int64_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  const uint64_t s = stream_of("randperm", {n});
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(uniform_at(s, static_cast<uint64_t>(i)) * static_cast<double>(i + 1));
    std::swap(p[i], p[std::min(j, i)]);
  }
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t i = 0; i < n; ++i) y.set(i, static_cast<double>(p[i]));
  return {y};
}

// rand_like, randn_like: rand, randn of self's shape, dtype given or self's.
Arg decomp_random_like(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta m = b.meta(a[0]);
  const DType t = dtype_arg(op, arg(op, a, "dtype")).value_or(m.dtype);
  const char* target = op.base_name() == "rand_like" ? "aten.rand.default" : "aten.randn.default";
  return b.call(target, {Arg::of_ints(m.shape)}, {{"dtype", dtype_value(t)}});
}

// ---------------------------------------------------------------------------------------------
// native_dropout: mask ~ Bernoulli(1 - p) (rand > p, as torch._decomp draws it), output x * mask / (1 - p)
// ---------------------------------------------------------------------------------------------

// Whether the call trains: as the eager kernel (native_dropout_cpu), train=None trains.
bool dropout_trains(const Arg& train) { return train.is_none() || (train.kind == Arg::Kind::boolean && train.b); }
double dropout_p(const OpDef& op, const Arg& p) {
  const double v = p.number();
  if (!(v >= 0 && v <= 1)) bad(op, "dropout probability has to be between 0 and 1, but got " + std::to_string(v));
  return v;
}

std::vector<TensorMeta> infer_native_dropout(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  const double p = dropout_p(op, a[1]);
  if (dropout_trains(a[2]) && p > 0 && p < 1 && !dtype_is_float(x.dtype))
    bad(op, "training-mode dropout needs a floating point input, got " + std::string(dtype_torch(x.dtype)));
  return {like(x, x.shape), like(x, DType::b8, x.shape)};
}
std::vector<Tensor> ref_native_dropout(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  const double p = dropout_p(op, a[1]);
  Tensor y(outs[0].dtype, outs[0].shape), mask(DType::b8, outs[1].shape);
  if (!dropout_trains(a[2]) || p == 0) {  // eval: the input, an all-true mask
    for (int64_t i = 0; i < y.numel(); ++i) {
      y.set(i, x.get(i));
      mask.set(i, 1);
    }
    return {y, mask};
  }
  if (p == 1) return {y, mask};  // everything dropped
  const Tensor u = draw_uniform(x.dtype(), x.shape());  // the values aten.rand of this shape and dtype draws
  const double scale = 1.0 / (1.0 - p);
  for (int64_t i = 0; i < y.numel(); ++i) {
    const bool keep = u.get(i) > p;
    mask.set(i, keep);
    y.set(i, keep ? x.get(i) * scale : 0.0);
  }
  return {y, mask};
}
std::vector<Arg> decomp_native_dropout(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta x = b.meta(a[0]);
  const double p = dropout_p(op, a[1]);
  if (!dropout_trains(a[2]) || p == 0) return {a[0], emit_full(b, x.shape, Arg::of_bool(true), DType::b8)};
  if (p == 1) return {emit_full(b, x.shape, Arg::of_int(0), x.dtype), emit_full(b, x.shape, Arg::of_bool(false), DType::b8)};
  const Arg u = b.call("aten.rand.default", {Arg::of_ints(x.shape)}, {{"dtype", dtype_value(x.dtype)}});
  const Arg mask = call(b, "aten.gt.Scalar", {u, Arg::of_real(p)});
  const Arg kept = call(b, "aten.mul.Tensor", {mask, a[0]});
  return {call(b, "aten.mul.Scalar", {kept, Arg::of_real(1.0 / (1.0 - p))}), mask};
}
// The scale derivatives.yaml passes to native_dropout_backward.
Args d_native_dropout(DerivCtx& c) {
  if (!wants(c, 0) || c.grads[0].is_none()) return Args(3, kNone);
  const double p = c.args[1].number();
  const double scale = dropout_trains(c.args[2]) ? (p == 1 ? 0.0 : 1.0 / (1.0 - p)) : 1.0;
  return one(call(c, "aten.native_dropout_backward.default", {c.grads[0], c.out(1), num(scale)}), 3);
}
// native_dropout_backward(grad, mask, scale) = grad * mask * scale (torch._decomp).
std::vector<Tensor> ref_native_dropout_backward(const OpDef&, const std::vector<Arg>& a, const RefInputs& in,
                                                const std::vector<TensorMeta>& outs) {
  Tensor y(outs[0].dtype, outs[0].shape);
  const Shape st = broadcast_strides(in[1].shape(), y.shape());
  for (int64_t i = 0; i < y.numel(); ++i) y.set(i, in[0].get(i) * in[1].get(offset_of(i, y.shape(), st)) * a[2].number());
  return {y};
}
Arg decomp_native_dropout_backward(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) {
  return call(b, "aten.mul.Scalar", {call(b, "aten.mul.Tensor", {a[0], a[1]}), a[2]});
}

// ---------------------------------------------------------------------------------------------
// _to_copy, copy, to: dtype conversions
// ---------------------------------------------------------------------------------------------

// _to_copy(self, *, dtype=None, ...) and prims.convert_element_type(a, dtype).
std::vector<TensorMeta> infer_to_copy(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  return {like(x, dtype_arg(op, arg(op, a, "dtype")).value_or(x.dtype), x.shape)};
}
Arg decomp_to_copy(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const DType t = infer_to_copy(b.graph(), op, a)[0].dtype;
  if (t == b.meta(a[0]).dtype) return a[0];
  return b.call("prims.convert_element_type.default", {a[0], dtype_value(t)});
}
// The gradient converted back to the input's dtype (derivatives.yaml: _to_copy_backward).
Args d_to_copy(DerivCtx& c) {
  const DType in = c.b.meta(c.args[0]).dtype;
  if (!dtype_is_float(in) || c.grads[0].is_none()) return Args(c.op.params.size(), kNone);
  Arg g = c.grads[0];
  if (c.b.meta(g).dtype != in) g = call(c, "aten._to_copy.default", {g}, {{"dtype", dtype_value(in)}});
  return one(g, c.op.params.size());
}

// copy(self, src): src broadcast to self's shape, in self's dtype.
std::vector<Tensor> ref_copy(const OpDef&, const std::vector<Arg>&, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  Tensor y(outs[0].dtype, outs[0].shape);
  const Shape st = broadcast_strides(in[1].shape(), y.shape());
  for (int64_t i = 0; i < y.numel(); ++i) y.set(i, in[1].get(offset_of(i, y.shape(), st)));
  return {y};
}
std::vector<TensorMeta> infer_copy(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta &self = meta_of(g, a[0]), &src = meta_of(g, a[1]);
  if (broadcast_shapes(self.shape, src.shape) != self.shape)
    bad(op, "src of shape " + shape_str(src.shape) + " cannot be broadcast to self's " + shape_str(self.shape));
  return {like(self, self.shape)};
}
// As torch._decomp: src.to(self's dtype), expanded to self's size where it differs.
Arg decomp_copy(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta self = infer_copy(b.graph(), op, a)[0];
  Arg v = a[1];
  if (b.meta(v).dtype != self.dtype) v = b.call("aten._to_copy.default", {v}, {{"dtype", dtype_value(self.dtype)}});
  if (b.meta(v).shape != self.shape) v = call(b, "aten.expand.default", {v, Arg::of_ints(self.shape)});
  return v;
}
// derivatives.yaml: self gets zeros, src the gradient summed to its shape (and its dtype).
Args d_copy(DerivCtx& c) {
  Args r(3, kNone);
  if (c.grads[0].is_none()) return r;
  if (wants(c, 0)) r[0] = zeros(c, shape_of(c, c.args[0]), c.b.meta(c.args[0]).dtype);
  if (wants(c, 1)) {
    Arg g = grad_for(c, 1, c.grads[0]);
    const DType t = c.b.meta(c.args[1]).dtype;
    if (c.b.meta(g).dtype != t) g = call(c, "aten._to_copy.default", {g}, {{"dtype", dtype_value(t)}});
    r[1] = g;
  }
  return r;
}

// to.dtype, to.dtype_layout, to.device: _to_copy where the dtype changes or a copy is asked for,
// else the input itself (Tensor.to returns self).
Arg decomp_to(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const DType in = b.meta(a[0]).dtype;
  const DType t = dtype_arg(op, arg(op, a, "dtype")).value_or(in);
  const Arg& copy = arg(op, a, "copy");
  if (t == in && !(copy.kind == Arg::Kind::boolean && copy.b)) return a[0];
  return b.call("aten._to_copy.default", {a[0]}, {{"dtype", dtype_value(t)}});
}

// contiguous: every value of the graph is contiguous already; lift_fresh_copy: a clone.
Arg decomp_contiguous(GraphBuilder&, const OpDef&, const std::vector<Arg>& a) { return a[0]; }
Arg decomp_lift_fresh_copy(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) { return b.call("aten.clone.default", {a[0]}); }

// ---------------------------------------------------------------------------------------------
// Export-level creation: zeros, ones, *_like, new_*
// ---------------------------------------------------------------------------------------------

// zeros(size), ones(size): full of 0 or 1 (float32 unless told).
Arg decomp_zeros_ones(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const DType t = dtype_arg(op, arg(op, a, "dtype")).value_or(DType::f32);
  return emit_full(b, size_arg(op, a[0]), Arg::of_int(op.base_name() == "ones" ? 1 : 0), t);
}
// zeros_like, ones_like, empty_like: self's shape, dtype given or self's.
Arg decomp_like(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta m = b.meta(a[0]);
  const DType t = dtype_arg(op, arg(op, a, "dtype")).value_or(m.dtype);
  if (op.base_name() == "empty_like")
    return b.call("aten.empty.memory_format", {Arg::of_ints(m.shape)}, {{"dtype", dtype_value(t)}});
  return b.call("aten.full_like.default", {a[0], Arg::of_int(op.base_name() == "ones_like" ? 1 : 0)}, {{"dtype", dtype_value(t)}});
}
// new_zeros, new_ones, new_full, new_empty(self, size, ...): the size given, dtype given or self's.
Arg decomp_new(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const DType t = dtype_arg(op, arg(op, a, "dtype")).value_or(b.meta(a[0]).dtype);
  const Shape size = size_arg(op, a[1]);
  const std::string_view n = op.base_name();
  if (n == "new_empty") return b.call("aten.empty.memory_format", {Arg::of_ints(size)}, {{"dtype", dtype_value(t)}});
  const Arg value = n == "new_full" ? a[2] : Arg::of_int(n == "new_ones" ? 1 : 0);
  if (!value.is_number()) bad(op, "fill_value must be a number");
  return emit_full(b, size, value, t);
}

// ---------------------------------------------------------------------------------------------
// Entries
// ---------------------------------------------------------------------------------------------

#define LS_TENSOR_OPTIONS "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None"

OpDef constant_op(const char* name, const char* schema, unsigned lv, InferFn infer, DecompFn d) {
  return {.name = name, .schema = schema, .kind = OpKind::pointwise, .levels = lv, .math = Math::identity, .infer = infer, .decompose = d};
}
OpDef export_op(const char* name, const char* schema, DecompFn d) {
  return comp(name, schema, kAten, infer_via_decomposition, nullptr, d);
}

}  // namespace

void add_creation_ops(std::vector<OpDef>& t) {
  const std::vector<OpDef> ops = {
      // Core ATen
      ext("aten.arange.start_step",
          "arange.start_step(Scalar start, Scalar end, Scalar step=1, *, " LS_TENSOR_OPTIONS ") -> Tensor", kCore, infer_arange,
          ref_arange),
      constant_op("aten.full.default", "full(SymInt[] size, Scalar fill_value, *, " LS_TENSOR_OPTIONS ") -> Tensor", kCore, infer_full,
                  single<decomp_full>),
      comp("aten.full_like.default",
           "full_like(Tensor self, Scalar fill_value, *, " LS_TENSOR_OPTIONS ", MemoryFormat? memory_format=None) -> Tensor", kCore,
           infer_full_like, ref_full_like, single<decomp_full_like>),
      comp("aten.empty.memory_format",
           "empty.memory_format(SymInt[] size, *, " LS_TENSOR_OPTIONS ", MemoryFormat? memory_format=None) -> Tensor", kCore,
           infer_empty, ref_zeros, single<decomp_empty>),
      comp("aten.empty_strided.default", "empty_strided(SymInt[] size, SymInt[] stride, *, " LS_TENSOR_OPTIONS ") -> Tensor", kCore,
           infer_empty, ref_zeros, single<decomp_empty>),
      constant_op("aten.scalar_tensor.default", "scalar_tensor(Scalar s, *, " LS_TENSOR_OPTIONS ") -> Tensor", kCore,
                  infer_scalar_tensor, single<decomp_scalar_tensor>),
      by_parts(comp("aten.fill.Scalar", "fill.Scalar(Tensor self, Scalar value) -> Tensor", kCore, same_as<0>, ref_fill, single<decomp_fill>)),
      by_parts(comp("aten.fill.Tensor", "fill.Tensor(Tensor self, Tensor value) -> Tensor", kAten, infer_fill_tensor, ref_fill_tensor,
                    single<decomp_fill_tensor>, d_fill_tensor)),
      ext("aten.rand.default", "rand(SymInt[] size, *, " LS_TENSOR_OPTIONS ") -> Tensor", kCore, infer_random, ref_rand),
      ext("aten.randn.default", "randn(SymInt[] size, *, " LS_TENSOR_OPTIONS ") -> Tensor", kCore, infer_random, ref_randn),
      ext("aten.randperm.default", "randperm(SymInt n, *, " LS_TENSOR_OPTIONS ") -> Tensor", kCore, infer_randperm, ref_randperm),
      comp("aten.native_dropout.default", "native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)", kCore,
           infer_native_dropout, ref_native_dropout, decomp_native_dropout, d_native_dropout),
      comp("aten.native_dropout_backward.default", "native_dropout_backward(Tensor grad_output, Tensor mask, float scale) -> Tensor",
           kAten, same_as<0>, ref_native_dropout_backward, single<decomp_native_dropout_backward>),
      by_parts({.name = "aten._to_copy.default",
                .schema = "_to_copy(Tensor self, *, " LS_TENSOR_OPTIONS ", bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor",
                .kind = OpKind::pointwise, .levels = kCore, .math = Math::identity, .infer = infer_to_copy, .decompose = single<decomp_to_copy>,
                .derivative = d_to_copy}),
      by_parts(comp("aten.copy.default", "copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor", kCore, infer_copy, ref_copy,
                    single<decomp_copy>, d_copy)),
      // prims
      constant_op("prims.full.default",
                  "full(SymInt[] shape, Scalar fill_value, *, ScalarType dtype, Device device, bool requires_grad) -> Tensor", kPrims,
                  infer_full, nullptr),
      constant_op("prims.scalar_tensor.default", "scalar_tensor(Scalar s, *, ScalarType? dtype=None, Device? device=None) -> Tensor",
                  kPrims, infer_scalar_tensor, nullptr),
      by_parts({.name = "prims.convert_element_type.default", .schema = "convert_element_type(Tensor a, ScalarType dtype) -> Tensor",
                .kind = OpKind::pointwise, .levels = kPrims, .math = Math::identity, .infer = infer_to_copy, .derivative = d_to_copy}),
      // Export level (torch.export's ATen before run_decompositions)
      export_op("aten.arange.default", "arange(Scalar end, *, " LS_TENSOR_OPTIONS ") -> Tensor", single<decomp_arange>),
      export_op("aten.arange.start", "arange.start(Scalar start, Scalar end, *, " LS_TENSOR_OPTIONS ") -> Tensor", single<decomp_arange>),
      export_op("aten.zeros.default", "zeros(SymInt[] size, *, " LS_TENSOR_OPTIONS ") -> Tensor", single<decomp_zeros_ones>),
      export_op("aten.ones.default", "ones(SymInt[] size, *, " LS_TENSOR_OPTIONS ") -> Tensor", single<decomp_zeros_ones>),
      export_op("aten.zeros_like.default",
                "zeros_like(Tensor self, *, " LS_TENSOR_OPTIONS ", MemoryFormat? memory_format=None) -> Tensor", single<decomp_like>),
      export_op("aten.ones_like.default",
                "ones_like(Tensor self, *, " LS_TENSOR_OPTIONS ", MemoryFormat? memory_format=None) -> Tensor", single<decomp_like>),
      export_op("aten.empty_like.default",
                "empty_like(Tensor self, *, " LS_TENSOR_OPTIONS ", MemoryFormat? memory_format=None) -> Tensor", single<decomp_like>),
      export_op("aten.rand_like.default",
                "rand_like(Tensor self, *, " LS_TENSOR_OPTIONS ", MemoryFormat? memory_format=None) -> Tensor",
                single<decomp_random_like>),
      export_op("aten.randn_like.default",
                "randn_like(Tensor self, *, " LS_TENSOR_OPTIONS ", MemoryFormat? memory_format=None) -> Tensor",
                single<decomp_random_like>),
      export_op("aten.new_zeros.default", "new_zeros(Tensor self, SymInt[] size, *, " LS_TENSOR_OPTIONS ") -> Tensor", single<decomp_new>),
      export_op("aten.new_ones.default", "new_ones(Tensor self, SymInt[] size, *, " LS_TENSOR_OPTIONS ") -> Tensor", single<decomp_new>),
      export_op("aten.new_empty.default", "new_empty(Tensor self, SymInt[] size, *, " LS_TENSOR_OPTIONS ") -> Tensor", single<decomp_new>),
      export_op("aten.new_full.default", "new_full(Tensor self, SymInt[] size, Scalar fill_value, *, " LS_TENSOR_OPTIONS ") -> Tensor",
                single<decomp_new>),
      export_op("aten.to.dtype",
                "to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) "
                "-> Tensor(a)",
                single<decomp_to>),
      export_op("aten.to.dtype_layout",
                "to.dtype_layout(Tensor(a) self, *, " LS_TENSOR_OPTIONS
                ", bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)",
                single<decomp_to>),
      export_op("aten.to.device",
                "to.device(Tensor(a) self, Device device, ScalarType dtype, bool non_blocking=False, bool copy=False, MemoryFormat? "
                "memory_format=None) -> Tensor(a)",
                single<decomp_to>),
      // PyTorch's default is memory_format=contiguous_format, a name our schema reader cannot hold.
      export_op("aten.contiguous.default", "contiguous(Tensor(a) self, *, MemoryFormat? memory_format=None) -> Tensor(a)",
                single<decomp_contiguous>),
      export_op("aten.lift_fresh_copy.default", "lift_fresh_copy(Tensor self) -> Tensor", single<decomp_lift_fresh_copy>),
  };
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
