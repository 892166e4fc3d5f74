#include "report/capture_report.h"

#include <nlohmann/json.hpp>

#include "report/trace_report.h"

namespace ls {

CaptureCompile compile_capture_graph(const Capture& c, const CaptureGraph& g, const PipelineOptions& o) {
  CaptureCompile out;
  PipelineOptions po = o;
  po.train = o.train || g.train;  // as PyTorch did: AOTAutograd made a training graph
  try {
    LoadedModel m = capture_graph_model(c, g);
    out.inputs_from = m.inputs_from;
    out.expected_from = m.expected_from;
    const bool expected = !m.expected.empty();
    const CompileResult r = run_pipeline(std::move(m), po);
    out.ours = summarize_compile(r);
    if (expected && r.error.empty() && r.not_run.empty()) {
      out.against_pytorch = true;
      out.pytorch_ok = !r.check.outputs.empty();
      for (const OutputCheck& x : r.check.outputs)
        if (x.against.rfind("reference interpreter", 0) != 0) out.pytorch_ok = out.pytorch_ok && x.cmp.ok;
    }
  } catch (const std::exception& e) {  // the text does not import, an input file is bad
    out.ours = OurCompile{};
    out.ours.attempted = true;
    out.ours.error = std::string("load: ") + e.what();
  }
  out.ours.train = po.train;
  return out;
}

std::vector<CaptureCompile> compile_capture_graphs(const Capture& c, const PipelineOptions& o, TorchTrace* t,
                                                   const std::function<bool(size_t, size_t)>& progress) {
  std::vector<CaptureCompile> out;
  for (size_t i = 0; i < c.graphs.size(); ++i) {
    if (progress && !progress(i, c.graphs.size())) return out;
    out.push_back(compile_capture_graph(c, c.graphs[i], o));
    if (t && i < t->compiles.size()) {
      const std::string text = t->compiles[i].ours.graph_text;
      t->compiles[i].ours = out.back().ours;
      t->compiles[i].ours.graph_text = text;
    }
  }
  if (progress) progress(c.graphs.size(), c.graphs.size());
  return out;
}

std::string capture_report_json(const Capture& c, const std::vector<CaptureCompile>& compiled) {
  using json = nlohmann::ordered_json;
  json j;
  j["path"] = c.path;
  j["torch_version"] = c.torch_version;
  json graphs = json::array();
  for (size_t i = 0; i < c.graphs.size(); ++i) {
    const CaptureGraph& g = c.graphs[i];
    json x;
    x["index"] = g.index;
    x["file"] = g.file;
    x["compile_id"] = g.compile_id;
    x["name"] = g.name;
    x["source"] = g.source;
    x["train"] = g.train;
    json inputs = json::array();
    for (const CaptureInput& in : g.inputs) {
      json d = {{"name", in.name}, {"kind", in.kind}};
      if (in.kind == "tensor") d["shape"] = in.shape, d["dtype"] = in.dtype, d["file"] = in.file;
      else d["value"] = in.value;
      inputs.push_back(d);
    }
    x["inputs"] = inputs;
    x["guards"] = !g.guards.empty();
    x["recompile_reasons"] = g.recompile_reasons;
    if (!g.error.empty()) x["error"] = g.error;
    if (i < compiled.size()) {
      const CaptureCompile& cc = compiled[i];
      json ours;
      ours["check"] = cc.ours.ok ? "ok" : !cc.ours.not_run.empty() ? "not run" : "failed";
      ours["against_pytorch"] = cc.against_pytorch ? (cc.pytorch_ok ? "ok" : "failed") : "not compared";
      ours["train"] = cc.ours.train;
      ours["kernels"] = cc.ours.kernels;
      ours["library_calls"] = cc.ours.library_calls;
      ours["compile_ms"] = cc.ours.compile_ms;
      ours["inputs_from"] = cc.inputs_from;
      ours["expected_from"] = cc.expected_from;
      if (!cc.ours.not_run.empty()) ours["not_run"] = cc.ours.not_run;
      if (!cc.ours.error.empty()) ours["error"] = cc.ours.error;
      json list = json::array();
      for (const TraceKernel& k : cc.ours.kernel_list) list.push_back({{"name", k.name}, {"kind", k.kind}, {"source_nodes", k.source_nodes}});
      ours["kernel_list"] = list;
      x["ours"] = ours;
    }
    graphs.push_back(x);
  }
  j["graphs"] = graphs;
  json breaks = json::array();
  for (const CaptureGraphBreak& b : c.graph_breaks)
    breaks.push_back({{"compile_id", b.compile_id}, {"user_frame", b.user_frame}, {"reason", b.reason}, {"explanation", b.explanation}});
  j["graph_breaks"] = breaks;
  json failures = json::array();
  for (const CaptureFailure& f : c.failures)
    failures.push_back({{"compile_id", f.compile_id}, {"name", f.name}, {"fail_type", f.fail_type}, {"reason", f.reason}, {"user_frame", f.user_frame}});
  j["failures"] = failures;
  j["warnings"] = c.warnings;
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace ls
