// Advanced indexing's plan (aten.index, aten.index_put): where each dimension of the result
// comes from. Shared by the op's rules (ops/indexing.cpp) and the CUDA executor's device
// index_put (exec/cuda_executor.cpp), so both read the indices alike.
#pragma once
#include <string>
#include <vector>

#include "ops/op_table.h"

namespace ls {

// Where each dimension of the result comes from. The index tensors broadcast together to
// `bshape`; the dimensions they index are replaced by bshape, in place where they are adjacent
// (x[:, i, j]), at the front where a None separates them (x[i, :, j]), as NumPy and PyTorch do.
struct IndexPlan {
  std::vector<int64_t> indexed;        // dimensions of self with an index tensor, in order
  Shape bshape;                        // the index tensors broadcast together
  std::vector<int64_t> before, after;  // dimensions of self placed before / after bshape
  Shape out;
};

// The plan for indexing a tensor of shape `self` with `list` (tensors and None), `shapes` those of
// the list's tensors in order; throws std::invalid_argument naming `op` where they do not fit.
IndexPlan index_plan(const OpDef& op, const Shape& self, const Arg& list, const std::vector<Shape>& shapes);

}  // namespace ls
