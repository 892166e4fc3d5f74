#include "exec/executor.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "exec/extern_kernels.h"
#include "loop/dependencies.h"

namespace ls {
double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Timings timings_of(const std::vector<std::vector<double>>& per_kernel, const std::vector<double>& total) {
  Timings t;
  for (const auto& v : per_kernel) t.kernel_ms.push_back(median_of(v));
  t.total_ms = median_of(total);
  t.runs = static_cast<int>(total.size());
  return t;
}

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }
}  // namespace

CpuExecutable::CpuExecutable(const LoopProgram& p, const Schedule& s, const GeneratedSource& src, LoadedCode& code,
                             std::vector<int64_t> sizes)
    : p_(p), sizes_(std::move(sizes)) {
  for (size_t i = 0; i < src.kernels.size(); ++i) {
    const GeneratedKernel& k = src.kernels[i];
    if (s.kernels.at(i).is_extern) {
      launchers_.push_back(nullptr);
      externs_.push_back(&p.nodes.at(s.kernels[i].nodes.at(0)));
      if (!k.launcher.empty()) {  // a matrix multiply written as a GEMM template
        auto f = reinterpret_cast<GemmTemplateFn>(code.symbol(k.launcher));
        if (!f) throw std::runtime_error("compiled code has no GEMM template '" + k.launcher + "'");
        templates_[i] = compiled_templates_[i] = f;
      }
    } else {
      auto f = reinterpret_cast<Launcher>(code.symbol(k.launcher));
      if (!f) throw std::runtime_error("compiled code has no kernel '" + k.launcher + "'");
      launchers_.push_back(f);
      externs_.push_back(nullptr);
    }
    RowsLauncher rows = nullptr;
    if (s.kernels[i].epilogue && !k.rows_launcher.empty() && (rows = reinterpret_cast<RowsLauncher>(code.symbol(k.rows_launcher))) == nullptr)
      throw std::runtime_error("compiled code has no kernel '" + k.rows_launcher + "'");
    rows_.push_back(rows);
    args_.push_back(k.args);
    kernel_names_.push_back(k.name);
  }
  done_.assign(launchers_.size(), false);
  inside_.assign(launchers_.size(), false);
  index_faults_ = static_cast<int64_t*>(code.symbol("ls_index_fault_state"));
  if (index_faults_) index_faults_[0] = 0;
}

std::string index_fault_message(const LoopProgram& p, const std::string& kernel, const int64_t fault[4]) {
  std::string where = "kernel " + kernel;
  if (fault[3] >= 0 && fault[3] < static_cast<int64_t>(p.nodes.size()))
    where += " (" + p.nodes[fault[3]].name + ", from node '" + p.nodes[fault[3]].graph_node + "')";
  return where + ": index " + std::to_string(fault[1]) + " is out of bounds for dimension with size " + std::to_string(fault[2]);
}

// A kernel that read an index tensor found an element out of range (generated code recorded it
// and read element 0 instead): the error, and the record cleared for the next run.
void CpuExecutable::check_index_faults(size_t k) {
  if (!index_faults_ || !index_faults_[0]) return;
  const int64_t fault[4] = {index_faults_[0], index_faults_[1], index_faults_[2], index_faults_[3]};
  index_faults_[0] = 0;
  throw std::out_of_range(index_fault_message(p_, kernel_names_.at(k), fault));
}

void CpuExecutable::step(size_t k) {
  if (progress_) {
    progress_[0].store(static_cast<int64_t>(k), std::memory_order_relaxed);
    progress_[1].store(++started_, std::memory_order_relaxed);
  }
  if (done_[k]) {  // it ran inside the matrix multiply before it
    done_[k] = false;
    return;
  }
  if (launchers_[k]) {
    launchers_[k](arg_ptrs_[k].data());
    return check_index_faults(k);
  }
  const ExternCall& c = externs_[k]->ext;
  const RefInputs& in = extern_in_[k];  // bound once per bind(): no lookups between kernels
  std::vector<Tensor>& outs = extern_out_[k];
  // The kernel after it, if it is this multiply's epilogue, runs on each block of rows as the
  // library finishes it (or after the whole, where the multiply is not split into rows).
  const bool epilogue = k + 1 < rows_.size() && rows_[k + 1];
  void** epilogue_args = epilogue ? arg_ptrs_[k + 1].data() : nullptr;
  const RowsLauncher rows = epilogue ? rows_[k + 1] : nullptr;
  if (const auto t = templates_.find(k); t != templates_.end()) {
    const GemmPointers g = gemm_pointers(c, in, outs);
    t->second(g.a, g.b, g.bias, g.c, rows, epilogue_args);
    if (epilogue) done_[k + 1] = inside_[k + 1] = true;
    return;
  }
  const RowEpilogue run_rows = [rows, epilogue_args](int64_t b, int64_t e) { rows(epilogue_args, b, e); };
  try {
    const auto cut = cuts_.find(k);
    const bool ran_epilogue = run_extern(c, in, outs, epilogue ? &run_rows : nullptr, cut == cuts_.end() ? nullptr : &cut->second);
    if (epilogue) done_[k + 1] = inside_[k + 1] = ran_epilogue;
  } catch (const std::exception& e) {
    throw std::runtime_error("extern kernel " + c.op->name + " (" + externs_[k]->graph_node + "): " + e.what());
  }
}

void CpuExecutable::bind(const std::vector<Tensor>& inputs) {
  if (inputs.size() != p_.inputs.size())
    throw std::invalid_argument("the model takes " + std::to_string(p_.inputs.size()) + " inputs, got " +
                                std::to_string(inputs.size()));
  // Intermediate buffers stay from the last run (a fresh 16 MB buffer costs its page faults on
  // every run); outputs are fresh, as the caller keeps them.
  for (const auto& o : p_.outputs) buffers_.erase(o);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const LoopBuffer& b = p_.buffer(p_.inputs[i]);
    if (inputs[i].shape() != b.shape || inputs[i].dtype() != b.dtype)
      throw std::invalid_argument("input '" + b.name + "' must be " + std::string(dtype_short(b.dtype)) + shape_str(b.shape));
    buffers_[b.name] = inputs[i];
  }
  arg_ptrs_.clear();
  extern_in_.assign(externs_.size(), {});
  extern_out_.assign(externs_.size(), {});
  for (const auto& args : args_) {
    std::vector<void*> ptrs;
    for (const auto& a : args) {
      auto it = buffers_.find(a);
      if (it == buffers_.end()) {
        const LoopBuffer& b = p_.buffer(a);
        it = buffers_.emplace(a, Tensor(b.dtype, b.shape)).first;
      }
      ptrs.push_back(it->second.data());
    }
    if (!sizes_.empty()) ptrs.push_back(sizes_.data());
    arg_ptrs_.push_back(std::move(ptrs));
  }
  // The library calls' operands and outputs, as the calls see them.
  auto buffer = [&](const std::string& name) -> Tensor& {
    auto it = buffers_.find(name);
    if (it == buffers_.end()) it = buffers_.emplace(name, Tensor(p_.buffer(name).dtype, p_.buffer(name).shape)).first;
    return it->second;
  };
  for (size_t k = 0; k < externs_.size(); ++k) {
    if (!externs_[k]) continue;
    const ExternCall& c = externs_[k]->ext;
    extern_in_[k] = extern_inputs(c, buffer);
    for (const auto& o : c.outputs) extern_out_[k].push_back(buffer(o));
  }
}

bool CpuExecutable::matmul_sizes(size_t k, int64_t& M, int64_t& N, int64_t& K) const {
  if (!externs_.at(k)) return false;
  if (extern_in_.empty()) throw std::logic_error("the inputs are not bound yet (run or benchmark first)");
  const ExternCall& c = externs_[k]->ext;
  const RefInputs& in = extern_in_[k];
  for (const Tensor& t : in.t)
    if (t.defined() && t.dtype() != DType::f32) return false;
  return ls::matmul_sizes(c, in, M, N, K);
}

bool CpuExecutable::gemm_problem(size_t k, GemmProblem& out) const {
  return externs_.at(k) && ls::gemm_problem(externs_[k]->ext, p_, out);
}

void CpuExecutable::choose_cut(size_t k, const GemmCut* cut) {
  cuts_.erase(k);
  templates_.erase(k);
  if (cut && cut->is_template()) {
    const auto t = compiled_templates_.find(k);
    if (t == compiled_templates_.end()) throw std::logic_error("kernel " + std::to_string(k) + " has no GEMM template in its source");
    templates_[k] = t->second;
  } else if (cut) {
    cuts_[k] = *cut;
  }
}

void CpuExecutable::choose_template(size_t k, GemmTemplateFn fn) {
  cuts_.erase(k);
  templates_[k] = fn;
}

void CpuExecutable::run_step_alone(size_t k) {
  if (extern_in_.empty()) throw std::logic_error("the inputs are not bound yet (run or benchmark first)");
  step(k);
  if (k + 1 < rows_.size() && rows_[k + 1]) {  // its epilogue, so that every cut is timed with it
    if (done_[k + 1]) done_[k + 1] = false;    // it ran inside, on the product's blocks
    else step(k + 1);                          // it runs after the whole product
  }
}

double CpuExecutable::time_step_alone(size_t k, const TimingOptions& o) {
  for (int w = 0; w < o.warmup; ++w) run_step_alone(k);
  std::vector<double> times;
  const auto start = Clock::now();
  for (int run = 0; run < o.max_runs && (run < o.min_runs || ms_since(start) < o.budget_ms); ++run) {
    const auto t0 = Clock::now();
    run_step_alone(k);
    times.push_back(ms_since(t0));
  }
  return median_of(times);
}

std::vector<Tensor> CpuExecutable::run(const std::vector<Tensor>& inputs) {
  bind(inputs);
  for (size_t k = 0; k < launchers_.size(); ++k) step(k);
  std::vector<Tensor> outs;
  for (const auto& o : p_.outputs) {
    if (!o.empty() && !buffers_.count(o)) buffers_.emplace(o, Tensor(p_.buffer(o).dtype, p_.buffer(o).shape));  // empty: no kernel wrote it
    outs.push_back(o.empty() ? Tensor() : buffers_.at(o));
  }
  return outs;
}

Timings CpuExecutable::benchmark(const std::vector<Tensor>& inputs, const TimingOptions& o) {
  bind(inputs);
  for (int w = 0; w < o.warmup; ++w)
    for (size_t k = 0; k < launchers_.size(); ++k) step(k);
  std::vector<std::vector<double>> per(launchers_.size());
  std::vector<double> total;
  const auto start = Clock::now();
  while (static_cast<int>(total.size()) < o.max_runs &&
         (static_cast<int>(total.size()) < o.min_runs || ms_since(start) < o.budget_ms)) {
    const auto t0 = Clock::now();
    for (size_t k = 0; k < launchers_.size(); ++k) {
      const auto tk = Clock::now();
      step(k);
      per[k].push_back(ms_since(tk));
    }
    total.push_back(ms_since(t0));
  }
  return timings_of(per, total);
}

}  // namespace ls
