// Inductor's kernels for one Dynamo graph of a TORCH_TRACE log beside ours (pair_kernels,
// trace_session.h): kernel, kind, output code, our kernels covering its nodes, the nodes it covers.
#pragma once
#include <QAbstractTableModel>
#include <vector>

#include "trace_session.h"

namespace ls {

class TraceKernelModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Inductor, Kind, Code, Ours, Nodes, ColumnCount };
  using QAbstractTableModel::QAbstractTableModel;
  void setRows(std::vector<KernelPair> rows);
  const std::vector<KernelPair>& rows() const { return rows_; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  std::vector<KernelPair> rows_;
};

}  // namespace ls
