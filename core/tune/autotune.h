// max-autotune for CUDA kernels (torch.compile(mode="max-autotune")): each generated kernel's
// launch configurations (codegen/cuda_codegen.h: cuda_candidates) are searched by coordinate
// descent from the heuristic's: every round compiles and times the neighbours of each kernel's
// best so far, on the real buffers, each checked against the heuristic's output; the fastest is
// kept, with a table per kernel like Inductor's AUTOTUNE log. Every candidate is a kernel of its
// own in modules compiled at once; the model runs once with the heuristics (while the first
// round compiles), then each candidate runs alone on its kernel's buffers (as Inductor benchmarks a choice on its real inputs). The
// choice is kept on disk, keyed by the device and the kernels' source: the next compile takes it
// from there. The tuned kernels together must also beat the heuristics on the whole model.
// Matrix multiplies run by cuBLAS are tuned too: cuBLASLt's algorithms for the product (its
// heuristic's list, up to 12) timed on the real operands against the heuristics' call, as
// Inductor times its extern mm choice against its templates.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codegen/cuda_codegen.h"
#include "cuda/driver.h"
#include "exec/executor.h"
#include "sched/schedule.h"
#include "tensor/tensor.h"

namespace ls {

struct TunedCandidate {
  KernelConfig config;
  double ms = 0;           // median time of the kernel under it
  std::string problem;     // set when it failed or gave other numbers than the heuristic's
  std::string note;        // how it was timed, where not as the others (one run: far slower)
  std::string label;       // a library call's candidate: "cublasSgemm", "cuBLASLt algorithm 21, tile 128x64, ..."
  std::string text() const { return label.empty() ? config.text() : label; }
};

struct KernelTuning {
  std::string kernel, form;
  std::vector<TunedCandidate> candidates;  // those tried, in order (the heuristic's first)
  size_t space = 0;                        // the configurations there were to try (cuda_candidates)
  size_t chosen = 0;
  std::string why;  // "fastest: 1.8x the heuristic's time"
  bool library = false;  // a matrix multiply: its candidates are cuBLASLt's algorithms
};

struct AutotuneResult {
  std::vector<KernelTuning> kernels;
  int rounds = 0;          // NVRTC modules compiled (candidates, the model's, helpers', attention's, the tuned model's)
  int descent_rounds = 0;  // rounds of coordinate descent
  double ms = 0;           // the whole tuning
  bool from_cache = false;
  bool cpu = false;        // autotune_cpu's: matrix multiplies' cuts
  double tuned_ms = 0, heuristic_ms = 0;  // the whole model, both ways (0 when nothing was tuned)
  std::string table() const;  // the AUTOTUNE log: per kernel, every candidate with its time
};

// Tunes `base` into `tuned` (base plus a configuration per kernel that beats its heuristic).
AutotuneResult autotune_cuda(const LoopProgram& p, const Schedule& s, const CudaCodegenOptions& base, CudaDriver& d,
                             const std::vector<Tensor>& inputs, CudaCodegenOptions& tuned);

// max-autotune on the CPU, as Inductor's CPU max-autotune times its C++ GEMM template's
// blockings against the library call: each matrix multiply of `exe` (its inputs bound: run
// first) cut every way gemm_candidate_cuts offers (BLAS calls on the pool's threads) and written
// as every GEMM template gemm_template_candidates offers (all of them compiled at once by
// `compile`, one module), each checked against the heuristic's cut (its output and its
// epilogue's) and timed alone on the model's operands; the fastest kept in `chosen` (by kernel
// name) when the whole model is faster with them. BLAS cuts stay chosen in `exe`; a template
// chosen is left out of `exe` (its module is gone): the caller writes it into the model's source
// (gemm_template_cpp) and compiles that. The choice is kept on disk, keyed by the products,
// their candidates and the generated `source`. A null `compile`: BLAS cuts only.
using CompileModule = std::function<std::unique_ptr<LoadedCode>(const std::string& source)>;
AutotuneResult autotune_cpu(const LoopProgram& p, const Schedule& s, const std::string& source, CpuExecutable& exe,
                            const std::vector<Tensor>& inputs, std::map<std::string, GemmCut>& chosen,
                            const CompileModule& compile = nullptr);

}  // namespace ls
