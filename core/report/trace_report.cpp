#include "report/trace_report.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "frontend/fx_text.h"
#include "frontend/trace_kernel_map.h"

namespace ls {

LoadedModel trace_graph_model(const TraceCompile& c) {
  if (c.dynamo_graph.empty()) throw std::runtime_error("compile [" + c.id() + "] logged no Dynamo graph");
  LoadedModel m;
  m.path = "[" + c.id() + "] " + (c.name.empty() ? "graph" : c.name);
  m.format = "fx-text";
  const std::string text = concrete_graph_text(c.dynamo_graph, c.input_sizes);
  m.graph = import_fx_text(text, "[" + c.id() + "] dynamo_output_graph");
  m.inputs = random_inputs(m.graph);
  m.inputs_from = "random normal (seed 0)";
  // Integer inputs used as indices (a model's token_type_ids buffer): within the sizes they index.
  if (!index_input_bounds(m.graph).empty()) {
    bound_index_inputs(m.graph, m.inputs);
    m.inputs_from += ", index inputs within the sizes they index";
  }
  return m;
}

OurCompile summarize_compile(const CompileResult& r) {
  OurCompile ours;
  ours.attempted = true;
  ours.compile_ms = r.compile_ms;
  auto add = [&](const std::string& name, bool is_extern, const std::vector<std::string>& nodes, const std::string& phase) {
    (is_extern ? ours.library_calls : ours.kernels)++;
    ours.kernel_list.push_back({name, is_extern ? "extern" : "generated", nodes, {}, {}, 0, phase});
  };
  for (const KernelReport& k : r.kernels) add(k.name, k.kind == KernelKind::extern_call, k.nodes, k.phase);
  if (r.kernels.empty())  // compiled, not run (no GPU here): the schedule's kernels
    for (const Kernel& k : r.schedule.kernels) add(k.name, k.is_extern, k.origins, phase_name(k.phase));
  if (!r.error.empty()) ours.error = "stage '" + r.error_stage + "': " + r.error;
  else if (!r.not_run.empty()) ours.not_run = r.not_run;
  else if (!r.check.ok) {
    ours.error = "the output does not match the reference interpreter";
    bool reference = false;
    for (const OutputCheck& x : r.check.reference)
      if (!x.cmp.ok) ours.error += ": " + x.cmp.why, reference = true;
    if (!reference) ours.error = "the output does not match";
    for (const OutputCheck& x : r.check.outputs)  // PyTorch's outputs, where they were given (a capture)
      if (!x.cmp.ok && x.against.rfind("reference interpreter", 0) != 0) ours.error += "; against " + x.against + ": " + x.cmp.why;
  }
  ours.ok = r.ok() && r.not_run.empty();
  return ours;
}

void compile_trace_graphs(TorchTrace& t, const PipelineOptions& o, const std::function<bool(size_t, size_t)>& progress) {
  size_t todo = 0;
  for (const TraceCompile& c : t.compiles) todo += !c.dynamo_graph.empty();
  size_t done = 0;
  for (TraceCompile& c : t.compiles) {
    if (c.dynamo_graph.empty()) continue;
    if (progress && !progress(done, todo)) return;
    ++done;
    OurCompile& ours = c.ours;
    ours = OurCompile{};
    ours.attempted = true;
    ours.graph_text = concrete_graph_text(c.dynamo_graph, c.input_sizes);
    // Where PyTorch compiled a training step (a joint or backward graph), so do we: Inductor's
    // forward and backward kernels are then set against ours.
    PipelineOptions po = o;
    po.train = o.train || c.aot_graphs.count("aot_joint_graph") || c.aot_graphs.count("aot_backward_graph");
    ours.train = po.train;
    try {
      const bool attempted = ours.attempted, train = ours.train;
      const std::string text = ours.graph_text;
      ours = summarize_compile(run_pipeline(trace_graph_model(c), po));
      ours.attempted = attempted, ours.train = train, ours.graph_text = text;
    } catch (const std::exception& e) {  // the graph text does not import (an op we lack with no annotation)
      ours.error = std::string("import: ") + e.what();
    }
  }
  if (progress) progress(done, todo);
}

std::string trace_report_json(const TorchTrace& t) {
  using json = nlohmann::ordered_json;
  json j;
  j["path"] = t.path;
  j["records"] = t.records;
  j["lines"] = t.lines;
  json frames = json::array();
  for (const TraceFrame& f : t.frames) {
    json stack = json::array();
    for (const TraceStackFrame& s : f.stack) stack.push_back({{"file", s.file}, {"line", s.line}, {"name", s.name}});
    frames.push_back({{"frame_id", f.frame_id}, {"name", f.name}, {"compiles", f.compiles}, {"stack", stack}});
  }
  j["frames"] = frames;
  json graphs = json::array();
  for (const TraceCompile& c : t.compiles) {
    json g;
    g["compile_id"] = c.id();
    g["name"] = c.name;
    g["stages"] = c.stages();
    g["restarts"] = c.attempt;
    json ours = {{"attempted", c.ours.attempted}};
    if (c.ours.attempted) {
      ours["check"] = c.ours.ok ? "ok" : !c.ours.not_run.empty() ? "not run" : "failed";
      if (!c.ours.not_run.empty()) ours["not_run"] = c.ours.not_run;
      ours["train"] = c.ours.train;
      ours["kernels"] = c.ours.kernels;
      ours["library_calls"] = c.ours.library_calls;
      ours["compile_ms"] = c.ours.compile_ms;
      if (!c.ours.error.empty()) ours["error"] = c.ours.error;
      json list = json::array();
      for (const TraceKernel& k : c.ours.kernel_list)
        list.push_back({{"name", k.name}, {"kind", k.kind}, {"phase", k.phase}, {"source_nodes", k.source_nodes}});
      ours["kernel_list"] = list;
    }
    g["ours"] = ours;
    g["inductor_kernels"] = c.inductor_kernels();
    json kernels = json::array();
    for (const TraceOutputCode& oc : c.output_code)
      for (const TraceKernel& k : oc.kernels)
        kernels.push_back({{"name", k.name}, {"kind", k.kind}, {"code", oc.aot_id}, {"source_nodes", k.source_nodes}, {"aten", k.aten_ops}});
    g["inductor"] = kernels;
    if (!c.output_code.empty()) g["kernel_map"] = json::parse(kernel_map_json(map_trace_kernels(c, c.ours.kernel_list, c.ours.attempted && !c.ours.kernel_list.empty())));
    if (!c.recompile_reasons.empty()) g["recompile_reasons"] = c.recompile_reasons;
    if (!c.fail_type.empty()) g["fail"] = {{"type", c.fail_type}, {"reason", c.fail_reason}};
    g["compile_time_s"] = c.compile_time_s;
    graphs.push_back(g);
  }
  j["graphs"] = graphs;
  json breaks = json::array();
  for (const TraceGraphBreak& b : t.graph_breaks)
    breaks.push_back({{"reason", b.reason}, {"explanation", b.explanation}, {"file", b.file}, {"line", b.line}, {"code", b.code}, {"count", b.count}, {"compiles", b.compiles}});
  j["graph_breaks"] = breaks;
  json recompiles = json::array();
  for (const TraceRecompile& r : t.recompiles) recompiles.push_back({{"compile_id", r.compile_id}, {"name", r.name}, {"reasons", r.reasons}});
  j["recompiles"] = recompiles;
  json failures = json::array();
  for (const TraceFailure& f : t.failures)
    failures.push_back({{"compile_id", f.compile_id}, {"name", f.name}, {"fail_type", f.fail_type}, {"summary", f.summary}, {"explanation", f.explanation},
                        {"reason", f.reason}, {"user_frame", f.user_frame}});
  j["failures"] = failures;
  json phases = json::array();
  for (const auto& [name, ms] : t.phases) phases.push_back({{"name", name}, {"ms", ms}});
  j["phases"] = phases;
  json warnings = json::array();
  for (const TraceWarning& w : t.warnings) warnings.push_back({{"line", w.line}, {"what", w.what}});
  j["warnings"] = warnings;
  // Invalid UTF-8 in a log (a hostile or cut file) is replaced, not thrown on.
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace ls
