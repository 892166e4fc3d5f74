#include "codegen/cpp_codegen.h"

#include "codegen/cpu_target.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "codegen/emitter.h"
#include "loop/dependencies.h"
#include "ir/index.h"

extern const char kCpuPrelude[];

namespace ls {
namespace {

const char* omp_reduction_op(Reduce r) { return r == Reduce::max ? "max" : r == Reduce::min ? "min" : r == Reduce::prod ? "*" : "+"; }

// The divisors of the floor divisions and moduli of `var` inside an index (a broadcast channel:
// (x0 // 256) % 32).
void collect_divisors(const Expr& e, const std::string& var, std::vector<int64_t>& out) {
  for (const Expr::Term& t : e.terms()) {
    if (t.atom.kind == Atom::Kind::var || !t.atom.inner) continue;
    // A modulus of a quotient ((x0 // 256) % 32) folds once the quotient does: only a modulus of
    // x0 itself bounds the inner block.
    const bool divides = t.atom.kind == Atom::Kind::floordiv ? t.atom.inner->depends_on(var) : t.atom.inner->coefficient(var) != 0;
    if (divides) out.push_back(t.atom.k);
    collect_divisors(*t.atom.inner, var, out);
  }
}

class KernelWriter {
 public:
  // `row`: for an epilogue kernel, the length of the product's rows its rows function is called on.
  // `threshold`: the work from which its nests run in parallel.
  KernelWriter(const LoopProgram& p, const Kernel& k, const CppCodegenOptions& o, int64_t row, int64_t threshold)
      : p_(p), k_(k), o_(o), row_(row), threshold_(threshold) {}

  GeneratedKernel write(std::vector<Emitted>& out) {
    GeneratedKernel gk;
    gk.name = k_.name;
    gk.launcher = k_.name + "_launch";
    // Arguments: buffers read from memory, then buffers written.
    std::map<std::string, std::string> ptrs;
    std::string params, casts;
    int n_in = 0, n_out = 0;
    auto add_arg = [&](const std::string& buf, bool write) {
      const std::string ptr = write ? "out_ptr" + std::to_string(n_out++) : "in_ptr" + std::to_string(n_in++);
      ptrs[buf] = ptr;
      if (dtype_is_complex(p_.buffer(buf).dtype))  // lower/lower.cpp keeps complex values on library and host calls
        throw std::logic_error("complex tensors are not supported by generated C++ kernels (" + buf + " of " + k_.name + ")");
      const std::string type = std::string(dtype_c(p_.buffer(buf).dtype));
      params += std::string(params.empty() ? "" : ", ") + (write ? "" : "const ") + type + "* __restrict " + ptr;
      casts += std::string(casts.empty() ? "" : ", ") + "static_cast<" + (write ? "" : "const ") + type + "*>(a[" +
               std::to_string(gk.args.size()) + "])";
      gk.args.push_back(buf);
    };
    for (const auto& b : k_.reads) add_arg(b, false);
    for (const auto& b : k_.writes) add_arg(b, true);
    // The outer loop's index in 32 bits where every number it makes fits with room (buffers and
    // iterations under 2^30 elements): GCC vectorizes 64-bit divisions by constants poorly
    // (cifar_net's max-pool backward, index arithmetic per element: 37 us in 64 bits, 11.5 in
    // 32; Clang 12.7 either way). Size-generic code keeps 64 bits (its sizes are arguments).
    bool small = !o_.size_generic;
    for (const auto& list : {k_.reads, k_.writes})
      for (const auto& b : list) small = small && numel_of(p_.buffer(b).shape) < (int64_t(1) << 30);
    for (const LoopNest& n : k_.loop_nests()) small = small && n.numel * std::max<int64_t>(n.rnumel, 1) < (int64_t(1) << 30);
    ix_ = small ? "int32_t" : "int64_t";

    std::set<std::string> in_memory(k_.writes.begin(), k_.writes.end());
    LoopEmitter e(ptrs, in_memory, p_);
    std::string origins;
    for (const auto& o : k_.origins) origins += (origins.empty() ? "" : ", ") + o;
    std::string iter;
    for (const LoopNest& n : k_.loop_nests())
      iter += (iter.empty() ? "(" : " then (") + std::to_string(n.numel) + ", " + std::to_string(n.rnumel) + ")";
    e.lines.push_back({"// " + k_.name + ": iteration " + iter + ", from " + origins});
    e.lines.push_back({kCpuKernelHead + k_.name + "(" + params + ") {"});
    e.push_scope();
    for (const LoopNest& nest : k_.loop_nests()) {
      e.push_scope();  // values of one nest are not visible in the next
      write_nest(e, nest);
      e.pop_scope();
    }
    e.pop_scope();
    e.node = -1;
    e.lines.push_back({"}"});
    e.lines.push_back({"extern \"C\" void " + gk.launcher + "(void** a) { " + k_.name + "(" + casts + "); }"});
    if (row_ > 0) {
      // The epilogue's form for one block of the product's rows, on the calling thread (a thread of
      // the matrix multiply, right after its library call computed those rows).
      gk.rows_launcher = k_.name + "_rows";
      e.lines.push_back({"// " + k_.name + " on elements [begin, end): rows of the matrix product it finishes, or parts of rows (a block of its columns)"});
      e.lines.push_back({"extern \"C\" void " + gk.rows_launcher + "(void** a, int64_t begin, int64_t end) {"});
      e.push_scope();
      e.indent = "    ";
      int i = 0;
      for (const auto& b : k_.reads) {
        e.line("const auto* __restrict in_ptr" + std::to_string(i) + " = static_cast<const " + std::string(dtype_c(p_.buffer(b).dtype)) +
               "*>(a[" + std::to_string(i) + "]);");
        ++i;
      }
      int o = 0;
      for (const auto& b : k_.writes)
        e.line("auto* __restrict out_ptr" + std::to_string(o++) + " = static_cast<" + std::string(dtype_c(p_.buffer(b).dtype)) + "*>(a[" +
               std::to_string(i++) + "]);");
      rows_ = true;
      e.push_scope();
      write_nest_as(e, k_.loop_nests().at(0), false);
      e.pop_scope();
      rows_ = false;
      e.pop_scope();
      e.indent.clear();
      e.node = -1;
      e.lines.push_back({"}"});
    }
    out.insert(out.end(), e.lines.begin(), e.lines.end());
    return gk;
  }

 private:
  // A pointwise nest whose indices divide x0 (a per-channel parameter broadcast over positions)
  // splits x0 into an outer and an inner loop of the divisors' common factor, so the divisions
  // fold away: the inner loop reads contiguous memory and a channel's parameters once (hoisted).
  // Short inner loops too (a pooling window's row of 14 or 5): 64-bit divisions per element cost
  // more than a short vector loop (cifar_net's max-pool: 0.29 ms -> 0.02 ms on 16 cores).
  int64_t inner_block(const LoopNest& nest) const {
    std::vector<int64_t> ks;
    for (int n : nest.nodes) {
      const Placement pl = place(p_.nodes[n], nest.numel, 1);
      const Dependencies d = extract_dependencies(p_.nodes[n], pl.idx, pl.ridx);
      for (const auto* list : {&d.reads, &d.writes})
        for (const MemDep& m : *list) collect_divisors(m.index, "x0", ks);
    }
    int64_t g = 0;
    for (int64_t k : ks) g = std::gcd(g, k);
    g = std::gcd(g, nest.numel);
    return g >= 4 && nest.numel / g >= 2 ? g : 0;
  }

  void write_nest(LoopEmitter& e, const LoopNest& nest) {
    // Work: the elements the nest walks, once per r loop (a softmax reads its row three times).
    const int64_t X = nest.numel, R = nest.rnumel;
    int64_t passes = 0;
    if (R > 1)
      for (const KernelLoop& l : kernel_loops(p_, nest.nodes, X, R)) passes += l.inner ? 1 : 0;
    const int64_t work = (X > 1 ? X * R : R) * std::max<int64_t>(1, passes);
    if (!o_.size_generic || work <= 1) return write_nest_as(e, nest, work >= threshold_);
    // Size-generic code (dynamic shapes) holds both forms and picks one at run time, so that one
    // compiled kernel serves every size (an `if` clause on the pragma would enter a serialized
    // parallel region on every call of a small kernel: microseconds).
    e.line("if (" + std::to_string(work) + " >= " + std::to_string(threshold_) + ") {");
    for (bool par : {true, false}) {
      e.indent += "    ";
      e.push_scope();
      write_nest_as(e, nest, par);
      e.pop_scope();
      e.indent.resize(e.indent.size() - 4);
      e.line(par ? "} else {" : "}");
    }
  }

  // A pointwise node inside the r loop walks its elements as flat index x0 * R + r0; in the column
  // form, as r0 * X + x0 (rows outer): the same elements, in the order of a row-major [R, X]
  // matrix, so that a LayerNorm backward's input gradient (per element) walks its rows beside
  // the weight gradients (per column) of the same nest.
  Placement placement(int n, int64_t X, int64_t R) const {
    Placement pl = place(p_.nodes[n], X, R);
    if (transposed_.count(n)) pl.idx = unflatten(Expr::var("r0", R) * X + Expr::var("x0", X), p_.nodes[n].ranges);
    return pl;
  }

  // Whether a node's memory accesses suit the column form: contiguous along x0 wherever they
  // follow it, r0 never nested; `column` is set by one that strides rows (on both x0 and r0).
  bool column_accesses(int n, int64_t X, int64_t R, bool& column) const {
    const Placement pl = placement(n, X, R);
    const Dependencies d = extract_dependencies(p_.nodes[n], pl.idx, pl.ridx);
    for (const auto* list : {&d.reads, &d.writes})
      for (const MemDep& m : *list) {
        const bool on_x = m.index.depends_on("x0"), on_r = m.index.depends_on("r0");
        if (on_x && m.index.coefficient("x0") != 1) return false;  // strided or nested along x0: the row form
        if (on_r && m.index.coefficient("r0") == 0) return false;  // nested along r0
        column = column || (on_x && on_r && m.index.coefficient("r0") != 1);
      }
    return true;
  }

  // A reduction over rows of column-contiguous memory (a bias gradient: the sum of each column of a
  // row-major matrix; a GELU backward before it) is walked row by row, the column form: every
  // access along x0 is contiguous (x0's coefficient 1) and r0 strides across rows, so the usual
  // order (a column per x0, r0 inner) would read one element a cache line.
  // The column form applies to a nest with one r loop (sums, products, maxima, minima, arg
  // reductions: a (value, index) pair a column, chunks combined in order), nothing stored
  // before the loop (it would be stored once a row), every access as column_accesses wants it (a
  // pointwise node of the loop walked rows outer where that makes it so), and every value one node
  // of the nest reads from another's buffer read at the index it was written (so it is handed over
  // in the iteration, as in the row form).
  bool column_form(const LoopNest& nest, const std::vector<KernelLoop>& segs) {
    const int64_t X = nest.numel, R = nest.rnumel;
    transposed_.clear();
    if (X < 16 || R < 2) return false;
    int inner = 0;
    bool column = false;
    std::map<std::string, Expr> written;
    auto reject = [&] {
      transposed_.clear();
      return false;
    };
    for (const KernelLoop& seg : segs) {
      inner += seg.inner;
      for (int n : seg.nodes) {
        const LoopNode& ln = p_.nodes[n];
        if (ln.kind == LoopNode::Kind::reduction && ln.reduce != Reduce::sum && ln.reduce != Reduce::max && ln.reduce != Reduce::min &&
            ln.reduce != Reduce::prod && !reduce_is_arg(ln.reduce))
          return reject();
        bool col = false;
        if (!column_accesses(n, X, R, col)) {
          if (!seg.inner || ln.kind != LoopNode::Kind::pointwise) return reject();
          transposed_.insert(n);
          col = false;
          if (!column_accesses(n, X, R, col)) return reject();
        }
        column = column || col;
        const Placement pl = placement(n, X, R);
        const Dependencies d = extract_dependencies(ln, pl.idx, pl.ridx);
        if (!seg.inner && inner == 0 && !d.writes.empty()) return reject();
        for (const MemDep& m : d.reads)
          if (auto w = written.find(m.buffer); w != written.end() && w->second != m.index) return reject();
        for (const MemDep& m : d.writes) written.emplace(m.buffer, m.index);
      }
    }
    return inner == 1 && column ? true : reject();
  }

  // The column form. Up to 16384 columns: the rows split into C chunks (parallel), each walking
  // whole rows (contiguous: the prefetchers stream them) into its own sums of every column, then
  // the chunks' sums combined in chunk order. More columns: blocks of 1024 columns (parallel),
  // each walking every row.
  void write_column_nest(LoopEmitter& e, const LoopNest& nest, const std::vector<KernelLoop>& segs, bool parallel) {
    const int64_t X = nest.numel, R = nest.rnumel;
    size_t inner_seg = 0;
    for (size_t i = 0; i < segs.size(); ++i)
      if (segs[i].inner) inner_seg = i;
    std::vector<int> reductions;
    for (int n : segs[inner_seg].nodes)
      if (p_.nodes[n].kind == LoopNode::Kind::reduction) reductions.push_back(n);
    // The long float sums (a column's chunk of rows over kCascadeBlock): a cascade of every
    // column's sums; its levels (width columns each) at most 256 KiB of the thread's stack.
    auto column_cascade = [&](int64_t rows, int64_t width) {
      std::vector<int> out;
      for (int n : reductions)
        if (cascades(n, rows) && cascade_depth(rows) * width <= 65536) out.push_back(n);
      return out;
    };
    const bool chunked = X <= 16384;
    // Chunks: by the sizes alone (not by whether the nest runs in parallel, which hangs on the
    // machine's threads), so the sums are the same everywhere; their partials at most 128 KiB of
    // the caller's stack.
    const int64_t C = !chunked ? 1 : std::clamp<int64_t>(std::min<int64_t>(R / 16, (32 << 10) / X), 1, 64);
    const int64_t B = chunked ? X : std::min<int64_t>(1024, X);
    const std::string Xs = std::to_string(X), Rs = std::to_string(R), Cs = std::to_string(C), Bs = std::to_string(B);
    // The body over one row r0 of columns x0 (from the block's first column xb, xn of them).
    auto row_body = [&]() {
      e.line("#pragma omp simd");
      e.line("for (int64_t xi = 0; xi < xn; ++xi) {");
      e.indent += "    ";
      e.line("const int64_t x0 = xb + xi;");
      e.push_scope();
      for (size_t i = 0; i < inner_seg; ++i)
        for (int n : segs[i].nodes) run_node(e, n, X, R);
      // a column's max or min is a select per column (a map over the columns, no reduction the
      // compiler must recognize): a float NaN sticks
      e.nan_sticky = true;
      e.run_loop_nodes(segs[inner_seg], [&](int n) { run_node(e, n, X, R); });
      e.nan_sticky = false;
      e.pop_scope();
      e.indent.resize(e.indent.size() - 4);
      e.line("}");
    };
    // The epilogue over the block's columns: the finished reductions stored, the nodes after the loop.
    auto epilogue = [&](const std::string& loop_pragma) {
      e.line(loop_pragma);
      e.line("for (int64_t xi = 0; xi < xn; ++xi) {");
      e.indent += "    ";
      e.line("const int64_t x0 = xb + xi;");
      for (int n : reductions) {
        const LoopNode& ln = p_.nodes[n];
        const std::string acc = "acc" + std::to_string(n), part = "part" + std::to_string(n);
        e.node = n;
        if (C == 1) {
          accs_[n] = acc + "[xi]";
          acc_index_[n] = acc + "_i[xi]";
          continue;
        }
        if (reduce_is_arg(ln.reduce)) {  // the chunks' (value, index) pairs, in order
          e.line(std::string(dtype_c(ln.arg_dtype)) + " " + acc + " = " + part + "[x0];");
          e.line("int64_t " + acc + "_i = " + part + "_i[x0];");
          e.line("for (int64_t c = 1; c < " + Cs + "; ++c) " +
                 arg_step(ln, acc, part + "[c * " + Xs + " + x0]", part + "_i[c * " + Xs + " + x0]"));
          accs_[n] = acc;
          acc_index_[n] = acc + "_i";
          continue;
        }
        e.line(std::string(dtype_c(compute_dtype(ln.dtype))) + " " + acc + " = " + part + "[x0];");
        const std::string next = part + "[c * " + Xs + " + x0]";
        // (a max or min keeps a NaN, as the rows' walk does; a long float sum's chunks were
        // added in pairs before the loop)
        if (!cascades(n, R))
          e.line("for (int64_t c = 1; c < " + Cs + "; ++c) " + acc + " = " + reduce_step(ln.reduce, acc, next, true) + ";");
        accs_[n] = acc;
      }
      e.node = -1;
      // The pending stores name the accumulators as the row loop did: rename them.
      for (auto& [key, accumulator] : e.pending_reduction)
        for (int n : reductions)
          if (accumulator == "part" + std::to_string(n) + "[c * " + Xs + " + x0]" || accumulator == "acc" + std::to_string(n) + "[xi]")
            accumulator = accs_.at(n);
          else if (accumulator == "part" + std::to_string(n) + "_i[c * " + Xs + " + x0]")  // an arg reduction's index
            accumulator = acc_index_.at(n);
      e.push_scope();
      for (size_t i = 0; i < inner_seg; ++i)
        for (int n : segs[i].nodes) run_node(e, n, X, R);
      e.bind_finished_reductions(k_.writes);
      for (size_t i = inner_seg + 1; i < segs.size(); ++i)
        for (int n : segs[i].nodes) run_node(e, n, X, R);
      e.pop_scope();
      e.indent.resize(e.indent.size() - 4);
      e.line("}");
    };
    if (C > 1) {
      e.line("// columns contiguous, rows strided: " + Cs + " chunks of rows, each walking whole rows into its sums of every column");
      for (int n : reductions) {
        const LoopNode& ln = p_.nodes[n];
        const bool is_arg = reduce_is_arg(ln.reduce);
        const std::string part = "part" + std::to_string(n);
        e.node = n;
        e.line(std::string(dtype_c(is_arg ? ln.arg_dtype : compute_dtype(ln.dtype))) + " " + part + "[" + std::to_string(C * X) + "];");
        if (is_arg) e.line("int64_t " + part + "_i[" + std::to_string(C * X) + "];");
        accs_[n] = part + "[c * " + Xs + " + x0]";
        acc_index_[n] = part + "_i[c * " + Xs + " + x0]";
      }
      e.node = -1;
      if (parallel) e.line("#pragma omp parallel for schedule(static)");
      e.line("for (int64_t c = 0; c < " + Cs + "; ++c) {");
      e.indent += "    ";
      e.line("const int64_t xb = 0, xn = " + Xs + ";");
      for (int n : reductions) {
        const LoopNode& ln = p_.nodes[n];
        const std::string part = "part" + std::to_string(n);
        if (reduce_is_arg(ln.reduce))
          e.line("for (int64_t x0 = 0; x0 < " + Xs + "; ++x0) " + part + "[c * " + Xs + " + x0] = " + reduce_identity(ln.reduce, ln.arg_dtype) +
                 ", " + part + "_i[c * " + Xs + " + x0] = 0;");
        else
          e.line("for (int64_t x0 = 0; x0 < " + Xs + "; ++x0) " + part + "[c * " + Xs + " + x0] = " + reduce_identity(ln.reduce, ln.dtype) + ";");
      }
      const std::string lo = "c * " + Rs + " / " + Cs, hi = "(c + 1) * " + Rs + " / " + Cs;
      const std::vector<int> cascade = column_cascade((R + C - 1) / C, X);
      for (int n : cascade) {
        e.node = n;
        e.line("ls_cascade<" + Xs + ", " + std::to_string(cascade_depth((R + C - 1) / C)) + "> part" + std::to_string(n) + "_h;");
      }
      e.node = -1;
      if (!cascade.empty()) {
        e.line("for (int64_t r0b = " + lo + "; r0b < " + hi + "; r0b += " + std::to_string(kCascadeBlock) + ") {");
        e.indent += "    ";
        e.line("for (int64_t r0 = r0b; r0 < " + block_end("r0b", hi, false) + "; ++r0) {");
      } else {
        e.line("for (int64_t r0 = " + lo + "; r0 < " + hi + "; ++r0) {");
      }
      e.indent += "    ";
      row_body();
      e.indent.resize(e.indent.size() - 4);
      e.line("}");
      close_cascade(e, cascade, [&](int n) { return "part" + std::to_string(n) + "_h, &part" + std::to_string(n) + "[c * " + Xs + "]"; }, true);
      e.indent.resize(e.indent.size() - 4);
      e.line("}");
      e.line("{");
      e.indent += "    ";
      for (int n : reductions)
        if (cascades(n, R)) {  // a long float sum's chunks in pairs, the cascade's tree over them
          e.node = n;
          e.line("ls_pairwise_rows(part" + std::to_string(n) + ", " + Cs + ", " + Xs + ");");
        }
      e.node = -1;
      e.line("const int64_t xb = 0, xn = " + Xs + ";");
      epilogue(parallel ? "#pragma omp parallel for simd schedule(static)" : "#pragma omp simd");
      e.indent.resize(e.indent.size() - 4);
      e.line("}");
      return;
    }
    e.line("// columns contiguous, rows strided: blocks of " + Bs + " columns, each walking the rows with its columns inner");
    if (parallel && X > B) e.line("#pragma omp parallel for schedule(static)");
    e.line("for (int64_t xb = 0; xb < " + Xs + "; xb += " + Bs + ") {");
    e.indent += "    ";
    e.line("const int64_t xn = " + Xs + " - xb < " + Bs + " ? " + Xs + " - xb : " + Bs + ";");
    for (int n : reductions) {
      const LoopNode& ln = p_.nodes[n];
      const std::string acc = "acc" + std::to_string(n);
      e.node = n;
      if (reduce_is_arg(ln.reduce)) {
        e.line(std::string(dtype_c(ln.arg_dtype)) + " " + acc + "[" + Bs + "];");
        e.line("int64_t " + acc + "_i[" + Bs + "];");
        e.line("for (int64_t xi = 0; xi < " + Bs + "; ++xi) " + acc + "[xi] = " + reduce_identity(ln.reduce, ln.arg_dtype) + ", " + acc + "_i[xi] = 0;");
      } else {
        e.line(std::string(dtype_c(compute_dtype(ln.dtype))) + " " + acc + "[" + Bs + "];");
        e.line("for (int64_t xi = 0; xi < " + Bs + "; ++xi) " + acc + "[xi] = " + reduce_identity(ln.reduce, ln.dtype) + ";");
      }
      accs_[n] = acc + "[xi]";
      acc_index_[n] = acc + "_i[xi]";
    }
    const std::vector<int> cascade = column_cascade(R, B);
    for (int n : cascade) {
      e.node = n;
      e.line("ls_cascade<" + Bs + ", " + std::to_string(cascade_depth(R)) + "> acc" + std::to_string(n) + "_h;");
    }
    e.node = -1;
    if (!cascade.empty()) {
      e.line("for (int64_t r0b = 0; r0b < " + Rs + "; r0b += " + std::to_string(kCascadeBlock) + ") {");
      e.indent += "    ";
      e.line("for (int64_t r0 = r0b; r0 < " + block_end("r0b", Rs, R % kCascadeBlock == 0) + "; ++r0) {");
    } else {
      e.line("for (int64_t r0 = 0; r0 < " + Rs + "; ++r0) {");
    }
    e.indent += "    ";
    row_body();
    e.indent.resize(e.indent.size() - 4);
    e.line("}");
    close_cascade(e, cascade, [](int n) { return "acc" + std::to_string(n) + "_h, acc" + std::to_string(n) + ", xn"; }, true);
    epilogue("#pragma omp simd");
    e.indent.resize(e.indent.size() - 4);
    e.line("}");
  }

  // One loop nest, parallel over its outer loop (or, with one row, over its reduction) or not.
  void write_nest_as(LoopEmitter& e, const LoopNest& nest, bool parallel) {
    const int64_t X = nest.numel, R = nest.rnumel;
    const bool parallel_outer = X > 1 && parallel;
    const auto outer = [&](const std::string& pragma, const std::string& serial) { return parallel_outer ? pragma : serial; };
    const std::vector<KernelLoop> segs = kernel_loops(p_, nest.nodes, X, R);
    if (!o_.size_generic && column_form(nest, segs)) {
      write_column_nest(e, nest, segs, parallel);
      transposed_.clear();
      return;
    }
    // A scatter's nest is a plain loop, parallel or not: no simd lanes (two lanes may store to one
    // element; its adds are `omp atomic`), no inner blocks.
    const bool scatter = std::any_of(nest.nodes.begin(), nest.nodes.end(), [&](int n) { return p_.nodes[n].kind == LoopNode::Kind::scatter; });
    int64_t I = R == 1 && X > 1 && !scatter ? inner_block(nest) : 0;
    if (rows_ && I && row_ % I != 0) I = 0;  // blocks of rows are not whole inner blocks: the flat loop
    if (I) {
      const Expr xo = Expr::var("x0o", X / I), xi = Expr::var("x0i", I);
      subst_ = {{"x0", xo * I + xi}};
      if (const std::string p = outer("#pragma omp parallel for schedule(static)", ""); !p.empty()) e.line(p);
      const std::string is = std::to_string(I);
      if (rows_) {
        // A product cut into blocks of columns calls it on a part of a row: [begin, end) need not
        // be whole inner blocks, so each block's part is its own bounds.
        e.line("for (int64_t x0o = begin / " + is + "; x0o * " + is + " < end; ++x0o) {");
        e.line("    const " + ix_ + " lo = begin > x0o * " + is + " ? static_cast<" + ix_ + ">(begin - x0o * " + is + ") : 0;");
        e.line("    const " + ix_ + " hi = end < (x0o + 1) * " + is + " ? static_cast<" + ix_ + ">(end - x0o * " + is + ") : " + is + ";");
      } else {
        e.line("for (" + ix_ + " x0o = 0; x0o < " + std::to_string(X / I) + "; ++x0o) {");
      }
      e.line("    #pragma omp simd");
      if (I >= 16) e.line("    LS_INNER_LOOP");  // cpu_prelude.h: Clang would unroll it and vectorize the outer loop
      if (rows_) e.line("    for (" + ix_ + " x0i = lo; x0i < hi; ++x0i) {");
      else e.line("    for (" + ix_ + " x0i = 0; x0i < " + is + "; ++x0i) {");
      e.indent += "        ";
      for (const KernelLoop& s : segs)
        for (int n : s.nodes) run_node(e, n, X, R);
      e.indent.resize(e.indent.size() - 8);
      e.line("    }");
      e.line("}");
      subst_.clear();
      return;
    }
    if (X > 1) {
      if (R == 1 && scatter) {
        if (parallel_outer) e.line("#pragma omp parallel for schedule(static)");
      } else if (R == 1) {
        e.line(outer("#pragma omp parallel for simd schedule(static)", "#pragma omp simd"));
      }
      else if (const std::string p = outer("#pragma omp parallel for schedule(static)", ""); !p.empty()) e.line(p);
      if (rows_) e.line("for (int64_t x0 = begin; x0 < end; ++x0) {");
      else e.line("for (" + ix_ + " x0 = 0; x0 < " + std::to_string(X) + "; ++x0) {");
      e.indent += "    ";
    }
    bool nest_r0o = false;  // a lanes tail declared r0o in this nest's scope
    for (const KernelLoop& s : segs) {
      if (!s.inner) {
        for (int n : s.nodes) run_node(e, n, X, R);
        continue;
      }
      // A floating-point max or min is a compare and select that Clang's vectorizer leaves scalar
      // without fast-math flags (a chain of dependent maxss: softmax's row max); written as lanes
      // (L accumulators, one a lane of an inner simd loop of L steps, combined after the loop) it
      // vectorizes with either compiler and gives the same value (max and min are exact); a NaN
      // sticks, as in torch. The rest of a row that is no multiple of L (any row, in size-generic
      // code: its bounds are the sizes) is a plain loop into the first lane. A single row over all
      // threads (any reduction) takes chunks of it a thread, each its lanes, the chunks' results
      // combined in order: the same value whatever the threads.
      auto fp_minmax = [&](const LoopNode& ln) {
        return ln.kind == LoopNode::Kind::reduction && (ln.reduce == Reduce::max || ln.reduce == Reduce::min) &&
               (compute_dtype(ln.dtype) == DType::f32 || ln.dtype == DType::f64);
      };
      // An arg reduction (argmax) keeps a value and an index, two accumulators, combined by
      // ls_arg_keeps (any order gives the first extremum). Its rows (and a max beside it) are one
      // plain loop: in lanes it took as long on long rows (about 1 ns an element either way, 4M
      // floats) and up to 3x longer on short or strided ones (a max.dim over 64 channels); no
      // OpenMP reduction clause takes the pair. A single row runs in chunks of lanes over the threads.
      bool arg = false;
      for (int n : s.nodes) arg = arg || (p_.nodes[n].kind == LoopNode::Kind::reduction && reduce_is_arg(p_.nodes[n].reduce));
      int64_t L = 0;
      for (int n : s.nodes)
        if (fp_minmax(p_.nodes[n]) && !arg) L = R >= 32 || (o_.size_generic && R >= 16) ? 16 : R >= 16 ? 8 : 0;  // size-generic: one L for most rows
      const int64_t chunks = std::clamp<int64_t>(R / 4096, 1, 64);
      const bool single_row = X <= 1 && parallel && (!arg || (chunks > 1 && R >= 32));
      const int64_t C = single_row ? chunks : 1;  // chunks of a single row
      // A single row over all threads: chunks in lanes whatever it reduces (Clang left OpenMP's
      // `parallel for simd reduction(+:)` scalar too: a sum over 2^24, 8.6-12 ms against GCC's 1.4).
      if (single_row && C > 1 && R >= 32) L = 16;
      std::vector<int> reductions;
      for (int n : s.nodes)
        if (p_.nodes[n].kind == LoopNode::Kind::reduction) reductions.push_back(n);
      // The lanes over rows [begin, end): accumulators declared, the loops, then each reduction's
      // value in acc<n> (its pending stores renamed to it).
      // `length`: the rows' (a chunk's) length, for the cascade.
      auto lanes_block = [&](const std::string& begin, const std::string& end, int64_t length, bool tail, bool& declared) {
        // Every reduction of the loop in lanes (a sum beside a max too: a scalar sum there would be
        // a reduction per 16 elements, left scalar by Clang).
        const std::string Ls = std::to_string(L);
        // Long float sums: the lanes loop in blocks, each block's lanes carried into the cascade.
        std::vector<int> cascade;
        for (int n : reductions)
          if (cascades(n, length)) cascade.push_back(n);
        for (int n : reductions) {
          const LoopNode& ln = p_.nodes[n];
          const bool is_arg = reduce_is_arg(ln.reduce);
          const DType t = is_arg ? ln.arg_dtype : compute_dtype(ln.dtype);
          const std::string acc = "acc" + std::to_string(n), type(dtype_c(t));
          e.node = n;
          e.line(type + " " + acc + "_l[" + Ls + "];");
          if (is_arg) e.line("int64_t " + acc + "_l_i[" + Ls + "];");
          e.line("for (int64_t ls_l = 0; ls_l < " + Ls + "; ++ls_l) " + acc + "_l[ls_l] = " + reduce_identity(ln.reduce, t) +
                 (is_arg ? ", " + acc + "_l_i[ls_l] = 0;" : ";"));
          if (std::count(cascade.begin(), cascade.end(), n))
            e.line("ls_cascade<" + Ls + ", " + std::to_string(cascade_depth(length)) + "> " + acc + "_h;");
          accs_[n] = acc + "_l[r0i]";
          acc_index_[n] = acc + "_l_i[r0i]";
        }
        e.node = -1;
        // The tail's r0o outlives its loop: a second one in the same scope (two r loops of a row,
        // single rows of nests merged into one function) gets a block of its own.
        const bool scoped = tail && declared;
        if (tail) declared = true;
        if (scoped) {
          e.line("{");
          e.indent += "    ";
        }
        if (tail) e.line("int64_t r0o = " + begin + ";");
        std::string lanes_end = end;
        if (!cascade.empty()) {  // blocks of kCascadeBlock (a multiple of L): lanes up to r0e
          const std::string K = std::to_string(kCascadeBlock);
          if (tail) {
            e.line("while (r0o + " + Ls + " <= " + end + ") {");
            e.line("    const int64_t r0e = " + block_end("r0o", end, false) + ";");
          } else {
            e.line("for (int64_t r0b = " + begin + "; r0b < " + end + "; r0b += " + K + ") {");
            e.line("    const int64_t r0e = " + block_end("r0b", end, R % kCascadeBlock == 0) + ";");
          }
          e.indent += "    ";
          lanes_end = "r0e";
        }
        e.line(tail ? "for (; r0o + " + Ls + " <= " + lanes_end + "; r0o += " + Ls + ") {"
                    : "for (int64_t r0o = " + (cascade.empty() ? begin : std::string("r0b")) + "; r0o < " + lanes_end + "; r0o += " + Ls + ") {");
        e.line("    #pragma omp simd");
        e.line("    LS_INNER_LOOP");  // unrolled, Clang left the lanes scalar (a row's max and sum: 20 ms -> 2.2 for 2^24)
        e.line("    for (int64_t r0i = 0; r0i < " + Ls + "; ++r0i) {");
        e.indent += "        ";
        e.line("const int64_t r0 = r0o + r0i;");
        e.nan_sticky = true;
        e.run_loop_nodes(s, [&](int n) { run_node(e, n, X, R); });
        e.indent.resize(e.indent.size() - 8);
        e.line("    }");
        e.line("}");
        // (their ls_cascade_sum follows the tail, below)
        close_cascade(e, cascade, [](int n) { return "acc" + std::to_string(n) + "_h, acc" + std::to_string(n) + "_l"; }, false);
        if (tail) {
          for (int n : reductions) accs_[n] = "acc" + std::to_string(n) + "_l[0]", acc_index_[n] = "acc" + std::to_string(n) + "_l_i[0]";
          e.line("for (int64_t r0 = r0o; r0 < " + end + "; ++r0) {");
          e.indent += "    ";
          e.run_loop_nodes(s, [&](int n) { run_node(e, n, X, R); });
          e.indent.resize(e.indent.size() - 4);
          e.line("}");
        }
        if (scoped) {
          e.indent.resize(e.indent.size() - 4);
          e.line("}");
        }
        e.nan_sticky = false;
        for (int n : reductions) {
          const LoopNode& ln = p_.nodes[n];
          const std::string acc = "acc" + std::to_string(n), lane = acc + "_l[ls_l]";
          e.node = n;
          if (reduce_is_arg(ln.reduce)) {
            e.line(std::string(dtype_c(ln.arg_dtype)) + " " + acc + " = " + acc + "_l[0];");
            e.line("int64_t " + acc + "_i = " + acc + "_l_i[0];");
            e.line("for (int64_t ls_l = 1; ls_l < " + Ls + "; ++ls_l) " + arg_step(ln, acc, lane, acc + "_l_i[ls_l]"));
            for (auto& [key, accumulator] : e.pending_reduction)
              if (accumulator == acc + "_l_i[r0i]" || accumulator == acc + "_l_i[0]") accumulator = acc + "_i";
            accs_[n] = acc;
            acc_index_[n] = acc + "_i";
            continue;
          }
          if (std::count(cascade.begin(), cascade.end(), n)) e.line("ls_cascade_sum(" + acc + "_h, " + acc + "_l);");
          e.line(std::string(dtype_c(compute_dtype(ln.dtype))) + " " + acc + " = " + acc + "_l[0];");
          e.line("for (int64_t ls_l = 1; ls_l < " + Ls + "; ++ls_l) " + acc + " = " + reduce_step(ln.reduce, acc, lane, true) + ";");
          // The pending stores name the lanes as the loop did: the combined value instead.
          for (auto& [key, accumulator] : e.pending_reduction)
            if (accumulator == acc + "_l[r0i]" || accumulator == acc + "_l[0]") accumulator = acc;
          accs_[n] = acc;
        }
        e.node = -1;
      };
      if (L && single_row && C > 1) {
        const std::string Cs = std::to_string(C), Rs = std::to_string(R);
        for (int n : reductions) {
          const LoopNode& ln = p_.nodes[n];
          e.node = n;
          e.line(std::string(dtype_c(reduce_is_arg(ln.reduce) ? ln.arg_dtype : compute_dtype(ln.dtype))) + " acc" + std::to_string(n) + "_c[" + Cs + "];");
          if (reduce_is_arg(ln.reduce)) e.line("int64_t acc" + std::to_string(n) + "_c_i[" + Cs + "];");
        }
        e.node = -1;
        e.line("#pragma omp parallel for schedule(static)");
        e.line("for (int64_t c = 0; c < " + Cs + "; ++c) {");
        e.indent += "    ";
        bool chunk_r0o = false;
        lanes_block("c * " + Rs + " / " + Cs, "(c + 1) * " + Rs + " / " + Cs, (R + C - 1) / C, true, chunk_r0o);
        for (int n : reductions) {
          const std::string acc = "acc" + std::to_string(n);
          e.line(acc + "_c[c] = " + acc + ";");
          if (reduce_is_arg(p_.nodes[n].reduce)) e.line(acc + "_c_i[c] = " + acc + "_i;");
        }
        e.indent.resize(e.indent.size() - 4);
        e.line("}");
        for (int n : reductions) {  // the chunks in order: the same value whatever the threads
          const LoopNode& ln = p_.nodes[n];
          const std::string acc = "acc" + std::to_string(n);
          e.node = n;
          if (reduce_is_arg(ln.reduce)) {
            e.line(std::string(dtype_c(ln.arg_dtype)) + " " + acc + " = " + acc + "_c[0];");
            e.line("int64_t " + acc + "_i = " + acc + "_c_i[0];");
            e.line("for (int64_t c = 1; c < " + Cs + "; ++c) " + arg_step(ln, acc, acc + "_c[c]", acc + "_c_i[c]"));
            continue;
          }
          // (a long float sum's chunks in pairs, the cascade's tree over them)
          if (cascades(n, R)) e.line("ls_pairwise_rows(" + acc + "_c, " + Cs + ", 1);");
          e.line(std::string(dtype_c(compute_dtype(ln.dtype))) + " " + acc + " = " + acc + "_c[0];");
          if (!cascades(n, R))
            e.line("for (int64_t c = 1; c < " + Cs + "; ++c) " + acc + " = " + reduce_step(ln.reduce, acc, acc + "_c[c]", true) + ";");
        }
        e.node = -1;
        e.bind_finished_reductions(k_.writes);
        continue;
      }
      if (L && !single_row) {
        lanes_block("0", std::to_string(R), R, o_.size_generic || R % L != 0, X <= 1 && !o_.size_generic && !rows_ ? r0o_declared_ : nest_r0o);
        e.bind_finished_reductions(k_.writes);
        continue;
      }
      // Accumulators of the reductions in this loop.
      std::string clauses;
      for (int n : reductions) {
        const LoopNode& ln = p_.nodes[n];
        const std::string acc = "acc" + std::to_string(n);
        accs_[n] = acc;
        e.node = n;
        if (reduce_is_arg(ln.reduce)) {
          e.line(std::string(dtype_c(ln.arg_dtype)) + " " + acc + " = " + reduce_identity(ln.reduce, ln.arg_dtype) + ";");
          e.line("int64_t " + acc + "_i = 0;");
          acc_index_[n] = acc + "_i";
          continue;
        }
        e.line(std::string(dtype_c(compute_dtype(ln.dtype))) + " " + acc + " = " + reduce_identity(ln.reduce, ln.dtype) + ";");
        clauses += std::string(" reduction(") + omp_reduction_op(ln.reduce) + ":" + acc + ")";
      }
      e.node = -1;
      // A short row's float max or min (under 16: no lanes) keeps a NaN as the lanes do: a plain
      // loop (a select that keeps a NaN is no reduction OpenMP's simd may reorder). A single row
      // too short to chunk keeps OpenMP's max, which drops a NaN that is not last.
      bool sticky = arg;
      if (!single_row)
        for (int n : s.nodes) sticky = sticky || fp_minmax(p_.nodes[n]);
      // Long float sums: the row in blocks (a single row too, on one thread: under 8192 elements
      // here), each block's sum carried into the cascade.
      std::vector<int> cascade;
      for (int n : reductions)
        if (cascades(n, R)) cascade.push_back(n);
      const std::string Rs = std::to_string(R);
      if (!cascade.empty()) {
        for (int n : cascade) {
          e.node = n;
          e.line("ls_cascade<1, " + std::to_string(cascade_depth(R)) + "> acc" + std::to_string(n) + "_h;");
        }
        e.node = -1;
        e.line("for (int64_t r0b = 0; r0b < " + Rs + "; r0b += " + std::to_string(kCascadeBlock) + ") {");
        e.indent += "    ";
      }
      if (single_row && cascade.empty()) e.line("#pragma omp parallel for simd schedule(static)" + clauses);
      else if (!sticky) e.line("#pragma omp simd" + clauses);
      if (cascade.empty()) e.line("for (int64_t r0 = 0; r0 < " + Rs + "; ++r0) {");
      else e.line("for (int64_t r0 = r0b; r0 < " + block_end("r0b", Rs, R % kCascadeBlock == 0) + "; ++r0) {");
      e.indent += "    ";
      e.nan_sticky = sticky;
      e.run_loop_nodes(s, [&](int n) { run_node(e, n, X, R); });
      e.nan_sticky = false;
      e.indent.resize(e.indent.size() - 4);
      e.line("}");
      close_cascade(e, cascade, [](int n) { return "acc" + std::to_string(n) + "_h, &acc" + std::to_string(n); }, true);
      e.bind_finished_reductions(k_.writes);
    }
    if (X > 1) {
      e.indent.resize(e.indent.size() - 4);
      e.line("}");
    }
  }

  // Cascade summation (cpu_prelude.h: ls_cascade_add): a float32 sum (a half type's too: its
  // accumulator is float32) whose accumulator walks more than one block of kCascadeBlock elements
  // (Inductor's chunk size: it takes CascadeSumHelper for sum reductions over more than 4096)
  // adds a block at a time into its accumulator, then carries the block's sum up a binary tree of
  // levels: the error grows as log(length / 4096) instead of the length (a float32 sum of 2^24
  // values of 0.1f: see tests/cpu's testLongFloatSumsCascade). Rows at most 4096 long are
  // unchanged. Size-generic code keeps the plain sum: its levels' count would depend on the size.
  static constexpr int64_t kCascadeBlock = 4096;
  // The end of a cascade's block loop (nothing without cascades): each sum's block carried up its
  // tree (ls_cascade_add), the block loop closed, and with `finish` each tree added back into its
  // accumulator (ls_cascade_sum). `args`: a node's helper and accumulator arguments.
  static void close_cascade(LoopEmitter& e, const std::vector<int>& cascade, const std::function<std::string(int)>& args, bool finish) {
    if (cascade.empty()) return;
    for (int n : cascade) {
      e.node = n;
      e.line("ls_cascade_add(" + args(n) + ");");
    }
    e.node = -1;
    e.indent.resize(e.indent.size() - 4);
    e.line("}");
    if (!finish) return;
    for (int n : cascade) {
      e.node = n;
      e.line("ls_cascade_sum(" + args(n) + ");");
    }
    e.node = -1;
  }
  bool cascades(int n, int64_t length) const {
    const LoopNode& ln = p_.nodes[n];
    return !o_.size_generic && ln.kind == LoopNode::Kind::reduction && ln.reduce == Reduce::sum && compute_dtype(ln.dtype) == DType::f32 &&
           length > kCascadeBlock;
  }
  // The levels a cascade over `length` elements needs: blocks up to 2^D - 1 (ls_cascade).
  static int64_t cascade_depth(int64_t length) {
    int64_t d = 0;
    for (int64_t blocks = (length + kCascadeBlock - 1) / kCascadeBlock; blocks > 0; blocks >>= 1) ++d;
    return d;
  }
  // The end of the block that starts at `b` in a loop that ends at `end` (a number, or an expression).
  static std::string block_end(const std::string& b, const std::string& end, bool whole_blocks) {
    const std::string next = b + " + " + std::to_string(kCascadeBlock);
    return whole_blocks ? next : "(" + next + " < " + end + " ? " + next + " : " + end + ")";
  }

  // An arg reduction's (acc, acc_i) takes the pair (v, i) unless it keeps its place.
  static std::string arg_step(const LoopNode& ln, const std::string& acc, const std::string& v, const std::string& i) {
    return "if (!ls_arg_keeps(" + std::string(ln.reduce == Reduce::argmax ? "true" : "false") + ", " + acc + ", " + v + ", " + acc + "_i, " + i +
           ")) " + acc + " = " + v + ", " + acc + "_i = " + i + ";";
  }

  void run_node(LoopEmitter& e, int n, int64_t X, int64_t R) {
    const LoopNode& ln = p_.nodes[n];
    const Placement pl = placement(n, X, R);
    e.node = n;
    if (ln.kind == LoopNode::Kind::reduction) {
      e.acc = accs_.at(n);
      if (reduce_is_arg(ln.reduce)) e.acc_index = acc_index_.at(n);
    }
    e.line("// " + ln.name + ": " + ln.graph_node);
    std::vector<Expr> idx = pl.idx;
    if (!subst_.empty())
      for (Expr& x : idx) x = x.substitute(subst_);
    ln.run(e, idx, pl.ridx);
    e.node = -1;
  }

  const LoopProgram& p_;
  const Kernel& k_;
  const CppCodegenOptions& o_;
  std::map<int, std::string> accs_;
  std::map<int, std::string> acc_index_;  // an arg reduction's index beside accs_'s value
  std::map<std::string, Expr> subst_;  // x0 split into outer and inner loops (inner_block)
  std::set<int> transposed_;           // the column form's pointwise nodes walked rows outer (placement)
  const int64_t row_;                  // an epilogue's product row length (0: not an epilogue)
  const int64_t threshold_;            // work from which a nest runs in parallel
  bool rows_ = false;                  // writing the epilogue's rows function: x0 in [begin, end)
  bool r0o_declared_ = false;          // a lanes tail declared r0o in the kernel function's own scope (nest_r0o: in a nest's)
  std::string ix_ = "int64_t";         // the outer loop's index type (write())
};

}  // namespace

namespace {
int64_t machine_threads() { return cpu_target().threads; }
}  // namespace

int64_t default_parallel_threshold() { return std::max<int64_t>(32768, 4096 * machine_threads()); }

int64_t default_library_input_threshold() { return std::max<int64_t>(4096, default_parallel_threshold() / machine_threads()); }

GeneratedSource generate_cpp(const LoopProgram& p, const Schedule& s, const CppCodegenOptions& o) {
  std::set<std::string> library_outputs;
  for (const Kernel& k : s.kernels)
    if (k.is_extern) library_outputs.insert(k.writes.begin(), k.writes.end());
  return assemble_source(s, "// Generated by Lowerscope: one kernel per fused group.", kCpuPrelude,
                         [&](size_t i, const Kernel& k, std::vector<Emitted>& lines) {
                           int64_t row = 0;
                           if (k.epilogue && !o.size_generic && i > 0)
                             row = p.buffer(s.kernels[i - 1].writes.at(0)).shape.back();
                           const bool reads_library_output = std::any_of(
                               k.reads.begin(), k.reads.end(), [&](const std::string& b) { return library_outputs.count(b) > 0; });
                           const int64_t threshold =
                               reads_library_output ? std::min(o.parallel_threshold, o.library_input_threshold) : o.parallel_threshold;
                           return KernelWriter(p, k, o, row, threshold).write(lines);
                         });
}

}  // namespace ls
