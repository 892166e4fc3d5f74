// Compiled CPU kernels run in the worker process (core/exec/isolated_run.h): the same outputs and
// kernel table as in this process, on both compile paths, library calls and epilogues included
// (the worker on all of this process's cores, not the one its spawning thread was bound to);
// injected faults (LOWERSCOPE_FAULT=segv:K, hang:K) reported by kernel name with every stage
// kept, the next compile working; index errors as in-process; the CLI's exit status 3;
// --in-process unaffected; a model too large for the host's free memory refused before its run.
// The worker's plumbing (exec/worker_process.h): the first kernel's time limit counts from its
// start; the plan and the results read with every read bounded; a shared file whose header or
// layout does not fit it refused by the worker with a sentence; no descriptor left behind by a
// shared file that could not be made.
#include <QProcess>
#include <QTest>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "compile/cpu_compiler.h"
#include "exec/isolated_run.h"
#include "exec/worker_process.h"
#include "frontend/load_model.h"
#include "interp/reference.h"
#include "pipeline/pipeline.h"

using namespace ls;

namespace {

std::string data(const std::string& p) { return std::string(LS_TEST_DATA) + "/" + p; }
std::string sample(const std::string& p) { return std::string(LS_SAMPLES) + "/" + p; }

IsolationOptions in_worker(double limit_s = 60) {
  IsolationOptions o;
  o.enabled = true;
  o.runner = LS_RUNNER;
  o.time_limit_s = limit_s;
  return o;
}

CompileResult compile(const LoadedModel& m, const IsolationOptions& iso, bool external = false, bool train = false) {
  set_cpu_isolation(iso);
  PipelineOptions o;
  o.external_compiler = external;
  o.train = train;
  o.timing_budget_ms = 2;
  CompileResult r = run_pipeline(m, o);
  set_cpu_isolation({});
  return r;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.defined() == b.defined() && (!a.defined() || (a.dtype() == b.dtype() && a.shape() == b.shape() &&
                                                           std::memcmp(a.data(), b.data(), static_cast<size_t>(a.nbytes())) == 0));
}

std::string first_generated_kernel(const CompileResult& r) {
  for (const Kernel& k : r.schedule.kernels)
    if (!k.is_extern) return k.name;
  return {};
}

size_t open_descriptors() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// What `f` throws, as "kind: message" (kind: runtime, logic, or other); "" where it returns.
template <class F>
std::string thrown(F&& f) {
  try {
    f();
  } catch (const std::logic_error& e) {
    return std::string("logic: ") + e.what();
  } catch (const std::runtime_error& e) {
    return std::string("runtime: ") + e.what();
  } catch (...) {
    return "other";
  }
  return "";
}

}  // namespace

class TestIsolation : public QObject {
  Q_OBJECT
 private slots:
  // The worker's outputs are the in-process run's, bit for bit, and its kernels ran the same way
  // (a library call with its epilogue inside: mlp's addmm + relu).
  void testWorkerMatchesInProcess() {
    const std::vector<bool> paths = have_clang_jit() ? std::vector<bool>{false, true} : std::vector<bool>{true};
    for (const std::string& model : {data("stages/mlp/3_core_aten.txt"), sample("mse_loss")}) {
      const LoadedModel m = load_model(model);
      for (bool external : paths) {
        const bool train = model.find("mse_loss") != std::string::npos;
        const CompileResult here = compile(m, {}, external, train);
        const CompileResult there = compile(m, in_worker(), external, train);
        QVERIFY2(here.error.empty(), here.error.c_str());
        QVERIFY2(there.error.empty(), there.error.c_str());
        QVERIFY(there.check.ok);
        QCOMPARE(there.outputs.size(), here.outputs.size());
        for (size_t i = 0; i < here.outputs.size(); ++i) QVERIFY2(same_bytes(here.outputs[i], there.outputs[i]), model.c_str());
        QCOMPARE(there.kernels.size(), here.kernels.size());
        for (size_t k = 0; k < here.kernels.size(); ++k) QCOMPARE(there.kernels[k].how, here.kernels[k].how);
      }
    }
  }

  // A kernel that faults or hangs is named; the compile keeps its stages; the next compile (of
  // another model) runs in a fresh worker and is right.
  void testFaultsAreSurvived() {
    const LoadedModel sincos = load_model(sample("sincos"));
    const std::string kernel = first_generated_kernel(compile(sincos, {}));
    QVERIFY(!kernel.empty());
    for (const std::string& fault : {"segv", "hang"}) {
      qputenv("LOWERSCOPE_FAULT", QByteArray::fromStdString(fault + ":" + kernel));
      const CompileResult r = compile(sincos, in_worker(0.5));
      qunsetenv("LOWERSCOPE_FAULT");
      QCOMPARE(r.error_stage, std::string("run"));
      QVERIFY2(is_kernel_fault(r.error), r.error.c_str());
      const std::string said = "kernel " + kernel + (fault == "segv" ? " faulted: SIGSEGV" : " ran past 0.5 s");
      QVERIFY2(r.error.find(said) == 0, r.error.c_str());
      bool source = false, assembly = false;
      for (const Stage& s : r.stages) {
        source = source || (s.name == "source" && s.text.find(kernel) != std::string::npos);
        assembly = assembly || (s.name == "asm" && !s.text.empty());
      }
      QVERIFY(source && assembly);
      const CompileResult next = compile(load_model(data("stages/mlp/3_core_aten.txt")), in_worker());
      QVERIFY2(next.error.empty() && next.check.ok, next.error.c_str());
    }
  }

  // A hang in the FIRST kernel is that kernel's: its limit counts from its start, which moves the
  // worker's count on past the load's mark (CpuExecutable::follow goes on from progress[1]), and it
  // is stopped within about the limit.
  void testFirstKernelHangIsNamed() {
    const LoadedModel sincos = load_model(sample("sincos"));
    const CompileResult plain = compile(sincos, {});
    QVERIFY(!plain.schedule.kernels.empty() && !plain.schedule.kernels[0].is_extern);
    const std::string kernel = plain.schedule.kernels[0].name;
    qputenv("LOWERSCOPE_FAULT", QByteArray::fromStdString("hang:" + kernel));
    const auto t0 = std::chrono::steady_clock::now();
    const CompileResult r = compile(sincos, in_worker(1.0));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    qunsetenv("LOWERSCOPE_FAULT");
    QCOMPARE(r.error_stage, std::string("run"));
    QVERIFY2(r.error.find("kernel " + kernel + " ran past 1 s") == 0, r.error.c_str());
    QVERIFY2(s >= 1.0 && s < 30, std::to_string(s).c_str());

    // In this process: the count a follower sees goes on from the load's mark, one per kernel.
    CpuCompileResult code = compile_cpp(plain.source.code, CpuCompileOptions{});
    QVERIFY(code.code);
    CpuExecutable exe(plain.loops, plain.schedule, plain.source, *code.code);
    std::atomic<int64_t> progress[2];
    progress[0] = -1;
    progress[1] = 1;  // the worker's load
    exe.follow(progress);
    exe.run(bind_inputs(plain.prims, plain.model.inputs));
    const int64_t n = static_cast<int64_t>(plain.schedule.kernels.size());
    QCOMPARE(progress[1].load(), 1 + n);
    QCOMPARE(progress[0].load(), n - 1);
  }

  // The plan's text and the results' binary are read with every read bounded: a stream cut short
  // or garbled (a count past what is left, a number at the very end, a length near 2^64) is an
  // error, never a read past the end or a huge allocation; doubles go through bit for bit.
  void testPlanAndResultsAreReadBounded() {
    worker::Writer w;
    const std::vector<double> values = {0.1, -0.0, 1e-310, std::numeric_limits<double>::infinity(), -3.5e300};
    for (double v : values) w.f(v);
    w.f(std::nan(""));
    w.str("ab c");
    w.ints({-7, 0, int64_t(1) << 62});
    worker::Reader r(w.text().data(), w.text().size());
    for (double v : values) {
      const double got = r.f();
      QVERIFY(std::memcmp(&v, &got, 8) == 0);
    }
    QVERIFY(std::isnan(r.f()));
    QCOMPARE(r.str(), std::string("ab c"));
    QCOMPARE(r.ints(), (std::vector<int64_t>{-7, 0, int64_t(1) << 62}));
    const std::string cut = "cut short";
    QVERIFY(thrown([&] { r.i(); }).find(cut) != std::string::npos);
    for (const std::string text : {"12", "12x", "5 ab", "1152921504606846976 1 2 ", "-1 ", "99999999999999999999999 "}) {
      worker::Reader g(text.data(), text.size());
      const std::string e = thrown([&] { g.ints(); });
      QVERIFY2(e.find(cut) != std::string::npos, (text + ": " + e).c_str());
      worker::Reader h(text.data(), text.size());
      QVERIFY2(thrown([&] { h.str(); }).find(cut) != std::string::npos, text.c_str());
    }

    std::vector<char> room(200);
    worker::ResultWriter rw(room.data(), room.size());
    rw.f(2.5);
    rw.i(-3);
    rw.doubles({1, 2});
    rw.strs({"generated", ""});
    rw.ints({7});
    QVERIFY(thrown([&] { rw.str(std::string(200, 'x')); }).rfind("logic: kernel worker: the run's results do not fit", 0) == 0);
    worker::ResultReader rr(room.data(), room.size());
    QCOMPARE(rr.f(), 2.5);
    QCOMPARE(rr.i(), int64_t(-3));
    QCOMPARE(rr.doubles(), (std::vector<double>{1, 2}));
    QCOMPARE(rr.strs(), (std::vector<std::string>{"generated", ""}));
    QCOMPARE(rr.ints(), (std::vector<int64_t>{7}));
    // Garbled counts and lengths: 2^62 doubles, a string of 2^64 - 8 bytes, a negative count.
    for (int64_t bad : {int64_t(1) << 62, int64_t(-8), int64_t(-1)}) {
      std::vector<char> g(64, 0);
      std::memcpy(g.data(), &bad, 8);
      for (int what = 0; what < 3; ++what) {
        worker::ResultReader gr(g.data(), g.size());
        const std::string e = thrown([&] {
          if (what == 0) gr.doubles();
          else if (what == 1) gr.str();
          else gr.strs();
        });
        QVERIFY2(e == "runtime: kernel worker: its results are cut short or garbled", e.c_str());
      }
    }
    worker::ResultReader empty(room.data(), 4);
    QVERIFY(thrown([&] { empty.i(); }).find("cut short") != std::string::npos);
  }

  // The worker checks the shared file before it reads it: a header whose plan runs past the data
  // (plan_len near 2^64: the sum would wrap), and a layout whose input lies past the file's end,
  // are refused with a sentence the app throws.
  void testSharedFileIsCheckedByTheWorker() {
    worker::Watch watch;
    watch.time_limit_s = watch.start_limit_s = 30;
    {
      worker::SharedRun shared("0 ", 64);
      shared.header().plan_len = ~uint64_t(0) - 100;
      const std::string e = thrown([&] { shared.run(LS_RUNNER, {}, {}, watch); });
      QVERIFY2(e.rfind("logic: kernel worker: the shared file's header does not fit it (plan ", 0) == 0, e.c_str());
    }
    // A CPU plan: no program, no kernels, one input of 1000 floats placed 1 TiB in.
    LoopProgram p;
    Schedule s;
    worker::Writer w;
    worker::write_program(w, p, s);
    worker::write_kernels(w, {});
    w.ints({});
    w.i(0);
    worker::write_timing(w, {});
    worker::DataLayout at;
    at.input_metas.emplace_back(DType::f32, Shape{1000});
    at.inputs = {int64_t(1) << 40};
    at.results = 0;
    at.result_bytes = 64;
    worker::write_layout(w, at);
    worker::SharedRun shared(w.text(), 4096);
    const std::string e = thrown([&] { shared.run(LS_RUNNER, {}, {}, watch); });
    QVERIFY2(e == "logic: kernel worker: input 0 at offset 1099511627776 lies outside the shared data (4096 bytes)", e.c_str());
  }

  // A shared file that cannot be made or mapped leaves no descriptor open (the constructor
  // throws, so no destructor closes it): 4 EiB is past any address space.
  void testSharedFileThatCannotBeMadeIsClosed() {
    const size_t before = open_descriptors();
    for (int i = 0; i < 3; ++i) {
      const std::string e = thrown([] { worker::SharedRun shared("", size_t(1) << 62); });
      QVERIFY2(e.rfind("runtime: kernel worker: cannot ", 0) == 0, e.c_str());
    }
    const std::string e = thrown([] { worker::SharedRun shared("", ~size_t(0) - 10); });
    QVERIFY2(e.find("more than a shared file holds") != std::string::npos, e.c_str());
    QCOMPARE(open_descriptors(), before);
  }

  // An index out of range in generated code is the same error through the worker (the kernel,
  // the node, the value, the size), not a fault.
  void testIndexErrorsAsInProcess() {
    LoadedModel m = load_model(data("indexing/gather_embedding.txt"));
    Tensor& ids = m.inputs[1];
    Tensor& idx = m.inputs[3];
    for (int64_t i = 0; i < ids.numel(); ++i) ids.set(i, (i * 5 + 3) % 12);
    for (int64_t i = 0; i < idx.numel(); ++i) idx.set(i, (i * 7 + 1) % 12);
    ids.set(7, 12);
    const CompileResult here = compile(m, {});
    const CompileResult there = compile(m, in_worker());
    QVERIFY2(here.error.find("index 12 is out of bounds for dimension with size 12") != std::string::npos, here.error.c_str());
    QCOMPARE(there.error, here.error);
    QCOMPARE(there.error_stage, std::string("run"));
    QVERIFY(!is_kernel_fault(there.error));
  }

  // A model whose buffers exceed the free memory is refused before the run allocates them, with
  // both numbers (exec/memory_fit.h): a broadcast sum of 4 TiB against the host's MemAvailable,
  // and sincos against LOWERSCOPE_MEMORY_AVAILABLE, in this process and through the worker, the
  // stages before the run kept; the CLI exits 2 with the message; the next compile runs.
  void testTooLargeModelIsRefused() {
    const LoadedModel big = load_model(data("memory/outer_sum_4tb.txt"));
    for (const IsolationOptions& iso : {IsolationOptions{}, in_worker()}) {
      const CompileResult r = compile(big, iso);
      QCOMPARE(r.error_stage, std::string("run"));
      QVERIFY2(r.error.rfind("the model needs ", 0) == 0 && r.error.find(" TiB for its buffers (memory plan peak 4.0 TiB") != std::string::npos &&
                   r.error.find("available on the host (MemAvailable): refused before allocating them") != std::string::npos,
               r.error.c_str());
      QVERIFY(r.stage("source") && r.stage("source")->kind != Stage::Kind::not_reached);
      QVERIFY(r.outputs.empty());
    }
    const LoadedModel sincos = load_model(sample("sincos"));
    qputenv("LOWERSCOPE_MEMORY_AVAILABLE", "1000");
    const CompileResult r = compile(sincos, in_worker());
    QVERIFY2(r.error.find("1000 bytes available on the host (LOWERSCOPE_MEMORY_AVAILABLE)") != std::string::npos, r.error.c_str());
    QProcess cli;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    cli.setProcessEnvironment(env);
    cli.start(LS_CLI, {"compile", QString(LS_SAMPLES) + "/sincos", "--quiet"});
    QVERIFY(cli.waitForFinished(600000));
    qunsetenv("LOWERSCOPE_MEMORY_AVAILABLE");
    QCOMPARE(cli.exitStatus(), QProcess::NormalExit);
    QCOMPARE(cli.exitCode(), 2);
    const QByteArray why = cli.readAllStandardError();
    QVERIFY2(why.contains("stage 'run' failed: the model needs ") && why.contains("1000 bytes available on the host"), why.constData());
    const CompileResult next = compile(sincos, in_worker());
    QVERIFY2(next.error.empty() && next.check.ok, next.error.c_str());
  }

  void testCliExitStatus() {
    QProcess cli;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("LOWERSCOPE_FAULT", "segv:cpp_fused_add_cos_pow_sin_0");
    cli.setProcessEnvironment(env);
    cli.start(LS_CLI, {"compile", QString(LS_SAMPLES) + "/sincos", "--quiet"});
    QVERIFY(cli.waitForFinished(600000));
    QCOMPARE(cli.exitStatus(), QProcess::NormalExit);
    QCOMPARE(cli.exitCode(), 3);
    const QByteArray why = cli.readAllStandardError();
    QVERIFY2(why.contains("kernel cpp_fused_add_cos_pow_sin_0 faulted: SIGSEGV"), why.constData());
    // The in-process path without the variable, and the worker on another model: as before.
    env.remove("LOWERSCOPE_FAULT");
    cli.setProcessEnvironment(env);
    for (const QStringList& args : {QStringList{"--in-process", "compile", QString(LS_SAMPLES) + "/sincos", "--quiet"},
                                    QStringList{"compile", QString(LS_SAMPLES) + "/mse_loss", "--train", "--quiet"}}) {
      cli.start(LS_CLI, args);
      QVERIFY(cli.waitForFinished(600000));
      QVERIFY2(cli.exitCode() == 0, cli.readAllStandardError().constData());
    }
  }
};

QTEST_GUILESS_MAIN(TestIsolation)
#include "test_isolation.moc"
