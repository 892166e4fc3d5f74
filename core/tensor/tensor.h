// A host tensor: element type, shape, strides and a shared, 64-byte aligned storage.
// The reference interpreter computes on these; the executor hands their storage to kernels.
#pragma once
#include <complex>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace ls {

using Shape = std::vector<int64_t>;

int64_t numel_of(const Shape& shape);
Shape contiguous_strides(const Shape& shape);
std::string shape_str(const Shape& shape);  // "[64, 512]"

class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, Shape shape);  // contiguous, zero-filled

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int64_t numel() const { return numel_of(shape_); }
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  bool defined() const { return storage_ != nullptr; }

  void* data() { return storage_.get(); }
  const void* data() const { return storage_.get(); }
  int64_t nbytes() const { return numel() * dtype_size(dtype_); }

  // The same storage seen with another shape of as many elements (contiguous).
  Tensor reshaped(Shape shape) const;
  // The same storage seen as PyTorch's view_as_real (a complex [..] as its parts' type, [.., 2])
  // and view_as_complex (a float32/float64 [.., 2] as c64/c128 [..]); throw for other dtypes.
  Tensor viewed_as_real() const;
  Tensor viewed_as_complex() const;

  // Element access by linear (row-major) index, converted through double. Complex tensors throw
  // here (no double holds a complex value): they are read and written through get_complex and
  // set_complex, which take every dtype (a real element reads with imaginary part 0; a complex
  // value set into a real tensor keeps its real part, as PyTorch's copy_ does).
  double get(int64_t linear) const;
  void set(int64_t linear, double v);
  std::complex<double> get_complex(int64_t linear) const;
  void set_complex(int64_t linear, std::complex<double> v);

 private:
  DType dtype_ = DType::f32;
  Shape shape_, strides_;
  std::shared_ptr<std::byte> storage_;
};

// A copy of t with elements of type `to`, converted as PyTorch's .to(dtype) does (floats round to
// nearest even; t itself when it already has that type).
Tensor cast(const Tensor& t, DType to);

struct Comparison {
  double max_abs_err = 0;
  double rel_err = 0;  // max_abs_err / max |expected|
  int64_t mismatches = 0;
  bool ok = false;
  std::string why;  // set when !ok
};

// Tolerance used throughout for float32 results: |a - b| <= atol + rtol * max(|b|, rms(b)), NaN
// matching NaN and infinities matching themselves.
struct Tolerance {
  double rtol = 1e-4;
  double atol = 1e-5;
};

// The tolerance for results computed in `t` (the lowest precision a graph computes in): float32's
// above; for bfloat16 and float16, torch.testing.assert_close's defaults for the type (rtol
// 1.6e-2 and 1e-3, atol 1e-5).
Tolerance tolerance_for(DType t);
std::string tolerance_text(DType t);  // "bfloat16: rtol 0.016, atol 1e-05 (assert_close's default)"


Comparison compare(const Tensor& actual, const Tensor& expected, Tolerance tol = {});

// torch._dynamo's accuracy check for low-precision results (torch._dynamo.utils.same with an
// fp64 reference), for results that assert_close's elementwise tolerance refuses: both `actual`
// (compiled) and `eager` (the same computation rounded at every op) are measured against
// `ref64`, the computation in float64; actual passes when its RMSE is at most 2 x eager's + 1e-5
// (3 x for half precision and for fewer than 1000 elements), as PyTorch 2.11's same().
// Returns `elementwise` made ok, with the reason, where it passes; else `elementwise` with the
// numbers added to its reason.
Comparison fp64_rmse_check(const Comparison& elementwise, const Tensor& actual, const Tensor& eager, const Tensor& ref64);

}  // namespace ls
