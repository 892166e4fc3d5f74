// Stand-alone check and timing of the bf16/f16 FlashAttention-2 kernels (core/codegen/cuda_flash_half.h)
// against a float64 reference on the host: forward (output, log-sum-exp) and backward (dq, dk,
// dv) on small shapes (causal, GQA, strided and element-strided operands, sequences not a
// multiple of 64, head sizes 8 to 128), then the time of the benchmark's sizes.
//   nvcc -O2 -std=c++17 -arch=sm_90 tools/gpu/flash_half_check.cu -o /tmp/fhc && /tmp/fhc
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../../core/codegen/cuda_flash_half.h"

#define INST(D) LS_FLASH_HALF_FWD(bf16, 0, D) LS_FLASH_HALF_BWD(bf16, 0, D) LS_FLASH_HALF_FWD(f16, 1, D) LS_FLASH_HALF_BWD(f16, 1, D)
INST(8)
INST(24)
INST(64)
INST(128)

#define CK(x)                                                                            \
  do {                                                                                   \
    cudaError_t e = (x);                                                                 \
    if (e != cudaSuccess) {                                                              \
      std::printf("CUDA error %s at line %d: %s\n", cudaGetErrorString(e), __LINE__, #x); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

static unsigned short to_half(float f, int kind) {
  if (kind == 1) {
    __half h = __float2half_rn(f);
    unsigned short u;
    std::memcpy(&u, &h, 2);
    return u;
  }
  unsigned u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<unsigned short>(u >> 16);
}
static float from_half(unsigned short u, int kind) {
  if (kind == 1) {
    __half h;
    std::memcpy(&h, &u, 2);
    return __half2float(h);
  }
  unsigned v = static_cast<unsigned>(u) << 16;
  float f;
  std::memcpy(&f, &v, 4);
  return f;
}

typedef void (*Fwd)(const unsigned short*, const unsigned short*, const unsigned short*, unsigned short*, float*, LsFhView, LsFhView, LsFhView,
                    LsFhView, long long, long long, long long, long long, float, int);
typedef void (*Pre)(const unsigned short*, const unsigned short*, float*, float*, LsFhView, LsFhView, long long, long long, long long);
typedef void (*Bwd)(const unsigned short*, const unsigned short*, const unsigned short*, const unsigned short*, const float*, const float*,
                    float*, unsigned short*, unsigned short*, LsFhView, LsFhView, LsFhView, LsFhView, long long, long long, long long,
                    long long, float, int);
typedef void (*Dq)(const float*, unsigned short*, long long, float);
struct Kernels {
  Fwd fwd;
  Pre pre;
  Bwd bwd;
  Dq dq;
};
static Kernels kernels(int kind, int D) {
#define K(D) \
  if (kind == 0) return {ls_flash_half_fwd_bf16_##D, ls_flash_half_bwd_pre_bf16_##D, ls_flash_half_bwd_bf16_##D, ls_flash_half_bwd_dq_bf16_##D}; \
  return {ls_flash_half_fwd_f16_##D, ls_flash_half_bwd_pre_f16_##D, ls_flash_half_bwd_f16_##D, ls_flash_half_bwd_dq_f16_##D};
  if (D == 8) { K(8) }
  if (D == 24) { K(24) }
  if (D == 64) { K(64) }
  K(128)
#undef K
}
static size_t fwd_smem(int D) { return (LS_FH_FWD_BM + 2 * 64) * ((D + 15) / 16 * 16 + 8) * 2; }
static size_t bwd_smem(int D) { return (4 * 64 * ((D + 15) / 16 * 16 + 8) + 64 * 72) * 2 + 128 * 4; }

struct Case {
  int B, H, Hk, L, S, D, causal, kind, qlayout;  // qlayout 0: [B,H,L,D]; 1: [B,L,H,D]; 2: [B,H,D,L] (element stride L)
};

// element index of (b, h, row, e) in a layout of heads `heads`, rows `rows`
static long long at(int layout, int B, int heads, int rows, int D, int b, int h, int r, int e, LsFhView* v = nullptr) {
  LsFhView s;
  if (layout == 0) s = {(long long)heads * rows * D, (long long)rows * D, D, 1};
  else if (layout == 1) s = {(long long)rows * heads * D, D, (long long)heads * D, 1};
  else s = {(long long)heads * D * rows, (long long)D * rows, 1, rows};
  (void)B;
  if (v) *v = s;
  return b * s.sb + h * s.sh + r * s.sl + e * s.se;
}

static bool run_case(const Case& c, std::mt19937& rng) {
  const int B = c.B, H = c.H, Hk = c.Hk, L = c.L, S = c.S, D = c.D, group = H / Hk, kind = c.kind;
  std::normal_distribution<float> nd(0.f, 1.f);
  const long long nq = (long long)B * H * L * D, nk = (long long)B * Hk * S * D;
  std::vector<unsigned short> q(nq), k(nk), v(nk), go(nq);
  for (auto& x : q) x = to_half(nd(rng), kind);
  for (auto& x : k) x = to_half(nd(rng), kind);
  for (auto& x : v) x = to_half(nd(rng), kind);
  for (auto& x : go) x = to_half(nd(rng), kind);
  LsFhView qs, ks, os, gs;
  at(c.qlayout, B, H, L, D, 0, 0, 0, 0, &qs);
  at(0, B, Hk, S, D, 0, 0, 0, 0, &ks);
  at(1, B, H, L, D, 0, 0, 0, 0, &os);  // output [B, L, H, D] as the executor stores it
  at(c.qlayout == 2 ? 1 : 0, B, H, L, D, 0, 0, 0, 0, &gs);
  const double scale = 1.0 / std::sqrt((double)D);
  // reference
  std::vector<double> O(nq), LSE((long long)B * H * L), dQ(nq, 0.0), dK(nk, 0.0), dV(nk, 0.0);
  std::vector<double> P(S), dP(S);
  auto Q = [&](int b, int h, int i, int e) { return (double)from_half(q[at(c.qlayout, B, H, L, D, b, h, i, e)], kind); };
  auto Kx = [&](int b, int h, int j, int e) { return (double)from_half(k[at(0, B, Hk, S, D, b, h, j, e)], kind); };
  auto Vx = [&](int b, int h, int j, int e) { return (double)from_half(v[at(0, B, Hk, S, D, b, h, j, e)], kind); };
  auto G = [&](int b, int h, int i, int e) { return (double)from_half(go[at(c.qlayout == 2 ? 1 : 0, B, H, L, D, b, h, i, e)], kind); };
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      const int hk = h / group;
      for (int i = 0; i < L; ++i) {
        double m = -INFINITY;
        for (int j = 0; j < S; ++j) {
          double s = 0;
          for (int e = 0; e < D; ++e) s += Q(b, h, i, e) * Kx(b, hk, j, e);
          s *= scale;
          if (c.causal && j > i) s = -INFINITY;
          P[j] = s;
          m = std::max(m, s);
        }
        double sum = 0;
        for (int j = 0; j < S; ++j) sum += (P[j] = std::exp(P[j] - m));
        for (int j = 0; j < S; ++j) P[j] /= sum;
        LSE[((long long)b * H + h) * L + i] = m + std::log(sum);
        for (int e = 0; e < D; ++e) {
          double a = 0;
          for (int j = 0; j < S; ++j) a += P[j] * Vx(b, hk, j, e);
          O[at(1, B, H, L, D, b, h, i, e)] = a;
        }
        // backward of this row (O rounded as the kernel's saved output is)
        double Di = 0;
        for (int e = 0; e < D; ++e) Di += G(b, h, i, e) * (double)from_half(to_half((float)O[at(1, B, H, L, D, b, h, i, e)], kind), kind);
        for (int j = 0; j < S; ++j) {
          double d = 0;
          for (int e = 0; e < D; ++e) d += G(b, h, i, e) * Vx(b, hk, j, e);
          const double ds = P[j] * (d - Di) * scale;
          for (int e = 0; e < D; ++e) {
            dV[at(0, B, Hk, S, D, b, hk, j, e)] += P[j] * G(b, h, i, e);
            dK[at(0, B, Hk, S, D, b, hk, j, e)] += ds * Q(b, h, i, e);
            dQ[at(0, B, H, L, D, b, h, i, e)] += ds * Kx(b, hk, j, e);
          }
        }
      }
    }
  // device
  unsigned short *dq_, *dk_, *dv_, *dgo, *dqo, *dko, *dvo, *dout;
  float *dlse, *drow, *dqacc;
  CK(cudaMalloc(&dq_, nq * 2));
  CK(cudaMalloc(&dgo, nq * 2));
  CK(cudaMalloc(&dout, nq * 2));
  CK(cudaMalloc(&dqo, nq * 2));
  CK(cudaMalloc(&dk_, nk * 2));
  CK(cudaMalloc(&dv_, nk * 2));
  CK(cudaMalloc(&dko, nk * 2));
  CK(cudaMalloc(&dvo, nk * 2));
  CK(cudaMalloc(&dlse, (long long)B * H * L * 4));
  CK(cudaMalloc(&drow, (long long)B * H * L * 4));
  CK(cudaMalloc(&dqacc, nq * 4));
  CK(cudaMemcpy(dq_, q.data(), nq * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dgo, go.data(), nq * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dk_, k.data(), nk * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dv_, v.data(), nk * 2, cudaMemcpyHostToDevice));
  const Kernels kk = kernels(kind, D);
  CK(cudaFuncSetAttribute(kk.fwd, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)fwd_smem(D)));
  CK(cudaFuncSetAttribute(kk.bwd, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bwd_smem(D)));
  const float sl2 = (float)(scale * 1.4426950408889634);
  const long long mt = (L + LS_FH_FWD_BM - 1) / LS_FH_FWD_BM, nt = (S + 63) / 64, rows = (long long)B * H * L;
  kk.fwd<<<B * H * mt, 128, fwd_smem(D)>>>(dq_, dk_, dv_, dout, dlse, qs, ks, ks, os, H, group, L, S, sl2, c.causal);
  CK(cudaGetLastError());
  kk.pre<<<(rows + 7) / 8, 256>>>(dgo, dout, drow, dqacc, gs, os, H, L, rows);
  kk.bwd<<<B * Hk * nt, 128, bwd_smem(D)>>>(dgo, dq_, dk_, dv_, dlse, drow, dqacc, dko, dvo, gs, qs, ks, ks, H, group, L, S, (float)scale,
                                             c.causal);
  kk.dq<<<256, 256>>>(dqacc, dqo, nq, (float)scale);
  CK(cudaDeviceSynchronize());
  std::vector<unsigned short> o(nq), gq(nq), gk(nk), gv(nk);
  std::vector<float> lse((long long)B * H * L);
  CK(cudaMemcpy(o.data(), dout, nq * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(gq.data(), dqo, nq * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(gk.data(), dko, nk * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(gv.data(), dvo, nk * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(lse.data(), dlse, lse.size() * 4, cudaMemcpyDeviceToHost));
  auto err = [&](const char* what, const std::vector<unsigned short>& got, const std::vector<double>& want) {
    double e = 0, mx = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      e = std::max(e, std::fabs(from_half(got[i], kind) - want[i]));
      mx = std::max(mx, std::fabs(want[i]));
    }
    return std::make_pair(e / std::max(mx, 1e-30), std::string(what));
  };
  double le = 0;
  for (size_t i = 0; i < lse.size(); ++i) le = std::max(le, std::fabs(lse[i] - LSE[i]));
  const double tol = kind == 0 ? 2e-2 : 4e-3;
  bool ok = le < 1e-3;
  std::printf("B%d H%d/%d L%d S%d D%d causal%d %s q-layout%d: lse %.1e", B, H, Hk, L, S, D, c.causal, kind ? "f16" : "bf16", c.qlayout, le);
  for (auto r : {err("out", o, O), err("dq", gq, dQ), err("dk", gk, dK), err("dv", gv, dV)}) {
    std::printf(" %s %.1e", r.second.c_str(), r.first);
    ok = ok && r.first < tol;
  }
  std::printf("  %s\n", ok ? "ok" : "FAILED");
  for (void* p : {(void*)dq_, (void*)dk_, (void*)dv_, (void*)dgo, (void*)dqo, (void*)dko, (void*)dvo, (void*)dout, (void*)dlse, (void*)drow,
                  (void*)dqacc})
    cudaFree(p);
  return ok;
}

static void timing(int B, int H, int Hk, int L, int D, int causal) {
  const long long nq = (long long)B * H * L * D, nk = (long long)B * Hk * L * D;
  unsigned short *q, *k, *v, *o, *go, *dq, *dk, *dv;
  float *lse, *drow, *acc;
  CK(cudaMalloc(&q, nq * 2));
  CK(cudaMalloc(&o, nq * 2));
  CK(cudaMalloc(&go, nq * 2));
  CK(cudaMalloc(&dq, nq * 2));
  CK(cudaMalloc(&k, nk * 2));
  CK(cudaMalloc(&v, nk * 2));
  CK(cudaMalloc(&dk, nk * 2));
  CK(cudaMalloc(&dv, nk * 2));
  CK(cudaMalloc(&lse, B * H * L * 4));
  CK(cudaMalloc(&drow, B * H * L * 4));
  CK(cudaMalloc(&acc, nq * 4));
  CK(cudaMemset(q, 0x3c, nq * 2));
  CK(cudaMemset(k, 0x3c, nk * 2));
  CK(cudaMemset(v, 0x3c, nk * 2));
  CK(cudaMemset(go, 0x3c, nq * 2));
  const Kernels kk = kernels(0, D);
  CK(cudaFuncSetAttribute(kk.fwd, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)fwd_smem(D)));
  CK(cudaFuncSetAttribute(kk.bwd, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bwd_smem(D)));
  LsFhView qs{(long long)L * H * D, D, (long long)H * D, 1}, ks{(long long)Hk * L * D, (long long)L * D, D, 1};
  const float scale = 1.f / std::sqrt((float)D);
  const long long rows = (long long)B * H * L;
  cudaEvent_t a, b2, c2;
  cudaEventCreate(&a);
  cudaEventCreate(&b2);
  cudaEventCreate(&c2);
  float fms = 0, bms = 0;
  for (int it = 0; it < 12; ++it) {
    cudaEventRecord(a);
    kk.fwd<<<B * H * ((L + LS_FH_FWD_BM - 1) / LS_FH_FWD_BM), 128, fwd_smem(D)>>>(q, k, v, o, lse, qs, ks, ks, qs, H, H / Hk, L, L, scale * 1.4427f, causal);
    cudaEventRecord(b2);
    kk.pre<<<(rows + 7) / 8, 256>>>(go, o, drow, acc, qs, qs, H, L, rows);
    kk.bwd<<<B * Hk * ((L + 63) / 64), 128, bwd_smem(D)>>>(go, q, k, v, lse, drow, acc, dk, dv, qs, qs, ks, ks, H, H / Hk, L, L, scale, causal);
    kk.dq<<<132 * 8, 256>>>(acc, dq, nq, scale);
    cudaEventRecord(c2);
    CK(cudaEventSynchronize(c2));
    float f, bb;
    cudaEventElapsedTime(&f, a, b2);
    cudaEventElapsedTime(&bb, b2, c2);
    if (it >= 2) fms += f / 10, bms += bb / 10;
  }
  const double flops = 4.0 * B * H * (double)L * L * D * (causal ? 0.5 : 1.0);
  std::printf("time B%d H%d/%d L%d D%d causal%d: forward %.3f ms (%.0f TFLOP/s), backward %.3f ms (%.0f TFLOP/s)\n", B, H, Hk, L, D, causal,
              fms, flops / fms / 1e9, bms, 2.5 * flops / bms / 1e9);
  for (void* p : {(void*)q, (void*)k, (void*)v, (void*)o, (void*)go, (void*)dq, (void*)dk, (void*)dv, (void*)lse, (void*)drow, (void*)acc})
    cudaFree(p);
}

int main() {
  std::mt19937 rng(7);
  const Case cases[] = {
      {1, 2, 2, 64, 64, 64, 0, 0, 0},    {2, 4, 2, 100, 100, 64, 1, 0, 1}, {1, 4, 1, 77, 77, 128, 1, 0, 1}, {2, 2, 2, 130, 130, 128, 0, 0, 0},
      {1, 2, 2, 50, 90, 64, 0, 0, 0},    {1, 2, 2, 90, 50, 64, 1, 0, 0},   {1, 2, 2, 70, 70, 24, 1, 0, 0},  {1, 2, 2, 40, 40, 8, 0, 1, 0},
      {2, 4, 2, 100, 100, 64, 1, 1, 1},  {1, 2, 1, 129, 129, 128, 1, 1, 0}, {1, 2, 2, 66, 66, 64, 1, 0, 2}, {1, 3, 3, 200, 200, 128, 1, 0, 1},
  };
  bool ok = true;
  if (!std::getenv("FHC_TIMING_ONLY")) {  // (under a profiler: the timing's launches alone)
    for (const Case& c : cases) ok = run_case(c, rng) && ok;
    std::printf(ok ? "all cases ok\n" : "SOME CASES FAILED\n");
  }
  timing(4, 16, 16, 2048, 128, 1);
  timing(4, 16, 4, 2048, 128, 1);
  timing(16, 8, 8, 512, 64, 1);
  timing(16, 8, 8, 512, 64, 0);
  return ok ? 0 : 1;
}
