#include "codegen/cpp_codegen.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "loop/dependencies.h"

extern const char kCpuPrelude[];

namespace ls {
namespace {

std::string literal(double v, DType t) {
  std::ostringstream os;
  if (std::isinf(v)) return std::string(v > 0 ? "" : "-") + (t == DType::f32 ? "__builtin_inff()" : "__builtin_inf()");
  if (std::isnan(v)) return t == DType::f32 ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")";
  if (t == DType::b8) return v != 0 ? "true" : "false";
  if (!dtype_is_float(t)) {
    os << static_cast<int64_t>(v);
    return os.str();
  }
  os.precision(t == DType::f32 ? 9 : 17);
  os << v;
  std::string s = os.str();
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return t == DType::f32 ? s + "f" : s;
}

struct Emitted {
  std::string text;
  int node = -1;  // loop node that produced the line
};

class CppEmitter : public OpsHandler {
 public:
  CppEmitter(std::map<std::string, std::string> ptrs, std::set<std::string> in_memory)
      : ptrs_(std::move(ptrs)), in_memory_(std::move(in_memory)) {}

  std::vector<Emitted> lines;
  std::string indent = "    ";
  int node = -1;                 // loop node whose body is running
  std::string acc;               // accumulator of the reduction node whose body is running
  std::map<std::string, std::string> pending_reduction;  // buffer@index -> accumulator

  void push_scope() { scopes_.emplace_back(); }
  void pop_scope() { scopes_.pop_back(); }
  void bind(const std::string& key, const std::string& var) { scopes_.back()[key] = var; }
  void line(const std::string& s) { lines.push_back({indent + s, node}); }
  std::string fresh(const std::string& base = "tmp") { return base + std::to_string(counter_++); }

  V load(const std::string& buf, const Expr& index) override {
    const std::string key = buf + "[" + index.str() + "]";
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (auto f = it->find(key); f != it->end()) return value(f->second);
    const std::string v = fresh();
    line("auto " + v + " = " + ptrs_.at(buf) + "[" + index.cpp() + "];");
    scopes_.back()[key] = v;
    return value(v);
  }
  V constant(double v, DType t) override {
    V r = value(literal(v, t));
    consts_[r.id] = v;
    return r;
  }
  V math(Math m, const std::vector<V>& a, DType t) override {
    auto s = [&](int i) { return names_.at(a.at(i).id); };
    std::string e;
    switch (m) {
      case Math::neg: e = "-" + s(0); break;
      case Math::identity: e = s(0); break;
      case Math::add: e = s(0) + " + " + s(1); break;
      case Math::sub: e = s(0) + " - " + s(1); break;
      case Math::mul: e = s(0) + " * " + s(1); break;
      case Math::div: e = s(0) + " / " + s(1); break;
      case Math::lt: e = s(0) + " < " + s(1); break;
      case Math::le: e = s(0) + " <= " + s(1); break;
      case Math::gt: e = s(0) + " > " + s(1); break;
      case Math::ge: e = s(0) + " >= " + s(1); break;
      case Math::eq: e = s(0) + " == " + s(1); break;
      case Math::ne: e = s(0) + " != " + s(1); break;
      case Math::where: e = s(0) + " ? " + s(1) + " : " + s(2); break;
      case Math::reciprocal: e = literal(1.0, t) + " / " + s(0); break;
      case Math::pow: {
        // Small constant exponents become multiplications, as Inductor does.
        auto c = consts_.find(a.at(1).id);
        if (c != consts_.end() && c->second == 2.0) e = s(0) + " * " + s(0);
        else if (c != consts_.end() && c->second == 1.0) e = s(0);
        else if (c != consts_.end() && c->second == 3.0) e = s(0) + " * " + s(0) + " * " + s(0);
        else if (c != consts_.end() && c->second == 0.5) e = "ls_sqrt(" + s(0) + ")";
        else e = "ls_pow(" + s(0) + ", static_cast<" + std::string(dtype_c(t)) + ">(" + s(1) + "))";
        break;
      }
      default: {
        e = "ls_" + std::string(math_name(m)) + "(";
        for (size_t i = 0; i < a.size(); ++i) e += (i ? ", " : "") + s(static_cast<int>(i));
        e += ")";
      }
    }
    const std::string v = fresh();
    line("auto " + v + " = static_cast<" + std::string(dtype_c(t)) + ">(" + e + ");");
    return value(v);
  }
  V reduction(Reduce r, DType, V v) override {
    const std::string x = names_.at(v.id);
    switch (r) {
      case Reduce::max: line(acc + " = " + acc + " > " + x + " ? " + acc + " : " + x + ";"); break;
      case Reduce::min: line(acc + " = " + acc + " < " + x + " ? " + acc + " : " + x + ";"); break;
      default: line(acc + " = " + acc + " + " + x + ";"); break;
    }
    return value(acc);
  }
  void store(const std::string& buf, const Expr& index, V v) override {
    if (in_memory_.count(buf)) line(ptrs_.at(buf) + "[" + index.cpp() + "] = " + names_.at(v.id) + ";");
    scopes_.back()[buf + "[" + index.str() + "]"] = names_.at(v.id);
  }
  void store_reduction(const std::string& buf, const Expr& index, V) override {
    pending_reduction[buf + "[" + index.str() + "]|" + index.cpp()] = acc;
  }

 private:
  V value(const std::string& s) {
    names_.push_back(s);
    return V{static_cast<int>(names_.size()) - 1};
  }
  std::map<std::string, std::string> ptrs_;
  std::set<std::string> in_memory_;
  std::vector<std::map<std::string, std::string>> scopes_;
  std::vector<std::string> names_;
  std::map<int, double> consts_;
  int counter_ = 0;
};

std::string reduce_identity(Reduce r, DType t) {
  if (r == Reduce::max) return literal(-INFINITY, t);
  if (r == Reduce::min) return literal(INFINITY, t);
  return literal(0, t);
}

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
    CppEmitter e(ptrs, in_memory);
    std::string origins;
    for (const auto& o : k_.origins) origins += (origins.empty() ? "" : ", ") + o;
    e.lines.push_back({"// " + k_.name + ": iteration (" + std::to_string(k_.numel) + ", " + std::to_string(k_.rnumel) +
                       "), from " + origins});
    e.lines.push_back({"extern \"C\" void " + k_.name + "(" + params + ") {"});
    e.push_scope();
    const int64_t X = k_.numel, R = k_.rnumel;
    const bool parallel_outer = X > 1 && X * R >= o_.parallel_threshold;
    const Expr x = Expr::var("x0", X);

    const std::vector<KernelLoop> segs = kernel_loops(p_, k_.nodes, X, R);

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
      for (int n : s.nodes) run_node(e, n, X, R);
      e.pop_scope();
      e.indent.resize(e.indent.size() - 4);
      e.line("}");
      // Reduction results become values of the x iteration (and go to memory if needed).
      for (auto& [key, acc] : e.pending_reduction) {
        const auto bar = key.find('|');
        const std::string k = key.substr(0, bar), idx_cpp = key.substr(bar + 1);
        const std::string buf = k.substr(0, k.find('['));
        e.bind(k, acc);
        if (std::count(k_.writes.begin(), k_.writes.end(), buf)) e.line(ptrs.at(buf) + "[" + idx_cpp + "] = " + acc + ";");
      }
      e.pending_reduction.clear();
    }
    if (X > 1) {
      e.indent.resize(e.indent.size() - 4);
      e.line("}");
    }
    e.pop_scope();
    e.node = -1;
    e.lines.push_back({"}"});
    e.lines.push_back({"extern \"C\" void " + gk.launcher + "(void** a) { " + k_.name + "(" + casts + "); }"});
    out.insert(out.end(), e.lines.begin(), e.lines.end());
    return gk;
  }

 private:
  void run_node(CppEmitter& e, int n, int64_t X, int64_t R) {
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
  GeneratedSource src;
  std::vector<Emitted> lines;
  std::istringstream prelude(kCpuPrelude);
  std::string l;
  lines.push_back({"// Generated by Lowerscope: one kernel per fused group."});
  while (std::getline(prelude, l)) lines.push_back({l});
  for (const Kernel& k : s.kernels) {
    if (k.is_extern) {  // a library call: the executor runs it; nothing to generate
      GeneratedKernel gk;
      gk.name = k.name;
      gk.args = k.reads;
      gk.args.insert(gk.args.end(), k.writes.begin(), k.writes.end());
      src.kernels.push_back(gk);
      continue;
    }
    lines.push_back({""});
    const int first = static_cast<int>(lines.size()) + 1;
    GeneratedKernel gk;
    try {
      gk = KernelWriter(p, k, o).write(lines);
    } catch (const std::out_of_range& e) {
      throw std::logic_error("kernel " + k.name + ": a value it reads has no variable or buffer (" + e.what() + ")");
    }
    gk.first_line = first;
    gk.last_line = static_cast<int>(lines.size());
    for (int i = first; i <= gk.last_line; ++i)
      if (lines[i - 1].node >= 0) gk.line_nodes.emplace_back(i, lines[i - 1].node);
    src.kernels.push_back(gk);
  }
  std::ostringstream os;
  for (const Emitted& e : lines) os << e.text << '\n';
  src.code = os.str();
  return src;
}

}  // namespace ls
