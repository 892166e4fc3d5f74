// (a @ b)^T -> b^T @ a^T: a transposed matrix product is computed transposed, so the library
// writes it in the layout its reader wants and no copy kernel is needed (the weight gradients
// of a Linear layer in the backward). Operands' transposes become BLAS flags when lowered.
// Test: tests/test_autodiff.cpp (testFoldTransposedProducts).
#pragma once
#include "ir/graph.h"

namespace ls {
Graph fold_transposed_products(const Graph& g);
// The same for a graph the caller gives up: where no product folds, returned as it is instead of
// copied node by node (half the core_aten stage on a chain of 40,000); its dead nodes removed and
// the result verified only where it has dead nodes (the pipeline passes decompose's result, which
// has none and was verified there).
Graph fold_transposed_products(Graph&& g);
}
