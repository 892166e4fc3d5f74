#include "diff_panel.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QScrollBar>
#include <QSplitter>
#include <QStackedWidget>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <climits>
#include <map>

#include "code_view.h"
#include "compile_session.h"
#include "backend/backend.h"
#include "graph_layout.h"
#include "graph_view.h"
#include "inductor_diff_view.h"
#include "ops/op_table.h"
#include "report/diff.h"
#include "sched/schedule.h"

namespace ls {

namespace {
struct Variant {
  QString name;
  PipelineOptions options;
};

// The left side's options with one thing changed: the comparisons a user of this tool makes.
std::vector<Variant> variants_of(const PipelineOptions& o) {
  std::vector<Variant> v{{QObject::tr("This compile (another stage)"), o}};
  auto with = [&](const QString& name, auto&& change) {
    PipelineOptions x = o;
    change(x);
    v.push_back({name, x});
  };
  with(o.fusion ? QObject::tr("Fusion off") : QObject::tr("Fusion on"), [](PipelineOptions& x) { x.fusion = !x.fusion; });
  if (o.device == Device::cuda) with(QObject::tr("Target CPU"), [](PipelineOptions& x) { x.device = Device::cpu; });
  else if (can_compile_for(Device::cuda)) with(QObject::tr("Target CUDA"), [](PipelineOptions& x) { x.device = Device::cuda; });
  for (Mode mode : {Mode::default_mode, Mode::reduce_overhead, Mode::max_autotune})
    if (o.mode != mode) with(QObject::tr("Mode %1").arg(mode_name(mode)), [mode](PipelineOptions& x) { x.mode = mode; });
  if (o.device == Device::cpu)
    with(o.dynamic ? QObject::tr("Static shapes") : QObject::tr("Dynamic shapes"), [](PipelineOptions& x) { x.dynamic = !x.dynamic; });
  if (o.device == Device::cpu && o.mode != Mode::max_autotune)  // default mode's GEMM templates against the library's products
    with(o.gemm_templates ? QObject::tr("GEMM templates off") : QObject::tr("GEMM templates on"),
         [](PipelineOptions& x) { x.gemm_templates = !x.gemm_templates; });
  with(o.train ? QObject::tr("Inference") : QObject::tr("Training step"), [](PipelineOptions& x) { x.train = !x.train; });
  if (o.train)
    with(o.partitioner == Partitioner::min_cut ? QObject::tr("Default partitioner") : QObject::tr("Min-cut partitioner"),
         [](PipelineOptions& x) {
           x.partitioner = x.partitioner == Partitioner::min_cut ? Partitioner::default_partition : Partitioner::min_cut;
         });
  // model.to(dtype): float32 against bfloat16 or float16 (as the CLI's diff --right "--dtype bfloat16").
  for (DType t : {DType::f32, DType::bf16, DType::f16})
    if (o.dtype.value_or(DType::f32) != t) {
      const std::optional<DType> to = t == DType::f32 ? std::nullopt : std::optional<DType>(t);
      const QString name = QString::fromLatin1(dtype_torch(t).substr(6).data(), static_cast<int>(dtype_torch(t).size() - 6));
      with(QObject::tr("Dtype %1").arg(t == DType::f32 ? QObject::tr("float32 (as loaded)") : name), [to](PipelineOptions& x) { x.dtype = to; });
    }
  with(o.decompose_to == level::core_aten ? QObject::tr("Decompose to prims") : QObject::tr("Core ATen only"),
       [](PipelineOptions& x) { x.decompose_to = x.decompose_to == level::core_aten ? level::prims : level::core_aten; });
  return v;
}

// The buffers a side's kernels read and write, with their types.
struct TypedBuffer {
  std::string name;
  DType dtype;
  Shape shape;
  bool operator==(const TypedBuffer&) const = default;
};
std::vector<TypedBuffer> typed_buffers(const CompileResult& r, const std::vector<std::string>& kernels) {
  std::map<std::string, const LoopBuffer*> by_name;
  for (const LoopBuffer& b : r.loops.buffers) by_name[b.name] = &b;
  std::vector<TypedBuffer> out;
  for (const Kernel& k : r.schedule.kernels)
    if (std::find(kernels.begin(), kernels.end(), k.name) != kernels.end())
      for (const auto* names : {&k.reads, &k.writes})
        for (const std::string& n : *names)
          if (const auto b = by_name.find(n); b != by_name.end()) out.push_back({n, b->second->dtype, b->second->shape});
  return out;
}

// Kernels the structural diff calls the same, but whose buffers changed type (float32 against
// bfloat16: the same loops, half the bytes): changed, with the types first, then the buffers
// ("f32 → bf16: x, buf0").
void mark_retyped(std::vector<KernelMatch>& km, const CompileResult& a, const CompileResult& b) {
  for (KernelMatch& m : km) {
    if (m.change != Change::same) continue;
    const auto ta = typed_buffers(a, m.a), tb = typed_buffers(b, m.b);
    if (ta == tb) continue;
    m.change = Change::changed;
    std::map<std::string, std::vector<std::string>> by_types;  // "f32 → bf16" -> buffers
    bool only_types = ta.size() == tb.size();
    for (size_t i = 0; only_types && i < ta.size(); ++i) {
      only_types = ta[i].name == tb[i].name && ta[i].shape == tb[i].shape;
      if (only_types && ta[i].dtype != tb[i].dtype)
        by_types[std::string(dtype_short(ta[i].dtype)) + " → " + std::string(dtype_short(tb[i].dtype))].push_back(ta[i].name);
    }
    m.why.clear();
    for (const auto& [types, names] : by_types) {
      m.why += (m.why.empty() ? "" : "; ") + types + ":";
      for (size_t i = 0; i < names.size(); ++i) m.why += (i ? ", " : " ") + names[i];
    }
    if (!only_types || m.why.empty()) m.why = "its buffers' types or shapes";
  }
}

void fill_stages(QComboBox* box, const std::vector<std::string>& names, const QString& keep) {
  box->clear();
  for (const auto& n : names) box->addItem(QString::fromStdString(n));
  const int i = box->findText(keep);
  if (i >= 0) box->setCurrentIndex(i);
}
}  // namespace

DiffPanel::DiffPanel(CompileSession* left, QWidget* parent) : QWidget(parent), left_(left) {
  right_ = new CompileSession(this);
  layouter_ = new GraphLayouter(this);
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(4, 4, 4, 4);
  auto* row = new QHBoxLayout;
  stage_a_ = new QComboBox(this);
  variant_ = new QComboBox(this);
  stage_b_ = new QComboBox(this);
  go_ = new QPushButton(tr("Compare"), this);
  row->addWidget(new QLabel(tr("Left: stage"), this));
  row->addWidget(stage_a_);
  row->addSpacing(16);
  row->addWidget(new QLabel(tr("Right:"), this));
  row->addWidget(variant_);
  row->addWidget(new QLabel(tr("stage"), this));
  row->addWidget(stage_b_);
  row->addWidget(go_);
  row->addStretch(1);
  v->addLayout(row);
  summary_ = new QLabel(tr("Open a model, pick two stages or a stage and a variant, then Compare."), this);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  summary_->setWordWrap(true);
  v->addWidget(summary_);

  auto* vsplit = new QSplitter(Qt::Vertical, this);
  auto* top = new QSplitter(Qt::Horizontal, vsplit);
  graph_ = new GraphView(top);
  changes_ = new QTreeWidget(top);
  changes_->setHeaderLabels({tr("Change"), tr("Node / kernel"), tr("What")});
  changes_->setRootIsDecorated(false);
  changes_->header()->setStretchLastSection(true);
  top->addWidget(graph_);
  top->addWidget(changes_);
  top->setSizes({800, 400});
  auto* texts = new QSplitter(Qt::Horizontal, vsplit);
  text_a_ = new CodeView(texts);
  text_b_ = new CodeView(texts);
  text_a_->setObjectName("diff_left");
  text_b_->setObjectName("diff_right");
  red_ = text_a_->defineMark(QColor("#fbd9d3"));
  grey_a_ = text_a_->defineMark(QColor("#eeeeee"));
  green_ = text_b_->defineMark(QColor("#d4f0db"));
  grey_b_ = text_b_->defineMark(QColor("#eeeeee"));
  vsplit->addWidget(top);
  vsplit->addWidget(texts);
  vsplit->setSizes({500, 350});
  pages_ = new QStackedWidget(this);
  pages_->addWidget(vsplit);
  inductor_ = new InductorDiffView(pages_);
  pages_->addWidget(inductor_);
  v->addWidget(pages_, 1);
  connect(inductor_, &InductorDiffView::nodesChosen, this, &DiffPanel::nodesChosen);

  // The two texts scroll together (their lines are aligned).
  connect(text_a_->verticalScrollBar(), &QScrollBar::valueChanged, text_b_->verticalScrollBar(), &QScrollBar::setValue);
  connect(text_b_->verticalScrollBar(), &QScrollBar::valueChanged, text_a_->verticalScrollBar(), &QScrollBar::setValue);
  connect(go_, &QPushButton::clicked, this, &DiffPanel::compareNow);
  connect(variant_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i < 0) return;
    const PipelineOptions o = variantOptions(i);
    // Inductor's kernels against ours: of the fused stage, whatever the stages say.
    stage_a_->setEnabled(!inductorChosen());
    stage_b_->setEnabled(!inductorChosen());
    if ((i == 0 || inductorChosen()) && left_->result()) {
      std::vector<std::string> names;
      for (const Stage& s : left_->result()->stages) names.push_back(s.name);
      fill_stages(stage_b_, names, stage_b_->currentText());
    } else {
      fill_stages(stage_b_, stage_names(o.train), stage_a_->currentText());
    }
  });
  connect(right_, &CompileSession::finished, this, [this] {
    b_ = right_->shared();
    if (waiting_) showDiff();
  });
  connect(right_, &CompileSession::failed, this, [this](const QString& stage, const QString& why) {
    b_ = right_->shared();
    if (!waiting_) return;
    waiting_ = false;
    summary_->setText(tr("<b style='color:#b00'>The right side failed at stage '%1':</b> %2").arg(stage, why.toHtmlEscaped()));
    emit compared(false);
  });
  connect(layouter_, &GraphLayouter::laidOut, this, [this](const LaidOutGraph& g) {
    graph_->showGraph(g);
    QSet<QString> marked;  // for kernels: the right side's changed and added ones
    for (const QString& k : names_[static_cast<int>(Change::changed)] + names_[static_cast<int>(Change::added)]) marked.insert(k);
    if (!want_b_.isEmpty() && !stage_graph(*b_, want_b_.toStdString())) graph_->highlight(marked);
    emit compared(true);
  });
  connect(layouter_, &GraphLayouter::failed, this, [this](const QString& why) {
    graph_->showMessage(why);
    emit compared(true);
  });
  connect(changes_, &QTreeWidget::itemClicked, this, [this](QTreeWidgetItem* it) {
    const QString id = it->data(1, Qt::UserRole).toString();
    if (!id.isEmpty()) {
      graph_->focusNode(id);
      graph_->highlight({id});
    }
  });
}

PipelineOptions DiffPanel::variantOptions(int index) const {
  const auto v = variants_of(left_->options);
  return index >= 0 && index < static_cast<int>(v.size()) ? v[static_cast<size_t>(index)].options : left_->options;
}

QStringList DiffPanel::variants() const {
  QStringList out;
  for (const Variant& v : variants_of(left_->options)) out << v.name;
  const TraceCompile* c = trace_ ? trace_->compile(trace_id_.toStdString()) : nullptr;
  if (c && !c->output_code.empty()) out << inductorVariant();
  return out;
}

QString DiffPanel::inductorVariant() { return tr("Inductor (from the trace)"); }

bool DiffPanel::inductorChosen() const { return variant_->currentText() == inductorVariant(); }

void DiffPanel::setTraceGraph(std::shared_ptr<const TorchTrace> trace, const QString& id) {
  trace_ = std::move(trace);
  trace_id_ = trace_ ? id : QString();
}

QStringList DiffPanel::stages() const {
  QStringList out;
  for (int i = 0; i < stage_a_->count(); ++i) out << stage_a_->itemText(i);
  return out;
}

void DiffPanel::leftChanged() {
  const CompileResult* r = left_->result();
  std::vector<std::string> names;
  if (r)
    for (const Stage& s : r->stages) names.push_back(s.name);
  const QString keep_a = stage_a_->currentText().isEmpty() ? QStringLiteral("fused") : stage_a_->currentText();
  fill_stages(stage_a_, names, keep_a);
  const QString variant = variant_->currentText();
  variant_->blockSignals(true);
  variant_->clear();
  variant_->addItems(variants());
  variant_->blockSignals(false);
  const int vi = variant_->findText(variant);
  variant_->setCurrentIndex(vi >= 0 ? vi : (variant_->count() > 1 ? 1 : 0));
  emit variant_->currentIndexChanged(variant_->currentIndex());
  go_->setEnabled(r != nullptr);
}

bool DiffPanel::compare(const QString& stage_a, const QString& variant, const QString& stage_b) {
  const int vi = variant_->findText(variant);
  if (vi < 0 || stage_a_->findText(stage_a) < 0) return false;
  stage_a_->setCurrentIndex(stage_a_->findText(stage_a));
  variant_->setCurrentIndex(vi);
  if (stage_b_->findText(stage_b) < 0) return false;
  stage_b_->setCurrentIndex(stage_b_->findText(stage_b));
  compareNow();
  return true;
}

void DiffPanel::compareNow() {
  a_ = left_->shared();
  if (!a_) return;
  want_a_ = stage_a_->currentText();
  want_b_ = stage_b_->currentText();
  if (inductorChosen()) {  // PyTorch's kernels from the trace: nothing to compile on the right
    pages_->setCurrentWidget(inductor_);
    inductor_->setGraph(trace_, trace_ ? trace_->compile(trace_id_.toStdString()) : nullptr, a_);
    summary_->setText(tr("PyTorch's kernels for [%1], from the trace, against ours, by Dynamo graph node. A row's click shows both kernels "
                         "and marks its nodes in the explorer.")
                          .arg(trace_id_));
    emit compared(true);
    return;
  }
  pages_->setCurrentIndex(0);
  waiting_ = true;
  if (variant_->currentIndex() <= 0) {
    b_ = a_;
    showDiff();
    return;
  }
  summary_->setText(tr("Compiling the right side (%1) …").arg(variant_->currentText()));
  right_->options = variantOptions(variant_->currentIndex());
  // The model as loaded: where the left side ran it in another dtype, its record holds it converted.
  const std::shared_ptr<const LoadedModel> model = left_->loadedModel();
  right_->compileModel(model && model->path == a_->model.path ? *model : a_->model);
}

void DiffPanel::showDiff() {
  waiting_ = false;
  for (auto& n : names_) n.clear();
  changes_->clear();
  const Stage* sa = a_->stage(want_a_.toStdString());
  const Stage* sb = b_->stage(want_b_.toStdString());
  if (!sa || !sb) {
    summary_->setText(tr("No stage '%1' on the %2 side.").arg(sa ? want_b_ : want_a_, sa ? tr("right") : tr("left")));
    emit compared(false);
    return;
  }
  auto add_change = [&](Change c, const QString& name, const QString& what, const QString& id) {
    names_[static_cast<int>(c)] << name;
    if (c == Change::same) return;
    auto* it = new QTreeWidgetItem(changes_, {QString::fromLatin1(change_name(c)), name, what});
    it->setData(1, Qt::UserRole, id);
    it->setToolTip(2, what);  // the column is narrow; a retyped kernel's types are at its end
    const QColor bg = c == Change::added ? QColor("#e6f4ea") : c == Change::removed ? QColor("#fdecea") : QColor("#fff3cd");
    for (int col = 0; col < 3; ++col) it->setBackground(col, bg);
  };
  QString summary;
  std::string dot;
  const Graph* ga = stage_graph(*a_, want_a_.toStdString());
  const Graph* gb = stage_graph(*b_, want_b_.toStdString());
  if (ga && gb) {
    const GraphDiff d = diff_graphs(*ga, *gb);
    for (const NodeMatch& m : d.nodes) {
      const Node& n = m.b >= 0 ? gb->nodes[m.b] : ga->nodes[m.a];
      const QString what = m.change == Change::changed ? QString::fromStdString((m.a >= 0 ? ga->nodes[m.a].name + ": " : "") + m.why)
                                                       : QString::fromStdString(n.is_placeholder() ? "input" : n.target);
      add_change(m.change, QString::fromStdString(n.name), what,
                 QString::fromStdString(m.b >= 0 ? n.name : "removed:" + n.name));
    }
    summary = tr("<b>Graph:</b> %1").arg(QString::fromStdString(d.summary()));
    dot = graph_diff_to_dot(*ga, *gb, d);
  } else {
    auto km = diff_kernels(a_->schedule.kernels, b_->schedule.kernels);
    mark_retyped(km, *a_, *b_);
    int counts[4] = {0, 0, 0, 0};
    for (const KernelMatch& m : km) {
      ++counts[static_cast<int>(m.change)];
      auto join = [](const std::vector<std::string>& v) {
        QStringList s;
        for (const auto& x : v) s << QString::fromStdString(x);
        return s.join(" + ");
      };
      // The same kernels retyped: what changed is all there is to say.
      const QString what = m.change == Change::changed && m.a == m.b && !m.why.empty() ? QString::fromStdString(m.why)
                           : m.change == Change::changed ? join(m.a) + " → " + join(m.b) + (m.why.empty() ? "" : "  (" + QString::fromStdString(m.why) + ")")
                                                         : join(m.change == Change::removed ? m.a : m.b);
      const auto& side = m.change == Change::removed ? m.a : m.b;
      for (const auto& k : side) add_change(m.change, QString::fromStdString(k), what, QString::fromStdString(k));
    }
    summary = tr("<b>Kernels:</b> %1 → %2 (%3 same, %4 changed, %5 added, %6 removed)")
                  .arg(a_->schedule.kernels.size())
                  .arg(b_->schedule.kernels.size())
                  .arg(counts[0])
                  .arg(counts[1])
                  .arg(counts[2])
                  .arg(counts[3]);
    if (const Stage* f = b_->stage("fused")) dot = f->dot;
  }
  changes_->resizeColumnToContents(0);
  changes_->resizeColumnToContents(1);

  // The texts side by side, aligned: a blank line stands opposite each line the other side lacks.
  const auto la = text_lines(sa->text), lb = text_lines(sb->text);
  QStringList ta, tb;
  QList<int> removed, added, pad_a, pad_b;
  for (const LineDiff& l : diff_lines(sa->text, sb->text)) {
    if (l.change == Change::same) {
      ta << QString::fromStdString(la[l.a - 1]);
      tb << QString::fromStdString(lb[l.b - 1]);
    } else if (l.change == Change::removed) {
      ta << QString::fromStdString(la[l.a - 1]);
      tb << QString();
      removed << ta.size();
      pad_b << tb.size();
    } else {
      ta << QString();
      tb << QString::fromStdString(lb[l.b - 1]);
      added << tb.size();
      pad_a << ta.size();
    }
  }
  removed_lines_ = static_cast<int>(removed.size());
  added_lines_ = static_cast<int>(added.size());
  const auto lang = sa->kind == Stage::Kind::source ? CodeView::Language::Cpp
                    : sa->kind == Stage::Kind::assembly ? CodeView::Language::Plain
                                                        : CodeView::Language::Python;
  text_a_->showText(ta.join('\n'), lang);
  text_b_->showText(tb.join('\n'), lang);
  text_a_->addMarks(removed, red_);
  text_a_->addMarks(pad_a, grey_a_);
  text_b_->addMarks(added, green_);
  text_b_->addMarks(pad_b, grey_b_);
  // The first change on either side, both texts there (their scroll bars follow each other only
  // once both have their lines laid out).
  const int first = std::min(!removed.isEmpty() ? removed.front() : INT_MAX, !added.isEmpty() ? added.front() : INT_MAX);
  text_a_->setFirstVisibleLine(first == INT_MAX ? 0 : std::max(0, first - 4));
  text_b_->setFirstVisibleLine(first == INT_MAX ? 0 : std::max(0, first - 4));

  summary_->setText(summary + tr(" &nbsp;|&nbsp; <b>Text:</b> <span style='color:#b03a2e'>−%1</span> "
                                 "<span style='color:#1e7e34'>+%2</span> lines &nbsp;|&nbsp; left: %3, right: %4 (%5)")
                                  .arg(removed_lines_)
                                  .arg(added_lines_)
                                  .arg(want_a_, want_b_, variant_->currentText()));
  if (dot.empty()) {
    graph_->showMessage(tr("No graph for this stage."));
    emit compared(true);
    return;
  }
  layouter_->layout(QString::fromStdString(dot));
}

QString DiffPanel::summary() const { return summary_->text(); }

}  // namespace ls
