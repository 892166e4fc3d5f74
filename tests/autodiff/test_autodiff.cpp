// Autodiff without a backend: every derivative rule of the op table against central finite
// differences in float64 (one row per op, generated from the table), the partitioners against
// each other and against PyTorch's partitioned forwards, and the passes training mode adds.
#include <QtTest>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>

#include "autodiff/joint.h"
#include "autodiff/partition.h"
#include "autodiff/training_step.h"
#include "frontend/load_model.h"
#include "interp/reference.h"
#include "ops/builder.h"
#include "ops/op_table.h"
#include "passes/decompose.h"
#include "record/compile_record.h"
#include "passes/fold_transposed_products.h"

using namespace ls;

namespace {

std::string data(const std::string& rel) { return std::string(LS_TEST_DATA) + "/" + rel; }

// A small float64 graph calling one op: its inputs, and the call.
struct Sample {
  std::vector<Shape> inputs;
  std::vector<bool> buffers;  // inputs that are not differentiated (running statistics)
  std::function<std::vector<Arg>(GraphBuilder&, const std::vector<Arg>&)> call;  // the values to return
};

Arg num(double v) { return Arg::of_real(v); }
Arg ints(std::vector<int64_t> v) { return Arg::of_ints(v); }
Arg list(std::vector<Arg> v) {
  Arg a;
  a.kind = Arg::Kind::list;
  a.list = std::move(v);
  return a;
}
// |x| + 0.5: an input kept away from zero, for ops defined on positive numbers.
Arg positive(GraphBuilder& b, const Arg& x) { return b.call("aten.add.Tensor", {b.call("aten.abs.default", {x}), num(0.5)}); }

// tanh(x) * 0.9: an input inside (-1, 1), for asin, acos and atanh.
Arg inside_unit(GraphBuilder& b, const Arg& x) { return b.call("aten.mul.Tensor", {b.call("aten.tanh.default", {x}), num(0.9)}); }
Sample of(const char* op, Arg (*prepare)(GraphBuilder&, const Arg&)) {
  return {{{2, 3}}, {}, [op, prepare](GraphBuilder& b, const std::vector<Arg>& x) { return std::vector<Arg>{b.call(op, {prepare(b, x[0])})}; }};
}

Sample unary(const char* op, bool pos = false) {
  return {{{2, 3}}, {}, [op, pos](GraphBuilder& b, const std::vector<Arg>& x) {
            return std::vector<Arg>{b.call(op, {pos ? positive(b, x[0]) : x[0]})};
          }};
}
Sample binary(const char* op, Shape a, Shape c, std::vector<std::pair<std::string, Arg>> kw = {}, bool pos_second = false) {
  return {{a, c}, {}, [op, kw, pos_second](GraphBuilder& b, const std::vector<Arg>& x) {
            return std::vector<Arg>{b.call(op, {x[0], pos_second ? positive(b, x[1]) : x[1]}, kw)};
          }};
}
Sample with_args(const char* op, std::vector<Shape> shapes, std::vector<Arg> extra, int outputs = 1) {
  return {shapes, {}, [op, extra, outputs, n = shapes.size()](GraphBuilder& b, const std::vector<Arg>& x) {
            std::vector<Arg> a(x.begin(), x.begin() + static_cast<long>(n));
            a.insert(a.end(), extra.begin(), extra.end());
            const Arg r = b.call(op, a);
            if (outputs == 1) return std::vector<Arg>{r};
            std::vector<Arg> outs;
            for (int i = 0; i < outputs; ++i) outs.push_back(b.get(r, i));
            return outs;
          }};
}

// One sample per differentiable op. A rule added to the table without a sample here fails
// testEveryRuleHasASample.
const std::map<std::string, Sample>& samples() {
  static const std::map<std::string, Sample> s = [] {
    std::map<std::string, Sample> m;
    m["aten.sin.default"] = unary("aten.sin.default");
    m["aten.cos.default"] = unary("aten.cos.default");
    m["aten.exp.default"] = unary("aten.exp.default");
    m["aten.neg.default"] = unary("aten.neg.default");
    m["aten.abs.default"] = unary("aten.abs.default");
    m["aten.tanh.default"] = unary("aten.tanh.default");
    m["aten.sigmoid.default"] = unary("aten.sigmoid.default");
    m["aten.erf.default"] = unary("aten.erf.default");
    m["aten.relu.default"] = unary("aten.relu.default");
    m["aten.gelu.default"] = unary("aten.gelu.default");
    m["aten.hardswish.default"] = unary("aten.hardswish.default");
    m["aten.hardsigmoid.default"] = unary("aten.hardsigmoid.default");
    m["aten.leaky_relu.default"] = with_args("aten.leaky_relu.default", {{2, 3}}, {num(0.2)});
    // Rounding and sign: zero gradients (random inputs are never within h of a step).
    for (const char* op : {"aten.floor.default", "aten.ceil.default", "aten.round.default", "aten.trunc.default", "aten.sign.default"})
      m[op] = unary(op);
    m["aten.log1p.default"] = unary("aten.log1p.default", true);
    m["aten.expm1.default"] = unary("aten.expm1.default");
    m["aten.log2.default"] = unary("aten.log2.default", true);
    m["aten.log10.default"] = unary("aten.log10.default", true);
    for (const char* op : {"aten.tan.default", "aten.atan.default", "aten.sinh.default", "aten.cosh.default", "aten.asinh.default"})
      m[op] = unary(op);
    for (const char* op : {"aten.asin.default", "aten.acos.default", "aten.atanh.default"}) m[op] = of(op, inside_unit);
    m["aten.acosh.default"] = of("aten.acosh.default", [](GraphBuilder& b, const Arg& x) {  // |x| + 1.5
      return b.call("aten.add.Tensor", {positive(b, x), num(1.0)});
    });
    m["aten.atan2.default"] = binary("aten.atan2.default", {2, 3}, {3});
    m["aten.remainder.Tensor"] = binary("aten.remainder.Tensor", {2, 3}, {2, 3}, {}, true);
    m["aten.remainder.Scalar"] = with_args("aten.remainder.Scalar", {{2, 3}}, {num(0.75)});
    m["aten.fmod.Tensor"] = binary("aten.fmod.Tensor", {2, 3}, {3}, {}, true);
    m["aten.fmod.Scalar"] = with_args("aten.fmod.Scalar", {{2, 3}}, {num(0.75)});
    m["aten.clone.default"] = unary("aten.clone.default");
    m["aten.alias.default"] = unary("aten.alias.default");
    m["aten.log.default"] = unary("aten.log.default", true);
    m["aten.sqrt.default"] = unary("aten.sqrt.default", true);
    m["aten.rsqrt.default"] = unary("aten.rsqrt.default", true);
    m["aten.reciprocal.default"] = unary("aten.reciprocal.default", true);
    m["aten.add.Tensor"] = binary("aten.add.Tensor", {2, 3}, {3}, {{"alpha", num(2.0)}});
    m["aten.sub.Tensor"] = binary("aten.sub.Tensor", {2, 1}, {2, 3}, {{"alpha", num(0.5)}});
    m["aten.mul.Tensor"] = binary("aten.mul.Tensor", {2, 3}, {2, 1});
    m["aten.div.Tensor"] = binary("aten.div.Tensor", {2, 3}, {3}, {}, true);
    m["aten.pow.Tensor_Tensor"] = {{{2, 3}, {2, 3}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {
                                     return std::vector<Arg>{b.call("aten.pow.Tensor_Tensor", {positive(b, x[0]), x[1]})};
                                   }};
    m["aten.maximum.default"] = binary("aten.maximum.default", {2, 3}, {2, 3});
    m["aten.minimum.default"] = binary("aten.minimum.default", {2, 3}, {3});
    m["aten.add.Scalar"] = with_args("aten.add.Scalar", {{2, 3}}, {num(2.0)});
    m["aten.sub.Scalar"] = with_args("aten.sub.Scalar", {{2, 3}}, {num(2.0)});
    m["aten.mul.Scalar"] = with_args("aten.mul.Scalar", {{2, 3}}, {num(3.0)});
    m["aten.div.Scalar"] = with_args("aten.div.Scalar", {{2, 3}}, {num(4.0)});
    m["aten.pow.Tensor_Scalar"] = with_args("aten.pow.Tensor_Scalar", {{2, 3}}, {num(3.0)});
    m["aten.where.self"] = {{{2, 3}, {2, 3}, {2, 3}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {
                              return std::vector<Arg>{b.call("aten.where.self", {b.call("aten.gt.Scalar", {x[0], num(0.0)}), x[1], x[2]})};
                            }};
    m["aten.sum.default"] = with_args("aten.sum.default", {{2, 3}}, {});
    m["aten.sum.dim_IntList"] = with_args("aten.sum.dim_IntList", {{2, 3, 2}}, {ints({1}), Arg::of_bool(false)});
    m["aten.mean.default"] = with_args("aten.mean.default", {{2, 3}}, {});
    m["aten.mean.dim"] = with_args("aten.mean.dim", {{2, 3}}, {ints({0}), Arg::of_bool(true)});
    m["aten.amax.default"] = with_args("aten.amax.default", {{2, 4}}, {ints({1})});
    m["aten.amin.default"] = with_args("aten.amin.default", {{2, 4}}, {ints({0}), Arg::of_bool(true)});
    m["aten.max.default"] = with_args("aten.max.default", {{2, 4}}, {});  // evenly_distribute_backward
    m["aten.min.default"] = with_args("aten.min.default", {{3}}, {});
    m["aten.round.decimals"] = {{{2, 3}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {  // zero gradient
                                  return std::vector<Arg>{b.call("aten.round.decimals", {x[0]}, {{"decimals", Arg::of_int(1)}})};
                                }};
    m["aten.view.default"] = with_args("aten.view.default", {{2, 3}}, {ints({3, 2})});
    m["aten._unsafe_view.default"] = with_args("aten._unsafe_view.default", {{2, 3}}, {ints({6})});
    m["aten.reshape.default"] = with_args("aten.reshape.default", {{2, 3}}, {ints({3, 2})});
    m["aten.permute.default"] = with_args("aten.permute.default", {{2, 3, 2}}, {ints({2, 0, 1})});
    m["aten.t.default"] = with_args("aten.t.default", {{2, 3}}, {});
    m["aten.transpose.int"] = with_args("aten.transpose.int", {{2, 3, 2}}, {Arg::of_int(0), Arg::of_int(2)});
    m["aten.expand.default"] = with_args("aten.expand.default", {{3, 1}}, {ints({2, 3, 4})});
    m["aten.unsqueeze.default"] = with_args("aten.unsqueeze.default", {{2, 3}}, {Arg::of_int(1)});
    m["aten.squeeze.dim"] = with_args("aten.squeeze.dim", {{2, 1, 3}}, {Arg::of_int(1)});
    m["aten.slice.Tensor"] = with_args("aten.slice.Tensor", {{5, 2}}, {Arg::of_int(0), Arg::of_int(1), Arg::of_int(3)});
    m["aten.split.Tensor"] = with_args("aten.split.Tensor", {{5, 2}}, {Arg::of_int(2)}, 3);
    m["aten.split_with_sizes.default"] = {{{5, 2}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {
                                            // only the second piece is used: the first gets a zero gradient
                                            const Arg r = b.call("aten.split_with_sizes.default", {x[0], ints({2, 3})});
                                            return std::vector<Arg>{b.get(r, 1)};
                                          }};
    m["aten.cat.default"] = {{{2, 3}, {2, 2}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {
                               return std::vector<Arg>{b.call("aten.cat.default", {list({x[0], x[1]}), Arg::of_int(1)})};
                             }};
    m["aten.mm.default"] = binary("aten.mm.default", {2, 3}, {3, 4});
    m["aten.bmm.default"] = binary("aten.bmm.default", {2, 2, 3}, {2, 3, 2});
    m["aten.addmm.default"] = {{{4}, {2, 3}, {3, 4}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {
                                 return std::vector<Arg>{
                                     b.call("aten.addmm.default", {x[0], x[1], x[2]}, {{"beta", num(0.5)}, {"alpha", num(2.0)}})};
                               }};
    m["aten.convolution.default"] = with_args(
        "aten.convolution.default", {{1, 2, 5, 5}, {3, 2, 3, 3}, {3}},
        {ints({2, 2}), ints({1, 1}), ints({1, 1}), Arg::of_bool(false), ints({0, 0}), Arg::of_int(1)});
    m["aten._native_batch_norm_legit_no_training.default"] = {
        {{2, 3, 2, 2}, {3}, {3}, {3}, {3}}, {false, false, false, true, true}, [](GraphBuilder& b, const std::vector<Arg>& x) {
          const Arg r = b.call("aten._native_batch_norm_legit_no_training.default",
                               {x[0], x[1], x[2], x[3], positive(b, x[4]), num(0.1), num(1e-5)});
          return std::vector<Arg>{b.get(r, 0)};
        }};
    m["aten.native_layer_norm.default"] = {{{2, 3, 4}, {4}, {4}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {
                                             const Arg r = b.call("aten.native_layer_norm.default", {x[0], ints({4}), x[1], x[2], num(1e-5)});
                                             return std::vector<Arg>{b.get(r, 0)};
                                           }};
    m["aten._softmax.default"] = with_args("aten._softmax.default", {{2, 5}}, {Arg::of_int(1), Arg::of_bool(false)});
    m["aten.max_pool2d_with_indices.default"] = {{{1, 2, 4, 4}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {
                                                   const Arg r = b.call("aten.max_pool2d_with_indices.default",
                                                                        {x[0], ints({2, 2}), ints({2, 2})});
                                                   return std::vector<Arg>{b.get(r, 0)};
                                                 }};
    m["aten.mse_loss.default"] = binary("aten.mse_loss.default", {2, 3}, {2, 3});
    // Causal attention over 2 heads, 3 positions (its backward recomputes the probabilities).
    m["aten._scaled_dot_product_efficient_attention.default"] = {
        {{1, 2, 3, 4}, {1, 2, 3, 4}, {1, 2, 3, 4}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {
          const Arg r = b.call("aten._scaled_dot_product_efficient_attention.default",
                               {x[0], x[1], x[2], Arg::none(), Arg::of_bool(true), Arg::of_real(0.0), Arg::of_bool(true)});
          return std::vector<Arg>{b.get(r, 0)};
        }};
    // ---- pointwise, reductions, views (issue 32) ----
    // as_strided: positions read twice (stride 1 over a 2x2 window) take the sum of their gradients.
    m["aten.as_strided.default"] = with_args("aten.as_strided.default", {{3, 3}}, {ints({2, 2}), ints({1, 1}), Arg::of_int(2)});
    m["prims.as_strided.default"] = with_args("prims.as_strided.default", {{10}}, {ints({2, 3}), ints({3, 2}), Arg::of_int(1)});
    m["aten.silu.default"] = with_args("aten.silu.default", {{2, 3}}, {});
    m["aten.elu.default"] = with_args("aten.elu.default", {{2, 3}}, {num(1.2), num(0.9), num(1.1)});
    m["aten.hardtanh.default"] = with_args("aten.hardtanh.default", {{2, 3}}, {num(-0.7), num(0.8)});
    m["aten.clamp.Tensor"] = with_args("aten.clamp.Tensor", {{2, 3}, {3}, {2, 1}}, {});
    m["aten.pow.Scalar"] = {{{2, 3}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {
                              return std::vector<Arg>{b.call("aten.pow.Scalar", {num(1.7), x[0]})};
                            }};
    m["aten.div.Tensor_mode"] = binary("aten.div.Tensor_mode", {2, 3}, {3}, {{"rounding_mode", Arg::none()}}, true);
    m["aten.div.Scalar_mode"] = {{{2, 3}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {  // floor: zero gradient
                                   return std::vector<Arg>{b.call("aten.div.Scalar_mode", {x[0], num(0.75)}, {{"rounding_mode", Arg::of_string("floor")}})};
                                 }};
    for (const char* op : {"aten.max.dim", "aten.min.dim"})
      m[op] = {{{2, 4}}, {}, [op](GraphBuilder& b, const std::vector<Arg>& x) {  // the values; the indices are not differentiable
                 return std::vector<Arg>{b.get(b.call(op, {x[0], Arg::of_int(1)}), 0)};
               }};
    m["aten.prod.default"] = with_args("aten.prod.default", {{2, 3}}, {});
    m["aten.prod.dim_int"] = with_args("aten.prod.dim_int", {{2, 3, 2}}, {Arg::of_int(1), Arg::of_bool(true)});
    m["aten.var.correction"] = {{{2, 3, 2}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {
                                  return std::vector<Arg>{b.call("aten.var.correction", {x[0], ints({0, 2})},
                                                                 {{"correction", num(0.5)}, {"keepdim", Arg::of_bool(true)}})};
                                }};
    m["aten.var.dim"] = with_args("aten.var.dim", {{2, 3}}, {ints({1}), Arg::of_bool(true), Arg::of_bool(false)});
    m["aten.cumsum.default"] = with_args("aten.cumsum.default", {{2, 3}}, {Arg::of_int(1)});
    m["aten.squeeze.dims"] = with_args("aten.squeeze.dims", {{2, 1, 3}}, {ints({1, 2})});
    m["aten.diagonal.default"] = with_args("aten.diagonal.default", {{2, 3, 4}}, {Arg::of_int(-1), Arg::of_int(2), Arg::of_int(0)});
    m["aten.flip.default"] = with_args("aten.flip.default", {{2, 3}}, {ints({0, -1})});
    m["aten.repeat.default"] = with_args("aten.repeat.default", {{2, 3}}, {ints({2, 1, 2})});
    m["aten.clamp.default"] = with_args("aten.clamp.default", {{2, 3}}, {num(-0.3), num(0.4)});
    m["aten.clamp_min.default"] = with_args("aten.clamp_min.default", {{2, 3}}, {num(0.1)});
    m["aten.clamp_max.default"] = with_args("aten.clamp_max.default", {{2, 3}}, {num(-0.2)});
    // select (gradient through select_scatter), embedding (embedding_dense_backward, a row used
    // twice), gather (scatter_add, a position read twice): index tensors are graph constants.
    {
      auto ids = [](GraphBuilder& b, Shape s, std::vector<double> v) {
        Tensor t(DType::i64, s);
        for (size_t i = 0; i < v.size(); ++i) t.set(static_cast<int64_t>(i), v[i]);
        return b.constant("ids", t);
      };
      m["aten.select.int"] = {{{3, 4}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {
                                return std::vector<Arg>{b.call("aten.select.int", {x[0], Arg::of_int(1), Arg::of_int(-2)})};
                              }};
      m["aten.embedding.default"] = {{{5, 3}}, {}, [ids](GraphBuilder& b, const std::vector<Arg>& x) {
                                       return std::vector<Arg>{b.call("aten.embedding.default", {x[0], ids(b, {2, 2}, {4, 1, 4, 0})})};
                                     }};
      m["aten.gather.default"] = {{{3, 4}}, {}, [ids](GraphBuilder& b, const std::vector<Arg>& x) {
                                    return std::vector<Arg>{
                                        b.call("aten.gather.default", {x[0], Arg::of_int(1), ids(b, {3, 2}, {0, 3, 2, 2, 1, 0})})};
                                  }};
    }
    // ---- indexing (issue 32) ----
    {
      // Index tensors are graph constants: valid, known positions (repeated ones where the rule sums).
      auto idx = [](GraphBuilder& b, Shape s, std::vector<double> v) {
        Tensor t(DType::i64, s);
        for (size_t i = 0; i < v.size(); ++i) t.set(static_cast<int64_t>(i), v[i]);
        return b.constant("idx", t);
      };
      using X = std::vector<Arg>;
      // adjacent (x[i]) and separated (x[i, :, j], broadcast, a negative index) advanced indices
      m["aten.index.Tensor"] = {{{4, 3, 2}}, {}, [idx](GraphBuilder& b, const X& x) {
                                  const Arg i = idx(b, {3}, {2, 0, 2}), j = idx(b, {2, 1}, {1, -1});
                                  return X{b.call("aten.index.Tensor", {x[0], list({i})}),
                                           b.call("aten.index.Tensor", {x[0], list({i, Arg::none(), j})})};
                                }};
      // without accumulation (distinct rows), and with it (a repeated row, values broadcast along rows)
      m["aten.index_put.default"] = {{{4, 3}, {2, 3}, {3}}, {}, [idx](GraphBuilder& b, const X& x) {
                                       return X{b.call("aten.index_put.default", {x[0], list({idx(b, {2}, {3, 1})}), x[1]}),
                                                b.call("aten.index_put.default",
                                                       {x[0], list({idx(b, {3}, {0, 2, 0})}), x[2], Arg::of_bool(true)})};
                                     }};
      m["aten.index_select.default"] = {{{4, 3}}, {}, [idx](GraphBuilder& b, const X& x) {
                                          return X{b.call("aten.index_select.default", {x[0], Arg::of_int(0), idx(b, {3}, {3, 0, 3})}),
                                                   b.call("aten.index_select.default", {x[0], Arg::of_int(-1), idx(b, {}, {1})})};
                                        }};
      // scatter: a permutation down each column (a position written twice has no derivative)
      m["aten.scatter.src"] = {{{4, 3}, {4, 3}}, {}, [idx](GraphBuilder& b, const X& x) {
                                 const Arg i = idx(b, {4, 3}, {1, 0, 3, 0, 2, 1, 3, 1, 0, 2, 3, 2});
                                 return X{b.call("aten.scatter.src", {x[0], Arg::of_int(0), i, x[1]})};
                               }};
      m["aten.scatter.value"] = {{{4, 3}}, {}, [idx](GraphBuilder& b, const X& x) {
                                   return X{b.call("aten.scatter.value", {x[0], Arg::of_int(0), idx(b, {2, 3}, {0, 1, 2, 3, 3, 0}), num(1.5)})};
                                 }};
      m["aten.scatter_add.default"] = {{{4, 3}, {2, 3}}, {}, [idx](GraphBuilder& b, const X& x) {
                                         const Arg i = idx(b, {2, 3}, {0, 1, 2, 0, 3, 2});
                                         return X{b.call("aten.scatter_add.default", {x[0], Arg::of_int(0), i, x[1]})};
                                       }};
      // every reduction, with and without self; rows 0, 1 and 2 of some columns take two values
      m["aten.scatter_reduce.two"] = {{{4, 3}, {3, 3}}, {}, [idx](GraphBuilder& b, const X& x) {
                                        const Arg i = idx(b, {3, 3}, {0, 1, 2, 0, 3, 2, 1, 1, 0});
                                        X r;
                                        for (const char* red : {"sum", "prod", "mean", "amax", "amin"})
                                          for (bool self : {true, false})
                                            r.push_back(b.call("aten.scatter_reduce.two", {x[0], Arg::of_int(0), i, x[1], Arg::of_string(red)},
                                                               {{"include_self", Arg::of_bool(self)}}));
                                        return r;
                                      }};
      m["aten.select_scatter.default"] = with_args("aten.select_scatter.default", {{3, 4, 2}, {3, 2}}, {Arg::of_int(1), Arg::of_int(-1)});
      m["aten.slice_scatter.default"] =
          with_args("aten.slice_scatter.default", {{5, 3}, {2, 3}}, {Arg::of_int(0), Arg::of_int(1), Arg::of_int(5), Arg::of_int(2)});
      // self broadcast against the mask (its gradient summed back); source has one element more than the mask takes
      m["aten.masked_scatter.default"] = {{{1, 3}, {5}}, {}, [](GraphBuilder& b, const X& x) {
                                            Tensor mask(DType::b8, {2, 3});
                                            for (int64_t i : {0, 2, 4, 5}) mask.set(i, 1);
                                            return X{b.call("aten.masked_scatter.default", {x[0], b.constant("mask", mask), x[1]})};
                                          }};
      m["aten.sort.default"] = {{{3, 4}}, {}, [](GraphBuilder& b, const X& x) {
                                  return X{b.get(b.call("aten.sort.default", {x[0], Arg::of_int(1), Arg::of_bool(true)}), 0)};
                                }};
      m["aten.topk.default"] = {{{3, 5}}, {}, [](GraphBuilder& b, const X& x) {
                                  const Arg r = b.call("aten.topk.default", {x[0], Arg::of_int(2), Arg::of_int(0), Arg::of_bool(false)});
                                  return X{b.get(r, 0)};
                                }};
    }
    // ---- creation and resampling (issue 32) ----
    m["prims.convert_element_type.default"] = {{{2, 3}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {
                                                 return std::vector<Arg>{b.call("prims.convert_element_type.default",
                                                                                {x[0], Arg::of_string("torch.float64")})};
                                               }};
    m["aten._to_copy.default"] = {{{2, 3}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {
                                    return std::vector<Arg>{b.call("aten._to_copy.default", {x[0]}, {{"dtype", Arg::of_string("torch.float64")}})};
                                  }};
    // A fixed mask (the generator is seeded per op and shape): x * mask / (1 - p).
    m["aten.native_dropout.default"] = {{{4, 5}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {
                                          const Arg r = b.call("aten.native_dropout.default", {x[0], num(0.3), Arg::of_bool(true)});
                                          return std::vector<Arg>{b.get(r, 0)};
                                        }};
    m["aten.copy.default"] = binary("aten.copy.default", {2, 3}, {3});
    m["aten.constant_pad_nd.default"] = with_args("aten.constant_pad_nd.default", {{2, 3}}, {ints({1, -1, 2, 0}), num(0.5)});
    m["aten.reflection_pad1d.default"] = with_args("aten.reflection_pad1d.default", {{2, 3, 5}}, {ints({2, 1})});
    m["aten.reflection_pad2d.default"] = with_args("aten.reflection_pad2d.default", {{1, 2, 4, 5}}, {ints({1, 2, 3, -1})});
    m["aten.reflection_pad3d.default"] = with_args("aten.reflection_pad3d.default", {{1, 1, 3, 3, 4}}, {ints({1, 2, 1, 1, 2, 1})});
    m["aten.replication_pad1d.default"] = with_args("aten.replication_pad1d.default", {{2, 3, 5}}, {ints({3, -1})});
    m["aten.replication_pad2d.default"] = with_args("aten.replication_pad2d.default", {{1, 2, 3, 4}}, {ints({2, 1, 1, 3})});
    m["aten.replication_pad3d.default"] = with_args("aten.replication_pad3d.default", {{1, 1, 2, 3, 3}}, {ints({1, 1, 2, 0, 1, 1})});
    m["aten.upsample_nearest2d.vec"] = with_args("aten.upsample_nearest2d.vec", {{1, 2, 3, 4}}, {Arg::none(), list({num(2.0), num(1.5)})});
    m["aten.upsample_bilinear2d.vec"] =
        with_args("aten.upsample_bilinear2d.vec", {{1, 2, 3, 4}}, {ints({5, 7}), Arg::of_bool(false), Arg::none()});
    // Bilinear sampling, zero padding, the grid inside (-1, 1): smooth away from whole pixels.
    m["aten.grid_sampler_2d.default"] = {{{1, 2, 4, 5}, {1, 3, 3, 2}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {
                                           return std::vector<Arg>{b.call("aten.grid_sampler_2d.default",
                                                                          {x[0], inside_unit(b, x[1]), Arg::of_int(0), Arg::of_int(0),
                                                                           Arg::of_bool(false)})};
                                         }};
    m["aten.col2im.default"] = with_args("aten.col2im.default", {{2, 8, 6}}, {ints({3, 4}), ints({2, 2}), ints({1, 1}), ints({0, 0}), ints({1, 1})});
    m["aten.im2col.default"] = with_args("aten.im2col.default", {{1, 2, 4, 5}}, {ints({2, 2}), ints({1, 1}), ints({1, 1}), ints({2, 2})});
    // ---- pooling and normalization (issue 32) ----
    // max-pool backward: its grad_output's gradient, read at the saved maxima (indices a buffer).
    m["aten.max_pool2d_with_indices_backward.default"] = {
        {{1, 2, 2, 3}, {1, 2, 4, 6}}, {false, false}, [](GraphBuilder& b, const std::vector<Arg>& x) {
          const Arg pooled = b.call("aten.max_pool2d_with_indices.default", {x[1], ints({2, 2}), ints({2, 2})});
          return std::vector<Arg>{b.call("aten.max_pool2d_with_indices_backward.default",
                                         {x[0], x[1], ints({2, 2}), ints({2, 2}), ints({0, 0}), ints({1, 1}), Arg::of_bool(false),
                                          b.get(pooled, 1)})};
        }};
    // N-d and transposed convolution through convolution_backward: groups, stride, padding,
    // dilation, output padding; conv1d unbatched.
    m["aten.conv1d.default"] = with_args("aten.conv1d.default", {{4, 7}, {2, 2, 3}, {2}}, {ints({2}), ints({1}), ints({2}), Arg::of_int(2)});
    m["aten.conv3d.default"] = with_args("aten.conv3d.default", {{1, 2, 3, 4, 3}, {2, 1, 2, 3, 2}, {2}},
                                         {ints({1, 2, 1}), ints({1, 0, 1}), ints({1, 1, 2}), Arg::of_int(2)});
    m["aten.conv_transpose2d.input"] = with_args("aten.conv_transpose2d.input", {{1, 4, 3, 2}, {4, 1, 2, 3}, {2}},
                                                 {ints({2, 3}), ints({1, 0}), ints({1, 2}), Arg::of_int(2), ints({1, 1})});
    m["aten.conv_transpose3d.input"] = with_args("aten.conv_transpose3d.input", {{1, 2, 2, 3, 2}, {2, 3, 2, 2, 1}, {3}},
                                                 {ints({1, 2, 2}), ints({0, 1, 0}), ints({0, 1, 1})});
    m["aten.avg_pool2d.default"] = with_args("aten.avg_pool2d.default", {{1, 2, 5, 5}},
                                             {ints({3, 3}), ints({2, 2}), ints({1, 1}), Arg::of_bool(true), Arg::of_bool(false)});
    m["aten.avg_pool3d.default"] = with_args("aten.avg_pool3d.default", {{1, 1, 3, 4, 5}},
                                             {ints({3, 3, 3}), ints({2, 2, 2}), ints({1, 1, 1}), Arg::of_bool(true), Arg::of_bool(true)});
    m["aten._adaptive_avg_pool2d.default"] = with_args("aten._adaptive_avg_pool2d.default", {{1, 2, 5, 6}}, {ints({3, 4})});
    m["aten._adaptive_avg_pool3d.default"] = with_args("aten._adaptive_avg_pool3d.default", {{1, 1, 3, 4, 5}}, {ints({2, 3, 2})});
    m["aten.max_pool3d_with_indices.default"] = {{{1, 2, 4, 4, 4}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {
                                                   const Arg r = b.call("aten.max_pool3d_with_indices.default",
                                                                        {x[0], ints({2, 2, 2}), ints({2, 2, 2})});
                                                   return std::vector<Arg>{b.get(r, 0)};
                                                 }};
    m["aten.native_group_norm.default"] = {{{2, 4, 3}, {4}, {4}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {
                                             const Arg r = b.call("aten.native_group_norm.default",
                                                                  {x[0], x[1], x[2], Arg::of_int(2), Arg::of_int(4), Arg::of_int(3),
                                                                   Arg::of_int(2), num(1e-5)});
                                             return std::vector<Arg>{b.get(r, 0)};
                                           }};
    // Training mode: the batch's statistics (the running ones are buffers, their update unused).
    for (const char* op : {"aten._native_batch_norm_legit.default", "aten._native_batch_norm_legit_functional.default"})
      m[op] = {{{3, 2, 2, 2}, {2}, {2}, {2}, {2}}, {false, false, false, true, true}, [op](GraphBuilder& b, const std::vector<Arg>& x) {
                 const Arg r = b.call(op, {x[0], x[1], x[2], x[3], positive(b, x[4]), Arg::of_bool(true), num(0.1), num(1e-5)});
                 return std::vector<Arg>{b.get(r, 0)};
               }};
    m["aten._native_batch_norm_legit.no_stats"] = {{{3, 2, 2}, {2}, {2}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {
                                                     const Arg r = b.call("aten._native_batch_norm_legit.no_stats",
                                                                          {x[0], x[1], x[2], Arg::of_bool(true), num(0.1), num(1e-5)});
                                                     return std::vector<Arg>{b.get(r, 0)};
                                                   }};
    m["aten._log_softmax.default"] = with_args("aten._log_softmax.default", {{2, 5}}, {Arg::of_int(1), Arg::of_bool(false)});
    // Targets a constant (class 2 ignored), the class weights a buffer (nll_loss has no weight gradient).
    m["aten.nll_loss_forward.default"] = {{{3, 4}, {4}}, {false, true}, [](GraphBuilder& b, const std::vector<Arg>& x) {
                                            Tensor t(DType::i64, {3});
                                            for (int64_t i = 0; i < 3; ++i) t.set(i, static_cast<double>((i * 2 + 1) % 4 == 1 ? 0 : i + 1));
                                            const Arg r = b.call("aten.nll_loss_forward.default",
                                                                 {x[0], b.constant("target", t), positive(b, x[1]), Arg::of_int(1), Arg::of_int(2)});
                                            return std::vector<Arg>{b.get(r, 0)};
                                          }};
    m["aten.smooth_l1_loss.default"] = binary("aten.smooth_l1_loss.default", {2, 3}, {3});
    // ---- linalg (issue 32) ----
    // einsum is differentiated through its decomposition (as PyTorch): a diagonal, a broadcast
    // ellipsis, a label summed early and a contraction through bmm, all in one equation.
    m["aten.einsum.default"] = {{{2, 3, 3, 4}, {4, 2}, {3}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {
                                  return std::vector<Arg>{b.call("aten.einsum.default", {Arg::of_string("...iij,jk,i->...k"), list({x[0], x[1], x[2]})})};
                                }};
    // ---- zoo ops ----
    // roll over two dims (shifts of both signs, one beyond the size) and flattened.
    m["aten.roll.default"] = {{{3, 4}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {
                                return std::vector<Arg>{b.call("aten.roll.default", {x[0], ints({5, -1}), ints({0, -1})}),
                                                        b.call("aten.roll.default", {x[0], ints({2}), ints({})})};
                              }};
    // slice_backward, and the strided slice whose derivative it is (step 2 from 1, step 3 to the end).
    m["aten.slice_backward.default"] = {{{3, 7}, {3, 2}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {
                                          return std::vector<Arg>{
                                              b.call("aten.slice.Tensor", {x[0], Arg::of_int(1), Arg::of_int(1), Arg::of_int(5), Arg::of_int(2)}),
                                              b.call("aten.slice.Tensor", {x[0], Arg::of_int(-1), Arg::of_int(0), Arg::none(), Arg::of_int(3)}),
                                              b.call("aten.slice_backward.default",
                                                     {x[1], ints({3, 5}), Arg::of_int(1), Arg::of_int(1), Arg::of_int(5), Arg::of_int(2)})};
                                        }};
    // Every branch of norm_backward: ord 2, 3 (> 2), 1.5 (< 2), 1, 0.5 (< 1), inf, -inf, 0.
    m["aten.linalg_vector_norm.default"] = {{{3, 4}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {
                                              auto vn = [&](double ord, Arg dim, bool keep) {
                                                return b.call("aten.linalg_vector_norm.default", {x[0], num(ord), dim, Arg::of_bool(keep)});
                                              };
                                              return std::vector<Arg>{vn(2, ints({1}), false),  vn(3, ints({0}), true),
                                                                      vn(1.5, Arg::none(), false), vn(1, ints({0, 1}), false),
                                                                      vn(0.5, ints({-1}), true), vn(INFINITY, ints({1}), false),
                                                                      vn(-INFINITY, Arg::none(), true), vn(0, ints({1}), false)};
                                            }};
    m["aten.norm.ScalarOpt_dim"] = {{{3, 4}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {
                                      return std::vector<Arg>{
                                          b.call("aten.norm.ScalarOpt_dim", {x[0], Arg::none(), ints({1}), Arg::of_bool(true)}),
                                          b.call("aten.norm.ScalarOpt_dim", {x[0], num(3.0), ints({0}), Arg::of_bool(false)})};
                                    }};
    m["aten.norm.Scalar"] = with_args("aten.norm.Scalar", {{3, 4}}, {num(2.0)});
    m["aten.fill.Tensor"] = with_args("aten.fill.Tensor", {{2, 3}, {}}, {});
    // weight norm, differentiated through its decomposition: dim 0 (fused in ATen), 1 (not), -1 (the whole tensor).
    m["aten._weight_norm.default"] = {{{4, 3, 2}, {4, 1, 1}, {1, 3, 1}, {}}, {}, [](GraphBuilder& b, const std::vector<Arg>& x) {
                                        return std::vector<Arg>{b.call("aten._weight_norm.default", {x[0], x[1], Arg::of_int(0)}),
                                                                b.call("aten._weight_norm.default", {x[0], x[2], Arg::of_int(1)}),
                                                                b.call("aten._weight_norm.default", {x[0], x[3], Arg::of_int(-1)})};
                                      }};
    m["aten._weight_norm_interface.default"] = with_args("aten._weight_norm_interface.default", {{3, 4}, {1, 4}}, {Arg::of_int(1)}, 2);
    m["aten.swapaxes.default"] = with_args("aten.swapaxes.default", {{2, 3, 4}}, {Arg::of_int(0), Arg::of_int(-1)});
    m["aten.swapdims.default"] = with_args("aten.swapdims.default", {{2, 3, 4}}, {Arg::of_int(1), Arg::of_int(2)});
    // ---- FFTs (issue 32): complex values made from real inputs and read back through
    // view_as_complex / view_as_real (float64: complex128); every normalization mode, one- and
    // two-sided, odd and even lengths, c2r inputs longer and shorter than n/2 + 1.
    {
      using X = std::vector<Arg>;
      static auto cplx = [](GraphBuilder& b, const Arg& x) { return b.call("aten.view_as_complex.default", {x}); };
      static auto real = [](GraphBuilder& b, const Arg& x) { return b.call("aten.view_as_real.default", {x}); };
      static auto fft = [](GraphBuilder& b, const char* op, const Arg& x, std::vector<int64_t> dims, int64_t norm, Arg last) {
        return b.call(op, {x, ints(dims), Arg::of_int(norm), last});
      };
      m["aten._fft_r2c.default"] = {{{3, 6}, {4, 5}}, {}, [](GraphBuilder& b, const X& x) {
                                      const char* r2c = "aten._fft_r2c.default";
                                      return X{real(b, fft(b, r2c, x[0], {0, 1}, 1, Arg::of_bool(true))),
                                               real(b, fft(b, r2c, x[1], {1}, 2, Arg::of_bool(false))),
                                               b.call("aten.abs.default", {fft(b, r2c, x[1], {0}, 0, Arg::of_bool(true))})};
                                    }};
      m["aten._fft_c2r.default"] = {{{3, 4, 2}, {5, 2}}, {}, [](GraphBuilder& b, const X& x) {
                                      const char* c2r = "aten._fft_c2r.default";
                                      return X{fft(b, c2r, cplx(b, x[0]), {0, 1}, 2, Arg::of_int(6)),
                                               fft(b, c2r, cplx(b, x[1]), {0}, 0, Arg::of_int(9)),
                                               fft(b, c2r, cplx(b, x[0]), {-1}, 1, Arg::of_int(5)),
                                               fft(b, c2r, cplx(b, x[1]), {0}, 1, Arg::of_int(12))};
                                    }};
      m["aten._fft_c2c.default"] = {{{3, 4, 2}}, {}, [](GraphBuilder& b, const X& x) {
                                      const char* c2c = "aten._fft_c2c.default";
                                      return X{real(b, fft(b, c2c, cplx(b, x[0]), {0, 1}, 1, Arg::of_bool(true))),
                                               real(b, fft(b, c2c, cplx(b, x[0]), {1}, 2, Arg::of_bool(false)))};
                                    }};
      for (const char* conj : {"aten._conj.default", "aten.conj_physical.default", "aten._conj_physical.default"})
        m[conj] = {{{2, 3, 2}, {4}}, {}, [conj](GraphBuilder& b, const X& x) {  // complex, and a real tensor as it is
                     return X{real(b, b.call(conj, {cplx(b, x[0])})), b.call(conj, {x[1]})};
                   }};
      m["aten.view_as_complex.default"] = {{{2, 3, 2}}, {}, [](GraphBuilder& b, const X& x) {
                                             return X{b.call("aten.abs.default", {cplx(b, x[0])})};  // abs's complex rule too
                                           }};
      m["aten.view_as_real.default"] = {{{2, 3, 2}}, {}, [](GraphBuilder& b, const X& x) {
                                          const Arg z = cplx(b, x[0]);
                                          return X{real(b, b.call("aten.add.Tensor", {z, z})),
                                                   b.call("aten.real.default", {z}), b.call("aten.imag.default", {z})};
                                        }};
    }
    return m;
  }();
  return s;
}

// The ops that only move, select or add up elements, on complex values (ops/complex_parts.h):
// each input a float64 [.., 2] seen as complex128 (view_as_complex), each result read back as
// its parts (view_as_real), so the finite differences run on real numbers. The gradients are the
// ops' own derivative rules run on complex gradients.
const std::map<std::string, Sample>& complex_samples() {
  static const std::map<std::string, Sample> s = [] {
    std::map<std::string, Sample> m;
    using X = std::vector<Arg>;
    static auto cplx = [](GraphBuilder& b, const Arg& x) { return b.call("aten.view_as_complex.default", {x}); };
    static auto real = [](GraphBuilder& b, const Arg& x) { return b.call("aten.view_as_real.default", {x}); };
    static auto idx = [](GraphBuilder& b, const Shape& s, const std::vector<int64_t>& v) {
      Tensor t(DType::i64, s);
      for (size_t i = 0; i < v.size(); ++i) t.set(static_cast<int64_t>(i), static_cast<double>(v[i]));
      return b.constant("idx", t);
    };
    auto one = [](std::function<Arg(GraphBuilder&, const Arg&)> f) {
      return Sample{{{3, 4, 2}}, {}, [f](GraphBuilder& b, const X& x) { return X{real(b, f(b, cplx(b, x[0])))}; }};
    };
    m["complex constant_pad_nd"] = one([](GraphBuilder& b, const Arg& z) {
      return b.call("aten.constant_pad_nd.default", {z, ints({1, 3, -1, 0}), num(0.0)});
    });
    m["complex reflection_pad1d"] = one([](GraphBuilder& b, const Arg& z) { return b.call("aten.reflection_pad1d.default", {z, ints({2, 3})}); });
    m["complex replication_pad1d"] = one([](GraphBuilder& b, const Arg& z) { return b.call("aten.replication_pad1d.default", {z, ints({3, 1})}); });
    m["complex index_select"] = one([](GraphBuilder& b, const Arg& z) {
      return b.call("aten.index_select.default", {z, Arg::of_int(1), idx(b, {5}, {2, 3, 0, 1, 2})});
    });
    m["complex index.Tensor"] = one([](GraphBuilder& b, const Arg& z) {
      return b.call("aten.index.Tensor", {z, list({idx(b, {4}, {2, 0, 2, 1})})});
    });
    m["complex gather"] = one([](GraphBuilder& b, const Arg& z) {
      return b.call("aten.gather.default", {z, Arg::of_int(1), idx(b, {3, 2}, {3, 0, 1, 1, 2, 0})});
    });
    m["complex flip, permute, roll, repeat"] = one([](GraphBuilder& b, const Arg& z) {
      const Arg f = b.call("aten.flip.default", {z, ints({0, 1})});
      const Arg p = b.call("aten.permute.default", {f, ints({1, 0})});
      const Arg r = b.call("aten.roll.default", {p, ints({2}), ints({0})});
      return b.call("aten.repeat.default", {r, ints({2, 1})});
    });
    m["complex cat, stack, expand, sum"] = one([](GraphBuilder& b, const Arg& z) {
      const Arg e = b.call("aten.expand.default", {b.call("aten.unsqueeze.default", {z, Arg::of_int(0)}), ints({2, 3, 4})});
      const Arg c = b.call("aten.cat.default", {list({z, b.call("aten.sum.dim_IntList", {e, ints({0})})}), Arg::of_int(1)});
      return b.call("aten.stack.default", {list({c, c}), Arg::of_int(0)});
    });
    m["complex scatter, slice_scatter, select_scatter, where"] = {{{3, 4, 2}, {3, 4, 2}}, {}, [](GraphBuilder& b, const X& x) {
      const Arg z = cplx(b, x[0]), w = cplx(b, x[1]);
      const Arg w2 = b.call("aten.slice.Tensor", {w, Arg::of_int(1), Arg::of_int(0), Arg::of_int(2)});  // src of index's shape
      const Arg sc = b.call("aten.scatter.src", {z, Arg::of_int(1), idx(b, {3, 2}, {3, 0, 1, 2, 0, 3}), w2});
      const Arg sl = b.call("aten.slice_scatter.default", {sc, w2, Arg::of_int(1), Arg::of_int(1), Arg::of_int(3)});
      const Arg se = b.call("aten.select_scatter.default", {sl, b.call("aten.select.int", {w, Arg::of_int(0), Arg::of_int(2)}), Arg::of_int(0), Arg::of_int(0)});
      Tensor c(DType::b8, {3, 4});
      for (int64_t i = 0; i < 12; ++i) c.set(i, i % 3 == 1);
      return X{real(b, b.call("aten.where.self", {b.constant("cond", c), se, w}))};
    }};
    // A real operand of a complex sum gets the real part of its gradient (autograd's
    // handle_r_to_c): complex, it broke the check (and a parameter's SGD step).
    m["complex add of a real operand"] = {{{3, 4, 2}, {3, 4}}, {}, [](GraphBuilder& b, const X& x) {
      const Arg s = b.call("aten.add.Tensor", {cplx(b, x[0]), x[1]});
      return X{real(b, b.call("aten.flip.default", {s, ints({1})}))};
    }};
    m["complex _to_copy from float64"] = {{{3, 4}}, {}, [](GraphBuilder& b, const X& x) {
      const Arg z = b.call("aten._to_copy.default", {x[0]}, {{"dtype", Arg::of_string("torch.complex128")}});
      return X{real(b, b.call("aten.constant_pad_nd.default", {z, ints({1, 1}), num(0.0)}))};
    }};
    return m;
  }();
  return s;
}

Tensor random_tensor(DType t, const Shape& s, std::mt19937_64& rng) {
  std::normal_distribution<double> nd;
  Tensor x(t, s);
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, nd(rng));
  return x;
}

// sum(outputs * tangents): the scalar whose gradient the joint graph computes.
double loss(const Graph& g, const std::vector<Tensor>& inputs, const std::vector<Tensor>& tangents) {
  const std::vector<Tensor> out = run_reference(g, inputs);
  double l = 0;
  for (size_t k = 0; k < out.size(); ++k)
    for (int64_t i = 0; i < out[k].numel(); ++i) l += out[k].get(i) * tangents[k].get(i);
  return l;
}

int saved_in_pytorch_forward(const std::string& path, int outputs) {
  std::ifstream f(path);
  std::string line, ret;
  while (std::getline(f, line))
    if (line.find("return (") != std::string::npos) ret = line;
  return static_cast<int>(std::count(ret.begin(), ret.end(), ',')) + 1 - outputs;
}

}  // namespace

class TestAutodiff : public QObject {
  Q_OBJECT
 private slots:
  void testEveryRuleHasASample() {
    int rules = 0;
    for (const OpDef& op : all_ops()) {
      if (!op.derivative) continue;
      ++rules;
      QVERIFY2(samples().count(op.name), ("no finite-difference sample for " + op.name).c_str());
    }
    QVERIFY(rules >= 50);
  }

  void testDerivativeMatchesFiniteDifferences_data() {
    QTest::addColumn<QString>("op");
    for (const OpDef& op : all_ops())  // rules, and ops differentiated through their decomposition that have a sample
      if (op.derivative || samples().count(op.name)) QTest::newRow(op.name.c_str()) << QString::fromStdString(op.name);
    for (const auto& [name, sample] : complex_samples()) QTest::newRow(name.c_str()) << QString::fromStdString(name);
  }
  void testDerivativeMatchesFiniteDifferences() {
    QFETCH(QString, op);
    const Sample& s = samples().count(op.toStdString()) ? samples().at(op.toStdString()) : complex_samples().at(op.toStdString());
    Graph g;
    GraphBuilder b(g);
    std::vector<Arg> in;
    for (size_t i = 0; i < s.inputs.size(); ++i) {
      const int id = b.placeholder("x" + std::to_string(i), TensorMeta::contiguous(DType::f64, s.inputs[i]));
      if (i < s.buffers.size() && s.buffers[i]) g.nodes[id].input_kind = InputKind::buffer;
      in.push_back(Arg::of_node(id));
    }
    for (const Arg& o : s.call(b, in)) g.outputs.push_back(o.node);
    const JointGraph j = build_joint(g);
    QCOMPARE(j.num_forward_outputs, static_cast<int>(g.outputs.size()));

    std::mt19937_64 rng(42);
    std::vector<Tensor> x, tangents;
    for (const Shape& sh : s.inputs) x.push_back(random_tensor(DType::f64, sh, rng));
    for (int o : g.outputs) tangents.push_back(random_tensor(DType::f64, g.nodes[o].meta().shape, rng));
    std::vector<Tensor> joint_in = x;
    for (size_t k = 0; k < j.tangents.size(); ++k) joint_in.push_back(tangents.at(j.tangent_of[k]));
    const std::vector<Tensor> r = run_reference(j.graph, joint_in);

    int checked = 0;
    for (size_t k = 0; k < j.grad_of.size(); ++k) {
      const int input = g.find(j.grad_of[k]);
      const Tensor& grad = r.at(j.num_forward_outputs + k);
      for (int64_t e = 0; e < x[input].numel(); ++e) {
        const double h = 1e-6, v = x[input].get(e);
        x[input].set(e, v + h);
        const double up = loss(g, x, tangents);
        x[input].set(e, v - h);
        const double down = loss(g, x, tangents);
        x[input].set(e, v);
        const double fd = (up - down) / (2 * h);
        const double got = grad.defined() ? grad.get(e) : 0.0;
        if (std::abs(got - fd) > 1e-6 + 1e-5 * std::abs(fd))
          QFAIL(qPrintable(QString("d/d%1[%2]: rule gives %3, finite differences %4")
                               .arg(QString::fromStdString(j.grad_of[k])).arg(e).arg(got, 0, 'g', 10).arg(fd, 0, 'g', 10)));
        ++checked;
      }
    }
    QVERIFY(checked > 0);
  }

  // Running statistics are buffers: no gradient, and none asked for.
  void testBuffersGetNoGradient() {
    Graph g;
    GraphBuilder b(g);
    const int x = b.placeholder("x", TensorMeta::contiguous(DType::f32, {4}));
    const int w = b.placeholder("running_mean", TensorMeta::contiguous(DType::f32, {4}));
    g.nodes[w].input_kind = InputKind::buffer;
    g.outputs.push_back(b.call("aten.mul.Tensor", {Arg::of_node(x), Arg::of_node(w)}).node);
    const JointGraph j = build_joint(g);
    QCOMPARE(j.grad_of, std::vector<std::string>{"x"});
  }

  // A strided slice of a slice: the joint graph's slice_backward decomposes to a zeros constant
  // that a sweep had copied among the weights before the graph named it, and GraphBuilder::constant
  // asked for the same free node name forever (the zoo's ONNX MaxPool fallback hung in --train).
  // Its gradient against the reference kernels of the joint graph, at both decomposition levels.
  void testChainedStridedSlicesDecompose() {
    Graph g;
    GraphBuilder b(g);
    const int x = b.placeholder("x", TensorMeta::contiguous(DType::f32, {5, 7}));
    const Arg a = b.call("aten.slice.Tensor", {Arg::of_node(x), Arg::of_int(0), Arg::of_int(0), Arg::of_int(4)});
    g.outputs.push_back(b.call("aten.slice.Tensor", {a, Arg::of_int(1), Arg::of_int(0), Arg::of_int(5), Arg::of_int(2)}).node);
    const JointGraph j = build_joint(g);
    std::vector<Tensor> in = {Tensor(DType::f32, {5, 7})};
    for (int64_t i = 0; i < 35; ++i) in[0].set(i, 0.5 * static_cast<double>(i) - 3);
    for (const Tensor& t : tangent_values(j)) in.push_back(t);
    const std::vector<Tensor> want = run_reference(j.graph, in);
    for (unsigned level : {level::core_aten, level::prims}) {
      const std::vector<Tensor> got = run_reference(decompose(j.graph, level), in);
      QCOMPARE(got.size(), want.size());
      for (size_t k = 0; k < got.size(); ++k) QVERIFY(compare(got[k], want[k], {}).ok);
    }
    // the gradient: ones where row < 4 and an even column below 5, else zeros
    const Tensor& gx = want.back();
    for (int64_t r = 0; r < 5; ++r)
      for (int64_t c = 0; c < 7; ++c) QCOMPARE(gx.get(r * 7 + c), (r < 4 && c < 5 && c % 2 == 0) ? 1.0 : 0.0);
  }

  void testOpWithoutRuleIsNamed() {
    Graph g;
    GraphBuilder b(g);
    const int x = b.placeholder("x", TensorMeta::contiguous(DType::f32, {4, 4}));
    const int i = b.placeholder("idx", TensorMeta::contiguous(DType::i64, {6}));
    const int o = b.placeholder("offsets", TensorMeta::contiguous(DType::i64, {2}));
    const Arg bag = b.call("aten._embedding_bag.default", {Arg::of_node(x), Arg::of_node(i), Arg::of_node(o)});
    g.outputs.push_back(b.get(bag, 0).node);
    try {
      build_joint(g);
      QFAIL("_embedding_bag has no derivative rule; building the joint graph should fail");
    } catch (const std::runtime_error& e) {
      const std::string m = e.what();
      QVERIFY2(m.find("aten._embedding_bag.default") != std::string::npos, e.what());
    }
  }

  // Both partitioners on the models of tests/data: the min-cut one saves no more bytes than the
  // default one, and no more tensors than PyTorch's own partitioned forward returns.
  void testPartitioners_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("pytorch_forward");
    QTest::newRow("sincos") << "sincos/1_dynamo_fx_0.txt" << "sincos/2_aot_forward_0.txt";
    QTest::newRow("mse_loss") << "mse_loss/1_dynamo_fx_0.txt" << "mse_loss/2_aot_forward_0.txt";
    for (const char* m : {"softmax", "res_block", "cifar_net"})
      QTest::newRow(m) << QString("models/%1/model.pt2").arg(m) << QString("models/%1/2_aot_forward_0.txt").arg(m);
  }
  void testPartitioners() {
    QFETCH(QString, model);
    QFETCH(QString, pytorch_forward);
    const LoadedModel m = load_model(data(model.toStdString()));
    const JointGraph j = build_joint(m.graph);
    const Partition def = partition_joint(j, Partitioner::default_partition);
    const Partition cut = partition_joint(j, Partitioner::min_cut);
    QVERIFY2(cut.saved_bytes <= def.saved_bytes,
             qPrintable(QString("min-cut saves %1 bytes, default %2").arg(cut.saved_bytes).arg(def.saved_bytes)));
    const int pytorch = saved_in_pytorch_forward(data(pytorch_forward.toStdString()), j.num_forward_outputs);
    QVERIFY(pytorch > 0);
    QVERIFY2(static_cast<int>(cut.saved.size()) <= pytorch,
             qPrintable(QString("min-cut saves %1 tensors, PyTorch's forward %2").arg(cut.saved.size()).arg(pytorch)));
    for (const Partition* p : {&def, &cut}) {
      // The forward returns the model's outputs, then exactly the saved tensors; the backward
      // takes the saved tensors, then the tangents, and returns one gradient per input.
      QCOMPARE(p->forward.outputs.size(), size_t(j.num_forward_outputs) + p->saved.size());
      const std::vector<int> bw_in = p->backward.inputs();
      QVERIFY(bw_in.size() >= p->saved.size() + j.tangents.size());
      for (size_t k = 0; k < p->saved.size(); ++k) {
        QCOMPARE(p->backward.nodes[bw_in[k]].name, p->saved[k].name);
        QVERIFY(!p->saved[k].why.empty());
        QVERIFY(p->saved[k].bytes > 0);
      }
      QCOMPARE(p->backward.outputs.size(), j.grad_of.size());
    }
  }

  // sin(x)^2 + cos(x)^2: the min-cut partitioner saves x alone and recomputes sin and cos; the
  // default one saves what the backward reads. Both steps compute the same gradient.
  void testMinCutRecomputesPointwise() {
    const LoadedModel m = load_model(data("sincos/1_dynamo_fx_0.txt"), LoadOptions{{data("sincos/in0.npy")}, {}, {}});
    const JointGraph j = build_joint(m.graph);
    const Partition cut = partition_joint(j, Partitioner::min_cut);
    QCOMPARE(cut.saved.size(), size_t(1));
    QVERIFY(cut.saved[0].is_input);
    QVERIFY(cut.recomputed.size() >= 2);
    const Partition def = partition_joint(j, Partitioner::default_partition);
    QVERIFY(def.saved.size() > 1);
    Tensor ones(DType::f32, m.graph.nodes[m.graph.outputs[0]].meta().shape);
    for (int64_t i = 0; i < ones.numel(); ++i) ones.set(i, 1.0);
    const std::vector<Tensor> in = {m.inputs[0], ones};
    const std::vector<Tensor> a = run_reference(training_step(j, cut), in), b = run_reference(training_step(j, def), in);
    const Tensor expected = load_npy_for_test();
    QVERIFY(compare(a.at(1), expected).ok);
    QVERIFY(compare(b.at(1), expected).ok);
  }

  // (a @ b)^T becomes b^T @ a^T, and the value stays the same.
  void testFoldTransposedProducts() {
    Graph g;
    GraphBuilder b(g);
    const Arg a = Arg::of_node(b.placeholder("a", TensorMeta::contiguous(DType::f64, {3, 4})));
    const Arg c = Arg::of_node(b.placeholder("c", TensorMeta::contiguous(DType::f64, {4, 5})));
    g.outputs.push_back(b.call("aten.permute.default", {b.call("aten.mm.default", {a, c}), ints({1, 0})}).node);
    const Graph f = fold_transposed_products(g);
    const Node& out = f.nodes[f.outputs[0]];
    QCOMPARE(out.op->name, std::string("aten.mm.default"));
    QCOMPARE(out.meta().shape, (Shape{5, 3}));
    std::mt19937_64 rng(1);
    const std::vector<Tensor> in = {random_tensor(DType::f64, {3, 4}, rng), random_tensor(DType::f64, {4, 5}, rng)};
    QVERIFY(compare(run_reference(f, in)[0], run_reference(g, in)[0]).ok);
  }

 private:
  static Tensor load_npy_for_test() {
    const LoadedModel m = load_model(data("sincos/1_dynamo_fx_0.txt"),
                                     LoadOptions{{data("sincos/in0.npy")}, {}, {data("sincos/grad_in0.npy")}});
    return m.expected_grads.at(0);
  }
};

QTEST_GUILESS_MAIN(TestAutodiff)
#include "test_autodiff.moc"
