// How PyTorch's Python front end turns a torch-level call into ATen, for the Dynamo graphs
// print_readable() writes: torch.X and Tensor methods bound to an ATen overload of the op table by
// the rules of PyTorch's Python argument parser (overloads tried in its order, a Python number
// for a Tensor only where it allows one, varargs sizes, numpy's keyword aliases);
// torch.nn.functional's Python functions with their own signatures and defaults; the methods
// Python defines itself (.float(), .to(), .size(), .split(), .norm(), ...); torch.functional's
// re-exports of torch.X; Python operators and indexing (operator.getitem with ints, slices, None,
// Ellipsis and tensors; operator.setitem, `x[index] = value`); calls with no tensor effect
// (torch._C._log_api_usage_once) give no value. frontend/fx_text.cpp reads
// Dynamo graphs through here. Tests: tests/import/test_import.cpp testTorchLevel*, and the graphs
// of tests/data/stages/op_torch_level/ (test_core checks them against the reference kernels).
#pragma once
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace ls {

using PyKeywords = std::vector<std::pair<std::string, Arg>>;

// The graph being read, as a lowering sees it.
class TorchLowering {
 public:
  virtual ~TorchLowering() = default;
  // Adds a call of the op table's `op` ("aten.view.default"), its arguments bound by the op's
  // schema; returns its value (a node).
  virtual Arg call(const std::string& op, std::vector<Arg> pos, PyKeywords kw = {}) = 0;
  virtual const TensorMeta& meta(const Arg& tensor) const = 0;
  // Whether the value is a multi-output node (split, max.dim): indexing picks an output.
  virtual bool returns_tuple(const Arg& value) const = 0;
};

// A callee nothing here maps (the reader reports "unknown op 'X'" at its place).
struct UnknownTorchFunction : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

struct TorchValue {
  // A node (new, or an existing one where the call is an identity, as `x.float()` of a float
  // tensor), a number or a list of numbers (`x.size()`, `x.dim()`).
  Arg value;
  // An in-place call (`x.add_(y)`, `relu(x, inplace=True)`, `x += y`): `self` now holds `value`,
  // which has self's shape and dtype (the result cast back as ATen's in-place kernels write it).
  bool mutates_self = false;
  Arg self;
};

// `callee` as the graph spells it: "torch.tanh", "torch.nn.functional.embedding",
// "torch._C._nn.pad", "method.view" (a Tensor method; pos[0] is the tensor), "operator.add",
// "operator.iadd" (`x += y`: in place where x is a tensor).
// Throws UnknownTorchFunction for a callee it does not know, std::invalid_argument (naming the
// function) for arguments PyTorch would reject or that are not supported.
TorchValue lower_torch_call(TorchLowering& b, const std::string& callee, std::vector<Arg> pos, PyKeywords kw);

// Python's `a <symbol> b` ("+", "-", "*", "/", "//", "%", "**", "@", "&", "|", "^", "<", "<=",
// ">", ">=", "==", "!=") and unary "-", "+", "~" (one operand), with numbers on either side.
Arg lower_operator(TorchLowering& b, const std::string& symbol, const std::vector<Arg>& operands);
// "add" for "+": the operator module's name of a symbol ("" when it is none of the above).
std::string python_operator_name(const std::string& symbol, int operands);

// `self[index]`: one output of a multi-output node for an int, else tensor indexing as PyTorch's
// applySlicing does it (select, slice, unsqueeze, then aten.index for the tensor indices).
Arg lower_getitem(TorchLowering& b, const Arg& self, const Arg& index);
// `self[index] = value` (FX prints operator.setitem so): self's new value, functional. Slices, ints,
// None and Ellipsis: the value (a number, or a tensor broadcast and cast to self's type, as
// copy_to) written back through the views with slice_scatter / select_scatter; tensor indices:
// index_put (the value of self's type, as index_put_ requires); a boolean mask: where(mask, value,
// self), for a value the same at every True position (their count is data-dependent).
Arg lower_setitem(TorchLowering& b, const Arg& self, const Arg& index, const Arg& value);

// The index values Python prints: `slice(1, None, None)` and `Ellipsis`; `py_list` marks a
// list written `[0, 2]` (a plain list: parse lists are tuples otherwise), which indexing reads as
// PyTorch's treatSequenceAsTuple does: a list of ints is an index tensor, `x[[0, 2]]` is not `x[0, 2]`.
Arg py_slice(Arg start, Arg stop, Arg step);
Arg py_ellipsis();
Arg py_list(Arg list);

// How many callees map: the torch.nn.functional functions, the Tensor methods Python defines,
// the aliases, and the ATen names reachable as torch.X / Tensor.X through the op table.
struct TorchMappingCounts {
  int functional = 0, python_methods = 0, aliases = 0, aten_names = 0;
};
TorchMappingCounts torch_mapping_counts();

}  // namespace ls
