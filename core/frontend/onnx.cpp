#include "frontend/onnx.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>

#include "ops/builder.h"
#include "ops/known_ops.h"
#include "ops/op_table.h"

#ifdef LOWERSCOPE_HAVE_ONNX
#include "frontend/onnx_importer.h"
#endif

namespace ls {

#ifndef LOWERSCOPE_HAVE_ONNX
bool have_onnx() { return false; }
Graph import_onnx(const std::string& path) {
  throw std::runtime_error(path + ": this build cannot read ONNX models (it was built without the ONNX protobuf library)");
}
#else
bool have_onnx() { return true; }

namespace onnx_import {

std::vector<Arg> Importer::lower(const onnx::NodeProto& n, const std::string& where) {
  const std::string& op = n.op_type();
  if (fold(n, where)) return {};
  if (std::optional<std::vector<Arg>> r = lower_more(n, where)) return *r;
  auto in = [&](int i) {
    if (i >= n.input_size() || n.input(i).empty()) fail(where, "input " + std::to_string(i) + " is missing");
    return value(n.input(i), where);
  };
  static const std::map<std::string, std::string> unary = {
      {"Relu", "aten.relu.default"}, {"Sigmoid", "aten.sigmoid.default"}, {"Tanh", "aten.tanh.default"},
      {"Exp", "aten.exp.default"},   {"Log", "aten.log.default"},         {"Sqrt", "aten.sqrt.default"},
      {"Neg", "aten.neg.default"},   {"Abs", "aten.abs.default"},         {"Erf", "aten.erf.default"},
      {"Sin", "aten.sin.default"},   {"Cos", "aten.cos.default"},         {"Reciprocal", "aten.reciprocal.default"},
      {"HardSwish", "aten.hardswish.default"}, {"Identity", "aten.alias.default"}};
  static const std::map<std::string, std::string> binary = {{"Add", "aten.add.Tensor"}, {"Sub", "aten.sub.Tensor"},
                                                            {"Mul", "aten.mul.Tensor"}, {"Div", "aten.div.Tensor"},
                                                            {"Max", "aten.maximum.default"}, {"Min", "aten.minimum.default"}};
  if (auto u = unary.find(op); u != unary.end()) return {b_.call(u->second, {in(0)})};
  if (auto bi = binary.find(op); bi != binary.end()) {
    Arg x = operand(n, 0, where), y = operand(n, 1, where);
    if (!x.is_node()) {
      if (op == "Add" || op == "Mul") std::swap(x, y);
      else x = value(input_name(n, 0, where), where);
    }
    return {b_.call(bi->second, {x, y})};
  }
  if (op == "Pow") {
    const Arg e = operand(n, 1, where);
    return {b_.call(e.is_node() ? "aten.pow.Tensor_Tensor" : "aten.pow.Tensor_Scalar", {in(0), e})};
  }
  if (op == "Where") return {b_.call("aten.where.self", {in(0), in(1), in(2)})};
  if (op == "Constant") {
    const auto* v = attr(n, "value");
    if (!v || !v->has_t()) fail(where, "only tensor constants are supported");
    constants_[n.output(0)] = tensor(v->t(), where);
    return {};
  }
  if (op == "Reshape") {
    std::vector<int64_t> s = ints_of(n, 1, where);
    const Shape& x = shape(in(0));
    if (!attr_i(n, "allowzero", 0))
      for (size_t i = 0; i < s.size(); ++i)
        if (s[i] == 0 && i < x.size()) s[i] = x[i];
    return {b_.call("aten.view.default", {in(0), Arg::of_ints(s)})};
  }
  if (op == "Flatten") {
    const Shape& x = shape(in(0));
    int64_t axis = attr_i(n, "axis", 1);
    if (axis < 0) axis += static_cast<int64_t>(x.size());
    int64_t a = 1, c = 1;
    for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) (i < axis ? a : c) *= x[i];
    return {b_.call("aten.view.default", {in(0), Arg::of_ints({a, c})})};
  }
  if (op == "Transpose") {
    std::vector<int64_t> perm = attr_ints(n, "perm");
    if (perm.empty())
      for (int64_t i = static_cast<int64_t>(shape(in(0)).size()); i-- > 0;) perm.push_back(i);
    return {b_.call("aten.permute.default", {in(0), Arg::of_ints(perm)})};
  }
  if (op == "Softmax") return {b_.call("aten._softmax.default", {in(0), Arg::of_int(attr_i(n, "axis", -1)), Arg::of_bool(false)})};
  if (op == "Gelu") {
    const auto* a = attr(n, "approximate");
    return {b_.call("aten.gelu.default", {in(0)}, {{"approximate", Arg::of_string(a ? a->s() : "none")}})};
  }
  if (op == "HardSigmoid") {
    const double alpha = attr_f(n, "alpha", 0.2), beta = attr_f(n, "beta", 0.5);
    if (std::abs(alpha - 1.0 / 6.0) < 1e-6 && std::abs(beta - 0.5) < 1e-6) return {b_.call("aten.hardsigmoid.default", {in(0)})};
    const Arg y = b_.call("aten.add.Tensor", {b_.call("aten.mul.Tensor", {in(0), Arg::of_real(alpha)}), Arg::of_real(beta)});
    return {b_.call("aten.clamp.default", {y, Arg::of_real(0.0), Arg::of_real(1.0)})};
  }
  if (op == "LayerNormalization") {
    const Shape x = shape(in(0));
    int64_t axis = attr_i(n, "axis", -1);
    if (axis < 0) axis += static_cast<int64_t>(x.size());
    if (axis < 0 || axis >= static_cast<int64_t>(x.size()))
      fail(where, "attribute 'axis' " + std::to_string(attr_i(n, "axis", -1)) + " is out of range for a tensor of rank " + std::to_string(x.size()));
    const Shape ns(x.begin() + axis, x.end());
    const Arg bias = n.input_size() > 2 && !n.input(2).empty() ? in(2) : Arg::none();
    const Arg r = b_.call("aten.native_layer_norm.default", {in(0), Arg::of_ints(ns), in(1), bias, Arg::of_real(attr_f(n, "epsilon", 1e-5))});
    return {b_.get(r, 0), b_.get(r, 1), b_.get(r, 2)};
  }
  if (op == "BatchNormalization") {
    const Arg r = b_.call("aten._native_batch_norm_legit_no_training.default",
                          {in(0), in(1), in(2), in(3), in(4), Arg::of_real(attr_f(n, "momentum", 0.9)), Arg::of_real(attr_f(n, "epsilon", 1e-5))});
    return {b_.get(r, 0)};
  }
  if (op == "Concat") {
    Arg l;
    l.kind = Arg::Kind::list;
    for (int i = 0; i < n.input_size(); ++i) l.list.push_back(in(i));
    return {b_.call("aten.cat.default", {l, Arg::of_int(attr_i(n, "axis", 0))})};
  }
  return missing(n, where);
}

}  // namespace onnx_import

Graph import_onnx(const std::string& path) { return onnx_import::Importer(path).run(); }
#endif

}  // namespace ls
