// Copying a graph's nodes node by node, for passes that change each node as they copy it
// (normalize_to_aten, decompose): the heap blocks a node's copy reads (its target, arguments,
// output metadata and shapes, origins) are asked of memory a few nodes ahead. On a graph too large
// for the cache every node's blocks came from memory one after another, and the copy's time per
// node grew with the graph (issue 37: 0.25 us a node at 3,300 nodes, 0.40 at 53,000).
#pragma once
#include "ir/graph.h"

namespace ls {

inline void prefetch_node_blocks(const Node& n) {
  __builtin_prefetch(n.target.data());
  __builtin_prefetch(n.args.data());
  __builtin_prefetch(n.outs.data());
  __builtin_prefetch(n.origins.data());
}
// The blocks those blocks point at (read once the first ones have come).
inline void prefetch_node_inner_blocks(const Node& n) {
  for (const TensorMeta& m : n.outs) {
    __builtin_prefetch(m.shape.data());
    __builtin_prefetch(m.strides.data());
  }
  for (const std::string& o : n.origins) __builtin_prefetch(o.data());
}

// A graph with `g`'s name, outputs, output form and weights, and no nodes yet (for copy_nodes).
inline Graph without_nodes(const Graph& g) {
  Graph out;
  out.name = g.name;
  out.tuple_output = g.tuple_output;
  out.weights = g.weights;
  out.outputs = g.outputs;
  return out;
}

// Appends a copy of each node of `from` to `to` (reserved for them), calling each(copy) on it.
template <class F>
void copy_nodes(const Graph& from, Graph& to, F&& each) {
  constexpr size_t kAhead = 8, kInnerAhead = 4;
  const size_t n = from.nodes.size();
  to.nodes.reserve(to.nodes.size() + n);
  for (size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) prefetch_node_blocks(from.nodes[i + kAhead]);
    if (i + kInnerAhead < n) prefetch_node_inner_blocks(from.nodes[i + kInnerAhead]);
    each(to.nodes.emplace_back(from.nodes[i]));
  }
}

}  // namespace ls
