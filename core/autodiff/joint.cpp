#include "autodiff/joint.h"

#include <map>
#include <stdexcept>

#include "ops/builder.h"
#include "ops/known_ops.h"
#include "ops/op_table.h"
#include "passes/decompose.h"
#include "passes/eliminate_dead_nodes.h"

namespace ls {
namespace {

bool has_float_output(const Node& n) {
  for (const TensorMeta& m : n.outs)
    if (dtype_is_float(m.dtype) || dtype_is_complex(m.dtype)) return true;
  return false;
}

// Which nodes carry a gradient: those computed, through ops other than detach, from a
// differentiable input, with a float (or complex: an FFT's) output.
std::vector<bool> requires_grad(const Graph& g) {
  std::vector<bool> r(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.is_placeholder()) {
      r[i] = is_differentiable_input(n);
      continue;
    }
    if (n.op == &op::detach() || !has_float_output(n)) continue;
    for (int a : node_inputs(n)) r[i] = r[i] || r[a];
  }
  return r;
}

}  // namespace

bool is_differentiable_input(const Node& n) {
  return n.is_placeholder() && (dtype_is_float(n.meta().dtype) || dtype_is_complex(n.meta().dtype)) &&
         (n.input_kind == InputKind::user || n.input_kind == InputKind::parameter);
}

JointGraph build_joint(const Graph& forward) {
  JointGraph j;
  // Ops without a rule of their own (linear, conv2d, layer_norm, softmax, attention, ...) are
  // differentiated through their decomposition, as PyTorch does for CompositeImplicitAutograd ops.
  std::vector<std::string> expanded;
  Graph g = decompose_if(eliminate_dead_nodes(forward), [&expanded](const Graph& cur) {
    std::vector<bool> marked = requires_grad(cur);
    for (size_t i = 0; i < cur.nodes.size(); ++i) {
      const Node& n = cur.nodes[i];
      marked[i] = marked[i] && !n.is_placeholder() && !n.op->derivative && n.op->decompose && n.op->kind != OpKind::getitem;
      if (marked[i]) expanded.push_back(n.name + " (" + n.op->name + ")");
    }
    return marked;
  });
  j.expanded = std::move(expanded);
  for (Node& n : g.nodes) n.phase = Phase::forward;
  const std::vector<bool> req0 = requires_grad(g);
  const size_t n_fw = g.nodes.size();
  j.num_forward_outputs = static_cast<int>(g.outputs.size());
  std::vector<int> fw_outputs = g.outputs;
  g.outputs.clear();
  g.name = "GraphModule";
  GraphBuilder b(g);

  // grads[node][output]: the gradient accumulated so far.
  std::vector<std::vector<Arg>> grads(n_fw);
  for (size_t i = 0; i < n_fw; ++i) grads[i].assign(g.nodes[i].outs.size(), Arg::none());
  auto accumulate = [&](int node, size_t k, Arg v) {
    if (v.is_none()) return;
    // A gradient in another float type than its value's (a rule's where(mask, 1.0, 0.0) is
    // float32 beside a bf16 value) is converted, as autograd's validate_outputs does.
    const DType want = g.nodes.at(node).outs.at(k).dtype;
    // A real value's gradient is real: a complex one (a rule passing the gradient of x + z, with
    // z complex, to the real x) keeps its real part, as autograd's handle_r_to_c does.
    if (v.is_node() && dtype_is_float(want) && dtype_is_complex(b.meta(v).dtype)) v = b.call("aten.real.default", {v});
    if (v.is_node() && dtype_is_float(want) && b.meta(v).dtype != want && dtype_is_float(b.meta(v).dtype))
      v = b.call("prims.convert_element_type.default", {v, Arg::of_string(std::string(dtype_torch(want)))});
    Arg& slot = grads.at(node).at(k);
    slot = slot.is_none() ? v : b.call(op::add_tensor(), {slot, v});
  };

  // Tangents: one per forward output that carries a gradient.
  b.phase = Phase::backward;
  for (size_t k = 0; k < fw_outputs.size(); ++k) {
    const int o = fw_outputs[k];
    if (o < 0 || !req0[o]) continue;
    const std::string name = "tangents_" + std::to_string(j.tangents.size() + 1);
    const int t = b.placeholder(name, g.nodes[o].meta());
    g.nodes[t].phase = Phase::backward;
    g.nodes[t].origins = g.nodes[o].origins;
    j.tangents.push_back(name);
    j.tangent_of.push_back(static_cast<int>(k));
    accumulate(o, 0, Arg::of_node(t));
  }

  // Getitems of multi-output forward nodes, so a rule can ask for an output the forward never read.
  std::map<std::pair<int, int64_t>, int> getitem;
  for (size_t i = 0; i < n_fw; ++i) {
    const Node& n = g.nodes[i];
    if (!n.is_placeholder() && n.op->kind == OpKind::getitem) getitem[{n.args[0].node, n.args[1].i}] = static_cast<int>(i);
  }

  for (size_t ii = n_fw; ii-- > 0;) {
    const int i = static_cast<int>(ii);
    if (g.nodes[i].is_placeholder() || !req0[i]) continue;
    bool any = false;
    for (const Arg& a : grads[i]) any = any || !a.is_none();
    if (!any) continue;
    const Node n = g.nodes[i];  // a copy: emitting nodes may move the vector
    if (n.op->kind == OpKind::getitem) {
      accumulate(n.args[0].node, static_cast<size_t>(n.args[1].i), grads[i][0]);
      continue;
    }
    if (!n.op->derivative)
      throw std::runtime_error("node '" + n.name + "': " + n.op->name +
                               " has no derivative rule, so no gradient can flow through it to the model's inputs");
    b.origins = n.origins;
    b.stack = n.stack;
    b.module_path = n.module_path;
    b.phase = Phase::backward;
    DerivCtx ctx{b, *n.op, n.args, nullptr, grads[i], {}};
    ctx.out = [&, i](int k) -> Arg {
      if (g.nodes[i].outs.size() == 1 && k == 0) return Arg::of_node(i);
      auto it = getitem.find({i, k});
      if (it != getitem.end()) return Arg::of_node(it->second);
      const Phase saved = b.phase;
      b.phase = Phase::forward;
      const Arg got = b.get(Arg::of_node(i), k);
      b.phase = saved;
      getitem[{i, k}] = got.node;
      return got;
    };
    for (size_t p = 0; p < n.args.size(); ++p) {
      bool w = n.args[p].is_node() && req0[n.args[p].node];
      for (const Arg& x : n.args[p].list) w = w || (x.is_node() && req0[x.node]);
      ctx.wanted.push_back(w);
    }
    std::vector<Arg> res;
    try {
      res = n.op->derivative(ctx);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error("node '" + n.name + "': derivative of " + n.op->name + ": " + e.what());
    }
    for (size_t p = 0; p < n.args.size() && p < res.size(); ++p) {
      if (n.args[p].is_node() && req0[n.args[p].node]) accumulate(n.args[p].node, 0, res[p]);
      for (size_t e = 0; e < n.args[p].list.size() && e < res[p].list.size(); ++e)
        if (n.args[p].list[e].is_node() && req0[n.args[p].list[e].node]) accumulate(n.args[p].list[e].node, 0, res[p].list[e]);
    }
  }

  g.outputs = fw_outputs;
  for (size_t i = 0; i < n_fw; ++i) {
    const Node& n = g.nodes[i];
    if (!is_differentiable_input(n)) continue;
    const Arg& gr = grads[i][0];
    g.outputs.push_back(gr.is_node() ? gr.node : -1);
    j.grad_of.push_back(n.name);
    j.grad_of_user_input.push_back(n.input_kind == InputKind::user);
  }
  j.graph = eliminate_dead_nodes(g);
  verify(j.graph);
  return j;
}

}  // namespace ls
