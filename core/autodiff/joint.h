// Reverse-mode autodiff: the joint forward+backward graph that AOTAutograd traces. The forward's
// nodes come first (phase forward), then tangent inputs and the gradient computation (phase
// backward), built from the op table's derivative rules.
// Test: tests/test_autodiff.cpp.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"

namespace ls {

struct JointGraph {
  // Placeholders: the forward's, then tangents_1.. (one per forward output that needs one).
  // Outputs: the forward's, then one gradient per differentiable input (-1 where none reaches it).
  Graph graph;
  int num_forward_outputs = 0;
  std::vector<std::string> tangents;    // placeholder names, in order
  std::vector<int> tangent_of;          // per tangent: the forward output it belongs to
  std::vector<std::string> grad_of;     // per gradient output: the input it is the gradient of
  std::vector<bool> grad_of_user_input; // per gradient output: whether that input is a user input
  std::vector<std::string> expanded;    // nodes expanded first because their op has no derivative rule
};

// Differentiable inputs are the float user inputs and parameters (not buffers or constants).
// Throws std::runtime_error naming the node and op when a gradient must pass through an op
// without a derivative rule or decomposition.
JointGraph build_joint(const Graph& forward);

// Whether a placeholder gets a gradient.
bool is_differentiable_input(const Node& n);

}  // namespace ls
