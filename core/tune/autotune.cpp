#include "tune/autotune.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <future>
#include <iomanip>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "compile/phase_times.h"
#include "compile/disk_cache.h"
#include "compile/split_source.h"
#include "cuda/cublas.h"
#include "codegen/cuda_gemm_template.h"
#include "cuda/nvrtc_compiler.h"
#include "exec/cuda_executor.h"

namespace ls {

namespace {

using Clock = std::chrono::steady_clock;

// The cache entry: one line per tuned kernel, "name block unroll threads_per_row split", one per
// matrix multiply given a cuBLASLt algorithm, "matmul name <MatmulAlgorithm::serialize>", and one
// per matrix multiply written as a GEMM template, "template name bm bn tm tn bk stages".
std::string serialize(const CudaCodegenOptions& o) {
  std::ostringstream os;
  for (const auto& [name, c] : o.configs) os << name << ' ' << c.block << ' ' << c.unroll << ' ' << c.threads_per_row << ' ' << c.split << '\n';
  for (const auto& [name, a] : o.matmul_algorithms) os << "matmul " << name << ' ' << a << '\n';
  for (const auto& [name, t] : o.gemm_templates) os << "template " << name << ' ' << t.bm << ' ' << t.bn << ' ' << t.tm << ' ' << t.tn << ' ' << t.bk << ' ' << t.stages << '\n';
  return os.str();
}

void deserialize(const std::string& text, CudaCodegenOptions& o) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream is(line);
    std::string name;
    is >> name;
    if (name == "template") {
      std::string kernel;
      CudaGemmConfig t;
      if (is >> kernel >> t.bm >> t.bn >> t.tm >> t.tn >> t.bk) {
        if (!(is >> t.stages)) t.stages = 0;  // an entry written before the tensor-core template
        o.gemm_templates[kernel] = t;
      }
      continue;
    }
    if (name == "matmul") {
      std::string kernel, algorithm;
      is >> kernel;
      std::getline(is >> std::ws, algorithm);
      if (!kernel.empty()) o.matmul_algorithms[kernel] = algorithm;
      continue;
    }
    KernelConfig c;
    if (is >> c.block >> c.unroll >> c.threads_per_row >> c.split) o.configs[name] = c;
  }
}

}  // namespace

std::string AutotuneResult::table() const {
  std::ostringstream os;
  if (cpu) {
    os << "AUTOTUNE (CPU): " << kernels.size() << " matrix multipl" << (kernels.size() == 1 ? "y" : "ies")
       << ", each cut into blocks of rows and columns every way the pool's threads allow (one single-threaded BLAS call a block, "
       << "its epilogue on each block) and written as generated GEMM templates (a register tile of rows x columns, K in chunks, "
       << "the threads' blocks; the bias in the tile's store, the epilogue on each block of rows), checked against the "
       << "heuristic's cut and timed alone on the model's operands, " << std::fixed
       << std::setprecision(0) << ms << " ms" << (from_cache ? " (choices from the disk cache)" : "") << "\n";
  } else {
    os << "AUTOTUNE: " << kernels.size() << " kernel(s), coordinate descent from the heuristics' configurations (" << descent_rounds
       << " round(s), " << rounds << " NVRTC modules), each candidate checked and timed alone on the model's buffers, "
       << std::fixed << std::setprecision(0) << ms << " ms" << (from_cache ? " (choices from the disk cache)" : "") << "\n";
  }
  if (tuned_ms > 0)
    os << std::setprecision(4) << "the model with the tuned kernels: " << tuned_ms << " ms a run, with the heuristics' "
       << heuristic_ms << " ms" << (tuned_ms > 0.99 * heuristic_ms ? ": the heuristics stay" : "") << "\n";
  size_t products = 0;
  for (const KernelTuning& k : kernels) products += k.library;
  if (products && !cpu)
    os << products << " matrix multipl" << (products == 1 ? "y" : "ies") << ": cuBLASLt's algorithms for the product (its heuristic's list) "
       << "checked and timed against the heuristics' call, and generated GEMM templates (every tile of cuda_gemm_candidates, the "
       << "epilogue kernel after the product inside them, that kernel's own time taken off theirs)\n";
  for (const KernelTuning& k : kernels) {
    os << "\n" << k.kernel << " (" << k.form << "): " << k.why << "\n";
    for (size_t i = 0; i < k.candidates.size(); ++i) {
      const TunedCandidate& c = k.candidates[i];
      os << "  " << (i == k.chosen ? "* " : "  ") << std::left << std::setw(cpu ? 50 : 34) << c.text() << std::right;
      if (!c.problem.empty()) os << c.problem << "\n";
      else os << std::setprecision(4) << std::setw(10) << c.ms * 1000.0 << " us" << (c.note.empty() ? "" : "  (" + c.note + ")") << "\n";
    }
  }
  return os.str();
}

namespace {

// A configuration as numbers: block, unroll, threads per row, split; the heuristic's own ({})
// as the values it stands for, so neighbours are found around it too.
std::array<int64_t, 4> coordinates(const KernelConfig& c, const CudaLaunch& h, int unroll) {
  if (!(c == KernelConfig{})) return {c.block, c.unroll, c.threads_per_row, c.split};
  if (h.form == "pointwise") return {h.block, unroll, 0, 0};
  if (h.form == "row") return {0, 0, h.threads_per_row, 0};
  if (h.form == "column") return {h.block, 0, 0, h.split};
  return {0, 0, 0, h.split};
}

// One step of coordinate descent: one number doubled or halved (or a split turned off).
bool neighbours(const std::array<int64_t, 4>& a, const std::array<int64_t, 4>& b) {
  int differ = 0;
  bool step = false;
  for (int i = 0; i < 4; ++i) {
    if (a[i] == b[i]) continue;
    ++differ;
    const int64_t lo = std::min(a[i], b[i]), hi = std::max(a[i], b[i]);
    step = lo > 0 && (hi == 2 * lo || (i == 3 && lo == 1));
  }
  return differ == 1 && step;
}

}  // namespace

AutotuneResult autotune_cuda(const LoopProgram& p, const Schedule& s, const CudaCodegenOptions& base, CudaDriver& d,
                             const std::vector<Tensor>& inputs, CudaCodegenOptions& tuned) {
  const auto t0 = Clock::now();
  AutotuneResult result;
  tuned = base;
  CudaCodegenOptions each_own = base;  // every kernel's own text: candidates are rewritten kernel by kernel
  each_own.share_identical_kernels = false;
  const GeneratedCuda heuristic = generate_cuda(p, s, each_own);
  // cuBLASLt's algorithms are opaque to other builds of it: the library (its file, size and
  // time) is part of the key.
  Cublas* blas = Cublas::get();
  std::string library;
  if (blas) {
    std::error_code ec;
    const std::filesystem::path lib(blas->library);
    library = blas->library + " " + std::to_string(std::filesystem::file_size(lib, ec)) + " " +
              std::to_string(std::filesystem::last_write_time(lib, ec).time_since_epoch().count());
  }
  const DiskCache cache(cache_folder("", "autotune"), fnv1a_hex(d.device().name + "\n" + library + "\n" + heuristic.source.code), ".cu");

  // Every generated kernel's space of configurations (the heuristic's first); the table lists the
  // ones tried.
  std::vector<size_t> tuned_kernels;
  std::vector<std::vector<KernelConfig>> space;
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    if (s.kernels[k].is_extern) continue;
    KernelTuning t;
    t.kernel = s.kernels[k].name;
    t.form = heuristic.launch[k].form;
    // The heuristic's pointwise kernels take 4 consecutive elements a thread as float4 where they
    // can; the candidates with an unroll take scalars a block apart, so both ways are timed.
    if (heuristic.launch[k].vector) t.form += ", heuristic with 16-byte accesses";
    space.push_back(cuda_candidates(heuristic.launch[k], s.kernels[k].numel, s.kernels[k].rnumel));
    t.space = space.back().size();
    t.candidates.push_back({KernelConfig{}, 0, "", ""});
    result.kernels.push_back(std::move(t));
    tuned_kernels.push_back(k);
  }
  if (cache.has(".tune", heuristic.source.code)) {
    deserialize(cache.get(".tune"), tuned);
    for (KernelTuning& t : result.kernels) {
      const auto c = tuned.configs.find(t.kernel);
      if (c != tuned.configs.end() && !(c->second == KernelConfig{})) {
        t.candidates.push_back({c->second, 0, "", ""});
        t.chosen = 1;
      }
      t.why = "chosen before (disk cache)";
    }
    for (const auto& [name, text] : tuned.matmul_algorithms) {
      KernelTuning t;
      t.kernel = name;
      t.form = "matrix multiply";
      t.library = true;
      MatmulAlgorithm a;
      MatmulAlgorithm::parse(text, a);
      TunedCandidate heuristic_call, chosen;
      heuristic_call.label = "the heuristics' call";
      chosen.label = "cuBLASLt " + a.text;
      t.candidates = {heuristic_call, chosen};
      t.chosen = 1;
      t.why = "chosen before (disk cache)";
      result.kernels.push_back(std::move(t));
    }
    for (const auto& [name, c] : tuned.gemm_templates) {
      KernelTuning t;
      t.kernel = name;
      t.form = "matrix multiply";
      t.library = true;
      TunedCandidate heuristic_call, chosen;
      heuristic_call.label = "the heuristics' call";
      chosen.label = "GEMM template " + c.text();
      t.candidates = {heuristic_call, chosen};
      t.chosen = 1;
      t.why = "chosen before (disk cache)";
      result.kernels.push_back(std::move(t));
    }
    result.from_cache = true;
    result.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    return result;
  }

  CudaCompileOptions co;
  co.sm = d.device().sm();
  co.sass = false;
  co.ptx = false;
  auto compile_async = [&](const std::string& src, const char* module, std::vector<int> kernel_lines = {}) {
    CudaCompileOptions mo = co;
    mo.module = module;
    mo.kernel_lines = std::move(kernel_lines);
    return std::async(std::launch::async, [src, mo] { return compile_cuda(src, mo); });
  };
  // The model's own modules first: the model runs with the heuristics while the first round of
  // candidates compiles.
  std::vector<std::future<CudaCompileResult>> own;
  std::vector<int> model_lines;  // the model's kernels compile as parts at once (compile_cuda)
  for (const GeneratedKernel& gk : heuristic.source.kernels)
    if (!gk.launcher.empty()) model_lines.push_back(gk.first_line);
  own.push_back(compile_async(heuristic.source.code, "model", model_lines));
  own.push_back(compile_async(cuda_helpers_source(), "helpers"));
  const std::string attention_source = heuristic.attention_source;
  if (!attention_source.empty()) own.push_back(compile_async(attention_source, "attention"));

  const std::string& code = heuristic.source.code;
  auto lines_of = [](const std::string& text, int first, int last) {
    std::string out;
    int line = 1;
    size_t at = 0;
    while (at < text.size() && line <= last) {
      size_t eol = text.find('\n', at);
      if (eol == std::string::npos) eol = text.size();
      if (line >= first) out += text.substr(at, eol - at) + "\n";
      at = eol + 1;
      ++line;
    }
    return out;
  };
  int first_kernel_line = 0;
  for (const GeneratedKernel& gk : heuristic.source.kernels)
    if (!gk.launcher.empty() && (first_kernel_line == 0 || gk.first_line < first_kernel_line)) first_kernel_line = gk.first_line;
  const std::string prelude = first_kernel_line > 1 ? lines_of(code, 1, first_kernel_line - 1) : std::string();
  // GEMM templates for the matrix multiplies one fits (their epilogues inside), every tile of
  // cuda_gemm_candidates, one module compiled beside the model's. Not in size-generic code: a
  // template is written for its sizes.
  struct TemplateVersion {
    CudaGemmConfig config;
    CudaGemmSource source;
  };
  std::map<size_t, std::pair<CudaGemmProblem, std::vector<TemplateVersion>>> templates;  // by kernel
  std::string template_source = prelude;
  for (size_t k = 0; k < s.kernels.size() && !base.size_generic; ++k) {
    const std::optional<CudaGemmProblem> g = cuda_gemm_problem(p, s, k);
    if (!g) continue;
    std::vector<TemplateVersion> versions;
    for (const CudaGemmConfig& c : cuda_gemm_candidates(*g)) {
      versions.push_back({c, cuda_gemm_template(p, s, *g, c, base, s.kernels[k].name + "_template_c" + std::to_string(versions.size()))});
      template_source += "\n" + versions.back().source.text;
    }
    templates[k] = {*g, std::move(versions)};
  }
  std::future<CudaCompileResult> templates_compiling;
  if (!templates.empty()) templates_compiling = compile_async(template_source, "GEMM templates");
  const size_t threads = static_cast<size_t>(nvrtc_programs_at_once());

  // Coordinate descent from the heuristic's configuration, as Inductor's coordinate-descent
  // tuning: each round compiles and times the untried neighbours of every kernel's best so far
  // (one number doubled or halved); a kernel moves on while a neighbour beats its best by 3%.
  // A candidate is a kernel of its own, <kernel>__c<i> (i: its place in the kernel's space),
  // cut from the source generated with it; the round's candidates compile in modules at once,
  // as many as nvrtc_programs_at_once() (NVRTC is thread-safe).
  struct Version {
    size_t tuning = 0, candidate = 0;  // result.kernels[tuning].candidates[candidate]
    std::string function, text;
    CudaLaunch launch;
    int module = -1;
  };
  struct Round {
    std::vector<Version> versions;
    std::vector<std::future<CudaCompileResult>> compiling;
  };
  std::vector<size_t> best(tuned_kernels.size(), 0);  // index into candidates
  std::vector<bool> moving(tuned_kernels.size(), true);
  auto start_round = [&]() {
    Round r;
    // Each kernel's untried neighbours; the n-th of every kernel share one generated source.
    std::vector<std::vector<size_t>> pending(tuned_kernels.size());
    size_t width = 0;
    for (size_t j = 0; j < tuned_kernels.size(); ++j) {
      if (!moving[j]) continue;
      const CudaLaunch& h = heuristic.launch[tuned_kernels[j]];
      const auto at = coordinates(result.kernels[j].candidates[best[j]].config, h, base.pointwise_unroll);
      for (size_t i = 1; i < space[j].size(); ++i) {
        bool tried = false;
        for (const TunedCandidate& c : result.kernels[j].candidates) tried = tried || c.config == space[j][i];
        if (!tried && neighbours(at, coordinates(space[j][i], h, base.pointwise_unroll))) pending[j].push_back(i);
      }
      width = std::max(width, pending[j].size());
    }
    PhaseTimer generating("max-autotune: generate candidates");
    for (size_t n = 0; n < width; ++n) {
      CudaCodegenOptions o = each_own;
      for (size_t j = 0; j < tuned_kernels.size(); ++j)
        if (n < pending[j].size()) o.configs[result.kernels[j].kernel] = space[j][pending[j][n]];
      const GeneratedCuda g = generate_cuda(p, s, o);
      for (size_t j = 0; j < tuned_kernels.size(); ++j) {
        if (n >= pending[j].size()) continue;
        const size_t k = tuned_kernels[j];
        const GeneratedKernel& gk = g.source.kernels.at(k);
        Version v;
        v.tuning = j;
        v.candidate = result.kernels[j].candidates.size();
        result.kernels[j].candidates.push_back({space[j][pending[j][n]], 0, "", ""});
        v.function = gk.name + "__c" + std::to_string(pending[j][n]);
        v.text = lines_of(g.source.code, gk.first_line, gk.last_line);
        const size_t name_at = v.text.find(" " + gk.name + "(");
        if (name_at != std::string::npos) v.text.replace(name_at + 1, gk.name.size(), v.function);
        v.launch = g.launch.at(k);
        r.versions.push_back(std::move(v));
      }
    }
    generating.stop();
    const size_t modules = std::min(threads, r.versions.size());
    std::vector<std::string> sources(modules, prelude);
    for (size_t i = 0; i < r.versions.size(); ++i) {
      r.versions[i].module = static_cast<int>(i % modules);
      sources[i % modules] += r.versions[i].text;
    }
    for (const std::string& src : sources) r.compiling.push_back(compile_async(src, "autotune candidates"));
    result.rounds += static_cast<int>(modules);
    return r;
  };
  Round round = start_round();

  auto wait_own = [&](size_t i) {
    PhaseTimer wait("max-autotune: the model's own modules compiling (wall time)");
    return own[i].get();  // the model's own kernels must compile
  };
  CudaModule module(d, wait_own(0).cubin), helper_module(d, wait_own(1).cubin);
  std::unique_ptr<CudaModule> attention;
  if (!attention_source.empty()) attention = std::make_unique<CudaModule>(d, wait_own(2).cubin);
  result.rounds += static_cast<int>(own.size());

  // The model runs once with the heuristics (every buffer filled: each kernel's outputs are its
  // candidates' reference), then each kernel's heuristic launch is timed alone, its outputs' rms
  // taken (compare()'s floor under |expected|).
  TimingOptions timing;
  timing.warmup = 2;
  timing.min_runs = 5;
  timing.max_runs = 50;
  timing.budget_ms = 30;
  TimingOptions alone = timing;
  alone.budget_ms = 5;
  TimingOptions once;
  once.warmup = 0;
  once.min_runs = once.max_runs = 1;
  PhaseTimer model_run("max-autotune: the model run and timed with the heuristics");
  CudaExecutable exe(p, s, heuristic, d, module, helper_module, attention.get());
  exe.run_bound(inputs);  // checked: a fault names its kernel
  const double heuristic_total = exe.benchmark_bound(timing).total_ms;
  std::vector<bool> in_place(tuned_kernels.size());
  std::vector<std::vector<double>> rms(tuned_kernels.size());
  for (size_t j = 0; j < tuned_kernels.size(); ++j) {
    const size_t k = tuned_kernels[j];
    const Kernel& kr = s.kernels[k];
    for (const std::string& w : kr.writes) in_place[j] = in_place[j] || std::count(kr.reads.begin(), kr.reads.end(), w);
    void* f = module.function(heuristic.source.kernels[k].launcher);
    result.kernels[j].candidates[0].ms = exe.time_alone(k, f, heuristic.launch[k], alone);
    if (in_place[j]) continue;
    for (const std::string& w : kr.writes) rms[j].push_back(p.buffer(w).dtype == DType::f32 ? exe.rms(w) : 0.0);
  }
  model_run.stop();

  // Matrix multiplies (while the first round compiles): cuBLASLt's algorithms for each product,
  // checked against the heuristics' call and timed on the model's operands. With a bias the
  // heuristics already run cuBLASLt's first algorithm; without, cuBLAS's sgemm.
  std::map<size_t, std::vector<MatmulAlgorithm>> library_algorithms;  // by index into result.kernels
  // GEMM templates: each checked against the heuristics' product and its epilogue's outputs, and
  // timed alone on the model's buffers; with an epilogue inside, the epilogue kernel's own time
  // (which the template saves) is taken off, so the template competes as the product's time.
  std::map<std::pair<size_t, size_t>, CudaGemmConfig> template_choice;  // (result.kernels index, candidate) -> its tile
  std::unique_ptr<CudaModule> template_module;
  std::string template_error;
  bool template_loaded = false;
  auto time_templates = [&](size_t k, const CudaGemmProblem& g, const std::vector<TemplateVersion>& versions, DevicePtr want,
                            double out_rms, KernelTuning& t, size_t tuning_index) {
    PhaseTimer timing_templates("max-autotune: GEMM templates (checked and timed)");
    if (!template_loaded) {
      template_loaded = true;
      ++result.rounds;
      try {
        template_module = std::make_unique<CudaModule>(d, templates_compiling.get().cubin);
      } catch (const std::exception& e) {
        template_error = e.what();
      }
    }
    t.space += versions.size();
    // The epilogue as the heuristics run it: its outputs (the reference) and its time alone.
    const size_t e = static_cast<size_t>(std::max(g.epilogue, 0));
    void* epilogue_f = g.epilogue >= 0 ? module.function(heuristic.source.kernels[e].launcher) : nullptr;
    std::vector<DeviceBuffer> epilogue_want;
    std::vector<double> epilogue_rms;
    double epilogue_ms = 0;
    std::string unfit;
    if (epilogue_f) {
      exe.run_alone(e, epilogue_f, heuristic.launch[e]);
      for (const std::string& w : s.kernels[e].writes) {
        const LoopBuffer& b = p.buffer(w);
        const bool floating = b.dtype == DType::f32 || b.dtype == DType::bf16 || b.dtype == DType::f16;  // what mismatches() compares
        if (!floating) unfit = "the epilogue writes " + w + ", " + std::string(dtype_torch(b.dtype)) + " (not a float type)";
        epilogue_want.emplace_back(d, static_cast<size_t>(b.bytes()));
        if (floating && b.bytes()) d.copy(epilogue_want.back().ptr(), exe.device_ptr(w), static_cast<size_t>(b.bytes()));
        epilogue_rms.push_back(floating ? exe.rms(w) : 0.0);
      }
      epilogue_ms = exe.time_alone(e, epilogue_f, heuristic.launch[e], alone);
    }
    std::ostringstream us;
    us << std::fixed << std::setprecision(1);
    for (const TemplateVersion& v : versions) {
      TunedCandidate c;
      c.label = "GEMM template " + v.config.text() + (epilogue_f ? " with " + s.kernels[e].name + " inside" : "");
      try {
        if (!unfit.empty()) throw std::runtime_error(unfit);
        if (!template_module) throw std::runtime_error("did not compile: " + template_error);
        void* f = template_module->function(v.source.function);
        exe.run_function(f, v.source.launch, v.source.args, v.source.function);
        if (const long long bad = exe.mismatches(g.c, want, out_rms))
          throw std::runtime_error("other numbers than the heuristics' (" + std::to_string(bad) + " elements of " + g.c + ")");
        for (size_t w = 0; epilogue_f && w < s.kernels[e].writes.size(); ++w)
          if (const long long bad = exe.mismatches(s.kernels[e].writes[w], epilogue_want[w].ptr(), epilogue_rms[w]))
            throw std::runtime_error("other numbers than the epilogue's (" + std::to_string(bad) + " elements of " + s.kernels[e].writes[w] + ")");
        const double together = exe.time_function(f, v.source.launch, v.source.args, v.source.function, alone);
        c.ms = together - epilogue_ms;
        if (epilogue_f) {
          us.str("");
          us << " (" << together * 1000 << " us with the epilogue, whose kernel takes " << epilogue_ms * 1000 << " us alone)";
          c.label += us.str();
        }
      } catch (const std::exception& ex) {
        c.problem = std::string("failed: ") + ex.what();
      }
      template_choice[{tuning_index, t.candidates.size()}] = v.config;
      t.candidates.push_back(std::move(c));
    }
    exe.run_step_alone(k);  // the buffers as the heuristics leave them
    if (epilogue_f) exe.run_alone(e, epilogue_f, heuristic.launch[e]);
  };
  if (blas) {
    PhaseTimer products("max-autotune: matrix multiplies (cuBLASLt's algorithms timed)");
    for (size_t k = 0; k < s.kernels.size(); ++k) {
      if (!s.kernels[k].is_extern) continue;
      const std::optional<MatmulProblem> problem = exe.matmul_problem(k);
      if (!problem) continue;
      KernelTuning t;
      t.kernel = s.kernels[k].name;
      t.library = true;
      t.form = "matrix multiply " + problem->text();
      std::vector<MatmulAlgorithm> algorithms = blas->algorithms(*problem, 12);
      TunedCandidate own;
      own.label = problem->bias ? (algorithms.empty() ? std::string("cuBLASLt's first") : "cuBLASLt's first: " + algorithms[0].text)
                                : std::string("cublasSgemm");
      if (problem->bias && !algorithms.empty()) algorithms.erase(algorithms.begin());
      t.space = algorithms.size() + 1;
      own.ms = exe.time_step_alone(k, alone);
      t.candidates.push_back(own);
      const std::string& out = s.kernels[k].writes.at(0);
      const size_t bytes = static_cast<size_t>(p.buffer(out).bytes());
      exe.run_step_alone(k);
      DeviceBuffer want(d, bytes);
      d.copy(want.ptr(), exe.device_ptr(out), bytes);
      d.synchronize();
      const double out_rms = exe.rms(out);
      for (const MatmulAlgorithm& a : algorithms) {
        TunedCandidate c;
        c.label = "cuBLASLt " + a.text;
        try {
          exe.choose_matmul(k, &a);
          exe.run_step_alone(k);
          if (const long long bad = exe.mismatches(out, want.ptr(), out_rms))
            throw std::runtime_error("other numbers than the heuristic's (" + std::to_string(bad) + " elements of " + out + ")");
          c.ms = exe.time_step_alone(k, alone);
        } catch (const std::exception& e) {
          c.problem = std::string("failed: ") + e.what();
        }
        t.candidates.push_back(std::move(c));
      }
      exe.choose_matmul(k, nullptr);
      exe.run_step_alone(k);  // its output as the heuristics leave it
      if (const auto tv = templates.find(k); tv != templates.end())
        time_templates(k, tv->second.first, tv->second.second, want.ptr(), out_rms, t, result.kernels.size());
      library_algorithms[result.kernels.size()] = std::move(algorithms);
      result.kernels.push_back(std::move(t));
    }
  }

  std::vector<std::unique_ptr<CudaModule>> loaded;  // every round's modules, alive to the end
  for (int round_number = 1;; ++round_number) {
    PhaseTimer compile_wall("max-autotune: the candidates' modules compiling (wall time, after the model's run)");
    std::vector<CudaModule*> modules;
    std::vector<std::string> compile_errors;
    for (auto& f : round.compiling) {
      try {
        loaded.push_back(std::make_unique<CudaModule>(d, f.get().cubin));
        modules.push_back(loaded.back().get());
        compile_errors.emplace_back();
      } catch (const std::exception& e) {
        modules.push_back(nullptr);
        compile_errors.emplace_back(e.what());
      }
    }
    compile_wall.stop();
    // Each candidate alone on the heuristic's buffers: checked against the heuristic kernel's
    // outputs (float32 ones copied on the device and compared there; others downloaded), then timed.
    for (size_t j = 0; j < tuned_kernels.size(); ++j) {
      const size_t k = tuned_kernels[j];
      KernelTuning& t = result.kernels[j];
      const Kernel& kr = s.kernels[k];
      void* own_f = module.function(heuristic.source.kernels[k].launcher);
      bool any = false;
      for (const Version& v : round.versions) any = any || v.tuning == j;
      if (!any) continue;
      std::vector<Tensor> want;
      std::vector<DeviceBuffer> want_device;
      if (!in_place[j]) {
        PhaseTimer reference("max-autotune: the heuristic kernel's outputs (the candidates' reference)");
        exe.run_alone(k, own_f, heuristic.launch[k]);  // on its inputs as they are now (a kernel before may update in place)
        for (const std::string& w : kr.writes) {
          const LoopBuffer& b = p.buffer(w);
          const bool f32 = b.dtype == DType::f32;
          want.push_back(f32 ? Tensor() : exe.download(w));
          want_device.emplace_back(d, f32 ? static_cast<size_t>(b.bytes()) : 0);
          if (f32 && b.bytes()) d.copy(want_device.back().ptr(), exe.device_ptr(w), static_cast<size_t>(b.bytes()));
        }
        d.synchronize();
      }
      for (const Version& v : round.versions) {
        if (v.tuning != j) continue;
        TunedCandidate& c = t.candidates[v.candidate];
        try {
          if (in_place[j]) throw std::runtime_error("not timed: the kernel updates a buffer it reads");
          if (!modules[v.module]) throw std::runtime_error("did not compile: " + compile_errors[v.module]);
          void* f = modules[v.module]->function(v.function);
          PhaseTimer checking("max-autotune: check candidates (on the device)");
          exe.run_alone(k, f, v.launch);  // also loads the kernel (the driver loads lazily)
          for (size_t w = 0; w < kr.writes.size(); ++w) {
            if (p.buffer(kr.writes[w]).dtype == DType::f32) {
              if (const long long bad = exe.mismatches(kr.writes[w], want_device[w].ptr(), rms[j][w]))
                throw std::runtime_error("other numbers than the heuristic's (" + std::to_string(bad) + " elements of " + kr.writes[w] + ")");
              continue;
            }
            const Comparison cmp = compare(exe.download(kr.writes[w]), want[w]);
            if (!cmp.ok) throw std::runtime_error("other numbers than the heuristic's: " + cmp.why);
          }
          checking.stop();
          PhaseTimer timing_candidate("max-autotune: time candidates");
          const double first_ms = exe.time_alone(k, f, v.launch, once);
          if (first_ms > 3 * t.candidates[0].ms + 0.01) {  // far slower at one run: not worth timing further
            c.ms = first_ms;
            c.note = "one run, far slower than the heuristic's";
            continue;
          }
          c.ms = exe.time_alone(k, f, v.launch, alone);
        } catch (const std::exception& e) {
          c.problem = std::string("failed: ") + e.what();
        }
      }
      if (!in_place[j]) exe.run_alone(k, own_f, heuristic.launch[k]);  // its buffers as the heuristic left them
      // Move to the fastest candidate when it beats the best so far by 3% (timing noise).
      size_t fastest = best[j];
      for (size_t i = 0; i < t.candidates.size(); ++i)
        if (t.candidates[i].problem.empty() && t.candidates[i].note.empty() && t.candidates[i].ms < t.candidates[fastest].ms) fastest = i;
      moving[j] = fastest != best[j] && t.candidates[fastest].ms < 0.97 * t.candidates[best[j]].ms;
      if (moving[j]) best[j] = fastest;
    }
    result.descent_rounds = round_number;
    if (round_number >= 4 || std::none_of(moving.begin(), moving.end(), [](bool m) { return m; })) break;
    round = start_round();
    if (round.versions.empty()) break;
  }
  for (size_t j = 0; j < result.kernels.size(); ++j) {
    KernelTuning& t = result.kernels[j];
    size_t best = 0;
    for (size_t i = 1; i < t.candidates.size(); ++i)
      if (t.candidates[i].problem.empty() && t.candidates[i].note.empty() && t.candidates[i].ms < t.candidates[best].ms) best = i;
    // Keep the heuristic unless another is clearly faster (timing noise is a few percent).
    if (best != 0 && t.candidates[best].ms > 0.97 * t.candidates[0].ms) best = 0;
    t.chosen = best;
    std::ostringstream why;
    why << std::fixed << std::setprecision(2);
    if (best == 0) why << "the heuristic's " << (t.library ? "call" : "configuration") << " is the fastest (" << t.candidates.size() << " of " << t.space << " tried)";
    else why << t.candidates[best].text() << ": " << t.candidates[0].ms / t.candidates[best].ms << "x faster than the heuristic's ("
             << t.candidates.size() << " of " << t.space << " tried)";
    t.why = why.str();
    if (best == 0) continue;
    if (const auto tc = template_choice.find({j, best}); tc != template_choice.end()) tuned.gemm_templates[t.kernel] = tc->second;
    else if (t.library) tuned.matmul_algorithms[t.kernel] = library_algorithms.at(j).at(best - 1).serialize();
    else tuned.configs[t.kernel] = t.candidates[best].config;
  }
  // The kernels were timed one at a time; the model is what counts: the tuned kernels together
  // must beat the heuristics' whole-model time, else the heuristics stay.
  if ((!tuned.configs.empty() && tuned.configs.size() != base.configs.size()) || tuned.matmul_algorithms.size() != base.matmul_algorithms.size() ||
      tuned.gemm_templates.size() != base.gemm_templates.size()) {
    PhaseTimer checking("max-autotune: the tuned model compiled and timed");
    const GeneratedCuda g = generate_cuda(p, s, tuned);
    CudaModule tuned_module(d, compile_cuda(g.source.code, co).cubin);
    CudaExecutable tuned_exe(p, s, g, d, tuned_module, helper_module, attention.get());
    tuned_exe.run(inputs);
    result.tuned_ms = tuned_exe.benchmark(inputs, timing).total_ms;
    result.heuristic_ms = heuristic_total;
    if (result.tuned_ms > 0.99 * heuristic_total) {
      for (KernelTuning& t : result.kernels)
        if (t.chosen != 0) {
          t.why += "; kept the heuristic: the tuned kernels together were not faster";
          t.chosen = 0;
        }
      tuned = base;
    }
    ++result.rounds;
  }
  cache.put({{".tune", serialize(tuned)}}, heuristic.source.code);
  result.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return result;
}

}  // namespace ls
