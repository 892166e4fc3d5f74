#include "passes/normalize_to_aten.h"

#include "ops/known_ops.h"
#include "ops/op_table.h"

namespace ls {

Graph normalize_to_aten(const Graph& g) {
  Graph out = g;
  for (Node& n : out.nodes) {
    if (n.is_placeholder()) continue;
    if (n.op == &op::missing())
      throw NodeError(n.name, "node '" + n.name + "' calls " + n.target + ", which Lowerscope's op table lacks (" +
                                  std::to_string(all_ops().size()) + " ops; lowerscope-cli ops lists them)");
    n.target = "torch.ops." + n.op->name;
  }
  return out;
}

}  // namespace ls
