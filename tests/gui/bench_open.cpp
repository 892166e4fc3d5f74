// Benchmark: opening large models in the explorer. For each model: the time to the first picture
// (the captured graph, drawn while the rest compiles), to the end of the compile, and to open one
// folded module and see it drawn; and the longest the event loop went without answering (a 10 ms
// timer's longest gap) over the whole run. Prints a Markdown table.
//   bench-gui-open [MODEL ...]    (QT_QPA_PLATFORM=offscreen to run without a display)
// Always includes the synthetic 5,000-node model (tests/gui/synthetic_graph.h).
#include <QApplication>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTimer>
#include <cstdio>

#include "compile_session.h"
#include "graph_view.h"
#include "ir/collapse.h"
#include "main_window.h"
#include "pipeline/pipeline.h"
#include "report/diff.h"
#include "synthetic_graph.h"

namespace {

struct Row {
  QString model;
  int nodes = 0, boxes = 0, boxes_after = 0;
  double first_ms = -1, compiled_ms = -1, expand_ms = -1, stall_ms = 0;
};

bool wait_for(QSignalSpy& spy, int ms) { return spy.count() > 0 || spy.wait(ms); }

Row measure(const QString& label, const std::function<void(ls::MainWindow&)>& open) {
  Row row;
  row.model = label;
  ls::MainWindow w;
  w.resize(1400, 860);
  w.show();
  QSignalSpy shown(&w, &ls::MainWindow::stageShown), done(&w, &ls::MainWindow::compileDone);
  QElapsedTimer clock;
  qint64 last = 0, gap = 0;
  QTimer tick;
  QObject::connect(&tick, &QTimer::timeout, [&] {
    gap = std::max(gap, clock.elapsed() - last);
    last = clock.elapsed();
  });
  clock.start();
  tick.start(10);
  open(w);
  if (wait_for(shown, 60000)) row.first_ms = clock.elapsed();
  row.boxes = w.graphView()->nodeCount();
  if (wait_for(done, 600000)) row.compiled_ms = clock.elapsed();
  const ls::CompileResult* r = w.session()->result();
  if (r) row.nodes = static_cast<int>(r->model.graph.nodes.size());
  // Open the first folded module of the captured graph.
  if (r && w.selectStage("capture")) {
    shown.clear();
    wait_for(shown, 60000);
    std::set<std::string> open;
    for (const QString& m : w.expandedModules()) open.insert(m.toStdString());
    const ls::Graph drawn = ls::segmented(r->model.graph, 1000);  // a flat graph folds by runs of nodes, as the window does
    for (const ls::Node& n : drawn.nodes) {
      const std::string v = ls::visible_id(n, open);
      if (v.rfind("module:", 0) != 0) continue;
      shown.clear();
      const qint64 t0 = clock.elapsed();
      w.expandModule(QString::fromStdString(v.substr(7)));
      if (wait_for(shown, 60000)) row.expand_ms = clock.elapsed() - t0;
      row.boxes_after = w.graphView()->nodeCount();
      break;
    }
  }
  row.stall_ms = gap;
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  std::vector<Row> rows;
  for (int i = 1; i < argc; ++i) {
    const QString path = QString::fromLocal8Bit(argv[i]);
    rows.push_back(measure(path.section('/', -2), [path](ls::MainWindow& w) { w.openModel(path); }));
  }
  rows.push_back(measure("synthetic 5,000 nodes", [](ls::MainWindow& w) { w.openLoadedModel(synthetic_model(25, 4, 50)); }));
  std::printf("| model | graph nodes | first picture (ms) | boxes drawn | compile done (ms) | open a module (ms) | boxes after | longest UI stall (ms) |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows)
    std::printf("| %s | %d | %.0f | %d | %.0f | %.0f | %d | %.0f |\n", qPrintable(r.model), r.nodes, r.first_ms, r.boxes,
                r.compiled_ms, r.expand_ms, r.boxes_after, r.stall_ms);
  return 0;
}
