#include "code_view.h"

#include <algorithm>

#include <Qsci/qscilexercpp.h>
#include <Qsci/qscilexerpython.h>

#include "theme.h"

namespace ls {

namespace {
// A line mark's background in the current theme: on dark paper, a deep shade of the same hue.
QColor mark_color(const QColor& c) {
  return dark_theme() ? QColor::fromHsl(c.hslHue(), std::min(160, c.hslSaturation()), 62) : c;
}
}  // namespace

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
  setMarkerBackgroundColor(mark_color(QColor("#fff3c4")), marker_);
  connect(this, &QsciScintilla::cursorPositionChanged, this, [this](int line, int) { emit lineClicked(line + 1); });
}

void CodeView::markLineSet(const QList<int>& lines) {
  markerDeleteAll(marker_);
  for (int l : lines) markerAdd(l - 1, marker_);
  if (!lines.isEmpty()) setFirstVisibleLine(std::max(0, lines.front() - 3));
}

int CodeView::defineMark(const QColor& background) {
  const int m = markerDefine(QsciScintilla::Background);
  setMarkerBackgroundColor(mark_color(background), m);
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
  const bool dark = dark_theme();
  const QColor paper = dark ? QColor("#1e1f22") : QColor(Qt::white), ink = dark ? QColor("#dfe1e5") : QColor(Qt::black);
  if (lex) {
    lex->setDefaultPaper(paper);
    lex->setDefaultColor(ink);
    for (int style = 0; style < 128; ++style) {
      lex->setPaper(paper, style);
      if (dark) {  // the lexers' colours are for white paper: lift the dark ones
        const QColor c = lex->color(style);
        if (c.lightness() < 150) lex->setColor(QColor::fromHsl(c.hslHue(), c.hslSaturation(), 170), style);
      }
    }
  }
  setLexer(lex);
  if (!lex) setFont(mono);
  setPaper(paper);
  setColor(ink);
  setCaretForegroundColor(ink);
  setCaretLineBackgroundColor(dark ? QColor("#2a2d33") : QColor("#f3f6fb"));
  setMarginsBackgroundColor(dark ? QColor("#2b2d31") : QColor("#f0f0f0"));
  setMarginsForegroundColor(dark ? QColor("#8b9099") : QColor("#6b6b6b"));
  setFoldMarginColors(dark ? QColor("#2b2d31") : QColor("#f0f0f0"), dark ? QColor("#2b2d31") : QColor("#f0f0f0"));
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
