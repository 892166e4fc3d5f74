// Owns the current model and its compile record; compiles in a worker thread and signals the
// result. No widgets here: views observe it.
#pragma once
#include <QFutureWatcher>
#include <QObject>
#include <QString>
#include <atomic>
#include <memory>

#include "pipeline/pipeline.h"

namespace ls {

class CompileSession : public QObject {
  Q_OBJECT
 public:
  explicit CompileSession(QObject* parent = nullptr);
  ~CompileSession() override;

  void open(const QString& path);  // loads and compiles; finished() or failed() follows
  void cancel();
  // Shows a record compiled elsewhere (a graph captured from a Python script): finished() follows.
  void showRecord(std::shared_ptr<const CompileResult> r);
  bool busy() const { return watcher_.isRunning(); }
  const CompileResult* result() const { return result_.get(); }
  PipelineOptions options;

 signals:
  void started(const QString& path);
  void finished();                                           // result() holds the new record
  void failed(const QString& stage, const QString& message); // result() holds the stages before it

 private:
  QFutureWatcher<std::shared_ptr<CompileResult>> watcher_;
  std::shared_ptr<CompileResult> result_;
  std::shared_ptr<CompileResult> previous_;
  std::shared_ptr<std::atomic<bool>> cancel_;
};

}  // namespace ls
