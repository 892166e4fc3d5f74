// A generated source (a prelude, then its kernels, each after a blank line) cut into several
// units that compile at once: the CPU path's external compiler and the CUDA path's NVRTC.
#pragma once
#include <string>
#include <vector>

namespace ls {

// Up to `parts` units of whole kernels, each the prelude (the lines before the first kernel) and a
// run of kernels of about equal length, with #line directives naming `file`, so that the
// compiler's messages name the lines of the whole source. `starts`: the first line (1-based) of
// each kernel. One unit (the source as it is) without kernel lines, or where a start does not
// follow a blank line (the source is not the one the lines were taken from).
std::vector<std::string> split_source(const std::string& source, std::vector<int> starts, int parts, const std::string& file);

}  // namespace ls
