// In-process compilation of generated C++ with Clang 14 and LLVM's ORC JIT (built only when
// CMake found the Clang/LLVM development files). OpenMP calls resolve against libomp, libm's
// vector variants against libmvec, both loaded into the process.
#include <dlfcn.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "clang/Basic/Diagnostic.h"
#include "clang/Basic/DiagnosticOptions.h"
#include "clang/CodeGen/CodeGenAction.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/CompilerInvocation.h"
#include "clang/Frontend/TextDiagnosticPrinter.h"
#include "clang/Lex/PreprocessorOptions.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/ThreadSafeModule.h"
#include "llvm/ADT/Triple.h"
#include "llvm/Support/Host.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/MC/MCAsmBackend.h"
#include "llvm/MC/MCAsmInfo.h"
#include "llvm/MC/MCCodeEmitter.h"
#include "llvm/MC/MCContext.h"
#include "llvm/MC/MCInstrInfo.h"
#include "llvm/MC/MCObjectFileInfo.h"
#include "llvm/MC/MCObjectWriter.h"
#include "llvm/MC/MCParser/MCAsmParser.h"
#include "llvm/MC/MCParser/MCTargetAsmParser.h"
#include "llvm/MC/MCRegisterInfo.h"
#include "llvm/MC/MCStreamer.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/MCTargetOptions.h"
#include "llvm/MC/SubtargetFeature.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Target/TargetMachine.h"
#include "compile/cpu_compiler.h"

namespace ls {
namespace {

class JitCode : public LoadedCode {
 public:
  explicit JitCode(std::unique_ptr<llvm::orc::LLJIT> jit) : jit_(std::move(jit)) {}
  void* symbol(const std::string& name) override {
    auto s = jit_->lookup(name);
    if (!s) {
      llvm::consumeError(s.takeError());
      return nullptr;
    }
    return reinterpret_cast<void*>(s->getAddress());
  }

 private:
  std::unique_ptr<llvm::orc::LLJIT> jit_;
};

void init_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    prefer_short_openmp_spin();
    prefer_spread_openmp_threads();
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    // Runtime libraries the kernels call into, made visible to the JIT's symbol lookup.
    for (const char* lib : {"libomp.so.5", "libomp.so", "libmvec.so.1", "libm.so.6"}) dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
  });
}

// This machine's CPU. A model LLVM 14 does not know (a newer CPU, or one a hypervisor hides)
// reports "generic", which Clang's x86 target rejects: then the x86-64 baseline, with the
// features the CPU reports added (host_features), still gets AVX2/AVX-512 code.
std::string host_cpu() {
  std::string cpu = llvm::sys::getHostCPUName().str();
  if (cpu.empty() || cpu == "generic") cpu = llvm::Triple(llvm::sys::getProcessTriple()).isX86() ? "x86-64" : "";
  return cpu;
}

// "+avx2", "-avx512f", ...: every feature the CPU reports, on or off.
std::vector<std::string> host_features() {
  std::vector<std::string> out;
  llvm::StringMap<bool> features;
  if (llvm::sys::getHostCPUFeatures(features))
    for (auto& kv : features) out.push_back((kv.second ? "+" : "-") + kv.first().str());
  std::sort(out.begin(), out.end());
  return out;
}

// This machine's CPU with all its features, at full optimization: the JIT's target, and the one
// that prints the assembly shown to the user.
llvm::Expected<llvm::orc::JITTargetMachineBuilder> host_machine() {
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) return jtmb.takeError();
  jtmb->setCPU(host_cpu());
  llvm::SubtargetFeatures f;
  for (const auto& feat : host_features()) f.AddFeature(feat);
  jtmb->addFeatures(f.getFeatures());
  jtmb->setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
  return jtmb;
}


// A JIT over this process (libm, OpenMP) holding the object files.
std::unique_ptr<LoadedCode> jit_with_objects(const std::vector<std::string>& objects, std::string& diagnostics) {
  init_once();
  auto jtmb = host_machine();
  if (!jtmb) {
    diagnostics += llvm::toString(jtmb.takeError());
    return nullptr;
  }
  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
  if (!jit) {
    diagnostics += llvm::toString(jit.takeError());
    return nullptr;
  }
  auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess((*jit)->getDataLayout().getGlobalPrefix());
  if (!gen) {
    diagnostics += llvm::toString(gen.takeError());
    return nullptr;
  }
  (*jit)->getMainJITDylib().addGenerator(std::move(*gen));
  for (size_t i = 0; i < objects.size(); ++i)
    if (auto err = (*jit)->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(objects[i], "kernels." + std::to_string(i) + ".o"))) {
      diagnostics += llvm::toString(std::move(err));
      return nullptr;
    }
  return std::make_unique<JitCode>(std::move(*jit));
}

// Assembly text -> an ELF object, with the target's own assembler (what `clang -c file.s` runs),
// set up as the target machine sets up its own (its MC options, ELF relocation relaxing and
// exception model), so the object is the one code generation would have written.
bool assemble(const std::string& text, const llvm::TargetMachine& tm, std::string& object, std::string& why) {
  const llvm::Target& target = tm.getTarget();
  const std::string triple = tm.getTargetTriple().str();
  const llvm::MCTargetOptions& options = tm.Options.MCOptions;
  std::unique_ptr<llvm::MCRegisterInfo> regs(target.createMCRegInfo(triple));
  if (!regs) return why = "no register info", false;
  std::unique_ptr<llvm::MCAsmInfo> asm_info(target.createMCAsmInfo(*regs, triple, options));
  std::unique_ptr<llvm::MCSubtargetInfo> sub(
      target.createMCSubtargetInfo(triple, tm.getTargetCPU(), tm.getTargetFeatureString()));
  std::unique_ptr<llvm::MCInstrInfo> instrs(target.createMCInstrInfo());
  if (!asm_info || !sub || !instrs) return why = "no MC description of the target", false;
  asm_info->setRelaxELFRelocations(tm.Options.RelaxELFRelocations);
  if (tm.Options.ExceptionModel != llvm::ExceptionHandling::None) asm_info->setExceptionsType(tm.Options.ExceptionModel);

  // Every error, the parser's and the object writer's (fixups, relocations), into `messages`.
  std::string messages;
  auto note = [&messages](const llvm::SMDiagnostic& d) {
    if (d.getKind() == llvm::SourceMgr::DK_Error && messages.size() < 2000)
      messages += std::to_string(d.getLineNo()) + ": " + d.getMessage().str() + "; ";
  };
  llvm::SourceMgr sources;
  sources.setDiagHandler([](const llvm::SMDiagnostic& d, void* f) { (*static_cast<decltype(note)*>(f))(d); }, &note);
  sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBuffer(text, "kernels.s", false), llvm::SMLoc());
  llvm::MCContext ctx(tm.getTargetTriple(), asm_info.get(), regs.get(), sub.get(), &sources, &options);
  ctx.setDiagnosticHandler([&note](const llvm::SMDiagnostic& d, bool, const llvm::SourceMgr&, std::vector<const llvm::MDNode*>&) { note(d); });
  std::unique_ptr<llvm::MCObjectFileInfo> files(target.createMCObjectFileInfo(ctx, /*PIC=*/true));
  ctx.setObjectFileInfo(files.get());

  llvm::SmallString<0> buf;
  llvm::raw_svector_ostream os(buf);
  std::unique_ptr<llvm::MCCodeEmitter> emitter(target.createMCCodeEmitter(*instrs, *regs, ctx));
  std::unique_ptr<llvm::MCAsmBackend> backend(target.createMCAsmBackend(*sub, *regs, options));
  if (!emitter || !backend) return why = "no MC code emitter", false;
  std::unique_ptr<llvm::MCObjectWriter> writer = backend->createObjectWriter(os);
  std::unique_ptr<llvm::MCStreamer> streamer(target.createMCObjectStreamer(
      tm.getTargetTriple(), ctx, std::move(backend), std::move(writer), std::move(emitter), *sub, false, false, false));
  if (!streamer) return why = "no object streamer for the target", false;
  std::unique_ptr<llvm::MCAsmParser> parser(llvm::createMCAsmParser(sources, ctx, *streamer, *asm_info));
  std::unique_ptr<llvm::MCTargetAsmParser> target_parser(target.createMCAsmParser(*sub, *parser, *instrs, options));
  if (!target_parser) return why = "no assembly parser for the target", false;
  parser->setTargetParser(*target_parser);
  if (parser->Run(/*NoInitialTextSection=*/false) || !messages.empty())
    return why = messages.empty() ? std::string("parse failed") : messages, false;
  object = std::string(buf.str());  // Run finished the streamer, which wrote the object
  return true;
}

// One translation unit to an object file (and, on request, its optimized IR and assembly as
// text). Each call has its own compiler instance and LLVM context, so units compile on threads
// at once. False, with the diagnostics, where Clang rejects the source.
struct Unit {
  std::string object, ir, assembly, diagnostics;
  bool ok = false;
};
Unit compile_unit(const std::string& source, const std::string& opt_level, bool want_ir, bool want_assembly) {
  Unit u;
  llvm::raw_string_ostream diag_os(u.diagnostics);
  auto diag_opts = llvm::makeIntrusiveRefCnt<clang::DiagnosticOptions>();
  auto* printer = new clang::TextDiagnosticPrinter(diag_os, diag_opts.get());
  auto diags = llvm::makeIntrusiveRefCnt<clang::DiagnosticsEngine>(
      llvm::makeIntrusiveRefCnt<clang::DiagnosticIDs>(), diag_opts, printer);

  const std::string triple = llvm::sys::getProcessTriple();
  std::vector<std::string> args = {"-triple", triple, "-x", "c++", "-std=c++17", opt_level, "-fopenmp",
                                   "-fveclib=libmvec", "-ffp-contract=fast", "-vectorize-loops",
                                   "-vectorize-slp", "-resource-dir", LOWERSCOPE_CLANG_RESOURCE_DIR,
                                   "-mrelocation-model", "pic", "-pic-level", "2", "-fgnuc-version=4.2.1",
                                   "kernels.cpp"};
  std::vector<const char*> argv;
  for (auto& a : args) argv.push_back(a.c_str());

  auto ci = std::make_unique<clang::CompilerInstance>();
  auto inv = std::make_shared<clang::CompilerInvocation>();
  if (!clang::CompilerInvocation::CreateFromArgs(*inv, argv, *diags)) return u;
  inv->getTargetOpts().CPU = host_cpu();
  inv->getTargetOpts().FeaturesAsWritten = host_features();
  inv->getPreprocessorOpts().addRemappedFile("kernels.cpp", llvm::MemoryBuffer::getMemBufferCopy(source).release());
  ci->setInvocation(inv);
  ci->createDiagnostics(printer, false);
  ci->setVerboseOutputStream(diag_os);  // "N warnings generated." goes to the log, not stderr

  auto ctx = std::make_unique<llvm::LLVMContext>();
  clang::EmitLLVMOnlyAction action(ctx.get());
  if (!ci->ExecuteAction(action)) return u;
  std::unique_ptr<llvm::Module> module = action.takeModule();
  if (!module) return u;

  auto jtmb = host_machine();
  if (!jtmb) {
    diag_os << llvm::toString(jtmb.takeError());
    return u;
  }
  jtmb->setRelocationModel(llvm::Reloc::PIC_);
  auto tm = jtmb->createTargetMachine();
  if (!tm) {
    diag_os << llvm::toString(tm.takeError());
    return u;
  }
  module->setDataLayout((*tm)->createDataLayout());
  if (want_ir) {  // what Clang's optimizer made of the kernels
    llvm::raw_string_ostream os(u.ir);
    module->print(os, nullptr);
  }
  // Machine code. The user sees it as text, so code generation makes the text, and the object file
  // the JIT links (and the cache keeps) is that text assembled: parsing assembly costs a tenth of
  // generating the code again (a unit of 2 MB: 0.1 s of CPU against 1.35 s). Without the text, code
  // generation writes the object itself.
  auto emit = [&](llvm::CodeGenFileType type, std::string& out) {
    llvm::SmallString<0> buf;
    llvm::raw_svector_ostream os(buf);
    llvm::legacy::PassManager pm;
    if ((*tm)->addPassesToEmitFile(pm, os, nullptr, type)) return false;
    pm.run(*module);
    out = std::string(buf.str());
    return true;
  };
  if (want_assembly && emit(llvm::CGFT_AssemblyFile, u.assembly)) {
    std::string why;
    if (assemble(u.assembly, **tm, u.object, why)) {
      u.ok = true;
      return u;
    }
    // Never seen; compiled again, straight to an object, rather than losing the kernels.
    Unit direct = compile_unit(source, opt_level, false, false);
    direct.ir = std::move(u.ir);
    direct.assembly = std::move(u.assembly);
    direct.diagnostics = "note: the integrated assembler refused the generated assembly (" + why +
                         "); the object was generated from the source again\n" + direct.diagnostics;
    return direct;
  }
  if (!emit(llvm::CGFT_ObjectFile, u.object)) {
    diag_os << "the target machine cannot emit object files";
    return u;
  }
  u.ok = true;
  return u;
}

}  // namespace

std::string clang_jit_target() {
  std::string t = llvm::sys::getProcessTriple() + " " + host_cpu();
  for (const auto& f : host_features()) t += " " + f;
  return t;
}

std::unique_ptr<LoadedCode> clang_jit_load_objects(const std::vector<std::string>& objects, std::string& diagnostics) {
  return jit_with_objects(objects, diagnostics);
}

std::unique_ptr<LoadedCode> clang_jit_compile(const std::vector<std::string>& sources, const std::string& opt_level,
                                              std::string& diagnostics, std::string* llvm_ir, std::string* assembly,
                                              std::vector<std::string>* objects_out) {
  init_once();
  std::vector<Unit> units(sources.size());
  {
    std::vector<std::thread> threads;
    for (size_t i = 1; i < sources.size(); ++i)
      threads.emplace_back([&, i] { units[i] = compile_unit(sources[i], opt_level, llvm_ir != nullptr, assembly != nullptr); });
    units[0] = compile_unit(sources.at(0), opt_level, llvm_ir != nullptr, assembly != nullptr);
    for (auto& t : threads) t.join();
  }
  std::vector<std::string> objects;
  bool ok = true;
  for (size_t i = 0; i < units.size(); ++i) {
    diagnostics += units[i].diagnostics;
    ok = ok && units[i].ok;
    const std::string head = units.size() == 1 ? "" : "; ---- unit " + std::to_string(i) + " of " + std::to_string(units.size()) + " ----\n";
    if (llvm_ir) *llvm_ir += head + units[i].ir;
    if (assembly) *assembly += head + units[i].assembly;
    objects.push_back(std::move(units[i].object));
  }
  if (!ok) return nullptr;
  std::unique_ptr<LoadedCode> code = jit_with_objects(objects, diagnostics);
  if (code && objects_out) *objects_out = std::move(objects);
  return code;
}

}  // namespace ls
