// Training mode: the tensors the chosen partitioner saves between the forward and the backward,
// one row each (name, op, bytes, input or activation, the rule that decided it).
#pragma once
#include <QAbstractTableModel>

namespace ls {
struct CompileResult;

class PartitionModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Name, Op, Bytes, Kind, Why, ColumnCount };
  using QAbstractTableModel::QAbstractTableModel;
  void setResult(const CompileResult* r);
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;
  // "min_cut 4 saved, 1.0 MiB · default 5 saved, 1.2 MiB": both partitioners side by side.
  QString summary() const;

 private:
  const CompileResult* r_ = nullptr;
};
}  // namespace ls
