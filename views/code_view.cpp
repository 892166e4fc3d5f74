#include "code_view.h"

#include <Qsci/qscilexercpp.h>
#include <Qsci/qscilexerpython.h>

namespace ls {

CodeView::CodeView(QWidget* parent) : QsciScintilla(parent) {
  setReadOnly(true);
  setUtf8(true);
  setMarginType(0, QsciScintilla::NumberMargin);
  setMarginWidth(0, "00000");
  setFolding(QsciScintilla::BoxedTreeFoldStyle);
  setCaretLineVisible(true);
  setCaretLineBackgroundColor(QColor("#f3f6fb"));
  setWrapMode(QsciScintilla::WrapNone);
  marker_ = markerDefine(QsciScintilla::Background);
  setMarkerBackgroundColor(QColor("#fff3c4"), marker_);
  connect(this, &QsciScintilla::cursorPositionChanged, this, [this](int line, int) { emit lineClicked(line + 1); });
}

void CodeView::markLineSet(const QList<int>& lines) {
  markerDeleteAll(marker_);
  for (int l : lines) markerAdd(l - 1, marker_);
  if (!lines.isEmpty()) setFirstVisibleLine(std::max(0, lines.front() - 3));
}

int CodeView::defineMark(const QColor& background) {
  const int m = markerDefine(QsciScintilla::Background);
  setMarkerBackgroundColor(background, m);
  return m;
}

void CodeView::addMarks(const QList<int>& lines, int mark) {
  for (int l : lines) markerAdd(l - 1, mark);
}

void CodeView::showText(const QString& text, Language lang) {
  QFont mono("DejaVu Sans Mono", 9);
  QsciLexer* old = lexer();
  QsciLexer* lex = lang == Language::Cpp      ? static_cast<QsciLexer*>(new QsciLexerCPP(this))
                   : lang == Language::Python ? static_cast<QsciLexer*>(new QsciLexerPython(this))
                                              : nullptr;
  if (lex) {
    lex->setDefaultFont(mono);
    lex->setFont(mono);
  }
  setLexer(lex);
  if (!lex) setFont(mono);
  delete old;
  setMarginsFont(mono);
  setReadOnly(false);
  setText(text);
  setReadOnly(true);
  markerDeleteAll();
}

void CodeView::markLines(int first, int last) {
  markerDeleteAll(marker_);
  for (int l = first; l <= last; ++l) markerAdd(l - 1, marker_);
  setFirstVisibleLine(std::max(0, first - 3));
}

}  // namespace ls
