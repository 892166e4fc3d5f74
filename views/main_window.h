// The main window: stages on the left, the stage's graph beside its text or generated source,
// kernels and the check below. Logic lives in CompileSession; this only arranges and draws.
#pragma once
#include <QMainWindow>
#include <map>
#include <memory>
#include <set>
#include <string>

class QAction;
class QDockWidget;
class QDragEnterEvent;
class QDropEvent;
class QCloseEvent;
class QLabel;
class QLineEdit;
class QMenu;
class QTreeWidget;
class QListView;
class QTableView;
class QProgressBar;
class QPushButton;
class QSplitter;
class QTabWidget;

namespace ls {

struct LoadedModel;
struct Graph;
struct CompileResult;

class CodeView;
class CommandPalette;
class CompileSession;
class DiffPanel;
class GraphLayouter;
class GraphView;
class KernelTableModel;
class PartitionModel;
class ProfileView;
class ScriptPanel;
class StageListModel;
class TracePanel;
class TraceSession;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  void openModel(const QString& path);  // a .py file opens as a script and runs
  // Compiles a model loaded (or built) elsewhere, as openModel does a file.
  void openLoadedModel(const LoadedModel& model);
  // Loads a Python script into the script panel and runs it; its first compiled graph is shown.
  void openScript(const QString& path);
  ScriptPanel* scriptPanel() const { return script_; }
  // Opens a TORCH_TRACE log or folder (read in the background; traceOpened follows) and compiles
  // `graph` (a compile id such as "4/0"), or its first Dynamo graph, with our pipeline.
  void openTrace(const QString& path, const QString& graph = {});
  TracePanel* tracePanel() const { return trace_; }
  TraceSession* traceSession() const { return trace_session_; }
  bool selectStage(const QString& name_or_prefix);  // false when no stage matches
  QString currentStage() const;
  CompileSession* session() const { return session_; }
  GraphView* graphView() const { return graph_; }
  CodeView* codeView() const { return code_; }
  QTableView* kernelTable() const { return kernels_; }
  DiffPanel* diffPanel() const { return diff_; }
  QTabWidget* tabs() const { return tabs_; }
  QString errorText() const;
  // Selects a node of the shown stage by its id (graph node, loop node or kernel name): its
  // provenance tree is shown and what it became is marked in every stage.
  void selectNode(const QString& id);
  QStringList selectedOrigins() const { return origins_; }
  QTreeWidget* provenanceTree() const { return provenance_; }
  QTreeWidget* propertiesTree() const { return properties_; }
  ProfileView* profileView() const { return profile_; }
  // The heat overlay: nodes and kernels painted by their share of the run's time.
  void setHeatOverlay(bool on);
  int heatPainted() const { return heat_painted_; }
  QTableView* partitionTable() const { return partition_; }
  QString partitionSummary() const;
  // Training mode and the partitioner (recompiles the open model).
  void setTraining(bool on);
  void setPartitioner(bool min_cut);
  // Nodes of the shown stage whose name, op or module path contains `text`; the first is
  // selected and scrolled into view. Returns how many matched.
  int findNodes(const QString& text);
  // Writes the compile as a folder (stages, .dot and .svg, source, report.json); the message
  // that says what was written goes to the status bar and is returned.
  QString exportFolder(const QString& dir);
  // Writes the compile as a package that builds and runs without Lowerscope (core's
  // export_package); returns what was written, or the sentence saying why it cannot be.
  QString exportPackage(const QString& dir);
  QStringList recentFiles() const;
  // The command palette, filled with every action and stage (shown unless `show` is false).
  CommandPalette* commandPalette(bool show = true);
  void setDarkTheme(bool dark);
  int highlightedCount() const { return highlighted_; }
  // Large graphs start with their modules folded: open one (its path), fold one and what is in
  // it, or fold everything. The shown stage is laid out again.
  void expandModule(const QString& path);
  void collapseModule(const QString& path);
  void collapseAll();
  QStringList expandedModules() const;
  int markedSourceLines() const { return marked_lines_; }

 signals:
  void compileDone(bool ok);           // the record is in; ok: no stage failed
  void stageShown(const QString& name); // the stage's graph (if any) is laid out and drawn
  void traceOpened(bool ok);           // a trace was read (its first graph is chosen) or could not be

 private:
  void buildActions();
  void recompile();  // the open model, or the trace graph chosen, with the options now set
  void compileTraceGraph(const QString& id);
  void showStage(int row);
  void onFinished();
  void onCaptured();
  void setBusy(bool on);  // the status bar's running bar and Cancel
  void onFailed(const QString& stage, const QString& message);
  void showError(const QString& text);
  void markKernel(int kernel);
  void applyHighlight();
  void buildProvenance();
  void showProperties(const QString& id);
  void applyHeat();
  void rememberRecent(const QString& path);
  void rebuildRecentMenu();
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;
  void closeEvent(QCloseEvent* e) override;

  CompileSession* session_;
  GraphLayouter* layouter_;
  StageListModel* stages_model_;
  KernelTableModel* kernels_model_;
  QListView* stages_;
  GraphView* graph_;
  CodeView* code_;
  QTableView* kernels_;
  PartitionModel* partition_model_;
  QTableView* partition_;
  QLabel* partition_summary_;
  QAction* train_action_ = nullptr;
  QAction* min_cut_action_ = nullptr;
  QAction* default_partition_action_ = nullptr;
  QLabel* banner_;
  QLabel* summary_;
  QLabel* progress_;
  QPushButton* cancel_;
  QProgressBar* busy_;
  QSplitter* split_;
  QTreeWidget* provenance_;
  QTreeWidget* properties_;
  ProfileView* profile_;
  QAction* heat_action_ = nullptr;
  int heat_painted_ = 0;
  std::set<std::string> expanded_;  // modules opened in folded graphs (kept while stepping stages)
  // Big graphs without module paths, drawn folded by runs of nodes (drawnGraph), per stage.
  struct DrawnGraph {
    const Graph* source = nullptr;
    std::shared_ptr<const Graph> graph;
  };
  std::map<std::string, DrawnGraph> drawn_;
  const Graph* drawnGraph(const CompileResult& r, const std::string& stage);
  bool expansion_chosen_ = false;   // expanded_ holds the first choice or the user's, for this model
  QString selected_id_;   // the node last selected (focused first when a stage is drawn)
  QString pending_focus_;           // a node to scroll to once the new layout is in
  QString restore_stage_;           // the stage to show when a compile finishes
  QStringList origins_;  // the user-level nodes selected
  QString selection_model_;  // the model they belong to
  int highlighted_ = 0;
  int marked_lines_ = 0;
  bool syncing_ = false;  // set while one view updates another, so they do not echo
  QString path_;
  QMenu* recent_menu_ = nullptr;
  QLineEdit* find_ = nullptr;
  ScriptPanel* script_ = nullptr;
  QDockWidget* script_dock_ = nullptr;
  TraceSession* trace_session_ = nullptr;
  TracePanel* trace_ = nullptr;
  QDockWidget* trace_dock_ = nullptr;
  QString trace_graph_;    // the trace's compile id shown in the explorer ("" when a model is)
  QString pending_graph_;  // the compile id to choose once the trace is read
  QTabWidget* tabs_ = nullptr;
  DiffPanel* diff_ = nullptr;
  CommandPalette* palette_ = nullptr;
  QAction* dark_action_ = nullptr;
};

}  // namespace ls
