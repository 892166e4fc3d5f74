#include "command_palette.h"

#include <QAction>
#include <QKeyEvent>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QMenuBar>
#include <QSignalBlocker>
#include <QVBoxLayout>

namespace ls {

namespace {
void collect(QMenu* menu, const QString& path, QList<CommandPalette::Entry>& out) {
  for (QAction* a : menu->actions()) {
    if (a->isSeparator() || !a->isVisible()) continue;
    const QString name = a->text().remove('&');
    if (a->menu()) {
      collect(a->menu(), path + name + " › ", out);
      continue;
    }
    if (!a->isEnabled()) continue;
    QString label = path + name;
    if (a->isCheckable()) label += a->isChecked() ? QObject::tr("  (on)") : QObject::tr("  (off)");
    out.push_back({label, a->shortcut().toString(QKeySequence::NativeText), [a] { a->trigger(); }});
  }
}
}  // namespace

CommandPalette::CommandPalette(QWidget* parent) : QDialog(parent, Qt::Popup | Qt::FramelessWindowHint) {
  setMinimumWidth(560);
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(6, 6, 6, 6);
  edit_ = new QLineEdit(this);
  edit_->setPlaceholderText(tr("Type a command or a stage…"));
  list_ = new QListWidget(this);
  list_->setMinimumHeight(320);
  v->addWidget(edit_);
  v->addWidget(list_);
  connect(edit_, &QLineEdit::textChanged, this, &CommandPalette::filter);
  connect(edit_, &QLineEdit::returnPressed, this, &CommandPalette::runCurrent);
  connect(list_, &QListWidget::itemActivated, this, [this] { runCurrent(); });
  // Up and Down in the text field move through the list.
  struct Keys : QObject {
    QListWidget* list;
    explicit Keys(QListWidget* l) : QObject(l), list(l) {}
    bool eventFilter(QObject*, QEvent* e) override {
      if (e->type() != QEvent::KeyPress) return false;
      const int key = static_cast<QKeyEvent*>(e)->key();
      if (key != Qt::Key_Up && key != Qt::Key_Down) return false;
      const int step = key == Qt::Key_Down ? 1 : -1;
      for (int r = list->currentRow() + step; r >= 0 && r < list->count(); r += step)
        if (!list->item(r)->isHidden()) {
          list->setCurrentRow(r);
          break;
        }
      return true;
    }
  };
  edit_->installEventFilter(new Keys(list_));
}

void CommandPalette::setEntries(QMenuBar* menus, const QList<Entry>& extra) {
  entries_.clear();
  for (QAction* a : menus->actions())
    if (a->menu()) collect(a->menu(), a->text().remove('&') + " › ", entries_);
  entries_ += extra;
  list_->clear();
  for (const Entry& e : entries_) {
    auto* it = new QListWidgetItem(e.shortcut.isEmpty() ? e.text : e.text + "    " + e.shortcut, list_);
    it->setToolTip(e.text);
  }
  edit_->clear();
  filter(QString());
  edit_->setFocus();
}

int CommandPalette::filter(const QString& text) {
  if (edit_->text() != text) {
    const QSignalBlocker quiet(edit_);  // show what is filtered on without filtering twice
    edit_->setText(text);
  }
  const QStringList words = text.split(' ', Qt::SkipEmptyParts);
  int shown = 0;
  for (int i = 0; i < list_->count(); ++i) {
    bool match = true;
    for (const QString& w : words) match = match && entries_[i].text.contains(w, Qt::CaseInsensitive);
    list_->item(i)->setHidden(!match);
    if (match && shown++ == 0) list_->setCurrentRow(i);
  }
  if (shown == 0) list_->setCurrentRow(-1);
  return shown;
}

QStringList CommandPalette::shown() const {
  QStringList out;
  for (int i = 0; i < list_->count(); ++i)
    if (!list_->item(i)->isHidden()) out << entries_[i].text;
  return out;
}

bool CommandPalette::runCurrent() {
  const int row = list_->currentRow();
  if (row < 0 || row >= entries_.size() || list_->item(row)->isHidden()) return false;
  const auto run = entries_[row].run;
  accept();
  run();
  return true;
}

}  // namespace ls
