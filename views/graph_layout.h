// Graph layout with Graphviz: `dot -Tjson` runs as a child process (the library is neither
// thread-safe nor interruptible), so a layout never blocks the interface and can be cancelled.
#pragma once
#include <QColor>
#include <QObject>
#include <QPainterPath>
#include <QProcess>
#include <QRectF>
#include <QString>
#include <QTimer>
#include <QVector>

namespace ls {

struct LaidOutGraph {
  struct Node {
    QString id, label;
    QRectF rect;
    QColor fill;
    QColor stroke;        // the outline, where the graph gives one (saved tensors: red)
    double stroke_width = 1.0;
    bool dashed = false, ellipse = false;
  };
  struct Cluster {
    QString id, label;
    QRectF rect;
    QColor fill, stroke;
  };
  struct Edge {
    QPainterPath path;
    QPointF arrow_from, arrow_to;
    QString label, tooltip;
    QPointF label_pos;
    QColor color = Qt::darkGray;
  };
  QRectF bounds;
  QVector<Cluster> clusters;
  QVector<Node> nodes;
  QVector<Edge> edges;
  QString note;  // where the layouter drew the simpler form instead: why
};

// Parses Graphviz's JSON output (coordinates flipped to y-down); throws std::runtime_error.
LaidOutGraph parse_dot_json(const QByteArray& json);

class GraphLayouter : public QObject {
  Q_OBJECT
 public:
  explicit GraphLayouter(QObject* parent = nullptr);
  ~GraphLayouter() override { cancel(); }
  // Cancels a layout under way. With `simpler` (Stage::dot_simple), a drawing that Graphviz
  // refuses or that takes longer than simpler_after_ms is laid out in that form instead, and the
  // result's note says so.
  void layout(const QString& dot, const QString& simpler = {});
  int simpler_after_ms = 10000;
  void cancel();
  bool busy() const { return proc_ && proc_->state() != QProcess::NotRunning; }
  int timeout_ms = 30000;

 signals:
  void laidOut(const ls::LaidOutGraph& g);
  void failed(const QString& why);

 private:
  void start(const QString& dot, int limit_ms);
  // Graphviz gave up on the first form (its message): the simpler one instead, if there is one.
  bool fall_back(const QString& why);
  QProcess* proc_ = nullptr;
  QString simpler_, fell_back_;
  QTimer timer_;
};

}  // namespace ls
