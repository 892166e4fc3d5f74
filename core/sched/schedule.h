// Scheduling: groups loop nodes into fused kernels (vertical and horizontal fusion, as Inductor's
// scheduler does), records why every edge between two kernels was not fused, and plans memory.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "loop/loop_ir.h"

namespace ls {

// A verdict with its reason (Inductor's WhyNoFuse).
struct FusionVerdict {
  bool ok = false;
  std::string reason;
};

// One loop nest of a kernel: its nodes and the iteration they run in.
struct LoopNest {
  std::vector<int> nodes;
  int64_t numel = 1, rnumel = 1;
};

struct Kernel {
  std::string name;          // "cpp_fused_add_cos_pow_sin_0", or "extern_addmm_3"
  bool is_extern = false;    // a library call (one extern loop node), not generated code
  std::vector<int> nodes;    // loop node indices, in execution order
  int64_t numel = 1;         // the kernel's outer iteration (x)
  int64_t rnumel = 1;        // its reduction iteration (r), 1 for pointwise kernels
  std::vector<std::string> reads;     // buffers read from memory
  std::vector<std::string> writes;    // buffers written to memory
  std::vector<std::string> removed;   // buffers that live only in registers inside this kernel
  std::vector<std::string> origins;   // graph nodes covered
  Phase phase = Phase::forward;
  // CPU kernels may run several loop nests one after the other in one function (Inductor's C++
  // backend does: one OpenMP parallel region, a worksharing loop per nest). Empty: one nest, the
  // kernel's own nodes and iteration. Otherwise numel/rnumel are those of the first nest.
  std::vector<LoopNest> nests;
  std::vector<LoopNest> loop_nests() const;  // nests, or the kernel as its one nest
  // CPU: this pointwise kernel finishes the matrix multiply of the kernel before it (its epilogue):
  // it reads the product element for element, so it can run on each block of rows of the product
  // as soon as the library has computed that block, while the block is in cache
  // (ScheduleOptions::gemm_epilogues). It still has its whole-kernel form too.
  bool epilogue = false;
};

struct EdgeDecision {
  int producer = -1, consumer = -1;  // loop node indices
  std::string buffer;
  FusionVerdict verdict;  // ok: fused into one kernel
};

struct MemoryPlan {
  std::vector<std::string> removed;  // buffers never materialised
  std::vector<std::pair<std::string, std::string>> reuses;  // (buffer, the dead buffer whose memory it takes)
  int64_t peak_bytes_unfused = 0;    // one kernel per node, every buffer materialised
  int64_t peak_bytes = 0;            // after fusion and reuse
};

struct ScheduleOptions {
  bool fusion = true;
  std::string prefix = "cpp";  // kernel names: cpp_fused_..., cuda_fused_...
  // Consecutive generated kernels of one phase that share a buffer (one reads what the other
  // reads or writes) become one kernel of several loop nests, up to this many (Inductor's
  // cpp.max_horizontal_fusion_size). 1: never. Only where kernels are plain functions (CPU): a
  // CUDA grid cannot wait for itself between two nests.
  int max_loop_nests = 1;
  // CUDA: no kernel whose reduction loop would read one group's memory along its rows and the
  // other's along its columns (a layer norm's input gradient beside its weight gradient): one of
  // the two would be read uncoalesced, 30% of copy bandwidth where apart both run near 90%.
  bool coalesced = false;
  // No kernel holds more loop nodes than this (Inductor's config.max_fusion_size): bounds the
  // time fusion takes on very large graphs, and the size of one kernel's source.
  int max_fusion_size = 64;
  // CPU: mark the pointwise kernels that can run as a matrix multiply's epilogue (Kernel::epilogue).
  bool gemm_epilogues = false;
};

struct Schedule {
  std::vector<Kernel> kernels;
  std::vector<EdgeDecision> edges;
  MemoryPlan memory;
  int kernel_of(int node) const;  // -1 if none
};

Schedule schedule(const LoopProgram& p, const ScheduleOptions& opts = {});

// The index expressions of node n's loop variables inside a kernel iterating (x over numel, r over
// rnumel); empty when the node cannot be placed in such a kernel.
struct Placement {
  bool ok = false;
  bool inner = false;  // runs inside the r loop
  std::vector<Expr> idx, ridx;
};
Placement place(const LoopNode& n, int64_t numel, int64_t rnumel);

// The loops a kernel's nodes run in, in order: runs of outer-level (x) nodes, and reduction (r)
// loops; a new r loop starts when a node reads a reduction finished in the current one. The
// scheduler (which values need memory) and the code generators read this one answer.
struct KernelLoop {
  bool inner = false;  // an r loop
  std::vector<int> nodes;
  std::set<int> recomputed;  // nodes of an earlier r loop run again here (their value, not their stores)
};
std::vector<KernelLoop> kernel_loops(const LoopProgram& p, const std::vector<int>& nodes, int64_t numel, int64_t rnumel);

std::string print_schedule(const LoopProgram& p, const Schedule& s);  // ir_post_fusion.txt style
// Kernels as clusters of their loop nodes, with the fusion decisions on the edges; past
// kClusteredScheduleNodes loop nodes, a box per kernel (Graphviz cannot lay out the clusters).
constexpr size_t kClusteredScheduleNodes = 600;
std::string schedule_to_dot(const LoopProgram& p, const Schedule& s);
// A box per kernel, whatever the size: what the app draws where Graphviz cannot lay out the
// clusters in time (a training step's schedule can meet dot's "trouble in init_rank").
std::string schedule_kernels_to_dot(const LoopProgram& p, const Schedule& s);

}  // namespace ls
