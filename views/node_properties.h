// What the property panel says about one node of a stage: a graph node (op and overload, outputs
// with shape, strides, dtype and device, module path, source line, provenance, phase), a loop
// node, or a kernel; and, for any of them, the kernels it ends up in and their share of the run.
#pragma once
#include <QList>
#include <QPair>
#include <QString>

namespace ls {
struct CompileResult;

using Properties = QList<QPair<QString, QString>>;

// Empty when `id` names nothing in `stage`.
Properties node_properties(const CompileResult& r, const QString& stage, const QString& id);

// The share of the run's time spent in kernels made from the node `id` of `stage` (0..1), per
// node id of that stage: what the heat overlay paints. Kernels count fully for each node they cover.
QList<QPair<QString, double>> time_shares(const CompileResult& r, const QString& stage);

}  // namespace ls
