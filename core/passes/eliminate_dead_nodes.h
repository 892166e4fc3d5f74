// Removes op nodes whose values reach no output. Placeholders stay (they are the signature).
// Test: tests/core/test_core.cpp (testEliminateDeadNodes).
#pragma once
#include "ir/graph.h"

namespace ls {
Graph eliminate_dead_nodes(const Graph& g);
// The same on a graph the caller gives up: its live nodes move, none is copied.
Graph eliminate_dead_nodes(Graph&& g);
// Which nodes an output reads, directly or through others (placeholders included only then).
std::vector<bool> live_nodes(const Graph& g);
}
