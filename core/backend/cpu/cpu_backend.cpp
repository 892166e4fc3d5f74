// The CPU backend: C++ with OpenMP, compiled by Clang in-process (or an external c++), run by
// CpuExecutable with the library calls of exec/extern_kernels.h. Default mode writes the large
// float32 products as GEMM templates; max-autotune times each product's cuts and templates.
#include <algorithm>
#include <chrono>
#include <iomanip>
#include <sstream>

#include "backend/backend.h"
#include "backend/cpu/cpu_programs.h"
#include "codegen/cpu_target.h"
#include "codegen/gemm_template.h"
#include "compile/cpu_compiler.h"
#include "exec/executor.h"
#include "exec/extern_kernels.h"
#include "exec/isolated_run.h"
#include "exec/memory_fit.h"
#include "record/stage_log.h"
#include "tune/autotune.h"

namespace ls {
namespace {

// How library call k ran: "library" (or "template"), or what extern_library names (the FFTs:
// "FFTW"; calls on complex values: their reference kernel).
std::string extern_how(const CompileResult& r, size_t k, const std::string& library) {
  const std::string named = extern_library(r.loops, r.loops.nodes.at(r.schedule.kernels[k].nodes.at(0)).ext);
  return named.empty() ? library : named;
}

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

// The asm stage's text: Clang's assembly, then its optimized IR (the in-process path), or what
// compiled the kernels instead.
std::string asm_stage_text(const CpuCompileResult& c) {
  if (c.assembly.empty()) return "; compiled by " + c.compiler + ": the assembly is shown for the in-process Clang path only\n";
  return c.assembly + "\n\n; ---- optimized LLVM IR ----\n" + c.llvm_ir;
}

class CpuBackend final : public Backend {
 public:
  Device device() const override { return Device::cpu; }

  void start(BackendJob&) override {}

  ScheduleOptions schedule_options(const PipelineOptions& o) const override {
    ScheduleOptions so;
    so.fusion = o.fusion;
    so.prefix = "cpp";
    so.coalesced = false;
    // Consecutive kernels sharing buffers become loop nests of one function.
    so.max_loop_nests = 16;
    // Epilogues run inside the products.
    so.gemm_epilogues = !o.dynamic;
    return so;
  }

  void generate(BackendJob& job) override {
    const PipelineOptions& o = job.o;
    CompileResult& r = job.r;
    CppCodegenOptions cpp_opts;
    cpp_opts.size_generic = o.dynamic;
    r.source = job.log.step("source", [&] { return generate_cpp(r.loops, r.schedule, cpp_opts); });
    if (!o.dynamic && o.mode != Mode::max_autotune && o.gemm_templates) {
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
  }

  std::string source_title() const override { return "Generated C++ (OpenMP)"; }

  SizeArgs size_args() const override { return SizeArgs::cpu_array; }

  void compile(BackendJob& job) override {
    const PipelineOptions& o = job.o;
    CompileResult& r = job.r;
    CpuCompileOptions co;
    co.external = o.external_compiler;
    co.want_text = o.stage_text;
    for (const GeneratedKernel& k : r.source.kernels)
      if (!k.launcher.empty()) co.kernel_lines.push_back(k.first_line);
    CpuCompileResult compiled = compile_cpp(r.source.code, co);
    r.compiler = compiled.compiler;
    r.compile_log = compiled.log;
    code_ = std::move(compiled.code);
    for (auto& object : compiled.objects) r.objects.push_back(std::move(object));
    Stage s;
    s.name = "asm";
    s.title = "Machine code (x86 assembly, LLVM IR)";
    s.kind = Stage::Kind::assembly;
    if (o.stage_text) s.text = asm_stage_text(compiled);
    s.nodes = static_cast<int>(r.source.kernels.size());
    job.log.last_ms = compiled.ms;
    job.log.add(std::move(s));
  }

  std::string cannot_run(BackendJob&) override { return {}; }

  BackendRun run(BackendJob& job, const std::vector<Tensor>& inputs) override {
    const PipelineOptions& o = job.o;
    CompileResult& r = job.r;
    const std::vector<int64_t> sizes = o.dynamic ? cpu_sizes_arg(job.sizes) : job.sizes;
    TimingOptions to;
    to.budget_ms = o.timing_budget_ms;
    BackendRun run;
    std::vector<std::string>& how = run.how;
    how.resize(r.schedule.kernels.size());
    run.registers.assign(r.schedule.kernels.size(), 0);
    // The kernels run in a worker process (exec/isolated_run.h) where the app chose it; max-autotune
    // times its candidates in this process.
    const IsolationOptions iso = cpu_isolation();
    const bool isolated = iso.enabled && o.mode != Mode::max_autotune;
    // Refused before any buffer is allocated where they do not fit in the host's free memory.
    MemoryNeed need = memory_need(r.loops, r.schedule);
    if (isolated) {  // the shared memory holds the inputs and outputs, the worker copies the inputs again
      need.extra = static_cast<int64_t>(std::min(9e18, 2.0 * static_cast<double>(need.inputs) + static_cast<double>(need.outputs)));
      need.extra_what = "the copies of the inputs and outputs handed to the kernel worker";
    }
    refuse_if_too_large(need, host_memory_available(),
                        memory_available_override() >= 0 ? "on the host (LOWERSCOPE_MEMORY_AVAILABLE)" : "on the host (MemAvailable)");
    if (isolated) {
      IsolatedRun ran = run_isolated(r.loops, r.schedule, r.source, r.objects, sizes, inputs, to, iso);
      r.outputs = std::move(ran.outputs);
      run.t = ran.t;
      for (size_t k = 0; k < how.size(); ++k) {
        const std::string library = ran.runs_template[k] ? "template" : "library";
        how[k] = r.schedule.kernels[k].is_extern ? extern_how(r, k, library) : "generated";
        if (ran.ran_inside[k]) how[k] = "epilogue";
        else if (k + 1 < how.size() && ran.ran_inside[k + 1]) how[k] = library + "+epilogue";
      }
      keep(job);
      return run;
    }
    auto exe = std::make_unique<CpuExecutable>(r.loops, r.schedule, r.source, *code_, sizes);
    r.outputs = exe->run(inputs);
    if (o.mode == Mode::max_autotune) max_autotune(job, exe, inputs, sizes);
    run.t = exe->benchmark(inputs, to);
    for (size_t k = 0; k < how.size(); ++k) {
      const std::string library = exe->runs_template(k) ? "template" : "library";
      how[k] = r.schedule.kernels[k].is_extern ? extern_how(r, k, library) : "generated";
      if (exe->ran_inside()[k]) how[k] = "epilogue";  // its time is in the multiply's
      else if (k + 1 < how.size() && exe->ran_inside()[k + 1]) how[k] = library + "+epilogue";
    }
    keep(job);
    return run;
  }

  std::string launch_text(const BackendJob& job, size_t k) const override {
    const auto cut = job.r.gemm_cuts.find(job.r.schedule.kernels.at(k).name);
    if (cut == job.r.gemm_cuts.end()) return {};
    return (job.o.mode == Mode::max_autotune ? "max-autotune: " : "the default heuristic: ") + cut->second.text() + " on the pool's threads";
  }

 private:
  // The compiled program kept to run again (PipelineOptions::keep_program), and the mode's note.
  void keep(BackendJob& job) {
    const PipelineOptions& o = job.o;
    CompileResult& r = job.r;
    if (o.keep_program && o.dynamic) r.program = dynamic_cpu_program(r, o, job.front_half, *job.lowered, std::move(code_));
    else if (o.keep_program) r.program = cpu_program(r, *job.lowered, std::move(code_));
    if (o.mode == Mode::reduce_overhead)
      r.mode_note = "reduce-overhead: on the CPU the kernels are already called back to back from one loop, with "
                    "nothing between them to remove; it changes the CUDA run (one CUDA graph)";
  }

  // Each matrix multiply's cuts and GEMM templates timed on its operands; the fastest kept
  // (r.gemm_cuts, for the program the app runs again and for exported packages). Templates are
  // size-specialized: a dynamic compile tunes the cuts only. Chosen templates recompile the source.
  void max_autotune(BackendJob& job, std::unique_ptr<CpuExecutable>& exe, const std::vector<Tensor>& inputs,
                    const std::vector<int64_t>& sizes) {
    const PipelineOptions& o = job.o;
    CompileResult& r = job.r;
    CpuCompileOptions tco;
    tco.external = o.external_compiler;
    tco.want_text = false;  // the candidates' code is timed, not shown
    const CompileModule compile = [&](const std::string& src) { return compile_cpp(src, tco).code; };
    AutotuneResult a;
    if (o.gemm_choices.empty()) {
      a = autotune_cpu(r.loops, r.schedule, r.source.code, *exe, inputs, r.gemm_cuts, o.dynamic ? CompileModule{} : compile);
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
      const auto t_templates = std::chrono::steady_clock::now();
      add_gemm_templates(r);
      tco.kernel_lines.clear();
      for (const GeneratedKernel& k : r.source.kernels)
        if (!k.launcher.empty()) tco.kernel_lines.push_back(k.first_line);
      tco.want_text = o.stage_text;
      CpuCompileResult compiled = compile_cpp(r.source.code, tco);
      code_ = std::move(compiled.code);
      if (!compiled.objects.empty()) r.objects = std::move(compiled.objects);  // the CPU's are all from this compile
      if (o.stage_text)
        for (Stage& st : r.stages) {
          if (st.name == "source") st.text = r.source.code;
          if (st.name == "asm") st.text = asm_stage_text(compiled);
        }
      exe = std::make_unique<CpuExecutable>(r.loops, r.schedule, r.source, *code_, sizes);
      exe->run(inputs);  // binds the inputs
      for (size_t k = 0; k < r.schedule.kernels.size(); ++k)
        if (const auto c = r.gemm_cuts.find(r.schedule.kernels[k].name); c != r.gemm_cuts.end()) exe->choose_cut(k, &c->second);
      std::ostringstream note;
      note << std::fixed << std::setprecision(0) << "; the chosen GEMM templates compiled into the model's source in "
           << std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_templates).count() << " ms";
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
    job.log.last_ms = a.ms;
    job.log.add(std::move(s));
    int better = 0;
    for (const KernelTuning& k : a.kernels) better += k.chosen != 0;
    std::ostringstream note;
    note << std::fixed << std::setprecision(0) << "max-autotune: " << a.kernels.size() << " matrix multipl"
         << (a.kernels.size() == 1 ? "y" : "ies") << " tuned in " << a.ms << " ms" << (a.from_cache ? " (from the disk cache)" : "")
         << ", " << better << " run faster than the heuristic's cut" << recompiled
         << "; generated kernels compile as in default mode";
    r.mode_note = note.str();
    if (!r.gemm_cuts.empty()) r.outputs = exe->run(inputs);  // the outputs of the tuned multiplies
  }

  std::unique_ptr<LoadedCode> code_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace ls
