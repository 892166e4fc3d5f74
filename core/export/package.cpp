#include "export/package.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "autodiff/joint.h"
#include "cuda/cublas.h"
#include "cuda/nvrtc_compiler.h"
#include "exec/attention.h"
#include "exec/cuda_executor.h"
#include "pipeline/pipeline.h"
#include "interp/reference.h"
#include "ops/known_ops.h"
#include "ops/op_table.h"
#include "tensor/npy.h"

extern const char kPackageBuffers[];
extern const char kPackageRuntime[];
extern const char kPackageRuntimeCuda[];
extern const char kRuntimeCpu[];
extern const char kRuntimeCuda[];

namespace ls {

namespace {

namespace fs = std::filesystem;

// The runtime's dtype code: numpy's without the byte order ("f4", "b1").
// The runtime's name of a dtype (lsrt::Buffer): numpy's, and "bf16", which .npy lacks.
std::string npy_dtype(DType t) { return t == DType::bf16 ? "bf16" : descr_of(t).substr(1); }

std::string dims(const Shape& s) {
  std::string t = "{";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "}";
}

std::string flt(double v) {
  std::ostringstream os;
  os.precision(9);
  os << std::showpoint << v << "f";
  return os.str();
}

// A double exactly (17 digits), infinities and NaN spelled so that C++ reads them (a scatter's
// scalar: -inf masks logits before a top-k).
std::string dbl(double v) {
  if (std::isnan(v)) return "std::numeric_limits<double>::quiet_NaN()";
  if (std::isinf(v)) return v > 0 ? "std::numeric_limits<double>::infinity()" : "-std::numeric_limits<double>::infinity()";
  std::ostringstream os;
  os.precision(17);
  os << std::showpoint << v;
  return os.str();
}

// A C array's elements as a braced list: "{1, 2, 0}".
std::string braced(const long long* a, int n) {
  std::string t = "{";
  for (int i = 0; i < n; ++i) t += (i ? ", " : "") + std::to_string(a[i]);
  return t + "}";
}

class Writer {
 public:
  Writer(const CompileResult& r, const std::string& dir) : r_(r), dir_(dir) {}

  Package run() {
    check();
    fs::create_directories(fs::path(dir_) / "data");
    if (cuda()) {
      put("kernels.cu", r_.source.code);
      write_modules();
    } else {
      put("kernels.cpp", r_.source.code);
    }
    for (const auto& [name, bytes] : r_.objects) put(name, bytes);
    put("buffers.h", kPackageBuffers);
    put("runtime.h", cuda() ? kPackageRuntimeCuda : kPackageRuntime);
    // The library calls' algorithms: the very header the app runs them from (exec/runtime_*.h).
    put(cuda() ? "runtime_cuda.h" : "runtime_cpu.h", cuda() ? kRuntimeCuda : kRuntimeCpu);
    put("model.cpp", cuda() ? cuda_model_cpp() : model_cpp());
    put("CMakeLists.txt", cuda() ? cuda_cmake() : cmake());
    write_data();
    put("README.md", readme());
    std::ostringstream s;
    int generated = 0, library = 0, templates = 0;
    for (const Kernel& k : r_.schedule.kernels) (k.is_extern ? library : generated)++;
    for (const auto& c : r_.gemm_cuts) templates += c.second.is_template();
    s << (cuda() ? "CUDA package of " : "package of ") << r_.model.path << ": " << generated << " generated kernel(s) in "
      << (cuda() ? "kernels.cu (kernels.ptx" + std::string(has("kernels.cubin") ? ", kernels.cubin" : "") + ")" : "kernels.cpp")
      << ", " << library - templates - (cuda() ? static_cast<int>(r_.cuda.gemm_templates.size()) : 0) << " library call(s) in runtime.h, "
      << (templates && !cuda() ? std::to_string(templates) + " matrix multipl" + (templates == 1 ? "y" : "ies") + " as GEMM templates in kernels.cpp, " : "") << r_.loops.inputs.size() << " input(s) and weight(s) in data/, "
      << expected().size() << " expected output(s)"
      << (r_.gemm_cuts.size() == static_cast<size_t>(templates) || cuda() ? "" : ", max-autotune's cuts of " + std::to_string(r_.gemm_cuts.size() - templates) + " matrix multiplies")
      << (cuda() && !r_.cuda.gemm_templates.empty() ? ", " + std::to_string(r_.cuda.gemm_templates.size()) + " matrix multipl" + (r_.cuda.gemm_templates.size() == 1 ? "y" : "ies") + " as GEMM templates in kernels.cu" : "")
      << (cuda() && !r_.cuda.matmul_algorithms.empty() ? ", max-autotune's cuBLASLt algorithms for " + std::to_string(r_.cuda.matmul_algorithms.size()) + " matrix multipl" + (r_.cuda.matmul_algorithms.size() == 1 ? "y" : "ies") : "") << (!r_.train ? "" : r_.training.num_updates > 0 ? " (a training step: forward outputs, gradients, then the updated parameters)"
                                                     : " (a training step: forward outputs, then gradients)")
      << "; build: cmake -S " << dir_ << " -B " << dir_
      << "/build && cmake --build " << dir_ << "/build && " << dir_ << "/build/run_model";
    pkg_.summary = s.str();
    return pkg_;
  }

 private:
  void check() const {
    if (!r_.error.empty()) throw std::runtime_error("the compile failed at stage '" + r_.error_stage + "': nothing to package");
    if (cuda()) return check_cuda();
    for (const Kernel& k : r_.schedule.kernels) {
      if (!k.is_extern) continue;
      const LoopNode& n = r_.loops.nodes.at(k.nodes.at(0));
      const ExternCall& c = n.ext;
      const std::string name = c.op->name;
      const bool matmul = op::is_matmul(c.op);
      const bool conv = c.op == &op::convolution() && !c.args[6].b && c.shapes.at(0).size() == 4;
      const bool conv_backward = c.op == &op::convolution_backward() && !c.args[7].b && c.shapes.at(1).size() == 4;
      const bool attention = (is_attention(c.op) && !c.args[3].is_node()) ||  // no attention mask
                             (is_attention_backward(c.op) && !c.args[4].is_node());
      if (!matmul && !conv && !conv_backward && !attention)
        throw std::runtime_error("the package runtime has no " + name + " yet (kernel " + k.name + ", node " + n.graph_node + ")");
      for (const auto& s : c.strides)
        if (!s.empty() && !attention)
          throw std::runtime_error(name + " reads a strided view (kernel " + k.name + "): not in the package runtime yet");
      for (size_t a = 0; a < c.args.size(); ++a) {
        // Attention's backward also takes the forward's random-number state (int64), which it does not read.
        if (!c.args[a].is_node() || (is_attention_backward(c.op) && (a == 7 || a == 8))) continue;
        const DType t = r_.loops.buffer(c.inputs.at(static_cast<size_t>(c.args[a].node))).dtype;
        if (t != DType::f32 && !(matmul && dtype_is_half(t)))  // half products: widened (extern_call)
          throw std::runtime_error(name + " on non-float32 operands (kernel " + k.name + ")");
      }
    }
  }

  bool cuda() const { return r_.device == Device::cuda; }
  bool has(const std::string& object) const {
    for (const auto& [name, bytes] : r_.objects)
      if (name == object) return true;
    return false;
  }

  // Every library call must run on the GPU as the app runs it: a call the app sends to the host
  // (its reference kernel) has no place in a package.
  void check_cuda() const {
    for (size_t i = 0; i < r_.schedule.kernels.size(); ++i) {
      const Kernel& k = r_.schedule.kernels[i];
      // A library call written as a generated kernel (a GEMM template, cumsum's scan) runs on the GPU.
      if (!k.is_extern || (i < r_.cuda.source.kernels.size() && !r_.cuda.source.kernels[i].launcher.empty())) continue;
      const LoopNode& n = r_.loops.nodes.at(k.nodes.at(0));
      if (cuda_extern_how(r_.loops, n.ext, true) == "host (reference kernel)")
        throw std::runtime_error("the CUDA package runtime has no " + n.ext.op->name + " (kernel " + k.name + ", node " + n.graph_node +
                                 "): Lowerscope runs it on the host");
    }
  }

  // The compute capability the compile was for ("NVRTC 13.0, sm_90 for NVIDIA H100").
  int sm() const {
    std::smatch m;
    return std::regex_search(r_.compiler, m, std::regex("sm_([0-9]+)")) ? std::stoi(m[1]) : 90;
  }

  // The PTX of the model's kernels, the helper kernels and (where the model has attention) the
  // attention kernels: what the runner loads where no cubin was built for its GPU. NVRTC's disk
  // cache has them already when the compile ran here.
  void write_modules() {
    CudaCompileOptions o;
    o.sm = sm();
    o.cubin = false;
    o.sass = false;
    put("kernels.ptx", compile_cuda(r_.source.code, o).ptx);
    put("helpers.cu", cuda_helpers_source());
    put("helpers.ptx", compile_cuda(cuda_helpers_source(), o).ptx);
    if (r_.cuda.attention_source.empty()) return;
    put("attention.cu", r_.cuda.attention_source);
    put("attention.ptx", compile_cuda(r_.cuda.attention_source, o).ptx);
  }

  void put(const std::string& name, const std::string& text) {
    std::ofstream f(fs::path(dir_) / name, std::ios::binary);
    if (!f) throw std::runtime_error(dir_ + ": cannot write " + name);
    f.write(text.data(), static_cast<std::streamsize>(text.size()));
    pkg_.files.push_back(name);
  }

  const Graph& lowered() const { return r_.prims.nodes.empty() ? r_.core_aten : r_.prims; }

  // What the runner is fed: the model's inputs and weights, and for a training step the tangents
  // (ones for the first output: the gradient of its sum).
  std::vector<Tensor> user_inputs() const {
    std::vector<Tensor> v = r_.model.inputs;
    if (r_.train)
      for (const Tensor& t : tangent_values(r_.training.joint)) v.push_back(t);
    return v;
  }

  // The expected value of each output, where the model came with one: out.npy for the forward
  // outputs; for a training step's gradients of user inputs, grad_in<i>.npy.
  std::map<size_t, Tensor> expected() const {
    std::map<size_t, Tensor> e;
    for (size_t i = 0; i < r_.model.expected.size(); ++i) e[i] = r_.model.expected[i];
    if (!r_.train) return e;
    const JointGraph& j = r_.training.joint;
    const std::vector<int> users = r_.model.graph.user_inputs();
    for (size_t k = 0; k < j.grad_of.size(); ++k)
      for (size_t u = 0; u < users.size() && u < r_.model.expected_grads.size(); ++u)
        if (j.grad_of_user_input[k] && r_.model.graph.nodes[static_cast<size_t>(users[u])].name == j.grad_of[k])
          e[static_cast<size_t>(j.num_forward_outputs) + k] = r_.model.expected_grads[u];
    return e;
  }

  void write_data() {
    const std::vector<Tensor> values = bind_inputs(lowered(), user_inputs());
    for (size_t i = 0; i < r_.loops.inputs.size() && i < values.size(); ++i) {
      save_npy((fs::path(dir_) / "data" / (r_.loops.inputs[i] + ".npy")).string(), values[i]);
      pkg_.files.push_back("data/" + r_.loops.inputs[i] + ".npy");
    }
    const std::map<size_t, Tensor> want = expected();
    if (!want.empty()) fs::create_directories(fs::path(dir_) / "expected");
    for (const auto& [i, t] : want) {
      const std::string name = "expected/out" + std::to_string(i) + ".npy";
      save_npy((fs::path(dir_) / name).string(), t);
      pkg_.files.push_back(name);
    }
  }

  std::string var(const std::string& buffer) {
    auto it = vars_.find(buffer);
    if (it != vars_.end()) return it->second;
    const std::string v = "b" + std::to_string(vars_.size());
    vars_[buffer] = v;
    return v;
  }

  std::string ptr(const std::string& buffer) { return var(buffer) + ".f32()"; }

  // A matrix multiply written as a GEMM template (max-autotune's or default mode's choice): its
  // function in kernels.cpp, the epilogue kernel after it as a kernel of its own.
  std::string template_call(const Kernel& k, const GeneratedKernel& g) {
    const ExternCall& c = r_.loops.nodes.at(k.nodes.at(0)).ext;
    auto in = [&](size_t arg) { return ptr(c.inputs.at(static_cast<size_t>(c.args.at(arg).node))); };
    const bool addmm = c.op == &op::addmm();
    const size_t ia = addmm ? 1 : 0;
    std::ostringstream os;
    os << "    // " << k.name << ": " << c.op->name << ", " << (r_.mode == Mode::max_autotune ? "max-autotune" : "GEMM template") << ": "
       << r_.gemm_cuts.at(k.name).text() << "\n"
       << "    " << g.launcher << "(" << in(ia) << ", " << in(ia + 1) << ", " << (addmm ? in(0) : "nullptr") << ", "
       << ptr(c.outputs.at(0)) << ", nullptr, nullptr);\n";
    return os.str();
  }

  // One library call, its geometry written out as constants. A product of bf16/f16 buffers runs
  // on their float32 copies, its result rounded into its buffer once (as the app's CPU executor
  // and PyTorch compute them).
  std::string extern_call(const Kernel& k) {
    const ExternCall& c = r_.loops.nodes.at(k.nodes.at(0)).ext;
    std::ostringstream os;
    os << "    // " << k.name << ": " << c.op->name << "\n";
    std::map<std::string, std::string> wide;  // half buffer -> its float32 copy's variable
    std::ostringstream copies;                // their declarations, before the call
    auto widen = [&](const std::string& buffer) {
      if (!dtype_is_half(r_.loops.buffer(buffer).dtype)) return ptr(buffer);
      auto [it, fresh] = wide.emplace(buffer, "w" + std::to_string(wide.size()));
      if (fresh) copies << "    std::vector<float> " << it->second << " = lsrt::widened(" << var(buffer) << ");\n";
      return it->second + ".data()";
    };
    auto in = [&](size_t arg) { return widen(c.inputs.at(static_cast<size_t>(c.args.at(arg).node))); };
    auto shape = [&](size_t arg) { return c.shapes.at(static_cast<size_t>(c.args.at(arg).node)); };
    const bool half_out = dtype_is_half(r_.loops.buffer(c.outputs.at(0)).dtype);
    if (half_out) copies << "    std::vector<float> wy(" << numel_of(r_.loops.buffer(c.outputs.at(0)).shape) << ");\n";
    const std::string out = half_out ? std::string("wy.data()") : ptr(c.outputs.at(0));

    // max-autotune's cut of a matrix multiply (CPU), passed to the runtime's sgemm.
    std::string cut;
    if (const auto found = r_.gemm_cuts.find(k.name); found != r_.gemm_cuts.end()) {
      os << "    // max-autotune: " << found->second.text() << "\n";
      cut = ", " + std::to_string(found->second.rows) + ", " + std::to_string(found->second.cols);
    }
    if (c.op == &op::bmm()) {
      const bool ta = transposed_operand(c, 0), tb = transposed_operand(c, 1);
      const Shape a = shape(0), b = shape(1);
      const int64_t B = a[0], M = a[ta ? 2 : 1], K = a[ta ? 1 : 2], N = b[tb ? 1 : 2];
      os << "    for (int64_t i = 0; i < " << B << "; ++i) lsrt::sgemm(" << M << ", " << N << ", " << K << ", 1.f, " << in(0)
         << " + i * " << M * K << ", " << ta << ", " << in(1) << " + i * " << K * N << ", " << tb << ", 0.f, " << out
         << " + i * " << M * N << cut << ");\n";
    } else if (op::is_gemm(c.op)) {
      const bool addmm = c.op == &op::addmm();
      const size_t ia = addmm ? 1 : 0, ib = addmm ? 2 : 1;
      const bool ta = transposed_operand(c, ia), tb = transposed_operand(c, ib);
      const Shape a = shape(ia), b = shape(ib);
      const int64_t M = a[ta ? 1 : 0], K = a[ta ? 0 : 1], N = b[tb ? 0 : 1];
      if (addmm) {
        const Shape bias = shape(0);  // broadcast as the app's matmul does (runtime_cpu.h's addmm)
        const bool per_row = bias.size() == 2 && bias[0] != 1, per_col = !bias.empty() && bias.back() != 1;
        os << "    lsrt::addmm(" << out << ", " << in(0) << ", " << per_row << ", " << per_col << ", " << (bias.size() == 2 ? bias[1] : 0)
           << ", " << M << ", " << N << ", " << K << ", " << in(ia)
           << ", " << ta << ", " << in(ib) << ", " << tb << ", " << flt(c.args[4].number()) << ", " << flt(c.args[3].number())
           << cut << ");\n";
      } else {
        os << "    lsrt::sgemm(" << M << ", " << N << ", " << K << ", 1.f, " << in(0) << ", " << ta << ", " << in(1) << ", " << tb
           << ", 0.f, " << out << cut << ");\n";
      }
    } else if (is_attention_backward(c.op)) {
      const AttnGeom g = attn_geom(c);
      auto operand = [&](size_t arg) {
        const size_t i = static_cast<size_t>(c.args.at(arg).node);
        const AttnOperand a = attn_operand(c, i, c.shapes.at(i));
        return "{" + std::to_string(a.offset) + ", " + std::to_string(a.sb) + ", " + std::to_string(a.sh) + ", " +
               std::to_string(a.sl) + ", " + std::to_string(a.se) + "}";
      };
      os << "    lsrt::AttentionBackward{" << g.B << ", " << g.H << ", " << g.L << ", " << g.S << ", " << g.E << ", " << g.Ev
         << ", " << (g.causal ? "true" : "false") << ", " << flt(g.scale) << ", " << operand(0) << ", " << operand(1) << ", "
         << operand(2) << ", " << operand(3) << ", " << operand(5) << "}.run(" << in(0) << ", " << in(1) << ", " << in(2) << ", "
         << in(3) << ", " << in(5) << ", " << in(6) << ", " << ptr(c.outputs.at(0)) << ", " << ptr(c.outputs.at(1)) << ", "
         << ptr(c.outputs.at(2)) << ");\n";
    } else if (is_attention(c.op)) {
      const AttnGeom g = attn_geom(c);
      auto view = [](const AttnOperand& a) {
        return "{" + std::to_string(a.offset) + ", " + std::to_string(a.sb) + ", " + std::to_string(a.sh) + ", " +
               std::to_string(a.sl) + ", " + std::to_string(a.se) + "}";
      };
      auto operand = [&](size_t arg) {
        const size_t i = static_cast<size_t>(c.args.at(arg).node);
        return view(attn_operand(c, i, c.shapes.at(i)));
      };
      os << "    lsrt::Attention{" << g.B << ", " << g.H << ", " << g.L << ", " << g.S << ", " << g.E << ", " << g.Ev << ", "
         << (g.causal ? "true" : "false") << ", " << flt(g.scale) << ", " << operand(0) << ", " << operand(1) << ", "
         << operand(2) << ", " << view(attn_output(g, attention_output_heads_inner(c))) << "}.run(" << in(0) << ", " << in(1)
         << ", " << in(2) << ", " << out << ", " << (c.outputs.size() > 1 ? ptr(c.outputs[1]) : std::string("nullptr"))
         << ");\n";
    } else if (c.op == &op::convolution_backward()) {
      const Shape x = shape(1), w = shape(2), gy = shape(0);
      const auto st = spatial_pair(c.args[4]), pad = spatial_pair(c.args[5]), dil = spatial_pair(c.args[6]);
      const auto mask = c.args[10].list;
      auto grad = [&](size_t i) {  // output i when the mask wants it
        const bool wanted = i >= mask.size() || mask[i].b;
        return wanted && i < c.outputs.size() && !c.outputs[i].empty() ? ptr(c.outputs[i]) : std::string("nullptr");
      };
      os << "    lsrt::Conv{" << x[0] << ", " << x[1] << ", " << x[2] << ", " << x[3] << ", " << w[0] << ", " << w[1] << ", "
         << w[2] << ", " << w[3] << ", " << gy[2] << ", " << gy[3] << ", " << c.args[9].i << ", " << st[0] << ", " << st[1]
         << ", " << pad[0] << ", " << pad[1] << ", " << dil[0] << ", " << dil[1] << "}.backward(" << in(0) << ", " << in(1) << ", "
         << in(2) << ", " << grad(0) << ", " << grad(1) << ", " << grad(2) << ");\n";
    } else {  // convolution
      const Shape x = shape(0), w = shape(1), y = c.output_metas.at(0).shape;
      const auto st = spatial_pair(c.args[3]), pad = spatial_pair(c.args[4]), dil = spatial_pair(c.args[5]);
      os << "    lsrt::Conv{" << x[0] << ", " << x[1] << ", " << x[2] << ", " << x[3] << ", " << w[0] << ", " << w[1] << ", "
         << w[2] << ", " << w[3] << ", " << y[2] << ", " << y[3] << ", " << c.args[8].i << ", " << st[0] << ", " << st[1]
         << ", " << pad[0] << ", " << pad[1] << ", " << dil[0] << ", " << dil[1] << "}.run(" << in(0) << ", " << in(1) << ", "
         << (c.args[2].is_node() ? in(2) : std::string("nullptr")) << ", " << out << ");\n";
    }
    if (wide.empty() && !half_out) return os.str();
    if (half_out) os << "    lsrt::narrow_into(wy, " << var(c.outputs.at(0)) << ");\n";
    return "    {\n" + copies.str() + os.str() + "    }\n";  // the copies' scope
  }

  // Buffer variables in the order they were named (b0, b1, ...).
  std::vector<std::pair<std::string, std::string>> ordered_vars() const {
    std::vector<std::pair<std::string, std::string>> v(vars_.begin(), vars_.end());
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return std::stoi(a.second.substr(1)) < std::stoi(b.second.substr(1)); });
    return v;
  }

  // The runner's head: its includes and declarations, then main() up to its options (the package
  // folder, --repeat N).
  // Out-of-range indices (issue 32): the generated kernels record the first one (flag, value, size,
  // loop-IR node) in ls_index_fault_state and read element 0 instead; ls_index_put and ls_scatter
  // record theirs (flag, value, size, index tensor or dimension) in the buffer the call is given
  // and skip the element. The runner's first, checked run reads the record after each kernel and
  // stops with the app's message, naming the kernel, its node, the value and the size.
  bool may_fault() const { return r_.source.code.find("ls_index_fault(") != std::string::npos; }
  // The nodes the generated code names in its ls_index_fault calls, as the app's message names them.
  std::string fault_nodes() const {
    std::ostringstream os;
    static const std::regex call(R"(ls_index_fault\([^;]*,\s*(\d+)\);)");  // emitter.h's call: the node last, then ");"
    std::set<int64_t> seen;
    for (auto it = std::sregex_iterator(r_.source.code.begin(), r_.source.code.end(), call); it != std::sregex_iterator(); ++it) {
      const int64_t n = std::stoll((*it)[1]);
      if (n < 0 || n >= static_cast<int64_t>(r_.loops.nodes.size()) || !seen.insert(n).second) continue;
      os << (seen.size() > 1 ? ", " : "") << "{" << n << ", " << quoted(" (" + r_.loops.nodes[n].name + ", from node '" + r_.loops.nodes[n].graph_node + "')") << "}";
    }
    return "static const std::map<long long, std::string> fault_nodes = {" + os.str() + "};\n"
           "static std::string fault_node(long long n) {\n"
           "  const auto it = fault_nodes.find(n);\n"
           "  return it == fault_nodes.end() ? std::string() : it->second;\n"
           "}\n" +
           index_fault_function();
  }
  // The runner's words for a record, for the generated kernels' and the library calls' alike (a
  // CUDA runner whose only checked calls are ls_index_put's or ls_scatter's has it without fault_nodes).
  static std::string index_fault_function() {
    return "// A kernel's record of an index out of range (flag, value, size, ...): the error, as the app words it.\n"
           "static void index_fault(const long long f[4], const std::string& where, long long dim = -1) {\n"
           "  if (!f[0]) return;\n"
           "  throw std::out_of_range(where + \": index \" + std::to_string(f[1]) + \" is out of bounds for dimension\" +\n"
           "                          (dim >= 0 ? \" \" + std::to_string(dim) : std::string()) + \" with size \" + std::to_string(f[2]));\n"
           "}\n";
  }
  static std::string quoted(const std::string& t) {
    std::string q = "\"";
    for (char ch : t) q += ch == '"' || ch == '\\' ? std::string("\\") + ch : ch == '\n' ? std::string("\\n") : std::string(1, ch);
    return q + "\"";
  }

  static std::string main_head(const std::string& declarations, int repeat) {
    return "//   run_model [--repeat N] [PACKAGE_DIR]   reads PACKAGE_DIR/data, writes PACKAGE_DIR/outputs\n"
           "#include \"runtime.h\"\n\n" + declarations + "\nint main(int argc, char** argv) try {\n"
           "  std::string dir = PACKAGE_DIR;\n  int repeat = " + std::to_string(repeat) + ";\n"
           "  for (int i = 1; i < argc; ++i) {\n"
           "    const std::string a = argv[i];\n"
           "    if (a == \"--repeat\" && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));\n"
           "    else dir = a;\n  }\n";
  }

  // The runner's tail: each output written to outputs/, printed and checked against expected/.
  // `host`: the prefix of the host buffer's variable ("h" where the buffer lives on the GPU, then
  // downloaded first).
  std::string write_outputs(const std::string& host, bool download) {
    std::ostringstream os;
    os << "  std::system((\"mkdir -p '\" + dir + \"/outputs'\").c_str());\n"
       << "  bool ok = true;\n";
    for (size_t i = 0; i < r_.loops.outputs.size(); ++i) {
      const std::string& o = r_.loops.outputs[i];
      if (o.empty()) continue;
      const std::string d = var(o), v = host + d, n = std::to_string(i);
      os << "  {\n";
      if (download) os << "    gpu.download(" << v << ", " << d << ");\n";
      os << "    lsrt::save_npy(dir + \"/outputs/out" << n << ".npy\", " << v << ");\n"
         << "    std::printf(\"out" << n << " %s " << npy_dtype(r_.loops.buffer(o).dtype) << ":\", lsrt::shape_text(" << v
         << ".shape).c_str());\n";
      if (r_.loops.buffer(o).dtype == DType::f32)
        os << "    for (int64_t k = 0; k < std::min<int64_t>(" << v << ".numel(), 6); ++k) std::printf(\" %.6g\", " << v
           << ".f32()[k]);\n";
      os << "    std::printf(\"\\n\");\n"
         << "    const std::string want = dir + \"/expected/out" << n << ".npy\";\n"
         << "    if (std::ifstream(want)) {\n      double err = 0;\n"
         << "      const bool same = lsrt::check_against(want, " << v << ", err);\n"
         << "      std::printf(\"  vs expected/out" << n << ".npy: max abs err %.3g %s\\n\", err, same ? \"ok\" : \"MISMATCH\");\n"
         << "      ok = ok && same;\n    }\n  }\n";
    }
    os << "  return ok ? 0 : 1;\n} catch (const std::exception& e) {\n  std::fprintf(stderr, \"run_model: %s\\n\", e.what());\n"
       << "  return 2;\n}\n";
    return os.str();
  }

  std::string model_cpp() {
    std::ostringstream body, decl;
    for (size_t k = 0; k < r_.schedule.kernels.size(); ++k) {
      const Kernel& kr = r_.schedule.kernels[k];
      const GeneratedKernel& g = r_.source.kernels.at(k);
      if (kr.is_extern && !g.launcher.empty()) {  // max-autotune wrote it as a GEMM template (kernels.cpp)
        decl << "extern \"C\" void " << g.launcher << "(const float*, const float*, const float*, float*, "
             << "void (*)(void**, int64_t, int64_t) noexcept, void**);\n";
        body << template_call(kr, g);
        continue;
      }
      if (kr.is_extern) {
        body << extern_call(kr);
        continue;
      }
      decl << "extern \"C\" void " << g.launcher << "(void** args);\n";
      body << "    { void* a[] = {";
      for (size_t i = 0; i < g.args.size(); ++i) body << (i ? ", " : "") << var(g.args[i]) << ".data()";
      if (!r_.dynamic.symbols.empty()) body << (g.args.empty() ? "" : ", ") << "sizes";  // a dynamic compile's size symbols, last
      body << "}; " << g.launcher << "(a); }\n";
      if (may_fault())
        body << "    if (ls_index_fault_state[0]) { const long long f[4] = {ls_index_fault_state[0], ls_index_fault_state[1], "
                "ls_index_fault_state[2], ls_index_fault_state[3]}; ls_index_fault_state[0] = 0; index_fault(f, \"kernel "
             << g.name << "\" + fault_node(f[3])); }\n";
    }
    if (may_fault()) decl << "extern \"C\" int64_t ls_index_fault_state[4];  // kernels.cpp's (cpu_prelude.h)\n" << fault_nodes();
    for (const auto& in : r_.loops.inputs) var(in);
    for (const auto& o : r_.loops.outputs)
      if (!o.empty()) var(o);
    std::ostringstream os;
    os << "// Generated by Lowerscope from " << r_.model.path << " (" << r_.compiler << "):\n"
       << "// the model's kernels (kernels.cpp) and library calls (runtime.h) in schedule order.\n"
       << main_head(decl.str(), 20);
    for (const auto& [buffer, v] : ordered_vars()) {
      const LoopBuffer& b = r_.loops.buffer(buffer);
      os << "  lsrt::Buffer " << v << "(\"" << buffer << "\", \"" << npy_dtype(b.dtype) << "\", " << dims(b.shape) << ");\n";
    }
    for (const auto& in : r_.loops.inputs) os << "  lsrt::load_npy(dir + \"/data/" << in << ".npy\", " << var(in) << ");\n";
    if (!r_.dynamic.symbols.empty()) {  // the kernels were compiled with dynamic shapes: the sizes they run at
      os << "  int64_t sizes[] = {";
      const std::vector<int64_t> v = r_.dynamic.values_of(r_.dynamic.traced, nullptr);
      for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
      os << (v.empty() ? "0" : "") << "};\n";
    }
    os << "  auto run = [&] {\n" << body.str() << "  };\n"
       << "  run();\n"
       << "  std::vector<double> times;\n"
       << "  for (int i = 0; i < repeat; ++i) {\n"
       << "    const auto t0 = std::chrono::steady_clock::now();\n    run();\n    times.push_back(lsrt::ms_since(t0));\n  }\n"
       << "  std::sort(times.begin(), times.end());\n"
       << "  std::printf(\"run: %.4f ms (median of %d)\\n\", times[times.size() / 2], repeat);\n"
       << write_outputs("", false);
    return os.str();
  }

  // ---- CUDA packages: the runner calls the same kernels and library calls as the app's CUDA
  // executor (exec/cuda_executor.cpp), with every size written out.

  std::string dev(const std::string& buffer) { return var(buffer); }

  static const char* tf(bool b) { return b ? "true" : "false"; }

  static std::string view(const AttnOperand& a) {
    return "lsrt::View{" + std::to_string(a.offset) + ", " + std::to_string(a.sb) + ", " + std::to_string(a.sh) + ", " +
           std::to_string(a.sl) + ", " + std::to_string(a.se) + "}";
  }

  // One library call on the GPU: what runs it each time (returned), and the object holding its
  // geometry and scratch memory, declared once before the runs (`setup`).
  std::string cuda_extern(const Kernel& k, std::ostringstream& setup) {
    const LoopNode& node = r_.loops.nodes.at(k.nodes.at(0));
    const ExternCall& c = node.ext;
    const std::string name = c.op->name, how = cuda_extern_how(r_.loops, c, true), obj = "x_" + k.name;
    std::ostringstream os;
    os << "    // " << k.name << ": " << name << " (" << how << ")\n";
    auto in = [&](size_t arg) { return dev(c.inputs.at(static_cast<size_t>(c.args.at(arg).node))); };
    auto shape = [&](size_t arg) {
      const size_t i = static_cast<size_t>(c.args.at(arg).node);
      return i < c.shapes.size() ? c.shapes[i] : r_.loops.buffer(c.inputs.at(i)).shape;
    };
    auto out = [&](size_t i) { return i < c.outputs.size() && !c.outputs[i].empty() ? dev(c.outputs[i]) : std::string("0"); };
    auto attn_in = [&](size_t arg) {
      const size_t i = static_cast<size_t>(c.args.at(arg).node);
      return dev(c.inputs.at(i)) + ", " + view(attn_operand(c, i, c.shapes.at(i)));
    };
    // max-autotune's cuBLASLt algorithm for this product, where it chose one: its words, declared
    // once; the runtime checks that it runs on the GPU it finds, else takes the heuristic's.
    std::string algo = "nullptr";
    MatmulAlgorithm chosen;
    if (const auto it = r_.cuda.matmul_algorithms.find(k.name); how == "cuBLAS" && it != r_.cuda.matmul_algorithms.end() &&
                                                                MatmulAlgorithm::parse(it->second, chosen)) {
      algo = "algo_" + k.name;
      setup << "  // " << k.name << ": max-autotune's cuBLASLt algorithm: " << chosen.text << "\n"
            << "  static const unsigned long long " << algo << "[8] = {";
      for (size_t i = 0; i < 8; ++i) setup << (i ? ", " : "") << "0x" << std::hex << chosen.data[i] << std::dec << "ull";
      setup << "};\n";
      os << "    // max-autotune chose cuBLASLt's " << chosen.text << "\n";
    }
    // mm and bmm: through cuBLASLt with the tuned algorithm where there is one, else cuBLAS.
    auto product = [&](int64_t B, int64_t M, int64_t N, int64_t K, bool ta, bool tb, size_t ia, size_t ib) {
      const std::string sgemm = "gpu.sgemm(" + std::to_string(B) + ", " + std::to_string(M) + ", " + std::to_string(N) + ", " +
                                std::to_string(K) + ", 1.f, " + in(ia) + ", " + (ta ? "1" : "0") + ", " + std::to_string(B > 1 ? M * K : 0) +
                                ", " + in(ib) + ", " + (tb ? "1" : "0") + ", " + std::to_string(B > 1 ? K * N : 0) + ", 0.f, " + out(0) +
                                ", " + std::to_string(B > 1 ? M * N : 0) + ");";
      if (algo == "nullptr") {
        os << "    " << sgemm << "\n";
        return;
      }
      os << "    if (!gpu.gemm_lt(" << B << ", " << M << ", " << N << ", " << K << ", " << tf(ta) << ", " << tf(tb) << ", " << M * K << ", "
         << K * N << ", " << M * N << ", 1.f, " << in(ia) << ", " << in(ib) << ", 0, " << out(0) << ", " << algo << ", \"" << k.name << "\")) " << sgemm << "\n";
    };
    // bf16/f16 products: cuBLASLt only, as the app's executor runs them (mm, bmm, and addmm whose
    // bias is an unscaled row, in cuBLASLt's bias epilogue), with max-autotune's algorithm where it
    // chose one.
    if (how.rfind("cuBLASLt (", 0) == 0) {
      const DType t = r_.loops.buffer(c.outputs.at(0)).dtype;
      const std::string type = t == DType::bf16 ? "CUDA_R_16BF" : t == DType::f16 ? "CUDA_R_16F" : "";
      if (type.empty()) throw std::runtime_error(k.name + ": the package runtime has no " + std::string(dtype_torch(t)) + " product");
      const bool bmm = c.op == &op::bmm(), addmm = c.op == &op::addmm();
      const size_t ia = addmm ? 1 : 0, ib = addmm ? 2 : 1;
      const bool ta = transposed_operand(c, ia), tb = transposed_operand(c, ib);
      const Shape a = shape(ia), b = shape(ib);
      const int64_t B = bmm ? a[0] : 1, M = a[bmm ? (ta ? 2 : 1) : (ta ? 1 : 0)], K = a[bmm ? (ta ? 1 : 2) : (ta ? 0 : 1)],
                    N = b[bmm ? (tb ? 1 : 2) : (tb ? 0 : 1)];
      std::string bias = "0";
      float alpha = 1.f;
      if (addmm) {
        const Shape bs = shape(0);
        const bool row_vector = bs.size() == 1 ? bs[0] == N : bs.size() == 2 && bs[0] == 1 && bs[1] == N;
        if (!row_vector || c.args[3].number() != 1.0)
          throw std::runtime_error(k.name + ": the package runtime has no half addmm whose bias is not an unscaled row (node " + node.graph_node + ")");
        bias = in(0);
        alpha = static_cast<float>(c.args[4].number());
      }
      std::string chosen_algo = "nullptr";
      if (const auto it = r_.cuda.matmul_algorithms.find(k.name); it != r_.cuda.matmul_algorithms.end() && MatmulAlgorithm::parse(it->second, chosen)) {
        chosen_algo = "algo_" + k.name;
        setup << "  // " << k.name << ": max-autotune's cuBLASLt algorithm: " << chosen.text << "\n"
              << "  static const unsigned long long " << chosen_algo << "[8] = {";
        for (size_t i = 0; i < 8; ++i) setup << (i ? ", " : "") << "0x" << std::hex << chosen.data[i] << std::dec << "ull";
        setup << "};\n";
      }
      os << "    if (!gpu.gemm_lt(" << B << ", " << M << ", " << N << ", " << K << ", " << tf(ta) << ", " << tf(tb) << ", " << M * K << ", "
         << K * N << ", " << M * N << ", " << flt(alpha) << ", " << in(ia) << ", " << in(ib) << ", " << bias << ", " << out(0) << ", "
         << chosen_algo << ", \"" << k.name << "\", " << type << "))\n"
         << "      throw std::runtime_error(\"" << k.name << ": cuBLASLt has no algorithm for this " << dtype_short(t) << " product\");\n";
    } else if (how == "cuBLAS" && c.op == &op::bmm()) {
      const bool ta = transposed_operand(c, 0), tb = transposed_operand(c, 1);
      const Shape a = shape(0), b = shape(1);
      const int64_t B = a[0], M = a[ta ? 2 : 1], K = a[ta ? 1 : 2], N = b[tb ? 1 : 2];
      product(B, M, N, K, ta, tb, 0, 1);
    } else if (how == "cuBLAS") {
      const bool addmm = c.op == &op::addmm();
      const size_t ia = addmm ? 1 : 0, ib = addmm ? 2 : 1;
      const bool ta = transposed_operand(c, ia), tb = transposed_operand(c, ib);
      const Shape a = shape(ia), b = shape(ib);
      const int64_t M = a[ta ? 1 : 0], K = a[ta ? 0 : 1], N = b[tb ? 0 : 1];
      if (!addmm) {
        product(1, M, N, K, ta, tb, 0, 1);
      } else {
        const Shape bias = shape(0);
        const bool row_vector = bias.size() == 1 ? bias[0] == N : bias.size() == 2 && bias[0] == 1 && bias[1] == N;
        setup << "  const lsrt::Addmm " << obj << "{" << M << ", " << N << ", " << K << ", " << tf(ta) << ", " << tf(tb) << ", "
              << (bias.size() == 2 && bias[0] != 1) << ", " << (!bias.empty() && bias.back() != 1) << ", "
              << (bias.size() == 2 ? bias[1] : 0) << ", " << tf(row_vector) << ", " << flt(c.args[4].number()) << ", "
              << flt(c.args[3].number()) << ", " << algo << ", \"" << k.name << "\"};\n";
        os << "    " << obj << ".run(gpu, " << out(0) << ", " << in(0) << ", " << in(ia) << ", " << in(ib) << ");\n";
      }
    } else if (const std::string conv_how = how.substr(0, how.find(" on float32 copies of "));
               conv_how == "depthwise kernel" || conv_how == "im2col + cuBLAS" || conv_how == "im2col + cuBLAS + col2im" ||
               conv_how == "depthwise backward kernels" || conv_how.rfind("grouped convolution", 0) == 0 || conv_how.rfind("cuBLAS (", 0) == 0) {
      const bool backward = c.op == &op::convolution_backward();
      // A half convolution: the float32 call on float32 copies (Conv::run_half, backward_half).
      const std::string half = conv_how == how ? "" : "_half";
      const std::string half_arg = conv_how == how ? "" : how.find("bf16") != std::string::npos ? ", true" : ", false";
      const lsrt::cuda::Conv v = cuda_conv(r_.loops, c);  // as the app's executor makes the call
      setup << "  lsrt::Conv " << obj << "{" << v.N << ", " << v.C << ", " << v.H << ", " << v.W << ", " << v.O << ", " << v.CG << ", "
            << v.KH << ", " << v.KW << ", " << v.OH << ", " << v.OW << ", " << v.G << ", " << v.sh << ", " << v.sw << ", " << v.ph << ", "
            << v.pw << ", " << v.dh << ", " << v.dw << ", " << tf(v.depthwise) << "};\n";
      if (!backward) {
        os << "    " << obj << ".run" << half << "(gpu, " << in(0) << ", " << in(1) << ", " << (c.args[2].is_node() ? in(2) : "0") << ", "
           << out(0) << half_arg << ");\n";
      } else {
        const auto mask = c.args[10].list;
        auto grad = [&](size_t i) {
          const bool wanted = i >= mask.size() || mask[i].b;
          return wanted && i < c.outputs.size() && !c.outputs[i].empty() && r_.loops.buffer(c.outputs[i]).bytes() > 0 ? out(i)
                                                                                                                      : "0";
        };
        os << "    " << obj << ".backward" << half << "(gpu, " << in(0) << ", " << in(1) << ", " << in(2) << ", " << grad(0) << ", "
           << grad(1) << ", " << grad(2) << half_arg << ");\n";
      }
    } else if (how == "pool kernel") {
      const lsrt::cuda::MaxPool v = cuda_max_pool(r_.loops, c);
      setup << "  const lsrt::MaxPool " << obj << "{" << v.planes << ", " << v.H << ", " << v.W << ", " << v.OH << ", " << v.OW << ", " << v.KH
            << ", " << v.KW << ", " << v.sh << ", " << v.sw << ", " << v.ph << ", " << v.pw << ", " << v.dh << ", " << v.dw << "};\n";
      os << "    " << obj << ".run(gpu, " << in(0) << ", " << out(0) << ", " << out(1) << ");\n";
    } else if (how == "device copies") {
      const Shape& ys = r_.loops.buffer(c.outputs.at(0)).shape;
      int64_t dim = c.args[1].i;
      if (dim < 0) dim += static_cast<int64_t>(ys.size());
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < dim; ++d) outer *= ys[d];
      for (int64_t d = dim + 1; d < static_cast<int64_t>(ys.size()); ++d) inner *= ys[d];
      int64_t at = 0;
      for (const Arg& a : c.args[0].list) {
        const LoopBuffer& b = r_.loops.buffer(c.inputs.at(static_cast<size_t>(a.node)));
        const int64_t src_row = numel_of(b.shape) / std::max<int64_t>(outer, 1);
        if (src_row == 0) continue;
        os << "    lsrt::copy_rows(gpu, " << out(0) << ", " << dev(b.name) << ", " << outer << ", " << src_row << ", " << ys[dim] * inner
           << ", " << at << ");\n";
        at += src_row;
      }
    } else if (how == "index_put kernel") {
      const lsrt::cuda::IndexPut v = *cuda_index_put(r_.loops, c);  // as the app's executor makes the call
      const lsrt::cuda::IndexPutPlan& d = v.d;
      setup << "  const lsrt::IndexPut " << obj << "{{" << braced(d.shape, 8) << ", " << braced(d.out_stride, 8) << ", " << braced(d.val_stride, 8)
            << ", {" << braced(d.idx_stride[0], 8) << ", " << braced(d.idx_stride[1], 8) << ", " << braced(d.idx_stride[2], 8) << ", "
            << braced(d.idx_stride[3], 8) << "}, " << braced(d.dim_stride, 4) << ", " << braced(d.dim_size, 4) << ", " << d.rank << ", " << d.nidx
            << ", {" << d.idx64[0] << ", " << d.idx64[1] << ", " << d.idx64[2] << ", " << d.idx64[3] << "}}, " << v.total << ", "
            << v.self_words << ", " << v.code << ", " << tf(v.accumulate) << "};\n";
      std::string idx;
      for (const Arg& a : c.args[1].list)
        if (a.is_node()) idx += (idx.empty() ? "" : ", ") + dev(c.inputs.at(static_cast<size_t>(a.node)));
      std::vector<int64_t> dims;
      cuda_index_put(r_.loops, c, &dims);
      std::string dl;
      for (int64_t d : dims) dl += (dl.empty() ? "" : ", ") + std::to_string(d);
      os << "    { const lsrt::cuda::DevPtr idx[4] = {" << idx << "}; " << obj << ".run(gpu, " << in(0) << ", idx, " << in(2) << ", " << out(0)
         << ", call_faults); }\n"
         << "    if (checked) { long long f[4]; lsrt::cu_check(cuMemcpyDtoH(f, call_faults, sizeof f), \"the index record\"); const long long dims[] = {"
         << (dl.empty() ? "-1" : dl) << "}; index_fault(f, " << quoted("kernel " + k.name + " (" + node.name + ", from node '" + node.graph_node + "')")
         << ", f[3] >= 0 && f[3] < " << std::max<size_t>(dims.size(), 1) << " ? dims[f[3]] : f[3]); }\n";
    } else if (how == "scatter kernel") {
      const lsrt::cuda::Scatter v = *cuda_scatter(r_.loops, c);
      setup << "  const lsrt::Scatter " << obj << "{{" << braced(v.d.shape, 8) << ", " << braced(v.d.src_stride, 8) << ", "
            << braced(v.d.out_stride, 8) << ", " << v.d.rank << ", " << v.d.dim << ", " << v.d.dim_size << "}, " << v.total << ", "
            << v.self_words << ", " << v.code << ", " << v.mode << ", " << dbl(v.value) << "};\n";
      os << "    " << obj << ".run(gpu, " << in(0) << ", " << in(2) << ", " << (c.args[3].is_node() ? in(3) : "0") << ", " << out(0)
         << ", call_faults);\n"
         << "    if (checked) { long long f[4]; lsrt::cu_check(cuMemcpyDtoH(f, call_faults, sizeof f), \"the index record\"); index_fault(f, "
         << quoted("kernel " + k.name + " (" + node.name + ", from node '" + node.graph_node + "')") << ", f[3]); }\n";
    } else if (how == "sort kernel") {
      const lsrt::cuda::SortLines v = *cuda_sort(r_.loops, c);
      setup << "  const lsrt::SortLines " << obj << "{" << v.outer << ", " << v.n << ", " << v.inner << ", " << v.k << ", " << v.code << ", "
            << v.descending << "};\n";
      os << "    " << obj << ".run(gpu, " << in(0) << ", " << out(0) << ", " << out(1) << ");\n";
    } else if (how == "cumsum kernel") {
      const lsrt::cuda::Cumsum v = *cuda_cumsum(r_.loops, c);
      setup << "  const lsrt::Cumsum " << obj << "{" << v.outer << ", " << v.n << ", " << v.inner << ", " << v.xcode << ", " << v.ycode << "};\n";
      os << "    " << obj << ".run(gpu, " << in(0) << ", " << out(0) << ");\n";
    } else if (how == "attention kernel" || how == "flash attention kernel" || how == "attention (cuBLAS)") {
      const AttnGeom g = attn_geom(c);
      const std::string path = how == "attention kernel" ? "fused" : how == "flash attention kernel" ? "tiled" : "cublas";
      setup << "  lsrt::Attention " << obj << "{" << g.B << ", " << g.H << ", " << g.L << ", " << g.S << ", " << g.E << ", " << g.Ev
            << ", " << (g.causal ? "true" : "false") << ", " << flt(g.scale) << ", lsrt::Attention::" << path << "};\n";
      if (is_attention_backward(c.op))
        os << "    " << obj << ".backward(gpu, " << attn_in(0) << ", " << attn_in(1) << ", " << attn_in(2) << ", " << attn_in(3) << ", "
           << attn_in(5) << ", " << in(6) << ", " << out(0) << ", " << out(1) << ", " << out(2) << ");\n";
      else
        os << "    " << obj << ".forward(gpu, " << attn_in(0) << ", " << attn_in(1) << ", " << attn_in(2) << ", " << out(0) << ", "
           << view(attn_output(g, attention_output_heads_inner(c))) << ", " << out(1) << ");\n";
    } else {
      throw std::runtime_error("the CUDA package runtime has no " + name + " (kernel " + k.name + ", node " + node.graph_node + ")");
    }
    return os.str();
  }

  std::string cuda_model_cpp() {
    std::ostringstream body, setup, functions;
    const std::vector<int64_t> sizes =
        r_.dynamic.symbols.empty() ? std::vector<int64_t>{} : r_.dynamic.values_of(r_.dynamic.traced, nullptr);
    for (size_t k = 0; k < r_.schedule.kernels.size(); ++k) {
      const Kernel& kr = r_.schedule.kernels[k];
      const GeneratedKernel& g = r_.source.kernels.at(k);
      if (g.in_template) {
        body << "    // " << kr.name << ": runs inside the GEMM template before it\n";
        continue;
      }
      if (kr.is_extern && g.launcher.empty()) {
        body << cuda_extern(kr, setup);
      } else {
        const CudaLaunch& l = r_.cuda.launch.at(k);
        if (const auto t = r_.cuda.gemm_templates.find(kr.name); t != r_.cuda.gemm_templates.end())
          body << "    // " << kr.name << ": " << r_.loops.nodes.at(kr.nodes.at(0)).ext.op->name << " as max-autotune's GEMM template ("
               << t->second.text() << ")\n";
        functions << "  CUfunction f_" << g.name << " = gpu.function(kernels, \"" << g.launcher << "\");\n";
        std::string args;
        for (const auto& a : g.args) args += (args.empty() ? "&" : ", &") + dev(a);
        if (l.scratch_bytes) {  // a split reduction's partials and counters: zeroed once, the kernel leaves them zero
          setup << "  CUdeviceptr s_" << g.name << " = gpu.alloc(" << l.scratch_bytes << ");\n  gpu.zero(s_" << g.name << ", "
                << l.scratch_bytes << ");\n";
          args += ", &s_" + g.name;
        }
        for (size_t i = 0; i < sizes.size(); ++i) args += ", &size" + std::to_string(i);
        body << "    { void* a[] = {" << args << "}; gpu.launch(f_" << g.name << ", " << l.grid << ", " << l.block << ", a, \"" << g.name
             << "\"); }\n";
        if (may_fault())
          body << "    if (checked && fault_state) { long long f[4]; lsrt::cu_check(cuMemcpyDtoH(f, fault_state, sizeof f), \"the index record\"); "
                  "if (f[0]) { gpu.zero(fault_state, sizeof f); index_fault(f, \"kernel "
               << g.name << "\" + fault_node(f[3])); } }\n";
      }
      body << "    if (checked) gpu.sync(\"" << kr.name << " (" << (kr.is_extern ? r_.loops.nodes.at(kr.nodes.at(0)).ext.op->name : "generated")
           << ")\");\n";
    }
    for (const auto& in : r_.loops.inputs) var(in);
    for (const auto& o : r_.loops.outputs)
      if (!o.empty()) var(o);
    std::ostringstream os;
    os << "// Generated by Lowerscope from " << r_.model.path << " (" << r_.compiler << "):\n"
       << "// the model's kernels (kernels.cu, as kernels.ptx or kernels.cubin) and library calls (runtime.h) in\n"
       << "// schedule order, on the GPU.\n"
       << main_head(may_fault() ? fault_nodes() : body.str().find("index_fault(") != std::string::npos ? index_fault_function() : "", 100)
       << "  const auto t_load = std::chrono::steady_clock::now();\n"
       << "  lsrt::Gpu gpu;\n"
       << "  CUmodule kernels = gpu.load(dir, \"kernels\");\n  gpu.load_helpers(dir);\n"
       << "  CUdeviceptr call_faults = gpu.alloc(4 * sizeof(long long));  // ls_index_put's and ls_scatter's record of a bad index\n"
       << "  gpu.zero(call_faults, 4 * sizeof(long long));\n"
       << (may_fault() ? "  CUdeviceptr fault_state = 0;  // the generated kernels' record (cuda_prelude.h)\n"
                         "  size_t fault_bytes = 0;\n"
                         "  if (cuModuleGetGlobal(&fault_state, &fault_bytes, kernels, \"ls_index_fault_state\") == CUDA_SUCCESS) gpu.zero(fault_state, fault_bytes);\n"
                       : "")
       << (r_.cuda.attention_source.empty() ? "" : "  gpu.load_attention(dir);\n") << functions.str();
    std::set<std::string> host(r_.loops.inputs.begin(), r_.loops.inputs.end());
    for (const auto& o : r_.loops.outputs)
      if (!o.empty()) host.insert(o);
    for (const auto& [buffer, v] : ordered_vars()) {
      const LoopBuffer& b = r_.loops.buffer(buffer);
      os << "  CUdeviceptr " << v << " = gpu.alloc(" << b.bytes() << ");  // " << buffer << "\n";
      if (host.count(buffer))
        os << "  lsrt::Buffer h" << v << "(\"" << buffer << "\", \"" << npy_dtype(b.dtype) << "\", " << dims(b.shape) << ");\n";
    }
    for (size_t i = 0; i < sizes.size(); ++i) os << "  long long size" << i << " = " << sizes[i] << ";  // s" << i << "\n";
    for (const auto& in : r_.loops.inputs)
      os << "  lsrt::load_npy(dir + \"/data/" << in << ".npy\", h" << var(in) << ");\n  gpu.upload(" << var(in) << ", h" << var(in) << ");\n";
    os << setup.str() << "  auto run = [&](bool checked) {\n" << body.str() << "  };\n"
       << "  run(true);  // synchronized after every kernel: a fault names its kernel\n"
       << "  std::string modules;\n  for (const auto& m : gpu.loaded) modules += \" \" + m;\n"
       << "  std::printf(\"%s (sm_%d): loaded%s, first run in %.1f ms\\n\", gpu.name.c_str(), gpu.sm, modules.c_str(), lsrt::ms_since(t_load));\n"
       << "  const double ms = lsrt::median_ms(repeat, [&] { run(false); });\n"
       << "  std::printf(\"run: %.4f ms (median of %d, CUDA events)\\n\", ms, repeat);\n"
       << write_outputs("h", true);
    return os.str();
  }

  std::string cuda_cmake() const {
    return R"(# Builds the model Lowerscope exported for CUDA: the runner and its runtime. The kernels are
# loaded at run time from kernels.cubin (when it was built for this GPU) or kernels.ptx, which the
# driver compiles; likewise helpers.* and attention.*. Needs a C++17 compiler and the CUDA
# toolkit (driver API, cuBLAS, cuBLASLt); running needs a GPU.
cmake_minimum_required(VERSION 3.17)
project(lowerscope_model CXX)
set(CMAKE_CXX_STANDARD 17)
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release)
endif()
find_package(CUDAToolkit REQUIRED)
add_executable(run_model model.cpp)
target_compile_definitions(run_model PRIVATE PACKAGE_DIR="${CMAKE_CURRENT_SOURCE_DIR}")
target_link_libraries(run_model PRIVATE CUDA::cuda_driver CUDA::cublas CUDA::cublasLt)
)";
  }

  std::string cmake() const {
    return R"(# Builds the model Lowerscope exported: the generated kernels, the runner and its runtime.
# Needs a C++17 compiler with OpenMP and a CBLAS (Debian: build-essential libopenblas-dev).
cmake_minimum_required(VERSION 3.16)
project(lowerscope_model CXX)
set(CMAKE_CXX_STANDARD 17)
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release)
endif()
find_package(OpenMP REQUIRED)
find_library(OPENBLAS_LIB NAMES openblas REQUIRED)
find_path(CBLAS_INCLUDE cblas.h PATHS /usr/include/x86_64-linux-gnu /usr/include/openblas REQUIRED)
add_executable(run_model model.cpp kernels.cpp)
target_include_directories(run_model PRIVATE ${CBLAS_INCLUDE})
# The flags Lowerscope compiled the kernels with (sinf and cosf not builtins: GCC would merge a sin
# and a cos of one value into a scalar sincosf instead of two vector calls).
target_compile_options(run_model PRIVATE -O3 -march=native -fno-math-errno -fno-trapping-math -fno-builtin-sinf -fno-builtin-cosf)
target_compile_definitions(run_model PRIVATE PACKAGE_DIR="${CMAKE_CURRENT_SOURCE_DIR}")
target_link_libraries(run_model PRIVATE OpenMP::OpenMP_CXX ${OPENBLAS_LIB} m)
# glibc's vector math (the kernels' vectorised sin, exp, ...), where the C library has it.
find_library(MVEC_LIB NAMES mvec)
if(MVEC_LIB)
  target_link_libraries(run_model PRIVATE ${MVEC_LIB})
endif()
)";
  }

  std::string readme() const {
    std::ostringstream os;
    os << "# " << r_.model.path << ", compiled by Lowerscope" << (cuda() ? " for CUDA" : "") << "\n\n"
       << "Built and run without Lowerscope" << (cuda() ? " (the CUDA toolkit to build, a GPU to run)" : "")
       << ":\n\n    cmake -S . -B build && cmake --build build && build/run_model\n\n";
    if (cuda()) {
      os << "- `kernels.cu`: the generated kernels (CUDA C++), as Lowerscope compiled them with " << r_.compiler
         << "; `kernels.ptx` their PTX" << (has("kernels.cubin") ? ", `kernels.cubin` the machine code for that GPU" : "")
         << " (the runner loads the cubin where it fits the GPU, else the PTX, which the driver compiles);\n"
         << "- `helpers.cu`" << (r_.cuda.attention_source.empty() ? "" : ", `attention.cu`")
         << ": the runtime's kernels the library calls use (im2col, col2im, bias, pooling"
         << (r_.cuda.attention_source.empty() ? "" : "; the attention kernels") << "), with their PTX;\n"
         << "- `model.cpp`: the runner, launching the kernels and the library calls in schedule order;\n"
         << "- `runtime_cuda.h`: convolution, pooling, concatenation and attention as Lowerscope makes them, from the very source "
            "it runs them from; `runtime.h`, `buffers.h`: the GPU through the driver API, matrix multiply (cuBLAS, cuBLASLt), "
            "host buffers and .npy files;\n";
      for (const auto& [kernel, line] : r_.cuda.matmul_algorithms) {
        MatmulAlgorithm a;
        if (MatmulAlgorithm::parse(line, a))
          os << "- `" << kernel << "`: max-autotune's cuBLASLt algorithm (" << a.text << "), written into `model.cpp`; the runner "
             << "checks that it runs on the GPU it finds, else cuBLASLt's heuristic chooses;\n";
      }
    } else {
      os << "- `kernels.cpp`: the generated kernels (C++/OpenMP), as Lowerscope compiled them";
      for (const auto& [name, bytes] : r_.objects) os << " (its object: `" << name << "`)";
      os << ";\n- `model.cpp`: the runner, calling them and the library calls in schedule order;\n"
         << "- `runtime_cpu.h`: matrix multiply, convolution and attention, the very source Lowerscope runs them from; "
            "`runtime.h`, `buffers.h`: what they run on here (OpenMP's threads, CBLAS), buffers and .npy files;\n";
    }
    os << "- `data/`: the model's inputs and weights, one .npy per buffer (user inputs: ";
    std::string users;
    for (const auto& in : r_.loops.inputs)
      if (!lowered().weights.count(in)) users += (users.empty() ? "" : ", ") + in;
    os << (users.empty() ? "none" : users) << "; replace them to run on other inputs);\n"
       << "- `expected/`: the outputs PyTorch computed, when the model came with them; the runner checks against them.\n\n";
    if (r_.train)
      os << "A training step: the inputs include the tangents (ones for the first output: the gradient of its sum); the\n"
         << "outputs are the forward outputs, then the gradients (`expected/` holds PyTorch's for the model's inputs)"
         << (r_.training.num_updates > 0 ? ", then the parameters after the optimizer's step" : "") << ".\n\n";
    os << "`run_model [--repeat N] [DIR]` writes `outputs/out<N>.npy`, prints them and the median time"
       << (cuda() ? " (CUDA events around whole runs)" : "") << ".\n";
    return os.str();
  }

  const CompileResult& r_;
  std::string dir_;
  Package pkg_;
  std::map<std::string, std::string> vars_;  // buffer -> variable
};

}  // namespace

Package export_package(const CompileResult& r, const std::string& dir) { return Writer(r, dir).run(); }

}  // namespace ls
