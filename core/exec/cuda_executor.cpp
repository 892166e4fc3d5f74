#include "exec/cuda_executor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "cuda/cublas.h"
#include "exec/attention.h"
#include "exec/extern_kernels.h"
#include "ops/known_ops.h"

namespace ls {
namespace {

bool all_f32(const LoopProgram& p, const ExternCall& c) {
  for (const auto& b : c.inputs)
    if (p.buffer(b).dtype != DType::f32) return false;
  for (const auto& b : c.outputs)
    if (p.buffer(b).dtype != DType::f32) return false;
  return true;
}

// The shape a library call sees its tensor argument `arg` in.
Shape seen_shape(const LoopProgram& p, const ExternCall& c, size_t arg) {
  const size_t i = static_cast<size_t>(c.args.at(arg).node);
  return i < c.shapes.size() ? c.shapes[i] : p.buffer(c.inputs.at(i)).shape;
}

std::vector<int64_t> pair_of(const Arg& a, int64_t dflt) {
  std::vector<int64_t> v = a.kind == Arg::Kind::none ? std::vector<int64_t>{} : a.ints();
  if (v.empty()) v = {dflt, dflt};
  if (v.size() == 1) v.push_back(v[0]);
  return v;
}

// How a (non-depthwise) convolution's product reads its input. A 1x1 window with stride 1 and no
// padding reads the input's channels as they are: the input is its own columns (no im2col, and
// grad_x needs no col2im). One output pixel whose window covers the whole unpadded input, in one
// group, is a linear layer: y [N, O] = x [N, C H W] @ w [O, C KH KW]^T, its bias in cuBLASLt's
// epilogue (MobileNet's squeeze-and-excitation convolutions).
enum class ConvForm { columns, pointwise, linear };

ConvForm conv_form(const Shape& x, const Shape& w, const Shape& y, int64_t groups, const std::vector<int64_t>& st,
                   const std::vector<int64_t>& pad) {
  const bool unpadded = pad[0] == 0 && pad[1] == 0;
  if (groups == 1 && y[2] == 1 && y[3] == 1 && w[2] == x[2] && w[3] == x[3] && unpadded) return ConvForm::linear;
  if (w[2] == 1 && w[3] == 1 && st[0] == 1 && st[1] == 1 && unpadded) return ConvForm::pointwise;
  return ConvForm::columns;
}

}  // namespace

std::string cuda_extern_how(const LoopProgram& p, const ExternCall& c, bool blas) {
  const bool f32 = all_f32(p, c);
  if (op::is_matmul(c.op) && f32 && blas) return "cuBLAS";
  const std::string attention = attention_cuda_path(p, c);
  if (attention == "fused") return "attention kernel";
  if (attention == "tiled") return "flash attention kernel";
  if (attention == "cublas" && blas) return "attention (cuBLAS)";
  if (c.op == &op::convolution() && f32 && !c.args[6].b && c.output_metas.at(0).shape.size() == 4) {
    const Shape w = seen_shape(p, c, 1);
    const int64_t groups = c.args[8].i, C = seen_shape(p, c, 0).at(1);
    if (groups == C && w[1] == 1 && w[0] == C) return "depthwise kernel";
    if (!blas) return "host (reference kernel)";
    switch (conv_form(seen_shape(p, c, 0), w, c.output_metas.at(0).shape, groups, pair_of(c.args[3], 1), pair_of(c.args[4], 0))) {
      case ConvForm::linear: return "cuBLAS (a linear layer)";
      case ConvForm::pointwise: return "cuBLAS (1x1: no im2col)";
      case ConvForm::columns: return "im2col + cuBLAS";
    }
  }
  if (c.op == &op::convolution_backward() && f32 && !c.args[7].b && seen_shape(p, c, 1).size() == 4) {
    const Shape w = seen_shape(p, c, 2);
    const int64_t groups = c.args[9].i, C = seen_shape(p, c, 1).at(1);
    if (groups == C && w[1] == 1 && w[0] == C) return "depthwise backward kernels";
    if (!blas) return "host (reference kernel)";
    switch (conv_form(seen_shape(p, c, 1), w, seen_shape(p, c, 0), groups, pair_of(c.args[4], 1), pair_of(c.args[5], 0))) {
      case ConvForm::linear: return "cuBLAS (a linear layer's backward)";
      case ConvForm::pointwise: return "cuBLAS (1x1: no im2col or col2im)";
      case ConvForm::columns: return "im2col + cuBLAS + col2im";
    }
  }
  if (c.op == &op::max_pool2d_with_indices() && p.buffer(c.inputs.at(0)).dtype == DType::f32 &&
      seen_shape(p, c, 0).size() == 4 && !c.args[5].b)
    return "pool kernel";
  if (c.op == &op::cat()) {
    bool words = true;
    for (const auto& b : c.inputs) words = words && dtype_size(p.buffer(b).dtype) == 4;
    if (words && dtype_size(p.buffer(c.outputs.at(0)).dtype) == 4) return "device copies";
  }
  return "host (reference kernel)";
}

namespace {

int64_t grid_for(int64_t total) { return std::clamp<int64_t>((total + 255) / 256, 1, 132 * 32); }

}  // namespace

CudaExecutable::CudaExecutable(const LoopProgram& p, const Schedule& s, const GeneratedCuda& g, CudaDriver& d, CudaModule& m,
                               CudaModule& helpers, CudaModule* attention, std::vector<int64_t> sizes)
    : p_(p), g_(g), d_(d), sizes_(sizes.begin(), sizes.end()) {
  std::string why;
  blas_ = Cublas::get(&why);
  Cublas* blas = blas_;
  for (size_t i = 0; i < g.source.kernels.size(); ++i) {
    const bool epilogue_inside = i + 1 < g.source.kernels.size() && g.source.kernels[i + 1].in_template;
    if (s.kernels.at(i).is_extern && !g.source.kernels[i].launcher.empty()) {  // max-autotune's GEMM template in its place
      void* f = m.function(g.source.kernels[i].launcher);
      functions_.push_back(f);
      externs_.push_back(&p.nodes.at(s.kernels[i].nodes.at(0)));
      registers.push_back(d.registers(f));
      how.push_back(epilogue_inside ? "template+epilogue" : "template");
    } else if (s.kernels.at(i).is_extern) {
      const LoopNode* n = &p.nodes.at(s.kernels[i].nodes.at(0));
      functions_.push_back(nullptr);
      externs_.push_back(n);
      registers.push_back(0);
      how.push_back(cuda_extern_how(p, n->ext, blas != nullptr));
    } else if (g.source.kernels[i].in_template) {  // runs inside the template before it
      functions_.push_back(nullptr);
      externs_.push_back(nullptr);
      registers.push_back(0);
      how.push_back("epilogue");
    } else {
      void* f = m.function(g.source.kernels[i].launcher);
      functions_.push_back(f);
      externs_.push_back(nullptr);
      registers.push_back(d.registers(f));
      how.push_back("generated");
    }
  }
  for (size_t i = 0; i < how.size(); ++i) {
    if ((how[i] == "attention kernel" || how[i] == "flash attention kernel") && !attention)
      throw std::runtime_error("the attention kernels' module was not compiled");
    if (how[i] == "attention kernel" || how[i] == "flash attention kernel") {  // the call's direction only
      const ExternCall& c = externs_[i]->ext;
      const std::string d = std::to_string(attention_head_dim(p, c)), kind = how[i] == "attention kernel" ? "ls_attention_" : "ls_flash_attention_";
      const std::vector<std::string> names = is_attention_backward(c.op) ? std::vector<std::string>{"bwd_dq_", "bwd_dkv_"}
                                                                              : std::vector<std::string>{"fwd_"};
      for (const std::string& n : names) helpers_[kind + n + d] = attention->function(kind + n + d);
    }
  }
  // max-autotune's cuBLASLt algorithms, by kernel name (the choice made on this device and library)
  for (size_t i = 0; i < how.size(); ++i) {
    const auto chosen = g.matmul_algorithms.find(g.source.kernels[i].name);
    MatmulAlgorithm a;
    if (chosen != g.matmul_algorithms.end() && how[i] == "cuBLAS" && MatmulAlgorithm::parse(chosen->second, a)) choose_matmul(i, &a);
  }
  bias_kernel_ = helpers.function("ls_broadcast_bias");
  for (const char* k : {"ls_add_channel_bias", "ls_im2col", "ls_depthwise_conv", "ls_max_pool2d", "ls_copy_rows", "ls_strided_copy4",
                        "ls_attn_softmax", "ls_attn_probs", "ls_attn_rowdot", "ls_attn_dscores", "ls_col2im", "ls_channel_sum", "ls_count_mismatches", "ls_square_sum", "ls_hold",
                        "ls_depthwise_conv_bwd_input", "ls_depthwise_conv_bwd_weight"})
    helpers_[k] = helpers.function(k);
}

void CudaExecutable::bind(const std::vector<Tensor>& inputs) {
  if (inputs.size() != p_.inputs.size())
    throw std::invalid_argument("the model takes " + std::to_string(p_.inputs.size()) + " inputs, got " + std::to_string(inputs.size()));
  buffers_.clear();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const LoopBuffer& b = p_.buffer(p_.inputs[i]);
    if (inputs[i].shape() != b.shape || inputs[i].dtype() != b.dtype)
      throw std::invalid_argument("input '" + b.name + "' must be " + std::string(dtype_short(b.dtype)) + shape_str(b.shape));
    DeviceBuffer buf(d_, static_cast<size_t>(inputs[i].nbytes()));
    if (inputs[i].nbytes()) d_.upload(buf.ptr(), inputs[i].data(), static_cast<size_t>(inputs[i].nbytes()));
    buffers_.emplace(b.name, std::move(buf));
  }
  auto device = [&](const std::string& name) -> DevicePtr {
    auto it = buffers_.find(name);
    if (it == buffers_.end()) it = buffers_.emplace(name, DeviceBuffer(d_, static_cast<size_t>(p_.buffer(name).bytes()))).first;
    return it->second.ptr();
  };
  for (const auto& o : p_.outputs)
    if (!o.empty()) device(o);
  scratch_.clear();
  arg_values_.assign(g_.source.kernels.size(), {});
  arg_ptrs_.assign(g_.source.kernels.size(), {});
  for (size_t k = 0; k < g_.source.kernels.size(); ++k) {
    std::vector<DevicePtr>& v = arg_values_[k];
    for (const auto& a : g_.source.kernels[k].args) v.push_back(device(a));
    for (const auto& b : externs_[k] ? externs_[k]->ext.outputs : std::vector<std::string>{}) device(b);
    scratch_.emplace_back(d_, static_cast<size_t>(g_.launch[k].scratch_bytes));
    if (g_.launch[k].scratch_bytes) {
      d_.zero(scratch_.back().ptr(), static_cast<size_t>(g_.launch[k].scratch_bytes));
      v.push_back(scratch_.back().ptr());
    }
    for (DevicePtr& x : v) arg_ptrs_[k].push_back(&x);
    if (functions_[k])
      for (long long& x : sizes_) arg_ptrs_[k].push_back(&x);
  }
}

void CudaExecutable::step(size_t k) {
  if (functions_[k]) {
    const CudaLaunch& l = g_.launch[k];
    return d_.launch(functions_[k], l.grid, l.block, arg_ptrs_[k].data(), g_.source.kernels[k].name.c_str());
  }
  if (!externs_[k]) return;  // an epilogue: it ran inside the GEMM template before it
  try {
    if (how[k] == "cuBLAS" || how[k].rfind("cuBLASLt", 0) == 0) cublas_extern(k);
    else if (how[k] == "host (reference kernel)") host_extern(k);
    else if (how[k] == "attention kernel" || how[k] == "flash attention kernel") attention_extern(k);
    else if (how[k] == "attention (cuBLAS)") attention_cublas(k);
    else device_extern(k);
  } catch (const std::exception& e) {
    throw std::runtime_error("extern kernel " + externs_[k]->ext.op->name + " (" + externs_[k]->graph_node + "): " + e.what());
  }
}

struct CudaExecutable::Product {
  MatmulProblem problem;   // batch, sizes, layouts; bias: a per-column bias cuBLASLt adds
  DevicePtr a = 0, b = 0, bias = 0, y = 0;
  float alpha = 1.f, beta = 0.f;
  bool lt = true;          // cuBLASLt can run it as `problem` (no bias, or a per-column one added unscaled)
  Shape bias_shape;        // addmm's bias, as the call sees it
};

CudaExecutable::Product CudaExecutable::product(size_t k) const {
  const ExternCall& c = externs_.at(k)->ext;
  auto operand = [&](size_t arg) {
    const size_t i = static_cast<size_t>(c.args.at(arg).node);
    return std::make_pair(buffers_.at(c.inputs.at(i)).ptr(), i < c.shapes.size() ? c.shapes[i] : p_.buffer(c.inputs[i]).shape);
  };
  Product m;
  m.y = buffers_.at(c.outputs.at(0)).ptr();
  MatmulProblem& p = m.problem;
  if (c.op == &op::bmm()) {
    const auto [a, as] = operand(0);
    const auto [b, bs] = operand(1);
    p.ta = transposed_operand(c, 0), p.tb = transposed_operand(c, 1);
    p.batch = as[0], p.M = as[p.ta ? 2 : 1], p.K = as[p.ta ? 1 : 2], p.N = bs[p.tb ? 1 : 2];
    p.stride_a = p.M * p.K, p.stride_b = p.K * p.N, p.stride_c = p.M * p.N;
    m.a = a, m.b = b;
    return m;
  }
  const bool addmm = c.op == &op::addmm();
  const size_t ia = addmm ? 1 : 0, ib = addmm ? 2 : 1;
  const auto [a, as] = operand(ia);
  const auto [b, bs] = operand(ib);
  p.ta = transposed_operand(c, ia), p.tb = transposed_operand(c, ib);
  p.M = as[p.ta ? 1 : 0], p.K = as[p.ta ? 0 : 1], p.N = bs[p.tb ? 0 : 1];
  m.a = a, m.b = b;
  if (addmm) {
    const auto [bias, bias_shape] = operand(0);
    m.bias = bias, m.bias_shape = bias_shape;
    m.beta = static_cast<float>(c.args[3].number());
    m.alpha = static_cast<float>(c.args[4].number());
    // A bias per column, unscaled: cuBLASLt adds it in the product's epilogue.
    const bool row_vector = bias_shape.size() == 1 ? bias_shape[0] == p.N : bias_shape.size() == 2 && bias_shape[0] == 1 && bias_shape[1] == p.N;
    p.bias = m.lt = row_vector && c.args[3].number() == 1.0;
  }
  return m;
}

void CudaExecutable::cublas_extern(size_t k) {
  const Product m = product(k);
  const MatmulProblem& p = m.problem;
  Cublas& blas = *blas_;
  if (const auto chosen = algorithms_.find(k); chosen != algorithms_.end() && m.lt &&
                                               blas.gemm_lt(p, &chosen->second, m.alpha, m.a, m.b, m.bias, m.y))
    return;
  if (p.batch > 1 || externs_[k]->ext.op == &op::bmm())
    return blas.sgemm(p.batch, p.M, p.N, p.K, 1.f, m.a, p.ta, p.stride_a, m.b, p.tb, p.stride_b, 0.f, m.y, p.stride_c);
  if (p.bias && blas.gemm_bias(p.M, p.N, p.K, m.alpha, m.a, p.ta, m.b, p.tb, m.bias, m.y)) return;
  float alpha = 1.f, beta = 0.f;
  if (externs_[k]->ext.op == &op::addmm()) {
    // Broadcast the bias into C, then C = alpha * A @ B + beta * C.
    const Shape& bias_shape = m.bias_shape;
    long long MM = p.M, NN = p.N, row_stride = bias_shape.size() == 2 ? bias_shape[1] : 0;
    int per_row = bias_shape.size() == 2 && bias_shape[0] != 1, per_col = !bias_shape.empty() && bias_shape.back() != 1;
    DevicePtr yy = m.y, bb = m.bias;
    void* params[] = {&yy, &bb, &MM, &NN, &per_row, &per_col, &row_stride};
    d_.launch(bias_kernel_, (p.M * p.N + 255) / 256, 256, params, "ls_broadcast_bias");
    beta = m.beta;
    alpha = m.alpha;
  }
  blas.sgemm(1, p.M, p.N, p.K, alpha, m.a, p.ta, 0, m.b, p.tb, 0, beta, m.y, 0);
}

std::optional<MatmulProblem> CudaExecutable::matmul_problem(size_t k) const {
  if (how.at(k) != "cuBLAS" && how[k].rfind("cuBLASLt", 0) != 0) return std::nullopt;
  if (arg_ptrs_.empty()) throw std::logic_error("the inputs are not bound yet (run or benchmark first)");
  const Product m = product(k);
  if (!m.lt) return std::nullopt;
  return m.problem;
}

void CudaExecutable::choose_matmul(size_t k, const MatmulAlgorithm* algo) {
  if (how.at(k) != "cuBLAS" && how[k].rfind("cuBLASLt", 0) != 0) throw std::logic_error("kernel " + std::to_string(k) + " is no matrix multiply");
  if (algo) {
    algorithms_[k] = *algo;
    how[k] = "cuBLASLt: " + algo->text;
  } else {
    algorithms_.erase(k);
    how[k] = "cuBLAS";
  }
}

void CudaExecutable::run_step_alone(size_t k) {
  if (arg_ptrs_.empty()) throw std::logic_error("the inputs are not bound yet (run or benchmark first)");
  step(k);
  try {
    d_.synchronize();
  } catch (const std::exception& e) {
    throw std::runtime_error("kernel " + g_.source.kernels[k].name + " failed on the GPU: " + e.what());
  }
}

double CudaExecutable::time_step_alone(size_t k, const TimingOptions& o) {
  return median_between_events([&] { step(k); }, o);
}

void CudaExecutable::device_extern(size_t k) {
  const ExternCall& c = externs_[k]->ext;
  auto ptr = [&](size_t arg) { return buffers_.at(c.inputs.at(static_cast<size_t>(c.args.at(arg).node))).ptr(); };
  if (c.op == &op::cat()) {
    const Shape& ys = p_.buffer(c.outputs[0]).shape;
    int64_t dim = c.args[1].i;
    if (dim < 0) dim += static_cast<int64_t>(ys.size());
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= ys[d];
    for (int64_t d = dim + 1; d < static_cast<int64_t>(ys.size()); ++d) inner *= ys[d];
    long long dst_row = ys[dim] * inner, at = 0;
    DevicePtr y = buffers_.at(c.outputs[0]).ptr();
    for (const Arg& a : c.args[0].list) {
      const LoopBuffer& b = p_.buffer(c.inputs.at(static_cast<size_t>(a.node)));
      long long rows = outer, src_row = numel_of(b.shape) / std::max<int64_t>(outer, 1);
      if (src_row == 0) continue;
      DevicePtr src = buffers_.at(b.name).ptr();
      void* params[] = {&y, &src, &rows, &src_row, &dst_row, &at};
      d_.launch(helpers_.at("ls_copy_rows"), grid_for(rows * src_row), 256, params, "ls_copy_rows");
      at += src_row;
    }
    return;
  }
  if (c.op == &op::convolution_backward()) return convolution_backward(k);
  if (c.op == &op::max_pool2d_with_indices()) {
    const Shape xs = seen_shape(p_, c, 0);
    const Shape& ys = c.output_metas.at(0).shape;
    const std::vector<int64_t> ks = pair_of(c.args[1], 1), st = pair_of(c.args[2], 0), pad = pair_of(c.args[3], 0), dil = pair_of(c.args[4], 1);
    long long planes = xs[0] * xs[1];
    int H = static_cast<int>(xs[2]), W = static_cast<int>(xs[3]), OH = static_cast<int>(ys[2]), OW = static_cast<int>(ys[3]);
    int KH = static_cast<int>(ks[0]), KW = static_cast<int>(ks[1]);
    int sh = static_cast<int>(st[0] ? st[0] : ks[0]), sw = static_cast<int>(st[1] ? st[1] : ks[1]);
    int ph = static_cast<int>(pad[0]), pw = static_cast<int>(pad[1]), dh = static_cast<int>(dil[0]), dw = static_cast<int>(dil[1]);
    DevicePtr x = ptr(0), y = buffers_.at(c.outputs.at(0)).ptr();
    DevicePtr idx = c.outputs.size() > 1 ? buffers_.at(c.outputs[1]).ptr() : 0;
    if (!idx) {  // the indices are not wanted: somewhere to write them all the same
      DeviceBuffer& spare = cols_[k];
      if (spare.bytes() < static_cast<size_t>(planes * OH * OW * 8)) spare = DeviceBuffer(d_, static_cast<size_t>(planes * OH * OW * 8));
      idx = spare.ptr();
    }
    void* params[] = {&x, &y, &idx, &planes, &H, &W, &OH, &OW, &KH, &KW, &sh, &sw, &ph, &pw, &dh, &dw};
    d_.launch(helpers_.at("ls_max_pool2d"), grid_for(planes * OH * OW), 256, params, "ls_max_pool2d");
    return;
  }
  // Convolution (2-D, not transposed).
  const Shape xs = seen_shape(p_, c, 0);
  const Shape ws = seen_shape(p_, c, 1);
  const Shape& ys = c.output_metas.at(0).shape;
  const std::vector<int64_t> st = pair_of(c.args[3], 1), pad = pair_of(c.args[4], 0), dil = pair_of(c.args[5], 1);
  int N = static_cast<int>(xs[0]), C = static_cast<int>(xs[1]), H = static_cast<int>(xs[2]), W = static_cast<int>(xs[3]);
  int KH = static_cast<int>(ws[2]), KW = static_cast<int>(ws[3]), OH = static_cast<int>(ys[2]), OW = static_cast<int>(ys[3]);
  int sh = static_cast<int>(st[0]), sw = static_cast<int>(st[1]), ph = static_cast<int>(pad[0]), pw = static_cast<int>(pad[1]);
  int dh = static_cast<int>(dil[0]), dw = static_cast<int>(dil[1]);
  const int64_t O = ws[0], G = c.args[8].i, CG = ws[1], OG = O / G, P = int64_t(OH) * OW, R = CG * KH * KW;
  DevicePtr x = ptr(0), w = ptr(1), y = buffers_.at(c.outputs.at(0)).ptr();
  if (how[k] == "depthwise kernel") {
    void* params[] = {&x, &w, &y, &N, &C, &H, &W, &KH, &KW, &OH, &OW, &sh, &sw, &ph, &pw, &dh, &dw};
    d_.launch(helpers_.at("ls_depthwise_conv"), grid_for(int64_t(N) * C * P), 256, params, "ls_depthwise_conv");
  } else if (how[k] == "cuBLAS (a linear layer)") {  // y [N, O] = x [N, R] @ w [O, R]^T (+ bias)
    if (c.args[2].is_node() && blas_->gemm_bias(N, O, R, 1.f, x, false, w, true, ptr(2), y)) return;
    blas_->sgemm(1, N, O, R, 1.f, x, false, 0, w, true, 0, 0.f, y, 0);
  } else if (how[k] == "cuBLAS (1x1: no im2col)") {  // y[n, g] = W_g [OG, CG] @ x[n, g] [CG, P]
    for (int64_t g = 0; g < G; ++g)
      blas_->sgemm(N, OG, P, CG, 1.f, w + static_cast<DevicePtr>(g * OG * CG * 4), false, 0, x + static_cast<DevicePtr>(g * CG * P * 4),
                   false, int64_t(C) * P, 0.f, y + static_cast<DevicePtr>(g * OG * P * 4), O * P);
  } else {
    DeviceBuffer& cols = cols_[k];
    const size_t need = static_cast<size_t>(N * R * P * 4);
    if (cols.bytes() < need) cols = DeviceBuffer(d_, need);
    for (int64_t g = 0; g < G; ++g) {
      DevicePtr xg = x + static_cast<DevicePtr>(g * CG * H * W * 4), colp = cols.ptr();
      int cg = static_cast<int>(CG);
      long long x_image = int64_t(C) * H * W;
      void* params[] = {&xg, &colp, &N, &cg, &H, &W, &KH, &KW, &OH, &OW, &sh, &sw, &ph, &pw, &dh, &dw, &x_image};
      d_.launch(helpers_.at("ls_im2col"), grid_for(N * R * P), 256, params, "ls_im2col");
      // y[n, g*OG:(g+1)*OG, :] = W_g[OG, R] @ cols[n][R, P], for every image n.
      blas_->sgemm(N, OG, P, R, 1.f, w + static_cast<DevicePtr>(g * OG * R * 4), false, 0, cols.ptr(), false, R * P, 0.f,
                           y + static_cast<DevicePtr>(g * OG * P * 4), O * P);
    }
  }
  if (c.args[2].is_node()) {
    DevicePtr b = ptr(2);
    long long OO = O, PP = P, total = int64_t(N) * O * P;
    void* params[] = {&y, &b, &OO, &PP, &total};
    d_.launch(helpers_.at("ls_add_channel_bias"), (total + 255) / 256, 256, params, "ls_add_channel_bias");
  }
}

// The prelude's attention kernels, in the attention module (GeneratedCuda::attention_source):
// fused (LS_ATTENTION) or, for long sequences, tiled (LS_FLASH_ATTENTION); operands read in place
// through their strides.
void CudaExecutable::attention_extern(size_t k) {
  const ExternCall& c = externs_[k]->ext;
  const bool bwd = is_attention_backward(c.op);
  auto input = [&](size_t arg) { return static_cast<size_t>(c.args.at(arg).node); };
  const AttnGeom g = attn_geom(c);
  struct View {
    long long sb, sh, sl, se;
  };
  // A device pointer at the operand's offset, and its strides.
  auto operand = [&](size_t arg, DevicePtr& ptr, View& v) {
    const size_t i = input(arg);
    const AttnOperand o = attn_operand(c, i, c.shapes.at(i));
    ptr = buffers_.at(c.inputs.at(i)).ptr() + static_cast<DevicePtr>(o.offset * 4);
    v = {o.sb, o.sh, o.sl, o.se};
  };
  const std::string d = std::to_string(g.E);
  long long H = g.H, L = g.L, S = g.S;
  float scale = static_cast<float>(g.scale);
  int causal = g.causal ? 1 : 0;
  const int64_t bh = g.B * g.H, q_tiles = (g.L + 63) / 64, k_tiles = (g.S + 63) / 64;
  if (!bwd) {
    DevicePtr q, kk, v, o = buffers_.at(c.outputs.at(0)).ptr(), lse = buffers_.at(c.outputs.at(1)).ptr();
    View qs, ks, vs;
    operand(0, q, qs);
    operand(1, kk, ks);
    operand(2, v, vs);
    const AttnOperand ov = attn_output(g, attention_output_heads_inner(c));
    View os{ov.sb, ov.sh, ov.sl, ov.se};
    void* params[] = {&q, &kk, &v, &o, &lse, &qs, &ks, &vs, &os, &H, &L, &S, &scale, &causal};
    if (how[k] == "flash attention kernel")
      return d_.launch(helpers_.at("ls_flash_attention_fwd_" + d), bh * q_tiles, 256, params, "ls_flash_attention_fwd");
    return d_.launch(helpers_.at("ls_attention_fwd_" + d), bh * q_tiles, 64, params, "ls_attention_fwd");
  }
  DevicePtr go, q, kk, v, o;
  View gs, qs, ks, vs, os;
  operand(0, go, gs);
  operand(1, q, qs);
  operand(2, kk, ks);
  operand(3, v, vs);
  operand(5, o, os);
  DevicePtr lse = buffers_.at(c.inputs.at(input(6))).ptr(), dq = buffers_.at(c.outputs.at(0)).ptr(), dk = buffers_.at(c.outputs.at(1)).ptr(),
            dv = buffers_.at(c.outputs.at(2)).ptr();
  DeviceBuffer& rows = cols_[k];  // D_i = dO_i . O_i, from the dq kernel to the dk/dv kernel
  if (rows.bytes() < static_cast<size_t>(bh * g.L * 4)) rows = DeviceBuffer(d_, static_cast<size_t>(bh * g.L * 4));
  DevicePtr drow = rows.ptr();
  void* p1[] = {&go, &q, &kk, &v, &o, &lse, &dq, &drow, &gs, &qs, &ks, &vs, &os, &H, &L, &S, &scale, &causal};
  void* p2[] = {&go, &q, &kk, &v, &lse, &drow, &dk, &dv, &gs, &qs, &ks, &vs, &H, &L, &S, &scale, &causal};
  if (how[k] == "flash attention kernel") {  // dynamic shared memory: the tiles (cuda_helpers.h)
    const unsigned tile = static_cast<unsigned>(g.E) * 64 * 4, wide = static_cast<unsigned>(std::max<int64_t>(g.E, 64)) * 64 * 4;
    d_.launch(helpers_.at("ls_flash_attention_bwd_dq_" + d), bh * q_tiles, 256, p1, "ls_flash_attention_bwd_dq", 4 * tile + wide + 512);
    d_.launch(helpers_.at("ls_flash_attention_bwd_dkv_" + d), bh * k_tiles, 256, p2, "ls_flash_attention_bwd_dkv", 4 * tile + 2 * wide + 512);
    return;
  }
  d_.launch(helpers_.at("ls_attention_bwd_dq_" + d), bh * q_tiles, 64, p1, "ls_attention_bwd_dq");
  d_.launch(helpers_.at("ls_attention_bwd_dkv_" + d), bh * k_tiles, 64, p2, "ls_attention_bwd_dkv");
}

// Attention for long sequences through cuBLAS: operands packed per (batch, head), the scores and
// probabilities in scratch memory, batched products; the output unpacked heads-inner.
void CudaExecutable::attention_cublas(size_t k) {
  const ExternCall& c = externs_[k]->ext;
  const bool bwd = is_attention_backward(c.op);
  auto input = [&](size_t arg) { return static_cast<size_t>(c.args.at(arg).node); };
  const AttnGeom g = attn_geom(c);
  const int64_t BH = g.B * g.H;
  std::vector<DeviceBuffer>& ws = attn_ws_[k];
  auto scratch = [&](size_t i, int64_t floats) {
    if (ws.size() <= i) ws.resize(i + 1);
    if (ws[i].bytes() < static_cast<size_t>(floats * 4)) ws[i] = DeviceBuffer(d_, static_cast<size_t>(floats * 4));
    return ws[i].ptr();
  };
  auto copy4 = [&](DevicePtr dst, DevicePtr src, const AttnOperand& s, const AttnOperand& d, int64_t rows, int64_t cols) {
    long long n0 = g.B, n1 = g.H, n2 = rows, n3 = cols;
    long long s0 = s.sb, s1 = s.sh, s2 = s.sl, s3 = s.se, d0 = d.sb, d1 = d.sh, d2 = d.sl, d3 = d.se;
    void* params[] = {&dst, &src, &n0, &n1, &n2, &n3, &s0, &s1, &s2, &s3, &d0, &d1, &d2, &d3};
    d_.launch(helpers_.at("ls_strided_copy4"), grid_for(g.B * g.H * rows * cols), 256, params, "ls_strided_copy4");
  };
  auto packed = [&](int64_t rows, int64_t cols) {
    AttnOperand o;
    o.sb = g.H * rows * cols;
    o.sh = rows * cols;
    o.sl = cols;
    return o;
  };
  // Packs operand `arg` (rows x cols per head) into scratch slot `slot`.
  auto pack = [&](size_t arg, size_t slot, int64_t rows, int64_t cols) {
    const size_t i = input(arg);
    const AttnOperand o = attn_operand(c, i, c.shapes.at(i));
    const DevicePtr dst = scratch(slot, BH * rows * cols);
    copy4(dst, buffers_.at(c.inputs.at(i)).ptr() + static_cast<DevicePtr>(o.offset * 4), o, packed(rows, cols), rows, cols);
    return dst;
  };
  Cublas& blas = *blas_;
  const float scale = static_cast<float>(g.scale);
  long long L = g.L, S = g.S;
  int causal = g.causal ? 1 : 0;
  if (!bwd) {
    const DevicePtr q = pack(0, 0, g.L, g.E), kk = pack(1, 1, g.S, g.E), v = pack(2, 2, g.S, g.Ev);
    const DevicePtr sc = scratch(3, BH * g.L * g.S), op = scratch(4, BH * g.L * g.Ev);
    DevicePtr scp = sc, lse = buffers_.at(c.outputs.at(1)).ptr();
    blas.sgemm(BH, g.L, g.S, g.E, scale, q, false, g.L * g.E, kk, true, g.S * g.E, 0.f, sc, g.L * g.S);
    long long rows = BH * g.L;
    void* sp[] = {&scp, &lse, &rows, &L, &S, &causal};
    d_.launch(helpers_.at("ls_attn_softmax"), (rows + 7) / 8, 256, sp, "ls_attn_softmax");
    blas.sgemm(BH, g.L, g.Ev, g.S, 1.f, sc, false, g.L * g.S, v, false, g.S * g.Ev, 0.f, op, g.L * g.Ev);
    copy4(buffers_.at(c.outputs.at(0)).ptr(), op, packed(g.L, g.Ev), attn_output(g, attention_output_heads_inner(c)), g.L, g.Ev);
    return;
  }
  const DevicePtr go = pack(0, 0, g.L, g.Ev), q = pack(1, 1, g.L, g.E), kk = pack(2, 2, g.S, g.E), v = pack(3, 3, g.S, g.Ev),
                  o = pack(5, 4, g.L, g.Ev);
  const DevicePtr p = scratch(5, BH * g.L * g.S), dp = scratch(6, BH * g.L * g.S), drow = scratch(7, BH * g.L);
  DevicePtr pp = p, dpp = dp, dr = drow, gop = go, opp = o, lse = buffers_.at(c.inputs.at(input(6))).ptr();
  const DevicePtr dq = buffers_.at(c.outputs.at(0)).ptr(), dk = buffers_.at(c.outputs.at(1)).ptr(), dv = buffers_.at(c.outputs.at(2)).ptr();
  blas.sgemm(BH, g.L, g.S, g.E, scale, q, false, g.L * g.E, kk, true, g.S * g.E, 0.f, p, g.L * g.S);
  long long total = BH * g.L * g.S, rows = BH * g.L, n = g.Ev;
  void* pr[] = {&pp, &lse, &L, &S, &total, &causal};
  d_.launch(helpers_.at("ls_attn_probs"), grid_for(total), 256, pr, "ls_attn_probs");
  void* rd[] = {&dr, &gop, &opp, &rows, &n};
  d_.launch(helpers_.at("ls_attn_rowdot"), grid_for(rows), 256, rd, "ls_attn_rowdot");
  blas.sgemm(BH, g.S, g.Ev, g.L, 1.f, p, true, g.L * g.S, go, false, g.L * g.Ev, 0.f, dv, g.S * g.Ev);      // dV = P^T dO
  blas.sgemm(BH, g.L, g.S, g.Ev, 1.f, go, false, g.L * g.Ev, v, true, g.S * g.Ev, 0.f, dp, g.L * g.S);     // dP = dO V^T
  float sc = scale;
  void* ds[] = {&dpp, &pp, &dr, &S, &total, &sc};
  d_.launch(helpers_.at("ls_attn_dscores"), grid_for(total), 256, ds, "ls_attn_dscores");                  // dS
  blas.sgemm(BH, g.L, g.E, g.S, 1.f, dp, false, g.L * g.S, kk, false, g.S * g.E, 0.f, dq, g.L * g.E);      // dQ = dS K
  blas.sgemm(BH, g.S, g.E, g.L, 1.f, dp, true, g.L * g.S, q, false, g.L * g.E, 0.f, dk, g.S * g.E);        // dK = dS^T Q
}

// convolution_backward(grad_y, x, w, ...): grad_b is the per-channel sum of grad_y. A depthwise
// convolution's grad_x and grad_w come from two kernels of their own; any other goes per group
// through the same columns as the forward: grad_w[g] = sum over images of grad_y[n, g] (OG x P)
// @ cols[n]^T, grad_cols[n] = w[g]^T @ grad_y[n, g] (one batched product), then col2im.
void CudaExecutable::convolution_backward(size_t k) {
  const ExternCall& c = externs_[k]->ext;
  const Shape gys = seen_shape(p_, c, 0), xs = seen_shape(p_, c, 1), ws = seen_shape(p_, c, 2);
  const std::vector<int64_t> st = pair_of(c.args[4], 1), pad = pair_of(c.args[5], 0), dil = pair_of(c.args[6], 1);
  const auto mask = c.args[10].list;
  auto wanted = [&](size_t i) { return i >= mask.size() || mask[i].b; };
  int N = static_cast<int>(xs[0]), C = static_cast<int>(xs[1]), H = static_cast<int>(xs[2]), W = static_cast<int>(xs[3]);
  int KH = static_cast<int>(ws[2]), KW = static_cast<int>(ws[3]), OH = static_cast<int>(gys[2]), OW = static_cast<int>(gys[3]);
  int sh = static_cast<int>(st[0]), sw = static_cast<int>(st[1]), ph = static_cast<int>(pad[0]), pw = static_cast<int>(pad[1]);
  int dh = static_cast<int>(dil[0]), dw = static_cast<int>(dil[1]);
  const int64_t O = ws[0], G = c.args[9].i, CG = ws[1], OG = O / G, P = int64_t(OH) * OW, R = CG * KH * KW;
  auto in = [&](size_t arg) { return buffers_.at(c.inputs.at(static_cast<size_t>(c.args.at(arg).node))).ptr(); };
  auto out = [&](size_t i) { return buffers_.at(c.outputs.at(i)).ptr(); };
  const DevicePtr gy = in(0), x = in(1), w = in(2);
  if (how[k] == "depthwise backward kernels") {
    DevicePtr a = gy, b = w, result = 0;
    void* params[] = {&a, &b, &result, &N, &C, &H, &W, &KH, &KW, &OH, &OW, &sh, &sw, &ph, &pw, &dh, &dw};
    if (wanted(0)) {
      result = out(0);
      d_.launch(helpers_.at("ls_depthwise_conv_bwd_input"), grid_for(int64_t(N) * C * H * W), 256, params, "ls_depthwise_conv_bwd_input");
    }
    if (wanted(1)) {
      b = x;
      result = out(1);
      d_.launch(helpers_.at("ls_depthwise_conv_bwd_weight"), int64_t(C) * KH * KW, 256, params, "ls_depthwise_conv_bwd_weight");
    }
  } else if (how[k] == "cuBLAS (a linear layer's backward)") {
    if (wanted(0)) blas_->sgemm(1, N, R, O, 1.f, gy, false, 0, w, false, 0, 0.f, out(0), 0);  // grad_x [N, R] = grad_y @ w
    if (wanted(1)) blas_->sgemm(1, O, R, N, 1.f, gy, true, 0, x, false, 0, 0.f, out(1), 0);   // grad_w [O, R] = grad_y^T @ x
  } else if (how[k] == "cuBLAS (1x1: no im2col or col2im)") {
    const int64_t image = int64_t(C) * H * W;
    for (int64_t g = 0; g < G; ++g) {
      const DevicePtr gyg = gy + static_cast<DevicePtr>(g * OG * P * 4);
      if (wanted(1)) {  // grad_w[g] = sum over images of grad_y[n, g] (OG x P) @ x[n, g]^T
        const DevicePtr gw = out(1) + static_cast<DevicePtr>(g * OG * CG * 4);
        for (int n = 0; n < N; ++n)
          blas_->sgemm(1, OG, CG, P, 1.f, gyg + static_cast<DevicePtr>(int64_t(n) * O * P * 4), false, 0,
                       x + static_cast<DevicePtr>((n * image + g * CG * P) * 4), true, 0, n ? 1.f : 0.f, gw, 0);
      }
      if (wanted(0))  // grad_x[n, g] = w[g]^T (CG x OG) @ grad_y[n, g], every image in one batched product
        blas_->sgemm(N, CG, P, OG, 1.f, w + static_cast<DevicePtr>(g * OG * CG * 4), true, 0, gyg, false, O * P, 0.f,
                     out(0) + static_cast<DevicePtr>(g * CG * P * 4), image);
    }
  } else {
    DeviceBuffer& cols = cols_[k];
    const size_t need = static_cast<size_t>(N * R * P * 4);
    if (cols.bytes() < need) cols = DeviceBuffer(d_, need);
    for (int64_t g = 0; g < G; ++g) {
      int cg = static_cast<int>(CG);
      long long x_image = int64_t(C) * H * W;
      const DevicePtr gyg = gy + static_cast<DevicePtr>(g * OG * P * 4);
      if (wanted(1)) {
        DevicePtr xg = x + static_cast<DevicePtr>(g * CG * H * W * 4), colp = cols.ptr();
        void* params[] = {&xg, &colp, &N, &cg, &H, &W, &KH, &KW, &OH, &OW, &sh, &sw, &ph, &pw, &dh, &dw, &x_image};
        d_.launch(helpers_.at("ls_im2col"), grid_for(N * R * P), 256, params, "ls_im2col");
        const DevicePtr gw = out(1) + static_cast<DevicePtr>(g * OG * R * 4);
        for (int n = 0; n < N; ++n)  // accumulate over images: one product each
          blas_->sgemm(1, OG, R, P, 1.f, gyg + static_cast<DevicePtr>(int64_t(n) * O * P * 4), false, 0,
                       cols.ptr() + static_cast<DevicePtr>(int64_t(n) * R * P * 4), true, 0, n ? 1.f : 0.f, gw, 0);
      }
      if (wanted(0)) {
        blas_->sgemm(N, R, P, OG, 1.f, w + static_cast<DevicePtr>(g * OG * R * 4), true, 0, gyg, false, O * P, 0.f, cols.ptr(), R * P);
        DevicePtr colp = cols.ptr(), gx = out(0) + static_cast<DevicePtr>(g * CG * H * W * 4);
        void* params[] = {&colp, &gx, &N, &cg, &H, &W, &KH, &KW, &OH, &OW, &sh, &sw, &ph, &pw, &dh, &dw, &x_image};
        d_.launch(helpers_.at("ls_col2im"), grid_for(int64_t(N) * CG * H * W), 256, params, "ls_col2im");
      }
    }
  }
  if (wanted(2) && c.outputs.size() > 2 && p_.buffer(c.outputs[2]).bytes() > 0) {
    DevicePtr gb = out(2), gyp = gy;
    long long OO = O, PP = P;
    void* params[] = {&gyp, &gb, &N, &OO, &PP};
    d_.launch(helpers_.at("ls_channel_sum"), O, 256, params, "ls_channel_sum");
  }
}

void CudaExecutable::host_extern(size_t k) {
  const ExternCall& c = externs_[k]->ext;
  auto download = [&](const std::string& name) {
    const LoopBuffer& b = p_.buffer(name);
    Tensor t(b.dtype, b.shape);
    if (t.nbytes()) d_.download(t.data(), buffers_.at(name).ptr(), static_cast<size_t>(t.nbytes()));
    return t;
  };
  const RefInputs in = extern_inputs(c, download);
  std::vector<Tensor> outs;
  for (const auto& o : c.outputs) outs.emplace_back(p_.buffer(o).dtype, p_.buffer(o).shape);
  run_extern(c, in, outs);
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i].nbytes()) d_.upload(buffers_.at(c.outputs[i]).ptr(), outs[i].data(), static_cast<size_t>(outs[i].nbytes()));
}

std::vector<Tensor> CudaExecutable::run(const std::vector<Tensor>& inputs) {
  run_bound(inputs);
  return download_outputs();
}

void CudaExecutable::run_bound(const std::vector<Tensor>& inputs) {
  bind(inputs);
  for (size_t k = 0; k < functions_.size(); ++k) {
    step(k);
    try {
      d_.synchronize();
    } catch (const std::exception& e) {
      throw std::runtime_error("kernel " + g_.source.kernels[k].name + " failed on the GPU: " + e.what());
    }
  }
}

// Kernel k's arguments for another version of it: its buffers, the version's scratch, the sizes.
struct CudaExecutable::AloneArgs {
  std::vector<DevicePtr> values;
  std::vector<void*> ptrs;
  std::unique_ptr<DeviceBuffer> scratch;
};

void CudaExecutable::alone_args(size_t k, const CudaLaunch& l, AloneArgs& a) { args_of(g_.source.kernels.at(k).args, l, a); }

void CudaExecutable::args_of(const std::vector<std::string>& buffers, const CudaLaunch& l, AloneArgs& a) {
  if (arg_ptrs_.empty()) throw std::logic_error("the inputs are not bound yet (run or benchmark first)");
  for (const auto& b : buffers) a.values.push_back(buffers_.at(b).ptr());
  if (l.scratch_bytes) {
    a.scratch = std::make_unique<DeviceBuffer>(d_, static_cast<size_t>(l.scratch_bytes));
    d_.zero(a.scratch->ptr(), static_cast<size_t>(l.scratch_bytes));
    a.values.push_back(a.scratch->ptr());
  }
  for (DevicePtr& x : a.values) a.ptrs.push_back(&x);
  for (long long& x : sizes_) a.ptrs.push_back(&x);
}

void CudaExecutable::run_alone(size_t k, void* f, const CudaLaunch& l) {
  AloneArgs a;
  alone_args(k, l, a);
  d_.launch(f, l.grid, l.block, a.ptrs.data(), g_.source.kernels[k].name.c_str());
  try {
    d_.synchronize();
  } catch (const std::exception& e) {
    throw std::runtime_error("kernel " + g_.source.kernels[k].name + " failed on the GPU: " + e.what());
  }
}

double CudaExecutable::time_alone(size_t k, void* f, const CudaLaunch& l, const TimingOptions& o) {
  AloneArgs a;
  alone_args(k, l, a);
  const char* name = g_.source.kernels[k].name.c_str();
  return median_between_events([&] { d_.launch(f, l.grid, l.block, a.ptrs.data(), name); }, o);
}

void CudaExecutable::run_function(void* f, const CudaLaunch& l, const std::vector<std::string>& buffers, const std::string& name) {
  AloneArgs a;
  args_of(buffers, l, a);
  d_.launch(f, l.grid, l.block, a.ptrs.data(), name.c_str());
  try {
    d_.synchronize();
  } catch (const std::exception& e) {
    throw std::runtime_error(name + " failed on the GPU: " + e.what());
  }
}

double CudaExecutable::time_function(void* f, const CudaLaunch& l, const std::vector<std::string>& buffers, const std::string& name,
                                     const TimingOptions& o) {
  AloneArgs a;
  args_of(buffers, l, a);
  return median_between_events([&] { d_.launch(f, l.grid, l.block, a.ptrs.data(), name.c_str()); }, o);
}

double CudaExecutable::median_between_events(const std::function<void()>& launch, const TimingOptions& o) {
  for (int w = 0; w < o.warmup; ++w) launch();
  void* e0 = d_.event();
  void* e1 = d_.event();
  std::vector<double> times;
  const auto start = std::chrono::steady_clock::now();
  auto spent = [&] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(); };
  for (int run = 0; run < o.max_runs && (run < o.min_runs || spent() < o.budget_ms); ++run) {
    d_.record(e0);
    launch();
    d_.record(e1);
    times.push_back(d_.elapsed_ms(e0, e1));
  }
  d_.destroy_event(e0);
  d_.destroy_event(e1);
  return median_of(times);
}

long long CudaExecutable::mismatches(const std::string& buffer, DevicePtr expected, double rms, Tolerance tol) {
  const LoopBuffer& b = p_.buffer(buffer);
  if (b.dtype != DType::f32) throw std::invalid_argument("mismatches: " + buffer + " is not float32");
  DeviceBuffer count(d_, 4);
  d_.zero(count.ptr(), 4);
  DevicePtr a = buffers_.at(buffer).ptr(), e = expected, c = count.ptr();
  long long n = numel_of(b.shape);
  void* params[] = {&a, &e, &n, &tol.atol, &tol.rtol, &rms, &c};
  d_.launch(helpers_.at("ls_count_mismatches"), grid_for(n), 256, params, "ls_count_mismatches");
  unsigned got = 0;
  d_.synchronize();
  d_.download(&got, c, 4);
  return got;
}

double CudaExecutable::rms(const std::string& buffer) {
  const LoopBuffer& b = p_.buffer(buffer);
  if (b.dtype != DType::f32) throw std::invalid_argument("rms: " + buffer + " is not float32");
  DeviceBuffer acc(d_, 16);
  d_.zero(acc.ptr(), 16);
  DevicePtr a = buffers_.at(buffer).ptr(), sum = acc.ptr(), finite = acc.ptr() + 8;
  long long n = numel_of(b.shape);
  void* params[] = {&a, &n, &sum, &finite};
  d_.launch(helpers_.at("ls_square_sum"), grid_for(n), 256, params, "ls_square_sum");
  struct {
    double sum;
    unsigned long long finite;
  } got{};
  d_.synchronize();
  d_.download(&got, acc.ptr(), 16);
  return got.finite ? std::sqrt(got.sum / static_cast<double>(got.finite)) : 0.0;
}

Tensor CudaExecutable::download(const std::string& buffer) {
  const LoopBuffer& b = p_.buffer(buffer);
  Tensor t(b.dtype, b.shape);
  if (t.nbytes()) d_.download(t.data(), buffers_.at(buffer).ptr(), static_cast<size_t>(t.nbytes()));
  return t;
}

std::vector<Tensor> CudaExecutable::download_outputs() {
  std::vector<Tensor> outs;
  for (const auto& o : p_.outputs) {
    if (o.empty()) {
      outs.emplace_back();
      continue;
    }
    const LoopBuffer& b = p_.buffer(o);
    Tensor t(b.dtype, b.shape);
    if (t.nbytes()) d_.download(t.data(), buffers_.at(o).ptr(), static_cast<size_t>(t.nbytes()));
    outs.push_back(t);
  }
  return outs;
}

std::string CudaExecutable::capture_graph() {
  graph_.reset();
  if (arg_ptrs_.empty() && !functions_.empty()) return "the inputs are not bound yet (run or benchmark first)";
  for (size_t k = 0; k < how.size(); ++k)
    if (how[k] == "host (reference kernel)")
      return "kernel " + g_.source.kernels[k].name + " runs on the host (reference kernel), which a graph cannot hold";
  if (const std::string why = d_.graphs_unsupported(); !why.empty()) return why;
  d_.synchronize();
  try {
    graph_ = std::make_unique<CudaGraph>(d_, [this] {
      for (size_t k = 0; k < functions_.size(); ++k) step(k);
    });
  } catch (const std::exception& e) {
    graph_.reset();
    return std::string("capture failed: ") + e.what();
  }
  return {};
}

size_t CudaExecutable::graph_nodes() const { return graph_ ? graph_->nodes() : 0; }

std::vector<Tensor> CudaExecutable::replay_graph() {
  if (!graph_) throw std::logic_error("no CUDA graph captured");
  graph_->replay();
  graph_->synchronize();
  return download_outputs();
}

Timings CudaExecutable::benchmark_graph(const TimingOptions& o) {
  if (!graph_) throw std::logic_error("no CUDA graph captured");
  for (int w = 0; w < o.warmup; ++w) graph_->replay();
  graph_->synchronize();
  void* a = d_.event();
  void* b = d_.event();
  std::vector<double> total;
  const auto start = std::chrono::steady_clock::now();
  auto spent = [&] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(); };
  for (int run = 0; run < o.max_runs && (run < o.min_runs || spent() < o.budget_ms / 2); ++run) {
    graph_->timed_replay(a, b);
    total.push_back(d_.elapsed_ms(a, b));
  }
  d_.destroy_event(a);
  d_.destroy_event(b);
  return timings_of({}, total);
}

Timings CudaExecutable::benchmark(const std::vector<Tensor>& inputs, const TimingOptions& o) {
  bind(inputs);
  return benchmark_bound(o);
}

Timings CudaExecutable::benchmark_bound(const TimingOptions& o) {
  if (arg_ptrs_.empty()) throw std::logic_error("the inputs are not bound yet (run or benchmark first)");
  const size_t n = functions_.size();
  for (int w = 0; w < o.warmup; ++w)
    for (size_t k = 0; k < n; ++k) step(k);
  d_.synchronize();
  std::vector<void*> ev(n + 1);
  for (auto& e : ev) e = d_.event();
  std::vector<std::vector<double>> per(n);
  std::vector<double> total, host;
  std::vector<std::vector<double>> host_per(n);
  // Per kernel: an event between every two kernels, all queued behind ls_hold while it waits
  // longer than the host takes to issue them (twice the last run's issue time), so each kernel
  // starts as the one before it ends: the device's time, as a profiler measures it.
  const auto start = std::chrono::steady_clock::now();
  auto spent = [&] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(); };
  long long hold_ns = 20000 + 20000 * static_cast<long long>(n);
  for (int run = 0; run < o.max_runs && (run < o.min_runs || spent() < o.budget_ms / 2); ++run) {
    void* hold_params[] = {&hold_ns};
    d_.launch(helpers_.at("ls_hold"), 1, 1, hold_params, "ls_hold");
    const auto issue = std::chrono::steady_clock::now();
    d_.record(ev[0]);
    for (size_t k = 0; k < n; ++k) {
      step(k);
      d_.record(ev[k + 1]);
    }
    const double issue_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - issue).count();
    for (size_t k = 0; k < n; ++k) per[k].push_back(d_.elapsed_ms(ev[k], ev[k + 1]));
    hold_ns = std::clamp<long long>(static_cast<long long>(2 * issue_ns) + 10000, 10000, 50000000);
  }
  // The whole model: back-to-back runs between two events, no events in between.
  const auto start2 = std::chrono::steady_clock::now();
  auto spent2 = [&] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start2).count(); };
  for (int run = 0; run < o.max_runs && (run < o.min_runs || spent2() < o.budget_ms / 2); ++run) {
    d_.record(ev[0]);
    const auto issue = std::chrono::steady_clock::now();
    auto before = issue;
    for (size_t k = 0; k < n; ++k) {
      step(k);
      const auto after = std::chrono::steady_clock::now();
      host_per[k].push_back(std::chrono::duration<double, std::milli>(after - before).count());
      before = after;
    }
    host.push_back(std::chrono::duration<double, std::milli>(before - issue).count());
    d_.record(ev[n]);
    total.push_back(d_.elapsed_ms(ev[0], ev[n]));
  }
  for (auto& e : ev) d_.destroy_event(e);
  Timings t = timings_of(per, total);
  std::sort(host.begin(), host.end());
  t.host_ms = host.empty() ? 0 : host[host.size() / 2];
  for (auto& h : host_per) t.host_kernel_ms.push_back(h.empty() ? 0 : median_of(h));
  return t;
}

}  // namespace ls
