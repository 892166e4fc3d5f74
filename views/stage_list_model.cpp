#include "stage_list_model.h"

#include <QColor>
#include <QFont>

#include "pipeline/pipeline.h"

namespace ls {

void StageListModel::setResult(const CompileResult* r) {
  beginResetModel();
  r_ = r;
  endResetModel();
}

int StageListModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !r_ ? 0 : static_cast<int>(r_->stages.size());
}

QVariant StageListModel::data(const QModelIndex& index, int role) const {
  if (!r_ || !index.isValid() || index.row() >= rowCount()) return {};
  const Stage& s = r_->stages[index.row()];
  const bool reached = s.kind != Stage::Kind::not_reached;
  if (!reached && role == Qt::DisplayRole)
    return QStringLiteral("%1  %2\n%3").arg(index.row() + 1).arg(QString::fromStdString(s.title), s.name == r_->error_stage ? QObject::tr("failed") : QObject::tr("not reached"));
  if (!reached && role == Qt::ForegroundRole) return QVariant(QColor(s.name == r_->error_stage ? QColor(176, 0, 32) : QColor(Qt::gray)));
  switch (role) {
    case Qt::DisplayRole:
      return QStringLiteral("%1  %2\n%3 %4 · %5 ms%6")
          .arg(index.row() + 1)
          .arg(QString::fromStdString(s.title))
          .arg(s.nodes)
          .arg(QString(s.name == "dynamic" ? "size symbol"  // the dynamic-shapes stage counts its symbols
                       : s.kind == Stage::Kind::kernels || s.kind == Stage::Kind::source || s.kind == Stage::Kind::assembly ||
                               s.kind == Stage::Kind::run
                           ? "kernel"
                           : "node") +
               (s.nodes == 1 ? "" : "s"))
          .arg(s.ms, 0, 'f', 2)
          .arg(s.changed ? "" : " · unchanged");
    case Qt::ToolTipRole: return QString::fromStdString(s.name);
    case NameRole: return QString::fromStdString(s.name);
    case Qt::ForegroundRole: return s.changed ? QVariant() : QVariant(QColor(Qt::gray));
    default: return {};
  }
}

int StageListModel::rowOf(const QString& name) const {
  if (!r_) return -1;
  int found = -1;
  for (size_t i = 0; i < r_->stages.size(); ++i) {
    const QString n = QString::fromStdString(r_->stages[i].name);
    if (n == name) return static_cast<int>(i);
    if (n.startsWith(name)) {
      if (found >= 0) return -1;  // ambiguous prefix
      found = static_cast<int>(i);
    }
  }
  return found;
}

}  // namespace ls
