// Lowerscope package runtime, the part every package shares whatever its device: host buffers,
// .npy files, the check against expected outputs, and a clock.
// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace lsrt {

// A buffer: contiguous elements of one dtype, as numpy spells it: "f4" float32, "f8", "i8" int64,
// "i4", "b1" bool, "u1", "f2" float16; and "bf16", which .npy lacks: two bytes an element here,
// float32 in its files (as Lowerscope writes them; exact both ways for bfloat16's values).
struct Buffer {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::vector<unsigned char> bytes;
  Buffer(std::string n, std::string dt, std::vector<int64_t> s) : name(std::move(n)), dtype(std::move(dt)), shape(std::move(s)) {
    bytes.assign(static_cast<size_t>(numel() * itemsize()), 0);
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int64_t itemsize() const { return dtype == "bf16" ? 2 : dtype.at(1) - '0'; }
  // The dtype of its .npy files.
  std::string file_dtype() const { return dtype == "bf16" ? "f4" : dtype; }
  void* data() { return bytes.data(); }
  float* f32() { return reinterpret_cast<float*>(bytes.data()); }
};

// As numpy writes a shape: "(64, 512)", "(4,)", "()".
inline std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "(";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + (s.size() == 1 ? ",)" : ")");
}

inline std::string without_spaces(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
  return s;
}

// bfloat16 <-> float32 (round to nearest even, NaN kept quiet), and float16 -> float32.
inline uint16_t bf16_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
inline float float_of_bf16(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float float_of_f16(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  float f;
  if (exp == 0) {  // zero or subnormal: man * 2^-24
    f = std::ldexp(static_cast<float>(man), -24);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    u |= sign;
    std::memcpy(&f, &u, 4);
    return f;
  }
  const uint32_t u = sign | (exp == 31 ? 0x7f800000u | (man << 13) : ((exp + 112u) << 23) | (man << 13));
  std::memcpy(&f, &u, 4);
  return f;
}
// float32 -> float16, round to nearest even (subnormals, overflow to infinity, NaN kept quiet).
inline uint16_t f16_of(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // 65520 and up: infinity
  if (ax < 0x38800000u) {                                              // below 2^-14: a subnormal (or zero)
    float mag;
    std::memcpy(&mag, &ax, 4);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(mag * 16777216.0f)));
  }
  uint32_t h = (((ax >> 23) - 112u) << 10) | ((ax & 0x7fffffu) >> 13);
  const uint32_t rest = ax & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry may reach the exponent: still right
  return static_cast<uint16_t>(sign | h);
}
// Element k of a floating-point buffer as a double.
inline double element(const Buffer& b, int64_t k) {
  const unsigned char* p = b.bytes.data() + k * b.itemsize();
  if (b.dtype == "f4") return *reinterpret_cast<const float*>(p);
  if (b.dtype == "f8") return *reinterpret_cast<const double*>(p);
  if (b.dtype == "bf16") return float_of_bf16(*reinterpret_cast<const uint16_t*>(p));
  return float_of_f16(*reinterpret_cast<const uint16_t*>(p));
}

// A half buffer's elements as float32 (library calls compute in float32, as PyTorch's do for
// bfloat16 and float16 on the CPU), and float32 results rounded back into a half buffer.
inline std::vector<float> widened(const Buffer& b) {
  std::vector<float> w(static_cast<size_t>(b.numel()));
  for (size_t k = 0; k < w.size(); ++k) w[k] = static_cast<float>(element(b, static_cast<int64_t>(k)));
  return w;
}
inline void narrow_into(const std::vector<float>& w, Buffer& b) {
  uint16_t* h = reinterpret_cast<uint16_t*>(b.bytes.data());
  for (size_t k = 0; k < w.size(); ++k) h[k] = b.dtype == "bf16" ? bf16_of(w[k]) : f16_of(w[k]);
}

// Reads an .npy file into `b`, which must have the same dtype and shape.
inline void load_npy(const std::string& path, Buffer& b) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(path + ": cannot read");
  char magic[8];
  f.read(magic, 8);
  if (!f || std::memcmp(magic, "\x93NUMPY", 6) != 0) throw std::runtime_error(path + ": not an .npy file");
  uint32_t hlen = 0;
  if (magic[6] == 1) {
    uint16_t h = 0;
    f.read(reinterpret_cast<char*>(&h), 2);
    hlen = h;
  } else {
    f.read(reinterpret_cast<char*>(&hlen), 4);
  }
  std::string header(hlen, ' ');
  f.read(header.data(), hlen);
  const std::string want_dtype = "'<" + b.file_dtype() + "'", want_dtype_bool = "'|" + b.file_dtype() + "'";
  if (header.find(want_dtype) == std::string::npos && header.find(want_dtype_bool) == std::string::npos)
    throw std::runtime_error(path + ": expected dtype " + b.file_dtype() + ", header " + header);
  if (without_spaces(header).find("'fortran_order':False") == std::string::npos) throw std::runtime_error(path + ": Fortran order is not supported");
  if (without_spaces(header).find("'shape':" + without_spaces(shape_text(b.shape))) == std::string::npos)
    throw std::runtime_error(path + ": expected shape " + shape_text(b.shape) + ", header " + header);
  if (b.dtype == "bf16") {  // float32 in the file, rounded as torch's .to(torch.bfloat16)
    std::vector<float> wide(static_cast<size_t>(b.numel()));
    f.read(reinterpret_cast<char*>(wide.data()), static_cast<std::streamsize>(wide.size() * 4));
    for (size_t k = 0; k < wide.size(); ++k) reinterpret_cast<uint16_t*>(b.bytes.data())[k] = bf16_of(wide[k]);
  } else {
    f.read(reinterpret_cast<char*>(b.bytes.data()), static_cast<std::streamsize>(b.bytes.size()));
  }
  if (!f) throw std::runtime_error(path + ": file too short");
}

inline void save_npy(const std::string& path, const Buffer& b) {
  std::string header = "{'descr': '" + std::string(b.itemsize() == 1 ? "|" : "<") + b.file_dtype() +
                       "', 'fortran_order': False, 'shape': " + shape_text(b.shape) + ", }";
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(path + ": cannot write");
  f.write("\x93NUMPY\x01\x00", 8);
  const uint16_t h = static_cast<uint16_t>(header.size());
  f.write(reinterpret_cast<const char*>(&h), 2);
  f << header;
  if (b.dtype == "bf16") {
    std::vector<float> wide(static_cast<size_t>(b.numel()));
    for (size_t k = 0; k < wide.size(); ++k) wide[k] = float_of_bf16(reinterpret_cast<const uint16_t*>(b.bytes.data())[k]);
    f.write(reinterpret_cast<const char*>(wide.data()), static_cast<std::streamsize>(wide.size() * 4));
  } else {
    f.write(reinterpret_cast<const char*>(b.bytes.data()), static_cast<std::streamsize>(b.bytes.size()));
  }
}

// Compares `got` with the expected file, as Lowerscope's check does: |a - b| <= atol + rtol * |b|,
// with 1e-4 and 1e-3 for float32 and float64, and PyTorch's assert_close tolerances for float16
// (1e-5, 1e-3) and bfloat16 (1e-5, 1.6e-2). Other dtypes must match exactly.
inline bool check_against(const std::string& path, Buffer& got, double& max_err) {
  Buffer want(got.name, got.dtype, got.shape);
  load_npy(path, want);
  max_err = 0;
  bool ok = true;
  const bool floating = got.dtype == "f4" || got.dtype == "f8" || got.dtype == "f2" || got.dtype == "bf16";
  if (!floating) return std::memcmp(got.bytes.data(), want.bytes.data(), got.bytes.size()) == 0;
  const double atol = got.itemsize() == 2 ? 1e-5 : 1e-4, rtol = got.dtype == "bf16" ? 1.6e-2 : 1e-3;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double a = element(got, i), b = element(want, i), e = std::fabs(a - b);
    if (std::isnan(a) != std::isnan(b)) ok = false;
    if (!std::isnan(e)) max_err = std::max(max_err, e);
    if (e > atol + rtol * std::fabs(b)) ok = false;
  }
  return ok;
}

inline double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace lsrt
