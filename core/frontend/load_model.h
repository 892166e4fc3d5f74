// Opening a model: a file (FX graph text) or a folder holding one, with its inputs and expected
// outputs found beside it (in0.npy, in1.npy, ..., out.npy), as in the fixtures and samples.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "tensor/tensor.h"

namespace ls {

struct LoadedModel {
  std::string path;    // the model file
  std::string format;  // "fx-text"
  Graph graph;
  std::vector<Tensor> inputs;
  std::string inputs_from;  // "in0.npy, in1.npy" or "random (seed 0)"
  std::vector<Tensor> expected;  // empty when there is nothing to compare with
  std::string expected_from;
  // Gradients of the sum of the first output with respect to each user input (grad_in0.npy, ...),
  // for training mode; empty when there are none.
  std::vector<Tensor> expected_grads;
  std::string expected_grads_from;
};

struct LoadOptions {
  std::vector<std::string> inputs;  // explicit input files
  std::string expect;               // explicit expected output file
  std::vector<std::string> expect_grads;  // explicit expected gradient files, one per user input
};

// Throws std::runtime_error naming the file and what is wrong.
LoadedModel load_model(const std::string& path, const LoadOptions& o = {});

// Deterministic standard-normal inputs for a graph's placeholders.
std::vector<Tensor> random_inputs(const Graph& g, uint64_t seed = 0);

}  // namespace ls
