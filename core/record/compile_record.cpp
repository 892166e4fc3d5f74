#include "record/compile_record.h"

#include <iomanip>
#include <sstream>

#include "ops/print.h"
#include "record/stage_log.h"

namespace ls {

const char* kernel_kind_name(KernelKind k) { return k == KernelKind::extern_call ? "extern" : "generated"; }

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::reduce_overhead: return "reduce-overhead";
    case Mode::max_autotune: return "max-autotune";
    case Mode::default_mode: break;
  }
  return "default";
}

Mode parse_mode(std::string_view name) {
  for (Mode m : {Mode::default_mode, Mode::reduce_overhead, Mode::max_autotune})
    if (name == mode_name(m)) return m;
  throw std::invalid_argument("unknown mode '" + std::string(name) + "' (default, reduce-overhead or max-autotune)");
}

const Stage* CompileResult::stage(const std::string& name) const {
  for (const Stage& s : stages)
    if (s.name == name) return &s;
  return nullptr;
}

const Graph* stage_graph(const CompileResult& r, const std::string& stage) {
  if (r.train && !r.training.partitions.empty()) {
    if (stage == "joint") return &r.training.joint.graph;
    if (stage == "forward") return &r.training.partition().forward;
    if (stage == "backward") return &r.training.partition().backward;
  }
  if (stage == "capture") return &r.model.graph;
  if (stage == "aten") return &r.aten;
  if (stage == "core_aten") return &r.core_aten;
  if (stage == "prims") return &r.prims;
  return nullptr;
}

std::vector<Tensor> tangent_values(const JointGraph& j) {
  std::vector<Tensor> v;
  for (size_t k = 0; k < j.tangents.size(); ++k) {
    const TensorMeta& m = j.graph.nodes.at(j.graph.find(j.tangents[k])).meta();
    Tensor t(m.dtype, m.shape);
    if (j.tangent_of[k] == 0)
      for (int64_t i = 0; i < t.numel(); ++i) t.set(i, 1.0);
    v.push_back(t);
  }
  return v;
}

std::string phase_table(const std::vector<PhaseTime>& phases) {
  if (phases.empty()) return {};
  std::ostringstream os;
  os << "compile time by phase (summed over threads; phases of one compile overlap):\n" << std::fixed << std::setprecision(1);
  for (const PhaseTime& t : phases)
    os << "  " << std::setw(9) << t.ms << " ms  " << t.name << (t.count > 1 ? " (x" + std::to_string(t.count) + ")" : "") << "\n";
  return os.str();
}

void StageLog::enter(const std::string& name) {
  if (cancelled_ && cancelled_()) throw Cancelled{};
  current = name;
}

void StageLog::graph(const std::string& name, const std::string& title, const Graph& g, const DotMarks& marks,
                     const std::string& note) {
  if (!recording) return;
  Stage s;
  s.name = name;
  s.title = title;
  s.kind = Stage::Kind::graph;
  s.ms = last_ms;
  s.nodes = static_cast<int>(g.nodes.size());
  s.ops = op_histogram(g);
  // Changed: the text differs from the graph stage's before, told without writing it.
  const uint64_t h = print_hash(g, note);
  if (!r_.stages.empty() && r_.stages.back().kind == Stage::Kind::graph) s.changed = h != last_print_hash_;
  last_print_hash_ = h;
  if (text) {
    s.text = print_readable(g) + note;
    s.dot = graph_to_dot(g, marks);
  }
  r_.stages.push_back(std::move(s));
}

void StageLog::add(Stage s) {
  if (!recording) return;
  s.ms = last_ms;
  r_.stages.push_back(std::move(s));
}

}  // namespace ls
