// Internal to ops/: what the op family files share. Each family file (pointwise.cpp, views.cpp,
// ...; the map is in ops/README.md) declares its ops as entries of the table, each with every rule
// the op has (shape and dtype, reference kernel, decomposition, view index, derivative), and
// registers them with its add_*_ops, which build_table in op_table.cpp calls once. Here: those
// functions, the level masks, the entry makers, the small helpers of shape rules and reference
// kernels, and the helpers of derivative rules. Nothing outside ops/ includes this header.
#pragma once
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ops/builder.h"
#include "ops/op_table.h"

namespace ls {

// The families, in the order build_table appends them.
void add_pointwise_ops(std::vector<OpDef>& table);      // ops/pointwise.cpp
void add_reduction_ops(std::vector<OpDef>& table);      // ops/reductions.cpp
void add_loss_ops(std::vector<OpDef>& table);           // ops/losses.cpp
void add_view_ops(std::vector<OpDef>& table);           // ops/views.cpp
void add_shape_ops(std::vector<OpDef>& table);          // ops/shape_ops.cpp
void add_linalg_ops(std::vector<OpDef>& table);         // ops/linalg.cpp
void add_conv_pool_ops(std::vector<OpDef>& table);      // ops/conv_pool.cpp
void add_normalization_ops(std::vector<OpDef>& table);  // ops/normalization.cpp
void add_attention_ops(std::vector<OpDef>& table);      // ops/attention.cpp
void add_indexing_ops(std::vector<OpDef>& table);       // ops/indexing.cpp
void add_creation_ops(std::vector<OpDef>& table);       // ops/creation.cpp
void add_resampling_ops(std::vector<OpDef>& table);     // ops/resampling.cpp
void add_recurrent_ops(std::vector<OpDef>& table);      // ops/recurrent.cpp
void add_fft_ops(std::vector<OpDef>& table);            // ops/fft.cpp

namespace rules {

constexpr unsigned kAten = level::aten;
constexpr unsigned kCore = level::aten | level::core_aten;
constexpr unsigned kPrims = level::prims;

// ---- entries --------------------------------------------------------------------------------

inline OpDef view_op(const char* name, const char* schema, unsigned lv, InferFn infer, ViewFn view, DecompFn d,
                     DerivFn der = nullptr) {
  return {.name = name, .schema = schema, .kind = OpKind::view, .levels = lv, .infer = infer, .decompose = d, .view = view,
          .derivative = der};
}
// A library kernel (extern_kernel): lowered to a library call, with a reference kernel of its own.
inline OpDef ext(const char* name, const char* schema, unsigned lv, InferFn infer, RefFn ref, DecompFn d = nullptr,
                 DerivFn der = nullptr) {
  return {.name = name, .schema = schema, .kind = OpKind::extern_kernel, .levels = lv, .infer = infer, .reference = ref,
          .decompose = d, .derivative = der};
}
// A composite: decomposed before lowering; ref nullptr runs its decomposition as its reference.
inline OpDef comp(const char* name, const char* schema, unsigned lv, InferFn infer, RefFn ref, DecompFn d,
                  DerivFn der = nullptr) {
  return {.name = name, .schema = schema, .kind = OpKind::composite, .levels = lv, .infer = infer, .reference = ref,
          .decompose = d, .derivative = der};
}

// The entry with OpDef::by_parts set: on complex values its real kernel runs on the real and
// imaginary parts apart (ops/complex_parts.h says which ops qualify).
inline OpDef by_parts(OpDef o) {
  o.by_parts = true;
  return o;
}

// A single-output decomposition adapted to the table's one-value-per-output form.
template <Arg (*F)(GraphBuilder&, const OpDef&, const std::vector<Arg>&)>
std::vector<Arg> single(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  return {F(b, op, a)};
}

// ---- shape rules and reference kernels ------------------------------------------------------

inline const TensorMeta& meta_of(const Graph& g, const Arg& a) { return g.nodes.at(a.node).meta(); }
// Contiguous metadata of this dtype and shape, on the device of `in`.
inline TensorMeta like(const TensorMeta& in, DType dt, Shape shape) {
  TensorMeta m = TensorMeta::contiguous(dt, std::move(shape));
  m.device = in.device;
  return m;
}
inline TensorMeta like(const TensorMeta& in, Shape shape) { return like(in, in.dtype, std::move(shape)); }
[[noreturn]] inline void bad(const OpDef& op, const std::string& what) { throw std::invalid_argument(op.name + ": " + what); }

// The output's metadata is that of argument I (backward ops: the gradient of an input).
template <int I>
std::vector<TensorMeta> same_as(const Graph& g, const OpDef&, const std::vector<Arg>& a) {
  return {like(meta_of(g, a[I]), meta_of(g, a[I]).shape)};
}

// The position of linear index i in a row-major tensor of this shape.
Shape unravel(int64_t i, const Shape& shape);
// Strides that read `in_shape` broadcast (right-aligned) to `out_shape`.
Shape broadcast_strides(const Shape& in_shape, const Shape& out_shape);
// The offset that element `linear` of a row-major `shape` has under `strides`.
int64_t offset_of(int64_t linear, const Shape& shape, const Shape& strides);
// Pointwise ops: the parameters that are inputs of the math, and the `alpha` scaling `other` (1 if none).
std::vector<int> operand_indices(const OpDef& op);
double alpha_of(const OpDef& op, const std::vector<Arg>& args);

// ---- derivative rules -----------------------------------------------------------------------

using Args = std::vector<Arg>;
inline const Arg kNone = Arg::none();

inline Arg num(double v) { return Arg::of_real(v); }
inline Arg ints(const std::vector<int64_t>& v) { return Arg::of_ints(v); }
inline Arg call(DerivCtx& c, const char* op, Args a, const std::vector<std::pair<std::string, Arg>>& kw = {}) {
  return c.b.call(op, std::move(a), kw);
}
inline Arg call(GraphBuilder& b, const char* op, Args a) { return b.call(op, std::move(a)); }
// By value: a rule adds nodes to the graph, which may move the metadata a reference would point into.
inline Shape shape_of(DerivCtx& c, const Arg& a) { return c.b.meta(a).shape; }
inline bool wants(const DerivCtx& c, size_t i) { return i < c.wanted.size() && c.wanted[i] && c.args[i].is_node(); }
// The rule's result when only the first parameter has a gradient.
Args one(Arg g, size_t nparams);
// A tensor of zeros: a 0-d constant expanded (a view: nothing is stored).
Arg zeros(DerivCtx& c, const Shape& shape, DType t);
// The gradient of a broadcast operand: g summed over the dimensions the broadcast added or widened.
Arg sum_to(DerivCtx& c, Arg g, const Shape& to);
// sum_to the shape of argument i, or none where its gradient is not wanted.
Arg grad_for(DerivCtx& c, size_t i, Arg g);

// The shape rule of a composite whose reference is its decomposition: the metadata of the values
// its decomposition gives, built on a scratch graph of the tensor arguments.
inline std::vector<TensorMeta> infer_by_decomp(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  Graph tmp;
  std::vector<Arg> args = a;
  for (Arg& x : args)
    if (x.is_node()) {
      Node n;
      n.name = "in" + std::to_string(tmp.nodes.size());
      n.outs = {meta_of(g, x)};
      x = Arg::of_node(tmp.add(n));
    }
  GraphBuilder b(tmp);
  std::vector<TensorMeta> outs;
  for (const Arg& v : op.decompose(b, op, args)) outs.push_back(tmp.nodes.at(v.node).meta());
  return outs;
}

}  // namespace rules
}  // namespace ls
