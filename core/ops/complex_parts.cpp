#include "ops/complex_parts.h"

#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_set>

namespace ls::op {
namespace {

// Only ops whose reference kernels read elements through Tensor::get: the views and the pointwise
// kind of one or two operands read complex elements themselves (op_table.cpp) and need no entry;
// where, of three, is here.
constexpr std::string_view kNames[] = {
    "aten.constant_pad_nd.default", "aten.pad.default",
    "aten.reflection_pad1d.default", "aten.reflection_pad2d.default", "aten.reflection_pad3d.default",
    "aten.replication_pad1d.default", "aten.replication_pad2d.default", "aten.replication_pad3d.default",
    "aten.reflection_pad1d_backward.default", "aten.reflection_pad2d_backward.default",
    "aten.reflection_pad3d_backward.default", "aten.replication_pad1d_backward.default",
    "aten.replication_pad2d_backward.default", "aten.replication_pad3d_backward.default",
    "aten.index_select.default", "aten.index.Tensor", "aten.index_put.default", "aten.gather.default",
    "aten.scatter.src", "aten.scatter.value", "aten.scatter_add.default",
    "aten.slice_scatter.default", "aten.select_scatter.default",
    "aten.masked_scatter.default", "aten.masked_scatter_backward.default",
    "aten.masked_fill.Scalar", "aten.masked_fill.Tensor", "aten.where.self",
    "aten.where.ScalarOther", "aten.where.ScalarSelf", "prims.where.default",
    "aten.cat.default", "aten.stack.default", "aten.split.Tensor", "aten.split_with_sizes.default",
    "aten.embedding.default",
    "aten.permute.default", "aten.transpose.int", "aten.expand.default", "aten.clone.default",
    "aten.copy.default", "aten._to_copy.default", "prims.convert_element_type.default",
    "aten.flip.default", "prims.rev.default", "aten.roll.default", "aten.repeat.default",
    "aten.repeat_interleave.self_int", "aten.as_strided.default", "prims.as_strided.default",
    "aten.diagonal.default", "aten.diagonal_backward.default", "aten.slice_backward.default",
    "aten.triu.default", "aten.tril.default", "aten.fill.Scalar", "aten.fill.Tensor",
    "aten.sum.default", "aten.sum.dim_IntList", "prims.sum.default", "aten.mean.default", "aten.mean.dim",
};

const std::unordered_set<const OpDef*>& ops() {
  static const std::unordered_set<const OpDef*> s = [] {
    std::unordered_set<const OpDef*> r;
    for (std::string_view n : kNames) {
      const OpDef* d = find_op(n);
      if (!d) throw std::logic_error("the op table has no '" + std::string(n) + "' (named in ops/complex_parts.cpp)");
      r.insert(d);
    }
    return r;
  }();
  return s;
}

}  // namespace

bool acts_on_parts(const OpDef& op) { return ops().count(&op) != 0; }

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
