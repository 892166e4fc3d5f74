#include "passes/convert_dtype.h"

#include <stdexcept>

#include "ops/op_table.h"

namespace ls {

Graph convert_float_dtype(const Graph& g, DType to) {
  Graph r = g;
  for (Node& n : r.nodes) {
    if (!n.is_placeholder() || !dtype_is_float(n.meta().dtype)) continue;
    n.outs.at(0).dtype = to;
    if (auto w = r.weights.find(n.name); w != r.weights.end()) w->second = cast(w->second, to);
  }
  for (Node& n : r.nodes) {
    if (n.is_placeholder()) continue;
    try {
      n.outs = infer_meta(r, *n.op, n.args);
    } catch (const std::exception& e) {
      throw std::invalid_argument("node '" + n.name + "' (" + n.op->name + ") cannot run in " + std::string(dtype_torch(to)) + ": " +
                                  e.what());
    }
  }
  return r;
}

}  // namespace ls
