// Buffer names as dense ids (0, 1, 2, ... in the order first seen), for the passes that number the
// loop program's buffers. Lowering names its buffers "buf<k>" after the node that writes them: such
// a name finds its id in an array indexed by k, any other name (a graph input, "buf3_1") in a hash
// map. (A string-keyed hash map alone missed the cache on nearly every look-up once the program
// outgrew it: a tenth of the fused stage on a chain of 40,000, and growing faster than the graph.)
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ls {

class BufferIds {
 public:
  // Programs of about this many buffers: numbers up to a few times it go to the array.
  void reserve(size_t n) {
    limit_ = 4 * n + 1024;
    by_number_.reserve(n);
  }
  // The id of `name`, given the next id (size()) if it has none yet; whether it was new.
  std::pair<int, bool> add(const std::string& name) {
    const int next = static_cast<int>(names_.size());
    size_t k = 0;
    if (number(name, k)) {
      if (by_number_.size() <= k) by_number_.resize(k + 1, -1);
      int& slot = by_number_[k];
      if (slot >= 0) return {slot, false};
      slot = next;
    } else {
      const auto [it, added] = other_.emplace(name, next);
      if (!added) return {it->second, false};
    }
    names_.push_back(name);
    return {next, true};
  }
  int find(const std::string& name) const {  // -1: none
    size_t k = 0;
    if (number(name, k)) return k < by_number_.size() ? by_number_[k] : -1;
    const auto it = other_.find(name);
    return it == other_.end() ? -1 : it->second;
  }
  const std::string& name(int id) const { return names_[static_cast<size_t>(id)]; }
  size_t size() const { return names_.size(); }

 private:
  // "buf" and a number written without leading zeros, below the array's limit.
  bool number(const std::string& s, size_t& k) const {
    if (s.size() < 4 || s.size() > 13 || s[0] != 'b' || s[1] != 'u' || s[2] != 'f' || (s[3] == '0' && s.size() > 4)) return false;
    uint64_t v = 0;
    for (size_t i = 3; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      v = v * 10 + static_cast<uint64_t>(s[i] - '0');
    }
    if (v >= limit_) return false;
    k = static_cast<size_t>(v);
    return true;
  }
  uint64_t limit_ = 1024;
  std::vector<int> by_number_;  // k -> the id of "buf<k>", -1 for none
  std::unordered_map<std::string, int> other_;
  std::vector<std::string> names_;  // id -> name
};

}  // namespace ls
