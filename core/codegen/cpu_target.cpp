#include "codegen/cpu_target.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

namespace ls {
namespace {

CpuTarget host_target() {
  CpuTarget t;
  t.pool_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  t.threads = t.pool_threads;
  if (const char* e = std::getenv("OMP_NUM_THREADS"); e && std::atoi(e) > 0) t.threads = std::atoi(e);
#if defined(__x86_64__) || defined(__i386__)
  t.vector_floats = __builtin_cpu_supports("avx512f") ? 16 : __builtin_cpu_supports("avx2") ? 8 : 4;
#endif
  return t;
}

// "threads=16,pool=16,vector=16": each key optional, the host's value where absent.
CpuTarget pinned(CpuTarget t, const std::string& spec) {
  size_t at = 0;
  while (at < spec.size()) {
    const size_t comma = std::min(spec.find(',', at), spec.size());
    const std::string item = spec.substr(at, comma - at);
    const size_t eq = item.find('=');
    const int v = eq == std::string::npos ? 0 : std::atoi(item.c_str() + eq + 1);
    const std::string key = item.substr(0, eq);
    if (v <= 0 || (key != "threads" && key != "pool" && key != "vector"))
      throw std::invalid_argument("LOWERSCOPE_CPU_TARGET: '" + item + "' is not threads=N, pool=N or vector=N");
    (key == "threads" ? t.threads : key == "pool" ? t.pool_threads : t.vector_floats) = v;
    at = comma + 1;
  }
  return t;
}

}  // namespace

const CpuTarget& cpu_target() {
  static const CpuTarget t = [] {
    const char* e = std::getenv("LOWERSCOPE_CPU_TARGET");
    return e && *e ? pinned(host_target(), e) : host_target();
  }();
  return t;
}

}  // namespace ls
