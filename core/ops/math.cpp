#include "ops/math.h"

#include <cmath>
#include <limits>

#include "ops/philox.h"

namespace ls {

int math_arity(Math m) {
  if (m == Math::where || m == Math::philox) return 3;
  if (m >= Math::rand) return 1;
  if (m >= Math::logical_and) return 2;
  if (m >= Math::floor) return 1;
  if (m >= Math::add) return 2;
  return m == Math::none ? 0 : 1;
}

bool math_is_comparison(Math m) {
  return (m >= Math::lt && m <= Math::ne) || (m >= Math::isnan && m <= Math::logical_not) ||
         (m >= Math::logical_and && m <= Math::logical_xor);
}

std::string_view math_name(Math m) {
  switch (m) {
    case Math::none: return "none";
    case Math::neg: return "neg";
    case Math::abs: return "abs";
    case Math::sin: return "sin";
    case Math::cos: return "cos";
    case Math::exp: return "exp";
    case Math::log: return "log";
    case Math::sqrt: return "sqrt";
    case Math::rsqrt: return "rsqrt";
    case Math::tanh: return "tanh";
    case Math::sigmoid: return "sigmoid";
    case Math::relu: return "relu";
    case Math::reciprocal: return "reciprocal";
    case Math::erf: return "erf";
    case Math::gelu: return "gelu";
    case Math::gelu_tanh: return "gelu_tanh";
    case Math::hardsigmoid: return "hardsigmoid";
    case Math::hardswish: return "hardswish";
    case Math::identity: return "identity";
    case Math::add: return "add";
    case Math::sub: return "sub";
    case Math::mul: return "mul";
    case Math::div: return "truediv";
    case Math::pow: return "pow";
    case Math::maximum: return "maximum";
    case Math::minimum: return "minimum";
    case Math::lt: return "lt";
    case Math::le: return "le";
    case Math::gt: return "gt";
    case Math::ge: return "ge";
    case Math::eq: return "eq";
    case Math::ne: return "ne";
    case Math::where: return "where";
    case Math::floor: return "floor";
    case Math::ceil: return "ceil";
    case Math::round: return "round";
    case Math::trunc: return "trunc";
    case Math::sign: return "sign";
    case Math::log1p: return "log1p";
    case Math::expm1: return "expm1";
    case Math::log2: return "log2";
    case Math::log10: return "log10";
    case Math::tan: return "tan";
    case Math::asin: return "asin";
    case Math::acos: return "acos";
    case Math::atan: return "atan";
    case Math::sinh: return "sinh";
    case Math::cosh: return "cosh";
    case Math::asinh: return "asinh";
    case Math::acosh: return "acosh";
    case Math::atanh: return "atanh";
    case Math::isnan: return "isnan";
    case Math::isinf: return "isinf";
    case Math::logical_not: return "logical_not";
    case Math::bitwise_not: return "bitwise_not";
    case Math::logical_and: return "logical_and";
    case Math::logical_or: return "logical_or";
    case Math::logical_xor: return "logical_xor";
    case Math::bitwise_and: return "bitwise_and";
    case Math::bitwise_or: return "bitwise_or";
    case Math::bitwise_xor: return "bitwise_xor";
    case Math::remainder: return "remainder";
    case Math::fmod: return "fmod";
    case Math::atan2: return "atan2";
    case Math::philox: return "philox";
    case Math::rand: return "rand";
    case Math::rand_f64: return "rand_f64";
    case Math::randn: return "randn";
  }
  return "?";
}

double eval_math(Math m, double a, double b, double c) {
  switch (m) {
    case Math::none: return 0;
    case Math::neg: return -a;
    case Math::abs: return std::abs(a);
    case Math::sin: return std::sin(a);
    case Math::cos: return std::cos(a);
    case Math::exp: return std::exp(a);
    case Math::log: return std::log(a);
    case Math::sqrt: return std::sqrt(a);
    case Math::rsqrt: return 1.0 / std::sqrt(a);
    case Math::tanh: return std::tanh(a);
    case Math::sigmoid: return 1.0 / (1.0 + std::exp(-a));
    case Math::relu: return std::isnan(a) || a > 0 ? a : 0.0;  // NaN propagates, as in torch.relu
    case Math::reciprocal: return 1.0 / a;
    case Math::erf: return std::erf(a);
    case Math::gelu: return 0.5 * a * (1.0 + std::erf(a * M_SQRT1_2));
    case Math::gelu_tanh: return 0.5 * a * (1.0 + std::tanh(0.7978845608028654 * (a + 0.044715 * a * a * a)));
    case Math::hardsigmoid: return std::min(std::max(a + 3.0, 0.0), 6.0) / 6.0;
    case Math::hardswish: return a * std::min(std::max(a + 3.0, 0.0), 6.0) / 6.0;
    case Math::identity: return a;
    case Math::add: return a + b;
    case Math::sub: return a - b;
    case Math::mul: return a * b;
    case Math::div: return a / b;
    case Math::pow: return std::pow(a, b);
    case Math::maximum: return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : std::max(a, b);
    case Math::minimum: return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : std::min(a, b);
    case Math::lt: return a < b;
    case Math::le: return a <= b;
    case Math::gt: return a > b;
    case Math::ge: return a >= b;
    case Math::eq: return a == b;
    case Math::ne: return a != b;
    case Math::where: return a != 0 ? b : c;
    case Math::floor: return std::floor(a);
    case Math::ceil: return std::ceil(a);
    case Math::round: return std::nearbyint(a);  // halves to even, as torch.round (the default rounding mode)
    case Math::trunc: return std::trunc(a);
    case Math::sign: return (a > 0) - (a < 0);  // 0 for 0 and NaN, as torch.sign's kernels compute it
    case Math::log1p: return std::log1p(a);
    case Math::expm1: return std::expm1(a);
    case Math::log2: return std::log2(a);
    case Math::log10: return std::log10(a);
    case Math::tan: return std::tan(a);
    case Math::asin: return std::asin(a);
    case Math::acos: return std::acos(a);
    case Math::atan: return std::atan(a);
    case Math::sinh: return std::sinh(a);
    case Math::cosh: return std::cosh(a);
    case Math::asinh: return std::asinh(a);
    case Math::acosh: return std::acosh(a);
    case Math::atanh: return std::atanh(a);
    case Math::isnan: return std::isnan(a);
    case Math::isinf: return std::isinf(a);
    case Math::logical_not: return a == 0;
    case Math::bitwise_not: return static_cast<double>(~static_cast<int64_t>(a));  // bool: ops/pointwise.cpp's kernel
    case Math::logical_and: return a != 0 && b != 0;
    case Math::logical_or: return a != 0 || b != 0;
    case Math::logical_xor: return (a != 0) != (b != 0);
    case Math::bitwise_and: return static_cast<double>(static_cast<int64_t>(a) & static_cast<int64_t>(b));
    case Math::bitwise_or: return static_cast<double>(static_cast<int64_t>(a) | static_cast<int64_t>(b));
    case Math::bitwise_xor: return static_cast<double>(static_cast<int64_t>(a) ^ static_cast<int64_t>(b));
    case Math::remainder: {  // the sign of the divisor, as Python's %
      const double r = std::fmod(a, b);
      return r != 0 && (r < 0) != (b < 0) ? r + b : r;
    }
    case Math::fmod: return std::fmod(a, b);
    case Math::atan2: return std::atan2(a, b);
    case Math::philox:  // seed, offset and index are integers below 2^53, the result 53 bits: exact in doubles
      return static_cast<double>(philox::bits(static_cast<uint64_t>(a), static_cast<uint64_t>(b), static_cast<uint64_t>(c)));
    case Math::rand: return philox::uniform_f32(static_cast<uint64_t>(a));
    case Math::rand_f64: return philox::uniform_f64(static_cast<uint64_t>(a));
    case Math::randn: return philox::normal(static_cast<uint64_t>(a));
  }
  return 0;
}

std::string_view reduce_name(Reduce r) {
  switch (r) {
    case Reduce::none: return "none";
    case Reduce::sum: return "sum";
    case Reduce::max: return "max";
    case Reduce::min: return "min";
    case Reduce::mean: return "mean";
    case Reduce::prod: return "prod";
    case Reduce::argmax: return "argmax";
    case Reduce::argmin: return "argmin";
  }
  return "?";
}

double reduce_init(Reduce r) {
  switch (r) {
    case Reduce::max:
    case Reduce::argmax: return -std::numeric_limits<double>::infinity();
    case Reduce::min:
    case Reduce::argmin: return std::numeric_limits<double>::infinity();
    case Reduce::prod: return 1;
    default: return 0;
  }
}

double reduce_combine(Reduce r, double acc, double v) {
  switch (r) {
    case Reduce::sum:
    case Reduce::mean: return acc + v;
    case Reduce::max: return std::isnan(v) || v > acc ? v : acc;
    case Reduce::min: return std::isnan(v) || v < acc ? v : acc;
    case Reduce::prod: return acc * v;
    default: return acc;
  }
}

bool reduce_is_arg(Reduce r) { return r == Reduce::argmax || r == Reduce::argmin; }

bool arg_keeps(Reduce r, double a, double b, int64_t ia, int64_t ib) {
  if (std::isnan(a)) return !std::isnan(b) || ia < ib;
  if (std::isnan(b)) return false;
  if (a == b) return ia < ib;
  return r == Reduce::argmax ? a > b : a < b;
}

}  // namespace ls
