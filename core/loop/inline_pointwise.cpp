#include "loop/inline_pointwise.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "loop/buffer_ids.h"
#include "loop/dependencies.h"

namespace ls {
namespace {

constexpr int kMaxOps = 8;    // a node is "cheap" with at most this many math ops
constexpr int kMaxLoads = 3;  // ... and this many loads
// A consumer's body, its inlined producers counted in, stays within this many loads and ops:
// a producer read at many places by a consumer that itself inlines others (nested cats of
// slices, pooling windows over pooled values) would otherwise grow the body multiplicatively,
// and every later pass re-runs it (an unrolled LSTM's training step: 2.9 s of fusion for 1,469
// loop nodes). Inductor bounds the same growth (realize_reads_threshold, realize_opcount_threshold).
constexpr int kMaxInlinedBody = 256;

class CountingHandler : public OpsHandler {
 public:
  int ops = 0, loads = 0;
  V load(const std::string&, const Expr&) override { ++loads; return V{}; }
  V constant(double, DType) override { return V{}; }
  V index_expr(const Expr&, DType) override { ++ops; return V{}; }
  V math(Math, const std::vector<V>&, DType) override { ++ops; return V{}; }
  Expr indirect(V, int64_t size, bool) override {
    ++ops;
    return Expr::indirect(Expr::kIndirectPrefix + std::to_string(ops), size);
  }
  V reduction(Reduce, DType, V) override { ++ops; return V{}; }
  V arg_reduction(Reduce, DType, V, V) override { ++ops; return V{}; }
  void store(const std::string&, const Expr&, V) override {}
  void store_reduction(const std::string&, const Expr&, V) override {}
};

// Both at once, for the first pass over the nodes: the counts, and the reads as
// extract_dependencies records them (each buffer and index once). One run of every body, not two.
class CountingRecorder : public CountingHandler {
 public:
  std::vector<MemDep> reads;
  V load(const std::string& b, const Expr& i) override {
    CountingHandler::load(b, i);
    for (const MemDep& d : reads)
      if (d.buffer == b && d.index == i) return V{};
    reads.push_back({b, i});
    return V{};
  }
  Expr indirect(V v, int64_t size, bool wrap) override {  // counted; named as extract_dependencies names it
    CountingHandler::indirect(v, size, wrap);
    return Expr::indirect(Expr::kIndirectPrefix + std::to_string(indirect_++), size);
  }

 private:
  int indirect_ = 0;
};

using Inlined = std::map<std::string, std::shared_ptr<const LoopNode>>;

// The buffers a node reads and at how many places each: (buffer id, places), sorted by id.
using Places = std::vector<std::pair<int, int>>;
int& places_at(Places& r, int b) {  // added at 0 places where absent
  auto it = std::lower_bound(r.begin(), r.end(), std::make_pair(b, 0), [](const auto& x, const auto& y) { return x.first < y.first; });
  if (it == r.end() || it->first != b) it = r.insert(it, {b, 0});
  return it->second;
}
int places_in(const Places& r, int b) {
  auto it = std::lower_bound(r.begin(), r.end(), std::make_pair(b, 0), [](const auto& x, const auto& y) { return x.first < y.first; });
  return it == r.end() || it->first != b ? 0 : it->second;
}
// A sorted list of node indices, kept without repeats (a reader list per buffer: a std::set per
// buffer allocated a node per reader).
void add_sorted(std::vector<size_t>& v, size_t x) {
  const auto it = std::lower_bound(v.begin(), v.end(), x);
  if (it == v.end() || *it != x) v.insert(it, x);
}
void erase_sorted(std::vector<size_t>& v, size_t x) {
  const auto it = std::lower_bound(v.begin(), v.end(), x);
  if (it != v.end() && *it == x) v.erase(it);
}
void erase_places(Places& r, int b) {
  auto it = std::lower_bound(r.begin(), r.end(), std::make_pair(b, 0), [](const auto& x, const auto& y) { return x.first < y.first; });
  if (it != r.end() && it->first == b) r.erase(it);
}

// Forwards everything, but a load of an inlined buffer evaluates its producer's body there.
class InlineHandler : public OpsHandler {
 public:
  InlineHandler(OpsHandler& h, const Inlined& inl) : h_(h), inl_(inl) {}
  V load(const std::string& b, const Expr& i) override {
    auto it = inl_.find(b);
    if (it == inl_.end()) return h_.load(b, i);
    const LoopNode& p = *it->second;
    return p.inner(*this, unflatten(i, p.ranges), {});
  }
  V constant(double v, DType t) override { return h_.constant(v, t); }
  V index_expr(const Expr& e, DType t) override { return h_.index_expr(e, t); }
  V math(Math m, const std::vector<V>& a, DType t) override { return h_.math(m, a, t); }
  Expr indirect(V v, int64_t size, bool wrap) override { return h_.indirect(v, size, wrap); }
  V reduction(Reduce r, DType t, V v) override { return h_.reduction(r, t, v); }
  V arg_reduction(Reduce r, DType t, V v, V i) override { return h_.arg_reduction(r, t, v, i); }
  void store(const std::string& b, const Expr& i, V v) override { h_.store(b, i, v); }
  void store_reduction(const std::string& b, const Expr& i, V v) override { h_.store_reduction(b, i, v); }
  void scatter_store(const std::string& b, const Expr& i, V v, StoreMode m, DType t) override { h_.scatter_store(b, i, v, m, t); }

 private:
  OpsHandler& h_;
  const Inlined& inl_;
};

}  // namespace

std::vector<std::pair<std::string, std::vector<std::string>>> inline_pointwise(LoopProgram& p) {
  std::vector<std::pair<std::string, std::vector<std::string>>> report;
  auto inl = std::make_shared<Inlined>();
  const size_t n = p.nodes.size();
  // Buffers by number, each name hashed once, here: every node's own and every one read.
  BufferIds id_of;
  id_of.reserve(2 * n);
  auto id = [&](const std::string& b) { return id_of.add(b).first; };
  std::vector<int> own_id(n);
  for (size_t j = 0; j < n; ++j) own_id[j] = id(p.nodes[j].buffer);
  // Who reads each buffer, and at how many places, kept up to date as bodies change: a consumer
  // that inlines a producer reads what the producer read, at as many places more (not
  // re-extracted from the grown body: that made this pass quadratic in chains of inlined nodes).
  // By buffer id, not name: string-keyed maps and sets were a fifth of this pass at 20,000 nodes.
  std::vector<Places> reads(n);
  std::vector<int> body(n, 0);  // loads and ops of each node's body, inlined producers counted in
  std::vector<std::pair<int, int>> own(n);  // (ops, loads) of each node's body as lowered
  for (size_t j = 0; j < n; ++j) {
    CountingRecorder c;
    p.nodes[j].run(c, p.nodes[j].default_vars(), p.nodes[j].default_rvars());
    for (const MemDep& d : c.reads) ++places_at(reads[j], id(d.buffer));
    body[j] = c.ops + c.loads;
    own[j] = {c.ops, c.loads};
  }
  std::vector<std::vector<size_t>> readers(id_of.size());  // sorted
  for (size_t j = 0; j < n; ++j)
    for (const auto& [b, k] : reads[j]) readers[static_cast<size_t>(b)].push_back(j);  // j ascending
  std::vector<bool> removed(n, false), wrapped(n, false);
  // Whether each node's own buffer is an output (the first buffer of its name, as
  // LoopProgram::buffer finds it), from one walk over the buffers rather than a look-up per node.
  std::vector<int8_t> output_id(id_of.size(), -1);  // -1: no buffer of that name seen yet
  for (const LoopBuffer& b : p.buffers)
    if (const int k = id_of.find(b.name); k >= 0 && output_id[static_cast<size_t>(k)] < 0) output_id[static_cast<size_t>(k)] = b.is_output;
  // Last to first: when a producer's turn comes, the nodes it feeds through inlined ones are
  // already its readers.
  for (size_t i = n; i-- > 0;) {
    const LoopNode& cand = p.nodes[i];
    if (cand.kind != LoopNode::Kind::pointwise) continue;
    if (const int8_t o = output_id[static_cast<size_t>(own_id[i])]; o < 0 ? p.buffer(cand.buffer).is_output : o > 0) continue;
    // Its body as counted above, unless it has since been given producers to inline (then counted
    // again: running every body a second time was a sixth of this pass at 20,000 nodes).
    auto [ops, loads] = own[i];
    if (wrapped[i]) {
      CountingHandler cost;
      cand.run(cost, cand.default_vars(), {});
      ops = cost.ops;
      loads = cost.loads;
    }
    if (ops > kMaxOps || loads > kMaxLoads) continue;
    const int cand_id = own_id[i];
    const auto& rs = readers[static_cast<size_t>(cand_id)];
    if (rs.empty()) continue;
    bool ok = true;
    for (size_t j : rs) {
      const LoopNode& c = p.nodes[j];
      // Only into generated code of another iteration size (a broadcast or a window read), which
      // fusion could not put in one loop with the producer.
      ok = ok && c.kind != LoopNode::Kind::extern_kernel && c.numel() * std::max<int64_t>(c.rnumel(), 1) != cand.numel();
      // A scatter's buffer is filled first (the copy of self), then scattered into: both stay.
      ok = ok && !(c.kind == LoopNode::Kind::scatter && c.buffer == cand.buffer);
      // A value another phase reads is saved between the two: it must be stored.
      ok = ok && c.phase == cand.phase;
      // (the places the consumer reads it)
      ok = ok && body[j] + places_in(reads[j], cand_id) * body[i] <= kMaxInlinedBody;
    }
    if (!ok) continue;
    (*inl)[cand.buffer] = std::make_shared<const LoopNode>(cand);
    std::vector<std::string> into;
    const std::vector<size_t> consumers = rs;
    for (size_t j : consumers) {
      LoopNode& c = p.nodes[j];
      into.push_back(c.name);
      if (!wrapped[j]) {  // one wrapper per consumer: it consults the shared map of inlined nodes
        c.inner = [orig = c.inner, inl](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>& ridx) {
          InlineHandler ih(h, *inl);
          return orig(ih, idx, ridx);
        };
        wrapped[j] = true;
      }
      for (const auto& o : cand.origins)
        if (!std::count(c.origins.begin(), c.origins.end(), o)) c.origins.push_back(o);
      const int places = places_at(reads[j], cand_id);
      body[j] += places * (body[i] - 1);  // each load of it becomes its body
      erase_places(reads[j], cand_id);
      for (const auto& [b, k] : reads[i]) {
        places_at(reads[j], b) += places * k;
        add_sorted(readers[static_cast<size_t>(b)], j);
      }
    }
    for (const auto& [b, k] : reads[i]) erase_sorted(readers[static_cast<size_t>(b)], i);
    report.emplace_back(cand.name, into);
    removed[i] = true;
  }
  // The kept nodes close ranks in place (no second vector of the whole program).
  std::set<std::string> gone;
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    if (removed[i]) gone.insert(p.nodes[i].buffer);
    else if (kept++ != i) p.nodes[kept - 1] = std::move(p.nodes[i]);
  }
  p.nodes.erase(p.nodes.begin() + static_cast<std::ptrdiff_t>(kept), p.nodes.end());
  p.buffers.erase(std::remove_if(p.buffers.begin(), p.buffers.end(), [&](const LoopBuffer& b) { return gone.count(b.name) > 0; }),
                  p.buffers.end());
  std::reverse(report.begin(), report.end());
  return report;
}

}  // namespace ls
