#include "tensor/dtype.h"

#include <cmath>

namespace ls {
namespace {
struct Info {
  DType t;
  std::string_view shrt, torch, c;
  int64_t size;
  bool is_float;
  int rank;  // promotion order
};
constexpr Info kInfo[] = {
    {DType::f32, "f32", "torch.float32", "float", 4, true, 5},
    {DType::f64, "f64", "torch.float64", "double", 8, true, 6},
    {DType::i64, "i64", "torch.int64", "int64_t", 8, false, 3},
    {DType::i32, "i32", "torch.int32", "int32_t", 4, false, 2},
    {DType::b8, "b8", "torch.bool", "bool", 1, false, 0},
    {DType::u8, "u8", "torch.uint8", "uint8_t", 1, false, 1},
    {DType::bf16, "bf16", "torch.bfloat16", "ls_bf16", 2, true, 4},
    {DType::f16, "f16", "torch.float16", "ls_f16", 2, true, 4},
    // No C element type: generated code never takes complex buffers (lower/lower.cpp keeps them
    // on library and host paths); the library calls see std::complex<float> (<double>).
    {DType::c64, "c64", "torch.complex64", "std::complex<float>", 8, false, 7},
    {DType::c128, "c128", "torch.complex128", "std::complex<double>", 16, false, 8},
};
const Info& info(DType t) { return kInfo[static_cast<int>(t)]; }
}  // namespace

std::string_view dtype_short(DType t) { return info(t).shrt; }
std::string_view dtype_torch(DType t) { return info(t).torch; }
std::string_view dtype_c(DType t) { return info(t).c; }
int64_t dtype_size(DType t) { return info(t).size; }
bool dtype_is_float(DType t) { return info(t).is_float; }

std::optional<DType> dtype_from_short(std::string_view s) {
  for (const Info& i : kInfo)
    if (i.shrt == s) return i.t;
  return std::nullopt;
}

std::optional<DType> dtype_from_name(std::string_view s) {
  if (s.substr(0, 6) == "torch.") s.remove_prefix(6);
  if (auto t = dtype_from_short(s)) return t;
  static constexpr std::pair<std::string_view, DType> kNames[] = {
      {"float32", DType::f32}, {"float", DType::f32},    {"float64", DType::f64}, {"double", DType::f64},
      {"int64", DType::i64},   {"long", DType::i64},     {"int32", DType::i32},   {"int", DType::i32},
      {"bool", DType::b8},     {"uint8", DType::u8},     {"bfloat16", DType::bf16}, {"float16", DType::f16},
      {"half", DType::f16},      {"complex64", DType::c64}, {"cfloat", DType::c64}, {"complex128", DType::c128},
      {"cdouble", DType::c128}};
  for (const auto& [name, t] : kNames)
    if (name == s) return t;
  return std::nullopt;
}

DType promote(DType a, DType b) {
  if (dtype_is_complex(a) || dtype_is_complex(b)) {  // the complex type of the parts' promotion
    const DType pa = dtype_is_complex(a) ? real_dtype(a) : dtype_is_float(a) ? a : DType::f32;
    const DType pb = dtype_is_complex(b) ? real_dtype(b) : dtype_is_float(b) ? b : DType::f32;
    return complex_dtype(promote(pa, pb));
  }
  if (a != b && dtype_is_half(a) && dtype_is_half(b)) return DType::f32;
  return info(a).rank >= info(b).rank ? a : b;
}

// IEEE half: 1 sign, 5 exponent, 10 mantissa bits. Round to nearest even, overflow to infinity,
// subnormals kept.
uint16_t float_to_f16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: infinity
  if (a < 0x38800000u) {  // below the smallest normal half (2^-14): a subnormal or zero
    float m;
    const uint32_t abs_bits = a;
    std::memcpy(&m, &abs_bits, 4);
    // multiples of 2^-24; nearbyint rounds to even under the default rounding mode
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(m * 16777216.0f)));
  }
  const uint32_t rounded = a + 0xfffu + ((a >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

float f16_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  uint32_t u;
  if (e == 0x1f) {
    u = sign | 0x7f800000u | (m << 13);
  } else if (e == 0) {
    const float v = static_cast<float>(m) * (1.0f / 16777216.0f);
    std::memcpy(&u, &v, 4);
    u |= sign;
  } else {
    u = sign | ((e + 112) << 23) | (m << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

double round_to(DType t, double v) {
  switch (t) {
    case DType::f32: return static_cast<float>(v);
    case DType::bf16: return bf16_bits_to_float(float_to_bf16_bits(static_cast<float>(v)));
    case DType::f16: return f16_bits_to_float(float_to_f16_bits(static_cast<float>(v)));
    default: return v;
  }
}

}  // namespace ls
