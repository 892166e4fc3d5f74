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
// tanh (and erf, below) in float: glibc has no vector versions (libmvec), and a scalar call in a
// loop stops it vectorizing. Both branches are computed and one is picked, so the loop stays a
// straight line: an odd polynomial near zero (relative accuracy), elsewhere through exp (which
// libmvec vectorizes). Max error about 2e-7 absolute, checked in tests/cpu against the library.
static inline float ls_tanh(float x) {
  const float a = __builtin_fabsf(x), x2 = x * x;
  const float small = x * (1.0f + x2 * (-0.333333333f + x2 * (0.133333333f + x2 * (-0.0539682540f + x2 * (0.0218694885f +
                                                                                                          x2 * -0.00886323553f)))));
  const float large = __builtin_copysignf(1.0f - 2.0f / (ls_exp(2.0f * a) + 1.0f), x);
  return a < 0.4f ? small : large;
}
static inline double ls_tanh(double x) { return __builtin_tanh(x); }
// erf in float as a ratio of an odd and an even polynomial of x clamped to [-4, 4] (beyond,
// erf is +-1 in float): 13 multiply-adds and a division, no exp. Twice as fast as the form
// through exp (a GELU of 2M elements on 16 cores: 0.30 -> 0.13 ms), absolute error under 4e-7
// (checked in tests/cpu against the C library in double).
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
