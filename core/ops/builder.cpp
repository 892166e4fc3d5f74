#include "ops/builder.h"

#include <algorithm>
#include <functional>
#include <set>
#include <stdexcept>

#include "ops/op_table.h"

namespace ls {

GraphBuilder::GraphBuilder(Graph& g) : g_(g) {}

namespace {
uint64_t name_hash(std::string_view s) { return std::hash<std::string_view>{}(s); }
}  // namespace

void GraphBuilder::index_new_nodes() {
  const size_t n = g_.nodes.size();
  if (named_ > n) {  // nodes removed since: index them all again
    slots_.clear();
    named_ = 0;
  }
  if (named_ == n) return;
  // Sized for the graph's reserved capacity, so a sweep that reserves its nodes never rehashes.
  if (slots_.size() < 2 * n) {
    size_t cap = 64;
    while (cap < 2 * std::max(n, g_.nodes.capacity())) cap *= 2;
    slots_.assign(cap, Slot{});
    named_ = 0;  // rehashed from the names, not the old slots (a 32-bit hash keeps no position bits)
  }
  const size_t mask = slots_.size() - 1;
  for (; named_ < n; ++named_) {
    const uint64_t h = name_hash(g_.nodes[named_].name);
    size_t k = h & mask;
    while (slots_[k].node) k = (k + 1) & mask;
    slots_[k] = Slot{static_cast<uint32_t>(h >> 32), static_cast<uint32_t>(named_ + 1)};
  }
}

bool GraphBuilder::taken(std::string_view name) {
  index_new_nodes();
  if (slots_.empty()) return false;
  const uint64_t h = name_hash(name);
  const size_t mask = slots_.size() - 1;
  for (size_t k = h & mask; slots_[k].node; k = (k + 1) & mask)
    if (slots_[k].hash == static_cast<uint32_t>(h >> 32) && g_.nodes[slots_[k].node - 1].name == name) return true;
  return false;
}

std::string GraphBuilder::fresh_name(std::string_view base) {
  // FX never names a node after a Python builtin; it appends a counter instead.
  static const std::set<std::string_view> builtins = {"sum", "pow", "abs", "max", "min", "all", "any", "round", "input"};
  std::string b(base);
  if (!builtins.count(base) && !taken(b)) return b;
  // Counting on from the last name handed out keeps this linear per name on large graphs.
  for (int& i = next_suffix_.try_emplace(b, 1).first->second;; ++i) {
    std::string n = b + "_" + std::to_string(i);
    if (!taken(n)) {
      ++i;
      return n;
    }
  }
}

Arg GraphBuilder::call(std::string_view name, std::vector<Arg> args, const std::vector<std::pair<std::string, Arg>>& keywords) {
  const OpDef* op = find_op(name);
  if (!op) throw std::logic_error("decomposition emits unknown op '" + std::string(name) + "'");
  return call(*op, std::move(args), keywords);
}

Arg GraphBuilder::call(const OpDef& op, std::vector<Arg> args, const std::vector<std::pair<std::string, Arg>>& keywords) {
  Node n;
  n.op = &op;
  n.target = op.kind == OpKind::getitem ? "getitem" : "torch.ops." + op.name;
  n.args = bind_args(op, std::move(args), keywords);
  n.outs = infer_meta(g_, op, n.args);
  n.name = fresh_name(op.base_name());
  n.stack = stack;
  n.module_path = module_path;
  n.origins = origins;
  n.phase = phase;
  return Arg::of_node(g_.add(std::move(n)));
}

Arg GraphBuilder::constant(std::string_view base, const Tensor& value) {
  Node n;
  // Not the name of a weight either: a decomposition sweep copies the weights before it re-adds
  // the placeholders that hold them, and a constant named like one of those would take its value.
  // (fresh_name knows the nodes only: it would hand out a weight's name again and again.)
  n.name = fresh_name(base);
  for (int k = 1; g_.weights.count(n.name); ++k) n.name = fresh_name(std::string(base) + "_" + std::to_string(k));
  n.outs = {TensorMeta::contiguous(value.dtype(), value.shape())};
  n.input_kind = InputKind::constant;
  n.module_path = module_path;
  n.origins = origins;
  n.phase = phase;
  g_.weights[n.name] = value;
  // Appended where it is first needed: bindings go by name, so placeholder order is free.
  return Arg::of_node(g_.add(std::move(n)));
}

Arg GraphBuilder::get(const Arg& node, int i) { return call("getitem", {node, Arg::of_int(i)}); }

int GraphBuilder::placeholder(const std::string& name, const TensorMeta& meta) {
  Node n;
  n.name = name;
  n.outs = {meta};
  n.origins = {name};
  return g_.add(std::move(n));
}

}  // namespace ls
