#include "exec/interpret_loops.h"

#include <map>
#include <stdexcept>

#include "exec/extern_kernels.h"
#include "ops/op_table.h"

namespace ls {
namespace {

class EvalHandler : public OpsHandler {
 public:
  explicit EvalHandler(std::map<std::string, Tensor>& bufs) : bufs_(bufs) {}
  V load(const std::string& b, const Expr& i) override {
    if (!i.is_constant()) throw std::logic_error("loop interpreter: index " + i.str() + " of " + b + " is not a constant");
    const Tensor& t = bufs_.at(b);
    if (i.constant() < 0 || i.constant() >= t.numel())
      throw std::out_of_range("loop interpreter: " + b + "[" + std::to_string(i.constant()) + "] is out of bounds");
    return value(t.get(i.constant()));
  }
  V constant(double v, DType) override { return value(v); }
  V index_expr(const Expr& e, DType) override {
    if (!e.is_constant()) throw std::logic_error("loop interpreter: index " + e.str() + " is not a constant");
    return value(static_cast<double>(e.constant()));
  }
  V math(Math m, const std::vector<V>& a, DType t) override {
    double x[3] = {0, 0, 0};
    for (size_t k = 0; k < a.size() && k < 3; ++k) x[k] = vals_.at(a[k].id);
    double r = eval_math(m, x[0], x[1], x[2]);
    if (m == Math::bitwise_not && t == DType::b8) r = x[0] == 0 ? 1 : 0;  // ~ of a bool is `not`, as ls_bitwise_not(bool)
    // Half values are computed in float32 (as generated code does); a conversion rounds.
    if (dtype_is_half(t) && m == Math::identity) r = round_to(t, r);
    else if (compute_dtype(t) == DType::f32) r = static_cast<float>(r);
    return value(r);
  }
  Expr indirect(V index, int64_t size, bool wrap) override {
    const double d = vals_.at(index.id);
    int64_t i = static_cast<int64_t>(d);
    if (wrap && i < 0) i += size;
    if (i < 0 || i >= size)
      throw std::out_of_range("index " + std::to_string(static_cast<int64_t>(d)) + " is out of bounds for dimension with size " +
                              std::to_string(size));
    return Expr(i);
  }
  V reduction(Reduce r, DType, V v) override {
    reduce_ = r;
    return v;
  }
  V arg_reduction(Reduce r, DType, V v, V index) override {
    reduce_ = r;
    index_ = static_cast<int64_t>(vals_.at(index.id));
    return v;
  }
  void store(const std::string& b, const Expr& i, V v) override { bufs_.at(b).set(i.constant(), vals_.at(v.id)); }
  // (an index out of range threw in `indirect`: nothing is stored)
  void scatter_store(const std::string& b, const Expr& i, V v, StoreMode mode, DType) override {
    Tensor& t = bufs_.at(b);
    if (!i.is_constant() || i.constant() < 0 || i.constant() >= t.numel())
      throw std::out_of_range("loop interpreter: a scatter into " + b + " at " + i.str() + " is out of bounds");
    t.set(i.constant(), mode == StoreMode::atomic_add ? t.get(i.constant()) + vals_.at(v.id) : vals_.at(v.id));
  }
  void store_reduction(const std::string& b, const Expr& i, V v) override {
    Tensor& t = bufs_.at(b);
    if (reduce_is_arg(reduce_)) {  // the buffer holds the index; the value kept beside it, in arg_values_
      auto [it, fresh] = arg_values_.try_emplace(b);
      if (fresh) it->second.assign(static_cast<size_t>(t.numel()), reduce_init(reduce_));
      double& best = it->second[static_cast<size_t>(i.constant())];
      const double x = vals_.at(v.id);
      if (!arg_keeps(reduce_, best, x, static_cast<int64_t>(t.get(i.constant())), index_)) {
        best = x;
        t.set(i.constant(), static_cast<double>(index_));
      }
      return;
    }
    if (!dtype_is_half(t.dtype())) {
      t.set(i.constant(), reduce_combine(reduce_, t.get(i.constant()), vals_.at(v.id)));
      return;
    }
    // A half buffer's reduction accumulates in float32; the buffer holds the rounded value so far.
    auto [it, fresh] = wide_.try_emplace(b);
    if (fresh) it->second = cast(t, DType::f32);
    Tensor& w = it->second;
    w.set(i.constant(), reduce_combine(reduce_, w.get(i.constant()), vals_.at(v.id)));
    t.set(i.constant(), w.get(i.constant()));
  }
  void reset() { vals_.clear(); }

 private:
  V value(double d) {
    vals_.push_back(d);
    return V{static_cast<int>(vals_.size()) - 1};
  }
  std::map<std::string, Tensor>& bufs_;
  std::map<std::string, Tensor> wide_;  // float32 accumulators of half reductions
  std::map<std::string, std::vector<double>> arg_values_;  // arg reductions: the value beside each index
  int64_t index_ = 0;                                      // the last arg reduction's position
  std::vector<double> vals_;
  Reduce reduce_ = Reduce::sum;
};

// Calls f with every position of `sizes` as constant index expressions.
template <typename F>
void for_each_position(const Shape& sizes, F f) {
  const int64_t n = numel_of(sizes);
  std::vector<Expr> idx(sizes.size());
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i;
    for (size_t d = sizes.size(); d-- > 0;) {
      idx[d] = Expr(rem % sizes[d]);
      rem /= sizes[d];
    }
    f(idx);
  }
}

}  // namespace

std::vector<Tensor> interpret_loops(const LoopProgram& p, const std::vector<Tensor>& inputs) {
  if (inputs.size() != p.inputs.size()) throw std::invalid_argument("loop interpreter: wrong number of inputs");
  std::map<std::string, Tensor> bufs;
  for (size_t i = 0; i < inputs.size(); ++i) bufs[p.inputs[i]] = inputs[i];
  for (const LoopBuffer& b : p.buffers)
    if (!bufs.count(b.name)) bufs[b.name] = Tensor(b.dtype, b.shape);
  EvalHandler h(bufs);
  for (const LoopNode& n : p.nodes) try {
    if (n.kind == LoopNode::Kind::extern_kernel) {
      const RefInputs in = extern_inputs(n.ext, [&](const std::string& b) { return bufs.at(b); });
      std::vector<Tensor> outs;
      for (const auto& o : n.ext.outputs) outs.push_back(bufs.at(o));
      run_extern(n.ext, in, outs);
      continue;
    }
    if (n.kind == LoopNode::Kind::reduction) {
      Tensor& out = bufs.at(n.buffer);
      for (int64_t i = 0; i < out.numel(); ++i) out.set(i, reduce_is_arg(n.reduce) ? 0.0 : reduce_init(n.reduce));
      for_each_position(n.ranges, [&](const std::vector<Expr>& idx) {
        for_each_position(n.reduction_ranges, [&](const std::vector<Expr>& ridx) {
          h.reset();
          n.run(h, idx, ridx);
        });
      });
      continue;
    }
    for_each_position(n.ranges, [&](const std::vector<Expr>& idx) {
      h.reset();
      n.run(h, idx, {});
    });
  } catch (const std::out_of_range& e) {
    throw std::out_of_range(n.name + " (from node '" + n.graph_node + "'): " + e.what());
  }
  std::vector<Tensor> outs;
  for (const auto& o : p.outputs) outs.push_back(o.empty() ? Tensor() : bufs.at(o));
  return outs;
}

}  // namespace ls
