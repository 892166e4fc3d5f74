// Memory dependencies of a loop node, found by running its body under a recording handler.
#pragma once
#include <string>
#include <vector>

#include "loop/loop_ir.h"

namespace ls {

struct MemDep {
  std::string buffer;
  Expr index;
};

struct Dependencies {
  std::vector<MemDep> reads;
  std::vector<MemDep> writes;
};

// With idx/ridx given, indices are expressed in those variables; by default in p0.. / r0...
Dependencies extract_dependencies(const LoopNode& n);
Dependencies extract_dependencies(const LoopNode& n, const std::vector<Expr>& idx, const std::vector<Expr>& ridx);

}  // namespace ls
