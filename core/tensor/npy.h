// NumPy .npy files (format 1.0/2.0/3.0, little-endian, C order): the fixtures' inputs and outputs.
#pragma once
#include <string>

#include "tensor/tensor.h"

namespace ls {

// Throws std::runtime_error naming the file and what is wrong with it.
Tensor load_npy(const std::string& path);
void save_npy(const std::string& path, const Tensor& t);
// numpy's element type string for a dtype: "<f4", "|b1".
std::string descr_of(DType t);

}  // namespace ls
