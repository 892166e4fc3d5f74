#include "codegen/flash_attention_half.h"

#include "ops/op_table.h"

extern const char kCudaFlashHalf[];

namespace ls {

int flash_half_head_dim(const LoopProgram& p, const ExternCall& c) {
  const bool fwd = is_attention(c.op), bwd = is_attention_backward(c.op);
  if (!fwd && !bwd) return 0;
  const size_t first = bwd ? 1 : 0;              // the backward takes grad_out first
  if (c.args.at(first + 3).is_node()) return 0;  // an attention bias
  std::vector<AttentionOperand> operands;  // q, k, v; the backward's grad_out and out after them
  for (size_t a : bwd ? std::vector<size_t>{1, 2, 3, 0, 5} : std::vector<size_t>{0, 1, 2}) {
    if (!c.args.at(a).is_node()) return 0;
    const size_t i = static_cast<size_t>(c.args[a].node);
    operands.emplace_back(p.buffer(c.inputs.at(i)).dtype, c.shapes.at(i));
  }
  return flash_half_head_dim(operands[0], operands[1], operands[2], {operands.begin() + 3, operands.end()});
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
