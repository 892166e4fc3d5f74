// lowerscope-cli: the headless front end. `lowerscope-cli compile MODEL` runs the whole pipeline and
// prints the stage table, the kernels with their times, and the check against the reference.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <future>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>

#include "backend/backend.h"
#include "dynamic/retarget.h"
#include "frontend/load_model.h"
#include "interp/reference.h"
#include "lower/lower.h"
#include "ops/core_aten_set.h"
#include "ops/op_table.h"
#include "ops/print.h"
#include "pipeline/pipeline.h"
#include "exec/isolated_run.h"
#include "export/package.h"
#include "report/diff.h"
#include "report/html_report.h"
#include "report/capture_report.h"
#include "report/report.h"
#include "frontend/trace_kernel_map.h"
#include "report/trace_report.h"
#include "script/script.h"

namespace {

const char* kUsage = R"(usage:
  lowerscope-cli [--in-process] [--time-limit S] compile MODEL [--device cpu|cuda] [--mode default|reduce-overhead|max-autotune] [--inputs A.npy,B.npy] [--expect OUT.npy [--expect64 OUT64.npy]]
                               [--train [--expect-grads G0.npy,G1.npy [--expect-grads64 G0_64.npy,G1_64.npy]] [--partitioner min_cut|default]
                                        [--sgd LR]]
                               [--report FILE.json] [--dump DIR (stages, sources, objects, SVGs, report.html)] [--decompose core_aten|prims]
                               [--dtype float32|bfloat16|float16] [--allow-tf32] [--no-fusion] [--no-gemm-templates] [--external-compiler] [--no-run] [--no-reference] [--quiet]
                               [--dynamic [--at s0=N[,s1=M] ...]] [--cuda-started]
  lowerscope-cli diff MODEL [--stage S | --stages A,B] [compile options] [--right "OPTIONS"]
  lowerscope-cli export MODEL --out DIR [compile options]
  lowerscope-cli run SCRIPT.py [--report FILE.json] [--device cpu|cuda] [--quiet]
  lowerscope-cli trace TRACE_DIR_OR_LOG [--report FILE.json] [--device cpu|cuda] [--no-compile] [--graph ID] [--diff-inductor] [--quiet]
  lowerscope-cli compile TRACE_DIR_OR_LOG --graph ID [compile options]
  lowerscope-cli capture CAPTURE_DIR [--report FILE.json] [--device cpu|cuda] [--no-compile] [--quiet]
  lowerscope-cli stages        list the stage names, in pipeline order
  lowerscope-cli ops           list the op table

MODEL is a graph printed by PyTorch's print_readable() (a .txt file), or a folder holding one
(model.txt or graph.txt) with its inputs in0.npy, in1.npy, ... and expected output out.npy.
--train compiles a training step: the joint forward+backward graph, partitioned into a forward
and a backward, with the gradient of the sum of the first output checked against
grad_in0.npy, ... (found beside the inputs, or given with --expect-grads); --sgd LR adds the
parameter update.
PyTorch's results in float64 (out64.npy, grad64_in0.npy, ... beside out.npy and grad_in0.npy, or
given with --expect64 and --expect-grads64) are the yardstick of torch._dynamo's accuracy check
where the reference interpreter's own float64 run is absent (it runs where a result fails the
elementwise check, and always for bfloat16 and float16 graphs): a result beyond the elementwise
tolerance (two float32 computations in different orders, e.g. a deep net's input gradients) passes
when its RMSE against the float64 result is at most 2 x that of PyTorch's float32 result (3 x for
half precision or fewer than 1000 elements) + 1e-5, as torch._dynamo.utils.same; the check's line
says so ("RMSE against PyTorch float64 (out64.npy) ...").
--no-gemm-templates: on the CPU, default mode writes large float32 matrix multiplies (AVX-512, at
least 2^27 multiply-adds, K up to 512) as generated GEMM templates, their bias in the register
tile's store; with this flag every multiply calls the BLAS library (max-autotune times both).
--allow-tf32 lets float32 products (and convolutions through them) run on CUDA's tensor cores in
TF32, as torch.backends.cuda.matmul.allow_tf32 = True: faster, about 1e-3 relative error, so the
float32 check may fail on large products. Off by default (float32 exact). It sets LS_ALLOW_TF32=1
for this process and the processes it starts.
--dynamic compiles with dynamic shapes (as torch.compile(dynamic=True)): the inputs' sizes become
symbols s0, s1, ... and the kernels (C++ or CUDA) take them as arguments; the `dynamic` stage lists the
symbols, what was specialized and why, and the guards. --at s0=N runs the same compiled code again
at that size (random inputs, checked against the reference interpreter), or recompiles where a
guard fails.
--cuda-started starts the CUDA driver (cuInit, a context: about 0.15 s) before the compile, as the
app keeps it between compiles, so the compile time leaves it out.
`diff` compiles MODEL and diffs a stage (default: fused) with the same stage of a second compile
that adds --right's options (e.g. --right "--no-fusion", --right "--device cuda"), or two stages
of one compile (--stages core_aten,prims): graph nodes matched by provenance, then structure;
kernels by the nodes they cover; the stage text line by line.
`export` writes the compiled model (inference, or with --train the training step) as a package
that builds with CMake and runs without Lowerscope: for CPU kernels.cpp, for --device cuda
kernels.cu with its PTX (and cubin where a GPU was here) beside the helper kernels' module; then
model.cpp (the runner), runtime.h with runtime_cpu.h or runtime_cuda.h (the library calls, the app's
own source), buffers.h, data/*.npy, expected/*.npy, CMakeLists.txt. A CUDA
package builds with the CUDA toolkit (driver API, cuBLAS) and runs on a GPU.
`run` runs a PyTorch-style script in the embedded Python against Lowerscope's torch: each
torch.compile'd call is captured (graphs, guards, graph breaks, recompiles), compiled by the
pipeline and run; the compile log follows the script's output, and --report writes it as JSON.
`trace` reads PyTorch's structured trace (a TORCH_TRACE=dir folder or one of its .log files, what
tlparse reads): frames and compile ids with their stacks, each Dynamo graph with PyTorch's stages
(AOT graphs, Inductor's output code and its kernels), graph breaks with their source lines,
recompiles with the guard that failed, failures and the compile time per phase; each Dynamo graph
is also compiled by our pipeline (random inputs of its shapes, checked against the reference
interpreter) unless --no-compile; --graph ID prints that graph, its guards and Inductor's kernels
with the nodes they cover, set against ours by Dynamo node; --diff-inductor prints only that table
(rows "input_2, input_3 -> Inductor: triton_... | ours: cpp_fused_..." with where they differ), of
--graph or of every graph. `compile TRACE --graph 0/1` compiles one of its Dynamo graphs as MODEL.
`capture` reads the folder that torch.compile(model, backend="lowerscope") writes (the Python
package in python/): each Dynamo graph is compiled by our pipeline on its example inputs (.npy) and
checked against PyTorch's eager outputs and the reference interpreter; the guards, recompiles,
graph breaks and failures PyTorch logged are listed.
Compiled kernels, CPU and CUDA, run in a worker process (lowerscope-runner, next to this program),
so a kernel that crashes or hangs is reported ("kernel K faulted: SIGSEGV", "kernel K faulted: CUDA
illegal address", "kernel K ran past 60 s")
and the compile's stages stay; timings are taken inside the worker. Options before or after the
command: --in-process runs them in this process instead (as before; for measurements that need
it, also LOWERSCOPE_IN_PROCESS=1); --time-limit S stops a kernel that runs longer than S seconds
(default 60). Max-autotune times its candidates in this process.
Exit status: 0 when the model compiled, ran and matched; 1 when the check failed; 2 when the
model could not be loaded or compiled (the reason goes to stderr); 3 when a compiled kernel
faulted or ran past the time limit (the message names it).
)";

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

void print_result(const ls::CompileResult& r) {
  std::cout << "model: " << r.model.path << "  (inputs: " << r.model.inputs_from << ")\n\n";
  std::cout << std::left << std::setw(11) << "stage" << std::setw(36) << "title" << std::right << std::setw(7) << "nodes"
            << std::setw(10) << "ms" << "  ops\n";
  for (const ls::Stage& s : r.stages) {
    std::string ops;
    for (const auto& [op, n] : s.ops) ops += (ops.empty() ? "" : ", ") + op + (n > 1 ? " x" + std::to_string(n) : "");
    if (ops.size() > 70) ops = ops.substr(0, 67) + "...";
    std::cout << std::left << std::setw(11) << s.name << std::setw(36) << s.title << std::right << std::setw(7) << s.nodes
              << std::setw(10) << std::fixed << std::setprecision(2) << s.ms << "  " << (s.changed ? "" : "(unchanged) ")
              << ops << '\n';
  }
  if (r.train && !r.training.partitions.empty()) {
    std::cout << "\npartitioners (saved tensors between forward and backward):\n";
    for (const ls::Partition& p : r.training.partitions)
      std::cout << "  " << std::left << std::setw(9) << ls::partitioner_name(p.partitioner) << std::right << std::setw(4)
                << p.saved.size() << " saved  " << std::setw(10) << p.saved_bytes << " bytes  (activations "
                << p.saved_activation_bytes << ")  " << p.recomputed.size() << " recomputed"
                << (&p == &r.training.partition() ? "   <- compiled" : "") << '\n';
  }
  if (const ls::Stage* tune = r.stage("autotune")) std::cout << '\n' << tune->text;
  const ls::Stage* run = r.stage("run");
  if (run) std::cout << '\n' << run->text;
  const char* check = !r.not_run.empty() ? "not run" : !run ? "not run (--no-run)" : r.check.ok ? "ok" : "FAILED";
  std::cout << "\ncompile: " << std::fixed << std::setprecision(1) << r.compile_ms << " ms   run: " << std::setprecision(4)
            << r.run_ms << " ms   check: " << check << '\n';
  if (!run) std::cout << ls::phase_table(r.compile_phases);  // else the run stage ends with it
}

// The debug folder, each graph drawn as SVG by Graphviz's dot where it is installed (the layouts
// side by side, each stopped after a minute: a graph of thousands of nodes can take dot far longer;
// its .dot stays), and report.html with the drawings inline.
void write_dump_with_html(const ls::CompileResult& r, const std::string& dir) {
  namespace fs = std::filesystem;
  ls::write_dump(r, dir);
  std::map<std::string, std::string> svgs;
  const bool have_dot = std::system("dot -V > /dev/null 2>&1") == 0 && dir.find('\'') == std::string::npos;
  const bool have_timeout = std::system("timeout --version > /dev/null 2>&1") == 0;
  struct Layout {
    std::string stage, stem;
    std::future<int> status;  // dot's, as std::system gives it
  };
  std::vector<Layout> layouts;
  for (size_t i = 0; i < r.stages.size() && have_dot; ++i) {
    if (r.stages[i].dot.empty()) continue;
    std::ostringstream stem;
    stem << std::setw(2) << std::setfill('0') << i << '_' << r.stages[i].name;
    const fs::path dot = fs::path(dir) / (stem.str() + ".dot"), svg = fs::path(dir) / (stem.str() + ".svg");
    const std::string cmd = std::string(have_timeout ? "timeout 60 " : "") + "dot -Tsvg -o '" + svg.string() + "' '" + dot.string() + "' 2>/dev/null";
    layouts.push_back({r.stages[i].name, stem.str(), std::async(std::launch::async, [cmd] { return std::system(cmd.c_str()); })});
  }
  for (Layout& l : layouts) {
    const int rc = l.status.get();
    const fs::path svg = fs::path(dir) / (l.stem + ".svg");
    if (rc != 0) {
      std::error_code ec;
      fs::remove(svg, ec);
      std::cerr << "lowerscope-cli: " << l.stem << ".svg not drawn: Graphviz's dot "
                << (WIFEXITED(rc) && WEXITSTATUS(rc) == 124 ? "took over 60 s" : "failed") << " (" << l.stem << ".dot is there)\n";
      continue;
    }
    std::ifstream in(svg);
    std::stringstream text;
    text << in.rdbuf();
    svgs[l.stage] = text.str();
  }
  std::ofstream html(fs::path(dir) / "report.html");
  if (!html) throw std::runtime_error(dir + ": cannot write report.html");
  html << ls::html_report(r, svgs);
}

// One option of the pipeline or the loader at args[i] (its value, if any, after it); false when
// it is none of theirs. Shared by compile and diff.
bool pipeline_option(const std::vector<std::string>& args, size_t& i, ls::LoadOptions& lo, ls::PipelineOptions& po) {
  const std::string& a = args[i];
  auto value = [&]() -> std::string {
    if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
    return args[++i];
  };
  if (a == "--device") po.device = ls::parse_device(value());
  else if (a == "--mode") {
    const std::string v = value();
    if (v != "default" && v != "reduce-overhead" && v != "max-autotune")
      throw std::invalid_argument("--mode takes default, reduce-overhead or max-autotune");
    po.mode = ls::parse_mode(v);
  }
  else if (a == "--dtype") {
    const std::string v = value();
    const auto t = ls::dtype_from_name(v);
    if (!t || (*t != ls::DType::f32 && *t != ls::DType::bf16 && *t != ls::DType::f16))
      throw std::invalid_argument("--dtype takes float32, bfloat16 or float16");
    if (*t != ls::DType::f32) po.dtype = *t;
  }
  else if (a == "--train") po.train = true;
  else if (a == "--expect-grads") lo.expect_grads = split(value(), ',');
  else if (a == "--expect-grads64") lo.expect_grads64 = split(value(), ',');
  else if (a == "--expect64") lo.expect64 = value();
  else if (a == "--partitioner") {
    const std::string v = value();
    if (v == "min_cut" || v == "min-cut") po.partitioner = ls::Partitioner::min_cut;
    else if (v == "default") po.partitioner = ls::Partitioner::default_partition;
    else throw std::invalid_argument("--partitioner takes min_cut or default");
  } else if (a == "--sgd") {
    const std::string v = value();
    char* end = nullptr;
    po.sgd_lr = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end || !(po.sgd_lr > 0)) throw std::invalid_argument("--sgd takes a positive learning rate");
  }
  else if (a == "--inputs") lo.inputs = split(value(), ',');
  else if (a == "--expect") lo.expect = value();
  else if (a == "--decompose") {
    const std::string v = value();
    if (v == "core_aten") po.decompose_to = ls::level::core_aten;
    else if (v == "prims") po.decompose_to = ls::level::prims;
    else throw std::invalid_argument("--decompose takes core_aten or prims");
  } else if (a == "--no-fusion") po.fusion = false;
  else if (a == "--no-gemm-templates") po.gemm_templates = false;
  else if (a == "--external-compiler") po.external_compiler = true;
  else if (a == "--no-run") po.run = false;
  else if (a == "--no-reference") po.reference = false;
  else if (a == "--dynamic") po.dynamic = true;
  else if (a == "--allow-tf32") ::setenv("LS_ALLOW_TF32", "1", 1);  // read where cuBLAS loads (cuda/cublas.h)
  else return false;
  return true;
}

// Runs a dynamic compile's kept program at the sizes `spec` gives ("s0=3,s1=40"; the others as
// traced) on random inputs, checked against the reference interpreter on the ATen graph at those
// sizes; prints one line. False when the check fails.
bool run_at(const ls::CompileResult& r, const std::string& spec, const ls::PipelineOptions& options) {
  const ls::SizeGeneric& g = r.dynamic;
  std::vector<int64_t> v = g.values_of(g.traced, nullptr);
  for (const std::string& kv : split(spec, ',')) {
    const size_t eq = kv.find('=');
    size_t k = 0;
    while (k < g.symbols.size() && (eq == std::string::npos || g.symbols[k].name != kv.substr(0, eq))) ++k;
    if (k == g.symbols.size()) throw std::invalid_argument("--at takes symbol=size pairs of the symbols the dynamic stage lists (s0=3)");
    v[k] = std::stoll(kv.substr(eq + 1));
  }
  ls::Graph at;
  try {
    at = ls::retarget_graph(r.aten, g.shapes_at(v));
  } catch (const std::exception& e) {  // a size the weights fix: no compile can run it
    std::cout << "  " << spec << ": the model cannot take these sizes: " << e.what() << "\n";
    return false;
  }
  const std::vector<ls::Tensor> in = ls::random_inputs(at, 1);
  std::string outcome;
  std::vector<ls::Tensor> out;
  try {
    out = r.program->run(in);
    outcome = r.program->last_note;
  } catch (const ls::GuardFailed& e) {
    // As Dynamo does on a failed guard: compile again for these sizes.
    ls::LoadedModel m;
    m.graph = at;
    m.inputs = in;
    ls::PipelineOptions po = options;
    po.keep_program = false;
    const ls::CompileResult again = ls::run_pipeline(m, po);
    if (!again.error.empty()) throw std::runtime_error(e.what() + std::string("; the recompile failed: ") + again.error);
    out = again.outputs;
    outcome = std::string(e.what()) + "; recompiled (" + std::to_string(static_cast<int>(again.compile_ms)) + " ms)";
  }
  std::vector<double> runs;  // the median of 10 runs (each binds its inputs and allocates its buffers)
  for (int k = 0; k < 10 && outcome.find("recompiled") == std::string::npos; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    r.program->run(in);
    runs.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(runs.begin(), runs.end());
  const double ms = runs.empty() ? 0 : runs[runs.size() / 2];
  const std::vector<ls::Tensor> ref = ls::run_reference(at, in);
  bool ok = out.size() == ref.size();
  double err = 0;
  for (size_t i = 0; ok && i < out.size(); ++i) {
    if (!out[i].defined()) continue;
    const ls::Comparison c = ls::compare(out[i], ref[i]);
    ok = c.ok;
    err = std::max(err, c.max_abs_err);
  }
  std::ostringstream line;
  line << "  " << spec << ": " << outcome;
  if (!runs.empty()) line << "; run " << std::fixed << std::setprecision(3) << ms << " ms";
  line << "; max abs err "
       << std::scientific << std::setprecision(1) << err << " vs the reference interpreter: " << (ok ? "ok" : "MISMATCH") << "\n";
  std::cout << line.str();
  return ok;
}

int compile_command(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << kUsage;
    return 2;
  }
  std::string model_path = argv[2], report, dump, trace_graph;
  std::vector<std::string> at;  // --at s0=3,s1=40: run the dynamic compile again at these sizes
  ls::LoadOptions lo;
  ls::PipelineOptions po;
  bool quiet = false, cuda_started = false;
  const std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 3; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (pipeline_option(args, i, lo, po)) continue;
    if ((a == "--report" || a == "--dump") && i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
    if (a == "--report") report = args[++i];
    else if (a == "--dump") dump = args[++i];
    else if (a == "--quiet") quiet = true;
    else if (a == "--at" && i + 1 < args.size()) at.push_back(args[++i]);
    else if (a == "--cuda-started") cuda_started = true;
    else if (a == "--graph" && i + 1 < args.size()) trace_graph = args[++i];
    else throw std::invalid_argument("unknown option '" + a + "'");
  }
  // As in the app, which keeps the driver between compiles (and as torch.compile's first call
  // finds it, started by eager code): the compile's time leaves out the driver's start.
  if (cuda_started) ls::start_device(ls::Device::cuda);
  if ((!lo.expect_grads.empty() || !lo.expect_grads64.empty() || po.sgd_lr > 0) && !po.train)
    throw std::invalid_argument("--expect-grads, --expect-grads64 and --sgd need --train");
  if (!at.empty() && (!po.dynamic || po.train || !po.run))
    throw std::invalid_argument("--at runs a dynamic inference compile at other sizes: it needs --dynamic, and no --train or --no-run");
  po.keep_program = po.keep_program || !at.empty();
  po.sass = !dump.empty();  // the SASS listing is only seen in the dumped asm stage
  po.stage_text = !dump.empty();  // so are the stages' texts and drawings
  ls::LoadedModel model;
  if (!trace_graph.empty()) {  // one Dynamo graph of a TORCH_TRACE log
    const ls::TorchTrace t = ls::read_torch_trace(model_path);
    const ls::TraceCompile* c = t.compile(trace_graph);
    if (!c) throw std::invalid_argument(model_path + ": no compile " + trace_graph + " in this trace (`lowerscope-cli trace` lists them)");
    model = ls::trace_graph_model(*c);
  } else
    model = ls::load_model(model_path, lo);
  ls::CompileResult r = ls::run_pipeline(std::move(model), po);
  if (!quiet) print_result(r);
  bool at_ok = true;
  if (!at.empty() && r.error.empty() && !r.program && !r.not_run.empty())
    std::cout << "\n--at: not run: " << r.not_run << "\n";
  if (!at.empty() && r.error.empty() && r.program) {
    std::cout << "\nrun again at other sizes (inputs random normal, checked against the reference interpreter):\n";
    for (const std::string& spec : at) {
      try {
        at_ok = run_at(r, spec, po) && at_ok;
      } catch (const std::exception& e) {
        at_ok = false;
        std::cout << "  " << spec << ": " << e.what() << "\n";
      }
    }
  }
  if (!report.empty()) {
    FILE* f = std::fopen(report.c_str(), "w");
    if (!f) throw std::runtime_error(report + ": cannot write the report");
    const std::string j = ls::report_json(r);
    std::fwrite(j.data(), 1, j.size(), f);
    std::fclose(f);
  }
  if (!dump.empty()) write_dump_with_html(r, dump);
  if (!r.error.empty()) {
    std::cerr << "lowerscope-cli: stage '" << r.error_stage << "' failed: " << r.error << '\n';
    return r.error_stage == "run" && ls::is_kernel_fault(r.error) ? 3 : 2;
  }
  if (!r.not_run.empty()) {
    std::cout << "\nnot run: " << r.not_run << '\n';
    return 0;
  }
  if (!r.check.ok && po.run) {
    std::cerr << "lowerscope-cli: the compiled model's output does not match:\n";
    for (const auto& c : r.check.outputs)
      if (!c.cmp.ok) std::cerr << "  vs " << c.against << ": " << c.cmp.why << '\n';
    for (const auto& c : r.check.reference)
      if (!c.cmp.ok) std::cerr << "  vs " << c.against << ": " << c.cmp.why << '\n';
    for (const auto& c : r.check.gradients)
      if (!c.cmp.ok) std::cerr << "  gradient of " << c.input << " vs " << c.against << ": " << c.cmp.why << '\n';
    return 1;
  }
  return at_ok ? 0 : 1;
}

// Two compiles of one model (the right one with --right's options added) or two stages of one
// compile, diffed: graph nodes matched by provenance, kernels by what they cover, text by lines.
int diff_command(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << kUsage;
    return 2;
  }
  const std::vector<std::string> args(argv, argv + argc);
  ls::LoadOptions lo;
  ls::PipelineOptions left, right;
  std::string stage_a = "fused", stage_b, right_opts;
  for (size_t i = 3; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (pipeline_option(args, i, lo, left)) continue;
    if (i + 1 >= args.size()) throw std::invalid_argument("unknown option '" + a + "' (or it needs a value)");
    if (a == "--stage") stage_a = args[++i];
    else if (a == "--stages") {
      const auto v = split(args[++i], ',');
      if (v.size() != 2) throw std::invalid_argument("--stages takes two stage names: A,B");
      stage_a = v[0], stage_b = v[1];
    } else if (a == "--right") right_opts = args[++i];
    else throw std::invalid_argument("unknown option '" + a + "'");
  }
  if (stage_b.empty()) stage_b = stage_a;
  right = left;
  ls::LoadOptions rlo = lo;
  std::vector<std::string> extra{"", "", ""};
  for (const auto& w : split(right_opts, ' ')) extra.push_back(w);
  for (size_t i = 3; i < extra.size(); ++i)
    if (!pipeline_option(extra, i, rlo, right)) throw std::invalid_argument("--right: unknown option '" + extra[i] + "'");
  const ls::LoadedModel model = ls::load_model(args[2], lo);
  const ls::CompileResult ra = ls::run_pipeline(model, left);
  const ls::CompileResult rb = right_opts.empty() ? ra : ls::run_pipeline(model, right);
  for (const ls::CompileResult* r : {&ra, &rb})
    if (!r->error.empty()) throw std::runtime_error("stage '" + r->error_stage + "' failed: " + r->error);
  std::cout << "left:  " << stage_a << "\nright: " << stage_b << (right_opts.empty() ? "" : " with " + right_opts) << "\n"
            << ls::diff_report(ra, stage_a, rb, stage_b);
  return 0;
}

// The compiled model as a package that builds with CMake and runs without Lowerscope.
int export_command(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << kUsage;
    return 2;
  }
  const std::vector<std::string> args(argv, argv + argc);
  ls::LoadOptions lo;
  ls::PipelineOptions po;
  std::string out;
  for (size_t i = 3; i < args.size(); ++i) {
    if (pipeline_option(args, i, lo, po)) continue;
    if (args[i] == "--out" && i + 1 < args.size()) out = args[++i];
    else throw std::invalid_argument("unknown option '" + args[i] + "'");
  }
  if (out.empty()) throw std::invalid_argument("export needs --out DIR");
  const ls::CompileResult r = ls::run_pipeline(ls::load_model(args[2], lo), po);
  if (!r.error.empty()) throw std::runtime_error("stage '" + r.error_stage + "' failed: " + r.error);
  const ls::Package p = ls::export_package(r, out);
  std::cout << p.summary << "\n";
  for (const auto& f : p.files) std::cout << "  " << f << "\n";
  return 0;
}

int run_command(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string path = argv[2];
  std::string report;
  bool quiet = false;
  ls::ScriptOptions o;
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--report") report = value();
    else if (a == "--device") o.device = ls::device_name(ls::parse_device(value()));
    else if (a == "--quiet") quiet = true;
    else throw std::invalid_argument("unknown option '" + a + "'");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read the script");
  std::stringstream source;
  source << in.rdbuf();
  if (!quiet) o.on_output = [](const std::string& s) { std::cout << s << std::flush; };
  const ls::ScriptRun r = ls::run_script(source.str(), path, o);
  if (!quiet) {
    std::cout << "\n---- compile log: " << r.graphs.size() << " graph(s), " << r.breaks.size() << " graph break(s), "
              << r.recompiles << " recompile(s) ----\n";
    for (const ls::CapturedGraph& g : r.graphs) {
      std::cout << "\n[graph " << g.id << "] " << g.function << " at " << g.location << "  (" << g.reason
                << (g.train ? "; training step" : "") << "; " << g.calls << " call(s))\n";
      if (g.dynamic) {
        std::cout << "  dynamic shapes: one compile ran at sizes";
        for (const auto& sz : g.sizes) std::cout << ' ' << sz;
        std::cout << " (the first tensor argument's)\n";
      }
      if (g.result) {
        int generated = 0, externs = 0;
        for (const auto& k : g.result->kernels) (k.kind == ls::KernelKind::extern_call ? externs : generated)++;
        std::cout << "  compiled: " << generated << " kernel(s), " << externs << " library call(s), " << std::fixed
                  << std::setprecision(1) << g.result->compile_ms << " ms; check vs reference: "
                  << (g.result->check.ok ? "ok" : "FAILED") << '\n';
      }
      std::cout << "  guards:\n";
      for (const auto& x : g.guards) std::cout << "    " << x << '\n';
      std::cout << g.graph_text;
    }
    for (const ls::GraphBreak& b : r.breaks)
      std::cout << "\n[graph break] in " << b.function << " at " << b.location << ": " << b.reason << "\n    " << b.code << '\n';
  }
  if (!report.empty()) {
    std::ofstream f(report);
    if (!f) throw std::runtime_error(report + ": cannot write the report");
    f << ls::script_report_json(r);
  }
  if (!r.ok) {
    std::cerr << r.error;
    return 2;
  }
  for (const ls::CapturedGraph& g : r.graphs)
    if (g.result && !g.result->check.ok) {
      std::cerr << "lowerscope-cli: graph " << g.id << " (" << g.function << ") does not match the reference\n";
      return 1;
    }
  return 0;
}

// A TORCH_TRACE log: frames, graphs (PyTorch's stages, ours), breaks, recompiles, failures, time.
void print_trace(const ls::TorchTrace& t, const std::string& graph) {
  std::cout << "trace: " << t.path << "  (" << t.records << " records, " << t.lines << " lines)\n";
  std::cout << "\nframes:\n";
  for (const ls::TraceFrame& f : t.frames) {
    std::cout << "  frame " << f.frame_id << ": " << (f.name.empty() ? "?" : f.name) << "  (compiles";
    for (const auto& c : f.compiles) std::cout << ' ' << c;
    std::cout << ")\n";
    // The user's frames: the last few of the stack (the first ones are the interpreter's).
    const size_t from = f.stack.size() > 3 ? f.stack.size() - 3 : 0;
    for (size_t i = from; i < f.stack.size(); ++i)
      std::cout << "      " << std::filesystem::path(f.stack[i].file).filename().string() << ':' << f.stack[i].line << " in "
                << f.stack[i].name << '\n';
  }
  std::cout << "\ngraphs:\n";
  for (const ls::TraceCompile& c : t.compiles) {
    std::string stages;
    for (const auto& s : c.stages()) stages += (stages.empty() ? "" : ", ") + s;
    std::cout << "  [" << c.id() << "] " << std::left << std::setw(28) << (c.name.empty() ? "?" : c.name) << std::right
              << " stages: " << (stages.empty() ? "none" : stages) << '\n';
    std::cout << "        inductor: " << c.inductor_kernels() << " kernel(s)";
    if (c.ours.attempted)
      std::cout << "   ours" << (c.ours.train ? " (training step)" : "") << ": " << c.ours.kernels << " kernel(s), " << c.ours.library_calls << " library call(s), check "
                << (c.ours.ok ? "ok" : !c.ours.not_run.empty() ? "not run (" + c.ours.not_run + ")" : "FAILED")
                << (c.ours.error.empty() ? "" : " (" + c.ours.error.substr(0, 200) + ")");
    else if (!c.dynamo_graph.empty())
      std::cout << "   ours: not compiled";
    if (c.attempt > 0) std::cout << "   restarted " << c.attempt << "x";
    std::cout << '\n';
  }
  std::cout << "\ngraph breaks (" << t.graph_breaks.size() << ", de-duplicated):\n";
  for (const ls::TraceGraphBreak& b : t.graph_breaks) {
    std::cout << "  " << (b.file.empty() ? "?" : std::filesystem::path(b.file).filename().string() + ":" + std::to_string(b.line)) << "  "
              << b.reason << "  (" << b.count << "x, in";
    for (const auto& c : b.compiles) std::cout << ' ' << c;
    std::cout << ")\n";
    if (!b.explanation.empty()) std::cout << "      " << b.explanation << '\n';
    if (!b.code.empty()) std::cout << "      > " << b.code << '\n';
  }
  std::cout << "\nrecompiles (" << t.recompiles.size() << "):\n";
  for (const ls::TraceRecompile& r : t.recompiles)
    for (const auto& why : r.reasons) std::cout << "  [" << r.compile_id << "] " << r.name << ": " << why << '\n';
  std::cout << "\nfailures (" << t.failures.size() << "):\n";
  for (const ls::TraceFailure& f : t.failures) {
    std::cout << "  [" << f.compile_id << "] " << f.name << ": " << f.fail_type << ": " << f.summary
              << (f.user_frame.empty() ? "" : "  at " + f.user_frame) << '\n';
    if (!f.explanation.empty()) std::cout << "      " << f.explanation << '\n';
  }
  if (!t.phases.empty()) {
    std::cout << "\ncompile time by phase (chromium events, ms):\n";
    for (size_t i = 0; i < t.phases.size() && i < 12; ++i)
      std::cout << "  " << std::left << std::setw(40) << t.phases[i].first << std::right << std::setw(10) << std::fixed
                << std::setprecision(1) << t.phases[i].second << '\n';
  }
  if (!graph.empty()) {
    const ls::TraceCompile* c = t.compile(graph);
    if (!c) throw std::invalid_argument("no compile " + graph + " in this trace");
    std::cout << "\n---- [" << c->id() << "] " << c->name << " ----\n";
    for (const auto& s : c->stack) std::cout << "  " << s.file << ':' << s.line << " in " << s.name << '\n';
    std::cout << "\nDynamo graph:\n" << c->dynamo_graph << "\n\nguards:\n" << c->guards << '\n';
    for (const auto& oc : c->output_code) {
      std::cout << "\nInductor kernels (" << (oc.aot_id.empty() ? "output code" : oc.aot_id) << "):\n";
      for (const ls::TraceKernel& k : oc.kernels) {
        std::string nodes;
        for (const auto& n : k.source_nodes) nodes += (nodes.empty() ? "" : ", ") + n;
        std::cout << "  " << std::left << std::setw(48) << k.name << std::right << ' ' << k.kind << "  covers [" << nodes << "]\n";
      }
    }
    if (c->ours.attempted) {
      std::cout << "\nour kernels" << (c->ours.ok ? "" : " (" + c->ours.error + ")") << ":\n";
      for (const ls::TraceKernel& k : c->ours.kernel_list) {
        std::string nodes;
        for (const auto& n : k.source_nodes) nodes += (nodes.empty() ? "" : ", ") + n;
        std::cout << "  " << std::left << std::setw(48) << k.name << std::right << ' ' << k.kind << "  covers [" << nodes << "]\n";
      }
    }
    if (!c->output_code.empty())
      std::cout << "\nInductor's kernels against ours, by Dynamo node (--diff-inductor):\n"
                << ls::kernel_map_text(ls::map_trace_kernels(*c, c->ours.kernel_list, c->ours.attempted && !c->ours.kernel_list.empty()));
  }
  if (!t.warnings.empty()) {
    std::cout << "\nproblems in the log (" << t.warnings.size() << "):\n";
    for (const ls::TraceWarning& w : t.warnings)
      std::cout << "  " << (w.line ? "line " + std::to_string(w.line) + ": " : "") << w.what << '\n';
  }
}

int trace_command(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << kUsage;
    return 2;
  }
  const std::vector<std::string> args(argv, argv + argc);
  std::string report, graph;
  bool compile = true, quiet = false, diff_inductor = false;
  ls::PipelineOptions po;
  for (size_t i = 3; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
      return args[++i];
    };
    if (a == "--report") report = value();
    else if (a == "--device") po.device = ls::parse_device(value());
    else if (a == "--graph") graph = value();
    else if (a == "--no-compile") compile = false;
    else if (a == "--quiet") quiet = true;
    else if (a == "--diff-inductor") diff_inductor = true;
    else throw std::invalid_argument("unknown option '" + a + "'");
  }
  ls::TorchTrace t = ls::read_torch_trace(args[2]);
  if (!graph.empty() && !t.compile(graph)) throw std::invalid_argument("no compile " + graph + " in this trace");
  if (compile) ls::compile_trace_graphs(t, po);
  if (diff_inductor) {  // only the kernel maps: of --graph, else of every graph with Inductor's code
    for (const ls::TraceCompile& c : t.compiles) {
      if ((!graph.empty() && t.compile(graph) != &c) || (graph.empty() && c.output_code.empty())) continue;
      std::cout << "[" << c.id() << "] " << (c.name.empty() ? "?" : c.name) << ": ";
      if (c.output_code.empty()) std::cout << "no Inductor output code in the trace\n";
      else std::cout << ls::kernel_map_text(ls::map_trace_kernels(c, c.ours.kernel_list, c.ours.attempted && !c.ours.kernel_list.empty()));
    }
  } else if (!quiet) {
    print_trace(t, graph);
  }
  if (!report.empty()) {
    std::ofstream f(report);
    if (!f) throw std::runtime_error(report + ": cannot write the report");
    f << ls::trace_report_json(t);
  }
  for (const ls::TraceCompile& c : t.compiles)
    if (c.ours.attempted && !c.ours.ok && c.ours.not_run.empty()) {
      std::cerr << "lowerscope-cli: graph [" << c.id() << "] (" << c.name << "): " << c.ours.error << '\n';
      return 1;
    }
  return 0;
}

// A capture folder (python/lowerscope): each graph compiled on its example inputs, checked against
// PyTorch's outputs; breaks, recompiles and failures as logged.
int capture_command(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << kUsage;
    return 2;
  }
  const std::vector<std::string> args(argv, argv + argc);
  std::string report;
  bool compile = true, quiet = false;
  ls::PipelineOptions po;
  for (size_t i = 3; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
      return args[++i];
    };
    if (a == "--report") report = value();
    else if (a == "--device") po.device = ls::parse_device(value());
    else if (a == "--no-compile") compile = false;
    else if (a == "--quiet") quiet = true;
    else throw std::invalid_argument("unknown option '" + a + "'");
  }
  const ls::Capture cap = ls::read_capture(args[2]);
  const std::vector<ls::CaptureCompile> ours = compile ? ls::compile_capture_graphs(cap, po) : std::vector<ls::CaptureCompile>{};
  if (!quiet) {
    std::cout << "capture: " << cap.path << "  (torch " << (cap.torch_version.empty() ? "?" : cap.torch_version) << ", "
              << cap.graphs.size() << " graph(s))\n\ngraphs:\n";
    for (size_t i = 0; i < cap.graphs.size(); ++i) {
      const ls::CaptureGraph& g = cap.graphs[i];
      std::cout << "  [" << (g.compile_id.empty() ? "-" : g.compile_id) << "] " << std::left << std::setw(24)
                << (g.name.empty() ? "?" : g.name) << std::right << ' ' << g.file << (g.train ? "  (training step)" : "")
                << (g.guards.empty() ? "" : "  guards") << '\n';
      if (!g.error.empty()) std::cout << "        error: " << g.error << '\n';
      if (i >= ours.size()) continue;
      const ls::CaptureCompile& c = ours[i];
      std::cout << "        inputs: " << (c.inputs_from.empty() ? "-" : c.inputs_from) << '\n';
      std::cout << "        ours: " << c.ours.kernels << " kernel(s), " << c.ours.library_calls << " library call(s), check "
                << (c.ours.ok ? "ok" : !c.ours.not_run.empty() ? "not run (" + c.ours.not_run + ")" : "FAILED")
                << ", against PyTorch's outputs " << (c.against_pytorch ? (c.pytorch_ok ? "ok" : "FAILED") : "not compared")
                << (c.ours.error.empty() ? "" : " (" + c.ours.error.substr(0, 200) + ")") << '\n';
    }
    std::cout << "\ngraph breaks (" << cap.graph_breaks.size() << "):\n";
    for (const ls::CaptureGraphBreak& b : cap.graph_breaks)
      std::cout << "  [" << b.compile_id << "] " << std::filesystem::path(b.user_frame).filename().string() << "  " << b.reason << '\n'
                << (b.explanation.empty() ? "" : "      " + b.explanation + "\n");
    std::cout << "\nrecompiles:\n";
    for (const ls::CaptureGraph& g : cap.graphs)
      for (const auto& why : g.recompile_reasons) std::cout << "  [" << g.compile_id << "] " << g.name << ": " << why << '\n';
    std::cout << "\nfailures (" << cap.failures.size() << "):\n";
    for (const ls::CaptureFailure& f : cap.failures) {
      const std::string first = f.reason.substr(0, f.reason.find('\n'));
      std::cout << "  [" << f.compile_id << "] " << f.name << ": " << f.fail_type << ": " << first
                << (f.user_frame.empty() ? "" : "  at " + std::filesystem::path(f.user_frame).filename().string()) << '\n';
    }
    if (!cap.warnings.empty()) {
      std::cout << "\nproblems in the manifest (" << cap.warnings.size() << "):\n";
      for (const auto& w : cap.warnings) std::cout << "  " << w << '\n';
    }
  }
  if (!report.empty()) {
    std::ofstream f(report);
    if (!f) throw std::runtime_error(report + ": cannot write the report");
    f << ls::capture_report_json(cap, ours);
  }
  for (size_t i = 0; i < ours.size(); ++i)
    if (!ours[i].ours.ok && ours[i].ours.not_run.empty()) {
      std::cerr << "lowerscope-cli: " << cap.graphs[i].file << " (" << cap.graphs[i].name << "): " << ours[i].ours.error << '\n';
      return 1;
    }
  return 0;
}

}  // namespace

// `ops --core`: PyTorch's Core ATen overloads, each with what we do with it: an op of the table
// (its kind), or why not. Exit 0 when every one is covered.
int core_aten_coverage() {
  std::map<std::string_view, std::string_view> why;
  for (const auto& [name, reason] : ls::core_aten_ops_not_in_table()) why[name] = reason;
  int in_table = 0, missing = 0;
  for (std::string_view name : ls::pytorch_core_aten_ops()) {
    const ls::OpDef* op = ls::find_op(name);
    std::string what;
    if (op && op->in(ls::level::core_aten)) {
      ++in_table;
      const char* kinds[] = {"pointwise", "reduction", "view", "composite", "library call", "getitem"};
      what = kinds[static_cast<int>(op->kind)];
      if (op->kind == ls::OpKind::composite) what += " (decomposes)";
      bool always = false;
      if (const char* how = ls::generated_form(*op, &always)) what = std::string("generated code (") + how + ")" + (always ? "" : "; else a library call");
    } else if (auto w = why.find(name); w != why.end()) {
      what = "not an op of the table: " + std::string(w->second);
    } else {
      ++missing;
      what = "MISSING";
    }
    std::cout << std::left << std::setw(52) << name << ' ' << what << '\n';
  }
  std::cout << "\n" << in_table << " of " << ls::pytorch_core_aten_ops().size() << " Core ATen overloads (PyTorch 2.11, torch.Tag.core) are ops of the table, "
            << why.size() << " are handled otherwise, " << missing << " missing\n";
  return missing ? 1 : 0;
}

// --in-process and --time-limit S, wherever they are: the choice of where CPU kernels run
// (exec/isolated_run.h), taken out of argv for the commands.
void take_isolation_options(int& argc, char** argv) {
  ls::IsolationOptions iso;
  const char* env = std::getenv("LOWERSCOPE_IN_PROCESS");
  iso.enabled = !(env && *env && std::string(env) != "0");
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--in-process") {
      iso.enabled = false;
    } else if (a == "--time-limit") {
      char* end = nullptr;
      iso.time_limit_s = i + 1 < argc ? std::strtod(argv[i + 1], &end) : 0;
      if (i + 1 >= argc || end == argv[i + 1] || *end || !(iso.time_limit_s > 0))
        throw std::invalid_argument("--time-limit takes a positive number of seconds");
      ++i;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  argv[argc] = nullptr;
  ls::set_cpu_isolation(iso);
}

int main(int argc, char** argv) {
  try {
    take_isolation_options(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "lowerscope-cli: " << e.what() << '\n';
    return 2;
  }
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  try {
    if (cmd == "compile") return compile_command(argc, argv);
    if (cmd == "run") return run_command(argc, argv);
    if (cmd == "trace") return trace_command(argc, argv);
    if (cmd == "capture") return capture_command(argc, argv);
    if (cmd == "diff") return diff_command(argc, argv);
    if (cmd == "export") return export_command(argc, argv);
    if (cmd == "stages") {
      const bool train = argc > 2 && std::string(argv[2]) == "--train";
      for (const auto& s : ls::stage_names(train)) std::cout << s << '\n';
      return 0;
    }
    if (cmd == "ops") {
      if (argc > 2 && std::string(argv[2]) == "--core") return core_aten_coverage();
      for (const auto& op : ls::all_ops()) std::cout << std::left << std::setw(34) << op.name << ' ' << op.schema << '\n';
      return 0;
    }
    std::cerr << "lowerscope-cli: unknown command '" << cmd << "'\n" << kUsage;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "lowerscope-cli: " << e.what() << '\n';
    return 2;
  }
}
