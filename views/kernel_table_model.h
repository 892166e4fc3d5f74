// Kernels of the last run: name, kind, time, share of the total, bytes, achieved GB/s and its share
// of the device's measured bandwidth, generated or library, nodes.
#pragma once
#include <QAbstractTableModel>

namespace ls {
struct CompileResult;

class KernelTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Name, Kind, Ms, Share, Bytes, GBps, Peak, Nodes, ColumnCount };
  using QAbstractTableModel::QAbstractTableModel;
  void setResult(const CompileResult* r);
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  const CompileResult* r_ = nullptr;
};
}  // namespace ls
