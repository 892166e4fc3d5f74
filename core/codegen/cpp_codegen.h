// Scheduled loop IR -> one C++ translation unit with an OpenMP kernel per fused group.
// Emitting is only text: compile/ turns it into code, exec/ runs it.
#pragma once
#include <string>
#include <vector>

#include "loop/loop_ir.h"
#include "sched/schedule.h"

namespace ls {

// One per scheduled kernel, in the same order; extern kernels have no launcher.
struct GeneratedKernel {
  std::string name;                // the kernel function
  std::string launcher;            // extern "C" void launcher(void** args); empty for extern kernels
  std::vector<std::string> args;   // buffer per argument, in order
  int first_line = 0, last_line = 0;  // 1-based lines of the kernel in the source
  bool narrow_index = false;          // CUDA: its index arithmetic is 32-bit (every buffer fits)
  // Source line -> loop node it came from (for linking source and graph).
  std::vector<std::pair<int, int>> line_nodes;
  // An epilogue kernel (Kernel::epilogue): extern "C" void rows_launcher(void** args, int64_t begin,
  // int64_t end) runs its elements [begin, end) on the calling thread: whole rows of the product,
  // or a block of columns of one row. Empty for other kernels.
  std::string rows_launcher;
  // CUDA: an epilogue that runs inside the GEMM template of the kernel before it (max-autotune's
  // choice); its own kernel stays in the source but is not launched.
  bool in_template = false;
};

struct GeneratedSource {
  std::string code;
  std::vector<GeneratedKernel> kernels;
};

// Elements of work (each r loop of a nest counted: a softmax walks its rows three times) below
// which a loop stays serial: at least 4096 per thread of this machine
// (OMP_NUM_THREADS or its cores), as Inductor's CPU backend keeps a minimum chunk per thread; a
// parallel region on many cores costs tens of microseconds, more than a small kernel's work.
int64_t default_parallel_threshold();
// The threshold for a kernel that reads what a library call (matrix multiply, convolution) just
// wrote on every core: its input sits in the other cores' caches, and one thread pulling it line by
// line waits on each transfer (cifar_net's ReLU + max-pool after its convolution, 9408 elements:
// 0.17 ms on one of the GPU machine's 16 cores, ~0.01 ms in parallel). A thread's share of the
// usual threshold, at least 4096 elements: 4096 on 16 cores, 16384 on 2 (where a parallel region
// costs about what the transfers do).
int64_t default_library_input_threshold();

struct CppCodegenOptions {
  int64_t parallel_threshold = default_parallel_threshold();
  int64_t library_input_threshold = default_library_input_threshold();
  // Dynamic shapes: every size-dependent choice is made at run time (a nest is written parallel
  // and serial, and its size picks one), so that the code differs between sizes in numbers only
  // (dynamic/dynamic_shapes.h).
  bool size_generic = false;
};

// How a CPU kernel's definition starts (its name and parameters follow). Not inlined into its
// launcher: Clang would otherwise copy every kernel under a few hundred instructions into it,
// optimizing and generating it twice (a graph of many small kernels: a fifth more machine code,
// a tenth more compile). Launchers start `extern "C" void `.
inline constexpr const char* kCpuKernelHead = "extern \"C\" __attribute__((noinline)) void ";

GeneratedSource generate_cpp(const LoopProgram& p, const Schedule& s, const CppCodegenOptions& o = {});

}  // namespace ls
