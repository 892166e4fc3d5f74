// The tensors of the generated test corpora (tests/data/opinfo, tests/data/onnx_ops), as the
// GPU machine's scripts write them: {"dtype": "f32", "shape": [2, 3], "data": base64 of
// little-endian bytes}. Shared by test_opinfo and test_onnx_ops.
#pragma once
#include <cctype>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tensor/dtype.h"
#include "tensor/tensor.h"

namespace ls::test_data {

inline std::vector<uint8_t> base64_decode(const std::string& s) {
  static const std::string chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<uint8_t> out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    if (c == '=') break;
    const auto p = chars.find(c);
    if (p == std::string::npos) {
      if (std::isspace(static_cast<unsigned char>(c))) continue;
      throw std::runtime_error(std::string("bad base64 character '") + c + "'");
    }
    acc = (acc << 6) | static_cast<uint32_t>(p);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>((acc >> bits) & 0xff));
    }
  }
  return out;
}

inline Tensor decode_tensor(const nlohmann::json& j) {
  const std::string dt = j.at("dtype").get<std::string>();
  const std::optional<DType> t = dtype_from_short(dt);
  if (!t) throw std::runtime_error("unsupported dtype " + dt);
  Shape shape = j.at("shape").get<Shape>();
  for (int64_t d : shape)
    if (d < 0) throw std::runtime_error("negative dimension in shape " + shape_str(shape));
  Tensor x(*t, shape);
  const std::vector<uint8_t> bytes = base64_decode(j.at("data").get<std::string>());
  if (static_cast<int64_t>(bytes.size()) != x.nbytes())
    throw std::runtime_error("data holds " + std::to_string(bytes.size()) + " bytes, " + dt + shape_str(shape) + " needs " +
                             std::to_string(x.nbytes()));
  if (!bytes.empty()) std::memcpy(x.data(), bytes.data(), bytes.size());
  return x;
}

}  // namespace ls::test_data
