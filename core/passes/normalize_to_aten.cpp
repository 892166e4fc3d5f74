#include "passes/normalize_to_aten.h"

#include "ops/op_table.h"

namespace ls {

Graph normalize_to_aten(const Graph& g) {
  Graph out = g;
  for (Node& n : out.nodes)
    if (!n.is_placeholder()) n.target = "torch.ops." + n.op->name;
  return out;
}

}  // namespace ls
