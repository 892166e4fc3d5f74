// The CUDA library calls' host side, written once: which helper kernels and cuBLAS products a
// convolution (its depthwise, 1x1 and linear-layer forms, im2col otherwise; its backward through
// col2im), attention (fused, FlashAttention-2 or cuBLAS around softmax kernels; forward and
// backward), max pooling and concatenation make, with what arguments. The app runs them
// (exec/cuda_executor.cpp chooses the path, owns cuBLAS and the scratch memory), and every exported
// CUDA package carries this very file (export/package.cpp writes it beside runtime.h, which
// includes it), so a fix here reaches both. The kernels themselves are codegen/cuda_helpers.h and
// the attention module, compiled into both from the same source too. Hence no Lowerscope
// include and no CUDA header: plain C++17, namespace lsrt.
// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <algorithm>
#include <cstddef>
#include <limits>
#include <string>

namespace lsrt {
namespace cuda {

// A device address, as the driver API's CUdeviceptr.
using DevPtr = unsigned long long;

// What differs between the app and a package is the GPU object the calls go through: a `Gpu`
// parameter g with
//   g.helper_launch(kernel, grid, block, params, shared = 0)   a helper or attention kernel, by name
//   g.grid_for(total)          blocks of 256 threads for `total` elements (the kernels loop over the rest)
//   g.sgemm(batch, M, N, K, alpha, A, ta, sa, B, tb, sb, beta, C, sc)
//                              C = alpha op(A) op(B) + beta C, row major, `batch` times at element
//                              strides sa, sb, sc (cuBLAS)
//   g.gemm_bias(M, N, K, alpha, A, ta, B, tb, bias, C)   the same with a bias per column in
//                              cuBLASLt's epilogue; false where cuBLASLt has no algorithm for it
//   g.scratch(slot, bytes)     device memory the call may use, kept between runs
//   g.dnn_conv(conv, type, pass, a, b, out)   (the app's executor only, where it loaded cuDNN) one
//                              of a convolution's products by cuDNN: pass 0 y from (x, w), 1 grad_x
//                              from (grad_y, w), 2 grad_w from (x, grad_y); type 0 float32, 1 bf16, 2 f16
// The app's: its executor over the driver and cuBLAS it loads at run time; a package's: its Gpu
// over the CUDA toolkit (package_runtime_cuda.h).

inline DevPtr plus(DevPtr p, long long floats) { return p + static_cast<DevPtr>(floats * 4); }

// 2-D convolution, NCHW, weight [O, C/G, KH, KW]. Null pointers: no bias, gradient not wanted.
struct Conv {
  int N, C, H, W, O, CG, KH, KW, OH, OW, G, sh, sw, ph, pw, dh, dw;
  bool depthwise;  // every channel its own group with one filter: the grouped kernels' simplest case

  // One output pixel whose window covers the whole unpadded input, in one group, is a linear
  // layer: y [N, O] = x [N, C H W] @ w [O, C KH KW]^T, its bias in cuBLASLt's epilogue (MobileNet's
  // squeeze-and-excitation convolutions).
  bool linear() const { return G == 1 && OH == 1 && OW == 1 && KH == H && KW == W && ph == 0 && pw == 0; }
  // A 1x1 window with stride 1 and no padding reads the input's channels as they are: the input is
  // its own columns (no im2col, and grad_x needs no col2im).
  bool pointwise() const { return KH == 1 && KW == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0; }
  // Many groups (ResNeXt's 32, a depthwise convolution with a channel multiplier) or windows over
  // groups of few channels (RegNet's groups of 8): direct kernels, one launch each way, where
  // per-group products would be G im2cols and G tiny GEMMs one after another. A few groups of 1x1
  // windows keep their products.
  bool grouped() const { return !depthwise && G > 1 && (G >= 8 || (!pointwise() && CG <= 32)); }
  long long P() const { return static_cast<long long>(OH) * OW; }
  long long R() const { return static_cast<long long>(CG) * KH * KW; }
  long long OG() const { return O / G; }

  // The columns of every image of group `group`, N x (CG KH KW) x (OH OW), into scratch slot 0.
  template <class Gpu>
  DevPtr im2col(Gpu& g, DevPtr x, int group) const {
    DevPtr cols = columns(g), xg = plus(x, static_cast<long long>(group) * CG * H * W);
    int n = N, cg = CG, h = H, w = W, kh = KH, kw = KW, oh = OH, ow = OW, a = sh, b = sw, c = ph, d = pw, e = dh, f = dw;
    long long x_image = static_cast<long long>(C) * H * W;
    void* params[] = {&xg, &cols, &n, &cg, &h, &w, &kh, &kw, &oh, &ow, &a, &b, &c, &d, &e, &f, &x_image};
    g.helper_launch("ls_im2col", g.grid_for(N * R() * P()), 256, params);
    return cols;
  }
  template <class Gpu>
  DevPtr columns(Gpu& g) const {
    return g.scratch(0, static_cast<size_t>(N * R() * P() * 4));
  }

  // Depthwise and grouped(): the direct grouped kernel; linear: one product; 1x1: per group one
  // batched product over the images; otherwise per group im2col of every image and one batched
  // product. Then the bias.
  template <class Gpu>
  void run(Gpu& g, DevPtr x, DevPtr w, DevPtr bias, DevPtr y) const {
    const long long P = this->P(), R = this->R(), OG = this->OG();
    if (depthwise || grouped()) {
      int n = N, c = C, h = H, ww = W, o = O, cg = CG, og = static_cast<int>(OG), kh = KH, kw = KW, oh = OH, ow = OW, a = sh, b = sw,
          pa = ph, pb = pw, da = dh, db = dw;
      void* params[] = {&x, &w, &y, &n, &c, &h, &ww, &o, &cg, &og, &kh, &kw, &oh, &ow, &a, &b, &pa, &pb, &da, &db};
      g.helper_launch("ls_grouped_conv", g.grid_for(static_cast<long long>(N) * O * P), 256, params);
    } else if (linear()) {  // y [N, O] = x [N, R] @ w [O, R]^T (+ bias in cuBLASLt's epilogue)
      if (bias && g.gemm_bias(N, O, R, 1.f, x, false, w, true, bias, y)) return;
      g.sgemm(1, N, O, R, 1.f, x, false, 0, w, true, 0, 0.f, y, 0);
    } else if (pointwise()) {  // y[n, group] = W_group [OG, CG] @ x[n, group] [CG, P]
      for (int group = 0; group < G; ++group)
        g.sgemm(N, OG, P, CG, 1.f, plus(w, group * OG * CG), false, 0, plus(x, group * CG * P), false, static_cast<long long>(C) * P, 0.f,
                plus(y, group * OG * P), static_cast<long long>(O) * P);
    } else {
      for (int group = 0; group < G; ++group) {
        const DevPtr cols = im2col(g, x, group);
        // y[n, group] = W_group [OG, R] @ cols[n] [R, P], for every image n
        g.sgemm(N, OG, P, R, 1.f, plus(w, group * OG * R), false, 0, cols, false, R * P, 0.f, plus(y, group * OG * P),
                static_cast<long long>(O) * P);
      }
    }
    if (bias) {
      long long OO = O, PP = P, total = static_cast<long long>(N) * O * P;
      void* params[] = {&y, &bias, &OO, &PP, &total};
      g.helper_launch("ls_add_channel_bias", (total + 255) / 256, 256, params);
    }
  }

  // Half precision (bf16, f16): the operands widened to float32 on the device (scratch slots 1-6),
  // the float32 call, its results rounded back to nearest even. The products of half values are
  // exact in float32 and the sums float32, as PyTorch's half convolutions accumulate.
  long long x_size() const { return static_cast<long long>(N) * C * H * W; }
  long long w_size() const { return static_cast<long long>(O) * CG * KH * KW; }
  long long y_size() const { return static_cast<long long>(N) * O * OH * OW; }
  template <class Gpu>
  static DevPtr widen(Gpu& g, int slot, DevPtr src, long long n, bool bf16) {
    if (!src) return 0;
    DevPtr dst = g.scratch(slot, static_cast<size_t>(n) * 4);
    int b = bf16 ? 1 : 0;
    void* params[] = {&src, &dst, &n, &b};
    g.helper_launch("ls_widen_half", g.grid_for(n), 256, params);
    return dst;
  }
  template <class Gpu>
  static void narrow(Gpu& g, DevPtr src, DevPtr dst, long long n, bool bf16) {
    if (!dst) return;
    int b = bf16 ? 1 : 0;
    void* params[] = {&src, &dst, &n, &b};
    g.helper_launch("ls_narrow_half", g.grid_for(n), 256, params);
  }
  template <class Gpu>
  void run_half(Gpu& g, DevPtr x, DevPtr w, DevPtr bias, DevPtr y, bool bf16) const {
    const DevPtr xf = widen(g, 1, x, x_size(), bf16), wf = widen(g, 2, w, w_size(), bf16), bf = widen(g, 3, bias, O, bf16);
    const DevPtr yf = g.scratch(4, static_cast<size_t>(y_size()) * 4);
    run(g, xf, wf, bf, yf);
    narrow(g, yf, y, y_size(), bf16);
  }
  template <class Gpu>
  void backward_half(Gpu& g, DevPtr gy, DevPtr x, DevPtr w, DevPtr gx, DevPtr gw, DevPtr gb, bool bf16) const {
    const DevPtr gyf = widen(g, 1, gy, y_size(), bf16), xf = widen(g, 2, x, x_size(), bf16), wf = widen(g, 3, w, w_size(), bf16);
    const DevPtr gxf = gx ? g.scratch(4, static_cast<size_t>(x_size()) * 4) : 0, gwf = gw ? g.scratch(5, static_cast<size_t>(w_size()) * 4) : 0,
                 gbf = gb ? g.scratch(6, static_cast<size_t>(O) * 4) : 0;
    backward(g, gyf, xf, wf, gxf, gwf, gbf);
    narrow(g, gxf, gx, x_size(), bf16);
    narrow(g, gwf, gw, w_size(), bf16);
    narrow(g, gbf, gb, O, bf16);
  }

  // cuDNN (the app's executor, where it loads it; a package keeps the forms above): its products in
  // the tensors' own type (0 float32, 1 bf16, 2 f16), the bias added and its gradient summed by
  // helper kernels in that type.
  template <class Gpu>
  void run_dnn(Gpu& g, int type, DevPtr x, DevPtr w, DevPtr bias, DevPtr y) const {
    g.dnn_conv(*this, type, 0, x, w, y);
    if (!bias) return;
    long long OO = O, PP = P(), total = static_cast<long long>(N) * O * P();
    if (type == 0) {
      void* params[] = {&y, &bias, &OO, &PP, &total};
      return g.helper_launch("ls_add_channel_bias", (total + 255) / 256, 256, params);
    }
    int b = type == 1 ? 1 : 0;
    void* params[] = {&y, &bias, &OO, &PP, &total, &b};
    g.helper_launch("ls_add_channel_bias_half", g.grid_for(total), 256, params);
  }
  template <class Gpu>
  void backward_dnn(Gpu& g, int type, DevPtr gy, DevPtr x, DevPtr w, DevPtr gx, DevPtr gw, DevPtr gb) const {
    if (gx) g.dnn_conv(*this, type, 1, gy, w, gx);
    if (gw) g.dnn_conv(*this, type, 2, x, gy, gw);
    if (!gb) return;
    int n = N, b = type == 1 ? 1 : 0;
    long long OO = O, PP = P();
    void* params[] = {&gy, &gb, &n, &OO, &PP, &b};  // ls_channel_sum takes the first five
    g.helper_launch(type == 0 ? "ls_channel_sum" : "ls_channel_sum_half", O, 256, params);
  }

  // grad_b is the per-channel sum of grad_y. Depthwise and grouped(): a kernel for each of grad_x
  // (gathers) and grad_w (a block per weight). Linear and 1x1: products. Otherwise per group through
  // the same columns as the forward: grad_w as the sum over images of grad_y[n] (OG x P) @
  // cols[n]^T, grad_cols[n] = w^T @ grad_y[n] (one batched product), then col2im.
  template <class Gpu>
  void backward(Gpu& g, DevPtr gy, DevPtr x, DevPtr w, DevPtr gx, DevPtr gw, DevPtr gb) const {
    const long long P = this->P(), R = this->R(), OG = this->OG();
    if (depthwise || grouped()) {
      int n = N, c = C, h = H, ww = W, o = O, cg = CG, og = static_cast<int>(OG), kh = KH, kw = KW, oh = OH, ow = OW, a = sh, b = sw,
          pa = ph, pb = pw, da = dh, db = dw;
      DevPtr src = w, dst = gx;
      void* params[] = {&gy, &src, &dst, &n, &c, &h, &ww, &o, &cg, &og, &kh, &kw, &oh, &ow, &a, &b, &pa, &pb, &da, &db};
      if (gx) g.helper_launch("ls_grouped_conv_bwd_input", g.grid_for(static_cast<long long>(N) * C * H * W), 256, params);
      src = x;
      dst = gw;
      if (gw) g.helper_launch("ls_grouped_conv_bwd_weight", static_cast<long long>(O) * CG * KH * KW, 256, params);
    } else if (linear()) {
      if (gx) g.sgemm(1, N, R, O, 1.f, gy, false, 0, w, false, 0, 0.f, gx, 0);  // grad_x [N, R] = grad_y @ w
      if (gw) g.sgemm(1, O, R, N, 1.f, gy, true, 0, x, false, 0, 0.f, gw, 0);   // grad_w [O, R] = grad_y^T @ x
    } else if (pointwise()) {
      const long long image = static_cast<long long>(C) * H * W;
      for (int group = 0; group < G; ++group) {
        const DevPtr gyg = plus(gy, group * OG * P);
        if (gw)  // grad_w[group] = sum over images of grad_y[n, group] @ x[n, group]^T
          for (int n = 0; n < N; ++n)
            g.sgemm(1, OG, CG, P, 1.f, plus(gyg, static_cast<long long>(n) * O * P), false, 0, plus(x, n * image + group * CG * P), true, 0,
                    n ? 1.f : 0.f, plus(gw, group * OG * CG), 0);
        if (gx)  // grad_x[n, group] = w[group]^T @ grad_y[n, group], every image at once
          g.sgemm(N, CG, P, OG, 1.f, plus(w, group * OG * CG), true, 0, gyg, false, static_cast<long long>(O) * P, 0.f,
                  plus(gx, group * CG * P), image);
      }
    } else {
      for (int group = 0; group < G; ++group) {
        const DevPtr gyg = plus(gy, group * OG * P);
        if (gw) {
          const DevPtr cols = im2col(g, x, group), gwg = plus(gw, group * OG * R);
          for (int n = 0; n < N; ++n)  // accumulated over images, one product each
            g.sgemm(1, OG, R, P, 1.f, plus(gyg, static_cast<long long>(n) * O * P), false, 0, plus(cols, n * R * P), true, 0, n ? 1.f : 0.f,
                    gwg, 0);
        }
        if (gx) {
          DevPtr cols = columns(g), gxg = plus(gx, static_cast<long long>(group) * CG * H * W);
          g.sgemm(N, R, P, OG, 1.f, plus(w, group * OG * R), true, 0, gyg, false, static_cast<long long>(O) * P, 0.f, cols, R * P);
          int n = N, cg = CG, h = H, ww = W, kh = KH, kw = KW, oh = OH, ow = OW, a = sh, b = sw, c = ph, d = pw, e = dh, f = dw;
          long long x_image = static_cast<long long>(C) * H * W;
          void* params[] = {&cols, &gxg, &n, &cg, &h, &ww, &kh, &kw, &oh, &ow, &a, &b, &c, &d, &e, &f, &x_image};
          g.helper_launch("ls_col2im", g.grid_for(static_cast<long long>(N) * CG * H * W), 256, params);
        }
      }
    }
    if (gb) {
      int n = N;
      long long OO = O, PP = P;
      void* params[] = {&gy, &gb, &n, &OO, &PP};
      g.helper_launch("ls_channel_sum", O, 256, params);
    }
  }
};

// 2-D max pooling over `planes` planes of H x W; idx (int64) null: not wanted (written to scratch).
struct MaxPool {
  long long planes;
  int H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw;
  template <class Gpu>
  void run(Gpu& g, DevPtr x, DevPtr y, DevPtr idx) const {
    if (!idx) idx = g.scratch(0, static_cast<size_t>(planes) * OH * OW * 8);
    long long pl = planes;
    int h = H, w = W, oh = OH, ow = OW, kh = KH, kw = KW, a = sh, b = sw, c = ph, d = pw, e = dh, f = dw;
    void* params[] = {&x, &y, &idx, &pl, &h, &w, &oh, &ow, &kh, &kw, &a, &b, &c, &d, &e, &f};
    g.helper_launch("ls_max_pool2d", g.grid_for(planes * OH * OW), 256, params);
  }
};

// `words` 4-byte words from src to dst (an index_put's or a scatter's self into its output).
template <class Gpu>
void copy_words(Gpu& g, DevPtr dst, DevPtr src, long long words) {
  if (dst == src || words == 0) return;
  long long rows = 1, at = 0;
  void* params[] = {&dst, &src, &rows, &words, &words, &at};
  g.helper_launch("ls_copy_rows", g.grid_for(words), 256, params);
}

// index_put on the device (the helper kernel ls_index_put): the output gets self's bytes, then
// every element of the indexing result is stored (or added) at its place. `d` as the kernel takes
// it (LsIndexPut); code: the element type (0 f32, 1 i32, 2 i64, 3 f64); fault: 4 int64 the kernel
// fills where an index is out of range (0: none kept).
struct IndexPutPlan {
  long long shape[8], out_stride[8], val_stride[8], idx_stride[4][8], dim_stride[4], dim_size[4];
  int rank, nidx, idx64[4];
};
struct IndexPut {
  IndexPutPlan d;
  long long total, self_words;  // result elements; self's size in 4-byte words
  int code;
  bool accumulate;
  template <class Gpu>
  void run(Gpu& g, DevPtr self, const DevPtr* idx, DevPtr values, DevPtr out, DevPtr fault) const {
    copy_words(g, out, self, self_words);
    if (total == 0) return;
    DevPtr i0 = idx[0], i1 = idx[1], i2 = idx[2], i3 = idx[3];
    IndexPutPlan plan = d;
    int c = code, acc = accumulate ? 1 : 0;
    long long n = total;
    void* params[] = {&out, &values, &i0, &i1, &i2, &i3, &plan, &c, &acc, &n, &fault};
    g.helper_launch("ls_index_put", g.grid_for(total), 256, params);
  }
};

// The scatter family on the device (ls_scatter): the output gets self's bytes, then every element
// of the index is stored, added, or max/min-ed at its place. `d` as the kernel takes it (LsScatter);
// code as IndexPut's; mode 0 store, 1 add, 2 max, 3 min; without src the scalar `value`.
struct ScatterPlan {
  long long shape[8], src_stride[8], out_stride[8];
  int rank, dim;
  long long dim_size;
};
struct Scatter {
  ScatterPlan d;
  long long total, self_words;  // index elements; self's size in 4-byte words
  int code, mode;
  double value;
  template <class Gpu>
  void run(Gpu& g, DevPtr self, DevPtr index, DevPtr src, DevPtr out, DevPtr fault) const {
    copy_words(g, out, self, self_words);
    if (total == 0) return;
    ScatterPlan plan = d;
    double v = value;
    int c = code, m = mode;
    long long n = total;
    void* params[] = {&out, &src, &index, &plan, &v, &c, &m, &n, &fault};
    g.helper_launch("ls_scatter", g.grid_for(total), 256, params);
  }
};

// Cumulative sum along a dimension on the device (ls_cumsum): `lines` of n elements `inner` apart.
struct Cumsum {
  long long outer, n, inner;
  int xcode, ycode;  // 0 f32, 1 i32, 2 i64, 3 f64, 4 bytes (bool, uint8)
  template <class Gpu>
  void run(Gpu& g, DevPtr x, DevPtr y) const {
    long long o = outer, m = n, in = inner;
    int a = xcode, b = ycode;
    void* params[] = {&x, &y, &o, &m, &in, &a, &b};
    g.helper_launch("ls_cumsum", g.grid_for(outer * inner), 256, params);
  }
};

// sort, and topk with sorted=True, on the device (the helper kernel ls_sort_lines): a block of
// threads per line of n <= kMaxN elements, the first k of each written. code: 0 float32, 1 bf16, 2 f16.
struct SortLines {
  static constexpr long long kMaxN = 4096;  // (value, position) pairs of the next power of two: 32 KB of shared memory
  long long outer, n, inner, k;
  int code, descending;
  template <class Gpu>
  void run(Gpu& g, DevPtr x, DevPtr vals, DevPtr idx) const {
    if (outer * inner == 0 || k == 0) return;
    int pow2 = 1;
    while (pow2 < n) pow2 <<= 1;
    long long nn = n, in = inner, kk = k;
    int c = code, d = descending, p = pow2;
    void* params[] = {&x, &vals, &idx, &nn, &in, &kk, &p, &c, &d};
    g.helper_launch("ls_sort_lines", outer * inner, std::min(512, std::max(32, pow2 / 2)), params, static_cast<unsigned>(pow2) * 8u);
  }
};

// One input of a concatenation: `rows` rows of src_row 4-byte words into rows of dst_row, at `at`.
template <class Gpu>
void copy_rows(Gpu& g, DevPtr dst, DevPtr src, long long rows, long long src_row, long long dst_row, long long at) {
  void* params[] = {&dst, &src, &rows, &src_row, &dst_row, &at};
  g.helper_launch("ls_copy_rows", g.grid_for(rows * src_row), 256, params);
}

// An attention operand in its buffer: element offset and strides (batch, head, row, element).
struct View {
  long long offset, sb, sh, sl, se;
};
struct KernelView {  // as the attention kernels take it (LsAttnView): the offset is in the pointer
  long long sb, sh, sl, se;
};
inline KernelView strides(const View& v) { return {v.sb, v.sh, v.sl, v.se}; }
inline DevPtr at(DevPtr base, const View& v) { return plus(base, v.offset); }

// Scaled dot-product attention, forward (out, lse) and backward (dq, dk, dv), by one of three
// paths: the attention module's fused kernels (short sequences), its tiled FlashAttention-2
// kernels (long ones at head sizes 32 and 64), or the scores in memory with batched cuBLAS
// products around softmax kernels (other head sizes). lse is contiguous [B, H, L]; the gradients
// come out contiguous.
struct Attention {
  enum Path { fused, tiled, cublas };
  long long B, H, L, S, E, Ev;
  bool causal;
  float scale;
  Path path;

  View packed(long long rows, long long cols) const { return {0, H * rows * cols, rows * cols, cols, 1}; }
  template <class Gpu>
  void copy4(Gpu& g, DevPtr dst, DevPtr src, const View& s, const View& d, long long rows, long long cols) const {
    long long n0 = B, n1 = H, n2 = rows, n3 = cols, s0 = s.sb, s1 = s.sh, s2 = s.sl, s3 = s.se, d0 = d.sb, d1 = d.sh, d2 = d.sl,
              d3 = d.se;
    void* params[] = {&dst, &src, &n0, &n1, &n2, &n3, &s0, &s1, &s2, &s3, &d0, &d1, &d2, &d3};
    g.helper_launch("ls_strided_copy4", g.grid_for(B * H * rows * cols), 256, params);
  }
  // Operand `base` (rows x cols per head, through its view) packed into scratch slot `slot`.
  template <class Gpu>
  DevPtr pack(Gpu& g, DevPtr base, const View& v, size_t slot, long long rows, long long cols) const {
    const DevPtr dst = g.scratch(slot, static_cast<size_t>(B * H * rows * cols * 4));
    copy4(g, dst, at(base, v), v, packed(rows, cols), rows, cols);
    return dst;
  }

  template <class Gpu>
  void forward(Gpu& g, DevPtr q, View qv, DevPtr k, View kv, DevPtr v, View vv, DevPtr out, View ov, DevPtr lse) const {
    const long long bh = B * H;
    if (path == cublas) {
      const DevPtr qp = pack(g, q, qv, 0, L, E), kp = pack(g, k, kv, 1, S, E), vp = pack(g, v, vv, 2, S, Ev);
      const DevPtr sc = g.scratch(3, static_cast<size_t>(bh * L * S * 4)), op = g.scratch(4, static_cast<size_t>(bh * L * Ev * 4));
      g.sgemm(bh, L, S, E, scale, qp, false, L * E, kp, true, S * E, 0.f, sc, L * S);
      DevPtr scp = sc;
      long long rows = bh * L, LL = L, SS = S;
      int c = causal;
      void* sp[] = {&scp, &lse, &rows, &LL, &SS, &c};
      g.helper_launch("ls_attn_softmax", (rows + 7) / 8, 256, sp);
      g.sgemm(bh, L, Ev, S, 1.f, sc, false, L * S, vp, false, S * Ev, 0.f, op, L * Ev);
      copy4(g, plus(out, ov.offset), op, packed(L, Ev), ov, L, Ev);
      return;
    }
    DevPtr qa = at(q, qv), ka = at(k, kv), va = at(v, vv), oa = at(out, ov);
    KernelView qs = strides(qv), ks = strides(kv), vs = strides(vv), os = strides(ov);
    long long HH = H, LL = L, SS = S;
    float sc = scale;
    int c = causal;
    void* params[] = {&qa, &ka, &va, &oa, &lse, &qs, &ks, &vs, &os, &HH, &LL, &SS, &sc, &c};
    const std::string d = std::to_string(E);
    if (path == tiled) return g.helper_launch("ls_flash_attention_fwd_" + d, bh * ((L + 63) / 64), 256, params);
    g.helper_launch("ls_attention_fwd_" + d, bh * ((L + 63) / 64), 64, params);
  }

  template <class Gpu>
  void backward(Gpu& g, DevPtr go, View gv, DevPtr q, View qv, DevPtr k, View kv, DevPtr v, View vv, DevPtr o, View ov, DevPtr lse,
                DevPtr dq, DevPtr dk, DevPtr dv) const {
    const long long bh = B * H;
    if (path == cublas) {
      const DevPtr gop = pack(g, go, gv, 0, L, Ev), qp = pack(g, q, qv, 1, L, E), kp = pack(g, k, kv, 2, S, E),
                   vp = pack(g, v, vv, 3, S, Ev), op = pack(g, o, ov, 4, L, Ev);
      DevPtr p = g.scratch(5, static_cast<size_t>(bh * L * S * 4)), dp = g.scratch(6, static_cast<size_t>(bh * L * S * 4)),
             drow = g.scratch(7, static_cast<size_t>(bh * L * 4));
      g.sgemm(bh, L, S, E, scale, qp, false, L * E, kp, true, S * E, 0.f, p, L * S);
      long long total = bh * L * S, rows = bh * L, n = Ev, LL = L, SS = S;
      int c = causal;
      DevPtr gop2 = gop, op2 = op;
      void* pr[] = {&p, &lse, &LL, &SS, &total, &c};
      g.helper_launch("ls_attn_probs", g.grid_for(total), 256, pr);
      void* rd[] = {&drow, &gop2, &op2, &rows, &n};
      g.helper_launch("ls_attn_rowdot", g.grid_for(rows), 256, rd);
      g.sgemm(bh, S, Ev, L, 1.f, p, true, L * S, gop, false, L * Ev, 0.f, dv, S * Ev);  // dV = P^T dO
      g.sgemm(bh, L, S, Ev, 1.f, gop, false, L * Ev, vp, true, S * Ev, 0.f, dp, L * S);  // dP = dO V^T
      float sc = scale;
      void* ds[] = {&dp, &p, &drow, &SS, &total, &sc};
      g.helper_launch("ls_attn_dscores", g.grid_for(total), 256, ds);                   // dS
      g.sgemm(bh, L, E, S, 1.f, dp, false, L * S, kp, false, S * E, 0.f, dq, L * E);   // dQ = dS K
      g.sgemm(bh, S, E, L, 1.f, dp, true, L * S, qp, false, L * E, 0.f, dk, S * E);    // dK = dS^T Q
      return;
    }
    // D_i = dO_i . O_i, from the dq kernel to the dk/dv kernel
    DevPtr goa = at(go, gv), qa = at(q, qv), ka = at(k, kv), va = at(v, vv), oa = at(o, ov), drow = g.scratch(0, static_cast<size_t>(bh * L * 4));
    KernelView gs = strides(gv), qs = strides(qv), ks = strides(kv), vs = strides(vv), os = strides(ov);
    long long HH = H, LL = L, SS = S;
    float sc = scale;
    int c = causal;
    void* p1[] = {&goa, &qa, &ka, &va, &oa, &lse, &dq, &drow, &gs, &qs, &ks, &vs, &os, &HH, &LL, &SS, &sc, &c};
    void* p2[] = {&goa, &qa, &ka, &va, &lse, &drow, &dk, &dv, &gs, &qs, &ks, &vs, &HH, &LL, &SS, &sc, &c};
    const std::string d = std::to_string(E);
    const long long q_tiles = (L + 63) / 64, k_tiles = (S + 63) / 64;
    if (path == tiled) {  // dynamic shared memory: the tiles (codegen/cuda_helpers.h)
      const unsigned tile = static_cast<unsigned>(E) * 64 * 4, wide = static_cast<unsigned>(std::max<long long>(E, 64)) * 64 * 4;
      g.helper_launch("ls_flash_attention_bwd_dq_" + d, bh * q_tiles, 256, p1, 4 * tile + wide + 512);
      g.helper_launch("ls_flash_attention_bwd_dkv_" + d, bh * k_tiles, 256, p2, 4 * tile + 2 * wide + 512);
      return;
    }
    g.helper_launch("ls_attention_bwd_dq_" + d, bh * q_tiles, 64, p1);
    g.helper_launch("ls_attention_bwd_dkv_" + d, bh * k_tiles, 64, p2);
  }
};

}  // namespace cuda
}  // namespace lsrt
