// Creation and copies: arange, full, full_like, empty, empty_strided, scalar_tensor, fill, rand, randn, randperm, native_dropout, _to_copy, copy; the export-level zeros/ones/*_like/new_* families.
#include "ops/rule_helpers.h"

namespace ls {
namespace {

using namespace rules;

}  // namespace

void add_creation_ops(std::vector<OpDef>& t) {
  const std::vector<OpDef> ops = {};
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
