#include "tensor/dtype.h"

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
    {DType::f32, "f32", "torch.float32", "float", 4, true, 4},
    {DType::f64, "f64", "torch.float64", "double", 8, true, 5},
    {DType::i64, "i64", "torch.int64", "int64_t", 8, false, 3},
    {DType::i32, "i32", "torch.int32", "int32_t", 4, false, 2},
    {DType::b8, "b8", "torch.bool", "bool", 1, false, 0},
    {DType::u8, "u8", "torch.uint8", "uint8_t", 1, false, 1},
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

DType promote(DType a, DType b) { return info(a).rank >= info(b).rank ? a : b; }

}  // namespace ls
