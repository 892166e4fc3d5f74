// Helpers every generated CPU kernel file starts with. No system headers: the translation unit
// parses in milliseconds. Compiled with -fno-math-errno, the builtins become LLVM intrinsics that
// the loop vectorizer maps onto libmvec's vector functions (sin, cos, exp, log, pow).
typedef __INT64_TYPE__ int64_t;
typedef __INT32_TYPE__ int32_t;
typedef __UINT8_TYPE__ uint8_t;

#if defined(__GNUC__) && !defined(__clang__)
// GCC (the external compile path) maps a call onto libmvec's vector variants only when the
// function is declared with the simd attribute, as glibc's <math.h> does under -ffast-math.
extern "C" {
float sinf(float) __attribute__((__simd__("notinbranch"), __nothrow__, __const__));
float cosf(float) __attribute__((__simd__("notinbranch"), __nothrow__, __const__));
float expf(float) __attribute__((__simd__("notinbranch"), __nothrow__, __const__));
float logf(float) __attribute__((__simd__("notinbranch"), __nothrow__, __const__));
float powf(float, float) __attribute__((__simd__("notinbranch"), __nothrow__, __const__));
}
#define LS_F32(name) name##f
#else
#define LS_F32(name) __builtin_##name##f
#endif
// A short inner loop of a split nest (x0i, tens of elements) that Clang fully unrolls is then
// vectorized across the outer loop instead: every access a gather, 5x slower than the inner loop
// vectorized (MobileNetV3's 7x7 planes: 6.5 us against 1.3). Not unrolled, the inner loop is
// the one vectorized. GCC vectorizes the inner loop either way.
#ifdef __clang__
#define LS_INNER_LOOP _Pragma("clang loop unroll(disable)")
#else
#define LS_INNER_LOOP
#endif

static inline float ls_sin(float x) { return LS_F32(sin)(x); }
static inline double ls_sin(double x) { return __builtin_sin(x); }
static inline float ls_cos(float x) { return LS_F32(cos)(x); }
static inline double ls_cos(double x) { return __builtin_cos(x); }
static inline float ls_exp(float x) { return LS_F32(exp)(x); }
static inline double ls_exp(double x) { return __builtin_exp(x); }
static inline float ls_log(float x) { return LS_F32(log)(x); }
static inline double ls_log(double x) { return __builtin_log(x); }
static inline float ls_sqrt(float x) { return __builtin_sqrtf(x); }
static inline double ls_sqrt(double x) { return __builtin_sqrt(x); }
static inline float ls_rsqrt(float x) { return 1.0f / __builtin_sqrtf(x); }
static inline double ls_rsqrt(double x) { return 1.0 / __builtin_sqrt(x); }
// tanh and erf in float: glibc has no vector versions (libmvec), and a scalar call in a loop stops
// it vectorizing. Both are a ratio of an odd and an even polynomial of x clamped where the function
// is +-1 in float, so the loop stays a straight line of multiply-adds and one division, with no
// exp: twice as fast as the forms through exp they replace (tanh of 2M elements on 2 cores:
// 0.66 -> 0.31-0.34 ms; a GELU of 2M elements on 16 cores: 0.30 -> 0.13 ms). Absolute error under
// 3e-7 (tanh) and 4e-7 (erf), checked in tests/cpu against the C library in double.
static inline float ls_tanh(float x) {
  x = x < -7.90531110763549805f ? -7.90531110763549805f : (x > 7.90531110763549805f ? 7.90531110763549805f : x);
  const float x2 = x * x;
  float p = x2 * -2.76076847742355e-16f + 2.00018790482477e-13f;
  p = x2 * p - 8.60467152213735e-11f;
  p = x2 * p + 5.12229709037114e-08f;
  p = x2 * p + 1.48572235717979e-05f;
  p = x2 * p + 6.37261928875436e-04f;
  p = x2 * p + 4.89352455891786e-03f;
  float q = x2 * 1.19825839466702e-06f + 1.18534705686654e-04f;
  q = x2 * q + 2.26843463243900e-03f;
  q = x2 * q + 4.89352518554385e-03f;
  return x * p / q;
}
static inline double ls_tanh(double x) { return __builtin_tanh(x); }
static inline float ls_erf(float x) {
  x = x < -4.0f ? -4.0f : (x > 4.0f ? 4.0f : x);
  const float x2 = x * x;
  float p = x2 * -2.72614225801306e-10f + 2.77068142495902e-08f;
  p = x2 * p - 2.10102402082508e-06f;
  p = x2 * p - 5.69250639462346e-05f;
  p = x2 * p - 7.34990630326855e-04f;
  p = x2 * p - 2.95459980854025e-03f;
  p = x2 * p - 1.60960333262415e-02f;
  float q = x2 * -1.45660718464996e-05f - 2.13374055278905e-04f;
  q = x2 * q - 1.68282697438203e-03f;
  q = x2 * q - 7.37332916720468e-03f;
  q = x2 * q - 1.42647390514189e-02f;
  return x * p / q;
}
static inline double ls_erf(double x) { return __builtin_erf(x); }
static inline float ls_pow(float x, float y) { return LS_F32(pow)(x, y); }
static inline double ls_pow(double x, double y) { return __builtin_pow(x, y); }
static inline float ls_abs(float x) { return __builtin_fabsf(x); }
static inline double ls_abs(double x) { return __builtin_fabs(x); }
static inline int64_t ls_abs(int64_t x) { return x < 0 ? -x : x; }
static inline int32_t ls_abs(int32_t x) { return x < 0 ? -x : x; }
template <typename T> static inline T ls_sigmoid(T x) { return T(1) / (T(1) + ls_exp(-x)); }
template <typename T> static inline T ls_relu(T x) { return x > T(0) || x != x ? x : T(0); }
// maximum/minimum propagate NaN, as torch.maximum does.
template <typename T> static inline T ls_maximum(T a, T b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); }
template <typename T> static inline T ls_minimum(T a, T b) { return a != a ? a : (b != b ? b : (a < b ? a : b)); }
static inline int64_t ls_floordiv(int64_t a, int64_t k) { return a >= 0 ? a / k : -((-a + k - 1) / k); }
static inline int64_t ls_mod(int64_t a, int64_t k) { return a - ls_floordiv(a, k) * k; }
template <typename T> static inline T ls_gelu(T x) { return T(0.5) * x * (T(1) + ls_erf(x * T(0.70710678118654752))); }
template <typename T> static inline T ls_gelu_tanh(T x) {
  return T(0.5) * x * (T(1) + ls_tanh(T(0.7978845608028654) * (x + T(0.044715) * x * x * x)));
}
template <typename T> static inline T ls_hardsigmoid(T x) {
  T y = x + T(3);
  y = y < T(0) ? T(0) : y;
  y = y > T(6) ? T(6) : y;
  return y / T(6);
}
template <typename T> static inline T ls_hardswish(T x) { return x * ls_hardsigmoid(x); }
template <typename T> static inline T ls_identity(T x) { return x; }

// ---- on demand: each paragraph below (one helper) is written into a source only where a kernel
// calls it (codegen/emitter.h, prelude_for), so the sources that do not call it stay as they were.

// ipow: an integer power as PyTorch's powi: by squaring, wrapping as its integer type; a
// negative exponent gives 1 for a base of 1, -1 or 1 for a base of -1, else 0.
template <typename I> static inline I ls_ipow(I a, I b) {
  if (b < I(0)) return a == I(1) ? I(1) : a == I(-1) ? (((-b) % 2) ? I(-1) : I(1)) : I(0);
  unsigned long long r = 1, x = static_cast<unsigned long long>(a);
  for (unsigned long long e = static_cast<unsigned long long>(b); e; e >>= 1, x *= x)
    if (e & 1) r *= x;
  return static_cast<I>(r);
}

// floor: an integer is its own value.
static inline float ls_floor(float x) { return __builtin_floorf(x); }
static inline double ls_floor(double x) { return __builtin_floor(x); }
template <typename I> static inline I ls_floor(I x) { return x; }

// ceil: an integer is its own value.
static inline float ls_ceil(float x) { return __builtin_ceilf(x); }
static inline double ls_ceil(double x) { return __builtin_ceil(x); }
template <typename I> static inline I ls_ceil(I x) { return x; }

// round (halves to even, as torch.round): an integer is its own value.
static inline float ls_round(float x) { return __builtin_nearbyintf(x); }
static inline double ls_round(double x) { return __builtin_nearbyint(x); }
template <typename I> static inline I ls_round(I x) { return x; }

// trunc: an integer is its own value.
static inline float ls_trunc(float x) { return __builtin_truncf(x); }
static inline double ls_trunc(double x) { return __builtin_trunc(x); }
template <typename I> static inline I ls_trunc(I x) { return x; }

// sign: -1, 0 or 1 (0 for NaN, as torch.sign's kernels compute it).
template <typename T> static inline T ls_sign(T x) { return static_cast<T>((T(0) < x) - (x < T(0))); }

// log1p: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
static inline float ls_log1p(float x) { return __builtin_log1pf(x); }
static inline double ls_log1p(double x) { return __builtin_log1p(x); }
template <typename I> static inline float ls_log1p(I x) { return __builtin_log1pf(static_cast<float>(x)); }

// expm1: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
static inline float ls_expm1(float x) { return __builtin_expm1f(x); }
static inline double ls_expm1(double x) { return __builtin_expm1(x); }
template <typename I> static inline float ls_expm1(I x) { return __builtin_expm1f(static_cast<float>(x)); }

// log2: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
static inline float ls_log2(float x) { return __builtin_log2f(x); }
static inline double ls_log2(double x) { return __builtin_log2(x); }
template <typename I> static inline float ls_log2(I x) { return __builtin_log2f(static_cast<float>(x)); }

// log10: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
static inline float ls_log10(float x) { return __builtin_log10f(x); }
static inline double ls_log10(double x) { return __builtin_log10(x); }
template <typename I> static inline float ls_log10(I x) { return __builtin_log10f(static_cast<float>(x)); }

// tan: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
static inline float ls_tan(float x) { return __builtin_tanf(x); }
static inline double ls_tan(double x) { return __builtin_tan(x); }
template <typename I> static inline float ls_tan(I x) { return __builtin_tanf(static_cast<float>(x)); }

// asin: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
static inline float ls_asin(float x) { return __builtin_asinf(x); }
static inline double ls_asin(double x) { return __builtin_asin(x); }
template <typename I> static inline float ls_asin(I x) { return __builtin_asinf(static_cast<float>(x)); }

// acos: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
static inline float ls_acos(float x) { return __builtin_acosf(x); }
static inline double ls_acos(double x) { return __builtin_acos(x); }
template <typename I> static inline float ls_acos(I x) { return __builtin_acosf(static_cast<float>(x)); }

// atan: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
static inline float ls_atan(float x) { return __builtin_atanf(x); }
static inline double ls_atan(double x) { return __builtin_atan(x); }
template <typename I> static inline float ls_atan(I x) { return __builtin_atanf(static_cast<float>(x)); }

// sinh: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
static inline float ls_sinh(float x) { return __builtin_sinhf(x); }
static inline double ls_sinh(double x) { return __builtin_sinh(x); }
template <typename I> static inline float ls_sinh(I x) { return __builtin_sinhf(static_cast<float>(x)); }

// cosh: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
static inline float ls_cosh(float x) { return __builtin_coshf(x); }
static inline double ls_cosh(double x) { return __builtin_cosh(x); }
template <typename I> static inline float ls_cosh(I x) { return __builtin_coshf(static_cast<float>(x)); }

// asinh: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
static inline float ls_asinh(float x) { return __builtin_asinhf(x); }
static inline double ls_asinh(double x) { return __builtin_asinh(x); }
template <typename I> static inline float ls_asinh(I x) { return __builtin_asinhf(static_cast<float>(x)); }

// acosh: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
static inline float ls_acosh(float x) { return __builtin_acoshf(x); }
static inline double ls_acosh(double x) { return __builtin_acosh(x); }
template <typename I> static inline float ls_acosh(I x) { return __builtin_acoshf(static_cast<float>(x)); }

// atanh: an integer input is computed in float32 (PyTorch's INT_TO_FLOAT).
static inline float ls_atanh(float x) { return __builtin_atanhf(x); }
static inline double ls_atanh(double x) { return __builtin_atanh(x); }
template <typename I> static inline float ls_atanh(I x) { return __builtin_atanhf(static_cast<float>(x)); }

// isnan, isinf: bool results; an integer is neither.
template <typename T> static inline bool ls_isnan(T x) { return x != x; }

static inline bool ls_isinf(float x) { return __builtin_fabsf(x) == __builtin_inff(); }
static inline bool ls_isinf(double x) { return __builtin_fabs(x) == __builtin_inf(); }
template <typename I> static inline bool ls_isinf(I) { return false; }

// Logical ops: nonzero is true; bitwise ops: integer and bool operands (ops/pointwise.cpp checks).
template <typename T> static inline bool ls_logical_not(T x) { return x == T(0); }

static inline bool ls_bitwise_not(bool x) { return !x; }
template <typename I> static inline I ls_bitwise_not(I x) { return static_cast<I>(~x); }

template <typename A, typename B> static inline bool ls_logical_and(A a, B b) { return (a != A(0)) & (b != B(0)); }

template <typename A, typename B> static inline bool ls_logical_or(A a, B b) { return (a != A(0)) | (b != B(0)); }

template <typename A, typename B> static inline bool ls_logical_xor(A a, B b) { return (a != A(0)) != (b != B(0)); }

template <typename A, typename B> static inline auto ls_bitwise_and(A a, B b) { return a & b; }

template <typename A, typename B> static inline auto ls_bitwise_or(A a, B b) { return a | b; }

template <typename A, typename B> static inline auto ls_bitwise_xor(A a, B b) { return a ^ b; }

// remainder: the sign of the divisor (Python's %); fmod: the sign of the dividend (C's fmod).
static inline float ls_remainder(float a, float b) {
  const float r = __builtin_fmodf(a, b);
  return r != 0.0f && (r < 0.0f) != (b < 0.0f) ? r + b : r;
}
static inline double ls_remainder(double a, double b) {
  const double r = __builtin_fmod(a, b);
  return r != 0.0 && (r < 0.0) != (b < 0.0) ? r + b : r;
}
template <typename I> static inline I ls_remainder(I a, I b) {
  const I r = a % b;
  return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}
template <typename A, typename B> static inline auto ls_remainder(A a, B b) {
  using T = decltype(a + b);
  return ls_remainder(static_cast<T>(a), static_cast<T>(b));
}

static inline float ls_fmod(float a, float b) { return __builtin_fmodf(a, b); }
static inline double ls_fmod(double a, double b) { return __builtin_fmod(a, b); }
template <typename I> static inline I ls_fmod(I a, I b) { return a % b; }
template <typename A, typename B> static inline auto ls_fmod(A a, B b) {
  using T = decltype(a + b);
  return ls_fmod(static_cast<T>(a), static_cast<T>(b));
}

// atan2: integers are computed in float32.
static inline float ls_atan2(float a, float b) { return __builtin_atan2f(a, b); }
static inline double ls_atan2(double a, double b) { return __builtin_atan2(a, b); }
template <typename A, typename B> static inline auto ls_atan2(A a, B b) {
  using T = decltype(a + b + 0.0f);
  return ls_atan2(static_cast<T>(a), static_cast<T>(b));
}

// An indirect index out of range (an index tensor's element): the first fault is recorded for the
// executor, which reports it naming the node, the value and the size; element 0 is read instead.
static inline int64_t ls_index_fault(int64_t i, int64_t size, int64_t node);
extern "C" __attribute__((weak)) int64_t ls_index_fault_state[4] = {0, 0, 0, 0};
static inline int64_t ls_index_fault(int64_t i, int64_t size, int64_t node) {
  int64_t none = 0;
  if (__atomic_compare_exchange_n(&ls_index_fault_state[0], &none, int64_t(1), false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    ls_index_fault_state[1] = i;
    ls_index_fault_state[2] = size;
    ls_index_fault_state[3] = node;
  }
  return 0;
}

// ls_bf16: bfloat16, the upper 16 bits of a float32. A load widens it exactly (ls_float); a store
// rounds to nearest even, a NaN kept a quiet NaN (ls_to_bf16), as c10::BFloat16 does. Branch-free
// integer work, so loops over it vectorize; a scoped enum, not a struct, for the same reason
// (Clang 14 leaves a loop that loads or stores a one-member struct scalar: 3 GB/s, not 30).
enum class ls_bf16 : unsigned short {};
static inline float ls_float(ls_bf16 h) { return __builtin_bit_cast(float, static_cast<unsigned>(h) << 16); }
static inline ls_bf16 ls_to_bf16(float f) {
  const unsigned u = __builtin_bit_cast(unsigned, f);
  const unsigned r = (u & 0x7fffffffu) > 0x7f800000u ? (u | 0x400000u) : u + 0x7fffu + ((u >> 16) & 1u);
  return static_cast<ls_bf16>(r >> 16);
}

// ls_f16: IEEE half. A load widens it exactly (ls_float); a store rounds to nearest even, overflow
// to infinity, subnormals kept (ls_to_f16), as c10::Half does; branch-free (selects) to vectorize.
enum class ls_f16 : unsigned short {};  // a scoped enum, as ls_bf16
static inline float ls_float(ls_f16 h16) {
  const unsigned h = static_cast<unsigned>(h16);
  const unsigned e = h & 0x7c00u, m = (h & 0x7fffu) << 13;
  const float normal = __builtin_bit_cast(float, e == 0x7c00u ? m + (224u << 23) : m + (112u << 23));
  const float sub = __builtin_bit_cast(float, m + (113u << 23)) - __builtin_bit_cast(float, 113u << 23);
  const unsigned u = __builtin_bit_cast(unsigned, e == 0 ? sub : normal);
  return __builtin_bit_cast(float, u | ((h & 0x8000u) << 16));
}
static inline ls_f16 ls_to_f16(float f) {
  const unsigned all = __builtin_bit_cast(unsigned, f), sign = (all >> 16) & 0x8000u, u = all & 0x7fffffffu;
  const unsigned sub = __builtin_bit_cast(unsigned, __builtin_bit_cast(float, u) + 0.5f) - 0x3f000000u;
  const unsigned normal = (u + 0xc8000fffu + ((u >> 13) & 1u)) >> 13;
  const unsigned o = u >= 0x47800000u ? (u > 0x7f800000u ? 0x7e00u : 0x7c00u) : (u < 0x38800000u ? sub : normal);
  return static_cast<ls_f16>(o | sign);
}

// Arg reductions (argmax, argmin), as Inductor's greater_or_nan and less_or_nan: whether the kept
// candidate (a at index ia) stays against (b at ib): a NaN beats a number, then the maximum (the
// minimum), then between equals (two NaNs too) the lower index.
template <typename T> static inline bool ls_arg_keeps(bool max, T a, T b, int64_t ia, int64_t ib) {
  if (a != a) return b == b || ia < ib;
  if (b != b) return false;
  if (a == b) return ia < ib;
  return max ? a > b : a < b;
}

// ls_cascade_add, ls_cascade_sum: cascade (pairwise) summation of a float32 sum over a long
// reduction, as PyTorch's cascade_sum and Inductor's CascadeSumHelper: the loop adds into its
// accumulators (W of them: a row's 1, its lanes, a block's columns) a block of 4096 elements at
// a time, then ls_cascade_add carries the block's sums up the levels (level j: the sum of 2^j
// blocks, as the bits of a counter) and zeroes them; ls_cascade_sum adds the levels back, smallest
// first. The error grows as log(blocks), not as the length; D levels hold 2^D - 1 blocks.
template <int W, int D> struct ls_cascade {
  int64_t n = 0;  // blocks added: level j holds a sum where bit j of n is set
  float level[D][W];
};
template <int W, int D> static inline void ls_cascade_add(ls_cascade<W, D>& c, float* acc, int64_t w = W) {
  int64_t j = 0;
  for (; (c.n >> j) & 1; ++j)
    for (int64_t i = 0; i < w; ++i) acc[i] = c.level[j][i] + acc[i];
  for (int64_t i = 0; i < w; ++i) c.level[j][i] = acc[i], acc[i] = 0.0f;
  ++c.n;
}
template <int W, int D> static inline void ls_cascade_sum(const ls_cascade<W, D>& c, float* acc, int64_t w = W) {
  for (int64_t j = 0; j < D; ++j)
    if ((c.n >> j) & 1)
      for (int64_t i = 0; i < w; ++i) acc[i] = acc[i] + c.level[j][i];
}

// ls_pairwise_rows: the chunks' partial sums of a long float32 sum (rows of `width` sums each: a
// single row's chunks, 1 a chunk; a column form's, a chunk's sums of every column) added in
// pairs, then pairs of pairs, into row 0: the cascade's tree over the chunks.
static inline void ls_pairwise_rows(float* part, int64_t rows, int64_t width) {
  for (int64_t s = 1; s < rows; s *= 2)
    for (int64_t c = 0; c + s < rows; c += 2 * s)
      for (int64_t i = 0; i < width; ++i) part[c * width + i] = part[c * width + i] + part[(c + s) * width + i];
}

// philox(seed, offset, index): 53 random bits of an element, Philox4x32-10 keyed by the seed, the
// counter the index and the offset (ops/philox.h, the reference this copy must equal bit for bit).
static inline int64_t ls_philox(int64_t seed, int64_t offset, int64_t index) {
  unsigned int c0 = (unsigned int)index, c1 = (unsigned int)((unsigned long long)index >> 32), c2 = (unsigned int)offset,
               c3 = (unsigned int)((unsigned long long)offset >> 32), k0 = (unsigned int)seed,
               k1 = (unsigned int)((unsigned long long)seed >> 32);
  for (int r = 0; r < 10; ++r) {
    const unsigned long long p0 = 0xD2511F53ull * c0, p1 = 0xCD9E8D57ull * c2;
    const unsigned int h0 = (unsigned int)(p0 >> 32), l0 = (unsigned int)p0, h1 = (unsigned int)(p1 >> 32), l1 = (unsigned int)p1;
    c0 = h1 ^ c1 ^ k0;
    c1 = l1;
    c2 = h0 ^ c3 ^ k1;
    c3 = l0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return (int64_t)((unsigned long long)c0 | ((unsigned long long)(c1 & 0x1FFFFFu) << 32));
}

// rand: a uniform float in [0, 1) from the top 24 of the 53 bits.
static inline float ls_rand(int64_t b) { return (float)((double)((unsigned long long)b >> 29) * 0x1p-24); }

// rand_f64: a uniform double in [0, 1) from the 53 bits.
static inline double ls_rand_f64(int64_t b) { return (double)b * 0x1p-53; }

// randn: Box-Muller in double, log and cos as ops/philox.h's polynomials (every multiply-add an fma).
static inline double ls_randn(int64_t b) {
  const double u1 = (double)(((unsigned long long)b & 0xFFFFFFFFull) + 1) * 0x1p-32;
  int e = 0;
  double m = __builtin_frexp(u1, &e);
  if (m < 0.70710678118654752) m = m * 2.0, e = e - 1;
  const double f = m - 1.0, s = f / (2.0 + f), s2 = s * s;
  double p = 2.0 / 21.0;
  p = __builtin_fma(p, s2, 2.0 / 19.0);
  p = __builtin_fma(p, s2, 2.0 / 17.0);
  p = __builtin_fma(p, s2, 2.0 / 15.0);
  p = __builtin_fma(p, s2, 2.0 / 13.0);
  p = __builtin_fma(p, s2, 2.0 / 11.0);
  p = __builtin_fma(p, s2, 2.0 / 9.0);
  p = __builtin_fma(p, s2, 2.0 / 7.0);
  p = __builtin_fma(p, s2, 2.0 / 5.0);
  p = __builtin_fma(p, s2, 2.0 / 3.0);
  p = __builtin_fma(p, s2, 2.0);
  const double log_u1 = __builtin_fma((double)e, 0.69314718055994531, s * p);
  const unsigned long long j = (unsigned long long)b >> 32, q = j >> 19, r = j & 0x7FFFFull;
  const bool fold = r > 0x40000ull, want_cos = (q & 1) == 0;
  const double t = (double)(fold ? 0x80000ull - r : r) * 0x1p-19 * 1.5707963267948966, t2 = t * t;
  double v;
  if (want_cos != fold) {
    double c = -1.0 / 6402373705728000.0;
    c = __builtin_fma(c, t2, 1.0 / 20922789888000.0);
    c = __builtin_fma(c, t2, -1.0 / 87178291200.0);
    c = __builtin_fma(c, t2, 1.0 / 479001600.0);
    c = __builtin_fma(c, t2, -1.0 / 3628800.0);
    c = __builtin_fma(c, t2, 1.0 / 40320.0);
    c = __builtin_fma(c, t2, -1.0 / 720.0);
    c = __builtin_fma(c, t2, 1.0 / 24.0);
    c = __builtin_fma(c, t2, -0.5);
    v = __builtin_fma(t2, c, 1.0);
  } else {
    double c = 1.0 / 355687428096000.0;
    c = __builtin_fma(c, t2, -1.0 / 1307674368000.0);
    c = __builtin_fma(c, t2, 1.0 / 6227020800.0);
    c = __builtin_fma(c, t2, -1.0 / 39916800.0);
    c = __builtin_fma(c, t2, 1.0 / 362880.0);
    c = __builtin_fma(c, t2, -1.0 / 5040.0);
    c = __builtin_fma(c, t2, 1.0 / 120.0);
    c = __builtin_fma(c, t2, -1.0 / 6.0);
    v = __builtin_fma(t * t2, c, t);
  }
  return __builtin_sqrt(-2.0 * log_u1) * (q == 1 || q == 2 ? -v : v);
}
