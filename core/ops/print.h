// A graph printed as PyTorch's GraphModule.print_readable() prints it, so a user can compare it
// with PyTorch's line by line. Here, not in ir/, because calls print their keyword arguments by
// the op's schema.
#pragma once
#include <cstdint>
#include <string>

#include "ir/graph.h"

namespace ls {

std::string print_readable(const Graph& g);

// A hash of everything print_readable(g) + trailer writes (names, annotations, stacks, calls,
// outputs, a stage's note after the graph), without writing it: two graphs that print the same
// text hash the same; a stage whose text is not rendered (PipelineOptions::stage_text off) still
// tells whether it changed the graph.
uint64_t print_hash(const Graph& g, const std::string& trailer = {});

}  // namespace ls
