#include "profile_view.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QHBoxLayout>
#include <QHorizontalBarSeries>
#include <QHorizontalStackedBarSeries>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QVBoxLayout>
#include <QValueAxis>
#include <algorithm>

#include "compile_session.h"

namespace ls {

namespace {
constexpr int kMaxBars = 24;  // the longest kernels; the table has them all

QChart* new_chart(const QString& title) {
  auto* c = new QChart;
  c->setTitle(title);
  c->setAnimationOptions(QChart::NoAnimation);
  c->legend()->setAlignment(Qt::AlignBottom);
  c->setMargins(QMargins(4, 4, 4, 4));
  return c;
}
// Horizontal bars, one row per name, values from 0 to about `max`.
QChart* bar_chart(const QString& title, QAbstractBarSeries* series, const QStringList& names, double max) {
  QChart* c = new_chart(title);
  c->addSeries(series);
  auto* rows = new QBarCategoryAxis;
  rows->append(names);
  auto* values = new QValueAxis;
  values->setRange(0, max * 1.05 + 1e-9);
  values->applyNiceNumbers();
  values->setLabelFormat("%g");
  c->addAxis(rows, Qt::AlignLeft);
  c->addAxis(values, Qt::AlignBottom);
  series->attachAxis(rows);
  series->attachAxis(values);
  return c;
}
}  // namespace

ProfileView::ProfileView(QWidget* parent) : QWidget(parent) {
  op_by_op_ = new CompileSession(this);
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(4, 4, 4, 4);
  auto* row = new QHBoxLayout;
  compare_ = new QLabel(tr("Compile a model to see its profile."), this);
  compare_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  compare_->setWordWrap(true);
  measure_ = new QPushButton(tr("Compare with op by op (fusion off)"), this);
  measure_->setToolTip(tr("Compiles the model again with one kernel per op, as eager PyTorch runs it, and times it"));
  measure_->setEnabled(false);
  row->addWidget(compare_, 1);
  row->addWidget(measure_);
  v->addLayout(row);
  auto* split = new QSplitter(Qt::Horizontal, this);
  times_ = new QChartView(split);
  bandwidth_ = new QChartView(split);
  for (QChartView* c : {times_, bandwidth_}) c->setRenderHint(QPainter::Antialiasing);
  split->addWidget(times_);
  split->addWidget(bandwidth_);
  v->addWidget(split, 1);
  connect(measure_, &QPushButton::clicked, this, &ProfileView::measureOpByOp);
  connect(op_by_op_, &CompileSession::finished, this, [this] {
    const CompileResult* o = op_by_op_->result();
    op_by_op_ms_ = o->run_ms;
    op_by_op_kernels_ = static_cast<int>(o->kernels.size());
    measure_->setEnabled(true);
    redraw();
    emit opByOpDone(true);
  });
  connect(op_by_op_, &CompileSession::failed, this, [this](const QString& stage, const QString& why) {
    compare_->setText(tr("Op by op failed at stage '%1': %2").arg(stage, why));
    measure_->setEnabled(true);
    emit opByOpDone(false);
  });
  redraw();
}

void ProfileView::setResult(std::shared_ptr<const CompileResult> r) {
  if (r != r_) op_by_op_ms_ = 0, op_by_op_kernels_ = 0;
  r_ = std::move(r);
  measure_->setEnabled(r_ && !r_->kernels.empty() && r_->not_run.empty());
  redraw();
}

void ProfileView::measureOpByOp() {
  if (!r_) return;
  PipelineOptions o;
  o.device = r_->device;
  o.train = r_->train;
  o.fusion = false;
  o.reference = false;
  op_by_op_->options = o;
  measure_->setEnabled(false);
  compare_->setText(tr("Compiling and running op by op …"));
  op_by_op_->compileModel(r_->model);
}

QString ProfileView::comparison() const { return compare_->text(); }

void ProfileView::redraw() {
  bars_ = 0;
  if (!r_ || r_->kernels.empty() || !r_->not_run.empty()) {
    times_->setChart(new_chart(r_ && !r_->not_run.empty() ? tr("Not run: %1").arg(QString::fromStdString(r_->not_run))
                                                          : tr("Kernel times")));
    bandwidth_->setChart(new_chart(tr("Achieved bandwidth")));
    return;
  }
  std::vector<const KernelReport*> ks;
  for (const KernelReport& k : r_->kernels) ks.push_back(&k);
  std::stable_sort(ks.begin(), ks.end(), [](auto* a, auto* b) { return a->ms > b->ms; });
  if (ks.size() > static_cast<size_t>(kMaxBars)) ks.resize(kMaxBars);
  std::reverse(ks.begin(), ks.end());  // horizontal bars are drawn bottom up: longest on top
  double total = 0;
  for (const KernelReport& k : r_->kernels) total += k.ms;

  auto* generated = new QBarSet(tr("generated"));
  auto* library = new QBarSet(tr("library call"));
  generated->setColor(QColor("#4c78a8"));
  library->setColor(QColor("#9d9d9d"));
  auto* achieved = new QBarSet(tr("achieved GB/s"));
  achieved->setColor(QColor("#54a24b"));
  QStringList names;
  double max_us = 0, max_gbps = r_->bandwidth_gbps;
  for (const KernelReport* k : ks) {
    names << QString::fromStdString(k->name).left(42);
    const double us = k->ms * 1000.0;
    *generated << (k->kind == KernelKind::extern_call ? 0.0 : us);
    *library << (k->kind == KernelKind::extern_call ? us : 0.0);
    *achieved << k->gbps;
    max_us = std::max(max_us, us);
    max_gbps = std::max(max_gbps, k->gbps);
  }
  bars_ = static_cast<int>(ks.size());

  auto* series = new QHorizontalStackedBarSeries;
  series->append(generated);
  series->append(library);
  times_->setChart(bar_chart(tr("Kernel times (µs), %1 kernel(s), %2 µs in all%3")
                                 .arg(r_->kernels.size())
                                 .arg(total * 1000.0, 0, 'f', 1)
                                 .arg(r_->kernels.size() > ks.size() ? tr(" — the %1 longest").arg(ks.size()) : QString()),
                             series, names, max_us));
  auto* bw = new QHorizontalBarSeries;
  bw->append(achieved);
  bandwidth_->setChart(bar_chart(r_->bandwidth_gbps > 0
                                     ? tr("Achieved GB/s; the device copies at %1 GB/s (measured)").arg(r_->bandwidth_gbps, 0, 'f', 1)
                                     : tr("Achieved GB/s"),
                                 bw, names, max_gbps));

  QString text = tr("<b>Compiled:</b> %1 ms in %2 kernel(s)").arg(r_->run_ms, 0, 'f', 3).arg(r_->kernels.size());
  if (op_by_op_ms_ > 0)
    text += tr(" &nbsp;·&nbsp; <b>op by op</b> (fusion off, as eager runs it): %1 ms in %2 kernel(s) &nbsp;→&nbsp; <b>%3×</b>")
                .arg(op_by_op_ms_, 0, 'f', 3)
                .arg(op_by_op_kernels_)
                .arg(op_by_op_ms_ / std::max(r_->run_ms, 1e-9), 0, 'f', 2);
  compare_->setText(text);
}

}  // namespace ls
