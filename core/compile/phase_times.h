// Where compile time goes, below the stages: named phases (an NVRTC compile, the CUDA driver's
// start, loading a module, max-autotune's candidate runs) timed where they happen, summed by name.
// Process-wide and thread-safe (NVRTC compiles run on several threads at once, so a phase's sum
// can exceed the wall time around it); a compile reads the phases recorded since it began, as
// torch._dynamo.utils.compile_times() reports Dynamo's and Inductor's.
#pragma once
#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace ls {

struct PhaseTime {
  std::string name;
  double ms = 0;  // summed over its occurrences
  int count = 0;
};

// A mark: phase_times_since(mark) gives what was recorded after it.
size_t phase_mark();
std::vector<PhaseTime> phase_times_since(size_t mark);  // summed by name, in order of first occurrence
void record_phase(std::string name, double ms);

class PhaseTimer {
 public:
  explicit PhaseTimer(std::string name) : name_(std::move(name)), t0_(std::chrono::steady_clock::now()) {}
  ~PhaseTimer() { stop(); }
  void stop() {
    if (stopped_) return;
    stopped_ = true;
    record_phase(std::move(name_), std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count());
  }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  std::string name_;
  bool stopped_ = false;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace ls
