// A graph traced at one set of input sizes, re-derived for other sizes of its user inputs: the
// size arguments that followed an input's size (a view's target, an expand, a slice's end) follow
// the new size, and every node's shape is inferred again. What cannot follow (a layer norm's
// normalized shape, a weight's size) throws std::invalid_argument naming the node: that size is
// then specialized. Used by dynamic shapes (dynamic/dynamic_shapes.h) to sample a graph at other
// sizes. Test: tests/core/test_core.cpp (testRetargetGraph).
#pragma once
#include <vector>

#include "ir/graph.h"

namespace ls {
Graph retarget_graph(const Graph& g, const std::vector<Shape>& user_input_shapes);
}
