// C++ source -> loaded kernels. In-process with Clang/LLVM's ORC JIT when the build found the
// Clang libraries, else (or on request) an external `c++ ... -shared` and dlopen.
#pragma once
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace ls {

class LoadedCode {
 public:
  virtual ~LoadedCode() = default;
  virtual void* symbol(const std::string& name) = 0;  // nullptr when absent
};

struct CpuCompileOptions {
  bool external = false;       // force the external compiler
  std::string external_cxx = "c++";
  std::string opt_level = "-O3";
  // Compiled code (the external path's libraries, the JIT's object files with their IR and
  // assembly) is kept in this folder, keyed by source, compiler and target, and loaded from there
  // next time. Empty: $LOWERSCOPE_CACHE_DIR, else $XDG_CACHE_HOME/lowerscope/cpu,
  // else ~/.cache/lowerscope/cpu; "off" (here or in $LOWERSCOPE_CACHE_DIR) disables it.
  std::string cache_dir;
  // The first line (1-based) of each kernel in the source, lines before the first being the
  // prelude every kernel needs: the external compiler then compiles the kernels as several
  // translation units at once, one a core, and links them into one library. Empty: one unit.
  std::vector<int> kernel_lines;
  // The in-process path's optimized LLVM IR and assembly as text (CpuCompileResult::llvm_ir,
  // ::assembly). Off where no one reads them (PipelineOptions::stage_text): code generation then
  // writes the object itself, and the IR is not printed (on a large source, printing the IR and
  // assembly and assembling the text again are a sixth of Clang's work). A cached compile without
  // them is compiled again where they are asked for.
  bool want_text = true;
};

struct CpuCompileResult {
  std::unique_ptr<LoadedCode> code;
  std::string compiler;  // what compiled it, for the GUI and the report
  std::string log;       // the compiler's warnings and remarks
  std::string llvm_ir;   // the optimized LLVM IR (in-process path only)
  std::string assembly;  // the x86 assembly Clang made of it (in-process path only)
  // The machine code by file name: ELF objects (JIT: kernels.o, or kernels.0.o, kernels.1.o, ...
  // for a source compiled as several units) or a shared library (external: kernels.so).
  std::vector<std::pair<std::string, std::string>> objects;
  double ms = 0;
  bool from_cache = false;
};

// The compiler's own diagnostics, and the source line they point at.
struct CompileError : std::runtime_error {
  CompileError(const std::string& what, std::string diagnostics)
      : std::runtime_error(what), diagnostics(std::move(diagnostics)) {}
  std::string diagnostics;
};

bool have_clang_jit();
// Sets OpenMP's idle waits before a runtime loads (unless the user chose): see the .cpp.
void prefer_short_openmp_spin();
// Binds libomp's team one thread a core, spread, before it loads (unless the user chose an
// affinity): see the .cpp.
void prefer_spread_openmp_threads();

// The OpenMP runtime the loaded kernels brought in (libomp for the JIT, libgomp for the external
// compiler), so that host code (the library calls between kernels) runs on the same team of
// threads instead of a second set competing for the cores. `parallel` is null until kernels have
// loaded one; it is GNU OpenMP's entry point, which both runtimes export.
struct OpenMpRuntime {
  void (*parallel)(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags) = nullptr;
  int (*max_threads)() = nullptr;
  int (*in_parallel)() = nullptr;
};
OpenMpRuntime loaded_openmp_runtime();
// Records the runtime found through `handle` (a dlopen handle, or RTLD_DEFAULT); used by loaders.
void note_openmp_runtime(void* handle);
CpuCompileResult compile_cpp(const std::string& source, const CpuCompileOptions& opts);

// Used by compile_cpp when the in-process JIT is built in (compile/clang_jit.cpp): compile
// translation units to object files, each on a thread of its own, and link them into one JIT;
// load objects compiled before; the target the objects are for (part of the cache key). The IR
// and assembly of several units follow one another, each under a line naming its unit.
std::unique_ptr<LoadedCode> clang_jit_compile(const std::vector<std::string>& units, const std::string& opt_level,
                                              std::string& diagnostics, std::string* llvm_ir = nullptr,
                                              std::string* assembly = nullptr, std::vector<std::string>* objects = nullptr);
std::unique_ptr<LoadedCode> clang_jit_load_objects(const std::vector<std::string>& objects, std::string& diagnostics);
std::string clang_jit_target();

}  // namespace ls
