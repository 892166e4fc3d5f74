// CUDA C++ source -> PTX (and a cubin for the target GPU) with NVRTC, in-process, cached on disk
// keyed by source, options and NVRTC version. Needs no GPU.
#pragma once
#include <string>
#include <vector>

namespace ls {

struct CudaCompileOptions {
  int sm = 90;            // compute capability (major*10 + minor): sm_90 for the H100
  bool cubin = true;      // also build the cubin (machine code) the runtime loads
  std::string cache_dir;  // as CpuCompileOptions::cache_dir (kind "cuda")
  bool ptx = true;        // build the PTX (what the explorer shows); off for the helper module
  bool sass = true;       // list the cubin's SASS (cuobjdump; cuda_sass() lists it apart)
  std::string module = "model";  // what the compile is named in the phase times: model, helpers, attention
  // The first line (1-based) of each kernel in the source, the lines before the first being the
  // prelude: a cubin's kernels then compile as several programs at once (a part a core), linked
  // by nvJitLink into one cubin. Empty: one program.
  std::vector<int> kernel_lines;
};

struct CudaCompileResult {
  std::string ptx;        // for compute_<sm>
  std::string cubin;      // for sm_<sm>; empty unless asked
  std::string sass;       // cuobjdump -sass of the cubin, when that tool is found
  std::string compiler;   // "NVRTC 13.0, sm_90"
  std::string log;        // NVRTC's warnings
  double ms = 0;
  bool from_cache = false;
};

bool have_nvrtc();
std::string nvrtc_version();  // "13.0", or empty without NVRTC
// Throws CompileError (compile/cpu_compiler.h) with NVRTC's log when the source does not compile.
CudaCompileResult compile_cuda(const std::string& source, const CudaCompileOptions& o = {});
// cuobjdump's SASS listing of a cubin (cached on disk by the cubin), empty without the tool. A
// process of its own takes about half a second: the pipeline lists it beside the run, not in the
// compile.
std::string cuda_sass(const std::string& cubin, const std::string& cache_dir = {});

}  // namespace ls
