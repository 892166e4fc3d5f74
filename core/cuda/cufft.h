// cuFFT, loaded at run time (libcufft.so.12 of CUDA 13, .so.11 of CUDA 12), for the FFT library
// calls (_fft_r2c, _fft_c2r, _fft_c2c) on the GPU, as ATen's CUDA FFTs run on it. Its few entry
// points are declared here, as cuBLAS's are (no cufft.h needed to build). One transform is a
// batch of contiguous signals (cuFFT's basic layout); exec/fft_cuda.h makes any call of those
// ops out of such transforms and the copies and scaling around them.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "cuda/driver.h"

namespace ls {

// A batched transform over contiguous buffers: `batch` signals of sizes n (1 to 3 dims, the
// logical sizes), one after another. r2c: real [batch, n...] in, complex [batch, n..., n_last/2 + 1]
// out (forward); c2r: the reverse (inverse; cuFFT overwrites its input); c2c: complex both ways.
// f64: double precision (D2Z, Z2D, Z2Z) instead of single (R2C, C2R, C2C).
struct FftTransform {
  enum class Type : uint8_t { r2c, c2r, c2c };
  Type type = Type::c2c;
  bool f64 = false;
  std::vector<int64_t> n;
  int64_t batch = 1;
  bool operator<(const FftTransform& o) const {
    return std::tie(type, f64, n, batch) < std::tie(o.type, o.f64, o.n, o.batch);
  }
  std::string text() const;  // "C2C 64x64, batch 8"
};

class Cufft {
 public:
  static Cufft* get(std::string* why = nullptr);  // nullptr (with the reason) when not loadable
  // `t` from `in` into `out` (c2c: in == out is in place) on the driver's current stream; the
  // plan is made at the first call of its shape and kept (cufftMakePlanMany64), up to
  // max_plans(): then the least recently used is destroyed first (a plan holds its work area on
  // the device), as PyTorch's cuFFT plan cache (torch.backends.cuda.cufft_plan_cache, 4096 plans).
  // forward: c2c's direction (r2c is always forward, c2r inverse). Throws naming cuFFT's status.
  void execute(const FftTransform& t, DevicePtr in, DevicePtr out, bool forward);
  size_t plans() const;
  size_t max_plans() const;
  void set_max_plans(size_t n);  // at least 1; plans above it are destroyed, least recently used first
  std::string library;  // the file it was loaded from
  int version = 0;      // cufftGetVersion

 private:
  int plan(const FftTransform& t);
  void* lib_ = nullptr;
  int generation_ = 0;                      // the device context the plans belong to
  void evict_down_to(size_t n);              // with m_ held
  struct Plan {
    int handle = 0;
    uint64_t used = 0;  // when it last ran (uses_ then)
  };
  std::map<FftTransform, Plan> plans_;      // cufftHandle per transform
  uint64_t uses_ = 0;
  size_t max_plans_ = 4096;
  mutable std::mutex m_;
  int (*create_)(int*) = nullptr;
  int (*make_plan_)(int, int, long long*, long long*, long long, long long, long long*, long long, long long, int, long long,
                    size_t*) = nullptr;
  int (*destroy_)(int) = nullptr;
  int (*set_stream_)(int, void*) = nullptr;
  int (*exec_c2c_)(int, void*, void*, int) = nullptr;  // C2C and Z2Z
  int (*exec_z2z_)(int, void*, void*, int) = nullptr;
  int (*exec_r2c_)(int, void*, void*) = nullptr;       // R2C, D2Z
  int (*exec_d2z_)(int, void*, void*) = nullptr;
  int (*exec_c2r_)(int, void*, void*) = nullptr;       // C2R, Z2D
  int (*exec_z2d_)(int, void*, void*) = nullptr;
};

}  // namespace ls
