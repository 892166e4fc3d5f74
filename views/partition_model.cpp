#include "partition_model.h"

#include <QLocale>

#include "pipeline/pipeline.h"

namespace ls {
namespace {
const Partition* chosen(const CompileResult* r) {
  return r && r->train && !r->training.partitions.empty() ? &r->training.partition() : nullptr;
}
QString bytes(int64_t b) { return QLocale::c().formattedDataSize(b, 1, QLocale::DataSizeTraditionalFormat); }
}  // namespace

void PartitionModel::setResult(const CompileResult* r) {
  beginResetModel();
  r_ = r;
  endResetModel();
}

int PartitionModel::rowCount(const QModelIndex& parent) const {
  const Partition* p = chosen(r_);
  return parent.isValid() || !p ? 0 : static_cast<int>(p->saved.size());
}

int PartitionModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant PartitionModel::data(const QModelIndex& index, int role) const {
  const Partition* p = chosen(r_);
  if (!p || !index.isValid() || index.row() >= rowCount()) return {};
  const SavedTensor& s = p->saved[index.row()];
  if (role == Qt::UserRole && index.column() == Bytes) return static_cast<qlonglong>(s.bytes);
  if (role == Qt::TextAlignmentRole && index.column() == Bytes) return QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
  switch (index.column()) {
    case Name: return QString::fromStdString(s.name);
    case Op: return QString::fromStdString(s.op);
    case Bytes: {  // with its type, so a bfloat16 model's halved activations read as such
      const int i = p->forward.find(s.name);
      const Node* n = i >= 0 ? &p->forward.nodes[static_cast<size_t>(i)] : nullptr;
      return n && !n->outs.empty() ? bytes(s.bytes) + "  " + QString::fromStdString(n->meta().annotation()) : bytes(s.bytes);
    }
    case Kind: return s.is_input ? tr("input (no extra memory)") : tr("activation");
    case Why: return QString::fromStdString(s.why);
    default: return {};
  }
}

QVariant PartitionModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"Saved tensor", "Op", "Size", "Kind", "Why it is saved"};
  return section < ColumnCount ? QString(names[section]) : QVariant();
}

QString PartitionModel::summary() const {
  if (!chosen(r_)) return tr("Inference: nothing is saved for a backward. Turn on Compile > Training Mode.");
  QStringList parts;
  for (const Partition& p : r_->training.partitions)
    parts << tr("%1%2: %3 saved, %4 (activations %5), %6 recomputed")
                 .arg(&p == chosen(r_) ? "<b>" : "", QString::fromLatin1(partitioner_name(p.partitioner)))
                 .arg(p.saved.size())
                 .arg(bytes(p.saved_bytes), bytes(p.saved_activation_bytes))
                 .arg(p.recomputed.size()) +
                 (&p == chosen(r_) ? "</b>" : "");
  return parts.join(" &nbsp;·&nbsp; ");
}

}  // namespace ls
