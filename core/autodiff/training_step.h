// One training step as one graph: the partitioned forward, then the backward reading the saved
// tensors, then (optionally) an SGD update of every parameter. The phases stay marked on the
// nodes, so the scheduler never fuses across them and the saved tensors are materialized, as
// when PyTorch runs the two compiled graphs one after the other.
// Test: tests/test_autodiff.cpp.
#pragma once
#include "autodiff/joint.h"
#include "autodiff/partition.h"

namespace ls {

// Placeholders: the forward's, then the tangents. Outputs: the model's outputs, one gradient per
// differentiable input (as in the joint graph), then, when sgd_lr > 0, each parameter after
// `p - lr * grad`.
Graph training_step(const JointGraph& joint, const Partition& p, double sgd_lr = 0);

}  // namespace ls
