// The reference interpreter: runs a graph node by node with the op table's reference kernels
// (plain loops). Every compiled result is checked against it.
#pragma once
#include <vector>

#include "ir/graph.h"
#include "ops/op_table.h"
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
// Runs the op's reference kernel: its own, or its kind's; a composite without one runs as its
// decomposition.
std::vector<Tensor> run_reference_kernel(const OpDef& op, const std::vector<Arg>& args, const RefInputs& in,
                                         const std::vector<TensorMeta>& outs);
// Runs the op's decomposition (one level down) on the reference kernels of the ops it emits: the
// independent check of a decomposition rule against the op's own reference kernel.
std::vector<Tensor> run_decomposition(const OpDef& op, const std::vector<Arg>& args, const RefInputs& in);
}  // namespace ls
