#include "autodiff/training_step.h"

#include <functional>
#include <map>
#include <stdexcept>

#include "ops/builder.h"
#include "ops/known_ops.h"

namespace ls {

Graph training_step(const JointGraph& joint, const Partition& p, double sgd_lr) {
  Graph g = p.forward;  // forward nodes, phase forward
  g.name = "TrainingStep";
  const int n_out = joint.num_forward_outputs;
  std::vector<int> fw_outputs(p.forward.outputs.begin(), p.forward.outputs.begin() + n_out);
  std::map<std::string, int> saved;  // saved name -> forward node
  for (size_t k = 0; k < p.saved.size(); ++k) saved[p.saved[k].name] = p.forward.outputs.at(n_out + k);
  g.outputs.clear();
  GraphBuilder b(g);

  const Graph& bw = p.backward;
  std::vector<int> map(bw.nodes.size(), -1);
  std::function<void(Arg&)> remap = [&](Arg& a) {
    if (a.is_node()) a.node = map.at(a.node);
    for (Arg& x : a.list) remap(x);
  };
  for (size_t i = 0; i < bw.nodes.size(); ++i) {
    Node n = bw.nodes[i];
    if (n.is_placeholder() && saved.count(n.name)) {
      map[i] = saved.at(n.name);
      continue;
    }
    for (Arg& a : n.args) remap(a);
    n.phase = Phase::backward;
    // A value the backward recomputes keeps its name unless the forward already uses it.
    if (b.taken(n.name)) n.name = b.fresh_name(n.name);
    if (bw.weights.count(bw.nodes[i].name)) g.weights[n.name] = bw.weights.at(bw.nodes[i].name);
    map[i] = g.add(std::move(n));
  }
  g.outputs = fw_outputs;
  std::vector<int> grads;
  for (int o : bw.outputs) grads.push_back(o < 0 ? -1 : map[o]);
  g.outputs.insert(g.outputs.end(), grads.begin(), grads.end());

  if (sgd_lr > 0) {
    b.phase = Phase::update;
    for (size_t k = 0; k < joint.grad_of.size(); ++k) {
      if (joint.grad_of_user_input[k] || grads[k] < 0) continue;
      const int param = g.find(joint.grad_of[k]);
      if (param < 0) throw std::logic_error("training step: parameter '" + joint.grad_of[k] + "' is missing");
      b.origins = g.nodes[param].origins;
      b.stack.clear();
      const Arg step = b.call(op::mul_tensor(), {Arg::of_node(grads[k]), Arg::of_real(sgd_lr)});
      const Arg updated = b.call(op::sub_tensor(), {Arg::of_node(param), step});
      g.outputs.push_back(updated.node);
    }
  }
  verify(g);
  return g;
}

}  // namespace ls
