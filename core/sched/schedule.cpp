#include "sched/schedule.h"

#include <algorithm>
#include <array>
#include <deque>
#include <queue>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "loop/buffer_ids.h"
#include "loop/dependencies.h"
#include "ops/known_ops.h"
#include "ops/op_table.h"

namespace ls {
namespace {

std::string fmt_bytes(int64_t b) {
  std::ostringstream os;
  if (b >= (1 << 20)) os << (b / 1048576.0) << " MiB";
  else if (b >= 1024) os << (b / 1024.0) << " KiB";
  else os << b << " B";
  return os.str();
}

struct Group {
  std::vector<int> nodes;  // sorted
  bool alive = true;
  // Its first reduction and first library call (-1: none), kept through merges: fusion's
  // candidates ask for them pair by pair, and a scan of the group's nodes touched every node
  // of both groups again for each candidate.
  int reduction = -1, extern_node = -1;
  bool scatter = false;  // it holds a scatter (kept through merges, as the two above)
};
int first_of(int a, int b) { return a < 0 ? b : b < 0 ? a : std::min(a, b); }

// How many later readers of one buffer each reader is tried with for horizontal fusion.
constexpr size_t kMaxHorizontalPartners = 64;

// A set of group pairs (a < b, packed in 64 bits): open addressing in one array, sized once per
// fusion round. (An std::unordered_set allocated a node per pair, tens of thousands a round, and
// its look-ups missed the cache more as the graph grew.)
class PairSet {
 public:
  explicit PairSet(size_t n) {
    size_t cap = 16;
    while (cap < 2 * n + 2) cap *= 2;
    slots_.assign(cap, kEmpty);
  }
  static uint64_t key(int a, int b) { return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b); }
  // Whether the pair was new (then it is in the set).
  bool insert(uint64_t k) {
    if (2 * (count_ + 1) > slots_.size()) grow();
    for (size_t i = slot(k);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i] == k) return false;
      if (slots_[i] == kEmpty) {
        slots_[i] = k;
        ++count_;
        return true;
      }
    }
  }
  bool contains(uint64_t k) const {
    for (size_t i = slot(k);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i] == k) return true;
      if (slots_[i] == kEmpty) return false;
    }
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};  // no pair of group ids (each below 2^31)
  size_t slot(uint64_t k) const { return static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> 20) & (slots_.size() - 1); }
  void grow() {
    std::vector<uint64_t> old = std::move(slots_);
    slots_.assign(old.size() * 2, kEmpty);
    count_ = 0;
    for (uint64_t k : old)
      if (k != kEmpty) insert(k);
  }
  std::vector<uint64_t> slots_;
  size_t count_ = 0;
};

class Scheduler {
 public:
  Scheduler(const LoopProgram& p, const ScheduleOptions& o) : p_(p), opts_(o) {
    const size_t n = p.nodes.size();
    bool any_scatter = false;
    groups_.reserve(n);
    for (auto* v : {&node_numel_, &node_rnumel_}) v->reserve(n);
    group_of_.reserve(n);
    node_kind_.reserve(n);
    node_phase_.reserve(n);
    buffer_ids_.reserve(2 * n);
    for (size_t i = 0; i < n; ++i) {
      groups_.push_back({{static_cast<int>(i)}});
      if (p.nodes[i].kind == LoopNode::Kind::reduction) groups_.back().reduction = static_cast<int>(i);
      if (p.nodes[i].kind == LoopNode::Kind::extern_kernel) groups_.back().extern_node = static_cast<int>(i);
      groups_.back().scatter = p.nodes[i].kind == LoopNode::Kind::scatter;
      any_scatter = any_scatter || groups_.back().scatter;
      node_kind_.push_back(p.nodes[i].kind);
      node_phase_.push_back(p.nodes[i].phase);
      node_numel_.push_back(p.nodes[i].numel());
      node_rnumel_.push_back(p.nodes[i].rnumel());
      group_of_.push_back(static_cast<int>(i));
    }
    group_buffers_.resize(groups_.size());
    group_size_.assign(groups_.size(), 1);
    // Buffer -> the first node writing it (LoopProgram::producer, indexed by buffer id).
    node_write_id_.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      node_write_id_.push_back(buffer_id(p.nodes[i].buffer));
      set_producer(node_write_id_.back(), static_cast<int>(i));
      for (const auto& out : p.nodes[i].ext.outputs) set_producer(buffer_id(out), static_cast<int>(i));
    }
    // Each node's reads, as ids and as edges from their producers. Its dependencies are dropped as
    // soon as they are read: kept for every node, they were most of the scheduler's memory.
    // A node and a producer it reads of its own iteration are placed there at once (fusion asks for
    // those placements first; placed() keeps them): run here, the bodies are still in the cache
    // that this walk just brought them into. Asked later, in fusion's order, each run missed the
    // cache once the program outgrew it (the fused stage's per-node cost grew with the graph).
    // Not where a scatter re-points a buffer's producer later in the walk (placed() reads producers).
    node_read_ids_.reserve(n);
    placed_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const Dependencies deps = extract_dependencies(p.nodes[i]);
      const size_t first_edge = edges_.size();
      std::vector<int> reads;
      reads.reserve(deps.reads.size());
      for (const MemDep& d : deps.reads) {
        reads.push_back(buffer_id(d.buffer));
        const int prod = producer_of_id(reads.back());
        if (prod >= 0) edges_.push_back({prod, static_cast<int>(i), reads.back()});
      }
      // A scatter writes a buffer after the node that filled it: the nodes after it read the
      // buffer from it (it runs after that node and before them).
      if (p.nodes[i].kind == LoopNode::Kind::scatter) producer_by_id_[static_cast<size_t>(node_write_id_[i])] = static_cast<int>(i);
      std::sort(reads.begin(), reads.end());
      reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
      node_read_ids_.push_back(std::move(reads));
      if (any_scatter) continue;
      for (size_t e = first_edge; e < edges_.size(); ++e) {
        const int prod = edges_[e].producer;
        if (prod < static_cast<int>(i) && same_iteration(prod, static_cast<int>(i))) {
          placed(prod, node_numel_[static_cast<size_t>(prod)], node_rnumel_[static_cast<size_t>(prod)]);
          placed(static_cast<int>(i), node_numel_[i], node_rnumel_[i]);
        }
      }
    }
    // Each id's buffer and size, from one walk over the buffers (the first of each name, as
    // LoopProgram::buffer finds it), not looked up one by one as fusion's candidates ask.
    buffer_by_id_.assign(buffer_ids_.size(), nullptr);
    buffer_bytes_.assign(buffer_ids_.size(), -1);
    for (const LoopBuffer& lb : p.buffers)
      if (const int id = buffer_ids_.find(lb.name); id >= 0 && !buffer_by_id_[static_cast<size_t>(id)]) {
        buffer_by_id_[static_cast<size_t>(id)] = &lb;
        buffer_bytes_[static_cast<size_t>(id)] = lb.bytes();
      }
    // Each node's out-edges, in edge order: out_edges_[first_out_[i], first_out_[i + 1]) (one
    // array counted out by producer, not a vector per node).
    first_out_.assign(n + 1, 0);
    for (const Edge& e : edges_) ++first_out_[static_cast<size_t>(e.producer) + 1];
    for (size_t i = 0; i < n; ++i) first_out_[i + 1] += first_out_[i];
    out_edges_.resize(edges_.size());
    {
      std::vector<int> fill(first_out_.begin(), first_out_.end() - 1);
      for (size_t e = 0; e < edges_.size(); ++e) out_edges_[static_cast<size_t>(fill[static_cast<size_t>(edges_[e].producer)]++)] = static_cast<int>(e);
    }
    // edges_ lists each node's reads in node order: node i's are edges_[first_in_[i], first_in_[i + 1]).
    first_in_.assign(n + 1, 0);
    for (const Edge& e : edges_) ++first_in_[static_cast<size_t>(e.consumer) + 1];
    for (size_t i = 0; i < n; ++i) first_in_[i + 1] += first_in_[i];
    // The buffers more than one node reads, each with its readers in node order:
    // shared_readers_[shared_first_[k], shared_first_[k + 1]) (horizontal fusion's candidates).
    {
      std::vector<int> readers_of(buffer_ids_.size(), 0);
      for (const auto& reads : node_read_ids_)
        for (int id : reads) ++readers_of[static_cast<size_t>(id)];
      std::vector<int> slot(buffer_ids_.size(), -1);
      shared_first_.push_back(0);
      for (size_t id = 0; id < readers_of.size(); ++id)
        if (readers_of[id] > 1) {
          slot[id] = static_cast<int>(shared_first_.size()) - 1;
          shared_first_.push_back(shared_first_.back() + readers_of[id]);
        }
      shared_readers_.resize(static_cast<size_t>(shared_first_.back()));
      std::vector<int> fill(shared_first_.begin(), shared_first_.end() - 1);
      for (size_t i = 0; i < n; ++i)
        for (int id : node_read_ids_[i])
          if (slot[static_cast<size_t>(id)] >= 0) shared_readers_[static_cast<size_t>(fill[static_cast<size_t>(slot[static_cast<size_t>(id)])]++)] = static_cast<int>(i);
    }
    init_order();
  }

  Schedule run() {
    if (opts_.fusion) fuse();
    Schedule s;
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (!groups_[g].alive) continue;
      s.kernels.push_back(make_kernel(groups_[g], s.kernels.size()));
    }
    order_topologically(s.kernels);
    if (opts_.fusion && opts_.gemm_epilogues) mark_gemm_epilogues(s.kernels);
    if (opts_.fusion && opts_.max_loop_nests > 1) group_loop_nests(s.kernels);
    for (size_t k = 0; k < s.kernels.size(); ++k) rename(s.kernels[k], k);
    s.edges.reserve(edges_.size());
    for (const auto& e : edges_) {
      EdgeDecision d;
      d.producer = e.producer;
      d.consumer = e.consumer;
      d.buffer = buffer_ids_.name(e.buffer);
      const int gp = group_of_[e.producer], gc = group_of_[e.consumer];
      if (gp == gc) d.verdict = {true, "fused"};
      else if (!opts_.fusion) d.verdict = {false, "fusion is off"};
      else d.verdict = can_fuse(gp, gc);
      s.edges.push_back(d);
    }
    plan_memory(s);
    return s;
  }

 private:
  struct Edge {
    int producer, consumer;
    int buffer;  // its id (buffer_ids_): twelve bytes an edge, which fusion's rounds walk again and again
  };
  std::vector<int> out_edges_, first_out_;  // node i's out-edges (indices into edges_): out_edges_[first_out_[i], first_out_[i + 1])
  std::vector<int> first_in_;                // node -> its first edge in edges_ (sorted by consumer)
  std::vector<int> shared_first_, shared_readers_;  // the buffers read by several nodes: their readers
  // Group-level edges, sorted and without repeats: group -> the groups that read what it writes,
  // and the reverse. Built once, then kept up to date by merge() at the cost of the two groups'
  // neighbours (rebuilding them after every merge made fusion quadratic in the graph).
  mutable std::vector<std::vector<int>> succ_, pred_;
  mutable bool succ_dirty_ = true;
  mutable std::vector<int> mark_;  // path_through(), reorder_for_merge(): visited stamps
  mutable int stamp_ = 0;

  // The (numel, rnumel) a group iterates: that of its reduction if it has one.
  std::vector<int64_t> node_numel_, node_rnumel_;  // node -> numel(), rnumel()
  std::vector<LoopNode::Kind> node_kind_;          // node -> kind (fusion reads them without the nodes)
  std::vector<Phase> node_phase_;                  // node -> phase
  // Two generated, non-scatter nodes of one iteration: fused, both are placed at it.
  bool same_iteration(int a, int b) const {
    auto generated = [&](int n) {
      const LoopNode::Kind k = node_kind_[static_cast<size_t>(n)];
      return k == LoopNode::Kind::pointwise || k == LoopNode::Kind::reduction;
    };
    return generated(a) && generated(b) && node_numel_[static_cast<size_t>(a)] == node_numel_[static_cast<size_t>(b)] &&
           node_rnumel_[static_cast<size_t>(a)] == node_rnumel_[static_cast<size_t>(b)];
  }
  // iteration() of a group's nodes, or of two groups' together, from their first reductions.
  std::pair<int64_t, int64_t> iteration_of(int first_node, int reduction) const {
    if (reduction >= 0) return {node_numel_[static_cast<size_t>(reduction)], node_rnumel_[static_cast<size_t>(reduction)]};
    return {node_numel_[static_cast<size_t>(first_node)], 1};
  }
  std::pair<int64_t, int64_t> group_iteration(int g) const { return iteration_of(groups_[g].nodes[0], groups_[g].reduction); }
  std::pair<int64_t, int64_t> iteration(const std::vector<int>& nodes) const {
    for (int n : nodes)
      if (p_.nodes[n].kind == LoopNode::Kind::reduction) return {p_.nodes[n].numel(), p_.nodes[n].rnumel()};
    return {p_.nodes[nodes[0]].numel(), 1};
  }

  // Group-level successors, rebuilt after a merge: path_through() is asked for every candidate pair.
  void build_successors() const {
    succ_.assign(groups_.size(), {});
    pred_.assign(groups_.size(), {});
    for (const auto& e : edges_) {
      const int a = group_of_[e.producer], b = group_of_[e.consumer];
      if (a != b) succ_[a].push_back(b), pred_[b].push_back(a);
    }
    for (auto* lists : {&succ_, &pred_})
      for (auto& s : *lists) {
        std::sort(s.begin(), s.end());
        s.erase(std::unique(s.begin(), s.end()), s.end());
      }
    succ_dirty_ = false;
  }

  // gb's edges become ga's (ga survives the merge).
  void merge_edges(int ga, int gb) const {
    if (succ_dirty_) return;  // built on first use, from the merged groups
    auto sorted_union = [](std::vector<int> a, const std::vector<int>& b, int x, int y) {
      a.insert(a.end(), b.begin(), b.end());
      a.erase(std::remove_if(a.begin(), a.end(), [&](int v) { return v == x || v == y; }), a.end());
      std::sort(a.begin(), a.end());
      a.erase(std::unique(a.begin(), a.end()), a.end());
      return a;
    };
    auto rename = [&](std::vector<int>& list) {  // gb -> ga in a neighbour's list
      std::replace(list.begin(), list.end(), gb, ga);
      std::sort(list.begin(), list.end());
      list.erase(std::unique(list.begin(), list.end()), list.end());
    };
    for (int p : pred_[gb])
      if (p != ga) rename(succ_[p]);
    for (int s : succ_[gb])
      if (s != ga) rename(pred_[s]);
    succ_[ga] = sorted_union(succ_[ga], succ_[gb], ga, gb);
    pred_[ga] = sorted_union(pred_[ga], pred_[gb], ga, gb);
    succ_[gb].clear();
    pred_[gb].clear();
  }

  // A topological order of the groups, kept valid through every merge: ord_[g] is group g's
  // position (dead groups keep a stale one). Node order is one at the start; merge() reorders the
  // groups between the two merged ones (Pearce and Kelly's dynamic topological order), so a search
  // for a path between two groups only visits groups positioned between them. (The node indices
  // are no such bound once groups are fused: a group {5, 100} reached from node 50 leads back to
  // node 10 through its node 5, which hrnet_w18_small's horizontally fused resize gathers did.)
  std::vector<int> ord_;
  mutable std::vector<int> mark_b_;  // merge(): the backward search's stamps

  void init_order() {
    const size_t n = groups_.size();
    ord_.resize(n);
    bool forward = true;
    for (const auto& e : edges_)
      if (e.producer > e.consumer) forward = false;
    if (forward) {
      for (size_t i = 0; i < n; ++i) ord_[i] = static_cast<int>(i);
      return;
    }
    // Some node reads what a later one writes: Kahn's order, the smallest node first.
    std::vector<std::vector<int>> succs(n);
    std::vector<int> waiting(n, 0);
    for (const auto& e : edges_)
      if (e.producer != e.consumer) succs[static_cast<size_t>(e.producer)].push_back(e.consumer), ++waiting[static_cast<size_t>(e.consumer)];
    std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
    for (size_t i = 0; i < n; ++i)
      if (!waiting[i]) ready.push(static_cast<int>(i));
    int next = 0;
    std::vector<bool> done(n, false);
    while (!ready.empty()) {
      const int v = ready.top();
      ready.pop();
      done[static_cast<size_t>(v)] = true;
      ord_[static_cast<size_t>(v)] = next++;
      for (int w : succs[static_cast<size_t>(v)])
        if (--waiting[static_cast<size_t>(w)] == 0) ready.push(w);
    }
    for (size_t i = 0; i < n; ++i)  // nodes on a cycle (no order exists; scheduling reports it)
      if (!done[i]) ord_[i] = next++;
  }

  // A path from group `from` to group `to` (ord_[from] < ord_[to]) through at least one other
  // group: the last group on it before `to`, or -1 when there is none. Fusing the two would put
  // that group both after and before the fused kernel.
  int path_through(int from, int to) const {
    if (succ_dirty_) build_successors();
    if (mark_.size() != groups_.size()) mark_.assign(groups_.size(), 0);
    const int stamp = ++stamp_;
    const int limit = ord_[static_cast<size_t>(to)];
    std::vector<int> stack = {from};
    mark_[from] = stamp;
    while (!stack.empty()) {
      const int g = stack.back();
      stack.pop_back();
      for (int b : succ_[g]) {
        if (b == to) {
          if (g != from) return g;
          continue;
        }
        // Positions are topological: a group placed after `to` cannot lead to it.
        if (ord_[static_cast<size_t>(b)] > limit || mark_[b] == stamp) continue;
        mark_[b] = stamp;
        stack.push_back(b);
      }
    }
    return -1;
  }

  std::string describe_group(int g) const {
    const std::vector<int>& nodes = groups_[static_cast<size_t>(g)].nodes;
    const LoopNode& n = p_.nodes[static_cast<size_t>(nodes.front())];
    std::string s = n.name + (n.graph_node.empty() ? std::string() : " (" + n.graph_node + ")");
    if (nodes.size() > 1)
      s = "the kernel of " + s + " and " + std::to_string(nodes.size() - 1) + " other node" + (nodes.size() > 2 ? "s" : "");
    return s;
  }

  // Before ga and gb merge (no path between them through a third group): the groups positioned
  // between them that lead to the later one move before the merged group, those the earlier one
  // leads to after it, each set in its order, into the positions they and the two held.
  void reorder_for_merge(int ga, int gb) {
    if (succ_dirty_) build_successors();
    int lo = ga, hi = gb;
    if (ord_[static_cast<size_t>(lo)] > ord_[static_cast<size_t>(hi)]) std::swap(lo, hi);
    const int olo = ord_[static_cast<size_t>(lo)], ohi = ord_[static_cast<size_t>(hi)];
    if (mark_.size() != groups_.size()) mark_.assign(groups_.size(), 0);
    if (mark_b_.size() != groups_.size()) mark_b_.assign(groups_.size(), 0);
    const int stamp = ++stamp_;
    std::vector<int> fwd, bwd, stack = {lo};
    while (!stack.empty()) {  // after lo, before hi, reached from lo
      const int g = stack.back();
      stack.pop_back();
      for (int b : succ_[g])
        if (b != hi && ord_[static_cast<size_t>(b)] < ohi && mark_[b] != stamp) {
          mark_[b] = stamp;
          fwd.push_back(b);
          stack.push_back(b);
        }
    }
    stack = {hi};
    while (!stack.empty()) {  // after lo, before hi, leading to hi
      const int g = stack.back();
      stack.pop_back();
      for (int b : pred_[g])
        if (b != lo && ord_[static_cast<size_t>(b)] > olo && mark_b_[b] != stamp) {
          if (mark_[b] == stamp) throw std::logic_error("scheduler: merging two kernels with a path between them through " + describe_group(b));
          mark_b_[b] = stamp;
          bwd.push_back(b);
          stack.push_back(b);
        }
    }
    if (fwd.empty() && bwd.empty()) return;  // nothing between them to move
    auto by_ord = [&](int a, int b) { return ord_[static_cast<size_t>(a)] < ord_[static_cast<size_t>(b)]; };
    std::sort(fwd.begin(), fwd.end(), by_ord);
    std::sort(bwd.begin(), bwd.end(), by_ord);
    std::vector<int> pool;
    pool.reserve(fwd.size() + bwd.size() + 2);
    for (int g : fwd) pool.push_back(ord_[static_cast<size_t>(g)]);
    for (int g : bwd) pool.push_back(ord_[static_cast<size_t>(g)]);
    pool.push_back(olo);
    pool.push_back(ohi);
    std::sort(pool.begin(), pool.end());
    size_t at = 0;
    for (int g : bwd) ord_[static_cast<size_t>(g)] = pool[at++];
    const int survivor = std::min(ga, gb), gone = std::max(ga, gb);
    ord_[static_cast<size_t>(survivor)] = pool[at++];
    for (int g : fwd) ord_[static_cast<size_t>(g)] = pool[at++];
    ord_[static_cast<size_t>(gone)] = pool[at++];
  }

  const LoopNode* extern_in(int g) const { return groups_[g].extern_node >= 0 ? &p_.nodes[groups_[g].extern_node] : nullptr; }

  // A node placed in a kernel of iteration (x, r), and what can_fuse reads of its accesses there:
  // both depend on the node and (x, r) alone, so fusion's many candidate pairs work them out once.
  // Only that is kept, with no heap block of its own: its indices interned (index_id), its reads
  // in one array (its Dependencies, kept per node with their buffer names and Exprs, were a third
  // of the scheduler's memory, and freeing them at its end missed the cache on every node).
  struct Placed {
    int64_t x = -1, r = 0;  // x < 0: not placed yet
    bool ok = false, inner = false;
    int rows = 0, cols = 0;  // ScheduleOptions::coalesced: its accesses whose r walks along rows, along columns
    int write = -1;          // the index of its first write (index_id; -1: it writes nothing)
    int first_read = 0, num_reads = 0;  // its reads of buffers a node writes: placed_reads_[first_read, + num_reads)
  };
  struct PlacedRead {
    int producer;  // the node that writes the buffer (producer_of)
    int buffer;    // its id
    int index;     // index_id, in the order the body reads them
  };
  // Kept by node: nearly every node is placed at one iteration only, its own, kept in one flat
  // array; a node's other placements, rare, in a deque (references to them stay valid).
  const Placed& placed(int n, int64_t x, int64_t r) const {
    Placed* slot = &placed_[static_cast<size_t>(n)];
    if (slot->x == x && slot->r == r) return *slot;
    if (slot->x >= 0) {
      std::deque<Placed>& more = more_placed_[n];
      for (const Placed& pl : more)
        if (pl.x == x && pl.r == r) return pl;
      slot = &more.emplace_back();
    }
    Placed& pl = *slot;
    pl.x = x;
    pl.r = r;
    const Placement where = place(p_.nodes[n], x, r);
    pl.ok = where.ok;
    pl.inner = where.inner;
    if (!where.ok) return pl;
    const Dependencies deps = extract_dependencies(p_.nodes[n], where.idx, where.ridx);
    if (!deps.writes.empty()) pl.write = index_id(deps.writes[0].index);
    pl.first_read = static_cast<int>(placed_reads_.size());
    for (const MemDep& rd : deps.reads) {
      const int id = read_id(n, rd.buffer);
      const int prod = id < 0 ? -1 : producer_of_id(id);
      if (prod >= 0) placed_reads_.push_back({prod, id, index_id(rd.index)});
    }
    pl.num_reads = static_cast<int>(placed_reads_.size()) - pl.first_read;
    if (opts_.coalesced)
      for (const auto* list : {&deps.reads, &deps.writes})
        for (const MemDep& m : *list) {
          if (!m.index.depends_on("r0")) continue;
          if (m.index.coefficient("r0") == 1) ++pl.rows;
          else if (m.index.coefficient("x0") == 1) ++pl.cols;
        }
    return pl;
  }
  mutable std::vector<Placed> placed_;                               // node -> its first placement asked
  mutable std::unordered_map<int, std::deque<Placed>> more_placed_;  // node -> its others
  mutable std::vector<PlacedRead> placed_reads_;

  // Index expressions interned by structure: equal ids exactly where Expr's == holds, so
  // placements compare ids (open addressing over (hash, id + 1); each distinct index kept once).
  static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ (v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2))) * 0xff51afd7ed558ccdull; }
  static uint64_t expr_hash(const Expr& e) {
    uint64_t h = mix(0, static_cast<uint64_t>(e.constant()));
    for (const Expr::Term& t : e.terms()) {  // as Expr's ==: a variable by its name, a division by its divisor and operand
      h = mix(mix(h, static_cast<uint64_t>(t.coeff)), static_cast<uint64_t>(t.atom.kind));
      if (t.atom.kind == Atom::Kind::var) h = mix(h, std::hash<std::string>{}(t.atom.var));
      else h = mix(mix(h, static_cast<uint64_t>(t.atom.k)), t.atom.inner ? expr_hash(*t.atom.inner) : 0);
    }
    return h;
  }
  int index_id(const Expr& e) const {
    if (2 * (exprs_.size() + 1) > expr_slots_.size()) {
      std::vector<std::pair<uint64_t, int>> old = std::move(expr_slots_);
      expr_slots_.assign(std::max<size_t>(64, 2 * old.size()), {0, 0});
      for (const auto& s : old)
        if (s.second) insert_slot(s);
    }
    const uint64_t h = expr_hash(e);
    const size_t mask = expr_slots_.size() - 1;
    size_t k = h & mask;
    for (; expr_slots_[k].second; k = (k + 1) & mask)
      if (expr_slots_[k].first == h && exprs_[static_cast<size_t>(expr_slots_[k].second - 1)] == e) return expr_slots_[k].second - 1;
    exprs_.push_back(e);
    expr_slots_[k] = {h, static_cast<int>(exprs_.size())};
    return static_cast<int>(exprs_.size()) - 1;
  }
  void insert_slot(const std::pair<uint64_t, int>& s) const {
    const size_t mask = expr_slots_.size() - 1;
    size_t k = s.first & mask;
    while (expr_slots_[k].second) k = (k + 1) & mask;
    expr_slots_[k] = s;
  }
  mutable std::vector<Expr> exprs_;                         // index_id -> the index
  mutable std::vector<std::pair<uint64_t, int>> expr_slots_;  // a power of two, at most half full

  FusionVerdict can_fuse(int ga, int gb) const {
    if (ga > gb) std::swap(ga, gb);
    const size_t size = groups_[ga].nodes.size() + groups_[gb].nodes.size();
    if (size > static_cast<size_t>(opts_.max_fusion_size))
      return {false, "the kernel would hold " + std::to_string(size) + " nodes, more than max_fusion_size " +
                         std::to_string(opts_.max_fusion_size) + " (as Inductor's)"};
    const Phase pa = node_phase_[static_cast<size_t>(groups_[ga].nodes[0])], pb = node_phase_[static_cast<size_t>(groups_[gb].nodes[0])];
    if (pa != pb)
      return {false, std::string(phase_name(pa)) + " and " + phase_name(pb) +
                         " are separate graphs: the later one runs afterwards, reading what the earlier one saved"};
    for (int g : {ga, gb})
      if (const LoopNode* e = extern_in(g)) {
        // A node on complex values (lower/lower.cpp): the generators have no complex type.
        std::string complex;
        for (const std::string& b : e->ext.inputs) complex = complex.empty() && dtype_is_complex(p_.buffer(b).dtype) ? b : complex;
        for (const std::string& b : e->ext.outputs) complex = complex.empty() && dtype_is_complex(p_.buffer(b).dtype) ? b : complex;
        if (!complex.empty())
          return {false, "extern kernel " + e->ext.op->name + " works on complex values (" + complex + " is " +
                             std::string(dtype_torch(p_.buffer(complex).dtype)) +
                             "): a library call or its reference kernel on the host, as Inductor's fallback kernels; generated code has no complex type"};
        return {false, "extern kernel " + e->ext.op->name + " is a library call: generated code cannot be fused into it"};
      }
    for (int g : {ga, gb})
      if (groups_[g].scatter)
        return {false, "a scatter stores through indices read from data into a buffer another kernel filled: it runs alone, "
                       "after that kernel and before the buffer's readers"};
    std::vector<int> merged;
    merged.reserve(size);
    std::merge(groups_[ga].nodes.begin(), groups_[ga].nodes.end(), groups_[gb].nodes.begin(), groups_[gb].nodes.end(),
               std::back_inserter(merged));
    const auto [xa, ra] = group_iteration(ga);
    const auto [xb, rb] = group_iteration(gb);
    const bool red_a = ra > 1 || groups_[ga].reduction >= 0, red_b = rb > 1 || groups_[gb].reduction >= 0;
    if (red_a && red_b && (xa != xb || ra != rb))
      return {false, "reductions of different shapes (" + std::to_string(xa) + " x " + std::to_string(ra) + " vs " +
                         std::to_string(xb) + " x " + std::to_string(rb) + ")"};
    if (!red_a && !red_b && xa != xb)
      return {false, "different iteration sizes (" + std::to_string(xa) + " vs " + std::to_string(xb) + ")"};
    const auto [x, r] = iteration_of(merged[0], first_of(groups_[ga].reduction, groups_[gb].reduction));
    // Every node of a group fits the group's own iteration (a single node its own; a fused group
    // the one can_fuse checked when it formed), so only a group whose iteration is not the merged
    // one has its nodes placed here. (Placing every node of both groups for every candidate pair,
    // and looking their producers up by name, was 40% of can_fuse's time in the chain of 20,000.)
    const bool a_fits = xa == x && ra == r, b_fits = xb == x && rb == r;
    for (int n : merged) {
      if (group_of_[static_cast<size_t>(n)] == ga ? a_fits : b_fits) continue;
      if (!placed(n, x, r).ok)
        return {false, "iteration size " + std::to_string(p_.nodes[n].numel()) + " of " + p_.nodes[n].name +
                           " fits neither the kernel's " + std::to_string(x) + " nor " + std::to_string(x) + " x " + std::to_string(r)};
    }
    const int64_t xm = x, rm = r;  // clang 14 captures no structured bindings
    auto where = [&](int n) { return &placed(n, xm, rm); };
    if (opts_.coalesced && r > 1) {
      // Which way each group's r loop walks memory: consecutive r adjacent (along the rows) or
      // consecutive x adjacent (along the columns).
      auto walk = [&](int g) {
        int rows = 0, cols = 0;
        for (int n : groups_[g].nodes) {
          const Placed& pl = *where(n);
          if (!pl.inner) continue;
          rows += pl.rows;
          cols += pl.cols;
        }
        return rows && !cols ? 1 : cols && !rows ? 2 : 0;
      };
      const int wa = walk(ga), wb = walk(gb);
      if (wa && wb && wa != wb)
        return {false, std::string("one reads memory along its rows, the other along its columns: fused, one of them would be read "
                                   "uncoalesced on the GPU")};
    }
    // Every value passed between the two groups must be produced in the same iteration that
    // reads it: same index in the kernel's variables, and not from a reduction still running.
    // Only a node with an edge from the other group is looked at (its edges: first_in_).
    for (const int c : merged) {
      const int gc = group_of_[static_cast<size_t>(c)];
      bool crosses = false;
      for (int e = first_in_[static_cast<size_t>(c)]; e < first_in_[static_cast<size_t>(c) + 1] && !crosses; ++e) {
        const int gp = group_of_[static_cast<size_t>(edges_[static_cast<size_t>(e)].producer)];
        crosses = gp != gc && (gp == ga || gp == gb);
      }
      if (!crosses) continue;
      const Placed& pc = placed(c, x, r);
      for (int k = pc.first_read; k < pc.first_read + pc.num_reads; ++k) {
        const PlacedRead rd = placed_reads_[static_cast<size_t>(k)];  // (a copy: placing the producer may grow the array)
        const int prod = rd.producer;
        const int gp = group_of_[static_cast<size_t>(prod)];
        if ((gp != ga && gp != gb) || gp == gc) continue;
        const LoopNode& pn = p_.nodes[prod];
        const Placed& pp = *where(prod);
        if (pp.write < 0) throw std::logic_error("scheduler: " + pn.name + " writes no buffer");
        const std::string& buffer = buffer_ids_.name(rd.buffer);
        if (pp.write != rd.index)
          return {false, p_.nodes[c].name + " reads " + buffer + " at " + exprs_[static_cast<size_t>(rd.index)].str() + " but " +
                             pn.name + " writes it at " + exprs_[static_cast<size_t>(pp.write)].str() +
                             ": values from other iterations are needed"};
        if (pp.inner && !pc.inner && node_kind_[static_cast<size_t>(prod)] == LoopNode::Kind::pointwise)
          return {false, p_.nodes[c].name + " iterates " + std::to_string(x) + " but reads " + buffer +
                             ", which has one value per reduction element"};
      }
    }
    {
      int from = ga, to = gb;
      if (ord_[static_cast<size_t>(from)] > ord_[static_cast<size_t>(to)]) std::swap(from, to);
      const int via = path_through(from, to);
      if (via >= 0) return {false, "fusing would create a cycle through " + describe_group(via)};
    }
    return {true, "fused"};
  }

  // Kernels in an order that respects every dependency (fusion never creates a cycle), the
  // earliest first node first among those ready (a heap of the ready ones: picking by a scan of
  // all kernels each time was quadratic in the kernels).
  void order_topologically(std::vector<Kernel>& ks) const {
    std::vector<int> kernel_of(p_.nodes.size(), -1);
    for (size_t k = 0; k < ks.size(); ++k)
      for (int n : ks[k].nodes) kernel_of[static_cast<size_t>(n)] = static_cast<int>(k);
    std::vector<std::vector<int>> succs(ks.size());
    for (const auto& e : edges_) {
      const int a = kernel_of[static_cast<size_t>(e.producer)], b = kernel_of[static_cast<size_t>(e.consumer)];
      if (a != b) succs[static_cast<size_t>(a)].push_back(b);
    }
    std::vector<int> waiting(ks.size(), 0);  // unfinished predecessors, each counted once
    for (auto& s : succs) {
      std::sort(s.begin(), s.end());
      s.erase(std::unique(s.begin(), s.end()), s.end());
      for (int b : s) ++waiting[static_cast<size_t>(b)];
    }
    using Ready = std::pair<int, int>;  // (first node, kernel): the smallest first node on top
    std::priority_queue<Ready, std::vector<Ready>, std::greater<Ready>> ready;
    for (size_t k = 0; k < ks.size(); ++k)
      if (!waiting[k]) ready.push({ks[k].nodes[0], static_cast<int>(k)});
    std::vector<Kernel> out;
    out.reserve(ks.size());
    while (!ready.empty()) {
      const int k = ready.top().second;
      ready.pop();
      out.push_back(std::move(ks[static_cast<size_t>(k)]));
      for (int b : succs[static_cast<size_t>(k)])
        if (--waiting[static_cast<size_t>(b)] == 0) ready.push({ks[static_cast<size_t>(b)].nodes[0], b});
    }
    if (out.size() < ks.size()) throw std::logic_error("scheduler: the kernels depend on each other in a cycle");
    ks = std::move(out);
  }

  // A pointwise kernel right after a matrix multiply (mm, addmm) that reads the product at the
  // index it is written, element for element, and writes nothing the multiply reads, is the
  // multiply's epilogue: it can run on each block of the product's rows right after the library
  // computed it, while the block is in cache, instead of reading the whole product back from
  // memory (a linear layer's GELU: 8 MB less traffic each way at 2048x1024).
  void mark_gemm_epilogues(std::vector<Kernel>& ks) const {
    for (size_t k = 1; k < ks.size(); ++k) {
      Kernel& e = ks[k];
      const Kernel& g = ks[k - 1];
      if (!g.is_extern || e.is_extern || e.rnumel != 1 || !e.nests.empty() || e.phase != g.phase || scatters(e.nodes)) continue;
      const ExternCall& c = p_.nodes[g.nodes.at(0)].ext;
      if (!op::is_gemm(c.op) || c.outputs.size() != 1) continue;
      const LoopBuffer& product = p_.buffer(c.outputs[0]);
      if (product.shape.size() != 2 || product.dtype != DType::f32 || numel_of(product.shape) != e.numel) continue;
      const Expr flat = Expr::var("x0", e.numel);
      bool reads_product = false, element_wise = true;
      for (int n : e.nodes) {
        const Placement pl = place(p_.nodes[n], e.numel, 1);
        if (!pl.ok) element_wise = false;
        const Dependencies d = extract_dependencies(p_.nodes[n], pl.idx, pl.ridx);
        for (const MemDep& m : d.reads)
          if (m.buffer == c.outputs[0]) {
            reads_product = true;
            element_wise = element_wise && m.index == flat;
          }
        for (const MemDep& m : d.writes)
          if (std::count(c.inputs.begin(), c.inputs.end(), m.buffer) || m.buffer == c.outputs[0]) element_wise = false;
      }
      e.epilogue = reads_product && element_wise;
    }
  }

  // Consecutive generated kernels that share a buffer become one kernel of several loop nests.
  // They are adjacent in a valid order, so grouping them creates no cycle; a buffer one nest
  // writes and a later one reads stays in memory (written, not read, by the group).
  // An epilogue stays a kernel of its own (its rows form runs inside the multiply).
  void group_loop_nests(std::vector<Kernel>& ks) const {
    std::vector<Kernel> out;
    for (Kernel& k : ks) {
      if (!out.empty() && !k.is_extern && !out.back().is_extern && !out.back().epilogue && out.back().phase == k.phase &&
          !scatters(k.nodes) && !scatters(out.back().nodes) &&
          static_cast<int>(out.back().loop_nests().size()) < opts_.max_loop_nests && share_buffers(out.back(), k)) {
        Kernel& g = out.back();
        if (g.nests.empty()) g.nests = g.loop_nests();
        g.nests.push_back({k.nodes, k.numel, k.rnumel});
        g.nodes.insert(g.nodes.end(), k.nodes.begin(), k.nodes.end());
        // Each list in name order, once, its reads without what it writes (sorted vectors: std::sets
        // of the strings were rebuilt from the whole kernel's lists at every nest added).
        // (The group's lists are sorted after its first nest added; the kernel's are merged in, not
        // the whole list sorted again at every nest.)
        auto sorted_names = [](std::vector<std::string> a, const std::vector<std::string>& b) {
          if (!std::is_sorted(a.begin(), a.end())) std::sort(a.begin(), a.end());
          std::vector<std::string> add(b);
          if (!std::is_sorted(add.begin(), add.end())) std::sort(add.begin(), add.end());
          std::vector<std::string> u;
          u.reserve(a.size() + add.size());
          std::merge(std::make_move_iterator(a.begin()), std::make_move_iterator(a.end()), std::make_move_iterator(add.begin()),
                     std::make_move_iterator(add.end()), std::back_inserter(u));
          u.erase(std::unique(u.begin(), u.end()), u.end());
          return u;
        };
        g.writes = sorted_names(std::move(g.writes), k.writes);
        std::vector<std::string> reads = sorted_names(std::move(g.reads), k.reads);
        g.reads.clear();
        std::set_difference(reads.begin(), reads.end(), g.writes.begin(), g.writes.end(), std::back_inserter(g.reads));
        g.origins = sorted_names(std::move(g.origins), k.origins);
        g.removed.insert(g.removed.end(), k.removed.begin(), k.removed.end());
        continue;
      }
      out.push_back(std::move(k));
    }
    ks = std::move(out);
  }

  static bool share_buffers(const Kernel& a, const Kernel& b) {
    for (const auto& r : b.reads)
      if (std::count(a.reads.begin(), a.reads.end(), r) || std::count(a.writes.begin(), a.writes.end(), r)) return true;
    return false;
  }

  bool scatters(const std::vector<int>& nodes) const {
    return std::any_of(nodes.begin(), nodes.end(), [&](int n) { return p_.nodes[n].kind == LoopNode::Kind::scatter; });
  }

  bool has_reduction(const std::vector<int>& nodes) const {
    return std::any_of(nodes.begin(), nodes.end(), [&](int n) { return p_.nodes[n].kind == LoopNode::Kind::reduction; });
  }

  void merge(int ga, int gb) {
    if (ga > gb) std::swap(ga, gb);
    reorder_for_merge(ga, gb);
    for (int n : groups_[gb].nodes) group_of_[n] = ga;
    std::vector<int>& na = groups_[ga].nodes;  // both sorted: merged in one pass
    const auto mid = static_cast<std::ptrdiff_t>(na.size());
    na.insert(na.end(), groups_[gb].nodes.begin(), groups_[gb].nodes.end());
    std::inplace_merge(na.begin(), na.begin() + mid, na.end());
    groups_[ga].reduction = first_of(groups_[ga].reduction, groups_[gb].reduction);
    groups_[ga].extern_node = first_of(groups_[ga].extern_node, groups_[gb].extern_node);
    groups_[ga].scatter = groups_[ga].scatter || groups_[gb].scatter;
    groups_[gb].alive = false;
    group_size_[static_cast<size_t>(ga)] += group_size_[static_cast<size_t>(gb)];
    group_size_[static_cast<size_t>(gb)] = 0;
    groups_[gb].nodes.clear();
    merge_edges(ga, gb);
    GroupBuffers& a = group_buffers_[static_cast<size_t>(ga)];
    GroupBuffers& b = group_buffers_[static_cast<size_t>(gb)];
    if (a.known && b.known) {
      a.writes = sorted_union(a.writes, b.writes);
      a.reads = sorted_union(a.reads, b.reads);
    } else {
      a = GroupBuffers{};
    }
    b = GroupBuffers{};
  }

  // can_fuse's first refusal: the two groups hold more nodes than one kernel may. Groups only grow,
  // so a pair refused so at the start of a round is refused all round: such pairs are not made
  // candidates at all (their shared bytes worked out and sorted only to be skipped; in the later
  // rounds, most of them).
  bool too_large(int a, int b) const {
    return group_size_[static_cast<size_t>(a)] + group_size_[static_cast<size_t>(b)] > opts_.max_fusion_size;
  }
  // Each group's node count, 0 once merged into another: what the rounds ask of every candidate
  // (alive, too_large), in one array of ints rather than in the groups themselves.
  std::vector<int> group_size_;

  struct Cand {
    int a, b;
    int64_t bytes;
    int distance;
    int order;  // its place in the list as made: the ties' order
  };
  // Bytes saved first (most first), then distance, ties in the order made (std::stable_sort's
  // order) by counting: each candidate's slot is the rank of its bytes among the round's distinct
  // values and its distance, and one stable pass puts every candidate in its slot (a linear pass
  // where the slots are few: the stable sort of the wide graph's million candidates a round was
  // the stage's largest n log n step). Where there would be more slots than candidates, the sort.
  static void sort_candidates(std::vector<Cand>& cands) {
    const size_t n = cands.size();
    if (n < 2) return;
    std::vector<int64_t> values;  // the distinct byte counts, most first
    {
      std::unordered_set<int64_t> seen;
      int64_t last = cands[0].bytes;
      seen.insert(last);
      values.push_back(last);
      for (const Cand& c : cands)
        if (c.bytes != last && seen.insert(last = c.bytes).second) values.push_back(c.bytes);
    }
    std::sort(values.begin(), values.end(), std::greater<int64_t>());
    int max_distance = 0;
    for (const Cand& c : cands) max_distance = std::max(max_distance, c.distance);
    const size_t per_rank = static_cast<size_t>(max_distance) + 1;
    if (values.size() > n / per_rank) {  // (values.size() x per_rank slots > n)
      std::stable_sort(cands.begin(), cands.end(), [](const Cand& x, const Cand& y) {
        return x.bytes != y.bytes ? x.bytes > y.bytes : x.distance < y.distance;
      });
      return;
    }
    std::vector<uint32_t> slot(n);
    std::vector<size_t> start(values.size() * per_rank + 1, 0);
    {
      int64_t last = values[0];
      size_t rank = 0;
      for (size_t i = 0; i < n; ++i) {
        const Cand& c = cands[i];
        if (c.bytes != last) {
          last = c.bytes;
          rank = static_cast<size_t>(std::lower_bound(values.begin(), values.end(), last, std::greater<int64_t>()) - values.begin());
        }
        slot[i] = static_cast<uint32_t>(rank * per_rank + static_cast<size_t>(c.distance));
        ++start[slot[i] + 1];
      }
    }
    for (size_t s = 1; s < start.size(); ++s) start[s] += start[s - 1];
    std::vector<Cand> sorted(n);
    for (size_t i = 0; i < n; ++i) sorted[start[slot[i]]++] = cands[i];
    cands.swap(sorted);
  }

  // Greedy fusion by score, as Inductor's scheduler: bytes saved first, then graph distance.
  void fuse() {
    for (int round = 0; round < 64; ++round) {
      std::vector<Cand> cands;
      cands.reserve(edges_.size());
      PairSet seen(edges_.size());  // group pairs (a < b) already candidates through an edge
      for (const auto& e : edges_) {
        int a = group_of_[e.producer], b = group_of_[e.consumer];
        if (a == b) continue;
        if (a > b) std::swap(a, b);
        if (!seen.insert(PairSet::key(a, b)) || too_large(a, b)) continue;
        cands.push_back({a, b, shared_bytes(a, b), std::abs(e.consumer - e.producer), static_cast<int>(cands.size())});
      }
      // Horizontal candidates: groups that read the same buffer, found through the buffers read by
      // more than one node (shared_readers_, listed once; a group reads what its nodes read). (Every
      // group's reads counted out by buffer at every round walked the whole graph again, to find none
      // in a chain.)
      // Each reader is paired with the next kMaxHorizontalPartners readers only, in group order, as
      // Inductor bounds its pairwise attempts (max_fusion_buffer_group_pairwise_attempts = 64):
      // a buffer read by thousands of branches would otherwise make every pair a candidate.
      std::vector<std::pair<int, int>> horizontal;
      std::vector<int> gs;
      int giving = 0;  // buffers that gave pairs: one gives them in order, once each
      for (size_t sb = 0; sb + 1 < shared_first_.size(); ++sb) {
        const size_t before = horizontal.size();
        gs.clear();
        for (int k = shared_first_[sb]; k < shared_first_[sb + 1]; ++k) gs.push_back(group_of_[static_cast<size_t>(shared_readers_[static_cast<size_t>(k)])]);
        std::sort(gs.begin(), gs.end());
        gs.erase(std::unique(gs.begin(), gs.end()), gs.end());
        const size_t count = gs.size();
        for (size_t i = 0; i < count; ++i)
          for (size_t j = i + 1; j < count && j <= i + kMaxHorizontalPartners; ++j)
            if (!too_large(gs[i], gs[j]) && !seen.contains(PairSet::key(gs[i], gs[j]))) horizontal.push_back({gs[i], gs[j]});
        giving += horizontal.size() > before;
      }
      if (giving > 1) {
        std::sort(horizontal.begin(), horizontal.end());
        horizontal.erase(std::unique(horizontal.begin(), horizontal.end()), horizontal.end());
      }
      cands.reserve(cands.size() + horizontal.size());
      for (const auto& [a, b] : horizontal) {
        const int64_t bytes = shared_bytes(a, b);
        if (bytes > 0) cands.push_back({a, b, bytes, b - a, static_cast<int>(cands.size())});
      }
      sort_candidates(cands);
      bool merged = false;
      for (const Cand& c : cands) {
        if (!group_size_[static_cast<size_t>(c.a)] || !group_size_[static_cast<size_t>(c.b)]) continue;
        // can_fuse's first refusal, without writing its reason: most candidates of the later
        // rounds meet it, and only the final edges' verdicts are shown.
        if (too_large(c.a, c.b)) continue;
        if (can_fuse(c.a, c.b).ok) {
          merge(c.a, c.b);
          merged = true;
        }
      }
      if (!merged) return;
    }
  }

  // Buffers as numbers (ids into buffer_ids_), so fusion's candidate search compares integers.
  int buffer_id(const std::string& name) { return buffer_ids_.add(name).first; }
  BufferIds buffer_ids_;
  std::vector<int> producer_by_id_;              // id -> the first node writing it, -1 for none
  void set_producer(int id, int node) {
    if (producer_by_id_.size() <= static_cast<size_t>(id)) producer_by_id_.resize(static_cast<size_t>(id) + 1, -1);
    if (producer_by_id_[static_cast<size_t>(id)] < 0) producer_by_id_[static_cast<size_t>(id)] = node;
  }
  int producer_of_id(int id) const {
    return static_cast<size_t>(id) < producer_by_id_.size() ? producer_by_id_[static_cast<size_t>(id)] : -1;
  }
  // The producer of a buffer node n reads: found among the node's own reads (a few ids, their names
  // compared), not hashed again for every placement.
  // The id of a buffer node n reads (-1: none).
  int read_id(int n, const std::string& buffer) const {
    for (int id : node_read_ids_[static_cast<size_t>(n)])
      if (buffer_ids_.name(id) == buffer) return id;
    return buffer_ids_.find(buffer);
  }
  // LoopProgram::producer without its shared index: every buffer a node reads or writes has an id.
  int producer_of(const std::string& buffer) const {
    const int id = buffer_ids_.find(buffer);
    return id < 0 ? -1 : producer_of_id(id);
  }
  mutable std::vector<const LoopBuffer*> buffer_by_id_;  // id -> its LoopBuffer (nullptr: none, asked by name)
  const LoopBuffer& buffer_of(int id) const {
    const LoopBuffer*& b = buffer_by_id_[static_cast<size_t>(id)];
    if (!b) b = &p_.buffer(buffer_ids_.name(id));
    return *b;
  }
  std::vector<int> node_write_id_;               // node -> its buffer's id
  std::vector<std::vector<int>> node_read_ids_;  // node -> the ids it reads, sorted, once each
  mutable std::vector<int64_t> buffer_bytes_;    // id -> bytes, -1 until asked

  int64_t bytes_of(int id) const {
    int64_t& b = buffer_bytes_[static_cast<size_t>(id)];
    if (b < 0) b = buffer_of(id).bytes();
    return b;
  }

  // The buffers a group writes and reads (ids, sorted), worked out once a group (fusion's
  // candidates ask for them pair by pair) and merged with the groups.
  struct GroupBuffers {
    std::vector<int> writes, reads;
    bool known = false;
  };
  static std::vector<int> sorted_union(const std::vector<int>& a, const std::vector<int>& b) {
    std::vector<int> u;
    u.reserve(a.size() + b.size());
    std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(u));
    return u;
  }
  const GroupBuffers& buffers_of(int g) const {
    GroupBuffers& b = group_buffers_.at(static_cast<size_t>(g));
    if (!b.known) {
      for (int n : groups_[g].nodes) {
        b.writes.push_back(node_write_id_[static_cast<size_t>(n)]);
        b.reads.insert(b.reads.end(), node_read_ids_[static_cast<size_t>(n)].begin(), node_read_ids_[static_cast<size_t>(n)].end());
      }
      for (auto* v : {&b.writes, &b.reads}) {
        std::sort(v->begin(), v->end());
        v->erase(std::unique(v->begin(), v->end()), v->end());
      }
      b.known = true;
    }
    return b;
  }
  mutable std::vector<GroupBuffers> group_buffers_;

  int64_t shared_bytes(int a, int b) const {
    // Two single nodes (every group of the first round): their own lists, sorted already, instead
    // of a pair of heap vectors built per group (a round over the wide graph's readers asks for a
    // million such pairs).
    if (group_size_[static_cast<size_t>(a)] == 1 && group_size_[static_cast<size_t>(b)] == 1) {
      const int na = groups_[a].nodes[0], nb = groups_[b].nodes[0];
      const int wa = node_write_id_[static_cast<size_t>(na)];
      const std::vector<int>& ra = node_read_ids_[static_cast<size_t>(na)];
      int64_t bytes = 0;
      for (int buf : node_read_ids_[static_cast<size_t>(nb)])
        if (buf == wa || std::binary_search(ra.begin(), ra.end(), buf)) bytes += bytes_of(buf);
      return bytes;
    }
    const GroupBuffers& ga = buffers_of(a);
    int64_t bytes = 0;
    for (int buf : buffers_of(b).reads)
      if (std::binary_search(ga.writes.begin(), ga.writes.end(), buf) || std::binary_search(ga.reads.begin(), ga.reads.end(), buf))
        bytes += bytes_of(buf);
    return bytes;
  }

  Kernel make_kernel(const Group& g, size_t) const {
    Kernel k;
    k.nodes = g.nodes;
    k.phase = p_.nodes[g.nodes[0]].phase;
    if (g.nodes.size() == 1 && p_.nodes[g.nodes[0]].kind == LoopNode::Kind::extern_kernel) {
      const LoopNode& n = p_.nodes[g.nodes[0]];
      k.is_extern = true;
      k.numel = n.numel();
      k.reads = n.ext.inputs;
      k.writes = n.ext.outputs;
      k.origins = n.origins;
      return k;
    }
    std::tie(k.numel, k.rnumel) = iteration(g.nodes);
    // The buffers it reads that it does not write, and its origins, each in name order once:
    // sorted vectors (std::sets of strings were a heap block per name, per kernel).
    std::vector<std::string_view> written, reads, origins;
    for (int n : g.nodes) written.push_back(p_.nodes[n].buffer);
    std::sort(written.begin(), written.end());
    for (int n : g.nodes) {
      for (int id : node_read_ids_[static_cast<size_t>(n)])
        if (!std::binary_search(written.begin(), written.end(), std::string_view(buffer_ids_.name(id)))) reads.push_back(buffer_ids_.name(id));
      for (const auto& o : p_.nodes[n].origins) origins.push_back(o);
    }
    for (auto* names : {&reads, &origins}) {
      std::sort(names->begin(), names->end());
      names->erase(std::unique(names->begin(), names->end()), names->end());
    }
    k.reads.assign(reads.begin(), reads.end());
    std::vector<KernelLoop> loops;  // the kernel's loops, worked out on first need
    for (int n : g.nodes) {
      const std::string& buf = p_.nodes[n].buffer;
      // (a scatter's buffer is in memory: the kernel that filled it wrote it there)
      bool outside = buffer_of(node_write_id_[static_cast<size_t>(n)]).is_output || p_.nodes[n].kind == LoopNode::Kind::scatter;
      for (int k_out = first_out_[static_cast<size_t>(n)]; k_out < first_out_[static_cast<size_t>(n) + 1]; ++k_out) {
        const Edge& e = edges_[static_cast<size_t>(out_edges_[static_cast<size_t>(k_out)])];
        if (group_of_[e.consumer] != group_of_[n]) outside = true;
        // A value read by a later inner loop of this kernel also needs memory (registers do not
        // survive from one loop to the next).
        else if (!outside && p_.nodes[e.producer].kind != LoopNode::Kind::reduction) {
          if (loops.empty()) loops = kernel_loops(p_, k.nodes, k.numel, k.rnumel);
          outside = needs_memory_within(e.producer, e.consumer, loops);
        }
      }
      (outside ? k.writes : k.removed).push_back(buf);
    }
    k.origins.assign(origins.begin(), origins.end());
    return k;
  }

  // Both in r loops, but not the same one: registers do not carry the value across. (A finished
  // reduction is a value of the x iteration that every later loop sees: the caller skips those.)
  static bool needs_memory_within(int prod, int cons, const std::vector<KernelLoop>& loops) {
    bool prod_inner = false;
    for (const KernelLoop& l : loops)
      if (l.inner && std::count(l.nodes.begin(), l.nodes.end(), prod)) prod_inner = true;
    if (!prod_inner) return false;  // an outer value: in a register for the whole x iteration
    for (const KernelLoop& l : loops)
      if (l.inner && std::count(l.nodes.begin(), l.nodes.end(), cons) && !std::count(l.nodes.begin(), l.nodes.end(), prod))
        return true;
    return false;
  }

  void rename(Kernel& k, size_t index) const {
    if (k.is_extern) {
      k.name = "extern_" + std::string(p_.nodes[k.nodes[0]].ext.op->base_name()) + "_" + std::to_string(index);
      return;
    }
    std::set<std::string> names;
    for (const auto& o : k.origins) {
      std::string base = o;
      while (!base.empty() && (std::isdigit(static_cast<unsigned char>(base.back())) || base.back() == '_')) base.pop_back();
      if (!base.empty()) names.insert(base);
    }
    k.name = opts_.prefix + "_fused";
    int count = 0;
    for (const auto& n : names) {
      if (++count > 6) break;
      k.name += "_" + n;
    }
    k.name += "_" + std::to_string(index);
  }

  void plan_memory(Schedule& s) const {
    // Unfused: every node's buffer lives from its node to its last reader. Steps of `steps(k)`
    // nodes each; buffers by id (skip: those never materialised).
    auto peak = [&](size_t count, const auto& steps, const std::vector<bool>& skip) {
      std::vector<int> last(buffer_ids_.size(), 0);  // id -> the last step reading it (0 when none does)
      for (size_t k = 0; k < count; ++k)
        for (int n : steps(k))
          for (int id : node_read_ids_[static_cast<size_t>(n)]) last[static_cast<size_t>(id)] = static_cast<int>(k);
      int64_t live = 0, best = 0;
      for (const auto& b : p_.buffers)
        if (b.is_input) live += b.bytes();
      best = live;
      for (size_t k = 0; k < count; ++k) {
        for (int n : steps(k)) {
          const int id = node_write_id_[static_cast<size_t>(n)];
          if (!skip[static_cast<size_t>(id)] && p_.nodes[n].kind != LoopNode::Kind::scatter) live += bytes_of(id);  // (a scatter's is live)
        }
        best = std::max(best, live);
        for (int n : steps(k)) {
          const int id = node_write_id_[static_cast<size_t>(n)];
          if (!skip[static_cast<size_t>(id)] && !buffer_of(id).is_output && last[static_cast<size_t>(id)] <= static_cast<int>(k))
            live -= bytes_of(id);
        }
      }
      return best;
    };
    s.memory.peak_bytes_unfused = peak(
        p_.nodes.size(), [](size_t k) { return std::array<int, 1>{static_cast<int>(k)}; }, std::vector<bool>(buffer_ids_.size(), false));
    // Removed buffers by id (every buffer a kernel removes is a node's: it has one), and by name.
    std::vector<bool> removed_id(buffer_ids_.size(), false);
    for (const Kernel& k : s.kernels)
      for (const auto& r : k.removed) {
        const int id = buffer_ids_.find(r);
        if (id >= 0) removed_id[static_cast<size_t>(id)] = true;
        s.memory.removed.push_back(r);
      }
    std::sort(s.memory.removed.begin(), s.memory.removed.end());
    s.memory.removed.erase(std::unique(s.memory.removed.begin(), s.memory.removed.end()), s.memory.removed.end());
    s.memory.peak_bytes = peak(
        s.kernels.size(), [&](size_t k) -> const std::vector<int>& { return s.kernels[k].nodes; }, removed_id);
    // Reuse: a materialised intermediate may take the memory of one that died in an earlier kernel.
    // Last uses by buffer id (a map by name was a fifth of the memory plan's time at 20,000 nodes).
    std::vector<int> last(buffer_ids_.size(), -1);
    for (size_t k = 0; k < s.kernels.size(); ++k)
      for (int n : s.kernels[k].nodes)
        for (int id : node_read_ids_[static_cast<size_t>(n)]) last[static_cast<size_t>(id)] = static_cast<int>(k);
    // The buffers that die in each kernel, in name order, and the free memory as a queue per size:
    // a write takes the first freed buffer of its size. (Scanning every buffer's last use at every
    // kernel, and the free list at every write, was quadratic.)
    std::vector<std::vector<int>> dies_in(s.kernels.size());
    for (size_t id = 0; id < last.size(); ++id)
      if (last[id] >= 0) dies_in[static_cast<size_t>(last[id])].push_back(static_cast<int>(id));
    auto by_name = [&](int a, int b) { return buffer_ids_.name(a) < buffer_ids_.name(b); };
    for (auto& ids : dies_in) std::sort(ids.begin(), ids.end(), by_name);
    std::map<int64_t, std::deque<int>> free_by_size;
    for (size_t k = 0; k < s.kernels.size(); ++k) {
      for (const auto& w : s.kernels[k].writes) {
        const int wid = buffer_ids_.find(w);  // (by id: LoopProgram::buffer would build its name index)
        const LoopBuffer& b = wid >= 0 ? buffer_of(wid) : p_.buffer(w);
        if (b.is_output || scatters(s.kernels[k].nodes)) continue;  // (a scatter writes a buffer placed already)
        auto it = free_by_size.find(b.bytes());
        if (it == free_by_size.end() || it->second.empty()) continue;
        s.memory.reuses.emplace_back(w, buffer_ids_.name(it->second.front()));
        it->second.pop_front();
      }
      for (const int id : dies_in[k])
        if (producer_of_id(id) >= 0 && !buffer_of(id).is_output && !removed_id[static_cast<size_t>(id)])
          free_by_size[bytes_of(id)].push_back(id);
    }
  }

  const LoopProgram& p_;
  ScheduleOptions opts_;
  std::vector<Group> groups_;
  std::vector<int> group_of_;
  std::vector<Edge> edges_;
};

}  // namespace

namespace {
// place(n, numel, rnumel).inner, without building the indices.
bool runs_inner(const LoopNode& n, int64_t numel, int64_t rnumel) {
  if (numel <= 0 || rnumel <= 0) return place(n, numel, rnumel).inner;  // (which refuses the empty range)
  if (n.kind == LoopNode::Kind::reduction) return n.numel() == numel && n.rnumel() == rnumel;
  return rnumel > 1 && n.numel() == numel * rnumel;
}
}  // namespace

std::vector<KernelLoop> kernel_loops(const LoopProgram& p, const std::vector<int>& nodes, int64_t numel, int64_t rnumel) {
  std::vector<KernelLoop> loops;
  std::set<std::string> reduced_in_current;
  std::map<std::string, int> inner_pointwise;  // buffer -> the pointwise r-loop node computing it
  // x nodes met while an r loop is open wait until it closes (they run after it), so that an r
  // node after them that reads neither them nor a reduction of the loop joins it: a LayerNorm
  // backward's bias sums, their casts, then the residual's gradient and its own sum are one loop,
  // not two (one loop can be split over many blocks; two ran on 16 blocks, 0.30 ms of the bf16
  // transformer block's 0.89 ms training step).
  std::vector<int> waiting;
  std::set<std::string> written_waiting;
  auto flush = [&] {
    if (waiting.empty()) return;
    loops.push_back({false, waiting, {}});
    waiting.clear();
    written_waiting.clear();
  };
  for (int n : nodes) {
    const bool inner = runs_inner(p.nodes[n], numel, rnumel);
    if (!inner && !loops.empty() && loops.back().inner) {
      waiting.push_back(n);
      written_waiting.insert(p.nodes[n].buffer);
      continue;
    }
    bool needs_new = loops.empty() || loops.back().inner != inner;
    if (inner && !needs_new)
      for (const auto& d : extract_dependencies(p.nodes[n]).reads)
        if (reduced_in_current.count(d.buffer) || written_waiting.count(d.buffer)) needs_new = true;
    if (needs_new) {
      flush();
      loops.push_back({inner, {}, {}});
      reduced_in_current.clear();
    }
    loops.back().nodes.push_back(n);
    if (p.nodes[n].kind == LoopNode::Kind::reduction) reduced_in_current.insert(p.nodes[n].buffer);
    else if (inner) inner_pointwise[p.nodes[n].buffer] = n;
  }
  flush();
  // A pointwise value an r loop reads from an earlier r loop is recomputed there from what that
  // loop read (as Inductor's loop bodies do), instead of going through memory: a softmax reads
  // its input twice and writes only its result.
  for (KernelLoop& l : loops) {
    if (!l.inner) continue;
    std::set<int> have(l.nodes.begin(), l.nodes.end()), add;
    std::function<void(int)> need = [&](int n) {
      for (const auto& d : extract_dependencies(p.nodes[n]).reads) {
        auto it = inner_pointwise.find(d.buffer);
        if (it == inner_pointwise.end() || have.count(it->second) || it->second > n) continue;
        have.insert(it->second);
        add.insert(it->second);
        need(it->second);
      }
    };
    for (int n : std::vector<int>(l.nodes)) need(n);
    if (add.empty()) continue;
    l.recomputed = add;
    l.nodes.insert(l.nodes.begin(), add.begin(), add.end());  // node order is topological
  }
  return loops;
}

Placement place(const LoopNode& n, int64_t numel, int64_t rnumel) {
  Placement pl;
  const Expr x = Expr::var("x0", numel), r = Expr::var("r0", rnumel);
  if (n.kind == LoopNode::Kind::reduction) {
    if (n.numel() != numel || n.rnumel() != rnumel) return pl;
    pl.ok = pl.inner = true;
    pl.idx = unflatten(x, n.ranges);
    pl.ridx = unflatten(r, n.reduction_ranges);
    return pl;
  }
  if (rnumel > 1 && n.numel() == numel * rnumel) {
    pl.ok = pl.inner = true;
    pl.idx = unflatten(x * rnumel + r, n.ranges);
    return pl;
  }
  if (n.numel() == numel) {
    pl.ok = true;
    pl.idx = unflatten(x, n.ranges);
    return pl;
  }
  return pl;
}

std::vector<LoopNest> Kernel::loop_nests() const {
  if (!nests.empty()) return nests;
  return {LoopNest{nodes, numel, rnumel}};
}

int Schedule::kernel_of(int node) const {
  for (size_t k = 0; k < kernels.size(); ++k)
    if (std::count(kernels[k].nodes.begin(), kernels[k].nodes.end(), node)) return static_cast<int>(k);
  return -1;
}

Schedule schedule(const LoopProgram& p, const ScheduleOptions& opts) { return Scheduler(p, opts).run(); }

namespace {
// Each loop node's kernel, for look-ups per edge.
std::vector<int> kernels_of_nodes(const LoopProgram& p, const Schedule& s) {
  std::vector<int> k_of(p.nodes.size(), -1);
  for (size_t k = 0; k < s.kernels.size(); ++k)
    for (int n : s.kernels[k].nodes) k_of.at(static_cast<size_t>(n)) = static_cast<int>(k);
  return k_of;
}

// An edge from a matrix multiply into the epilogue kernel right after it.
bool runs_as_epilogue(const Schedule& s, const std::vector<int>& kernel_of, const EdgeDecision& e) {
  const int kc = kernel_of.at(static_cast<size_t>(e.consumer)), kp = kernel_of.at(static_cast<size_t>(e.producer));
  return kc > 0 && kp == kc - 1 && s.kernels[static_cast<size_t>(kc)].epilogue;
}
}  // namespace

std::string print_schedule(const LoopProgram& p, const Schedule& s) {
  std::ostringstream os;
  for (const Kernel& k : s.kernels) {
    if (k.is_extern) {
      os << k.name << ": ExternKernelSchedulerNode\n  " << print_loop_node(p, p.nodes[k.nodes[0]]) << '\n';
      continue;
    }
    os << k.name << ": FusedSchedulerNode(" << k.nodes.size() << " nodes), iteration = (" << k.numel << ", " << k.rnumel << ")";
    if (k.epilogue) os << ", epilogue of the matrix multiply before it (runs inside it: on the CPU on its blocks of rows, on CUDA in its GEMM template where max-autotune writes one)";
    if (k.nests.size() > 1) {
      os << ", " << k.nests.size() << " loop nests:";
      for (const LoopNest& n : k.nests) os << " (" << n.numel << ", " << n.rnumel << ")";
    }
    os << "\n";
    os << "  reads  = [";
    for (size_t i = 0; i < k.reads.size(); ++i) os << (i ? ", " : "") << k.reads[i];
    os << "]\n  writes = [";
    for (size_t i = 0; i < k.writes.size(); ++i) os << (i ? ", " : "") << k.writes[i];
    os << "]\n  in registers only = [";
    for (size_t i = 0; i < k.removed.size(); ++i) os << (i ? ", " : "") << k.removed[i];
    os << "]\n";
    for (int n : k.nodes) {  // each line of the node's text, indented
      const std::string body = print_loop_node(p, p.nodes[n]);
      for (size_t at = 0; at < body.size();) {
        const size_t end = std::min(body.find('\n', at), body.size());
        os << "  ";
        os.write(body.data() + at, static_cast<std::streamsize>(end - at));
        os << '\n';
        at = end + 1;
      }
    }
    os << '\n';
  }
  os << "# Fusion decisions (producer -> consumer: verdict)\n";
  const std::vector<int> kernel_of = kernels_of_nodes(p, s);
  for (const EdgeDecision& e : s.edges)
    os << p.nodes[e.producer].name << " -> " << p.nodes[e.consumer].name << " via " << e.buffer << ": "
       << (e.verdict.ok ? "fused" : "not fused: " + e.verdict.reason) << (runs_as_epilogue(s, kernel_of, e) ? "; runs as its epilogue" : "")
       << '\n';
  os << "\n# Memory plan\npeak memory, one kernel per node: " << fmt_bytes(s.memory.peak_bytes_unfused)
     << "\npeak memory, after fusion: " << fmt_bytes(s.memory.peak_bytes) << "\nremoved buffers:";
  for (const auto& r : s.memory.removed) os << ' ' << r;
  os << "\nreused buffers:";
  for (const auto& [a, b] : s.memory.reuses) os << ' ' << a << " <- " << b;
  os << '\n';
  return os.str();
}

namespace {

// A schedule too big for Graphviz to lay out with a cluster per kernel (MobileNetV3-Small's
// training step: 1,154 loop nodes in 241 kernels, on which dot gives up after minutes): a box per
// kernel, an edge per buffer one kernel writes and a later one reads. Inputs and weights are left
// out; the stage's text lists them.
std::string kernels_to_dot(const LoopProgram& p, const Schedule& s) {
  std::ostringstream os;
  // nslimit and mclimit bound dot's ranking and crossing passes: without them it runs for minutes
  // on such a chain of kernels, with them about two seconds.
  os << "digraph S {\n  rankdir=TB; nslimit=2; mclimit=0.5;\n"
     << "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n";
  std::map<std::string, size_t> writer;
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    const Kernel& kr = s.kernels[k];
    for (const auto& w : kr.writes) writer[w] = k;
    std::string label = kr.name + "\\n";
    if (kr.is_extern) {
      label += p.nodes[kr.nodes[0]].ext.op->name;
    } else {
      label += std::to_string(kr.nodes.size()) + " node" + (kr.nodes.size() == 1 ? "" : "s") + ", (" + std::to_string(kr.numel) +
               (kr.rnumel > 1 ? " x " + std::to_string(kr.rnumel) : std::string()) + ")";
    }
    os << "  \"" << kr.name << "\" [id=\"" << kr.name << "\", fillcolor=\"" << (kr.is_extern ? "#fff4cc" : "#f5f0ff") << "\", label=\""
       << label << "\"];\n";
  }
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    std::set<size_t> from;
    for (const auto& r : s.kernels[k].reads)
      if (auto it = writer.find(r); it != writer.end() && it->second < k) from.insert(it->second);
    for (size_t f : from) os << "  \"" << s.kernels[f].name << "\" -> \"" << s.kernels[k].name << "\";\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace

std::string schedule_kernels_to_dot(const LoopProgram& p, const Schedule& s) { return kernels_to_dot(p, s); }

std::string schedule_to_dot(const LoopProgram& p, const Schedule& s) {
  if (p.nodes.size() > kClusteredScheduleNodes) return kernels_to_dot(p, s);
  // A loop node's key in the drawing: its buffer's name, or its own where an earlier node wrote
  // that buffer (a scatter into the copy of self it mutates: one key would put both in one box).
  std::vector<std::string> key(p.nodes.size());
  std::set<std::string> drawn;
  for (size_t i = 0; i < p.nodes.size(); ++i) key[i] = drawn.insert(p.nodes[i].buffer).second ? p.nodes[i].buffer : p.nodes[i].name;
  std::ostringstream os;
  os << "digraph S {\n  rankdir=TB; compound=true; node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n";
  for (const LoopBuffer& b : p.buffers)
    if (b.is_input)
      os << "  \"" << b.name << "\" [id=\"" << b.name << "\", fillcolor=\"#e6f4ea\", label=\"" << b.name << "\\n"
         << dtype_short(b.dtype) << shape_str(b.shape) << "\"];\n";
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    const Kernel& kr = s.kernels[k];
    if (kr.is_extern) {
      const LoopNode& ln = p.nodes[kr.nodes[0]];
      os << "  \"" << ln.buffer << "\" [id=\"" << kr.name << "\", shape=box, fillcolor=\"#fff4cc\", label=\"" << kr.name
         << "\\n" << ln.ext.op->name << "\\n" << ln.graph_node << "\"];\n";
      for (size_t o = 1; o < ln.ext.outputs.size(); ++o)
        os << "  \"" << ln.ext.outputs[o] << "\" [shape=point, width=0.05];\n  \"" << ln.buffer << "\" -> \"" << ln.ext.outputs[o]
           << "\" [arrowhead=none, style=dotted];\n";
      continue;
    }
    std::string iter;
    for (const LoopNest& n : kr.loop_nests())
      iter += (iter.empty() ? "(" : " then (") + std::to_string(n.numel) + (n.rnumel > 1 ? " x " + std::to_string(n.rnumel) : std::string()) + ")";
    if (kr.epilogue && k > 0) iter += "\\nepilogue of " + s.kernels[k - 1].name;
    os << "  subgraph cluster_" << k << " {\n    id=\"" << kr.name << "\"; label=\"" << kr.name << "\\n" << iter
       << "\"; style=\"rounded,filled\"; "
       << "fillcolor=\"#f5f0ff\"; color=\"#8a6fd1\"; fontname=\"Helvetica\"; fontsize=10;\n";
    for (int n : kr.nodes) {
      const LoopNode& ln = p.nodes[n];
      const bool removed = std::count(kr.removed.begin(), kr.removed.end(), ln.buffer) > 0;
      os << "    \"" << key[static_cast<size_t>(n)] << "\" [id=\"" << ln.name << "\", fillcolor=\""
         << (ln.kind == LoopNode::Kind::reduction ? "#fde8d8" : "#eef3fb") << "\"" << (removed ? ", style=\"rounded,filled,dashed\"" : "")
         << ", label=\"" << ln.name << " "
         << (ln.kind == LoopNode::Kind::reduction ? std::string(reduce_name(ln.reduce)) : ln.kind == LoopNode::Kind::scatter ? "scatter" : "pointwise")
         << "\\n" << ln.graph_node << "\"];\n";
    }
    os << "  }\n";
  }
  // Edges from the inputs, grouped by input in the buffers' order: each node's reads found once
  // (a walk of its body), not once per input.
  std::map<std::string, std::vector<std::string>> readers;  // input -> reading nodes' keys
  for (const auto& b : p.buffers)
    if (b.is_input) readers[b.name];
  for (const Kernel& kr : s.kernels)
    for (int n : kr.nodes)
      for (const auto& d : extract_dependencies(p.nodes[n]).reads)
        if (auto it = readers.find(d.buffer); it != readers.end()) it->second.push_back(key[static_cast<size_t>(n)]);
  for (const auto& b : p.buffers)
    if (b.is_input)
      for (const std::string& reader : readers[b.name]) os << "  \"" << b.name << "\" -> \"" << reader << "\";\n";
  const std::vector<int> kernel_of = kernels_of_nodes(p, s);
  for (const EdgeDecision& e : s.edges) {
    // from the producer's node (an extern's other outputs: their points, by buffer)
    const std::string& from = e.producer >= 0 && p.nodes[e.producer].buffer == e.buffer ? key[static_cast<size_t>(e.producer)] : e.buffer;
    os << "  \"" << from << "\" -> \"" << key[static_cast<size_t>(e.consumer)] << "\"";
    if (runs_as_epilogue(s, kernel_of, e)) {
      os << " [color=\"#2e7d32\", fontcolor=\"#2e7d32\", fontsize=8, style=dashed, label=\"epilogue\", tooltip=\"runs inside the "
            "matrix multiply: on the CPU on each block of its rows, on CUDA in its GEMM template\"]";
    } else if (!e.verdict.ok) {
      std::string reason = e.verdict.reason;
      if (reason.size() > 60) reason = reason.substr(0, 57) + "...";
      os << " [color=\"#c0392b\", fontcolor=\"#c0392b\", fontsize=8, label=\"" << reason << "\", tooltip=\"" << e.verdict.reason << "\"]";
    }
    os << ";\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace ls
