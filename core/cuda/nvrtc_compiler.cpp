#include "cuda/nvrtc_compiler.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>
#include <vector>

#include "compile/cpu_compiler.h"
#include "compile/disk_cache.h"
#include "compile/phase_times.h"
#include "compile/split_source.h"

#ifdef LOWERSCOPE_HAVE_NVRTC
#include <nvrtc.h>
#endif
#ifdef LOWERSCOPE_HAVE_NVJITLINK
#include <nvJitLink.h>
#endif

namespace ls {

#ifdef LOWERSCOPE_HAVE_NVRTC
namespace {

constexpr const char* kSourceName = "lowerscope_kernels.cu";

struct Built {
  std::string code, ptx, log;  // code: the PTX, or the cubin (a real architecture's compile gives its PTX too)
  bool ok = false;
};

bool split_compile_supported() {
  static const bool yes = [] {
    int major = 0, minor = 0;
    return nvrtcVersion(&major, &minor) == NVRTC_SUCCESS && (major > 12 || (major == 12 && minor >= 1));
  }();
  return yes;
}

// One NVRTC compile: PTX for a virtual architecture, or a cubin (and the PTX it came from) for a
// real one; `relocatable` cubins are parts that nvJitLink links into one.
Built nvrtc_build(const std::string& source, const std::string& arch, bool want_cubin, const std::string& module,
                  bool relocatable = false) {
  PhaseTimer timer(std::string(want_cubin ? "NVRTC: PTX + cubin" : "NVRTC: PTX") + " (" + module + ")");
  Built b;
  nvrtcProgram prog = nullptr;
  if (nvrtcCreateProgram(&prog, source.c_str(), kSourceName, 0, nullptr, nullptr) != NVRTC_SUCCESS) {
    b.log = "nvrtcCreateProgram failed";
    return b;
  }
  const std::string arch_opt = "-arch=" + arch;
  std::vector<const char*> opts = {arch_opt.c_str(), "-std=c++17", "-default-device", "--extra-device-vectorization"};
  // NVRTC 12.1 and later optimize (NVVM) and assemble (ptxas) the kernels of one program on
  // several threads (parts compiled at once do without: they already fill the cores).
  if (relocatable)
    opts.push_back("-rdc=true");
  else if (split_compile_supported())
    opts.push_back("--split-compile=0");
  const nvrtcResult r = nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  size_t n = 0;
  nvrtcGetProgramLogSize(prog, &n);
  b.log.assign(n, '\0');
  if (n) nvrtcGetProgramLog(prog, b.log.data());
  while (!b.log.empty() && (b.log.back() == '\0' || b.log.back() == '\n')) b.log.pop_back();
  if (r == NVRTC_SUCCESS) {
    if (nvrtcGetPTXSize(prog, &n) == NVRTC_SUCCESS) {
      b.ptx.assign(n, '\0');
      nvrtcGetPTX(prog, b.ptx.data());
      while (!b.ptx.empty() && b.ptx.back() == '\0') b.ptx.pop_back();
    }
    if (want_cubin) {
      nvrtcGetCUBINSize(prog, &n);
      b.code.assign(n, '\0');
      nvrtcGetCUBIN(prog, b.code.data());
    } else {
      b.code = b.ptx;
    }
    b.ok = true;
  }
  nvrtcDestroyProgram(&prog);
  return b;
}

#ifdef LOWERSCOPE_HAVE_NVJITLINK
// Relocatable cubins linked into one cubin for `arch`; false with nvJitLink's log.
bool link_parts(const std::vector<std::string>& cubins, const std::string& arch, std::string& linked, std::string& log) {
  PhaseTimer timer("nvJitLink: parts linked");
  const std::string arch_opt = "-arch=" + arch;
  const char* opts[] = {arch_opt.c_str()};
  nvJitLinkHandle h = nullptr;
  if (nvJitLinkCreate(&h, 1, opts) != NVJITLINK_SUCCESS) {
    log = "nvJitLinkCreate failed";
    return false;
  }
  bool ok = true;
  for (size_t i = 0; ok && i < cubins.size(); ++i) {
    const std::string name = "part" + std::to_string(i + 1) + ".cubin";
    ok = nvJitLinkAddData(h, NVJITLINK_INPUT_CUBIN, cubins[i].data(), cubins[i].size(), name.c_str()) == NVJITLINK_SUCCESS;
  }
  ok = ok && nvJitLinkComplete(h) == NVJITLINK_SUCCESS;
  size_t n = 0;
  if (ok && nvJitLinkGetLinkedCubinSize(h, &n) == NVJITLINK_SUCCESS) {
    linked.assign(n, '\0');
    ok = nvJitLinkGetLinkedCubin(h, linked.data()) == NVJITLINK_SUCCESS;
  } else {
    ok = false;
    if (nvJitLinkGetErrorLogSize(h, &n) == NVJITLINK_SUCCESS && n) {
      log.assign(n, '\0');
      nvJitLinkGetErrorLog(h, log.data());
      while (!log.empty() && log.back() == '\0') log.pop_back();
    }
  }
  nvJitLinkDestroy(&h);
  return ok;
}
#endif

// The source's parts: one, or (a cubin of several kernels, nvJitLink at hand) up to a part a
// core, compiled at once and linked (a model of 131 kernels: 2.3 s as one program on the GPU
// machine's 16 cores, where NVRTC's own --split-compile gains little).
std::vector<std::string> source_parts(const std::string& source, const CudaCompileOptions& o) {
#ifdef LOWERSCOPE_HAVE_NVJITLINK
  if (o.cubin) return split_source(source, o.kernel_lines, nvrtc_programs_at_once(), kSourceName);
#endif
  return {source};
}

// cuobjdump's SASS listing of a cubin, when the tool is there (the GPU machine has it).
std::string disassemble(const std::string& cubin) {
  namespace fs = std::filesystem;
  std::string tool;
  for (const char* dir : {LOWERSCOPE_CUDA_BIN, "/usr/local/cuda/bin"})
    if (fs::exists(fs::path(dir) / "cuobjdump")) {
      tool = (fs::path(dir) / "cuobjdump").string();
      break;
    }
  if (tool.empty() || cubin.empty()) return {};
  PhaseTimer timer("cuobjdump -sass");
  const fs::path f = fs::temp_directory_path() / ("lowerscope-" + std::to_string(getpid()) + ".cubin");
  { std::ofstream(f, std::ios::binary) << cubin; }
  std::string out;
  if (FILE* p = popen((tool + " -sass '" + f.string() + "' 2>&1").c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
  }
  std::error_code ec;
  fs::remove(f, ec);
  return out;
}

}  // namespace

bool have_nvrtc() { return true; }

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return {};
  return std::to_string(major) + "." + std::to_string(minor);
}

CudaCompileResult compile_cuda(const std::string& source, const CudaCompileOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  CudaCompileResult r;
  const std::string sm = std::to_string(o.sm);
  r.compiler = "NVRTC " + nvrtc_version() + (o.ptx ? ", compute_" + sm : ",") + (o.cubin ? " + sm_" + sm : "");
  const std::vector<std::string> parts = source_parts(source, o);
  if (parts.size() > 1) r.compiler += " (" + std::to_string(parts.size()) + " parts at once, linked by nvJitLink)";
  const DiskCache cache(cache_folder(o.cache_dir, "cuda"), fnv1a_hex(r.compiler + "\n" + source), ".cu");
  if ((!o.ptx || cache.has(".ptx", source)) && (!o.cubin || cache.has(".cubin", source))) {
    PhaseTimer timer("disk cache: PTX / cubin read");
    if (o.ptx) r.ptx = cache.get(".ptx");
    if (o.cubin) r.cubin = cache.get(".cubin");
    r.log = cache.get(".log");
    r.sass = cache.get(".sass");
    r.from_cache = true;
  } else if (parts.size() == 1) {
    // One compile: for sm_XX it gives the cubin and the PTX it was made from (compute_XX, as a
    // compile for the virtual architecture would).
    const Built b = nvrtc_build(source, (o.cubin ? "sm_" : "compute_") + sm, o.cubin, o.module);
    if (!b.ok) throw CompileError("NVRTC rejected the generated CUDA kernels", b.log);
    if (o.ptx) r.ptx = b.ptx;
    if (o.cubin) r.cubin = b.code;
    r.log = b.log;
  } else {
#ifdef LOWERSCOPE_HAVE_NVJITLINK
    // Parts compiled at once, each a relocatable cubin (its #line directives keep NVRTC's
    // messages on the whole source's lines), then linked; the PTX shown is the parts' in order.
    const std::string module = o.module + ", in " + std::to_string(parts.size()) + " parts";
    std::vector<std::future<Built>> building;
    for (const std::string& part : parts)
      building.push_back(std::async(std::launch::async, [&part, &sm, &module] { return nvrtc_build(part, "sm_" + sm, true, module, true); }));
    std::vector<Built> built;
    for (auto& f : building) built.push_back(f.get());
    std::vector<std::string> cubins;
    for (size_t i = 0; i < built.size(); ++i) {
      if (!built[i].ok) throw CompileError("NVRTC rejected the generated CUDA kernels", built[i].log);
      if (!built[i].log.empty()) r.log += (r.log.empty() ? "" : "\n") + built[i].log;
      if (o.ptx) r.ptx += "// ---- part " + std::to_string(i + 1) + " of " + std::to_string(built.size()) + " ----\n" + built[i].ptx + "\n";
      cubins.push_back(built[i].code);
    }
    std::string link_log;
    if (!link_parts(cubins, "sm_" + sm, r.cubin, link_log)) throw CompileError("nvJitLink could not link the compiled kernels", link_log);
#endif
  }
  if (!r.from_cache) {
    if (o.sass) r.sass = disassemble(r.cubin);
    std::vector<std::pair<std::string, std::string>> files = {{".log", r.log}, {".sass", r.sass}};
    if (o.ptx) files.push_back({".ptx", r.ptx});
    if (o.cubin) files.push_back({".cubin", r.cubin});
    cache.put(files, source);
  }
  r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::string cuda_sass(const std::string& cubin, const std::string& cache_dir) {
  if (cubin.empty()) return {};
  const DiskCache cache(cache_folder(cache_dir, "cuda"), fnv1a_hex("sass\n" + cubin), ".cubin");
  if (cache.has(".sass", cubin)) return cache.get(".sass");
  std::string sass = disassemble(cubin);
  if (!sass.empty()) cache.put({{".sass", sass}}, cubin);
  return sass;
}

#else

bool have_nvrtc() { return false; }
std::string nvrtc_version() { return {}; }
CudaCompileResult compile_cuda(const std::string&, const CudaCompileOptions&) {
  throw std::runtime_error("this build has no NVRTC (the CUDA toolkit was not found when it was configured)");
}
std::string cuda_sass(const std::string&, const std::string&) { return {}; }

#endif

}  // namespace ls
