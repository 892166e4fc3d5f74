// The CPU's kept programs: the compiled code of one compile, run again on other inputs.
#include "backend/cpu/cpu_programs.h"

#include <chrono>
#include <map>

#include "exec/executor.h"
#include "interp/reference.h"

namespace ls {
namespace {

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

// A dynamic-shapes compile kept to run again: one compiled template, run at any sizes its guards
// admit. A new size costs the front half (milliseconds) and the check that its code is the
// template's; sizes seen before cost nothing more. max-autotune's cuts of the matrix multiplies,
// tuned at the traced sizes, are kept at every size (a cut's blocks follow the product's sizes).
class DynamicCpuProgram final : public CompiledProgram {
 public:
  DynamicCpuProgram(const CompileResult& r, const PipelineOptions& o, FrontHalf front_half, const Graph& lowered_from,
                    std::unique_ptr<LoadedCode> code)
      : aten_(r.aten), o_(o), front_half_(std::move(front_half)), plan_(r.dynamic), code_(std::move(code)), cuts_(r.gemm_cuts) {
    o_.keep_program = false;
    o_.on_capture = nullptr;
    auto at = std::make_unique<AtSizes>();
    at->lowered = lowered_from;
    at->loops = r.loops;
    at->schedule = r.schedule;
    at->source = r.source;
    const std::vector<int64_t> v = plan_.values_of(plan_.traced, nullptr);
    at->exe = std::make_unique<CpuExecutable>(at->loops, at->schedule, at->source, *code_, cpu_sizes_arg(v));
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
      const auto t0 = std::chrono::steady_clock::now();
      AtNewSizes n = front_half_at(front_half_, aten_, shapes, o_, plan_, v);
      auto at = std::make_unique<AtSizes>();
      at->lowered = std::move(n.lowered);
      at->loops = std::move(n.r.loops);
      at->schedule = std::move(n.r.schedule);
      at->source = std::move(n.r.source);
      at->exe = std::make_unique<CpuExecutable>(at->loops, at->schedule, at->source, *code_, cpu_sizes_arg(v));
      const int kept = keep_cuts(*at);
      it = at_.emplace(v, std::move(at)).first;
      last_note = new_sizes_note(plan_, v, t0, "kernels");
      if (kept) last_note += "; max-autotune's cuts of " + std::to_string(kept) + " matrix multipl" + (kept == 1 ? "y" : "ies") + " kept";
    } else {
      last_note = "sizes " + sizes_text(plan_, v) + " seen before: the compiled kernels reused";
    }
    return it->second->exe->run(bind_inputs(it->second->lowered, user_inputs));
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
  FrontHalf front_half_;
  SizeGeneric plan_;
  std::unique_ptr<LoadedCode> code_;
  std::map<std::string, GemmCut> cuts_;
  std::map<std::vector<int64_t>, std::unique_ptr<AtSizes>> at_;
};

}  // namespace

std::shared_ptr<CompiledProgram> cpu_program(const CompileResult& r, const Graph& lowered_from, std::unique_ptr<LoadedCode> code) {
  return std::make_shared<CpuProgram>(lowered_from, r, std::move(code));
}

std::shared_ptr<CompiledProgram> dynamic_cpu_program(const CompileResult& r, const PipelineOptions& o, FrontHalf front_half,
                                                     const Graph& lowered_from, std::unique_ptr<LoadedCode> code) {
  return std::make_shared<DynamicCpuProgram>(r, o, std::move(front_half), lowered_from, std::move(code));
}

std::vector<int64_t> cpu_sizes_arg(std::vector<int64_t> v) {
  if (v.empty()) v.push_back(0);  // the kernels take the array even where no size is a symbol
  return v;
}

}  // namespace ls
