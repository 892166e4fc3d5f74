// FFTs: Core ATen's spectral ops _fft_r2c, _fft_c2r and _fft_c2c (what torch.fft's functions
// reach: rfft, irfft, fft, ifft, the n-d and Hermitian variants), and the ops around their complex
// values: view_as_real, view_as_complex, real, imag, the conjugates. Schemas as native_functions.yaml gives them;
// normalization modes as ATen's fft_norm_mode (0 none, 1 by_root_n, 2 by_n, over the signal's
// full size); derivatives as derivatives.yaml (fft_r2c_backward, fft_c2r_backward, _fft_c2c's
// inverse). The reference kernels are direct DFTs in double. The FFTs are library calls
// (exec/extern_kernels.cpp: FFTW where CMake found it), as Inductor's fallback kernels; every node
// that reads or makes a complex value runs on a library or host path (lower/lower.cpp).
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <numbers>

#include "ops/rule_helpers.h"

namespace ls {
namespace {
using namespace rules;
using cplx = std::complex<double>;

// The transformed dimensions, wrapped and distinct, in the order given.
std::vector<int64_t> fft_dims(const OpDef& op, const Arg& a, int64_t rank) {
  std::vector<int64_t> dims;
  for (int64_t d : a.ints()) {
    const int64_t w = wrap_dim(op, d, rank);
    if (std::count(dims.begin(), dims.end(), w)) bad(op, "dimension " + std::to_string(d) + " is given twice");
    dims.push_back(w);
  }
  if (dims.empty()) bad(op, "needs at least one dimension to transform");
  return dims;
}

// ATen's _fft_normalization_scale: the factor for a signal of n elements (the full, two-sided size).
double norm_scale(const OpDef& op, int64_t mode, double n) {
  switch (mode) {
    case 0: return 1.0;
    case 1: return 1.0 / std::sqrt(n);
    case 2: return 1.0 / n;
    default: bad(op, "normalization " + std::to_string(mode) + " is not one of 0 (none), 1 (by_root_n), 2 (by_n)");
  }
}

// A complex tensor's elements in double, row-major.
struct Cbuf {
  Shape shape;
  std::vector<cplx> v;
};
Cbuf to_cbuf(const Tensor& t) {
  Cbuf b{t.shape(), std::vector<cplx>(static_cast<size_t>(t.numel()))};
  for (int64_t i = 0; i < t.numel(); ++i) b.v[i] = t.get_complex(i);
  return b;
}

// [outer, n, inner] around dimension d.
void lines(const Shape& s, int64_t d, int64_t& outer, int64_t& n, int64_t& inner) {
  outer = 1, inner = 1, n = s[d];
  for (int64_t k = 0; k < d; ++k) outer *= s[k];
  for (size_t k = static_cast<size_t>(d) + 1; k < s.size(); ++k) inner *= s[k];
}

// The DFT along d, direct: y[k] = sum_j x[j] exp(-+2 pi i jk / n) (minus forward).
void dft_along(Cbuf& x, int64_t d, bool forward) {
  int64_t outer, n, inner;
  lines(x.shape, d, outer, n, inner);
  if (n == 0) return;
  std::vector<cplx> w(n), line(n);
  const double sign = forward ? -1.0 : 1.0;
  for (int64_t k = 0; k < n; ++k) w[k] = std::polar(1.0, sign * 2 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(n));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * n * inner + i;
      for (int64_t j = 0; j < n; ++j) line[j] = x.v[base + j * inner];
      for (int64_t k = 0; k < n; ++k) {
        cplx s = 0;
        for (int64_t j = 0; j < n; ++j) s += line[j] * w[(j * k) % n];
        x.v[base + k * inner] = s;
      }
    }
}

int64_t signal_size(const Shape& s, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= s[d];
  return n;
}

// ---- _fft_r2c(Tensor self, int[] dim, int normalization, bool onesided) ----------------------

std::vector<TensorMeta> infer_r2c(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  if (x.dtype != DType::f32 && x.dtype != DType::f64)
    bad(op, "takes a float32 or float64 tensor, not " + std::string(dtype_torch(x.dtype)));
  const auto dims = fft_dims(op, a[1], static_cast<int64_t>(x.shape.size()));
  norm_scale(op, a[2].i, 1);
  Shape s = x.shape;
  if (a[3].b) s[dims.back()] = s[dims.back()] / 2 + 1;
  return {like(x, complex_dtype(x.dtype), s)};
}

std::vector<Tensor> ref_r2c(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  Cbuf x = to_cbuf(in[0]);
  const auto dims = fft_dims(op, a[1], in[0].dim());
  for (int64_t d : dims) dft_along(x, d, true);
  const double scale = norm_scale(op, a[2].i, static_cast<double>(signal_size(in[0].shape(), dims)));
  Tensor y(outs[0].dtype, outs[0].shape);
  const Shape xs = contiguous_strides(x.shape);
  for (int64_t i = 0; i < y.numel(); ++i) y.set_complex(i, x.v[offset_of(i, y.shape(), xs)] * scale);
  return {y};
}

// fft_r2c_backward: the one-sided gradient padded with zeros to the full length, an inverse c2c,
// its real part. The padding is constant_pad_nd of the gradient's real view: no complex value
// reaches a generated kernel.
Arg pad_complex(DerivCtx& c, const Arg& x, int64_t dim, int64_t before, int64_t after) {
  const int64_t rank = static_cast<int64_t>(shape_of(c, x).size());
  std::vector<int64_t> pad(static_cast<size_t>(2 * (rank + 1 - dim)), 0);  // last dimension first: the parts' (2), then rank-1 .. dim
  pad[static_cast<size_t>(2 * (rank - dim))] = before;
  pad[static_cast<size_t>(2 * (rank - dim) + 1)] = after;
  const Arg r = call(c, "aten.view_as_real.default", {x});
  return call(c, "aten.view_as_complex.default", {call(c, "aten.constant_pad_nd.default", {r, ints(pad), num(0.0)})});
}

Args d_r2c(DerivCtx& c) {
  const Shape xs = shape_of(c, c.args[0]);
  const auto dims = fft_dims(c.op, c.args[1], static_cast<int64_t>(xs.size()));
  Arg g = c.grads[0];
  const int64_t last = dims.back(), half = shape_of(c, g)[last];
  if (c.args[3].b && xs[last] > half) g = pad_complex(c, g, last, 0, xs[last] - half);
  const Arg full = call(c, "aten._fft_c2c.default", {g, ints(dims), c.args[2], Arg::of_bool(false)});
  return one(call(c, "aten.real.default", {full}), 4);
}

// ---- _fft_c2r(Tensor self, int[] dim, int normalization, SymInt last_dim_size) ---------------

std::vector<TensorMeta> infer_c2r(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  if (!dtype_is_complex(x.dtype)) bad(op, "takes a complex tensor, not " + std::string(dtype_torch(x.dtype)));
  const auto dims = fft_dims(op, a[1], static_cast<int64_t>(x.shape.size()));
  norm_scale(op, a[2].i, 1);
  if (a[3].i < 1) bad(op, "last_dim_size " + std::to_string(a[3].i) + " is not positive");
  Shape s = x.shape;
  s[dims.back()] = a[3].i;
  return {like(x, real_dtype(x.dtype), s)};
}

// As ATen's CPU kernel (pocketfft): an inverse c2c over all but the last dimension, then a 1-D
// c2r along the last, which reads the first n/2 + 1 elements (missing ones as zeros) as a
// Hermitian signal: the imaginary parts of element 0, and of n/2 for an even n, are not read.
std::vector<Tensor> ref_c2r(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  Cbuf x = to_cbuf(in[0]);
  const auto dims = fft_dims(op, a[1], in[0].dim());
  for (size_t k = 0; k + 1 < dims.size(); ++k) dft_along(x, dims[k], false);
  const int64_t last = dims.back(), N = a[3].i;
  Cbuf full{outs[0].shape, std::vector<cplx>(static_cast<size_t>(numel_of(outs[0].shape)))};
  int64_t outer, m, inner;
  lines(x.shape, last, outer, m, inner);
  const int64_t used = std::min(m, N / 2 + 1);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return k < used ? x.v[o * m * inner + k * inner + i] : cplx(0); };
      cplx* y = &full.v[o * N * inner + i];
      y[0] = at(0).real();
      for (int64_t k = 1; k < N; ++k) {
        if (2 * k == N) y[k * inner] = at(k).real();
        else y[k * inner] = 2 * k < N ? at(k) : std::conj(at(N - k));
      }
    }
  dft_along(full, last, false);
  const double scale = norm_scale(op, a[2].i, static_cast<double>(signal_size(outs[0].shape, dims)));
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t i = 0; i < y.numel(); ++i) y.set(i, full.v[i].real() * scale);
  return {y};
}

// fft_c2r_backward: an r2c of the gradient, the elements whose mirror image lies outside the
// one-sided half (1 .. n - (n/2 + 1)) doubled: added to themselves through the real view.
Args d_c2r(DerivCtx& c) {
  const Shape xs = shape_of(c, c.args[0]);
  const auto dims = fft_dims(c.op, c.args[1], static_cast<int64_t>(xs.size()));
  const int64_t last = dims.back();
  Arg gi = call(c, "aten._fft_r2c.default", {c.grads[0], ints(dims), c.args[2], Arg::of_bool(true)});
  const int64_t half = shape_of(c, gi)[last], doubled = c.args[3].i - half;
  if (doubled > 0) {
    const Arg r = call(c, "aten.view_as_real.default", {gi});
    const Arg part = call(c, "aten.slice.Tensor", {r, Arg::of_int(last), Arg::of_int(1), Arg::of_int(1 + doubled), Arg::of_int(1)});
    const int64_t rank = static_cast<int64_t>(shape_of(c, r).size());
    std::vector<int64_t> pad(static_cast<size_t>(2 * (rank - last)), 0);
    pad[static_cast<size_t>(2 * (rank - 1 - last))] = 1;
    pad[static_cast<size_t>(2 * (rank - 1 - last) + 1)] = half - 1 - doubled;
    const Arg again = call(c, "aten.constant_pad_nd.default", {part, ints(pad), num(0.0)});
    gi = call(c, "aten.view_as_complex.default", {call(c, "aten.add.Tensor", {r, again})});
  }
  // An input longer than n/2 + 1 along the last dimension: the elements past it are not read
  // (zero gradient); a shorter one: its missing elements read as zeros (the gradient cut to it).
  if (xs[last] > half) gi = pad_complex(c, gi, last, 0, xs[last] - half);
  if (xs[last] < half) {
    const Arg r = call(c, "aten.view_as_real.default", {gi});
    gi = call(c, "aten.view_as_complex.default",
              {call(c, "aten.slice.Tensor", {r, Arg::of_int(last), Arg::of_int(0), Arg::of_int(xs[last]), Arg::of_int(1)})});
  }
  return one(gi, 4);
}

// ---- _fft_c2c(Tensor self, SymInt[] dim, int normalization, bool forward) --------------------

std::vector<TensorMeta> infer_c2c(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  if (!dtype_is_complex(x.dtype)) bad(op, "takes a complex tensor, not " + std::string(dtype_torch(x.dtype)));
  fft_dims(op, a[1], static_cast<int64_t>(x.shape.size()));
  norm_scale(op, a[2].i, 1);
  return {like(x, x.shape)};
}

std::vector<Tensor> ref_c2c(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  Cbuf x = to_cbuf(in[0]);
  const auto dims = fft_dims(op, a[1], in[0].dim());
  for (int64_t d : dims) dft_along(x, d, a[3].b);
  const double scale = norm_scale(op, a[2].i, static_cast<double>(signal_size(in[0].shape(), dims)));
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t i = 0; i < y.numel(); ++i) y.set_complex(i, x.v[i] * scale);
  return {y};
}

// derivatives.yaml: _fft_c2c_symint(grad, dim, normalization, !forward).
Args d_c2c(DerivCtx& c) {
  return one(call(c, "aten._fft_c2c.default", {c.grads[0], c.args[1], c.args[2], Arg::of_bool(!c.args[3].b)}), 4);
}

// ---- view_as_real, view_as_complex, real, imag ----------------------------------------------
// Views in PyTorch; here copies run on the host (a complex buffer read as floats is not an index
// expression of the loop IR). Each one's gradient is the other.

std::vector<TensorMeta> infer_view_as_real(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  if (!dtype_is_complex(x.dtype)) bad(op, "takes a complex tensor, not " + std::string(dtype_torch(x.dtype)));
  Shape s = x.shape;
  s.push_back(2);
  return {like(x, real_dtype(x.dtype), s)};
}
std::vector<Tensor> ref_view_as_real(const OpDef&, const std::vector<Arg>&, const RefInputs& in, const std::vector<TensorMeta>&) {
  Tensor y(in[0].dtype(), in[0].shape());
  std::memcpy(y.data(), in[0].data(), static_cast<size_t>(in[0].nbytes()));
  return {y.viewed_as_real()};
}
Args d_view_as_real(DerivCtx& c) { return one(call(c, "aten.view_as_complex.default", {c.grads[0]}), 1); }

std::vector<TensorMeta> infer_view_as_complex(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  if (x.dtype != DType::f32 && x.dtype != DType::f64)
    bad(op, "takes a float32 or float64 tensor, not " + std::string(dtype_torch(x.dtype)));
  if (x.shape.empty() || x.shape.back() != 2) bad(op, "takes a tensor whose last dimension has size 2, not " + shape_str(x.shape));
  Shape s = x.shape;
  s.pop_back();
  return {like(x, complex_dtype(x.dtype), s)};
}
std::vector<Tensor> ref_view_as_complex(const OpDef&, const std::vector<Arg>&, const RefInputs& in, const std::vector<TensorMeta>&) {
  Tensor y(in[0].dtype(), in[0].shape());
  std::memcpy(y.data(), in[0].data(), static_cast<size_t>(in[0].nbytes()));
  return {y.viewed_as_complex()};
}
Args d_view_as_complex(DerivCtx& c) { return one(call(c, "aten.view_as_real.default", {c.grads[0]}), 1); }

// real, imag: view_as_real(self).select(-1, 0 or 1), as ATen's composites (for a real tensor,
// real is the tensor itself; imag refuses it, as PyTorch does).
std::vector<TensorMeta> infer_real(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  if (op.base_name() == "imag" && !dtype_is_complex(x.dtype)) bad(op, "imag is not implemented for tensors with non-complex dtypes");
  return {like(x, real_dtype(x.dtype), x.shape)};
}
Arg decomp_real(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  if (!dtype_is_complex(b.meta(a[0]).dtype)) return b.call("aten.alias.default", {a[0]});
  const int64_t part = op.base_name() == "imag" ? 1 : 0;
  return b.call("aten.select.int", {b.call("aten.view_as_real.default", {a[0]}), Arg::of_int(-1), Arg::of_int(part)});
}

// _conj, conj_physical: the complex conjugate (a real tensor as it is); torch.fft's inverse
// transforms of real inputs end with one (ATen's fft_r2c: "_fft_r2c doesn't support native r2c
// IFFT", ret.conj()), hfft starts with one. PyTorch's _conj is a view setting the conjugate bit;
// here a copy, so conj and resolve_conj are _conj and an alias. derivatives.yaml: grad.conj().
std::vector<Tensor> ref_conj(const OpDef&, const std::vector<Arg>&, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  Tensor y(outs[0].dtype, outs[0].shape);
  for (int64_t i = 0; i < y.numel(); ++i) y.set_complex(i, std::conj(in[0].get_complex(i)));
  return {y};
}
Args d_conj(DerivCtx& c) { return one(call(c, c.op.name.c_str(), {c.grads[0]}), 1); }
Arg decomp_conj(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) { return b.call("aten._conj.default", {a[0]}); }
Arg decomp_resolve_conj(GraphBuilder& b, const OpDef&, const std::vector<Arg>& a) { return b.call("aten.alias.default", {a[0]}); }

}  // namespace

void add_fft_ops(std::vector<OpDef>& t) {
  const std::vector<OpDef> ops = {
      ext("aten._fft_r2c.default", "_fft_r2c(Tensor self, int[] dim, int normalization, bool onesided) -> Tensor", kCore, infer_r2c,
          ref_r2c, nullptr, d_r2c),
      ext("aten._fft_c2r.default", "_fft_c2r(Tensor self, int[] dim, int normalization, SymInt last_dim_size) -> Tensor", kCore,
          infer_c2r, ref_c2r, nullptr, d_c2r),
      ext("aten._fft_c2c.default", "_fft_c2c(Tensor self, SymInt[] dim, int normalization, bool forward) -> Tensor", kCore, infer_c2c,
          ref_c2c, nullptr, d_c2c),
      ext("aten.view_as_real.default", "view_as_real(Tensor(a) self) -> Tensor(a)", kCore, infer_view_as_real, ref_view_as_real, nullptr,
          d_view_as_real),
      ext("aten.view_as_complex.default", "view_as_complex(Tensor(a) self) -> Tensor(a)", kCore, infer_view_as_complex,
          ref_view_as_complex, nullptr, d_view_as_complex),
      ext("aten._conj.default", "_conj(Tensor(a) self) -> Tensor(a)", kCore, same_as<0>, ref_conj, nullptr, d_conj),
      ext("aten.conj_physical.default", "conj_physical(Tensor self) -> Tensor", kCore, same_as<0>, ref_conj, nullptr, d_conj),
      // what torch.fft.ihfft2/ihfftn's graphs call (conj_physical's implementation op)
      ext("aten._conj_physical.default", "_conj_physical(Tensor self) -> Tensor", kCore, same_as<0>, ref_conj, nullptr, d_conj),
      comp("aten.conj.default", "conj(Tensor(a) self) -> Tensor(a)", kAten, same_as<0>, nullptr, single<decomp_conj>),
      comp("aten.resolve_conj.default", "resolve_conj(Tensor(a) self) -> Tensor(a)", kAten, same_as<0>, nullptr,
           single<decomp_resolve_conj>),
      comp("aten.real.default", "real(Tensor(a) self) -> Tensor(a)", kAten, infer_real, nullptr, single<decomp_real>),
      comp("aten.imag.default", "imag(Tensor(a) self) -> Tensor(a)", kAten, infer_real, nullptr, single<decomp_real>),
  };
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
