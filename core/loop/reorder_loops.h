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
// After scheduling: nodes reordered for a reduction they did not fuse with (in a pointwise kernel,
// `pointwise_kernels` giving each such kernel's nodes) go back to their buffer's order, a whole
// kernel at a time and only where every value passed inside the kernel still lines up; there the
// turned order only cost strided stores (uncoalesced on CUDA: 13% of copy bandwidth). Returns the
// names of the nodes restored.
std::vector<std::string> restore_unfused_orders(LoopProgram& p, const std::vector<std::vector<int>>& pointwise_kernels);
// The same for reordered nodes the scheduler put in a row-reduction kernel (its nodes in
// `row_kernels`) whose values no other node of the kernel shares: there the turned order read
// and wrote across the rows (a normalization's recomputed output beside its input gradient: 17%
// of copy bandwidth on the H200). Returns the names of the nodes restored.
std::vector<std::string> restore_orders_in_row_kernels(LoopProgram& p, const std::vector<std::vector<int>>& row_kernels);
}
