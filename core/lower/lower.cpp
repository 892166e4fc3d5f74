#include "lower/lower.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <unordered_map>

#include "ops/known_ops.h"
#include "ops/op_table.h"
#include "ops/philox.h"

namespace ls {
namespace {

// A reader's load: a closure over the handler, shared by its copies. A reader is copied into the
// body of every node that reads it (a pointwise node's operands), and copying the closure with
// its captured buffer name and strides was most of the lowering's allocations.
class LoadFn {
 public:
  LoadFn() = default;
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, LoadFn>>>
  LoadFn(F f) : fn_(std::make_shared<const Impl<F>>(std::move(f))) {}  // NOLINT: a lambda converts implicitly
  V operator()(OpsHandler& h, const std::vector<Expr>& idx) const {
    if (!fn_) throw std::logic_error("lowering: a value's reader was released before its last reader");
    return fn_->call(h, idx);
  }
  explicit operator bool() const { return fn_ != nullptr; }

 private:
  struct Base {
    virtual ~Base() = default;
    virtual V call(OpsHandler& h, const std::vector<Expr>& idx) const = 0;
  };
  template <class F>
  struct Impl final : Base {
    explicit Impl(F x) : f(std::move(x)) {}
    V call(OpsHandler& h, const std::vector<Expr>& idx) const override { return f(h, idx); }
    F f;
  };
  std::shared_ptr<const Base> fn_;
};

// How to read a graph value at a position: a define-by-run reader over the handler.
struct Reader {
  LoadFn load;
  Shape shape;
  DType dtype;
};

Reader buffer_reader(const std::string& name, const Shape& shape, DType dtype) {
  return {[name, strides = contiguous_strides(shape)](OpsHandler& h, const std::vector<Expr>& idx) { return h.load(name, linear_index(idx, strides)); },
          shape, dtype};
}

// Index into a value of `in` broadcast (right-aligned) to a position of rank out_rank.
std::vector<Expr> broadcast_index(const Shape& in, const std::vector<Expr>& idx) {
  std::vector<Expr> r(in.size());
  const size_t off = idx.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) r[i] = in[i] == 1 ? Expr(0) : idx[off + i];
  return r;
}

// Advanced indexing's positions (index.Tensor, index_put): the index tensors (None: a whole
// dimension) broadcast to one shape B; the indexing result holds B in place of the indexed
// dimensions where those are adjacent, else in front (NumPy's rule). Each position loads its
// index from every index tensor (a negative one counted from the end, as PyTorch's).
struct AdvancedIndex {
  std::vector<int64_t> dims;  // the indexed dimensions
  std::vector<Reader> ix;     // their index tensors
  Shape b, self;              // B; the indexed tensor's shape
  int64_t at = 0;             // where B's dims sit in the result

  Shape result() const {
    Shape rest;  // the dims not indexed, in order
    for (int64_t d = 0; d < static_cast<int64_t>(self.size()); ++d)
      if (!std::count(dims.begin(), dims.end(), d)) rest.push_back(self[static_cast<size_t>(d)]);
    Shape out(rest.begin(), rest.begin() + at);
    out.insert(out.end(), b.begin(), b.end());
    out.insert(out.end(), rest.begin() + at, rest.end());
    return out;
  }
  // The position in self of the result's position idx.
  std::vector<Expr> position(OpsHandler& h, const std::vector<Expr>& idx) const {
    const int64_t nb = static_cast<int64_t>(b.size()), r = static_cast<int64_t>(self.size());
    const std::vector<Expr> bidx(idx.begin() + at, idx.begin() + at + nb);
    std::vector<Expr> src(static_cast<size_t>(r));
    for (size_t k = 0; k < dims.size(); ++k)
      src[dims[k]] = h.indirect(ix[k].load(h, broadcast_index(ix[k].shape, bidx)), self[static_cast<size_t>(dims[k])], true);
    int64_t o = 0;  // the result's other dims, in order, around B
    for (int64_t d = 0; d < r; ++d) {
      if (std::count(dims.begin(), dims.end(), d)) continue;
      if (o == at) o += nb;
      src[d] = idx[o++];
    }
    return src;
  }
};


// Records the one load a view reader makes; anything else means it is not a plain view.
class ViewCapture : public OpsHandler {
 public:
  std::string buffer;
  Expr index;
  int loads = 0;
  bool other = false;
  V load(const std::string& b, const Expr& i) override {
    buffer = b;
    index = i;
    ++loads;
    return V{0};
  }
  V constant(double, DType) override { other = true; return V{1}; }
  V index_expr(const Expr&, DType) override { other = true; return V{1}; }
  V math(Math, const std::vector<V>&, DType) override { other = true; return V{1}; }
  Expr indirect(V, int64_t, bool) override { other = true; return Expr(0); }
  V reduction(Reduce, DType, V) override { other = true; return V{1}; }
  V arg_reduction(Reduce, DType, V, V) override { other = true; return V{1}; }
  void store(const std::string&, const Expr&, V) override {}
  void store_reduction(const std::string&, const Expr&, V) override {}
};

// A value that is a strided view of a buffer: element i reads buffer[offset + sum(i_d * strides_d)].
struct StridedView {
  std::string buffer;
  int64_t offset = 0;
  std::vector<int64_t> strides;
};
std::optional<StridedView> strided_view(const Reader& r) {
  if (!r.load) return std::nullopt;
  std::vector<Expr> idx;
  std::vector<std::string> names;
  for (size_t d = 0; d < r.shape.size(); ++d) {
    names.push_back("v" + std::to_string(d));
    idx.push_back(Expr::var(names.back(), std::max<int64_t>(r.shape[d], 1)));
  }
  ViewCapture h;
  const V v = r.load(h, idx);
  if (h.loads != 1 || h.other || v.id != 0) return std::nullopt;
  for (const auto& t : h.index.terms())
    if (t.atom.kind != Atom::Kind::var) return std::nullopt;  // a floor division or modulo: not strided
  StridedView s{h.buffer, h.index.constant(), {}};
  for (size_t d = 0; d < r.shape.size(); ++d) s.strides.push_back(r.shape[d] == 1 ? 0 : h.index.coefficient(names[d]));
  return s;
}

class Lowering {
 public:
  explicit Lowering(const Graph& g)
      : g_(g), readers_(g.nodes.size()), outs_(g.nodes.size()), out_bufs_(g.nodes.size()), realized_(g.nodes.size()) {}

  LoopProgram run() {
    // About a loop node and a buffer per graph node: reserved, so that the nodes (large, with their
    // bodies and provenance) are not moved again each time the vectors grow.
    p_.nodes.reserve(g_.nodes.size());
    p_.buffers.reserve(g_.nodes.size());
    const std::vector<int> last = last_reads();
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      if (n.is_placeholder()) {
        p_.buffers.push_back({n.name, n.meta().dtype, n.meta().shape, true, false});
        p_.inputs.push_back(n.name);
        readers_[i] = buffer_reader(n.name, n.meta().shape, n.meta().dtype);
        continue;
      }
      try {
        lower_node(static_cast<int>(i));
      } catch (const std::invalid_argument& e) {
        throw std::runtime_error("lowering node '" + n.name + "' (" + n.op->name + "): " + e.what());
      }
      // The readers of values nothing later reads are released now, while they are at hand, not
      // all together at the end (a third of the stage on a chain of 20,000 was that teardown).
      for (const Arg& a : n.args) release_read(a, static_cast<int>(i), last);
    }
    // name -> index in p_.buffers (a training step has hundreds of outputs; a few are found from the back)
    std::unordered_map<std::string, size_t> buffer_at;
    if (g_.outputs.size() > 8) {
      buffer_at.reserve(p_.buffers.size());
      for (size_t b = 0; b < p_.buffers.size(); ++b) buffer_at.emplace(p_.buffers[b].name, b);
    }
    for (int o : g_.outputs) {
      if (o < 0) {  // None: no buffer
        p_.outputs.emplace_back();
        continue;
      }
      std::string buf = realized_[o];
      // Outputs that are views or inputs get a copy: the caller owns every output buffer.
      if (buf.empty() || g_.nodes[o].is_placeholder() ||
          std::count(p_.outputs.begin(), p_.outputs.end(), buf)) {
        const Reader r = readers_[o];
        buf = add_node(g_.nodes[o], LoopNode::Kind::pointwise, r.shape, {}, Reduce::none, r.dtype,
                       [r](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) { return r.load(h, idx); });
      }
      if (const auto at = buffer_at.find(buf); at != buffer_at.end()) {
        p_.buffers[at->second].is_output = true;
      } else {  // a buffer the copy above just added, or no map
        for (LoopBuffer& b : p_.buffers)
          if (b.name == buf) b.is_output = true;
      }
      p_.outputs.push_back(buf);
    }
    return std::move(p_);
  }

 private:
  // Per graph node, the last node whose lowering reads its reader (INT_MAX: the end, for outputs;
  // -1: none). A library call reads the values under the views of its operands too (a transposed
  // or reshaped matrix is passed as the buffer under it).
  std::vector<int> last_reads() const {
    std::vector<int> last(g_.nodes.size(), -1);
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      if (n.is_placeholder()) continue;
      const bool library = n.op->kind == OpKind::extern_kernel;
      for (const Arg& a : n.args) mark_read(a, static_cast<int>(i), library, last);
    }
    for (int o : g_.outputs)
      if (o >= 0) last[o] = std::numeric_limits<int>::max();
    return last;
  }
  void mark_read(const Arg& a, int by, bool library, std::vector<int>& last) const {
    if (a.is_node()) {
      for (int id = a.node;;) {
        last[id] = std::max(last[id], by);
        const Node& v = g_.nodes[id];
        if (!library || v.is_placeholder() || v.op->kind != OpKind::view || v.args.empty() || !v.args[0].is_node()) break;
        id = v.args[0].node;
      }
    }
    for (const Arg& x : a.list) mark_read(x, by, library, last);
  }
  void release_read(const Arg& a, int by, const std::vector<int>& last) {
    if (a.is_node() && last[a.node] == by) {
      readers_[a.node] = Reader{};
      std::vector<Reader>().swap(outs_[a.node]);
    }
    for (const Arg& x : a.list) release_read(x, by, last);
  }

  // Max pooling as generated code (a maximum over the window's loads), as Inductor lowers it. A
  // window tap that can fall outside the input (padding, ceil_mode's last window) is masked: it
  // loads at an index kept inside the plane and counts as -inf where it lies outside, as PyTorch's
  // kernel skips it. When the indices are used (training saves them for the backward) a second
  // node computes them: the position of the first maximum among the window's inside taps (a later
  // NaN wins, as in PyTorch), h * W + w within the plane.
  bool lower_max_pool(int id) {
    const Node& n = g_.nodes[id];
    bool indices = false;
    for (int u : g_.users(id)) {
      if (g_.nodes[u].op->kind != OpKind::getitem) return false;
      indices = indices || g_.nodes[u].args[1].i != 0;
    }
    const auto k = spatial_pair(n.args[1]);
    auto st = n.args[2].kind == Arg::Kind::list && n.args[2].list.empty() ? k : spatial_pair(n.args[2]);
    const auto pad = spatial_pair(n.args[3]), dil = spatial_pair(n.args[4]);
    const Shape& in = g_.nodes[n.args[0].node].meta().shape;
    const Shape& out = n.outs[0].shape;
    const size_t r = in.size();
    if (k[0] * k[1] > 25) return false;
    const Reader x = readers_[n.args[0].node];
    const DType dt = n.outs[0].dtype;
    const int64_t H = in[r - 2], W = in[r - 1];
    // Taps that may lie outside need a lowest value to stand for them: floating point only.
    bool masked = false;
    for (int d = 0; d < 2; ++d)
      masked = masked || pad[d] != 0 || (out[r - 2 + d] - 1) * st[d] + (k[d] - 1) * dil[d] >= in[r - 2 + d];
    if (masked && !dtype_is_float(dt)) return false;
    // Tap (i, j) of the window at idx: its row and column in the input, unclamped.
    auto tap = [st, pad, dil, r](const std::vector<Expr>& idx, int64_t i, int64_t j) {
      return std::pair<Expr, Expr>{idx[r - 2] * st[0] + (i * dil[0] - pad[0]), idx[r - 1] * st[1] + (j * dil[1] - pad[1])};
    };
    struct Tap {
      V value, inside;
      bool masked = false;  // false: the tap is always inside (no `inside`)
      Expr pos;
    };
    // The tap's load (kept inside the plane) and whether it lies inside.
    auto load_tap = [x, tap, H, W, r](OpsHandler& h, const std::vector<Expr>& idx, int64_t i, int64_t j) {
      const auto [hi, wi] = tap(idx, i, j);
      std::vector<Expr> at = idx;
      Tap t{};
      t.pos = hi * W + wi;
      const bool rows_in = hi.min() >= 0 && hi.max() < H, cols_in = wi.min() >= 0 && wi.max() < W;
      at[r - 2] = rows_in ? hi : (hi + H).mod(H);
      at[r - 1] = cols_in ? wi : (wi + W).mod(W);
      t.value = x.load(h, at);
      auto within = [&h](const Expr& e, int64_t size) {
        const V v = h.index_expr(e, DType::i64);
        return h.math(Math::logical_and, {h.math(Math::ge, {v, h.constant(0, DType::i64)}, DType::b8),
                                          h.math(Math::lt, {v, h.constant(static_cast<double>(size), DType::i64)}, DType::b8)},
                      DType::b8);
      };
      if (!rows_in) t.inside = within(hi, H);
      if (!cols_in) t.inside = rows_in ? within(wi, W) : h.math(Math::logical_and, {t.inside, within(wi, W)}, DType::b8);
      t.masked = !rows_in || !cols_in;
      if (t.masked) t.value = h.math(Math::where, {t.inside, t.value, h.constant(-INFINITY, x.dtype)}, x.dtype);
      return t;
    };
    auto body = [x, k, load_tap](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
      V best{};
      for (int64_t i = 0; i < k[0]; ++i)
        for (int64_t j = 0; j < k[1]; ++j) {
          const V v = load_tap(h, idx, i, j).value;
          best = i == 0 && j == 0 ? v : h.math(Math::maximum, {best, v}, x.dtype);
        }
      return best;
    };
    const std::string buf = add_node(n, LoopNode::Kind::pointwise, out, {}, Reduce::none, dt, body);
    outs_[id] = {buffer_reader(buf, out, dt), Reader{}};
    out_bufs_[id] = {buf};
    if (indices) {
      auto arg = [x, k, load_tap](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
        V best{}, at{}, seen{};  // seen: an inside tap came before (unless `sure`: certainly)
        bool sure = true;
        for (int64_t i = 0; i < k[0]; ++i)
          for (int64_t j = 0; j < k[1]; ++j) {
            const Tap t = load_tap(h, idx, i, j);
            const V pos = h.index_expr(t.pos, DType::i64);
            if (i == 0 && j == 0) {
              best = t.value;
              at = pos;
              seen = t.inside;
              sure = !t.masked;
              continue;
            }
            V take = h.math(Math::where, {h.math(Math::gt, {t.value, best}, DType::b8), h.constant(1, DType::b8),
                                          h.math(Math::ne, {t.value, t.value}, DType::b8)}, DType::b8);
            if (!sure) {  // the first inside tap is taken whatever its value (PyTorch starts from it)
              take = h.math(Math::logical_or, {take, h.math(Math::logical_not, {seen}, DType::b8)}, DType::b8);
              if (t.masked) seen = h.math(Math::logical_or, {seen, t.inside}, DType::b8);
              else sure = true;
            }
            if (t.masked) take = h.math(Math::logical_and, {take, t.inside}, DType::b8);
            best = h.math(Math::where, {take, t.value, best}, x.dtype);
            at = h.math(Math::where, {take, pos, at}, DType::i64);
          }
        return at;
      };
      const std::string ibuf = add_node(n, LoopNode::Kind::pointwise, out, {}, Reduce::none, DType::i64, arg);
      outs_[id][1] = buffer_reader(ibuf, out, DType::i64);
      out_bufs_[id].push_back(ibuf);
    }
    readers_[id] = outs_[id][0];
    realized_[id] = buf;
    return true;
  }

  // Max-pool backward as generated code when the windows tile the input exactly (stride = kernel,
  // no padding or dilation): each input position lies in one window, and takes that window's
  // gradient if it was the window's maximum (its index was saved), else 0. Inductor lowers it the
  // same way; other windows: lower_max_pool_backward_overlapping.
  bool lower_max_pool_backward(int id) {
    const Node& n = g_.nodes[id];
    const auto k = spatial_pair(n.args[2]);
    auto st = n.args[3].kind == Arg::Kind::list && n.args[3].list.empty() ? k : spatial_pair(n.args[3]);
    const auto pad = spatial_pair(n.args[4]), dil = spatial_pair(n.args[5]);
    const Shape& in = g_.nodes[n.args[1].node].meta().shape;
    const Shape& gout = g_.nodes[n.args[0].node].meta().shape;
    const size_t r = in.size();
    bool tiles = true;
    for (int d = 0; d < 2; ++d)
      tiles = tiles && st[d] == k[d] && pad[d] == 0 && dil[d] == 1 && gout[r - 2 + d] * k[d] == in[r - 2 + d];
    if (!tiles) return lower_max_pool_backward_overlapping(id);
    const Reader g = readers_[n.args[0].node], ind = readers_[n.args[7].node];
    const DType dt = n.outs[0].dtype;
    const int64_t W = in[r - 1];
    auto body = [g, ind, k, W, r, dt](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
      std::vector<Expr> o = idx;
      o[r - 2] = idx[r - 2].floordiv(k[0]);
      o[r - 1] = idx[r - 1].floordiv(k[1]);
      const V hit = h.math(Math::eq, {ind.load(h, o), h.index_expr(idx[r - 2] * W + idx[r - 1], DType::i64)}, DType::b8);
      return h.math(Math::where, {hit, g.load(h, o), h.constant(0, dt)}, dt);
    };
    const std::string buf = add_node(n, LoopNode::Kind::pointwise, in, {}, Reduce::none, dt, body);
    readers_[id] = buffer_reader(buf, in, dt);
    realized_[id] = buf;
    return true;
  }

  // Max-pool backward where windows overlap or are padded (ResNet's 3x3 stride-2 stem), as
  // generated code over the input, as Inductor lowers it: each input position gathers, from every
  // window that can hold it, the window's gradient if its saved index is this position, visiting
  // the windows in the output's order, as PyTorch's kernel adds into the input gradient. In a
  // dimension without dilation the windows that hold x are the ceil(k / st) from the first that
  // reaches it, (x + pad - k) // st + 1, to the last that starts at or before it, (x + pad) // st
  // (4 for a 3x3 window at stride 2); with dilation, one a tap t where x + pad - t * dil divides
  // by the stride.
  bool lower_max_pool_backward_overlapping(int id) {
    const Node& n = g_.nodes[id];
    const auto k = spatial_pair(n.args[2]);
    auto st = n.args[3].kind == Arg::Kind::list && n.args[3].list.empty() ? k : spatial_pair(n.args[3]);
    const auto pad = spatial_pair(n.args[4]), dil = spatial_pair(n.args[5]);
    const Shape& in = g_.nodes[n.args[1].node].meta().shape;
    const Shape& gout = g_.nodes[n.args[0].node].meta().shape;
    const size_t r = in.size();
    if (k[0] * k[1] > 25 || !dtype_is_float(n.outs[0].dtype)) return false;
    const Reader g = readers_[n.args[0].node], ind = readers_[n.args[7].node];
    const DType dt = n.outs[0].dtype;
    const int64_t W = in[r - 1];
    const int64_t O[2] = {gout[r - 2], gout[r - 1]};
    int64_t count[2];
    for (int d = 0; d < 2; ++d) count[d] = dil[d] == 1 ? (k[d] + st[d] - 1) / st[d] : k[d];
    auto body = [g, ind, k, st, pad, dil, O, count, W, r, dt](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
      auto i64 = [&h](int64_t c) { return h.constant(static_cast<double>(c), DType::i64); };
      auto both = [&h](V a, V b) { return h.math(Math::logical_and, {a, b}, DType::b8); };
      // Candidate c of dimension d (in the output's order): its window row q, whether that window
      // holds x, and q kept inside the output where it does not.
      auto candidate = [&](int d, int64_t c, Expr& at) {
        const Expr x = idx[r - 2 + d];
        Expr q;
        V extra{};
        int64_t lift;  // a multiple of st that keeps the division's and remainder's operand >= 0
        if (dil[d] == 1) {
          lift = (k[d] / st[d] + 1) * st[d];
          q = (x + (pad[d] - k[d] + lift)).floordiv(st[d]) - (lift / st[d] - 1 - c);
          extra = h.math(Math::le, {h.index_expr(q, DType::i64), h.index_expr((x + pad[d]).floordiv(st[d]), DType::i64)}, DType::b8);
        } else {
          const int64_t t = k[d] - 1 - c;  // later taps are earlier windows
          lift = (t * dil[d] / st[d] + 1) * st[d];
          const Expr num = x + (pad[d] - t * dil[d] + lift);
          q = num.floordiv(st[d]) - lift / st[d];
          if (st[d] > 1) extra = h.math(Math::eq, {h.index_expr(num.mod(st[d]), DType::i64), i64(0)}, DType::b8);
        }
        const V qv = h.index_expr(q, DType::i64);
        V ok = both(h.math(Math::ge, {qv, i64(0)}, DType::b8), h.math(Math::lt, {qv, i64(O[d])}, DType::b8));
        if (dil[d] == 1 || st[d] > 1) ok = both(ok, extra);
        at = (q + O[d] * (lift / st[d] / O[d] + 2)).mod(O[d]);
        return ok;
      };
      V sum = h.constant(0, dt);
      const V here = h.index_expr(idx[r - 2] * W + idx[r - 1], DType::i64);
      for (int64_t a = 0; a < count[0]; ++a)
        for (int64_t b = 0; b < count[1]; ++b) {
          std::vector<Expr> o = idx;
          V hit = both(candidate(0, a, o[r - 2]), candidate(1, b, o[r - 1]));
          hit = both(hit, h.math(Math::eq, {ind.load(h, o), here}, DType::b8));
          sum = h.math(Math::add, {sum, h.math(Math::where, {hit, g.load(h, o), h.constant(0, dt)}, dt)}, dt);
        }
      return sum;
    };
    const std::string buf = add_node(n, LoopNode::Kind::pointwise, in, {}, Reduce::none, dt, body);
    readers_[id] = buffer_reader(buf, in, dt);
    realized_[id] = buf;
    return true;
  }

  // Concatenation of a few inputs as generated code (Inductor's pointwise cat): each position
  // takes the input whose range along the dimension holds it. Every input is read at an index
  // kept inside its bounds (a modulo), and the one that holds the position is selected, so the
  // views feeding the cat (transposes, reshapes) fuse into it instead of being copied first.
  bool lower_cat(int id) {
    const Node& n = g_.nodes[id];
    const Shape& out = n.outs[0].shape;
    const int64_t r = static_cast<int64_t>(out.size());
    int64_t d = n.args[1].i;
    if (d < 0) d += r;
    std::vector<Reader> ins;
    std::vector<int64_t> offs;
    int64_t at = 0;
    for (const Arg& a : n.args[0].list) {
      const Reader& in = readers_[a.node];
      if (numel_of(in.shape) == 0) continue;
      if (static_cast<int64_t>(in.shape.size()) != r || in.dtype != n.outs[0].dtype || !in.load) return false;
      ins.push_back(in);
      offs.push_back(at);
      at += in.shape[d];
    }
    if (ins.empty() || ins.size() > 8) return false;  // Inductor's max_pointwise_cat_inputs
    const DType dt = n.outs[0].dtype;
    auto body = [ins, offs, d, out](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
      V v{};
      for (size_t k = ins.size(); k-- > 0;) {
        const int64_t size = ins[k].shape[d];
        // (i - off) mod size, kept non-negative: i + size * ceil(off / size) - off.
        const int64_t lift = (offs[k] + size - 1) / size * size - offs[k];
        std::vector<Expr> at = idx;
        at[d] = (idx[d] + lift).mod(size);
        if (ins.size() == 1) return ins[k].load(h, at);
        const V mine = ins[k].load(h, at);
        if (k == ins.size() - 1) {
          v = mine;
          continue;
        }
        const V in_range = h.math(Math::lt, {h.index_expr(idx[d], DType::i64), h.constant(static_cast<double>(offs[k + 1]), DType::i64)}, DType::b8);
        v = h.math(Math::where, {in_range, mine, v}, ins[k].dtype);
      }
      return v;
    };
    const std::string buf = add_node(n, LoopNode::Kind::pointwise, out, {}, Reduce::none, dt, body);
    readers_[id] = buffer_reader(buf, out, dt);
    realized_[id] = buf;
    return true;
  }

  // prod, argmax/argmin and max.dim/min.dim as generated reductions, as Inductor lowers them:
  // prod a product reduction (Reduce::prod); argmax an arg reduction (Reduce::argmax: the index
  // of the first maximum, a NaN counting as the maximum, its node keeping the value beside the
  // index); max.dim the pair amax and argmax over the same loads (Inductor's reduce_max), which
  // fusion puts in one loop. Values are compared, and multiplied, in their result's compute type:
  // integers and bools in int64 (prod of them gives int64, as PyTorch's), a half in float32.
  struct ReductionLoops {
    Shape ranges, rranges;  // kept dims (size 1 where keepdim), reduced dims in order
    LoopBody body;          // the element at (idx, ridx), converted to `to`
  };
  static ReductionLoops reduction_loops(const Reader& in, const std::vector<int64_t>& dims, bool keep, DType to) {
    ReductionLoops l;
    for (int64_t d = 0; d < static_cast<int64_t>(in.shape.size()); ++d) {
      const bool red = std::count(dims.begin(), dims.end(), d) > 0;
      if (red) l.rranges.push_back(in.shape[d]);
      if (!red) l.ranges.push_back(in.shape[d]);
      else if (keep) l.ranges.push_back(1);
    }
    const DType from = in.dtype;
    l.body = [in, dims, keep, from, to](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>& ridx) {
      std::vector<Expr> full;
      size_t j = 0, k = 0;
      for (int64_t d = 0; d < static_cast<int64_t>(in.shape.size()); ++d) {
        if (std::count(dims.begin(), dims.end(), d)) {
          full.push_back(ridx[k++]);
          if (keep) ++j;
        } else {
          full.push_back(idx[j++]);
        }
      }
      const V v = in.load(h, full);
      return compute_dtype(from) == to ? v : h.math(Math::identity, {v}, to);
    };
    return l;
  }
  // A reduction node of `r` (sum, max, min, prod, argmax, argmin) over `l`, in type `acc` (an arg
  // reduction's values), giving `out`; over one element, a pointwise node (the value, or index 0).
  std::string add_reduction(const Node& n, const ReductionLoops& l, Reduce r, DType acc, DType out) {
    if (numel_of(l.rranges) == 0) {  // over no element: the start value (prod's 1)
      const double v = reduce_init(r);
      return add_node(n, LoopNode::Kind::pointwise, l.ranges, {}, Reduce::none, out,
                      [v, out](OpsHandler& h, const std::vector<Expr>&, const std::vector<Expr>&) { return h.constant(v, out); });
    }
    if (numel_of(l.rranges) == 1) {
      const std::vector<Expr> zero(l.rranges.size(), Expr(0));
      const LoopBody body = l.body;
      const bool arg = reduce_is_arg(r);
      return add_node(n, LoopNode::Kind::pointwise, l.ranges, {}, Reduce::none, out,
                      [body, zero, arg, acc, out](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
                        if (arg) return h.constant(0, out);
                        const V v = body(h, idx, zero);
                        return acc == out ? v : h.math(Math::identity, {v}, out);
                      });
    }
    // A half result is the node's own type (accumulated in float32, rounded where stored).
    const DType dt = reduce_is_arg(r) ? DType::i64 : compute_dtype(out) == acc ? out : acc;
    std::string buf = add_node(n, LoopNode::Kind::reduction, l.ranges, l.rranges, r, dt, l.body);
    if (reduce_is_arg(r)) p_.nodes.back().arg_dtype = acc;
    if (dt != out) {  // int64 max of an int32 or bool input: back to its type
      const Reader s = buffer_reader(buf, l.ranges, acc);
      buf = add_node(n, LoopNode::Kind::pointwise, l.ranges, {}, Reduce::none, out,
                     [s, out](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
                       return h.math(Math::identity, {s.load(h, idx)}, out);
                     });
    }
    return buf;
  }
  // The dims an argmax-family or prod node reduces: its `dim` (wrapped), else every one.
  std::vector<int64_t> reduced_dims(const Node& n, int64_t rank) const {
    const OpDef& op = *n.op;
    std::vector<int64_t> dims;
    if (rank == 0) return dims;  // a 0-d value reduces to itself
    if (op.params.size() > 1 && op.params[1].name == "dim" && !n.args[1].is_none()) return {wrap_dim(op, n.args[1].i, rank)};
    for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
    return dims;
  }
  static DType compared_type(DType t) { return dtype_is_float(t) ? compute_dtype(t) : DType::i64; }

  bool lower_prod(int id) {
    const Node& n = g_.nodes[id];
    const Reader in = readers_[n.args[0].node];
    const DType out = n.outs[0].dtype;
    const ReductionLoops l = reduction_loops(in, reduced_dims(n, static_cast<int64_t>(in.shape.size())), reduction_keepdim(*n.op, n.args),
                                             compute_dtype(out));
    const std::string buf = add_reduction(n, l, Reduce::prod, compute_dtype(out), out);
    readers_[id] = buffer_reader(buf, n.outs[0].shape, out);
    realized_[id] = buf;
    return true;
  }

  // argmax/argmin: the index; max.dim/min.dim: the values (amax, amin), then the indices.
  bool lower_arg_reduction(int id) {
    const Node& n = g_.nodes[id];
    const Reader in = readers_[n.args[0].node];
    const bool max = n.op == &op::argmax() || n.op == &op::max_dim();
    const bool values = n.op == &op::max_dim() || n.op == &op::min_dim();
    const DType t = compared_type(in.dtype);
    const ReductionLoops l = reduction_loops(in, reduced_dims(n, static_cast<int64_t>(in.shape.size())), reduction_keepdim(*n.op, n.args), t);
    std::vector<Reader> outs;
    std::vector<std::string> bufs;
    if (values) {
      const DType vt = n.outs[0].dtype;
      bufs.push_back(add_reduction(n, l, max ? Reduce::max : Reduce::min, t, vt));
      outs.push_back(buffer_reader(bufs.back(), n.outs[0].shape, vt));
    }
    bufs.push_back(add_reduction(n, l, max ? Reduce::argmax : Reduce::argmin, t, DType::i64));
    outs.push_back(buffer_reader(bufs.back(), n.outs.back().shape, DType::i64));
    readers_[id] = outs[0];
    realized_[id] = bufs[0];
    if (values) {
      outs_[id] = outs;
      out_bufs_[id] = bufs;
    }
    return true;
  }

  // Gathers as generated code through indirect indices (Inductor's ops.indirect_indexing): each
  // output position loads its index from the index tensor, checks it (an index out of range is an
  // error naming the node, the value and the size, never a read outside the buffer), and loads
  // the source there. The index tensor's producer and the source's fuse or inline as any load's.
  // gather(self, dim, index): out[i] = self[i with dim d replaced by index[i]].
  bool lower_gather(int id) {
    const Node& n = g_.nodes[id];
    const Reader self = readers_[n.args[0].node], index = readers_[n.args[2].node];
    if (!self.load || !index.load || dtype_is_float(index.dtype)) return false;
    const int64_t r = static_cast<int64_t>(self.shape.size());
    if (r == 0 || static_cast<int64_t>(index.shape.size()) != r) return false;
    const int64_t d = n.args[1].i < 0 ? n.args[1].i + r : n.args[1].i;
    const int64_t size = self.shape[d];
    if (size == 0) return false;
    auto body = [self, index, d, size](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
      std::vector<Expr> at = idx;
      at[d] = h.indirect(index.load(h, idx), size, false);
      return self.load(h, at);
    };
    const std::string buf = add_node(n, LoopNode::Kind::pointwise, n.outs[0].shape, {}, Reduce::none, n.outs[0].dtype, body);
    readers_[id] = buffer_reader(buf, n.outs[0].shape, n.outs[0].dtype);
    realized_[id] = buf;
    return true;
  }

  // The advanced indexing of self by an index list (integer tensors; None: a whole dimension), or
  // nullopt where it is not generated code (boolean or uint8 masks: a data-dependent shape).
  std::optional<AdvancedIndex> advanced_index(const Reader& self, const std::vector<Arg>& list) const {
    const int64_t r = static_cast<int64_t>(self.shape.size());
    if (r == 0 || list.empty() || static_cast<int64_t>(list.size()) > r) return std::nullopt;
    AdvancedIndex a;
    a.self = self.shape;
    for (size_t k = 0; k < list.size(); ++k) {
      if (!list[k].is_node()) continue;
      const Reader& i = readers_[list[k].node];
      if (!i.load || dtype_is_float(i.dtype) || i.dtype == DType::b8 || i.dtype == DType::u8 || self.shape[k] == 0) return std::nullopt;
      a.b = a.ix.empty() ? i.shape : broadcast_shapes(a.b, i.shape);
      a.dims.push_back(static_cast<int64_t>(k));
      a.ix.push_back(i);
    }
    if (a.dims.empty()) return std::nullopt;
    const bool adjacent = a.dims.back() - a.dims.front() + 1 == static_cast<int64_t>(a.dims.size());
    a.at = adjacent ? a.dims.front() : 0;
    return a;
  }

  // index.Tensor(self, indices): advanced indexing (AdvancedIndex): each position of the result
  // reads self where its indices point.
  bool lower_index(int id) {
    const Node& n = g_.nodes[id];
    const Reader self = readers_[n.args[0].node];
    if (!self.load) return false;
    const auto a = advanced_index(self, n.args[1].list);
    if (!a) return false;
    const Shape& out = n.outs[0].shape;
    if (a->result() != out) return false;
    auto body = [self, a = *a](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) { return self.load(h, a.position(h, idx)); };
    const std::string buf = add_node(n, LoopNode::Kind::pointwise, out, {}, Reduce::none, n.outs[0].dtype, body);
    readers_[id] = buffer_reader(buf, out, n.outs[0].dtype);
    realized_[id] = buf;
    return true;
  }

  // embedding(weight [V, D], indices [...]): out[..., j] = weight[indices[...], j].
  bool lower_embedding(int id) {
    const Node& n = g_.nodes[id];
    const Reader weight = readers_[n.args[0].node], indices = readers_[n.args[1].node];
    if (!weight.load || !indices.load || weight.shape.size() != 2 || dtype_is_float(indices.dtype) || weight.shape[0] == 0) return false;
    const size_t r = indices.shape.size();
    const int64_t rows = weight.shape[0];
    auto body = [weight, indices, r, rows](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
      const std::vector<Expr> at(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(r));
      return weight.load(h, {h.indirect(indices.load(h, at), rows, false), idx[r]});
    };
    const std::string buf = add_node(n, LoopNode::Kind::pointwise, n.outs[0].shape, {}, Reduce::none, n.outs[0].dtype, body);
    readers_[id] = buffer_reader(buf, n.outs[0].shape, n.outs[0].dtype);
    realized_[id] = buf;
    return true;
  }

  // The scatter family and index_put as generated code, as Inductor lowers them (lowering.py:
  // scatter_, scatter_add, scatter_reduce_ with reduce "sum", index_put_impl_): the result's
  // buffer is filled with a copy of self (a pointwise node), then a scatter node (Kind::scatter)
  // iterating the index (index_put: the indexing result's shape) stores each element through the
  // indices it loads into that same buffer, overwriting it or adding to it (atomically: duplicate
  // indices all count). An index out of range records its fault (naming the node, the value and
  // the size) and skips its store. Adds of int64, bool and the halves stay library calls: Inductor
  // falls back for int64 and bool (needs_fallback_due_to_atomic_add_limitations, and
  // use_scatter_fallback for a sum into int64 or bool), and for bfloat16 below sm_90; a half's
  // add is no atomic our generated C++ has. (Inductor's C++ backend also leaves scatter_reduce
  // "sum" to ATen by default on several threads, cpp.fallback_scatter_reduce_sum, for the cost of
  // its atomic adds; here it is generated code on both devices, as with that option off.)
  static bool adds_atomically(DType t) { return t == DType::f32 || t == DType::f64 || t == DType::i32; }
  // The copy of self that a scatter stores into (its own buffer, whatever self's reader is).
  std::string scatter_target(const Node& n, const Reader& self) {
    return add_node(n, LoopNode::Kind::pointwise, self.shape, {}, Reduce::none, n.outs[0].dtype,
                    [self](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) { return self.load(h, idx); });
  }
  // A scatter node: `body` stores into `buf` (OpsHandler::scatter_store) at each position of `ranges`.
  void add_scatter(const Node& gn, const std::string& buf, const Shape& ranges, DType dtype, LoopBody body) {
    if (numel_of(ranges) == 0) return;  // nothing stored: the copy is the result
    LoopNode n;
    n.name = "op" + std::to_string(p_.nodes.size());
    n.buffer = buf;
    n.kind = LoopNode::Kind::scatter;
    n.ranges = ranges;
    n.dtype = dtype;
    n.inner = std::move(body);
    n.graph_node = gn.name;
    n.origins = gn.origins;
    n.phase = gn.phase;
    p_.nodes.push_back(std::move(n));
  }

  // scatter(self, dim, index, src | value), scatter_add, scatter_reduce(..., "sum", include_self):
  // out[i with dim d replaced by index[i]] = src[i] (or value), or += it. Without include_self the
  // positions the index hits are first set to 0 (a scatter of zeros, as Inductor does).
  bool lower_scatter(int id) {
    const Node& n = g_.nodes[id];
    const bool reduce = n.op == &op::scatter_reduce_two();
    if (reduce && (n.args.size() < 5 || n.args[4].kind != Arg::Kind::string || n.args[4].s != "sum")) return false;
    const bool add = reduce || n.op == &op::scatter_add();
    const bool include_self = !reduce || n.args.size() < 6 || n.args[5].b;
    const bool value = !n.args[3].is_node();
    const Reader self = readers_[n.args[0].node], index = readers_[n.args[2].node];
    const Reader src = value ? Reader{} : readers_[n.args[3].node];
    const DType dt = n.outs[0].dtype;
    if (!self.load || !index.load || (!value && !src.load) || dtype_is_float(index.dtype) || (add && !adds_atomically(dt))) return false;
    const int64_t r = static_cast<int64_t>(self.shape.size());
    if (r == 0 || numel_of(self.shape) == 0 || static_cast<int64_t>(index.shape.size()) != r ||
        (!value && static_cast<int64_t>(src.shape.size()) != r))
      return false;
    const int64_t d = n.args[1].i < 0 ? n.args[1].i + r : n.args[1].i;
    const int64_t size = self.shape[d];
    const double v = value ? n.args[3].number() : 0.0;
    const Shape strides = contiguous_strides(self.shape);
    const std::string buf = scatter_target(n, self);
    auto scatter = [=](bool zeros, StoreMode mode) {
      return [=](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
        std::vector<Expr> at = idx;
        at[d] = h.indirect(index.load(h, idx), size, false);
        const V x = zeros ? h.constant(0, dt) : value ? h.constant(v, dt) : src.load(h, idx);
        h.scatter_store(buf, linear_index(at, strides), x, mode, dt);
        return V{};
      };
    };
    if (!include_self) add_scatter(n, buf, index.shape, dt, scatter(true, StoreMode::set));
    add_scatter(n, buf, index.shape, dt, scatter(false, add ? StoreMode::atomic_add : StoreMode::set));
    readers_[id] = buffer_reader(buf, self.shape, dt);
    realized_[id] = buf;
    return true;
  }

  // index_put(self, indices, values, accumulate): the positions index.Tensor reads (lower_index)
  // take the values, broadcast to the indexing result's shape, or add them (accumulate). A
  // negative index counts from the end. Boolean masks stay a library call, as in lower_index.
  bool lower_index_put(int id) {
    const Node& n = g_.nodes[id];
    const Reader self = readers_[n.args[0].node], values = readers_[n.args[2].node];
    const bool accumulate = n.args.size() > 3 && n.args[3].b;
    const DType dt = n.outs[0].dtype;
    if (!self.load || !values.load || (accumulate && !adds_atomically(dt))) return false;
    const auto a = advanced_index(self, n.args[1].list);
    if (!a) return false;
    const Shape ranges = a->result();
    if (values.shape.size() > ranges.size()) return false;
    const Shape strides = contiguous_strides(self.shape);
    const std::string buf = scatter_target(n, self);
    const StoreMode mode = accumulate ? StoreMode::atomic_add : StoreMode::set;
    add_scatter(n, buf, ranges, dt, [=, a = *a](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
      const std::vector<Expr> dst = a.position(h, idx);
      h.scatter_store(buf, linear_index(dst, strides), values.load(h, broadcast_index(values.shape, idx)), mode, dt);
      return V{};
    });
    readers_[id] = buffer_reader(buf, self.shape, dt);
    realized_[id] = buf;
    return true;
  }

  // arange(start, end, step) as generated code (Inductor's ops.index_expr): element i is
  // start + step * i, in int64 for an integer range and in double for a float one (then rounded
  // to the range's type, as ATen's CPU kernel computes it in its accumulate type).
  bool lower_arange(int id) {
    const Node& n = g_.nodes[id];
    if (n.args.size() < 3 || !n.args[0].is_number() || !n.args[2].is_number() || n.outs[0].shape.size() != 1) return false;
    const DType out = n.outs[0].dtype;
    const bool real = dtype_is_float(out);
    const DType acc = real ? DType::f64 : DType::i64;
    const double start = real ? n.args[0].number() : std::trunc(n.args[0].number());
    const double step = real ? n.args[2].number() : std::trunc(n.args[2].number());
    auto body = [out, acc, start, step](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
      V v = h.index_expr(idx[0], DType::i64);
      if (acc != DType::i64) v = h.math(Math::identity, {v}, acc);
      if (step != 1) v = h.math(Math::mul, {v, h.constant(step, acc)}, acc);
      if (start != 0) v = h.math(Math::add, {v, h.constant(start, acc)}, acc);
      return acc == out ? v : h.math(Math::identity, {v}, out);
    };
    const std::string buf = add_node(n, LoopNode::Kind::pointwise, n.outs[0].shape, {}, Reduce::none, out, body);
    readers_[id] = buffer_reader(buf, n.outs[0].shape, out);
    realized_[id] = buf;
    return true;
  }

  // rand and randn as generated code (Inductor's ops.rand / ops.randn over a seed): each element
  // draws from Philox with the reference kernel's seed and offset (ops/philox.h) and its own
  // row-major index, so the values equal the reference's bit for bit and the draw fuses into
  // what reads it (dropout's mask into its multiply).
  bool lower_random(int id) {
    const Node& n = g_.nodes[id];
    const Shape shape = n.outs[0].shape;
    const DType out = n.outs[0].dtype;
    const bool normal = n.op == &op::randn();
    const double offset = static_cast<double>(philox::stream_offset(normal ? "randn" : "rand", shape));
    const Math draw = normal ? Math::randn : out == DType::f64 ? Math::rand_f64 : Math::rand;
    const Shape strides = contiguous_strides(shape);
    auto body = [strides, out, offset, draw](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
      const V index = h.index_expr(linear_index(idx, strides), DType::i64);
      const V seed = h.constant(static_cast<double>(philox::kSeed), DType::i64);
      const V bits = h.math(Math::philox, {seed, h.constant(offset, DType::i64), index}, DType::i64);
      return h.math(draw, {bits}, out);
    };
    const std::string buf = add_node(n, LoopNode::Kind::pointwise, shape, {}, Reduce::none, out, body);
    readers_[id] = buffer_reader(buf, shape, out);
    realized_[id] = buf;
    return true;
  }

  // The node a permutation view swaps the last two dimensions of (identity elsewhere), or -1.
  // A matrix operand seen through permutations that swap its last two dims or change nothing:
  // the value underneath, and whether an odd number of swaps lies between (t(t(w)) is w).
  std::pair<int, bool> matrix_source(int id) const {
    bool t = false;
    while (realized_[id].empty()) {
      const Node& n = g_.nodes[id];
      if (n.is_placeholder() || n.op->kind != OpKind::view) break;
      // A reshape of a value stored whole is the same memory under another shape (a transpose
      // seen above it applies to the reshaped matrix); not a reshape of a view, which would move data.
      if (op::is_reshape_view(n.op)) {
        const int in = n.args[0].node;
        if (realized_[in].empty() && !g_.nodes[in].is_placeholder()) break;
        id = in;
        continue;
      }
      if (!op::is_permute_view(n.op)) break;
      const auto p = n.args[1].ints();
      const int64_t r = static_cast<int64_t>(p.size());
      if (r < 2) break;
      bool identity = true, swap = true;
      for (int64_t i = 0; i < r; ++i) {
        const int64_t d = p[i] < 0 ? p[i] + r : p[i];
        identity = identity && d == i;
        swap = swap && d == (i == r - 2 ? r - 1 : i == r - 1 ? r - 2 : i);
      }
      if (!identity && !swap) break;
      t = t != swap;
      id = n.args[0].node;
    }
    return {id, t};
  }

  // A whole, contiguous buffer holding a graph value: extern kernels take their inputs so.
  std::string realize(int id) {
    if (!realized_[id].empty()) return realized_[id];
    if (g_.nodes[id].is_placeholder()) return g_.nodes[id].name;
    const Reader r = readers_[id];
    // A view that reads a whole buffer in its own order (a flatten, a transpose undone) is that buffer.
    if (auto v = strided_view(r); v && v->offset == 0 && numel_of(p_.buffer(v->buffer).shape) == numel_of(r.shape)) {
      const Shape cs = contiguous_strides(r.shape);
      bool same = true;
      for (size_t d = 0; d < cs.size(); ++d) same = same && (r.shape[d] == 1 || v->strides[d] == cs[d]);
      if (same) {
        realized_[id] = v->buffer;
        return v->buffer;
      }
    }
    const std::string buf = add_node(g_.nodes[id], LoopNode::Kind::pointwise, r.shape, {}, Reduce::none, r.dtype,
                                     [r](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) { return r.load(h, idx); });
    realized_[id] = buf;
    return buf;
  }

  void lower_extern(int id) {
    const Node& n = g_.nodes[id];
    if (std::all_of(n.outs.begin(), n.outs.end(), [](const TensorMeta& m) { return numel_of(m.shape) == 0; })) {
      for (const TensorMeta& m : n.outs) {  // empty results: their buffers, no call (nothing to compute)
        const std::string buf = "buf" + std::to_string(p_.nodes.size()) + "_empty" + std::to_string(p_.buffers.size());
        p_.buffers.push_back({buf, m.dtype, m.shape, false, false});
        outs_[id].push_back(buffer_reader(buf, m.shape, m.dtype));
        out_bufs_[id].push_back(buf);
      }
      readers_[id] = outs_[id].at(0);
      realized_[id] = out_bufs_[id][0];
      return;
    }
    LoopNode ln;
    ln.kind = LoopNode::Kind::extern_kernel;
    ln.ext.op = n.op;
    ln.ext.args = n.args;
    // Matrix operands that are transposes of a buffer go to BLAS as transposed operands instead of
    // being copied (a weight's t() before addmm, k^T in attention).
    std::vector<size_t> matrices, strided;
    if (n.op == &op::mm() || n.op == &op::bmm()) matrices = {0, 1};
    if (n.op == &op::addmm()) matrices = {1, 2};
    if (is_attention(n.op)) strided = {0, 1, 2};                  // q, k, v
    if (is_attention_backward(n.op)) strided = {0, 1, 2, 3, 5};  // grad_out, q, k, v, out
    auto bind = [&](Arg& a, auto& self, bool matrix, bool may_stride) -> void {
      if (a.is_node()) {
        int src = a.node;
        bool t = false;
        if (matrix) std::tie(src, t) = matrix_source(src);
        Shape seen = g_.nodes[a.node].meta().shape;
        if (t) std::swap(seen[seen.size() - 1], seen[seen.size() - 2]);
        std::optional<StridedView> view;
        if (may_stride && realized_[src].empty() && !g_.nodes[src].is_placeholder()) view = strided_view(readers_[src]);
        ln.ext.inputs.push_back(view ? view->buffer : realize(src));  // may add copy nodes: name this one after
        ln.ext.transposed.push_back(t);
        ln.ext.shapes.push_back(seen);
        ln.ext.strides.push_back(view ? view->strides : std::vector<int64_t>{});
        ln.ext.offsets.push_back(view ? view->offset : 0);
        a.node = static_cast<int>(ln.ext.inputs.size()) - 1;
      }
      for (Arg& x : a.list) self(x, self, false, false);
    };
    for (size_t i = 0; i < ln.ext.args.size(); ++i)
      bind(ln.ext.args[i], bind, std::count(matrices.begin(), matrices.end(), i) > 0, std::count(strided.begin(), strided.end(), i) > 0);
    const int k = static_cast<int>(p_.nodes.size());
    ln.name = "op" + std::to_string(k);
    for (size_t o = 0; o < n.outs.size(); ++o) ln.ext.output_metas.push_back(n.outs[o]);
    const bool heads_inner = attention_output_heads_inner(ln.ext);
    for (size_t o = 0; o < n.outs.size(); ++o) {
      const std::string buf = "buf" + std::to_string(k) + (o ? "_" + std::to_string(o) : "");
      ln.ext.outputs.push_back(buf);
      if (o == 0 && heads_inner) {  // stored [..., L, H, D]: read as [..., H, L, D] through a view
        const Shape logical = n.outs[0].shape;
        const size_t r = logical.size();
        Shape stored = logical;
        std::swap(stored[r - 3], stored[r - 2]);
        p_.buffers.push_back({buf, n.outs[o].dtype, stored, false, false});
        const Shape st = contiguous_strides(stored);
        outs_[id].push_back({[buf, st, r](OpsHandler& h, const std::vector<Expr>& idx) {
                               std::vector<Expr> at = idx;
                               std::swap(at[r - 3], at[r - 2]);
                               return h.load(buf, linear_index(at, st));
                             },
                             logical, n.outs[0].dtype});
        out_bufs_[id].push_back("");  // no buffer holds the value in its own order
        continue;
      }
      p_.buffers.push_back({buf, n.outs[o].dtype, n.outs[o].shape, false, false});
      outs_[id].push_back(buffer_reader(buf, n.outs[o].shape, n.outs[o].dtype));
      out_bufs_[id].push_back(buf);
    }
    ln.buffer = ln.ext.outputs[0];
    ln.ranges = n.outs[0].shape;
    ln.dtype = n.outs[0].dtype;
    ln.graph_node = n.name;
    ln.origins = n.origins;
    ln.phase = n.phase;
    p_.nodes.push_back(std::move(ln));
    readers_[id] = outs_[id][0];
    if (!heads_inner) realized_[id] = p_.nodes.back().buffer;
  }

  std::string add_node(const Node& gn, LoopNode::Kind kind, const Shape& ranges, const Shape& rranges, Reduce r,
                       DType dtype, LoopBody body) {
    const int k = static_cast<int>(p_.nodes.size());
    if (numel_of(ranges) == 0) {  // an empty value: its buffer, with no loop writing it (nothing to compute)
      const std::string buf = "buf" + std::to_string(k) + "_empty" + std::to_string(p_.buffers.size());
      p_.buffers.push_back({buf, dtype, ranges, false, false});
      return buf;
    }
    LoopNode n;
    n.name = "op" + std::to_string(k);
    n.buffer = "buf" + std::to_string(k);
    n.kind = kind;
    n.ranges = ranges;
    n.reduction_ranges = rranges;
    n.reduce = r;
    n.dtype = dtype;
    n.inner = std::move(body);
    n.graph_node = gn.name;
    n.origins = gn.origins;
    n.phase = gn.phase;
    p_.buffers.push_back({n.buffer, dtype, ranges, false, false});
    p_.nodes.push_back(std::move(n));
    return p_.nodes.back().buffer;
  }

  Reader operand(const Arg& a, DType compute) {
    if (a.is_node()) return readers_[a.node];
    const double v = a.number();
    return {[v, compute](OpsHandler& h, const std::vector<Expr>&) { return h.constant(v, compute); }, {}, compute};
  }

  // Whether the node reads or makes a complex value (the FFTs' results): such nodes run as
  // library calls or their reference kernel on the host, never in generated code (the code
  // generators have no complex type), as Inductor leaves complex tensors to fallback kernels.
  bool touches_complex(const Node& n) const {
    for (const TensorMeta& m : n.outs)
      if (dtype_is_complex(m.dtype)) return true;
    for (const Arg& a : n.args) {
      if (a.is_node() && dtype_is_complex(g_.nodes[a.node].meta().dtype)) return true;
      for (const Arg& x : a.list)
        if (x.is_node() && dtype_is_complex(g_.nodes[x.node].meta().dtype)) return true;
    }
    return false;
  }

  void lower_node(int id) {
    const Node& n = g_.nodes[id];
    const OpDef& op = *n.op;
    const TensorMeta& m = n.meta();
    if (op.kind != OpKind::getitem && op.kind != OpKind::composite && touches_complex(n)) return lower_extern(id);
    switch (op.kind) {
      case OpKind::pointwise: {
        // Scalars take the type of the tensors they combine with (0.125 * f32 -> f32 math); a
        // comparison's, its operands' (an int64 tensor == 3 compares integers, not bools).
        DType compute = m.dtype;
        bool operand_typed = false;
        for (const Arg& a : n.args) {
          if (!a.is_node()) continue;
          const DType t = g_.nodes[a.node].meta().dtype;
          if ((math_is_comparison(op.math) || op.math == Math::where) && dtype_is_float(t)) compute = t;
          if (math_is_comparison(op.math) && op.math != Math::where && !dtype_is_float(compute) && t != DType::b8)
            compute = operand_typed ? promote(compute, t) : t, operand_typed = true;
        }
        std::vector<Reader> ins;
        double alpha = 1.0;
        for (size_t k = 0; k < op.params.size(); ++k) {
          if (op.params[k].is_operand()) ins.push_back(operand(n.args[k], compute));
          if (op.params[k].name == "alpha" && n.args[k].is_number()) alpha = n.args[k].number();
        }
        const Math math = pointwise_math(op, n.args);
        const DType out = m.dtype;
        // Integer and bool operands of float math are converted first (int64 / int64 is a true
        // division, as PyTorch's type promotion makes it); a select's condition stays bool.
        // Operands with no dimension of size 1: read at the node's own index when of its rank (the
        // broadcast index would be a copy of it, made at every run of the body by every pass).
        uint64_t whole = 0;  // bit k: operand k (of the first 64)
        for (size_t k = 0; k < ins.size() && k < 64; ++k)
          if (std::count(ins[k].shape.begin(), ins[k].shape.end(), 1) == 0) whole |= uint64_t{1} << k;
        auto body = [ins = std::move(ins), whole, alpha, math, out, compute](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
          std::vector<V> vals;
          vals.reserve(ins.size());
          for (size_t k = 0; k < ins.size(); ++k) {
            const Reader& r = ins[k];
            const bool own = k < 64 && (whole >> k & 1) && r.shape.size() == idx.size();
            V v = own ? r.load(h, idx) : r.load(h, broadcast_index(r.shape, idx));
            if (dtype_is_float(compute) && !dtype_is_float(r.dtype) && !(math == Math::where && k == 0))
              v = h.math(Math::identity, {v}, compute);
            vals.push_back(v);
          }
          if (alpha != 1.0) vals[1] = h.math(Math::mul, {vals[1], h.constant(alpha, compute)}, compute);
          return h.math(math, vals, out);
        };
        const std::string buf = add_node(n, LoopNode::Kind::pointwise, m.shape, {}, Reduce::none, out, std::move(body));
        readers_[id] = buffer_reader(buf, m.shape, out);
        realized_[id] = buf;
        return;
      }
      case OpKind::reduction: {
        const Reader in = readers_[n.args[0].node];
        const auto dims = reduction_dims(op, n.args, static_cast<int64_t>(in.shape.size()));
        const bool keep = reduction_keepdim(op, n.args);
        Shape ranges, rranges;
        for (int64_t d = 0; d < static_cast<int64_t>(in.shape.size()); ++d) {
          const bool red = std::count(dims.begin(), dims.end(), d) > 0;
          if (red) rranges.push_back(in.shape[d]);
          if (!red) ranges.push_back(in.shape[d]);
          else if (keep) ranges.push_back(1);
        }
        const Shape in_shape = in.shape;
        auto body = [in, dims, keep, in_shape](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>& ridx) {
          std::vector<Expr> full;
          size_t j = 0, k = 0;
          for (int64_t d = 0; d < static_cast<int64_t>(in_shape.size()); ++d) {
            if (std::count(dims.begin(), dims.end(), d)) {
              full.push_back(ridx[k++]);
              if (keep) ++j;
            } else {
              full.push_back(idx[j++]);
            }
          }
          return in.load(h, full);
        };
        const Reduce r = op.reduce == Reduce::mean ? Reduce::sum : op.reduce;
        if (numel_of(rranges) == 0) {  // over no element: the reduction's start value (a mean's 0/0: NaN)
          const DType dt = m.dtype;
          const double v = op.reduce == Reduce::mean ? std::nan("") : reduce_init(r);
          const std::string buf = add_node(n, LoopNode::Kind::pointwise, ranges, {}, Reduce::none, dt,
                                           [v, dt](OpsHandler& h, const std::vector<Expr>&, const std::vector<Expr>&) { return h.constant(v, dt); });
          readers_[id] = buffer_reader(buf, m.shape, m.dtype);
          realized_[id] = buf;
          return;
        }
        if (numel_of(rranges) == 1) {  // over one element (an adaptive pool to its own size): the value itself
          const DType dt = m.dtype, in_dt = in.dtype;
          const std::vector<Expr> zero(rranges.size(), Expr(0));
          const std::string buf = add_node(n, LoopNode::Kind::pointwise, ranges, {}, Reduce::none, dt,
                                           [body, zero, dt, in_dt](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
                                             const V v = body(h, idx, zero);
                                             return dt == in_dt ? v : h.math(Math::identity, {v}, dt);
                                           });
          readers_[id] = buffer_reader(buf, m.shape, m.dtype);
          realized_[id] = buf;
          return;
        }
        std::string buf = add_node(n, LoopNode::Kind::reduction, ranges, rranges, r, m.dtype, body);
        if (op.reduce == Reduce::mean) {  // mean = sum, then a pointwise division by the count
          const Reader s = buffer_reader(buf, ranges, m.dtype);
          const double count = static_cast<double>(numel_of(rranges));
          const DType dt = m.dtype;
          buf = add_node(n, LoopNode::Kind::pointwise, ranges, {}, Reduce::none, dt,
                         [s, count, dt](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
                           return h.math(Math::div, {s.load(h, idx), h.constant(count, dt)}, dt);
                         });
        }
        readers_[id] = buffer_reader(buf, m.shape, m.dtype);
        realized_[id] = buf;
        return;
      }
      case OpKind::view: {
        const Reader base = readers_[n.args[0].node];
        // The view rule reads its input's metadata from a graph: give it a private one holding only
        // that input, so the body does not depend on the lifetime of g_.
        auto g = std::make_shared<Graph>();
        Node in;
        in.name = "in";
        in.outs = {g_.nodes[n.args[0].node].meta()};
        g->add(in);
        std::vector<Arg> args = n.args;
        args[0] = Arg::of_node(0);
        const ViewFn view = op.view;
        readers_[id] = {[base, g, args, view](OpsHandler& h, const std::vector<Expr>& idx) {
                          return base.load(h, view(*g, args, idx));
                        },
                        m.shape, m.dtype};
        return;
      }
      case OpKind::extern_kernel:
        if (n.op == &op::max_pool2d_with_indices() && lower_max_pool(id)) return;
        if (n.op == &op::max_pool2d_with_indices_backward() && lower_max_pool_backward(id)) return;
        if (n.op == &op::cat() && lower_cat(id)) return;
        if (n.op == &op::gather() && lower_gather(id)) return;
        if ((n.op == &op::prod() || n.op == &op::prod_dim()) && lower_prod(id)) return;
        if ((n.op == &op::argmax() || n.op == &op::argmin() || n.op == &op::max_dim() || n.op == &op::min_dim()) &&
            lower_arg_reduction(id))
          return;
        if (n.op == &op::embedding() && lower_embedding(id)) return;
        if (n.op == &op::index_tensor() && lower_index(id)) return;
        if ((n.op == &op::scatter_src() || n.op == &op::scatter_value() || n.op == &op::scatter_add() || n.op == &op::scatter_reduce_two()) &&
            lower_scatter(id))
          return;
        if (n.op == &op::index_put() && lower_index_put(id)) return;
        if (n.op->name == "aten.arange.start_step" && lower_arange(id)) return;
        if ((n.op == &op::rand() || n.op == &op::randn()) && lower_random(id)) return;
        lower_extern(id);
        return;
      case OpKind::getitem: {
        const int src = n.args[0].node;
        const int64_t i = n.args[1].i;
        if (outs_[src].empty() || i >= static_cast<int64_t>(outs_[src].size()))
          throw std::invalid_argument("output " + std::to_string(i) + " of '" + g_.nodes[src].name + "' cannot be read");
        readers_[id] = outs_[src][i];
        if (i < static_cast<int64_t>(out_bufs_[src].size()) && !out_bufs_[src][i].empty()) realized_[id] = out_bufs_[src][i];
        return;
      }
      case OpKind::composite:
        throw std::invalid_argument("composite op has no lowering: decompose the graph first");
    }
  }

  const Graph& g_;
  LoopProgram p_;
  std::vector<Reader> readers_;
  std::vector<std::vector<Reader>> outs_;  // multi-output nodes: a reader per output
  std::vector<std::vector<std::string>> out_bufs_;
  std::vector<std::string> realized_;  // per graph node: the buffer holding its value whole, or empty
};

}  // namespace

LoopProgram lower_to_loops(const Graph& g) { return Lowering(g).run(); }

const char* generated_form(const OpDef& op, bool* always) {
  // The cases of lower_node's extern_kernel branch, in its order.
  if (always) *always = &op == &op::prod() || &op == &op::prod_dim() || &op == &op::argmax() || &op == &op::argmin() ||
                        &op == &op::max_dim() || &op == &op::min_dim();
  if (&op == &op::max_pool2d_with_indices()) return "windows read through index expressions";
  if (&op == &op::max_pool2d_with_indices_backward()) return "each input element gathers the windows that chose it";
  if (&op == &op::cat()) return "each output element reads the input its position falls in";
  if (&op == &op::gather()) return "indirect loads of the index";
  if (&op == &op::prod() || &op == &op::prod_dim()) return "a product reduction";
  if (&op == &op::argmax() || &op == &op::argmin()) return "an arg reduction: the first extremum's index, beside its value";
  if (&op == &op::max_dim() || &op == &op::min_dim()) return "a max (min) reduction and an arg reduction over the same loads";
  if (&op == &op::embedding()) return "indirect loads of the rows";
  if (&op == &op::index_tensor()) return "indirect loads of the indices";
  if (&op == &op::scatter_src() || &op == &op::scatter_value()) return "a copy of self, then a scatter storing through the index";
  if (&op == &op::scatter_add()) return "a copy of self, then a scatter of atomic adds through the index (f32, f64, i32)";
  if (&op == &op::scatter_reduce_two())
    return "reduce='sum' (f32, f64, i32): a copy of self, zeros where the index hits without include_self, then a scatter of atomic adds";
  if (&op == &op::index_put())
    return "a copy of self, then a scatter storing through the indices, atomic adds with accumulate (f32, f64, i32); not boolean masks";
  if (op.name == "aten.arange.start_step") return "the loop index as a value (start + step * i)";
  if (&op == &op::rand() || &op == &op::randn()) return "Philox of the seed, the op's offset and the element's index";
  return nullptr;
}

}  // namespace ls
