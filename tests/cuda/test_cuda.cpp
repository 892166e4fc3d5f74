// CUDA backend: every fixture graph, inference and training, generated as CUDA C++ and compiled
// to PTX by NVRTC (no GPU needed); the kernel forms the generator picks; NVRTC's errors; and,
// where a GPU and its driver exist, the compiled models run and checked against PyTorch's
// outputs and gradients, and a faulting kernel named with the device recovering after it.
// No Qt: the same executable is the GPU machine's test suite (tools/gpu/test-cuda.sh), where
// there is no Qt. A small harness stands in for Qt Test's macros.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <numeric>
#include <regex>
#include <set>
#include <sys/wait.h>
#include <unistd.h>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "codegen/cuda_codegen.h"
#include "codegen/cuda_gemm_template.h"
#include "codegen/flash_attention_half.h"
#include "compile/cpu_compiler.h"
#include "cuda/cublas.h"
#include "cuda/cudnn.h"
#include "cuda/cufft.h"
#include "cuda/driver.h"
#include "cuda/nvrtc_compiler.h"
#include "dynamic/retarget.h"
#include "exec/cuda_executor.h"
#include "exec/fft_cuda.h"
#include "exec/flash_attention_cuda.h"
#include "exec/isolated_run.h"
#include "exec/memory_fit.h"
#include "export/package.h"
#include "frontend/load_model.h"
#include "interp/reference.h"
#include "ops/builder.h"
#include "ops/known_ops.h"
#include "pipeline/pipeline.h"
#include "tensor/npy.h"
#include "../fft_reference.h"
#include "../inductor_counts.h"

namespace {
struct Failure {
  std::string what;
};
struct Skip {
  std::string why;
};
struct ExpectedFailure {
  std::string why;
};
// The executor's convolution forms without cuDNN (as a package, or a machine without it, runs
// them), for the tests of those forms; cuDNN's own are convolutions_run_through_cudnn's.
struct WithoutCudnn {
  WithoutCudnn() { setenv("LS_CUDNN", "0", 1); }
  ~WithoutCudnn() { unsetenv("LS_CUDNN"); }
  WithoutCudnn(const WithoutCudnn&) = delete;
  WithoutCudnn& operator=(const WithoutCudnn&) = delete;
};
int g_checks = 0;
std::string g_expect_fail;  // set: the next failing check in this case is expected
void check(bool ok, const std::string& what, const char* file, int line) {
  ++g_checks;
  if (ok) return;
  std::ostringstream os;
  os << what << "  (" << file << ":" << line << ")";
  if (!g_expect_fail.empty()) throw ExpectedFailure{g_expect_fail + ": " + os.str()};
  throw Failure{os.str()};
}
}  // namespace
#define VERIFY(c) check((c), #c, __FILE__, __LINE__)
#define VERIFY2(c, msg) check((c), std::string(#c) + ": " + (msg), __FILE__, __LINE__)
#define EXPECT_FAIL(why) (g_expect_fail = (why))

using namespace ls;

CompileResult compile_graph_text(const std::string& name, const std::string& graph, DType dtype);  // below
LoadedModel load_graph_text(const std::string& name, const std::string& graph);                      // below

namespace {
// $LS_TEST_DATA overrides the folder (the GPU machine's copy, with .pt2 archives unpacked).
std::string data(const std::string& rel) {
  const char* env = std::getenv("LS_TEST_DATA");
  return std::string(env && *env ? env : LS_TEST_DATA) + "/" + rel;
}

const char* kModels[] = {"stages/sincos/3_core_aten.txt",     "stages/mse_loss/3_core_aten.txt",  "models/softmax/model.pt2",
                         "stages/mlp/3_core_aten.txt",        "stages/layernorm_gelu/3_core_aten.txt",
                         "models/res_block/model.pt2",        "models/cifar_net/model.pt2",       "stages/attn_block/3_core_aten.txt",
                         "stages/mobilenet_v3_small/3_core_aten.txt"};

// The .entry names in a PTX module.
std::set<std::string> ptx_entries(const std::string& ptx) {
  std::set<std::string> out;
  static const std::regex re(R"(\.entry\s+([A-Za-z_][A-Za-z0-9_]*))");
  for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), re); it != std::sregex_iterator(); ++it) out.insert((*it)[1]);
  return out;
}

CompileResult compile_cuda_model(const std::string& model, bool train, bool run, const std::string& mode = "default") {
  PipelineOptions o;
  o.device = Device::cuda;
  o.mode = parse_mode(mode);
  o.train = train;
  o.run = run;
  o.timing_budget_ms = 20;
  return run_pipeline(load_model(data(model)), o);
}

// Every generated kernel of every fixture, inference and training, is in the PTX NVRTC made,
// and the CUDA schedule meets Inductor's CUDA kernel counts, graph by graph (tests/inductor_counts.h).
void every_kernel_compiles_to_ptx(const std::string& model, bool train) {
  const CompileResult r = compile_cuda_model(model, train, false);
  VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
  const Stage* ptx = r.stage("asm");
  VERIFY(ptx != nullptr);
  // The loop IR names the device its buffers live on, as Inductor's ir_pre_fusion.txt does.
  const std::string& loop_ir = r.stage("loop_ir")->text;
  VERIFY(loop_ir.find("FixedLayout('cuda'") != std::string::npos && loop_ir.find("FixedLayout('cpu'") == std::string::npos);
  const std::set<std::string> entries = ptx_entries(ptx->text);
  int gen = 0, ext = 0;
  for (size_t k = 0; k < r.schedule.kernels.size(); ++k) {
    const Kernel& kr = r.schedule.kernels[k];
    (kr.is_extern ? ext : gen)++;
    if (kr.is_extern) continue;
    VERIFY2(kr.name.rfind("cuda_fused", 0) == 0, kr.name);
    // Its own entry, or that of an earlier kernel of the same code (share_identical_kernels).
    const std::string& launcher = r.cuda.source.kernels.at(k).launcher;
    VERIFY2(entries.count(launcher) == 1, "no PTX entry for " + kr.name + " (" + launcher + ")");
    const CudaLaunch& l = r.cuda.launch.at(k);
    VERIFY(l.grid > 0 && l.block > 0 && l.block <= 1024);
  }
  VERIFY(entries.count("ls_broadcast_bias") == 0);  // helper kernels live in their own module
  const std::string name = model.substr(model.find('/') + 1, model.rfind('/') - model.find('/') - 1);
  const auto rows = ls_test::inductor_counts(data("inductor_counts.tsv"), name, train, "cuda");
  VERIFY2(!rows.empty(), "no Inductor counts for " + name);
  int compared = 0;
  const std::string over = ls_test::counts_within(r, rows, compared);
  VERIFY2(over.empty(), over);
  VERIFY(compared == static_cast<int>(rows.size()));
  // A node turned for a column reduction runs turned only in that reduction's kernel: a
  // pointwise kernel of its own walks its buffer in order (coalesced).
  for (const Kernel& kr : r.schedule.kernels)
    if (!kr.is_extern && kr.rnumel == 1)
      for (int n : kr.nodes) VERIFY2(r.loops.nodes.at(n).iter_order.empty(), kr.name + " runs " + r.loops.nodes[n].name + " turned");
  // Attention is the fused kernel, instantiated for its head size in the attention module (not
  // the model's), which compiles too; its backward only for a training step.
  if (model.find("attn_block") != std::string::npos) {
    VERIFY(entries.count("ls_attention_fwd_32") == 0);
    VERIFY(r.cuda.attention_source.find("LS_ATTENTION_FWD(32)") != std::string::npos);
    const std::set<std::string> att = ptx_entries(compile_cuda(r.cuda.attention_source, CudaCompileOptions{90, false, "off"}).ptx);
    VERIFY(att.count("ls_attention_fwd_32") == 1);
    VERIFY(att.count("ls_attention_bwd_dq_32") == static_cast<size_t>(train) && att.count("ls_attention_bwd_dkv_32") == static_cast<size_t>(train));
  } else {
    VERIFY(r.cuda.attention_source.empty());
  }
}

// The helper kernels' module (compiled once per machine) holds every helper the runtime loads.
void helper_kernels_compile() {
  CudaCompileOptions o;
  o.cubin = false;
  o.cache_dir = "off";
  const CudaCompileResult r = compile_cuda(cuda_helpers_source(), o);
  const std::set<std::string> entries = ptx_entries(r.ptx);
  for (const char* k : {"ls_broadcast_bias", "ls_add_channel_bias", "ls_im2col", "ls_max_pool2d", "ls_copy_rows",
                        "ls_strided_copy4", "ls_attn_softmax", "ls_attn_probs", "ls_attn_rowdot", "ls_attn_dscores", "ls_col2im",
                        "ls_channel_sum", "ls_count_mismatches", "ls_hold", "ls_index_put", "ls_cumsum", "ls_scatter", "ls_widen_half", "ls_narrow_half",
                        "ls_grouped_conv", "ls_grouped_conv_bwd_input", "ls_grouped_conv_bwd_weight"})
    VERIFY2(entries.count(k) == 1, std::string("no PTX entry for ") + k);
}

// The generator picks the kernel form from the iteration: pointwise; a row per block (softmax,
// whose input is read again in each loop instead of storing intermediates); split slices with a
// last-block finish for a long row (a full sum).
void kernel_forms() {
  const CompileResult sm = compile_cuda_model("models/softmax/model.pt2", false, false);
  VERIFY2(sm.error.empty(), sm.error);
  VERIFY(sm.cuda.launch.size() == 1);
  VERIFY(sm.cuda.launch[0].form == "row");
  VERIFY(sm.cuda.launch[0].grid == 64);  // one block per row of the 64x512 input
  // The max, then the sum, through alternating shared buffers (one barrier each).
  VERIFY(sm.source.code.find("ls_block_reduce<1, 1>") != std::string::npos);
  VERIFY(sm.source.code.find("ls_block_reduce<0, 2>") != std::string::npos);
  // Only the result goes to memory: intermediates are recomputed in each loop.
  VERIFY(sm.schedule.kernels[0].writes.size() == 1);
  // The persistent row form: 64 threads a row of 512 hold 2 float4 each; the max, the sum and the
  // output walk them from registers, the row is read from memory once.
  VERIFY(sm.source.code.find("float4 ls_row0[2];") != std::string::npos);
  const auto occurrences = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  VERIFY(occurrences(sm.source.code, "ls_row0[ls_i] = *reinterpret_cast<const float4*>(&in_ptr0[") == 1);
  VERIFY(occurrences(sm.source.code, "ls_lane(ls_row0[ls_i], ls_j)") == 3);
  VERIFY(occurrences(sm.source.code, "for (int ls_i = 0; ls_i < 2; ++ls_i) {") == 3);
  VERIFY(sm.stage("asm")->text.find(".local") == std::string::npos);  // the arrays stay in registers

  const CompileResult sc = compile_cuda_model("stages/sincos/3_core_aten.txt", false, false);
  VERIFY2(sc.error.empty(), sc.error);
  VERIFY(sc.cuda.launch[0].form == "pointwise");
  // 1000 elements: 4 a thread as one float4 each way, 250 groups, the last block's extra threads masked.
  VERIFY(sc.cuda.launch[0].vector == 4);
  VERIFY(sc.cuda.launch[0].grid == 1);
  VERIFY(sc.source.code.find("if (ls_g < 250)") != std::string::npos);
  VERIFY(sc.source.code.find("const float4 ls_v0 = *reinterpret_cast<const float4*>(&in_ptr0[4*ls_g]);") != std::string::npos);
  VERIFY(sc.source.code.find("*reinterpret_cast<float4*>(&out_ptr0[4*ls_g]) = ls_w") != std::string::npos);
  const std::string& sc_ptx = sc.stage("asm")->text;
  VERIFY(sc_ptx.find("ld.global.nc.v4.f32") != std::string::npos || sc_ptx.find("ld.global.v4.f32") != std::string::npos);
  VERIFY(sc_ptx.find("st.global.v4.f32") != std::string::npos);

  // When 16-byte accesses fit and when they do not: a size that is no multiple of 4 (scalar,
  // the tail masked), a row broadcast (the bias moves with x: a float4 of it too), a transposed
  // read (the input moves by 64 elements a step: scalar). With a GPU each runs against the
  // reference interpreter.
  struct Vec {
    const char* body;
    const char* inputs;
    int vector;
    const char* text;
  };
  for (const Vec& v : {Vec{"torch.ops.aten.sin.default(x)", "x: \"f32[1001]\"", 0, "if (x0 < 1001)"},
                       Vec{"torch.ops.aten.add.Tensor(x, b)", "x: \"f32[64, 128]\", b: \"f32[128]\"", 4, "[4*(ls_g % 32)]);"},
                       Vec{"torch.ops.aten.t.default(x)\n        y3 = torch.ops.aten.add.Tensor(y2, y)", "x: \"f32[64, 128]\", y: \"f32[128, 64]\"", 0,
                           "ls_base"}}) {
    const std::string vpath = (std::filesystem::temp_directory_path() / "ls_cuda_vec.txt").string();
    {
      std::ofstream f(vpath);
      f << "class G(torch.nn.Module):\n    def forward(self, " << v.inputs << "):\n        y2 = " << v.body << "\n        return (" << (std::string(v.body).find("y3") != std::string::npos ? "y3" : "y2") << ",)\n";
    }
    PipelineOptions vo;
    vo.device = Device::cuda;
    vo.timing_budget_ms = 20;
    const CompileResult r = run_pipeline(load_model(vpath), vo);
    VERIFY2(r.error.empty(), r.error);
    VERIFY2(r.cuda.launch.size() == 1 && r.cuda.launch[0].vector == v.vector, v.body);
    VERIFY2(r.source.code.find(v.text) != std::string::npos, r.source.code.substr(r.source.code.rfind("extern \"C\"")));
    if (r.not_run.empty()) VERIFY2(r.check.ok, r.stage("run")->text);
  }

  // A full sum over 2^20 elements: many slices, one kernel.
  const std::string path = (std::filesystem::temp_directory_path() / "ls_cuda_sum.txt").string();
  {
    std::ofstream f(path);
    f << "class G(torch.nn.Module):\n    def forward(self, x: \"f32[1048576]\"):\n"
         "        s: \"f32[]\" = torch.ops.aten.sum.default(x)\n        m: \"f32[]\" = torch.ops.aten.mul.Tensor(s, 0.5)\n"
         "        return (m,)\n";
  }
  PipelineOptions o;
  o.device = Device::cuda;
  o.timing_budget_ms = 20;
  const CompileResult sum = run_pipeline(load_model(path), o);
  VERIFY2(sum.error.empty(), sum.error);
  VERIFY(sum.cuda.launch.size() == 1);
  VERIFY(sum.cuda.launch[0].form == "split");
  VERIFY(sum.cuda.launch[0].split > 1);
  VERIFY(sum.cuda.launch[0].scratch_bytes >= sum.cuda.launch[0].split * 4);
  VERIFY(sum.source.code.find("atomicAdd") != std::string::npos);
  if (sum.not_run.empty()) VERIFY2(sum.check.ok, sum.stage("run")->text);  // with a GPU: against the reference

  // A bias gradient (the sum over the rows of a pointwise value): the
  // column form, warps on 32 neighbouring columns; long columns split over blocks. 48 columns
  // are no whole number of warps: the row form.
  struct Col {
    int64_t rows, cols;
    const char* form;
    bool split;
  };
  for (const Col& cc : {Col{8192, 512, "column", true}, Col{64, 4096, "column", false}, Col{4096, 48, "row", false}}) {
    const std::string cpath = (std::filesystem::temp_directory_path() / "ls_cuda_colsum.txt").string();
    {
      const std::string shape = "[" + std::to_string(cc.rows) + ", " + std::to_string(cc.cols) + "]";
      std::ofstream f(cpath);
      f << "class G(torch.nn.Module):\n    def forward(self, g: \"f32" << shape << "\", x: \"f32" << shape << "\"):\n"
        << "        t: \"f32" << shape << "\" = torch.ops.aten.tanh.default(x)\n"
        << "        d: \"f32" << shape << "\" = torch.ops.aten.mul.Tensor(g, t)\n"
        << "        s: \"f32[" << cc.cols << "]\" = torch.ops.aten.sum.dim_IntList(d, [0])\n"
        << "        return (s,)\n";
    }
    const CompileResult col = run_pipeline(load_model(cpath), o);
    VERIFY2(col.error.empty(), col.error);
    VERIFY2(col.cuda.launch.size() == 1, std::to_string(col.cuda.launch.size()) + " kernels");
    const CudaLaunch& l = col.cuda.launch[0];
    VERIFY2(l.form == cc.form, l.form + " for " + std::to_string(cc.rows) + "x" + std::to_string(cc.cols));
    if (l.form == "column") {
      VERIFY((l.split > 1) == cc.split);
      VERIFY(l.grid == cc.cols / 32 * l.split);
      VERIFY(col.source.code.find("ls_column_reduce<0>") != std::string::npos);
    }
    if (col.not_run.empty()) VERIFY2(col.check.ok, col.stage("run")->text);  // with a GPU: against the reference
  }
}

// NVRTC's complaint comes back with the line it points at.
void compile_error_names_the_line() {
  const std::string bad = "extern \"C\" __global__ void k(float* p) {\n  p[0] = undefined_thing;\n}\n";
  try {
    compile_cuda(bad, CudaCompileOptions{90, false, "off"});
  } catch (const CompileError& e) {
    VERIFY2(e.diagnostics.find("undefined_thing") != std::string::npos, e.diagnostics);
    VERIFY2(e.diagnostics.find("(2)") != std::string::npos, e.diagnostics);  // line 2
    return;
  }
  VERIFY2(false, "NVRTC accepted a kernel that uses an undefined name");
}

// Column reductions of 2 to 16 slices a column are thread-block clusters on sm_90 (the finish in
// shared memory: no workspace), and the partials-and-count finish before sm_90. With a GPU, every
// training fixture runs them against PyTorch (run_or_say_why_not, tools/gpu/test-cuda.sh).
void column_clusters() {
  const CompileResult m = compile_cuda_model("stages/layernorm_gelu/3_core_aten.txt", true, false);
  VERIFY2(m.error.empty(), m.error);
  int clusters = 0;
  for (size_t k = 0; k < m.cuda.launch.size(); ++k) {
    const CudaLaunch& l = m.cuda.launch[k];
    if (l.form != "column" || l.split < 2) continue;
    VERIFY(l.split <= 16 && l.cluster && l.scratch_bytes == 0);
    VERIFY(m.source.code.find("__cluster_dims__(" + std::to_string(l.split) + ", 1, 1) " + m.schedule.kernels[k].name + "(") != std::string::npos);
    ++clusters;
  }
  VERIFY(clusters >= 1);
  VERIFY(m.stage("asm")->text.find("barrier.cluster.arrive") != std::string::npos);
  VERIFY(m.stage("asm")->text.find("mapa.u64") != std::string::npos);
  CudaCodegenOptions older;
  older.sm = 80;
  const GeneratedCuda g = generate_cuda(m.loops, m.schedule, older);
  for (const CudaLaunch& l : g.launch)
    if (l.form == "column" && l.split >= 2) VERIFY(!l.cluster && l.scratch_bytes > 0);
  VERIFY(g.source.code.find("__cluster_dims__") == std::string::npos);
  VERIFY(g.source.code.find("atomicAdd(&ls_count[") != std::string::npos);
}

// A model's cubin compiles as several programs at once, linked by nvJitLink: every kernel of the
// one-program compile is in it, and an error in a later part still names its line in the whole
// source.
void kernels_compile_in_parts_and_link() {
#ifndef LOWERSCOPE_HAVE_NVJITLINK
  throw Skip{"built without nvJitLink: a model compiles as one program"};
#else
  const CompileResult m = compile_cuda_model("stages/layernorm_gelu/3_core_aten.txt", true, false);
  CudaCompileOptions o{90, true, "off"};
  o.sass = false;
  for (const GeneratedKernel& k : m.source.kernels)
    if (!k.launcher.empty()) o.kernel_lines.push_back(k.first_line);
  VERIFY(o.kernel_lines.size() >= 3);
  const std::set<std::string> whole = ptx_entries(compile_cuda(m.source.code, CudaCompileOptions{90, false, "off"}).ptx);
  const CudaCompileResult parts = compile_cuda(m.source.code, o);
  if (std::thread::hardware_concurrency() > 1) VERIFY2(parts.compiler.find("parts at once, linked by nvJitLink") != std::string::npos, parts.compiler);
  VERIFY(parts.cubin.rfind("\x7f" "ELF", 0) == 0);
  VERIFY(ptx_entries(parts.ptx) == whole);
  for (const std::string& k : whole) VERIFY2(parts.cubin.find(k) != std::string::npos, "the linked cubin lacks " + k);
  // An undefined name in the last kernel (the last part's), after its first two lines (a comment
  // and the signature): NVRTC's message gives its line in the whole source.
  std::string bad = m.source.code;
  int last_own = 0;  // the last kernel with code of its own (not one sharing an earlier kernel's)
  for (const GeneratedKernel& k : m.source.kernels)
    if (k.launcher == k.name) last_own = k.first_line;
  const int line = last_own + 2;
  size_t at = 0;
  for (int l = 1; l < line; ++l) at = bad.find('\n', at) + 1;
  VERIFY(bad.compare(at - 2, 2, "{\n") == 0);
  bad.insert(at, "    undefined_thing = 1;\n");
  try {
    compile_cuda(bad, o);
  } catch (const CompileError& e) {
    VERIFY2(e.diagnostics.find("undefined_thing") != std::string::npos, e.diagnostics);
    VERIFY2(e.diagnostics.find("lowerscope_kernels.cu(" + std::to_string(line) + ")") != std::string::npos,
            "expected line " + std::to_string(line) + " in: " + e.diagnostics);
    return;
  }
  VERIFY2(false, "NVRTC accepted a kernel that uses an undefined name");
#endif
}

// With a GPU: the model runs and matches PyTorch's out.npy / grad_in0.npy and the reference
// interpreter. Without one: the compile succeeds and says that running needs a GPU.
void run_or_say_why_not(const std::string& model, bool train) {
  const CompileResult r = compile_cuda_model(model, train, true);
  VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
  std::string why;
  if (!CudaDriver::get(&why)) {
    VERIFY2(r.not_run.find("needs a GPU") != std::string::npos, r.not_run);
    VERIFY(r.outputs.empty());
    return;
  }
  VERIFY(r.not_run.empty());
  VERIFY2(r.check.ok, r.stage("run")->text);
  VERIFY(!r.check.outputs.empty());                 // against out.npy
  if (train) VERIFY(!r.check.gradients.empty());  // against grad_in0.npy
  for (const KernelReport& k : r.kernels)
    if (k.kind == KernelKind::generated) VERIFY2(k.registers > 0 && k.ms > 0, k.name);
  // The SASS listing (made beside the run, outside compile_ms) names every generated kernel, and
  // no compile phase is cuobjdump's.
  if (std::filesystem::exists("/usr/local/cuda/bin/cuobjdump")) {
    const std::string& text = r.stage("asm")->text;
    const size_t at = text.find("// ---- SASS (cuobjdump -sass) ----");
    VERIFY2(at != std::string::npos, "no SASS in the asm stage");
    for (size_t i = 0; i < r.kernels.size(); ++i) {
      if (r.kernels[i].kind != KernelKind::generated) continue;
      const std::string& f = r.cuda.source.kernels.at(i).launcher;  // its own, or the kernel of the same code's
      VERIFY2(text.find("Function : " + f, at) != std::string::npos, "no SASS for " + r.kernels[i].name + " (" + f + ")");
    }
  }
  for (const PhaseTime& t : r.compile_phases) VERIFY2(t.name.find("cuobjdump") == std::string::npos, t.name);
  VERIFY(!r.compile_phases.empty());
}

// Attention on the device, both ways it runs there: the fused kernels for short sequences (the
// transformer block's 64 positions) and cuBLAS around softmax kernels for long ones (256), with
// q, k, v read in place through their strides; outputs and gradients against the reference
// interpreter (float64 kernels of its own).
void attention_runs_on_the_device(const std::string& model, bool train, const std::string& how, const std::string& how_backward) {
  const CompileResult r = compile_cuda_model(model, train, true);
  VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
  std::string why;
  if (!CudaDriver::get(&why)) {
    VERIFY2(r.not_run.find("needs a GPU") != std::string::npos, r.not_run);
    return;
  }
  VERIFY2(r.not_run.empty(), r.not_run);
  VERIFY2(r.check.ok, r.stage("run")->text);
  VERIFY(!r.check.reference.empty());
  int attention = 0;
  for (const KernelReport& k : r.kernels)
    if (k.name.find("efficient_attention") != std::string::npos) {
      const bool backward = k.name.find("efficient_attention_backward") != std::string::npos;
      VERIFY2(k.how == (backward ? how_backward : how), k.name + " ran as " + k.how);
      ++attention;
    }
  VERIFY(attention == (train ? 2 : 1));
}

// A depthwise convolution's training step: its backward runs as the two depthwise gradient kernels
// (not per-channel im2col and cuBLAS), strided, padded and dilated, with a bias; every output and
// gradient against the reference interpreter's run of the joint graph.
void depthwise_backward_runs_on_the_device() {
  const WithoutCudnn without_cudnn;
  const CompileResult r = compile_cuda_model("stages/extra/depthwise_conv.txt", true, true);
  VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
  int backward = 0;
  for (size_t k = 0; k < r.schedule.kernels.size(); ++k) {
    const Kernel& kr = r.schedule.kernels[k];
    if (!kr.is_extern) continue;
    const ExternCall& c = r.loops.nodes.at(kr.nodes.at(0)).ext;
    if (c.op->name != "aten.convolution_backward.default") continue;
    VERIFY2(cuda_extern_how(r.loops, c, true) == "depthwise backward kernels", kr.name);
    ++backward;
  }
  VERIFY(backward == 3);
  std::string why;
  if (!CudaDriver::get(&why)) {
    VERIFY2(r.not_run.find("needs a GPU") != std::string::npos, r.not_run);
    return;
  }
  VERIFY2(r.check.ok, r.stage("run")->text);
  VERIFY(r.check.reference.size() >= 5);  // the output and the gradients of x, w, w2, b2, w3
  for (const KernelReport& k : r.kernels)
    if (k.name.find("convolution_backward") != std::string::npos) VERIFY2(k.how == "depthwise backward kernels", k.name + ": " + k.how);
}

// A convolution model's training step on CUDA: how many convolution calls (forward and backward)
// take each path of the executor (`expected`, by cuda_extern_how's words); with a GPU, every output
// and gradient (`outputs` in all) against the reference interpreter's run of the joint graph.
void convolutions_run_on_the_device(const std::string& model, const std::map<std::string, int>& expected, size_t outputs) {
  const WithoutCudnn without_cudnn;
  const CompileResult r = compile_cuda_model(model, true, true);
  VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
  std::map<std::string, int> forms;
  for (const Kernel& kr : r.schedule.kernels) {
    if (!kr.is_extern) continue;
    const ExternCall& c = r.loops.nodes.at(kr.nodes.at(0)).ext;
    if (c.op->name.find("convolution") != std::string::npos) ++forms[cuda_extern_how(r.loops, c, true)];
  }
  for (const auto& [how, n] : expected) VERIFY2(forms[how] == n, how + ": " + std::to_string(forms[how]));
  std::string why;
  if (!CudaDriver::get(&why)) {
    VERIFY2(r.not_run.find("needs a GPU") != std::string::npos, r.not_run);
    return;
  }
  VERIFY2(r.check.ok, r.stage("run")->text);
  VERIFY(r.check.reference.size() >= outputs);
}

// Grouped convolutions (RegNet's groups of 8 with a window, a channel multiplier, ResNeXt's 32
// groups, 8 groups of 1x1) run as the direct grouped kernels each way, not as per-group im2col and
// cuBLAS launches; the output and the gradients of all six inputs checked.
void grouped_convolutions_run_on_the_device() {
  convolutions_run_on_the_device("stages/conv_grouped/grouped_conv.txt",
                                 {{"grouped convolution kernel", 4}, {"grouped convolution backward kernels", 4}}, 7);
}

// 1-D convolutions (Whisper's, wav2vec2's front ends) run on the device as 2-D ones over a height
// of 1, forward and backward, not as the reference kernel on the host (2.5 ms for Whisper's first);
// the output and the gradients of all five inputs checked.
void conv1d_runs_on_the_device() {
  convolutions_run_on_the_device("stages/conv_grouped/conv1d.txt",
                                 {{"im2col + cuBLAS", 2}, {"im2col + cuBLAS + col2im", 2}, {"grouped convolution kernel", 1},
                                  {"grouped convolution backward kernels", 1}},
                                 6);
}

// Convolutions whose product needs no im2col: 1x1 windows with stride 1 (in groups, with a bias
// over many pixels) read the input as its columns, and windows covering the whole input (or 1x1
// on one pixel) run as linear layers with the bias in cuBLASLt's epilogue; one 3x3 keeps im2col.
// The output and the gradients of all nine inputs checked.
void convolution_forms_run_on_the_device() {
  convolutions_run_on_the_device("stages/extra/conv_forms.txt",
                                 {{"cuBLAS (1x1: no im2col)", 2},
                                  {"cuBLAS (a linear layer)", 2},
                                  {"im2col + cuBLAS", 1},
                                  {"cuBLAS (1x1: no im2col or col2im)", 2},
                                  {"cuBLAS (a linear layer's backward)", 2},
                                  {"im2col + cuBLAS + col2im", 1}},
                                 10);
}

// GEMM templates in the products' place (as max-autotune leaves them where they win), each
// product given a tile in turn so every tile of cuda_gemm_candidates is compiled: the template
// kernels are in the source and the PTX, the pointwise kernel after a product runs inside it (the
// MLP's ReLU); with a GPU the run matches the reference interpreter (training: every gradient,
// through products of operands stored transposed either way), the products report "template"
// and their epilogues "epilogue" with no time of their own.
std::string package_of_builds_and_runs(const CompileResult& r, bool train, const std::vector<std::string>& calls);

void gemm_templates_run_in_place_of_cublas(const std::string& model, bool train) {
  const CompileResult first = compile_cuda_model(model, train, false);
  VERIFY2(first.error.empty(), first.error_stage + ": " + first.error);
  PipelineOptions o;
  o.device = Device::cuda;
  o.train = train;
  o.timing_budget_ms = 20;
  size_t turn = 0;
  for (size_t k = 0; k < first.schedule.kernels.size(); ++k) {
    const std::optional<CudaGemmProblem> g = cuda_gemm_problem(first.loops, first.schedule, k);
    if (!g) continue;
    const std::vector<CudaGemmConfig> tiles = cuda_gemm_candidates(*g);
    VERIFY(!tiles.empty());
    o.cuda_gemm_templates[first.schedule.kernels[k].name] = tiles[turn++ % tiles.size()];
  }
  VERIFY2(o.cuda_gemm_templates.size() >= 2, std::to_string(o.cuda_gemm_templates.size()));
  const CompileResult r = run_pipeline(load_model(data(model)), o);
  VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
  int epilogues = 0;
  for (size_t k = 0; k < r.schedule.kernels.size(); ++k) {
    const GeneratedKernel& gk = r.cuda.source.kernels[k];
    if (!o.cuda_gemm_templates.count(r.schedule.kernels[k].name)) continue;
    VERIFY2(gk.launcher == r.schedule.kernels[k].name + "_template", gk.launcher);
    VERIFY(r.cuda.launch[k].form == "gemm template");
    VERIFY2(r.stage("asm")->text.find(gk.launcher) != std::string::npos, "no PTX for " + gk.launcher);
    if (k + 1 < r.schedule.kernels.size() && r.cuda.source.kernels[k + 1].in_template) {
      ++epilogues;
      VERIFY2(r.cuda.source.code.find(gk.launcher + "_epilogue(") != std::string::npos, gk.launcher);
    }
  }
  if (model == "models/mlp" && !train) {
    VERIFY2(epilogues == 1, std::to_string(epilogues));  // the ReLU after the first layer
    // Exported, the runner launches the templates and not the epilogue inside one.
    package_of_builds_and_runs(r, train, {"as max-autotune's GEMM template (tile ", "runs inside the GEMM template before it"});
  }
  std::string why;
  if (!CudaDriver::get(&why)) {
    VERIFY2(r.not_run.find("needs a GPU") != std::string::npos, r.not_run);
    return;
  }
  VERIFY2(r.check.ok, r.stage("run")->text);
  VERIFY(!r.check.reference.empty());
  int templates = 0, inside = 0;
  for (const KernelReport& k : r.kernels) {
    if (k.how.rfind("template", 0) == 0) {
      ++templates;
      VERIFY2(k.launch.find("GEMM template tile ") != std::string::npos, k.launch);
    }
    if (k.how == "epilogue") {
      ++inside;
      VERIFY(k.ms == 0);
    }
  }
  VERIFY2(templates == static_cast<int>(o.cuda_gemm_templates.size()), std::to_string(templates));
  VERIFY2(inside == epilogues, std::to_string(inside));
}

// max-autotune's tensor-core GEMM templates (bfloat16 and float16, codegen/cuda_gemm_half.h) in the
// products' place, every tile of cuda_gemm_candidates in turn: sizes off the tiles' multiples (M
// 200; K 96 and 160 against k steps of 32 and 64; N 40 and 24), operands stored either way (the
// linear layers' transposed weights, a plain right operand, a training step's products of
// transposed activations), bias rows, the ReLU after the first product (its own kernel: the
// scheduler marks epilogues after float32 products only; the epilogue inside a half template is
// forced and compiled below). Every template is in the PTX; with a GPU every output (and
// gradient) matches the reference interpreter within the type's tolerance and the products
// report a template.
void gemm_half_templates(DType t, bool train) {
  const std::string graph =
      "class G(torch.nn.Module):\n"
      "    def forward(self, x: \"f32[200, 96]\", w1: \"f32[160, 96]\", b1: \"f32[160]\", w2: \"f32[40, 160]\", b2: \"f32[40]\", "
      "w3: \"f32[160, 24]\"):\n"
      "        t1: \"f32[96, 160]\" = torch.ops.aten.permute.default(w1, [1, 0])\n"
      "        h: \"f32[200, 160]\" = torch.ops.aten.addmm.default(b1, x, t1)\n"
      "        r: \"f32[200, 160]\" = torch.ops.aten.relu.default(h)\n"
      "        t2: \"f32[160, 40]\" = torch.ops.aten.permute.default(w2, [1, 0])\n"
      "        o: \"f32[200, 40]\" = torch.ops.aten.addmm.default(b2, r, t2)\n"
      "        m: \"f32[200, 24]\" = torch.ops.aten.mm.default(r, w3)\n"
      "        return (o, m)\n";
  const std::string what = std::string(dtype_short(t)) + (train ? " train" : "");
  PipelineOptions o;
  o.device = Device::cuda;
  o.dtype = t;
  o.train = train;
  o.timing_budget_ms = 20;
  const CompileResult first = run_pipeline(load_graph_text("gemm_half", graph), o);
  VERIFY2(first.error.empty(), what + ": " + first.error_stage + ": " + first.error);
  std::vector<std::pair<std::string, std::vector<CudaGemmConfig>>> products;
  size_t most = 0;
  bool ta = false, tb = false, plain_b = false;
  for (size_t k = 0; k < first.schedule.kernels.size(); ++k) {
    const std::optional<CudaGemmProblem> g = cuda_gemm_problem(first.loops, first.schedule, k);
    if (!g) continue;
    VERIFY2(g->dtype == t, what + ": " + first.schedule.kernels[k].name);
    const std::vector<CudaGemmConfig> tiles = cuda_gemm_candidates(*g);
    VERIFY2(!tiles.empty() && tiles[0].stages > 0, what + ": " + first.schedule.kernels[k].name);
    ta = ta || g->ta, tb = tb || g->tb, plain_b = plain_b || !g->tb;
    most = std::max(most, tiles.size());
    products.emplace_back(first.schedule.kernels[k].name, tiles);
  }
  VERIFY2(products.size() >= (train ? 6u : 3u), what + ": " + std::to_string(products.size()) + " products take a template");
  VERIFY2(tb && plain_b && (ta || !train), what);
  {
    // The epilogue inside a half template (forced here: the scheduler marks epilogues after
    // float32 products only): the pointwise kernel after a product reads the product's elements
    // back through its own parameter, so the template's ls_c is not __restrict__ (restrict would
    // let the compiler load an element before the template stored it), and the module compiles.
    Schedule s = first.schedule;
    CudaCodegenOptions co;
    std::string launcher;
    for (size_t k = 0; k + 1 < s.kernels.size() && launcher.empty(); ++k) {
      if (!s.kernels[k].is_extern || s.kernels[k + 1].is_extern) continue;
      s.kernels[k + 1].epilogue = true;
      const std::optional<CudaGemmProblem> g = cuda_gemm_problem(first.loops, s, k);
      if (!g || g->epilogue < 0) {
        s.kernels[k + 1].epilogue = false;
        continue;
      }
      co.gemm_templates[s.kernels[k].name] = cuda_gemm_candidates(*g).back();
      launcher = s.kernels[k].name + "_template";
    }
    VERIFY2(!launcher.empty(), what + ": no product with a pointwise kernel after it");
    const std::string code = generate_cuda(first.loops, s, co).source.code;
    VERIFY2(code.find(launcher + "_epilogue(ls_at") != std::string::npos, what + ": the template does not call its epilogue");
    const size_t head = code.find(" " + launcher + "(");
    VERIFY2(head != std::string::npos, what + ": no " + launcher);
    const std::string params = code.substr(head, code.find('{', head) - head);
    VERIFY2(params.find("unsigned short* ls_c") != std::string::npos && params.find("__restrict__ ls_c") == std::string::npos, params);
    const std::string ptx = compile_cuda(code, CudaCompileOptions{90, false, "off"}).ptx;
    VERIFY2(ptx.find(launcher) != std::string::npos, what + ": no PTX for " + launcher);
  }
  std::string why;
  const bool gpu = CudaDriver::get(&why) != nullptr;
  for (size_t turn = 0; turn < most; ++turn) {
    PipelineOptions ot = o;
    for (size_t i = 0; i < products.size(); ++i) ot.cuda_gemm_templates[products[i].first] = products[i].second[(turn + i) % products[i].second.size()];
    const CompileResult r = run_pipeline(load_graph_text("gemm_half", graph), ot);
    const std::string at = what + ", turn " + std::to_string(turn);
    VERIFY2(r.error.empty(), at + ": " + r.error_stage + ": " + r.error);
    for (size_t k = 0; k < r.schedule.kernels.size(); ++k) {
      const auto chosen = ot.cuda_gemm_templates.find(r.schedule.kernels[k].name);
      if (chosen == ot.cuda_gemm_templates.end()) continue;
      const GeneratedKernel& gk = r.cuda.source.kernels[k];
      VERIFY2(gk.launcher == r.schedule.kernels[k].name + "_template", at + ": " + gk.launcher);
      VERIFY2(r.stage("asm")->text.find(gk.launcher) != std::string::npos, at + ": no PTX for " + gk.launcher);
      VERIFY2(r.cuda.launch[k].block == chosen->second.tm * chosen->second.tn * 32, at);
    }
    VERIFY2(r.cuda.source.code.find("ls_gh_gemm<") != std::string::npos, at);
    if (!gpu) continue;
    VERIFY2(r.check.ok && !r.check.reference.empty(), at + ": " + r.stage("run")->text);
    int templates = 0;
    for (const KernelReport& k : r.kernels) templates += k.how.rfind("template", 0) == 0;
    VERIFY2(templates == static_cast<int>(products.size()), at + ": " + std::to_string(templates) + " templates ran");
  }
}

// Size-generic (dynamic) code keeps the persistent row form where a weight fixes the row length
// (CudaCodegenOptions::fixed_buffers): LayerNorm's rows held in registers, as in static code, and
// the same threads a row; without it the rows are read once per loop. Both compile to PTX.
void fixed_rows_keep_the_persistent_form() {
  const CompileResult r = compile_cuda_model("stages/layernorm_gelu/3_core_aten.txt", false, false);
  VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
  std::string weight;
  size_t row_kernel = 0;
  for (size_t k = 0; k < r.schedule.kernels.size() && weight.empty(); ++k) {
    const Kernel& kr = r.schedule.kernels[k];
    if (kr.is_extern || kr.rnumel <= 1) continue;
    for (const std::string& b : kr.reads)
      if (std::count(r.loops.inputs.begin(), r.loops.inputs.end(), b) && r.loops.buffer(b).shape == Shape{kr.rnumel}) weight = b, row_kernel = k;
  }
  VERIFY2(!weight.empty(), "no row reduction reads a weight of its row's length");
  CudaCodegenOptions o;
  o.size_generic = true;
  const GeneratedCuda plain = generate_cuda(r.loops, r.schedule, o);
  o.fixed_buffers = {weight};
  const GeneratedCuda fixed = generate_cuda(r.loops, r.schedule, o);
  auto text = [&](const GeneratedCuda& g) {
    std::istringstream in(g.source.code);
    std::string out, line;
    for (int l = 1; std::getline(in, line); ++l)
      if (l >= g.source.kernels[row_kernel].first_line && l <= g.source.kernels[row_kernel].last_line) out += line + "\n";
    return out;
  };
  VERIFY2(text(plain).find("ls_row") == std::string::npos, text(plain));
  VERIFY2(text(fixed).find("ls_row") != std::string::npos, text(fixed));
  VERIFY(fixed.launch[row_kernel].threads_per_row == r.cuda.launch[row_kernel].threads_per_row);  // the static heuristic's
  VERIFY(!compile_cuda(fixed.source.code, CudaCompileOptions{90, false, "off"}).ptx.empty());
}

// reduce-overhead: the whole model replayed as one CUDA graph of at least one node per kernel,
// giving the outputs of the kernels launched one by one (checked bit for bit in the pipeline) and
// PyTorch's out.npy; its time is the graph's. Without a GPU it compiles and says why it did not run.
void reduce_overhead_replays_a_cuda_graph(const std::string& model, bool train) {
  const CompileResult r = compile_cuda_model(model, train, true, "reduce-overhead");
  VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
  std::string why;
  if (!CudaDriver::get(&why)) {
    VERIFY2(r.not_run.find("needs a GPU") != std::string::npos, r.not_run);
    return;
  }
  VERIFY2(r.check.ok, r.stage("run")->text);
  if (train && r.mode_note.find("no CUDA graph") != std::string::npos) {  // a step with a library call on the host
    VERIFY2(r.mode_note.find("on the host") != std::string::npos, r.mode_note);
    return;
  }
  VERIFY2(r.mode_note.find("CUDA graph of") != std::string::npos, r.mode_note);
  VERIFY(r.launched_ms > 0 && r.run_ms > 0);
  VERIFY2(r.stage("run")->text.find(r.mode_note) != std::string::npos, r.stage("run")->text);
  const size_t nodes = std::stoul(r.mode_note.substr(r.mode_note.find("graph of ") + 9));
  VERIFY2(nodes >= r.kernels.size(), r.mode_note);
}

// max-autotune: every generated kernel's candidates (coordinate descent) timed, the chosen one no slower than the
// heuristic's, the model still matching PyTorch; a second compile takes the choice from the disk
// cache. Without a GPU: compiled with the heuristics, and the note says why it was not tuned.
void max_autotune_times_candidates(const std::string& model) {
  const std::string cache = "/tmp/lowerscope-autotune-test-" + std::to_string(getpid());
  setenv("LOWERSCOPE_CACHE_DIR", cache.c_str(), 1);
  const CompileResult r = compile_cuda_model(model, false, true, "max-autotune");
  VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
  std::string why;
  if (!CudaDriver::get(&why)) {
    VERIFY2(r.mode_note.find("needs a GPU") != std::string::npos, r.mode_note);
    setenv("LOWERSCOPE_CACHE_DIR", "off", 1);
    return;
  }
  const Stage* table = r.stage("autotune");
  VERIFY(table != nullptr);
  VERIFY2(r.check.ok, r.stage("run")->text);
  int generated = 0;
  for (const KernelReport& k : r.kernels)
    if (k.kind == KernelKind::generated) {
      ++generated;
      VERIFY2(table->text.find(k.name + " (") != std::string::npos, k.name);
    }
  VERIFY(generated > 0);
  VERIFY2(table->text.find("* ") != std::string::npos, table->text);
  VERIFY2(r.mode_note.find("tuned in") != std::string::npos, r.mode_note);
  VERIFY2(table->text.find("coordinate descent") != std::string::npos && table->text.find(" tried)") != std::string::npos, table->text);
  // Matrix multiplies run by cuBLAS: cuBLASLt's algorithms timed against the heuristics' call;
  // where one was chosen, the run used it (the kernel table's "how" names it).
  int products = 0;
  for (const KernelReport& k : r.kernels) {
    if (k.how != "cuBLAS" && k.how.rfind("cuBLASLt", 0) != 0 && k.how.rfind("template", 0) != 0) continue;
    ++products;
    const size_t at = table->text.find("\n" + k.name + " (matrix multiply ");
    VERIFY2(at != std::string::npos, k.name + "\n" + table->text);
    const size_t end = table->text.find("\n\n", at + 1);
    const std::string section = table->text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    VERIFY2(section.find("cuBLASLt algorithm") != std::string::npos && section.find(" us") != std::string::npos, section);
    if (model == "models/mlp") VERIFY2(section.find("GEMM template tile ") != std::string::npos, section);  // templates timed too
    const size_t star = section.find("  * ");
    VERIFY2(star != std::string::npos, section);
    const std::string chosen = section.substr(star, section.find('\n', star) - star);
    if (chosen.find("cuBLASLt algorithm") != std::string::npos) {
      VERIFY2(k.how.rfind("cuBLASLt: ", 0) == 0 && chosen.find(k.how.substr(10)) != std::string::npos, k.how + " | " + chosen);
    } else if (chosen.find("GEMM template") != std::string::npos) {  // written into the source in the library call's place
      VERIFY2(k.how.rfind("template", 0) == 0 && k.launch.find("GEMM template") != std::string::npos, k.how + " | " + chosen);
      VERIFY(r.source.code.find(k.name + "_template(") != std::string::npos);
    } else {
      VERIFY2(k.how == "cuBLAS", k.how + " | " + chosen);
    }
  }
  if (model == "models/mlp") VERIFY2(products == 2, std::to_string(products));  // its two linear layers
  const CompileResult again = compile_cuda_model(model, false, true, "max-autotune");
  VERIFY2(again.mode_note.find("from the disk cache") != std::string::npos, again.mode_note);
  VERIFY(again.check.ok);
  VERIFY2(again.source.code == r.source.code, "the cached choice gives the same kernels");
  for (size_t i = 0; i < r.kernels.size() && i < again.kernels.size(); ++i)
    VERIFY2(again.kernels[i].how == r.kernels[i].how, "the cached choice of " + r.kernels[i].name + ": " + again.kernels[i].how);
  setenv("LOWERSCOPE_CACHE_DIR", "off", 1);
}

// A cuBLASLt algorithm max-autotune chose is kept on disk as one line (its 64 opaque bytes in hex,
// its workspace, its description) and read back word for word; a damaged line is refused.
void matmul_algorithm_lines() {
  MatmulAlgorithm a;
  for (int i = 0; i < 8; ++i) a.data[i] = 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(i + 1) >> (i * 3);
  a.workspace = 4194304;
  a.text = "algorithm 21, tile 128x64, stages 32x4, split-K 2, 0.85 waves";
  const std::string line = a.serialize();
  VERIFY2(line.find('\n') == std::string::npos, line);
  MatmulAlgorithm b;
  VERIFY2(MatmulAlgorithm::parse(line, b), line);
  for (int i = 0; i < 8; ++i) VERIFY2(b.data[i] == a.data[i], line);
  VERIFY(b.workspace == a.workspace);
  VERIFY2(b.text == a.text, b.text);
  MatmulAlgorithm c;
  VERIFY(!MatmulAlgorithm::parse("12 34 zz", c));
  MatmulProblem p;
  p.batch = 4, p.M = 128, p.N = 256, p.K = 64, p.tb = true, p.bias = false;
  VERIFY2(p.text() == "4 x 128x64 @ 64x256 (stored transposed)", p.text());
}

// Dynamic shapes on CUDA: one compiled template (the kernels take the size symbols as arguments)
// runs other sizes within its guards with no compile, each run checked against the reference
// interpreter on the graph at those sizes; sizes seen before reuse their executable; a size that
// breaks a guard (a batch of 1) or changes the code (a row length whose reduction takes another
// number of threads) is refused with the guard, as Dynamo would recompile. Without a GPU: the
// template, its symbols and its PTX (every kernel with the size parameters).
struct DynamicCase {
  std::string model;
  std::vector<std::string> dynamic;   // the symbols expected dynamic
  std::vector<Shape> reused;          // sizes the template runs (the first twice)
  Shape refused;                      // a size whose code is not the template's (empty: none)
  Shape unaligned;                    // a size that breaks the 16-byte accesses' % 4 guard (empty: none)
};
void dynamic_shapes_reuse_the_cuda_kernels(const DynamicCase& c) {
  PipelineOptions o;
  o.device = Device::cuda;
  o.dynamic = true;
  o.keep_program = true;
  o.timing_budget_ms = 20;
  const CompileResult r = run_pipeline(load_model(data(c.model)), o);
  VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
  std::vector<std::string> dynamic;
  for (const SizeSymbol& s : r.dynamic.symbols)
    if (s.dynamic) dynamic.push_back(s.name);
  VERIFY2(dynamic == c.dynamic, r.stage("dynamic")->text);
  VERIFY(!r.dynamic.holes.empty());
  if (!c.unaligned.empty()) {
    // The template keeps the traced sizes' 16-byte accesses, and says which sizes they need.
    VERIFY2(r.source.code.find("*reinterpret_cast<const float4*>(") != std::string::npos, r.source.code);
    const std::vector<std::string> guards = r.dynamic.guards();
    VERIFY2(std::any_of(guards.begin(), guards.end(), [](const std::string& g) { return g.find("% 4 == 0") != std::string::npos; }),
            r.stage("dynamic")->text);
  }
  const Stage* ptx = r.stage("asm");
  VERIFY(ptx != nullptr);
  const std::set<std::string> entries = ptx_entries(ptx->text);
  for (const GeneratedKernel& k : r.source.kernels) {
    if (k.launcher.empty()) continue;
    VERIFY2(entries.count(k.name) == 1, "no PTX entry for " + k.name);
    const size_t at = r.source.code.find(" " + k.name + "(");
    const size_t eol = r.source.code.find('\n', at);
    VERIFY2(r.source.code.substr(at, eol - at).find("const long long ls_ks" + std::to_string(r.dynamic.symbols.size() - 1) + ")") !=
                std::string::npos,
            k.name + " does not take the sizes");
  }
  std::string why;
  if (!CudaDriver::get(&why)) {
    VERIFY2(r.not_run.find("needs a GPU") != std::string::npos, r.not_run);
    return;
  }
  VERIFY2(r.check.ok, r.stage("run")->text);
  VERIFY(r.program != nullptr);
  std::vector<Shape> sizes = c.reused;
  sizes.push_back(c.reused.at(0));
  // The graph at other sizes of the input that has s0 (the others, weights, as traced).
  const size_t x_input = static_cast<size_t>(r.dynamic.symbols.at(0).dims.at(0).first);
  auto graph_at = [&](const Shape& x) {
    std::vector<Shape> shapes = r.dynamic.traced;
    shapes.at(x_input) = x;
    return retarget_graph(r.aten, shapes);
  };
  for (size_t i = 0; i < sizes.size(); ++i) {
    const Graph at = graph_at(sizes[i]);
    const std::vector<Tensor> in = random_inputs(at, i);
    const std::vector<Tensor> out = r.program->run(in);
    const std::string note = r.program->last_note;
    VERIFY2(note.find(i + 1 == sizes.size() ? "seen before" : "no compile") != std::string::npos, note);
    const std::vector<Tensor> want = run_reference(at, in);
    VERIFY(out.size() == want.size());
    for (size_t k = 0; k < out.size(); ++k) {
      VERIFY2(out[k].shape() == want[k].shape(), shape_str(out[k].shape()));
      const Comparison cmp = compare(out[k], want[k]);
      VERIFY2(cmp.ok, shape_str(sizes[i]) + ": " + cmp.why);
    }
  }
  Shape one = c.reused.at(0);
  one[0] = 1;
  for (const auto& [shape, guard] :
       std::vector<std::pair<Shape, std::string>>{{one, "2 <= L["}, {c.refused, "guard failed: at s"}, {c.unaligned, "% 4 == 0 (it is "}}) {
    if (shape.empty()) continue;
    try {
      r.program->run(random_inputs(graph_at(shape), 7));
      VERIFY2(false, shape_str(shape) + " passed the guards");
    } catch (const GuardFailed& e) {
      VERIFY2(std::string(e.what()).find(guard) != std::string::npos, e.what());
    }
  }
}

// A kernel that faults is named, and the device works again for the next compile.
// A CUDA package builds with CMake and the CUDA toolkit alone (no Lowerscope), and where there is
// a GPU its runner reproduces every output: against the reference interpreter's run of the same
// graph on the same inputs, and PyTorch's out.npy where the model came with it. `calls`: what the
// runner must call for the model's library calls (the path the app's executor takes).
// Returns the runner's output (stdout and stderr), empty where it did not run.
std::string package_of_builds_and_runs(const CompileResult& r, bool train, const std::vector<std::string>& calls);

void package_builds_and_runs(const std::string& model, bool train, const std::vector<std::string>& calls) {
  const CompileResult r = compile_cuda_model(model, train, true);
  VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
  package_of_builds_and_runs(r, train, calls);
}

std::string package_of_builds_and_runs(const CompileResult& r, bool train, const std::vector<std::string>& calls) {
  const std::string pkg = (std::filesystem::temp_directory_path() / ("ls_cuda_package_" + std::to_string(getpid()))).string();
  std::filesystem::remove_all(pkg);
  const Package p = export_package(r, pkg);
  VERIFY2(p.summary.find("CUDA package") != std::string::npos, p.summary);
  // The summary (the export dialog's) and the README name max-autotune's cuBLASLt choices.
  const size_t tuned = r.cuda.matmul_algorithms.size();
  VERIFY2((p.summary.find("max-autotune's cuBLASLt algorithms for " + std::to_string(tuned)) != std::string::npos) == (tuned > 0), p.summary);
  std::stringstream readme;
  readme << std::ifstream(pkg + "/README.md").rdbuf();
  for (const auto& [name, line] : r.cuda.matmul_algorithms)
    VERIFY2(readme.str().find("`" + name + "`: max-autotune's cuBLASLt algorithm") != std::string::npos, readme.str());
  for (const char* f : {"kernels.cu", "kernels.ptx", "helpers.ptx", "model.cpp", "runtime.h", "buffers.h", "CMakeLists.txt", "README.md"})
    VERIFY2(std::filesystem::exists(pkg + "/" + f), f);
  VERIFY(std::filesystem::exists(pkg + "/attention.ptx") == !r.cuda.attention_source.empty());
  std::stringstream runner;
  runner << std::ifstream(pkg + "/model.cpp").rdbuf();
  for (const std::string& c : calls) VERIFY2(runner.str().find(c) != std::string::npos, "model.cpp does not call " + c);
  for (size_t k = 0; k < r.schedule.kernels.size(); ++k)  // generated kernels and GEMM templates; not the epilogues inside those
    if (!r.source.kernels[k].launcher.empty() && !r.source.kernels[k].in_template)
      VERIFY2(runner.str().find("\"" + r.source.kernels[k].launcher + "\"") != std::string::npos, "no launch of " + r.schedule.kernels[k].name);
  if (std::system("cmake --version > /dev/null 2>&1") != 0) throw Skip{"no cmake here to build the package"};
  const std::string log = pkg + "/build.log";
  const int built = std::system(("cd '" + pkg + "' && cmake -S . -B build > '" + log + "' 2>&1 && cmake --build build >> '" + log + "' 2>&1").c_str());
  std::stringstream said;
  said << std::ifstream(log).rdbuf();
  VERIFY2(built == 0, said.str());
  std::string why;
  if (!CudaDriver::get(&why) || !r.not_run.empty()) {  // built; running needs a GPU
    std::filesystem::remove_all(pkg);
    return "";
  }
  const int ran = std::system(("'" + pkg + "/build/run_model' --repeat 5 > '" + pkg + "/run.log' 2>&1").c_str());
  std::stringstream run_log;
  run_log << std::ifstream(pkg + "/run.log").rdbuf();
  VERIFY2(ran == 0, run_log.str());
  VERIFY2(run_log.str().find("run: ") != std::string::npos, run_log.str());
  int compared = 0;
  for (size_t i = 0; i < r.reference_outputs.size() && i < r.loops.outputs.size(); ++i) {
    if (r.loops.outputs[i].empty() || !r.reference_outputs[i].defined()) continue;
    const Tensor got = load_npy(pkg + "/outputs/out" + std::to_string(i) + ".npy");
    const Comparison c = compare(got, r.reference_outputs[i], tolerance_for(r.check.precision));
    VERIFY2(c.ok, "out" + std::to_string(i) + " against the reference interpreter: " + c.why);
    ++compared;
  }
  VERIFY(compared > (train ? 1 : 0));
  if (!r.model.expected.empty()) {
    const Comparison c = compare(load_npy(pkg + "/outputs/out0.npy"), r.model.expected[0], tolerance_for(r.check.precision));
    VERIFY2(c.ok, "out0 against PyTorch's out.npy: " + c.why);
  }
  std::filesystem::remove_all(pkg);
  return run_log.str();
}

// A bf16/f16 model's CUDA package: its products (the MLP's addmm with their bias rows; a training
// step's mm of transposed operands) go to cuBLASLt in the half type, as the app's executor runs
// them (the package refused them before: "no aten.mm.default"); it builds, and with a GPU its
// outputs match the reference interpreter within the type's tolerance.
void half_package_builds_and_runs(DType t, bool train) {
  PipelineOptions o;
  o.device = Device::cuda;
  o.dtype = t;
  o.train = train;
  o.timing_budget_ms = 20;
  const CompileResult r = run_pipeline(load_model(data("models/mlp")), o);
  VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
  VERIFY(r.check.reference.empty() || r.check.precision == t);  // the check ran (a GPU) in that precision
  package_of_builds_and_runs(r, train, {"gpu.gemm_lt(", t == DType::bf16 ? "CUDA_R_16BF))" : "CUDA_R_16F))"});
}

// A CUDA package whose runner checks indices builds: one with a generated gather (embedding:
// ls_index_fault_state read after its kernel) and ls_index_put's record, and one whose only
// checked call is ls_index_put (its runner has index_fault without the generated kernels' node
// table), with a sort on the device. (The index_put adds int64: a float32 one is generated code.) (Their runners did not compile: an unqualified cu_check, and
// index_fault missing where no generated kernel checks an index.) With a GPU, both run and match.
void packages_with_index_checks_build() {
  const std::string head = R"(class GraphModule(torch.nn.Module):
    def forward(self, w: "f32[12, 4]", v: "f32[5, 4]"):
        a: "f32[5]" = torch.ops.aten.sum.dim_IntList(v, [1])
        b: "f32[5]" = torch.ops.aten.abs.default(a)
        c: "f32[5]" = torch.ops.aten.mul.Scalar(b, 3.0)
        d: "f32[5]" = torch.ops.aten.remainder.Scalar(c, 12)
        idx: "i64[5]" = torch.ops.prims.convert_element_type.default(d, torch.int64)
        wi: "i64[12, 4]" = torch.ops.prims.convert_element_type.default(w, torch.int64)
)";
  const std::string gather = head + R"(        embedding: "f32[5, 4]" = torch.ops.aten.embedding.default(w, idx)
        ei: "i64[5, 4]" = torch.ops.prims.convert_element_type.default(embedding, torch.int64)
        y: "i64[12, 4]" = torch.ops.aten.index_put.default(wi, [idx], ei, True)
        return (y, embedding)
)";
  const std::string put = head + R"(        vi: "i64[5, 4]" = torch.ops.prims.convert_element_type.default(v, torch.int64)
        y: "i64[12, 4]" = torch.ops.aten.index_put.default(wi, [idx], vi, True)
        s = torch.ops.aten.sort.default(v, -1, True)
        sv: "f32[5, 4]" = s[0]
        si: "i64[5, 4]" = s[1]
        return (y, sv, si)
)";
  for (const auto* text : {&gather, &put}) {
    PipelineOptions o;
    o.device = Device::cuda;
    o.timing_budget_ms = 20;
    const CompileResult r = run_pipeline(load_graph_text("index_checks", *text), o);
    VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
    const bool generated = text == &gather;
    VERIFY2((r.source.code.find("ls_index_fault(") != std::string::npos) == generated, r.source.code);
    std::vector<std::string> calls = {"index_fault(f, \"kernel extern_index_put"};
    if (generated) calls.push_back("fault_node(f[3])");
    else calls.push_back("lsrt::SortLines");
    package_of_builds_and_runs(r, false, calls);
  }
}

// FFTs under CUDA (issue 32). The steps exec/fft_cuda.h makes of a call (gathers, cuFFT
// transforms of at most 3 dims over contiguous batches, scaling) run here on the host, each
// transform a direct DFT, against the ops' definitions written as direct DFTs in double
// (tests/fft_reference.h): so the planning (permutations for non-trailing dims, groups of 3 for
// more dims, c2r's copy padded or cut to n/2 + 1, two-sided r2c, strided operands, scratch sizes)
// is checked without a GPU.
namespace fft_host {
using cd = std::complex<double>;

using fft_reference::c2r_last;
using fft_reference::dft;
using fft_reference::resized;

// The op's definition (tests/fft_reference.h) on x (contiguous, `in`).
std::vector<cd> definition(const OpDef* op, const std::vector<cd>& x, const Shape& in, const Shape& out, const std::vector<int64_t>& dims,
                           int64_t norm, bool flag) {
  using fft_reference::Type;
  const Type t = op == &op::fft_c2c() ? Type::c2c : op == &op::fft_r2c() ? Type::r2c : Type::c2r;
  return fft_reference::definition(t, x, in, out, dims, norm, flag);
}

// The plan's steps on the host: slot 0 the operand's buffer, 1 the output, the rest scratch;
// every write checked against the slot's size (scratch_bytes).
std::vector<cd> run_plan(const FftPlan& plan, const std::vector<cd>& buffer, const Shape& out, bool out_complex, int real_bytes) {
  std::map<int, std::vector<cd>> slots;
  slots[0] = buffer;
  auto fits = [&](int slot, int64_t bytes, const std::string& what) {
    if (slot >= 2) VERIFY2(bytes <= plan.scratch_bytes.at(static_cast<size_t>(slot - 2)), what);
    if (slot == 1) VERIFY2(bytes == numel_of(out) * (out_complex ? 2 : 1) * real_bytes, what);
    VERIFY2(slot != 0, what + " writes the operand");
  };
  for (const FftStep& s : plan.steps) {
    const std::vector<cd> x = slots.at(s.src);
    std::vector<cd> y;
    if (s.kind == FftStep::Kind::gather) {
      VERIFY2(s.bytes == (s.widen ? 2 * real_bytes : s.bytes) && (s.bytes == real_bytes || s.bytes == 2 * real_bytes), s.text());
      for (int64_t i = 0; i < numel_of(s.shape); ++i) {
        int64_t rem = i, at = s.offset;
        bool in = true;
        for (size_t d = s.shape.size(); d-- > 0;) {
          const int64_t q = rem % s.shape[d];
          rem /= s.shape[d];
          in = in && q < s.limits[d];
          at += q * s.strides[d];
        }
        VERIFY2(!in || (at >= 0 && at < static_cast<int64_t>(x.size())), s.text() + ": reads outside its source");
        y.push_back(in && at >= 0 && at < static_cast<int64_t>(x.size()) ? (s.widen ? cd(x[at].real(), 0) : x[at]) : cd(0));
      }
      fits(s.dst, numel_of(s.shape) * s.bytes, s.text());
    } else if (s.kind == FftStep::Kind::transform) {
      const FftTransform& t = s.transform;
      VERIFY2(!t.n.empty() && t.n.size() <= 3 && t.f64 == (real_bytes == 8), s.text());
      Shape sig = t.n, half = t.n;
      half.back() = t.n.back() / 2 + 1;
      const Shape& ins = t.type == FftTransform::Type::c2r ? half : sig;
      const Shape& outs = t.type == FftTransform::Type::r2c ? half : sig;
      VERIFY2(static_cast<int64_t>(x.size()) >= t.batch * numel_of(ins), s.text() + ": its input is smaller than the batch");
      VERIFY2(s.src != s.dst || t.type == FftTransform::Type::c2c, s.text() + ": in place");
      std::vector<int64_t> all(sig.size());
      std::iota(all.begin(), all.end(), 0);
      for (int64_t b = 0; b < t.batch; ++b) {
        std::vector<cd> one(x.begin() + b * numel_of(ins), x.begin() + (b + 1) * numel_of(ins));
        if (t.type == FftTransform::Type::c2c) one = dft(one, sig, all, s.forward ? -1 : 1);
        else if (t.type == FftTransform::Type::r2c) {
          for (cd& v : one) v = v.real();
          one = resized(dft(one, sig, all, -1), sig, half);
        } else {
          VERIFY2(sig.size() == 1, s.text() + ": a c2r of more than one dim");
          one = c2r_last(one, half, t.n.back(), true);
        }
        y.insert(y.end(), one.begin(), one.end());
      }
      const int per = (t.type == FftTransform::Type::c2r ? 1 : 2) * real_bytes;
      fits(s.dst, static_cast<int64_t>(y.size()) * per, s.text());
    } else if (s.kind == FftStep::Kind::real_ends) {
      y = x;
      const int64_t n = s.transform.n.back(), h = n / 2 + 1;
      VERIFY2(s.dst == s.src && s.dst >= 2 && static_cast<int64_t>(y.size()) == s.count * h, s.text());
      for (int64_t l = 0; l < s.count && (l + 1) * h <= static_cast<int64_t>(y.size()); ++l) {
        y[l * h] = y[l * h].real();
        if (n % 2 == 0) y[l * h + n / 2] = y[l * h + n / 2].real();
      }
    } else {
      y = x;
      VERIFY2(s.dst == 1 && s.count == numel_of(out) * (out_complex ? 2 : 1) && s.f64 == (real_bytes == 8), s.text());
      for (cd& v : y) v *= s.factor;
    }
    slots[s.dst] = y;
  }
  return slots.at(1);
}

struct Case {
  const OpDef* op;
  Shape in, out;
  std::vector<int64_t> dims;
  int64_t norm;
  bool flag;
  Shape buffer = {};  // nonempty: the operand is a strided view of a buffer of this shape
  std::vector<int64_t> strides = {};
  int64_t offset = 0;
};
}  // namespace fft_host

void fft_steps_match_direct_dft() {
  using namespace fft_host;
  const OpDef *r2c = &op::fft_r2c(), *c2r = &op::fft_c2r(), *c2c = &op::fft_c2c();
  const std::vector<Case> cases = {
      {r2c, {3, 8}, {3, 5}, {1}, 1, true},
      {r2c, {5, 4}, {3, 4}, {0}, 0, true},                                  // a non-trailing dim
      {r2c, {3, 8}, {3, 8}, {0, 1}, 2, false},                              // two-sided 2-D
      {r2c, {2, 3, 4, 5, 6}, {2, 3, 4, 5, 4}, {0, 1, 2, 3, 4}, 2, true},   // R2C over 3 dims, then C2C over 2
      {r2c, {4, 6, 5}, {4, 4, 5}, {2, 1}, 1, true},                         // the halved dim not last
      {c2r, {3, 5}, {3, 8}, {1}, 1, false},
      {c2r, {3, 5}, {3, 7}, {-1}, 0, false},                                // cut: 4 of 5
      {c2r, {3, 5}, {3, 12}, {1}, 2, false},                                // padded: 7 from 5
      {c2r, {4, 3, 5}, {4, 3, 8}, {0, 2}, 2, false},
      {c2r, {4, 3, 5}, {6, 3, 5}, {2, 0}, 1, false},                        // the last transformed dim is dim 0
      {c2c, {2, 3, 4, 5}, {2, 3, 4, 5}, {0, 1, 2, 3}, 0, false},            // two groups
      {c2c, {3, 4}, {3, 4}, {0}, 1, true, {4, 3}, {1, 3}, 0},               // a transposed view of its buffer
      {c2c, {3, 4}, {3, 4}, {1, 0}, 2, true, {5, 6}, {6, 1}, 7},            // a slice of its buffer
      {c2c, {3, 4}, {3, 4}, {}, 1, true},                                   // no dims: a copy
      {r2c, {3, 4}, {3, 4}, {}, 0, false},                                  // no dims: the input made complex
  };
  int checked = 0;
  for (const DType real : {DType::f32, DType::f64})
    for (const Case& c : cases) {
      const bool complex_in = c.op != r2c, complex_out = c.op != c2r;
      const Shape buf = c.buffer.empty() ? c.in : c.buffer;
      std::vector<cd> buffer;
      for (int64_t e = 0; e < numel_of(buf); ++e)
        buffer.push_back(complex_in ? cd(std::sin(0.7 * double(e + 1)), std::cos(1.3 * double(e) + 0.2)) : cd(std::sin(0.7 * double(e + 1)) + 0.1, 0));
      std::vector<cd> x;  // the operand as the call sees it
      const std::vector<int64_t> st = c.strides.empty() ? contiguous_strides(c.in) : c.strides;
      for (int64_t i = 0; i < numel_of(c.in); ++i) {
        int64_t rem = i, at = c.offset;
        for (size_t d = c.in.size(); d-- > 0;) at += rem % c.in[d] * st[d], rem /= c.in[d];
        x.push_back(buffer.at(static_cast<size_t>(at)));
      }
      std::string name = c.op->name + " " + shape_str(c.in) + " -> " + shape_str(c.out) + (real == DType::f64 ? " f64" : " f32");
      const auto plan = plan_fft(c.op, c.in, c.strides, c.offset, c.out, c.dims, c.norm, c.flag, real);
      VERIFY2(plan.has_value(), name + ": no plan");
      if (!plan) continue;
      const std::vector<cd> got = run_plan(*plan, buffer, c.out, complex_out, real == DType::f64 ? 8 : 4);
      const std::vector<cd> want = definition(c.op, x, c.in, c.out, c.dims, c.norm, c.flag);
      VERIFY2(got.size() == want.size(), name);
      double worst = 0, scale = 1e-300;
      for (size_t e = 0; e < std::min(got.size(), want.size()); ++e) {
        worst = std::max(worst, std::abs(got[e] - want[e]));
        scale = std::max(scale, std::abs(want[e]));
      }
      VERIFY2(worst <= 1e-9 * scale, name + ": off by " + std::to_string(worst) + " of " + std::to_string(scale) + "\n" + plan->text());
      ++checked;
    }
  VERIFY(checked == 30);
  // The transforms of at most 3 dims; a non-trailing dim gathered first; a c2r copies its input.
  const auto five = plan_fft(r2c, {2, 3, 4, 5, 6}, {}, 0, {2, 3, 4, 5, 4}, {0, 1, 2, 3, 4}, 0, true, DType::f32);
  int transforms = 0;
  for (const FftStep& s : five->steps) transforms += s.kind == FftStep::Kind::transform;
  VERIFY2(transforms == 2, five->text());
  const auto column = plan_fft(r2c, {5, 4}, {}, 0, {3, 4}, {0}, 0, true, DType::f32);
  VERIFY2(column->steps.front().kind == FftStep::Kind::gather && column->steps.front().dst >= 2, column->text());
  const auto inverse = plan_fft(c2r, {3, 5}, {}, 0, {3, 8}, {1}, 0, false, DType::f32);
  VERIFY2(inverse->steps.front().kind == FftStep::Kind::gather && inverse->steps.at(1).src != 0, inverse->text());
  VERIFY(!plan_fft(c2c, {3, 4}, {}, 0, {3, 4}, {1}, 3, true, DType::f32));  // no such normalization
  VERIFY(!plan_fft(c2c, {3, 4}, {}, 0, {3, 4}, {1}, 0, true, DType::bf16));
}

// Every FFT call of a compiled graph (a training step's backward transforms too) has cuFFT's
// steps, and runs on cuFFT where it is loaded; with the default (as a package asks) it stays a
// host call, which packages refuse. No GPU needed: the compile stops before the run.
void fft_calls_take_cufft_steps() {
  const std::string text =
      "class G(torch.nn.Module):\n"
      "    def forward(self, x: \"f32[4, 6, 8]\"):\n"
      "        r: \"c64[4, 6, 5]\" = torch.ops.aten._fft_r2c.default(x, [1, 2], 1, True)\n"
      "        y: \"f32[4, 6, 8]\" = torch.ops.aten._fft_c2r.default(r, [1, 2], 1, 8)\n"
      "        f: \"c64[4, 6, 8]\" = torch.ops.aten._fft_r2c.default(y, [0], 2, False)\n"
      "        a: \"f32[4, 6, 8]\" = torch.ops.aten.abs.default(f)\n"
      "        s: \"f32[]\" = torch.ops.aten.sum.default(a)\n"
      "        return (s,)\n";
  for (bool train : {false, true}) {
    PipelineOptions o;
    o.device = Device::cuda;
    o.train = train;
    o.timing_budget_ms = 2;
    const CompileResult r = run_pipeline(load_graph_text("fft_steps", text), o);
    VERIFY2(r.error.empty() || r.error_stage == "run", r.error_stage + ": " + r.error);
    int ffts = 0;
    for (const Kernel& k : r.schedule.kernels) {
      if (!k.is_extern) continue;
      const ExternCall& c = r.loops.nodes.at(k.nodes.at(0)).ext;
      if (c.op != &op::fft_r2c() && c.op != &op::fft_c2r() && c.op != &op::fft_c2c()) continue;
      ++ffts;
      const auto plan = cuda_fft_plan(r.loops, c);
      VERIFY2(plan.has_value() && !plan->steps.empty(), k.name);
      VERIFY2(cuda_extern_how(r.loops, c, true, true) == "cuFFT", k.name + ": " + cuda_extern_how(r.loops, c, true, true));
      VERIFY2(cuda_extern_how(r.loops, c, true) == "host (reference kernel)", k.name + ": " + cuda_extern_how(r.loops, c, true));
    }
    VERIFY2(ffts >= (train ? 5 : 3), std::to_string(ffts) + " FFT calls");
  }
}

// The FFTs' helper kernels compile (PTX, no GPU needed).
void fft_kernels_compile() {
  CudaCompileOptions o;
  o.cubin = false;
  o.cache_dir = "off";
  const std::set<std::string> entries = ptx_entries(compile_cuda(fft_kernels_source(), o).ptx);
  for (const char* k : {"ls_fft_gather", "ls_fft_widen", "ls_fft_scale", "ls_fft_real_ends"}) VERIFY2(entries.count(k) == 1, std::string("no PTX entry for ") + k);
}

// The FFTs on cuFFT between the generated kernels, inference and a training step: rfft -> abs ->
// sum, irfft of rfft (n = 8 and a cut to 7), a two-sided 2-D fft then an inverse c2c along dim 0,
// an rfft along a non-trailing dim, and complex128 (rfft, irfft back); outputs against direct
// DFTs in double (tests/fft_reference.h), gradients against central differences of them, the kernel table
// naming cuFFT for every FFT call.
void fft_runs_on_cufft() {
  std::string why;
  if (!CudaDriver::get(&why)) throw Skip{"no GPU here: " + why};
  if (!Cufft::get(&why)) throw Skip{"no cuFFT here: " + why};
  const std::string text =
      "class G(torch.nn.Module):\n"
      "    def forward(self, x: \"f32[3, 8]\", c: \"f32[3, 5]\", v: \"f32[3, 8]\", w: \"f32[3, 7]\", u: \"f32[3, 8, 2]\"):\n"
      "        r: \"c64[3, 5]\" = torch.ops.aten._fft_r2c.default(x, [1], 1, True)\n"
      "        a: \"f32[3, 5]\" = torch.ops.aten.abs.default(r)\n"
      "        i: \"f32[3, 8]\" = torch.ops.aten._fft_c2r.default(r, [1], 1, 8)\n"
      "        i7: \"f32[3, 7]\" = torch.ops.aten._fft_c2r.default(r, [-1], 0, 7)\n"
      "        f: \"c64[3, 8]\" = torch.ops.aten._fft_r2c.default(x, [0, 1], 2, False)\n"
      "        g: \"c64[3, 8]\" = torch.ops.aten._fft_c2c.default(f, [0], 0, False)\n"
      "        gr: \"f32[3, 8, 2]\" = torch.ops.aten.view_as_real.default(g)\n"
      "        col: \"c64[2, 8]\" = torch.ops.aten._fft_r2c.default(x, [0], 0, True)\n"
      "        ca: \"f32[2, 8]\" = torch.ops.aten.abs.default(col)\n"
      "        m0: \"f32[3, 5]\" = torch.ops.aten.mul.Tensor(a, c)\n"
      "        m1: \"f32[3, 8]\" = torch.ops.aten.mul.Tensor(i, v)\n"
      "        m2: \"f32[3, 7]\" = torch.ops.aten.mul.Tensor(i7, w)\n"
      "        m3: \"f32[3, 8, 2]\" = torch.ops.aten.mul.Tensor(gr, u)\n"
      "        s0: \"f32[]\" = torch.ops.aten.sum.default(m0)\n"
      "        s1: \"f32[]\" = torch.ops.aten.sum.default(m1)\n"
      "        s2: \"f32[]\" = torch.ops.aten.sum.default(m2)\n"
      "        s3: \"f32[]\" = torch.ops.aten.sum.default(m3)\n"
      "        t0: \"f32[]\" = torch.ops.aten.add.Tensor(s0, s1)\n"
      "        t1: \"f32[]\" = torch.ops.aten.add.Tensor(t0, s2)\n"
      "        loss: \"f32[]\" = torch.ops.aten.add.Tensor(t1, s3)\n"
      "        return (loss, a, i, i7, gr, ca)\n";
  using cd = std::complex<double>;
  namespace fr = fft_reference;
  auto close = [](const Tensor& t, const std::vector<double>& ref, const std::string& what) {
    VERIFY2(t.numel() == static_cast<int64_t>(ref.size()), what);
    double scale = 0;
    for (double v : ref) scale = std::max(scale, std::abs(v));
    for (size_t e = 0; e < ref.size() && static_cast<int64_t>(e) < t.numel(); ++e)
      VERIFY2(std::abs(t.get(static_cast<int64_t>(e)) - ref[e]) <= 1e-5 + 1e-5 * scale,
              what + "[" + std::to_string(e) + "]: " + std::to_string(t.get(static_cast<int64_t>(e))) + ", direct DFT " + std::to_string(ref[e]));
  };
  auto ffts_on_cufft = [](const CompileResult& r) {
    int ffts = 0;
    for (const KernelReport& k : r.kernels)
      if (k.name.find("_fft_") != std::string::npos) {
        ++ffts;
        VERIFY2(k.how == "cuFFT", k.name + ": " + k.how);
      }
    return ffts;
  };
  for (bool train : {false, true}) {
    LoadedModel m = load_graph_text("fft", text);
    VERIFY(m.inputs.size() == 5);
    std::vector<std::vector<double>> in(5);
    for (size_t k = 0; k < 5; ++k)
      for (int64_t e = 0; e < m.inputs[k].numel(); ++e) {
        m.inputs[k].set(e, std::sin(0.7 * static_cast<double>(e + 1) * static_cast<double>(k + 2)) + 0.1 * static_cast<double>(k));
        in[k].push_back(m.inputs[k].get(e));
      }
    struct Out { double loss; std::vector<double> a, i, i7, gr, ca; };
    auto forward = [&](const std::vector<double>& x) {
      Out o{};
      const std::vector<cd> r = fr::definition(fr::Type::r2c, x, {3, 8}, {3, 5}, {1}, 1);  // rfft along dim 1, ortho: the first 5 of 8
      for (const cd& z : r) o.a.push_back(std::abs(z));
      o.i = fr::real_parts(fr::definition(fr::Type::c2r, r, {3, 5}, {3, 8}, {1}, 1));
      o.i7 = fr::real_parts(fr::definition(fr::Type::c2r, r, {3, 5}, {3, 7}, {-1}, 0));
      // fft2 (by_n: / 24), then an unnormalized inverse along dim 0
      const std::vector<cd> f = fr::definition(fr::Type::r2c, x, {3, 8}, {3, 8}, {0, 1}, 2);
      for (const cd& z : fr::definition(fr::Type::c2c, f, {3, 8}, {3, 8}, {0}, 0, false)) o.gr.insert(o.gr.end(), {z.real(), z.imag()});
      for (const cd& z : fr::definition(fr::Type::r2c, x, {3, 8}, {2, 8}, {0}, 0)) o.ca.push_back(std::abs(z));  // rfft along dim 0 (3 -> 2)
      o.loss = 0;
      for (size_t e = 0; e < o.a.size(); ++e) o.loss += o.a[e] * in[1][e];
      for (size_t e = 0; e < o.i.size(); ++e) o.loss += o.i[e] * in[2][e];
      for (size_t e = 0; e < o.i7.size(); ++e) o.loss += o.i7[e] * in[3][e];
      for (size_t e = 0; e < o.gr.size(); ++e) o.loss += o.gr[e] * in[4][e];
      return o;
    };
    const Out want = forward(in[0]);
    PipelineOptions o;
    o.device = Device::cuda;
    o.train = train;
    o.timing_budget_ms = 20;
    const CompileResult r = run_pipeline(m, o);
    VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
    if (!r.error.empty()) continue;
    for (const auto& c : r.check.reference) VERIFY2(c.cmp.ok, c.against + ": " + c.cmp.why);
    VERIFY2(r.check.ok, "the compiled step differs from the reference interpreter");
    const std::string t = train ? " (train)" : "";
    close(r.outputs.at(0), {want.loss}, "loss" + t);
    close(r.outputs.at(1), want.a, "abs(rfft(x))" + t);
    close(r.outputs.at(2), want.i, "irfft(rfft(x), 8)" + t);
    close(r.outputs.at(3), want.i7, "irfft(rfft(x), 7)" + t);
    close(r.outputs.at(4), want.gr, "view_as_real(ifft(fft2(x), dim 0))" + t);
    close(r.outputs.at(5), want.ca, "abs(rfft(x, dim 0))" + t);
    const int ffts = ffts_on_cufft(r);
    VERIFY2(ffts >= (train ? 6 : 5), std::to_string(ffts) + " FFT calls on cuFFT");
    if (!train) continue;
    const auto& j = r.training.joint;
    int checked = 0;
    for (size_t k = 0; k < j.grad_of.size(); ++k) {
      if (j.grad_of[k] != "x") continue;
      std::vector<double> fd;
      for (size_t e = 0; e < in[0].size(); ++e) {
        std::vector<double> up = in[0], down = in[0];
        up[e] += 1e-6;
        down[e] -= 1e-6;
        fd.push_back((forward(up).loss - forward(down).loss) / 2e-6);
      }
      close(r.outputs.at(static_cast<size_t>(j.num_forward_outputs) + k), fd, "d loss / dx");
      ++checked;
    }
    VERIFY(checked == 1);
  }
  // The plan cache bounded at 2 plans while the forward graph runs its five transforms, each run
  // and timing repetition evicting the least recently used: no more than 2 plans at any end, and
  // every output still the direct DFT's.
  {
    Cufft* fft = Cufft::get();
    const size_t bound = fft->max_plans();
    VERIFY2(bound == 4096, "the plan cache holds " + std::to_string(bound) + " by default, PyTorch's 4096");
    fft->set_max_plans(2);
    VERIFY(fft->plans() <= 2);
    LoadedModel m = load_graph_text("fft", text);
    for (size_t k = 0; k < 5; ++k)
      for (int64_t e = 0; e < m.inputs[k].numel(); ++e)
        m.inputs[k].set(e, std::sin(0.7 * static_cast<double>(e + 1) * static_cast<double>(k + 2)) + 0.1 * static_cast<double>(k));
    std::vector<double> x;
    for (int64_t e = 0; e < m.inputs[0].numel(); ++e) x.push_back(m.inputs[0].get(e));
    PipelineOptions o;
    o.device = Device::cuda;
    o.timing_budget_ms = 20;
    const CompileResult r = run_pipeline(m, o);
    fft->set_max_plans(bound);
    VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
    if (r.error.empty()) {
      VERIFY2(r.check.ok, "with 2 plans cached, the compiled FFTs differ from the reference interpreter");
      VERIFY2(fft->plans() <= 2, std::to_string(fft->plans()) + " plans kept with a bound of 2");
      std::vector<double> a;
      for (const cd& z : fr::definition(fr::Type::r2c, x, {3, 8}, {3, 5}, {1}, 1)) a.push_back(std::abs(z));
      close(r.outputs.at(1), a, "abs(rfft(x)), 2 plans cached");
      std::vector<double> ca;
      for (const cd& z : fr::definition(fr::Type::r2c, x, {3, 8}, {2, 8}, {0}, 0)) ca.push_back(std::abs(z));
      close(r.outputs.at(5), ca, "abs(rfft(x, dim 0)), 2 plans cached");
      VERIFY(ffts_on_cufft(r) >= 5);
    }
  }
  // complex128: rfft along the last dim, unnormalized, and irfft back by 1/n (x again).
  const std::string text64 =
      "class G(torch.nn.Module):\n"
      "    def forward(self, x: \"f64[4, 6]\"):\n"
      "        r: \"c128[4, 4]\" = torch.ops.aten._fft_r2c.default(x, [1], 0, True)\n"
      "        rr: \"f64[4, 4, 2]\" = torch.ops.aten.view_as_real.default(r)\n"
      "        y: \"f64[4, 6]\" = torch.ops.aten._fft_c2r.default(r, [1], 2, 6)\n"
      "        return (rr, y)\n";
  LoadedModel m = load_graph_text("fft64", text64);
  std::vector<double> x;
  for (int64_t e = 0; e < m.inputs.at(0).numel(); ++e) {
    m.inputs[0].set(e, std::cos(0.3 * static_cast<double>(e * e)) - 0.2);
    x.push_back(m.inputs[0].get(e));
  }
  PipelineOptions o;
  o.device = Device::cuda;
  o.timing_budget_ms = 20;
  const CompileResult r = run_pipeline(m, o);
  VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
  if (!r.error.empty()) return;
  VERIFY2(r.check.ok, "the compiled complex128 FFTs differ from the reference interpreter");
  std::vector<double> rr;
  for (const cd& s : fr::definition(fr::Type::r2c, x, {4, 6}, {4, 4}, {1}, 0)) rr.insert(rr.end(), {s.real(), s.imag()});
  const Tensor& got = r.outputs.at(0);
  for (size_t e = 0; e < rr.size(); ++e)
    VERIFY2(std::abs(got.get(static_cast<int64_t>(e)) - rr[e]) < 1e-12, "complex128 rfft[" + std::to_string(e) + "]");
  for (size_t e = 0; e < x.size(); ++e)
    VERIFY2(std::abs(r.outputs.at(1).get(static_cast<int64_t>(e)) - x[e]) < 1e-12, "complex128 irfft(rfft(x))[" + std::to_string(e) + "]");
  VERIFY2(ffts_on_cufft(r) == 2, "complex128's two FFT calls on cuFFT");
}

// A CUDA package carries max-autotune's cuBLASLt choices: each product's algorithm (here the last
// of cuBLASLt's list, not its heuristic's first, so that carrying it shows) is written into the
// runner as its words, checked there by cuBLASLt and used; the outputs match the reference
// interpreter. Words that are no algorithm are refused by the runner with a note naming the
// product, and the heuristic's choice runs instead.
void package_carries_matmul_algorithms() {
  std::string why;
  if (!CudaDriver::get(&why)) throw Skip{"no GPU here (cuBLASLt's algorithms are the GPU's): " + why};
  Cublas* blas = Cublas::get(&why);
  if (!blas) throw Skip{"no cuBLAS: " + why};
  const CompileResult r = compile_cuda_model("models/mlp", false, true);
  VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
  CompileResult tuned = r, garbage = r;
  std::vector<std::string> calls;
  for (size_t k = 0; k < r.schedule.kernels.size(); ++k) {
    const Kernel& kr = r.schedule.kernels[k];
    if (!kr.is_extern || cuda_extern_how(r.loops, r.loops.nodes.at(kr.nodes.at(0)).ext, true) != "cuBLAS") continue;
    // the problem cuBLASLt sees, as the GEMM templates read it from the call
    const std::optional<CudaGemmProblem> g = cuda_gemm_problem(r.loops, r.schedule, k);
    VERIFY2(g.has_value(), kr.name);
    MatmulProblem p;
    p.M = g->M, p.N = g->N, p.K = g->K, p.ta = g->ta, p.tb = g->tb, p.bias = !g->bias.empty();
    const std::vector<MatmulAlgorithm> algos = blas->algorithms(p, 8);
    VERIFY2(!algos.empty(), p.text());
    tuned.cuda.matmul_algorithms[kr.name] = algos.back().serialize();
    std::ostringstream words;
    words << "0x" << std::hex << algos.back().data[0] << "ull";
    calls.push_back("algo_" + kr.name + "[8] = {" + words.str());
    MatmulAlgorithm bad = algos.back();
    for (uint64_t& w : bad.data) w = ~uint64_t(0);
    garbage.cuda.matmul_algorithms[kr.name] = bad.serialize();
  }
  VERIFY2(calls.size() == 2, std::to_string(calls.size()));  // the MLP's two linear layers
  const std::string ran = package_of_builds_and_runs(tuned, false, calls);
  VERIFY2(ran.find("does not run on this GPU") == std::string::npos, ran);
  const std::string refused = package_of_builds_and_runs(garbage, false, {"algo_"});
  VERIFY2(refused.find("does not run on this GPU") != std::string::npos, refused);
  for (const auto& [name, line] : garbage.cuda.matmul_algorithms) VERIFY2(refused.find("note: " + name + " (") != std::string::npos, refused);
}

// ---- The kernel worker (exec/isolated_run.h, issue 36): `lowerscope-runner --cuda` ----

IsolationOptions cuda_worker(double limit_s = 60) {
  IsolationOptions o;
  o.enabled = true;
  o.runner = LS_RUNNER;
  o.time_limit_s = limit_s;
  return o;
}

// A compile whose kernels run in the worker (`iso` on) or in this process (off: this program's
// default, the worker not being next to it).
CompileResult compile_with(const std::string& model, const IsolationOptions& iso, PipelineOptions o) {
  o.device = Device::cuda;
  o.timing_budget_ms = 20;
  set_kernel_isolation(iso);
  CompileResult r = run_pipeline(load_model(data(model)), o);
  set_kernel_isolation({});
  return r;
}

CompileResult compile_with(const std::string& model, const IsolationOptions& iso, bool train = false, const std::string& mode = "default") {
  PipelineOptions o;
  o.mode = parse_mode(mode);
  o.train = train;
  return compile_with(model, iso, o);
}

std::string first_generated_kernel(const CompileResult& r) {
  for (const Kernel& k : r.schedule.kernels)
    if (!k.is_extern) return k.name;
  return {};
}

bool have_gpu(std::string* why) { return CudaDriver::probe(why) != nullptr; }

// The worker's run is the in-process one: the outputs (compared, not bit for bit: a kernel may
// add in any order), each kernel's way and registers, its times taken (CUDA events in the
// worker), PyTorch's numbers matched; reduce-overhead's graph captured there, a dynamic
// template's size symbols passed there. Without a GPU: compiled, and says running needs one.
void worker_matches_in_process(const std::string& model, bool train, const std::string& mode, bool dynamic) {
  PipelineOptions o;
  o.mode = parse_mode(mode);
  o.train = train;
  o.dynamic = dynamic;
  o.keep_program = dynamic;
  const CompileResult there = compile_with(model, cuda_worker(), o);
  VERIFY2(there.error.empty(), there.error_stage + ": " + there.error);
  std::string why;
  if (!have_gpu(&why)) {
    VERIFY2(there.not_run.find("needs a GPU") != std::string::npos, there.not_run);
    VERIFY(there.outputs.empty());
    return;
  }
  const CompileResult here = compile_with(model, {}, o);
  VERIFY2(here.error.empty() && here.not_run.empty(), here.error + here.not_run);
  VERIFY2(there.not_run.empty(), there.not_run);
  VERIFY2(there.check.ok, there.stage("run")->text);
  VERIFY(there.outputs.size() == here.outputs.size());
  for (size_t i = 0; i < here.outputs.size(); ++i) {
    VERIFY(there.outputs[i].defined() == here.outputs[i].defined());
    if (here.outputs[i].defined()) VERIFY2(compare(there.outputs[i], here.outputs[i]).ok, compare(there.outputs[i], here.outputs[i]).why);
  }
  VERIFY(there.kernels.size() == here.kernels.size());
  // max-autotune times its candidates in this process for each compile, and may choose otherwise
  // each time: its choices (cuBLASLt algorithms) are checked to reach the worker instead.
  const bool tuned = mode == "max-autotune";
  for (size_t k = 0; k < here.kernels.size(); ++k) {
    const KernelReport& kr = there.kernels[k];
    if (!tuned) VERIFY2(kr.how == here.kernels[k].how, kr.name + ": " + kr.how + " vs " + here.kernels[k].how);
    if (!tuned) VERIFY2(kr.registers == here.kernels[k].registers, kr.name);
    if (kr.kind == KernelKind::generated) VERIFY2(kr.ms > 0 && kr.registers > 0, kr.name);
    if (tuned && there.cuda.matmul_algorithms.count(kr.name)) VERIFY2(kr.how.rfind("cuBLASLt: ", 0) == 0, kr.name + ": " + kr.how);
  }
  VERIFY(there.run_ms > 0 && there.host_ms > 0);
  if (mode == "reduce-overhead") {
    const std::string graph = "reduce-overhead: CUDA graph of ";
    VERIFY2((there.mode_note.rfind(graph, 0) == 0) == (here.mode_note.rfind(graph, 0) == 0), there.mode_note + " | " + here.mode_note);
    if (here.mode_note.rfind(graph, 0) == 0) {
      VERIFY2(there.mode_note.substr(0, there.mode_note.find(" nodes")) == here.mode_note.substr(0, here.mode_note.find(" nodes")),
              there.mode_note + " | " + here.mode_note);
      VERIFY(there.launched_ms > 0);
    }
  }
  if (dynamic) VERIFY(there.program != nullptr);  // kept in this process, to run again at other sizes
}

// The plan reaches the worker everywhere: without a GPU the worker reads it whole (the program,
// the launches, the cubins, a 4 TiB output's place in the shared memory) and says it cannot use
// the GPU, which the app throws as the worker said it. (With one, the cases above run it.)
void worker_reads_the_plan() {
  std::string why;
  if (have_gpu(&why)) throw Skip{"a GPU is here: the worker runs the models in the cases above"};
  for (const char* model : {"stages/attn_block/3_core_aten.txt", "memory/outer_sum_4tb.txt"}) {
    PipelineOptions o;
    o.device = Device::cuda;
    o.run = false;
    o.train = std::string(model).find("attn") != std::string::npos;
    const CompileResult r = run_pipeline(load_model(data(model)), o);
    VERIFY2(r.error.empty(), r.error);
    std::vector<Tensor> inputs;
    for (const std::string& name : r.loops.inputs) {
      const LoopBuffer& b = r.loops.buffer(name);
      inputs.emplace_back(b.dtype, b.shape);
    }
    const MemoryNeed need = memory_need(r.loops, r.schedule);
    try {
      run_cuda_isolated(r.loops, r.schedule, r.cuda, {"cubin", "helpers", "attention"}, {}, inputs, {}, false, need, cuda_worker());
      VERIFY2(false, "the worker ran without a GPU");
    } catch (const std::runtime_error& e) {
      VERIFY2(std::string(e.what()).rfind("the CUDA kernel worker cannot use the GPU: ", 0) == 0, e.what());
    }
  }
}

// LOWERSCOPE_FAULT=cuda-illegal:K: generated kernel K stores through an illegal address as it
// starts. Everywhere: the code with the fault compiles (NVRTC; its PTX differs from the plain
// compile's) and the source stage shows the kernel as generated. On a GPU, through the worker:
// the run fails with "kernel K faulted: CUDA illegal address (...)" (the CLI's exit status 3),
// every stage before the run kept; the worker went with its context, so another model compiled
// next runs in a fresh worker and matches the reference, and this process's own CUDA was never
// touched (an in-process run works too). (In one process the fault could not be survived: after
// an illegal address the driver gives 700 even to a fresh context, H200, driver 580.)
void injected_illegal_address_is_survived() {
  const std::string model = "sincos/1_dynamo_fx_0.txt";
  const CompileResult plain = compile_cuda_model(model, false, false);
  VERIFY2(plain.error.empty(), plain.error);
  const std::string kernel = first_generated_kernel(plain);
  VERIFY(!kernel.empty());
  setenv("LOWERSCOPE_FAULT", ("cuda-illegal:" + kernel).c_str(), 1);
  const CompileResult r = compile_with(model, cuda_worker());
  unsetenv("LOWERSCOPE_FAULT");
  VERIFY(r.stage("source") && r.stage("source")->text == plain.stage("source")->text);
  VERIFY(r.stage("asm") && r.stage("asm")->text != plain.stage("asm")->text);
  std::string why;
  if (!have_gpu(&why)) {
    VERIFY2(r.error.empty() && r.not_run.find("needs a GPU") != std::string::npos, r.error + r.not_run);
    throw Skip{"the injected kernel compiles; running it needs a GPU: " + why};
  }
  VERIFY2(r.error_stage == "run", r.error_stage + ": " + r.error);
  VERIFY2(r.error.rfind("kernel " + kernel + " faulted: CUDA illegal address (", 0) == 0, r.error);
  VERIFY2(r.error.find("worker") != std::string::npos, r.error);
  VERIFY2(is_kernel_fault(r.error), r.error);
  VERIFY(r.stage("fused") && r.stage("fused")->kind != Stage::Kind::not_reached);
  VERIFY(r.outputs.empty());
  const CompileResult next = compile_with("models/softmax/model.pt2", cuda_worker());
  VERIFY2(next.error.empty(), next.error);
  VERIFY2(next.not_run.empty(), next.not_run);
  VERIFY2(next.check.ok, next.stage("run")->text);
  const CompileResult here = compile_with("models/mlp/model.pt2", {});
  VERIFY2(here.error.empty() && here.not_run.empty(), here.error + here.not_run);
  VERIFY2(here.check.ok, here.stage("run")->text);
}

// LOWERSCOPE_FAULT=cuda-hang:K: generated kernel K spins for ever. Through the worker with a time
// limit of 3 s: "kernel K ran past 3 s", the worker stopped (its context, and the spinning kernel,
// with it); the next compile runs in a fresh worker.
void injected_hang_is_stopped() {
  const std::string model = "sincos/1_dynamo_fx_0.txt";
  const CompileResult plain = compile_cuda_model(model, false, false);
  const std::string kernel = first_generated_kernel(plain);
  VERIFY(!kernel.empty());
  setenv("LOWERSCOPE_FAULT", ("cuda-hang:" + kernel).c_str(), 1);
  const CompileResult r = compile_with(model, cuda_worker(3));
  unsetenv("LOWERSCOPE_FAULT");
  VERIFY(r.stage("asm") && r.stage("asm")->text != plain.stage("asm")->text);
  std::string why;
  if (!have_gpu(&why)) {
    VERIFY2(r.error.empty() && r.not_run.find("needs a GPU") != std::string::npos, r.error + r.not_run);
    throw Skip{"the injected kernel compiles; running it needs a GPU: " + why};
  }
  VERIFY2(r.error_stage == "run", r.error_stage + ": " + r.error);
  VERIFY2(r.error.rfind("kernel " + kernel + " ran past 3 s", 0) == 0, r.error);
  VERIFY2(is_kernel_fault(r.error), r.error);
  const CompileResult next = compile_with("models/softmax/model.pt2", cuda_worker());
  VERIFY2(next.error.empty() && next.not_run.empty(), next.error + next.not_run);
  VERIFY2(next.check.ok, next.stage("run")->text);
}

// A model whose buffers exceed the GPU's free memory is refused in the worker before any is
// allocated, with both numbers: sincos against LOWERSCOPE_MEMORY_AVAILABLE=1000, and a 4 TiB
// broadcast sum against cuMemGetInfo's; the next compile runs.
void worker_refuses_a_model_too_large() {
  setenv("LOWERSCOPE_MEMORY_AVAILABLE", "1000", 1);
  const CompileResult faked = compile_with("sincos/1_dynamo_fx_0.txt", cuda_worker());
  unsetenv("LOWERSCOPE_MEMORY_AVAILABLE");
  const CompileResult big = compile_with("memory/outer_sum_4tb.txt", cuda_worker());
  std::string why;
  if (!have_gpu(&why)) {
    for (const CompileResult* r : {&faked, &big}) VERIFY2(r->error.empty() && r->not_run.find("needs a GPU") != std::string::npos, r->error + r->not_run);
    VERIFY2(memory_text(memory_need(big.loops, big.schedule).plan_peak) == "4.0 TiB", memory_text(memory_need(big.loops, big.schedule).plan_peak));
    throw Skip{"both compile; running them needs a GPU: " + why};
  }
  VERIFY2(faked.error_stage == "run", faked.error_stage + ": " + faked.error);
  VERIFY2(faked.error.rfind("the model needs ", 0) == 0 &&
              faked.error.find("1000 bytes available on the GPU (LOWERSCOPE_MEMORY_AVAILABLE): refused before allocating") != std::string::npos,
          faked.error);
  VERIFY2(big.error_stage == "run", big.error_stage + ": " + big.error);
  VERIFY2(big.error.find("(memory plan peak 4.0 TiB") != std::string::npos && big.error.find(", cuMemGetInfo): refused before allocating") != std::string::npos,
          big.error);
  VERIFY(!is_kernel_fault(big.error));
  const CompileResult next = compile_with("sincos/1_dynamo_fx_0.txt", cuda_worker());
  VERIFY2(next.error.empty() && next.not_run.empty() && next.check.ok, next.error + next.not_run);
}

// lowerscope-cli runs CUDA kernels in the worker by default (it is next to it): an injected
// illegal address exits with status 3 naming the kernel; without the fault, status 0.
void cli_reports_the_cuda_fault() {
  const std::string model = data("sincos/1_dynamo_fx_0.txt");
  const CompileResult plain = compile_cuda_model("sincos/1_dynamo_fx_0.txt", false, false);
  const std::string kernel = first_generated_kernel(plain);
  VERIFY(!kernel.empty());
  auto cli = [&](const std::string& env, std::string& out) {
    const std::string cmd = env + " '" + std::string(LS_CLI) + "' compile '" + model + "' --device cuda --quiet 2>&1";
    FILE* f = popen(cmd.c_str(), "r");
    if (!f) return -1;
    char buf[4096];
    size_t n = 0;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    const int status = pclose(f);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  std::string faulted, plain_run;
  const int rc = cli("LOWERSCOPE_IN_PROCESS= LOWERSCOPE_FAULT=cuda-illegal:" + kernel, faulted);
  const int rc_plain = cli("LOWERSCOPE_IN_PROCESS= LOWERSCOPE_FAULT=", plain_run);
  VERIFY2(rc_plain == 0, plain_run);
  std::string why;
  if (!have_gpu(&why)) {
    VERIFY2(rc == 0 && faulted.find("not run: running CUDA kernels needs a GPU") != std::string::npos, faulted);
    return;
  }
  VERIFY2(rc == 3, std::to_string(rc) + ": " + faulted);
  VERIFY2(faulted.find("stage 'run' failed: kernel " + kernel + " faulted: CUDA illegal address (") != std::string::npos, faulted);
}

// In this process, without the worker: a kernel that stores far outside its buffer faults; the
// driver's error names it and says the device was reset. This process's CUDA is lost from then on
// (the driver gives 700 even to a fresh context): a compile run in-process says so plainly and
// runs nothing, while one run in the worker, with a fresh context, runs and is right.
// Runs last: nothing in this process uses its CUDA after it.
void faulting_kernel_is_named_and_device_recovers() {
  std::string why;
  CudaDriver* d = CudaDriver::get(&why);
  if (!d) throw Skip{"no GPU here: " + why};
  const std::string src = "extern \"C\" __global__ void ls_wild_store(float* p) { p[(1ll << 40) + threadIdx.x] = 1.0f; }\n";
  const CudaCompileResult c = compile_cuda(src, CudaCompileOptions{d->device().sm(), true, "off"});
  {
    CudaModule m(*d, c.cubin);
    void* f = m.function("ls_wild_store");
    DeviceBuffer b(*d, 1024);
    DevicePtr p = b.ptr();
    void* params[] = {&p};
    bool threw = false;
    try {
      d->launch(f, 1, 32, params, "ls_wild_store");
      d->synchronize();
    } catch (const std::runtime_error& e) {
      threw = true;
      VERIFY2(std::string(e.what()).find("reset") != std::string::npos, e.what());
    }
    VERIFY(threw);
  }
  const CompileResult there = compile_with("models/softmax/model.pt2", cuda_worker());
  VERIFY2(there.error.empty(), there.error);
  VERIFY2(there.not_run.empty(), there.not_run);
  VERIFY2(there.check.ok, there.stage("run")->text);
  const CompileResult here = compile_with("models/softmax/model.pt2", {});
  VERIFY2(here.error.empty(), here.error);
  if (here.not_run.empty()) VERIFY(here.check.ok);  // a driver whose reset brings the context back
  else VERIFY2(here.not_run.find("fault") != std::string::npos, here.not_run);
  VERIFY(here.stage("asm") != nullptr);  // the PTX is there either way
}

// The elementwise ops of issue 32 (rounding, float functions, predicates, logical and bitwise ops,
// remainder, fmod, atan2) in one graph: the CUDA source calls their prelude helpers, NVRTC compiles
// it, and where a GPU is, it runs and matches the reference interpreter.
void new_elementwise_ops_compile() {
  LoadedModel m;
  m.path = "generated";
  GraphBuilder b(m.graph);
  const int64_t n = 1000;
  const Arg x = Arg::of_node(b.placeholder("x", TensorMeta::contiguous(DType::f32, {n})));
  const Arg y = Arg::of_node(b.placeholder("y", TensorMeta::contiguous(DType::f32, {n})));
  const Arg k = Arg::of_node(b.placeholder("k", TensorMeta::contiguous(DType::i64, {n})));
  m.inputs = {Tensor(DType::f32, {n}), Tensor(DType::f32, {n}), Tensor(DType::i64, {n})};
  for (int64_t i = 0; i < n; ++i) {
    m.inputs[0].set(i, -0.95 + 1.9 * static_cast<double>(i) / n);  // inside (-1, 1): asin, atanh
    m.inputs[1].set(i, 0.5 + static_cast<double>(i % 7));
    m.inputs[2].set(i, static_cast<double>(i % 23) - 11);
  }
  std::vector<Arg> outs;
  for (const char* op : {"aten.floor.default", "aten.ceil.default", "aten.round.default", "aten.trunc.default", "aten.sign.default",
                         "aten.log1p.default", "aten.expm1.default", "aten.tan.default", "aten.asin.default", "aten.acos.default",
                         "aten.atan.default", "aten.sinh.default", "aten.cosh.default", "aten.asinh.default", "aten.atanh.default",
                         "aten.isnan.default", "aten.isinf.default", "aten.logical_not.default"})
    outs.push_back(b.call(op, {x}));
  for (const char* op : {"aten.log2.default", "aten.log10.default", "aten.acosh.default"}) outs.push_back(b.call(op, {y}));
  for (const char* op : {"aten.logical_and.default", "aten.logical_or.default", "aten.logical_xor.default", "aten.remainder.Tensor",
                         "aten.fmod.Tensor", "aten.atan2.default"})
    outs.push_back(b.call(op, {x, y}));
  for (const char* op : {"aten.bitwise_not.default", "aten.floor.default", "aten.log2.default", "aten.sign.default"}) outs.push_back(b.call(op, {k}));
  for (const char* op : {"aten.bitwise_and.Scalar", "aten.bitwise_or.Scalar", "aten.bitwise_xor.Scalar", "aten.remainder.Scalar", "aten.fmod.Scalar"})
    outs.push_back(b.call(op, {k, Arg::of_int(3)}));
  outs.push_back(b.call("aten.bitwise_and.Tensor", {k, b.call("aten.bitwise_xor.Tensor", {k, b.call("aten.bitwise_or.Tensor", {k, k})})}));
  for (const Arg& o : outs) m.graph.outputs.push_back(o.node);
  // Lowered from prims (the default: isnan, isinf and the logical ops are ne, eq and bitwise
  // prims there) and from Core ATen (each op its own helper).
  for (const unsigned level : {0u, level::core_aten}) {
    PipelineOptions o;
    o.device = Device::cuda;
    o.timing_budget_ms = 20;
    o.decompose_to = level;
    const CompileResult r = run_pipeline(m, o);
    VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
    VERIFY(r.stage("asm") != nullptr);
    std::vector<const char*> calls = {"ls_floor(", "ls_round(", "ls_log1p(", "ls_atanh(", "ls_bitwise_not(", "ls_remainder(",
                                      "ls_fmod(", "ls_atan2(", "ls_bitwise_and("};
    if (level == level::core_aten) calls.insert(calls.end(), {"ls_isnan(", "ls_isinf(", "ls_logical_not(", "ls_logical_xor("});
    for (const char* f : calls) VERIFY2(r.source.code.find(f) != std::string::npos, std::string("the source does not call ") + f);
    std::string why;
    if (!CudaDriver::get(&why)) {
      VERIFY2(r.not_run.find("needs a GPU") != std::string::npos, r.not_run);
      continue;
    }
    VERIFY2(r.not_run.empty(), r.not_run);
    VERIFY2(r.check.ok, r.stage("run")->text);
  }
}

// Gathers through indirect indices (embedding, gather) as generated CUDA kernels: NVRTC compiles
// them with their index checks; on a GPU they match the reference interpreter, and an index out
// of range is reported naming the node, the value and the size, and the next run works.
// A float32 model run in bfloat16 or float16 (--dtype): the generated kernels load and store the
// half type around float32 math (the PTX holds the conversions), the products run on cuBLASLt's
// tensor cores, and on a GPU the results pass against the reference interpreter (each op in
// float32, rounded at its output, as eager PyTorch) with assert_close's tolerance for the type
// or torch._dynamo's float64 RMSE check; the report names the tolerance.
void half_precision_runs(const std::string& model, DType t, bool train) {
  PipelineOptions o;
  o.device = Device::cuda;
  o.train = train;
  o.dtype = t;
  o.timing_budget_ms = 20;
  const CompileResult r = run_pipeline(load_model(data(model)), o);
  VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
  const std::string& ptx = r.stage("asm")->text;
  VERIFY2(ptx.find(t == DType::bf16 ? "cvt.rn.bf16.f32" : "cvt.rn.f16.f32") != std::string::npos, "no conversion to the half type in the PTX");
  VERIFY(r.source.code.find(t == DType::bf16 ? "ls_bf16" : "ls_f16") != std::string::npos);
  std::string why;
  if (!CudaDriver::get(&why)) return;
  VERIFY2(r.not_run.empty(), r.not_run);
  VERIFY2(r.check.ok, r.stage("run")->text);
  VERIFY(r.check.precision == t && !r.check.reference.empty());
  bool tensor_cores = false;
  for (const KernelReport& k : r.kernels) {
    VERIFY2(k.how.find("host") == std::string::npos || k.how.find("reference") == std::string::npos ||
                model.find("mlp") == std::string::npos,
            k.name + " ran on the host");
    tensor_cores = tensor_cores || k.how.find("tensor cores") != std::string::npos;
  }
  VERIFY2(tensor_cores, "no product ran on cuBLASLt's tensor cores");
}

// Row kernels whose every buffer is a half type divide with div.full.f32 (ls_div_fast, Triton's
// float32 `/`) and exponentiate with ex2.approx, and rows of 4,096 take 128 threads (four 16-byte
// groups a thread): softmax at 16384x4096 in bf16, 0.141 -> 0.079 ms (45% -> 82% of copy,
// tools/gpu/softmax_half_variants.cu). A float32 kernel keeps IEEE division and expf. On a GPU
// the half results pass against the reference interpreter with the type's tolerance.
void half_rows_divide_fast() {
  for (DType t : {DType::bf16, DType::f32}) {
    const std::string ty = t == DType::bf16 ? "bf16" : "f32";
    const std::string text = "class GraphModule(torch.nn.Module):\n    def forward(self, x: \"" + ty +
                             "[64, 4096]\"):\n        m: \"" + ty + "[64, 4096]\" = torch.ops.aten.mul.Tensor(x, 0.125)\n        s: \"" + ty +
                             "[64, 4096]\" = torch.ops.aten._softmax.default(m, -1, False)\n        return (s,)\n";
    PipelineOptions o;
    o.device = Device::cuda;
    o.timing_budget_ms = 20;
    const CompileResult r = run_pipeline(load_graph_text("half_rows", text), o);
    VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
    VERIFY(r.cuda.launch.size() == 1 && r.cuda.launch[0].form == "row");
    const std::string body = r.source.code.substr(r.source.code.rfind("extern \"C\" __global__"));
    const bool half = t != DType::f32;
    VERIFY2((body.find("ls_div_fast(") != std::string::npos) == half, body);
    VERIFY2((body.find("ls_exp_fast(") != std::string::npos) == half, body);
    VERIFY2(r.cuda.launch[0].threads_per_row == (half ? 128 : 512), std::to_string(r.cuda.launch[0].threads_per_row));
    if (half) VERIFY2(body.find("uint4 ls_row0[4];") != std::string::npos, body);
    VERIFY2((r.stage("asm")->text.find("div.full.f32") != std::string::npos) == half, "div.full.f32 in the PTX");
    std::string why;
    if (!CudaDriver::get(&why)) continue;
    VERIFY2(r.check.ok, r.stage("run")->text);
    VERIFY(!r.check.reference.empty());
  }
}

// A column kernel whose second r loop read neither the first's reductions nor the x values after
// them is one loop (schedule.cpp kernel_loops): the bf16 transformer block's LayerNorm backward
// (bias sums, their casts, then the residual's gradient and its sum) ran as two loops on one block
// a column group, 0.30 ms of its 0.89 ms training step (0.04 ms split over 33 slices, H200). Every
// column kernel of the attention block's bf16 training step now has one r loop, so it is split.
void column_loops_merge() {
  PipelineOptions o;
  o.device = Device::cuda;
  o.dtype = DType::bf16;
  o.train = true;
  o.timing_budget_ms = 20;
  const CompileResult r = run_pipeline(load_model(data("stages/attn_block/3_core_aten.txt")), o);
  VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
  int columns = 0;
  for (size_t k = 0; k < r.cuda.launch.size() && k < r.schedule.kernels.size(); ++k) {
    if (r.cuda.launch[k].form != "column") continue;
    ++columns;
    const Kernel& kr = r.schedule.kernels[k];
    int inner = 0;
    for (const KernelLoop& l : kernel_loops(r.loops, kr.nodes, kr.numel, kr.rnumel)) inner += l.inner;
    VERIFY2(inner == 1, kr.name + ": " + std::to_string(inner) + " r loops");
    VERIFY2(r.cuda.launch[k].split >= 2, kr.name + " is not split");
  }
  VERIFY2(columns >= 4, std::to_string(columns) + " column kernels");
  std::string why;
  if (!CudaDriver::get(&why)) return;
  VERIFY2(r.check.ok, r.stage("run")->text);
}

void gathers_run_as_generated_kernels() {
  LoadedModel m = load_model(data("indexing/gather_embedding.txt"));
  for (int64_t i = 0; i < m.inputs[1].numel(); ++i) m.inputs[1].set(i, (i * 5 + 3) % 12);
  for (int64_t i = 0; i < m.inputs[3].numel(); ++i) m.inputs[3].set(i, (i * 7 + 1) % 12);
  PipelineOptions o;
  o.device = Device::cuda;
  o.timing_budget_ms = 20;
  CompileResult r = run_pipeline(m, o);
  VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
  for (const Kernel& k : r.schedule.kernels) VERIFY2(!k.is_extern, k.name);
  VERIFY(r.source.code.find("ls_index_fault(") != std::string::npos);
  std::string why;
  if (!CudaDriver::get(&why)) {
    VERIFY2(r.not_run.find("needs a GPU") != std::string::npos, r.not_run);
    return;
  }
  VERIFY2(r.check.ok, r.stage("run")->text);
  m.inputs[1].set(7, 12);
  r = run_pipeline(m, o);
  VERIFY2(r.error.find("index 12 is out of bounds for dimension with size 12") != std::string::npos, r.error);
  VERIFY2(r.error.find("node 'embedding'") != std::string::npos, r.error);
  m.inputs[1].set(7, 0);
  r = run_pipeline(m, o);
  VERIFY2(r.error.empty() && r.check.ok, r.error);
}

// prod, argmax/argmin and max.dim/min.dim as generated CUDA reductions (Inductor's "prod",
// "argmax", "argmin"), in every form: rows of 100,000 split over blocks (the (value, index)
// partials combined by the row's last block), rows over a block (ls_block_arg_reduce) and over
// part of a warp, a product down columns (the column form; an argmax there takes the row form),
// int64 and bool inputs. NVRTC compiles them; on a GPU they match the reference interpreter on
// ties (the first index), NaNs (the first NaN) and rows of -inf only (index 0).
void arg_reductions_and_prod_run_as_generated_kernels() {
  const std::string graph = R"(class GraphModule(torch.nn.Module):
    def forward(self, big: "f32[3, 100000]", pbig: "f32[3, 100000]", mid: "f32[8, 2048]", small: "f32[16, 100]", col: "f32[1024, 64]", col2: "f32[512, 32]", n: "i64[16, 100]", b: "b8[16, 100]"):
        a0: "i64[3]" = torch.ops.aten.argmax.default(big, 1)
        m = torch.ops.aten.min.dim(big, 1)
        m0: "f32[3]" = m[0]
        m1: "i64[3]" = m[1]
        p0: "f32[3]" = torch.ops.aten.prod.dim_int(pbig, 1)
        a1: "i64[8, 1]" = torch.ops.aten.argmin.default(mid, 1, True)
        k = torch.ops.aten.max.dim(mid, -1)
        k0: "f32[8]" = k[0]
        k1: "i64[8]" = k[1]
        a2: "i64[16]" = torch.ops.aten.argmax.default(small, 1)
        a3: "i64[]" = torch.ops.aten.argmin.default(small)
        p1: "f32[64]" = torch.ops.aten.prod.dim_int(col, 0)
        a4: "i64[32]" = torch.ops.aten.argmax.default(col2, 0)
        a5: "i64[16]" = torch.ops.aten.argmax.default(n, 1)
        p2: "i64[16]" = torch.ops.aten.prod.dim_int(n, 1)
        a6: "i64[100]" = torch.ops.aten.argmin.default(b, 0)
        p3: "i64[]" = torch.ops.aten.prod.default(b)
        return (a0, m0, m1, p0, a1, k0, k1, a2, a3, p1, a4, a5, p2, a6, p3)
)";
  LoadedModel m = load_graph_text("arg_prod", graph);
  Tensor &big = m.inputs[0], &pbig = m.inputs[1], &mid = m.inputs[2], &small = m.inputs[3], &col = m.inputs[4], &col2 = m.inputs[5];
  Tensor &n = m.inputs[6], &b = m.inputs[7];
  for (int64_t e = 0; e < big.numel(); ++e) big.set(e, std::sin(0.001 * static_cast<double>(e)));
  big.set(12345, 3), big.set(99999, 3), big.set(777, -3), big.set(88888, -3);  // row 0: each extremum twice
  big.set(100000 + 50001, NAN), big.set(100000 + 70000, NAN);                  // row 1: two NaNs
  for (int64_t e = 200000; e < 300000; ++e) big.set(e, -INFINITY);             // row 2: -inf only
  // 2, 1/2, 1, ...: every partial product exact (a float32 product of 100,000 values near 1 is
  // 4e-4 off the exact one in any order, as PyTorch's own)
  for (int64_t e = 0; e < pbig.numel(); ++e) pbig.set(e, e % 3 == 0 ? 2.0 : e % 3 == 1 ? 0.5 : 1.0);
  for (int64_t e = 0; e < mid.numel(); ++e) mid.set(e, static_cast<double>((e * 37) % 11) - 5);  // many ties
  mid.set(3 * 2048 + 1500, NAN);
  for (int64_t e = 0; e < small.numel(); ++e) small.set(e, static_cast<double>((e * 13) % 7));
  small.set(5 * 100 + 60, NAN);
  for (int64_t e = 0; e < col.numel(); ++e) col.set(e, 1 + 0.01 * std::cos(0.1 * static_cast<double>(e)));
  for (int64_t e = 0; e < col2.numel(); ++e) col2.set(e, static_cast<double>((e * 29) % 13));
  for (int64_t e = 0; e < n.numel(); ++e) n.set(e, static_cast<double>((e * 7) % 5) - 2);
  for (int64_t e = 0; e < b.numel(); ++e) b.set(e, e % 3 != 0 ? 1 : 0);
  PipelineOptions o;
  o.device = Device::cuda;
  o.timing_budget_ms = 20;
  const CompileResult r = run_pipeline(m, o);
  VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
  VERIFY(r.stage("asm") != nullptr);
  for (const Kernel& k : r.schedule.kernels) VERIFY2(!k.is_extern, k.name);
  std::set<std::string> forms;
  for (const CudaLaunch& l : r.cuda.launch) forms.insert(l.form);
  for (const char* f : {"split", "row", "column"}) VERIFY2(forms.count(f), std::string("no kernel of the ") + f + " form");
  for (const char* f : {"ls_arg_keeps(", "ls_block_arg_reduce<", "ls_warp_arg_reduce<", "ls_arg_combine<", "ls_prod_step(", "ls_column_reduce<3>("})
    VERIFY2(r.source.code.find(f) != std::string::npos, std::string("the source does not call ") + f);
  std::string why;
  if (!CudaDriver::get(&why)) {
    VERIFY2(r.not_run.find("needs a GPU") != std::string::npos, r.not_run);
    return;
  }
  VERIFY2(r.not_run.empty(), r.not_run);
  VERIFY2(r.check.ok, r.stage("run")->text);
  VERIFY(r.outputs[0].get(0) == 12345 && r.outputs[0].get(1) == 50001 && r.outputs[0].get(2) == 0);
  VERIFY(r.outputs[2].get(0) == 777 && r.outputs[2].get(1) == 50001 && r.outputs[2].get(2) == 0);
  VERIFY(r.outputs[6].get(3) == 1500 && r.outputs[7].get(5) == 60);
}

// index_put (accumulating repeated and negative indices, as an embedding's backward does; a plain
// store through two index tensors a None apart, the values broadcast) and the scatter family
// (scatter_add over repeated indices, a scalar, an int64 src) as generated kernels (atomicAdd
// where they add), the adds Inductor leaves to ATen (index_put accumulating int64, scatter_reduce
// amax) and cumsum (int64 over a row, float32 down columns) on the device as the helper kernels
// ls_index_put, ls_scatter and cumsum's generated scan (cumsum_runs_as_a_generated_scan; ls_cumsum
// where none is generated), not on the host; on a GPU they match the reference
// interpreter, and an index out of range is reported naming the kernel, its node, the value and
// the size, and the next run is correct.
void index_put_and_cumsum_run_on_the_device() {
  LoadedModel model = load_graph_text("device_externs", R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[6, 4]", i: "i64[5]", v: "f32[5, 4]", y: "f32[3, 4, 5]", a: "i64[2]", b: "i32[2]", w: "f32[4]", m: "i64[2, 8]", j: "i64[3, 4]", u: "f32[3, 4]", k: "i64[6, 2]", q: "i64[2, 3]", n: "i64[2]"):
        acc: "f32[6, 4]" = torch.ops.aten.index_put.default(x, [i], v, True)
        put: "f32[3, 4, 5]" = torch.ops.aten.index_put.default(y, [a, None, b], w)
        pos: "i64[2, 8]" = torch.ops.aten.cumsum.default(m, 1)
        col: "f32[6, 4]" = torch.ops.aten.cumsum.default(acc, 0)
        sadd: "f32[6, 4]" = torch.ops.aten.scatter_add.default(x, 0, j, u)
        smax: "f32[6, 4]" = torch.ops.aten.scatter_reduce.two(x, 0, j, u, 'amax')
        sval: "f32[6, 4]" = torch.ops.aten.scatter.value(x, 1, k, 2.5)
        ssrc: "i64[2, 8]" = torch.ops.aten.scatter.src(m, 1, q, pos)
        iacc: "i64[6, 2]" = torch.ops.aten.index_put.default(k, [j], n, True)
        return (acc, put, pos, col, sadd, smax, sval, ssrc, iacc)
)");
  const int64_t is[5] = {1, 1, 3, -1, 0}, as[2] = {2, -3}, bs[2] = {4, 0};
  for (int64_t k = 0; k < 5; ++k) model.inputs[1].set(k, static_cast<double>(is[k]));
  for (int64_t k = 0; k < 2; ++k) model.inputs[4].set(k, static_cast<double>(as[k])), model.inputs[5].set(k, static_cast<double>(bs[k]));
  for (int64_t k = 0; k < model.inputs[7].numel(); ++k) model.inputs[7].set(k, static_cast<double>(k % 3));
  for (int64_t k = 0; k < model.inputs[8].numel(); ++k) model.inputs[8].set(k, static_cast<double>((k * 5) % 6));  // repeats
  for (int64_t k = 0; k < model.inputs[10].numel(); ++k) model.inputs[10].set(k, static_cast<double>((k * 3) % 4));
  for (int64_t k = 0; k < model.inputs[11].numel(); ++k) model.inputs[11].set(k, static_cast<double>((k * 5) % 8));
  model.inputs[9].set(0, std::nan(""));  // amax's NaN wins, scatter_add's NaN spreads, as in the reference
  PipelineOptions o;
  o.device = Device::cuda;
  o.timing_budget_ms = 20;
  CompileResult r = run_pipeline(model, o);
  VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
  std::map<std::string, int> how;
  for (const Kernel& k : r.schedule.kernels)
    if (k.is_extern) ++how[cuda_extern_how(r.loops, r.loops.nodes.at(k.nodes.at(0)).ext, true)];
  VERIFY2(how["index_put kernel"] == 1 && how["cumsum kernel"] == 2 && how["scatter kernel"] == 1 && !how.count("host (reference kernel)"),
          std::to_string(how["index_put kernel"]) + " index_put, " + std::to_string(how["cumsum kernel"]) + " cumsum, " +
              std::to_string(how["scatter kernel"]) + " scatter on the device");
  int scatters = 0;  // acc, put, sadd, sval, ssrc
  for (const LoopNode& ln : r.loops.nodes) scatters += ln.kind == LoopNode::Kind::scatter;
  VERIFY2(scatters == 5, std::to_string(scatters) + " scatter loop nodes");
  VERIFY(r.source.code.find("atomicAdd(&") != std::string::npos);
  std::string why;
  if (!CudaDriver::get(&why)) {
    VERIFY2(r.not_run.find("needs a GPU") != std::string::npos, r.not_run);
    return;
  }
  VERIFY2(r.check.ok, r.stage("run")->text);
  for (const KernelReport& k : r.kernels) VERIFY2(k.how.find("host") == std::string::npos, k.name + " ran as " + k.how);
  model.inputs[1].set(2, 6);
  r = run_pipeline(model, o);
  VERIFY2(r.error.find("index 6 is out of bounds for dimension with size 6") != std::string::npos, r.error);
  VERIFY2(r.error.find("from node 'acc'") != std::string::npos, r.error);
  model.inputs[1].set(2, -6);
  model.inputs[5].set(1, 5);  // put's second index tensor indexes dimension 2, of size 5
  r = run_pipeline(model, o);
  VERIFY2(r.error.find("index 5 is out of bounds for dimension with size 5") != std::string::npos, r.error);
  VERIFY2(r.error.find("from node 'put'") != std::string::npos, r.error);
  model.inputs[5].set(1, 0);
  model.inputs[8].set(5, -1);  // scatter takes no negative index (sadd's, generated, and smax's, the library's; iacc wraps it)
  r = run_pipeline(model, o);
  VERIFY2(r.error.find("index -1 is out of bounds for dimension") != std::string::npos && r.error.find("with size 6") != std::string::npos, r.error);
  model.inputs[8].set(5, 5);
  r = run_pipeline(model, o);
  VERIFY2(r.error.empty() && r.check.ok, r.error);
}

// bf16 and f16 convolutions (3x3 padded, strided 1x1, grouped, 1-D) run on the device as their
// float32 forms on float32 copies (Conv::run_half, backward_half), not on the host, inference and
// training; on a GPU the outputs and gradients pass the half-precision check against the reference.
void half_convolutions_run_on_the_device() {
  const WithoutCudnn without_cudnn;
  const std::string graph = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[2, 8, 12, 12]", w1: "f32[16, 8, 3, 3]", b1: "f32[16]", w2: "f32[16, 16, 1, 1]", w3: "f32[16, 4, 3, 3]", s: "f32[2, 4, 20]", w4: "f32[6, 4, 5]"):
        c1: "f32[2, 16, 12, 12]" = torch.ops.aten.convolution.default(x, w1, b1, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
        r1: "f32[2, 16, 12, 12]" = torch.ops.aten.relu.default(c1)
        c2: "f32[2, 16, 6, 6]" = torch.ops.aten.convolution.default(r1, w2, None, [2, 2], [0, 0], [1, 1], False, [0, 0], 1)
        c3: "f32[2, 16, 6, 6]" = torch.ops.aten.convolution.default(c2, w3, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 4)
        c4: "f32[2, 6, 16]" = torch.ops.aten.convolution.default(s, w4, None, [1], [0], [1], False, [0], 1)
        return (c3, c4)
)";
  for (const DType t : {DType::bf16, DType::f16})
    for (const bool train : {false, true}) {
      PipelineOptions o;
      o.device = Device::cuda;
      o.dtype = t;
      o.train = train;
      o.timing_budget_ms = 20;
      CompileResult r = run_pipeline(load_graph_text("half_convolutions", graph), o);
      const std::string what = std::string(dtype_short(t)) + (train ? " train" : "");
      VERIFY2(r.error.empty(), what + ": " + r.error_stage + ": " + r.error);
      int convs = 0;
      for (const Kernel& k : r.schedule.kernels) {
        if (!k.is_extern) continue;
        const ExternCall& c = r.loops.nodes.at(k.nodes.at(0)).ext;
        if (c.op->name.find("convolution") == std::string::npos) continue;
        ++convs;
        const std::string how = cuda_extern_how(r.loops, c, true);
        VERIFY2(how.find(" on float32 copies of " + std::string(dtype_short(t))) != std::string::npos, what + ": " + k.name + " runs as " + how);
      }
      VERIFY2(convs >= (train ? 8 : 4), what + ": " + std::to_string(convs) + " convolution calls");
      std::string why;
      if (!CudaDriver::get(&why)) continue;
      VERIFY2(r.check.ok, what + ": " + r.stage("run")->text);
      for (const KernelReport& k : r.kernels) VERIFY2(k.how.find("host") == std::string::npos, what + ": " + k.name + " ran as " + k.how);
    }
}

// With cuDNN (loaded at run time, as PyTorch's CUDA convolutions run), the dense convolutions of a
// bf16 or f16 model, forward and backward (3x3 padded with a bias, strided 1x1, 1-D), run as cuDNN's
// products in that type, the kernel table naming the engine of each pass; the grouped and depthwise
// ones keep the direct kernels, and float32 (no TF32) keeps im2col + cuBLAS, where those were
// measured faster. Outputs and gradients against the reference interpreter.
void convolutions_run_through_cudnn() {
  std::string why;
  if (!CudaDriver::get(&why)) throw Skip{"no GPU here: " + why};
  if (!Cudnn::get(&why)) throw Skip{"no cuDNN here: " + why};
  const std::string graph = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[2, 8, 12, 12]", w1: "f32[16, 8, 3, 3]", b1: "f32[16]", w2: "f32[16, 16, 1, 1]", w3: "f32[16, 4, 3, 3]", w5: "f32[16, 1, 3, 3]", b5: "f32[16]", s: "f32[2, 4, 20]", w4: "f32[6, 4, 5]"):
        c1: "f32[2, 16, 12, 12]" = torch.ops.aten.convolution.default(x, w1, b1, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
        r1: "f32[2, 16, 12, 12]" = torch.ops.aten.relu.default(c1)
        c2: "f32[2, 16, 6, 6]" = torch.ops.aten.convolution.default(r1, w2, None, [2, 2], [0, 0], [1, 1], False, [0, 0], 1)
        c3: "f32[2, 16, 6, 6]" = torch.ops.aten.convolution.default(c2, w3, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 4)
        c5: "f32[2, 16, 3, 3]" = torch.ops.aten.convolution.default(c3, w5, b5, [2, 2], [2, 2], [2, 2], False, [0, 0], 16)
        c4: "f32[2, 6, 16]" = torch.ops.aten.convolution.default(s, w4, None, [1], [0], [1], False, [0], 1)
        return (c5, c4)
)";
  for (const DType t : {DType::f32, DType::bf16, DType::f16})
    for (const bool train : {false, true}) {
      PipelineOptions o;
      o.device = Device::cuda;
      o.dtype = t;
      o.train = train;
      o.timing_budget_ms = 20;
      CompileResult r = run_pipeline(load_graph_text("cudnn_convolutions", graph), o);
      const std::string what = std::string(dtype_short(t)) + (train ? " train" : "");
      VERIFY2(r.error.empty(), what + ": " + r.error_stage + ": " + r.error);
      VERIFY2(r.check.ok, what + ": " + r.stage("run")->text);
      int dnn = 0, tensor_cores = 0;
      for (const KernelReport& k : r.kernels) {
        if (k.name.find("convolution") == std::string::npos) continue;
        const std::string want = "cuDNN " + std::string(dtype_short(t)) + ": ";
        const bool on_dnn = k.how.rfind("cuDNN", 0) == 0;
        dnn += on_dnn;
        if (t == DType::f32 || k.how.find("grouped") != std::string::npos || k.how.find("depthwise") != std::string::npos) {
          VERIFY2(!on_dnn, what + ": " + k.name + " ran as " + k.how);
          continue;
        }
        VERIFY2(k.how.rfind(want, 0) == 0, what + ": " + k.name + " ran as " + k.how);
        tensor_cores += k.how.find("tensor cores") != std::string::npos;
        if (k.name.find("backward") != std::string::npos)
          VERIFY2(k.how.find("filter gradient") != std::string::npos, what + ": " + k.name + " ran as " + k.how);
      }
      // the 3x3, the 1x1 and the 1-D ones each way; halves on the tensor cores where cuDNN's engine
      // is (its heuristic picks CUDA-core kernels for some small shapes)
      VERIFY2(dnn == (t == DType::f32 ? 0 : train ? 6 : 3), what + ": " + std::to_string(dnn) + " convolution calls on cuDNN");
      if (t != DType::f32) VERIFY2(tensor_cores > 0, what + ": none on the tensor cores");
    }
}

// A graph of sorts compiled for CUDA in dtype t: `device` of its library calls run as the sort
// kernel and `host` not; on a GPU, the run matches the reference interpreter.
void sorts_run_as_planned(const std::string& name, const std::string& graph, DType t, int device, int host) {
  PipelineOptions o;
  o.device = Device::cuda;
  o.dtype = t;
  o.timing_budget_ms = 20;
  CompileResult r = run_pipeline(load_graph_text(name, graph), o);
  const std::string what = name + " " + std::string(dtype_short(t));
  VERIFY2(r.error.empty(), what + ": " + r.error_stage + ": " + r.error);
  int on_device = 0, on_host = 0;
  for (const Kernel& k : r.schedule.kernels) {
    if (!k.is_extern) continue;
    const ExternCall& c = r.loops.nodes.at(k.nodes.at(0)).ext;
    (cuda_extern_how(r.loops, c, true) == "sort kernel" ? on_device : on_host) += 1;
  }
  VERIFY2(on_device == device && on_host == host, what + ": " + std::to_string(on_device) + " sorts on the device, " + std::to_string(on_host) + " not");
  std::string why;
  if (!CudaDriver::get(&why)) return;
  VERIFY2(r.check.ok, what + ": " + r.stage("run")->text);
}

// sort and topk (sorted) run on the device as ls_sort_lines, not as the reference kernel on the
// host: along the last dimension and an inner one, ascending and descending, with ties (x rounded
// to halves) and NaN (the log of negative numbers), in float32 and bf16; on a GPU the values and
// indices match the reference interpreter's stable sort exactly (topk's indices in float32, where
// its random inputs have no ties). topk with sorted=False stays on the host (its order is
// nth_element's).
void sort_and_topk_run_on_the_device() {
  const std::string graph = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[6, 37, 5]"):
        h: "f32[6, 37, 5]" = torch.ops.aten.mul.Tensor(x, 2.0)
        t: "f32[6, 37, 5]" = torch.ops.aten.round.default(h)
        l: "f32[6, 37, 5]" = torch.ops.aten.log.default(x)
        s = torch.ops.aten.sort.default(t, -1, True)
        sv: "f32[6, 37, 5]" = s[0]
        si: "i64[6, 37, 5]" = s[1]
        u = torch.ops.aten.sort.default(l, 1)
        uv: "f32[6, 37, 5]" = u[0]
        ui: "i64[6, 37, 5]" = u[1]
        k = torch.ops.aten.topk.default(x, 4, 1)
        kv: "f32[6, 4, 5]" = k[0]
        ki: "i64[6, 4, 5]" = k[1]
        m = torch.ops.aten.topk.default(x, 2, -1, False)
        mv: "f32[6, 37, 2]" = m[0]
        mi: "i64[6, 37, 2]" = m[1]
        n = torch.ops.aten.topk.default(x, 3, 1, True, False)
        nv: "f32[6, 3, 5]" = n[0]
        return (sv, si, uv, ui, kv, ki, mv, mi, nv)
)";
  for (const DType t : {DType::f32, DType::bf16}) {
    // In bf16 a line of x has equal values now and then, and topk's order of ties is unspecified
    // (the reference's is std::nth_element's, PyTorch's differs by device): its indices are
    // checked in float32 only.
    std::string text = graph;
    if (t != DType::f32) text.replace(text.find("return (sv, si, uv, ui, kv, ki, mv, mi, nv)"), 43, "return (sv, si, uv, ui, kv, mv, nv)");
    sorts_run_as_planned("sort_topk", text, t, 4, 1);
  }
}

// ls_sort_lines at the sizes its network changes form: lines of 4096 (the largest on the device;
// 2048 pairs, 4 a thread of a 512-thread block) and 2048 descending, a power of two, lines of one
// element, and 4097 (on the host), in float32 and float16 (ties: the stable order's indices); on a
// GPU, values and indices equal the reference's.
void sort_of_long_lines_runs_on_the_device() {
  const std::string graph = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[3, 4096]", y: "f32[2, 2048]", z: "f32[4, 1]", u: "f32[2, 4097]"):
        a = torch.ops.aten.sort.default(x, -1)
        av: "f32[3, 4096]" = a[0]
        ai: "i64[3, 4096]" = a[1]
        b = torch.ops.aten.sort.default(y, -1, True)
        bv: "f32[2, 2048]" = b[0]
        bi: "i64[2, 2048]" = b[1]
        c = torch.ops.aten.sort.default(z)
        cv: "f32[4, 1]" = c[0]
        ci: "i64[4, 1]" = c[1]
        d = torch.ops.aten.sort.default(u)
        dv: "f32[2, 4097]" = d[0]
        return (av, ai, bv, bi, cv, ci, dv)
)";
  for (const DType t : {DType::f32, DType::f16}) sorts_run_as_planned("long_sorts", graph, t, 3, 1);
}

// Kernels of the same code (the same shapes and fused ops: a model's repeated layers) compile
// once, as Inductor defines a kernel once and calls it per layer: the second layer's kernel
// launches the first's function with its own buffers, its source keeps its header and names the
// kernel it shares. A kernel that differs in one constant, in an op, or in its operands' order,
// keeps its own code. On a GPU the model matches the reference interpreter.
void identical_kernels_compile_once() {
  const std::string graph = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[64, 32]", w: "f32[32, 32]", b: "f32[64, 32]"):
        m1: "f32[64, 32]" = torch.ops.aten.mm.default(x, w)
        a1: "f32[64, 32]" = torch.ops.aten.add.Tensor(m1, b)
        r1: "f32[64, 32]" = torch.ops.aten.relu.default(a1)
        m2: "f32[64, 32]" = torch.ops.aten.mm.default(r1, w)
        a2: "f32[64, 32]" = torch.ops.aten.add.Tensor(m2, b)
        r2: "f32[64, 32]" = torch.ops.aten.relu.default(a2)
        m3: "f32[64, 32]" = torch.ops.aten.mm.default(r2, w)
        a3: "f32[64, 32]" = torch.ops.aten.add.Tensor(m3, b)
        r3: "f32[64, 32]" = torch.ops.aten.relu.default(a3)
        s3: "f32[64, 32]" = torch.ops.aten.mul.Tensor(r3, 3.0)
        m4: "f32[64, 32]" = torch.ops.aten.mm.default(s3, w)
        a4: "f32[64, 32]" = torch.ops.aten.sub.Tensor(b, m4)
        r4: "f32[64, 32]" = torch.ops.aten.relu.default(a4)
        m5: "f32[64, 32]" = torch.ops.aten.mm.default(r4, w)
        a5: "f32[64, 32]" = torch.ops.aten.add.Tensor(m5, b)
        r5: "f32[64, 32]" = torch.ops.aten.relu.default(a5)
        s5: "f32[64, 32]" = torch.ops.aten.mul.Tensor(r5, 2.0)
        return (s5,)
)";
  const CompileResult r = compile_graph_text("repeated_layers", graph, DType::f32);
  VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
  std::vector<size_t> generated;
  for (size_t k = 0; k < r.schedule.kernels.size(); ++k)
    if (!r.schedule.kernels[k].is_extern) generated.push_back(k);
  VERIFY2(generated.size() == 5, std::to_string(generated.size()) + " generated kernels");
  const auto& ks = r.cuda.source.kernels;
  const GeneratedKernel &first = ks[generated[0]], &second = ks[generated[1]], &scaled = ks[generated[2]], &swapped = ks[generated[3]];
  VERIFY2(first.launcher == first.name && second.launcher == first.name, second.name + " launches " + second.launcher);
  VERIFY2(scaled.launcher == scaled.name, scaled.name + " launches " + scaled.launcher);    // relu then * 3.0
  VERIFY2(swapped.launcher == swapped.name, swapped.name + " launches " + swapped.launcher);  // b - m, not m + b
  const GeneratedKernel& doubled = ks[generated[4]];  // relu then * 2.0: the third's code but for one constant
  VERIFY2(doubled.launcher == doubled.name, doubled.name + " launches " + doubled.launcher);
  VERIFY(second.args != first.args);  // its own buffers
  VERIFY(r.cuda.launch[generated[1]].grid == r.cuda.launch[generated[0]].grid);
  int definitions = 0;
  for (size_t at = r.source.code.find("\nextern \"C\" __global__"); at != std::string::npos; at = r.source.code.find("\nextern \"C\" __global__", at + 1))
    ++definitions;
  VERIFY2(definitions == 4, std::to_string(definitions) + " kernel definitions");
  std::istringstream in(r.source.code);
  std::string text, line;
  for (int l = 1; std::getline(in, line); ++l)
    if (l >= second.first_line && l <= second.last_line) text += line + "\n";
  VERIFY2(text.rfind("// " + second.name + ": iteration", 0) == 0, text);
  VERIFY2(text.find("the same code as " + first.name) != std::string::npos, text);
  VERIFY(ptx_entries(r.stage("asm")->text).count(second.name) == 0);
  std::string why;
  if (!CudaDriver::get(&why)) {
    VERIFY2(r.not_run.find("needs a GPU") != std::string::npos, r.not_run);
    return;
  }
  VERIFY2(r.check.ok, r.stage("run")->text);
}

}  // namespace

// ---- bf16/f16 FlashAttention-2 (codegen/cuda_flash_half.h, exec/flash_attention_cuda.h) ----
// Every instance (head sizes 8 to 128 in steps of 8, bf16 and f16, forward and backward) compiles
// with NVRTC for sm_80 and sm_90 to PTX with the tensor-core instructions and to a cubin (no GPU
// needed).
void flash_half_kernels_compile() {
  // The launcher's grid gives a forward block FlashHalf::kForwardRows queries: the kernel's
  // LS_FH_FWD_BM (64 x LS_FH_FWD_MT), or rows would go uncomputed.
  const std::string mt = "#define LS_FH_FWD_MT " + std::to_string(FlashHalf::kForwardRows / 64) + " ";
  VERIFY2(FlashHalf::kForwardRows % 64 == 0 && flash_half_device_source().find(mt) != std::string::npos,
          "the forward launcher's " + std::to_string(FlashHalf::kForwardRows) + " rows a block are not the kernel's LS_FH_FWD_BM");
  std::string src = "// flash attention in half precision\n" + flash_half_device_source();
  for (int d = 8; d <= 128; d += 8)
    for (const char* t : {"bf16", "f16"})
      for (bool bwd : {false, true}) src += flash_half_instance(t, d, bwd) + "\n";
  for (int sm : {80, 90}) {
    CudaCompileOptions o;
    o.sm = sm;
    o.cache_dir = "off";
    o.sass = false;
    o.module = "attention";
    const CudaCompileResult c = compile_cuda(src, o);
    VERIFY2(!c.cubin.empty(), "no cubin for sm_" + std::to_string(sm));
    for (const char* needle : {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                               "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", "cp.async.cg.shared.global", ".entry ls_flash_half_fwd_bf16_8",
                               ".entry ls_flash_half_bwd_f16_128", ".entry ls_flash_half_bwd_pre_bf16_72", ".entry ls_flash_half_bwd_dq_f16_40"})
      VERIFY2(c.ptx.find(needle) != std::string::npos, std::string("sm_") + std::to_string(sm) + ": no " + needle + " in the PTX");
  }
}

// What cuDNN's fused attention is refused before a graph is built (no GPU needed): types, head
// sizes, grouped-query heads, and before cuDNN 9.5.1 an output gradient whose strides are not the
// output's (that cuDNN reads it with the output's strides: wrong gradients, not a refusal).
void cudnn_attention_limits() {
  SdpaShape s;
  s.B = 2, s.H = 8, s.Hk = 2, s.L = 128, s.S = 96, s.D = 64;
  s.q = s.o = {8 * 128 * 64, 128 * 64, 64, 1};
  s.k = s.v = {2 * 96 * 64, 96 * 64, 64, 1};
  s.grad_out = s.o;
  VERIFY(sdpa_unsupported(s, DType::bf16, false, 90100).empty());
  VERIFY(sdpa_unsupported(s, DType::f16, true, 90100).empty());
  VERIFY(!sdpa_unsupported(s, DType::f32, false, 90100).empty());
  VERIFY(!sdpa_unsupported(s, DType::bf16, false, 8907).empty());
  SdpaShape odd = s;
  odd.Hk = 3;
  VERIFY(!sdpa_unsupported(odd, DType::bf16, false, 90100).empty());
  odd = s;
  odd.D = 60;
  VERIFY(!sdpa_unsupported(odd, DType::bf16, true, 90100).empty());
  // the output written heads inner ([B, L, H, D] in memory), its gradient contiguous
  SdpaShape heads_inner = s;
  heads_inner.o = {128 * 8 * 64, 64, 8 * 64, 1};
  VERIFY(sdpa_unsupported(heads_inner, DType::bf16, false, 90100).empty());  // the forward reads no gradient
  VERIFY2(sdpa_unsupported(heads_inner, DType::bf16, true, 90100).find("9.5.1") != std::string::npos,
          sdpa_unsupported(heads_inner, DType::bf16, true, 90100));
  VERIFY(sdpa_unsupported(heads_inner, DType::bf16, true, 90501).empty());
  heads_inner.grad_out = heads_inner.o;
  VERIFY(sdpa_unsupported(heads_inner, DType::bf16, true, 90100).empty());
}

// A bf16/f16 model with attention (graph text, float32 weights made `dtype` as model.to(dtype)):
// its attention calls run as the FlashAttention-2 kernels where `flash` (else the math form: a
// mask), the attention module has their instances, and on a GPU the outputs (and with `train` the
// gradients) match the reference interpreter within the half type's tolerance. With `dnn` they run
// on cuDNN's fused attention where cuDNN loads (PyTorch's choice on the H100); without, LS_CUDNN=0
// keeps them on our kernels.
void flash_half_runs(const std::string& name, const std::string& graph, DType dtype, bool train, bool flash, bool dnn) {
  struct Env {  // LS_CUDNN=0 for the run, as it was after
    std::string old;
    bool had = false, set = false;
    explicit Env(bool off) : set(off) {
      if (const char* v = std::getenv("LS_CUDNN")) old = v, had = true;
      if (off) setenv("LS_CUDNN", "0", 1);
    }
    ~Env() {
      if (!set) return;
      if (had) setenv("LS_CUDNN", old.c_str(), 1);
      else unsetenv("LS_CUDNN");
    }
  } env(!dnn);
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("ls_flash_half_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / (name + ".txt");
  std::ofstream(file) << graph;
  PipelineOptions o;
  o.device = Device::cuda;
  o.train = train;
  o.dtype = dtype;
  o.timing_budget_ms = 20;
  const CompileResult r = run_pipeline(load_model(file.string()), o);
  std::filesystem::remove_all(dir);
  VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
  const std::string type = dtype == DType::bf16 ? "bf16" : "f16";
  const std::string how = "flash attention kernel (" + type + ", tensor cores)";
  int calls = 0;
  for (const Kernel& k : r.schedule.kernels) {
    if (!k.is_extern) continue;
    const ExternCall& c = r.loops.nodes.at(k.nodes.at(0)).ext;
    if (!c.op || c.op->name.find("efficient_attention") == std::string::npos) continue;
    VERIFY2(cuda_extern_how(r.loops, c, true) == how, k.name + " would run as " + cuda_extern_how(r.loops, c, true));
    ++calls;
  }
  VERIFY2(calls == (flash ? (train ? 2 : 1) : 0), std::to_string(calls) + " efficient-attention calls");
  if (flash) {
    VERIFY2(r.cuda.attention_source.find("LS_FLASH_HALF_FWD(" + type) != std::string::npos, "no forward instance in the attention module");
    VERIFY(train == (r.cuda.attention_source.find("LS_FLASH_HALF_BWD(" + type) != std::string::npos));
  }
  std::string why;
  if (!CudaDriver::get(&why)) {
    VERIFY2(r.not_run.find("needs a GPU") != std::string::npos, r.not_run);
    return;
  }
  VERIFY2(r.not_run.empty(), r.not_run);
  VERIFY2(r.check.ok, r.stage("run")->text);
  VERIFY(r.check.precision == dtype && !r.check.reference.empty());
  const bool on_dnn = dnn && flash && Cudnn::get() != nullptr && (!std::getenv("LS_CUDNN") || std::string(std::getenv("LS_CUDNN")) != "0");
  int ran = 0;
  for (const KernelReport& k : r.kernels) {
    if (k.name.find("efficient_attention") == std::string::npos) continue;
    VERIFY2(k.how.find("host") == std::string::npos, k.name + " ran on the host: " + k.how);
    if (on_dnn) VERIFY2(k.how.rfind("cuDNN attention (" + type + "): engine ", 0) == 0, k.name + " ran as " + k.how);
    else if (flash) VERIFY2(k.how == how, k.name + " ran as " + k.how);
    ++ran;
  }
  VERIFY2(ran == calls, std::to_string(ran) + " attention kernels ran");
}

// A graph (FX text) compiled for CUDA with its weights and inputs made `dtype`; what load_model or
// the pipeline threw, in the result's error.
// A graph (FX text) loaded as the app loads a file of it, with random inputs; NAME.txt names it in
// messages.
LoadedModel load_graph_text(const std::string& name, const std::string& graph) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("ls_graph_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / (name + ".txt");
  std::ofstream(file) << graph;
  struct Cleanup {
    std::filesystem::path dir;
    ~Cleanup() { std::filesystem::remove_all(dir); }
  } cleanup{dir};
  return load_model(file.string());
}

CompileResult compile_graph_text(const std::string& name, const std::string& graph, DType dtype) {
  PipelineOptions o;
  o.device = Device::cuda;
  o.dtype = dtype;
  o.timing_budget_ms = 20;
  CompileResult r;
  try {
    r = run_pipeline(load_graph_text(name, graph), o);
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

// The one gate of the half kernels (ops/attention.h; the decomposition and CUDA code generation
// both ask it): q, k, v of one half type, of one rank, one batch, k's and v's heads alike and
// dividing q's, one length for k and v, one head size; anything else keeps the existing path.
// Through the pipeline: a bf16 efficient-attention call whose key and value broadcast over the
// batch runs elsewhere (it went to the half kernels, which would have read k and v past their
// batch of one), and on a GPU it matches the reference. No GPU needed for the gate.
void flash_half_gate() {
  const DType b = DType::bf16, h = DType::f16;
  auto op = [](DType t, Shape s) { return AttentionOperand{t, std::move(s)}; };
  VERIFY(flash_half_head_dim(op(b, {2, 8, 100, 64}), op(b, {2, 8, 90, 64}), op(b, {2, 8, 90, 64})) == 64);
  VERIFY(flash_half_head_dim(op(h, {2, 100, 40}), op(h, {2, 90, 40}), op(h, {2, 90, 40})) == 40);
  VERIFY(flash_half_head_dim(op(b, {1, 8, 130, 128}), op(b, {1, 2, 130, 128}), op(b, {1, 2, 130, 128})) == 128);  // grouped-query
  VERIFY(flash_half_head_dim(op(b, {2, 8, 100, 64}), op(b, {2, 2, 90, 64}), op(b, {2, 2, 90, 64}),
                             {op(b, {2, 8, 100, 64}), op(b, {2, 8, 100, 64})}) == 64);  // the backward's grad_out and out
  const std::vector<std::pair<std::string, std::vector<AttentionOperand>>> refused = {
      {"3 key heads for 8", {op(b, {1, 8, 64, 64}), op(b, {1, 3, 64, 64}), op(b, {1, 3, 64, 64})}},
      {"key and value heads differ", {op(b, {1, 8, 64, 64}), op(b, {1, 2, 64, 64}), op(b, {1, 4, 64, 64})}},
      {"a batch of one for two", {op(b, {2, 2, 64, 64}), op(b, {1, 2, 64, 64}), op(b, {1, 2, 64, 64})}},
      {"ranks 4, 3, 3", {op(b, {2, 1, 64, 64}), op(b, {2, 64, 64}), op(b, {2, 64, 64})}},
      {"rank 5", {op(b, {2, 2, 2, 64, 64}), op(b, {2, 2, 2, 64, 64}), op(b, {2, 2, 2, 64, 64})}},
      {"bf16 with f16", {op(b, {2, 2, 64, 64}), op(h, {2, 2, 64, 64}), op(b, {2, 2, 64, 64})}},
      {"float32", {op(DType::f32, {2, 2, 64, 64}), op(DType::f32, {2, 2, 64, 64}), op(DType::f32, {2, 2, 64, 64})}},
      {"head size 136", {op(b, {2, 2, 64, 136}), op(b, {2, 2, 64, 136}), op(b, {2, 2, 64, 136})}},
      {"head size 20", {op(b, {2, 2, 64, 20}), op(b, {2, 2, 64, 20}), op(b, {2, 2, 64, 20})}},
      {"value's head size 32", {op(b, {2, 2, 64, 64}), op(b, {2, 2, 64, 64}), op(b, {2, 2, 64, 32})}},
      {"key and value lengths differ", {op(b, {2, 2, 64, 64}), op(b, {2, 2, 64, 64}), op(b, {2, 2, 50, 64})}},
      {"the backward's out with 4 heads for 8", {op(b, {2, 8, 64, 64}), op(b, {2, 8, 64, 64}), op(b, {2, 8, 64, 64}), op(b, {2, 4, 64, 64})}},
  };
  for (const auto& c : refused) {
    const std::vector<AttentionOperand> more(c.second.begin() + 3, c.second.end());
    VERIFY2(flash_half_head_dim(c.second[0], c.second[1], c.second[2], more) == 0, c.first);
  }
  setenv("LS_FLASH_HALF", "0", 1);
  const int off = flash_half_head_dim(op(b, {2, 8, 100, 64}), op(b, {2, 8, 90, 64}), op(b, {2, 8, 90, 64}));
  unsetenv("LS_FLASH_HALF");
  VERIFY(off == 0);

  // The fused kernels take equal batch and head sizes, as PyTorch's: a broadcast key is refused
  // where the call is made (its kernels read out of bounds before).
  const CompileResult bad = compile_graph_text("broadcast_kv", R"(class GraphModule(torch.nn.Module):
    def forward(self, q: "f32[2, 2, 70, 64]", k: "f32[1, 2, 70, 64]", v: "f32[1, 2, 70, 64]"):
        att = torch.ops.aten._scaled_dot_product_efficient_attention.default(q, k, v, None, False)
        a: "f32[2, 2, 70, 64]" = att[0];  att = None
        return (a,)
)", b);
  VERIFY2(bad.error.find("same batch and head sizes") != std::string::npos, bad.error_stage + ": " + bad.error);
  // A head size the half kernels refuse: the call runs as the float32 kernel on widened copies.
  const CompileResult r = compile_graph_text("head_size_20", R"(class GraphModule(torch.nn.Module):
    def forward(self, q: "f32[2, 2, 70, 20]", k: "f32[2, 2, 70, 20]", v: "f32[2, 2, 70, 20]"):
        att = torch.ops.aten._scaled_dot_product_efficient_attention.default(q, k, v, None, False)
        a: "f32[2, 2, 70, 20]" = att[0];  att = None
        return (a,)
)", b);
  VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
  int calls = 0;
  for (const Kernel& k : r.schedule.kernels) {
    const ExternCall& c = r.loops.nodes.at(k.nodes.at(0)).ext;
    if (!k.is_extern || !c.op || c.op->name.find("efficient_attention") == std::string::npos) continue;
    ++calls;
    VERIFY2(flash_half_head_dim(r.loops, c) == 0, k.name);
    VERIFY2(cuda_extern_how(r.loops, c, true).find("tensor cores") == std::string::npos, cuda_extern_how(r.loops, c, true));
  }
  VERIFY(calls == 1);
  std::string why;
  if (!CudaDriver::get(&why)) {
    VERIFY2(r.not_run.find("needs a GPU") != std::string::npos, r.not_run);
    return;
  }
  VERIFY2(r.not_run.empty() && r.check.ok, r.not_run + " | " + r.stage("run")->text);
}

// Dropout inside attention is refused where the call is made (each op's shape rule), in every
// form an exported graph holds: scaled_dot_product_attention, efficient attention, its backward
// (it ran without dropout, silently, on CUDA and in the reference interpreter). No GPU needed.
void attention_dropout_is_refused() {
  const std::string head = R"(class GraphModule(torch.nn.Module):
    def forward(self, q: "f32[2, 2, 16, 8]", k: "f32[2, 2, 16, 8]", v: "f32[2, 2, 16, 8]", g: "f32[2, 2, 16, 8]"):
)";
  const std::vector<std::pair<std::string, std::string>> graphs = {
      {"sdpa", R"(        a: "f32[2, 2, 16, 8]" = torch.ops.aten.scaled_dot_product_attention.default(q, k, v, None, 0.1)
        return (a,)
)"},
      {"efficient", R"(        att = torch.ops.aten._scaled_dot_product_efficient_attention.default(q, k, v, None, False, 0.1, True)
        a: "f32[2, 2, 16, 8]" = att[0];  att = None
        return (a,)
)"},
      {"efficient_backward", R"(        att = torch.ops.aten._scaled_dot_product_efficient_attention.default(q, k, v, None, True, 0.0, True)
        o: "f32[2, 2, 16, 8]" = att[0]
        lse: "f32[2, 2, 16]" = att[1]
        seed: "i64[]" = att[2]
        offset: "i64[]" = att[3];  att = None
        bw = torch.ops.aten._scaled_dot_product_efficient_attention_backward.default(g, q, k, v, None, o, lse, seed, offset, 0.1, [True, True, True, False], True)
        dq: "f32[2, 2, 16, 8]" = bw[0];  bw = None
        return (dq,)
)"},
  };
  for (const auto& ng : graphs) {
    const CompileResult r = compile_graph_text("dropout_" + ng.first, head + ng.second, DType::f32);
    VERIFY2(r.error.find("attention dropout is not supported (dropout_p = 0.1") != std::string::npos, ng.first + ": " + r.error);
    const std::string without = std::regex_replace(ng.second, std::regex(", 0\\.1"), ", 0.0");
    const CompileResult ok = compile_graph_text("no_dropout_" + ng.first, head + without, DType::f32);
    VERIFY2(ok.error.empty(), ng.first + " without dropout: " + ok.error_stage + ": " + ok.error);
  }
}

// cumsum as a generated scan (Inductor's ir.Scan on CUDA), not the helper ls_cumsum: float32 rows
// longer than a block (1024 threads: the running prefix carried across chunks), bfloat16 (summed
// in float32, each element rounded once), int64 and int32 inputs (int64 results), a non-last
// dimension with few columns (a block per strided line) and with many (a thread per column), and
// a pointwise producer before it. Every cumsum kernel has the scan's launch and code, the source
// compiles with NVRTC, and on a GPU every output matches the reference interpreter.
void cumsum_runs_as_a_generated_scan() {
  LoadedModel model = load_graph_text("scans", "class GraphModule(torch.nn.Module):\n"
      "    def forward(self, x: \"f32[4, 3000]\", h: \"bf16[8, 700]\", i: \"i64[5, 2500]\", j: \"i32[6, 40]\", y: \"f32[3, 1500, 5]\", c: \"f32[64, 4096]\", z: \"f32[2, 2049]\"):\n"
      "        a: \"f32[4, 3000]\" = torch.ops.aten.cumsum.default(x, 1)\n"
      "        b: \"bf16[8, 700]\" = torch.ops.aten.cumsum.default(h, -1)\n"
      "        d: \"i64[5, 2500]\" = torch.ops.aten.cumsum.default(i, 1)\n"
      "        e: \"i64[6, 40]\" = torch.ops.aten.cumsum.default(j, 1)\n"
      "        f: \"f32[3, 1500, 5]\" = torch.ops.aten.cumsum.default(y, 1)\n"
      "        g: \"f32[64, 4096]\" = torch.ops.aten.cumsum.default(c, 0)\n"
      "        s: \"f32[2, 2049]\" = torch.ops.aten.sin.default(z)\n"
      "        t: \"f32[2, 2049]\" = torch.ops.aten.mul.Tensor(s, 2.0)\n"
      "        u: \"f32[2, 2049]\" = torch.ops.aten.cumsum.default(t, 1)\n"
      "        return (a, b, d, e, f, g, u)\n");
  for (Tensor& t : model.inputs)  // values of one sign (no cancellation to 0 against float32's rounding), integers of both
    for (int64_t k = 0; k < t.numel(); ++k)
      t.set(k, dtype_is_float(t.dtype()) ? 0.25 + static_cast<double>((k * 7919) % 1000) / 1000.0 : static_cast<double>((k * 37) % 11) - 5);
  PipelineOptions o;
  o.device = Device::cuda;
  o.timing_budget_ms = 20;
  CompileResult r = run_pipeline(model, o);
  VERIFY2(r.error.empty(), r.error_stage + ": " + r.error);
  int scans = 0;
  for (size_t k = 0; k < r.schedule.kernels.size(); ++k) {
    const Kernel& kr = r.schedule.kernels[k];
    if (!kr.is_extern || r.loops.nodes.at(kr.nodes.at(0)).ext.op->name != "aten.cumsum.default") continue;
    ++scans;
    VERIFY2(r.cuda.launch.at(k).form == "scan", kr.name + " launches as " + r.cuda.launch.at(k).form);
    VERIFY2(!r.cuda.source.kernels.at(k).launcher.empty(), kr.name + " has no generated kernel");
  }
  VERIFY2(scans == 7, std::to_string(scans) + " cumsum kernels");
  VERIFY(r.source.code.find("__shfl_up_sync") != std::string::npos);   // the block-per-line form
  VERIFY(r.source.code.find("a thread per line (columns)") != std::string::npos);  // c: 4096 columns
  std::string why;
  if (!CudaDriver::get(&why)) {
    VERIFY2(r.not_run.find("needs a GPU") != std::string::npos, r.not_run);
    return;
  }
  VERIFY2(r.check.ok, r.stage("run")->text);
  int generated = 0;
  for (const KernelReport& k : r.kernels) generated += k.how == "generated scan";
  VERIFY2(generated == 7, std::to_string(generated) + " kernels ran as the generated scan");
}

// The graphs: causal at head size 64 with sequences no multiple of the 64-row tiles and q, k, v
// read in place from [B, L, H, D] (transposed views); grouped-query attention (8 query heads over
// 2) at head size 128; head size 40 (a multiple of 8, padded to 48), not causal, with a scale; a
// boolean mask (the math form, still on the device).
std::vector<std::pair<std::string, std::string>> flash_half_graphs() {
  return {
      {"causal_d64", R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[2, 100, 4, 64]", y: "f32[2, 100, 4, 64]", z: "f32[2, 100, 4, 64]"):
        q: "f32[2, 4, 100, 64]" = torch.ops.aten.permute.default(x, [0, 2, 1, 3])
        k: "f32[2, 4, 100, 64]" = torch.ops.aten.permute.default(y, [0, 2, 1, 3])
        v: "f32[2, 4, 100, 64]" = torch.ops.aten.permute.default(z, [0, 2, 1, 3])
        a: "f32[2, 4, 100, 64]" = torch.ops.aten.scaled_dot_product_attention.default(q, k, v, None, 0.0, True)
        return (a,)
)"},
      {"gqa_d128", R"(class GraphModule(torch.nn.Module):
    def forward(self, q: "f32[1, 8, 130, 128]", k: "f32[1, 2, 130, 128]", v: "f32[1, 2, 130, 128]"):
        a: "f32[1, 8, 130, 128]" = torch.ops.aten.scaled_dot_product_attention.default(q, k, v, is_causal = True, enable_gqa = True)
        return (a,)
)"},
      {"d40", R"(class GraphModule(torch.nn.Module):
    def forward(self, q: "f32[2, 3, 77, 40]", k: "f32[2, 3, 77, 40]", v: "f32[2, 3, 77, 40]"):
        a: "f32[2, 3, 77, 40]" = torch.ops.aten.scaled_dot_product_attention.default(q, k, v, scale = 0.3)
        return (a,)
)"},
      {"masked", R"(class GraphModule(torch.nn.Module):
    def forward(self, q: "f32[2, 2, 70, 64]", k: "f32[2, 2, 70, 64]", v: "f32[2, 2, 70, 64]"):
        ones: "b8[70, 70]" = torch.ops.aten.ones.default([70, 70], dtype = torch.bool, device = device(type='cpu'), pin_memory = False)
        m: "b8[70, 70]" = torch.ops.aten.tril.default(ones)
        a: "f32[2, 2, 70, 64]" = torch.ops.aten.scaled_dot_product_attention.default(q, k, v, m)
        return (a,)
)"},
  };
}

int main(int argc, char** argv) {
  if (!have_nvrtc()) {
    std::cout << "SKIP: this build has no NVRTC (CUDA toolkit not found at configure time)\n";
    return 0;
  }
  setenv("LOWERSCOPE_CACHE_DIR", "off", 1);  // compile for real every time
  const std::string only = argc > 1 ? argv[1] : "";
  std::vector<std::pair<std::string, std::function<void()>>> cases;
  for (size_t i = 0; i < std::size(kModels); ++i) {
    const std::string m = kModels[i];
    const std::string name = m.substr(m.find('/') + 1, m.rfind('/') - m.find('/') - 1);
    cases.push_back({"ptx " + name, [=] { every_kernel_compiles_to_ptx(m, false); }});
    if (name != "mobilenet_v3_small") cases.push_back({"ptx " + name + " train", [=] { every_kernel_compiles_to_ptx(m, true); }});
  }
  cases.push_back({"kernel forms", kernel_forms});
  cases.push_back({"dynamic rows a weight fixes keep the persistent form", fixed_rows_keep_the_persistent_form});
  cases.push_back({"helper kernels compile", helper_kernels_compile});
  cases.push_back({"compile error names the line", compile_error_names_the_line});
  cases.push_back({"kernels compile in parts and link", kernels_compile_in_parts_and_link});
  cases.push_back({"column clusters", column_clusters});
  cases.push_back({"new elementwise ops compile", new_elementwise_ops_compile});
  cases.push_back({"gathers run as generated kernels", gathers_run_as_generated_kernels});
  cases.push_back({"arg reductions and prod run as generated kernels", arg_reductions_and_prod_run_as_generated_kernels});
  cases.push_back({"identical kernels compile once", identical_kernels_compile_once});
  cases.push_back({"half convolutions run on the device", half_convolutions_run_on_the_device});
  cases.push_back({"half rows divide with div.full", half_rows_divide_fast});
  cases.push_back({"column kernels keep one r loop", column_loops_merge});
  cases.push_back({"convolutions run through cuDNN", convolutions_run_through_cudnn});
  cases.push_back({"cuDNN attention's limits", cudnn_attention_limits});
  cases.push_back({"sort and topk run on the device", sort_and_topk_run_on_the_device});
  cases.push_back({"sort of long lines runs on the device", sort_of_long_lines_runs_on_the_device});
  cases.push_back({"index_put and cumsum run on the device", index_put_and_cumsum_run_on_the_device});
  cases.push_back({"cumsum runs as a generated scan", cumsum_runs_as_a_generated_scan});
  for (const char* m : {"models/mlp", "stages/attn_block/3_core_aten.txt"})
    for (DType t : {DType::bf16, DType::f16})
      for (bool tr : {false, true})
        cases.push_back({std::string("half precision ") + std::string(dtype_short(t)) + " " + m + (tr ? " train" : ""),
                         [=] { half_precision_runs(m, t, tr); }});
  for (const char* m : {"models/softmax", "models/res_block", "models/cifar_net", "mse_loss/1_dynamo_fx_0.txt", "sincos/1_dynamo_fx_0.txt"})
    for (bool t : {false, true})
      cases.push_back({std::string("run ") + m + (t ? " train" : ""), [=] { run_or_say_why_not(m, t); }});
  for (bool t : {false, true}) {
    cases.push_back({std::string("attention fused") + (t ? " train" : ""),
                     [=] { attention_runs_on_the_device("stages/attn_block/3_core_aten.txt", t, "attention kernel", "attention kernel"); }});
    // long sequences: the tiled kernels (FlashAttention-2), forward and backward; causal, a length
    // that is no multiple of the tiles, keys and queries of different lengths
    for (const char* m : {"stages/extra/attention_long.txt", "stages/extra/attention_long_uneven.txt"})
      cases.push_back({std::string("attention long ") + m + (t ? " train" : ""),
                       [=] { attention_runs_on_the_device(m, t, "flash attention kernel", "flash attention kernel"); }});
    // head size 128: the scores in memory, batched cuBLAS products around a softmax kernel
    cases.push_back({std::string("attention cuBLAS") + (t ? " train" : ""),
                     [=] { attention_runs_on_the_device("stages/extra/attention_long_d128.txt", t, "attention (cuBLAS)", "attention (cuBLAS)"); }});
  }
  cases.push_back({"depthwise convolution train", depthwise_backward_runs_on_the_device});
  cases.push_back({"grouped convolutions train", grouped_convolutions_run_on_the_device});
  cases.push_back({"1-D convolutions train", conv1d_runs_on_the_device});
  cases.push_back({"convolution forms train", convolution_forms_run_on_the_device});
  for (const char* m : {"models/cifar_net", "models/res_block"})
    for (bool t : {false, true})
      cases.push_back({std::string("reduce-overhead ") + m + (t ? " train" : ""), [=] { reduce_overhead_replays_a_cuda_graph(m, t); }});
  for (const char* m : {"models/softmax", "models/res_block", "models/mlp"})
    cases.push_back({std::string("max-autotune ") + m, [=] { max_autotune_times_candidates(m); }});
  cases.push_back({"matmul algorithm lines", matmul_algorithm_lines});
  for (const auto& mt : std::vector<std::pair<const char*, bool>>{{"models/mlp", false}, {"models/mlp", true}, {"stages/attn_block/3_core_aten.txt", true}}) {
    const char* m = mt.first;  // not a structured binding: clang 14 (the sanitizer build) cannot capture one
    const bool t = mt.second;
    cases.push_back({std::string("GEMM templates ") + m + (t ? " train" : ""), [=] { gemm_templates_run_in_place_of_cublas(m, t); }});
  }
  for (DType t : {DType::bf16, DType::f16})
    for (bool train : {false, true})
      cases.push_back({std::string("GEMM templates on the tensor cores ") + std::string(dtype_short(t)) + (train ? " train" : ""),
                       [=] { gemm_half_templates(t, train); }});
  // layer norm + GELU: batch and sequence dynamic, the normalized size fixed by the weights; the
  // softmax: rows and row length dynamic, while the row length stays in 342-682 (the threads a row
  // of 512's) and a multiple of 4 (the rows' 16-byte accesses).
  const std::vector<DynamicCase> dynamic_cases = {
      {"stages/layernorm_gelu/3_core_aten.txt", {"s0", "s1"}, {{3, 64, 256}, {5, 40, 256}}, {}},
      {"models/softmax/model.pt2", {"s0", "s1"}, {{7, 512}, {100, 600}, {9, 400}}, {7, 300}, {7, 514}},
      {"stages/attn_block/3_core_aten.txt", {"s0", "s1"}, {{2, 48, 128}, {5, 64, 128}}, {2, 256, 128}}};
  for (const DynamicCase& c : dynamic_cases)
    cases.push_back({"dynamic shapes " + c.model, [=] { dynamic_shapes_reuse_the_cuda_kernels(c); }});
  // Packages: convolution and addmm (cuBLASLt's bias), a training step's convolution backward,
  // attention's fused kernels forward and backward, and its tiled ones for long sequences.
  cases.push_back({"packages with index checks build", packages_with_index_checks_build});
  cases.push_back({"fft steps match a direct DFT", fft_steps_match_direct_dft});
  cases.push_back({"fft kernels compile", fft_kernels_compile});
  cases.push_back({"fft calls take cuFFT steps", fft_calls_take_cufft_steps});
  cases.push_back({"fft on cuFFT", fft_runs_on_cufft});
  cases.push_back({"package models/cifar_net", [] { package_builds_and_runs("models/cifar_net", false, {"lsrt::Conv", "lsrt::Addmm"}); }});
  cases.push_back({"package models/res_block train", [] { package_builds_and_runs("models/res_block", true, {".backward(gpu"}); }});
  cases.push_back({"package attn_block train", [] {
                     package_builds_and_runs("stages/attn_block/3_core_aten.txt", true, {"lsrt::Attention::fused", ".backward(gpu"});
                   }});
  cases.push_back({"package grouped convolutions train", [] {
                     package_builds_and_runs("stages/conv_grouped/grouped_conv.txt", true, {"(grouped convolution backward kernels)", ".backward(gpu"});
                   }});
  cases.push_back({"package depthwise train", [] {
                     package_builds_and_runs("stages/extra/depthwise_conv.txt", true, {"(depthwise backward kernels)", ".backward(gpu"});
                   }});
  cases.push_back({"package convolution forms train", [] {
                     package_builds_and_runs("stages/extra/conv_forms.txt", true, {"(cuBLAS (a linear layer))", ".backward(gpu"});
                   }});
  cases.push_back({"package carries max-autotune's cuBLASLt algorithms", package_carries_matmul_algorithms});
  for (DType t : {DType::bf16, DType::f16})
    for (bool train : {false, true})
      cases.push_back({std::string("package half ") + std::string(dtype_short(t)) + (train ? " train" : ""), [=] { half_package_builds_and_runs(t, train); }});
  cases.push_back({"package attention long train", [] {
                     package_builds_and_runs("stages/extra/attention_long.txt", true, {"lsrt::Attention::tiled", ".backward(gpu"});
                   }});
  // bf16/f16 FlashAttention-2: NVRTC for sm_80 and sm_90 (no GPU needed); on a GPU, against the
  // reference interpreter, forward and training step (before the worker and fault cases: the
  // in-process fault must stay last).
  cases.push_back({"flash attention in half precision compiles", flash_half_kernels_compile});
  cases.push_back({"flash attention in half precision: one gate, operands that agree", flash_half_gate});
  cases.push_back({"attention dropout is refused", attention_dropout_is_refused});
  for (const auto& ng : flash_half_graphs())
    for (DType t : {DType::bf16, DType::f16})
      for (bool tr : {false, true}) {
        const std::string n = ng.first, g = ng.second;  // no structured binding: clang 14 cannot capture one
        for (bool dnn : {false, true})
          cases.push_back({std::string(dnn ? "cuDNN attention " : "flash attention in half precision ") + n + " " + std::string(dtype_short(t)) +
                               (tr ? " train" : ""),
                           [=] { flash_half_runs(n, g, t, tr, n != "masked", dnn); }});
      }
  // The kernel worker: the same run as in this process; faults, hangs and a model too large
  // survived there. The in-process fault last: it loses this process's CUDA for good.
  cases.push_back({"worker matches in-process models/cifar_net", [] { worker_matches_in_process("models/cifar_net/model.pt2", false, "default", false); }});
  cases.push_back({"worker matches in-process attn_block train", [] { worker_matches_in_process("stages/attn_block/3_core_aten.txt", true, "default", false); }});
  cases.push_back({"worker matches in-process models/res_block reduce-overhead", [] { worker_matches_in_process("models/res_block/model.pt2", false, "reduce-overhead", false); }});
  cases.push_back({"worker matches in-process models/mlp max-autotune", [] { worker_matches_in_process("models/mlp/model.pt2", false, "max-autotune", false); }});
  cases.push_back({"worker matches in-process dynamic softmax", [] { worker_matches_in_process("models/softmax/model.pt2", false, "default", true); }});
  cases.push_back({"worker refuses a model too large", worker_refuses_a_model_too_large});
  cases.push_back({"worker reads the plan", worker_reads_the_plan});
  cases.push_back({"injected illegal address is survived", injected_illegal_address_is_survived});
  cases.push_back({"injected hang is stopped", injected_hang_is_stopped});
  cases.push_back({"cli reports the CUDA fault", cli_reports_the_cuda_fault});
  cases.push_back({"faulting kernel is named, device recovers", faulting_kernel_is_named_and_device_recovers});
  int failed = 0, passed = 0, xfail = 0, skipped = 0;
  for (auto& [name, fn] : cases) {
    if (!only.empty() && name.find(only) == std::string::npos) continue;
    g_expect_fail.clear();
    try {
      fn();
      std::cout << "PASS   : " << name << '\n';
      ++passed;
    } catch (const ExpectedFailure& e) {
      std::cout << "XFAIL  : " << name << "  " << e.why << '\n';
      ++xfail;
    } catch (const Skip& s) {
      std::cout << "SKIP   : " << name << "  " << s.why << '\n';
      ++skipped;
    } catch (const Failure& f) {
      std::cout << "FAIL!  : " << name << "  " << f.what << '\n';
      ++failed;
    } catch (const std::exception& e) {
      std::cout << "FAIL!  : " << name << "  threw: " << e.what() << '\n';
      ++failed;
    }
    std::cout.flush();
  }
  std::cout << "Totals: " << passed << " passed, " << failed << " failed, " << xfail << " expected failures, " << skipped
            << " skipped, " << g_checks << " checks\n";
  return failed ? 1 : 0;
}
