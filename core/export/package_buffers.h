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
// "i4", "b1" bool, "u1".
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
  int64_t itemsize() const { return dtype.at(1) - '0'; }
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
  const std::string want_dtype = "'<" + b.dtype + "'", want_dtype_bool = "'|" + b.dtype + "'";
  if (header.find(want_dtype) == std::string::npos && header.find(want_dtype_bool) == std::string::npos)
    throw std::runtime_error(path + ": expected dtype " + b.dtype + ", header " + header);
  if (without_spaces(header).find("'fortran_order':False") == std::string::npos) throw std::runtime_error(path + ": Fortran order is not supported");
  if (without_spaces(header).find("'shape':" + without_spaces(shape_text(b.shape))) == std::string::npos)
    throw std::runtime_error(path + ": expected shape " + shape_text(b.shape) + ", header " + header);
  f.read(reinterpret_cast<char*>(b.bytes.data()), static_cast<std::streamsize>(b.bytes.size()));
  if (!f) throw std::runtime_error(path + ": file too short");
}

inline void save_npy(const std::string& path, const Buffer& b) {
  std::string header = "{'descr': '" + std::string(b.itemsize() == 1 ? "|" : "<") + b.dtype +
                       "', 'fortran_order': False, 'shape': " + shape_text(b.shape) + ", }";
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(path + ": cannot write");
  f.write("\x93NUMPY\x01\x00", 8);
  const uint16_t h = static_cast<uint16_t>(header.size());
  f.write(reinterpret_cast<const char*>(&h), 2);
  f << header;
  f.write(reinterpret_cast<const char*>(b.bytes.data()), static_cast<std::streamsize>(b.bytes.size()));
}

// Compares `got` with the expected file, as Lowerscope's check does: |a - b| <= 1e-4 + 1e-3 * |b|.
inline bool check_against(const std::string& path, Buffer& got, double& max_err) {
  Buffer want(got.name, got.dtype, got.shape);
  load_npy(path, want);
  max_err = 0;
  bool ok = true;
  if (got.dtype != "f4") return std::memcmp(got.bytes.data(), want.bytes.data(), got.bytes.size()) == 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double a = got.f32()[i], b = want.f32()[i], e = std::fabs(a - b);
    if (std::isnan(a) != std::isnan(b)) ok = false;
    if (!std::isnan(e)) max_err = std::max(max_err, e);
    if (e > 1e-4 + 1e-3 * std::fabs(b)) ok = false;
  }
  return ok;
}

inline double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace lsrt
