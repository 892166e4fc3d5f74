// ONNX operators (issue 33, item 3) against ONNX Runtime, and bad models refused by name.
//
// 1. Every case of tests/data/onnx_ops/ (<case>.onnx built with onnx.helper, <case>.json its inputs
//    and ONNX Runtime's outputs; written on the GPU machine by tools/gpu/onnx_op_cases.py):
//    imported, run on the reference interpreter and through the CPU pipeline, both compared with
//    ONNX Runtime's outputs (integer and bool outputs exactly).
// 2. One-op models built here (onnx::ModelProto): each imports, and the reference interpreter and
//    the compiled CPU code agree; a few hand-computed values; bad attributes and inputs, and ops
//    whose output shape depends on data, refused with an error naming the node and what is wrong.
//   test_onnx_ops [--only SUBSTRING] [--no-compile]
#include <map>
#include <set>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "frontend/load_model.h"
#include "frontend/onnx.h"
#include "interp/reference.h"
#include "../json_tensor.h"
#include "pipeline/pipeline.h"

#ifdef LOWERSCOPE_HAVE_ONNX
#include <onnx/onnx_pb.h>
#endif

using namespace ls;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

int failures = 0, passed = 0;
std::string only;
bool compile_too = true;

// ONNX Runtime cases known to fail, by case name, with why (tests/data/onnx_ops/known_failures.txt:
// `NAME REASON`): reported, not counted; one that passes again is reported so it can be removed.
std::map<std::string, std::string> known;
std::set<std::string> known_seen;

void fail(const std::string& what) {
  const std::string name = what.substr(0, what.find(':'));
  if (auto k = known.find(name); k != known.end()) {
    known_seen.insert(name);
    std::cout << "known " << what << "  (" << k->second << ")\n";
    return;
  }
  ++failures;
  std::cout << "FAIL " << what << "\n";
}

Tensor decode(const json& j) { return test_data::decode_tensor(j); }

// "" when equal: floats within tolerance, integers and bools exactly, shapes and dtypes too.
std::string mismatch(const Tensor& got, const Tensor& want, double rtol, double atol) {
  if (got.shape() != want.shape()) return "shape " + shape_str(got.shape()) + ", expected " + shape_str(want.shape());
  if (got.dtype() != want.dtype())
    return "dtype " + std::string(dtype_short(got.dtype())) + ", expected " + std::string(dtype_short(want.dtype()));
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.get(i), w = want.get(i);
    if (std::isnan(w) && std::isnan(g)) continue;
    const bool ok = dtype_is_float(want.dtype()) ? (g == w || std::fabs(g - w) <= atol + rtol * std::fabs(w)) : g == w;
    if (!ok) return "element " + std::to_string(i) + " is " + std::to_string(g) + ", expected " + std::to_string(w);
  }
  return "";
}

CompileResult compile(const Graph& g, const std::vector<Tensor>& inputs, const std::string& name) {
  LoadedModel m;
  m.path = name;
  m.format = "onnx";
  m.graph = g;
  m.inputs = inputs;
  m.inputs_from = "test";
  PipelineOptions o;
  o.timing_budget_ms = 1;
  o.reference = false;
  return run_pipeline(m, o);
}

// ---- 1. ONNX Runtime's outputs -----------------------------------------------------------

void run_ort_cases(const fs::path& dir) {
  if (!fs::exists(dir)) {
    std::cout << "note: " << dir << " is missing: no ONNX Runtime cases (tools/gpu/onnx_op_cases.py writes them)\n";
    return;
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json" && e.path().stem() != "summary") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  int cases = 0;
  for (const fs::path& jf : files) {
    const std::string name = jf.stem().string();
    if (!only.empty() && name.find(only) == std::string::npos) continue;
    ++cases;
    try {
      std::ifstream in(jf);
      const json j = json::parse(in);
      std::vector<Tensor> inputs, want;
      for (const json& t : j.at("inputs")) inputs.push_back(decode(t));
      for (const json& t : j.at("outputs")) want.push_back(decode(t));
      const double rtol = j.value("rtol", 1e-4), atol = j.value("atol", 1e-5);
      const Graph g = import_onnx((dir / (name + ".onnx")).string());
      const std::vector<Tensor> ref = run_reference(g, inputs);
      if (ref.size() != want.size()) {
        fail(name + ": reference: " + std::to_string(ref.size()) + " outputs, ONNX Runtime gave " + std::to_string(want.size()));
        continue;
      }
      bool ok = true;
      for (size_t i = 0; i < want.size() && ok; ++i)
        if (std::string m = mismatch(ref[i], want[i], rtol, atol); !m.empty()) fail(name + ": reference: output " + std::to_string(i) + ": " + m), ok = false;
      if (ok && compile_too) {
        const CompileResult r = compile(g, inputs, name);
        if (!r.error.empty()) {
          fail(name + ": cpu: " + r.error_stage + ": " + r.error.substr(0, 300));
          ok = false;
        }
        for (size_t i = 0; i < want.size() && ok; ++i) {
          if (i >= r.outputs.size()) fail(name + ": cpu: output " + std::to_string(i) + " missing"), ok = false;
          else if (std::string m = mismatch(r.outputs[i], want[i], rtol, atol); !m.empty()) fail(name + ": cpu: output " + std::to_string(i) + ": " + m), ok = false;
        }
      }
      if (ok) ++passed;
    } catch (const std::exception& e) {
      fail(name + ": " + std::string(e.what()).substr(0, 400));
    }
  }
  std::cout << cases << " ONNX Runtime cases run\n";
}

#ifdef LOWERSCOPE_HAVE_ONNX
// ---- 2. models built here -----------------------------------------------------------------

struct Model {
  onnx::ModelProto m;
  std::vector<Tensor> inputs;
  explicit Model(int opset = 18) {
    m.set_ir_version(8);
    auto* o = m.add_opset_import();
    o->set_version(opset);
    m.mutable_graph()->set_name("t");
  }
  static int onnx_type(DType t) {
    switch (t) {
      case DType::f32: return onnx::TensorProto::FLOAT;
      case DType::f64: return onnx::TensorProto::DOUBLE;
      case DType::i64: return onnx::TensorProto::INT64;
      case DType::i32: return onnx::TensorProto::INT32;
      case DType::b8: return onnx::TensorProto::BOOL;
      case DType::u8: return onnx::TensorProto::UINT8;
    }
    return 0;
  }
  Model& input(const std::string& name, const Tensor& value) {
    auto* in = m.mutable_graph()->add_input();
    in->set_name(name);
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx_type(value.dtype()));
    auto* s = tt->mutable_shape();
    for (int64_t d : value.shape()) s->add_dim()->set_dim_value(d);
    inputs.push_back(value);
    return *this;
  }
  Model& init(const std::string& name, const Tensor& value) {
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx_type(value.dtype()));
    for (int64_t d : value.shape()) t->add_dims(d);
    t->set_raw_data(value.data(), static_cast<size_t>(value.nbytes()));
    return *this;
  }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& ins, const std::vector<std::string>& outs) {
    auto* n = m.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(op + "_node");
    for (const auto& i : ins) n->add_input(i);
    for (const auto& o : outs) n->add_output(o);
    return *n;
  }
  Model& output(const std::string& name) {
    m.mutable_graph()->add_output()->set_name(name);
    return *this;
  }
  std::string write(const std::string& name) const {
    const fs::path dir = fs::temp_directory_path() / "ls_onnx_ops";
    fs::create_directories(dir);
    const std::string p = (dir / (name + ".onnx")).string();
    std::ofstream f(p, std::ios::binary);
    m.SerializeToOstream(&f);
    return p;
  }
};
void attr_i(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void attr_f(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
void attr_s(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}
void attr_ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

Tensor ints(const std::vector<int64_t>& v, Shape s = {}) {
  if (s.empty() && v.size() != 1) s = {static_cast<int64_t>(v.size())};
  Tensor t(DType::i64, s);
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t x = v[i];
    std::memcpy(static_cast<char*>(t.data()) + i * 8, &x, 8);
  }
  return t;
}
Tensor floats(const std::vector<double>& v, Shape s) {
  Tensor t(DType::f32, s);
  for (size_t i = 0; i < v.size(); ++i) t.set(static_cast<int64_t>(i), v[i]);
  return t;
}
Tensor iota(Shape s) {
  Tensor t(DType::f32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, static_cast<double>(i) * 0.5 - 1.0);
  return t;
}

// Imports, runs the reference interpreter and the CPU pipeline; the two must agree, and the
// first output must equal `want` where given.
void check(const std::string& name, const Model& model, const std::optional<Tensor>& want = std::nullopt) {
  if (!only.empty() && name.find(only) == std::string::npos) return;
  try {
    const Graph g = import_onnx(model.write(name));
    const std::vector<Tensor> ref = run_reference(g, model.inputs);
    if (want)
      if (std::string m = mismatch(ref.at(0), *want, 1e-5, 1e-6); !m.empty()) return fail(name + ": reference: " + m);
    if (compile_too) {
      const CompileResult r = compile(g, model.inputs, name);
      if (!r.error.empty()) return fail(name + ": cpu: " + r.error_stage + ": " + r.error.substr(0, 300));
      for (size_t i = 0; i < ref.size(); ++i)
        if (std::string m = mismatch(r.outputs.at(i), ref[i], 1e-4, 1e-5); !m.empty()) return fail(name + ": cpu vs reference: " + m);
    }
    ++passed;
  } catch (const std::exception& e) {
    fail(name + ": " + std::string(e.what()).substr(0, 400));
  }
}

void refused(const std::string& name, const Model& model, const std::vector<std::string>& words) {
  if (!only.empty() && name.find(only) == std::string::npos) return;
  try {
    import_onnx(model.write(name));
    fail(name + ": imported, expected an error naming " + words.at(0));
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    for (const std::string& w : words)
      if (m.find(w) == std::string::npos) return fail(name + ": the error '" + m + "' does not name '" + w + "'");
    ++passed;
  } catch (const std::exception& e) {
    fail(name + ": unexpected exception " + e.what());
  }
}

void built_here() {
  {  // Gather with negative constant indices: rows 2, 0 of [3, 2]
    Model m;
    m.input("x", iota({3, 2})).init("i", ints({-1, 0}));
    m.node("Gather", {"x", "i"}, {"y"});
    m.output("y");
    check("gather_negative", m, floats({1.0, 1.5, -1.0, -0.5}, {2, 2}));
  }
  {  // Slice, step -2 from the end: x[::-2] of 5 values
    Model m;
    m.input("x", iota({5})).init("s", ints({-1})).init("e", ints({INT64_MIN})).init("a", ints({0})).init("st", ints({-2}));
    m.node("Slice", {"x", "s", "e", "a", "st"}, {"y"});
    m.output("y");
    check("slice_reverse", m, floats({1.0, 0.0, -1.0}, {3}));
  }
  {  // CumSum, exclusive and reverse: [1, 2, 3] -> [5, 3, 0]
    Model m;
    m.input("x", floats({1, 2, 3}, {3})).init("a", ints({0}, {}));
    auto& n = m.node("CumSum", {"x", "a"}, {"y"});
    attr_i(n, "exclusive", 1);
    attr_i(n, "reverse", 1);
    m.output("y");
    check("cumsum_exclusive_reverse", m, floats({5, 3, 0}, {3}));
  }
  {  // Resize nearest, asymmetric/floor, x2 along the last axis
    Model m;
    m.input("x", floats({1, 2}, {1, 1, 1, 2})).init("sc", floats({1, 1, 1, 2}, {4}));
    auto& n = m.node("Resize", {"x", "", "sc"}, {"y"});
    attr_s(n, "coordinate_transformation_mode", "asymmetric");
    attr_s(n, "nearest_mode", "floor");
    m.output("y");
    check("resize_nearest", m, floats({1, 1, 2, 2}, {1, 1, 1, 4}));
  }
  {  // Shape -> Gather -> Unsqueeze -> Concat -> Reshape, folded to a constant shape
    Model m;
    m.input("x", iota({2, 3, 4})).init("z", ints({0}, {})).init("z1", ints({0}, {1})).init("m1", ints({-1}, {1}));
    m.node("Shape", {"x"}, {"s"});
    m.node("Gather", {"s", "z"}, {"d"});
    m.node("Unsqueeze", {"d", "z1"}, {"d1"});
    m.node("Concat", {"d1", "m1"}, {"ns"});
    attr_i(*m.m.mutable_graph()->mutable_node(3), "axis", 0);
    m.node("Reshape", {"x", "ns"}, {"y"});
    m.output("y");
    check("shape_chain", m);
  }
  for (const char* mode : {"reflect", "edge", "wrap"}) {
    Model m(19);
    m.input("x", iota({2, 3, 4})).init("p", ints({0, 1, 2, 0, 2, 1}));
    attr_s(m.node("Pad", {"x", "p"}, {"y"}), "mode", mode);
    m.output("y");
    check(std::string("pad_") + mode, m);
  }
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    Model m;
    m.input("x", iota({1, 2, 3, 4})).init("sc", floats({1, 1, 1.5, 0.75}, {4}));
    attr_s(m.node("Resize", {"x", "", "sc"}, {"y"}), "mode", mode);
    m.output("y");
    check(std::string("resize_") + mode, m);
  }
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSumExp",
                         "ReduceSumSquare"}) {
    Model m;
    m.input("x", iota({2, 3, 4})).init("a", ints({1, -1}));
    attr_i(m.node(op, {"x", "a"}, {"y"}), "keepdims", 0);
    m.output("y");
    check(std::string("reduce_") + op, m);
  }
  {
    Model m;
    m.input("x", iota({2, 3, 5})).init("i", ints({2, 0, 1, 1, 0, 2}, {2, 3, 1}));
    attr_i(m.node("GatherElements", {"x", "i"}, {"y"}), "axis", -1);
    m.output("y");
    check("gather_elements", m);
  }
  {
    Model m;
    m.input("x", iota({2, 4, 3, 3})).init("s", iota({4})).init("b", iota({4}));
    attr_i(m.node("GroupNormalization", {"x", "s", "b"}, {"y"}), "num_groups", 2);
    m.output("y");
    check("group_norm", m);
  }
  {
    Model m;
    m.input("x", iota({1, 2, 5, 5})).init("w", iota({4, 1, 3, 3}));
    auto& n = m.node("Conv", {"x", "w"}, {"y"});
    attr_i(n, "group", 2);
    attr_s(n, "auto_pad", "SAME_UPPER");
    attr_ints(n, "strides", {2, 2});
    m.output("y");
    check("conv_same_groups", m);
  }
  {
    Model m;
    m.input("x", iota({3, 4})).init("k", ints({2}));
    m.node("TopK", {"x", "k"}, {"v", "i"});
    m.output("v").output("i");
    check("topk", m);
  }
  {
    Model m;
    m.input("x", floats({1, 3, 3, 0}, {4}));
    auto& n = m.node("ArgMax", {"x"}, {"y"});
    attr_i(n, "select_last_index", 1);
    attr_i(n, "keepdims", 0);
    m.output("y");
    check("argmax_last", m, ints({2}, {}));
  }

  // One op each, reference interpreter against the compiled CPU code.
  struct Simple {
    const char* name;
    const char* op;
    std::vector<std::pair<std::string, Tensor>> inputs, inits;
    std::function<void(onnx::NodeProto&)> attrs;
    int outputs = 1;
    int opset = 18;
  };
  Tensor b1(DType::b8, {2, 3}), b2(DType::b8, {2, 3});
  for (int64_t i = 0; i < 6; ++i) b1.set(i, i % 2), b2.set(i, i % 3 == 0);
  const Tensor special = floats({1.0, NAN, INFINITY, -INFINITY, 0.0, -2.0}, {2, 3});
  const std::vector<Simple> simple = {
      {"equal", "Equal", {{"a", iota({2, 3})}, {"b", floats({-1, 0, 0.5}, {3})}}, {}, nullptr},
      {"less", "Less", {{"a", iota({2, 3})}, {"b", floats({-1, 0, 0.5}, {3})}}, {}, nullptr},
      {"greater_or_equal", "GreaterOrEqual", {{"a", iota({2, 3})}, {"b", floats({-1, 0, 0.5}, {3})}}, {}, nullptr},
      {"xor", "Xor", {{"a", b1}, {"b", b2}}, {}, nullptr},
      {"not", "Not", {{"a", b1}}, {}, nullptr},
      {"isnan", "IsNaN", {{"x", special}}, {}, nullptr},
      {"isinf_neg", "IsInf", {{"x", special}}, {}, [](onnx::NodeProto& n) { attr_i(n, "detect_positive", 0); }},
      {"where", "Where", {{"c", b1}, {"a", iota({2, 3})}, {"b", floats({7, 8, 9}, {3})}}, {}, nullptr},
      {"instance_norm", "InstanceNormalization", {{"x", iota({2, 3, 4})}}, {{"s", iota({3})}, {"b", iota({3})}}, nullptr},
      {"layer_norm", "LayerNormalization", {{"x", iota({2, 3, 4})}}, {{"s", iota({3, 4})}}, [](onnx::NodeProto& n) { attr_i(n, "axis", 1); }},
      {"scatter_elements_add", "ScatterElements", {{"x", iota({3, 4})}, {"i", ints({1, 1, 2, 3, 0, 0}, {3, 2})}, {"u", iota({3, 2})}}, {},
       [](onnx::NodeProto& n) { attr_i(n, "axis", 1), attr_s(n, "reduction", "add"); }},
      {"scatter_elements_max", "ScatterElements", {{"x", iota({3, 4})}, {"i", ints({1, 1, 2, -1, 0, 0}, {3, 2})}, {"u", iota({3, 2})}}, {},
       [](onnx::NodeProto& n) { attr_i(n, "axis", 1), attr_s(n, "reduction", "max"); }},
      {"scatter_nd_add", "ScatterND", {{"x", iota({4, 3})}, {"i", ints({1, 2, 1, 2, 0, -1}, {3, 2})}, {"u", iota({3})}}, {},
       [](onnx::NodeProto& n) { attr_s(n, "reduction", "add"); }},
      {"gather_nd_batch", "GatherND", {{"x", iota({2, 3, 4})}}, {{"i", ints({2, -1}, {2, 1})}}, [](onnx::NodeProto& n) { attr_i(n, "batch_dims", 1); }},
      {"expand", "Expand", {{"x", iota({3, 1})}}, {{"s", ints({2, 1, 4})}}, nullptr},
      {"tile", "Tile", {{"x", iota({2, 1, 3})}}, {{"r", ints({2, 3, 1})}}, nullptr},
      {"trilu", "Trilu", {{"x", iota({2, 4, 5})}}, {{"k", ints({-1}, {})}}, [](onnx::NodeProto& n) { attr_i(n, "upper", 0); }},
      {"split_uneven", "Split", {{"x", iota({2, 7})}}, {}, [](onnx::NodeProto& n) { attr_i(n, "axis", 1), attr_i(n, "num_outputs", 3); }, 3},
      {"matmul_1d", "MatMul", {{"a", iota({4})}, {"b", iota({2, 4, 3})}}, {}, nullptr},
      {"matmul_bcast", "MatMul", {{"a", iota({2, 1, 3, 4})}, {"b", iota({3, 4, 2})}}, {}, nullptr},
      {"gemm", "Gemm", {{"a", iota({4, 3})}}, {{"b", iota({5, 4})}, {"c", iota({5})}},
       [](onnx::NodeProto& n) { attr_i(n, "transA", 1), attr_i(n, "transB", 1), attr_f(n, "alpha", 0.5f), attr_f(n, "beta", 2.0f); }},
      {"conv_1d", "Conv", {{"x", iota({2, 3, 8})}}, {{"w", iota({4, 3, 3})}, {"b", iota({4})}},
       [](onnx::NodeProto& n) { attr_ints(n, "pads", {1, 2}), attr_ints(n, "dilations", {2}); }},
      {"conv_asym_pads", "Conv", {{"x", iota({1, 4, 7, 6})}}, {{"w", iota({6, 2, 3, 2})}},
       [](onnx::NodeProto& n) { attr_i(n, "group", 2), attr_ints(n, "pads", {1, 0, 2, 1}), attr_ints(n, "strides", {2, 1}); }},
      {"softplus", "Softplus", {{"x", iota({2, 3, 4})}}, {}, nullptr},
      {"mish", "Mish", {{"x", iota({2, 3, 4})}}, {}, nullptr},
      {"selu", "Selu", {{"x", iota({2, 3, 4})}}, {}, nullptr},
      {"elu", "Elu", {{"x", iota({2, 3, 4})}}, {}, [](onnx::NodeProto& n) { attr_f(n, "alpha", 0.5f); }},
      {"leaky_relu", "LeakyRelu", {{"x", iota({2, 3, 4})}}, {}, nullptr},
      {"round", "Round", {{"x", iota({2, 3, 4})}}, {}, nullptr},
      {"mod_int", "Mod", {{"a", ints({7, -7, 7, -7}, {4})}, {"b", ints({3, 3, -3, -3}, {4})}}, {}, nullptr},
      {"mod_fmod", "Mod", {{"a", iota({2, 3})}, {"b", floats({1.5, -2.0, 0.7}, {3})}}, {}, [](onnx::NodeProto& n) { attr_i(n, "fmod", 1); }},
      {"max3", "Max", {{"a", iota({2, 3})}, {"b", floats({0, 1, -1}, {3})}, {"c", floats({0.2, -0.2}, {2, 1})}}, {}, nullptr},
      {"mean3", "Mean", {{"a", iota({2, 3})}, {"b", floats({0, 1, -1}, {3})}, {"c", floats({0.2, -0.2}, {2, 1})}}, {}, nullptr},
      {"cast_int", "Cast", {{"x", iota({2, 3})}}, {}, [](onnx::NodeProto& n) { attr_i(n, "to", onnx::TensorProto::INT64); }},
      {"clip", "Clip", {{"x", iota({2, 3})}}, {{"lo", floats({-0.5}, {})}, {"hi", floats({1.0}, {})}}, nullptr},
      {"clip_tensor_max", "Clip", {{"x", iota({2, 3})}, {"lo", floats({-0.3}, {})}}, {}, nullptr},
      {"dropout", "Dropout", {{"x", iota({2, 3})}}, {}, nullptr},
      {"flatten", "Flatten", {{"x", iota({2, 3, 4})}}, {}, [](onnx::NodeProto& n) { attr_i(n, "axis", 0); }},
      {"argmin", "ArgMin", {{"x", iota({3, 4})}}, {}, [](onnx::NodeProto& n) { attr_i(n, "axis", -1), attr_i(n, "keepdims", 0); }},
      {"hardswish", "HardSwish", {{"x", iota({2, 3, 4})}}, {}, nullptr},
      {"range_const", "Range", {}, {{"s", ints({1}, {})}, {"l", ints({9}, {})}, {"d", ints({3}, {})}}, nullptr},
  };
  for (const Simple& c : simple) {
    Model m(c.opset);
    std::vector<std::string> ins, outs;
    for (const auto& [n, t] : c.inputs) m.input(n, t), ins.push_back(n);
    for (const auto& [n, t] : c.inits) m.init(n, t), ins.push_back(n);
    for (int i = 0; i < c.outputs; ++i) outs.push_back("y" + std::to_string(i));
    auto& node = m.node(c.op, ins, outs);
    if (c.attrs) c.attrs(node);
    for (const auto& o : outs) m.output(o);
    if (c.inputs.empty()) continue;  // a graph of constants alone: folded at import
    check(c.name, m);
  }

  // Refusals: the node, and the attribute or input at fault.
  {
    Model m;
    m.input("x", iota({4}));
    m.node("NonZero", {"x"}, {"y"});
    m.output("y");
    refused("nonzero", m, {"NonZero_node", "depends on the input's values"});
  }
  {
    Model m;
    m.input("x", iota({1, 1, 2, 2})).init("sc", floats({1, 1, 2, 2}, {4}));
    attr_s(m.node("Resize", {"x", "", "sc"}, {"y"}), "coordinate_transformation_mode", "tf_crop_and_resize");
    m.output("y");
    refused("resize_tf_crop", m, {"Resize_node", "coordinate_transformation_mode", "tf_crop_and_resize"});
  }
  {
    Model m;
    m.input("x", iota({1, 1, 2, 2})).init("sc", floats({1, 1, 2, 2}, {4}));
    attr_s(m.node("Resize", {"x", "", "sc"}, {"y"}), "mode", "area");
    m.output("y");
    refused("resize_bad_mode", m, {"Resize_node", "'mode'", "area"});
  }
  {
    Model m;
    m.input("x", iota({2, 3}));
    attr_i(m.node("Gather", {"x", "x"}, {"y"}), "axis", 5);
    m.output("y");
    refused("gather_bad_axis", m, {"Gather_node", "attribute 'axis'", "5"});
  }
  {
    Model m;
    m.input("x", iota({3})).init("i", ints({3}));
    m.node("Gather", {"x", "i"}, {"y"});
    m.output("y");
    refused("gather_out_of_range", m, {"Gather_node", "indices", "3", "size 3"});
  }
  {
    Model m;
    m.input("x", iota({2, 3})).input("s", ints({2, 3}));
    m.node("Expand", {"x", "s"}, {"y"});
    m.output("y");
    refused("expand_dynamic_shape", m, {"Expand_node", "input 'shape'", "constant"});
  }
  {
    Model m;
    m.input("x", iota({2, 3})).init("p", ints({1, 1}));
    m.node("Pad", {"x", "p"}, {"y"});
    m.output("y");
    refused("pad_bad_length", m, {"Pad_node", "input 'pads'", "4 expected"});
  }
  {
    Model m;
    m.input("x", iota({2, 3})).init("p", ints({0, 3, 0, 0}));
    attr_s(m.node("Pad", {"x", "p"}, {"y"}), "mode", "reflect");
    m.output("y");
    refused("pad_reflect_too_wide", m, {"Pad_node", "reflect"});
  }
  {
    Model m;
    m.input("x", iota({2, 3})).init("sp", ints({1, 1}));
    attr_i(m.node("Split", {"x", "sp"}, {"a", "b"}), "axis", 1);
    m.output("a").output("b");
    refused("split_bad_sizes", m, {"Split_node", "add up to 2", "3"});
  }
  {
    Model m;
    m.input("x", iota({3, 4})).init("i", ints({1}, {1, 1})).init("u", iota({1}));
    attr_s(m.node("ScatterND", {"x", "i", "u"}, {"y"}), "reduction", "mul");
    m.output("y");
    refused("scatter_nd_mul", m, {"ScatterND_node", "reduction", "mul"});
  }
  {
    Model m;
    m.input("x", iota({2, 3}));
    attr_i(m.node("Cast", {"x"}, {"y"}), "to", 10);  // float16
    m.output("y");
    refused("cast_float16", m, {"Cast_node", "'to'", "10"});
  }
  {
    Model m;
    m.input("x", iota({2, 3})).init("a", ints({0}));
    m.node("Squeeze", {"x", "a"}, {"y"});
    m.output("y");
    refused("squeeze_not_one", m, {"Squeeze_node", "cannot squeeze axis 0"});
  }
  {
    Model m;
    m.input("x", iota({2, 3})).input("k", ints({1}));
    m.node("TopK", {"x", "k"}, {"v", "i"});
    m.output("v");
    refused("topk_dynamic_k", m, {"TopK_node", "input 'K'"});
  }
  {
    Model m;
    m.input("x", iota({1, 2, 3, 3, 3})).init("w", iota({1, 2, 1, 1, 1}));
    m.node("Conv", {"x", "w"}, {"y"});
    m.output("y");
    refused("conv_3d", m, {"Conv_node", "3-D convolution"});
  }
}
#endif

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--only" && i + 1 < argc) only = argv[++i];
    else if (a == "--no-compile") compile_too = false;
    else {
      std::cerr << "usage: test_onnx_ops [--only SUBSTRING] [--no-compile]\n";
      return 2;
    }
  }
  if (!have_onnx()) {
    std::cout << "skipped: this build reads no ONNX models\n";
    return 0;
  }
  std::ifstream kf(fs::path(LS_TEST_DATA) / "onnx_ops" / "known_failures.txt");
  for (std::string line; std::getline(kf, line);)
    if (!line.empty() && line[0] != '#') known[line.substr(0, line.find(' '))] = line.substr(line.find(' ') + 1);
  run_ort_cases(fs::path(LS_TEST_DATA) / "onnx_ops");
  for (const auto& [name, why] : known)
    if (!known_seen.count(name) && (only.empty() || name.find(only) != std::string::npos))
      std::cout << "note: known failure " << name << " passes now: remove it from known_failures.txt\n";
#ifdef LOWERSCOPE_HAVE_ONNX
  built_here();
#endif
  std::cout << passed << " passed, " << failures << " failed\n";
  return failures ? 1 : 0;
}
