#include "exec/worker_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>

#include "exec/memory_fit.h"
#include "ops/op_table.h"

extern char** environ;

namespace ls::worker {

namespace {

constexpr uint64_t kMagic = 0x4c5352554e4e4552ull;  // "LSRUNNER"
constexpr int kChildFd = 3;                          // where the worker finds the shared file
static_assert(sizeof(Header) <= kHeaderBytes);

[[noreturn]] void cut_short() { throw std::runtime_error("kernel worker: the run's plan is cut short"); }
[[noreturn]] void results_cut_short() { throw std::runtime_error("kernel worker: its results are cut short or garbled"); }

// A file descriptor closed when dropped, unless released: SharedRun's constructor may throw after
// it made the file, and then no destructor runs.
struct OwnedFd {
  int fd = -1;
  ~OwnedFd() {
    if (fd >= 0) close(fd);
  }
  int release() { return std::exchange(fd, -1); }
};

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

}  // namespace

size_t align64(size_t n) { return (n + 63) & ~size_t(63); }

// ---- Writer, Reader ----

void Writer::i(int64_t v) { s_ += std::to_string(v) + ' '; }
void Writer::f(double v) {
  int64_t bits = 0;
  std::memcpy(&bits, &v, 8);
  i(bits);
}
void Writer::str(const std::string& v) {
  i(static_cast<int64_t>(v.size()));
  s_ += v;
}
void Writer::ints(const std::vector<int64_t>& v) {
  i(static_cast<int64_t>(v.size()));
  for (int64_t x : v) i(x);
}
void Writer::strs(const std::vector<std::string>& v) {
  i(static_cast<int64_t>(v.size()));
  for (const auto& x : v) str(x);
}
void Writer::arg(const Arg& a) {
  i(static_cast<int64_t>(a.kind));
  i(a.node);
  i(a.i);
  f(a.f);
  i(a.b);
  str(a.s);
  i(static_cast<int64_t>(a.list.size()));
  for (const Arg& x : a.list) arg(x);
}

int64_t Reader::i() {
  int64_t v = 0;
  const std::from_chars_result r = std::from_chars(p_, end_, v);
  if (r.ec != std::errc() || r.ptr == end_ || *r.ptr != ' ') cut_short();
  p_ = r.ptr + 1;
  return v;
}
double Reader::f() {
  const int64_t bits = i();
  double v = 0;
  std::memcpy(&v, &bits, 8);
  return v;
}
size_t Reader::n() {
  const int64_t v = i();
  if (v < 0 || v > end_ - p_) cut_short();
  return static_cast<size_t>(v);
}
std::string Reader::str() {
  const size_t len = n();
  if (len > static_cast<size_t>(end_ - p_)) cut_short();
  std::string v(p_, len);
  p_ += len;
  return v;
}
std::vector<int64_t> Reader::ints() {
  std::vector<int64_t> v(n());
  for (auto& x : v) x = i();
  return v;
}
std::vector<std::string> Reader::strs() {
  std::vector<std::string> v(n());
  for (auto& x : v) x = str();
  return v;
}
Arg Reader::arg() {
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

// ---- ResultWriter, ResultReader ----

void ResultWriter::put(const void* v, size_t n) {
  if (n > static_cast<size_t>(end_ - p_))
    throw std::logic_error("kernel worker: the run's results do not fit their room of " + std::to_string(end_ - p_) + " bytes left");
  std::memcpy(p_, v, n);
  p_ += n;
}
void ResultWriter::str(const std::string& v) {
  i(static_cast<int64_t>(v.size()));
  put(v.data(), v.size());
}
void ResultWriter::ints(const std::vector<int64_t>& v) {
  i(static_cast<int64_t>(v.size()));
  for (int64_t x : v) i(x);
}
void ResultWriter::doubles(const std::vector<double>& v) {
  i(static_cast<int64_t>(v.size()));
  for (double x : v) f(x);
}
void ResultWriter::strs(const std::vector<std::string>& v) {
  i(static_cast<int64_t>(v.size()));
  for (const std::string& x : v) str(x);
}

void ResultReader::get(void* v, size_t n) {
  if (n > static_cast<size_t>(end_ - p_)) results_cut_short();
  std::memcpy(v, p_, n);
  p_ += n;
}
size_t ResultReader::n(size_t each) {
  const int64_t v = i();
  if (v < 0 || static_cast<uint64_t>(v) > static_cast<size_t>(end_ - p_) / each) results_cut_short();
  return static_cast<size_t>(v);
}
int64_t ResultReader::i() {
  int64_t v = 0;
  get(&v, 8);
  return v;
}
double ResultReader::f() {
  double v = 0;
  get(&v, 8);
  return v;
}
std::string ResultReader::str() {
  std::string v(n(1), '\0');
  get(v.data(), v.size());
  return v;
}
std::vector<int64_t> ResultReader::ints() {
  std::vector<int64_t> v(n(8));
  for (int64_t& x : v) x = i();
  return v;
}
std::vector<double> ResultReader::doubles() {
  std::vector<double> v(n(8));
  for (double& x : v) x = f();
  return v;
}
std::vector<std::string> ResultReader::strs() {
  std::vector<std::string> v(n(8));  // each string's length, at least
  for (std::string& x : v) x = str();
  return v;
}

// ---- The plan's parts ----

void write_program(Writer& w, const LoopProgram& p, const Schedule& s) {
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
}

void read_program(Reader& r, LoopProgram& p, Schedule& s) {
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
  s.kernels.resize(r.n());
  for (Kernel& k : s.kernels) {
    k.name = r.str();
    k.is_extern = r.i() != 0;
    for (int64_t n : r.ints()) k.nodes.push_back(static_cast<int>(n));
    k.epilogue = r.i() != 0;
  }
}

void write_kernels(Writer& w, const std::vector<GeneratedKernel>& kernels) {
  w.i(static_cast<int64_t>(kernels.size()));
  for (const GeneratedKernel& k : kernels) {
    w.str(k.name);
    w.str(k.launcher);
    w.strs(k.args);
    w.str(k.rows_launcher);
    w.i(k.in_template);
  }
}

std::vector<GeneratedKernel> read_kernels(Reader& r) {
  std::vector<GeneratedKernel> kernels(r.n());
  for (GeneratedKernel& k : kernels) {
    k.name = r.str();
    k.launcher = r.str();
    k.args = r.strs();
    k.rows_launcher = r.str();
    k.in_template = r.i() != 0;
  }
  return kernels;
}

void write_timing(Writer& w, const TimingOptions& t) {
  w.i(t.warmup);
  w.i(t.min_runs);
  w.i(t.max_runs);
  w.f(t.budget_ms);
}

TimingOptions read_timing(Reader& r) {
  TimingOptions t;
  t.warmup = static_cast<int>(r.i());
  t.min_runs = static_cast<int>(r.i());
  t.max_runs = static_cast<int>(r.i());
  t.budget_ms = r.f();
  return t;
}

DataLayout layout_data(const LoopProgram& p, const std::vector<Tensor>& inputs, size_t result_bytes) {
  DataLayout at;
  size_t off = 0;
  for (const Tensor& in : inputs) {
    at.input_metas.emplace_back(in.dtype(), in.shape());
    at.inputs.push_back(static_cast<int64_t>(off));
    off += align64(static_cast<size_t>(in.nbytes()));
  }
  for (const std::string& out : p.outputs) {
    at.outputs.push_back(out.empty() ? -1 : static_cast<int64_t>(off));
    if (!out.empty()) off += align64(static_cast<size_t>(p.buffer(out).bytes()));
  }
  at.results = static_cast<int64_t>(off);
  at.result_bytes = static_cast<int64_t>(result_bytes);
  at.bytes = off + align64(result_bytes);
  return at;
}

void write_layout(Writer& w, const DataLayout& at) {
  w.i(static_cast<int64_t>(at.input_metas.size()));
  for (const auto& m : at.input_metas) {
    w.i(static_cast<int64_t>(m.first));
    w.ints(m.second);
  }
  w.ints(at.inputs);
  w.ints(at.outputs);
  w.i(at.results);
  w.i(at.result_bytes);
}

DataLayout read_layout(Reader& r) {
  DataLayout at;
  at.input_metas.resize(r.n());
  for (auto& m : at.input_metas) {
    m.first = static_cast<DType>(r.i());
    m.second = r.ints();
  }
  at.inputs = r.ints();
  at.outputs = r.ints();
  at.results = r.i();
  at.result_bytes = r.i();
  return at;
}

std::vector<Tensor> inputs_from(const char* data, const DataLayout& at) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < at.input_metas.size(); ++i) {
    Tensor t(at.input_metas[i].first, at.input_metas[i].second);
    if (t.nbytes()) std::memcpy(t.data(), data + at.inputs.at(i), static_cast<size_t>(t.nbytes()));
    inputs.push_back(std::move(t));
  }
  return inputs;
}

void put_outputs(char* data, const LoopProgram& p, const DataLayout& at, const std::vector<Tensor>& outs) {
  for (size_t i = 0; i < outs.size() && i < at.outputs.size(); ++i) {
    if (at.outputs[i] < 0 || !outs[i].defined()) continue;
    const LoopBuffer& b = p.buffer(p.outputs[i]);
    if (outs[i].nbytes() != b.bytes())  // the parent reads the output as its buffer
      throw std::logic_error("kernel worker: output " + b.name + " has " + std::to_string(outs[i].nbytes()) + " bytes, its buffer " +
                             std::to_string(b.bytes()));
    std::memcpy(data + at.outputs[i], outs[i].data(), static_cast<size_t>(outs[i].nbytes()));
  }
}

std::vector<Tensor> outputs_from(const char* data, const LoopProgram& p, const DataLayout& at) {
  std::vector<Tensor> outs;
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    if (at.outputs[i] < 0) {
      outs.emplace_back();
      continue;
    }
    const LoopBuffer& b = p.buffer(p.outputs[i]);
    Tensor t(b.dtype, b.shape);
    if (t.nbytes()) std::memcpy(t.data(), data + at.outputs[i], static_cast<size_t>(t.nbytes()));
    outs.push_back(std::move(t));
  }
  return outs;
}

// ---- The parent's side ----

std::string runner_path(const IsolationOptions& o) {
  if (!o.runner.empty()) return o.runner;
  if (const char* e = std::getenv("LOWERSCOPE_RUNNER"); e && *e) return e;
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "lowerscope-runner" : (self.parent_path() / "lowerscope-runner").string();
}

SharedRun::SharedRun(const std::string& plan, size_t data_bytes) {
  data_off_ = align64(kHeaderBytes + plan.size());
  constexpr size_t most = static_cast<size_t>(std::numeric_limits<off_t>::max());
  if (data_bytes > most - data_off_)
    throw std::runtime_error("kernel worker: " + std::to_string(data_bytes) + " bytes of data are more than a shared file holds");
  bytes_ = data_off_ + data_bytes;
  OwnedFd fd{static_cast<int>(syscall(SYS_memfd_create, "lowerscope-run", MFD_CLOEXEC))};
  if (fd.fd < 0 || ftruncate(fd.fd, static_cast<off_t>(bytes_)) != 0)
    throw std::runtime_error(std::string("kernel worker: cannot make the shared memory: ") + std::strerror(errno));
  void* m = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd.fd, 0);
  if (m == MAP_FAILED) throw std::runtime_error(std::string("kernel worker: cannot map the shared memory: ") + std::strerror(errno));
  fd_ = fd.release();
  base_ = static_cast<char*>(m);
  h_ = new (base_) Header();
  h_->plan_len = plan.size();
  h_->data_off = data_off_;
  h_->progress[0] = -1;
  h_->progress[1] = 0;
  h_->phase = starting;
  h_->cpus = initial_cpus();
  std::memcpy(base_ + kHeaderBytes, plan.data(), plan.size());
  h_->magic = kMagic;
}

SharedRun::~SharedRun() {
  if (base_) munmap(base_, bytes_);
  if (fd_ >= 0) close(fd_);
}

void SharedRun::put_inputs(const DataLayout& at, const std::vector<Tensor>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].nbytes()) std::memcpy(data() + at.inputs[i], inputs[i].data(), static_cast<size_t>(inputs[i].nbytes()));
}

void SharedRun::run(const std::string& runner, const std::vector<std::string>& args, const std::vector<std::string>& kernels,
                    const Watch& watch) {
  using Clock = std::chrono::steady_clock;
  Header* h = h_;
  // The worker: the shared file as its fd 3, this process's environment (OpenMP's settings,
  // LOWERSCOPE_FAULT).
  int from = fd_;
  if (from == kChildFd) from = fcntl(fd_, F_DUPFD_CLOEXEC, kChildFd + 1);  // dup2 onto itself would keep close-on-exec
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
  std::vector<std::string> words = {runner};
  words.insert(words.end(), args.begin(), args.end());
  words.push_back("--shm");
  words.push_back(std::to_string(kChildFd));
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, runner.c_str(), &fa, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  if (from != fd_) close(from);
  if (rc != 0)
    throw std::runtime_error("cannot start the kernel worker " + runner + ": " + std::strerror(rc) +
                             " (lowerscope-cli --in-process runs the kernels in this process)");

  // Wait for it; kill it once one kernel has run past the limit (the count of kernels started has
  // not moved for that long), or the start (before the first kernel) past its own.
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
    const int32_t now = h->phase.load(std::memory_order_relaxed);
    const double limit = now == done || now == failed ? std::min(watch.time_limit_s, 5.0)  // finished: only its end is left
                         : started == 0               ? watch.start_limit_s
                                                      : watch.time_limit_s;
    if (started != seen) {
      seen = started;
      since = Clock::now();
    } else if (std::chrono::duration<double>(Clock::now() - since).count() > limit) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      timed_out = true;
      break;
    }
  }
  if (pidfd >= 0) close(pidfd);

  // A worker that finished its work (done, or its error written) but was slow to end (a GPU
  // context's teardown) has still finished: what it wrote stands.
  const int32_t phase = h->phase.load();
  const bool finished = phase == done || phase == failed;
  if (finished) timed_out = false;
  const int64_t k = h->progress[0].load();
  const std::string kernel = k >= 0 && static_cast<size_t>(k) < kernels.size() ? kernels[static_cast<size_t>(k)] : "";
  // Asynchronous kernels in the timed runs: the one named is the last one launched.
  const std::string during = watch.async_kernels && phase >= ran
                                 ? " in the timed runs (the last kernel launched: they are not waited for one by one)"
                                 : "";
  if (timed_out) {
    if (h->progress[1].load() == 0)
      throw KernelFault("the kernel worker ran past " + seconds_text(watch.start_limit_s) + " s before its first kernel", "");
    if (kernel.empty()) throw KernelFault("the kernel worker ran past " + seconds_text(watch.time_limit_s) + " s outside any kernel", "");
    throw KernelFault("kernel " + kernel + " ran past " + seconds_text(watch.time_limit_s) + " s" + during +
                          ": the worker process running it was stopped; the app goes on",
                      kernel);
  }
  if (WIFSIGNALED(status) && !finished) {
    const int sig = WTERMSIG(status);
    std::string what = signal_name(sig);
    if (h->fault_signal == sig && (sig == SIGSEGV || sig == SIGBUS)) {
      char b[48];
      std::snprintf(b, sizeof b, " (address 0x%" PRIx64 ")", h->fault_addr);
      what += b;
    }
    if (kernel.empty()) throw KernelFault("the kernel worker faulted: " + what + " while loading the compiled kernels", "");
    throw KernelFault("kernel " + kernel + " faulted: " + what + during + " in the worker process; the app goes on", kernel);
  }
  h->error[sizeof h->error - 1] = 0;
  h->kernel[sizeof h->kernel - 1] = 0;
  const std::string error = h->error;
  if (phase == failed) {
    switch (h->error_kind) {
      case invalid_argument: throw std::invalid_argument(error);
      case out_of_range: throw std::out_of_range(error);
      case logic: throw std::logic_error(error);
      case kernel_fault: throw KernelFault(error, h->kernel);
      case memory_refused: throw MemoryRefused(error);
      default: throw std::runtime_error(error);
    }
  }
  if (phase != done)
    throw std::runtime_error("the kernel worker " + runner + " stopped with status " +
                             std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + " before it finished" +
                             (error.empty() ? "" : ": " + error));
}

// ---- The worker's side ----

namespace {

Header* worker_header = nullptr;
size_t worker_bytes = 0;  // the shared file's size

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

void fail(Header* h, ErrorKind kind, const std::string& what, const std::string& kernel = "") {
  h->error_kind = kind;
  std::snprintf(h->error, sizeof h->error, "%s", what.c_str());
  std::snprintf(h->kernel, sizeof h->kernel, "%s", kernel.c_str());
  h->phase = failed;
}

}  // namespace

Header* attach(int argc, char** argv) {
  int fd = -1;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--shm") fd = std::atoi(argv[i + 1]);
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(kHeaderBytes)) {
    std::fprintf(stderr, "lowerscope-runner: runs compiled kernels for lowerscope and lowerscope-cli (--shm FD, --cuda); not meant to be started by hand\n");
    return nullptr;
  }
  void* m = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return nullptr;
  Header* h = static_cast<Header*>(m);
  if (h->magic != kMagic) {
    std::fprintf(stderr, "lowerscope-runner: --shm %d is not a lowerscope run's shared file\n", fd);
    return nullptr;
  }
  // The plan between the header and the data, the data inside the file: else an error the parent
  // reads (written into the header, which is there).
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (h->data_off < kHeaderBytes || h->data_off > size || h->plan_len > h->data_off - kHeaderBytes) {
    fail(h, logic,
         "kernel worker: the shared file's header does not fit it (plan " + std::to_string(h->plan_len) + " bytes, data at " +
             std::to_string(h->data_off) + ", file " + std::to_string(size) + " bytes)");
    return nullptr;
  }
  worker_header = h;
  worker_bytes = static_cast<size_t>(size);
  sched_setaffinity(0, sizeof h->cpus, &h->cpus);  // before the OpenMP runtime loads and counts them
  install_fault_handlers();
  return h;
}

size_t data_bytes_of(const Header* h) { return worker_bytes > h->data_off ? worker_bytes - h->data_off : 0; }

namespace {

// A tensor's bytes from a plan's type and shape; false where the shape is negative or overflows.
bool bytes_of(DType t, const Shape& shape, uint64_t& bytes) {
  if (static_cast<int>(t) > static_cast<int>(DType::c128)) return false;  // no type of ours
  uint64_t n = static_cast<uint64_t>(dtype_size(t));
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return false;
  bytes = n;
  return true;
}

}  // namespace

void check_layout(const DataLayout& at, const LoopProgram& p, size_t data_bytes) {
  auto inside = [data_bytes](int64_t off, uint64_t bytes) {
    return off >= 0 && static_cast<uint64_t>(off) <= data_bytes && bytes <= data_bytes - static_cast<uint64_t>(off);
  };
  auto outside = [data_bytes](const std::string& what, int64_t off) {
    throw std::logic_error("kernel worker: " + what + " at offset " + std::to_string(off) + " lies outside the shared data (" +
                           std::to_string(data_bytes) + " bytes)");
  };
  if (at.inputs.size() != at.input_metas.size() || at.outputs.size() != p.outputs.size())
    throw std::logic_error("kernel worker: the plan's layout has " + std::to_string(at.inputs.size()) + " inputs for " +
                           std::to_string(at.input_metas.size()) + " and " + std::to_string(at.outputs.size()) + " outputs for " +
                           std::to_string(p.outputs.size()));
  for (size_t i = 0; i < at.inputs.size(); ++i) {
    uint64_t bytes = 0;
    if (!bytes_of(at.input_metas[i].first, at.input_metas[i].second, bytes) || !inside(at.inputs[i], bytes))
      outside("input " + std::to_string(i), at.inputs[i]);
  }
  for (size_t i = 0; i < at.outputs.size(); ++i) {
    if (at.outputs[i] < 0 || p.outputs[i].empty()) continue;
    const LoopBuffer& b = p.buffer(p.outputs[i]);
    uint64_t bytes = 0;
    if (!bytes_of(b.dtype, b.shape, bytes) || !inside(at.outputs[i], bytes)) outside("output " + b.name, at.outputs[i]);
  }
  if (at.result_bytes < 0 || !inside(at.results, static_cast<uint64_t>(at.result_bytes))) outside("the results", at.results);
}

void serve(Header* h, const std::function<void()>& work) {
  try {
    work();
    h->phase = done;
  } catch (const KernelFault& e) {
    fail(h, kernel_fault, e.what(), e.kernel);
  } catch (const MemoryRefused& e) {
    fail(h, memory_refused, e.what());
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
  _exit(0);  // no teardown: the OpenMP team, the JIT, the GPU context go with the process
}

}  // namespace ls::worker
