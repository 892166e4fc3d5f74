#include "kernel_map_model.h"

#include <QBrush>
#include <QColor>
#include <QFont>
#include <QStringList>

namespace ls {

namespace {
QString joined(const std::vector<std::string>& v, const QString& sep = ", ") {
  QStringList l;
  for (const auto& s : v) l << QString::fromStdString(s);
  return l.join(sep);
}

// One kernel a line; how its nodes were found where the trace did not name them.
QString kernels(const std::vector<MappedKernel>& ks, bool inductor) {
  if (ks.empty()) return QStringLiteral("—");
  QStringList l;
  for (const MappedKernel& k : ks) {
    QString s = QString::fromStdString(k.name);
    if (k.library && !inductor) s += QObject::tr(" (library)");
    if (!k.via_gradient.empty()) s += QObject::tr(" ↳ by gradient");  // the tooltip says how
    if (!k.via_name.empty()) s += QObject::tr(" ↳ by name");
    l << s;
  }
  return l.join('\n');
}
}  // namespace

void KernelMapModel::setMap(KernelMap m) {
  beginResetModel();
  map_ = std::move(m);
  endResetModel();
}

int KernelMapModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(map_.rows.size()); }

int KernelMapModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant KernelMapModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(map_.rows.size())) return {};
  const KernelMapRow& r = map_.rows[static_cast<size_t>(index.row())];
  const int col = index.column();
  if (role == Qt::DisplayRole) {
    switch (col) {
      case Phase: return QString::fromStdString(r.phase);
      case Nodes: {
        if (r.nodes.empty()) return tr("(no Dynamo node)");
        // Nodes one side fuses with others and the other does not carry a mark.
        QStringList l;
        for (const std::string& n : r.nodes) {
          const bool i = std::count(r.fused_by_inductor_only.begin(), r.fused_by_inductor_only.end(), n) > 0;
          const bool o = std::count(r.fused_by_ours_only.begin(), r.fused_by_ours_only.end(), n) > 0;
          l << QString::fromStdString(n) + (i || o ? QStringLiteral(" ◆") : QString());
        }
        return l.join(", ");
      }
      case Inductor: return kernels(r.inductor, true);
      case Ours: return kernels(r.ours, false);
      case Verdict: return QString::fromStdString(r.verdict);
      case Unmapped: {
        std::vector<std::string> u;
        for (const auto* side : {&r.inductor, &r.ours})
          for (const MappedKernel& k : *side) u.insert(u.end(), k.unmapped.begin(), k.unmapped.end());
        return joined(u);
      }
    }
  }
  if (role == Qt::ToolTipRole) {
    QString tip = QString::fromStdString(r.why);
    if (col == Inductor || col == Ours) tip = data(index, Qt::DisplayRole).toString() + "\n\n" + tip;  // the names whole
    for (const MappedKernel& k : r.inductor) {
      if (!k.via_gradient.empty())
        tip += tr("\n%1: names no Dynamo node; it computes the gradient of an input that %2 use(s)")
                   .arg(QString::fromStdString(k.name), joined(k.via_gradient));
      if (!k.via_name.empty())
        tip += tr("\n%1: the output code names none of its nodes; matched by its name to %2")
                   .arg(QString::fromStdString(k.name), joined(k.via_name));
      if (!k.unmapped.empty() && (col == Inductor || col == Unmapped))  // the verdict's tooltip (the line under the table) stays short
        tip += tr("\n%1 also covers nodes of PyTorch's backward graph: %2").arg(QString::fromStdString(k.name), joined(k.unmapped));
    }
    if (!r.fused_by_inductor_only.empty()) tip += tr("\n◆ Inductor fuses %1; ours does not").arg(joined(r.fused_by_inductor_only, "+"));
    if (!r.fused_by_ours_only.empty()) tip += tr("\n◆ ours fuses %1; Inductor does not").arg(joined(r.fused_by_ours_only, "+"));
    return tip;
  }
  if (role == Qt::BackgroundRole && r.differs()) {
    if (r.verdict == "only Inductor") return QBrush(QColor("#fdecea"));
    if (r.verdict == "only ours") return QBrush(QColor("#e6f4ea"));
    if (r.verdict == "not mapped") return QBrush(QColor("#eeeeee"));
    return QBrush(QColor("#fff3cd"));  // fusion or count differs
  }
  if (role == Qt::ForegroundRole) {
    if (r.differs() && r.verdict != "not mapped") return QBrush(QColor("#1a1a1a"));  // dark text on the light tints, in either theme
    if (r.verdict == "not mapped" || col == Unmapped) return QBrush(QColor("#888"));
  }
  if (role == Qt::FontRole && col == Nodes && (!r.fused_by_inductor_only.empty() || !r.fused_by_ours_only.empty())) {
    QFont f;
    f.setBold(true);
    return f;
  }
  return {};
}

QVariant KernelMapModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Phase: return tr("Phase");
    case Nodes: return tr("Dynamo graph nodes");
    case Inductor: return tr("Inductor (%1 + %2 lib)").arg(map_.inductor_generated).arg(map_.inductor_library);
    case Ours:
      return map_.ours_compiled ? tr("Lowerscope (%1 + %2 lib)").arg(map_.ours_generated).arg(map_.ours_library) : tr("Lowerscope (not compiled)");
    case Verdict: return tr("Comparison");
    case Unmapped: return tr("Inductor's nodes not in the Dynamo graph");
  }
  return {};
}

}  // namespace ls
