#include "tensor/npy.h"

#include <cstring>
#include <fstream>
#include <regex>
#include <stdexcept>

namespace ls {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": not a usable .npy file: " + what);
}

DType parse_descr(const std::string& path, const std::string& d) {
  if (d == "<f4") return DType::f32;
  if (d == "<f8") return DType::f64;
  if (d == "<i8") return DType::i64;
  if (d == "<i4") return DType::i32;
  if (d == "|b1") return DType::b8;
  if (d == "|u1") return DType::u8;
  if (d == "<f2") return DType::f16;
  if (d == "<c8") return DType::c64;
  if (d == "<c16") return DType::c128;
  fail(path, "element type '" + d + "' is not supported (f2, f4, f8, c8, c16, i8, i4, b1, u1 are; bfloat16 is given as f4)");
}

}  // namespace

std::string descr_of(DType t) {
  switch (t) {
    case DType::f32: return "<f4";
    case DType::f64: return "<f8";
    case DType::i64: return "<i8";
    case DType::i32: return "<i4";
    case DType::b8: return "|b1";
    case DType::u8: return "|u1";
    case DType::f16: return "<f2";
    case DType::bf16: return "<f4";  // .npy has no bfloat16: written as float32 (exactly)
    case DType::c64: return "<c8";
    case DType::c128: return "<c16";
  }
  return "";
}

Tensor load_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(path + ": cannot open file");
  char magic[8];
  if (!f.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) fail(path, "missing \\x93NUMPY magic");
  const int major = static_cast<unsigned char>(magic[6]);
  uint32_t hlen = 0;
  if (major == 1) {
    unsigned char b[2];
    if (!f.read(reinterpret_cast<char*>(b), 2)) fail(path, "truncated header length");
    hlen = b[0] | (b[1] << 8);
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    if (!f.read(reinterpret_cast<char*>(b), 4)) fail(path, "truncated header length");
    hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (uint32_t(b[3]) << 24);
  } else {
    fail(path, "format version " + std::to_string(major) + " is unknown");
  }
  if (hlen > (1u << 20)) fail(path, "header of " + std::to_string(hlen) + " bytes is implausibly large");
  std::string header(hlen, '\0');
  if (!f.read(header.data(), hlen)) fail(path, "truncated header");

  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([^']*)')"))) fail(path, "header has no 'descr'");
  const DType dtype = parse_descr(path, m[1]);
  if (std::regex_search(header, m, std::regex(R"('fortran_order'\s*:\s*True)"))) fail(path, "Fortran order is not supported");
  if (!std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))"))) fail(path, "header has no 'shape'");
  Shape shape;
  const std::string dims = m[1];
  std::regex num(R"(\d+)");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), num); it != std::sregex_iterator(); ++it) {
    const std::string s = it->str();
    if (s.size() > 12) fail(path, "dimension " + s + " is too large");
    shape.push_back(std::stoll(s));
  }
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d > 0 && n > (int64_t(1) << 40) / d) fail(path, "shape " + shape_str(shape) + " is too large");
    n *= d;
  }
  // The data must be in the file before its memory is taken (a 90-byte file said 6.8 GB).
  const std::streampos data_at = f.tellg();
  f.seekg(0, std::ios::end);
  const int64_t left = static_cast<int64_t>(f.tellg() - data_at), need = n * static_cast<int64_t>(dtype_size(dtype));
  f.seekg(data_at);
  if (left < need) fail(path, "data ends before the " + std::to_string(need) + " bytes that shape " + shape_str(shape) + " needs");
  Tensor t(dtype, shape);
  if (!f.read(static_cast<char*>(t.data()), t.nbytes()))
    fail(path, "data ends before the " + std::to_string(t.nbytes()) + " bytes that shape " + shape_str(shape) + " needs");
  return t;
}

void save_npy(const std::string& path, const Tensor& given) {
  const Tensor t = given.dtype() == DType::bf16 ? cast(given, DType::f32) : given;
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i) shape += std::to_string(t.shape()[i]) + (t.shape().size() == 1 ? "," : i + 1 < t.shape().size() ? ", " : "");
  shape += ")";
  std::string header = "{'descr': '" + descr_of(t.dtype()) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(path + ": cannot write file");
  const uint16_t hlen = static_cast<uint16_t>(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  const char lenb[2] = {static_cast<char>(hlen & 0xff), static_cast<char>(hlen >> 8)};
  f.write(lenb, 2);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  f.write(static_cast<const char*>(t.data()), t.nbytes());
}

}  // namespace ls
