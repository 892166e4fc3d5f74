#include "compile/cpu_compiler.h"

#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

namespace ls {
namespace {

class DlopenCode : public LoadedCode {
 public:
  explicit DlopenCode(void* h) : h_(h) {}
  ~DlopenCode() override { dlclose(h_); }
  void* symbol(const std::string& name) override { return dlsym(h_, name.c_str()); }

 private:
  void* h_;
};

std::string shell_quote(const std::string& s) {
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

// FNV-1a, 64 bits: the cache key (a hit is confirmed by comparing the stored source).
std::string fnv1a_hex(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::filesystem::path cache_folder(const CpuCompileOptions& o) {
  std::string d = o.cache_dir;
  if (d.empty())
    if (const char* e = std::getenv("LOWERSCOPE_CACHE_DIR")) d = e;
  if (d == "off") return {};
  if (!d.empty()) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "lowerscope" / "cpu";
  if (const char* h = std::getenv("HOME"); h && *h) return std::filesystem::path(h) / ".cache" / "lowerscope" / "cpu";
  return {};
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// Compiled code on disk: each entry is files key.<ext> beside key.cpp, its source. The source is
// written last and compared on every lookup, so an entry counts only when complete and only for
// the source it was made from; every file is renamed into place, so no reader sees half of one.
// A cache folder that cannot be written is skipped.
class DiskCache {
 public:
  DiskCache(std::filesystem::path dir, std::string key) : dir_(std::move(dir)), key_(std::move(key)) {}
  bool has(const std::string& ext, const std::string& source) const {
    std::error_code ec;
    return !dir_.empty() && std::filesystem::exists(path(ext), ec) && read_file(path(".cpp")) == source;
  }
  std::filesystem::path path(const std::string& ext) const { return dir_ / (key_ + ext); }
  std::string get(const std::string& ext) const { return read_file(path(ext)); }
  // Writes the entry's files, then its source; false when the folder cannot be written.
  bool put(const std::vector<std::pair<std::string, std::string>>& files, const std::string& source) const {
    std::error_code ec;
    if (dir_.empty() || (std::filesystem::create_directories(dir_, ec), ec)) return false;
    const std::string tmp = "." + std::to_string(getpid());
    auto write = [&](const std::string& ext, const std::string& bytes) {
      { std::ofstream(path(ext).string() + tmp, std::ios::binary) << bytes; }
      std::filesystem::rename(path(ext).string() + tmp, path(ext), ec);
      return !ec;
    };
    for (const auto& [ext, bytes] : files)
      if (!write(ext, bytes)) return false;
    return write(".cpp", source);
  }

 private:
  std::filesystem::path dir_;
  std::string key_;
};

std::unique_ptr<LoadedCode> load_library(const std::filesystem::path& lib) {
  prefer_short_openmp_spin();
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) throw CompileError("cannot load the compiled kernels", dlerror());
  // The kernels brought the OpenMP runtime in; its worker threads outlive any one compile, so it
  // must never be unloaded with them (dlclose would pull the code from under idle threads).
  for (const char* rt : {"libgomp.so.1", "libomp.so.5", "libomp.so"})
    if (void* pin = dlopen(rt, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) dlclose(pin);
  return std::make_unique<DlopenCode>(h);
}

std::unique_ptr<LoadedCode> external_compile(const std::string& source, const CpuCompileOptions& o, bool& from_cache) {
  namespace fs = std::filesystem;
  const std::string flags = o.external_cxx + " " + o.opt_level + " -march=native -fopenmp -fno-math-errno -fno-trapping-math -shared -fPIC";
  const std::string libs = " -lmvec";  // after the source: linkers with --as-needed drop earlier ones
  const DiskCache cache(cache_folder(o), fnv1a_hex(flags + libs + "\n" + source));
  if (cache.has(".so", source)) {
    from_cache = true;
    return load_library(cache.path(".so"));
  }
  const fs::path dir = fs::temp_directory_path() /
                       ("lowerscope-" + std::to_string(getpid()) + "-" + std::to_string(std::hash<std::string>{}(source)));
  fs::create_directories(dir);
  const fs::path src = dir / "kernels.cpp", lib = dir / "kernels.so", log = dir / "compile.log";
  std::ofstream(src) << source;
  const std::string cmd = flags + " -o " + shell_quote(lib.string()) + " " + shell_quote(src.string()) + libs + " > " +
                          shell_quote(log.string()) + " 2>&1";
  const int rc = std::system(cmd.c_str());
  if (rc != 0) {
    std::ifstream l(log);
    std::string diag((std::istreambuf_iterator<char>(l)), std::istreambuf_iterator<char>());
    throw CompileError("the external compiler (" + o.external_cxx + ") rejected the generated kernels", diag);
  }
  const fs::path to_load = cache.put({{".so", read_file(lib)}}, source) ? cache.path(".so") : lib;
  std::unique_ptr<LoadedCode> code = load_library(to_load);
  std::error_code ec;
  fs::remove_all(dir, ec);
  return code;
}

}  // namespace

// Both OpenMP runtimes spin their idle workers for a while after a parallel loop (GOMP 300k
// spins, libomp 200 ms); OpenBLAS's own threads then wait for cores the spinning workers hold,
// and a library call between two kernels ran 3 to 100 times slower (measured: a 32k-element
// kernel 5.3 ms instead of 0.04 ms). A short wait, unless the user set one, before either loads.
void prefer_short_openmp_spin() {
  setenv("GOMP_SPINCOUNT", "0", 0);
  setenv("KMP_BLOCKTIME", "1", 0);
}

bool have_clang_jit() {
#ifdef LOWERSCOPE_HAVE_CLANG_JIT
  return true;
#else
  return false;
#endif
}

CpuCompileResult compile_cpp(const std::string& source, const CpuCompileOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  CpuCompileResult r;
  if (have_clang_jit() && !o.external) {
    const DiskCache cache(cache_folder(o), "jit-" + fnv1a_hex("clang14 " + o.opt_level + " " + clang_jit_target() + "\n" + source));
    std::string diag;
    if (cache.has(".o", source)) {
      r.code = clang_jit_load_object(cache.get(".o"), diag);
      if (r.code) {
        r.from_cache = true;
        r.llvm_ir = cache.get(".ll");
        r.assembly = cache.get(".s");
        r.log = cache.get(".log");
        r.compiler = "clang 14 (in-process, ORC JIT; from the disk cache)";
      }
    }
    if (!r.code) {
      std::string object;
      diag.clear();
      r.code = clang_jit_compile(source, o.opt_level, diag, &r.llvm_ir, &r.assembly, &object);
      if (!r.code) throw CompileError("Clang rejected the generated kernels", diag);
      r.log = diag;
      r.compiler = "clang 14 (in-process, ORC JIT)";
      cache.put({{".o", object}, {".ll", r.llvm_ir}, {".s", r.assembly}, {".log", r.log}}, source);
    }
  } else {
    r.code = external_compile(source, o, r.from_cache);
    r.compiler = o.external_cxx + (r.from_cache ? " (external, dlopen; from the disk cache)" : " (external, dlopen)");
  }
  r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

#ifndef LOWERSCOPE_HAVE_CLANG_JIT
std::unique_ptr<LoadedCode> clang_jit_compile(const std::string&, const std::string&, std::string& diagnostics, std::string*,
                                              std::string*, std::string*) {
  diagnostics = "this build has no in-process Clang JIT";
  return nullptr;
}
std::unique_ptr<LoadedCode> clang_jit_load_object(const std::string&, std::string& diagnostics) {
  diagnostics = "this build has no in-process Clang JIT";
  return nullptr;
}
std::string clang_jit_target() { return {}; }
#endif

}  // namespace ls
