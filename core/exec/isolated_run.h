// Compiled kernels run in a worker process (`lowerscope-runner`, next to the executable), so a
// kernel that crashes or hangs never takes the app down.
//
// CPU: the parent writes a plan (what CpuExecutable needs of the loop IR, the schedule and the
// source: buffers, kernels, the library calls' arguments), the compiled code (the JIT's objects or
// the external compiler's library) and the inputs into one shared-memory file; the worker loads
// the code, runs the model once (the outputs) and times it with CpuExecutable::benchmark inside
// itself, so the timings mean what the in-process ones mean; the parent reads outputs and timings
// back. Before each kernel the worker writes its index into the shared header: a worker killed by
// a signal is reported as "kernel K faulted: SIGSEGV", one that stays in one kernel past the
// limit is killed and reported as "kernel K ran past N s". Each run spawns a fresh worker.
//
// CUDA (`lowerscope-runner --cuda`): the same, with the cubins (the model's, the helpers', the
// attention kernels') and what CudaExecutable needs of the generated code (launches, max-autotune's
// choices); the worker makes its own context, refuses a model too large for the GPU's free memory
// (cuMemGetInfo), runs the model once with a synchronization after every kernel, then times it
// with CUDA events (and reduce-overhead's CUDA graph) as the in-process run does. After an illegal
// address a process's CUDA is lost for good (the driver gives 700 even to a fresh context): here
// only the worker goes, reported as "kernel K faulted: CUDA illegal address (...)", and the next
// run's worker has a fresh context. The checked run names the kernel that faulted exactly; in the
// timed runs, which do not wait for each kernel, a fault or a hang names the last kernel launched
// and says so.
//
// Test-only: LOWERSCOPE_FAULT=segv:KERNEL or hang:KERNEL (a kernel's name, e.g. cpp_fused_add_0)
// makes that generated kernel fault, in the worker only; cuda-illegal:KERNEL and cuda-hang:KERNEL
// are the CUDA backend's (written into the compiled code: backend/cuda/cuda_backend.cpp).
// Tests: tests/cpu/test_isolation.cpp, tests/cuda/test_cuda.cpp ("worker" cases).
#pragma once
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "codegen/cpp_codegen.h"
#include "codegen/cuda_codegen.h"
#include "exec/executor.h"
#include "exec/memory_fit.h"
#include "loop/loop_ir.h"
#include "sched/schedule.h"
#include "tensor/tensor.h"

namespace ls {

struct IsolationOptions {
  bool enabled = false;        // off: kernels run in this process
  double time_limit_s = 60;    // the longest one kernel may run before the worker is killed
  std::string runner;          // the worker's path; empty: lowerscope-runner next to this executable, or $LOWERSCOPE_RUNNER
};

// The process-wide choice, read by the CPU and CUDA backends' runs. Until set: on where the worker
// is found (next to the executable: lowerscope and lowerscope-cli; not the test programs), unless
// $LOWERSCOPE_IN_PROCESS is set (not "0"). The CLI sets it from --in-process and --time-limit.
void set_kernel_isolation(const IsolationOptions& o);
IsolationOptions kernel_isolation();
// The same choice under its first name (it covered the CPU alone then).
inline void set_cpu_isolation(const IsolationOptions& o) { set_kernel_isolation(o); }
inline IsolationOptions cpu_isolation() { return kernel_isolation(); }

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

// The CUDA code a worker loads: the model's cubin, the helper kernels' and, where the model has
// attention kernels, theirs.
struct CudaCubins {
  std::string kernels, helpers, attention;
};

struct CudaIsolatedRun {
  std::vector<Tensor> outputs;     // of the checked run
  Timings t;                       // CudaExecutable::benchmark's, taken in the worker (CUDA events)
  std::vector<std::string> how;    // CudaExecutable::how
  std::vector<int> registers;      // CudaExecutable::registers
  // reduce-overhead (`graph`): why no CUDA graph was captured ("" where one was), its nodes, the
  // median of whole-model replays (checked first to give the outputs bit for bit).
  std::string graph_why;
  size_t graph_nodes = 0;
  double graph_ms = 0;
  double worker_ms = 0;            // the whole round trip: spawn, context, load, run, benchmark, read back
};

// `need`: the memory plan's (exec/memory_fit.h), refused in the worker against the GPU's free
// memory before any buffer is allocated (MemoryRefused, as in-process). `sizes`: a dynamic
// template's size symbols (CudaExecutable's). Throws KernelFault for a fault or a time-out; the
// worker's other errors as the in-process run throws them.
CudaIsolatedRun run_cuda_isolated(const LoopProgram& p, const Schedule& s, const GeneratedCuda& g, const CudaCubins& cubins,
                                  const std::vector<int64_t>& sizes, const std::vector<Tensor>& inputs, const TimingOptions& timing,
                                  bool graph, const MemoryNeed& need, const IsolationOptions& o);

// The worker's side: `lowerscope-runner [--cuda] --shm FD` (app/runner_main.cpp). Returns the exit status.
int runner_main(int argc, char** argv);

}  // namespace ls
