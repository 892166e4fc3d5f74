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

// tools/gpu/onnx_op_cases.py wrote, before its "format": 2, every 0-d tensor's shape as [1]: its
// enc() went through np.ascontiguousarray, which returns at least 1-d. ONNX Runtime's outputs were
// 0-d all along (ReduceX over all axes with keepdims=0, MatMul of two vectors, Einsum "ii" and
// "ijk->": 0-d in the spec and in NumPy too), and so were the fed inputs (Clip's 'max' in
// clip_max_input): the .onnx beside each file declares its graph inputs and outputs with the shapes
// of those same arrays. So, in a file of the older format only, a tensor recorded [1] whose graph
// input or output the model declares 0-d is read as 0-d; any other shape is taken as written.
std::map<std::string, Shape> declared_shapes(const fs::path& model_path) {
  std::map<std::string, Shape> out;
#ifdef LOWERSCOPE_HAVE_ONNX
  onnx::ModelProto m;
  std::ifstream f(model_path, std::ios::binary);
  if (!f || !m.ParseFromIstream(&f)) return out;
  auto add = [&](const onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
    Shape s;
    for (const auto& d : v.type().tensor_type().shape().dim()) s.push_back(d.has_dim_value() ? d.dim_value() : -1);
    out[v.name()] = s;
  };
  for (const auto& v : m.graph().input()) add(v);
  for (const auto& v : m.graph().output()) add(v);
#else
  (void)model_path;
#endif
  return out;
}

Tensor decode_case_tensor(const json& t, bool scalars_as_1, const std::map<std::string, Shape>& declared) {
  Tensor x = decode(t);
  if (!scalars_as_1 || x.shape() != Shape{1}) return x;
  const auto d = declared.find(t.value("name", std::string()));
  if (d == declared.end() || !d->second.empty()) return x;
  Tensor s(x.dtype(), Shape{});
  std::memcpy(s.data(), x.data(), static_cast<size_t>(x.nbytes()));
  return s;
}

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
      const bool scalars_as_1 = j.value("format", 1) < 2;
      const std::map<std::string, Shape> declared =
          scalars_as_1 ? declared_shapes(dir / (name + ".onnx")) : std::map<std::string, Shape>{};
      for (const json& t : j.at("inputs")) inputs.push_back(decode_case_tensor(t, scalars_as_1, declared));
      for (const json& t : j.at("outputs")) want.push_back(decode_case_tensor(t, scalars_as_1, declared));
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

// ---- Einsum, ConvTranspose, LSTM, GRU, If, Loop: expected values from plain loops here --------

// Deterministic values in [-1, 1).
Tensor rnd(Shape s, uint32_t seed) {
  Tensor t(DType::f32, s);
  uint32_t x = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < t.numel(); ++i) {
    x = x * 1664525u + 1013904223u;
    t.set(i, static_cast<double>(x >> 8) / static_cast<double>(1u << 24) * 2.0 - 1.0);
  }
  return t;
}

// Every output against `want` (reference interpreter and compiled CPU code).
void check_all(const std::string& name, const Model& model, const std::vector<Tensor>& want) {
  if (!only.empty() && name.find(only) == std::string::npos) return;
  try {
    const Graph g = import_onnx(model.write(name));
    const std::vector<Tensor> ref = run_reference(g, model.inputs);
    if (ref.size() != want.size()) return fail(name + ": " + std::to_string(ref.size()) + " outputs, expected " + std::to_string(want.size()));
    for (size_t i = 0; i < want.size(); ++i)
      if (std::string m = mismatch(ref[i], want[i], 1e-4, 1e-5); !m.empty()) return fail(name + ": reference: output " + std::to_string(i) + ": " + m);
    if (compile_too) {
      const CompileResult r = compile(g, model.inputs, name);
      if (!r.error.empty()) return fail(name + ": cpu: " + r.error_stage + ": " + r.error.substr(0, 300));
      for (size_t i = 0; i < want.size(); ++i)
        if (std::string m = mismatch(r.outputs.at(i), want[i], 1e-4, 1e-5); !m.empty()) return fail(name + ": cpu: output " + std::to_string(i) + ": " + m);
    }
    ++passed;
  } catch (const std::exception& e) {
    fail(name + ": " + std::string(e.what()).substr(0, 400));
  }
}

// ConvTranspose as ONNX defines it: each input element scatters x * w into the full output
// (in - 1) * stride + (k - 1) * dilation + 1 (+ output_padding zeros), of which [pad_head, +out) is kept.
Tensor conv_transpose_ref(const Tensor& x, const Tensor& w, const Tensor* bias, int64_t G, const std::vector<int64_t>& st,
                          const std::vector<int64_t>& dil, const std::vector<int64_t>& head, const Shape& out_sp) {
  const Shape& xs = x.shape();
  const Shape& ws = w.shape();
  const size_t nd = xs.size() - 2;
  const int64_t N = xs[0], Cin = xs[1], CinG = Cin / G, CoutG = ws[1], Cout = CoutG * G;
  Shape os = {N, Cout};
  os.insert(os.end(), out_sp.begin(), out_sp.end());
  Tensor y(DType::f32, os);
  std::vector<double> acc(static_cast<size_t>(y.numel()), 0.0);
  const Shape in_sp(xs.begin() + 2, xs.end()), k_sp(ws.begin() + 2, ws.end());
  int64_t nin = 1, nk = 1, nout = 1;
  for (size_t d = 0; d < nd; ++d) nin *= in_sp[d], nk *= k_sp[d], nout *= out_sp[d];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ci = 0; ci < Cin; ++ci)
      for (int64_t oc = 0; oc < CoutG; ++oc)
        for (int64_t p = 0; p < nin; ++p)
          for (int64_t q = 0; q < nk; ++q) {
            int64_t o = 0, rp = p, rq = q;
            bool inside = true;
            std::vector<int64_t> ip(nd), kq(nd);
            for (size_t d = nd; d-- > 0;) ip[d] = rp % in_sp[d], rp /= in_sp[d], kq[d] = rq % k_sp[d], rq /= k_sp[d];
            for (size_t d = 0; d < nd; ++d) {
              const int64_t pos = ip[d] * st[d] + kq[d] * dil[d] - head[d];
              if (pos < 0 || pos >= out_sp[d]) inside = false;
              o = o * out_sp[d] + pos;
            }
            if (!inside) continue;
            const int64_t co = (ci / CinG) * CoutG + oc;
            acc[static_cast<size_t>((n * Cout + co) * nout + o)] += x.get((n * Cin + ci) * nin + p) * w.get((ci * CoutG + oc) * nk + q);
          }
  for (int64_t i = 0; i < y.numel(); ++i) y.set(i, acc[static_cast<size_t>(i)] + (bias ? bias->get((i / nout) % Cout) : 0.0));
  return y;
}

// ONNX LSTM / GRU (layout 0, default activations), in doubles: Y [T, D, B, H], Y_h (, Y_c).
std::vector<Tensor> rnn_ref(bool lstm, const Tensor& X, const Tensor& W, const Tensor& R, const Tensor* Bv, const Tensor* h0,
                            const Tensor* c0, const Tensor* P, int64_t D, bool reverse, bool lbr) {
  const int64_t T = X.shape()[0], B = X.shape()[1], I = X.shape()[2], G = lstm ? 4 : 3, H = W.shape()[1] / G;
  Tensor Y(DType::f32, {T, D, B, H}), Yh(DType::f32, {D, B, H}), Yc(DType::f32, {D, B, H});
  auto sg = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  for (int64_t d = 0; d < D; ++d) {
    std::vector<double> h(B * H, 0.0), c(B * H, 0.0);
    for (int64_t i = 0; i < B * H; ++i) h[i] = h0 ? h0->get(d * B * H + i) : 0.0, c[i] = c0 ? c0->get(d * B * H + i) : 0.0;
    auto wx = [&](int64_t t, int64_t bb, int64_t row) {  // W[row] . x + Wb[row]
      double v = Bv ? Bv->get(d * 2 * G * H + row) : 0.0;
      for (int64_t k = 0; k < I; ++k) v += W.get((d * G * H + row) * I + k) * X.get((t * B + bb) * I + k);
      return v;
    };
    auto rh = [&](const std::vector<double>& hv, int64_t bb, int64_t row, bool with_bias) {  // R[row] . h + Rb[row]
      double v = Bv && with_bias ? Bv->get(d * 2 * G * H + G * H + row) : 0.0;
      for (int64_t k = 0; k < H; ++k) v += R.get((d * G * H + row) * H + k) * hv[bb * H + k];
      return v;
    };
    for (int64_t step = 0; step < T; ++step) {
      const int64_t t = reverse || d == 1 ? T - 1 - step : step;
      std::vector<double> hn(B * H), cn(B * H);
      for (int64_t bb = 0; bb < B; ++bb)
        for (int64_t j = 0; j < H; ++j) {
          const int64_t k = bb * H + j;
          if (lstm) {
            const double pi = P ? P->get(d * 3 * H + j) : 0, po = P ? P->get(d * 3 * H + H + j) : 0, pf = P ? P->get(d * 3 * H + 2 * H + j) : 0;
            const double ig = sg(wx(t, bb, j) + rh(h, bb, j, true) + pi * c[k]);
            const double fg = sg(wx(t, bb, 2 * H + j) + rh(h, bb, 2 * H + j, true) + pf * c[k]);
            const double cg = std::tanh(wx(t, bb, 3 * H + j) + rh(h, bb, 3 * H + j, true));
            cn[k] = fg * c[k] + ig * cg;
            const double og = sg(wx(t, bb, H + j) + rh(h, bb, H + j, true) + po * cn[k]);
            hn[k] = og * std::tanh(cn[k]);
          } else {
            const double z = sg(wx(t, bb, j) + rh(h, bb, j, true));
            const double r = sg(wx(t, bb, H + j) + rh(h, bb, H + j, true));
            double hh;
            if (lbr) {
              hh = std::tanh(wx(t, bb, 2 * H + j) + r * rh(h, bb, 2 * H + j, true));
            } else {
              std::vector<double> rhv(B * H);
              for (int64_t q = 0; q < H; ++q) {
                const double rq = sg(wx(t, bb, H + q) + rh(h, bb, H + q, true));
                rhv[bb * H + q] = rq * h[bb * H + q];
              }
              hh = std::tanh(wx(t, bb, 2 * H + j) + rh(rhv, bb, 2 * H + j, true));
            }
            hn[k] = (1 - z) * hh + z * h[k];
          }
        }
      h = hn;
      if (lstm) c = cn;
      for (int64_t i = 0; i < B * H; ++i) Y.set(((t * D + d) * B) * H + i, h[i]);
    }
    for (int64_t i = 0; i < B * H; ++i) Yh.set(d * B * H + i, h[i]), Yc.set(d * B * H + i, c[i]);
  }
  if (lstm) return {Y, Yh, Yc};
  return {Y, Yh};
}
Tensor permuted(const Tensor& t, const std::vector<int64_t>& perm) {  // t.permute(perm), contiguous
  const Shape& s = t.shape();
  Shape o;
  for (int64_t p : perm) o.push_back(s[p]);
  Tensor y(t.dtype(), o);
  for (int64_t i = 0; i < y.numel(); ++i) {
    int64_t r = i, src = 0;
    std::vector<int64_t> idx(o.size());
    for (size_t d = o.size(); d-- > 0;) idx[d] = r % o[d], r /= o[d];
    std::vector<int64_t> in(s.size());
    for (size_t d = 0; d < o.size(); ++d) in[perm[d]] = idx[d];
    for (size_t d = 0; d < s.size(); ++d) src = src * s[d] + in[d];
    y.set(i, t.get(src));
  }
  return y;
}

onnx::GraphProto& attr_graph(onnx::NodeProto& n, const std::string& name) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name(name);
  return *a->mutable_g();
}
onnx::NodeProto& sub_node(onnx::GraphProto& g, const std::string& op, const std::vector<std::string>& ins, const std::vector<std::string>& outs) {
  auto* n = g.add_node();
  n->set_op_type(op);
  n->set_name(op + "_" + outs.at(0));
  for (const auto& i : ins) n->add_input(i);
  for (const auto& o : outs) n->add_output(o);
  return *n;
}

void control_and_sequence_ops() {
  // ---- Einsum
  {
    const Tensor a = rnd({2, 3, 4}, 1), b = rnd({2, 4, 5}, 2);
    Tensor want(DType::f32, {2, 3, 5});
    for (int64_t bb = 0; bb < 2; ++bb)
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t k = 0; k < 5; ++k) {
          double v = 0;
          for (int64_t j = 0; j < 4; ++j) v += a.get((bb * 3 + i) * 4 + j) * b.get((bb * 4 + j) * 5 + k);
          want.set((bb * 3 + i) * 5 + k, v);
        }
    Model m;
    m.input("a", a).input("b", b);
    attr_s(m.node("Einsum", {"a", "b"}, {"y"}), "equation", "bij,bjk->bik");
    m.output("y");
    check_all("einsum_bmm", m, {want});
  }
  {  // trace, implicit: "ii" -> a scalar
    const Tensor s = rnd({4, 4}, 3);
    Model m;
    m.input("s", s);
    attr_s(m.node("Einsum", {"s"}, {"y"}), "equation", "ii");
    m.output("y");
    check_all("einsum_trace", m, {floats({s.get(0) + s.get(5) + s.get(10) + s.get(15)}, {})});
  }
  {  // implicit output in ASCII order: "Ab,bc" -> "Ac"; "ba" -> "ab" (a transpose)
    const Tensor a = rnd({2, 3}, 4), c = rnd({3, 4}, 5);
    Model m;
    m.input("a", a).input("c", c);
    attr_s(m.node("Einsum", {"a", "c"}, {"y"}), "equation", "Ab,bc");
    attr_s(m.node("Einsum", {"a"}, {"t"}), "equation", "ba");
    m.output("y").output("t");
    Tensor want(DType::f32, {2, 4});
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t k = 0; k < 4; ++k) {
        double v = 0;
        for (int64_t j = 0; j < 3; ++j) v += a.get(i * 3 + j) * c.get(j * 4 + k);
        want.set(i * 4 + k, v);
      }
    check_all("einsum_implicit_order", m, {want, permuted(a, {1, 0})});
  }
  {  // broadcast ellipsis, diagonal and a three-operand contraction: reference against compiled code
    Model m;
    m.input("u", rnd({2, 1, 3, 3}, 6)).input("v", rnd({5, 3, 2}, 7)).input("w", rnd({3}, 8));
    attr_s(m.node("Einsum", {"u", "v", "w"}, {"y"}), "equation", "...ii,...ik,i->...k");
    m.output("y");
    check("einsum_ellipsis_diagonal", m);
  }
  // ---- ConvTranspose
  struct CT {
    const char* name;
    Shape x, w;
    bool bias;
    int64_t group;
    std::vector<int64_t> strides, dil, pads, opad, oshape;
    const char* auto_pad;
  };
  const std::vector<CT> cts = {
      {"convT_groups_asym_pads", {1, 4, 3, 4}, {4, 3, 3, 2}, true, 2, {2, 1}, {1, 2}, {1, 0, 0, 1}, {1, 0}, {}, nullptr},
      {"convT_1d_same_upper", {2, 3, 5}, {3, 2, 4}, false, 1, {2}, {1}, {}, {}, {}, "SAME_UPPER"},
      {"convT_same_lower", {1, 2, 3, 3}, {2, 2, 2, 3}, true, 1, {2, 2}, {1, 1}, {}, {}, {}, "SAME_LOWER"},
      {"convT_output_shape", {1, 2, 3, 3}, {2, 1, 3, 3}, false, 1, {2, 3}, {1, 1}, {}, {}, {6, 8}, nullptr},
      {"convT_valid_3d", {1, 2, 2, 3, 2}, {2, 2, 2, 2, 2}, true, 1, {1, 2, 1}, {1, 1, 2}, {}, {}, {}, "VALID"},
      {"convT_depthwise", {1, 3, 4, 4}, {3, 1, 3, 3}, true, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, {}, {}, nullptr},
  };
  uint32_t seed = 20;
  for (const CT& c : cts) {
    const size_t nd = c.x.size() - 2;
    const Tensor x = rnd(c.x, seed++), w = rnd(c.w, seed++), bias = rnd({c.w[1] * c.group}, seed++);
    Model m;
    m.input("x", x).init("w", w);
    if (c.bias) m.init("b", bias);
    auto& node = m.node("ConvTranspose", c.bias ? std::vector<std::string>{"x", "w", "b"} : std::vector<std::string>{"x", "w"}, {"y"});
    attr_i(node, "group", c.group);
    attr_ints(node, "strides", c.strides);
    attr_ints(node, "dilations", c.dil);
    if (!c.pads.empty()) attr_ints(node, "pads", c.pads);
    if (!c.opad.empty()) attr_ints(node, "output_padding", c.opad);
    if (!c.oshape.empty()) attr_ints(node, "output_shape", c.oshape);
    if (c.auto_pad) attr_s(node, "auto_pad", c.auto_pad);
    m.output("y");
    // The geometry as ONNX Runtime computes it (ConvTransposeAttributes, DistributePadding: an odd
    // total padding puts the extra on the tail for SAME_UPPER, on the head otherwise).
    std::vector<int64_t> head(nd), out(nd);
    for (size_t d = 0; d < nd; ++d) {
      const int64_t op = c.opad.empty() ? 0 : c.opad[d];
      const int64_t full = (c.x[2 + d] - 1) * c.strides[d] + op + (c.w[2 + d] - 1) * c.dil[d] + 1;
      const std::string ap = c.auto_pad ? c.auto_pad : "NOTSET";
      int64_t want = -1;
      if (!c.oshape.empty()) want = c.oshape[d];
      else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") want = c.x[2 + d] * c.strides[d];
      if (want >= 0) {
        const int64_t total = full - want;
        head[d] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
        out[d] = want;
      } else {
        const int64_t pb = c.pads.empty() || ap == "VALID" ? 0 : c.pads[d], pe = c.pads.empty() || ap == "VALID" ? 0 : c.pads[d + nd];
        head[d] = pb;
        out[d] = full - pb - pe;
      }
    }
    check_all(c.name, m, {conv_transpose_ref(x, w, c.bias ? &bias : nullptr, c.group, c.strides, c.dil, head, out)});
  }
  // ---- LSTM and GRU
  struct RnnCase {
    const char* name;
    bool lstm;
    const char* direction;
    int layout;
    bool bias, init, peep, lbr;
  };
  const std::vector<RnnCase> rnns = {
      {"lstm_forward", true, "forward", 0, true, true, false, false},
      {"lstm_reverse_nobias", true, "reverse", 0, false, false, false, false},
      {"lstm_bidirectional_layout1_peepholes", true, "bidirectional", 1, true, true, true, false},
      {"gru_forward", false, "forward", 0, true, true, false, false},
      {"gru_reverse_lbr", false, "reverse", 0, true, false, false, true},
      {"gru_bidirectional_layout1_lbr", false, "bidirectional", 1, true, true, false, true},
      {"gru_bidirectional_nobias", false, "bidirectional", 0, false, true, false, false},
  };
  for (const RnnCase& c : rnns) {
    const int64_t T = 4, B = 2, I = 3, H = 3, D = std::string(c.direction) == "bidirectional" ? 2 : 1, G = c.lstm ? 4 : 3;
    const Tensor X = rnd({T, B, I}, seed++), W = rnd({D, G * H, I}, seed++), R = rnd({D, G * H, H}, seed++), Bv = rnd({D, 2 * G * H}, seed++);
    const Tensor h0 = rnd({D, B, H}, seed++), c0 = rnd({D, B, H}, seed++), P = rnd({D, 3 * H}, seed++);
    Model m;
    m.input("X", c.layout ? permuted(X, {1, 0, 2}) : X).init("W", W).init("R", R);
    std::vector<std::string> ins = {"X", "W", "R", c.bias ? "B" : "", "", c.init ? "h0" : ""};
    if (c.bias) m.init("B", Bv);
    if (c.init) m.input("h0", c.layout ? permuted(h0, {1, 0, 2}) : h0);
    if (c.lstm) {
      ins.push_back(c.init ? "c0" : "");
      if (c.init) m.input("c0", c.layout ? permuted(c0, {1, 0, 2}) : c0);
      if (c.peep) ins.push_back("P"), m.init("P", P);
    }
    while (!ins.empty() && ins.back().empty()) ins.pop_back();
    std::vector<std::string> outs = {"Y", "Yh"};
    if (c.lstm) outs.push_back("Yc");
    auto& node = m.node(c.lstm ? "LSTM" : "GRU", ins, outs);
    attr_s(node, "direction", c.direction);
    attr_i(node, "hidden_size", H);
    if (c.layout) attr_i(node, "layout", 1);
    if (c.lbr) attr_i(node, "linear_before_reset", 1);
    for (const auto& o : outs) m.output(o);
    std::vector<Tensor> want = rnn_ref(c.lstm, X, W, R, c.bias ? &Bv : nullptr, c.init ? &h0 : nullptr, c.init ? &c0 : nullptr,
                                       c.peep ? &P : nullptr, D, std::string(c.direction) == "reverse", c.lbr);
    if (c.layout) {
      want[0] = permuted(want[0], {2, 0, 1, 3});
      for (size_t i = 1; i < want.size(); ++i) want[i] = permuted(want[i], {1, 0, 2});
    }
    check_all(c.name, m, want);
  }
  // ---- If with a constant condition; the branches read outer names
  for (bool cond : {true, false}) {
    Model m;
    Tensor cv(DType::b8, {});
    cv.set(0, cond ? 1 : 0);
    const Tensor x = rnd({2, 3}, seed++), w = rnd({3}, seed++);
    m.input("x", x).init("c", cv).init("w", w);
    auto& node = m.node("If", {"c"}, {"y"});
    auto& then_g = attr_graph(node, "then_branch");
    sub_node(then_g, "Add", {"x", "w"}, {"t"});
    sub_node(then_g, "Mul", {"t", "x"}, {"t2"});
    then_g.add_output()->set_name("t2");
    auto& else_g = attr_graph(node, "else_branch");
    sub_node(else_g, "Sub", {"x", "w"}, {"t"});  // the same inner name in both branches
    else_g.add_output()->set_name("t");
    m.output("y");
    Tensor want(DType::f32, {2, 3});
    for (int64_t i = 0; i < 6; ++i) want.set(i, cond ? (x.get(i) + w.get(i % 3)) * x.get(i) : x.get(i) - w.get(i % 3));
    check_all(cond ? "if_then" : "if_else", m, {want});
  }
  {  // a condition folded at import: Shape(x)[0] == 2
    Model m;
    const Tensor x = rnd({2, 3}, seed++);
    m.input("x", x).init("z", ints({0}, {})).init("two", ints({2}, {}));
    m.node("Shape", {"x"}, {"s"});
    m.node("Gather", {"s", "z"}, {"d"});
    m.node("Equal", {"d", "two"}, {"c"});
    auto& node = m.node("If", {"c"}, {"y"});
    auto& then_g = attr_graph(node, "then_branch");
    sub_node(then_g, "Neg", {"x"}, {"n"});
    then_g.add_output()->set_name("n");
    auto& else_g = attr_graph(node, "else_branch");
    else_g.add_output()->set_name("x");
    m.output("y");
    Tensor want(DType::f32, {2, 3});
    for (int64_t i = 0; i < 6; ++i) want.set(i, -x.get(i));
    check_all("if_folded_condition", m, {want});
  }
  // ---- Loop: 3 iterations, a carried value, a scan output, the iteration number used
  {
    Model m;
    const Tensor x = rnd({2}, seed++), w = rnd({2}, seed++);
    Tensor tv(DType::b8, {});
    tv.set(0, 1);
    m.input("x", x).init("M", ints({3}, {})).init("cond", tv).init("w", w);
    auto& node = m.node("Loop", {"M", "cond", "x"}, {"final", "scan"});
    auto& body = attr_graph(node, "body");
    for (const char* nm : {"i", "c_in", "v_in"}) body.add_input()->set_name(nm);
    sub_node(body, "Identity", {"c_in"}, {"c_out"});
    sub_node(body, "Cast", {"i"}, {"fi"});
    attr_i(*body.mutable_node(1), "to", onnx::TensorProto::FLOAT);
    sub_node(body, "Mul", {"w", "fi"}, {"wi"});
    sub_node(body, "Add", {"v_in", "wi"}, {"v_out"});
    sub_node(body, "Mul", {"v_out", "v_out"}, {"sq"});
    for (const char* nm : {"c_out", "v_out", "sq"}) body.add_output()->set_name(nm);
    m.output("final").output("scan");
    Tensor fin(DType::f32, {2}), scan(DType::f32, {3, 2});
    for (int64_t j = 0; j < 2; ++j) {
      double v = x.get(j);
      for (int64_t i = 0; i < 3; ++i) {
        v += w.get(j) * static_cast<double>(i);
        scan.set(i * 2 + j, v * v);
      }
      fin.set(j, v);
    }
    check_all("loop_unrolled", m, {fin, scan});
  }
  {  // a while loop whose condition folds: runs while i < 2 (Less of the iteration number)
    Model m;
    const Tensor x = rnd({3}, seed++);
    Tensor tv(DType::b8, {});
    tv.set(0, 1);
    m.input("x", x).init("cond", tv).init("two", ints({1}, {}));
    auto& node = m.node("Loop", {"", "cond", "x"}, {"final"});
    auto& body = attr_graph(node, "body");
    for (const char* nm : {"i", "c_in", "v_in"}) body.add_input()->set_name(nm);
    sub_node(body, "Less", {"i", "two"}, {"c_out"});
    sub_node(body, "Add", {"v_in", "v_in"}, {"v_out"});
    for (const char* nm : {"c_out", "v_out"}) body.add_output()->set_name(nm);
    m.output("final");
    Tensor want(DType::f32, {3});  // iterations 0 and 1 run: x * 4
    for (int64_t j = 0; j < 3; ++j) want.set(j, x.get(j) * 4);
    check_all("loop_while_folded", m, {want});
  }
  // ---- refused: the node and why
  {
    Model m;
    Tensor cv(DType::b8, {});
    cv.set(0, 1);
    m.input("x", iota({2})).input("c", cv);
    auto& node = m.node("If", {"c"}, {"y"});
    attr_graph(node, "then_branch").add_output()->set_name("x");
    attr_graph(node, "else_branch").add_output()->set_name("x");
    m.output("y");
    refused("if_dynamic_condition", m, {"If_node", "input 'cond'", "constant"});
  }
  {
    Model m;
    Tensor tv(DType::b8, {});
    tv.set(0, 1);
    m.input("x", iota({2})).input("M", ints({3}, {})).init("cond", tv);
    auto& node = m.node("Loop", {"M", "cond", "x"}, {"y"});
    auto& body = attr_graph(node, "body");
    for (const char* nm : {"i", "c_in", "v_in"}) body.add_input()->set_name(nm);
    for (const char* nm : {"c_in", "v_in"}) body.add_output()->set_name(nm);
    m.output("y");
    refused("loop_dynamic_trip_count", m, {"Loop_node", "input 'M'", "not a constant"});
  }
  {
    Model m;
    m.input("x", rnd({1, 2, 3}, 1)).init("W", rnd({1, 12, 3}, 2)).init("R", rnd({1, 12, 3}, 3));
    attr_i(m.node("LSTM", {"x", "W", "R"}, {"Y"}), "input_forget", 1);
    m.output("Y");
    refused("lstm_input_forget", m, {"LSTM_node", "input_forget"});
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
      {"clip_bounds_shape1", "Clip", {{"x", iota({2, 3})}, {"lo", floats({-0.3}, {1})}, {"hi", floats({0.4}, {1})}}, {}, nullptr},
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

  control_and_sequence_ops();

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
    refused("expand_dynamic_shape", m, {"Expand_node", "input 'shape'", "known at import", "graph input"});
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
    attr_i(m.node("Cast", {"x"}, {"y"}), "to", 14);  // complex64
    m.output("y");
    refused("cast_complex64", m, {"Cast_node", "'to'", "14"});
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
  {  // a [1]-shaped bound (as ONNX Runtime's CPU Clip takes it) keeps a 0-d x 0-d
    Model m;
    m.input("x", floats({0.7}, {})).input("lo", floats({-0.3}, {1})).input("hi", floats({0.4}, {1}));
    m.node("Clip", {"x", "lo", "hi"}, {"y"});
    m.output("y");
    check("clip_0d_x_bounds_shape1", m, floats({0.4}, {}));
  }
  {
    Model m;
    m.input("x", iota({2, 3})).input("hi", floats({0.4, 0.5}, {2}));
    m.node("Clip", {"x", "", "hi"}, {"y"});
    m.output("y");
    refused("clip_bound_not_scalar", m, {"Clip_node", "input 'max'", "[2]"});
  }
}
// ---- pooling (AveragePool, MaxPool, LpPool, Global*) and inputs known at import -----------

// ONNX's pooling, by its definition, in plain loops: explicit pads (auto_pad resolved here as the
// spec writes it), output floor or ceil of (in + pads - ((k - 1) * d + 1)) / s + 1, in ceil mode a
// window that would start in the right padding dropped; AveragePool divides by the taps inside the
// input (count_include_pad 0) or inside input and padding (1); MaxPool's indices count over the
// whole tensor; LpPool (sum |x|^p)^(1/p).
struct PoolSpec {
  std::string op = "AveragePool", auto_pad;
  std::vector<int64_t> k, s, d, pads;
  int ceil = 0, cip = 0, p = 2;
};
std::vector<Tensor> pool_ref(const Tensor& x, PoolSpec ps) {
  const Shape xs = x.shape();
  const size_t nd = xs.size() - 2;
  if (ps.s.empty()) ps.s.assign(nd, 1);
  if (ps.d.empty()) ps.d.assign(nd, 1);
  if (ps.pads.empty()) ps.pads.assign(2 * nd, 0);
  Shape os = {xs[0], xs[1]};
  for (size_t i = 0; i < nd; ++i) {
    const int64_t in = xs[2 + i], ek = (ps.k[i] - 1) * ps.d[i] + 1;
    if (ps.auto_pad == "VALID") ps.pads[i] = ps.pads[i + nd] = 0;
    if (ps.auto_pad == "SAME_UPPER" || ps.auto_pad == "SAME_LOWER") {
      const int64_t o = (in + ps.s[i] - 1) / ps.s[i], total = std::max<int64_t>(0, (o - 1) * ps.s[i] + ek - in);
      const int64_t small = total / 2;
      ps.pads[i] = ps.auto_pad == "SAME_UPPER" ? small : total - small;
      ps.pads[i + nd] = total - ps.pads[i];
    }
    const double q = static_cast<double>(in + ps.pads[i] + ps.pads[i + nd] - ek) / static_cast<double>(ps.s[i]);
    int64_t o = static_cast<int64_t>(ps.ceil ? std::ceil(q) : std::floor(q)) + 1;
    if (ps.ceil && (o - 1) * ps.s[i] - ps.pads[i] >= in) --o;
    os.push_back(o);
  }
  Tensor y(DType::f32, os), idx(DType::i64, os);
  int64_t taps = 1;
  for (int64_t kk : ps.k) taps *= kk;
  for (int64_t e = 0; e < y.numel(); ++e) {
    std::vector<int64_t> oi(os.size());
    for (int64_t r = e, a = static_cast<int64_t>(os.size()); a-- > 0;) oi[static_cast<size_t>(a)] = r % os[static_cast<size_t>(a)], r /= os[static_cast<size_t>(a)];
    double sum = 0, best = -INFINITY;
    int64_t count = 0, arg = -1;
    for (int64_t t = 0; t < taps; ++t) {
      int64_t rest = t, flat = oi[0] * xs[1] + oi[1];
      bool inside = true, in_padded = true;
      std::vector<int64_t> pos(nd);
      for (size_t i = nd; i-- > 0;) {
        const int64_t j = rest % ps.k[i];
        rest /= ps.k[i];
        pos[i] = oi[2 + i] * ps.s[i] - ps.pads[i] + j * ps.d[i];
        inside &= pos[i] >= 0 && pos[i] < xs[2 + i];
        in_padded &= pos[i] < xs[2 + i] + ps.pads[i + nd];
      }
      count += ps.cip ? in_padded : inside;
      if (!inside) continue;
      for (size_t i = 0; i < nd; ++i) flat = flat * xs[2 + i] + pos[i];
      const double v = x.get(flat);
      sum += ps.op == "LpPool" ? std::pow(std::fabs(v), ps.p) : v;
      if (v > best) best = v, arg = flat;
    }
    y.set(e, ps.op == "MaxPool" ? best : ps.op == "LpPool" ? std::pow(sum, 1.0 / ps.p) : count ? sum / static_cast<double>(count) : 0.0);
    idx.set(e, static_cast<double>(arg));
  }
  return {y, idx};
}

void pool_case(const std::string& name, const Tensor& x, const PoolSpec& ps, bool indices = false) {
  Model m(19);
  m.input("x", x);
  std::vector<std::string> outs = {"y"};
  if (indices) outs.push_back("i");
  auto& n = m.node(ps.op, {"x"}, outs);
  attr_ints(n, "kernel_shape", ps.k);
  if (!ps.s.empty()) attr_ints(n, "strides", ps.s);
  if (!ps.d.empty()) attr_ints(n, "dilations", ps.d);
  if (!ps.pads.empty()) attr_ints(n, "pads", ps.pads);
  if (!ps.auto_pad.empty()) attr_s(n, "auto_pad", ps.auto_pad);
  if (ps.ceil) attr_i(n, "ceil_mode", 1);
  if (ps.op == "AveragePool") attr_i(n, "count_include_pad", ps.cip);
  if (ps.op == "LpPool") attr_i(n, "p", ps.p);
  for (const auto& o : outs) m.output(o);
  std::vector<Tensor> want = pool_ref(x, ps);
  if (!indices) want.pop_back();
  check_all(name, m, want);
}

void pooling_and_static_inputs() {
  const Tensor x2 = rnd({2, 3, 7, 6}, 11), x1 = rnd({2, 2, 9}, 12), x3 = rnd({1, 2, 5, 4, 6}, 13);
  // AveragePool: every auto_pad mode, ceil_mode, count_include_pad 0/1, asymmetric and large pads,
  // dilations; 1-D, 2-D, 3-D.
  for (int cip : {0, 1})
    for (int ceil : {0, 1}) {
      const std::string sfx = "_cip" + std::to_string(cip) + "_ceil" + std::to_string(ceil);
      pool_case("avgpool_sym" + sfx, x2, {"AveragePool", "", {3, 3}, {2, 2}, {}, {1, 1, 1, 1}, ceil, cip});
      pool_case("avgpool_asym" + sfx, x2, {"AveragePool", "", {3, 2}, {2, 2}, {}, {0, 1, 2, 0}, ceil, cip});
      pool_case("avgpool_bigpad" + sfx, x2, {"AveragePool", "", {2, 2}, {3, 2}, {}, {2, 1, 2, 1}, ceil, cip});
      pool_case("avgpool_dilated" + sfx, x2, {"AveragePool", "", {2, 3}, {2, 1}, {2, 2}, {1, 1, 0, 2}, ceil, cip});
      pool_case("avgpool_1d" + sfx, x1, {"AveragePool", "", {4}, {3}, {}, {1, 2}, ceil, cip});
      pool_case("avgpool_1d_sym" + sfx, x1, {"AveragePool", "", {3}, {2}, {}, {1, 1}, ceil, cip});
      pool_case("avgpool_3d" + sfx, x3, {"AveragePool", "", {3, 2, 3}, {2, 2, 2}, {}, {1, 0, 1, 1, 1, 1}, ceil, cip});
      pool_case("avgpool_3d_sym" + sfx, x3, {"AveragePool", "", {3, 2, 3}, {2, 1, 2}, {}, {1, 1, 1, 1, 1, 1}, ceil, cip});
      for (const char* ap : {"SAME_UPPER", "SAME_LOWER", "VALID"})
        pool_case(std::string("avgpool_") + ap + sfx, x2, {"AveragePool", ap, {3, 2}, {2, 2}, {}, {}, ceil, cip});
    }
  pool_case("avgpool_window_all_padding", rnd({1, 2, 3}, 14), {"AveragePool", "", {2}, {1}, {}, {3, 0}, 0, 0});
  pool_case("avgpool_same_dilated", x2, {"AveragePool", "SAME_LOWER", {2, 2}, {1, 2}, {2, 3}, {}, 0, 1});
  pool_case("avgpool_default_stride", x2, {"AveragePool", "", {2, 3}, {}, {}, {}, 0, 0});
  // MaxPool: the same geometry; its indices where PyTorch's op computes them.
  for (int ceil : {0, 1}) {
    const std::string sfx = "_ceil" + std::to_string(ceil);
    pool_case("maxpool_sym" + sfx, x2, {"MaxPool", "", {3, 3}, {2, 2}, {}, {1, 1, 1, 1}, ceil}, true);
    pool_case("maxpool_asym" + sfx, x2, {"MaxPool", "", {3, 2}, {2, 2}, {}, {0, 1, 2, 0}, ceil});
    pool_case("maxpool_dilated" + sfx, x2, {"MaxPool", "", {2, 2}, {2, 1}, {2, 3}, {1, 1, 1, 1}, ceil}, true);
    pool_case("maxpool_1d" + sfx, x1, {"MaxPool", "", {3}, {2}, {}, {1, 1}, ceil}, true);
    pool_case("maxpool_1d_asym" + sfx, x1, {"MaxPool", "", {4}, {3}, {}, {0, 2}, ceil});
    pool_case("maxpool_3d" + sfx, x3, {"MaxPool", "", {3, 2, 3}, {2, 2, 2}, {}, {1, 1, 1, 1, 1, 1}, ceil}, true);
    pool_case("maxpool_3d_asym" + sfx, x3, {"MaxPool", "", {2, 2, 3}, {2, 1, 2}, {}, {1, 0, 0, 0, 1, 2}, ceil});
    for (const char* ap : {"SAME_UPPER", "SAME_LOWER", "VALID"})
      pool_case(std::string("maxpool_") + ap + sfx, x2, {"MaxPool", ap, {3, 2}, {2, 2}, {}, {}, ceil});
  }
  // LpPool (p 1, 2, 3), with pads, dilations and ceil_mode (opset 18).
  pool_case("lppool_p2", x2, {"LpPool", "", {3, 2}, {2, 2}, {}, {1, 0, 1, 1}, 0, 0, 2});
  pool_case("lppool_p1_ceil", x2, {"LpPool", "", {2, 2}, {2, 3}, {}, {}, 1, 0, 1});
  pool_case("lppool_p3_dilated", x1, {"LpPool", "", {3}, {1}, {2}, {1, 1}, 0, 0, 3});
  pool_case("lppool_same_upper_3d", x3, {"LpPool", "SAME_UPPER", {2, 2, 2}, {2, 2, 2}, {}, {}, 0, 0, 2});
  // Global pools of 1-D and 3-D inputs: every spatial axis.
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"})
    for (const Tensor* x : {&x1, &x3}) {
      Model m;
      m.input("x", *x);
      m.node(op, {"x"}, {"y"});
      m.output("y");
      Shape os = {x->shape()[0], x->shape()[1]};
      std::vector<int64_t> k;
      for (size_t i = 2; i < x->shape().size(); ++i) os.push_back(1), k.push_back(x->shape()[i]);
      const std::string o = op;
      PoolSpec ps{o == "GlobalAveragePool" ? "AveragePool" : o == "GlobalMaxPool" ? "MaxPool" : "LpPool", "", k};
      check(std::string(op) + "_" + std::to_string(x->shape().size() - 2) + "d", m, pool_ref(*x, ps)[0]);
    }
  {  // Indices with storage_order 1: refused by name
    Model m;
    m.input("x", x2);
    auto& n = m.node("MaxPool", {"x"}, {"y", "i"});
    attr_ints(n, "kernel_shape", {2, 2});
    attr_i(n, "storage_order", 1);
    m.output("y").output("i");
    refused("maxpool_storage_order", m, {"MaxPool_node", "Indices", "storage_order"});
  }
  {
    Model m;
    m.input("x", x2);
    attr_ints(m.node("AveragePool", {"x"}, {"y"}), "kernel_shape", {2, 2, 2});
    m.output("y");
    refused("avgpool_kernel_rank", m, {"AveragePool_node", "kernel_shape", "2 spatial axes"});
  }
  {
    Model m;
    m.input("x", x1);
    attr_ints(m.node("AveragePool", {"x"}, {"y"}), "kernel_shape", {12});
    m.output("y");
    refused("avgpool_window_too_large", m, {"AveragePool_node", "larger than spatial axis 0"});
  }

  // CumSum's axis (and other inputs that must be known at import) computed from Constant nodes.
  auto constant_node = [](Model& m, const std::string& out, const Tensor& t) {
    auto& n = m.node("Constant", {}, {out});
    auto* a = n.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    auto* tp = a->mutable_t();
    tp->set_data_type(t.dtype() == DType::i64 ? onnx::TensorProto::INT64 : onnx::TensorProto::FLOAT);
    for (int64_t dd : t.shape()) tp->add_dims(dd);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (t.dtype() == DType::i64) tp->add_int64_data(static_cast<int64_t>(t.get(i)));
      else tp->add_float_data(static_cast<float>(t.get(i)));
    }
  };
  const Tensor xc = floats({1, 2, 3, 4, 5, 6}, {2, 3});
  {  // axis: Constant [1] -> Reshape to [] (through a Constant shape) -> Cast (to int32) -> CumSum
    Model m;
    m.input("x", xc);
    constant_node(m, "a1", ints({1}, {1}));
    constant_node(m, "empty_shape", Tensor(DType::i64, {0}));
    m.node("Reshape", {"a1", "empty_shape"}, {"a0"});
    attr_i(m.node("Cast", {"a0"}, {"a32"}), "to", onnx::TensorProto::INT32);
    m.node("CumSum", {"x", "a32"}, {"y"});
    m.output("y");
    check("cumsum_axis_constant_reshape_cast", m, floats({1, 3, 6, 4, 9, 15}, {2, 3}));
  }
  {  // axis: a float Constant, Cast to int64, Squeezed, and through CastLike
    Model m;
    m.input("x", xc).init("like", ints({0}, {}));
    constant_node(m, "af", floats({0}, {1}));
    attr_i(m.node("Cast", {"af"}, {"ai"}), "to", onnx::TensorProto::INT64);
    m.node("Squeeze", {"ai"}, {"as"});
    m.node("CastLike", {"as", "like"}, {"ax"});
    m.node("CumSum", {"x", "ax"}, {"y"});
    m.output("y");
    check("cumsum_axis_constant_cast_squeeze", m, floats({1, 2, 3, 5, 7, 9}, {2, 3}));
  }
  {  // hf_roberta's position ids: the initializer 1 is first a tensor operand (ne(ids, 1)), then CumSum's axis
    Model m;
    m.input("ids", ints({1, 5, 7, 1, 9, 1}, {2, 3})).init("one", ints({1}, {}));
    m.node("Equal", {"ids", "one"}, {"eq"});
    m.node("Not", {"eq"}, {"ne"});
    attr_i(m.node("Cast", {"ne"}, {"mask"}), "to", onnx::TensorProto::INT64);
    m.node("CumSum", {"mask", "one"}, {"cs"});
    m.node("Mul", {"cs", "mask"}, {"y"});
    m.output("y");
    check("cumsum_axis_shared_initializer", m, ints({0, 1, 2, 0, 1, 0}, {2, 3}));
  }
  {  // Unsqueeze's axes and Reshape's shape from Constant nodes through Concat, Mul and Sign
    Model m;
    m.input("x", iota({2, 3}));
    constant_node(m, "c0", ints({0}, {1}));
    constant_node(m, "c2", ints({-2}, {1}));
    m.node("Sign", {"c2"}, {"sg"});
    m.node("Mul", {"c2", "sg"}, {"two"});
    attr_i(m.node("Concat", {"c0", "two"}, {"axes"}), "axis", 0);
    m.node("Unsqueeze", {"x", "axes"}, {"y"});
    m.output("y");
    check("unsqueeze_axes_folded", m, iota({1, 2, 1, 3}));
  }
  {  // an axis computed from the data: refused, naming the node that computes it
    Model m;
    m.input("x", xc);
    m.node("Shape", {"x"}, {"s"});
    attr_i(m.node("ArgMax", {"x"}, {"am"}), "keepdims", 0);
    m.node("ReduceMax", {"am"}, {"axis"});
    m.node("CumSum", {"x", "axis"}, {"y"});
    m.output("y");
    refused("cumsum_axis_from_data", m, {"CumSum_node", "input 'axis'", "'axis'", "computed from data", "(ReduceMax)"});
  }
  {
    Model m;
    m.input("x", xc).input("axis", ints({0}, {}));
    m.node("CumSum", {"x", "axis"}, {"y"});
    m.output("y");
    refused("cumsum_axis_graph_input", m, {"CumSum_node", "input 'axis'", "graph input"});
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
  pooling_and_static_inputs();
#endif
  std::cout << passed << " passed, " << failures << " failed\n";
  return failures ? 1 : 0;
}
