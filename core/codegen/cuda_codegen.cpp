#include "codegen/cuda_codegen.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "codegen/cuda_gemm_template.h"
#include "codegen/emitter.h"
#include "codegen/flash_attention_half.h"
#include "loop/dependencies.h"
#include "ops/known_ops.h"
#include "ops/op_table.h"

extern const char kCudaPrelude[];
extern const char kCudaHelpers[];

namespace ls {
namespace {

// The combiner code of ls_combine and the reductions built on it (cuda_prelude.h); prod's 3 is
// defined where a source has a product (its on-demand paragraph).
int reduce_op(Reduce r) { return r == Reduce::max ? 1 : r == Reduce::min ? 2 : r == Reduce::prod ? 3 : 0; }

int64_t next_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}
int64_t prev_pow2(int64_t v) {
  int64_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

class CudaKernelWriter {
 public:
  CudaKernelWriter(const LoopProgram& p, const Kernel& k, const CudaCodegenOptions& o) : p_(p), k_(k), o_(o) {}

  // The kernel's buffer parameters, the buffers it reads (in_ptr0, ...) then those it writes
  // (out_ptr0, ...), each buffer appended to `args` and its pointer recorded in ptrs_.
  // `restrict`: __restrict__ pointers (a kernel's own; not a device function a GEMM template calls
  // on the product it has just stored).
  std::string parameters(bool restrict, std::vector<std::string>& args) {
    std::string params;
    int n_in = 0, n_out = 0;
    ptrs_.clear();
    auto add = [&](const std::string& buf, bool write) {
      const std::string ptr = write ? "out_ptr" + std::to_string(n_out++) : "in_ptr" + std::to_string(n_in++);
      ptrs_[buf] = ptr;
      params += std::string(params.empty() ? "" : ", ") + (write ? "" : "const ") + std::string(dtype_c(p_.buffer(buf).dtype)) +
                (restrict ? "* __restrict__ " : "* ") + ptr;
      args.push_back(buf);
    };
    for (const auto& b : reads_in_use_order()) add(b, false);
    for (const auto& b : k_.writes) add(b, true);
    return params;
  }

  // The buffers the kernel reads, in the order its code first loads them (the schedule lists
  // them by name): the same layer in two places of a model then gets the same parameters, whose
  // names sort differently there ("buf104" before "buf68"), and the same code (share_identical_kernels).
  std::vector<std::string> reads_in_use_order() const {
    std::vector<std::string> order;
    const std::set<std::string> reads(k_.reads.begin(), k_.reads.end());
    std::set<std::string> seen;
    for (const int n : k_.nodes)
      for (const MemDep& d : extract_dependencies(p_.nodes.at(static_cast<size_t>(n))).reads)
        if (reads.count(d.buffer) && seen.insert(d.buffer).second) order.push_back(d.buffer);
    for (const std::string& b : k_.reads)  // read elsewhere than a node's body (none today): last
      if (seen.insert(b).second) order.push_back(b);
    return order;
  }

  // The pointwise kernel as a device function of one element x0 (cuda_element_function).
  std::string element_function(const std::string& fname, std::vector<std::string>& args) {
    if (k_.rnumel != 1 || !k_.nests.empty()) throw std::logic_error(k_.name + " is no pointwise kernel");
    const int64_t X = k_.numel;
    const std::vector<KernelLoop> segs = kernel_loops(p_, k_.nodes, X, 1);
    const std::string params = parameters(false, args);
    LoopEmitter e(ptrs_, std::set<std::string>(k_.writes.begin(), k_.writes.end()), p_, Dialect::cuda);
    e.lines.push_back({"// " + k_.name + " for one element of the product (its epilogue)"});
    e.lines.push_back({"__device__ __forceinline__ void " + fname + "(const int64_t x0, " + params + ") {"});
    e.push_scope();
    emit_segments(e, segs, X, 1);
    e.pop_scope();
    e.lines.push_back({"}"});
    std::string text;
    for (const Emitted& l : e.lines) text += l.text + "\n";
    return text;
  }

  GeneratedKernel write(std::vector<Emitted>& out, CudaLaunch& launch) {
    GeneratedKernel gk;
    gk.name = k_.name;
    gk.launcher = k_.name;  // the __global__ function, found in the module by this name
    const int64_t X = k_.numel, R = k_.rnumel;
    const std::vector<KernelLoop> segs = kernel_loops(p_, k_.nodes, X, R);

    // 32-bit index arithmetic when every buffer and the iteration fit (64-bit division is slow).
    bool small = X * R < INT_MAX;
    std::string params = parameters(true, gk.args);
    for (const std::string& b : gk.args) small = small && numel_of(p_.buffer(b).shape) < INT_MAX;
    idx_ = small ? "int" : "int64_t";
    gk.narrow_index = small;

    for (const std::string& b : k_.reads)
      row_fixed_ = row_fixed_ || (R > 1 && o_.fixed_buffers.count(b) && numel_of(p_.buffer(b).shape) == R);
    // The buffers the kernel moves element by element (one element per x and r) are all halves,
    // whatever the per-row ones (LayerNorm's float32 mean and rstd) are: the launch shape goes by
    // these bytes; the fast math below by every buffer.
    bool full_buffers = false, full_halves = true;
    for (const auto* list : {&k_.reads, &k_.writes})
      for (const std::string& b : *list) {
        const auto& buf = p_.buffer(b);
        halves_only_ = halves_only_ && dtype_is_half(buf.dtype);
        if (numel_of(buf.shape) == X * R) full_buffers = true, full_halves = full_halves && dtype_is_half(buf.dtype);
      }
    const bool moves_halves = full_buffers && full_halves;
    // The form.
    int inner_segs = 0;
    for (const KernelLoop& s : segs) inner_segs += s.inner;
    const bool splittable = R > 1 && inner_segs == 1 && segs.front().inner;
    const auto tuned = o_.configs.find(k_.name);
    const KernelConfig cfg = tuned == o_.configs.end() ? KernelConfig{} : tuned->second;
    block_ = cfg.block ? cfg.block : o_.pointwise_block;
    unroll_ = cfg.unroll ? cfg.unroll : o_.pointwise_unroll;
    std::optional<VectorPlan> pointwise_vector;  // the heuristic's pointwise form, where 16-byte accesses fit
    if (R == 1 && !cfg.unroll) {
      std::vector<int> nodes;
      for (const KernelLoop& s : segs) nodes.insert(nodes.end(), s.nodes.begin(), s.nodes.end());
      pointwise_vector = vector_plan(nodes, {}, "x0", X, X, R, 4);
      // Only 16-bit buffers move: groups of 8 (16 bytes of halves) where they fit.
      if (pointwise_vector && pointwise_vector->all_half)
        if (std::optional<VectorPlan> wide = vector_plan(nodes, {}, "x0", X, X, R, 8)) pointwise_vector = wide, lanes_ = 8;
    }
    if (R == 1) {
      launch.form = "pointwise";
      launch.block = block_;
      launch.threads_per_row = 1;
      const int64_t per_block = int64_t(block_) * (pointwise_vector ? lanes_ : unroll_);
      launch.grid = (X + per_block - 1) / per_block;
      launch.vector = pointwise_vector ? lanes_ : 0;
    } else if (splittable && R >= 16384 && X < 2 * o_.sm_count && cfg.threads_per_row == 0) {
      launch.form = "split";
      launch.block = 512;
      launch.threads_per_row = 512;
      const int64_t want = std::max<int64_t>(1, 4 * o_.sm_count / X);                 // fill the device
      const int64_t useful = std::max<int64_t>(1, R / (int64_t(launch.block) * 8));   // >= 8 elements a thread
      launch.split = std::clamp<int64_t>(cfg.split ? cfg.split : std::min(want, useful), 1, 1024);
      launch.grid = X * launch.split;
    } else if (X % 32 == 0 && cfg.threads_per_row == 0 && !arg_reduction(segs) && column_major(segs, X, R)) {
      // Consecutive x are consecutive in memory and consecutive r are a row apart (a bias
      // gradient's sum over the batch): a warp takes 32 neighbouring columns, the block's warps
      // (its lanes) share their rows, and long columns are split over several blocks.
      launch.form = "column";
      launch.block = cfg.block ? cfg.block : 256;
      launch.threads_per_row = launch.block / 32;
      const int64_t groups = X / 32, lanes = launch.threads_per_row;
      const int64_t want = std::max<int64_t>(1, 4 * o_.sm_count / groups);
      const int64_t useful = std::max<int64_t>(1, R / (lanes * 16));  // >= 16 rows a thread
      // (512 threads a block, 16 slices as a cluster in place of 33 of 256, took the bf16
      // transformer step's LayerNorm weight and bias gradients from 0.0172 to 0.0186 ms on the
      // H200, measured in the pipeline, though 0.0180 -> 0.0130 in the variants harness, whose
      // inputs are not in L2.)
      launch.split = splittable ? std::clamp<int64_t>(cfg.split ? cfg.split : std::min(want, useful), 1, 1024) : 1;
      launch.grid = groups * launch.split;
      column_ = true;
    } else {
      launch.form = "row";
      // Size-generic code: prev_pow2(3R/16) changes only where the row length doubles, at lengths
      // off the powers of two (683, 1365, ...: a power-of-two length sits mid-range, so sizes on
      // either side share the code), and equals the static next_pow2(R/8) over two thirds of each
      // range (384, 512, 600, 1000, 1024, 1500; 640 or 1300 get half the static threads).
      const bool generic_row = o_.size_generic && !row_fixed_;
      // A kernel whose rows are halves takes 16 elements a thread (two 16-byte groups, the bytes a
      // thread holds in flight at float32's 8), so twice the rows share an SM; from rows of 4,096
      // up, 32 (four groups, 128 threads a row): softmax at 16384x4096 in bf16 ran at 86% of copy
      // with 256 threads a row and 92% with 128 (tools/gpu/softmax_half_variants.cu). LayerNorm's
      // forward at 8192x512 in the bf16 transformer step, whose mean and rstd are float32: a warp
      // a row instead of 64 threads, 0.0104 -> 0.0092 ms (with the residual's add: 0.0126 ->
      // 0.0116; H200, in the pipeline).
      const bool halves = halves_only_ || moves_halves;
      const int64_t per_thread = !halves ? 8 : R >= 4096 ? 32 : 16;
      const int64_t heuristic = generic_row ? prev_pow2(std::max<int64_t>(1, R * 3 / 16)) : next_pow2((R + per_thread - 1) / per_thread);
      const int64_t t = cfg.threads_per_row ? cfg.threads_per_row : std::min<int64_t>(1024, heuristic);
      launch.threads_per_row = static_cast<int>(std::max<int64_t>(1, t));
      launch.block = launch.threads_per_row > 32 ? launch.threads_per_row : 256;
      const int64_t rows_per_block = launch.block / launch.threads_per_row;
      launch.grid = (X + rows_per_block - 1) / rows_per_block;
    }
    if (launch.form == "split" && launch.split == 1) {  // nothing to split: one block per row
      launch.form = "row";
      launch.grid = X;
    }
    T_ = launch.threads_per_row;
    // Column form on sm_90 and later, at most 16 slices a column (a cluster's most, non-portable
    // above 8): the slices of a column group are one thread-block cluster, and the first block
    // sums the others' column sums from their shared memory (no partials, fences or count: the
    // LayerNorm weight gradients at 8x1024x1024, 0.0320 -> 0.0280 ms in tools/gpu/column_variants.cu).
    if (column_ && launch.split >= 2 && launch.split <= 16) cluster_ = cluster_possible(segs);
    if (launch.form == "split" || (column_ && launch.split > 1 && !cluster_)) {
      // Partials (one slot per row and slice, per reduction, 8-byte aligned), then the counters
      // (clusters keep theirs in shared memory).
      int64_t off = 0;
      for (int n : segs.front().nodes)
        if (p_.nodes[n].kind == LoopNode::Kind::reduction) {
          scratch_off_[n] = off;
          off += X * launch.split * 8 * (reduce_is_arg(p_.nodes[n].reduce) ? 2 : 1);  // an arg reduction's values, then its indices
        }
      counter_off_ = off;
      launch.scratch_bytes = off + X * 4;
      params += ", char* __restrict__ ls_ws";
    }

    launch.cluster = cluster_;
    const std::string cluster_dims = cluster_ ? "__cluster_dims__(" + std::to_string(launch.split) + ", 1, 1) " : "";

    LoopEmitter e(ptrs_, std::set<std::string>(k_.writes.begin(), k_.writes.end()), p_, Dialect::cuda);
    e.fast_exp = e.fast_div = halves_only_;
    std::string origins;
    for (const auto& o : k_.origins) origins += (origins.empty() ? "" : ", ") + o;
    e.lines.push_back({"// " + k_.name + ": iteration (" + std::to_string(X) + ", " + std::to_string(R) + "), " + launch.form +
                       " form, grid " + std::to_string(launch.grid) + " x block " + std::to_string(launch.block) +
                       (column_ ? ", 32 columns x " + std::to_string(T_) + " lanes" : "") +
                       (launch.split > 1 ? ", " + std::to_string(launch.split) + " slices a " + (column_ ? "column" : "row") : "") +
                       (cluster_ ? " (a thread-block cluster)" : "") +
                       ", from " +
                       origins});
    e.lines.push_back({"extern \"C\" __global__ void __launch_bounds__(" + std::to_string(launch.block) + ") " + cluster_dims + k_.name +
                       "(" + params + ") {"});
    e.push_scope();
    const std::string Xs = std::to_string(X), Rs = std::to_string(R);
    if (launch.form == "pointwise" && pointwise_vector) {
      // W (lanes_) consecutive elements a thread, moved as one 16-byte access per buffer (X % W == 0).
      const std::string W = std::to_string(lanes_);
      e.line("const " + idx_ + " ls_g = (" + idx_ + ")blockIdx.x * " + std::to_string(block_) + " + threadIdx.x;  // elements " + W +
             " * ls_g .. " + W + " * ls_g + " + std::to_string(lanes_ - 1));
      const bool tail = o_.size_generic || (X / lanes_) % block_ != 0;
      if (tail) {
        // Size-generic code bounds W * ls_g by X itself: its numbers must be polynomials of the sizes.
        e.line(o_.size_generic ? "if (" + W + " * ls_g < " + Xs + ") {" : "if (ls_g < " + std::to_string(X / lanes_) + ") {");
        e.indent += "    ";
      }
      emit_vector_loop(e, *pointwise_vector, "x0", [&] {
        e.push_scope();
        emit_segments(e, segs, X, R);
        e.pop_scope();
      });
      if (tail) close(e);
    } else if (launch.form == "pointwise") {
      const std::string B = std::to_string(block_);
      e.line("const " + idx_ + " ls_base = (" + idx_ + ")blockIdx.x * " + std::to_string(block_ * unroll_) +
             " + threadIdx.x;");
      const std::string U = std::to_string(unroll_);
      // Whole blocks take a path without bounds checks, so the unrolled loads can all be issued
      // before the first store; the last block checks every element.
      const bool tail = o_.size_generic || X % (int64_t(block_) * unroll_) != 0;
      for (int guarded = 0; guarded <= (tail ? 1 : 0); ++guarded) {
        if (tail) {
          e.line(guarded ? "} else {" : "if (ls_base + " + std::to_string(int64_t(unroll_ - 1) * block_) + " < " + Xs + ") {");
          e.indent += "    ";
        }
        e.line("#pragma unroll");
        e.line("for (int ls_u = 0; ls_u < " + U + "; ++ls_u) {");
        e.indent += "    ";
        e.line("const " + idx_ + " x0 = ls_base + ls_u * " + B + ";");
        if (guarded) {
          e.line("if (x0 < " + Xs + ") {");
          e.indent += "    ";
        }
        e.push_scope();
        emit_segments(e, segs, X, R);
        e.pop_scope();
        if (guarded) close(e);
        close(e);
        if (tail) e.indent.resize(e.indent.size() - 4);
      }
      if (tail) e.line("}");
    } else if (launch.form == "row") {
      const int rows_per_block = launch.block / T_;
      e.line("const int ls_rt = threadIdx.x" + (rows_per_block > 1 ? " % " + std::to_string(T_) : std::string()) + ";");
      e.line("const " + idx_ + " x0 = " +
             (rows_per_block > 1 ? "(" + idx_ + ")blockIdx.x * " + std::to_string(rows_per_block) + " + threadIdx.x / " + std::to_string(T_)
                                 : std::string("blockIdx.x")) + ";");
      const bool guard = rows_per_block > 1 && (o_.size_generic || X % rows_per_block != 0);
      if (guard) {
        e.line("if (x0 < " + Xs + ") {");
        e.indent += "    ";
      }
      e.push_scope();
      emit_segments(e, segs, X, R);
      e.pop_scope();
      if (guard) close(e);
    } else if (column_) {
      const std::string S = std::to_string(launch.split);
      e.line("const int ls_rt = threadIdx.x >> 5;  // the lane: which rows");
      e.line("const " + idx_ + " x0 = (" + idx_ + ")" + (launch.split > 1 ? "(blockIdx.x / " + S + ")" : std::string("blockIdx.x")) +
             " * 32 + (threadIdx.x & 31);");
      if (launch.split > 1) {
        e.line("const int ls_slice = blockIdx.x % " + S + ";");
        split_ = launch.split;
      }
      emit_segments(e, segs, X, R);
    } else {
      const std::string S = std::to_string(launch.split);
      e.line("const int ls_rt = threadIdx.x;");
      e.line("const " + idx_ + " x0 = blockIdx.x / " + S + ";");
      e.line("const int ls_slice = blockIdx.x % " + S + ";");
      split_ = launch.split;
      emit_segments(e, segs, X, R);
    }
    e.pop_scope();
    e.node = -1;
    e.lines.push_back({"}"});
    if (vectorized_) launch.vector = lanes_;
    out.insert(out.end(), e.lines.begin(), e.lines.end());
    return gk;
  }

 private:
  static void close(LoopEmitter& e) {
    e.indent.resize(e.indent.size() - 4);
    e.line("}");
  }

  // 16-byte accesses along `var` (x0 in the pointwise form, r0 in an r loop): the loop takes
  // groups of W consecutive values, var = W * ls_g + ls_j, and each buffer its nodes read or write
  // along var moves as one access a group (W = 4: float32 as a float4, halves as a uint2; W = 8 where
  // only halves move: a uint4, 16 bytes as the float4s); the body runs once per lane ls_j (unrolled,
  // so the lanes are registers). Possible when every such access moves one element a step and
  // starts each group on a 16-byte boundary (kernel arguments are whole allocations, which the
  // driver aligns to 256 bytes); accesses that stay put along var (a broadcast) stay scalar, and
  // a read that moves along var but is one element for the group's 4 lanes (its index equal at
  // every lane once simplified: a channel's statistic over NCHW planes that are a multiple of 4)
  // is loaded once before the lanes. Otherwise nullopt: the scalar loop.
  struct VectorAccess {
    std::string key, buffer, at;  // the emitter's key, the buffer, the address of the group's first element
  };
  struct VectorPlan {
    std::vector<VectorAccess> loads, stores;
    std::vector<VectorAccess> broadcasts;  // one element for the group's lanes: loaded once before them (at: the element)
    bool all_half = true;                  // every load and store is bfloat16/float16 (groups of 8 fit 16 bytes)
  };
  // W lanes a group: 4 (float32 as float4, halves as uint2), or 8 where every buffer that moves is
  // a half type (uint4: 16 bytes of halves, as Inductor's bf16 kernels load).
  std::optional<VectorPlan> vector_plan(const std::vector<int>& nodes, const std::set<int>& recomputed, const std::string& var,
                                        int64_t extent, int64_t X, int64_t R, int W) const {
    if (extent < W || extent % W != 0) return std::nullopt;
    const Expr j = Expr::var("ls_j", W);
    const std::map<std::string, Expr> lanes = {{var, Expr::var("ls_g", extent / W) * W + j}}, lane0 = {{"ls_j", Expr(0)}};
    const std::set<std::string> reads(k_.reads.begin(), k_.reads.end()), writes(k_.writes.begin(), k_.writes.end());
    VectorPlan plan;
    std::set<std::string> seen;
    for (int n : nodes) {
      const Placement pl = place(p_.nodes[n], X, R);
      const Dependencies d = extract_dependencies(p_.nodes[n], pl.idx, pl.ridx);
      for (const bool write : {false, true})
        for (const MemDep& m : write ? d.writes : d.reads) {
          if (!(write ? writes : reads).count(m.buffer)) continue;  // handed over in registers
          if (write && recomputed.count(n)) continue;                 // not stored from this loop
          // An index read from data (an embedding's row) is known only inside the body, after the
          // group's loads would have been issued: no vector loop.
          if (m.index.has_indirect()) return std::nullopt;
          if (!m.index.depends_on(var)) continue;                      // one element for the group
          const std::string key = m.buffer + "[" + m.index.str() + "]";
          if (!seen.insert((write ? "w:" : "r:") + key).second) continue;
          // float32 as float4; halves as 4 lanes of 8 bytes (uint2) or 8 of 16 (uint4)
          const DType bt = p_.buffer(m.buffer).dtype;
          if (bt != DType::f32 && !dtype_is_half(bt)) return std::nullopt;
          const Expr e = m.index.substitute(lanes), e0 = e.substitute(lane0);
          // One element for the group's 4 lanes (a channel's statistic over an NCHW tensor whose
          // planes are a multiple of 4): a scalar load, as a broadcast.
          if (!write && e == e0) {
            plan.broadcasts.push_back({key, m.buffer, ptrs_.at(m.buffer) + "[" + e0.cpp() + "]"});
            continue;
          }
          if (W == 8 && !dtype_is_half(bt)) return std::nullopt;  // float32 moves 4 a group
          if (e - e0 != j || e0.constant() % W != 0) return std::nullopt;
          for (const Expr::Term& t : e0.terms())
            if (t.coeff % W != 0) return std::nullopt;
          plan.all_half = plan.all_half && dtype_is_half(bt);
          (write ? plan.stores : plan.loads).push_back({key, m.buffer, "&" + ptrs_.at(m.buffer) + "[" + e0.cpp() + "]"});
        }
    }
    if (plan.loads.empty() && plan.stores.empty()) return std::nullopt;
    return plan;
  }

  // The float4 loads before the lane loop (a load of a row kept in registers only the first time
  // the row is walked), the lane loop, the float4 stores after it.
  template <typename Body>
  void emit_vector_loop(LoopEmitter& e, const VectorPlan& plan, const std::string& var, Body body) {
    std::map<std::string, std::string> loads, stores;
    std::vector<std::string> after;
    int count = 0;
    const std::string half_type = lanes_ == 8 ? "uint4" : "uint2";  // a group of halves
    for (const VectorAccess& a : plan.loads) {
      if (auto row = row_regs_.find(a.key); row != row_regs_.end()) {
        const std::string slot = row->second + "[ls_i]";
        const DType t = p_.buffer(a.buffer).dtype;
        const std::string type = dtype_is_half(t) ? half_type : "float4";
        if (row_loaded_.insert(a.key).second) e.line(slot + " = *reinterpret_cast<const " + type + "*>(" + a.at + ");");
        loads[a.key] = dtype_is_half(t) ? "ls_float(ls_lane_" + std::string(dtype_short(t)) + "(" + slot + ", ls_j))" : "ls_lane(" + slot + ", ls_j)";
        continue;
      }
      const std::string v = "ls_v" + std::to_string(count++);
      const DType t = p_.buffer(a.buffer).dtype;
      if (dtype_is_half(t)) {  // 4 halves in 8 bytes or 8 in 16, each widened to float
        e.line("const " + half_type + " " + v + " = *reinterpret_cast<const " + half_type + "*>(" + a.at + ");");
        loads[a.key] = "ls_float(ls_lane_" + std::string(dtype_short(t)) + "(" + v + ", ls_j))";
        continue;
      }
      e.line("const float4 " + v + " = *reinterpret_cast<const float4*>(" + a.at + ");");
      loads[a.key] = "ls_lane(" + v + ", ls_j)";
    }
    for (const VectorAccess& a : plan.broadcasts) {
      if (loads.count(a.key)) continue;
      const std::string v = "ls_v" + std::to_string(count++);
      e.line("const float " + v + " = " + (dtype_is_half(p_.buffer(a.buffer).dtype) ? "ls_float(" + a.at + ")" : a.at) + ";");
      loads[a.key] = v;
    }
    for (const VectorAccess& a : plan.stores) {
      const std::string v = "ls_w" + std::to_string(count++);
      const std::string type = dtype_is_half(p_.buffer(a.buffer).dtype) ? half_type : "float4";
      e.line(type + " " + v + ";");
      stores[a.key] = v;
      after.push_back("*reinterpret_cast<" + type + "*>(" + a.at + ") = " + v + ";");
    }
    e.vector_loads = loads;
    e.vector_stores = stores;
    e.line("#pragma unroll");
    e.line("for (int ls_j = 0; ls_j < " + std::to_string(lanes_) + "; ++ls_j) {");
    e.indent += "    ";
    e.line("const " + idx_ + " " + var + " = " + std::to_string(lanes_) + " * ls_g + ls_j;");
    body();
    close(e);
    e.vector_loads.clear();
    e.vector_stores.clear();
    for (const std::string& l : after) e.line(l);
  }

  // The persistent row form: a row short enough that each thread holds at most 4 groups of it
  // (R % (4 T) == 0), walked by more than one r loop (LayerNorm: the mean, the variance, the
  // output), keeps each buffer those loops read at the same place in registers (float4 arrays,
  // uint2 ones of 4 halves for bf16/f16, the loops fully unrolled), so it is read from memory once instead of once per loop. Returns
  // the groups each thread holds (0: the looped form).
  int64_t plan_row_registers(LoopEmitter& e, const std::vector<KernelLoop>& segs, const std::vector<std::optional<VectorPlan>>& plans,
                             int64_t R) {
    row_regs_.clear();
    row_loaded_.clear();
    // Not in size-generic code (the groups a thread holds are a quotient of the row length), unless
    // a weight fixes the row's length.
    if ((o_.size_generic && !row_fixed_) || split_ || column_ || R % (lanes_ * int64_t(T_)) != 0 || R / (lanes_ * int64_t(T_)) > 4) return 0;
    std::map<std::string, int> uses;
    std::map<std::string, std::string> buffer_of;
    std::vector<std::string> first_use;  // the keys in the order the code loads them, which numbers the arrays
    int inner = 0;
    for (size_t i = 0; i < segs.size(); ++i) {
      if (!segs[i].inner) continue;
      ++inner;
      if (!plans[i]) return 0;
      for (const VectorAccess& a : plans[i]->loads) {
        if (++uses[a.key] == 1) first_use.push_back(a.key);
        buffer_of[a.key] = a.buffer;
      }
    }
    if (inner < 2) return 0;
    const int64_t groups = R / (lanes_ * int64_t(T_));
    for (const std::string& key : first_use) {
      const int n = uses[key];
      const std::string& buf = buffer_of[key];
      const DType t = p_.buffer(buf).dtype;
      if (n < 2 || std::count(k_.writes.begin(), k_.writes.end(), buf) || (t != DType::f32 && !dtype_is_half(t))) continue;
      const std::string name = "ls_row" + std::to_string(row_regs_.size());
      row_regs_[key] = name;
      e.line(std::string(dtype_is_half(t) ? (lanes_ == 8 ? "uint4 " : "uint2 ") : "float4 ") + name + "[" + std::to_string(groups) +
             "];  // " + key + ": this thread's part of the row, read once");
    }
    return row_regs_.empty() ? 0 : groups;
  }

  void emit_segments(LoopEmitter& e, const std::vector<KernelLoop>& segs, int64_t X, int64_t R) {
    const std::string guard = T_ > 1 ? "ls_rt == 0" : "";
    std::vector<std::optional<VectorPlan>> plans(segs.size());
    bool any = false, all_half = true;
    for (size_t i = 0; i < segs.size(); ++i)
      if (segs[i].inner && !column_) {
        plans[i] = vector_plan(segs[i].nodes, segs[i].recomputed, "r0", R, X, R, 4);
        any = any || plans[i];
        all_half = all_half && (!plans[i] || plans[i]->all_half);
      }
    // Every loop of the row moves only halves: groups of 8 (16 bytes) where each loop's plan holds
    // at that width (one width for the kernel: the loops share the row's groups).
    if (any && all_half) {
      std::vector<std::optional<VectorPlan>> wide(segs.size());
      bool fits = true;
      for (size_t i = 0; i < segs.size() && fits; ++i)
        if (plans[i]) fits = (wide[i] = vector_plan(segs[i].nodes, segs[i].recomputed, "r0", R, X, R, 8)).has_value();
      if (fits) plans = std::move(wide), lanes_ = 8;
    }
    const int64_t row_groups = plan_row_registers(e, segs, plans, R);
    for (size_t si = 0; si < segs.size(); ++si) {
      const KernelLoop& s = segs[si];
      if (!s.inner) {
        e.store_guard = guard;  // values of the row: every thread of the row has them, one stores
        for (int n : s.nodes) run_node(e, n, X, R);
        e.store_guard.clear();
        continue;
      }
      std::vector<int> reductions;
      for (int n : s.nodes) {
        const LoopNode& ln = p_.nodes[n];
        if (ln.kind != LoopNode::Kind::reduction) continue;
        accs_[n] = "acc" + std::to_string(n);
        reductions.push_back(n);
        e.node = n;
        if (reduce_is_arg(ln.reduce)) {  // its value and, beside it, its index
          e.line(std::string(dtype_c(ln.arg_dtype)) + " " + accs_[n] + " = " + reduce_identity(ln.reduce, ln.arg_dtype, Dialect::cuda) + "; int64_t " +
                 accs_[n] + "_i = 0;");
          continue;
        }
        e.line(std::string(dtype_c(compute_dtype(ln.dtype))) + " " + accs_[n] + " = " + reduce_identity(ln.reduce, ln.dtype, Dialect::cuda) + ";");
      }
      e.node = -1;
      const std::string start = split_ ? "(" + idx_ + ")ls_slice * " + std::to_string(T_) + " + ls_rt" : T_ > 1 ? "ls_rt" : "0";
      const std::string step = split_ ? std::to_string(split_ * T_) : std::to_string(T_);
      const std::optional<VectorPlan>& vec = plans[si];
      if (vec && row_groups) {
        // The row in registers: this thread's groups ls_i = 0 .. row_groups - 1, fully unrolled.
        vectorized_ = true;
        e.line("#pragma unroll");
        e.line("for (int ls_i = 0; ls_i < " + std::to_string(row_groups) + "; ++ls_i) {");
        e.indent += "    ";
        e.line("const " + idx_ + " ls_g = " + start + " + ls_i * " + step + ";");
        emit_vector_loop(e, *vec, "r0", [&] { e.run_loop_nodes(s, [&](int n) { run_node(e, n, X, R); }); });
        close(e);
      } else if (vec) {
        // Groups of 4 (8) consecutive r, each buffer that moves along r moved 16 (halves in 4s: 8) bytes at a time.
        vectorized_ = true;
        e.line("#pragma unroll 2");  // two groups' loads in flight per thread
        const std::string bound =
            o_.size_generic ? std::to_string(lanes_) + " * ls_g < " + std::to_string(R) : "ls_g < " + std::to_string(R / lanes_);
        e.line("for (" + idx_ + " ls_g = " + start + "; " + bound + "; ls_g += " + step + ") {");
        e.indent += "    ";
        emit_vector_loop(e, *vec, "r0", [&] { e.run_loop_nodes(s, [&](int n) { run_node(e, n, X, R); }); });
        close(e);
      } else {
        e.line("#pragma unroll 4");  // several loads in flight per thread
        e.line("for (" + idx_ + " r0 = " + start + "; r0 < " + std::to_string(R) + "; r0 += " + step + ") {");
        e.indent += "    ";
        e.run_loop_nodes(s, [&](int n) { run_node(e, n, X, R); });
        close(e);
      }
      for (int n : reductions) {
        const LoopNode& ln = p_.nodes[n];
        e.node = n;
        if (reduce_is_arg(ln.reduce)) {
          if (const std::string a = arg_across(ln); !a.empty()) e.line(a);
          continue;
        }
        e.line(accs_[n] + " = " + across(ln) + ";");
      }
      if (split_) finish_split(e, reductions);
      e.node = -1;
      e.bind_finished_reductions(k_.writes, guard);
    }
  }

  // The reduction of one accumulator across the threads of its row.
  std::string across(const LoopNode& ln) {
    const std::string op = std::to_string(reduce_op(ln.reduce));
    // The identity in the accumulator's type (an integer literal is an int: an int64 sum's or
    // product's 0 or 1 would leave the helper's type undecided).
    std::string identity = reduce_identity(ln.reduce, ln.dtype, Dialect::cuda);
    if (!dtype_is_float(ln.dtype)) identity = "static_cast<" + std::string(dtype_c(ln.dtype)) + ">(" + identity + ")";
    if (T_ <= 1) return accs_.at(index_of(ln));
    if (column_) return "ls_column_reduce<" + op + ">(" + accs_.at(index_of(ln)) + ", " + identity + ")";
    if (T_ <= 32) return "ls_warp_reduce<" + op + ", " + std::to_string(T_) + ">(" + accs_.at(index_of(ln)) + ")";
    const std::string slot = std::to_string(1 + block_reductions_++ % 2);  // alternating buffers: one barrier each
    return "ls_block_reduce<" + op + ", " + slot + ">(" + accs_.at(index_of(ln)) + ", " + identity + ")";
  }
  int index_of(const LoopNode& ln) const { return static_cast<int>(&ln - p_.nodes.data()); }
  // An arg reduction's (value, index) across the threads of its row (never the column form).
  std::string arg_across(const LoopNode& ln) {
    const std::string acc = accs_.at(index_of(ln)), max = ln.reduce == Reduce::argmax ? "true" : "false";
    if (T_ <= 1) return "";
    if (T_ <= 32) return "ls_warp_arg_reduce<" + max + ", " + std::to_string(T_) + ">(" + acc + ", " + acc + "_i);";
    return "ls_block_arg_reduce<" + max + ">(" + acc + ", " + acc + "_i, " + reduce_identity(ln.reduce, ln.arg_dtype, Dialect::cuda) + ");";
  }
  bool arg_reduction(const std::vector<KernelLoop>& segs) const {
    for (const KernelLoop& s : segs)
      for (int n : s.nodes)
        if (p_.nodes[n].kind == LoopNode::Kind::reduction && reduce_is_arg(p_.nodes[n].reduce)) return true;
    return false;
  }

  // A split column kernel can be a cluster: sm_90 or later, fixed sizes, float reductions.
  bool cluster_possible(const std::vector<KernelLoop>& segs) const {
    if (o_.sm < 90 || o_.size_generic) return false;
    for (int n : segs.front().nodes)
      if (p_.nodes[n].kind == LoopNode::Kind::reduction && compute_dtype(p_.nodes[n].dtype) != DType::f32 && p_.nodes[n].dtype != DType::f64)
        return false;
    return true;
  }

  // Column form as a cluster: each block's column sums in its shared memory; the first warp of
  // the cluster's first block (slice 0) combines them all, the others wait until it has read theirs.
  void finish_cluster(LoopEmitter& e, const std::vector<int>& reductions) {
    const std::string S = std::to_string(split_);
    for (int n : reductions) {
      const std::string t(dtype_c(compute_dtype(p_.nodes[n].dtype))), part = "ls_cpart" + std::to_string(n);
      e.line("__shared__ " + t + " " + part + "[32];");
      e.line("if (ls_rt == 0) " + part + "[threadIdx.x] = " + accs_.at(n) + ";");
    }
    e.line("ls_cluster_sync();  // the cluster's blocks (the column group's " + S + " slices) have their sums in shared memory");
    // The first block's first warp reads the others' (distributed shared memory): the column form
    // stores its results from that warp only (ls_rt == 0).
    e.line("if (ls_slice == 0 && ls_rt == 0) {");
    e.indent += "    ";
    for (int n : reductions) {
      const LoopNode& ln = p_.nodes[n];
      e.line(accs_.at(n) + " = " + reduce_identity(ln.reduce, ln.dtype, Dialect::cuda) + ";");
    }
    e.line("for (unsigned s = 0; s < " + S + "u; ++s) {");
    e.indent += "    ";
    for (int n : reductions) {
      const LoopNode& ln = p_.nodes[n];
      const std::string acc = accs_.at(n);
      e.line(acc + " = ls_combine<" + std::to_string(reduce_op(ln.reduce)) + ">(" + acc + ", ls_cluster_load(&ls_cpart" + std::to_string(n) +
             "[threadIdx.x & 31], s));");
    }
    close(e);
    close(e);
    e.line("ls_cluster_sync();  // read: the others may leave");
    e.line("if (ls_slice != 0) return;");
  }

  // Split form: publish this block's partials; the last block of the row combines them.
  void finish_split(LoopEmitter& e, const std::vector<int>& reductions) {
    if (cluster_) return finish_cluster(e, reductions);
    const std::string S = std::to_string(split_);
    for (int n : reductions) {
      const LoopNode& ln = p_.nodes[n];
      const bool arg = reduce_is_arg(ln.reduce);
      const std::string t(dtype_c(arg ? ln.arg_dtype : compute_dtype(ln.dtype))), part = "ls_part" + std::to_string(n);
      e.line(t + "* " + part + " = reinterpret_cast<" + t + "*>(ls_ws + " + std::to_string(scratch_off_.at(n)) + ");");
      e.line("if (ls_rt == 0) " + part + "[x0 * " + S + " + ls_slice] = " + accs_.at(n) + ";");
      if (!arg) continue;
      e.line("int64_t* " + part + "_i = reinterpret_cast<int64_t*>(ls_ws + " + std::to_string(scratch_off_.at(n) + k_.numel * split_ * 8) + ");");
      e.line("if (ls_rt == 0) " + part + "_i[x0 * " + S + " + ls_slice] = " + accs_.at(n) + "_i;");
    }
    // One counter a row (split form) or a group of 32 columns (column form).
    const std::string counter = column_ ? "ls_count[blockIdx.x / " + S + "]" : "ls_count[x0]";
    e.line("unsigned* ls_count = reinterpret_cast<unsigned*>(ls_ws + " + std::to_string(counter_off_) + ");");
    e.line("__shared__ bool ls_last;");
    e.line("if (ls_rt == 0) __threadfence();  // the threads that wrote partials make them visible ...");
    e.line("__syncthreads();  // ... before the block is counted");
    e.line("if (threadIdx.x == 0) ls_last = atomicAdd(&" + counter + ", 1u) == " + S + "u - 1u;");
    e.line("__syncthreads();");
    e.line(std::string("if (!ls_last) return;  // the ") + (column_ ? "columns'" : "row's") + " last block finishes them");
    e.line("__threadfence();");
    // Every reduction's partials in one loop (their loads in flight together: one round trip to
    // L2, not one per reduction), then the reductions across the threads.
    for (int n : reductions) {
      const LoopNode& ln = p_.nodes[n];
      if (reduce_is_arg(ln.reduce)) e.line(accs_.at(n) + " = " + reduce_identity(ln.reduce, ln.arg_dtype, Dialect::cuda) + ", " + accs_.at(n) + "_i = 0;");
      else e.line(accs_.at(n) + " = " + reduce_identity(ln.reduce, ln.dtype, Dialect::cuda) + ";");
    }
    e.line("for (int s = ls_rt; s < " + S + "; s += " + std::to_string(T_) + ") {");
    e.indent += "    ";
    for (int n : reductions) {
      const LoopNode& ln = p_.nodes[n];
      const std::string acc = accs_.at(n), part = "ls_part" + std::to_string(n);
      if (reduce_is_arg(ln.reduce))  // the slices' pairs: any order gives the first extremum (ls_arg_keeps)
        e.line("ls_arg_combine<" + std::string(ln.reduce == Reduce::argmax ? "true" : "false") + ">(" + acc + ", " + acc + "_i, __ldcg(&" + part +
               "[x0 * " + S + " + s]), __ldcg(&" + part + "_i[x0 * " + S + " + s]));");
      else
        e.line(acc + " = ls_combine<" + std::to_string(reduce_op(ln.reduce)) + ">(" + acc + ", __ldcg(&" + part + "[x0 * " + S + " + s]));");
    }
    close(e);
    for (int n : reductions) {
      if (!reduce_is_arg(p_.nodes[n].reduce)) e.line(accs_.at(n) + " = " + across(p_.nodes[n]) + ";");
      else if (const std::string a = arg_across(p_.nodes[n]); !a.empty()) e.line(a);
    }
    e.line("if (threadIdx.x == 0) " + counter + " = 0;  // ready for the next launch");
  }

  // Whether the kernel's r loops read and write memory mostly along x (consecutive x at
  // consecutive addresses, consecutive r further apart): a column reduction.
  bool column_major(const std::vector<KernelLoop>& segs, int64_t X, int64_t R) const {
    int along_x = 0, along_r = 0;
    auto count = [&](const std::vector<MemDep>& deps, const std::vector<std::string>& mine) {
      for (const MemDep& d : deps) {
        if (!std::count(mine.begin(), mine.end(), d.buffer) || !d.index.depends_on("r0")) continue;
        if (d.index.coefficient("r0") == 1) ++along_r;
        else if (d.index.coefficient("x0") == 1) ++along_x;
      }
    };
    for (const KernelLoop& s : segs) {
      if (!s.inner) continue;
      for (int n : s.nodes) {
        const Placement pl = place(p_.nodes[n], X, R);
        const Dependencies d = extract_dependencies(p_.nodes[n], pl.idx, pl.ridx);
        count(d.reads, k_.reads);
        count(d.writes, k_.writes);
      }
    }
    return along_x > along_r;
  }

  void run_node(LoopEmitter& e, int n, int64_t X, int64_t R) {
    const LoopNode& ln = p_.nodes[n];
    const Placement pl = place(ln, X, R);
    e.node = n;
    if (ln.kind == LoopNode::Kind::reduction) e.acc = accs_.at(n), e.acc_index = accs_.at(n) + "_i";
    e.line("// " + ln.name + ": " + ln.graph_node);
    ln.run(e, pl.idx, pl.ridx);
    e.node = -1;
  }

  const LoopProgram& p_;
  const Kernel& k_;
  const CudaCodegenOptions& o_;
  std::string idx_ = "int64_t";
  std::map<std::string, std::string> ptrs_;  // buffer -> its parameter
  bool vectorized_ = false;                  // an r loop moves 16 bytes at a time
  int lanes_ = 4;                            // elements a vector group: 4, or 8 where only halves move
  bool halves_only_ = true;                  // every buffer the kernel reads or writes is bf16/f16
  int block_reductions_ = 0;                 // ls_block_reduce calls so far (their buffers alternate)
  std::map<std::string, std::string> row_regs_;  // persistent row form: load key -> its float4 array
  std::set<std::string> row_loaded_;             // those already loaded
  int block_ = 256, unroll_ = 4;  // pointwise form
  int T_ = 1;  // threads that share a row (row, split forms) or a column's lanes (column form)
  bool column_ = false;
  int64_t split_ = 0;
  bool cluster_ = false;  // column form: the slices of a column group are one thread-block cluster
  bool row_fixed_ = false;  // size-generic code whose row length a weight fixes (CudaCodegenOptions::fixed_buffers)
  std::map<int, std::string> accs_;
  std::map<int, int64_t> scratch_off_;
  int64_t counter_off_ = 0;
};

// A kernel's lines [begin, end) as a key that two kernels share exactly when their code is the
// same but for the kernel's name, comments, and the numbering of their locals (tmpN, accN, ...,
// numbered from node ids, which differ between layers): each local class renumbered by first
// occurrence, so equal keys are the same code up to renaming those locals.
std::string sharing_key(const std::vector<Emitted>& lines, size_t begin, const std::string& name) {
  static const std::array<std::string_view, 7> locals = {"tmp", "acc", "ls_w", "ls_v", "ls_row", "ls_part", "ls_cpart"};
  auto is_id = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::map<std::string, std::string, std::less<>> renamed;
  std::map<std::string_view, int> per_class;
  std::string key;
  for (size_t l = begin; l < lines.size(); ++l) {
    std::string_view t = lines[l].text;
    t = t.substr(0, t.find("//"));
    if (t.find_first_not_of(' ') == std::string_view::npos) continue;
    for (size_t i = 0; i < t.size();) {
      if (!is_id(t[i]) || std::isdigit(static_cast<unsigned char>(t[i]))) {
        key += t[i++];
        continue;
      }
      size_t j = i;
      while (j < t.size() && is_id(t[j])) ++j;
      const std::string_view id = t.substr(i, j - i);
      i = j;
      if (id == name) {
        key += "KERNEL";
        continue;
      }
      // A local: its class, its number, then any suffix (an arg reduction's acc12_i).
      const auto cls = std::find_if(locals.begin(), locals.end(), [&](std::string_view c) {
        return id.size() > c.size() && id.substr(0, c.size()) == c && std::isdigit(static_cast<unsigned char>(id[c.size()]));
      });
      if (cls == locals.end()) {
        key += id;
        continue;
      }
      const size_t end = id.find_first_not_of("0123456789", cls->size());
      const std::string_view local = id.substr(0, end), suffix = end == std::string_view::npos ? std::string_view() : id.substr(end);
      auto it = renamed.find(local);
      if (it == renamed.end()) it = renamed.emplace(std::string(local), std::string(*cls) + "#" + std::to_string(per_class[*cls]++)).first;
      key += it->second;
      key += suffix;
    }
    key += '\n';
  }
  return key;
}

std::string launch_key(const CudaLaunch& l) {
  return l.form + " " + std::to_string(l.grid) + " " + std::to_string(l.block) + " " + std::to_string(l.threads_per_row) + " " +
         std::to_string(l.split) + " " + std::to_string(l.scratch_bytes) + " " + std::to_string(l.vector) + " " +
         std::to_string(l.cluster) + "\n";
}

// ---- scans (cumsum), as Inductor generates them on CUDA (ir.Scan) ----------------------------

// A cumulative sum along one dimension of a whole buffer: lines of n elements `inner` apart, the
// sums in the accumulator type PyTorch's CUDA kernel uses (float for float32 and the half types,
// double for float64; integer results wrap in 64 bits), each element rounded once on its store.
struct ScanPlan {
  int64_t outer = 1, n = 1, inner = 1;
  DType x = DType::f32, y = DType::f32;
  int64_t lines() const { return outer * inner; }
};
std::optional<ScanPlan> scan_plan(const LoopProgram& p, const ExternCall& c) {
  if (c.op != &op::cumsum() || c.inputs.size() != 1 || c.outputs.size() != 1 || !c.args.at(0).is_node()) return std::nullopt;
  if (!c.transposed.empty() && c.transposed[0]) return std::nullopt;
  if (!c.strides.empty() && !c.strides[0].empty()) return std::nullopt;
  ScanPlan s;
  s.x = p.buffer(c.inputs[0]).dtype;
  s.y = p.buffer(c.outputs[0]).dtype;
  if (s.y == DType::b8 || s.y == DType::u8) return std::nullopt;  // a bool or uint8 sum: the library kernel
  const Shape shape = c.shapes.empty() ? p.buffer(c.inputs[0]).shape : c.shapes[0];
  if (!shape.empty()) {
    int64_t dim = c.args.at(1).i;
    if (dim < 0) dim += static_cast<int64_t>(shape.size());
    if (dim < 0 || dim >= static_cast<int64_t>(shape.size())) return std::nullopt;
    for (int64_t k = 0; k < static_cast<int64_t>(shape.size()); ++k) (k < dim ? s.outer : k == dim ? s.n : s.inner) *= shape[k];
  }
  if (s.lines() == 0 || s.n == 0) return std::nullopt;
  return s;
}

// The element type a scan kernel's pointer has (halves as their 16 bits).
const char* scan_ctype(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::i64: return "long long";
    case DType::i32: return "int";
    case DType::b8: return "bool";
    case DType::u8: return "unsigned char";
    case DType::bf16:
    case DType::f16: return "unsigned short";
  }
  return "float";
}
// An element of type t (expression e) as the accumulator type acc (halves widened exactly; an
// integer sum of floats takes each truncated, as the conversion to the result type does first).
std::string scan_load(DType t, const std::string& e, const std::string& acc) {
  std::string v = e;
  if (t == DType::bf16) v = "__uint_as_float(static_cast<unsigned>(" + e + ") << 16)";
  if (t == DType::f16) v = "ls_scan_f16_float(" + e + ")";
  if (acc == "unsigned long long" && t != DType::b8 && t != DType::u8) return "static_cast<unsigned long long>(static_cast<long long>(" + v + "))";
  return "static_cast<" + acc + ">(" + v + ")";
}
// The accumulator's value v stored as type t.
std::string scan_store(DType t, const std::string& v) {
  if (t == DType::bf16) return "ls_scan_bf16(" + v + ")";
  if (t == DType::f16) return "ls_scan_f16(" + v + ")";
  return "static_cast<" + std::string(scan_ctype(t)) + ">(" + v + ")";
}

// The kernel: where lines are long or few, a block per line (grid-stride over lines), the line
// read in chunks of a block's width: each warp scans its 32 values with shuffles, warp 0 scans the
// warps' totals, and the running prefix of the chunks before is carried to the next chunk; where
// lines are many and `inner` apart (a scan down columns), a thread per line walks it in order,
// neighbouring threads reading neighbouring columns (coalesced).
std::string scan_kernel(const std::string& name, const ScanPlan& s, int sm_count, CudaLaunch& launch) {
  const bool integral = !dtype_is_float(s.y);
  const std::string acc = integral ? "unsigned long long" : s.y == DType::f64 ? "double" : "float";
  const std::string xt = scan_ctype(s.x), yt = scan_ctype(s.y);
  const std::string N = std::to_string(s.n) + "LL", INNER = std::to_string(s.inner) + "LL", LINES = std::to_string(s.lines()) + "LL";
  const bool columns = s.inner >= 32 && s.lines() >= 4096;
  std::ostringstream os;
  os << "// " << name << ": cumsum as a generated scan: " << s.lines() << " line(s) of " << s.n << ", " << s.inner << " apart; "
     << (columns ? "a thread per line (columns)" : "a block per line, warp-shuffle scans, the prefix carried across chunks") << "; "
     << dtype_short(s.x) << " -> " << dtype_short(s.y) << ", summed in " << (integral ? "int64" : acc) << "\n";
  // Half conversions (the prelude's are written only where generated kernels call them), each
  // once a source.
  auto helper = [&](bool want, const char* guard, const char* text) {
    if (want) os << "#ifndef " << guard << "\n#define " << guard << "\n" << text << "\n#endif\n";
  };
  helper(s.x == DType::f16, "LS_SCAN_F16_FLOAT",
         "static __device__ __forceinline__ float ls_scan_f16_float(unsigned short h) { float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); return f; }");
  helper(s.y == DType::f16, "LS_SCAN_F16",
         "static __device__ __forceinline__ unsigned short ls_scan_f16(float f) { unsigned short r; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(r) : \"f\"(f)); return r; }");
  helper(s.y == DType::bf16, "LS_SCAN_BF16",
         "static __device__ __forceinline__ unsigned short ls_scan_bf16(float f) { unsigned short r; asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(r) : \"f\"(f)); return r; }");
  if (columns) {
    const int block = 256;
    launch = CudaLaunch{"scan"};
    launch.block = block;
    launch.grid = std::clamp<int64_t>((s.lines() + block - 1) / block, 1, int64_t(sm_count) * 32);
    os << "extern \"C\" __global__ void __launch_bounds__(" << block << ") " << name << "(const " << xt << "* __restrict__ in_ptr0, " << yt
       << "* __restrict__ out_ptr0) {\n"
       << "  for (long long ls_line = (long long)blockIdx.x * " << block << " + threadIdx.x; ls_line < " << LINES
       << "; ls_line += (long long)gridDim.x * " << block << ") {\n"
       << "    const long long ls_base = (ls_line / " << INNER << ") * " << N << " * " << INNER << " + ls_line % " << INNER << ";\n"
       << "    " << acc << " ls_acc = 0;\n"
       << "    for (long long ls_k = 0; ls_k < " << N << "; ++ls_k) {\n"
       << "      const long long ls_at = ls_base + ls_k * " << INNER << ";\n"
       << "      ls_acc += " << scan_load(s.x, "in_ptr0[ls_at]", acc) << ";\n"
       << "      out_ptr0[ls_at] = " << scan_store(s.y, "ls_acc") << ";\n"
       << "    }\n"
       << "  }\n"
       << "}\n";
    return os.str();
  }
  int block = 32;
  while (block < s.n && block < 1024) block *= 2;
  const int warps = block / 32;
  launch = CudaLaunch{"scan"};
  launch.block = block;
  launch.grid = std::clamp<int64_t>(s.lines(), 1, int64_t(sm_count) * std::max(1, 2048 / block) * 4);
  const std::string A = acc;
  os << "extern \"C\" __global__ void __launch_bounds__(" << block << ") " << name << "(const " << xt << "* __restrict__ in_ptr0, " << yt
     << "* __restrict__ out_ptr0) {\n"
     << (warps > 1 ? "  __shared__ " + A + " ls_warp_sum[" + std::to_string(warps) + "];\n" : std::string())
     << "  const int ls_lane = threadIdx.x & 31, ls_warp = threadIdx.x >> 5;\n"
     << "  for (long long ls_line = blockIdx.x; ls_line < " << LINES << "; ls_line += gridDim.x) {\n"
     << "    const long long ls_base = (ls_line / " << INNER << ") * " << N << " * " << INNER << " + ls_line % " << INNER << ";\n"
     << "    " << A << " ls_carry = 0;  // the sum of the chunks before\n"
     << "    for (long long ls_k0 = 0; ls_k0 < " << N << "; ls_k0 += " << block << ") {\n"
     << "      const long long ls_k = ls_k0 + threadIdx.x;\n"
     << "      " << A << " ls_v = ls_k < " << N << " ? " << scan_load(s.x, "in_ptr0[ls_base + ls_k * " + INNER + "]", A) << " : static_cast<" << A << ">(0);\n"
     << "#pragma unroll\n"
     << "      for (int ls_o = 1; ls_o < 32; ls_o <<= 1) {  // the warp's inclusive scan\n"
     << "        const " << A << " ls_t = __shfl_up_sync(0xffffffffu, ls_v, ls_o);\n"
     << "        if (ls_lane >= ls_o) ls_v += ls_t;\n"
     << "      }\n";
  if (warps > 1) {
    os << "      if (ls_lane == 31) ls_warp_sum[ls_warp] = ls_v;\n"
       << "      __syncthreads();\n"
       << "      if (ls_warp == 0) {  // the warps' totals, scanned\n"
       << "        " << A << " ls_w = ls_lane < " << warps << " ? ls_warp_sum[ls_lane] : static_cast<" << A << ">(0);\n"
       << "#pragma unroll\n"
       << "        for (int ls_o = 1; ls_o < " << warps << "; ls_o <<= 1) {\n"
       << "          const " << A << " ls_t = __shfl_up_sync(0xffffffffu, ls_w, ls_o);\n"
       << "          if (ls_lane >= ls_o) ls_w += ls_t;\n"
       << "        }\n"
       << "        if (ls_lane < " << warps << ") ls_warp_sum[ls_lane] = ls_w;\n"
       << "      }\n"
       << "      __syncthreads();\n"
       << "      const " << A << " ls_before = ls_carry + (ls_warp > 0 ? ls_warp_sum[ls_warp - 1] : static_cast<" << A << ">(0));\n"
       << "      if (ls_k < " << N << ") out_ptr0[ls_base + ls_k * " << INNER << "] = " << scan_store(s.y, "ls_before + ls_v") << ";\n"
       << "      ls_carry += ls_warp_sum[" << warps - 1 << "];\n"
       << "      __syncthreads();  // the totals are read before the next chunk writes them\n";
  } else {
    os << "      if (ls_k < " << N << ") out_ptr0[ls_base + ls_k * " << INNER << "] = " << scan_store(s.y, "ls_carry + ls_v") << ";\n"
       << "      ls_carry += __shfl_sync(0xffffffffu, ls_v, 31);\n";
  }
  os << "    }\n"
     << "  }\n"
     << "}\n";
  return os.str();
}

}  // namespace

std::string cuda_helpers_source() { return std::string("// Lowerscope's CUDA helper kernels\n") + kCudaPrelude + kCudaHelpers; }

int attention_head_dim(const LoopProgram& p, const ExternCall& c) {
  if (!c.op) return 0;
  const bool fwd = is_attention(c.op), bwd = is_attention_backward(c.op);
  if (!fwd && !bwd) return 0;
  const size_t first = bwd ? 1 : 0;  // the backward takes grad_out first
  if (c.args.at(first + 3).is_node()) return 0;  // a mask
  int64_t d = 0;
  for (size_t a = first; a < first + 3; ++a) {
    const size_t i = static_cast<size_t>(c.args.at(a).node);
    if (p.buffer(c.inputs.at(i)).dtype != DType::f32) return 0;
    const int64_t e = c.shapes.at(i).back();
    if (d && e != d) return 0;
    d = e;
  }
  return d == 16 || d == 32 || d == 64 || d == 128 ? static_cast<int>(d) : 0;
}

std::string attention_cuda_path(const LoopProgram& p, const ExternCall& c) {
  if (!is_attention(c.op) && !is_attention_backward(c.op)) return "";
  if (flash_half_head_dim(p, c)) return "half";  // bf16/f16: FlashAttention-2 on the tensor cores
  const size_t first = is_attention_backward(c.op) ? 1 : 0;
  const Shape& q = c.shapes.at(static_cast<size_t>(c.args.at(first).node));
  const Shape& k = c.shapes.at(static_cast<size_t>(c.args.at(first + 1).node));
  const int64_t L = q.at(q.size() - 2), S = k.at(k.size() - 2);
  const int d = attention_head_dim(p, c);
  if (d && L * S <= 128 * 128) return "fused";
  if (d == 32 || d == 64) return "tiled";
  if (c.args.at(first + 3).is_node()) return "";
  // float32 operands (the backward's philox seed and offset, integers, are not read)
  const std::vector<size_t> tensors = first ? std::vector<size_t>{0, 1, 2, 3, 5, 6} : std::vector<size_t>{0, 1, 2};
  for (size_t a : tensors)
    if (!c.args.at(a).is_node() || p.buffer(c.inputs.at(static_cast<size_t>(c.args[a].node))).dtype != DType::f32) return "";
  return "cublas";
}

std::string KernelConfig::text() const {
  std::string t;
  auto add = [&](const std::string& s) { t += (t.empty() ? "" : ", ") + s; };
  if (block) add("block " + std::to_string(block));
  if (unroll) add("unroll " + std::to_string(unroll));
  if (threads_per_row) add(std::to_string(threads_per_row) + " threads a row");
  if (split) add(split == 1 ? std::string("unsplit") : std::to_string(split) + " slices");  // of a row (split form) or a column
  return t.empty() ? "heuristic" : t;
}

std::vector<KernelConfig> cuda_candidates(const CudaLaunch& h, int64_t numel, int64_t rnumel) {
  std::vector<KernelConfig> out = {KernelConfig{}};  // the heuristic's own choice first
  if (h.form == "pointwise") {
    for (int block : {128, 256, 512, 1024})
      for (int unroll : {1, 2, 4, 8})
        if ((block != h.block || unroll != 4) && int64_t(block) * unroll <= std::max<int64_t>(numel, 256))
          out.push_back({block, unroll, 0, 0});
  } else if (h.form == "row") {
    for (int t : {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024})
      if (t != h.threads_per_row && t <= std::max<int64_t>(32, rnumel)) out.push_back({0, 0, t, 0});
  } else if (h.form == "column") {
    for (int block : {64, 128, 256, 512, 1024})
      for (int64_t s : {h.split, h.split / 2, h.split * 2, int64_t(1)})
        if ((block != h.block || s != h.split) && s >= 1 && s <= 1024 && s * block / 32 <= rnumel &&
            std::find(out.begin(), out.end(), KernelConfig{block, 0, 0, s}) == out.end())
          out.push_back({block, 0, 0, s});
  } else if (h.form == "split") {
    for (int64_t s : {h.split / 4, h.split / 2, h.split * 2, h.split * 4, int64_t(1)})
      if (s != h.split && s >= 1 && s <= 1024 && s * 512 <= rnumel) out.push_back({0, 0, 0, s});
  }
  return out;
}

std::string cuda_element_function(const LoopProgram& p, const Kernel& k, const CudaCodegenOptions& o, const std::string& fname,
                                  std::vector<std::string>& args) {
  return CudaKernelWriter(p, k, o).element_function(fname, args);
}

std::string CudaGemmConfig::text() const {
  if (stages > 0)
    return "tile " + std::to_string(bm) + "x" + std::to_string(bn) + ", " + std::to_string(tm) + "x" + std::to_string(tn) + " warps, k by " +
           std::to_string(bk) + ", " + std::to_string(stages) + " stages (tensor cores)";
  return "tile " + std::to_string(bm) + "x" + std::to_string(bn) + ", " + std::to_string(tm) + "x" + std::to_string(tn) + " a thread, k by " +
         std::to_string(bk);
}

GeneratedCuda generate_cuda(const LoopProgram& p, const Schedule& s, const CudaCodegenOptions& o) {
  GeneratedCuda g;
  g.launch.assign(s.kernels.size(), CudaLaunch{"extern"});  // library calls: cuBLAS, helper kernels, or the host
  const bool share = o.share_identical_kernels && !o.size_generic;
  std::unordered_map<std::string, std::string> first_with;  // sharing_key + launch -> the kernel that has that code
  g.source = assemble_source(s, "// Generated by Lowerscope for NVRTC: one kernel per fused group.", kCudaPrelude,
                             [&](size_t i, const Kernel& k, std::vector<Emitted>& lines) {
                               const size_t begin = lines.size();
                               GeneratedKernel gk = CudaKernelWriter(p, k, o).write(lines, g.launch[i]);
                               if (!share) return gk;
                               const auto [same, fresh] = first_with.emplace(sharing_key(lines, begin, k.name) + launch_key(g.launch[i]), k.name);
                               if (fresh) return gk;
                               size_t header = begin;  // the kernel's comment lines stay: its iteration, form, origins
                               while (header < lines.size() && lines[header].text.rfind("//", 0) == 0) ++header;
                               lines.resize(header);
                               // Its lines stand for its nodes, so that selecting one shows this kernel's header.
                               for (size_t l = begin; l < lines.size(); ++l) lines[l].node = k.nodes.front();
                               lines.push_back({"// the same code as " + same->second + ", which it launches with its own buffers (compiled once)",
                                                k.nodes.front()});
                               gk.launcher = same->second;
                               return gk;
                             });
  g.matmul_algorithms = o.matmul_algorithms;
  g.gemm_templates = o.gemm_templates;
  // max-autotune's GEMM templates, after the kernels: each library call chosen so gets the
  // template's lines (its epilogue's device function, then the kernel) and a launcher; its
  // epilogue kernel is marked as running inside it.
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    const auto chosen = o.gemm_templates.find(s.kernels[k].name);
    if (chosen == o.gemm_templates.end()) continue;
    const std::optional<CudaGemmProblem> problem = cuda_gemm_problem(p, s, k);
    if (!problem) throw std::logic_error(s.kernels[k].name + ": no GEMM template fits it");
    const CudaGemmSource t = cuda_gemm_template(p, s, *problem, chosen->second, o, s.kernels[k].name + "_template");
    int line = static_cast<int>(std::count(g.source.code.begin(), g.source.code.end(), '\n'));
    g.source.code += "\n";
    GeneratedKernel& gk = g.source.kernels[k];
    gk.first_line = line + 2;
    gk.launcher = t.function;
    gk.args = t.args;
    g.source.code += t.text;
    gk.last_line = static_cast<int>(std::count(g.source.code.begin(), g.source.code.end(), '\n'));
    g.launch[k] = t.launch;
    if (problem->epilogue >= 0) g.source.kernels[static_cast<size_t>(problem->epilogue)].in_template = true;
  }
  // cumsum as a generated scan (Inductor's ir.Scan on CUDA), after the kernels: each library
  // call it takes gets its kernel's lines and a launcher, as a GEMM template does. Size-generic
  // code keeps the library kernel (the scan's sizes are written into its code).
  for (size_t k = 0; k < s.kernels.size() && !o.size_generic; ++k) {
    if (!s.kernels[k].is_extern || !g.source.kernels[k].launcher.empty()) continue;
    const std::optional<ScanPlan> plan = scan_plan(p, p.nodes.at(s.kernels[k].nodes.at(0)).ext);
    if (!plan) continue;
    const ExternCall& c = p.nodes.at(s.kernels[k].nodes.at(0)).ext;
    GeneratedKernel& gk = g.source.kernels[k];
    gk.launcher = s.kernels[k].name + "_scan";
    const std::string text = scan_kernel(gk.launcher, *plan, o.sm_count, g.launch[k]);
    const int line = static_cast<int>(std::count(g.source.code.begin(), g.source.code.end(), '\n'));
    g.source.code += "\n";
    gk.first_line = line + 2;
    gk.args = {c.inputs[0], c.outputs[0]};
    g.source.code += text;
    gk.last_line = static_cast<int>(std::count(g.source.code.begin(), g.source.code.end(), '\n'));
    for (int l = gk.first_line; l <= gk.last_line; ++l) gk.line_nodes.emplace_back(l, s.kernels[k].nodes.at(0));
  }
  // The index-fault record the prelude declares (extern), defined once, after every kernel: a
  // source cut into parts (nvJitLink) has it in its last part only.
  if (g.source.code.find("ls_index_fault(") != std::string::npos) g.source.code += "\n__device__ int64_t ls_index_fault_state[4];\n";
  // The attention kernels (short sequences: fused; long: tiled), for each head size and
  // direction the schedule's attention calls use: an inference model compiles no backward.
  std::set<std::string> instances, half;
  for (const Kernel& k : s.kernels)
    if (k.is_extern) {
      const ExternCall& c = p.nodes.at(k.nodes.at(0)).ext;
      const std::string path = attention_cuda_path(p, c);
      if (path == "half") half.insert(flash_half_instance(flash_half_type(p, c), flash_half_head_dim(p, c), is_attention_backward(c.op)));
      if (path != "fused" && path != "tiled") continue;
      instances.insert(std::string(path == "fused" ? "LS_ATTENTION_" : "LS_FLASH_ATTENTION_") +
                       (is_attention_backward(c.op) ? "BWD(" : "FWD(") + std::to_string(attention_head_dim(p, c)) + ")");
    }
  if (instances.empty() && half.empty()) return g;
  g.attention_source = std::string("// Lowerscope's attention kernels\n") + prelude_for(kCudaPrelude, "");
  for (const std::string& i : instances) g.attention_source += i + "\n";
  if (!half.empty()) g.attention_source += flash_half_device_source();  // bf16/f16 (codegen/cuda_flash_half.h)
  for (const std::string& i : half) g.attention_source += i + "\n";
  return g;
}

}  // namespace ls
