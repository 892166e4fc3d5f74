#include "compile/disk_cache.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace ls {

std::string fnv1a_hex(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::filesystem::path cache_folder(const std::string& chosen, const std::string& kind) {
  std::string d = chosen;
  if (d.empty())
    if (const char* e = std::getenv("LOWERSCOPE_CACHE_DIR")) d = e;
  if (d == "off") return {};
  if (!d.empty()) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "lowerscope" / kind;
  if (const char* h = std::getenv("HOME"); h && *h) return std::filesystem::path(h) / ".cache" / "lowerscope" / kind;
  return {};
}

bool DiskCache::has(const std::string& ext, const std::string& source) const {
  std::error_code ec;
  return !dir_.empty() && std::filesystem::exists(path(ext), ec) && read_file(path(source_ext_)) == source;
}

bool DiskCache::put(const std::vector<std::pair<std::string, std::string>>& files, const std::string& source) const {
  std::error_code ec;
  if (dir_.empty() || (std::filesystem::create_directories(dir_, ec), ec)) return false;
  const std::string tmp = "." + std::to_string(getpid());
  auto write = [&](const std::string& ext, const std::string& bytes) {
    { std::ofstream(path(ext).string() + tmp, std::ios::binary) << bytes; }
    std::filesystem::rename(path(ext).string() + tmp, path(ext), ec);
    return !ec;
  };
  for (const auto& [ext, bytes] : files)
    if (!write(ext, bytes)) return false;
  return write(source_ext_, source);
}

}  // namespace ls
