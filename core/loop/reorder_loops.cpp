#include "loop/reorder_loops.h"

#include <algorithm>
#include <map>
#include <set>

#include "loop/buffer_ids.h"
#include "loop/dependencies.h"
#include "ir/index.h"

namespace ls {
namespace {

// Node c's value is read only from memory: by library calls or in another phase (or nobody).
// readers: the nodes that read c's buffer, in node order.
bool only_memory_readers(const LoopProgram& p, const std::vector<size_t>& readers, size_t c) {
  const LoopNode& n = p.nodes[c];
  for (size_t u : readers) {
    if (u == c || p.nodes[u].kind == LoopNode::Kind::extern_kernel || p.nodes[u].phase != n.phase) continue;
    return false;
  }
  return true;
}

// A node the pass may reorder (more tests follow in the pass itself).
bool may_reorder(const LoopProgram& p, const LoopNode& n) {
  return n.kind == LoopNode::Kind::pointwise && n.ranges.size() >= 2 && n.iter_order.empty() && !p.buffer(n.buffer).is_output;
}

// A reordered node's ranges in its own order (those of the tensor it makes).
Shape own_shape(const LoopNode& n) {
  Shape own(n.ranges.size());
  for (size_t i = 0; i < n.iter_order.size(); ++i) own[static_cast<size_t>(n.iter_order[i])] = n.ranges[i];
  return own;
}

}  // namespace

std::vector<std::string> reorder_for_column_reductions(LoopProgram& p) {
  std::vector<std::string> done;
  // Nothing to reorder (no pointwise node of two dims or more): no body is run. (Every body was
  // run, and its reads kept, for graphs of one-dimensional values too.)
  if (std::none_of(p.nodes.begin(), p.nodes.end(), [&](const LoopNode& n) { return may_reorder(p, n); })) return done;
  std::vector<Dependencies> deps;
  deps.reserve(p.nodes.size());
  for (const LoopNode& n : p.nodes) deps.push_back(extract_dependencies(n));
  // Who reads each buffer (by id), in node order: a candidate's readers are found there, not by
  // a walk over every node's reads (once per candidate and dimension, and again per reader).
  BufferIds ids;
  ids.reserve(p.nodes.size());
  std::vector<std::vector<size_t>> readers;
  for (size_t u = 0; u < p.nodes.size(); ++u)
    for (const MemDep& d : deps[u].reads) {
      const auto [b, added] = ids.add(d.buffer);
      if (added) readers.emplace_back();
      std::vector<size_t>& r = readers[static_cast<size_t>(b)];
      if (r.empty() || r.back() != u) r.push_back(u);
    }
  static const std::vector<size_t> kNone;
  auto readers_of = [&](const std::string& buffer) -> const std::vector<size_t>& {
    const int b = ids.find(buffer);
    return b < 0 ? kNone : readers[static_cast<size_t>(b)];
  };
  // Last to first: a producer is decided after its readers, so a chain of pointwise nodes feeding
  // the reduction (a mask, then the masked gradient) is reordered as a whole.
  for (size_t ni = p.nodes.size(); ni-- > 0;) {
    LoopNode& n = p.nodes[ni];
    if (!may_reorder(p, n)) continue;
    // Kept dim j outer (N = its size), the others (B in all) inner, in their order: the last dim
    // first (a bias gradient), then any other (a per-channel sum over N, H, W).
    const int k = static_cast<int>(n.ranges.size());
    for (int j = k - 1; j >= 0; --j) {
      const int64_t N = n.ranges[j], B = n.numel() / std::max<int64_t>(N, 1);
      if (B <= 1 || N <= 1) continue;
      // The reordered node as it would run in a kernel iterating x over N and r over B.
      LoopNode t = n;
      t.iter_order = {j};
      t.ranges = {N};
      for (int d = 0; d < k; ++d)
        if (d != j) {
          t.iter_order.push_back(d);
          t.ranges.push_back(n.ranges[d]);
        }
      const Expr x = Expr::var("x0", N), r = Expr::var("r0", B);
      const std::vector<Expr> at = unflatten(x * B + r, t.ranges);
      const Expr writes = extract_dependencies(t, at, {}).writes.at(0).index;
      bool any = false, all = true;
      std::vector<size_t> along;  // same-shape pointwise readers that only memory reads: they turn with it
      for (size_t c : readers_of(n.buffer)) {
        if (!all) break;
        const LoopNode& rd = p.nodes[c];
        if (rd.kind == LoopNode::Kind::extern_kernel) continue;
        // A reduction over B with one result per kept index, or a node already reordered to
        // iterate the same way, reading exactly what the reordered node writes in the same iteration.
        const bool column_reduction = rd.kind == LoopNode::Kind::reduction && rd.numel() == N && rd.rnumel() == B;
        const bool reordered = rd.kind == LoopNode::Kind::pointwise && rd.iter_order == t.iter_order && rd.ranges == t.ranges;
        // A pointwise node of the same shape reading it elementwise, whose own value goes only to
        // library calls, the model's outputs or another phase (all through memory): the order it
        // runs in is free, so it turns with this node (a BatchNorm's input gradient, computed
        // beside the per-channel sums that read the same masked gradient).
        const bool free_order = rd.kind == LoopNode::Kind::pointwise && rd.iter_order.empty() && rd.ranges == n.ranges &&
                                rd.phase == n.phase && only_memory_readers(p, readers_of(rd.buffer), c);
        if (!column_reduction && !reordered && !free_order) {
          all = false;
          break;
        }
        const Dependencies rdd = free_order    ? extract_dependencies(rd)
                                 : reordered   ? extract_dependencies(rd, at, {})
                                               : extract_dependencies(rd, unflatten(x, rd.ranges), unflatten(r, rd.reduction_ranges));
        const Expr expect = free_order ? extract_dependencies(n).writes.at(0).index : writes;
        for (const MemDep& d : rdd.reads)
          if (d.buffer == n.buffer && d.index != expect) all = false;
        if (free_order) along.push_back(c);
        else any = true;
      }
      if (!any || !all) continue;
      for (size_t c : along) {
        LoopNode& f = p.nodes[c];
        f.iter_order = t.iter_order;
        f.ranges = t.ranges;
        done.insert(done.begin(), f.name);
      }
      n = t;
      done.insert(done.begin(), n.name);
      break;
    }
  }
  return done;
}

std::vector<std::string> restore_unfused_orders(LoopProgram& p, const std::vector<std::vector<int>>& pointwise_kernels) {
  std::vector<std::string> done;
  for (const std::vector<int>& k : pointwise_kernels) {
    if (std::none_of(k.begin(), k.end(), [&](int n) { return !p.nodes[n].iter_order.empty(); })) continue;
    std::vector<LoopNode> kept;
    for (int n : k) kept.push_back(p.nodes[n]);
    for (int n : k) {
      LoopNode& ln = p.nodes[n];
      if (ln.iter_order.empty()) continue;
      ln.ranges = own_shape(ln);
      ln.iter_order.clear();
    }
    // Inside the kernel every node runs at x over its own ranges: a value read from a node of the
    // kernel must be read where that node writes it.
    const int64_t numel = p.nodes[k.front()].numel();
    const Expr x = Expr::var("x0", numel);
    std::map<std::string, Expr> written;
    bool lines_up = true;
    for (int n : k) {
      const Dependencies d = extract_dependencies(p.nodes[n], unflatten(x, p.nodes[n].ranges), {});
      for (const MemDep& r : d.reads)
        if (written.count(r.buffer) && written.at(r.buffer) != r.index) lines_up = false;
      for (const MemDep& w : d.writes) written.insert_or_assign(w.buffer, w.index);
    }
    if (!lines_up) {
      for (size_t i = 0; i < k.size(); ++i) p.nodes[k[i]] = kept[i];
      continue;
    }
    for (size_t i = 0; i < k.size(); ++i)
      if (!kept[i].iter_order.empty()) done.push_back(kept[i].name);
  }
  return done;
}

std::vector<std::string> restore_orders_in_row_kernels(LoopProgram& p, const std::vector<std::vector<int>>& row_kernels) {
  std::vector<std::string> done;
  for (const std::vector<int>& k : row_kernels) {
    // The reordered nodes of the kernel go back together, where their values stay among them: they
    // read nothing the kernel's other nodes make, the others read nothing of theirs, and all have
    // one shape (then each reads the others where they write). Their own order is the kernel's
    // rows: coalesced.
    std::set<std::string> turned, rest;
    Shape shape;
    bool one_shape = true;
    for (int n : k) {
      const LoopNode& ln = p.nodes[n];
      if (ln.iter_order.empty() || ln.kind != LoopNode::Kind::pointwise) {
        rest.insert(ln.buffer);
        continue;
      }
      const Shape own = own_shape(ln);
      if (turned.empty()) shape = own;
      one_shape = one_shape && own == shape;
      turned.insert(ln.buffer);
    }
    if (turned.empty() || !one_shape) continue;
    bool apart = true;
    for (int n : k) {
      const bool in_turned = turned.count(p.nodes[n].buffer) > 0;
      for (const MemDep& r : extract_dependencies(p.nodes[n]).reads)
        apart = apart && !(in_turned ? rest : turned).count(r.buffer);
    }
    if (!apart) continue;
    for (int n : k) {
      LoopNode& ln = p.nodes[n];
      if (!turned.count(ln.buffer)) continue;
      ln.ranges = shape;
      ln.iter_order.clear();
      done.push_back(ln.name);
    }
  }
  return done;
}

}  // namespace ls
