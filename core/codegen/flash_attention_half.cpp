#include "codegen/flash_attention_half.h"

#include <cstdlib>

#include "ops/op_table.h"

extern const char kCudaFlashHalf[];

namespace ls {

int flash_half_head_dim(const LoopProgram& p, const ExternCall& c) {
  const bool fwd = is_attention(c.op), bwd = is_attention_backward(c.op);
  if (!fwd && !bwd) return 0;
  if (const char* off = std::getenv("LS_FLASH_HALF"); off && std::string(off) == "0") return 0;
  const size_t first = bwd ? 1 : 0;              // the backward takes grad_out first
  if (c.args.at(first + 3).is_node()) return 0;  // an attention bias
  // q, k, v; the backward's grad_out and out too
  const std::vector<size_t> tensors = bwd ? std::vector<size_t>{0, 1, 2, 3, 5} : std::vector<size_t>{0, 1, 2};
  DType t = DType::f32;
  int64_t d = 0;
  for (size_t a : tensors) {
    if (!c.args.at(a).is_node()) return 0;
    const size_t i = static_cast<size_t>(c.args[a].node);
    const DType ti = p.buffer(c.inputs.at(i)).dtype;
    if (ti != DType::bf16 && ti != DType::f16) return 0;
    if (a == tensors[0]) t = ti;
    if (ti != t) return 0;
    const Shape& s = c.shapes.at(i);
    if (s.size() != 3 && s.size() != 4) return 0;
    const int64_t e = s.back();
    if (d && e != d) return 0;
    d = e;
  }
  return flash_half_head_dim_ok(d) ? static_cast<int>(d) : 0;
}

std::string flash_half_type(const LoopProgram& p, const ExternCall& c) {
  const size_t q = static_cast<size_t>(c.args.at(is_attention_backward(c.op) ? 1 : 0).node);
  return p.buffer(c.inputs.at(q)).dtype == DType::f16 ? "f16" : "bf16";
}

std::string flash_half_instance(const std::string& type, int head_dim, bool backward) {
  return std::string(backward ? "LS_FLASH_HALF_BWD(" : "LS_FLASH_HALF_FWD(") + type + ", " + (type == "f16" ? "1" : "0") + ", " +
         std::to_string(head_dim) + ")";
}

std::string flash_half_device_source() { return kCudaFlashHalf; }

}  // namespace ls
