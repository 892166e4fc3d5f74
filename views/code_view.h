// Source and IR text with highlighting, line numbers and folding (QScintilla).
#pragma once
#include <Qsci/qsciscintilla.h>

namespace ls {

class CodeView : public QsciScintilla {
  Q_OBJECT
 public:
  enum class Language { Cpp, Python };
  explicit CodeView(QWidget* parent = nullptr);
  void showText(const QString& text, Language lang);
  void markLines(int first, int last);  // 1-based, inclusive; scrolls to them

 private:
  int marker_ = 0;
};

}  // namespace ls
