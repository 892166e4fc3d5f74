#include "frontend/pt2.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "frontend/autocast_policy.h"
#include "frontend/export_records.h"
#include "ops/known_ops.h"
#include "ops/op_table.h"

#ifdef LOWERSCOPE_HAVE_LIBZIP
#include <zip.h>
#endif

namespace ls {

bool have_pt2() {
#ifdef LOWERSCOPE_HAVE_LIBZIP
  return true;
#else
  return false;
#endif
}

namespace {

using nlohmann::json;

constexpr uint64_t kMaxEntry = uint64_t(1) << 32;  // 4 GiB: anything larger is refused

// The archive's entries: read from the zip file (libzip), or from a folder it was unpacked into
// (`unzip model.pt2 -d model.pt2.d`: any build reads that, libzip or not).
class Archive {
 public:
  explicit Archive(const std::string& path) : path_(path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      folder_ = true;
      for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
        if (it->is_regular_file(ec)) {
          std::string rel = fs::relative(it->path(), path, ec).generic_string();
          // An archive unpacked with its top folder, or the top folder's contents alone.
          names_.push_back(rel.find('/') == std::string::npos ? "./" + rel : rel);
        }
      return;
    }
#ifdef LOWERSCOPE_HAVE_LIBZIP
    int err = 0;
    z_ = zip_open(path.c_str(), ZIP_RDONLY, &err);
    if (!z_) {
      zip_error_t e;
      zip_error_init_with_code(&e, err);
      const std::string msg = zip_error_strerror(&e);
      zip_error_fini(&e);
      throw std::runtime_error(path + ": not a readable .pt2 archive (" + msg + ")");
    }
    const zip_int64_t n = zip_get_num_entries(z_, 0);
    for (zip_int64_t i = 0; i < n; ++i)
      if (const char* name = zip_get_name(z_, static_cast<zip_uint64_t>(i), 0)) names_.emplace_back(name);
#else
    throw std::runtime_error(path + ": this build cannot read .pt2 archives (it was built without libzip); "
                             "unpack it (unzip FILE.pt2 -d FILE.pt2.d) and open the folder");
#endif
  }
  ~Archive() {
#ifdef LOWERSCOPE_HAVE_LIBZIP
    if (z_) zip_discard(z_);
#endif
  }
  Archive(const Archive&) = delete;
  Archive& operator=(const Archive&) = delete;

  // The entry whose name ends with `suffix` after the archive's top folder ("model/", "archive/").
  std::string find(const std::string& suffix) const {
    for (const auto& n : names_) {
      const auto slash = n.find('/');
      if (slash != std::string::npos && n.substr(slash + 1) == suffix) return n;
    }
    return "";
  }

  std::string read(const std::string& name, uint64_t expect_size = UINT64_MAX) const {
    if (folder_) return read_file(name, expect_size);
#ifdef LOWERSCOPE_HAVE_LIBZIP
    zip_stat_t st;
    if (zip_stat(z_, name.c_str(), 0, &st) != 0) throw std::runtime_error(path_ + ": the archive has no entry '" + name + "'");
    if (!(st.valid & ZIP_STAT_SIZE) || st.size > kMaxEntry)
      throw std::runtime_error(path_ + ": entry '" + name + "' is too large");
    check_size(name, st.size, expect_size);
    std::unique_ptr<zip_file_t, int (*)(zip_file_t*)> f(zip_fopen(z_, name.c_str(), 0), zip_fclose);
    if (!f) throw std::runtime_error(path_ + ": cannot open entry '" + name + "'");
    // Grown as the data comes, a chunk at a time: the size in the entry's header is the file's word
    // (a 137 KB archive said 1.6 GB), not memory to take before a byte of it has been read.
    std::string data;
    constexpr uint64_t kChunk = uint64_t(1) << 24;
    while (data.size() < st.size) {
      const size_t at = data.size();
      data.resize(at + static_cast<size_t>(std::min<uint64_t>(kChunk, st.size - at)));
      const zip_int64_t r = zip_fread(f.get(), data.data() + at, data.size() - at);
      if (r <= 0) throw std::runtime_error(path_ + ": entry '" + name + "' is truncated or corrupt");
      data.resize(at + static_cast<size_t>(r));
    }
    return data;
#else
    return {};
#endif
  }

 private:
  void check_size(const std::string& name, uint64_t size, uint64_t expect_size) const {
    if (expect_size != UINT64_MAX && size != expect_size)
      throw std::runtime_error(path_ + ": entry '" + name + "' has " + std::to_string(size) + " bytes but its tensor needs " +
                               std::to_string(expect_size));
  }
  std::string read_file(const std::string& name, uint64_t expect_size) const {
    namespace fs = std::filesystem;
    if (std::find(names_.begin(), names_.end(), name) == names_.end())
      throw std::runtime_error(path_ + ": the archive has no entry '" + name + "'");
    const fs::path p = fs::path(path_) / (name.rfind("./", 0) == 0 ? name.substr(2) : name);
    std::error_code ec;
    const uint64_t size = fs::file_size(p, ec);
    if (ec || size > kMaxEntry) throw std::runtime_error(path_ + ": entry '" + name + "' is unreadable or too large");
    check_size(name, size, expect_size);
    std::ifstream f(p, std::ios::binary);
    std::string data(size, '\0');
    if (!f.read(data.data(), static_cast<std::streamsize>(size))) throw std::runtime_error(path_ + ": cannot read entry '" + name + "'");
    return data;
  }
  std::string path_;
  bool folder_ = false;
#ifdef LOWERSCOPE_HAVE_LIBZIP
  zip_t* z_ = nullptr;
#endif
  std::vector<std::string> names_;
};

// Reads JSON fields with errors that name the file and the path of the field.
struct Reader {
  std::string file;
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw std::runtime_error(file + ": " + where + ": " + what);
  }
  const json& at(const json& j, const char* key, const std::string& where) const {
    if (!j.is_object() || !j.contains(key)) fail(where, std::string("missing field '") + key + "'");
    return j.at(key);
  }
  int64_t integer(const json& j, const std::string& where) const {
    if (!j.is_number_integer()) fail(where, "expected an integer");
    return j.get<int64_t>();
  }
  std::string string(const json& j, const std::string& where) const {
    if (!j.is_string()) fail(where, "expected a string");
    return j.get<std::string>();
  }
  const json& array(const json& j, const std::string& where) const {
    if (!j.is_array()) fail(where, "expected a list");
    return j;
  }
};

// torch/_export/serde/schema.py ScalarType
DType scalar_type(const Reader& r, const json& j, const std::string& where) {
  switch (r.integer(j, where)) {
    case 1: return DType::u8;
    case 4: return DType::i32;
    case 5: return DType::i64;
    case 6: return DType::f16;
    case 7: return DType::f32;
    case 8: return DType::f64;
    case 10: return DType::c64;   // ScalarType COMPLEXFLOAT
    case 11: return DType::c128;  // COMPLEXDOUBLE
    case 12: return DType::b8;
    case 13: return DType::bf16;
    default: r.fail(where, "element type code " + std::to_string(j.get<int64_t>()) + " is not supported");
  }
}

TensorMeta tensor_meta(const Reader& r, const json& m, const std::string& where) {
  TensorMeta t;
  t.dtype = scalar_type(r, r.at(m, "dtype", where), where + ".dtype");
  for (const json& s : r.array(r.at(m, "sizes", where), where + ".sizes")) {
    const int64_t d = r.integer(r.at(s, "as_int", where + ".sizes"), where + ".sizes");
    if (d < 0 || d > (int64_t(1) << 40)) r.fail(where + ".sizes", "size " + std::to_string(d) + " is out of range");
    t.shape.push_back(d);
  }
  int64_t numel = 1;
  for (int64_t d : t.shape) {
    if (d && numel > (int64_t(1) << 40) / d) r.fail(where + ".sizes", "the tensor is too large");
    numel *= d;
  }
  t.strides = contiguous_strides(t.shape);
  if (m.contains("device") && m["device"].is_object() && m["device"].contains("type") && m["device"]["type"].is_string())
    t.device = m["device"]["type"].get<std::string>() == "cuda" ? "cuda" : "cpu";
  t.device = "cpu";  // the model runs wherever the user compiles it for
  return t;
}

// An autocast region being inlined: its state, and the casts made in it (node, dtype) -> cast.
struct AutocastFrame {
  AutocastState state;
  std::map<std::pair<int, DType>, int> casts;
};

// The device a tensor's recorded metadata names ("" where it names none).
std::string recorded_device(const json& m) {
  if (m.is_object() && m.contains("device") && m["device"].is_object() && m["device"].contains("type") && m["device"]["type"].is_string())
    return m["device"]["type"].get<std::string>() == "cuda" ? "cuda" : "cpu";
  return "";
}

class Importer {
 public:
  Importer(const std::string& path) : path_(path), zip_(path), r_{path} {}

  Graph run() {
    const std::string model_name = zip_.find("models/model.json");
    if (model_name.empty()) r_.fail("archive", "no models/model.json: not a torch.export archive");
    json model;
    try {
      model = json::parse(zip_.read(model_name));
    } catch (const json::parse_error& e) {
      r_.fail(model_name, std::string("invalid JSON: ") + e.what());
    }
    const json& gm = r_.at(model, "graph_module", "model.json");
    const json& graph = r_.at(gm, "graph", "graph_module");
    const json& sig = r_.at(gm, "signature", "graph_module");
    const json& values = r_.at(graph, "tensor_values", "graph");
    if (!values.is_object()) r_.fail("graph.tensor_values", "expected an object");

    // Placeholders, with what the signature says each one is.
    std::map<std::string, std::pair<InputKind, std::string>> kinds;
    for (const json& spec : r_.array(r_.at(sig, "input_specs", "signature"), "signature.input_specs")) {
      if (spec.contains("parameter")) {
        const json& p = spec["parameter"];
        kinds[r_.string(r_.at(r_.at(p, "arg", "parameter"), "name", "parameter.arg"), "parameter.arg.name")] = {
            InputKind::parameter, r_.string(r_.at(p, "parameter_name", "parameter"), "parameter.parameter_name")};
      } else if (spec.contains("buffer")) {
        const json& p = spec["buffer"];
        kinds[r_.string(r_.at(r_.at(p, "arg", "buffer"), "name", "buffer.arg"), "buffer.arg.name")] = {
            InputKind::buffer, r_.string(r_.at(p, "buffer_name", "buffer"), "buffer.buffer_name")};
      } else if (spec.contains("tensor_constant")) {
        const json& p = spec["tensor_constant"];
        kinds[r_.string(r_.at(r_.at(p, "arg", "tensor_constant"), "name", "tensor_constant.arg"), "tensor_constant.arg.name")] = {
            InputKind::constant, r_.string(r_.at(p, "tensor_constant_name", "tensor_constant"), "tensor_constant_name")};
      } else if (!spec.contains("user_input")) {
        r_.fail("signature.input_specs", "an input kind this reader does not know: " + spec.dump().substr(0, 80));
      }
    }
    const auto weights = load_weights();
    for (const json& in : r_.array(r_.at(graph, "inputs", "graph"), "graph.inputs")) {
      const std::string name = r_.string(r_.at(r_.at(in, "as_tensor", "graph.inputs"), "name", "graph.inputs"), "graph.inputs.name");
      Node n;
      n.name = name;
      n.outs = {tensor_meta(r_, r_.at(values, name.c_str(), "graph.tensor_values"), "tensor_values." + name)};
      if (model_device_.empty()) model_device_ = recorded_device(values[name]);
      n.origins = {name};
      if (auto k = kinds.find(name); k != kinds.end()) {
        n.input_kind = k->second.first;
        n.param_name = k->second.second;
        auto w = weights.find(n.param_name);
        if (w == weights.end()) r_.fail("signature", "no stored value for '" + n.param_name + "'");
        if (w->second.shape() != n.meta().shape || w->second.dtype() != n.meta().dtype)
          r_.fail("weights." + n.param_name, "stored as " + std::string(dtype_short(w->second.dtype())) + shape_str(w->second.shape()) +
                                                 " but the graph expects " + n.meta().annotation());
        g_.weights[name] = w->second;
      }
      add(std::move(n));
    }
    // Every name the graph itself defines: a region's subgraph renames its own away from them, also
    // from those defined after the region (a getitem inside and another after it).
    for (const json& node : r_.array(r_.at(graph, "nodes", "graph"), "graph.nodes"))
      if (node.is_object() && node.contains("outputs") && node["outputs"].is_array())
        for (const json& o : node["outputs"]) {
          if (!o.is_object()) continue;
          if (o.contains("as_tensor") && o["as_tensor"].is_object()) graph_names_.insert(o["as_tensor"].value("name", ""));
          if (o.contains("as_tensors") && o["as_tensors"].is_array())
            for (const json& t : o["as_tensors"])
              if (t.is_object()) graph_names_.insert(t.value("name", ""));
        }
    for (const json& node : r_.array(r_.at(graph, "nodes", "graph"), "graph.nodes")) import_node(node, values);
    for (const json& out : r_.array(r_.at(graph, "outputs", "graph"), "graph.outputs")) {
      if (out.contains("as_none")) {
        g_.outputs.push_back(-1);
        continue;
      }
      const std::string name = r_.string(r_.at(r_.at(out, "as_tensor", "graph.outputs"), "name", "graph.outputs"), "graph.outputs.name");
      g_.outputs.push_back(lookup(name, "graph.outputs"));
    }
    g_.name = "ExportedProgram";
    verify(g_);
    return std::move(g_);
  }

 private:
  std::map<std::string, Tensor> load_weights() {
    std::map<std::string, Tensor> out;
    for (const char* cfg : {"data/weights/model_weights_config.json", "data/constants/model_constants_config.json"}) {
      const std::string name = zip_.find(cfg);
      if (name.empty()) continue;
      const std::string dir = name.substr(0, name.rfind('/') + 1);
      json j;
      try {
        j = json::parse(zip_.read(name));
      } catch (const json::parse_error& e) {
        r_.fail(cfg, std::string("invalid JSON: ") + e.what());
      }
      const json& config = r_.at(j, "config", cfg);
      if (!config.is_object()) r_.fail(cfg, "'config' must be an object");
      for (const auto& [key, entry] : config.items()) {
        const std::string where = std::string(cfg) + ": " + key;
        if (entry.value("use_pickle", false))
          r_.fail(where, "the value is pickled; pickles are never loaded (loading one could run code from the file)");
        const std::string file = r_.string(r_.at(entry, "path_name", where), where + ".path_name");
        if (file.find('/') != std::string::npos || file.find("..") != std::string::npos)
          r_.fail(where, "path '" + file + "' leaves the weights folder");
        const TensorMeta m = tensor_meta(r_, r_.at(entry, "tensor_meta", where), where + ".tensor_meta");
        const json& tm = entry["tensor_meta"];
        if (tm.contains("storage_offset") && r_.integer(r_.at(tm["storage_offset"], "as_int", where), where) != 0)
          r_.fail(where, "weights stored at an offset are not supported");
        Tensor t(m.dtype, m.shape);
        const std::string bytes = zip_.read(dir + file);
        if (static_cast<int64_t>(bytes.size()) < t.nbytes())
          r_.fail(where, "'" + file + "' holds " + std::to_string(bytes.size()) + " bytes but " + m.annotation() + " needs " +
                             std::to_string(t.nbytes()));
        std::memcpy(t.data(), bytes.data(), static_cast<size_t>(t.nbytes()));
        out[key] = t;
      }
    }
    return out;
  }

  void add(Node n) {
    const std::string key = n.name;
    if (names_.count(key)) r_.fail("graph", "the name '" + key + "' is defined twice");
    names_[key] = g_.add(std::move(n));
  }

  int lookup(const std::string& name, const std::string& where) const {
    auto it = names_.find(name);
    if (it == names_.end()) r_.fail(where, "'" + name + "' is used before it is defined (or never)");
    return it->second;
  }

  Arg argument(const json& a, const std::string& where) {
    if (!a.is_object() || a.size() != 1) r_.fail(where, "an argument must be an object with one field");
    const auto first = a.begin();  // items() would be a temporary: read key and value off the iterator
    const std::string kind = first.key();
    const json& v = first.value();
    if (kind == "as_none") return Arg::none();
    if (kind == "as_tensor") return Arg::of_node(lookup(r_.string(r_.at(v, "name", where), where), where));
    if (kind == "as_int") return Arg::of_int(r_.integer(v, where));
    if (kind == "as_float") {
      if (!v.is_number()) r_.fail(where, "expected a number");
      return Arg::of_real(v.get<double>());
    }
    if (kind == "as_bool") {
      if (!v.is_boolean()) r_.fail(where, "expected true or false");
      return Arg::of_bool(v.get<bool>());
    }
    if (kind == "as_string") return Arg::of_string(r_.string(v, where));
    if (kind == "as_ints" || kind == "as_floats" || kind == "as_tensors" || kind == "as_bools") {
      Arg l;
      l.kind = Arg::Kind::list;
      for (const json& x : r_.array(v, where)) {
        if (kind == "as_ints") l.list.push_back(Arg::of_int(r_.integer(x, where)));
        else if (kind == "as_floats") l.list.push_back(Arg::of_real(x.is_number() ? x.get<double>() : 0.0));
        else if (kind == "as_bools") l.list.push_back(Arg::of_bool(x.is_boolean() && x.get<bool>()));
        else l.list.push_back(Arg::of_node(lookup(r_.string(r_.at(x, "name", where), where), where)));
      }
      return l;
    }
    // Optional tensors (index.Tensor's indices: [None, idx]): each {"as_tensor": ...} or {"as_none": ...}.
    if (kind == "as_optional_tensor") return argument(v, where);
    if (kind == "as_optional_tensors") {
      Arg l;
      l.kind = Arg::Kind::list;
      for (const json& x : r_.array(v, where)) {
        const Arg e = argument(x, where);
        if (!e.is_none() && !e.is_node()) r_.fail(where, "an optional tensor must be a tensor or None");
        l.list.push_back(e);
      }
      return l;
    }
    // A dtype argument (_to_copy's, full's): the name the FX text gives it (torch.float32).
    if (kind == "as_scalar_type") return Arg::of_string(std::string(dtype_torch(scalar_type(r_, v, where))));
    // Device, layout and memory format: ours follow the inputs (one device, strided, contiguous).
    if (kind == "as_device" || kind == "as_layout" || kind == "as_memory_format") return Arg::none();
    r_.fail(where, "argument kind '" + kind + "' is not supported");
  }

  void import_node(const json& node, const json& values) {
    const std::string target = r_.string(r_.at(node, "target", "node"), "node.target");
    const std::string where = "node " + node.value("name", std::string("?")) + " (" + target + ")";
    // Regions export wraps in a higher-order op (torch.no_grad(), torch.autocast inside forward):
    // their subgraph inlined, its nodes keeping the scope in their module path's stack.
    if (target == "torch.ops.higher_order.wrap_with_set_grad_enabled" || target == "torch.ops.higher_order.wrap_with_autocast")
      return inline_region(node, where, target.substr(target.rfind('.') + 1));
    // Metadata checks export leaves in the graph (aten._assert_tensor_metadata, _assert_scalar,
    // _assert_async): checked here where they name a tensor's dtype, then dropped, as Inductor
    // drops them; they compute nothing.
    if (target.rfind("aten._assert_", 0) == 0 || target.rfind("torch.ops.aten._assert_", 0) == 0) return check_assert(node, where);
    bool inplace = false;
    const OpDef* op = find_op_functional(target, &inplace);
    if (!op) return import_missing(node, values, target, where);
    // kind 1: positional, 2: keyword (torch/_export/serde/schema.py ArgumentKind).
    std::vector<Arg> pos;
    std::vector<std::pair<std::string, Arg>> kw;
    for (const json& in : r_.array(r_.at(node, "inputs", where), where + ".inputs")) {
      const std::string name = r_.string(r_.at(in, "name", where), where);
      Arg a = argument(r_.at(in, "arg", where), where + "." + name);
      if (in.value("kind", 1) == 2) kw.emplace_back(name, std::move(a));
      else if (!kw.empty()) r_.fail(where, "positional argument '" + name + "' after a keyword argument");
      else pos.push_back(std::move(a));
    }
    Node n;
    n.op = op;
    if (node.contains("metadata") && node["metadata"].is_object()) {
      const json& md = node["metadata"];
      if (md.contains("stack_trace") && md["stack_trace"].is_string()) {
        const std::string st = md["stack_trace"].get<std::string>();
        n.stack = "# " + st.substr(0, st.find('\n'));
      }
      if (md.contains("nn_module_stack") && md["nn_module_stack"].is_string()) {
        const std::string ms = md["nn_module_stack"].get<std::string>();
        const auto last = ms.rfind(';');
        const std::string entry = ms.substr(last == std::string::npos ? 0 : last + 1);
        const auto c1 = entry.find(','), c2 = entry.find(',', c1 + 1);
        if (c1 != std::string::npos && c2 != std::string::npos) n.module_path = entry.substr(c1 + 1, c2 - c1 - 1);
      }
    }
    try {
      n.args = bind_args(*op, pos, kw);
      // Inside an autocast region, the casts ATen's Autocast key would make (frontend/autocast_policy.h).
      if (const AutocastState* s = active_autocast()) {
        const std::string consumer = node.value("name", std::string(op->base_name()));
        AutocastCall c = apply_autocast(g_, *s, *op, std::move(n.args),
                                        [&](int x, DType to) { return autocast_cast(x, to, consumer, n.stack, n.module_path); });
        n.op = op = c.op;
        n.args = std::move(c.args);
      }
      n.outs = infer_meta(g_, *op, n.args);
    } catch (const std::invalid_argument& e) {
      r_.fail(where, e.what());
    }
    n.target = "torch.ops." + op->name;
    const json& outs = r_.array(r_.at(node, "outputs", where), where + ".outputs");
    if (outs.size() == 1 && outs[0].contains("as_tensor")) {
      n.name = r_.string(r_.at(outs[0]["as_tensor"], "name", where), where);
      check_meta(n.outs.at(0), values, n.name, where);
      n.origins = {n.name};
      const std::string name = n.name;
      const Arg self = n.args.empty() ? Arg::none() : n.args[0];
      add(std::move(n));
      if (inplace && self.is_node()) update_in_place(self.node, names_.at(name), name, where);
      return;
    }
    // Several outputs: the node, then a getitem per named output, as FX prints them.
    std::vector<std::string> out_names;
    for (const json& o : outs) {
      if (o.contains("as_tensors"))
        for (const json& t : r_.array(o["as_tensors"], where)) out_names.push_back(r_.string(r_.at(t, "name", where), where));
      else if (o.contains("as_tensor")) out_names.push_back(r_.string(r_.at(o["as_tensor"], "name", where), where));
      else out_names.emplace_back();  // an output that is not a tensor (or unused)
    }
    n.name = node.value("name", std::string(op->base_name()));
    n.origins = {n.name};
    const std::vector<TensorMeta> metas = n.outs;
    const std::string base = n.name;
    add(std::move(n));
    const int id = names_.at(base);
    for (size_t i = 0; i < out_names.size(); ++i) {
      if (out_names[i].empty()) continue;
      if (i >= metas.size()) r_.fail(where, "has more outputs than " + op->name + " returns");
      Node gi;
      gi.name = out_names[i];
      gi.target = "getitem";
      gi.op = find_op("getitem");
      gi.args = {Arg::of_node(id), Arg::of_int(static_cast<int64_t>(i))};
      gi.outs = {metas[i]};
      gi.origins = {base};
      if (values.contains(gi.name)) {
        const TensorMeta want = tensor_meta(r_, values[gi.name], "tensor_values." + gi.name);
        if (record_follows_decomposition(*op, i, metas[i], want)) {  // frontend/export_records.h
          const std::string recorded = gi.name;
          gi.name = recorded + "_kernel";
          for (int k = 1; names_.count(gi.name) || graph_names_.count(gi.name); ++k) gi.name = recorded + "_kernel" + std::to_string(k);
          const std::string kernel = gi.name;
          add(std::move(gi));
          static const OpDef* view = find_op("aten.view.default");
          Node v;
          v.name = recorded;
          v.op = view;
          v.target = "torch.ops." + view->name;
          v.args = {Arg::of_node(names_.at(kernel)), Arg::of_ints(want.shape)};
          v.outs = infer_meta(g_, *view, v.args);
          v.origins = {base};
          add(std::move(v));
          continue;
        }
      }
      check_meta(metas[i], values, gi.name, where);
      add(std::move(gi));
    }
  }

  // An in-place op (fill_, copy_, add_, ...) runs as its functional op; the tensor it updated is
  // its result from here on: the names that meant it mean the result, and where it is a view
  // (slice, select, view, permute, ...) of another tensor, that tensor is rebuilt with the result
  // scattered in (slice_scatter, select_scatter, a view back, the inverse permutation), up the
  // chain of views, as functionalization writes it (torch.export's graph before decomposition
  // keeps x[:, 0].fill_(v), and later nodes read x: hf_bart's shift_tokens_right). Views taken
  // before the update and read after it are not updated (PyTorch's would see the new values).
  void update_in_place(int self, int result, const std::string& origin, const std::string& where) {
    while (true) {
      for (auto& [name, id] : names_)
        if (id == self) id = result;
      const Node& v = g_.nodes[static_cast<size_t>(self)];
      if (v.is_placeholder() || !v.op || v.args.empty() || !v.args[0].is_node()) return;
      static const std::set<std::string> reshapes = {"aten.view.default",    "aten._unsafe_view.default", "aten.reshape.default",
                                                     "aten.unsqueeze.default", "aten.squeeze.dim",          "aten.squeeze.dims",
                                                     "aten.alias.default",   "aten.flatten.using_ints",   "aten.unflatten.int"};
      static const std::set<std::string> refused = {"aten.expand.default", "aten.diagonal.default", "aten.as_strided.default"};
      const std::string op = v.op->name;
      if (refused.count(op)) r_.fail(where, "updates in place a view made by " + op + ", which the importer cannot write back into its base");
      if (!reshapes.count(op) && op != "aten.slice.Tensor" && op != "aten.select.int" && op != "aten.permute.default" &&
          op != "aten.transpose.int")
        return;  // not a view in PyTorch (flip, repeat and the other ops copy)
      const int base = v.args[0].node;
      const Shape base_shape = g_.nodes[static_cast<size_t>(base)].meta().shape;
      const Arg r = Arg::of_node(result), b = Arg::of_node(base);
      const OpDef* how = nullptr;
      std::vector<Arg> args;
      if (op == "aten.slice.Tensor") {
        how = find_op("aten.slice_scatter.default");
        args = {b, r, v.args[1], v.args[2], v.args[3], v.args[4]};
      } else if (op == "aten.select.int") {
        how = find_op("aten.select_scatter.default");
        args = {b, r, v.args[1], v.args[2]};
      } else if (reshapes.count(op)) {
        how = find_op("aten.view.default");
        args = {r, Arg::of_ints(base_shape)};
      } else if (op == "aten.permute.default") {
        const auto p = v.args[1].ints();
        const int64_t rank = static_cast<int64_t>(p.size());
        std::vector<int64_t> inv(p.size());
        for (int64_t i = 0; i < rank; ++i) inv[static_cast<size_t>((p[i] % rank + rank) % rank)] = i;
        how = find_op("aten.permute.default");
        args = {r, Arg::of_ints(inv)};
      } else if (op == "aten.transpose.int") {
        how = find_op("aten.transpose.int");
        args = {r, v.args[1], v.args[2]};
      }
      Node n;
      n.op = how;
      n.target = "torch.ops." + how->name;
      n.args = std::move(args);
      try {
        n.outs = infer_meta(g_, *how, n.args);
      } catch (const std::invalid_argument& e) {
        r_.fail(where, e.what());
      }
      const std::string stem = g_.nodes[static_cast<size_t>(base)].name + "_updated";
      n.name = stem;
      for (int k = 1; names_.count(n.name) || graph_names_.count(n.name) || g_.find(n.name) >= 0; ++k) n.name = stem + "_" + std::to_string(k);
      n.origins = {origin};
      const std::string name = n.name;
      add(std::move(n));
      self = base;
      result = names_.at(name);
    }
  }

  // A higher-order op's region: its subgraph's inputs are the tensors after the graph argument,
  // its outputs the op's. Names the subgraph shares with the graph around it are renamed first.
  void inline_region(const json& node, const std::string& where, const std::string& what) {
    if (++region_depth_ > 16) r_.fail(where, "regions nested more than 16 deep");
    const json& ins = r_.array(r_.at(node, "inputs", where), where + ".inputs");
    const json* sub = nullptr;
    std::vector<std::string> operands;
    for (const json& in : ins) {
      const json& a = r_.at(in, "arg", where);
      if (!a.is_object()) r_.fail(where, "an argument must be an object");
      if (a.contains("as_graph")) sub = &r_.at(a["as_graph"], "graph", where + ".as_graph");
      else if (sub && a.contains("as_tensor")) operands.push_back(r_.string(r_.at(a["as_tensor"], "name", where), where));
    }
    if (!sub) r_.fail(where, what + " without its subgraph (as_graph)");
    // wrap_with_autocast(device_type, dtype, enabled, cache_enabled, subgraph, *operands): the
    // arguments of torch.autocast; its ops get autocast's casts while the region is inlined.
    const bool autocast = what == "wrap_with_autocast";
    if (autocast) autocast_.push_back(autocast_frame(ins, where));
    json g = *sub;  // renamed where its names meet the graph's
    std::map<std::string, std::string> rename;
    auto fresh = [&](const std::string& n) {
      std::string f = n;
      for (int k = 1; names_.count(f) || rename.count(f) || graph_names_.count(f); ++k) f = n + "_" + what + std::to_string(k);
      return f;
    };
    for (const json& in : r_.array(r_.at(g, "inputs", where), where + ".graph.inputs"))
      if (in.contains("as_tensor")) {
        const std::string n = r_.string(r_.at(in["as_tensor"], "name", where), where);
        rename[n] = fresh(n);
      }
    for (const json& nd : r_.array(r_.at(g, "nodes", where), where + ".graph.nodes"))
      for (const json& o : r_.array(r_.at(nd, "outputs", where), where)) {
        if (o.contains("as_tensor")) rename[o["as_tensor"].value("name", "")] = fresh(o["as_tensor"].value("name", ""));
        if (o.contains("as_tensors"))
          for (const json& t : o["as_tensors"]) rename[t.value("name", "")] = fresh(t.value("name", ""));
      }
    std::function<void(json&)> apply = [&](json& j) {
      if (j.is_object()) {
        for (auto it = j.begin(); it != j.end(); ++it) {
          if ((it.key() == "as_tensor" || it.key() == "as_optional_tensor") && it->is_object() && it->contains("name") && (*it)["name"].is_string()) {
            auto r = rename.find((*it)["name"].get<std::string>());
            if (r != rename.end()) (*it)["name"] = r->second;
          }
          if (it.key() == "as_tensors" && it->is_array())  // a multi-output node's outputs, or a tensor list argument
            for (json& t : *it)
              if (t.is_object() && t.contains("name") && t["name"].is_string())
                if (auto r = rename.find(t["name"].get<std::string>()); r != rename.end()) t["name"] = r->second;
          if (it.key() != "tensor_values") apply(*it);
        }
      } else if (j.is_array()) {
        for (json& x : j) apply(x);
      }
    };
    apply(g["nodes"]);
    apply(g["inputs"]);
    apply(g["outputs"]);
    json values = json::object();  // the subgraph's metadata under the new names
    if (g.contains("tensor_values") && g["tensor_values"].is_object())
      for (auto it = g["tensor_values"].begin(); it != g["tensor_values"].end(); ++it) {
        auto r = rename.find(it.key());
        values[r == rename.end() ? it.key() : r->second] = it.value();
      }
    const json& sub_ins = r_.array(g["inputs"], where + ".graph.inputs");
    if (sub_ins.size() != operands.size())
      r_.fail(where, what + "'s subgraph takes " + std::to_string(sub_ins.size()) + " inputs but is given " + std::to_string(operands.size()));
    for (size_t i = 0; i < operands.size(); ++i)
      names_[r_.string(r_.at(sub_ins[i]["as_tensor"], "name", where), where)] = lookup(operands[i], where);
    for (const json& nd : r_.array(g["nodes"], where + ".graph.nodes")) import_node(nd, values);
    std::vector<std::string> results;
    for (const json& o : r_.array(r_.at(g, "outputs", where), where + ".graph.outputs"))
      if (o.contains("as_tensor")) results.push_back(r_.string(r_.at(o["as_tensor"], "name", where), where));
    std::vector<std::string> outs;
    for (const json& o : r_.array(r_.at(node, "outputs", where), where + ".outputs")) {
      if (o.contains("as_tensor")) outs.push_back(r_.string(r_.at(o["as_tensor"], "name", where), where));
      if (o.contains("as_tensors"))
        for (const json& t : r_.array(o["as_tensors"], where)) outs.push_back(r_.string(r_.at(t, "name", where), where));
    }
    if (outs.size() > results.size())
      r_.fail(where, what + " has " + std::to_string(outs.size()) + " outputs but its subgraph returns " + std::to_string(results.size()));
    for (size_t i = 0; i < outs.size(); ++i) {
      if (names_.count(outs[i])) r_.fail(where, "the name '" + outs[i] + "' is defined twice");
      names_[outs[i]] = lookup(results[i], where);
    }
    if (autocast) autocast_.pop_back();
    --region_depth_;
  }

  // The autocast state a wrap_with_autocast node's leading arguments give.
  AutocastFrame autocast_frame(const json& ins, const std::string& where) {
    std::vector<const json*> lead;  // the arguments before the subgraph
    for (const json& in : ins) {
      const json& a = r_.at(in, "arg", where);
      if (a.contains("as_graph")) break;
      lead.push_back(&a);
    }
    if (lead.size() < 3) r_.fail(where, "wrap_with_autocast takes (device_type, dtype, enabled, cache_enabled) before its subgraph");
    const json& dev = *lead[0];
    if (!dev.contains("as_string")) r_.fail(where + ".device_type", "expected a string ('cuda' or 'cpu')");
    std::optional<DType> dtype;
    if (lead[1]->contains("as_scalar_type")) dtype = scalar_type(r_, (*lead[1])["as_scalar_type"], where + ".dtype");
    else if (!lead[1]->contains("as_none")) r_.fail(where + ".dtype", "expected a dtype or None");
    if (!lead[2]->contains("as_bool") || !(*lead[2])["as_bool"].is_boolean()) r_.fail(where + ".enabled", "expected true or false");
    AutocastFrame f;
    try {
      f.state = autocast_state(r_.string(dev["as_string"], where + ".device_type"), dtype, (*lead[2])["as_bool"].get<bool>());
    } catch (const std::invalid_argument& e) {
      r_.fail(where, e.what());
    }
    return f;
  }

  // The autocast that applies to the ops read now: the innermost region of the model's device
  // (autocast is per device: torch.autocast("cpu") inside a CUDA region leaves CUDA's as it is;
  // a region of another device casts nothing, its tensors not being eligible). A model whose
  // archive records no device takes the innermost region's.
  const AutocastState* active_autocast() {
    for (auto it = autocast_.rbegin(); it != autocast_.rend(); ++it)
      if (model_device_.empty() || it->state.device == model_device_) {
        current_frame_ = &*it;
        return it->state.enabled ? &it->state : nullptr;
      }
    return nullptr;
  }

  // A cast autocast inserts: prims.convert_element_type of node x, with the scope of the op it
  // feeds; one per value and dtype in a region, as autocast's cache keeps a weight's cast.
  int autocast_cast(int x, DType to, const std::string& consumer, const std::string& stack, const std::string& module_path) {
    auto& cache = current_frame_->casts;
    if (auto c = cache.find({x, to}); c != cache.end()) return c->second;
    static const OpDef* convert = find_op("prims.convert_element_type.default");
    Node n;
    n.op = convert;
    n.target = "torch.ops." + convert->name;
    n.args = {Arg::of_node(x), Arg::of_string(std::string(dtype_torch(to)))};
    n.outs = infer_meta(g_, *convert, n.args);
    const std::string base = g_.nodes[static_cast<size_t>(x)].name + "_autocast_" + std::string(dtype_short(to));
    n.name = base;
    for (int k = 1; names_.count(n.name) || g_.find(n.name) >= 0; ++k) n.name = base + "_" + std::to_string(k);
    n.stack = stack;
    n.module_path = module_path;
    n.origins = {consumer};
    const std::string name = n.name;
    add(std::move(n));
    return cache[{x, to}] = names_.at(name);
  }

  void check_assert(const json& node, const std::string& where) {
    const json& ins = r_.array(r_.at(node, "inputs", where), where + ".inputs");
    const Node* tensor = nullptr;
    for (const json& in : ins) {
      const json& a = r_.at(in, "arg", where);
      if (a.is_object() && a.contains("as_tensor")) tensor = &g_.nodes[lookup(r_.string(r_.at(a["as_tensor"], "name", where), where), where)];
      if (tensor && in.value("name", std::string()) == "dtype" && a.is_object() && a.contains("as_scalar_type")) {
        const DType want = scalar_type(r_, a["as_scalar_type"], where);
        if (tensor->meta().dtype != want)
          r_.fail(where, "'" + tensor->name + "' is " + std::string(dtype_short(tensor->meta().dtype)) + " but the graph asserts " +
                             std::string(dtype_short(want)));
      }
    }
  }

  // A node calling an op we lack: kept, with the metadata the archive records for its outputs, so
  // the model still opens; the pipeline stops at it (passes/normalize_to_aten.h).
  void import_missing(const json& node, const json& values, const std::string& target, const std::string& where) {
    Node n;
    n.op = &op::missing();
    n.target = target.rfind("torch.ops.", 0) == 0 ? target : "torch.ops." + target;
    for (const json& in : r_.array(r_.at(node, "inputs", where), where + ".inputs"))
      n.args.push_back(argument(r_.at(in, "arg", where), where));
    std::vector<std::string> out_names;
    for (const json& o : r_.array(r_.at(node, "outputs", where), where + ".outputs")) {
      if (o.contains("as_tensor")) out_names.push_back(r_.string(r_.at(o["as_tensor"], "name", where), where));
      else if (o.contains("as_tensors"))
        for (const json& t : r_.array(o["as_tensors"], where)) out_names.push_back(r_.string(r_.at(t, "name", where), where));
    }
    for (const std::string& name : out_names) {
      if (!values.contains(name)) r_.fail(where, "unknown op '" + target + "' (and no recorded metadata for its output " + name + ")");
      n.outs.push_back(tensor_meta(r_, values[name], "tensor_values." + name));
    }
    if (out_names.empty()) r_.fail(where, "unknown op '" + target + "' with no tensor output");
    const bool one = out_names.size() == 1;
    n.name = one ? out_names[0] : node.value("name", target);
    n.origins = {n.name};
    const std::vector<TensorMeta> metas = n.outs;
    const std::string base = n.name;
    add(std::move(n));
    for (size_t i = 0; !one && i < out_names.size(); ++i) {
      Node gi;
      gi.name = out_names[i];
      gi.target = "getitem";
      gi.op = find_op("getitem");
      gi.args = {Arg::of_node(names_.at(base)), Arg::of_int(static_cast<int64_t>(i))};
      gi.outs = {metas[i]};
      gi.origins = {base};
      add(std::move(gi));
    }
  }

  void check_meta(const TensorMeta& got, const json& values, const std::string& name, const std::string& where) {
    if (!values.contains(name)) return;
    const TensorMeta want = tensor_meta(r_, values[name], "tensor_values." + name);
    if (want.shape != got.shape || want.dtype != got.dtype)
      r_.fail(where, "'" + name + "' is recorded as " + want.annotation() + " but our shape rule gives " + got.annotation());
  }

  std::string path_;
  Archive zip_;
  Reader r_;
  Graph g_;
  std::map<std::string, int> names_;
  std::set<std::string> graph_names_;  // the top graph's own output names (inline_region avoids them)
  int region_depth_ = 0;
  std::vector<AutocastFrame> autocast_;     // the autocast regions being inlined, innermost last
  AutocastFrame* current_frame_ = nullptr;  // the one active_autocast() found
  std::string model_device_;                // "cuda" or "cpu", as the archive records its inputs ("": not recorded)
};

}  // namespace

Graph import_pt2(const std::string& path) {
  try {
    return Importer(path).run();
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": malformed model.json: " + e.what());
  }
}


}  // namespace ls
