// PyTorch's own OpInfo samples (issue 32, item 3): every sample of tests/data/opinfo/*.json
// (written on the GPU machine by tools/gpu/opinfo_corpus.py) imported, run on the reference
// interpreter and compared with PyTorch's eager outputs at the sample's tolerance (OpInfo's own);
// one sample per (op, dtype) compiled by the pipeline (all of them with LS_OPINFO_ALL=1) and its
// outputs compared likewise; gradients of the sum of the float outputs through the joint graph
// on the reference interpreter, and through the compiled training step, against PyTorch's.
//
// A sample whose graph calls an op we lack is "unsupported", not a failure. Any other mismatch or
// error fails the test unless tests/data/opinfo/known_failures.txt lists it:
//   OPNAME INDEX|* [CHECK:] REASON     (CHECK: import, ref, grad, cpu, cpu-grad, cuda, cuda-grad)
// An entry with a check covers that check of the sample; without one, every check of it.
//
// Each op runs in a child process (--no-fork: in this one, for a debugger): a sample that crashes
// or hangs fails the stage it was in ("crashed: signal 11"), and the others still run.
// No Qt: the same executable runs the CUDA comparison on the GPU machine (--device cuda,
// tools/gpu/opinfo-cuda.sh), where there is no Qt.
//   test_opinfo [--data DIR] [--device cpu|cuda] [--all] [--only SUBSTRING] [--no-compile]
//               [--no-fork] [--table FILE] [--tsv FILE] [--update-table] [--write-known FILE]
// Environment: LS_OPINFO_ALL=1 (--all), LS_OPINFO_UPDATE=1 (--update-table: writes
// tests/data/opinfo/RESULTS.md, or cuda-results.tsv with --device cuda), LS_OPINFO_ONLY,
// LS_TEST_DATA (the folder holding opinfo/).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>

#include <nlohmann/json.hpp>

#include "autodiff/joint.h"
#include "ir/device.h"
#include "frontend/fx_text.h"
#include "interp/reference.h"
#include "ops/known_ops.h"
#include "passes/normalize_to_aten.h"
#include "pipeline/pipeline.h"
#include "../json_tensor.h"

using namespace ls;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

using test_data::decode_tensor;
using Clock = std::chrono::steady_clock;

// ---- the corpus -------------------------------------------------------------------------

struct Sample {
  std::string op, file, dtype, desc, graph_core, graph_aten;  // graph_aten empty: the same as graph_core
  int index = 0;
  std::vector<Tensor> inputs, outputs;
  std::vector<Tensor> grads;  // empty: none recorded; an undefined tensor: no gradient for that input
  double rtol = 1.3e-6, atol = 1e-5;  // float outputs (integer and bool outputs: exactly)
  double grad_rtol = 1e-4, grad_atol = 1e-5;  // gradients: float32 sums in another order than PyTorch's
  bool random = false;
  std::set<int> mutations;  // outputs that are inputs updated in place: no tangent
  std::string bad;  // the sample could not be read
};

struct OpFile {
  std::string op, file;
  std::map<std::string, int> skipped;  // at generation, by reason
  std::vector<Sample> samples;
};

OpFile read_op_file(const fs::path& path) {
  OpFile f;
  f.file = path.filename().string();
  std::ifstream in(path);
  const json j = json::parse(in);
  f.op = j.value("op", path.stem().string());
  if (j.contains("skipped"))
    for (const auto& [k, v] : j.at("skipped").items()) f.skipped[k] = v.get<int>();
  int i = 0;
  for (const json& s : j.at("samples")) {
    Sample x;
    x.op = f.op;
    x.file = f.file;
    x.index = i++;
    try {
      x.dtype = s.value("dtype", "float32");
      x.desc = s.value("desc", "");
      x.graph_core = s.at("graph_core").get<std::string>();
      if (s.contains("graph_aten") && s.at("graph_aten").is_string()) x.graph_aten = s.at("graph_aten").get<std::string>();
      for (const json& t : s.at("inputs")) x.inputs.push_back(decode_tensor(t));
      for (const json& t : s.at("outputs")) x.outputs.push_back(decode_tensor(t));
      if (s.contains("grads") && s.at("grads").is_array())
        for (const json& t : s.at("grads")) x.grads.push_back(t.is_null() ? Tensor() : decode_tensor(t));
      x.rtol = s.value("rtol", x.rtol);
      x.atol = s.value("atol", x.atol);
      if (x.rtol == 0 && x.atol == 0) x.rtol = 1.3e-6, x.atol = 1e-5;  // an integer sample's float outputs: float32's
      x.grad_rtol = s.value("grad_rtol", std::max(x.rtol, x.grad_rtol));
      x.grad_atol = s.value("grad_atol", std::max(x.atol, x.grad_atol));
      x.random = s.value("random", false);
      if (s.contains("mutations"))
        for (const json& m : s.at("mutations")) x.mutations.insert(m.get<int>());
    } catch (const std::exception& e) {
      x.bad = e.what();
    }
    f.samples.push_back(std::move(x));
  }
  return f;
}

bool has_grads(const Sample& s) {
  return std::any_of(s.grads.begin(), s.grads.end(), [](const Tensor& t) { return t.defined(); });
}

// ---- comparison, as torch.testing.assert_close ------------------------------------------

int64_t int_at(const Tensor& t, int64_t i) {
  const auto* p = static_cast<const uint8_t*>(t.data());
  switch (t.dtype()) {
    case DType::i64: { int64_t v; std::memcpy(&v, p + i * 8, 8); return v; }
    case DType::i32: { int32_t v; std::memcpy(&v, p + i * 4, 4); return v; }
    case DType::b8: return p[i] != 0;
    case DType::u8: return p[i];
    default: return static_cast<int64_t>(t.get(i));
  }
}

std::string index_text(const Shape& shape, int64_t linear) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] > 0) {
      idx[d] = linear % shape[d];
      linear /= shape[d];
    }
  }
  return shape_str(idx);
}

std::string number_text(double v) {
  std::ostringstream os;
  os << std::setprecision(9) << v;
  return os.str();
}

// "" when `got` matches PyTorch's `want`: same dtype and shape, |got - want| <= atol + rtol*|want|
// (NaN matching NaN, infinities themselves), integers and bools exactly. `values`: false for a
// random op, whose values are not compared.
std::string mismatch(const std::string& what, const Tensor& got, const Tensor& want, double rtol, double atol, bool values = true) {
  if (!got.defined()) return what + ": no value";
  if (got.dtype() != want.dtype())
    return what + ": dtype " + std::string(dtype_short(got.dtype())) + ", PyTorch's " + std::string(dtype_short(want.dtype()));
  if (got.shape() != want.shape()) return what + ": shape " + shape_str(got.shape()) + ", PyTorch's " + shape_str(want.shape());
  if (!values) return "";
  int64_t bad = 0, first = -1;
  double worst = 0;
  const bool exact = !dtype_is_float(want.dtype());
  for (int64_t i = 0; i < want.numel(); ++i) {
    bool ok;
    if (exact) {
      ok = int_at(got, i) == int_at(want, i);
    } else {
      const double a = got.get(i), b = want.get(i);
      if (std::isnan(b)) ok = std::isnan(a);
      else if (std::isinf(b)) ok = a == b;
      else {
        const double err = std::abs(a - b);
        ok = err <= atol + rtol * std::abs(b);  // false for a NaN
        if (!ok && std::isfinite(err)) worst = std::max(worst, err);
      }
    }
    if (!ok) {
      if (first < 0) first = i;
      ++bad;
    }
  }
  if (!bad) return "";
  std::ostringstream os;
  os << what << ": " << bad << " of " << want.numel() << " elements differ, first at " << index_text(want.shape(), first) << ": "
     << (exact ? std::to_string(int_at(got, first)) : number_text(got.get(first))) << " vs PyTorch's "
     << (exact ? std::to_string(int_at(want, first)) : number_text(want.get(first)));
  if (!exact) os << " (max abs err " << number_text(worst) << ", rtol " << rtol << ", atol " << atol << ")";
  return os.str();
}

std::string outputs_mismatch(const std::vector<Tensor>& got, const Sample& s) {
  std::vector<Tensor> want = s.outputs;
  // An export-level graph that updates inputs in place returns the op's outputs alone; the
  // corpus's outputs follow the Core ATen graph, which returns the updated inputs first.
  if (!s.mutations.empty() && got.size() + s.mutations.size() == want.size()) {
    want.clear();
    for (size_t i = 0; i < s.outputs.size(); ++i)
      if (!s.mutations.count(static_cast<int>(i))) want.push_back(s.outputs[i]);
  }
  if (got.size() != want.size()) return std::to_string(got.size()) + " outputs, PyTorch's " + std::to_string(want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (std::string m = mismatch("out" + std::to_string(i), got[i], want[i], s.rtol, s.atol, !s.random); !m.empty()) return m;
  return "";
}

// ---- import --------------------------------------------------------------------------------

struct Imported {
  Graph graph;
  std::string level;        // "core" or "aten": the graph that imported
  std::string unsupported;  // an op we lack (the sample is skipped)
  std::string error;        // any other import error (a failure)
};

// An error's first line (and its second, where the first only announces it: "Clang rejected ...:").
std::string first_line(const std::string& s) {
  const auto nl = s.find('\n');
  std::string line = s.substr(0, nl);
  if (nl != std::string::npos && !line.empty() && line.back() == ':') {
    const auto from = s.find_first_not_of(" \t\n", nl);
    if (from != std::string::npos) line += " " + s.substr(from, s.find('\n', from) - from);
  }
  return line;
}

// A size known only at run time (an unbacked symbol of torch.export: "f32[u0, 5]", "Sym(u3)").
bool unbacked_size(const std::string& ann) {
  for (size_t i = 0; (i = ann.find('u', i)) != std::string::npos; ++i) {
    const bool starts = i > 0 && (ann[i - 1] == '[' || ann[i - 1] == ' ' || ann[i - 1] == '(');
    if (starts && i + 1 < ann.size() && std::isdigit(static_cast<unsigned char>(ann[i + 1]))) return true;
  }
  return false;
}

Imported import_one(const std::string& text, const std::string& name) {
  Imported r;
  try {
    r.graph = import_fx_text(text, name);
  } catch (const std::exception& e) {
    const std::string m = e.what();
    const auto at = m.find("unknown op '");
    if (at != std::string::npos) {
      const auto from = at + 12, to = m.find('\'', from);
      r.unsupported = m.substr(from, to == std::string::npos ? std::string::npos : to - from);
    } else if (const auto a = m.find("cannot read the type annotation \""); a != std::string::npos) {
      // Types the compiler does not have: complex tensors, sizes known only at run time.
      const std::string ann = m.substr(a + 33, m.find('"', a + 33) - (a + 33));
      if (ann.rfind("c64", 0) == 0 || ann.rfind("c128", 0) == 0 || ann.rfind("c32", 0) == 0)
        r.unsupported = "complex dtype " + ann.substr(0, ann.find('['));
      else if (unbacked_size(ann))
        r.unsupported = "data-dependent size";
      else
        r.error = first_line(m);
    } else {
      r.error = first_line(m);
    }
    return r;
  }
  for (const Node& n : r.graph.nodes)
    if (n.op == &op::missing()) {
      r.unsupported = n.target;
      break;
    }
  return r;
}

// graph_core, or graph_aten where the Core ATen graph calls an op we lack or does not import.
Imported import_sample(const Sample& s) {
  const std::string name = s.file + "#" + std::to_string(s.index);
  Imported core = import_one(s.graph_core, name + " (core)");
  core.level = "core";
  if (core.unsupported.empty() && core.error.empty()) return core;
  if (!s.graph_aten.empty()) {
    Imported aten = import_one(s.graph_aten, name + " (aten)");
    aten.level = "aten";
    if (aten.unsupported.empty() && aten.error.empty()) return aten;
  }
  if (core.unsupported.rfind("torch.ops.", 0) == 0) core.unsupported = core.unsupported.substr(10);
  return core;
}

// ---- the checks ----------------------------------------------------------------------------

struct Verdict {
  bool ran = false, ok = false;
  std::string why;
  void fail(std::string w) {
    ran = true;
    ok = false;
    why = std::move(w);
  }
  void pass() {
    ran = true;
    ok = true;
  }
  void result(const std::string& w) { w.empty() ? pass() : fail(w); }
};

// One sample's checks. Children write it as JSON to the parent (see run_op).
struct Result {
  const Sample* s = nullptr;
  std::string unsupported;
  Verdict import, ref, grad, dev, dev_grad;
  bool compiled = false, compiled_grad = false;  // the device pipeline ran (inference, training)
  double compile_s = 0, grad_compile_s = 0;
};

json verdict_json(const Verdict& v) { return json::array({v.ran, v.ok, v.why}); }
Verdict verdict_of(const json& j) {
  Verdict v;
  v.ran = j.at(0).get<bool>();
  v.ok = j.at(1).get<bool>();
  v.why = j.at(2).get<std::string>();
  return v;
}
json result_json(const Result& r) {
  return {{"i", r.s->index},          {"unsupported", r.unsupported},   {"import", verdict_json(r.import)},
          {"ref", verdict_json(r.ref)}, {"grad", verdict_json(r.grad)},   {"dev", verdict_json(r.dev)},
          {"dev_grad", verdict_json(r.dev_grad)}, {"compiled", r.compiled}, {"compiled_grad", r.compiled_grad},
          {"compile_s", r.compile_s}, {"grad_compile_s", r.grad_compile_s}};
}
void read_result(const json& j, Result& r) {
  r.unsupported = j.at("unsupported").get<std::string>();
  r.import = verdict_of(j.at("import"));
  r.ref = verdict_of(j.at("ref"));
  r.grad = verdict_of(j.at("grad"));
  r.dev = verdict_of(j.at("dev"));
  r.dev_grad = verdict_of(j.at("dev_grad"));
  r.compiled = j.at("compiled").get<bool>();
  r.compiled_grad = j.at("compiled_grad").get<bool>();
  r.compile_s = j.at("compile_s").get<double>();
  r.grad_compile_s = j.at("grad_compile_s").get<double>();
}

// The tangents of the joint graph: ones (the gradient of the sum of every output), zeros for the
// outputs that are inputs updated in place (PyTorch updates them without grad).
std::vector<Tensor> tangents_for(const JointGraph& j, const Sample& s) {
  std::vector<Tensor> out;
  for (size_t k = 0; k < j.tangents.size(); ++k) {
    const TensorMeta& m = j.graph.nodes.at(static_cast<size_t>(j.graph.find(j.tangents[k]))).meta();
    Tensor t(m.dtype, m.shape);
    const bool zero = k < j.tangent_of.size() && s.mutations.count(j.tangent_of[k]);
    for (int64_t i = 0; i < t.numel() && !zero; ++i) t.set(i, 1.0);
    out.push_back(t);
  }
  return out;
}

// The joint graph's gradients (outputs from num_forward_outputs on) against PyTorch's, by input.
std::string grads_mismatch(const Graph& g, const JointGraph& j, const std::vector<Tensor>& outs, const Sample& s) {
  const std::vector<int> users = g.user_inputs();
  int compared = 0;
  for (size_t u = 0; u < s.grads.size() && u < users.size(); ++u) {
    if (!s.grads[u].defined()) continue;
    const std::string& name = g.nodes[static_cast<size_t>(users[u])].name;
    const auto k = std::find(j.grad_of.begin(), j.grad_of.end(), name);
    if (k == j.grad_of.end()) return "no gradient for input " + std::to_string(u) + " (" + name + ")";
    const size_t at = static_cast<size_t>(j.num_forward_outputs + (k - j.grad_of.begin()));
    Tensor got = at < outs.size() ? outs[at] : Tensor();
    if (!got.defined()) got = Tensor(s.grads[u].dtype(), s.grads[u].shape());  // no path: zeros
    if (std::string m = mismatch("grad of input " + std::to_string(u), got, s.grads[u], s.grad_rtol, s.grad_atol); !m.empty()) return m;
    ++compared;
  }
  return compared ? "" : "no gradient compared";
}

void check_reference(Result& r, const Graph& g) {
  const Sample& s = *r.s;
  try {
    r.ref.result(outputs_mismatch(run_reference(g, s.inputs), s));
  } catch (const std::exception& e) {
    r.ref.fail(first_line(e.what()));
  }
}

// The joint graph (the ATen graph differentiated) on the reference interpreter, ones for every
// output's tangent: the gradients of the sum of the outputs, as the corpus recorded them.
void check_reference_grads(Result& r, const Graph& g) {
  const Sample& s = *r.s;
  try {
    const Graph aten = normalize_to_aten(g);
    const JointGraph j = build_joint(aten);
    std::vector<Tensor> in = s.inputs;
    for (Tensor& t : tangents_for(j, s)) in.push_back(t);
    r.grad.result(grads_mismatch(aten, j, run_reference(j.graph, in), s));
  } catch (const std::exception& e) {
    r.grad.fail(first_line(e.what()));
  }
}

void check_device(Result& r, const Graph& g, Device device, bool train) {
  const Sample& s = *r.s;
  Verdict& c = train ? r.dev_grad : r.dev;
  LoadedModel m;
  m.path = s.file + "#" + std::to_string(s.index);
  m.format = "fx-text";
  m.graph = g;
  m.inputs = s.inputs;
  m.inputs_from = "opinfo sample";
  PipelineOptions o;
  o.device = device;
  o.timing_budget_ms = 1;
  o.reference = false;  // compared with PyTorch's numbers here
  o.sass = false;
  o.train = train;
  o.keep_program = train;
  try {
    const CompileResult cr = run_pipeline(m, o);
    if (!cr.error.empty()) return c.fail(cr.error_stage + ": " + first_line(cr.error));
    if (!cr.not_run.empty()) return c.fail("not run: " + first_line(cr.not_run));
    if (!train) return c.result(outputs_mismatch(cr.outputs, s));
    // The step ran with ones for its first output's tangent only: run it again with ones for
    // every output's, the gradient of the sum of all of them, as the corpus recorded it.
    if (!cr.program) return c.fail("no program kept");
    const JointGraph& j = cr.training.joint;
    std::vector<Tensor> in = s.inputs;
    for (Tensor& t : tangents_for(j, s)) in.push_back(t);
    c.result(grads_mismatch(cr.aten, j, cr.program->run(in), s));
  } catch (const std::exception& e) {
    c.fail(first_line(e.what()));
  }
}

// ---- one op's samples, each op in a child process ----------------------------------------

struct RunOptions {
  Device device = Device::cpu;
  bool compile = true, all = false, fork = true;
  int timeout_s = 300;  // per stage of a sample, in a child
};

// Which samples the device pipeline compiles: the first importable one per dtype, and the first
// with gradients (all of them with --all).
struct CompileChoice {
  std::set<std::string> dtypes;
  bool grad = false;
};

// `stage(name, so_far)` is called before each stage of the sample (a child reports it, so that a
// crash or a hang is pinned on the stage).
Result check_sample(const Sample& s, const RunOptions& o, CompileChoice& chosen,
                    const std::function<void(const char*, const Result&)>& stage) {
  Result r;
  r.s = &s;
  Graph g;
  stage("import", r);
  if (!s.bad.empty()) {
    r.import.fail("cannot read the sample: " + s.bad);
    return r;
  }
  Imported im = import_sample(s);
  if (!im.unsupported.empty()) {
    r.unsupported = im.unsupported;
    return r;
  }
  if (!im.error.empty()) return r.import.fail(im.error), r;
  if (im.graph.user_inputs().size() != s.inputs.size())
    return r.import.fail("the graph takes " + std::to_string(im.graph.user_inputs().size()) + " inputs, the sample has " +
                         std::to_string(s.inputs.size())),
           r;
  r.import.pass();
  g = std::move(im.graph);
  stage("ref", r);
  check_reference(r, g);
  if (has_grads(s) && !s.random) {
    stage("grad", r);
    check_reference_grads(r, g);
  }
  if (o.compile && (o.all || !chosen.dtypes.count(s.dtype))) {
    chosen.dtypes.insert(s.dtype);
    r.compiled = true;
    stage("dev", r);
    const auto t = Clock::now();
    check_device(r, g, o.device, false);
    r.compile_s = std::chrono::duration<double>(Clock::now() - t).count();
  }
  if (o.compile && has_grads(s) && !s.random && (o.all || !chosen.grad)) {
    chosen.grad = true;
    r.compiled_grad = true;
    stage("dev_grad", r);
    const auto t = Clock::now();
    check_device(r, g, o.device, true);
    r.grad_compile_s = std::chrono::duration<double>(Clock::now() - t).count();
  }
  return r;
}

bool write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Every sample of one op. With o.fork, in child processes: a child checks the samples from
// `from` on and reports each stage and each result as a line of JSON; a sample that crashes or
// hangs its child fails that stage ("crashed: signal 11"), and a new child goes on after it.
std::vector<Result> run_op(const OpFile& of, const RunOptions& o) {
  std::vector<Result> out;
  CompileChoice chosen;
  if (!o.fork) {
    for (const Sample& s : of.samples) out.push_back(check_sample(s, o, chosen, [](const char*, const Result&) {}));
    return out;
  }
  size_t from = 0;
  while (from < of.samples.size()) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    std::cout.flush();
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      ::close(fds[0]);
      for (size_t i = from; i < of.samples.size(); ++i) {
        const Result r = check_sample(of.samples[i], o, chosen, [&](const char* st, const Result& so_far) {
          json j = result_json(so_far);
          j["stage"] = st;
          write_all(fds[1], j.dump() + "\n");
        });
        json j = result_json(r);
        j["done"] = true;
        if (!write_all(fds[1], j.dump() + "\n")) ::_exit(3);
      }
      ::close(fds[1]);
      ::_exit(0);
    }
    ::close(fds[1]);
    std::string buf, stage;
    json last;  // the sample under way: its result so far
    bool timed_out = false;
    for (;;) {
      pollfd p{fds[0], POLLIN, 0};
      const int ready = ::poll(&p, 1, o.timeout_s * 1000);
      if (ready == 0) {
        timed_out = true;
        ::kill(pid, SIGKILL);
        break;
      }
      if (ready < 0) {
        if (errno == EINTR) continue;
        break;
      }
      char chunk[65536];
      const ssize_t n = ::read(fds[0], chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      buf.append(chunk, static_cast<size_t>(n));
      for (size_t nl; (nl = buf.find('\n')) != std::string::npos; buf.erase(0, nl + 1)) {
        const json j = json::parse(buf.substr(0, nl));
        const size_t i = j.at("i").get<size_t>();
        if (j.contains("done")) {
          Result r;
          r.s = &of.samples.at(i);
          read_result(j, r);
          if (r.compiled) chosen.dtypes.insert(r.s->dtype);
          if (r.compiled_grad) chosen.grad = true;
          out.push_back(r);
          from = i + 1;
          last = json();
        } else {
          last = j;
          stage = j.at("stage").get<std::string>();
        }
      }
    }
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (last.is_null()) {
      if (from < of.samples.size() && !timed_out) {  // died between samples (cannot happen unless the child failed to write)
        Result r;
        r.s = &of.samples[from];
        r.import.fail("the child process ended (status " + std::to_string(status) + ") before reporting the sample");
        out.push_back(r);
        ++from;
      }
      continue;
    }
    Result r;
    const size_t i = last.at("i").get<size_t>();
    r.s = &of.samples.at(i);
    read_result(last, r);
    const std::string why = timed_out ? "timed out after " + std::to_string(o.timeout_s) + " s"
                            : WIFSIGNALED(status) ? "crashed: signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")"
                                                  : "the child process exited with status " + std::to_string(WEXITSTATUS(status));
    Verdict& v = stage == "import" ? r.import : stage == "ref" ? r.ref : stage == "grad" ? r.grad : stage == "dev" ? r.dev : r.dev_grad;
    v.fail(why);
    if (stage == "dev") {
      r.compiled = true;
      chosen.dtypes.insert(r.s->dtype);
    }
    if (stage == "dev_grad") {
      r.compiled_grad = true;
      chosen.grad = true;
    }
    out.push_back(r);
    from = i + 1;
  }
  return out;
}

// ---- known failures ------------------------------------------------------------------------

struct Known {
  std::string op, index, check, reason;  // index "*": every sample; check "": every check
  mutable bool used = false;
};

const std::set<std::string>& check_names() {
  static const std::set<std::string> n = {"import", "ref", "grad", "cpu", "cpu-grad", "cuda", "cuda-grad"};
  return n;
}

std::vector<Known> read_known(const fs::path& path) {
  std::vector<Known> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto hash = line.find_first_not_of(" \t");
    if (hash == std::string::npos || line[hash] == '#') continue;
    std::istringstream ls(line);
    Known k;
    ls >> k.op >> k.index;
    std::getline(ls, k.reason);
    k.reason.erase(0, k.reason.find_first_not_of(" \t"));
    const auto colon = k.reason.find(':');
    if (colon != std::string::npos && check_names().count(k.reason.substr(0, colon))) {
      k.check = k.reason.substr(0, colon);
      k.reason.erase(0, colon + 1);
      k.reason.erase(0, k.reason.find_first_not_of(" \t"));
    }
    if (!k.op.empty() && !k.index.empty()) out.push_back(k);
  }
  return out;
}

const Known* known(const std::vector<Known>& list, const Sample& s, const std::string& check) {
  for (const Known& k : list)
    if (k.op == s.op && (k.index == "*" || k.index == std::to_string(s.index)) && (k.check.empty() || k.check == check)) {
      k.used = true;
      return &k;
    }
  return nullptr;
}

// ---- the table -----------------------------------------------------------------------------

struct OpRow {
  std::string op;
  int samples = 0, unreadable = 0, unsupported = 0;
  std::set<std::string> missing_ops;
  int ref_pass = 0, ref_ran = 0, grad_pass = 0, grad_ran = 0, dev_pass = 0, dev_ran = 0, dgrad_pass = 0, dgrad_ran = 0;
  std::string first_failure;
  std::map<std::string, int> skipped;
};

std::string frac(int pass, int ran) { return ran ? std::to_string(pass) + "/" + std::to_string(ran) : "-"; }

std::string cell(std::string s) {
  std::replace(s.begin(), s.end(), '|', '/');
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s.size() > 160 ? s.substr(0, 157) + "..." : s;
}

// The CUDA columns of a GPU machine's run (cuda-results.tsv), by op: "pass/ran", "pass/ran", failure.
std::map<std::string, std::vector<std::string>> read_cuda_tsv(const fs::path& p) {
  std::map<std::string, std::vector<std::string>> out;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::istringstream ls(line);
    std::string x;
    while (std::getline(ls, x, '\t')) f.push_back(x);
    if (f.size() >= 3) out[f[0]] = {f[1], f[2], f.size() > 3 ? f[3] : ""};
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const auto t0 = Clock::now();
  const char* env_data = std::getenv("LS_TEST_DATA");
  fs::path data = fs::path(env_data && *env_data ? env_data : LS_TEST_DATA) / "opinfo";
  Device device = Device::cpu;
  bool all = std::getenv("LS_OPINFO_ALL") && std::string(std::getenv("LS_OPINFO_ALL")) == "1";
  bool update = std::getenv("LS_OPINFO_UPDATE") && std::string(std::getenv("LS_OPINFO_UPDATE")) == "1";
  bool compile = true, fork = true;
  std::string only = std::getenv("LS_OPINFO_ONLY") ? std::getenv("LS_OPINFO_ONLY") : "";
  fs::path table = fs::path(LS_BUILD_DIR) / "opinfo-results.md", tsv, write_known;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--data") data = next();
    else if (a == "--device") {
      try {
        device = parse_device(next());
      } catch (const std::exception& e) {
        std::cerr << e.what() << "\n";
        return 2;
      }
    } else if (a == "--all") all = true;
    else if (a == "--only") only = next();
    else if (a == "--no-compile") compile = false;
    else if (a == "--no-fork") fork = false;
    else if (a == "--table") table = next();
    else if (a == "--tsv") tsv = next();
    else if (a == "--update-table") update = true;
    else if (a == "--write-known") write_known = next();
    else {
      std::cerr << "unknown argument " << a
                << "\nusage: test_opinfo [--data DIR] [--device cpu|cuda] [--all] [--only SUBSTRING] [--no-compile]"
                   " [--no-fork] [--table FILE] [--tsv FILE] [--update-table] [--write-known FILE]\n";
      return 2;
    }
  }
  const std::string dev = device_name(device);
  if (device == Device::cuda && table == fs::path(LS_BUILD_DIR) / "opinfo-results.md") table = fs::path(LS_BUILD_DIR) / "opinfo-results-cuda.md";
  if (device == Device::cuda && tsv.empty()) tsv = table.parent_path() / "cuda-results.tsv";
  if (update) {
    if (device == Device::cpu) table = data / "RESULTS.md";
    else tsv = data / "cuda-results.tsv";
  }

  std::vector<fs::path> files;
  if (fs::is_directory(data))
    for (const auto& e : fs::directory_iterator(data))
      if (e.path().extension() == ".json" && e.path().filename() != "summary.json" &&
          e.path().filename().string().rfind("_shard", 0) != 0)
        files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::cerr << "FAIL: no corpus files (*.json) in " << data << "\n";
    return 1;
  }
  const std::vector<Known> known_list = read_known(data / "known_failures.txt");
  RunOptions ro;
  ro.device = device;
  ro.compile = compile;
  ro.all = all;
  ro.fork = fork;

  std::vector<OpFile> ops;
  std::vector<std::string> unexpected, expected;
  for (const fs::path& f : files) {
    try {
      OpFile o = read_op_file(f);
      if (!only.empty() && o.op.find(only) == std::string::npos) continue;
      ops.push_back(std::move(o));
    } catch (const std::exception& e) {
      unexpected.push_back(f.filename().string() + ": cannot read: " + first_line(e.what()));
    }
  }

  std::vector<OpRow> rows;
  std::vector<std::string> known_lines;
  double compile_s = 0, grad_compile_s = 0;
  int compiles = 0, grad_compiles = 0, samples = 0, unsupported = 0;
  for (const OpFile& of : ops) {
    OpRow row;
    row.op = of.op;
    row.skipped = of.skipped;
    for (const Result& r : run_op(of, ro)) {
      const Sample& s = *r.s;
      ++samples;
      ++row.samples;
      if (!r.unsupported.empty()) {
        ++row.unsupported;
        ++unsupported;
        row.missing_ops.insert(r.unsupported);
        continue;
      }
      compiles += r.compiled, grad_compiles += r.compiled_grad;
      compile_s += r.compile_s, grad_compile_s += r.grad_compile_s;
      row.ref_ran += r.ref.ran, row.ref_pass += r.ref.ok;
      row.grad_ran += r.grad.ran, row.grad_pass += r.grad.ok;
      row.dev_ran += r.dev.ran, row.dev_pass += r.dev.ok;
      row.dgrad_ran += r.dev_grad.ran, row.dgrad_pass += r.dev_grad.ok;
      const std::pair<const char*, const Verdict*> checks[] = {
          {"import", &r.import}, {"ref", &r.ref}, {"grad", &r.grad}, {nullptr, &r.dev}, {nullptr, &r.dev_grad}};
      for (const auto& [name0, c] : checks) {
        if (!c->ran || c->ok) continue;
        const std::string name = name0 ? name0 : (c == &r.dev ? dev : dev + "-grad");
        const std::string line = s.op + " " + std::to_string(s.index) + " " + name + ": " + c->why;
        if (row.first_failure.empty()) row.first_failure = "#" + std::to_string(s.index) + " " + name + ": " + c->why;
        known_lines.push_back(line);
        const std::string where = s.op + "#" + std::to_string(s.index) + " [" + s.dtype + "] " + name + ": " + c->why +
                                  (s.desc.empty() ? "" : "\n      sample: " + s.desc);
        if (const Known* k = known(known_list, s, name)) expected.push_back(where + "\n      known: " + k->reason);
        else unexpected.push_back(where);
      }
    }
    rows.push_back(std::move(row));
  }
  const double total_s = std::chrono::duration<double>(Clock::now() - t0).count();

  // The table: per op, what passes where; CUDA's columns from the GPU machine's run.
  const bool cuda_run = device == Device::cuda;
  const auto cuda_cols = read_cuda_tsv(data / "cuda-results.tsv");
  std::ostringstream md;
  md << "# OpInfo corpus results\n\n"
     << "PyTorch's OpInfo samples (`tests/data/opinfo/*.json`, made by `tools/gpu/opinfo_corpus.py`) checked by "
        "`tests/ops/test_opinfo.cpp` (ctest `opinfo`). Columns: passed/checked samples. *reference*: the reference "
        "interpreter against PyTorch's eager outputs; *grads*: the joint graph's gradients of the sum of the float outputs "
        "on the reference interpreter; *"
     << dev << "*, *" << dev
     << " grads*: compiled by the pipeline (one sample per op and dtype; every sample with `LS_OPINFO_ALL=1`)"
     << (cuda_run || cuda_cols.empty() ? "" : "; *cuda*, *cuda grads*: the GPU machine's run (`cuda-results.tsv`)")
     << ". *unsupported*: samples whose graph calls an op we lack (not failures). *skipped at generation*: samples the "
        "generator left out, by reason.\n\n";
  int ref_pass = 0, ref_ran = 0, grad_pass = 0, grad_ran = 0, dev_pass = 0, dev_ran = 0, dg_pass = 0, dg_ran = 0;
  for (const OpRow& r : rows) {
    ref_pass += r.ref_pass, ref_ran += r.ref_ran, grad_pass += r.grad_pass, grad_ran += r.grad_ran;
    dev_pass += r.dev_pass, dev_ran += r.dev_ran, dg_pass += r.dgrad_pass, dg_ran += r.dgrad_ran;
  }
  md << "Totals: " << rows.size() << " ops, " << samples << " samples, " << unsupported << " unsupported; reference "
     << frac(ref_pass, ref_ran) << ", grads " << frac(grad_pass, grad_ran) << ", " << dev << " " << frac(dev_pass, dev_ran)
     << ", " << dev << " grads " << frac(dg_pass, dg_ran) << "; " << unexpected.size() << " unexpected failures, "
     << expected.size() << " known.\n\n";
  md << "| op | samples | unsupported | reference | grads | " << dev << " | " << dev << " grads |";
  const bool cuda_columns = !cuda_run && !cuda_cols.empty();
  if (cuda_columns) md << " cuda | cuda grads |";
  md << " first failure | skipped at generation |\n|---|---|---|---|---|---|---|";
  if (cuda_columns) md << "---|---|";
  md << "---|---|\n";
  for (const OpRow& r : rows) {
    std::string miss;
    for (const std::string& m : r.missing_ops) miss += (miss.empty() ? " (" : ", ") + m;
    if (!miss.empty()) miss += ")";
    std::string skipped;
    for (const auto& [why, n] : r.skipped) skipped += (skipped.empty() ? "" : "; ") + std::to_string(n) + " " + why;
    md << "| " << r.op << " | " << r.samples << " | " << (r.unsupported ? std::to_string(r.unsupported) + miss : "")
       << " | " << frac(r.ref_pass, r.ref_ran) << " | " << frac(r.grad_pass, r.grad_ran) << " | " << frac(r.dev_pass, r.dev_ran)
       << " | " << frac(r.dgrad_pass, r.dgrad_ran) << " |";
    if (cuda_columns) {
      const auto c = cuda_cols.find(r.op);
      md << " " << (c == cuda_cols.end() ? "" : c->second[0]) << " | " << (c == cuda_cols.end() ? "" : c->second[1]) << " |";
    }
    md << " " << cell(r.first_failure) << " | " << cell(skipped) << " |\n";
  }
  if (!table.empty()) {
    fs::create_directories(table.parent_path().empty() ? fs::path(".") : table.parent_path());
    std::ofstream(table) << md.str();
  }
  if (!tsv.empty()) {  // the device's columns, for the CPU run's table (cuda-results.tsv)
    fs::create_directories(tsv.parent_path().empty() ? fs::path(".") : tsv.parent_path());
    std::ofstream t(tsv);
    t << "# op\t" << dev << " pass/checked\t" << dev << " grads pass/checked\tfirst failure\n";
    for (const OpRow& r : rows) t << r.op << "\t" << frac(r.dev_pass, r.dev_ran) << "\t" << frac(r.dgrad_pass, r.dgrad_ran) << "\t" << cell(r.first_failure) << "\n";
  }
  if (!write_known.empty()) {
    std::ofstream k(write_known);
    k << "# OPNAME INDEX CHECK: REASON (tests/ops/test_opinfo.cpp); written by test_opinfo --write-known\n";
    for (const std::string& l : known_lines) k << cell(l) << "\n";
  }

  for (const std::string& e : expected) std::cout << "XFAIL  : " << e << "\n";
  for (const std::string& u : unexpected) std::cout << "FAIL   : " << u << "\n";
  for (const Known& k : known_list) {
    // An entry for the other device's checks (cuda, cuda-grad in a CPU run; cpu, cpu-grad in a
    // CUDA run) is not used here: not worth a note.
    const bool other_device = !k.check.empty() && k.check.rfind(dev == "cpu" ? "cuda" : "cpu", 0) == 0;
    if (!k.used && !other_device && (only.empty() || k.op.find(only) != std::string::npos))
      std::cout << "NOTE   : known failure no longer fails (remove it): " << k.op << " " << k.index << " " << k.check << " " << k.reason << "\n";
  }
  std::cout << std::fixed << std::setprecision(1) << "Totals: " << rows.size() << " ops, " << samples << " samples, "
            << unsupported << " unsupported; reference " << frac(ref_pass, ref_ran) << ", grads " << frac(grad_pass, grad_ran)
            << ", " << dev << " " << frac(dev_pass, dev_ran) << ", " << dev << " grads " << frac(dg_pass, dg_ran) << "\n"
            << unexpected.size() << " unexpected failures, " << expected.size() << " known; " << total_s << " s (" << compiles
            << " compiles " << compile_s << " s, " << grad_compiles << " training compiles " << grad_compile_s << " s)\n"
            << "table: " << table.string() << (tsv.empty() ? "" : ", " + tsv.string()) << "\n";
  return unexpected.empty() ? 0 : 1;
}
