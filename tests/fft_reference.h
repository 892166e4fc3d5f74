// The FFT ops' definitions written as direct DFTs in double, from the DFT's definition: the
// independent yardstick the tests check FFTW, cuFFT, the CUDA plans and the reference interpreter
// against (test_cpu, test_cuda). Nothing here calls the op table's kernels. Shapes are contiguous
// and row-major; `dims` may be negative. ATen's normalization modes: 0 none, 1 by 1/sqrt(n), 2 by
// 1/n, n the product of the signal sizes (the output's for c2r, the input's otherwise).
#pragma once
#include <cmath>
#include <complex>
#include <cstdint>
#include <vector>

namespace fft_reference {

using cd = std::complex<double>;
using Sizes = std::vector<int64_t>;
enum class Type { r2c, c2r, c2c };  // aten._fft_r2c, _fft_c2r, _fft_c2c

inline const double kPi = std::acos(-1.0);

inline int64_t count(const Sizes& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

inline Sizes strides_of(const Sizes& shape) {
  Sizes st(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) st[d - 1] = st[d] * shape[d];
  return st;
}

inline std::vector<cd> complex_of(const std::vector<double>& x) { return std::vector<cd>(x.begin(), x.end()); }

inline double norm_factor(int64_t norm, double n) { return norm == 1 ? 1 / std::sqrt(n) : norm == 2 ? 1 / n : 1.0; }

// The unnormalized DFT of x over `dims` (each dimension at a time: the DFT is separable), sign -1
// forward, +1 inverse: y[k] = sum_m x[m] e^{sign 2 pi i k m / n}.
inline std::vector<cd> dft(const std::vector<cd>& x, const Sizes& shape, const Sizes& dims, int sign) {
  std::vector<cd> y = x;
  const Sizes st = strides_of(shape);
  for (int64_t d : dims) {
    if (d < 0) d += static_cast<int64_t>(shape.size());
    std::vector<cd> z(y.size());
    for (int64_t i = 0; i < static_cast<int64_t>(y.size()); ++i) {
      const int64_t k = i / st[d] % shape[d], base = i - k * st[d];
      cd s = 0;
      for (int64_t m = 0; m < shape[d]; ++m) s += y[base + m * st[d]] * std::polar(1.0, sign * 2 * kPi * double(k * m) / double(shape[d]));
      z[i] = s;
    }
    y = z;
  }
  return y;
}

// x's elements of shape `from` kept where every index is below `to`'s, zeros past `from`'s: a
// slice, a pad, or both.
inline std::vector<cd> resized(const std::vector<cd>& x, const Sizes& from, const Sizes& to) {
  std::vector<cd> y(static_cast<size_t>(count(to)));
  const Sizes fs = strides_of(from);
  for (int64_t i = 0; i < count(to); ++i) {
    int64_t rem = i, at = 0;
    bool in = true;
    for (size_t d = to.size(); d-- > 0;) {
      const int64_t q = rem % to[d];
      rem /= to[d];
      in = in && q < from[d];
      at += q * fs[d];
    }
    if (in) y[i] = x[at];
  }
  return y;
}

// The 1-D c2r of length n along the last dim of x (shape hs, last dim n/2 + 1), unnormalized:
// y[j] = Re X0 + 2 sum_{0<k<n/2} Re(X_k e^{2 pi i kj/n}) + (n even) Re X_{n/2} (-1)^j. leaky: also
// adds the imaginary parts of X0 and X_{n/2}, which the definition does not read, as a C2R might
// (test_cuda: a plan's real_ends step must zero them first).
inline std::vector<cd> c2r_last(const std::vector<cd>& x, const Sizes& hs, int64_t n, bool leaky = false) {
  const int64_t h = hs.back(), lines = count(hs) / h;
  std::vector<cd> y;
  for (int64_t l = 0; l < lines; ++l)
    for (int64_t j = 0; j < n; ++j) {
      double s = x[l * h].real();
      for (int64_t k = 1; 2 * k < n; ++k) s += 2 * (x[l * h + k] * std::polar(1.0, 2 * kPi * double(k * j) / double(n))).real();
      if (n % 2 == 0) s += x[l * h + n / 2].real() * (j % 2 ? -1.0 : 1.0);
      if (leaky) s += x[l * h].imag() + (n % 2 == 0 ? x[l * h + n / 2].imag() * (j % 2 ? -1.0 : 1.0) : 0.0);
      y.push_back(s);
    }
  return y;
}

// The op's definition (ATen's CPU FFTs) on x (shape `in`; an r2c's imaginary parts are 0) to the
// output shape `out`. forward: c2c's direction; onesided for r2c (out's last transformed dim then
// n/2 + 1). c2r: the last of `dims` is the halved one, its input padded or cut to out's n/2 + 1.
inline std::vector<cd> definition(Type type, const std::vector<cd>& x, const Sizes& in, const Sizes& out, Sizes dims, int64_t norm,
                                  bool forward = true) {
  const int64_t rank = static_cast<int64_t>(in.size());
  for (int64_t& d : dims) d = d < 0 ? d + rank : d;
  std::vector<cd> y;
  Sizes full = out;
  if (type == Type::c2c) {
    y = dft(x, in, dims, forward ? -1 : 1);
  } else if (type == Type::r2c) {
    full = in;
    y = resized(dft(x, in, dims, -1), in, out);
  } else {
    const Sizes others(dims.begin(), dims.end() - 1);
    std::vector<cd> z = dft(x, in, others, 1);
    // the last dim moved to the end (as a 1-D c2r takes it), padded or cut to n/2 + 1
    const int64_t last = dims.back(), n = out[last];
    Sizes moved, order;
    for (int64_t d = 0; d < rank; ++d)
      if (d != last) order.push_back(d);
    order.push_back(last);
    for (int64_t d : order) moved.push_back(in[d]);
    std::vector<cd> mz(z.size());
    const Sizes is = strides_of(in), ms = strides_of(moved);
    for (int64_t i = 0; i < count(in); ++i) {
      int64_t at = 0;
      for (size_t q = 0; q < order.size(); ++q) at += (i / is[order[q]] % in[order[q]]) * ms[q];
      mz[at] = z[i];
    }
    Sizes hs = moved;
    hs.back() = n / 2 + 1;
    const std::vector<cd> r = c2r_last(resized(mz, moved, hs), hs, n);
    Sizes om = moved;
    om.back() = n;
    const Sizes os = strides_of(out), oms = strides_of(om);
    y.assign(r.size(), 0);
    for (int64_t i = 0; i < count(out); ++i) {
      int64_t at = 0;
      for (size_t q = 0; q < order.size(); ++q) at += (i / os[order[q]] % out[order[q]]) * oms[q];
      y[i] = r[at];
    }
  }
  double n = 1;
  for (int64_t d : dims) n *= double(full[d]);
  const double f = norm_factor(norm, n);
  for (cd& v : y) v *= f;
  return y;
}

// The same on a real input (r2c), and the real parts of an output (c2r).
inline std::vector<cd> definition(Type type, const std::vector<double>& x, const Sizes& in, const Sizes& out, const Sizes& dims,
                                  int64_t norm, bool forward = true) {
  return definition(type, complex_of(x), in, out, dims, norm, forward);
}
inline std::vector<double> real_parts(const std::vector<cd>& y) {
  std::vector<double> r;
  for (const cd& v : y) r.push_back(v.real());
  return r;
}

// The gradient of a scalar function of x in double by central differences, the yardstick of the
// FFT tests' training steps: d f / d x[e] = (f(x + h e_e) - f(x - h e_e)) / 2h.
template <typename F>
std::vector<double> central_differences(const F& f, const std::vector<double>& x, double h = 1e-6) {
  std::vector<double> d;
  for (size_t e = 0; e < x.size(); ++e) {
    std::vector<double> up = x, down = x;
    up[e] += h;
    down[e] -= h;
    d.push_back((f(up) - f(down)) / (2 * h));
  }
  return d;
}

}  // namespace fft_reference
