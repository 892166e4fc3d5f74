// Export of a compile as a folder, like PyTorch's torch_compile_debug: every stage as text (and
// .dot), the generated source, the compiled objects, report.json, each graph drawn as SVG by
// Graphviz's `dot` (run as a child process with a time limit, so a huge graph cannot hang the app),
// and report.html: all of it in one self-contained page.
#pragma once
#include <QString>
#include <QStringList>

namespace ls {
struct CompileResult;

struct ExportResult {
  QStringList written;  // paths, relative to the folder
  QStringList problems; // what could not be written or drawn, with the reason
};

ExportResult export_compile_folder(const CompileResult& r, const QString& dir, int layout_timeout_ms = 30000);
}  // namespace ls
