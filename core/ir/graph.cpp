#include "ir/graph.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>


namespace ls {

TensorMeta TensorMeta::contiguous(DType dtype, Shape shape) {
  TensorMeta m;
  m.dtype = dtype;
  m.strides = contiguous_strides(shape);
  m.shape = std::move(shape);
  return m;
}

std::string TensorMeta::annotation() const {
  std::string s(dtype_short(dtype));
  s += shape_str(shape);
  return s;
}

Arg Arg::of_node(int id) { Arg a; a.kind = Kind::node; a.node = id; return a; }
Arg Arg::of_int(int64_t v) { Arg a; a.kind = Kind::integer; a.i = v; return a; }
Arg Arg::of_real(double v) { Arg a; a.kind = Kind::real; a.f = v; return a; }
Arg Arg::of_bool(bool v) { Arg a; a.kind = Kind::boolean; a.b = v; return a; }
Arg Arg::of_string(std::string v) { Arg a; a.kind = Kind::string; a.s = std::move(v); return a; }
Arg Arg::of_ints(const std::vector<int64_t>& v) {
  Arg a;
  a.kind = Kind::list;
  for (int64_t x : v) a.list.push_back(of_int(x));
  return a;
}

double Arg::number() const {
  switch (kind) {
    case Kind::integer: return static_cast<double>(i);
    case Kind::real: return f;
    case Kind::boolean: return b ? 1 : 0;
    default: throw std::invalid_argument("expected a number");
  }
}

std::vector<int64_t> Arg::ints() const {
  if (kind == Kind::integer) return {i};
  if (kind != Kind::list) throw std::invalid_argument("expected a list of ints");
  std::vector<int64_t> v;
  for (const Arg& a : list) {
    if (a.kind != Kind::integer) throw std::invalid_argument("expected a list of ints");
    v.push_back(a.i);
  }
  return v;
}

int Graph::add(Node n) {
  nodes.push_back(std::move(n));
  return static_cast<int>(nodes.size()) - 1;
}

int Graph::find(const std::string& name) const {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].name == name) return static_cast<int>(i);
  return -1;
}

std::vector<int> Graph::inputs() const {
  std::vector<int> v;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].is_placeholder()) v.push_back(static_cast<int>(i));
  return v;
}

std::vector<int> Graph::user_inputs() const {
  std::vector<int> v;
  for (int id : inputs())
    if (!weights.count(nodes[id].name)) v.push_back(id);
  return v;
}

std::vector<int> Graph::users(int id) const {
  std::vector<int> v;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const Arg& a : nodes[i].args) {
      bool uses = a.is_node() && a.node == id;
      for (const Arg& x : a.list) uses = uses || (x.is_node() && x.node == id);
      if (uses) { v.push_back(static_cast<int>(i)); break; }
    }
  return v;
}

namespace {

std::string format_number(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  std::string s = os.str();
  if (s.find_first_of(".eninf") == std::string::npos) s += ".0";
  return s;
}

void print_arg(std::ostream& os, const Graph& g, const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::none: os << "None"; break;
    case Arg::Kind::node: os << g.nodes.at(a.node).name; break;
    case Arg::Kind::integer: os << a.i; break;
    case Arg::Kind::real: os << format_number(a.f); break;
    case Arg::Kind::boolean: os << (a.b ? "True" : "False"); break;
    case Arg::Kind::string: os << '\'' << a.s << '\''; break;
    case Arg::Kind::list:
      os << '[';
      for (size_t i = 0; i < a.list.size(); ++i) {
        if (i) os << ", ";
        print_arg(os, g, a.list[i]);
      }
      os << ']';
      break;
  }
}

}  // namespace

std::string dot_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

std::vector<int> node_inputs(const Node& n) {
  std::vector<int> v;
  for (const Arg& a : n.args) {
    if (a.is_node()) v.push_back(a.node);
    for (const Arg& x : a.list)
      if (x.is_node()) v.push_back(x.node);
  }
  return v;
}

std::string arg_text(const Graph& g, const Arg& a) {
  std::ostringstream os;
  print_arg(os, g, a);
  return os.str();
}

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::update: return "update";
  }
  return "?";
}

std::vector<int> dag_levels(size_t n, const std::vector<std::pair<int, int>>& edges) {
  std::vector<std::vector<int>> out(n);
  std::vector<int> indegree(n, 0), level(n, 0), ready;
  for (const auto& [a, b] : edges) {
    out.at(static_cast<size_t>(a)).push_back(b);
    ++indegree.at(static_cast<size_t>(b));
  }
  for (size_t i = 0; i < n; ++i)
    if (!indegree[i]) ready.push_back(static_cast<int>(i));
  while (!ready.empty()) {  // Kahn's order: a node's level is final once all its tails are done
    const int a = ready.back();
    ready.pop_back();
    for (int b : out[static_cast<size_t>(a)]) {
      level[static_cast<size_t>(b)] = std::max(level[static_cast<size_t>(b)], level[static_cast<size_t>(a)] + 1);
      if (--indegree[static_cast<size_t>(b)] == 0) ready.push_back(b);
    }
  }
  return level;
}

std::vector<bool> long_edges(size_t n, const std::vector<std::pair<int, int>>& edges) {
  std::vector<bool> out(edges.size(), false);
  if (n <= kDotFoldAbove) return out;
  const std::vector<int> level = dag_levels(n, edges);
  for (size_t e = 0; e < edges.size(); ++e)
    out[e] = level[static_cast<size_t>(edges[e].second)] - level[static_cast<size_t>(edges[e].first)] > kDotLongSpan;
  return out;
}

std::string dot_reference(const std::string& name, const std::string& tail_id, const std::string& text) {
  return "  " + name + " [id=\"ref:" + dot_escape(tail_id) + "\", label=\"" + dot_escape(text) +
         "\", style=\"rounded,dashed\", fillcolor=\"#ffffff\", color=\"#7b8794\", fontsize=9, tooltip=\"a long edge, drawn as a reference: click to go to " +
         dot_escape(tail_id) + "\"];\n";
}

std::string graph_to_dot(const Graph& g, const DotMarks& marks) {
  std::ostringstream os;
  os << "digraph G {\n  rankdir=TB; node [shape=box, style=\"rounded,filled\", fillcolor=\"#eef3fb\", "
        "fontname=\"Helvetica\", fontsize=10];\n";
  bool phases = false;
  for (const Node& n : g.nodes) phases = phases || n.phase != Phase::forward;
  auto node_line = [&](size_t i) {
    const Node& n = g.nodes[i];
    const std::string op = !n.is_placeholder() ? n.target
                           : n.input_kind == InputKind::parameter ? "parameter " + n.param_name
                           : n.input_kind == InputKind::buffer ? "buffer " + n.param_name
                                                                : "input";
    std::string label = n.name + "\\n" + dot_escape(op);
    for (const auto& m : n.outs) label += "\\n" + m.annotation();
    if (!n.module_path.empty()) label += "\\n" + dot_escape(n.module_path);
    const auto saved = marks.saved.find(n.name);
    if (saved != marks.saved.end()) label += "\\n" + dot_escape(saved->second);
    const auto note = marks.notes.find(n.name);
    if (note != marks.notes.end()) label += "\\n" + dot_escape(note->second);
    const auto failed = marks.failed.find(n.name);
    if (failed != marks.failed.end()) label += "\\n" + dot_escape(failed->second);
    os << "  n" << i << " [id=\"" << dot_escape(n.name) << "\", label=\"" << label << '"';
    if (failed != marks.failed.end()) os << ", color=\"#b00020\", penwidth=3, fillcolor=\"#ffd7d7\", fontcolor=\"#7a0010\"";
    else if (saved != marks.saved.end()) os << ", color=\"#c0392b\", penwidth=2.5, fillcolor=\"#fdecea\"";
    else if (n.is_placeholder()) os << ", fillcolor=\"" << (n.input_kind == InputKind::user ? "#e6f4ea" : "#f1f1f1") << "\"";
    else if (n.phase == Phase::backward) os << ", fillcolor=\"#f3eefb\"";
    else if (n.phase == Phase::update) os << ", fillcolor=\"#fff8e1\"";
    os << "];\n";
  };
  // The edges, and which are drawn as references (the output is node g.nodes.size()).
  std::vector<std::pair<int, int>> edges;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::set<int> seen;
    for (int a : node_inputs(g.nodes[i]))
      if (seen.insert(a).second) edges.emplace_back(a, static_cast<int>(i));
  }
  const int output = static_cast<int>(g.nodes.size());
  for (int o : g.outputs)
    if (o >= 0) edges.emplace_back(o, output);
  std::vector<bool> as_ref = long_edges(g.nodes.size() + 1, edges);
  // In a large graph with phases, every edge from one phase's cluster into another's is long
  // however the levels fall (dot stacks the clusters): the saved tensors' edges into the backward.
  if (phases && g.nodes.size() + 1 > kDotFoldAbove)
    for (size_t e = 0; e < edges.size(); ++e)
      if (edges[e].second != output && g.nodes[static_cast<size_t>(edges[e].first)].phase != g.nodes[static_cast<size_t>(edges[e].second)].phase)
        as_ref[e] = true;
  // A reference sits in the phase cluster of the node it is drawn beside.
  std::vector<std::vector<size_t>> refs_at(g.nodes.size() + 1);
  for (size_t e = 0; e < edges.size(); ++e)
    if (as_ref[e]) refs_at[static_cast<size_t>(edges[e].second == output ? edges[e].first : edges[e].second)].push_back(e);
  auto ref_lines = [&](size_t i) {
    for (size_t e : refs_at[i]) {
      const auto [a, b] = edges[e];
      os << (b == output ? dot_reference("r" + std::to_string(e), "output", "output")
                         : dot_reference("r" + std::to_string(e), g.nodes[static_cast<size_t>(a)].name, "\u2191 " + g.nodes[static_cast<size_t>(a)].name));
    }
  };
  if (!phases) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      node_line(i);
      ref_lines(i);
    }
  } else {
    for (Phase p : {Phase::forward, Phase::backward, Phase::update}) {
      bool any = false;
      for (const Node& n : g.nodes) any = any || n.phase == p;
      if (!any) continue;
      os << "  subgraph cluster_" << phase_name(p) << " {\n  label=\"" << phase_name(p)
         << "\"; fontname=\"Helvetica\"; fontsize=12; style=\"rounded,dashed\"; color=\"#9aa5b1\";\n";
      for (size_t i = 0; i < g.nodes.size(); ++i)
        if (g.nodes[i].phase == p) {
          node_line(i);
          ref_lines(i);
        }
      os << "  }\n";
    }
  }
  os << "  output [shape=oval, fillcolor=\"#fdf2e0\", label=\"output\"];\n";
  ref_lines(g.nodes.size());
  for (size_t e = 0; e < edges.size(); ++e) {
    const auto [a, b] = edges[e];
    const bool saved_edge = b != output && g.nodes[static_cast<size_t>(a)].phase == Phase::forward && g.nodes[static_cast<size_t>(b)].phase != Phase::forward;
    if (b == output) os << "  n" << a << " -> " << (as_ref[e] ? "r" + std::to_string(e) : std::string("output"));
    else os << "  " << (as_ref[e] ? "r" + std::to_string(e) : "n" + std::to_string(a)) << " -> n" << b;
    if (saved_edge)
      os << (marks.saved.count(g.nodes[static_cast<size_t>(a)].name) ? " [color=\"#c0392b\", penwidth=2]" : " [color=\"#c0392b\", style=dashed]");
    os << ";\n";
  }
  os << "}\n";
  return os.str();
}

std::vector<std::pair<std::string, int>> op_histogram(const Graph& g) {
  std::map<std::string, int> m;
  for (const Node& n : g.nodes)
    if (!n.is_placeholder()) ++m[n.target.rfind("torch.ops.", 0) == 0 ? n.target.substr(10) : n.target];
  return {m.begin(), m.end()};
}

namespace {

// The names seen so far, as an open-addressed table of (32-bit hash, node index), the name
// compared through the node on a hash match: linear in the graph. (The names' hashes sorted to
// find repeats were 16% of decompose's time outside the rules on the wide graph of 40,000; a
// std::set of the names copied each into a tree node of its own before that.)
class NameTable {
 public:
  explicit NameTable(const Graph& g) : g_(g) {
    size_t cap = 16;
    while (cap < 2 * g.nodes.size()) cap *= 2;
    slots_.assign(cap, Slot{0, -1});
  }
  // Adds node i's name; false when an earlier node has it.
  bool insert(int i) {
    const std::string& name = g_.nodes[static_cast<size_t>(i)].name;
    const size_t h = std::hash<std::string>{}(name);
    const auto tag = static_cast<uint32_t>(h ^ (h >> 32));
    const size_t mask = slots_.size() - 1;
    for (size_t k = h & mask;; k = (k + 1) & mask) {
      Slot& s = slots_[k];
      if (s.node < 0) {
        s = Slot{tag, i};
        return true;
      }
      if (s.tag == tag && g_.nodes[static_cast<size_t>(s.node)].name == name) return false;
    }
  }

 private:
  struct Slot {
    uint32_t tag;
    int node;  // -1: empty
  };
  const Graph& g_;
  std::vector<Slot> slots_;
};

// Whether an argument refers to a node outside [0, end) (as node_inputs reads it: itself, or a
// node in its list), without a vector of the inputs for every node.
bool refers_outside(const Arg& a, int end) {
  auto outside = [end](const Arg& x) { return x.is_node() && (x.node < 0 || x.node >= end); };
  return outside(a) || std::any_of(a.list.begin(), a.list.end(), outside);
}

}  // namespace

void verify(const Graph& g) {
  NameTable names(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    // The arguments of a node a few places ahead asked of memory now: on a graph too large for
    // the cache each node's arguments came from memory while the walk waited (issue 37).
    if (i + 8 < g.nodes.size()) __builtin_prefetch(g.nodes[i + 8].args.data());
    const Node& n = g.nodes[i];
    if (n.name.empty()) throw std::logic_error("node " + std::to_string(i) + " has no name");
    if (!names.insert(static_cast<int>(i))) throw std::logic_error("node name '" + n.name + "' is used twice");
    if (n.outs.empty()) throw std::logic_error("node '" + n.name + "' has no output metadata");
    for (const Arg& a : n.args)
      if (refers_outside(a, static_cast<int>(i)))
        throw std::logic_error("node '" + n.name + "' uses a value that is not defined before it");
  }
  if (g.outputs.empty()) throw std::logic_error("graph '" + g.name + "' returns nothing");
  for (int o : g.outputs)
    if (o < -1 || o >= static_cast<int>(g.nodes.size())) throw std::logic_error("graph output refers to no node");
}

}  // namespace ls
