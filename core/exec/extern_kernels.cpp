#include "exec/extern_kernels.h"

#include "compile/cpu_compiler.h"
#include "exec/attention.h"
#include "exec/runtime_cpu.h"
#include "interp/reference.h"
#include "ops/known_ops.h"

#include <algorithm>
#include <atomic>
#include <complex>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <istream>
#include <mutex>
#include <string>
#include <thread>
#include <stdexcept>

#ifdef LOWERSCOPE_HAVE_FFTW
#include <fftw3.h>
#endif
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

// The host runtime_cpu.h's library calls run on here: the pool, gemm_serial, scratch buffers that
// keep their pages between calls (a fresh vector of this size is a fresh mapping: page faults on
// every call, which cost more than the convolution itself).
struct AppHost {
  static int threads() { return Pool::get().size(); }
  template <class F>
  static void tasks(int64_t n, const F& f) {
    Pool::get().run(static_cast<int>(n), [&](int i) { f(i); });
  }
  static void gemm(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, bool ta, const float* B, int64_t ldb,
                   bool tb, float beta, float* C, int64_t ldc) {
    gemm_serial(M, N, K, alpha, A, lda, ta, B, ldb, tb, beta, C, ldc);
  }
  static float* scratch(size_t n, int slot) {
    thread_local std::vector<float> buf[2];
    std::vector<float>& b = buf[slot];
    if (b.size() < n) b.resize(n);
    return b.data();
  }
};

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
  const auto [tr, tc] = lsrt::cpu::heuristic_cut(M, N, K, split_blas() ? Pool::get().size() : 1);
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

// The cut a product runs in: max-autotune's where it chose one (and the calls are split here),
// else the heuristic's.
GemmCut cut_of(const GemmCut* cut, int64_t M, int64_t N, int64_t K) {
  return cut && !cut->heuristic() && split_blas() ? *cut : gemm_heuristic_cut(M, N, K);
}

// mm, addmm and bmm through runtime_cpu.h's sgemm: cut into blocks, the bias broadcast and the
// epilogue run on each block's thread (returns whether the epilogue ran).
bool matmul(const ExternCall& c, const RefInputs& in, std::vector<Tensor>& outs, const RowEpilogue* epilogue, const GemmCut* cut) {
  Tensor& y = outs[0];
  int64_t M = 0, N = 0, K = 0;
  matmul_sizes(c, in, M, N, K);
  const GemmCut ch = cut_of(cut, M, N, K);
  if (c.op == &op::bmm()) {
    const bool ta = transposed_operand(c, 0), tb = transposed_operand(c, 1);
    const int64_t B = in[0].shape()[0];
    for (int64_t b = 0; b < B; ++b)
      lsrt::cpu::sgemm<AppHost>(M, N, K, 1.f, f32(in[0]) + b * M * K, ta, f32(in[1]) + b * K * N, tb, 0.f, f32(y) + b * M * N, ch.rows,
                                ch.cols);
    return false;
  }
  const bool addmm = c.op == &op::addmm();
  const size_t ia = addmm ? 1 : 0, ib = addmm ? 2 : 1;
  const bool ta = transposed_operand(c, ia), tb = transposed_operand(c, ib);
  if (!addmm) return lsrt::cpu::sgemm<AppHost>(M, N, K, 1.f, f32(in[ia]), ta, f32(in[ib]), tb, 0.f, f32(y), ch.rows, ch.cols, nullptr, epilogue);
  const Tensor& bias = in[0];
  const bool per_row = bias.dim() == 2 && bias.shape()[0] != 1, per_col = bias.dim() >= 1 && bias.shape().back() != 1;
  return lsrt::cpu::addmm<AppHost>(f32(y), f32(bias), per_row, per_col, bias.dim() == 2 ? bias.shape()[1] : 0, M, N, K, f32(in[ia]), ta,
                                   f32(in[ib]), tb, static_cast<float>(c.args[4].number()), static_cast<float>(c.args[3].number()), ch.rows,
                                   ch.cols, epilogue);
}

// A 2-D convolution's geometry as runtime_cpu.h takes it: x [N, C, H, W], w [O, C/G, KH, KW], y
// [N, O, OH, OW]. A 1-D convolution (x [N, C, L]) is the 2-D one of height 1, the same memory.
lsrt::cpu::Conv<AppHost> conv_of(const Shape& x, const Shape& w, const Shape& y, const Arg& stride, const Arg& padding, const Arg& dilation,
                                 int64_t groups) {
  if (x.size() == 3) {
    auto one_more = [](const Arg& a, int64_t v) { return Arg::of_ints({v, spatial_pair(a)[0]}); };
    return conv_of({x[0], x[1], 1, x[2]}, {w[0], w[1], 1, w[2]}, {y[0], y[1], 1, y[2]}, one_more(stride, 1), one_more(padding, 0),
                   one_more(dilation, 1), groups);
  }
  const std::vector<int64_t> st = spatial_pair(stride), pad = spatial_pair(padding), dil = spatial_pair(dilation);
  return {x[0], x[1], x[2], x[3], w[0], w[1], w[2], w[3], y[2], y[3], groups, st[0], st[1], pad[0], pad[1], dil[0], dil[1]};
}

void convolution(const ExternCall& c, const RefInputs& in, std::vector<Tensor>& outs) {
  conv_of(in[0].shape(), in[1].shape(), outs[0].shape(), c.args[3], c.args[4], c.args[5], c.args[8].i)
      .run(f32(in[0]), f32(in[1]), c.args[2].is_node() ? f32(in[2]) : nullptr, f32(outs[0]));
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

// convolution_backward(grad_y, x, w, ...): the gradients its output mask wants; the others zero.
void convolution_backward(const ExternCall& c, const RefInputs& in, std::vector<Tensor>& outs) {
  const auto mask = c.args[10].list;
  float* grads[3] = {nullptr, nullptr, nullptr};
  for (size_t i = 0; i < outs.size(); ++i) {
    if (i < 3 && (i >= mask.size() || mask[i].b)) grads[i] = f32(outs[i]);
    else std::memset(outs[i].data(), 0, static_cast<size_t>(outs[i].nbytes()));
  }
  conv_of(in[1].shape(), in[2].shape(), in[0].shape(), c.args[4], c.args[5], c.args[6], c.args[9].i)
      .backward(f32(in[0]), f32(in[1]), f32(in[2]), grads[0], grads[1], grads[2]);
}

lsrt::cpu::View view_of(const AttnOperand& a) { return {a.offset, a.sb, a.sh, a.sl, a.se}; }

// Argument `arg` of an attention call, read in place through its strides.
lsrt::cpu::View attn_view(const ExternCall& c, size_t arg) {
  const size_t i = static_cast<size_t>(c.args.at(arg).node);
  return view_of(attn_operand(c, i, c.shapes.at(i)));
}

// Attention (runtime_cpu.h): the output stored [B, L, H, Ev] and the log-sum-exp of each row.
void attention_forward(const ExternCall& c, const RefInputs& in, std::vector<Tensor>& outs) {
  const AttnGeom g = attn_geom(c);
  const lsrt::cpu::Attention<AppHost> a{g.B, g.H, g.L, g.S, g.E, g.Ev, g.causal, static_cast<float>(g.scale),
                                        attn_view(c, 0), attn_view(c, 1), attn_view(c, 2),
                                        view_of(attn_output(g, attention_output_heads_inner(c)))};
  a.run(f32(in.t[0]), f32(in.t[1]), f32(in.t[2]), f32(outs[0]), f32(outs[1]));
}

// Its backward from the saved output and log-sum-exp: (grad_out, q, k, v, _, out, lse, ...).
void attention_backward(const ExternCall& c, const RefInputs& in, std::vector<Tensor>& outs) {
  const AttnGeom g = attn_geom(c);
  const lsrt::cpu::AttentionBackward<AppHost> a{g.B, g.H, g.L, g.S, g.E, g.Ev, g.causal, static_cast<float>(g.scale),
                                                attn_view(c, 0), attn_view(c, 1), attn_view(c, 2), attn_view(c, 3), attn_view(c, 5)};
  a.run(f32(in.t[0]), f32(in.t[1]), f32(in.t[2]), f32(in.t[3]), f32(in.t[5]), f32(in.t[6]), f32(outs[0]), f32(outs[1]), f32(outs[2]));
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
    t.set_complex(i, buf.get_complex(at));  // every dtype (a complex operand too), exactly
  }
  return t;
}

// A tensor seen as [outer, n, inner] around dimension d (d < 0: the flat tensor, one line).
struct Lines {
  int64_t outer = 1, n = 1, inner = 1;
  static Lines around(const Shape& s, int64_t d) {
    Lines l;
    if (d < 0) {
      l.n = numel_of(s);
      return l;
    }
    for (int64_t k = 0; k < d; ++k) l.outer *= s[k];
    l.n = s[d];
    for (size_t k = static_cast<size_t>(d) + 1; k < s.size(); ++k) l.inner *= s[k];
    return l;
  }
};

// The pool's threads over [0, n) in contiguous parts, for work of `elements` in all.
void parallel_parts(int64_t n, int64_t elements, const std::function<void(int64_t, int64_t)>& f) {
  Pool& pool = Pool::get();
  const int parts = static_cast<int>(std::clamp<int64_t>(std::min(n, elements >> 15), 1, pool.size()));
  if (parts <= 1) return f(0, n);
  pool.run(parts, [&](int t) { f(n * t / parts, n * (t + 1) / parts); });
}

// An operand read as the dense tensor it is (no strides, not transposed).
bool dense_operand(const ExternCall& c, size_t arg) {
  if (arg >= c.args.size() || !c.args[arg].is_node()) return false;
  const size_t k = static_cast<size_t>(c.args[arg].node);
  return !(k < c.strides.size() && !c.strides[k].empty()) && !transposed_operand(c, arg);
}

bool is_fft(const OpDef* op) { return op == &op::fft_r2c() || op == &op::fft_c2r() || op == &op::fft_c2c(); }

#ifdef LOWERSCOPE_HAVE_FFTW
// FFTs through FFTW, as ATen's CPU FFTs go through pocketfft (or MKL): each call planned with
// FFTW_ESTIMATE (no timing runs) over the guru interface's strides, in the operand's precision
// (fftwf for complex64, fftw for complex128); the same steps as ATen's kernels: r2c one-sided (a
// two-sided r2c is a c2c of the real input made complex), c2r as an inverse c2c over all but the
// last dimension then a 1-D c2r along it, then the normalization over the signal's full size.
// FFTW's planner is not thread-safe: plans are made and destroyed under one lock.
template <typename R>
struct Fftw;
template <>
struct Fftw<float> {
  using C = fftwf_complex;
  using Plan = fftwf_plan;
  static Plan dft(int r, const fftw_iodim64* d, int h, const fftw_iodim64* hd, C* in, C* out, int sign) {
    return fftwf_plan_guru64_dft(r, d, h, hd, in, out, sign, FFTW_ESTIMATE);
  }
  static Plan r2c(int r, const fftw_iodim64* d, int h, const fftw_iodim64* hd, float* in, C* out) {
    return fftwf_plan_guru64_dft_r2c(r, d, h, hd, in, out, FFTW_ESTIMATE);
  }
  static Plan c2r(int r, const fftw_iodim64* d, int h, const fftw_iodim64* hd, C* in, float* out) {
    return fftwf_plan_guru64_dft_c2r(r, d, h, hd, in, out, FFTW_ESTIMATE);
  }
  static void execute(Plan p) { fftwf_execute(p); }
  static void destroy(Plan p) { fftwf_destroy_plan(p); }
};
template <>
struct Fftw<double> {
  using C = fftw_complex;
  using Plan = fftw_plan;
  static Plan dft(int r, const fftw_iodim64* d, int h, const fftw_iodim64* hd, C* in, C* out, int sign) {
    return fftw_plan_guru64_dft(r, d, h, hd, in, out, sign, FFTW_ESTIMATE);
  }
  static Plan r2c(int r, const fftw_iodim64* d, int h, const fftw_iodim64* hd, double* in, C* out) {
    return fftw_plan_guru64_dft_r2c(r, d, h, hd, in, out, FFTW_ESTIMATE);
  }
  static Plan c2r(int r, const fftw_iodim64* d, int h, const fftw_iodim64* hd, C* in, double* out) {
    return fftw_plan_guru64_dft_c2r(r, d, h, hd, in, out, FFTW_ESTIMATE);
  }
  static void execute(Plan p) { fftw_execute(p); }
  static void destroy(Plan p) { fftw_destroy_plan(p); }
};

std::mutex& fftw_lock() {
  static std::mutex m;
  return m;
}

// The transformed dimensions (n: the logical, full size; strides of the input and the output)
// and the others (the batch), for contiguous tensors of shapes `in` and `out`.
struct FftGeometry {
  std::vector<fftw_iodim64> dims, batch;
};
FftGeometry fft_geometry(const Shape& in, const Shape& out, const Shape& logical, const std::vector<int64_t>& which) {
  const Shape is = contiguous_strides(in), os = contiguous_strides(out);
  FftGeometry g;
  for (int64_t d : which) g.dims.push_back({static_cast<ptrdiff_t>(logical[d]), static_cast<ptrdiff_t>(is[d]), static_cast<ptrdiff_t>(os[d])});
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d)
    if (std::find(which.begin(), which.end(), d) == which.end())
      g.batch.push_back({static_cast<ptrdiff_t>(in[d]), static_cast<ptrdiff_t>(is[d]), static_cast<ptrdiff_t>(os[d])});
  return g;
}

template <typename R, typename Make>
void fftw_once(Make make) {
  typename Fftw<R>::Plan plan;
  {
    std::lock_guard<std::mutex> lock(fftw_lock());
    plan = make();
  }
  if (!plan) throw std::runtime_error("FFTW could not plan the transform");
  Fftw<R>::execute(plan);
  std::lock_guard<std::mutex> lock(fftw_lock());
  Fftw<R>::destroy(plan);
}

// An out-of-place c2c of contiguous x into y (same shape) over `which`.
template <typename R>
void fftw_c2c(std::complex<R>* x, std::complex<R>* y, const Shape& s, const std::vector<int64_t>& which, bool forward) {
  using C = typename Fftw<R>::C;
  const FftGeometry g = fft_geometry(s, s, s, which);
  fftw_once<R>([&] {
    return Fftw<R>::dft(static_cast<int>(g.dims.size()), g.dims.data(), static_cast<int>(g.batch.size()), g.batch.data(), reinterpret_cast<C*>(x),
                        reinterpret_cast<C*>(y), forward ? FFTW_FORWARD : FFTW_BACKWARD);
  });
}

template <typename R>
void fftw_call(const ExternCall& c, const Tensor& x, Tensor& y, const std::vector<int64_t>& dims) {
  using C = typename Fftw<R>::C;
  using Cx = std::complex<R>;
  const int64_t mode = c.args[2].i;
  Shape full = y.shape();  // the signal's full sizes over `dims`
  if (c.op == &op::fft_c2c()) {
    Tensor in = x;  // FFTW takes a pointer to non-const; an out-of-place c2c leaves it as it was
    fftw_c2c<R>(static_cast<Cx*>(in.data()), static_cast<Cx*>(y.data()), x.shape(), dims, c.args[3].b);
  } else if (c.op == &op::fft_r2c()) {
    full = x.shape();
    if (!c.args[3].b) {  // two-sided: a c2c of the input made complex
      Tensor xc(y.dtype(), x.shape());
      for (int64_t i = 0; i < x.numel(); ++i) static_cast<Cx*>(xc.data())[i] = static_cast<const R*>(x.data())[i];
      fftw_c2c<R>(static_cast<Cx*>(xc.data()), static_cast<Cx*>(y.data()), x.shape(), dims, true);
    } else {
      const FftGeometry g = fft_geometry(x.shape(), y.shape(), x.shape(), dims);
      Tensor in = x;
      fftw_once<R>([&] {
        return Fftw<R>::r2c(static_cast<int>(g.dims.size()), g.dims.data(), static_cast<int>(g.batch.size()), g.batch.data(),
                            static_cast<R*>(in.data()), reinterpret_cast<C*>(y.data()));
      });
    }
  } else {  // c2r: an inverse c2c over all but the last dimension, then a 1-D c2r along the last
    const int64_t last = dims.back(), N = y.shape()[last];
    Tensor z(x.dtype(), x.shape());
    const std::vector<int64_t> others(dims.begin(), dims.end() - 1);
    if (others.empty()) std::memcpy(z.data(), x.data(), static_cast<size_t>(x.nbytes()));
    else {
      Tensor in = x;
      fftw_c2c<R>(static_cast<Cx*>(in.data()), static_cast<Cx*>(z.data()), x.shape(), others, false);
    }
    Shape hs = x.shape();  // n/2 + 1 elements along the last dimension: the input's, zeros past it
    hs[last] = N / 2 + 1;
    Tensor h(x.dtype(), hs);
    // The imaginary parts at 0 and n/2 are zeroed: the op (ATen's CPU kernel, the reference)
    // does not read them, and FFTW's c2r is defined for Hermitian input only.
    const Shape zs = contiguous_strides(z.shape());
    for (int64_t i = 0; i < h.numel(); ++i) {
      int64_t rem = i, at = 0, p_last = 0;
      bool inside = true;
      for (size_t d = hs.size(); d-- > 0;) {
        const int64_t p = rem % hs[d];
        rem /= hs[d];
        inside = inside && p < z.shape()[d];
        at += p * zs[d];
        if (static_cast<int64_t>(d) == last) p_last = p;
      }
      Cx& e = static_cast<Cx*>(h.data())[i];
      if (inside) e = static_cast<const Cx*>(z.data())[at];
      if (p_last == 0 || (N % 2 == 0 && p_last == N / 2)) e.imag(0);
    }
    const FftGeometry g = fft_geometry(hs, y.shape(), y.shape(), {last});
    fftw_once<R>([&] {  // a c2r overwrites its input: h is ours
      return Fftw<R>::c2r(1, g.dims.data(), static_cast<int>(g.batch.size()), g.batch.data(), reinterpret_cast<C*>(h.data()),
                          static_cast<R*>(y.data()));
    });
  }
  double n = 1;
  for (int64_t d : dims) n *= static_cast<double>(full[d]);
  const double scale = mode == 1 ? 1.0 / std::sqrt(n) : mode == 2 ? 1.0 / n : 1.0;
  if (scale != 1.0) {
    R* p = static_cast<R*>(y.data());
    const int64_t values = y.numel() * (dtype_is_complex(y.dtype()) ? 2 : 1);
    for (int64_t i = 0; i < values; ++i) p[i] = static_cast<R>(p[i] * scale);
  }
}
#endif

// _fft_r2c, _fft_c2r and _fft_c2c of dense operands through FFTW; false without FFTW (the
// reference kernel runs: a DFT in double) or for a call it does not take (a normalization
// other than 0, 1 and 2, an empty signal).
bool fft(const ExternCall& c, const RefInputs& in, std::vector<Tensor>& outs) {
#ifdef LOWERSCOPE_HAVE_FFTW
  if (!is_fft(c.op) || !dense_operand(c, 0) || c.args[2].i < 0 || c.args[2].i > 2 || in[0].numel() == 0 || outs[0].numel() == 0) return false;
  const int64_t rank = in[0].dim();
  std::vector<int64_t> dims;
  for (int64_t d : c.args[1].ints()) dims.push_back(d < 0 ? d + rank : d);
  const DType t = real_dtype(in[0].dtype());
  if (t == DType::f32) fftw_call<float>(c, in[0], outs[0], dims);
  else if (t == DType::f64) fftw_call<double>(c, in[0], outs[0], dims);
  else return false;
  return true;
#else
  (void)c, (void)in, (void)outs;
  return false;
#endif
}

// index_put(self, [idx], values, accumulate) with one index tensor, on dimension 0, over float32
// rows: embedding_dense_backward, index's gradient, x[idx] = v. self copied, then each index's row
// of values added or written, in index order. The reference kernel does it element by element
// through doubles (GPT-2's embedding gradient, 2048 rows of 768 into 50257: 0.52 s); here whole
// rows, their columns split over the pool's threads, each element's updates still in index order:
// the same numbers. False where the call is not of that form, or an index is out of range (the
// reference kernel runs it, and names the index).
bool index_put_rows(const ExternCall& c, const RefInputs& in, std::vector<Tensor>& outs) {
  if (c.op != &op::index_put() || c.args.size() < 4 || c.args[1].kind != Arg::Kind::list || in.lists.size() < 2) return false;
  const std::vector<Arg>& list = c.args[1].list;
  if (list.size() != 1 || !list[0].is_node() || in.lists[1].size() != 1 || !dense_operand(c, 0) || !dense_operand(c, 2)) return false;
  if (const size_t k = static_cast<size_t>(list[0].node); k < c.strides.size() && !c.strides[k].empty()) return false;
  const Tensor &x = in[0], &v = in[2], &idx = in.lists[1][0];
  if (x.dtype() != DType::f32 || v.dtype() != DType::f32 || outs.size() != 1 || outs[0].dtype() != DType::f32 || x.dim() < 1) return false;
  if (idx.dtype() != DType::i64 && idx.dtype() != DType::i32) return false;
  Shape rows_of_v = idx.shape();  // values: the index's shape, then a row of self (no broadcast)
  rows_of_v.insert(rows_of_v.end(), x.shape().begin() + 1, x.shape().end());
  if (v.shape() != rows_of_v || outs[0].shape() != x.shape()) return false;
  const int64_t rows = x.shape()[0], R = rows ? x.numel() / rows : 0, n = idx.numel();
  std::vector<int64_t> at(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = idx.dtype() == DType::i64 ? static_cast<const int64_t*>(idx.data())[i] : static_cast<const int32_t*>(idx.data())[i];
    if (r < -rows || r >= rows) return false;
    at[static_cast<size_t>(i)] = r < 0 ? r + rows : r;
  }
  float* y = f32(outs[0]);
  const float *src = f32(x), *val = f32(v);
  const bool accumulate = c.args[3].b;
  if (y != src)
    parallel_parts(x.numel(), x.numel(), [&](int64_t b, int64_t e) { std::memcpy(y + b, src + b, static_cast<size_t>(e - b) * sizeof(float)); });
  const auto columns = [&](int64_t j0, int64_t j1) {
    for (int64_t i = 0; i < n; ++i) {
      float* row = y + at[static_cast<size_t>(i)] * R;
      const float* s = val + i * R;
      if (accumulate)
        for (int64_t j = j0; j < j1; ++j) row[j] += s[j];
      else
        std::memcpy(row + j0, s + j0, static_cast<size_t>(j1 - j0) * sizeof(float));
    }
  };
  Pool& pool = Pool::get();
  const int parts = static_cast<int>(std::clamp<int64_t>(std::min(R / 64, (n * R) >> 15), 1, pool.size()));
  if (parts <= 1) columns(0, R);
  else
    pool.run(parts, [&](int t) {
      const int64_t j0 = R * t / parts / 16 * 16, j1 = t + 1 == parts ? R : R * (t + 1) / parts / 16 * 16;  // 64-byte lines apart
      columns(j0, j1);
    });
  return true;
}

// argmax/argmin and max.dim/min.dim of float32: the reference kernel's rule (the first extremum;
// a NaN is the extremum of both, its first occurrence wins) on typed lines, the reduced
// dimension outer and the others inner, so that the comparisons run along contiguous memory;
// lines split over the pool's threads. (The reference kernel, through doubles: 4.4 ms for
// [256, 1000], which a classifier's head or a sampler calls on every step.)
bool arg_extremum(const ExternCall& c, const RefInputs& in, std::vector<Tensor>& outs) {
  const bool arg = c.op == &op::argmax() || c.op == &op::argmin(), values = c.op == &op::max_dim() || c.op == &op::min_dim();
  if ((!arg && !values) || !dense_operand(c, 0) || in[0].dtype() != DType::f32 || in[0].numel() == 0) return false;
  const bool max = c.op == &op::argmax() || c.op == &op::max_dim();
  const Tensor& x = in[0];
  int64_t d = -1;
  if (!c.args[1].is_none()) {
    if (x.dim() == 0) return false;
    d = c.args[1].i < 0 ? c.args[1].i + x.dim() : c.args[1].i;
    if (d < 0 || d >= x.dim()) return false;
  }
  const Lines l = Lines::around(x.shape(), d);
  Tensor& idx = outs.back();
  if (idx.dtype() != DType::i64 || idx.numel() != l.outer * l.inner || (values && outs[0].dtype() != DType::f32)) return false;
  const float* px = f32(x);
  int64_t* pi = static_cast<int64_t*>(idx.data());
  float* pv = values ? f32(outs[0]) : nullptr;
  parallel_parts(l.outer, x.numel(), [&](int64_t o0, int64_t o1) {
    std::vector<float> best(static_cast<size_t>(l.inner));
    for (int64_t o = o0; o < o1; ++o) {
      const float* line = px + o * l.n * l.inner;
      int64_t* at = pi + o * l.inner;
      std::copy(line, line + l.inner, best.begin());
      std::fill(at, at + l.inner, 0);
      for (int64_t k = 1; k < l.n; ++k) {
        const float* row = line + k * l.inner;
        for (int64_t j = 0; j < l.inner; ++j) {
          const float v = row[j], b = best[static_cast<size_t>(j)];
          // better(): a NaN best stays; a NaN v wins; else strictly larger (smaller)
          const bool take = b == b && (v != v || (max ? v > b : v < b));
          best[static_cast<size_t>(j)] = take ? v : b;
          at[j] = take ? k : at[j];
        }
      }
      if (pv) std::copy(best.begin(), best.end(), pv + o * l.inner);
    }
  });
  return true;
}

// cumsum of float32 (accumulated in double, as PyTorch's CPU kernel accumulates in its acc_type)
// and of int64 (wrapping): lines along the dimension, the others inner (contiguous), split over
// the pool's threads.
bool cumsum(const ExternCall& c, const RefInputs& in, std::vector<Tensor>& outs) {
  if (c.op != &op::cumsum() || !dense_operand(c, 0) || in[0].dim() == 0) return false;
  const Tensor& x = in[0];
  Tensor& y = outs[0];
  const bool f = x.dtype() == DType::f32 && y.dtype() == DType::f32, i = x.dtype() == DType::i64 && y.dtype() == DType::i64;
  if ((!f && !i) || y.numel() != x.numel()) return false;
  int64_t d = c.args[1].i < 0 ? c.args[1].i + x.dim() : c.args[1].i;
  if (d < 0 || d >= x.dim()) return false;
  const Lines l = Lines::around(x.shape(), d);
  parallel_parts(l.outer, x.numel(), [&](int64_t o0, int64_t o1) {
    std::vector<double> acc(f ? static_cast<size_t>(l.inner) : 0);
    std::vector<uint64_t> iacc(i ? static_cast<size_t>(l.inner) : 0);
    for (int64_t o = o0; o < o1; ++o) {
      std::fill(acc.begin(), acc.end(), 0.0);
      std::fill(iacc.begin(), iacc.end(), 0);
      for (int64_t k = 0; k < l.n; ++k) {
        const int64_t at = (o * l.n + k) * l.inner;
        if (f) {
          const float* src = f32(x) + at;
          float* dst = f32(y) + at;
          for (int64_t j = 0; j < l.inner; ++j) dst[j] = static_cast<float>(acc[static_cast<size_t>(j)] += src[j]);
        } else {
          const int64_t* src = static_cast<const int64_t*>(x.data()) + at;
          int64_t* dst = static_cast<int64_t*>(y.data()) + at;
          for (int64_t j = 0; j < l.inner; ++j) dst[j] = static_cast<int64_t>(iacc[static_cast<size_t>(j)] += static_cast<uint64_t>(src[j]));
        }
      }
    }
  });
  return true;
}

// sort and topk of float32, typed: each line gathered as (value, position) pairs and ordered by
// the reference kernels' rule (NaN above every number; sort stable; topk chosen as PyTorch's CPU
// kernel chooses: partial_sort where k * 64 <= n, else nth_element and a sort of the first k - 1),
// so the same comparisons give the same indices; lines over the pool's threads. (The reference
// kernel compares through doubles read element by element: a sort of [512, 1024] took 140 ms.)
bool sort_or_topk(const ExternCall& c, const RefInputs& in, std::vector<Tensor>& outs) {
  const bool is_sort = c.op == &op::sort(), is_topk = c.op == &op::topk();
  if ((!is_sort && !is_topk) || !dense_operand(c, 0) || in[0].dtype() != DType::f32 || in[0].dim() == 0) return false;
  if (outs.size() != 2 || outs[0].dtype() != DType::f32 || outs[1].dtype() != DType::i64) return false;
  const Tensor& x = in[0];
  const int64_t dim_arg = is_sort ? c.args[1].i : c.args[2].i;
  const int64_t d = dim_arg < 0 ? dim_arg + x.dim() : dim_arg;
  if (d < 0 || d >= x.dim()) return false;
  const Lines l = Lines::around(x.shape(), d);
  const int64_t k = is_sort ? l.n : c.args[1].i;
  const bool descending = is_sort ? c.args[2].b : c.args[3].b, sorted = is_sort || c.args[4].b;
  if (k < 0 || k > l.n || outs[0].numel() != l.outer * k * l.inner) return false;
  if (k == 0) return true;
  using Elem = std::pair<float, int64_t>;
  const auto before = [descending](const Elem& p, const Elem& q) {
    const float a = p.first, b = q.first;
    if (descending) return (a != a && b == b) || a > b;
    return (a == a && b != b) || a < b;
  };
  const float* px = f32(x);
  float* pv = f32(outs[0]);
  int64_t* pi = static_cast<int64_t*>(outs[1].data());
  parallel_parts(l.outer * l.inner, x.numel() * 8, [&](int64_t b, int64_t e) {
    std::vector<Elem> line(static_cast<size_t>(l.n));
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / l.inner, i = t % l.inner;
      for (int64_t j = 0; j < l.n; ++j) line[static_cast<size_t>(j)] = {px[(o * l.n + j) * l.inner + i], j};
      if (is_sort)  // stable: equal values (NaNs among them) by position, as a stable sort leaves them
        std::sort(line.begin(), line.end(), [&](const Elem& p, const Elem& q) { return before(p, q) || (!before(q, p) && p.second < q.second); });
      else if (k * 64 <= l.n) std::partial_sort(line.begin(), line.begin() + k, line.end(), before);
      else {
        std::nth_element(line.begin(), line.begin() + k - 1, line.end(), before);
        if (sorted) std::sort(line.begin(), line.begin() + k - 1, before);
      }
      for (int64_t j = 0; j < k; ++j) {
        const int64_t to = (o * k + j) * l.inner + i;
        pv[to] = line[static_cast<size_t>(j)].first;
        pi[to] = line[static_cast<size_t>(j)].second;
      }
    }
  });
  return true;
}

// scatter.src, scatter.value and scatter_add of float32 with an int64 index of the same rank:
// self copied, then each index element in order writes (adds) its value at its position with the
// dimension's coordinate replaced by the index, as the reference kernel, typed. False where an
// index is out of range (the reference kernel names it) or the call is not of that form.
bool scatter(const ExternCall& c, const RefInputs& in, std::vector<Tensor>& outs) {
  const bool add = c.op == &op::scatter_add(), value = c.op == &op::scatter_value();
  if ((!add && !value && c.op != &op::scatter_src()) || !dense_operand(c, 0) || !dense_operand(c, 2)) return false;
  if (!value && !dense_operand(c, 3)) return false;
  const Tensor &x = in[0], &index = in[2];
  if (x.dtype() != DType::f32 || outs[0].dtype() != DType::f32 || index.dtype() != DType::i64 || x.dim() == 0 ||
      index.dim() != x.dim() || (!value && (in[3].dtype() != DType::f32 || in[3].dim() != x.dim())))
    return false;
  const int64_t r = x.dim(), d = c.args[1].i < 0 ? c.args[1].i + r : c.args[1].i;
  if (d < 0 || d >= r) return false;
  const Shape &s = x.shape(), &ix = index.shape();
  const Shape src = value ? ix : in[3].shape();
  for (int64_t k = 0; k < r; ++k)
    if (ix[k] > src[k] || (k != d && ix[k] > s[k])) return false;
  const int64_t* pidx = static_cast<const int64_t*>(index.data());
  for (int64_t e = 0; e < index.numel(); ++e)
    if (pidx[e] < 0 || pidx[e] >= s[d]) return false;
  float* y = f32(outs[0]);
  if (y != f32(x)) std::memcpy(y, f32(x), static_cast<size_t>(x.nbytes()));
  const Shape ss = contiguous_strides(s), srs = contiguous_strides(src);
  const float* psrc = value ? nullptr : f32(in[3]);
  const float v = value ? static_cast<float>(c.args[3].number()) : 0.f;
  // Rows of the index's last dimension at a time: the position's other coordinates fixed.
  const int64_t last = ix[r - 1], rows = last ? index.numel() / last : 0;
  Shape p(static_cast<size_t>(r), 0);
  for (int64_t row = 0; row < rows; ++row) {
    int64_t rem = row, to0 = 0, from0 = 0;
    for (int64_t k = r - 2; k >= 0; --k) {
      p[k] = rem % ix[k];
      rem /= ix[k];
      from0 += p[k] * srs[k];
      if (k != d) to0 += p[k] * ss[k];
    }
    const int64_t* irow = pidx + row * last;
    for (int64_t j = 0; j < last; ++j) {  // the last coordinate is j, or the index where d is last
      float& dst = y[to0 + irow[j] * ss[d] + (d == r - 1 ? 0 : j)];
      const float val = value ? v : psrc[from0 + j];
      dst = add ? dst + val : val;
    }
  }
  return true;
}

// A half tensor widened to float32, and a float32 result rounded into a half tensor, typed and
// over the pool's threads (Tensor's cast goes element by element through doubles: 40 of the
// 48 ms of a 1024x1024 bf16 addmm).
Tensor widen_half(const Tensor& t) {
  Tensor out(DType::f32, t.shape());
  const uint16_t* src = static_cast<const uint16_t*>(t.data());
  float* dst = f32(out);
  const bool bf = t.dtype() == DType::bf16;
  parallel_parts(t.numel(), t.numel(), [&](int64_t b, int64_t e) {
    if (bf)
      for (int64_t i = b; i < e; ++i) dst[i] = bf16_bits_to_float(src[i]);
    else
      for (int64_t i = b; i < e; ++i) dst[i] = f16_bits_to_float(src[i]);
  });
  return out;
}
void narrow_into(const Tensor& wide, Tensor& out) {
  const float* src = f32(wide);
  uint16_t* dst = static_cast<uint16_t*>(out.data());
  const bool bf = out.dtype() == DType::bf16;
  parallel_parts(out.numel(), out.numel(), [&](int64_t b, int64_t e) {
    if (bf)
      for (int64_t i = b; i < e; ++i) dst[i] = float_to_bf16_bits(src[i]);
    else
      for (int64_t i = b; i < e; ++i) dst[i] = float_to_f16_bits(src[i]);
  });
}

}  // namespace

Tensor extern_operand(const ExternCall& c, size_t input, const Tensor& buffer) {
  const bool strided = input < c.strides.size() && !c.strides[input].empty();
  if (strided || input >= c.shapes.size() || buffer.shape() == c.shapes[input]) return buffer;
  return buffer.reshaped(c.shapes[input]);
}

std::string extern_library(const LoopProgram& p, const ExternCall& c) {
  if (is_fft(c.op)) {
#ifdef LOWERSCOPE_HAVE_FFTW
    return "FFTW";
#else
    return "reference kernel (no FFTW in this build)";
#endif
  }
  for (const auto* names : {&c.inputs, &c.outputs})
    for (const std::string& b : *names)
      if (dtype_is_complex(p.buffer(b).dtype)) return "reference kernel (complex)";
  return {};
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
      if (x.is_node()) {  // a list's tensors too, in the shapes the kernel sees them (a view's, not its buffer's)
        const size_t j = static_cast<size_t>(x.node);
        in.lists[i].push_back(extern_operand(c, j, buffer(c.inputs.at(j))));
      }
  }
  return in;
}

bool run_extern(const ExternCall& c, const RefInputs& in, std::vector<Tensor>& outs, const RowEpilogue* epilogue, const GemmCut* cut) {
  // Half operands: the float32 kernel (BLAS, the convolution, attention) on widened copies, its
  // results rounded into the half outputs, as PyTorch's CPU kernels for bf16 compute in float32.
  bool half = false;
  for (const Tensor& t : in.t) half = half || (t.defined() && dtype_is_half(t.dtype()));
  for (const auto& l : in.lists)
    for (const Tensor& t : l) half = half || dtype_is_half(t.dtype());
  for (const Tensor& t : outs) half = half || dtype_is_half(t.dtype());
  if (half) {
    auto widen = [](const Tensor& t) { return t.defined() && dtype_is_half(t.dtype()) ? widen_half(t) : t; };
    RefInputs wide = in;
    for (Tensor& t : wide.t) t = widen(t);
    for (auto& l : wide.lists)
      for (Tensor& t : l) t = widen(t);
    std::vector<Tensor> wide_outs;
    for (const Tensor& t : outs) wide_outs.push_back(dtype_is_half(t.dtype()) ? Tensor(DType::f32, t.shape()) : t);
    ExternCall wc = c;
    for (TensorMeta& m : wc.output_metas) m.dtype = compute_dtype(m.dtype);
    run_extern(wc, wide, wide_outs, nullptr, cut);
    for (size_t i = 0; i < outs.size(); ++i)
      if (dtype_is_half(outs[i].dtype())) narrow_into(wide_outs[i], outs[i]);
    return false;
  }
  if (all_f32(in, outs)) {
    if (op::is_matmul(c.op)) return matmul(c, in, outs, epilogue, cut);
    // 1-D and 2-D, not transposed (the rest: the reference kernel)
    if (c.op == &op::convolution() && !c.args[6].b && in[0].dim() <= 4) return convolution(c, in, outs), false;
    if (c.op == &op::convolution_backward() && !c.args[7].b && in[1].dim() <= 4) return convolution_backward(c, in, outs), false;
    if (c.op == &op::cat()) return cat(c, in, outs), false;
  }
  const bool f32_operands = in.t.size() >= 2 && in.t[0].dtype() == DType::f32 && in.t[1].dtype() == DType::f32;
  if (is_attention(c.op) && f32_operands && !c.args[3].is_node()) return attention_forward(c, in, outs), false;
  if (is_attention_backward(c.op) && f32_operands && !c.args[4].is_node()) return attention_backward(c, in, outs), false;
  if (index_put_rows(c, in, outs)) return false;
  if (arg_extremum(c, in, outs) || cumsum(c, in, outs) || sort_or_topk(c, in, outs) || scatter(c, in, outs) || fft(c, in, outs)) return false;
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
