#include "autodiff/partition.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <set>
#include <stdexcept>

#include "ops/known_ops.h"
#include "ops/op_table.h"

namespace ls {
namespace {

constexpr int64_t kInf = int64_t(1) << 60;

// Dinic's maximum flow; the minimum cut is the set of nodes still reachable from the source.
class MaxFlow {
 public:
  explicit MaxFlow(int n) : adj_(static_cast<size_t>(n)), level_(static_cast<size_t>(n)), next_(static_cast<size_t>(n)) {}
  void add_edge(int u, int v, int64_t cap) {
    adj_[u].push_back({v, static_cast<int>(adj_[v].size()), cap});
    adj_[v].push_back({u, static_cast<int>(adj_[u].size()) - 1, 0});
  }
  int64_t run(int s, int t) {
    int64_t flow = 0;
    while (bfs(s, t)) {
      std::fill(next_.begin(), next_.end(), 0);
      while (int64_t f = dfs(s, t, kInf)) flow = std::min(kInf, flow + f);
    }
    return flow;
  }
  std::vector<bool> reachable(int s) const {
    std::vector<bool> seen(adj_.size(), false);
    std::vector<int> stack = {s};
    seen[s] = true;
    while (!stack.empty()) {
      const int u = stack.back();
      stack.pop_back();
      for (const Edge& e : adj_[u])
        if (e.cap > 0 && !seen[e.to]) { seen[e.to] = true; stack.push_back(e.to); }
    }
    return seen;
  }

 private:
  struct Edge { int to, rev; int64_t cap; };
  bool bfs(int s, int t) {
    std::fill(level_.begin(), level_.end(), -1);
    std::queue<int> q;
    level_[s] = 0;
    q.push(s);
    while (!q.empty()) {
      const int u = q.front();
      q.pop();
      for (const Edge& e : adj_[u])
        if (e.cap > 0 && level_[e.to] < 0) { level_[e.to] = level_[u] + 1; q.push(e.to); }
    }
    return level_[t] >= 0;
  }
  int64_t dfs(int u, int t, int64_t f) {
    if (u == t) return f;
    for (int& i = next_[u]; i < static_cast<int>(adj_[u].size()); ++i) {
      Edge& e = adj_[u][i];
      if (e.cap <= 0 || level_[e.to] != level_[u] + 1) continue;
      if (const int64_t d = dfs(e.to, t, std::min(f, e.cap))) {
        e.cap -= d;
        adj_[e.to][e.rev].cap += d;
        return d;
      }
    }
    return 0;
  }
  std::vector<std::vector<Edge>> adj_;
  std::vector<int> level_, next_;
};

int64_t bytes_of(const Node& n) {
  int64_t b = 0;
  for (const TensorMeta& m : n.outs) b += m.numel() * dtype_size(m.dtype);
  return b;
}

// Cheap enough to compute again in the backward: pointwise math and views (and composites made
// of views). Library calls (matrix multiply, convolution) and reductions are not recomputed.
bool recomputable(const Node& n) {
  if (n.is_placeholder()) return true;
  const OpKind k = n.op->kind;
  return k == OpKind::pointwise || k == OpKind::view || k == OpKind::getitem || op::is_composite_view(n.op);
}

// Fusible with its users in generated code: what a library call reads must be in memory.
// Max-pool backward is generated code too (lower/lower.cpp), and reads only the indices.
// Composite ops decompose into generated code, except those that become library calls.
bool fusible(const Node& n) {
  const OpKind k = n.op->kind;
  if (k == OpKind::composite) return !op::is_library_composite(n.op);
  return k == OpKind::pointwise || k == OpKind::reduction || k == OpKind::view || k == OpKind::getitem ||
         n.op == &op::max_pool2d_with_indices_backward();
}

struct Classes {
  std::vector<bool> primal, constant, tangent, backward, fw_required;
  std::vector<std::vector<int>> users;
};

Classes classify(const JointGraph& j) {
  const Graph& g = j.graph;
  const size_t n = g.nodes.size();
  Classes c;
  c.primal.assign(n, false);
  c.constant.assign(n, false);
  c.tangent.assign(n, false);
  c.backward.assign(n, false);
  c.fw_required.assign(n, false);
  c.users.assign(n, {});
  const std::set<std::string> tangents(j.tangents.begin(), j.tangents.end());
  for (size_t i = 0; i < n; ++i) {
    const Node& nd = g.nodes[i];
    std::set<int> seen;
    for (int a : node_inputs(nd))
      if (seen.insert(a).second) c.users[a].push_back(static_cast<int>(i));
    if (nd.is_placeholder()) {
      c.tangent[i] = tangents.count(nd.name) > 0;
      c.constant[i] = !c.tangent[i] && nd.input_kind == InputKind::constant && nd.phase == Phase::backward;
      c.primal[i] = !c.tangent[i] && !c.constant[i];
      c.backward[i] = c.tangent[i];
      continue;
    }
    for (int a : node_inputs(nd)) c.backward[i] = c.backward[i] || c.backward[a];
  }
  std::vector<int> stack(g.outputs.begin(), g.outputs.begin() + j.num_forward_outputs);
  while (!stack.empty()) {
    const int i = stack.back();
    stack.pop_back();
    if (i < 0 || c.fw_required[i]) continue;
    c.fw_required[i] = true;
    for (int a : node_inputs(g.nodes[i])) stack.push_back(a);
  }
  // The other outputs of a multi-output node the forward computes come with it.
  for (size_t i = 0; i < n; ++i) {
    const Node& nd = g.nodes[i];
    if (!nd.is_placeholder() && nd.op->kind == OpKind::getitem && c.fw_required[nd.args[0].node]) c.fw_required[i] = true;
  }
  return c;
}

// The subgraph that computes `outputs` from `inputs` (which become its placeholders, in order).
Graph extract(const Graph& j, const Classes& c, const std::vector<int>& inputs, const std::vector<int>& outputs, Phase phase,
              const std::string& what, std::vector<std::string>* recomputed) {
  const size_t n = j.nodes.size();
  std::vector<bool> is_input(n, false), needed(n, false);
  for (int i : inputs) is_input[i] = true;
  std::vector<int> stack;
  for (int o : outputs)
    if (o >= 0) stack.push_back(o);
  while (!stack.empty()) {
    const int i = stack.back();
    stack.pop_back();
    if (needed[i]) continue;
    needed[i] = true;
    if (is_input[i]) continue;
    if (j.nodes[i].is_placeholder() && !c.constant[i])
      throw std::logic_error("partition: the " + what + " needs '" + j.nodes[i].name + "', which it is not given");
    for (int a : node_inputs(j.nodes[i])) stack.push_back(a);
  }
  Graph out;
  out.name = "GraphModule";
  std::vector<int> map(n, -1);
  for (int i : inputs) {
    const Node& src = j.nodes[i];
    Node p;
    if (src.is_placeholder()) {
      p = src;
    } else {
      p.name = src.name;
      p.outs = {src.meta()};
      p.origins = src.origins;
      p.stack = src.stack;
      p.module_path = src.module_path;
    }
    p.phase = phase;
    p.args.clear();
    p.op = nullptr;
    p.target.clear();
    if (j.weights.count(p.name)) out.weights[p.name] = j.weights.at(p.name);
    map[i] = out.add(std::move(p));
  }
  std::function<void(Arg&)> remap = [&](Arg& a) {
    if (a.is_node()) a.node = map.at(a.node);
    for (Arg& x : a.list) remap(x);
  };
  for (size_t i = 0; i < n; ++i) {
    if (!needed[i] || is_input[i]) continue;
    Node nd = j.nodes[i];
    if (recomputed && !nd.is_placeholder() && nd.phase == Phase::forward) recomputed->push_back(nd.name);
    for (Arg& a : nd.args) remap(a);
    nd.phase = phase;
    if (nd.is_placeholder() && j.weights.count(nd.name)) out.weights[nd.name] = j.weights.at(nd.name);
    map[i] = out.add(std::move(nd));
  }
  for (int o : outputs) out.outputs.push_back(o < 0 ? -1 : map[o]);
  verify(out);
  return out;
}

// As torch's partitioner (is_materialized_backwards): a forward value the backward hands to a
// library call (through views) must be in memory there, so computing it again is not free: it
// is saved instead. Returns that call, or -1.
int materialized_backwards(const Graph& g, const Classes& c, int i) {
  if (g.nodes[i].is_placeholder() || g.nodes[i].op->kind == OpKind::view) return -1;
  std::vector<int> cur = {i};
  std::set<int> seen;
  while (!cur.empty()) {
    const int x = cur.back();
    cur.pop_back();
    for (int u : c.users[x]) {
      if (!seen.insert(u).second) continue;
      const Node& un = g.nodes[u];
      if (!c.fw_required[u] && !fusible(un)) return u;
      if (un.op->kind == OpKind::view) cur.push_back(u);
    }
  }
  return -1;
}

std::string user_list(const Graph& g, const Classes& c, int i, const std::function<bool(int)>& outside) {
  std::string s;
  int shown = 0, more = 0;
  for (int u : c.users[i]) {
    if (!outside(u)) continue;
    if (shown < 3) s += (shown++ ? ", " : "") + g.nodes[u].name;
    else ++more;
  }
  if (more) s += " and " + std::to_string(more) + " more";
  return s;
}

}  // namespace

const char* partitioner_name(Partitioner p) { return p == Partitioner::min_cut ? "min_cut" : "default"; }

Partition partition_joint(const JointGraph& joint, Partitioner which) {
  const Graph& g = joint.graph;
  const Classes c = classify(joint);
  const int n = static_cast<int>(g.nodes.size());
  Partition p;
  p.partitioner = which;
  std::vector<bool> saved(static_cast<size_t>(n), false);
  std::vector<std::string> why(static_cast<size_t>(n));

  if (which == Partitioner::default_partition) {
    // Save every value the forward computes that something outside the forward reads.
    for (int i = 0; i < n; ++i) {
      if (!c.fw_required[i] || c.constant[i]) continue;
      auto outside = [&](int u) { return !c.fw_required[u]; };
      const std::string users = user_list(g, c, i, outside);
      if (users.empty()) continue;
      // A multi-output node is saved through its getitems.
      if (g.nodes[i].outs.size() > 1) continue;
      saved[i] = true;
      why[i] = "the backward reads it (" + users + ")";
    }
  } else {
    // Node i is split into in(i) -> out(i), whose capacity is the bytes saving it costs. The
    // forward's inputs hang off the source, what depends on a tangent off the sink. A forward
    // value that may not be recomputed hangs off the source too: if the backward needs it, it is
    // computed in the forward and saved.
    const int S = 2 * n, T = 2 * n + 1;
    MaxFlow f(2 * n + 2);
    for (int i = 0; i < n; ++i) {
      if (c.constant[i]) continue;
      if (c.backward[i]) {
        f.add_edge(2 * i, T, kInf);
        continue;
      }
      const Node& nd = g.nodes[i];
      f.add_edge(2 * i, 2 * i + 1, nd.outs.size() > 1 ? kInf : bytes_of(nd));
      // As torch's partitioner: only the forward's own inputs and the forward values that may not
      // be recomputed are tied to the source; any other value may move to the backward.
      if (c.primal[i] || (c.fw_required[i] && (!recomputable(nd) || materialized_backwards(g, c, i) >= 0)))
        f.add_edge(S, 2 * i, kInf);
      for (int u : c.users[i]) f.add_edge(2 * i + 1, 2 * u, kInf);
    }
    f.run(S, T);
    const std::vector<bool> side = f.reachable(S);
    int64_t total = 0;
    for (int i = 0; i < n; ++i)
      if (!c.constant[i] && !c.backward[i] && side[2 * i] && !side[2 * i + 1]) {
        saved[i] = true;
        total += bytes_of(g.nodes[i]);
      }
    for (int i = 0; i < n; ++i) {
      if (!saved[i]) continue;
      const Node& nd = g.nodes[i];
      if (c.primal[i]) why[i] = "a forward input the backward reads";
      else if (!recomputable(nd))
        why[i] = "made by " + nd.op->name + " (a library call or reduction), which is never recomputed; the backward reads it";
      else if (const int u = materialized_backwards(g, c, i); u >= 0)
        why[i] = "the backward passes it to " + g.nodes[u].name + " (" + g.nodes[u].op->name +
                 "), a library call that needs it in memory: computing it again would save nothing";
      else
        why[i] = "on the minimum cut: of all sets of values the backward could recompute the rest from, this one is smallest (" +
                 std::to_string(total) + " bytes)";
    }
  }

  std::vector<int> primals, saved_ids, backward_inputs;
  for (int i = 0; i < n; ++i) {
    if (c.primal[i]) primals.push_back(i);
    if (saved[i]) saved_ids.push_back(i);
  }
  std::vector<int> fw_outputs(g.outputs.begin(), g.outputs.begin() + joint.num_forward_outputs);
  fw_outputs.insert(fw_outputs.end(), saved_ids.begin(), saved_ids.end());
  p.forward = extract(g, c, primals, fw_outputs, Phase::forward, "forward", nullptr);
  backward_inputs = saved_ids;
  for (int i = 0; i < n; ++i)
    if (c.tangent[i]) backward_inputs.push_back(i);
  const std::vector<int> grads(g.outputs.begin() + joint.num_forward_outputs, g.outputs.end());
  p.backward = extract(g, c, backward_inputs, grads, Phase::backward, "backward", &p.recomputed);
  for (int i : saved_ids) {
    const Node& nd = g.nodes[i];
    SavedTensor s;
    s.name = nd.name;
    s.op = nd.is_placeholder() ? "input" : nd.op->name;
    s.bytes = bytes_of(nd);
    s.is_input = nd.is_placeholder();
    s.why = why[i];
    p.saved_bytes += s.bytes;
    if (!s.is_input) p.saved_activation_bytes += s.bytes;
    p.saved.push_back(std::move(s));
  }
  return p;
}

}  // namespace ls
