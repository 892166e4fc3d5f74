#include "pipeline/run_record.h"

#include "passes/convert_dtype.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "autodiff/joint.h"
#include "interp/reference.h"
#include "passes/convert_dtype.h"

namespace ls {

std::string run_table(const CompileResult& r) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(4);
  const bool cuda = !r.cuda.launch.empty();
  size_t name_w = 48, how_w = 10;
  bool epilogues = false;
  for (const KernelReport& k : r.kernels) {
    name_w = std::max(name_w, k.name.size() + 2);
    how_w = std::max(how_w, (k.how.empty() ? std::string(kernel_kind_name(k.kind)) : k.how).size() + 2);
    epilogues = epilogues || k.how == "epilogue";
  }
  const int nw = static_cast<int>(name_w), hw = static_cast<int>(how_w);
  os << std::left << std::setw(nw) << "kernel" << std::setw(hw) << "how" << std::right << std::setw(8) << "ms" << std::setw(11)
     << "bytes" << std::setw(11) << "GB/s" << (cuda ? "  host us  regs  launch" : "") << "\n";
  for (const KernelReport& k : r.kernels) {
    os << std::left << std::setw(nw) << k.name << std::setw(hw) << (k.how.empty() ? std::string(kernel_kind_name(k.kind)) : k.how) << std::right << std::setw(8)
       << k.ms << std::setw(11) << k.bytes << std::setw(11) << std::setprecision(2) << k.gbps << std::setprecision(4);
    if (cuda) os << std::setw(9) << std::setprecision(1) << k.host_us << std::setprecision(4) << std::setw(6) << k.registers << "  " << k.launch;
    os << '\n';
  }
  if (epilogues)
    os << "epilogue: runs inside the matrix multiply before it, on each block of the product's rows right after the "
          "library computed it (its time is in the multiply's)\n";
  if (r.train) {
    os << "\nkernels per phase:";
    for (Phase p : {Phase::forward, Phase::backward, Phase::update}) {
      int k = 0, x = 0;
      for (const Kernel& kr : r.schedule.kernels)
        if (kr.phase == p) (kr.is_extern ? x : k) += 1;
      if (k + x) os << "  " << phase_name(p) << " " << k << "k/" << x << "x";
    }
    os << '\n';
  }
  os << "\nwhole model: " << r.run_ms << " ms (median)";
  if (r.host_ms > 0)
    os << "; the host launches a run in " << r.host_ms * 1000 << " us (" << r.host_ms * 1000 / std::max<size_t>(1, r.kernels.size())
       << " us a kernel)";
  os << "\ncompiled with " << r.compiler << "\n";
  if (!r.compile_log.empty()) os << "\ncompiler messages:\n" << r.compile_log;
  os << "\n";
  if (dtype_is_half(r.check.precision)) os << "tolerance: " << tolerance_text(r.check.precision) << '\n';
  os << std::scientific << std::setprecision(3);
  for (size_t i = 0; i < r.check.outputs.size(); ++i) {
    const auto& c = r.check.outputs[i];
    os << "output " << i << " vs " << c.against << ": max abs err " << c.cmp.max_abs_err << ", rel err " << c.cmp.rel_err
       << (c.cmp.ok ? "  OK" + (c.cmp.why.empty() ? "" : ": " + c.cmp.why) : "  FAILED: " + c.cmp.why) << '\n';
  }
  for (size_t i = 0; i < r.check.reference.size(); ++i) {
    const auto& c = r.check.reference[i];
    os << "output " << i << " vs " << c.against << ": max abs err " << c.cmp.max_abs_err << ", rel err " << c.cmp.rel_err
       << (c.cmp.ok ? "  OK" + (c.cmp.why.empty() ? "" : ": " + c.cmp.why) : "  FAILED: " + c.cmp.why) << '\n';
  }
  for (const auto& c : r.check.gradients)
    os << "gradient of " << c.input << " vs " << c.against << ": max abs err " << c.cmp.max_abs_err << ", rel err "
       << c.cmp.rel_err << (c.cmp.ok ? "  OK" + (c.cmp.why.empty() ? "" : ": " + c.cmp.why) : "  FAILED: " + c.cmp.why) << '\n';
  return os.str();
}

namespace {

std::string bytes_text(int64_t b) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1);
  if (b >= (int64_t(1) << 20)) os << b / 1048576.0 << " MiB";
  else if (b >= 1024) os << b / 1024.0 << " KiB";
  else os << b << " B";
  return os.str();
}

}  // namespace

std::string partition_note(const TrainingRecord& t) {
  std::ostringstream os;
  const Partition& p = t.partition();
  os << "\n# Partition (" << partitioner_name(p.partitioner) << "): " << p.saved.size() << " saved tensors, "
     << bytes_text(p.saved_bytes) << " (" << bytes_text(p.saved_activation_bytes) << " of them activations)\n";
  for (const SavedTensor& s : p.saved)
    os << "#   " << std::left << std::setw(22) << s.name << std::right << std::setw(11) << bytes_text(s.bytes) << "  " << s.why << '\n';
  if (!p.recomputed.empty()) {
    os << "# Recomputed in the backward:";
    for (const auto& n : p.recomputed) os << ' ' << n;
    os << '\n';
  }
  os << "# Partitioners side by side:\n";
  for (const Partition& q : t.partitions)
    os << "#   " << std::left << std::setw(10) << partitioner_name(q.partitioner) << std::right << std::setw(4) << q.saved.size()
       << " saved  " << std::setw(11) << bytes_text(q.saved_bytes) << "  (activations " << bytes_text(q.saved_activation_bytes)
       << ")  " << q.recomputed.size() << " recomputed\n";
  return os.str();
}

DotMarks saved_marks(const Partition& p) {
  DotMarks m;
  for (const SavedTensor& s : p.saved) m.saved[s.name] = "saved " + bytes_text(s.bytes);
  for (const auto& n : p.recomputed) m.notes[n] = "recomputed";
  return m;
}

std::vector<Tensor> reference_outputs(const CompileResult& r, const std::vector<Tensor>& user_inputs, double sgd_lr) {
  if (r.train) {
    // The reference runs the joint graph: it checks the partition, the decompositions and the
    // kernels; the expected gradients (grad_in*.npy) check the derivative rules.
    const TrainingRecord& t = r.training;
    std::vector<Tensor> out = run_reference(t.joint.graph, user_inputs);
    const Graph& j = t.joint.graph;
    for (size_t k = 0; sgd_lr > 0 && k < t.joint.grad_of.size(); ++k) {
      if (t.joint.grad_of_user_input[k] || j.outputs[t.joint.num_forward_outputs + k] < 0) continue;
      const Tensor& p = j.weights.at(t.joint.grad_of[k]);
      const Tensor& gr = out.at(t.joint.num_forward_outputs + k);
      Tensor u(p.dtype(), p.shape());
      for (int64_t i = 0; i < p.numel(); ++i) u.set(i, p.get(i) - sgd_lr * gr.get(i));
      out.push_back(u);
    }
    return out;
  }
  return run_reference(r.aten, r.model.inputs);
}

bool computes_in_half(const CompileResult& r) {
  const Graph& g = r.train ? r.training.joint.graph : r.aten;
  for (const Node& n : g.nodes)
    for (const TensorMeta& m : n.outs)
      if (dtype_is_half(m.dtype)) return true;
  return false;
}

std::vector<Tensor> reference64_outputs(const CompileResult& r, const std::vector<Tensor>& user_inputs) {
  try {
    std::vector<Tensor> in;
    for (const Tensor& t : r.train ? user_inputs : r.model.inputs) in.push_back(dtype_is_float(t.dtype()) ? cast(t, DType::f64) : t);
    // A training step's: the joint graph of the ATen graph in float64 (torch._dynamo's
    // cast_to_fp64(model), forward and backward), not the half joint graph converted: the casts its
    // derivative rules and decompositions wrote (a batch norm's statistics in float32, its result
    // back to bfloat16) carry their dtype and would round the float64 run to half after each.
    const Graph aten64 = convert_float_dtype(r.aten, DType::f64);
    return run_reference(r.train ? build_joint(aten64).graph : aten64, in);
  } catch (const std::exception&) {
    return {};  // no float64 form (an op that refuses float64): the elementwise check alone
  }
}

std::vector<KernelReport> kernel_reports(const CompileResult& r, const BackendRun& run, const std::function<std::string(size_t)>& launch) {
  std::vector<KernelReport> kernels;
  for (size_t k = 0; k < r.schedule.kernels.size(); ++k) {
    const Kernel& kr = r.schedule.kernels[k];
    KernelReport rep;
    rep.name = kr.name;
    rep.kind = kr.is_extern ? KernelKind::extern_call : KernelKind::generated;
    rep.how = run.how.at(k);
    rep.phase = phase_name(kr.phase);
    rep.nodes = kr.origins;
    for (int n : kr.nodes) rep.loop_nodes.push_back(r.loops.nodes[n].name);
    rep.numel = kr.numel;
    rep.rnumel = kr.rnumel;
    for (const auto& b : kr.reads) rep.bytes += r.loops.buffer(b).bytes();
    for (const auto& b : kr.writes) rep.bytes += r.loops.buffer(b).bytes();
    rep.ms = rep.how == "epilogue" ? 0 : run.t.kernel_ms.at(k);  // an epilogue's time is in its multiply's
    rep.gbps = rep.ms > 0 ? rep.bytes / (rep.ms * 1e6) : 0;
    if (k < run.t.host_kernel_ms.size()) rep.host_us = run.t.host_kernel_ms[k] * 1000;
    if (k < run.registers.size()) rep.registers = run.registers[k];
    rep.first_line = r.source.kernels[k].first_line;
    rep.last_line = r.source.kernels[k].last_line;
    rep.launch = launch(k);
    kernels.push_back(rep);
  }
  return kernels;
}

namespace {

// torch._dynamo's accuracy check (fp64_rmse_check) for a result that failed the elementwise one,
// against `ref64` where it is there, its reason naming that yardstick ("RMSE against <yardstick>").
void rmse_check(Comparison& c, const Tensor& actual, const Tensor& eager, const Tensor& ref64, const std::string& yardstick) {
  if (c.ok || !ref64.defined()) return;
  c = fp64_rmse_check(c, actual, eager, ref64);
  static const std::string generic = "the float64 computation";
  if (const size_t at = c.why.find(generic); at != std::string::npos) c.why.replace(at, generic.size(), yardstick);
}

// The file of user input u's float64 gradient: the u-th of those given, or grad64_in<u>.npy.
std::string grad64_file(const LoadedModel& m, size_t u) {
  std::vector<std::string> files;
  for (size_t a = 0; a <= m.expected_grads64_from.size();) {
    const size_t b = std::min(m.expected_grads64_from.find(", ", a), m.expected_grads64_from.size());
    files.push_back(m.expected_grads64_from.substr(a, b - a));
    a = b + 2;
  }
  return files.size() == m.expected_grads64.size() && u < files.size() ? files[u] : "grad64_in" + std::to_string(u) + ".npy";
}

}  // namespace

void check_outputs(CompileResult& r) {
  // The check: against the expected outputs when the model came with them, and always against
  // the reference interpreter run on the ATen graph.
  r.check.ok = true;
  // Results of half-precision work are held to that precision's tolerance, also where they end in
  // a float32 output (a bf16 softmax converted back): fused code rounds where it stores, not after
  // every op as eager does.
  r.check.precision = DType::f32;
  for (const Node& n : r.model.graph.nodes)
    for (const TensorMeta& m : n.outs)
      if (m.dtype == DType::bf16 || (m.dtype == DType::f16 && r.check.precision != DType::bf16)) r.check.precision = m.dtype;
  const Tolerance tol = tolerance_for(r.check.precision);
  const bool interpreter64_for_files = dtype_is_half(r.check.precision);
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    if (!r.outputs[i].defined()) continue;  // a None output
    if (i < r.model.expected.size()) {
      OutputCheck c{r.model.expected_from, compare(r.outputs[i], r.model.expected[i], tol)};
      // PyTorch's own result (half precision, or float32) as the eager side of torch._dynamo's
      // check; its float64 yardstick PyTorch's (out64.npy) where the model came with it. A half
      // precision graph's may be the reference interpreter's float64 run; a float32 graph's never
      // is: PyTorch's float32 result far from the graph's own float64 value would pass ours by it
      // where the graph does not compute what PyTorch did (the check this file is for).
      if (interpreter64_for_files && i < r.reference64_outputs.size() && r.reference64_outputs[i].defined())
        rmse_check(c.cmp, r.outputs[i], r.model.expected[i], r.reference64_outputs[i], "the reference interpreter in float64");
      else if (i < r.model.expected64.size())
        rmse_check(c.cmp, r.outputs[i], r.model.expected[i], r.model.expected64[i], "PyTorch float64 (" + r.model.expected64_from + ")");
      r.check.ok = r.check.ok && c.cmp.ok;
      r.check.max_abs_err = std::max(r.check.max_abs_err, c.cmp.max_abs_err);
      r.check.rel_err = std::max(r.check.rel_err, c.cmp.rel_err);
      r.check.outputs.push_back(c);
    }
    if (i >= r.reference_outputs.size()) continue;
    OutputCheck c{r.train ? "reference interpreter (joint graph)" : "reference interpreter",
                  compare(r.outputs[i], r.reference_outputs.at(i), tol)};
    if (i < r.reference64_outputs.size())
      rmse_check(c.cmp, r.outputs[i], r.reference_outputs[i], r.reference64_outputs[i], "the reference interpreter in float64");
    r.check.ok = r.check.ok && c.cmp.ok;
    if (r.model.expected.empty()) {
      r.check.max_abs_err = std::max(r.check.max_abs_err, c.cmp.max_abs_err);
      r.check.rel_err = std::max(r.check.rel_err, c.cmp.rel_err);
    }
    r.check.reference.push_back(c);
  }
  if (r.train) {
    // Gradients of user inputs against the files that came with the model (grad_in<i>.npy).
    const TrainingRecord& t = r.training;
    const std::vector<int> users = r.model.graph.user_inputs();
    for (size_t k = 0; k < t.joint.grad_of.size(); ++k) {
      const size_t out = static_cast<size_t>(t.joint.num_forward_outputs) + k;
      if (!t.joint.grad_of_user_input[k] || out >= r.outputs.size() || !r.outputs[out].defined()) continue;
      for (size_t u = 0; u < users.size() && u < r.model.expected_grads.size(); ++u) {
        if (r.model.graph.nodes[users[u]].name != t.joint.grad_of[k]) continue;
        GradientCheck c{t.joint.grad_of[k], "grad_in" + std::to_string(u) + ".npy", compare(r.outputs[out], r.model.expected_grads[u], tol)};
        if (interpreter64_for_files && out < r.reference64_outputs.size() && r.reference64_outputs[out].defined())
          rmse_check(c.cmp, r.outputs[out], r.model.expected_grads[u], r.reference64_outputs[out], "the reference interpreter in float64");
        else if (u < r.model.expected_grads64.size() && r.model.expected_grads64[u].defined())
          rmse_check(c.cmp, r.outputs[out], r.model.expected_grads[u], r.model.expected_grads64[u],
                     "PyTorch float64 (" + grad64_file(r.model, u) + ")");
        r.check.ok = r.check.ok && c.cmp.ok;
        r.check.max_abs_err = std::max(r.check.max_abs_err, c.cmp.max_abs_err);
        r.check.rel_err = std::max(r.check.rel_err, c.cmp.rel_err);
        r.check.gradients.push_back(c);
      }
    }
  }
}

}  // namespace ls
