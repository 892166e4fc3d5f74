#include "pipeline/pipeline.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <iomanip>
#include <sstream>

#include "autodiff/training_step.h"
#include "codegen/cpu_target.h"
#include "codegen/cuda_codegen.h"
#include "compile/cpu_compiler.h"
#include "cuda/driver.h"
#include "cuda/nvrtc_compiler.h"
#include "dynamic/retarget.h"
#include "exec/bandwidth.h"
#include "tune/autotune.h"
#include "exec/cuda_executor.h"
#include "exec/executor.h"
#include "interp/reference.h"
#include "loop/inline_pointwise.h"
#include "loop/reorder_loops.h"
#include "lower/lower.h"
#include "ops/op_table.h"
#include "passes/decompose.h"
#include "passes/fold_transposed_products.h"
#include "passes/normalize_to_aten.h"

namespace ls {
namespace {

using Clock = std::chrono::steady_clock;

struct Cancelled {};

// Records each stage: its IR as text and dot, its time, whether it changed anything.
class Recorder {
 public:
  Recorder(CompileResult& r, const std::function<bool()>& cancelled) : r_(r), cancelled_(cancelled) {}

  template <typename F>
  auto step(const std::string& name, F&& f) {
    if (cancelled_ && cancelled_()) throw Cancelled{};
    current = name;
    const auto t0 = Clock::now();
    auto out = f();
    last_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    return out;
  }

  void graph(const std::string& name, const std::string& title, const Graph& g, const DotMarks& marks = {},
             const std::string& note = {}) {
    if (!recording) return;
    Stage s;
    s.name = name;
    s.title = title;
    s.kind = Stage::Kind::graph;
    s.text = print_readable(g) + note;
    s.dot = graph_to_dot(g, marks);
    s.ms = last_ms;
    s.nodes = static_cast<int>(g.nodes.size());
    s.ops = op_histogram(g);
    if (!r_.stages.empty() && r_.stages.back().kind == Stage::Kind::graph) s.changed = r_.stages.back().text != s.text;
    r_.stages.push_back(std::move(s));
  }

  void add(Stage s) {
    if (!recording) return;
    s.ms = last_ms;
    r_.stages.push_back(std::move(s));
  }

  std::string current;
  double last_ms = 0;
  bool recording = true;  // false: stages are not rendered as text and dot (dynamic shapes' sample runs)

 private:
  CompileResult& r_;
  std::function<bool()> cancelled_;
};

// The GEMM templates of r.gemm_cuts (max-autotune's choices, or default mode's) written into the
// model's source: each after the kernels, as the function its extern kernel's
// GeneratedKernel::launcher names, its lines the kernel's and its node's (the source view shows
// the template for the multiply).
void add_gemm_templates(CompileResult& r) {
  std::string& code = r.source.code;
  if (!code.empty() && code.back() != '\n') code += '\n';
  int line = static_cast<int>(std::count(code.begin(), code.end(), '\n'));
  for (size_t k = 0; k < r.schedule.kernels.size(); ++k) {
    const auto c = r.gemm_cuts.find(r.schedule.kernels[k].name);
    if (c == r.gemm_cuts.end() || !c->second.is_template()) continue;
    GemmProblem problem;
    if (!gemm_problem(r.loops.nodes.at(r.schedule.kernels[k].nodes.at(0)).ext, r.loops, problem)) throw std::logic_error(r.schedule.kernels[k].name + " is no product the GEMM template serves");
    GeneratedKernel& g = r.source.kernels.at(k);
    g.launcher = "ls_gemm_" + r.schedule.kernels[k].name;
    const std::string text = "\n" + gemm_template_cpp(g.launcher, problem, c->second.as_template());
    g.first_line = line + 2;
    line += static_cast<int>(std::count(text.begin(), text.end(), '\n'));
    g.last_line = line;
    // Every line of it came from the multiply's node (selecting the node marks them).
    for (int l = g.first_line; l <= g.last_line; ++l) g.line_nodes.emplace_back(l, r.schedule.kernels[k].nodes.at(0));
    code += text;
  }
}

std::string run_table(const CompileResult& r) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(4);
  const bool cuda = !r.cuda.launch.empty();
  size_t name_w = 48, how_w = 10;
  bool epilogues = false;
  for (const KernelReport& k : r.kernels) {
    name_w = std::max(name_w, k.name.size() + 2);
    how_w = std::max(how_w, (k.how.empty() ? k.kind : k.how).size() + 2);
    epilogues = epilogues || k.how == "epilogue";
  }
  const int nw = static_cast<int>(name_w), hw = static_cast<int>(how_w);
  os << std::left << std::setw(nw) << "kernel" << std::setw(hw) << "how" << std::right << std::setw(8) << "ms" << std::setw(11)
     << "bytes" << std::setw(11) << "GB/s" << (cuda ? "  host us  regs  launch" : "") << "\n";
  for (const KernelReport& k : r.kernels) {
    os << std::left << std::setw(nw) << k.name << std::setw(hw) << (k.how.empty() ? k.kind : k.how) << std::right << std::setw(8)
       << k.ms << std::setw(11) << k.bytes << std::setw(11) << std::setprecision(2) << k.gbps << std::setprecision(4);
    if (cuda) os << std::setw(9) << std::setprecision(1) << k.host_us << std::setprecision(4) << std::setw(6) << k.registers << "  " << k.launch;
    os << '\n';
  }
  if (epilogues)
    os << "epilogue: runs inside the matrix multiply before it, on each block of the product's rows right after the "
          "library computed it (its time is in the multiply's)\n";
  if (r.train) {
    os << "\nkernels per phase:";
    for (Phase p : {Phase::forward, Phase::backward, Phase::update}) {
      int k = 0, x = 0;
      for (const Kernel& kr : r.schedule.kernels)
        if (kr.phase == p) (kr.is_extern ? x : k) += 1;
      if (k + x) os << "  " << phase_name(p) << " " << k << "k/" << x << "x";
    }
    os << '\n';
  }
  os << "\nwhole model: " << r.run_ms << " ms (median)";
  if (r.host_ms > 0)
    os << "; the host launches a run in " << r.host_ms * 1000 << " us (" << r.host_ms * 1000 / std::max<size_t>(1, r.kernels.size())
       << " us a kernel)";
  os << "\ncompiled with " << r.compiler << "\n";
  if (!r.compile_log.empty()) os << "\ncompiler messages:\n" << r.compile_log;
  os << "\n";
  os << std::scientific << std::setprecision(3);
  for (size_t i = 0; i < r.check.outputs.size(); ++i) {
    const auto& c = r.check.outputs[i];
    os << "output " << i << " vs " << c.against << ": max abs err " << c.cmp.max_abs_err << ", rel err " << c.cmp.rel_err
       << (c.cmp.ok ? "  OK" : "  FAILED: " + c.cmp.why) << '\n';
  }
  for (size_t i = 0; i < r.check.reference.size(); ++i) {
    const auto& c = r.check.reference[i];
    os << "output " << i << " vs " << c.against << ": max abs err " << c.cmp.max_abs_err << ", rel err " << c.cmp.rel_err
       << (c.cmp.ok ? "  OK" : "  FAILED: " + c.cmp.why) << '\n';
  }
  for (const auto& c : r.check.gradients)
    os << "gradient of " << c.input << " vs " << c.against << ": max abs err " << c.cmp.max_abs_err << ", rel err "
       << c.cmp.rel_err << (c.cmp.ok ? "  OK" : "  FAILED: " + c.cmp.why) << '\n';
  return os.str();
}

std::string bytes_text(int64_t b) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1);
  if (b >= (int64_t(1) << 20)) os << b / 1048576.0 << " MiB";
  else if (b >= 1024) os << b / 1024.0 << " KiB";
  else os << b << " B";
  return os.str();
}

// The partition as comment lines under the forward and backward graphs.
std::string partition_note(const TrainingRecord& t) {
  std::ostringstream os;
  const Partition& p = t.partition();
  os << "\n# Partition (" << partitioner_name(p.partitioner) << "): " << p.saved.size() << " saved tensors, "
     << bytes_text(p.saved_bytes) << " (" << bytes_text(p.saved_activation_bytes) << " of them activations)\n";
  for (const SavedTensor& s : p.saved)
    os << "#   " << std::left << std::setw(22) << s.name << std::right << std::setw(11) << bytes_text(s.bytes) << "  " << s.why << '\n';
  if (!p.recomputed.empty()) {
    os << "# Recomputed in the backward:";
    for (const auto& n : p.recomputed) os << ' ' << n;
    os << '\n';
  }
  os << "# Partitioners side by side:\n";
  for (const Partition& q : t.partitions)
    os << "#   " << std::left << std::setw(10) << partitioner_name(q.partitioner) << std::right << std::setw(4) << q.saved.size()
       << " saved  " << std::setw(11) << bytes_text(q.saved_bytes) << "  (activations " << bytes_text(q.saved_activation_bytes)
       << ")  " << q.recomputed.size() << " recomputed\n";
  return os.str();
}

DotMarks saved_marks(const Partition& p) {
  DotMarks m;
  for (const SavedTensor& s : p.saved) m.saved[s.name] = "saved " + bytes_text(s.bytes);
  for (const auto& n : p.recomputed) m.notes[n] = "recomputed";
  return m;
}


// The CPU code of one compile, owning what its executable refers to.
class CpuProgram final : public CompiledProgram {
 public:
  CpuProgram(const Graph& lowered_from, const CompileResult& r, std::unique_ptr<LoadedCode> code)
      : graph_(lowered_from), loops_(r.loops), schedule_(r.schedule), source_(r.source), code_(std::move(code)),
        exe_(loops_, schedule_, source_, *code_) {
    for (size_t k = 0; k < schedule_.kernels.size(); ++k)  // max-autotune's cuts
      if (const auto c = r.gemm_cuts.find(schedule_.kernels[k].name); c != r.gemm_cuts.end()) exe_.choose_cut(k, &c->second);
  }
  std::vector<Tensor> run(const std::vector<Tensor>& user_inputs) override {
    return exe_.run(bind_inputs(graph_, user_inputs));
  }

 private:
  Graph graph_;
  LoopProgram loops_;
  Schedule schedule_;
  GeneratedSource source_;
  std::unique_ptr<LoadedCode> code_;
  CpuExecutable exe_;
};

// The front half of a compile (graph stages to generated code) at other sizes of the user inputs:
// dynamic shapes' samples, and a dynamic program's new sizes. Throws where they do not compile.
CompileResult front_half(const Graph& aten, const std::vector<Shape>& shapes, const PipelineOptions& o) {
  LoadedModel m;
  m.format = "aten graph at other sizes";
  m.graph = retarget_graph(aten, shapes);
  PipelineOptions f = o;
  f.stop_after_source = true;
  f.record = false;
  f.run = false;
  f.keep_program = false;
  f.on_capture = nullptr;
  CompileResult r = run_pipeline(std::move(m), f);
  if (!r.error.empty()) throw std::runtime_error(r.error_stage + ": " + r.error);
  return r;
}

// Parameters keep static shapes under dynamic=True, as Dynamo's force_parameter_static_shapes: a
// placeholder the model marks as one, or named as torch.export (p_, b_, c_) or Dynamo
// (L_self_modules_fc1_parameters_weight_) name them.
bool is_parameter(const Node& n) {
  if (n.input_kind != InputKind::user) return true;
  const std::string& s = n.name;
  for (const char* p : {"p_", "b_", "c_"})
    if (s.rfind(p, 0) == 0) return true;
  for (const char* p : {"_parameters_", "_buffers_"})
    if (s.find(p) != std::string::npos) return true;
  return false;
}

std::string values_text(const SizeGeneric& g, const std::vector<int64_t>& v) {
  std::string t;
  for (size_t k = 0; k < v.size() && k < g.symbols.size(); ++k)
    if (g.symbols[k].dynamic) t += (t.empty() ? "" : ", ") + g.symbols[k].name + "=" + std::to_string(v[k]);
  return t.empty() ? "the traced sizes" : t;
}

// A kept program at sizes it has not run: the front half there, checked to make the compiled
// template's code at those values (else GuardFailed, naming the line), and the graph it lowered.
struct NewSizes {
  CompileResult r;
  Graph lowered;
};
NewSizes front_half_at(const Graph& aten, const std::vector<Shape>& shapes, const PipelineOptions& o, const SizeGeneric& plan,
                       const std::vector<int64_t>& v) {
  NewSizes n{front_half(aten, shapes, o), {}};
  std::string why;
  if (!plan.matches(n.r.source.code, v, &why))
    throw GuardFailed("guard failed: at " + values_text(plan, v) + " the code is not the compiled template's: " + why);
  const bool to_prims = o.decompose_to == 0 || o.decompose_to == level::prims;
  n.lowered = to_prims ? std::move(n.r.prims) : std::move(n.r.core_aten);
  return n;
}

std::string new_sizes_note(const SizeGeneric& plan, const std::vector<int64_t>& v, Clock::time_point since, const char* kernels) {
  std::ostringstream note;
  note << std::fixed << std::setprecision(1) << "new sizes " << values_text(plan, v) << ": the compiled " << kernels
       << " reused, no compile (front half and check " << std::chrono::duration<double, std::milli>(Clock::now() - since).count()
       << " ms)";
  return note.str();
}

// A dynamic-shapes compile kept to run again: one compiled template, run at any sizes its guards
// admit. A new size costs the front half (milliseconds) and the check that its code is the
// template's; sizes seen before cost nothing more. max-autotune's cuts of the matrix multiplies,
// tuned at the traced sizes, are kept at every size (a cut's blocks follow the product's sizes).
class DynamicCpuProgram final : public CompiledProgram {
 public:
  DynamicCpuProgram(const CompileResult& r, const PipelineOptions& o, const Graph& lowered_from, std::unique_ptr<LoadedCode> code)
      : aten_(r.aten), o_(o), plan_(r.dynamic), code_(std::move(code)), cuts_(r.gemm_cuts) {
    o_.keep_program = false;
    o_.on_capture = nullptr;
    auto at = std::make_unique<AtSizes>();
    at->lowered = lowered_from;
    at->loops = r.loops;
    at->schedule = r.schedule;
    at->source = r.source;
    const std::vector<int64_t> v = plan_.values_of(plan_.traced, nullptr);
    at->exe = std::make_unique<CpuExecutable>(at->loops, at->schedule, at->source, *code_, sizes_arg(v));
    keep_cuts(*at);
    at_.emplace(v, std::move(at));
  }

  std::vector<Tensor> run(const std::vector<Tensor>& user_inputs) override {
    std::vector<Shape> shapes;
    for (size_t i = 0; i < plan_.traced.size() && i < user_inputs.size(); ++i) shapes.push_back(user_inputs[i].shape());
    std::string why;
    const std::vector<int64_t> v = plan_.values_of(shapes, &why);
    if (!why.empty()) throw GuardFailed("guard failed: " + why);  // (no symbols: v is empty either way)
    auto it = at_.find(v);
    if (it == at_.end()) {
      const auto t0 = Clock::now();
      NewSizes n = front_half_at(aten_, shapes, o_, plan_, v);
      auto at = std::make_unique<AtSizes>();
      at->lowered = std::move(n.lowered);
      at->loops = std::move(n.r.loops);
      at->schedule = std::move(n.r.schedule);
      at->source = std::move(n.r.source);
      at->exe = std::make_unique<CpuExecutable>(at->loops, at->schedule, at->source, *code_, sizes_arg(v));
      const int kept = keep_cuts(*at);
      it = at_.emplace(v, std::move(at)).first;
      last_note = new_sizes_note(plan_, v, t0, "kernels");
      if (kept) last_note += "; max-autotune's cuts of " + std::to_string(kept) + " matrix multipl" + (kept == 1 ? "y" : "ies") + " kept";
    } else {
      last_note = "sizes " + values_text(plan_, v) + " seen before: the compiled kernels reused";
    }
    return it->second->exe->run(bind_inputs(it->second->lowered, user_inputs));
  }

  static std::vector<int64_t> sizes_arg(std::vector<int64_t> v) {
    if (v.empty()) v.push_back(0);  // the kernels take the array even where no size is a symbol
    return v;
  }

 private:
  struct AtSizes {
    Graph lowered;
    LoopProgram loops;
    Schedule schedule;
    GeneratedSource source;
    std::unique_ptr<CpuExecutable> exe;
  };
  // The tuned cuts on the multiplies of one size's schedule (the kernels keep their names across
  // sizes); returns how many it set.
  int keep_cuts(AtSizes& at) const {
    int kept = 0;
    for (size_t k = 0; k < at.schedule.kernels.size(); ++k)
      if (const auto c = cuts_.find(at.schedule.kernels[k].name); c != cuts_.end() && !c->second.is_template()) {
        at.exe->choose_cut(k, &c->second);
        ++kept;
      }
    return kept;
  }
  Graph aten_;
  PipelineOptions o_;
  SizeGeneric plan_;
  std::unique_ptr<LoadedCode> code_;
  std::map<std::string, GemmCut> cuts_;
  std::map<std::vector<int64_t>, std::unique_ptr<AtSizes>> at_;
};

// The CUDA code of one compile: its modules (the model's kernels, the helpers', the attention
// kernels') and one executable per size it has run at (a dynamic-shapes template: every size
// its guards admit; else the traced sizes only).
class CudaProgram final : public CompiledProgram {
 public:
  CudaProgram(const CompileResult& r, const PipelineOptions& o, const Graph& lowered_from, CudaDriver& d, const std::string& cubin,
              const std::string& helpers_cubin, const std::string& attention_cubin)
      : aten_(r.aten), o_(o), plan_(r.dynamic), dynamic_(o.dynamic), attention_source_(r.cuda.attention_source), d_(d),
        module_(std::make_unique<CudaModule>(d, cubin)), helpers_(std::make_unique<CudaModule>(d, helpers_cubin)) {
    o_.keep_program = false;
    o_.on_capture = nullptr;
    o_.mode = "default";  // the samples reuse the traced compile's launch configurations (o.cuda_configs)
    if (!attention_cubin.empty()) attention_ = std::make_unique<CudaModule>(d, attention_cubin);
    auto at = std::make_unique<AtSizes>();
    at->lowered = lowered_from;
    at->loops = r.loops;
    at->schedule = r.schedule;
    at->cuda = r.cuda;
    const std::vector<int64_t> v = dynamic_ ? plan_.values_of(plan_.traced, nullptr) : std::vector<int64_t>{};
    at->exe = std::make_unique<CudaExecutable>(at->loops, at->schedule, at->cuda, d_, *module_, *helpers_, attention_.get(), v);
    at_.emplace(v, std::move(at));
  }

  std::vector<Tensor> run(const std::vector<Tensor>& user_inputs) override {
    std::vector<int64_t> v;
    std::vector<Shape> shapes;
    for (size_t i = 0; i < user_inputs.size(); ++i) shapes.push_back(user_inputs[i].shape());
    if (dynamic_) {
      shapes.resize(std::min(shapes.size(), plan_.traced.size()));
      std::string why;
      v = plan_.values_of(shapes, &why);
      if (!why.empty()) throw GuardFailed("guard failed: " + why);
    }
    auto it = at_.find(v);
    if (it == at_.end() && !dynamic_) throw GuardFailed("the CUDA kernels were compiled for other input sizes (compile with dynamic shapes)");
    if (it == at_.end()) {
      const auto t0 = Clock::now();
      NewSizes n = front_half_at(aten_, shapes, o_, plan_, v);
      if (n.r.cuda.attention_source != attention_source_)
        throw GuardFailed("guard failed: at " + values_text(plan_, v) + " the attention calls need other attention kernels");
      auto at = std::make_unique<AtSizes>();
      at->lowered = std::move(n.lowered);
      at->loops = std::move(n.r.loops);
      at->schedule = std::move(n.r.schedule);
      at->cuda = std::move(n.r.cuda);
      at->exe = std::make_unique<CudaExecutable>(at->loops, at->schedule, at->cuda, d_, *module_, *helpers_, attention_.get(), v);
      it = at_.emplace(v, std::move(at)).first;
      last_note = new_sizes_note(plan_, v, t0, "CUDA kernels");
    } else {
      last_note = dynamic_ ? "sizes " + values_text(plan_, v) + " seen before: the compiled CUDA kernels reused" : "";
    }
    return it->second->exe->run(bind_inputs(it->second->lowered, user_inputs));
  }

 private:
  struct AtSizes {
    Graph lowered;
    LoopProgram loops;
    Schedule schedule;
    GeneratedCuda cuda;
    std::unique_ptr<CudaExecutable> exe;
  };
  Graph aten_;
  PipelineOptions o_;
  SizeGeneric plan_;
  bool dynamic_;
  std::string attention_source_;
  CudaDriver& d_;
  std::unique_ptr<CudaModule> module_, helpers_, attention_;
  std::map<std::vector<int64_t>, std::unique_ptr<AtSizes>> at_;
};

}  // namespace

std::vector<Tensor> tangent_values(const JointGraph& j) {
  std::vector<Tensor> v;
  for (size_t k = 0; k < j.tangents.size(); ++k) {
    const TensorMeta& m = j.graph.nodes.at(j.graph.find(j.tangents[k])).meta();
    Tensor t(m.dtype, m.shape);
    if (j.tangent_of[k] == 0)
      for (int64_t i = 0; i < t.numel(); ++i) t.set(i, 1.0);
    v.push_back(t);
  }
  return v;
}

const std::vector<std::string>& stage_names(bool train) {
  static const std::vector<std::string> n = {"capture", "aten", "core_aten", "prims", "loop_ir", "fused", "source", "asm", "run"};
  static const std::vector<std::string> t = {"capture", "aten",  "joint",  "forward", "backward", "core_aten",
                                             "prims",   "loop_ir", "fused", "source",  "asm",      "run"};
  return train ? t : n;
}

std::string phase_table(const std::vector<PhaseTime>& phases) {
  if (phases.empty()) return {};
  std::ostringstream os;
  os << "compile time by phase (summed over threads; phases of one compile overlap):\n" << std::fixed << std::setprecision(1);
  for (const PhaseTime& t : phases)
    os << "  " << std::setw(9) << t.ms << " ms  " << t.name << (t.count > 1 ? " (x" + std::to_string(t.count) + ")" : "") << "\n";
  return os.str();
}

const Stage* CompileResult::stage(const std::string& name) const {
  for (const Stage& s : stages)
    if (s.name == name) return &s;
  return nullptr;
}

namespace {
CompileResult run_stages(LoadedModel model, const PipelineOptions& o, const std::function<bool()>& cancelled, std::future<std::string>& sass);
}

CompileResult run_pipeline(LoadedModel model, const PipelineOptions& o, const std::function<bool()>& cancelled) {
  std::future<std::string> sass;  // CUDA: the SASS listing, made beside the run
  CompileResult r = run_stages(std::move(model), o, cancelled, sass);
  if (sass.valid()) {
    const std::string text = sass.get();
    for (Stage& s : r.stages)
      if (s.name == "asm" && !text.empty()) s.text += "\n\n// ---- SASS (cuobjdump -sass) ----\n" + text;
  }
  return r;
}

namespace {
CompileResult run_stages(LoadedModel model, const PipelineOptions& o, const std::function<bool()>& cancelled, std::future<std::string>& sass) {
  CompileResult r;
  r.model = std::move(model);
  r.device = o.device;
  r.mode = o.mode;
  Recorder rec(r, cancelled);
  rec.recording = o.record;
  const auto t_compile = Clock::now();
  const size_t phases_from = phase_mark();
  try {
    if (o.device != "cpu" && o.device != "cuda") throw std::runtime_error("unknown device '" + o.device + "' (cpu or cuda)");
    if (o.mode != "default" && o.mode != "reduce-overhead" && o.mode != "max-autotune")
      throw std::runtime_error("unknown mode '" + o.mode + "' (default, reduce-overhead or max-autotune)");
    if (o.device == "cuda" && !have_nvrtc())
      throw std::runtime_error("this build has no CUDA support: NVRTC was not found when it was configured");
    // CUDA: the driver starts (cuInit, then a context: about 0.15 s, once a process) while the
    // front half runs; the code generator waits for cuInit only (it sizes grids by the device),
    // NVRTC runs while the context is made.
    std::future<void> driver_start;
    if (o.device == "cuda" && !o.stop_after_source)
      driver_start = std::async(std::launch::async, [] { CudaDriver::get(); });
    // The helper kernels' module (the same for every model: from the disk cache after the first
    // compile on a machine) compiles for the device cuInit finds while the front half runs.
    std::future<CudaCompileResult> helpers;
    if (o.device == "cuda" && !o.stop_after_source)
      helpers = std::async(std::launch::async, [] {
        const CudaDeviceInfo* found = CudaDriver::probe();
        if (!found) return CudaCompileResult{};
        CudaCompileOptions ho;
        ho.sm = found->sm();
        ho.ptx = ho.sass = false;
        ho.module = "helpers";
        return compile_cuda(cuda_helpers_source(), ho);
      });
    rec.step("capture", [&] { return 0; });
    rec.graph("capture", "Captured graph (as imported)", r.model.graph);
    if (o.on_capture) o.on_capture(r);

    r.aten = rec.step("aten", [&] { return normalize_to_aten(r.model.graph); });
    rec.graph("aten", "ATen graph", r.aten);

    const Graph* to_compile = &r.aten;
    if (o.train) {
      r.train = true;
      TrainingRecord& t = r.training;
      t.joint = rec.step("joint", [&] { return build_joint(r.aten); });
      const double joint_ms = rec.last_ms;
      t.partitions = rec.step("forward", [&] {
        return std::vector<Partition>{partition_joint(t.joint, Partitioner::default_partition),
                                      partition_joint(t.joint, Partitioner::min_cut)};
      });
      t.chosen = o.partitioner == Partitioner::min_cut ? 1 : 0;
      const double partition_ms = rec.last_ms;
      std::string expanded;
      if (!t.joint.expanded.empty()) {
        expanded = "\n# Differentiated through their decompositions (no derivative rule of their own):\n";
        for (const auto& e : t.joint.expanded) expanded += "#   " + e + "\n";
      }
      rec.last_ms = joint_ms;
      rec.graph("joint", "Joint forward + backward graph", t.joint.graph, saved_marks(t.partition()), expanded);
      rec.last_ms = partition_ms;
      const std::string note = partition_note(t);
      rec.graph("forward", "Forward graph (partitioned)", t.partition().forward, saved_marks(t.partition()), note);
      rec.last_ms = 0;
      rec.graph("backward", "Backward graph (partitioned)", t.partition().backward, saved_marks(t.partition()), note);
      t.step = training_step(t.joint, t.partition(), o.sgd_lr);
      t.num_gradients = static_cast<int>(t.joint.grad_of.size());
      t.num_updates = static_cast<int>(t.step.outputs.size()) - t.joint.num_forward_outputs - t.num_gradients;
      to_compile = &t.step;
    }

    r.core_aten = rec.step("core_aten", [&] { return fold_transposed_products(decompose(*to_compile, level::core_aten)); });
    rec.graph("core_aten", "Core ATen graph", r.core_aten);

    const bool to_prims = o.decompose_to == 0 || o.decompose_to == level::prims;
    if (to_prims) {
      r.prims = rec.step("prims", [&] { return decompose(r.core_aten, level::prims); });
      rec.graph("prims", "prims graph", r.prims);
    }
    const Graph& lowered_from = to_prims ? r.prims : r.core_aten;

    r.loops = rec.step("loop_ir", [&] { return lower_to_loops(lowered_from); });
    r.loops.device = o.device;
    if (o.record) {
      Stage s;
      s.name = "loop_ir";
      s.title = "Loop-level IR (before fusion)";
      s.kind = Stage::Kind::loops;
      s.text = print_loop_program(r.loops);
      s.dot = loop_program_to_dot(r.loops);
      s.nodes = static_cast<int>(r.loops.nodes.size());
      rec.add(std::move(s));
    }

    std::vector<std::pair<std::string, std::vector<std::string>>> inlined;
    std::vector<std::string> reordered, restored;
    r.schedule = rec.step("fused", [&] {
      if (o.fusion) inlined = inline_pointwise(r.loops);
      if (o.fusion) reordered = reorder_for_column_reductions(r.loops);
      ScheduleOptions so;
      so.fusion = o.fusion;
      so.prefix = o.device == "cuda" ? "cuda" : "cpp";
      so.coalesced = o.device == "cuda";
      so.max_loop_nests = o.device == "cuda" ? 1 : 16;
      // Epilogues run inside the CPU's products; on CUDA inside a GEMM template, which only
      // max-autotune writes (where it beats the library).
      so.gemm_epilogues = !o.dynamic && (o.device != "cuda" || o.mode == "max-autotune" || !o.cuda_gemm_templates.empty());
      Schedule sched = schedule(r.loops, so);
      std::vector<std::vector<int>> pointwise;
      for (const Kernel& k : sched.kernels)
        if (!k.is_extern && k.rnumel == 1 && k.nests.empty()) pointwise.push_back(k.nodes);
      restored = restore_unfused_orders(r.loops, pointwise);
      return sched;
    });
    if (o.record) {
      Stage s;
      s.name = "fused";
      s.title = "Fused kernels (after scheduling)";
      s.kind = Stage::Kind::kernels;
      s.text = print_schedule(r.loops, r.schedule);
      if (!inlined.empty()) {
        s.text += "\n# Inlined (recomputed by their readers instead of stored)\n";
        for (const auto& [node, into] : inlined) {
          s.text += node + " -> ";
          for (size_t i = 0; i < into.size(); ++i) s.text += (i ? ", " : "") + into[i];
          s.text += "\n";
        }
      }
      if (!reordered.empty()) {
        s.text += "\n# Reordered (iterate columns outer, so the reduction over rows that reads them fuses)\n";
        for (const auto& n : reordered)
          if (!std::count(restored.begin(), restored.end(), n)) s.text += n + "\n";
      }
      if (!restored.empty()) {
        s.text += "\n# Back in their own order (reordered for a reduction they did not fuse with)\n";
        for (const auto& n : restored) s.text += n + "\n";
      }
      s.dot = schedule_to_dot(r.loops, r.schedule);
      s.nodes = static_cast<int>(r.schedule.kernels.size());
      rec.add(std::move(s));
    }

    const bool cuda = o.device == "cuda";
    // The code is generated and compiled for the device found by cuInit while another thread
    // makes its context (driver_start); the run needs both.
    const CudaDeviceInfo* device = nullptr;
    CudaDriver* driver = nullptr;
    std::string no_gpu;
    CudaCodegenOptions cuda_opts;
    if (cuda) {
      device = CudaDriver::probe(&no_gpu);
      if (device) cuda_opts.sm_count = device->sm_count, cuda_opts.sm = device->sm();
    }
    if (cuda && !o.cuda_configs.empty()) cuda_opts.configs = o.cuda_configs;
    if (cuda && !o.dynamic) cuda_opts.gemm_templates = o.cuda_gemm_templates;  // templates are written for their sizes
    cuda_opts.size_generic = o.dynamic;
    if (cuda && o.dynamic)  // the weights' shapes do not move with the sizes
      for (const auto& [name, value] : (to_prims ? r.prims : r.core_aten).weights) cuda_opts.fixed_buffers.insert(name);
    if (cuda && o.mode == "max-autotune") {
      // Each kernel's launch configurations timed on the real buffers; the fastest kept.
      if (device) driver = CudaDriver::get(&no_gpu);
      if (!driver) {
        r.mode_note = "max-autotune: not tuned: timing candidates needs a GPU (" + no_gpu + ")";
      } else {
        std::vector<Tensor> tune_inputs = r.model.inputs;
        if (r.train)
          for (const Tensor& t : tangent_values(r.training.joint)) tune_inputs.push_back(t);
        const Graph& lowered = to_prims ? r.prims : r.core_aten;
        CudaCodegenOptions tuned;
        const AutotuneResult a = rec.step("autotune", [&] {
          return autotune_cuda(r.loops, r.schedule, cuda_opts, *driver, bind_inputs(lowered, tune_inputs), tuned);
        });
        cuda_opts = tuned;
        Stage s;
        s.name = "autotune";
        s.title = "max-autotune: candidates timed per kernel";
        s.kind = Stage::Kind::run;
        s.text = a.table();
        s.nodes = static_cast<int>(a.kernels.size());
        rec.add(std::move(s));
        int better = 0;
        for (const KernelTuning& k : a.kernels) better += k.chosen != 0;
        std::ostringstream note;
        note << std::fixed << std::setprecision(0) << "max-autotune: " << a.kernels.size() << " kernel(s) tuned in " << a.ms << " ms ("
             << a.rounds << " NVRTC modules" << (a.from_cache ? ", from the disk cache" : "") << "), " << better
             << " run faster than the heuristics' choice";
        r.mode_note = note.str();
      }
    }
    CppCodegenOptions cpp_opts;
    cpp_opts.size_generic = o.dynamic && !cuda;
    r.source = rec.step("source", [&] {
      if (!cuda) return generate_cpp(r.loops, r.schedule, cpp_opts);
      r.cuda = generate_cuda(r.loops, r.schedule, cuda_opts);
      return r.cuda.source;
    });
    if (!cuda && !o.dynamic && o.mode != "max-autotune" && o.gemm_templates) {
      // Default mode writes the large products whose template is expected to beat the library
      // (gemm_template_default) as GEMM templates, compiled with the kernels; max-autotune times
      // every template and cut instead. Size-specialized: not in dynamic compiles.
      for (const Kernel& k : r.schedule.kernels) {
        GemmProblem problem;
        GemmTemplate t;
        if (k.is_extern && gemm_problem(r.loops.nodes.at(k.nodes.at(0)).ext, r.loops, problem) &&
            gemm_template_default(problem, cpu_target().pool_threads, t))
          r.gemm_cuts[k.name] = GemmCut::of(t);
      }
      if (!r.gemm_cuts.empty()) add_gemm_templates(r);
    }
    if (o.stop_after_source) return r;
    const double source_ms = rec.last_ms;
    std::vector<int64_t> dynamic_sizes;
    PipelineOptions sample_opts = o;  // the front half at other sizes: tuned configurations reused, not tuned again
    if (cuda) {
      sample_opts.cuda_configs = cuda_opts.configs;
      if (sample_opts.mode == "max-autotune") sample_opts.mode = "default";
    }
    if (o.dynamic) {
      std::vector<std::string> names;
      std::vector<Shape> shapes;
      std::vector<bool> fixed;
      for (int id : r.aten.user_inputs()) {
        const Node& n = r.aten.nodes[id];
        names.push_back(n.name);
        shapes.push_back(n.meta().shape);
        fixed.push_back(is_parameter(n));
      }
      r.dynamic = rec.step("dynamic", [&] {
        return make_size_generic(
            names, shapes, fixed, r.source, [&](const std::vector<Shape>& at) { return front_half(r.aten, at, sample_opts).source; },
            cuda ? SizeArgs::cuda_values : SizeArgs::cpu_array);
      });
      r.source.code = r.dynamic.code;  // the template is what compiles
      r.cuda.source.code = r.dynamic.code;
      dynamic_sizes = r.dynamic.values_of(r.dynamic.traced, nullptr);
      if (!cuda) dynamic_sizes = DynamicCpuProgram::sizes_arg(dynamic_sizes);
      int n = 0;
      for (const SizeSymbol& sym : r.dynamic.symbols) n += sym.dynamic;
      r.dynamic_note = "dynamic shapes: " + std::to_string(n) + " of " + std::to_string(r.dynamic.symbols.size()) +
                       " size symbols dynamic, " + std::to_string(r.dynamic.holes.size()) + " numbers of the code follow them (" +
                       std::to_string(r.dynamic.samples.size()) + " sample runs of the front half)";
    }
    const double dynamic_ms = rec.last_ms;
    rec.last_ms = source_ms;
    {
      Stage s;
      s.name = "source";
      s.title = cuda ? "Generated CUDA C++ (NVRTC)" : "Generated C++ (OpenMP)";
      s.kind = Stage::Kind::source;
      s.text = r.source.code;
      s.nodes = static_cast<int>(r.source.kernels.size());
      rec.add(std::move(s));
    }
    if (o.dynamic) {
      rec.last_ms = dynamic_ms;
      Stage s;
      s.name = "dynamic";
      s.title = "Dynamic shapes: symbols and guards";
      s.kind = Stage::Kind::source;
      s.text = r.dynamic.report();
      s.nodes = static_cast<int>(r.dynamic.symbols.size());
      rec.add(std::move(s));
    }

    rec.current = "asm";
    if (cancelled && cancelled()) throw Cancelled{};
    std::unique_ptr<LoadedCode> cpu_code;
    std::string cubin, helpers_cubin, attention_cubin;
    if (cuda) {
      CudaCompileOptions co;
      co.sm = device ? device->sm() : 90;
      co.cubin = device != nullptr;  // the machine code is only needed to run (and for SASS)
      co.sass = false;                // listed apart (cuda_sass), beside the run
      // The attention kernels' module (cached: it depends only on the head sizes), PTX alone
      // without a GPU so its compile is checked everywhere.
      std::future<CudaCompileResult> attention;
      if (!r.cuda.attention_source.empty()) {
        CudaCompileOptions ao = co;
        ao.ptx = !device;
        ao.module = "attention";
        ao.sass = false;
        attention = std::async(std::launch::async, [ao, src = r.cuda.attention_source] { return compile_cuda(src, ao); });
      }
      for (const GeneratedKernel& k : r.source.kernels)
        if (!k.launcher.empty()) co.kernel_lines.push_back(k.first_line);
      CudaCompileResult compiled = compile_cuda(r.source.code, co);
      if (helpers.valid()) helpers_cubin = helpers.get().cubin;
      if (attention.valid()) attention_cubin = attention.get().cubin;
      r.compiler = compiled.compiler + (device ? " for " + device->name : " (no GPU here: PTX for the H100's sm_90)");
      r.compile_log = compiled.log;
      cubin = compiled.cubin;
      if (!cubin.empty()) r.objects.push_back({"kernels.cubin", cubin});
      if (!helpers_cubin.empty()) r.objects.push_back({"helpers.cubin", helpers_cubin});
      if (!attention_cubin.empty()) r.objects.push_back({"attention.cubin", attention_cubin});
      Stage s;
      s.name = "asm";
      s.title = "PTX and SASS";
      s.kind = Stage::Kind::assembly;
      s.text = "// PTX (" + compiled.compiler + ")\n" + compiled.ptx;
      if (o.sass && !cubin.empty()) sass = std::async(std::launch::async, [cubin] { return cuda_sass(cubin); });
      s.nodes = static_cast<int>(r.source.kernels.size());
      rec.last_ms = compiled.ms;
      rec.add(std::move(s));
    } else {
      CpuCompileOptions co;
      co.external = o.external_compiler;
      for (const GeneratedKernel& k : r.source.kernels)
        if (!k.launcher.empty()) co.kernel_lines.push_back(k.first_line);
      CpuCompileResult compiled = compile_cpp(r.source.code, co);
      r.compiler = compiled.compiler;
      r.compile_log = compiled.log;
      cpu_code = std::move(compiled.code);
      if (!compiled.object.empty()) r.objects.push_back({compiled.object_name, std::move(compiled.object)});
      Stage s;
      s.name = "asm";
      s.title = "Machine code (x86 assembly, LLVM IR)";
      s.kind = Stage::Kind::assembly;
      s.text = compiled.assembly.empty()
                   ? "; compiled by " + compiled.compiler + ": the assembly is shown for the in-process Clang path only\n"
                   : compiled.assembly + "\n\n; ---- optimized LLVM IR ----\n" + compiled.llvm_ir;
      s.nodes = static_cast<int>(r.source.kernels.size());
      rec.last_ms = compiled.ms;
      rec.add(std::move(s));
    }
    if (cuda && device && !driver) driver = CudaDriver::get(&no_gpu);  // compiled: wait for the context
    r.compile_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_compile).count();
    r.compile_phases = phase_times_since(phases_from);
    if (!o.run) return r;
    rec.current = "run";
    if (cuda && !driver) {
      r.not_run = no_gpu.find("fault") != std::string::npos ? "not run: " + no_gpu : "running CUDA kernels needs a GPU: " + no_gpu;
      return r;
    }

    const auto t_run = Clock::now();
    std::vector<Tensor> user_inputs = r.model.inputs;
    if (r.train)
      for (const Tensor& t : tangent_values(r.training.joint)) user_inputs.push_back(t);
    const std::vector<Tensor> all_inputs = bind_inputs(lowered_from, user_inputs);
    TimingOptions to;
    to.budget_ms = o.timing_budget_ms;
    Timings t;
    std::vector<std::string> how(r.schedule.kernels.size());
    std::vector<int> registers(r.schedule.kernels.size(), 0);
    if (cuda) {
      CudaModule module(*driver, cubin), helper_module(*driver, helpers_cubin);
      std::unique_ptr<CudaModule> attention_module;
      if (!attention_cubin.empty()) attention_module = std::make_unique<CudaModule>(*driver, attention_cubin);
      CudaExecutable exe(r.loops, r.schedule, r.cuda, *driver, module, helper_module, attention_module.get(), dynamic_sizes);
      r.outputs = exe.run(all_inputs);
      t = exe.benchmark(all_inputs, to);
      how = exe.how;
      registers = exe.registers;
      if (o.keep_program) {
        PipelineOptions po = sample_opts;
        r.program = std::make_shared<CudaProgram>(r, po, lowered_from, *driver, cubin, helpers_cubin, attention_cubin);
      }
      if (o.mode == "reduce-overhead") {
        // The whole model as one CUDA graph: the same kernels, one launch, checked to give the
        // same numbers as the kernels launched one by one.
        if (const std::string why = exe.capture_graph(); !why.empty()) {
          r.mode_note = "reduce-overhead: no CUDA graph: " + why;
        } else {
          const std::vector<Tensor> replayed = exe.replay_graph();
          for (size_t i = 0; i < replayed.size(); ++i)
            if (replayed[i].defined() && !compare(replayed[i], r.outputs.at(i), Tolerance{0, 0}).ok)
              throw std::runtime_error("the CUDA graph's output " + std::to_string(i) + " differs from the kernels launched one by one");
          const Timings g = exe.benchmark_graph(to);
          std::ostringstream note;
          note << std::fixed << std::setprecision(4) << "reduce-overhead: CUDA graph of " << exe.graph_nodes()
               << " nodes, one launch: " << g.total_ms << " ms a run (launched one by one: " << t.total_ms << " ms)";
          r.mode_note = note.str();
          r.launched_ms = t.total_ms;
          t.total_ms = g.total_ms;
        }
      }
    } else {
      auto exe = std::make_unique<CpuExecutable>(r.loops, r.schedule, r.source, *cpu_code, dynamic_sizes);
      r.outputs = exe->run(all_inputs);
      if (o.mode == "max-autotune") {
        // Each matrix multiply's cuts and GEMM templates timed on its operands; the fastest kept
        // (r.gemm_cuts, for the program the app runs again and for exported packages). Templates
        // are size-specialized: a dynamic compile tunes the cuts only.
        CpuCompileOptions tco;
        tco.external = o.external_compiler;
        const CompileModule compile = [&](const std::string& src) { return compile_cpp(src, tco).code; };
        AutotuneResult a;
        if (o.gemm_choices.empty()) {
          a = autotune_cpu(r.loops, r.schedule, r.source.code, *exe, all_inputs, r.gemm_cuts, o.dynamic ? CompileModule{} : compile);
        } else {  // given, not timed
          a.cpu = true;
          for (const auto& choice : o.gemm_choices) {
            const std::string& name = choice.first;
            const GemmCut& c = choice.second;
            const auto k = std::find_if(r.schedule.kernels.begin(), r.schedule.kernels.end(), [&](const Kernel& kr) { return kr.name == name; });
            if (k == r.schedule.kernels.end()) throw std::invalid_argument("max-autotune's choices name no kernel " + name);
            const size_t i = static_cast<size_t>(k - r.schedule.kernels.begin());
            GemmProblem problem;
            if (c.is_template() && (o.dynamic || !exe->gemm_problem(i, problem)))
              throw std::invalid_argument(name + " is no matrix multiply the GEMM template serves");
            if (!c.is_template()) exe->choose_cut(i, &c);
            KernelTuning t;
            t.kernel = name;
            t.library = true;
            t.form = "matrix multiply";
            TunedCandidate given;
            given.label = c.text();
            t.candidates = {given};
            t.why = "given, not timed";
            a.kernels.push_back(t);
          }
          r.gemm_cuts = o.gemm_choices;
        }
        std::string recompiled;
        if (std::any_of(r.gemm_cuts.begin(), r.gemm_cuts.end(), [](const auto& c) { return c.second.is_template(); })) {
          // The chosen templates written into the model's source, compiled with its kernels.
          const auto t_templates = Clock::now();
          add_gemm_templates(r);
          tco.kernel_lines.clear();
          for (const GeneratedKernel& k : r.source.kernels)
            if (!k.launcher.empty()) tco.kernel_lines.push_back(k.first_line);
          CpuCompileResult compiled = compile_cpp(r.source.code, tco);
          cpu_code = std::move(compiled.code);
          for (auto& [name, bytes] : r.objects)
            if (name == compiled.object_name && !compiled.object.empty()) bytes = std::move(compiled.object);
          for (Stage& st : r.stages) {
            if (st.name == "source") st.text = r.source.code;
            if (st.name == "asm" && !compiled.assembly.empty())
              st.text = compiled.assembly + "\n\n; ---- optimized LLVM IR ----\n" + compiled.llvm_ir;
          }
          exe = std::make_unique<CpuExecutable>(r.loops, r.schedule, r.source, *cpu_code, dynamic_sizes);
          exe->run(all_inputs);  // binds the inputs
          for (size_t k = 0; k < r.schedule.kernels.size(); ++k)
            if (const auto c = r.gemm_cuts.find(r.schedule.kernels[k].name); c != r.gemm_cuts.end()) exe->choose_cut(k, &c->second);
          std::ostringstream note;
          note << std::fixed << std::setprecision(0) << "; the chosen GEMM templates compiled into the model's source in "
               << std::chrono::duration<double, std::milli>(Clock::now() - t_templates).count() << " ms";
          recompiled = note.str();
        }
        Stage s;
        s.name = "autotune";
        s.title = "max-autotune: matrix multiplies' cuts and GEMM templates timed";
        s.kind = Stage::Kind::run;
        s.text = a.kernels.empty() ? "AUTOTUNE (CPU): no matrix multiply to tune (on the CPU, max-autotune times how each "
                                     "multiply is cut into blocks for the pool's threads, and the multiply written as a "
                                     "generated GEMM template; generated kernels compile as in default mode)\n"
                                   : a.table();
        s.nodes = static_cast<int>(a.kernels.size());
        rec.last_ms = a.ms;
        rec.add(std::move(s));
        int better = 0;
        for (const KernelTuning& k : a.kernels) better += k.chosen != 0;
        std::ostringstream note;
        note << std::fixed << std::setprecision(0) << "max-autotune: " << a.kernels.size() << " matrix multipl"
             << (a.kernels.size() == 1 ? "y" : "ies") << " tuned in " << a.ms << " ms" << (a.from_cache ? " (from the disk cache)" : "")
             << ", " << better << " run faster than the heuristic's cut" << recompiled
             << "; generated kernels compile as in default mode";
        r.mode_note = note.str();
        if (!r.gemm_cuts.empty()) r.outputs = exe->run(all_inputs);  // the outputs of the tuned multiplies
      }
      t = exe->benchmark(all_inputs, to);
      for (size_t k = 0; k < how.size(); ++k) {
        const std::string library = exe->runs_template(k) ? "template" : "library";
        how[k] = r.schedule.kernels[k].is_extern ? library : "generated";
        if (exe->ran_inside()[k]) how[k] = "epilogue";  // its time is in the multiply's
        else if (k + 1 < how.size() && exe->ran_inside()[k + 1]) how[k] = library + "+epilogue";
      }
      if (o.keep_program && o.dynamic) r.program = std::make_shared<DynamicCpuProgram>(r, o, lowered_from, std::move(cpu_code));
      else if (o.keep_program) r.program = std::make_shared<CpuProgram>(lowered_from, r, std::move(cpu_code));
      if (o.mode == "reduce-overhead")
        r.mode_note = "reduce-overhead: on the CPU the kernels are already called back to back from one loop, with "
                      "nothing between them to remove; it changes the CUDA run (one CUDA graph)";
    }
    if (!o.reference) {
      // No reference run (a model too large for the interpreter): only the expected files check.
    } else if (r.train) {
      // The reference runs the joint graph: it checks the partition, the decompositions and the
      // kernels; the expected gradients (grad_in*.npy) check the derivative rules.
      const TrainingRecord& t = r.training;
      r.reference_outputs = run_reference(t.joint.graph, user_inputs);
      const Graph& j = t.joint.graph;
      for (size_t k = 0; o.sgd_lr > 0 && k < t.joint.grad_of.size(); ++k) {
        if (t.joint.grad_of_user_input[k] || j.outputs[t.joint.num_forward_outputs + k] < 0) continue;
        const Tensor& p = j.weights.at(t.joint.grad_of[k]);
        const Tensor& gr = r.reference_outputs.at(t.joint.num_forward_outputs + k);
        Tensor u(p.dtype(), p.shape());
        for (int64_t i = 0; i < p.numel(); ++i) u.set(i, p.get(i) - o.sgd_lr * gr.get(i));
        r.reference_outputs.push_back(u);
      }
    } else {
      r.reference_outputs = run_reference(r.aten, r.model.inputs);
    }
    r.run_ms = t.total_ms;
    r.host_ms = t.host_ms;
    r.bandwidth_gbps = memory_bandwidth_gbps(r.device);
    for (size_t k = 0; k < r.schedule.kernels.size(); ++k) {
      const Kernel& kr = r.schedule.kernels[k];
      KernelReport rep;
      rep.name = kr.name;
      rep.kind = kr.is_extern ? "extern" : "generated";
      rep.how = how[k];
      rep.phase = phase_name(kr.phase);
      rep.nodes = kr.origins;
      for (int n : kr.nodes) rep.loop_nodes.push_back(r.loops.nodes[n].name);
      rep.numel = kr.numel;
      rep.rnumel = kr.rnumel;
      for (const auto& b : kr.reads) rep.bytes += r.loops.buffer(b).bytes();
      for (const auto& b : kr.writes) rep.bytes += r.loops.buffer(b).bytes();
      rep.ms = rep.how == "epilogue" ? 0 : t.kernel_ms.at(k);  // an epilogue's time is in its multiply's
      rep.gbps = rep.ms > 0 ? rep.bytes / (rep.ms * 1e6) : 0;
      if (k < t.host_kernel_ms.size()) rep.host_us = t.host_kernel_ms[k] * 1000;
      rep.first_line = r.source.kernels[k].first_line;
      rep.last_line = r.source.kernels[k].last_line;
      if (cuda) {
        const CudaLaunch& l = r.cuda.launch.at(k);
        rep.registers = registers[k];
        if (!r.cuda.source.kernels[k].launcher.empty())
          rep.launch = l.form + ": grid " + std::to_string(l.grid) + " x " + std::to_string(l.block) + " threads" +
                       (l.form == "column" ? ", 32 columns x " + std::to_string(l.threads_per_row) + " lanes" : "") +
                       (l.split > 1 ? ", " + std::to_string(l.split) + " slices a " + (l.form == "column" ? "column" : "row") : "") +
                       (l.cluster ? " (a thread-block cluster)" : "") +
                       (l.vector ? ", 16-byte accesses" : "");
        if (const auto t = r.cuda.gemm_templates.find(kr.name); t != r.cuda.gemm_templates.end())
          rep.launch = "max-autotune: GEMM template " + t->second.text() + ", grid " + std::to_string(l.grid) + " x " +
                       std::to_string(l.block) + " threads";
      }
      if (const auto cut = r.gemm_cuts.find(kr.name); !cuda && cut != r.gemm_cuts.end())
        rep.launch = (o.mode == "max-autotune" ? "max-autotune: " : "the default heuristic: ") + cut->second.text() + " on the pool's threads";
      r.kernels.push_back(rep);
    }
    // The check: against the expected outputs when the model came with them, and always against
    // the reference interpreter run on the ATen graph.
    r.check.ok = true;
    for (size_t i = 0; i < r.outputs.size(); ++i) {
      if (!r.outputs[i].defined()) continue;  // a None output
      if (i < r.model.expected.size()) {
        OutputCheck c{r.model.expected_from, compare(r.outputs[i], r.model.expected[i])};
        r.check.ok = r.check.ok && c.cmp.ok;
        r.check.max_abs_err = std::max(r.check.max_abs_err, c.cmp.max_abs_err);
        r.check.rel_err = std::max(r.check.rel_err, c.cmp.rel_err);
        r.check.outputs.push_back(c);
      }
      if (i >= r.reference_outputs.size()) continue;
      OutputCheck c{r.train ? "reference interpreter (joint graph)" : "reference interpreter",
                    compare(r.outputs[i], r.reference_outputs.at(i))};
      r.check.ok = r.check.ok && c.cmp.ok;
      if (r.model.expected.empty()) {
        r.check.max_abs_err = std::max(r.check.max_abs_err, c.cmp.max_abs_err);
        r.check.rel_err = std::max(r.check.rel_err, c.cmp.rel_err);
      }
      r.check.reference.push_back(c);
    }
    if (r.train) {
      // Gradients of user inputs against the files that came with the model (grad_in<i>.npy).
      const TrainingRecord& t = r.training;
      const std::vector<int> users = r.model.graph.user_inputs();
      for (size_t k = 0; k < t.joint.grad_of.size(); ++k) {
        const size_t out = static_cast<size_t>(t.joint.num_forward_outputs) + k;
        if (!t.joint.grad_of_user_input[k] || out >= r.outputs.size() || !r.outputs[out].defined()) continue;
        for (size_t u = 0; u < users.size() && u < r.model.expected_grads.size(); ++u) {
          if (r.model.graph.nodes[users[u]].name != t.joint.grad_of[k]) continue;
          GradientCheck c{t.joint.grad_of[k], "grad_in" + std::to_string(u) + ".npy", compare(r.outputs[out], r.model.expected_grads[u])};
          r.check.ok = r.check.ok && c.cmp.ok;
          r.check.max_abs_err = std::max(r.check.max_abs_err, c.cmp.max_abs_err);
          r.check.rel_err = std::max(r.check.rel_err, c.cmp.rel_err);
          r.check.gradients.push_back(c);
        }
      }
    }
    rec.last_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_run).count();
    Stage s;
    s.name = "run";
    s.title = "Run: kernel times and the check";
    s.kind = Stage::Kind::run;
    s.text = run_table(r) + (r.mode_note.empty() ? "" : "\n" + r.mode_note + "\n") +
             (r.dynamic_note.empty() ? "" : "\n" + r.dynamic_note + "\n") +
             (r.compile_phases.empty() ? "" : "\n" + phase_table(r.compile_phases));
    s.nodes = static_cast<int>(r.kernels.size());
    rec.add(std::move(s));
  } catch (const Cancelled&) {
    r.error = "cancelled";
    r.error_stage = rec.current;
  } catch (const CompileError& e) {
    r.error = std::string(e.what()) + ":\n" + e.diagnostics;
    r.error_stage = rec.current;
  } catch (const std::exception& e) {
    r.error = e.what();
    r.error_stage = rec.current;
  }
  return r;
}
}  // namespace

}  // namespace ls
