// Helpers every generated CPU kernel file starts with. No system headers: the translation unit
// parses in milliseconds. Compiled with -fno-math-errno, the builtins become LLVM intrinsics that
// the loop vectorizer maps onto libmvec's vector functions (sin, cos, exp, log, pow).
typedef __INT64_TYPE__ int64_t;
typedef __INT32_TYPE__ int32_t;
typedef __UINT8_TYPE__ uint8_t;

static inline float ls_sin(float x) { return __builtin_sinf(x); }
static inline double ls_sin(double x) { return __builtin_sin(x); }
static inline float ls_cos(float x) { return __builtin_cosf(x); }
static inline double ls_cos(double x) { return __builtin_cos(x); }
static inline float ls_exp(float x) { return __builtin_expf(x); }
static inline double ls_exp(double x) { return __builtin_exp(x); }
static inline float ls_log(float x) { return __builtin_logf(x); }
static inline double ls_log(double x) { return __builtin_log(x); }
static inline float ls_sqrt(float x) { return __builtin_sqrtf(x); }
static inline double ls_sqrt(double x) { return __builtin_sqrt(x); }
static inline float ls_rsqrt(float x) { return 1.0f / __builtin_sqrtf(x); }
static inline double ls_rsqrt(double x) { return 1.0 / __builtin_sqrt(x); }
static inline float ls_tanh(float x) { return __builtin_tanhf(x); }
static inline double ls_tanh(double x) { return __builtin_tanh(x); }
static inline float ls_erf(float x) { return __builtin_erff(x); }
static inline double ls_erf(double x) { return __builtin_erf(x); }
static inline float ls_pow(float x, float y) { return __builtin_powf(x, y); }
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
