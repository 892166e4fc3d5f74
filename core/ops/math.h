// The scalar math that pointwise ops apply, shared by reference kernels, the loop IR and codegen.
#pragma once
#include <cstdint>
#include <string_view>

namespace ls {

enum class Math : uint8_t {
  none,
  // unary
  neg, abs, sin, cos, exp, log, sqrt, rsqrt, tanh, sigmoid, relu, reciprocal, erf, gelu, gelu_tanh, hardsigmoid,
  hardswish, identity,
  // binary
  add, sub, mul, div, pow, maximum, minimum, lt, le, gt, ge, eq, ne,
  // ternary
  where,
  // Added after `where`, so the values above stay as they were. Unary: rounding and sign (an
  // integer input is returned as it is), float functions (an integer input is computed in float32,
  // PyTorch's INT_TO_FLOAT), predicates (bool results), bitwise not.
  floor, ceil, round, trunc, sign, log1p, expm1, log2, log10, tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh,
  isnan, isinf, logical_not, bitwise_not,
  // binary
  logical_and, logical_or, logical_xor, bitwise_and, bitwise_or, bitwise_xor, remainder, fmod, atan2,
  // Random numbers (ops/philox.h): philox(seed, offset, index), ternary, the 53 random bits of an
  // element (an int64); then, unary on those bits, rand (uniform in [0, 1) with float32's 24
  // bits), rand_f64 (53 bits) and randn (standard normal, Box-Muller in double).
  philox, rand, rand_f64, randn,
};

// mean: sum, then divide by the count. prod: the product. argmax/argmin (Inductor's reduction types
// of the same names): the int64 index (row-major over the reduced dimensions) of the first
// extremum, a NaN counting as the extremum of both (PyTorch's); its node carries the value beside it.
enum class Reduce : uint8_t { none, sum, max, min, mean, prod, argmax, argmin };

int math_arity(Math m);
bool math_is_comparison(Math m);  // a bool result: comparisons, isnan, isinf, logical ops
std::string_view math_name(Math m);  // "sin", "add": the name Inductor's ops handler uses
double eval_math(Math m, double a, double b = 0, double c = 0);

std::string_view reduce_name(Reduce r);  // "sum", "max", "min"
double reduce_init(Reduce r);  // argmax/argmin: the value the index starts beside (-inf, inf)
double reduce_combine(Reduce r, double acc, double v);  // not argmax/argmin: arg_keeps
bool reduce_is_arg(Reduce r);  // argmax or argmin
// An arg reduction's combiner (Inductor's greater_or_nan / less_or_nan): whether candidate
// (a, ia) stays against (b, ib): a NaN beats a number, the extremum beats the rest, and between
// equals (two NaNs too) the lower index.
bool arg_keeps(Reduce r, double a, double b, int64_t ia, int64_t ib);

}  // namespace ls
