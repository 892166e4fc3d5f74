// Runs compiled CUDA kernels over device buffers and times them with CUDA events (warm-up, then
// the median of repeated runs, per kernel and for the whole model). Matrix multiplies go to
// cuBLAS, convolutions to im2col + cuBLAS (depthwise ones to a direct kernel), max pooling and
// concatenation to helper kernels; other library calls run on the host (their inputs copied
// down, outputs up), and the kernel table says so.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/cuda_codegen.h"
#include "cuda/cublas.h"
#include "cuda/cudnn.h"
#include "cuda/driver.h"
#include "exec/attention.h"
#include "exec/executor.h"
#include "exec/fft_cuda.h"
#include "exec/memory_fit.h"
#include "exec/runtime_cuda.h"
#include "loop/loop_ir.h"
#include "sched/schedule.h"
#include "tensor/tensor.h"

namespace ls {

// Where a library call runs on the GPU: "cuBLAS", "attention kernel", "flash attention kernel",
// "attention (cuBLAS)", "depthwise kernel", "im2col + cuBLAS", "im2col + cuBLAS + col2im",
// "cuBLAS (1x1: no im2col)", "cuBLAS (1x1: no im2col or col2im)", "cuBLAS (a linear layer)",
// "cuBLAS (a linear layer's backward)", "depthwise backward kernels",
// "pool kernel", "device copies", "index_put kernel", "scatter kernel", "cumsum kernel"; a bf16 or
// f16 convolution's float32 form + " on float32 copies of bf16" (or f16); "cuFFT" (the FFTs,
// exec/fft_cuda.h); or "host (reference kernel)" where we have neither a kernel
// nor cuBLAS for it (its operands copied down and the results back up). `blas`: cuBLAS loaded;
// `fft`: cuFFT loaded (without it the FFTs run on the host: the executor names why).
std::string cuda_extern_how(const LoopProgram& p, const ExternCall& c, bool blas, bool fft = false);

// The geometry of a library call as runtime_cuda.h takes it (the app's executor and a CUDA
// package's runner make the same call from it): a 2-D convolution or its backward, a max pooling,
// an attention operand.
lsrt::cuda::Conv cuda_conv(const LoopProgram& p, const ExternCall& c);
lsrt::cuda::MaxPool cuda_max_pool(const LoopProgram& p, const ExternCall& c);
// index_put and cumsum on the device (helper kernels ls_index_put, ls_cumsum), where the element
// types and operands allow (nullopt: the host's reference kernel runs it). `indexed_dims`: the
// dimensions of self the index tensors index, in order (for the fault's message).
std::optional<lsrt::cuda::IndexPut> cuda_index_put(const LoopProgram& p, const ExternCall& c, std::vector<int64_t>* indexed_dims = nullptr);
std::optional<lsrt::cuda::Cumsum> cuda_cumsum(const LoopProgram& p, const ExternCall& c);
// sort, and topk with sorted=True, on the device: float32, bf16 and f16 lines of at most 4096, a plain input.
std::optional<lsrt::cuda::SortLines> cuda_sort(const LoopProgram& p, const ExternCall& c);
// scatter.src, scatter.value, scatter_add and scatter_reduce (sum, amax, amin including self) on the device (ls_scatter).
std::optional<lsrt::cuda::Scatter> cuda_scatter(const LoopProgram& p, const ExternCall& c);
lsrt::cuda::View cuda_attn_view(const AttnOperand& a);

// Refuses (MemoryRefused, exec/memory_fit.h) a run whose buffers do not fit in the GPU's free
// memory (cuMemGetInfo, or LOWERSCOPE_MEMORY_AVAILABLE), before any is allocated: in the app's
// process or in the kernel worker, with the same words.
void refuse_if_too_large_for_gpu(const MemoryNeed& need, CudaDriver& d);

class CudaExecutable {
 public:
  // Loads the model module's kernels, the helper module's (cuda_helpers_source()) and, when the
  // model has attention kernels, those of g.attention_source's module; throws
  // std::runtime_error naming a missing one.
  // `sizes`: a dynamic-shapes template's size symbols (SizeGeneric::values_of), passed to every
  // generated kernel after its buffers; empty for code compiled at fixed sizes.
  CudaExecutable(const LoopProgram& p, const Schedule& s, const GeneratedCuda& g, CudaDriver& d, CudaModule& m, CudaModule& helpers,
                 CudaModule* attention = nullptr, std::vector<int64_t> sizes = {});
  // One checked run: synchronizes after every kernel, so a fault names the kernel that made it.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  // The kernel worker's watch (exec/isolated_run.h): before each kernel's launch or library call,
  // its index into progress[0] and the count of kernels started into progress[1].
  void follow(std::atomic<int64_t>* progress) {
    progress_ = progress;
    started_ = progress ? progress[1].load() : 0;
  }
  // What a fault's message says after the kernel's name and the fault ("kernel K faulted: CUDA
  // illegal address (...); " + this): where it ran, what became of the GPU.
  std::string after_fault = "the GPU was reset, the app goes on";
  void run_bound(const std::vector<Tensor>& inputs);  // the same run, outputs left on the device
  Timings benchmark(const std::vector<Tensor>& inputs, const TimingOptions& o = {});
  Timings benchmark_bound(const TimingOptions& o = {});  // on the inputs bound last (no upload)

  // reduce-overhead: the whole model (after benchmark() or run() bound the inputs, so every
  // workspace exists) captured as one CUDA graph and replayed with one launch. Returns why not
  // (a library call on the host, a driver without graphs), empty when captured.
  std::string capture_graph();
  size_t graph_nodes() const;
  std::vector<Tensor> replay_graph();                 // one replay, then the outputs
  Timings benchmark_graph(const TimingOptions& o = {});  // whole-model replays (no per-kernel times)

  // max-autotune: generated kernel k launched alone on the bound buffers (after run() or
  // benchmark()) as another compiled version of it, `f` launched as `l` (its own scratch where
  // its form needs one). run_alone synchronizes, naming the kernel when it faults; time_alone
  // gives the median of timed launches.
  void run_alone(size_t k, void* f, const CudaLaunch& l);
  double time_alone(size_t k, void* f, const CudaLaunch& l, const TimingOptions& o);
  // The same for a kernel of another shape (a GEMM template in a library call's place): `f`
  // launched as `l` on the bound buffers named in `buffers`, one a parameter.
  void run_function(void* f, const CudaLaunch& l, const std::vector<std::string>& buffers, const std::string& name);
  double time_function(void* f, const CudaLaunch& l, const std::vector<std::string>& buffers, const std::string& name,
                       const TimingOptions& o);
  // max-autotune of matrix multiplies: library call k (how[k] "cuBLAS") as the problem cuBLASLt
  // can run (none where it cannot: a bias that is not one value per column, or scaled); run with
  // `algo` from now on (null: back to the heuristics' way, cuBLAS's sgemm or cuBLASLt's first).
  std::optional<MatmulProblem> matmul_problem(size_t k) const;
  void choose_matmul(size_t k, const MatmulAlgorithm* algo);
  void run_step_alone(size_t k);                              // library call k alone, synchronized
  double time_step_alone(size_t k, const TimingOptions& o);  // its median time alone
  Tensor download(const std::string& buffer);  // a bound buffer's contents
  DevicePtr device_ptr(const std::string& buffer) const { return buffers_.at(buffer).ptr(); }
  // The elements of a bound float buffer (float32, bfloat16 or float16) that differ from `expected`
  // (a device copy of as many elements) beyond compare()'s tolerance, counted on the device; a half
  // buffer gets at least its type's tolerance (tolerance_for).
  long long mismatches(const std::string& buffer, DevicePtr expected, double rms, Tolerance tol = {});
  double rms(const std::string& buffer);  // a bound float buffer's root mean square over its finite elements

  // per kernel: "generated", "cuBLAS", "cuBLASLt: algorithm 21, tile 128x64, ..." (max-autotune's
  // choice), "template" / "template+epilogue" (a GEMM template in a library call's place, with the
  // next kernel inside it), "epilogue" (that kernel), "generated scan" (cumsum's scan kernel in its
  // library call's place), "cuFFT", "host (reference kernel)", "host (FFTW): no cuFFT (why)", ...
  // (every "host (...)" runs on the host)
  std::vector<std::string> how;
  std::vector<int> registers;    // per generated kernel, from the driver (0 for others)

 private:
  struct AloneArgs;
  // The median device time of `launch` between two events (warm-up, then runs until o's budget).
  double median_between_events(const std::function<void()>& launch, const TimingOptions& o);
  void alone_args(size_t k, const CudaLaunch& l, AloneArgs& a);
  void args_of(const std::vector<std::string>& buffers, const CudaLaunch& l, AloneArgs& a);
  void bind(const std::vector<Tensor>& inputs);
  void step(size_t k);
  void host_extern(size_t k);
  void cublas_extern(size_t k);
  struct Product;                    // a matrix multiply's operands, as cuBLAS takes them
  Product product(size_t k) const;
  std::map<size_t, MatmulAlgorithm> algorithms_;  // matrix multiplies run with a chosen cuBLASLt algorithm
  struct Calls;                      // the GPU as runtime_cuda.h's calls take it
  void device_extern(size_t k);      // convolution (forward, backward), max pooling, cat
  void attention_extern(size_t k);   // attention: fused, tiled or cuBLAS kernels
  void fft_extern(size_t k);         // the FFTs: cuFFT and the gathers and scaling around it (exec/fft_cuda.h)
  Cufft* fft_ = nullptr;             // cuFFT, loaded for the first FFT call
  std::map<size_t, FftPlan> fft_plans_;         // per FFT call, its steps
  std::unique_ptr<CudaModule> fft_module_;      // ls_fft_gather, ls_fft_widen, ls_fft_scale
  const LoopProgram& p_;
  const GeneratedCuda& g_;
  CudaDriver& d_;
  std::vector<void*> functions_;           // nullptr for extern kernels
  DevicePtr index_faults_ = 0;             // ls_index_fault_state, where a kernel checks indices
  DeviceBuffer extern_faults_;             // ls_index_put's and ls_scatter's record of an index out of range (4 int64), where a call has one
  void check_index_faults(size_t k);
  std::vector<const LoopNode*> externs_;
  Cudnn* dnn_ = nullptr;             // cuDNN, for the convolutions (LS_CUDNN=0: the forms without it)
  size_t dnn_workspace_bytes_ = 0;   // the most any of its calls needs
  DeviceBuffer dnn_workspace_;       // shared by its calls
  Cublas* blas_ = nullptr;              // looked up once: not on the launch path
  void* bias_kernel_ = nullptr;
  std::map<std::string, void*> helpers_;   // the prelude's helper kernels
  std::map<size_t, std::vector<DeviceBuffer>> call_ws_;  // per library call, its scratch slots (im2col columns, packed operands, scores)
  std::map<std::string, DeviceBuffer> buffers_;
  std::vector<DeviceBuffer> scratch_;      // per kernel (split reductions)
  std::vector<std::vector<DevicePtr>> arg_values_;
  std::vector<long long> sizes_;           // the size symbols' values (kernel arguments)
  std::vector<std::vector<void*>> arg_ptrs_;
  bool bound_ = false;                     // bind() has run: the buffers and arguments exist
  std::unique_ptr<CudaGraph> graph_;
  std::atomic<int64_t>* progress_ = nullptr;
  int64_t started_ = 0;
  std::vector<Tensor> download_outputs();
};

}  // namespace ls
