// A self-contained HTML report of one compile (one file, no scripts, no outside links): the
// summary and the check, the stage table, the kernels with their time shares and bandwidth, each
// stage's text, and its graph as inline SVG where the caller drew one. The explorer's export
// writes it beside the debug folder.
#pragma once
#include <map>
#include <string>

#include "pipeline/pipeline.h"

namespace ls {
// svgs: stage name -> the SVG Graphviz drew of its .dot (stages without one show no picture).
std::string html_report(const CompileResult& r, const std::map<std::string, std::string>& svgs = {});
}  // namespace ls
