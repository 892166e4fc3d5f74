// The op table: one declarative entry per op, with PyTorch's name and overload, its schema, its
// kind, the level(s) of IR it belongs to, and the rules every stage needs (shape/dtype inference,
// reference kernel, decomposition, view indexing, derivative). The entries live in one file per
// op family (ops/pointwise.cpp, ops/views.cpp, ...), each op with all its rules; op_table.cpp holds
// the machinery (schemas, binding, the rules of each kind). Adding an op: ops/README.md.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/index.h"
#include "ops/math.h"

namespace ls {

class GraphBuilder;

// pointwise/reduction/view lower to loop bodies; extern runs a library kernel; composite must be
// decomposed first; getitem picks one output of a multi-output node.
enum class OpKind : uint8_t { pointwise, reduction, view, composite, extern_kernel, getitem };

// The IR levels an op belongs to (bit mask).
namespace level {
constexpr unsigned aten = 1;       // any ATen op (what torch.export and AOTAutograd produce)
constexpr unsigned core_aten = 2;  // PyTorch's documented Core ATen IR
constexpr unsigned prims = 4;      // torch._prims
}  // namespace level

struct Param {
  std::string type;          // "Tensor", "Scalar", "int[1]?", "bool", "ScalarType?"
  std::string name;
  std::string default_text;  // as the schema writes it ("1", "False", "None")
  bool has_default = false;
  bool kwarg_only = false;
  // An input of the op's math: a tensor or a number, but not the `alpha` that scales `other`.
  bool is_operand() const { return !kwarg_only && name != "alpha" && (type == "Tensor" || type == "Scalar"); }
};

// The tensors a reference kernel reads: per argument, its tensor (node arguments) or its
// tensors (Tensor[] arguments).
struct RefInputs {
  std::vector<Tensor> t;
  std::vector<std::vector<Tensor>> lists;
  const Tensor& operator[](size_t i) const { return t.at(i); }
};

using InferFn = std::vector<TensorMeta> (*)(const Graph& g, const struct OpDef& op, const std::vector<Arg>& args);
// outs: the inferred output metadata; returns one tensor per output.
using RefFn = std::vector<Tensor> (*)(const struct OpDef& op, const std::vector<Arg>& args, const RefInputs& in,
                                      const std::vector<TensorMeta>& outs);
// Emits the op's decomposition into b (arguments already in b's graph); returns one value per output.
using DecompFn = std::vector<Arg> (*)(GraphBuilder& b, const struct OpDef& op, const std::vector<Arg>& args);
// What a derivative rule is given: the node's arguments (in the joint graph being built), its
// outputs, and the gradient arriving at each output (none where no gradient arrives).
struct DerivCtx {
  GraphBuilder& b;
  const struct OpDef& op;
  std::vector<Arg> args;
  std::function<Arg(int)> out;  // output i of the forward node (made on first use)
  std::vector<Arg> grads;       // per output
  std::vector<bool> wanted;     // per parameter: whether its gradient is needed
};
// Emits the vector-Jacobian product of the op into ctx.b, as calls of other ops of the table;
// returns one value per schema parameter: the gradient for that argument, none where it has
// none (numbers, integer tensors, arguments not wanted), a list for Tensor[] arguments.
using DerivFn = std::vector<Arg> (*)(DerivCtx& ctx);
// For view ops: the index into input 0 that output position `out` reads.
using ViewFn = std::vector<Expr> (*)(const Graph& g, const std::vector<Arg>& args, const std::vector<Expr>& out);

struct OpDef {
  std::string name;    // "aten.add.Tensor": namespace.op.overload, as torch.ops spells it
  std::string schema;  // "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
  OpKind kind = OpKind::pointwise;
  unsigned levels = 0;
  Math math = Math::none;        // pointwise: the scalar function
  Reduce reduce = Reduce::none;  // reduction: the combiner
  InferFn infer = nullptr;       // nullptr: the rule of its kind
  RefFn reference = nullptr;     // nullptr: the kernel of its kind
  DecompFn decompose = nullptr;  // towards ops of a lower level; nullptr: none
  ViewFn view = nullptr;
  DerivFn derivative = nullptr;  // reverse mode; nullptr: differentiated through `decompose`, if any
  // On complex values the reference interpreter runs the op's real kernel on the real parts, then
  // on the imaginary parts, and joins them (ops/complex_parts.h). Set only where every output
  // element is an input element, a sum of them, or a number of the call, so the op is linear in its
  // values: op(x) = op(re x) + i op(im x). rule_helpers.h's by_parts() sets it in the family lists.
  bool by_parts = false;
  std::vector<Param> params;     // parsed from schema
  int num_outputs = 1;

  std::string_view base_name() const;  // "add"
  bool in(unsigned lvl) const { return (levels & lvl) != 0; }
};

const std::vector<OpDef>& all_ops();
const OpDef* find_op(std::string_view name);  // "aten.sin.default" (with or without "torch.ops.")
// Also maps an in-place variant ("aten.relu_.default") to its functional op, setting *inplace.
const OpDef* find_op_functional(std::string_view name, bool* inplace = nullptr);

// Binds call arguments to the schema, filling defaults; throws std::invalid_argument naming the
// op and the parameter when the call does not fit.
std::vector<Arg> bind_args(const OpDef& op, std::vector<Arg> positional,
                           const std::vector<std::pair<std::string, Arg>>& keywords);

// Shape, dtype and strides of the op's outputs; throws std::invalid_argument on a mismatch.
std::vector<TensorMeta> infer_meta(const Graph& g, const OpDef& op, const std::vector<Arg>& args);

// The scalar math a pointwise op applies with these arguments (gelu with approximate='tanh' is
// Math::gelu_tanh). The reference kernels and the lowering both ask here.
Math pointwise_math(const OpDef& op, const std::vector<Arg>& args);

// Reductions: the reduced dimensions (normalized, sorted) and whether they are kept.
std::vector<int64_t> reduction_dims(const OpDef& op, const std::vector<Arg>& args, int64_t rank);
bool reduction_keepdim(const OpDef& op, const std::vector<Arg>& args);

// Broadcast shape of two shapes (NumPy rules); throws on a mismatch.
Shape broadcast_shapes(const Shape& a, const Shape& b);
// Whether a tensor of shape `in` broadcasts to `out` (expand's rule: no new leading dimensions on
// `in`'s side).
bool broadcasts_to(const Shape& in, const Shape& out);

// Two values for the two spatial dimensions of a window argument (one value means both); throws
// std::invalid_argument for anything else.
std::vector<int64_t> spatial_pair(const Arg& a);

// Normalizes a possibly negative dimension; throws std::invalid_argument naming the op.
int64_t wrap_dim(const OpDef& op, int64_t dim, int64_t rank);

}  // namespace ls
