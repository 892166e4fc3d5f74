// The embedded CPython and `_lowerscope`, the native module under our `torch`: tensors' storage,
// one-op graphs run by the reference interpreter (eager mode) and differentiated by the derivative
// rules (autograd), and whole captured graphs handed to the pipeline (torch.compile).
#include <Python.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "autodiff/joint.h"
#include "dynamic/retarget.h"
#include "frontend/fx_text.h"
#include "interp/reference.h"
#include "ops/print.h"
#include "script/script.h"
#include "tensor/npy.h"

// The Python sources of our `torch`, embedded at build time (core/script/python/).
extern const char kPyTorch[];
extern const char kPyTorchFunctions[];
extern const char kPyTorchNn[];
extern const char kPyTorchNnFunctional[];
extern const char kPyTorchOptim[];
extern const char kPyTorchDynamo[];
extern const char kPyLowerscope[];
extern const char kPyRunner[];

namespace ls {

namespace {

// ---- state of the running script ------------------------------------------------------------

struct Session {
  ScriptOptions options;
  std::string output;
  std::string guard_failure;  // the last run()'s broken guard (dynamic compiles)
  std::vector<std::shared_ptr<CompileResult>> results;
  std::mt19937_64 rng{0};
};
Session* g_session = nullptr;
std::atomic<unsigned long> g_thread{0};
std::atomic<bool> g_running{false};
std::mutex g_run_mutex;  // one script at a time

// ---- tensors as capsules ---------------------------------------------------------------------

const char* kCapsule = "ls.Tensor";

void free_capsule(PyObject* cap) { delete static_cast<Tensor*>(PyCapsule_GetPointer(cap, kCapsule)); }
PyObject* wrap(Tensor t) { return PyCapsule_New(new Tensor(std::move(t)), kCapsule, free_capsule); }
const Tensor& unwrap(PyObject* o) {
  auto* t = static_cast<Tensor*>(PyCapsule_GetPointer(o, kCapsule));
  if (!t) throw std::invalid_argument("expected a tensor buffer");
  return *t;
}

// Python errors from C++ exceptions: the message is what the user reads.
struct PyFail {};

Shape shape_of(PyObject* seq) {
  Shape s;
  PyObject* fast = PySequence_Fast(seq, "a shape must be a sequence of ints");
  if (!fast) throw PyFail{};
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  for (Py_ssize_t i = 0; i < n; ++i) s.push_back(PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i)));
  Py_DECREF(fast);
  if (PyErr_Occurred()) throw PyFail{};
  return s;
}
PyObject* shape_tuple(const Shape& s) {
  PyObject* t = PyTuple_New(static_cast<Py_ssize_t>(s.size()));
  for (size_t i = 0; i < s.size(); ++i) PyTuple_SET_ITEM(t, static_cast<Py_ssize_t>(i), PyLong_FromLongLong(s[i]));
  return t;
}
DType dtype_of(const char* s) {
  auto d = dtype_from_short(s);
  if (!d) throw std::invalid_argument(std::string("unknown dtype '") + s + "'");
  return *d;
}
std::string dtype_str(DType d) { return std::string(dtype_short(d)); }

template <class F>
PyObject* guarded(F&& f) {
  try {
    return f();
  } catch (const PyFail&) {
    return nullptr;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

// Runs f with the GIL released (so another thread can stop the script), and takes it back
// whether f returns or throws.
template <class F>
auto without_gil(F&& f) {
  PyThreadState* saved = PyEval_SaveThread();
  try {
    auto r = f();
    PyEval_RestoreThread(saved);
    return r;
  } catch (...) {
    PyEval_RestoreThread(saved);
    throw;
  }
}

// ---- one-op graphs (eager mode and its autograd) ---------------------------------------------

struct OneOp {
  Graph graph;      // placeholders a0.., the node `out`, and its outputs returned
  int out = -1;
  std::unique_ptr<JointGraph> joint;  // built on the first backward
};

std::string annotation(const std::string& dtype, const Shape& s) { return dtype + shape_str(s); }

// The text of a graph computing `expr` from placeholders a0, a1, ...
std::string one_op_text(const std::string& expr, const std::vector<std::pair<std::string, Shape>>& metas, int nout) {
  std::string t = "class GraphModule(torch.nn.Module):\n    def forward(self";
  for (size_t i = 0; i < metas.size(); ++i)
    t += ", a" + std::to_string(i) + ": \"" + annotation(metas[i].first, metas[i].second) + "\"";
  t += "):\n        out = " + expr + "\n";
  std::string ret;
  if (nout <= 1) {
    ret = "out,";
  } else {
    for (int k = 0; k < nout; ++k) {
      t += "        o" + std::to_string(k) + " = out[" + std::to_string(k) + "]\n";
      ret += "o" + std::to_string(k) + ", ";
    }
  }
  return t + "        return (" + ret + ")\n";
}

OneOp& one_op(const std::string& expr, const std::vector<std::pair<std::string, Shape>>& metas) {
  static std::map<std::string, std::unique_ptr<OneOp>> cache;
  std::string key = expr;
  for (const auto& [d, s] : metas) key += "|" + annotation(d, s);
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;
  if (cache.size() > 4096) cache.clear();
  // First with one output, to learn how many the op has; then the graph that returns them all.
  Graph probe = import_fx_text(one_op_text(expr, metas, 1), "<eager>");
  const int nout = static_cast<int>(probe.nodes.at(probe.find("out")).outs.size());
  auto op = std::make_unique<OneOp>();
  op->graph = nout == 1 ? std::move(probe) : import_fx_text(one_op_text(expr, metas, nout), "<eager>");
  op->out = op->graph.find("out");
  return *cache.emplace(key, std::move(op)).first->second;
}

std::vector<std::pair<std::string, Shape>> metas_of(PyObject* list) {
  std::vector<std::pair<std::string, Shape>> m;
  PyObject* fast = PySequence_Fast(list, "metas must be a list");
  if (!fast) throw PyFail{};
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast); ++i) {
    PyObject* item = PySequence_Fast_GET_ITEM(fast, i);
    const char* d = PyUnicode_AsUTF8(PyTuple_GetItem(item, 0));
    if (!d) {
      Py_DECREF(fast);
      throw PyFail{};
    }
    m.emplace_back(d, shape_of(PyTuple_GetItem(item, 1)));
  }
  Py_DECREF(fast);
  return m;
}

std::vector<Tensor> tensors_of(PyObject* list, bool allow_none = false) {
  std::vector<Tensor> v;
  PyObject* fast = PySequence_Fast(list, "expected a list of buffers");
  if (!fast) throw PyFail{};
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast); ++i) {
    PyObject* o = PySequence_Fast_GET_ITEM(fast, i);
    if (o == Py_None && allow_none) v.emplace_back();
    else v.push_back(unwrap(o));
  }
  Py_DECREF(fast);
  return v;
}

PyObject* buffers_list(const std::vector<Tensor>& ts) {
  PyObject* l = PyList_New(static_cast<Py_ssize_t>(ts.size()));
  for (size_t i = 0; i < ts.size(); ++i) {
    if (ts[i].defined()) PyList_SET_ITEM(l, static_cast<Py_ssize_t>(i), wrap(ts[i]));
    else {
      Py_INCREF(Py_None);
      PyList_SET_ITEM(l, static_cast<Py_ssize_t>(i), Py_None);
    }
  }
  return l;
}

// stmt(expr, metas, buffers or None) -> [(dtype, shape, buffer or None)] for each output of expr.
PyObject* py_stmt(PyObject*, PyObject* args) {
  const char* expr;
  PyObject *metas, *bufs;
  if (!PyArg_ParseTuple(args, "sOO", &expr, &metas, &bufs)) return nullptr;
  return guarded([&]() -> PyObject* {
    OneOp& op = one_op(expr, metas_of(metas));
    const Node& n = op.graph.nodes.at(op.out);
    std::vector<Tensor> values;
    if (bufs != Py_None) {
      const std::vector<Tensor> in = tensors_of(bufs);
      values = without_gil([&] { return run_reference(op.graph, in); });
    }
    PyObject* l = PyList_New(static_cast<Py_ssize_t>(n.outs.size()));
    for (size_t k = 0; k < n.outs.size(); ++k) {
      PyObject* buf = values.empty() ? (Py_INCREF(Py_None), Py_None) : wrap(values.at(k));
      PyList_SET_ITEM(l, static_cast<Py_ssize_t>(k),
                      Py_BuildValue("(sNN)", dtype_str(n.outs[k].dtype).c_str(), shape_tuple(n.outs[k].shape), buf));
    }
    return l;
  });
}

// vjp(expr, metas, buffers, output grads or None) -> [grad or None] per input.
PyObject* py_vjp(PyObject*, PyObject* args) {
  const char* expr;
  PyObject *metas, *bufs, *grads;
  if (!PyArg_ParseTuple(args, "sOOO", &expr, &metas, &bufs, &grads)) return nullptr;
  return guarded([&]() -> PyObject* {
    const auto m = metas_of(metas);
    OneOp& op = one_op(expr, m);
    if (!op.joint) op.joint = std::make_unique<JointGraph>(build_joint(op.graph));
    const JointGraph& j = *op.joint;
    std::vector<Tensor> in = tensors_of(bufs);
    const std::vector<Tensor> g = tensors_of(grads, true);
    for (size_t k = 0; k < j.tangents.size(); ++k) {
      const size_t of = static_cast<size_t>(j.tangent_of[k]);
      if (of < g.size() && g[of].defined()) in.push_back(g[of]);
      else {
        const TensorMeta& tm = j.graph.nodes.at(j.graph.find(j.tangents[k])).meta();
        in.emplace_back(tm.dtype, tm.shape);
      }
    }
    const std::vector<Tensor> out = without_gil([&] { return run_reference(j.graph, in); });
    std::vector<Tensor> per_input(m.size());
    for (size_t k = 0; k < j.grad_of.size(); ++k) {
      const size_t o = static_cast<size_t>(j.num_forward_outputs) + k;
      if (j.graph.outputs.at(o) < 0 || o >= out.size()) continue;
      const size_t input = static_cast<size_t>(std::stoi(j.grad_of[k].substr(1)));
      if (input < per_input.size()) per_input[input] = out[o];
    }
    return buffers_list(per_input);
  });
}

// ---- buffers ----------------------------------------------------------------------------------

PyObject* py_buffer(PyObject*, PyObject* args) {  // buffer(dtype, shape, flat values)
  const char* dt;
  PyObject *shape, *values;
  if (!PyArg_ParseTuple(args, "sOO", &dt, &shape, &values)) return nullptr;
  return guarded([&]() -> PyObject* {
    Tensor t(dtype_of(dt), shape_of(shape));
    PyObject* fast = PySequence_Fast(values, "values must be a sequence");
    if (!fast) throw PyFail{};
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n != t.numel()) {
      Py_DECREF(fast);
      throw std::invalid_argument("expected " + std::to_string(t.numel()) + " values, got " + std::to_string(n));
    }
    for (Py_ssize_t i = 0; i < n; ++i) t.set(i, PyFloat_AsDouble(PySequence_Fast_GET_ITEM(fast, i)));
    Py_DECREF(fast);
    if (PyErr_Occurred()) throw PyFail{};
    return wrap(std::move(t));
  });
}

PyObject* py_full(PyObject*, PyObject* args) {  // full(dtype, shape, value)
  const char* dt;
  PyObject* shape;
  double v;
  if (!PyArg_ParseTuple(args, "sOd", &dt, &shape, &v)) return nullptr;
  return guarded([&]() -> PyObject* {
    Tensor t(dtype_of(dt), shape_of(shape));
    if (v != 0)
      for (int64_t i = 0; i < t.numel(); ++i) t.set(i, v);
    return wrap(std::move(t));
  });
}

PyObject* py_random(PyObject*, PyObject* args) {  // random(kind, shape, a, b): normal(a, b) | uniform[a, b)
  const char* kind;
  PyObject* shape;
  double a, b;
  if (!PyArg_ParseTuple(args, "sOdd", &kind, &shape, &a, &b)) return nullptr;
  return guarded([&]() -> PyObject* {
    Tensor t(DType::f32, shape_of(shape));
    float* p = static_cast<float*>(t.data());
    if (std::string(kind) == "normal") {
      std::normal_distribution<float> d(static_cast<float>(a), static_cast<float>(b));
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = d(g_session->rng);
    } else {
      std::uniform_real_distribution<float> d(static_cast<float>(a), static_cast<float>(b));
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = d(g_session->rng);
    }
    return wrap(std::move(t));
  });
}

PyObject* py_seed(PyObject*, PyObject* args) {
  unsigned long long s;
  if (!PyArg_ParseTuple(args, "K", &s)) return nullptr;
  g_session->rng.seed(s);
  Py_RETURN_NONE;
}

PyObject* py_tolist(PyObject*, PyObject* args) {  // tolist(buffer) -> flat list of Python numbers
  PyObject* b;
  if (!PyArg_ParseTuple(args, "O", &b)) return nullptr;
  return guarded([&]() -> PyObject* {
    const Tensor& t = unwrap(b);
    PyObject* l = PyList_New(t.numel());
    const bool fl = dtype_is_float(t.dtype()), bl = t.dtype() == DType::b8;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double v = t.get(i);
      PyList_SET_ITEM(l, i, fl ? PyFloat_FromDouble(v) : bl ? PyBool_FromLong(v != 0) : PyLong_FromLongLong(static_cast<long long>(v)));
    }
    return l;
  });
}

PyObject* py_load_npy(PyObject*, PyObject* args) {
  const char* path;
  if (!PyArg_ParseTuple(args, "s", &path)) return nullptr;
  return guarded([&]() -> PyObject* {
    Tensor t = load_npy(path);
    return Py_BuildValue("(sNN)", dtype_str(t.dtype()).c_str(), shape_tuple(t.shape()), wrap(t));
  });
}

PyObject* py_save_npy(PyObject*, PyObject* args) {
  const char* path;
  PyObject* b;
  if (!PyArg_ParseTuple(args, "sO", &path, &b)) return nullptr;
  return guarded([&]() -> PyObject* {
    save_npy(path, unwrap(b));
    Py_RETURN_NONE;
  });
}

// ---- compiled graphs ---------------------------------------------------------------------------

// compile(text, name, buffers, train[, dynamic]) -> dict: id, outputs, num_forward, tangent_of,
// grad_of, dynamic, ... dynamic: as torch.compile(dynamic=True), the inputs' sizes become symbols
// (inference graphs; a training step is compiled for its sizes).
PyObject* py_compile(PyObject*, PyObject* args) {
  const char *text, *name;
  PyObject* bufs;
  int train, dynamic = 0;
  if (!PyArg_ParseTuple(args, "ssOp|p", &text, &name, &bufs, &train, &dynamic)) return nullptr;
  return guarded([&]() -> PyObject* {
    LoadedModel m;
    m.path = name;
    m.format = "python-capture";
    m.graph = import_fx_text(text, name);
    m.inputs = tensors_of(bufs);
    m.inputs_from = "the call's arguments";
    PipelineOptions o;
    o.device = parse_device(g_session->options.device);
    o.fusion = g_session->options.fusion;
    o.train = train != 0;
    o.dynamic = dynamic != 0 && !o.train;
    o.keep_program = true;
    o.timing_budget_ms = 20;
    auto r = without_gil([&] { return std::make_shared<CompileResult>(run_pipeline(std::move(m), o)); });
    if (!r->error.empty())
      throw std::runtime_error("compiling " + std::string(name) + " failed at stage '" + r->error_stage + "': " + r->error);
    if (!r->program)
      throw std::runtime_error("compiled " + std::string(name) + " for " + device_name(o.device) + ", but it cannot run here" +
                               (r->not_run.empty() ? std::string() : ": " + r->not_run));
    g_session->results.push_back(r);
    PyObject* tangent_of = PyList_New(0);
    PyObject* grad_of = PyList_New(0);
    int num_forward = static_cast<int>(r->outputs.size());
    if (r->train) {
      const JointGraph& j = r->training.joint;
      num_forward = j.num_forward_outputs;
      for (int t : j.tangent_of) PyList_Append(tangent_of, PyLong_FromLong(t));
      const std::vector<int> users = r->model.graph.user_inputs();
      for (const std::string& g : j.grad_of) {
        long idx = -1;
        for (size_t u = 0; u < users.size(); ++u)
          if (r->model.graph.nodes[users[u]].name == g) idx = static_cast<long>(u);
        PyList_Append(grad_of, PyLong_FromLong(idx));
      }
    }
    std::string check = r->check.ok ? "ok" : "FAILED";
    if (!r->check.ok)
      for (const auto& c : r->check.reference)
        if (!c.cmp.ok) check += ": " + c.cmp.why;
    int generated = 0, externs = 0;
    for (const KernelReport& k : r->kernels) (k.kind == KernelKind::extern_call ? externs : generated)++;
    PyObject* size_guards = PyList_New(0);  // a dynamic compile's guards on its size symbols
    if (o.dynamic)
      for (const std::string& g : r->dynamic.guards()) {
        PyObject* t = PyUnicode_FromString(g.c_str());
        PyList_Append(size_guards, t);
        Py_DECREF(t);
      }
    return Py_BuildValue("{s:i,s:N,s:i,s:N,s:N,s:s,s:d,s:i,s:i,s:O,s:N}", "id", static_cast<int>(g_session->results.size() - 1),
                         "outputs", buffers_list(r->outputs), "num_forward", num_forward, "tangent_of", tangent_of,
                         "grad_of", grad_of, "check", check.c_str(), "compile_ms", r->compile_ms, "kernels", generated,
                         "externs", externs, "dynamic", o.dynamic ? Py_True : Py_False, "size_guards", size_guards);
  });
}

// run(id, buffers) -> outputs, or None where the inputs break a guard of a dynamic compile (then
// the caller recompiles; guard_failure() says which).
PyObject* py_run(PyObject*, PyObject* args) {
  int id;
  PyObject* bufs;
  if (!PyArg_ParseTuple(args, "iO", &id, &bufs)) return nullptr;
  return guarded([&]() -> PyObject* {
    auto& r = g_session->results.at(static_cast<size_t>(id));
    const std::vector<Tensor> in = tensors_of(bufs);
    g_session->guard_failure.clear();
    std::vector<Tensor> out;
    try {
      out = without_gil([&] { return r->program->run(in); });
    } catch (const GuardFailed& e) {
      g_session->guard_failure = e.what();
      Py_RETURN_NONE;
    } catch (const std::invalid_argument& e) {  // inputs of another shape than the code takes: as a failed guard
      g_session->guard_failure = std::string("guard failed: ") + e.what();
      Py_RETURN_NONE;
    }
    return buffers_list(out);
  });
}

PyObject* py_guard_failure(PyObject*, PyObject*) { return PyUnicode_FromString(g_session->guard_failure.c_str()); }

// same_graph(id, text): whether a new capture is compiled graph `id` at other input sizes: the
// compiled graph re-derived for the new capture's input sizes prints as the new capture does.
// Only then may a dynamic compile serve it (its guards checked by run()).
PyObject* py_same_graph(PyObject*, PyObject* args) {
  int id;
  const char* text;
  if (!PyArg_ParseTuple(args, "is", &id, &text)) return nullptr;
  return guarded([&]() -> PyObject* {
    const Graph& then = g_session->results.at(static_cast<size_t>(id))->model.graph;
    const Graph now = import_fx_text(text, "capture");
    std::vector<Shape> shapes;
    for (int u : now.user_inputs()) shapes.push_back(now.nodes[static_cast<size_t>(u)].meta().shape);
    bool same = false;
    try {
      same = shapes.size() == then.user_inputs().size() && print_readable(retarget_graph(then, shapes)) == print_readable(now);
    } catch (const std::invalid_argument&) {
      same = false;  // a size the graph cannot follow
    }
    return PyBool_FromLong(same);
  });
}

PyObject* py_write(PyObject*, PyObject* args) {
  const char* s;
  if (!PyArg_ParseTuple(args, "s", &s)) return nullptr;
  g_session->output += s;
  if (g_session->options.on_output) g_session->options.on_output(s);
  Py_RETURN_NONE;
}

PyMethodDef kMethods[] = {
    {"stmt", py_stmt, METH_VARARGS, "run or shape one op: stmt(expr, metas, buffers|None)"},
    {"vjp", py_vjp, METH_VARARGS, "gradients of one op: vjp(expr, metas, buffers, grads)"},
    {"buffer", py_buffer, METH_VARARGS, "buffer(dtype, shape, values)"},
    {"full", py_full, METH_VARARGS, "full(dtype, shape, value)"},
    {"random", py_random, METH_VARARGS, "random('normal'|'uniform', shape, a, b)"},
    {"seed", py_seed, METH_VARARGS, "seed(n)"},
    {"tolist", py_tolist, METH_VARARGS, "tolist(buffer)"},
    {"load_npy", py_load_npy, METH_VARARGS, "load_npy(path) -> (dtype, shape, buffer)"},
    {"save_npy", py_save_npy, METH_VARARGS, "save_npy(path, buffer)"},
    {"compile", py_compile, METH_VARARGS, "compile(text, name, buffers, train) -> dict"},
    {"run", py_run, METH_VARARGS, "run(id, buffers) -> outputs, or None where a guard fails"},
    {"guard_failure", py_guard_failure, METH_NOARGS, "guard_failure() -> why the last run found its guards broken"},
    {"same_graph", py_same_graph, METH_VARARGS, "same_graph(id, text) -> whether the capture is graph id at other sizes"},
    {"write", py_write, METH_VARARGS, "write(text): the script's output"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "_lowerscope", "Lowerscope's native core", -1, kMethods,
                       nullptr, nullptr, nullptr, nullptr};

PyObject* init_module() { return PyModule_Create(&kModule); }

void ensure_python() {
  static std::once_flag once;
  std::call_once(once, [] {
    PyImport_AppendInittab("_lowerscope", init_module);
    PyConfig config;
    PyConfig_InitIsolatedConfig(&config);
    config.install_signal_handlers = 0;
    config.site_import = 0;  // the system's packages (a real torch among them) stay out
    config.write_bytecode = 0;
    PyStatus st = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st))
      throw std::runtime_error(std::string("cannot start the embedded Python: ") + (st.err_msg ? st.err_msg : "unknown error"));
    PyEval_SaveThread();  // the GIL is taken per run, from whichever thread runs the script
  });
}

std::string str_of(PyObject* o) {
  if (!o) return {};
  PyObject* s = PyObject_Str(o);
  if (!s) {
    PyErr_Clear();
    return {};
  }
  const char* c = PyUnicode_AsUTF8(s);
  std::string r = c ? c : "";
  Py_DECREF(s);
  return r;
}
std::string item_str(PyObject* d, const char* key) { return str_of(PyDict_GetItemString(d, key)); }
long item_long(PyObject* d, const char* key) {
  PyObject* o = PyDict_GetItemString(d, key);
  return o ? PyLong_AsLong(o) : 0;
}

}  // namespace

bool have_python() { return true; }

void interrupt_script() {
  if (!g_running) return;
  PyGILState_STATE s = PyGILState_Ensure();
  if (g_running) PyThreadState_SetAsyncExc(g_thread, PyExc_KeyboardInterrupt);
  PyGILState_Release(s);
}

ScriptRun run_script(const std::string& source, const std::string& filename, const ScriptOptions& o) {
  std::lock_guard<std::mutex> lock(g_run_mutex);
  ScriptRun run;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    ensure_python();
  } catch (const std::exception& e) {
    run.error = e.what();
    return run;
  }
  Session session;
  session.options = o;
  g_session = &session;
  PyGILState_STATE gil = PyGILState_Ensure();
  g_thread = PyThread_get_thread_ident();
  g_running = true;
  // The runner (core/script/python/runner.py) loads our torch afresh and runs the script.
  PyObject* globals = PyDict_New();
  PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
  PyObject* result = nullptr;
  PyObject* code = Py_CompileString(kPyRunner, "<lowerscope runner>", Py_file_input);
  if (code) {
    PyObject* done = PyEval_EvalCode(code, globals, globals);
    Py_XDECREF(done);
    Py_DECREF(code);
  }
  PyObject* main = PyDict_GetItemString(globals, "main");
  if (main) {
    // torch is two files run as one module: its classes, then the functions of its namespace.
    const std::string torch = std::string(kPyTorch) + "\n" + kPyTorchFunctions;
    PyObject* sources = Py_BuildValue("{s:s,s:s,s:s,s:s,s:s,s:s}", "torch", torch.c_str(), "torch.nn", kPyTorchNn,
                                      "torch.nn.functional", kPyTorchNnFunctional, "torch.optim", kPyTorchOptim,
                                      "torch._dynamo", kPyTorchDynamo, "lowerscope", kPyLowerscope);
    result = PyObject_CallFunction(main, "ssO", source.c_str(), filename.c_str(), sources);
    Py_DECREF(sources);
  }
  g_running = false;
  if (!result) {
    // A failure of the runner itself (the script's own errors come back in the result).
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    run.error = "the Python runner failed: " + str_of(value ? value : type);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
  } else {
    run.ok = PyObject_IsTrue(PyDict_GetItemString(result, "ok")) == 1;
    run.error = item_str(result, "error");
    PyObject* graphs = PyDict_GetItemString(result, "graphs");
    for (Py_ssize_t i = 0; graphs && i < PyList_Size(graphs); ++i) {
      PyObject* g = PyList_GetItem(graphs, i);
      CapturedGraph c;
      c.id = static_cast<int>(item_long(g, "id"));
      c.function = item_str(g, "function");
      c.location = item_str(g, "location");
      c.graph_text = item_str(g, "text");
      c.reason = item_str(g, "reason");
      c.recompile = PyObject_IsTrue(PyDict_GetItemString(g, "recompile")) == 1;
      c.train = PyObject_IsTrue(PyDict_GetItemString(g, "train")) == 1;
      c.calls = static_cast<int>(item_long(g, "calls"));
      c.dynamic = PyObject_IsTrue(PyDict_GetItemString(g, "dynamic")) == 1;
      PyObject* sizes = PyDict_GetItemString(g, "sizes");
      for (Py_ssize_t k = 0; sizes && k < PyList_Size(sizes); ++k) {
        PyObject* shape = PyList_GetItem(sizes, k);
        std::string text;
        for (Py_ssize_t d = 0; PyTuple_Check(shape) && d < PyTuple_Size(shape); ++d)
          text += (d ? "x" : "") + std::to_string(PyLong_AsLong(PyTuple_GetItem(shape, d)));
        c.sizes.push_back(text);
      }
      PyObject* guards = PyDict_GetItemString(g, "guards");
      for (Py_ssize_t k = 0; guards && k < PyList_Size(guards); ++k) c.guards.push_back(str_of(PyList_GetItem(guards, k)));
      const long rid = item_long(g, "result");
      if (rid >= 0 && static_cast<size_t>(rid) < session.results.size()) c.result = session.results[static_cast<size_t>(rid)];
      run.recompiles += c.recompile ? 1 : 0;
      run.graphs.push_back(std::move(c));
    }
    PyObject* breaks = PyDict_GetItemString(result, "breaks");
    for (Py_ssize_t i = 0; breaks && i < PyList_Size(breaks); ++i) {
      PyObject* b = PyList_GetItem(breaks, i);
      run.breaks.push_back({item_str(b, "function"), item_str(b, "reason"), item_str(b, "location"), item_str(b, "code")});
    }
    Py_DECREF(result);
  }
  Py_DECREF(globals);
  PyErr_Clear();
  PyGILState_Release(gil);
  g_session = nullptr;
  run.output = std::move(session.output);
  run.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return run;
}

std::string script_report_json(const ScriptRun& r) {
  using nlohmann::json;
  json j;
  j["ok"] = r.ok;
  j["error"] = r.error;
  j["output"] = r.output;
  j["graph_count"] = r.graphs.size();
  j["graph_break_count"] = r.breaks.size();
  j["recompiles"] = r.recompiles;
  j["ms"] = r.ms;
  j["graphs"] = json::array();
  for (const CapturedGraph& g : r.graphs) {
    json e = {{"id", g.id},         {"function", g.function}, {"location", g.location}, {"text", g.graph_text},
              {"guards", g.guards}, {"reason", g.reason},     {"recompile", g.recompile}, {"train", g.train},
              {"dynamic", g.dynamic}, {"sizes", g.sizes},
              {"calls", g.calls}};
    if (g.result) {
      const CompileResult& c = *g.result;
      int generated = 0, externs = 0;
      for (const KernelReport& k : c.kernels) (k.kind == KernelKind::extern_call ? externs : generated)++;
      json ops = json::object();
      for (const auto& [op, n] : op_histogram(c.model.graph)) ops[op] = n;
      e["ops"] = ops;
      e["kernels"] = generated;
      e["extern_calls"] = externs;
      e["compile_ms"] = c.compile_ms;
      e["run_ms"] = c.run_ms;
      e["check"] = c.check.ok ? "ok" : "failed";
      e["max_abs_err"] = c.check.max_abs_err;
    }
    j["graphs"].push_back(e);
  }
  j["breaks"] = json::array();
  for (const GraphBreak& b : r.breaks)
    j["breaks"].push_back({{"function", b.function}, {"reason", b.reason}, {"location", b.location}, {"code", b.code}});
  return j.dump(2);
}

}  // namespace ls
