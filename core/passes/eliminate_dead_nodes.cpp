#include "passes/eliminate_dead_nodes.h"

#include <functional>

namespace ls {

Graph eliminate_dead_nodes(const Graph& g) {
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
  Graph out;
  out.name = g.name;
  out.tuple_output = g.tuple_output;
  out.weights = g.weights;
  std::vector<int> map(g.nodes.size(), -1);
  std::function<void(Arg&)> remap = [&](Arg& a) {
    if (a.is_node()) a.node = map.at(a.node);
    for (Arg& x : a.list) remap(x);
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!live[i] && !g.nodes[i].is_placeholder()) continue;
    Node n = g.nodes[i];
    for (Arg& a : n.args) remap(a);
    map[i] = out.add(std::move(n));
  }
  for (int o : g.outputs) out.outputs.push_back(o < 0 ? -1 : map[o]);
  return out;
}

}  // namespace ls
