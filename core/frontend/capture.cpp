#include "frontend/capture.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "frontend/fx_text.h"
#include "tensor/npy.h"

namespace ls {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr size_t kMaxManifest = size_t(64) << 20;
constexpr size_t kMaxGraphText = size_t(64) << 20;
constexpr int kMaxDepth = 64;
constexpr int64_t kMaxDim = int64_t(1) << 40;

[[noreturn]] void bad(const std::string& dir, const std::string& where, const std::string& what) {
  throw std::runtime_error((fs::path(dir) / "capture.json").string() + ": " + where + (where.empty() ? "" : ": ") + what);
}

// nlohmann's parser recurses per nesting level: a hostile manifest of a million '[' is refused
// before it is parsed.
int nesting(std::string_view s) {
  int depth = 0, most = 0;
  bool in_str = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_str) {
      if (c == '\\') ++i;
      else if (c == '"') in_str = false;
    } else if (c == '"') in_str = true;
    else if (c == '[' || c == '{') most = std::max(most, ++depth);
    else if (c == ']' || c == '}') --depth;
  }
  return most;
}

std::string str(const json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int integer(const json& o, const char* key, int fallback) {
  const auto it = o.find(key);
  if (it == o.end() || !it->is_number_integer()) return fallback;
  const int64_t v = it->get<int64_t>();
  return v >= 0 && v < (int64_t(1) << 30) ? static_cast<int>(v) : fallback;
}

// A file the manifest names: a plain name inside the folder, never a path out of it.
std::string file_name(const json& o, const char* key, const std::string& where, std::string& error) {
  const std::string f = str(o, key);
  if (f.empty()) return f;
  const bool plain = f.size() < 256 && f[0] != '.' &&
                     std::all_of(f.begin(), f.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'; });
  if (!plain) {
    if (error.empty()) error = where + "." + key + " '" + f.substr(0, 80) + "' is not a file name inside the capture folder";
    return {};
  }
  return f;
}

std::vector<int64_t> shape_of(const json& o, const std::string& where, std::string& error) {
  std::vector<int64_t> s;
  const auto it = o.find("shape");
  if (it == o.end()) return s;
  if (!it->is_array() || it->size() > 64) {
    if (error.empty()) error = where + ".shape is not a list of at most 64 sizes";
    return {};
  }
  for (const json& d : *it) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > kMaxDim) {
      if (error.empty()) error = where + ".shape holds " + d.dump().substr(0, 40) + ", not a size";
      return {};
    }
    s.push_back(d.get<int64_t>());
  }
  return s;
}

std::vector<std::string> strings(const json& o, const char* key) {
  std::vector<std::string> out;
  const auto it = o.find(key);
  if (it != o.end() && it->is_array())
    for (const json& s : *it)
      if (s.is_string()) out.push_back(s.get<std::string>());
  return out;
}

CaptureGraph parse_graph(const json& j, size_t i) {
  CaptureGraph g;
  g.index = static_cast<int>(i);
  const std::string where = "graphs[" + std::to_string(i) + "]";
  if (!j.is_object()) {
    g.error = where + " is not an object";
    return g;
  }
  g.file = file_name(j, "file", where, g.error);
  if (g.file.empty() && g.error.empty()) g.error = where + " names no graph file";
  g.compile_id = str(j, "compile_id");
  g.frame_id = integer(j, "frame_id", -1);
  g.frame_compile_id = integer(j, "frame_compile_id", -1);
  g.attempt = integer(j, "attempt", 0);
  if ((g.frame_id < 0 || g.frame_compile_id < 0) && !g.compile_id.empty()) {  // "0/1" only
    int a = -1, b = -1;
    char slash = 0;
    std::istringstream in(g.compile_id);
    if (in >> a >> slash >> b && slash == '/' && a >= 0 && b >= 0) g.frame_id = a, g.frame_compile_id = b;
  }
  g.name = str(j, "name");
  g.source = str(j, "source");
  g.guards = str(j, "guards");
  g.outputs_note = str(j, "outputs_note");
  g.recompile_reasons = strings(j, "recompile_reasons");
  if (const auto t = j.find("train"); t != j.end() && t->is_boolean()) g.train = t->get<bool>();
  if (const auto in = j.find("inputs"); in != j.end()) {
    if (!in->is_array()) {
      if (g.error.empty()) g.error = where + ".inputs is not a list";
    } else {
      for (size_t k = 0; k < in->size(); ++k) {
        const json& x = (*in)[k];
        const std::string w = where + ".inputs[" + std::to_string(k) + "]";
        if (!x.is_object()) {
          if (g.error.empty()) g.error = w + " is not an object";
          continue;
        }
        CaptureInput ci;
        ci.name = str(x, "name");
        ci.kind = str(x, "kind");
        ci.dtype = str(x, "dtype");
        ci.device = str(x, "device");
        ci.saved_as = str(x, "saved_as");
        ci.file = file_name(x, "file", w, g.error);
        ci.shape = shape_of(x, w, g.error);
        if (const auto r = x.find("requires_grad"); r != x.end() && r->is_boolean()) ci.requires_grad = r->get<bool>();
        if (const auto v = x.find("value"); v != x.end() && v->is_number()) ci.value = v->get<double>();
        if (ci.kind.empty() && g.error.empty()) g.error = w + " has no kind";
        g.inputs.push_back(std::move(ci));
      }
    }
  }
  if (const auto out = j.find("outputs"); out != j.end() && out->is_array()) {
    for (size_t k = 0; k < out->size(); ++k) {
      const json& x = (*out)[k];
      const std::string w = where + ".outputs[" + std::to_string(k) + "]";
      if (!x.is_object()) continue;
      CaptureOutput co{file_name(x, "file", w, g.error), str(x, "dtype"), shape_of(x, w, g.error)};
      g.outputs.push_back(std::move(co));
    }
  }
  return g;
}

std::string read_limited(const fs::path& p, size_t limit, const std::string& what) {
  std::error_code ec;
  const auto size = fs::file_size(p, ec);
  if (ec) throw std::runtime_error(p.string() + ": cannot read " + what);
  if (size > limit) throw std::runtime_error(p.string() + ": " + std::to_string(size) + " bytes, more than a " + what + " may have (" + std::to_string(limit >> 20) + " MiB)");
  std::ifstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error(p.string() + ": cannot open " + what);
  std::string s(static_cast<size_t>(size), '\0');
  f.read(s.data(), static_cast<std::streamsize>(s.size()));
  s.resize(static_cast<size_t>(f.gcount()));
  return s;
}

}  // namespace

bool is_capture_folder(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::is_regular_file(fs::path(path) / "capture.json", ec);
}

Capture parse_capture(std::string_view text, const std::string& dir) {
  if (nesting(text) > kMaxDepth) bad(dir, "", "nested deeper than " + std::to_string(kMaxDepth) + " levels");
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    bad(dir, "", std::string("not JSON: ") + e.what());
  }
  if (!j.is_object()) bad(dir, "", "not a JSON object");
  const std::string format = str(j, "format");
  if (format != "lowerscope-capture") bad(dir, "format", format.empty() ? "missing (not a Lowerscope capture manifest)" : "'" + format.substr(0, 60) + "', not 'lowerscope-capture'");
  const auto v = j.find("version");
  if (v == j.end() || !v->is_number_integer()) bad(dir, "version", "missing or not an integer");
  if (v->get<int64_t>() != 1) bad(dir, "version", std::to_string(v->get<int64_t>()) + ": this reader knows version 1 (a newer Python package wrote it?)");
  const auto graphs = j.find("graphs");
  if (graphs == j.end() || !graphs->is_array()) bad(dir, "graphs", "missing or not a list");
  Capture c;
  c.path = dir;
  c.torch_version = str(j, "torch_version");
  c.created = str(j, "created");
  for (size_t i = 0; i < graphs->size(); ++i) {
    c.graphs.push_back(parse_graph((*graphs)[i], i));
    if (!c.graphs.back().error.empty()) c.warnings.push_back(c.graphs.back().error);
  }
  if (const auto b = j.find("graph_breaks"); b != j.end() && b->is_array())
    for (const json& x : *b)
      if (x.is_object())
        c.graph_breaks.push_back({str(x, "compile_id"), str(x, "user_frame"), str(x, "reason"), str(x, "explanation"), str(x, "text")});
  if (const auto f = j.find("failures"); f != j.end() && f->is_array())
    for (const json& x : *f)
      if (x.is_object())
        c.failures.push_back({str(x, "compile_id"), str(x, "name"), str(x, "fail_type"), str(x, "reason"), str(x, "user_frame")});
  return c;
}

Capture read_capture(const std::string& path) {
  fs::path dir = path;
  std::error_code ec;
  if (fs::is_regular_file(dir, ec) && dir.filename() == "capture.json") dir = dir.parent_path();
  if (!fs::is_directory(dir, ec)) throw std::runtime_error(path + ": no such capture folder");
  const fs::path manifest = dir / "capture.json";
  if (!fs::is_regular_file(manifest, ec)) throw std::runtime_error(path + ": no capture.json (not a capture folder written by the lowerscope backend)");
  return parse_capture(read_limited(manifest, kMaxManifest, "capture manifest"), dir.string());
}

LoadedModel capture_graph_model(const Capture& c, const CaptureGraph& g) {
  const std::string label = g.file.empty() ? "graphs[" + std::to_string(g.index) + "]" : g.file;
  if (!g.error.empty()) throw std::runtime_error(label + ": " + g.error);
  const fs::path dir = c.path;
  const std::string text = read_limited(dir / g.file, kMaxGraphText, "graph text");
  if (text.find('\0') != std::string::npos) throw std::runtime_error(label + ": binary data where graph text was expected");
  std::map<std::string, std::vector<int64_t>> sizes;
  std::vector<const CaptureInput*> tensors;
  for (const CaptureInput& in : g.inputs)
    if (in.kind == "tensor") {
      sizes[in.name] = in.shape;
      tensors.push_back(&in);
    }
  LoadedModel m;
  m.path = (dir / g.file).string();
  m.format = "fx-text";
  m.graph = import_fx_text(concrete_graph_text(text, sizes), g.file);
  const std::vector<int> users = m.graph.user_inputs();
  if (users.size() != tensors.size())
    throw std::runtime_error(label + ": the graph takes " + std::to_string(users.size()) + " tensor input(s), the manifest lists " +
                             std::to_string(tensors.size()));
  const bool all_files = std::all_of(tensors.begin(), tensors.end(), [&](const CaptureInput* in) {
    std::error_code ec;
    return !in->file.empty() && fs::is_regular_file(dir / in->file, ec);
  });
  if (all_files) {
    for (size_t i = 0; i < tensors.size(); ++i) {
      Tensor t = load_npy((dir / tensors[i]->file).string());
      const TensorMeta& want = m.graph.nodes[users[i]].meta();
      if (t.shape() != want.shape)
        throw std::runtime_error(tensors[i]->file + ": its shape is not that of the graph's input '" + m.graph.nodes[users[i]].name + "'");
      if (t.dtype() != want.dtype)
        throw std::runtime_error(tensors[i]->file + ": its element type " + std::string(dtype_short(t.dtype())) + " is not the graph input's " +
                                 std::string(dtype_short(want.dtype)));
      m.inputs.push_back(std::move(t));
      m.inputs_from += (i ? ", " : "") + tensors[i]->file;
    }
  } else {
    m.inputs = random_inputs(m.graph);
    m.inputs_from = "random normal (seed 0): the example inputs were not written";
  }
  const bool outputs = all_files && !g.outputs.empty() && g.outputs.size() == m.graph.outputs.size() &&
                       std::all_of(g.outputs.begin(), g.outputs.end(), [&](const CaptureOutput& o) {
                         std::error_code ec;
                         return !o.file.empty() && fs::is_regular_file(dir / o.file, ec);
                       });
  if (outputs)
    for (size_t i = 0; i < g.outputs.size(); ++i) {
      m.expected.push_back(load_npy((dir / g.outputs[i].file).string()));
      m.expected_from += (i ? ", " : "") + g.outputs[i].file;
    }
  return m;
}

TorchTrace capture_as_trace(const Capture& c) {
  TorchTrace t;
  t.path = c.path;
  std::map<int, size_t> frame_of;
  for (const CaptureGraph& g : c.graphs) {
    TraceCompile tc;
    tc.frame_id = g.frame_id;
    tc.frame_compile_id = g.frame_id >= 0 ? g.frame_compile_id : g.index;
    tc.attempt = g.attempt;
    tc.name = g.name.empty() ? g.file : g.name;
    tc.file = g.source;
    tc.guards = g.guards;
    tc.recompile_reasons = g.recompile_reasons;
    for (const CaptureInput& in : g.inputs)
      if (in.kind == "tensor") tc.input_sizes[in.name] = in.shape;
    if (g.error.empty()) {
      try {
        tc.dynamo_graph = read_limited(fs::path(c.path) / g.file, kMaxGraphText, "graph text");
      } catch (const std::exception& e) {
        t.warnings.push_back({0, e.what()});
      }
    }
    if (!g.recompile_reasons.empty()) t.recompiles.push_back({tc.id(), tc.name, g.recompile_reasons});
    if (g.frame_id >= 0) {
      auto [it, fresh] = frame_of.emplace(g.frame_id, t.frames.size());
      if (fresh) t.frames.push_back({g.frame_id, tc.name, {}, {}});
      t.frames[it->second].compiles.push_back(tc.id());
    }
    t.compiles.push_back(std::move(tc));
  }
  auto split_frame = [](const std::string& s, std::string& file, int& line) {
    const size_t colon = s.rfind(':');
    file = colon == std::string::npos ? s : s.substr(0, colon);
    line = 0;
    if (colon != std::string::npos) {
      try {
        line = std::stoi(s.substr(colon + 1));
      } catch (const std::exception&) {
      }
    }
  };
  for (const CaptureGraphBreak& b : c.graph_breaks) {  // de-duplicated by source line and reason
    std::string file;
    int line = 0;
    split_frame(b.user_frame, file, line);
    auto same = std::find_if(t.graph_breaks.begin(), t.graph_breaks.end(),
                             [&](const TraceGraphBreak& x) { return x.file == file && x.line == line && x.reason == b.reason; });
    if (same == t.graph_breaks.end()) {
      TraceGraphBreak tb;
      tb.reason = b.reason, tb.explanation = b.explanation, tb.detail = b.text, tb.file = file, tb.line = line;
      t.graph_breaks.push_back(std::move(tb));
      same = t.graph_breaks.end() - 1;
    }
    ++same->count;
    if (!b.compile_id.empty() && std::find(same->compiles.begin(), same->compiles.end(), b.compile_id) == same->compiles.end())
      same->compiles.push_back(b.compile_id);
  }
  for (const CaptureFailure& f : c.failures) {
    TraceFailure tf;
    tf.compile_id = f.compile_id, tf.name = f.name, tf.fail_type = f.fail_type, tf.reason = f.reason, tf.user_frame = f.user_frame;
    std::istringstream in(f.reason);
    std::string l;
    while (std::getline(in, l)) {
      const size_t x = l.find("Explanation:");
      if (tf.summary.empty() && !l.empty()) tf.summary = l;
      if (x != std::string::npos && tf.explanation.empty()) tf.explanation = l.substr(x + 13);
    }
    t.failures.push_back(std::move(tf));
  }
  for (const std::string& w : c.warnings) t.warnings.push_back({0, w});
  t.records = static_cast<int>(c.graphs.size());
  return t;
}

}  // namespace ls
