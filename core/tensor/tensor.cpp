#include "tensor/tensor.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace ls {

// Saturating at INT64_MAX: a hostile shape (a file's) never overflows; no tensor that size is
// ever allocated, so the checks downstream refuse it.
int64_t numel_of(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return INT64_MAX;
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    if (__builtin_mul_overflow(acc, std::max<int64_t>(shape[i], 1), &acc)) acc = INT64_MAX;
  }
  return s;
}

std::string shape_str(const Shape& shape) {
  // Appended, not streamed: the printers call this for every node of graphs of tens of thousands.
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  s += ']';
  return s;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (numel_of(shape) != numel()) throw std::invalid_argument("cannot see " + shape_str(shape_) + " as " + shape_str(shape));
  Tensor t = *this;
  t.strides_ = contiguous_strides(shape);
  t.shape_ = std::move(shape);
  return t;
}

Tensor::Tensor(DType dtype, Shape shape)
    : dtype_(dtype), shape_(std::move(shape)), strides_(contiguous_strides(shape_)) {
  for (int64_t d : shape_)
    if (d < 0) throw std::invalid_argument("tensor shape " + shape_str(shape_) + " has a negative size");
  const size_t bytes = static_cast<size_t>(std::max<int64_t>(nbytes(), 1));
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  storage_ = std::shared_ptr<std::byte>(static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); });
}

double Tensor::get(int64_t i) const {
  const std::byte* p = storage_.get();
  switch (dtype_) {
    case DType::f32: return reinterpret_cast<const float*>(p)[i];
    case DType::f64: return reinterpret_cast<const double*>(p)[i];
    case DType::i64: return static_cast<double>(reinterpret_cast<const int64_t*>(p)[i]);
    case DType::i32: return reinterpret_cast<const int32_t*>(p)[i];
    case DType::b8: return reinterpret_cast<const bool*>(p)[i] ? 1.0 : 0.0;
    case DType::u8: return reinterpret_cast<const uint8_t*>(p)[i];
    case DType::bf16: return bf16_bits_to_float(reinterpret_cast<const uint16_t*>(p)[i]);
    case DType::f16: return f16_bits_to_float(reinterpret_cast<const uint16_t*>(p)[i]);
    case DType::c64:
    case DType::c128: throw std::logic_error("complex tensors are not supported by Tensor::get (read them with get_complex)");
  }
  return 0;
}

std::complex<double> Tensor::get_complex(int64_t i) const {
  if (dtype_ == DType::c64) return reinterpret_cast<const std::complex<float>*>(storage_.get())[i];
  if (dtype_ == DType::c128) return reinterpret_cast<const std::complex<double>*>(storage_.get())[i];
  return get(i);
}

void Tensor::set_complex(int64_t i, std::complex<double> v) {
  if (dtype_ == DType::c64) reinterpret_cast<std::complex<float>*>(storage_.get())[i] = std::complex<float>(v);
  else if (dtype_ == DType::c128) reinterpret_cast<std::complex<double>*>(storage_.get())[i] = v;
  else if (dtype_ == DType::b8) set(i, v != std::complex<double>(0.0) ? 1.0 : 0.0);  // PyTorch: z != 0
  else set(i, v.real());
}

Tensor Tensor::viewed_as_real() const {
  if (!dtype_is_complex(dtype_))
    throw std::invalid_argument("view_as_real takes a complex tensor, not " + std::string(dtype_torch(dtype_)));
  Tensor t = *this;
  t.dtype_ = real_dtype(dtype_);
  t.shape_.push_back(2);
  t.strides_ = contiguous_strides(t.shape_);
  return t;
}

Tensor Tensor::viewed_as_complex() const {
  if (dtype_ != DType::f32 && dtype_ != DType::f64)
    throw std::invalid_argument("view_as_complex takes a float32 or float64 tensor, not " + std::string(dtype_torch(dtype_)));
  if (shape_.empty() || shape_.back() != 2)
    throw std::invalid_argument("view_as_complex takes a tensor whose last dimension has size 2, not " + shape_str(shape_));
  Tensor t = *this;
  t.dtype_ = complex_dtype(dtype_);
  t.shape_.pop_back();
  t.strides_ = contiguous_strides(t.shape_);
  return t;
}

void Tensor::set(int64_t i, double v) {
  std::byte* p = storage_.get();
  switch (dtype_) {
    case DType::f32: reinterpret_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DType::f64: reinterpret_cast<double*>(p)[i] = v; break;
    case DType::i64: reinterpret_cast<int64_t*>(p)[i] = static_cast<int64_t>(v); break;
    case DType::i32: reinterpret_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
    case DType::b8: reinterpret_cast<bool*>(p)[i] = v != 0; break;
    case DType::u8: reinterpret_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v); break;
    case DType::bf16: reinterpret_cast<uint16_t*>(p)[i] = float_to_bf16_bits(static_cast<float>(v)); break;
    case DType::f16: reinterpret_cast<uint16_t*>(p)[i] = float_to_f16_bits(static_cast<float>(v)); break;
    case DType::c64:
    case DType::c128: set_complex(i, v); break;  // a real number: imaginary part 0
  }
}

Tolerance tolerance_for(DType t) {
  if (t == DType::bf16) return {1.6e-2, 1e-5};
  if (t == DType::f16) return {1e-3, 1e-5};
  return {};
}

std::string tolerance_text(DType t) {
  const Tolerance tol = tolerance_for(t);
  std::ostringstream os;
  os << dtype_torch(t).substr(6) << ": rtol " << tol.rtol << ", atol " << tol.atol
     << (dtype_is_half(t) ? " (torch.testing.assert_close's default)" : "");
  return os.str();
}

Tensor cast(const Tensor& t, DType to) {
  if (t.dtype() == to) return t;
  Tensor r(to, t.shape());
  if (dtype_is_complex(t.dtype()) || dtype_is_complex(to)) {  // complex to real keeps the real part, as PyTorch
    for (int64_t i = 0, n = t.numel(); i < n; ++i) r.set_complex(i, t.get_complex(i));
    return r;
  }
  for (int64_t i = 0, n = t.numel(); i < n; ++i) r.set(i, t.get(i));
  return r;
}

Comparison compare(const Tensor& a, const Tensor& b, Tolerance tol) {
  Comparison c;
  if (dtype_is_complex(a.dtype()) != dtype_is_complex(b.dtype())) {
    c.why = std::string(dtype_torch(a.dtype())) + " result compared with an expected " + std::string(dtype_torch(b.dtype()));
    return c;
  }
  if (dtype_is_complex(a.dtype()) && a.shape() == b.shape())  // parts compared, as assert_close does
    return compare(a.viewed_as_real(), b.viewed_as_real(), tol);
  if (a.shape() != b.shape()) {
    c.why = "shape " + shape_str(a.shape()) + " differs from expected " + shape_str(b.shape());
    return c;
  }
  // The root mean square of the expected values is a floor under |b|: a float32 sum of many
  // terms carries an error proportional to the terms, not to a result that cancels towards zero.
  double max_ref = 0, sq = 0;
  int64_t finite = 0;
  for (int64_t i = 0; i < b.numel(); ++i) {
    const double y = b.get(i);
    if (std::isfinite(y)) { sq += y * y; ++finite; }
  }
  const double rms = finite ? std::sqrt(sq / finite) : 0.0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.get(i), y = b.get(i);
    const double d = std::abs(x - y);
    max_ref = std::max(max_ref, std::abs(y));
    const bool same = (std::isnan(x) && std::isnan(y)) || (std::isinf(x) && x == y);
    if (!same && (std::isnan(d) || d > tol.atol + tol.rtol * std::max(std::abs(y), rms))) ++c.mismatches;
    if (!std::isnan(d) && !same) c.max_abs_err = std::max(c.max_abs_err, d);
  }
  c.rel_err = max_ref > 0 ? c.max_abs_err / max_ref : c.max_abs_err;
  c.ok = c.mismatches == 0;
  if (!c.ok) {
    std::ostringstream os;
    os << c.mismatches << " of " << a.numel() << " elements differ by more than atol " << tol.atol << " + rtol "
       << tol.rtol << " * max(|expected|, rms " << rms << ") (max abs err " << c.max_abs_err << ")";
    c.why = os.str();
  }
  return c;
}

Comparison fp64_rmse_check(const Comparison& elementwise, const Tensor& actual, const Tensor& eager, const Tensor& ref64) {
  Comparison c = elementwise;
  if (actual.shape() != ref64.shape() || eager.shape() != ref64.shape()) return c;
  if (dtype_is_complex(actual.dtype()) || dtype_is_complex(eager.dtype()) || dtype_is_complex(ref64.dtype())) {
    if (!dtype_is_complex(actual.dtype()) || !dtype_is_complex(eager.dtype()) || !dtype_is_complex(ref64.dtype())) return c;
    return fp64_rmse_check(elementwise, actual.viewed_as_real(), eager.viewed_as_real(), ref64.viewed_as_real());  // the parts
  }
  auto rmse = [&](const Tensor& t) {
    double sq = 0;
    int64_t n = 0;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double a = t.get(i), r = ref64.get(i);
      if (!std::isfinite(r)) {
        if (!(a == r || (std::isnan(a) && std::isnan(r)))) return static_cast<double>(INFINITY);
        continue;
      }
      sq += (a - r) * (a - r);
      ++n;
    }
    return n ? std::sqrt(sq / static_cast<double>(n)) : 0.0;
  };
  const double ours = rmse(actual), theirs = rmse(eager);
  // PyTorch 2.11's multiplier: 2 for float32, 3 for half precision, for fewer than 1000 elements
  // (noise dominates) and for 4-D results of 1x1 planes; the allowance tol / 10 of same()'s
  // default tol 1e-4.
  const Shape& s = ref64.shape();
  const bool small = ref64.numel() < 1000 || (s.size() == 4 && s[2] == 1 && s[3] == 1);
  const double multiplier = dtype_is_half(actual.dtype()) || small ? 3.0 : 2.0;
  const double bound = multiplier * theirs + 1e-5;
  std::ostringstream os;
  os.precision(3);
  os << "RMSE against the float64 computation " << ours << (ours <= bound ? " <= " : " > ") << multiplier << " x eager rounding's "
     << theirs << " + 1e-5 (torch._dynamo's accuracy check)";
  if (ours <= bound) {
    c.ok = true;
    c.why = c.mismatches ? std::to_string(c.mismatches) + " elements beyond assert_close's tolerance; " + os.str() : os.str();
  } else {
    c.why += "; " + os.str();
  }
  return c;
}

}  // namespace ls
