#include "dynamic/retarget.h"

#include <map>
#include <stdexcept>

#include "ops/op_table.h"

namespace ls {
namespace {

[[noreturn]] void cannot(const Node& n, const std::string& why) {
  throw std::invalid_argument("node '" + n.name + "' (" + (n.op ? n.op->name : std::string("?")) + "): " + why);
}

int param_index(const OpDef& op, const char* name) {
  for (size_t i = 0; i < op.params.size(); ++i)
    if (op.params[i].name == name) return static_cast<int>(i);
  return -1;
}

// A view's target size at the new input size. The old input and target shapes split into groups of
// dimensions with equal products ([4, 64, 128] -> [4, 64, 4, 32]: {4}{64}{128 -> 4, 32}); a group
// whose input dimensions changed gives its new product to its one output dimension, or, where it
// has several, to the one at the changed input dimension's end of the group.
// An input dimension that splits into several (a flattened batch unflattened again) gives its new
// size to the target sizes that were sizes of the graph's inputs which changed (`moved`: old size ->
// new), where that accounts for the new product.
Shape retarget_view(const Node& n, const Shape& in_old, const Shape& in_new, const Shape& target, const Shape& out_old,
                    const std::map<int64_t, int64_t>& moved) {
  Shape out = target;
  size_t i = 0, o = 0;
  while (i < in_old.size() || o < out_old.size()) {
    const size_t i0 = i, o0 = o;
    int64_t pi = 1, po = 1;
    if (i < in_old.size()) pi *= in_old[i++];
    if (o < out_old.size()) po *= out_old[o++];
    while (pi != po) {
      if (pi < po && i < in_old.size()) pi *= in_old[i++];
      else if (po < pi && o < out_old.size()) po *= out_old[o++];
      else cannot(n, "its target size does not split into groups of the input's dimensions");
    }
    // Trailing size-1 dimensions join the group they follow.
    while (i < in_old.size() && in_old[i] == 1 && (o >= out_old.size() || out_old[o] != 1)) ++i;
    while (o < out_old.size() && out_old[o] == 1 && (i >= in_old.size() || in_old[i] != 1)) ++o;
    int64_t pn = 1;
    std::vector<size_t> changed;
    for (size_t k = i0; k < i; ++k) {
      pn *= in_new[k];
      if (in_new[k] != in_old[k]) changed.push_back(k);
    }
    if (changed.empty()) continue;
    if (o - o0 == 1) {
      if (target[o0] != -1) out[o0] = pn;
      continue;
    }
    {
      int64_t p = 1;
      bool any = false;
      for (size_t k = o0; k < o; ++k) {
        const auto m = moved.find(out_old[k]);
        any = any || m != moved.end();
        p *= m != moved.end() ? m->second : out_old[k];
      }
      if (any && p == pn) {
        for (size_t k = o0; k < o; ++k)
          if (const auto m = moved.find(out_old[k]); m != moved.end() && target[k] != -1) out[k] = m->second;
        continue;
      }
    }
    if (changed.size() != 1) cannot(n, "several sizes of one group of its input changed");
    const size_t c = changed[0];
    const size_t at = c == i0 ? o0 : c == i - 1 ? o - 1 : SIZE_MAX;
    if (at == SIZE_MAX || out_old[at] != in_old[c])
      cannot(n, "cannot tell which dimension of its target follows input dimension " + std::to_string(c));
    if (target[at] != -1) out[at] = in_new[c];
  }
  return out;
}

}  // namespace

Graph retarget_graph(const Graph& g, const std::vector<Shape>& user_input_shapes) {
  Graph r = g;
  const std::vector<int> users = r.user_inputs();
  if (users.size() != user_input_shapes.size())
    throw std::invalid_argument("the graph takes " + std::to_string(users.size()) + " inputs, " +
                                std::to_string(user_input_shapes.size()) + " shapes given");
  std::map<int64_t, int64_t> moved;  // the inputs' sizes that changed: old -> new
  for (size_t u = 0; u < users.size(); ++u) {
    Node& p = r.nodes[users[u]];
    const Shape& old = p.meta().shape;
    if (old.size() != user_input_shapes[u].size())
      throw std::invalid_argument("input '" + p.name + "' has " + std::to_string(old.size()) + " dimensions, not " +
                                  std::to_string(user_input_shapes[u].size()));
    for (size_t d = 0; d < old.size(); ++d)
      if (old[d] != user_input_shapes[u][d]) {
        const auto [it, fresh] = moved.emplace(old[d], user_input_shapes[u][d]);
        if (!fresh && it->second != user_input_shapes[u][d]) it->second = -1;  // ambiguous: two new sizes for one old
      }
    p.outs.at(0) = TensorMeta::contiguous(p.meta().dtype, user_input_shapes[u]);
  }
  for (auto it = moved.begin(); it != moved.end();) it = it->second < 0 ? moved.erase(it) : std::next(it);
  for (size_t id = 0; id < r.nodes.size(); ++id) {
    Node& n = r.nodes[id];
    if (n.is_placeholder()) continue;
    const OpDef& op = *n.op;
    const Node* in = !n.args.empty() && n.args[0].is_node() ? &r.nodes[n.args[0].node] : nullptr;
    const Shape* in_old = in ? &g.nodes[n.args[0].node].meta().shape : nullptr;
    const Shape* in_new = in ? &in->meta().shape : nullptr;
    const bool in_changed = in && *in_old != *in_new;
    const std::string base(op.base_name());
    if (in_changed && (op.kind == OpKind::view || base == "reshape" || base == "_unsafe_view")) {
      const int size = param_index(op, "size") >= 0 ? param_index(op, "size") : param_index(op, "shape");
      if (size >= 0 && base != "expand" && n.args[size].kind == Arg::Kind::list) {
        n.args[size] = Arg::of_ints(retarget_view(n, *in_old, *in_new, n.args[size].ints(), g.nodes[id].meta().shape, moved));
      } else if (base == "expand") {
        Shape t = n.args[1].ints();
        const size_t off = t.size() - in_new->size();
        for (size_t k = 0; k < in_new->size(); ++k)
          if (t[off + k] != -1 && t[off + k] == (*in_old)[k] && (*in_new)[k] != (*in_old)[k]) t[off + k] = (*in_new)[k];
        n.args[1] = Arg::of_ints(t);
      } else if (base == "slice" && n.args.size() >= 4 && n.args[3].kind == Arg::Kind::integer) {
        const int64_t dim = wrap_dim(op, n.args[1].i, static_cast<int64_t>(in_old->size()));
        if (n.args[3].i == (*in_old)[dim]) n.args[3].i = (*in_new)[dim];
      }
    } else if (in_changed && base == "split" && n.args[1].kind == Arg::Kind::integer) {
      const int64_t dim = wrap_dim(op, n.args[2].i, static_cast<int64_t>(in_old->size()));
      if (n.args[1].i == (*in_old)[dim]) n.args[1].i = (*in_new)[dim];
    }
    try {
      n.outs = infer_meta(r, op, n.args);
    } catch (const std::exception& e) {
      cannot(n, e.what());
    }
    if (n.outs.size() != g.nodes[id].outs.size()) cannot(n, "its number of outputs changed");
  }
  return r;
}

}  // namespace ls
