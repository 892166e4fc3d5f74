// Lowerscope package runtime for CPU packages: what an exported model needs besides its generated
// kernels and buffers.h — the library calls (matrix multiply through CBLAS, convolution as
// im2col + matrix multiply, attention). No other dependency than a CBLAS (OpenBLAS on Debian:
// libopenblas-dev) and OpenMP.
// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <cblas.h>
#include <omp.h>

#include "buffers.h"

namespace lsrt {

// C[M,N] = alpha * op(A) @ op(B) + beta * C, row major; ta/tb: the operand is stored transposed.
// As in Lowerscope, the library runs single-threaded on the kernels' own OpenMP team, a block of
// rows a thread: its own threads beside a spinning OpenMP team would fight it for the cores
// (an MLP training step: 20 ms that way, against a fraction of a millisecond).
// `rows` x `cols` (both set): the cut max-autotune chose for this product, one call a block.
inline void sgemm(int64_t M, int64_t N, int64_t K, float alpha, const float* A, bool ta, const float* B, bool tb,
                  float beta, float* C, int64_t rows = 0, int64_t cols = 0) {
#if defined(OPENBLAS_VERSION)
  static const bool single_threaded = (openblas_set_num_threads(1), true);
  (void)single_threaded;
#endif
  auto call = [&](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {  // rows m0..m1, columns n0..n1 of C
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m1 - m0),
                static_cast<int>(n1 - n0), static_cast<int>(K), alpha, ta ? A + m0 : A + m0 * K, static_cast<int>(ta ? M : K),
                tb ? B + n0 * K : B + n0, static_cast<int>(tb ? K : N), beta, C + m0 * N + n0, static_cast<int>(N));
  };
  if (rows > 0 && cols > 0 && rows * cols > 1 && !omp_in_parallel()) {
    const int64_t rb = ((M + rows - 1) / rows + 15) / 16 * 16, cb = ((N + cols - 1) / cols + 15) / 16 * 16;
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < rows * cols; ++t) {
      const int64_t m0 = t / cols * rb, n0 = t % cols * cb;
      if (m0 < M && n0 < N) call(m0, std::min(M, m0 + rb), n0, std::min(N, n0 + cb));
    }
    return;
  }
  if (rows * cols == 1) return call(0, M, 0, N);
  const int64_t parts = omp_in_parallel() ? 1 : std::min<int64_t>(omp_get_max_threads(), std::max<int64_t>(1, M * N * K / (1 << 18)));
  if (parts <= 1) return call(0, M, 0, N);
  if (M >= parts * 16) {  // blocks of rows
    const int64_t chunk = (M + parts - 1) / parts;
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < parts; ++t)
      if (t * chunk < M) call(t * chunk, std::min(M, (t + 1) * chunk), 0, N);
    return;
  }
  const int64_t chunk = ((N + parts - 1) / parts + 15) / 16 * 16;  // few rows: blocks of columns
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < parts; ++t)
    if (t * chunk < N) call(0, M, t * chunk, std::min(N, (t + 1) * chunk));
}

// addmm: y = beta * bias (broadcast: one value, a row of N, or [M, N]) + alpha * A @ B.
inline void addmm(float* y, const float* bias, int bias_kind, int64_t M, int64_t N, int64_t K, const float* a, bool ta,
                  const float* b, bool tb, float alpha, float beta, int64_t rows = 0, int64_t cols = 0) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) y[i * N + j] = bias_kind == 0 ? bias[0] : bias_kind == 1 ? bias[j] : bias[i * N + j];
  sgemm(M, N, K, alpha, a, ta, b, tb, beta, y, rows, cols);
}

// 2-D convolution, NCHW, weight [O, C/G, KH, KW]: im2col per image and group, then a matrix multiply.
struct Conv {
  int64_t N, C, H, W, O, CG, KH, KW, OH, OW, G, sh, sw, ph, pw, dh, dw;
  int64_t OG() const { return O / G; }
  int64_t P() const { return OH * OW; }
  int64_t R() const { return CG * KH * KW; }

  // cols[r, p]: image xi's channel group under kernel tap r at output position p (0: padding).
  void im2col(const float* xi, float* cols) const {
    const int64_t P = this->P(), R = this->R();
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < R; ++r) {
      const int64_t ci = r / (KH * KW), kh = (r / KW) % KH, kw = r % KW;
      for (int64_t oh = 0; oh < OH; ++oh) {
        const int64_t ih = oh * sh - ph + kh * dh;
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t iw = ow * sw - pw + kw * dw;
          cols[r * P + oh * OW + ow] = ih >= 0 && ih < H && iw >= 0 && iw < W ? xi[(ci * H + ih) * W + iw] : 0.f;
        }
      }
    }
  }

  // The adjoint of im2col: every cols[r, p] added back onto the input position it came from.
  void col2im(const float* cols, float* gxi) const {
    const int64_t P = this->P();
#pragma omp parallel for schedule(static)
    for (int64_t ci = 0; ci < CG; ++ci)  // a channel a thread: its taps write only its plane
      for (int64_t k = 0; k < KH * KW; ++k) {
        const int64_t r = ci * KH * KW + k, kh = k / KW, kw = k % KW;
        for (int64_t oh = 0; oh < OH; ++oh) {
          const int64_t ih = oh * sh - ph + kh * dh;
          if (ih < 0 || ih >= H) continue;
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t iw = ow * sw - pw + kw * dw;
            if (iw >= 0 && iw < W) gxi[(ci * H + ih) * W + iw] += cols[r * P + oh * OW + ow];
          }
        }
      }
  }

  // Every channel its own group with one filter (MobileNet's depthwise convolutions): computed
  // directly, a plane a thread, instead of an im2col and a one-row product per channel.
  bool depthwise() const { return G == C && CG == 1 && O == C; }

  void run(const float* x, const float* w, const float* bias, float* y) const {
    const int64_t OG = this->OG(), P = this->P(), R = this->R();
    if (depthwise()) {
#pragma omp parallel for schedule(static)
      for (int64_t plane = 0; plane < N * C; ++plane) {
        const int64_t c = plane % C;
        const float* xp = x + plane * H * W;
        const float* wp = w + c * KH * KW;
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            float acc = bias ? bias[c] : 0.f;
            for (int64_t kh = 0; kh < KH; ++kh) {
              const int64_t ih = oh * sh - ph + kh * dh;
              if (ih < 0 || ih >= H) continue;
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t iw = ow * sw - pw + kw * dw;
                if (iw >= 0 && iw < W) acc += xp[ih * W + iw] * wp[kh * KW + kw];
              }
            }
            y[plane * P + oh * OW + ow] = acc;
          }
      }
      return;
    }
    std::vector<float> cols(static_cast<size_t>(R * P));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t g = 0; g < G; ++g) {
        im2col(x + (n * C + g * CG) * H * W, cols.data());
        float* yo = y + (n * O + g * OG) * P;
        for (int64_t o = 0; o < OG; ++o)
          for (int64_t p = 0; p < P; ++p) yo[o * P + p] = bias ? bias[g * OG + o] : 0.f;
        sgemm(OG, P, R, 1.f, w + g * OG * R, false, cols.data(), false, 1.f, yo);
      }
  }

  // The gradients of the input, weight and bias from the output's (gy); nullptr: not wanted.
  void backward(const float* gy, const float* x, const float* w, float* gx, float* gw, float* gb) const {
    if (depthwise()) backward_depthwise(gy, x, w, gx, gw);
    else backward_columns(gy, x, w, gx, gw);
    const int64_t P = this->P();
    if (gb)
      for (int64_t o = 0; o < O; ++o) {
        double acc = 0;
        for (int64_t n = 0; n < N; ++n)
          for (int64_t p = 0; p < P; ++p) acc += gy[(n * O + o) * P + p];
        gb[o] = static_cast<float>(acc);
      }
  }

  // Per image and group: grad_x through weight^T @ gy and col2im, grad_w += gy @ im2col(x)^T.
  void backward_columns(const float* gy, const float* x, const float* w, float* gx, float* gw) const {
    const int64_t OG = this->OG(), P = this->P(), R = this->R();
    std::vector<float> cols(static_cast<size_t>(R * P));
    if (gx) std::fill(gx, gx + N * C * H * W, 0.f);
    if (gw) std::fill(gw, gw + O * R, 0.f);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t g = 0; g < G; ++g) {
        const float* gyo = gy + (n * O + g * OG) * P;
        if (gx) {  // cols[R, P] = weight[OG, R]^T @ gy[OG, P], then back onto the input
          sgemm(R, P, OG, 1.f, w + g * OG * R, true, gyo, false, 0.f, cols.data());
          col2im(cols.data(), gx + (n * C + g * CG) * H * W);
        }
        if (gw) {  // weight[OG, R] += gy[OG, P] @ cols[R, P]^T
          im2col(x + (n * C + g * CG) * H * W, cols.data());
          sgemm(OG, R, P, 1.f, gyo, false, cols.data(), true, 1.f, gw + g * OG * R);
        }
      }
  }

  // Along one dimension: the output position whose window reads input position i through tap k, or
  // -1 where none does.
  static int64_t reader(int64_t i, int64_t pad, int64_t k, int64_t dil, int64_t stride, int64_t out) {
    const int64_t t = i + pad - k * dil;
    if (t < 0 || t % stride) return -1;
    return t / stride < out ? t / stride : -1;
  }

  // Depthwise: each input element gathers the output gradients of the windows that read it; each
  // channel's filter gradient sums gy * x over images and positions (a channel a thread).
  void backward_depthwise(const float* gy, const float* x, const float* w, float* gx, float* gw) const {
    const int64_t P = this->P();
    if (gx) {
#pragma omp parallel for schedule(static)
      for (int64_t plane = 0; plane < N * C; ++plane) {
        const int64_t c = plane % C;
        const float* g = gy + plane * P;
        const float* wp = w + c * KH * KW;
        for (int64_t ih = 0; ih < H; ++ih)
          for (int64_t iw = 0; iw < W; ++iw) {
            float acc = 0.f;
            for (int64_t kh = 0; kh < KH; ++kh) {
              const int64_t oh = reader(ih, ph, kh, dh, sh, OH);
              if (oh < 0) continue;
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ow = reader(iw, pw, kw, dw, sw, OW);
                if (ow >= 0) acc += g[oh * OW + ow] * wp[kh * KW + kw];
              }
            }
            gx[plane * H * W + ih * W + iw] = acc;
          }
      }
    }
    if (gw) {
#pragma omp parallel for schedule(static)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t k = 0; k < KH * KW; ++k) {
          const int64_t kh = k / KW, kw = k % KW;
          float acc = 0.f;
          for (int64_t n = 0; n < N; ++n) {
            const float* g = gy + (n * C + c) * P;
            const float* xp = x + (n * C + c) * H * W;
            for (int64_t oh = 0; oh < OH; ++oh) {
              const int64_t ih = oh * sh - ph + kh * dh;
              if (ih < 0 || ih >= H) continue;
              for (int64_t ow = 0; ow < OW; ++ow) {
                const int64_t iw = ow * sw - pw + kw * dw;
                if (iw >= 0 && iw < W) acc += g[oh * OW + ow] * xp[ih * W + iw];
              }
            }
          }
          gw[c * KH * KW + k] = acc;
        }
    }
  }
};

// Scaled dot-product attention, one query row at a time (softmax(q k^T * scale) v, causal if
// asked), each operand read through its own element strides [batch, head, row, element] from an
// offset, as Lowerscope's kernel reads q, k and v in place out of one projection. Writes the
// output and each row's log-sum-exp.
struct Attention {
  struct View {
    int64_t offset, sb, sh, sl, se;
  };
  int64_t B, H, L, S, E, Ev;
  bool causal;
  float scale;
  View q, k, v, o;
  void run(const float* qp, const float* kp, const float* vp, float* op, float* lse) const {
    const int64_t rows = B * H * L;
#pragma omp parallel
    {
      std::vector<float> w(static_cast<size_t>(S)), acc(static_cast<size_t>(Ev));
#pragma omp for schedule(static)
      for (int64_t row = 0; row < rows; ++row) {
        const int64_t b = row / (H * L), h = row / L % H, i = row % L;
        const float* qi = qp + q.offset + b * q.sb + h * q.sh + i * q.sl;
        const float* kb = kp + k.offset + b * k.sb + h * k.sh;
        const float* vb = vp + v.offset + b * v.sb + h * v.sh;
        float* oi = op + o.offset + b * o.sb + h * o.sh + i * o.sl;
        const int64_t lim = causal ? std::min(S, i + 1) : S;
        float m = -INFINITY, sum = 0;
        for (int64_t j = 0; j < lim; ++j) {
          float s = 0;
          for (int64_t e = 0; e < E; ++e) s += qi[e * q.se] * kb[j * k.sl + e * k.se];
          w[static_cast<size_t>(j)] = s * scale;
          m = std::max(m, w[static_cast<size_t>(j)]);
        }
        std::fill(acc.begin(), acc.end(), 0.f);
        for (int64_t j = 0; j < lim; ++j) {
          const float p = std::exp(w[static_cast<size_t>(j)] - m);
          sum += p;
          for (int64_t e = 0; e < Ev; ++e) acc[static_cast<size_t>(e)] += p * vb[j * v.sl + e * v.se];
        }
        for (int64_t e = 0; e < Ev; ++e) oi[e * o.se] = lim > 0 ? acc[static_cast<size_t>(e)] / sum : 0.f;
        if (lse) lse[row] = lim > 0 ? m + std::log(sum) : -INFINITY;
      }
    }
  }
};

// Attention's backward, a (batch, head) a thread: the probabilities again from q, k and the
// forward's log-sum-exp, then dq, dk, dv (contiguous [B, H, L or S, E]) by the chain rule.
struct AttentionBackward {
  using View = Attention::View;
  int64_t B, H, L, S, E, Ev;
  bool causal;
  float scale;
  View go, q, k, v, o;
  void run(const float* gop, const float* qp, const float* kp, const float* vp, const float* opp, const float* lse, float* dq,
           float* dk, float* dv) const {
    std::fill(dq, dq + B * H * L * E, 0.f);
    std::fill(dk, dk + B * H * S * E, 0.f);
    std::fill(dv, dv + B * H * S * Ev, 0.f);
#pragma omp parallel
    {
      std::vector<float> D(static_cast<size_t>(L));
#pragma omp for schedule(static)
      for (int64_t bh = 0; bh < B * H; ++bh) {
        const int64_t b = bh / H, h = bh % H;
        const float *gob = gop + go.offset + b * go.sb + h * go.sh, *qb = qp + q.offset + b * q.sb + h * q.sh,
                    *kb = kp + k.offset + b * k.sb + h * k.sh, *vb = vp + v.offset + b * v.sb + h * v.sh,
                    *ob = opp + o.offset + b * o.sb + h * o.sh;
        float *dqb = dq + bh * L * E, *dkb = dk + bh * S * E, *dvb = dv + bh * S * Ev;
        for (int64_t i = 0; i < L; ++i) {  // D_i = dO_i . O_i
          float d = 0;
          for (int64_t e = 0; e < Ev; ++e) d += gob[i * go.sl + e * go.se] * ob[i * o.sl + e * o.se];
          D[static_cast<size_t>(i)] = d;
        }
        for (int64_t i = 0; i < L; ++i) {
          const int64_t lim = causal ? std::min(S, i + 1) : S;
          const float l = lse[bh * L + i];
          for (int64_t j = 0; j < lim; ++j) {
            float sc = 0, dp = 0;
            for (int64_t e = 0; e < E; ++e) sc += qb[i * q.sl + e * q.se] * kb[j * k.sl + e * k.se];
            for (int64_t e = 0; e < Ev; ++e) dp += gob[i * go.sl + e * go.se] * vb[j * v.sl + e * v.se];
            const float p = std::exp(sc * scale - l), ds = p * (dp - D[static_cast<size_t>(i)]) * scale;
            for (int64_t e = 0; e < E; ++e) {
              dqb[i * E + e] += ds * kb[j * k.sl + e * k.se];
              dkb[j * E + e] += ds * qb[i * q.sl + e * q.se];
            }
            for (int64_t e = 0; e < Ev; ++e) dvb[j * Ev + e] += p * gob[i * go.sl + e * go.se];
          }
        }
      }
    }
  }
};

}  // namespace lsrt
