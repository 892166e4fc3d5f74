// Export of a compile as a folder, like PyTorch's torch_compile_debug: every stage as text (and
// .dot), the generated source, report.json, and each graph drawn as SVG by Graphviz's `dot`
// (run as a child process with a time limit, so a huge graph cannot hang the app).
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
