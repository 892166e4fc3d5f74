#include "ir/collapse.h"

#include <algorithm>
#include <functional>
#include <map>
#include <sstream>
#include <string_view>

namespace ls {

namespace {

std::string parent_of(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? std::string() : path.substr(0, dot);
}

// "features", "features.3", "features.3.block" for "features.3.block".
std::vector<std::string> prefixes(const std::string& path) {
  std::vector<std::string> v;
  for (size_t at = 0; !path.empty();) {
    const size_t dot = path.find('.', at);
    v.push_back(path.substr(0, dot));
    if (dot == std::string::npos) break;
    at = dot + 1;
  }
  return v;
}

std::string short_op(const std::string& target) {
  std::string t = target.rfind("torch.ops.", 0) == 0 ? target.substr(10) : target;
  if (t.size() > 8 && t.compare(t.size() - 8, 8, ".default") == 0) t.resize(t.size() - 8);
  return t;
}

// A folded module's label lists its ops without the namespace most nodes share, ATen's (addmm);
// ops of other namespaces keep theirs (prims.mul).
std::string label_op(const std::string& short_name) {
  constexpr std::string_view common = "aten";
  const bool in_common = short_name.size() > common.size() && short_name.compare(0, common.size(), common) == 0 &&
                         short_name[common.size()] == '.';
  return in_common ? short_name.substr(common.size() + 1) : short_name;
}

}  // namespace

std::string module_of(const Node& n) {
  if (!n.module_path.empty()) return n.module_path;
  if (n.is_placeholder() && n.input_kind != InputKind::user && !n.param_name.empty()) return parent_of(n.param_name);
  return {};
}

Graph segmented(const Graph& g, size_t above, size_t per_box) {
  if (g.nodes.size() <= above || worth_collapsing(g, above) || per_box < 2) return g;
  size_t m = 0;  // the nodes that get a segment: all but the graph's inputs
  for (const Node& n : g.nodes) m += n.is_placeholder() ? 0 : 1;
  // Nodes per segment, outermost level first: at most per_box segments at the top; a level whose
  // segments hold more than per_box nodes nests another inside each.
  const size_t top = (m + per_box - 1) / per_box;
  if (top <= 1) return g;
  std::vector<size_t> levels{top};
  while (levels.back() > per_box) levels.push_back((levels.back() + per_box - 1) / per_box);
  Graph out = g;
  size_t j = 0;
  for (Node& n : out.nodes) {
    if (n.is_placeholder()) continue;
    std::string path;
    for (size_t s : levels) {
      const size_t a = j / s * s, b = std::min(a + s, m) - 1;
      path += (path.empty() ? "" : ".") + std::string("nodes ") + std::to_string(a) + "-" + std::to_string(b);
    }
    n.module_path = path;
    ++j;
  }
  return out;
}

bool worth_collapsing(const Graph& g, size_t above) {
  if (g.nodes.size() <= above) return false;
  for (const Node& n : g.nodes)
    if (!n.module_path.empty()) return true;
  return false;
}

std::string visible_id(const Node& n, const std::set<std::string>& expanded) {
  for (const std::string& p : prefixes(module_of(n)))
    if (!expanded.count(p)) return "module:" + p;
  return n.name;
}

std::vector<std::string> child_modules(const Graph& g, const std::string& path) {
  std::vector<std::string> out;
  for (const Node& n : g.nodes) {
    const std::string m = module_of(n);
    if (m.empty() || (!path.empty() && m.rfind(path + ".", 0) != 0)) continue;
    const auto ps = prefixes(m);
    const size_t depth = path.empty() ? 0 : prefixes(path).size();
    if (ps.size() <= depth) continue;
    if (std::find(out.begin(), out.end(), ps[depth]) == out.end()) out.push_back(ps[depth]);
  }
  return out;
}

std::set<std::string> initial_expansion(const Graph& g, size_t budget) {
  // The module tree, built once: each module's own nodes and its child modules in graph order.
  // Opening a folded module whose parents are open replaces its box with its own nodes and its
  // children's boxes, so the count of boxes follows each step without looking at every node
  // again (visible_count's walk per step was modules x nodes: a 5,000-node model held the
  // window for a quarter of a second, seconds under the sanitizers).
  struct Module {
    size_t own = 0;
    std::vector<std::string> children;
  };
  std::map<std::string, Module> tree;
  std::vector<std::string> top;
  std::set<std::string> ids;  // what is drawn with nothing open: top-level nodes and modules
  for (const Node& n : g.nodes) {
    const std::string m = module_of(n);
    if (m.empty()) {
      ids.insert(n.name);
      continue;
    }
    const std::vector<std::string> ps = prefixes(m);
    ids.insert("module:" + ps.front());
    if (tree.emplace(ps.front(), Module{}).second) top.push_back(ps.front());
    for (size_t i = 1; i < ps.size(); ++i)
      if (tree.emplace(ps[i], Module{}).second) tree[ps[i - 1]].children.push_back(ps[i]);
    ++tree[m].own;
  }
  size_t shown = ids.size();
  std::set<std::string> open;
  std::vector<std::string> level = std::move(top);
  while (!level.empty()) {
    std::vector<std::string> next;
    for (const std::string& m : level) {
      const Module& mod = tree.at(m);
      const size_t opened = shown - 1 + mod.own + mod.children.size();
      if (opened > budget) continue;
      open.insert(m);
      shown = opened;
      next.insert(next.end(), mod.children.begin(), mod.children.end());
    }
    level = std::move(next);
  }
  return open;
}

size_t visible_count(const Graph& g, const std::set<std::string>& expanded) {
  std::set<std::string> ids;
  for (const Node& n : g.nodes) ids.insert(visible_id(n, expanded));
  return ids.size();
}

std::string collapsed_graph_to_dot(const Graph& g, const std::set<std::string>& expanded, const DotMarks& marks) {
  struct Item {
    std::string id, container;  // the expanded module it is drawn in ("" top level)
    bool folded = false;
    int first = -1, count = 0;
    std::map<std::string, int> ops;
    bool placeholder = true, user_input = false;
  };
  std::vector<std::string> vis(g.nodes.size());
  std::map<std::string, size_t> index;
  std::vector<Item> items;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    vis[i] = visible_id(n, expanded);
    auto [it, fresh] = index.emplace(vis[i], items.size());
    if (fresh) {
      Item item;
      item.id = vis[i];
      item.folded = vis[i].rfind("module:", 0) == 0;
      item.container = item.folded ? parent_of(vis[i].substr(7)) : module_of(n);
      item.first = static_cast<int>(i);
      items.push_back(std::move(item));
    }
    Item& item = items[it->second];
    ++item.count;
    if (!n.is_placeholder()) {
      ++item.ops[short_op(n.target)];
      item.placeholder = false;
    }
    item.user_input = item.user_input || (n.is_placeholder() && n.input_kind == InputKind::user);
  }
  // What leaves a folded module: the first value read outside it, for its label.
  std::map<std::string, std::string> leaving;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int a : node_inputs(g.nodes[i]))
      if (vis[a] != vis[i] && !leaving.count(vis[a])) leaving[vis[a]] = g.nodes[a].outs.empty() ? "" : g.nodes[a].meta().annotation();

  std::ostringstream os;
  os << "digraph G {\n  rankdir=TB; node [shape=box, style=\"rounded,filled\", fillcolor=\"#eef3fb\", "
        "fontname=\"Helvetica\", fontsize=10];\n";
  auto item_line = [&](size_t k) {
    const Item& it = items[k];
    os << "  i" << k << " [id=\"" << dot_escape(it.id) << "\", ";
    if (it.folded) {
      std::vector<std::pair<int, std::string>> top;
      for (const auto& [op, c] : it.ops) top.push_back({-c, op});
      std::sort(top.begin(), top.end());
      std::string ops;
      for (size_t t = 0; t < top.size() && t < 2; ++t) {
        const std::string& op = top[t].second;
        ops += (t ? ", " : "") + label_op(op) + (top[t].first < -1 ? " x" + std::to_string(-top[t].first) : "");
      }
      if (top.size() > 2) ops += ", ...";
      os << "shape=box3d, style=filled, fillcolor=\"#e4ebfa\", color=\"#3d5a99\", label=\"" << dot_escape(it.id.substr(7)) << "\\n"
         << it.count << (it.count == 1 ? " node" : " nodes") << " (double-click to open)\\n" << dot_escape(ops);
      const auto out = leaving.find(it.id);
      if (out != leaving.end() && !out->second.empty()) os << "\\n-> " << out->second;
      os << "\"";
    } else {
      const Node& n = g.nodes[static_cast<size_t>(it.first)];
      const std::string op = !n.is_placeholder() ? n.target : n.param_name.empty() ? "input" : n.param_name;
      os << "label=\"" << dot_escape(n.name) << "\\n" << dot_escape(op);
      for (const auto& m : n.outs) os << "\\n" << m.annotation();
      const auto saved = marks.saved.find(n.name);
      if (saved != marks.saved.end()) os << "\\n" << dot_escape(saved->second) << "\", color=\"#c0392b\", penwidth=2.5, fillcolor=\"#fdecea\"";
      else if (n.is_placeholder()) os << "\", fillcolor=\"" << (it.user_input ? "#e6f4ea" : "#f1f1f1") << "\"";
      else os << "\"";
    }
    os << "];\n";
  };
  // Clusters: every expanded module that holds a drawn item, with its ancestors.
  std::set<std::string> used;
  for (const Item& it : items)
    for (const std::string& p : prefixes(it.container)) used.insert(p);
  std::map<std::string, int> cluster_no;
  std::function<void(const std::string&, int)> emit = [&](const std::string& path, int depth) {
    for (const std::string& c : used)
      if (parent_of(c) == path && c != path) {
        const int no = static_cast<int>(cluster_no.size());
        cluster_no[c] = no;
        os << std::string(2 * depth, ' ') << "  subgraph cluster_" << no << " {\n"
           << std::string(2 * depth, ' ') << "  id=\"cluster:" << dot_escape(c) << "\"; label=\"" << dot_escape(c)
           << "\"; fontname=\"Helvetica\"; fontsize=11; style=\"rounded,dashed\"; color=\"#7f8fb3\";\n";
        emit(c, depth + 1);
        os << std::string(2 * depth, ' ') << "  }\n";
      }
    for (size_t k = 0; k < items.size(); ++k)
      if (items[k].container == path) item_line(k);
  };
  emit("", 0);
  std::map<std::pair<size_t, size_t>, int> edges;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::set<int> seen;
    for (int a : node_inputs(g.nodes[i]))
      if (vis[a] != vis[i] && seen.insert(a).second) ++edges[{index[vis[a]], index[vis[i]]}];
  }
  for (const auto& [e, count] : edges) {
    os << "  i" << e.first << " -> i" << e.second;
    if (count > 1) os << " [label=\"" << count << "\"]";
    os << ";\n";
  }
  os << "  output [shape=oval, fillcolor=\"#fdf2e0\", label=\"output\"];\n";
  std::set<size_t> outs;
  for (int o : g.outputs)
    if (o >= 0 && outs.insert(index[vis[o]]).second) os << "  i" << index[vis[o]] << " -> output;\n";
  os << "}\n";
  return os.str();
}

}  // namespace ls
