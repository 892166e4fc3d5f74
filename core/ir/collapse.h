// Large graphs drawn with their modules folded: each node belongs to the module path PyTorch
// recorded for it (nn_module_stack; a parameter or buffer to the module that owns it), and every
// module not in `expanded` is drawn as one box standing for all its nodes. Expanded modules are
// drawn as clusters around their children, so a layout stays small however big the model is.
#pragma once
#include <set>
#include <string>

#include "ir/graph.h"

namespace ls {

// The module a node belongs to ("features.3.block.0"), or "" for the top level.
std::string module_of(const Node& n);

// A big graph with no module paths to fold by (a long chain, a graph pasted from a log) with
// paths made from the node order instead: runs of consecutive nodes ("nodes 0-499"), nested so
// that no level holds more than `per_box` of them, each folding like a module. Returns the graph
// unchanged when it is small or has module paths. The drawing's node ids stay the graph's.
Graph segmented(const Graph& g, size_t above = 250, size_t per_box = 40);

// True when a graph is big enough to start folded and has module paths to fold by.
bool worth_collapsing(const Graph& g, size_t above = 250);

// The id a node is drawn under: its own name when every module around it is expanded, else
// "module:<path>" of the outermost folded module.
std::string visible_id(const Node& n, const std::set<std::string>& expanded);

// The modules directly inside `path` ("" for the top level) that hold nodes, in graph order.
std::vector<std::string> child_modules(const Graph& g, const std::string& path);

// The modules to open first: breadth first (outer modules before inner ones), each opened while
// the drawing stays within `budget` boxes.
std::set<std::string> initial_expansion(const Graph& g, size_t budget = 60);

// How many boxes the drawing has (nodes and folded modules, not counting the output).
size_t visible_count(const Graph& g, const std::set<std::string>& expanded);

// Graphviz text: folded modules as 3-D boxes labelled with their path, node count, main ops and
// the shape of what leaves them (id "module:<path>"); expanded modules as clusters (id
// "cluster:<path>"); edges between boxes once each, labelled with how many tensors cross.
std::string collapsed_graph_to_dot(const Graph& g, const std::set<std::string>& expanded, const DotMarks& marks = {});

}  // namespace ls
