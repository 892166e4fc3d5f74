#include "graph_view.h"

#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QGraphicsSimpleTextItem>
#include <QMouseEvent>
#include <QPen>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "theme.h"

namespace ls {

namespace {
constexpr int kIdKey = 0;
}

GraphView::GraphView(QWidget* parent) : QGraphicsView(parent) {
  setScene(new QGraphicsScene(this));
  setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
  setDragMode(QGraphicsView::ScrollHandDrag);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setBackgroundBrush(QColor("#fbfbfd"));
}

void GraphView::applyTheme() { setBackgroundBrush(dark_theme() ? QColor("#25272b") : QColor("#fbfbfd")); }

void GraphView::showMessage(const QString& text) {
  applyTheme();
  scene()->clear();
  items_.clear();
  pens_.clear();
  fills_.clear();
  clusters_.clear();
  marked_.clear();
  cluster_fills_.clear();
  badges_.clear();
  node_count_ = cluster_count_ = 0;
  auto* t = scene()->addSimpleText(text);
  t->setBrush(dark_theme() ? QColor("#b0b4bb") : QColor("#555"));
  scene()->setSceneRect(t->boundingRect().adjusted(-20, -20, 20, 20));
  resetTransform();
}

void GraphView::showGraph(const LaidOutGraph& g) {
  QGraphicsScene* s = scene();
  s->clear();
  items_.clear();
  pens_.clear();
  fills_.clear();
  clusters_.clear();
  marked_.clear();
  cluster_fills_.clear();
  badges_.clear();
  QFont font("Helvetica", 8);
  applyTheme();
  const bool dark = dark_theme();
  for (const auto& c : g.clusters) {
    auto* r = s->addRect(c.rect, QPen(c.stroke, 1.2), QBrush(c.fill));
    r->setData(kIdKey, c.id);
    clusters_[c.id] = r;
    cluster_fills_[c.id] = r->brush();
    r->setToolTip(c.label);
    auto* t = s->addSimpleText(c.label, QFont("Helvetica", 8, QFont::Bold));
    t->setBrush(dark && c.fill.alpha() == 0 ? c.stroke.lighter(160) : c.stroke.darker(150));
    t->setPos(c.rect.left() + 6, c.rect.top() + 3);
  }
  for (const auto& e : g.edges) {
    const QColor ec = dark && e.color.lightness() < 110 ? QColor("#9aa4b2") : e.color;
    QPen pen(ec, 1.1);
    auto* path = s->addPath(e.path, pen);
    path->setToolTip(e.tooltip.isEmpty() ? e.label : e.tooltip);
    // Arrowhead towards the end point.
    const QPointF a = e.arrow_from, b = e.arrow_to;
    const double ang = std::atan2(b.y() - a.y(), b.x() - a.x());
    if (QLineF(a, b).length() > 0.5) {
      s->addLine(QLineF(a, b), pen);
      QPolygonF head;
      head << b << b - QPointF(std::cos(ang - 0.4) * 8, std::sin(ang - 0.4) * 8)
           << b - QPointF(std::cos(ang + 0.4) * 8, std::sin(ang + 0.4) * 8);
      s->addPolygon(head, pen, QBrush(ec));
    }
    if (!e.label.isEmpty()) {
      auto* t = s->addSimpleText(e.label, QFont("Helvetica", 7));
      t->setBrush(ec);
      t->setPos(e.label_pos - QPointF(t->boundingRect().width() / 2, t->boundingRect().height() / 2));
      t->setToolTip(e.tooltip);
    }
  }
  for (const auto& n : g.nodes) {
    QPen pen(n.stroke.isValid() ? n.stroke : QColor("#5b6b8c"), n.stroke_width);
    if (n.dashed) pen.setStyle(Qt::DashLine);
    QAbstractGraphicsShapeItem* item;
    if (n.ellipse) item = s->addEllipse(n.rect, pen, QBrush(n.fill));
    else {
      QPainterPath p;
      p.addRoundedRect(n.rect, 6, 6);
      item = s->addPath(p, pen, QBrush(n.fill));
    }
    items_[n.id] = item;
    pens_[n.id] = pen;
    fills_[n.id] = item->brush();
    item->setData(kIdKey, n.id);
    item->setToolTip(n.label);
    item->setFlag(QGraphicsItem::ItemIsSelectable);
    auto* t = new QGraphicsSimpleTextItem(n.label, item);
    t->setFont(font);
    const QRectF tb = t->boundingRect();
    t->setPos(n.rect.center() - QPointF(tb.width() / 2, tb.height() / 2));
  }
  node_count_ = g.nodes.size();
  cluster_count_ = g.clusters.size();
  s->setSceneRect(g.bounds.adjusted(-10, -10, 10, 10));
  zoomToFit();
}

int GraphView::highlight(const QSet<QString>& ids) {
  int matched = 0;
  marked_.clear();
  for (auto it = items_.begin(); it != items_.end(); ++it) {
    const bool on = ids.contains(it.key());
    QPen pen = pens_.value(it.key());
    if (on) {
      pen = QPen(QColor("#e8590c"), 3.0);
      ++matched;
      marked_ << it.key();
    }
    it.value()->setPen(pen);
  }
  return matched;
}

int GraphView::setHeat(const QHash<QString, double>& share) {
  for (QGraphicsItem* b : badges_) delete b;
  badges_.clear();
  int painted = 0;
  auto heat = [](double v) {  // pale yellow -> orange -> deep red
    v = std::clamp(v, 0.0, 1.0);
    const double t = std::sqrt(v);  // small shares stay visible
    return QColor::fromHsvF(static_cast<float>(0.15 * (1 - t)), static_cast<float>(0.15 + 0.8 * t), static_cast<float>(1.0 - 0.25 * t));
  };
  auto paint = [&](QHash<QString, QAbstractGraphicsShapeItem*>& items, const QHash<QString, QBrush>& own) {
    for (auto it = items.begin(); it != items.end(); ++it) {
      const auto v = share.find(it.key());
      if (v == share.end()) {
        it.value()->setBrush(own.value(it.key()));
        continue;
      }
      it.value()->setBrush(heat(v.value()));
      auto* badge = scene()->addSimpleText(QString::number(100.0 * v.value(), 'f', v.value() < 0.1 ? 1 : 0) + " %",
                                           QFont("Helvetica", 7, QFont::Bold));
      badge->setBrush(QColor("#7a1c00"));
      const QRectF r = it.value()->sceneBoundingRect();
      badge->setPos(r.right() - badge->boundingRect().width() - 3, r.top() + 1);
      badge->setZValue(10);
      badges_ << badge;
      ++painted;
    }
  };
  paint(items_, fills_);
  paint(clusters_, cluster_fills_);
  return painted;
}

void GraphView::zoomToFit() {
  resetTransform();
  const QRectF r = sceneRect();
  if (r.isEmpty()) return;
  fitInView(r, Qt::KeepAspectRatio);
  if (transform().m11() > 1.5) setTransform(QTransform::fromScale(1.5, 1.5));  // small graphs stay readable
  if (transform().m11() < 0.35) {  // a tall or wide graph: readable at its start rather than whole and tiny
    setTransform(QTransform::fromScale(0.8, 0.8));
    // Its start: the topmost box (a wide graph's middle column may be empty at the top).
    double x = r.center().x(), top = r.bottom();
    for (const auto* item : std::as_const(items_)) {
      const QRectF b = item->sceneBoundingRect();
      if (b.top() < top) top = b.top(), x = b.center().x();
    }
    centerOn(x, r.top() + viewport()->height() / 1.6);
  }
}

void GraphView::wheelEvent(QWheelEvent* e) {
  const double f = std::pow(1.0015, e->angleDelta().y());
  scale(f, f);
}

void GraphView::mousePressEvent(QMouseEvent* e) {
  QGraphicsView::mousePressEvent(e);
  for (QGraphicsItem* it = itemAt(e->pos()); it; it = it->parentItem()) {
    const QString id = it->data(kIdKey).toString();
    if (!id.isEmpty()) {
      emit nodeClicked(id);
      return;
    }
  }
}

void GraphView::mouseDoubleClickEvent(QMouseEvent* e) {
  for (QGraphicsItem* it = itemAt(e->pos()); it; it = it->parentItem()) {
    const QString id = it->data(kIdKey).toString();
    if (!id.isEmpty()) {
      emit nodeDoubleClicked(id);
      return;
    }
  }
  QGraphicsView::mouseDoubleClickEvent(e);
}

int GraphView::nodesOutlined(const QColor& c) const {
  int n = 0;
  for (auto it = pens_.begin(); it != pens_.end(); ++it) n += it.value().color() == c;
  return n;
}

bool GraphView::nodeInView(const QString& id) const {
  auto* it = items_.value(id);
  return it && mapToScene(viewport()->rect()).boundingRect().intersects(it->sceneBoundingRect());
}

bool GraphView::focusHighlighted() {
  QRectF box, top;
  for (const QString& id : marked_)
    if (auto* it = items_.value(id)) {
      const QRectF r = it->sceneBoundingRect();
      box = box.united(r);
      if (top.isNull() || r.top() < top.top() || (r.top() == top.top() && r.left() < top.left())) top = r;
    }
  if (box.isNull()) return false;
  // All of them when they fit; else the topmost (their middle may be empty canvas far from any).
  const QRectF view = mapToScene(viewport()->rect()).boundingRect();
  centerOn(box.width() <= view.width() && box.height() <= view.height() ? box.center() : top.center());
  return true;
}

bool GraphView::focusNode(const QString& id) {
  auto it = items_.find(id);
  if (it == items_.end()) return false;
  centerOn(it.value());
  return true;
}

}  // namespace ls
