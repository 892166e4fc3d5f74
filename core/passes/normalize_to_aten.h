// capture -> aten: every node calls its ATen op by its full name (torch.sin -> torch.ops.aten.sin.default).
// A node whose op the table lacks (op::missing(), kept by the importers) stops it with a NodeError
// naming the node and the op.
// Test: tests/core/test_core.cpp (testDynamoGraphToAten).
#pragma once
#include "ir/graph.h"

namespace ls {
Graph normalize_to_aten(const Graph& g);
}
