#include "compile/cpu_compiler.h"

#include "compile/disk_cache.h"
#include "compile/phase_times.h"
#include "compile/split_source.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

namespace ls {
namespace {

// Lines of generated source a translation unit of the in-process compile holds at least: below
// that, the prelude every unit parses again costs more than compiling at once saves.
constexpr long kLinesPerJitUnit = 3000;

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

// The first of these OpenMP runtimes already in the process becomes the one host code shares
// (note_openmp_runtime); `flags` adds to the lookup (RTLD_NODELETE pins it for good).
void note_loaded_runtime(std::initializer_list<const char*> names, int flags) {
  for (const char* rt : names)
    if (void* h = dlopen(rt, RTLD_NOW | RTLD_NOLOAD | flags)) {
      note_openmp_runtime(h);
      dlclose(h);
      return;
    }
}

std::unique_ptr<LoadedCode> load_library(const std::filesystem::path& lib) {
  prefer_short_openmp_spin();
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) throw CompileError("cannot load the compiled kernels", dlerror());
  // The kernels brought the OpenMP runtime in; its worker threads outlive any one compile, so it
  // must never be unloaded with them (dlclose would pull the code from under idle threads).
  note_loaded_runtime({"libgomp.so.1", "libomp.so.5", "libomp.so"}, RTLD_NODELETE);
  return std::make_unique<DlopenCode>(h);
}

std::unique_ptr<LoadedCode> external_compile(const std::string& source, const CpuCompileOptions& o, bool& from_cache,
                                             std::string& library) {
  namespace fs = std::filesystem;
  // sinf and cosf not builtins: GCC merges a sin and a cos of one value into sincosf, which has
  // no vector variant, and the loop stays scalar (sin^2 + cos^2 over 1000 elements: 3 us against
  // Clang's 0.8); as plain functions, the prelude's simd declarations vectorize them.
  const std::string options = " " + o.opt_level + " -march=native -fopenmp -fno-math-errno -fno-trapping-math -fno-builtin-sinf -fno-builtin-cosf -shared -fPIC";
  const std::string flags = o.external_cxx + options;
  // The kernels use nothing of the C++ library: GCC's C driver links them without libstdc++
  // (20 ms less a compile here). Only for the default compiler: another one's OpenMP runtime
  // (clang++: libomp) must come from its own driver.
  const bool c_driver = o.external_cxx == "c++";
  const std::string link = c_driver ? "cc" + options : flags;
  const std::string libs = " -lmvec";  // after the source: linkers with --as-needed drop earlier ones
  const DiskCache cache(cache_folder(o.cache_dir, "cpu"), fnv1a_hex(flags + libs + "\n" + source));
  if (cache.has(".so", source)) {
    from_cache = true;
    library = cache.get(".so");
    return load_library(cache.path(".so"));
  }
  const fs::path dir = fs::temp_directory_path() /
                       ("lowerscope-" + std::to_string(getpid()) + "-" + std::to_string(std::hash<std::string>{}(source)));
  fs::create_directories(dir);
  const fs::path lib = dir / "kernels.so";
  auto run = [](const std::string& cmd, const fs::path& log) {
    const int rc = std::system((cmd + " > " + shell_quote(log.string()) + " 2>&1").c_str());
    std::ifstream l(log);
    return std::make_pair(rc, std::string((std::istreambuf_iterator<char>(l)), std::istreambuf_iterator<char>()));
  };
  // Several units at once where there are cores for them (a model of 50 kernels: 1.7 s as one
  // unit on the GPU machine's 16 cores), then one link.
  const std::vector<std::string> units = split_source(source, o.kernel_lines, compile_threads(), "kernels.cpp", true);
  std::vector<std::pair<int, std::string>> results(units.size());
  std::string objects;
  if (units.size() == 1) {
    std::ofstream(dir / "kernels.cpp") << source;
    const std::string compile_and_link = c_driver ? "cc -x c++" + options : flags;
    results[0] = run(compile_and_link + " -o " + shell_quote(lib.string()) + " " + shell_quote((dir / "kernels.cpp").string()) + libs,
                     dir / "compile.log");
  } else {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < units.size(); ++i) {
      const fs::path src = dir / ("part" + std::to_string(i) + ".cpp"), obj = dir / ("part" + std::to_string(i) + ".o");
      std::ofstream(src) << units[i];
      objects += " " + shell_quote(obj.string());
      threads.emplace_back([&, i, src, obj] {
        results[i] = run(flags + " -c -o " + shell_quote(obj.string()) + " " + shell_quote(src.string()), dir / ("part" + std::to_string(i) + ".log"));
      });
    }
    for (auto& t : threads) t.join();
  }
  for (const auto& [rc, diag] : results)
    if (rc != 0) throw CompileError("the external compiler (" + o.external_cxx + ") rejected the generated kernels", diag);
  if (units.size() > 1) {
    const auto [rc, diag] = run(link + " -o " + shell_quote(lib.string()) + objects + libs, dir / "link.log");
    if (rc != 0) throw CompileError("the external compiler (" + o.external_cxx + ") could not link the generated kernels", diag);
  }
  library = read_file(lib);
  const fs::path to_load = cache.put({{".so", library}}, source) ? cache.path(".so") : lib;
  std::unique_ptr<LoadedCode> code = load_library(to_load);
  std::error_code ec;
  fs::remove_all(dir, ec);
  return code;
}

}  // namespace

// The library calls between kernels run on the kernels' own OpenMP team (loaded_openmp_runtime),
// so its workers may spin between parallel loops as the runtimes do by default: a sleeping team
// costs a wake-up per kernel (tens of microseconds on 16 cores). Only when the user leaves matrix
// multiplies to OpenBLAS's own threads (LOWERSCOPE_BLAS=library) would spinning workers hold the
// cores those threads need (measured: a 32k-element kernel after a library call 5.3 ms instead
// of 0.04 ms); then the waits are short, unless the user set them.
void prefer_short_openmp_spin() {
  const char* blas = std::getenv("LOWERSCOPE_BLAS");
  if (!blas || std::string(blas) != "library") return;
  setenv("GOMP_SPINCOUNT", "0", 0);
  setenv("KMP_BLOCKTIME", "1", 0);
}

// libomp's team unbound could start with its worker on the caller's core: OpenBLAS's own thread,
// spinning for a while after the library loads, holds the other core at that moment, and the
// scheduler then left the pair sharing one core for the whole process (a 2-core VM: one run in
// three or so took 2.1x as long, every kernel; res_block 0.36 or 0.78 ms, softmax 0.015 or
// 0.055). Bound one thread a core (OMP_PROC_BIND=spread, as PyTorch's CPU launcher binds its
// threads), every run took the short time. Not for libgomp (the external compiler's kernels):
// it showed no such runs.
void prefer_spread_openmp_threads() {
  for (const char* chosen : {"OMP_PROC_BIND", "OMP_PLACES", "KMP_AFFINITY", "GOMP_CPU_AFFINITY"})
    if (std::getenv(chosen)) return;
  setenv("OMP_PROC_BIND", "spread", 0);
}

namespace {
std::mutex runtime_mutex;
OpenMpRuntime runtime;
}  // namespace

void note_openmp_runtime(void* handle) {
  OpenMpRuntime r;
  r.parallel = reinterpret_cast<decltype(r.parallel)>(dlsym(handle, "GOMP_parallel"));
  r.max_threads = reinterpret_cast<decltype(r.max_threads)>(dlsym(handle, "omp_get_max_threads"));
  r.in_parallel = reinterpret_cast<decltype(r.in_parallel)>(dlsym(handle, "omp_in_parallel"));
  if (!r.parallel || !r.max_threads || !r.in_parallel) return;
  std::lock_guard<std::mutex> lk(runtime_mutex);
  runtime = r;
}

OpenMpRuntime loaded_openmp_runtime() {
  std::lock_guard<std::mutex> lk(runtime_mutex);
  return runtime;
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
    const DiskCache cache(cache_folder(o.cache_dir, "cpu"), "jit-" + fnv1a_hex("clang14 " + o.opt_level + " " + clang_jit_target() + "\n" + source));
    std::string diag;
    // The objects as the cache keeps them: kernels.o, or kernels.0.o ... for several units.
    auto object_name = [](size_t i, size_t n) { return n == 1 ? std::string("kernels.o") : "kernels." + std::to_string(i) + ".o"; };
    // An entry written without the texts (want_text off) serves a compile that wants them not.
    const bool cached = cache.has(".units", source);  // (reads the cached source: once)
    std::string cached_ir = cached && o.want_text ? cache.get(".ll") : std::string();
    if (cached && (!o.want_text || !cached_ir.empty())) {
      PhaseTimer timer("disk cache: compiled kernels read and loaded");
      const size_t n = std::max<size_t>(1, std::strtoul(cache.get(".units").c_str(), nullptr, 10));
      std::vector<std::string> objects;
      for (size_t i = 0; i < n; ++i) objects.push_back(cache.get("." + std::to_string(i) + ".o"));
      r.code = clang_jit_load_objects(objects, diag);
      if (r.code) {
        r.from_cache = true;
        if (o.want_text) {
          r.llvm_ir = std::move(cached_ir);
          r.assembly = cache.get(".s");
        }
        r.log = cache.get(".log");
        for (size_t i = 0; i < n; ++i) r.objects.emplace_back(object_name(i, n), std::move(objects[i]));
        r.compiler = "clang 14 (in-process, ORC JIT" + (n > 1 ? ", " + std::to_string(n) + " units" : std::string()) +
                     "; from the disk cache)";
      }
    }
    if (!r.code) {
      // A large source compiles as several units at once, one a core; a small one as one unit
      // (each unit parses the prelude again, about 150 ms on this project's 2-core machines).
      const int parts = std::clamp(static_cast<int>(std::count(source.begin(), source.end(), '\n') / kLinesPerJitUnit), 1,
                                   compile_threads());
      const std::vector<std::string> units =
          parts > 1 ? split_source(source, o.kernel_lines, parts, "kernels.cpp") : std::vector<std::string>{source};
      std::vector<std::string> objects;
      diag.clear();
      PhaseTimer timer("Clang: compile in-process (C++ -> IR -> object, JIT load)" +
                       (units.size() > 1 ? " (" + std::to_string(units.size()) + " units at once)" : std::string()));
      r.code = clang_jit_compile(units, o.opt_level, diag, o.want_text ? &r.llvm_ir : nullptr,
                                 o.want_text ? &r.assembly : nullptr, &objects);
      timer.stop();
      if (!r.code) throw CompileError("Clang rejected the generated kernels", diag);
      r.log = diag;
      r.compiler = "clang 14 (in-process, ORC JIT" + (units.size() > 1 ? ", " + std::to_string(units.size()) + " units" : std::string()) + ")";
      std::vector<std::pair<std::string, std::string>> files = {
          {".units", std::to_string(objects.size())}, {".ll", r.llvm_ir}, {".s", r.assembly}, {".log", r.log}};
      for (size_t i = 0; i < objects.size(); ++i) files.emplace_back("." + std::to_string(i) + ".o", objects[i]);
      cache.put(files, source);
      for (size_t i = 0; i < objects.size(); ++i) r.objects.emplace_back(object_name(i, objects.size()), std::move(objects[i]));
    }
    note_loaded_runtime({"libomp.so.5", "libomp.so"}, 0);  // the JIT's kernels call libomp
  } else {
    PhaseTimer timer("external compiler: compile and dlopen");
    std::string library;
    r.code = external_compile(source, o, r.from_cache, library);
    r.objects.emplace_back("kernels.so", std::move(library));
    r.compiler = o.external_cxx + (r.from_cache ? " (external, dlopen; from the disk cache)" : " (external, dlopen)");
  }
  r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

#ifndef LOWERSCOPE_HAVE_CLANG_JIT
std::unique_ptr<LoadedCode> clang_jit_compile(const std::vector<std::string>&, const std::string&, std::string& diagnostics, std::string*,
                                              std::string*, std::vector<std::string>*) {
  diagnostics = "this build has no in-process Clang JIT";
  return nullptr;
}
std::unique_ptr<LoadedCode> clang_jit_load_objects(const std::vector<std::string>&, std::string& diagnostics) {
  diagnostics = "this build has no in-process Clang JIT";
  return nullptr;
}
std::string clang_jit_target() { return {}; }
#endif

}  // namespace ls
