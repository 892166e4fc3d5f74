// Libraries loaded at run time (the CUDA driver, cuBLAS, cuBLASLt, cuFFT, cuDNN): the first of several file names
// that loads, and its entry points resolved by name, with a message that names the library file
// and every missing entry point. The binary then runs where they are absent.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace ls {

// A file to try. `preload`: files loaded first, globally, so that the library finds them by name
// (cuDNN's sub-libraries beside its shim, off the loader's path); absent ones are the library's to
// report.
struct DlCandidate {
  std::string file;
  std::vector<std::string> preload = {};
};

// The toolkit library `base` ("libcufft"), in the order tried: the CMake-found toolkit's folder,
// then base.so.<v> for each of `versions` ("12", "11"), base.so, /usr/local/cuda/lib64's base.so.
std::vector<DlCandidate> cuda_library_candidates(const std::string& base, const std::vector<std::string>& versions);

// The first candidate that loads (RTLD_NOW | RTLD_LOCAL; never closed), or nullptr. `which`, where
// given, gets the file the loader found, as a path (else the name that loaded).
void* open_first_library(const std::vector<DlCandidate>& candidates, std::string* which = nullptr);

// Entry points of a loaded library, by name. A required one that is missing fails the resolution;
// error() names the library and every missing one ("cuFFT (/usr/lib/libcufft.so.12) lacks
// cufftExecZ2D"). An optional one stays nullptr where missing.
class DlSymbols {
 public:
  DlSymbols(void* lib, std::string library) : lib_(lib), library_(std::move(library)) {}
  template <typename F>
  bool need(F& f, const char* name) {
    f = reinterpret_cast<F>(find(name));
    if (!f) missing_.push_back(name);
    return f != nullptr;
  }
  template <typename F>
  bool optional(F& f, const char* name) {
    f = reinterpret_cast<F>(find(name));
    if (!f) absent_.push_back(name);
    return f != nullptr;
  }
  bool ok() const { return missing_.empty(); }
  std::string error() const;   // empty when ok()
  std::string absent() const;  // the optional entry points missing, comma-separated ("" when none)

 private:
  void* find(const char* name) const;
  void* lib_;
  std::string library_;
  std::vector<std::string> missing_, absent_;
};

}  // namespace ls
