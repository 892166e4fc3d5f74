// NumPy .npy files (format 1.0/2.0/3.0, little-endian, C order): the fixtures' inputs and outputs.
#pragma once
#include <string>

#include "tensor/tensor.h"

namespace ls {

// Throws std::runtime_error naming the file and what is wrong with it.
Tensor load_npy(const std::string& path);
void save_npy(const std::string& path, const Tensor& t);

}  // namespace ls
