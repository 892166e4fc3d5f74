// Runs compiled CPU kernels over real buffers, and times them (warm-up, then the median of
// repeated runs, per kernel and for the whole model).
#pragma once
#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "codegen/cpp_codegen.h"
#include "sched/schedule.h"
#include "compile/cpu_compiler.h"
#include "exec/extern_kernels.h"
#include "loop/loop_ir.h"
#include "ops/op_table.h"
#include "tensor/tensor.h"

namespace ls {

struct TimingOptions {
  int warmup = 3;
  int min_runs = 10;
  int max_runs = 200;
  double budget_ms = 300;  // stop repeating once this much time was spent
};

double median_of(std::vector<double> v);  // 0 for none

// A kernel's recorded index fault (ls_index_fault_state: set, value, size, loop node) as the error
// both executors raise: "kernel K (op3, from node 'gather'): index 12 is out of bounds for
// dimension with size 10", as PyTorch words it.
std::string index_fault_message(const LoopProgram& p, const std::string& kernel, const int64_t fault[4]);

struct Timings {
  std::vector<double> kernel_ms;  // median per kernel
  double total_ms = 0;            // median of whole runs
  double host_ms = 0;             // CUDA: median host time to launch a whole run (no waiting on the device)
  std::vector<double> host_kernel_ms;  // CUDA: per kernel, the median host time to issue it (its launches, library calls)
  int runs = 0;
};
// The medians of per-kernel and whole-model times, and how many runs they came from.
Timings timings_of(const std::vector<std::vector<double>>& per_kernel, const std::vector<double>& total);

class CpuExecutable {
 public:
  // Resolves every kernel's launcher; throws std::runtime_error naming a missing one.
  // `sizes`: the values of the size symbols, for size-generic kernels (dynamic shapes), passed to
  // each generated kernel as its last argument; empty for kernels compiled for one size.
  CpuExecutable(const LoopProgram& p, const Schedule& s, const GeneratedSource& src, LoadedCode& code,
                std::vector<int64_t> sizes = {});
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  Timings benchmark(const std::vector<Tensor>& inputs, const TimingOptions& o = {});
  // Per kernel: whether, in the last run, it ran inside the matrix multiply before it (an
  // epilogue on the product's blocks of rows) rather than as a kernel of its own.
  const std::vector<bool>& ran_inside() const { return inside_; }

  // max-autotune of matrix multiplies (after run() or benchmark() bound the inputs): kernel k's
  // sizes when it is one (bmm: one of its products); run it with `cut` from now on (null: the
  // heuristic's); run it alone (with its epilogue, where it has one), or time it alone (median).
  bool matmul_sizes(size_t k, int64_t& M, int64_t& N, int64_t& K) const;
  // Kernel k as the GEMM template takes it (an mm or addmm the template serves; from the loop IR,
  // so also before the inputs are bound).
  bool gemm_problem(size_t k, GemmProblem& out) const;
  // A BLAS cut; a template cut keeps the template compiled into the source for k (throws where
  // there is none); null: the heuristic's BLAS cut.
  void choose_cut(size_t k, const GemmCut* cut);
  // Run kernel k by a compiled GEMM template function (max-autotune's candidates).
  void choose_template(size_t k, GemmTemplateFn fn);
  bool runs_template(size_t k) const { return templates_.count(k) > 0; }
  const std::map<size_t, GemmCut>& cuts() const { return cuts_; }
  void run_step_alone(size_t k);
  double time_step_alone(size_t k, const TimingOptions& o);
  const Tensor& buffer(const std::string& name) const { return buffers_.at(name); }  // a bound buffer
  // A worker process (exec/isolated_run.h) follows the run: before each kernel, its index goes
  // into progress[0] and the count of kernels started into progress[1] (shared memory the parent
  // reads, to name a kernel that faulted or hung). The count goes on from progress[1] as it is
  // (the worker's load marked there), so the first kernel moves it. Null: not followed.
  void follow(std::atomic<int64_t>* progress) {
    progress_ = progress;
    started_ = progress ? progress[1].load() : 0;
  }

 private:
  void bind(const std::vector<Tensor>& inputs);
  void step(size_t k);
  using Launcher = void (*)(void**);
  using RowsLauncher = void (*)(void**, int64_t, int64_t);
  const LoopProgram& p_;
  std::vector<Launcher> launchers_;              // nullptr for extern kernels
  std::vector<RowsLauncher> rows_;               // an epilogue kernel's rows form (Kernel::epilogue), else nullptr
  std::vector<bool> done_;                       // this run: the kernel already ran, as the epilogue of the one before
  std::vector<bool> inside_;                     // ran_inside()
  std::vector<const LoopNode*> externs_;         // the extern node, for extern kernels
  std::vector<std::vector<std::string>> args_;
  std::map<std::string, Tensor> buffers_;
  std::vector<std::vector<void*>> arg_ptrs_;
  std::vector<RefInputs> extern_in_;             // per extern kernel: its operands, bound by bind()
  std::vector<std::vector<Tensor>> extern_out_;  // and its outputs
  std::vector<int64_t> sizes_;
  int64_t* index_faults_ = nullptr;              // ls_index_fault_state of the source, where a kernel checks indices
  void check_index_faults(size_t k);
  std::vector<std::string> kernel_names_;
  std::atomic<int64_t>* progress_ = nullptr;     // follow()
  int64_t started_ = 0;
  std::map<size_t, GemmCut> cuts_;               // matrix multiplies cut as max-autotune chose
  std::map<size_t, GemmTemplateFn> templates_;   // matrix multiplies run by a generated GEMM template
  std::map<size_t, GemmTemplateFn> compiled_templates_;  // those the source holds (GeneratedKernel::launcher)
};

}  // namespace ls
