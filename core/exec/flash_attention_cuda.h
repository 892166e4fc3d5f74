// The launches of the bf16/f16 FlashAttention-2 kernels (codegen/cuda_flash_half.h; which calls
// take them: codegen/flash_attention_half.h), forward and backward, over a `Gpu` as
// runtime_cuda.h's library calls take it (helper_launch by name with dynamic shared memory,
// scratch slots). Operands through their views (element offset and strides); the output through
// its view, the log-sum-exp contiguous [B, H, L] in float32, the gradients contiguous.
// Grouped-query attention: k and v have H / group heads.
#pragma once
#include <string>
#include <vector>

#include "codegen/flash_attention_half.h"
#include "exec/runtime_cuda.h"

namespace ls {

struct FlashHalf {
  long long B, H, group, L, S, D;
  bool causal;
  float scale;
  std::string type;  // "bf16" or "f16"

  static constexpr float kLog2e = 1.4426950408889634f;
  static constexpr long long kForwardRows = 128;  // a forward block's queries: LS_FH_FWD_BM
  long long padded() const { return (D + 15) / 16 * 16 + 8; }  // a shared tile's row, in halves
  unsigned forward_shared() const { return static_cast<unsigned>((kForwardRows + 2 * 64) * padded() * 2); }
  unsigned backward_shared() const { return static_cast<unsigned>((4 * 64 * padded() + 64 * 72) * 2 + 128 * 4); }
  std::string name(const char* part) const { return std::string("ls_flash_half_") + part + "_" + type + "_" + std::to_string(D); }
  // The kernels one direction launches.
  std::vector<std::string> kernels(bool backward) const {
    if (!backward) return {name("fwd")};
    return {name("bwd_pre"), name("bwd"), name("bwd_dq")};
  }

  template <class Gpu>
  void forward(Gpu& g, lsrt::cuda::DevPtr q, lsrt::cuda::View qv, lsrt::cuda::DevPtr k, lsrt::cuda::View kv, lsrt::cuda::DevPtr v,
               lsrt::cuda::View vv, lsrt::cuda::DevPtr out, lsrt::cuda::View ov, lsrt::cuda::DevPtr lse) const {
    lsrt::cuda::DevPtr qa = half_at(q, qv), ka = half_at(k, kv), va = half_at(v, vv), oa = half_at(out, ov);
    lsrt::cuda::KernelView qs = lsrt::cuda::strides(qv), ks = lsrt::cuda::strides(kv), vs = lsrt::cuda::strides(vv), os = lsrt::cuda::strides(ov);
    long long HH = H, G = group, LL = L, SS = S;
    float sl2 = scale * kLog2e;
    int c = causal;
    void* params[] = {&qa, &ka, &va, &oa, &lse, &qs, &ks, &vs, &os, &HH, &G, &LL, &SS, &sl2, &c};
    g.helper_launch(name("fwd"), B * H * ((L + kForwardRows - 1) / kForwardRows), 128, params, forward_shared());
  }

  // dq, dk, dv from grad_out, q, k, v, the forward's output and log-sum-exp; D and the float32
  // dQ accumulator in scratch slots 0 and 1.
  template <class Gpu>
  void backward(Gpu& g, lsrt::cuda::DevPtr go, lsrt::cuda::View gv, lsrt::cuda::DevPtr q, lsrt::cuda::View qv, lsrt::cuda::DevPtr k,
                lsrt::cuda::View kv, lsrt::cuda::DevPtr v, lsrt::cuda::View vv, lsrt::cuda::DevPtr o, lsrt::cuda::View ov,
                lsrt::cuda::DevPtr lse, lsrt::cuda::DevPtr dq, lsrt::cuda::DevPtr dk, lsrt::cuda::DevPtr dv) const {
    const long long rows = B * H * L;
    lsrt::cuda::DevPtr drow = g.scratch(0, static_cast<size_t>(rows * 4)), acc = g.scratch(1, static_cast<size_t>(rows * D * 4));
    lsrt::cuda::DevPtr goa = half_at(go, gv), qa = half_at(q, qv), ka = half_at(k, kv), va = half_at(v, vv), oa = half_at(o, ov);
    lsrt::cuda::KernelView gs = lsrt::cuda::strides(gv), qs = lsrt::cuda::strides(qv), ks = lsrt::cuda::strides(kv), vs = lsrt::cuda::strides(vv),
                           os = lsrt::cuda::strides(ov);
    long long HH = H, G = group, LL = L, SS = S, R = rows, n = rows * D;
    float sc = scale;
    int c = causal;
    void* pre[] = {&goa, &oa, &drow, &acc, &gs, &os, &HH, &LL, &R};
    g.helper_launch(name("bwd_pre"), (rows + 7) / 8, 256, pre);
    void* main[] = {&goa, &qa, &ka, &va, &lse, &drow, &acc, &dk, &dv, &gs, &qs, &ks, &vs, &HH, &G, &LL, &SS, &sc, &c};
    g.helper_launch(name("bwd"), B * (H / group) * ((S + 63) / 64), 128, main, backward_shared());
    void* fin[] = {&acc, &dq, &n, &sc};
    g.helper_launch(name("bwd_dq"), g.grid_for(n), 256, fin);
  }

 private:
  // A view's element offset, in 2-byte elements
  static lsrt::cuda::DevPtr half_at(lsrt::cuda::DevPtr base, const lsrt::cuda::View& v) {
    return base + static_cast<lsrt::cuda::DevPtr>(v.offset * 2);
  }
};

}  // namespace ls
