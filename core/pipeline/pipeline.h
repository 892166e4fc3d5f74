// The pipeline, as one script of stages. Each stage's result is recorded once, here; the GUI,
// the CLI, its --dump folder and the tests all read this record.
//
//   capture -> aten -> core_aten -> prims -> loop_ir -> fused -> source -> asm -> run
//
// In training mode the ATen graph is differentiated and partitioned first, and the training
// step (forward, backward, optional SGD update) is what goes on down the pipeline:
//
//   capture -> aten -> joint -> forward, backward -> core_aten -> prims -> ... -> run
#pragma once
#include <atomic>
#include <stdexcept>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "autodiff/joint.h"
#include "autodiff/partition.h"
#include "codegen/cpp_codegen.h"
#include "codegen/cuda_codegen.h"
#include "compile/phase_times.h"
#include "dynamic/dynamic_shapes.h"
#include "exec/extern_kernels.h"
#include "frontend/load_model.h"
#include "ir/graph.h"
#include "loop/loop_ir.h"
#include "sched/schedule.h"
#include "tensor/tensor.h"

namespace ls {

struct Stage {
  enum class Kind : uint8_t { graph, loops, kernels, source, assembly, run };
  std::string name;   // short, stable: capture, aten, core_aten, prims, loop_ir, fused, source, asm, run
  std::string title;  // for people: "Core ATen graph"
  Kind kind = Kind::graph;
  std::string text;   // the stage as text (print_readable, loop bodies, C++ source, run table)
  std::string dot;    // the stage as a Graphviz graph (empty for source and run)
  double ms = 0;      // time the stage took
  int nodes = 0;
  std::vector<std::pair<std::string, int>> ops;  // op histogram
  bool changed = true;  // false when the stage left its input as it was
};

struct KernelReport {
  std::string name;
  std::string kind = "generated";          // generated | extern
  std::string how;                         // generated | library | cuBLAS | host (reference kernel)
  std::string launch;                      // CUDA: form, grid and block
  int registers = 0;                       // CUDA: registers per thread
  std::string phase = "forward";           // forward | backward | update
  std::vector<std::string> nodes;          // graph nodes it covers (provenance)
  std::vector<std::string> loop_nodes;     // loop IR nodes fused into it
  int64_t numel = 0, rnumel = 0;
  int64_t bytes = 0;                       // bytes read and written
  double ms = 0;
  double gbps = 0;
  double host_us = 0;                      // CUDA: the host's time to issue it (its launches, library calls), median
  int first_line = 0, last_line = 0;       // in the generated source
};

struct OutputCheck {
  std::string against;  // "out.npy" or "reference interpreter"
  Comparison cmp;
};

struct GradientCheck {
  std::string input;    // the input it is the gradient of
  std::string against;  // "grad_in0.npy" or "reference interpreter (joint graph)"
  Comparison cmp;
};

struct Check {
  std::vector<OutputCheck> outputs;  // per output: against the expected file, else the reference
  std::vector<GradientCheck> gradients;  // training: each gradient against the expected file and the reference
  std::vector<OutputCheck> reference;  // per output: against the reference interpreter
  bool ok = false;
  double max_abs_err = 0, rel_err = 0;
};

struct CompileResult;

struct PipelineOptions {
  std::string device = "cpu";
  // As torch.compile(mode=...): "default"; "reduce-overhead" (CUDA: the whole model replayed as
  // one CUDA graph; run_ms is then the graph's time, launched_ms the one-by-one time); or
  // "max-autotune" (CUDA: each kernel's launch configurations timed, the fastest kept: the
  // "autotune" stage holds the table).
  std::string mode = "default";
  unsigned decompose_to = 0;  // 0: prims (default); or level::core_aten
  bool fusion = true;
  bool external_compiler = false;  // build kernels with an external c++ instead of the in-process JIT
  // CUDA: list the cubin's SASS in the asm stage (cuobjdump, where installed). It runs beside the
  // run stage, outside compile_ms; the CLI asks for it only when it writes the stages (--dump).
  bool sass = true;
  bool run = true;
  int timing_budget_ms = 300;
  // Also run the reference interpreter and compare (off for models too large for it: the
  // expected files that came with the model are then the only check).
  bool reference = true;
  // Training: differentiate, partition (the chosen partitioner compiles; both are reported) and
  // compile the whole step. The tangent of the first output is ones (the gradient of its sum).
  bool train = false;
  Partitioner partitioner = Partitioner::min_cut;
  double sgd_lr = 0;  // > 0: the step ends with an SGD update of every parameter
  // Keep the compiled code in CompileResult::program, to run again on other inputs.
  bool keep_program = false;
  // As torch.compile(dynamic=True): the user inputs' sizes become symbols and the kernels (C++ or
  // CUDA) take them as arguments, so the kept program runs other sizes without compiling again
  // (dynamic/dynamic_shapes.h; the "dynamic" stage shows the symbols, guards and sizes in the code).
  bool dynamic = false;
  // Internal (dynamic shapes' sample runs under max-autotune): the traced compile's tuned CUDA
  // launch configurations, used instead of tuning again at each sample.
  std::map<std::string, KernelConfig> cuda_configs;
  // CUDA: matrix multiplies (by kernel name) written as the given GEMM templates instead of
  // calling cuBLAS, their epilogues inside, as max-autotune leaves its choice (tests, a choice
  // made before).
  std::map<std::string, CudaGemmConfig> cuda_gemm_templates;
  // CPU max-autotune's choice per matrix multiply (by kernel name: a BLAS cut or a GEMM template)
  // given instead of timed: the compile takes them as the tuning would have left them (tests,
  // a choice made before).
  std::map<std::string, GemmCut> gemm_choices;
  // CPU, default and reduce-overhead modes: the large float32 products written as GEMM templates
  // where the heuristic expects them to beat the library (gemm_template_default); off: every
  // product calls the library.
  bool gemm_templates = true;
  // Internal (dynamic shapes' sample runs): stop once the code is generated, and record no stage text.
  bool stop_after_source = false;
  bool record = true;
  // Called (on the compiling thread) once the captured graph is recorded, with the record so far:
  // the GUI draws the model while the rest compiles.
  std::function<void(const CompileResult&)> on_capture;
};

// "compile time by phase" as a small table (the run stage ends with it; the CLI prints it).
std::string phase_table(const std::vector<PhaseTime>& phases);

// A compiled model kept to run again: user inputs (then the tangents, for a training step) in,
// the outputs of the compiled graph out (a training step: outputs, gradients, updates). Not
// thread-safe: one run at a time.
class CompiledProgram {
 public:
  virtual ~CompiledProgram() = default;
  // Throws GuardFailed where the inputs are outside what the code was compiled for.
  virtual std::vector<Tensor> run(const std::vector<Tensor>& user_inputs) = 0;
  std::string last_note;  // how the last run found its code (dynamic shapes: reused, at which sizes)
};

// The inputs of a run break an assumption of the compiled code (a guard): recompile.
struct GuardFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The tangents a training step runs with: ones for the first output (the gradient of its sum),
// zeros for the others.
std::vector<Tensor> tangent_values(const JointGraph& j);

struct TrainingRecord {
  JointGraph joint;
  std::vector<Partition> partitions;  // default, then min_cut
  int chosen = 1;                     // index into partitions
  Graph step;                         // what goes on down the pipeline
  int num_gradients = 0, num_updates = 0;
  const Partition& partition() const { return partitions.at(static_cast<size_t>(chosen)); }
};

struct CompileResult {
  LoadedModel model;
  bool train = false;
  TrainingRecord training;  // train only
  std::vector<Stage> stages;
  Graph aten, core_aten, prims;
  LoopProgram loops;
  Schedule schedule;
  GeneratedSource source;
  GeneratedCuda cuda;       // device cuda: the source (also in `source`) and each kernel's launch
  SizeGeneric dynamic;      // PipelineOptions::dynamic: the symbols, guards and the size-generic template
  std::string dynamic_note;  // dynamic shapes: what they did, or why not
  std::string device = "cpu";  // cpu | cuda
  std::string compiler;
  std::string compile_log;  // the C++ compiler's warnings and remarks
  std::vector<KernelReport> kernels;
  std::vector<Tensor> outputs, reference_outputs;
  Check check;
  double compile_ms = 0, run_ms = 0;
  // Below the stages, where the compile's time went (NVRTC, Clang, the CUDA driver, tuning), summed
  // per phase over threads: compile/phase_times.h.
  std::vector<PhaseTime> compile_phases;
  double bandwidth_gbps = 0;
  double launched_ms = 0;     // reduce-overhead with a graph: the run with kernels launched one by one
  double host_ms = 0;         // CUDA: the host's time to launch one run, kernel by kernel (median)
  std::string mode = "default";
  // CPU: the multiplies run otherwise than the heuristic's BLAS cut, by kernel name: max-autotune's
  // choices (cuts and GEMM templates), or default mode's GEMM templates
  std::map<std::string, GemmCut> gemm_cuts;
  std::string mode_note;      // what the mode did (the graph's nodes and time), or why it could not  // the device's measured memory bandwidth (run stage), 0 where unknown
  std::string error;        // set when a stage failed; the stages before it are kept
  std::string error_stage;  // the stage that failed
  std::string not_run;      // why the compiled code was not run (a CUDA compile without a GPU)
  // The compiled machine code, by file name: kernels.o (in-process Clang) or kernels.so (external
  // compiler), or kernels.cubin and helpers.cubin (CUDA, where a GPU was there to build for).
  std::vector<std::pair<std::string, std::string>> objects;
  std::shared_ptr<CompiledProgram> program;  // keep_program: the compiled code, ready to run again
  bool ok() const { return error.empty() && check.ok; }
  const Stage* stage(const std::string& name) const;
};

// Stage names in pipeline order, for documentation and the GUI's list.
const std::vector<std::string>& stage_names(bool train = false);

// Never throws for a bad model: errors land in result.error with the stage that raised them.
// `cancelled` is polled between stages.
CompileResult run_pipeline(LoadedModel model, const PipelineOptions& o = {},
                           const std::function<bool()>& cancelled = nullptr);

}  // namespace ls
