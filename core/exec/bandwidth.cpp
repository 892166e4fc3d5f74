#include "exec/bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "cuda/driver.h"

namespace ls {

namespace {

constexpr size_t kBytes = size_t(64) << 20;  // per buffer: well past the last-level cache
constexpr int kReps = 5;

double cpu_copy_gbps() {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<char> src(kBytes, 1), dst(kBytes, 0);
  double best = 0;
  for (int rep = 0; rep < kReps; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    const size_t chunk = (kBytes + threads - 1) / threads;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        const size_t lo = std::min(kBytes, t * chunk), hi = std::min(kBytes, lo + chunk);
        std::memcpy(dst.data() + lo, src.data() + lo, hi - lo);
      });
    for (auto& th : pool) th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 2.0 * kBytes / s / 1e9);
  }
  return best;
}

double cuda_copy_gbps() {
  CudaDriver* d = CudaDriver::get();
  if (!d) return 0;
  const size_t bytes = kBytes * 4;
  const DevicePtr a = d->alloc(bytes), b = d->alloc(bytes);
  d->zero(a, bytes);
  void* start = d->event();
  void* stop = d->event();
  double best = 0;
  for (int rep = 0; rep < kReps; ++rep) {
    d->record(start);
    d->copy(b, a, bytes);
    d->record(stop);
    d->synchronize();
    const double ms = d->elapsed_ms(start, stop);
    if (ms > 0) best = std::max(best, 2.0 * bytes / (ms * 1e6));
  }
  d->destroy_event(start);
  d->destroy_event(stop);
  d->free(a, bytes);
  d->free(b, bytes);
  return best;
}

}  // namespace

double memory_bandwidth_gbps(const std::string& device) {
  static std::mutex mu;
  static std::map<std::string, double> measured;
  std::lock_guard<std::mutex> lock(mu);
  auto it = measured.find(device);
  if (it != measured.end()) return it->second;
  double g = 0;
  try {
    g = device == "cuda" ? cuda_copy_gbps() : cpu_copy_gbps();
  } catch (const std::exception&) {
    g = 0;  // a device that cannot be measured has no peak to compare with
  }
  measured[device] = g;
  return g;
}

}  // namespace ls
