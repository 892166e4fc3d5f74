// ONNX operators beyond onnx.cpp's first ones (issue 33, item 3), mapped onto ATen ops of the
// table, and constant folding of the shape computations exporters write (Shape -> Gather ->
// Concat -> Reshape): our shapes are static, so these fold to constants at import.
// Tested against ONNX Runtime's outputs: tests/onnx/test_onnx_ops.cpp, tests/data/onnx_ops/.
#include "frontend/onnx.h"

#ifdef LOWERSCOPE_HAVE_ONNX
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <set>
#include <stdexcept>

#include "frontend/onnx_importer.h"

namespace ls::onnx_import {
namespace {

constexpr int64_t kFoldMax = int64_t(1) << 16;  // constants folded up to this many elements

Arg list_of(const std::vector<Arg>& v) {
  Arg l;
  l.kind = Arg::Kind::list;
  l.list = v;
  return l;
}
Arg dtype_arg(DType t) { return Arg::of_string(std::string(dtype_torch(t))); }
// The product of dims [from, to); saturates at INT64_MAX (a hostile shape), which no real tensor
// matches, so the checks that compare it fail with their message instead of overflowing.
int64_t prod(const Shape& s, size_t from = 0, size_t to = SIZE_MAX) {
  int64_t p = 1;
  for (size_t i = from; i < s.size() && i < to; ++i)
    if (__builtin_mul_overflow(p, s[i], &p)) return INT64_MAX;
  return p;
}

// The linear index into a tensor of shape `in` that broadcasting reads for output index `o` of shape `out`.
int64_t bcast_index(int64_t o, const Shape& out, const Shape& in) {
  int64_t idx = 0, stride = 1;
  const int64_t off = static_cast<int64_t>(out.size()) - static_cast<int64_t>(in.size());
  for (int64_t d = static_cast<int64_t>(out.size()) - 1; d >= 0; --d) {
    const int64_t c = o % out[d];
    o /= out[d];
    const int64_t k = d - off;
    if (k < 0) continue;
    if (in[k] != 1) idx += c * stride;
    stride *= in[k];
  }
  return idx;
}

bool is_int_type(DType t) { return t == DType::i64 || t == DType::i32 || t == DType::u8 || t == DType::b8; }

// Round half to even, and ONNX's nearest modes.
double nearest(double x, const std::string& mode) {
  const double f = std::floor(x);
  if (mode == "floor") return f;
  if (mode == "ceil") return std::ceil(x);
  if (x - f == 0.5) return mode == "round_prefer_ceil" ? f + 1 : f;
  return std::round(x);
}


// ---- LSTM and GRU (ONNX's equations, unrolled over time) -----------------------------------
// Gate order as ONNX gives it (LSTM: i, o, f, c; GRU: z, r, h), not PyTorch's; per direction
// the input projection of every step as one matrix product, then per step the hidden one and
// the cell's pointwise update. Errors are std::invalid_argument: the caller names the node.
struct RnnSpec {
  bool lstm = true, lbr = false;
  int64_t T = 0, B = 0, I = 0, H = 0, dirs = 1;
  bool reverse = false;  // one direction, backwards
  double clip = 0;       // 0: none
  std::vector<std::string> acts;  // per direction: f, g (and h for LSTM)
};

Arg rnn_act(GraphBuilder& b, const std::string& f, const Arg& x) {
  if (f == "Sigmoid") return b.call("aten.sigmoid.default", {x});
  if (f == "Tanh") return b.call("aten.tanh.default", {x});
  if (f == "Relu") return b.call("aten.relu.default", {x});
  throw std::invalid_argument("activation '" + f + "' is not supported (Sigmoid, Tanh and Relu are)");
}

// x [T, B, I], w [dirs, G*H, I], r [dirs, G*H, H], bias [dirs, 2*G*H] or none, h0/c0 [dirs, B, H]
// or none, p [dirs, 3H] or none. Returns Y [T, dirs, B, H], Y_h [dirs, B, H] (and Y_c).
std::vector<Arg> rnn_unroll(GraphBuilder& b, const RnnSpec& s, const Arg& x, const Arg& w, const Arg& r, const Arg& bias,
                            const Arg& h0, const Arg& c0, const Arg& peep) {
  const int64_t H = s.H, G = s.lstm ? 4 : 3;
  const DType dt = b.meta(x).dtype;
  auto slice = [&](const Arg& t, int64_t dim, int64_t from, int64_t to) {
    return b.call("aten.slice.Tensor", {t, Arg::of_int(dim), Arg::of_int(from), Arg::of_int(to), Arg::of_int(1)});
  };
  auto sel = [&](const Arg& t, int64_t d) { return b.call("aten.select.int", {t, Arg::of_int(0), Arg::of_int(d)}); };
  auto tr = [&](const Arg& m) { return b.call("aten.permute.default", {m, Arg::of_ints({1, 0})}); };
  auto add = [&](const Arg& u, const Arg& v) { return b.call("aten.add.Tensor", {u, v}); };
  auto mul = [&](const Arg& u, const Arg& v) { return b.call("aten.mul.Tensor", {u, v}); };
  auto clipped = [&](const Arg& v) {
    return s.clip > 0 ? b.call("aten.clamp.default", {v, Arg::of_real(-s.clip), Arg::of_real(s.clip)}) : v;
  };
  auto mm_bias = [&](const Arg& bvec, const Arg& m, const Arg& wt) {  // m @ wt (+ bvec)
    return bvec.is_none() ? b.call("aten.mm.default", {m, wt}) : b.call("aten.addmm.default", {bvec, m, wt});
  };
  auto cat = [&](const std::vector<Arg>& parts, int64_t dim) {
    Arg l;
    l.kind = Arg::Kind::list;
    for (const Arg& p : parts) l.list.push_back(b.call("aten.unsqueeze.default", {p, Arg::of_int(dim)}));
    return b.call("aten.cat.default", {l, Arg::of_int(dim)});
  };
  const Arg zeros = b.call("aten.full.default", {Arg::of_ints({s.B, H}), Arg::of_real(0.0)},
                           {{"dtype", Arg::of_string(std::string(dtype_torch(dt)))}});
  std::vector<Arg> ys, hs, cs;
  for (int64_t d = 0; d < s.dirs; ++d) {
    const bool back = s.reverse || d == 1;
    const std::string* act = &s.acts[static_cast<size_t>(d) * (s.lstm ? 3 : 2)];
    const Arg wd = sel(w, d), rd = sel(r, d);
    Arg wb = Arg::none(), rb = Arg::none();
    if (!bias.is_none()) {
      const Arg bd = sel(bias, d);
      wb = slice(bd, 0, 0, G * H), rb = slice(bd, 0, G * H, 2 * G * H);
    }
    // Every step's input projection (with its bias): [T, B, G*H].
    const Arg x2 = b.call("aten.reshape.default", {x, Arg::of_ints({s.T * s.B, s.I})});
    const Arg xp = b.call("aten.view.default", {mm_bias(wb, x2, tr(wd)), Arg::of_ints({s.T, s.B, G * H})});
    Arg h = h0.is_none() ? zeros : sel(h0, d);
    Arg c = c0.is_none() ? zeros : sel(c0, d);
    Arg pi = Arg::none(), po = Arg::none(), pf = Arg::none();
    if (!peep.is_none()) {
      const Arg pd = sel(peep, d);
      pi = slice(pd, 0, 0, H), po = slice(pd, 0, H, 2 * H), pf = slice(pd, 0, 2 * H, 3 * H);
    }
    // GRU without linear_before_reset: the hidden gate's matrix product takes r * h.
    const Arg rt = tr(rd);
    const Arg rt_zr = s.lstm || s.lbr ? Arg::none() : tr(slice(rd, 0, 0, 2 * H));
    const Arg rt_h = s.lstm || s.lbr ? Arg::none() : tr(slice(rd, 0, 2 * H, 3 * H));
    const Arg rb_zr = rb.is_none() || s.lstm || s.lbr ? Arg::none() : slice(rb, 0, 0, 2 * H);
    const Arg rb_h = rb.is_none() || s.lstm || s.lbr ? Arg::none() : slice(rb, 0, 2 * H, 3 * H);
    std::vector<Arg> y(static_cast<size_t>(s.T));
    for (int64_t step = 0; step < s.T; ++step) {
      const int64_t t = back ? s.T - 1 - step : step;
      const Arg xt = b.call("aten.select.int", {xp, Arg::of_int(0), Arg::of_int(t)});
      if (s.lstm) {
        const Arg g = add(xt, mm_bias(rb, h, rt));
        Arg i = slice(g, 1, 0, H), o = slice(g, 1, H, 2 * H), f = slice(g, 1, 2 * H, 3 * H), cc = slice(g, 1, 3 * H, 4 * H);
        if (!pi.is_none()) i = add(i, mul(pi, c)), f = add(f, mul(pf, c));
        i = rnn_act(b, act[0], clipped(i));
        f = rnn_act(b, act[0], clipped(f));
        cc = rnn_act(b, act[1], clipped(cc));
        c = add(mul(f, c), mul(i, cc));
        if (!po.is_none()) o = add(o, mul(po, c));
        o = rnn_act(b, act[0], clipped(o));
        h = mul(o, rnn_act(b, act[2], c));
      } else {
        Arg z, rg, hh;
        if (s.lbr) {
          const Arg hr = mm_bias(rb, h, rt);
          z = add(slice(xt, 1, 0, H), slice(hr, 1, 0, H));
          rg = add(slice(xt, 1, H, 2 * H), slice(hr, 1, H, 2 * H));
          rg = rnn_act(b, act[0], clipped(rg));
          hh = add(slice(xt, 1, 2 * H, 3 * H), mul(rg, slice(hr, 1, 2 * H, 3 * H)));
        } else {
          const Arg hr = mm_bias(rb_zr, h, rt_zr);
          z = add(slice(xt, 1, 0, H), slice(hr, 1, 0, H));
          rg = add(slice(xt, 1, H, 2 * H), slice(hr, 1, H, 2 * H));
          rg = rnn_act(b, act[0], clipped(rg));
          hh = add(slice(xt, 1, 2 * H, 3 * H), mm_bias(rb_h, mul(rg, h), rt_h));
        }
        z = rnn_act(b, act[0], clipped(z));
        hh = rnn_act(b, act[1], clipped(hh));
        h = add(hh, mul(z, b.call("aten.sub.Tensor", {h, hh})));  // (1 - z) * hh + z * h
      }
      y[static_cast<size_t>(t)] = h;
    }
    ys.push_back(cat(y, 0));
    hs.push_back(h);
    cs.push_back(c);
  }
  std::vector<Arg> out = {cat(ys, 1), cat(hs, 0)};
  if (s.lstm) out.push_back(cat(cs, 0));
  return out;
}
}  // namespace

// The output shape of Unsqueeze, Squeeze, Reshape and Flatten (for graph values and constants alike).
Shape Importer::new_shape(const onnx::NodeProto& n, const Shape& s, const std::string& where) {
  const std::string& op = n.op_type();
  const int64_t r = static_cast<int64_t>(s.size());
  if (op == "Flatten") {
    const int64_t axis = attr_i(n, "axis", 1);
    if (axis < -r || axis > r) fail(where, "attribute 'axis' " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
    const int64_t a = axis < 0 ? axis + r : axis;
    return {prod(s, 0, static_cast<size_t>(a)), prod(s, static_cast<size_t>(a))};
  }
  if (op == "Reshape") {
    std::vector<int64_t> t = ints_of(n, 1, where);
    const bool allowzero = attr_i(n, "allowzero", 0) != 0;
    int64_t known = 1, infer = -1;
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i] == 0 && !allowzero) {
        if (i >= s.size()) fail(where, "input 'shape' copies dimension " + std::to_string(i) + " that the input lacks");
        t[i] = s[i];
      }
      if (t[i] == -1) {
        if (infer >= 0) fail(where, "input 'shape' holds -1 twice");
        infer = static_cast<int64_t>(i);
      } else if (t[i] < 0) {
        fail(where, "input 'shape' holds " + std::to_string(t[i]));
      } else if (__builtin_mul_overflow(known, t[i], &known)) {
        fail(where, "input 'shape' " + shape_str(t) + " holds more elements than an int64 counts");
      }
    }
    if (infer >= 0) {
      if (known == 0 || prod(s) % known) fail(where, "cannot reshape " + shape_str(s) + " to " + shape_str(t));
      t[static_cast<size_t>(infer)] = prod(s) / known;
    }
    if (prod(t) != prod(s)) fail(where, "cannot reshape " + shape_str(s) + " to " + shape_str(t));
    return t;
  }
  std::vector<int64_t> axes = opset_ >= 13 ? ints_of(n, 1, where) : attr_ints(n, "axes");
  if (op == "Unsqueeze") {
    const int64_t orank = r + static_cast<int64_t>(axes.size());
    std::vector<bool> added(static_cast<size_t>(orank), false);
    for (int64_t a : axes) {
      const int64_t k = axis_of(a, orank, where, "axis");
      if (added[static_cast<size_t>(k)]) fail(where, "axis " + std::to_string(a) + " is repeated");
      added[static_cast<size_t>(k)] = true;
    }
    Shape o;
    size_t j = 0;
    for (int64_t i = 0; i < orank; ++i) o.push_back(added[static_cast<size_t>(i)] ? 1 : s[j++]);
    return o;
  }
  std::vector<bool> drop(s.size(), false);
  for (int64_t a : axes) {
    const int64_t k = axis_of(a, r, where, "axis");
    if (s[static_cast<size_t>(k)] != 1)
      fail(where, "cannot squeeze axis " + std::to_string(a) + " of size " + std::to_string(s[static_cast<size_t>(k)]));
    drop[static_cast<size_t>(k)] = true;
  }
  Shape o;
  for (size_t i = 0; i < s.size(); ++i)
    if (!(axes.empty() ? s[i] == 1 : drop[i])) o.push_back(s[i]);
  return o;
}

int64_t Importer::axis_of(int64_t a, int64_t rank, const std::string& where, const std::string& what) const {
  if (a < -rank || a >= rank)  // a 0-d tensor has no axis
    fail(where, what + " " + std::to_string(a) + " is out of range for a tensor of rank " + std::to_string(rank));
  return a < 0 ? a + rank : a;
}

Arg Importer::as_i64(const Arg& x) {
  if (g_.nodes.at(x.node).meta().dtype == DType::i64) return x;
  return b_.call("aten._to_copy.default", {x}, {{"dtype", dtype_arg(DType::i64)}});
}

// ONNX indices count from the end when negative: idx + n where idx < 0.
Arg Importer::wrap_negative(const Arg& idx, int64_t n) {
  const Arg i = as_i64(idx);
  return b_.call("aten.where.self", {b_.call("aten.lt.Scalar", {i, Arg::of_int(0)}), b_.call("aten.add.Scalar", {i, Arg::of_int(n)}), i});
}

Arg Importer::index_const(const Tensor& t, const std::string& base) { return b_.constant(base, t); }

// ---- constant folding ---------------------------------------------------------------------

bool Importer::fold(const onnx::NodeProto& n, const std::string& where) {
  const std::string& op = n.op_type();
  if (n.output_size() < 1 || n.output(0).empty()) return false;
  auto shape_of = [&](const std::string& name) -> Shape {
    if (const Tensor* t = constant(name); t && !values_.count(name)) return t->shape();
    return shape(value(name, where));
  };
  if (op == "Shape" || op == "Size") {
    if (n.input_size() < 1) fail(where, "needs an input");
    const Shape s = shape_of(input_name(n, 0, where));
    const int64_t r = static_cast<int64_t>(s.size());
    if (op == "Size") {
      Tensor t(DType::i64, {});
      set_int(t, 0, prod(s));
      constants_[n.output(0)] = t;
      return true;
    }
    int64_t start = attr_i(n, "start", 0), end = attr_i(n, "end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = std::clamp<int64_t>(start, 0, r);
    end = std::clamp<int64_t>(end, start, r);
    Tensor t(DType::i64, {end - start});
    for (int64_t i = start; i < end; ++i) set_int(t, i - start, s[i]);
    constants_[n.output(0)] = t;
    return true;
  }
  static const std::set<std::string> foldable = {
      "Identity", "Cast", "Unsqueeze", "Squeeze", "Reshape", "Flatten", "Concat", "Gather", "Slice", "Add", "Sub", "Mul", "Div",
      "Mod", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Not", "Neg", "Abs", "Sqrt", "Where", "Min",
      "Max", "Floor", "Ceil", "Range", "ConstantOfShape", "Expand", "ReduceProd", "ReduceSum", "Tile", "CastLike", "Sign",
      "ReduceMax", "ReduceMin"};
  if (!foldable.count(op)) return false;
  std::vector<const Tensor*> in;
  for (int i = 0; i < n.input_size(); ++i) {
    if (n.input(i).empty()) {
      in.push_back(nullptr);
      continue;
    }
    const Tensor* t = constant(n.input(i));
    if (!t || t->numel() > kFoldMax) return false;
    in.push_back(t);
  }
  if (in.empty() || !in[0]) {
    if (op != "ConstantOfShape" && op != "Range") return false;
  }
  auto out = [&](Tensor t) {
    if (t.numel() > kFoldMax) fail(where, "a constant of " + std::to_string(t.numel()) + " elements is too large to fold");
    constants_[n.output(0)] = std::move(t);
    return true;
  };
  auto copy_as = [&](const Tensor& x, const Shape& s) {
    Tensor t(x.dtype(), s);
    if (t.numel() != x.numel()) fail(where, "cannot reshape " + shape_str(x.shape()) + " to " + shape_str(s));
    std::memcpy(t.data(), x.data(), static_cast<size_t>(x.nbytes()));
    return t;
  };
  static const Tensor kNoInput;  // ConstantOfShape and Range read their inputs themselves
  const Tensor& x = !in.empty() && in[0] ? *in[0] : kNoInput;
  if (op == "Identity") return out(x);
  if (op == "Cast" || op == "CastLike") {
    if (op == "CastLike" && (in.size() < 2 || !in[1])) return false;
    const DType to = op == "CastLike" ? in[1]->dtype() : dtype(static_cast<int>(attr_i(n, "to", 1)), where + ": attribute 'to'");
    Tensor t(to, x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (to == DType::b8) t.set(i, x.get(i) != 0 ? 1 : 0);
      else if (is_int_type(to) && is_int_type(x.dtype())) set_int(t, i, int_at(x, i));
      else if (is_int_type(to)) set_int(t, i, int_at(x, i));
      else t.set(i, x.get(i));
    }
    return out(t);
  }
  if (op == "Unsqueeze" || op == "Squeeze" || op == "Reshape" || op == "Flatten") return out(copy_as(x, new_shape(n, x.shape(), where)));
  if (op == "Concat") {
    const int64_t r = x.dim();
    const int64_t axis = axis_of(attr_i(n, "axis", 0), r, where, "attribute 'axis'");
    Shape s = x.shape();
    s[axis] = 0;
    for (const Tensor* t : in) {
      if (!t) continue;
      if (t->dim() != r || t->dtype() != x.dtype()) fail(where, "inputs of different ranks or types");
      s[axis] += t->shape()[axis];
    }
    Tensor y(x.dtype(), s);
    const int64_t outer = prod(s, 0, axis), inner = prod(s, axis + 1);
    int64_t at = 0;
    for (const Tensor* t : in) {
      if (!t) continue;
      const int64_t d = t->shape()[axis];
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < d * inner; ++k) {
          const int64_t src = o * d * inner + k, dst = o * s[axis] * inner + at * inner + k;
          if (is_int_type(x.dtype())) set_int(y, dst, int_at(*t, src));
          else y.set(dst, t->get(src));
        }
      at += d;
    }
    return out(y);
  }
  if (op == "Gather") {
    if (in.size() < 2 || !in[1]) return false;
    const Tensor& idx = *in[1];
    const int64_t axis = axis_of(attr_i(n, "axis", 0), x.dim(), where, "attribute 'axis'");
    const Shape& xs = x.shape();
    Shape s(xs.begin(), xs.begin() + axis);
    for (int64_t d : idx.shape()) s.push_back(d);
    s.insert(s.end(), xs.begin() + axis + 1, xs.end());
    Tensor y(x.dtype(), s);
    const int64_t outer = prod(xs, 0, axis), inner = prod(xs, axis + 1), dim = xs[axis], m = idx.numel();
    for (int64_t j = 0; j < m; ++j) {
      int64_t k = int_at(idx, j);
      if (k < -dim || k >= dim)
        fail(where, "index " + std::to_string(k) + " is out of bounds for axis " + std::to_string(axis) + " of size " + std::to_string(dim));
      if (k < 0) k += dim;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t src = (o * dim + k) * inner + i, dst = (o * m + j) * inner + i;
          if (is_int_type(x.dtype())) set_int(y, dst, int_at(x, src));
          else y.set(dst, x.get(src));
        }
    }
    return out(y);
  }
  if (op == "Slice") {
    if (x.dim() != 1) return false;  // shape vectors; the rest as graph ops
    const std::vector<int64_t> starts = ints_of(n, 1, where), ends = ints_of(n, 2, where), axes = ints_of(n, 3, where),
                               steps = ints_of(n, 4, where);
    if (starts.size() != 1 || ends.size() != 1) return false;
    if (!axes.empty() && axis_of(axes[0], 1, where, "axis") != 0) return false;
    const int64_t step = steps.empty() ? 1 : steps[0], dim = x.numel();
    if (step == 0) fail(where, "input 'steps' holds 0");
    int64_t st = starts[0], en = ends[0];
    if (st < 0) st = st < -dim ? 0 : st + dim;
    if (en < 0) en = en < -dim ? -1 : en + dim;
    std::vector<int64_t> picks;
    if (step > 0) {
      st = std::clamp<int64_t>(st, 0, dim), en = std::clamp<int64_t>(en, 0, dim);
      for (int64_t i = st; i < en; i += step) picks.push_back(i);
    } else {
      st = std::clamp<int64_t>(st, 0, dim - 1), en = std::clamp<int64_t>(en, -1, dim - 1);
      for (int64_t i = st; i > en; i += step) picks.push_back(i);
    }
    Tensor y(x.dtype(), {static_cast<int64_t>(picks.size())});
    for (size_t i = 0; i < picks.size(); ++i) {
      if (is_int_type(x.dtype())) set_int(y, static_cast<int64_t>(i), int_at(x, picks[i]));
      else y.set(static_cast<int64_t>(i), x.get(picks[i]));
    }
    return out(y);
  }
  if (op == "Range") {
    if (in.size() < 3 || !in[0] || !in[1] || !in[2]) return false;
    const DType t = in[0]->dtype();
    if (is_int_type(t)) {
      if (in[0]->numel() < 1 || in[1]->numel() < 1 || in[2]->numel() < 1) fail(where, "inputs 'start', 'limit' and 'delta' must each hold a value");
      const int64_t s = int_at(*in[0], 0), l = int_at(*in[1], 0), d = int_at(*in[2], 0);
      if (d == 0) fail(where, "input 'delta' is 0");
      int64_t span = 0;
      if (__builtin_sub_overflow(l, s, &span) || __builtin_add_overflow(span, d > 0 ? d - 1 : d + 1, &span))
        fail(where, "the range from " + std::to_string(s) + " to " + std::to_string(l) + " is out of range");
      const int64_t cnt = std::max<int64_t>(0, span / d);
      if (cnt > kFoldMax) return false;  // aten.arange (lower_more)
      if (cnt > kFoldMax) return false;
      Tensor y(t, {cnt});
      for (int64_t i = 0; i < cnt; ++i) set_int(y, i, s + i * d);
      return out(y);
    }
    const double s = in[0]->get(0), l = in[1]->get(0), d = in[2]->get(0);
    if (d == 0) fail(where, "input 'delta' is 0");
    const double c = std::ceil((l - s) / d);
    if (!(c < static_cast<double>(kFoldMax))) return false;
    const int64_t cnt = c > 0 ? static_cast<int64_t>(c) : 0;
    Tensor y(t, {cnt});
    float fv = static_cast<float>(s);  // accumulated in the type, as ONNX Runtime does
    double dv = s;
    for (int64_t i = 0; i < cnt; ++i) {
      y.set(i, t == DType::f32 ? fv : dv);
      fv += static_cast<float>(d);
      dv += d;
    }
    return out(y);
  }
  if (op == "ConstantOfShape") {
    const std::vector<int64_t> s = ints_of(n, 0, where);
    for (int64_t d : s)
      if (d < 0) fail(where, "input 'input' holds a negative dimension " + std::to_string(d));
    if (prod(s) > 4096) return false;  // aten.full (lower_more)
    DType t = DType::f32;
    double v = 0;
    int64_t iv = 0;
    if (const auto* a = attr(n, "value")) {
      const Tensor c = tensor(a->t(), where + ": attribute 'value'");
      if (c.numel() != 1) fail(where, "attribute 'value' must hold one element");
      t = c.dtype(), v = c.get(0), iv = int_at(c, 0);
    }
    Tensor y(t, s);
    for (int64_t i = 0; i < y.numel(); ++i) {
      if (is_int_type(t)) set_int(y, i, iv);
      else y.set(i, v);
    }
    return out(y);
  }
  if (op == "Expand" || op == "Tile") {
    if (in.size() < 2 || !in[1]) return false;
    const std::vector<int64_t> s = ints_of(n, 1, where);
    Shape os;
    if (op == "Expand") {
      try {
        os = broadcast_shapes(x.shape(), s);
      } catch (const std::exception&) {
        fail(where, "shape " + shape_str(s) + " does not broadcast with the input's " + shape_str(x.shape()));
      }
      if (prod(os) > kFoldMax) return false;
      Tensor y(x.dtype(), os);
      for (int64_t i = 0; i < y.numel(); ++i) {
        const int64_t k = bcast_index(i, os, x.shape());
        if (is_int_type(x.dtype())) set_int(y, i, int_at(x, k));
        else y.set(i, x.get(k));
      }
      return out(y);
    }
    return false;
  }
  if (op == "ReduceProd" || op == "ReduceSum" || op == "ReduceMax" || op == "ReduceMin") {
    if (x.dim() != 1 || !is_int_type(x.dtype()) || (op != "ReduceProd" && op != "ReduceSum" && x.numel() == 0)) return false;
    if (in.size() > 1 && in[1] && in[1]->numel() && axis_of(int_at(*in[1], 0), 1, where, "input 'axes' holds axis") != 0) return false;
    const bool keep = attr_i(n, "keepdims", 1) != 0;
    int64_t acc = op == "ReduceProd" ? 1 : op == "ReduceSum" ? 0 : int_at(x, 0);
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t v = int_at(x, i);
      acc = op == "ReduceProd" ? acc * v : op == "ReduceSum" ? acc + v : op == "ReduceMax" ? std::max(acc, v) : std::min(acc, v);
    }
    Tensor y(x.dtype(), keep ? Shape{1} : Shape{});
    set_int(y, 0, acc);
    return out(y);
  }
  // Elementwise, with broadcasting.
  const bool cmp = op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual";
  const bool unary = op == "Not" || op == "Neg" || op == "Abs" || op == "Sqrt" || op == "Floor" || op == "Ceil" || op == "Sign";
  if (op == "Where") {
    if (in.size() < 3 || !in[1] || !in[2]) return false;
    Shape os;
    try {
      os = broadcast_shapes(broadcast_shapes(x.shape(), in[1]->shape()), in[2]->shape());
    } catch (const std::exception&) {
      fail(where, "inputs do not broadcast");
    }
    Tensor y(in[1]->dtype(), os);
    for (int64_t i = 0; i < y.numel(); ++i) {
      const Tensor& src = x.get(bcast_index(i, os, x.shape())) != 0 ? *in[1] : *in[2];
      const int64_t k = bcast_index(i, os, src.shape());
      if (is_int_type(y.dtype())) set_int(y, i, int_at(src, k));
      else y.set(i, src.get(k));
    }
    return out(y);
  }
  if (unary) {
    Tensor y(op == "Not" ? DType::b8 : x.dtype(), x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (is_int_type(x.dtype()) && op != "Sqrt") {
        const int64_t v = int_at(x, i);
        set_int(y, i, op == "Not" ? !v : op == "Neg" ? -v : op == "Abs" ? (v < 0 ? -v : v) : op == "Sign" ? (v > 0) - (v < 0) : v);
      } else {
        const double v = x.get(i);
        y.set(i, op == "Not" ? (v == 0) : op == "Neg" ? -v : op == "Abs" ? std::fabs(v) : op == "Sqrt" ? std::sqrt(v)
                 : op == "Sign" ? static_cast<double>((v > 0) - (v < 0))
                                                                            : op == "Floor" ? std::floor(v) : std::ceil(v));
      }
    }
    return out(y);
  }
  if (in.size() != 2 || !in[1]) return false;
  const Tensor& z = *in[1];
  Shape os;
  try {
    os = broadcast_shapes(x.shape(), z.shape());
  } catch (const std::exception&) {
    fail(where, "input shapes " + shape_str(x.shape()) + " and " + shape_str(z.shape()) + " do not broadcast");
  }
  Tensor y(cmp ? DType::b8 : x.dtype(), os);
  const bool ints = is_int_type(x.dtype()) && is_int_type(z.dtype());
  for (int64_t i = 0; i < y.numel(); ++i) {
    const int64_t ia = bcast_index(i, os, x.shape()), ib = bcast_index(i, os, z.shape());
    if (ints) {
      const int64_t a = int_at(x, ia), b = int_at(z, ib);
      int64_t r = 0;
      if (op == "Add") r = a + b;
      else if (op == "Sub") r = a - b;
      else if (op == "Mul") r = a * b;
      else if (op == "Div" || op == "Mod") {
        if (b == 0) fail(where, "integer division by zero");
        if (op == "Div") r = a / b;
        else if (attr_i(n, "fmod", 0)) r = a % b;
        else r = ((a % b) + b) % b;
      } else if (op == "Min") r = std::min(a, b);
      else if (op == "Max") r = std::max(a, b);
      else if (op == "And") r = a && b;
      else if (op == "Or") r = a || b;
      else if (op == "Equal") r = a == b;
      else if (op == "Less") r = a < b;
      else if (op == "Greater") r = a > b;
      else if (op == "LessOrEqual") r = a <= b;
      else if (op == "GreaterOrEqual") r = a >= b;
      set_int(y, i, r);
    } else {
      const double a = x.get(ia), b = z.get(ib);
      double r = 0;
      if (op == "Add") r = a + b;
      else if (op == "Sub") r = a - b;
      else if (op == "Mul") r = a * b;
      else if (op == "Div") r = a / b;
      else if (op == "Mod") r = std::fmod(a, b);
      else if (op == "Min") r = std::min(a, b);
      else if (op == "Max") r = std::max(a, b);
      else if (op == "And") r = a != 0 && b != 0;
      else if (op == "Or") r = a != 0 || b != 0;
      else if (op == "Equal") r = a == b;
      else if (op == "Less") r = a < b;
      else if (op == "Greater") r = a > b;
      else if (op == "LessOrEqual") r = a <= b;
      else if (op == "GreaterOrEqual") r = a >= b;
      if (x.dtype() == DType::f32 && !cmp) r = static_cast<float>(r);
      y.set(i, r);
    }
  }
  return out(y);
}

// ---- Resize: one axis at a time, as ONNX defines it (separable), by gathers of precomputed
// source indices and weights: any coordinate mode, nearest mode and cubic coefficient.
Arg Importer::resize_axis(const Arg& x, int64_t axis, int64_t out, double scale, const onnx::NodeProto& n, const std::string& where) {
  const Shape xs = shape(x);
  const int64_t in = xs[static_cast<size_t>(axis)];
  // Its tables (index and weight per output position) are made here: a size no image has is a
  // broken or hostile file, refused before allocating them.
  constexpr int64_t kMaxResizedAxis = int64_t(1) << 24;
  if (out < 0 || out > kMaxResizedAxis)
    fail(where, "output size " + std::to_string(out) + " along axis " + std::to_string(axis) + " is out of range (at most 2^24)");
  const auto* ctm_a = attr(n, "coordinate_transformation_mode");
  const std::string ctm = ctm_a ? ctm_a->s() : "half_pixel";
  const auto* mode_a = attr(n, "mode");
  const std::string mode = mode_a ? mode_a->s() : "nearest";
  const auto* nm_a = attr(n, "nearest_mode");
  const std::string nm = nm_a ? nm_a->s() : "round_prefer_floor";
  const double A = attr_f(n, "cubic_coeff_a", -0.75);
  const bool exclude = attr_i(n, "exclude_outside", 0) != 0;
  auto source = [&](int64_t o) -> double {
    const double xo = static_cast<double>(o);
    if (ctm == "half_pixel") return (xo + 0.5) / scale - 0.5;
    if (ctm == "pytorch_half_pixel") return out > 1 ? (xo + 0.5) / scale - 0.5 : 0.0;
    if (ctm == "align_corners") return out == 1 ? 0.0 : xo * static_cast<double>(in - 1) / static_cast<double>(out - 1);
    if (ctm == "asymmetric") return xo / scale;
    if (ctm == "half_pixel_symmetric") {
      const double adj = static_cast<double>(out) / (scale * static_cast<double>(in));
      const double center = static_cast<double>(in) / 2;
      return center * (1 - adj) + (xo + 0.5) / scale - 0.5;
    }
    fail(where, "attribute 'coordinate_transformation_mode' '" + ctm + "' is not supported");
  };
  const int taps = mode == "nearest" ? 1 : mode == "linear" ? 2 : mode == "cubic" ? 4 : 0;
  if (!taps) fail(where, "attribute 'mode' '" + mode + "' is not supported (nearest, linear, cubic)");
  if (mode == "nearest" && nm != "round_prefer_floor" && nm != "round_prefer_ceil" && nm != "floor" && nm != "ceil")
    fail(where, "attribute 'nearest_mode' '" + nm + "' is not supported");
  // A tensor each (copies of one Tensor would share its storage), filled through typed pointers
  // with no allocation per position: an axis may have 2^24 of them (the fuzzer's 25 s input).
  std::vector<Tensor> idx, w;
  for (int j = 0; j < taps; ++j) idx.emplace_back(DType::i64, Shape{out}), w.emplace_back(DType::f32, Shape{out});
  std::array<int64_t*, 4> ip{};
  std::array<float*, 4> wp{};
  for (int j = 0; j < taps; ++j) {
    ip[static_cast<size_t>(j)] = static_cast<int64_t*>(idx[static_cast<size_t>(j)].data());
    wp[static_cast<size_t>(j)] = static_cast<float*>(w[static_cast<size_t>(j)].data());
  }
  for (int64_t o = 0; o < out; ++o) {
    const double s = source(o);
    if (mode == "nearest") {
      ip[0][o] = std::clamp<int64_t>(static_cast<int64_t>(nearest(s, nm)), 0, in - 1);
      wp[0][o] = 1.f;
      continue;
    }
    const double f = std::floor(s), t = s - f;
    const int64_t base = static_cast<int64_t>(f);
    std::array<double, 4> c{};
    std::array<int64_t, 4> at{};
    if (mode == "linear") {
      const double sc = std::clamp(s, 0.0, static_cast<double>(in - 1));
      const double fl = std::floor(sc);
      c = {1 - (sc - fl), sc - fl, 0, 0};
      at = {static_cast<int64_t>(fl), static_cast<int64_t>(fl) + 1, 0, 0};
    } else {
      auto k = [&](double d) {  // the cubic convolution kernel at distance d
        d = std::fabs(d);
        if (d <= 1) return ((A + 2) * d - (A + 3)) * d * d + 1;
        if (d < 2) return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A;
        return 0.0;
      };
      c = {k(t + 1), k(t), k(1 - t), k(2 - t)};
      at = {base - 1, base, base + 1, base + 2};
      if (exclude) {
        double sum = 0;
        for (size_t j = 0; j < 4; ++j) {
          if (at[j] < 0 || at[j] >= in) c[j] = 0;
          sum += c[j];
        }
        if (sum != 0)
          for (double& v : c) v /= sum;
      }
    }
    for (size_t j = 0; j < static_cast<size_t>(taps); ++j) {
      ip[j][o] = std::clamp<int64_t>(at[j], 0, in - 1);
      wp[j][o] = static_cast<float>(c[j]);
    }
  }
  Shape ws(xs.size(), 1);
  ws[static_cast<size_t>(axis)] = out;
  Arg y;
  for (int j = 0; j < taps; ++j) {
    Arg g = b_.call("aten.index_select.default", {x, Arg::of_int(axis), index_const(idx[static_cast<size_t>(j)], "resize_index")});
    if (taps > 1) g = b_.call("aten.mul.Tensor", {g, index_const(w[static_cast<size_t>(j)].reshaped(ws), "resize_weight")});
    y = j == 0 ? g : b_.call("aten.add.Tensor", {y, g});
  }
  return y;
}

// Pad one axis (edge, reflect, wrap) by concatenating slices; negative amounts crop.
Arg Importer::pad_axis(const Arg& x0, int64_t axis, int64_t before, int64_t after, const std::string& mode, const std::string& where) {
  Arg x = x0;
  int64_t dim = shape(x)[static_cast<size_t>(axis)];
  if (before < 0 || after < 0) {
    const int64_t s = std::max<int64_t>(0, -before), e = dim - std::max<int64_t>(0, -after);
    if (e < s) fail(where, "negative pads crop more than axis " + std::to_string(axis) + "'s size " + std::to_string(dim));
    x = b_.call("aten.slice.Tensor", {x, Arg::of_int(axis), Arg::of_int(s), Arg::of_int(e), Arg::of_int(1)});
    dim = e - s;
    before = std::max<int64_t>(0, before), after = std::max<int64_t>(0, after);
  }
  if (!before && !after) return x;
  auto sl = [&](int64_t s, int64_t e) { return b_.call("aten.slice.Tensor", {x, Arg::of_int(axis), Arg::of_int(s), Arg::of_int(e), Arg::of_int(1)}); };
  auto flip = [&](const Arg& a) { return b_.call("aten.flip.default", {a, Arg::of_ints({axis})}); };
  std::vector<Arg> parts;
  if (mode == "edge") {
    if (dim == 0) fail(where, "edge padding of an empty axis");
    auto rep = [&](int64_t at, int64_t k) {
      Shape s = shape(x);
      s[static_cast<size_t>(axis)] = k;
      return b_.call("aten.expand.default", {sl(at, at + 1), Arg::of_ints(s)});
    };
    if (before) parts.push_back(rep(0, before));
    parts.push_back(x);
    if (after) parts.push_back(rep(dim - 1, after));
  } else if (mode == "reflect") {
    if (before >= dim || after >= dim)
      fail(where, "reflect padding of " + std::to_string(std::max(before, after)) + " needs an axis larger than its size " + std::to_string(dim));
    if (before) parts.push_back(flip(sl(1, before + 1)));
    parts.push_back(x);
    if (after) parts.push_back(flip(sl(dim - 1 - after, dim - 1)));
  } else if (mode == "wrap") {
    if (before > dim || after > dim) fail(where, "wrap padding larger than the axis' size " + std::to_string(dim));
    if (before) parts.push_back(sl(dim - before, dim));
    parts.push_back(x);
    if (after) parts.push_back(sl(0, after));
  } else {
    fail(where, "attribute 'mode' '" + mode + "' is not supported (constant, reflect, edge, wrap)");
  }
  return b_.call("aten.cat.default", {list_of(parts), Arg::of_int(axis)});
}

Arg Importer::reduce(const onnx::NodeProto& n, const std::string& where) {
  const std::string& op = n.op_type();
  Arg x = value(input_name(n, 0, where), where);
  const Shape xs = shape(x);
  const int64_t r = static_cast<int64_t>(xs.size());
  const bool axes_input = opset_ >= 18 || op == "ReduceSum";
  std::vector<int64_t> axes = axes_input ? ints_of(n, 1, where) : attr_ints(n, "axes");
  const bool keep = attr_i(n, "keepdims", 1) != 0;
  if (axes.empty() && attr_i(n, "noop_with_empty_axes", 0)) return b_.call("aten.alias.default", {x});
  if (axes.empty())
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  std::set<int64_t> dims;
  for (int64_t a : axes)
    if (!dims.insert(axis_of(a, r, where, axes_input ? "input 'axes' holds axis" : "attribute 'axes' holds axis")).second)
      fail(where, "axis " + std::to_string(a) + " is repeated");
  const std::vector<int64_t> d(dims.begin(), dims.end());
  Shape kept = xs, dropped;
  for (int64_t i = 0; i < r; ++i) {
    if (dims.count(i)) kept[static_cast<size_t>(i)] = 1;
    else dropped.push_back(xs[static_cast<size_t>(i)]);
  }
  auto fin = [&](const Arg& y) { return keep ? y : b_.call("aten.view.default", {y, Arg::of_ints(dropped)}); };
  auto sum = [&](const Arg& v) { return b_.call("aten.sum.dim_IntList", {v, Arg::of_ints(d), Arg::of_bool(true)}); };
  if (r == 0) return b_.call("aten.alias.default", {x});
  if (op == "ReduceSum") return fin(sum(x));
  if (op == "ReduceMean") return fin(b_.call("aten.mean.dim", {x, Arg::of_ints(d), Arg::of_bool(true)}));
  if (op == "ReduceMax") return fin(b_.call("aten.amax.default", {x, Arg::of_ints(d), Arg::of_bool(true)}));
  if (op == "ReduceMin") return fin(b_.call("aten.amin.default", {x, Arg::of_ints(d), Arg::of_bool(true)}));
  if (op == "ReduceProd") {
    Arg y = x;
    for (int64_t a : d) y = b_.call("aten.prod.dim_int", {y, Arg::of_int(a), Arg::of_bool(true)});
    return fin(y);
  }
  if (op == "ReduceL1") return fin(sum(b_.call("aten.abs.default", {x})));
  if (op == "ReduceSumSquare") return fin(sum(b_.call("aten.mul.Tensor", {x, x})));
  if (op == "ReduceL2") return fin(b_.call("aten.sqrt.default", {sum(b_.call("aten.mul.Tensor", {x, x}))}));
  if (op == "ReduceLogSum") return fin(b_.call("aten.log.default", {sum(x)}));
  // ReduceLogSumExp: m + log(sum(exp(x - m))), m the max (where finite).
  const Arg m = b_.call("aten.amax.default", {x, Arg::of_ints(d), Arg::of_bool(true)});
  const Arg mf = b_.call("aten.where.self", {b_.call("aten.isinf.default", {m}), b_.call("aten.mul.Scalar", {m, Arg::of_real(0.0)}), m});
  const Arg s = sum(b_.call("aten.exp.default", {b_.call("aten.sub.Tensor", {x, mf})}));
  return fin(b_.call("aten.add.Tensor", {b_.call("aten.log.default", {s}), mf}));
}

Arg Importer::conv(const onnx::NodeProto& n, const std::string& where) {
  Arg x = value(input_name(n, 0, where), where), w = value(input_name(n, 1, where), where);
  const Shape xs = shape(x), ws = shape(w);
  if (xs.size() != ws.size() || xs.size() < 3) fail(where, "input and weight ranks " + std::to_string(xs.size()) + " and " + std::to_string(ws.size()) + " do not fit");
  const size_t nd = xs.size() - 2;
  if (nd > 2) fail(where, std::to_string(nd) + "-D convolution is not supported (1-D and 2-D are)");
  std::vector<int64_t> strides = attr_ints(n, "strides", std::vector<int64_t>(nd, 1)), dil = attr_ints(n, "dilations", std::vector<int64_t>(nd, 1));
  std::vector<int64_t> pads = attr_ints(n, "pads", std::vector<int64_t>(2 * nd, 0));
  if (strides.size() != nd || dil.size() != nd || pads.size() != 2 * nd) fail(where, "attributes 'strides', 'dilations' or 'pads' do not fit the kernel's rank");
  for (size_t i = 0; i < nd; ++i)
    if (strides[i] <= 0 || dil[i] <= 0) fail(where, "attributes 'strides' and 'dilations' must be positive");
  const auto* ap = attr(n, "auto_pad");
  const std::string auto_pad = ap ? ap->s() : "NOTSET";
  if (auto_pad == "VALID") {
    pads.assign(2 * nd, 0);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < nd; ++i) {
      const int64_t in = xs[2 + i], k = (ws[2 + i] - 1) * dil[i] + 1, out = (in + strides[i] - 1) / strides[i];
      const int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] + k - in);
      const int64_t small = total / 2, big = total - small;
      pads[i] = auto_pad == "SAME_UPPER" ? small : big;
      pads[i + nd] = auto_pad == "SAME_UPPER" ? big : small;
    }
  } else if (auto_pad != "NOTSET") {
    fail(where, "attribute 'auto_pad' '" + auto_pad + "' is not supported");
  }
  const int64_t group = attr_i(n, "group", 1);
  if (group <= 0 || xs[1] % group || ws[0] % group || xs[1] / group != ws[1])
    fail(where, "attribute 'group' " + std::to_string(group) + " does not fit input channels " + std::to_string(xs[1]) + " and weight " + shape_str(ws));
  // Unequal pads: the excess as an explicit zero pad before.
  std::vector<int64_t> sym(nd), extra;  // extra: torch order (last dim first)
  bool asym = false;
  for (size_t i = 0; i < nd; ++i) {
    if (pads[i] < 0 || pads[i + nd] < 0) fail(where, "attribute 'pads' holds a negative value");
    sym[i] = std::min(pads[i], pads[i + nd]);
    asym |= pads[i] != pads[i + nd];
  }
  if (asym) {
    for (size_t i = nd; i-- > 0;) {
      extra.push_back(pads[i] - sym[i]);
      extra.push_back(pads[i + nd] - sym[i]);
    }
    x = b_.call("aten.constant_pad_nd.default", {x, Arg::of_ints(extra), Arg::of_real(0.0)});
  }
  const Arg bias = n.input_size() > 2 && !n.input(2).empty() ? value(n.input(2), where) : Arg::none();
  if (nd == 1) {  // as 2-D, with a height of 1
    const Shape x1 = shape(x);
    x = b_.call("aten.view.default", {x, Arg::of_ints({x1[0], x1[1], 1, x1[2]})});
    w = b_.call("aten.view.default", {w, Arg::of_ints({ws[0], ws[1], 1, ws[2]})});
    strides = {1, strides[0]}, dil = {1, dil[0]}, sym = {0, sym[0]};
  }
  Arg y = b_.call("aten.convolution.default", {x, w, bias, Arg::of_ints(strides), Arg::of_ints(sym), Arg::of_ints(dil), Arg::of_bool(false),
                                               Arg::of_ints({0, 0}), Arg::of_int(group)});
  if (nd == 1) {
    const Shape ys = shape(y);
    y = b_.call("aten.view.default", {y, Arg::of_ints({ys[0], ys[1], ys[3]})});
  }
  return y;
}

// ---- AveragePool, MaxPool, LpPool (1-D to 3-D) and their Global forms -----------------------
// The window geometry as ONNX gives it (auto_pad, pads, strides, dilations, ceil_mode: in ceil
// mode a window that would start in the right padding is dropped, PyTorch's rule too). Where
// PyTorch's pooling op has the same geometry (symmetric pads of at most half the kernel, and for
// AveragePool no dilation), that op (avg_pool1d/2d/3d, max_pool2d/3d_with_indices); otherwise
// the windows one axis at a time (a box is separable): padding made explicit (zeros, or -inf for
// MaxPool), then the sum or max of the kernel's strided slices, and for AveragePool one division
// by a constant of each window's count, with or without the padding (count_include_pad).
std::vector<Arg> Importer::pool(const onnx::NodeProto& n, const std::string& where) {
  const std::string& op = n.op_type();
  const Arg x = value(input_name(n, 0, where), where);
  const Shape xs = shape(x);
  const DType xt = g_.nodes.at(x.node).meta().dtype;
  if (xs.size() < 3 || xs.size() > 5) fail(where, "input 'X' must be 3-D to 5-D (batch, channels, 1 to 3 spatial axes), got " + shape_str(xs));
  const size_t nd = xs.size() - 2;
  std::vector<int64_t> spatial;
  for (size_t i = 0; i < nd; ++i) spatial.push_back(static_cast<int64_t>(2 + i));
  const double p_norm = op == "LpPool" || op == "GlobalLpPool" ? static_cast<double>(attr_i(n, "p", 2)) : 0;
  if (p_norm < 0 || (p_norm == 0 && (op == "LpPool" || op == "GlobalLpPool"))) fail(where, "attribute 'p' must be positive");
  auto pow_abs = [&](const Arg& v) {  // |v|^p
    const Arg a = b_.call("aten.abs.default", {v});
    return p_norm == 1 ? a : p_norm == 2 ? b_.call("aten.mul.Tensor", {a, a}) : b_.call("aten.pow.Tensor_Scalar", {a, Arg::of_real(p_norm)});
  };
  auto root = [&](const Arg& v) {  // v^(1/p)
    return p_norm == 1 ? v : p_norm == 2 ? b_.call("aten.sqrt.default", {v}) : b_.call("aten.pow.Tensor_Scalar", {v, Arg::of_real(1.0 / p_norm)});
  };
  if (op == "GlobalAveragePool") return {b_.call("aten.mean.dim", {x, Arg::of_ints(spatial), Arg::of_bool(true)})};
  if (op == "GlobalMaxPool") return {b_.call("aten.amax.default", {x, Arg::of_ints(spatial), Arg::of_bool(true)})};
  if (op == "GlobalLpPool") return {root(b_.call("aten.sum.dim_IntList", {pow_abs(x), Arg::of_ints(spatial), Arg::of_bool(true)}))};

  const bool avg = op == "AveragePool", max = op == "MaxPool";
  const std::vector<int64_t> k = attr_ints(n, "kernel_shape");
  if (k.size() != nd) fail(where, "attribute 'kernel_shape' " + shape_str(k) + " does not fit the input's " + std::to_string(nd) + " spatial axes");
  const std::vector<int64_t> ones(nd, 1);
  const std::vector<int64_t> s = attr_ints(n, "strides", ones), d = attr_ints(n, "dilations", ones);
  std::vector<int64_t> pads = attr_ints(n, "pads", std::vector<int64_t>(2 * nd, 0));
  if (s.size() != nd || d.size() != nd || pads.size() != 2 * nd)
    fail(where, "attributes 'strides', 'dilations' or 'pads' do not fit the input's " + std::to_string(nd) + " spatial axes");
  const bool ceil = attr_i(n, "ceil_mode", 0) != 0, include_pad = attr_i(n, "count_include_pad", 0) != 0;
  const auto* ap = attr(n, "auto_pad");
  const std::string auto_pad = ap ? ap->s() : "NOTSET";
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    fail(where, "attribute 'auto_pad' '" + auto_pad + "' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER");
  std::vector<int64_t> out(nd), eff(nd);
  constexpr int64_t kMaxWindow = 1 << 16;
  for (size_t i = 0; i < nd; ++i) {
    const int64_t in = xs[2 + i];
    if (k[i] <= 0 || k[i] > kMaxWindow || s[i] <= 0 || s[i] > kMaxWindow || d[i] <= 0 || d[i] > kMaxWindow)
      fail(where, "attributes 'kernel_shape', 'strides' and 'dilations' must be positive (and at most 2^16), got " + shape_str(k) + ", " +
                      shape_str(s) + ", " + shape_str(d));
    eff[i] = (k[i] - 1) * d[i] + 1;
    if (auto_pad == "VALID") {
      pads[i] = pads[i + nd] = 0;
    } else if (auto_pad != "NOTSET") {  // output ceil(in / stride), the odd padding at the end (SAME_UPPER) or the start
      const int64_t o = (in + s[i] - 1) / s[i];
      const int64_t total = std::max<int64_t>(0, (o - 1) * s[i] + eff[i] - in);
      pads[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[i + nd] = total - pads[i];
    }
    if (pads[i] < 0 || pads[i + nd] < 0 || pads[i] > kMaxWindow || pads[i + nd] > kMaxWindow)
      fail(where, "attribute 'pads' " + shape_str(pads) + " holds a negative value (or one past 2^16)");
    const int64_t span = in + pads[i] + pads[i + nd] - eff[i];
    if (span < 0)
      fail(where, "the window (kernel " + std::to_string(k[i]) + ", dilation " + std::to_string(d[i]) + ") is larger than spatial axis " +
                      std::to_string(i) + " of size " + std::to_string(in) + " with its padding");
    out[i] = (ceil ? (span + s[i] - 1) / s[i] : span / s[i]) + 1;
    if (ceil && (out[i] - 1) * s[i] >= in + pads[i]) --out[i];  // a window starting in the right padding
  }
  bool plain = true;  // PyTorch's op has the same geometry
  for (size_t i = 0; i < nd; ++i) plain &= pads[i] == pads[i + nd] && pads[i] <= k[i] / 2 && (!avg || d[i] == 1);
  if (op == "LpPool") plain = false;
  const bool want_indices = max && n.output_size() > 1 && !n.output(1).empty();
  if (want_indices && (!plain || attr_i(n, "storage_order", 0) != 0))
    fail(where, "output 'Indices' is supported only with symmetric pads of at most half the kernel and storage_order 0");
  if (plain && avg) {
    std::vector<int64_t> p(pads.begin(), pads.begin() + static_cast<long>(nd));
    const char* f = nd == 1 ? "aten.avg_pool1d.default" : nd == 2 ? "aten.avg_pool2d.default" : "aten.avg_pool3d.default";
    return {b_.call(f, {x, Arg::of_ints(k), Arg::of_ints(s), Arg::of_ints(p), Arg::of_bool(ceil), Arg::of_bool(include_pad)})};
  }
  if (plain && max) {
    std::vector<int64_t> kk = k, ss = s, pp(pads.begin(), pads.begin() + static_cast<long>(nd)), dd = d;
    Arg xi = x;
    if (nd == 1) {  // as 2-D, with a height of 1
      xi = b_.call("aten.view.default", {x, Arg::of_ints({xs[0], xs[1], 1, xs[2]})});
      kk = {1, k[0]}, ss = {1, s[0]}, pp = {0, pads[0]}, dd = {1, d[0]};
    }
    const Arg r = b_.call(nd == 3 ? "aten.max_pool3d_with_indices.default" : "aten.max_pool2d_with_indices.default",
                          {xi, Arg::of_ints(kk), Arg::of_ints(ss), Arg::of_ints(pp), Arg::of_ints(dd), Arg::of_bool(ceil)});
    Arg y = b_.get(r, 0), idx = b_.get(r, 1);
    Shape ys = {xs[0], xs[1]};
    ys.insert(ys.end(), out.begin(), out.end());
    if (nd == 1) y = b_.call("aten.view.default", {y, Arg::of_ints(ys)});
    if (!want_indices) return {y};
    // ONNX's indices count over the whole tensor (N, C, spatial), PyTorch's within each plane.
    int64_t plane = 1;
    for (size_t i = 0; i < nd; ++i) plane *= xs[2 + i];
    if (nd == 1) idx = b_.call("aten.view.default", {idx, Arg::of_ints(ys)});
    Shape os(xs.size(), 1);
    os[0] = xs[0], os[1] = xs[1];
    Tensor base(DType::i64, os);
    for (int64_t i = 0; i < xs[0] * xs[1]; ++i) set_int(base, i, i * plane);
    return {y, b_.call("aten.add.Tensor", {idx, index_const(base, "pool_index_base")})};
  }
  // The windows one axis at a time.
  Arg v = op == "LpPool" ? pow_abs(x) : x;
  std::vector<int64_t> tp;  // constant_pad_nd's order: the last axis first
  bool padded = false;
  for (size_t i = nd; i-- > 0;) {
    const int64_t need = (out[i] - 1) * s[i] + eff[i];  // the last window's end, in padded coordinates
    const int64_t tail = std::max<int64_t>(0, need - xs[2 + i] - pads[i]);
    tp.push_back(pads[i]), tp.push_back(tail);
    padded |= pads[i] || tail;
  }
  if (padded) {
    Arg fill = Arg::of_real(0.0);
    if (max) fill = dtype_is_float(xt) ? Arg::of_real(-std::numeric_limits<double>::infinity()) : Arg::of_int(xt == DType::u8 ? 0 : xt == DType::i32 ? INT32_MIN : INT64_MIN);
    v = b_.call("aten.constant_pad_nd.default", {v, Arg::of_ints(tp), fill});
  }
  for (size_t i = 0; i < nd; ++i) {
    const int64_t axis = static_cast<int64_t>(2 + i);
    Arg acc;
    for (int64_t j = 0; j < k[i]; ++j) {
      const int64_t from = j * d[i];
      const Arg sl = b_.call("aten.slice.Tensor", {v, Arg::of_int(axis), Arg::of_int(from), Arg::of_int(from + (out[i] - 1) * s[i] + 1), Arg::of_int(s[i])});
      acc = j == 0 ? sl : b_.call(max ? "aten.maximum.default" : "aten.add.Tensor", {acc, sl});
    }
    v = acc;
  }
  if (max) return {v};
  if (op == "LpPool") return {root(v)};
  // Each window's count, per axis (taps inside the input, or inside input and padding), multiplied.
  std::vector<std::vector<int64_t>> cnt(nd);
  bool uniform = true;
  for (size_t i = 0; i < nd; ++i)
    for (int64_t o = 0; o < out[i]; ++o) {
      int64_t c = 0;
      for (int64_t j = 0; j < k[i]; ++j) {
        const int64_t at = o * s[i] - pads[i] + j * d[i];
        c += include_pad ? (at < xs[2 + i] + pads[i + nd]) : (at >= 0 && at < xs[2 + i]);
      }
      cnt[i].push_back(c);
      uniform &= c == cnt[i][0];
    }
  if (uniform) {  // the same count everywhere
    int64_t c = 1;
    for (size_t i = 0; i < nd; ++i) c *= cnt[i][0];
    return {b_.call("aten.div.Scalar", {v, Arg::of_real(static_cast<double>(c))})};
  }
  Tensor div(xt, Shape(out.begin(), out.end()));
  for (int64_t e = 0; e < div.numel(); ++e) {
    int64_t rest = e, c = 1;
    for (size_t i = nd; i-- > 0;) {
      c *= cnt[i][static_cast<size_t>(rest % out[i])];
      rest /= out[i];
    }
    div.set(e, static_cast<double>(std::max<int64_t>(c, 1)));  // a window all padding: its sum, 0 (ONNX Runtime and PyTorch give 0)
  }
  return {b_.call("aten.div.Tensor", {v, index_const(div, "pool_count")})};
}

std::optional<std::vector<Arg>> Importer::lower_more(const onnx::NodeProto& n, const std::string& where) {
  const std::string& op = n.op_type();
  auto in = [&](int i) {
    if (i >= n.input_size() || n.input(i).empty()) fail(where, "input " + std::to_string(i) + " is missing");
    return value(n.input(i), where);
  };
  auto has = [&](int i) { return i < n.input_size() && !n.input(i).empty(); };
  auto dt = [&](const Arg& a) { return g_.nodes.at(a.node).meta().dtype; };
  auto call = [&](const char* name, std::vector<Arg> args, const std::vector<std::pair<std::string, Arg>>& kw = {}) {
    return b_.call(name, std::move(args), kw);
  };
  auto one_const = [&](int i, const char* what) -> const Tensor& { return static_input(n, i, what, where); };

  if (op == "AveragePool" || op == "MaxPool" || op == "LpPool" || op == "GlobalAveragePool" || op == "GlobalMaxPool" || op == "GlobalLpPool")
    return pool(n, where);

  static const std::set<std::string> data_dependent = {"NonZero", "Unique", "Compress", "NonMaxSuppression", "StringSplit"};
  if (data_dependent.count(op))
    fail(where, "op '" + op + "' is not supported: its output's shape depends on the input's values, and shapes are static here");

  if (op == "Constant" && !attr(n, "value")) {
    Tensor t;
    if (const auto* a = attr(n, "value_float")) t = Tensor(DType::f32, {}), t.set(0, a->f());
    else if (const auto* a2 = attr(n, "value_int")) t = Tensor(DType::i64, {}), set_int(t, 0, a2->i());
    else if (const auto* a3 = attr(n, "value_floats")) {
      t = Tensor(DType::f32, {a3->floats_size()});
      for (int i = 0; i < a3->floats_size(); ++i) t.set(i, a3->floats(i));
    } else if (const auto* a4 = attr(n, "value_ints")) {
      t = Tensor(DType::i64, {a4->ints_size()});
      for (int i = 0; i < a4->ints_size(); ++i) set_int(t, i, a4->ints(i));
    } else {
      fail(where, "only tensor, float, int, floats and ints constants are supported");
    }
    constants_[n.output(0)] = t;
    return std::vector<Arg>{};
  }

  // ---- indexing and creation
  if (op == "Gather") {
    const Arg x = in(0);
    const Shape xs = shape(x);
    const int64_t axis = axis_of(attr_i(n, "axis", 0), static_cast<int64_t>(xs.size()), where, "attribute 'axis'");
    const int64_t dim = xs[static_cast<size_t>(axis)];
    Arg idx;
    Shape is;
    if (const Tensor* t = constant(input_name(n, 1, where))) {
      Tensor w(DType::i64, t->shape());
      for (int64_t i = 0; i < t->numel(); ++i) {
        const int64_t k = int_at(*t, i);
        if (k < -dim || k >= dim)
          fail(where, "input 'indices' holds " + std::to_string(k) + ", out of bounds for axis " + std::to_string(axis) + " of size " + std::to_string(dim));
        set_int(w, i, k < 0 ? k + dim : k);
      }
      is = t->shape();
      idx = index_const(w.reshaped({std::max<int64_t>(1, w.numel()) == w.numel() ? w.numel() : 1}), "gather_index");
      if (w.numel() == 0) fail(where, "input 'indices' is empty");
    } else {
      const Arg i = in(1);
      is = shape(i);
      idx = call("aten.view.default", {wrap_negative(i, dim), Arg::of_ints({prod(is)})});
    }
    Shape os(xs.begin(), xs.begin() + axis);
    os.insert(os.end(), is.begin(), is.end());
    os.insert(os.end(), xs.begin() + axis + 1, xs.end());
    return std::vector<Arg>{call("aten.view.default", {call("aten.index_select.default", {x, Arg::of_int(axis), idx}), Arg::of_ints(os)})};
  }
  if (op == "GatherElements") {
    const Arg x = in(0);
    const Shape xs = shape(x);
    const int64_t axis = axis_of(attr_i(n, "axis", 0), static_cast<int64_t>(xs.size()), where, "attribute 'axis'");
    return std::vector<Arg>{call("aten.gather.default", {x, Arg::of_int(axis), wrap_negative(in(1), xs[static_cast<size_t>(axis)])})};
  }
  if (op == "GatherND" || op == "ScatterND") {
    const Arg x = in(0), ind = in(1);
    const Shape xs = shape(x), is = shape(ind);
    const int64_t b = op == "GatherND" ? attr_i(n, "batch_dims", 0) : 0;
    if (is.empty()) fail(where, "input 'indices' must have rank 1 or more");
    const int64_t k = is.back(), q = static_cast<int64_t>(is.size());
    if (b < 0 || b >= q || b + k > static_cast<int64_t>(xs.size()))
      fail(where, "input 'indices' of shape " + shape_str(is) + " does not fit data " + shape_str(xs) + " with batch_dims " + std::to_string(b));
    for (int64_t i = 0; i < b; ++i)
      if (is[static_cast<size_t>(i)] != xs[static_cast<size_t>(i)]) fail(where, "batch dimensions of 'indices' and 'data' differ");
    std::vector<Arg> idx;
    for (int64_t i = 0; i < b; ++i) {
      Shape s(static_cast<size_t>(q - 1), 1);
      s[static_cast<size_t>(i)] = xs[static_cast<size_t>(i)];
      idx.push_back(call("aten.view.default",
                         {call("aten.arange.start_step", {Arg::of_int(0), Arg::of_int(xs[static_cast<size_t>(i)]), Arg::of_int(1)},
                               {{"dtype", dtype_arg(DType::i64)}}),
                          Arg::of_ints(s)}));
    }
    for (int64_t j = 0; j < k; ++j)
      idx.push_back(wrap_negative(call("aten.select.int", {ind, Arg::of_int(-1), Arg::of_int(j)}), xs[static_cast<size_t>(b + j)]));
    if (op == "GatherND") return std::vector<Arg>{call("aten.index.Tensor", {x, list_of(idx)})};
    const auto* ra = attr(n, "reduction");
    const std::string red = ra ? ra->s() : "none";
    if (red != "none" && red != "add") fail(where, "attribute 'reduction' '" + red + "' is not supported (none, add)");
    return std::vector<Arg>{call("aten.index_put.default", {x, list_of(idx), in(2), Arg::of_bool(red == "add")})};
  }
  if (op == "ScatterElements") {
    const Arg x = in(0);
    const Shape xs = shape(x);
    const int64_t axis = axis_of(attr_i(n, "axis", 0), static_cast<int64_t>(xs.size()), where, "attribute 'axis'");
    const Arg idx = wrap_negative(in(1), xs[static_cast<size_t>(axis)]);
    const auto* ra = attr(n, "reduction");
    const std::string red = ra ? ra->s() : "none";
    if (red == "none") return std::vector<Arg>{call("aten.scatter.src", {x, Arg::of_int(axis), idx, in(2)})};
    if (red == "add") return std::vector<Arg>{call("aten.scatter_add.default", {x, Arg::of_int(axis), idx, in(2)})};
    const char* t = red == "mul" ? "prod" : red == "max" ? "amax" : red == "min" ? "amin" : nullptr;
    if (!t) fail(where, "attribute 'reduction' '" + red + "' is not supported (none, add, mul, max, min)");
    return std::vector<Arg>{call("aten.scatter_reduce.two", {x, Arg::of_int(axis), idx, in(2), Arg::of_string(t)}, {{"include_self", Arg::of_bool(true)}})};
  }
  if (op == "Range") {
    // Folded when its inputs are constants (fold); otherwise its length depends on data.
    for (int i = 0; i < 3; ++i) one_const(i, i == 0 ? "start" : i == 1 ? "limit" : "delta");
    const Tensor &s = one_const(0, "start"), &l = one_const(1, "limit"), &d = one_const(2, "delta");
    const DType t = s.dtype();
    if (is_int_type(t))
      return std::vector<Arg>{call("aten.arange.start_step", {Arg::of_int(int_at(s, 0)), Arg::of_int(int_at(l, 0)), Arg::of_int(int_at(d, 0))},
                                   {{"dtype", dtype_arg(t)}})};
    return std::vector<Arg>{call("aten.arange.start_step", {Arg::of_real(s.get(0)), Arg::of_real(l.get(0)), Arg::of_real(d.get(0))}, {{"dtype", dtype_arg(t)}})};
  }
  if (op == "ConstantOfShape") {
    const Tensor& st = one_const(0, "input");
    std::vector<int64_t> s;
    for (int64_t i = 0; i < st.numel(); ++i) s.push_back(int_at(st, i));
    DType t = DType::f32;
    Arg v = Arg::of_real(0.0);
    if (const auto* a = attr(n, "value")) {
      const Tensor c = tensor(a->t(), where + ": attribute 'value'");
      t = c.dtype();
      v = is_int_type(t) ? (t == DType::b8 ? Arg::of_bool(c.get(0) != 0) : Arg::of_int(int_at(c, 0))) : Arg::of_real(c.get(0));
    }
    return std::vector<Arg>{call("aten.full.default", {Arg::of_ints(s), v}, {{"dtype", dtype_arg(t)}})};
  }
  if (op == "Expand") {
    const Arg x = in(0);
    const Tensor& st = one_const(1, "shape");
    std::vector<int64_t> s;
    for (int64_t i = 0; i < st.numel(); ++i) s.push_back(int_at(st, i));
    Shape os;
    try {
      os = broadcast_shapes(shape(x), s);
    } catch (const std::exception&) {
      fail(where, "input 'shape' " + shape_str(s) + " does not broadcast with the input's shape " + shape_str(shape(x)));
    }
    return std::vector<Arg>{call("aten.expand.default", {x, Arg::of_ints(os)})};
  }

  // ---- comparisons and logic
  static const std::map<std::string, std::string> elementwise = {
      {"Equal", "aten.eq.Tensor"},        {"Less", "aten.lt.Tensor"},         {"LessOrEqual", "aten.le.Tensor"},
      {"Greater", "aten.gt.Tensor"},      {"GreaterOrEqual", "aten.ge.Tensor"}, {"And", "aten.logical_and.default"},
      {"Or", "aten.logical_or.default"},  {"Xor", "aten.logical_xor.default"}, {"Not", "aten.logical_not.default"},
      {"IsNaN", "aten.isnan.default"},    {"Sign", "aten.sign.default"},      {"Floor", "aten.floor.default"},
      {"Ceil", "aten.ceil.default"},      {"Round", "aten.round.default"},    {"Softsign", ""},
      {"Tan", "aten.tan.default"},        {"Asin", "aten.asin.default"},      {"Acos", "aten.acos.default"},
      {"Atan", "aten.atan.default"},      {"Sinh", "aten.sinh.default"},      {"Cosh", "aten.cosh.default"},
      {"Asinh", "aten.asinh.default"},    {"Acosh", "aten.acosh.default"},    {"Atanh", "aten.atanh.default"},
      {"BitwiseNot", "aten.bitwise_not.default"}, {"BitwiseAnd", "aten.bitwise_and.Tensor"},
      {"BitwiseOr", "aten.bitwise_or.Tensor"}, {"BitwiseXor", "aten.bitwise_xor.Tensor"}};
  if (auto e = elementwise.find(op); e != elementwise.end() && !e->second.empty()) {
    std::vector<Arg> args;
    for (int i = 0; i < n.input_size(); ++i) args.push_back(in(i));
    return std::vector<Arg>{call(e->second.c_str(), args)};
  }
  if (op == "IsInf") {
    const Arg x = in(0);
    const bool pos = attr_i(n, "detect_positive", 1) != 0, neg = attr_i(n, "detect_negative", 1) != 0;
    const Arg inf = call("aten.isinf.default", {x});
    if (pos && neg) return std::vector<Arg>{inf};
    if (!pos && !neg) return std::vector<Arg>{call("aten.logical_and.default", {inf, call("aten.logical_not.default", {inf})})};
    return std::vector<Arg>{call("aten.logical_and.default", {inf, call(pos ? "aten.gt.Scalar" : "aten.lt.Scalar", {x, Arg::of_int(0)})})};
  }

  // ---- normalization
  if (op == "InstanceNormalization") {
    const double eps = attr_f(n, "epsilon", 1e-5);
    return std::vector<Arg>{call("aten.instance_norm.default", {in(0), in(1), in(2), Arg::none(), Arg::none(), Arg::of_bool(true), Arg::of_real(0.1),
                                                                Arg::of_real(eps), Arg::of_bool(false)})};
  }
  if (op == "GroupNormalization") {
    const Arg x = in(0);
    const Shape xs = shape(x);
    if (xs.size() < 2) fail(where, "input 'X' must have rank 2 or more");
    const int64_t G = attr_i(n, "num_groups", 0), C = xs[1];
    if (!attr(n, "num_groups") || G <= 0 || C % G) fail(where, "attribute 'num_groups' " + std::to_string(G) + " does not divide the " + std::to_string(C) + " channels");
    Arg w = in(1), bias = in(2);
    const int64_t ws = prod(shape(w));
    if (ws != C) {
      if (ws != G || prod(shape(bias)) != G) fail(where, "inputs 'scale' and 'bias' must hold one value per channel (opset 21) or per group (opset 18)");
      Tensor t(DType::i64, {C});  // opset 18: a value per group, repeated over its channels
      for (int64_t c = 0; c < C; ++c) set_int(t, c, c / (C / G));
      const Arg ix = index_const(t, "group_channel");
      w = call("aten.index_select.default", {call("aten.view.default", {w, Arg::of_ints({G})}), Arg::of_int(0), ix});
      bias = call("aten.index_select.default", {call("aten.view.default", {bias, Arg::of_ints({G})}), Arg::of_int(0), ix});
    }
    const Arg r = call("aten.native_group_norm.default", {x, w, bias, Arg::of_int(xs[0]), Arg::of_int(C), Arg::of_int(prod(xs, 2)), Arg::of_int(G),
                                                          Arg::of_real(attr_f(n, "epsilon", 1e-5))});
    return std::vector<Arg>{b_.get(r, 0)};
  }

  // ---- shape ops
  if (op == "Reshape" || op == "Flatten" || op == "Unsqueeze" || op == "Squeeze") {
    const Arg x = in(0);
    return std::vector<Arg>{call("aten.view.default", {x, Arg::of_ints(new_shape(n, shape(x), where))})};
  }
  if (op == "Resize") {
    Arg x = in(0);
    const Shape xs = shape(x);
    const int64_t r = static_cast<int64_t>(xs.size());
    if (attr_i(n, "antialias", 0)) fail(where, "attribute 'antialias' 1 is not supported");
    const auto* ctm = attr(n, "coordinate_transformation_mode");
    if (ctm && ctm->s() == "tf_crop_and_resize") fail(where, "attribute 'coordinate_transformation_mode' 'tf_crop_and_resize' is not supported");
    std::vector<int64_t> axes = attr_ints(n, "axes");
    if (axes.empty())
      for (int64_t i = 0; i < r; ++i) axes.push_back(i);
    for (int64_t& a : axes) a = axis_of(a, r, where, "attribute 'axes' holds axis");
    std::vector<double> scales(static_cast<size_t>(r), 1.0);
    Shape out = xs;
    const bool has_scales = has(2) && one_const(2, "scales").numel() > 0, has_sizes = has(3) && one_const(3, "sizes").numel() > 0;
    if (has_scales == has_sizes) fail(where, "exactly one of the inputs 'scales' and 'sizes' must be given");
    if (has_scales) {
      const Tensor& s = one_const(2, "scales");
      if (s.numel() != static_cast<int64_t>(axes.size())) fail(where, "input 'scales' holds " + std::to_string(s.numel()) + " values for " + std::to_string(axes.size()) + " axes");
      for (size_t i = 0; i < axes.size(); ++i) {
        const double v = s.get(static_cast<int64_t>(i));
        if (!(v > 0) || !(v < 1e9)) fail(where, "input 'scales' holds " + std::to_string(v));
        scales[static_cast<size_t>(axes[i])] = v;
        out[static_cast<size_t>(axes[i])] = static_cast<int64_t>(std::floor(static_cast<double>(xs[static_cast<size_t>(axes[i])]) * v));
      }
    } else {
      const std::vector<int64_t> sz = ints_of(n, 3, where);
      if (sz.size() != axes.size()) fail(where, "input 'sizes' holds " + std::to_string(sz.size()) + " values for " + std::to_string(axes.size()) + " axes");
      const auto* kp = attr(n, "keep_aspect_ratio_policy");
      const std::string policy = kp ? kp->s() : "stretch";
      if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller") fail(where, "attribute 'keep_aspect_ratio_policy' '" + policy + "' is not supported");
      double common = policy == "not_larger" ? 1e300 : 0;
      for (size_t i = 0; i < axes.size(); ++i) {
        const double v = static_cast<double>(sz[i]) / static_cast<double>(xs[static_cast<size_t>(axes[i])]);
        common = policy == "not_larger" ? std::min(common, v) : std::max(common, v);
      }
      for (size_t i = 0; i < axes.size(); ++i) {
        const size_t a = static_cast<size_t>(axes[i]);
        if (sz[i] <= 0) fail(where, "input 'sizes' holds " + std::to_string(sz[i]));
        if (policy == "stretch") {
          scales[a] = static_cast<double>(sz[i]) / static_cast<double>(xs[a]);
          out[a] = sz[i];
        } else {
          scales[a] = common;
          out[a] = static_cast<int64_t>(std::round(common * static_cast<double>(xs[a])));
        }
      }
    }
    for (int64_t a = 0; a < r; ++a) {
      const size_t i = static_cast<size_t>(a);
      if (out[i] <= 0) fail(where, "the output would be empty along axis " + std::to_string(a));
      if (out[i] == xs[i] && scales[i] == 1.0) continue;
      x = resize_axis(x, a, out[i], scales[i], n, where);
    }
    if (out == xs) x = call("aten.alias.default", {x});
    return std::vector<Arg>{x};
  }
  if (op == "Pad") {
    Arg x = in(0);
    const Shape xs = shape(x);
    const int64_t r = static_cast<int64_t>(xs.size());
    const std::vector<int64_t> p = ints_of(n, 1, where);
    std::vector<int64_t> axes = ints_of(n, 3, where);
    if (!has(1)) fail(where, "input 'pads' is missing");
    if (axes.empty())
      for (int64_t i = 0; i < r; ++i) axes.push_back(i);
    for (int64_t& a : axes) a = axis_of(a, r, where, "input 'axes' holds axis");
    const size_t k = axes.size();
    if (p.size() != 2 * k) fail(where, "input 'pads' holds " + std::to_string(p.size()) + " values; " + std::to_string(2 * k) + " expected");
    std::vector<int64_t> before(static_cast<size_t>(r), 0), after(static_cast<size_t>(r), 0);
    for (size_t i = 0; i < k; ++i) before[static_cast<size_t>(axes[i])] = p[i], after[static_cast<size_t>(axes[i])] = p[i + k];
    const auto* ma = attr(n, "mode");
    const std::string mode = ma ? ma->s() : "constant";
    if (mode == "constant") {
      Arg v = Arg::of_real(0.0);
      if (has(2)) {
        const Tensor& c = one_const(2, "constant_value");
        if (c.numel() != 1) fail(where, "input 'constant_value' must hold one value");
        v = is_int_type(c.dtype()) ? Arg::of_int(int_at(c, 0)) : Arg::of_real(c.get(0));
      }
      std::vector<int64_t> tp;
      for (int64_t a = r; a-- > 0;) tp.push_back(before[static_cast<size_t>(a)]), tp.push_back(after[static_cast<size_t>(a)]);
      while (tp.size() > 2 && tp[tp.size() - 1] == 0 && tp[tp.size() - 2] == 0) tp.resize(tp.size() - 2);
      return std::vector<Arg>{call("aten.constant_pad_nd.default", {x, Arg::of_ints(tp), v})};
    }
    for (int64_t a = 0; a < r; ++a) x = pad_axis(x, a, before[static_cast<size_t>(a)], after[static_cast<size_t>(a)], mode, where);
    return std::vector<Arg>{call("aten.alias.default", {x})};
  }
  if (op == "Slice") {
    Arg x = in(0);
    const Shape xs = shape(x);
    const int64_t r = static_cast<int64_t>(xs.size());
    if (!has(1) || !has(2)) fail(where, "inputs 'starts' and 'ends' are required");
    const std::vector<int64_t> starts = ints_of(n, 1, where), ends = ints_of(n, 2, where);
    std::vector<int64_t> axes = ints_of(n, 3, where), steps = ints_of(n, 4, where);
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
      fail(where, "inputs 'starts', 'ends', 'axes' and 'steps' differ in length");
    std::set<int64_t> seen;
    for (size_t i = 0; i < starts.size(); ++i) {
      const int64_t a = axis_of(axes[i], r, where, "input 'axes' holds axis");
      if (!seen.insert(a).second) fail(where, "input 'axes' repeats axis " + std::to_string(axes[i]));
      const int64_t dim = xs[static_cast<size_t>(a)], step = steps[i];
      if (step == 0) fail(where, "input 'steps' holds 0");
      int64_t st = starts[i], en = ends[i];
      if (st < 0) st = st < -dim ? (step > 0 ? 0 : -1) : st + dim;
      if (en < 0) en = en < -dim ? -1 : en + dim;
      if (step > 0) {
        st = std::clamp<int64_t>(st, 0, dim), en = std::clamp<int64_t>(en, 0, dim);
        en = std::max(en, st);
        x = call("aten.slice.Tensor", {x, Arg::of_int(a), Arg::of_int(st), Arg::of_int(en), Arg::of_int(step)});
      } else {
        st = std::clamp<int64_t>(st, -1, dim - 1), en = std::clamp<int64_t>(en, -1, dim - 1);
        const int64_t s = -step, count = st > en ? (st - en + s - 1) / s : 0;
        const int64_t lo = count ? st - (count - 1) * s : 0;
        x = call("aten.slice.Tensor", {x, Arg::of_int(a), Arg::of_int(lo), Arg::of_int(count ? st + 1 : 0), Arg::of_int(s)});
        if (count > 1) x = call("aten.flip.default", {x, Arg::of_ints({a})});
      }
    }
    return std::vector<Arg>{call("aten.alias.default", {x})};
  }
  if (op == "Split") {
    const Arg x = in(0);
    const Shape xs = shape(x);
    const int64_t axis = axis_of(attr_i(n, "axis", 0), static_cast<int64_t>(xs.size()), where, "attribute 'axis'");
    const int64_t dim = xs[static_cast<size_t>(axis)];
    std::vector<int64_t> sizes = has(1) ? ints_of(n, 1, where) : attr_ints(n, "split");
    if (sizes.empty()) {
      const int64_t k = attr_i(n, "num_outputs", n.output_size());
      if (k <= 0) fail(where, "attribute 'num_outputs' must be positive");
      if (!attr(n, "num_outputs") && dim % k) fail(where, "axis size " + std::to_string(dim) + " does not split evenly into " + std::to_string(k) + " outputs");
      const int64_t each = (dim + k - 1) / k;
      for (int64_t o = 0; o < dim; o += each) sizes.push_back(std::min(each, dim - o));
    }
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0) fail(where, "input 'split' holds a negative size");
      total += s;
    }
    if (total != dim) fail(where, "the split sizes add up to " + std::to_string(total) + ", not the axis size " + std::to_string(dim));
    if (static_cast<int>(sizes.size()) != n.output_size())
      fail(where, std::to_string(sizes.size()) + " parts for " + std::to_string(n.output_size()) + " outputs");
    const Arg r = call("aten.split_with_sizes.default", {x, Arg::of_ints(sizes), Arg::of_int(axis)});
    std::vector<Arg> outs;
    for (size_t i = 0; i < sizes.size(); ++i) outs.push_back(b_.get(r, static_cast<int>(i)));
    return outs;
  }
  if (op == "Tile") {
    const Arg x = in(0);
    const std::vector<int64_t> rep = ints_of(n, 1, where);
    if (rep.size() != shape(x).size()) fail(where, "input 'repeats' holds " + std::to_string(rep.size()) + " values for rank " + std::to_string(shape(x).size()));
    for (int64_t v : rep)
      if (v < 0) fail(where, "input 'repeats' holds a negative value");
    return std::vector<Arg>{call("aten.repeat.default", {x, Arg::of_ints(rep)})};
  }
  if (op == "Trilu") {
    const Arg x = in(0);
    if (shape(x).size() < 2) fail(where, "input must have rank 2 or more");
    int64_t k = 0;
    if (has(1)) k = int_at(one_const(1, "k"), 0);
    return std::vector<Arg>{call(attr_i(n, "upper", 1) ? "aten.triu.default" : "aten.tril.default", {x, Arg::of_int(k)})};
  }
  if (op == "CumSum") {
    Arg x = in(0);
    const Shape xs = shape(x);
    const Tensor& at = one_const(1, "axis");
    const int64_t axis = axis_of(int_at(at, 0), static_cast<int64_t>(xs.size()), where, "input 'axis'");
    const bool rev = attr_i(n, "reverse", 0) != 0, excl = attr_i(n, "exclusive", 0) != 0;
    if (rev) x = call("aten.flip.default", {x, Arg::of_ints({axis})});
    if (excl) {  // shifted by one: a zero first, the last dropped
      const int64_t dim = xs[static_cast<size_t>(axis)];
      std::vector<int64_t> tp;
      for (int64_t a = static_cast<int64_t>(xs.size()); a-- > axis;) tp.push_back(a == axis ? 1 : 0), tp.push_back(0);
      x = call("aten.constant_pad_nd.default",
               {call("aten.slice.Tensor", {x, Arg::of_int(axis), Arg::of_int(0), Arg::of_int(std::max<int64_t>(dim - 1, 0)), Arg::of_int(1)}), Arg::of_ints(tp),
                Arg::of_int(0)});
    }
    Arg y = call("aten.cumsum.default", {x, Arg::of_int(axis)}, {{"dtype", dtype_arg(dt(in(0)))}});
    if (rev) y = call("aten.flip.default", {y, Arg::of_ints({axis})});
    return std::vector<Arg>{y};
  }
  if (op == "TopK") {
    const Arg x = in(0);
    const Shape xs = shape(x);
    const int64_t axis = axis_of(attr_i(n, "axis", -1), static_cast<int64_t>(xs.size()), where, "attribute 'axis'");
    const int64_t k = int_at(one_const(1, "K"), 0);
    if (k < 0 || k > xs[static_cast<size_t>(axis)]) fail(where, "input 'K' " + std::to_string(k) + " is out of range for axis size " + std::to_string(xs[static_cast<size_t>(axis)]));
    const Arg r = call("aten.topk.default", {x, Arg::of_int(k), Arg::of_int(axis), Arg::of_bool(attr_i(n, "largest", 1) != 0), Arg::of_bool(true)});
    return std::vector<Arg>{b_.get(r, 0), b_.get(r, 1)};
  }
  if (op == "ArgMax" || op == "ArgMin") {
    Arg x = in(0);
    const Shape xs = shape(x);
    const int64_t axis = axis_of(attr_i(n, "axis", 0), static_cast<int64_t>(xs.size()), where, "attribute 'axis'");
    const bool keep = attr_i(n, "keepdims", 1) != 0, last = attr_i(n, "select_last_index", 0) != 0;
    if (last) x = call("aten.flip.default", {x, Arg::of_ints({axis})});
    Arg y = call(op == "ArgMax" ? "aten.argmax.default" : "aten.argmin.default", {x, Arg::of_int(axis), Arg::of_bool(keep)});
    if (last) y = call("aten.add.Scalar", {call("aten.neg.default", {y}), Arg::of_int(xs[static_cast<size_t>(axis)] - 1)});
    return std::vector<Arg>{y};
  }
  if (op.rfind("Reduce", 0) == 0) {
    static const std::set<std::string> reductions = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                                                     "ReduceLogSumExp", "ReduceSumSquare", "ReduceLogSum"};
    if (reductions.count(op)) return std::vector<Arg>{reduce(n, where)};
  }

  // ---- matrix products and convolution
  if (op == "MatMul") {
    Arg a = in(0), bm = in(1);
    const Shape sa = shape(a), sb = shape(bm);
    if (sa.empty() || sb.empty()) fail(where, "inputs must have rank 1 or more");
    if (sa.size() == 1) a = call("aten.view.default", {a, Arg::of_ints({1, sa[0]})});
    if (sb.size() == 1) bm = call("aten.view.default", {bm, Arg::of_ints({sb[0], 1})});
    const Shape ra = shape(a), rb = shape(bm);
    if (ra.back() != rb[rb.size() - 2]) fail(where, "inner dimensions differ: " + shape_str(sa) + " and " + shape_str(sb));
    Arg y = matmul(a, bm);
    if (sa.size() == 1 || sb.size() == 1) {
      Shape s = shape(y);
      if (sb.size() == 1) s.pop_back();
      if (sa.size() == 1) s.erase(s.end() - (sb.size() == 1 ? 1 : 2));
      y = call("aten.view.default", {y, Arg::of_ints(s)});
    }
    return std::vector<Arg>{y};
  }
  if (op == "Gemm") {
    Arg a = in(0), bm = in(1);
    if (shape(a).size() != 2 || shape(bm).size() != 2) fail(where, "inputs 'A' and 'B' must be 2-D");
    if (attr_i(n, "transA", 0)) a = call("aten.permute.default", {a, Arg::of_ints({1, 0})});
    if (attr_i(n, "transB", 0)) bm = call("aten.permute.default", {bm, Arg::of_ints({1, 0})});
    const double alpha = attr_f(n, "alpha", 1.0), beta = attr_f(n, "beta", 1.0);
    const Shape o = {shape(a)[0], shape(bm)[1]};
    if (shape(a)[1] != shape(bm)[0]) fail(where, "inner dimensions differ");
    if (!has(2) || beta == 0.0) {
      Arg y = call("aten.mm.default", {a, bm});
      if (alpha != 1.0) y = call("aten.mul.Tensor", {y, Arg::of_real(alpha)});
      return std::vector<Arg>{y};
    }
    Arg c = in(2);
    if (shape(c) != o) {
      try {
        if (broadcast_shapes(shape(c), o) != o) throw std::invalid_argument("");
      } catch (const std::exception&) {
        fail(where, "input 'C' of shape " + shape_str(shape(c)) + " does not broadcast to " + shape_str(o));
      }
      c = call("aten.expand.default", {c, Arg::of_ints(o)});
    }
    return std::vector<Arg>{call("aten.addmm.default", {c, a, bm}, {{"beta", Arg::of_real(beta)}, {"alpha", Arg::of_real(alpha)}})};
  }
  if (op == "Conv") return std::vector<Arg>{conv(n, where)};
  if (op == "Einsum") {  // numpy's semantics, which aten.einsum shares (implicit output in ASCII order)
    const auto* eq = attr(n, "equation");
    if (!eq) fail(where, "attribute 'equation' is missing");
    std::vector<Arg> ops;
    for (int i = 0; i < n.input_size(); ++i) ops.push_back(in(i));
    return std::vector<Arg>{call("aten.einsum.default", {Arg::of_string(eq->s()), list_of(ops)})};
  }
  if (op == "ConvTranspose") {
    // ONNX Runtime's geometry (ConvTransposeAttributes, DistributePadding in providers/common.h,
    // as the ONNX spec writes it): output_shape or SAME_* padding set the total padding, split
    // with the odd one on the tail for SAME_UPPER and on the head otherwise (NOTSET, SAME_LOWER;
    // ONNX Runtime 1.30's outputs on convT_same_lower and convT_output_shape confirm it; older
    // ONNX Runtime releases had the two the other way round). output_padding stays on the tail.
    // Mapped to aten.convolution(transposed=True) with the smaller pad of each side, the rest
    // sliced off its output.
    const Arg x = in(0), w = in(1);
    const Shape xs = shape(x), ws = shape(w);
    if (xs.size() != ws.size() || xs.size() < 3 || xs.size() > 5)
      fail(where, "input and weight ranks " + std::to_string(xs.size()) + " and " + std::to_string(ws.size()) + " do not fit (1-D to 3-D)");
    const size_t nd = xs.size() - 2;
    const int64_t group = attr_i(n, "group", 1);
    if (group <= 0 || xs[1] != ws[0] || ws[0] % group)
      fail(where, "attribute 'group' " + std::to_string(group) + " does not fit input channels " + std::to_string(xs[1]) + " and weight " + shape_str(ws));
    const std::vector<int64_t> ones(nd, 1), zeros(nd, 0);
    const std::vector<int64_t> st = attr_ints(n, "strides", ones), dil = attr_ints(n, "dilations", ones), opad = attr_ints(n, "output_padding", zeros);
    std::vector<int64_t> pads = attr_ints(n, "pads", std::vector<int64_t>(2 * nd, 0)), oshape = attr_ints(n, "output_shape");
    const std::vector<int64_t> ks = attr_ints(n, "kernel_shape", Shape(ws.begin() + 2, ws.end()));
    if (st.size() != nd || dil.size() != nd || opad.size() != nd || pads.size() != 2 * nd || ks.size() != nd)
      fail(where, "attributes 'strides', 'dilations', 'output_padding', 'pads' or 'kernel_shape' do not fit the kernel's rank");
    if (!oshape.empty() && oshape.size() != nd && oshape.size() != nd + 2)
      fail(where, "attribute 'output_shape' has " + std::to_string(oshape.size()) + " values, expected " + std::to_string(nd) + " or " + std::to_string(nd + 2));
    if (oshape.size() == nd + 2) oshape.erase(oshape.begin(), oshape.begin() + 2);
    const auto* ap = attr(n, "auto_pad");
    const std::string auto_pad = ap ? ap->s() : "NOTSET";
    if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
      fail(where, "attribute 'auto_pad' '" + auto_pad + "' is not supported");
    for (size_t i = 0; i < nd; ++i) {
      if (st[i] <= 0 || dil[i] <= 0) fail(where, "attributes 'strides' and 'dilations' must be positive");
      if (ks[i] != ws[2 + i]) fail(where, "attribute 'kernel_shape' " + shape_str(ks) + " does not fit weight " + shape_str(ws));
      const int64_t full = (xs[2 + i] - 1) * st[i] + opad[i] + (ws[2 + i] - 1) * dil[i] + 1;
      int64_t want = -1;
      if (!oshape.empty()) want = oshape[i];
      else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") want = xs[2 + i] * st[i];
      else if (auto_pad == "VALID") pads[i] = pads[i + nd] = 0;
      if (want >= 0) {
        if (want > full)
          fail(where, "attribute 'output_shape' asks for " + std::to_string(want) + " along spatial axis " + std::to_string(i) +
                          ", more than the " + std::to_string(full) + " the transposed convolution gives");
        const int64_t total = full - want;
        pads[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
        pads[i + nd] = total - pads[i];
      }
      if (pads[i] < 0 || pads[i + nd] < 0) fail(where, "attribute 'pads' holds a negative value");
      if (full - pads[i] - pads[i + nd] <= 0) fail(where, "the output is empty along spatial axis " + std::to_string(i));
    }
    std::vector<int64_t> sym(nd);
    for (size_t i = 0; i < nd; ++i) sym[i] = std::min(pads[i], pads[i + nd]);
    const Arg bias = has(2) ? in(2) : Arg::none();
    Arg y = call("aten.convolution.default", {x, w, bias, Arg::of_ints(st), Arg::of_ints(sym), Arg::of_ints(dil), Arg::of_bool(true),
                                              Arg::of_ints(opad), Arg::of_int(group)});
    for (size_t i = 0; i < nd; ++i)  // the unequal part of the padding
      if (pads[i] != pads[i + nd]) {
        const int64_t len = shape(y)[2 + i];
        y = call("aten.slice.Tensor", {y, Arg::of_int(static_cast<int64_t>(2 + i)), Arg::of_int(pads[i] - sym[i]),
                                       Arg::of_int(len - (pads[i + nd] - sym[i])), Arg::of_int(1)});
      }
    return std::vector<Arg>{y};
  }
  if (op == "LSTM" || op == "GRU") {
    RnnSpec s;
    s.lstm = op == "LSTM";
    const int64_t G = s.lstm ? 4 : 3;
    const int64_t layout = attr_i(n, "layout", 0);
    if (layout != 0 && layout != 1) fail(where, "attribute 'layout' must be 0 or 1, got " + std::to_string(layout));
    Arg x = in(0);
    const Arg w = in(1), r = in(2);
    if (shape(x).size() != 3) fail(where, "input 'X' must be 3-D, got " + shape_str(shape(x)));
    if (layout) x = call("aten.permute.default", {x, Arg::of_ints({1, 0, 2})});
    const Shape xs = shape(x), ws = shape(w), rs = shape(r);
    s.T = xs[0], s.B = xs[1], s.I = xs[2];
    const auto* dir = attr(n, "direction");
    const std::string direction = dir ? dir->s() : "forward";
    if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
      fail(where, "attribute 'direction' '" + direction + "' is not forward, reverse or bidirectional");
    s.dirs = direction == "bidirectional" ? 2 : 1;
    s.reverse = direction == "reverse";
    if (ws.size() != 3 || ws[0] != s.dirs || ws[1] % G || ws[2] != s.I)
      fail(where, "input 'W' " + shape_str(ws) + " does not fit " + std::to_string(s.dirs) + " direction(s), " + std::to_string(G) +
                      " gates and input size " + std::to_string(s.I));
    s.H = ws[1] / G;
    if (const auto* hs = attr(n, "hidden_size"); hs && hs->i() != s.H)
      fail(where, "attribute 'hidden_size' " + std::to_string(hs->i()) + " does not fit input 'W' " + shape_str(ws));
    if (rs != Shape{s.dirs, G * s.H, s.H}) fail(where, "input 'R' is " + shape_str(rs) + ", expected " + shape_str(Shape{s.dirs, G * s.H, s.H}));
    const Arg bias = has(3) ? in(3) : Arg::none();
    if (!bias.is_none() && shape(bias) != Shape{s.dirs, 2 * G * s.H})
      fail(where, "input 'B' is " + shape_str(shape(bias)) + ", expected " + shape_str(Shape{s.dirs, 2 * G * s.H}));
    if (has(4)) {  // sequence_lens: only every sequence of full length
      const Tensor& lens = one_const(4, "sequence_lens");
      for (int64_t i = 0; i < lens.numel(); ++i)
        if (int_at(lens, i) != s.T)
          fail(where, "input 'sequence_lens' holds " + std::to_string(int_at(lens, i)) + ": only sequences of the full length " + std::to_string(s.T) +
                          " are supported");
    }
    auto state = [&](int i, const char* what) {
      if (!has(i)) return Arg::none();
      Arg v = in(i);
      if (layout) v = call("aten.permute.default", {v, Arg::of_ints({1, 0, 2})});
      if (shape(v) != Shape{s.dirs, s.B, s.H})
        fail(where, std::string("input '") + what + "' is " + shape_str(shape(in(i))) + ", which does not fit " + std::to_string(s.dirs) +
                        " direction(s), batch " + std::to_string(s.B) + " and hidden size " + std::to_string(s.H));
      return v;
    };
    const Arg h0 = state(5, "initial_h"), c0 = s.lstm ? state(6, "initial_c") : Arg::none();
    const Arg peep = s.lstm && has(7) ? in(7) : Arg::none();
    if (!peep.is_none() && shape(peep) != Shape{s.dirs, 3 * s.H})
      fail(where, "input 'P' is " + shape_str(shape(peep)) + ", expected " + shape_str(Shape{s.dirs, 3 * s.H}));
    if (s.lstm && attr_i(n, "input_forget", 0)) fail(where, "attribute 'input_forget' = 1 (coupled input and forget gates) is not supported");
    if (attr(n, "activation_alpha") || attr(n, "activation_beta"))
      fail(where, "attributes 'activation_alpha' and 'activation_beta' are not supported");
    s.clip = attr_f(n, "clip", 0.0);
    if (attr(n, "clip") && !(s.clip > 0)) fail(where, "attribute 'clip' must be positive");
    s.lbr = !s.lstm && attr_i(n, "linear_before_reset", 0) != 0;
    const size_t per = s.lstm ? 3 : 2;
    if (const auto* a = attr(n, "activations")) {
      for (const auto& f : a->strings()) s.acts.push_back(f);
      if (s.acts.size() != per * static_cast<size_t>(s.dirs))
        fail(where, "attribute 'activations' holds " + std::to_string(s.acts.size()) + " functions, expected " + std::to_string(per * s.dirs));
      for (const std::string& f : s.acts)
        if (f != "Sigmoid" && f != "Tanh" && f != "Relu") fail(where, "activation '" + f + "' is not supported (Sigmoid, Tanh and Relu are)");
    } else {
      for (int64_t d = 0; d < s.dirs; ++d)
        for (const char* f : s.lstm ? std::vector<const char*>{"Sigmoid", "Tanh", "Tanh"} : std::vector<const char*>{"Sigmoid", "Tanh"})
          s.acts.push_back(f);
    }
    std::vector<Arg> outs = rnn_unroll(b_, s, x, w, r, bias, h0, c0, peep);
    if (layout) {
      outs[0] = call("aten.permute.default", {outs[0], Arg::of_ints({2, 0, 1, 3})});
      for (size_t i = 1; i < outs.size(); ++i) outs[i] = call("aten.permute.default", {outs[i], Arg::of_ints({1, 0, 2})});
    }
    return outs;
  }
  if (op == "If" || op == "Loop") {
    // Control flow with a static outcome: If whose condition is known at import (an initializer,
    // a Constant or a folded value) takes its branch; Loop with a constant trip count (or a
    // condition that folds each iteration) is unrolled. A subgraph sees the outer scope's names;
    // its own names (inputs, initializers, node outputs) are dropped after it.
    struct Bound {
      std::string name;
      std::optional<Arg> arg;  // a graph value, or
      Tensor t;                // a constant
    };
    auto bound_of = [&](const std::string& name, const std::string& what) -> Bound {
      if (const Tensor* c = constant(name); c && !values_.count(name)) return {name, std::nullopt, *c};
      if (auto v = values_.find(name); v != values_.end()) return {name, v->second, Tensor()};
      if (const Tensor* c = constant(name)) return {name, std::nullopt, *c};
      fail(where, what + " '" + name + "' is not defined");
    };
    auto subgraph = [&](const onnx::GraphProto& g, const std::vector<Bound>& bind, const std::string& what) {
      const auto saved_values = values_;
      const auto saved_constants = constants_;
      const auto saved_origins = b_.origins;
      std::set<std::string> inner;
      for (const auto& init : g.initializer()) {
        constants_[init.name()] = tensor(init, "initializer '" + init.name() + "' of " + what);
        values_.erase(init.name());
        inner.insert(init.name());
      }
      for (const Bound& v : bind) {
        inner.insert(v.name);
        if (v.arg) values_[v.name] = *v.arg, constants_.erase(v.name);
        else constants_[v.name] = v.t, values_.erase(v.name);
      }
      for (const auto* infos : {&g.value_info(), &g.output()})
        for (const auto& vi : *infos)
          if (std::optional<TensorMeta> m = recorded_meta(vi)) recorded_.emplace(vi.name(), *m);
      try {
        for (const auto& node : g.node()) {
          for (const auto& o : node.output()) inner.insert(o);
          import_node(node);
        }
      } catch (const std::runtime_error& e) {
        std::string m = e.what();
        if (m.rfind(path_ + ": ", 0) == 0) m = m.substr(path_.size() + 2);
        fail(where, "in its " + what + ": " + m);
      }
      std::vector<Bound> outs;
      for (const auto& o : g.output()) outs.push_back(bound_of(o.name(), what + " output"));
      // Outer initializers made graph values inside stay made (one parameter each, not one per iteration).
      const auto now = values_;
      values_ = saved_values;
      constants_ = saved_constants;
      b_.origins = saved_origins;
      for (const auto& [k, v] : now)
        if (!values_.count(k) && !inner.count(k) && constants_.count(k)) values_[k] = v;
      return outs;
    };
    auto graph_attr = [&](const char* name) -> const onnx::GraphProto& {
      const auto* a = attr(n, name);
      if (!a || !a->has_g()) fail(where, std::string("attribute '") + name + "' (a graph) is missing");
      return a->g();
    };
    auto as_value = [&](const Bound& v) { return v.arg ? *v.arg : index_const(v.t, identifier(v.name)); };
    auto set_output = [&](int i, const Bound& v) {
      if (i >= n.output_size() || n.output(i).empty()) return;
      if (v.arg) values_[n.output(i)] = *v.arg;
      else constants_[n.output(i)] = v.t;
    };
    if (op == "If") {
      const std::string& cname = input_name(n, 0, where);
      const Tensor* c = constant(cname);
      if (!c)
        fail(where, "input 'cond' ('" + cname + "') is " + data_source(cname) + ": only an If whose condition is a constant "
                    "(an initializer, a Constant, or a value folded at import) is supported, since graphs are static here");
      if (c->numel() != 1) fail(where, "input 'cond' must hold one value, it holds " + std::to_string(c->numel()));
      const bool taken = c->get(0) != 0;
      const char* branch = taken ? "then_branch" : "else_branch";
      const std::vector<Bound> outs = subgraph(graph_attr(branch), {}, branch);
      if (static_cast<int>(outs.size()) != n.output_size())
        fail(where, std::string(branch) + " has " + std::to_string(outs.size()) + " outputs, the node " + std::to_string(n.output_size()));
      for (int i = 0; i < n.output_size(); ++i) set_output(i, outs[static_cast<size_t>(i)]);
      return std::vector<Arg>{};
    }
    // Loop(M, cond, v_initial...) with body(iteration_num, cond, v...) -> (cond, v..., scan...)
    const onnx::GraphProto& body = graph_attr("body");
    const int carried = n.input_size() - 2;
    if (carried < 0) fail(where, "needs inputs 'M' and 'cond' (either may be empty)");
    if (body.input_size() != carried + 2 || body.output_size() < carried + 1)
      fail(where, "the body's " + std::to_string(body.input_size()) + " inputs and " + std::to_string(body.output_size()) +
                      " outputs do not fit " + std::to_string(carried) + " loop-carried values");
    const int scans = body.output_size() - 1 - carried;
    constexpr int64_t kMaxIterations = 4096;
    int64_t trip = -1;
    if (has(0)) {
      const Tensor* m = constant(n.input(0));
      if (!m || m->numel() != 1)
        fail(where, "input 'M' ('" + n.input(0) + "') is not a constant of one value (it is " + (m ? "of " + std::to_string(m->numel()) + " values" : data_source(n.input(0))) +
                        "): only a Loop with a trip count known at import is unrolled");
      trip = int_at(*m, 0);
    }
    bool cond = true;
    const bool use_cond = has(1);
    if (use_cond) {
      const Tensor* c = constant(n.input(1));
      if (!c || c->numel() != 1)
        fail(where, "input 'cond' ('" + n.input(1) + "') is not a constant of one value (it is " + (c ? "of " + std::to_string(c->numel()) + " values" : data_source(n.input(1))) +
                        "): only a Loop whose iterations are known at import is unrolled");
      cond = c->get(0) != 0;
    }
    if (trip < 0 && !use_cond) fail(where, "has neither a trip count nor a condition: it never ends");
    if (trip > kMaxIterations) fail(where, "trip count " + std::to_string(trip) + " is more than the " + std::to_string(kMaxIterations) + " iterations unrolled");
    std::vector<Bound> v;
    for (int i = 0; i < carried; ++i) v.push_back(bound_of(input_name(n, i + 2, where), "input"));
    std::vector<std::vector<Bound>> scanned(static_cast<size_t>(scans));
    int64_t it = 0;
    for (; (trip < 0 || it < trip) && cond; ++it) {
      if (it == kMaxIterations) fail(where, "runs past " + std::to_string(kMaxIterations) + " iterations, the most unrolled");
      std::vector<Bound> bind;
      Tensor iv(DType::i64, {}), cv(DType::b8, {});
      set_int(iv, 0, it);
      cv.set(0, 1.0);
      bind.push_back({body.input(0).name(), std::nullopt, iv});
      bind.push_back({body.input(1).name(), std::nullopt, cv});
      for (int i = 0; i < carried; ++i) bind.push_back({body.input(i + 2).name(), v[static_cast<size_t>(i)].arg, v[static_cast<size_t>(i)].t});
      std::vector<Bound> outs = subgraph(body, bind, "body (iteration " + std::to_string(it) + ")");
      if (use_cond) {
        if (outs[0].arg)
          fail(where, "the body's condition output '" + outs[0].name + "' is computed from data: a Loop whose iterations depend on values is not supported");
        if (outs[0].t.numel() != 1) fail(where, "the body's condition output must hold one value");
        cond = outs[0].t.get(0) != 0;
      }
      for (int i = 0; i < carried; ++i) v[static_cast<size_t>(i)] = outs[static_cast<size_t>(i + 1)];
      for (int k = 0; k < scans; ++k) scanned[static_cast<size_t>(k)].push_back(outs[static_cast<size_t>(1 + carried + k)]);
    }
    for (int i = 0; i < carried; ++i) set_output(i, v[static_cast<size_t>(i)]);
    for (int k = 0; k < scans; ++k) {
      if (it == 0) fail(where, "runs no iteration but has scan outputs, whose shape is then unknown");
      std::vector<Arg> parts;
      for (const Bound& e : scanned[static_cast<size_t>(k)]) parts.push_back(call("aten.unsqueeze.default", {as_value(e), Arg::of_int(0)}));
      set_output(carried + k, Bound{"", call("aten.cat.default", {list_of(parts), Arg::of_int(0)}), Tensor()});
    }
    return std::vector<Arg>{};
  }

  // ---- elementwise
  if (op == "Softplus" || op == "Mish") {  // relu(x) + log1p(exp(-|x|)), stable at both ends
    const Arg x = in(0);
    const Arg sp = call("aten.add.Tensor", {call("aten.relu.default", {x}),
                                            call("aten.log1p.default", {call("aten.exp.default", {call("aten.neg.default", {call("aten.abs.default", {x})})})})});
    if (op == "Softplus") return std::vector<Arg>{sp};
    return std::vector<Arg>{call("aten.mul.Tensor", {x, call("aten.tanh.default", {sp})})};
  }
  if (op == "LeakyRelu") return std::vector<Arg>{call("aten.leaky_relu.default", {in(0), Arg::of_real(attr_f(n, "alpha", 0.01))})};
  if (op == "Elu") return std::vector<Arg>{call("aten.elu.default", {in(0), Arg::of_real(attr_f(n, "alpha", 1.0))})};
  if (op == "Selu")
    return std::vector<Arg>{call("aten.elu.default", {in(0), Arg::of_real(attr_f(n, "alpha", 1.67326319217681884765625)),
                                                      Arg::of_real(attr_f(n, "gamma", 1.05070102214813232421875)), Arg::of_real(1.0)})};
  if (op == "Softsign") {
    const Arg x = in(0);
    return std::vector<Arg>{call("aten.div.Tensor", {x, call("aten.add.Scalar", {call("aten.abs.default", {x}), Arg::of_int(1)})})};
  }
  if (op == "LogSoftmax") return std::vector<Arg>{call("aten._log_softmax.default", {in(0), Arg::of_int(attr_i(n, "axis", -1)), Arg::of_bool(false)})};
  if (op == "Mod") {
    const bool fm = attr_i(n, "fmod", 0) != 0;
    const Arg a = in(0), b = in(1);
    if (!fm && dtype_is_float(dt(a))) fail(where, "attribute 'fmod' must be 1 for floating-point inputs");
    return std::vector<Arg>{call(fm ? "aten.fmod.Tensor" : "aten.remainder.Tensor", {a, b})};
  }
  if (op == "Max" || op == "Min" || op == "Sum" || op == "Mean") {
    if (n.input_size() < 1) fail(where, "needs at least one input");
    const char* f = op == "Max" ? "aten.maximum.default" : op == "Min" ? "aten.minimum.default" : "aten.add.Tensor";
    Arg y = in(0);
    for (int i = 1; i < n.input_size(); ++i) y = call(f, {y, in(i)});
    if (op == "Mean" && n.input_size() > 1) y = call("aten.div.Scalar", {y, Arg::of_int(n.input_size())});
    if (n.input_size() == 1 && op != "Mean") y = call("aten.alias.default", {y});
    if (n.input_size() == 1 && op == "Mean") y = call("aten.alias.default", {y});
    return std::vector<Arg>{y};
  }
  if (op == "Cast" || op == "CastLike") {
    const Arg x = in(0);
    DType to;
    if (op == "Cast") {
      if (!attr(n, "to")) fail(where, "attribute 'to' is missing");
      to = dtype(static_cast<int>(attr_i(n, "to", 0)), where + ": attribute 'to'");
    } else {
      to = dt(in(1));
    }
    if (to == dt(x)) return std::vector<Arg>{call("aten.alias.default", {x})};
    return std::vector<Arg>{call("aten._to_copy.default", {x}, {{"dtype", dtype_arg(to)}})};
  }
  if (op == "Dropout") {
    const Arg x = in(0);
    if (has(2)) {
      const Tensor& t = one_const(2, "training_mode");
      if (t.numel() && t.get(0) != 0) fail(where, "input 'training_mode' is true: only inference is supported");
    }
    std::vector<Arg> outs = {call("aten.alias.default", {x})};
    if (n.output_size() > 1)
      outs.push_back(call("aten.full.default", {Arg::of_ints(shape(x)), Arg::of_bool(true)}, {{"dtype", dtype_arg(DType::b8)}}));
    return outs;
  }
  if (op == "Clip") {
    const Arg x = in(0);
    const bool ints = !dtype_is_float(dt(x));
    auto bound = [&](int i) -> Arg {
      if (!has(i)) return Arg::none();
      if (const Tensor* t = constant(n.input(i))) {
        if (t->numel() != 1) fail(where, std::string("input '") + (i == 1 ? "min" : "max") + "' must hold one value");
        return ints ? Arg::of_int(int_at(*t, 0)) : Arg::of_real(t->get(0));
      }
      // The spec asks for a 0-d bound; ONNX Runtime's CPU Clip takes any shape its
      // TensorShape::IsScalar accepts, [] or [1], and exporters write [1]: taken as its one value,
      // so that a 0-d x keeps its shape.
      const Arg v = in(i);
      const Shape s = shape(v);
      if (s.empty()) return v;
      if (s != Shape{1})
        fail(where, std::string("input '") + (i == 1 ? "min" : "max") + "' must be a scalar (shape [] or [1]), got " + shape_str(s));
      return call("aten.reshape.default", {v, Arg::of_ints({})});
    };
    const Arg lo = bound(1), hi = bound(2);
    if (lo.is_node() || hi.is_node()) {
      auto tensorize = [&](const Arg& v) {
        if (!v.is_number()) return v;
        return call("aten.scalar_tensor.default", {v}, {{"dtype", dtype_arg(dt(x))}});
      };
      return std::vector<Arg>{call("aten.clamp.Tensor", {x, tensorize(lo), tensorize(hi)})};
    }
    if (lo.is_none() && hi.is_none()) return std::vector<Arg>{call("aten.alias.default", {x})};
    return std::vector<Arg>{call("aten.clamp.default", {x, lo, hi})};
  }
  return std::nullopt;
}

}  // namespace ls::onnx_import
#endif
