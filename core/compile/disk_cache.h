// Compiled code on disk, shared by the CPU and CUDA compile paths. Each entry is files key.<ext>
// beside key.src, its source. The source is written last and compared on every lookup, so an
// entry counts only when complete and only for the source it was made from; every file is renamed
// into place, so no reader sees half of one. A folder that cannot be written is skipped.
#pragma once
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace ls {

// FNV-1a, 64 bits, as hex: the cache key (a hit is confirmed by comparing the stored source).
std::string fnv1a_hex(const std::string& s);
std::string read_file(const std::filesystem::path& p);

// The cache folder for one kind of code ("cpu", "cuda"): `chosen` if set, else
// $LOWERSCOPE_CACHE_DIR, else $XDG_CACHE_HOME/lowerscope/<kind>, else ~/.cache/lowerscope/<kind>.
// "off" (chosen or in the environment) gives an empty path: no cache.
std::filesystem::path cache_folder(const std::string& chosen, const std::string& kind);

class DiskCache {
 public:
  DiskCache(std::filesystem::path dir, std::string key, std::string source_ext = ".cpp")
      : dir_(std::move(dir)), key_(std::move(key)), source_ext_(std::move(source_ext)) {}
  bool has(const std::string& ext, const std::string& source) const;
  std::filesystem::path path(const std::string& ext) const { return dir_ / (key_ + ext); }
  std::string get(const std::string& ext) const { return read_file(path(ext)); }
  // Writes the entry's files, then its source; false when the folder cannot be written.
  bool put(const std::vector<std::pair<std::string, std::string>>& files, const std::string& source) const;

 private:
  std::filesystem::path dir_;
  std::string key_, source_ext_;
};

}  // namespace ls
