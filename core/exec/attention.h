// Where the attention kernels (CPU in extern_kernels.cpp, CUDA in codegen/cuda_prelude.h) find
// their operands: q, k, v and the output gradient may be strided views of larger buffers (read in
// place), the forward output is stored [B, L, H, D] (loop/loop_ir.h), the rest are contiguous.
// Internal to exec/.
#pragma once
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "loop/loop_ir.h"
#include "ops/op_table.h"

namespace ls {

// Element strides of one operand seen as [B, H, rows, cols] (H = 1 for 3-D operands).
struct AttnOperand {
  int64_t offset = 0, sb = 0, sh = 0, sl = 0, se = 1;
};

struct AttnGeom {
  int64_t B = 1, H = 1, L = 0, S = 0, E = 0, Ev = 0;
  bool causal = false;
  double scale = 1;
};

// Operand `input` of the call, whose logical shape is [B, (H,) rows, cols].
inline AttnOperand attn_operand(const ExternCall& c, size_t input, const Shape& logical) {
  std::vector<int64_t> st = input < c.strides.size() && !c.strides[input].empty() ? c.strides[input] : contiguous_strides(logical);
  AttnOperand o;
  o.offset = input < c.offsets.size() ? c.offsets[input] : 0;
  const size_t r = logical.size();
  if (r != 3 && r != 4) throw std::invalid_argument("attention takes 3-D or 4-D operands");
  o.sb = st[0];
  o.sh = r == 4 ? st[1] : 0;
  o.sl = st[r - 2];
  o.se = st[r - 1];
  return o;
}

// The forward output as stored: [B, L, H, Ev] for 4-D, [B, L, Ev] for 3-D.
inline AttnOperand attn_output(const AttnGeom& g, bool heads_inner) {
  AttnOperand o;
  if (heads_inner) {
    o.sb = g.L * g.H * g.Ev;
    o.sh = g.Ev;
    o.sl = g.H * g.Ev;
  } else {
    o.sb = g.H * g.L * g.Ev;
    o.sh = g.L * g.Ev;
    o.sl = g.Ev;
  }
  return o;
}

// Sizes from the logical shapes of q, k, v (the forward's operands 0-2, the backward's 1-3: it
// takes grad_out first); causal and scale from the arguments (forward: is_causal at 6, scale at
// 7; backward: 11 and 12).
inline AttnGeom attn_geom(const ExternCall& c) {
  const bool backward = is_attention_backward(c.op);
  const size_t first = backward ? 1 : 0;
  auto shape = [&](size_t arg) -> const Shape& { return c.shapes.at(static_cast<size_t>(c.args.at(arg).node)); };
  const Shape &q = shape(first), &k = shape(first + 1), &v = shape(first + 2);
  AttnGeom g;
  const size_t r = q.size();
  g.B = q[0];
  g.H = r == 4 ? q[1] : 1;
  g.L = q[r - 2];
  g.E = q[r - 1];
  g.S = k[r - 2];
  g.Ev = v[r - 1];
  const Arg& causal = c.args.at(backward ? 11 : 6);
  const Arg& scale = c.args.at(backward ? 12 : 7);
  g.causal = causal.b;
  g.scale = scale.is_none() ? 1.0 / std::sqrt(static_cast<double>(g.E)) : scale.number();
  return g;
}

}  // namespace ls
