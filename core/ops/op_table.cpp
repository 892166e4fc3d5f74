// The op table's machinery: schemas parsed, calls bound to them, the shape rules and reference
// kernels of each kind (pointwise, reduction, view), and the table assembled from the op families
// (ops/pointwise.cpp, ops/views.cpp, ...: ops/README.md), which hold every op's own rules.
#include "ops/op_table.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "ops/rule_helpers.h"

namespace ls {
namespace {

using namespace rules;

// ---------------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------------

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

void parse_schema(OpDef& op) {
  const auto open = op.schema.find('('), arrow = op.schema.rfind("->");
  const auto close = op.schema.rfind(')', arrow);
  if (open == std::string::npos || close == std::string::npos || arrow == std::string::npos)
    throw std::logic_error("op table: malformed schema for " + op.name);
  std::string params = op.schema.substr(open + 1, close - open - 1);
  std::vector<std::string> parts;
  int depth = 0;
  std::string cur;
  for (char c : params) {
    if (c == '[' || c == '(') ++depth;
    if (c == ']' || c == ')') --depth;
    if (c == ',' && depth == 0) { parts.push_back(trim(cur)); cur.clear(); }
    else cur += c;
  }
  if (!trim(cur).empty()) parts.push_back(trim(cur));
  bool kw = false;
  for (const std::string& p : parts) {
    if (p == "*") { kw = true; continue; }
    Param prm;
    prm.kwarg_only = kw;
    std::string decl = p;
    const auto eq = decl.find('=');
    if (eq != std::string::npos) {
      prm.has_default = true;
      prm.default_text = trim(decl.substr(eq + 1));
      decl = trim(decl.substr(0, eq));
    }
    const auto sp = decl.rfind(' ');
    prm.type = decl.substr(0, sp);
    prm.name = decl.substr(sp + 1);
    // "Tensor(a)" (an alias annotation) is a Tensor for our purposes.
    const auto paren = prm.type.find('(');
    if (paren != std::string::npos) prm.type = prm.type.substr(0, paren) + prm.type.substr(prm.type.find(')') + 1);
    op.params.push_back(prm);
  }
  const std::string ret = trim(op.schema.substr(arrow + 2));
  op.num_outputs = ret.front() == '(' ? static_cast<int>(std::count(ret.begin(), ret.end(), ',')) + 1 : 1;
}

Arg parse_default(const std::string& t) {
  if (t == "None") return Arg::none();
  if (t == "True" || t == "False") return Arg::of_bool(t == "True");
  if (t == "[]") { Arg a; a.kind = Arg::Kind::list; return a; }
  if (t.size() >= 2 && (t.front() == '\'' || t.front() == '"')) return Arg::of_string(t.substr(1, t.size() - 2));
  if (t.find_first_of(".e") != std::string::npos) return Arg::of_real(std::stod(t));
  return Arg::of_int(std::stoll(t));
}

// ---------------------------------------------------------------------------------------------
// Shape and dtype rules
// ---------------------------------------------------------------------------------------------

std::vector<TensorMeta> infer_pointwise(const Graph& g, const OpDef& op, const std::vector<Arg>& args) {
  // PyTorch's result_type: tensors with dims decide; a 0-d tensor counts only where it is of a
  // higher category (float over int over bool): bf16[8] * f32[] stays bf16; a Python number
  // likewise, as the default type of its category (f32, i64): bf16 * 2.5 stays bf16, 1.0 / bf16
  // too, i32 + 2 stays i32, i64 * 0.5 is f32. A select's condition takes no part.
  Shape shape;
  bool any_tensor = false;
  std::optional<DType> dim_dt, zero_dt, scalar_dt;
  auto category = [](DType t) { return dtype_is_complex(t) ? 3 : dtype_is_float(t) ? 2 : t == DType::b8 ? 0 : 1; };
  const auto ops = operand_indices(op);
  for (size_t k = 0; k < ops.size(); ++k) {
    const Arg& a = args[ops[k]];
    const bool typed = !(op.math == Math::where && k == 0);
    if (a.is_node()) {
      const TensorMeta& m = meta_of(g, a);
      shape = any_tensor ? broadcast_shapes(shape, m.shape) : m.shape;
      any_tensor = true;
      if (!typed) continue;
      auto& slot = m.shape.empty() ? zero_dt : dim_dt;
      slot = slot ? promote(*slot, m.dtype) : m.dtype;
    } else if (a.is_number()) {
      if (!typed) continue;
      const DType sd = a.kind == Arg::Kind::real ? DType::f32 : a.kind == Arg::Kind::integer ? DType::i64 : DType::b8;
      scalar_dt = scalar_dt ? promote(*scalar_dt, sd) : sd;
    } else {
      throw std::invalid_argument(op.name + ": argument '" + op.params[ops[k]].name + "' must be a tensor or a number");
    }
  }
  if (!any_tensor) throw std::invalid_argument(op.name + ": needs at least one tensor argument");
  std::optional<DType> r = dim_dt;
  for (const auto& lower : {zero_dt, scalar_dt})
    if (lower && (!r || category(*lower) > category(*r))) r = r && !dtype_is_float(*lower) ? promote(*r, *lower) : *lower;
  DType dt = r.value_or(DType::b8);
  if (op.math == Math::div && !dtype_is_float(dt) && !dtype_is_complex(dt)) dt = DType::f32;
  if (math_is_comparison(op.math)) dt = DType::b8;
  if (op.math == Math::abs) dt = real_dtype(dt);  // |complex| is real, as PyTorch's abs
  TensorMeta m = TensorMeta::contiguous(dt, shape);
  for (const int k : ops)
    if (args[k].is_node()) { m.device = meta_of(g, args[k]).device; break; }
  return {m};
}

std::vector<TensorMeta> infer_reduction(const Graph& g, const OpDef& op, const std::vector<Arg>& args) {
  if (!args[0].is_node()) throw std::invalid_argument(op.name + ": 'self' must be a tensor");
  const TensorMeta& in = meta_of(g, args[0]);
  const auto dims = reduction_dims(op, args, static_cast<int64_t>(in.shape.size()));
  const bool keep = reduction_keepdim(op, args);
  Shape out;
  for (int64_t d = 0; d < static_cast<int64_t>(in.shape.size()); ++d) {
    const bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
    if (!reduced) out.push_back(in.shape[d]);
    else if (keep) out.push_back(1);
  }
  if (op.reduce == Reduce::mean && !dtype_is_float(in.dtype) && !dtype_is_complex(in.dtype))
    throw std::invalid_argument(op.name + ": mean needs a floating point or complex input, got " + std::string(dtype_short(in.dtype)));
  TensorMeta m = TensorMeta::contiguous(in.dtype, out);
  m.device = in.device;
  return {m};
}

// ---------------------------------------------------------------------------------------------
// Reference kernels: plain loops, written for clarity; every compiled result is checked against them.
// ---------------------------------------------------------------------------------------------

// An integer power as PyTorch's powi: by squaring, wrapping as the integer type (the low bits of
// the 64-bit product); a negative exponent gives 1 for a base of 1, -1 or 1 for -1, else 0. The
// double pow would round past 2^53 and overflow the type (undefined behaviour in the store).
int64_t int_pow(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((-b) % 2 ? -1 : 1) : 0;
  uint64_t r = 1, x = static_cast<uint64_t>(a);
  for (uint64_t e = static_cast<uint64_t>(b); e; e >>= 1, x *= x)
    if (e & 1) r *= x;
  return static_cast<int64_t>(r);
}
void store_int(Tensor& t, int64_t i, int64_t v) {
  switch (t.dtype()) {
    case DType::i64: static_cast<int64_t*>(t.data())[i] = v; break;
    case DType::i32: static_cast<int32_t*>(t.data())[i] = static_cast<int32_t>(static_cast<uint32_t>(v)); break;
    case DType::u8: static_cast<uint8_t*>(t.data())[i] = static_cast<uint8_t>(v); break;
    default: t.set(i, static_cast<double>(v));
  }
}

// Complex operands (what the FFTs make): the arithmetic, abs, equality and a copy, in
// std::complex<double>; any other math refuses them by name.
std::complex<double> eval_complex(const OpDef& op, Math m, std::complex<double> a, std::complex<double> b) {
  switch (m) {
    case Math::identity: return a;
    case Math::neg: return -a;
    case Math::abs: return std::abs(a);
    case Math::add: return a + b;
    case Math::sub: return a - b;
    case Math::mul: return a * b;
    case Math::div: return a / b;
    case Math::eq: return a == b ? 1.0 : 0.0;
    case Math::ne: return a != b ? 1.0 : 0.0;
    default: throw std::invalid_argument("complex tensors are not supported by " + op.name + " (" + std::string(math_name(m)) + ")");
  }
}

std::vector<Tensor> ref_pointwise(const OpDef& op, const std::vector<Arg>& args, const RefInputs& vals,
                                  const std::vector<TensorMeta>& outs) {
  Tensor out(outs[0].dtype, outs[0].shape);
  const auto ops = operand_indices(op);
  std::vector<Shape> st(ops.size());
  bool complex = dtype_is_complex(out.dtype());
  for (size_t k = 0; k < ops.size(); ++k)
    if (args[ops[k]].is_node()) {
      st[k] = broadcast_strides(vals[ops[k]].shape(), out.shape());
      complex = complex || dtype_is_complex(vals[ops[k]].dtype());
    }
  const double alpha = alpha_of(op, args);
  const Math math = pointwise_math(op, args);
  if (complex) {
    std::complex<double> z[2] = {0, 0};
    for (int64_t i = 0; i < out.numel(); ++i) {
      for (size_t k = 0; k < ops.size() && k < 2; ++k) {
        const Arg& a = args[ops[k]];
        z[k] = a.is_node() ? vals[ops[k]].get_complex(offset_of(i, out.shape(), st[k])) : std::complex<double>(a.number());
      }
      if (ops.size() > 2) throw std::invalid_argument("complex tensors are not supported by " + op.name);
      if (alpha != 1.0) z[1] *= alpha;
      out.set_complex(i, eval_complex(op, math, z[0], z[1]));
    }
    return {out};
  }
  double x[3] = {0, 0, 0};
  for (int64_t i = 0; i < out.numel(); ++i) {
    for (size_t k = 0; k < ops.size() && k < 3; ++k) {
      const Arg& a = args[ops[k]];
      x[k] = a.is_node() ? vals[ops[k]].get(offset_of(i, out.shape(), st[k])) : a.number();
    }
    if (alpha != 1.0) x[1] *= alpha;
    if (math == Math::pow && !dtype_is_float(out.dtype()) && out.dtype() != DType::b8)
      store_int(out, i, int_pow(static_cast<int64_t>(x[0]), static_cast<int64_t>(x[1])));
    else
      out.set(i, eval_math(math, x[0], x[1], x[2]));
  }
  return {out};
}

std::vector<Tensor> ref_reduction(const OpDef& op, const std::vector<Arg>& args, const RefInputs& vals,
                                  const std::vector<TensorMeta>& outs) {
  const Tensor& in = vals[0];
  if (dtype_is_complex(in.dtype())) throw std::invalid_argument("complex tensors are not supported by " + op.name);
  const auto dims = reduction_dims(op, args, in.dim());
  Tensor out(outs[0].dtype, outs[0].shape);
  // Output strides over the input's dimensions: 0 for reduced ones.
  Shape kept;
  for (int64_t d = 0; d < in.dim(); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) kept.push_back(in.shape()[d]);
  const Shape ks = contiguous_strides(kept);
  Shape ostr(in.dim(), 0);
  for (int64_t d = 0, k = 0; d < in.dim(); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) ostr[d] = ks[k++];
  std::vector<double> acc(out.numel(), reduce_init(op.reduce));
  for (int64_t i = 0; i < in.numel(); ++i) {
    const int64_t o = offset_of(i, in.shape(), ostr);
    acc[o] = reduce_combine(op.reduce, acc[o], in.get(i));
  }
  int64_t count = 1;
  for (int64_t d : dims) count *= in.shape()[d];
  for (int64_t o = 0; o < out.numel(); ++o) out.set(o, op.reduce == Reduce::mean ? acc[o] / count : acc[o]);
  return {out};
}

std::vector<Tensor> ref_view(const OpDef& op, const std::vector<Arg>& args, const RefInputs& vals,
                             const std::vector<TensorMeta>& outs) {
  // A throwaway graph holding only the input's metadata lets the view rule run on constants.
  Graph g;
  Node n;
  n.name = "in";
  n.outs = {TensorMeta::contiguous(vals[0].dtype(), vals[0].shape())};
  g.add(n);
  std::vector<Arg> a = args;
  a[0] = Arg::of_node(0);
  Tensor out(outs[0].dtype, outs[0].shape);
  // The views that keep the elements' order (a reshape, a split or merged dimension, a squeeze)
  // of a contiguous tensor, as every reference tensor is: the same elements in the same order.
  static const std::set<std::string> order_kept = {"aten.view.default", "prims.reshape.default", "prims.split_dim.default",
                                                   "prims.collapse_view.default", "aten.squeeze.dims"};
  if (order_kept.count(op.name) && out.numel() == vals[0].numel() && out.dtype() == vals[0].dtype()) {
    std::memcpy(out.data(), vals[0].data(), static_cast<size_t>(out.nbytes()));
    return {out};
  }
  const Shape in_strides = contiguous_strides(vals[0].shape());
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<Expr> oi;
    int64_t rem = i;
    Shape pos(out.dim());
    for (int64_t d = out.dim(); d-- > 0;) { pos[d] = rem % out.shape()[d]; rem /= out.shape()[d]; }
    for (int64_t p : pos) oi.emplace_back(p);
    const auto ii = op.view(g, a, oi);
    int64_t off = 0;
    for (size_t d = 0; d < ii.size(); ++d) off += ii[d].constant() * in_strides[d];
    if (dtype_is_complex(out.dtype())) out.set_complex(i, vals[0].get_complex(off));
    else out.set(i, vals[0].get(off));
  }
  return {out};
}

// ---------------------------------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------------------------------

std::vector<TensorMeta> infer_getitem(const Graph& g, const OpDef& op, const std::vector<Arg>& args) {
  const Node& src = g.nodes.at(args[0].node);
  const int64_t i = args[1].i;
  if (i < 0 || i >= static_cast<int64_t>(src.outs.size()))
    throw std::invalid_argument(op.name + ": '" + src.name + "' has no output " + std::to_string(i));
  return {src.outs[i]};
}

std::vector<OpDef> build_table() {
  std::vector<OpDef> t;
  add_pointwise_ops(t);
  add_reduction_ops(t);
  add_loss_ops(t);
  add_view_ops(t);
  add_shape_ops(t);
  add_linalg_ops(t);
  add_conv_pool_ops(t);
  add_normalization_ops(t);
  add_attention_ops(t);
  add_indexing_ops(t);
  add_creation_ops(t);
  add_resampling_ops(t);
  add_recurrent_ops(t);
  add_fft_ops(t);
  // A multi-output node's output i, at every level.
  t.push_back({.name = "getitem", .schema = "getitem(Any self, int index) -> Any", .kind = OpKind::getitem,
               .levels = level::aten | level::core_aten | level::prims, .infer = infer_getitem});
  for (OpDef& op : t) {
    parse_schema(op);
    if (op.reference) continue;  // the kernel of its kind
    if (op.kind == OpKind::pointwise) op.reference = ref_pointwise;
    if (op.kind == OpKind::reduction) op.reference = ref_reduction;
    if (op.kind == OpKind::view) op.reference = ref_view;
  }
  return t;
}

}  // namespace

std::string_view OpDef::base_name() const {
  std::string_view n = name;
  const auto a = n.find('.');
  const auto b = n.find('.', a + 1);
  return n.substr(a + 1, b - a - 1);
}

const std::vector<OpDef>& all_ops() {
  static const std::vector<OpDef> table = build_table();
  return table;
}

const OpDef* find_op_functional(std::string_view name, bool* inplace) {
  if (inplace) *inplace = false;
  if (const OpDef* op = find_op(name)) return op;
  // In-place variants (relu_, add_.Tensor) run as their functional op: the graph uses the result.
  std::string n(name.substr(0, 10) == "torch.ops." ? name.substr(10) : name);
  const auto a = n.find('.'), b = n.find('.', a + 1);
  if (a == std::string::npos || b == std::string::npos || n[b - 1] != '_') return nullptr;
  n.erase(b - 1, 1);
  if (inplace) *inplace = true;
  return find_op(n);
}

const OpDef* find_op(std::string_view name) {
  if (name.substr(0, 10) == "torch.ops.") name.remove_prefix(10);
  static const std::map<std::string, const OpDef*, std::less<>> index = [] {
    std::map<std::string, const OpDef*, std::less<>> m;
    for (const OpDef& op : all_ops()) m[op.name] = &op;
    return m;
  }();
  auto it = index.find(name);
  return it == index.end() ? nullptr : it->second;
}

std::vector<Arg> bind_args(const OpDef& op, std::vector<Arg> pos,
                           const std::vector<std::pair<std::string, Arg>>& kw) {
  const auto& ps = op.params;
  size_t max_pos = 0;
  while (max_pos < ps.size() && !ps[max_pos].kwarg_only) ++max_pos;
  if (pos.size() > max_pos)
    throw std::invalid_argument(op.name + " takes at most " + std::to_string(max_pos) + " positional argument" +
                                (max_pos == 1 ? "" : "s") + " but " + std::to_string(pos.size()) + " were given");
  std::vector<Arg> out(ps.size());
  std::vector<bool> set(ps.size(), false);
  for (size_t i = 0; i < pos.size(); ++i) { out[i] = std::move(pos[i]); set[i] = true; }
  for (const auto& kv : kw) {
    const std::string& name = kv.first;
    const Arg& value = kv.second;
    auto it = std::find_if(ps.begin(), ps.end(), [&name](const Param& p) { return p.name == name; });
    if (it == ps.end()) throw std::invalid_argument(op.name + " has no parameter named '" + name + "'");
    const size_t i = static_cast<size_t>(it - ps.begin());
    if (set[i]) throw std::invalid_argument(op.name + " got two values for '" + name + "'");
    out[i] = value;
    set[i] = true;
  }
  for (size_t i = 0; i < ps.size(); ++i) {
    if (set[i]) continue;
    if (ps[i].has_default) out[i] = parse_default(ps[i].default_text);
    else if (ps[i].type.back() == '?') out[i] = Arg::none();
    else throw std::invalid_argument(op.name + " is missing its argument '" + ps[i].name + "' (" + ps[i].type + ")");
  }
  // A Python number where a Tensor is declared: pointwise ops take it as a scalar operand; so do
  // the ops PyTorch's argument parser lets a number bind to a Tensor (should_allow_numbers_as_tensors:
  // add, sub, mul, div, true_divide, floor_divide), which torch.export keeps as a number
  // (EdgeNeXt's `torch.div(t, 2, rounding_mode='floor')`: div.Tensor_mode(t, 2)). Their rules
  // read it as PyTorch's wrapped number: a scalar operand of type promotion (here the operand
  // after self; `self` a number is what the pointwise ops take).
  static const std::set<std::string_view> numbers_as_tensors = {"add", "sub", "mul", "div", "true_divide", "floor_divide"};
  const bool takes_numbers = op.name.rfind("aten.", 0) == 0 && numbers_as_tensors.count(op.base_name());
  for (size_t i = 0; i < ps.size(); ++i) {
    const bool number_ok = op.kind == OpKind::pointwise || (takes_numbers && i > 0);
    if (ps[i].type == "Tensor" && !out[i].is_node() && !(number_ok && out[i].is_number()))
      throw std::invalid_argument(op.name + ": argument '" + ps[i].name + "' must be a tensor");
    if (ps[i].type == "Tensor?" && !out[i].is_node() && !out[i].is_none())
      throw std::invalid_argument(op.name + ": argument '" + ps[i].name + "' must be a tensor or None");
    if (ps[i].type == "Tensor[]") {
      if (out[i].kind != Arg::Kind::list) throw std::invalid_argument(op.name + ": argument '" + ps[i].name + "' must be a list of tensors");
      for (const Arg& x : out[i].list)
        if (!x.is_node()) throw std::invalid_argument(op.name + ": argument '" + ps[i].name + "' must be a list of tensors");
    }
  }
  return out;
}

std::vector<TensorMeta> infer_meta(const Graph& g, const OpDef& op, const std::vector<Arg>& args) {
  std::vector<TensorMeta> outs;
  if (op.infer) outs = op.infer(g, op, args);
  else if (op.kind == OpKind::pointwise) outs = infer_pointwise(g, op, args);
  else if (op.kind == OpKind::reduction) outs = infer_reduction(g, op, args);
  else throw std::logic_error(op.name + " has no shape rule");
  // Every shape any rule produces stays within what a tensor can hold (2^40 elements).
  for (const TensorMeta& m : outs) {
    int64_t n = 1;
    for (int64_t d : m.shape)
      if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > (int64_t(1) << 40))
        throw std::invalid_argument(op.name + ": result shape " + shape_str(m.shape) + " is too large or negative");
  }
  return outs;
}

std::vector<int64_t> spatial_pair(const Arg& a) {
  std::vector<int64_t> v = a.kind == Arg::Kind::list || a.kind == Arg::Kind::integer ? a.ints() : std::vector<int64_t>{};
  if (v.size() == 1) v.push_back(v[0]);
  if (v.size() != 2) throw std::invalid_argument("expected one or two values per spatial dimension, got " + std::to_string(v.size()));
  return v;
}

Math pointwise_math(const OpDef& op, const std::vector<Arg>& args) {
  if (op.math == Math::gelu)
    for (size_t i = 0; i < op.params.size() && i < args.size(); ++i)
      if (op.params[i].name == "approximate" && args[i].kind == Arg::Kind::string && args[i].s == "tanh") return Math::gelu_tanh;
  return op.math;
}

int64_t wrap_dim(const OpDef& op, int64_t d, int64_t rank) {
  const int64_t r = std::max<int64_t>(rank, 1);
  if (d < -r || d >= r)
    throw std::invalid_argument(op.name + ": dimension " + std::to_string(d) + " is out of range for rank " + std::to_string(rank));
  return d < 0 ? d + r : d;
}

std::vector<int64_t> reduction_dims(const OpDef& op, const std::vector<Arg>& args, int64_t rank) {
  std::vector<int64_t> dims;
  const bool has_dims = op.params.size() > 1 && op.params[1].type.find("int[") == 0;
  if (has_dims && !args[1].is_none()) {
    for (int64_t d : args[1].ints()) {
      if (d < -std::max<int64_t>(rank, 1) || d >= std::max<int64_t>(rank, 1))
        throw std::invalid_argument(op.name + ": dimension " + std::to_string(d) + " is out of range for rank " +
                                    std::to_string(rank));
      dims.push_back(d < 0 ? d + rank : d);
    }
  }
  if (rank == 0) return {};  // a 0-d tensor (dim 0 or -1 allowed, as PyTorch's) reduces to itself
  if (dims.empty())  // None or [] reduces over every dimension
    for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  return dims;
}

bool reduction_keepdim(const OpDef& op, const std::vector<Arg>& args) {
  for (size_t i = 0; i < op.params.size(); ++i)
    if (op.params[i].name == "keepdim") return args[i].kind == Arg::Kind::boolean && args[i].b;
  return false;
}

bool broadcasts_to(const Shape& in, const Shape& out) {
  if (in.size() > out.size()) return false;
  for (size_t k = 0; k < in.size(); ++k)
    if (in[k] != 1 && in[k] != out[out.size() - in.size() + k]) return false;
  return true;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1)
      throw std::invalid_argument("shapes " + shape_str(a) + " and " + shape_str(b) + " cannot be broadcast together");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

}  // namespace ls
