// The Diff tab's Inductor comparison as a table (frontend/trace_kernel_map.h): one row per group of
// the Dynamo graph's nodes, Inductor's kernels for them beside ours, the verdict. Rows where the
// two sides fuse differently, or only one side has kernels, are tinted.
#pragma once
#include <QAbstractTableModel>

#include "frontend/trace_kernel_map.h"

namespace ls {

class KernelMapModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  // Verdict: "same", "fusion differs", ... (its sentence in the tooltip and under the table).
  enum Column { Phase, Nodes, Verdict, Inductor, Ours, Unmapped, ColumnCount };
  using QAbstractTableModel::QAbstractTableModel;
  void setMap(KernelMap m);
  const KernelMap& map() const { return map_; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  KernelMap map_;
};

}  // namespace ls
