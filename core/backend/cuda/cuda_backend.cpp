// The CUDA backend: CUDA C++ compiled by NVRTC, run through the driver API loaded at run time
// (cuda/driver.h), with cuBLAS/cuBLASLt, the prelude's convolution, pooling and attention kernels
// for library calls. The driver starts and the helper module compiles while the graph stages run;
// max-autotune times each kernel's launch configurations before the source is written;
// reduce-overhead replays the whole model as one CUDA graph.
#include <chrono>
#include <cstdlib>
#include <future>
#include <iomanip>
#include <sstream>

#include "backend/backend.h"
#include "cuda/driver.h"
#include "cuda/nvrtc_compiler.h"
#include "exec/cuda_executor.h"
#include "exec/isolated_run.h"
#include "exec/memory_fit.h"
#include "interp/reference.h"
#include "record/stage_log.h"
#include "tune/autotune.h"

namespace ls {
namespace {

// The CUDA code of one compile: its modules (the model's kernels, the helpers', the attention
// kernels') and one executable per size it has run at (a dynamic-shapes template: every size
// its guards admit; else the traced sizes only).
class CudaProgram final : public CompiledProgram {
 public:
  CudaProgram(const CompileResult& r, const PipelineOptions& o, FrontHalf front_half, const Graph& lowered_from, CudaDriver& d,
              const std::string& cubin, const std::string& helpers_cubin, const std::string& attention_cubin)
      : aten_(r.aten), o_(o), front_half_(std::move(front_half)), plan_(r.dynamic), dynamic_(o.dynamic), attention_source_(r.cuda.attention_source), d_(d),
        module_(std::make_unique<CudaModule>(d, cubin)), helpers_(std::make_unique<CudaModule>(d, helpers_cubin)) {
    o_.keep_program = false;
    o_.on_capture = nullptr;
    o_.mode = Mode::default_mode;  // the samples reuse the traced compile's launch configurations (o.cuda_configs)
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
      const auto t0 = std::chrono::steady_clock::now();
      AtNewSizes n = front_half_at(front_half_, aten_, shapes, o_, plan_, v);
      if (n.r.cuda.attention_source != attention_source_)
        throw GuardFailed("guard failed: at " + sizes_text(plan_, v) + " the attention calls need other attention kernels");
      auto at = std::make_unique<AtSizes>();
      at->lowered = std::move(n.lowered);
      at->loops = std::move(n.r.loops);
      at->schedule = std::move(n.r.schedule);
      at->cuda = std::move(n.r.cuda);
      at->exe = std::make_unique<CudaExecutable>(at->loops, at->schedule, at->cuda, d_, *module_, *helpers_, attention_.get(), v);
      it = at_.emplace(v, std::move(at)).first;
      last_note = new_sizes_note(plan_, v, t0, "CUDA kernels");
    } else {
      last_note = dynamic_ ? "sizes " + sizes_text(plan_, v) + " seen before: the compiled CUDA kernels reused" : "";
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
  FrontHalf front_half_;
  SizeGeneric plan_;
  bool dynamic_;
  std::string attention_source_;
  CudaDriver& d_;
  std::unique_ptr<CudaModule> module_, helpers_, attention_;
  std::map<std::vector<int64_t>, std::unique_ptr<AtSizes>> at_;
};

// Test-only: LOWERSCOPE_FAULT=cuda-illegal:KERNEL makes that generated kernel store through an
// address no allocation has as it starts, so it faults with an illegal address on the GPU
// (tests/cuda 'injected illegal address is survived'); cuda-hang:KERNEL makes it spin for ever
// ('injected hang is stopped': a loop on the clock register, which no compiler can drop as it
// could a spin on a local, measured on an H200). Written into the text NVRTC compiles, on the kernel's opening
// line, so every line keeps its number; the source stage shows the code as made.
std::string with_injected_fault(const std::string& code, const GeneratedSource& src) {
  const char* spec = std::getenv("LOWERSCOPE_FAULT");
  const std::string v = spec ? spec : "";
  const bool illegal = v.rfind("cuda-illegal:", 0) == 0, hang = v.rfind("cuda-hang:", 0) == 0;
  if (!illegal && !hang) return code;
  const std::string name = v.substr(v.find(':') + 1);
  const std::string fault = illegal ? " { volatile unsigned long long ls_fault_at = 16; *(volatile int*)ls_fault_at = 1; }  // LOWERSCOPE_FAULT"
                                    : " { while (clock64() >= 0) {} }  // LOWERSCOPE_FAULT";
  for (const GeneratedKernel& k : src.kernels) {
    if (k.name != name || k.launcher.empty()) continue;  // a kernel sharing another's code faults in that code
    const std::string& f = k.launcher;
    for (size_t at = code.find(" " + f + "("); at != std::string::npos; at = code.find(" " + f + "(", at + 1)) {
      const size_t line = code.rfind('\n', at) + 1, end = code.find('\n', at);
      if (end == std::string::npos) break;
      const std::string head = code.substr(line, end - line);
      if (head.find("__global__") == std::string::npos || head.size() < 2 || head.substr(head.size() - 2) != " {") continue;
      return code.substr(0, end) + fault + code.substr(end);
    }
  }
  return code;
}

class CudaBackend final : public Backend {
 public:
  Device device() const override { return Device::cuda; }

  void start(BackendJob& job) override {
    if (!have_nvrtc()) throw std::runtime_error("this build has no CUDA support: NVRTC was not found when it was configured");
    if (job.o.stop_after_source) return;
    // The kernels run in a worker process (exec/isolated_run.h) where the app chose it; this
    // process then needs a context only to time max-autotune's candidates or to keep the program.
    iso_ = kernel_isolation();
    isolated_ = iso_.enabled;
    context_here_ = !isolated_ || job.o.mode == Mode::max_autotune || job.o.keep_program;
    // The driver starts (cuInit, then a context: about 0.15 s, once a process) while the front
    // half runs; the code generator waits for cuInit only (it sizes grids by the device), NVRTC
    // runs while the context is made.
    if (context_here_) driver_start_ = std::async(std::launch::async, [] { CudaDriver::get(); });
    // The helper kernels' module (the same for every model: from the disk cache after the first
    // compile on a machine) compiles for the device cuInit finds while the front half runs.
    helpers_ = std::async(std::launch::async, [] {
      const CudaDeviceInfo* found = CudaDriver::probe();
      if (!found) return CudaCompileResult{};
      CudaCompileOptions ho;
      ho.sm = found->sm();
      ho.ptx = ho.sass = false;
      ho.module = "helpers";
      return compile_cuda(cuda_helpers_source(), ho);
    });
  }

  ScheduleOptions schedule_options(const PipelineOptions& o) const override {
    ScheduleOptions so;
    so.fusion = o.fusion;
    so.prefix = "cuda";
    so.coalesced = true;
    so.max_loop_nests = 1;
    // Epilogues run inside a GEMM template, which only max-autotune writes (where it beats the library).
    so.gemm_epilogues = !o.dynamic && (o.mode == Mode::max_autotune || !o.cuda_gemm_templates.empty());
    return so;
  }

  void generate(BackendJob& job) override {
    const PipelineOptions& o = job.o;
    CompileResult& r = job.r;
    // The code is generated and compiled for the device found by cuInit while another thread
    // makes its context (driver_start_); the run needs both.
    device_ = CudaDriver::probe(&no_gpu_);
    if (device_) opts_.sm_count = device_->sm_count, opts_.sm = device_->sm();
    if (!o.cuda_configs.empty()) opts_.configs = o.cuda_configs;
    if (!o.dynamic) opts_.gemm_templates = o.cuda_gemm_templates;  // templates are written for their sizes
    opts_.size_generic = o.dynamic;
    if (o.dynamic)  // the weights' shapes do not move with the sizes
      for (const auto& [name, value] : job.lowered->weights) opts_.fixed_buffers.insert(name);
    if (o.mode == Mode::max_autotune) {
      // Each kernel's launch configurations timed on the real buffers; the fastest kept.
      if (device_) driver_ = CudaDriver::get(&no_gpu_);
      if (!driver_) {
        r.mode_note = "max-autotune: not tuned: timing candidates needs a GPU (" + no_gpu_ + ")";
      } else {
        std::vector<Tensor> tune_inputs = r.model.inputs;
        if (r.train)
          for (const Tensor& t : tangent_values(r.training.joint)) tune_inputs.push_back(t);
        CudaCodegenOptions tuned;
        const AutotuneResult a = job.log.step("autotune", [&] {
          return autotune_cuda(r.loops, r.schedule, opts_, *driver_, bind_inputs(*job.lowered, tune_inputs), tuned);
        });
        opts_ = tuned;
        Stage s;
        s.name = "autotune";
        s.title = "max-autotune: candidates timed per kernel";
        s.kind = Stage::Kind::run;
        s.text = a.table();
        s.nodes = static_cast<int>(a.kernels.size());
        job.log.add(std::move(s));
        int better = 0;
        for (const KernelTuning& k : a.kernels) better += k.chosen != 0;
        std::ostringstream note;
        note << std::fixed << std::setprecision(0) << "max-autotune: " << a.kernels.size() << " kernel(s) tuned in " << a.ms << " ms ("
             << a.rounds << " NVRTC modules" << (a.from_cache ? ", from the disk cache" : "") << "), " << better
             << " run faster than the heuristics' choice";
        r.mode_note = note.str();
      }
    }
    r.source = job.log.step("source", [&] {
      r.cuda = generate_cuda(r.loops, r.schedule, opts_);
      return r.cuda.source;
    });
  }

  std::string source_title() const override { return "Generated CUDA C++ (NVRTC)"; }

  PipelineOptions sample_options(const BackendJob& job) const override {
    PipelineOptions s = job.o;
    s.cuda_configs = opts_.configs;
    if (s.mode == Mode::max_autotune) s.mode = Mode::default_mode;
    return s;
  }

  SizeArgs size_args() const override { return SizeArgs::cuda_values; }

  void compile(BackendJob& job) override {
    const PipelineOptions& o = job.o;
    CompileResult& r = job.r;
    CudaCompileOptions co;
    co.sm = device_ ? device_->sm() : 90;
    co.cubin = device_ != nullptr;  // the machine code is only needed to run (and for SASS)
    co.sass = false;                // listed apart (cuda_sass), beside the run
    // The attention kernels' module (cached: it depends only on the head sizes), PTX alone
    // without a GPU so its compile is checked everywhere.
    std::future<CudaCompileResult> attention;
    if (!r.cuda.attention_source.empty()) {
      CudaCompileOptions ao = co;
      ao.ptx = !device_;
      ao.module = "attention";
      ao.sass = false;
      attention = std::async(std::launch::async, [ao, src = r.cuda.attention_source] { return compile_cuda(src, ao); });
    }
    for (const GeneratedKernel& k : r.source.kernels)
      if (!k.launcher.empty()) co.kernel_lines.push_back(k.first_line);
    CudaCompileResult compiled = compile_cuda(with_injected_fault(r.source.code, r.source), co);
    if (helpers_.valid()) helpers_cubin_ = helpers_.get().cubin;
    if (attention.valid()) attention_cubin_ = attention.get().cubin;
    r.compiler = compiled.compiler + (device_ ? " for " + device_->name : " (no GPU here: PTX for the H100's sm_90)");
    r.compile_log = compiled.log;
    cubin_ = compiled.cubin;
    if (!cubin_.empty()) r.objects.push_back({"kernels.cubin", cubin_});
    if (!helpers_cubin_.empty()) r.objects.push_back({"helpers.cubin", helpers_cubin_});
    if (!attention_cubin_.empty()) r.objects.push_back({"attention.cubin", attention_cubin_});
    Stage s;
    s.name = "asm";
    s.title = "PTX and SASS";
    s.kind = Stage::Kind::assembly;
    s.text = "// PTX (" + compiled.compiler + ")\n" + compiled.ptx;
    if (o.sass && !cubin_.empty()) sass_ = std::async(std::launch::async, [cubin = cubin_] { return cuda_sass(cubin); });
    s.nodes = static_cast<int>(r.source.kernels.size());
    job.log.last_ms = compiled.ms;
    job.log.add(std::move(s));
    if (context_here_ && device_ && !driver_) driver_ = CudaDriver::get(&no_gpu_);  // compiled: wait for the context
  }

  std::string cannot_run(BackendJob& job) override {
    if (isolated_ && device_ && (driver_ || !job.o.keep_program)) return {};  // the worker makes its own context
    if (driver_) return {};
    return no_gpu_.find("fault") != std::string::npos ? "not run: " + no_gpu_ : "running CUDA kernels needs a GPU: " + no_gpu_;
  }

  BackendRun run(BackendJob& job, const std::vector<Tensor>& inputs) override {
    const PipelineOptions& o = job.o;
    CompileResult& r = job.r;
    TimingOptions to;
    to.budget_ms = o.timing_budget_ms;
    BackendRun run;
    // Refused before any buffer is allocated where they do not fit in the GPU's free memory.
    MemoryNeed need = memory_need(r.loops, r.schedule);
    need.extra = need.inputs;
    need.extra_what = "the inputs' copies on the GPU";
    if (isolated_) {  // in the worker, which checks the memory with its own context, and runs, times, captures
      CudaIsolatedRun ran = run_cuda_isolated(r.loops, r.schedule, r.cuda, {cubin_, helpers_cubin_, attention_cubin_}, job.sizes, inputs, to,
                                              o.mode == Mode::reduce_overhead, need, iso_);
      r.outputs = std::move(ran.outputs);
      run.t = ran.t;
      run.how = std::move(ran.how);
      run.registers = std::move(ran.registers);
      keep(job);
      if (o.mode == Mode::reduce_overhead) note_graph(r, run, ran.graph_why, ran.graph_nodes, ran.graph_ms);
      return run;
    }
    refuse_if_too_large_for_gpu(need, *driver_);
    CudaModule module(*driver_, cubin_), helper_module(*driver_, helpers_cubin_);
    std::unique_ptr<CudaModule> attention_module;
    if (!attention_cubin_.empty()) attention_module = std::make_unique<CudaModule>(*driver_, attention_cubin_);
    CudaExecutable exe(r.loops, r.schedule, r.cuda, *driver_, module, helper_module, attention_module.get(), job.sizes);
    r.outputs = exe.run(inputs);
    run.t = exe.benchmark(inputs, to);
    run.how = exe.how;
    run.registers = exe.registers;
    keep(job);
    if (o.mode == Mode::reduce_overhead) {
      // The whole model as one CUDA graph: the same kernels, one launch, checked to give the
      // same numbers as the kernels launched one by one.
      const std::string why = exe.capture_graph();
      double graph_ms = 0;
      if (why.empty()) {
        const std::vector<Tensor> replayed = exe.replay_graph();
        for (size_t i = 0; i < replayed.size(); ++i)
          if (replayed[i].defined() && !compare(replayed[i], r.outputs.at(i), Tolerance{0, 0}).ok)
            throw std::runtime_error("the CUDA graph's output " + std::to_string(i) + " differs from the kernels launched one by one");
        graph_ms = exe.benchmark_graph(to).total_ms;
      }
      note_graph(r, run, why, exe.graph_nodes(), graph_ms);
    }
    return run;
  }

  std::string launch_text(const BackendJob& job, size_t k) const override {
    const CompileResult& r = job.r;
    const CudaLaunch& l = r.cuda.launch.at(k);
    std::string launch;
    if (!r.cuda.source.kernels[k].launcher.empty())
      launch = l.form + ": grid " + std::to_string(l.grid) + " x " + std::to_string(l.block) + " threads" +
                     (l.form == "column" ? ", 32 columns x " + std::to_string(l.threads_per_row) + " lanes" : "") +
                     (l.split > 1 ? ", " + std::to_string(l.split) + " slices a " + (l.form == "column" ? "column" : "row") : "") +
                     (l.cluster ? " (a thread-block cluster)" : "") +
                     (l.vector ? ", 16-byte accesses" : "");
    const GeneratedKernel& gk = r.cuda.source.kernels[k];
    if (!r.schedule.kernels[k].is_extern && !gk.launcher.empty() && gk.launcher != gk.name)
      launch += "; the code of " + gk.launcher + " (compiled once)";
    if (const auto t = r.cuda.gemm_templates.find(r.schedule.kernels[k].name); t != r.cuda.gemm_templates.end())
      launch = "max-autotune: GEMM template " + t->second.text() + ", grid " + std::to_string(l.grid) + " x " +
                     std::to_string(l.block) + " threads";
    return launch;
  }

  // The compiled program kept to run again in this process (PipelineOptions::keep_program).
  void keep(BackendJob& job) {
    if (!job.o.keep_program) return;
    if (!driver_) throw std::runtime_error("the CUDA kernels ran, but this process cannot keep them to run again: " + no_gpu_);
    job.r.program = std::make_shared<CudaProgram>(job.r, sample_options(job), job.front_half, *job.lowered, *driver_, cubin_,
                                                  helpers_cubin_, attention_cubin_);
  }

  // reduce-overhead's note: the graph's time a run against the kernels launched one by one.
  static void note_graph(CompileResult& r, BackendRun& run, const std::string& why, size_t nodes, double graph_ms) {
    if (!why.empty()) {
      r.mode_note = "reduce-overhead: no CUDA graph: " + why;
      return;
    }
    std::ostringstream note;
    note << std::fixed << std::setprecision(4) << "reduce-overhead: CUDA graph of " << nodes << " nodes, one launch: " << graph_ms
         << " ms a run (launched one by one: " << run.t.total_ms << " ms)";
    r.mode_note = note.str();
    r.launched_ms = run.t.total_ms;
    run.t.total_ms = graph_ms;
  }

  void finish(CompileResult& r) override {
    if (!sass_.valid()) return;
    const std::string text = sass_.get();
    for (Stage& s : r.stages)
      if (s.name == "asm" && !text.empty()) s.text += "\n\n// ---- SASS (cuobjdump -sass) ----\n" + text;
  }

 private:
  std::future<void> driver_start_;
  std::future<CudaCompileResult> helpers_;
  std::future<std::string> sass_;  // the SASS listing, made beside the run
  const CudaDeviceInfo* device_ = nullptr;
  CudaDriver* driver_ = nullptr;
  IsolationOptions iso_;
  bool isolated_ = false;      // the kernels run in a worker process
  bool context_here_ = true;   // this process makes a context (in-process runs, max-autotune, a kept program)
  std::string no_gpu_;
  CudaCodegenOptions opts_;
  std::string cubin_, helpers_cubin_, attention_cubin_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<CudaBackend>(); }

}  // namespace ls
