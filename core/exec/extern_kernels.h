// Library kernels behind the loop IR's ExternKernel nodes: matrix multiply (BLAS when the build
// found one), convolution (im2col + matrix multiply), and the reference kernels for the rest.
#pragma once
#include <vector>

#include "loop/loop_ir.h"
#include "ops/op_table.h"

namespace ls {
// Computes the call into `outs`, which are allocated with the call's output shapes.
void run_extern(const ExternCall& call, const RefInputs& in, std::vector<Tensor>& outs);
bool have_blas();
}
