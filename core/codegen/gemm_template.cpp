#include "codegen/gemm_template.h"

#include "codegen/cpu_target.h"

#include <algorithm>
#include <sstream>

namespace ls {

std::string GemmProblem::text() const {
  std::ostringstream os;
  os << M << "x" << K << " @ " << K << "x" << N;
  if (ta || tb) os << " (" << (ta ? tb ? "A and B" : "A" : "B") << " transposed)";
  switch (bias) {
    case Bias::none: break;
    case Bias::column: os << ", bias per column"; break;
    case Bias::row: os << ", bias per row"; break;
    case Bias::matrix: os << ", bias matrix"; break;
    case Bias::scalar: os << ", scalar bias"; break;
  }
  return os.str();
}

std::string GemmTemplate::text() const {
  std::ostringstream os;
  os << "template " << mr << "x" << nr;
  if (kc) os << " k" << kc;
  os << ", " << rows << " x " << cols << " blocks";
  return os.str();
}

int gemm_vector_width() { return cpu_target().vector_floats; }

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Elements of the packed operands (both padded to whole panels).
int64_t packed_elements(const GemmProblem& p, int mr, int nr) {
  return (ceil_div(p.M, mr) * mr + ceil_div(p.N, nr) * nr) * p.K;
}

// KC: the whole K when a B panel of it stays in the core's L2 with room to spare, else chunks.
int chunk_of(const GemmProblem& p) { return p.K <= 512 ? static_cast<int>(p.K) : 256; }

// The grids of `parts` blocks with at least one tile each way, the heuristic's (fewest elements
// packed per block: (rows a block + columns a block) * K, ties to taller blocks) first.
std::vector<std::pair<int64_t, int64_t>> grids(const GemmProblem& p, int mr, int nr, int64_t parts) {
  std::vector<std::pair<int64_t, int64_t>> out;
  const int64_t mp = ceil_div(p.M, mr), np = ceil_div(p.N, nr);
  for (int64_t tr = parts; tr >= 1; --tr) {
    if (parts % tr) continue;
    const int64_t tc = parts / tr;
    if (tr <= mp && tc <= np) out.push_back({tr, tc});
  }
  std::stable_sort(out.begin(), out.end(), [&](auto a, auto b) {
    return ceil_div(mp, a.first) * mr + ceil_div(np, a.second) * nr < ceil_div(mp, b.first) * mr + ceil_div(np, b.second) * nr;
  });
  return out;
}

}  // namespace

bool gemm_template_fits(const GemmProblem& p) {
  return p.M > 0 && p.N > 0 && p.K > 0 && packed_elements(p, 16, 64) * 4 <= (int64_t{64} << 20);
}

std::vector<GemmTemplate> gemm_template_candidates(const GemmProblem& p, int threads) {
  std::vector<GemmTemplate> out;
  if (!gemm_template_fits(p)) return out;
  const int w = gemm_vector_width();
  // Register tiles of MR x NR/w accumulators that leave registers for B's vectors and A's
  // broadcast (32 vector registers with AVX-512, 16 below).
  std::vector<std::pair<int, int>> tiles;
  if (w == 16) tiles = {{6, 64}, {8, 48}, {12, 32}};
  else tiles = {{6, 2 * w}, {4, 3 * w}};
  const int64_t work = p.M * p.N * p.K;
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(threads, work / (1 << 18)));
  for (const auto& [mr, nr] : tiles) {
    int n = 0;
    for (int64_t ps : {parts, parts / 2}) {
      if (ps < 1 || (ps == 1 && parts > 1)) continue;  // one thread only where the product is that small
      for (const auto& [tr, tc] : grids(p, mr, nr, ps)) {
        if (n++ >= 3) break;  // the three grids that pack least
        GemmTemplate t{mr, nr, chunk_of(p), tr, tc};
        if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
      }
    }
  }
  return out;
}

bool gemm_template_default(const GemmProblem& p, int threads, GemmTemplate& out) {
  if (gemm_vector_width() < 16 || p.K > 512 || p.M * p.N * p.K < (int64_t{1} << 27)) return false;
  for (const GemmTemplate& t : gemm_template_candidates(p, threads))
    if (t.mr == 12 && t.nr == 32) {
      out = t;
      return true;
    }
  return false;
}

std::string gemm_template_cpp(const std::string& name, const GemmProblem& p, const GemmTemplate& t) {
  const int w = gemm_vector_width();
  const int mr = t.mr, nr = t.nr, nv = nr / w;
  const int64_t M = p.M, N = p.N, K = p.K, KC = t.kc > 0 ? t.kc : K;
  const int64_t mp = ceil_div(M, mr), np = ceil_div(N, nr);
  // A block of rows small enough that its packed A stays in L2 beside a B panel: ~128 rows.
  const int64_t mcp = std::max<int64_t>(1, 128 / mr);
  const std::string V = "ls_gemm_v" + std::to_string(w), VU = V + "u";
  std::ostringstream os;
  os << "// " << name << ": C[" << M << "," << N << "] = " << (p.alpha == 1.f ? "" : std::to_string(p.alpha) + " * ") << "A @ B"
     << (p.bias == GemmProblem::Bias::none ? "" : p.beta == 1.f ? " + bias" : " + " + std::to_string(p.beta) + " * bias") << ", "
     << p.text() << "; " << t.text() << "\n";
  os << "#ifndef LS_GEMM_" << w << "\n#define LS_GEMM_" << w << "\n"
     << "typedef float " << V << " __attribute__((vector_size(" << w * 4 << ")));\n"
     << "typedef float " << VU << " __attribute__((vector_size(" << w * 4 << "), aligned(4)));\n"
     << "#endif\n"
     << "#ifndef LS_GEMM_PRAGMAS\n#define LS_GEMM_PRAGMAS\n"
     << "#ifdef __clang__\n"
     << "#define LS_GEMM_UNROLL_ALL _Pragma(\"unroll\")\n"
     << "#define LS_GEMM_WIDE(bits) __attribute__((min_vector_width(bits)))\n"
     << "#else\n"
     << "#define LS_GEMM_UNROLL_ALL _Pragma(\"GCC unroll 16\")\n"
     << "#define LS_GEMM_WIDE(bits)\n"
     << "#endif\n#endif\n";
  // The packed operands: A as ceil(M/MR) panels of K x MR, B as ceil(N/NR) panels of K x NR.
  os << "alignas(64) static float " << name << "_a[" << mp * mr * K << "];\n";
  os << "alignas(64) static float " << name << "_b[" << np * nr * K << "];\n";

  // One MR x NR tile of C over kc elements of K; `first`: the first chunk (C gets the bias), else
  // C accumulates. Not inlined into its one caller and the k loop not unrolled: the same speed, and
  // Clang compiled layernorm_gelu's source in 190 ms instead of 280.
  os << "LS_GEMM_WIDE(" << w * 32 << ") __attribute__((noinline)) static void " << name << "_tile(const float* __restrict a, const float* __restrict b, "
     << "int64_t kc, float* __restrict C, const float* __restrict bias, int64_t i, int64_t j, bool first) {\n"
     << "  " << V << " acc[" << mr << "][" << nv << "];\n"
     << "  LS_GEMM_UNROLL_ALL for (int r = 0; r < " << mr << "; ++r)\n"
     << "    LS_GEMM_UNROLL_ALL for (int v = 0; v < " << nv << "; ++v) acc[r][v] = (" << V << "){};\n"
     << "  for (int64_t k = 0; k < kc; ++k) {\n"
     << "    " << V << " bv[" << nv << "];\n"
     << "    LS_GEMM_UNROLL_ALL for (int v = 0; v < " << nv << "; ++v) bv[v] = *(const " << V << "*)(b + k * " << nr << " + v * " << w
     << ");\n"
     << "    LS_GEMM_UNROLL_ALL for (int r = 0; r < " << mr << "; ++r) {\n"
     << "      const " << V << " av = a[k * " << mr << " + r] - (" << V << "){};  // a splat (x - 0 is x)\n"
     << "      LS_GEMM_UNROLL_ALL for (int v = 0; v < " << nv << "; ++v) acc[r][v] += av * bv[v];\n"
     << "    }\n"
     << "  }\n";
  const std::string alpha = p.alpha == 1.f ? "" : std::to_string(p.alpha) + "f * ";
  const std::string beta = p.beta == 1.f ? "" : std::to_string(p.beta) + "f * ";
  // The bias of element (row, col) as a scalar, and of a row's vector at column col.
  auto bias_at = [&](const std::string& row, const std::string& col) -> std::string {
    switch (p.bias) {
      case GemmProblem::Bias::none: return "0.f";
      case GemmProblem::Bias::column: return beta + "bias[" + col + "]";
      case GemmProblem::Bias::row: return beta + "bias[" + row + "]";
      case GemmProblem::Bias::matrix: return beta + "bias[(" + row + ") * " + std::to_string(N) + " + " + col + "]";
      case GemmProblem::Bias::scalar: return beta + "bias[0]";
    }
    return "0.f";
  };
  auto bias_vec = [&](const std::string& row, const std::string& col) -> std::string {
    switch (p.bias) {
      case GemmProblem::Bias::none: return "";
      case GemmProblem::Bias::column: return " + " + beta + "*(const " + VU + "*)(bias + " + col + ")";
      case GemmProblem::Bias::row: return " + " + beta + "bias[" + row + "]";
      case GemmProblem::Bias::matrix: return " + " + beta + "*(const " + VU + "*)(bias + (" + row + ") * " + std::to_string(N) + " + " + col + ")";
      case GemmProblem::Bias::scalar: return " + " + beta + "bias[0]";
    }
    return "";
  };
  os << "  if (i + " << mr << " <= " << M << " && j + " << nr << " <= " << N << ") {\n"
     << "    LS_GEMM_UNROLL_ALL for (int r = 0; r < " << mr << "; ++r)\n"
     << "      LS_GEMM_UNROLL_ALL for (int v = 0; v < " << nv << "; ++v) {\n"
     << "        " << VU << "* c = (" << VU << "*)(C + (i + r) * " << N << " + j + v * " << w << ");\n"
     << "        *c = " << alpha << "acc[r][v] + (first ? (" << V << "){}" << bias_vec("i + r", "j + v * " + std::to_string(w)) << " : *c);\n"
     << "      }\n"
     << "    return;\n"
     << "  }\n"
     << "  for (int r = 0; r < " << mr << " && i + r < " << M << "; ++r) {\n"
     << "    float row[" << nr << "];\n"
     << "    __builtin_memcpy(row, acc[r], sizeof row);\n"
     << "    for (int c = 0; c < " << nr << " && j + c < " << N << "; ++c) {\n"
     << "      float& out = C[(i + r) * " << N << " + j + c];\n"
     << "      out = " << alpha << "row[c] + (first ? " << bias_at("i + r", "j + c") << " : out);\n"
     << "    }\n"
     << "  }\n"
     << "}\n";

  os << "extern \"C\" void " << name << "(const float* __restrict A, const float* __restrict B, const float* __restrict bias, "
     << "float* __restrict C, void (*epilogue)(void**, int64_t, int64_t) noexcept, void** epilogue_args) {\n"
     << "  float* __restrict pa = " << name << "_a;\n"
     << "  float* __restrict pb = " << name << "_b;\n"
     << "  #pragma omp parallel\n  {\n";
  // Pack A: panel ip holds rows ip*MR.. as K x MR (rows past M zero).
  os << "    #pragma omp for schedule(static) nowait\n"
     << "    for (int64_t ip = 0; ip < " << mp << "; ++ip) {\n"
     << "      float* d = pa + ip * " << mr * K << ";\n";
  if (p.ta)  // A stored [K, M]: a panel's row of MR is contiguous
    os << "      for (int64_t k = 0; k < " << K << "; ++k)\n"
       << "        for (int r = 0; r < " << mr << "; ++r) d[k * " << mr << " + r] = ip * " << mr << " + r < " << M << " ? A[k * " << M
       << " + ip * " << mr << " + r] : 0.f;\n";
  else
    os << "      for (int r = 0; r < " << mr << "; ++r) {\n"
       << "        const int64_t i = ip * " << mr << " + r;\n"
       << "        for (int64_t k = 0; k < " << K << "; ++k) d[k * " << mr << " + r] = i < " << M << " ? A[i * " << K << " + k] : 0.f;\n"
       << "      }\n";
  os << "    }\n";
  // Pack B: panel jp holds columns jp*NR.. as K x NR (columns past N zero).
  os << "    #pragma omp for schedule(static)\n"
     << "    for (int64_t jp = 0; jp < " << np << "; ++jp) {\n"
     << "      float* d = pb + jp * " << nr * K << ";\n";
  if (p.tb)  // B stored [N, K]: a column is contiguous
    os << "      for (int c = 0; c < " << nr << "; ++c) {\n"
       << "        const int64_t j = jp * " << nr << " + c;\n"
       << "        for (int64_t k = 0; k < " << K << "; ++k) d[k * " << nr << " + c] = j < " << N << " ? B[j * " << K << " + k] : 0.f;\n"
       << "      }\n";
  else
    os << "      for (int64_t k = 0; k < " << K << "; ++k)\n"
       << "        for (int c = 0; c < " << nr << "; ++c) d[k * " << nr << " + c] = jp * " << nr << " + c < " << N << " ? B[k * " << N
       << " + jp * " << nr << " + c] : 0.f;\n";
  os << "    }\n";
  // Each thread's block: A panels [a0, a1) x B panels [b0, b1), in blocks of rows whose packed A
  // stays in L2; the epilogue on each block of rows once all of K is in.
  os << "    #pragma omp for schedule(static)\n"
     << "    for (int64_t t = 0; t < " << t.rows * t.cols << "; ++t) {\n"
     << "      const int64_t tr = t / " << t.cols << ", tc = t % " << t.cols << ";\n"
     << "      const int64_t a0 = tr * " << mp << " / " << t.rows << ", a1 = (tr + 1) * " << mp << " / " << t.rows << ";\n"
     << "      const int64_t b0 = tc * " << np << " / " << t.cols << ", b1 = (tc + 1) * " << np << " / " << t.cols << ";\n"
     << "      for (int64_t m0 = a0; m0 < a1; m0 += " << mcp << ") {\n"
     << "        const int64_t m1 = m0 + " << mcp << " < a1 ? m0 + " << mcp << " : a1;\n"
     << "        for (int64_t k0 = 0; k0 < " << K << "; k0 += " << KC << ") {\n"
     << "          const int64_t kc = k0 + " << KC << " < " << K << " ? " << KC << " : " << K << " - k0;\n"
     << "          for (int64_t jp = b0; jp < b1; ++jp)\n"
     << "            for (int64_t ip = m0; ip < m1; ++ip)\n"
     << "              " << name << "_tile(pa + (ip * " << K << " + k0) * " << mr << ", pb + (jp * " << K << " + k0) * " << nr
     << ", kc, C, bias, ip * " << mr << ", jp * " << nr << ", k0 == 0);\n"
     << "        }\n"
     << "        if (epilogue && b0 < b1) {\n"
     << "          const int64_t i0 = m0 * " << mr << ", i1 = m1 * " << mr << " < " << M << " ? m1 * " << mr << " : " << M << ";\n"
     << "          const int64_t j0 = b0 * " << nr << ", j1 = b1 * " << nr << " < " << N << " ? b1 * " << nr << " : " << N << ";\n"
     << "          if (j0 == 0 && j1 == " << N << ") epilogue(epilogue_args, i0 * " << N << ", i1 * " << N << ");\n"
     << "          else for (int64_t i = i0; i < i1; ++i) epilogue(epilogue_args, i * " << N << " + j0, i * " << N << " + j1);\n"
     << "        }\n"
     << "      }\n"
     << "    }\n"
     << "  }\n"
     << "}\n";
  return os.str();
}

}  // namespace ls
