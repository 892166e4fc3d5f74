// The compile record written out: the JSON report (lowerscope-cli --report) and the debug
// folder (--dump), like PyTorch's torch_compile_debug: every stage as text and .dot, the sources.
#pragma once
#include <string>

#include "pipeline/pipeline.h"

namespace ls {
std::string report_json(const CompileResult& r);  // pretty-printed JSON
// Writes <dir>/<NN>_<stage>.txt and .dot, kernels.cpp, the compiled objects, report.json. Throws on I/O errors.
void write_dump(const CompileResult& r, const std::string& dir);
}
