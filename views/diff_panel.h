// The Diff tab: a stage of the open compile against another stage of it, or against the same
// stage compiled another way (fusion off, CUDA, training, the other partitioner, Core ATen only).
// The graph diff is drawn in one layout (changed orange, added green, removed red and dashed),
// the changes are listed beside it, and the two texts are shown side by side, aligned, with the
// removed and added lines marked. The diff itself is core's (report/diff.h).
// Where the left side is a Dynamo graph of an opened TORCH_TRACE log, the variant "Inductor (from
// the trace)" sets PyTorch's own kernels for that graph against ours instead (InductorDiffView).
#pragma once
#include <QStringList>
#include <QWidget>
#include <memory>

#include "pipeline/pipeline.h"
#include "report/diff.h"

class QComboBox;
class QLabel;
class QPushButton;
class QStackedWidget;
class QTreeWidget;

namespace ls {

class CodeView;
class CompileSession;
class GraphLayouter;
class GraphView;
class InductorDiffView;
struct TorchTrace;

class DiffPanel : public QWidget {
  Q_OBJECT
 public:
  // `left` is the explorer's session: its record and options are the diff's left side.
  explicit DiffPanel(CompileSession* left, QWidget* parent = nullptr);

  // Refreshes the choices after the left side compiled (stages, the variants of its options).
  void leftChanged();
  // The right side's variants, as shown: "This compile", "Fusion off", "Target CUDA", ...
  QStringList variants() const;
  QStringList stages() const;  // the left side's stages
  // The trace whose compile `id` the left side compiles (null: none): offers the Inductor variant.
  void setTraceGraph(std::shared_ptr<const TorchTrace> trace, const QString& id);
  static QString inductorVariant();  // "Inductor (from the trace)"
  InductorDiffView* inductorView() const { return inductor_; }
  // Starts a diff; compared() follows once both sides are in and the graph is drawn. False when
  // a stage or variant named is not offered.
  bool compare(const QString& stage_a, const QString& variant, const QString& stage_b);

  QString summary() const;
  // Names of the nodes (graph stages) or kernels (fused stages) in each class, for tests and the list.
  QStringList names(Change c) const { return names_[static_cast<int>(c)]; }
  int removedLines() const { return removed_lines_; }
  int addedLines() const { return added_lines_; }
  GraphView* graphView() const { return graph_; }

 signals:
  void compared(bool ok);
  void nodesChosen(const QStringList& nodes);  // a row of the Inductor comparison: mark them in the explorer

 private:
  void compareNow();
  void showDiff();
  PipelineOptions variantOptions(int index) const;
  bool inductorChosen() const;

  CompileSession* left_;
  CompileSession* right_;  // the other compile, when the variant is not "This compile"
  GraphLayouter* layouter_;
  QComboBox* stage_a_;
  QComboBox* variant_;
  QComboBox* stage_b_;
  QPushButton* go_;
  QLabel* summary_;
  GraphView* graph_;
  QTreeWidget* changes_;
  CodeView* text_a_;
  CodeView* text_b_;
  QStackedWidget* pages_;  // the diff of two compiles, or the Inductor comparison
  InductorDiffView* inductor_;
  std::shared_ptr<const TorchTrace> trace_;
  QString trace_id_;
  std::shared_ptr<const CompileResult> a_, b_;
  QString want_a_, want_b_;
  QStringList names_[4];
  int removed_lines_ = 0, added_lines_ = 0;
  int red_ = 0, grey_a_ = 0, green_ = 0, grey_b_ = 0;  // line marks
  bool waiting_ = false;
};

}  // namespace ls
