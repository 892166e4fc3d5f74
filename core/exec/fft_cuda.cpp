#include "exec/fft_cuda.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "ops/known_ops.h"
#include "tensor/tensor.h"

extern const char kFftKernels[];

namespace ls {
namespace {

// A buffer the steps read or write: its slot, shape, element strides and offset (contiguous:
// strides empty).
struct Operand {
  int slot = 0;
  Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  std::vector<int64_t> strides_or_contiguous() const { return strides.empty() ? contiguous_strides(shape) : strides; }
  bool contiguous() const { return offset == 0 && (strides.empty() || strides == contiguous_strides(shape)); }
};

class Planner {
 public:
  Planner(bool f64) : f64_(f64), real_(f64 ? 8 : 4) {}
  FftPlan plan;

  int scratch(int64_t bytes) {
    plan.scratch_bytes.push_back(std::max<int64_t>(bytes, 16));
    return static_cast<int>(plan.scratch_bytes.size()) + 1;
  }

  // dst (contiguous, `shape`) = src read through its strides, dimension d of dst being src's
  // perm[d], zero past src's sizes (src may be smaller than `shape`, never larger).
  void gather(const Operand& src, const std::vector<int>& perm, const Shape& shape, int dst, int bytes, bool widen = false) {
    FftStep s;
    s.kind = FftStep::Kind::gather;
    s.src = src.slot, s.dst = dst, s.shape = shape, s.offset = src.offset, s.bytes = bytes, s.widen = widen;
    const std::vector<int64_t> st = src.strides_or_contiguous();
    for (size_t d = 0; d < perm.size(); ++d) {
      s.strides.push_back(st[perm[d]]);
      s.limits.push_back(std::min(src.shape[perm[d]], shape[d]));
    }
    plan.steps.push_back(s);
  }

  // One cuFFT transform of `type` over `group` (at most 3 dims, in the order given) from src to
  // dst (contiguous, shape `out`), the other dims a batch. Where the group is not the trailing
  // dims or src is not contiguous, src is first gathered with the group last and the result put
  // back in place after. n: the signal's logical sizes.
  void transform(const Operand& src, int dst, const Shape& out, const std::vector<int64_t>& group, FftTransform::Type type, bool forward) {
    const int rank = static_cast<int>(out.size());
    std::vector<int> perm;
    for (int d = 0; d < rank; ++d)
      if (std::find(group.begin(), group.end(), d) == group.end()) perm.push_back(d);
    for (int64_t d : group) perm.push_back(static_cast<int>(d));
    std::vector<int> identity(static_cast<size_t>(rank));
    std::iota(identity.begin(), identity.end(), 0);
    const bool permuted = perm != identity;
    const int in_bytes = type == FftTransform::Type::r2c ? real_ : 2 * real_, out_bytes = type == FftTransform::Type::c2r ? real_ : 2 * real_;
    FftTransform t;
    t.type = type, t.f64 = f64_;
    for (int64_t d : group) t.n.push_back(type == FftTransform::Type::r2c ? src.shape[d] : out[d]);
    t.batch = 1;
    for (size_t i = 0; i + group.size() < perm.size(); ++i) t.batch *= out[perm[i]];
    Shape in_p, out_p;  // the shapes with the group last
    for (int d : perm) in_p.push_back(src.shape[d]), out_p.push_back(out[d]);
    int from = src.slot;
    if (permuted || !src.contiguous()) {
      from = scratch(numel_of(in_p) * in_bytes);
      gather(src, perm, in_p, from, in_bytes);
    }
    const int into = permuted ? scratch(numel_of(out_p) * out_bytes) : dst;
    if (type == FftTransform::Type::c2r) {  // `from` is ours: a copy of the operand
      FftStep z;
      z.kind = FftStep::Kind::real_ends;
      z.src = z.dst = from, z.count = t.batch, z.transform = t, z.f64 = f64_;
      plan.steps.push_back(z);
    }
    FftStep s;
    s.kind = FftStep::Kind::transform;
    s.src = from, s.dst = into, s.transform = t, s.forward = forward;
    plan.steps.push_back(s);
    if (permuted) {  // back: dst's dim d is the result's dim at perm's position of d
      std::vector<int> back(static_cast<size_t>(rank));
      for (int q = 0; q < rank; ++q) back[perm[q]] = q;
      Operand r{into, out_p, {}, 0};
      gather(r, back, out, dst, out_bytes);
    }
  }

  // c2c over `dims` from src into dst (contiguous, shape `s`): groups of at most 3 dims, the
  // last three (ascending) first, then in place on dst.
  void c2c(Operand src, int dst, const Shape& s, std::vector<int64_t> dims, bool forward) {
    std::sort(dims.begin(), dims.end());
    while (!dims.empty()) {
      const size_t k = std::min<size_t>(3, dims.size());
      const std::vector<int64_t> group(dims.end() - static_cast<std::ptrdiff_t>(k), dims.end());
      dims.resize(dims.size() - k);
      transform(src, dst, s, group, FftTransform::Type::c2c, forward);
      src = Operand{dst, s, {}, 0};
    }
  }

  void scale(const Shape& s, bool complex, double factor) {
    if (factor == 1.0) return;
    FftStep st;
    st.kind = FftStep::Kind::scale;
    st.src = st.dst = 1, st.count = numel_of(s) * (complex ? 2 : 1), st.factor = factor, st.f64 = f64_;
    plan.steps.push_back(st);
  }

 private:
  bool f64_;
  int real_;
};

std::string shape_text(const Shape& s) {
  std::string t;
  for (size_t i = 0; i < s.size(); ++i) t += (i ? "x" : "") + std::to_string(s[i]);
  return t.empty() ? "scalar" : t;
}

}  // namespace

std::string FftStep::text() const {
  auto slot = [](int k) { return k == 0 ? std::string("input") : k == 1 ? std::string("output") : "scratch " + std::to_string(k - 2); };
  std::ostringstream o;
  if (kind == Kind::gather) {
    o << (widen ? "widen " : "gather ") << slot(src) << " -> " << slot(dst) << " " << shape_text(shape) << " (" << bytes << "-byte elements)";
  } else if (kind == Kind::transform) {
    o << "cuFFT " << transform.text() << (transform.type == FftTransform::Type::c2c ? (forward ? " forward" : " inverse") : "") << ": "
      << slot(src) << " -> " << slot(dst);
  } else if (kind == Kind::real_ends) {
    o << "zero the imaginary parts at 0 and n/2 of " << count << " lines of " << slot(dst);
  } else {
    o << "scale " << count << " values by " << factor;
  }
  return o.str();
}

std::string FftPlan::text() const {
  std::string t;
  for (const FftStep& s : steps) t += s.text() + "\n";
  return t;
}

std::optional<FftPlan> plan_fft(const OpDef* op, const Shape& in, const std::vector<int64_t>& strides, int64_t offset, const Shape& out,
                                std::vector<int64_t> dims, int64_t normalization, bool flag, DType real) {
  const bool r2c = op == &op::fft_r2c(), c2r = op == &op::fft_c2r(), c2c = op == &op::fft_c2c();
  if (!r2c && !c2r && !c2c) return std::nullopt;
  if (real != DType::f32 && real != DType::f64) return std::nullopt;
  if (normalization < 0 || normalization > 2 || numel_of(in) == 0 || numel_of(out) == 0) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(in.size());
  if (rank > kFftMaxRank || out.size() != in.size() || (!strides.empty() && strides.size() != in.size())) return std::nullopt;
  for (int64_t& d : dims) {
    if (d < 0) d += rank;
    if (d < 0 || d >= rank) return std::nullopt;
  }
  const bool f64 = real == DType::f64;
  const int real_bytes = f64 ? 8 : 4;
  Planner pl(f64);
  const Operand x{0, in, strides, offset};
  Shape full = out;  // the signal's full sizes (the normalization's n)
  if (dims.empty()) {  // no transform: a copy (and no scaling: n = 1)
    std::vector<int> id(in.size());
    std::iota(id.begin(), id.end(), 0);
    pl.gather(x, id, out, 1, 2 * real_bytes, r2c);  // (r2c: widened)
    return pl.plan;
  }
  if (c2c) {
    pl.c2c(x, 1, out, dims, flag);
  } else if (r2c) {
    full = in;
    if (!flag) {  // two-sided: a c2c of the input made complex
      std::vector<int> id(in.size());
      std::iota(id.begin(), id.end(), 0);
      const int w = pl.scratch(numel_of(in) * 2 * real_bytes);
      pl.gather(x, id, in, w, 2 * real_bytes, true);
      pl.c2c(Operand{w, in, {}, 0}, 1, out, dims, true);
    } else {  // one R2C over the last dim and up to two others (ascending before it), c2c over the rest
      const int64_t last = dims.back();
      std::vector<int64_t> others(dims.begin(), dims.end() - 1);
      std::sort(others.begin(), others.end());
      others.erase(std::unique(others.begin(), others.end()), others.end());
      const size_t k = std::min<size_t>(2, others.size());
      std::vector<int64_t> group(others.end() - static_cast<std::ptrdiff_t>(k), others.end());
      group.push_back(last);
      others.resize(others.size() - k);
      pl.transform(x, 1, out, group, FftTransform::Type::r2c, true);
      if (!others.empty()) pl.c2c(Operand{1, out, {}, 0}, 1, out, others, true);
    }
  } else {  // c2r: copied with n/2 + 1 elements along the last dim, inverse c2c over the others, a 1-D C2R
    const int64_t last = dims.back();
    Shape h = in;
    h[last] = out[last] / 2 + 1;
    std::vector<int> id(in.size());
    std::iota(id.begin(), id.end(), 0);
    const int hs = pl.scratch(numel_of(h) * 2 * real_bytes);
    pl.gather(x, id, h, hs, 2 * real_bytes);
    std::vector<int64_t> others(dims.begin(), dims.end() - 1);
    if (!others.empty()) pl.c2c(Operand{hs, h, {}, 0}, hs, h, others, false);
    pl.transform(Operand{hs, h, {}, 0}, 1, out, {last}, FftTransform::Type::c2r, false);
  }
  double n = 1;
  for (int64_t d : dims) n *= static_cast<double>(full[d]);
  pl.scale(out, !c2r, normalization == 1 ? 1.0 / std::sqrt(n) : normalization == 2 ? 1.0 / n : 1.0);
  return pl.plan;
}

std::optional<FftPlan> cuda_fft_plan(const LoopProgram& p, const ExternCall& c) {
  if (c.op != &op::fft_r2c() && c.op != &op::fft_c2r() && c.op != &op::fft_c2c()) return std::nullopt;
  if (c.args.size() < 4 || !c.args[0].is_node() || c.outputs.empty()) return std::nullopt;
  if (transposed_operand(c, 0)) return std::nullopt;
  const size_t i = static_cast<size_t>(c.args[0].node);
  const Shape in = i < c.shapes.size() ? c.shapes[i] : p.buffer(c.inputs.at(i)).shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  if (i < c.strides.size() && !c.strides[i].empty()) {
    strides = c.strides[i];
    offset = i < c.offsets.size() ? c.offsets[i] : 0;
  } else if (numel_of(in) != numel_of(p.buffer(c.inputs.at(i)).shape)) {
    return std::nullopt;
  }
  const DType t = p.buffer(c.inputs.at(i)).dtype;
  const DType real = dtype_is_complex(t) ? real_dtype(t) : t;
  const bool flag = c.op == &op::fft_c2r() ? false : c.args[3].b;
  return plan_fft(c.op, in, strides, offset, p.buffer(c.outputs[0]).shape, c.args[1].ints(), c.args[2].i, flag, real);
}

const char* fft_kernels_source() { return kFftKernels; }

}  // namespace ls
