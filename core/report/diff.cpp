#include "report/diff.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "pipeline/pipeline.h"
#include "sched/schedule.h"

namespace ls {

const char* change_name(Change c) {
  switch (c) {
    case Change::same: return "same";
    case Change::changed: return "changed";
    case Change::added: return "added";
    case Change::removed: return "removed";
  }
  return "?";
}

int GraphDiff::count(Change c) const {
  return static_cast<int>(std::count_if(nodes.begin(), nodes.end(), [c](const NodeMatch& m) { return m.change == c; }));
}

std::string GraphDiff::summary() const {
  std::ostringstream os;
  os << count(Change::same) << " same, " << count(Change::changed) << " changed, " << count(Change::added) << " added, "
     << count(Change::removed) << " removed";
  return os.str();
}

namespace {

std::string origin_key(const Node& n) {
  std::vector<std::string> o = n.origins;
  std::sort(o.begin(), o.end());
  std::string k;
  for (const auto& s : o) k += s + ",";
  return k;
}

std::string metas(const Node& n) {
  std::string s;
  for (const auto& m : n.outs) s += (s.empty() ? "" : ", ") + m.annotation();
  return s;
}

// The scalar arguments as print_readable writes them (node arguments stand as "%").
std::string scalars(const Graph& g, const Node& n) {
  std::string s;
  for (const Arg& a : n.args) s += (a.is_node() ? std::string("%") : arg_text(g, a)) + ";";
  return s;
}

class Matcher {
 public:
  Matcher(const Graph& a, const Graph& b) : a_(a), b_(b), a2b_(a.nodes.size(), -1), b2a_(b.nodes.size(), -1) {}

  GraphDiff run() {
    match_placeholders();
    match_by_provenance();
    match_decomposed();
    match_by_structure();
    match_by_name();
    GraphDiff d;
    for (size_t j = 0; j < b_.nodes.size(); ++j) {
      NodeMatch m;
      m.b = static_cast<int>(j);
      m.a = b2a_[j];
      if (m.a < 0) m.change = Change::added;
      else if (!(m.why = difference(m.a, m.b)).empty()) m.change = Change::changed;
      d.nodes.push_back(std::move(m));
    }
    for (size_t i = 0; i < a_.nodes.size(); ++i)
      if (a2b_[i] < 0) d.nodes.push_back({static_cast<int>(i), -1, Change::removed, ""});
    return d;
  }

 private:
  void pair(int i, int j) {
    a2b_[i] = j;
    b2a_[j] = i;
  }

  // The right-hand inputs of left node i, through the matching (-2 for an input not matched).
  std::vector<int> mapped_inputs(int i) const {
    std::vector<int> v;
    for (int x : node_inputs(a_.nodes[i])) v.push_back(a2b_[x] >= 0 ? a2b_[x] : -2);
    return v;
  }
  bool inputs_correspond(int i, int j) const { return mapped_inputs(i) == node_inputs(b_.nodes[j]); }

  void match_placeholders() {
    std::vector<int> ua = a_.user_inputs(), ub = b_.user_inputs();
    for (size_t j = 0; j < b_.nodes.size(); ++j) {
      const Node& nb = b_.nodes[j];
      if (!nb.is_placeholder()) continue;
      int found = -1;
      for (size_t i = 0; i < a_.nodes.size() && found < 0; ++i) {
        const Node& na = a_.nodes[i];
        if (!na.is_placeholder() || a2b_[i] >= 0) continue;
        if (na.name == nb.name || (!nb.param_name.empty() && na.param_name == nb.param_name)) found = static_cast<int>(i);
      }
      if (found < 0 && nb.input_kind == InputKind::user) {  // the k-th user input
        const auto k = std::find(ub.begin(), ub.end(), static_cast<int>(j)) - ub.begin();
        if (k < static_cast<long>(ua.size()) && a2b_[ua[k]] < 0) found = ua[k];
      }
      if (found >= 0) pair(found, static_cast<int>(j));
    }
  }

  void match_by_provenance() {
    std::map<std::string, std::vector<int>> groups;  // origins -> left op nodes
    for (size_t i = 0; i < a_.nodes.size(); ++i)
      if (!a_.nodes[i].is_placeholder() && !a_.nodes[i].origins.empty()) groups[origin_key(a_.nodes[i])].push_back(static_cast<int>(i));
    std::map<std::string, int> right_sizes;
    for (const Node& n : b_.nodes)
      if (!n.is_placeholder() && !n.origins.empty()) ++right_sizes[origin_key(n)];
    for (size_t j = 0; j < b_.nodes.size(); ++j) {
      const Node& nb = b_.nodes[j];
      if (nb.is_placeholder() || nb.origins.empty()) continue;
      const std::string key = origin_key(nb);
      auto g = groups.find(key);
      if (g == groups.end()) continue;
      int best = -1, best_score = -1;
      for (int i : g->second) {
        if (a2b_[i] >= 0) continue;
        const Node& na = a_.nodes[i];
        const int score = (na.target == nb.target ? 4 : 0) + (inputs_correspond(i, static_cast<int>(j)) ? 2 : 0) +
                          (na.name == nb.name ? 1 : 0);
        if (score > best_score) best = i, best_score = score;
      }
      if (best < 0) continue;
      // A different op is the same node only where each side made one node of these origins.
      const bool same_op = a_.nodes[best].target == nb.target;
      if (!same_op && (g->second.size() != 1 || right_sizes[key] != 1)) continue;
      pair(best, static_cast<int>(j));
    }
  }

  // One node on the left that became several on the right (a decomposition), or the reverse: the
  // node that yields the group's result, with the same output, stands for the one it replaced.
  void match_decomposed() {
    auto groups = [](const Graph& g, const std::vector<int>& matched) {
      std::map<std::string, std::vector<int>> m;
      for (size_t i = 0; i < g.nodes.size(); ++i)
        if (!g.nodes[i].is_placeholder() && !g.nodes[i].origins.empty() && matched[i] < 0)
          m[origin_key(g.nodes[i])].push_back(static_cast<int>(i));
      return m;
    };
    // The group's result: the last node with these metas whose value leaves the group.
    auto result = [](const Graph& g, const std::vector<int>& group, const std::string& want) {
      const std::set<int> in(group.begin(), group.end());
      int found = -1;
      for (int i : group) {
        if (metas(g.nodes[i]) != want) continue;
        bool leaves = std::count(g.outputs.begin(), g.outputs.end(), i) > 0;
        for (int u : g.users(i)) leaves = leaves || !in.count(u);
        if (leaves) found = i;
      }
      return found;
    };
    const auto ga = groups(a_, a2b_), gb = groups(b_, b2a_);
    for (const auto& [key, left] : ga) {
      auto r = gb.find(key);
      if (r == gb.end()) continue;
      const std::vector<int>& right = r->second;
      if (left.size() == 1 && right.size() > 1) {
        const int j = result(b_, right, metas(a_.nodes[left[0]]));
        if (j >= 0) pair(left[0], j);
      } else if (right.size() == 1 && left.size() > 1) {
        const int i = result(a_, left, metas(b_.nodes[right[0]]));
        if (i >= 0) pair(i, right[0]);
      }
    }
  }

  void match_by_structure() {
    std::map<std::string, std::vector<int>> by_target;
    for (size_t i = 0; i < a_.nodes.size(); ++i)
      if (!a_.nodes[i].is_placeholder() && a2b_[i] < 0) by_target[a_.nodes[i].target].push_back(static_cast<int>(i));
    for (size_t j = 0; j < b_.nodes.size(); ++j) {
      const Node& nb = b_.nodes[j];
      if (nb.is_placeholder() || b2a_[j] >= 0 || node_inputs(nb).empty()) continue;
      auto t = by_target.find(nb.target);
      if (t == by_target.end()) continue;
      for (int i : t->second)
        if (a2b_[i] < 0 && inputs_correspond(i, static_cast<int>(j))) {
          pair(i, static_cast<int>(j));
          break;
        }
    }
  }

  void match_by_name() {
    for (size_t j = 0; j < b_.nodes.size(); ++j) {
      if (b2a_[j] >= 0) continue;
      const int i = a_.find(b_.nodes[j].name);
      if (i >= 0 && a2b_[i] < 0 && a_.nodes[i].target == b_.nodes[j].target) pair(i, static_cast<int>(j));
    }
  }

  std::string difference(int i, int j) const {
    const Node& na = a_.nodes[i];
    const Node& nb = b_.nodes[j];
    std::vector<std::string> why;
    if (na.target != nb.target) why.push_back(na.target + " -> " + nb.target);
    if (metas(na) != metas(nb)) why.push_back(metas(na) + " -> " + metas(nb));
    if (!na.is_placeholder() && na.target == nb.target && scalars(a_, na) != scalars(b_, nb)) why.push_back("other arguments");
    if (!na.is_placeholder() && na.target == nb.target && !inputs_correspond(i, j)) why.push_back("reads other inputs");
    std::string s;
    for (const auto& w : why) s += (s.empty() ? "" : "; ") + w;
    return s;
  }

  const Graph& a_;
  const Graph& b_;
  std::vector<int> a2b_, b2a_;
};

std::string label_of(const Node& n) {
  std::string l = n.name + "\\n" + dot_escape(n.is_placeholder() ? (n.param_name.empty() ? "input" : n.param_name) : n.target);
  for (const auto& m : n.outs) l += "\\n" + m.annotation();
  return l;
}

// A kernel's name without its position ("cpp_fused_relu_5" -> "cpp_fused_relu").
std::string stem(const std::string& name) {
  const size_t u = name.find_last_of('_');
  if (u == std::string::npos || u + 1 == name.size()) return name;
  for (size_t i = u + 1; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return name;
  return name.substr(0, u);
}

}  // namespace

std::vector<std::string> text_lines(const std::string& text) {
  std::vector<std::string> v;
  std::istringstream is(text);
  for (std::string line; std::getline(is, line);) v.push_back(line);
  return v;
}

GraphDiff diff_graphs(const Graph& a, const Graph& b) { return Matcher(a, b).run(); }

std::string graph_diff_to_dot(const Graph& a, const Graph& b, const GraphDiff& d) {
  std::vector<int> a2b(a.nodes.size(), -1);
  for (const NodeMatch& m : d.nodes)
    if (m.a >= 0 && m.b >= 0) a2b[m.a] = m.b;
  std::ostringstream os;
  os << "digraph G {\n  rankdir=TB; node [shape=box, style=\"rounded,filled\", fillcolor=\"#eef3fb\", "
        "fontname=\"Helvetica\", fontsize=10];\n";
  auto right_id = [&](int j) { return "b" + std::to_string(j); };
  auto left_id = [&](int i) { return a2b[i] >= 0 ? right_id(a2b[i]) : "a" + std::to_string(i); };
  for (const NodeMatch& m : d.nodes) {
    if (m.b >= 0) {
      const Node& n = b.nodes[m.b];
      os << "  " << right_id(m.b) << " [id=\"" << dot_escape(n.name) << "\", label=\"" << label_of(n);
      if (m.change == Change::changed) os << "\\nwas: " << dot_escape(m.why) << "\", fillcolor=\"#fff3cd\", color=\"#d39e00\", penwidth=2";
      else if (m.change == Change::added) os << "\", fillcolor=\"#e6f4ea\", color=\"#2e7d32\", penwidth=2";
      else os << "\"";
      os << "];\n";
    } else {
      const Node& n = a.nodes[m.a];
      os << "  a" << m.a << " [id=\"removed:" << dot_escape(n.name) << "\", label=\"" << label_of(n)
         << "\", fillcolor=\"#fdecea\", color=\"#c0392b\", style=\"rounded,filled,dashed\", penwidth=2];\n";
    }
  }
  for (size_t j = 0; j < b.nodes.size(); ++j) {
    std::set<int> seen;
    for (int x : node_inputs(b.nodes[j]))
      if (seen.insert(x).second) os << "  " << right_id(x) << " -> " << right_id(static_cast<int>(j)) << ";\n";
  }
  // A removed node hangs from what it read, and feeds what read it, on whichever side they are.
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    std::set<int> seen;
    for (int x : node_inputs(a.nodes[i])) {
      if (!seen.insert(x).second || (a2b[i] >= 0 && a2b[x] >= 0)) continue;
      os << "  " << left_id(x) << " -> " << left_id(static_cast<int>(i)) << " [color=\"#c0392b\", style=dashed];\n";
    }
  }
  os << "  output [shape=oval, fillcolor=\"#fdf2e0\", label=\"output\"];\n";
  for (int o : b.outputs)
    if (o >= 0) os << "  " << right_id(o) << " -> output;\n";
  os << "}\n";
  return os.str();
}

std::vector<KernelMatch> diff_kernels(const std::vector<Kernel>& a, const std::vector<Kernel>& b) {
  // Kernels are joined when they cover a common user-level node (or share a name when neither
  // covers any); each connected group is one match.
  const size_t n = a.size() + b.size();
  std::vector<size_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  auto unite = [&](size_t x, size_t y) { parent[find(x)] = find(y); };
  std::map<std::string, size_t> left_of;  // origin (or name) -> a left kernel covering it
  auto keys = [](const Kernel& k) { return k.origins.empty() ? std::vector<std::string>{"#" + k.name} : k.origins; };
  for (size_t i = 0; i < a.size(); ++i)
    for (const auto& o : keys(a[i])) {
      auto [it, fresh] = left_of.emplace(o, i);
      if (!fresh) unite(i, it->second);
    }
  std::map<std::string, size_t> right_of;
  for (size_t j = 0; j < b.size(); ++j)
    for (const auto& o : keys(b[j])) {
      auto l = left_of.find(o);
      if (l != left_of.end()) unite(a.size() + j, l->second);
      auto [it, fresh] = right_of.emplace(o, j);
      if (!fresh) unite(a.size() + j, a.size() + it->second);
    }
  std::map<size_t, KernelMatch> groups;
  std::vector<size_t> order;  // groups in the right side's order, then left-only ones
  auto group = [&](size_t x) -> KernelMatch& {
    const size_t r = find(x);
    if (!groups.count(r)) order.push_back(r);
    return groups[r];
  };
  std::map<size_t, std::set<std::string>> cover_a, cover_b;
  for (size_t j = 0; j < b.size(); ++j) {
    group(a.size() + j).b.push_back(b[j].name);
    cover_b[find(a.size() + j)].insert(b[j].origins.begin(), b[j].origins.end());
  }
  for (size_t i = 0; i < a.size(); ++i) {
    group(i).a.push_back(a[i].name);
    cover_a[find(i)].insert(a[i].origins.begin(), a[i].origins.end());
  }
  std::vector<KernelMatch> out;
  for (size_t r : order) {
    KernelMatch m = groups[r];
    const size_t na = m.a.size(), nb = m.b.size();
    if (na == 0) m.change = Change::added;
    else if (nb == 0) m.change = Change::removed;
    else if (na == 1 && nb == 1) {
      if (cover_a[r] != cover_b[r]) {
        m.change = Change::changed;
        m.why = "covers other nodes";
      } else if (stem(m.a[0]) != stem(m.b[0])) {  // the numbering follows the kernel's position
        m.change = Change::changed;
        m.why = "renamed";
      }
    } else {
      m.change = Change::changed;
      m.why = nb == 1   ? std::to_string(na) + " kernels fused into 1"
              : na == 1 ? "1 kernel split into " + std::to_string(nb)
                        : std::to_string(na) + " kernels regrouped into " + std::to_string(nb);
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<LineDiff> diff_lines(const std::string& a_text, const std::string& b_text) {
  const std::vector<std::string> a = text_lines(a_text), b = text_lines(b_text);
  std::vector<LineDiff> out;
  size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
  size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre && a[a.size() - 1 - suf] == b[b.size() - 1 - suf]) ++suf;
  for (size_t k = 0; k < pre; ++k) out.push_back({Change::same, static_cast<int>(k + 1), static_cast<int>(k + 1)});
  // Myers' greedy shortest edit script over the middle, keeping each round's frontier to walk back.
  const int n = static_cast<int>(a.size() - pre - suf), m = static_cast<int>(b.size() - pre - suf);
  auto A = [&](int i) -> const std::string& { return a[pre + i]; };
  auto B = [&](int j) -> const std::string& { return b[pre + j]; };
  const int max = n + m, off = max + 1;
  std::vector<int> v(2 * max + 3, 0);
  // trace[d]: the frontier before round d, diagonals -d..d only (memory grows as D squared).
  std::vector<std::vector<int>> trace;
  constexpr int kMaxEdits = 5000;  // beyond this the texts are unrelated: all removed, then all added
  int found_d = -1;
  for (int d = 0; d <= std::min(max, kMaxEdits); ++d) {
    trace.emplace_back(v.begin() + off - d, v.begin() + off + d + 1);
    bool done = false;
    for (int k = -d; k <= d; k += 2) {
      int x = (k == -d || (k != d && v[off + k - 1] < v[off + k + 1])) ? v[off + k + 1] : v[off + k - 1] + 1;
      int y = x - k;
      while (x < n && y < m && A(x) == B(y)) ++x, ++y;
      v[off + k] = x;
      if (x >= n && y >= m) {
        done = true;
        break;
      }
    }
    if (done) {
      found_d = d;
      break;
    }
  }
  std::vector<LineDiff> middle;
  int x = n, y = m;
  if (found_d < 0) {  // (middle is built backwards)
    for (int j = m; j > 0; --j) middle.push_back({Change::added, 0, static_cast<int>(pre) + j});
    for (int i = n; i > 0; --i) middle.push_back({Change::removed, static_cast<int>(pre) + i, 0});
    found_d = 0, x = y = 0;
  }
  for (int d = found_d; d > 0; --d) {
    const std::vector<int>& pv = trace[d];  // pv[d + k]: diagonal k
    const int k = x - y;
    const bool down = k == -d || (k != d && pv[d + k - 1] < pv[d + k + 1]);
    const int pk = down ? k + 1 : k - 1;
    const int px = pv[d + pk], py = px - pk;
    while (x > px + (down ? 0 : 1) && y > py + (down ? 1 : 0)) {
      --x, --y;
      middle.push_back({Change::same, static_cast<int>(pre) + x + 1, static_cast<int>(pre) + y + 1});
    }
    if (down) middle.push_back({Change::added, 0, static_cast<int>(pre) + py + 1});
    else middle.push_back({Change::removed, static_cast<int>(pre) + px + 1, 0});
    x = px, y = py;
  }
  while (x > 0 && y > 0) {
    --x, --y;
    middle.push_back({Change::same, static_cast<int>(pre) + x + 1, static_cast<int>(pre) + y + 1});
  }
  out.insert(out.end(), middle.rbegin(), middle.rend());
  for (size_t k = 0; k < suf; ++k)
    out.push_back({Change::same, static_cast<int>(a.size() - suf + k + 1), static_cast<int>(b.size() - suf + k + 1)});
  return out;
}

std::string diff_report(const CompileResult& a, const std::string& stage_a, const CompileResult& b,
                        const std::string& stage_b) {
  std::ostringstream os;
  const Stage* sa = a.stage(stage_a);
  const Stage* sb = b.stage(stage_b);
  if (!sa || !sb) throw std::runtime_error("no stage '" + (sa ? stage_b : stage_a) + "' to diff");
  const Graph* ga = stage_graph(a, stage_a);
  const Graph* gb = stage_graph(b, stage_b);
  if (ga && gb) {
    const GraphDiff d = diff_graphs(*ga, *gb);
    os << "graph: " << d.summary() << "\n";
    for (const NodeMatch& m : d.nodes) {
      if (m.change == Change::same) continue;
      const Node& n = m.b >= 0 ? gb->nodes[m.b] : ga->nodes[m.a];
      os << "  " << change_name(m.change) << "  " << n.name << "  " << (n.is_placeholder() ? "input" : n.target);
      if (m.change == Change::changed) os << "  (" << (m.a >= 0 ? ga->nodes[m.a].name + ": " : "") << m.why << ")";
      os << "\n";
    }
  }
  if (stage_a == "fused" || stage_b == "fused" || stage_a == "source" || stage_b == "source") {
    const auto km = diff_kernels(a.schedule.kernels, b.schedule.kernels);
    os << "kernels: " << a.schedule.kernels.size() << " -> " << b.schedule.kernels.size() << "\n";
    for (const KernelMatch& m : km) {
      if (m.change == Change::same) continue;
      auto names = [](const std::vector<std::string>& v) {
        std::string s;
        for (const auto& x : v) s += (s.empty() ? "" : " + ") + x;
        return s.empty() ? std::string("(none)") : s;
      };
      os << "  " << change_name(m.change) << "  " << names(m.a) << "  ->  " << names(m.b);
      if (!m.why.empty()) os << "  (" << m.why << ")";
      os << "\n";
    }
  }
  const auto lines = diff_lines(sa->text, sb->text);
  const std::vector<std::string> la = text_lines(sa->text), lb = text_lines(sb->text);
  int changed = 0;
  for (const LineDiff& l : lines) changed += l.change != Change::same;
  os << "text: " << changed << " line(s) differ\n";
  for (const LineDiff& l : lines) {
    if (l.change == Change::removed) os << "- " << la[l.a - 1] << "\n";
    else if (l.change == Change::added) os << "+ " << lb[l.b - 1] << "\n";
  }
  return os.str();
}

}  // namespace ls
