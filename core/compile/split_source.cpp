#include "compile/split_source.h"

#include <algorithm>
#include <cstdlib>
#include <thread>
#include <sstream>

namespace ls {

std::vector<std::string> split_source(const std::string& source, std::vector<int> starts, int parts, const std::string& file,
                                      bool each_alone) {
  starts.erase(std::remove_if(starts.begin(), starts.end(), [](int l) { return l <= 1; }), starts.end());
  std::sort(starts.begin(), starts.end());
  each_alone = each_alone && parts >= static_cast<int>(starts.size());
  parts = std::min<int>(parts, static_cast<int>(starts.size()));
  if (parts <= 1) return {source};
  std::vector<std::string> lines;
  std::istringstream in(source);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  if (starts.back() > static_cast<int>(lines.size())) return {source};
  for (int l : starts)
    if (!lines[static_cast<size_t>(l - 2)].empty()) return {source};
  auto text = [&](int from, int to) {  // 1-based lines [from, to)
    std::string t;
    for (int l = from; l < to; ++l) t += lines[static_cast<size_t>(l - 1)] + "\n";
    return t;
  };
  const std::string prelude = "#line 1 \"" + file + "\"\n" + text(1, starts[0]);
  const int end = static_cast<int>(lines.size()) + 1;
  const double per_part = each_alone ? 0.0 : static_cast<double>(end - starts[0]) / parts;
  std::vector<std::string> units;
  int from = starts[0];
  for (size_t i = 1; i <= starts.size(); ++i) {
    const int to = i < starts.size() ? starts[i] : end;
    const bool last = i == starts.size();
    if (last || (to - from >= per_part && static_cast<int>(units.size()) < parts - 1)) {
      units.push_back(prelude + "#line " + std::to_string(from) + " \"" + file + "\"\n" + text(from, to));
      from = to;
    }
  }
  return units;
}

namespace {

// $LOWERSCOPE_COMPILE_THREADS where it is a positive number, else 0.
int threads_from_environment() {
  if (const char* e = std::getenv("LOWERSCOPE_COMPILE_THREADS")) {
    char* end = nullptr;
    const long n = std::strtol(e, &end, 10);
    if (end != e && *end == '\0' && n > 0 && n <= 4096) return static_cast<int>(n);
  }
  return 0;
}

int cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

}  // namespace

int compile_threads() {
  const int n = threads_from_environment();
  return n ? n : cores();
}

int nvrtc_programs_at_once() {
  const int n = threads_from_environment();
  return n ? n : std::min(3, cores());
}

}  // namespace ls
