// graph (Core ATen or prims) -> loop IR: every op node becomes a Pointwise or Reduction node
// whose body loads its inputs; views become index rewrites folded into those loads.
// Test: tests/core/test_core.cpp (testLower*).
#pragma once
#include "ir/graph.h"
#include "loop/loop_ir.h"

namespace ls {
// Throws std::runtime_error naming the node when an op has no lowering.
LoopProgram lower_to_loops(const Graph& g);

// For a library-kernel op that the lowering writes as generated code where it can (as Inductor
// lowers it): how, for people ("indirect loads of the indices"); null for the others. `always`:
// whether every call becomes generated code (the reductions), not only the forms it can write.
const char* generated_form(const OpDef& op, bool* always = nullptr);
}
