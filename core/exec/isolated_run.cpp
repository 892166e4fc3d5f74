#include "exec/isolated_run.h"

#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>

#include "compile/cpu_compiler.h"
#include "exec/worker_process.h"

namespace ls {

namespace {

std::mutex isolation_mutex;
IsolationOptions isolation;
bool isolation_chosen = false;  // set_kernel_isolation was called; else the default below

// The CPU's plan: what CpuExecutable needs of the loop IR, the schedule and the source, the
// compiled code, the sizes, the timing, where the data lives.
struct Plan {
  LoopProgram p;
  Schedule s;
  GeneratedSource src;
  std::vector<int64_t> sizes;
  std::vector<std::pair<std::string, std::string>> objects;
  TimingOptions timing;
  worker::DataLayout at;
};

// The results (worker::ResultWriter): total_ms, runs, then n each of kernel_ms, ran_inside,
// runs_template, after their counts.
size_t result_bytes(size_t n) { return 8 * (5 + 3 * n); }

}  // namespace

void set_kernel_isolation(const IsolationOptions& o) {
  std::lock_guard<std::mutex> lk(isolation_mutex);
  isolation = o;
  isolation_chosen = true;
}

IsolationOptions kernel_isolation() {
  std::lock_guard<std::mutex> lk(isolation_mutex);
  if (!isolation_chosen) {
    // The programs (lowerscope, lowerscope-cli) have the worker beside them; the test programs do
    // not, and run in-process unless they choose. LOWERSCOPE_IN_PROCESS=1 keeps any program in-process.
    const char* in_process = std::getenv("LOWERSCOPE_IN_PROCESS");
    std::error_code ec;
    isolation.enabled = !(in_process && *in_process && std::string(in_process) != "0") &&
                        std::filesystem::exists(worker::runner_path({}), ec);
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
  const worker::DataLayout at = worker::layout_data(p, inputs, result_bytes(n));
  worker::Writer w;
  worker::write_program(w, p, s);
  worker::write_kernels(w, src.kernels);
  w.ints(sizes);
  w.i(static_cast<int64_t>(objects.size()));
  for (const auto& object : objects) {
    w.str(object.first);
    w.str(object.second);
  }
  worker::write_timing(w, timing);
  worker::write_layout(w, at);

  worker::SharedRun shared(w.text(), at.bytes);
  shared.put_inputs(at, inputs);
  std::vector<std::string> names;
  for (const Kernel& k : s.kernels) names.push_back(k.name);
  worker::Watch watch;
  watch.time_limit_s = watch.start_limit_s = o.time_limit_s;
  shared.run(worker::runner_path(o), {}, names, watch);

  IsolatedRun out;
  out.outputs = worker::outputs_from(shared.data(), p, at);
  worker::ResultReader r(shared.data() + at.results, static_cast<size_t>(at.result_bytes));
  out.t.total_ms = r.f();
  out.t.runs = static_cast<int>(r.i());
  out.t.kernel_ms = r.doubles();
  for (int64_t x : r.ints()) out.ran_inside.push_back(x != 0);
  for (int64_t x : r.ints()) out.runs_template.push_back(x != 0);
  out.t.kernel_ms.resize(n);  // one per kernel, whatever the worker wrote
  out.ran_inside.resize(n);
  out.runs_template.resize(n);
  out.worker_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return out;
}

// ---- The worker's side ----

namespace {

std::atomic<int64_t>* fault_progress = nullptr;
int64_t fault_kernel = -1;

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

std::unique_ptr<LoadedCode> with_injected_fault(std::unique_ptr<LoadedCode> code, const Plan& plan, worker::Header* h) {
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

}  // namespace

void worker::cpu_worker(Header* h) {
  serve(h, [h] {
    Reader r(plan_of(h), h->plan_len);
    Plan plan;
    read_program(r, plan.p, plan.s);
    plan.src.kernels = read_kernels(r);
    plan.sizes = r.ints();
    plan.objects.resize(r.n());
    for (auto& object : plan.objects) {
      object.first = r.str();
      object.second = r.str();
    }
    plan.timing = read_timing(r);
    plan.at = read_layout(r);
    check_layout(plan.at, plan.p, data_bytes_of(h));
    char* data = data_of(h);
    std::unique_ptr<LoadedCode> code = with_injected_fault(load_code(plan.objects), plan, h);
    CpuExecutable exe(plan.p, plan.s, plan.src, *code, plan.sizes);
    h->progress[1].fetch_add(1);  // loaded: the start's limit ends; then each kernel moves the count on
    exe.follow(h->progress);
    h->phase = loaded;
    const std::vector<Tensor> inputs = inputs_from(data, plan.at);
    put_outputs(data, plan.p, plan.at, exe.run(inputs));
    h->phase = ran;
    const Timings t = exe.benchmark(inputs, plan.timing);
    const size_t n = plan.s.kernels.size();
    std::vector<double> kernel_ms = t.kernel_ms;
    kernel_ms.resize(n);
    std::vector<int64_t> inside, templates;
    for (size_t k = 0; k < n; ++k) {
      inside.push_back(k < exe.ran_inside().size() && exe.ran_inside()[k]);
      templates.push_back(exe.runs_template(k));
    }
    ResultWriter w(data + plan.at.results, static_cast<size_t>(plan.at.result_bytes));
    w.f(t.total_ms);
    w.i(t.runs);
    w.doubles(kernel_ms);
    w.ints(inside);
    w.ints(templates);
  });
}

int runner_main(int argc, char** argv) {
  worker::Header* h = worker::attach(argc, argv);
  if (!h) return 2;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--cuda") worker::cuda_worker(h);
  worker::cpu_worker(h);
}

}  // namespace ls
