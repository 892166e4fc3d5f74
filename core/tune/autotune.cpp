#include "tune/autotune.h"

#include <memory>
#include <algorithm>
#include <chrono>
#include <iomanip>
#include <sstream>

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
  os << "AUTOTUNE: " << kernels.size() << " kernel(s), " << rounds << " round(s) (one compile and one timed run each), "
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
      else os << std::setprecision(4) << std::setw(10) << c.ms * 1000.0 << " us\n";
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
      t.candidates.push_back({c, 0, ""});
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
  const CudaCompileResult helpers = compile_cuda(cuda_helpers_source(), co);
  CudaModule helper_module(d, helpers.cubin);
  // The attention kernels do not depend on the configurations: compiled once for every round.
  const std::string attention_source = generate_cuda(p, s, base).attention_source;
  std::unique_ptr<CudaModule> attention;
  if (!attention_source.empty()) attention = std::make_unique<CudaModule>(d, compile_cuda(attention_source, co).cubin);
  size_t rounds = 0;
  for (const KernelTuning& t : result.kernels) rounds = std::max(rounds, t.candidates.size());
  std::vector<Tensor> expected;
  double heuristic_total = 0;  // the whole model under the heuristics (round 0)
  TimingOptions timing;
  timing.warmup = 2;
  timing.min_runs = 5;
  timing.max_runs = 50;
  timing.budget_ms = 60;
  for (size_t round = 0; round < rounds; ++round) {
    CudaCodegenOptions o = base;
    for (const KernelTuning& t : result.kernels)
      if (round < t.candidates.size()) o.configs[t.kernel] = t.candidates[round].config;
    auto mark = [&](const std::string& problem) {
      for (KernelTuning& t : result.kernels)
        if (round < t.candidates.size()) t.candidates[round].problem = problem;
    };
    try {
      const GeneratedCuda g = generate_cuda(p, s, o);
      const CudaCompileResult c = compile_cuda(g.source.code, co);
      CudaModule module(d, c.cubin);
      CudaExecutable exe(p, s, g, d, module, helper_module, attention.get());
      const std::vector<Tensor> out = exe.run(inputs);
      if (round == 0) expected = out;
      for (size_t i = 0; i < out.size(); ++i)
        if (out[i].defined() && !compare(out[i], expected.at(i)).ok) throw std::runtime_error("other numbers than the heuristic's");
      const Timings t = exe.benchmark(inputs, timing);
      if (round == 0) heuristic_total = t.total_ms;
      for (size_t j = 0; j < tuned_kernels.size(); ++j)
        if (round < result.kernels[j].candidates.size()) result.kernels[j].candidates[round].ms = t.kernel_ms.at(tuned_kernels[j]);
    } catch (const std::exception& e) {
      if (round == 0) throw;  // the heuristic's own kernels must run
      mark(std::string("failed: ") + e.what());
    }
    ++result.rounds;
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
    const GeneratedCuda g = generate_cuda(p, s, tuned);
    const CudaCompileResult c = compile_cuda(g.source.code, co);
    CudaModule module(d, c.cubin);
    CudaExecutable exe(p, s, g, d, module, helper_module, attention.get());
    exe.run(inputs);
    result.tuned_ms = exe.benchmark(inputs, timing).total_ms;
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
