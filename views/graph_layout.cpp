#include "graph_layout.h"

#include <QStandardPaths>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <stdexcept>
#include <utility>

namespace ls {
namespace {

QPointF point(const std::string& s, double height) {
  const auto c = s.find(',');
  return {std::stod(s.substr(0, c)), height - std::stod(s.substr(c + 1))};
}

QRectF bbox(const std::string& s, double height) {
  double x0, y0, x1, y1;
  if (std::sscanf(s.c_str(), "%lf,%lf,%lf,%lf", &x0, &y0, &x1, &y1) != 4) throw std::runtime_error("bad bb '" + s + "'");
  return QRectF(QPointF(x0, height - y1), QPointF(x1, height - y0));
}

QString label_of(const nlohmann::json& o) {
  QString l = QString::fromStdString(o.value("label", o.value("name", std::string())));
  l.replace("\\n", "\n");
  return l;
}

}  // namespace

LaidOutGraph parse_dot_json(const QByteArray& data) {
  const auto j = nlohmann::json::parse(data.begin(), data.end());
  LaidOutGraph g;
  const QRectF b = bbox(j.at("bb").get<std::string>(), 0);
  const double h = -b.top();  // bb is "0,0,w,h": flipped top is -h
  g.bounds = QRectF(0, 0, b.width(), h);
  std::vector<QPointF> centers;
  for (const auto& o : j.value("objects", nlohmann::json::array())) {
    // A subgraph: clusters have a bb, one without nodes has neither (nothing to draw).
    if (o.contains("nodes") || o.contains("bb") || o.value("name", std::string()).rfind("cluster", 0) == 0) {
      if (!o.contains("bb")) continue;
      LaidOutGraph::Cluster c;
      c.id = QString::fromStdString(o.value("id", o.value("name", std::string())));
      c.label = label_of(o);
      c.rect = bbox(o["bb"].get<std::string>(), h);
      c.fill = QColor(QString::fromStdString(o.value("fillcolor", std::string("#f5f0ff"))));
      c.stroke = QColor(QString::fromStdString(o.value("color", std::string("#8a6fd1"))));
      g.clusters.push_back(c);
      continue;
    }
    LaidOutGraph::Node n;
    n.id = QString::fromStdString(o.value("id", o.value("name", std::string())));
    n.label = label_of(o);
    const QPointF c = point(o.at("pos").get<std::string>(), h);
    const double w = std::stod(o.value("width", std::string("1"))) * 72, hh = std::stod(o.value("height", std::string("0.5"))) * 72;
    n.rect = QRectF(c.x() - w / 2, c.y() - hh / 2, w, hh);
    n.fill = QColor(QString::fromStdString(o.value("fillcolor", std::string("#eef3fb"))));
    if (o.contains("color")) n.stroke = QColor(QString::fromStdString(o["color"].get<std::string>()));
    if (o.contains("penwidth")) n.stroke_width = std::stod(o["penwidth"].get<std::string>());
    n.dashed = o.value("style", std::string()).find("dashed") != std::string::npos;
    n.ellipse = o.value("shape", std::string()) == "oval" || o.value("shape", std::string()) == "ellipse";
    g.nodes.push_back(n);
  }
  for (const auto& e : j.value("edges", nlohmann::json::array())) {
    LaidOutGraph::Edge edge;
    const std::string pos = e.value("pos", std::string());
    std::vector<QPointF> pts;
    bool has_end = false;
    size_t i = 0;
    while (i < pos.size()) {
      size_t k = pos.find(' ', i);
      if (k == std::string::npos) k = pos.size();
      const std::string tok = pos.substr(i, k - i);
      i = k + 1;
      if (tok.rfind("e,", 0) == 0) { edge.arrow_to = point(tok.substr(2), h); has_end = true; }
      else if (tok.rfind("s,", 0) == 0) continue;
      else if (!tok.empty()) pts.push_back(point(tok, h));
    }
    if (pts.empty()) continue;
    edge.path.moveTo(pts[0]);
    for (size_t p = 1; p + 2 < pts.size(); p += 3) edge.path.cubicTo(pts[p], pts[p + 1], pts[p + 2]);
    edge.arrow_from = pts.back();
    if (!has_end) edge.arrow_to = pts.back();
    edge.label = QString::fromStdString(e.value("label", std::string()));
    edge.tooltip = QString::fromStdString(e.value("tooltip", std::string()));
    if (e.contains("lp")) edge.label_pos = point(e["lp"].get<std::string>(), h);
    if (e.contains("color")) edge.color = QColor(QString::fromStdString(e["color"].get<std::string>()));
    g.edges.push_back(edge);
  }
  return g;
}

GraphLayouter::GraphLayouter(QObject* parent) : QObject(parent) {
  timer_.setSingleShot(true);
  connect(&timer_, &QTimer::timeout, this, [this] {
    const int ms = timer_.interval();
    cancel();
    const QString why = tr("Graphviz took longer than %1 s and was stopped.").arg(ms / 1000);
    if (!fall_back(why)) emit failed(why);
  });
}

void GraphLayouter::cancel() {
  timer_.stop();
  if (proc_) {
    proc_->disconnect(this);
    proc_->kill();
    proc_->waitForFinished(1000);
    proc_->deleteLater();
    proc_ = nullptr;
  }
}

void GraphLayouter::layout(const QString& dot, const QString& simpler) {
  simpler_ = simpler;
  fell_back_.clear();
  start(dot, simpler.isEmpty() ? timeout_ms : std::min(simpler_after_ms, timeout_ms));
}

bool GraphLayouter::fall_back(const QString& why) {
  if (simpler_.isEmpty()) return false;
  fell_back_ = tr("Drawn as a box per kernel: %1").arg(why);
  start(std::exchange(simpler_, QString()), timeout_ms);
  return true;
}

void GraphLayouter::start(const QString& dot, int limit_ms) {
  cancel();
  const QString exe = QStandardPaths::findExecutable("dot");
  if (exe.isEmpty()) {
    emit failed(tr("Graphviz's 'dot' program was not found: install the 'graphviz' package to see graphs."));
    return;
  }
  proc_ = new QProcess(this);
  QProcess* p = proc_;
  connect(p, &QProcess::finished, this, [this, p](int code, QProcess::ExitStatus st) {
    if (p != proc_) return;
    timer_.stop();
    proc_ = nullptr;
    p->deleteLater();
    if (st != QProcess::NormalExit || code != 0) {
      // dot can print thousands of lines for one failure ("trouble in init_rank", then a line per
      // rank): its first line says what it was.
      const QStringList lines = QString::fromLocal8Bit(p->readAllStandardError()).trimmed().split('\n');
      QString said = lines.value(0).left(300);
      if (lines.size() > 1) said += tr(" (and %1 more lines of dot's output)").arg(lines.size() - 1);
      const QString why = tr("Graphviz failed: %1").arg(said);
      if (!fall_back(why)) emit failed(why);
      return;
    }
    try {
      LaidOutGraph g = parse_dot_json(p->readAllStandardOutput());
      g.note = fell_back_;
      emit laidOut(g);
    } catch (const std::exception& e) {
      emit failed(tr("Cannot read Graphviz's layout: %1").arg(e.what()));
    }
  });
  connect(p, &QProcess::errorOccurred, this, [this, p](QProcess::ProcessError err) {
    if (err != QProcess::FailedToStart || p != proc_) return;
    timer_.stop();
    proc_ = nullptr;
    p->deleteLater();
    emit failed(tr("Cannot start Graphviz's 'dot'."));
  });
  p->start(exe, {"-Tjson"});
  p->write(dot.toUtf8());
  p->closeWriteChannel();
  timer_.start(limit_ms);
}

}  // namespace ls
