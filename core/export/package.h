// A compiled model as a package that builds and runs without Lowerscope: the generated kernels
// (kernels.cpp, and the object Lowerscope compiled), the model's inputs and weights as .npy, a
// generated runner (model.cpp) calling the kernels and the library calls in schedule order over
// the runtime in runtime.h (buffers, .npy, CBLAS matrix multiply, im2col convolution), and a
// CMakeLists.txt. The runner writes outputs/out<N>.npy, times the model, and checks its outputs
// against expected/out<N>.npy where the model came with them.
#pragma once
#include <string>
#include <vector>

#include "pipeline/pipeline.h"

namespace ls {

struct Package {
  std::vector<std::string> files;  // relative to the folder, as written
  std::string summary;             // what is in it, for the CLI and the export dialog
};

// Throws std::runtime_error saying what cannot be packaged and why (a CUDA compile, a library call
// the package runtime does not implement, naming the op and the node).
Package export_package(const CompileResult& r, const std::string& dir);

}  // namespace ls
