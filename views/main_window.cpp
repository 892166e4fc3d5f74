#include "main_window.h"

#include "backend/backend.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QCloseEvent>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QMimeData>
#include <QSettings>
#include <QToolBar>
#include <QListView>
#include <QMenu>
#include <QMessageBox>
#include <QMenuBar>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <optional>
#include <utility>

#include "code_view.h"
#include "command_palette.h"
#include "theme.h"
#include "diff_panel.h"
#include "export_folder.h"
#include "compile_session.h"
#include "graph_layout.h"
#include "graph_view.h"
#include "script_panel.h"
#include "kernel_table_model.h"
#include "node_properties.h"
#include "profile_view.h"
#include "partition_model.h"
#include "stage_list_model.h"
#include "trace_panel.h"
#include "trace_session.h"

#include "ops/op_table.h"
#include "report/diff.h"
#include "export/package.h"
#include "ir/collapse.h"
#include "report/trace_report.h"

namespace ls {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle("Lowerscope");
  resize(1400, 860);
  session_ = new CompileSession(this);
  layouter_ = new GraphLayouter(this);
  stages_model_ = new StageListModel(this);
  kernels_model_ = new KernelTableModel(this);

  auto* central = new QWidget(this);
  auto* v = new QVBoxLayout(central);
  v->setContentsMargins(0, 0, 0, 0);
  banner_ = new QLabel(central);
  banner_->setWordWrap(true);
  banner_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  banner_->setStyleSheet("QLabel { background: #fdecea; color: #8a1f11; padding: 8px; border-bottom: 1px solid #e6b0aa; }");
  banner_->hide();
  v->addWidget(banner_);
  split_ = new QSplitter(Qt::Horizontal, central);
  graph_ = new GraphView(split_);
  code_ = new CodeView(split_);
  split_->addWidget(graph_);
  split_->addWidget(code_);
  split_->setSizes({700, 600});
  v->addWidget(split_, 1);
  tabs_ = new QTabWidget(this);
  tabs_->setDocumentMode(true);
  tabs_->addTab(central, tr("Explorer"));
  diff_ = new DiffPanel(session_, tabs_);
  tabs_->addTab(diff_, tr("Diff"));
  setCentralWidget(tabs_);

  stages_ = new QListView(this);
  stages_->setModel(stages_model_);
  stages_->setSpacing(2);
  stages_->setAlternatingRowColors(true);
  auto* sd = new QDockWidget(tr("Stages"), this);
  sd->setObjectName("stages");
  sd->setWidget(stages_);
  addDockWidget(Qt::LeftDockWidgetArea, sd);

  auto* runw = new QWidget(this);
  auto* rv = new QVBoxLayout(runw);
  rv->setContentsMargins(4, 4, 4, 4);
  summary_ = new QLabel(runw);
  summary_->setObjectName("run_summary");  // its tooltip: compile time by phase
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  summary_->setWordWrap(true);  // a training step of a half model says much: it wraps, not widens the window
  rv->addWidget(summary_);
  kernels_ = new QTableView(runw);
  kernels_->setModel(kernels_model_);
  kernels_->setSelectionBehavior(QAbstractItemView::SelectRows);
  kernels_->horizontalHeader()->setStretchLastSection(true);
  kernels_->verticalHeader()->hide();
  rv->addWidget(kernels_);
  auto* kd = new QDockWidget(tr("Kernels and check"), this);
  kd->setObjectName("kernels");
  kd->setWidget(runw);
  addDockWidget(Qt::BottomDockWidgetArea, kd);

  // Training: what the partitioner saves between the forward and the backward.
  partition_model_ = new PartitionModel(this);
  auto* partw = new QWidget(this);
  auto* pv = new QVBoxLayout(partw);
  pv->setContentsMargins(4, 4, 4, 4);
  partition_summary_ = new QLabel(partw);
  partition_summary_->setWordWrap(true);
  partition_summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  pv->addWidget(partition_summary_);
  partition_ = new QTableView(partw);
  partition_->setModel(partition_model_);
  partition_->setSelectionBehavior(QAbstractItemView::SelectRows);
  partition_->horizontalHeader()->setStretchLastSection(true);
  partition_->verticalHeader()->hide();
  pv->addWidget(partition_);
  auto* partd = new QDockWidget(tr("Saved for backward"), this);
  partd->setObjectName("partition");
  partd->setWidget(partw);
  addDockWidget(Qt::BottomDockWidgetArea, partd);
  tabifyDockWidget(kd, partd);
  kd->raise();
  connect(partition_, &QTableView::clicked, this, [this](const QModelIndex& i) {
    selectNode(partition_model_->index(i.row(), PartitionModel::Name).data().toString());
  });

  // Profile: kernel times and bandwidth as charts, and the run op by op against the compiled one.
  profile_ = new ProfileView(this);
  auto* profd = new QDockWidget(tr("Profile"), this);
  profd->setObjectName("profile");
  profd->setWidget(profile_);
  addDockWidget(Qt::BottomDockWidgetArea, profd);
  tabifyDockWidget(partd, profd);
  kd->raise();

  provenance_ = new QTreeWidget(this);
  provenance_->setHeaderLabels({tr("Node"), tr("Op")});
  provenance_->setColumnWidth(0, 160);
  auto* pd = new QDockWidget(tr("Provenance"), this);
  pd->setObjectName("provenance");
  pd->setWidget(provenance_);
  addDockWidget(Qt::LeftDockWidgetArea, pd);
  properties_ = new QTreeWidget(this);
  properties_->setHeaderLabels({tr("Property"), tr("Value")});
  properties_->setRootIsDecorated(false);
  properties_->setColumnWidth(0, 110);
  properties_->setWordWrap(true);
  auto* propd = new QDockWidget(tr("Properties"), this);
  propd->setObjectName("properties");
  propd->setWidget(properties_);
  addDockWidget(Qt::LeftDockWidgetArea, propd);

  // Python scripts: the editor, what they print, and the compile log of their torch.compile calls.
  script_ = new ScriptPanel(this);
  script_dock_ = new QDockWidget(tr("Python script"), this);
  script_dock_->setObjectName("script");
  script_dock_->setWidget(script_);
  addDockWidget(Qt::RightDockWidgetArea, script_dock_);
  script_dock_->hide();
  connect(script_, &ScriptPanel::graphChosen, this, [this](int i) {
    const ScriptRun& run = script_->lastRun();
    if (i < 0 || static_cast<size_t>(i) >= run.graphs.size() || !run.graphs[static_cast<size_t>(i)].result) return;
    session_->showRecord(run.graphs[static_cast<size_t>(i)].result);
  });
  connect(script_, &ScriptPanel::finished, this, [this](bool ok) {
    const ScriptRun& run = script_->lastRun();
    progress_->setText(tr("%1: %2 graph(s), %3 graph break(s), %4 recompile(s)")
                           .arg(QFileInfo(script_->path()).fileName())
                           .arg(run.graphs.size())
                           .arg(run.breaks.size())
                           .arg(run.recompiles));
    if (!run.graphs.empty() && run.graphs.front().result) {
      script_->chooseGraph(0);
      return;
    }
    if (!ok) showError(tr("The script failed:\n%1").arg(QString::fromStdString(run.error)));
    else graph_->showMessage(tr("The script compiled nothing: call a function wrapped by torch.compile"));
    emit compileDone(false);
  });

  // TORCH_TRACE logs of real PyTorch: frames, graphs, breaks, recompiles; a graph chosen compiles here.
  trace_session_ = new TraceSession(this);
  trace_ = new TracePanel(trace_session_, this);
  trace_dock_ = new QDockWidget(tr("PyTorch trace"), this);
  trace_dock_->setObjectName("trace");
  trace_dock_->setWidget(trace_);
  addDockWidget(Qt::RightDockWidgetArea, trace_dock_);
  tabifyDockWidget(script_dock_, trace_dock_);
  trace_dock_->hide();
  connect(trace_, &TracePanel::graphChosen, this, &MainWindow::compileTraceGraph);
  connect(trace_, &TracePanel::compileAllRequested, this, [this] { trace_session_->compileAll(session_->options); });
  connect(diff_, &DiffPanel::nodesChosen, trace_, &TracePanel::nodesChosen);  // a row of the Inductor comparison
  connect(trace_, &TracePanel::nodesChosen, this, [this](const QStringList& nodes) {
    const CompileResult* r = session_->result();
    if (!r || nodes.isEmpty()) return;
    selectNode(nodes.first());
    QStringList known;  // every node the kernel covers that our graph has
    for (const QString& n : nodes)
      if (r->model.graph.find(n.toStdString()) >= 0) known << n;
    if (known.isEmpty()) return;
    origins_ = known;
    selection_model_ = QString::fromStdString(r->model.path);
    buildProvenance();
    applyHighlight();
    if (highlighted_ > 0) graph_->focusHighlighted();
  });

  progress_ = new QLabel(this);
  cancel_ = new QPushButton(tr("Cancel"), this);
  busy_ = new QProgressBar(this);
  busy_->setRange(0, 0);  // a compile or a layout: no fraction to show, only that it runs
  busy_->setMaximumWidth(160);
  busy_->setMaximumHeight(14);
  busy_->setTextVisible(false);
  statusBar()->addWidget(progress_, 1);
  statusBar()->addPermanentWidget(busy_);
  statusBar()->addPermanentWidget(cancel_);
  setBusy(false);
  connect(cancel_, &QPushButton::clicked, this, [this] {
    session_->cancel();
    trace_session_->cancel();
    layouter_->cancel();
    progress_->setText(tr("Cancelled."));
    setBusy(false);
  });

  connect(stages_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& cur) { showStage(cur.row()); });
  connect(kernels_, &QTableView::clicked, this, [this](const QModelIndex& i) { markKernel(i.row()); });
  // A line of generated source selects the loop node it came from, and so its provenance.
  connect(code_, &CodeView::lineClicked, this, [this](int line) {
    const CompileResult* r = session_->result();
    if (!r || currentStage() != "source" || syncing_) return;
    for (const GeneratedKernel& k : r->source.kernels)
      for (const auto& [l, node] : k.line_nodes)
        if (l == line) {
          syncing_ = true;
          selectNode(QString::fromStdString(r->loops.nodes.at(node).name));
          syncing_ = false;
          return;
        }
  });
  connect(session_, &CompileSession::started, this, [this](const QString& p) {
    if (!currentStage().isEmpty()) restore_stage_ = currentStage();
    banner_->hide();
    progress_->setText(tr("Compiling %1 …").arg(QFileInfo(p).fileName()));
    setBusy(true);
  });
  connect(session_, &CompileSession::finished, this, &MainWindow::onFinished);
  connect(session_, &CompileSession::captured, this, &MainWindow::onCaptured);
  connect(session_, &CompileSession::failed, this, &MainWindow::onFailed);
  connect(layouter_, &GraphLayouter::laidOut, this, [this](const LaidOutGraph& g) {
    graph_->showGraph(g);
    applyHighlight();
    applyHeat();
    // The viewport follows the selection: what it became in this stage is brought into view.
    if (!pending_focus_.isEmpty()) graph_->focusNode(std::exchange(pending_focus_, QString()));
    else if (!selected_id_.isEmpty() && graph_->focusNode(selected_id_)) {
    }  // the selected node itself where this drawing has it
    else if (highlighted_ > 0) graph_->focusHighlighted();
    setBusy(false);
    progress_->setText(g.note.isEmpty() ? tr("%1 nodes").arg(g.nodes.size()) : g.note);
    emit stageShown(currentStage());
  });
  connect(layouter_, &GraphLayouter::failed, this, [this](const QString& why) {
    graph_->showMessage(why);
    setBusy(false);
    progress_->setText(why);
    emit stageShown(currentStage());
  });
  connect(graph_, &GraphView::nodeDoubleClicked, this, [this](const QString& id) {
    if (id.startsWith("module:")) expandModule(id.mid(7));
    else if (id.startsWith("cluster:")) collapseModule(id.mid(8));
  });
  connect(graph_, &GraphView::nodeClicked, this, [this](const QString& clicked) {
    const CompileResult* r = session_->result();
    if (!r) return;
    // A long edge drawn as a reference box ("ref:<tail>"): clicking it goes to the tail.
    const bool ref = clicked.startsWith("ref:");
    const QString id = ref ? clicked.mid(4) : clicked;
    selectNode(id);
    if (ref) graph_->focusNode(id);
    for (size_t k = 0; k < r->kernels.size(); ++k)
      if (QString::fromStdString(r->kernels[k].name) == id) markKernel(static_cast<int>(k));
  });
  connect(trace_session_, &TraceSession::progress, this, [this](qint64 done, qint64 total) {
    progress_->setText(tr("Reading the trace … %1%").arg(total > 0 ? 100 * done / total : 0));
  });
  connect(trace_session_, &TraceSession::failed, this, [this](const QString& why) {
    setBusy(false);
    // The reader's message names the file where it can.
    showError(why.contains(trace_session_->path()) ? tr("Cannot open the trace:\n%1").arg(why)
                                                   : tr("Cannot open the trace %1:\n%2").arg(trace_session_->path(), why));
    graph_->showMessage(tr("No trace: see the message above."));
    progress_->setText(tr("Cannot read the trace."));
    emit traceOpened(false);
  });
  // A capture folder the program is still writing: read again, the chosen graph kept.
  connect(trace_session_, &TraceSession::captureChanged, this, [this] {
    if (!trace_session_->busy() && trace_session_->path() == path_) openTrace(path_, trace_graph_);
  });
  connect(trace_session_, &TraceSession::loaded, this, [this] {
    setBusy(false);
    const auto t = trace_session_->trace();
    progress_->setText(trace_->status());
    trace_dock_->show();
    trace_dock_->raise();
    QString first;
    for (const TraceCompile& c : t->compiles)
      if (!c.dynamo_graph.empty() && first.isEmpty()) first = QString::fromStdString(c.id());
    const QString want = std::exchange(pending_graph_, QString());
    if (!want.isEmpty() && !t->compile(want.toStdString())) {
      showError(tr("No compile %1 in this trace; showing %2.").arg(want, first.isEmpty() ? tr("none") : first));
    }
    const QString id = !want.isEmpty() && t->compile(want.toStdString()) ? want : first;
    if (id.isEmpty() || !trace_->chooseGraph(id))
      graph_->showMessage(tr("The trace holds no Dynamo graph: its failures and warnings are in the PyTorch trace panel."));
    emit traceOpened(true);
  });
  buildActions();
  setAcceptDrops(true);
  // The window's size and its docks as the user left them.
  const QSettings settings;
  restoreGeometry(settings.value("window/geometry").toByteArray());
  restoreState(settings.value("window/state").toByteArray());
  graph_->showMessage(tr("Open a model: File > Open (Ctrl+O), or drop a .pt2, .onnx or .txt file here"));
}

void MainWindow::buildActions() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* open = file->addAction(tr("&Open Model File…"), this, [this] {
    const QString p = QFileDialog::getOpenFileName(
        this, tr("Open model"), QString(),
        tr("Models and scripts (*.pt2 *.onnx *.txt *.py);;torch.export archives (*.pt2);;ONNX models (*.onnx);;FX graph text (*.txt);;Python scripts (*.py);;All files (*)"));
    if (!p.isEmpty()) openModel(p);
  });
  open->setShortcut(QKeySequence::Open);
  file->addAction(tr("Open Model &Folder…"), this, [this] {
    const QString p = QFileDialog::getExistingDirectory(this, tr("Open model folder"));
    if (!p.isEmpty()) openModel(p);
  });
  QAction* open_script = file->addAction(tr("Open &Python Script…"), this, [this] {
    const QString p = QFileDialog::getOpenFileName(this, tr("Open a PyTorch-style script"), QString(), tr("Python scripts (*.py)"));
    if (!p.isEmpty()) openScript(p);
  });
  open_script->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
  QAction* open_trace = file->addAction(tr("Open &Trace (TORCH_TRACE log)…"), this, [this] {
    const QString p = QFileDialog::getOpenFileName(this, tr("Open a TORCH_TRACE log"), QString(),
                                                   tr("TORCH_TRACE logs (*.log);;All files (*)"));
    if (!p.isEmpty()) openTrace(p);
  });
  open_trace->setShortcut(QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key_O));
  open_trace->setObjectName("open_trace");
  file->addAction(tr("Open Trace F&older…"), this, [this] {
    const QString p = QFileDialog::getExistingDirectory(this, tr("Open a TORCH_TRACE folder"));
    if (!p.isEmpty()) openTrace(p);
  });
  QAction* open_capture = file->addAction(tr("Open &Capture Folder (torch.compile backend)…"), this, [this] {
    const QString p = QFileDialog::getExistingDirectory(this, tr("Open a folder written by backend=\"lowerscope\""));
    if (!p.isEmpty()) openTrace(p);
  });
  open_capture->setObjectName("open_capture");
  recent_menu_ = file->addMenu(tr("Open &Recent"));
  rebuildRecentMenu();
  QAction* reload = file->addAction(tr("&Recompile"), this, [this] { recompile(); });
  reload->setShortcut(QKeySequence::Refresh);
  QAction* exp = file->addAction(tr("&Export Compile Folder…"), this, [this] {
    if (!session_->result()) return;
    const QString d = QFileDialog::getExistingDirectory(this, tr("Export the compile into a folder"));
    if (!d.isEmpty()) exportFolder(d);
  });
  exp->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
  file->addAction(tr("Export &Package (builds and runs without Lowerscope)…"), this, [this] {
    if (!session_->result()) return;
    const QString d = QFileDialog::getExistingDirectory(this, tr("Write the package into a folder"));
    if (d.isEmpty()) return;
    const QString said = exportPackage(d);
    QMessageBox box(this);
    box.setWindowTitle(tr("Export package"));
    box.setIcon(said.startsWith(tr("Cannot")) ? QMessageBox::Warning : QMessageBox::Information);
    box.setText(said.section('\n', 0, 0));
    box.setDetailedText(said.section('\n', 1));
    box.exec();
  });
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), qApp, &QApplication::quit);
  quit->setShortcut(QKeySequence::Quit);

  // Find: nodes of the shown stage by name, op or module path (Enter: next match).
  QToolBar* bar = addToolBar(tr("Find"));
  bar->setObjectName("find");
  find_ = new QLineEdit(bar);
  find_->setPlaceholderText(tr("Find node (name, op, module)…  Ctrl+F"));
  find_->setClearButtonEnabled(true);
  find_->setMaximumWidth(320);
  find_->setMinimumWidth(240);  // the compile options' toolbar shares its row
  bar->addWidget(find_);
  connect(find_, &QLineEdit::returnPressed, this, [this] { findNodes(find_->text()); });
  QMenu* edit = menuBar()->addMenu(tr("&Edit"));
  QAction* palette = edit->addAction(tr("&Command Palette…"), this, [this] { commandPalette(); });
  palette->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_P));
  QAction* find = edit->addAction(tr("&Find Node…"), this, [this] {
    find_->setFocus();
    find_->selectAll();
  });
  find->setShortcut(QKeySequence::Find);

  QMenu* view = menuBar()->addMenu(tr("&View"));
  heat_action_ = view->addAction(tr("&Heat Overlay (time per node and kernel)"));
  heat_action_->setCheckable(true);
  heat_action_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_H));
  heat_action_->setObjectName("heat");
  connect(heat_action_, &QAction::toggled, this, [this](bool) { applyHeat(); });
  QAction* fold = view->addAction(tr("F&old All Modules"), this, &MainWindow::collapseAll);
  fold->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_M));
  fold->setToolTip(tr("Graphs over 250 nodes start folded by module; double-click a module to open it, its frame to fold it"));
  QAction* fit = view->addAction(tr("Zoom to &Fit"), graph_, &GraphView::zoomToFit);
  fit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_0));
  QAction* next = view->addAction(tr("&Next Stage"), this, [this] {
    const int r = stages_->currentIndex().row();
    if (r + 1 < stages_model_->rowCount()) stages_->setCurrentIndex(stages_model_->index(r + 1));
  });
  next->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_BracketRight));
  QAction* prev = view->addAction(tr("&Previous Stage"), this, [this] {
    const int r = stages_->currentIndex().row();
    if (r > 0) stages_->setCurrentIndex(stages_model_->index(r - 1));
  });
  prev->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_BracketLeft));
  view->addSeparator();
  dark_action_ = view->addAction(tr("Dar&k Theme"));
  dark_action_->setCheckable(true);
  dark_action_->setChecked(dark_theme());
  dark_action_->setObjectName("dark_theme");
  connect(dark_action_, &QAction::toggled, this, [this](bool on) { setDarkTheme(on); });
  QMenu* docks = view->addMenu(tr("&Panels"));
  for (QDockWidget* d : findChildren<QDockWidget*>()) docks->addAction(d->toggleViewAction());
  view->addSeparator();
  QAction* explorer = view->addAction(tr("&Explorer"), this, [this] { tabs_->setCurrentIndex(0); });
  explorer->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_1));
  QAction* diff = view->addAction(tr("&Diff (stages or modes)"), this, [this] { tabs_->setCurrentIndex(1); });
  diff->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_2));

  // The level the graph is decomposed to before lowering, as a backend author chooses it.
  QMenu* script = menuBar()->addMenu(tr("&Script"));
  script->addAction(tr("&New Script (the walkthrough's sin/cos)"), this, [this] {
    script_->setScript("import torch\n\n\ndef f(x):\n    return torch.sin(x) ** 2 + torch.cos(x) ** 2\n\n\n"
                       "compiled = torch.compile(f)\nprint(compiled(torch.randn(1000))[:4])\n",
                       "script.py");
    script_dock_->show();
    script_dock_->raise();
  });
  QAction* run_script_action = script->addAction(tr("&Run"), this, [this] {
    script_dock_->show();
    script_->run();
  });
  run_script_action->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
  QAction* stop_script = script->addAction(tr("&Stop"), this, [this] { script_->stop(); });
  stop_script->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Period));
  script->addAction(script_dock_->toggleViewAction());

  QMenu* compile = menuBar()->addMenu(tr("&Compile"));
  auto* level = new QActionGroup(this);
  QAction* to_prims = compile->addAction(tr("Decompose to &prims"));
  QAction* to_core = compile->addAction(tr("Decompose to &Core ATen only"));
  for (QAction* a : {to_prims, to_core}) {
    a->setCheckable(true);
    level->addAction(a);
  }
  to_prims->setChecked(true);
  to_prims->setObjectName("decompose_prims");
  to_core->setObjectName("decompose_core_aten");
  connect(level, &QActionGroup::triggered, this, [this, to_core](QAction* a) {
    session_->options.decompose_to = a == to_core ? level::core_aten : level::prims;
    recompile();
  });
  compile->addSeparator();
  // Target: C++/OpenMP for this CPU, or CUDA C++ (NVRTC: PTX and SASS; run where there is a GPU).
  auto* targets = new QActionGroup(this);
  QAction* to_cpu = compile->addAction(tr("Target: &CPU (C++ / OpenMP)"));
  QAction* to_cuda = compile->addAction(tr("Target: C&UDA (NVRTC)"));
  to_cpu->setObjectName("target_cpu");
  to_cuda->setObjectName("target_cuda");
  for (QAction* a : {to_cpu, to_cuda}) {
    a->setCheckable(true);
    targets->addAction(a);
  }
  to_cpu->setChecked(true);
  to_cuda->setEnabled(can_compile_for(Device::cuda));
  if (!can_compile_for(Device::cuda)) to_cuda->setToolTip(tr("This build has no NVRTC (the CUDA toolkit was not found)"));
  connect(targets, &QActionGroup::triggered, this, [this, to_cuda](QAction* a) {
    session_->options.device = a == to_cuda ? Device::cuda : Device::cpu;
    recompile();
  });
  compile->addSeparator();
  // The precision a float model runs in, as model.to(dtype) with its inputs in that dtype
  // (PipelineOptions::dtype): halves load and store 2 bytes, compute in float32 inside a kernel,
  // and are checked with assert_close's tolerance for the dtype. Also on the toolbar.
  auto* dtypes = new QActionGroup(this);
  auto* dtype_box = new QComboBox(this);
  dtype_box->setObjectName("dtype_box");
  dtype_box->setToolTip(tr("Compile > Dtype: the precision the model runs in, as model.to(dtype)"));
  for (const auto& [name, label] : {std::pair{"float32", tr("Dtype: float32 (as loaded)")},
                                    std::pair{"bfloat16", tr("Dtype: bfloat16 (model.to(torch.bfloat16))")},
                                    std::pair{"float16", tr("Dtype: float16 (model.to(torch.float16))")}}) {
    QAction* a = compile->addAction(label);
    a->setCheckable(true);
    a->setChecked(dtypes->actions().isEmpty());
    a->setObjectName(QString("dtype_") + name);
    a->setToolTip(tr("Run a float model as model.to(torch.%1) would, its float inputs converted too; the check uses "
                     "torch.testing.assert_close's tolerance for %1")
                      .arg(name));
    dtypes->addAction(a);
    dtype_box->addItem(dtype_box->count() == 0 ? tr("float32 (as loaded)") : QString(name), QString(name));
    const int index = dtype_box->count() - 1;
    connect(a, &QAction::toggled, dtype_box, [dtype_box, index](bool on) {
      if (on) dtype_box->setCurrentIndex(index);  // the toolbar follows the menu, the palette and --dtype
    });
    connect(a, &QAction::triggered, this, [this, name = std::string(name)] {
      const std::optional<DType> t = dtype_from_name(name);
      session_->options.dtype = t && *t != DType::f32 ? t : std::nullopt;  // float32: as loaded, as the CLI's --dtype float32
      recompile();
    });
  }
  connect(dtype_box, &QComboBox::activated, this, [dtypes](int i) {
    QAction* a = dtypes->actions().value(i);
    if (a && !a->isChecked()) a->trigger();
  });
  QToolBar* options_bar = addToolBar(tr("Compile options"));
  options_bar->setObjectName("compile_options");
  options_bar->addWidget(new QLabel(tr(" Dtype "), options_bar));
  options_bar->addWidget(dtype_box);
  compile->addSeparator();
  // torch.compile's modes: reduce-overhead replays the whole CUDA run as one CUDA graph,
  // max-autotune times each CUDA kernel's launch configurations and each matrix multiply's
  // cuBLASLt algorithms (on the CPU: each multiply's cut into blocks) and keeps the fastest.
  auto* modes = new QActionGroup(this);
  for (Mode m : {Mode::default_mode, Mode::reduce_overhead, Mode::max_autotune}) {
    const char* mode = mode_name(m);
    QAction* a = compile->addAction(tr("Mode: %1").arg(mode));
    a->setCheckable(true);
    a->setChecked(m == Mode::default_mode);
    a->setObjectName(QString("mode_") + mode);
    modes->addAction(a);
    connect(a, &QAction::triggered, this, [this, m] {
      session_->options.mode = m;
      recompile();
    });
  }
  // torch.compile(dynamic=True): the inputs' sizes become symbols, the kernels (C++ or CUDA) take
  // them as arguments; the "dynamic" stage lists the symbols, what was specialized and why, and the guards.
  QAction* dynamic = compile->addAction(tr("D&ynamic Shapes (sizes as kernel arguments)"));
  dynamic->setCheckable(true);
  dynamic->setObjectName("dynamic");
  dynamic->setToolTip(tr("As torch.compile(dynamic=True): one compiled kernel serves every size its guards admit"));
  connect(dynamic, &QAction::toggled, this, [this](bool on) {
    session_->options.dynamic = on;
    recompile();
  });
  compile->addSeparator();
  // Training: the joint graph, its partition, and the whole step compiled.
  train_action_ = compile->addAction(tr("&Training Mode (forward + backward)"));
  train_action_->setCheckable(true);
  train_action_->setObjectName("train");
  train_action_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_T));
  connect(train_action_, &QAction::toggled, this, [this](bool on) {
    session_->options.train = on;
    recompile();
  });
  auto* parts = new QActionGroup(this);
  min_cut_action_ = compile->addAction(tr("Partitioner: &Min-Cut Rematerialization"));
  default_partition_action_ = compile->addAction(tr("Partitioner: &Default (save what the backward reads)"));
  for (QAction* a : {min_cut_action_, default_partition_action_}) {
    a->setCheckable(true);
    parts->addAction(a);
  }
  min_cut_action_->setChecked(true);
  min_cut_action_->setObjectName("partitioner_min_cut");
  default_partition_action_->setObjectName("partitioner_default");
  connect(parts, &QActionGroup::triggered, this, [this](QAction* a) {
    session_->options.partitioner = a == min_cut_action_ ? Partitioner::min_cut : Partitioner::default_partition;
    if (session_->options.train) recompile();
  });
  compile->addSeparator();
  QAction* fusion = compile->addAction(tr("&Fusion"));
  fusion->setCheckable(true);
  fusion->setChecked(true);
  fusion->setObjectName("fusion");
  connect(fusion, &QAction::toggled, this, [this](bool on) {
    session_->options.fusion = on;
    recompile();
  });
  // CPU: default mode writes the largest float32 products as GEMM templates (gemm_template_default);
  // off, every product calls the BLAS library.
  QAction* templates = compile->addAction(tr("&GEMM Templates (large CPU matrix multiplies)"));
  templates->setCheckable(true);
  templates->setChecked(true);
  templates->setObjectName("gemm_templates");
  templates->setToolTip(tr("On the CPU, write float32 products of at least 2^27 multiply-adds (AVX-512, K up to 512) as "
                           "generated C++ with the bias in the register tile's store; off: every product calls OpenBLAS"));
  connect(templates, &QAction::toggled, this, [this](bool on) {
    session_->options.gemm_templates = on;
    recompile();
  });
}

void MainWindow::setBusy(bool on) {
  busy_->setVisible(on);
  cancel_->setVisible(on);
}

void MainWindow::onCaptured() {
  // The captured graph alone, drawn while the rest compiles; onFinished() replaces it.
  const CompileResult* r = session_->result();
  stages_model_->setResult(r);
  kernels_model_->setResult(r);
  partition_model_->setResult(r);
  profile_->setResult(nullptr);
  properties_->clear();
  provenance_->clear();
  summary_->setText(tr("Compiling … the captured graph is shown meanwhile."));
  if (stages_model_->rowCount() > 0) {
    if (stages_->currentIndex().row() == 0) showStage(0);
    else stages_->setCurrentIndex(stages_model_->index(0));
  }
}

// The graph a stage draws: its own, or for a big graph without module paths, a copy whose nodes
// are grouped in runs of the node order (segmented), so that it folds like a model's modules.
// Kept until the stage's graph changes.
const Graph* MainWindow::drawnGraph(const CompileResult& r, const std::string& stage) {
  const Graph* g = stage_graph(r, stage);
  // Flat graphs are drawn whole up to 1,000 nodes (long edges as reference boxes), folded above.
  constexpr size_t kFlatWhole = 1000;
  if (!g || g->nodes.size() <= kFlatWhole || worth_collapsing(*g)) return g;
  DrawnGraph& d = drawn_[stage];
  if (d.source != g || !d.graph || d.graph->nodes.size() != g->nodes.size() || d.graph->nodes.back().name != g->nodes.back().name) {
    d.source = g;
    d.graph = std::make_shared<const Graph>(segmented(*g, kFlatWhole));
  }
  return d.graph.get();
}

void MainWindow::expandModule(const QString& path) {
  expanded_.insert(path.toStdString());
  progress_->setText(tr("Opened module %1").arg(path));
  selectStage(currentStage());
}

void MainWindow::collapseModule(const QString& path) {
  const std::string p = path.toStdString();
  for (auto it = expanded_.begin(); it != expanded_.end();)
    it = *it == p || it->rfind(p + ".", 0) == 0 ? expanded_.erase(it) : std::next(it);
  progress_->setText(tr("Folded module %1").arg(path));
  selectStage(currentStage());
}

void MainWindow::collapseAll() {
  expanded_.clear();
  expansion_chosen_ = true;
  selectStage(currentStage());
}

QStringList MainWindow::expandedModules() const {
  QStringList v;
  for (const auto& m : expanded_) v << QString::fromStdString(m);
  return v;
}

void MainWindow::setTraining(bool on) {
  if (train_action_->isChecked() == on) {
    session_->options.train = on;
    recompile();
  } else {
    train_action_->setChecked(on);  // recompiles through the toggled handler
  }
}

void MainWindow::setPartitioner(bool min_cut) {
  (min_cut ? min_cut_action_ : default_partition_action_)->trigger();
}

QString MainWindow::partitionSummary() const { return partition_summary_->text(); }

void MainWindow::openScript(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) {
    showError(tr("Cannot read %1: %2").arg(path, f.errorString()));
    return;
  }
  rememberRecent(path);
  trace_graph_.clear();
  setWindowTitle(tr("%1 — Lowerscope").arg(QFileInfo(path).fileName()));
  script_->setScript(QString::fromUtf8(f.readAll()), path);
  script_dock_->show();
  script_dock_->raise();
  script_->run();
}

void MainWindow::openModel(const QString& path) {
  if (path.endsWith(".py", Qt::CaseInsensitive)) {
    openScript(path);
    return;
  }
  if (is_trace_path(path)) {
    openTrace(path);
    return;
  }
  trace_graph_.clear();
  if (path != path_) expanded_.clear(), expansion_chosen_ = false;
  drawn_.clear();
  path_ = path;
  rememberRecent(path);
  setWindowTitle(tr("%1 — Lowerscope").arg(QFileInfo(path).fileName()));
  session_->open(path);
}

void MainWindow::openLoadedModel(const LoadedModel& model) {
  expanded_.clear();
  drawn_.clear();
  expansion_chosen_ = false;
  path_.clear();
  trace_graph_.clear();
  setWindowTitle(tr("%1 — Lowerscope").arg(QString::fromStdString(model.path)));
  session_->compileModel(model);
}

void MainWindow::recompile() {
  if (!trace_graph_.isEmpty() && trace_session_->trace()) compileTraceGraph(trace_graph_);
  else if (!path_.isEmpty()) openModel(path_);
}

void MainWindow::openTrace(const QString& path, const QString& graph) {
  expanded_.clear(), expansion_chosen_ = false;
  drawn_.clear();
  path_ = path;
  trace_graph_.clear();
  pending_graph_ = graph;
  rememberRecent(path);
  setWindowTitle(tr("%1 — Lowerscope").arg(QFileInfo(path).fileName()));
  banner_->hide();
  trace_dock_->show();
  trace_dock_->raise();
  resizeDocks({trace_dock_}, {600}, Qt::Horizontal);
  graph_->showMessage(tr("Reading the trace …"));
  progress_->setText(tr("Reading the trace %1 …").arg(QFileInfo(path).fileName()));
  setBusy(true);
  trace_session_->open(path);
}

// A Dynamo graph of the trace, compiled by our pipeline as a model is (a training step where
// PyTorch compiled one: it logged a joint or backward graph).
void MainWindow::compileTraceGraph(const QString& id) {
  const auto t = trace_session_->trace();
  const TraceCompile* c = t ? t->compile(id.toStdString()) : nullptr;
  if (!c || c->dynamo_graph.empty()) return;
  if (id != trace_graph_) expanded_.clear(), expansion_chosen_ = false, drawn_.clear();
  trace_graph_ = id;
  setWindowTitle(tr("[%1] %2 — %3 — Lowerscope").arg(id, QString::fromStdString(c->name), QFileInfo(path_).fileName()));
  LoadedModel model;
  const CaptureGraph* captured = trace_session_->captureGraph(id);
  try {
    if (captured) {  // a capture folder: the graph's example inputs and PyTorch's outputs
      model = capture_graph_model(*trace_session_->capture(), *captured);
      model.path = "[" + id.toStdString() + "] " + c->name + " (" + captured->file + ")";
    } else
      model = trace_graph_model(*c);
  } catch (const std::exception& e) {  // its text does not import: an op we lack, a symbol we cannot bind
    CompileResult failed;
    failed.model.path = "[" + id.toStdString() + "] " + c->name;
    failed.error = e.what();
    failed.error_stage = "capture";
    trace_->setOurs(id, &failed);
    showError(tr("[%1]: Lowerscope cannot import this Dynamo graph:\n%2").arg(id, QString::fromStdString(e.what())));
    graph_->showMessage(tr("Not compiled by Lowerscope; PyTorch's own artifacts are in the trace panel."));
    emit compileDone(false);
    return;
  }
  PipelineOptions o = session_->options;
  o.train = o.train || c->aot_graphs.count("aot_joint_graph") || c->aot_graphs.count("aot_backward_graph") ||
            (captured && captured->train);
  session_->compileModel(model, o);
}

void MainWindow::onFinished() {
  const CompileResult* r = session_->result();
  // The selection survives a recompile (another target, training, fusion off, or the compile
  // that follows the captured graph's preview) where the new record still has its nodes.
  QStringList kept;
  const bool same_model = selection_model_ == QString::fromStdString(r->model.path);
  for (const QString& o : same_model ? origins_ : QStringList())
    if (r->model.graph.find(o.toStdString()) >= 0 || r->aten.find(o.toStdString()) >= 0) kept << o;
  origins_ = kept;
  provenance_->clear();
  if (!origins_.isEmpty()) buildProvenance();
  const QString prev = !restore_stage_.isEmpty() ? std::exchange(restore_stage_, QString()) : currentStage();
  stages_model_->setResult(r);
  kernels_model_->setResult(r);
  kernels_->resizeColumnsToContents();
  partition_model_->setResult(r);
  partition_->resizeColumnsToContents();
  partition_summary_->setText(partition_model_->summary());
  setBusy(false);
  summary_->setText(tr("<b>Check %1</b> &nbsp; max abs err %2 · rel err %3 &nbsp;|&nbsp; compile %4 ms · run %5 µs · %6 kernel(s) · %7")
                        .arg(r->check.ok ? "<span style='color:#1e7e34'>passed</span>" : "<span style='color:#b00'>FAILED</span>")
                        .arg(r->check.max_abs_err, 0, 'g', 3)
                        .arg(r->check.rel_err, 0, 'g', 3)
                        .arg(r->compile_ms, 0, 'f', 1)
                        .arg(r->run_ms * 1000.0, 0, 'f', 2)
                        .arg(r->kernels.size())
                        .arg(QString::fromStdString(r->compiler)) +
                    (r->train ? tr(" &nbsp;|&nbsp; training step: %1 gradient check(s), %2 against PyTorch's files")
                                    .arg(r->check.gradients.size() + r->training.num_gradients)
                                    .arg(r->check.gradients.size())
                              : QString()) +
                    // A half model's check: assert_close's tolerance for its dtype, as the run stage says.
                    (dtype_is_half(r->check.precision)
                         ? tr(" &nbsp;|&nbsp; tolerance %1").arg(QString::fromStdString(tolerance_text(r->check.precision)).toHtmlEscaped())
                         : QString()));
  summary_->setToolTip(QString::fromStdString(phase_table(r->compile_phases)));  // where the compile's time went
  progress_->setText(tr("Compiled %1").arg(QString::fromStdString(r->model.path)));
  if (!r->not_run.empty()) {  // compiled for a GPU this machine does not have: every stage but the run is there
    summary_->setText(tr("<b>Not run</b> &nbsp; %1 &nbsp;|&nbsp; compile %2 ms · %3 kernel(s) · %4")
                          .arg(QString::fromStdString(r->not_run).toHtmlEscaped())
                          .arg(r->compile_ms, 0, 'f', 1)
                          .arg(r->source.kernels.size())
                          .arg(QString::fromStdString(r->compiler)));
  } else if (!r->check.ok) {
    showError(tr("The compiled model's output does not match its reference. See the run stage."));
  }
  if (!trace_graph_.isEmpty() && r->model.path.rfind("[" + trace_graph_.toStdString() + "]", 0) == 0) trace_->setOurs(trace_graph_, r);
  // A graph of a trace: the Diff tab offers Inductor's kernels for it against ours.
  const bool of_trace = !trace_graph_.isEmpty() && r->model.path.rfind("[" + trace_graph_.toStdString() + "]", 0) == 0;
  diff_->setTraceGraph(of_trace ? trace_session_->trace() : nullptr, trace_graph_);
  diff_->leftChanged();
  profile_->setResult(session_->shared());
  properties_->clear();
  const int row = !prev.isEmpty() && stages_model_->rowOf(prev) >= 0 ? stages_model_->rowOf(prev) : 0;
  if (stages_->currentIndex().row() == row) showStage(row);
  else stages_->setCurrentIndex(stages_model_->index(row));
  emit compileDone(r->check.ok || !r->not_run.empty());
}

void MainWindow::onFailed(const QString& stage, const QString& message) {
  const CompileResult* r = session_->result();
  stages_model_->setResult(r);
  kernels_model_->setResult(r);
  partition_model_->setResult(r);
  partition_summary_->setText(partition_model_->summary());
  setBusy(false);
  summary_->setText(tr("<b style='color:#b00'>Stage '%1' failed.</b>").arg(stage));
  if (r && !trace_graph_.isEmpty() && r->model.path.rfind("[" + trace_graph_.toStdString() + "]", 0) == 0) trace_->setOurs(trace_graph_, r);
  showError(tr("Stage '%1' failed for %2:\n%3").arg(stage, QString::fromStdString(r ? r->model.path : ""), message));
  progress_->setText(tr("Failed at stage '%1'").arg(stage));
  // The last stage reached: the drawing with the node it failed at marked.
  int last = -1;
  for (int i = 0; r && i < static_cast<int>(r->stages.size()); ++i)
    if (r->stages[static_cast<size_t>(i)].kind != Stage::Kind::not_reached) last = i;
  if (last >= 0) stages_->setCurrentIndex(stages_model_->index(last));
  else graph_->showMessage(tr("Nothing to show: the model could not be loaded."));
  emit compileDone(false);
}

void MainWindow::showError(const QString& text) {
  banner_->setText(text);
  banner_->show();
}

QString MainWindow::errorText() const { return banner_->isVisible() ? banner_->text() : QString(); }

QString MainWindow::currentStage() const {
  return stages_->currentIndex().data(StageListModel::NameRole).toString();
}

bool MainWindow::selectStage(const QString& name) {
  const int row = stages_model_->rowOf(name);
  if (row < 0) return false;
  if (stages_->currentIndex().row() == row) showStage(row);
  else stages_->setCurrentIndex(stages_model_->index(row));
  return true;
}

void MainWindow::showStage(int row) {
  const CompileResult* r = session_->result();
  if (!r || row < 0 || row >= static_cast<int>(r->stages.size())) return;
  const Stage& s = r->stages[row];
  if (s.kind == Stage::Kind::not_reached) {  // after a failure: what stopped it, no drawing
    code_->showText(QString::fromStdString(s.text), CodeView::Language::Plain);
    graph_->showMessage(QString::fromStdString(s.text).trimmed());
    emit stageShown(QString::fromStdString(s.name));
    return;
  }
  const bool cpp = s.kind == Stage::Kind::source;
  code_->showText(QString::fromStdString(s.text), cpp                                    ? CodeView::Language::Cpp
                                                  : s.kind == Stage::Kind::assembly ? CodeView::Language::Plain
                                                                                    : CodeView::Language::Python);
  if (cpp && !r->source.kernels.empty()) code_->markLines(r->source.kernels[0].first_line, r->source.kernels[0].last_line);
  // Source and run stages show the fused kernels beside them.
  std::string dot = s.dot;
  if (const Graph* g = drawnGraph(*r, s.name); g && worth_collapsing(*g)) {
    if (!expansion_chosen_) expanded_ = initial_expansion(*g), expansion_chosen_ = true;
    dot = collapsed_graph_to_dot(*g, expanded_);
  }
  std::string simpler = s.dot_simple;
  if (dot.empty())
    if (const Stage* f = r->stage("fused")) dot = f->dot, simpler = f->dot_simple;
  if (dot.empty()) {
    graph_->showMessage(tr("No graph for this stage."));
    emit stageShown(QString::fromStdString(s.name));
    return;
  }
  progress_->setText(tr("Laying out %1 …").arg(QString::fromStdString(s.title)));
  setBusy(true);
  layouter_->layout(QString::fromStdString(dot), QString::fromStdString(simpler));
}

namespace {
bool shares(const std::vector<std::string>& a, const QStringList& b) {
  for (const auto& x : a)
    if (b.contains(QString::fromStdString(x))) return true;
  return false;
}
}  // namespace

void MainWindow::selectNode(const QString& id) {
  const CompileResult* r = session_->result();
  if (!r) return;
  selected_id_ = id;
  showProperties(id);
  const std::string stage = currentStage().toStdString(), key = id.toStdString();
  std::vector<std::string> origins;
  if (const Graph* g = stage_graph(*r, stage)) {
    const int n = g->find(key);
    if (n >= 0) origins = g->nodes[n].origins;
  }
  for (const LoopNode& n : r->loops.nodes)
    if (n.name == key || n.buffer == key) origins = n.origins;
  for (const Kernel& k : r->schedule.kernels)
    if (k.name == key) origins = k.origins;
  // A user-level name selects from any stage.
  for (const Graph* g : {&r->model.graph, &r->aten})
    if (origins.empty() && g->find(key) >= 0) origins = g->nodes[g->find(key)].origins;
  if (origins.empty()) return;
  origins_.clear();
  for (const auto& o : origins) origins_ << QString::fromStdString(o);
  selection_model_ = QString::fromStdString(r->model.path);
  buildProvenance();
  applyHighlight();
}

void MainWindow::showProperties(const QString& id) {
  const CompileResult* r = session_->result();
  if (!r) return;
  Properties p = node_properties(*r, currentStage(), id);
  for (const char* user_level : {"aten", "capture"})  // a user-level name, selected from any stage
    if (p.isEmpty()) p = node_properties(*r, user_level, id);
  if (p.isEmpty()) return;
  properties_->clear();
  for (const auto& [k, v] : p) {
    auto* it = new QTreeWidgetItem(properties_, {k, v});
    it->setToolTip(1, v);
  }
  properties_->resizeColumnToContents(0);
}

void MainWindow::setHeatOverlay(bool on) {
  if (heat_action_->isChecked() != on) heat_action_->setChecked(on);
  else applyHeat();
}

void MainWindow::applyHeat() {
  const CompileResult* r = session_->result();
  QHash<QString, double> share;
  if (r && heat_action_ && heat_action_->isChecked()) {
    // Source and run stages show the fused graph.
    const Graph* g = drawnGraph(*r, currentStage().toStdString());
    const QString stage = g ? currentStage() : QStringLiteral("fused");
    // A folded graph: each module box takes the share of its hottest node.
    QHash<QString, QString> shown_as;
    if (g && worth_collapsing(*g))
      for (const Node& n : g->nodes) shown_as[QString::fromStdString(n.name)] = QString::fromStdString(visible_id(n, expanded_));
    for (const auto& [id, v] : time_shares(*r, stage)) {
      const QString at = shown_as.value(id, id);
      share[at] = std::max(share.value(at), v);
    }
  }
  heat_painted_ = graph_->setHeat(share);
  if (heat_action_ && heat_action_->isChecked())
    progress_->setText(r && r->kernels.empty() ? tr("Heat overlay: no run to take times from")
                                               : tr("Heat overlay: %1 node(s) and kernel(s) painted by their share of the run").arg(heat_painted_));
}

// The decomposition tree of the selected user-level node(s): what each stage made of them.
void MainWindow::buildProvenance() {
  provenance_->clear();
  const CompileResult* r = session_->result();
  if (!r || origins_.isEmpty()) return;
  for (const QString& o : origins_) {
    const int src = r->model.graph.find(o.toStdString());
    auto* top = new QTreeWidgetItem(provenance_, {o, src >= 0 && !r->model.graph.nodes[src].is_placeholder()
                                                         ? QString::fromStdString(r->model.graph.nodes[src].target) : tr("input")});
    for (const char* stage : {"aten", "joint", "forward", "backward", "core_aten", "prims"}) {
      const Graph* g = stage_graph(*r, stage);
      if (!g || g->nodes.empty()) continue;
      auto* st = new QTreeWidgetItem(top, {QString::fromLatin1(stage), QString()});
      for (const Node& n : g->nodes)
        if (!n.is_placeholder() && std::count(n.origins.begin(), n.origins.end(), o.toStdString()))
          new QTreeWidgetItem(st, {QString::fromStdString(n.name), QString::fromStdString(n.op->name)});
    }
    auto* loops = new QTreeWidgetItem(top, {tr("loop_ir"), QString()});
    for (const LoopNode& n : r->loops.nodes)
      if (std::count(n.origins.begin(), n.origins.end(), o.toStdString()))
        new QTreeWidgetItem(loops, {QString::fromStdString(n.name), n.kind == LoopNode::Kind::extern_kernel ? tr("extern")
                                                                  : n.kind == LoopNode::Kind::reduction ? tr("reduction") : tr("pointwise")});
    auto* kernels = new QTreeWidgetItem(top, {tr("kernels"), QString()});
    for (const Kernel& k : r->schedule.kernels)
      if (std::count(k.origins.begin(), k.origins.end(), o.toStdString()))
        new QTreeWidgetItem(kernels, {QString::fromStdString(k.name), k.is_extern ? tr("library call") : tr("generated")});
  }
  provenance_->expandAll();
}

// Marks, in the shown stage, every node made from the selected user-level nodes.
void MainWindow::applyHighlight() {
  const CompileResult* r = session_->result();
  QSet<QString> ids;
  if (r && !origins_.isEmpty()) {
    const std::string stage = currentStage().toStdString();
    if (const Graph* g = drawnGraph(*r, stage)) {
      const bool folded = worth_collapsing(*g);
      for (const Node& n : g->nodes)
        if (shares(n.origins, origins_))
          ids.insert(QString::fromStdString(folded ? visible_id(n, expanded_) : n.name));
    } else if (stage == "loop_ir" || stage == "fused" || stage == "source" || stage == "run") {  // the fused graph is shown beside source and run
      for (const LoopNode& n : r->loops.nodes)
        if (shares(n.origins, origins_)) ids.insert(QString::fromStdString(n.name));
    }
    if (stage == "fused" || stage == "source" || stage == "run")
      for (const Kernel& k : r->schedule.kernels)
        if (shares(k.origins, origins_)) ids.insert(QString::fromStdString(k.name));
  }
  highlighted_ = graph_->highlight(ids);
  // In the source, the lines generated from the selected nodes.
  if (r && !origins_.isEmpty() && currentStage() == "source" && !syncing_) {
    QList<int> lines;
    for (const GeneratedKernel& k : r->source.kernels)
      for (const auto& [l, node] : k.line_nodes)
        if (shares(r->loops.nodes.at(node).origins, origins_)) lines << l;
    syncing_ = true;
    code_->markLineSet(lines);
    syncing_ = false;
    marked_lines_ = static_cast<int>(lines.size());
  }
}

void MainWindow::markKernel(int k) {
  const CompileResult* r = session_->result();
  if (!r || k < 0 || k >= static_cast<int>(r->kernels.size())) return;
  if (currentStage() != "source") selectStage("source");
  code_->markLines(r->kernels[k].first_line, r->kernels[k].last_line);
}

int MainWindow::findNodes(const QString& text) {
  const CompileResult* r = session_->result();
  if (!r || text.trimmed().isEmpty()) return 0;
  const std::string stage = currentStage().toStdString();
  const QString t = text.trimmed();
  QStringList hits;
  auto match = [&](const std::string& s) { return QString::fromStdString(s).contains(t, Qt::CaseInsensitive); };
  if (const Graph* g = stage_graph(*r, stage)) {
    for (const Node& n : g->nodes)
      if (match(n.name) || match(n.target) || match(n.module_path) || match(n.param_name)) hits << QString::fromStdString(n.name);
  } else {
    for (const LoopNode& n : r->loops.nodes)
      if (match(n.name) || match(n.graph_node) || match(n.buffer)) hits << QString::fromStdString(n.name);
    for (const Kernel& k : r->schedule.kernels)
      if (match(k.name)) hits << QString::fromStdString(k.name);
  }
  if (hits.isEmpty()) {
    progress_->setText(tr("No node of stage '%1' matches '%2'.").arg(currentStage(), t));
    return 0;
  }
  // Enter again: the next match.
  static QString last_text;
  static int last_index = -1;
  last_index = t == last_text ? (last_index + 1) % hits.size() : 0;
  last_text = t;
  const QString id = hits[last_index];
  selectNode(id);
  if (const Graph* g = drawnGraph(*r, stage); g && worth_collapsing(*g) && g->find(id.toStdString()) >= 0) {
    const Node& n = g->nodes[g->find(id.toStdString())];
    if (visible_id(n, expanded_) != n.name) {  // inside folded modules: open them, then scroll to it
      for (std::string m = module_of(n); !m.empty(); m = m.substr(0, m.rfind('.') == std::string::npos ? 0 : m.rfind('.')))
        expanded_.insert(m);
      pending_focus_ = id;
      selectStage(currentStage());
    }
  }
  graph_->focusNode(id);
  progress_->setText(tr("%1 of %2 matches for '%3': %4").arg(last_index + 1).arg(hits.size()).arg(t, id));
  return static_cast<int>(hits.size());
}

QString MainWindow::exportFolder(const QString& dir) {
  const CompileResult* r = session_->result();
  if (!r) return {};
  const ExportResult e = export_compile_folder(*r, dir);
  QString msg = tr("Exported %1 files to %2").arg(e.written.size()).arg(dir);
  if (!e.problems.isEmpty()) {
    msg += tr(" (%1 problem(s))").arg(e.problems.size());
    showError(tr("Export to %1:\n%2").arg(dir, e.problems.join("\n")));
  }
  progress_->setText(msg);
  return msg;
}

CommandPalette* MainWindow::commandPalette(bool show) {
  if (!palette_) palette_ = new CommandPalette(this);
  QList<CommandPalette::Entry> extra;
  for (int row = 0; row < stages_model_->rowCount(); ++row) {
    const QModelIndex i = stages_model_->index(row);
    const QString name = i.data(StageListModel::NameRole).toString();
    extra.push_back({tr("Go to stage › %1").arg(i.data(Qt::DisplayRole).toString().section('\n', 0, 0)), QString(),
                     [this, name] { selectStage(name); }});
  }
  palette_->setEntries(menuBar(), extra);
  if (show) {
    palette_->move(mapToGlobal(QPoint((width() - palette_->width()) / 2, 60)));
    palette_->show();
  }
  return palette_;
}

void MainWindow::setDarkTheme(bool dark) {
  if (dark_action_->isChecked() != dark) {
    dark_action_->setChecked(dark);  // comes back here through toggled
    return;
  }
  apply_theme(dark);
  QSettings().setValue("theme", dark ? "dark" : "light");
  graph_->applyTheme();
  if (!currentStage().isEmpty()) selectStage(currentStage());  // redraw the graph and the code in it
}

void MainWindow::closeEvent(QCloseEvent* e) {
  QSettings s;
  s.setValue("window/geometry", saveGeometry());
  s.setValue("window/state", saveState());
  QMainWindow::closeEvent(e);
}

QString MainWindow::exportPackage(const QString& dir) {
  const CompileResult* r = session_->result();
  if (!r) return {};
  try {
    const Package p = export_package(*r, dir.toStdString());
    QString text = QString::fromStdString(p.summary) + "\n" + tr("Files:") + "\n";
    for (const auto& f : p.files) text += "  " + QString::fromStdString(f) + "\n";
    progress_->setText(tr("Package written to %1").arg(dir));
    return text;
  } catch (const std::exception& e) {
    const QString why = tr("Cannot export a package: %1").arg(QString::fromStdString(e.what()));
    progress_->setText(why);
    return why;
  }
}

QStringList MainWindow::recentFiles() const { return QSettings().value("recentFiles").toStringList(); }

void MainWindow::rememberRecent(const QString& path) {
  QStringList r = recentFiles();
  const QString abs = QFileInfo(path).absoluteFilePath();
  r.removeAll(abs);
  r.prepend(abs);
  while (r.size() > 10) r.removeLast();
  QSettings().setValue("recentFiles", r);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  if (!recent_menu_) return;
  recent_menu_->clear();
  for (const QString& p : recentFiles())
    recent_menu_->addAction(QFileInfo(p).fileName() + "  —  " + QFileInfo(p).absolutePath(), this, [this, p] { openModel(p); });
  recent_menu_->setEnabled(!recent_menu_->isEmpty());
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls() && e->mimeData()->urls().first().isLocalFile()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
  const QList<QUrl> urls = e->mimeData()->urls();
  if (urls.isEmpty() || !urls.first().isLocalFile()) return;
  openModel(urls.first().toLocalFile());
  e->acceptProposedAction();
}

}  // namespace ls
