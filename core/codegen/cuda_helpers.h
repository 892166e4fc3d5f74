// The runtime's helper kernels around library calls (bias broadcasts, im2col / col2im, pooling,
// copies, attention's softmax pieces), compiled by NVRTC once per machine as their own module
// (after the prelude, cached on disk) and loaded beside each model's kernels, so a model's compile
// builds only its own kernels.
// Helper kernels the runtime launches around library calls.
// y[m, n] = bias broadcast to (M, N): bias is (N), (1), (M, N) or (M, 1) / (1, N).
extern "C" __global__ void ls_broadcast_bias(float* __restrict__ y, const float* __restrict__ b, long long M, long long N,
                                             int per_row, int per_col, long long row_stride) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= M * N) return;
  const long long m = i / N, n = i % N;
  y[i] = b[(per_row ? m * row_stride : 0) + (per_col ? n : 0)];
}
// Per-channel bias of a convolution output (N, C, P).
extern "C" __global__ void ls_add_channel_bias(float* __restrict__ y, const float* __restrict__ b, long long C, long long P,
                                               long long total) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < total) y[i] += b[(i / P) % C];
}
// Convolution as im2col + one batched matrix multiply (cuBLAS): the columns of every image of
// one group, cols[n][r][p], r = (ci, kh, kw), p = (oh, ow); zero where the window is off the image.
extern "C" __global__ void ls_im2col(const float* __restrict__ x, float* __restrict__ cols, int N, int CG, int H, int W, int KH,
                                     int KW, int OH, int OW, int sh, int sw, int ph, int pw, int dh, int dw, long long x_image) {
  const long long P = (long long)OH * OW, R = (long long)CG * KH * KW, total = N * R * P;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
    const long long n = i / (R * P), rp = i % (R * P), r = rp / P, p = rp % P;
    const int ci = (int)(r / (KH * KW)), kh = (int)((r / KW) % KH), kw = (int)(r % KW);
    const int oh = (int)(p / OW), ow = (int)(p % OW);
    const int ih = oh * sh - ph + kh * dh, iw = ow * sw - pw + kw * dw;
    cols[i] = ih >= 0 && ih < H && iw >= 0 && iw < W ? x[n * x_image + ((long long)ci * H + ih) * W + iw] : 0.0f;
  }
}
// Grouped convolution with few input channels a group (depthwise: one channel and one filter a
// group; ResNeXt, RegNet, a channel multiplier): one thread an output, over its group's CG input
// channels and the window. Per-group products would be G tiny GEMMs (and G im2cols) in turn.
extern "C" __global__ void ls_grouped_conv(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int N,
                                           int C, int H, int W, int O, int CG, int OG, int KH, int KW, int OH, int OW, int sh, int sw,
                                           int ph, int pw, int dh, int dw) {
  const long long total = (long long)N * O * OH * OW;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
    const int ow = (int)(i % OW), oh = (int)((i / OW) % OH);
    const long long plane = i / ((long long)OH * OW);
    const int o = (int)(plane % O);
    const long long n = plane / O;
    const float* xp = x + (n * C + (long long)(o / OG) * CG) * H * W;
    const float* wp = w + (long long)o * CG * KH * KW;
    float acc = 0.0f;
    for (int c = 0; c < CG; ++c, xp += (long long)H * W, wp += KH * KW)
      for (int kh = 0; kh < KH; ++kh) {
        const int ih = oh * sh - ph + kh * dh;
        if (ih < 0 || ih >= H) continue;
        for (int kw = 0; kw < KW; ++kw) {
          const int iw = ow * sw - pw + kw * dw;
          if (iw >= 0 && iw < W) acc += xp[ih * W + iw] * wp[kh * KW + kw];
        }
      }
    y[i] = acc;
  }
}
// 2-D max pooling with the flat index (ih * W + iw) of each maximum, as PyTorch returns it.
extern "C" __global__ void ls_max_pool2d(const float* __restrict__ x, float* __restrict__ y, long long* __restrict__ idx,
                                         long long planes, int H, int W, int OH, int OW, int KH, int KW, int sh, int sw, int ph,
                                         int pw, int dh, int dw) {
  const long long total = planes * OH * OW;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
    const int ow = (int)(i % OW), oh = (int)((i / OW) % OH);
    const float* xp = x + (i / ((long long)OH * OW)) * H * W;
    float best = -__int_as_float(0x7f800000);
    long long arg = -1;
    for (int kh = 0; kh < KH; ++kh)
      for (int kw = 0; kw < KW; ++kw) {
        const int ih = oh * sh - ph + kh * dh, iw = ow * sw - pw + kw * dw;
        if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
        const float v = xp[ih * W + iw];
        if (v > best || v != v || arg < 0) {
          best = v;
          arg = (long long)ih * W + iw;
        }
      }
    y[i] = best;
    idx[i] = arg;
  }
}
// Concatenation: copies rows of one input into their place in the output (4-byte words).
extern "C" __global__ void ls_copy_rows(unsigned* __restrict__ dst, const unsigned* __restrict__ src, long long rows,
                                        long long src_row, long long dst_row, long long offset) {
  const long long total = rows * src_row;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x)
    dst[(i / src_row) * dst_row + offset + i % src_row] = src[i];
}
// Attention through cuBLAS for long sequences (the scores in memory, as PyTorch's math path):
// a 4-D strided copy packs operands per (batch, head) and unpacks the output; a softmax over each
// score row (causal mask, log-sum-exp kept); the backward's probabilities from the log-sum-exp and
// its dS = P (dP - D) scale.
extern "C" __global__ void ls_strided_copy4(float* __restrict__ dst, const float* __restrict__ src, long long n0, long long n1,
                                            long long n2, long long n3, long long s0, long long s1, long long s2, long long s3,
                                            long long d0, long long d1, long long d2, long long d3) {
  const long long total = n0 * n1 * n2 * n3;
  if (total < (1ll << 31)) {  // 32-bit division where the sizes allow: several times fewer instructions
    const unsigned m3 = (unsigned)n3, m2 = (unsigned)n2, m1 = (unsigned)n1;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)total; i += gridDim.x * blockDim.x) {
      const unsigned a3 = i % m3, t = i / m3, a2 = t % m2, t2 = t / m2, a1 = t2 % m1, a0 = t2 / m1;
      dst[a0 * d0 + a1 * d1 + a2 * d2 + a3 * d3] = src[a0 * s0 + a1 * s1 + a2 * s2 + a3 * s3];
    }
    return;
  }
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
    const long long a3 = i % n3, a2 = i / n3 % n2, a1 = i / (n3 * n2) % n1, a0 = i / (n3 * n2 * n1);
    dst[a0 * d0 + a1 * d1 + a2 * d2 + a3 * d3] = src[a0 * s0 + a1 * s1 + a2 * s2 + a3 * s3];
  }
}
// A warp per score row (8 rows a block): P = softmax(row) over the visible keys (0 elsewhere),
// and the row's log-sum-exp; lanes read consecutive scores, the row's max and sum by shuffles.
extern "C" __global__ void ls_attn_softmax(float* __restrict__ sc, float* __restrict__ lse, long long rows, long long L, long long S,
                                           int causal) {
  const long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= rows) return;
  const int lane = threadIdx.x & 31;
  const long long i = row % L;
  float* r = sc + row * S;
  const long long lim = causal ? min(S, i + 1) : S;
  const float NEG = -__int_as_float(0x7f800000);
  float m = NEG;
  for (long long j = lane; j < lim; j += 32) m = fmaxf(m, r[j]);
  m = ls_warp_reduce<1, 32>(m);
  float s = 0.f;
  for (long long j = lane; j < lim; j += 32) s += __expf(r[j] - m);
  s = ls_warp_reduce<0, 32>(s);
  const float inv = s > 0.f ? 1.f / s : 0.f;
  for (long long j = lane; j < S; j += 32) r[j] = j < lim ? __expf(r[j] - m) * inv : 0.f;
  if (lane == 0) lse[row] = s > 0.f ? m + __logf(s) : NEG;
}
// Backward: P from the scores and lse (in place), D_i = dO_i . O_i, then dS = P (dP - D) scale.
extern "C" __global__ void ls_attn_probs(float* __restrict__ sc, const float* __restrict__ lse, long long L, long long S,
                                         long long total, int causal) {
  for (long long x = (long long)blockIdx.x * blockDim.x + threadIdx.x; x < total; x += (long long)gridDim.x * blockDim.x) {
    const long long row = x / S, j = x % S, i = row % L;
    sc[x] = !causal || j <= i ? __expf(sc[x] - lse[row]) : 0.f;
  }
}
extern "C" __global__ void ls_attn_rowdot(float* __restrict__ d, const float* __restrict__ a, const float* __restrict__ b, long long rows,
                                          long long n) {
  for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += (long long)gridDim.x * blockDim.x) {
    float s = 0.f;
    for (long long e = 0; e < n; ++e) s += a[r * n + e] * b[r * n + e];
    d[r] = s;
  }
}
extern "C" __global__ void ls_attn_dscores(float* __restrict__ dp, const float* __restrict__ p, const float* __restrict__ drow,
                                           long long S, long long total, float scale) {
  for (long long x = (long long)blockIdx.x * blockDim.x + threadIdx.x; x < total; x += (long long)gridDim.x * blockDim.x)
    dp[x] = p[x] * (dp[x] - drow[x / S]) * scale;
}
// Along one dimension: the output position whose window reads input position i through kernel tap
// k (padding pad, dilation dil, stride), or -1 where none does.
LS_DEV int ls_conv_reader(int i, int pad, int k, int dil, int stride, int out) {
  const int t = i + pad - k * dil;
  if (t < 0 || t % stride) return -1;
  return t / stride < out ? t / stride : -1;
}
// Convolution backward's input gradient from the gradient columns (N x R x P per group): each
// input position gathers the column entries that read it (no atomics).
extern "C" __global__ void ls_col2im(const float* __restrict__ cols, float* __restrict__ x, int N, int CG, int H, int W, int KH, int KW,
                                     int OH, int OW, int sh, int sw, int ph, int pw, int dh, int dw, long long x_image) {
  const long long P = (long long)OH * OW, R = (long long)CG * KH * KW, total = (long long)N * CG * H * W;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
    const int iw = (int)(i % W), ih = (int)((i / W) % H), ci = (int)((i / ((long long)W * H)) % CG);
    const long long n = i / ((long long)CG * H * W);
    float acc = 0.f;
    for (int kh = 0; kh < KH; ++kh) {
      const int oh = ls_conv_reader(ih, ph, kh, dh, sh, OH);
      if (oh < 0) continue;
      for (int kw = 0; kw < KW; ++kw) {
        const int ow = ls_conv_reader(iw, pw, kw, dw, sw, OW);
        if (ow >= 0) acc += cols[n * R * P + ((long long)(ci * KH + kh) * KW + kw) * P + (long long)oh * OW + ow];
      }
    }
    x[n * x_image + ((long long)ci * H + ih) * W + iw] = acc;
  }
}
// The grouped convolution's input gradient: one thread an input element gathering, over the OG
// outputs of its group, the output gradients of the windows that read it (no atomics).
extern "C" __global__ void ls_grouped_conv_bwd_input(const float* __restrict__ gy, const float* __restrict__ w, float* __restrict__ gx,
                                                     int N, int C, int H, int W, int O, int CG, int OG, int KH, int KW, int OH, int OW,
                                                     int sh, int sw, int ph, int pw, int dh, int dw) {
  const long long total = (long long)N * C * H * W;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
    const int iw = (int)(i % W), ih = (int)((i / W) % H);
    const long long plane = i / ((long long)H * W);
    const int c = (int)(plane % C), cc = c % CG, o0 = (c / CG) * OG;
    const long long n = plane / C;
    float acc = 0.f;
    for (int o = o0; o < o0 + OG; ++o) {
      const float* g = gy + (n * O + o) * OH * OW;
      const float* wp = w + ((long long)o * CG + cc) * KH * KW;
      for (int kh = 0; kh < KH; ++kh) {
        const int oh = ls_conv_reader(ih, ph, kh, dh, sh, OH);
        if (oh < 0) continue;
        for (int kw = 0; kw < KW; ++kw) {
          const int ow = ls_conv_reader(iw, pw, kw, dw, sw, OW);
          if (ow >= 0) acc += g[oh * OW + ow] * wp[kh * KW + kw];
        }
      }
    }
    gx[i] = acc;
  }
}
// Its weight gradient [O, CG, KH, KW]: a block per weight, summing gy * x over images and output
// positions (deterministic).
extern "C" __global__ void ls_grouped_conv_bwd_weight(const float* __restrict__ gy, const float* __restrict__ x, float* __restrict__ gw,
                                                      int N, int C, int H, int W, int O, int CG, int OG, int KH, int KW, int OH, int OW,
                                                      int sh, int sw, int ph, int pw, int dh, int dw) {
  const int tap = (int)(blockIdx.x % (KH * KW)), kh = tap / KW, kw = tap % KW;
  const int cc = (int)((blockIdx.x / (KH * KW)) % CG), o = (int)(blockIdx.x / ((long long)KH * KW * CG));
  const int c = (o / OG) * CG + cc;
  const long long P = (long long)OH * OW;
  float s = 0.f;
  for (long long i = threadIdx.x; i < N * P; i += blockDim.x) {
    const long long n = i / P;
    const int oh = (int)((i % P) / OW), ow = (int)(i % OW);
    const int ih = oh * sh - ph + kh * dh, iw = ow * sw - pw + kw * dw;
    if (ih >= 0 && ih < H && iw >= 0 && iw < W) s += gy[(n * O + o) * P + i % P] * x[((n * C + c) * H + ih) * W + iw];
  }
  s = ls_block_reduce<0>(s, 0.f);
  if (threadIdx.x == 0) gw[blockIdx.x] = s;
}
// Bias gradient: the sum of the output gradient over images and positions, a block per channel.
extern "C" __global__ void ls_channel_sum(const float* __restrict__ gy, float* __restrict__ gb, int N, long long O, long long P) {
  const long long o = blockIdx.x;
  float s = 0.f;
  for (long long i = threadIdx.x; i < N * P; i += blockDim.x) s += gy[(i / P) * O * P + o * P + i % P];
  s = ls_block_reduce<0>(s, 0.f);
  if (threadIdx.x == 0) gb[o] = s;
}
// Holds its stream for `ns` nanoseconds (one thread, the device's global timer), so that the
// launches queued behind it while it waits start back to back: the per-kernel timings then
// measure the kernels, not the host's launch latency in front of the first (as Triton's do_bench
// keeps the device busy with its cache flush while it queues the kernel).
extern "C" __global__ void ls_hold(long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
#if __CUDA_ARCH__ >= 700
    __nanosleep(1000);  // Volta and later; older devices spin
#endif
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while ((long long)(t - t0) < ns);
}
// Element i of a float buffer of kind 0 (float32), 1 (bfloat16) or 2 (float16), widened exactly.
LS_DEV float ls_float_of_kind(const void* p, long long i, int kind) {
  if (kind == 1) return ls_float(static_cast<const ls_bf16*>(p)[i]);
  if (kind == 2) return ls_float(static_cast<const ls_f16*>(p)[i]);
  return static_cast<const float*>(p)[i];
}
// max-autotune's check of a candidate kernel against the heuristic's output, on the device: counts
// the elements that differ by more than atol + rtol * max(|expected|, rms), as compare() does on
// the host (NaN matches NaN, an infinity itself). Both buffers of one kind (ls_float_of_kind).
extern "C" __global__ void ls_count_mismatches(const void* __restrict__ a, const void* __restrict__ b, long long n, double atol,
                                               double rtol, double rms, unsigned* __restrict__ count, int kind) {
  unsigned bad = 0;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const float x = ls_float_of_kind(a, i, kind), y = ls_float_of_kind(b, i, kind);
    const bool same = (x != x && y != y) || (isinf(x) && x == y);
    const double d = fabs((double)x - (double)y);
    if (!same && (d != d || d > atol + rtol * fmax(fabs((double)y), rms))) ++bad;
  }
  bad = ls_warp_reduce<0, 32>(bad);
  if ((threadIdx.x & 31) == 0 && bad) atomicAdd(count, bad);
}
// The sum of squares and the count of the finite elements of a float buffer (max-autotune's rms
// under compare()'s tolerance, without downloading the buffer).
extern "C" __global__ void ls_square_sum(const void* __restrict__ a, long long n, double* __restrict__ sum,
                                         unsigned long long* __restrict__ finite, int kind) {
  double s = 0;
  unsigned long long f = 0;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const float x = ls_float_of_kind(a, i, kind);
    if (isfinite(x)) s += (double)x * x, ++f;
  }
  s = ls_warp_reduce<0, 32>(s);
  f = ls_warp_reduce<0, 32>(f);
  if ((threadIdx.x & 31) == 0 && f) {
    atomicAdd(sum, s);
    atomicAdd(finite, f);
  }
}
// index_put (advanced indexing's store, accumulate or not) on the device, as PyTorch's CUDA
// kernel: a thread per element of the indexing result (rank <= 8, at most 4 index tensors, each
// broadcast over the result by its strides). The output already holds self (a device copy); each
// element's place in it is the sum of its plain dimensions' strides and its indexed dimensions'
// indices (wrapped where negative). Accumulation is an atomic add (f32, f64, i32, i64); a plain
// store copies 4 or 8 bytes (repeated places: one of the writes stays, as on PyTorch's GPU). An
// index out of range is recorded in fault[0..3] (flag, value, size, index tensor) and not stored.
struct LsIndexPut {
  long long shape[8], out_stride[8], val_stride[8], idx_stride[4][8], dim_stride[4], dim_size[4];
  int rank, nidx, idx64[4];
};
extern "C" __global__ void ls_index_put(void* __restrict__ out, const void* __restrict__ values, const void* i0, const void* i1,
                                        const void* i2, const void* i3, LsIndexPut d, int code, int accumulate, long long total,
                                        long long* __restrict__ fault) {
  const void* idx[4] = {i0, i1, i2, i3};
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
    long long rem = i, o = 0, v = 0, io[4] = {0, 0, 0, 0};
    for (int k = d.rank - 1; k >= 0; --k) {
      const long long p = rem % d.shape[k];
      rem /= d.shape[k];
      o += p * d.out_stride[k];
      v += p * d.val_stride[k];
      for (int j = 0; j < d.nidx; ++j) io[j] += p * d.idx_stride[j][k];
    }
    bool ok = true;
    for (int j = 0; j < d.nidx && ok; ++j) {
      long long x = d.idx64[j] ? ((const long long*)idx[j])[io[j]] : (long long)((const int*)idx[j])[io[j]];
      const long long n = d.dim_size[j];
      if (x < -n || x >= n) {
        ok = false;
        if (fault && atomicCAS((unsigned long long*)&fault[0], 0ull, 1ull) == 0ull) fault[1] = x, fault[2] = n, fault[3] = j;
        break;
      }
      o += (x < 0 ? x + n : x) * d.dim_stride[j];
    }
    if (!ok) continue;
    if (accumulate) {
      if (code == 0) atomicAdd((float*)out + o, ((const float*)values)[v]);
      else if (code == 1) atomicAdd((int*)out + o, ((const int*)values)[v]);
      else if (code == 2) atomicAdd((unsigned long long*)out + o, ((const unsigned long long*)values)[v]);
      else atomicAdd((double*)out + o, ((const double*)values)[v]);
    } else if (code == 1 || code == 0) {
      ((unsigned*)out)[o] = ((const unsigned*)values)[v];
    } else {
      ((unsigned long long*)out)[o] = ((const unsigned long long*)values)[v];
    }
  }
}
// Cumulative sum along a dimension (outer x n x inner), a thread per line summing in order, as
// the reference does: x and y of codes 0 f32, 1 i32, 2 i64, 3 f64, 4 one byte (bool, uint8); a
// float result sums in double, an integer one in int64 (wrapping).
extern "C" __global__ void ls_cumsum(const void* __restrict__ x, void* __restrict__ y, long long outer, long long n, long long inner,
                                     int xcode, int ycode) {
  const long long lines = outer * inner;
  const bool real = ycode == 0 || ycode == 3;
  for (long long l = (long long)blockIdx.x * blockDim.x + threadIdx.x; l < lines; l += (long long)gridDim.x * blockDim.x) {
    const long long base = (l / inner) * n * inner + l % inner;
    double s = 0;
    unsigned long long si = 0;
    for (long long k = 0; k < n; ++k) {
      const long long at = base + k * inner;
      double dv;
      long long iv;
      if (xcode == 0) dv = ((const float*)x)[at], iv = (long long)dv;
      else if (xcode == 3) dv = ((const double*)x)[at], iv = (long long)dv;
      else if (xcode == 1) iv = ((const int*)x)[at], dv = (double)iv;
      else if (xcode == 2) iv = ((const long long*)x)[at], dv = (double)iv;
      else iv = ((const unsigned char*)x)[at], dv = (double)iv;
      if (real) s += dv;
      else si += (unsigned long long)iv;
      if (ycode == 0) ((float*)y)[at] = (float)s;
      else if (ycode == 3) ((double*)y)[at] = s;
      else ((long long*)y)[at] = (long long)si;
    }
  }
}
// The scatter family on the device (scatter.src, scatter.value, scatter_add, scatter_reduce with
// sum, amax or amin including self): a thread per element of the index (rank <= 8), its place in
// the output that of its position with the index's value along `dim`; the output already holds
// self. mode: 0 store (repeated places: one of the writes stays, as on PyTorch's GPU), 1 add,
// 2 max, 3 min (atomics; a NaN wins, as amax/amin propagate it). src null: the scalar `value`.
// An index out of range (negative included, as scatter takes no negative index) is recorded in
// fault[0..3] (flag, value, size, dim) and not stored.
struct LsScatter {
  long long shape[8], src_stride[8], out_stride[8];
  int rank, dim;
  long long dim_size;
};
__device__ void ls_atomic_extreme(float* a, float v, bool max) {
  unsigned* p = (unsigned*)a;
  unsigned old = *p, assumed;
  do {
    assumed = old;
    const float cur = __uint_as_float(assumed);
    if (cur != cur || (v == v && (max ? cur >= v : cur <= v))) return;
    old = atomicCAS(p, assumed, __float_as_uint(v));
  } while (assumed != old);
}
__device__ void ls_atomic_extreme(double* a, double v, bool max) {
  unsigned long long* p = (unsigned long long*)a;
  unsigned long long old = *p, assumed;
  do {
    assumed = old;
    const double cur = __longlong_as_double((long long)assumed);
    if (cur != cur || (v == v && (max ? cur >= v : cur <= v))) return;
    old = atomicCAS(p, assumed, (unsigned long long)__double_as_longlong(v));
  } while (assumed != old);
}
__device__ void ls_scatter_one(float* out, long long o, float v, int mode) {
  if (mode == 0) out[o] = v;
  else if (mode == 1) atomicAdd(out + o, v);
  else ls_atomic_extreme(out + o, v, mode == 2);
}
__device__ void ls_scatter_one(double* out, long long o, double v, int mode) {
  if (mode == 0) out[o] = v;
  else if (mode == 1) atomicAdd(out + o, v);
  else ls_atomic_extreme(out + o, v, mode == 2);
}
__device__ void ls_scatter_one(int* out, long long o, int v, int mode) {
  if (mode == 0) out[o] = v;
  else if (mode == 1) atomicAdd(out + o, v);
  else if (mode == 2) atomicMax(out + o, v);
  else atomicMin(out + o, v);
}
__device__ void ls_scatter_one(long long* out, long long o, long long v, int mode) {
  if (mode == 0) out[o] = v;
  else if (mode == 1) atomicAdd((unsigned long long*)out + o, (unsigned long long)v);
  else if (mode == 2) atomicMax(out + o, v);
  else atomicMin(out + o, v);
}
extern "C" __global__ void ls_scatter(void* __restrict__ out, const void* __restrict__ src, const long long* __restrict__ index,
                                      LsScatter d, double value, int code, int mode, long long total, long long* __restrict__ fault) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
    long long rem = i, o = 0, s = 0, at_dim = 0;
    for (int k = d.rank - 1; k >= 0; --k) {
      const long long p = rem % d.shape[k];
      rem /= d.shape[k];
      s += p * d.src_stride[k];
      if (k != d.dim) o += p * d.out_stride[k];
    }
    at_dim = index[i];
    if (at_dim < 0 || at_dim >= d.dim_size) {
      if (fault && atomicCAS((unsigned long long*)&fault[0], 0ull, 1ull) == 0ull) fault[1] = at_dim, fault[2] = d.dim_size, fault[3] = d.dim;
      continue;
    }
    o += at_dim * d.out_stride[d.dim];
    if (code == 0) ls_scatter_one((float*)out, o, src ? ((const float*)src)[s] : (float)value, mode);
    else if (code == 1) ls_scatter_one((int*)out, o, src ? ((const int*)src)[s] : (int)value, mode);
    else if (code == 2) ls_scatter_one((long long*)out, o, src ? ((const long long*)src)[s] : (long long)value, mode);
    else ls_scatter_one((double*)out, o, src ? ((const double*)src)[s] : value, mode);
  }
}
// Half-precision convolutions run as float32 ones on the device (exec/runtime_cuda.h Conv::run_half):
// bf16 or f16 (bf16 != 0) elements widened to float32, and float32 results rounded back to nearest even.
extern "C" __global__ void ls_widen_half(const unsigned short* __restrict__ src, float* __restrict__ dst, long long n, int bf16) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    if (bf16) {
      ls_bf16 h;
      h.x = src[i];
      dst[i] = ls_float(h);
    } else {
      ls_f16 h;
      h.x = src[i];
      dst[i] = ls_float(h);
    }
  }
}
extern "C" __global__ void ls_narrow_half(const float* __restrict__ src, unsigned short* __restrict__ dst, long long n, int bf16) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    dst[i] = bf16 ? ls_to_bf16(src[i]).x : ls_to_f16(src[i]).x;
}
// The bias of a half-precision convolution run by cuDNN (exec/runtime_cuda.h Conv::run_dnn): per
// channel of y (N, C, P), added in float32 and rounded to y's type, as PyTorch adds it after cuDNN.
__device__ inline float ls_half_load(const unsigned short* p, long long i, int bf16) {
  if (bf16) {
    ls_bf16 h;
    h.x = p[i];
    return ls_float(h);
  }
  ls_f16 h;
  h.x = p[i];
  return ls_float(h);
}
extern "C" __global__ void ls_add_channel_bias_half(unsigned short* __restrict__ y, const unsigned short* __restrict__ b, long long C,
                                                    long long P, long long total, int bf16) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
    const float v = ls_half_load(y, i, bf16) + ls_half_load(b, (i / P) % C, bf16);
    y[i] = bf16 ? ls_to_bf16(v).x : ls_to_f16(v).x;
  }
}
// sort, and topk with sorted=True, along a line of n <= 4096 elements (float32, bf16, f16): a
// block per line, (value, position) pairs in shared memory ordered by a bitonic network over the
// next power of two, as the reference kernel's stable sort orders them (NaN above every number,
// equal values by position); the first k written, values copied bit for bit from the input.
// Lines: element (o, j, i) at (o * n + j) * inner + i; the outputs (o, j, i) at (o * k + j) * inner + i.
__device__ inline bool ls_sort_before(float x, int xi, float y, int yi, int descending) {
  if (xi < 0) return false;  // padding goes last
  if (yi < 0) return true;
  const bool xn = x != x, yn = y != y;
  if (xn != yn) return descending ? xn : yn;
  if (!xn && x != y) return descending ? x > y : x < y;
  return xi < yi;
}
extern "C" __global__ void ls_sort_lines(const void* __restrict__ x, void* __restrict__ vals, long long* __restrict__ idx, long long n,
                                         long long inner, long long k, int pow2, int code, int descending) {
  extern __shared__ float ls_sort_key[];
  int* pos = (int*)(ls_sort_key + pow2);
  const long long line = blockIdx.x, o = line / inner, i = line % inner, in_base = o * n * inner + i, out_base = o * k * inner + i;
  for (int j = threadIdx.x; j < pow2; j += blockDim.x) {
    if (j < n) {
      const long long at = in_base + (long long)j * inner;
      ls_sort_key[j] = code == 0 ? ((const float*)x)[at] : ls_half_load((const unsigned short*)x, at, code == 1);
      pos[j] = j;
    } else {
      ls_sort_key[j] = 0.f;
      pos[j] = -1;
    }
  }
  __syncthreads();
  for (int size = 2; size <= pow2; size <<= 1)
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int t = threadIdx.x; t < pow2 / 2; t += blockDim.x) {
        const int a = 2 * stride * (t / stride) + t % stride, b = a + stride;
        const bool up = (a & size) == 0;  // this run ends up in order; the other in reverse, for the next merge
        const bool out_of_order = up ? ls_sort_before(ls_sort_key[b], pos[b], ls_sort_key[a], pos[a], descending)
                                     : ls_sort_before(ls_sort_key[a], pos[a], ls_sort_key[b], pos[b], descending);
        if (out_of_order) {
          const float kv = ls_sort_key[a];
          ls_sort_key[a] = ls_sort_key[b];
          ls_sort_key[b] = kv;
          const int pv = pos[a];
          pos[a] = pos[b];
          pos[b] = pv;
        }
      }
      __syncthreads();
    }
  for (int j = threadIdx.x; j < k; j += blockDim.x) {
    const long long from = in_base + (long long)pos[j] * inner, to = out_base + (long long)j * inner;
    if (code == 0) ((float*)vals)[to] = ((const float*)x)[from];
    else ((unsigned short*)vals)[to] = ((const unsigned short*)x)[from];
    idx[to] = pos[j];
  }
}
// Its gradient: the sum of a half grad_y (N, O, P) over images and positions in float32, a block
// per channel, rounded once.
extern "C" __global__ void ls_channel_sum_half(const unsigned short* __restrict__ gy, unsigned short* __restrict__ gb, int N, long long O,
                                               long long P, int bf16) {
  const long long o = blockIdx.x;
  float s = 0.f;
  for (long long i = threadIdx.x; i < N * P; i += blockDim.x) s += ls_half_load(gy, (i / P) * O * P + o * P + i % P, bf16);
  s = ls_block_reduce<0>(s, 0.f);
  if (threadIdx.x == 0) gb[o] = bf16 ? ls_to_bf16(s).x : ls_to_f16(s).x;
}
