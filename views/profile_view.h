// The profile of a run: each kernel's time as a bar (generated and library calls in their own
// colours, longest first), its achieved bandwidth against the device's measured one, and the whole
// model run op by op (fusion off: one kernel per op, as eager runs it) against the compiled one.
// Qt Charts; the numbers are the compile record's.
#pragma once
#include <QWidget>
#include <memory>

#include "pipeline/pipeline.h"

class QChartView;
class QLabel;
class QPushButton;

namespace ls {

class CompileSession;

class ProfileView : public QWidget {
  Q_OBJECT
 public:
  explicit ProfileView(QWidget* parent = nullptr);
  void setResult(std::shared_ptr<const CompileResult> r);
  // Compiles and runs the model op by op (fusion off) and sets it beside the compiled run;
  // opByOpDone() follows.
  void measureOpByOp();
  int barCount() const { return bars_; }
  double opByOpMs() const { return op_by_op_ms_; }
  QString comparison() const;

 signals:
  void opByOpDone(bool ok);

 private:
  void redraw();
  std::shared_ptr<const CompileResult> r_;
  CompileSession* op_by_op_;
  QChartView* times_;
  QChartView* bandwidth_;
  QLabel* compare_;
  QPushButton* measure_;
  int bars_ = 0;
  double op_by_op_ms_ = 0;
  int op_by_op_kernels_ = 0;
};

}  // namespace ls
