// Random numbers as a function of (seed, offset, element index): Philox4x32-10 (Salmon et al.,
// "Parallel random numbers: as easy as 1, 2, 3"), the counter-based generator of PyTorch's CUDA
// kernels and of Inductor's generated code (triton's tl.rand / tl.randn). Key: the seed; counter:
// the element's index (words 0, 1) and the op's offset (words 2, 3).
//
// One definition, written three times: here (the reference kernels of aten.rand, aten.randn and
// native_dropout, and eval_math of the loop IR), in codegen/cpu_prelude.h and in
// codegen/cuda_prelude.h (generated code). The three agree bit for bit: integer arithmetic, then
// only IEEE operations that round once (a product by a power of two, sqrt, division, and every
// multiply-add an explicit fma), so neither a compiler's contraction (-ffp-contract=fast, NVRTC's
// fmad) nor a math library's accuracy can make them differ. tests/cpu/test_cpu.cpp
// (testRandomOpsGeneratedEqualReference) checks that generated code on the CPU equals the
// reference exactly.
//
// What a draw is, per element:
//   bits    = the low 32 bits of Philox's word 0, and 21 bits of word 1 above them: 53 bits, exact
//             in a double (the loop IR carries values as doubles): Math::philox;
//   rand    = bits >> 29 (the top 24) times 2^-24: a float in [0, 1), never 1 (Math::rand, float32
//             and the half types);
//   rand_f64 = bits times 2^-53, in [0, 1) (Math::rand_f64, float64);
//   randn   = Box-Muller over u1 = (low 32 bits + 1) 2^-32 in (0, 1] and u2 = top 21 bits 2^-21:
//             sqrt(-2 log u1) cos(2 pi u2) in double (Math::randn), its log and cos the polynomials
//             below (relative error about 1e-16), then rounded to the output's type.
// PyTorch's own streams are not reproduced (they differ between its CPU and CUDA generators too).
#pragma once
#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

namespace ls::philox {

// The seed every random op draws with: fixed, so runs reproduce (PyTorch's torch.manual_seed).
constexpr uint64_t kSeed = 0x5eed;

// The offset of one op's stream: FNV-1a over the op's name and its output's sizes, 52 bits (exact
// in a double). Two calls of one op and shape draw the same numbers (no generator state is kept).
inline uint64_t stream_offset(std::string_view what, const std::vector<int64_t>& shape) {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto eat = [&h](uint64_t v) { h = (h ^ v) * 0x100000001b3ULL; };
  for (char c : what) eat(static_cast<unsigned char>(c));
  for (int64_t d : shape) eat(static_cast<uint64_t>(d));
  return h & ((1ULL << 52) - 1);
}

// Philox4x32-10; returns the 53 bits described above.
inline uint64_t bits(uint64_t seed, uint64_t offset, uint64_t index) {
  uint32_t c0 = static_cast<uint32_t>(index), c1 = static_cast<uint32_t>(index >> 32), c2 = static_cast<uint32_t>(offset),
           c3 = static_cast<uint32_t>(offset >> 32), k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0, p1 = static_cast<uint64_t>(0xCD9E8D57u) * c2;
    const uint32_t h0 = static_cast<uint32_t>(p0 >> 32), l0 = static_cast<uint32_t>(p0);
    const uint32_t h1 = static_cast<uint32_t>(p1 >> 32), l1 = static_cast<uint32_t>(p1);
    c0 = h1 ^ c1 ^ k0;
    c1 = l1;
    c2 = h0 ^ c3 ^ k1;
    c3 = l0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return static_cast<uint64_t>(c0) | (static_cast<uint64_t>(c1 & 0x1FFFFFu) << 32);
}

inline float uniform_f32(uint64_t b) { return static_cast<float>(static_cast<double>(b >> 29) * 0x1p-24); }
inline double uniform_f64(uint64_t b) { return static_cast<double>(b) * 0x1p-53; }

// log(u) for u in (0, 1]: u = m 2^e with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s), s = (m - 1) / (m + 1).
inline double log_unit(double u) {
  int e = 0;
  double m = std::frexp(u, &e);
  if (m < 0.70710678118654752) m = m * 2.0, e = e - 1;
  const double f = m - 1.0, s = f / (2.0 + f), s2 = s * s;
  double p = 2.0 / 21.0;
  p = std::fma(p, s2, 2.0 / 19.0);
  p = std::fma(p, s2, 2.0 / 17.0);
  p = std::fma(p, s2, 2.0 / 15.0);
  p = std::fma(p, s2, 2.0 / 13.0);
  p = std::fma(p, s2, 2.0 / 11.0);
  p = std::fma(p, s2, 2.0 / 9.0);
  p = std::fma(p, s2, 2.0 / 7.0);
  p = std::fma(p, s2, 2.0 / 5.0);
  p = std::fma(p, s2, 2.0 / 3.0);
  p = std::fma(p, s2, 2.0);
  return std::fma(static_cast<double>(e), 0.69314718055994531, s * p);
}
// sin t and cos t for t in [0, pi/4]: Taylor polynomials to t^17 and t^18.
inline double sin_quarter(double t) {
  const double t2 = t * t;
  double p = 1.0 / 355687428096000.0;
  p = std::fma(p, t2, -1.0 / 1307674368000.0);
  p = std::fma(p, t2, 1.0 / 6227020800.0);
  p = std::fma(p, t2, -1.0 / 39916800.0);
  p = std::fma(p, t2, 1.0 / 362880.0);
  p = std::fma(p, t2, -1.0 / 5040.0);
  p = std::fma(p, t2, 1.0 / 120.0);
  p = std::fma(p, t2, -1.0 / 6.0);
  return std::fma(t * t2, p, t);
}
inline double cos_quarter(double t) {
  const double t2 = t * t;
  double p = -1.0 / 6402373705728000.0;
  p = std::fma(p, t2, 1.0 / 20922789888000.0);
  p = std::fma(p, t2, -1.0 / 87178291200.0);
  p = std::fma(p, t2, 1.0 / 479001600.0);
  p = std::fma(p, t2, -1.0 / 3628800.0);
  p = std::fma(p, t2, 1.0 / 40320.0);
  p = std::fma(p, t2, -1.0 / 720.0);
  p = std::fma(p, t2, 1.0 / 24.0);
  p = std::fma(p, t2, -0.5);
  return std::fma(t2, p, 1.0);
}
// cos(2 pi j 2^-21) for j in [0, 2^21): the quadrant from the top two bits, the angle within it
// folded to [0, pi/4].
inline double cos_turn21(uint64_t j) {
  const uint64_t q = j >> 19, r = j & 0x7FFFF;  // 2^19 steps a quadrant
  const bool fold = r > 0x40000;                // past half a quadrant: the complement's sine or cosine
  const double t = static_cast<double>(fold ? 0x80000 - r : r) * 0x1p-19 * 1.5707963267948966;
  const bool want_cos = (q & 1) == 0;  // quadrants 0, 2: cos of the angle; 1, 3: sin of it
  const double v = want_cos != fold ? cos_quarter(t) : sin_quarter(t);
  return q == 1 || q == 2 ? -v : v;
}
inline double normal(uint64_t b) {
  const double u1 = static_cast<double>((b & 0xFFFFFFFFu) + 1) * 0x1p-32;
  return std::sqrt(-2.0 * log_unit(u1)) * cos_turn21(b >> 32);
}

}  // namespace ls::philox
