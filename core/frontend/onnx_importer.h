// The ONNX importer's class, shared by onnx.cpp (the model, its tensors, the graph's values and the
// first ops) and onnx_ops.cpp (the rest of the operators, and constant folding of shape
// computations). Internal to frontend/; only built with LOWERSCOPE_HAVE_ONNX.
#pragma once
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "ops/builder.h"
#include "ops/known_ops.h"
#include "ops/op_table.h"

namespace ls::onnx_import {
namespace fs = std::filesystem;
constexpr int64_t kMaxElements = int64_t(1) << 34;

// Element i of an integer (or bool) tensor, exactly (int64 values past 2^53 included); a float
// element converted, clamped to int64's range.
inline int64_t int_at(const Tensor& t, int64_t i) {
  if (i < 0 || i >= t.numel())  // a constant shorter than the op needs (a broken file)
    throw std::invalid_argument("reads element " + std::to_string(i) + " of a constant of " + std::to_string(t.numel()) + " elements");
  if (t.dtype() == DType::i64) {
    int64_t v;
    std::memcpy(&v, static_cast<const char*>(t.data()) + i * 8, 8);
    return v;
  }
  const double d = t.get(i);
  if (!(d == d)) return 0;
  if (d >= 9.2233720368547758e18) return INT64_MAX;
  if (d <= -9.2233720368547758e18) return INT64_MIN;
  return static_cast<int64_t>(d);
}
inline void set_int(Tensor& t, int64_t i, int64_t v) {
  if (t.dtype() == DType::i64) std::memcpy(static_cast<char*>(t.data()) + i * 8, &v, 8);
  else t.set(i, static_cast<double>(v));
}

inline std::string identifier(const std::string& s) {
  std::string o;
  for (char c : s) o += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (o.empty() || std::isdigit(static_cast<unsigned char>(o[0]))) o = "v_" + o;
  return o;
}

class Importer {
 public:
  explicit Importer(const std::string& path) : path_(path), b_(g_) {}

  Graph run() {
    std::ifstream f(path_, std::ios::binary);
    if (!f) throw std::runtime_error(path_ + ": cannot open file");
    onnx::ModelProto model;
    if (!model.ParseFromIstream(&f)) fail("file", "not a valid ONNX model (the protobuf does not parse)");
    if (!model.has_graph()) fail("file", "the model has no graph");
    for (const auto& op : model.opset_import())
      if (op.domain().empty() || op.domain() == "ai.onnx") opset_ = op.version();
    if (opset_ && (opset_ < 13 || opset_ > 21)) fail("opset_import", "opset " + std::to_string(opset_) + " is not supported (13 to 21 are)");
    const onnx::GraphProto& graph = model.graph();
    g_.name = identifier(graph.name().empty() ? "onnx_graph" : graph.name());

    for (const auto& init : graph.initializer()) {
      Tensor t = tensor(init, "initializer '" + init.name() + "'");
      constants_[init.name()] = t;
    }
    for (const auto& in : graph.input()) {
      if (constants_.count(in.name())) continue;  // old exporters list initializers as inputs too
      add_input(in);
    }
    // The shapes the file records for values inside the graph: a node of an op we lack keeps them.
    for (const auto* infos : {&graph.value_info(), &graph.output()})
      for (const auto& vi : *infos)
        if (std::optional<TensorMeta> m = recorded_meta(vi)) recorded_[vi.name()] = *m;
    for (const auto& n : graph.node()) import_node(n);
    for (const auto& out : graph.output()) {
      const Arg a = value(out.name(), "graph output");
      g_.outputs.push_back(a.node);
    }
    verify(g_);
    return std::move(g_);
  }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw std::runtime_error(path_ + ": " + where + ": " + what);
  }

  DType dtype(int t, const std::string& where) const {
    switch (t) {
      case onnx::TensorProto::FLOAT: return DType::f32;
      case onnx::TensorProto::DOUBLE: return DType::f64;
      case onnx::TensorProto::INT64: return DType::i64;
      case onnx::TensorProto::INT32: return DType::i32;
      case onnx::TensorProto::BOOL: return DType::b8;
      case onnx::TensorProto::UINT8: return DType::u8;
      case onnx::TensorProto::FLOAT16: return DType::f16;
      case onnx::TensorProto::BFLOAT16: return DType::bf16;
      default: fail(where, "element type " + std::to_string(t) + " is not supported");
    }
  }

  Shape dims(const google::protobuf::RepeatedField<int64_t>& d, const std::string& where) const {
    Shape s;
    int64_t n = 1;
    for (int64_t x : d) {
      if (x < 0) fail(where, "negative dimension " + std::to_string(x));
      if (x && n > kMaxElements / x) fail(where, "the tensor is too large");
      n *= x;
      s.push_back(x);
    }
    return s;
  }

  std::string external_bytes(const onnx::TensorProto& t, const std::string& where) const {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = std::stoll(kv.value());
      else if (kv.key() == "length") length = std::stoll(kv.value());
    }
    const fs::path dir = fs::absolute(fs::path(path_).parent_path());
    const fs::path file = fs::weakly_canonical(dir / location);
    const std::string d = fs::weakly_canonical(dir).string() + "/";
    if (location.empty() || fs::path(location).is_absolute() || file.string().compare(0, d.size(), d) != 0)
      fail(where, "external data '" + location + "' lies outside the model's folder");
    std::ifstream f(file, std::ios::binary);
    if (!f) fail(where, "cannot open external data file '" + location + "'");
    f.seekg(0, std::ios::end);
    const int64_t size = f.tellg();
    if (offset < 0 || offset > size || (length >= 0 && offset + length > size)) fail(where, "external data range is past the end of '" + location + "'");
    if (length < 0) length = size - offset;
    std::string bytes(static_cast<size_t>(length), '\0');
    f.seekg(offset);
    f.read(bytes.data(), length);
    return bytes;
  }

  Tensor tensor(const onnx::TensorProto& p, const std::string& where) const {
    const DType dt = dtype(p.data_type(), where);
    Tensor t(dt, dims(p.dims(), where));
    if (p.data_location() == onnx::TensorProto::EXTERNAL || p.has_raw_data()) {
      const std::string bytes = p.data_location() == onnx::TensorProto::EXTERNAL ? external_bytes(p, where) : p.raw_data();
      if (static_cast<int64_t>(bytes.size()) != t.nbytes())
        fail(where, "holds " + std::to_string(bytes.size()) + " bytes but " + std::string(dtype_short(dt)) + shape_str(t.shape()) +
                        " needs " + std::to_string(t.nbytes()));
      std::memcpy(t.data(), bytes.data(), bytes.size());
      return t;
    }
    auto fill = [&](const auto& field) {
      if (static_cast<int64_t>(field.size()) != t.numel())
        fail(where, "holds " + std::to_string(field.size()) + " values but its shape needs " + std::to_string(t.numel()));
      for (int64_t i = 0; i < t.numel(); ++i) t.set(i, static_cast<double>(field.Get(static_cast<int>(i))));
    };
    switch (p.data_type()) {
      case onnx::TensorProto::FLOAT: fill(p.float_data()); break;
      case onnx::TensorProto::DOUBLE: fill(p.double_data()); break;
      case onnx::TensorProto::INT64: fill(p.int64_data()); break;
      case onnx::TensorProto::FLOAT16:
      case onnx::TensorProto::BFLOAT16: {  // int32_data holds each value's 16 bits
        if (static_cast<int64_t>(p.int32_data().size()) != t.numel())
          fail(where, "holds " + std::to_string(p.int32_data().size()) + " values but its shape needs " + std::to_string(t.numel()));
        auto* bits = static_cast<uint16_t*>(t.data());
        for (int64_t i = 0; i < t.numel(); ++i) bits[i] = static_cast<uint16_t>(p.int32_data(static_cast<int>(i)));
        break;
      }
      default: fill(p.int32_data()); break;  // int32, bool, uint8 are stored as int32_data
    }
    return t;
  }

  // A value's recorded type, where the file gives a tensor of static shape and a dtype we have.
  std::optional<TensorMeta> recorded_meta(const onnx::ValueInfoProto& vi) const {
    if (!vi.type().has_tensor_type()) return std::nullopt;
    const auto& tt = vi.type().tensor_type();
    if (!tt.has_shape()) return std::nullopt;
    Shape s;
    for (const auto& d : tt.shape().dim()) {
      if (!d.has_dim_value() || d.dim_value() < 0) return std::nullopt;
      s.push_back(d.dim_value());
    }
    try {
      return TensorMeta::contiguous(dtype(tt.elem_type(), "value_info"), s);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }

  // A node of an op we lack: kept, its outputs typed as the file records them, so the model still
  // opens; the pipeline stops at it (passes/normalize_to_aten.h). Without recorded types, an error.
  std::vector<Arg> missing(const onnx::NodeProto& n, const std::string& where) {
    Node m;
    m.op = &op::missing();
    m.target = "onnx." + n.op_type();
    m.origins = b_.origins;
    for (int i = 0; i < n.input_size(); ++i)
      if (!n.input(i).empty()) m.args.push_back(value(n.input(i), where));
    for (int i = 0; i < n.output_size(); ++i) {
      const auto r = recorded_.find(n.output(i));
      if (r == recorded_.end())
        fail(where, "op '" + n.op_type() + "' is not supported (and the file records no type for its output '" + n.output(i) + "')");
      m.outs.push_back(r->second);
    }
    if (m.outs.empty()) fail(where, "op '" + n.op_type() + "' is not supported");
    m.name = b_.fresh_name(identifier(n.output(0)));
    const int id = g_.add(std::move(m));
    if (n.output_size() == 1) return {Arg::of_node(id)};
    std::vector<Arg> outs;
    for (int i = 0; i < n.output_size(); ++i) outs.push_back(b_.get(Arg::of_node(id), i));
    return outs;
  }

  void add_input(const onnx::ValueInfoProto& in) {
    const std::string where = "input '" + in.name() + "'";
    if (!in.type().has_tensor_type()) fail(where, "is not a tensor");
    const auto& tt = in.type().tensor_type();
    Shape s;
    for (const auto& d : tt.shape().dim()) {
      if (!d.has_dim_value()) fail(where, "dimension '" + d.dim_param() + "' is symbolic; only static shapes are supported");
      if (d.dim_value() < 0) fail(where, "negative dimension");
      s.push_back(d.dim_value());
    }
    const int id = b_.placeholder(identifier(in.name()), TensorMeta::contiguous(dtype(tt.elem_type(), where), s));
    values_[in.name()] = Arg::of_node(id);
  }

  // A graph value: a node's output, or an initializer (made a parameter on first use).
  Arg value(const std::string& name, const std::string& where) {
    if (auto it = values_.find(name); it != values_.end()) return it->second;
    auto c = constants_.find(name);
    if (c == constants_.end()) fail(where, "uses '" + name + "', which is not defined before it");
    Node n;
    n.name = b_.fresh_name("p_" + identifier(name));
    n.outs = {TensorMeta::contiguous(c->second.dtype(), c->second.shape())};
    n.input_kind = InputKind::parameter;
    n.param_name = name;
    n.origins = {n.name};
    g_.weights[n.name] = c->second;
    const Arg a = Arg::of_node(g_.add(std::move(n)));
    values_[name] = a;
    return a;
  }

  // A value known at import: an initializer, a Constant node's, or one folded from those (fold():
  // Cast, Reshape, Squeeze, Concat, Gather, arithmetic... of small tensors). An initializer that a
  // node took as a tensor (a parameter, in values_ too) stays known: the same value.
  const Tensor* constant(const std::string& name) const {
    auto it = constants_.find(name);
    return it == constants_.end() ? nullptr : &it->second;
  }
  // Why `name` is not known at import: the node that computes it from data, or the graph input.
  std::string data_source(const std::string& name) const {
    if (auto p = producers_.find(name); p != producers_.end()) return "computed from data by " + p->second;
    return "a graph input, whose values are not known at import";
  }
  // Input i of n, which must be known at import; `what` names it as the op's spec does.
  const Tensor& static_input(const onnx::NodeProto& n, int i, const std::string& what, const std::string& where) const {
    if (i >= n.input_size() || n.input(i).empty()) fail(where, "input '" + what + "' is missing");
    const Tensor* t = constant(n.input(i));
    if (!t)
      fail(where, "input '" + what + "' ('" + n.input(i) + "') must be known at import (shapes are static here), but it is " +
                      data_source(n.input(i)));
    return *t;
  }
  std::vector<int64_t> ints_of(const onnx::NodeProto& n, int input, const std::string& where) const {
    if (input >= n.input_size() || n.input(input).empty()) return {};
    const Tensor* t = constant(n.input(input));
    if (!t)
      fail(where, "input " + std::to_string(input) + " ('" + n.input(input) + "') must be a constant known at import (shapes are static here), but it is " +
                      data_source(n.input(input)));
    std::vector<int64_t> v;
    for (int64_t i = 0; i < t->numel(); ++i) v.push_back(int_at(*t, i));
    return v;
  }
  const onnx::AttributeProto* attr(const onnx::NodeProto& n, const char* name) const {
    for (const auto& a : n.attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  int64_t attr_i(const onnx::NodeProto& n, const char* name, int64_t d) const {
    const auto* a = attr(n, name);
    return a ? a->i() : d;
  }
  double attr_f(const onnx::NodeProto& n, const char* name, double d) const {
    const auto* a = attr(n, name);
    return a ? a->f() : d;
  }
  std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const char* name, std::vector<int64_t> d = {}) const {
    const auto* a = attr(n, name);
    if (!a) return d;
    return {a->ints().begin(), a->ints().end()};
  }

  // A tensor operand, or the number a 0-d/1-element constant holds (so `x ** 2` stays a scalar op).
  // Input i of the node, whose name must be there (a node with fewer inputs than its op takes
  // is a broken file).
  const std::string& input_name(const onnx::NodeProto& n, int i, const std::string& where) const {
    if (i >= n.input_size() || n.input(i).empty()) fail(where, "input " + std::to_string(i) + " is missing");
    return n.input(i);
  }
  Arg operand(const onnx::NodeProto& n, int i, const std::string& where) {
    input_name(n, i, where);
    if (const Tensor* t = constant(n.input(i)); t && t->numel() == 1 && t->dim() <= 1 && !values_.count(n.input(i)))
      return dtype_is_float(t->dtype()) ? Arg::of_real(t->get(0)) : Arg::of_int(static_cast<int64_t>(t->get(0)));
    return value(n.input(i), where);
  }

  const Shape& shape(const Arg& a) const { return g_.nodes.at(a.node).meta().shape; }

  Arg matmul(const Arg& a, const Arg& bm) {
    const Shape sa = shape(a), sb = shape(bm);
    if (sa.size() == 2 && sb.size() == 2) return b_.call("aten.mm.default", {a, bm});
    if (sb.size() == 2) {  // [..., M, K] @ [K, N]: fold the batch into M
      int64_t rows = 1;
      for (size_t i = 0; i + 1 < sa.size(); ++i) rows *= sa[i];
      const Arg y = b_.call("aten.mm.default", {b_.call("aten.view.default", {a, Arg::of_ints({rows, sa.back()})}), bm});
      Shape out(sa.begin(), sa.end() - 1);
      out.push_back(sb[1]);
      return b_.call("aten.view.default", {y, Arg::of_ints(out)});
    }
    // Batched: broadcast the batch dimensions, then bmm.
    Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
    const Shape batch = broadcast_shapes(ba, bb);
    int64_t B = 1;
    for (int64_t d : batch) B *= d;
    auto flat = [&](const Arg& x, const Shape& s) {
      Shape full = batch;
      full.push_back(s[s.size() - 2]);
      full.push_back(s.back());
      const Arg e = s == full ? x : b_.call("aten.expand.default", {x, Arg::of_ints(full)});
      return b_.call("aten.view.default", {e, Arg::of_ints({B, s[s.size() - 2], s.back()})});
    };
    const Arg y = b_.call("aten.bmm.default", {flat(a, sa), flat(bm, sb)});
    Shape out = batch;
    out.push_back(sa[sa.size() - 2]);
    out.push_back(sb.back());
    return b_.call("aten.view.default", {y, Arg::of_ints(out)});
  }

  void import_node(const onnx::NodeProto& n) {
    const std::string where = "node '" + (n.name().empty() ? n.op_type() : n.name()) + "' (" + n.op_type() + ")";
    if (!n.domain().empty() && n.domain() != "ai.onnx") fail(where, "domain '" + n.domain() + "' is not supported");
    b_.origins = {identifier(n.output_size() ? n.output(0) : n.name())};
    std::vector<Arg> outs;
    try {
      outs = lower(n, where);
    } catch (const std::invalid_argument& e) {
      fail(where, e.what());
    } catch (const std::logic_error& e) {
      fail(where, e.what());
    }
    for (int i = 0; i < n.output_size() && i < static_cast<int>(outs.size()); ++i) {
      if (n.output(i).empty()) continue;
      Arg o = outs[i];
      if (!o.is_node()) fail(where, "output " + std::to_string(i) + " is not supported");
      // The last node made for an output takes the output's name, as in the ONNX graph.
      Node& node = g_.nodes[o.node];
      const std::string want = identifier(n.output(i));
      if (!node.is_placeholder() && node.name != want && g_.find(want) < 0) node.name = want;
      values_[n.output(i)] = o;
    }
    for (const auto& o : n.output())
      if (!o.empty() && !constants_.count(o)) producers_[o] = where;
  }

  std::vector<Arg> lower(const onnx::NodeProto& n, const std::string& where);  // onnx.cpp

  // onnx_ops.cpp: the operators beyond lower()'s; nullopt for an op it does not know.
  std::optional<std::vector<Arg>> lower_more(const onnx::NodeProto& n, const std::string& where);
  // onnx_ops.cpp: a node whose inputs are all constants (and Shape, Size: any input) computed at
  // import, its outputs recorded as constants; false where it is not folded.
  bool fold(const onnx::NodeProto& n, const std::string& where);
  // onnx_ops.cpp helpers
  Shape new_shape(const onnx::NodeProto& n, const Shape& s, const std::string& where);
  int64_t axis_of(int64_t a, int64_t rank, const std::string& where, const std::string& what) const;
  Arg as_i64(const Arg& x);
  Arg wrap_negative(const Arg& idx, int64_t n);
  Arg index_const(const Tensor& t, const std::string& base);
  Arg resize_axis(const Arg& x, int64_t axis, int64_t out, double scale, const onnx::NodeProto& n, const std::string& where);
  Arg pad_axis(const Arg& x, int64_t axis, int64_t before, int64_t after, const std::string& mode, const std::string& where);
  Arg reduce(const onnx::NodeProto& n, const std::string& where);
  Arg conv(const onnx::NodeProto& n, const std::string& where);
  // onnx_ops.cpp: AveragePool, MaxPool, LpPool and their Global forms.
  std::vector<Arg> pool(const onnx::NodeProto& n, const std::string& where);
  DType onnx_dtype(int t, const std::string& where) const { return dtype(t, where); }

  std::string path_;
  Graph g_;
  GraphBuilder b_;
  int64_t opset_ = 0;
  std::map<std::string, Tensor> constants_;
  std::map<std::string, Arg> values_;
  std::map<std::string, std::string> producers_;  // a node output's name -> "node 'N' (Op)"
  std::map<std::string, TensorMeta> recorded_;  // value name -> the type the file records for it
};

}  // namespace ls::onnx_import
