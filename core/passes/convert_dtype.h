// A float model run in another precision, as `model.to(dtype)` and inputs given in that dtype
// would: every floating-point placeholder (parameters, buffers, constants, user inputs) takes the
// new type, its weight is converted, and every node's type is inferred again (ops with an
// explicit dtype argument keep it, as in PyTorch). Test: tests/cpu/test_cpu.cpp
// (testHalfPrecisionModels).
#pragma once
#include "ir/graph.h"

namespace ls {
// Throws std::invalid_argument naming the node whose rules refuse the new types.
Graph convert_float_dtype(const Graph& g, DType to);
}
