// Owns an opened TORCH_TRACE log (core's frontend/torch_trace.h): reads it on a worker thread with
// progress and Cancel, and signals the result. No widgets here: TracePanel and MainWindow observe it.
// Also what the panel's kernel table shows: Inductor's kernels set against ours, node by node.
#pragma once
#include <QDateTime>
#include <QFileSystemWatcher>
#include <QFutureWatcher>
#include <QObject>
#include <QTimer>
#include <QString>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "frontend/capture.h"
#include "frontend/torch_trace.h"
#include "pipeline/pipeline.h"

namespace ls {

struct CompileResult;

// A path the app opens as a trace: a .log file, or a folder holding a TORCH_TRACE log
// (dedicated_log_torch_trace_*.log, as TORCH_TRACE=dir writes), or a capture folder (capture.json,
// written by the lowerscope torch.compile backend: frontend/capture.h), shown as a trace is.
bool is_trace_path(const QString& path);

class TraceSession : public QObject {
  Q_OBJECT
 public:
  explicit TraceSession(QObject* parent = nullptr);
  ~TraceSession() override;
  void open(const QString& path);  // progress() while reading, then loaded() or failed()
  void cancel();
  bool busy() const { return watcher_.isRunning() || compile_watcher_.isRunning(); }
  // Compiles every Dynamo graph of the trace with our pipeline (report/trace_report.h) on a
  // worker thread: compiling() before each, then compiledAll() with each compile's `ours` filled.
  void compileAll(const PipelineOptions& o);
  QString path() const { return path_; }
  // The trace last read (null before one is, and after a read failed).
  std::shared_ptr<const TorchTrace> trace() const { return trace_; }
  // Where a capture folder was opened: the capture (its graphs in the trace's compile order), else null.
  std::shared_ptr<const Capture> capture() const { return capture_; }
  const CaptureGraph* captureGraph(const QString& id) const;  // the graph of compile `id`

 signals:
  void started(const QString& path);
  void progress(qint64 done, qint64 total);  // bytes
  void loaded();
  void failed(const QString& message);
  void compiling(int done, int total);
  void compiledAll();
  // The open capture folder's manifest changed (the backend wrote a new graph or its guards).
  void captureChanged();

 private:
  struct Outcome {
    std::shared_ptr<TorchTrace> trace;
    std::shared_ptr<Capture> capture;
    std::string error;
  };
  void watchCapture();
  QFutureWatcher<Outcome> watcher_;
  QFutureWatcher<std::shared_ptr<TorchTrace>> compile_watcher_;
  std::shared_ptr<const TorchTrace> trace_;
  std::shared_ptr<const Capture> capture_;
  QFileSystemWatcher folder_watcher_;  // the capture folder: new graphs come while the program runs
  QTimer settle_;                      // waits for the writes to settle before captureChanged
  QDateTime manifest_stamp_;
  std::shared_ptr<std::atomic<bool>> cancel_;
  QString path_;
};

// One row of the kernel table: an Inductor kernel and the nodes of the Dynamo graph it covers,
// beside our kernels that cover any of those nodes. Our kernels that cover none of Inductor's
// nodes come last, with an empty Inductor side.
struct KernelPair {
  std::string inductor;       // kernel name ("" for a row of ours alone)
  std::string kind;           // triton | cpp | extern ...
  std::string code;           // the output code it is in: "forward", "backward", "inference"
  int line = 0;               // in that output code (1-based)
  int code_index = -1;        // index into TraceCompile::output_code
  std::vector<std::string> nodes;  // the Dynamo graph's nodes it covers
  std::vector<std::string> ours;   // our kernels covering any of them ("name (library)" for library calls)
};

}  // namespace ls
