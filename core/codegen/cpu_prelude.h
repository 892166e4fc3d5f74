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
// tanh and erf in float: glibc has no vector versions (libmvec), and a scalar call in a loop
// stops it vectorizing. Both branches are computed and one is picked, so the loop stays a
// straight line: an odd polynomial near zero (relative accuracy), elsewhere through exp (which
// libmvec vectorizes). Max error about 2e-7 absolute, checked in tests/core against the library.
static inline float ls_tanh(float x) {
  const float a = __builtin_fabsf(x), x2 = x * x;
  const float small = x * (1.0f + x2 * (-0.333333333f + x2 * (0.133333333f + x2 * (-0.0539682540f + x2 * (0.0218694885f +
                                                                                                          x2 * -0.00886323553f)))));
  const float large = __builtin_copysignf(1.0f - 2.0f / (ls_exp(2.0f * a) + 1.0f), x);
  return a < 0.4f ? small : large;
}
static inline double ls_tanh(double x) { return __builtin_tanh(x); }
static inline float ls_erf(float x) {
  const float a = __builtin_fabsf(x), x2 = x * x;
  // 2/sqrt(pi) * (x - x^3/3 + x^5/10 - x^7/42 + x^9/216 - x^11/1320)
  const float small = x * 1.12837917f * (1.0f + x2 * (-0.333333333f + x2 * (0.1f + x2 * (-0.0238095238f + x2 * (0.00462962963f +
                                                                                                            x2 * -0.000757575758f)))));
  // Abramowitz & Stegun 7.1.26
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  const float poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  // Beyond |x| = 4 erf is 1 in float; capping x^2 keeps exp(-x^2) out of the subnormals, where
  // arithmetic is a hundred times slower (a GELU of large activations ran 10x slower).
  const float large = __builtin_copysignf(1.0f - poly * ls_exp(-(x2 < 16.0f ? x2 : 16.0f)), x);
  return a < 0.5f ? small : large;
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
