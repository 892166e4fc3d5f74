// CPU backend correctness: fixture graphs compiled to C++, built in-process and externally,
// run, and checked against PyTorch's outputs (float32 tolerance: |a-b| <= 1e-5 + 1e-4*|b|).
#include <cpuid.h>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <immintrin.h>

#include <cmath>
#include <complex>
#include <fstream>
#include <regex>
#include <set>
#include <thread>
#include <sstream>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "compile/cpu_compiler.h"
#include "compile/split_source.h"
#include "exec/executor.h"
#include "interp/reference.h"
#include "loop/dependencies.h"
#include "export/package.h"
#include "export/package_buffers.h"
#include "frontend/load_model.h"
#include "ops/builder.h"
#include "ops/philox.h"
#include "pipeline/pipeline.h"
#include "../fft_reference.h"
#include "../inductor_counts.h"
#include "report/html_report.h"
#include "report/report.h"
#include "sched/schedule.h"
#include "tensor/npy.h"

using namespace ls;

// The CPU's own float16 conversions (F16C), the independent reference for ours.
__attribute__((target("f16c"))) static uint16_t hardware_f16(float f) { return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT); }
__attribute__((target("f16c"))) static float hardware_f16_to_float(uint16_t h) { return _cvtsh_ss(h); }

// The library calls' shared headers as the app embedded them (core/embed.cmake).
extern const char kRuntimeCpu[];
extern const char kRuntimeCuda[];

namespace {
std::string data(const std::string& rel) { return std::string(LS_TEST_DATA) + "/" + rel; }

CompileResult compile_fixture(const std::string& graph, int inputs, PipelineOptions o = {}) {
  LoadOptions lo;
  const std::string dir = graph.substr(0, graph.find('/'));
  for (int i = 0; i < inputs; ++i) lo.inputs.push_back(data(dir + "/in" + std::to_string(i) + ".npy"));
  o.timing_budget_ms = 20;
  return run_pipeline(load_model(data(graph), lo), o);
}
// A graph as PyTorch prints it (print_readable), compiled on `inputs` (empty: the loader's) by the
// in-process JIT or the external compiler.
// A graph given as FX text, loaded as a file holding it is (its inputs drawn at random).
LoadedModel load_graph_text(const std::string& text) {
  QTemporaryDir dir;
  const std::string path = dir.filePath("graph.txt").toStdString();
  std::ofstream(path) << text;
  return load_model(path);
}
CompileResult compile_graph_text(const std::string& text, std::vector<Tensor> inputs, bool external) {
  PipelineOptions o;
  o.external_compiler = external;
  o.timing_budget_ms = 2;
  LoadedModel m = load_graph_text(text);
  if (!inputs.empty()) m.inputs = std::move(inputs);
  return run_pipeline(m, o);
}
// The compile paths this build has: the external compiler, and the in-process JIT where built.
std::vector<bool> compile_paths() { return have_clang_jit() ? std::vector<bool>{false, true} : std::vector<bool>{true}; }
// A graph compiled (inference or its training step) and checked against the reference
// interpreter's own kernels; returns how many of its kernels are library calls whose name holds
// `library` (the forward's and, training, the backward's).
int library_calls_matching_reference(const std::string& path, bool train, const std::string& library) {
  PipelineOptions o;
  o.train = train;
  o.timing_budget_ms = 5;
  const CompileResult r = run_pipeline(load_model(path), o);
  if (!r.error.empty()) throw std::runtime_error(r.error);
  if (r.check.reference.empty()) throw std::runtime_error("no output was checked against the reference interpreter");
  for (const OutputCheck& c : r.check.reference)
    if (!c.cmp.ok) throw std::runtime_error(c.against + ": " + c.cmp.why);
  if (!r.check.ok) throw std::runtime_error("the check failed");
  int calls = 0;
  for (const KernelReport& k : r.kernels) calls += k.kind == KernelKind::extern_call && k.name.find(library) != std::string::npos;
  return calls;
}
// Builds an exported package with CMake alone and runs its runner (3 timed runs); returns what the
// runner printed, or throws with the step that failed and its output.
std::string build_and_run_package(const QString& pkg) {
  QProcess p;
  p.setWorkingDirectory(pkg);
  auto step = [&](const QString& program, const QStringList& args, int ms) {
    p.start(program, args);
    const bool finished = p.waitForFinished(ms);
    const QByteArray said = p.readAllStandardOutput() + p.readAllStandardError();
    if (!finished || p.exitCode() != 0)
      throw std::runtime_error((program + " " + args.join(' ')).toStdString() + " failed:\n" + said.toStdString());
    return said.toStdString();
  };
  step("cmake", {"-S", ".", "-B", "build"}, 120000);
  step("cmake", {"--build", "build"}, 300000);
  return step(pkg + "/build/run_model", {"--repeat", "3"}, 120000);
}
// Exports `r` as a package in `dir`, builds and runs it, and checks its outputs against the
// reference interpreter's; returns its summary and its model.cpp, or throws saying what failed.
std::pair<std::string, std::string> export_build_and_check(const CompileResult& r, const QTemporaryDir& dir) {
  const std::string pkg = dir.filePath("package").toStdString();
  const Package p = export_package(r, pkg);
  build_and_run_package(QString::fromStdString(pkg));
  for (size_t i = 0; i < r.reference_outputs.size(); ++i) {
    const Comparison c = compare(load_npy(pkg + "/outputs/out" + std::to_string(i) + ".npy"), r.reference_outputs[i]);
    if (!c.ok) throw std::runtime_error("the package's out" + std::to_string(i) + ": " + c.why);
  }
  std::stringstream runner;
  runner << std::ifstream(pkg + "/model.cpp").rdbuf();
  return {p.summary, runner.str()};
}
}  // namespace

class TestCpu : public QObject {
  Q_OBJECT
 private slots:

  // An exported package builds with CMake alone and its runner reproduces PyTorch's out.npy, and
  // for a training step (the tangent, ones, in data/; outputs the forward's, then every gradient)
  // the input's gradient too, grad_in0.npy: both compared here, independently of the runner's own
  // check.
  void testExportedPackageBuildsAndRuns_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<bool>("train");
    QTest::newRow("cifar_net (convolution, addmm)") << "cifar_net" << false;
    QTest::newRow("res_block (convolution, batch norm)") << "res_block" << false;
    QTest::newRow("mlp train (matrix multiplies forward and backward)") << "mlp" << true;
    QTest::newRow("res_block train (convolution backward: im2col, col2im)") << "res_block" << true;
  }
  void testExportedPackageBuildsAndRuns() {
    QFETCH(QString, model);
    QFETCH(bool, train);
    QTemporaryDir dir;
    const QString pkg = dir.filePath("pkg");
    QStringList args = {"export", QString(LS_TEST_DATA) + "/models/" + model + "/model.pt2", "--out", pkg};
    if (train) args << "--train";
    QProcess p;
    p.start(LS_CLI, args);
    QVERIFY(p.waitForFinished(600000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    for (const char* f : {"kernels.cpp", "model.cpp", "runtime.h", "CMakeLists.txt", "README.md", "data/x.npy"})
      QVERIFY2(QFile::exists(pkg + "/" + f), f);
    // The output, and for a training step the input's gradient (the weights' have no file).
    const QStringList expected = QDir(pkg + "/expected").entryList({"out*.npy"}, QDir::Files, QDir::Name);
    QCOMPARE(expected.size(), train ? 2 : 1);
    QCOMPARE(expected[0], QString("out0.npy"));
    std::string said;
    try {
      said = build_and_run_package(pkg);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    for (const QString& e : expected)
      QVERIFY2(said.find("vs expected/" + e.toStdString()) != std::string::npos, said.c_str());
    const std::string models = std::string(LS_TEST_DATA) + "/models/" + model.toStdString() + "/";
    const Comparison out = compare(load_npy((pkg + "/outputs/out0.npy").toStdString()), load_npy(models + "out.npy"));
    QVERIFY2(out.ok, out.why.c_str());
    if (train) {
      const Comparison grad = compare(load_npy((pkg + "/outputs/" + expected[1]).toStdString()), load_npy(models + "grad_in0.npy"));
      QVERIFY2(grad.ok, grad.why.c_str());
    }
  }

  // Training-step packages against the reference interpreter's run of the joint graph on the same
  // inputs, every output: attention's backward in the package runtime (causal, 256 positions: the
  // output, then the gradients of q, k and v's inputs), and the MLP's step with its SGD update (the
  // output, the gradients, then every parameter updated); a step compiled with dynamic shapes,
  // whose kernels take their sizes.
  void testExportedStepMatchesReference_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<double>("sgd");
    QTest::addColumn<QString>("runtime");  // what the runner must call
    QTest::addColumn<int>("outputs");
    QTest::addColumn<bool>("dynamic");
    QTest::addColumn<QString>("dtype");  // empty: the model's own; else --dtype's (model.to(dtype))
    QTest::newRow("attention backward") << "stages/extra/attention_long.txt" << 0.0 << "lsrt::AttentionBackward" << 4 << false << QString();
    QTest::newRow("mlp with its SGD update") << "models/mlp/model.pt2" << 0.1 << "lsrt::addmm" << 10 << false << QString();
    // bfloat16 buffers: two bytes an element in the runner, float32 in the package's .npy files
    // (which have no bfloat16: the CUDA runner's upload overran its buffer, twice its size);
    // float16 as numpy's f2. The MLP's half products run on float32 copies, rounded once (they
    // were refused at export: "aten.addmm.default on non-float32 operands").
    QTest::newRow("softmax step in bfloat16") << "stages/softmax/3_core_aten.txt" << 0.0 << "\"bf16\", {" << 2 << false << "bfloat16";
    QTest::newRow("softmax step in float16") << "stages/softmax/3_core_aten.txt" << 0.0 << "\"f2\", {" << 2 << false << "float16";
    QTest::newRow("mlp step in bfloat16") << "models/mlp/model.pt2" << 0.0 << "lsrt::widened(" << 6 << false << "bfloat16";
    QTest::newRow("mlp step in float16") << "models/mlp/model.pt2" << 0.0 << "lsrt::narrow_into(wy" << 6 << false << "float16";
    // kernels compiled with dynamic shapes take the sizes they run at, after their buffers
    // depthwise convolutions computed directly (strided, padded with a bias, dilated), forward and backward
    QTest::newRow("depthwise convolutions") << "stages/extra/depthwise_conv.txt" << 0.0 << "lsrt::Conv" << 6 << false << QString();
    QTest::newRow("layer norm + GELU step, dynamic shapes") << "stages/layernorm_gelu/3_core_aten.txt" << 0.0 << "int64_t sizes[] = {" << 6 << true << QString();
    // default mode's GEMM template for its 2048x256 @ 256x1024 forward product (AVX-512)
    if (gemm_vector_width() == 16)
      QTest::newRow("layer norm + GELU step, its product a GEMM template") << "stages/layernorm_gelu/3_core_aten.txt" << 0.0
                                                                          << "ls_gemm_extern_addmm_1(" << 6 << false << QString();
  }
  void testExportedStepMatchesReference() {
    QFETCH(QString, model);
    QFETCH(double, sgd);
    QFETCH(QString, runtime);
    QFETCH(int, outputs);
    QFETCH(bool, dynamic);
    QFETCH(QString, dtype);
    PipelineOptions o;
    o.train = true;
    o.dynamic = dynamic;
    if (!dtype.isEmpty()) o.dtype = *dtype_from_name(dtype.toStdString());
    o.sgd_lr = sgd;
    o.timing_budget_ms = 5;
    const CompileResult r = run_pipeline(load_model(data(model.toStdString())), o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QTemporaryDir dir;
    const std::string pkg = dir.filePath("step").toStdString();
    try {
      export_package(r, pkg);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    std::stringstream runner;
    runner << std::ifstream(pkg + "/model.cpp").rdbuf();
    QVERIFY(runner.str().find(runtime.toStdString()) != std::string::npos);
    try {
      build_and_run_package(QString::fromStdString(pkg));
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    int compared = 0;
    for (size_t i = 0; i < r.reference_outputs.size() && i < r.loops.outputs.size(); ++i) {
      if (r.loops.outputs[i].empty() || !r.reference_outputs[i].defined()) continue;
      const Tensor got = load_npy(pkg + "/outputs/out" + std::to_string(i) + ".npy");
      const Comparison c = compare(got, r.reference_outputs[i], tolerance_for(r.reference_outputs[i].dtype()));
      QVERIFY2(c.ok, ("out" + std::to_string(i) + ": " + c.why).c_str());
      ++compared;
    }
    QCOMPARE(compared, outputs);
  }

  // A package of a max-autotune compile keeps its cuts: each multiply's call in model.cpp names the
  // cut and the runtime's sgemm runs it (blocks of 16-row and 16-column multiples, a block a
  // thread). Cuts set here on every multiply, other than the heuristic's (3 x 1 and 1 x 3 blocks,
  // uneven); the package's outputs against the reference interpreter.
  void testExportedPackageKeepsTunedCuts() {
    PipelineOptions o;
    o.timing_budget_ms = 2;
    CompileResult r = run_pipeline(load_model(data("stages/extra/matmul_epilogues.txt")), o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    int cut = 0;
    for (const Kernel& k : r.schedule.kernels)
      if (k.is_extern) r.gemm_cuts[k.name] = cut++ % 2 ? GemmCut{1, 3} : GemmCut{3, 1};
    QCOMPARE(cut, 6);
    QTemporaryDir dir;
    std::string summary, runner;
    try {
      std::tie(summary, runner) = export_build_and_check(r, dir);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    QVERIFY2(summary.find("max-autotune's cuts of 6 matrix multiplies") != std::string::npos, summary.c_str());
    QVERIFY2(runner.find("// max-autotune: 3 x 1 blocks") != std::string::npos, runner.c_str());
    QVERIFY(std::regex_search(runner, std::regex(R"(lsrt::sgemm\([^;]*, 1, 3\);)")));
  }

  // One runtime: the library calls' algorithms are one source. A package carries
  // exec/runtime_cpu.h (CUDA: exec/runtime_cuda.h) byte for byte as the tree holds it and the app
  // compiled it, and its runtime.h includes it instead of defining any of it again. Numbers: an
  // addmm whose bias is a column ([M, 1]), broadcast along the rows as the app does, in a package
  // against the reference interpreter.
  void testPackagesCarryTheAppsLibraryCalls() {
    auto read = [](const std::string& path) {
      std::stringstream s;
      s << std::ifstream(path, std::ios::binary).rdbuf();
      return s.str();
    };
    const std::string tree = std::string(LS_TEST_DATA) + "/../../core/exec/";
    const CompileResult r = compile_graph_text(
        "class GraphModule(torch.nn.Module):\n"
        "    def forward(self, bias: \"f32[24, 1]\", a: \"f32[24, 40]\", b: \"f32[40, 48]\"):\n"
        "        addmm: \"f32[24, 48]\" = torch.ops.aten.addmm.default(bias, a, b)\n        return (addmm,)\n",
        {}, true);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QTemporaryDir dir;
    std::string summary, runner;
    try {
      std::tie(summary, runner) = export_build_and_check(r, dir);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    QVERIFY2(runner.find("lsrt::addmm(") != std::string::npos, runner.c_str());
    const std::string pkg = dir.filePath("package").toStdString();
    const std::string carried = read(pkg + "/runtime_cpu.h");
    QCOMPARE(carried, std::string(kRuntimeCpu));
    QCOMPARE(carried, read(tree + "runtime_cpu.h"));
    const std::string runtime = read(pkg + "/runtime.h");
    QVERIFY(runtime.find("#include \"runtime_cpu.h\"") != std::string::npos);
    for (const char* own : {"im2col", "softmax", "std::exp", "gemm_tiles"}) QVERIFY2(runtime.find(own) == std::string::npos, own);
    if (!can_compile_for(Device::cuda)) QSKIP("no NVRTC in this build: the CUDA package's runtime_cuda.h not checked");
    PipelineOptions o;
    o.device = Device::cuda;
    o.run = false;
    const CompileResult cr = run_pipeline(load_model(data("models/cifar_net/model.pt2")), o);
    QVERIFY2(cr.error.empty(), cr.error.c_str());
    const std::string cpkg = dir.filePath("cuda").toStdString();
    try {
      export_package(cr, cpkg);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    const std::string cuda = read(cpkg + "/runtime_cuda.h");
    QCOMPARE(cuda, std::string(kRuntimeCuda));
    QCOMPARE(cuda, read(tree + "runtime_cuda.h"));
    const std::string cuda_runtime = read(cpkg + "/runtime.h");
    QVERIFY(cuda_runtime.find("#include \"runtime_cuda.h\"") != std::string::npos);
    for (const char* own : {"ls_im2col", "ls_col2im", "ls_attn_softmax", "ls_max_pool2d", "ls_copy_rows"})
      QVERIFY2(cuda_runtime.find(own) == std::string::npos, own);
  }

  // max-autotune's GEMM templates (given here on every mm and addmm rather than timed: two register
  // tiles, two grids) are written into the model's source as the multiplies' kernels, run inside
  // the app with their epilogues, and carried into an exported package, whose model.cpp calls
  // them; the app's and the package's outputs against the reference interpreter.
  void testGemmTemplatesInModelAndPackage() {
    PipelineOptions o;
    o.timing_budget_ms = 2;
    o.mode = Mode::max_autotune;
    const LoadedModel m = load_model(data("stages/extra/matmul_epilogues.txt"));
    const CompileResult plain = run_pipeline(m, PipelineOptions{});
    int n = 0;
    for (const Kernel& k : plain.schedule.kernels)
      if (k.is_extern) o.gemm_choices[k.name] = n++ % 2 ? GemmCut::of({12, 2 * gemm_vector_width(), 64, 1, 2}) : GemmCut::of({6, 4 * gemm_vector_width(), 0, 2, 1});
    QCOMPARE(n, 6);
    CompileResult r = run_pipeline(m, o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QVERIFY2(r.check.ok, r.stage("run")->text.c_str());
    for (size_t k = 0; k < r.schedule.kernels.size(); ++k) {
      if (!r.schedule.kernels[k].is_extern) continue;
      const GeneratedKernel& g = r.source.kernels[k];
      QCOMPARE(g.launcher, "ls_gemm_" + g.name);
      QCOMPARE(g.line_nodes.size(), static_cast<size_t>(g.last_line - g.first_line + 1));  // the graph's node links to them
      QCOMPARE(g.line_nodes.front(), std::make_pair(g.first_line, r.schedule.kernels[k].nodes.at(0)));
      QVERIFY2(r.kernels[k].how.rfind("template", 0) == 0, r.kernels[k].how.c_str());
      // The kernel's lines in the source are its template's.
      std::istringstream src(r.source.code);
      std::string line;
      for (int l = 1; std::getline(src, line) && l <= g.first_line; ++l)
        if (l == g.first_line) QVERIFY2(line.rfind("// " + g.launcher + ": C[", 0) == 0, line.c_str());
      if (k + 1 < r.schedule.kernels.size() && r.schedule.kernels[k + 1].epilogue) QCOMPARE(r.kernels[k + 1].how, std::string("epilogue"));
    }
    QVERIFY(r.stage("source")->text == r.source.code);
    QTemporaryDir dir;
    std::string summary, runner;
    try {
      std::tie(summary, runner) = export_build_and_check(r, dir);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    QVERIFY2(summary.find(", 6 matrix multiplies as GEMM templates in kernels.cpp") != std::string::npos, summary.c_str());
    QVERIFY2(runner.find(", max-autotune: template 12x") != std::string::npos, runner.c_str());
    QVERIFY(std::regex_search(runner, std::regex(R"(ls_gemm_\w+\([^;]*, nullptr, nullptr\);)")));
  }

  // Default mode writes a large float32 product as a GEMM template where AVX-512 is there
  // (gemm_template_default), the numbers checked against the reference interpreter; small
  // products, K over 512, dynamic compiles and --no-gemm-templates call the library.
  void testDefaultModeWritesLargeProductsAsTemplates() {
    const LoadedModel m = load_model(data("stages/layernorm_gelu/3_core_aten.txt"));
    for (bool train : {false, true}) {
      PipelineOptions o;
      o.timing_budget_ms = 2;
      o.train = train;
      const CompileResult r = run_pipeline(m, o);
      QVERIFY2(r.error.empty(), r.error.c_str());
      QVERIFY2(r.check.ok, r.stage("run")->text.c_str());
      int templates = 0;
      for (size_t k = 0; k < r.schedule.kernels.size(); ++k) {
        const Kernel& kr = r.schedule.kernels[k];
        if (!kr.is_extern) continue;
        const bool tmpl = r.kernels[k].how.rfind("template", 0) == 0;
        templates += tmpl;
        QCOMPARE(tmpl, r.gemm_cuts.count(kr.name) == 1);
        QCOMPARE(tmpl, r.source.code.find("ls_gemm_" + kr.name + "(") != std::string::npos);
        if (!tmpl) continue;
        QVERIFY2(r.kernels[k].launch.find("the default heuristic: template 12x32") != std::string::npos, r.kernels[k].launch.c_str());
        // Only the forward addmm (2048x256 @ 256x1024): the backward's products have K of 1024 and 2048.
        QCOMPARE(kr.name, std::string("extern_addmm_1"));
      }
      QCOMPARE(templates, gemm_vector_width() == 16 ? 1 : 0);
    }
    for (int variant = 0; variant < 3; ++variant) {
      PipelineOptions o;
      o.timing_budget_ms = 2;
      o.gemm_templates = variant != 0;
      o.dynamic = variant == 1;
      const CompileResult r = run_pipeline(load_model(data(variant == 2 ? "stages/mlp/3_core_aten.txt" : "stages/layernorm_gelu/3_core_aten.txt")), o);
      QVERIFY2(r.error.empty(), r.error.c_str());
      QVERIFY2(r.check.ok, r.stage("run")->text.c_str());
      QVERIFY(r.gemm_cuts.empty());
      QVERIFY(r.source.code.find("ls_gemm_") == std::string::npos);
      for (const KernelReport& k : r.kernels) QVERIFY2(k.how.find("template") == std::string::npos, k.how.c_str());
    }
  }

  // The GEMM problems read from the loop IR, on products whose operands are transposed either way
  // and with biases: every mm and addmm of the attention block's training step given a template
  // (as a tuning would leave them), the step's outputs and gradients against the reference
  // interpreter's run of the joint graph.
  void testGemmTemplatesOnTransposedProducts() {
    const LoadedModel m = load_model(data("stages/attn_block/3_core_aten.txt"));
    PipelineOptions o;
    o.train = true;
    o.run = false;
    const CompileResult plain = run_pipeline(m, o);
    QVERIFY2(plain.error.empty(), plain.error.c_str());
    PipelineOptions t = o;
    t.run = true;
    t.mode = Mode::max_autotune;
    t.timing_budget_ms = 2;
    int transposed = 0, biased = 0;
    for (const Kernel& k : plain.schedule.kernels) {
      GemmProblem problem;
      if (!k.is_extern || !gemm_problem(plain.loops.nodes.at(k.nodes.at(0)).ext, plain.loops, problem)) continue;
      transposed += problem.ta || problem.tb;
      biased += problem.bias != GemmProblem::Bias::none;
      t.gemm_choices[k.name] = GemmCut::of({8, 3 * gemm_vector_width(), 0, 2, 1});
    }
    QVERIFY2(t.gemm_choices.size() >= 10 && transposed >= 4 && biased >= 3,
             (std::to_string(t.gemm_choices.size()) + " products, " + std::to_string(transposed) + " transposed, " +
              std::to_string(biased) + " with a bias").c_str());
    const CompileResult r = run_pipeline(m, t);
    QVERIFY2(r.error.empty(), r.error.c_str());
    int templates = 0;
    for (const KernelReport& k : r.kernels) templates += k.how.rfind("template", 0) == 0;
    QCOMPARE(static_cast<size_t>(templates), t.gemm_choices.size());
    QVERIFY2(r.check.ok, r.stage("run")->text.c_str());
  }

  void testExportRefusesWhatItCannotPackage() {
    QTemporaryDir dir;
    QProcess p;
    const QString graph = dir.filePath("sort.txt");  // a library call with only a reference kernel
    {
      std::ofstream f(graph.toStdString());
      // (float64: float32, bf16 and f16 sorts have a device kernel, float64 ones stay on the host)
      f << "class GraphModule(torch.nn.Module):\n    def forward(self, w: \"f64[10, 4]\"):\n"
           "        sort = torch.ops.aten.sort.default(w)\n"
           "        getitem: \"f64[10, 4]\" = sort[0];  sort = None\n        return (getitem,)\n";
    }
    p.start(LS_CLI, {"export", graph, "--out", dir.filePath("e")});
    QVERIFY(p.waitForFinished(600000));
    QCOMPARE(p.exitCode(), 2);
    const QByteArray why = p.readAllStandardError();
    QVERIFY2(why.contains("no aten.sort.default") && why.contains("extern_sort_0") && why.contains("node sort"),
             why.constData());
    // For CUDA: a library call the app itself runs on the host has no place in a CUDA package.
    p.start(LS_CLI, {"export", graph, "--device", "cuda", "--out", dir.filePath("c")});
    QVERIFY(p.waitForFinished(600000));
    QCOMPARE(p.exitCode(), 2);
    const QByteArray cuda = p.readAllStandardError();
    QVERIFY2(cuda.contains("CUDA package runtime has no aten.sort.default") && cuda.contains("runs it on the host"),
             cuda.constData());
    QVERIFY(!QFile::exists(dir.filePath("c/model.cpp")));
  }
  void testFixturesMatchPyTorch_data() {
    QTest::addColumn<QString>("graph");
    QTest::addColumn<int>("inputs");
    QTest::addColumn<bool>("external");
    for (bool ext : {false, true}) {
      if (!ext && !have_clang_jit()) continue;
      const char* how = ext ? " (external c++)" : " (in-process clang)";
      for (const char* g : {"sincos/1_dynamo_fx_0.txt", "sincos/3_core_aten.txt", "sincos/4_prims.txt", "sincos/2_aot_forward_0.txt"})
        QTest::newRow((std::string(g) + how).c_str()) << g << 1 << ext;
      for (const char* g : {"mse_loss/1_dynamo_fx_0.txt", "mse_loss/3_core_aten.txt", "mse_loss/2_aot_forward_0.txt"})
        QTest::newRow((std::string(g) + how).c_str()) << g << 2 << ext;
    }
  }
  void testFixturesMatchPyTorch() {
    QFETCH(QString, graph);
    QFETCH(int, inputs);
    QFETCH(bool, external);
    PipelineOptions o;
    o.external_compiler = external;
    const CompileResult r = compile_fixture(graph.toStdString(), inputs, o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    const Tensor expected = load_npy(data(graph.section('/', 0, 0).toStdString() + "/out.npy"));
    const Comparison c = compare(r.outputs.at(0), expected);
    QVERIFY2(c.ok, c.why.c_str());
    QVERIFY2(r.check.ok, "the compiled outputs differ from the reference interpreter");
    // Inductor needs one kernel for each of these; so do we.
    QCOMPARE(r.schedule.kernels.size(), size_t(1));
    QCOMPARE(r.kernels.size(), size_t(1));
    QVERIFY(r.kernels[0].ms > 0);
    // Every stage of the skeleton is recorded, in order.
    std::vector<std::string> names;
    for (const Stage& s : r.stages) names.push_back(s.name);
    QCOMPARE(names, stage_names());
  }

  void testBothCompilePathsAgree() {
    if (!have_clang_jit()) QSKIP("this build has no in-process Clang");
    PipelineOptions a, b;
    b.external_compiler = true;
    const CompileResult ra = compile_fixture("mse_loss/3_core_aten.txt", 2, a);
    const CompileResult rb = compile_fixture("mse_loss/3_core_aten.txt", 2, b);
    QVERIFY(ra.error.empty() && rb.error.empty());
    QCOMPARE(ra.source.code, rb.source.code);
    const Comparison c = compare(ra.outputs[0], rb.outputs[0], Tolerance{1e-6, 1e-7});
    QVERIFY2(c.ok, c.why.c_str());
  }

  // A large source compiles in-process as several translation units at once, linked into one JIT:
  // the attention block's training step cut into as many units as it has kernels' runs (at
  // most 4), every kernel found and run, every output against the reference interpreter; and the
  // 20,000-line source of a long chain takes that path through compile_cpp on its own.
  void testInProcessCompileInUnits() {
    if (!have_clang_jit()) QSKIP("this build has no in-process Clang");
    PipelineOptions o;
    o.train = true;
    o.timing_budget_ms = 2;
    const CompileResult r = run_pipeline(load_model(data("stages/attn_block/3_core_aten.txt")), o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    std::vector<int> starts;
    for (const GeneratedKernel& k : r.source.kernels)
      if (!k.launcher.empty()) starts.push_back(k.first_line);
    const std::vector<std::string> units = split_source(r.source.code, starts, 4, "kernels.cpp");
    QVERIFY(units.size() > 1);
    std::string diag, ir, assembly;
    std::vector<std::string> objects;
    const std::unique_ptr<LoadedCode> code = clang_jit_compile(units, "-O2", diag, &ir, &assembly, &objects);
    QVERIFY2(code, diag.c_str());
    QCOMPARE(objects.size(), units.size());
    QVERIFY(assembly.find("---- unit 1 of") != std::string::npos);
    CpuExecutable exe(r.loops, r.schedule, r.source, *code);
    std::vector<Tensor> inputs = r.model.inputs;
    for (const Tensor& t : tangent_values(r.training.joint)) inputs.push_back(t);
    const std::vector<Tensor> out = exe.run(bind_inputs(r.prims, inputs));
    QCOMPARE(out.size(), r.reference_outputs.size());
    for (size_t j = 0; j < out.size(); ++j) {
      if (!out[j].defined()) continue;
      const Comparison c = compare(out[j], r.reference_outputs[j]);
      QVERIFY2(c.ok, (std::to_string(j) + ": " + c.why).c_str());
    }
    // Through compile_cpp: a source of many lines is cut by itself where there are cores for it.
    if (compile_threads() < 2) return;
    std::string chain = "class G(torch.nn.Module):\n    def forward(self, x: \"f32[16]\"):\n";
    std::string prev = "x";
    for (int i = 0; i < 3000; ++i) {
      const std::string v = "v" + std::to_string(i);
      chain += "        " + v + ": \"f32[16]\" = torch.ops.aten." + (i % 2 ? "neg" : "sigmoid") + ".default(" + prev + ")\n";
      prev = v;
    }
    chain += "        return (" + prev + ",)\n";
    QTemporaryDir dir;
    const std::string path = dir.filePath("chain.txt").toStdString();
    std::ofstream(path) << chain;
    PipelineOptions c;
    c.timing_budget_ms = 2;
    const CompileResult rc = run_pipeline(load_model(path), c);
    QVERIFY2(rc.ok(), (rc.error + " " + rc.compiler).c_str());
    QVERIFY(std::count(rc.source.code.begin(), rc.source.code.end(), '\n') >= 6000);  // two units' worth
    QVERIFY2(rc.compiler.find("units") != std::string::npos, rc.compiler.c_str());
    QVERIFY(rc.objects.size() > 1);
  }

  // The CLI end to end, in its own process (this test binary links libgomp itself, which would hide
  // the bug below): exit 0 when the model compiles, runs and matches; 2 with the reason on stderr
  // when it cannot be loaded. The external compiler's parallel kernels bring in the OpenMP runtime,
  // which unloading the kernels must not unload under its idle threads (it crashed on 16 cores).
  void testCliExitStatus() {
    QProcess cli;
    cli.start(LS_CLI, {"compile", QString(LS_TEST_DATA) + "/models/softmax/model.onnx", "--external-compiler", "--quiet"});
    QVERIFY(cli.waitForFinished(600000));
    QCOMPARE(cli.exitStatus(), QProcess::NormalExit);
    QCOMPARE(cli.exitCode(), 0);
    cli.start(LS_CLI, {"compile", QString(LS_TEST_DATA) + "/bad/garbage.onnx"});
    QVERIFY(cli.waitForFinished(600000));
    QCOMPARE(cli.exitCode(), 2);
    QVERIFY(cli.readAllStandardError().contains("garbage.onnx"));
  }

  void testGeneratedCodeShape() {
    // FileCheck-style checks of what the generator wrote.
    const CompileResult r = compile_fixture("mse_loss/3_core_aten.txt", 2);
    const std::string& src = r.source.code;
    auto check = [&](const std::string& needle) { QVERIFY2(src.find(needle) != std::string::npos, needle.c_str()); };
    check("extern \"C\" __attribute__((noinline)) void cpp_fused_");  // a kernel, called by its launcher
    check("_launch(void** a) { cpp_fused_");
    check("#pragma omp simd reduction(+:acc");  // the reduction loop is a SIMD reduction
    check("ls_sin(");
    check("/ 1000.0f");                           // mean's division fused after the loop
    QVERIFY(src.find("#include") == std::string::npos);  // no headers: fast to parse
    const CompileResult big = compile_fixture("sincos/3_core_aten.txt", 1);
    QVERIFY(big.source.code.find("#pragma omp simd") != std::string::npos);
    // Comparisons are written inside the selects that read them, never held in bool variables
    // (GCC does not vectorize cifar_net's max-pool over ReLU with them); the numbers against the
    // reference interpreter on the external compiler's path.
    PipelineOptions gcc;
    gcc.external_compiler = true;
    gcc.timing_budget_ms = 5;
    const CompileResult pool = run_pipeline(load_model(data("stages/cifar_net/3_core_aten.txt")), gcc);
    QVERIFY2(pool.error.empty(), pool.error.c_str());
    QVERIFY(pool.check.ok);
    QVERIFY(pool.source.code.find("static_cast<bool>(") == std::string::npos);
    QVERIFY(std::regex_search(pool.source.code, std::regex(R"(\(\(tmp\d+ <= 0\.0f\) \? 0\.0f : tmp\d+\))")));
    // Its outer loops count in 32 bits (every buffer and iteration under 2^30 elements).
    QVERIFY(pool.source.code.find("for (int32_t x0") != std::string::npos);
    // The external compiler's sin and cos of one value stay two vector calls (libmvec), not one
    // scalar sincosf: the library it built imports the vector variants.
    const CompileResult trig = run_pipeline(load_model(data("stages/sincos/3_core_aten.txt")), gcc);
    QVERIFY2(trig.error.empty(), trig.error.c_str());
    QVERIFY(trig.check.ok);
    std::string library;
    for (const auto& [name, bytes] : trig.objects)
      if (name == "kernels.so") library = bytes;
    QVERIFY(!library.empty());
    QVERIFY(library.find("_ZGV") != std::string::npos && library.find("v_sinf") != std::string::npos);
    QVERIFY(library.find("sincosf") == std::string::npos);
    // Size-generic code, whose sizes are arguments, counts in 64 bits.
    PipelineOptions dyn;
    dyn.dynamic = true;
    dyn.timing_budget_ms = 2;
    const CompileResult generic = run_pipeline(load_model(data("stages/softmax/3_core_aten.txt")), dyn);
    QVERIFY2(generic.error.empty(), generic.error.c_str());
    QVERIFY(generic.check.ok);
    QVERIFY(generic.source.code.find("int32_t x0") == std::string::npos && generic.source.code.find("for (int64_t x0") != std::string::npos);
  }

  // A float max or min reduction runs as lanes (an accumulator per lane of an inner SIMD loop,
  // combined after it) where the row length is a multiple of 16 or 8, so that Clang vectorizes it
  // (it leaves the compare-and-select chain scalar: softmax 2048x4096 took 12.2 ms instead of 4.9
  // on 2 cores), with a plain loop for the rest of a row; rows under 16 keep the plain loop. Max and min against the reference interpreter
  // (with rows whose largest element is at a lane's end and at the row's end), both compile paths,
  // and the in-process path's assembly holds packed compares; a NaN sticks, as in torch.
  void testMaxReductionsAsLanes_data() {
    QTest::addColumn<int>("R");
    QTest::addColumn<int>("lanes");
    QTest::newRow("512") << 512 << 16;
    QTest::newRow("24") << 24 << 8;
    QTest::newRow("100 (a tail of 4)") << 100 << 16;
    QTest::newRow("12") << 12 << 0;
  }
  void testMaxReductionsAsLanes() {
    QFETCH(int, R);
    QFETCH(int, lanes);
    const std::string shape = "f32[8, " + std::to_string(R) + "]";
    const std::string graph = "class GraphModule(torch.nn.Module):\n"
                              "    def forward(self, x: \"" + shape + "\"):\n"
                              "        amax: \"f32[8, 1]\" = torch.ops.aten.amax.default(x, [1], True)\n"
                              "        amin: \"f32[8, 1]\" = torch.ops.aten.amin.default(x, [1], True)\n"
                              "        sub: \"" + shape + "\" = torch.ops.aten.sub.Tensor(x, amax)\n"
                              "        return (amax, amin, sub)\n";
    Tensor x(DType::f32, {8, R});
    for (int64_t i = 0; i < x.numel(); ++i) x.set(i, std::sin(0.37 * static_cast<double>(i)) * 10.0);
    x.set(R - 1, 50.0);                              // row 0: the largest at the row's end (in a tail)
    x.set(R + std::min(15, R - 2), 60.0);            // row 1: at the end of the first 16 lanes
    x.set(2 * R + 7, -70.0);                         // row 2: the smallest at the end of the first 8
    // Row 3: a NaN early in the row, which sticks (as in torch and the reference interpreter).
    x.set(3 * R + 5, std::nan(""));
    for (bool ext : compile_paths()) {
      const CompileResult r = compile_graph_text(graph, {x}, ext);
      QVERIFY2(r.error.empty(), r.error.c_str());
      QVERIFY(!r.check.reference.empty());
      for (const auto& c : r.check.reference) QVERIFY2(c.cmp.ok && c.cmp.max_abs_err == 0, (c.against + ": " + c.cmp.why).c_str());
      QVERIFY(r.check.ok);
      QCOMPARE(r.outputs.at(0).get(0), 50.0);
      QCOMPARE(r.outputs.at(0).get(1), 60.0);
      QCOMPARE(r.outputs.at(1).get(2), -70.0);
      QVERIFY(std::isnan(r.outputs.at(0).get(3)) && std::isnan(r.outputs.at(1).get(3)));
      QVERIFY(!std::isnan(r.outputs.at(0).get(4)));
      const bool has_lanes = r.source.code.find("_l[" + std::to_string(lanes) + "];") != std::string::npos;
      QCOMPARE(has_lanes, lanes != 0);
      if (lanes) QVERIFY(r.source.code.find("for (int64_t r0i = 0; r0i < " + std::to_string(lanes) + "; ++r0i)") != std::string::npos);
      if (lanes && !ext && R >= 64) {  // (Clang unrolls a row of 24 whole, scalar: fine at that size)
        const Stage* a = r.stage("asm");
        QVERIFY(a);
        // Packed compares (the lanes' NaN test and order), no scalar chain
        QVERIFY2(a->text.find("cmpunordps") != std::string::npos, "no packed compare");
      }
    }
  }

  // A reduction over one long row runs on all threads as chunks of the row, each in lanes, the
  // chunks combined in order: the largest and smallest against the values themselves and the
  // reference interpreter, a NaN anywhere sticks, a sum against float64; both compile paths.
  // The half types' conversions against independent references: float16 against the CPU's own
  // conversion instruction (F16C), bfloat16 against the nearest of the two neighbouring values
  // (ties to the even one) worked out in double; at every half value and the floats beside each
  // rounding boundary. Then the generated code's conversions (the preludes' branch-free forms,
  // both compile paths) against Tensor's, at the same floats.
  void testHalfConversionsRoundToNearestEven() {
    std::vector<float> xs = {0.f, -0.f, INFINITY, -INFINITY, NAN, 65504.f, 65519.f, 65520.f, 1e-8f, 5.96e-8f, 2.98e-8f, 3e38f,
                             3.4028235e38f, -3.4028235e38f, 3.3961776e38f, 3.3961777e38f};
    for (uint32_t low : {0x7fffu, 0x8000u, 0x8001u}) {  // around the largest bfloat16's upper midpoint
      const uint32_t u = 0x7f7f0000u | low;
      float f;
      std::memcpy(&f, &u, 4);
      xs.push_back(f);
      xs.push_back(-f);
    }
    for (uint32_t h = 0; h < 0x10000; h += 3)
      for (uint32_t low : {0u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) {
        const uint32_t u = (h << 16) | low;
        float f;
        std::memcpy(&f, &u, 4);
        xs.push_back(f);
      }
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;  // cpuid, not __builtin_cpu_supports("f16c"): clang 14 lacks that name
    const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
    for (float f : xs) {
      // bfloat16
      const uint16_t b = float_to_bf16_bits(f);
      if (std::isnan(f)) {
        QVERIFY(std::isnan(bf16_bits_to_float(b)));
      } else {
        uint32_t u;
        std::memcpy(&u, &f, 4);
        const uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;
        float a, c;
        std::memcpy(&a, &lo, 4);
        std::memcpy(&c, &hi, 4);
        // beyond the largest bfloat16 the next value up is 2^128 (infinity), as IEEE rounding sees it
        const double cd = std::isinf(c) ? std::copysign(std::ldexp(1.0, 128), f) : double(c);
        const double da = std::abs(double(f) - a), dc = std::abs(double(f) - cd);
        const bool up = (u & 0xffffu) != 0 && (dc < da || (dc == da && ((lo >> 16) & 1u)));
        const float want = std::isinf(f) ? f : (up ? c : a);
        QVERIFY2(bf16_bits_to_float(b) == want || (std::isinf(want) && bf16_bits_to_float(b) == want),
                 (std::to_string(f) + " -> " + std::to_string(bf16_bits_to_float(b))).c_str());
      }
      // The package runtime's own conversions (export/package_buffers.h: a package has no
      // Lowerscope) agree with these.
      if (!std::isnan(f)) QCOMPARE(lsrt::bf16_of(f), b);
      else QVERIFY(std::isnan(lsrt::float_of_bf16(lsrt::bf16_of(f))));
      if (f16c && !std::isnan(f)) QVERIFY2(lsrt::f16_of(f) == hardware_f16(f), std::to_string(f).c_str());
      // float16
      if (f16c) {
        const uint16_t mine = float_to_f16_bits(f), hw = hardware_f16(f);
        if (std::isnan(f)) QVERIFY(std::isnan(f16_bits_to_float(mine)));
        else QVERIFY2(mine == hw, (std::to_string(f) + ": " + std::to_string(mine) + " against F16C's " + std::to_string(hw)).c_str());
        if (!std::isnan(f)) QCOMPARE(f16_bits_to_float(hw), hardware_f16_to_float(hw));
      }
    }
    // Every float16 widens as the hardware widens it.
    for (uint32_t h = 0; f16c && h < 0x10000; ++h) {
      const float mine = f16_bits_to_float(static_cast<uint16_t>(h)), hw = hardware_f16_to_float(static_cast<uint16_t>(h));
      const float rt = lsrt::float_of_f16(static_cast<uint16_t>(h));
      QVERIFY((std::isnan(rt) && std::isnan(hw)) || rt == hw);
      QVERIFY(mine == hw || (std::isnan(mine) && std::isnan(hw)));
    }
    // Generated code: x -> half -> float32, compared bit for bit with Tensor's conversions.
    const int64_t n = static_cast<int64_t>(xs.size());
    Tensor x(DType::f32, {n});
    for (int64_t i = 0; i < n; ++i) x.set(i, xs[static_cast<size_t>(i)]);
    for (const char* t : {"bf16", "f16"})
      for (bool ext : compile_paths()) {
        const std::string N = std::to_string(n), T = t == std::string("bf16") ? "torch.bfloat16" : "torch.float16";
        const CompileResult r = compile_graph_text("class GraphModule(torch.nn.Module):\n"
                                                   "    def forward(self, x: \"f32[" + N + "]\"):\n"
                                                   "        h: \"" + t + "[" + N + "]\" = torch.ops.prims.convert_element_type.default(x, " + T + ")\n"
                                                   "        y: \"f32[" + N + "]\" = torch.ops.prims.convert_element_type.default(h, torch.float32)\n"
                                                   "        return (h, y)\n",
                                                   {x}, ext);
        QVERIFY2(r.error.empty(), r.error.c_str());
        const Tensor want = cast(x, *dtype_from_short(t));
        for (int64_t i = 0; i < n; ++i) {
          const double a = r.outputs.at(1).get(i), w = want.get(i);
          QVERIFY2(a == w || (std::isnan(a) && std::isnan(w)),
                   (std::string(t) + (ext ? " external" : " jit") + ": " + std::to_string(xs[static_cast<size_t>(i)]) + " -> " +
                    std::to_string(a) + ", not " + std::to_string(w)).c_str());
          QCOMPARE(r.outputs.at(0).dtype(), *dtype_from_short(t));
        }
      }
  }

  // Float32 models run as model.to(bfloat16 / float16) would (PipelineOptions::dtype, --dtype):
  // inference and the training step, both compile paths, checked against the reference
  // interpreter (each op in float32, rounded at its output, as eager PyTorch) with the type's
  // assert_close tolerance, or torch._dynamo's float64 RMSE check beyond it; the products and
  // softmax/layer norms of the fixtures among them.
  void testHalfPrecisionModels_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<int>("dtype");
    QTest::addColumn<bool>("train");
    const std::tuple<const char*, DType, bool> rows[] = {
        {"models/mlp", DType::bf16, false}, {"models/mlp", DType::bf16, true}, {"models/mlp", DType::f16, false},
        {"models/mlp", DType::f16, true}, {"models/softmax", DType::bf16, false}, {"stages/attn_block/3_core_aten.txt", DType::bf16, true},
        {"stages/attn_block/3_core_aten.txt", DType::f16, false},
        // float16's tolerance is tight: fused code beyond it, within torch._dynamo's check
        {"stages/layernorm_gelu/3_core_aten.txt", DType::f16, false},
        // ViT's training step: its last layer norm's weight is 1, so every gradient before it is
        // 0 but for rounding; with bf16 intermediates left unrounded in fused code (the forward's
        // stored, the backward's recomputed ones differed) they were bf16 noise (RMSE 0.0076
        // against float64, eager's 3e-15)
        {"zoo/hf_vit/model.pt2", DType::bf16, true}};
    for (const auto& [m, t, train] : rows)
      QTest::newRow((std::string(m) + " " + std::string(dtype_short(t)) + (train ? " train" : "")).c_str())
          << QString(m) << static_cast<int>(t) << train;
  }
  void testHalfPrecisionModels() {
    QFETCH(QString, model);
    QFETCH(int, dtype);
    QFETCH(bool, train);
    const DType t = static_cast<DType>(dtype);
    for (bool ext : compile_paths()) {
      PipelineOptions o;
      o.dtype = t;
      o.train = train;
      o.external_compiler = ext;
      o.timing_budget_ms = 2;
      const CompileResult r = run_pipeline(load_model(data(model.toStdString())), o);
      QVERIFY2(r.error.empty(), r.error.c_str());
      QVERIFY2(r.check.ok, r.stage("run")->text.c_str());
      QCOMPARE(r.check.precision, t);
      QVERIFY(!r.check.reference.empty());
      QVERIFY(r.outputs.at(0).dtype() == t);
      QVERIFY(r.source.code.find(t == DType::bf16 ? "ls_to_bf16" : "ls_to_f16") != std::string::npos);
      // float32 expected files do not apply to the half run
      QVERIFY(r.check.outputs.empty());
      QVERIFY(r.stage("run")->text.find(std::string("tolerance: ") + (t == DType::bf16 ? "bfloat16" : "float16")) != std::string::npos);
    }
  }

  // A half-typed op rounds its value to its type in fused code too, as eager does (and the unfused
  // code, which stores it): a chain of bf16 / f16 ops fused in one kernel gives the reference
  // interpreter's values bit for bit (each op in float32, rounded at its output), both compile
  // paths. Unrounded, (x * y + 1) - 1 came out as x * y rounded once.
  void testHalfOpsRoundInFusedCode() {
    for (const char* t : {"bf16", "f16"}) {
      const DType dt = *dtype_from_short(t);
      const std::string T = t;
      const std::string graph = "class GraphModule(torch.nn.Module):\n"
                                "    def forward(self, x: \"" + T + "[1024]\", y: \"" + T + "[1024]\"):\n"
                                "        a: \"" + T + "[1024]\" = torch.ops.aten.mul.Tensor(x, y)\n"
                                "        b: \"" + T + "[1024]\" = torch.ops.aten.add.Tensor(a, 1.0)\n"
                                "        c: \"" + T + "[1024]\" = torch.ops.aten.sub.Tensor(b, 1.0)\n"
                                "        d: \"" + T + "[1024]\" = torch.ops.aten.exp.default(c)\n"
                                "        return (c, d)\n";
      Tensor x(dt, {1024}), y(dt, {1024});
      for (int64_t i = 0; i < 1024; ++i) x.set(i, std::sin(0.37 * static_cast<double>(i))), y.set(i, std::cos(0.11 * static_cast<double>(i)));
      for (bool ext : compile_paths()) {
        const CompileResult r = compile_graph_text(graph, {x, y}, ext);
        QVERIFY2(r.error.empty(), r.error.c_str());
        QVERIFY(!r.check.reference.empty());
        for (const auto& c : r.check.reference)
          QVERIFY2(c.cmp.ok && c.cmp.max_abs_err == 0, (T + (ext ? " external " : " jit ") + c.against + ": " + std::to_string(c.cmp.max_abs_err)).c_str());
        for (int64_t i = 0; i < 1024; ++i) {  // by hand: each step rounded
          const double a = round_to(dt, round_to(DType::f32, x.get(i) * y.get(i))), b = round_to(dt, round_to(DType::f32, a + 1.0)),
                       c = round_to(dt, round_to(DType::f32, b - 1.0));
          QCOMPARE(r.outputs.at(0).get(i), c);
        }
      }
    }
  }

  // An elementwise kernel over bf16 and f16 buffers is vectorized by the in-process Clang: its
  // widening is a packed shift (pslld / vpslld), not a scalar shl a element. (One-member struct
  // types for the halves once left every such loop scalar: a third of float32's speed.)
  void testHalfKernelsVectorize() {
    if (!have_clang_jit()) QSKIP("no in-process Clang in this build");
    const std::string text =
        "class G(torch.nn.Module):\n"
        "    def forward(self, x: \"f32[4096]\", y: \"f32[4096]\"):\n"
        "        a: \"f32[4096]\" = torch.ops.aten.mul.Tensor(x, y)\n"
        "        b: \"f32[4096]\" = torch.ops.aten.add.Tensor(a, 1.0)\n"
        "        return (b,)\n";
    for (DType t : {DType::bf16, DType::f16}) {
      PipelineOptions o;
      o.dtype = t;
      o.run = false;
      const CompileResult r = run_pipeline(load_graph_text(text), o);
      QVERIFY2(r.error.empty(), r.error.c_str());
      const Stage* asm_stage = r.stage("asm");
      QVERIFY(asm_stage);
      QVERIFY2(asm_stage->text.find("pslld") != std::string::npos, dtype_short(t).data());
    }
  }

  // .npy: float16 read and written as f2; bfloat16 written as float32 (exactly: .npy has none).
  void testHalfNpy() {
    QTemporaryDir dir;
    Tensor h(DType::f16, {3});
    h.set(0, 1.5), h.set(1, -65504), h.set(2, 6e-8);
    const std::string p = dir.filePath("h.npy").toStdString(), q = dir.filePath("b.npy").toStdString();
    save_npy(p, h);
    const Tensor back = load_npy(p);
    QCOMPARE(back.dtype(), DType::f16);
    for (int i = 0; i < 3; ++i) QCOMPARE(back.get(i), h.get(i));
    Tensor b(DType::bf16, {2});
    b.set(0, 3.140625), b.set(1, -1e30);
    save_npy(q, b);
    const Tensor bb = load_npy(q);
    QCOMPARE(bb.dtype(), DType::f32);
    QCOMPARE(bb.get(0), b.get(0));
    QCOMPARE(bb.get(1), b.get(1));
  }

  void testSingleRowMaxKeepsNan() {
    const std::string graph = "class GraphModule(torch.nn.Module):\n"
                              "    def forward(self, x: \"f32[300000]\"):\n"
                              "        amax: \"f32[]\" = torch.ops.aten.amax.default(x, [0])\n"
                              "        amin: \"f32[]\" = torch.ops.aten.amin.default(x, [0])\n"
                              "        return (amax, amin)\n";
    Tensor x(DType::f32, {300000});
    double lo = 1e9, hi = -1e9;
    for (int64_t i = 0; i < x.numel(); ++i) {
      x.set(i, std::sin(0.001 * static_cast<double>(i) * static_cast<double>(i % 97)) * 10.0);
      lo = std::min(lo, x.get(i));
      hi = std::max(hi, x.get(i));
    }
    x.set(299999, hi + 1.0);  // the largest in the last chunk's tail
    for (bool nan : {false, true})
      for (bool ext : compile_paths()) {
        Tensor in = x;
        if (nan) {
          in = Tensor(DType::f32, {300000});
          for (int64_t i = 0; i < x.numel(); ++i) in.set(i, x.get(i));
          in.set(1000, std::nan(""));  // in the first chunk
        }
        const CompileResult r = compile_graph_text(graph, {in}, ext);
        QVERIFY2(r.error.empty(), r.error.c_str());
        QVERIFY2(r.source.code.find("#pragma omp parallel for schedule(static)\n    for (int64_t c = 0; c < 64; ++c)") != std::string::npos,
                 r.source.code.c_str());
        for (const auto& c : r.check.reference) QVERIFY2(c.cmp.ok, (c.against + ": " + c.cmp.why).c_str());
        QVERIFY(r.check.ok);
        if (nan) {
          QVERIFY(std::isnan(r.outputs.at(0).get(0)) && std::isnan(r.outputs.at(1).get(0)));
        } else {
          QCOMPARE(r.outputs.at(0).get(0), static_cast<double>(static_cast<float>(hi + 1.0)));
          QCOMPARE(r.outputs.at(1).get(0), lo);
        }
      }
    // A sum over one long row takes the same chunks (Clang left OpenMP's reduction scalar): its
    // value against a float64 sum of the same numbers.
    double total = 0;
    for (int64_t i = 0; i < x.numel(); ++i) total += x.get(i);
    for (bool ext : compile_paths()) {
      const CompileResult r = compile_graph_text("class GraphModule(torch.nn.Module):\n"
                                                 "    def forward(self, x: \"f32[300000]\"):\n"
                                                 "        sum_1: \"f32[]\" = torch.ops.aten.sum.default(x)\n"
                                                 "        return (sum_1,)\n",
                                                 {x}, ext);
      QVERIFY2(r.error.empty(), r.error.c_str());
      QVERIFY(r.source.code.find("for (int64_t c = 0; c < 64; ++c)") != std::string::npos);
      QVERIFY(r.check.ok);
      QVERIFY2(std::abs(r.outputs.at(0).get(0) - total) <= 1e-5 * std::abs(total) + 1e-3,
               (std::to_string(r.outputs.at(0).get(0)) + " against " + std::to_string(total)).c_str());
    }
  }

  // Long float32 sums take cascade summation (codegen: ls_cascade_add, ls_pairwise_rows; as
  // PyTorch's cascade_sum and Inductor's CascadeSumHelper): a full sum of 2^22 elements (a single
  // row in chunks of lanes), a [64, 65536] row sum (scalar rows in blocks) and a column sum over
  // 65536 rows (chunks of rows added in pairs), of 0.1f everywhere and of random values in [0, 1),
  // each within a relative error bound of a float64 sum of the same float32 inputs that a
  // sequential float32 sum exceeds (computed here too, so the bound means something); a row of
  // 4096 (the threshold, as Inductor's) keeps the plain sum. Both compile paths.
  void testLongFloatSumsCascade() {
    const std::string graph = "class GraphModule(torch.nn.Module):\n"
                              "    def forward(self, x: \"f32[4194304]\", y: \"f32[64, 65536]\", z: \"f32[65536, 64]\", w: \"f32[8, 4096]\"):\n"
                              "        sum_1: \"f32[]\" = torch.ops.aten.sum.default(x)\n"
                              "        sum_2: \"f32[64]\" = torch.ops.aten.sum.dim_IntList(y, [1])\n"
                              "        sum_3: \"f32[64]\" = torch.ops.aten.sum.dim_IntList(z, [0])\n"
                              "        sum_4: \"f32[8]\" = torch.ops.aten.sum.dim_IntList(w, [1])\n"
                              "        return (sum_1, sum_2, sum_3, sum_4)\n";
    for (bool constant : {true, false}) {
      // Relative to the float64 sum. Measured (Clang, GCC): 0.1f 2.5e-6, 6.7e-7 (2.5e-6), 9.7e-6
      // (the column form's chunks of 1024 rows are plain sums); random 6.4e-8, 1.2e-7, 2.1e-7.
      // Sequential: 0.1f 4e-2, 6.2e-4, 6.2e-4; random 2.8e-6, 7.5e-6, 9.1e-6.
      const double bound = constant ? 1.5e-5 : 4e-7;
      std::mt19937 gen(7);
      std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
      auto value = [&](int64_t) { return static_cast<double>(constant ? 0.1f : uniform(gen)); };
      std::vector<Tensor> in = {Tensor(DType::f32, {4194304}), Tensor(DType::f32, {64, 65536}), Tensor(DType::f32, {65536, 64}),
                                Tensor(DType::f32, {8, 4096})};
      for (Tensor& t : in)
        for (int64_t i = 0; i < t.numel(); ++i) t.set(i, value(i));
      // Each output's elements: (input, first element, count, stride), their float64 and
      // sequential float32 sums.
      struct Sum {
        int input;
        int64_t first, count, stride;
      };
      std::vector<std::vector<Sum>> sums(4);
      sums[0].push_back({0, 0, 4194304, 1});
      for (int64_t r = 0; r < 64; ++r) sums[1].push_back({1, r * 65536, 65536, 1});
      for (int64_t c = 0; c < 64; ++c) sums[2].push_back({2, c, 65536, 64});
      for (int64_t r = 0; r < 8; ++r) sums[3].push_back({3, r * 4096, 4096, 1});
      for (bool ext : compile_paths()) {
        const CompileResult r = compile_graph_text(graph, in, ext);
        QVERIFY2(r.error.empty(), r.error.c_str());
        const std::string& src = r.source.code;
        QVERIFY2(src.find("ls_cascade_add(") != std::string::npos && src.find("ls_pairwise_rows(") != std::string::npos, src.c_str());
        const size_t short_rows = src.find("iteration (8, 4096)");
        QVERIFY(short_rows != std::string::npos);
        QVERIFY2(src.find("ls_cascade", short_rows) == std::string::npos, "a row of 4096 took the cascade");
        for (int o = 0; o < 3; ++o) {
          double worst = 0, worst_sequential = 0;
          for (size_t k = 0; k < sums[o].size(); ++k) {
            const Sum& s = sums[o][k];
            double exact = 0;
            float sequential = 0;
            for (int64_t i = 0; i < s.count; ++i) {
              const float v = static_cast<float>(in[s.input].get(s.first + i * s.stride));
              exact += v;
              sequential += v;
            }
            worst = std::max(worst, std::abs(r.outputs.at(o).get(static_cast<int64_t>(k)) - exact) / std::abs(exact));
            worst_sequential = std::max(worst_sequential, std::abs(static_cast<double>(sequential) - exact) / std::abs(exact));
          }
          qInfo("%s, output %d: relative error %.3g (a sequential float32 sum: %.3g)", constant ? "0.1f" : "random", o, worst,
                worst_sequential);
          QVERIFY2(worst_sequential > bound, "the bound means nothing: a sequential sum meets it");
          QVERIFY2(worst <= bound, (std::to_string(worst) + " over " + std::to_string(bound)).c_str());
        }
        QVERIFY(r.check.ok);
      }
    }
  }

  // A broadcast over short planes (MobileNetV3's 7x7: an inner loop of 49 under an outer loop of
  // 288 channels): Clang unrolled the inner loop fully, then vectorized the outer one with gathers
  // (5x slower); marked LS_INNER_LOOP, the inner loop is the one vectorized and the assembly holds
  // no gather. The numbers against the reference interpreter.
  void testShortInnerLoopsStayInner() {
    if (!have_clang_jit()) QSKIP("this build has no in-process Clang");
    const CompileResult r = compile_graph_text("class GraphModule(torch.nn.Module):\n"
                                               "    def forward(self, x: \"f32[1, 288, 7, 7]\", s: \"f32[1, 288, 1, 1]\"):\n"
                                               "        hardsigmoid: \"f32[1, 288, 1, 1]\" = torch.ops.aten.hardsigmoid.default(s)\n"
                                               "        mul: \"f32[1, 288, 7, 7]\" = torch.ops.aten.mul.Tensor(x, hardsigmoid)\n"
                                               "        return (mul,)\n",
                                               {}, false);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QVERIFY(r.check.ok);
    QVERIFY2(std::regex_search(r.source.code, std::regex(R"(LS_INNER_LOOP\s+for \(int32_t x0i = 0; x0i < 49; \+\+x0i\))")), r.source.code.c_str());
    const Stage* a = r.stage("asm");
    QVERIFY(a);
    QVERIFY(a->text.find("vmulps") != std::string::npos || a->text.find("mulps") != std::string::npos);
    QVERIFY2(a->text.find("gather") == std::string::npos, "the outer loop was vectorized with gathers");
  }

  // A column's max and min (a reduction over the rows of a row-major matrix: the column form, a
  // select per column) keep a NaN, as torch and the reference interpreter do; both compile paths.
  void testColumnMaxKeepsNan() {
    const std::string graph = "class GraphModule(torch.nn.Module):\n"
                              "    def forward(self, x: \"f32[2000, 64]\"):\n"
                              "        amax: \"f32[64]\" = torch.ops.aten.amax.default(x, [0])\n"
                              "        amin: \"f32[64]\" = torch.ops.aten.amin.default(x, [0])\n"
                              "        return (amax, amin)\n";
    Tensor x(DType::f32, {2000, 64});
    for (int64_t i = 0; i < x.numel(); ++i) x.set(i, std::cos(0.11 * static_cast<double>(i)) * 5.0);
    x.set(100 * 64 + 3, std::nan(""));  // column 3, row 100 of 2000
    for (bool ext : compile_paths()) {
      const CompileResult r = compile_graph_text(graph, {x}, ext);
      QVERIFY2(r.error.empty(), r.error.c_str());
      QVERIFY2(r.source.code.find("columns contiguous, rows strided") != std::string::npos, r.source.code.c_str());
      for (const auto& c : r.check.reference) QVERIFY2(c.cmp.ok, (c.against + ": " + c.cmp.why).c_str());
      QVERIFY(r.check.ok);
      QVERIFY(std::isnan(r.outputs.at(0).get(3)) && std::isnan(r.outputs.at(1).get(3)));
      QVERIFY(!std::isnan(r.outputs.at(0).get(2)) && !std::isnan(r.outputs.at(1).get(4)));
    }
  }

  // A per-channel broadcast (BatchNorm over N, C, H, W) runs as an outer loop over planes and a
  // contiguous inner SIMD loop over a plane's positions: no index division per element, the
  // channel's parameters read once per plane. Its numbers match PyTorch's out.npy.
  void testBroadcastLoopSplitsByPlane() {
    PipelineOptions o;
    o.timing_budget_ms = 5;
    const CompileResult r = run_pipeline(load_model(data("models/res_block/model.pt2")), o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QVERIFY(r.check.ok && !r.check.outputs.empty());
    const std::string& src = r.source.code;
    const size_t k = src.find("extern \"C\" __attribute__((noinline)) void cpp_fused_batch_norm_relu");
    QVERIFY(k != std::string::npos);
    const std::string kernel = src.substr(k, src.find("\n}\n", k) - k);
    // (its index in 32 bits: every number of the kernel fits)
    QVERIFY2(kernel.find("for (int32_t x0i = 0; x0i < 256; ++x0i)") != std::string::npos, kernel.c_str());
    QVERIFY2(kernel.find(" / 256") == std::string::npos, kernel.c_str());
    QVERIFY2(kernel.find("[(x0o % 32)]") != std::string::npos, kernel.c_str());
  }

  // Reductions over the rows of row-major matrices walk whole rows (the column form): blocks of
  // 1024 columns for 20000 columns; chunks of rows whose per-column sums are combined (3 for a
  // 48 x 40 matrix, run serially; 32 for 512 x 384, a max beside the sum, an add after them). Both
  // compile paths; every output against the reference interpreter.
  void testColumnReductionsWalkRows() {
    for (bool ext : {false, true}) {
      if (!ext && !have_clang_jit()) continue;
      PipelineOptions o;
      o.external_compiler = ext;
      o.timing_budget_ms = 5;
      const CompileResult r = run_pipeline(load_model(data("stages/extra/column_reductions.txt")), o);
      QVERIFY2(r.error.empty(), r.error.c_str());
      const std::string& src = r.source.code;
      for (const char* form : {"blocks of 1024 columns", "3 chunks of rows", "32 chunks of rows, each walking whole rows"})
        QVERIFY2(src.find(form) != std::string::npos, form);
      QVERIFY(src.find("[20000*r0 + x0]") != std::string::npos);  // the rows, contiguous along x0
      QCOMPARE(r.check.reference.size(), size_t(6));
      for (const auto& c : r.check.reference) QVERIFY2(c.cmp.ok, (c.against + ": " + c.cmp.why).c_str());
      QVERIFY(r.check.ok);
    }
    // A LayerNorm backward: its input gradient (per element) walks the rows beside its weight and
    // bias gradients (per column) in one column-form nest; the step against the reference
    // interpreter on the joint graph.
    PipelineOptions o;
    o.train = true;
    o.timing_budget_ms = 5;
    const CompileResult r = run_pipeline(load_model(data("stages/layernorm_gelu/3_core_aten.txt")), o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    bool layer_norm_columns = false;
    for (const GeneratedKernel& k : r.source.kernels)
      if (k.name.find("native_layer_norm") != std::string::npos) {
        std::string text;
        std::istringstream lines(r.source.code);
        int at = 0;
        for (std::string line; std::getline(lines, line);)
          if (++at >= k.first_line && at <= k.last_line) text += line + "\n";
        layer_norm_columns = layer_norm_columns || text.find("chunks of rows") != std::string::npos;
      }
    QVERIFY(layer_norm_columns);
    QVERIFY(!r.check.reference.empty());
    for (const auto& c : r.check.reference) QVERIFY2(c.cmp.ok, (c.against + ": " + c.cmp.why).c_str());
    QVERIFY(r.check.ok);
  }

  // Matrix-multiply epilogues: the pointwise kernels that read a product element for element (a
  // bias and ReLU, a GELU, a tanh of a product laid out transposed, a sigmoid of an 8-row product
  // too small to split, a ReLU of a 16 x 4096 product cut into blocks of columns) are marked and
  // get a rows form; one that reads the product at its transpose as well is not. Every output
  // against the reference interpreter, both compile paths.
  void testMatmulEpilogues() {
    for (bool ext : {false, true}) {
      if (!ext && !have_clang_jit()) continue;
      PipelineOptions o;
      o.external_compiler = ext;
      o.timing_budget_ms = 5;
      o.gemm_templates = false;  // the library's products (a template's epilogue: testGemmTemplatesInModelAndPackage)
      const CompileResult r = run_pipeline(load_model(data("stages/extra/matmul_epilogues.txt")), o);
      QVERIFY2(r.error.empty(), r.error.c_str());
      std::set<std::string> epilogues, plain;
      for (size_t k = 0; k < r.schedule.kernels.size(); ++k) {
        const Kernel& kr = r.schedule.kernels[k];
        if (kr.is_extern) continue;
        (kr.epilogue ? epilogues : plain).insert(kr.name.substr(0, kr.name.rfind('_')));
        QCOMPARE(!r.source.kernels[k].rows_launcher.empty(), kr.epilogue);
        if (kr.epilogue) {
          QVERIFY(r.schedule.kernels[k - 1].is_extern);
          // The 8-row product is one BLAS call: its epilogue runs after it, as a kernel of its own.
          const bool inside = kr.name.find("sigmoid") == std::string::npos && std::thread::hardware_concurrency() > 1;
          QCOMPARE(r.kernels[k].how, std::string(inside ? "epilogue" : "generated"));
          QCOMPARE(r.kernels[k - 1].how, std::string(inside ? "library+epilogue" : "library"));
          QVERIFY(r.source.code.find("extern \"C\" void " + kr.name + "_rows(void** a, int64_t begin, int64_t end)") != std::string::npos);
        }
      }
      QCOMPARE(epilogues, (std::set<std::string>{"cpp_fused_add_relu", "cpp_fused_gelu", "cpp_fused_tanh", "cpp_fused_sigmoid", "cpp_fused_relu"}));
      QCOMPARE(plain, (std::set<std::string>{"cpp_fused_add"}));
      QVERIFY(r.stage("fused")->text.find("epilogue of the matrix multiply before it") != std::string::npos);
      QVERIFY(r.stage("fused")->text.find("; runs as its epilogue") != std::string::npos);  // the fusion decisions
      QVERIFY(r.stage("fused")->dot.find("epilogue of extern_mm_0") != std::string::npos);  // the graph's cluster label
      QCOMPARE(r.check.reference.size(), size_t(6));
      for (const auto& c : r.check.reference) QVERIFY2(c.cmp.ok, (c.against + ": " + c.cmp.why).c_str());
      QVERIFY(r.check.ok);
    }
  }

  // An epilogue's rows form is called on whole rows of the product, and, where the product is cut
  // into blocks of columns, on one block's part of a row: each call writes exactly its elements
  // [begin, end), with the numbers of the kernel's own form (to a few ulp). (It once rounded a part of a row out
  // to the whole row: the last column block then ran the epilogue on columns another thread was
  // still computing, a race seen as 356 wrong elements of 131072 on a larger CI machine.)
  void testEpilogueRowsOnPartsOfRows() {
    PipelineOptions o;
    o.timing_budget_ms = 5;
    o.gemm_templates = false;
    o.run = false;
    const CompileResult r = run_pipeline(load_model(data("stages/extra/matmul_epilogues.txt")), o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    CpuCompileOptions co;
    co.external = !have_clang_jit();
    CpuCompileResult code = compile_cpp(r.source.code, co);
    QVERIFY2(code.code, code.log.c_str());
    using Launch = void (*)(void**);
    using Rows = void (*)(void**, int64_t, int64_t);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> uni(-2.f, 2.f);
    int checked = 0;
    for (size_t k = 0; k < r.schedule.kernels.size(); ++k) {
      const GeneratedKernel& g = r.source.kernels[k];
      if (g.rows_launcher.empty()) continue;
      const auto launch = reinterpret_cast<Launch>(code.code->symbol(g.launcher));
      const auto rows = reinterpret_cast<Rows>(code.code->symbol(g.rows_launcher));
      QVERIFY(launch && rows);
      const Kernel& kr = r.schedule.kernels[k];
      const int64_t N = r.loops.buffer(r.schedule.kernels[k - 1].writes.at(0)).shape.back();  // the product's row
      std::vector<Tensor> bufs;
      std::vector<void*> args;
      for (const std::string& b : g.args) {
        const LoopBuffer& lb = r.loops.buffer(b);
        bufs.emplace_back(lb.dtype, lb.shape);
      }
      for (size_t i = 0; i < bufs.size(); ++i) {
        for (int64_t e = 0; e < bufs[i].numel(); ++e) bufs[i].set(e, uni(rng));
        args.push_back(bufs[i].data());
      }
      const size_t out = g.args.size() - kr.writes.size();  // the first output
      Tensor& y = bufs[out];
      launch(args.data());
      const Tensor whole = cast(y, DType::f64);  // a copy
      const int64_t M = y.numel() / N;
      // Parts of rows at column cuts of 16 (as the product's blocks are) and at odd places.
      const std::vector<int64_t> cuts = {0, std::min<int64_t>(16, N), std::min<int64_t>(N / 2 + 3, N), N};
      for (int64_t m : {int64_t(0), M / 2, M - 1})
        for (size_t c = cuts.size() - 1; c-- > 0;) {
          const int64_t b = m * N + cuts[c], e = m * N + cuts[c + 1];
          if (b >= e) continue;
          const double untouched = -12345.5;  // exact in float32
          for (int64_t i = 0; i < y.numel(); ++i) y.set(i, untouched);
          rows(args.data(), b, e);
          for (int64_t i = 0; i < y.numel(); ++i) {
            const bool inside = i >= b && i < e;
            const double want = inside ? whole.get(i) : untouched;
            // Inside, a few ulp: an element in a vector loop's scalar remainder takes the scalar exp.
            if (inside ? !(std::abs(y.get(i) - want) <= 1e-6 * std::max(1.0, std::abs(want))) : y.get(i) != want)
              QFAIL((g.rows_launcher + " on [" + std::to_string(b) + ", " + std::to_string(e) + "): element " + std::to_string(i) +
                     (inside ? " differs from the kernel's" : " outside the range was written"))
                        .c_str());
          }
          ++checked;
        }
    }
    QVERIFY(checked >= 12);  // five epilogues, three rows each, one part or more a row
  }

  // CPU max-autotune: each matrix multiply cut every way gemm_candidate_cuts offers (blocks of
  // rows and columns for the pool's threads, one call), timed with its epilogue; the table lists
  // every candidate, the run uses the chosen cuts (the kernel table names them) and matches the
  // reference interpreter; every candidate cut, forced on every multiply of the compiled model,
  // gives the reference interpreter's numbers; a second compile takes the choice from the disk cache.
  // The GEMM template's C++ for every operand layout and bias, at sizes that leave partial tiles
  // and a K in several chunks, compiled and run against the product in float64; its epilogue is
  // called on every element of C exactly once.
  void testGemmTemplateMatchesDoubleProduct_data() {
    QTest::addColumn<int>("M");
    QTest::addColumn<int>("N");
    QTest::addColumn<int>("K");
    QTest::addColumn<bool>("ta");
    QTest::addColumn<bool>("tb");
    QTest::addColumn<int>("bias");
    QTest::addColumn<float>("alpha");
    QTest::addColumn<float>("beta");
    QTest::newRow("mm, partial tiles") << 100 << 70 << 33 << false << false << 0 << 1.f << 0.f;
    QTest::newRow("A transposed, bias per column") << 97 << 130 << 64 << true << false << 1 << 1.f << 1.f;
    QTest::newRow("B transposed, bias per row, K in chunks") << 37 << 130 << 600 << false << true << 2 << 0.5f << 2.f;
    QTest::newRow("both transposed, bias matrix, K in chunks") << 65 << 65 << 1030 << true << true << 3 << 1.f << 1.f;
    QTest::newRow("scalar bias, one row") << 1 << 300 << 17 << false << false << 4 << 2.f << 0.25f;
    QTest::newRow("one element") << 1 << 1 << 1 << false << true << 1 << 1.f << 1.f;
  }
  void testGemmTemplateMatchesDoubleProduct() {
    QFETCH(int, M);
    QFETCH(int, N);
    QFETCH(int, K);
    QFETCH(bool, ta);
    QFETCH(bool, tb);
    QFETCH(int, bias);
    QFETCH(float, alpha);
    QFETCH(float, beta);
    GemmProblem p;
    p.M = M, p.N = N, p.K = K, p.ta = ta, p.tb = tb, p.alpha = alpha, p.beta = beta;
    p.bias = static_cast<GemmProblem::Bias>(bias);
    std::vector<float> A(static_cast<size_t>(M) * K), B(static_cast<size_t>(K) * N), C(static_cast<size_t>(M) * N);
    std::vector<float> b(bias == 3 ? M * N : bias == 2 ? M : bias == 1 ? N : 1);
    uint32_t seed = 12345;
    auto rnd = [&] { return static_cast<float>((seed = seed * 1664525u + 1013904223u) >> 8) / 16777216.f - 0.5f; };
    for (auto* v : {&A, &B, &b})
      for (float& x : *v) x = rnd();
    const std::vector<GemmTemplate> candidates = gemm_template_candidates(p, std::max(2, library_threads()));
    QVERIFY(candidates.size() >= 2);
    std::string src = "typedef __INT64_TYPE__ int64_t;\n";
    for (size_t i = 0; i < candidates.size(); ++i) src += gemm_template_cpp("g" + std::to_string(i), p, candidates[i]);
    for (bool external : {false, true}) {
      if (!external && !have_clang_jit()) continue;
      CpuCompileOptions co;
      co.external = external;
      CpuCompileResult module = compile_cpp(src, co);
      for (size_t i = 0; i < candidates.size(); ++i) {
        auto f = reinterpret_cast<GemmTemplateFn>(module.code->symbol("g" + std::to_string(i)));
        QVERIFY(f);
        std::fill(C.begin(), C.end(), 1e30f);
        std::vector<int> seen(C.size(), 0);
        void* args[] = {seen.data()};
        f(A.data(), B.data(), b.data(), C.data(),
          [](void** a, int64_t begin, int64_t end) {
            for (int64_t x = begin; x < end; ++x) ++static_cast<int*>(a[0])[x];
          },
          args);
        double worst = 0;
        for (int i2 = 0; i2 < M; ++i2)
          for (int j = 0; j < N; ++j) {
            double sum = 0;
            for (int k = 0; k < K; ++k)
              sum += static_cast<double>(ta ? A[k * M + i2] : A[i2 * K + k]) * (tb ? B[j * K + k] : B[k * N + j]);
            const double add = bias == 0 ? 0 : bias == 1 ? b[j] : bias == 2 ? b[i2] : bias == 3 ? b[i2 * N + j] : b[0];
            const double want = alpha * sum + (bias ? beta * add : 0);
            worst = std::max(worst, std::fabs(C[i2 * N + j] - want) / (1 + std::fabs(want)));
          }
        const std::string what = candidates[i].text() + (external ? " (external compiler)" : " (JIT)");
        QVERIFY2(worst < 1e-5 * std::sqrt(K), (what + ": error " + std::to_string(worst)).c_str());
        QVERIFY2(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }), (what + ": epilogue coverage").c_str());
      }
    }
  }

  void testCpuMaxAutotuneCutsMultiplies() {
    QTemporaryDir cache;
    const QByteArray before = qgetenv("LOWERSCOPE_CACHE_DIR");
    qputenv("LOWERSCOPE_CACHE_DIR", cache.path().toUtf8());
    PipelineOptions o;
    o.mode = Mode::max_autotune;
    o.timing_budget_ms = 5;
    const LoadedModel m = load_model(data("stages/extra/matmul_epilogues.txt"));
    const CompileResult r = run_pipeline(m, o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QVERIFY(r.check.ok);
    const Stage* table = r.stage("autotune");
    QVERIFY(table);
    QVERIFY2(r.mode_note.find("6 matrix multiplies tuned in") != std::string::npos, r.mode_note.c_str());
    int products = 0;
    for (size_t k = 0; k < r.schedule.kernels.size(); ++k) {
      const Kernel& kr = r.schedule.kernels[k];
      if (!kr.is_extern) continue;
      ++products;
      const size_t at = table->text.find("\n" + kr.name + " (matrix multiply ");
      QVERIFY2(at != std::string::npos, (kr.name + "\n" + table->text).c_str());
      const size_t end = table->text.find("\n\n", at + 1);
      const std::string section = table->text.substr(at, end == std::string::npos ? std::string::npos : end - at);
      // Its candidates: the heuristic's cut first, then the other cuts and the GEMM templates, each timed.
      const Shape& y = r.loops.buffer(kr.writes.at(0)).shape;
      int lines = 0, templates = 0;
      for (size_t l = section.find("\n  "); l != std::string::npos; l = section.find("\n  ", l + 1)) {
        ++lines;
        templates += section.compare(l + 5, 9, "template ") == 0;
      }
      QCOMPARE(lines - templates, static_cast<int>(gemm_candidate_cuts(y[0], y[1], 64).size()));
      QVERIFY2(templates >= 3, section.c_str());  // mm and addmm: three register tiles at least
      QVERIFY2(section.find("heuristic: ") != std::string::npos && section.find(" us") != std::string::npos, section.c_str());
      const size_t star = section.find("  * ");
      QVERIFY2(star != std::string::npos, section.c_str());
      const std::string chosen = section.substr(star, section.find('\n', star) - star);
      const auto cut = r.gemm_cuts.find(kr.name);
      if (chosen.find("heuristic: ") != std::string::npos) {
        QVERIFY(cut == r.gemm_cuts.end());
        QVERIFY2(r.kernels[k].launch.empty(), r.kernels[k].launch.c_str());
      } else {
        QVERIFY2(cut != r.gemm_cuts.end(), chosen.c_str());
        QVERIFY2(chosen.find(cut->second.text()) != std::string::npos, chosen.c_str());
        QCOMPARE(r.kernels[k].launch, "max-autotune: " + cut->second.text() + " on the pool's threads");
        // A template chosen is in the model's source, as the kernel's lines, and ran.
        if (cut->second.is_template()) {
          const GeneratedKernel& g = r.source.kernels[k];
          QVERIFY2(!g.launcher.empty() && g.first_line > 0 && g.last_line > g.first_line, g.launcher.c_str());
          QVERIFY(r.source.code.find("extern \"C\" void " + g.launcher + "(") != std::string::npos);
          QVERIFY2(r.kernels[k].how.rfind("template", 0) == 0, r.kernels[k].how.c_str());
        }
      }
    }
    QCOMPARE(products, 6);
    // Every candidate cut of every multiply against the reference interpreter.
    CpuCompileResult code = compile_cpp(r.source.code, CpuCompileOptions{});
    CpuExecutable exe(r.loops, r.schedule, r.source, *code.code);
    const std::vector<Tensor> inputs = bind_inputs(r.prims, r.model.inputs);
    exe.run(inputs);
    size_t most = 0;
    std::vector<std::vector<GemmCut>> cuts(r.schedule.kernels.size());
    for (size_t k = 0; k < cuts.size(); ++k) {
      int64_t M = 0, N = 0, K = 0;
      if (exe.matmul_sizes(k, M, N, K)) cuts[k] = gemm_candidate_cuts(M, N, K);
      most = std::max(most, cuts[k].size());
    }
    QVERIFY(most >= (std::thread::hardware_concurrency() > 1 ? 3u : 1u));
    for (size_t i = 0; i < most; ++i) {
      for (size_t k = 0; k < cuts.size(); ++k)
        if (!cuts[k].empty()) exe.choose_cut(k, &cuts[k][std::min(i, cuts[k].size() - 1)]);
      const std::vector<Tensor> out = exe.run(inputs);
      QCOMPARE(out.size(), r.reference_outputs.size());
      for (size_t j = 0; j < out.size(); ++j) {
        const Comparison c = compare(out[j], r.reference_outputs[j]);
        QVERIFY2(c.ok, ("candidate " + std::to_string(i) + ", output " + std::to_string(j) + ": " + c.why).c_str());
      }
    }
    // And every GEMM template candidate of every mm and addmm (the epilogues run inside them).
    std::vector<std::vector<std::string>> names(cuts.size());
    std::string templates = "typedef __INT64_TYPE__ int64_t;\n";
    most = 0;
    for (size_t k = 0; k < cuts.size(); ++k) {
      GemmProblem problem;
      if (!exe.gemm_problem(k, problem)) continue;
      for (const GemmTemplate& t : gemm_template_candidates(problem, library_threads())) {
        names[k].push_back("t" + std::to_string(k) + "_" + std::to_string(names[k].size()));
        templates += gemm_template_cpp(names[k].back(), problem, t);
      }
      most = std::max(most, names[k].size());
    }
    QVERIFY(most >= 3);
    CpuCompileResult module = compile_cpp(templates, CpuCompileOptions{});
    for (size_t i = 0; i < most; ++i) {
      for (size_t k = 0; k < cuts.size(); ++k) {
        if (names[k].empty()) continue;
        auto f = reinterpret_cast<GemmTemplateFn>(module.code->symbol(names[k][std::min(i, names[k].size() - 1)]));
        QVERIFY(f);
        exe.choose_template(k, f);
      }
      const std::vector<Tensor> out = exe.run(inputs);
      for (size_t j = 0; j < out.size(); ++j) {
        const Comparison c = compare(out[j], r.reference_outputs[j]);
        QVERIFY2(c.ok, ("template candidate " + std::to_string(i) + ", output " + std::to_string(j) + ": " + c.why).c_str());
      }
      for (size_t k = 0; k + 1 < cuts.size(); ++k)
        if (!names[k].empty() && r.schedule.kernels[k + 1].epilogue) QVERIFY(exe.ran_inside()[k + 1]);
    }
    const CompileResult again = run_pipeline(m, o);
    QVERIFY2(again.mode_note.find("from the disk cache") != std::string::npos, again.mode_note.c_str());
    QVERIFY(again.check.ok);
    QVERIFY(again.gemm_cuts == r.gemm_cuts);
    for (size_t k = 0; k < r.kernels.size(); ++k) QCOMPARE(again.kernels[k].launch, r.kernels[k].launch);
    qputenv("LOWERSCOPE_CACHE_DIR", before);
  }

  // CPU attention (forward and backward) against the reference interpreter's own float64 kernels:
  // causal over 256 positions (four blocks of query rows, the later ones seeing more keys), queries
  // and keys of other lengths than the blocks, head size 128; q, k and v read in place through
  // their strides.
  void testAttentionMatchesReference_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<bool>("train");
    for (const char* m : {"attention_long", "attention_long_uneven", "attention_long_d128"})
      for (bool t : {false, true})
        QTest::newRow((std::string(m) + (t ? " train" : "")).c_str()) << QString("stages/extra/%1.txt").arg(m) << t;
  }
  void testAttentionMatchesReference() {
    QFETCH(QString, model);
    QFETCH(bool, train);
    try {
      QCOMPARE(library_calls_matching_reference(data(model.toStdString()), train, "efficient_attention"), train ? 2 : 1);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
  }

  // Compile time by phase: a cold compile (no disk cache) records the compiler's phase once, no
  // longer than the whole compile; the run stage, the report JSON and the HTML report show it.
  void testCompileTimeByPhase() {
    const QByteArray before = qgetenv("LOWERSCOPE_CACHE_DIR");
    qputenv("LOWERSCOPE_CACHE_DIR", "off");
    PipelineOptions o;
    o.external_compiler = true;
    const CompileResult r = compile_fixture("mse_loss/3_core_aten.txt", 2, o);
    if (before.isEmpty()) qunsetenv("LOWERSCOPE_CACHE_DIR");
    else qputenv("LOWERSCOPE_CACHE_DIR", before);
    QVERIFY2(r.error.empty(), r.error.c_str());
    const PhaseTime* compiler = nullptr;
    for (const PhaseTime& t : r.compile_phases)
      if (t.name.rfind("external compiler", 0) == 0) compiler = &t;
    QVERIFY(compiler);
    QCOMPARE(compiler->count, 1);
    QVERIFY2(compiler->ms > 0 && compiler->ms <= r.compile_ms, std::to_string(compiler->ms).c_str());
    QVERIFY(r.stage("run")->text.find("compile time by phase") != std::string::npos);
    QVERIFY(r.stage("run")->text.find(compiler->name) != std::string::npos);
    QVERIFY(report_json(r).find("\"compile_phases\"") != std::string::npos);
    QVERIFY(html_report(r, {}).find("Compile phase") != std::string::npos);
  }

  void testMachineCodeIsShown() {
    if (!have_clang_jit()) QSKIP("the assembly comes from the in-process Clang path");
    const CompileResult r = compile_fixture("sincos/3_core_aten.txt", 1);
    const Stage* s = r.stage("asm");
    QVERIFY(s);
    const std::string& text = s->text;
    const std::string kernel = r.schedule.kernels.at(0).name;
    QVERIFY2(text.find(kernel + ":") != std::string::npos, "the kernel's label");            // x86 assembly
    QVERIFY2(text.find("void @" + kernel + "(") != std::string::npos, "its LLVM IR function");
    QVERIFY2(text.find("sinf") != std::string::npos, "a call of the (vector) sine");
  }

  void testCompileErrorIsReported() {
    for (bool ext : {false, true}) {
      if (!ext && !have_clang_jit()) continue;
      CpuCompileOptions o;
      o.external = ext;
      try {
        compile_cpp("extern \"C\" void k() { int x = ; }\n", o);
        QFAIL("no error");
      } catch (const CompileError& e) {
        QVERIFY2(e.diagnostics.find("error") != std::string::npos, e.diagnostics.c_str());
        QVERIFY2(e.diagnostics.find(":1:") != std::string::npos, e.diagnostics.c_str());  // names the line
      }
    }
    // The external compiler compiling kernels as several units at once: the message still names the
    // line of the whole source (line 6: the second kernel's error).
    CpuCompileOptions o;
    o.external = true;
    o.cache_dir = "off";
    o.kernel_lines = {3, 5};
    const std::string two = "// prelude\nstatic inline int twice(int x) { return 2 * x; }\n"
                            "extern \"C\" int k0() { return twice(1); }\n\n"
                            "// second kernel\nextern \"C\" int k1() { int x = ; return twice(x); }\n";
    try {
      compile_cpp(two, o);
      QFAIL("no error");
    } catch (const CompileError& e) {
      QVERIFY2(e.diagnostics.find("kernels.cpp:6:") != std::string::npos, e.diagnostics.c_str());
    }
    const std::string fixed = std::string(two).replace(two.find("int x = ;"), 9, "int x = 3;");
    const CpuCompileResult r = compile_cpp(fixed, o);
    QVERIFY(r.code && r.code->symbol("k0") && r.code->symbol("k1"));
    QCOMPARE(reinterpret_cast<int (*)()>(r.code->symbol("k1"))(), 6);
  }

  // A source cut into units: each unit the prelude and whole kernels with #line directives; with
  // each_alone and no more kernels than parts, a kernel a unit; otherwise runs of kernels.
  void testSplitSourceUnits() {
    std::string src = "// prelude\nstatic int p;\n";
    std::vector<int> starts;
    int line = 3;
    const int lengths[] = {1, 6, 1, 1};
    for (int k = 0; k < 4; ++k) {
      src += "\n";
      ++line;
      starts.push_back(line);
      src += "extern \"C\" void k" + std::to_string(k) + "() {\n";
      for (int l = 1; l < lengths[k]; ++l) src += "  p += " + std::to_string(l) + ";\n";
      line += lengths[k];
      if (lengths[k] > 1) src += "}\n", ++line;
      else src.back() = '}', src += "\n";
    }
    auto kernels_in = [](const std::string& unit) {
      int n = 0;
      for (size_t at = unit.find("extern \"C\""); at != std::string::npos; at = unit.find("extern \"C\"", at + 1)) ++n;
      return n;
    };
    const std::vector<std::string> alone = split_source(src, starts, 8, "kernels.cpp", true);
    QCOMPARE(alone.size(), size_t(4));
    for (size_t u = 0; u < alone.size(); ++u) {
      QCOMPARE(kernels_in(alone[u]), 1);
      QVERIFY(alone[u].rfind("#line 1 \"kernels.cpp\"\n// prelude\nstatic int p;\n", 0) == 0);
      QVERIFY2(alone[u].find("#line " + std::to_string(starts[u]) + " \"kernels.cpp\"\nextern \"C\" void k" + std::to_string(u)) != std::string::npos,
               alone[u].c_str());
    }
    const std::vector<std::string> runs = split_source(src, starts, 8, "kernels.cpp");
    QVERIFY2(runs.size() < 4, std::to_string(runs.size()).c_str());  // the short kernels run together
    int total = 0;
    for (const std::string& u : runs) total += kernels_in(u);
    QCOMPARE(total, 4);
    QCOMPARE(split_source(src, starts, 2, "kernels.cpp", true).size(), size_t(2));  // more kernels than parts: runs
    QCOMPARE(split_source(src, {}, 8, "kernels.cpp", true), std::vector<std::string>{src});

    // How many units compile at once: $LOWERSCOPE_COMPILE_THREADS where it is a positive number.
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    for (const auto& [value, want] : std::vector<std::pair<const char*, int>>{{"3", 3}, {"1", 1}, {"0", cores}, {"-2", cores}, {"x", cores}, {"4x", cores}}) {
      qputenv("LOWERSCOPE_COMPILE_THREADS", value);
      QCOMPARE(compile_threads(), want);
      // NVRTC programs: the same number where it is given, else at most 3
      QCOMPARE(nvrtc_programs_at_once(), want == cores ? std::min(3, cores) : want);
    }
    // One unit at a time: the external compiler still builds the model, one unit.
    qputenv("LOWERSCOPE_COMPILE_THREADS", "1");
    CpuCompileOptions o;
    o.external = true;
    o.cache_dir = "off";
    o.kernel_lines = starts;
    const CpuCompileResult r = compile_cpp(src, o);
    qunsetenv("LOWERSCOPE_COMPILE_THREADS");
    QCOMPARE(compile_threads(), cores);
    QCOMPARE(nvrtc_programs_at_once(), std::min(3, cores));
    for (int k = 0; k < 4; ++k) QVERIFY(r.code->symbol("k" + std::to_string(k)));
  }

  void testBadModelKeepsEarlierStages() {
    // An op we lack is reported with the stage that met it; the result is still usable.
    const std::string path = QDir::temp().filePath("ls_bad_model.txt").toStdString();
    {
      std::ofstream f(path);
      f << "class G(torch.nn.Module):\n    def forward(self, x: \"f32[4]\"):\n"
           "        y: \"f32[4]\" = torch.ops.aten.sin.default(x)\n        return (y,)\n";
    }
    try {
      parse_device("tpu");
      QFAIL("a device named tpu was taken");
    } catch (const std::invalid_argument& e) {
      QVERIFY(std::string(e.what()).find("'tpu'") != std::string::npos);
    }
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, load_model(data("sincos/in0.npy")));
  }

  void testFusedKernelRunsAfterItsInputs() {
    // s and f share the input x and may fuse horizontally; f also needs the matrix product m, so
    // the fused kernel must run after the library call, whatever its first node.
    const std::string path = QDir::temp().filePath("ls_order.txt").toStdString();
    {
      std::ofstream f(path);
      f << "class G(torch.nn.Module):\n    def forward(self, x: \"f32[4, 8]\", w: \"f32[8, 8]\"):\n"
           "        s: \"f32[8]\" = torch.ops.aten.sum.dim_IntList(x, [0])\n"
           "        m: \"f32[4, 8]\" = torch.ops.aten.mm.default(x, w)\n"
           "        f: \"f32[4, 8]\" = torch.ops.aten.add.Tensor(x, m)\n"
           "        return (s, f)\n";
    }
    PipelineOptions o;
    o.timing_budget_ms = 5;
    const CompileResult r = run_pipeline(load_model(path), o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QVERIFY2(r.check.ok, r.stage("run")->text.c_str());
  }

  // RMSNorm before a linear layer (bf16, as transformers' LlamaRMSNorm), trained: the normalized value recomputed for the weight's
  // gradient is reordered for that column reduction but lands in the input gradient's row
  // kernel; there it goes back to its own order (reads and writes along the rows, not across
  // them: on CUDA 17% of copy bandwidth the other way), and the step still matches the reference.
  void testRowKernelsKeepTheirRows() {
    const std::string text =
        "class G(torch.nn.Module):\n    def forward(self, w: \"bf16[64]\", W: \"bf16[16, 64]\", x: \"bf16[2, 8, 64]\"):\n"
        "        h: \"f32[2, 8, 64]\" = torch.ops.aten._to_copy.default(x, dtype = torch.float32)\n"
        "        p: \"f32[2, 8, 64]\" = torch.ops.aten.pow.Tensor_Scalar(h, 2)\n"
        "        m: \"f32[2, 8, 1]\" = torch.ops.aten.mean.dim(p, [-1], True)\n"
        "        a: \"f32[2, 8, 1]\" = torch.ops.aten.add.Tensor(m, 1e-06)\n"
        "        r: \"f32[2, 8, 1]\" = torch.ops.aten.rsqrt.default(a)\n"
        "        hm: \"f32[2, 8, 64]\" = torch.ops.aten.mul.Tensor(h, r)\n"
        "        hc: \"bf16[2, 8, 64]\" = torch.ops.aten._to_copy.default(hm, dtype = torch.bfloat16)\n"
        "        y: \"bf16[2, 8, 64]\" = torch.ops.aten.mul.Tensor(w, hc)\n"
        "        z: \"bf16[2, 8, 16]\" = torch.ops.aten.linear.default(y, W)\n"
        "        return (z,)\n";
    const LoadedModel model = load_graph_text(text);
    for (Device d : {Device::cpu, Device::cuda}) {
      PipelineOptions o;
      o.train = true;
      o.device = d;
      o.run = d == Device::cpu;
      o.timing_budget_ms = 5;
      const CompileResult r = run_pipeline(model, o);
      QVERIFY2(r.error.empty(), r.error.c_str());
      if (d == Device::cpu) QVERIFY2(r.check.ok, r.stage("run")->text.c_str());
      int rows = 0;
      for (const Kernel& k : r.schedule.kernels) {
        if (k.is_extern || k.rnumel == 1 || !k.nests.empty()) continue;
        ++rows;
        // a node still turned is there for a reduction of this kernel over its rows (which reads it)
        std::set<std::string> reduced;
        for (int n : k.nodes)
          if (r.loops.nodes[n].kind == LoopNode::Kind::reduction)
            for (const MemDep& d : extract_dependencies(r.loops.nodes[n]).reads) reduced.insert(d.buffer);
        std::set<std::string> turned;
        for (int n : k.nodes)
          if (!r.loops.nodes[n].iter_order.empty()) turned.insert(r.loops.nodes[n].buffer);
        bool feeds = turned.empty();
        for (const std::string& b : turned) feeds = feeds || reduced.count(b);
        QVERIFY2(feeds, (k.name + " iterates across its rows for no reduction of its own").c_str());
      }
      QVERIFY(rows > 0);
      if (d == Device::cuda) QVERIFY2(r.stage("fused")->text.find("# Back in their own order") != std::string::npos, r.stage("fused")->text.c_str());
    }
  }

  // Inductor's kernel counts, graph by graph (tests/inductor_counts.h: its generated kernels,
  // and its extern calls plus ATen fallbacks), inference and training, CPU scheduling.
  void testKernelCountsWithinInductor_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("name");
    QTest::addColumn<bool>("train");
    const std::pair<const char*, const char*> models[] = {
        {"sincos", "stages/sincos/3_core_aten.txt"},       {"mse_loss", "stages/mse_loss/3_core_aten.txt"},
        {"softmax", "models/softmax/model.pt2"},            {"mlp", "stages/mlp/3_core_aten.txt"},
        {"layernorm_gelu", "stages/layernorm_gelu/3_core_aten.txt"}, {"res_block", "models/res_block/model.pt2"},
        {"cifar_net", "models/cifar_net/model.pt2"},        {"attn_block", "stages/attn_block/3_core_aten.txt"}};
    for (const auto& [name, path] : models)
      for (bool train : {false, true})
        QTest::newRow((std::string(name) + (train ? " train" : "")).c_str()) << path << name << train;
  }
  void testKernelCountsWithinInductor() {
    QFETCH(QString, model);
    QFETCH(QString, name);
    QFETCH(bool, train);
    PipelineOptions o;
    o.run = false;
    o.train = train;
    const CompileResult r = run_pipeline(load_model(data(model.toStdString())), o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    const auto rows = ls_test::inductor_counts(data("inductor_counts.tsv"), name.toStdString(), train, "cpu");
    QVERIFY(!rows.empty());
    int compared = 0;
    const std::string over = ls_test::counts_within(r, rows, compared);
    QVERIFY2(over.empty(), over.c_str());
    QCOMPARE(compared, static_cast<int>(rows.size()));
  }

  // Training: the gradients of out.sum() computed by our kernels (forward, then backward, as one
  // compiled step) match PyTorch's grad_in*.npy, for both compile paths.
  void testTrainingGradientsMatchPyTorch_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QStringList>("inputs");
    QTest::addColumn<QStringList>("grads");
    QTest::addColumn<bool>("external");
    for (bool ext : {false, true}) {
      if (!ext && !have_clang_jit()) continue;
      const char* how = ext ? " (external c++)" : "";
      QTest::newRow((std::string("sincos") + how).c_str())
          << "sincos/1_dynamo_fx_0.txt" << QStringList{"sincos/in0.npy"} << QStringList{"sincos/grad_in0.npy"} << ext;
      QTest::newRow((std::string("softmax") + how).c_str()) << "models/softmax/model.pt2" << QStringList{} << QStringList{} << ext;
    }
    QTest::newRow("mse_loss") << "mse_loss/1_dynamo_fx_0.txt" << QStringList{"mse_loss/in0.npy", "mse_loss/in1.npy"}
                              << QStringList{"mse_loss/grad_in0.npy", "mse_loss/grad_in1.npy"} << false;
    QTest::newRow("res_block") << "models/res_block/model.pt2" << QStringList{} << QStringList{} << false;
    QTest::newRow("cifar_net") << "models/cifar_net/model.onnx" << QStringList{} << QStringList{} << false;
  }
  void testTrainingGradientsMatchPyTorch() {
    QFETCH(QString, model);
    QFETCH(QStringList, inputs);
    QFETCH(QStringList, grads);
    QFETCH(bool, external);
    LoadOptions lo;
    for (const QString& f : inputs) lo.inputs.push_back(data(f.toStdString()));
    for (const QString& f : grads) lo.expect_grads.push_back(data(f.toStdString()));
    PipelineOptions o;
    o.train = true;
    o.external_compiler = external;
    o.timing_budget_ms = 20;
    const CompileResult r = run_pipeline(load_model(data(model.toStdString()), lo), o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QVERIFY2(!r.check.gradients.empty(), "no expected gradients were compared");
    for (const GradientCheck& c : r.check.gradients) QVERIFY2(c.cmp.ok, (c.input + " vs " + c.against + ": " + c.cmp.why).c_str());
    QVERIFY2(r.check.ok, "the compiled step differs from the reference interpreter run on the joint graph");
    int backward = 0;
    for (const KernelReport& k : r.kernels) backward += k.phase == "backward";
    QVERIFY(backward > 0);
    for (const char* stage : {"joint", "forward", "backward"}) QVERIFY(r.stage(stage) != nullptr);
  }

  // The library convolution (im2col blocks + BLAS; depthwise windows; the three backward passes)
  // against the reference interpreter's direct loops, forward and all three gradients, over
  // geometries that exercise each edge of its row segments: strides, dilation, padding wider than
  // the kernel's reach, groups, 1x1, batch 1, non-square windows.
  // Dynamic shapes on a real model: cifar_net's batch becomes a symbol (its channels and image
  // size are specialized: the weights fix them), the kernels take it as an argument, and the one
  // compiled template runs batches of 3 and 5 without compiling again, matching PyTorch's outputs
  // for those images (the fixture's out.npy rows); a batch of 1 fails a guard.
  void testDynamicBatch() {
#ifndef LOWERSCOPE_HAVE_LIBZIP
    QSKIP("this build reads no .pt2 files (libzip)");
#endif
    PipelineOptions o;
    o.dynamic = true;
    o.keep_program = true;
    o.timing_budget_ms = 20;
    const CompileResult r = run_pipeline(load_model(data("models/cifar_net/model.pt2")), o);
    QVERIFY2(r.ok(), (r.error + r.error_stage).c_str());
    QCOMPARE(r.dynamic.symbols.size(), size_t(3));
    QVERIFY(r.dynamic.symbols[0].dynamic);
    QVERIFY2(r.dynamic.symbols[1].why_static.find("conv") != std::string::npos, r.dynamic.symbols[1].why_static.c_str());
    QVERIFY(!r.dynamic.holes.empty());
    QVERIFY(r.source.code.find("const int64_t ks0 = ks[0]") != std::string::npos);
    QVERIFY(r.stage("dynamic") && r.stage("dynamic")->text.find("2 <= L['x'].size()[0]") != std::string::npos);
    const Tensor in = load_npy(data("models/cifar_net/in0.npy")), want = load_npy(data("models/cifar_net/out.npy"));
    const std::vector<std::pair<int64_t, std::string>> calls = {{3, "new sizes s0=3"}, {5, "new sizes s0=5"}, {3, "s0=3 seen before"}};
    for (const auto& [batch, how] : calls) {
      Tensor x(DType::f32, {batch, 3, 32, 32});
      for (int64_t i = 0; i < x.numel(); ++i) x.set(i, in.get(i));
      const std::vector<Tensor> out = r.program->run({x});
      QVERIFY2(r.program->last_note.find(how) != std::string::npos, r.program->last_note.c_str());
      QCOMPARE(out.at(0).shape(), (Shape{batch, 10}));
      for (int64_t i = 0; i < out[0].numel(); ++i) {
        const double a = out[0].get(i), b = want.get(i);
        QVERIFY2(std::fabs(a - b) <= 1e-5 + 1e-4 * std::fabs(b), (std::to_string(a) + " vs " + std::to_string(b)).c_str());
      }
    }
    try {
      r.program->run({Tensor(DType::f32, {1, 3, 32, 32})});
      QFAIL("a batch of 1 passed the guard 2 <= s0");
    } catch (const GuardFailed& e) {
      QVERIFY2(std::string(e.what()).find("2 <= L['x'].size()[0]") != std::string::npos, e.what());
    }
    // max-autotune's cuts of the linear layers (given here, as a tuning would leave them) stay on
    // those multiplies at every new batch, and the numbers stay PyTorch's.
    PipelineOptions tuned = o;
    tuned.mode = Mode::max_autotune;
    for (const Kernel& k : r.schedule.kernels)
      if (k.name.rfind("extern_addmm", 0) == 0 || k.name.rfind("extern_mm", 0) == 0) tuned.gemm_choices[k.name] = GemmCut{1, 2};
    QCOMPARE(tuned.gemm_choices.size(), size_t(3));  // fc1, fc2, fc3
    const CompileResult t = run_pipeline(load_model(data("models/cifar_net/model.pt2")), tuned);
    QVERIFY2(t.ok(), (t.error + t.error_stage).c_str());
    QCOMPARE(t.gemm_cuts.size(), size_t(3));
    Tensor x(DType::f32, {4, 3, 32, 32});
    for (int64_t i = 0; i < x.numel(); ++i) x.set(i, in.get(i));
    const std::vector<Tensor> out = t.program->run({x});
    QVERIFY2(t.program->last_note.find("max-autotune's cuts of 3 matrix multiplies kept") != std::string::npos, t.program->last_note.c_str());
    for (int64_t i = 0; i < out.at(0).numel(); ++i) {
      const double a = out[0].get(i), b = want.get(i);
      QVERIFY2(std::fabs(a - b) <= 1e-5 + 1e-4 * std::fabs(b), (std::to_string(a) + " vs " + std::to_string(b)).c_str());
    }
  }

  void testConvolutionGeometries_data() {
    QTest::addColumn<QList<int>>("g");  // N C H W O KH KW sh sw ph pw dh dw groups bias
    QTest::newRow("stride 2x1, pad 1x2, 3x5 window, bias") << QList<int>{1, 3, 7, 9, 8, 3, 5, 2, 1, 1, 2, 1, 1, 1, 1};
    QTest::newRow("dilation 2, pad 2, 2 groups") << QList<int>{3, 4, 10, 10, 6, 3, 3, 1, 1, 2, 2, 2, 2, 2, 0};
    QTest::newRow("depthwise, stride 2") << QList<int>{2, 6, 9, 9, 6, 3, 3, 2, 2, 1, 1, 1, 1, 6, 1};
    QTest::newRow("1x1") << QList<int>{2, 2, 5, 5, 5, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1};
    QTest::newRow("window mostly padding, stride 3") << QList<int>{1, 2, 4, 4, 4, 5, 5, 3, 3, 3, 3, 1, 1, 1, 0};
    QTest::newRow("batch 8, many blocks") << QList<int>{8, 5, 12, 20, 7, 3, 3, 1, 2, 1, 0, 1, 1, 1, 1};
  }
  void testConvolutionGeometries() {
    QFETCH(QList<int>, g);
    const int N = g[0], C = g[1], H = g[2], W = g[3], O = g[4], KH = g[5], KW = g[6], sh = g[7], sw = g[8], ph = g[9], pw = g[10],
              dh = g[11], dw = g[12], G = g[13];
    const bool bias = g[14];
    const int OH = (H + 2 * ph - dh * (KH - 1) - 1) / sh + 1, OW = (W + 2 * pw - dw * (KW - 1) - 1) / sw + 1;
    auto dims = [](std::initializer_list<int> d) {
      std::string s;
      for (int v : d) s += (s.empty() ? "" : ", ") + std::to_string(v);
      return s;
    };
    const std::string text =
        "class GraphModule(torch.nn.Module):\n"
        "    def forward(self, p_w: \"f32[" + dims({O, C / G, KH, KW}) + "]\"" + (bias ? ", p_b: \"f32[" + std::to_string(O) + "]\"" : "") +
        ", x: \"f32[" + dims({N, C, H, W}) + "]\"):\n"
        "        convolution: \"f32[" + dims({N, O, OH, OW}) + "]\" = torch.ops.aten.convolution.default(x, p_w, " + (bias ? "p_b" : "None") +
        ", [" + dims({sh, sw}) + "], [" + dims({ph, pw}) + "], [" + dims({dh, dw}) + "], False, [0, 0], " + std::to_string(G) + ");  x = p_w = None\n"
        "        return (convolution,)\n";
    QTemporaryDir dir;
    const std::string path = dir.filePath("conv.txt").toStdString();
    std::ofstream(path) << text;
    for (bool train : {false, true}) {
      try {  // the forward and its backward both ran as library calls
        QCOMPARE(library_calls_matching_reference(path, train, "convolution"), train ? 2 : 1);
      } catch (const std::exception& e) {
        QFAIL(e.what());
      }
    }
  }

  // An SGD step updates every parameter by -lr * its gradient (checked against the reference
  // gradients of the joint graph), and only parameters.
  void testSgdStep() {
    PipelineOptions o;
    o.train = true;
    o.sgd_lr = 0.1;
    o.timing_budget_ms = 20;
    const CompileResult r = run_pipeline(load_model(data("models/res_block/model.pt2")), o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    int params = 0;
    for (const Node& n : r.model.graph.nodes) params += n.input_kind == InputKind::parameter;
    QVERIFY(params > 0);
    QCOMPARE(r.training.num_updates, params);
    QVERIFY(r.check.ok);
    // The last output is the last parameter after the step: it moved.
    std::string last;
    for (size_t k = 0; k < r.training.joint.grad_of.size(); ++k)
      if (!r.training.joint.grad_of_user_input[k]) last = r.training.joint.grad_of[k];
    const Tensor& before = r.training.joint.graph.weights.at(last);
    const Tensor& updated = r.outputs.back();
    QCOMPARE(updated.shape(), before.shape());
    QVERIFY(!compare(updated, before, Tolerance{0, 0}).ok);
  }

  // A graph from text has no weights: random ones stand in, scaled by 1/sqrt(fan-in) as PyTorch
  // initialises layers, so a whole transformer block's training step stays within float32
  // tolerance of the float64 reference (unscaled, 578 of 32768 gradient elements were not).
  void testTextGraphTrainingStep() {
    PipelineOptions o;
    o.train = true;
    o.timing_budget_ms = 5;
    const CompileResult r = run_pipeline(load_model(data("stages/attn_block/3_core_aten.txt")), o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    for (const OutputCheck& c : r.check.reference) QVERIFY2(c.cmp.ok, c.cmp.why.c_str());
    QVERIFY(r.check.ok);
  }

  // `compile --train`: exit 0 with the gradients and both partitioners in the report; exit 1,
  // naming the gradient, when the expected gradient is wrong.
  void testCliTrain() {
    const QString report = QDir::temp().filePath("lowerscope_train_report.json");
    QProcess cli;
    cli.start(LS_CLI, {"compile", QString(LS_TEST_DATA) + "/models/softmax", "--train", "--quiet", "--report", report});
    QVERIFY(cli.waitForFinished(600000));
    QCOMPARE(cli.exitCode(), 0);
    QFile f(report);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray j = f.readAll();
    for (const char* key : {"\"gradients\"", "\"min_cut\"", "\"default\"", "\"saved_bytes\"", "grad_in0.npy"})
      QVERIFY2(j.contains(key), key);
    cli.start(LS_CLI, {"compile", QString(LS_TEST_DATA) + "/models/softmax", "--train", "--quiet", "--expect-grads",
                       QString(LS_TEST_DATA) + "/models/softmax/out.npy"});
    QVERIFY(cli.waitForFinished(600000));
    QCOMPARE(cli.exitCode(), 1);
    QVERIFY(cli.readAllStandardError().contains("gradient of x"));
  }

  // The vectorizable float erf and tanh of the kernels' prelude, against the C library in double
  // over [-8, 8] and near zero: absolute error under 3e-7 (erf, a ratio of polynomials: 5e-7; it
  // measured 3.7e-7 with fused multiply-adds, 4.2e-7 without), relative under 1e-6 for small inputs.
  void testVectorMathAccuracy_data() {
    QTest::addColumn<QString>("op");
    QTest::newRow("erf") << "aten.erf.default";
    QTest::newRow("tanh") << "aten.tanh.default";
  }
  void testVectorMathAccuracy() {
    QFETCH(QString, op);
    LoadedModel m;
    m.path = "generated";
    const int64_t n = 16384;
    GraphBuilder b(m.graph);
    const Arg x = Arg::of_node(b.placeholder("x", TensorMeta::contiguous(DType::f32, {n})));
    m.graph.outputs.push_back(b.call(op.toStdString(), {x}).node);
    Tensor in(DType::f32, {n});
    for (int64_t i = 0; i < n; ++i) in.set(i, i < n / 2 ? -8.0 + 16.0 * i / (n / 2) : std::ldexp(1.0, -int(i % 40)) * (i % 3 ? 1 : -1));
    m.inputs = {in};
    PipelineOptions o;
    o.timing_budget_ms = 1;
    const CompileResult r = run_pipeline(m, o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    double worst_abs = 0, worst_rel = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double v = static_cast<float>(in.get(i));
      const double want = op.contains("erf") ? std::erf(v) : std::tanh(v), got = r.outputs[0].get(i);
      worst_abs = std::max(worst_abs, std::abs(got - want));
      if (std::abs(v) < 0.5 && want != 0) worst_rel = std::max(worst_rel, std::abs(got - want) / std::abs(want));
    }
    QVERIFY2(worst_abs < (op.contains("erf") ? 5e-7 : 3e-7), qPrintable(QString("max abs error %1").arg(worst_abs)));
    QVERIFY2(worst_rel < 1e-6, qPrintable(QString("max rel error near zero %1").arg(worst_rel)));
  }

  // The external path keeps what it built, keyed by source and command: the second compile loads
  // the library from the cache, and it computes the same.
  void testExternalCompileCache() {
    QTemporaryDir dir;
    CpuCompileOptions co;
    co.external = true;
    co.cache_dir = dir.path().toStdString();
    const CompileResult r = compile_fixture("sincos/3_core_aten.txt", 1);
    const CpuCompileResult first = compile_cpp(r.source.code, co);
    QVERIFY(!first.from_cache);
    const CpuCompileResult second = compile_cpp(r.source.code, co);
    QVERIFY(second.from_cache);
    QVERIFY(second.ms < first.ms);
    QVERIFY(QDir(dir.path()).entryList({"*.so"}).size() == 1);
    co.opt_level = "-O2";  // another command: another entry
    QVERIFY(!compile_cpp(r.source.code, co).from_cache);
    QVERIFY(compile_cpp(r.source.code, co).from_cache);
    for (const CpuCompileResult* c : {&first, &second})
      QVERIFY(c->code->symbol(r.source.kernels.at(0).name) != nullptr);
  }

  // The in-process path keeps its object file with the IR and assembly it showed: the second
  // compile links the object from the cache and shows the same machine code.
  void testJitCompileCache() {
    if (!have_clang_jit()) QSKIP("no in-process Clang in this build");
    QTemporaryDir dir;
    CpuCompileOptions co;
    co.cache_dir = dir.path().toStdString();
    const CompileResult r = compile_fixture("mse_loss/3_core_aten.txt", 2);
    const CpuCompileResult first = compile_cpp(r.source.code, co);
    QVERIFY(!first.from_cache);
    const CpuCompileResult second = compile_cpp(r.source.code, co);
    QVERIFY(second.from_cache);
    QVERIFY(second.ms < first.ms);
    QVERIFY(!second.assembly.empty());
    QCOMPARE(second.assembly, first.assembly);
    QCOMPARE(second.llvm_ir, first.llvm_ir);
    QVERIFY(second.code->symbol(r.source.kernels.at(0).name) != nullptr);
    co.opt_level = "-O1";  // other options: another entry
    QVERIFY(!compile_cpp(r.source.code, co).from_cache);
  }

  void testReportHasContract() {
    const CompileResult r = compile_fixture("sincos/3_core_aten.txt", 1);
    const std::string j = report_json(r);
    for (const char* key : {"\"stages\"", "\"kernels\"", "\"check\"", "\"max_abs_err\"", "\"rel_err\"", "\"compile_ms\"", "\"run_ms\"", "\"ops\""})
      QVERIFY2(j.find(key) != std::string::npos, key);
    // A training step whose joint graph failed has no partitions: its report still writes (the
    // CLI's --report threw a bare vector range error there, hiding the stage's message).
    CompileResult failed;
    failed.train = true;
    failed.error_stage = "joint";
    failed.error = "node 'x': no derivative";
    const std::string fj = report_json(failed);
    QVERIFY(fj.find("no derivative") != std::string::npos);
    QVERIFY(fj.find("chosen_partitioner") == std::string::npos);
  }

  // Gathers through indirect indices: embedding and gather compile to generated kernels (no
  // library call), fused with the pointwise work around them, and give what plain loops over the
  // inputs give (written here, apart from the reference kernels). An index out of range is an
  // error naming the kernel, the node, the value and the size, in generated code as in the
  // reference interpreter; gather takes no negative index (PyTorch raises), so -1 is out of range.
  void testGathersAreGeneratedCode() {
    LoadedModel m = load_model(data("indexing/gather_embedding.txt"));
    Tensor& ids = m.inputs[1];
    Tensor& idx = m.inputs[3];
    for (int64_t i = 0; i < ids.numel(); ++i) ids.set(i, (i * 5 + 3) % 12);
    for (int64_t i = 0; i < idx.numel(); ++i) idx.set(i, (i * 7 + 1) % 12);
    PipelineOptions o;
    o.timing_budget_ms = 1;
    CompileResult r = run_pipeline(m, o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    for (const Kernel& k : r.schedule.kernels) QVERIFY2(!k.is_extern, k.name.c_str());
    QCOMPARE(r.schedule.kernels.size(), size_t{2});
    QVERIFY(r.source.code.find("ls_index_fault(") != std::string::npos);
    const Tensor &w = m.inputs[0], &x = m.inputs[2];
    for (int64_t i = 0; i < 10; ++i)
      for (int64_t j = 0; j < 8; ++j) {
        const double v = std::max(0.0, w.get(ids.get(i) * 8 + j)) * 2.0;
        QVERIFY(std::abs(r.outputs[0].get(i * 8 + j) - v) <= 1e-5 + 1e-5 * std::abs(v));
      }
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        const double v = -std::exp(x.get(i * 12 + static_cast<int64_t>(idx.get(i * 3 + j))));
        QVERIFY(std::abs(r.outputs[1].get(i * 3 + j) - v) <= 1e-5 + 1e-4 * std::abs(v));
      }
    ids.set(7, 12);
    r = run_pipeline(m, o);
    QVERIFY2(r.error.find("index 12 is out of bounds for dimension with size 12") != std::string::npos, r.error.c_str());
    QVERIFY2(r.error.find("node 'embedding'") != std::string::npos, r.error.c_str());
    ids.set(7, 0);
    idx.set(5, -1);
    r = run_pipeline(m, o);
    QVERIFY2(r.error.find("index -1 is out of bounds") != std::string::npos, r.error.c_str());
    QVERIFY2(r.error.find("gather") != std::string::npos, r.error.c_str());
    // embedding takes no negative index either.
    idx.set(5, 0);
    ids.set(2, -3);
    r = run_pipeline(m, o);
    QVERIFY2(r.error.find("index -3 is out of bounds") != std::string::npos, r.error.c_str());
    // An exported package's runner stops there too, with the app's words: compiled on good ids,
    // run on a bad one (its data/ file rewritten), it exits non-zero naming the kernel and the node.
    ids.set(2, 0);
    r = run_pipeline(m, o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QTemporaryDir dir;
    const std::string pkg = dir.filePath("package").toStdString();
    export_package(r, pkg);
    ids.set(7, 12);
    save_npy(pkg + "/data/" + r.loops.inputs.at(1) + ".npy", ids);
    ids.set(7, 0);
    std::string said;
    try {
      build_and_run_package(QString::fromStdString(pkg));
    } catch (const std::exception& e) {
      said = e.what();
    }
    QVERIFY2(said.find("run_model") != std::string::npos, ("the runner did not fail: " + said).c_str());
    QVERIFY2(said.find("index 12 is out of bounds for dimension with size 12") != std::string::npos, said.c_str());
    QVERIFY2(said.find("from node 'embedding'") != std::string::npos, said.c_str());
  }

  // aten.index.Tensor as generated code: index tensors broadcast together, placed where the
  // indexed dimensions were when adjacent and in front when not, negative indices counted from
  // the end; checked against plain loops written here, in one kernel with the sigmoid they read.
  void testAdvancedIndexingIsGeneratedCode() {
    LoadedModel m = load_model(data("indexing/index.txt"));
    Tensor &x = m.inputs[0], &i = m.inputs[1], &j = m.inputs[2];
    const int64_t iv[4] = {3, -1, 0, 4}, jv[8] = {4, -5, 2, 0, 1, 3, -2, -1};  // j indexes sizes 7 and 5
    for (int64_t k = 0; k < 4; ++k) i.set(k, iv[k]);
    for (int64_t k = 0; k < 8; ++k) j.set(k, jv[k]);
    PipelineOptions o;
    o.timing_budget_ms = 1;
    CompileResult r = run_pipeline(m, o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    for (const Kernel& k : r.schedule.kernels) QVERIFY2(!k.is_extern, k.name.c_str());
    auto sig = [&](int64_t a, int64_t b, int64_t c) { return 1.0 / (1.0 + std::exp(-x.get((a * 6 + b) * 7 + c))); };
    auto wrap = [](int64_t v, int64_t n) { return v < 0 ? v + n : v; };
    auto close = [](double got, double want) { return std::abs(got - want) <= 1e-5 + 1e-4 * std::abs(want); };
    for (int64_t a = 0; a < 5; ++a)
      for (int64_t k = 0; k < 4; ++k)
        for (int64_t c = 0; c < 7; ++c) QVERIFY(close(r.outputs[0].get((a * 4 + k) * 7 + c), 3.0 * sig(a, wrap(iv[k], 6), c)));
    for (int64_t p = 0; p < 2; ++p)
      for (int64_t k = 0; k < 4; ++k)
        for (int64_t b = 0; b < 6; ++b)
          QVERIFY(close(r.outputs[1].get((p * 4 + k) * 6 + b), sig(wrap(iv[k], 5), b, wrap(jv[p * 4 + k], 7))));
    for (int64_t p = 0; p < 2; ++p)
      for (int64_t k = 0; k < 4; ++k)
        for (int64_t c = 0; c < 7; ++c)
          QVERIFY(close(r.outputs[2].get((p * 4 + k) * 7 + c), sig(wrap(jv[p * 4 + k], 5), wrap(iv[k], 6), c)));
    j.set(0, 5);  // in range for x[i, :, j] (size 7), not for x[j, i] (size 5)
    r = run_pipeline(m, o);
    QVERIFY2(r.error.find("index 5 is out of bounds for dimension with size 5") != std::string::npos, r.error.c_str());
    QVERIFY2(r.error.find("node 'c'") != std::string::npos, r.error.c_str());
  }

  // index_put of whole rows (embedding_dense_backward's form: one index tensor on dimension 0,
  // float32) as generated code (a copy of x, then a scatter over the values' rows, parallel
  // over the threads): accumulated with repeated and negative indices (atomic adds), or written
  // (indices without repeats: PyTorch leaves the winner of a repeated index unspecified);
  // checked against loops written here. An index out of range is named, with its node.
  void testIndexPutRows() {
    const int64_t V = 37, R = 6604, n = 10;  // rows long enough to be split between threads
    Tensor x(DType::f32, {V, R}), v(DType::f32, {2, 5, R}), idx(DType::i64, {2, 5}), once(DType::i64, {2, 5});
    const int64_t iv[n] = {3, -1, 3, 0, 36, 3, 7, -37, 12, 3}, ov[n] = {3, -1, 4, 0, 35, 5, 7, -30, 12, 2};
    for (int64_t k = 0; k < n; ++k) idx.set(k, iv[k]), once.set(k, ov[k]);
    for (int64_t e = 0; e < x.numel(); ++e) x.set(e, 0.25 * static_cast<double>(e % 11) - 1);
    for (int64_t e = 0; e < v.numel(); ++e) v.set(e, 0.125 * static_cast<double>((e * 7) % 13) - 0.5);
    const std::string text =
        "class G(torch.nn.Module):\n"
        "    def forward(self, x: \"f32[37, 6604]\", v: \"f32[2, 5, 6604]\", idx: \"i64[2, 5]\", once: \"i64[2, 5]\"):\n"
        "        acc: \"f32[37, 6604]\" = torch.ops.aten.index_put.default(x, [idx], v, True)\n"
        "        put: \"f32[37, 6604]\" = torch.ops.aten.index_put.default(x, [once], v)\n"
        "        return (acc, put)\n";
    CompileResult r = compile_graph_text(text, {x, v, idx, once}, false);
    QVERIFY2(r.error.empty(), r.error.c_str());
    for (const Kernel& k : r.schedule.kernels) QVERIFY2(!k.is_extern, k.name.c_str());
    std::vector<float> acc(static_cast<size_t>(V * R)), put(acc.size());
    for (int64_t e = 0; e < V * R; ++e) acc[e] = put[e] = static_cast<float>(x.get(e));
    for (int64_t k = 0; k < n; ++k) {
      const int64_t row = iv[k] < 0 ? iv[k] + V : iv[k], orow = ov[k] < 0 ? ov[k] + V : ov[k];
      for (int64_t j = 0; j < R; ++j) {
        acc[row * R + j] += static_cast<float>(v.get(k * R + j));  // (sums of these values are exact in any order)
        put[orow * R + j] = static_cast<float>(v.get(k * R + j));
      }
    }
    for (int64_t e = 0; e < V * R; ++e) {
      QCOMPARE(static_cast<float>(r.outputs[0].get(e)), acc[e]);
      QCOMPARE(static_cast<float>(r.outputs[1].get(e)), put[e]);
    }
    idx.set(4, 37);
    r = compile_graph_text(text, {x, v, idx, once}, false);
    QVERIFY2(r.error.find("index 37 is out of bounds for dimension with size 37") != std::string::npos, r.error.c_str());
    QVERIFY2(r.error.find("node 'acc'") != std::string::npos, r.error.c_str());
  }

  // The scatter family and index_put as generated code (Inductor's Scatter: a copy of self, then
  // a loop over the index storing through it), no library call: scatter_add and index_put with
  // accumulate sum repeated indices (atomic adds over the threads), scatter_reduce "sum" without
  // self starts the hit positions from 0, scatter.value and index_put overwrite, a negative
  // index_put index counts from the end; checked against loops written here. An index out of
  // range records its fault and skips its store: the run fails naming the node, the value and
  // the size, and no element outside the buffer (nor element 0) is written.
  // The fused stage's drawing of scatters: a scatter writes the buffer its copy of self wrote, and
  // keyed by buffer both were one Graphviz node, the scatter's kernel an empty cluster (the app
  // then showed "Cannot read Graphviz's layout"). Every loop node is drawn once, under a key of its
  // own, and Graphviz lays out every kernel's cluster with its nodes.
  void testScatterKernelsDrawnApart() {
    PipelineOptions o;
    o.run = false;
    const CompileResult r = run_pipeline(load_model(data("stages/op_scatter/index_put.txt")), o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    int scatters = 0;
    for (const LoopNode& n : r.loops.nodes) scatters += n.kind == LoopNode::Kind::scatter;
    QVERIFY(scatters > 0);
    const std::string& dot = r.stage("fused")->dot;
    const std::regex decl("\\n\\s+\"([^\"]+)\" \\[id=\"([^\"]+)\"");
    std::set<std::string> keys;
    std::map<std::string, int> drawn;
    for (auto it = std::sregex_iterator(dot.begin(), dot.end(), decl); it != std::sregex_iterator(); ++it) {
      QVERIFY2(keys.insert((*it)[1]).second, ("two nodes under the key " + (*it)[1].str()).c_str());
      ++drawn[(*it)[2]];
    }
    for (const Kernel& k : r.schedule.kernels)
      if (!k.is_extern)
        for (int n : k.nodes) QVERIFY2(drawn[r.loops.nodes[n].name] == 1, r.loops.nodes[n].name.c_str());
    // Graphviz itself: no cluster left without nodes
    QTemporaryDir dir;
    const QString in = dir.filePath("fused.dot"), out = dir.filePath("fused.json");
    std::ofstream(in.toStdString()) << dot;
    QProcess dotp;
    dotp.start("dot", {"-Tjson", in, "-o", out});
    QVERIFY(dotp.waitForFinished(600000) && dotp.exitCode() == 0);
    const nlohmann::json layout = nlohmann::json::parse(std::ifstream(out.toStdString()));
    int clusters = 0;
    for (const auto& obj : layout.at("objects")) {
      const std::string name = obj.at("name");
      if (name.rfind("cluster_", 0) != 0) continue;
      ++clusters;
      QVERIFY2(obj.contains("nodes") && !obj.at("nodes").empty(), ("a kernel's cluster without nodes: " + name).c_str());
    }
    QVERIFY(clusters > scatters);
  }

  void testScattersAreGeneratedCode() {
    const int64_t N = 4096, C = 64, M = 3000;  // M * C elements: enough for the loops to run in parallel
    Tensor y(DType::f32, {N, C}), s(DType::f32, {M, C}), i(DType::i64, {M, C}), rows(DType::i64, {M});
    for (int64_t e = 0; e < y.numel(); ++e) y.set(e, 0.5 * static_cast<double>(e % 7) - 1.5);
    for (int64_t e = 0; e < s.numel(); ++e) s.set(e, 0.25 * static_cast<double>((e * 5) % 9) - 1);
    for (int64_t e = 0; e < i.numel(); ++e) i.set(e, (e * 37 + e / 11) % 1000);  // each hit 3 times or so
    for (int64_t k = 0; k < M; ++k) rows.set(k, k % 2 ? (k * 7) % N : -1 - (k * 13) % N);  // negative: from the end
    const std::string text =
        "class G(torch.nn.Module):\n"
        "    def forward(self, y: \"f32[4096, 64]\", s: \"f32[3000, 64]\", i: \"i64[3000, 64]\", rows: \"i64[3000]\"):\n"
        "        add: \"f32[4096, 64]\" = torch.ops.aten.scatter_add.default(y, 0, i, s)\n"
        "        red: \"f32[4096, 64]\" = torch.ops.aten.scatter_reduce.two(y, 0, i, s, 'sum', include_self = False)\n"
        "        val: \"f32[4096, 64]\" = torch.ops.aten.scatter.value(y, 0, i, 2.5)\n"
        "        acc: \"f32[4096, 64]\" = torch.ops.aten.index_put.default(y, [rows], s, True)\n"
        "        return (add, red, val, acc)\n";
    CompileResult r = compile_graph_text(text, {y, s, i, rows}, false);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QVERIFY2(r.check.ok, "the run differs from the reference interpreter");
    int scatters = 0;
    for (const Kernel& k : r.schedule.kernels) {
      QVERIFY2(!k.is_extern, k.name.c_str());
      for (int n : k.nodes) scatters += r.loops.nodes[n].kind == LoopNode::Kind::scatter;
    }
    QCOMPARE(scatters, 5);  // red: zeros, then the adds
    QVERIFY(r.source.code.find("#pragma omp atomic") != std::string::npos);
    std::vector<double> add(static_cast<size_t>(N * C)), red(add.size()), val(add.size()), acc(add.size());
    std::vector<bool> hit(add.size(), false);
    for (int64_t e = 0; e < N * C; ++e) add[e] = red[e] = val[e] = acc[e] = y.get(e);
    for (int64_t e = 0; e < M * C; ++e) {
      const int64_t to = static_cast<int64_t>(i.get(e)) * C + e % C;
      add[to] += s.get(e);
      red[to] = hit[to] ? red[to] + s.get(e) : s.get(e);
      hit[to] = true;
      val[to] = 2.5;
      const int64_t row = static_cast<int64_t>(rows.get(e / C));
      acc[(row < 0 ? row + N : row) * C + e % C] += s.get(e);
    }
    for (int64_t e = 0; e < N * C; ++e) {  // sums of these values are exact in float32, in any order
      QCOMPARE(r.outputs[0].get(e), add[e]);
      QCOMPARE(r.outputs[1].get(e), red[e]);
      QCOMPARE(r.outputs[2].get(e), val[e]);
      QCOMPARE(r.outputs[3].get(e), acc[e]);
    }
    i.set(100, N + 5);
    r = compile_graph_text(text, {y, s, i, rows}, false);
    QVERIFY2(r.error.find("index 4101 is out of bounds for dimension with size 4096") != std::string::npos, r.error.c_str());
    QVERIFY2(r.error.find("from node 'add'") != std::string::npos, r.error.c_str());
    i.set(100, 0);
    rows.set(7, -N - 1);
    r = compile_graph_text(text, {y, s, i, rows}, false);
    QVERIFY2(r.error.find("is out of bounds for dimension with size 4096") != std::string::npos, r.error.c_str());
    QVERIFY2(r.error.find("from node 'acc'") != std::string::npos, r.error.c_str());
  }

  // Max pooling with padding, ceil_mode and dilation (with and without a stride beside it), and its
  // backward where windows overlap, as
  // generated code (ResNet's 3x3 stride-2 stem was the reference kernel: 111 ms on 32x64x112x112
  // here): no library call left; values, saved indices and the input gradient against the
  // reference interpreter's kernels, with windows of -inf only beside the padding (the index is
  // the first inside position, as PyTorch's) and a NaN (it wins).
  void testMaxPoolPaddedIsGeneratedCode() {
    const std::string text =
        "class G(torch.nn.Module):\n"
        "    def forward(self, x: \"f32[2, 3, 11, 9]\"):\n"
        "        a = torch.ops.aten.max_pool2d_with_indices.default(x, [3, 3], [2, 2], [1, 1])\n"
        "        a0: \"f32[2, 3, 6, 5]\" = a[0]\n"
        "        b = torch.ops.aten.max_pool2d_with_indices.default(x, [2, 3], [2, 2], [0, 1], [1, 1], True)\n"
        "        b0: \"f32[2, 3, 6, 5]\" = b[0]\n"
        "        c = torch.ops.aten.max_pool2d_with_indices.default(x, [3, 2], [1, 2], [1, 0], [2, 1])\n"
        "        c0: \"f32[2, 3, 9, 4]\" = c[0]\n"
        "        e = torch.ops.aten.max_pool2d_with_indices.default(x, [2, 2], [2, 2], [1, 1], [2, 2])\n"
        "        e0: \"f32[2, 3, 6, 5]\" = e[0]\n"
        "        return (a0, b0, c0, e0)\n";
    LoadedModel m = load_graph_text(text);
    Tensor& x = m.inputs[0];
    for (int64_t p = 0; p < 6; ++p) {  // plane p: its top-left corner -inf, one NaN in plane 1
      x.set(p * 99 + 0, -INFINITY);
      x.set(p * 99 + 1, -INFINITY);
      x.set(p * 99 + 9, -INFINITY);
      x.set(p * 99 + 10, -INFINITY);
    }
    x.set(99 + 40, NAN);
    for (bool train : {false, true}) {
      PipelineOptions o;
      o.timing_budget_ms = 1;
      o.train = train;
      const CompileResult r = run_pipeline(m, o);
      QVERIFY2(r.error.empty(), r.error.c_str());
      for (const Kernel& k : r.schedule.kernels) QVERIFY2(!k.is_extern, k.name.c_str());
      QVERIFY(!r.check.reference.empty());
      for (const auto& c : r.check.reference) QVERIFY2(c.cmp.ok, (c.against + ": " + c.cmp.why).c_str());
      QVERIFY(r.check.ok);
    }
  }

  // arange is generated code (Inductor's ops.index_expr), not a library call: integer ranges with
  // negative steps, float ranges whose elements round (start + step * i in double, then float32,
  // as ATen's kernel), float64, and a range fused into its consumer (a causal mask of a
  // where); checked against the reference interpreter's arange.
  void testArangeIsGeneratedCode() {
    const std::string text =
        "class G(torch.nn.Module):\n"
        "    def forward(self, x: \"f32[7, 7]\"):\n"
        "        a: \"i64[5]\" = torch.ops.aten.arange.start_step(0, 10, 2)\n"
        "        b: \"i64[4]\" = torch.ops.aten.arange.start_step(7, -1, -2)\n"
        "        c: \"f32[29]\" = torch.ops.aten.arange.start_step(0.1, 3.0, 0.1)\n"
        "        d: \"f64[3]\" = torch.ops.aten.arange.start_step(0, 3, 1, dtype = torch.float64)\n"
        "        e: \"i32[6]\" = torch.ops.aten.arange.start_step(-3, 3, 1, dtype = torch.int32)\n"
        "        r: \"i64[7]\" = torch.ops.aten.arange.start_step(0, 7, 1)\n"
        "        u: \"i64[1, 7]\" = torch.ops.aten.unsqueeze.default(r, 0)\n"
        "        v: \"i64[7, 1]\" = torch.ops.aten.unsqueeze.default(r, 1)\n"
        "        m: \"b8[7, 7]\" = torch.ops.aten.le.Tensor(u, v)\n"
        "        y: \"f32[7, 7]\" = torch.ops.aten.where.ScalarOther(m, x, -1.0)\n"
        "        return (a, b, c, d, e, y)\n";
    const LoadedModel m = load_graph_text(text);
    PipelineOptions o;
    o.timing_budget_ms = 1;
    const CompileResult r = run_pipeline(m, o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    for (const Kernel& k : r.schedule.kernels) QVERIFY2(!k.is_extern, k.name.c_str());
    QVERIFY(r.schedule.kernels.size() <= 6);  // the mask's range fuses into the where
    QVERIFY(!r.check.reference.empty());
    for (const auto& c : r.check.reference) QVERIFY2(c.cmp.ok, (c.against + ": " + c.cmp.why).c_str());
    QVERIFY(r.check.ok);
  }

  // argmax/argmin, max.dim/min.dim (generated arg reductions: testArgReductionsAndProdAreGeneratedCode)
  // and cumsum (a typed library kernel, float32 and int64): checked against the reference
  // interpreter's kernels on inputs with ties (the first wins), NaNs (the first NaN wins, for max
  // and min alike), every dimension and keepdim, a flat argmin, and an int64 cumsum that wraps.
  void testArgExtremaAndCumsumLibraryKernels() {
    const std::string text =
        "class G(torch.nn.Module):\n"
        "    def forward(self, x: \"f32[5, 6, 7]\", n: \"i64[3, 4]\"):\n"
        "        a0: \"i64[6, 7]\" = torch.ops.aten.argmax.default(x, 0)\n"
        "        a1: \"i64[5, 1, 7]\" = torch.ops.aten.argmin.default(x, 1, True)\n"
        "        a2: \"i64[]\" = torch.ops.aten.argmin.default(x)\n"
        "        m = torch.ops.aten.max.dim(x, -1)\n"
        "        m0: \"f32[5, 6]\" = m[0]\n"
        "        m1: \"i64[5, 6]\" = m[1]\n"
        "        k = torch.ops.aten.min.dim(x, 1, True)\n"
        "        k0: \"f32[5, 1, 7]\" = k[0]\n"
        "        k1: \"i64[5, 1, 7]\" = k[1]\n"
        "        c0: \"f32[5, 6, 7]\" = torch.ops.aten.cumsum.default(x, 1)\n"
        "        c1: \"f32[5, 6, 7]\" = torch.ops.aten.cumsum.default(x, -1)\n"
        "        c2: \"i64[3, 4]\" = torch.ops.aten.cumsum.default(n, 0)\n"
        "        return (a0, a1, a2, m0, m1, k0, k1, c0, c1, c2)\n";
    LoadedModel m = load_graph_text(text);
    Tensor &x = m.inputs[0], &n = m.inputs[1];
    for (int64_t e = 0; e < x.numel(); ++e) x.set(e, static_cast<double>((e * 37) % 11) - 5);  // many ties
    x.set(3 * 42 + 7 + 2, NAN);
    x.set(4 * 42 + 7 * 5 + 6, NAN);
    x.set(4 * 42 + 7 * 5 + 1, NAN);
    for (int64_t e = 0; e < n.numel(); ++e) n.set(e, e % 2 ? 9e18 : -3);  // 9e18 + 9e18 wraps
    PipelineOptions o;
    o.timing_budget_ms = 1;
    const CompileResult r = run_pipeline(m, o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QCOMPARE(r.check.reference.size(), size_t(10));
    for (const auto& c : r.check.reference) QVERIFY2(c.cmp.ok, (c.against + ": " + c.cmp.why).c_str());
    // The NaN of line (4, 5) along the last dimension: at 1, before the one at 6.
    QCOMPARE(r.outputs[4].get(4 * 6 + 5), 1.0);
    QVERIFY(std::isnan(r.outputs[3].get(4 * 6 + 5)));
  }

  // prod, argmax/argmin and max.dim/min.dim are generated reductions (as Inductor's "prod",
  // "argmax" and "argmin"), no library call: every output matches the reference interpreter's
  // kernels on ties (the first index wins), NaNs (the first NaN wins, for max and min alike),
  // rows of -inf only (index 0), int64 and bool inputs (prod of them gives int64), keepdim, a
  // non-innermost dimension (the column form), a dimension of size 1, rows of 50 (NaNs and ties
  // 16 apart: lanes would hold them apart), a row of 100,000 elements (chunks of lanes over all
  // threads, combined in order), and beside them maxima in lanes with tails (two single rows in one
  // function, two r loops of a row); the indices known by hand are checked too.
  void testArgReductionsAndProdAreGeneratedCode() {
    const std::string text =
        "class G(torch.nn.Module):\n"
        "    def forward(self, x: \"f32[5, 6, 7]\", n: \"i64[4, 9]\", b: \"b8[4, 9]\", big: \"f32[100000]\", ninf: \"f32[3, 8]\", w: \"f32[6, 50]\", u: \"f32[6, 50]\", z: \"f32[256, 40]\"):\n"
        "        a0: \"i64[6, 7]\" = torch.ops.aten.argmax.default(x, 0)\n"
        "        a1: \"i64[5, 1, 7]\" = torch.ops.aten.argmin.default(x, 1, True)\n"
        "        a2: \"i64[]\" = torch.ops.aten.argmax.default(x)\n"
        "        m = torch.ops.aten.max.dim(x, -1)\n"
        "        m0: \"f32[5, 6]\" = m[0]\n"
        "        m1: \"i64[5, 6]\" = m[1]\n"
        "        k = torch.ops.aten.min.dim(x, 1, True)\n"
        "        k0: \"f32[5, 1, 7]\" = k[0]\n"
        "        k1: \"i64[5, 1, 7]\" = k[1]\n"
        "        n0: \"i64[4]\" = torch.ops.aten.argmax.default(n, 1)\n"
        "        n1: \"i64[]\" = torch.ops.aten.argmin.default(n)\n"
        "        nm = torch.ops.aten.max.dim(n, 0)\n"
        "        nm0: \"i64[9]\" = nm[0]\n"
        "        nm1: \"i64[9]\" = nm[1]\n"
        "        b0: \"i64[4]\" = torch.ops.aten.argmax.default(b, 1)\n"
        "        b1: \"i64[9]\" = torch.ops.aten.argmin.default(b, 0)\n"
        "        g0: \"i64[]\" = torch.ops.aten.argmax.default(big)\n"
        "        gm = torch.ops.aten.min.dim(big, 0)\n"
        "        gm0: \"f32[]\" = gm[0]\n"
        "        gm1: \"i64[]\" = gm[1]\n"
        "        f0: \"i64[3]\" = torch.ops.aten.argmax.default(ninf, 1)\n"
        "        neg: \"f32[3, 8]\" = torch.ops.aten.neg.default(ninf)\n"
        "        f1: \"i64[3, 1]\" = torch.ops.aten.argmin.default(neg, 1, True)\n"
        "        v: \"f32[5, 1, 42]\" = torch.ops.aten.view.default(x, [5, 1, 42])\n"
        "        s0: \"i64[5, 42]\" = torch.ops.aten.argmax.default(v, 1)\n"
        "        p0: \"f32[5, 7]\" = torch.ops.aten.prod.dim_int(x, 1)\n"
        "        p1: \"i64[]\" = torch.ops.aten.prod.default(n)\n"
        "        p2: \"i64[4, 1]\" = torch.ops.aten.prod.dim_int(b, 1, True)\n"
        "        p3: \"i64[9]\" = torch.ops.aten.prod.dim_int(n, 0)\n"
        "        p4: \"f32[5, 1, 42]\" = torch.ops.aten.prod.dim_int(v, 1, True)\n"
        "        w0: \"i64[6]\" = torch.ops.aten.argmax.default(w, 1)\n"
        "        wm = torch.ops.aten.min.dim(w, 1)\n"
        "        wm0: \"f32[6]\" = wm[0]\n"
        "        wm1: \"i64[6]\" = wm[1]\n"
        "        w1: \"i64[]\" = torch.ops.aten.argmin.default(w)\n"
        "        ws: \"f32[2, 50]\" = torch.ops.aten.slice.Tensor(w, 0, 0, 2)\n"
        "        w2: \"i64[]\" = torch.ops.aten.argmax.default(ws)\n"
        "        wx: \"f32[6, 1]\" = torch.ops.aten.amax.default(w, [1], True)\n"
        "        wd: \"f32[6, 50]\" = torch.ops.aten.sub.Tensor(w, wx)\n"
        "        w3: \"i64[6]\" = torch.ops.aten.argmin.default(wd, 1)\n"
        "        ua: \"f32[]\" = torch.ops.aten.amax.default(u)\n"
        "        us: \"f32[2, 50]\" = torch.ops.aten.slice.Tensor(u, 0, 0, 2)\n"
        "        ub: \"f32[]\" = torch.ops.aten.amax.default(us)\n"
        "        ux: \"f32[6, 1]\" = torch.ops.aten.amax.default(u, [1], True)\n"
        "        ud: \"f32[6, 50]\" = torch.ops.aten.sub.Tensor(u, ux)\n"
        "        uy: \"f32[6]\" = torch.ops.aten.amax.default(ud, [1])\n"
        "        z0: \"i64[40]\" = torch.ops.aten.argmax.default(z, 0)\n"
        "        zm = torch.ops.aten.min.dim(z, 0)\n"
        "        zm0: \"f32[40]\" = zm[0]\n"
        "        zm1: \"i64[40]\" = zm[1]\n"
        "        return (a0, a1, a2, m0, m1, k0, k1, n0, n1, nm0, nm1, b0, b1, g0, gm0, gm1, f0, f1, s0, p0, p1, p2, p3, p4, w0, wm0, wm1, w1, w2, w3, ua, ub, uy, z0, zm0, zm1)\n";
    LoadedModel m = load_graph_text(text);
    Tensor &x = m.inputs[0], &n = m.inputs[1], &b = m.inputs[2], &big = m.inputs[3], &ninf = m.inputs[4], &w = m.inputs[5], &z = m.inputs[7];
    for (int64_t e = 0; e < x.numel(); ++e) x.set(e, static_cast<double>((e * 37) % 11) - 5);  // many ties
    x.set(3 * 42 + 7 + 2, NAN);
    x.set(4 * 42 + 7 * 5 + 6, NAN);
    x.set(4 * 42 + 7 * 5 + 1, NAN);
    for (int64_t e = 0; e < n.numel(); ++e) n.set(e, static_cast<double>((e * 7) % 4 - 2));  // -2 .. 1
    n.set(13, 2);
    n.set(31, 2);  // column 4's maximum twice: row 1 wins
    for (int64_t e = 0; e < b.numel(); ++e) b.set(e, (e * 3) % 4 == 1 ? 1 : 0);
    for (int64_t e = 0; e < big.numel(); ++e) big.set(e, std::sin(0.001 * static_cast<double>(e)));
    big.set(12345, 3);
    big.set(99999, 3);  // the maximum twice: the first
    big.set(777, -3);
    big.set(88888, -3);
    for (int64_t e = 0; e < ninf.numel(); ++e) ninf.set(e, -INFINITY);
    for (int64_t e = 0; e < w.numel(); ++e) w.set(e, std::cos(0.7 * static_cast<double>(e)));
    w.set(2 * 50 + 37, NAN);
    w.set(2 * 50 + 20, NAN);  // lanes 5 and 4 of 16: the first NaN, 20
    w.set(3 * 50 + 33, 5);
    w.set(3 * 50 + 18, 5);  // lane 1 has 33, lane 2 has 18: 18
    w.set(4 * 50 + 49, -5);  // in the row's tail
    for (int64_t e = 0; e < z.numel(); ++e) z.set(e, std::sin(0.3 * static_cast<double>(e)));
    z.set(200 * 40 + 3, 7);
    z.set(20 * 40 + 3, 7);  // column 3's maximum in chunks 12 and 1 of the column form: 20
    z.set(250 * 40 + 5, NAN);
    z.set(100 * 40 + 5, NAN);  // column 5's NaNs: 100
    PipelineOptions o;
    o.timing_budget_ms = 1;
    const CompileResult r = run_pipeline(m, o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    for (const Kernel& k : r.schedule.kernels) QVERIFY2(!k.is_extern, k.name.c_str());
    QVERIFY(r.source.code.find("ls_arg_keeps(") != std::string::npos);
    QCOMPARE(r.check.reference.size(), size_t(36));
    for (const auto& c : r.check.reference) QVERIFY2(c.cmp.ok, (c.against + ": " + c.cmp.why).c_str());
    QCOMPARE(r.outputs[2].get(0), 3.0 * 42 + 7 + 2);  // the first NaN of the whole tensor
    QCOMPARE(r.outputs[4].get(4 * 6 + 5), 1.0);       // line (4, 5)'s first NaN, before the one at 6
    QVERIFY(std::isnan(r.outputs[3].get(4 * 6 + 5)));
    QCOMPARE(r.outputs[10].get(4), 1.0);                // n's column 4: 2 at rows 1 and 3
    QCOMPARE(r.outputs[13].get(0), 12345.0);
    QCOMPARE(r.outputs[15].get(0), 777.0);
    QCOMPARE(r.outputs[14].get(0), -3.0);
    for (int64_t i = 0; i < 3; ++i) QCOMPARE(r.outputs[16].get(i), 0.0);  // -inf only: index 0
    for (int64_t i = 0; i < 3; ++i) QCOMPARE(r.outputs[17].get(i), 0.0);
    for (int64_t i = 0; i < r.outputs[18].numel(); ++i) QCOMPARE(r.outputs[18].get(i), 0.0);  // over a size-1 dimension
    QCOMPARE(r.outputs[20].dtype(), DType::i64);
    QCOMPARE(r.outputs[24].get(2), 20.0);
    QCOMPARE(r.outputs[24].get(3), 18.0);
    QCOMPARE(r.outputs[26].get(2), 20.0);
    QCOMPARE(r.outputs[26].get(4), 49.0);
    QCOMPARE(r.outputs[27].get(0), 2.0 * 50 + 20);
    QCOMPARE(r.outputs[33].get(3), 20.0);
    QCOMPARE(r.outputs[33].get(5), 100.0);
    QCOMPARE(r.outputs[35].get(5), 100.0);
    QVERIFY(r.source.code.find("columns contiguous, rows strided: 16 chunks") != std::string::npos);  // z's
    QVERIFY(r.source.code.find("_l_i[r0i]") != std::string::npos);  // the single row's chunks: arg reductions in lanes
    // Lanes with tails (rows of 300, 100 and 50): ua's and ub's in one function, ux's and uy's in one row.
    QVERIFY(r.source.code.find("    {\n        int64_t r0o = 0;") != std::string::npos);
    QVERIFY(r.source.code.find("        {\n            int64_t r0o = 0;") != std::string::npos);
    // In bfloat16: max.dim's values accumulate in float32 and round where stored, in the loop of
    // their indices.
    o.dtype = DType::bf16;
    const CompileResult h = run_pipeline(m, o);
    QVERIFY2(h.error.empty(), h.error.c_str());
    for (const auto& c : h.check.reference) QVERIFY2(c.cmp.ok, (c.against + ": " + c.cmp.why).c_str());
    QCOMPARE(r.outputs[21].dtype(), DType::i64);
  }

  // sort and topk run typed library kernels, the scatters generated code (a copy, then a loop
  // storing through the index): checked against the reference interpreter's kernels on lines
  // with ties and NaNs (sort stable both ways, topk's indices as PyTorch's CPU kernel picks them,
  // in both of its algorithms), scatters along inner and outer dimensions with repeated indices
  // (too few to run in parallel: the last write stays, adds in order), an index smaller than
  // self, and an index out of range named with its node.
  void testSortTopkScatterLibraryKernels() {
    const std::string text =
        "class G(torch.nn.Module):\n"
        "    def forward(self, x: \"f32[4, 130]\", i: \"i64[3, 5]\", s: \"f32[3, 6]\"):\n"
        "        a = torch.ops.aten.sort.default(x, -1, True)\n"
        "        a0: \"f32[4, 130]\" = a[0]\n"
        "        a1: \"i64[4, 130]\" = a[1]\n"
        "        b = torch.ops.aten.sort.default(x, 0)\n"
        "        b0: \"f32[4, 130]\" = b[0]\n"
        "        b1: \"i64[4, 130]\" = b[1]\n"
        "        t = torch.ops.aten.topk.default(x, 2)\n"
        "        t0: \"f32[4, 2]\" = t[0]\n"
        "        t1: \"i64[4, 2]\" = t[1]\n"
        "        u = torch.ops.aten.topk.default(x, 100, 1, False)\n"
        "        u0: \"f32[4, 100]\" = u[0]\n"
        "        u1: \"i64[4, 100]\" = u[1]\n"
        "        z: \"f32[4, 7]\" = torch.ops.aten.full.default([4, 7], 0.5, pin_memory = False)\n"
        "        c0: \"f32[4, 7]\" = torch.ops.aten.scatter.src(z, 1, i, s)\n"
        "        c1: \"f32[4, 7]\" = torch.ops.aten.scatter_add.default(z, 1, i, s)\n"
        "        c2: \"f32[4, 7]\" = torch.ops.aten.scatter.value(z, 0, i, -2.0)\n"
        "        c3: \"f32[4, 7]\" = torch.ops.aten.scatter_add.default(z, 0, i, s)\n"
        "        return (a0, a1, b0, b1, t0, t1, u0, u1, c0, c1, c2, c3)\n";
    LoadedModel m = load_graph_text(text);
    Tensor &x = m.inputs[0], &i = m.inputs[1], &s = m.inputs[2];
    for (int64_t e = 0; e < x.numel(); ++e) x.set(e, static_cast<double>((e * 29) % 13) - 6);  // ties
    for (int64_t e : {3, 77, 200, 201, 450}) x.set(e, NAN);
    const int64_t iv[15] = {0, 3, 3, 1, 2, 2, 2, 0, 1, 3, 1, 0, 1, 1, 0};  // < 4 (dim 0) and < 7 (dim 1)
    for (int64_t e = 0; e < 15; ++e) i.set(e, iv[e]);
    for (int64_t e = 0; e < s.numel(); ++e) s.set(e, 0.25 * static_cast<double>(e) - 1);
    PipelineOptions o;
    o.timing_budget_ms = 1;
    CompileResult r = run_pipeline(m, o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QCOMPARE(r.check.reference.size(), size_t(12));
    for (const auto& c : r.check.reference) QVERIFY2(c.cmp.ok, (c.against + ": " + c.cmp.why).c_str());
    // Descending: the NaNs of row 0 first, in their order (3 before 77).
    QCOMPARE(r.outputs[1].get(0), 3.0);
    QCOMPARE(r.outputs[1].get(1), 77.0);
    i.set(7, 4);  // in range along dimension 1 (size 7), not along 0 (size 4)
    r = run_pipeline(m, o);
    QVERIFY2(r.error.find("index 4 is out of bounds for dimension with size 4") != std::string::npos, r.error.c_str());
    QVERIFY2(r.error.find("node 'c2'") != std::string::npos, r.error.c_str());
  }

  // Integer powers as PyTorch's powi (exact, wrapping; a negative exponent gives 0 but for bases
  // 1 and -1): checked against values worked out here, for int64 and int32 (the prelude's
  // ls_ipow; float overloads of ls_pow were once ambiguous for integers).
  void testIntegerPow() {
    const int64_t base[12] = {2, -2, 3, 1, -1, -1, 5, 0, 7, 10, -3, 2};
    const int64_t expo[12] = {10, 3, -1, -5, -3, -4, 0, 0, 2, 19, 5, 63};
    const int64_t want[12] = {1024, -8, 0, 1, -1, 1, 1, 1, 49, 0, -243, INT64_MIN};
    for (DType t : {DType::i64, DType::i32}) {
      Tensor a(t, {12}), b(t, {12});
      for (int64_t i = 0; i < 12; ++i) a.set(i, static_cast<double>(base[i])), b.set(i, static_cast<double>(expo[i]));
      const std::string ty = t == DType::i64 ? "i64" : "i32";
      const CompileResult r = compile_graph_text(
          "class G(torch.nn.Module):\n"
          "    def forward(self, a: \"" + ty + "[12]\", b: \"" + ty + "[12]\"):\n"
          "        p: \"" + ty + "[12]\" = torch.ops.aten.pow.Tensor_Tensor(a, b)\n"
          "        return (p,)\n",
          {a, b}, false);
      QVERIFY2(r.error.empty(), r.error.c_str());
      QVERIFY(r.check.ok);  // the reference interpreter's integer pow wraps the same way
      QVERIFY(r.source.code.find("ls_ipow(") != std::string::npos);
      for (int64_t i = 0; i < 12; ++i) {
        // 10^19 and 2^63 wrap: as int64 10^19 - 2^64, as int32 its low 32 bits; 2^63 likewise
        const uint64_t w = i == 9 ? 10000000000000000000ull : static_cast<uint64_t>(want[i]);
        const int64_t expect = t == DType::i64 ? static_cast<int64_t>(w) : static_cast<int32_t>(static_cast<uint32_t>(w));
        QCOMPARE(static_cast<int64_t>(r.outputs[0].get(i)), expect);
      }
    }
  }

  // An integer tensor compared with a number compares integers: x == 3 is not x == true.
  void testIntegerComparisonWithNumber() {
    Tensor x(DType::i64, {12});
    for (int64_t i = 0; i < 12; ++i) x.set(i, i - 2);
    const CompileResult r = compile_graph_text(
        "class G(torch.nn.Module):\n"
        "    def forward(self, x: \"i64[12]\"):\n"
        "        eq: \"b8[12]\" = torch.ops.aten.eq.Scalar(x, 3)\n"
        "        gt: \"b8[12]\" = torch.ops.aten.gt.Scalar(x, 4)\n"
        "        lo: \"b8[12]\" = torch.ops.aten.logical_or.default(eq, gt)\n"
        "        return (lo,)\n",
        {x}, false);
    QVERIFY2(r.error.empty(), r.error.c_str());
    for (int64_t i = 0; i < 12; ++i) QCOMPARE(r.outputs[0].get(i) != 0, (i - 2 == 3) || (i - 2 > 4));
  }

  // int64 / int64 is a true division (float32), as PyTorch promotes it: 7 / 2 is 3.5, not 3.
  void testIntegerTrueDivision() {
    Tensor a(DType::i64, {12}), b(DType::i64, {12});
    for (int64_t i = 0; i < 12; ++i) a.set(i, 3 * i - 7), b.set(i, i % 4 + 1);
    const CompileResult r = compile_graph_text(
        "class G(torch.nn.Module):\n"
        "    def forward(self, a: \"i64[12]\", b: \"i64[12]\"):\n"
        "        d: \"f32[12]\" = torch.ops.aten.div.Tensor(a, b)\n"
        "        m: \"f32[12]\" = torch.ops.aten.mul.Tensor(d, 0.5)\n"
        "        return (m,)\n",
        {a, b}, false);
    QVERIFY2(r.error.empty(), r.error.c_str());
    for (int64_t i = 0; i < 12; ++i) QCOMPARE(r.outputs[0].get(i), double(float((3.0 * i - 7) / (i % 4 + 1) * 0.5)));
  }

  // Lowered from Core ATen (--decompose core_aten), the Core ATen ops that are composites in our
  // table (elu, var, the rounding divisions, clamp) expand as their decompositions at lowering,
  // the others are lowered as they are; the outputs match the reference interpreter.
  void testLowersFromCoreAtenWithComposites() {
    for (const char* f : {"stages/op_reductions/div_modes.txt", "stages/op_reductions/shapes.txt"}) {
      PipelineOptions o;
      o.timing_budget_ms = 1;
      o.decompose_to = level::core_aten;
      const CompileResult r = run_pipeline(load_model(data(f)), o);
      QVERIFY2(r.error.empty(), (std::string(f) + ": " + r.error).c_str());
      QVERIFY2(r.check.ok, f);
      QVERIFY(r.prims.nodes.empty());
    }
  }

  // A reduction over one element (AlexNet's and VGG's adaptive average pool to the size it already
  // has, after a max pool): the value itself, a pointwise node; its kernel failed to be written.
  void testReductionOverOneElement() {
    Tensor x(DType::f32, {2, 4, 13, 13});
    for (int64_t i = 0; i < x.numel(); ++i) x.set(i, std::sin(0.37 * static_cast<double>(i)));
    const CompileResult r = compile_graph_text(
        "class G(torch.nn.Module):\n"
        "    def forward(self, x: \"f32[2, 4, 13, 13]\"):\n"
        "        relu: \"f32[2, 4, 13, 13]\" = torch.ops.aten.relu.default(x)\n"
        "        mp: \"f32[2, 4, 6, 6]\" = torch.ops.aten.max_pool2d.default(relu, [3, 3], [2, 2])\n"
        "        ap: \"f32[2, 4, 6, 6]\" = torch.ops.aten.adaptive_avg_pool2d.default(mp, [6, 6])\n"
        "        return (ap,)\n",
        {x}, false);
    QVERIFY2(r.error.empty(), r.error.c_str());
    for (int64_t p = 0; p < 8; ++p)  // each output: the largest of its 3x3 window after ReLU
      for (int64_t i = 0; i < 6; ++i)
        for (int64_t j = 0; j < 6; ++j) {
          double m = 0;
          for (int64_t a = 0; a < 3; ++a)
            for (int64_t b = 0; b < 3; ++b) m = std::max(m, x.get(p * 169 + (2 * i + a) * 13 + 2 * j + b));
          QVERIFY(std::abs(r.outputs[0].get(p * 36 + i * 6 + j) - m) < 1e-6);
        }
  }

  // The FFT library calls (FFTW where built) against the reference interpreter's DFTs, on the
  // inputs ATen's kernels take but rfft's results never are: complex values with imaginary parts
  // at 0 and n/2 (not read by a c2r), c2r inputs longer and shorter than n/2 + 1, dimensions out of
  // order, complex128, and the conjugate with real/imag after it.
  void testFftLibraryMatchesReference() {
    const std::string text =
        "class G(torch.nn.Module):\n"
        "    def forward(self, x: \"f32[3, 5, 6, 2]\", y: \"f64[4, 7, 2]\"):\n"
        "        z: \"c64[3, 5, 6]\" = torch.ops.aten.view_as_complex.default(x)\n"
        "        a: \"f32[3, 5, 10]\" = torch.ops.aten._fft_c2r.default(z, [0, 2], 2, 10)\n"
        "        b: \"f32[3, 5, 9]\" = torch.ops.aten._fft_c2r.default(z, [1, 2], 1, 9)\n"
        "        c: \"f32[3, 5, 14]\" = torch.ops.aten._fft_c2r.default(z, [2], 0, 14)\n"
        "        d: \"f32[3, 8, 6]\" = torch.ops.aten._fft_c2r.default(z, [2, 1], 0, 8)\n"
        "        w: \"c128[4, 7]\" = torch.ops.aten.view_as_complex.default(y)\n"
        "        e: \"c128[4, 7]\" = torch.ops.aten._fft_c2c.default(w, [0, 1], 1, True)\n"
        "        f: \"c128[4, 7]\" = torch.ops.aten._fft_c2c.default(w, [1], 2, False)\n"
        "        g: \"f64[4, 7]\" = torch.ops.aten._fft_c2r.default(w, [0], 1, 4)\n"
        "        h: \"c128[4, 7]\" = torch.ops.aten._fft_r2c.default(g, [1, 0], 2, False)\n"
        "        i: \"c128[4, 4]\" = torch.ops.aten._fft_r2c.default(g, [0, 1], 0, True)\n"
        "        j: \"c64[3, 5, 6]\" = torch.ops.aten._conj.default(z)\n"
        "        k: \"f32[3, 5, 6]\" = torch.ops.aten.real.default(j)\n"
        "        l: \"f32[3, 5, 6]\" = torch.ops.aten.imag.default(j)\n"
        "        return (a, b, c, d, e, f, g, h, i, k, l)\n";
    PipelineOptions o;
    o.timing_budget_ms = 2;
    const CompileResult r = run_pipeline(load_graph_text(text), o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QCOMPARE(r.check.reference.size(), size_t(11));
    for (const auto& c : r.check.reference) QVERIFY2(c.cmp.ok, (c.against + ": " + c.cmp.why).c_str());
    int ffts = 0;
    for (const KernelReport& k : r.kernels) ffts += k.name.find("_fft_") != std::string::npos;
    QCOMPARE(ffts, 9);
  }

  // The mean of complex values (torch.mean of an FFT's result: the DC term of a spectrum's
  // average, a spectral loss), whole and along each dimension with keepdim, in complex64 and
  // complex128: against the means of a direct DFT in double (tests/fft_reference.h), and the
  // reference interpreter. A complex mean was refused before ("mean needs a floating point input").
  void testComplexMeanMatchesDirectDft() {
    const std::string text =
        "class G(torch.nn.Module):\n"
        "    def forward(self, x: \"f32[3, 8]\", y: \"f64[4, 6]\"):\n"
        "        r: \"c64[3, 5]\" = torch.ops.aten._fft_r2c.default(x, [1], 0, True)\n"
        "        m: \"c64[]\" = torch.ops.aten.mean.default(r)\n"
        "        mr: \"f32[2]\" = torch.ops.aten.view_as_real.default(m)\n"
        "        d: \"c64[3, 1]\" = torch.ops.aten.mean.dim(r, [1], True)\n"
        "        dr: \"f32[3, 1, 2]\" = torch.ops.aten.view_as_real.default(d)\n"
        "        z: \"c128[4, 6]\" = torch.ops.aten._fft_r2c.default(y, [0, 1], 2, False)\n"
        "        e: \"c128[6]\" = torch.ops.aten.mean.dim(z, [0])\n"
        "        er: \"f64[6, 2]\" = torch.ops.aten.view_as_real.default(e)\n"
        "        return (mr, dr, er)\n";
    LoadedModel m = load_graph_text(text);
    QCOMPARE(m.inputs.size(), size_t(2));
    std::vector<std::vector<double>> in(2);
    for (size_t k = 0; k < 2; ++k)
      for (int64_t e = 0; e < m.inputs[k].numel(); ++e) {
        m.inputs[k].set(e, std::cos(0.9 * static_cast<double>(e + 1) * static_cast<double>(k + 1)) + 0.3);
        in[k].push_back(m.inputs[k].get(e));
      }
    using cd = std::complex<double>;
    namespace fr = fft_reference;
    const std::vector<cd> r = fr::definition(fr::Type::r2c, in[0], {3, 8}, {3, 5}, {1}, 0);
    cd whole = 0;
    for (const cd& v : r) whole += v;
    whole /= 15.0;
    std::vector<double> want_mr = {whole.real(), whole.imag()}, want_dr, want_er;
    for (int i = 0; i < 3; ++i) {
      cd row = 0;
      for (int j = 0; j < 5; ++j) row += r[static_cast<size_t>(i * 5 + j)];
      row /= 5.0;
      want_dr.insert(want_dr.end(), {row.real(), row.imag()});
    }
    const std::vector<cd> z = fr::definition(fr::Type::r2c, in[1], {4, 6}, {4, 6}, {0, 1}, 2);
    for (int j = 0; j < 6; ++j) {
      cd col = 0;
      for (int i = 0; i < 4; ++i) col += z[static_cast<size_t>(i * 6 + j)];
      col /= 4.0;
      want_er.insert(want_er.end(), {col.real(), col.imag()});
    }
    PipelineOptions o;
    o.timing_budget_ms = 2;
    const CompileResult res = run_pipeline(m, o);
    QVERIFY2(res.error.empty(), (res.error_stage + ": " + res.error).c_str());
    QVERIFY2(res.check.ok, res.stage("run")->text.c_str());
    const std::vector<std::pair<const std::vector<double>*, double>> want = {{&want_mr, 1e-5}, {&want_dr, 1e-5}, {&want_er, 1e-12}};
    for (size_t k = 0; k < want.size(); ++k) {
      const Tensor& got = res.outputs.at(k);
      QCOMPARE(got.numel(), static_cast<int64_t>(want[k].first->size()));
      for (int64_t e = 0; e < got.numel(); ++e)
        QVERIFY2(std::abs(got.get(e) - want[k].first->at(static_cast<size_t>(e))) <= want[k].second * (1 + std::abs(want[k].first->at(static_cast<size_t>(e)))),
                 (std::to_string(k) + "[" + std::to_string(e) + "]: " + std::to_string(got.get(e)) + ", direct DFT " +
                  std::to_string(want[k].first->at(static_cast<size_t>(e)))).c_str());
    }
    // Its gradient: a loss of the row means' parts, weighted, as a training step; d loss / dx
    // against central differences of the same computation in double.
    const std::string step =
        "class G(torch.nn.Module):\n"
        "    def forward(self, x: \"f32[3, 8]\", w: \"f32[3, 1, 2]\"):\n"
        "        r: \"c64[3, 5]\" = torch.ops.aten._fft_r2c.default(x, [1], 0, True)\n"
        "        d: \"c64[3, 1]\" = torch.ops.aten.mean.dim(r, [1], True)\n"
        "        dr: \"f32[3, 1, 2]\" = torch.ops.aten.view_as_real.default(d)\n"
        "        p: \"f32[3, 1, 2]\" = torch.ops.aten.mul.Tensor(dr, w)\n"
        "        loss: \"f32[]\" = torch.ops.aten.sum.default(p)\n"
        "        return (loss,)\n";
    LoadedModel t = load_graph_text(step);
    for (int64_t e = 0; e < t.inputs[0].numel(); ++e) t.inputs[0].set(e, in[0][static_cast<size_t>(e)]);
    std::vector<double> w;
    for (int64_t e = 0; e < t.inputs[1].numel(); ++e) {
      t.inputs[1].set(e, 0.5 - 0.25 * static_cast<double>(e));
      w.push_back(t.inputs[1].get(e));
    }
    auto loss = [&](const std::vector<double>& x) {
      const std::vector<cd> f = fr::definition(fr::Type::r2c, x, {3, 8}, {3, 5}, {1}, 0);
      double l = 0;
      for (int i = 0; i < 3; ++i) {
        cd row = 0;
        for (int j = 0; j < 5; ++j) row += f[static_cast<size_t>(i * 5 + j)];
        row /= 5.0;
        l += w[static_cast<size_t>(2 * i)] * row.real() + w[static_cast<size_t>(2 * i + 1)] * row.imag();
      }
      return l;
    };
    PipelineOptions to;
    to.timing_budget_ms = 2;
    to.train = true;
    const CompileResult tr = run_pipeline(t, to);
    QVERIFY2(tr.error.empty(), (tr.error_stage + ": " + tr.error).c_str());
    QVERIFY2(tr.check.ok, tr.stage("run")->text.c_str());
    QVERIFY(std::abs(tr.outputs.at(0).get(0) - loss(in[0])) <= 1e-5);
    const auto& j = tr.training.joint;
    int checked = 0;
    for (size_t k = 0; k < j.grad_of.size(); ++k) {
      if (j.grad_of[k] != "x") continue;
      const Tensor& g = tr.outputs.at(static_cast<size_t>(j.num_forward_outputs) + k);
      const std::vector<double> fd = fr::central_differences(loss, in[0]);
      QCOMPARE(g.numel(), static_cast<int64_t>(fd.size()));
      for (size_t e = 0; e < fd.size(); ++e)
        QVERIFY2(std::abs(g.get(static_cast<int64_t>(e)) - fd[e]) <= 1e-4, ("d loss / dx[" + std::to_string(e) + "]: " +
                 std::to_string(g.get(static_cast<int64_t>(e))) + ", central differences " + std::to_string(fd[e])).c_str());
      ++checked;
    }
    QCOMPARE(checked, 1);
  }

  // FFTs (issue 32): rfft -> abs, irfft of an rfft (n = 8 and a shorter n = 7), a two-sided 2-D
  // fft of a real input, an inverse c2c along one dimension, view_as_real, compiled on the CPU as a
  // training step, every normalization mode. Checked against direct DFTs in double
  // (tests/fft_reference.h, not the op table's kernels), and the gradient of x against central differences of the same
  // double computation; the FFT calls run on FFTW where the build has it, and the fused stage says
  // why the complex nodes are library or host calls.
  void testFftMatchesDirectDft() {
    const std::string text =
        "class G(torch.nn.Module):\n"
        "    def forward(self, x: \"f32[3, 8]\", c: \"f32[3, 5]\", v: \"f32[3, 8]\", w: \"f32[3, 7]\", u: \"f32[3, 8, 2]\"):\n"
        "        r: \"c64[3, 5]\" = torch.ops.aten._fft_r2c.default(x, [1], 1, True)\n"
        "        a: \"f32[3, 5]\" = torch.ops.aten.abs.default(r)\n"
        "        i: \"f32[3, 8]\" = torch.ops.aten._fft_c2r.default(r, [1], 1, 8)\n"
        "        i7: \"f32[3, 7]\" = torch.ops.aten._fft_c2r.default(r, [-1], 0, 7)\n"
        "        f: \"c64[3, 8]\" = torch.ops.aten._fft_r2c.default(x, [0, 1], 2, False)\n"
        "        g: \"c64[3, 8]\" = torch.ops.aten._fft_c2c.default(f, [0], 0, False)\n"
        "        gr: \"f32[3, 8, 2]\" = torch.ops.aten.view_as_real.default(g)\n"
        "        m0: \"f32[3, 5]\" = torch.ops.aten.mul.Tensor(a, c)\n"
        "        m1: \"f32[3, 8]\" = torch.ops.aten.mul.Tensor(i, v)\n"
        "        m2: \"f32[3, 7]\" = torch.ops.aten.mul.Tensor(i7, w)\n"
        "        m3: \"f32[3, 8, 2]\" = torch.ops.aten.mul.Tensor(gr, u)\n"
        "        s0: \"f32[]\" = torch.ops.aten.sum.default(m0)\n"
        "        s1: \"f32[]\" = torch.ops.aten.sum.default(m1)\n"
        "        s2: \"f32[]\" = torch.ops.aten.sum.default(m2)\n"
        "        s3: \"f32[]\" = torch.ops.aten.sum.default(m3)\n"
        "        t0: \"f32[]\" = torch.ops.aten.add.Tensor(s0, s1)\n"
        "        t1: \"f32[]\" = torch.ops.aten.add.Tensor(t0, s2)\n"
        "        loss: \"f32[]\" = torch.ops.aten.add.Tensor(t1, s3)\n"
        "        return (loss, a, i, i7, gr)\n";
    LoadedModel m = load_graph_text(text);
    QCOMPARE(m.inputs.size(), size_t(5));
    std::vector<std::vector<double>> in(5);
    for (size_t k = 0; k < 5; ++k)
      for (int64_t e = 0; e < m.inputs[k].numel(); ++e) {
        m.inputs[k].set(e, std::sin(0.7 * static_cast<double>(e + 1) * static_cast<double>(k + 2)) + 0.1 * static_cast<double>(k));
        in[k].push_back(m.inputs[k].get(e));
      }
    // The forward in double, from the DFT's definition (tests/fft_reference.h).
    using cd = std::complex<double>;
    namespace fr = fft_reference;
    struct Out { double loss; std::vector<double> a, i, i7, gr; };
    auto forward = [&](const std::vector<double>& x) {
      Out o{};
      const std::vector<cd> r = fr::definition(fr::Type::r2c, x, {3, 8}, {3, 5}, {1}, 1);  // rfft along dim 1, norm ortho: the first 5 of 8
      for (const cd& z : r) o.a.push_back(std::abs(z));
      o.i = fr::real_parts(fr::definition(fr::Type::c2r, r, {3, 5}, {3, 8}, {1}, 1));
      o.i7 = fr::real_parts(fr::definition(fr::Type::c2r, r, {3, 5}, {3, 7}, {-1}, 0));
      // fft2 (by_n: / 24), then an unnormalized inverse along dim 0
      const std::vector<cd> f = fr::definition(fr::Type::r2c, x, {3, 8}, {3, 8}, {0, 1}, 2);
      for (const cd& z : fr::definition(fr::Type::c2c, f, {3, 8}, {3, 8}, {0}, 0, false)) o.gr.insert(o.gr.end(), {z.real(), z.imag()});
      o.loss = 0;
      for (size_t e = 0; e < o.a.size(); ++e) o.loss += o.a[e] * in[1][e];
      for (size_t e = 0; e < o.i.size(); ++e) o.loss += o.i[e] * in[2][e];
      for (size_t e = 0; e < o.i7.size(); ++e) o.loss += o.i7[e] * in[3][e];
      for (size_t e = 0; e < o.gr.size(); ++e) o.loss += o.gr[e] * in[4][e];
      return o;
    };
    const Out want = forward(in[0]);
    auto close = [](const Tensor& t, const std::vector<double>& ref, const char* what) {
      QCOMPARE(t.numel(), static_cast<int64_t>(ref.size()));
      double scale = 0;
      for (double v : ref) scale = std::max(scale, std::abs(v));
      for (size_t e = 0; e < ref.size(); ++e)
        if (std::abs(t.get(static_cast<int64_t>(e)) - ref[e]) > 1e-5 + 1e-5 * scale)
          QFAIL(qPrintable(QString("%1[%2]: %3, direct DFT %4").arg(what).arg(e).arg(t.get(static_cast<int64_t>(e)), 0, 'g', 9).arg(ref[e], 0, 'g', 9)));
    };
    PipelineOptions o;
    o.train = true;
    o.timing_budget_ms = 2;
    const CompileResult r = run_pipeline(m, o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    for (const OutputCheck& c : r.check.reference) QVERIFY2(c.cmp.ok, (c.against + ": " + c.cmp.why).c_str());
    QVERIFY(r.check.ok);
    close(r.outputs.at(0), {want.loss}, "loss");
    close(r.outputs.at(1), want.a, "abs(rfft(x))");
    close(r.outputs.at(2), want.i, "irfft(rfft(x), 8)");
    close(r.outputs.at(3), want.i7, "irfft(rfft(x), 7)");
    close(r.outputs.at(4), want.gr, "view_as_real(ifft(fft2(x), dim 0))");
    for (size_t e = 0; e < want.i.size(); ++e) QVERIFY(std::abs(want.i[e] - in[0][e]) < 1e-12);  // the DFTs themselves: irfft(rfft(x)) is x
    // d loss / dx against central differences of the double forward.
    const auto& j = r.training.joint;
    int checked = 0;
    for (size_t k = 0; k < j.grad_of.size(); ++k) {
      if (j.grad_of[k] != "x") continue;
      const Tensor& grad = r.outputs.at(static_cast<size_t>(j.num_forward_outputs) + k);
      close(grad, fr::central_differences([&](const std::vector<double>& x) { return forward(x).loss; }, in[0]), "d loss / dx");
      ++checked;
    }
    QCOMPARE(checked, 1);
    // The FFT calls: FFTW, or the reference kernel where the build has none; the complex nodes'
    // fusion verdicts name the complex buffer.
    int ffts = 0;
    for (const KernelReport& k : r.kernels)
      if (k.name.find("_fft_") != std::string::npos) {
        ++ffts;
        QVERIFY2(k.how == "FFTW" || k.how == "reference kernel (no FFTW in this build)", (k.name + ": " + k.how).c_str());
      }
    QVERIFY2(ffts >= 5, std::to_string(ffts).c_str());  // 4 forward FFTs and their backward transforms
    bool said = false;
    for (const EdgeDecision& e : r.schedule.edges) said = said || e.verdict.reason.find("works on complex values") != std::string::npos;
    QVERIFY(said);
  }

  // torch.fft.fftshift(torch.fft.fft(x, n=10)) as PyTorch's decompositions give it for a complex
  // signal: x made complex (_to_copy), zero-padded (constant_pad_nd on complex values), a c2c, the
  // shift an index_select; then flip,
  // permute, cat, index.Tensor and a reflection pad of the complex result. Compiled for the CPU as
  // a training step: outputs against a direct DFT in double (tests/fft_reference.h), d loss / dx against
  // central differences of that forward (the gradients run the ops' derivative rules on complex
  // values: constant_pad_nd's negative pad, index_select's index_add, reflection_pad's backward).
  void testComplexDataMovementAroundFft() {
    const std::string text =
        "class G(torch.nn.Module):\n"
        "    def forward(self, x: \"f32[3, 6]\", w: \"f32[3, 10, 2]\", u: \"f32[3, 13, 2]\", v: \"f32[6, 10, 2]\"):\n"
        "        xc: \"c64[3, 6]\" = torch.ops.aten._to_copy.default(x, dtype = torch.complex64)\n"
        "        p: \"c64[3, 10]\" = torch.ops.aten.constant_pad_nd.default(xc, [0, 4], 0.0)\n"
        "        f: \"c64[3, 10]\" = torch.ops.aten._fft_c2c.default(p, [1], 0, True)\n"
        "        ar: \"i64[10]\" = torch.ops.aten.arange.start_step(5, 15)\n"
        "        idx: \"i64[10]\" = torch.ops.aten.remainder.Scalar(ar, 10)\n"
        "        s: \"c64[3, 10]\" = torch.ops.aten.index_select.default(f, 1, idx)\n"
        "        fl: \"c64[3, 10]\" = torch.ops.aten.flip.default(s, [0])\n"
        "        pr: \"c64[10, 3]\" = torch.ops.aten.permute.default(fl, [1, 0])\n"
        "        ct: \"c64[6, 10]\" = torch.ops.aten.cat.default([s, fl])\n"
        "        ar6: \"i64[6]\" = torch.ops.aten.arange.start_step(2, 8)\n"
        "        r6: \"i64[6]\" = torch.ops.aten.remainder.Scalar(ar6, 6)\n"
        "        ix: \"c64[6, 10]\" = torch.ops.aten.index.Tensor(ct, [r6])\n"
        "        rp: \"c64[3, 13]\" = torch.ops.aten.reflection_pad1d.default(s, [2, 1])\n"
        "        vs: \"f32[3, 10, 2]\" = torch.ops.aten.view_as_real.default(s)\n"
        "        vp: \"f32[3, 13, 2]\" = torch.ops.aten.view_as_real.default(rp)\n"
        "        vi: \"f32[6, 10, 2]\" = torch.ops.aten.view_as_real.default(ix)\n"
        "        m0: \"f32[3, 10, 2]\" = torch.ops.aten.mul.Tensor(vs, w)\n"
        "        m1: \"f32[3, 13, 2]\" = torch.ops.aten.mul.Tensor(vp, u)\n"
        "        m2: \"f32[6, 10, 2]\" = torch.ops.aten.mul.Tensor(vi, v)\n"
        "        s0: \"f32[]\" = torch.ops.aten.sum.default(m0)\n"
        "        s1: \"f32[]\" = torch.ops.aten.sum.default(m1)\n"
        "        s2: \"f32[]\" = torch.ops.aten.sum.default(m2)\n"
        "        t0: \"f32[]\" = torch.ops.aten.add.Tensor(s0, s1)\n"
        "        loss: \"f32[]\" = torch.ops.aten.add.Tensor(t0, s2)\n"
        "        return (loss, s, pr, ix, rp)\n";
    LoadedModel m = load_graph_text(text);
    QCOMPARE(m.inputs.size(), size_t(4));
    std::vector<std::vector<double>> in(4);
    for (size_t k = 0; k < 4; ++k)
      for (int64_t e = 0; e < m.inputs[k].numel(); ++e) {
        m.inputs[k].set(e, std::sin(0.9 * static_cast<double>(e + 1) * static_cast<double>(k + 2)) + 0.1 * static_cast<double>(k));
        in[k].push_back(m.inputs[k].get(e));
      }
    using cd = std::complex<double>;
    namespace fr = fft_reference;
    const int perm6[6] = {2, 3, 4, 5, 0, 1};
    struct Out { double loss; std::vector<cd> s, pr, ix, rp; };
    auto forward = [&](const std::vector<double>& x) {
      Out o{};
      // the DFT along dim 1 of x zero-padded to 10
      const std::vector<cd> F = fr::definition(fr::Type::c2c, fr::resized(fr::complex_of(x), {3, 6}, {3, 10}), {3, 10}, {3, 10}, {1}, 0);
      cd S[3][10];
      for (int b = 0; b < 3; ++b)
        for (int j = 0; j < 10; ++j) {  // fftshift: position j holds frequency (j + 5) % 10
          S[b][j] = F[b * 10 + (j + 5) % 10];
          o.s.push_back(S[b][j]);
        }
      for (int j = 0; j < 10; ++j)
        for (int b = 0; b < 3; ++b) o.pr.push_back(S[2 - b][j]);
      for (int r = 0; r < 6; ++r)
        for (int j = 0; j < 10; ++j) {
          const int row = perm6[r];
          o.ix.push_back(row < 3 ? S[row][j] : S[2 - (row - 3)][j]);
        }
      for (int b = 0; b < 3; ++b)
        for (int q = 0; q < 13; ++q) o.rp.push_back(S[b][9 - std::abs(9 - std::abs(q - 2))]);
      o.loss = 0;
      for (size_t e = 0; e < o.s.size(); ++e) o.loss += o.s[e].real() * in[1][2 * e] + o.s[e].imag() * in[1][2 * e + 1];
      for (size_t e = 0; e < o.rp.size(); ++e) o.loss += o.rp[e].real() * in[2][2 * e] + o.rp[e].imag() * in[2][2 * e + 1];
      for (size_t e = 0; e < o.ix.size(); ++e) o.loss += o.ix[e].real() * in[3][2 * e] + o.ix[e].imag() * in[3][2 * e + 1];
      return o;
    };
    const Out want = forward(in[0]);
    auto close = [](const Tensor& t, const std::vector<cd>& ref, const char* what) {
      QCOMPARE(t.numel(), static_cast<int64_t>(ref.size()));
      double scale = 0;
      for (const cd& z : ref) scale = std::max(scale, std::abs(z));
      for (size_t e = 0; e < ref.size(); ++e) {
        const cd got = t.get_complex(static_cast<int64_t>(e));
        if (std::abs(got - ref[e]) > 1e-5 + 1e-5 * scale)
          QFAIL(qPrintable(QString("%1[%2]: (%3, %4), direct DFT (%5, %6)").arg(what).arg(e).arg(got.real(), 0, 'g', 9).arg(got.imag(), 0, 'g', 9)
                               .arg(ref[e].real(), 0, 'g', 9).arg(ref[e].imag(), 0, 'g', 9)));
      }
    };
    PipelineOptions o;
    o.train = true;
    o.timing_budget_ms = 2;
    const CompileResult r = run_pipeline(m, o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    for (const OutputCheck& c : r.check.reference) QVERIFY2(c.cmp.ok, (c.against + ": " + c.cmp.why).c_str());
    QVERIFY(r.check.ok);
    close(r.outputs.at(0), {cd(want.loss)}, "loss");
    close(r.outputs.at(1), want.s, "fftshift(fft(x, n=10))");
    close(r.outputs.at(2), want.pr, "permute(flip(s))");
    close(r.outputs.at(3), want.ix, "cat(s, flip(s))[r6]");
    close(r.outputs.at(4), want.rp, "reflection_pad1d(s)");
    const auto& j = r.training.joint;
    int checked = 0;
    for (size_t k = 0; k < j.grad_of.size(); ++k) {
      if (j.grad_of[k] != "x") continue;
      const Tensor& grad = r.outputs.at(static_cast<size_t>(j.num_forward_outputs) + k);
      const std::vector<double> fd = fr::central_differences([&](const std::vector<double>& x) { return forward(x).loss; }, in[0]);
      close(grad, std::vector<cd>(fd.begin(), fd.end()), "d loss / dx");
      ++checked;
    }
    QCOMPARE(checked, 1);
    // The complex data movement ran on the host (the reference kernels, as Inductor's fallbacks).
    int host = 0;
    for (const KernelReport& k : r.kernels) host += k.how == "reference kernel (complex)";
    QVERIFY2(host >= 5, std::to_string(host).c_str());
  }

  // Random ops by their distribution and their reproducibility (issue 32): native_dropout(p = 0.3)
  // in training keeps about 70% of 100,000 elements (binomial: within 0.005, 3.5 standard
  // deviations), scales what it keeps by 1/(1 - p) and zeroes the rest, its mask saying which;
  // rand's mean is 1/2 and randn's variance 1. The compiled code matches the reference
  // interpreter (the pipeline's check), and a second compile draws the same values.
  void testRandomOpsByDistribution() {
    const int64_t n = 100000;
    Tensor x(DType::f32, {n});
    for (int64_t i = 0; i < n; ++i) x.set(i, 1.0 + 0.001 * static_cast<double>(i % 1000));
    const std::string graph =
        "class G(torch.nn.Module):\n"
        "    def forward(self, x: \"f32[100000]\"):\n"
        "        native_dropout = torch.ops.aten.native_dropout.default(x, 0.3, True)\n"
        "        out: \"f32[100000]\" = native_dropout[0]\n"
        "        mask: \"b8[100000]\" = native_dropout[1];  native_dropout = None\n"
        "        u: \"f32[100000]\" = torch.ops.aten.rand.default([100000])\n"
        "        z: \"f32[100000]\" = torch.ops.aten.randn.default([100000])\n"
        "        return (out, mask, u, z)\n";
    const CompileResult r = compile_graph_text(graph, {x}, false);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QVERIFY2(r.check.ok, r.stage("run")->text.c_str());
    int64_t kept = 0;
    for (int64_t i = 0; i < n; ++i) {
      const bool m = r.outputs[1].get(i) != 0;
      kept += m;
      const double want = m ? x.get(i) / 0.7 : 0.0;
      QVERIFY(std::abs(r.outputs[0].get(i) - want) <= 1e-5 * std::abs(want));
    }
    QVERIFY2(std::abs(static_cast<double>(kept) / n - 0.7) < 0.005, std::to_string(kept).c_str());
    double mean_u = 0, mean_z = 0, var_z = 0;
    for (int64_t i = 0; i < n; ++i) {
      QVERIFY(r.outputs[2].get(i) >= 0 && r.outputs[2].get(i) < 1);
      mean_u += r.outputs[2].get(i) / n;
      mean_z += r.outputs[3].get(i) / n;
    }
    for (int64_t i = 0; i < n; ++i) var_z += (r.outputs[3].get(i) - mean_z) * (r.outputs[3].get(i) - mean_z) / n;
    QVERIFY2(std::abs(mean_u - 0.5) < 0.005 && std::abs(mean_z) < 0.015 && std::abs(var_z - 1) < 0.02,
             (std::to_string(mean_u) + " " + std::to_string(mean_z) + " " + std::to_string(var_z)).c_str());
    const CompileResult again = compile_graph_text(graph, {x}, false);
    QVERIFY2(again.error.empty(), again.error.c_str());
    for (size_t o = 0; o < 4; ++o)
      for (int64_t i = 0; i < n; i += 997) QCOMPARE(again.outputs[o].get(i), r.outputs[o].get(i));
  }

  // rand, randn and dropout's mask as generated code (ops/philox.h): the compiled values equal
  // the reference kernels' bit for bit, in float32 and float64 (rand's 24 and 53 bits, randn's
  // Box-Muller in double with its own log and cos), and no kernel is a library call (the mask's
  // draw fuses into the dropout's multiply). The shared Philox: another seed or offset gives
  // other numbers, and its log and cos polynomials are within 1e-15 of the C library's (whose
  // cos argument, 2 pi j 2^-21, rounds too).
  void testRandomOpsGeneratedEqualReference() {
    const std::string graph =
        "class G(torch.nn.Module):\n"
        "    def forward(self, x: \"f32[3000]\"):\n"
        "        u: \"f32[3000]\" = torch.ops.aten.rand.default([3000])\n"
        "        z: \"f32[3000]\" = torch.ops.aten.randn.default([3000])\n"
        "        u64: \"f64[5, 600]\" = torch.ops.aten.rand.default([5, 600], dtype = torch.float64)\n"
        "        z64: \"f64[5, 600]\" = torch.ops.aten.randn.default([5, 600], dtype = torch.float64)\n"
        "        native_dropout = torch.ops.aten.native_dropout.default(x, 0.4, True)\n"
        "        out: \"f32[3000]\" = native_dropout[0]\n"
        "        mask: \"b8[3000]\" = native_dropout[1];  native_dropout = None\n"
        "        return (u, z, u64, z64, out, mask)\n";
    Tensor x(DType::f32, {3000});
    for (int64_t i = 0; i < 3000; ++i) x.set(i, 0.5 + 0.001 * static_cast<double>(i));
    const CompileResult r = compile_graph_text(graph, {x}, false);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QVERIFY2(r.check.ok, r.stage("run")->text.c_str());
    QCOMPARE(r.reference_outputs.size(), size_t(6));
    for (size_t o : {0, 1, 2, 3, 5})  // the draws and the mask; the dropped-out values round in float32 (the reference in double)
      for (int64_t i = 0; i < r.outputs[o].numel(); ++i)
        QVERIFY2(r.outputs[o].get(i) == r.reference_outputs[o].get(i),
                 ("output " + std::to_string(o) + " element " + std::to_string(i) + ": " + std::to_string(r.outputs[o].get(i)) + " vs " +
                  std::to_string(r.reference_outputs[o].get(i))).c_str());
    const std::string code = r.stage("source")->text;
    QVERIFY(code.find("ls_philox(") != std::string::npos && code.find("ls_randn(") != std::string::npos &&
            code.find("ls_rand_f64(") != std::string::npos);
    for (const auto& k : r.schedule.kernels) QVERIFY2(!k.is_extern, k.name.c_str());
    // The generator itself.
    const uint64_t off = philox::stream_offset("rand", {3000});
    int same_seed = 0, same_offset = 0;
    for (uint64_t i = 0; i < 1000; ++i) {
      same_seed += philox::bits(philox::kSeed, off, i) == philox::bits(philox::kSeed + 1, off, i);
      same_offset += philox::bits(philox::kSeed, off, i) == philox::bits(philox::kSeed, off + 1, i);
      QCOMPARE(philox::bits(7, off, i), philox::bits(7, off, i));
    }
    QCOMPARE(same_seed, 0);
    QCOMPARE(same_offset, 0);
    for (int k = 1; k <= 4096; ++k) {
      const double u = k / 4096.0 * 0.999;
      QVERIFY2(std::abs(philox::log_unit(u) - std::log(u)) <= 4e-16 * std::max(1.0, std::abs(std::log(u))), std::to_string(u).c_str());
    }
    for (uint64_t j = 0; j < (1u << 21); j += 997)
      QVERIFY2(std::abs(philox::cos_turn21(j) - std::cos(2 * M_PI * static_cast<double>(j) / (1 << 21))) < 1e-15, std::to_string(j).c_str());
  }
};

QTEST_GUILESS_MAIN(TestCpu)
#include "test_cpu.moc"
