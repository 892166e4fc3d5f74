// The reference interpreter: runs a graph node by node with the op table's reference kernels
// (plain loops). Every compiled result is checked against it.
#pragma once
#include <vector>

#include "ir/graph.h"
#include "tensor/tensor.h"

namespace ls {
// One tensor per user input (placeholders without an attached weight), in order; throws
// std::invalid_argument on a count, shape or dtype mismatch.
std::vector<Tensor> run_reference(const Graph& g, const std::vector<Tensor>& user_inputs);
// Every node's values (one tensor per output), given every placeholder's tensor in order.
std::vector<std::vector<Tensor>> evaluate_nodes(const Graph& g, const std::vector<Tensor>& placeholders);
// Every placeholder's tensor, in order: attached weights, and the user inputs in between.
std::vector<Tensor> bind_inputs(const Graph& g, const std::vector<Tensor>& user_inputs);
// Throws std::invalid_argument naming the input when `inputs` do not fit the graph's placeholders.
void check_inputs(const Graph& g, const std::vector<Tensor>& inputs);
}
