// The CPU library calls' algorithms, written once: a matrix multiply cut into blocks (and addmm's
// bias), convolution (im2col + GEMM, its 1x1 and depthwise forms, its backward) and scaled
// dot-product attention (forward and backward, blocked where rows are contiguous). The app runs
// them (exec/extern_kernels.cpp: dispatch, thread pool, BLAS choice), and every exported CPU
// package carries this very file (export/package.cpp writes it beside runtime.h, which includes
// it), so a fix here reaches both. Hence no Lowerscope include: plain C++17, namespace lsrt.
// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <tuple>
#include <utility>
#include <vector>

namespace lsrt {
namespace cpu {

// What differs between the app and a package is the host the calls run on: a `Host` type
// parameter with static members
//   int threads()                        threads a call may split across (1: run it whole)
//   void tasks(int64_t n, const F& f)    f(i) for every i in [0, n) on those threads, the caller
//                                        taking part; returns when all are done
//   void gemm(M, N, K, alpha, A, lda, ta, B, ldb, tb, beta, C, ldc)
//                                        one single-threaded product C = alpha op(A) op(B) + beta C,
//                                        row major, op(X) = X^T where t
//   float* scratch(size_t n, int slot)   a per-thread buffer of n floats kept between calls (a
//                                        fresh one is a fresh mapping: page faults on every call,
//                                        which cost more than a convolution); slot 0 or 1
// The app's: its pool on the kernels' OpenMP team, OpenBLAS (or loops); a package's: OpenMP and
// CBLAS (package_runtime.h).

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// fn(begin, end) over [0, n) on the host's threads when the work is large enough.
template <class Host, class F>
void parallel_for(int64_t n, int64_t work, F fn) {
  const int64_t parts = std::min<int64_t>(Host::threads(), n);
  if (parts <= 1 || work < (1 << 16)) return fn(0, n);
  const int64_t chunk = ceil_div(n, parts);
  Host::tasks(parts, [&](int64_t t) {
    const int64_t b = t * chunk, e = std::min(n, b + chunk);
    if (b < e) fn(b, e);
  });
}

// ---- Matrix multiply

// How a product of `parts` blocks is cut: tr blocks of rows by tc of columns (tr * tc = parts, at
// least 16 rows and 16 columns a block), the cut whose blocks hold the fewest operand elements,
// (M / tr + N / tc) * K: each block's call packs its rows of A and its columns of B, so blocks of
// whole rows all pack the whole of B; of equal cuts, the one with the fewest blocks of rows. On
// 16 cores, 2048 x 1024 x 256 (the layernorm_gelu fixture's linear layer, OpenBLAS,
// tools/bench/gemm_variants.cpp): 16 blocks of rows 1.50 ms, 4 x 4 blocks 1.17, one call on
// OpenBLAS's own threads 1.37. {1, 1} when no cut fits.
inline std::pair<int64_t, int64_t> gemm_tiles(int64_t M, int64_t N, int64_t parts) {
  std::pair<int64_t, int64_t> best{1, 1};
  double best_cost = 0;
  for (int64_t tr = 1; tr <= parts; ++tr) {
    if (parts % tr) continue;
    const int64_t tc = parts / tr;
    if (M < tr * 16 || N < tc * 16) continue;
    const double cost = static_cast<double>(M) / tr + static_cast<double>(N) / tc;
    if (best.first * best.second == 1 || cost < best_cost) {  // ties: the taller blocks (B packed once for more rows)
      best = {tr, tc};
      best_cost = cost;
    }
  }
  return best;
}

// The heuristic's cut of an M x N x K product over `threads` threads: a block per 2^18
// multiply-adds, up to one a thread.
inline std::pair<int64_t, int64_t> heuristic_cut(int64_t M, int64_t N, int64_t K, int64_t threads) {
  return gemm_tiles(M, N, std::min<int64_t>(threads, std::max<int64_t>(1, M * N * K / (1 << 18))));
}

using BlockHook = std::function<void(int64_t m0, int64_t m1, int64_t n0, int64_t n1)>;  // rows m0..m1, columns n0..n1 of C
using RowHook = std::function<void(int64_t begin, int64_t end)>;                         // elements [begin, end) of C: rows, or a block of columns of one row

// C[M,N] = alpha * op(A)[M,K] @ op(B)[K,N] + beta * C, row major, dense operands, cut into
// rows x cols blocks (0 x 0: heuristic_cut's), one single-threaded call a block on the host's
// threads. `before` (C's initial value, a bias) and `after` (an epilogue, row by row) run on each
// block's thread around its call, while its elements are in cache; returns whether they did
// (false: the product was not cut, `before` ran on the whole first and the caller runs the
// epilogue on the whole).
template <class Host>
bool sgemm(int64_t M, int64_t N, int64_t K, float alpha, const float* A, bool ta, const float* B, bool tb, float beta, float* C,
           int64_t rows = 0, int64_t cols = 0, const BlockHook* before = nullptr, const RowHook* after = nullptr) {
  const int64_t lda = ta ? M : K, ldb = tb ? K : N, ldc = N;
  auto call = [&](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    const float* a = ta ? A + m0 : A + m0 * K;
    const float* b = tb ? B + n0 * K : B + n0;
    Host::gemm(m1 - m0, n1 - n0, K, alpha, a, lda, ta, b, ldb, tb, beta, C + m0 * N + n0, ldc);
  };
  if (rows <= 0 || cols <= 0) std::tie(rows, cols) = heuristic_cut(M, N, K, Host::threads());
  const int64_t tr = std::clamp<int64_t>(rows, 1, M), tc = std::clamp<int64_t>(cols, 1, N);
  if (tr * tc <= 1) {
    if (before) (*before)(0, M, 0, N);
    call(0, M, 0, N);
    return false;
  }
  const int64_t rb = ceil_div(ceil_div(M, tr), 16) * 16, cb = ceil_div(ceil_div(N, tc), 16) * 16;
  // A block's rows in calls of at least 64 rows and about 1 MiB of product, so that an epilogue
  // finds them in its core's cache (the library packs B once a call: 64 rows or more keep that
  // under 2% of the work).
  const int64_t step = after ? std::max<int64_t>(64, (1 << 18) / cb) : rb;
  Host::tasks(tr * tc, [&](int64_t t) {
    const int64_t mb = t / tc * rb, me = std::min(M, mb + rb), n0 = t % tc * cb, n1 = std::min(N, n0 + cb);
    if (n0 >= n1) return;
    for (int64_t m0 = mb; m0 < me; m0 += step) {
      const int64_t m1 = std::min(me, m0 + step);
      if (before) (*before)(m0, m1, n0, n1);
      call(m0, m1, n0, n1);
      if (after) {
        if (n0 == 0 && n1 == N) (*after)(m0 * N, m1 * N);
        else
          for (int64_t m = m0; m < m1; ++m) (*after)(m * N + n0, m * N + n1);
      }
    }
  });
  return true;
}

// addmm: y = beta * bias + alpha * op(a) @ op(b), the bias broadcast into y first, on each
// block's thread (uncut: on every core first). The bias varies along the rows (per_row; its rows
// row_stride apart) and/or the columns (per_col): one value, a row of N, a column of M, or [M, N].
template <class Host>
bool addmm(float* y, const float* bias, bool per_row, bool per_col, int64_t row_stride, int64_t M, int64_t N, int64_t K, const float* a,
           bool ta, const float* b, bool tb, float alpha, float beta, int64_t rows = 0, int64_t cols = 0, const RowHook* after = nullptr) {
  auto bias_rows = [=](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    for (int64_t i = i0; i < i1; ++i) {
      const float* src = bias + (per_row ? i * row_stride : 0);
      float* dst = y + i * N;
      if (per_col) std::memcpy(dst + j0, src + j0, static_cast<size_t>(j1 - j0) * sizeof(float));
      else std::fill(dst + j0, dst + j1, src[0]);
    }
  };
  const BlockHook before = [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if (i0 == 0 && i1 == M && j0 == 0 && j1 == N) parallel_for<Host>(M, M * N, [&](int64_t r0, int64_t r1) { bias_rows(r0, r1, 0, N); });
    else bias_rows(i0, i1, j0, j1);
  };
  return sgemm<Host>(M, N, K, alpha, a, ta, b, tb, beta, y, rows, cols, &before, after);
}

// ---- Convolution

// A 2-D convolution, NCHW, weight [O, C/G, KH, KW]: cols[r, p] is the input under kernel tap r
// (channel, kh, kw) at output position p (oh, ow).
template <class Host>
struct Conv {
  int64_t N, C, H, W, O, CG, KH, KW, OH, OW, G, sh, sw, ph, pw, dh, dw;
  int64_t OG() const { return O / G; }
  int64_t P() const { return OH * OW; }
  int64_t R() const { return CG * KH * KW; }
  // Every channel its own group with one filter (MobileNet's depthwise convolutions).
  bool depthwise() const { return CG == 1 && OG() == 1; }
  // A 1x1 window at stride 1 without padding reads the image itself: no columns to gather.
  bool pointwise() const { return KH == 1 && KW == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0; }

  // How many tasks `macs` multiply-adds are split into: at least 2^18 each (smaller ones cost
  // more in BLAS packing and hand-offs than they win: MobileNetV3's late layers at batch 1 took
  // 7.9 ms on 16 threads, 3.3 ms on 4), up to two per thread.
  static int64_t tasks(int64_t macs) { return std::clamp<int64_t>(macs >> 18, 1, 2 * static_cast<int64_t>(Host::threads())); }

  // Visits the taps r in [r0, r1) at the positions [p0, p1) one output row segment at a time:
  // f(r, p, n, at, step) covers positions p .. p+n-1, whose inputs are at, at + step, ... within
  // one image and group (at -1: padding). A row's segments are its left padding, its inside, its
  // right padding.
  template <typename F>
  void each_run(int64_t r0, int64_t r1, int64_t p0, int64_t p1, F f) const {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t ci = r / (KH * KW), kh = r / KW % KH, kw = r % KW;
      const int64_t off_w = kw * dw - pw;  // iw = ow * sw + off_w
      const int64_t ow_lo = off_w >= 0 ? 0 : ceil_div(-off_w, sw);
      const int64_t ow_hi = W - 1 - off_w < 0 ? 0 : std::min(OW, (W - 1 - off_w) / sw + 1);
      for (int64_t oh = p0 / OW; oh * OW < p1; ++oh) {
        const int64_t a = std::max(p0, oh * OW) - oh * OW, b = std::min(p1, (oh + 1) * OW) - oh * OW;
        const int64_t ih = oh * sh - ph + kh * dh;
        const int64_t base = oh * OW;
        if (ih < 0 || ih >= H) {
          f(r, base + a, b - a, -1, 0);
          continue;
        }
        const int64_t lo = std::clamp(ow_lo, a, b), hi = std::max(lo, std::min(ow_hi, b));
        if (lo > a) f(r, base + a, lo - a, -1, 0);
        if (hi > lo) f(r, base + lo, hi - lo, (ci * H + ih) * W + lo * sw + off_w, sw);
        if (b > hi) f(r, base + hi, b - hi, -1, 0);
      }
    }
  }

  // cols[r - r0, p - p0] for taps [r0, r1) and positions [p0, p1) of one image and group.
  void im2col(const float* xp, float* cols, int64_t r0, int64_t r1, int64_t p0, int64_t p1) const {
    const int64_t ld = p1 - p0;
    each_run(r0, r1, p0, p1, [&](int64_t r, int64_t p, int64_t n, int64_t at, int64_t step) {
      float* d = cols + (r - r0) * ld + (p - p0);
      if (at < 0) std::fill(d, d + n, 0.f);
      else if (step == 1) std::memcpy(d, xp + at, static_cast<size_t>(n) * sizeof(float));
      else
        for (int64_t i = 0; i < n; ++i) d[i] = xp[at + i * step];
    });
  }
  // The adjoint: x[...] += cols[r - r0, p] for taps [r0, r1) and all positions.
  void col2im(const float* cols, float* xp, int64_t r0, int64_t r1) const {
    const int64_t P = this->P();
    each_run(r0, r1, 0, P, [&](int64_t r, int64_t p, int64_t n, int64_t at, int64_t step) {
      if (at < 0) return;
      float* d = xp + at;
      const float* c = cols + (r - r0) * P + p;
      for (int64_t i = 0; i < n; ++i) d[i * step] += c[i];
    });
  }

  // y = conv(x, w) (+ bias, one per output channel; null: none). Depthwise: computed directly.
  // Otherwise im2col + matrix multiply, one task per image, group and block of output positions
  // (and of output channels when there are few positions): the task gathers its columns (taps x
  // positions) into a per-thread buffer and multiplies weight[O/G, C/G*KH*KW] by them into its
  // block of the output. Blocks are sized so that every core has work even at batch 1.
  void run(const float* x, const float* w, const float* bias, float* y) const {
    if (depthwise()) return run_depthwise(x, w, bias, y);
    const int64_t OG = this->OG(), P = this->P(), R = this->R();
    const bool pointwise = this->pointwise();
    const int64_t per = ceil_div(tasks(N * G * OG * P * R), N * G);
    const int64_t pblocks = std::clamp<int64_t>(per, 1, std::max<int64_t>(1, P / 32));  // at least 32 positions wide
    const int64_t oblocks = std::clamp<int64_t>(ceil_div(per, pblocks), 1, std::max<int64_t>(1, OG / 8));
    const int64_t pb = pblocks == 1 ? P : ceil_div(ceil_div(P, pblocks), 16) * 16;
    const int64_t ob = oblocks == 1 ? OG : ceil_div(ceil_div(OG, oblocks), 8) * 8;
    const int64_t np = ceil_div(P, pb), no = ceil_div(OG, ob);
    parallel_for<Host>(N * G * np * no, N * G * OG * P * R, [&](int64_t t0, int64_t t1) {
      float* cols = pointwise ? nullptr : Host::scratch(static_cast<size_t>(R * pb), 0);
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t ng = t / (np * no), n = ng / G, g = ng % G;
        const int64_t p0 = t / no % np * pb, p1 = std::min(P, p0 + pb);
        const int64_t o0 = t % no * ob, o1 = std::min(OG, o0 + ob);
        const float* image = x + (n * C + g * CG) * H * W;
        if (!pointwise) im2col(image, cols, 0, R, p0, p1);
        float* yb = y + (n * O + g * OG + o0) * P + p0;
        if (bias)
          for (int64_t o = o0; o < o1; ++o) std::fill(yb + (o - o0) * P, yb + (o - o0) * P + (p1 - p0), bias[g * OG + o]);
        Host::gemm(o1 - o0, p1 - p0, R, 1.f, w + (g * OG + o0) * R, R, false, pointwise ? image + p0 : cols, pointwise ? P : p1 - p0,
                   false, bias ? 1.f : 0.f, yb, P);
      }
    });
  }

  // Depthwise: per channel, the plane copied once into a zero-padded buffer, then each output row
  // accumulates its KH*KW shifted input rows (contiguous at stride 1: vector code); channels
  // across the cores.
  void run_depthwise(const float* x, const float* w, const float* bias, float* y) const {
    const int64_t P = this->P(), R = this->R(), HP = H + 2 * ph, WP = W + 2 * pw;
    parallel_for<Host>(N * G, N * G * P * R, [&](int64_t b, int64_t e) {
      float* xpad = Host::scratch(static_cast<size_t>(HP * WP), 0);
      std::fill(xpad, xpad + HP * WP, 0.f);  // the border stays zero: only the inside is rewritten
      for (int64_t ng = b; ng < e; ++ng) {
        const int64_t g = ng % G;
        const float* xi = x + ng * H * W;
        for (int64_t h = 0; h < H; ++h) std::memcpy(xpad + (h + ph) * WP + pw, xi + h * W, static_cast<size_t>(W) * sizeof(float));
        const float* wi = w + g * R;
        float* yo = y + ng * P;
        for (int64_t oh = 0; oh < OH; ++oh) {
          float* yr = yo + oh * OW;
          std::fill(yr, yr + OW, bias ? bias[g] : 0.f);
          for (int64_t kh = 0; kh < KH; ++kh) {
            const float* xr = xpad + (oh * sh + kh * dh) * WP;
            for (int64_t kw = 0; kw < KW; ++kw) {
              const float wv = wi[kh * KW + kw];
              const float* xs = xr + kw * dw;
              if (sw == 1)
                for (int64_t ow = 0; ow < OW; ++ow) yr[ow] += wv * xs[ow];
              else
                for (int64_t ow = 0; ow < OW; ++ow) yr[ow] += wv * xs[ow * sw];
            }
          }
        }
      }
    });
  }

  // The gradients of the input, weight and bias from the output's (gy); null: not wanted. Through
  // the same columns, in three parallel passes that never write the same element from two threads:
  //   gx: per image, group and block of input channels, grad_cols = weight^T @ gy for the taps
  //       of those channels, then col2im into them;
  //   gw: per block of taps, the sum over images of gy @ cols^T for those taps;
  //   gb: per output channel, the sum of gy over images and positions.
  void backward(const float* gy, const float* x, const float* w, float* gx, float* gw, float* gb) const {
    const int64_t OG = this->OG(), P = this->P(), R = this->R();
    const int64_t KK = KH * KW, work = N * G * OG * P * R, ntasks = tasks(work);
    if (gx) {
      std::fill(gx, gx + N * C * H * W, 0.f);
      const int64_t cblocks = std::clamp<int64_t>(ceil_div(ntasks, N * G), 1, CG);
      const int64_t cb = ceil_div(CG, cblocks), per = ceil_div(CG, cb);
      parallel_for<Host>(N * G * per, work, [&](int64_t t0, int64_t t1) {
        float* gcols = Host::scratch(static_cast<size_t>(cb * KK * P), 0);
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t ng = t / per, n = ng / G, g = ng % G;
          const int64_t c0 = t % per * cb, c1 = std::min(CG, c0 + cb), r0 = c0 * KK, r1 = c1 * KK;
          // gcols[r1-r0, P] = (weight[OG, R] restricted to columns r0..r1)^T @ gy[OG, P]
          Host::gemm(r1 - r0, P, OG, 1.f, w + g * OG * R + r0, R, true, gy + (n * O + g * OG) * P, P, false, 0.f, gcols, P);
          col2im(gcols, gx + (n * C + g * CG) * H * W, r0, r1);
        }
      });
    }
    if (gw) {
      std::fill(gw, gw + O * R, 0.f);
      const int64_t rblocks = std::clamp<int64_t>(ceil_div(ntasks, G), 1, std::max<int64_t>(1, R / 8));
      const int64_t rb = ceil_div(R, rblocks), per = ceil_div(R, rb);
      parallel_for<Host>(G * per, work, [&](int64_t t0, int64_t t1) {
        float* cols = Host::scratch(static_cast<size_t>(rb * P), 1);
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t g = t / per, r0 = t % per * rb, r1 = std::min(R, r0 + rb);
          for (int64_t n = 0; n < N; ++n) {
            im2col(x + (n * C + g * CG) * H * W, cols, r0, r1, 0, P);
            // gw[OG, r0..r1] += gy[OG, P] @ cols[r1-r0, P]^T
            Host::gemm(OG, r1 - r0, P, 1.f, gy + (n * O + g * OG) * P, P, false, cols, P, true, 1.f, gw + g * OG * R + r0, R);
          }
        }
      });
    }
    if (gb) {
      parallel_for<Host>(O, N * O * P, [&](int64_t o0, int64_t o1) {
        for (int64_t o = o0; o < o1; ++o) {
          double acc = 0;
          for (int64_t n = 0; n < N; ++n) {
            const float* row = gy + (n * O + o) * P;
            float part = 0;
            for (int64_t p = 0; p < P; ++p) part += row[p];
            acc += part;
          }
          gb[o] = static_cast<float>(acc);
        }
      });
    }
  }
};

// ---- Attention

// An attention operand in its buffer: element offset and strides [batch, head, row, element], so
// q, k and v are read in place out of one projection.
struct View {
  int64_t offset, sb, sh, sl, se;
};

// Attention in blocks of query rows, where every operand's rows are contiguous: per (batch, head,
// block of kAttnRows queries) the block's scores against the keys it sees as one product; the
// scores of a block stay in the thread's cache.
constexpr int64_t kAttnRows = 64;

// Scaled dot-product attention, softmax(q k^T * scale) v (causal: key j <= query i), writing the
// output (through its view) and each row's log-sum-exp (contiguous [B, H, L]; null: not wanted).
template <class Host>
struct Attention {
  int64_t B, H, L, S, E, Ev;
  bool causal;
  float scale;
  View q, k, v, o;

  void run(const float* qp, const float* kp, const float* vp, float* op, float* lse) const {
    qp += q.offset, kp += k.offset, vp += v.offset, op += o.offset;
    if (q.se == 1 && k.se == 1 && v.se == 1 && o.se == 1) return blocked(qp, kp, vp, op, lse);
    rows(qp, kp, vp, op, lse);
  }

  // Per block: the scores against the keys it sees (a causal block: the keys up to its last
  // row), the rows' softmax (masked keys zero), then the probabilities times the values.
  void blocked(const float* qp, const float* kp, const float* vp, float* op, float* lse) const {
    const int64_t blocks = ceil_div(L, kAttnRows), tasks = B * H * blocks;
    parallel_for<Host>(tasks, B * H * L * S * (E + Ev), [&](int64_t t0, int64_t t1) {
      std::vector<float> p(static_cast<size_t>(kAttnRows * S)), out(static_cast<size_t>(kAttnRows * Ev));
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t bh = t / blocks, b = bh / H, h = bh % H, i0 = t % blocks * kAttnRows, n = std::min(kAttnRows, L - i0);
        const int64_t keys = causal ? std::min(S, i0 + n) : S;
        const float *qb = qp + b * q.sb + h * q.sh + i0 * q.sl, *kb = kp + b * k.sb + h * k.sh, *vb = vp + b * v.sb + h * v.sh;
        float* P = p.data();
        if (keys > 0) Host::gemm(n, keys, E, scale, qb, q.sl, false, kb, k.sl, true, 0.f, P, keys);
        std::vector<float> sums(static_cast<size_t>(n));
        for (int64_t r = 0; r < n; ++r) {
          float* row = P + r * keys;
          const int64_t lim = causal ? std::min(S, i0 + r + 1) : S;
          float m = -INFINITY, sum = 0;
          for (int64_t j = 0; j < lim; ++j) m = std::max(m, row[j]);
          for (int64_t j = 0; j < lim; ++j) sum += row[j] = std::exp(row[j] - m);
          for (int64_t j = lim; j < keys; ++j) row[j] = 0.f;
          sums[r] = sum;
          if (lse) lse[bh * L + i0 + r] = lim > 0 ? m + std::log(sum) : -INFINITY;
        }
        if (keys > 0) Host::gemm(n, Ev, keys, 1.f, P, keys, false, vb, v.sl, false, 0.f, out.data(), Ev);
        for (int64_t r = 0; r < n; ++r) {
          float* oi = op + b * o.sb + h * o.sh + (i0 + r) * o.sl;
          const float inv = sums[r] > 0 ? 1.f / sums[r] : 0.f;
          for (int64_t e = 0; e < Ev; ++e) oi[e] = keys > 0 ? out[r * Ev + e] * inv : 0.f;
        }
      }
    });
  }

  // One query row at a time: the scores of the row, its softmax and the weighted sum of values
  // never leave the core (FlashAttention's row form, without tiling: the rows of a CPU are long
  // enough).
  void rows(const float* qp, const float* kp, const float* vp, float* op, float* lse) const {
    const int64_t rows = B * H * L;
    parallel_for<Host>(rows, rows * S * (E + Ev), [&](int64_t b0, int64_t e0) {
      std::vector<float> w(static_cast<size_t>(S)), acc(static_cast<size_t>(Ev));
      for (int64_t row = b0; row < e0; ++row) {
        const int64_t b = row / (H * L), h = row / L % H, i = row % L;
        const float* qi = qp + b * q.sb + h * q.sh + i * q.sl;
        const float *kb = kp + b * k.sb + h * k.sh, *vb = vp + b * v.sb + h * v.sh;
        float* oi = op + b * o.sb + h * o.sh + i * o.sl;
        const int64_t lim = causal ? std::min(S, i + 1) : S;
        float m = -INFINITY, sum = 0;
        for (int64_t j = 0; j < lim; ++j) {
          float s = 0;
          for (int64_t e = 0; e < E; ++e) s += qi[e * q.se] * kb[j * k.sl + e * k.se];
          w[j] = s * scale;
          m = std::max(m, w[j]);
        }
        std::fill(acc.begin(), acc.end(), 0.f);
        for (int64_t j = 0; j < lim; ++j) {
          const float p = std::exp(w[j] - m);
          sum += p;
          for (int64_t e = 0; e < Ev; ++e) acc[e] += p * vb[j * v.sl + e * v.se];
        }
        for (int64_t e = 0; e < Ev; ++e) oi[e * o.se] = lim > 0 ? acc[e] / sum : 0.f;
        if (lse) lse[row] = lim > 0 ? m + std::log(sum) : -INFINITY;
      }
    });
  }
};

// Its backward from the saved output and log-sum-exp (the probabilities are recomputed, never
// stored): D_i = dO_i . O_i, dS_ij = P_ij (dO_i . v_j - D_i) scale, dq = dS k, dk = dS^T q,
// dv = P^T dO; per (batch, head) a task (the key gradients sum over the queries). Gradients come
// out contiguous [B, H, L or S, E or Ev].
template <class Host>
struct AttentionBackward {
  int64_t B, H, L, S, E, Ev;
  bool causal;
  float scale;
  View go, q, k, v, o;

  void run(const float* gop, const float* qp, const float* kp, const float* vp, const float* opp, const float* lse, float* dq,
           float* dk, float* dv) const {
    std::fill(dq, dq + B * H * L * E, 0.f);
    std::fill(dk, dk + B * H * S * E, 0.f);
    std::fill(dv, dv + B * H * S * Ev, 0.f);
    gop += go.offset, qp += q.offset, kp += k.offset, vp += v.offset, opp += o.offset;
    if (go.se == 1 && q.se == 1 && k.se == 1 && v.se == 1 && o.se == 1) return blocked(gop, qp, kp, vp, opp, lse, dq, dk, dv);
    rows(gop, qp, kp, vp, opp, lse, dq, dk, dv);
  }

  // In the forward's blocks of query rows, each step a matrix multiply: P = exp(scores - lse)
  // recomputed, dP = dO V^T, dS = P (dP - D) scale, then dq = dS K, dk += dS^T Q, dv += P^T dO.
  void blocked(const float* gop, const float* qp, const float* kp, const float* vp, const float* opp, const float* lse, float* dq,
               float* dk, float* dv) const {
    parallel_for<Host>(B * H, B * H * L * S * (2 * E + 2 * Ev), [&](int64_t b0, int64_t e0) {
      std::vector<float> p(static_cast<size_t>(kAttnRows * S)), dp(static_cast<size_t>(kAttnRows * S));
      for (int64_t bh = b0; bh < e0; ++bh) {
        const int64_t b = bh / H, h = bh % H;
        const float *gob = gop + b * go.sb + h * go.sh, *qb = qp + b * q.sb + h * q.sh, *kb = kp + b * k.sb + h * k.sh,
                    *vb = vp + b * v.sb + h * v.sh, *ob = opp + b * o.sb + h * o.sh;
        float *dqb = dq + bh * L * E, *dkb = dk + bh * S * E, *dvb = dv + bh * S * Ev;
        for (int64_t i0 = 0; i0 < L; i0 += kAttnRows) {
          const int64_t n = std::min(kAttnRows, L - i0), keys = causal ? std::min(S, i0 + n) : S;
          if (keys <= 0) continue;
          float *P = p.data(), *dS = dp.data();
          Host::gemm(n, keys, E, scale, qb + i0 * q.sl, q.sl, false, kb, k.sl, true, 0.f, P, keys);
          Host::gemm(n, keys, Ev, 1.f, gob + i0 * go.sl, go.sl, false, vb, v.sl, true, 0.f, dS, keys);
          for (int64_t r = 0; r < n; ++r) {
            const int64_t i = i0 + r, lim = causal ? std::min(S, i + 1) : S;
            float D = 0;
            for (int64_t e = 0; e < Ev; ++e) D += gob[i * go.sl + e] * ob[i * o.sl + e];
            const float l = lse[bh * L + i];
            float *prow = P + r * keys, *drow = dS + r * keys;
            for (int64_t j = 0; j < lim; ++j) {
              prow[j] = std::exp(prow[j] - l);
              drow[j] = prow[j] * (drow[j] - D) * scale;
            }
            for (int64_t j = lim; j < keys; ++j) prow[j] = drow[j] = 0.f;
          }
          Host::gemm(n, E, keys, 1.f, dS, keys, false, kb, k.sl, false, 0.f, dqb + i0 * E, E);
          Host::gemm(keys, E, n, 1.f, dS, keys, true, qb + i0 * q.sl, q.sl, false, 1.f, dkb, E);
          Host::gemm(keys, Ev, n, 1.f, P, keys, true, gob + i0 * go.sl, go.sl, false, 1.f, dvb, Ev);
        }
      }
    });
  }

  // Element by element, for operands whose rows are strided.
  void rows(const float* gop, const float* qp, const float* kp, const float* vp, const float* opp, const float* lse, float* dq,
            float* dk, float* dv) const {
    parallel_for<Host>(B * H, B * H * L * S * (2 * E + 2 * Ev), [&](int64_t b0, int64_t e0) {
      std::vector<float> D(static_cast<size_t>(L));
      for (int64_t bh = b0; bh < e0; ++bh) {
        const int64_t b = bh / H, h = bh % H;
        const float *gob = gop + b * go.sb + h * go.sh, *qb = qp + b * q.sb + h * q.sh, *kb = kp + b * k.sb + h * k.sh,
                    *vb = vp + b * v.sb + h * v.sh, *ob = opp + b * o.sb + h * o.sh;
        float *dqb = dq + bh * L * E, *dkb = dk + bh * S * E, *dvb = dv + bh * S * Ev;
        for (int64_t i = 0; i < L; ++i) {
          float d = 0;
          for (int64_t e = 0; e < Ev; ++e) d += gob[i * go.sl + e * go.se] * ob[i * o.sl + e * o.se];
          D[i] = d;
        }
        for (int64_t i = 0; i < L; ++i) {
          const int64_t lim = causal ? std::min(S, i + 1) : S;
          const float l = lse[bh * L + i];
          for (int64_t j = 0; j < lim; ++j) {
            float s = 0, dp = 0;
            for (int64_t e = 0; e < E; ++e) s += qb[i * q.sl + e * q.se] * kb[j * k.sl + e * k.se];
            for (int64_t e = 0; e < Ev; ++e) dp += gob[i * go.sl + e * go.se] * vb[j * v.sl + e * v.se];
            const float p = std::exp(s * scale - l), ds = p * (dp - D[i]) * scale;
            for (int64_t e = 0; e < E; ++e) {
              dqb[i * E + e] += ds * kb[j * k.sl + e * k.se];
              dkb[j * E + e] += ds * qb[i * q.sl + e * q.se];
            }
            for (int64_t e = 0; e < Ev; ++e) dvb[j * Ev + e] += p * gob[i * go.sl + e * go.se];
          }
        }
      }
    });
  }
};

}  // namespace cpu
}  // namespace lsrt
