// Splitting the joint graph into a forward graph and a backward graph: which forward values are
// saved for the backward and which the backward computes again. Two partitioners, as in
// torch._functorch.partitioners: `default_partition` saves every forward value the backward
// reads; `min_cut_rematerialization_partition` finds the set of saved values of least total
// size (a minimum s-t cut) given that cheap ops (pointwise, views) may be recomputed in the
// backward and library calls and reductions may not. Each saved tensor carries the rule that chose it.
// Test: tests/test_autodiff.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "autodiff/joint.h"
#include "ir/graph.h"

namespace ls {

enum class Partitioner : uint8_t { default_partition, min_cut };
const char* partitioner_name(Partitioner p);  // "default", "min_cut"

struct SavedTensor {
  std::string name;    // the forward node whose value is saved
  std::string op;      // its op's name as the table spells it, or "input"
  int64_t bytes = 0;
  bool is_input = false;  // a forward input (parameter or user input): saving it costs no extra memory
  std::string why;        // the rule that decided it
};

struct Partition {
  Partitioner partitioner = Partitioner::min_cut;
  Graph forward;   // outputs: the model's outputs, then the saved tensors
  Graph backward;  // placeholders: the saved tensors, then the tangents; outputs: the gradients
  std::vector<SavedTensor> saved;
  std::vector<std::string> recomputed;  // forward nodes the backward computes again
  int64_t saved_bytes = 0;              // all saved tensors
  int64_t saved_activation_bytes = 0;   // those that are not forward inputs
};

Partition partition_joint(const JointGraph& joint, Partitioner p);

}  // namespace ls
