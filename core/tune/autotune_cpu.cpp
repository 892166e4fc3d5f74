// max-autotune on the CPU: each matrix multiply's cut into blocks (GemmCut: one single-threaded
// BLAS call a block, on the pool's threads, its epilogue on each block) and its GEMM templates
// (codegen/gemm_template.h: generated C++ with the bias and the epilogue inside) timed on the
// model's own operands, as Inductor's CPU max-autotune times its C++ GEMM template's blockings
// against the library call.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <iomanip>
#include <sstream>

#include "compile/cpu_compiler.h"
#include "compile/disk_cache.h"
#include "compile/phase_times.h"
#include "ops/known_ops.h"
#include "tune/autotune.h"

namespace ls {

namespace {

using Clock = std::chrono::steady_clock;

Tensor copy_of(const Tensor& t) {
  Tensor c(t.dtype(), t.shape());
  if (t.nbytes()) std::memcpy(c.data(), t.data(), static_cast<size_t>(t.nbytes()));
  return c;
}

}  // namespace

AutotuneResult autotune_cpu(const LoopProgram& p, const Schedule& s, const std::string& source, CpuExecutable& exe,
                            const std::vector<Tensor>& inputs, std::map<std::string, GemmCut>& chosen, const CompileModule& compile) {
  const auto t0 = Clock::now();
  AutotuneResult result;
  result.cpu = true;
  chosen.clear();
  struct Product {
    size_t k;
    std::vector<GemmCut> cuts;  // the heuristic's first; BLAS cuts, then templates
    std::vector<std::string> checked;  // the buffers a cut must leave as the heuristic's does
    GemmProblem problem;               // as the template takes it (M = 0: no template serves it)
  };
  std::vector<Product> products;
  const int threads = library_threads();
  // The cache key: every product's sizes and candidates (they follow the pool's threads and the
  // CPU's vector width) and the generated code (an epilogue's kernel is timed with its product).
  std::ostringstream key;
  key << "cpu max-autotune, GEMM templates for " << gemm_vector_width() << "-float vectors\n";
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    int64_t M = 0, N = 0, K = 0;
    if (!s.kernels[k].is_extern || !exe.matmul_sizes(k, M, N, K)) continue;
    Product pr{k, gemm_candidate_cuts(M, N, K), s.kernels[k].writes, {}};
    if (compile && exe.gemm_problem(k, pr.problem))
      for (const GemmTemplate& t : gemm_template_candidates(pr.problem, threads)) pr.cuts.push_back(GemmCut::of(t));
    const bool epilogue = k + 1 < s.kernels.size() && s.kernels[k + 1].epilogue;
    if (epilogue) pr.checked.insert(pr.checked.end(), s.kernels[k + 1].writes.begin(), s.kernels[k + 1].writes.end());
    KernelTuning t;
    t.kernel = s.kernels[k].name;
    t.library = true;
    const bool batched = p.nodes.at(s.kernels[k].nodes.at(0)).ext.op == &op::bmm();
    t.form = "matrix multiply " + std::to_string(M) + "x" + std::to_string(K) + " @ " + std::to_string(K) + "x" + std::to_string(N) +
             (batched ? ", batched" : "") + (epilogue ? ", with its epilogue " + s.kernels[k + 1].name : "");
    t.space = pr.cuts.size();
    key << t.kernel << ' ' << t.form;
    for (const GemmCut& c : pr.cuts) key << " | " << c.serialize();
    key << '\n';
    result.kernels.push_back(std::move(t));
    products.push_back(std::move(pr));
  }
  if (products.empty()) return result;
  const std::string key_text = key.str() + source;
  const DiskCache cache(cache_folder("", "autotune"), fnv1a_hex(key_text), ".txt");

  auto label = [](const GemmCut& c, bool heuristic) {
    return (heuristic ? "heuristic: BLAS, " : c.is_template() ? "" : "BLAS, ") + c.text() + (c.is_template() ? " (generated C++)" : "");
  };
  if (cache.has(".tune", key_text)) {
    std::istringstream is(cache.get(".tune"));
    std::string name;
    GemmCut c;
    while (is >> name && GemmCut::parse(is, c)) chosen[name] = c;
    for (size_t i = 0; i < products.size(); ++i) {
      KernelTuning& t = result.kernels[i];
      TunedCandidate h;
      h.label = label(products[i].cuts[0], true);
      t.candidates.push_back(h);
      if (const auto c = chosen.find(t.kernel); c != chosen.end()) {
        TunedCandidate b;
        b.label = label(c->second, false);
        t.candidates.push_back(b);
        t.chosen = 1;
        if (!c->second.is_template()) exe.choose_cut(products[i].k, &c->second);
      }
      t.why = "chosen before (disk cache)";
    }
    result.from_cache = true;
    result.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    return result;
  }

  // Every template candidate of every product, compiled as one module.
  std::unique_ptr<LoadedCode> templates;
  std::string compile_problem;
  std::map<std::pair<size_t, size_t>, std::string> template_names;  // (product, candidate) -> function
  {
    std::ostringstream src;
    src << "typedef __INT64_TYPE__ int64_t;\n";
    for (size_t i = 0; i < products.size(); ++i)
      for (size_t c = 0; c < products[i].cuts.size(); ++c) {
        if (!products[i].cuts[c].is_template()) continue;
        const std::string name = "ls_gemm_" + s.kernels[products[i].k].name + "_" + std::to_string(c);
        src << gemm_template_cpp(name, products[i].problem, products[i].cuts[c].as_template()) << "\n";
        template_names[{i, c}] = name;
      }
    if (!template_names.empty()) {
      PhaseTimer compiling("max-autotune: GEMM templates compiled (CPU)");
      try {
        templates = compile(src.str());
      } catch (const CompileError& e) {
        compile_problem = std::string("the templates did not compile: ") + e.what() + ": " + e.diagnostics.substr(0, 400);
      } catch (const std::exception& e) {
        compile_problem = std::string("the templates did not compile: ") + e.what();
      }
    }
  }

  TimingOptions alone;
  alone.warmup = 1;
  alone.min_runs = 5;
  alone.max_runs = 50;
  alone.budget_ms = 20;
  std::map<size_t, GemmTemplateFn> chosen_templates;  // by product
  for (size_t i = 0; i < products.size(); ++i) {
    PhaseTimer timing("max-autotune: matrix multiplies' cuts and templates timed (CPU)");
    const Product& pr = products[i];
    KernelTuning& t = result.kernels[i];
    // The heuristic's cut is the reference: its outputs (and its epilogue's) kept. It runs for
    // 50 ms first: on the GPU machine's 16 cores, after the templates' compile left them idle, the
    // first candidates timed ran 2-5x slower than the same ones timed later (cores waking up).
    exe.choose_cut(pr.k, nullptr);
    for (const auto w0 = Clock::now(); std::chrono::duration<double, std::milli>(Clock::now() - w0).count() < 50;) exe.run_step_alone(pr.k);
    std::vector<Tensor> want;
    for (const std::string& b : pr.checked) want.push_back(copy_of(exe.buffer(b)));
    TunedCandidate h;
    h.label = label(pr.cuts[0], true);
    h.ms = exe.time_step_alone(pr.k, alone);
    t.candidates.push_back(h);
    std::vector<GemmTemplateFn> fns(pr.cuts.size(), nullptr);
    for (size_t c = 1; c < pr.cuts.size(); ++c) {
      TunedCandidate cand;
      cand.label = label(pr.cuts[c], false);
      try {
        if (pr.cuts[c].is_template()) {
          if (!templates) throw std::runtime_error(compile_problem.empty() ? "not compiled" : compile_problem);
          const std::string& name = template_names.at({i, c});
          fns[c] = reinterpret_cast<GemmTemplateFn>(templates->symbol(name));
          if (!fns[c]) throw std::runtime_error("the module has no " + name);
          exe.choose_template(pr.k, fns[c]);
        } else {
          exe.choose_cut(pr.k, &pr.cuts[c]);
        }
        exe.run_step_alone(pr.k);
        for (size_t b = 0; b < pr.checked.size(); ++b) {
          const Comparison cmp = compare(exe.buffer(pr.checked[b]), want[b]);
          if (!cmp.ok) throw std::runtime_error("other numbers than the heuristic's in " + pr.checked[b] + ": " + cmp.why);
        }
        cand.ms = exe.time_step_alone(pr.k, alone);
      } catch (const std::exception& e) {
        cand.problem = std::string("failed: ") + e.what();
      }
      t.candidates.push_back(std::move(cand));
    }
    // The heuristic timed again after the others, its faster time kept: it is not to lose by
    // having gone first.
    exe.choose_cut(pr.k, nullptr);
    t.candidates[0].ms = std::min(t.candidates[0].ms, exe.time_step_alone(pr.k, alone));
    size_t best = 0;
    for (size_t c = 1; c < t.candidates.size(); ++c)
      if (t.candidates[c].problem.empty() && t.candidates[c].ms < t.candidates[best].ms) best = c;
    if (best != 0 && t.candidates[best].ms > 0.97 * t.candidates[0].ms) best = 0;  // timing noise: a few percent
    t.chosen = best;
    std::ostringstream why;
    why << std::fixed << std::setprecision(2);
    if (best == 0) why << "the heuristic's cut is the fastest (" << t.candidates.size() << " of " << t.space << " tried)";
    else why << pr.cuts[best].text() << ": " << t.candidates[0].ms / t.candidates[best].ms << "x faster than the heuristic's ("
             << t.candidates.size() << " of " << t.space << " tried)";
    t.why = why.str();
    exe.choose_cut(pr.k, nullptr);
    if (best != 0 && pr.cuts[best].is_template()) {
      exe.choose_template(pr.k, fns[best]);
      chosen_templates[i] = fns[best];
    } else if (best != 0) {
      exe.choose_cut(pr.k, &pr.cuts[best]);
    }
    if (best != 0) chosen[t.kernel] = pr.cuts[best];
    exe.run_step_alone(pr.k);  // its buffers as the chosen way leaves them
  }
  // Each product was timed alone; the model is what counts: the tuned multiplies together must
  // beat the heuristics' whole-model time, else the heuristics stay.
  auto choose_all = [&](bool tuned) {
    for (size_t i = 0; i < products.size(); ++i) {
      const auto c = chosen.find(s.kernels[products[i].k].name);
      if (!tuned || c == chosen.end()) exe.choose_cut(products[i].k, nullptr);
      else if (c->second.is_template()) exe.choose_template(products[i].k, chosen_templates.at(i));
      else exe.choose_cut(products[i].k, &c->second);
    }
  };
  if (!chosen.empty()) {
    PhaseTimer checking("max-autotune: the tuned model timed (CPU)");
    TimingOptions whole;
    whole.warmup = 1;
    whole.min_runs = 5;
    whole.max_runs = 50;
    whole.budget_ms = 100;
    whole.budget_ms = 50;
    result.tuned_ms = result.heuristic_ms = 1e300;
    for (int round = 0; round < 2; ++round) {  // alternating, the faster of two each: neither gains by its turn
      choose_all(true);
      result.tuned_ms = std::min(result.tuned_ms, exe.benchmark(inputs, whole).total_ms);
      choose_all(false);
      result.heuristic_ms = std::min(result.heuristic_ms, exe.benchmark(inputs, whole).total_ms);
    }
    if (result.tuned_ms > 0.99 * result.heuristic_ms) {
      for (KernelTuning& t : result.kernels)
        if (t.chosen != 0) {
          t.why += "; kept the heuristic: the tuned multiplies together were not faster";
          t.chosen = 0;
        }
      chosen.clear();
    }
  }
  // The BLAS cuts chosen stay in exe; templates leave with their module (the caller compiles them
  // into the model's source).
  for (size_t i = 0; i < products.size(); ++i) {
    const auto c = chosen.find(s.kernels[products[i].k].name);
    exe.choose_cut(products[i].k, c != chosen.end() && !c->second.is_template() ? &c->second : nullptr);
  }
  std::ostringstream lines;
  for (const auto& [name, c] : chosen) lines << name << ' ' << c.serialize() << '\n';
  cache.put({{".tune", lines.str()}}, key_text);
  result.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return result;
}

}  // namespace ls
