#include "exec/cuda_executor.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "cuda/cublas.h"
#include "exec/extern_kernels.h"

namespace ls {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

bool is_matmul(const std::string& n) { return n == "aten.mm.default" || n == "aten.addmm.default" || n == "aten.bmm.default"; }

bool all_f32(const LoopProgram& p, const ExternCall& c) {
  for (const auto& b : c.inputs)
    if (p.buffer(b).dtype != DType::f32) return false;
  for (const auto& b : c.outputs)
    if (p.buffer(b).dtype != DType::f32) return false;
  return true;
}

bool transposed(const ExternCall& c, size_t arg) {
  const Arg& a = c.args.at(arg);
  return a.is_node() && static_cast<size_t>(a.node) < c.transposed.size() && c.transposed[a.node];
}

}  // namespace

CudaExecutable::CudaExecutable(const LoopProgram& p, const Schedule& s, const GeneratedCuda& g, CudaDriver& d, CudaModule& m)
    : p_(p), g_(g), d_(d) {
  std::string why;
  Cublas* blas = Cublas::get(&why);
  for (size_t i = 0; i < g.source.kernels.size(); ++i) {
    if (s.kernels.at(i).is_extern) {
      const LoopNode* n = &p.nodes.at(s.kernels[i].nodes.at(0));
      functions_.push_back(nullptr);
      externs_.push_back(n);
      registers.push_back(0);
      how.push_back(blas && is_matmul(n->ext.op->name) && all_f32(p, n->ext) ? "cuBLAS" : "host (reference kernel)");
    } else {
      void* f = m.function(g.source.kernels[i].launcher);
      functions_.push_back(f);
      externs_.push_back(nullptr);
      registers.push_back(d.registers(f));
      how.push_back("generated");
    }
  }
  bias_kernel_ = m.function("ls_broadcast_bias");
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
  }
}

void CudaExecutable::step(size_t k) {
  if (functions_[k]) {
    const CudaLaunch& l = g_.launch[k];
    return d_.launch(functions_[k], l.grid, l.block, arg_ptrs_[k].data(), g_.source.kernels[k].name.c_str());
  }
  try {
    if (how[k] == "cuBLAS") cublas_extern(k);
    else host_extern(k);
  } catch (const std::exception& e) {
    throw std::runtime_error("extern kernel " + externs_[k]->ext.op->name + " (" + externs_[k]->graph_node + "): " + e.what());
  }
}

void CudaExecutable::cublas_extern(size_t k) {
  const ExternCall& c = externs_[k]->ext;
  auto operand = [&](size_t arg) {
    const size_t i = static_cast<size_t>(c.args.at(arg).node);
    return std::make_pair(buffers_.at(c.inputs.at(i)).ptr(), i < c.shapes.size() ? c.shapes[i] : p_.buffer(c.inputs[i]).shape);
  };
  const DevicePtr y = buffers_.at(c.outputs.at(0)).ptr();
  Cublas& blas = *Cublas::get();
  const std::string& n = c.op->name;
  if (n == "aten.bmm.default") {
    const auto [a, as] = operand(0);
    const auto [b, bs] = operand(1);
    const bool ta = transposed(c, 0), tb = transposed(c, 1);
    const int64_t B = as[0], M = as[ta ? 2 : 1], K = as[ta ? 1 : 2], N = bs[tb ? 1 : 2];
    return blas.sgemm(B, M, N, K, 1.f, a, ta, M * K, b, tb, K * N, 0.f, y, M * N);
  }
  const bool addmm = n == "aten.addmm.default";
  const size_t ia = addmm ? 1 : 0, ib = addmm ? 2 : 1;
  const auto [a, as] = operand(ia);
  const auto [b, bs] = operand(ib);
  const bool ta = transposed(c, ia), tb = transposed(c, ib);
  const int64_t M = as[ta ? 1 : 0], K = as[ta ? 0 : 1], N = bs[tb ? 0 : 1];
  float beta = 0.f, alpha = 1.f;
  if (addmm) {  // broadcast the bias into C, then C = alpha * A @ B + beta * C
    const auto [bias, bias_shape] = operand(0);
    long long MM = M, NN = N, row_stride = bias_shape.size() == 2 ? bias_shape[1] : 0;
    int per_row = bias_shape.size() == 2 && bias_shape[0] != 1, per_col = !bias_shape.empty() && bias_shape.back() != 1;
    DevicePtr yy = y, bb = bias;
    void* params[] = {&yy, &bb, &MM, &NN, &per_row, &per_col, &row_stride};
    d_.launch(bias_kernel_, (M * N + 255) / 256, 256, params, "ls_broadcast_bias");
    beta = static_cast<float>(c.args[3].number());
    alpha = static_cast<float>(c.args[4].number());
  }
  blas.sgemm(1, M, N, K, alpha, a, ta, 0, b, tb, 0, beta, y, 0);
}

void CudaExecutable::host_extern(size_t k) {
  const ExternCall& c = externs_[k]->ext;
  auto download = [&](const std::string& name, const Shape& seen) {
    const LoopBuffer& b = p_.buffer(name);
    Tensor t(b.dtype, b.shape);
    if (t.nbytes()) d_.download(t.data(), buffers_.at(name).ptr(), static_cast<size_t>(t.nbytes()));
    return seen != b.shape && numel_of(seen) == numel_of(b.shape) ? t.reshaped(seen) : t;
  };
  RefInputs in;
  in.t.resize(c.args.size());
  in.lists.resize(c.args.size());
  for (size_t i = 0; i < c.args.size(); ++i) {
    if (c.args[i].is_node()) {
      const size_t j = static_cast<size_t>(c.args[i].node);
      in.t[i] = download(c.inputs.at(j), j < c.shapes.size() ? c.shapes[j] : p_.buffer(c.inputs[j]).shape);
    }
    for (const Arg& x : c.args[i].list)
      if (x.is_node()) in.lists[i].push_back(download(c.inputs.at(x.node), p_.buffer(c.inputs.at(x.node)).shape));
  }
  std::vector<Tensor> outs;
  for (const auto& o : c.outputs) outs.emplace_back(p_.buffer(o).dtype, p_.buffer(o).shape);
  run_extern(c, in, outs);
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i].nbytes()) d_.upload(buffers_.at(c.outputs[i]).ptr(), outs[i].data(), static_cast<size_t>(outs[i].nbytes()));
}

std::vector<Tensor> CudaExecutable::run(const std::vector<Tensor>& inputs) {
  bind(inputs);
  for (size_t k = 0; k < functions_.size(); ++k) {
    step(k);
    try {
      d_.synchronize();
    } catch (const std::exception& e) {
      throw std::runtime_error("kernel " + g_.source.kernels[k].name + " failed on the GPU: " + e.what());
    }
  }
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

Timings CudaExecutable::benchmark(const std::vector<Tensor>& inputs, const TimingOptions& o) {
  bind(inputs);
  const size_t n = functions_.size();
  for (int w = 0; w < o.warmup; ++w)
    for (size_t k = 0; k < n; ++k) step(k);
  d_.synchronize();
  std::vector<void*> ev(n + 1);
  for (auto& e : ev) e = d_.event();
  std::vector<std::vector<double>> per(n);
  std::vector<double> total;
  // Per kernel: an event between every two kernels.
  const auto start = std::chrono::steady_clock::now();
  auto spent = [&] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(); };
  for (int run = 0; run < o.max_runs && (run < o.min_runs || spent() < o.budget_ms / 2); ++run) {
    d_.record(ev[0]);
    for (size_t k = 0; k < n; ++k) {
      step(k);
      d_.record(ev[k + 1]);
    }
    for (size_t k = 0; k < n; ++k) per[k].push_back(d_.elapsed_ms(ev[k], ev[k + 1]));
  }
  // The whole model: back-to-back runs between two events, no events in between.
  const auto start2 = std::chrono::steady_clock::now();
  auto spent2 = [&] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start2).count(); };
  for (int run = 0; run < o.max_runs && (run < o.min_runs || spent2() < o.budget_ms / 2); ++run) {
    d_.record(ev[0]);
    for (size_t k = 0; k < n; ++k) step(k);
    d_.record(ev[n]);
    total.push_back(d_.elapsed_ms(ev[0], ev[n]));
  }
  for (auto& e : ev) d_.destroy_event(e);
  Timings t;
  for (auto& v : per) t.kernel_ms.push_back(median(v));
  t.total_ms = median(total);
  t.runs = static_cast<int>(total.size());
  return t;
}

}  // namespace ls
