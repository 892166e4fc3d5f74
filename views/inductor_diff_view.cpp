#include "inductor_diff_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include "code_view.h"
#include "kernel_map_model.h"
#include "pipeline/pipeline.h"
#include "report/trace_report.h"

namespace ls {

InductorDiffView::InductorDiffView(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(0, 0, 0, 0);
  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  v->addWidget(summary_);
  auto* split = new QSplitter(Qt::Vertical, this);
  model_ = new KernelMapModel(this);
  table_ = new QTableView(split);
  table_->setObjectName("inductor_kernel_map");
  table_->setModel(model_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setWordWrap(true);
  table_->setTextElideMode(Qt::ElideMiddle);  // Inductor's names run long; the tooltip and the code title give them whole
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(true);
  auto* below = new QWidget(split);
  auto* bv = new QVBoxLayout(below);
  bv->setContentsMargins(0, 0, 0, 0);
  detail_ = new QLabel(below);
  detail_->setWordWrap(true);
  detail_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  bv->addWidget(detail_);
  auto* codes = new QSplitter(Qt::Horizontal, below);
  bv->addWidget(codes, 1);
  auto side = [&](QLabel*& title, CodeView*& code, const QString& name) {
    auto* w = new QWidget(codes);
    auto* l = new QVBoxLayout(w);
    l->setContentsMargins(0, 0, 0, 0);
    title = new QLabel(w);
    code = new CodeView(w);
    code->setObjectName(name);
    l->addWidget(title);
    l->addWidget(code, 1);
  };
  side(inductor_title_, inductor_code_, "inductor_output_code");
  side(our_title_, our_code_, "our_source");
  split->setSizes({360, 360});
  v->addWidget(split, 1);
  connect(table_, &QTableView::clicked, this, [this](const QModelIndex& i) { chooseRow(i.row()); });
}

const KernelMap& InductorDiffView::map() const { return model_->map(); }

void InductorDiffView::setGraph(std::shared_ptr<const TorchTrace> t, const TraceCompile* c, std::shared_ptr<const CompileResult> ours) {
  trace_ = std::move(t);
  compile_ = c;
  ours_ = std::move(ours);
  shown_code_ = -1;
  shown_inductor_.clear(), shown_ours_.clear();
  if (!compile_) {
    model_->setMap({});
    summary_->setText(tr("Open a TORCH_TRACE log and choose a graph: its Inductor kernels are set against ours here."));
    return;
  }
  std::vector<TraceKernel> list;
  if (ours_) list = summarize_compile(*ours_).kernel_list;
  const bool compiled = ours_ && (!ours_->kernels.empty() || !ours_->schedule.kernels.empty());
  model_->setMap(map_trace_kernels(*compile_, list, compiled));
  const KernelMap& m = model_->map();
  const int differ = m.differing_rows();
  QString s = tr("<b>[%1] %2</b> &nbsp; Inductor: <b>%3</b> generated kernel(s) + %4 library call(s) &nbsp;|&nbsp; Lowerscope: ")
                  .arg(QString::fromStdString(compile_->id()), QString::fromStdString(compile_->name).toHtmlEscaped())
                  .arg(m.inductor_generated)
                  .arg(m.inductor_library);
  s += compiled ? tr("<b>%1</b> generated kernel(s) + %2 library call(s)").arg(m.ours_generated).arg(m.ours_library)
                : tr("<span style='color:#b00'>not compiled</span>");
  s += tr(" &nbsp;|&nbsp; %1 group(s) of Dynamo nodes, %2 %3")
           .arg(m.rows.size())
           .arg(differ)
           .arg(differ ? tr("<span style='color:#b06000'>differ</span> (◆: a node one side fuses and the other does not)") : tr("differ"));
  if (m.unmapped_inductor_kernels)
    s += tr(" &nbsp;|&nbsp; <span style='color:#b00'>%1 Inductor kernel(s) could not be mapped to a Dynamo node</span>").arg(m.unmapped_inductor_kernels);
  summary_->setText(s);
  table_->resizeColumnsToContents();
  // Long kernel names and node lists: cut in the middle, not widening the table past the window.
  const int widest[KernelMapModel::ColumnCount] = {72, 170, 110, 240, 190, 300};
  for (int col = 0; col < KernelMapModel::ColumnCount; ++col)
    if (table_->columnWidth(col) > widest[col]) table_->setColumnWidth(col, widest[col]);
  table_->resizeRowsToContents();
  inductor_title_->setText(tr("Inductor's output code"));
  our_title_->setText(tr("Lowerscope's source"));
  inductor_code_->showText(QString(), CodeView::Language::Python);
  our_code_->showText(ours_ ? QString::fromStdString(ours_->source.code) : QString(), CodeView::Language::Cpp);
  // The first row where the two sides differ (else the first), its kernels in both texts; the
  // explorer's selection stays.
  int first = 0;
  while (first < static_cast<int>(m.rows.size()) && !m.rows[static_cast<size_t>(first)].differs()) ++first;
  if (!m.rows.empty()) showRow(first < static_cast<int>(m.rows.size()) ? first : 0);
}

bool InductorDiffView::chooseRow(int row) {
  if (!showRow(row)) return false;
  QStringList nodes;
  for (const std::string& n : model_->map().rows[static_cast<size_t>(row)].nodes) nodes << QString::fromStdString(n);
  if (!nodes.isEmpty()) emit nodesChosen(nodes);
  return true;
}

bool InductorDiffView::showRow(int row) {
  const KernelMap& m = model_->map();
  if (!compile_ || row < 0 || row >= static_cast<int>(m.rows.size())) return false;
  const KernelMapRow& r = m.rows[static_cast<size_t>(row)];
  if (table_->currentIndex().row() != row) table_->selectRow(row);
  detail_->setText(model_->index(row, KernelMapModel::Verdict).data(Qt::ToolTipRole).toString().replace('\n', "  ·  ").prepend(
      QString::fromStdString(r.verdict) + ": "));
  shown_inductor_.clear(), shown_ours_.clear();
  if (!r.inductor.empty()) {
    const MappedKernel& k = r.inductor.front();
    if (k.code_index >= 0 && k.code_index < static_cast<int>(compile_->output_code.size())) {
      const TraceOutputCode& oc = compile_->output_code[static_cast<size_t>(k.code_index)];
      if (shown_code_ != k.code_index) {
        inductor_code_->showText(QString::fromStdString(oc.code), CodeView::Language::Python);
        shown_code_ = k.code_index;
      }
      if (k.line > 0) inductor_code_->markLines(k.line, k.line);
      inductor_title_->setText(tr("Inductor's output code (%1): %2").arg(QString::fromStdString(oc.aot_id), QString::fromStdString(k.name)));
      shown_inductor_ = QString::fromStdString(k.name);
    }
  }
  if (ours_ && !r.ours.empty()) {
    const std::string& name = r.ours.front().name;
    for (const KernelReport& k : ours_->kernels)
      if (k.name == name && k.first_line > 0) our_code_->markLines(k.first_line, k.last_line);
    if (ours_->kernels.empty())  // compiled, not run: the generated source's own line table
      for (const GeneratedKernel& k : ours_->source.kernels)
        if (k.name == name && k.first_line > 0) our_code_->markLines(k.first_line, k.last_line);
    our_title_->setText(tr("Lowerscope's source: %1").arg(QString::fromStdString(name)));
    shown_ours_ = QString::fromStdString(name);
  }
  return true;
}

QString InductorDiffView::summary() const { return summary_->text(); }

QString InductorDiffView::rowDetail() const { return detail_->text(); }

}  // namespace ls
