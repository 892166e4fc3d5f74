// A TORCH_TRACE log as the script panel's compile log shows a script's compiles: frames with their
// compile ids and Dynamo graphs (PyTorch's stages present, Inductor's kernel count, ours), graph
// breaks de-duplicated with their source lines, recompiles with the guard that failed, failures,
// the compile-time breakdown and the log's warnings. Below, PyTorch's own artifacts for the chosen
// graph: its kernels beside ours, Inductor's output code, the Dynamo/AOT/Inductor graphs, the
// guards. Choosing a graph asks MainWindow to compile it with our pipeline (graphChosen).
#pragma once
#include <QMap>
#include <QWidget>

class QChartView;
class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QTabWidget;
class QTableView;
class QTreeWidget;
class QTreeWidgetItem;

namespace ls {

struct CompileResult;
struct TraceCompile;
class CodeView;
class TraceKernelModel;
class TraceSession;

class TracePanel : public QWidget {
  Q_OBJECT
 public:
  // The roles of the log's items: the compile id a row is about (graph rows and the breaks,
  // recompiles and failures that name one), and which section it is in.
  enum Role { CompileIdRole = Qt::UserRole, KindRole };
  explicit TracePanel(TraceSession* session, QWidget* parent = nullptr);
  QTreeWidget* log() const { return log_; }
  QTreeWidgetItem* section(const QString& kind) const;  // "frames", "breaks", "recompiles", "failures", "phases", "warnings"
  QTreeWidgetItem* graphItem(const QString& id) const;   // the row of compile `id`
  // Selects the row of compile `id` (as clicking it): graphChosen follows where it has a Dynamo graph.
  bool chooseGraph(const QString& id);
  QString currentGraph() const { return current_; }
  // Our compile of the chosen graph (or a failed one): the row's columns and the kernel table.
  void setOurs(const QString& id, const CompileResult* r);
  TraceKernelModel* kernelModel() const { return kernels_model_; }
  QTableView* kernelTable() const { return kernels_; }
  QString kernelSummary() const;
  CodeView* outputCode() const { return output_code_; }
  CodeView* graphText() const { return graph_text_; }
  CodeView* guards() const { return guards_; }
  QComboBox* graphKinds() const { return graph_kind_; }
  QTabWidget* details() const { return details_; }
  QString status() const;
  QPushButton* compileAllButton() const { return compile_all_; }

 signals:
  void graphChosen(const QString& id);
  void nodesChosen(const QStringList& nodes);  // a kernel's nodes, to be marked in the explorer
  void compileAllRequested();  // the Compile all button: MainWindow starts it with the options set

 private:
  void onStarted(const QString& path);
  void onLoaded();
  void onFailed(const QString& why);
  void showDetails(const TraceCompile* c);
  void showCode(int index, int line);
  void refreshOurs(const QString& id);
  struct Ours;
  void showOurs(const QString& id, const Ours& o);  // the graph's row
  QTreeWidgetItem* addSection(const QString& kind, const QString& title);
  TraceSession* session_;
  QLabel* status_;
  QProgressBar* progress_;
  QPushButton* cancel_;
  QPushButton* compile_all_;
  QTreeWidget* log_;
  QTabWidget* details_;
  QLabel* kernel_summary_;
  TraceKernelModel* kernels_model_;
  QTableView* kernels_;
  QComboBox* code_kind_;
  CodeView* output_code_;
  QComboBox* graph_kind_;
  CodeView* graph_text_;
  CodeView* guards_;
  QChartView* phases_;
  QString current_;
  // What our compile of each graph gave, kept while other graphs are chosen.
  struct Ours {
    int generated = 0, library = 0;
    QString check;  // ok | FAILED | not run | failed at '<stage>'
    QString why;
  };
  QMap<QString, Ours> ours_;
};

}  // namespace ls
