// The ops that only move, select or add up elements, and so act on a complex tensor's real and
// imaginary parts apart: pads of every mode, gathers and indexing, scatters without a product
// reduction, index_put (accumulating too), slice/select_scatter, cat and stack, copies and dtype
// conversions, where, flip, roll, repeat, as_strided, the views, sums and their backward ops. Each
// output element is an input element, a sum of input elements, or a number of the call (a pad's
// value), so the op is linear in its values: op(x) = op(re x) + i op(im x). The reference
// interpreter runs such an op on a complex tensor as two runs of its real kernel, one per part
// (interp/reference.cpp: float32 parts for complex64, float64 for complex128, so every element is
// copied exactly), where the kernel would otherwise read complex elements through doubles.
#pragma once
#include <cstddef>

#include "ops/op_table.h"

namespace ls::op {

// Whether the op is one of them: its entry sets OpDef::by_parts (rule_helpers.h's by_parts(), in
// the family files; the reductions' mean does not, as infer_reduction refuses a complex mean).
bool acts_on_parts(const OpDef& op);

// Whether argument `i` of such an op carries values (split into parts), as opposed to indices, a
// mask or a condition (the same in both runs). Tensor arguments only.
bool is_value_argument(const OpDef& op, size_t i);

// Whether argument `i` is a number that is a value (a pad's or a fill's value: the imaginary run
// takes 0, every such number being real).
bool is_value_number(const OpDef& op, size_t i);

}  // namespace ls::op
