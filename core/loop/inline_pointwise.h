// Inlines cheap pointwise nodes into the nodes that read them at another iteration size (a
// per-channel rsqrt(var + eps) read by every element of an image, a ReLU read by the windows of a
// max-pool): the consumer recomputes the value instead
// of loading it, and one kernel and one buffer disappear, as Inductor does with unrealized
// Pointwise nodes. Returns, per inlined node, the consumers it went into.
// Test: tests/core/test_core.cpp (testInlinePointwise).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "loop/loop_ir.h"

namespace ls {
std::vector<std::pair<std::string, std::vector<std::string>>> inline_pointwise(LoopProgram& p);
}
