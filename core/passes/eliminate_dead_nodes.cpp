#include "passes/eliminate_dead_nodes.h"

namespace ls {
namespace {

void mark_live(const Arg& a, std::vector<bool>& live) {
  if (a.is_node()) live[a.node] = true;
  for (const Arg& x : a.list) mark_live(x, live);
}

void renumber(Arg& a, const std::vector<int>& map) {
  if (a.is_node()) a.node = map.at(a.node);
  for (Arg& x : a.list) renumber(x, map);
}

}  // namespace

Graph eliminate_dead_nodes(const Graph& g) { return eliminate_dead_nodes(Graph(g)); }

std::vector<bool> live_nodes(const Graph& g) {
  std::vector<bool> live(g.nodes.size(), false);
  for (int o : g.outputs)
    if (o >= 0) live[o] = true;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    if (!live[i]) continue;
    for (const Arg& a : g.nodes[i].args) mark_live(a, live);
  }
  return live;
}

Graph eliminate_dead_nodes(Graph&& g) {
  const std::vector<bool> live = live_nodes(g);
  std::vector<int> map(g.nodes.size(), -1);
  // Compacted in place: node i moves down to the next free slot, its arguments renumbered.
  size_t kept = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!live[i] && !g.nodes[i].is_placeholder()) continue;
    for (Arg& a : g.nodes[i].args) renumber(a, map);
    if (kept != i) g.nodes[kept] = std::move(g.nodes[i]);
    map[i] = static_cast<int>(kept++);
  }
  g.nodes.resize(kept);
  for (int& o : g.outputs) o = o < 0 ? -1 : map[o];
  return std::move(g);
}

}  // namespace ls
