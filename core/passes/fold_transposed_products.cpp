#include "passes/fold_transposed_products.h"

#include <functional>

#include "ops/builder.h"
#include "ops/known_ops.h"
#include "ops/op_table.h"
#include "passes/eliminate_dead_nodes.h"

namespace ls {
namespace {

bool is_2d_transpose(const Node& n) {
  if (n.is_placeholder() || n.op != &op::permute() || n.meta().shape.size() != 2) return false;
  const auto p = n.args[1].ints();
  return p.size() == 2 && (p[0] == 1 || p[0] == -1);
}

// Whether some node is a 2-D transpose of a product read by nothing else (what the pass folds).
bool any_fold(const Graph& g) {
  std::vector<int> uses;
  for (const Node& n : g.nodes) {
    if (!is_2d_transpose(n)) continue;
    const Node& mm = g.nodes[n.args[0].node];
    if (mm.is_placeholder() || mm.op != &op::mm()) continue;
    if (uses.empty()) {  // counted once, at the first candidate
      uses.assign(g.nodes.size(), 0);
      for (const Node& x : g.nodes)
        for (int a : node_inputs(x)) ++uses[a];
      for (int o : g.outputs)
        if (o >= 0) ++uses[o];
    }
    if (uses[n.args[0].node] == 1) return true;
  }
  return false;
}

// Marks the nodes an argument reads (itself, and the nodes in its lists).
void mark_read(const Arg& a, std::vector<char>& read) {
  if (a.is_node()) read[static_cast<size_t>(a.node)] = 1;
  for (const Arg& x : a.list) mark_read(x, read);
}

// Whether every node is read by a later one or is an output (or a placeholder): then no node is
// dead (the last dead node of a graph in topological order would have only live readers).
// read: the nodes the graph's nodes and outputs read.
bool none_dead(const Graph& g, const std::vector<char>& read) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!read[i] && !g.nodes[i].is_placeholder()) return false;
  return true;
}

}  // namespace

Graph fold_transposed_products(const Graph& g) {
  Graph out;
  out.name = g.name;
  out.tuple_output = g.tuple_output;
  out.weights = g.weights;
  out.nodes.reserve(g.nodes.size());
  GraphBuilder b(out);
  std::vector<int> map(g.nodes.size(), -1);
  std::vector<int> uses(g.nodes.size(), 0);
  for (const Node& n : g.nodes)
    for (int a : node_inputs(n)) ++uses[a];
  for (int o : g.outputs)
    if (o >= 0) ++uses[o];
  std::function<void(Arg&)> remap = [&](Arg& a) {
    if (a.is_node()) a.node = map.at(a.node);
    for (Arg& x : a.list) remap(x);
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (is_2d_transpose(n)) {
      const Node& mm = g.nodes[n.args[0].node];
      if (!mm.is_placeholder() && mm.op == &op::mm() && uses[n.args[0].node] == 1) {
        b.origins = n.origins;
        b.stack = n.stack;
        b.module_path = n.module_path;
        b.phase = n.phase;
        const Arg t = Arg::of_ints({1, 0});
        const Arg bt = b.call(op::permute(), {Arg::of_node(map[mm.args[1].node]), t});
        const Arg at = b.call(op::permute(), {Arg::of_node(map[mm.args[0].node]), t});
        map[i] = b.call(op::mm(), {bt, at}).node;
        continue;
      }
    }
    Node c = n;
    for (Arg& a : c.args) remap(a);
    if (b.taken(c.name)) c.name = b.fresh_name(c.name);  // taken by a node made above
    map[i] = out.add(std::move(c));
  }
  for (int o : g.outputs) out.outputs.push_back(o < 0 ? -1 : map[o]);
  Graph r = eliminate_dead_nodes(std::move(out));
  verify(r);
  return r;
}

Graph fold_transposed_products(Graph&& g) {
  // One walk finds both whether some node is a 2-D transpose of a product (only then are the
  // uses counted, by any_fold) and which nodes are read (none_dead's question): on a graph too
  // large for the cache, each walk read every node from memory.
  std::vector<char> read(g.nodes.size(), 0);
  bool transposed_product = false;
  for (const Node& n : g.nodes) {
    for (const Arg& a : n.args) mark_read(a, read);
    if (!transposed_product && is_2d_transpose(n)) {
      const Node& mm = g.nodes[n.args[0].node];
      transposed_product = !mm.is_placeholder() && mm.op == &op::mm();
    }
  }
  if (transposed_product && any_fold(g)) return fold_transposed_products(static_cast<const Graph&>(g));
  // Nothing folds: the copy above would be this graph, node for node (no node added, so no name
  // taken by one), its dead nodes removed and checked as there. A graph with none dead is the one
  // it was given, checked where it was made (decompose verifies what it returns): not walked again.
  for (int o : g.outputs)
    if (o >= 0) read[static_cast<size_t>(o)] = 1;
  if (none_dead(g, read)) return std::move(g);
  Graph r = eliminate_dead_nodes(std::move(g));
  verify(r);
  return r;
}

}  // namespace ls
