#include "compile/phase_times.h"

#include <mutex>

namespace ls {
namespace {

struct Log {
  std::mutex m;
  std::vector<std::pair<std::string, double>> entries;
  size_t dropped = 0;  // entries removed from the front (the log keeps the last ones only)
};
Log& log() {
  static Log l;
  return l;
}
constexpr size_t kKeep = 1 << 16;

}  // namespace

size_t phase_mark() {
  Log& l = log();
  std::lock_guard<std::mutex> g(l.m);
  return l.dropped + l.entries.size();
}

void record_phase(std::string name, double ms) {
  Log& l = log();
  std::lock_guard<std::mutex> g(l.m);
  if (l.entries.size() >= kKeep) {
    l.entries.erase(l.entries.begin(), l.entries.begin() + kKeep / 2);
    l.dropped += kKeep / 2;
  }
  l.entries.emplace_back(std::move(name), ms);
}

std::vector<PhaseTime> phase_times_since(size_t mark) {
  Log& l = log();
  std::lock_guard<std::mutex> g(l.m);
  std::vector<PhaseTime> out;
  for (size_t i = mark > l.dropped ? mark - l.dropped : 0; i < l.entries.size(); ++i) {
    const std::string& name = l.entries[i].first;
    PhaseTime* p = nullptr;
    for (PhaseTime& t : out)
      if (t.name == name) p = &t;
    if (!p) p = &out.emplace_back(PhaseTime{name, 0, 0});
    p->ms += l.entries[i].second;
    ++p->count;
  }
  return out;
}

}  // namespace ls
