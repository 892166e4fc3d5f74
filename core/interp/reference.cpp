#include "interp/reference.h"

#include <cstring>
#include <stdexcept>

#include "ops/builder.h"
#include "ops/complex_parts.h"
#include "ops/op_table.h"

namespace ls {

std::vector<Tensor> bind_inputs(const Graph& g, const std::vector<Tensor>& user_inputs) {
  std::vector<Tensor> all;
  size_t next = 0;
  for (int id : g.inputs()) {
    auto w = g.weights.find(g.nodes[id].name);
    if (w != g.weights.end()) {
      all.push_back(w->second);
    } else {
      if (next >= user_inputs.size())
        throw std::invalid_argument("the graph takes " + std::to_string(g.user_inputs().size()) + " inputs but " +
                                    std::to_string(user_inputs.size()) + " were given");
      all.push_back(user_inputs[next++]);
    }
  }
  if (next != user_inputs.size())
    throw std::invalid_argument("the graph takes " + std::to_string(g.user_inputs().size()) + " inputs but " +
                                std::to_string(user_inputs.size()) + " were given");
  return all;
}

void check_inputs(const Graph& g, const std::vector<Tensor>& inputs) {
  const auto ins = g.inputs();
  if (ins.size() != inputs.size())
    throw std::invalid_argument("the graph takes " + std::to_string(ins.size()) + " inputs but " +
                                std::to_string(inputs.size()) + " were given");
  for (size_t k = 0; k < ins.size(); ++k) {
    const TensorMeta& m = g.nodes[ins[k]].meta();
    if (m.shape != inputs[k].shape() || m.dtype != inputs[k].dtype())
      throw std::invalid_argument("input " + std::to_string(k) + " ('" + g.nodes[ins[k]].name + "') must be " +
                                  m.annotation() + " but is " + std::string(dtype_short(inputs[k].dtype())) +
                                  shape_str(inputs[k].shape()));
  }
}

std::vector<std::vector<Tensor>> evaluate_nodes(const Graph& g, const std::vector<Tensor>& placeholders) {
  std::vector<std::vector<Tensor>> vals(g.nodes.size());
  size_t next_input = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.is_placeholder()) {
      vals[i] = {placeholders.at(next_input++)};
      continue;
    }
    if (n.op->kind == OpKind::getitem) {
      vals[i] = {vals[n.args[0].node].at(n.args[1].i)};
      continue;
    }
    RefInputs in;
    in.t.resize(n.args.size());
    in.lists.resize(n.args.size());
    for (size_t k = 0; k < n.args.size(); ++k) {
      if (n.args[k].is_node()) in.t[k] = vals[n.args[k].node].at(0);
      for (const Arg& x : n.args[k].list)
        if (x.is_node()) in.lists[k].push_back(vals[x.node].at(0));
    }
    try {
      vals[i] = run_reference_kernel(*n.op, n.args, in, n.outs);
    } catch (const std::exception& e) {
      throw std::runtime_error("reference kernel of node '" + n.name + "' (" + n.op->name + "): " + e.what());
    }
  }
  return vals;
}

std::vector<Tensor> run_reference(const Graph& g, const std::vector<Tensor>& user_inputs) {
  const std::vector<Tensor> inputs = bind_inputs(g, user_inputs);
  check_inputs(g, inputs);
  const auto vals = evaluate_nodes(g, inputs);
  std::vector<Tensor> out;
  for (int o : g.outputs) out.push_back(o < 0 ? Tensor() : vals[o].at(0));
  return out;
}

// A composite without a kernel of its own (linear, conv2d, detach) runs as its decomposition, on
// the reference kernels of the ops it decomposes into.
std::vector<Tensor> run_decomposition(const OpDef& op, const std::vector<Arg>& args, const RefInputs& values) {
  if (!op.decompose) throw std::logic_error(op.name + " has no decomposition");
  Graph g;
  GraphBuilder b(g);
  std::vector<Arg> a = args;
  std::vector<Tensor> feed;
  auto bind = [&](Arg& x, const Tensor& t) {
    x = Arg::of_node(b.placeholder("in" + std::to_string(feed.size()), TensorMeta::contiguous(t.dtype(), t.shape())));
    feed.push_back(t);
  };
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].is_node()) bind(a[i], values.t.at(i));
    for (size_t k = 0; k < a[i].list.size(); ++k)
      if (a[i].list[k].is_node()) bind(a[i].list[k], values.lists.at(i).at(k));
  }
  const std::vector<Arg> res = op.decompose(b, op, a);
  std::vector<Tensor> placeholders;
  size_t next = 0;
  for (int id : g.inputs())
    placeholders.push_back(g.nodes[id].input_kind == InputKind::constant ? g.weights.at(g.nodes[id].name) : feed.at(next++));
  const auto vals = evaluate_nodes(g, placeholders);
  std::vector<Tensor> out;
  for (const Arg& r : res) out.push_back(r.is_node() ? vals[r.node].at(0) : Tensor());
  return out;
}

namespace {
bool any_half(const RefInputs& values, const std::vector<TensorMeta>& outs) {
  for (const Tensor& t : values.t)
    if (t.defined() && dtype_is_half(t.dtype())) return true;
  for (const auto& l : values.lists)
    for (const Tensor& t : l)
      if (t.defined() && dtype_is_half(t.dtype())) return true;
  for (const TensorMeta& m : outs)
    if (dtype_is_half(m.dtype)) return true;
  return false;
}
Tensor widened(const Tensor& t) { return t.defined() && dtype_is_half(t.dtype()) ? cast(t, DType::f32) : t; }

bool any_complex(const RefInputs& values, const std::vector<TensorMeta>& outs) {
  for (const Tensor& t : values.t)
    if (t.defined() && dtype_is_complex(t.dtype())) return true;
  for (const auto& l : values.lists)
    for (const Tensor& t : l)
      if (t.defined() && dtype_is_complex(t.dtype())) return true;
  for (const TensorMeta& m : outs)
    if (dtype_is_complex(m.dtype)) return true;
  return false;
}

// One part of a value operand: a complex tensor's real or imaginary part (a copy, contiguous, of
// its parts' type); a real tensor is its own real part and has imaginary part zero.
Tensor part_of(const Tensor& t, bool imag) {
  if (!t.defined()) return t;
  if (!dtype_is_complex(t.dtype())) return imag ? Tensor(t.dtype(), t.shape()) : t;
  const Tensor parts = t.viewed_as_real();  // [.., 2]
  Tensor r(parts.dtype(), t.shape());
  const size_t size = static_cast<size_t>(dtype_size(r.dtype()));
  const std::byte* src = static_cast<const std::byte*>(parts.data());
  std::byte* dst = static_cast<std::byte*>(r.data());
  for (int64_t i = 0, n = t.numel(); i < n; ++i) std::memcpy(dst + i * size, src + (2 * i + (imag ? 1 : 0)) * size, size);
  return r;
}

// An op that only moves, selects or adds up elements (ops/complex_parts.h) on complex tensors: its
// real kernel run on the real parts, then on the imaginary parts (numbers that are values: 0), and
// the two results put together, element by element, exactly. A real output (a complex value
// copied into a real tensor) keeps the real part, as PyTorch's copy_ does.
std::vector<Tensor> run_on_parts(const OpDef& op, const std::vector<Arg>& args, const RefInputs& values,
                                 const std::vector<TensorMeta>& outs) {
  std::vector<TensorMeta> part_outs = outs;
  for (TensorMeta& m : part_outs)
    if (dtype_is_complex(m.dtype)) m.dtype = real_dtype(m.dtype);
  std::vector<Tensor> runs[2];
  for (int imag = 0; imag < 2; ++imag) {
    RefInputs in = values;
    std::vector<Arg> a = args;
    for (size_t i = 0; i < a.size(); ++i) {
      if (i < in.t.size() && in.t[i].defined() && op::is_value_argument(op, i)) in.t[i] = part_of(in.t[i], imag);
      if (i < in.lists.size() && op::is_value_argument(op, i))
        for (Tensor& t : in.lists[i]) t = part_of(t, imag);
      if (imag && op::is_value_number(op, i)) {
        if (a[i].kind == Arg::Kind::real) a[i] = Arg::of_real(0.0);
        else if (a[i].kind == Arg::Kind::integer) a[i] = Arg::of_int(0);
      }
    }
    runs[imag] = run_reference_kernel(op, a, in, part_outs);
  }
  std::vector<Tensor> r;
  for (size_t k = 0; k < runs[0].size(); ++k) {
    if (k < outs.size() && runs[0][k].defined() && outs[k].dtype == DType::b8 && runs[1].at(k).defined()) {
      Tensor t = runs[0][k];  // a complex value converted to bool is z != 0: either part
      for (int64_t i = 0, n = t.numel(); i < n; ++i)
        if (runs[1][k].get(i) != 0) t.set(i, 1.0);
      r.push_back(t);
      continue;
    }
    if (k >= outs.size() || !runs[0][k].defined() || !dtype_is_complex(outs[k].dtype)) {
      r.push_back(runs[0][k]);
      continue;
    }
    // The parts in the output's real type (a kernel may answer in another), of one shape.
    const DType part = real_dtype(outs[k].dtype);
    const Tensor re = runs[0][k].dtype() == part ? runs[0][k] : cast(runs[0][k], part);
    const Tensor im = runs[1].at(k).dtype() == part ? runs[1][k] : cast(runs[1][k], part);
    if (re.shape() != im.shape())
      throw std::logic_error("complex " + op.name + ": the real and imaginary runs of its kernel gave different shapes");
    Tensor z(outs[k].dtype, re.shape());
    Tensor parts = z.viewed_as_real();
    const size_t size = static_cast<size_t>(dtype_size(re.dtype()));
    std::byte* dst = static_cast<std::byte*>(parts.data());
    const std::byte* x = static_cast<const std::byte*>(re.data());
    const std::byte* y = static_cast<const std::byte*>(im.data());
    for (int64_t i = 0, n = re.numel(); i < n; ++i) {
      std::memcpy(dst + 2 * i * size, x + i * size, size);
      std::memcpy(dst + (2 * i + 1) * size, y + i * size, size);
    }
    r.push_back(z);
  }
  return r;
}
}  // namespace

std::vector<Tensor> run_reference_kernel(const OpDef& op, const std::vector<Arg>& args, const RefInputs& values,
                                         const std::vector<TensorMeta>& outs) {
  // Half precision as eager PyTorch computes it: the op in float32 on the widened operands, its
  // results rounded to their half type (each kernel then needs only its float32 form).
  if (any_half(values, outs)) {
    RefInputs wide = values;
    for (Tensor& t : wide.t) t = widened(t);
    for (auto& l : wide.lists)
      for (Tensor& t : l) t = widened(t);
    std::vector<TensorMeta> wide_outs = outs;
    for (TensorMeta& m : wide_outs) m.dtype = compute_dtype(m.dtype);
    std::vector<Tensor> r = run_reference_kernel(op, args, wide, wide_outs);
    for (size_t i = 0; i < r.size() && i < outs.size(); ++i)
      if (r[i].defined() && r[i].dtype() != outs[i].dtype) r[i] = cast(r[i], outs[i].dtype);
    return r;
  }
  if (op::acts_on_parts(op) && any_complex(values, outs)) return run_on_parts(op, args, values, outs);
  if (op.reference) return op.reference(op, args, values, outs);  // its own, or its kind's (the op table sets it)
  if (op.kind == OpKind::composite && op.decompose) return run_decomposition(op, args, values);
  throw std::logic_error(op.name + " has no reference kernel");
}


}  // namespace ls
