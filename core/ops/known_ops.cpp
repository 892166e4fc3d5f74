#include "ops/known_ops.h"

#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ls::op {
namespace {

const OpDef& must_find(std::string_view name) {
  if (const OpDef* d = find_op(name)) return *d;
  throw std::logic_error("the op table has no '" + std::string(name) + "' (named in ops/known_ops.cpp)");
}

std::vector<const OpDef*> resolve(std::initializer_list<std::string_view> names) {
  std::vector<const OpDef*> ops;
  for (std::string_view n : names) ops.push_back(&must_find(n));
  return ops;
}

bool in(const OpDef* op, const std::vector<const OpDef*>& family) {
  return op && std::find(family.begin(), family.end(), op) != family.end();
}

}  // namespace

const OpDef& mm() { static const OpDef& d = must_find("aten.mm.default"); return d; }
const OpDef& addmm() { static const OpDef& d = must_find("aten.addmm.default"); return d; }
const OpDef& bmm() { static const OpDef& d = must_find("aten.bmm.default"); return d; }
const OpDef& convolution() { static const OpDef& d = must_find("aten.convolution.default"); return d; }
const OpDef& convolution_backward() { static const OpDef& d = must_find("aten.convolution_backward.default"); return d; }
const OpDef& max_pool2d_with_indices() { static const OpDef& d = must_find("aten.max_pool2d_with_indices.default"); return d; }
const OpDef& max_pool2d_with_indices_backward() {
  static const OpDef& d = must_find("aten.max_pool2d_with_indices_backward.default");
  return d;
}
const OpDef& cat() { static const OpDef& d = must_find("aten.cat.default"); return d; }
const OpDef& gather() { static const OpDef& d = must_find("aten.gather.default"); return d; }
const OpDef& embedding() { static const OpDef& d = must_find("aten.embedding.default"); return d; }
const OpDef& index_put() { static const OpDef& d = must_find("aten.index_put.default"); return d; }
const OpDef& argmax() { static const OpDef& d = must_find("aten.argmax.default"); return d; }
const OpDef& argmin() { static const OpDef& d = must_find("aten.argmin.default"); return d; }
const OpDef& max_dim() { static const OpDef& d = must_find("aten.max.dim"); return d; }
const OpDef& prod() { static const OpDef& d = must_find("aten.prod.default"); return d; }
const OpDef& prod_dim() { static const OpDef& d = must_find("aten.prod.dim_int"); return d; }
const OpDef& min_dim() { static const OpDef& d = must_find("aten.min.dim"); return d; }
const OpDef& cumsum() { static const OpDef& d = must_find("aten.cumsum.default"); return d; }
const OpDef& sort() { static const OpDef& d = must_find("aten.sort.default"); return d; }
const OpDef& topk() { static const OpDef& d = must_find("aten.topk.default"); return d; }
const OpDef& scatter_src() { static const OpDef& d = must_find("aten.scatter.src"); return d; }
const OpDef& scatter_value() { static const OpDef& d = must_find("aten.scatter.value"); return d; }
const OpDef& scatter_add() { static const OpDef& d = must_find("aten.scatter_add.default"); return d; }
const OpDef& scatter_reduce_two() { static const OpDef& d = must_find("aten.scatter_reduce.two"); return d; }
const OpDef& index_tensor() { static const OpDef& d = must_find("aten.index.Tensor"); return d; }
const OpDef& efficient_attention() {
  static const OpDef& d = must_find("aten._scaled_dot_product_efficient_attention.default");
  return d;
}
const OpDef& efficient_attention_backward() {
  static const OpDef& d = must_find("aten._scaled_dot_product_efficient_attention_backward.default");
  return d;
}

const OpDef& rand() { static const OpDef& d = must_find("aten.rand.default"); return d; }
const OpDef& randn() { static const OpDef& d = must_find("aten.randn.default"); return d; }
const OpDef& fft_r2c() { static const OpDef& d = must_find("aten._fft_r2c.default"); return d; }
const OpDef& fft_c2r() { static const OpDef& d = must_find("aten._fft_c2r.default"); return d; }
const OpDef& fft_c2c() { static const OpDef& d = must_find("aten._fft_c2c.default"); return d; }

const OpDef& view() { static const OpDef& d = must_find("aten.view.default"); return d; }
const OpDef& permute() { static const OpDef& d = must_find("aten.permute.default"); return d; }
const OpDef& detach() { static const OpDef& d = must_find("aten.detach.default"); return d; }
const OpDef& add_tensor() { static const OpDef& d = must_find("aten.add.Tensor"); return d; }
const OpDef& sub_tensor() { static const OpDef& d = must_find("aten.sub.Tensor"); return d; }
const OpDef& mul_tensor() { static const OpDef& d = must_find("aten.mul.Tensor"); return d; }

namespace prims {
const OpDef& reshape() { static const OpDef& d = must_find("prims.reshape.default"); return d; }
const OpDef& transpose() { static const OpDef& d = must_find("prims.transpose.default"); return d; }
const OpDef& collapse_view() { static const OpDef& d = must_find("prims.collapse_view.default"); return d; }
const OpDef& split_dim() { static const OpDef& d = must_find("prims.split_dim.default"); return d; }
}  // namespace prims

const OpDef& missing() {
  static const OpDef d = [] {
    OpDef m;
    m.name = "missing";
    m.schema = "missing(...) -> Any";
    m.kind = OpKind::composite;  // no rule of any stage: nothing past the importers takes it
    return m;
  }();
  return d;
}

const std::vector<const OpDef& (*)()>& known_ops() {
  static const std::vector<const OpDef& (*)()> all = {
      mm, addmm, bmm, convolution, convolution_backward, max_pool2d_with_indices, max_pool2d_with_indices_backward, cat, gather, embedding, index_tensor,
      efficient_attention, efficient_attention_backward, rand, randn, fft_r2c, fft_c2r, fft_c2c, view, permute, detach, add_tensor, sub_tensor, mul_tensor,
      prims::reshape, prims::transpose, prims::collapse_view, prims::split_dim};
  return all;
}

bool is_matmul(const OpDef* op) {
  static const std::vector<const OpDef*> family = {&mm(), &addmm(), &bmm()};
  return in(op, family);
}

bool is_gemm(const OpDef* op) {
  static const std::vector<const OpDef*> family = {&mm(), &addmm()};
  return in(op, family);
}

bool is_reshape_view(const OpDef* op) {
  static const std::vector<const OpDef*> family = {&view(), &prims::reshape(), &prims::collapse_view(), &prims::split_dim()};
  return in(op, family);
}

bool is_permute_view(const OpDef* op) {
  static const std::vector<const OpDef*> family = {&permute(), &prims::transpose()};
  return in(op, family);
}

bool is_composite_view(const OpDef* op) {
  static const std::vector<const OpDef*> family = [] {
    std::vector<const OpDef*> f =
        resolve({"aten.t.default", "aten.transpose.int", "aten.reshape.default", "aten._unsafe_view.default",
                 "aten.unsqueeze.default", "aten.squeeze.dim", "aten.flatten.using_ints", "aten.alias.default",
                 "aten.split.Tensor", "aten.split_with_sizes.default"});
    f.push_back(&detach());
    return f;
  }();
  return in(op, family);
}

bool is_library_composite(const OpDef* op) {
  static const std::vector<const OpDef*> family = resolve(
      {"aten.linear.default", "aten.conv2d.default", "aten.scaled_dot_product_attention.default", "aten.max_pool2d.default"});
  return in(op, family);
}

}  // namespace ls::op
