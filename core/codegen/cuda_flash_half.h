// FlashAttention-2 for bfloat16 and float16 on the tensor cores (mma.sync m16n8k16, float32
// accumulation, ldmatrix from padded shared memory, cp.async staging), compiled by NVRTC into the
// attention module after the prelude, for each (type, head size) the schedule's attention calls
// use (LS_FLASH_HALF_FWD / LS_FLASH_HALF_BWD at the end). Self-contained: no system header, no
// prelude name; needs sm_80 or newer (an older GPU traps).
//
// Forward: a block of 4 warps takes 128 query rows of one (batch, head), 32 a warp (two m16
// tiles, so each K and V fragment read from shared memory feeds two mma); it walks the keys 64 at a time, S = Q K^T on the tensor cores, an online
// softmax in the log2 domain (row maximum over the 4 lanes of a quad), P rounded to the storage
// type as the A operand of P V (the accumulator layout of two score tiles is an A fragment). V's
// tile is fetched (cp.async) while the scores are made, the next K tile while P V runs. Output
// through its view (staged in shared memory, 16-byte stores), log-sum-exp (natural log) [B, H, L].
// Backward (FlashAttention-2's): a preprocess kernel makes D_i = dO_i . O_i and zeroes the float32
// dQ accumulator; the main kernel takes 64 keys of one (batch, key head), 16 a warp, and for every
// query head of its group and every query tile of 64 recomputes S^T = K Q^T, P^T from the saved
// log-sum-exp, dV += P^T dO, dP^T = V dO^T, dS^T = P^T (dP^T - D), dK += dS^T Q, then dS^T goes
// through shared memory for dQ += dS K (float32 atomics); a last kernel scales dQ into the
// storage type. Grouped-query attention: query head h reads key/value head h / group.
// Head sizes: multiples of 8 up to 128 (padded to 16 with zeros in shared memory).
// Operands are read through element strides (batch, head, row, element); rows with unit element
// stride, 8-element-aligned strides and a 16-byte-aligned start take 16-byte copies, others
// element by element.

struct LsFhView {
  long long sb, sh, sl, se;
};

#define LS_FH_BM 64  // a backward query tile
#define LS_FH_BN 64  // keys a forward step takes, and a backward block's keys (16 a warp)
#ifndef LS_FH_FWD_MT
#define LS_FH_FWD_MT 2  // m16 tiles of queries a forward warp takes
#endif
#define LS_FH_FWD_BM (64 * LS_FH_FWD_MT)  // query rows a forward block (4 warps) takes
#define LS_FH_INF __int_as_float(0x7f800000)

template <int KIND> struct LsFhType;  // 0: bfloat16, 1: float16
template <> struct LsFhType<0> {
  static __device__ __forceinline__ float to_float(unsigned short h) { return __uint_as_float(static_cast<unsigned>(h) << 16); }
  static __device__ __forceinline__ unsigned short from_float(float f) {
    unsigned short r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
    return r;
  }
  // (lo, hi) rounded into one register, lo in the low half (the lower column of an mma operand)
  static __device__ __forceinline__ unsigned pack(float lo, float hi) {
    unsigned r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
  }
  static __device__ __forceinline__ void mma(float* c, const unsigned* a, unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};
template <> struct LsFhType<1> {
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
  static __device__ __forceinline__ void mma(float* c, const unsigned* a, unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

static __device__ __forceinline__ unsigned ls_fh_smem(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }
// Four 8x8 matrices of 16-bit elements; lane l gives the address of row l % 8 of matrix l / 8.
static __device__ __forceinline__ void ls_fh_ldsm4(unsigned* r, const unsigned short* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(ls_fh_smem(p)));
}
static __device__ __forceinline__ void ls_fh_ldsm4_t(unsigned* r, const unsigned short* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(ls_fh_smem(p)));
}
static __device__ __forceinline__ void ls_fh_cp16(unsigned short* dst, const unsigned short* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(ls_fh_smem(dst)), "l"(src));
}
static __device__ __forceinline__ void ls_fh_cp_commit() { asm volatile("cp.async.commit_group;"); }
static __device__ __forceinline__ void ls_fh_cp_wait() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }

// Fragment helpers, for a warp's 16 rows at shared row r0 (row stride LDS elements):
// A operand (16 x 16, row major, rows r0.., columns c0..) from a tile stored [row][col].
template <int LDS>
static __device__ __forceinline__ void ls_fh_a(unsigned* a, const unsigned short* s, int r0, int c0) {
  const int lane = threadIdx.x & 31, m = lane >> 3;
  ls_fh_ldsm4(a, s + (r0 + (m & 1) * 8 + (lane & 7)) * LDS + c0 + (m >> 1) * 8);
}
// A operand (16 x 16: A[m][k]) from a tile stored transposed, [k][m]: k rows k0.., m columns m0..
template <int LDS>
static __device__ __forceinline__ void ls_fh_a_t(unsigned* a, const unsigned short* s, int k0, int m0) {
  const int lane = threadIdx.x & 31, m = lane >> 3;
  ls_fh_ldsm4_t(a, s + (k0 + (m >> 1) * 8 + (lane & 7)) * LDS + m0 + (m & 1) * 8);
}
// B operands of two n-tiles (n0.. and n0 + 8.., k 16 from k0) from a tile stored [n][k]:
// b[0], b[1] for the first n-tile, b[2], b[3] for the second.
template <int LDS>
static __device__ __forceinline__ void ls_fh_b_nk(unsigned* b, const unsigned short* s, int n0, int k0) {
  const int lane = threadIdx.x & 31, m = lane >> 3;
  ls_fh_ldsm4(b, s + (n0 + (m >> 1) * 8 + (lane & 7)) * LDS + k0 + (m & 1) * 8);
}
// The same from a tile stored [k][n].
template <int LDS>
static __device__ __forceinline__ void ls_fh_b_kn(unsigned* b, const unsigned short* s, int k0, int n0) {
  const int lane = threadIdx.x & 31, m = lane >> 3;
  ls_fh_ldsm4_t(b, s + (k0 + (m & 1) * 8 + (lane & 7)) * LDS + n0 + (m >> 1) * 8);
}

// Whether a block's operand rows take 16-byte copies.
static __device__ __forceinline__ bool ls_fh_vec(const unsigned short* base, LsFhView v) {
  return v.se == 1 && (v.sl & 7) == 0 && (reinterpret_cast<unsigned long long>(base) & 15) == 0;
}
// Rows row0 .. row0 + ROWS of an operand (base: its (batch, head) start) into a shared tile of
// row stride LDS: columns past D and rows past n as zeros. cp.async where vec (the caller waits).
template <int KIND, int D, int DP, int LDS, int ROWS, int THREADS>
static __device__ __forceinline__ void ls_fh_load(unsigned short* s, const unsigned short* base, LsFhView v, long long row0, long long n,
                                                  bool vec) {
  constexpr int CH = DP / 8;  // 16-byte chunks a row
  for (int t = threadIdx.x; t < ROWS * CH; t += THREADS) {
    const int r = t / CH, c = t % CH;
    unsigned short* dst = s + r * LDS + c * 8;
    const long long row = row0 + r;
    if (c * 8 >= D || row >= n) {
      *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
    } else if (vec) {
      ls_fh_cp16(dst, base + row * v.sl + c * 8);
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) dst[e] = base[row * v.sl + (c * 8 + e) * v.se];
    }
  }
}
// A shared tile's rows (those below n, columns below D) out through a view.
template <int D, int DP, int LDS, int ROWS, int THREADS>
static __device__ __forceinline__ void ls_fh_store(const unsigned short* s, unsigned short* base, LsFhView v, long long row0, long long n,
                                                   bool vec) {
  constexpr int CH = D / 8;
  for (int t = threadIdx.x; t < ROWS * CH; t += THREADS) {
    const int r = t / CH, c = t % CH;
    const long long row = row0 + r;
    if (row >= n) continue;
    const unsigned short* src = s + r * LDS + c * 8;
    if (vec) {
      *reinterpret_cast<uint4*>(base + row * v.sl + c * 8) = *reinterpret_cast<const uint4*>(src);
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) base[row * v.sl + (c * 8 + e) * v.se] = src[e];
    }
  }
}

// 2^x as the hardware's approximation (ex2.approx.ftz: a couple of ulp; 2^-inf = 0), as
// FlashAttention-2's exp2f under --use_fast_math: P is rounded to 16 bits before it is used.
static __device__ __forceinline__ float ls_fh_exp2(float x) {
#ifdef LS_FH_LIBM_EXP2
  return exp2f(x);
#else
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#endif
}
static __device__ __forceinline__ float ls_fh_quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
static __device__ __forceinline__ float ls_fh_quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// Dynamic shared memory of the forward: a Q tile of LS_FH_FWD_BM rows, K and V tiles of
// LS_FH_BN rows. Each warp takes LS_FH_FWD_MT m16 tiles of queries (32 rows): every K and V
// fragment read from shared memory feeds that many mma, and Q's fragments are read again for
// each key block instead of living in registers (FlashAttention-2's 128 x 64 block of 4 warps).
template <int KIND, int D>
static __device__ __forceinline__ void ls_fh_fwd(const unsigned short* q, const unsigned short* k, const unsigned short* v, unsigned short* o,
                                                 float* lse, LsFhView qs, LsFhView ks, LsFhView vs, LsFhView os, long long H,
                                                 long long group, long long L, long long S, float scale_log2, int causal) {
#if __CUDA_ARCH__ >= 800
  typedef LsFhType<KIND> T;
  constexpr int DP = (D + 15) / 16 * 16, LDS = DP + 8, NT = DP / 8, MT = LS_FH_FWD_MT, BM = LS_FH_FWD_BM;
  extern __shared__ __align__(16) unsigned short ls_fh_shared[];
  unsigned short *sQ = ls_fh_shared, *sK = sQ + BM * LDS, *sV = sK + LS_FH_BN * LDS;
  const long long mtiles = (L + BM - 1) / BM;
  const long long bh = blockIdx.x / mtiles;
  const long long mt = mtiles - 1 - blockIdx.x % mtiles;  // the longest (causal) tiles first
  const long long b = bh / H, h = bh % H, hk = h / group;
  const long long m0 = mt * BM;
  const unsigned short* qb = q + b * qs.sb + h * qs.sh;
  const unsigned short* kb = k + b * ks.sb + hk * ks.sh;
  const unsigned short* vb = v + b * vs.sb + hk * vs.sh;
  const bool qvec = ls_fh_vec(qb, qs), kvec = ls_fh_vec(kb, ks), vvec = ls_fh_vec(vb, vs);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
  const int wr = warp * 16 * MT;  // this warp's first row in the tile
  const long long kend = causal ? min(S, m0 + BM) : S;  // keys this tile sees
  const int nblocks = static_cast<int>((kend + LS_FH_BN - 1) / LS_FH_BN);

  ls_fh_load<KIND, D, DP, LDS, BM, 128>(sQ, qb, qs, m0, L, qvec);
  if (nblocks > 0) ls_fh_load<KIND, D, DP, LDS, LS_FH_BN, 128>(sK, kb, ks, 0, S, kvec);
  ls_fh_cp_commit();
  ls_fh_cp_wait();
  __syncthreads();

  float acc[MT][NT][4];
#pragma unroll
  for (int t = 0; t < MT; ++t)
#pragma unroll
    for (int n = 0; n < NT; ++n) acc[t][n][0] = acc[t][n][1] = acc[t][n][2] = acc[t][n][3] = 0.f;
  float mrow[MT][2], lrow[MT][2];
#pragma unroll
  for (int t = 0; t < MT; ++t)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mrow[t][r] = -LS_FH_INF;
      lrow[t][r] = 0.f;
    }

  for (int j = 0; j < nblocks; ++j) {
    const long long n0 = static_cast<long long>(j) * LS_FH_BN;
    ls_fh_load<KIND, D, DP, LDS, LS_FH_BN, 128>(sV, vb, vs, n0, S, vvec);
    ls_fh_cp_commit();
    float sc[MT][LS_FH_BN / 8][4];
#pragma unroll
    for (int t = 0; t < MT; ++t)
#pragma unroll
      for (int n = 0; n < LS_FH_BN / 8; ++n) sc[t][n][0] = sc[t][n][1] = sc[t][n][2] = sc[t][n][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < DP / 16; ++kk) {
      unsigned qf[MT][4];
#pragma unroll
      for (int t = 0; t < MT; ++t) ls_fh_a<LDS>(qf[t], sQ, wr + t * 16, kk * 16);
#pragma unroll
      for (int np = 0; np < LS_FH_BN / 16; ++np) {
        unsigned bf[4];
        ls_fh_b_nk<LDS>(bf, sK, np * 16, kk * 16);
#pragma unroll
        for (int t = 0; t < MT; ++t) {
          T::mma(sc[t][2 * np], qf[t], bf[0], bf[1]);
          T::mma(sc[t][2 * np + 1], qf[t], bf[2], bf[3]);
        }
      }
    }
    // scaled into the log2 domain; keys past S and (causal) past the row masked
    const bool edge = n0 + LS_FH_BN > S || (causal && n0 + LS_FH_BN - 1 > m0 + wr);
    const int krem = static_cast<int>(min(S - n0, static_cast<long long>(LS_FH_BN)));  // keys of this block below S
    const int kdiag = static_cast<int>(max(min(m0 + wr - n0, static_cast<long long>(LS_FH_BN)), -4096LL));  // row - key offset of the warp's first row
#pragma unroll
    for (int t = 0; t < MT; ++t) {
#pragma unroll
      for (int n = 0; n < LS_FH_BN / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float x = sc[t][n][e] * scale_log2;
          if (edge) {
            // key n0 + kr, against S and the row m0 + wr + t * 16 + g + 8 * (e >> 1) (within int: a
            // block's keys and rows)
            const int kr = n * 8 + 2 * c + (e & 1);
            if (kr >= krem || (causal && kr > kdiag + t * 16 + g + 8 * (e >> 1))) x = -LS_FH_INF;
          }
          sc[t][n][e] = x;
        }
      float alpha[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float mx = mrow[t][r];
#pragma unroll
        for (int n = 0; n < LS_FH_BN / 8; ++n) mx = fmaxf(mx, fmaxf(sc[t][n][2 * r], sc[t][n][2 * r + 1]));
        mx = ls_fh_quad_max(mx);
        const float use = mx == -LS_FH_INF ? 0.f : mx;  // a row with no key yet: nothing to rescale
        alpha[r] = ls_fh_exp2(mrow[t][r] - use);
        mrow[t][r] = mx;
        float sum = 0.f;
#pragma unroll
        for (int n = 0; n < LS_FH_BN / 8; ++n) {
          sc[t][n][2 * r] = ls_fh_exp2(sc[t][n][2 * r] - use);
          sc[t][n][2 * r + 1] = ls_fh_exp2(sc[t][n][2 * r + 1] - use);
          sum += sc[t][n][2 * r] + sc[t][n][2 * r + 1];
        }
        lrow[t][r] = lrow[t][r] * alpha[r] + sum;  // this lane's part; the quad's parts are summed at the end
      }
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        acc[t][n][0] *= alpha[0];
        acc[t][n][1] *= alpha[0];
        acc[t][n][2] *= alpha[1];
        acc[t][n][3] *= alpha[1];
      }
    }
    ls_fh_cp_wait();  // V
    __syncthreads();  // every warp is past its scores: K's tile may be replaced
    if (j + 1 < nblocks) ls_fh_load<KIND, D, DP, LDS, LS_FH_BN, 128>(sK, kb, ks, n0 + LS_FH_BN, S, kvec);
    ls_fh_cp_commit();
#pragma unroll
    for (int kk = 0; kk < LS_FH_BN / 16; ++kk) {
      unsigned pa[MT][4];
#pragma unroll
      for (int t = 0; t < MT; ++t) {
        pa[t][0] = T::pack(sc[t][2 * kk][0], sc[t][2 * kk][1]);
        pa[t][1] = T::pack(sc[t][2 * kk][2], sc[t][2 * kk][3]);
        pa[t][2] = T::pack(sc[t][2 * kk + 1][0], sc[t][2 * kk + 1][1]);
        pa[t][3] = T::pack(sc[t][2 * kk + 1][2], sc[t][2 * kk + 1][3]);
      }
#pragma unroll
      for (int dp = 0; dp < DP / 16; ++dp) {
        unsigned bf[4];
        ls_fh_b_kn<LDS>(bf, sV, kk * 16, dp * 16);
#pragma unroll
        for (int t = 0; t < MT; ++t) {
          T::mma(acc[t][2 * dp], pa[t], bf[0], bf[1]);
          T::mma(acc[t][2 * dp + 1], pa[t], bf[2], bf[3]);
        }
      }
    }
    ls_fh_cp_wait();  // the next K
    __syncthreads();  // every warp is past P V: V's tile may be replaced
  }
  // O = acc / l, staged in Q's tile (this warp's rows), then out through its view
#pragma unroll
  for (int t = 0; t < MT; ++t) {
    float inv[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float l = ls_fh_quad_sum(lrow[t][r]);
      inv[r] = l > 0.f ? 1.f / l : 0.f;
      const long long row = m0 + wr + t * 16 + g + 8 * r;
      if (c == 0 && row < L) lse[bh * L + row] = l > 0.f ? (mrow[t][r] + log2f(l)) * 0.69314718055994531f : -LS_FH_INF;
    }
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int r = 0; r < 2; ++r)
        *reinterpret_cast<unsigned*>(sQ + (wr + t * 16 + g + 8 * r) * LDS + n * 8 + 2 * c) =
            T::pack(acc[t][n][2 * r] * inv[r], acc[t][n][2 * r + 1] * inv[r]);
  }
  __syncthreads();
  unsigned short* ob = o + b * os.sb + h * os.sh;
  ls_fh_store<D, DP, LDS, BM, 128>(sQ, ob, os, m0, L, ls_fh_vec(ob, os));
#else
  __trap();  // mma.sync m16n8k16 on 16-bit types needs sm_80
#endif
}

// D_i = dO_i . O_i (float32), and the row of the dQ accumulator zeroed: a warp a row.
template <int KIND, int D>
static __device__ __forceinline__ void ls_fh_bwd_pre(const unsigned short* go, const unsigned short* o, float* drow, float* dqacc, LsFhView gs,
                                                     LsFhView os, long long H, long long L) {
  typedef LsFhType<KIND> T;
  const long long rowid = static_cast<long long>(blockIdx.x) * 8 + (threadIdx.x >> 5);  // the launcher checks it against the rows
  const int lane = threadIdx.x & 31;
  const long long bh = rowid / L, i = rowid % L, b = bh / H, h = bh % H;
  const unsigned short* gr = go + b * gs.sb + h * gs.sh + i * gs.sl;
  const unsigned short* orow = o + b * os.sb + h * os.sh + i * os.sl;
  float s = 0.f;
  for (int e = lane; e < D; e += 32) {
    s += T::to_float(gr[e * gs.se]) * T::to_float(orow[e * os.se]);
    dqacc[rowid * D + e] = 0.f;
  }
#pragma unroll
  for (int off = 16; off; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
  if (lane == 0) drow[rowid] = s;
}

// dQ = scale * accumulator, into the storage type (contiguous [B, H, L, D]).
template <int KIND>
static __device__ __forceinline__ void ls_fh_bwd_dq(const float* dqacc, unsigned short* dq, long long n, float scale) {
  typedef LsFhType<KIND> T;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += static_cast<long long>(gridDim.x) * blockDim.x)
    dq[i] = T::from_float(dqacc[i] * scale);
}

// Dynamic shared memory of the backward: K, V, Q, dO tiles of 64 rows, dS^T (64 keys x 64
// queries), log-sum-exp (log2 domain) and D of the query tile.
template <int KIND, int D>
static __device__ __forceinline__ void ls_fh_bwd(const unsigned short* go, const unsigned short* q, const unsigned short* k,
                                                 const unsigned short* v, const float* lse, const float* drow, float* dqacc,
                                                 unsigned short* dk, unsigned short* dv, LsFhView gs, LsFhView qs, LsFhView ks, LsFhView vs,
                                                 long long H, long long group, long long L, long long S, float scale, int causal) {
#if __CUDA_ARCH__ >= 800
  typedef LsFhType<KIND> T;
  constexpr int DP = (D + 15) / 16 * 16, LDS = DP + 8, NT = DP / 8, LDP = LS_FH_BM + 8;
  constexpr float LOG2E = 1.4426950408889634f;
  extern __shared__ __align__(16) unsigned short ls_fh_shared[];
  unsigned short *sK = ls_fh_shared, *sV = sK + LS_FH_BN * LDS, *sQ = sV + LS_FH_BN * LDS, *sG = sQ + LS_FH_BM * LDS,
                 *sP = sG + LS_FH_BM * LDS;
  float* sL = reinterpret_cast<float*>(sP + LS_FH_BN * LDP);
  float* sD = sL + LS_FH_BM;
  const long long ntiles = (S + LS_FH_BN - 1) / LS_FH_BN;
  const long long bhk = blockIdx.x / ntiles, nt = blockIdx.x % ntiles;
  const long long Hk = H / group, b = bhk / Hk, hk = bhk % Hk;
  const long long n0 = nt * LS_FH_BN;
  const unsigned short* kb = k + b * ks.sb + hk * ks.sh;
  const unsigned short* vb = v + b * vs.sb + hk * vs.sh;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
  const float scale_log2 = scale * LOG2E;
  ls_fh_load<KIND, D, DP, LDS, LS_FH_BN, 128>(sK, kb, ks, n0, S, ls_fh_vec(kb, ks));
  ls_fh_load<KIND, D, DP, LDS, LS_FH_BN, 128>(sV, vb, vs, n0, S, ls_fh_vec(vb, vs));
  ls_fh_cp_commit();

  float dka[NT][4], dva[NT][4];
#pragma unroll
  for (int n = 0; n < NT; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) dka[n][e] = dva[n][e] = 0.f;
  const long long key[2] = {n0 + warp * 16 + g, n0 + warp * 16 + g + 8};
  const long long mfirst = causal ? n0 / LS_FH_BM : 0, mtiles = (L + LS_FH_BM - 1) / LS_FH_BM;

  for (long long h = hk * group; h < (hk + 1) * group; ++h) {
    const long long bh = b * H + h;
    const unsigned short* qb = q + b * qs.sb + h * qs.sh;
    const unsigned short* gb = go + b * gs.sb + h * gs.sh;
    const bool qvec = ls_fh_vec(qb, qs), gvec = ls_fh_vec(gb, gs);
    for (long long mt = mfirst; mt < mtiles; ++mt) {
      const long long m0 = mt * LS_FH_BM;
      ls_fh_load<KIND, D, DP, LDS, LS_FH_BM, 128>(sQ, qb, qs, m0, L, qvec);
      ls_fh_load<KIND, D, DP, LDS, LS_FH_BM, 128>(sG, gb, gs, m0, L, gvec);
      ls_fh_cp_commit();
      for (int t = threadIdx.x; t < LS_FH_BM; t += 128) {
        const long long i = m0 + t;
        sL[t] = i < L ? lse[bh * L + i] * LOG2E : LS_FH_INF;  // rows past L: P = 0
        sD[t] = i < L ? drow[bh * L + i] : 0.f;
      }
      ls_fh_cp_wait();
      __syncthreads();
      // S^T = K Q^T and dP^T = V dO^T: this warp's 16 keys x 64 queries
      float st[LS_FH_BM / 8][4], dpt[LS_FH_BM / 8][4];
#pragma unroll
      for (int n = 0; n < LS_FH_BM / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) st[n][e] = dpt[n][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < DP / 16; ++kk) {
        unsigned ka[4], va[4];
        ls_fh_a<LDS>(ka, sK, warp * 16, kk * 16);
        ls_fh_a<LDS>(va, sV, warp * 16, kk * 16);
#pragma unroll
        for (int np = 0; np < LS_FH_BM / 16; ++np) {
          unsigned bq[4], bg[4];
          ls_fh_b_nk<LDS>(bq, sQ, np * 16, kk * 16);
          ls_fh_b_nk<LDS>(bg, sG, np * 16, kk * 16);
          T::mma(st[2 * np], ka, bq[0], bq[1]);
          T::mma(st[2 * np + 1], ka, bq[2], bq[3]);
          T::mma(dpt[2 * np], va, bg[0], bg[1]);
          T::mma(dpt[2 * np + 1], va, bg[2], bg[3]);
        }
      }
      // P^T from the saved log-sum-exp; dS^T = P^T (dP^T - D)
#pragma unroll
      for (int n = 0; n < LS_FH_BM / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int qi = n * 8 + 2 * c + (e & 1);
          const long long kj = key[e >> 1];
          float p = ls_fh_exp2(st[n][e] * scale_log2 - sL[qi]);
          if (kj >= S || (causal && kj > m0 + qi)) p = 0.f;
          st[n][e] = p;
          dpt[n][e] = p * (dpt[n][e] - sD[qi]);
        }
      // dV += P^T dO, dK += dS^T Q (k: the tile's queries)
#pragma unroll
      for (int kk = 0; kk < LS_FH_BM / 16; ++kk) {
        const unsigned pa[4] = {T::pack(st[2 * kk][0], st[2 * kk][1]), T::pack(st[2 * kk][2], st[2 * kk][3]),
                                T::pack(st[2 * kk + 1][0], st[2 * kk + 1][1]), T::pack(st[2 * kk + 1][2], st[2 * kk + 1][3])};
        const unsigned da[4] = {T::pack(dpt[2 * kk][0], dpt[2 * kk][1]), T::pack(dpt[2 * kk][2], dpt[2 * kk][3]),
                                T::pack(dpt[2 * kk + 1][0], dpt[2 * kk + 1][1]), T::pack(dpt[2 * kk + 1][2], dpt[2 * kk + 1][3])};
        // dS^T into shared memory for dQ: this lane's elements, rows of keys
        *reinterpret_cast<unsigned*>(sP + (warp * 16 + g) * LDP + kk * 16 + 2 * c) = da[0];
        *reinterpret_cast<unsigned*>(sP + (warp * 16 + g + 8) * LDP + kk * 16 + 2 * c) = da[1];
        *reinterpret_cast<unsigned*>(sP + (warp * 16 + g) * LDP + kk * 16 + 8 + 2 * c) = da[2];
        *reinterpret_cast<unsigned*>(sP + (warp * 16 + g + 8) * LDP + kk * 16 + 8 + 2 * c) = da[3];
#pragma unroll
        for (int dp = 0; dp < DP / 16; ++dp) {
          unsigned bg[4], bq[4];
          ls_fh_b_kn<LDS>(bg, sG, kk * 16, dp * 16);
          ls_fh_b_kn<LDS>(bq, sQ, kk * 16, dp * 16);
          T::mma(dva[2 * dp], pa, bg[0], bg[1]);
          T::mma(dva[2 * dp + 1], pa, bg[2], bg[3]);
          T::mma(dka[2 * dp], da, bq[0], bq[1]);
          T::mma(dka[2 * dp + 1], da, bq[2], bq[3]);
        }
      }
      __syncthreads();  // dS^T complete
      // dQ (this warp's 16 queries) += dS K over the block's 64 keys, into the float32 accumulator
      unsigned sa[LS_FH_BN / 16][4];
#pragma unroll
      for (int kk = 0; kk < LS_FH_BN / 16; ++kk) ls_fh_a_t<LDP>(sa[kk], sP, kk * 16, warp * 16);
      const long long qrow[2] = {m0 + warp * 16 + g, m0 + warp * 16 + g + 8};
      float* dqb = dqacc + bh * L * D;
#pragma unroll
      for (int dp = 0; dp < DP / 16; ++dp) {
        float a2[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
        for (int kk = 0; kk < LS_FH_BN / 16; ++kk) {
          unsigned bk[4];
          ls_fh_b_kn<LDS>(bk, sK, kk * 16, dp * 16);
          T::mma(a2[0], sa[kk], bk[0], bk[1]);
          T::mma(a2[1], sa[kk], bk[2], bk[3]);
        }
#pragma unroll
        for (int hn = 0; hn < 2; ++hn)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int col = dp * 16 + hn * 8 + 2 * c + (e & 1);
            const long long r = qrow[e >> 1];
            if (col < D && r < L) atomicAdd(dqb + r * D + col, a2[hn][e]);
          }
      }
      __syncthreads();  // the tiles may be replaced
    }
  }
  ls_fh_cp_wait();  // K and V, where no query tile ran
  __syncthreads();
  // dK = scale dS^T Q, dV: staged in K's and V's tiles (this warp's rows), then out contiguous
#pragma unroll
  for (int n = 0; n < NT; ++n)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      *reinterpret_cast<unsigned*>(sK + (warp * 16 + g + 8 * r) * LDS + n * 8 + 2 * c) = T::pack(dka[n][2 * r] * scale, dka[n][2 * r + 1] * scale);
      *reinterpret_cast<unsigned*>(sV + (warp * 16 + g + 8 * r) * LDS + n * 8 + 2 * c) = T::pack(dva[n][2 * r], dva[n][2 * r + 1]);
    }
  __syncthreads();
  const LsFhView out{Hk * S * D, S * D, D, 1};
  unsigned short* dkb = dk + b * out.sb + hk * out.sh;
  unsigned short* dvb = dv + b * out.sb + hk * out.sh;
  ls_fh_store<D, DP, LDS, LS_FH_BN, 128>(sK, dkb, out, n0, S, ls_fh_vec(dkb, out));
  ls_fh_store<D, DP, LDS, LS_FH_BN, 128>(sV, dvb, out, n0, S, ls_fh_vec(dvb, out));
#else
  __trap();
#endif
}

// The kernels of one (type, head size): NAME is bf16 or f16, KIND its LsFhType. Dynamic shared
// memory (the launcher's, exec/flash_attention_cuda.h): forward (LS_FH_FWD_BM + 2 x 64) x (DP + 8) halves,
// backward 4 x 64 x (DP + 8) + 64 x 72 halves + 128 floats, DP the head size rounded up to 16.
#define LS_FLASH_HALF_FWD(NAME, KIND, D)                                                                                       \
  extern "C" __global__ void __launch_bounds__(128) ls_flash_half_fwd_##NAME##_##D(                                          \
      const unsigned short* q, const unsigned short* k, const unsigned short* v, unsigned short* o, float* lse, LsFhView qs,   \
      LsFhView ks, LsFhView vs, LsFhView os, long long H, long long group, long long L, long long S, float scale_log2,        \
      int causal) {                                                                                                            \
    ls_fh_fwd<KIND, D>(q, k, v, o, lse, qs, ks, vs, os, H, group, L, S, scale_log2, causal);                                  \
  }
#define LS_FLASH_HALF_BWD(NAME, KIND, D)                                                                                       \
  extern "C" __global__ void __launch_bounds__(256) ls_flash_half_bwd_pre_##NAME##_##D(                                      \
      const unsigned short* go, const unsigned short* o, float* drow, float* dqacc, LsFhView gs, LsFhView os, long long H,    \
      long long L, long long rows) {                                                                                           \
    if (static_cast<long long>(blockIdx.x) * 8 + (threadIdx.x >> 5) < rows) ls_fh_bwd_pre<KIND, D>(go, o, drow, dqacc, gs, os, H, L); \
  }                                                                                                                            \
  extern "C" __global__ void __launch_bounds__(128) ls_flash_half_bwd_##NAME##_##D(                                          \
      const unsigned short* go, const unsigned short* q, const unsigned short* k, const unsigned short* v, const float* lse,   \
      const float* drow, float* dqacc, unsigned short* dk, unsigned short* dv, LsFhView gs, LsFhView qs, LsFhView ks,         \
      LsFhView vs, long long H, long long group, long long L, long long S, float scale, int causal) {                          \
    ls_fh_bwd<KIND, D>(go, q, k, v, lse, drow, dqacc, dk, dv, gs, qs, ks, vs, H, group, L, S, scale, causal);               \
  }                                                                                                                            \
  extern "C" __global__ void __launch_bounds__(256) ls_flash_half_bwd_dq_##NAME##_##D(const float* dqacc, unsigned short* dq,  \
                                                                                      long long n, float scale) {             \
    ls_fh_bwd_dq<KIND>(dqacc, dq, n, scale);                                                                                   \
  }
