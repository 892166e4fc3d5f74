// Reads the graph text PyTorch prints with GraphModule.print_readable(): Dynamo graphs
// (torch functions, Python operators, Tensor methods), AOTAutograd, Core ATen and prims graphs.
#pragma once
#include <stdexcept>
#include <string>

#include "ir/graph.h"

namespace ls {

// An error in the text, with the place it was found (1-based line and column).
struct ParseError : std::runtime_error {
  ParseError(const std::string& source, int line, int column, const std::string& what);
  int line, column;
};

// `source` names the text in error messages (a file name). Nodes keep the callee as written
// (`torch.sin`, `operator.pow`, `torch.ops.aten.sin.default`) and resolve it to an op of the table.
Graph import_fx_text(const std::string& text, const std::string& source = "<text>");

}  // namespace ls
