// The pipeline as a script of stages (run_stages, at the end of this file). Each stage is one
// function below; the device's work is its backend's (backend/backend.h), so nothing here
// branches on the device.
#include "pipeline/pipeline.h"

#include <algorithm>
#include <chrono>

#include "autodiff/training_step.h"
#include "backend/backend.h"
#include "dynamic/retarget.h"
#include "exec/bandwidth.h"
#include "interp/reference.h"
#include "lower/lower.h"
#include "passes/convert_dtype.h"
#include "loop/inline_pointwise.h"
#include "loop/reorder_loops.h"
#include "ops/op_table.h"
#include "passes/decompose.h"
#include "passes/fold_transposed_products.h"
#include "passes/normalize_to_aten.h"
#include "pipeline/run_record.h"
#include "record/stage_log.h"

namespace ls {
namespace {

using Clock = std::chrono::steady_clock;

// The front half of a compile (graph stages to generated code) at other sizes of the user inputs:
// dynamic shapes' samples, and a dynamic program's new sizes. Throws where they do not compile.
CompileResult front_half(const Graph& aten, const std::vector<Shape>& shapes, const PipelineOptions& o) {
  LoadedModel m;
  m.format = "aten graph at other sizes";
  m.graph = retarget_graph(aten, shapes);
  PipelineOptions f = o;
  f.stop_after_source = true;
  f.record = false;
  f.run = false;
  f.keep_program = false;
  f.on_capture = nullptr;
  CompileResult r = run_pipeline(std::move(m), f);
  if (!r.error.empty()) throw std::runtime_error(r.error_stage + ": " + r.error);
  return r;
}

// Parameters keep static shapes under dynamic=True, as Dynamo's force_parameter_static_shapes: a
// placeholder the model marks as one, or named as torch.export (p_, b_, c_) or Dynamo
// (L_self_modules_fc1_parameters_weight_) name them.
bool is_parameter(const Node& n) {
  if (n.input_kind != InputKind::user) return true;
  const std::string& s = n.name;
  for (const char* p : {"p_", "b_", "c_"})
    if (s.rfind(p, 0) == 0) return true;
  for (const char* p : {"_parameters_", "_buffers_"})
    if (s.find(p) != std::string::npos) return true;
  return false;
}

// One compile on its way down the stages.
struct Compile {
  const PipelineOptions& o;
  CompileResult& r;
  StageLog& log;
  Backend& backend;
  BackendJob job;
  const Graph* to_compile = nullptr;  // the ATen graph, or the training step
  Graph core_lowered;                 // lowered from Core ATen: its composites expanded
};

void capture(Compile& c) {
  c.log.step("capture", [&] { return 0; });
  c.log.graph("capture", "Captured graph (as imported)", c.r.model.graph);
  if (c.o.on_capture) c.o.on_capture(c.r);
}

void to_aten(Compile& c) {
  c.r.aten = c.log.step("aten", [&] { return normalize_to_aten(c.r.model.graph); });
  c.log.graph("aten", "ATen graph", c.r.aten);
  c.to_compile = &c.r.aten;
}

// Training: the joint graph, partitioned by both partitioners (the chosen one compiles), and the
// training step (forward, backward, optional SGD update) that goes on down the pipeline.
void differentiate(Compile& c) {
  CompileResult& r = c.r;
  StageLog& log = c.log;
  r.train = true;
  TrainingRecord& t = r.training;
  t.joint = log.step("joint", [&] { return build_joint(r.aten); });
  const double joint_ms = log.last_ms;
  t.partitions = log.step("forward", [&] {
    return std::vector<Partition>{partition_joint(t.joint, Partitioner::default_partition),
                                  partition_joint(t.joint, Partitioner::min_cut)};
  });
  t.chosen = c.o.partitioner == Partitioner::min_cut ? 1 : 0;
  const double partition_ms = log.last_ms;
  std::string expanded;
  if (!t.joint.expanded.empty()) {
    expanded = "\n# Differentiated through their decompositions (no derivative rule of their own):\n";
    for (const auto& e : t.joint.expanded) expanded += "#   " + e + "\n";
  }
  log.last_ms = joint_ms;
  log.graph("joint", "Joint forward + backward graph", t.joint.graph, saved_marks(t.partition()), expanded);
  log.last_ms = partition_ms;
  const std::string note = partition_note(t);
  log.graph("forward", "Forward graph (partitioned)", t.partition().forward, saved_marks(t.partition()), note);
  log.last_ms = 0;
  log.graph("backward", "Backward graph (partitioned)", t.partition().backward, saved_marks(t.partition()), note);
  t.step = training_step(t.joint, t.partition(), c.o.sgd_lr);
  t.num_gradients = static_cast<int>(t.joint.grad_of.size());
  t.num_updates = static_cast<int>(t.step.outputs.size()) - t.joint.num_forward_outputs - t.num_gradients;
  c.to_compile = &t.step;
}

// Core ATen, then (by default) prims: the graph that is lowered.
void decompose_stages(Compile& c) {
  CompileResult& r = c.r;
  r.core_aten = c.log.step("core_aten", [&] { return fold_transposed_products(decompose(*c.to_compile, level::core_aten)); });
  c.log.graph("core_aten", "Core ATen graph", r.core_aten);
  const bool to_prims = c.o.decompose_to == 0 || c.o.decompose_to == level::prims;
  if (to_prims) {
    r.prims = c.log.step("prims", [&] { return decompose(r.core_aten, level::prims); });
    c.log.graph("prims", "prims graph", r.prims);
  }
  if (to_prims) {
    c.job.lowered = &r.prims;
    return;
  }
  // Lowered from Core ATen: the ops that have a lowering stay (Inductor's lowerings), the
  // composites among them (elu, var, the rounding divisions) expand as their decompositions.
  c.core_lowered = decompose_if(r.core_aten, [](const Graph& g) {
    std::vector<bool> v(g.nodes.size(), false);
    for (size_t i = 0; i < g.nodes.size(); ++i) v[i] = !g.nodes[i].is_placeholder() && g.nodes[i].op->kind == OpKind::composite;
    return v;
  });
  c.job.lowered = &c.core_lowered;
}

void lower(Compile& c) {
  CompileResult& r = c.r;
  r.loops = c.log.step("loop_ir", [&] { return lower_to_loops(*c.job.lowered); });
  r.loops.device = device_name(c.o.device);
  if (!c.o.record) return;
  Stage s;
  s.name = "loop_ir";
  s.title = "Loop-level IR (before fusion)";
  s.kind = Stage::Kind::loops;
  if (c.o.stage_text) {
    s.text = print_loop_program(r.loops);
    s.dot = loop_program_to_dot(r.loops);
  }
  s.nodes = static_cast<int>(r.loops.nodes.size());
  c.log.add(std::move(s));
}

// Inlining, loop reordering for column reductions, then the scheduler's fusion (a reason for every
// refused pair) and memory plan.
void fuse(Compile& c) {
  CompileResult& r = c.r;
  std::vector<std::pair<std::string, std::vector<std::string>>> inlined;
  std::vector<std::string> reordered, restored;
  r.schedule = c.log.step("fused", [&] {
    if (c.o.fusion) inlined = inline_pointwise(r.loops);
    if (c.o.fusion) reordered = reorder_for_column_reductions(r.loops);
    Schedule sched = schedule(r.loops, c.backend.schedule_options(c.o));
    std::vector<std::vector<int>> pointwise, rows;
    for (const Kernel& k : sched.kernels)
      if (!k.is_extern && k.nests.empty()) (k.rnumel == 1 ? pointwise : rows).push_back(k.nodes);
    restored = restore_unfused_orders(r.loops, pointwise);
    for (std::string& n : restore_orders_in_row_kernels(r.loops, rows)) restored.push_back(std::move(n));
    return sched;
  });
  if (!c.o.record) return;
  Stage s;
  s.name = "fused";
  s.title = "Fused kernels (after scheduling)";
  s.kind = Stage::Kind::kernels;
  s.nodes = static_cast<int>(r.schedule.kernels.size());
  if (!c.o.stage_text) {
    c.log.add(std::move(s));
    return;
  }
  s.text = print_schedule(r.loops, r.schedule);
  if (!inlined.empty()) {
    s.text += "\n# Inlined (recomputed by their readers instead of stored)\n";
    for (const auto& [node, into] : inlined) {
      s.text += node + " -> ";
      for (size_t i = 0; i < into.size(); ++i) s.text += (i ? ", " : "") + into[i];
      s.text += "\n";
    }
  }
  if (!reordered.empty()) {
    s.text += "\n# Reordered (iterate columns outer, so the reduction over rows that reads them fuses)\n";
    for (const auto& n : reordered)
      if (!std::count(restored.begin(), restored.end(), n)) s.text += n + "\n";
  }
  if (!restored.empty()) {
    s.text += "\n# Back in their own order (reordered for a reduction they did not fuse with)\n";
    for (const auto& n : restored) s.text += n + "\n";
  }
  s.dot = schedule_to_dot(r.loops, r.schedule);
  if (r.loops.nodes.size() <= kClusteredScheduleNodes) s.dot_simple = schedule_kernels_to_dot(r.loops, r.schedule);
  c.log.add(std::move(s));
}

// Dynamic shapes: the front half sampled at other sizes, the sources anti-unified into one
// template that takes the sizes; the template is what compiles.
void make_dynamic(Compile& c) {
  CompileResult& r = c.r;
  std::vector<std::string> names;
  std::vector<Shape> shapes;
  std::vector<bool> fixed;
  for (int id : r.aten.user_inputs()) {
    const Node& n = r.aten.nodes[id];
    names.push_back(n.name);
    shapes.push_back(n.meta().shape);
    fixed.push_back(is_parameter(n));
  }
  const PipelineOptions samples = c.backend.sample_options(c.job);
  r.dynamic = c.log.step("dynamic", [&] {
    return make_size_generic(
        names, shapes, fixed, r.source, [&](const std::vector<Shape>& at) { return front_half(r.aten, at, samples).source; },
        c.backend.size_args());
  });
  r.source.code = r.dynamic.code;
  r.cuda.source.code = r.dynamic.code;
  c.job.sizes = r.dynamic.values_of(r.dynamic.traced, nullptr);
  int n = 0;
  for (const SizeSymbol& sym : r.dynamic.symbols) n += sym.dynamic;
  r.dynamic_note = "dynamic shapes: " + std::to_string(n) + " of " + std::to_string(r.dynamic.symbols.size()) +
                   " size symbols dynamic, " + std::to_string(r.dynamic.holes.size()) + " numbers of the code follow them (" +
                   std::to_string(r.dynamic.samples.size()) + " sample runs of the front half)";
}

// The source stage (and the dynamic stage after it), each with its own time.
void record_source(Compile& c, double source_ms, double dynamic_ms) {
  c.log.last_ms = source_ms;
  Stage s;
  s.name = "source";
  s.title = c.backend.source_title();
  s.kind = Stage::Kind::source;
  if (c.o.stage_text) s.text = c.r.source.code;
  s.nodes = static_cast<int>(c.r.source.kernels.size());
  c.log.add(std::move(s));
  if (!c.o.dynamic) return;
  c.log.last_ms = dynamic_ms;
  Stage d;
  d.name = "dynamic";
  d.title = "Dynamic shapes: symbols and guards";
  d.kind = Stage::Kind::source;
  d.text = c.r.dynamic.report();
  d.nodes = static_cast<int>(c.r.dynamic.symbols.size());
  c.log.add(std::move(d));
}

// The run: the backend runs and times the kernels on the model's inputs (and a training step's
// tangents); the reference interpreter runs the ATen (or joint) graph; every output is checked.
void run(Compile& c) {
  CompileResult& r = c.r;
  c.log.current = "run";
  if (std::string why = c.backend.cannot_run(c.job); !why.empty()) {
    r.not_run = why;
    return;
  }
  const auto t_run = Clock::now();
  std::vector<Tensor> user_inputs = r.model.inputs;
  if (r.train)
    for (const Tensor& t : tangent_values(r.training.joint)) user_inputs.push_back(t);
  const BackendRun ran = c.backend.run(c.job, bind_inputs(*c.job.lowered, user_inputs));
  // No reference run for a model too large for the interpreter: the expected files check alone.
  if (c.o.reference) r.reference_outputs = reference_outputs(r, user_inputs, c.o.sgd_lr);
  if (c.o.reference && computes_in_half(r)) r.reference64_outputs = reference64_outputs(r, user_inputs);
  r.run_ms = ran.t.total_ms;
  r.host_ms = ran.t.host_ms;
  r.bandwidth_gbps = memory_bandwidth_gbps(device_name(r.device));
  r.kernels = kernel_reports(r, ran, [&](size_t k) { return c.backend.launch_text(c.job, k); });
  check_outputs(r);
  // Float32 work beyond the elementwise tolerance (a deep net's gradients summed in another order,
  // a BatchNorm over two images): the interpreter again in float64, and torch._dynamo's RMSE
  // check decides, as it does for half precision. Only then: it costs a second reference run.
  if (!r.check.ok && c.o.reference && r.reference64_outputs.empty() && !r.reference_outputs.empty()) {
    r.reference64_outputs = reference64_outputs(r, user_inputs);
    if (!r.reference64_outputs.empty()) {
      r.check = Check{};
      check_outputs(r);
    }
  }
  c.log.last_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_run).count();
  Stage s;
  s.name = "run";
  s.title = "Run: kernel times and the check";
  s.kind = Stage::Kind::run;
  s.text = run_table(r) + (r.mode_note.empty() ? "" : "\n" + r.mode_note + "\n") +
           (r.dynamic_note.empty() ? "" : "\n" + r.dynamic_note + "\n") +
           (r.compile_phases.empty() ? "" : "\n" + phase_table(r.compile_phases));
  s.nodes = static_cast<int>(r.kernels.size());
  c.log.add(std::move(s));
}

// A failed compile keeps every stage it reached: the node it failed at is marked on the last graph
// drawn that has it, and the stages it did not reach say why.
void record_failure(CompileResult& r, const PipelineOptions& o) {
  if (!r.error_node.empty() && o.stage_text)
    for (auto s = r.stages.rbegin(); s != r.stages.rend(); ++s) {
      const Graph* g = s->kind == Stage::Kind::graph ? stage_graph(r, s->name) : nullptr;
      if (!g || g->find(r.error_node) < 0) continue;
      DotMarks marks;
      marks.failed[r.error_node] = "stage '" + r.error_stage + "' failed here";
      s->dot = graph_to_dot(*g, marks);
      s->text += "\n# Stage '" + r.error_stage + "' failed at " + r.error_node + ": " + r.error + "\n";
      break;
    }
  for (const std::string& name : stage_names(o.train)) {
    if (r.stage(name)) continue;
    Stage s;
    s.name = name;
    s.title = name == r.error_stage ? "Failed: " + name : "Not reached: " + name;
    s.kind = Stage::Kind::not_reached;
    const std::string at = r.error_stage.empty() ? "the compile's start" : "stage '" + r.error_stage + "'";
    s.text = name == r.error_stage ? "failed: " + r.error + "\n" : "not reached: " + at + " failed: " + r.error + "\n";
    r.stages.push_back(std::move(s));
  }
}

// The stages, in order. Errors land in r.error with the stage that raised them.
void run_stages(CompileResult& r, const PipelineOptions& o, Backend& backend, const std::function<bool()>& cancelled) {
  StageLog log(r, cancelled);
  log.recording = o.record;
  log.text = o.stage_text;
  Compile c{o, r, log, backend, BackendJob{o, r, log, nullptr, {}, front_half}};
  const auto t_compile = Clock::now();
  const size_t phases_from = phase_mark();
  try {
    backend.start(c.job);
    capture(c);
    to_aten(c);
    if (o.train) differentiate(c);
    decompose_stages(c);
    lower(c);
    fuse(c);
    backend.generate(c.job);
    if (o.stop_after_source) return;
    const double source_ms = log.last_ms;
    if (o.dynamic) make_dynamic(c);
    record_source(c, source_ms, log.last_ms);
    log.enter("asm");
    backend.compile(c.job);
    r.compile_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_compile).count();
    r.compile_phases = phase_times_since(phases_from);
    if (o.run) run(c);
  } catch (const Cancelled&) {
    r.error = "cancelled";
    r.error_stage = log.current;
  } catch (const NodeError& e) {
    r.error = e.what();
    r.error_stage = log.current;
    r.error_node = e.node;
  } catch (const CompileError& e) {
    r.error = std::string(e.what()) + ":\n" + e.diagnostics;
    r.error_stage = log.current;
  } catch (const std::exception& e) {
    r.error = e.what();
    r.error_stage = log.current;
  }
}

}  // namespace

const std::vector<std::string>& stage_names(bool train) {
  static const std::vector<std::string> n = {"capture", "aten", "core_aten", "prims", "loop_ir", "fused", "source", "asm", "run"};
  static const std::vector<std::string> t = {"capture", "aten",  "joint",  "forward", "backward", "core_aten",
                                             "prims",   "loop_ir", "fused", "source",  "asm",      "run"};
  return train ? t : n;
}

namespace {
// PipelineOptions::dtype: the graph converted (passes/convert_dtype.h), its float inputs with it;
// float32 expected files no longer apply.
void convert_model_dtype(LoadedModel& m, DType to) {
  bool any_float = false;
  for (const Node& n : m.graph.nodes) any_float = any_float || (n.is_placeholder() && dtype_is_float(n.meta().dtype));
  if (!any_float) throw std::invalid_argument("--dtype " + std::string(dtype_torch(to).substr(6)) + ": the model has no floating-point inputs or weights");
  m.graph = convert_float_dtype(m.graph, to);
  for (Tensor& t : m.inputs)
    if (dtype_is_float(t.dtype())) t = cast(t, to);
  if (!m.expected.empty() || !m.expected_grads.empty()) {
    m.expected.clear();
    m.expected_grads.clear();
    m.expected_from = m.expected_grads_from = "";
  }
}
}  // namespace

CompileResult run_pipeline(LoadedModel model, const PipelineOptions& o, const std::function<bool()>& cancelled) {
  CompileResult r;
  r.model = std::move(model);
  r.device = o.device;
  r.mode = o.mode;
  const std::unique_ptr<Backend> backend = make_backend(o.device);
  try {
    if (o.dtype) convert_model_dtype(r.model, *o.dtype);
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  if (r.error.empty()) run_stages(r, o, *backend, cancelled);
  backend->finish(r);
  if (!r.error.empty() && o.record) record_failure(r, o);
  return r;
}

}  // namespace ls
