// Library kernels behind the loop IR's ExternKernel nodes: matrix multiply (BLAS when the build
// found one), convolution (im2col + matrix multiply), and the reference kernels for the rest.
#pragma once
#include <vector>

#include "loop/loop_ir.h"
#include "ops/op_table.h"

namespace ls {
// Operand `input` of the call as its kernel takes it: the buffer under the shape the call sees
// (a flattening view), or the whole buffer when the kernel reads a strided view of it.
Tensor extern_operand(const ExternCall& c, size_t input, const Tensor& buffer);
// Computes the call into `outs`, which are allocated with the call's output shapes.
void run_extern(const ExternCall& call, const RefInputs& in, std::vector<Tensor>& outs);
bool have_blas();
}
