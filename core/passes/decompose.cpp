#include "passes/decompose.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <stdexcept>

#include "ir/copy_nodes.h"
#include "ops/builder.h"
#include "ops/op_table.h"
#include "passes/eliminate_dead_nodes.h"

namespace ls {
namespace {

// Ops whose decompositions PyTorch runs in float32 for half inputs (torch._decomp's and _refs'
// computation dtype): normalizations, softmax, variances and the like, whose statistics and
// intermediate buffers would lose precision as bf16, and the pointwise ones torch._decomp writes
// with pw_cast_for_opmath (hardsigmoid, hardswish and their backward ops: x + 3 in bf16 lost bits
// wherever a step's value was stored). Their half operands are converted first and their results
// back to the node's types; products and views keep the half type.
bool in_float32(const OpDef& op, const GraphBuilder& b, const std::vector<Arg>& args) {
  static const std::set<std::string, std::less<>> kOps = {
      "_softmax", "_log_softmax", "_softmax_backward_data", "_log_softmax_backward_data", "softmax", "log_softmax",
      "native_layer_norm", "native_layer_norm_backward", "layer_norm", "native_group_norm", "native_group_norm_backward",
      "group_norm", "native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training",
      "_native_batch_norm_legit_functional", "native_batch_norm_backward", "batch_norm", "instance_norm", "rms_norm",
      "var", "std", "var_mean", "std_mean", "logsumexp", "gelu", "gelu_backward", "mse_loss", "mse_loss_backward",
      "hardsigmoid", "hardsigmoid_backward", "hardswish", "hardswish_backward",
      // torch._decomp's pw_cast_for_opmath (silu, silu_backward, elu_backward, leaky_relu_backward,
      // hardtanh_backward, threshold_backward) and torch._refs' elementwise_type_promotion_wrapper
      // (sigmoid, softplus, elu, mish, addcmul, addcdiv compute in the computation dtype): one
      // rounding, at the result, as eager's kernels
      "sigmoid", "silu", "silu_backward", "elu", "elu_backward", "softplus", "mish", "leaky_relu_backward",
      "hardtanh_backward", "threshold_backward", "addcmul", "addcdiv"};
  if (!kOps.count(op.base_name())) return false;
  for (const Arg& a : args) {
    if (a.is_node() && dtype_is_half(b.meta(a).dtype)) return true;
    for (const Arg& x : a.list)
      if (x.is_node() && dtype_is_half(b.meta(x).dtype)) return true;
  }
  return false;
}

std::vector<Arg> decompose_in_float32(GraphBuilder& b, const Node& n, std::vector<Arg> args) {
  auto convert = [&](const Arg& a, DType t) {
    return b.call("prims.convert_element_type.default", {a, Arg::of_string(std::string(dtype_torch(t)))});
  };
  for (Arg& a : args) {
    if (a.is_node() && dtype_is_half(b.meta(a).dtype)) a = convert(a, DType::f32);
    for (Arg& x : a.list)
      if (x.is_node() && dtype_is_half(b.meta(x).dtype)) x = convert(x, DType::f32);
  }
  std::vector<Arg> r = n.op->decompose(b, *n.op, args);
  for (size_t j = 0; j < r.size() && j < n.outs.size(); ++j)
    if (r[j].is_node() && b.meta(r[j]).dtype != n.outs[j].dtype) r[j] = convert(r[j], n.outs[j].dtype);
  return r;
}

const char* level_name(unsigned lvl) { return lvl == level::prims ? "prims" : "Core ATen"; }

// What each node of a sweep's input became in its output: its first value (what an argument naming
// it reads), and, for an expansion into other than one value, all of them (what its getitems read).
// One Arg a node rather than a vector a node: the map was a heap block for every node of the graph.
struct Values {
  std::vector<Arg> first;
  std::unordered_map<size_t, std::vector<Arg>> several;

  explicit Values(size_t n) : first(n) {}
  void set(size_t i, std::vector<Arg> v) {
    if (!v.empty()) first[i] = v[0];
    if (v.size() != 1) several[i] = std::move(v);
  }
  // Node i's value, for a reference to it (std::out_of_range where its expansion has none).
  const Arg& value(size_t i) const {
    const Arg& v = first.at(i);
    if (v.is_none() && several.count(i) && several.at(i).empty()) throw std::out_of_range("a decomposition returned no value");
    return v;
  }
  // Value k of node i, none where it has no such value.
  Arg at(size_t i, int64_t k) const {
    const auto it = several.find(i);
    if (it == several.end()) return k == 0 ? first[i] : Arg::none();
    return k >= 0 && k < static_cast<int64_t>(it->second.size()) ? it->second[static_cast<size_t>(k)] : Arg::none();
  }
};

// Whether target is "torch.ops." + name already (a node that stays keeps it without a new string).
bool is_op_target(const std::string& target, const std::string& name) {
  constexpr std::string_view kPrefix = "torch.ops.";
  return target.size() == kPrefix.size() + name.size() && target.compare(0, kPrefix.size(), kPrefix) == 0 &&
         target.compare(kPrefix.size(), name.size(), name) == 0;
}

Arg remap(const Arg& a, const Values& map) {
  if (a.is_node()) return map.value(static_cast<size_t>(a.node));
  if (a.kind == Arg::Kind::list) {
    Arg l = a;
    for (Arg& x : l.list) x = remap(x, map);
    return l;
  }
  return a;
}

// What stays of a sweep's input in its output: moved out of a graph the caller gives up, copied
// out of one it keeps.
template <class T>
T take(T& x) { return std::move(x); }
template <class T>
T take(const T& x) { return x; }

// A node that stays, with its arguments remapped: moved out of a graph given up; copied out of one
// kept, but for the arguments it is given instead (copying them only to drop them was a heap block
// and a copy of every argument for every node of the Core ATen stage).
Node stay(Node& n, std::vector<Arg> args) {
  Node c = std::move(n);
  c.args = std::move(args);
  return c;
}
Node stay(const Node& n, std::vector<Arg> args) {
  static_assert(sizeof(void*) != 8 || sizeof(Node) == 256, "a field added to Node: copy it here too");
  Node c;
  c.name = n.name;
  c.target = n.target;
  c.op = n.op;
  c.args = std::move(args);
  c.outs = n.outs;
  c.stack = n.stack;
  c.origins = n.origins;
  c.input_kind = n.input_kind;
  c.param_name = n.param_name;
  c.module_path = n.module_path;
  c.phase = n.phase;
  return c;
}

// What a sweep learnt of its output on the way, each node looked at once, just made (still in the
// cache), so that nothing walks the output again only to find it: on graphs too large for the
// cache each such walk was a pass over memory, and the stage grew faster than the graph.
struct SweepInfo {
  // stays(node): whether a node stays in a sweep of the output (null: not asked).
  const std::function<bool(const Node&)>* stays = nullptr;
  size_t reserve = 0;     // nodes to reserve in the output (0: as many as the input has)
  bool all_stay = true;   // every node of the output stays (asked of those the expansions made)
  bool none_dead = true;  // every node of the output but the placeholders is read by a node or returned
};

void mark_read(const Arg& a, std::vector<char>& read) {
  auto mark = [&](const Arg& x) {
    if (x.is_node() && x.node >= 0 && static_cast<size_t>(x.node) < read.size()) read[static_cast<size_t>(x.node)] = 1;
  };
  mark(a);
  for (const Arg& x : a.list) mark(x);
}

// One sweep: every node outside the target level is replaced by its rule's expansion. A getitem
// of a decomposed multi-output node becomes the matching value of the expansion.
// G: Graph (given up: the nodes that stay move out of g) or const Graph (they are copied).
// live: the nodes to sweep (the others, unread by any output, are left out, as
// eliminate_dead_nodes leaves them), empty for all; keep(i): node i stays as it is (asked before
// node i moves; only expanded nodes are read afterwards); what: the target, for messages.
template <class G>
Graph sweep(G& g, const std::vector<bool>& live, const std::function<bool(int)>& keep, const std::string& what, bool& changed,
            SweepInfo& info) {
  Graph out;
  out.name = g.name;
  out.tuple_output = g.tuple_output;
  out.weights = take(g.weights);
  out.nodes.reserve(std::max(info.reserve, g.nodes.size()));
  info.all_stay = info.none_dead = true;
  std::vector<char> read;  // node k of out is read by a later node
  read.reserve(out.nodes.capacity());
  GraphBuilder b(out);
  Values map(g.nodes.size());
  std::vector<bool> expanded(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!live.empty() && !live[i] && !n.is_placeholder()) continue;
    if (!n.is_placeholder() && n.op->kind == OpKind::getitem && expanded[n.args[0].node]) {
      const int64_t k = n.args[1].i;
      Arg v = map.at(static_cast<size_t>(n.args[0].node), k);
      if (v.is_none())
        throw std::runtime_error("node '" + n.name + "': output " + std::to_string(k) + " of '" + g.nodes[n.args[0].node].name +
                                 "' has no decomposition " + what);
      map.first[i] = std::move(v);
      continue;
    }
    std::vector<Arg> args;
    args.reserve(n.args.size());
    for (const Arg& a : n.args) args.push_back(remap(a, map));
    if (keep(static_cast<int>(i))) {
      Node c = stay(g.nodes[i], std::move(args));  // n is not read past this point
      if (!c.is_placeholder() && c.op->kind != OpKind::getitem && !is_op_target(c.target, c.op->name)) c.target = "torch.ops." + c.op->name;
      if (b.taken(c.name)) c.name = b.fresh_name(c.is_placeholder() ? c.name : std::string(c.op->base_name()));
      for (const Arg& a : c.args) mark_read(a, read);
      map.first[i] = Arg::of_node(out.add(std::move(c)));
      read.push_back(0);
      continue;
    }
    if (!n.op->decompose)
      throw std::runtime_error("node '" + n.name + "': " + n.op->name + " has no decomposition " + what);
    b.origins = n.origins;
    b.stack = n.stack;
    b.module_path = n.module_path;
    b.phase = n.phase;
    const size_t made = out.nodes.size();
    try {
      std::vector<Arg> vals = in_float32(*n.op, b, args) ? decompose_in_float32(b, n, args) : n.op->decompose(b, *n.op, args);
      // A decomposition whose result comes out in another type (a where of two Python numbers is
      // float32; a where of a bool tensor and the number 0 is int64) is converted to the node's,
      // as torch._decomp's out wrappers do: the graph's annotated types hold at every stage.
      for (size_t j = 0; j < vals.size() && j < n.outs.size(); ++j) {
        const Arg& r = vals[j];
        if (r.is_node() && b.meta(r).dtype != n.outs[j].dtype)
          vals[j] = b.call("prims.convert_element_type.default", {r, Arg::of_string(std::string(dtype_torch(n.outs[j].dtype)))});
      }
      map.set(i, std::move(vals));
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error("node '" + n.name + "': " + e.what());
    }
    expanded[i] = true;
    changed = true;
    read.resize(out.nodes.size(), 0);
    for (size_t k = made; k < out.nodes.size(); ++k) {
      const Node& x = out.nodes[k];
      for (const Arg& a : x.args) mark_read(a, read);
      if (info.stays && info.all_stay && !(*info.stays)(x)) info.all_stay = false;
    }
  }
  for (int o : g.outputs) {
    if (o < 0) {
      out.outputs.push_back(-1);
      continue;
    }
    const Arg& a = map.value(static_cast<size_t>(o));
    if (!a.is_node()) throw std::runtime_error("graph output '" + g.nodes[o].name + "' decomposed to a constant");
    out.outputs.push_back(a.node);
    mark_read(a, read);
  }
  for (size_t k = 0; info.none_dead && k < out.nodes.size(); ++k) info.none_dead = read[k] || out.nodes[k].is_placeholder();
  return out;
}

}  // namespace

Graph decompose(const Graph& g, unsigned target) {
  // prims sit below Core ATen: a graph already at prims level is also a Core ATen-level graph.
  // Library kernels (matrix multiply, convolution, ...) stay at every level, as in PyTorch's prims
  // graphs; composite prims (var) expand at the prims level, where lowering needs primitives.
  const unsigned accepted = target == level::core_aten ? (level::core_aten | level::prims) : target;
  auto keep = [&](const Node& n) {
    if (n.is_placeholder() || n.op->kind == OpKind::extern_kernel || n.op->kind == OpKind::getitem) return true;
    if (target == level::prims && n.op->kind == OpKind::composite) return false;
    return n.op->in(accepted);
  };
  const std::string what = std::string("to ") + level_name(target);
  // The first round reads the caller's graph, its dead nodes left out (not a copy of the graph
  // without them: that copy was 6% of decompose's time in the chain of 20,000); each later
  // round's graph is the next one's input, given up: its nodes move rather than copy.
  const std::vector<bool> live = live_nodes(g);
  // A graph already at the target level, none of its nodes dead (the Core ATen stage of a graph
  // of Core ATen ops): the sweep would copy it node for node, the same ids, arguments and names
  // (a name is renamed there only where an earlier node has it, and verify finds that here), the
  // targets spelled as there. Copied so, without the sweep's map of values, its arguments rebuilt
  // and its table of names (the stage's time grew faster than the graph with them: each is a
  // pass over memory that no longer fits the cache). Where verify finds something wrong with the
  // copy, the sweep runs after all, so that what it does with such a graph stays as it was.
  bool all_stay = true;
  for (size_t i = 0; all_stay && i < g.nodes.size(); ++i) all_stay = keep(g.nodes[i]) && (live[i] || g.nodes[i].is_placeholder());
  if (all_stay) {
    Graph copy = without_nodes(g);
    copy_nodes(g, copy, [](Node& c) {
      if (!c.is_placeholder() && c.op->kind != OpKind::getitem && !is_op_target(c.target, c.op->name))
        c.target = "torch.ops." + c.op->name;
    });
    try {
      verify(copy);
      return copy;
    } catch (const std::logic_error&) {
    }
  }
  bool changed = false;
  const std::function<bool(const Node&)> stays = keep;
  SweepInfo info;
  info.stays = &stays;
  // A prims expansion of a pointwise op is two or three nodes (sigmoid: 1 / (1 + exp(-x))): the
  // output reserved for that, so that it is not moved node by node into a larger block midway.
  if (target == level::prims) info.reserve = 3 * g.nodes.size();
  Graph cur = sweep(g, live, [&](int i) { return keep(g.nodes[i]); }, what, changed, info);
  // A first round that expanded nothing left the dead nodes out and made none: nothing to remove.
  const bool expanded = changed;
  for (int round = 1; round < 16 && changed; ++round) {
    // A graph whose every node stays comes out of a sweep as it went in (the same nodes, ids and
    // names): the sweep that would only confirm it is skipped (40% of the prims stage in the chain
    // of 20,000, spent moving every node and hashing every name once more).
    // (The sweep asked each node it made, as it made it: every node stays.)
    if (info.all_stay) {
      changed = false;
      break;
    }
    changed = false;
    info.reserve = 0;
    cur = sweep(cur, {}, [&](int i) { return keep(cur.nodes[i]); }, what, changed, info);
  }
  if (changed) throw std::runtime_error(std::string("decomposition to ") + level_name(target) + " did not settle after 16 rounds");
  // Where every node but the placeholders is read by another or returned, none is dead (the last
  // dead node would be read only by dead nodes after it): eliminate_dead_nodes would leave the
  // graph as it is, after two walks over it.
  if (expanded && !info.none_dead) cur = eliminate_dead_nodes(std::move(cur));
  verify(cur);
  return cur;
}

Graph decompose_if(const Graph& g, const std::function<std::vector<bool>(const Graph&)>& select) {
  Graph cur = g;
  for (int round = 0; round < 16; ++round) {
    bool changed = false;
    const std::vector<bool> marked = select(cur);
    auto keep = [&](int i) {
      const Node& n = cur.nodes[i];
      return n.is_placeholder() || n.op->kind == OpKind::getitem || !marked.at(i);
    };
    SweepInfo info;
    cur = sweep(cur, {}, keep, "(needed: it has no derivative rule)", changed, info);
    if (!changed) return cur;
  }
  throw std::runtime_error("expanding ops without derivative rules did not settle after 16 rounds");
}

}  // namespace ls
