// Recurrent layers as torch.export keeps them: aten.lstm.input and aten.gru.input (nn.LSTM,
// nn.GRU), decomposed as torch._decomp unrolls them: per layer and direction, per time step,
// the gates as two matrix products (input and hidden) plus biases, then the cell's pointwise
// update; the layer's outputs concatenated along time. Reference kernels in plain loops.
#include <cmath>
#include <functional>

#include "ops/rule_helpers.h"

namespace ls {
namespace {

using namespace rules;

// lstm.input(Tensor input, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers,
//            float dropout, bool train, bool bidirectional, bool batch_first)
// gru.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers,
//           float dropout, bool train, bool bidirectional, bool batch_first)
struct Rnn {
  bool lstm = true;
  int64_t T = 0, B = 0, I = 0, H = 0, layers = 1, dirs = 1;
  bool biases = true, batch_first = false;
  int gates() const { return lstm ? 4 : 3; }
  size_t params_per() const { return biases ? 4 : 2; }
};

Rnn rnn_of(const OpDef& op, const Shape& in, const Shape& h0, size_t nparams, const std::vector<Arg>& a) {
  Rnn r;
  r.lstm = op.base_name() == "lstm";
  r.biases = a[3].b;
  r.layers = a[4].i;
  r.dirs = a[7].b ? 2 : 1;
  r.batch_first = a[8].b;
  if (in.size() != 3) bad(op, "input must be 3-D (unbatched input is not supported), got " + shape_str(in));
  r.T = r.batch_first ? in[1] : in[0];
  r.B = r.batch_first ? in[0] : in[1];
  r.I = in[2];
  if (h0.size() != 3 || h0[0] != r.layers * r.dirs || h0[1] != r.B)
    bad(op, "hidden state " + shape_str(h0) + " does not fit " + std::to_string(r.layers * r.dirs) + " layers x directions and batch " +
                std::to_string(r.B));
  r.H = h0[2];
  if (nparams != r.params_per() * static_cast<size_t>(r.layers * r.dirs))
    bad(op, "expected " + std::to_string(r.params_per() * static_cast<size_t>(r.layers * r.dirs)) + " parameter tensors, got " +
                std::to_string(nparams));
  if (a[6].b && a[5].number() > 0 && r.layers > 1) bad(op, "dropout between layers in training is not supported");
  return r;
}

const Shape& hidden_shape(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  if (op.base_name() == "lstm") {
    if (a[1].list.size() != 2) bad(op, "hx must hold h0 and c0");
    return meta_of(g, a[1].list[0]).shape;
  }
  return meta_of(g, a[1]).shape;
}

std::vector<TensorMeta> infer_rnn(const Graph& g, const OpDef& op, const std::vector<Arg>& a) {
  const TensorMeta& x = meta_of(g, a[0]);
  const Rnn r = rnn_of(op, x.shape, hidden_shape(g, op, a), a[2].list.size(), a);
  for (size_t k = 0; k < a[2].list.size(); ++k) {
    const Shape& p = meta_of(g, a[2].list[k]).shape;
    const int64_t layer = static_cast<int64_t>(k / r.params_per()) / r.dirs;
    const int64_t in = layer == 0 ? r.I : r.H * r.dirs;
    const size_t kind = k % r.params_per();  // w_ih, w_hh, b_ih, b_hh
    const Shape want = kind == 0 ? Shape{r.gates() * r.H, in} : kind == 1 ? Shape{r.gates() * r.H, r.H} : Shape{r.gates() * r.H};
    if (p != want) bad(op, "parameter " + std::to_string(k) + " is " + shape_str(p) + ", expected " + shape_str(want));
  }
  const Shape out = r.batch_first ? Shape{r.B, r.T, r.dirs * r.H} : Shape{r.T, r.B, r.dirs * r.H};
  const Shape hn{r.layers * r.dirs, r.B, r.H};
  if (r.lstm) return {like(x, out), like(x, hn), like(x, hn)};
  return {like(x, out), like(x, hn)};
}

double sigm(double v) { return 1.0 / (1.0 + std::exp(-v)); }

std::vector<Tensor> ref_rnn(const OpDef& op, const std::vector<Arg>& a, const RefInputs& in, const std::vector<TensorMeta>& outs) {
  const Tensor& x = in[0];
  const Tensor& h0 = op.base_name() == "lstm" ? in.lists[1].at(0) : in[1];
  const Rnn r = rnn_of(op, x.shape(), h0.shape(), in.lists[2].size(), a);
  const std::vector<Tensor>& p = in.lists[2];
  Tensor y(outs[0].dtype, outs[0].shape), hn(outs[1].dtype, outs[1].shape);
  Tensor cn = r.lstm ? Tensor(outs[2].dtype, outs[2].shape) : Tensor();
  // The layer's input sequence: [T][B][features].
  std::vector<std::vector<double>> seq(static_cast<size_t>(r.T), std::vector<double>(static_cast<size_t>(r.B * r.I)));
  for (int64_t t = 0; t < r.T; ++t)
    for (int64_t b = 0; b < r.B; ++b)
      for (int64_t i = 0; i < r.I; ++i)
        seq[t][b * r.I + i] = x.get(r.batch_first ? (b * r.T + t) * r.I + i : (t * r.B + b) * r.I + i);
  int64_t width = r.I;
  const int64_t G = r.gates();
  for (int64_t l = 0; l < r.layers; ++l) {
    std::vector<std::vector<double>> next(static_cast<size_t>(r.T), std::vector<double>(static_cast<size_t>(r.B * r.dirs * r.H)));
    for (int64_t d = 0; d < r.dirs; ++d) {
      const size_t base = static_cast<size_t>((l * r.dirs + d)) * r.params_per();
      const Tensor &wih = p[base], &whh = p[base + 1];
      const int64_t s = l * r.dirs + d;
      std::vector<double> h(static_cast<size_t>(r.B * r.H)), c(static_cast<size_t>(r.B * r.H));
      for (int64_t k = 0; k < r.B * r.H; ++k) {
        h[k] = h0.get(s * r.B * r.H + k);
        if (r.lstm) c[k] = in.lists[1][1].get(s * r.B * r.H + k);
      }
      for (int64_t step = 0; step < r.T; ++step) {
        const int64_t t = d == 0 ? step : r.T - 1 - step;
        std::vector<double> nh(h.size()), nc(c.size());
        for (int64_t b = 0; b < r.B; ++b) {
          std::vector<double> gi(static_cast<size_t>(G * r.H)), gh(static_cast<size_t>(G * r.H));
          for (int64_t o = 0; o < G * r.H; ++o) {
            double vi = r.biases ? p[base + 2].get(o) : 0.0, vh = r.biases ? p[base + 3].get(o) : 0.0;
            for (int64_t i = 0; i < width; ++i) vi += wih.get(o * width + i) * seq[t][b * width + i];
            for (int64_t i = 0; i < r.H; ++i) vh += whh.get(o * r.H + i) * h[b * r.H + i];
            gi[o] = vi;
            gh[o] = vh;
          }
          for (int64_t j = 0; j < r.H; ++j) {
            const int64_t k = b * r.H + j;
            if (r.lstm) {  // i, f, g, o
              const double ig = sigm(gi[j] + gh[j]), fg = sigm(gi[r.H + j] + gh[r.H + j]);
              const double gg = std::tanh(gi[2 * r.H + j] + gh[2 * r.H + j]), og = sigm(gi[3 * r.H + j] + gh[3 * r.H + j]);
              nc[k] = fg * c[k] + ig * gg;
              nh[k] = og * std::tanh(nc[k]);
            } else {  // r, z, n
              const double rg = sigm(gi[j] + gh[j]), zg = sigm(gi[r.H + j] + gh[r.H + j]);
              const double ng = std::tanh(gi[2 * r.H + j] + rg * gh[2 * r.H + j]);
              nh[k] = (1 - zg) * ng + zg * h[k];
            }
            next[t][(b * r.dirs + d) * r.H + j] = nh[k];
          }
        }
        h = nh;
        if (r.lstm) c = nc;
      }
      for (int64_t k = 0; k < r.B * r.H; ++k) {
        hn.set(s * r.B * r.H + k, h[k]);
        if (r.lstm) cn.set(s * r.B * r.H + k, c[k]);
      }
    }
    seq = std::move(next);
    width = r.dirs * r.H;
  }
  for (int64_t t = 0; t < r.T; ++t)
    for (int64_t b = 0; b < r.B; ++b)
      for (int64_t j = 0; j < width; ++j)
        y.set(r.batch_first ? (b * r.T + t) * width + j : (t * r.B + b) * width + j, seq[t][b * width + j]);
  if (r.lstm) return {y, hn, cn};
  return {y, hn};
}

// The unrolled decomposition.
std::vector<Arg> decomp_rnn(GraphBuilder& b, const OpDef& op, const std::vector<Arg>& a) {
  const Shape xs = b.meta(a[0]).shape;
  const bool lstm = op.base_name() == "lstm";
  const Arg h0 = lstm ? a[1].list.at(0) : a[1];
  const Rnn r = rnn_of(op, xs, b.meta(h0).shape, a[2].list.size(), a);
  const std::vector<Arg>& p = a[2].list;
  auto select = [&](const Arg& t, int64_t dim, int64_t i) { return b.call("aten.select.int", {t, Arg::of_int(dim), Arg::of_int(i)}); };
  auto linear = [&](const Arg& v, size_t w, size_t bias) {  // v @ W^T (+ bias)
    return b.call("aten.linear.default", {v, p[w], r.biases ? p[bias] : Arg::none()});
  };
  auto chunk = [&](const Arg& g, int64_t k) {
    return b.call("aten.slice.Tensor", {g, Arg::of_int(1), Arg::of_int(k * r.H), Arg::of_int((k + 1) * r.H)});
  };
  auto call1 = [&](const char* name, const Arg& v) { return b.call(name, {v}); };
  auto call2 = [&](const char* name, const Arg& u, const Arg& v) { return b.call(name, {u, v}); };
  // The input sequence as a list of [B, I] steps.
  std::vector<Arg> seq;
  for (int64_t t = 0; t < r.T; ++t) seq.push_back(select(a[0], r.batch_first ? 1 : 0, t));
  std::vector<Arg> hs, cs;
  for (int64_t l = 0; l < r.layers; ++l) {
    std::vector<std::vector<Arg>> outs(static_cast<size_t>(r.dirs));
    for (int64_t d = 0; d < r.dirs; ++d) {
      const size_t base = static_cast<size_t>(l * r.dirs + d) * r.params_per();
      const int64_t s = l * r.dirs + d;
      Arg h = select(h0, 0, s);
      Arg c = lstm ? select(a[1].list.at(1), 0, s) : Arg::none();
      std::vector<Arg> ys(static_cast<size_t>(r.T));
      for (int64_t step = 0; step < r.T; ++step) {
        const int64_t t = d == 0 ? step : r.T - 1 - step;
        const Arg gi = linear(seq[t], base, base + 2), gh = linear(h, base + 1, base + 3);
        if (lstm) {
          const Arg g = call2("aten.add.Tensor", gi, gh);
          const Arg ig = call1("aten.sigmoid.default", chunk(g, 0)), fg = call1("aten.sigmoid.default", chunk(g, 1));
          const Arg gg = call1("aten.tanh.default", chunk(g, 2)), og = call1("aten.sigmoid.default", chunk(g, 3));
          c = call2("aten.add.Tensor", call2("aten.mul.Tensor", fg, c), call2("aten.mul.Tensor", ig, gg));
          h = call2("aten.mul.Tensor", og, call1("aten.tanh.default", c));
        } else {
          const Arg rg = call1("aten.sigmoid.default", call2("aten.add.Tensor", chunk(gi, 0), chunk(gh, 0)));
          const Arg zg = call1("aten.sigmoid.default", call2("aten.add.Tensor", chunk(gi, 1), chunk(gh, 1)));
          const Arg ng = call1("aten.tanh.default", call2("aten.add.Tensor", chunk(gi, 2), call2("aten.mul.Tensor", rg, chunk(gh, 2))));
          // (1 - z) * n + z * h = n + z * (h - n)
          h = call2("aten.add.Tensor", ng, call2("aten.mul.Tensor", zg, call2("aten.sub.Tensor", h, ng)));
        }
        ys[static_cast<size_t>(t)] = h;
      }
      outs[static_cast<size_t>(d)] = ys;
      hs.push_back(h);
      if (lstm) cs.push_back(c);
    }
    for (int64_t t = 0; t < r.T; ++t) {
      if (r.dirs == 1) {
        seq[t] = outs[0][t];
        continue;
      }
      Arg both;
      both.kind = Arg::Kind::list;
      both.list = {outs[0][t], outs[1][t]};
      seq[t] = b.call("aten.cat.default", {both, Arg::of_int(1)});
    }
  }
  Arg steps, hl, cl;
  steps.kind = hl.kind = cl.kind = Arg::Kind::list;
  steps.list = seq;
  hl.list = hs;
  cl.list = cs;
  const Arg y = b.call("aten.stack.default", {steps, Arg::of_int(r.batch_first ? 1 : 0)});  // [T] steps of [B, W]
  const Arg hn = b.call("aten.stack.default", {hl, Arg::of_int(0)});
  if (!lstm) return {y, hn};
  return {y, hn, b.call("aten.stack.default", {cl, Arg::of_int(0)})};
}

}  // namespace

void add_recurrent_ops(std::vector<OpDef>& t) {
  const std::vector<OpDef> ops = {
      comp("aten.lstm.input",
           "lstm.input(Tensor input, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, "
           "bool bidirectional, bool batch_first) -> (Tensor, Tensor, Tensor)",
           kAten, infer_rnn, ref_rnn, decomp_rnn),
      comp("aten.gru.input",
           "gru.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, "
           "bool bidirectional, bool batch_first) -> (Tensor, Tensor)",
           kAten, infer_rnn, ref_rnn, decomp_rnn),
  };
  t.insert(t.end(), ops.begin(), ops.end());
}

}  // namespace ls
