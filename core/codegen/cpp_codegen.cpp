#include "codegen/cpp_codegen.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "codegen/emitter.h"
#include "loop/dependencies.h"

extern const char kCpuPrelude[];

namespace ls {
namespace {

const char* omp_reduction_op(Reduce r) { return r == Reduce::max ? "max" : r == Reduce::min ? "min" : "+"; }

class KernelWriter {
 public:
  KernelWriter(const LoopProgram& p, const Kernel& k, const CppCodegenOptions& o) : p_(p), k_(k), o_(o) {}

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
      const std::string type = std::string(dtype_c(p_.buffer(buf).dtype));
      params += std::string(params.empty() ? "" : ", ") + (write ? "" : "const ") + type + "* __restrict " + ptr;
      casts += std::string(casts.empty() ? "" : ", ") + "static_cast<" + (write ? "" : "const ") + type + "*>(a[" +
               std::to_string(gk.args.size()) + "])";
      gk.args.push_back(buf);
    };
    for (const auto& b : k_.reads) add_arg(b, false);
    for (const auto& b : k_.writes) add_arg(b, true);

    std::set<std::string> in_memory(k_.writes.begin(), k_.writes.end());
    LoopEmitter e(ptrs, in_memory);
    std::string origins;
    for (const auto& o : k_.origins) origins += (origins.empty() ? "" : ", ") + o;
    std::string iter;
    for (const LoopNest& n : k_.loop_nests())
      iter += (iter.empty() ? "(" : " then (") + std::to_string(n.numel) + ", " + std::to_string(n.rnumel) + ")";
    e.lines.push_back({"// " + k_.name + ": iteration " + iter + ", from " + origins});
    e.lines.push_back({"extern \"C\" void " + k_.name + "(" + params + ") {"});
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
    out.insert(out.end(), e.lines.begin(), e.lines.end());
    return gk;
  }

 private:
  void write_nest(LoopEmitter& e, const LoopNest& nest) {
    const int64_t X = nest.numel, R = nest.rnumel;
    const bool parallel_outer = X > 1 && X * R >= o_.parallel_threshold;
    const std::vector<KernelLoop> segs = kernel_loops(p_, nest.nodes, X, R);
    if (X > 1) {
      if (R == 1)
        e.line(parallel_outer ? "#pragma omp parallel for simd schedule(static)" : "#pragma omp simd");
      else if (parallel_outer)
        e.line("#pragma omp parallel for schedule(static)");
      e.line("for (int64_t x0 = 0; x0 < " + std::to_string(X) + "; ++x0) {");
      e.indent += "    ";
    }
    for (const KernelLoop& s : segs) {
      if (!s.inner) {
        for (int n : s.nodes) run_node(e, n, X, R);
        continue;
      }
      // Accumulators of the reductions in this loop.
      std::vector<std::string> reduction_clauses;
      for (int n : s.nodes) {
        const LoopNode& ln = p_.nodes[n];
        if (ln.kind != LoopNode::Kind::reduction) continue;
        const std::string acc = "acc" + std::to_string(n);
        accs_[n] = acc;
        e.node = n;
        e.line(std::string(dtype_c(ln.dtype)) + " " + acc + " = " + reduce_identity(ln.reduce, ln.dtype) + ";");
        reduction_clauses.push_back(std::string(" reduction(") + omp_reduction_op(ln.reduce) + ":" + acc + ")");
      }
      std::string clauses;
      for (const auto& c : reduction_clauses) clauses += c;
      e.node = -1;
      if (!parallel_outer && R >= o_.parallel_threshold) e.line("#pragma omp parallel for simd schedule(static)" + clauses);
      else e.line("#pragma omp simd" + clauses);
      e.line("for (int64_t r0 = 0; r0 < " + std::to_string(R) + "; ++r0) {");
      e.indent += "    ";
      e.push_scope();
      for (int n : s.nodes) {
        e.memory_stores = !s.recomputed.count(n);
        run_node(e, n, X, R);
      }
      e.memory_stores = true;
      e.pop_scope();
      e.indent.resize(e.indent.size() - 4);
      e.line("}");
      e.bind_finished_reductions(k_.writes);
    }
    if (X > 1) {
      e.indent.resize(e.indent.size() - 4);
      e.line("}");
    }
  }

  void run_node(LoopEmitter& e, int n, int64_t X, int64_t R) {
    const LoopNode& ln = p_.nodes[n];
    const Placement pl = place(ln, X, R);
    e.node = n;
    if (ln.kind == LoopNode::Kind::reduction) {
      e.acc = accs_.at(n);
    }
    e.line("// " + ln.name + ": " + ln.graph_node);
    if (X == 1) {  // no x loop: x0 is 0
      std::vector<Expr> idx = pl.idx;
      ln.run(e, idx, pl.ridx);
    } else {
      ln.run(e, pl.idx, pl.ridx);
    }
    e.node = -1;
  }

  const LoopProgram& p_;
  const Kernel& k_;
  const CppCodegenOptions& o_;
  std::map<int, std::string> accs_;
};

}  // namespace

GeneratedSource generate_cpp(const LoopProgram& p, const Schedule& s, const CppCodegenOptions& o) {
  return assemble_source(s, "// Generated by Lowerscope: one kernel per fused group.", kCpuPrelude,
                         [&](size_t, const Kernel& k, std::vector<Emitted>& lines) { return KernelWriter(p, k, o).write(lines); });
}

}  // namespace ls
