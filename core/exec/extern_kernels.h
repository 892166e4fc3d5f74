// Library kernels behind the loop IR's ExternKernel nodes: matrix multiply (BLAS when the build
// found one), convolution (im2col + matrix multiply), and the reference kernels for the rest.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "loop/loop_ir.h"
#include "ops/op_table.h"

namespace ls {
// Operand `input` of the call as its kernel takes it: the buffer under the shape the call sees
// (a flattening view), or the whole buffer when the kernel reads a strided view of it.
Tensor extern_operand(const ExternCall& c, size_t input, const Tensor& buffer);
// The call's operands as run_extern takes them, every input buffer from `buffer` (its name -> its
// contents) and seen through extern_operand.
RefInputs extern_inputs(const ExternCall& c, const std::function<Tensor(const std::string&)>& buffer);
// A matrix multiply's epilogue (Kernel::epilogue): run on the product's elements [begin, end),
// whole rows, on the thread that computed them.
using RowEpilogue = std::function<void(int64_t begin, int64_t end)>;
// Computes the call into `outs`, which are allocated with the call's output shapes. With an
// epilogue, a matrix multiply split into blocks of rows runs it on each block right after the block
// is computed; returns whether it did (otherwise the caller runs the epilogue kernel itself).
bool run_extern(const ExternCall& call, const RefInputs& in, std::vector<Tensor>& outs, const RowEpilogue* epilogue = nullptr);
bool have_blas();
}
