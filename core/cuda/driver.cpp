#include "cuda/driver.h"

#include <atomic>
#include <mutex>
#include <stdexcept>

#include "compile/phase_times.h"
#include "cuda/dl_library.h"

namespace ls {

// The driver functions used, with the ABI of cuda.h (CUresult is an int, handles are pointers,
// CUdevice an int, CUdeviceptr an unsigned 64-bit integer).
struct CudaDriver::Api {
  void* lib = nullptr;
  int (*cuInit)(unsigned);
  int (*cuDeviceGetCount)(int*);
  int (*cuDeviceGet)(int*, int);
  int (*cuDeviceGetName)(char*, int, int);
  int (*cuDeviceGetAttribute)(int*, int, int);
  int (*cuDeviceTotalMem)(size_t*, int);
  int (*cuDevicePrimaryCtxRetain)(void**, int);
  int (*cuDevicePrimaryCtxReset)(int);
  int (*cuDevicePrimaryCtxRelease)(int);
  int (*cuCtxSetCurrent)(void*);
  int (*cuCtxSynchronize)();
  int (*cuModuleLoadData)(void**, const void*);
  int (*cuModuleUnload)(void*);
  int (*cuModuleGetFunction)(void**, void*, const char*);
  int (*cuModuleGetGlobal)(DevicePtr*, size_t*, void*, const char*);
  int (*cuFuncGetAttribute)(int*, int, void*);
  int (*cuFuncSetAttribute)(void*, int, int);
  int (*cuLaunchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**, void**);
  int (*cuMemAlloc)(DevicePtr*, size_t);
  int (*cuMemFree)(DevicePtr);
  int (*cuMemcpyHtoD)(DevicePtr, const void*, size_t);
  int (*cuMemcpyDtoH)(void*, DevicePtr, size_t);
  int (*cuMemcpyDtoD)(DevicePtr, DevicePtr, size_t);
  int (*cuMemsetD8)(DevicePtr, unsigned char, size_t);
  int (*cuMemsetD8Async)(DevicePtr, unsigned char, size_t, void*);
  int (*cuEventCreate)(void**, unsigned);
  int (*cuEventRecord)(void*, void*);
  int (*cuEventSynchronize)(void*);
  int (*cuEventElapsedTime)(float*, void*, void*);
  int (*cuEventDestroy)(void*);
  int (*cuGetErrorString)(int, const char**);
  int (*cuGetErrorName)(int, const char**);
  int (*cuMemGetInfo)(size_t*, size_t*) = nullptr;
  // Streams and graphs (reduce-overhead mode); optional: a driver without them runs without graphs.
  int (*cuStreamCreate)(void**, unsigned) = nullptr;
  int (*cuStreamDestroy)(void*) = nullptr;
  int (*cuStreamSynchronize)(void*) = nullptr;
  int (*cuStreamBeginCapture)(void*, int) = nullptr;
  int (*cuStreamEndCapture)(void*, void**) = nullptr;
  int (*cuGraphInstantiateWithFlags)(void**, void*, unsigned long long) = nullptr;
  int (*cuGraphLaunch)(void*, void*) = nullptr;
  int (*cuGraphExecDestroy)(void*) = nullptr;
  int (*cuGraphDestroy)(void*) = nullptr;
  int (*cuGraphGetNodes)(void*, void**, size_t*) = nullptr;
};

namespace {
constexpr int kAttrSmCount = 16, kAttrCcMajor = 75, kAttrCcMinor = 76, kFuncNumRegs = 4;

// Errors after which the context is unusable (an illegal address, a misaligned access, an
// illegal instruction, a failed launch): only a reset brings the device back.
bool sticky(int r) { return r == 700 || (r >= 714 && r <= 719); }
// Those errors in words (cuda.h's CUDA_ERROR_* of that range).
const char* fault_words(int r) {
  switch (r) {
    case 700: return "illegal address";
    case 714: return "hardware stack error";
    case 715: return "illegal instruction";
    case 716: return "misaligned address";
    case 717: return "invalid address space";
    case 718: return "invalid program counter";
    case 719: return "launch failure";
    default: return "fault";
  }
}
}  // namespace

namespace {
// The process's driver: found by probe() (cuInit, the device), its context made by the first
// get(). Two locks, so a thread that needs only the device (the code generator, NVRTC) does not
// wait for a context another thread is making.
std::mutex probe_mutex, start_mutex;
CudaDriver* found = nullptr;    // after a successful probe; lives until the process ends
CudaDriver* started = nullptr;  // found, once its context is made
std::string probe_error, start_error;
std::atomic<bool> reset_on_fault{true};  // false in a kernel worker
}  // namespace

void CudaDriver::end_with_fault() { reset_on_fault = false; }

const CudaDeviceInfo* CudaDriver::probe(std::string* why) {
  std::lock_guard<std::mutex> lock(probe_mutex);
  static bool tried = false;
  if (!tried) {
    tried = true;
    std::unique_ptr<CudaDriver> c(new CudaDriver);
    PhaseTimer timer("CUDA driver: start (cuInit, device)");
    try {
      c->init();
      found = c.release();
    } catch (const std::exception& e) {
      probe_error = e.what();
    }
  }
  if (!found && why) *why = probe_error;
  return found ? &found->info_ : nullptr;
}

CudaDriver* CudaDriver::get(std::string* why) {
  if (!probe(why)) return nullptr;
  std::lock_guard<std::mutex> lock(start_mutex);
  static bool tried = false;
  if (!tried) {
    tried = true;
    PhaseTimer timer("CUDA driver: start (context)");
    try {
      found->start_context();
      started = found;
    } catch (const std::exception& e) {
      start_error = e.what();
    }
  }
  CudaDriver* d = started;
  if (!d || !d->lost_.empty()) {
    if (why) *why = d ? d->lost_ : start_error;
    return nullptr;
  }
  d->api_->cuCtxSetCurrent(d->ctx_);
  if (d->generation_ > 0 && d->api_->cuCtxSynchronize() != 0) {  // after a reset: is the context usable?
    d->lost_ = "the GPU context was lost after a kernel fault; restart Lowerscope to run CUDA kernels again";
    if (why) *why = d->lost_;
    return nullptr;
  }  // the calling thread (a GUI worker) uses the device's context
  return d;
}

void CudaDriver::init() {
  api_ = std::make_unique<Api>();
  Api& a = *api_;
  std::string file;
  a.lib = open_first_library({{"libcuda.so.1"}, {"libcuda.so"}}, &file);
  if (!a.lib) throw std::runtime_error("no CUDA driver on this machine (libcuda.so.1 not found)");
  DlSymbols sym(a.lib, "the CUDA driver (" + file + ")");
  sym.need(a.cuInit, "cuInit");
  sym.need(a.cuDeviceGetCount, "cuDeviceGetCount");
  sym.need(a.cuDeviceGet, "cuDeviceGet");
  sym.need(a.cuDeviceGetName, "cuDeviceGetName");
  sym.need(a.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  sym.need(a.cuDeviceTotalMem, "cuDeviceTotalMem_v2");
  sym.need(a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  sym.need(a.cuDevicePrimaryCtxReset, "cuDevicePrimaryCtxReset_v2");
  sym.need(a.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  sym.need(a.cuCtxSetCurrent, "cuCtxSetCurrent");
  sym.need(a.cuCtxSynchronize, "cuCtxSynchronize");
  sym.need(a.cuModuleLoadData, "cuModuleLoadData");
  sym.need(a.cuModuleUnload, "cuModuleUnload");
  sym.need(a.cuModuleGetFunction, "cuModuleGetFunction");
  sym.need(a.cuModuleGetGlobal, "cuModuleGetGlobal_v2");
  sym.need(a.cuFuncGetAttribute, "cuFuncGetAttribute");
  sym.need(a.cuFuncSetAttribute, "cuFuncSetAttribute");
  sym.need(a.cuLaunchKernel, "cuLaunchKernel");
  sym.need(a.cuMemAlloc, "cuMemAlloc_v2");
  sym.need(a.cuMemFree, "cuMemFree_v2");
  sym.need(a.cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  sym.need(a.cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  sym.need(a.cuMemcpyDtoD, "cuMemcpyDtoD_v2");
  sym.need(a.cuMemsetD8, "cuMemsetD8_v2");
  sym.need(a.cuMemsetD8Async, "cuMemsetD8Async");
  sym.need(a.cuEventCreate, "cuEventCreate");
  sym.need(a.cuEventRecord, "cuEventRecord");
  sym.need(a.cuEventSynchronize, "cuEventSynchronize");
  sym.need(a.cuEventElapsedTime, "cuEventElapsedTime");
  sym.need(a.cuEventDestroy, "cuEventDestroy_v2");
  sym.need(a.cuGetErrorString, "cuGetErrorString");
  sym.need(a.cuGetErrorName, "cuGetErrorName");
  if (!sym.ok()) throw std::runtime_error(sym.error());
  // CUDA graphs (reduce-overhead) and the memory query: their absence is reported where used.
  sym.optional(a.cuStreamCreate, "cuStreamCreate");
  sym.optional(a.cuStreamDestroy, "cuStreamDestroy_v2");
  sym.optional(a.cuStreamSynchronize, "cuStreamSynchronize");
  sym.optional(a.cuStreamBeginCapture, "cuStreamBeginCapture_v2");
  sym.optional(a.cuStreamEndCapture, "cuStreamEndCapture");
  sym.optional(a.cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
  sym.optional(a.cuGraphLaunch, "cuGraphLaunch");
  sym.optional(a.cuGraphExecDestroy, "cuGraphExecDestroy");
  sym.optional(a.cuGraphDestroy, "cuGraphDestroy");
  sym.optional(a.cuGraphGetNodes, "cuGraphGetNodes");
  sym.optional(a.cuMemGetInfo, "cuMemGetInfo_v2");
  graphs_missing_ = sym.absent();
  check(a.cuInit(0), "cuInit");
  int count = 0;
  check(a.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count == 0) throw std::runtime_error("the CUDA driver found no GPU");
  check(a.cuDeviceGet(&dev_, 0), "cuDeviceGet");
  char name[256] = {};
  check(a.cuDeviceGetName(name, sizeof name - 1, dev_), "cuDeviceGetName");
  info_.name = name;
  check(a.cuDeviceGetAttribute(&info_.sm_count, kAttrSmCount, dev_), "cuDeviceGetAttribute");
  check(a.cuDeviceGetAttribute(&info_.cc_major, kAttrCcMajor, dev_), "cuDeviceGetAttribute");
  check(a.cuDeviceGetAttribute(&info_.cc_minor, kAttrCcMinor, dev_), "cuDeviceGetAttribute");
  check(a.cuDeviceTotalMem(&info_.memory_bytes, dev_), "cuDeviceTotalMem");
}

void CudaDriver::start_context() {
  check(api_->cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain");
  check(api_->cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
}

void CudaDriver::check(int r, const char* what) const {
  if (r == 0) return;
  const char* name = "?";
  const char* msg = "";
  if (api_ && api_->cuGetErrorName) api_->cuGetErrorName(r, &name);
  if (api_ && api_->cuGetErrorString) api_->cuGetErrorString(r, &msg);
  std::string text = std::string(what) + " failed: " + name + " (" + msg + ")";
  if (sticky(r) && ctx_) {
    if (reset_on_fault) {
      const_cast<CudaDriver*>(this)->reset_after_fault();
      text += "; the device was reset";
    }
    throw CudaFault(text, r, std::string("CUDA ") + fault_words(r) + " (" + msg + ")");
  }
  throw std::runtime_error(text);
}

void CudaDriver::reset_after_fault() {
  // Every allocation and module died with the context: forget them, take a fresh context.
  // Our reference goes first, then the reset, then a fresh context.
  free_.clear();
  ++generation_;
  api_->cuCtxSetCurrent(nullptr);
  api_->cuDevicePrimaryCtxRelease(dev_);
  const int reset = api_->cuDevicePrimaryCtxReset(dev_);
  ctx_ = nullptr;
  stream_ = nullptr;  // a stream of the old context died with it: the new one's default stream
  const int retain = api_->cuDevicePrimaryCtxRetain(&ctx_, dev_);
  const int current = retain == 0 ? api_->cuCtxSetCurrent(ctx_) : retain;
  const int sync = current == 0 ? api_->cuCtxSynchronize() : current;
  // A context other libraries still hold (cuBLAS) may not come back: say so from now on.
  if (reset != 0 || current != 0 || sync != 0)
    lost_ = "the GPU context was lost after a kernel fault and could not be reset (reset " + std::to_string(reset) + ", retain " +
            std::to_string(retain) + ", current " + std::to_string(current) + ", synchronize " + std::to_string(sync) +
            "); restart Lowerscope to run CUDA kernels again";
}

DevicePtr CudaDriver::alloc(size_t bytes) {
  bytes = (bytes + 511) / 512 * 512;
  if (auto it = free_.find(bytes); it != free_.end()) {
    const DevicePtr p = it->second;
    free_.erase(it);
    return p;
  }
  DevicePtr p = 0;
  int r = api_->cuMemAlloc(&p, bytes);
  if (r == 2 /* out of memory */ && !free_.empty()) {  // give the cache back and try again
    for (auto& [n, q] : free_) api_->cuMemFree(q);
    free_.clear();
    r = api_->cuMemAlloc(&p, bytes);
  }
  check(r, ("cuMemAlloc of " + std::to_string(bytes) + " bytes").c_str());
  return p;
}

void CudaDriver::free(DevicePtr p, size_t bytes) { free_.emplace((bytes + 511) / 512 * 512, p); }

size_t CudaDriver::free_memory() {
  size_t free = 0, total = 0;
  if (!api_->cuMemGetInfo) throw std::runtime_error("the CUDA driver lacks cuMemGetInfo_v2");
  check(api_->cuMemGetInfo(&free, &total), "cuMemGetInfo");
  for (const auto& [n, p] : free_) free += n;  // the cache's blocks are ours to reuse
  return free;
}
void CudaDriver::upload(DevicePtr dst, const void* src, size_t n) { check(api_->cuMemcpyHtoD(dst, src, n), "cuMemcpyHtoD"); }
void CudaDriver::download(void* dst, DevicePtr src, size_t n) { check(api_->cuMemcpyDtoH(dst, src, n), "cuMemcpyDtoH"); }
void CudaDriver::copy(DevicePtr dst, DevicePtr src, size_t n) { check(api_->cuMemcpyDtoD(dst, src, n), "cuMemcpyDtoD"); }
void CudaDriver::zero(DevicePtr dst, size_t n) { check(api_->cuMemsetD8(dst, 0, n), "cuMemsetD8"); }
void CudaDriver::zero_async(DevicePtr dst, size_t n) { check(api_->cuMemsetD8Async(dst, 0, n, stream_), "cuMemsetD8Async"); }
void CudaDriver::synchronize() { check(api_->cuCtxSynchronize(), "cuCtxSynchronize"); }

void CudaDriver::launch(void* f, int64_t grid, int block, void** params, const char* name) {
  if (grid <= 0) return;
  if (grid > 0x7fffffff) throw std::runtime_error(std::string("kernel ") + name + ": grid of " + std::to_string(grid) + " blocks is too large");
  const int rc = api_->cuLaunchKernel(f, static_cast<unsigned>(grid), 1, 1, static_cast<unsigned>(block), 1, 1, 0, stream_, params, nullptr);
  if (rc != 0) check(rc, (std::string("launching kernel ") + name).c_str());  // the message is built only when it fails
}

void CudaDriver::launch(void* f, int64_t grid, int block, void** params, const char* name, unsigned shared) {
  if (grid <= 0) return;
  if (grid > 0x7fffffff) throw std::runtime_error(std::string("kernel ") + name + ": grid of " + std::to_string(grid) + " blocks is too large");
  constexpr int kMaxDynamicShared = 8;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
  if (shared > 48 * 1024) check(api_->cuFuncSetAttribute(f, kMaxDynamicShared, static_cast<int>(shared)), (std::string("shared memory for ") + name).c_str());
  const int rc = api_->cuLaunchKernel(f, static_cast<unsigned>(grid), 1, 1, static_cast<unsigned>(block), 1, 1, shared, stream_, params, nullptr);
  if (rc != 0) check(rc, (std::string("launching kernel ") + name).c_str());
}

void* CudaDriver::event() {
  void* e = nullptr;
  check(api_->cuEventCreate(&e, 0), "cuEventCreate");
  return e;
}
void CudaDriver::record(void* e) { check(api_->cuEventRecord(e, stream_), "cuEventRecord"); }

void CudaDriver::use_stream(void* s) { stream_ = s; }

std::string CudaDriver::graphs_unsupported() const {
  return graphs_missing_.empty() ? std::string() : "the CUDA driver lacks " + graphs_missing_;
}

CudaGraph::CudaGraph(CudaDriver& d, const std::function<void()>& work) : d_(d) {
  if (const std::string why = d.graphs_unsupported(); !why.empty()) throw std::runtime_error(why);
  CudaDriver::Api& a = *d.api_;
  d.check(a.cuStreamCreate(&stream_, 0), "cuStreamCreate");
  void* previous = d.stream_;
  d.use_stream(stream_);
  void* graph = nullptr;
  try {
    d.check(a.cuStreamBeginCapture(stream_, 2 /* CU_STREAM_CAPTURE_MODE_RELAXED */), "cuStreamBeginCapture");
    try {
      work();
    } catch (...) {
      a.cuStreamEndCapture(stream_, &graph);  // abandon the capture
      if (graph) a.cuGraphDestroy(graph);
      throw;
    }
    d.check(a.cuStreamEndCapture(stream_, &graph), "cuStreamEndCapture");
    d.check(a.cuGraphGetNodes(graph, nullptr, &nodes_), "cuGraphGetNodes");
    d.check(a.cuGraphInstantiateWithFlags(&exec_, graph, 0), "cuGraphInstantiate");
    a.cuGraphDestroy(graph);
  } catch (...) {
    d.use_stream(previous);
    a.cuStreamDestroy(stream_);
    throw;
  }
  d.use_stream(previous);
}

CudaGraph::~CudaGraph() {
  if (exec_) d_.api_->cuGraphExecDestroy(exec_);
  if (stream_) d_.api_->cuStreamDestroy(stream_);
}

void CudaGraph::replay() { d_.check(d_.api_->cuGraphLaunch(exec_, stream_), "cuGraphLaunch"); }

void CudaGraph::timed_replay(void* start, void* end) {
  void* previous = d_.stream_;
  d_.use_stream(stream_);
  d_.record(start);
  d_.check(d_.api_->cuGraphLaunch(exec_, stream_), "cuGraphLaunch");
  d_.record(end);
  d_.use_stream(previous);
}

void CudaGraph::synchronize() { d_.check(d_.api_->cuStreamSynchronize(stream_), "cuStreamSynchronize"); }
float CudaDriver::elapsed_ms(void* a, void* b) {
  check(api_->cuEventSynchronize(b), "cuEventSynchronize");
  float ms = 0;
  check(api_->cuEventElapsedTime(&ms, a, b), "cuEventElapsedTime");
  return ms;
}
void CudaDriver::destroy_event(void* e) { api_->cuEventDestroy(e); }

void* CudaDriver::load_module(const std::string& image) {
  void* m = nullptr;
  check(api_->cuModuleLoadData(&m, image.data()), "cuModuleLoadData");
  return m;
}
void CudaDriver::unload_module(void* m) { api_->cuModuleUnload(m); }
void* CudaDriver::function(void* m, const std::string& name) {
  void* f = nullptr;
  if (api_->cuModuleGetFunction(&f, m, name.c_str()) != 0) return nullptr;
  // Clusters of up to 16 blocks (the column form's slices; above 8 the size is non-portable).
  constexpr int kNonPortableClusterSize = 14;  // CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
  if (info_.sm() >= 90) api_->cuFuncSetAttribute(f, kNonPortableClusterSize, 1);
  return f;
}
DevicePtr CudaDriver::global(void* m, const std::string& name, size_t* bytes) {
  DevicePtr p = 0;
  size_t n = 0;
  if (api_->cuModuleGetGlobal(&p, &n, m, name.c_str()) != 0) return 0;
  if (bytes) *bytes = n;
  return p;
}
int CudaDriver::registers(void* f) {
  int n = 0;
  api_->cuFuncGetAttribute(&n, kFuncNumRegs, f);
  return n;
}

CudaModule::CudaModule(CudaDriver& d, const std::string& image) : d_(d), generation_(d.generation()) {
  PhaseTimer timer("CUDA driver: load module");
  m_ = d.load_module(image);
}
CudaModule::~CudaModule() {
  if (m_ && d_.generation() == generation_) d_.unload_module(m_);
}
void* CudaModule::function(const std::string& name) {
  void* f = d_.function(m_, name);
  if (!f) throw std::runtime_error("the compiled CUDA module has no kernel '" + name + "'");
  return f;
}
DevicePtr CudaModule::global(const std::string& name) { return d_.global(m_, name); }

}  // namespace ls
