// Opening a model: a file (FX graph text) or a folder holding one, with its inputs and expected
// outputs found beside it (in0.npy, in1.npy, ..., out.npy), as in the fixtures and samples; and
// PyTorch's float64 results where they are there (out64.npy, grad64_in0.npy, ...).
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
  // PyTorch's results computed in float64 (model.double(), float inputs converted): out64.npy for
  // the expected output, grad64_in<i>.npy for the gradient of user input i (undefined where none).
  // The check's float64 yardstick where the reference interpreter's own float64 run is absent:
  // torch._dynamo's accuracy check (fp64_rmse_check) with out.npy / grad_in<i>.npy as the eager
  // side, for results that differ from PyTorch's float32 ones beyond the elementwise tolerance.
  std::vector<Tensor> expected64;
  std::string expected64_from;
  std::vector<Tensor> expected_grads64;
  std::string expected_grads64_from;
};

struct LoadOptions {
  std::vector<std::string> inputs;  // explicit input files
  std::string expect;               // explicit expected output file
  std::vector<std::string> expect_grads;  // explicit expected gradient files, one per user input
  std::string expect64;                    // explicit float64 expected output (PyTorch's, out64.npy)
  std::vector<std::string> expect_grads64;  // explicit float64 expected gradients, one per user input
};

// Throws std::runtime_error naming the file and what is wrong.
LoadedModel load_model(const std::string& path, const LoadOptions& o = {});

// Deterministic standard-normal inputs for a graph's placeholders.
std::vector<Tensor> random_inputs(const Graph& g, uint64_t seed = 0);

}  // namespace ls
