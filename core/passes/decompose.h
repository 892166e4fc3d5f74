// aten -> core_aten -> prims: applies the op table's decomposition rules until every op belongs to
// the target level. New nodes inherit the provenance (origins) and stack of the node they replace.
// Test: tests/core/test_core.cpp (testDecompose*).
#pragma once
#include <functional>

#include "ir/graph.h"

namespace ls {
// target: level::core_aten or level::prims. Throws std::runtime_error naming an op that has no rule.
Graph decompose(const Graph& g, unsigned target_level);
// Expands, until none is left, the nodes `select(graph)` marks (one flag per node), by their op's
// decomposition (autodiff uses it for ops that have no derivative rule of their own). Throws
// std::runtime_error naming a marked node that has no rule.
Graph decompose_if(const Graph& g, const std::function<std::vector<bool>(const Graph&)>& select);
}
