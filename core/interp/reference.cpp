#include "interp/reference.h"

#include <stdexcept>

#include "ops/op_table.h"

namespace ls {

std::vector<Tensor> bind_inputs(const Graph& g, const std::vector<Tensor>& user_inputs) {
  std::vector<Tensor> all;
  size_t next = 0;
  for (int id : g.inputs()) {
    auto w = g.weights.find(g.nodes[id].name);
    if (w != g.weights.end()) {
      all.push_back(w->second);
    } else {
      if (next >= user_inputs.size())
        throw std::invalid_argument("the graph takes " + std::to_string(g.user_inputs().size()) + " inputs but " +
                                    std::to_string(user_inputs.size()) + " were given");
      all.push_back(user_inputs[next++]);
    }
  }
  if (next != user_inputs.size())
    throw std::invalid_argument("the graph takes " + std::to_string(g.user_inputs().size()) + " inputs but " +
                                std::to_string(user_inputs.size()) + " were given");
  return all;
}

void check_inputs(const Graph& g, const std::vector<Tensor>& inputs) {
  const auto ins = g.inputs();
  if (ins.size() != inputs.size())
    throw std::invalid_argument("the graph takes " + std::to_string(ins.size()) + " inputs but " +
                                std::to_string(inputs.size()) + " were given");
  for (size_t k = 0; k < ins.size(); ++k) {
    const TensorMeta& m = g.nodes[ins[k]].meta();
    if (m.shape != inputs[k].shape() || m.dtype != inputs[k].dtype())
      throw std::invalid_argument("input " + std::to_string(k) + " ('" + g.nodes[ins[k]].name + "') must be " +
                                  m.annotation() + " but is " + std::string(dtype_short(inputs[k].dtype())) +
                                  shape_str(inputs[k].shape()));
  }
}

std::vector<std::vector<Tensor>> evaluate_nodes(const Graph& g, const std::vector<Tensor>& placeholders) {
  std::vector<std::vector<Tensor>> vals(g.nodes.size());
  size_t next_input = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.is_placeholder()) {
      vals[i] = {placeholders.at(next_input++)};
      continue;
    }
    if (n.op->kind == OpKind::getitem) {
      vals[i] = {vals[n.args[0].node].at(n.args[1].i)};
      continue;
    }
    RefInputs in;
    in.t.resize(n.args.size());
    in.lists.resize(n.args.size());
    for (size_t k = 0; k < n.args.size(); ++k) {
      if (n.args[k].is_node()) in.t[k] = vals[n.args[k].node].at(0);
      for (const Arg& x : n.args[k].list)
        if (x.is_node()) in.lists[k].push_back(vals[x.node].at(0));
    }
    try {
      vals[i] = run_reference_kernel(*n.op, n.args, in, n.outs);
    } catch (const std::exception& e) {
      throw std::runtime_error("reference kernel of node '" + n.name + "' (" + n.op->name + "): " + e.what());
    }
  }
  return vals;
}

std::vector<Tensor> run_reference(const Graph& g, const std::vector<Tensor>& user_inputs) {
  const std::vector<Tensor> inputs = bind_inputs(g, user_inputs);
  check_inputs(g, inputs);
  const auto vals = evaluate_nodes(g, inputs);
  std::vector<Tensor> out;
  for (int o : g.outputs) out.push_back(o < 0 ? Tensor() : vals[o].at(0));
  return out;
}

}  // namespace ls
