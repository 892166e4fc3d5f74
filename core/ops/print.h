// A graph printed as PyTorch's GraphModule.print_readable() prints it, so a user can compare it
// with PyTorch's line by line. Here, not in ir/, because calls print their keyword arguments by
// the op's schema.
#pragma once
#include <string>

#include "ir/graph.h"

namespace ls {

std::string print_readable(const Graph& g);

}  // namespace ls
