// CUDA kernels in the worker process (exec/isolated_run.h): the parent's run_cuda_isolated and
// the worker's body (`lowerscope-runner --cuda`). The plumbing both devices share is
// exec/worker_process.h.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

#include "cuda/driver.h"
#include "exec/cuda_executor.h"
#include "exec/isolated_run.h"
#include "exec/worker_process.h"

namespace ls {

namespace {

using worker::Reader;
using worker::Writer;

// What CudaExecutable reads of the generated code: the kernels (their launchers and arguments),
// the source (where kernels check indices), each kernel's launch, max-autotune's cuBLASLt choices.
void write_cuda(Writer& w, const GeneratedCuda& g) {
  w.str(g.source.code);
  worker::write_kernels(w, g.source.kernels);
  w.i(static_cast<int64_t>(g.launch.size()));
  for (const CudaLaunch& l : g.launch) {
    w.str(l.form);
    w.i(l.grid);
    w.i(l.block);
    w.i(l.threads_per_row);
    w.i(l.split);
    w.i(l.scratch_bytes);
    w.i(l.vector);
    w.i(l.cluster);
  }
  w.i(static_cast<int64_t>(g.matmul_algorithms.size()));
  for (const auto& chosen : g.matmul_algorithms) {
    w.str(chosen.first);
    w.str(chosen.second);
  }
}

GeneratedCuda read_cuda(Reader& r) {
  GeneratedCuda g;
  g.source.code = r.str();
  g.source.kernels = worker::read_kernels(r);
  g.launch.resize(r.n());
  for (CudaLaunch& l : g.launch) {
    l.form = r.str();
    l.grid = r.i();
    l.block = static_cast<int>(r.i());
    l.threads_per_row = static_cast<int>(r.i());
    l.split = r.i();
    l.scratch_bytes = r.i();
    l.vector = static_cast<int>(r.i());
    l.cluster = r.i() != 0;
  }
  const size_t chosen = r.n();
  for (size_t i = 0; i < chosen; ++i) {
    std::string kernel = r.str();
    g.matmul_algorithms[kernel] = r.str();
  }
  return g;
}

void write_need(Writer& w, const MemoryNeed& n) {
  w.i(n.buffers);
  w.i(n.inputs);
  w.i(n.outputs);
  w.i(n.plan_peak);
  w.i(n.extra);
  w.str(n.extra_what);
}

MemoryNeed read_need(Reader& r) {
  MemoryNeed n;
  n.buffers = r.i();
  n.inputs = r.i();
  n.outputs = r.i();
  n.plan_peak = r.i();
  n.extra = r.i();
  n.extra_what = r.str();
  return n;
}

// The results (worker::ResultWriter, as the CPU's): the timings, how each kernel ran, its
// registers, reduce-overhead's graph. Room enough for any kernel's line.
size_t result_bytes(size_t kernels) { return 65536 + 1024 * kernels; }

void write_results(char* at, size_t room, const CudaIsolatedRun& run) {
  worker::ResultWriter w(at, room);
  w.f(run.t.total_ms);
  w.i(run.t.runs);
  w.f(run.t.host_ms);
  w.doubles(run.t.kernel_ms);
  w.doubles(run.t.host_kernel_ms);
  w.strs(run.how);
  w.ints(std::vector<int64_t>(run.registers.begin(), run.registers.end()));
  w.str(run.graph_why);
  w.i(static_cast<int64_t>(run.graph_nodes));
  w.f(run.graph_ms);
}

void read_results(const char* at, size_t room, CudaIsolatedRun& run) {
  worker::ResultReader r(at, room);
  run.t.total_ms = r.f();
  run.t.runs = static_cast<int>(r.i());
  run.t.host_ms = r.f();
  run.t.kernel_ms = r.doubles();
  run.t.host_kernel_ms = r.doubles();
  run.how = r.strs();
  for (int64_t n : r.ints()) run.registers.push_back(static_cast<int>(n));
  run.graph_why = r.str();
  const int64_t nodes = r.i();
  run.graph_nodes = nodes > 0 ? static_cast<size_t>(nodes) : 0;
  run.graph_ms = r.f();
}

}  // namespace

CudaIsolatedRun run_cuda_isolated(const LoopProgram& p, const Schedule& s, const GeneratedCuda& g, const CudaCubins& cubins,
                                  const std::vector<int64_t>& sizes, const std::vector<Tensor>& inputs, const TimingOptions& timing,
                                  bool graph, const MemoryNeed& need, const IsolationOptions& o) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  if (cubins.kernels.empty() || cubins.helpers.empty()) throw std::logic_error("kernel worker: the compile kept no cubin to hand it");
  const worker::DataLayout at = worker::layout_data(p, inputs, result_bytes(s.kernels.size()));
  Writer w;
  worker::write_program(w, p, s);
  write_cuda(w, g);
  w.str(cubins.kernels);
  w.str(cubins.helpers);
  w.str(cubins.attention);
  w.ints(sizes);
  worker::write_timing(w, timing);
  w.i(graph);
  write_need(w, need);
  worker::write_layout(w, at);

  worker::SharedRun shared(w.text(), at.bytes);
  shared.put_inputs(at, inputs);
  std::vector<std::string> names;
  for (const Kernel& k : s.kernels) names.push_back(k.name);
  worker::Watch watch;
  watch.time_limit_s = o.time_limit_s;
  watch.start_limit_s = std::max(o.time_limit_s, 60.0);  // the worker's start: the driver, a context, cuBLAS, the modules
  watch.async_kernels = true;
  shared.run(worker::runner_path(o), {"--cuda"}, names, watch);

  CudaIsolatedRun out;
  out.outputs = worker::outputs_from(shared.data(), p, at);
  read_results(shared.data() + at.results, static_cast<size_t>(at.result_bytes), out);
  const size_t n = s.kernels.size();  // one each per kernel, whatever the worker wrote
  out.t.kernel_ms.resize(n);
  out.t.host_kernel_ms.resize(n);
  out.how.resize(n);
  out.registers.resize(n);
  out.worker_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return out;
}

void worker::cuda_worker(Header* h) {
  serve(h, [h] {
    Reader r(plan_of(h), h->plan_len);
    LoopProgram p;
    Schedule s;
    read_program(r, p, s);
    const GeneratedCuda g = read_cuda(r);
    CudaCubins cubins;
    cubins.kernels = r.str();
    cubins.helpers = r.str();
    cubins.attention = r.str();
    const std::vector<int64_t> sizes = r.ints();
    const TimingOptions timing = read_timing(r);
    const bool graph = r.i() != 0;
    const MemoryNeed need = read_need(r);
    const DataLayout at = read_layout(r);
    check_layout(at, p, data_bytes_of(h));
    char* data = data_of(h);

    CudaDriver::end_with_fault();
    std::string why;
    CudaDriver* d = CudaDriver::get(&why);
    if (!d) throw std::runtime_error("the CUDA kernel worker cannot use the GPU: " + why);
    refuse_if_too_large_for_gpu(need, *d);
    // On the host: the inputs copied out of the shared memory, the outputs downloaded, their
    // copies in the shared memory and in the app.
    MemoryNeed host;
    host.inputs = need.inputs;
    host.outputs = need.outputs;
    host.plan_peak = need.plan_peak;
    host.extra = static_cast<int64_t>(std::min(9e18, static_cast<double>(need.inputs) + 3.0 * static_cast<double>(need.outputs)));
    host.extra_what = "the copies of the inputs and outputs handed between the app and the CUDA kernel worker";
    refuse_if_too_large(host, host_memory_available(),
                        memory_available_override() >= 0 ? "on the host (LOWERSCOPE_MEMORY_AVAILABLE)" : "on the host (MemAvailable)");
    CudaModule module(*d, cubins.kernels), helpers(*d, cubins.helpers);
    std::unique_ptr<CudaModule> attention;
    if (!cubins.attention.empty()) attention = std::make_unique<CudaModule>(*d, cubins.attention);
    CudaExecutable exe(p, s, g, *d, module, helpers, attention.get(), sizes);
    exe.after_fault = "the kernel worker's GPU context went with it, the app goes on";
    h->progress[1].fetch_add(1);
    exe.follow(h->progress);
    h->phase = loaded;

    // The checked run: a synchronization after every kernel, so a fault names its kernel.
    const std::vector<Tensor> inputs = inputs_from(data, at);
    const std::vector<Tensor> outs = exe.run(inputs);
    put_outputs(data, p, at, outs);
    h->phase = ran;

    CudaIsolatedRun run;
    try {
      run.t = exe.benchmark(inputs, timing);
      if (graph && (run.graph_why = exe.capture_graph()).empty()) {
        // reduce-overhead: the same kernels as one CUDA graph, checked to give the same numbers
        const std::vector<Tensor> replayed = exe.replay_graph();
        for (size_t i = 0; i < replayed.size() && i < outs.size(); ++i)
          if (replayed[i].defined() && !compare(replayed[i], outs[i], Tolerance{0, 0}).ok)
            throw std::runtime_error("the CUDA graph's output " + std::to_string(i) + " differs from the kernels launched one by one");
        run.graph_ms = exe.benchmark_graph(timing).total_ms;
        run.graph_nodes = exe.graph_nodes();
      }
    } catch (const CudaFault& e) {
      // The timed runs launch without waiting: the kernel named is the last one launched.
      const int64_t k = h->progress[0].load();
      const std::string kernel = k >= 0 && static_cast<size_t>(k) < s.kernels.size() ? s.kernels[static_cast<size_t>(k)].name : "";
      if (kernel.empty()) throw;
      throw KernelFault("kernel " + kernel + " faulted: " + e.fault +
                            " in the timed runs (the last kernel launched: they are not waited for one by one; the checked run "
                            "before them passed); " + exe.after_fault,
                        kernel);
    }
    run.how = exe.how;
    run.registers = exe.registers;
    write_results(data + at.results, static_cast<size_t>(at.result_bytes), run);
  });
}

}  // namespace ls
