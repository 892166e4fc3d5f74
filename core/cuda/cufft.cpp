#include "cuda/cufft.h"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "cuda/dl_library.h"

namespace ls {
namespace {

// cufftType's values (cufft.h) and the directions.
constexpr int kR2C = 0x2a, kC2R = 0x2c, kC2C = 0x29, kD2Z = 0x6a, kZ2D = 0x6c, kZ2Z = 0x69;
constexpr int kForward = -1, kInverse = 1;

// cufftResult's names, for messages.
std::string status_text(int r) {
  static const char* names[] = {"CUFFT_SUCCESS", "CUFFT_INVALID_PLAN", "CUFFT_ALLOC_FAILED", "CUFFT_INVALID_TYPE", "CUFFT_INVALID_VALUE",
                                "CUFFT_INTERNAL_ERROR", "CUFFT_EXEC_FAILED", "CUFFT_SETUP_FAILED", "CUFFT_INVALID_SIZE",
                                "CUFFT_UNALIGNED_DATA"};
  return r >= 0 && r < 10 ? std::string(names[r]) + " (" + std::to_string(r) + ")" : "status " + std::to_string(r);
}

}  // namespace

std::string FftTransform::text() const {
  static const char* names[2][3] = {{"R2C", "C2R", "C2C"}, {"D2Z", "Z2D", "Z2Z"}};
  std::string s = names[f64][static_cast<int>(type)] + std::string(" ");
  for (size_t i = 0; i < n.size(); ++i) s += (i ? "x" : "") + std::to_string(n[i]);
  return s + ", batch " + std::to_string(batch);
}

Cufft* Cufft::get(std::string* why) {
  static std::mutex m;
  static std::unique_ptr<Cufft> c;
  static std::string error;
  static bool tried = false;
  std::lock_guard<std::mutex> lock(m);
  if (!tried) {
    tried = true;
    std::string reason;
    if (!CudaDriver::get(&reason)) {
      error = reason;
    } else {
      auto f = std::make_unique<Cufft>();
      // The CMake-found toolkit's, then CUDA 13's (.so.12), CUDA 12's (.so.11), any, /usr/local/cuda's.
      f->lib_ = open_first_library(cuda_library_candidates("libcufft", {"12", "11"}), &f->library);
      if (!f->lib_) {
        error = "cuFFT (libcufft.so) was not found";
      } else {
        DlSymbols s(f->lib_, "cuFFT (" + f->library + ")");
        s.need(f->create_, "cufftCreate");
        s.need(f->make_plan_, "cufftMakePlanMany64");
        s.need(f->destroy_, "cufftDestroy");
        s.need(f->set_stream_, "cufftSetStream");
        s.need(f->exec_c2c_, "cufftExecC2C");
        s.need(f->exec_z2z_, "cufftExecZ2Z");
        s.need(f->exec_r2c_, "cufftExecR2C");
        s.need(f->exec_d2z_, "cufftExecD2Z");
        s.need(f->exec_c2r_, "cufftExecC2R");
        s.need(f->exec_z2d_, "cufftExecZ2D");
        int (*get_version)(int*) = nullptr;
        if (s.optional(get_version, "cufftGetVersion")) get_version(&f->version);
        if (!s.ok()) error = s.error();
        else {
          f->generation_ = CudaDriver::get()->generation();
          c = std::move(f);
        }
      }
    }
  }
  if (!c && why) *why = error;
  return c.get();
}

size_t Cufft::plans() const {
  std::lock_guard<std::mutex> lock(m_);
  return plans_.size();
}

size_t Cufft::max_plans() const {
  std::lock_guard<std::mutex> lock(m_);
  return max_plans_;
}

void Cufft::set_max_plans(size_t n) {
  std::lock_guard<std::mutex> lock(m_);
  max_plans_ = std::max<size_t>(1, n);
  evict_down_to(max_plans_);
}

void Cufft::evict_down_to(size_t n) {
  if (plans_.size() <= n) return;
  CudaDriver::get()->synchronize();  // no transform of a plan about to go is still running on the stream
  while (plans_.size() > n) {
    auto oldest = plans_.begin();
    for (auto it = plans_.begin(); it != plans_.end(); ++it)
      if (it->second.used < oldest->second.used) oldest = it;
    destroy_(oldest->second.handle);
    plans_.erase(oldest);
  }
}

int Cufft::plan(const FftTransform& t) {
  if (const int g = CudaDriver::get()->generation(); g != generation_) {  // the device was reset: the plans died with it
    plans_.clear();
    generation_ = g;
  }
  if (auto it = plans_.find(t); it != plans_.end()) {
    it->second.used = ++uses_;
    return it->second.handle;
  }
  if (t.n.empty() || t.n.size() > 3) throw std::invalid_argument("cuFFT transforms 1 to 3 dimensions at once, not " + std::to_string(t.n.size()));
  static const int types[2][3] = {{kR2C, kC2R, kC2C}, {kD2Z, kZ2D, kZ2Z}};
  int handle = 0;
  if (const int r = create_(&handle); r != 0) throw std::runtime_error("cufftCreate failed: " + status_text(r));
  std::vector<long long> n(t.n.begin(), t.n.end());
  size_t work = 0;
  // Basic layout (no embeds): each signal contiguous, one after another.
  if (const int r = make_plan_(handle, static_cast<int>(n.size()), n.data(), nullptr, 1, 0, nullptr, 1, 0, types[t.f64][static_cast<int>(t.type)],
                               t.batch, &work);
      r != 0) {
    destroy_(handle);
    throw std::runtime_error("cufftMakePlanMany64 refused " + t.text() + ": " + status_text(r));
  }
  evict_down_to(max_plans_ - 1);
  plans_.emplace(t, Plan{handle, ++uses_});
  return handle;
}

void Cufft::execute(const FftTransform& t, DevicePtr in, DevicePtr out, bool forward) {
  std::lock_guard<std::mutex> lock(m_);
  const int p = plan(t);
  if (const int r = set_stream_(p, CudaDriver::get()->stream()); r != 0) throw std::runtime_error("cufftSetStream failed: " + status_text(r));
  void *i = reinterpret_cast<void*>(in), *o = reinterpret_cast<void*>(out);
  int r = 0;
  switch (t.type) {
    case FftTransform::Type::c2c: r = (t.f64 ? exec_z2z_ : exec_c2c_)(p, i, o, forward ? kForward : kInverse); break;
    case FftTransform::Type::r2c: r = (t.f64 ? exec_d2z_ : exec_r2c_)(p, i, o); break;
    case FftTransform::Type::c2r: r = (t.f64 ? exec_z2d_ : exec_c2r_)(p, i, o); break;
  }
  if (r != 0) throw std::runtime_error("cuFFT's " + t.text() + " failed: " + status_text(r));
}

}  // namespace ls
