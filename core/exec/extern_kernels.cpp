#include "exec/extern_kernels.h"

#include "compile/cpu_compiler.h"
#include "exec/attention.h"
#include "interp/reference.h"
#include "ops/known_ops.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <istream>
#include <mutex>
#include <string>
#include <thread>
#include <stdexcept>

#ifdef LOWERSCOPE_HAVE_CBLAS
#include <cblas.h>
extern "C" void openblas_set_num_threads(int);  // in libopenblas, which the build links
#endif

namespace ls {
namespace {

// The library calls' threads. Where kernels have loaded an OpenMP runtime, the calls run on its
// team (loaded_openmp_runtime): the same threads as the generated kernels, still spinning from the
// kernel before, so neither waits for the other's threads to wake or to leave the cores. Before
// that (no CPU kernels loaded), on threads of our own, started on first use and asleep between
// calls. OpenBLAS runs on one thread per call and the calls are split here instead; its own pool
// spins its threads for a long while after each call and held the cores the next kernel needed
// (16 cores: a GELU kernel after a matrix multiply took 8.6 ms instead of 0.4).
// LOWERSCOPE_BLAS=library leaves each matrix multiply to OpenBLAS's own threads instead.
bool split_blas() {
  static const bool split = [] {
    const char* e = std::getenv("LOWERSCOPE_BLAS");
    return !(e && std::string(e) == "library");
  }();
  return split;
}

class Pool {
 public:
  static Pool& get() {
    static Pool* p = new Pool;  // never destroyed: its sleeping workers wait on it until the process ends
    return *p;
  }
  int size() const {
    const OpenMpRuntime rt = loaded_openmp_runtime();
    return rt.parallel ? std::max(1, rt.max_threads()) : hardware_;
  }
  // Runs task(i) for i in [0, n), the calling thread taking part; returns when all are done.
  void run(int n, const std::function<void(int)>& task) {
    // A task that asks for parallel work again runs it itself: the team is busy with its caller.
    if (n <= 1 || hardware_ <= 1 || inside_) {
      for (int i = 0; i < n; ++i) task(i);
      return;
    }
    const OpenMpRuntime rt = loaded_openmp_runtime();
    if (rt.parallel && !rt.in_parallel()) {
      struct Work {
        const std::function<void(int)>* task;
        std::atomic<int> next{0};
        int n;
      } w{&task, {}, n};
      rt.parallel(
          [](void* p) {
            Work& w = *static_cast<Work*>(p);
            inside_ = true;
            for (int i; (i = w.next.fetch_add(1)) < w.n;) (*w.task)(i);
            inside_ = false;
          },
          &w, 0, 0);  // the whole team, even for fewer tasks: a worker left out would go to sleep
      return;
    }
    std::unique_lock<std::mutex> lk(m_);
    if (workers_.empty()) start_workers();
    task_ = &task;
    n_ = n;
    next_ = 0;
    pending_ = n;
    ++generation_;
    cv_.notify_all();
    lk.unlock();
    work();
    lk.lock();
    done_.wait(lk, [this] { return pending_ == 0; });
    task_ = nullptr;
  }

 private:
  Pool() : hardware_(static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))) {
#ifdef LOWERSCOPE_HAVE_CBLAS
    if (split_blas()) openblas_set_num_threads(1);
#endif
  }
  void start_workers() {
    for (int i = 1; i < hardware_; ++i) workers_.emplace_back([this] { loop(); });
    for (auto& w : workers_) w.detach();  // they sleep until the process ends
  }
  void loop() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lk(m_);
        cv_.wait(lk, [&] { return generation_ != seen && task_ != nullptr; });
        seen = generation_;
      }
      work();
    }
  }
  void work() {
    for (;;) {
      int i;
      const std::function<void(int)>* t;
      {
        std::lock_guard<std::mutex> lk(m_);
        if (!task_ || next_ >= n_) return;
        i = next_++;
        t = task_;
      }
      inside_ = true;
      (*t)(i);
      inside_ = false;
      std::lock_guard<std::mutex> lk(m_);
      if (--pending_ == 0) done_.notify_all();
    }
  }
  static thread_local bool inside_;
  const int hardware_;
  std::vector<std::thread> workers_;
  std::mutex m_;
  std::condition_variable cv_, done_;
  const std::function<void(int)>* task_ = nullptr;
  int n_ = 0, next_ = 0, pending_ = 0;
  uint64_t generation_ = 0;
};

thread_local bool Pool::inside_ = false;

// Runs fn(begin, end) over [0, n) on the machine's cores when the work is large enough.
template <typename F>
void parallel_for(int64_t n, int64_t work, F fn) {
  Pool& pool = Pool::get();
  const int64_t parts = std::min<int64_t>(pool.size(), n);
  if (parts <= 1 || work < (1 << 16)) return fn(0, n);
  const int64_t chunk = (n + parts - 1) / parts;
  pool.run(static_cast<int>(parts), [&](int t) {
    const int64_t b = t * chunk, e = std::min(n, b + chunk);
    if (b < e) fn(b, e);
  });
}

// One matrix multiply on the calling thread: C[M,N] = alpha * op(A)[M,K] @ op(B)[K,N] + beta * C,
// row-major with leading dimensions; op(X) = X^T when ta/tb.
void gemm_serial(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, bool ta, const float* B, int64_t ldb,
                 bool tb, float beta, float* C, int64_t ldc) {
#ifdef LOWERSCOPE_HAVE_CBLAS
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(M), static_cast<int>(N),
              static_cast<int>(K), alpha, A, static_cast<int>(lda), B, static_cast<int>(ldb), beta, C, static_cast<int>(ldc));
#else
  for (int64_t i = 0; i < M; ++i) {
    float* c = C + i * ldc;
    for (int64_t j = 0; j < N; ++j) c[j] = beta == 0 ? 0.f : beta * c[j];
    for (int64_t k = 0; k < K; ++k) {
      const float a = alpha * (ta ? A[k * lda + i] : A[i * lda + k]);
      if (tb)
        for (int64_t j = 0; j < N; ++j) c[j] += a * B[j * ldb + k];
      else
        for (int64_t j = 0; j < N; ++j) c[j] += a * B[k * ldb + j];
    }
  }
#endif
}

// How a product of `parts` blocks is cut: tr blocks of rows by tc of columns (tr * tc = parts, at
// least 16 rows and 16 columns a block), the cut whose blocks hold the fewest operand elements,
// (M / tr + N / tc) * K: each block's call packs its rows of A and its columns of B, so blocks of
// whole rows all pack the whole of B; of equal cuts, the one with the fewest blocks of rows. On the GPU machine's 16 cores, 2048 x 1024 x 256 (the
// layernorm_gelu fixture's linear layer, OpenBLAS, tools/bench/gemm_variants.cpp): 16 blocks of
// rows 1.50 ms, 4 x 4 blocks 1.17, one call on OpenBLAS's own threads 1.37. {1, 1} when no cut fits.
std::pair<int64_t, int64_t> gemm_tiles(int64_t M, int64_t N, int64_t parts) {
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

// C[M,N] = alpha * op(A)[M,K] @ op(B)[K,N] + beta * C, row-major, dense operands. Large products
// are cut into blocks of rows and columns (gemm_tiles), one single-threaded BLAS call per block on
// the pool's threads. `before` (rows m0..m1, columns n0..n1: C's initial value, a bias) and `after`
// (elements [b, e) of C: an epilogue, called for each row of a block) run on each block's thread
// around its call, while its elements are in cache; returns whether they did (false: the product
// was not cut, `before` ran on the whole first and the caller runs the epilogue on the whole).
bool sgemm(int64_t M, int64_t N, int64_t K, float alpha, const float* A, bool ta, const float* B, bool tb, float beta, float* C,
           const std::function<void(int64_t, int64_t, int64_t, int64_t)>* before = nullptr, const RowEpilogue* after = nullptr,
           const GemmCut* cut = nullptr) {
  const int64_t lda = ta ? M : K, ldb = tb ? K : N, ldc = N;
  auto call = [&](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    const float* a = ta ? A + m0 : A + m0 * K;
    const float* b = tb ? B + n0 * K : B + n0;
    gemm_serial(m1 - m0, n1 - n0, K, alpha, a, lda, ta, b, ldb, tb, beta, C + m0 * N + n0, ldc);
  };
  const GemmCut chosen = cut && !cut->heuristic() && split_blas() ? *cut : gemm_heuristic_cut(M, N, K);
  const int64_t tr = std::clamp<int64_t>(chosen.rows, 1, M), tc = std::clamp<int64_t>(chosen.cols, 1, N);
  if (tr * tc <= 1) {
    if (before) (*before)(0, M, 0, N);
    call(0, M, 0, N);
    return false;
  }
  const int64_t rows = ((M + tr - 1) / tr + 15) / 16 * 16, cols = ((N + tc - 1) / tc + 15) / 16 * 16;
  // A block's rows in calls of at least 64 rows and about 1 MiB of product, so that an epilogue
  // finds them in its core's cache (the library packs B once a call: 64 rows or more keep that
  // under 2% of the work).
  const int64_t step = after ? std::max<int64_t>(64, (1 << 18) / cols) : rows;
  Pool::get().run(static_cast<int>(tr * tc), [&](int t) {
    const int64_t mb = t / tc * rows, me = std::min(M, mb + rows), n0 = t % tc * cols, n1 = std::min(N, n0 + cols);
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

}  // namespace

int library_threads() { return Pool::get().size(); }

std::string GemmCut::text() const {
  if (is_template()) return as_template().text();
  if (heuristic()) return "the heuristic's cut";
  if (rows * cols == 1) return "one call";
  return std::to_string(rows) + " x " + std::to_string(cols) + " blocks";
}

std::string GemmCut::serialize() const {
  return std::to_string(rows) + " " + std::to_string(cols) + " " + std::to_string(mr) + " " + std::to_string(nr) + " " +
         std::to_string(kc);
}

bool GemmCut::parse(std::istream& in, GemmCut& out) {
  GemmCut c;
  if (!(in >> c.rows >> c.cols >> c.mr >> c.nr >> c.kc)) return false;
  if (c.rows < 0 || c.cols < 0 || c.mr < 0 || c.nr < 0 || c.kc < 0 || (c.mr > 0 && (c.nr <= 0 || c.rows <= 0 || c.cols <= 0)))
    return false;
  out = c;
  return true;
}

GemmCut gemm_heuristic_cut(int64_t M, int64_t N, int64_t K) {
  const int64_t flops = M * N * K;
  const int64_t parts = split_blas() ? std::min<int64_t>(Pool::get().size(), std::max<int64_t>(1, flops / (1 << 18))) : 1;
  const auto [tr, tc] = gemm_tiles(M, N, parts);
  return {tr, tc};
}

std::vector<GemmCut> gemm_candidate_cuts(int64_t M, int64_t N, int64_t K) {
  std::vector<GemmCut> out;
  auto add = [&](GemmCut c) {
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  };
  add(gemm_heuristic_cut(M, N, K));
  if (!split_blas()) return out;
  const int64_t threads = Pool::get().size();
  for (int64_t parts : {threads, threads / 2}) {
    if (parts < 2) continue;
    for (int64_t tr = 1; tr <= parts; ++tr)
      if (parts % tr == 0 && M >= tr * 16 && N >= parts / tr * 16) add({tr, parts / tr});
  }
  add({1, 1});
  return out;
}

bool matmul_sizes(const ExternCall& c, const RefInputs& in, int64_t& M, int64_t& N, int64_t& K) {
  if (c.op == &op::bmm()) {
    const bool ta = transposed_operand(c, 0), tb = transposed_operand(c, 1);
    M = in[0].shape()[ta ? 2 : 1], K = in[0].shape()[ta ? 1 : 2], N = in[1].shape()[tb ? 1 : 2];
    return true;
  }
  if (!op::is_gemm(c.op)) return false;
  const size_t ia = c.op == &op::addmm() ? 1 : 0;
  const bool ta = transposed_operand(c, ia), tb = transposed_operand(c, ia + 1);
  M = in[ia].shape()[ta ? 1 : 0], K = in[ia].shape()[ta ? 0 : 1], N = in[ia + 1].shape()[tb ? 0 : 1];
  return true;
}

bool gemm_problem(const ExternCall& c, const LoopProgram& p, GemmProblem& out) {
  if (!op::is_gemm(c.op)) return false;
  const bool addmm = c.op == &op::addmm();
  const size_t ia = addmm ? 1 : 0, operands = ia + 2;  // (bias,) A, B
  if (c.args.size() < operands) return false;
  for (size_t i = 0; i < operands; ++i)
    if (!c.args[i].is_node() || c.args[i].node < 0 || static_cast<size_t>(c.args[i].node) >= c.shapes.size()) return false;
  // An operand read in place through strides is not the dense matrix the template packs.
  for (const auto& s : c.strides)
    if (!s.empty()) return false;
  const auto input = [&](size_t i) { return static_cast<size_t>(c.args[i].node); };
  for (size_t i = 0; i < operands; ++i)
    if (p.buffer(c.inputs.at(input(i))).dtype != DType::f32) return false;
  GemmProblem g;
  g.ta = transposed_operand(c, ia);
  g.tb = transposed_operand(c, ia + 1);
  const Shape& a = c.shapes.at(input(ia));
  const Shape& b = c.shapes.at(input(ia + 1));
  if (a.size() != 2 || b.size() != 2) return false;
  g.M = a[g.ta ? 1 : 0], g.K = a[g.ta ? 0 : 1], g.N = b[g.tb ? 0 : 1];
  if ((g.tb ? b[1] : b[0]) != g.K) return false;
  if (addmm) {
    const Shape& bias = c.shapes.at(input(0));
    const bool per_row = bias.size() == 2 && bias[0] != 1;
    const bool per_col = !bias.empty() && bias.back() != 1;
    if (bias.size() > 2 || (per_row && bias[0] != g.M) || (per_col && bias.back() != g.N)) return false;
    g.bias = per_row && per_col ? GemmProblem::Bias::matrix
             : per_row          ? GemmProblem::Bias::row
             : per_col          ? GemmProblem::Bias::column
                                : GemmProblem::Bias::scalar;
    g.beta = static_cast<float>(c.args[3].number());
    g.alpha = static_cast<float>(c.args[4].number());
  }
  out = g;
  return true;
}

GemmPointers gemm_pointers(const ExternCall& c, const RefInputs& in, std::vector<Tensor>& outs) {
  const bool addmm = c.op == &op::addmm();
  const size_t ia = addmm ? 1 : 0;
  GemmPointers g;
  g.a = static_cast<const float*>(in[ia].data());
  g.b = static_cast<const float*>(in[ia + 1].data());
  g.bias = addmm ? static_cast<const float*>(in[0].data()) : nullptr;
  g.c = static_cast<float*>(outs.at(0).data());
  return g;
}

namespace {

// The operand a transposed input stands for: its last two dimensions swapped (a copy).
Tensor untranspose(const Tensor& t) {
  Shape s = t.shape();
  const size_t r = s.size();
  std::swap(s[r - 1], s[r - 2]);
  Tensor out(t.dtype(), s);
  const int64_t R = s[r - 2], C = s[r - 1], B = t.numel() / std::max<int64_t>(R * C, 1);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; ++j) out.set((b * R + i) * C + j, t.get((b * C + j) * R + i));
  return out;
}

const float* f32(const Tensor& t) { return static_cast<const float*>(t.data()); }
float* f32(Tensor& t) { return static_cast<float*>(t.data()); }

bool all_f32(const RefInputs& in, const std::vector<Tensor>& outs) {
  for (const Tensor& t : in.t)
    if (t.defined() && t.dtype() != DType::f32) return false;
  for (const auto& l : in.lists)
    for (const Tensor& t : l)
      if (t.dtype() != DType::f32) return false;
  for (const Tensor& t : outs)
    if (t.dtype() != DType::f32) return false;
  return true;
}

bool matmul(const ExternCall& c, const RefInputs& in, std::vector<Tensor>& outs, const RowEpilogue* epilogue, const GemmCut* cut) {
  Tensor& y = outs[0];
  int64_t M = 0, N = 0, K = 0;
  matmul_sizes(c, in, M, N, K);
  if (c.op == &op::bmm()) {
    const bool ta = transposed_operand(c, 0), tb = transposed_operand(c, 1);
    const int64_t B = in[0].shape()[0];
    for (int64_t b = 0; b < B; ++b)
      sgemm(M, N, K, 1.f, f32(in[0]) + b * M * K, ta, f32(in[1]) + b * K * N, tb, 0.f, f32(y) + b * M * N, nullptr, nullptr, cut);
    return false;
  }
  const bool addmm = c.op == &op::addmm();
  const size_t ia = addmm ? 1 : 0, ib = addmm ? 2 : 1;
  const Tensor& a = in[ia];
  const Tensor& b = in[ib];
  const bool ta = transposed_operand(c, ia), tb = transposed_operand(c, ib);
  float beta = 0.f;
  std::function<void(int64_t, int64_t, int64_t, int64_t)> bias_rows;
  if (addmm) {  // the bias broadcast into C's rows (on each block's thread), then C = alpha * A @ B + beta * C
    const Tensor& bias = in[0];
    float* yp = f32(y);
    const float* bp = f32(bias);
    const bool per_row = bias.dim() == 2 && bias.shape()[0] != 1;
    const bool per_col = bias.dim() >= 1 && bias.shape().back() != 1;
    const int64_t row_stride = bias.dim() == 2 ? bias.shape()[1] : 0;
    bias_rows = [=](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
      for (int64_t i = i0; i < i1; ++i) {
        const float* src = bp + (per_row ? i * row_stride : 0);
        float* dst = yp + i * N;
        if (per_col) std::memcpy(dst + j0, src + j0, static_cast<size_t>(j1 - j0) * sizeof(float));
        else std::fill(dst + j0, dst + j1, src[0]);
      }
    };
    beta = static_cast<float>(c.args[3].number());
  }
  // Uncut, the bias goes in on every core first.
  const std::function<void(int64_t, int64_t, int64_t, int64_t)> before = [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if (i0 == 0 && i1 == M && j0 == 0 && j1 == N) parallel_for(M, M * N, [&](int64_t r0, int64_t r1) { bias_rows(r0, r1, 0, N); });
    else bias_rows(i0, i1, j0, j1);
  };
  return sgemm(M, N, K, addmm ? static_cast<float>(c.args[4].number()) : 1.f, f32(a), ta, f32(b), tb, beta, f32(y),
               addmm ? &before : nullptr, epilogue, cut);
}


// A per-thread scratch buffer that keeps its pages between calls (a fresh vector of this size is
// a fresh mapping: page faults on every call, which cost more than the convolution itself).
float* scratch(size_t n, int slot) {
  thread_local std::vector<float> buf[2];
  std::vector<float>& b = buf[slot];
  if (b.size() < n) b.resize(n);
  return b.data();
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// How many tasks a convolution's `macs` multiply-adds are split into: at least 2^18 each (smaller
// ones cost more in BLAS packing and hand-offs than they win: MobileNetV3's late layers at batch 1
// took 7.9 ms on 16 threads, 3.3 ms on 4), up to two per thread.
int64_t conv_tasks(int64_t macs) { return std::clamp<int64_t>(macs >> 18, 1, 2 * Pool::get().size()); }

// The window geometry of a 2-D convolution: cols[r, p] is the input under kernel tap r
// (channel, kh, kw) at output position p (oh, ow).
struct ConvShape {
  std::vector<int64_t> st, pad, dil;
  int64_t N, C, H, W, O, CG, KH, KW, OH, OW, G, OG, P, R;
  ConvShape(const Tensor& x, const Tensor& w, const Shape& y, const Arg& stride, const Arg& padding, const Arg& dilation, int64_t groups)
      : st(spatial_pair(stride)), pad(spatial_pair(padding)), dil(spatial_pair(dilation)),
        N(x.shape()[0]), C(x.shape()[1]), H(x.shape()[2]), W(x.shape()[3]), O(w.shape()[0]), CG(w.shape()[1]),
        KH(w.shape()[2]), KW(w.shape()[3]), OH(y[2]), OW(y[3]), G(groups), OG(O / groups), P(OH * OW), R(CG * KH * KW) {}

  // Visits the taps r in [r0, r1) at the positions [p0, p1) one output row segment at a time:
  // f(r, p, n, at, step) covers positions p .. p+n-1, whose inputs are at, at + step, ... within
  // one image and group (at -1: padding). A row's segments are its left padding, its inside, its
  // right padding.
  template <typename F>
  void each_run(int64_t r0, int64_t r1, int64_t p0, int64_t p1, F f) const {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t ci = r / (KH * KW), kh = r / KW % KH, kw = r % KW;
      const int64_t off_w = kw * dil[1] - pad[1];  // iw = ow * st + off_w
      const int64_t ow_lo = off_w >= 0 ? 0 : ceil_div(-off_w, st[1]);
      const int64_t ow_hi = W - 1 - off_w < 0 ? 0 : std::min(OW, (W - 1 - off_w) / st[1] + 1);
      for (int64_t oh = p0 / OW; oh * OW < p1; ++oh) {
        const int64_t a = std::max(p0, oh * OW) - oh * OW, b = std::min(p1, (oh + 1) * OW) - oh * OW;
        const int64_t ih = oh * st[0] - pad[0] + kh * dil[0];
        const int64_t base = oh * OW;
        if (ih < 0 || ih >= H) {
          f(r, base + a, b - a, -1, 0);
          continue;
        }
        const int64_t lo = std::clamp(ow_lo, a, b), hi = std::max(lo, std::min(ow_hi, b));
        if (lo > a) f(r, base + a, lo - a, -1, 0);
        if (hi > lo) f(r, base + lo, hi - lo, (ci * H + ih) * W + lo * st[1] + off_w, st[1]);
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
    each_run(r0, r1, 0, P, [&](int64_t r, int64_t p, int64_t n, int64_t at, int64_t step) {
      if (at < 0) return;
      float* d = xp + at;
      const float* c = cols + (r - r0) * P + p;
      for (int64_t i = 0; i < n; ++i) d[i * step] += c[i];
    });
  }
};

// Convolution as im2col + matrix multiply, one task per image, group and block of output
// positions: the task gathers its columns (taps x positions) into a per-thread buffer and
// multiplies weight[O/G, C/G*KH*KW] by them into its block of the output. Blocks are sized so
// that every core has work even at batch 1.
void convolution(const ExternCall& c, const RefInputs& in, std::vector<Tensor>& outs) {
  const Tensor &x = in[0], &w = in[1];
  Tensor& y = outs[0];
  const ConvShape s(x, w, y.shape(), c.args[3], c.args[4], c.args[5], c.args[8].i);
  const int64_t N = s.N, C = s.C, H = s.H, W = s.W, O = s.O, CG = s.CG, G = s.G, OG = s.OG, P = s.P, R = s.R;
  const float* bias = c.args[2].is_node() ? f32(in[2]) : nullptr;
  if (CG == 1 && OG == 1) {
    // Depthwise: per channel, the plane copied once into a zero-padded buffer, then each output
    // row accumulates its KH*KW shifted input rows (contiguous at stride 1: vector code);
    // channels across the cores.
    const float* xp = f32(x);
    const float* wp = f32(w);
    float* yp = f32(y);
    const int64_t HP = H + 2 * s.pad[0], WP = W + 2 * s.pad[1], KH = s.KH, KW = s.KW;
    const int64_t sh = s.st[0], sw = s.st[1], dh = s.dil[0], dw = s.dil[1], OW = s.OW;
    parallel_for(N * G, N * G * P * R, [&](int64_t b, int64_t e) {
      float* xpad = scratch(static_cast<size_t>(HP * WP), 0);
      std::fill(xpad, xpad + HP * WP, 0.f);  // the border stays zero: only the inside is rewritten
      for (int64_t ng = b; ng < e; ++ng) {
        const int64_t g = ng % G;
        const float* xi = xp + ng * H * W;
        for (int64_t h = 0; h < H; ++h) std::memcpy(xpad + (h + s.pad[0]) * WP + s.pad[1], xi + h * W, static_cast<size_t>(W) * sizeof(float));
        const float* wi = wp + g * R;
        float* yo = yp + ng * P;
        for (int64_t oh = 0; oh < s.OH; ++oh) {
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
    return;
  }
  // A 1x1 window at stride 1 without padding reads the image itself: no columns to gather.
  const bool pointwise = s.KH == 1 && s.KW == 1 && s.st[0] == 1 && s.st[1] == 1 && s.pad[0] == 0 && s.pad[1] == 0;
  // An image and group split into blocks of positions first (at least 32 wide), then, when there are few positions (late layers
  // at batch 1), into blocks of output channels too.
  const int64_t per = ceil_div(conv_tasks(N * G * OG * P * R), N * G);
  const int64_t pblocks = std::clamp<int64_t>(per, 1, std::max<int64_t>(1, P / 32));
  const int64_t oblocks = std::clamp<int64_t>(ceil_div(per, pblocks), 1, std::max<int64_t>(1, OG / 8));
  const int64_t pb = pblocks == 1 ? P : ceil_div(ceil_div(P, pblocks), 16) * 16;
  const int64_t ob = oblocks == 1 ? OG : ceil_div(ceil_div(OG, oblocks), 8) * 8;
  const int64_t np = ceil_div(P, pb), no = ceil_div(OG, ob);
  const float *xp = f32(x), *wp = f32(w);
  float* yp = f32(y);
  parallel_for(N * G * np * no, N * G * OG * P * R, [&](int64_t t0, int64_t t1) {
    float* cols = pointwise ? nullptr : scratch(static_cast<size_t>(R * pb), 0);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t ng = t / (np * no), n = ng / G, g = ng % G;
      const int64_t p0 = t / no % np * pb, p1 = std::min(P, p0 + pb);
      const int64_t o0 = t % no * ob, o1 = std::min(OG, o0 + ob);
      const float* image = xp + (n * C + g * CG) * H * W;
      if (!pointwise) s.im2col(image, cols, 0, R, p0, p1);
      float* yb = yp + (n * O + g * OG + o0) * P + p0;
      if (bias)
        for (int64_t o = o0; o < o1; ++o) std::fill(yb + (o - o0) * P, yb + (o - o0) * P + (p1 - p0), bias[g * OG + o]);
      gemm_serial(o1 - o0, p1 - p0, R, 1.f, wp + (g * OG + o0) * R, R, false, pointwise ? image + p0 : cols, pointwise ? P : p1 - p0,
                  false, bias ? 1.f : 0.f, yb, P);
    }
  });
}

// cat: for each index of the dims before `dim`, each input's contiguous block in turn.
void cat(const ExternCall& c, const RefInputs& in, std::vector<Tensor>& outs) {
  Tensor& y = outs[0];
  const int64_t rank = y.dim();
  int64_t dim = c.args[1].i;
  if (dim < 0) dim += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= y.shape()[d];
  for (int64_t d = dim + 1; d < rank; ++d) inner *= y.shape()[d];
  const int64_t row = y.shape()[dim] * inner;
  int64_t at = 0;
  for (const Tensor& t : in.lists.at(0)) {
    if (t.numel() == 0) continue;
    const int64_t block = t.shape()[dim] * inner;
    const float* src = f32(t);
    float* dst = f32(y) + at;
    for (int64_t o = 0; o < outer; ++o) std::memcpy(dst + o * row, src + o * block, static_cast<size_t>(block) * sizeof(float));
    at += block;
  }
}

// convolution_backward through the same columns, in three parallel passes that never write the
// same element from two threads:
//   grad_x: per image, group and block of input channels, grad_cols = weight^T @ grad_y for the
//           taps of those channels, then col2im into them;
//   grad_weight: per block of taps, the sum over images of grad_y @ cols^T for those taps;
//   grad_bias: per output channel, the sum of grad_y over images and positions.
void convolution_backward(const ExternCall& c, const RefInputs& in, std::vector<Tensor>& outs) {
  const Tensor &gy = in[0], &x = in[1], &w = in[2];
  const ConvShape s(x, w, gy.shape(), c.args[4], c.args[5], c.args[6], c.args[9].i);
  const auto mask = c.args[10].list;
  auto wanted = [&](size_t i) { return i >= mask.size() || mask[i].b; };
  for (Tensor& t : outs) std::memset(t.data(), 0, static_cast<size_t>(t.nbytes()));
  const int64_t KK = s.KH * s.KW, work = s.N * s.G * s.OG * s.P * s.R, tasks = conv_tasks(work);
  const float *gyp = f32(gy), *xp = f32(x), *wp = f32(w);
  if (wanted(0)) {
    const int64_t cblocks = std::clamp<int64_t>(ceil_div(tasks, s.N * s.G), 1, s.CG);
    const int64_t cb = ceil_div(s.CG, cblocks), per = ceil_div(s.CG, cb);
    float* gx = f32(outs[0]);
    parallel_for(s.N * s.G * per, work, [&](int64_t t0, int64_t t1) {
      float* gcols = scratch(static_cast<size_t>(cb * KK * s.P), 0);
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t ng = t / per, n = ng / s.G, g = ng % s.G;
        const int64_t c0 = t % per * cb, c1 = std::min(s.CG, c0 + cb), r0 = c0 * KK, r1 = c1 * KK;
        // gcols[r1-r0, P] = (weight[OG, R] restricted to columns r0..r1)^T @ grad_y[OG, P]
        gemm_serial(r1 - r0, s.P, s.OG, 1.f, wp + g * s.OG * s.R + r0, s.R, true, gyp + (n * s.O + g * s.OG) * s.P, s.P, false, 0.f,
                    gcols, s.P);
        s.col2im(gcols, gx + (n * s.C + g * s.CG) * s.H * s.W, r0, r1);
      }
    });
  }
  if (wanted(1)) {
    const int64_t rblocks = std::clamp<int64_t>(ceil_div(tasks, s.G), 1, std::max<int64_t>(1, s.R / 8));
    const int64_t rb = ceil_div(s.R, rblocks), per = ceil_div(s.R, rb);
    float* gw = f32(outs[1]);
    parallel_for(s.G * per, work, [&](int64_t t0, int64_t t1) {
      float* cols = scratch(static_cast<size_t>(rb * s.P), 1);
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t g = t / per, r0 = t % per * rb, r1 = std::min(s.R, r0 + rb);
        for (int64_t n = 0; n < s.N; ++n) {
          s.im2col(xp + (n * s.C + g * s.CG) * s.H * s.W, cols, r0, r1, 0, s.P);
          // grad_weight[OG, r0..r1] += grad_y[OG, P] @ cols[r1-r0, P]^T
          gemm_serial(s.OG, r1 - r0, s.P, 1.f, gyp + (n * s.O + g * s.OG) * s.P, s.P, false, cols, s.P, true, 1.f,
                      gw + g * s.OG * s.R + r0, s.R);
        }
      }
    });
  }
  if (wanted(2)) {
    float* gb = f32(outs[2]);
    parallel_for(s.O, s.N * s.O * s.P, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        double acc = 0;
        for (int64_t n = 0; n < s.N; ++n) {
          const float* row = gyp + (n * s.O + o) * s.P;
          float part = 0;
          for (int64_t p = 0; p < s.P; ++p) part += row[p];
          acc += part;
        }
        gb[o] = static_cast<float>(acc);
      }
    });
  }
}

// Attention in blocks of query rows, where every operand's rows are contiguous: per (batch, head,
// block of kAttnRows queries) the block's scores against the keys it sees (a causal block: the
// keys up to its last row) as one matrix multiply, the rows' softmax (masked keys zero), then the
// probabilities times the values as another; the scores of a block stay in the thread's cache.
constexpr int64_t kAttnRows = 64;

void attention_forward_blocked(const AttnGeom& g, const AttnOperand& q, const AttnOperand& k, const AttnOperand& v, const AttnOperand& o,
                               const float* qp, const float* kp, const float* vp, float* op, float* lse) {
  const float scale = static_cast<float>(g.scale);
  const int64_t blocks = ceil_div(g.L, kAttnRows), tasks = g.B * g.H * blocks;
  parallel_for(tasks, g.B * g.H * g.L * g.S * (g.E + g.Ev), [&](int64_t t0, int64_t t1) {
    std::vector<float> p(static_cast<size_t>(kAttnRows * g.S)), out(static_cast<size_t>(kAttnRows * g.Ev));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t bh = t / blocks, b = bh / g.H, h = bh % g.H, i0 = t % blocks * kAttnRows, n = std::min(kAttnRows, g.L - i0);
      const int64_t keys = g.causal ? std::min(g.S, i0 + n) : g.S;
      const float *qb = qp + b * q.sb + h * q.sh + i0 * q.sl, *kb = kp + b * k.sb + h * k.sh, *vb = vp + b * v.sb + h * v.sh;
      float* P = p.data();
      if (keys > 0) gemm_serial(n, keys, g.E, scale, qb, q.sl, false, kb, k.sl, true, 0.f, P, keys);
      std::vector<float> sums(static_cast<size_t>(n));
      for (int64_t r = 0; r < n; ++r) {
        float* row = P + r * keys;
        const int64_t lim = g.causal ? std::min(g.S, i0 + r + 1) : g.S;
        float m = -INFINITY, sum = 0;
        for (int64_t j = 0; j < lim; ++j) m = std::max(m, row[j]);
        for (int64_t j = 0; j < lim; ++j) sum += row[j] = std::exp(row[j] - m);
        for (int64_t j = lim; j < keys; ++j) row[j] = 0.f;
        sums[r] = sum;
        lse[bh * g.L + i0 + r] = lim > 0 ? m + std::log(sum) : -INFINITY;
      }
      if (keys > 0) gemm_serial(n, g.Ev, keys, 1.f, P, keys, false, vb, v.sl, false, 0.f, out.data(), g.Ev);
      for (int64_t r = 0; r < n; ++r) {
        float* oi = op + b * o.sb + h * o.sh + (i0 + r) * o.sl;
        const float inv = sums[r] > 0 ? 1.f / sums[r] : 0.f;
        for (int64_t e = 0; e < g.Ev; ++e) oi[e] = keys > 0 ? out[r * g.Ev + e] * inv : 0.f;
      }
    }
  });
}

// Its backward in the same blocks, per (batch, head) (the key gradients sum over the query
// blocks): P = exp(scores - lse) recomputed, dP = dO V^T, dS = P (dP - D) s with D_i = dO_i . O_i,
// then dq = dS K, dk += dS^T Q, dv += P^T dO, each a matrix multiply.
void attention_backward_blocked(const AttnGeom& g, const AttnOperand& go, const AttnOperand& q, const AttnOperand& k, const AttnOperand& v,
                                const AttnOperand& o, const float* gop, const float* qp, const float* kp, const float* vp, const float* opp,
                                const float* lse, float* dq, float* dk, float* dv) {
  const float scale = static_cast<float>(g.scale);
  parallel_for(g.B * g.H, g.B * g.H * g.L * g.S * (2 * g.E + 2 * g.Ev), [&](int64_t b0, int64_t e0) {
    std::vector<float> p(static_cast<size_t>(kAttnRows * g.S)), dp(static_cast<size_t>(kAttnRows * g.S));
    for (int64_t bh = b0; bh < e0; ++bh) {
      const int64_t b = bh / g.H, h = bh % g.H;
      const float *gob = gop + b * go.sb + h * go.sh, *qb = qp + b * q.sb + h * q.sh, *kb = kp + b * k.sb + h * k.sh,
                  *vb = vp + b * v.sb + h * v.sh, *ob = opp + b * o.sb + h * o.sh;
      float *dqb = dq + bh * g.L * g.E, *dkb = dk + bh * g.S * g.E, *dvb = dv + bh * g.S * g.Ev;
      for (int64_t i0 = 0; i0 < g.L; i0 += kAttnRows) {
        const int64_t n = std::min(kAttnRows, g.L - i0), keys = g.causal ? std::min(g.S, i0 + n) : g.S;
        if (keys <= 0) continue;
        float *P = p.data(), *dS = dp.data();
        gemm_serial(n, keys, g.E, scale, qb + i0 * q.sl, q.sl, false, kb, k.sl, true, 0.f, P, keys);
        gemm_serial(n, keys, g.Ev, 1.f, gob + i0 * go.sl, go.sl, false, vb, v.sl, true, 0.f, dS, keys);
        for (int64_t r = 0; r < n; ++r) {
          const int64_t i = i0 + r, lim = g.causal ? std::min(g.S, i + 1) : g.S;
          float D = 0;
          for (int64_t e = 0; e < g.Ev; ++e) D += gob[i * go.sl + e] * ob[i * o.sl + e];
          const float l = lse[bh * g.L + i];
          float *prow = P + r * keys, *drow = dS + r * keys;
          for (int64_t j = 0; j < lim; ++j) {
            prow[j] = std::exp(prow[j] - l);
            drow[j] = prow[j] * (drow[j] - D) * scale;
          }
          for (int64_t j = lim; j < keys; ++j) prow[j] = drow[j] = 0.f;
        }
        gemm_serial(n, g.E, keys, 1.f, dS, keys, false, kb, k.sl, false, 0.f, dqb + i0 * g.E, g.E);
        gemm_serial(keys, g.E, n, 1.f, dS, keys, true, qb + i0 * q.sl, q.sl, false, 1.f, dkb, g.E);
        gemm_serial(keys, g.Ev, n, 1.f, P, keys, true, gob + i0 * go.sl, go.sl, false, 1.f, dvb, g.Ev);
      }
    }
  });
}

// Fused attention, one query row at a time: the scores of the row, its softmax and the weighted
// sum of values never leave the core (FlashAttention's row form, without tiling: the rows of a
// CPU are long enough). Writes the output [B, L, H, Ev] and the log-sum-exp of each row. Operands
// with contiguous rows take the blocked form above.
void attention_forward(const ExternCall& c, const RefInputs& in, std::vector<Tensor>& outs) {
  const size_t iq = c.args[0].node, ik = c.args[1].node, iv = c.args[2].node;
  const AttnGeom g = attn_geom(c);
  const AttnOperand q = attn_operand(c, iq, c.shapes[iq]), k = attn_operand(c, ik, c.shapes[ik]), v = attn_operand(c, iv, c.shapes[iv]);
  const AttnOperand o = attn_output(g, attention_output_heads_inner(c));
  const float *qp = f32(in.t[0]) + q.offset, *kp = f32(in.t[1]) + k.offset, *vp = f32(in.t[2]) + v.offset;
  float *op = f32(outs[0]), *lse = f32(outs[1]);
  if (q.se == 1 && k.se == 1 && v.se == 1 && o.se == 1) return attention_forward_blocked(g, q, k, v, o, qp, kp, vp, op, lse);
  const float scale = static_cast<float>(g.scale);
  const int64_t rows = g.B * g.H * g.L;
  parallel_for(rows, rows * g.S * (g.E + g.Ev), [&](int64_t b0, int64_t e0) {
    std::vector<float> w(static_cast<size_t>(g.S)), acc(static_cast<size_t>(g.Ev));
    for (int64_t row = b0; row < e0; ++row) {
      const int64_t b = row / (g.H * g.L), h = row / g.L % g.H, i = row % g.L;
      const float* qi = qp + b * q.sb + h * q.sh + i * q.sl;
      const float *kb = kp + b * k.sb + h * k.sh, *vb = vp + b * v.sb + h * v.sh;
      float* oi = op + b * o.sb + h * o.sh + i * o.sl;
      const int64_t lim = g.causal ? std::min(g.S, i + 1) : g.S;
      float m = -INFINITY, sum = 0;
      for (int64_t j = 0; j < lim; ++j) {
        float s = 0;
        for (int64_t e = 0; e < g.E; ++e) s += qi[e * q.se] * kb[j * k.sl + e * k.se];
        w[j] = s * scale;
        m = std::max(m, w[j]);
      }
      std::fill(acc.begin(), acc.end(), 0.f);
      for (int64_t j = 0; j < lim; ++j) {
        const float p = std::exp(w[j] - m);
        sum += p;
        for (int64_t e = 0; e < g.Ev; ++e) acc[e] += p * vb[j * v.sl + e * v.se];
      }
      for (int64_t e = 0; e < g.Ev; ++e) oi[e * o.se] = lim > 0 ? acc[e] / sum : 0.f;
      lse[row] = lim > 0 ? m + std::log(sum) : -INFINITY;
    }
  });
}

// Its backward from the saved output and log-sum-exp (the probabilities are recomputed, never
// stored): per (batch, head), D_i = dO_i . O_i, dS_ij = P_ij (dO_i . v_j - D_i), dq = dS k s,
// dk = dS^T q s, dv = P^T dO. Gradients come out contiguous.
void attention_backward(const ExternCall& c, const RefInputs& in, std::vector<Tensor>& outs) {
  const size_t igo = c.args[0].node, iq = c.args[1].node, ik = c.args[2].node, iv = c.args[3].node, io = c.args[5].node;
  const AttnGeom g = attn_geom(c);
  const AttnOperand go = attn_operand(c, igo, c.shapes[igo]), q = attn_operand(c, iq, c.shapes[iq]),
                    k = attn_operand(c, ik, c.shapes[ik]), v = attn_operand(c, iv, c.shapes[iv]), o = attn_operand(c, io, c.shapes[io]);
  const float *gop = f32(in.t[0]) + go.offset, *qp = f32(in.t[1]) + q.offset, *kp = f32(in.t[2]) + k.offset,
              *vp = f32(in.t[3]) + v.offset, *opp = f32(in.t[5]) + o.offset, *lse = f32(in.t[6]);
  float *dq = f32(outs[0]), *dk = f32(outs[1]), *dv = f32(outs[2]);
  for (int i = 0; i < 3; ++i) std::memset(outs[i].data(), 0, static_cast<size_t>(outs[i].nbytes()));
  if (go.se == 1 && q.se == 1 && k.se == 1 && v.se == 1 && o.se == 1)
    return attention_backward_blocked(g, go, q, k, v, o, gop, qp, kp, vp, opp, lse, dq, dk, dv);
  const float scale = static_cast<float>(g.scale);
  parallel_for(g.B * g.H, g.B * g.H * g.L * g.S * (2 * g.E + 2 * g.Ev), [&](int64_t b0, int64_t e0) {
    std::vector<float> D(static_cast<size_t>(g.L));
    for (int64_t bh = b0; bh < e0; ++bh) {
      const int64_t b = bh / g.H, h = bh % g.H;
      const float *gob = gop + b * go.sb + h * go.sh, *qb = qp + b * q.sb + h * q.sh, *kb = kp + b * k.sb + h * k.sh,
                  *vb = vp + b * v.sb + h * v.sh, *ob = opp + b * o.sb + h * o.sh;
      float *dqb = dq + bh * g.L * g.E, *dkb = dk + bh * g.S * g.E, *dvb = dv + bh * g.S * g.Ev;
      for (int64_t i = 0; i < g.L; ++i) {
        float d = 0;
        for (int64_t e = 0; e < g.Ev; ++e) d += gob[i * go.sl + e * go.se] * ob[i * o.sl + e * o.se];
        D[i] = d;
      }
      for (int64_t i = 0; i < g.L; ++i) {
        const int64_t lim = g.causal ? std::min(g.S, i + 1) : g.S;
        const float l = lse[bh * g.L + i];
        for (int64_t j = 0; j < lim; ++j) {
          float s = 0, dp = 0;
          for (int64_t e = 0; e < g.E; ++e) s += qb[i * q.sl + e * q.se] * kb[j * k.sl + e * k.se];
          for (int64_t e = 0; e < g.Ev; ++e) dp += gob[i * go.sl + e * go.se] * vb[j * v.sl + e * v.se];
          const float p = std::exp(s * scale - l), ds = p * (dp - D[i]) * scale;
          for (int64_t e = 0; e < g.E; ++e) {
            dqb[i * g.E + e] += ds * kb[j * k.sl + e * k.se];
            dkb[j * g.E + e] += ds * qb[i * q.sl + e * q.se];
          }
          for (int64_t e = 0; e < g.Ev; ++e) dvb[j * g.Ev + e] += p * gob[i * go.sl + e * go.se];
        }
      }
    }
  });
}

// A strided input gathered into a contiguous tensor of its logical shape (for the reference kernels).
Tensor gather_view(const Tensor& buf, const Shape& shape, const std::vector<int64_t>& strides, int64_t offset) {
  Tensor t(buf.dtype(), shape);
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, at = offset;
    for (size_t d = shape.size(); d-- > 0;) {
      at += rem % shape[d] * strides[d];
      rem /= shape[d];
    }
    t.set(i, buf.get(at));
  }
  return t;
}

}  // namespace

Tensor extern_operand(const ExternCall& c, size_t input, const Tensor& buffer) {
  const bool strided = input < c.strides.size() && !c.strides[input].empty();
  if (strided || input >= c.shapes.size() || buffer.shape() == c.shapes[input]) return buffer;
  return buffer.reshaped(c.shapes[input]);
}

bool have_blas() {
#ifdef LOWERSCOPE_HAVE_CBLAS
  return true;
#else
  return false;
#endif
}

RefInputs extern_inputs(const ExternCall& c, const std::function<Tensor(const std::string&)>& buffer) {
  RefInputs in;
  in.t.resize(c.args.size());
  in.lists.resize(c.args.size());
  for (size_t i = 0; i < c.args.size(); ++i) {
    if (c.args[i].is_node()) {
      const size_t j = static_cast<size_t>(c.args[i].node);
      in.t[i] = extern_operand(c, j, buffer(c.inputs.at(j)));
    }
    for (const Arg& x : c.args[i].list)
      if (x.is_node()) in.lists[i].push_back(buffer(c.inputs.at(static_cast<size_t>(x.node))));
  }
  return in;
}

bool run_extern(const ExternCall& c, const RefInputs& in, std::vector<Tensor>& outs, const RowEpilogue* epilogue, const GemmCut* cut) {
  if (all_f32(in, outs)) {
    if (op::is_matmul(c.op)) return matmul(c, in, outs, epilogue, cut);
    if (c.op == &op::convolution() && !c.args[6].b) return convolution(c, in, outs), false;
    if (c.op == &op::convolution_backward() && !c.args[7].b) return convolution_backward(c, in, outs), false;
    if (c.op == &op::cat()) return cat(c, in, outs), false;
  }
  const bool f32_operands = !in.t.empty() && in.t[0].dtype() == DType::f32 && in.t[1].dtype() == DType::f32;
  if (is_attention(c.op) && f32_operands && !c.args[3].is_node()) return attention_forward(c, in, outs), false;
  if (is_attention_backward(c.op) && f32_operands && !c.args[4].is_node()) return attention_backward(c, in, outs), false;
  RefInputs logical = in;  // the reference kernels take every operand as it is meant
  for (size_t i = 0; i < c.args.size(); ++i) {
    if (transposed_operand(c, i)) logical.t[i] = untranspose(in.t[i]);
    if (!c.args[i].is_node()) continue;
    const size_t k = static_cast<size_t>(c.args[i].node);
    if (k < c.strides.size() && !c.strides[k].empty()) logical.t[i] = gather_view(in.t[i], c.shapes[k], c.strides[k], c.offsets[k]);
  }
  std::vector<Tensor> r = run_reference_kernel(*c.op, c.args, logical, c.output_metas);
  if (attention_output_heads_inner(c)) {  // stored [..., L, H, D]
    const Shape s = r[0].shape();
    const size_t rk = s.size();
    Shape stored = s;
    std::swap(stored[rk - 3], stored[rk - 2]);
    // stored element (.., l, h, d) is logical element (.., h, l, d)
    std::vector<int64_t> perm = contiguous_strides(s);
    std::swap(perm[rk - 3], perm[rk - 2]);
    r[0] = gather_view(r[0], stored, perm, 0);
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    if (r[i].nbytes() != outs[i].nbytes()) throw std::logic_error(c.op->name + ": output " + std::to_string(i) + " has the wrong size");
    std::memcpy(outs[i].data(), r[i].data(), static_cast<size_t>(r[i].nbytes()));
  }
  return false;
}

}  // namespace ls
