// The pipeline's stages as a list: title, node count and time.
#pragma once
#include <QAbstractListModel>

namespace ls {
struct CompileResult;

class StageListModel : public QAbstractListModel {
  Q_OBJECT
 public:
  enum Role { NameRole = Qt::UserRole + 1 };
  using QAbstractListModel::QAbstractListModel;
  void setResult(const CompileResult* r);
  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  int rowOf(const QString& name) const;  // -1 when absent; a unique prefix also matches

 private:
  const CompileResult* r_ = nullptr;
};
}  // namespace ls
