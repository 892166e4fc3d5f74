// aten -> core_aten -> prims: applies the op table's decomposition rules until every op belongs to
// the target level. New nodes inherit the provenance (origins) and stack of the node they replace.
// Test: tests/core/test_core.cpp (testDecompose*).
#pragma once
#include "ir/graph.h"

namespace ls {
// target: level::core_aten or level::prims. Throws std::runtime_error naming an op that has no rule.
Graph decompose(const Graph& g, unsigned target_level);
}
