// The command palette (Ctrl+Shift+P): every menu action and every stage of the open compile,
// found by typing part of its name (words in any order), run with Enter.
#pragma once
#include <QDialog>
#include <QList>
#include <functional>

class QLineEdit;
class QListWidget;
class QMenuBar;

namespace ls {

class CommandPalette : public QDialog {
  Q_OBJECT
 public:
  struct Entry {
    QString text;      // "View › Zoom to Fit"
    QString shortcut;  // "Ctrl+0"
    std::function<void()> run;
  };
  explicit CommandPalette(QWidget* parent = nullptr);
  // Replaces the entries: the menu bar's enabled actions (with their menu path), then `extra`.
  void setEntries(QMenuBar* menus, const QList<Entry>& extra);
  // Shows the entries matching `filter` (every word must occur, in any case); returns how many.
  int filter(const QString& text);
  QStringList shown() const;
  bool runCurrent();  // runs the selected entry and closes; false when none is selected

 private:
  QLineEdit* edit_;
  QListWidget* list_;
  QList<Entry> entries_;
};

}  // namespace ls
