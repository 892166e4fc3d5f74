// lowerscope: the desktop application.
//   lowerscope [MODEL | TRACE_DIR_OR_LOG [--graph ID]] [--train] [--stage NAME] [--select NODE] [--diff VARIANT] [--heat] [--raise DOCK]
//              [--device cpu|cuda] [--mode M] [--dynamic] [--dtype float32|bfloat16|float16] [--screenshot FILE.png]
// With --screenshot it opens MODEL, shows the stage, writes a picture of the whole window and exits.
// A TORCH_TRACE folder or .log opens in the trace panel; --graph chooses its compile id (else its first graph).
#include <QApplication>
#include <QCommandLineParser>
#include <QDockWidget>
#include <QIcon>
#include <QTimer>
#include <QDialog>
#include <QPainter>
#include <QPixmap>

#include "compile_session.h"
#include <cstdio>
#include <optional>
#include <string_view>

#include "tensor/dtype.h"

#include <QTabWidget>

#include "diff_panel.h"
#include "main_window.h"
#include "graph_view.h"
#include "command_palette.h"
#include "theme.h"
#include "trace_panel.h"

#include <QSettings>

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName("Lowerscope");
  QApplication::setOrganizationName("Lowerscope");
  QApplication::setApplicationVersion("0.1.0");
  QApplication::setWindowIcon(QIcon(":/lowerscope.svg"));
  QCommandLineParser cli;
  cli.setApplicationDescription("See what a deep-learning compiler does to a model, stage by stage.");
  cli.addHelpOption();
  cli.addVersionOption();
  cli.addPositionalArgument("model", "A model file or folder to open, or a TORCH_TRACE folder or .log.");
  QCommandLineOption graph("graph", "Of a TORCH_TRACE log: the compile id whose Dynamo graph to compile and show (e.g. 4/0).", "id");
  cli.addOption(graph);
  QCommandLineOption stage("stage", "Stage to show (a name or a unique prefix).", "name");
  QCommandLineOption shot("screenshot", "Write a picture of the window to FILE and exit.", "file");
  QCommandLineOption select("select", "Select a node (by name) and mark what it became.", "node");
  QCommandLineOption train("train", "Compile a training step (joint graph, forward/backward partition).");
  QCommandLineOption diff("diff", "Show the Diff tab: the stage against the same stage compiled as VARIANT "
                                  "(\"Fusion off\", \"Training step\", \"Target CUDA\", \"Dtype bfloat16\", \"Core ATen only\"; "
                                  "\"This compile (another stage)\" diffs --stage against the next stage); "
                                  "VARIANT:STAGE names the right side's stage.", "variant");
  cli.addOption(diff);
  QCommandLineOption heat("heat", "Paint the graph by each node's and kernel's share of the run's time.");
  cli.addOption(heat);
  QCommandLineOption raise("raise", "Bring a dock to the front: kernels, partition, profile, provenance, properties, script, trace.", "dock");
  cli.addOption(raise);
  QCommandLineOption hide("hide", "Close a dock (as raise names them; may be repeated), e.g. for a wider picture of a tab.", "dock");
  cli.addOption(hide);
  cli.addOption(train);
  cli.addOption(stage);
  cli.addOption(select);
  cli.addOption(shot);
  QCommandLineOption palette("palette", "Open the command palette filtered by TEXT (for screenshots).", "text");
  cli.addOption(palette);
  QCommandLineOption theme("theme", "Colour theme: light or dark (remembered otherwise).", "name");
  cli.addOption(theme);
  QCommandLineOption device("device", "Compile for cpu or cuda (Compile > Target).", "name");
  cli.addOption(device);
  QCommandLineOption dynamic("dynamic", "Compile with dynamic shapes (Compile > Dynamic Shapes).");
  cli.addOption(dynamic);
  QCommandLineOption mode("mode", "Compile mode, as torch.compile's: default, reduce-overhead or max-autotune (Compile > Mode).", "name");
  cli.addOption(mode);
  QCommandLineOption dtype("dtype", "Run the model as model.to(DTYPE): float32 (as loaded), bfloat16 or float16 (Compile > Dtype).", "name");
  cli.addOption(dtype);
  cli.process(app);
  ls::apply_theme(cli.isSet(theme) ? cli.value(theme) == "dark" : QSettings().value("theme").toString() == "dark");

  ls::MainWindow w;
  w.show();
  if (cli.isSet(device)) {
    auto* target = w.findChild<QAction*>("target_" + cli.value(device));
    if (!target || !target->isEnabled()) {
      std::fprintf(stderr, "lowerscope: no target '%s' in this build (cpu%s)\n", qPrintable(cli.value(device)),
                   w.findChild<QAction*>("target_cuda")->isEnabled() ? ", cuda" : "");
      return 2;
    }
    target->trigger();
  }
  if (cli.isSet(mode)) {
    auto* m = w.findChild<QAction*>("mode_" + cli.value(mode));
    if (!m) {
      std::fprintf(stderr, "lowerscope: no mode '%s' (default, reduce-overhead, max-autotune)\n", qPrintable(cli.value(mode)));
      return 2;
    }
    m->trigger();
  }
  if (cli.isSet(dtype)) {
    // Any spelling PyTorch uses (bf16, torch.bfloat16, half, float) names one of the three.
    const std::optional<ls::DType> t = ls::dtype_from_name(cli.value(dtype).toStdString());
    const std::string_view torch = t ? ls::dtype_torch(*t).substr(6) : std::string_view();
    auto* a = w.findChild<QAction*>("dtype_" + QString::fromLatin1(torch.data(), static_cast<int>(torch.size())));
    if (!a) {
      std::fprintf(stderr, "lowerscope: --dtype takes float32, bfloat16 or float16, not '%s'\n", qPrintable(cli.value(dtype)));
      return 2;
    }
    a->trigger();
  }
  if (cli.isSet(dynamic)) w.findChild<QAction*>("dynamic")->setChecked(true);
  if (cli.isSet(train)) w.setTraining(true);
  if (cli.isSet(heat)) w.setHeatOverlay(true);
  if (cli.isSet(raise)) {
    auto* dock = w.findChild<QDockWidget*>(cli.value(raise));
    if (!dock) {
      std::fprintf(stderr, "lowerscope: no dock '%s'\n", qPrintable(cli.value(raise)));
      return 2;
    }
    dock->show();
    dock->raise();
  }
  QList<QDockWidget*> hidden;  // closed again just before the picture: opening a trace shows its dock
  for (const QString& name : cli.values(hide)) {
    auto* dock = w.findChild<QDockWidget*>(name);
    if (!dock) {
      std::fprintf(stderr, "lowerscope: no dock '%s'\n", qPrintable(name));
      return 2;
    }
    dock->hide();
    hidden << dock;
  }
  const QStringList args = cli.positionalArguments();
  const QString stage_name = cli.value(stage), shot_file = cli.value(shot), select_node = cli.value(select),
                diff_variant = cli.value(diff), palette_text = cli.value(palette);
  int exit_code = 0;
  if (!shot_file.isEmpty()) {
    if (args.isEmpty()) {
      std::fprintf(stderr, "lowerscope: --screenshot needs a MODEL\n");
      return 2;
    }
    auto take = [&w, shot_file, &app, hidden] {
      for (QDockWidget* d : hidden) d->hide();
      QTimer::singleShot(100, &w, [&w, shot_file, &app] {
        QPixmap shot = w.grab();
        for (QWidget* popup : w.findChildren<QDialog*>())  // the command palette is a window of its own
          if (popup->isVisible()) {
            QPainter p(&shot);
            p.drawPixmap(popup->mapTo(&w, QPoint(0, 0)), popup->grab());
          }
        const bool ok = shot.save(shot_file);
        if (!ok) std::fprintf(stderr, "lowerscope: cannot write %s\n", qPrintable(shot_file));
        app.exit(ok ? 0 : 2);
      });
    };
    QObject::connect(w.diffPanel(), &ls::DiffPanel::compared, &w, [take](bool) { take(); });
    QObject::connect(&w, &ls::MainWindow::compileDone, &w, [&w, stage_name, diff_variant, &exit_code, &app, take](bool) {
      // A compile that failed (2) or whose check failed (1): the picture shows that state, and the
      // exit status says so, as the CLI's does.
      if (const ls::CompileResult* r = w.session()->result(); r && !r->error.empty()) {
        exit_code = 2;
        if (r->stages.empty()) return take();  // nothing was loaded: the window with its message
      } else if (r && !r->check.ok && r->not_run.empty()) {
        exit_code = 1;
      }
      if (!diff_variant.isEmpty()) {
        const QString a = stage_name.isEmpty() ? QStringLiteral("fused") : stage_name;
        const QString variant = diff_variant.section(':', 0, 0);
        QString b = diff_variant.contains(':') ? diff_variant.section(':', 1) : a;
        const QStringList stages = w.diffPanel()->stages();
        if (!diff_variant.contains(':') && variant.startsWith("This compile") && stages.indexOf(a) >= 0 &&
            stages.indexOf(a) + 1 < stages.size())
          b = stages[stages.indexOf(a) + 1];
        w.tabs()->setCurrentIndex(1);
        if (!w.diffPanel()->compare(a, variant, b)) {
          std::fprintf(stderr, "lowerscope: cannot diff stage '%s' with variant '%s' (variants: %s)\n", qPrintable(a),
                       qPrintable(diff_variant), qPrintable(w.diffPanel()->variants().join(", ")));
          app.exit(2);
        }
        return;
      }
      if (!stage_name.isEmpty() && !w.selectStage(stage_name)) {
        std::fprintf(stderr, "lowerscope: no stage '%s'\n", qPrintable(stage_name));
        exit_code = 2;
      }
    });
    QObject::connect(&w, &ls::MainWindow::stageShown, &w, [&w, stage_name, select_node, take, diff_variant, palette_text](const QString& name) {
      // Not the captured graph drawn while the compile runs: the picture is of the finished compile.
      if (w.session()->busy()) return;
      if (!diff_variant.isEmpty() || (!stage_name.isEmpty() && !name.startsWith(stage_name))) return;
      if (!select_node.isEmpty()) {
        w.selectNode(select_node);
        w.graphView()->focusNode(select_node);  // the picture shows it however large the drawing
      }
      if (!palette_text.isEmpty()) w.commandPalette()->filter(palette_text);
      take();
    });
    // A trace that could not be read, or holds no graph to compile: the window as it is.
    QObject::connect(&w, &ls::MainWindow::traceOpened, &w, [&w, &exit_code, take](bool ok) {
      if (!ok) exit_code = 2;
      if (!ok || w.tracePanel()->currentGraph().isEmpty()) take();
    });
    QTimer::singleShot(120000, &app, [&app] {
      std::fprintf(stderr, "lowerscope: gave up waiting for the stage after 120 s\n");
      app.exit(3);
    });
  }
  if (!args.isEmpty() && cli.isSet(graph)) w.openTrace(args.first(), cli.value(graph));
  else if (!args.isEmpty()) w.openModel(args.first());
  const int rc = app.exec();
  return exit_code ? exit_code : rc;
}
