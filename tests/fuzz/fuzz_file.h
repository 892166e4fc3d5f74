// Writes a fuzz input to a private temporary file, for importers that read files.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>

inline std::string fuzz_file(const uint8_t* data, size_t size, const char* ext) {
  const std::string path = "/tmp/lowerscope_fuzz_" + std::to_string(getpid()) + ext;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}
