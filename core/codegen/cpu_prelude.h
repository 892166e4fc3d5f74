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
