#include "codegen/cuda_gemm_template.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "ops/known_ops.h"
#include "ops/op_table.h"

extern const char kCudaGemmHalf[];

namespace ls {
namespace {

bool is_half(DType t) { return t == DType::bf16 || t == DType::f16; }

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

std::optional<CudaGemmProblem> cuda_gemm_problem(const LoopProgram& p, const Schedule& s, size_t k) {
  const Kernel& kr = s.kernels.at(k);
  if (!kr.is_extern) return std::nullopt;
  const ExternCall& c = p.nodes.at(kr.nodes.at(0)).ext;
  if (!op::is_gemm(c.op) || c.outputs.size() != 1) return std::nullopt;
  const bool addmm = c.op == &op::addmm();
  const size_t ia = addmm ? 1 : 0, ib = addmm ? 2 : 1;
  auto input = [&](size_t arg) { return static_cast<size_t>(c.args.at(arg).node); };
  auto shape = [&](size_t arg) { return input(arg) < c.shapes.size() ? c.shapes[input(arg)] : p.buffer(c.inputs.at(input(arg))).shape; };
  auto plain = [&](size_t arg) {  // the whole buffer, read in place from its start
    const size_t i = input(arg);
    return (i >= c.strides.size() || c.strides[i].empty()) && (i >= c.offsets.size() || c.offsets[i] == 0);
  };
  // Every operand float32 (the SIMT template), or every one bfloat16 / float16 (the tensor cores').
  const DType t = p.buffer(c.outputs[0]).dtype;
  if (t != DType::f32 && !is_half(t)) return std::nullopt;
  for (size_t arg : {ia, ib})
    if (!c.args.at(arg).is_node() || !plain(arg) || shape(arg).size() != 2 || p.buffer(c.inputs.at(input(arg))).dtype != t) return std::nullopt;
  CudaGemmProblem g;
  g.dtype = t;
  g.ta = transposed_operand(c, ia), g.tb = transposed_operand(c, ib);
  const Shape a = shape(ia), b = shape(ib);
  g.M = a[g.ta ? 1 : 0], g.K = a[g.ta ? 0 : 1], g.N = b[g.tb ? 0 : 1];
  if (g.M * g.N != numel_of(p.buffer(c.outputs[0]).shape) || g.M <= 0 || g.N <= 0 || g.K <= 0) return std::nullopt;
  // The tensor-core template copies 16 bytes at a time along each operand's contiguous size.
  if (is_half(t) && (g.K % 8 != 0 || (g.ta && g.M % 8 != 0) || (!g.tb && g.N % 8 != 0))) return std::nullopt;
  g.a = c.inputs.at(input(ia)), g.b = c.inputs.at(input(ib)), g.c = c.outputs[0];
  if (addmm) {
    if (!c.args[0].is_node() || !plain(0) || c.args[3].number() != 1.0 || c.args[4].number() != 1.0) return std::nullopt;
    const Shape bias = shape(0);
    const bool row = bias.size() == 1 ? bias[0] == g.N : bias.size() == 2 && bias[0] == 1 && bias[1] == g.N;
    if (!row || p.buffer(c.inputs.at(input(0))).dtype != t) return std::nullopt;
    g.bias = c.inputs.at(input(0));
  }
  if (k + 1 < s.kernels.size() && s.kernels[k + 1].epilogue) {
    const Kernel& e = s.kernels[k + 1];
    bool in_place = false;
    for (const std::string& w : e.writes) in_place = in_place || std::count(e.reads.begin(), e.reads.end(), w) > 0;
    if (!in_place && e.numel == g.M * g.N && e.rnumel == 1) g.epilogue = static_cast<int>(k + 1);
  }
  return g;
}

std::vector<CudaGemmConfig> cuda_gemm_candidates(const CudaGemmProblem& g) {
  if (is_half(g.dtype)) {
    // bm, bn, warps along M and N, bk, stages: each ring of shared tiles within 48 KB.
    const std::vector<CudaGemmConfig> tensor_cores = {{128, 128, 2, 2, 32, 3}, {128, 256, 2, 4, 32, 2}, {256, 128, 4, 2, 32, 2},
                                                      {64, 128, 2, 2, 32, 4},  {128, 64, 2, 2, 32, 4},  {64, 64, 2, 2, 32, 4},
                                                      {64, 64, 2, 2, 64, 3},   {32, 64, 1, 2, 64, 3}};
    std::vector<CudaGemmConfig> out;
    for (const CudaGemmConfig& c : tensor_cores)
      if (c.bm <= std::max<int64_t>(32, 2 * g.M) && c.bn <= std::max<int64_t>(64, 2 * g.N)) out.push_back(c);
    return out;
  }
  const std::vector<CudaGemmConfig> all = {
      {16, 16, 1, 1, 16}, {16, 32, 1, 2, 16}, {32, 32, 2, 2, 16}, {64, 64, 4, 4, 16}, {128, 64, 8, 4, 8}, {64, 128, 4, 8, 8}, {128, 128, 8, 8, 8}};
  std::vector<CudaGemmConfig> out;
  for (const CudaGemmConfig& c : all)  // no tile more than twice the product along either side
    if (c.bm <= std::max<int64_t>(16, 2 * g.M) && c.bn <= std::max<int64_t>(16, 2 * g.N)) out.push_back(c);
  return out;
}

namespace {

// The tensor-core template (codegen/cuda_gemm_half.h, once a module): a kernel calling ls_gh_gemm
// with the sizes, the tile, the operands' orientation and the epilogue's element function.
void half_template(const CudaGemmProblem& g, const CudaGemmConfig& c, const std::string& function, const std::string& epilogue_call,
                   const std::string& epilogue_params, const std::string& epilogue_text, const std::string& epilogue_name,
                   CudaGemmSource& out) {
  const int warps = c.tm * c.tn;
  out.launch.form = "gemm template";
  out.launch.block = warps * 32;
  out.launch.grid = ceil_div(g.M, c.bm) * ceil_div(g.N, c.bn);
  std::ostringstream os;
  os << kCudaGemmHalf << epilogue_text;
  os << "// " << function << ": GEMM template on the tensor cores for the product " << g.c << " (" << g.M << "x" << g.K << " @ " << g.K << "x"
     << g.N << (g.bias.empty() ? "" : " + bias") << ", " << dtype_torch(g.dtype).substr(6) << "), " << c.text() << ", grid " << out.launch.grid
     << " x block " << out.launch.block << (epilogue_name.empty() ? "" : ", then the epilogue " + epilogue_name + " on each element") << "\n";
  // ls_c without __restrict__: the epilogue reads its elements through its own parameter (ls_e*).
  os << "extern \"C\" __global__ void __launch_bounds__(" << out.launch.block << ") " << function
     << "(const unsigned short* __restrict__ ls_a, const unsigned short* __restrict__ ls_b"
     << (g.bias.empty() ? "" : ", const unsigned short* __restrict__ ls_bias") << ", unsigned short* ls_c" << epilogue_params << ") {\n";
  os << "    ls_gh_gemm<" << (g.dtype == DType::f16 ? 1 : 0) << ", " << c.bm << ", " << c.bn << ", " << c.bk << ", " << c.tm << ", " << c.tn << ", "
     << c.stages << ", " << (g.ta ? "true" : "false") << ", " << (g.tb ? "true" : "false") << ", " << (g.bias.empty() ? "false" : "true") << ", "
     << g.M << ", " << g.N << ", " << g.K << ">(ls_a, ls_b, " << (g.bias.empty() ? "nullptr" : "ls_bias") << ", ls_c, [&](long long ls_at) {"
     << (epilogue_call.empty() ? "" : " " + epilogue_call + " ") << "});\n}\n";
  out.text = os.str();
}

}  // namespace

CudaGemmSource cuda_gemm_template(const LoopProgram& p, const Schedule& s, const CudaGemmProblem& g, const CudaGemmConfig& c,
                                  const CudaCodegenOptions& o, const std::string& function) {
  CudaGemmSource out;
  out.function = function;
  if (c.stages > 0) {
    if (!is_half(g.dtype)) throw std::logic_error(function + ": the tensor-core template takes bfloat16 or float16, not " + std::string(dtype_torch(g.dtype)));
    std::string call, params, text, name;
    std::vector<std::string> epilogue_args;
    if (g.epilogue >= 0) {
      const Kernel& e = s.kernels.at(static_cast<size_t>(g.epilogue));
      name = e.name;
      const std::string fname = function + "_epilogue";
      text = cuda_element_function(p, e, o, fname, epilogue_args);
      call = fname + "(ls_at";
      for (size_t i = 0; i < epilogue_args.size(); ++i) {
        const bool write = std::count(e.writes.begin(), e.writes.end(), epilogue_args[i]) > 0;
        const std::string arg = "ls_e" + std::to_string(i);
        params += std::string(", ") + (write ? "" : "const ") + std::string(dtype_c(p.buffer(epilogue_args[i]).dtype)) + "* " + arg;
        call += ", " + arg;
      }
      call += ");";
    }
    half_template(g, c, function, call, params, text, name, out);
    out.args = {g.a, g.b};
    if (!g.bias.empty()) out.args.push_back(g.bias);
    out.args.push_back(g.c);
    out.args.insert(out.args.end(), epilogue_args.begin(), epilogue_args.end());
    return out;
  }
  const int TX = c.bn / c.tn, TY = c.bm / c.tm, T = TX * TY;
  const int64_t col_blocks = ceil_div(g.N, c.bn);
  out.launch.form = "gemm template";
  out.launch.block = T;
  out.launch.grid = ceil_div(g.M, c.bm) * col_blocks;
  std::string epilogue_call, epilogue_params;
  std::vector<std::string> epilogue_args;
  std::ostringstream os;
  if (g.epilogue >= 0) {
    const std::string fname = function + "_epilogue";
    os << cuda_element_function(p, s.kernels.at(static_cast<size_t>(g.epilogue)), o, fname, epilogue_args);
    epilogue_call = fname + "((int64_t)ls_gm * " + std::to_string(g.N) + " + ls_gn";
    for (size_t i = 0; i < epilogue_args.size(); ++i) {
      const bool write = std::count(s.kernels[static_cast<size_t>(g.epilogue)].writes.begin(),
                                    s.kernels[static_cast<size_t>(g.epilogue)].writes.end(), epilogue_args[i]) > 0;
      const std::string name = "ls_e" + std::to_string(i);
      epilogue_params += std::string(", ") + (write ? "" : "const ") + std::string(dtype_c(p.buffer(epilogue_args[i]).dtype)) + "* " + name;
      epilogue_call += ", " + name;
    }
    epilogue_call += ");";
  }
  const std::string M = std::to_string(g.M), N = std::to_string(g.N), K = std::to_string(g.K);
  const std::string BM = std::to_string(c.bm), BN = std::to_string(c.bn), BK = std::to_string(c.bk);
  os << "// " << function << ": GEMM template for the product " << g.c << " (" << M << "x" << K << " @ " << K
     << "x" << N << (g.bias.empty() ? "" : " + bias") << "), " << c.text() << ", grid " << out.launch.grid << " x block " << T
     << (g.epilogue >= 0 ? ", then the epilogue " + s.kernels[static_cast<size_t>(g.epilogue)].name + " on each element" : "") << "\n";
  os << "extern \"C\" __global__ void __launch_bounds__(" << T << ") " << function
     << "(const float* __restrict__ ls_a, const float* __restrict__ ls_b" << (g.bias.empty() ? "" : ", const float* ls_bias")
     << ", float* ls_c" << epilogue_params << ") {\n";
  os << "    __shared__ float ls_as[" << BK << "][" << c.bm + 4 << "];  // A's tile, k-major\n"
     << "    __shared__ float ls_bs[" << BK << "][" << c.bn + 4 << "];  // B's tile\n"
     << "    const int ls_tx = threadIdx.x % " << TX << ", ls_ty = threadIdx.x / " << TX << ";\n"
     << "    const int ls_m0 = (int)(blockIdx.x / " << col_blocks << ") * " << BM << ", ls_n0 = (int)(blockIdx.x % " << col_blocks << ") * "
     << BN << ";\n"
     << "    float ls_acc[" << c.tm << "][" << c.tn << "];\n"
     << "    #pragma unroll\n    for (int i = 0; i < " << c.tm << "; ++i)\n"
     << "        #pragma unroll\n        for (int j = 0; j < " << c.tn << "; ++j) ls_acc[i][j] = 0.f;\n"
     << "    for (int ls_k0 = 0; ls_k0 < " << K << "; ls_k0 += " << BK << ") {\n";
  // A's tile: consecutive threads along the dimension A is contiguous in.
  os << "        for (int ls_i = threadIdx.x; ls_i < " << c.bm * c.bk << "; ls_i += " << T << ") {\n";
  if (!g.ta) os << "            const int ls_r = ls_i / " << BK << ", ls_kk = ls_i % " << BK << ";\n";
  else os << "            const int ls_kk = ls_i / " << BM << ", ls_r = ls_i % " << BM << ";\n";
  os << "            const int ls_gm = ls_m0 + ls_r, ls_gk = ls_k0 + ls_kk;\n"
     << "            ls_as[ls_kk][ls_r] = ls_gm < " << M << " && ls_gk < " << K << " ? ls_a["
     << (g.ta ? "(int64_t)ls_gk * " + M + " + ls_gm" : "(int64_t)ls_gm * " + K + " + ls_gk") << "] : 0.f;\n        }\n";
  os << "        for (int ls_i = threadIdx.x; ls_i < " << c.bk * c.bn << "; ls_i += " << T << ") {\n";
  if (!g.tb) os << "            const int ls_kk = ls_i / " << BN << ", ls_col = ls_i % " << BN << ";\n";
  else os << "            const int ls_col = ls_i / " << BK << ", ls_kk = ls_i % " << BK << ";\n";
  os << "            const int ls_gn = ls_n0 + ls_col, ls_gk = ls_k0 + ls_kk;\n"
     << "            ls_bs[ls_kk][ls_col] = ls_gn < " << N << " && ls_gk < " << K << " ? ls_b["
     << (g.tb ? "(int64_t)ls_gn * " + K + " + ls_gk" : "(int64_t)ls_gk * " + N + " + ls_gn") << "] : 0.f;\n        }\n"
     << "        __syncthreads();\n"
     << "        #pragma unroll\n        for (int ls_kk = 0; ls_kk < " << BK << "; ++ls_kk) {\n"
     << "            float ls_ra[" << c.tm << "], ls_rb[" << c.tn << "];\n"
     << "            #pragma unroll\n            for (int i = 0; i < " << c.tm << "; ++i) ls_ra[i] = ls_as[ls_kk][ls_ty + i * " << TY << "];\n"
     << "            #pragma unroll\n            for (int j = 0; j < " << c.tn << "; ++j) ls_rb[j] = ls_bs[ls_kk][ls_tx + j * " << TX << "];\n"
     << "            #pragma unroll\n            for (int i = 0; i < " << c.tm << "; ++i)\n"
     << "                #pragma unroll\n                for (int j = 0; j < " << c.tn
     << "; ++j) ls_acc[i][j] = fmaf(ls_ra[i], ls_rb[j], ls_acc[i][j]);\n"
     << "        }\n        __syncthreads();\n    }\n";
  // The store (a warp's threads on consecutive columns), the bias, then the epilogue on the
  // element just stored: the same thread reads it back, so no barrier is needed.
  os << "    #pragma unroll\n    for (int i = 0; i < " << c.tm << "; ++i) {\n"
     << "        const int ls_gm = ls_m0 + ls_ty + i * " << TY << ";\n"
     << "        #pragma unroll\n        for (int j = 0; j < " << c.tn << "; ++j) {\n"
     << "            const int ls_gn = ls_n0 + ls_tx + j * " << TX << ";\n"
     << "            if (ls_gm < " << M << " && ls_gn < " << N << ") {\n"
     << "                ls_c[(int64_t)ls_gm * " << N << " + ls_gn] = ls_acc[i][j]" << (g.bias.empty() ? "" : " + ls_bias[ls_gn]") << ";\n";
  if (!epilogue_call.empty()) os << "                " << epilogue_call << "\n";
  os << "            }\n        }\n    }\n}\n";
  out.text = os.str();
  out.args = {g.a, g.b};
  if (!g.bias.empty()) out.args.push_back(g.bias);
  out.args.push_back(g.c);
  out.args.insert(out.args.end(), epilogue_args.begin(), epilogue_args.end());
  return out;
}

}  // namespace ls
