#include "frontend/trace_kernel_map.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace ls {

namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The identifiers of `s` outside string literals (so `"f32[8]"` and `'none'` give none).
std::vector<std::string> identifiers(std::string_view s) {
  std::vector<std::string> out;
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      continue;
    }
    if (c == '#') break;  // a comment to the end of the line
    if (ident_start(c) && (i == 0 || (!ident_char(s[i - 1]) && s[i - 1] != '.'))) {
      size_t j = i;
      while (j < s.size() && ident_char(s[j])) ++j;
      out.emplace_back(s.substr(i, j - i));
      i = j - 1;
    }
  }
  return out;
}

std::string trim(std::string_view s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return std::string(s.substr(a, b - a));
}

// `name` or `name: "annotation"` before a top-level '=' (not '==').
std::string assigned_name(const std::string& line, size_t* rhs) {
  size_t i = 0;
  if (i >= line.size() || !ident_start(line[i])) return {};
  while (i < line.size() && ident_char(line[i])) ++i;
  std::string name = line.substr(0, i);
  size_t j = i;
  while (j < line.size() && line[j] == ' ') ++j;
  if (j < line.size() && line[j] == ':') {  // an annotation: skip its string
    ++j;
    while (j < line.size() && line[j] == ' ') ++j;
    if (j < line.size() && (line[j] == '"' || line[j] == '\'')) {
      const char q = line[j];
      const size_t e = line.find(q, j + 1);
      if (e == std::string::npos) return {};
      j = e + 1;
    } else {
      while (j < line.size() && line[j] != '=') ++j;  // an unquoted annotation
    }
    while (j < line.size() && line[j] == ' ') ++j;
  }
  if (j >= line.size() || line[j] != '=' || (j + 1 < line.size() && line[j + 1] == '=')) return {};
  *rhs = j + 1;
  if (name == "return" || name == "def" || name == "class") return {};
  return name;
}

// "0_backward" -> "backward"; no AOT id: an inference graph.
std::string code_phase(const TraceOutputCode& oc) {
  const size_t u = oc.aot_id.rfind('_');
  const std::string p = u == std::string::npos ? oc.aot_id : oc.aot_id.substr(u + 1);
  return p == "forward" || p == "backward" || p == "inference" ? p : std::string("inference");
}

// The backward graph as the trace prints it: who reads each node, and which of its returns is the
// gradient of which input (`view_1,  # GradAOTOutput(grad_of=PlainAOTInput(idx=1))`).
struct BackwardGraph {
  std::set<std::string> names;
  std::map<std::string, std::vector<std::string>> users;
  std::map<std::string, std::vector<int>> grad_of;  // a returned node -> the inputs it is the gradient of
  bool empty() const { return names.empty(); }
};

BackwardGraph read_backward(const std::string& text) {
  BackwardGraph g;
  if (text.empty()) return g;
  for (const FxTextNode& n : fx_text_nodes(text)) {
    g.names.insert(n.name);
    for (const std::string& r : n.reads) g.users[r].push_back(n.name);
  }
  std::istringstream in(text);
  std::string line;
  const std::string tag = "GradAOTOutput(grad_of=PlainAOTInput(idx=";
  while (std::getline(in, line)) {
    const size_t t = line.find(tag);
    if (t == std::string::npos) continue;
    const std::string head = trim(std::string_view(line).substr(0, line.find('#')));
    std::string name = head;
    while (!name.empty() && (name.back() == ',' || name.back() == ' ')) name.pop_back();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ident_char)) continue;
    const int idx = std::atoi(line.c_str() + t + tag.size());
    g.grad_of[name].push_back(idx);
  }
  return g;
}

// The inputs whose gradients `from` flows into first (the nearest returns, breadth first).
std::vector<int> nearest_gradients(const BackwardGraph& g, const std::string& from) {
  std::deque<std::pair<std::string, int>> todo{{from, 0}};
  std::set<std::string> seen{from};
  int found_at = -1;
  std::set<int> found;
  while (!todo.empty()) {
    auto [n, d] = todo.front();
    todo.pop_front();
    if (found_at >= 0 && d > found_at) break;
    if (const auto it = g.grad_of.find(n); it != g.grad_of.end()) {
      found_at = d;
      found.insert(it->second.begin(), it->second.end());
      continue;
    }
    if (const auto u = g.users.find(n); u != g.users.end())
      for (const std::string& v : u->second)
        if (seen.insert(v).second) todo.push_back({v, d + 1});
  }
  return {found.begin(), found.end()};
}

struct DynamoGraph {
  std::vector<std::string> params;                 // forward's parameters, in order
  std::vector<std::string> user_nodes;             // call nodes, in order
  std::map<std::string, std::string> callee;       // user node -> the callee's last name, "_" stripped ("softmax", "layer_norm")
  std::map<std::string, int> order;                // user node -> index
  std::map<std::string, std::vector<std::string>> consumers;  // parameter -> user nodes reading it (or its alias)
};

DynamoGraph read_dynamo(const std::string& text) {
  DynamoGraph g;
  std::map<std::string, std::string> alias_of;  // l_x_ -> L_x_
  for (const FxTextNode& n : fx_text_nodes(text)) {
    if (n.placeholder) {
      if (n.reads.empty()) g.params.push_back(n.name);
      else alias_of[n.name] = n.reads.front();
      continue;
    }
    g.order[n.name] = static_cast<int>(g.user_nodes.size());
    if (!n.target.empty()) {
      std::string t = n.target;
      // torch.ops.aten.mm.default -> mm; torch.nn.functional.layer_norm -> layer_norm
      std::vector<std::string> parts;
      for (size_t a = 0, b; a <= t.size(); a = b + 1) {
        b = t.find('.', a);
        if (b == std::string::npos) b = t.size();
        parts.push_back(t.substr(a, b - a));
      }
      if (parts.size() >= 5 && parts[0] == "torch" && parts[1] == "ops") parts.pop_back();  // the overload
      std::string last = parts.back();
      while (!last.empty() && last.front() == '_') last.erase(0, 1);
      g.callee[n.name] = last;
    }
    g.user_nodes.push_back(n.name);
    for (const std::string& r : n.reads) {
      const auto a = alias_of.find(r);
      const std::string p = a != alias_of.end() ? a->second : r;
      auto& c = g.consumers[p];
      if (std::find(c.begin(), c.end(), n.name) == c.end()) c.push_back(n.name);
    }
  }
  return g;
}

std::vector<std::pair<std::string, std::string>> pairs_of(const std::vector<MappedKernel>& ks) {
  std::set<std::pair<std::string, std::string>> s;
  for (const MappedKernel& k : ks)
    for (size_t i = 0; i < k.nodes.size(); ++i)
      for (size_t j = i + 1; j < k.nodes.size(); ++j) s.insert(std::minmax(k.nodes[i], k.nodes[j]));
  return {s.begin(), s.end()};
}

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

int phase_rank(const std::string& p) {
  if (p == "inference") return 0;
  if (p == "forward") return 1;
  if (p == "backward") return 2;
  return 3;
}

}  // namespace

std::vector<FxTextNode> fx_text_nodes(const std::string& text) {
  std::vector<FxTextNode> out;
  std::set<std::string> defined;
  std::istringstream in(text);
  std::string line;
  bool in_signature = false;
  std::string signature;
  auto add_params = [&](const std::string& sig) {
    // "self, L_x_: "f32[8]", s0: "Sym(s0)"" -> L_x_, s0 (annotations are strings, so identifiers()
    // skips them; a name is a parameter where a ':' , ',' or the end follows it).
    std::string cur;
    char quote = 0;
    int depth = 0;
    std::vector<std::string> parts;
    for (char c : sig) {
      if (quote) {
        if (c == quote) quote = 0;
        cur += c;
        continue;
      }
      if (c == '"' || c == '\'') quote = c;
      if (c == '(' || c == '[') ++depth;
      if (c == ')' || c == ']') --depth;
      if (c == ',' && depth == 0) {
        parts.push_back(cur);
        cur.clear();
        continue;
      }
      cur += c;
    }
    parts.push_back(cur);
    for (const std::string& p : parts) {
      std::string t = trim(p);
      if (t.empty()) continue;
      size_t i = 0;
      while (i < t.size() && (ident_char(t[i]) || t[i] == '*')) ++i;
      std::string name = t.substr(0, i);
      while (!name.empty() && name.front() == '*') name.erase(0, 1);
      if (name.empty() || name == "self" || !ident_start(name.front())) continue;
      // AOT's joint graph takes (primals, tangents) and flattens them below: those two are not nodes.
      if (defined.insert(name).second) out.push_back({name, {}, true, {}});
    }
  };
  while (std::getline(in, line)) {
    const std::string t = trim(line);
    if (t.empty() || t.front() == '#') continue;
    if (in_signature) {
      if (t.rfind("):", 0) == 0 || t.rfind(")", 0) == 0) {
        add_params(signature);
        in_signature = false;
        continue;
      }
      signature += " " + t.substr(0, t.find('#'));
      continue;
    }
    if (t.rfind("def forward(", 0) == 0) {
      const std::string rest = t.substr(std::string("def forward(").size());
      const size_t close = rest.rfind("):");
      if (close == std::string::npos) {
        in_signature = true;
        signature = rest;
      } else {
        add_params(rest.substr(0, close));
      }
      continue;
    }
    size_t rhs = 0;
    const std::string name = assigned_name(t, &rhs);
    if (name.empty()) continue;
    std::string right = t.substr(rhs);
    if (const size_t semi = right.find(";  "); semi != std::string::npos) right = right.substr(0, semi);  // "; x = None" frees
    FxTextNode n{name, {}, false, {}};
    {
      const std::string r = trim(right);
      size_t i = 0;
      while (i < r.size() && (ident_char(r[i]) || r[i] == '.')) ++i;
      if (i > 0 && i < r.size() && r[i] == '(') n.target = r.substr(0, i);
    }
    for (const std::string& id : identifiers(right))
      if (defined.count(id) && std::find(n.reads.begin(), n.reads.end(), id) == n.reads.end()) n.reads.push_back(id);
    const std::string r = trim(right);
    // `l_x_ = L_x_`: Dynamo's alias of a parameter; the joint graph's `a, b, = fx_pytree.tree_flatten_spec(...)`
    // lines define nothing we track (the names are the parameters already).
    if (n.reads.size() == 1 && r == n.reads.front() && defined.count(r)) {
      bool param = false;
      for (const FxTextNode& o : out)
        if (o.name == r && o.placeholder) param = true;
      n.placeholder = param;
    }
    if (name.find(',') != std::string::npos) continue;
    if (defined.insert(name).second) out.push_back(std::move(n));
  }
  return out;
}

int KernelMap::differing_rows() const {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [](const KernelMapRow& r) { return r.differs(); }));
}

KernelMap map_trace_kernels(const TraceCompile& c, const std::vector<TraceKernel>& ours, bool ours_compiled) {
  KernelMap m;
  m.ours_compiled = ours_compiled;
  const DynamoGraph dg = read_dynamo(c.dynamo_graph);
  m.user_nodes = dg.user_nodes;
  std::string backward_text;
  if (const auto b = c.aot_graphs.find("aot_backward_graph"); b != c.aot_graphs.end()) backward_text = b->second;
  else if (const auto j = c.aot_graphs.find("aot_joint_graph"); j != c.aot_graphs.end()) backward_text = j->second;
  const BackwardGraph bg = read_backward(backward_text);

  bool inference = false;
  for (const TraceOutputCode& oc : c.output_code) inference = inference || code_phase(oc) == "inference";

  // Every kernel of both sides, with its phase and its user-level nodes.
  struct Placed {
    MappedKernel k;
    std::string phase;
    bool inductor;
  };
  std::vector<Placed> all;
  for (size_t i = 0; i < c.output_code.size(); ++i) {
    const TraceOutputCode& oc = c.output_code[i];
    const std::string phase = code_phase(oc);
    for (const TraceKernel& k : oc.kernels) {
      MappedKernel mk{k.name, k.kind, k.kind == "extern", {}, {}, {}, {}, static_cast<int>(i), k.line};
      for (const std::string& n : k.source_nodes) {
        if (dg.order.count(n)) {
          if (std::find(mk.nodes.begin(), mk.nodes.end(), n) == mk.nodes.end()) mk.nodes.push_back(n);
        } else if (std::find(mk.unmapped.begin(), mk.unmapped.end(), n) == mk.unmapped.end()) {
          mk.unmapped.push_back(n);
        }
      }
      // A backward kernel naming no Dynamo node: the users of the inputs whose gradients it computes.
      if (mk.nodes.empty() && phase == "backward" && !bg.empty()) {
        std::set<std::string> via;
        for (const std::string& n : mk.unmapped)
          for (int idx : nearest_gradients(bg, n))
            if (idx >= 0 && idx < static_cast<int>(dg.params.size()))
              if (const auto cs = dg.consumers.find(dg.params[static_cast<size_t>(idx)]); cs != dg.consumers.end())
                via.insert(cs->second.begin(), cs->second.end());
        mk.nodes.assign(via.begin(), via.end());
        mk.via_gradient = mk.nodes;
      }
      (mk.library ? m.inductor_library : m.inductor_generated)++;
      if (mk.nodes.empty()) ++m.unmapped_inductor_kernels;
      all.push_back({std::move(mk), phase, true});
    }
  }
  // Kernels the output code names no node for: the nodes whose callee their descriptive name holds
  // ("cpp_fused__softmax_0": softmax), those no other Inductor kernel of the phase covers first.
  for (Placed& p : all) {
    if (!p.inductor || !p.k.nodes.empty() || !p.k.unmapped.empty()) continue;
    std::string s = p.k.name;
    const size_t f = s.find("fused_");
    if (f == std::string::npos) continue;
    s = "_" + s.substr(f + 6);
    while (!s.empty() && std::isdigit(static_cast<unsigned char>(s.back()))) s.pop_back();  // "_0"
    s += "_";
    std::vector<std::string> named, free;
    for (const std::string& n : dg.user_nodes) {
      const auto c = dg.callee.find(n);
      if (c == dg.callee.end() || c->second.empty() || s.find("_" + c->second + "_") == std::string::npos) continue;
      named.push_back(n);
      const bool covered = std::any_of(all.begin(), all.end(), [&](const Placed& q) {
        return q.inductor && q.phase == p.phase && std::count(q.k.nodes.begin(), q.k.nodes.end(), n) > 0;
      });
      if (!covered) free.push_back(n);
    }
    p.k.nodes = free.empty() ? named : free;
    p.k.via_name = p.k.nodes;
    if (!p.k.nodes.empty()) --m.unmapped_inductor_kernels;
  }
  for (const TraceKernel& k : ours) {
    MappedKernel mk{k.name, k.kind, k.kind == "extern", {}, {}, {}, {}, -1, 0};
    for (const std::string& n : k.source_nodes) {
      auto& into = dg.order.count(n) ? mk.nodes : mk.unmapped;
      if (std::find(into.begin(), into.end(), n) == into.end()) into.push_back(n);
    }
    std::string phase = k.phase.empty() ? "forward" : k.phase;
    if (inference && phase == "forward") phase = "inference";
    (mk.library ? m.ours_library : m.ours_generated)++;
    all.push_back({std::move(mk), phase, false});
  }
  auto by_order = [&](const std::string& a, const std::string& b) { return dg.order.at(a) < dg.order.at(b); };
  for (Placed& p : all) std::sort(p.k.nodes.begin(), p.k.nodes.end(), by_order);

  // Union-find over (phase, node): a kernel joins the nodes it covers.
  std::map<std::pair<std::string, std::string>, size_t> id;
  std::vector<size_t> parent;
  auto node_id = [&](const std::string& phase, const std::string& n) {
    const auto [it, fresh] = id.try_emplace({phase, n}, parent.size());
    if (fresh) parent.push_back(parent.size());
    return it->second;
  };
  std::function<size_t(size_t)> find = [&](size_t x) { return parent[x] == x ? x : parent[x] = find(parent[x]); };
  for (const Placed& p : all)
    for (size_t i = 0; i < p.k.nodes.size(); ++i) {
      const size_t a = find(node_id(p.phase, p.k.nodes[0])), b = find(node_id(p.phase, p.k.nodes[i]));
      parent[b] = a;
    }
  std::map<size_t, size_t> row_of_root;  // union-find root -> row
  for (Placed& p : all) {
    size_t row;
    if (p.k.nodes.empty()) {  // nothing to group it by: a row of its own
      row = m.rows.size();
      m.rows.push_back({});
      m.rows.back().phase = p.phase;
    } else {
      const size_t root = find(node_id(p.phase, p.k.nodes[0]));
      const auto [it, fresh] = row_of_root.try_emplace(root, m.rows.size());
      if (fresh) {
        m.rows.push_back({});
        m.rows.back().phase = p.phase;
      }
      row = it->second;
      auto& nodes = m.rows[row].nodes;
      for (const std::string& n : p.k.nodes)
        if (std::find(nodes.begin(), nodes.end(), n) == nodes.end()) nodes.push_back(n);
    }
    (p.inductor ? m.rows[row].inductor : m.rows[row].ours).push_back(std::move(p.k));
  }

  for (KernelMapRow& r : m.rows) {
    std::sort(r.nodes.begin(), r.nodes.end(), by_order);
    const auto pi = pairs_of(r.inductor), po = pairs_of(r.ours);
    std::set<std::string> only_i, only_o;
    for (const auto& [a, b] : pi)
      if (!std::binary_search(po.begin(), po.end(), std::make_pair(a, b))) only_i.insert(a), only_i.insert(b);
    for (const auto& [a, b] : po)
      if (!std::binary_search(pi.begin(), pi.end(), std::make_pair(a, b))) only_o.insert(a), only_o.insert(b);
    // Only nodes both sides cover can be fused by one and not the other.
    auto covered = [](const std::vector<MappedKernel>& ks, const std::string& n) {
      return std::any_of(ks.begin(), ks.end(), [&](const MappedKernel& k) { return std::count(k.nodes.begin(), k.nodes.end(), n) > 0; });
    };
    for (const std::string& n : r.nodes) {
      if (only_i.count(n) && covered(r.ours, n)) r.fused_by_inductor_only.push_back(n);
      if (only_o.count(n) && covered(r.inductor, n)) r.fused_by_ours_only.push_back(n);
    }
    if (r.nodes.empty()) {
      r.verdict = "not mapped";
      std::vector<std::string> names;
      for (const auto* side : {&r.inductor, &r.ours})
        for (const MappedKernel& k : *side) names.insert(names.end(), k.unmapped.begin(), k.unmapped.end());
      r.why = "its nodes (" + join(names) + ") are not nodes of the Dynamo graph and compute no input's gradient the trace names";
    } else if (r.ours.empty()) {
      r.verdict = ours_compiled ? "only Inductor" : "ours not compiled";
      r.why = ours_compiled ? "none of our kernels covers " + join(r.nodes) : "this graph was not compiled by Lowerscope";
    } else if (r.inductor.empty()) {
      r.verdict = "only ours";
      r.why = "no Inductor kernel covers " + join(r.nodes) + " (a view, or work folded into another kernel's indexing)";
    } else if (!r.fused_by_inductor_only.empty() || !r.fused_by_ours_only.empty()) {
      r.verdict = "fusion differs";
      if (!r.fused_by_inductor_only.empty()) r.why = "Inductor fuses " + join(r.fused_by_inductor_only, "+") + " where ours does not";
      if (!r.fused_by_ours_only.empty())
        r.why += (r.why.empty() ? "" : "; ") + std::string("ours fuses ") + join(r.fused_by_ours_only, "+") + " where Inductor does not";
    } else if (r.inductor.size() != r.ours.size()) {
      r.verdict = "count differs";
      r.why = "Inductor " + std::to_string(r.inductor.size()) + " kernel(s), ours " + std::to_string(r.ours.size());
    } else {
      r.verdict = "same";
      r.why = "the same nodes together on both sides";
    }
  }
  std::stable_sort(m.rows.begin(), m.rows.end(), [&](const KernelMapRow& a, const KernelMapRow& b) {
    if (phase_rank(a.phase) != phase_rank(b.phase)) return phase_rank(a.phase) < phase_rank(b.phase);
    const int ia = a.nodes.empty() ? 1 << 30 : dg.order.at(a.nodes.front());
    const int ib = b.nodes.empty() ? 1 << 30 : dg.order.at(b.nodes.front());
    return ia < ib;
  });
  return m;
}

std::string kernel_map_text(const KernelMap& m) {
  std::ostringstream o;
  o << "Inductor " << m.inductor_generated << " generated kernel(s) + " << m.inductor_library << " library call(s); ours ";
  if (m.ours_compiled) o << m.ours_generated << " generated kernel(s) + " << m.ours_library << " library call(s)";
  else o << "not compiled";
  o << "; " << m.rows.size() << " row(s), " << m.differing_rows() << " differ";
  if (m.unmapped_inductor_kernels) o << "; " << m.unmapped_inductor_kernels << " Inductor kernel(s) not mapped to a Dynamo node";
  o << "\n";
  auto side = [](const std::vector<MappedKernel>& ks) {
    if (ks.empty()) return std::string("—");
    std::string s;
    for (const MappedKernel& k : ks) s += (s.empty() ? "" : ", ") + k.name + (k.library && k.name.rfind("extern_kernels.", 0) != 0 ? " (library)" : "");
    return s;
  };
  for (const KernelMapRow& r : m.rows) {
    std::string nodes = r.nodes.empty() ? "(no Dynamo node)" : join(r.nodes);
    o << "  " << r.phase << std::string(r.phase.size() < 10 ? 10 - r.phase.size() : 1, ' ') << nodes << " -> Inductor: " << side(r.inductor)
      << " | ours: " << side(r.ours) << "   [" << r.verdict << (r.verdict == "same" ? "" : ": " + r.why) << "]\n";
    std::vector<std::string> via, by_name, unmapped;
    for (const MappedKernel& k : r.inductor) {
      if (!k.via_gradient.empty()) via.push_back(k.name + " -> " + join(k.via_gradient));
      if (!k.via_name.empty()) by_name.push_back(k.name + " -> " + join(k.via_name));
      for (const std::string& n : k.unmapped) unmapped.push_back(n);
    }
    if (!via.empty()) o << "            by the gradient each computes: " << join(via, "; ") << "\n";
    if (!by_name.empty()) o << "            by the kernel's name alone (no source-node comment in the code): " << join(by_name, "; ") << "\n";
    if (!unmapped.empty() && !r.nodes.empty()) o << "            Inductor's nodes not in the Dynamo graph (backward graph): " << join(unmapped) << "\n";
  }
  return o.str();
}

std::string kernel_map_json(const KernelMap& m) {
  using json = nlohmann::json;
  auto kernels = [](const std::vector<MappedKernel>& ks) {
    json a = json::array();
    for (const MappedKernel& k : ks)
      a.push_back({{"name", k.name}, {"kind", k.kind}, {"library", k.library}, {"nodes", k.nodes}, {"via_gradient", k.via_gradient}, {"via_name", k.via_name},
                   {"unmapped", k.unmapped}});
    return a;
  };
  json rows = json::array();
  for (const KernelMapRow& r : m.rows)
    rows.push_back({{"phase", r.phase}, {"nodes", r.nodes}, {"verdict", r.verdict}, {"why", r.why},
                    {"fused_by_inductor_only", r.fused_by_inductor_only}, {"fused_by_ours_only", r.fused_by_ours_only},
                    {"inductor", kernels(r.inductor)}, {"ours", kernels(r.ours)}});
  json j = {{"inductor", {{"generated", m.inductor_generated}, {"library", m.inductor_library}}},
            {"ours", {{"compiled", m.ours_compiled}, {"generated", m.ours_generated}, {"library", m.ours_library}}},
            {"unmapped_inductor_kernels", m.unmapped_inductor_kernels},
            {"differing_rows", m.differing_rows()},
            {"rows", rows}};
  return j.dump();
}

}  // namespace ls
