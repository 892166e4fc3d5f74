#include "ops/complex_parts.h"

#include <string>

namespace ls::op {

bool acts_on_parts(const OpDef& op) { return op.by_parts; }

bool is_value_argument(const OpDef& op, size_t i) {
  if (i >= op.params.size()) return false;
  const std::string& n = op.params[i].name;
  return !(n == "index" || n == "indices" || n == "mask" || n == "condition" || n == "pred");
}

bool is_value_number(const OpDef& op, size_t i) {
  if (i >= op.params.size()) return false;
  // A Scalar, a pad's `float? value`, or a number where the schema takes a tensor (prims.where's
  // branches, as masked_fill's decomposition calls it); dims and sizes are ints, never zeroed.
  // A condition or mask given as a number (where(1, z, w)) is not a value: it selects in both runs.
  const Param& p = op.params[i];
  return is_value_argument(op, i) &&
         (p.type == "Scalar" || p.type == "Scalar?" || p.type == "Tensor" || (p.name == "value" && p.type.rfind("Tensor", 0) != 0));
}

}  // namespace ls::op
