#include "frontend/load_model.h"

#include <algorithm>
#include <cmath>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include "frontend/fx_text.h"
#include "frontend/onnx.h"
#include "frontend/pt2.h"
#include "tensor/npy.h"

namespace ls {
namespace fs = std::filesystem;

namespace {

std::string find_model_file(const fs::path& dir) {
  for (const char* name : {"model.pt2", "model.onnx", "model.txt", "graph.txt"})
    if (fs::exists(dir / name)) return (dir / name).string();
  std::vector<std::string> txt;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".txt") txt.push_back(e.path().string());
  std::sort(txt.begin(), txt.end());
  if (txt.empty()) throw std::runtime_error(dir.string() + ": no model file (model.txt, graph.txt) in this folder");
  return txt.front();
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(path + ": cannot open file");
  std::ostringstream ss;
  ss << f.rdbuf();
  const std::string s = ss.str();
  if (s.find('\0') != std::string::npos) throw std::runtime_error(path + ": binary data where graph text was expected");
  return s;
}

// A float64 reference file: float64, of the shape of the float32 file it goes with.
Tensor load_npy64(const std::string& f, const Tensor* like, const std::string& like_from) {
  Tensor t = load_npy(f);
  if (t.dtype() != DType::f64)
    throw std::runtime_error(f + ": PyTorch's float64 result was expected here, the file holds " + std::string(dtype_torch(t.dtype())));
  if (like && like->defined() && like->shape() != t.shape())
    throw std::runtime_error(f + ": shape " + shape_str(t.shape()) + " differs from " + like_from + "'s " + shape_str(like->shape()));
  return t;
}

// PyTorch's float64 results (out64.npy, grad64_in<i>.npy): given (LoadOptions::expect64,
// expect_grads64), or found beside the float32 files they go with where those were found there.
void load_float64_reference(LoadedModel& m, const LoadOptions& o, const fs::path& dir, bool expected_beside, bool grads_beside) {
  if (!o.expect64.empty()) {
    if (m.expected.empty())
      throw std::runtime_error(o.expect64 + ": a float64 expected output needs the float32 one it goes with (out.npy beside the inputs, or --expect)");
    m.expected64.push_back(load_npy64(o.expect64, &m.expected[0], m.expected_from));
    m.expected64_from = o.expect64;
  } else if (expected_beside && m.expected.size() == 1 && fs::exists(dir / "out64.npy")) {
    m.expected64.push_back(load_npy64((dir / "out64.npy").string(), &m.expected[0], "out.npy"));
    m.expected64_from = "out64.npy";
  }
  if (!o.expect_grads64.empty()) {
    if (o.expect_grads64.size() > m.expected_grads.size())
      throw std::runtime_error(o.expect_grads64.back() + ": " + std::to_string(o.expect_grads64.size()) +
                               " float64 gradients given for " + std::to_string(m.expected_grads.size()) +
                               " float32 ones (grad_in<i>.npy beside the inputs, or --expect-grads)");
    for (size_t i = 0; i < o.expect_grads64.size(); ++i) {
      m.expected_grads64.push_back(load_npy64(o.expect_grads64[i], &m.expected_grads[i], "the float32 gradient " + std::to_string(i)));
      m.expected_grads64_from += (i ? ", " : "") + o.expect_grads64[i];
    }
  } else if (grads_beside && !m.expected_grads.empty()) {
    bool any = false;
    for (size_t i = 0; i < m.expected_grads.size(); ++i) {
      const std::string name = "grad64_in" + std::to_string(i) + ".npy";
      if (!fs::exists(dir / name)) {
        m.expected_grads64.emplace_back();
        continue;
      }
      m.expected_grads64.push_back(load_npy64((dir / name).string(), &m.expected_grads[i], "grad_in" + std::to_string(i) + ".npy"));
      m.expected_grads64_from += (any ? ", " : "") + name;
      any = true;
    }
    if (!any) m.expected_grads64.clear();
  }
}

}  // namespace

std::vector<Tensor> random_inputs(const Graph& g, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::vector<Tensor> out;
  std::uniform_real_distribution<double> positive(0.5, 1.5);
  for (int id : g.user_inputs()) {
    const TensorMeta& m = g.nodes[id].meta();
    // A stand-in for a batch norm's running variance must be positive, or the model yields NaN.
    const bool variance = g.nodes[id].name.find("running_var") != std::string::npos;
    // A stand-in for a weight matrix or filter is scaled by 1/sqrt(fan-in), as PyTorch's layers
    // initialise theirs: unscaled weights blow activations up layer after layer (rms in the
    // thousands after a transformer block), past what float32 can compare at 1e-4.
    double scale = 1.0;
    if (g.nodes[id].name.find("weight") != std::string::npos && m.shape.size() >= 2)
      scale = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(1, m.numel() / std::max<int64_t>(1, m.shape[0]))));
    Tensor t(m.dtype, m.shape);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.set(i, !dtype_is_float(m.dtype) ? static_cast<double>(rng() % 10) : variance ? positive(rng) : scale * nd(rng));
    out.push_back(t);
  }
  return out;
}

LoadedModel load_model(const std::string& path_in, const LoadOptions& o) {
  if (!fs::exists(path_in)) throw std::runtime_error(path_in + ": no such file or folder");
  LoadedModel m;
  // A folder is searched for a model file, unless it is an unpacked .pt2 archive itself.
  const bool unpacked_pt2 = fs::path(path_in).extension() == ".pt2";
  m.path = fs::is_directory(path_in) && !unpacked_pt2 ? find_model_file(path_in) : path_in;
  const fs::path dir = fs::path(m.path).parent_path();
  const std::string ext = fs::path(m.path).extension().string();
  if (ext == ".onnx") {
    m.format = "ONNX";
    m.graph = import_onnx(m.path);
  } else if (ext == ".pt2") {
    m.format = "torch.export (.pt2)";
    m.graph = import_pt2(m.path);
  } else {
    m.format = "fx-text";
    m.graph = import_fx_text(read_text(m.path), fs::path(m.path).filename().string());
  }

  const size_t n_in = m.graph.user_inputs().size();
  if (!o.inputs.empty()) {
    for (const auto& f : o.inputs) {
      m.inputs.push_back(load_npy(f));
      m.inputs_from += (m.inputs_from.empty() ? "" : ", ") + f;
    }
  } else {
    bool all = n_in > 0;
    for (size_t i = 0; i < n_in; ++i) all = all && fs::exists(dir / ("in" + std::to_string(i) + ".npy"));
    if (all) {
      for (size_t i = 0; i < n_in; ++i) {
        m.inputs.push_back(load_npy((dir / ("in" + std::to_string(i) + ".npy")).string()));
        m.inputs_from += (i ? ", " : "") + ("in" + std::to_string(i) + ".npy");
      }
    } else {
      m.inputs = random_inputs(m.graph);
      m.inputs_from = "random normal (seed 0)";
    }
  }
  // .npy has no bfloat16: a float input for a half-precision placeholder is converted, as
  // torch.from_numpy(a).to(dtype) would.
  const std::vector<int> users = m.graph.user_inputs();
  for (size_t i = 0; i < users.size() && i < m.inputs.size(); ++i) {
    const DType want = m.graph.nodes[users[i]].meta().dtype;
    if (dtype_is_half(want) && dtype_is_float(m.inputs[i].dtype()) && m.inputs[i].dtype() != want) m.inputs[i] = cast(m.inputs[i], want);
  }
  std::string expect = o.expect;
  if (expect.empty() && o.inputs.empty() && m.graph.outputs.size() == 1 && fs::exists(dir / "out.npy") &&
      m.inputs_from != "random normal (seed 0)")
    expect = (dir / "out.npy").string();
  if (!expect.empty()) {
    m.expected.push_back(load_npy(expect));
    m.expected_from = expect;
  }
  if (!o.expect_grads.empty()) {
    for (const auto& f : o.expect_grads) {
      m.expected_grads.push_back(load_npy(f));
      m.expected_grads_from += (m.expected_grads_from.empty() ? "" : ", ") + f;
    }
  } else if (!expect.empty() && o.inputs.empty()) {
    // Beside the inputs they were computed from: grad_in<i>.npy for each float input that has one.
    bool all = n_in > 0;
    for (size_t i = 0; i < n_in; ++i) all = all && fs::exists(dir / ("grad_in" + std::to_string(i) + ".npy"));
    for (size_t i = 0; all && i < n_in; ++i) {
      m.expected_grads.push_back(load_npy((dir / ("grad_in" + std::to_string(i) + ".npy")).string()));
      m.expected_grads_from += (i ? ", " : "") + ("grad_in" + std::to_string(i) + ".npy");
    }
  }
  load_float64_reference(m, o, dir, !expect.empty() && o.expect.empty(), o.expect_grads.empty() && o.inputs.empty());
  return m;
}

}  // namespace ls
