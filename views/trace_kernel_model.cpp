#include "trace_kernel_model.h"

#include <QBrush>
#include <QColor>
#include <QStringList>
#include <algorithm>
#include <map>
#include <tuple>

#include "frontend/trace_kernel_map.h"
#include "pipeline/pipeline.h"
#include "report/trace_report.h"

namespace ls {

namespace {
QString joined(const std::vector<std::string>& v) {
  QStringList l;
  for (const auto& s : v) l << QString::fromStdString(s);
  return l.join(", ");
}

std::string joined_text(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}
}  // namespace

std::vector<KernelPair> map_kernel_rows(const TraceCompile& c, const CompileResult* r, std::vector<std::string>* how) {
  std::vector<TraceKernel> list;
  if (r) list = summarize_compile(*r).kernel_list;
  const KernelMap m = map_trace_kernels(c, list, r != nullptr);
  // Where the map put each Inductor kernel: (output code, line, name) -> (row, kernel).
  std::map<std::tuple<int, int, std::string>, std::pair<size_t, const MappedKernel*>> placed;
  std::vector<std::vector<bool>> used(m.rows.size());
  for (size_t ri = 0; ri < m.rows.size(); ++ri) {
    for (const MappedKernel& k : m.rows[ri].inductor) placed[{k.code_index, k.line, k.name}] = {ri, &k};
    used[ri].assign(m.rows[ri].ours.size(), false);
  }
  auto our_name = [](const MappedKernel& k) { return k.name + (k.library ? " (library)" : ""); };
  std::vector<KernelPair> rows;
  std::vector<std::string> notes;
  for (size_t i = 0; i < c.output_code.size(); ++i) {
    const TraceOutputCode& oc = c.output_code[i];
    std::string code = oc.aot_id;
    if (const size_t u = code.find('_'); u != std::string::npos) code = code.substr(u + 1);  // "0_forward" -> "forward"
    for (const TraceKernel& k : oc.kernels) {
      KernelPair p{k.name, k.kind, code, k.line, static_cast<int>(i), k.source_nodes, {}};
      std::string note;
      if (const auto at = placed.find({static_cast<int>(i), k.line, k.name}); at != placed.end()) {
        const auto ri = at->second.first;
        const auto* mk = at->second.second;  // not a structured binding: Clang 14 cannot capture one in a lambda
        // The Dynamo graph's nodes; a kernel none of whose nodes map keeps the names it gives.
        p.nodes = mk->nodes.empty() ? mk->unmapped : mk->nodes;
        const KernelMapRow& row = m.rows[ri];
        for (size_t j = 0; j < row.ours.size(); ++j)
          if (std::any_of(row.ours[j].nodes.begin(), row.ours[j].nodes.end(),
                          [&](const std::string& n) { return std::count(mk->nodes.begin(), mk->nodes.end(), n) > 0; })) {
            p.ours.push_back(our_name(row.ours[j]));
            used[ri][j] = true;
          }
        if (!mk->via_gradient.empty())
          note = "placed through the gradient it computes (the backward graph's return comments): " + joined_text(mk->via_gradient);
        else if (!mk->via_name.empty())
          note = "placed by its name (the output code gives it no source-node comment): " + joined_text(mk->via_name);
        else if (mk->nodes.empty())
          note = "none of the nodes it names is the Dynamo graph's";
      }
      rows.push_back(std::move(p));
      notes.push_back(std::move(note));
    }
  }
  for (size_t ri = 0; ri < m.rows.size(); ++ri)
    for (size_t j = 0; j < m.rows[ri].ours.size(); ++j)
      if (!used[ri][j]) {
        const MappedKernel& k = m.rows[ri].ours[j];
        rows.push_back({"", "", m.rows[ri].phase, 0, -1, k.nodes.empty() ? k.unmapped : k.nodes, {our_name(k)}});
        notes.emplace_back();
      }
  if (how) *how = std::move(notes);
  return rows;
}

void TraceKernelModel::setRows(std::vector<KernelPair> rows, std::vector<std::string> how) {
  beginResetModel();
  rows_ = std::move(rows);
  how_ = std::move(how);
  how_.resize(rows_.size());
  endResetModel();
}

int TraceKernelModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }

int TraceKernelModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant TraceKernelModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(rows_.size())) return {};
  const KernelPair& p = rows_[static_cast<size_t>(index.row())];
  if (role == Qt::ToolTipRole && index.column() == Nodes && !how_[static_cast<size_t>(index.row())].empty())
    return joined(p.nodes) + "\n" + QString::fromStdString(how_[static_cast<size_t>(index.row())]);
  if (role == Qt::DisplayRole || role == Qt::ToolTipRole) {
    switch (index.column()) {
      case Inductor: return p.inductor.empty() ? QString("—") : QString::fromStdString(p.inductor);
      case Kind: return p.inductor.empty() ? QString() : QString::fromStdString(p.kind == "extern" ? "library call" : p.kind);
      case Code: return QString::fromStdString(p.code);
      case Nodes: return joined(p.nodes);
      case Ours: return p.ours.empty() ? QString("—") : joined(p.ours);
    }
  }
  if (role == Qt::ForegroundRole && ((index.column() == Inductor && p.inductor.empty()) || (index.column() == Ours && p.ours.empty())))
    return QBrush(QColor("#888"));
  return {};
}

QVariant TraceKernelModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Inductor: return tr("Inductor kernel");
    case Kind: return tr("Kind");
    case Code: return tr("Code");
    case Nodes: return tr("Nodes covered");
    case Ours: return tr("Lowerscope kernel(s)");
  }
  return {};
}

}  // namespace ls
