// Importers: every fixture stage file parses (shapes checked against PyTorch's annotations), the
// .pt2 and ONNX models run on the reference interpreter and match PyTorch's outputs, and
// malformed or hostile files fail with a message naming the file and the field, without crashing.
#include <QtTest>

#include <filesystem>
#include <list>
#include <fstream>

#include <nlohmann/json.hpp>

#include "frontend/fx_text.h"
#include "frontend/load_model.h"
#include "frontend/onnx.h"
#include "frontend/pt2.h"
#include "interp/reference.h"
#include "ops/known_ops.h"
#include "ops/op_table.h"
#include "passes/decompose.h"
#include "passes/normalize_to_aten.h"
#include "pipeline/pipeline.h"
#include "tensor/npy.h"

#ifdef LOWERSCOPE_HAVE_LIBZIP
#include <zip.h>
#endif
#ifdef LOWERSCOPE_HAVE_ONNX
#include <onnx/onnx_pb.h>
#endif

using namespace ls;
namespace fs = std::filesystem;

namespace {
std::string data(const std::string& rel) { return std::string(LS_TEST_DATA) + "/" + rel; }

std::string tmpfile(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("ls_import_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return (d / name).string();
}

// Expects `f` to throw std::runtime_error whose message contains every one of `needles`.
template <typename F>
void expect_error(F f, std::initializer_list<const char*> needles) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    for (const char* n : needles) QVERIFY2(std::string(e.what()).find(n) != std::string::npos, e.what());
    return;
  }
  QFAIL("no error");
}

#ifdef LOWERSCOPE_HAVE_LIBZIP
// Copies a .pt2 archive, replacing the entry whose name ends with `suffix` by `mutate(old)`.
std::string mutate_pt2(const std::string& src, const std::string& out_name, const std::string& suffix,
                       const std::function<std::string(const std::string&)>& mutate) {
  int err = 0;
  zip_t* in = zip_open(src.c_str(), ZIP_RDONLY, &err);
  const std::string out_path = tmpfile(out_name);
  fs::remove(out_path);
  zip_t* out = zip_open(out_path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  std::list<std::string> keep;  // buffers must stay in place until zip_close
  for (zip_int64_t i = 0; i < zip_get_num_entries(in, 0); ++i) {
    const std::string name = zip_get_name(in, static_cast<zip_uint64_t>(i), 0);
    zip_stat_t st;
    zip_stat_index(in, static_cast<zip_uint64_t>(i), 0, &st);
    std::string bytes(st.size, '\0');
    zip_file_t* f = zip_fopen_index(in, static_cast<zip_uint64_t>(i), 0);
    zip_fread(f, bytes.data(), st.size);
    zip_fclose(f);
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) bytes = mutate(bytes);
    keep.push_back(bytes);
    zip_source_t* s = zip_source_buffer(out, keep.back().data(), keep.back().size(), 0);
    zip_file_add(out, name.c_str(), s, ZIP_FL_OVERWRITE);
  }
  zip_close(out);
  zip_discard(in);
  return out_path;
}
std::string mutate_json(const std::string& src, const std::string& out_name, const std::string& suffix,
                        const std::function<void(nlohmann::json&)>& m) {
  return mutate_pt2(src, out_name, suffix, [&](const std::string& s) {
    auto j = nlohmann::json::parse(s);
    m(j);
    return j.dump();
  });
}
#endif
}  // namespace

class TestImport : public QObject {
  Q_OBJECT
 private slots:
  void testEveryStageFileParses() {
    int files = 0;
    for (const auto& dir : fs::directory_iterator(data("stages")))
      for (const auto& f : fs::directory_iterator(dir)) {
        std::ifstream in(f.path());
        std::stringstream ss;
        ss << in.rdbuf();
        // The parser checks every annotated shape and dtype against our shape rules.
        const Graph g = import_fx_text(ss.str(), f.path().filename().string());
        QVERIFY2(g.nodes.size() > 1, f.path().c_str());
        ++files;
      }
    QVERIFY(files >= 30);
  }

  void testModelsMatchPyTorch_data() {
    QTest::addColumn<QString>("model");
    for (const char* m : {"softmax", "res_block", "cifar_net"}) {
      if (have_pt2()) QTest::newRow((std::string(m) + ".pt2").c_str()) << QString("models/%1/model.pt2").arg(m);
      if (have_onnx()) QTest::newRow((std::string(m) + ".onnx").c_str()) << QString("models/%1/model.onnx").arg(m);
    }
  }
  void testModelsMatchPyTorch() {
    QFETCH(QString, model);
    const LoadedModel m = load_model(data(model.toStdString()));
    QCOMPARE(m.inputs_from, std::string("in0.npy"));
    QCOMPARE(m.expected.size(), size_t(1));
    // The reference interpreter reproduces PyTorch's output from the file's own weights...
    const auto ref = run_reference(m.graph, m.inputs);
    const Comparison c = compare(ref.at(0), m.expected.at(0));
    QVERIFY2(c.ok, c.why.c_str());
    // ...and so do the compiled kernels.
    PipelineOptions o;
    o.timing_budget_ms = 10;
    const CompileResult r = run_pipeline(m, o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QVERIFY(r.check.ok);
    QCOMPARE(r.check.outputs.at(0).against, m.expected_from);
  }

  // Every stage graph decomposes to Core ATen (Core ATen ops, or prims if it was lower already)
  // and to prims (prims, plus the library calls PyTorch's prims graphs keep too).
  void testDecomposesToOpSets() {
    for (const auto& dir : fs::directory_iterator(data("stages")))
      for (const auto& f : fs::directory_iterator(dir)) {
        std::ifstream in(f.path());
        std::stringstream ss;
        ss << in.rdbuf();
        Graph aten, core, prims;
        try {
          aten = normalize_to_aten(import_fx_text(ss.str(), f.path().filename().string()));
          core = decompose(aten, level::core_aten);
          prims = decompose(aten, level::prims);
        } catch (const std::exception& e) {
          QFAIL((f.path().string() + ": " + e.what()).c_str());
        }
        for (const Node& n : core.nodes) {
          if (n.is_placeholder()) continue;
          if (!n.op->in(level::core_aten | level::prims) && n.op->kind != OpKind::getitem)
            QFAIL((f.path().string() + ": " + n.op->name + " in the Core ATen graph").c_str());
        }
        for (const Node& n : prims.nodes) {
          if (n.is_placeholder()) continue;
          if (!(n.op->in(level::prims) && n.op->kind != OpKind::composite) && n.op->kind != OpKind::extern_kernel &&
              n.op->kind != OpKind::getitem)
            QFAIL((f.path().string() + ": " + n.op->name + " in the prims graph").c_str());
        }
      }
  }

  // Every op PyTorch's own Core ATen and prims graphs used is one our table knows.
  void testPyTorchOpSetsAreKnown() {
    int ops = 0;
    for (const auto& dir : fs::directory_iterator(data("ops")))
      for (const auto& f : fs::directory_iterator(dir)) {
        std::ifstream in(f.path());
        std::string line;
        while (std::getline(in, line)) {
          if (line.empty()) continue;
          if (line == "<built-in function getitem>") line = "getitem";
          QVERIFY2(find_op(line) != nullptr, (f.path().string() + ": " + line).c_str());
          ++ops;
        }
      }
    QVERIFY(ops > 40);
  }

  // The numbers stay PyTorch's at every level: ATen, Core ATen and prims graphs of the real models.
  void testNumericsAtEveryLevel() {
    for (const char* m : {"softmax", "res_block", "cifar_net"}) {
      const std::string path = data(std::string("models/") + m + (have_pt2() ? "/model.pt2" : "/model.onnx"));
      const LoadedModel lm = load_model(path);
      const Graph aten = normalize_to_aten(lm.graph);
      for (const Graph* g : {&aten}) {
        const Graph core = decompose(*g, level::core_aten), prims = decompose(*g, level::prims);
        for (const Graph* level : {g, &core, &prims}) {
          const Comparison c = compare(run_reference(*level, lm.inputs).at(0), lm.expected.at(0));
          QVERIFY2(c.ok, (std::string(m) + ": " + c.why).c_str());
        }
      }
    }
  }

  void testPt2Details() {
    if (!have_pt2()) QSKIP("built without libzip");
    const Graph g = import_pt2(data("models/res_block/model.pt2"));
    int params = 0, buffers = 0, users = 0;
    for (int id : g.inputs()) {
      const Node& n = g.nodes[id];
      if (n.input_kind == InputKind::parameter) ++params;
      if (n.input_kind == InputKind::buffer) ++buffers;
      if (n.input_kind == InputKind::user) ++users;
      if (n.input_kind != InputKind::user) QVERIFY2(g.weights.count(n.name), n.name.c_str());
    }
    QCOMPARE(users, 1);
    QVERIFY(params >= 4);
    QVERIFY(buffers >= 4);  // running means and variances
    bool module_path = false;
    for (const Node& n : g.nodes) module_path = module_path || n.module_path == "conv1";
    QVERIFY(module_path);
  }

  void testMalformedFiles() {
    expect_error([] { load_model(data("bad/not_a_zip.pt2")); }, {"not_a_zip.pt2"});
    expect_error([] { load_model(data("bad/truncated.pt2")); }, {"truncated.pt2"});
    expect_error([] { load_model(data("bad/truncated.onnx")); }, {"truncated.onnx"});
    expect_error([] { load_model(data("bad/garbage.onnx")); }, {"garbage.onnx", "not a valid ONNX model"});
    expect_error([] { load_model(data("bad/does_not_exist.onnx")); }, {"no such file"});
  }

#ifdef LOWERSCOPE_HAVE_LIBZIP
  void testHostilePt2() {
    const std::string soft = data("models/softmax/model.pt2"), res = data("models/res_block/model.pt2");
    using J = nlohmann::json;
    expect_error([&] { import_pt2(mutate_pt2(soft, "bad_json.pt2", "models/model.json", [](const std::string&) { return "{\"graph_module\": [1, 2"; })); },
                 {"bad_json.pt2", "invalid JSON"});
    expect_error([&] { import_pt2(mutate_json(soft, "wrong_type.pt2", "models/model.json", [](J& j) { j["graph_module"]["graph"]["nodes"][0]["target"] = 42; })); },
                 {"wrong_type.pt2", "node.target", "expected a string"});
    // An op we lack: kept with the metadata the archive records, so the model still opens (the
    // pipeline stops at it: test_core testMissingOpStopsAtAten); without that metadata, an error.
    {
      J first;
      const Graph g = import_pt2(mutate_json(soft, "unknown_op.pt2", "models/model.json", [&](J& j) {
        j["graph_module"]["graph"]["nodes"][0]["target"] = "torch.ops.aten.frobnicate.default";
        first = j["graph_module"]["graph"]["nodes"][0];
      }));
      const std::string name = first["outputs"][0]["as_tensor"]["name"].get<std::string>();
      QVERIFY(g.find(name) >= 0);
      QVERIFY(g.nodes[g.find(name)].op == &op::missing());
      QCOMPARE(QString::fromStdString(g.nodes[g.find(name)].target), QString("torch.ops.aten.frobnicate.default"));
    }
    expect_error([&] { import_pt2(mutate_json(soft, "unknown_op_no_meta.pt2", "models/model.json", [](J& j) {
                   J& n = j["graph_module"]["graph"]["nodes"][0];
                   n["target"] = "torch.ops.aten.frobnicate.default";
                   j["graph_module"]["graph"]["tensor_values"].erase(n["outputs"][0]["as_tensor"]["name"].get<std::string>());
                 })); },
                 {"unknown op 'torch.ops.aten.frobnicate.default'", "no recorded metadata"});
    expect_error([&] { import_pt2(mutate_json(soft, "huge.pt2", "models/model.json", [](J& j) {
                   for (auto& [k, v] : j["graph_module"]["graph"]["tensor_values"].items()) v["sizes"][0] = {{"as_int", int64_t(1) << 50}};
                 })); },
                 {"huge.pt2", "out of range"});
    expect_error([&] { import_pt2(mutate_json(soft, "negative.pt2", "models/model.json", [](J& j) {
                   for (auto& [k, v] : j["graph_module"]["graph"]["tensor_values"].items()) v["sizes"][0] = {{"as_int", -3}};
                 })); },
                 {"negative.pt2", "out of range"});
    expect_error([&] { import_pt2(mutate_json(soft, "cyclic.pt2", "models/model.json", [](J& j) {
                   auto& nodes = j["graph_module"]["graph"]["nodes"];
                   nodes[0]["inputs"][0]["arg"] = {{"as_tensor", {{"name", nodes.back()["outputs"][0]["as_tensor"]["name"]}}}};
                 })); },
                 {"cyclic.pt2", "used before it is defined"});
    expect_error([&] { import_pt2(mutate_json(res, "pickled.pt2", "model_weights_config.json", [](J& j) {
                   for (auto& [k, v] : j["config"].items()) v["use_pickle"] = true;
                 })); },
                 {"pickled.pt2", "pickles are never loaded"});
    expect_error([&] { import_pt2(mutate_json(res, "traversal.pt2", "model_weights_config.json", [](J& j) {
                   for (auto& [k, v] : j["config"].items()) v["path_name"] = "../../etc/passwd";
                 })); },
                 {"traversal.pt2", "leaves the weights folder"});
    expect_error([&] { import_pt2(mutate_pt2(res, "short.pt2", "weights/weight_0", [](const std::string& s) { return s.substr(0, 10); })); },
                 {"short.pt2", "holds 10 bytes"});
  }
#endif

#ifdef LOWERSCOPE_HAVE_ONNX
  void testHostileOnnx() {
    auto write = [](const onnx::ModelProto& m, const std::string& name) {
      const std::string p = tmpfile(name);
      std::ofstream f(p, std::ios::binary);
      m.SerializeToOstream(&f);
      return p;
    };
    auto base = [] {
      onnx::ModelProto m;
      m.set_ir_version(8);
      m.add_opset_import()->set_version(18);
      auto* g = m.mutable_graph();
      g->set_name("g");
      auto* in = g->add_input();
      in->set_name("x");
      in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
      in->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(4);
      auto* n = g->add_node();
      n->set_op_type("Relu");
      n->add_input("x");
      n->add_output("y");
      g->add_output()->set_name("y");
      return m;
    };
    {  // the valid base model runs
      const Graph g = import_onnx(write(base(), "ok.onnx"));
      QCOMPARE(g.nodes.size(), size_t(2));
    }
    {  // an op we lack, its output's type not recorded: an error naming the op and the output
      auto m = base();
      m.mutable_graph()->mutable_node(0)->set_op_type("Frobnicate");
      expect_error([&] { import_onnx(write(m, "unknown.onnx")); },
                   {"unknown.onnx", "op 'Frobnicate' is not supported", "no type for its output 'y'"});
    }
    {  // recorded (the graph output's type): the node is kept, so the model opens, and the pipeline
       // stops at it naming the node and the op
      auto m = base();
      m.mutable_graph()->mutable_node(0)->set_op_type("Frobnicate");
      auto* t = m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type();
      t->set_elem_type(onnx::TensorProto::FLOAT);
      t->mutable_shape()->add_dim()->set_dim_value(4);
      const std::string path = write(m, "unknown_typed.onnx");
      const Graph g = import_onnx(path);
      const int y = g.find("y");
      QVERIFY(y >= 0);
      QVERIFY(g.nodes[y].op == &op::missing());
      QCOMPARE(QString::fromStdString(g.nodes[y].target), QString("onnx.Frobnicate"));
      const CompileResult r = run_pipeline(load_model(path));
      QCOMPARE(QString::fromStdString(r.error_stage), QString("aten"));
      QVERIFY2(r.error.find("node 'y' calls onnx.Frobnicate") != std::string::npos, r.error.c_str());
    }
    {
      auto m = base();
      auto* t = m.mutable_graph()->add_initializer();
      t->set_name("w");
      t->set_data_type(onnx::TensorProto::FLOAT);
      t->add_dims(-5);
      expect_error([&] { import_onnx(write(m, "negdim.onnx")); }, {"negdim.onnx", "initializer 'w'", "negative dimension"});
    }
    {
      auto m = base();
      auto* t = m.mutable_graph()->add_initializer();
      t->set_name("w");
      t->set_data_type(onnx::TensorProto::FLOAT);
      t->add_dims(1 << 30);
      t->add_dims(1 << 30);
      expect_error([&] { import_onnx(write(m, "hugedim.onnx")); }, {"hugedim.onnx", "too large"});
    }
    {
      auto m = base();
      auto* t = m.mutable_graph()->add_initializer();
      t->set_name("w");
      t->set_data_type(onnx::TensorProto::FLOAT);
      t->add_dims(4);
      t->set_data_location(onnx::TensorProto::EXTERNAL);
      auto* kv = t->add_external_data();
      kv->set_key("location");
      kv->set_value("../../etc/passwd");
      expect_error([&] { import_onnx(write(m, "outside.onnx")); }, {"outside.onnx", "outside the model's folder"});
    }
    {
      auto m = base();
      m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("batch");
      expect_error([&] { import_onnx(write(m, "symbolic.onnx")); }, {"symbolic.onnx", "'batch' is symbolic"});
    }
    {
      auto m = base();
      m.mutable_graph()->mutable_node(0)->set_input(0, "nowhere");
      expect_error([&] { import_onnx(write(m, "undefined.onnx")); }, {"undefined.onnx", "'nowhere'"});
    }
  }
#endif
};

QTEST_GUILESS_MAIN(TestImport)
#include "test_import.moc"
