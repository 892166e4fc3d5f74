// Handles for the ops the rest of the compiler treats specially (library calls, views it sees
// through, the ops passes emit), resolved once from the op table. One place spells each op's
// name, so a rename or a missing entry fails here, loudly, instead of a string compare silently
// matching nothing elsewhere; and comparing handles is a pointer compare: `c.op == &op::addmm()`.
// A handle is named after the op, with its overload where that is not `default`
// (aten.transpose.int: transpose_int); prims live in op::prims. Families the compiler matches as
// one (every matrix multiply, every reshaping view) are predicates here, not name lists at the
// call site. Test: tests/core/test_core.cpp (testKnownOps).
#pragma once
#include <vector>

#include "ops/op_table.h"

namespace ls::op {

// Library calls.
const OpDef& mm();
const OpDef& addmm();
const OpDef& bmm();
const OpDef& convolution();
const OpDef& convolution_backward();
const OpDef& max_pool2d_with_indices();
const OpDef& max_pool2d_with_indices_backward();
const OpDef& cat();
const OpDef& gather();     // generated code through indirect indices where it can (lower/lower.cpp)
const OpDef& embedding();
const OpDef& index_put();  // a library call; rows of float32 on a fast path (exec/extern_kernels.cpp)
// Library calls with typed fast paths in exec/extern_kernels.cpp.
const OpDef& argmax();
const OpDef& argmin();
const OpDef& max_dim();
const OpDef& min_dim();
const OpDef& prod();      // aten.prod.default; argmax to prod: generated reductions (lower/lower.cpp)
const OpDef& prod_dim();  // aten.prod.dim_int
const OpDef& cumsum();
const OpDef& sort();
const OpDef& topk();
const OpDef& scatter_src();
const OpDef& scatter_value();
const OpDef& scatter_add();
const OpDef& scatter_reduce_two();
const OpDef& index_tensor();  // aten.index.Tensor
const OpDef& efficient_attention();           // aten._scaled_dot_product_efficient_attention
const OpDef& efficient_attention_backward();  // aten._scaled_dot_product_efficient_attention_backward
const OpDef& rand();   // aten.rand.default: generated code drawing from Philox (lower/lower.cpp, ops/philox.h)
const OpDef& randn();  // aten.randn.default
// FFTs: library calls (FFTW on the CPU where CMake found it, cuFFT under CUDA; else the reference
// kernel on the host), as Inductor's fallback kernels; complex buffers never reach generated code.
const OpDef& fft_r2c();  // aten._fft_r2c.default
const OpDef& fft_c2r();  // aten._fft_c2r.default
const OpDef& fft_c2c();  // aten._fft_c2c.default

// Views and the ops passes build graphs with.
const OpDef& view();
const OpDef& permute();
const OpDef& detach();
const OpDef& add_tensor();
const OpDef& sub_tensor();
const OpDef& mul_tensor();

namespace prims {
const OpDef& reshape();
const OpDef& transpose();
const OpDef& collapse_view();
const OpDef& split_dim();
}  // namespace prims

// The op of a node that calls an op the table lacks. The importers keep such a node, with the
// arguments and the metadata the file gives, so the model still opens and is drawn; the aten
// stage stops at it, naming the node and the op (passes/normalize_to_aten.h). Not in the table.
const OpDef& missing();

// Every handle above, for the test that resolves each against the table.
const std::vector<const OpDef& (*)()>& known_ops();

// Families. Each takes the op of a node or call; nullptr (a placeholder) is in none.
// A matrix multiply a library runs: mm, addmm or bmm.
bool is_matmul(const OpDef* op);
// One product of two matrices, unbatched (mm, addmm): the problem a GEMM template solves.
bool is_gemm(const OpDef* op);
// A view that reads its input's elements in order under another shape (aten view, prims
// reshape, collapse_view, split_dim): on a value stored whole, the same memory.
bool is_reshape_view(const OpDef* op);
// A view that permutes dimensions, the permutation its argument 1 (aten permute, prims transpose).
bool is_permute_view(const OpDef* op);
// A composite that decomposes into views only (reshape, t, squeeze, split, detach, ...): as
// cheap to compute again as a view.
bool is_composite_view(const OpDef* op);
// A composite whose decomposition is mostly a library call (linear, conv2d, attention, max_pool2d).
bool is_library_composite(const OpDef* op);

}  // namespace ls::op
