// The Python script editor and its compile log: a PyTorch-style script runs in the embedded Python
// (core/script/) on a worker thread; what it prints streams into the output pane, each compiled
// graph (with why it was compiled, its guards and calls) and each graph break lands in the log,
// and choosing a graph shows its stages in the explorer.
#pragma once
#include <QFutureWatcher>
#include <QWidget>

#include "script/script.h"

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTreeWidget;

namespace ls {

class CodeView;

class ScriptPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ScriptPanel(QWidget* parent = nullptr);
  ~ScriptPanel() override;
  void setScript(const QString& text, const QString& path);
  QString script() const;
  QString path() const { return path_; }
  void run();   // runs the editor's text; finished() follows
  void stop();  // raises KeyboardInterrupt in the script
  bool running() const { return watcher_.isRunning(); }
  const ScriptRun& lastRun() const { return run_; }
  CodeView* editor() const { return editor_; }
  QPlainTextEdit* output() const { return output_; }
  QTreeWidget* log() const { return log_; }
  void chooseGraph(int index);  // as clicking the graph's row

 signals:
  void finished(bool ok);
  void graphChosen(int index);  // index into lastRun().graphs

 private:
  void onOutput(const QString& text);
  void onFinished();
  CodeView* editor_;
  QPlainTextEdit* output_;
  QTreeWidget* log_;
  QLabel* status_;
  QPushButton *run_button_, *stop_button_;
  QFutureWatcher<ScriptRun> watcher_;
  ScriptRun run_;
  QString path_ = "script.py";
};

}  // namespace ls
