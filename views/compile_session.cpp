#include "compile_session.h"

#include <QtConcurrent/QtConcurrent>

namespace ls {

CompileSession::CompileSession(QObject* parent) : QObject(parent) {
  connect(&watcher_, &QFutureWatcher<Outcome>::finished, this, [this] {
    Outcome out = watcher_.result();
    auto r = out.result;
    if (!r) return;
    previous_ = std::move(result_);  // the views still show it until they take the new one
    result_ = r;
    as_loaded_ = std::move(out.as_loaded);
    if (!r->error.empty()) emit failed(QString::fromStdString(r->error_stage), QString::fromStdString(r->error));
    else emit finished();
  });
}

CompileSession::~CompileSession() {
  cancel();
  watcher_.waitForFinished();
}

void CompileSession::open(const QString& path) {
  const std::string p = path.toStdString();
  start(path, [p] { return load_model(p); }, options);
}

void CompileSession::compileModel(const LoadedModel& model) { compileModel(model, options); }

void CompileSession::compileModel(const LoadedModel& model, const PipelineOptions& o) {
  start(QString::fromStdString(model.path), [model] { return model; }, o);
}

void CompileSession::start(const QString& label, std::function<LoadedModel()> load, PipelineOptions o) {
  cancel();
  watcher_.waitForFinished();
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  emit started(label);
  auto flag = cancel_;
  const std::string name = label.toStdString();
  // The captured graph is shown while the rest compiles (unless this compile was cancelled).
  o.on_capture = [this, flag](const CompileResult& so_far) {
    auto partial = std::make_shared<CompileResult>(so_far);
    QMetaObject::invokeMethod(this, [this, flag, partial] {
      if (flag->load() || flag != cancel_) return;
      previous_ = std::move(result_);
      result_ = partial;
      as_loaded_ = nullptr;
      emit captured();
    }, Qt::QueuedConnection);
  };
  watcher_.setFuture(QtConcurrent::run([load = std::move(load), name, o, flag]() -> Outcome {
    Outcome out{std::make_shared<CompileResult>(), nullptr};
    CompileResult& r = *out.result;
    try {
      LoadedModel m = load();
      // A dtype converts the record's model; the diff's other side may want it as it came.
      if (o.dtype) out.as_loaded = std::make_shared<const LoadedModel>(m);
      r = run_pipeline(std::move(m), o, [flag] { return flag->load(); });
    } catch (const std::exception& e) {  // the model could not be loaded
      r.model.path = name;
      r.error = e.what();
      r.error_stage = "capture";
    }
    return out;
  }));
}

std::shared_ptr<const LoadedModel> CompileSession::loadedModel() const {
  if (as_loaded_) return as_loaded_;
  return result_ ? std::shared_ptr<const LoadedModel>(result_, &result_->model) : nullptr;
}

void CompileSession::showRecord(std::shared_ptr<const CompileResult> r) {
  if (!r) return;
  cancel();
  watcher_.waitForFinished();
  previous_ = std::move(result_);
  result_ = std::const_pointer_cast<CompileResult>(r);  // the views only read it
  as_loaded_ = nullptr;
  emit started(QString::fromStdString(r->model.path));
  if (!r->error.empty()) emit failed(QString::fromStdString(r->error_stage), QString::fromStdString(r->error));
  else emit finished();
}

void CompileSession::cancel() {
  if (cancel_) cancel_->store(true);
}

}  // namespace ls
