// Appends op nodes to a graph: binds arguments to the schema, infers output metadata, picks a
// fresh PyTorch-style name, and stamps provenance. Passes and decomposition rules build with it.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace ls {

class GraphBuilder {
 public:
  explicit GraphBuilder(Graph& g);

  // Emits `op` and returns a reference to it.
  Arg call(const OpDef& op, std::vector<Arg> args, const std::vector<std::pair<std::string, Arg>>& keywords = {});
  // The same, the op given by its name as find_op takes it (the decomposition rules in ops/ name theirs).
  Arg call(std::string_view op, std::vector<Arg> args, const std::vector<std::pair<std::string, Arg>>& keywords = {});
  int placeholder(const std::string& name, const TensorMeta& meta);
  // A constant tensor the graph carries (a placeholder with the value attached).
  Arg constant(std::string_view base, const Tensor& value);
  // Output i of a multi-output node (a getitem node).
  Arg get(const Arg& node, int i);

  // Stamped on every node emitted from now on.
  std::string stack;
  std::string module_path;  // the module the replaced node belonged to
  std::vector<std::string> origins;
  Phase phase = Phase::forward;

  Graph& graph() { return g_; }
  const TensorMeta& meta(const Arg& a) const { return g_.nodes.at(a.node).meta(); }
  std::string fresh_name(std::string_view base);
  // Whether a node of the graph has this name (a table kept in step with the graph, so building a
  // graph of n nodes costs n look-ups, not n scans; nodes are never renamed once added).
  bool taken(std::string_view name);

 private:
  void index_new_nodes();

  Graph& g_;
  // The names of g_.nodes[0, named_), open-addressed: a slot holds a node's index + 1 (0: empty)
  // and its name's hash; a name is compared through g_.nodes[index].name on a hash match. No name
  // is copied: a set of strings was a heap block per node, 43% of the prims stage at 40,000 nodes.
  struct Slot {
    uint32_t hash = 0;
    uint32_t node = 0;
  };
  std::vector<Slot> slots_;  // a power of two, at most half full
  size_t named_ = 0;
  std::map<std::string, int> next_suffix_;  // base -> the first "_<n>" not yet tried (as FX's namespace counts)
};

}  // namespace ls
