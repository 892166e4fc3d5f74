// Runs a loop program by interpreting every node's body under an evaluating handler (no code
// generated): the check that lowering, inlining and index simplification kept the numbers.
// Slow by design (one body call per element). Test: tests/core/test_core.cpp (testLoopInterpreter).
#pragma once
#include <vector>

#include "loop/loop_ir.h"
#include "tensor/tensor.h"

namespace ls {
// One tensor per program input (every placeholder, weights included), in order; the outputs in order.
std::vector<Tensor> interpret_loops(const LoopProgram& p, const std::vector<Tensor>& inputs);
}
