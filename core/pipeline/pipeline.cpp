#include "pipeline/pipeline.h"

#include <chrono>
#include <iomanip>
#include <sstream>

#include "compile/cpu_compiler.h"
#include "exec/executor.h"
#include "interp/reference.h"
#include "loop/inline_pointwise.h"
#include "lower/lower.h"
#include "ops/op_table.h"
#include "passes/decompose.h"
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

  void graph(const std::string& name, const std::string& title, const Graph& g) {
    Stage s;
    s.name = name;
    s.title = title;
    s.kind = Stage::Kind::graph;
    s.text = print_readable(g);
    s.dot = graph_to_dot(g);
    s.ms = last_ms;
    s.nodes = static_cast<int>(g.nodes.size());
    s.ops = op_histogram(g);
    if (!r_.stages.empty() && r_.stages.back().kind == Stage::Kind::graph) s.changed = r_.stages.back().text != s.text;
    r_.stages.push_back(std::move(s));
  }

  void add(Stage s) {
    s.ms = last_ms;
    r_.stages.push_back(std::move(s));
  }

  std::string current;
  double last_ms = 0;

 private:
  CompileResult& r_;
  std::function<bool()> cancelled_;
};

std::string run_table(const CompileResult& r) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(4);
  os << "kernel                                          kind        ms      bytes       GB/s\n";
  for (const KernelReport& k : r.kernels)
    os << std::left << std::setw(48) << k.name << std::setw(10) << k.kind << std::right << std::setw(8) << k.ms
       << std::setw(11) << k.bytes << std::setw(11) << std::setprecision(2) << k.gbps << std::setprecision(4) << '\n';
  os << "\nwhole model: " << r.run_ms << " ms (median)\ncompiled with " << r.compiler << "\n";
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
  return os.str();
}

}  // namespace

const std::vector<std::string>& stage_names() {
  static const std::vector<std::string> n = {"capture", "aten", "core_aten", "prims", "loop_ir", "fused", "source", "asm", "run"};
  return n;
}

const Stage* CompileResult::stage(const std::string& name) const {
  for (const Stage& s : stages)
    if (s.name == name) return &s;
  return nullptr;
}

CompileResult run_pipeline(LoadedModel model, const PipelineOptions& o, const std::function<bool()>& cancelled) {
  CompileResult r;
  r.model = std::move(model);
  Recorder rec(r, cancelled);
  const auto t_compile = Clock::now();
  try {
    if (o.device != "cpu")
      throw std::runtime_error("device '" + o.device + "' is not available in this build (the CUDA backend is not built yet)");
    rec.step("capture", [&] { return 0; });
    rec.graph("capture", "Captured graph (as imported)", r.model.graph);

    r.aten = rec.step("aten", [&] { return normalize_to_aten(r.model.graph); });
    rec.graph("aten", "ATen graph", r.aten);

    r.core_aten = rec.step("core_aten", [&] { return decompose(r.aten, level::core_aten); });
    rec.graph("core_aten", "Core ATen graph", r.core_aten);

    const bool to_prims = o.decompose_to == 0 || o.decompose_to == level::prims;
    if (to_prims) {
      r.prims = rec.step("prims", [&] { return decompose(r.core_aten, level::prims); });
      rec.graph("prims", "prims graph", r.prims);
    }
    const Graph& lowered_from = to_prims ? r.prims : r.core_aten;

    r.loops = rec.step("loop_ir", [&] { return lower_to_loops(lowered_from); });
    {
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
    r.schedule = rec.step("fused", [&] {
      if (o.fusion) inlined = inline_pointwise(r.loops);
      return schedule(r.loops, ScheduleOptions{o.fusion});
    });
    {
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
      s.dot = schedule_to_dot(r.loops, r.schedule);
      s.nodes = static_cast<int>(r.schedule.kernels.size());
      rec.add(std::move(s));
    }

    r.source = rec.step("source", [&] { return generate_cpp(r.loops, r.schedule); });
    {
      Stage s;
      s.name = "source";
      s.title = "Generated C++ (OpenMP)";
      s.kind = Stage::Kind::source;
      s.text = r.source.code;
      s.nodes = static_cast<int>(r.source.kernels.size());
      rec.add(std::move(s));
    }

    rec.current = "run";
    if (cancelled && cancelled()) throw Cancelled{};
    CpuCompileOptions co;
    co.external = o.external_compiler;
    CpuCompileResult compiled = compile_cpp(r.source.code, co);
    r.compiler = compiled.compiler;
    r.compile_log = compiled.log;
    {
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
    r.compile_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_compile).count();
    if (!o.run) return r;

    const auto t_run = Clock::now();
    CpuExecutable exe(r.loops, r.schedule, r.source, *compiled.code);
    const std::vector<Tensor> all_inputs = bind_inputs(lowered_from, r.model.inputs);
    r.outputs = exe.run(all_inputs);
    r.reference_outputs = run_reference(r.aten, r.model.inputs);
    TimingOptions to;
    to.budget_ms = o.timing_budget_ms;
    const Timings t = exe.benchmark(all_inputs, to);
    r.run_ms = t.total_ms;
    for (size_t k = 0; k < r.schedule.kernels.size(); ++k) {
      const Kernel& kr = r.schedule.kernels[k];
      KernelReport rep;
      rep.name = kr.name;
      rep.kind = kr.is_extern ? "extern" : "generated";
      rep.nodes = kr.origins;
      for (int n : kr.nodes) rep.loop_nodes.push_back(r.loops.nodes[n].name);
      rep.numel = kr.numel;
      rep.rnumel = kr.rnumel;
      for (const auto& b : kr.reads) rep.bytes += r.loops.buffer(b).bytes();
      for (const auto& b : kr.writes) rep.bytes += r.loops.buffer(b).bytes();
      rep.ms = t.kernel_ms.at(k);
      rep.gbps = rep.ms > 0 ? rep.bytes / (rep.ms * 1e6) : 0;
      rep.first_line = r.source.kernels[k].first_line;
      rep.last_line = r.source.kernels[k].last_line;
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
      OutputCheck c{"reference interpreter", compare(r.outputs[i], r.reference_outputs.at(i))};
      r.check.ok = r.check.ok && c.cmp.ok;
      if (r.model.expected.empty()) {
        r.check.max_abs_err = std::max(r.check.max_abs_err, c.cmp.max_abs_err);
        r.check.rel_err = std::max(r.check.rel_err, c.cmp.rel_err);
      }
      r.check.reference.push_back(c);
    }
    rec.last_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_run).count();
    Stage s;
    s.name = "run";
    s.title = "Run: kernel times and the check";
    s.kind = Stage::Kind::run;
    s.text = run_table(r);
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

}  // namespace ls
