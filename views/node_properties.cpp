#include "node_properties.h"

#include <QObject>
#include <QStringList>
#include <algorithm>
#include <map>

#include "pipeline/pipeline.h"
#include "report/diff.h"

namespace ls {

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

QString dims(const Shape& s) { return QString::fromStdString(shape_str(s)); }

QString join(const std::vector<std::string>& v) {
  QStringList s;
  for (const auto& x : v) s << q(x);
  return s.join(", ");
}

// Buffers with their type, as FX annotates values: "buf0: bf16[64, 256]".
QString typed_buffers(const LoopProgram& loops, const std::vector<std::string>& names) {
  QStringList s;
  for (const auto& name : names) {
    const auto b = std::find_if(loops.buffers.begin(), loops.buffers.end(), [&](const LoopBuffer& x) { return x.name == name; });
    s << (b == loops.buffers.end() ? q(name) : q(name + ": " + std::string(dtype_short(b->dtype)) + shape_str(b->shape)));
  }
  return s.join(", ");
}

bool covers(const std::vector<std::string>& kernel_origins, const std::vector<std::string>& node_origins) {
  for (const auto& o : node_origins)
    if (std::find(kernel_origins.begin(), kernel_origins.end(), o) != kernel_origins.end()) return true;
  return false;
}

double total_ms(const CompileResult& r) {
  double t = 0;
  for (const KernelReport& k : r.kernels) t += k.ms;
  return t;
}

// The kernels that cover any of these origins, and the share of the run they took.
void add_kernels(const CompileResult& r, const std::vector<std::string>& origins, Properties& p) {
  QStringList names;
  double ms = 0;
  for (const KernelReport& k : r.kernels)
    if (covers(k.nodes, origins)) {
      names << q(k.name);
      ms += k.ms;
    }
  if (names.isEmpty())
    for (const Kernel& k : r.schedule.kernels)
      if (covers(k.origins, origins)) names << q(k.name);
  if (names.isEmpty()) return;
  p.append({QObject::tr("In kernel(s)"), names.join(", ")});
  const double total = total_ms(r);
  if (total > 0)
    p.append({QObject::tr("Time share"), QObject::tr("%1 % (%2 µs in those kernels)").arg(100.0 * ms / total, 0, 'f', 1).arg(ms * 1000.0, 0, 'f', 2)});
}

}  // namespace

Properties node_properties(const CompileResult& r, const QString& stage, const QString& id) {
  Properties p;
  const std::string key = id.toStdString(), st = stage.toStdString();
  if (const Graph* g = stage_graph(r, st)) {
    const int i = g->find(key);
    if (i < 0) return p;
    const Node& n = g->nodes[i];
    p.append({QObject::tr("Name"), q(n.name)});
    if (n.is_placeholder()) {
      static const char* kinds[] = {"user input", "parameter", "buffer", "constant"};
      p.append({QObject::tr("Op"), QObject::tr("placeholder (%1)").arg(kinds[static_cast<int>(n.input_kind)])});
      if (!n.param_name.empty()) p.append({QObject::tr("Parameter"), q(n.param_name)});
    } else {
      const std::string t = n.target.rfind("torch.ops.", 0) == 0 ? n.target.substr(10) : n.target;
      const size_t dot = t.rfind('.');
      const bool overload = t.find('.') != dot && dot != std::string::npos;  // aten.add.Tensor: op aten.add, overload Tensor
      p.append({QObject::tr("Op"), q(overload ? t.substr(0, dot) : t)});
      if (overload) p.append({QObject::tr("Overload"), q(t.substr(dot + 1))});
      QStringList args;
      for (const Arg& a : n.args) args << q(arg_text(*g, a));
      p.append({QObject::tr("Arguments"), args.join(", ")});
    }
    for (size_t k = 0; k < n.outs.size(); ++k) {
      const TensorMeta& m = n.outs[k];
      const QString which = n.outs.size() > 1 ? QObject::tr("Output %1").arg(k) : QObject::tr("Output");
      p.append({which, q(m.annotation())});
      p.append({which + QObject::tr(" strides"), dims(m.strides)});
      p.append({which + QObject::tr(" device"), q(m.device)});
    }
    if (!n.module_path.empty()) p.append({QObject::tr("Module"), q(n.module_path)});
    if (!n.stack.empty()) p.append({QObject::tr("Source"), q(n.stack)});
    p.append({QObject::tr("Made from"), join(n.origins)});
    if (r.train) p.append({QObject::tr("Phase"), phase_name(n.phase)});
    QStringList users;
    for (int u : g->users(i)) users << q(g->nodes[u].name);
    p.append({QObject::tr("Used by"), users.isEmpty() ? QObject::tr("(output)") : users.join(", ")});
    add_kernels(r, n.origins, p);
    return p;
  }
  for (const Kernel& k : r.schedule.kernels) {
    if (k.name != key) continue;
    p.append({QObject::tr("Kernel"), q(k.name)});
    p.append({QObject::tr("Kind"), k.is_extern ? QObject::tr("library call") : QObject::tr("generated")});
    p.append({QObject::tr("Iteration"), QObject::tr("%1 × %2 (outer × reduction)").arg(k.numel).arg(k.rnumel)});
    p.append({QObject::tr("Reads"), typed_buffers(r.loops, k.reads)});
    p.append({QObject::tr("Writes"), typed_buffers(r.loops, k.writes)});
    if (!k.removed.empty()) p.append({QObject::tr("In registers only"), typed_buffers(r.loops, k.removed)});
    p.append({QObject::tr("Made from"), join(k.origins)});
    for (const KernelReport& rep : r.kernels)
      if (rep.name == k.name) {
        p.append({QObject::tr("How"), q(rep.how)});
        if (!rep.launch.empty()) p.append({QObject::tr("Launch"), q(rep.launch)});
        if (rep.registers) p.append({QObject::tr("Registers"), QString::number(rep.registers)});
        p.append({QObject::tr("Time"), QObject::tr("%1 µs").arg(rep.ms * 1000.0, 0, 'f', 2)});
        const double total = total_ms(r);
        if (total > 0) p.append({QObject::tr("Time share"), QObject::tr("%1 %").arg(100.0 * rep.ms / total, 0, 'f', 1)});
        p.append({QObject::tr("Bytes moved"), QString::number(rep.bytes)});
        p.append({QObject::tr("Achieved"), r.bandwidth_gbps > 0 ? QObject::tr("%1 GB/s (%2 % of %3 GB/s)")
                                                                      .arg(rep.gbps, 0, 'f', 2)
                                                                      .arg(100.0 * rep.gbps / r.bandwidth_gbps, 0, 'f', 1)
                                                                      .arg(r.bandwidth_gbps, 0, 'f', 1)
                                                                : QObject::tr("%1 GB/s").arg(rep.gbps, 0, 'f', 2)});
        p.append({QObject::tr("Source lines"), QObject::tr("%1–%2").arg(rep.first_line).arg(rep.last_line)});
      }
    return p;
  }
  for (size_t i = 0; i < r.loops.nodes.size(); ++i) {
    const LoopNode& n = r.loops.nodes[i];
    if (n.name != key && n.buffer != key) continue;
    static const char* kinds[] = {"pointwise", "reduction", "library call"};
    p.append({QObject::tr("Loop node"), q(n.name)});
    p.append({QObject::tr("Kind"), kinds[static_cast<int>(n.kind)]});
    p.append({QObject::tr("Writes"), typed_buffers(r.loops, {n.buffer})});
    p.append({QObject::tr("Ranges"), dims(n.ranges)});
    if (!n.reduction_ranges.empty()) p.append({QObject::tr("Reduction ranges"), dims(n.reduction_ranges)});
    p.append({QObject::tr("Lowered from"), q(n.graph_node)});
    p.append({QObject::tr("Made from"), join(n.origins)});
    for (const Kernel& k : r.schedule.kernels)
      if (std::find(k.nodes.begin(), k.nodes.end(), static_cast<int>(i)) != k.nodes.end()) p.append({QObject::tr("In kernel"), q(k.name)});
    return p;
  }
  return p;
}

QList<QPair<QString, double>> time_shares(const CompileResult& r, const QString& stage) {
  QList<QPair<QString, double>> out;
  const double total = total_ms(r);
  if (total <= 0) return out;
  auto share = [&](const std::vector<std::string>& origins) {
    double ms = 0;
    for (const KernelReport& k : r.kernels)
      if (covers(k.nodes, origins)) ms += k.ms;
    return ms / total;
  };
  if (const Graph* g = stage_graph(r, stage.toStdString())) {
    for (const Node& n : g->nodes)
      if (!n.is_placeholder()) out.append({q(n.name), share(n.origins)});
    return out;
  }
  for (const KernelReport& k : r.kernels) out.append({q(k.name), k.ms / total});
  for (size_t i = 0; i < r.loops.nodes.size(); ++i)
    for (const Kernel& k : r.schedule.kernels)
      if (std::find(k.nodes.begin(), k.nodes.end(), static_cast<int>(i)) != k.nodes.end())
        for (const KernelReport& rep : r.kernels)
          if (rep.name == k.name) out.append({q(r.loops.nodes[i].name), rep.ms / total});
  return out;
}

}  // namespace ls
