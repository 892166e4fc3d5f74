// Records each stage of a compile into its CompileResult: its IR as text and dot, its time, and
// whether it changed anything. The pipeline and the backends add stages through it; `step` is
// also where a cancelled compile stops (between stages).
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "record/compile_record.h"

namespace ls {

// Thrown by StageLog::step when the compile was cancelled.
struct Cancelled {};

class StageLog {
 public:
  StageLog(CompileResult& r, const std::function<bool()>& cancelled) : r_(r), cancelled_(cancelled) {}

  // Runs one stage's work, timed; throws Cancelled first if the compile was cancelled.
  template <typename F>
  auto step(const std::string& name, F&& f) {
    enter(name);
    const auto t0 = std::chrono::steady_clock::now();
    auto out = f();
    last_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return out;
  }
  // The stage now running (named in errors); throws Cancelled if the compile was cancelled.
  void enter(const std::string& name);

  // A graph stage (text, dot, op histogram), timed with the last step.
  void graph(const std::string& name, const std::string& title, const Graph& g, const DotMarks& marks = {},
             const std::string& note = {});
  // Any other stage, timed with the last step.
  void add(Stage s);

  std::string current;
  double last_ms = 0;
  bool recording = true;  // false: stages are not recorded (dynamic shapes' sample runs)
  bool text = true;       // false: stages are recorded without text and dot (PipelineOptions::stage_text)

 private:
  CompileResult& r_;
  std::function<bool()> cancelled_;
  uint64_t last_print_hash_ = 0;  // the last graph stage's print_hash
};

}  // namespace ls
