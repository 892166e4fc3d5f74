#include "exec/memory_fit.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>

namespace ls {

namespace {
int64_t add_saturating(int64_t a, int64_t b) {
  int64_t s = 0;
  return __builtin_add_overflow(a, b, &s) ? std::numeric_limits<int64_t>::max() : s;
}
}  // namespace

int64_t MemoryNeed::total() const { return add_saturating(buffers, extra); }

MemoryNeed memory_need(const LoopProgram& p, const Schedule& s) {
  const std::set<std::string> removed(s.memory.removed.begin(), s.memory.removed.end());
  MemoryNeed n;
  for (const LoopBuffer& b : p.buffers) {
    if (removed.count(b.name)) continue;
    const int64_t bytes = std::max<int64_t>(b.bytes(), 0);
    if (b.is_input) n.inputs = add_saturating(n.inputs, bytes);
    else n.buffers = add_saturating(n.buffers, bytes);
    if (b.is_output) n.outputs = add_saturating(n.outputs, bytes);
  }
  n.plan_peak = s.memory.peak_bytes;
  return n;
}

int64_t memory_available_override() {
  const char* v = std::getenv("LOWERSCOPE_MEMORY_AVAILABLE");
  if (!v || !*v) return -1;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  if (end == v || *end || n < 0) throw std::invalid_argument(std::string("LOWERSCOPE_MEMORY_AVAILABLE must be a number of bytes, not '") + v + "'");
  return n;
}

int64_t host_memory_available() {
  if (const int64_t o = memory_available_override(); o >= 0) return o;
  std::ifstream f("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (f >> key >> kb) {
    std::getline(f, unit);
    if (key == "MemAvailable:") return kb * 1024;
  }
  return -1;
}

std::string memory_text(int64_t b) {
  char t[64];
  const double x = static_cast<double>(b);
  if (b >= (int64_t(1) << 40)) std::snprintf(t, sizeof t, "%.1f TiB", x / (int64_t(1) << 40));
  else if (b >= (int64_t(1) << 30)) std::snprintf(t, sizeof t, "%.1f GiB", x / (1 << 30));
  else if (b >= (int64_t(1) << 20)) std::snprintf(t, sizeof t, "%.1f MiB", x / (1 << 20));
  else if (b >= 1024) std::snprintf(t, sizeof t, "%.1f KiB", x / 1024);
  else std::snprintf(t, sizeof t, "%lld bytes", static_cast<long long>(b));
  return t;
}

void refuse_if_too_large(const MemoryNeed& need, int64_t available, const std::string& where) {
  if (available < 0 || need.total() <= available) return;
  std::string what = "the model needs " + memory_text(need.total()) + " for its buffers (memory plan peak " + memory_text(need.plan_peak);
  if (need.extra) what += "; " + memory_text(need.extra) + " of it " + need.extra_what;
  what += "), " + memory_text(available) + " available " + where + ": refused before allocating them";
  throw MemoryRefused(what);
}

}  // namespace ls
