#include "export_folder.h"

#include <QDir>
#include <QProcess>

#include "pipeline/pipeline.h"
#include "report/html_report.h"
#include "report/report.h"

#include <map>

namespace ls {

ExportResult export_compile_folder(const CompileResult& r, const QString& dir, int layout_timeout_ms) {
  ExportResult out;
  try {
    write_dump(r, dir.toStdString());
  } catch (const std::exception& e) {
    out.problems << QString::fromStdString(e.what());
    return out;
  }
  const QDir d(dir);
  for (const QString& f : d.entryList(QDir::Files, QDir::Name)) out.written << f;
  for (const QString& f : d.entryList({"*.dot"}, QDir::Files, QDir::Name)) {
    // One layout, drawn twice: SVG, and PNG for what does not show SVG.
    const QString svg = f.left(f.size() - 4) + ".svg", png = f.left(f.size() - 4) + ".png";
    QProcess dot;
    dot.start("dot", {"-Tsvg", "-o", d.filePath(svg), "-Tpng", "-o", d.filePath(png), d.filePath(f)});
    if (!dot.waitForStarted(5000)) {
      out.problems << QObject::tr("%1: Graphviz's dot could not be started (is graphviz installed?)").arg(svg);
      break;
    }
    if (!dot.waitForFinished(layout_timeout_ms)) {
      dot.kill();
      dot.waitForFinished(1000);
      QFile::remove(d.filePath(svg));
      QFile::remove(d.filePath(png));
      out.problems << QObject::tr("%1: the layout took longer than %2 s and was stopped").arg(svg).arg(layout_timeout_ms / 1000);
      continue;
    }
    if (dot.exitCode() != 0) {
      out.problems << svg + ": " + QString::fromLocal8Bit(dot.readAllStandardError()).trimmed();
      continue;
    }
    out.written << svg << png;
  }
  // The HTML report, with the drawings inline: one file to send to someone.
  std::map<std::string, std::string> svgs;
  for (const QString& f : d.entryList({"*.svg"}, QDir::Files, QDir::Name)) {
    QFile in(d.filePath(f));
    if (f.size() > 7 && in.open(QIODevice::ReadOnly)) svgs[f.mid(3, f.size() - 7).toStdString()] = in.readAll().toStdString();
  }
  QFile html(d.filePath("report.html"));
  if (!html.open(QIODevice::WriteOnly | QIODevice::Truncate)) {
    out.problems << QObject::tr("report.html: %1").arg(html.errorString());
  } else {
    html.write(QByteArray::fromStdString(html_report(r, svgs)));
    out.written << "report.html";
  }
  return out;
}

}  // namespace ls
