// Owns the current model and its compile record; compiles in a worker thread and signals the
// result. No widgets here: views observe it.
#pragma once
#include <QFutureWatcher>
#include <QObject>
#include <QString>
#include <atomic>
#include <functional>
#include <memory>

#include "pipeline/pipeline.h"

namespace ls {

class CompileSession : public QObject {
  Q_OBJECT
 public:
  explicit CompileSession(QObject* parent = nullptr);
  ~CompileSession() override;

  void open(const QString& path);  // loads and compiles; finished() or failed() follows
  // Compiles a model already loaded (a captured graph, or the other side of a diff) with options.
  void compileModel(const LoadedModel& model);
  void compileModel(const LoadedModel& model, const PipelineOptions& o);  // with options other than `options`
  void cancel();
  // Shows a record compiled elsewhere (a graph captured from a Python script): finished() follows.
  void showRecord(std::shared_ptr<const CompileResult> r);
  bool busy() const { return watcher_.isRunning(); }
  const CompileResult* result() const { return result_.get(); }
  std::shared_ptr<const CompileResult> shared() const { return result_; }
  // The model of result() as it was loaded: the record's own model is converted where the options
  // gave a dtype (a float32 model run as bfloat16), this one is not. Null before a compile.
  std::shared_ptr<const LoadedModel> loadedModel() const;
  PipelineOptions options;

 signals:
  void started(const QString& path);
  void captured();  // result() holds the captured graph alone; finished() or failed() follows
  void finished();                                           // result() holds the new record
  void failed(const QString& stage, const QString& message); // result() holds the stages before it

 private:
  void start(const QString& label, std::function<LoadedModel()> load, PipelineOptions o);
  struct Outcome {
    std::shared_ptr<CompileResult> result;
    std::shared_ptr<const LoadedModel> as_loaded;  // kept only where options.dtype converts it
  };
  QFutureWatcher<Outcome> watcher_;
  std::shared_ptr<CompileResult> result_;
  std::shared_ptr<const LoadedModel> as_loaded_;
  std::shared_ptr<CompileResult> previous_;
  std::shared_ptr<std::atomic<bool>> cancel_;
};

}  // namespace ls
