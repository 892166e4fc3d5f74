#include "trace_kernel_model.h"

#include <QBrush>
#include <QColor>
#include <QStringList>

namespace ls {

namespace {
QString joined(const std::vector<std::string>& v) {
  QStringList l;
  for (const auto& s : v) l << QString::fromStdString(s);
  return l.join(", ");
}
}  // namespace

void TraceKernelModel::setRows(std::vector<KernelPair> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

int TraceKernelModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }

int TraceKernelModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant TraceKernelModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(rows_.size())) return {};
  const KernelPair& p = rows_[static_cast<size_t>(index.row())];
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
