// Indexing: index, index_put, index_select, the scatter family, slice/select_scatter, masked_scatter, embedding_dense_backward, _embedding_bag, sort, topk, nonzero.
#include "ops/rule_helpers.h"

namespace ls {
namespace {

using namespace rules;

}  // namespace

void add_indexing_ops(std::vector<OpDef>& t) {
  const std::vector<OpDef> ops = {};
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
