// Element types, spelled the way PyTorch spells them.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace ls {

enum class DType : uint8_t { f32, f64, i64, i32, b8, u8 };

std::string_view dtype_short(DType t);  // "f32", as FX annotations print it
std::string_view dtype_torch(DType t);  // "torch.float32"
std::string_view dtype_c(DType t);      // "float", the C/C++ element type
int64_t dtype_size(DType t);
bool dtype_is_float(DType t);
std::optional<DType> dtype_from_short(std::string_view s);

// Result type of a binary op on two tensors (PyTorch's promote_types for the types we have).
DType promote(DType a, DType b);

}  // namespace ls
