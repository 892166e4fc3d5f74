#include "report/report.h"

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace ls {

namespace {
nlohmann::json cmp_json(const OutputCheck& c) {
  return {{"against", c.against}, {"max_abs_err", c.cmp.max_abs_err}, {"rel_err", c.cmp.rel_err},
          {"mismatches", c.cmp.mismatches}, {"ok", c.cmp.ok}, {"why", c.cmp.why}};
}
}  // namespace

std::string report_json(const CompileResult& r) {
  using nlohmann::json;
  json j;
  j["model"] = r.model.path;
  j["format"] = r.model.format;
  j["inputs_from"] = r.model.inputs_from;
  j["stages"] = json::array();
  for (const Stage& s : r.stages) {
    json ops = json::object();
    for (const auto& [op, n] : s.ops) ops[op] = n;
    j["stages"].push_back({{"name", s.name}, {"title", s.title}, {"nodes", s.nodes}, {"ops", ops}, {"ms", s.ms},
                           {"changed", s.changed}});
  }
  j["kernels"] = json::array();
  for (const KernelReport& k : r.kernels)
    j["kernels"].push_back({{"name", k.name}, {"kind", kernel_kind_name(k.kind)}, {"phase", k.phase}, {"nodes", k.nodes}, {"loop_nodes", k.loop_nodes},
                            {"numel", k.numel}, {"rnumel", k.rnumel}, {"bytes", k.bytes}, {"ms", k.ms}, {"gbps", k.gbps}, {"host_us", k.host_us},
                            {"how", k.how}, {"launch", k.launch}, {"registers", k.registers}});
  size_t ext = 0;
  for (const Kernel& k : r.schedule.kernels) ext += k.is_extern;
  j["generated_kernels"] = r.schedule.kernels.size() - ext;
  j["extern_kernels"] = ext;
  json fusion = json::array();
  for (const EdgeDecision& e : r.schedule.edges)
    fusion.push_back({{"producer", r.loops.nodes[e.producer].name}, {"consumer", r.loops.nodes[e.consumer].name},
                      {"buffer", e.buffer}, {"fused", e.verdict.ok}, {"reason", e.verdict.reason}});
  j["fusion"] = fusion;
  j["memory"] = {{"peak_bytes_unfused", r.schedule.memory.peak_bytes_unfused},
                 {"peak_bytes", r.schedule.memory.peak_bytes},
                 {"removed", r.schedule.memory.removed}};
  const Tolerance tol = tolerance_for(r.check.precision);
  json check = {{"ok", r.check.ok}, {"max_abs_err", r.check.max_abs_err}, {"rel_err", r.check.rel_err},
                {"tolerance", {{"dtype", dtype_torch(r.check.precision)}, {"rtol", tol.rtol}, {"atol", tol.atol},
                               {"text", tolerance_text(r.check.precision)}}},
                {"outputs", json::array()}, {"reference", json::array()}};
  for (const auto& c : r.check.outputs) check["outputs"].push_back(cmp_json(c));
  for (const auto& c : r.check.reference) check["reference"].push_back(cmp_json(c));
  if (r.train) {
    check["gradients"] = json::array();
    for (const auto& c : r.check.gradients)
      check["gradients"].push_back({{"input", c.input}, {"against", c.against}, {"max_abs_err", c.cmp.max_abs_err},
                                    {"rel_err", c.cmp.rel_err}, {"mismatches", c.cmp.mismatches}, {"ok", c.cmp.ok},
                                    {"why", c.cmp.why}});
    // Each gradient against the reference interpreter run on the joint graph.
    const TrainingRecord& t = r.training;
    for (size_t k = 0; k < t.joint.grad_of.size(); ++k) {
      const size_t i = static_cast<size_t>(t.joint.num_forward_outputs) + k;
      if (i >= r.check.reference.size()) break;
      json c = cmp_json(r.check.reference[i]);
      c["input"] = t.joint.grad_of[k];
      check["gradients"].push_back(c);
    }
    json tr;
    tr["tangents"] = t.joint.tangents;
    tr["gradients_of"] = t.joint.grad_of;
    tr["expanded_for_autodiff"] = t.joint.expanded;
    if (!t.partitions.empty()) tr["chosen_partitioner"] = partitioner_name(t.partition().partitioner);  // none where the joint failed
    tr["partitioners"] = json::object();
    for (const Partition& p : t.partitions) {
      json saved = json::array();
      for (const SavedTensor& s : p.saved)
        saved.push_back({{"name", s.name}, {"op", s.op}, {"bytes", s.bytes}, {"is_input", s.is_input}, {"why", s.why}});
      tr["partitioners"][partitioner_name(p.partitioner)] = {{"saved", saved},
                                                             {"saved_bytes", p.saved_bytes},
                                                             {"saved_activation_bytes", p.saved_activation_bytes},
                                                             {"recomputed", p.recomputed}};
    }
    j["training"] = tr;
    json phases = json::object();
    for (const Kernel& k : r.schedule.kernels) {
      json& ph = phases[phase_name(k.phase)];
      if (ph.is_null()) ph = {{"generated", 0}, {"extern", 0}};
      ph[k.is_extern ? "extern" : "generated"] = ph[k.is_extern ? "extern" : "generated"].get<int>() + 1;
    }
    j["kernels_per_phase"] = phases;
  }
  j["check"] = check;
  j["compiler"] = r.compiler;
  j["compile_ms"] = r.compile_ms;
  for (const PhaseTime& t : r.compile_phases) j["compile_phases"].push_back({{"name", t.name}, {"ms", t.ms}, {"count", t.count}});
  j["run_ms"] = r.run_ms;
  j["bandwidth_gbps"] = r.bandwidth_gbps;
  j["mode"] = mode_name(r.mode);
  if (!r.mode_note.empty()) j["mode_note"] = r.mode_note;
  if (r.launched_ms > 0) j["launched_ms"] = r.launched_ms;
  if (r.host_ms > 0) j["host_ms"] = r.host_ms;
  j["device"] = device_name(r.device);
  if (!r.not_run.empty()) j["not_run"] = r.not_run;
  j["ok"] = r.ok();
  if (!r.error.empty()) j["error"] = {{"stage", r.error_stage}, {"message", r.error}};
  return j.dump(2);
}

void write_dump(const CompileResult& r, const std::string& dir) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream f(fs::path(dir) / name);
    if (!f) throw std::runtime_error(dir + ": cannot write " + name);
    f << text;
  };
  for (size_t i = 0; i < r.stages.size(); ++i) {
    std::ostringstream prefix;
    prefix << std::setw(2) << std::setfill('0') << i << '_' << r.stages[i].name;
    const Stage::Kind k = r.stages[i].kind;
    const bool cuda = r.device == Device::cuda;
    const char* ext = k == Stage::Kind::source ? (cuda ? ".cu" : ".cpp") : k == Stage::Kind::assembly ? (cuda ? ".ptx" : ".s") : ".txt";
    write(prefix.str() + ext, r.stages[i].text);
    if (!r.stages[i].dot.empty()) write(prefix.str() + ".dot", r.stages[i].dot);
  }
  for (const auto& [name, bytes] : r.objects) {
    std::ofstream f(fs::path(dir) / name, std::ios::binary);
    if (!f) throw std::runtime_error(dir + ": cannot write " + name);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  write("report.json", report_json(r));
}

}  // namespace ls
