#include "trace_panel.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QHorizontalBarSeries>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <QValueAxis>
#include <algorithm>
#include <map>
#include <set>

#include "code_view.h"
#include "pipeline/pipeline.h"
#include "trace_kernel_model.h"
#include "trace_session.h"

namespace ls {

namespace {
const QColor kOk("#1e7e34"), kWarn("#a05a00"), kBad("#b00");
constexpr int kMaxGuardLines = 400;  // a guard tree can be long; the Guards tab has it all

QString q(const std::string& s) { return QString::fromStdString(s); }

QString joined(const std::vector<std::string>& v, const QString& sep = ", ") {
  QStringList l;
  for (const auto& s : v) l << q(s);
  return l.join(sep);
}

// "/home/u/make_trace.py" -> "make_trace.py" (the full path is in the tooltip).
QString short_file(const std::string& f) { return QFileInfo(q(f)).fileName(); }

QString stack_text(const std::vector<TraceStackFrame>& stack) {
  QStringList l;
  for (const TraceStackFrame& s : stack)
    l << QString("%1:%2 in %3%4").arg(q(s.file)).arg(s.line).arg(q(s.name), s.code.empty() ? QString() : "\n    " + q(s.code));
  return l.join("\n");
}

// "aot_forward_graph" -> "AOT forward graph", for the Graphs tab's chooser.
QString artifact_title(const std::string& kind) {
  QString t = q(kind);
  t.replace('_', ' ');
  if (t.startsWith("aot ")) t = "AOT " + t.mid(4);
  return t;
}
}  // namespace

TracePanel::TracePanel(TraceSession* session, QWidget* parent) : QWidget(parent), session_(session) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(4, 4, 4, 4);
  auto* bar = new QHBoxLayout;
  status_ = new QLabel(tr("TORCH_TRACE: open a log with File > Open Trace"), this);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  status_->setWordWrap(true);
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 100);
  progress_->setMaximumWidth(140);
  progress_->setMaximumHeight(14);
  progress_->hide();
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->hide();
  compile_all_ = new QPushButton(tr("Compile all"), this);
  compile_all_->setToolTip(tr("Compile every Dynamo graph of the trace with Lowerscope and check it against the reference interpreter"));
  compile_all_->setEnabled(false);
  bar->addWidget(status_, 1);
  bar->addWidget(progress_);
  bar->addWidget(cancel_);
  bar->addWidget(compile_all_);
  v->addLayout(bar);

  auto* split = new QSplitter(Qt::Vertical, this);
  log_ = new QTreeWidget(split);
  log_->setHeaderLabels({tr("Trace"), tr("Why compiled / detail"), tr("Inductor"), tr("Lowerscope"), tr("Check")});
  log_->header()->setStretchLastSection(false);
  log_->setColumnWidth(0, 215);
  log_->setColumnWidth(1, 175);
  log_->setColumnWidth(2, 68);
  log_->setColumnWidth(3, 78);
  log_->setColumnWidth(4, 40);
  log_->setUniformRowHeights(true);

  details_ = new QTabWidget(split);
  details_->setDocumentMode(true);
  auto* kw = new QWidget(details_);
  auto* kv = new QVBoxLayout(kw);
  kv->setContentsMargins(0, 2, 0, 0);
  kernel_summary_ = new QLabel(tr("Choose a graph above."), kw);
  kernel_summary_->setWordWrap(true);
  kernel_summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  kv->addWidget(kernel_summary_);
  kernels_model_ = new TraceKernelModel(this);
  kernels_ = new QTableView(kw);
  kernels_->setModel(kernels_model_);
  kernels_->setSelectionBehavior(QAbstractItemView::SelectRows);
  kernels_->setSelectionMode(QAbstractItemView::SingleSelection);
  kernels_->horizontalHeader()->setStretchLastSection(true);
  kernels_->verticalHeader()->hide();
  kernels_->setWordWrap(false);
  kernels_->verticalHeader()->setDefaultSectionSize(kernels_->fontMetrics().height() + 6);
  kernels_->setToolTip(tr("Click: mark the kernel's nodes in the explorer and its lines in the output code; double-click: show the code"));
  kv->addWidget(kernels_, 1);
  details_->addTab(kw, tr("Kernels"));

  auto* cw = new QWidget(details_);
  auto* cv = new QVBoxLayout(cw);
  cv->setContentsMargins(0, 2, 0, 0);
  code_kind_ = new QComboBox(cw);
  cv->addWidget(code_kind_);
  output_code_ = new CodeView(cw);
  cv->addWidget(output_code_, 1);
  details_->addTab(cw, tr("Output code"));

  auto* gw = new QWidget(details_);
  auto* gv = new QVBoxLayout(gw);
  gv->setContentsMargins(0, 2, 0, 0);
  graph_kind_ = new QComboBox(gw);
  gv->addWidget(graph_kind_);
  graph_text_ = new CodeView(gw);
  gv->addWidget(graph_text_, 1);
  details_->addTab(gw, tr("Graphs"));

  guards_ = new CodeView(details_);
  details_->addTab(guards_, tr("Guards"));

  phases_ = new QChartView(details_);
  phases_->setRenderHint(QPainter::Antialiasing);
  phases_->setMinimumHeight(120);
  details_->addTab(phases_, tr("Compile time"));

  split->addWidget(log_);
  split->addWidget(details_);
  split->setSizes({420, 330});
  v->addWidget(split, 1);

  connect(cancel_, &QPushButton::clicked, session_, &TraceSession::cancel);
  connect(compile_all_, &QPushButton::clicked, this, &TracePanel::compileAllRequested);
  connect(session_, &TraceSession::compiling, this, [this](int done, int total) {
    compile_all_->setEnabled(false);
    progress_->show();
    cancel_->show();
    progress_->setValue(total > 0 ? 100 * done / total : 0);
    status_->setText(tr("Compiling graph %1 of %2 with Lowerscope …").arg(std::min(done + 1, total)).arg(total));
  });
  connect(session_, &TraceSession::compiledAll, this, [this] {
    progress_->hide();
    cancel_->hide();
    compile_all_->setEnabled(true);
    const auto t = session_->trace();
    int ok = 0, attempted = 0, graphs = 0;
    for (const TraceCompile& c : t->compiles) {
      graphs += !c.dynamo_graph.empty();
      if (!c.ours.attempted) continue;
      ++attempted;
      ok += c.ours.ok;
      Ours o;
      o.generated = c.ours.kernels;
      o.library = c.ours.library_calls;
      o.check = c.ours.ok ? tr("ok") : !c.ours.not_run.empty() ? tr("not run") : tr("FAILED");
      o.why = q(!c.ours.error.empty() ? c.ours.error : c.ours.not_run);
      const QString id = q(c.id());
      ours_[id] = o;
      showOurs(id, o);
    }
    status_->setText(tr("Lowerscope compiled %1 of %2 Dynamo graph(s); %3 passed the check").arg(attempted).arg(graphs).arg(ok));
    if (!current_.isEmpty()) refreshOurs(current_);
  });
  connect(session_, &TraceSession::started, this, &TracePanel::onStarted);
  connect(session_, &TraceSession::loaded, this, &TracePanel::onLoaded);
  connect(session_, &TraceSession::failed, this, &TracePanel::onFailed);
  connect(session_, &TraceSession::progress, this, [this](qint64 done, qint64 total) {
    progress_->setValue(total > 0 ? static_cast<int>(100 * done / total) : 0);
    status_->setText(tr("Reading %1 … %2 of %3 MB").arg(QFileInfo(session_->path()).fileName())
                         .arg(done / 1048576.0, 0, 'f', 1).arg(total / 1048576.0, 0, 'f', 1));
  });
  connect(log_, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem* item) {
    // A row or any row under it that names a compile chooses that compile's graph.
    for (; item; item = item->parent()) {
      const QString id = item->data(0, CompileIdRole).toString();
      if (id.isEmpty()) continue;
      const auto t = session_->trace();
      const TraceCompile* c = t ? t->compile(id.toStdString()) : nullptr;
      if (!c) return;
      current_ = id;
      showDetails(c);
      if (!c->dynamo_graph.empty()) emit graphChosen(id);
      return;
    }
  });
  connect(code_kind_, &QComboBox::currentIndexChanged, this, [this](int i) { showCode(i, 0); });
  connect(graph_kind_, &QComboBox::currentIndexChanged, this, [this](int) {
    const auto t = session_->trace();
    const TraceCompile* c = t ? t->compile(current_.toStdString()) : nullptr;
    if (!c) return;
    const std::string kind = graph_kind_->currentData().toString().toStdString();
    std::string text = kind == "dynamo_output_graph" ? c->dynamo_graph : "";
    if (c->aot_graphs.count(kind)) text = c->aot_graphs.at(kind);
    if (c->inductor_graphs.count(kind)) text = c->inductor_graphs.at(kind);
    graph_text_->showText(q(text), CodeView::Language::Python);
  });
  connect(kernels_, &QTableView::clicked, this, [this](const QModelIndex& i) {
    const KernelPair& p = kernels_model_->rows().at(static_cast<size_t>(i.row()));
    if (p.code_index >= 0) {
      const QSignalBlocker block(code_kind_);
      code_kind_->setCurrentIndex(p.code_index);
      showCode(p.code_index, p.line);
    }
    QStringList nodes;
    for (const auto& n : p.nodes) nodes << q(n);
    if (!nodes.isEmpty()) emit nodesChosen(nodes);
  });
  connect(kernels_, &QTableView::doubleClicked, this, [this](const QModelIndex& i) {
    if (kernels_model_->rows().at(static_cast<size_t>(i.row())).code_index >= 0) details_->setCurrentIndex(1);
  });
}

QString TracePanel::status() const { return status_->text(); }
QString TracePanel::kernelSummary() const { return kernel_summary_->text(); }

QTreeWidgetItem* TracePanel::addSection(const QString& kind, const QString& title) {
  auto* s = new QTreeWidgetItem(log_, {title});
  s->setData(0, KindRole, kind);
  QFont f = s->font(0);
  f.setBold(true);
  s->setFont(0, f);
  s->setFirstColumnSpanned(false);
  return s;
}

QTreeWidgetItem* TracePanel::section(const QString& kind) const {
  for (int i = 0; i < log_->topLevelItemCount(); ++i)
    if (log_->topLevelItem(i)->data(0, KindRole).toString() == kind) return log_->topLevelItem(i);
  return nullptr;
}

QTreeWidgetItem* TracePanel::graphItem(const QString& id) const {
  for (QTreeWidgetItemIterator it(log_); *it; ++it)
    if ((*it)->data(0, KindRole).toString() == "graph" && (*it)->data(0, CompileIdRole).toString() == id) return *it;
  return nullptr;
}

bool TracePanel::chooseGraph(const QString& id) {
  QTreeWidgetItem* item = graphItem(id);
  if (!item) return false;
  if (log_->currentItem() == item) emit log_->currentItemChanged(item, item);
  else log_->setCurrentItem(item);
  log_->scrollToItem(item);
  return true;
}

void TracePanel::onStarted(const QString& path) {
  log_->clear();
  ours_.clear();
  current_.clear();
  kernels_model_->setRows({});
  code_kind_->clear();
  graph_kind_->clear();
  output_code_->showText("", CodeView::Language::Plain);
  output_code_->setProperty("shown", 0);
  graph_text_->showText("", CodeView::Language::Plain);
  guards_->showText("", CodeView::Language::Plain);
  phases_->setChart(new QChart);
  kernel_summary_->setText(tr("Choose a graph above."));
  status_->setStyleSheet({});
  status_->setText(tr("Reading %1 …").arg(QFileInfo(path).fileName()));
  compile_all_->setEnabled(false);
  progress_->setValue(0);
  progress_->show();
  cancel_->show();
}

void TracePanel::onFailed(const QString& why) {
  compile_all_->setEnabled(false);
  progress_->hide();
  cancel_->hide();
  status_->setStyleSheet("color: #b00");
  status_->setText(tr("Cannot read the trace: %1").arg(why));
  status_->setToolTip(why);
}

void TracePanel::onLoaded() {
  progress_->hide();
  cancel_->hide();
  compile_all_->setEnabled(true);
  const auto t = session_->trace();
  if (!t) return;
  log_->clear();
  status_->setStyleSheet({});
  int graphs = 0;
  for (const TraceCompile& c : t->compiles) graphs += !c.dynamo_graph.empty();
  status_->setText(tr("%1: %2 frame(s), %3 compile(s), %4 Dynamo graph(s), %5 graph break(s), %6 recompile(s), %7 failure(s)%8")
                       .arg(QFileInfo(q(t->path)).fileName())
                       .arg(t->frames.size())
                       .arg(t->compiles.size())
                       .arg(graphs)
                       .arg(t->graph_breaks.size())
                       .arg(t->recompiles.size())
                       .arg(t->failures.size())
                       .arg(t->warnings.empty() ? QString() : tr(", %1 warning(s)").arg(t->warnings.size())));
  status_->setToolTip(q(t->path));

  // Frames, each with its compile ids; a compile's row is its Dynamo graph.
  std::map<std::string, std::string> recompiled_because;
  for (const TraceRecompile& r : t->recompiles)
    if (!r.reasons.empty() && !recompiled_because.count(r.compile_id)) recompiled_because[r.compile_id] = r.reasons.front();
  auto add_graph = [&](QTreeWidgetItem* parent, const TraceCompile& c) {
    auto* item = new QTreeWidgetItem(parent);
    const QString id = q(c.id());
    item->setData(0, KindRole, "graph");
    item->setData(0, CompileIdRole, id);
    item->setText(0, QString("[%1] %2").arg(id, c.name.empty() ? tr("(unnamed)") : q(c.name)));
    item->setToolTip(0, stack_text(c.stack));
    QString why = c.frame_compile_id == 0 ? tr("first call") : tr("recompile");
    QColor colour;
    if (recompiled_because.count(c.id())) why = tr("recompile: %1").arg(q(recompiled_because[c.id()])), colour = kWarn;
    if (!c.fail_type.empty()) {
      why = tr("failed: %1: %2").arg(q(c.fail_type), q(c.fail_reason).section('\n', 0, 0));
      colour = kBad;
    } else if (c.dynamo_graph.empty()) {
      why = tr("no graph logged");
      colour = QColor("#888");
    }
    if (!c.restart_reasons.empty()) why += tr(" · graph break, restarted");
    item->setText(1, why);
    item->setToolTip(1, why);
    if (colour.isValid()) item->setForeground(1, colour);
    int externs = 0;
    for (const TraceOutputCode& oc : c.output_code) externs += static_cast<int>(oc.kernels.size()) - oc.generated_kernels();
    if (!c.output_code.empty()) {
      item->setText(2, tr("%1 + %2 lib").arg(c.inductor_kernels()).arg(externs));
      item->setToolTip(2, tr("Inductor: %1 generated kernel(s), %2 library call(s)").arg(c.inductor_kernels()).arg(externs));
    } else {
      item->setText(2, "-");
    }
    item->setText(3, c.dynamo_graph.empty() ? "-" : tr("choose"));
    item->setForeground(3, QColor("#888"));
    QStringList stages;
    for (const auto& s : c.stages()) stages << q(s);
    new QTreeWidgetItem(item, {tr("stages"), stages.isEmpty() ? tr("none") : stages.join(", ")});
    if (!c.guards.empty()) {
      const QStringList lines = q(c.guards).split('\n', Qt::SkipEmptyParts);
      auto* g = new QTreeWidgetItem(item, {tr("guards (%1 lines)").arg(lines.size())});
      for (int i = 0; i < lines.size() && i < kMaxGuardLines; ++i) new QTreeWidgetItem(g, {lines[i]});
    }
    for (const TraceRecompile& r : t->recompiles)
      if (r.compile_id == c.id())
        for (const auto& reason : r.reasons) {
          auto* x = new QTreeWidgetItem(item, {tr("guard failed"), q(reason)});
          x->setForeground(0, kWarn);
          x->setToolTip(1, q(reason));
        }
    for (const auto& reason : c.restart_reasons) {
      auto* x = new QTreeWidgetItem(item, {tr("graph break"), q(reason).section('\n', 0, 0)});
      x->setForeground(0, kWarn);
      x->setToolTip(1, q(reason));
    }
    if (c.compile_time_s > 0) new QTreeWidgetItem(item, {tr("compile time"), tr("%1 s").arg(c.compile_time_s, 0, 'f', 2)});
    return item;
  };

  auto* frames = addSection("frames", tr("frames (%1)").arg(t->frames.size()));
  std::set<std::string> shown;
  for (const TraceFrame& f : t->frames) {
    auto* fi = new QTreeWidgetItem(frames, {tr("frame %1: %2").arg(f.frame_id).arg(q(f.name))});
    fi->setData(0, KindRole, "frame");
    if (!f.stack.empty()) {
      const TraceStackFrame& s = f.stack.back();
      fi->setText(1, QString("%1:%2").arg(short_file(s.file)).arg(s.line));
    }
    fi->setToolTip(0, stack_text(f.stack));
    fi->setToolTip(1, stack_text(f.stack));
    fi->setText(2, tr("%1 compile(s)").arg(f.compiles.size()));
    for (const auto& id : f.compiles)
      if (const TraceCompile* c = t->compile(id)) {
        add_graph(fi, *c);
        shown.insert(id);
      }
    fi->setExpanded(true);
  }
  frames->setExpanded(true);
  QTreeWidgetItem* others = nullptr;  // compiles outside any frame (torch.export, AOTInductor: "-/-")
  for (const TraceCompile& c : t->compiles)
    if (!shown.count(c.id())) {
      if (!others) others = addSection("other", tr("graphs outside a frame"));
      add_graph(others, c);
    }
  if (others) others->setExpanded(true);

  if (!t->graph_breaks.empty()) {
    auto* s = addSection("breaks", tr("graph breaks (%1)").arg(t->graph_breaks.size()));
    s->setForeground(0, kWarn);
    for (const TraceGraphBreak& b : t->graph_breaks) {
      auto* item = new QTreeWidgetItem(s, {b.file.empty() ? tr("(no source line)") : QString("%1:%2").arg(short_file(b.file)).arg(b.line),
                                           q(b.reason), tr("%1×").arg(b.count)});
      item->setData(0, KindRole, "break");
      item->setForeground(0, kWarn);
      item->setToolTip(0, QString("%1:%2").arg(q(b.file)).arg(b.line));
      item->setToolTip(1, q(b.detail.empty() ? b.reason : b.detail));
      if (!b.compiles.empty()) item->setData(0, CompileIdRole, q(b.compiles.front()));
      if (!b.code.empty()) new QTreeWidgetItem(item, {tr("source"), "> " + q(b.code)});
      if (!b.explanation.empty()) {
        auto* e = new QTreeWidgetItem(item, {tr("explanation"), q(b.explanation)});
        e->setToolTip(1, q(b.explanation));
      }
      new QTreeWidgetItem(item, {tr("in compiles"), joined(b.compiles)});
    }
    s->setExpanded(true);
  }
  if (!t->recompiles.empty()) {
    auto* s = addSection("recompiles", tr("recompiles (%1)").arg(t->recompiles.size()));
    s->setForeground(0, kWarn);
    for (const TraceRecompile& r : t->recompiles) {
      auto* item = new QTreeWidgetItem(s, {QString("[%1] %2").arg(q(r.compile_id), q(r.name)),
                                           r.reasons.empty() ? QString() : q(r.reasons.front())});
      item->setData(0, KindRole, "recompile");
      item->setData(0, CompileIdRole, q(r.compile_id));
      item->setToolTip(1, joined(r.reasons, "\n"));
      if (r.reasons.size() > 1)
        for (const auto& reason : r.reasons) new QTreeWidgetItem(item, {tr("guard failed"), q(reason)});
    }
    s->setExpanded(true);
  }
  if (!t->failures.empty()) {
    auto* s = addSection("failures", tr("failures (%1)").arg(t->failures.size()));
    s->setForeground(0, kBad);
    for (const TraceFailure& f : t->failures) {
      auto* item = new QTreeWidgetItem(s, {QString("[%1] %2").arg(q(f.compile_id), q(f.name)),
                                           QString("%1: %2").arg(q(f.fail_type), q(f.summary))});
      item->setData(0, KindRole, "failure");
      item->setData(0, CompileIdRole, q(f.compile_id));
      item->setForeground(0, kBad);
      item->setToolTip(1, q(f.reason));
      if (!f.explanation.empty()) new QTreeWidgetItem(item, {tr("explanation"), q(f.explanation)});
      if (!f.user_frame.empty()) new QTreeWidgetItem(item, {tr("at"), q(f.user_frame)});
    }
    s->setExpanded(true);
  }
  if (!t->phases.empty()) {
    auto* s = addSection("phases", tr("compile time (chromium events)"));
    for (const auto& [name, ms] : t->phases) new QTreeWidgetItem(s, {q(name), tr("%1 ms").arg(ms, 0, 'f', 1)});
    // The same as bars, longest at the top.
    auto* set = new QBarSet(tr("ms"));
    QStringList names;
    double max = 0;
    const size_t n = std::min<size_t>(t->phases.size(), 12);
    for (size_t i = n; i-- > 0;) {
      *set << t->phases[i].second;
      names << q(t->phases[i].first);
      max = std::max(max, t->phases[i].second);
    }
    auto* series = new QHorizontalBarSeries;
    series->append(set);
    auto* chart = new QChart;
    chart->setTitle(tr("Compile time by phase (ms, all compiles)"));
    chart->setAnimationOptions(QChart::NoAnimation);
    chart->legend()->hide();
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->addSeries(series);
    auto* rows = new QBarCategoryAxis;
    rows->append(names);
    auto* values = new QValueAxis;
    values->setRange(0, max * 1.05 + 1e-9);
    values->applyNiceNumbers();
    values->setLabelFormat("%g");
    chart->addAxis(rows, Qt::AlignLeft);
    chart->addAxis(values, Qt::AlignBottom);
    series->attachAxis(rows);
    series->attachAxis(values);
    phases_->setChart(chart);
  }
  if (!t->warnings.empty()) {
    auto* s = addSection("warnings", tr("warnings (%1): parts of the log were skipped").arg(t->warnings.size()));
    s->setForeground(0, kWarn);
    for (const TraceWarning& w : t->warnings) {
      auto* item = new QTreeWidgetItem(s, {w.line > 0 ? tr("line %1").arg(w.line) : tr("the log"), q(w.what)});
      item->setToolTip(1, q(w.what));
    }
    s->setExpanded(true);
  }
}

void TracePanel::showDetails(const TraceCompile* c) {
  {
    const QSignalBlocker b1(code_kind_), b2(graph_kind_);
    code_kind_->clear();
    for (const TraceOutputCode& oc : c->output_code)
      code_kind_->addItem(tr("%1 — %2 kernel(s) — %3").arg(q(oc.aot_id.empty() ? "output code" : oc.aot_id)).arg(oc.kernels.size())
                              .arg(QFileInfo(q(oc.filename)).fileName()));
    graph_kind_->clear();
    if (!c->dynamo_graph.empty()) graph_kind_->addItem(tr("Dynamo graph (dynamo_output_graph)"), "dynamo_output_graph");
    for (const char* k : {"aot_inference_graph", "aot_joint_graph", "aot_forward_graph", "aot_backward_graph"})
      if (c->aot_graphs.count(k)) graph_kind_->addItem(artifact_title(k), k);
    for (const auto& [k, text] : c->inductor_graphs) graph_kind_->addItem(artifact_title(k), q(k));
  }
  showCode(0, 0);
  emit graph_kind_->currentIndexChanged(graph_kind_->currentIndex());
  if (graph_kind_->count() == 0) graph_text_->showText(tr("# no graph logged for [%1]").arg(q(c->id())), CodeView::Language::Plain);
  {  // ours fill in when our compile of it is in (setOurs)
    std::vector<std::string> how;
    std::vector<KernelPair> rows = map_kernel_rows(*c, nullptr, &how);
    kernels_model_->setRows(std::move(rows), std::move(how));
  }
  guards_->showText(c->guards.empty() ? tr("# no guards logged for [%1]").arg(q(c->id())) : q(c->guards), CodeView::Language::Plain);
  refreshOurs(current_);
}

void TracePanel::showCode(int index, int line) {
  const auto t = session_->trace();
  const TraceCompile* c = t ? t->compile(current_.toStdString()) : nullptr;
  if (!c || index < 0 || index >= static_cast<int>(c->output_code.size())) {
    output_code_->showText(c ? tr("# Inductor wrote no output code for [%1]").arg(current_) : QString(), CodeView::Language::Plain);
    output_code_->setProperty("shown", 0);
    return;
  }
  const std::string& code = c->output_code[static_cast<size_t>(index)].code;
  if (output_code_->property("shown").toInt() != index + 1 || output_code_->property("compile").toString() != current_) {
    output_code_->showText(q(code), CodeView::Language::Python);
    output_code_->setProperty("shown", index + 1);
    output_code_->setProperty("compile", current_);
  }
  if (line <= 0) return;
  // A generated kernel runs to the end of its source string; a library call is its one line.
  const QStringList lines = q(code).split('\n');
  int last = line;
  if (lines.value(line - 1).contains("async_compile."))
    for (int i = line; i < lines.size() && i < line + 2000; ++i)
      if (lines[i].startsWith("''')") || lines[i].startsWith("''', ")) {
        last = i + 1;
        break;
      }
  output_code_->markLines(line, last);
}

void TracePanel::setOurs(const QString& id, const CompileResult* r) {
  if (!r) return;
  Ours o;
  for (const KernelReport& k : r->kernels) (k.kind == KernelKind::extern_call ? o.library : o.generated)++;
  if (r->kernels.empty())
    for (const Kernel& k : r->schedule.kernels) (k.is_extern ? o.library : o.generated)++;
  if (!r->error.empty()) o.check = tr("failed at '%1'").arg(q(r->error_stage)), o.why = q(r->error);
  else if (!r->not_run.empty()) o.check = tr("not run"), o.why = q(r->not_run);
  else o.check = r->check.ok ? tr("ok") : tr("FAILED");
  ours_[id] = o;
  showOurs(id, o);
  const auto t = session_->trace();
  const TraceCompile* c = t ? t->compile(id.toStdString()) : nullptr;
  if (c && id == current_) {
    std::vector<std::string> how;
    std::vector<KernelPair> rows = map_kernel_rows(*c, r, &how);
    kernels_model_->setRows(std::move(rows), std::move(how));
    refreshOurs(id);
  }
}

void TracePanel::showOurs(const QString& id, const Ours& o) {
  if (QTreeWidgetItem* item = graphItem(id)) {
    item->setText(3, o.generated + o.library ? tr("%1 + %2 lib").arg(o.generated).arg(o.library) : "-");
    item->setForeground(3, palette().color(QPalette::Text));
    item->setToolTip(3, tr("Lowerscope: %1 generated kernel(s), %2 library call(s)").arg(o.generated).arg(o.library));
    item->setText(4, o.check);
    item->setToolTip(4, o.why);
    item->setForeground(4, o.check == tr("ok") ? kOk : o.check == tr("not run") ? kWarn : kBad);
  }
}

// The kernel table's summary line: Inductor's count against ours.
void TracePanel::refreshOurs(const QString& id) {
  const auto t = session_->trace();
  const TraceCompile* c = t ? t->compile(id.toStdString()) : nullptr;
  if (!c) return;
  int externs = 0;
  for (const TraceOutputCode& oc : c->output_code) externs += static_cast<int>(oc.kernels.size()) - oc.generated_kernels();
  QString text = tr("<b>[%1]</b> Inductor: <b>%2</b> generated kernel(s) + %3 library call(s)").arg(id).arg(c->inductor_kernels()).arg(externs);
  if (ours_.contains(id)) {
    const Ours& o = ours_[id];
    text += tr(" &nbsp;·&nbsp; Lowerscope: <b>%1</b> generated kernel(s) + %2 library call(s), check %3")
                .arg(o.generated).arg(o.library)
                .arg(o.check == tr("ok") ? "<span style='color:#1e7e34'>ok</span>" : "<span style='color:#b00'>" + o.check.toHtmlEscaped() + "</span>");
  } else if (!c->dynamo_graph.empty()) {
    text += tr(" &nbsp;·&nbsp; Lowerscope: compiling …");
  } else {
    text += tr(" &nbsp;·&nbsp; no Dynamo graph logged: nothing for Lowerscope to compile");
  }
  kernel_summary_->setText(text);
  kernels_->resizeColumnsToContents();
  for (int col = 0; col + 1 < kernels_model_->columnCount(); ++col)  // long fused names: the tooltip has them whole
    kernels_->setColumnWidth(col, std::min(kernels_->columnWidth(col), col == TraceKernelModel::Inductor ? 230 : col == TraceKernelModel::Ours ? 220 : 110));
  kernels_->horizontalHeader()->setStretchLastSection(true);
}

}  // namespace ls
