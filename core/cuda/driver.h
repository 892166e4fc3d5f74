// The CUDA driver API, loaded at run time (libcuda.so.1): the binary runs where no driver exists,
// and says so. One device (the first), its primary context, the default stream.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace ls {

using DevicePtr = unsigned long long;

struct CudaDeviceInfo {
  std::string name;
  int sm_count = 0, cc_major = 0, cc_minor = 0;
  size_t memory_bytes = 0;
  int sm() const { return cc_major * 10 + cc_minor; }
};

class CudaModule;

// An error after which the context was unusable (an illegal address, a misaligned address, an
// illegal instruction, a launch failure): the device was reset before it was thrown. `fault`
// says what happened in words ("CUDA illegal address (an illegal memory access was encountered)").
struct CudaFault : std::runtime_error {
  CudaFault(const std::string& what, int code, std::string fault) : std::runtime_error(what), code(code), fault(std::move(fault)) {}
  int code;
  std::string fault;
};

class CudaDriver {
 public:
  // The driver with its device and context ready, or nullptr with the reason in `why` (no
  // libcuda, no device, the driver refused).
  static CudaDriver* get(std::string* why = nullptr);
  // The device alone (cuInit: about half of the driver's start), or nullptr with the reason; no
  // context is made, so code can be generated and compiled for the device while get() makes it.
  static const CudaDeviceInfo* probe(std::string* why = nullptr);
  const CudaDeviceInfo& device() const { return info_; }
  // In a kernel worker (exec/isolated_run.h): an error that spoils the context is thrown as
  // CudaFault without the reset, which cannot bring this process's CUDA back (the driver
  // gives 700 even to a fresh context); the process ends with it. Before the first get().
  static void end_with_fault();

  // Errors throw std::runtime_error naming the call and the driver's message. An error that
  // spoils the context (an illegal address in a kernel) also resets the device, so the next
  // compile starts clean; everything allocated before is gone; that one throws CudaFault.
  void check(int result, const char* what) const;

  DevicePtr alloc(size_t bytes);  // from the caching allocator
  void free(DevicePtr p, size_t bytes);
  void upload(DevicePtr dst, const void* src, size_t bytes);
  void download(void* dst, DevicePtr src, size_t bytes);
  void copy(DevicePtr dst, DevicePtr src, size_t bytes);
  void zero(DevicePtr dst, size_t bytes);
  void zero_async(DevicePtr dst, size_t bytes);  // on the stream, in order with the launches
  void synchronize();
  void launch(void* function, int64_t grid, int block, void** params, const char* name);
  // With `shared` bytes of dynamic shared memory (above 48 KB the function is opted in first).
  void launch(void* function, int64_t grid, int block, void** params, const char* name, unsigned shared);

  // Launches, cuBLAS calls and event records go to this stream (nullptr: the default stream);
  // CudaGraph switches it while it captures.
  void use_stream(void* stream);
  void* stream() const { return stream_; }
  // Why graphs cannot be captured with this driver; empty when they can.
  std::string graphs_unsupported() const;

  // Events for timing on the current stream.
  void* event();
  void record(void* ev);
  float elapsed_ms(void* start, void* end);
  void destroy_event(void* ev);

  void* load_module(const std::string& image);  // cubin or PTX
  void unload_module(void* module);
  void* function(void* module, const std::string& name);
  DevicePtr global(void* module, const std::string& name, size_t* bytes = nullptr);  // 0 when absent
  int registers(void* function);
  // Free and total memory of the device now (cuMemGetInfo), besides what the caching allocator
  // keeps for reuse, which counts as free.
  size_t free_memory();
  int generation() const { return generation_; }  // bumps at each reset

  struct Api;

 private:
  CudaDriver() = default;
  void init();           // the driver's functions, cuInit and the device
  void start_context();  // the device's primary context, current on the calling thread
  void reset_after_fault();
  std::unique_ptr<Api> api_;
  CudaDeviceInfo info_;
  int dev_ = 0;
  void* ctx_ = nullptr;
  int generation_ = 0;
  std::string lost_;  // set when a fault left the device unusable in this process
  std::multimap<size_t, DevicePtr> free_;  // caching allocator: freed blocks by size
  void* stream_ = nullptr;
  std::string graphs_missing_;
  friend class CudaGraph;
};

// A CUDA graph: the launches `work` makes, captured on a stream of its own, instantiated once
// and replayed with one launch (reduce-overhead mode). Buffers are those `work` used: replays
// read and write the same addresses. Throws naming the call that refused (a host copy inside
// `work`, a driver without graphs).
class CudaGraph {
 public:
  CudaGraph(CudaDriver& d, const std::function<void()>& work);
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  void replay();
  void timed_replay(void* start_event, void* end_event);  // events recorded around it, on its stream
  void synchronize();
  size_t nodes() const { return nodes_; }

 private:
  CudaDriver& d_;
  void* stream_ = nullptr;
  void* exec_ = nullptr;
  size_t nodes_ = 0;
};

// Compiled kernels loaded on the device.
class CudaModule {
 public:
  CudaModule(CudaDriver& d, const std::string& image);
  ~CudaModule();
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;
  void* function(const std::string& name);  // throws naming a missing kernel
  DevicePtr global(const std::string& name);  // a __device__ variable's address; 0 when absent

 private:
  CudaDriver& d_;
  void* m_ = nullptr;
  int generation_ = 0;
};

// A device allocation that goes back to the cache when dropped.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(CudaDriver& d, size_t bytes) : d_(&d), bytes_(bytes), p_(bytes ? d.alloc(bytes) : 0), gen_(d.generation()) {}
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    release();
    d_ = o.d_, bytes_ = o.bytes_, p_ = o.p_, gen_ = o.gen_;
    o.p_ = 0;
    return *this;
  }
  DevicePtr ptr() const { return p_; }
  size_t bytes() const { return bytes_; }

 private:
  void release() {
    if (p_ && d_ && d_->generation() == gen_) d_->free(p_, bytes_);
    p_ = 0;
  }
  CudaDriver* d_ = nullptr;
  size_t bytes_ = 0;
  DevicePtr p_ = 0;
  int gen_ = 0;
};

}  // namespace ls
