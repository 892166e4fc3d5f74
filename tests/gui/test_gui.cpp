// GUI tests on the offscreen platform: the sample opens, every stage shows content, the models
// pass QAbstractItemModelTester, and a bad file leaves an error in the window.
#include <QAbstractItemModelTester>
#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QLabel>
#include <QListView>
#include <QTableView>
#include <QTreeWidget>
#include <QtTest>

#include "codegen/gemm_template.h"
#include "cuda/nvrtc_compiler.h"
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QStandardPaths>
#include <QSettings>
#include <QElapsedTimer>
#include <QTimer>
#include <thread>
#include <QProcess>
#include <QUrl>

#include "code_view.h"
#include "diff_panel.h"
#include "profile_view.h"
#include "command_palette.h"
#include "theme.h"
#include <Qsci/qscilexer.h>
#include "synthetic_graph.h"
#include "exec/isolated_run.h"
#include "ir/collapse.h"
#include "compile_session.h"
#include "graph_layout.h"
#include "graph_view.h"
#include "main_window.h"
#include "script/script.h"
#include "script_panel.h"
#include "trace_kernel_model.h"
#include "inductor_diff_view.h"
#include "kernel_map_model.h"
#include "trace_panel.h"
#include "trace_session.h"
#include "frontend/torch_trace.h"
#include "report/trace_report.h"
#include <QComboBox>
#include <QPushButton>
#include <QMimeData>
#include <QTabWidget>
#include <QPlainTextEdit>
#include "pipeline/pipeline.h"

using namespace ls;

namespace {
// How long a test waits for a compile, a comparison or a run to report: generous, since a wait
// returns as soon as the signal comes and tools/test.sh runs several tests at once, also under
// AddressSanitizer (a 60 s wait for a GEMM-template compile ran out there).
constexpr int kWaitMs = 600000;
}  // namespace

class TestGui : public QObject {
  Q_OBJECT
 private slots:
  void testEveryStageShowsContent() {
    MainWindow w;
    w.show();
    QSignalSpy done(&w, &MainWindow::compileDone);
    w.openModel(QString(LS_SAMPLES) + "/sincos");
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.takeFirst().at(0).toBool(), true);
    new QAbstractItemModelTester(w.kernelTable()->model(), QAbstractItemModelTester::FailureReportingMode::QtTest, &w);
    auto* stages = w.findChild<QListView*>();
    QVERIFY(stages);
    new QAbstractItemModelTester(stages->model(), QAbstractItemModelTester::FailureReportingMode::QtTest, &w);
    QCOMPARE(stages->model()->rowCount(), int(stage_names().size()));
    QCOMPARE(w.kernelTable()->model()->rowCount(), 1);
    for (const std::string& name : stage_names()) {
      QSignalSpy shown(&w, &MainWindow::stageShown);
      QVERIFY(w.selectStage(QString::fromStdString(name)));
      QVERIFY2(shown.count() > 0 || shown.wait(kWaitMs), name.c_str());
      QCOMPARE(w.currentStage(), QString::fromStdString(name));
      QVERIFY2(!w.codeView()->text().isEmpty(), name.c_str());
      QVERIFY2(w.graphView()->nodeCount() > 0, name.c_str());  // every stage has a graph beside it
      if (name == "fused" || name == "source") QCOMPARE(w.graphView()->clusterCount(), 1);
    }
    // A unique prefix selects too; an unknown name does not.
    QVERIFY(w.selectStage("core"));
    QVERIFY(!w.selectStage("nonsense"));
    QVERIFY(w.errorText().isEmpty());
  }

  // A CPU matrix multiply's epilogue: the kernel table says which kernel runs inside which, and
  // why its own time is none.
  void testMatmulEpilogueInKernelTable() {
    MainWindow w;
    QSignalSpy done(&w, &MainWindow::compileDone);
    w.openModel(QString(LS_TEST_DATA) + "/stages/extra/matmul_epilogues.txt");
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.takeFirst().at(0).toBool(), true);
    const QAbstractItemModel* m = w.kernelTable()->model();
    int epilogues = 0;
    for (int row = 1; row < m->rowCount(); ++row) {
      if (m->index(row, 1).data().toString() != "epilogue") continue;
      ++epilogues;
      const QString multiply = m->index(row - 1, 0).data().toString();
      QVERIFY2(multiply.startsWith("extern_"), qPrintable(multiply));
      // A library call, or (a large product on AVX-512) default mode's GEMM template, which says so.
      const QString kind = m->index(row - 1, 1).data().toString();
      QVERIFY2(kind == "extern + epilogue" || kind == "template + epilogue", qPrintable(kind));
      if (kind.startsWith("template")) {
        const QString tip = m->index(row - 1, 1).data(Qt::ToolTipRole).toString();
        QVERIFY2(tip.contains("GEMM template") && tip.contains("the default heuristic: template"), qPrintable(tip));
      }
      QCOMPARE(m->index(row, 2).data().toString(), "in " + multiply);
      QVERIFY(m->index(row, 1).data(Qt::ToolTipRole).toString().contains("inside the matrix multiply"));
    }
    // Not the 8-row product's (one BLAS call); the 16 x 4096 product's, cut into blocks of columns.
    QCOMPARE(epilogues, std::thread::hardware_concurrency() > 1 ? 4 : 0);
  }

  // Compile > Mode: max-autotune on the CPU adds the autotune stage (every matrix multiply's cuts
  // with their times) before the run; a multiply it cut otherwise than the heuristic says so in
  // the kernel table's tooltip.
  void testMaxAutotuneStageOnCpu() {
    QTemporaryDir cache;
    const QByteArray before = qgetenv("LOWERSCOPE_CACHE_DIR");
    qputenv("LOWERSCOPE_CACHE_DIR", cache.path().toUtf8());
    MainWindow w;
    QSignalSpy done(&w, &MainWindow::compileDone);
    w.openModel(QString(LS_TEST_DATA) + "/stages/extra/matmul_epilogues.txt");
    QVERIFY(done.wait(kWaitMs));
    auto* stages = w.findChild<QListView*>();
    const int rows = stages->model()->rowCount();
    QVERIFY(!w.selectStage("autotune"));
    w.findChild<QAction*>("mode_max-autotune")->trigger();
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.last().at(0).toBool(), true);
    QCOMPARE(stages->model()->rowCount(), rows + 1);
    QVERIFY(w.selectStage("autotune"));
    const CompileResult* r = w.session()->result();
    QVERIFY(r->check.ok);
    QVERIFY2(r->stage("autotune")->text.find("AUTOTUNE (CPU): 6 matrix multiplies") != std::string::npos, r->stage("autotune")->text.c_str());
    const QAbstractItemModel* m = w.kernelTable()->model();
    for (int row = 0; row < m->rowCount(); ++row) {
      const std::string name = m->index(row, 0).data().toString().toStdString();
      const auto cut = r->gemm_cuts.find(name);
      if (cut == r->gemm_cuts.end()) continue;
      QVERIFY2(m->index(row, 1).data(Qt::ToolTipRole).toString().contains(QString::fromStdString(cut->second.text())), name.c_str());
    }
    qputenv("LOWERSCOPE_CACHE_DIR", before);
  }

  void testBadFileShowsErrorInWindow() {
    const QString path = QDir::temp().filePath("ls_gui_bad.txt");
    {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("class G(torch.nn.Module):\n    def forward(self, x: \"f32[4]\"):\n        y = torch.ops.aten.nope.default(x)\n");
    }
    MainWindow w;
    w.show();
    QSignalSpy done(&w, &MainWindow::compileDone);
    w.openModel(path);
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.takeFirst().at(0).toBool(), false);
    QVERIFY2(w.errorText().contains("unknown op 'torch.ops.aten.nope.default'"), qPrintable(w.errorText()));
    QVERIFY(w.errorText().contains("ls_gui_bad.txt:3:"));
    // The window still works: the sample opens after the error.
    w.openModel(QString(LS_SAMPLES) + "/sincos");
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.takeFirst().at(0).toBool(), true);
    QVERIFY(w.errorText().isEmpty());
  }

  // A generated kernel that crashes (an injected SIGSEGV, LOWERSCOPE_FAULT) runs in the worker
  // process: the window stays, the run stage names the kernel, every stage before it is kept and
  // drawn, and the next compile (no fault) works with a fresh worker.
  void testFaultingKernelLeavesWindowUsable() {
    IsolationOptions iso;
    iso.enabled = true;
    iso.runner = LS_RUNNER;
    set_cpu_isolation(iso);
    qputenv("LOWERSCOPE_FAULT", "segv:cpp_fused_add_cos_pow_sin_0");
    MainWindow w;
    w.show();
    QSignalSpy done(&w, &MainWindow::compileDone);
    w.openModel(QString(LS_SAMPLES) + "/sincos");
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.takeFirst().at(0).toBool(), false);
    QVERIFY2(w.errorText().contains("kernel cpp_fused_add_cos_pow_sin_0 faulted: SIGSEGV"), qPrintable(w.errorText()));
    const CompileResult* r = w.session()->result();
    QVERIFY(r && r->stage("source") && r->stage("source")->kind != Stage::Kind::not_reached);
    QVERIFY(w.selectStage("source"));
    QVERIFY(w.selectStage("fused"));
    qunsetenv("LOWERSCOPE_FAULT");
    w.openModel(QString(LS_SAMPLES) + "/sincos");
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.takeFirst().at(0).toBool(), true);
    QVERIFY2(w.errorText().isEmpty(), qPrintable(w.errorText()));
    QVERIFY(w.session()->result()->check.ok);
    set_cpu_isolation({});
  }

  // A model whose buffers exceed the host's free memory (a 4 TiB broadcast sum) is refused before
  // its run (exec/memory_fit.h), with both numbers in the banner; the window and its stages stay,
  // and the next model compiles and runs.
  void testTooLargeModelLeavesWindowUsable() {
    MainWindow w;
    w.show();
    QSignalSpy done(&w, &MainWindow::compileDone);
    w.openModel(QString(LS_TEST_DATA) + "/memory/outer_sum_4tb.txt");
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.takeFirst().at(0).toBool(), false);
    QVERIFY2(w.errorText().contains("TiB for its buffers") && w.errorText().contains("available on the host"), qPrintable(w.errorText()));
    QVERIFY(w.selectStage("source"));
    w.openModel(QString(LS_SAMPLES) + "/sincos");
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.takeFirst().at(0).toBool(), true);
    QVERIFY(w.session()->result()->check.ok);
  }

  // A model with an op we lack still opens: the captured graph is drawn with the node marked, the
  // stages after it say they were not reached, and the banner names the node and the op.
  void testModelWithMissingOpStillOpens() {
    MainWindow w;
    w.show();
    QSignalSpy done(&w, &MainWindow::compileDone);
    w.openModel(QString(LS_TEST_DATA) + "/bad/unknown_op.txt");
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.takeFirst().at(0).toBool(), false);
    QVERIFY2(w.errorText().contains("node 'z' calls torch.ops.aten.frobnicate.default"), qPrintable(w.errorText()));
    QCOMPARE(w.currentStage(), QString("capture"));
    const CompileResult* r = w.session()->result();
    QVERIFY(r->stage("capture")->dot.find("failed here") != std::string::npos);
    QCOMPARE(static_cast<int>(r->stage("run")->kind), static_cast<int>(Stage::Kind::not_reached));
    QVERIFY(w.selectStage("core_aten"));  // a stage not reached shows why
    QVERIFY(r->stage("core_aten")->text.find("not reached: stage 'aten' failed") != std::string::npos);
  }

  // A long edge of a large drawing is a reference box beside its head (core testLongEdgesDrawnAsReferences);
  // clicking it selects the node it names and scrolls there. A chain of 400 sines whose input is
  // added again at the end: the add's edge from x is the box "ref:x".
  void testReferenceBoxGoesToItsTail() {
    QTemporaryDir dir;
    const QString path = dir.filePath("chain.txt");
    {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      QByteArray t = "class G(torch.nn.Module):\n    def forward(self, x: \"f32[8]\"):\n";
      for (int i = 0; i < 400; ++i)
        t += QByteArray("        sin_") + QByteArray::number(i) + ": \"f32[8]\" = torch.ops.aten.sin.default(" +
             (i ? "sin_" + QByteArray::number(i - 1) : QByteArray("x")) + ")\n";
      t += "        add: \"f32[8]\" = torch.ops.aten.add.Tensor(sin_399, x)\n        return (add,)\n";
      f.write(t);
    }
    MainWindow w;
    w.resize(1200, 800);
    w.show();
    QSignalSpy done(&w, &MainWindow::compileDone);
    w.openModel(path);
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.takeFirst().at(0).toBool(), true);
    QSignalSpy shown(&w, &MainWindow::stageShown);
    QVERIFY(w.selectStage("aten"));
    QVERIFY(shown.count() > 0 || shown.wait(kWaitMs));
    QVERIFY(w.graphView()->focusNode("ref:x"));   // drawn: the add's reference to x
    QVERIFY(!w.graphView()->nodeInView("x"));     // x itself is 400 boxes up
    emit w.graphView()->nodeClicked("ref:x");
    QCOMPARE(w.selectedOrigins(), QStringList{"x"});
    QVERIFY(w.graphView()->nodeInView("x"));
  }

  void testProvenanceFollowsSelectionAcrossStages() {
    MainWindow w;
    w.show();
    QSignalSpy done(&w, &MainWindow::compileDone);
    w.openModel(QString(LS_SAMPLES) + "/mse_loss");
    QVERIFY(done.wait(kWaitMs));
    auto show = [&](const char* stage) {
      QSignalSpy shown(&w, &MainWindow::stageShown);
      QVERIFY(w.selectStage(stage));
      QVERIFY(shown.count() > 0 || shown.wait(kWaitMs));
    };
    show("aten");
    w.selectNode("mse_loss");
    QCOMPARE(w.selectedOrigins(), QStringList{"mse_loss"});
    QCOMPARE(w.highlightedCount(), 1);
    // The tree lists what mse_loss became at each level, down to its kernel.
    const auto prims = w.provenanceTree()->findItems("prims.sum.default", Qt::MatchRecursive, 1);
    QCOMPARE(prims.size(), 1);
    QVERIFY(!w.provenanceTree()->findItems("aten.mean.default", Qt::MatchRecursive, 1).isEmpty());
    QVERIFY(!w.provenanceTree()->findItems("generated", Qt::MatchRecursive, 1).isEmpty());
    // Stepping to later stages keeps the selection: every node made from mse_loss is marked.
    show("core_aten");
    QCOMPARE(w.highlightedCount(), 3);  // sub, pow, mean
    show("prims");
    QVERIFY(w.highlightedCount() >= 4);  // sub, mul, sum, div
    show("fused");
    QVERIFY(w.highlightedCount() >= 3);
    // In the source, the lines generated from mse_loss's nodes are marked...
    show("source");
    QVERIFY(w.markedSourceLines() >= 4);
    // ...and clicking a line of another node's code selects that node instead.
    const CompileResult* r = w.session()->result();
    int sin_line = 0;
    for (const auto& [l, node] : r->source.kernels.at(0).line_nodes)
      if (r->loops.nodes.at(node).graph_node == "sin") sin_line = l;
    QVERIFY(sin_line > 0);
    w.codeView()->setCursorPosition(sin_line - 1, 0);
    QTRY_COMPARE(w.selectedOrigins(), QStringList{"sin"});  // Scintilla reports the move on its next update
  }

  void testDecompositionTargetAndFusionToggles() {
    MainWindow w;
    w.show();
    QSignalSpy done(&w, &MainWindow::compileDone);
    w.openModel(QString(LS_SAMPLES) + "/mse_loss");
    QVERIFY(done.wait(kWaitMs));
    auto* stages = w.findChild<QListView*>();
    QCOMPARE(stages->model()->rowCount(), int(stage_names().size()));
    w.findChild<QAction*>("decompose_core_aten")->trigger();  // recompiles without the prims stage
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.last().at(0).toBool(), true);
    QCOMPARE(stages->model()->rowCount(), int(stage_names().size()) - 1);
    QVERIFY(!w.selectStage("prims"));
    w.findChild<QAction*>("fusion")->trigger();  // off: one kernel per loop node
    QVERIFY(done.wait(kWaitMs));
    QVERIFY(w.kernelTable()->model()->rowCount() > 1);
  }

  // Dynamic shapes from the Compile menu: a "dynamic" stage after the source lists the symbols and
  // guards, the source takes the sizes as arguments, and the run still matches the reference.
  void testDynamicShapesStage() {
    MainWindow w;
    w.show();
    QSignalSpy done(&w, &MainWindow::compileDone);
    w.openModel(QString(LS_SAMPLES) + "/mse_loss");
    QVERIFY(done.wait(kWaitMs));
    auto* stages = w.findChild<QListView*>();
    const int before = stages->model()->rowCount();
    w.findChild<QAction*>("dynamic")->trigger();
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.last().at(0).toBool(), true);
    QCOMPARE(stages->model()->rowCount(), before + 1);
    QVERIFY(w.selectStage("dynamic"));
    const CompileResult* r = w.session()->result();
    for (int i = 0; i < stages->model()->rowCount(); ++i)  // the stage's row counts its size symbols
      if (stages->model()->index(i, 0).data(Qt::ToolTipRole).toString() == "dynamic") {
        const QString text = stages->model()->index(i, 0).data().toString();
        const size_t n = r->dynamic.symbols.size();
        QVERIFY2(text.contains(QString("%1 size symbol%2 ").arg(n).arg(n == 1 ? "" : "s")), qPrintable(text));
      }
    QVERIFY2(r->stage("dynamic")->text.find("dynamic") != std::string::npos, r->stage("dynamic")->text.c_str());
    QVERIFY(r->stage("source")->text.find("ks0") != std::string::npos);
    QVERIFY(r->check.ok);
    if (qEnvironmentVariableIsSet("LS_SCREENSHOT_DIR")) {
      QApplication::processEvents();
      w.grab().save(qEnvironmentVariable("LS_SCREENSHOT_DIR") + "/dynamic.png");
    }
    // Target CUDA keeps dynamic shapes: the CUDA kernels take the symbols after their buffers.
    if (!have_nvrtc()) return;
    w.findChild<QAction*>("target_cuda")->trigger();
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.last().at(0).toBool(), true);
    r = w.session()->result();
    QVERIFY(r->device == Device::cuda);
    QVERIFY(r->stage("dynamic") != nullptr);
    QVERIFY2(r->stage("source")->text.find("const long long ls_ks0") != std::string::npos, r->stage("source")->text.c_str());
  }

  // Target CUDA: the source stage holds CUDA C++, the asm stage NVRTC's PTX with an entry per
  // generated kernel; without a GPU the summary says the run needs one, with one the check passes.
  void testCudaTarget() {
    if (!have_nvrtc()) QSKIP("this build has no NVRTC");
    MainWindow w;
    w.show();
    QSignalSpy done(&w, &MainWindow::compileDone);
    w.openModel(QString(LS_SAMPLES) + "/mse_loss");
    QVERIFY(done.wait(kWaitMs));
    w.findChild<QAction*>("target_cuda")->trigger();
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.last().at(0).toBool(), true);
    const CompileResult* r = w.session()->result();
    QVERIFY(r->device == Device::cuda);
    QVERIFY(r->stage("source")->text.find("__global__") != std::string::npos);
    for (const Kernel& k : r->schedule.kernels)
      if (!k.is_extern) QVERIFY(r->stage("asm")->text.find(".entry " + k.name) != std::string::npos);
    // The summary's tooltip: compile time by phase, NVRTC's among them (or its disk cache's).
    const QString phases = w.findChild<QLabel*>("run_summary")->toolTip();
    QVERIFY2(phases.contains("compile time by phase") && (phases.contains("NVRTC: PTX") || phases.contains("disk cache: PTX")),
             qPrintable(phases));
    QVERIFY(w.selectStage("source"));
    if (qEnvironmentVariableIsSet("LS_SCREENSHOT_DIR")) {
      QApplication::processEvents();
      w.grab().save(qEnvironmentVariable("LS_SCREENSHOT_DIR") + "/cuda.png");
    }
    w.findChild<QAction*>("target_cpu")->trigger();
    QVERIFY(done.wait(kWaitMs));
    QVERIFY(w.session()->result()->device == Device::cpu);
    QVERIFY(w.session()->result()->check.ok);
  }

  // Training mode: the joint graph (forward and backward as clusters), the partitioned forward
  // and backward with the saved tensors outlined in red, and the saved tensors listed with both
  // partitioners side by side; switching the partitioner recompiles.
  void testTrainingModeShowsPartition() {
    MainWindow w;
    w.show();
    QSignalSpy done(&w, &MainWindow::compileDone);
    w.openModel(QString(LS_SAMPLES) + "/mse_loss");
    QVERIFY(done.wait(kWaitMs));
    w.setTraining(true);
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.last().at(0).toBool(), true);
    auto* stages = w.findChild<QListView*>();
    QCOMPARE(stages->model()->rowCount(), int(stage_names(true).size()));
    const CompileResult* r = w.session()->result();
    QVERIFY(r->train);
    const int saved = static_cast<int>(r->training.partition().saved.size());
    QVERIFY(saved > 0);
    QCOMPARE(w.partitionTable()->model()->rowCount(), saved);
    new QAbstractItemModelTester(w.partitionTable()->model(), QAbstractItemModelTester::FailureReportingMode::QtTest, &w);
    QVERIFY(w.partitionSummary().contains("min_cut") && w.partitionSummary().contains("default"));
    auto show = [&](const char* stage) {
      QSignalSpy shown(&w, &MainWindow::stageShown);
      QVERIFY(w.selectStage(stage));
      QVERIFY(shown.count() > 0 || shown.wait(kWaitMs));
    };
    show("joint");
    QVERIFY(w.graphView()->clusterCount() >= 2);  // forward and backward
    QCOMPARE(w.graphView()->nodesOutlined(QColor("#c0392b")), saved);
    show("forward");
    QCOMPARE(w.graphView()->nodesOutlined(QColor("#c0392b")), saved);
    show("backward");
    QCOMPARE(w.graphView()->nodesOutlined(QColor("#c0392b")), saved);
    if (qEnvironmentVariableIsSet("LS_SCREENSHOT_DIR")) {
      w.findChild<QDockWidget*>("partition")->raise();
      QApplication::processEvents();
      w.grab().save(qEnvironmentVariable("LS_SCREENSHOT_DIR") + "/training.png");
    }
    w.setPartitioner(false);  // the default partitioner saves more
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.last().at(0).toBool(), true);
    QVERIFY(w.session()->result()->training.partition().partitioner == Partitioner::default_partition);
    QVERIFY(w.partitionTable()->model()->rowCount() > saved);
  }

  // Find by name or op selects the node (and what it became); export writes every stage, the
  // source, report.json and an SVG per graph; the model is remembered among the recent files.
  void testFindExportAndRecent() {
    QStandardPaths::setTestModeEnabled(true);
    QSettings().remove("recentFiles");
    MainWindow w;
    w.show();
    QSignalSpy done(&w, &MainWindow::compileDone);
    w.openModel(QString(LS_SAMPLES) + "/mse_loss");
    QVERIFY(done.wait(kWaitMs));
    QSignalSpy shown(&w, &MainWindow::stageShown);
    QVERIFY(w.selectStage("core_aten"));
    QVERIFY(shown.count() > 0 || shown.wait(kWaitMs));
    int pows = 0;
    for (const Node& n : w.session()->result()->core_aten.nodes) pows += QString::fromStdString(n.target).contains("aten.pow");
    QVERIFY(pows >= 1);
    QCOMPARE(w.findNodes("aten.pow"), pows);         // by op
    QVERIFY(!w.selectedOrigins().isEmpty());
    QVERIFY(w.findNodes("no-such-node") == 0);
    QVERIFY(w.findNodes("sub") >= 1);                // by name
    QTemporaryDir dir;
    const QString msg = w.exportFolder(dir.path());
    QVERIFY2(msg.startsWith("Exported"), qPrintable(msg));
    const QDir d(dir.path());
    QVERIFY(d.exists("report.json"));
    QVERIFY(!d.entryList({"*_source.cpp"}).isEmpty());
    const QStringList dots = d.entryList({"*.dot"}), svgs = d.entryList({"*.svg"});
    QVERIFY(dots.size() >= 5);
    QCOMPARE(svgs.size(), dots.size());
    QCOMPARE(d.entryList({"*.png"}).size(), dots.size());
    QFile svg(d.filePath(svgs.first()));
    QVERIFY(svg.open(QIODevice::ReadOnly));
    QVERIFY(svg.readAll().contains("<svg"));
    QVERIFY(w.errorText().isEmpty());
    QCOMPARE(w.recentFiles().value(0), QFileInfo(QString(LS_SAMPLES) + "/mse_loss").absoluteFilePath());
    // The compiled machine code is there, byte for byte what was loaded.
    const CompileResult* r = w.session()->result();
    QVERIFY(!r->objects.empty());
    for (const auto& [name, bytes] : r->objects) {
      QFile o(d.filePath(QString::fromStdString(name)));
      QVERIFY2(o.open(QIODevice::ReadOnly), name.c_str());
      QCOMPARE(o.readAll(), QByteArray::fromStdString(bytes));
      QVERIFY(bytes.compare(0, 4, "\x7f" "ELF") == 0);
    }

    // The package export says what it wrote (its build and run are tested in tests/cpu).
    const QString said = w.exportPackage(dir.filePath("package"));
    QVERIFY2(said.contains("kernels.cpp") && said.contains("CMakeLists.txt") && said.contains("data/"), qPrintable(said));

    // The HTML report opens in headless Chromium without a console error, and what it shows is
    // the compile's: every stage, every kernel, a picture per drawn graph.
    QVERIFY(d.exists("report.html"));
    const QString chromium = QStandardPaths::findExecutable("chromium");
    if (chromium.isEmpty()) QSKIP("Debian's chromium is not installed (tools/install-deps.sh installs it)");
    QProcess p;
    p.start(chromium, {"--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
                       "--user-data-dir=" + dir.filePath("chromium-profile"), "--dump-dom",
                       QUrl::fromLocalFile(d.filePath("report.html")).toString()});
    QVERIFY(p.waitForFinished(600000));
    QCOMPARE(p.exitCode(), 0);
    const QString dom = QString::fromUtf8(p.readAllStandardOutput()), log = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(!log.contains("CONSOLE"), qPrintable(log));
    for (const Stage& st : r->stages) QVERIFY2(dom.contains("id=\"stage-" + QString::fromStdString(st.name) + "\""), st.name.c_str());
    for (const KernelReport& k : r->kernels) QVERIFY(dom.contains(QString::fromStdString(k.name)));
    QCOMPARE(dom.count("<svg"), svgs.size());
  }

  void testOpensExportedModel() {
    MainWindow w;
    w.show();
    QSignalSpy done(&w, &MainWindow::compileDone);
    w.openModel(QString(LS_TEST_DATA) + "/models/res_block/model.pt2");
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.takeFirst().at(0).toBool(), true);
    QSignalSpy shown(&w, &MainWindow::stageShown);
    QVERIFY(w.selectStage("capture"));
    QVERIFY(shown.count() > 0 || shown.wait(kWaitMs));
    QVERIFY(w.graphView()->nodeCount() > 10);
    QVERIFY(w.codeView()->text().contains("torch.ops.aten.conv2d.default"));
  }

  // The Diff tab: the fused stage against fusion off (a second compile) lists the split kernel
  // group; two stages of one compile give a graph diff whose added nodes are the prims graph's
  // nodes that core ATen lacks, drawn in one layout.
  void testDiffModesAndStages() {
    MainWindow w;
    w.show();
    QSignalSpy done(&w, &MainWindow::compileDone);
    w.openModel(QString(LS_SAMPLES) + "/mse_loss");
    QVERIFY(done.wait(kWaitMs));
    DiffPanel* d = w.diffPanel();
    QVERIFY(d->variants().contains("Fusion off"));
    QVERIFY(d->variants().contains("Training step"));
    QSignalSpy compared(d, &DiffPanel::compared);
    QVERIFY(d->compare("fused", "Fusion off", "fused"));
    QVERIFY(compared.wait(kWaitMs));
    QCOMPARE(compared.takeFirst().at(0).toBool(), true);
    const int fused = static_cast<int>(w.session()->result()->schedule.kernels.size());
    QVERIFY2(d->summary().contains(QString("Kernels:</b> %1 →").arg(fused)), qPrintable(d->summary()));
    // Every unfused kernel is on the right-hand side of a change (split out of a fused one).
    QVERIFY(d->names(Change::changed).size() > fused);
    QVERIFY(d->addedLines() > 0 && d->removedLines() > 0);
    QVERIFY(d->graphView()->nodeCount() > 0);

    // Two stages of one compile: core ATen against prims.
    QVERIFY(d->compare("core_aten", d->variants().first(), "prims"));
    QVERIFY(compared.count() > 0 || compared.wait(kWaitMs));
    const CompileResult* r = w.session()->result();
    QSet<QString> core_names, expected_added;
    for (const Node& n : r->core_aten.nodes) core_names.insert(QString::fromStdString(n.name));
    const QStringList added = d->names(Change::added);
    QVERIFY(!added.isEmpty());
    for (const QString& n : added) QVERIFY2(r->prims.find(n.toStdString()) >= 0, qPrintable(n));
    // Nothing made by the decomposition to prims stands "same" against core ATen: only nodes the
    // decomposition left alone (inputs, ops it keeps, such as convolution) can.
    for (const QString& n : d->names(Change::same)) {
      const Node& node = r->prims.nodes.at(r->prims.find(n.toStdString()));
      QVERIFY2(node.is_placeholder() || !QString::fromStdString(node.target).contains("prims."), qPrintable(n));
    }
    QCOMPARE(d->graphView()->nodeCount(), int(r->prims.nodes.size() + d->names(Change::removed).size()) + 1);  // + output
    QVERIFY(!d->compare("no_such_stage", "Fusion off", "fused"));
  }

  // Default mode's GEMM template for layernorm_gelu's 2048x256 @ 256x1024 (AVX-512): the kernel
  // table says "template + epilogue"; the Diff tab's "GEMM templates off" removes the template's
  // lines from the source; Compile > GEMM Templates off recompiles it as a library call.
  void testGemmTemplateToggleAndDiff() {
    if (gemm_vector_width() != 16) QSKIP("default mode writes GEMM templates where AVX-512 is there");
    MainWindow w;
    w.show();
    QSignalSpy done(&w, &MainWindow::compileDone);
    w.openModel(QString(LS_TEST_DATA) + "/stages/layernorm_gelu/3_core_aten.txt");
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.takeFirst().at(0).toBool(), true);
    auto kinds = [&] {
      QStringList v;
      const QAbstractItemModel* m = w.kernelTable()->model();
      for (int row = 0; row < m->rowCount(); ++row) v << m->index(row, 1).data().toString();
      return v;
    };
    QVERIFY2(kinds().contains("template + epilogue"), qPrintable(kinds().join(", ")));
    DiffPanel* d = w.diffPanel();
    QVERIFY(d->variants().contains("GEMM templates off"));
    QSignalSpy compared(d, &DiffPanel::compared);
    QVERIFY(d->compare("source", "GEMM templates off", "source"));
    QVERIFY(compared.wait(kWaitMs));
    QCOMPARE(compared.takeFirst().at(0).toBool(), true);
    QVERIFY2(d->removedLines() > 50, qPrintable(QString::number(d->removedLines())));  // the template's lines
    w.findChild<QAction*>("gemm_templates")->trigger();  // off: recompiles
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.takeFirst().at(0).toBool(), true);
    QVERIFY2(kinds().contains("extern + epilogue") && !kinds().join(" ").contains("template"), qPrintable(kinds().join(", ")));
    QVERIFY(w.session()->result()->gemm_cuts.empty());
    QVERIFY(d->variants().contains("GEMM templates on"));
  }

  // Compile > Dtype runs a float32 model as model.to(torch.bfloat16): the toolbar follows, values
  // are annotated bf16 in the graphs and the properties, the check uses assert_close's bfloat16
  // tolerance and says so; the Diff tab sets float32 against bfloat16 both ways (its float32 side
  // compiles the model as loaded, not the converted one).
  void testDtypeChoiceAndDiff() {
    MainWindow w;
    w.show();
    QSignalSpy done(&w, &MainWindow::compileDone);
    w.openModel(QString(LS_TEST_DATA) + "/models/mlp");
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.takeFirst().at(0).toBool(), true);
    auto* box = w.findChild<QComboBox*>("dtype_box");
    auto* summary = w.findChild<QLabel*>("run_summary");
    QVERIFY(box && summary);
    QCOMPARE(box->currentData().toString(), QString("float32"));
    QVERIFY(!summary->text().contains("tolerance"));

    // float32 against bfloat16, in the Diff tab: the source gains the bf16 helpers and conversions,
    // and every kernel is the same loop over other types.
    DiffPanel* d = w.diffPanel();
    QVERIFY2(d->variants().contains("Dtype bfloat16") && d->variants().contains("Dtype float16"), qPrintable(d->variants().join(", ")));
    QSignalSpy compared(d, &DiffPanel::compared);
    QVERIFY(d->compare("source", "Dtype bfloat16", "source"));
    QVERIFY(compared.wait(kWaitMs));
    QCOMPARE(compared.takeFirst().at(0).toBool(), true);
    const CodeView* left = d->findChild<CodeView*>("diff_left");
    const CodeView* right = d->findChild<CodeView*>("diff_right");
    QVERIFY(left && right);
    QVERIFY(!left->text().contains("ls_bf16") && right->text().contains("enum class ls_bf16"));
    QVERIFY(d->addedLines() > 0 && d->removedLines() > 0);
    const int kernels = static_cast<int>(w.session()->result()->schedule.kernels.size());
    QCOMPARE(d->names(Change::changed).size(), kernels);  // retyped: f32 buffers -> bf16
    QVERIFY2(d->summary().contains(QString("0 same, %1 changed").arg(kernels)), qPrintable(d->summary()));
    const QTreeWidget* changes = d->findChild<QTreeWidget*>();
    QVERIFY(changes && changes->topLevelItemCount() == kernels);
    QVERIFY2(changes->topLevelItem(0)->text(2).startsWith("f32 → bf16: "), qPrintable(changes->topLevelItem(0)->text(2)));

    // The choice itself: bfloat16 recompiles.
    w.findChild<QAction*>("dtype_bfloat16")->trigger();
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.takeFirst().at(0).toBool(), true);
    QCOMPARE(box->currentData().toString(), QString("bfloat16"));
    QCOMPARE(w.session()->options.dtype, std::optional<DType>(DType::bf16));
    const CompileResult* r = w.session()->result();
    QVERIFY(r->check.ok);
    QCOMPARE(r->check.precision, DType::bf16);
    const QString tolerance = QString::fromStdString(tolerance_text(DType::bf16));
    QVERIFY2(summary->text().contains("tolerance " + tolerance), qPrintable(summary->text()));
    QSignalSpy shown(&w, &MainWindow::stageShown);
    QVERIFY(w.selectStage("run"));
    QVERIFY(shown.count() > 0 || shown.wait(kWaitMs));
    QVERIFY2(w.codeView()->text().contains("tolerance: " + tolerance), qPrintable(w.codeView()->text()));
    shown.clear();
    QVERIFY(w.selectStage("aten"));
    QVERIFY(shown.count() > 0 || shown.wait(kWaitMs));
    QVERIFY(w.codeView()->text().contains("\"bf16[64, 256]\""));
    auto props = [&] {
      QMap<QString, QString> p;
      for (int i = 0; i < w.propertiesTree()->topLevelItemCount(); ++i)
        p[w.propertiesTree()->topLevelItem(i)->text(0)] = w.propertiesTree()->topLevelItem(i)->text(1);
      return p;
    };
    w.selectNode("relu");
    QCOMPARE(props().value("Output"), QString("bf16[64, 256]"));
    shown.clear();
    QVERIFY(w.selectStage("fused"));
    QVERIFY(shown.count() > 0 || shown.wait(kWaitMs));
    QString relu_kernel;
    for (const Kernel& k : r->schedule.kernels)
      if (!k.is_extern) relu_kernel = QString::fromStdString(k.name);
    w.selectNode(relu_kernel);
    QVERIFY2(props().value("Writes").contains(": bf16[64, 256]"), qPrintable(props().value("Writes")));  // buffers with their types

    // bfloat16 against the model as loaded: the right side is float32 again.
    QVERIFY2(d->variants().contains("Dtype float32 (as loaded)") && !d->variants().contains("Dtype bfloat16"),
             qPrintable(d->variants().join(", ")));
    QVERIFY(d->compare("aten", "Dtype float32 (as loaded)", "aten"));
    QVERIFY(compared.wait(kWaitMs));
    QCOMPARE(compared.takeFirst().at(0).toBool(), true);
    QVERIFY(left->text().contains("\"bf16[64, 256]\"") && right->text().contains("\"f32[64, 256]\""));
    QVERIFY(d->names(Change::changed).contains("relu"));

    // Back to float32 as loaded: no conversion, no half tolerance.
    w.findChild<QAction*>("dtype_float32")->trigger();
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(w.session()->options.dtype, std::nullopt);
    QCOMPARE(w.session()->result()->check.precision, DType::f32);
    QVERIFY(!summary->text().contains("tolerance"));
  }

  // The property panel reads the selected node from the record; the heat overlay paints every
  // op node by the time of the kernels made from it; the profile charts every kernel and sets the
  // run op by op beside the compiled one.
  void testPropertiesHeatAndProfile() {
    MainWindow w;
    w.show();
    QSignalSpy done(&w, &MainWindow::compileDone);
    w.openModel(QString(LS_TEST_DATA) + "/models/res_block/model.pt2");
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.takeFirst().at(0).toBool(), true);
    const CompileResult* r = w.session()->result();
    QSignalSpy shown(&w, &MainWindow::stageShown);
    QVERIFY(w.selectStage("core_aten"));
    QVERIFY(shown.count() > 0 || shown.wait(kWaitMs));
    w.selectNode("relu");
    QMap<QString, QString> props;
    for (int i = 0; i < w.propertiesTree()->topLevelItemCount(); ++i)
      props[w.propertiesTree()->topLevelItem(i)->text(0)] = w.propertiesTree()->topLevelItem(i)->text(1);
    const Node& relu = r->core_aten.nodes.at(r->core_aten.find("relu"));
    QCOMPARE(props.value("Op"), QString("aten.relu"));
    QCOMPARE(props.value("Overload"), QString("default"));
    QCOMPARE(props.value("Output"), QString::fromStdString(relu.meta().annotation()));
    QVERIFY(props.value("Output strides").startsWith(QString("[%1,").arg(relu.meta().strides.at(0))));
    QString kernel;
    for (const KernelReport& k : r->kernels)
      if (std::count(k.nodes.begin(), k.nodes.end(), "relu")) kernel = QString::fromStdString(k.name);
    QVERIFY(!kernel.isEmpty());
    QVERIFY2(props.value("In kernel(s)").contains(kernel), qPrintable(props.value("In kernel(s)")));
    QVERIFY(props.value("Time share").endsWith("µs in those kernels)"));

    // Heat: each op node of core ATen is made into some kernel, so each is painted.
    w.setHeatOverlay(true);
    int ops = 0;
    for (const Node& n : r->core_aten.nodes) ops += !n.is_placeholder();
    QCOMPARE(w.heatPainted(), ops);
    QVERIFY(w.selectStage("fused"));
    QVERIFY(shown.wait(kWaitMs));
    QVERIFY(w.heatPainted() >= int(r->kernels.size()));  // clusters and library calls, and their loop nodes
    w.setHeatOverlay(false);
    QCOMPARE(w.heatPainted(), 0);

    ProfileView* p = w.profileView();
    QCOMPARE(p->barCount(), std::min(24, int(r->kernels.size())));
    QVERIFY(r->bandwidth_gbps > 0);  // measured on this machine
    QSignalSpy measured(p, &ProfileView::opByOpDone);
    p->measureOpByOp();
    QVERIFY(measured.wait(kWaitMs));
    QCOMPARE(measured.takeFirst().at(0).toBool(), true);
    QVERIFY(p->opByOpMs() > 0);
    QVERIFY2(p->comparison().contains("op by op"), qPrintable(p->comparison()));
  }

  // A 5,000-node graph starts folded by module within a small layout; modules open and fold on
  // request; finding a node inside folded modules opens them; the interface keeps answering.
  void testLargeGraphFoldsByModule() {
    const LoadedModel model = synthetic_model(25, 4, 50);  // built before the clock starts: the test's own work
    MainWindow w;
    w.show();
    QSignalSpy shown(&w, &MainWindow::stageShown);
    QElapsedTimer clock;
    clock.start();
    qint64 longest_gap = 0, last = 0;
    QTimer tick;
    connect(&tick, &QTimer::timeout, [&] {
      longest_gap = std::max(longest_gap, clock.elapsed() - last);
      last = clock.elapsed();
    });
    tick.start(10);
    QSignalSpy done(&w, &MainWindow::compileDone);
    w.openLoadedModel(model);
    QVERIFY(shown.wait(kWaitMs));  // the captured graph, drawn while the rest compiles
    const int first = w.graphView()->nodeCount();
    QVERIFY2(first > 1 && first <= 62, qPrintable(QString::number(first)));  // budget 60, and the output
    QVERIFY(!w.expandedModules().isEmpty());
    // Open a folded module: its children appear.
    QString folded;
    for (int b = 0; b < 25 && folded.isEmpty(); ++b)
      if (!w.expandedModules().contains(QString("blocks.%1.layers").arg(b))) folded = QString("blocks.%1.layers").arg(b);
    QVERIFY(!folded.isEmpty());
    w.expandModule(folded);
    QVERIFY(shown.wait(kWaitMs));
    QVERIFY(w.graphView()->nodeCount() > first);
    w.collapseModule(folded);
    QVERIFY(shown.wait(kWaitMs));
    QCOMPARE(w.graphView()->nodeCount(), first);
    // Find a node deep inside folded modules: they open and it is drawn.
    const QString deep = "n4990";  // blocks.24.layers.3
    QVERIFY(w.findNodes(deep) >= 1);
    QVERIFY(shown.wait(kWaitMs));
    QVERIFY(w.expandedModules().contains("blocks.24.layers.3"));
    QVERIFY(w.graphView()->nodeInView(deep));  // scrolled to, at the far end of a long graph
    // Stepping to the next stage keeps it in view: what it became there is marked and scrolled to.
    QVERIFY(done.count() > 0 || done.wait(kWaitMs));
    QVERIFY(w.selectStage("aten"));
    QVERIFY(shown.wait(kWaitMs));
    QVERIFY(w.highlightedCount() >= 1);
    QVERIFY(w.graphView()->nodeInView(deep));
    // The heat overlay paints folded modules too (by their hottest node): every box but the input
    // and the output is made into some kernel.
    w.setHeatOverlay(true);
    QCOMPARE(w.heatPainted(), w.graphView()->nodeCount() - 2);
    int stall_ms = 1000;
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
    stall_ms = 4000;  // the sanitizer build (tools/test.sh's build-fuzz/) runs the layout several times slower
#endif
#endif
    QVERIFY2(longest_gap < stall_ms, qPrintable(QString("the event loop stalled %1 ms").arg(longest_gap)));
  }

  // A big graph without module paths (a long chain, a graph pasted from a log) folds by runs of
  // consecutive nodes, nested so that no level draws more than 40: its first picture is a few
  // dozen boxes, not 2,000 (a 20,000-node chain took 44 s to draw unfolded, 0.5-0.8 s folded:
  // tools/bench/results-gui.md). A run opens like a module; a node found deep inside opens its runs.
  void testFlatGraphFoldsByRunsOfNodes() {
    LoadedModel m = synthetic_model(8, 1, 250);
    for (Node& n : m.graph.nodes) n.module_path.clear();
    const Graph seg = segmented(m.graph);
    size_t j = 0;
    for (const Node& n : seg.nodes) {
      if (n.is_placeholder()) continue;
      QVERIFY2(!n.module_path.empty(), n.name.c_str());
      const size_t a = std::stoul(n.module_path.substr(6));  // "nodes 0-49.nodes 0-1": its run holds it
      QVERIFY(a <= j && j < a + 50);
      ++j;
    }
    QVERIFY(child_modules(seg, "").size() <= 40);
    MainWindow w;
    w.show();
    QSignalSpy shown(&w, &MainWindow::stageShown);
    w.openLoadedModel(m);
    QVERIFY(shown.wait(kWaitMs));
    const int first = w.graphView()->nodeCount();
    QVERIFY2(first > 2 && first <= 62, qPrintable(QString::number(first)));
    QVERIFY(w.findNodes("n1777") >= 1);
    QVERIFY(shown.wait(kWaitMs));
    QVERIFY(w.graphView()->nodeInView("n1777"));
    QVERIFY(w.graphView()->nodeCount() > first);
  }

  // A layout too big to finish soon is cancelled and leaves the interface as it was.
  void testCancelLongLayout() {
    const LoadedModel m = synthetic_model(25, 4, 50);
    GraphLayouter layouter;
    QSignalSpy laid(&layouter, &GraphLayouter::laidOut);
    QElapsedTimer t;
    t.start();
    layouter.layout(QString::fromStdString(graph_to_dot(m.graph)));  // 5,000 boxes unfolded
    QVERIFY(layouter.busy());
    QTest::qWait(300);
    layouter.cancel();
    QVERIFY(!layouter.busy());
    QVERIFY(t.elapsed() < 2000);
    QTest::qWait(200);
    QCOMPARE(laid.count(), 0);
  }

  // A schedule too big for a cluster per kernel (MobileNetV3-Small's training step: 1,154 loop
  // nodes in 241 kernels, which dot could not rank) is drawn as a box per kernel, and dot lays that
  // out: every kernel a box, the view showing boxes (not the empty middle of a wide drawing).
  void testLargeScheduleIsDrawnByKernel() {
    PipelineOptions o;
    o.device = Device::cuda;
    o.train = true;
    o.stop_after_source = true;
    const CompileResult r = run_pipeline(load_model(std::string(LS_TEST_DATA) + "/stages/mobilenet_v3_small/3_export_aten.txt"), o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QVERIFY(r.loops.nodes.size() > kClusteredScheduleNodes);
    const Stage* fused = r.stage("fused");
    QVERIFY(fused != nullptr);
    QVERIFY(fused->dot.find("subgraph cluster") == std::string::npos);
    GraphLayouter layouter;
    QSignalSpy laid(&layouter, &GraphLayouter::laidOut), failed(&layouter, &GraphLayouter::failed);
    layouter.layout(QString::fromStdString(fused->dot));
    QVERIFY(laid.wait(kWaitMs) || !failed.isEmpty());
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.at(0).at(0).toString()));
    const auto g = laid.at(0).at(0).value<LaidOutGraph>();
    QCOMPARE(g.nodes.size(), r.schedule.kernels.size());
    GraphView view;
    view.resize(800, 600);
    view.show();
    view.showGraph(g);
    view.zoomToFit();
    QVERIFY(!view.items(view.viewport()->rect()).isEmpty());

    // The loop IR of the same step (1,154 loop nodes, edges from forward buffers down into the
    // backward): dot gave up on it after a minute; with its long edges drawn as reference boxes it
    // lays out, and every reference names a box the drawing has.
    const Stage* loops = r.stage("loop_ir");
    QVERIFY(loops != nullptr);
    QVERIFY(loops->dot.find("id=\"ref:") != std::string::npos);
    QSignalSpy laid2(&layouter, &GraphLayouter::laidOut), failed2(&layouter, &GraphLayouter::failed);
    layouter.layout(QString::fromStdString(loops->dot));
    QVERIFY(laid2.wait(kWaitMs) || !failed2.isEmpty());
    QVERIFY2(failed2.isEmpty(), failed2.isEmpty() ? "" : qPrintable(failed2.at(0).at(0).toString()));
    const auto lg = laid2.at(0).at(0).value<LaidOutGraph>();
    QSet<QString> ids;
    for (const auto& n : lg.nodes) ids.insert(n.id);
    int refs = 0;
    for (const auto& n : lg.nodes)
      if (n.id.startsWith("ref:")) {
        ++refs;
        QVERIFY2(ids.contains(n.id.mid(4)), qPrintable(n.id));
      }
    QVERIFY(refs > 0);
  }

  // GPT-2's training graph from a real TORCH_TRACE log: its fused stage's clusters make Graphviz
  // 2.43's ranking fail ("trouble in init_rank"; with newrank, or without clusters, dot takes
  // minutes). The layouter draws the stage's simpler form instead, a box per kernel, and says so.
  void testClusterRankingFailureIsLaidOutAgain() {
    const TorchTrace t = read_torch_trace(std::string(LS_TEST_DATA) + "/trace/gpt2.log");
    const TraceCompile* c = t.compile("1/0");
    QVERIFY(c != nullptr);
    PipelineOptions o;
    o.train = true;
    o.stop_after_source = true;
    const CompileResult r = run_pipeline(trace_graph_model(*c), o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    const Stage* fused = r.stage("fused");
    QVERIFY(fused != nullptr && fused->dot.find("subgraph cluster") != std::string::npos);
    QVERIFY(!fused->dot_simple.empty() && fused->dot_simple.find("subgraph cluster") == std::string::npos);
    GraphLayouter layouter;
    QSignalSpy laid(&layouter, &GraphLayouter::laidOut), failed(&layouter, &GraphLayouter::failed);
    QElapsedTimer clock;
    clock.start();
    layouter.layout(QString::fromStdString(fused->dot), QString::fromStdString(fused->dot_simple));
    QVERIFY(laid.wait(kWaitMs) || !failed.isEmpty());
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.at(0).at(0).toString()));
    const auto g = laid.at(0).at(0).value<LaidOutGraph>();
    QCOMPARE(g.nodes.size(), r.schedule.kernels.size());
    QVERIFY2(g.note.contains("box per kernel") && g.note.contains("init_rank"), qPrintable(g.note));
    QVERIFY(clock.elapsed() < layouter.simpler_after_ms);  // dot's refusal is not waited out
  }

  // dot's failure comes back as one line however much dot printed (it printed 3,200 lines for a
  // schedule too big to rank, and the message alone stretched the window to 32,767 pixels): a
  // stand-in dot first on PATH fails that way.
  void testLayoutFailureIsOneLine() {
    QTemporaryDir bin;
    {
      QFile dot(bin.filePath("dot"));
      QVERIFY(dot.open(QIODevice::WriteOnly));
      dot.write("#!/bin/sh\necho 'Error: trouble in init_rank' >&2\nfor i in $(seq 1 3200); do echo \"\t%0 $i\" >&2; done\nexit 1\n");
      dot.close();
      dot.setPermissions(dot.permissions() | QFileDevice::ExeOwner);
    }
    const QByteArray path = qgetenv("PATH");
    qputenv("PATH", bin.path().toUtf8() + ":" + path);
    GraphLayouter layouter;
    QSignalSpy failed(&layouter, &GraphLayouter::failed);
    layouter.layout("digraph G { a -> b }");
    const bool got = failed.wait(kWaitMs);
    qputenv("PATH", path);
    QVERIFY(got);
    const QString said = failed.at(0).at(0).toString();
    QVERIFY2(said.startsWith("Graphviz failed: Error: trouble in init_rank") && !said.contains('\n') && said.contains("3200 more lines"),
             qPrintable(said));
  }

  // The command palette finds actions and stages by words in any order and runs them; the dark
  // theme restyles the palette and the code view; the docks come back as they were left.
  void testPaletteThemeAndDocks() {
    QStandardPaths::setTestModeEnabled(true);
    QSettings().remove("window/state");
    QSettings().remove("window/geometry");
    QSettings().remove("recentFiles");  // File › Recent lists earlier tests' models (".../stages/x/3_core_aten.txt")
    {
      MainWindow w;
      w.show();
      QSignalSpy done(&w, &MainWindow::compileDone);
      w.openModel(QString(LS_SAMPLES) + "/sincos");
      QVERIFY(done.wait(kWaitMs));
      CommandPalette* p = w.commandPalette(false);
      QVERIFY(p->filter("fit zoom") >= 1);
      QVERIFY(p->shown().contains("View › Zoom to Fit"));
      QCOMPARE(p->filter("no such command at all"), 0);
      QVERIFY(!p->runCurrent());
      QCOMPARE(p->filter("stage core aten"), 1);
      QSignalSpy shown(&w, &MainWindow::stageShown);
      QVERIFY(p->runCurrent());
      QCOMPARE(w.currentStage(), QString("core_aten"));

      w.setDarkTheme(true);
      QVERIFY(dark_theme());
      QVERIFY(QApplication::palette().color(QPalette::Window).lightness() < 80);
      QVERIFY(shown.count() > 0 || shown.wait(kWaitMs));
      QVERIFY(w.codeView()->lexer()->paper(0).lightness() < 80);  // the stage's text, on dark paper
      w.setDarkTheme(false);
      QVERIFY(!dark_theme());
      QVERIFY(w.codeView()->lexer()->paper(0).lightness() > 200);
      QCOMPARE(QSettings().value("theme").toString(), QString("light"));

      w.findChild<QDockWidget*>("properties")->hide();
      w.close();  // remembers the docks
    }
    MainWindow again;
    again.show();
    QVERIFY(again.findChild<QDockWidget*>("properties")->isHidden());
    QVERIFY(!again.findChild<QDockWidget*>("stages")->isHidden());
    QSettings().remove("window/state");
  }

  void testDotJsonParsing() {
    const QByteArray json = R"({"bb":"0,0,100,200","objects":[
      {"_gvid":0,"name":"cluster_0","bb":"10,10,90,150","label":"k0","nodes":[1]},
      {"_gvid":1,"name":"n0","id":"a","label":"a\\nf32[4]","pos":"50,100","width":"1","height":"0.5"},
      {"_gvid":2,"name":"cluster_1","label":"an empty kernel"}],
      "edges":[{"tail":1,"head":1,"pos":"e,50,20 50,80 50,60 50,40 50,30","label":"why","lp":"60,50"}]})";
    const LaidOutGraph g = parse_dot_json(json);
    QCOMPARE(g.nodes.size(), 1);
    QCOMPARE(g.clusters.size(), 1);
    QCOMPARE(g.nodes[0].id, QString("a"));
    QCOMPARE(g.nodes[0].label, QString("a\nf32[4]"));
    QCOMPARE(g.nodes[0].rect.center(), QPointF(50, 100));  // y flipped: 200 - 100
    QCOMPARE(g.clusters[0].rect, QRectF(QPointF(10, 50), QPointF(90, 190)));
    QCOMPARE(g.edges.size(), 1);
    QCOMPARE(g.edges[0].arrow_to, QPointF(50, 180));
    QVERIFY_THROWS_EXCEPTION(std::exception, parse_dot_json("{not json"));
  }

  // A script runs from the editor: its compile log lists the graphs and the break, the first
  // graph's stages are in the explorer, choosing the second shows it; an edited script that
  // raises shows its traceback and the window goes on.
  void testScriptFromEditor() {
    if (!have_python()) QSKIP("no embedded Python in this build");
    MainWindow w;
    w.show();
    QSignalSpy done(&w, &MainWindow::compileDone);
    w.openModel(QString(LS_SAMPLES) + "/python/toy_example.py");
    QVERIFY(done.wait(kWaitMs));
    ScriptPanel* p = w.scriptPanel();
    QVERIFY(p->isVisible());
    QCOMPARE(p->log()->topLevelItemCount(), 3);  // graph 0, graph 1, the break
    QVERIFY(p->log()->topLevelItem(2)->text(1).contains("generic_jump"));
    QVERIFY(p->output()->toPlainText().contains("matches eager: True"));
    const CompileResult* r = w.session()->result();
    QVERIFY(r);
    QCOMPARE(r->model.format, std::string("python-capture"));
    QVERIFY(r->model.graph.find("lt") >= 0);  // graph 0 ends with the branch condition
    QVERIFY(w.selectStage("fused"));
    p->chooseGraph(1);
    QTRY_VERIFY(w.session()->result() != r);
    QVERIFY(w.session()->result()->model.graph.find("mul_1") >= 0);

    QSignalSpy finished(p, &ScriptPanel::finished);
    p->setScript("import torch\nx = torch.ones(3)\nprint('before')\nx.no_such_method()\n", "edited.py");
    p->run();
    QVERIFY(finished.wait(kWaitMs));
    QCOMPARE(finished.takeFirst().at(0).toBool(), false);
    QVERIFY(p->output()->toPlainText().contains("before"));
    QVERIFY2(p->output()->toPlainText().contains("edited.py\", line 4"), qPrintable(p->output()->toPlainText()));
    QVERIFY(p->output()->toPlainText().contains("AttributeError"));
    QVERIFY(w.isVisible());
  }

  // A real TORCH_TRACE log of PyTorch 2.11 (tests/data/trace/make_trace.log): the trace panel lists
  // what the reader finds (frames, compile ids, de-duplicated breaks with source lines, recompiles
  // with their failing guard, the fullgraph failure, the compile-time breakdown); the first graph
  // is compiled by our pipeline; choosing the training step shows our stages and Inductor's
  // kernels beside ours, its output code, AOT graphs and guards.
  // A capture folder (python/lowerscope's torch.compile backend) opens in the trace panel: its graphs
  // listed with the graph break, the first compiled on its example inputs and checked against
  // PyTorch's outputs; the folder is watched, and a graph the program writes later appears.
  void testCaptureFolderOpensInPanel() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const QDir src(QString(LS_TEST_DATA) + "/capture/mlp_train");
    for (const QString& f : src.entryList(QDir::Files)) QVERIFY(QFile::copy(src.filePath(f), tmp.filePath(f)));
    QFile full(src.filePath("capture.json"));
    QVERIFY(full.open(QIODevice::ReadOnly));
    const QByteArray manifest = full.readAll();
    auto write_manifest = [&](const QByteArray& text) {  // as the backend does: a new file renamed over it
      QFile f(tmp.filePath(".capture.json.tmp"));
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(text);
      f.close();
      QFile::remove(tmp.filePath("capture.json"));
      QVERIFY(QFile::rename(tmp.filePath(".capture.json.tmp"), tmp.filePath("capture.json")));
    };
    // At first the program has compiled only graph 0.
    QJsonDocument doc = QJsonDocument::fromJson(manifest);
    QJsonObject o = doc.object();
    QJsonArray graphs = o["graphs"].toArray();
    graphs.removeLast();
    o["graphs"] = graphs;
    write_manifest(QJsonDocument(o).toJson());

    MainWindow w;
    w.show();
    QSignalSpy opened(&w, &MainWindow::traceOpened), done(&w, &MainWindow::compileDone);
    w.openModel(tmp.path());  // a folder with capture.json opens as a capture
    QVERIFY(opened.wait(kWaitMs));
    QCOMPARE(opened.takeFirst().at(0).toBool(), true);
    TracePanel* p = w.tracePanel();
    QVERIFY(p->graphItem("0/0"));
    QVERIFY(!p->graphItem("1/0"));
    QCOMPARE(p->graphItem("0/0")->text(0), QString("[0/0] forward"));
    QTreeWidgetItem* breaks = p->section("breaks");
    QVERIFY(breaks && breaks->childCount() == 1);
    QCOMPARE(breaks->child(0)->text(1), QString("Failed to trace builtin operator"));
    QVERIFY(done.count() > 0 || done.wait(kWaitMs));
    QCOMPARE(done.takeFirst().at(0).toBool(), true);
    const CompileResult* r = w.session()->result();
    QVERIFY(r->model.path.starts_with("[0/0] forward (graph_0.txt)"));
    QVERIFY(r->train);  // its parameters need gradients, as PyTorch compiled a training graph
    QCOMPARE(QString::fromStdString(r->model.inputs_from), QString("graph_0_input_0.npy, graph_0_input_1.npy, graph_0_input_2.npy"));
    QCOMPARE(QString::fromStdString(r->model.expected_from), QString("graph_0_output_0.npy"));
    QVERIFY(r->ok());
    QCOMPARE(p->graphItem("0/0")->text(4), QString("ok"));

    // The program compiles its second graph: the manifest is rewritten, the panel reads it again.
    QTest::qWait(50);
    write_manifest(manifest);
    QVERIFY(opened.wait(kWaitMs));
    QCOMPARE(opened.takeFirst().at(0).toBool(), true);
    QVERIFY(p->graphItem("1/0"));
    QCOMPARE(p->currentGraph(), QString("0/0"));  // the graph chosen stays chosen
    QVERIFY(w.errorText().isEmpty());
  }

  void testTorchTraceOpensInPanel() {
    const QString path = QString(LS_TEST_DATA) + "/trace/make_trace.log";
    const TorchTrace t = read_torch_trace(path.toStdString());
    MainWindow w;
    w.show();
    QSignalSpy opened(&w, &MainWindow::traceOpened), done(&w, &MainWindow::compileDone);
    w.openModel(path);  // a .log opens as a trace
    QVERIFY(opened.wait(kWaitMs));
    QCOMPARE(opened.takeFirst().at(0).toBool(), true);
    TracePanel* p = w.tracePanel();
    QVERIFY(p->isVisible());
    QVERIFY(w.findChild<QDockWidget*>("trace")->isVisible());
    QVERIFY2(p->status().contains("6 frame(s), 11 compile(s)"), qPrintable(p->status()));
    // Frames and their compile ids.
    QTreeWidgetItem* frames = p->section("frames");
    QVERIFY(frames);
    QCOMPARE(frames->childCount(), int(t.frames.size()));
    QCOMPARE(frames->child(0)->text(0), QString("frame 0: f"));
    QCOMPARE(frames->child(0)->text(1), QString("make_trace.py:5"));
    QCOMPARE(frames->child(0)->childCount(), 4);  // 0/0 .. 0/3
    int graphs = 0;
    for (QTreeWidgetItemIterator it(p->log()); *it; ++it) graphs += (*it)->data(0, TracePanel::KindRole).toString() == "graph";
    QCOMPARE(graphs, int(t.compiles.size()));
    for (const TraceCompile& c : t.compiles) QVERIFY2(p->graphItem(QString::fromStdString(c.id())), c.id().c_str());
    QCOMPARE(p->graphItem("4/0")->text(0), QString("[4/0] inner"));
    QCOMPARE(p->graphItem("4/0")->text(2), QString("5 + 5 lib"));  // Inductor's generated kernels and library calls
    QVERIFY(p->graphItem("0/1")->text(1).contains("tensor 'x' size mismatch at index 0. expected 8, actual 16"));
    QVERIFY(p->graphItem("0/3")->text(1).startsWith("failed: Unsupported"));
    // Graph breaks, de-duplicated, with the source line.
    QTreeWidgetItem* breaks = p->section("breaks");
    QVERIFY(breaks);
    QCOMPARE(breaks->childCount(), int(t.graph_breaks.size()));
    QCOMPARE(breaks->child(0)->text(0), QString("make_trace.py:7"));
    QCOMPARE(breaks->child(0)->text(1), QString("Failed to trace builtin operator"));
    QCOMPARE(breaks->child(0)->text(2), QString("3×"));
    QCOMPARE(breaks->child(0)->child(0)->text(1), QString("> print(\"graph break here\")"));
    QCOMPARE(breaks->child(1)->text(0), QString("make_trace.py:11"));
    QCOMPARE(breaks->child(1)->text(1), QString("Data-dependent branching"));
    // Recompiles with the guard that failed, the failure, the time, no warnings.
    QTreeWidgetItem* recompiles = p->section("recompiles");
    QVERIFY(recompiles);
    QCOMPARE(recompiles->childCount(), int(t.recompiles.size()));
    QCOMPARE(recompiles->child(0)->text(0), QString("[0/1] f"));
    QVERIFY(recompiles->child(0)->text(1).contains("size mismatch at index 0. expected 8, actual 16"));
    QTreeWidgetItem* failures = p->section("failures");
    QVERIFY(failures);
    QCOMPARE(failures->childCount(), 1);
    QCOMPARE(failures->child(0)->text(0), QString("[0/3] f"));
    QCOMPARE(failures->child(0)->text(1), QString("Unsupported: Failed to trace builtin operator"));
    QVERIFY(p->section("phases") && p->section("phases")->childCount() == int(t.phases.size()));
    QVERIFY(!p->section("warnings"));
    // The first Dynamo graph is compiled by our pipeline and shown in the explorer.
    QVERIFY(done.count() > 0 || done.wait(kWaitMs));
    QCOMPARE(done.takeFirst().at(0).toBool(), true);
    QCOMPARE(p->currentGraph(), QString("0/0"));
    QVERIFY(w.session()->result()->model.path.starts_with("[0/0] f"));
    QCOMPARE(p->graphItem("0/0")->text(4), QString("ok"));
    QVERIFY(w.errorText().isEmpty());

    // The training step: our stages (joint graph, partition) and the kernels set side by side.
    p->chooseGraph("4/0");
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.takeFirst().at(0).toBool(), true);
    const CompileResult* r = w.session()->result();
    QVERIFY(r->model.path.starts_with("[4/0] inner"));
    QVERIFY(r->train);  // PyTorch compiled a training step, so do we
    QVERIFY(w.selectStage("joint"));
    QVERIFY(w.selectStage("fused"));
    QCOMPARE(p->graphItem("4/0")->text(4), QString("ok"));
    TraceKernelModel* km = p->kernelModel();
    new QAbstractItemModelTester(km, QAbstractItemModelTester::FailureReportingMode::QtTest, &w);
    int inductor_rows = 0, layer_norm = -1;
    for (int row = 0; row < km->rowCount(); ++row) {
      const KernelPair& k = km->rows()[size_t(row)];
      inductor_rows += !k.inductor.empty();
      if (k.inductor == "triton_per_fused_gelu_native_layer_norm_0") layer_norm = row;
    }
    QCOMPARE(inductor_rows, 10);  // 5 generated, 5 library calls, forward and backward
    QVERIFY(layer_norm >= 0);
    QCOMPARE(km->index(layer_norm, TraceKernelModel::Nodes).data().toString(), QString("input_2, input_3"));  // gelu and layer_norm
    QCOMPARE(km->index(layer_norm, TraceKernelModel::Code).data().toString(), QString("forward"));
    QVERIFY2(km->index(layer_norm, TraceKernelModel::Ours).data().toString().contains("cpp_fused_input_1"),
             qPrintable(km->index(layer_norm, TraceKernelModel::Ours).data().toString()));
    QVERIFY2(p->kernelSummary().contains("Inductor: <b>5</b> generated kernel(s) + 5 library call(s)"), qPrintable(p->kernelSummary()));
    QVERIFY(p->kernelSummary().contains("Lowerscope: <b>"));
    // The rows come from the kernel map (frontend/trace_kernel_map.h): a backward kernel whose
    // origin comments name only the backward graph's nodes (sum_1) is placed, through the gradient
    // it computes, on the Dynamo node input_4, and set against our backward kernels there (paired
    // by node names, its ours column showed "—").
    int sum0 = -1;
    for (int row = 0; row < km->rowCount(); ++row)
      if (km->rows()[size_t(row)].inductor == "triton_poi_fused_sum_0") sum0 = row;
    QVERIFY(sum0 >= 0);
    QCOMPARE(km->index(sum0, TraceKernelModel::Code).data().toString(), QString("backward"));
    QCOMPARE(km->index(sum0, TraceKernelModel::Nodes).data().toString(), QString("input_4"));
    QVERIFY(km->index(sum0, TraceKernelModel::Nodes).data(Qt::ToolTipRole).toString().contains("gradient it computes"));
    const QString sum0_ours = km->index(sum0, TraceKernelModel::Ours).data().toString();
    QVERIFY2(!sum0_ours.isEmpty() && sum0_ours != QString("—") && sum0_ours.contains("cpp_fused_"), qPrintable(sum0_ours));
    // Clicking Inductor's kernel marks its nodes in our stages and its lines in the output code.
    p->kernelTable()->clicked(km->index(layer_norm, 0));
    QVERIFY(w.selectedOrigins().contains("input_2"));
    QTRY_VERIFY(w.highlightedCount() > 0);
    QVERIFY(p->outputCode()->text().contains("def triton_per_fused_gelu_native_layer_norm_0"));
    // PyTorch's own artifacts for the graph: AOT graphs and guards.
    QStringList kinds;
    for (int i = 0; i < p->graphKinds()->count(); ++i) kinds << p->graphKinds()->itemData(i).toString();
    QVERIFY2(kinds.contains("aot_joint_graph") && kinds.contains("aot_backward_graph") && kinds.contains("dynamo_output_graph"),
             qPrintable(kinds.join(",")));
    p->graphKinds()->setCurrentIndex(int(kinds.indexOf("aot_backward_graph")));
    QVERIFY(p->graphText()->text().contains("class GraphModule"));
    QVERIFY(p->guards()->text().contains("TREE_GUARD_MANAGER"));
    // A break row chooses the graph it was hit in; the failed compile shows PyTorch's side only.
    p->log()->setCurrentItem(p->section("failures")->child(0));
    QCOMPARE(p->currentGraph(), QString("0/3"));
    QVERIFY(p->kernelSummary().contains("no Dynamo graph logged"));
    QVERIFY(p->outputCode()->text().contains("no output code for [0/3]"));
    p->chooseGraph("4/0");  // and back: its code again
    QVERIFY(p->outputCode()->text().contains("def triton_per_fused_gelu_native_layer_norm_0"));
    QVERIFY(done.wait(kWaitMs));
    QVERIFY(w.errorText().isEmpty());
    // Compile all: every Dynamo graph compiled by us in the background, each row with its check.
    QSignalSpy all(w.traceSession(), &TraceSession::compiledAll);
    QVERIFY(p->compileAllButton()->isEnabled());
    p->compileAllButton()->click();
    QVERIFY(all.wait(kWaitMs));
    for (const TraceCompile& c : t.compiles)
      if (!c.dynamo_graph.empty()) QCOMPARE(p->graphItem(QString::fromStdString(c.id()))->text(4), QString("ok"));
    QCOMPARE(p->graphItem("0/3")->text(4), QString());  // no graph: not compiled
    QVERIFY2(p->status().contains("compiled 10 of 10 Dynamo graph(s); 10 passed"), qPrintable(p->status()));
  }

  // A large log (the real one 200 times over, 50 MB) is read off the GUI thread: progress comes,
  // the event loop keeps turning while it reads, and the panel lists it.
  void testLargeTraceReadsInBackground() {
    QFile real(QString(LS_TEST_DATA) + "/trace/make_trace.log");
    QVERIFY(real.open(QIODevice::ReadOnly));
    const QByteArray one = real.readAll();
    QTemporaryDir dir;
    const QString big = dir.filePath("big.log");
    {
      QFile f(big);
      QVERIFY(f.open(QIODevice::WriteOnly));
      for (int i = 0; i < 200; ++i) f.write(one);
    }
    MainWindow w;
    w.show();
    QSignalSpy opened(&w, &MainWindow::traceOpened);
    QSignalSpy progress(w.traceSession(), &TraceSession::progress);
    int ticks = 0;
    QTimer timer;
    QObject::connect(&timer, &QTimer::timeout, [&ticks] { ++ticks; });
    timer.start(5);
    QElapsedTimer clock;
    clock.start();
    w.openTrace(big);
    QVERIFY(w.traceSession()->busy());  // openTrace returned at once: the reading is on a worker thread
    QVERIFY(opened.wait(kWaitMs));
    QCOMPARE(opened.takeFirst().at(0).toBool(), true);
    QVERIFY2(progress.count() >= 10, qPrintable(QString::number(progress.count())));
    QVERIFY2(ticks >= 3, qPrintable(QString("%1 ticks in %2 ms").arg(ticks).arg(clock.elapsed())));
    QCOMPARE(w.tracePanel()->section("frames")->childCount(), 6);
  }

  // A file with nothing readable leaves its message in the window, which goes on; a log with bad
  // records opens with them listed as warnings; a TORCH_TRACE folder dropped on the window opens.
  void testBadTraceLeavesWindowUsable() {
    QTemporaryDir dir;
    const QString bad = dir.filePath("garbage.log");
    {
      QFile f(bad);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("this is not a trace\n\x01\x02\xff\n");
    }
    MainWindow w;
    w.show();
    QSignalSpy opened(&w, &MainWindow::traceOpened), done(&w, &MainWindow::compileDone);
    w.openTrace(bad);
    QVERIFY(opened.wait(kWaitMs));
    QCOMPARE(opened.takeFirst().at(0).toBool(), false);
    QVERIFY2(w.errorText().contains("Cannot open the trace") && w.errorText().contains("garbage.log"), qPrintable(w.errorText()));
    QVERIFY(w.tracePanel()->status().startsWith("Cannot read the trace"));
    w.openTrace(dir.filePath("missing.log"));
    QVERIFY(opened.wait(kWaitMs));
    QCOMPARE(opened.takeFirst().at(0).toBool(), false);
    QVERIFY(w.errorText().contains("missing.log"));
    // The window goes on: a model opens after it.
    w.openModel(QString(LS_SAMPLES) + "/sincos");
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.takeFirst().at(0).toBool(), true);
    QVERIFY(w.errorText().isEmpty());

    // A partial log: the real one cut inside a payload, with a broken record in the middle.
    QFile real(QString(LS_TEST_DATA) + "/trace/make_trace.log");
    QVERIFY(real.open(QIODevice::ReadOnly));
    QByteArray text = real.readAll();
    const int mid = text.indexOf("\nV", text.size() / 3);
    text.insert(mid + 1, "V1126 22:24:23.036000 11105 torch/_logging/structured.py:28] {\"str\": [\n");
    text.truncate(text.size() * 2 / 3);
    const QString cut = dir.filePath("cut.log");
    {
      QFile f(cut);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(text);
    }
    const TorchTrace t = read_torch_trace(cut.toStdString());
    QVERIFY(!t.warnings.empty());
    w.openTrace(cut);
    QVERIFY(opened.wait(kWaitMs));
    QCOMPARE(opened.takeFirst().at(0).toBool(), true);
    QTreeWidgetItem* warnings = w.tracePanel()->section("warnings");
    QVERIFY(warnings);
    QCOMPARE(warnings->childCount(), int(t.warnings.size()));
    QCOMPARE(w.tracePanel()->section("frames")->childCount(), int(t.frames.size()));

    // A TORCH_TRACE folder dropped on the window.
    QTemporaryDir folder;
    QVERIFY(QFile::copy(QString(LS_TEST_DATA) + "/trace/make_trace.log", folder.filePath("dedicated_log_torch_trace_abc.log")));
    QVERIFY(is_trace_path(folder.path()));
    QVERIFY(!is_trace_path(QString(LS_SAMPLES) + "/sincos"));
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(folder.path())});
    QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    // Straight to the window's handler: QApplication routes a drop only to the target of a drag in progress.
    static_cast<QObject*>(&w)->event(&drop);
    QVERIFY(drop.isAccepted());
    QVERIFY(opened.wait(kWaitMs));
    QCOMPARE(opened.takeFirst().at(0).toBool(), true);
    QCOMPARE(w.tracePanel()->section("frames")->childCount(), 6);
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.takeFirst().at(0).toBool(), true);
  }

  // The Diff tab's Inductor comparison (issue 35 item 1): a trace graph's kernels from PyTorch's
  // output code against ours, one row per group of Dynamo nodes. Inductor's kernels are counted
  // here from the code's text, ours from the compile.
  void testInductorDiff() {
    const QString path = QString(LS_TEST_DATA) + "/trace/make_trace.log";
    const TorchTrace t = read_torch_trace(path.toStdString());
    const TraceCompile* c = t.compile("4/0");
    QVERIFY(c);
    int defined = 0, library = 0;
    QSet<QString> origins;
    const QRegularExpression nodes_re("#.*Topologically Sorted Source Nodes: \\[([^\\]]*)\\]");
    for (const TraceOutputCode& oc : c->output_code)
      for (const QString& line : QString::fromStdString(oc.code).split('\n')) {
        defined += line.contains(" = async_compile.triton('") || line.contains(" = async_compile.cpp_pybinding(");
        library += line.contains(QRegularExpression("extern_kernels\\.\\w+\\(")) && !line.contains("import");
        if (const auto mt = nodes_re.match(line); mt.hasMatch())
          for (const QString& n : mt.captured(1).split(", ", Qt::SkipEmptyParts)) origins.insert(n);
      }
    QCOMPARE(defined, 5);
    QCOMPARE(library, 5);

    MainWindow w;
    w.show();
    QSignalSpy done(&w, &MainWindow::compileDone);
    w.openTrace(path, "4/0");
    QVERIFY(done.wait(kWaitMs));
    QCOMPARE(done.takeFirst().at(0).toBool(), true);
    const CompileResult* r = w.session()->result();
    QVERIFY(r->model.path.starts_with("[4/0] inner"));
    int ours_generated = 0, ours_library = 0;
    for (const KernelReport& k : r->kernels) (k.kind == KernelKind::extern_call ? ours_library : ours_generated)++;

    DiffPanel* d = w.diffPanel();
    QVERIFY2(d->variants().contains(DiffPanel::inductorVariant()), qPrintable(d->variants().join(", ")));
    QSignalSpy compared(d, &DiffPanel::compared);
    w.tabs()->setCurrentIndex(1);
    QVERIFY(d->compare("fused", DiffPanel::inductorVariant(), "fused"));
    QVERIFY(compared.count() == 1 || compared.wait(kWaitMs));
    QCOMPARE(compared.takeFirst().at(0).toBool(), true);
    InductorDiffView* v = d->inductorView();
    QVERIFY(v->isVisible());
    KernelMapModel* model = v->model();
    new QAbstractItemModelTester(model, QAbstractItemModelTester::FailureReportingMode::QtTest, &w);
    const KernelMap& m = v->map();
    QCOMPARE(m.inductor_generated, defined);
    QCOMPARE(m.inductor_library, library);
    QCOMPARE(m.ours_generated, ours_generated);
    QCOMPARE(m.ours_library, ours_library);
    QVERIFY2(v->summary().contains(QString("Inductor: <b>%1</b> generated kernel(s) + %2 library call(s)").arg(defined).arg(library)),
             qPrintable(v->summary()));
    QVERIFY2(v->summary().contains(QString("Lowerscope: <b>%1</b> generated kernel(s) + %2 library call(s)").arg(ours_generated).arg(ours_library)),
             qPrintable(v->summary()));
    QCOMPARE(model->headerData(KernelMapModel::Inductor, Qt::Horizontal, Qt::DisplayRole).toString(), QString("Inductor (5 + 5 lib)"));
    // Every origin node of every Inductor kernel is in the rows: as a Dynamo node, or listed as not one.
    QSet<QString> shown;
    int inductor_kernels = 0, layer_norm = -1, differing = -1;
    for (int row = 0; row < model->rowCount(); ++row) {
      const KernelMapRow& kr = m.rows[size_t(row)];
      for (const std::string& n : kr.nodes) shown.insert(QString::fromStdString(n));
      for (const QString& n : model->index(row, KernelMapModel::Unmapped).data().toString().split(", ", Qt::SkipEmptyParts)) shown.insert(n);
      inductor_kernels += int(kr.inductor.size());
      if (model->index(row, KernelMapModel::Inductor).data().toString() == "triton_per_fused_gelu_native_layer_norm_0") layer_norm = row;
      if (kr.differs() && differing < 0) differing = row;
    }
    QCOMPARE(inductor_kernels, defined + library);
    for (const QString& n : origins) QVERIFY2(shown.contains(n), qPrintable(n));
    QVERIFY(layer_norm >= 0);
    QCOMPARE(model->index(layer_norm, KernelMapModel::Phase).data().toString(), QString("forward"));
    QCOMPARE(model->index(layer_norm, KernelMapModel::Nodes).data().toString(), QString("input_2, input_3"));  // gelu and layer_norm, one kernel each side
    QCOMPARE(model->index(layer_norm, KernelMapModel::Ours).data().toString(), QString("cpp_fused_input_1"));
    QCOMPARE(model->index(layer_norm, KernelMapModel::Verdict).data().toString(), QString("same"));
    QVERIFY(!model->index(layer_norm, KernelMapModel::Nodes).data(Qt::BackgroundRole).isValid());
    // A row where the sides differ is tinted, and says how.
    QVERIFY(differing >= 0);
    QVERIFY(model->index(differing, KernelMapModel::Nodes).data(Qt::BackgroundRole).isValid());
    QVERIFY(!model->index(differing, KernelMapModel::Verdict).data().toString().startsWith("same"));
    // Clicking a row: both kernels in their code, the nodes marked in the explorer.
    v->table()->clicked(model->index(layer_norm, KernelMapModel::Nodes));
    QCOMPARE(v->shownInductorKernel(), QString("triton_per_fused_gelu_native_layer_norm_0"));
    QVERIFY(v->inductorCode()->text().contains("def triton_per_fused_gelu_native_layer_norm_0"));
    QCOMPARE(v->shownOurKernel(), QString("cpp_fused_input_1"));
    QVERIFY(v->ourCode()->text().contains("cpp_fused_input_1"));
    QVERIFY(w.selectedOrigins().contains("input_2") && w.selectedOrigins().contains("input_3"));
    QVERIFY2(v->rowDetail().startsWith("same"), qPrintable(v->rowDetail()));
    v->table()->clicked(model->index(differing, KernelMapModel::Nodes));
    QVERIFY2(v->rowDetail().contains("fuses"), qPrintable(v->rowDetail()));  // which nodes one side fuses
    // Back to a diff of two compiles: the graph diff again.
    QVERIFY(d->compare("fused", "Fusion off", "fused"));
    QVERIFY(compared.wait(kWaitMs));
    QVERIFY(!v->isVisible());
    // A model that is not a trace's graph offers no Inductor side.
    w.openModel(QString(LS_SAMPLES) + "/sincos");
    QVERIFY(done.wait(kWaitMs));
    QVERIFY(!d->variants().contains(DiffPanel::inductorVariant()));
  }
};

QTEST_MAIN(TestGui)
#include "test_gui.moc"
