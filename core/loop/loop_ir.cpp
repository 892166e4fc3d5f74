#include "loop/loop_ir.h"

#include "ops/known_ops.h"
#include "ops/op_table.h"

#include <map>
#include <sstream>
#include <stdexcept>

namespace ls {

bool is_attention(const OpDef* o) { return o == &op::efficient_attention(); }
bool is_attention_backward(const OpDef* o) { return o == &op::efficient_attention_backward(); }
bool attention_output_heads_inner(const ExternCall& c) {
  return is_attention(c.op) && !c.output_metas.empty() && c.output_metas[0].shape.size() >= 4;
}

bool transposed_operand(const ExternCall& c, size_t arg) {
  const Arg& a = c.args.at(arg);
  return a.is_node() && static_cast<size_t>(a.node) < c.transposed.size() && c.transposed[a.node];
}

void LoopNode::run(OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>& ridx) const {
  if (kind == Kind::extern_kernel) {  // reads and writes whole buffers
    for (const auto& b : ext.inputs) h.load(b, Expr(0));
    for (const auto& b : ext.outputs) h.store(b, Expr(0), V{});
    return;
  }
  if (kind == Kind::scatter) {  // the body stores, through the indices it loads
    inner(h, idx, ridx);
    return;
  }
  if (!iter_order.empty()) {  // the body and the buffer see the buffer's own order
    std::vector<Expr> bidx(idx.size());
    Shape shape(ranges.size());
    for (size_t i = 0; i < idx.size(); ++i) {
      bidx[iter_order[i]] = idx[i];
      shape[iter_order[i]] = ranges[i];
    }
    const V v = inner(h, bidx, ridx);
    h.store(buffer, linear_index(bidx, contiguous_strides(shape)), v);
    return;
  }
  const V v = inner(h, idx, ridx);
  const Expr out = linear_index(idx, contiguous_strides(ranges));
  if (kind == Kind::pointwise) return h.store(buffer, out, v);
  if (!reduce_is_arg(reduce)) return h.store_reduction(buffer, out, h.reduction(reduce, dtype, v));
  // The element's position among those reduced together: row-major over the reduction ranges.
  const V at = h.index_expr(linear_index(ridx, contiguous_strides(reduction_ranges)), DType::i64);
  h.store_reduction(buffer, out, h.arg_reduction(reduce, arg_dtype, v, at));
}

std::vector<Expr> LoopNode::default_vars() const {
  std::vector<Expr> v;
  for (size_t i = 0; i < ranges.size(); ++i) v.push_back(Expr::var("p" + std::to_string(i), ranges[i]));
  return v;
}

std::vector<Expr> LoopNode::default_rvars() const {
  std::vector<Expr> v;
  for (size_t i = 0; i < reduction_ranges.size(); ++i)
    v.push_back(Expr::var("r" + std::to_string(i), reduction_ranges[i]));
  return v;
}

int NameIndex::find(const std::string& name, size_t size, const std::function<bool(size_t, const std::string&)>& at,
                    const std::function<void(size_t, const std::function<void(const std::string&)>&)>& names,
                    bool expected) const {
  std::lock_guard<std::mutex> lock(m_);
  for (int attempt = 0; attempt < 2; ++attempt) {
    // The first entry of each name, as a scan would find. Entries appended since: added; a vector
    // that shrank, or an entry renamed (found on the second attempt): indexed anew.
    size_t from = size_;
    if (size_ == kStale || size_ > size || attempt == 1) {
      map_.clear();
      from = 0;
    }
    for (size_t i = from; i < size; ++i) names(i, [&](const std::string& n) { map_.emplace(n, static_cast<int>(i)); });
    size_ = size;
    const auto it = map_.find(name);
    if (it == map_.end()) {
      if (expected) continue;
      return -1;
    }
    if (static_cast<size_t>(it->second) < size && at(static_cast<size_t>(it->second), name)) return it->second;
  }
  return -1;
}

const LoopBuffer& LoopProgram::buffer(const std::string& name) const {
  const int i = buffer_index.find(
      name, buffers.size(), [&](size_t k, const std::string& n) { return buffers[k].name == n; },
      [&](size_t k, const std::function<void(const std::string&)>& add) { add(buffers[k].name); }, true);
  if (i < 0) throw std::logic_error("loop IR: no buffer named '" + name + "'");
  return buffers[static_cast<size_t>(i)];
}

int LoopProgram::producer(const std::string& buffer) const {
  auto writes = [&](size_t k, const std::string& b) {
    if (nodes[k].buffer == b) return true;
    for (const auto& o : nodes[k].ext.outputs)
      if (o == b) return true;
    return false;
  };
  return producer_index.find(buffer, nodes.size(), writes, [&](size_t k, const std::function<void(const std::string&)>& add) {
    add(nodes[k].buffer);
    for (const auto& o : nodes[k].ext.outputs) add(o);
  }, false);
}

namespace {

// Prints a body as the ops calls it makes, like Inductor's LoopBody printer.
class PrintHandler : public OpsHandler {
 public:
  std::ostringstream os;
  V load(const std::string& b, const Expr& i) override { return emit("ops.load('" + b + "', " + i.str() + ")", "load"); }
  V constant(double v, DType t) override {
    std::ostringstream c;
    c << "ops.constant(" << v << ", " << dtype_torch(t) << ")";
    return emit(c.str(), "constant");
  }
  V index_expr(const Expr& e, DType t) override {
    return emit("ops.index_expr(" + e.str() + ", " + std::string(dtype_torch(t)) + ")", "index_expr");
  }
  V math(Math m, const std::vector<V>& a, DType) override {
    std::string s = "ops." + std::string(math_name(m)) + "(";
    for (size_t i = 0; i < a.size(); ++i) s += (i ? ", " : "") + name(a[i]);
    return emit(s + ")", std::string(math_name(m)));
  }
  Expr indirect(V v, int64_t size, bool wrap) override {
    const V i = emit("ops.indirect_indexing(" + name(v) + ", " + std::to_string(size) + (wrap ? "" : ", wrap_neg=False") + ")", "indirect");
    return Expr::indirect(names_.at(i.id), size);  // "indirect", "indirect_1": Inductor's names
  }
  V reduction(Reduce r, DType t, V v) override {
    return emit("ops.reduction(" + std::string(dtype_torch(t)) + ", '" + std::string(reduce_name(r)) + "', " + name(v) + ")",
                "reduction");
  }
  V arg_reduction(Reduce r, DType t, V v, V i) override {
    return emit("ops.reduction(torch.int64, " + std::string(dtype_torch(t)) + ", '" + std::string(reduce_name(r)) + "', (" + name(v) +
                    ", " + name(i) + "))",
                "reduction");
  }
  void store(const std::string& b, const Expr& i, V v) override {
    os << "        ops.store('" << b << "', " << i.str() << ", " << name(v) << ")\n";
  }
  void scatter_store(const std::string& b, const Expr& i, V v, StoreMode mode, DType) override {
    os << "        ops.store('" << b << "', " << i.str() << ", " << name(v) << (mode == StoreMode::atomic_add ? ", mode='atomic_add'" : "")
       << ")\n";
  }
  void store_reduction(const std::string& b, const Expr& i, V v) override {
    os << "        ops.store_reduction('" << b << "', " << i.str() << ", " << name(v) << ")\n";
  }

 private:
  V emit(const std::string& rhs, const std::string& base) {
    std::string n = base;
    int& c = counts_[base];
    if (c++) n += "_" + std::to_string(c - 1);
    names_.push_back(n);
    os << "        " << n << " = " << rhs << '\n';
    return V{static_cast<int>(names_.size()) - 1};
  }
  std::string name(V v) const { return names_.at(v.id); }
  std::vector<std::string> names_;
  std::map<std::string, int> counts_;
};

}  // namespace

std::string print_loop_node(const LoopProgram& p, const LoopNode& n) {
  std::ostringstream os;
  if (n.kind == LoopNode::Kind::extern_kernel) {
    os << n.name << ": ExternKernel " << n.ext.op->name << "(";
    for (size_t i = 0; i < n.ext.inputs.size(); ++i)
      os << (i ? ", " : "") << n.ext.inputs[i] << (i < n.ext.transposed.size() && n.ext.transposed[i] ? ".T" : "");
    os << ") -> ";
    for (size_t i = 0; i < n.ext.outputs.size(); ++i)
      os << (i ? ", " : "") << n.ext.outputs[i] << ": " << n.ext.output_metas[i].annotation();
    os << "  # from " << n.graph_node << "\n";
    return os.str();
  }
  const LoopBuffer& b = p.buffer(n.buffer);
  os << n.name << ": "
     << (n.kind == LoopNode::Kind::pointwise ? "Pointwise" : n.kind == LoopNode::Kind::scatter ? "Scatter (mutates)" : "Reduction")
     << " -> " << n.buffer << "  # from " << n.graph_node << "\n";
  os << n.name << ".layout = FixedLayout('" << p.device << "', " << dtype_torch(b.dtype) << ", size=" << shape_str(b.shape)
     << ", stride=" << shape_str(contiguous_strides(b.shape)) << ")\n";
  os << n.name << ".sizes = (" << shape_str(n.ranges) << ", " << shape_str(n.reduction_ranges) << ")\n";
  os << "class " << n.name << "_loop_body:\n    var_ranges = {";
  const auto vs = n.default_vars(), rs = n.default_rvars();
  bool first = true;
  for (size_t i = 0; i < n.ranges.size(); ++i, first = false) os << (first ? "" : ", ") << "p" << i << ": " << n.ranges[i];
  for (size_t i = 0; i < n.reduction_ranges.size(); ++i, first = false)
    os << (first ? "" : ", ") << "r" << i << ": " << n.reduction_ranges[i];
  os << "}\n    def body(self, ops):\n";
  PrintHandler h;
  n.run(h, vs, rs);
  os << h.os.str();
  return os.str();
}

std::string print_loop_program(const LoopProgram& p) {
  std::ostringstream os;
  for (const LoopBuffer& b : p.buffers)
    if (b.is_input) os << b.name << "_layout = FixedLayout('" << p.device << "', " << dtype_torch(b.dtype) << ", size=" << shape_str(b.shape) << ")\n";
  os << '\n';
  for (const LoopNode& n : p.nodes) os << print_loop_node(p, n) << "\n\n";
  return os.str();
}

}  // namespace ls

#include <algorithm>
#include <set>
#include <unordered_map>

#include "ir/graph.h"
#include "loop/dependencies.h"

namespace ls {

namespace {

std::string loop_blocks_to_dot(const LoopProgram& p) {
  const size_t blocks = (p.nodes.size() + kLoopDotBlock - 1) / kLoopDotBlock;
  std::unordered_map<std::string, size_t> block_of;  // buffer -> the run that writes it
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    block_of.emplace(p.nodes[i].buffer, i / kLoopDotBlock);
    for (const auto& o : p.nodes[i].ext.outputs) block_of.emplace(o, i / kLoopDotBlock);
  }
  std::set<std::pair<size_t, size_t>> edges;
  for (size_t i = 0; i < p.nodes.size(); ++i)
    for (const MemDep& d : extract_dependencies(p.nodes[i]).reads)
      if (auto it = block_of.find(d.buffer); it != block_of.end() && it->second != i / kLoopDotBlock)
        edges.insert({it->second, i / kLoopDotBlock});
  std::ostringstream os;
  os << "digraph L {\n  rankdir=TB; node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n";
  for (size_t b = 0; b < blocks; ++b) {
    const size_t from = b * kLoopDotBlock, to = std::min(p.nodes.size(), from + kLoopDotBlock);
    size_t pointwise = 0, reductions = 0, externs = 0;
    for (size_t i = from; i < to; ++i) {
      const LoopNode::Kind k = p.nodes[i].kind;
      (k == LoopNode::Kind::pointwise || k == LoopNode::Kind::scatter ? pointwise : k == LoopNode::Kind::reduction ? reductions : externs) += 1;
    }
    os << "  \"b" << b << "\" [id=\"" << p.nodes[from].name << "\", fillcolor=\"" << (reductions ? "#fde8d8" : "#eef3fb")
       << "\", label=\"" << p.nodes[from].name << " .. " << p.nodes[to - 1].name << "\\n" << to - from << " loop nodes: "
       << pointwise << " pointwise, " << reductions << " reductions, " << externs << " extern\\nfrom "
       << dot_escape(p.nodes[from].graph_node) << " .. " << dot_escape(p.nodes[to - 1].graph_node) << "\"];\n";
  }
  for (const auto& [a, b] : edges) os << "  \"b" << a << "\" -> \"b" << b << "\";\n";
  os << "}\n";
  return os.str();
}

}  // namespace

std::string loop_program_to_dot(const LoopProgram& p) {
  if (p.nodes.size() > kLoopDotBlocksAbove) return loop_blocks_to_dot(p);
  std::ostringstream os;
  os << "digraph L {\n  rankdir=TB; node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n";
  // Boxes: the inputs, then a box per loop node (named by the buffer it writes).
  std::map<std::string, int> box;
  std::vector<std::string> ids;
  for (const LoopBuffer& b : p.buffers)
    if (b.is_input) {
      box.emplace(b.name, static_cast<int>(ids.size()));
      ids.push_back(b.name);
    }
  // A scatter's box is its own (named by the node: it writes the buffer another node's box
  // holds); the nodes after it read the buffer from it.
  std::vector<int> own_box(p.nodes.size());
  auto dot_name = [](const LoopNode& n) { return n.kind == LoopNode::Kind::scatter ? n.name : n.buffer; };
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const LoopNode& n = p.nodes[i];
    own_box[i] = n.kind == LoopNode::Kind::scatter ? static_cast<int>(ids.size()) : box.emplace(n.buffer, static_cast<int>(ids.size())).first->second;
    ids.push_back(n.name);
  }
  struct Read {
    std::string buffer, head, label;
  };
  std::vector<Read> reads;
  std::vector<std::pair<int, int>> edges;  // (box read, box reading), one per read
  std::map<std::string, int> scattered;    // buffer -> the box of the last scatter into it so far
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const LoopNode& n = p.nodes[i];
    for (const MemDep& d : extract_dependencies(n).reads) {
      int from;
      if (auto s = scattered.find(d.buffer); s != scattered.end()) {
        from = s->second;
      } else {  // a buffer neither an input nor written by a loop node gets the box Graphviz makes for it
        from = box.emplace(d.buffer, static_cast<int>(ids.size())).first->second;
        if (from == static_cast<int>(ids.size())) ids.push_back(d.buffer);
      }
      reads.push_back({d.buffer, dot_name(n), n.kind != LoopNode::Kind::extern_kernel ? d.index.str() : ""});
      edges.emplace_back(from, own_box[i]);
    }
    if (n.kind == LoopNode::Kind::scatter) scattered[n.buffer] = own_box[i];
  }
  const std::vector<bool> as_ref = long_edges(ids.size(), edges);
  std::vector<std::vector<size_t>> refs_at(ids.size());
  for (size_t e = 0; e < edges.size(); ++e)
    if (as_ref[e]) refs_at[static_cast<size_t>(edges[e].second)].push_back(e);
  auto ref_lines = [&](int i) {
    for (size_t e : refs_at[static_cast<size_t>(i)])
      os << dot_reference("r" + std::to_string(e), ids[static_cast<size_t>(edges[e].first)], "\u2191 " + reads[e].buffer);
  };
  for (const LoopBuffer& b : p.buffers)
    if (b.is_input)
      os << "  \"" << b.name << "\" [id=\"" << b.name << "\", fillcolor=\"#e6f4ea\", label=\"" << b.name << "\\n"
         << dtype_short(b.dtype) << shape_str(b.shape) << "\"];\n";
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const LoopNode& n = p.nodes[i];
    const bool ext = n.kind == LoopNode::Kind::extern_kernel;
    os << "  \"" << dot_name(n) << "\" [id=\"" << n.name << "\", fillcolor=\""
       << (ext ? "#fff4cc" : n.kind == LoopNode::Kind::reduction ? "#fde8d8" : "#eef3fb") << "\", label=\"" << n.name << " -> "
       << n.buffer << "\\n"
       << (ext ? "Extern " + std::string(n.ext.op->base_name())
               : n.kind == LoopNode::Kind::reduction ? "Reduction " + std::string(reduce_name(n.reduce))
               : n.kind == LoopNode::Kind::scatter   ? "Scatter into " + n.buffer
                                                     : "Pointwise")
       << "\\n" << shape_str(n.ranges);
    if (!n.reduction_ranges.empty()) os << " x " << shape_str(n.reduction_ranges);
    os << "\\nfrom " << n.graph_node << "\"];\n";
    ref_lines(own_box[i]);
  }
  for (size_t e = 0; e < reads.size(); ++e) {
    const Read& r = reads[e];
    os << "  " << (as_ref[e] ? "r" + std::to_string(e) : "\"" + r.buffer + "\"") << " -> \"" << r.head << "\"";
    if (!r.label.empty()) os << " [label=\"" << r.label << "\", fontsize=8]";
    os << ";\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace ls
