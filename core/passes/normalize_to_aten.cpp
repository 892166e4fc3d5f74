#include "passes/normalize_to_aten.h"

#include <string_view>

#include "ir/copy_nodes.h"
#include "ops/known_ops.h"
#include "ops/op_table.h"

namespace ls {
namespace {

// Whether target is "torch.ops." + name already.
bool is_op_target(const std::string& target, const std::string& name) {
  constexpr std::string_view kPrefix = "torch.ops.";
  return target.size() == kPrefix.size() + name.size() && target.compare(0, kPrefix.size(), kPrefix) == 0 &&
         target.compare(kPrefix.size(), name.size(), name) == 0;
}

}  // namespace

Graph normalize_to_aten(const Graph& g) {
  // Copied node by node, each target set as it is copied (not the graph copied whole and then
  // walked again: on a graph too large for the cache that second walk read every node from
  // memory once more).
  Graph out = without_nodes(g);
  copy_nodes(g, out, [](Node& n) {
    if (n.is_placeholder()) return;
    if (n.op == &op::missing())
      throw NodeError(n.name, "node '" + n.name + "' calls " + n.target + ", which Lowerscope's op table lacks (" +
                                  std::to_string(all_ops().size()) + " ops; lowerscope-cli ops lists them)");
    // Most importers spell the target so already: a new string then only replaced an equal one (a
    // heap block made and one freed for every node of the graph).
    if (!is_op_target(n.target, n.op->name)) n.target = "torch.ops." + n.op->name;
  });
  return out;
}

}  // namespace ls
