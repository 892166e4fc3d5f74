#include "trace_session.h"

#include <QDir>
#include <QFileInfo>
#include <QtConcurrent/QtConcurrent>
#include <algorithm>
#include <set>

#include "report/capture_report.h"
#include "report/trace_report.h"

namespace ls {

bool is_trace_path(const QString& path) {
  const QFileInfo f(path);
  if (f.isDir() && is_capture_folder(path.toStdString())) return true;
  if (f.isDir()) return !QDir(path).entryList({"*.log"}, QDir::Files).isEmpty();
  return f.suffix().compare("log", Qt::CaseInsensitive) == 0;
}

TraceSession::TraceSession(QObject* parent) : QObject(parent) {
  connect(&watcher_, &QFutureWatcher<Outcome>::finished, this, [this] {
    if (watcher_.isCanceled() || watcher_.future().resultCount() == 0) return;
    Outcome o = watcher_.result();
    if (!o.trace) {
      trace_.reset();
      capture_.reset();
      watchCapture();
      emit failed(QString::fromStdString(o.error));
      return;
    }
    trace_ = std::move(o.trace);
    capture_ = std::move(o.capture);
    watchCapture();
    emit loaded();
  });
  settle_.setSingleShot(true);
  settle_.setInterval(400);
  connect(&folder_watcher_, &QFileSystemWatcher::directoryChanged, this, [this] { settle_.start(); });
  connect(&settle_, &QTimer::timeout, this, [this] {
    if (!capture_ || busy()) return settle_.start();
    const QDateTime stamp = QFileInfo(QDir(QString::fromStdString(capture_->path)).filePath("capture.json")).lastModified();
    if (stamp.isValid() && stamp != manifest_stamp_) {
      manifest_stamp_ = stamp;
      emit captureChanged();
    }
  });
  connect(&compile_watcher_, &QFutureWatcher<std::shared_ptr<TorchTrace>>::finished, this, [this] {
    auto t = compile_watcher_.result();
    if (!t || !trace_ || t->path != trace_->path || watcher_.isRunning()) return;  // another trace came meanwhile
    trace_ = std::move(t);
    emit compiledAll();
  });
}

TraceSession::~TraceSession() {
  cancel();
  watcher_.waitForFinished();
  compile_watcher_.waitForFinished();
}

void TraceSession::compileAll(const PipelineOptions& o) {
  if (!trace_ || compile_watcher_.isRunning()) return;
  auto copy = std::make_shared<TorchTrace>(*trace_);
  cancel_ = std::make_shared<std::atomic<bool>>(false);  // Cancel stops it between two graphs
  auto flag = cancel_;
  QPointer<TraceSession> self(this);
  auto progress = [self, flag](size_t done, size_t total) {
    QMetaObject::invokeMethod(qApp, [self, done, total] {
      if (self) emit self->compiling(int(done), int(total));
    }, Qt::QueuedConnection);
    return !(flag && flag->load());
  };
  compile_watcher_.setFuture(QtConcurrent::run([copy, cap = capture_, o, progress]() -> std::shared_ptr<TorchTrace> {
    if (cap) compile_capture_graphs(*cap, o, copy.get(), progress);  // on the example inputs
    else compile_trace_graphs(*copy, o, progress);
    return copy;
  }));
}

void TraceSession::open(const QString& path) {
  cancel();
  watcher_.waitForFinished();
  compile_watcher_.waitForFinished();
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  path_ = path;
  emit started(path);
  auto flag = cancel_;
  TraceLimits limits;
  // Called on the reading thread about every MiB: the window hears of it through its event loop.
  QPointer<TraceSession> self(this);
  limits.progress = [self, flag](size_t done, size_t total) {
    QMetaObject::invokeMethod(qApp, [self, flag, done, total] {
      if (self && flag == self->cancel_ && !flag->load()) emit self->progress(qint64(done), qint64(total));
    }, Qt::QueuedConnection);
    return !flag->load();
  };
  const std::string p = path.toStdString();
  watcher_.setFuture(QtConcurrent::run([p, limits]() -> Outcome {
    Outcome o;
    try {
      if (is_capture_folder(p)) {
        o.capture = std::make_shared<Capture>(read_capture(p));
        o.trace = std::make_shared<TorchTrace>(capture_as_trace(*o.capture));
        return o;
      }
      o.trace = std::make_shared<TorchTrace>(read_torch_trace(p, limits));
    } catch (const std::exception& e) {  // nothing readable, no such file, or cancelled
      o.error = e.what();
    }
    return o;
  }));
}

void TraceSession::watchCapture() {
  if (!folder_watcher_.directories().isEmpty()) folder_watcher_.removePaths(folder_watcher_.directories());
  if (!capture_) return;
  const QString dir = QString::fromStdString(capture_->path);
  manifest_stamp_ = QFileInfo(QDir(dir).filePath("capture.json")).lastModified();
  folder_watcher_.addPath(dir);
}

const CaptureGraph* TraceSession::captureGraph(const QString& id) const {
  if (!capture_ || !trace_) return nullptr;
  for (size_t i = 0; i < trace_->compiles.size() && i < capture_->graphs.size(); ++i)
    if (QString::fromStdString(trace_->compiles[i].id()) == id) return &capture_->graphs[i];
  return nullptr;
}

void TraceSession::cancel() {
  if (cancel_) cancel_->store(true);
}

}  // namespace ls
