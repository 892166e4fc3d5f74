// Compiled CPU kernels run in the worker process (core/exec/isolated_run.h): the same outputs and
// kernel table as in this process, on both compile paths, library calls and epilogues included
// (the worker on all of this process's cores, not the one its spawning thread was bound to);
// injected faults (LOWERSCOPE_FAULT=segv:K, hang:K) reported by kernel name with every stage
// kept, the next compile working; index errors as in-process; the CLI's exit status 3;
// --in-process unaffected; a model too large for the host's free memory refused before its run.
#include <QProcess>
#include <QTest>

#include <cstring>

#include "compile/cpu_compiler.h"
#include "exec/isolated_run.h"
#include "frontend/load_model.h"
#include "pipeline/pipeline.h"

using namespace ls;

namespace {

std::string data(const std::string& p) { return std::string(LS_TEST_DATA) + "/" + p; }
std::string sample(const std::string& p) { return std::string(LS_SAMPLES) + "/" + p; }

IsolationOptions worker(double limit_s = 60) {
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
        const CompileResult there = compile(m, worker(), external, train);
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
      const CompileResult r = compile(sincos, worker(0.5));
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
      const CompileResult next = compile(load_model(data("stages/mlp/3_core_aten.txt")), worker());
      QVERIFY2(next.error.empty() && next.check.ok, next.error.c_str());
    }
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
    const CompileResult there = compile(m, worker());
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
    for (const IsolationOptions& iso : {IsolationOptions{}, worker()}) {
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
    const CompileResult r = compile(sincos, worker());
    QVERIFY2(r.error.find("1000 bytes available on the host (LOWERSCOPE_MEMORY_AVAILABLE)") != std::string::npos, r.error.c_str());
    QProcess cli;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    cli.setProcessEnvironment(env);
    cli.start(LS_CLI, {"compile", QString(LS_SAMPLES) + "/sincos", "--quiet"});
    QVERIFY(cli.waitForFinished(120000));
    qunsetenv("LOWERSCOPE_MEMORY_AVAILABLE");
    QCOMPARE(cli.exitStatus(), QProcess::NormalExit);
    QCOMPARE(cli.exitCode(), 2);
    const QByteArray why = cli.readAllStandardError();
    QVERIFY2(why.contains("stage 'run' failed: the model needs ") && why.contains("1000 bytes available on the host"), why.constData());
    const CompileResult next = compile(sincos, worker());
    QVERIFY2(next.error.empty() && next.check.ok, next.error.c_str());
  }

  void testCliExitStatus() {
    QProcess cli;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("LOWERSCOPE_FAULT", "segv:cpp_fused_add_cos_pow_sin_0");
    cli.setProcessEnvironment(env);
    cli.start(LS_CLI, {"compile", QString(LS_SAMPLES) + "/sincos", "--quiet"});
    QVERIFY(cli.waitForFinished(120000));
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
      QVERIFY(cli.waitForFinished(120000));
      QVERIFY2(cli.exitCode() == 0, cli.readAllStandardError().constData());
    }
  }
};

QTEST_GUILESS_MAIN(TestIsolation)
#include "test_isolation.moc"
