#include "interp/reference.h"

#include <stdexcept>

#include "ops/op_table.h"

namespace ls {

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

std::vector<Tensor> run_reference(const Graph& g, const std::vector<Tensor>& inputs) {
  check_inputs(g, inputs);
  std::vector<Tensor> vals(g.nodes.size());
  size_t next_input = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.is_placeholder()) {
      vals[i] = inputs[next_input++];
      continue;
    }
    std::vector<Tensor> args(n.args.size());
    for (size_t k = 0; k < n.args.size(); ++k)
      if (n.args[k].is_node()) args[k] = vals[n.args[k].node];
    vals[i] = run_reference_kernel(*n.op, n.args, args, n.outs).at(0);
  }
  std::vector<Tensor> out;
  for (int o : g.outputs) out.push_back(vals[o]);
  return out;
}

}  // namespace ls
