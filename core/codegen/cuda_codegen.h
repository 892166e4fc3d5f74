// Scheduled loop IR -> one CUDA C++ translation unit (for NVRTC) with a __global__ kernel per
// fused group. Emitting is only text: cuda/ compiles it to PTX and cubins and runs it.
//
// Kernel forms, chosen per kernel from its iteration (x over numel, r over rnumel):
//   pointwise   each thread 4 consecutive x elements, moved as one float4 per buffer, where every
//               buffer that moves with x moves one element a step (16-byte aligned, float32);
//               otherwise (or as max-autotune's candidates) UNROLL elements a block apart
//               (coalesced, several loads in flight); tails masked.
//   row         a reduction: T threads per row (a power of two), T <= 32 reduce with warp
//               shuffles and pack several rows into a block; T > 32 take a block per row and
//               reduce through shared memory. Loops over r are strided by T (coalesced), in
//               groups of 4 consecutive r moved as float4 where the accesses allow it. A row
//               of at most 16 T elements walked by several loops (softmax, LayerNorm) is held
//               in registers (the persistent form) and read from memory once.
//   split       few rows, long ones (a full sum, a per-channel sum over a batch): each row is cut
//               into S slices reduced by S blocks; each block publishes its partial, and the last
//               block of the row (an atomic counter) combines them and finishes the row: one
//               kernel, deterministic.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "codegen/cpp_codegen.h"

namespace ls {

// One kernel's launch configuration, where it differs from the heuristics (max-autotune's
// choice); 0 fields keep the heuristic's value.
struct KernelConfig {
  int block = 0, unroll = 0;    // pointwise: threads per block, elements per thread
  int threads_per_row = 0;      // row: threads that reduce one row
  int64_t split = 0;            // split: slices per row (1: one block per row)
  std::string text() const;     // "block 256, unroll 4"
  bool operator==(const KernelConfig&) const = default;
};

// A matrix multiply written as a generated GEMM template (CUDA max-autotune's candidate, kept
// where it beats the library with its epilogue fused): a BM x BN tile of the product a block of
// 256 threads, TM x TN outputs a thread (strided, so a warp's stores are coalesced), K in steps
// of BK through shared memory (codegen/cuda_gemm_template.h).
// A bfloat16/float16 product takes the tensor-core template instead (codegen/cuda_gemm_half.h):
// tm x tn warps a block, each (bm / tm) x (bn / tn) of the tile in mma.sync m16n8k16 tiles, K by
// bk through `stages` shared buffers filled with cp.async.
struct CudaGemmConfig {
  int bm = 64, bn = 64, tm = 4, tn = 4, bk = 16;
  int stages = 0;            // > 0: the tensor-core template (tm x tn warps); 0: float32
  std::string text() const;  // "tile 64x64, 4x4 a thread, k by 16" / "tile 128x128, 2x2 warps, k by 32, 3 stages (tensor cores)"
  bool operator==(const CudaGemmConfig&) const = default;
};

struct CudaCodegenOptions {
  int sm_count = 132;     // the device's multiprocessors (the H100 has 132); sizes split reductions
  int sm = 90;            // its compute capability (major * 10 + minor): thread-block clusters from 90
  int pointwise_block = 256;
  int pointwise_unroll = 4;
  std::map<std::string, KernelConfig> configs;  // kernel name -> its tuned configuration
  // max-autotune's matrix multiplies: library kernel name -> the cuBLASLt algorithm chosen for it
  // (cuda/cublas.h MatmulAlgorithm::serialize); the others run as the heuristics choose.
  std::map<std::string, std::string> matmul_algorithms;
  // max-autotune's GEMM templates: library kernel name -> the template written in its place (its
  // epilogue, the next kernel where the schedule marked one, runs inside it).
  std::map<std::string, CudaGemmConfig> gemm_templates;
  // Dynamic shapes: code whose tails are always masked, whose threads per row change only where
  // the row length doubles (away from the powers of two) and whose bounds are the sizes themselves (4 * ls_g < R, never R / 4),
  // so sizes near the traced ones give the same code with other numbers. 16-byte accesses stay
  // where the traced sizes allow them; the sizes they need divisible by 4 get that guard (a size
  // that breaks it makes other code, and Dynamo's way follows: compile again). No persistent
  // rows (the groups a thread holds are a quotient of the row length).
  bool size_generic = false;
  // Dynamic shapes: buffers no size symbol moves (the model's weights). A row reduction that reads
  // one of exactly the row's length (a LayerNorm's weight) has a fixed row length: it keeps the
  // static heuristic's threads a row and the persistent form.
  std::set<std::string> fixed_buffers;
  // Kernels whose code is the same but for their names (a model's repeated layers: the same
  // shapes, the same fused ops) compile once: each later one keeps its header comment in the
  // source, says which kernel it launches, and launches that function with its own buffers, as
  // Inductor defines a kernel once and calls it per layer. Off where each kernel's own text is
  // needed: max-autotune's candidates (rewritten kernel by kernel) and size-generic code.
  bool share_identical_kernels = true;
};

struct CudaLaunch {
  std::string form;        // pointwise | row | column | split | extern | gemm template
  int64_t grid = 0;
  int block = 0;
  int threads_per_row = 0; // row/split forms; column form: lanes (block / 32)
  int64_t split = 0;       // split form: slices per row; column form: slices per column
  int64_t scratch_bytes = 0;  // split form: partials and counters, zeroed once (the kernel leaves them zero)
  int vector = 0;          // 4: consecutive elements move 16 bytes at a time (pointwise: each thread's 4; r loops: groups of 4)
  bool cluster = false;    // column form: a column group's slices are one thread-block cluster (sm_90)
};

// The head size of an attention call (forward or backward) the prelude's fused attention kernels
// take (float32, q, k and v of one head size among 16, 32, 64, 128, no mask); 0: they do not.
int attention_head_dim(const LoopProgram& p, const ExternCall& c);
// How the CUDA runtime runs an attention call: "fused" (those kernels: short sequences, where
// one launch beats materialising the scores), "tiled" (long sequences at head sizes 32 and
// 64: the prelude's FlashAttention-2 kernels, forward and backward), "cublas" (the rest of long sequences: the scores in memory,
// batched cuBLAS products around a softmax kernel, as PyTorch's math path; float32, no mask),
// "half" (bf16/f16: FlashAttention-2 on the tensor cores, codegen/flash_attention_half.h),
// or "" (neither: the host runs it).
std::string attention_cuda_path(const LoopProgram& p, const ExternCall& c);

// The runtime's helper kernels (codegen/cuda_helpers.h after the prelude): one module, compiled
// once per machine and cached, loaded beside each model's kernels.
std::string cuda_helpers_source();

struct GeneratedCuda {
  GeneratedSource source;         // kernels in schedule order (extern kernels have no launcher)
  std::vector<CudaLaunch> launch; // per kernel
  // The attention kernels the model's attention calls use (the prelude's LS_ATTENTION /
  // LS_FLASH_ATTENTION per head size), a module of their own: it depends only on the head sizes,
  // so it is compiled once per machine and cached, and max-autotune's rounds do not rebuild it.
  // Empty when the model has none.
  std::string attention_source;
  std::map<std::string, std::string> matmul_algorithms;  // CudaCodegenOptions' (max-autotune's choices)
  std::map<std::string, CudaGemmConfig> gemm_templates;  // the same: the library calls written as templates
};

// Generated (pointwise) kernel k as a device function of one element, `fname(x0, <its buffers>)`,
// its pointers without __restrict__: a GEMM template calls it on each product element right after
// storing it. `args`: the buffer of each pointer, in order.
std::string cuda_element_function(const LoopProgram& p, const Kernel& k, const CudaCodegenOptions& o, const std::string& fname,
                                  std::vector<std::string>& args);

// The configurations max-autotune tries for a kernel the heuristics launched as `heuristic`
// (that one first): block sizes and unrolling for pointwise kernels, threads per row for row
// reductions, slice counts for split ones.
std::vector<KernelConfig> cuda_candidates(const CudaLaunch& heuristic, int64_t numel, int64_t rnumel);

GeneratedCuda generate_cuda(const LoopProgram& p, const Schedule& s, const CudaCodegenOptions& o = {});

}  // namespace ls
