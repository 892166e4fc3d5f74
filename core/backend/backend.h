// A device's backend: how the back half of the pipeline (schedule options, source, machine code,
// run) is done for one device. The pipeline asks the backend of PipelineOptions::device and never
// branches on the device itself (Inductor's BaseScheduling per device, tinygrad's Renderer).
//
//   backend/cpu/   C++ and OpenMP, compiled by Clang in-process or an external c++
//   backend/cuda/  CUDA C++, compiled by NVRTC, run through the driver API
//
// A backend object lives for one compile: it holds what runs beside the stages (the CUDA driver
// starting, the helper module compiling) and the compiled code until the run keeps it.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "exec/executor.h"
#include "record/compile_record.h"

namespace ls {

class StageLog;

// The front half (graph stages to source) of the ATen graph at other sizes of the user inputs,
// with the given options: dynamic shapes' samples, and a kept dynamic program's new sizes. Throws
// where those sizes do not compile. The pipeline's, handed to backends so they need not call it.
using FrontHalf = std::function<CompileResult(const Graph& aten, const std::vector<Shape>& shapes, const PipelineOptions& o)>;

// What a compile hands its backend at each step.
struct BackendJob {
  const PipelineOptions& o;
  CompileResult& r;
  StageLog& log;
  // The graph that was lowered to loops (prims, or Core ATen).
  const Graph* lowered = nullptr;
  // Dynamic shapes: the size symbols' values at the traced sizes (empty otherwise).
  std::vector<int64_t> sizes;
  FrontHalf front_half;
};

// How the run went, kernel by kernel.
struct BackendRun {
  Timings t;
  std::vector<std::string> how;  // per kernel: generated, library, cuBLAS, template, epilogue, ...
  std::vector<int> registers;    // per kernel (CUDA): registers a thread
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;

  // At the compile's start: throws where this build cannot compile for the device, and starts
  // what runs beside the graph stages.
  virtual void start(BackendJob& job) = 0;
  // How the scheduler groups and names this device's kernels.
  virtual ScheduleOptions schedule_options(const PipelineOptions& o) const = 0;
  // The kernels' source into r.source (and r.cuda), with whatever tuning comes before it.
  virtual void generate(BackendJob& job) = 0;
  virtual std::string source_title() const = 0;
  // The options the front half runs with at other sizes (tuned choices reused, not tuned again).
  virtual PipelineOptions sample_options(const BackendJob& job) const;
  // How a size-generic template takes the sizes.
  virtual SizeArgs size_args() const = 0;
  // The asm stage: the source compiled (and loaded where it can run), recorded.
  virtual void compile(BackendJob& job) = 0;
  // Waits for what the run needs; says why the compiled code cannot run here ("" where it can).
  virtual std::string cannot_run(BackendJob& job) = 0;
  // The run on the bound inputs: r.outputs, each kernel's time and how it ran; the mode's work
  // (reduce-overhead's graph, the CPU's max-autotune); the program kept (PipelineOptions::keep_program).
  virtual BackendRun run(BackendJob& job, const std::vector<Tensor>& inputs) = 0;
  // The kernel table's launch column for kernel k ("" where it has none).
  virtual std::string launch_text(const BackendJob& job, size_t k) const = 0;
  // After the compile, whatever it ended with (CUDA: the SASS listing made beside the run).
  virtual void finish(CompileResult&) {}
};

std::unique_ptr<Backend> make_backend(Device d);

// Whether this build can compile for the device (CUDA: NVRTC was found when it was configured).
bool can_compile_for(Device d);
// Starts the device's runtime ahead of compiles (CUDA: the driver and a context, about 0.15 s
// once a process), so that a timed compile does not include it.
void start_device(Device d);

// ---- For the backends' kept programs at new sizes (dynamic shapes) ----

// "s0=3, s1=40" (the dynamic symbols' values), or "the traced sizes".
std::string sizes_text(const SizeGeneric& g, const std::vector<int64_t>& v);

// A kept program's front half at sizes it has not run, checked to make the compiled template's
// code at those values (else GuardFailed, naming the line), and the graph it lowered.
struct AtNewSizes {
  CompileResult r;
  Graph lowered;
};
AtNewSizes front_half_at(const FrontHalf& front_half, const Graph& aten, const std::vector<Shape>& shapes, const PipelineOptions& o,
                         const SizeGeneric& plan, const std::vector<int64_t>& v);

// "new sizes s0=3: the compiled kernels reused, no compile (front half and check 2.1 ms)".
std::string new_sizes_note(const SizeGeneric& plan, const std::vector<int64_t>& v, std::chrono::steady_clock::time_point since,
                           const char* kernels);

}  // namespace ls
