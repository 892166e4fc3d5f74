// The Diff tab's comparison with PyTorch: for a Dynamo graph of an opened TORCH_TRACE log, Inductor's
// kernels (from its output code, with the nodes each covers) set against ours for the same graph,
// one row per group of the graph's nodes (frontend/trace_kernel_map.h, KernelMapModel). Choosing a
// row shows the kernel in Inductor's output code and in our source, and asks for its nodes to be
// marked in the explorer (nodesChosen).
#pragma once
#include <QWidget>
#include <memory>

#include "frontend/trace_kernel_map.h"

class QLabel;
class QTableView;

namespace ls {

struct CompileResult;
class CodeView;
class KernelMapModel;

class InductorDiffView : public QWidget {
  Q_OBJECT
 public:
  explicit InductorDiffView(QWidget* parent = nullptr);
  // Compile `c` of trace `t` (kept alive here) against our compile of its Dynamo graph (null: not
  // compiled; the ours side stays empty).
  void setGraph(std::shared_ptr<const TorchTrace> t, const TraceCompile* c, std::shared_ptr<const CompileResult> ours);
  const KernelMap& map() const;
  KernelMapModel* model() const { return model_; }
  QTableView* table() const { return table_; }
  QString summary() const;
  CodeView* inductorCode() const { return inductor_code_; }
  CodeView* ourCode() const { return our_code_; }
  // As clicking row `row`: both sides' first kernels shown, nodesChosen emitted. False if no such row.
  bool chooseRow(int row);
  QString rowDetail() const;  // what the chosen row's verdict line says
  QString shownInductorKernel() const { return shown_inductor_; }
  QString shownOurKernel() const { return shown_ours_; }

 signals:
  void nodesChosen(const QStringList& nodes);

 private:
  bool showRow(int row);  // both sides' first kernels in the texts, nothing emitted
  std::shared_ptr<const TorchTrace> trace_;
  const TraceCompile* compile_ = nullptr;
  std::shared_ptr<const CompileResult> ours_;
  KernelMapModel* model_;
  QLabel* summary_;
  QTableView* table_;
  QLabel* detail_;  // the chosen row's verdict, and how its nodes were found
  QLabel* inductor_title_;
  QLabel* our_title_;
  CodeView* inductor_code_;
  CodeView* our_code_;
  int shown_code_ = -1;  // the output code in inductor_code_
  QString shown_inductor_, shown_ours_;
};

}  // namespace ls
