#include "script_panel.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSplitter>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrent>

#include "code_view.h"

namespace ls {

ScriptPanel::ScriptPanel(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(4, 4, 4, 4);
  auto* bar = new QHBoxLayout;
  run_button_ = new QPushButton(tr("Run"), this);
  run_button_->setToolTip(tr("Run the script (Ctrl+R): each torch.compile'd call lands in the compile log"));
  stop_button_ = new QPushButton(tr("Stop"), this);
  stop_button_->setEnabled(false);
  status_ = new QLabel(tr("Python: PyTorch-style scripts run against Lowerscope's torch"), this);
  bar->addWidget(run_button_);
  bar->addWidget(stop_button_);
  bar->addWidget(status_, 1);
  v->addLayout(bar);

  auto* split = new QSplitter(Qt::Vertical, this);
  editor_ = new CodeView(split);
  editor_->showText("", CodeView::Language::Python);
  editor_->setReadOnly(false);
  output_ = new QPlainTextEdit(split);
  output_->setReadOnly(true);
  output_->setFont(QFont("DejaVu Sans Mono", 9));
  output_->setPlaceholderText(tr("What the script prints"));
  log_ = new QTreeWidget(split);
  log_->setHeaderLabels({tr("Compile log"), tr("Why compiled"), tr("Calls"), tr("Kernels"), tr("Check")});
  log_->header()->setStretchLastSection(false);
  log_->setColumnWidth(0, 260);
  log_->setColumnWidth(1, 260);
  split->addWidget(editor_);
  split->addWidget(output_);
  split->addWidget(log_);
  split->setSizes({380, 140, 220});
  v->addWidget(split, 1);

  connect(run_button_, &QPushButton::clicked, this, &ScriptPanel::run);
  connect(stop_button_, &QPushButton::clicked, this, &ScriptPanel::stop);
  connect(&watcher_, &QFutureWatcher<ScriptRun>::finished, this, &ScriptPanel::onFinished);
  connect(log_, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem* item) {
    while (item && item->parent()) item = item->parent();
    if (item && item->data(0, Qt::UserRole).isValid()) emit graphChosen(item->data(0, Qt::UserRole).toInt());
  });
}

ScriptPanel::~ScriptPanel() {
  stop();
  watcher_.waitForFinished();
}

void ScriptPanel::setScript(const QString& text, const QString& path) {
  path_ = path;
  editor_->showText(text, CodeView::Language::Python);
  editor_->setReadOnly(false);
}

QString ScriptPanel::script() const { return editor_->text(); }

void ScriptPanel::run() {
  if (running()) return;
  output_->clear();
  log_->clear();
  run_button_->setEnabled(false);
  stop_button_->setEnabled(true);
  status_->setText(tr("Running %1 …").arg(QFileInfo(path_).fileName()));
  const std::string source = script().toStdString(), path = path_.toStdString();
  ScriptOptions o;
  QPointer<ScriptPanel> self(this);
  o.on_output = [self](const std::string& s) {
    const QString text = QString::fromStdString(s);
    QMetaObject::invokeMethod(qApp, [self, text] {
      if (self) self->onOutput(text);
    }, Qt::QueuedConnection);
  };
  watcher_.setFuture(QtConcurrent::run([source, path, o] { return run_script(source, path, o); }));
}

void ScriptPanel::stop() {
  if (running()) interrupt_script();
}

void ScriptPanel::onOutput(const QString& text) {
  output_->moveCursor(QTextCursor::End);
  output_->insertPlainText(text);
  output_->ensureCursorVisible();
}

void ScriptPanel::onFinished() {
  QCoreApplication::sendPostedEvents(qApp);  // the last lines printed come before the summary
  run_ = watcher_.result();
  run_button_->setEnabled(true);
  stop_button_->setEnabled(false);
  if (!run_.error.empty()) {
    output_->appendHtml("<pre style='color:#b00'>" + QString::fromStdString(run_.error).toHtmlEscaped() + "</pre>");
  }
  status_->setText(tr("%1 in %2 ms: %3 graph(s), %4 graph break(s), %5 recompile(s)")
                       .arg(run_.ok ? tr("Finished") : tr("Failed"))
                       .arg(run_.ms, 0, 'f', 0)
                       .arg(run_.graphs.size())
                       .arg(run_.breaks.size())
                       .arg(run_.recompiles));
  for (size_t i = 0; i < run_.graphs.size(); ++i) {
    const CapturedGraph& g = run_.graphs[i];
    int generated = 0, externs = 0;
    if (g.result)
      for (const auto& k : g.result->kernels) (k.kind == KernelKind::extern_call ? externs : generated)++;
    auto* item = new QTreeWidgetItem(log_);
    item->setText(0, tr("graph %1: %2").arg(g.id).arg(QString::fromStdString(g.function)));
    item->setToolTip(0, QString::fromStdString(g.location));
    item->setText(1, QString::fromStdString(g.reason) + (g.train ? tr(" · training step") : QString()));
    item->setToolTip(1, item->text(1));
    item->setText(2, QString::number(g.calls));
    if (g.dynamic) {
      QStringList sizes;
      for (const auto& x : g.sizes) sizes << QString::fromStdString(x);
      item->setToolTip(2, tr("dynamic shapes: one compile ran at sizes %1 (the first tensor argument's)").arg(sizes.join(", ")));
    }
    item->setText(3, g.result ? tr("%1 + %2 lib").arg(generated).arg(externs) : QString("-"));
    item->setText(4, !g.result ? tr("not compiled") : g.result->check.ok ? tr("ok") : tr("FAILED"));
    item->setForeground(4, g.result && g.result->check.ok ? QColor("#1e7e34") : QColor("#b00"));
    if (g.recompile) item->setForeground(1, QColor("#a05a00"));
    item->setData(0, Qt::UserRole, static_cast<int>(i));
    auto* guards = new QTreeWidgetItem(item, {tr("guards (%1)").arg(g.guards.size())});
    for (const auto& x : g.guards) new QTreeWidgetItem(guards, {QString::fromStdString(x)});
  }
  for (const GraphBreak& b : run_.breaks) {
    auto* item = new QTreeWidgetItem(log_, {tr("graph break in %1").arg(QString::fromStdString(b.function)),
                                            QString::fromStdString(b.reason)});
    item->setForeground(0, QColor("#a05a00"));
    item->setToolTip(0, QString::fromStdString(b.location));
    new QTreeWidgetItem(item, {QString::fromStdString(b.location), QString::fromStdString(b.code)});
  }
  emit finished(run_.ok);
}

void ScriptPanel::chooseGraph(int index) {
  for (int i = 0; i < log_->topLevelItemCount(); ++i)
    if (log_->topLevelItem(i)->data(0, Qt::UserRole).toInt() == index && log_->topLevelItem(i)->data(0, Qt::UserRole).isValid()) {
      log_->setCurrentItem(log_->topLevelItem(i));
      return;
    }
}

}  // namespace ls
