#include "passes/eliminate_dead_nodes.h"

#include <functional>

namespace ls {

Graph eliminate_dead_nodes(const Graph& g) { return eliminate_dead_nodes(Graph(g)); }

Graph eliminate_dead_nodes(Graph&& g) {
  std::vector<bool> live(g.nodes.size(), false);
  for (int o : g.outputs)
    if (o >= 0) live[o] = true;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    if (!live[i]) continue;
    std::function<void(const Arg&)> mark = [&](const Arg& a) {
      if (a.is_node()) live[a.node] = true;
      for (const Arg& x : a.list) mark(x);
    };
    for (const Arg& a : g.nodes[i].args) mark(a);
  }
  std::vector<int> map(g.nodes.size(), -1);
  std::function<void(Arg&)> remap = [&](Arg& a) {
    if (a.is_node()) a.node = map.at(a.node);
    for (Arg& x : a.list) remap(x);
  };
  // Compacted in place: node i moves down to the next free slot, its arguments renumbered.
  size_t kept = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!live[i] && !g.nodes[i].is_placeholder()) continue;
    for (Arg& a : g.nodes[i].args) remap(a);
    if (kept != i) g.nodes[kept] = std::move(g.nodes[i]);
    map[i] = static_cast<int>(kept++);
  }
  g.nodes.resize(kept);
  for (int& o : g.outputs) o = o < 0 ? -1 : map[o];
  return std::move(g);
}

}  // namespace ls
