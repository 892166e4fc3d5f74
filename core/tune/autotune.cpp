#include "tune/autotune.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <future>
#include <iomanip>
#include <memory>
#include <sstream>
#include <thread>

#include "compile/phase_times.h"
#include "compile/disk_cache.h"
#include "cuda/nvrtc_compiler.h"
#include "exec/cuda_executor.h"

namespace ls {

namespace {

using Clock = std::chrono::steady_clock;

// The cache entry: one line per tuned kernel, "name block unroll threads_per_row split".
std::string serialize(const CudaCodegenOptions& o) {
  std::ostringstream os;
  for (const auto& [name, c] : o.configs) os << name << ' ' << c.block << ' ' << c.unroll << ' ' << c.threads_per_row << ' ' << c.split << '\n';
  return os.str();
}

void deserialize(const std::string& text, CudaCodegenOptions& o) {
  std::istringstream is(text);
  std::string name;
  KernelConfig c;
  while (is >> name >> c.block >> c.unroll >> c.threads_per_row >> c.split) o.configs[name] = c;
}

}  // namespace

std::string AutotuneResult::table() const {
  std::ostringstream os;
  os << "AUTOTUNE: " << kernels.size() << " kernel(s), every candidate compiled (" << rounds
     << " NVRTC modules at once) and timed alone on the model's buffers, "
     << std::fixed << std::setprecision(0) << ms << " ms" << (from_cache ? " (choices from the disk cache)" : "") << "\n";
  if (tuned_ms > 0)
    os << std::setprecision(4) << "the model with the tuned kernels: " << tuned_ms << " ms a run, with the heuristics' "
       << heuristic_ms << " ms" << (tuned_ms > 0.99 * heuristic_ms ? ": the heuristics stay" : "") << "\n";
  for (const KernelTuning& k : kernels) {
    os << "\n" << k.kernel << " (" << k.form << "): " << k.why << "\n";
    for (size_t i = 0; i < k.candidates.size(); ++i) {
      const TunedCandidate& c = k.candidates[i];
      os << "  " << (i == k.chosen ? "* " : "  ") << std::left << std::setw(34) << c.config.text() << std::right;
      if (!c.problem.empty()) os << c.problem << "\n";
      else os << std::setprecision(4) << std::setw(10) << c.ms * 1000.0 << " us" << (c.note.empty() ? "" : "  (" + c.note + ")") << "\n";
    }
  }
  return os.str();
}

AutotuneResult autotune_cuda(const LoopProgram& p, const Schedule& s, const CudaCodegenOptions& base, CudaDriver& d,
                             const std::vector<Tensor>& inputs, CudaCodegenOptions& tuned) {
  const auto t0 = Clock::now();
  AutotuneResult result;
  tuned = base;
  const GeneratedCuda heuristic = generate_cuda(p, s, base);
  const DiskCache cache(cache_folder("", "autotune"), fnv1a_hex(d.device().name + "\n" + heuristic.source.code), ".cu");

  // Candidates per generated kernel.
  std::vector<size_t> tuned_kernels;
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    if (s.kernels[k].is_extern) continue;
    KernelTuning t;
    t.kernel = s.kernels[k].name;
    t.form = heuristic.launch[k].form;
    for (const KernelConfig& c : cuda_candidates(heuristic.launch[k], s.kernels[k].numel, s.kernels[k].rnumel))
      t.candidates.push_back({c, 0, "", ""});
    result.kernels.push_back(std::move(t));
    tuned_kernels.push_back(k);
  }
  if (cache.has(".tune", heuristic.source.code)) {
    deserialize(cache.get(".tune"), tuned);
    for (KernelTuning& t : result.kernels) {
      const auto c = tuned.configs.find(t.kernel);
      for (size_t i = 0; c != tuned.configs.end() && i < t.candidates.size(); ++i)
        if (t.candidates[i].config == c->second) t.chosen = i;
      t.why = "chosen before (disk cache)";
    }
    result.from_cache = true;
    result.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    return result;
  }

  CudaCompileOptions co;
  co.sm = d.device().sm();
  co.sass = false;
  co.ptx = false;
  // Every candidate of every kernel (the heuristic's excepted: it is the model's own kernel) as a
  // kernel of its own, renamed <kernel>__c<i>, from the source of the round that gives each kernel
  // its i-th candidate. They compile in a few modules at once (NVRTC is thread-safe), beside the
  // model's module, the helpers' and the attention kernels'.
  struct Version {
    size_t tuning = 0, candidate = 0;  // result.kernels[tuning].candidates[candidate]
    std::string function, text;
    CudaLaunch launch;
    int module = -1;
  };
  std::vector<Version> versions;
  size_t rounds = 0;
  for (const KernelTuning& t : result.kernels) rounds = std::max(rounds, t.candidates.size());
  auto lines_of = [](const std::string& code, int first, int last) {
    std::string out;
    int line = 1;
    size_t at = 0;
    while (at < code.size() && line <= last) {
      size_t eol = code.find('\n', at);
      if (eol == std::string::npos) eol = code.size();
      if (line >= first) out += code.substr(at, eol - at) + "\n";
      at = eol + 1;
      ++line;
    }
    return out;
  };
  PhaseTimer generating("max-autotune: generate candidates");
  for (size_t round = 1; round < rounds; ++round) {
    CudaCodegenOptions o = base;
    for (const KernelTuning& t : result.kernels)
      if (round < t.candidates.size()) o.configs[t.kernel] = t.candidates[round].config;
    const GeneratedCuda g = generate_cuda(p, s, o);
    for (size_t j = 0; j < tuned_kernels.size(); ++j) {
      if (round >= result.kernels[j].candidates.size()) continue;
      const size_t k = tuned_kernels[j];
      const GeneratedKernel& gk = g.source.kernels.at(k);
      Version v;
      v.tuning = j;
      v.candidate = round;
      v.function = gk.name + "__c" + std::to_string(round);
      v.text = lines_of(g.source.code, gk.first_line, gk.last_line);
      const size_t at = v.text.find(" " + gk.name + "(");
      if (at != std::string::npos) v.text.replace(at + 1, gk.name.size(), v.function);
      v.launch = g.launch.at(k);
      versions.push_back(std::move(v));
    }
  }
  generating.stop();
  const std::string& code = heuristic.source.code;
  int first_kernel_line = 0;
  for (const GeneratedKernel& gk : heuristic.source.kernels)
    if (!gk.launcher.empty() && (first_kernel_line == 0 || gk.first_line < first_kernel_line)) first_kernel_line = gk.first_line;
  const std::string prelude = first_kernel_line > 1 ? lines_of(code, 1, first_kernel_line - 1) : std::string();
  // As many modules as cores, two candidates or more each (a module's fixed cost, the prelude,
  // is about a third of two candidates').
  const size_t threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  const size_t modules = std::max<size_t>(1, std::min(threads, (versions.size() + 1) / 2));
  std::vector<std::string> sources(modules, prelude);
  for (size_t i = 0; i < versions.size(); ++i) {
    versions[i].module = static_cast<int>(i % modules);
    sources[i % modules] += versions[i].text;
  }
  std::vector<std::future<CudaCompileResult>> compiling;
  auto compile_async = [&](const std::string& src) { return std::async(std::launch::async, [src, co] { return compile_cuda(src, co); }); };
  compiling.push_back(compile_async(code));
  compiling.push_back(compile_async(cuda_helpers_source()));
  const std::string attention_source = heuristic.attention_source;
  if (!attention_source.empty()) compiling.push_back(compile_async(attention_source));
  for (const std::string& src : sources) compiling.push_back(compile_async(src));
  // The model's own modules first: the model runs with the heuristics while the candidates'
  // modules are still compiling.
  auto wait = [&](size_t i) {
    try {
      return compiling[i].get();
    } catch (const std::exception& e) {
      if (i < 2 || (i == 2 && !attention_source.empty())) throw;  // the model's own kernels must compile
      CudaCompileResult failed;
      failed.log = e.what();
      return failed;
    }
  };
  const size_t first_version_module = attention_source.empty() ? 2 : 3;
  PhaseTimer own_compile("max-autotune: the model's own modules compiling (wall time)");
  std::vector<CudaCompileResult> own_compiled;
  for (size_t i = 0; i < first_version_module; ++i) own_compiled.push_back(wait(i));
  own_compile.stop();
  CudaModule module(d, own_compiled[0].cubin), helper_module(d, own_compiled[1].cubin);
  std::unique_ptr<CudaModule> attention;
  if (!attention_source.empty()) attention = std::make_unique<CudaModule>(d, own_compiled[2].cubin);
  result.rounds = static_cast<int>(compiling.size());

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
    void* own = module.function(heuristic.source.kernels[k].launcher);
    result.kernels[j].candidates[0].ms = exe.time_alone(k, own, heuristic.launch[k], alone);
    if (in_place[j]) continue;
    for (const std::string& w : kr.writes) rms[j].push_back(p.buffer(w).dtype == DType::f32 ? exe.rms(w) : 0.0);
  }
  model_run.stop();

  PhaseTimer compile_wall("max-autotune: the candidates' modules compiling (wall time, after the model's run)");
  std::vector<std::string> compile_errors(compiling.size());
  std::vector<std::unique_ptr<CudaModule>> version_modules;
  for (size_t m = 0; m < modules; ++m) {
    const CudaCompileResult c = wait(first_version_module + m);
    if (c.cubin.empty()) compile_errors[first_version_module + m] = c.log;
    version_modules.push_back(c.cubin.empty() ? nullptr : std::make_unique<CudaModule>(d, c.cubin));
  }
  compile_wall.stop();

  // Each candidate alone on the heuristic's buffers: checked against the heuristic kernel's
  // outputs (float32 ones copied on the device and compared there; others downloaded), then timed.
  for (size_t j = 0; j < tuned_kernels.size(); ++j) {
    const size_t k = tuned_kernels[j];
    KernelTuning& t = result.kernels[j];
    const Kernel& kr = s.kernels[k];
    void* own = module.function(heuristic.source.kernels[k].launcher);
    std::vector<Tensor> want;
    std::vector<DeviceBuffer> want_device;
    if (!in_place[j]) {
      PhaseTimer reference("max-autotune: the heuristic kernel's outputs (the candidates' reference)");
      exe.run_alone(k, own, heuristic.launch[k]);  // on its inputs as they are now (a kernel before may update in place)
      for (const std::string& w : kr.writes) {
        const LoopBuffer& b = p.buffer(w);
        const bool f32 = b.dtype == DType::f32;
        want.push_back(f32 ? Tensor() : exe.download(w));
        want_device.emplace_back(d, f32 ? static_cast<size_t>(b.bytes()) : 0);
        if (f32 && b.bytes()) d.copy(want_device.back().ptr(), exe.device_ptr(w), static_cast<size_t>(b.bytes()));
      }
      d.synchronize();
    }
    for (const Version& v : versions) {
      if (v.tuning != j) continue;
      TunedCandidate& c = t.candidates[v.candidate];
      try {
        if (in_place[j]) throw std::runtime_error("not timed: the kernel updates a buffer it reads");
        if (!version_modules[v.module]) throw std::runtime_error("did not compile: " + compile_errors[first_version_module + v.module]);
        void* f = version_modules[v.module]->function(v.function);
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
    if (!in_place[j]) exe.run_alone(k, own, heuristic.launch[k]);  // its buffers as the heuristic left them
  }
  for (KernelTuning& t : result.kernels) {
    size_t best = 0;
    for (size_t i = 1; i < t.candidates.size(); ++i)
      if (t.candidates[i].problem.empty() && t.candidates[i].ms < t.candidates[best].ms) best = i;
    // Keep the heuristic unless another is clearly faster (timing noise is a few percent).
    if (best != 0 && t.candidates[best].ms > 0.97 * t.candidates[0].ms) best = 0;
    t.chosen = best;
    std::ostringstream why;
    why << std::fixed << std::setprecision(2);
    if (best == 0) why << "the heuristic's configuration is the fastest (" << t.candidates.size() << " tried)";
    else why << t.candidates[best].config.text() << ": " << t.candidates[0].ms / t.candidates[best].ms << "x faster than the heuristic's ("
             << t.candidates.size() << " tried)";
    t.why = why.str();
    if (best != 0) tuned.configs[t.kernel] = t.candidates[best].config;
  }
  // The kernels were timed one at a time; the model is what counts: the tuned kernels together
  // must beat the heuristics' whole-model time, else the heuristics stay.
  if (!tuned.configs.empty() && tuned.configs.size() != base.configs.size()) {
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
