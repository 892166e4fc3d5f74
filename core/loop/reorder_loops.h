// Loop reordering for column reductions: a pointwise node [B..., N] whose generated readers are all
// reductions over its leading dims B (a bias gradient summing a backward value over the batch) iterates N outer
// and B inner instead, so it computes each value in the iteration of the reduction that reads it
// and the two fuse into one kernel, as Inductor's loop reordering does.
// Test: tests/cpu/test_cpu.cpp (testTrainingKernelCountsWithinInductor: mlp, the bias gradients).
#pragma once
#include <string>
#include <vector>

#include "loop/loop_ir.h"

namespace ls {
// Returns the names of the nodes it reordered.
std::vector<std::string> reorder_for_column_reductions(LoopProgram& p);
}
