// Element types, spelled the way PyTorch spells them.
#pragma once
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace ls {

// bf16 and f16 are storage types: math on them runs in float32, rounded to the type at each op's
// output, as eager PyTorch does: in the reference interpreter, and in generated code at every half
// op even where the value stays in a register (Inductor's emulate_precision_casts), so that what the
// backward recomputes equals what the forward stored.
// c64 and c128 (torch.complex64, torch.complex128) are pairs of float32 (float64): real, then
// imaginary part, as std::complex lays them out. Only the FFT ops and the few ops around them
// (view_as_real, view_as_complex, abs, real, imag, ...) take them; they run as library calls or
// on the host, never in generated kernels (lower/lower.cpp). dtype_is_float is false for them.
enum class DType : uint8_t { f32, f64, i64, i32, b8, u8, bf16, f16, c64, c128 };

std::string_view dtype_short(DType t);  // "f32", as FX annotations print it
std::string_view dtype_torch(DType t);  // "torch.float32"
std::string_view dtype_c(DType t);      // "float", the C/C++ element type (halves: ls_bf16, ls_f16)
int64_t dtype_size(DType t);
bool dtype_is_float(DType t);
inline bool dtype_is_half(DType t) { return t == DType::bf16 || t == DType::f16; }
inline bool dtype_is_complex(DType t) { return t == DType::c64 || t == DType::c128; }
// The type of a complex type's parts (c64: f32, c128: f64; others: themselves), and the complex
// type whose parts have type t (f64: c128, other floats: c64), as torch's toRealValueType and
// toComplexType.
inline DType real_dtype(DType t) { return t == DType::c64 ? DType::f32 : t == DType::c128 ? DType::f64 : t; }
inline DType complex_dtype(DType t) { return t == DType::f64 || t == DType::c128 ? DType::c128 : DType::c64; }
// The type a value of type t is computed in: float32 for the halves, else t itself.
inline DType compute_dtype(DType t) { return dtype_is_half(t) ? DType::f32 : t; }
std::optional<DType> dtype_from_short(std::string_view s);
// "torch.bfloat16", "bfloat16", "bf16", "half", "float": any spelling PyTorch or its printers use.
std::optional<DType> dtype_from_name(std::string_view s);

// Result type of a binary op on two tensors (PyTorch's promote_types for the types we have:
// bf16 with f16 gives f32; a complex type with a float gives the complex type of their parts'
// promotion: f64 with c64 gives c128).
DType promote(DType a, DType b);

// Round-to-nearest-even conversions between float32 and the halves' bits (NaN stays NaN).
inline uint16_t float_to_bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float bf16_bits_to_float(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t float_to_f16_bits(float f);
float f16_bits_to_float(uint16_t h);
// v rounded to the nearest value of type t (the identity for the other float types' f32/f64).
double round_to(DType t, double v);

}  // namespace ls
