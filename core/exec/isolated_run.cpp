#include "exec/isolated_run.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>

#include "compile/cpu_compiler.h"
#include "ops/op_table.h"

extern char** environ;

namespace ls {

namespace {

std::mutex isolation_mutex;
IsolationOptions isolation;
bool isolation_chosen = false;  // set_cpu_isolation was called; else the default below

// ---- The shared file: a header, the plan, then the data (inputs, outputs, results) ----

constexpr uint64_t kMagic = 0x4c5352554e4e4552ull;  // "LSRUNNER"
constexpr size_t kHeaderBytes = 16384;
constexpr int kChildFd = 3;  // where the worker finds the shared file

enum Phase : int32_t { starting = 0, loaded = 1, ran = 2, done = 3, failed = 4 };
enum ErrorKind : int32_t { runtime = 0, invalid_argument = 1, out_of_range = 2, logic = 3 };

struct Header {
  uint64_t magic;
  uint64_t plan_len;   // the plan follows the header
  uint64_t data_off;   // inputs, outputs and results: offsets in the plan are from here
  std::atomic<int64_t> progress[2];  // the kernel running now (-1: none yet), kernels started (CpuExecutable::follow)
  std::atomic<int32_t> phase;
  int32_t fault_signal;
  uint64_t fault_addr;
  int32_t error_kind;
  cpu_set_t cpus;  // the cores the worker may use: this process's at its start
  char error[8192];
};
static_assert(sizeof(Header) <= kHeaderBytes);

size_t align64(size_t n) { return (n + 63) & ~size_t(63); }

// This process's cores as it started, before an OpenMP runtime bound its main thread to one
// (OMP_PROC_BIND=spread, compile/cpu_compiler.h): a worker spawned from that thread would inherit
// the one core, and its OpenMP team would be one thread.
const cpu_set_t& initial_cpus() {
  static const cpu_set_t cpus = [] {
    cpu_set_t c;
    CPU_ZERO(&c);
    if (sched_getaffinity(0, sizeof c, &c) != 0)
      for (int i = 0; i < CPU_SETSIZE; ++i) CPU_SET(i, &c);
    return c;
  }();
  return cpus;
}
[[maybe_unused]] const bool initial_cpus_taken = (initial_cpus(), true);  // at static initialization, before main

// ---- The plan: what CpuExecutable needs, as a flat stream (ints and %a doubles as text, strings
// length-prefixed); the worker is the same binary, so enums travel as their values ----

class Writer {
 public:
  void i(int64_t v) { s_ += std::to_string(v) + ' '; }
  void f(double v) {
    char b[64];
    std::snprintf(b, sizeof b, "%a ", v);
    s_ += b;
  }
  void str(const std::string& v) {
    i(static_cast<int64_t>(v.size()));
    s_ += v;
  }
  void ints(const std::vector<int64_t>& v) {
    i(static_cast<int64_t>(v.size()));
    for (int64_t x : v) i(x);
  }
  void strs(const std::vector<std::string>& v) {
    i(static_cast<int64_t>(v.size()));
    for (const auto& x : v) str(x);
  }
  void arg(const Arg& a) {
    i(static_cast<int64_t>(a.kind));
    i(a.node);
    i(a.i);
    f(a.f);
    i(a.b);
    str(a.s);
    i(static_cast<int64_t>(a.list.size()));
    for (const Arg& x : a.list) arg(x);
  }
  std::string& text() { return s_; }

 private:
  std::string s_;
};

class Reader {
 public:
  Reader(const char* p, size_t n) : p_(p), end_(p + n) {}
  int64_t i() {
    char* e = nullptr;
    const long long v = std::strtoll(p_, &e, 10);
    if (e == p_ || e >= end_) throw std::runtime_error("kernel worker: the run's plan is cut short");
    p_ = e + 1;
    return v;
  }
  double f() {
    char* e = nullptr;
    const double v = std::strtod(p_, &e);
    if (e == p_ || e >= end_) throw std::runtime_error("kernel worker: the run's plan is cut short");
    p_ = e + 1;
    return v;
  }
  size_t n() { return static_cast<size_t>(i()); }
  std::string str() {
    const size_t len = n();
    if (len > static_cast<size_t>(end_ - p_)) throw std::runtime_error("kernel worker: the run's plan is cut short");
    std::string v(p_, len);
    p_ += len;
    return v;
  }
  std::vector<int64_t> ints() {
    std::vector<int64_t> v(n());
    for (auto& x : v) x = i();
    return v;
  }
  std::vector<std::string> strs() {
    std::vector<std::string> v(n());
    for (auto& x : v) x = str();
    return v;
  }
  Arg arg() {
    Arg a;
    a.kind = static_cast<Arg::Kind>(i());
    a.node = static_cast<int>(i());
    a.i = i();
    a.f = f();
    a.b = i() != 0;
    a.s = str();
    a.list.resize(n());
    for (Arg& x : a.list) x = arg();
    return a;
  }

 private:
  const char* p_;
  const char* end_;
};

void write_extern(Writer& w, const ExternCall& c) {
  w.str(c.op ? c.op->name : "");
  w.i(static_cast<int64_t>(c.args.size()));
  for (const Arg& a : c.args) w.arg(a);
  w.strs(c.inputs);
  w.i(static_cast<int64_t>(c.transposed.size()));
  for (bool t : c.transposed) w.i(t);
  w.i(static_cast<int64_t>(c.shapes.size()));
  for (const Shape& s : c.shapes) w.ints(s);
  w.i(static_cast<int64_t>(c.strides.size()));
  for (const auto& s : c.strides) w.ints(s);
  w.ints(c.offsets);
  w.strs(c.outputs);
  w.i(static_cast<int64_t>(c.output_metas.size()));
  for (const TensorMeta& m : c.output_metas) {
    w.i(static_cast<int64_t>(m.dtype));
    w.ints(m.shape);
    w.ints(m.strides);
    w.str(m.device);
  }
}

ExternCall read_extern(Reader& r) {
  ExternCall c;
  const std::string op = r.str();
  if (!op.empty() && !(c.op = find_op(op))) throw std::runtime_error("kernel worker: no op " + op + " in its table");
  c.args.resize(r.n());
  for (Arg& a : c.args) a = r.arg();
  c.inputs = r.strs();
  c.transposed.resize(r.n());
  for (size_t k = 0; k < c.transposed.size(); ++k) c.transposed[k] = r.i() != 0;
  c.shapes.resize(r.n());
  for (Shape& s : c.shapes) s = r.ints();
  c.strides.resize(r.n());
  for (auto& s : c.strides) s = r.ints();
  c.offsets = r.ints();
  c.outputs = r.strs();
  c.output_metas.resize(r.n());
  for (TensorMeta& m : c.output_metas) {
    m.dtype = static_cast<DType>(r.i());
    m.shape = r.ints();
    m.strides = r.ints();
    m.device = r.str();
  }
  return c;
}

// Where the data lives (offsets from Header::data_off), beside the plan.
struct Layout {
  std::vector<int64_t> inputs;   // per input
  std::vector<int64_t> outputs;  // per program output; -1: none (an output that is no tensor)
  int64_t results = 0;           // total_ms, runs, kernel_ms[n], ran_inside[n], runs_template[n]
};

struct Plan {
  LoopProgram p;
  Schedule s;
  GeneratedSource src;
  std::vector<int64_t> sizes;
  std::vector<std::pair<std::string, std::string>> objects;
  std::vector<std::pair<DType, Shape>> input_metas;
  TimingOptions timing;
  Layout at;
};

std::string write_plan(const LoopProgram& p, const Schedule& s, const GeneratedSource& src,
                       const std::vector<std::pair<std::string, std::string>>& objects, const std::vector<int64_t>& sizes,
                       const std::vector<Tensor>& inputs, const TimingOptions& t, const Layout& at) {
  Writer w;
  w.i(static_cast<int64_t>(p.buffers.size()));
  for (const LoopBuffer& b : p.buffers) {
    w.str(b.name);
    w.i(static_cast<int64_t>(b.dtype));
    w.ints(b.shape);
    w.i(b.is_input);
    w.i(b.is_output);
  }
  w.strs(p.inputs);
  w.strs(p.outputs);
  // Every node, so that indices stay the same; bodies stay behind (the code is compiled).
  w.i(static_cast<int64_t>(p.nodes.size()));
  for (const LoopNode& n : p.nodes) {
    w.str(n.name);
    w.str(n.buffer);
    w.i(static_cast<int64_t>(n.kind));
    w.str(n.graph_node);
    if (n.kind == LoopNode::Kind::extern_kernel) write_extern(w, n.ext);
  }
  w.i(static_cast<int64_t>(s.kernels.size()));
  for (const Kernel& k : s.kernels) {
    w.str(k.name);
    w.i(k.is_extern);
    w.ints(std::vector<int64_t>(k.nodes.begin(), k.nodes.end()));
    w.i(k.epilogue);
  }
  w.i(static_cast<int64_t>(src.kernels.size()));
  for (const GeneratedKernel& k : src.kernels) {
    w.str(k.name);
    w.str(k.launcher);
    w.strs(k.args);
    w.str(k.rows_launcher);
  }
  w.ints(sizes);
  w.i(static_cast<int64_t>(objects.size()));
  for (const auto& [name, bytes] : objects) {
    w.str(name);
    w.str(bytes);
  }
  w.i(static_cast<int64_t>(inputs.size()));
  for (const Tensor& in : inputs) {
    w.i(static_cast<int64_t>(in.dtype()));
    w.ints(in.shape());
  }
  w.i(t.warmup);
  w.i(t.min_runs);
  w.i(t.max_runs);
  w.f(t.budget_ms);
  w.ints(at.inputs);
  w.ints(at.outputs);
  w.i(at.results);
  return std::move(w.text());
}

Plan read_plan(Reader& r) {
  Plan plan;
  LoopProgram& p = plan.p;
  p.buffers.resize(r.n());
  for (LoopBuffer& b : p.buffers) {
    b.name = r.str();
    b.dtype = static_cast<DType>(r.i());
    b.shape = r.ints();
    b.is_input = r.i() != 0;
    b.is_output = r.i() != 0;
  }
  p.inputs = r.strs();
  p.outputs = r.strs();
  p.nodes.resize(r.n());
  for (LoopNode& n : p.nodes) {
    n.name = r.str();
    n.buffer = r.str();
    n.kind = static_cast<LoopNode::Kind>(r.i());
    n.graph_node = r.str();
    if (n.kind == LoopNode::Kind::extern_kernel) n.ext = read_extern(r);
  }
  plan.s.kernels.resize(r.n());
  for (Kernel& k : plan.s.kernels) {
    k.name = r.str();
    k.is_extern = r.i() != 0;
    for (int64_t n : r.ints()) k.nodes.push_back(static_cast<int>(n));
    k.epilogue = r.i() != 0;
  }
  plan.src.kernels.resize(r.n());
  for (GeneratedKernel& k : plan.src.kernels) {
    k.name = r.str();
    k.launcher = r.str();
    k.args = r.strs();
    k.rows_launcher = r.str();
  }
  plan.sizes = r.ints();
  plan.objects.resize(r.n());
  for (auto& [name, bytes] : plan.objects) {
    name = r.str();
    bytes = r.str();
  }
  plan.input_metas.resize(r.n());
  for (auto& [dtype, shape] : plan.input_metas) {
    dtype = static_cast<DType>(r.i());
    shape = r.ints();
  }
  plan.timing.warmup = static_cast<int>(r.i());
  plan.timing.min_runs = static_cast<int>(r.i());
  plan.timing.max_runs = static_cast<int>(r.i());
  plan.timing.budget_ms = r.f();
  plan.at.inputs = r.ints();
  plan.at.outputs = r.ints();
  plan.at.results = r.i();
  return plan;
}

// ---- The parent's side ----

std::string default_runner() {
  if (const char* e = std::getenv("LOWERSCOPE_RUNNER"); e && *e) return e;
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "lowerscope-runner" : (self.parent_path() / "lowerscope-runner").string();
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    default: return "signal " + std::to_string(sig);
  }
}

std::string seconds_text(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", s);
  return b;
}

// The shared file, mapped; closed and unmapped on every way out.
struct SharedFile {
  int fd = -1;
  char* base = nullptr;
  size_t bytes = 0;
  ~SharedFile() {
    if (base) munmap(base, bytes);
    if (fd >= 0) close(fd);
  }
};

}  // namespace

void set_cpu_isolation(const IsolationOptions& o) {
  std::lock_guard<std::mutex> lk(isolation_mutex);
  isolation = o;
  isolation_chosen = true;
}

IsolationOptions cpu_isolation() {
  std::lock_guard<std::mutex> lk(isolation_mutex);
  if (!isolation_chosen) {
    // The programs (lowerscope, lowerscope-cli) have the worker beside them; the test programs do
    // not, and run in-process unless they choose. LOWERSCOPE_IN_PROCESS=1 keeps any program in-process.
    const char* in_process = std::getenv("LOWERSCOPE_IN_PROCESS");
    std::error_code ec;
    isolation.enabled = !(in_process && *in_process && std::string(in_process) != "0") &&
                        std::filesystem::exists(default_runner(), ec);
    isolation_chosen = true;
  }
  return isolation;
}

bool is_kernel_fault(const std::string& e) {
  return e.rfind("kernel ", 0) == 0 && (e.find(" faulted: SIG") != std::string::npos || e.find(" faulted: CUDA ") != std::string::npos ||
                                      e.find(" ran past ") != std::string::npos);
}

IsolatedRun run_isolated(const LoopProgram& p, const Schedule& s, const GeneratedSource& src,
                         const std::vector<std::pair<std::string, std::string>>& objects, const std::vector<int64_t>& sizes,
                         const std::vector<Tensor>& inputs, const TimingOptions& timing, const IsolationOptions& o) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  if (objects.empty()) throw std::logic_error("kernel worker: the compile kept no machine code to hand it");
  const size_t n = s.kernels.size();
  Layout at;
  size_t off = 0;
  for (const Tensor& in : inputs) {
    at.inputs.push_back(static_cast<int64_t>(off));
    off += align64(static_cast<size_t>(in.nbytes()));
  }
  for (const std::string& out : p.outputs) {
    at.outputs.push_back(out.empty() ? -1 : static_cast<int64_t>(off));
    if (!out.empty()) off += align64(static_cast<size_t>(p.buffer(out).bytes()));
  }
  at.results = static_cast<int64_t>(off);
  off += align64(16 + 8 * n + 2 * n);
  const std::string plan = write_plan(p, s, src, objects, sizes, inputs, timing, at);
  const size_t data_off = align64(kHeaderBytes + plan.size());

  SharedFile f;
  f.bytes = data_off + off;
  f.fd = static_cast<int>(syscall(SYS_memfd_create, "lowerscope-run", MFD_CLOEXEC));
  if (f.fd < 0 || ftruncate(f.fd, static_cast<off_t>(f.bytes)) != 0)
    throw std::runtime_error(std::string("kernel worker: cannot make the shared memory: ") + std::strerror(errno));
  void* m = mmap(nullptr, f.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd, 0);
  if (m == MAP_FAILED) throw std::runtime_error(std::string("kernel worker: cannot map the shared memory: ") + std::strerror(errno));
  f.base = static_cast<char*>(m);
  Header* h = new (f.base) Header();
  h->plan_len = plan.size();
  h->data_off = data_off;
  h->progress[0] = -1;
  h->progress[1] = 0;
  h->phase = starting;
  h->cpus = initial_cpus();
  std::memcpy(f.base + kHeaderBytes, plan.data(), plan.size());
  char* data = f.base + data_off;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].nbytes()) std::memcpy(data + at.inputs[i], inputs[i].data(), static_cast<size_t>(inputs[i].nbytes()));
  h->magic = kMagic;

  // The worker: the shared file as its fd 3, this process's environment (OpenMP's settings,
  // LOWERSCOPE_FAULT).
  const std::string runner = o.runner.empty() ? default_runner() : o.runner;
  int from = f.fd;
  if (from == kChildFd) from = fcntl(f.fd, F_DUPFD_CLOEXEC, kChildFd + 1);  // dup2 onto itself would keep close-on-exec
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, from, kChildFd);
  // No signal blocked or ignored that this thread had blocked or the app ignores: a fault must
  // end the worker with its signal.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, faults;
  sigemptyset(&none);
  sigemptyset(&faults);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM}) sigaddset(&faults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &faults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::string fd_text = std::to_string(kChildFd);
  std::vector<char*> argv = {const_cast<char*>(runner.c_str()), const_cast<char*>("--shm"), fd_text.data(), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, runner.c_str(), &fa, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  if (from != f.fd) close(from);
  if (rc != 0)
    throw std::runtime_error("cannot start the kernel worker " + runner + ": " + std::strerror(rc) +
                             " (lowerscope-cli --in-process runs the kernels in this process)");

  // Wait for it; kill it once one kernel has run past the limit (the count of kernels started has
  // not moved for that long).
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  int status = 0;
  bool timed_out = false;
  int64_t seen = -1;
  auto since = Clock::now();
  for (;;) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) {
      status = 0;
      break;
    }
    if (pidfd >= 0) {
      pollfd pf{pidfd, POLLIN, 0};
      poll(&pf, 1, 50);
    } else {
      usleep(1000);
    }
    const int64_t started = h->progress[1].load(std::memory_order_relaxed);
    if (started != seen) {
      seen = started;
      since = Clock::now();
    } else if (std::chrono::duration<double>(Clock::now() - since).count() > o.time_limit_s) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      timed_out = true;
      break;
    }
  }
  if (pidfd >= 0) close(pidfd);

  const int64_t k = h->progress[0].load();
  const std::string kernel = k >= 0 && static_cast<size_t>(k) < n ? s.kernels[static_cast<size_t>(k)].name : "";
  if (timed_out) {
    if (kernel.empty()) throw KernelFault("the kernel worker ran past " + seconds_text(o.time_limit_s) + " s before its first kernel", "");
    throw KernelFault("kernel " + kernel + " ran past " + seconds_text(o.time_limit_s) +
                          " s: the worker process running it was stopped; the app goes on", kernel);
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    std::string what = signal_name(sig);
    if (h->fault_signal == sig && (sig == SIGSEGV || sig == SIGBUS)) {
      char b[48];
      std::snprintf(b, sizeof b, " (address 0x%" PRIx64 ")", h->fault_addr);
      what += b;
    }
    if (kernel.empty()) throw KernelFault("the kernel worker faulted: " + what + " while loading the compiled kernels", "");
    throw KernelFault("kernel " + kernel + " faulted: " + what + " in the worker process; the app goes on", kernel);
  }
  const int32_t phase = h->phase.load();
  h->error[sizeof h->error - 1] = 0;
  const std::string error = h->error;
  if (phase == failed) {
    switch (h->error_kind) {
      case invalid_argument: throw std::invalid_argument(error);
      case out_of_range: throw std::out_of_range(error);
      case logic: throw std::logic_error(error);
      default: throw std::runtime_error(error);
    }
  }
  if (phase != done)
    throw std::runtime_error("the kernel worker " + runner + " stopped with status " +
                             std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + " before it finished" +
                             (error.empty() ? "" : ": " + error));

  IsolatedRun out;
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    if (at.outputs[i] < 0) {
      out.outputs.emplace_back();
      continue;
    }
    const LoopBuffer& b = p.buffer(p.outputs[i]);
    Tensor t(b.dtype, b.shape);
    if (t.nbytes()) std::memcpy(t.data(), data + at.outputs[i], static_cast<size_t>(t.nbytes()));
    out.outputs.push_back(std::move(t));
  }
  const char* res = data + at.results;
  std::memcpy(&out.t.total_ms, res, 8);
  int64_t runs = 0;
  std::memcpy(&runs, res + 8, 8);
  out.t.runs = static_cast<int>(runs);
  out.t.kernel_ms.resize(n);
  if (n) std::memcpy(out.t.kernel_ms.data(), res + 16, 8 * n);
  for (size_t i = 0; i < n; ++i) {
    out.ran_inside.push_back(res[16 + 8 * n + i] != 0);
    out.runs_template.push_back(res[16 + 9 * n + i] != 0);
  }
  out.worker_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return out;
}

// ---- The worker's side ----

namespace {

Header* worker_header = nullptr;
std::atomic<int64_t>* fault_progress = nullptr;
int64_t fault_kernel = -1;

// A fault recorded for the parent's message; the default action (SA_RESETHAND) then ends the
// process: a fault re-runs its instruction, a signal sent is raised again.
void on_fault(int sig, siginfo_t* info, void*) {
  if (worker_header) {
    worker_header->fault_signal = sig;
    worker_header->fault_addr = reinterpret_cast<uint64_t>(info->si_addr);
  }
  if (info->si_code <= 0) raise(sig);
}

void install_fault_handlers() {
  static char alt[65536];  // a kernel that overflowed the stack still gets its address reported
  stack_t ss{};
  ss.ss_sp = alt;
  ss.ss_size = sizeof alt;
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
}

// LOWERSCOPE_FAULT's kernels (test-only): the launcher the named kernel resolves to.
void segv_kernel() {
  if (fault_progress) fault_progress[0].store(fault_kernel);
  volatile uintptr_t bad = 16;  // not a null constant: the compiler cannot turn it into a trap
  *reinterpret_cast<volatile int*>(bad) = 1;
}
void hang_kernel() {
  if (fault_progress) fault_progress[0].store(fault_kernel);
  for (;;) pause();
}
void segv_launcher(void**) { segv_kernel(); }
void hang_launcher(void**) { hang_kernel(); }
void segv_rows(void**, int64_t, int64_t) { segv_kernel(); }
void hang_rows(void**, int64_t, int64_t) { hang_kernel(); }

class DlopenCode : public LoadedCode {
 public:
  explicit DlopenCode(void* h) : h_(h) {}
  void* symbol(const std::string& name) override { return dlsym(h_, name.c_str()); }

 private:
  void* h_;  // never closed: the worker ends with its run
};

// The compiled code with one kernel's launchers swapped for a fault.
class FaultingCode : public LoadedCode {
 public:
  FaultingCode(std::unique_ptr<LoadedCode> inner, std::string launcher, std::string rows, bool hang)
      : inner_(std::move(inner)), launcher_(std::move(launcher)), rows_(std::move(rows)), hang_(hang) {}
  void* symbol(const std::string& name) override {
    if (name == launcher_) return reinterpret_cast<void*>(hang_ ? &hang_launcher : &segv_launcher);
    if (!rows_.empty() && name == rows_) return reinterpret_cast<void*>(hang_ ? &hang_rows : &segv_rows);
    return inner_->symbol(name);
  }

 private:
  std::unique_ptr<LoadedCode> inner_;
  std::string launcher_, rows_;
  bool hang_;
};

std::unique_ptr<LoadedCode> load_code(const std::vector<std::pair<std::string, std::string>>& objects) {
  if (objects.size() == 1 && objects[0].first.size() > 3 && objects[0].first.substr(objects[0].first.size() - 3) == ".so") {
    // The external compiler's library: from a file, removed once loaded.
    prefer_short_openmp_spin();
    char path[] = "/tmp/lowerscope-runner-XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) throw std::runtime_error(std::string("kernel worker: cannot write the library: ") + std::strerror(errno));
    const std::string& bytes = objects[0].second;
    const bool written = write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
    close(fd);
    void* h = written ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
    const std::string why = written ? (h ? "" : dlerror()) : "short write";
    unlink(path);
    if (!h) throw std::runtime_error("kernel worker: cannot load the compiled kernels: " + why);
    for (const char* rt : {"libgomp.so.1", "libomp.so.5", "libomp.so"})
      if (void* r = dlopen(rt, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) {
        note_openmp_runtime(r);
        break;
      }
    return std::make_unique<DlopenCode>(h);
  }
  std::vector<std::string> blobs;
  for (const auto& o : objects) blobs.push_back(o.second);
  std::string diag;
  std::unique_ptr<LoadedCode> code = clang_jit_load_objects(blobs, diag);
  if (!code) throw std::runtime_error("kernel worker: cannot load the compiled kernels: " + diag);
  for (const char* rt : {"libomp.so.5", "libomp.so"})
    if (void* r = dlopen(rt, RTLD_NOW | RTLD_NOLOAD)) {
      note_openmp_runtime(r);
      break;
    }
  return code;
}

std::unique_ptr<LoadedCode> with_injected_fault(std::unique_ptr<LoadedCode> code, const Plan& plan, Header* h) {
  const char* spec = std::getenv("LOWERSCOPE_FAULT");
  if (!spec || !*spec) return code;
  const std::string v = spec;
  const size_t colon = v.find(':');
  const std::string kind = v.substr(0, colon), name = colon == std::string::npos ? "" : v.substr(colon + 1);
  if (kind != "segv" && kind != "hang") return code;  // others (cuda-illegal) are not the CPU's
  for (size_t k = 0; k < plan.s.kernels.size(); ++k) {
    const GeneratedKernel& g = plan.src.kernels.at(k);
    if ((plan.s.kernels[k].name != name && g.name != name) || plan.s.kernels[k].is_extern) continue;
    fault_kernel = static_cast<int64_t>(k);
    fault_progress = h->progress;
    return std::make_unique<FaultingCode>(std::move(code), g.launcher, g.rows_launcher, kind == "hang");
  }
  return code;
}

void fail(Header* h, ErrorKind kind, const std::string& what) {
  h->error_kind = kind;
  std::snprintf(h->error, sizeof h->error, "%s", what.c_str());
  h->phase = failed;
}

}  // namespace

int runner_main(int argc, char** argv) {
  int fd = -1;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--shm") fd = std::atoi(argv[i + 1]);
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(kHeaderBytes)) {
    std::fprintf(stderr, "lowerscope-runner: runs compiled kernels for lowerscope and lowerscope-cli (--shm FD); not meant to be started by hand\n");
    return 2;
  }
  void* m = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return 2;
  char* base = static_cast<char*>(m);
  Header* h = reinterpret_cast<Header*>(base);
  if (h->magic != kMagic) return 2;
  worker_header = h;
  sched_setaffinity(0, sizeof h->cpus, &h->cpus);  // before the OpenMP runtime loads and counts them
  install_fault_handlers();
  try {
    Reader r(base + kHeaderBytes, h->plan_len);
    Plan plan = read_plan(r);
    char* data = base + h->data_off;
    std::unique_ptr<LoadedCode> code = with_injected_fault(load_code(plan.objects), plan, h);
    CpuExecutable exe(plan.p, plan.s, plan.src, *code, plan.sizes);
    exe.follow(h->progress);
    h->progress[1].fetch_add(1);
    h->phase = loaded;
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < plan.input_metas.size(); ++i) {
      Tensor t(plan.input_metas[i].first, plan.input_metas[i].second);
      if (t.nbytes()) std::memcpy(t.data(), data + plan.at.inputs.at(i), static_cast<size_t>(t.nbytes()));
      inputs.push_back(std::move(t));
    }
    const std::vector<Tensor> outs = exe.run(inputs);
    for (size_t i = 0; i < outs.size() && i < plan.at.outputs.size(); ++i) {
      if (plan.at.outputs[i] < 0 || !outs[i].defined()) continue;
      const LoopBuffer& b = plan.p.buffer(plan.p.outputs[i]);
      if (outs[i].nbytes() != b.bytes())  // the parent reads the output as its buffer
        throw std::logic_error("kernel worker: output " + b.name + " has " + std::to_string(outs[i].nbytes()) +
                               " bytes, its buffer " + std::to_string(b.bytes()));
      std::memcpy(data + plan.at.outputs[i], outs[i].data(), static_cast<size_t>(outs[i].nbytes()));
    }
    h->phase = ran;
    const Timings t = exe.benchmark(inputs, plan.timing);
    const size_t n = plan.s.kernels.size();
    char* res = data + plan.at.results;
    const int64_t runs = t.runs;
    std::memcpy(res, &t.total_ms, 8);
    std::memcpy(res + 8, &runs, 8);
    for (size_t k = 0; k < n && k < t.kernel_ms.size(); ++k) std::memcpy(res + 16 + 8 * k, &t.kernel_ms[k], 8);
    for (size_t k = 0; k < n; ++k) {
      res[16 + 8 * n + k] = exe.ran_inside()[k];
      res[16 + 9 * n + k] = exe.runs_template(k);
    }
    h->phase = done;
  } catch (const std::invalid_argument& e) {
    fail(h, invalid_argument, e.what());
  } catch (const std::out_of_range& e) {
    fail(h, out_of_range, e.what());
  } catch (const std::logic_error& e) {
    fail(h, logic, e.what());
  } catch (const std::exception& e) {
    fail(h, runtime, e.what());
  }
  std::fflush(nullptr);
  _exit(0);  // no teardown: the OpenMP team and the JIT go with the process
}

}  // namespace ls
