#include "frontend/onnx.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>

#include "ops/builder.h"
#include "ops/known_ops.h"
#include "ops/op_table.h"

#ifdef LOWERSCOPE_HAVE_ONNX
#include <onnx/onnx_pb.h>
#endif

namespace ls {

#ifndef LOWERSCOPE_HAVE_ONNX
bool have_onnx() { return false; }
Graph import_onnx(const std::string& path) {
  throw std::runtime_error(path + ": this build cannot read ONNX models (it was built without the ONNX protobuf library)");
}
#else
bool have_onnx() { return true; }

namespace {
namespace fs = std::filesystem;
constexpr int64_t kMaxElements = int64_t(1) << 34;

std::string identifier(const std::string& s) {
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

  const Tensor* constant(const std::string& name) const {
    auto it = constants_.find(name);
    return it == constants_.end() ? nullptr : &it->second;
  }
  std::vector<int64_t> ints_of(const onnx::NodeProto& n, int input, const std::string& where) const {
    if (input >= n.input_size() || n.input(input).empty()) return {};
    const Tensor* t = constant(n.input(input));
    if (!t) fail(where, "input " + std::to_string(input) + " ('" + n.input(input) + "') must be a constant");
    std::vector<int64_t> v;
    for (int64_t i = 0; i < t->numel(); ++i) v.push_back(static_cast<int64_t>(t->get(i)));
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
  Arg operand(const onnx::NodeProto& n, int i, const std::string& where) {
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
  }

  std::vector<Arg> lower(const onnx::NodeProto& n, const std::string& where) {
    const std::string& op = n.op_type();
    auto in = [&](int i) { return value(n.input(i), where); };
    static const std::map<std::string, std::string> unary = {
        {"Relu", "aten.relu.default"}, {"Sigmoid", "aten.sigmoid.default"}, {"Tanh", "aten.tanh.default"},
        {"Exp", "aten.exp.default"},   {"Log", "aten.log.default"},         {"Sqrt", "aten.sqrt.default"},
        {"Neg", "aten.neg.default"},   {"Abs", "aten.abs.default"},         {"Erf", "aten.erf.default"},
        {"Sin", "aten.sin.default"},   {"Cos", "aten.cos.default"},         {"Reciprocal", "aten.reciprocal.default"},
        {"HardSwish", "aten.hardswish.default"}, {"Identity", "aten.alias.default"}};
    static const std::map<std::string, std::string> binary = {{"Add", "aten.add.Tensor"}, {"Sub", "aten.sub.Tensor"},
                                                              {"Mul", "aten.mul.Tensor"}, {"Div", "aten.div.Tensor"},
                                                              {"Max", "aten.maximum.default"}, {"Min", "aten.minimum.default"}};
    if (auto u = unary.find(op); u != unary.end()) return {b_.call(u->second, {in(0)})};
    if (auto bi = binary.find(op); bi != binary.end()) {
      Arg x = operand(n, 0, where), y = operand(n, 1, where);
      if (!x.is_node()) {
        if (op == "Add" || op == "Mul") std::swap(x, y);
        else x = value(n.input(0), where);
      }
      return {b_.call(bi->second, {x, y})};
    }
    if (op == "Pow") {
      const Arg e = operand(n, 1, where);
      return {b_.call(e.is_node() ? "aten.pow.Tensor_Tensor" : "aten.pow.Tensor_Scalar", {in(0), e})};
    }
    if (op == "Where") return {b_.call("aten.where.self", {in(0), in(1), in(2)})};
    if (op == "Constant") {
      const auto* v = attr(n, "value");
      if (!v || !v->has_t()) fail(where, "only tensor constants are supported");
      constants_[n.output(0)] = tensor(v->t(), where);
      return {};
    }
    if (op == "MatMul") return {matmul(in(0), in(1))};
    if (op == "Gemm") {
      Arg a = in(0), bm = in(1);
      if (attr_i(n, "transA", 0)) a = b_.call("aten.permute.default", {a, Arg::of_ints({1, 0})});
      if (attr_i(n, "transB", 0)) bm = b_.call("aten.permute.default", {bm, Arg::of_ints({1, 0})});
      const double alpha = attr_f(n, "alpha", 1.0), beta = attr_f(n, "beta", 1.0);
      if (n.input_size() < 3 || n.input(2).empty()) {
        Arg y = b_.call("aten.mm.default", {a, bm});
        if (alpha != 1.0) y = b_.call("aten.mul.Tensor", {y, Arg::of_real(alpha)});
        return {y};
      }
      return {b_.call("aten.addmm.default", {in(2), a, bm}, {{"beta", Arg::of_real(beta)}, {"alpha", Arg::of_real(alpha)}})};
    }
    if (op == "Conv") {
      const auto pads = attr_ints(n, "pads", {0, 0, 0, 0});
      if (attr(n, "auto_pad") && attr(n, "auto_pad")->s() != "NOTSET") fail(where, "auto_pad is not supported");
      if (pads.size() != 4 || pads[0] != pads[2] || pads[1] != pads[3]) fail(where, "only symmetric 2-D padding is supported");
      const Arg bias = n.input_size() > 2 && !n.input(2).empty() ? in(2) : Arg::none();
      return {b_.call("aten.convolution.default",
                      {in(0), in(1), bias, Arg::of_ints(attr_ints(n, "strides", {1, 1})), Arg::of_ints({pads[0], pads[1]}),
                       Arg::of_ints(attr_ints(n, "dilations", {1, 1})), Arg::of_bool(false), Arg::of_ints({0, 0}),
                       Arg::of_int(attr_i(n, "group", 1))})};
    }
    if (op == "MaxPool") {
      const auto pads = attr_ints(n, "pads", {0, 0, 0, 0});
      if (pads.size() != 4 || pads[0] != pads[2] || pads[1] != pads[3]) fail(where, "only symmetric 2-D padding is supported");
      const Arg r = b_.call("aten.max_pool2d_with_indices.default",
                            {in(0), Arg::of_ints(attr_ints(n, "kernel_shape")), Arg::of_ints(attr_ints(n, "strides", {1, 1})),
                             Arg::of_ints({pads[0], pads[1]}), Arg::of_ints(attr_ints(n, "dilations", {1, 1})),
                             Arg::of_bool(attr_i(n, "ceil_mode", 0) != 0)});
      return {b_.get(r, 0)};
    }
    if (op == "GlobalAveragePool") return {b_.call("aten.mean.dim", {in(0), Arg::of_ints({-1, -2}), Arg::of_bool(true)})};
    if (op == "ReduceMean" || op == "ReduceSum" || op == "ReduceMax") {
      std::vector<int64_t> axes = opset_ >= 18 || op == "ReduceSum" ? ints_of(n, 1, where) : attr_ints(n, "axes");
      const bool keep = attr_i(n, "keepdims", 1) != 0;
      const char* aten = op == "ReduceMean" ? "aten.mean.dim" : op == "ReduceSum" ? "aten.sum.dim_IntList" : "aten.amax.default";
      return {b_.call(aten, {in(0), axes.empty() ? Arg::none() : Arg::of_ints(axes), Arg::of_bool(keep)})};
    }
    if (op == "Reshape") {
      std::vector<int64_t> s = ints_of(n, 1, where);
      const Shape& x = shape(in(0));
      if (!attr_i(n, "allowzero", 0))
        for (size_t i = 0; i < s.size(); ++i)
          if (s[i] == 0 && i < x.size()) s[i] = x[i];
      return {b_.call("aten.view.default", {in(0), Arg::of_ints(s)})};
    }
    if (op == "Flatten") {
      const Shape& x = shape(in(0));
      int64_t axis = attr_i(n, "axis", 1);
      if (axis < 0) axis += static_cast<int64_t>(x.size());
      int64_t a = 1, c = 1;
      for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) (i < axis ? a : c) *= x[i];
      return {b_.call("aten.view.default", {in(0), Arg::of_ints({a, c})})};
    }
    if (op == "Transpose") {
      std::vector<int64_t> perm = attr_ints(n, "perm");
      if (perm.empty())
        for (int64_t i = static_cast<int64_t>(shape(in(0)).size()); i-- > 0;) perm.push_back(i);
      return {b_.call("aten.permute.default", {in(0), Arg::of_ints(perm)})};
    }
    if (op == "Softmax") return {b_.call("aten._softmax.default", {in(0), Arg::of_int(attr_i(n, "axis", -1)), Arg::of_bool(false)})};
    if (op == "Gelu") {
      const auto* a = attr(n, "approximate");
      return {b_.call("aten.gelu.default", {in(0)}, {{"approximate", Arg::of_string(a ? a->s() : "none")}})};
    }
    if (op == "HardSigmoid") {
      const double alpha = attr_f(n, "alpha", 0.2), beta = attr_f(n, "beta", 0.5);
      if (std::abs(alpha - 1.0 / 6.0) < 1e-6 && std::abs(beta - 0.5) < 1e-6) return {b_.call("aten.hardsigmoid.default", {in(0)})};
      const Arg y = b_.call("aten.add.Tensor", {b_.call("aten.mul.Tensor", {in(0), Arg::of_real(alpha)}), Arg::of_real(beta)});
      return {b_.call("aten.clamp.default", {y, Arg::of_real(0.0), Arg::of_real(1.0)})};
    }
    if (op == "LayerNormalization") {
      const Shape& x = shape(in(0));
      int64_t axis = attr_i(n, "axis", -1);
      if (axis < 0) axis += static_cast<int64_t>(x.size());
      const Shape ns(x.begin() + axis, x.end());
      const Arg bias = n.input_size() > 2 && !n.input(2).empty() ? in(2) : Arg::none();
      const Arg r = b_.call("aten.native_layer_norm.default", {in(0), Arg::of_ints(ns), in(1), bias, Arg::of_real(attr_f(n, "epsilon", 1e-5))});
      return {b_.get(r, 0), b_.get(r, 1), b_.get(r, 2)};
    }
    if (op == "BatchNormalization") {
      const Arg r = b_.call("aten._native_batch_norm_legit_no_training.default",
                            {in(0), in(1), in(2), in(3), in(4), Arg::of_real(attr_f(n, "momentum", 0.9)), Arg::of_real(attr_f(n, "epsilon", 1e-5))});
      return {b_.get(r, 0)};
    }
    if (op == "Split") {
      const Shape& x = shape(in(0));
      int64_t axis = attr_i(n, "axis", 0);
      if (axis < 0) axis += static_cast<int64_t>(x.size());
      std::vector<int64_t> sizes = ints_of(n, 1, where);
      if (sizes.empty()) sizes = attr_ints(n, "split");
      if (sizes.empty()) {
        const int64_t k = attr_i(n, "num_outputs", n.output_size());
        const int64_t each = (x[axis] + k - 1) / k;
        for (int64_t o = 0; o < x[axis]; o += each) sizes.push_back(std::min(each, x[axis] - o));
      }
      const Arg r = b_.call("aten.split_with_sizes.default", {in(0), Arg::of_ints(sizes), Arg::of_int(axis)});
      std::vector<Arg> outs;
      for (size_t i = 0; i < sizes.size(); ++i) outs.push_back(b_.get(r, static_cast<int>(i)));
      return outs;
    }
    if (op == "Concat") {
      Arg l;
      l.kind = Arg::Kind::list;
      for (int i = 0; i < n.input_size(); ++i) l.list.push_back(in(i));
      return {b_.call("aten.cat.default", {l, Arg::of_int(attr_i(n, "axis", 0))})};
    }
    if (op == "Unsqueeze" || op == "Squeeze") {
      std::vector<int64_t> axes = opset_ >= 13 ? ints_of(n, 1, where) : attr_ints(n, "axes");
      Shape s = shape(in(0));
      if (op == "Unsqueeze") {
        std::sort(axes.begin(), axes.end());
        for (int64_t a : axes) s.insert(s.begin() + (a < 0 ? a + static_cast<int64_t>(s.size()) + 1 : a), 1);
      } else {
        Shape t;
        for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
          const bool drop = axes.empty() ? s[i] == 1 : std::count(axes.begin(), axes.end(), i) || std::count(axes.begin(), axes.end(), i - static_cast<int64_t>(s.size()));
          if (!drop) t.push_back(s[i]);
        }
        s = t;
      }
      return {b_.call("aten.view.default", {in(0), Arg::of_ints(s)})};
    }
    return missing(n, where);
  }

  std::string path_;
  Graph g_;
  GraphBuilder b_;
  int64_t opset_ = 0;
  std::map<std::string, Tensor> constants_;
  std::map<std::string, Arg> values_;
  std::map<std::string, TensorMeta> recorded_;  // value name -> the type the file records for it
};

}  // namespace

Graph import_onnx(const std::string& path) { return Importer(path).run(); }
#endif

}  // namespace ls
