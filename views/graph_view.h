// Draws a laid-out graph: nodes, fused-kernel clusters, edges with their labels. Items hold node
// ids, never the graph. Wheel zooms, drag pans, a click selects.
#pragma once
#include <QAbstractGraphicsShapeItem>
#include <QGraphicsView>
#include <QBrush>
#include <QHash>
#include <QList>
#include <QPen>
#include <QSet>

#include "graph_layout.h"

namespace ls {

class GraphView : public QGraphicsView {
  Q_OBJECT
 public:
  explicit GraphView(QWidget* parent = nullptr);
  void showGraph(const LaidOutGraph& g);
  void showMessage(const QString& text);
  void zoomToFit();
  void applyTheme();  // the canvas for the current theme (graphs redraw with it)
  // Marks the nodes with these ids (and clears marks on the others); returns how many matched.
  int highlight(const QSet<QString>& ids);
  int nodeCount() const { return node_count_; }
  int clusterCount() const { return cluster_count_; }
  // Nodes drawn with an outline of this colour (the saved tensors of a training step are red).
  int nodesOutlined(const QColor& c) const;
  // Paints each node or cluster with an id in `share` by its value (0..1: pale yellow to deep
  // red) and a "NN %" badge; an empty map restores the graph's own colours. Returns how many
  // items were painted.
  int setHeat(const QHash<QString, double>& share);
  // Scrolls the marked nodes (highlight()) into the middle of the view; false when none is marked.
  bool focusHighlighted();
  bool nodeInView(const QString& id) const;  // its box is (at least partly) in the visible area
  // Scrolls the node with this id into the middle of the view; false when it is not drawn.
  bool focusNode(const QString& id);

 signals:
  void nodeClicked(const QString& id);
  void nodeDoubleClicked(const QString& id);  // a folded module opens, a module's cluster folds

 protected:
  void wheelEvent(QWheelEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseDoubleClickEvent(QMouseEvent* e) override;

 private:
  int node_count_ = 0, cluster_count_ = 0;
  QHash<QString, QAbstractGraphicsShapeItem*> items_;  // node id -> its shape
  QHash<QString, QPen> pens_;
  QStringList marked_;  // ids marked by highlight(), in no particular order
  QHash<QString, QBrush> fills_;  // node id -> its own fill (restored when the heat goes off)
  QHash<QString, QAbstractGraphicsShapeItem*> clusters_;
  QHash<QString, QBrush> cluster_fills_;
  QList<QGraphicsItem*> badges_;
};

}  // namespace ls
