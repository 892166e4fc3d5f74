#include "frontend/torch_functions.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "ops/op_table.h"
#include "tensor/dtype.h"

namespace ls {

namespace {

// ---------------------------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------------------------

const char* const kSlice = "<slice>";        // py_slice: a list [kSlice, start, stop, step]
const char* const kEllipsis = "<Ellipsis>";  // py_ellipsis
const char* const kList = "<list>";          // py_list: a list [kList, items...]

bool is_slice(const Arg& a) {
  return a.kind == Arg::Kind::list && a.list.size() == 4 && a.list[0].kind == Arg::Kind::string && a.list[0].s == kSlice;
}
bool is_ellipsis(const Arg& a) { return a.kind == Arg::Kind::string && a.s == kEllipsis; }
bool is_py_list(const Arg& a) {
  return a.kind == Arg::Kind::list && !a.list.empty() && a.list[0].kind == Arg::Kind::string && a.list[0].s == kList;
}
bool is_dtype(const Arg& a) { return a.kind == Arg::Kind::string && a.s.rfind("torch.", 0) == 0 && dtype_from_name(a.s); }
bool is_int(const Arg& a) { return a.kind == Arg::Kind::integer; }
bool is_true(const Arg& a) { return a.kind == Arg::Kind::boolean && a.b; }

std::string kind_name(const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::none: return "NoneType";
    case Arg::Kind::node: return "Tensor";
    case Arg::Kind::integer: return "int";
    case Arg::Kind::real: return "float";
    case Arg::Kind::boolean: return "bool";
    case Arg::Kind::string: return is_dtype(a) ? "torch.dtype" : is_ellipsis(a) ? "ellipsis" : "str";
    case Arg::Kind::list: return is_slice(a) ? "slice" : is_py_list(a) ? "list" : "tuple";
  }
  return "?";
}

std::string dtype_arg(DType t) { return std::string(dtype_torch(t)); }

int64_t rank(TorchLowering& b, const Arg& t) { return static_cast<int64_t>(b.meta(t).shape.size()); }

[[noreturn]] void unsupported(const std::string& fn, const std::string& what) {
  throw std::invalid_argument(fn + ": " + what + " is not supported");
}

// ---------------------------------------------------------------------------------------------
// ATen overloads, bound as PyTorch's Python argument parser binds torch.X and Tensor.X
// (torch/csrc/utils/python_arg_parser.cpp; the order from tools/autograd/gen_python_functions.py)
// ---------------------------------------------------------------------------------------------

// should_allow_numbers_as_tensors: the functions whose Tensor parameters take a Python number.
bool numbers_as_tensors(std::string_view base) {
  static const std::set<std::string_view> allowed = {"add", "sub", "mul", "div", "true_divide", "floor_divide", "divide",
                                                     "multiply", "subtract", "to", "_to_copy", "copy"};
  return allowed.count(base) > 0;
}

// gen_python_functions.py's is_arg_smaller: the overload with the smaller type is tried later.
bool arg_smaller(const std::string& t1, const std::string& t2) {
  return (t1 == "Scalar" && t2 == "Tensor") || (t1 == "Scalar?" && t2 == "Tensor?") ||
         (t1 == "int[]" && (t2 == "int" || t2 == "int?")) || (t1 == "Tensor[]" && t2.find("[]") != std::string::npos) ||
         (t1 == "SymInt[]" && t2 == "int[]") || ((t1 == "SymInt" || t1 == "int") && t2 == "Tensor");
}
bool overload_smaller(const OpDef& a, const OpDef& b) {
  if (a.params.size() != b.params.size()) return false;
  bool equal = true;
  for (size_t i = 0; i < a.params.size(); ++i) {
    const std::string &t1 = a.params[i].type, &t2 = b.params[i].type;
    if (t1 != t2) equal = false;
    if (t1 != t2 && !arg_smaller(t1, t2)) return false;
  }
  return !equal;
}

// sort_overloads: by signature text, then each overload before the ones smaller than it.
std::vector<const OpDef*> python_order(std::vector<const OpDef*> ops) {
  auto args_text = [](const OpDef* o) { return o->schema.substr(o->schema.find('(')); };
  std::stable_sort(ops.begin(), ops.end(), [&](const OpDef* x, const OpDef* y) { return args_text(x) < args_text(y); });
  std::vector<const OpDef*> out;
  while (!ops.empty()) {
    size_t pick = 0;
    for (size_t i = 0; i < ops.size(); ++i) {
      bool dominated = false;
      for (size_t j = 0; j < ops.size(); ++j)
        if (j != i && overload_smaller(*ops[i], *ops[j])) dominated = true;
      if (!dominated) { pick = i; break; }
    }
    out.push_back(ops[pick]);
    ops.erase(ops.begin() + static_cast<long>(pick));
  }
  return out;
}

// Every aten op of the table by its Python name ("add" -> add.Tensor, add.Scalar), in the order
// the parser tries them.
const std::map<std::string, std::vector<const OpDef*>>& aten_overloads() {
  static const std::map<std::string, std::vector<const OpDef*>> m = [] {
    std::map<std::string, std::vector<const OpDef*>> by;
    for (const OpDef& op : all_ops())
      if (op.name.rfind("aten.", 0) == 0) by[std::string(op.base_name())].push_back(&op);
    for (auto& entry : by) entry.second = python_order(entry.second);
    return by;
  }();
  return m;
}

bool is_int_list_type(const std::string& t) {
  return t.rfind("int[", 0) == 0 || t.rfind("SymInt[", 0) == 0;
}

// FunctionParameter::check: whether a value fits a parameter type of the schema.
bool accepts(std::string t, const Arg& a, bool numbers_ok) {
  const bool optional = !t.empty() && t.back() == '?';
  if (optional) t.pop_back();
  if (a.is_none()) return optional;
  if (t == "Tensor") return a.is_node() || (numbers_ok && a.is_number());
  if (t == "Scalar") return a.is_number();
  if (t == "int" || t == "SymInt") return a.kind == Arg::Kind::integer;
  if (t == "float") return a.is_number();
  if (t == "bool") return a.kind == Arg::Kind::boolean;
  if (t == "str") return a.kind == Arg::Kind::string && !is_dtype(a);
  if (t == "ScalarType") return is_dtype(a);
  if (t == "Device") return a.kind == Arg::Kind::string && a.s.rfind("torch.", 0) != 0;
  if (t == "Layout" || t == "MemoryFormat") return a.kind == Arg::Kind::string && a.s.rfind("torch.", 0) == 0;
  const auto lb = t.find('[');
  if (lb == std::string::npos) return false;  // Generator and the rest: None only
  const std::string elem = t.substr(0, lb);
  const bool sized = t[lb + 1] != ']';
  if (a.kind != Arg::Kind::list || is_slice(a))
    return sized && (elem == "int" || elem == "SymInt" ? a.kind == Arg::Kind::integer : elem == "float" ? a.is_number() : false);
  for (const Arg& x : a.list)
    if (!accepts(elem, x, false)) return false;
  return true;
}

struct Bound {
  const OpDef* op = nullptr;
  std::vector<Arg> pos;
  PyKeywords kw;
};

// numpy_compatibility_arg_names, and `input` for a function's self.
std::optional<size_t> param_index(const OpDef& op, const std::string& name) {
  auto find = [&](const std::string& n) -> std::optional<size_t> {
    for (size_t i = 0; i < op.params.size(); ++i)
      if (op.params[i].name == n) return i;
    return std::nullopt;
  };
  if (auto i = find(name)) return i;
  if (name == "axis") return find("dim");
  if (name == "keepdims") return find("keepdim");
  if (name == "x2") return find("other");
  if ((name == "input" || name == "x" || name == "a" || name == "x1") && !op.params.empty() &&
      (op.params[0].name == "self" || op.params[0].name == "input"))
    return size_t(0);
  return std::nullopt;
}

std::optional<Bound> try_overload(const OpDef& op, std::vector<Arg> pos, const PyKeywords& kw, bool method) {
  size_t npos = 0;
  while (npos < op.params.size() && !op.params[npos].kwarg_only) ++npos;
  const size_t first = method ? 1 : 0;
  // A single int-list parameter takes its ints as varargs: x.view(4, 64), torch.zeros(2, 3).
  if (npos == first + 1 && is_int_list_type(op.params[first].type) && pos.size() > first && is_int(pos[first])) {
    Arg l;
    l.kind = Arg::Kind::list;
    l.list.assign(pos.begin() + static_cast<long>(first), pos.end());
    pos.resize(first);
    pos.push_back(l);
  }
  if (pos.size() > npos) return std::nullopt;
  const bool numbers_ok = numbers_as_tensors(op.base_name());
  std::vector<bool> given(op.params.size(), false);
  for (size_t i = 0; i < pos.size(); ++i) {
    if (!accepts(op.params[i].type, pos[i], numbers_ok)) return std::nullopt;
    given[i] = true;
  }
  Bound r;
  r.op = &op;
  for (const auto& entry : kw) {
    const auto i = param_index(op, entry.first);
    if (!i || given[*i] || !accepts(op.params[*i].type, entry.second, numbers_ok)) return std::nullopt;
    given[*i] = true;
    if (*i < pos.size()) return std::nullopt;
    r.kw.emplace_back(op.params[*i].name, entry.second);
  }
  for (size_t i = 0; i < op.params.size(); ++i)
    if (!given[i] && !op.params[i].has_default) return std::nullopt;
  r.pos = std::move(pos);
  return r;
}

std::string describe_call(const std::vector<Arg>& pos, const PyKeywords& kw) {
  std::string s = "(";
  for (size_t i = 0; i < pos.size(); ++i) s += (i ? ", " : "") + kind_name(pos[i]);
  for (size_t i = 0; i < kw.size(); ++i) s += (pos.empty() && i == 0 ? "" : ", ") + kw[i].first + "=" + kind_name(kw[i].second);
  return s + ")";
}

bool has_aten(const std::string& name) { return aten_overloads().count(name) > 0; }

// The first overload of aten.<name> the arguments fit, as the parser picks it.
Bound resolve(const std::string& name, const std::vector<Arg>& pos, const PyKeywords& kw, bool method) {
  const auto it = aten_overloads().find(name);
  if (it == aten_overloads().end()) throw UnknownTorchFunction(name);
  for (const OpDef* op : it->second)
    if (auto r = try_overload(*op, pos, kw, method)) return *r;
  std::string expected;
  for (const OpDef* op : it->second) expected += "\n  " + op->schema;
  throw std::invalid_argument(name + "() received an invalid combination of arguments - got " + describe_call(pos, kw) +
                              ", but expected one of:" + expected);
}

Arg call_aten(TorchLowering& b, const std::string& name, const std::vector<Arg>& pos, const PyKeywords& kw = {},
              bool method = false) {
  Bound r = resolve(name, pos, kw, method);
  return b.call(r.op->name, std::move(r.pos), std::move(r.kw));
}

// ---------------------------------------------------------------------------------------------
// Python signatures (torch.nn.functional, the Tensor methods Python defines)
// ---------------------------------------------------------------------------------------------

struct PySignature {
  std::string name;
  struct P {
    std::string name;
    std::optional<Arg> def;  // none: required
    bool kwonly = false;
  };
  std::vector<P> params;
};

Arg parse_literal(std::string t) {
  while (!t.empty() && t.front() == ' ') t.erase(t.begin());
  while (!t.empty() && t.back() == ' ') t.pop_back();
  if (t == "None") return Arg::none();
  if (t == "True" || t == "False") return Arg::of_bool(t == "True");
  if (t.size() >= 2 && t.front() == '\'') return Arg::of_string(t.substr(1, t.size() - 2));
  if (t.rfind("torch.", 0) == 0) return Arg::of_string(t);
  if (t.find_first_of(".e") != std::string::npos) return Arg::of_real(std::stod(t));
  return Arg::of_int(std::stoll(t));
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') { out.push_back(cur); cur.clear(); }
    else cur += c;
  }
  if (cur.find_first_not_of(' ') != std::string::npos) out.push_back(cur);
  return out;
}

// "relu(input, inplace=False)", "to(self, *, memory_format=None)".
PySignature parse_signature(const std::string& text) {
  PySignature s;
  const auto open = text.find('(');
  s.name = text.substr(0, open);
  bool kwonly = false;
  for (std::string p : split_commas(text.substr(open + 1, text.rfind(')') - open - 1))) {
    p.erase(0, p.find_first_not_of(' '));
    if (p == "*") { kwonly = true; continue; }
    PySignature::P prm;
    const auto eq = p.find('=');
    prm.name = p.substr(0, eq);
    if (eq != std::string::npos) prm.def = parse_literal(p.substr(eq + 1));
    prm.kwonly = kwonly;
    s.params.push_back(prm);
  }
  return s;
}

// A Python call bound to a signature: every parameter by name, defaults filled.
struct PyArgs {
  std::string fn;
  std::map<std::string, Arg> v;
  const Arg& operator[](const std::string& n) const {
    const auto it = v.find(n);
    if (it == v.end()) throw std::invalid_argument(fn + "(): no parameter '" + n + "' (the mapping reads one its signature lacks)");
    return it->second;
  }
  bool has(const std::string& n) const { return v.count(n) > 0; }
  bool none(const std::string& n) const { return (*this)[n].is_none(); }
};

PyArgs bind_python(const PySignature& s, const std::string& fn, const std::vector<Arg>& pos, const PyKeywords& kw) {
  PyArgs a;
  a.fn = fn;
  size_t npos = 0;
  while (npos < s.params.size() && !s.params[npos].kwonly) ++npos;
  if (pos.size() > npos)
    throw std::invalid_argument(fn + "() takes " + std::to_string(npos) + " positional arguments but " + std::to_string(pos.size()) +
                                " were given");
  for (size_t i = 0; i < pos.size(); ++i) a.v[s.params[i].name] = pos[i];
  for (const auto& entry : kw) {
    bool known = false;
    for (const auto& p : s.params) known = known || p.name == entry.first;
    if (!known) throw std::invalid_argument(fn + "() got an unexpected keyword argument '" + entry.first + "'");
    if (a.v.count(entry.first)) throw std::invalid_argument(fn + "() got multiple values for argument '" + entry.first + "'");
    a.v[entry.first] = entry.second;
  }
  for (const auto& p : s.params) {
    if (a.v.count(p.name)) continue;
    if (!p.def) throw std::invalid_argument(fn + "() missing required argument '" + p.name + "'");
    a.v[p.name] = *p.def;
  }
  return a;
}

// _Reduction.get_enum / legacy_get_string: 'none' 0, 'mean' 1, 'sum' 2.
void reduction_to_enum(PyArgs& a) {
  if (!a.v.count("reduction")) return;
  std::string r = a["reduction"].kind == Arg::Kind::string ? a["reduction"].s : "mean";
  if (a.v.count("size_average") && (!a.none("size_average") || !a.none("reduce"))) {
    const bool size_average = a.none("size_average") || is_true(a["size_average"]);
    const bool reduce = a.none("reduce") || is_true(a["reduce"]);
    r = size_average && reduce ? "mean" : reduce ? "sum" : "none";
  }
  if (r != "none" && r != "mean" && r != "sum") throw std::invalid_argument(r + " is not a valid value for reduction");
  a.v["reduction"] = Arg::of_int(r == "none" ? 0 : r == "sum" ? 2 : 1);
}

using Custom = Arg (*)(TorchLowering& b, const PyArgs& a);

// One function of the Python front end: its signature, and either the ATen call it makes (its
// arguments by Python name, `key=name`, or literals; an op without overload is resolved by the
// arguments' kinds) or a lowering of its own.
struct PyFunction {
  const char* signature;
  const char* aten = nullptr;
  Custom custom = nullptr;
};

Arg lower_spec(TorchLowering& b, const std::string& spec, const PyArgs& a) {
  const auto open = spec.find('(');
  const std::string op = spec.substr(0, open);
  std::vector<Arg> pos;
  PyKeywords kw;
  for (std::string item : split_commas(spec.substr(open + 1, spec.rfind(')') - open - 1))) {
    item.erase(0, item.find_first_not_of(' '));
    const auto eq = item.find('=');
    const std::string value = eq == std::string::npos ? item : item.substr(eq + 1);
    const Arg v = a.v.count(value) ? a[value] : parse_literal(value);
    if (eq == std::string::npos) pos.push_back(v);
    else kw.emplace_back(item.substr(0, eq), v);
  }
  if (std::count(op.begin(), op.end(), '.') == 2) {
    // None for a list parameter that has a default (F.max_pool2d's stride=None): the default.
    if (const OpDef* d = find_op(op))
      for (size_t i = 0; i < pos.size() && i < d->params.size(); ++i)
        if (pos[i].is_none() && d->params[i].has_default && d->params[i].type.back() != '?' && d->params[i].type.back() == ']')
          pos[i] = Arg::of_ints({});
    return b.call(op, std::move(pos), std::move(kw));
  }
  return call_aten(b, op.substr(5), pos, kw);
}

// --- torch.nn.functional lowerings --------------------------------------------------------------

int64_t legacy_softmax_dim(int64_t ndim) { return ndim == 0 || ndim == 1 || ndim == 3 ? 0 : 1; }

Arg softmax_like(TorchLowering& b, const PyArgs& a, const char* op, bool negate) {
  Arg x = a["input"];
  const Arg dim = a.none("dim") ? Arg::of_int(legacy_softmax_dim(rank(b, x))) : a["dim"];
  if (negate) x = b.call("aten.neg.default", {x});
  PyKeywords kw;
  if (!a.none("dtype")) kw.emplace_back("dtype", a["dtype"]);
  return b.call(op, {x, dim}, kw);
}
Arg f_softmax(TorchLowering& b, const PyArgs& a) { return softmax_like(b, a, "aten.softmax.int", false); }
Arg f_softmin(TorchLowering& b, const PyArgs& a) { return softmax_like(b, a, "aten.softmax.int", true); }
Arg f_log_softmax(TorchLowering& b, const PyArgs& a) { return softmax_like(b, a, "aten.log_softmax.int", false); }

Arg f_celu(TorchLowering& b, const PyArgs& a) {
  const double alpha = a["alpha"].number();
  if (alpha == 0) throw std::invalid_argument("celu: alpha must not be 0");
  return b.call("aten.elu.default", {a["input"], a["alpha"], Arg::of_real(1.0), Arg::of_real(1.0 / alpha)});
}

Arg f_glu(TorchLowering& b, const PyArgs& a) {
  const Arg x = a["input"];
  const int64_t r = rank(b, x);
  int64_t d = a["dim"].i < 0 ? a["dim"].i + r : a["dim"].i;
  if (d < 0 || d >= r) throw std::invalid_argument("glu: dim " + std::to_string(a["dim"].i) + " out of range for rank " + std::to_string(r));
  const int64_t n = b.meta(x).shape[static_cast<size_t>(d)];
  if (n % 2) throw std::invalid_argument("glu: Halving dimension must be even, but dimension " + std::to_string(d) + " is size " + std::to_string(n));
  const Arg halves = b.call("aten.split.Tensor", {x, Arg::of_int(n / 2), Arg::of_int(d)});
  const Arg first = b.call("getitem", {halves, Arg::of_int(0)}), second = b.call("getitem", {halves, Arg::of_int(1)});
  return b.call("aten.mul.Tensor", {first, b.call("aten.sigmoid.default", {second})});
}

// dropout1d/2d/3d, alpha_dropout, feature_alpha_dropout: the identity in eval mode or with p=0.
Arg f_feature_dropout(TorchLowering&, const PyArgs& a) {
  if (a["p"].number() < 0 || a["p"].number() > 1)
    throw std::invalid_argument(a.fn + ": dropout probability has to be between 0 and 1, but got " + std::to_string(a["p"].number()));
  if (is_true(a["training"]) && a["p"].number() != 0) unsupported(a.fn, "training mode");
  return a["input"];
}

Arg f_embedding(TorchLowering& b, const PyArgs& a) {
  const Arg weight = a["weight"];
  int64_t padding = -1;
  if (!a.none("padding_idx")) {
    const int64_t n = b.meta(weight).shape.at(0);
    padding = a["padding_idx"].i;
    if (padding >= n || padding < -n) throw std::invalid_argument("embedding: Padding_idx must be within num_embeddings");
    if (padding < 0) padding += n;
  }
  if (!a.none("max_norm")) unsupported("embedding", "max_norm (it renormalizes the weight in place)");
  return b.call("aten.embedding.default", {weight, a["input"], Arg::of_int(padding), a["scale_grad_by_freq"], a["sparse"]});
}

Arg max_pool(TorchLowering& b, const PyArgs& a, int dims) {
  const std::string d = std::to_string(dims);
  const bool indices = is_true(a["return_indices"]);
  if (indices && dims == 1) unsupported(a.fn, "return_indices=True");
  const Arg stride = a.none("stride") ? Arg::of_ints({}) : a["stride"];
  return b.call("aten.max_pool" + d + "d" + (indices ? "_with_indices" : "") + ".default",
                {a["input"], a["kernel_size"], stride, a["padding"], a["dilation"], a["ceil_mode"]});
}
Arg f_max_pool1d(TorchLowering& b, const PyArgs& a) { return max_pool(b, a, 1); }
Arg f_max_pool2d(TorchLowering& b, const PyArgs& a) { return max_pool(b, a, 2); }
Arg f_max_pool3d(TorchLowering& b, const PyArgs& a) { return max_pool(b, a, 3); }

// adaptive_avg_poolNd: an int for every dimension, None keeps the input's size.
Arg adaptive_avg_pool(TorchLowering& b, const PyArgs& a, int dims) {
  const Arg x = a["input"];
  const Shape& s = b.meta(x).shape;
  std::vector<int64_t> out;
  const Arg& o = a["output_size"];
  for (int i = 0; i < dims; ++i) {
    const Arg e = o.kind == Arg::Kind::list ? (o.list.size() == size_t(dims) ? o.list[static_cast<size_t>(i)] : Arg::none()) : o;
    if (o.kind == Arg::Kind::list && o.list.size() != size_t(dims))
      throw std::invalid_argument(a.fn + ": output_size must have " + std::to_string(dims) + " elements");
    out.push_back(e.is_none() ? s.at(s.size() - static_cast<size_t>(dims) + static_cast<size_t>(i)) : e.i);
  }
  return b.call("aten.adaptive_avg_pool" + std::to_string(dims) + "d.default", {x, Arg::of_ints(out)});
}
Arg f_adaptive_avg_pool2d(TorchLowering& b, const PyArgs& a) { return adaptive_avg_pool(b, a, 2); }
Arg f_adaptive_avg_pool3d(TorchLowering& b, const PyArgs& a) { return adaptive_avg_pool(b, a, 3); }

double finfo_eps(DType t) {
  switch (t) {
    case DType::f64:
    case DType::c128: return 2.220446049250313e-16;
    case DType::bf16: return 0.0078125;
    case DType::f16: return 0.0009765625;
    default: return 1.1920928955078125e-07;
  }
}

// rms_norm as ATen's composite: x * rsqrt(mean(x^2 over the normalized dims) + eps) * weight.
Arg f_rms_norm(TorchLowering& b, const PyArgs& a) {
  const Arg x = a["input"];
  const int64_t r = rank(b, x), n = static_cast<int64_t>(a["normalized_shape"].ints().size());
  if (n > r) throw std::invalid_argument("rms_norm: normalized_shape has more dimensions than the input");
  std::vector<int64_t> dims;
  for (int64_t d = r - n; d < r; ++d) dims.push_back(d);
  const double eps = a.none("eps") ? finfo_eps(b.meta(x).dtype) : a["eps"].number();
  const Arg sq = b.call("aten.pow.Tensor_Scalar", {x, Arg::of_int(2)});
  const Arg mean = b.call("aten.mean.dim", {sq, Arg::of_ints(dims), Arg::of_bool(true)});
  const Arg inv = b.call("aten.rsqrt.default", {b.call("aten.add.Tensor", {mean, Arg::of_real(eps)})});
  Arg y = b.call("aten.mul.Tensor", {x, inv});
  if (!a.none("weight")) y = b.call("aten.mul.Tensor", {y, a["weight"]});
  return y;
}

// normalize: x / max(||x||_p over dim, eps), for p = 1 and 2.
Arg f_normalize(TorchLowering& b, const PyArgs& a) {
  const Arg x = a["input"];
  const double p = a["p"].number();
  if (p != 1 && p != 2) unsupported("normalize", "p=" + std::to_string(p) + " (p=1 and p=2 are)");
  const Arg dim = Arg::of_ints({a["dim"].i});
  Arg norm;
  if (p == 1) norm = b.call("aten.sum.dim_IntList", {b.call("aten.abs.default", {x}), dim, Arg::of_bool(true)});
  else norm = b.call("aten.sqrt.default", {b.call("aten.sum.dim_IntList", {b.call("aten.mul.Tensor", {x, x}), dim, Arg::of_bool(true)})});
  const Arg denom = b.call("aten.expand_as.default", {b.call("aten.clamp_min.default", {norm, a["eps"]}), x});
  return b.call("aten.div.Tensor", {x, denom});
}

// interpolate (and the deprecated upsample): nearest and bilinear of 4-D inputs.
Arg f_interpolate(TorchLowering& b, const PyArgs& a) {
  const Arg x = a["input"];
  const Shape& s = b.meta(x).shape;
  const int dims = static_cast<int>(s.size()) - 2;
  const std::string mode = a["mode"].s;
  if (dims < 1 || dims > 3)
    throw std::invalid_argument("Input Error: Only 3D, 4D and 5D input Tensors supported (got " + std::to_string(s.size()) +
                                "D) for the modes: nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact (got " + mode + ")");
  if (a.has("antialias") && is_true(a["antialias"])) unsupported("interpolate", "antialias=True");
  if (!a.none("align_corners") && (mode == "nearest" || mode == "area" || mode == "nearest-exact"))
    throw std::invalid_argument("align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear");
  if (!a.none("size") && !a.none("scale_factor")) throw std::invalid_argument("only one of size or scale_factor should be defined");
  if (a.none("size") && a.none("scale_factor")) throw std::invalid_argument("either size or scale_factor should be defined");
  auto per_dim = [&](const Arg& v) {
    std::vector<Arg> out;
    if (v.kind == Arg::Kind::list) {
      if (v.list.size() != size_t(dims)) throw std::invalid_argument("interpolate: expected " + std::to_string(dims) + " values per spatial dimension");
      out = v.list;
    } else {
      out.assign(static_cast<size_t>(dims), v);
    }
    return out;
  };
  Arg output_size = Arg::none(), scales = Arg::none();
  if (!a.none("size")) {
    output_size.kind = Arg::Kind::list;
    output_size.list = per_dim(a["size"]);
  } else {
    const std::vector<Arg> f = per_dim(a["scale_factor"]);
    if (a.has("recompute_scale_factor") && is_true(a["recompute_scale_factor"])) {  // upsample() has no such parameter
      std::vector<int64_t> o;
      for (int i = 0; i < dims; ++i) o.push_back(static_cast<int64_t>(std::floor(double(s[static_cast<size_t>(i) + 2]) * f[static_cast<size_t>(i)].number())));
      output_size = Arg::of_ints(o);
    } else {
      scales.kind = Arg::Kind::list;
      for (const Arg& v : f) scales.list.push_back(Arg::of_real(v.number()));
    }
  }
  if (dims == 2 && mode == "nearest") return b.call("aten.upsample_nearest2d.vec", {x, output_size, scales});
  if (dims == 2 && mode == "bilinear")
    return b.call("aten.upsample_bilinear2d.vec", {x, output_size, Arg::of_bool(is_true(a["align_corners"])), scales});
  unsupported("interpolate", "mode='" + mode + "' on a " + std::to_string(s.size()) + "-D input");
}

// scaled_dot_product_attention; with dropout_p > 0 as ATen's math path (_scaled_dot_product_attention_math)
// writes it: q*sqrt(scale) @ (k*sqrt(scale))^T, the mask (a bool mask as -inf where False, a
// causal one as tril), _safe_softmax (fully masked rows 0), dropout(p, train=True), @ v.
Arg f_sdpa(TorchLowering& b, const PyArgs& a) {
  if (is_true(a["is_causal"]) && !a.none("attn_mask"))
    throw std::invalid_argument("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True");
  if (a["dropout_p"].number() == 0)
    return b.call("aten.scaled_dot_product_attention.default", {a["query"], a["key"], a["value"], a["attn_mask"], a["dropout_p"], a["is_causal"]},
                  {{"scale", a["scale"]}, {"enable_gqa", a["enable_gqa"]}});
  if (is_true(a["enable_gqa"])) unsupported("scaled_dot_product_attention", "enable_gqa=True with dropout");
  const Arg q = a["query"], k = a["key"], v = a["value"];
  const Shape &qs = b.meta(q).shape, &ks = b.meta(k).shape;
  if (qs.size() < 2 || ks.size() < 2) throw std::invalid_argument("scaled_dot_product_attention: query and key need at least 2 dimensions");
  const double scale = a.none("scale") ? 1.0 / std::sqrt(double(qs.back())) : a["scale"].number();
  const Arg root = Arg::of_real(std::sqrt(scale));
  const Arg kt = b.call("aten.transpose.int", {k, Arg::of_int(-2), Arg::of_int(-1)});
  Arg attn = b.call("aten.matmul.default", {b.call("aten.mul.Tensor", {q, root}), b.call("aten.mul.Tensor", {kt, root})});
  Arg mask = a["attn_mask"];
  if (is_true(a["is_causal"])) {
    const Arg ones = b.call("aten.ones.default", {Arg::of_ints({qs[qs.size() - 2], ks[ks.size() - 2]})}, {{"dtype", Arg::of_string("torch.bool")}});
    mask = b.call("aten.tril.default", {ones});
  }
  if (mask.is_node()) {
    if (b.meta(mask).dtype == DType::b8)
      attn = b.call("aten.masked_fill.Scalar", {attn, b.call("aten.logical_not.default", {mask}), Arg::of_real(-INFINITY)});
    else
      attn = b.call("aten.add.Tensor", {attn, mask});
  }
  const Arg soft = b.call("aten.softmax.int", {attn, Arg::of_int(-1)});
  const Arg masked = b.call("aten.eq.Scalar", {attn, Arg::of_real(-INFINITY)});
  const Arg live = b.call("aten.any.dim", {b.call("aten.logical_not.default", {masked}), Arg::of_int(-1), Arg::of_bool(true)});
  attn = b.call("aten.where.ScalarSelf", {b.call("aten.logical_not.default", {live}), Arg::of_real(0.0), soft});
  attn = b.call("aten.dropout.default", {attn, a["dropout_p"], Arg::of_bool(true)});
  return b.call("aten.matmul.default", {attn, v});
}

// mse_loss and l1_loss with a weight, as torch/nn/functional.py writes them: the elementwise
// loss times the weight, its mean divided by the weights' sum.
Arg weighted_loss(TorchLowering& b, const PyArgs& a, const Arg& elementwise) {
  const Arg w = a["weight"];
  if (!w.is_node() || b.meta(w).shape != b.meta(a["input"]).shape) throw std::invalid_argument(a.fn + ": Weights and input must have the same size.");
  const Arg l = b.call("aten.mul.Tensor", {elementwise, w});
  const int64_t r = a["reduction"].i;
  if (r == 0) return l;
  const Arg sum = b.call("aten.sum.default", {l});
  return r == 2 ? sum : b.call("aten.div.Tensor", {sum, b.call("aten.sum.default", {w})});
}

Arg f_l1_loss(TorchLowering& b, const PyArgs& a) {
  const Arg d = b.call("aten.abs.default", {b.call("aten.sub.Tensor", {a["input"], a["target"]})});
  if (!a.none("weight")) return weighted_loss(b, a, d);
  const int64_t r = a["reduction"].i;
  return r == 0 ? d : b.call(r == 2 ? "aten.sum.default" : "aten.mean.default", {d});
}

Arg f_mse_loss(TorchLowering& b, const PyArgs& a) {
  if (!a.none("weight"))
    return weighted_loss(b, a, b.call("aten.pow.Tensor_Scalar", {b.call("aten.sub.Tensor", {a["input"], a["target"]}), Arg::of_int(2)}));
  return b.call("aten.mse_loss.default", {a["input"], a["target"], a["reduction"]});
}

// nll_loss as ATen's nll_loss_nd: (C) and (N, C) inputs as they are; (N, C, d1, ...) with the
// classes moved last and the positions folded into the batch ([N * d1 * ..., C], the target
// [N * d1 * ...]), the loss per position viewed back as (N, d1, ...) where nothing reduces it
// (nll_loss2d's result, by the same sums: the mean divides by the weights of all positions).
Arg f_nll_loss(TorchLowering& b, const PyArgs& a) {
  const Arg x = a["input"], t = a["target"];
  const Shape xs = b.meta(x).shape, ts = b.meta(t).shape;
  if (xs.empty()) throw std::invalid_argument("nll_loss: Expected 1 or more dimensions (got 0)");
  if (xs.size() != 1 && (ts.empty() || xs[0] != ts[0]))
    throw std::invalid_argument("nll_loss: Expected input batch_size (" + std::to_string(xs[0]) + ") to match target batch_size (" +
                                std::to_string(ts.empty() ? 0 : ts[0]) + ").");
  if (xs.size() <= 2) return b.call("aten.nll_loss.default", {x, t, a["weight"], a["reduction"], a["ignore_index"]});
  Shape per_position = {xs[0]};
  per_position.insert(per_position.end(), xs.begin() + 2, xs.end());
  if (ts != per_position) throw std::invalid_argument("nll_loss: Expected target size " + shape_str(per_position) + ", got " + shape_str(ts));
  std::vector<int64_t> perm = {0};
  for (int64_t d = 2; d < static_cast<int64_t>(xs.size()); ++d) perm.push_back(d);
  perm.push_back(1);
  const Arg rows = b.call("aten.reshape.default", {b.call("aten.permute.default", {x, Arg::of_ints(perm)}), Arg::of_ints({numel_of(per_position), xs[1]})});
  const Arg flat_t = b.call("aten.reshape.default", {t, Arg::of_ints({numel_of(per_position)})});
  const Arg l = b.call("aten.nll_loss.default", {rows, flat_t, a["weight"], a["reduction"], a["ignore_index"]});
  return a["reduction"].i == 0 ? b.call("aten.view.default", {l, Arg::of_ints(per_position)}) : l;
}

Arg f_grid_sample(TorchLowering& b, const PyArgs& a) {
  static const std::map<std::string, int64_t> modes = {{"bilinear", 0}, {"nearest", 1}, {"bicubic", 2}};
  static const std::map<std::string, int64_t> pads = {{"zeros", 0}, {"border", 1}, {"reflection", 2}};
  const auto m = modes.find(a["mode"].s);
  const auto p = pads.find(a["padding_mode"].s);
  if (m == modes.end()) throw std::invalid_argument("nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '" + a["mode"].s + "'");
  if (p == pads.end()) throw std::invalid_argument("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', but got: '" + a["padding_mode"].s + "'");
  return b.call("aten.grid_sampler_2d.default", {a["input"], a["grid"], Arg::of_int(m->second), Arg::of_int(p->second),
                                                  Arg::of_bool(is_true(a["align_corners"]))});
}

// torch.nn.functional, PyTorch 2.11's signatures and defaults (torch/nn/functional.py).
const std::vector<PyFunction>& functional_table() {
  static const std::vector<PyFunction> t = {
      {"relu(input, inplace=False)", "aten.relu.default(input)"},
      {"relu6(input, inplace=False)", "aten.relu6.default(input)"},
      {"elu(input, alpha=1.0, inplace=False)", "aten.elu.default(input, alpha)"},
      {"selu(input, inplace=False)", "aten.elu.default(input, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946)"},
      {"celu(input, alpha=1.0, inplace=False)", nullptr, f_celu},
      {"leaky_relu(input, negative_slope=0.01, inplace=False)", "aten.leaky_relu.default(input, negative_slope)"},
      {"hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False)", "aten.hardtanh.default(input, min_val, max_val)"},
      {"hardswish(input, inplace=False)", "aten.hardswish.default(input)"},
      {"hardsigmoid(input, inplace=False)", "aten.hardsigmoid.default(input)"},
      {"silu(input, inplace=False)", "aten.silu.default(input)"},
      {"mish(input, inplace=False)", "aten.mish.default(input)"},
      {"gelu(input, approximate='none')", "aten.gelu.default(input, approximate=approximate)"},
      {"softplus(input, beta=1.0, threshold=20.0)", "aten.softplus.default(input, beta, threshold)"},
      {"sigmoid(input)", "aten.sigmoid.default(input)"},
      {"tanh(input)", "aten.tanh.default(input)"},
      {"softmax(input, dim=None, _stacklevel=3, dtype=None)", nullptr, f_softmax},
      {"softmin(input, dim=None, _stacklevel=3, dtype=None)", nullptr, f_softmin},
      {"log_softmax(input, dim=None, _stacklevel=3, dtype=None)", nullptr, f_log_softmax},
      {"glu(input, dim=-1)", nullptr, f_glu},
      {"dropout(input, p=0.5, training=True, inplace=False)", "aten.dropout.default(input, p, training)"},
      {"dropout1d(input, p=0.5, training=True, inplace=False)", nullptr, f_feature_dropout},
      {"dropout2d(input, p=0.5, training=True, inplace=False)", nullptr, f_feature_dropout},
      {"dropout3d(input, p=0.5, training=True, inplace=False)", nullptr, f_feature_dropout},
      {"alpha_dropout(input, p=0.5, training=False, inplace=False)", nullptr, f_feature_dropout},
      {"feature_alpha_dropout(input, p=0.5, training=False, inplace=False)", nullptr, f_feature_dropout},
      {"embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False)", nullptr,
       f_embedding},
      {"linear(input, weight, bias=None)", "aten.linear.default(input, weight, bias)"},
      {"conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1)", "aten.conv1d(input, weight, bias, stride, padding, dilation, groups)"},
      {"conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1)", "aten.conv2d(input, weight, bias, stride, padding, dilation, groups)"},
      {"conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1)", "aten.conv3d(input, weight, bias, stride, padding, dilation, groups)"},
      {"conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1)",
       "aten.conv_transpose1d.default(input, weight, bias, stride, padding, output_padding, groups, dilation)"},
      {"conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1)",
       "aten.conv_transpose2d.input(input, weight, bias, stride, padding, output_padding, groups, dilation)"},
      {"conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1)",
       "aten.conv_transpose3d.input(input, weight, bias, stride, padding, output_padding, groups, dilation)"},
      {"max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False)", nullptr, f_max_pool1d},
      {"max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False)", nullptr, f_max_pool2d},
      {"max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False)", nullptr, f_max_pool3d},
      {"avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True)",
       "aten.avg_pool1d.default(input, kernel_size, stride, padding, ceil_mode, count_include_pad)"},
      {"avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None)",
       "aten.avg_pool2d.default(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)"},
      {"avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None)",
       "aten.avg_pool3d.default(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)"},
      {"adaptive_avg_pool1d(input, output_size)", "aten.adaptive_avg_pool1d.default(input, output_size)"},
      {"adaptive_avg_pool2d(input, output_size)", nullptr, f_adaptive_avg_pool2d},
      {"adaptive_avg_pool3d(input, output_size)", nullptr, f_adaptive_avg_pool3d},
      {"batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05)",
       "aten.batch_norm.default(input, weight, bias, running_mean, running_var, training, momentum, eps, True)"},
      {"instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True, momentum=0.1, eps=1e-05)",
       "aten.instance_norm.default(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, True)"},
      {"layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05)", "aten.layer_norm.default(input, normalized_shape, weight, bias, eps)"},
      {"group_norm(input, num_groups, weight=None, bias=None, eps=1e-05)", "aten.group_norm.default(input, num_groups, weight, bias, eps)"},
      {"rms_norm(input, normalized_shape, weight=None, eps=None)", nullptr, f_rms_norm},
      {"normalize(input, p=2.0, dim=1, eps=1e-12, out=None)", nullptr, f_normalize},
      {"pad(input, pad, mode='constant', value=None)", "aten.pad.default(input, pad, mode, value)"},
      {"interpolate(input, size=None, scale_factor=None, mode='nearest', align_corners=None, recompute_scale_factor=None, antialias=False)",
       nullptr, f_interpolate},
      {"upsample(input, size=None, scale_factor=None, mode='nearest', align_corners=None)", nullptr, f_interpolate},
      {"scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None, enable_gqa=False)",
       nullptr, f_sdpa},
      {"cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean', label_smoothing=0.0)",
       "aten.cross_entropy_loss.default(input, target, weight, reduction, ignore_index, label_smoothing)"},
      {"nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean')", nullptr, f_nll_loss},
      {"mse_loss(input, target, size_average=None, reduce=None, reduction='mean', weight=None)", nullptr, f_mse_loss},
      {"l1_loss(input, target, size_average=None, reduce=None, reduction='mean', weight=None)", nullptr, f_l1_loss},
      {"smooth_l1_loss(input, target, size_average=None, reduce=None, reduction='mean', beta=1.0)",
       "aten.smooth_l1_loss.default(input, target, reduction, beta)"},
      {"binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction='mean', pos_weight=None)",
       "aten.binary_cross_entropy_with_logits.default(input, target, weight, pos_weight, reduction)"},
      {"unfold(input, kernel_size, dilation=1, padding=0, stride=1)", "aten.im2col.default(input, kernel_size, dilation, padding, stride)"},
      {"fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1)",
       "aten.col2im.default(input, output_size, kernel_size, dilation, padding, stride)"},
      {"grid_sample(input, grid, mode='bilinear', padding_mode='zeros', align_corners=None)", nullptr, f_grid_sample},
  };
  return t;
}

// --- Tensor methods Python defines (torch/_tensor.py, python_variable_methods.cpp) -------------

Arg convert(TorchLowering& b, const Arg& x, DType to, bool copy = false) {
  if (b.meta(x).dtype == to && !copy) return x;  // PyTorch's to() returns self when nothing changes
  return b.call("aten.to.dtype", {x, Arg::of_string(dtype_arg(to)), Arg::of_bool(false), Arg::of_bool(copy)});
}
Arg m_cast(TorchLowering& b, const PyArgs& a) {
  static const std::map<std::string, DType> types = {{"float", DType::f32}, {"double", DType::f64}, {"half", DType::f16},
                                                     {"bfloat16", DType::bf16}, {"long", DType::i64}, {"int", DType::i32},
                                                     {"bool", DType::b8}, {"byte", DType::u8}};
  return convert(b, a["self"], types.at(a.fn));
}
// Tensor.to: to(device=None, dtype=None, non_blocking=False, copy=False), to(dtype, non_blocking=False,
// copy=False), to(tensor, non_blocking=False, copy=False); devices are one here.
Arg m_to(TorchLowering& b, const std::vector<Arg>& pos, const PyKeywords& kw) {
  std::optional<DType> dtype;
  bool copy = false;
  auto bad = [&]() { return std::invalid_argument("to() received an invalid combination of arguments - got " + describe_call(pos, kw)); };
  size_t i = 1;
  for (; i < pos.size() && i < 3 && pos[i].kind != Arg::Kind::boolean; ++i) {  // device, dtype or tensor
    if (is_dtype(pos[i])) dtype = *dtype_from_name(pos[i].s);
    else if (pos[i].is_node()) dtype = b.meta(pos[i]).dtype;
    else if (pos[i].kind != Arg::Kind::string && !pos[i].is_none()) throw bad();
  }
  for (size_t k = 0; i < pos.size(); ++i, ++k) {  // non_blocking, copy
    if (pos[i].kind != Arg::Kind::boolean || k > 1) throw bad();
    if (k == 1) copy = pos[i].b;
  }
  for (const auto& entry : kw) {
    if (entry.first == "dtype" && !entry.second.is_none()) {
      if (!is_dtype(entry.second)) throw bad();
      dtype = *dtype_from_name(entry.second.s);
    } else if (entry.first == "copy") {
      copy = is_true(entry.second);
    } else if (entry.first != "dtype" && entry.first != "device" && entry.first != "non_blocking" && entry.first != "memory_format") {
      throw std::invalid_argument("to() got an unexpected keyword argument '" + entry.first + "'");
    }
  }
  const Arg x = pos.at(0);
  if (!dtype) return copy ? b.call("aten.clone.default", {x}) : x;
  return convert(b, x, *dtype, copy);
}
Arg m_type(TorchLowering& b, const PyArgs& a) {
  if (a.none("dtype")) unsupported("type", "type() without a dtype (it returns a string)");
  if (!is_dtype(a["dtype"])) unsupported("type", "a type given as '" + a["dtype"].s + "'");
  return convert(b, a["self"], *dtype_from_name(a["dtype"].s));
}
Arg m_identity(TorchLowering&, const PyArgs& a) { return a["self"]; }
Arg m_contiguous(TorchLowering& b, const PyArgs& a) { return b.call("aten.clone.default", {a["self"]}); }
Arg m_size(TorchLowering& b, const PyArgs& a) {
  const Shape& s = b.meta(a["self"]).shape;
  if (a.none("dim")) return Arg::of_ints(s);
  const int64_t r = static_cast<int64_t>(s.size()), d = a["dim"].i < 0 ? a["dim"].i + r : a["dim"].i;
  if (d < 0 || d >= r)
    throw std::invalid_argument("Dimension out of range (expected to be in range of [" + std::to_string(-r) + ", " +
                                std::to_string(r - 1) + "], but got " + std::to_string(a["dim"].i) + ")");
  return Arg::of_int(s[static_cast<size_t>(d)]);
}
Arg m_dim(TorchLowering& b, const PyArgs& a) { return Arg::of_int(rank(b, a["self"])); }
Arg m_numel(TorchLowering& b, const PyArgs& a) {
  int64_t n = 1;
  for (int64_t d : b.meta(a["self"]).shape) n *= d;
  return Arg::of_int(n);
}
Arg m_element_size(TorchLowering& b, const PyArgs& a) { return Arg::of_int(dtype_size(b.meta(a["self"]).dtype)); }
Arg m_is_floating_point(TorchLowering& b, const PyArgs& a) { return Arg::of_bool(dtype_is_float(b.meta(a["self"]).dtype)); }
Arg m_true(TorchLowering&, const PyArgs&) { return Arg::of_bool(true); }
// Tensor.split / torch.split: an int is split.Tensor, a list split_with_sizes.
Arg m_split(TorchLowering& b, const PyArgs& a) {
  const Arg& s = a["split_size"];
  if (s.kind == Arg::Kind::list) return b.call("aten.split_with_sizes.default", {a["self"], s, a["dim"]});
  return b.call("aten.split.Tensor", {a["self"], s, a["dim"]});
}
Arg m_zero(TorchLowering& b, const PyArgs& a) { return b.call("aten.fill.Scalar", {a["self"], Arg::of_int(0)}); }
Arg m_item(TorchLowering&, const PyArgs&) { unsupported("item", "a tensor's value as a Python number (data-dependent)"); }
// std: the square root of var, by the same overloads (std.correction, std.dim).
Arg std_of(TorchLowering& b, const std::vector<Arg>& pos, const PyKeywords& kw, bool method) {
  return b.call("aten.sqrt.default", {call_aten(b, "var", pos, kw, method)});
}

// torch.norm / Tensor.norm (torch/functional.py, torch/_tensor.py): a number p (None: 2) is
// linalg.vector_norm(p); 'fro' over at most two dimensions (or all of them) vector_norm(2); the
// rest is linalg.matrix_norm: 'nuc' (singular values) is not supported, 'fro' over more dimensions
// and other strings are its errors.
Arg t_norm(TorchLowering& b, const PyArgs& a) {
  const Arg x = a.has("input") ? a["input"] : a["self"];
  const Arg &p = a["p"], &dim = a["dim"];
  if (!dim.is_none() && !is_int(dim) && (dim.kind != Arg::Kind::list || is_slice(dim)))
    throw std::invalid_argument("norm(): argument 'dim' must be an int, a tuple of ints or None, not " + kind_name(dim));
  const Arg dims = is_int(dim) ? Arg::of_ints({dim.i}) : dim;
  Arg ord;
  if (p.kind == Arg::Kind::string && !is_dtype(p)) {
    if (p.s == "nuc") unsupported("norm", "p='nuc' (the nuclear norm, linalg.matrix_norm's sum of singular values)");
    if (p.s != "fro") throw std::invalid_argument("linalg.matrix_norm: Order " + p.s + " not supported.");
    if (dims.kind == Arg::Kind::list && dims.list.size() > 2)
      throw std::invalid_argument("linalg.matrix_norm: dim must be a 2-tuple. Got " + std::to_string(dims.list.size()) + " dimensions");
    ord = Arg::of_int(2);
  } else if (p.is_none()) {
    ord = Arg::of_real(2.0);
  } else if (p.is_number() && p.kind != Arg::Kind::boolean) {
    ord = p;
  } else {
    throw std::invalid_argument("norm(): argument 'p' must be a number, 'fro', 'nuc' or None, not " + kind_name(p));
  }
  PyKeywords kw;
  if (!a.none("dtype")) kw.emplace_back("dtype", a["dtype"]);
  return b.call("aten.linalg_vector_norm.default", {x, ord, dims, a["keepdim"]}, kw);
}

const std::vector<PyFunction>& method_table() {
  static const std::vector<PyFunction> t = {
      {"float(self, memory_format=torch.preserve_format)", nullptr, m_cast},
      {"double(self, memory_format=torch.preserve_format)", nullptr, m_cast},
      {"half(self, memory_format=torch.preserve_format)", nullptr, m_cast},
      {"bfloat16(self, memory_format=torch.preserve_format)", nullptr, m_cast},
      {"long(self, memory_format=torch.preserve_format)", nullptr, m_cast},
      {"int(self, memory_format=torch.preserve_format)", nullptr, m_cast},
      {"bool(self, memory_format=torch.preserve_format)", nullptr, m_cast},
      {"byte(self, memory_format=torch.preserve_format)", nullptr, m_cast},
      {"type(self, dtype=None, non_blocking=False)", nullptr, m_type},
      {"cpu(self, memory_format=torch.preserve_format)", nullptr, m_identity},
      {"cuda(self, device=None, non_blocking=False, memory_format=torch.preserve_format)", nullptr, m_identity},
      {"requires_grad_(self, requires_grad=True)", nullptr, m_identity},
      {"contiguous(self, memory_format=torch.contiguous_format)", nullptr, m_contiguous},
      {"size(self, dim=None)", nullptr, m_size},
      {"dim(self)", nullptr, m_dim},
      {"ndimension(self)", nullptr, m_dim},
      {"numel(self)", nullptr, m_numel},
      {"nelement(self)", nullptr, m_numel},
      {"element_size(self)", nullptr, m_element_size},
      {"is_floating_point(self)", nullptr, m_is_floating_point},
      {"is_contiguous(self, memory_format=torch.contiguous_format)", nullptr, m_true},
      {"split(self, split_size, dim=0)", nullptr, m_split},
      {"zero_(self)", nullptr, m_zero},
      {"item(self)", nullptr, m_item},
      {"norm(self, p='fro', dim=None, keepdim=False, dtype=None)", nullptr, t_norm},
  };
  return t;
}

// --- torch.* functions Python defines (torch/functional.py, torch/_tensor_str ...) -------------

// torch.tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False): the values
// as scalar_tensors stacked (small constants, as Dynamo leaves them), an empty one as full.
void flatten_data(const Arg& d, Shape& shape, size_t depth, std::vector<Arg>& out) {
  if (d.kind == Arg::Kind::list && !is_slice(d)) {
    if (shape.size() <= depth) shape.push_back(static_cast<int64_t>(d.list.size()));
    else if (shape[depth] != static_cast<int64_t>(d.list.size()))
      throw std::invalid_argument("tensor: expected sequence of length " + std::to_string(shape[depth]) + " at dim " + std::to_string(depth) +
                                  " (got " + std::to_string(d.list.size()) + ")");
    for (const Arg& x : d.list) flatten_data(x, shape, depth + 1, out);
    return;
  }
  if (!d.is_number()) throw std::invalid_argument("tensor: could not infer dtype of " + kind_name(d));
  out.push_back(d);
}
// The type torch.tensor infers for the values: bool if all are, float32 if one is a float, else int64.
DType infer_data_dtype(const std::vector<Arg>& values) {
  if (values.empty()) return DType::f32;
  bool all_bool = true, any_real = false;
  for (const Arg& v : values) {
    all_bool = all_bool && v.kind == Arg::Kind::boolean;
    any_real = any_real || v.kind == Arg::Kind::real;
  }
  return all_bool ? DType::b8 : any_real ? DType::f32 : DType::i64;
}
Arg tensor_from_data(TorchLowering& b, const Shape& shape, const std::vector<Arg>& values, DType dt) {
  const Arg dtype = Arg::of_string(dtype_arg(dt));
  if (values.empty()) return b.call("aten.full.default", {Arg::of_ints(shape), Arg::of_int(0)}, {{"dtype", dtype}});
  if (values.size() > 4096) unsupported("tensor", "a constant of more than 4096 values");
  std::vector<Arg> scalars;
  for (const Arg& v : values) scalars.push_back(b.call("aten.scalar_tensor.default", {v}, {{"dtype", dtype}}));
  if (shape.empty()) return scalars[0];
  Arg l;
  l.kind = Arg::Kind::list;
  l.list = scalars;
  const Arg flat = b.call("aten.stack.default", {l});
  return shape.size() == 1 ? flat : b.call("aten.view.default", {flat, Arg::of_ints(shape)});
}
Arg t_tensor(TorchLowering& b, const PyArgs& a) {
  Shape shape;
  std::vector<Arg> values;
  flatten_data(a["data"], shape, 0, values);
  DType dt = infer_data_dtype(values);
  if (!a.none("dtype")) {
    if (!is_dtype(a["dtype"])) throw std::invalid_argument("tensor(): argument 'dtype' must be torch.dtype, not " + kind_name(a["dtype"]));
    dt = *dtype_from_name(a["dtype"].s);
  }
  return tensor_from_data(b, shape, values, dt);
}
// A sequence in an index as sequenceToVariable makes it (indexing_tensor_from_data): an int64
// tensor; of bools a mask, given here as the int64 positions of its True values, one tensor per
// dimension (what aten.index computes of a mask; the mask is a constant, so they are known).
std::vector<Arg> index_tensors(TorchLowering& b, const Arg& data) {
  Shape shape;
  std::vector<Arg> values;
  flatten_data(data, shape, 0, values);
  if (values.empty() || infer_data_dtype(values) != DType::b8) return {tensor_from_data(b, shape, values, DType::i64)};
  std::vector<std::vector<Arg>> coords(shape.size());
  const Shape strides = contiguous_strides(shape);
  for (size_t i = 0; i < values.size(); ++i) {
    if (!values[i].b) continue;
    for (size_t d = 0; d < shape.size(); ++d) coords[d].push_back(Arg::of_int(static_cast<int64_t>(i) / strides[d] % shape[d]));
  }
  std::vector<Arg> out;
  for (const auto& c : coords) out.push_back(tensor_from_data(b, {static_cast<int64_t>(c.size())}, c, DType::i64));
  return out;
}
Arg t_split(TorchLowering& b, const PyArgs& a) {
  PyArgs m = a;
  m.v["self"] = a["tensor"];
  m.v["split_size"] = a["split_size_or_sections"];
  return m_split(b, m);
}

const std::vector<PyFunction>& torch_python_table() {
  static const std::vector<PyFunction> t = {
      {"tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False)", nullptr, t_tensor},
      {"split(tensor, split_size_or_sections, dim=0)", nullptr, t_split},
      {"norm(input, p='fro', dim=None, keepdim=False, out=None, dtype=None)", nullptr, t_norm},
  };
  return t;
}

// Python names of ATen ops (torch's aliases, numpy's spellings).
const std::map<std::string, std::string>& aliases() {
  static const std::map<std::string, std::string> m = {
      {"absolute", "abs"}, {"arccos", "acos"}, {"arcsin", "asin"}, {"arctan", "atan"}, {"arccosh", "acosh"},
      {"arcsinh", "asinh"}, {"arctanh", "atanh"}, {"arctan2", "atan2"}, {"clip", "clamp"}, {"concat", "cat"},
      {"concatenate", "cat"}, {"divide", "div"}, {"true_divide", "div"}, {"multiply", "mul"}, {"subtract", "sub"},
      {"negative", "neg"}, {"greater", "gt"}, {"greater_equal", "ge"}, {"less", "lt"}, {"less_equal", "le"},
      {"not_equal", "ne"}, {"swapaxes", "transpose"}, {"swapdims", "transpose"}, {"fix", "trunc"},
      {"special.expit", "sigmoid"}, {"special.erf", "erf"}, {"special.expm1", "expm1"}, {"special.log1p", "log1p"},
      {"special.exp2", "exp2"}, {"special.softmax", "softmax"}, {"special.log_softmax", "log_softmax"},
      {"nn.functional.tanh", "tanh"}, {"nn.functional.sigmoid", "sigmoid"}, {"linalg.vector_norm", "linalg_vector_norm"},
  };
  return m;
}

// torch.nn.functional names that are the ATen function itself (F.gelu is torch._C._nn.gelu).
bool functional_is_aten(const std::string& n) {
  static const std::set<std::string> s = {"gelu", "softplus", "pad", "one_hot", "pixel_shuffle", "pixel_unshuffle", "logsigmoid",
                                          "hardshrink", "softshrink", "cosine_similarity", "pdist", "pairwise_distance",
                                          "bilinear", "channel_shuffle"};
  return s.count(n) > 0;
}

const PyFunction* find_py(const std::vector<PyFunction>& table, const std::string& name) {
  for (const PyFunction& f : table) {
    const std::string sig = f.signature;
    if (sig.compare(0, sig.find('('), name) == 0 && sig.find('(') == name.size()) return &f;
  }
  return nullptr;
}

// Every table's signatures, parsed once (a static's initializer: thread-safe, as importers may
// run on several threads).
const std::map<const PyFunction*, PySignature>& parsed_signatures() {
  static const std::map<const PyFunction*, PySignature> m = [] {
    std::map<const PyFunction*, PySignature> by;
    for (const auto* table : {&functional_table(), &method_table(), &torch_python_table()})
      for (const PyFunction& f : *table) by.emplace(&f, parse_signature(f.signature));
    return by;
  }();
  return m;
}

TorchValue run_py(TorchLowering& b, const PyFunction& f, const std::string& fn, const std::vector<Arg>& pos, const PyKeywords& kw) {
  const auto it = parsed_signatures().find(&f);
  if (it == parsed_signatures().end()) throw std::invalid_argument(fn + "(): internal: a function of no table");
  PyArgs a = bind_python(it->second, fn, pos, kw);
  reduction_to_enum(a);
  TorchValue r;
  r.mutates_self = a.has("inplace") && is_true(a["inplace"]);
  if (r.mutates_self) r.self = a.has("input") ? a["input"] : a.has("self") ? a["self"] : Arg::none();
  r.value = f.custom ? f.custom(b, a) : lower_spec(b, f.aten, a);
  return r;
}

// An in-place spelling (add_, relu_) of an ATen name: the functional name.
std::optional<std::string> inplace_base(const std::string& n) {
  if (n.size() < 2 || n.back() != '_' || n.rfind("__", 0) == 0) return std::nullopt;
  return n.substr(0, n.size() - 1);
}

// torch.X, torch.Tensor.X and Tensor methods by an ATen name (or its alias), in-place forms too.
std::optional<TorchValue> lower_aten_name(TorchLowering& b, std::string name, const std::vector<Arg>& pos, const PyKeywords& kw, bool method) {
  TorchValue r;
  if (!has_aten(name) && !aliases().count(name)) {
    auto base = inplace_base(name);
    if (!base || (!has_aten(*base) && !aliases().count(*base))) return std::nullopt;
    name = *base;
    r.mutates_self = true;
  }
  if (auto a = aliases().find(name); a != aliases().end()) name = a->second;
  if (name == "std") r.value = std_of(b, pos, kw, method);
  else r.value = call_aten(b, name, pos, kw, method);
  return r;
}

}  // namespace

Arg py_slice(Arg start, Arg stop, Arg step) {
  Arg s;
  s.kind = Arg::Kind::list;
  s.list = {Arg::of_string(kSlice), std::move(start), std::move(stop), std::move(step)};
  return s;
}
Arg py_ellipsis() { return Arg::of_string(kEllipsis); }

Arg py_list(Arg list) {
  Arg l;
  l.kind = Arg::Kind::list;
  l.list.push_back(Arg::of_string(kList));
  for (Arg& x : list.list) l.list.push_back(std::move(x));
  return l;
}

namespace {

// ScalarType's names, as PyTorch's messages print them.
const char* scalar_type_name(DType t) {
  switch (t) {
    case DType::f32: return "Float";
    case DType::f64: return "Double";
    case DType::i64: return "Long";
    case DType::i32: return "Int";
    case DType::b8: return "Bool";
    case DType::u8: return "Byte";
    case DType::bf16: return "BFloat16";
    case DType::f16: return "Half";
    case DType::c64: return "ComplexFloat";
    case DType::c128: return "ComplexDouble";
  }
  return "?";
}

// c10::canCast: no float into an integral (or bool) tensor, no number but a bool into a bool one.
bool can_cast(DType from, DType to) {
  if (dtype_is_float(from) && !dtype_is_float(to)) return false;
  return !(from != DType::b8 && to == DType::b8);
}

// The in-place forms that are views: they change self's shape, as they mean to.
bool inplace_view(const std::string& name) {
  static const std::set<std::string> s = {"unsqueeze_", "squeeze_", "t_", "transpose_", "swapdims_", "swapaxes_", "as_strided_"};
  return s.count(name) > 0;
}

// An in-place call writes its result into self, as ATen's in-place kernels do: the result must
// have self's shape (TensorIterator's check), and is cast to self's type where canCast allows
// (`bf16 += f32` stays bf16).
TorchValue write_back(TorchLowering& b, const std::string& fn, TorchValue r) {
  if (!r.mutates_self || !r.value.is_node()) return r;
  if (!r.self.is_node()) throw std::invalid_argument(fn + ": an in-place call needs the tensor it updates");
  if (r.value.node == r.self.node) return r;
  const TensorMeta &s = b.meta(r.self), &v = b.meta(r.value);
  if (s.shape != v.shape && !inplace_view(fn))
    throw std::invalid_argument(fn + ": output with shape " + shape_str(s.shape) + " doesn't match the broadcast shape " + shape_str(v.shape));
  if (s.dtype != v.dtype) {
    if (!can_cast(v.dtype, s.dtype))
      throw std::invalid_argument(fn + ": result type " + scalar_type_name(v.dtype) + " can't be cast to the desired output type " +
                                  scalar_type_name(s.dtype));
    r.value = b.call("prims.convert_element_type.default", {r.value, Arg::of_string(dtype_arg(s.dtype))});
  }
  return r;
}

TorchValue dispatch_torch_call(TorchLowering& b, const std::string& callee, std::vector<Arg> pos, PyKeywords kw) {
  for (const auto& entry : kw)
    if (entry.first == "out" && !entry.second.is_none()) unsupported(callee, "out=");
  auto strip = [&](const char* prefix, std::string& rest) {
    const size_t n = std::char_traits<char>::length(prefix);
    if (callee.compare(0, n, prefix) != 0) return false;
    rest = callee.substr(n);
    return true;
  };
  std::string name;
  // Calls with no effect on any tensor (torchvision's usage logging): nothing, no node.
  if (callee == "torch._C._log_api_usage_once" || callee == "torch._C._log_api_usage_metadata") return {Arg::none(), false, {}};
  // torch.functional re-exports torch.X (split, einsum, broadcast_tensors, meshgrid, norm, ...):
  // bound as torch.X is, unknown under its own name where torch.X is.
  if (strip("torch.functional.", name)) {
    try {
      return dispatch_torch_call(b, "torch." + name, std::move(pos), std::move(kw));
    } catch (const UnknownTorchFunction&) {
      throw UnknownTorchFunction(callee);
    }
  }
  if (strip("operator.", name)) {
    TorchValue r;
    if (name == "getitem" && pos.size() == 2) r.value = lower_getitem(b, pos[0], pos[1]);
    else if (name == "setitem" && pos.size() == 3 && kw.empty()) {  // `x[index] = value`: in place
      r.value = lower_setitem(b, pos[0], pos[1], pos[2]);
      r.mutates_self = true;
      r.self = pos[0];
    } else {
      static const std::map<std::string, std::string> symbols = {
          {"add", "+"}, {"sub", "-"}, {"mul", "*"}, {"truediv", "/"}, {"floordiv", "//"}, {"mod", "%"}, {"pow", "**"},
          {"matmul", "@"}, {"and_", "&"}, {"or_", "|"}, {"xor", "^"}, {"lt", "<"}, {"le", "<="}, {"gt", ">"},
          {"ge", ">="}, {"eq", "=="}, {"ne", "!="}, {"neg", "-"}, {"pos", "+"}, {"invert", "~"}, {"iadd", "+"},
          {"isub", "-"}, {"imul", "*"}, {"itruediv", "/"}, {"ifloordiv", "//"}, {"imod", "%"}, {"ipow", "**"},
          {"iand", "&"}, {"ior", "|"}, {"ixor", "^"}};
      const auto s = symbols.find(name);
      if (s == symbols.end() || !kw.empty()) throw UnknownTorchFunction(callee);
      r.value = lower_operator(b, s->second, pos);
      // `x += y` of a tensor: Tensor.__iadd__, in place (of numbers, Python's own `x = x + y`).
      r.mutates_self = name[0] == 'i' && name != "invert" && !pos.empty() && pos[0].is_node();
    }
    return r;
  }
  if (strip("torch.nn.functional.", name)) {
    if (const PyFunction* f = find_py(functional_table(), name)) return run_py(b, *f, name, pos, kw);
    if (auto base = inplace_base(name)) {  // F.relu_, F.elu_: the function with inplace=True
      if (const PyFunction* f = find_py(functional_table(), *base)) {
        TorchValue r = run_py(b, *f, *base, pos, kw);
        r.mutates_self = true;
        return r;
      }
    }
    if (aliases().count("nn.functional." + name)) name = "nn.functional." + name;
    else if (!functional_is_aten(name)) throw UnknownTorchFunction(callee);
    if (name == "logsigmoid") name = "log_sigmoid";
    if (auto r = lower_aten_name(b, name, pos, kw, false)) return *r;
    throw UnknownTorchFunction(callee);
  }
  if (strip("method.", name) || strip("torch.Tensor.", name)) {
    if (pos.empty() || !pos[0].is_node()) throw std::invalid_argument("Tensor." + name + " called without a tensor");
    if (name == "to") return {m_to(b, pos, kw), false};
    if (name == "std") return {std_of(b, pos, kw, true), false};
    if (const PyFunction* f = find_py(method_table(), name)) {
      TorchValue r = run_py(b, *f, name, pos, kw);
      r.mutates_self = r.mutates_self || name.back() == '_';  // zero_(): self holds the result
      return r;
    }
    if (auto r = lower_aten_name(b, name, pos, kw, true)) return *r;
    throw UnknownTorchFunction(callee);
  }
  if (strip("torch._C._nn.", name) || strip("torch._C._VariableFunctions.", name) || strip("torch.", name)) {
    if (const PyFunction* f = find_py(torch_python_table(), name)) return run_py(b, *f, name, pos, kw);
    if (name == "scaled_dot_product_attention") return run_py(b, *find_py(functional_table(), name), name, pos, kw);
    if (name == "einsum" || name == "broadcast_tensors") {  // (*operands): a list, or the operands themselves
      const size_t first = name == "einsum" ? 1 : 0;
      if (!(pos.size() == first + 1 && pos[first].kind == Arg::Kind::list)) {
        Arg l;
        l.kind = Arg::Kind::list;
        l.list.assign(pos.begin() + static_cast<long>(first), pos.end());
        pos.resize(first);
        pos.push_back(l);
      }
    }
    // torch.max(x) / torch.min(x): the whole tensor's, as amax / amin over every dimension.
    if ((name == "max" || name == "min") && pos.size() == 1 && kw.empty() && pos[0].is_node())
      return {b.call("aten.a" + name + ".default", {pos[0], Arg::of_ints({})}), false};
    if (auto r = lower_aten_name(b, name, pos, kw, false)) return *r;
    throw UnknownTorchFunction(callee);
  }
  throw UnknownTorchFunction(callee);
}

}  // namespace

TorchValue lower_torch_call(TorchLowering& b, const std::string& callee, std::vector<Arg> pos, PyKeywords kw) {
  // The tensor an in-place call updates: its first argument, by position or as input=/self=.
  Arg first = pos.empty() ? Arg::none() : pos[0];
  for (const auto& entry : kw)
    if (first.is_none() && (entry.first == "input" || entry.first == "self")) first = entry.second;
  TorchValue r = dispatch_torch_call(b, callee, std::move(pos), std::move(kw));
  if (r.mutates_self && r.self.is_none()) r.self = first;
  return write_back(b, callee.substr(callee.rfind('.') + 1), std::move(r));
}

// ---------------------------------------------------------------------------------------------
// Python operators
// ---------------------------------------------------------------------------------------------

std::string python_operator_name(const std::string& symbol, int operands) {
  if (operands == 1) return symbol == "-" ? "neg" : symbol == "+" ? "pos" : symbol == "~" ? "invert" : "";
  static const std::map<std::string, std::string> names = {
      {"+", "add"}, {"-", "sub"}, {"*", "mul"}, {"/", "truediv"}, {"//", "floordiv"}, {"%", "mod"}, {"**", "pow"},
      {"@", "matmul"}, {"&", "and_"}, {"|", "or_"}, {"^", "xor"}, {"<", "lt"}, {"<=", "le"}, {">", "gt"},
      {">=", "ge"}, {"==", "eq"}, {"!=", "ne"}};
  const auto it = names.find(symbol);
  return it == names.end() ? "" : it->second;
}

namespace {

// Both operands Python numbers (sizes the graph computes): Python's own arithmetic.
Arg number_operator(const std::string& s, const Arg& x, const Arg& y) {
  const bool ints = x.kind != Arg::Kind::real && y.kind != Arg::Kind::real;
  const double a = x.number(), c = y.number();
  if (s == "<") return Arg::of_bool(a < c);
  if (s == "<=") return Arg::of_bool(a <= c);
  if (s == ">") return Arg::of_bool(a > c);
  if (s == ">=") return Arg::of_bool(a >= c);
  if (s == "==") return Arg::of_bool(a == c);
  if (s == "!=") return Arg::of_bool(a != c);
  if (s == "/") {
    if (c == 0) throw std::invalid_argument("division by zero");
    return Arg::of_real(a / c);
  }
  if (ints) {
    const int64_t p = x.kind == Arg::Kind::integer ? x.i : x.b, q = y.kind == Arg::Kind::integer ? y.i : y.b;
    if ((s == "//" || s == "%") && q == 0) throw std::invalid_argument("integer division or modulo by zero");
    if (s == "+") return Arg::of_int(p + q);
    if (s == "-") return Arg::of_int(p - q);
    if (s == "*") return Arg::of_int(p * q);
    if (s == "//") return Arg::of_int(p / q - ((p % q != 0) && ((p < 0) != (q < 0))));
    if (s == "%") return Arg::of_int(((p % q) + q) % q);
    if (s == "**" && q >= 0) return Arg::of_int(static_cast<int64_t>(std::llround(std::pow(double(p), double(q)))));
  }
  if (s == "+") return Arg::of_real(a + c);
  if (s == "-") return Arg::of_real(a - c);
  if (s == "*") return Arg::of_real(a * c);
  if (s == "**") return Arg::of_real(std::pow(a, c));
  if (s == "//") return Arg::of_real(std::floor(a / c));
  if (s == "%") return Arg::of_real(a - std::floor(a / c) * c);
  throw std::invalid_argument("unsupported operand types for " + s + ": numbers");
}

}  // namespace

Arg lower_operator(TorchLowering& b, const std::string& s, const std::vector<Arg>& v) {
  if (v.size() == 1) {
    const Arg& x = v[0];
    if (!x.is_node()) {
      if (s == "-") return x.kind == Arg::Kind::real ? Arg::of_real(-x.f) : Arg::of_int(-static_cast<int64_t>(x.number()));
      if (s == "+") return x;
      if (s == "~" && x.kind == Arg::Kind::integer) return Arg::of_int(~x.i);
      throw std::invalid_argument("bad operand type for unary " + s + ": '" + kind_name(x) + "'");
    }
    if (s == "-") return b.call("aten.neg.default", {x});  // Tensor.__neg__
    if (s == "+") return x;                                 // __pos__: positive, the identity
    if (s == "~") return call_aten(b, "bitwise_not", {x}, {}, true);
    throw std::invalid_argument("unknown unary operator '" + s + "'");
  }
  if (v.size() != 2) throw std::invalid_argument("operator '" + s + "' takes two operands");
  Arg x = v[0], y = v[1];
  if (!x.is_node() && !y.is_node()) return number_operator(s, x, y);
  static const std::map<std::string, std::string> dunder = {
      {"+", "add"}, {"-", "sub"}, {"*", "mul"}, {"/", "div"}, {"//", "floor_divide"}, {"%", "remainder"},
      {"**", "pow"}, {"&", "__and__"}, {"|", "__or__"}, {"^", "__xor__"}, {"<", "lt"}, {"<=", "le"},
      {">", "gt"}, {">=", "ge"}, {"==", "eq"}, {"!=", "ne"}};
  if (s == "@") {
    if (!x.is_node() || !y.is_node()) throw std::invalid_argument("'@' takes two tensors");
    // 2-D is mm, 3-D bmm where the batch sizes agree (as matmul's decomposition picks); other
    // ranks, and batches that broadcast ([1, M, K] @ [B, K, N]), matmul itself.
    const int64_t ra = rank(b, x), rb = rank(b, y);
    if (ra == 2 && rb == 2) return b.call("aten.mm.default", {x, y});
    if (ra == 3 && rb == 3 && b.meta(x).shape[0] == b.meta(y).shape[0]) return b.call("aten.bmm.default", {x, y});
    return b.call("aten.matmul.default", {x, y});
  }
  const auto d = dunder.find(s);
  if (d == dunder.end()) throw std::invalid_argument("unknown operator '" + s + "'");
  if (!x.is_node()) {
    // The reflected forms (Tensor.__radd__, ...), as torch/_tensor.py defines them.
    static const std::map<std::string, std::string> mirrored = {{"<", ">"}, {"<=", ">="}, {">", "<"}, {">=", "<="}, {"==", "=="}, {"!=", "!="}};
    if (s == "+" || s == "*" || s == "&" || s == "|" || s == "^") return call_aten(b, d->second, {y, x}, {}, true);
    if (auto m = mirrored.find(s); m != mirrored.end()) return call_aten(b, dunder.at(m->second), {y, x}, {}, true);
    if (s == "-") return b.call("aten.sub.Tensor", {x, y});  // __rsub__: rsub(y, x) = x - y
    if (s == "/") return b.call("aten.mul.Tensor", {b.call("aten.reciprocal.default", {y}), x});  // __rdiv__: reciprocal() * other
    if (s == "**") return call_aten(b, "pow", {x, y});  // __rpow__: torch.pow(other, self)
    if (s == "//") return call_aten(b, "floor_divide", {x, y});
    if (s == "%") {  // __rmod__: torch.remainder(other, self), the number a wrapped scalar tensor
      const DType t = b.meta(y).dtype;
      const DType dt = dtype_is_float(t) ? t : x.kind == Arg::Kind::real ? DType::f32 : t == DType::b8 && x.kind == Arg::Kind::integer ? DType::i64 : t;
      const Arg wrapped = b.call("aten.scalar_tensor.default", {x}, {{"dtype", Arg::of_string(dtype_arg(dt))}});
      return b.call("aten.remainder.Tensor", {wrapped, y});
    }
    throw std::invalid_argument("unsupported operand types for " + s + ": '" + kind_name(x) + "' and 'Tensor'");
  }
  return call_aten(b, d->second, {x, y}, {}, true);
}

// ---------------------------------------------------------------------------------------------
// Indexing (torch/csrc/autograd/python_variable_indexing.cpp, applySlicing)
// ---------------------------------------------------------------------------------------------

namespace {

// One view applySlicing takes of the tensor: select, slice or unsqueeze, of `base`.
struct ViewStep {
  std::string op;  // "aten.select.int", "aten.slice.Tensor", "aten.unsqueeze.default"
  Arg base;
  std::vector<Arg> args;  // after the tensor: (dim, index), (dim, start, stop, step), (dim)
};
// What an index makes of a tensor before its tensor indices apply: the view, the views taken on
// the way (first first), and the tensor indices by the view's dimension they start at.
struct Slicing {
  Arg view;
  std::vector<ViewStep> steps;
  std::vector<std::pair<int64_t, Arg>> tensors;
};

Slicing apply_slicing(TorchLowering& b, const Arg& self, const Arg& index) {
  std::vector<Arg> items;
  if (is_py_list(index)) {
    // treatSequenceAsTuple: a list with a tensor, a sequence, a slice, None or Ellipsis in it is
    // a tuple; a short list of plain numbers (x[[0, 2]]) one index tensor.
    const std::vector<Arg> elems(index.list.begin() + 1, index.list.end());
    bool tuple = false;
    for (const Arg& e : elems) tuple = tuple || e.is_node() || e.kind == Arg::Kind::list || e.is_none() || is_ellipsis(e);
    Arg data;
    data.kind = Arg::Kind::list;
    data.list = elems;
    if (tuple && elems.size() < 32) items = elems;
    else items = {data};
  } else if (index.kind == Arg::Kind::list && !is_slice(index)) {
    items = index.list;
  } else {
    items = {index};
  }
  // A sequence inside the index is a tensor of its values (applySlicing's sequenceToVariable).
  {
    std::vector<Arg> converted;
    for (const Arg& it : items) {
      if (it.kind != Arg::Kind::list || is_slice(it)) converted.push_back(it);
      else for (const Arg& t : index_tensors(b, it)) converted.push_back(t);
    }
    items = std::move(converted);
  }
  // Dimensions the index names (ints, slices and tensors; a bool tensor its own rank).
  int64_t specified = 0;
  bool ellipsis = false;
  for (const Arg& it : items) {
    if (is_ellipsis(it)) {
      if (ellipsis) throw std::invalid_argument("an index can only have a single ellipsis ('...')");
      ellipsis = true;
    } else if (it.is_node()) {
      specified += b.meta(it).dtype == DType::b8 ? rank(b, it) : 1;
    } else if (!it.is_none()) {
      ++specified;
    }
  }
  const int64_t r = rank(b, self);
  if (specified > r)
    throw std::invalid_argument("too many indices for tensor of dimension " + std::to_string(r));
  Slicing s;
  Arg& x = s.view;
  x = self;
  auto view = [&](const char* op, std::vector<Arg> args) {
    std::vector<Arg> call_args = {x};
    call_args.insert(call_args.end(), args.begin(), args.end());
    s.steps.push_back({op, x, std::move(args)});
    x = b.call(op, std::move(call_args));
  };
  int64_t dim = 0;
  for (const Arg& it : items) {
    if (is_ellipsis(it)) {
      dim += r - specified;
    } else if (it.is_none()) {
      view("aten.unsqueeze.default", {Arg::of_int(dim)});
      ++dim;
    } else if (is_int(it)) {
      const int64_t n = b.meta(x).shape.at(static_cast<size_t>(dim));
      if (it.i >= n || it.i < -n)
        throw std::invalid_argument("index " + std::to_string(it.i) + " is out of bounds for dimension " + std::to_string(dim) +
                                    " with size " + std::to_string(n));
      view("aten.select.int", {Arg::of_int(dim), it});
    } else if (is_slice(it)) {
      const Arg &start = it.list[1], &stop = it.list[2], &step = it.list[3];
      if ((!start.is_none() && !is_int(start)) || (!stop.is_none() && !is_int(stop)) || (!step.is_none() && !is_int(step)))
        throw std::invalid_argument("slice indices must be integers or None");
      const int64_t st = step.is_none() ? 1 : step.i;
      if (st <= 0) throw std::invalid_argument("step must be greater than zero");
      const int64_t n = b.meta(x).shape.at(static_cast<size_t>(dim));
      const bool whole = (start.is_none() || start.i == 0) && (stop.is_none() || stop.i >= n) && st == 1;
      if (!whole) view("aten.slice.Tensor", {Arg::of_int(dim), start, stop, Arg::of_int(st)});
      ++dim;
    } else if (it.is_node()) {
      s.tensors.emplace_back(dim, it);
      dim += b.meta(it).dtype == DType::b8 ? rank(b, it) : 1;
    } else {
      throw std::invalid_argument("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got " +
                                  kind_name(it) + ")");
    }
  }
  return s;
}

Arg index_list(const std::vector<std::pair<int64_t, Arg>>& tensors) {
  Arg list;
  list.kind = Arg::Kind::list;
  list.list.assign(static_cast<size_t>(tensors.back().first + 1), Arg::none());
  for (const auto& t : tensors) list.list[static_cast<size_t>(t.first)] = t.second;
  return list;
}


// slicePrefix1sDims: the value without its leading dimensions of size 1 (a view).
Arg drop_leading_ones(TorchLowering& b, const Arg& v) {
  const Shape& s = b.meta(v).shape;
  size_t k = 0;
  while (k < s.size() && s[k] == 1) ++k;
  if (k == 0) return v;
  return b.call("aten.view.default", {v, Arg::of_ints(Shape(s.begin() + static_cast<long>(k), s.end()))});
}

// `sliced[mask] = value` (a bool mask the only tensor index): the positions of the mask's True
// values are data-dependent, so the value must be the same at each of them (its dimension for
// them 1 or absent); then it is where(mask, value, sliced), as Inductor's index_put_as_masked_fill.
Arg put_through_mask(TorchLowering& b, const Arg& sliced, int64_t d, Arg mask, Arg v) {
  const Shape xs = b.meta(sliced).shape, ms = b.meta(mask).shape;
  const size_t k = ms.size(), ud = static_cast<size_t>(d);
  if (k == 0) unsupported("setitem", "a 0-dimensional boolean index");
  for (size_t i = 0; i < k; ++i)
    if (ud + i >= xs.size() || ms[i] != xs[ud + i])
      throw std::invalid_argument("The shape of the mask " + shape_str(ms) + " at index " + std::to_string(i) +
                                  " does not match the shape of the indexed tensor " + shape_str(xs) + " at index " + std::to_string(ud + i));
  if (b.meta(mask).dtype != DType::b8) mask = b.call("prims.convert_element_type.default", {mask, Arg::of_string("torch.bool")});
  const Shape before(xs.begin(), xs.begin() + d), rest(xs.begin() + d + static_cast<long>(k), xs.end());
  // The indexing result is before + [count] + rest; the value broadcast to it with count 1.
  Shape result = before;
  result.push_back(1);
  result.insert(result.end(), rest.begin(), rest.end());
  const Shape vs = b.meta(v).shape;
  bool fits = vs.size() <= result.size();
  for (size_t i = 0; fits && i < vs.size(); ++i) {
    const int64_t want = result[result.size() - vs.size() + i];
    fits = vs[i] == 1 || vs[i] == want;
  }
  if (!fits) {
    if (vs.size() > rest.size() && vs.size() <= result.size() && vs[vs.size() - rest.size() - 1] != 1)
      unsupported("setitem", "a value of shape " + shape_str(vs) +
                                 " assigned through a boolean mask (the count of its True values is data-dependent; a value the same at every position is)");
    throw std::invalid_argument("shape mismatch: value tensor of shape " + shape_str(vs) + " cannot be broadcast to indexing result of shape " +
                                shape_str(result));
  }
  if (vs.size() > rest.size()) {  // the count's dimension (1) becomes the mask's k dimensions of 1
    Shape padded(result.size() - vs.size(), 1);
    padded.insert(padded.end(), vs.begin(), vs.end());
    Shape vv(padded.begin(), padded.begin() + d);
    vv.insert(vv.end(), k, 1);
    vv.insert(vv.end(), padded.begin() + d + 1, padded.end());
    v = b.call("aten.view.default", {v, Arg::of_ints(vv)});
  }
  Shape mv(before.size(), 1);
  mv.insert(mv.end(), ms.begin(), ms.end());
  mv.insert(mv.end(), rest.size(), 1);
  if (mv != ms) mask = b.call("aten.view.default", {mask, Arg::of_ints(mv)});
  return b.call("aten.where.self", {mask, v, sliced});
}

}  // namespace

Arg lower_getitem(TorchLowering& b, const Arg& self, const Arg& index) {
  if (self.kind == Arg::Kind::list) {  // a size list: x.size()[1]
    if (!is_int(index)) throw std::invalid_argument("a size list is indexed by an int");
    const int64_t n = static_cast<int64_t>(self.list.size()), i = index.i < 0 ? index.i + n : index.i;
    if (i < 0 || i >= n) throw std::invalid_argument("tuple index out of range");
    return self.list[static_cast<size_t>(i)];
  }
  if (!self.is_node()) throw std::invalid_argument("'" + kind_name(self) + "' object is not subscriptable");
  if (b.returns_tuple(self)) {  // one output of a multi-output node: split(...)[0]
    if (!is_int(index)) throw std::invalid_argument("a tuple of tensors is indexed by an int");
    return b.call("getitem", {self, index});
  }
  const Slicing s = apply_slicing(b, self, index);
  if (s.tensors.empty()) return s.view;
  return b.call("aten.index.Tensor", {s.view, index_list(s.tensors)});
}

// THPVariable_setitem / at::indexing::set_item: the value (a number as a tensor of self's type)
// copied into the view the index takes (copy_to: its leading 1s dropped, broadcast, cast to
// self's type), or put at the tensor indices (index_put_: the same type required); functional
// here: the updated view, then back through the views taken (slice_scatter, select_scatter).
Arg lower_setitem(TorchLowering& b, const Arg& self, const Arg& index, const Arg& value) {
  if (!self.is_node() || b.returns_tuple(self))
    throw std::invalid_argument("'" + std::string(self.is_node() ? "tuple" : kind_name(self)) + "' object does not support item assignment");
  if (!value.is_node() && !value.is_number())  // valueToTensor: a tensor or a number
    throw std::invalid_argument("can't assign a " + kind_name(value) + " to a torch." + scalar_type_name(b.meta(self).dtype) + "Tensor");
  const DType dt = b.meta(self).dtype;
  const Slicing s = apply_slicing(b, self, index);
  const Shape target = b.meta(s.view).shape;
  Arg updated;
  if (s.tensors.empty()) {
    if (!value.is_node()) {
      updated = b.call("aten.fill.Scalar", {s.view, value});
    } else {
      Arg v = value;
      if (b.meta(v).shape != target) {
        v = drop_leading_ones(b, v);
        const Shape vs = b.meta(v).shape;
        if (!broadcasts_to(vs, target))
          throw std::invalid_argument("setitem: the value's shape " + shape_str(b.meta(value).shape) + " cannot be broadcast to the indexed shape " +
                                      shape_str(target));
        if (vs != target) v = b.call("aten.expand.default", {v, Arg::of_ints(target)});
      }
      if (b.meta(v).dtype != dt) v = b.call("prims.convert_element_type.default", {v, Arg::of_string(dtype_arg(dt))});
      updated = v;
    }
  } else {
    Arg v = value.is_node() ? drop_leading_ones(b, value)
                            : b.call("aten.scalar_tensor.default", {value}, {{"dtype", Arg::of_string(dtype_arg(dt))}});
    bool mask = false;
    for (const auto& t : s.tensors) mask = mask || b.meta(t.second).dtype == DType::b8 || b.meta(t.second).dtype == DType::u8;
    if (!mask) {
      updated = b.call("aten.index_put.default", {s.view, index_list(s.tensors), v});
    } else {
      if (s.tensors.size() != 1) unsupported("setitem", "a boolean mask together with other index tensors");
      if (b.meta(v).dtype != dt)
        throw std::invalid_argument(std::string("Index put requires the source and destination dtypes match, got ") + scalar_type_name(dt) +
                                    " for the destination and " + scalar_type_name(b.meta(v).dtype) + " for the source.");
      updated = put_through_mask(b, s.view, s.tensors[0].first, s.tensors[0].second, v);
    }
  }
  for (auto it = s.steps.rbegin(); it != s.steps.rend(); ++it) {
    const std::vector<Arg>& a = it->args;
    if (it->op == "aten.select.int") updated = b.call("aten.select_scatter.default", {it->base, updated, a[0], a[1]});
    else if (it->op == "aten.slice.Tensor") updated = b.call("aten.slice_scatter.default", {it->base, updated, a[0], a[1], a[2], a[3]});
    else updated = b.call("aten.squeeze.dim", {updated, a[0]});
  }
  // `x[...] = y` of y's shape and type: x holds a copy of y, not y itself.
  if (value.is_node() && updated.node == value.node) updated = b.call("aten.clone.default", {updated});
  return updated;
}

TorchMappingCounts torch_mapping_counts() {
  TorchMappingCounts c;
  c.functional = static_cast<int>(functional_table().size());
  c.python_methods = static_cast<int>(method_table().size()) + 2 + static_cast<int>(torch_python_table().size());  // + to, std
  c.aliases = static_cast<int>(aliases().size());
  c.aten_names = static_cast<int>(aten_overloads().size());
  return c;
}

}  // namespace ls
