#include "passes/decompose.h"

#include <set>
#include <stdexcept>

#include "ops/builder.h"
#include "ops/op_table.h"
#include "passes/eliminate_dead_nodes.h"

namespace ls {
namespace {

// Ops whose decompositions PyTorch runs in float32 for half inputs (torch._decomp's and _refs'
// computation dtype): normalizations, softmax, variances and the like, whose statistics and
// intermediate buffers would lose precision as bf16. Their half operands are converted first and
// their results back to the node's types; products and views keep the half type.
bool in_float32(const OpDef& op, const GraphBuilder& b, const std::vector<Arg>& args) {
  static const std::set<std::string, std::less<>> kOps = {
      "_softmax", "_log_softmax", "_softmax_backward_data", "_log_softmax_backward_data", "softmax", "log_softmax",
      "native_layer_norm", "native_layer_norm_backward", "layer_norm", "native_group_norm", "native_group_norm_backward",
      "group_norm", "native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training",
      "_native_batch_norm_legit_functional", "native_batch_norm_backward", "batch_norm", "instance_norm", "rms_norm",
      "var", "std", "var_mean", "std_mean", "logsumexp", "gelu", "gelu_backward", "mse_loss", "mse_loss_backward"};
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

Arg remap(const Arg& a, const std::vector<std::vector<Arg>>& map) {
  if (a.is_node()) return map.at(a.node).at(0);
  if (a.kind == Arg::Kind::list) {
    Arg l = a;
    for (Arg& x : l.list) x = remap(x, map);
    return l;
  }
  return a;
}

// One sweep: every node outside the target level is replaced by its rule's expansion. A getitem
// of a decomposed multi-output node becomes the matching value of the expansion.
// keep(i): node i stays as it is; what: the target, for messages. The nodes that stay move out of
// g (keep(i) is asked before node i moves; only expanded nodes are read afterwards).
Graph sweep(Graph&& g, const std::function<bool(int)>& keep, const std::string& what, bool& changed) {
  Graph out;
  out.name = g.name;
  out.tuple_output = g.tuple_output;
  out.weights = std::move(g.weights);
  out.nodes.reserve(g.nodes.size());
  GraphBuilder b(out);
  std::vector<std::vector<Arg>> map(g.nodes.size());
  std::vector<bool> expanded(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!n.is_placeholder() && n.op->kind == OpKind::getitem && expanded[n.args[0].node]) {
      const auto& vals = map[n.args[0].node];
      const int64_t k = n.args[1].i;
      if (k < 0 || k >= static_cast<int64_t>(vals.size()) || vals[k].is_none())
        throw std::runtime_error("node '" + n.name + "': output " + std::to_string(k) + " of '" + g.nodes[n.args[0].node].name +
                                 "' has no decomposition " + what);
      map[i] = {vals[k]};
      continue;
    }
    std::vector<Arg> args;
    args.reserve(n.args.size());
    for (const Arg& a : n.args) args.push_back(remap(a, map));
    if (keep(static_cast<int>(i))) {
      Node c = std::move(g.nodes[i]);  // n is not read past this point
      c.args = std::move(args);
      if (!c.is_placeholder() && c.op->kind != OpKind::getitem) c.target = "torch.ops." + c.op->name;
      if (b.taken(c.name)) c.name = b.fresh_name(c.is_placeholder() ? c.name : std::string(c.op->base_name()));
      map[i] = {Arg::of_node(out.add(std::move(c)))};
      continue;
    }
    if (!n.op->decompose)
      throw std::runtime_error("node '" + n.name + "': " + n.op->name + " has no decomposition " + what);
    b.origins = n.origins;
    b.stack = n.stack;
    b.module_path = n.module_path;
    b.phase = n.phase;
    try {
      map[i] = in_float32(*n.op, b, args) ? decompose_in_float32(b, n, args) : n.op->decompose(b, *n.op, args);
      // A decomposition whose result comes out in another type (a where of two Python numbers is
      // float32; a where of a bool tensor and the number 0 is int64) is converted to the node's,
      // as torch._decomp's out wrappers do: the graph's annotated types hold at every stage.
      for (size_t j = 0; j < map[i].size() && j < n.outs.size(); ++j) {
        const Arg& r = map[i][j];
        if (r.is_node() && b.meta(r).dtype != n.outs[j].dtype)
          map[i][j] = b.call("prims.convert_element_type.default", {r, Arg::of_string(std::string(dtype_torch(n.outs[j].dtype)))});
      }
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error("node '" + n.name + "': " + e.what());
    }
    expanded[i] = true;
    changed = true;
  }
  for (int o : g.outputs) {
    if (o < 0) {
      out.outputs.push_back(-1);
      continue;
    }
    const Arg& a = map.at(o).at(0);
    if (!a.is_node()) throw std::runtime_error("graph output '" + g.nodes[o].name + "' decomposed to a constant");
    out.outputs.push_back(a.node);
  }
  return out;
}

}  // namespace

Graph decompose(const Graph& g, unsigned target) {
  // prims sit below Core ATen: a graph already at prims level is also a Core ATen-level graph.
  // Library kernels (matrix multiply, convolution, ...) stay at every level, as in PyTorch's prims
  // graphs; composite prims (var) expand at the prims level, where lowering needs primitives.
  const unsigned accepted = target == level::core_aten ? (level::core_aten | level::prims) : target;
  // Each round's graph is the next one's input, given up: its nodes move rather than copy.
  Graph cur = eliminate_dead_nodes(g);
  for (int round = 0; round < 16; ++round) {
    bool changed = false;
    auto keep = [&](int i) {
      const Node& n = cur.nodes[i];
      if (n.is_placeholder() || n.op->kind == OpKind::extern_kernel || n.op->kind == OpKind::getitem) return true;
      if (target == level::prims && n.op->kind == OpKind::composite) return false;
      return n.op->in(accepted);
    };
    cur = sweep(std::move(cur), keep, std::string("to ") + level_name(target), changed);
    if (!changed) {
      cur = eliminate_dead_nodes(std::move(cur));
      verify(cur);
      return cur;
    }
  }
  throw std::runtime_error(std::string("decomposition to ") + level_name(target) + " did not settle after 16 rounds");
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
    cur = sweep(std::move(cur), keep, "(needed: it has no derivative rule)", changed);
    if (!changed) return cur;
  }
  throw std::runtime_error("expanding ops without derivative rules did not settle after 16 rounds");
}

}  // namespace ls
