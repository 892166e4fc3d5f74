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

std::unique_ptr<LoadedCode> external_compile(const std::string& source, const CpuCompileOptions& o) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() /
                       ("lowerscope-" + std::to_string(getpid()) + "-" + std::to_string(std::hash<std::string>{}(source)));
  fs::create_directories(dir);
  const fs::path src = dir / "kernels.cpp", lib = dir / "kernels.so", log = dir / "compile.log";
  std::ofstream(src) << source;
  const std::string cmd = o.external_cxx + " " + o.opt_level +
                          " -march=native -fopenmp -fno-math-errno -fno-trapping-math -shared -fPIC -o " +
                          shell_quote(lib.string()) + " " + shell_quote(src.string()) + " > " + shell_quote(log.string()) + " 2>&1";
  const int rc = std::system(cmd.c_str());
  if (rc != 0) {
    std::ifstream l(log);
    std::string diag((std::istreambuf_iterator<char>(l)), std::istreambuf_iterator<char>());
    throw CompileError("the external compiler (" + o.external_cxx + ") rejected the generated kernels", diag);
  }
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) throw CompileError("cannot load the compiled kernels", dlerror());
  // The kernels brought the OpenMP runtime in; its worker threads outlive any one compile, so it
  // must never be unloaded with them (dlclose would pull the code from under idle threads).
  for (const char* rt : {"libgomp.so.1", "libomp.so.5", "libomp.so"})
    if (void* pin = dlopen(rt, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) dlclose(pin);
  std::error_code ec;
  fs::remove_all(dir, ec);
  return std::make_unique<DlopenCode>(h);
}

}  // namespace

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
    std::string diag;
    r.code = clang_jit_compile(source, o.opt_level, diag, &r.llvm_ir, &r.assembly);
    if (!r.code) throw CompileError("Clang rejected the generated kernels", diag);
    r.log = diag;
    r.compiler = "clang 14 (in-process, ORC JIT)";
  } else {
    r.code = external_compile(source, o);
    r.compiler = o.external_cxx + " (external, dlopen)";
  }
  r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

#ifndef LOWERSCOPE_HAVE_CLANG_JIT
std::unique_ptr<LoadedCode> clang_jit_compile(const std::string&, const std::string&, std::string& diagnostics, std::string*,
                                              std::string*) {
  diagnostics = "this build has no in-process Clang JIT";
  return nullptr;
}
#endif

}  // namespace ls
