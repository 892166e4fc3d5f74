// GEMM templates for bfloat16 and float16 on the tensor cores: max-autotune's candidates beside
// cuBLASLt for a half-precision mm or addmm (codegen/cuda_gemm_template.h writes a kernel that
// calls ls_gh_gemm with its sizes, tile and epilogue). C (M x N) = A @ B (+ a bias row), products
// accumulated in float32 (mma.sync m16n8k16), the bias added in float32 and the sum rounded once to
// the storage type, as cuBLASLt's bias epilogue; then the element function of the pointwise kernel
// after it (its epilogue) on each element just stored.
//
// A block of WM x WN warps takes a BM x BN tile of C, each warp (BM / WM) x (BN / WN) of it. K goes
// by BK through a STAGES-deep ring of shared tiles filled with cp.async (16 bytes a copy, zeros past
// the edges); fragments come out with ldmatrix (.trans where an operand is stored the other way).
// Shared rows are XOR-swizzled by 16-byte chunk, so the 8 rows an ldmatrix reads fall in 8
// different bank groups without padding: every tile of cuda_gemm_candidates fits the 48 KB of
// static shared memory. Blocks go in Triton's grouped order (8 block rows walk B's columns together
// for L2). Operands: A stored M x K (or K x M where TA), B stored K x N (or N x K where TB), their
// contiguous sizes multiples of 8 and their starts 16-byte aligned (cuda_gemm_problem checks).
// Self-contained: no system header, no prelude name; needs sm_80 (an older GPU traps). Written once
// into a module however many templates it holds (the guard below).
// C is not __restrict__: the epilogue reads the element just stored through its own pointer to
// the same buffer (C99 restrict would let the compiler move that load above the store).
#ifndef LS_GEMM_HALF_DEFINED
#define LS_GEMM_HALF_DEFINED

template <int KIND> struct LsGhType;  // 0: bfloat16, 1: float16
template <> struct LsGhType<0> {
  static __device__ __forceinline__ float to_float(unsigned short h) { return __uint_as_float(static_cast<unsigned>(h) << 16); }
  static __device__ __forceinline__ unsigned short from_float(float f) {
    unsigned short r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
    return r;
  }
  static __device__ __forceinline__ unsigned pack(float lo, float hi) {  // lo in the low half
    unsigned r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
  }
  static __device__ __forceinline__ void mma(float* c, const unsigned* a, const unsigned* b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};
template <> struct LsGhType<1> {
  static __device__ __forceinline__ float to_float(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
  }
  static __device__ __forceinline__ unsigned short from_float(float f) {
    unsigned short r;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(f));
    return r;
  }
  static __device__ __forceinline__ unsigned pack(float lo, float hi) {
    unsigned r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
  }
  static __device__ __forceinline__ void mma(float* c, const unsigned* a, const unsigned* b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

static __device__ __forceinline__ unsigned ls_gh_smem(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }
// Four 8x8 matrices of 16-bit elements; lane l gives the address of row l % 8 of matrix l / 8.
static __device__ __forceinline__ void ls_gh_ldsm4(unsigned* r, const unsigned short* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(ls_gh_smem(p)));
}
static __device__ __forceinline__ void ls_gh_ldsm4_t(unsigned* r, const unsigned short* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(ls_gh_smem(p)));
}
// 16 bytes global -> shared, or 16 zeros where !ok (src is then any valid address).
static __device__ __forceinline__ void ls_gh_cp16(unsigned short* dst, const unsigned short* src, bool ok) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(ls_gh_smem(dst)), "l"(src), "r"(ok ? 16 : 0));
}
static __device__ __forceinline__ void ls_gh_commit() { asm volatile("cp.async.commit_group;"); }
template <int N> static __device__ __forceinline__ void ls_gh_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// Where chunk c (8 elements) of row r of a shared tile with rows of L elements lives (in elements):
// the chunk index XOR-ed with bits of the row, so 8 consecutive rows at one chunk hit 8 bank groups.
template <int L> static __device__ __forceinline__ int ls_gh_at(int r, int c) {
  constexpr int C = L / 8;
  const int s = C >= 8 ? c ^ (r & 7) : C == 4 ? c ^ ((r >> 1) & 3) : C == 2 ? c ^ ((r >> 2) & 1) : c;
  return r * L + s * 8;
}

template <int KIND, int BM, int BN, int BK, int WM, int WN, int STAGES, bool TA, bool TB, bool BIAS, int M, int N, int K, typename Epilogue>
static __device__ __forceinline__ void ls_gh_gemm(const unsigned short* __restrict__ A, const unsigned short* __restrict__ B,
                                                  const unsigned short* __restrict__ bias, unsigned short* C, Epilogue epilogue) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  using T = LsGhType<KIND>;
  constexpr int THREADS = WM * WN * 32;
  constexpr int WTM = BM / WM, WTN = BN / WN;  // a warp's part of the tile
  constexpr int MT = WTM / 16, NT = WTN / 8;   // its mma tiles
  static_assert(MT >= 1 && NT >= 2 && NT % 2 == 0 && BK % 16 == 0, "tile");
  constexpr int A_LEN = TA ? BM : BK, B_LEN = TB ? BK : BN;  // shared row lengths
  constexpr int A_TILE = BM * BK, B_TILE = BN * BK;
  __shared__ __align__(128) unsigned short ls_gh_s[STAGES * (A_TILE + B_TILE)];
  unsigned short* const As = ls_gh_s;
  unsigned short* const Bs = ls_gh_s + STAGES * A_TILE;

  constexpr int GM = (M + BM - 1) / BM, GN = (N + BN - 1) / BN, GROUP = 8;
  const int pid = blockIdx.x, group = pid / (GROUP * GN), first = group * GROUP;
  const int rows = GM - first < GROUP ? GM - first : GROUP;
  const int m0 = (first + (pid % (GROUP * GN)) % rows) * BM, n0 = ((pid % (GROUP * GN)) / rows) * BN;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, q = lane >> 3;
  const int wm0 = (warp / WN) * WTM, wn0 = (warp % WN) * WTN;

  auto load = [&](int stage, int kt) {
    const int k0 = kt * BK;
    unsigned short* as = As + stage * A_TILE;
    unsigned short* bs = Bs + stage * B_TILE;
#pragma unroll
    for (int j = 0; j < (A_TILE / 8 + THREADS - 1) / THREADS; ++j) {
      const int i = threadIdx.x + j * THREADS;
      if (A_TILE / 8 % THREADS != 0 && i >= A_TILE / 8) break;
      const int r = i / (A_LEN / 8), c = i % (A_LEN / 8);
      const int gr = (TA ? k0 : m0) + r, gc = (TA ? m0 : k0) + c * 8;
      const bool ok = gr < (TA ? K : M) && gc < (TA ? M : K);
      ls_gh_cp16(as + ls_gh_at<A_LEN>(r, c), ok ? A + static_cast<long long>(gr) * (TA ? M : K) + gc : A, ok);
    }
#pragma unroll
    for (int j = 0; j < (B_TILE / 8 + THREADS - 1) / THREADS; ++j) {
      const int i = threadIdx.x + j * THREADS;
      if (B_TILE / 8 % THREADS != 0 && i >= B_TILE / 8) break;
      const int r = i / (B_LEN / 8), c = i % (B_LEN / 8);
      const int gr = (TB ? n0 : k0) + r, gc = (TB ? k0 : n0) + c * 8;
      const bool ok = gr < (TB ? N : K) && gc < (TB ? K : N);
      ls_gh_cp16(bs + ls_gh_at<B_LEN>(r, c), ok ? B + static_cast<long long>(gr) * (TB ? K : N) + gc : B, ok);
    }
  };

  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.f;

  constexpr int KT = (K + BK - 1) / BK;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < KT) load(s, s);
    ls_gh_commit();
  }
  for (int kt = 0; kt < KT; ++kt) {
    ls_gh_wait<STAGES - 2>();  // tile kt has landed (this thread's copies) ...
    __syncthreads();           // ... everyone's, and the stage refilled next was read by all
    if (kt + STAGES - 1 < KT) load((kt + STAGES - 1) % STAGES, kt + STAGES - 1);
    ls_gh_commit();
    const unsigned short* as = As + (kt % STAGES) * A_TILE;
    const unsigned short* bs = Bs + (kt % STAGES) * B_TILE;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      unsigned a[MT][4], b[NT][2];
#pragma unroll
      for (int i = 0; i < MT; ++i) {
        const int r0 = wm0 + i * 16;
        if (!TA) ls_gh_ldsm4(a[i], as + ls_gh_at<A_LEN>(r0 + (q & 1) * 8 + (lane & 7), (kk >> 3) + (q >> 1)));
        else ls_gh_ldsm4_t(a[i], as + ls_gh_at<A_LEN>(kk + (q >> 1) * 8 + (lane & 7), (r0 >> 3) + (q & 1)));
      }
#pragma unroll
      for (int j = 0; j < NT; j += 2) {
        const int c0 = wn0 + j * 8;
        unsigned r[4];
        if (TB) ls_gh_ldsm4(r, bs + ls_gh_at<B_LEN>(c0 + (q >> 1) * 8 + (lane & 7), (kk >> 3) + (q & 1)));
        else ls_gh_ldsm4_t(r, bs + ls_gh_at<B_LEN>(kk + (q & 1) * 8 + (lane & 7), (c0 >> 3) + (q >> 1)));
        b[j][0] = r[0], b[j][1] = r[1], b[j + 1][0] = r[2], b[j + 1][1] = r[3];
      }
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) T::mma(acc[i][j], a[i], b[j]);
    }
  }
  ls_gh_wait<0>();

  // Each thread holds pairs of neighbouring columns: (row g, cols 2t, 2t + 1) and row g + 8.
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int col = n0 + wn0 + j * 8 + (lane & 3) * 2;
      float b0 = 0.f, b1 = 0.f;
      if (BIAS) {
        if (col < N) b0 = T::to_float(bias[col]);
        if (col + 1 < N) b1 = T::to_float(bias[col + 1]);
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = m0 + wm0 + i * 16 + (lane >> 2) + h * 8;
        if (row >= M) continue;
        const long long at = static_cast<long long>(row) * N + col;
        const float v0 = acc[i][j][2 * h] + b0, v1 = acc[i][j][2 * h + 1] + b1;
        if (N % 2 == 0 && col < N) {
          *reinterpret_cast<unsigned*>(C + at) = T::pack(v0, v1);
          epilogue(at);
          epilogue(at + 1);
        } else {
          if (col < N) C[at] = T::from_float(v0), epilogue(at);
          if (col + 1 < N) C[at + 1] = T::from_float(v1), epilogue(at + 1);
        }
      }
    }
#else
  __trap();  // mma.sync m16n8k16 on 16-bit types needs sm_80
#endif
}

#endif  // LS_GEMM_HALF_DEFINED
