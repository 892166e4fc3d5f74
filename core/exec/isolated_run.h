// Compiled CPU kernels run in a worker process (`lowerscope-runner`, next to the executable), so a
// kernel that crashes or hangs never takes the app down. The parent writes a plan (what
// CpuExecutable needs of the loop IR, the schedule and the source: buffers, kernels, the library
// calls' arguments), the compiled code (the JIT's objects or the external compiler's library) and
// the inputs into one shared-memory file; the worker loads the code, runs the model once (the
// outputs) and times it with CpuExecutable::benchmark inside itself, so the timings mean what the
// in-process ones mean; the parent reads outputs and timings back. Before each kernel the worker
// writes its index into the shared header: a worker killed by a signal is reported as
// "kernel K faulted: SIGSEGV", one that stays in one kernel past the limit is killed and reported
// as "kernel K ran past N s". Each run spawns a fresh worker.
//
// Test-only: LOWERSCOPE_FAULT=segv:KERNEL or hang:KERNEL (a kernel's name, e.g. cpp_fused_add_0)
// makes that generated kernel fault, in the worker only. Tests: tests/cpu/test_isolation.cpp.
// (cuda-illegal:KERNEL is the CUDA backend's: backend/cuda/cuda_backend.cpp.)
#pragma once
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "codegen/cpp_codegen.h"
#include "exec/executor.h"
#include "loop/loop_ir.h"
#include "sched/schedule.h"
#include "tensor/tensor.h"

namespace ls {

struct IsolationOptions {
  bool enabled = false;        // off: kernels run in this process
  double time_limit_s = 60;    // the longest one kernel may run before the worker is killed
  std::string runner;          // the worker's path; empty: lowerscope-runner next to this executable, or $LOWERSCOPE_RUNNER
};

// The process-wide choice, read by the CPU backend's run. Until set: on where the worker is found
// (next to the executable: lowerscope and lowerscope-cli; not the test programs), unless
// $LOWERSCOPE_IN_PROCESS is set (not "0"). The CLI sets it from --in-process and --time-limit.
void set_cpu_isolation(const IsolationOptions& o);
IsolationOptions cpu_isolation();

// A kernel that faulted or ran past the time limit in the worker, or faulted on the GPU
// ("kernel K faulted: CUDA illegal address (...)", exec/cuda_executor.cpp); the message names it.
struct KernelFault : std::runtime_error {
  KernelFault(const std::string& what, std::string kernel) : std::runtime_error(what), kernel(std::move(kernel)) {}
  std::string kernel;  // empty where the worker died outside any kernel
};
// Whether a compile's error text is a KernelFault's ("kernel K faulted: ..." / "kernel K ran past ...").
bool is_kernel_fault(const std::string& error);

struct IsolatedRun {
  std::vector<Tensor> outputs;     // of the first run
  Timings t;                       // CpuExecutable::benchmark's, taken in the worker
  std::vector<bool> ran_inside;    // CpuExecutable::ran_inside()
  std::vector<bool> runs_template; // CpuExecutable::runs_template(k)
  double worker_ms = 0;            // the whole round trip: spawn, load, run, benchmark, read back
};

// `objects`: CpuCompileResult::objects (kernels.o, kernels.N.o, or kernels.so). Throws KernelFault
// for a fault or a time-out; the worker's own errors (an index out of range, a bad input) as the
// in-process run throws them (std::out_of_range, std::invalid_argument, std::runtime_error).
IsolatedRun run_isolated(const LoopProgram& p, const Schedule& s, const GeneratedSource& src,
                         const std::vector<std::pair<std::string, std::string>>& objects, const std::vector<int64_t>& sizes,
                         const std::vector<Tensor>& inputs, const TimingOptions& timing, const IsolationOptions& o);

// The worker's side: `lowerscope-runner --shm FD` (app/runner_main.cpp). Returns the exit status.
int runner_main(int argc, char** argv);

}  // namespace ls
