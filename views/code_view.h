// Source and IR text with highlighting, line numbers and folding (QScintilla).
#pragma once
#include <QList>
#include <Qsci/qsciscintilla.h>

namespace ls {

class CodeView : public QsciScintilla {
  Q_OBJECT
 public:
  enum class Language { Cpp, Python, Plain };
  explicit CodeView(QWidget* parent = nullptr);
  void showText(const QString& text, Language lang);
  void markLines(int first, int last);  // 1-based, inclusive; scrolls to them
  void markLineSet(const QList<int>& lines);  // 1-based; scrolls to the first
  // Background marks of other colours (a diff's removed and added lines): define once, then add.
  int defineMark(const QColor& background);
  void addMarks(const QList<int>& lines, int mark);  // 1-based; does not scroll

 signals:
  void lineClicked(int line);  // 1-based

 private:
  int marker_ = 0;
};

}  // namespace ls
