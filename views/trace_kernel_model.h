// Inductor's kernels for one Dynamo graph of a TORCH_TRACE log beside ours (map_kernel_rows, from
// frontend/trace_kernel_map.h): kernel, kind, output code, our kernels covering its nodes, the
// nodes it covers.
#pragma once
#include <QAbstractTableModel>
#include <string>
#include <vector>

#include "trace_session.h"

namespace ls {

// The Kernels tab's rows, from the kernel map (map_trace_kernels): each Inductor kernel in
// output-code order, with the Dynamo nodes the map places it on (its origin comments; a backward
// kernel naming none, through the gradient it computes; a C++ kernel without comments, by its
// name) and our kernels of its phase covering any of them; our kernels set against no Inductor
// kernel come last, with an empty Inductor side. `ours` null: not compiled yet, the ours column
// stays empty. `how`, where given, gets one sentence a row on how its nodes were found ("" for
// the origin comments). Test: tests/gui/test_gui.cpp (the trace panel's training step, 4/0).
std::vector<KernelPair> map_kernel_rows(const TraceCompile& c, const CompileResult* ours, std::vector<std::string>* how = nullptr);

class TraceKernelModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Inductor, Kind, Code, Ours, Nodes, ColumnCount };
  using QAbstractTableModel::QAbstractTableModel;
  // `how`: per row, how its nodes were found (map_kernel_rows), shown in the Nodes column's tooltip.
  void setRows(std::vector<KernelPair> rows, std::vector<std::string> how = {});
  const std::vector<KernelPair>& rows() const { return rows_; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  std::vector<KernelPair> rows_;
  std::vector<std::string> how_;
};

}  // namespace ls
