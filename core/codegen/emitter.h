// The loop-body emitter the C++ and CUDA generators share: runs a loop node's body under an
// OpsHandler that writes one statement per op (loads cached per scope, stores to memory only for
// buffers the kernel writes). Internal to codegen/.
#pragma once
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/cpp_codegen.h"
#include "loop/loop_ir.h"

namespace ls {

enum class Dialect : uint8_t { cpp, cuda };

// One step of a reduction: the accumulator's next value (`acc + x`, or the max or min). With
// `keep_nan` a NaN on either side sticks, as in torch and the reference interpreter; without it,
// the plain select an OpenMP max or min reduction takes.
inline std::string reduce_step(Reduce r, const std::string& acc, const std::string& x, bool keep_nan) {
  if (r == Reduce::prod) return acc + " * " + x;
  if (r != Reduce::max && r != Reduce::min) return acc + " + " + x;
  const std::string op = r == Reduce::max ? " > " : " < ";
  return keep_nan ? "(" + x + " != " + x + " || " + x + op + acc + ") ? " + x + " : " + acc : acc + op + x + " ? " + acc + " : " + x;
}

inline std::string literal(double v, DType t, Dialect d = Dialect::cpp) {
  t = compute_dtype(t);  // a half value is computed in float32
  std::ostringstream os;
  if (d == Dialect::cuda && (std::isinf(v) || std::isnan(v))) {  // NVRTC has no __builtin_inf
    const char* bits = std::isnan(v) ? (t == DType::f32 ? "0x7fc00000" : "0x7ff8000000000000LL")
                                     : (t == DType::f32 ? "0x7f800000" : "0x7ff0000000000000LL");
    const std::string e = t == DType::f32 ? std::string("__int_as_float(") + bits + ")" : std::string("__longlong_as_double(") + bits + ")";
    return std::isinf(v) && v < 0 ? "(-" + e + ")" : e;
  }
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

class LoopEmitter : public OpsHandler {
 public:
  // `p`: the program whose buffers ptrs names (their element types: half buffers are widened to
  // float32 where loaded and rounded where stored, as Inductor's upcast does).
  LoopEmitter(std::map<std::string, std::string> ptrs, std::set<std::string> in_memory, const LoopProgram& p, Dialect d = Dialect::cpp)
      : ptrs_(std::move(ptrs)), in_memory_(std::move(in_memory)), dialect_(d) {
    for (const auto& [buf, ptr] : ptrs_)
      if (const DType t = p.buffer(buf).dtype; dtype_is_half(t)) halves_[buf] = t;
  }

  std::vector<Emitted> lines;
  std::string indent = "    ";
  int node = -1;                 // loop node whose body is running
  std::string acc;               // accumulator of the reduction node whose body is running
  std::string acc_index;         // an arg reduction's: the index kept beside `acc` (its value)
  std::map<std::string, std::string> pending_reduction;  // buffer@index -> accumulator
  bool nan_sticky = false;  // max/min reductions keep a NaN (the C++ lanes form)
  bool memory_stores = true;  // false while re-running a node recomputed in a later loop
  // CUDA kernels whose every buffer is bf16/f16: float32 exp as ex2.approx (ls_exp_fast), as
  // Triton's tl.exp; its error (a few float32 ulps) vanishes in the half result's rounding.
  bool fast_exp = false;
  // ... and float32 division as div.full.f32 (ls_div_fast), as Triton's `/` for float32: IEEE
  // division is a subroutine of some twenty instructions, which held softmax at 16384x4096 in bf16
  // to 45% of copy bandwidth (86% with div.full, tools/gpu/softmax_half_variants.cu).
  bool fast_div = false;
  std::string store_guard;  // a condition every store to memory waits on (CUDA: one thread per row stores)
  // CUDA 16-byte accesses: a load of buffer[index] (key "buffer[index]") that reads a lane of a
  // float4 loaded before the lane loop (its value: the text given), and a store that sets a lane
  // of a float4 stored after it (the float4's name); the lane is ls_j.
  std::map<std::string, std::string> vector_loads, vector_stores;

  // After an r loop: each finished reduction becomes a value of the x iteration, and is stored
  // (behind store_guard) when the kernel writes its buffer.
  void bind_finished_reductions(const std::vector<std::string>& writes, const std::string& guard = {}) {
    for (auto& [key, accumulator] : pending_reduction) {
      const auto bar = key.find('|');
      const std::string k = key.substr(0, bar), idx_cpp = key.substr(bar + 1);
      const std::string buf = k.substr(0, k.find('['));
      bind(k, accumulator);
      if (std::count(writes.begin(), writes.end(), buf))
        line((guard.empty() ? "" : "if (" + guard + ") ") + ptrs_.at(buf) + "[" + idx_cpp + "] = " + stored(buf, accumulator) + ";");
    }
    pending_reduction.clear();
  }

  // The nodes of an r loop, in a scope of their own; those recomputed there give their values,
  // not their stores.
  template <typename RunNode>
  void run_loop_nodes(const KernelLoop& l, RunNode run_node) {
    push_scope();
    for (int n : l.nodes) {
      memory_stores = !l.recomputed.count(n);
      run_node(n);
    }
    memory_stores = true;
    pop_scope();
  }

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
    if (auto f = vector_loads.find(key); f != vector_loads.end()) line("auto " + v + " = " + f->second + ";");
    else if (halves_.count(buf)) line("auto " + v + " = ls_float(" + ptrs_.at(buf) + "[" + index.cpp() + "]);");
    else line("auto " + v + " = " + ptrs_.at(buf) + "[" + index.cpp() + "];");
    scopes_.back()[key] = v;
    return value(v);
  }
  V constant(double v, DType t) override {
    V r = value(literal(v, t, dialect_));
    consts_[r.id] = v;
    return r;
  }
  V index_expr(const Expr& e, DType t) override {
    const std::string v = fresh();
    line("auto " + v + " = static_cast<" + std::string(dtype_c(compute_dtype(t))) + ">(" + e.cpp() + ");");
    return value(v);
  }
  V math(Math m, const std::vector<V>& a, DType t) override {
    auto s = [&](int i) { return names_.at(a.at(i).id); };
    if (dtype_is_half(t) && m == Math::identity) return rounded(s(0), t);  // a conversion to a half type rounds
    const DType out_t = t;
    t = compute_dtype(t);
    std::string e;
    switch (m) {
      case Math::exp:
        e = std::string(fast_exp && t == DType::f32 ? "ls_exp_fast(" : "ls_exp(") + s(0) + ")";
        break;
      case Math::neg: e = "-" + s(0); break;
      case Math::identity: e = s(0); break;
      case Math::add: e = s(0) + " + " + s(1); break;
      case Math::sub: e = s(0) + " - " + s(1); break;
      case Math::mul: e = s(0) + " * " + s(1); break;
      case Math::div: e = fast_div && t == DType::f32 ? "ls_div_fast(" + s(0) + ", " + s(1) + ")" : s(0) + " / " + s(1); break;
      case Math::lt: e = s(0) + " < " + s(1); break;
      case Math::le: e = s(0) + " <= " + s(1); break;
      case Math::gt: e = s(0) + " > " + s(1); break;
      case Math::ge: e = s(0) + " >= " + s(1); break;
      case Math::eq: e = s(0) + " == " + s(1); break;
      case Math::ne: e = s(0) + " != " + s(1); break;
      case Math::where: e = s(0) + " ? " + s(1) + " : " + s(2); break;
      case Math::reciprocal: e = literal(1.0, t, dialect_) + " / " + s(0); break;
      case Math::pow: {
        // Small constant exponents become multiplications, as Inductor does.
        auto c = consts_.find(a.at(1).id);
        if (c != consts_.end() && c->second == 2.0) e = s(0) + " * " + s(0);
        else if (c != consts_.end() && c->second == 1.0) e = s(0);
        else if (c != consts_.end() && c->second == 3.0) e = s(0) + " * " + s(0) + " * " + s(0);
        else if (c != consts_.end() && c->second == 0.5) e = "ls_sqrt(" + s(0) + ")";
        else if (!dtype_is_float(t)) e = "ls_ipow(" + s(0) + ", static_cast<" + std::string(dtype_c(t)) + ">(" + s(1) + "))";
        else e = "ls_pow(" + s(0) + ", static_cast<" + std::string(dtype_c(t)) + ">(" + s(1) + "))";
        break;
      }
      case Math::maximum:
      case Math::minimum:
        // Integer operands of the result's type: a literal (an int) beside an int64_t value would
        // leave the helper's one type parameter undecided.
        if (!dtype_is_float(t)) {
          const std::string c = "static_cast<" + std::string(dtype_c(t)) + ">(";
          e = "ls_" + std::string(math_name(m)) + "(" + c + s(0) + "), " + c + s(1) + "))";
          break;
        }
        [[fallthrough]];
      default: {
        e = "ls_" + std::string(math_name(m)) + "(";
        for (size_t i = 0; i < a.size(); ++i) e += (i ? ", " : "") + s(static_cast<int>(i));
        e += ")";
      }
    }
    // C++: a bool (a comparison, a select or logic of them) is written where its value is used,
    // not held in a bool variable: GCC's vectorizer gives up on a loop whose selects read bool
    // variables beside interleaved loads (cifar_net's max-pool over ReLU, 2x2 windows, and its
    // argmax: "no vectype", scalar and branchy, 8x slower than Clang's code); inline, it
    // vectorizes. Long ones stay variables (an expression read twice is written twice).
    // A conversion to bool keeps its cast there: inline, `(x)` of a float x stayed a float in
    // C++ (OPT's float attention mask `.to(torch.bool)`, and-ed with the causal mask: `bool &
    // float` did not compile), and a bool used as a number must be 0 or 1.
    if (dialect_ == Dialect::cpp && t == DType::b8 && m == Math::identity) e = "static_cast<bool>(" + e + ")";
    if (dialect_ == Dialect::cpp && t == DType::b8 && e.size() < 160) return value("(" + e + ")");
    // A half-typed op computes in float32 and rounds its value to its type, as eager (and the
    // unfused code, which stores it) does, also where its value stays in a register: a value the
    // backward recomputes then equals the one the forward stored, which the saved statistics of a
    // norm were computed from (Inductor's emulate_precision_casts). Without it ViT's bf16 training
    // step had gradients of bf16 rounding noise where eager's are float32 noise.
    if (dtype_is_half(out_t)) return rounded(e, out_t);
    const std::string v = fresh();
    line("auto " + v + " = static_cast<" + std::string(dtype_c(t)) + ">(" + e + ");");
    return value(v);
  }
  // An indirect index: its value as int64, counted from the end where negative (`wrap`), and out
  // of range recorded (ls_index_fault: the node, the value, the size) and replaced by 0, so no
  // access leaves the buffer.
  Expr indirect(V v, int64_t size, bool wrap) override {
    const std::string n = fresh(Expr::kIndirectPrefix);
    const std::string sz = std::to_string(size);
    line("int64_t " + n + " = static_cast<int64_t>(" + names_.at(v.id) + ");");
    if (wrap) line("if (" + n + " < 0) " + n + " += " + sz + ";");
    line("if (" + n + " < 0 || " + n + " >= " + sz + ") " + n + " = ls_index_fault(" + n + ", " + sz + ", " + std::to_string(node) + ");");
    const std::string d = "static_cast<int64_t>(" + names_.at(v.id) + ")";
    in_range_[n] = d + " >= " + (wrap ? "-" + sz : std::string("0")) + " && " + d + " < " + sz;  // (for a scatter's store)
    return Expr::indirect(n, size);
  }
  V reduction(Reduce r, DType t, V v) override {
    const std::string x = names_.at(v.id);
    // A NaN sticks in CUDA code and where the C++ loop needs no reduction the compiler
    // recognizes (lanes, columns, short rows); an OpenMP max keeps the plain select.
    // A CUDA product calls its step helper, so the source carries the product combiners
    // (cuda_prelude.h: reduction op 3).
    if (r == Reduce::prod && dialect_ == Dialect::cuda) line(acc + " = ls_prod_step(" + acc + ", " + x + ");");
    else line(acc + " = " + reduce_step(r, acc, x, (nan_sticky || dialect_ == Dialect::cuda) && dtype_is_float(t)) + ";");
    return value(acc);
  }
  // An arg reduction's step: (acc, acc_index) takes the element unless it keeps its own place
  // (ls_arg_keeps, codegen/*_prelude.h: a NaN wins, then the extremum, then the lower index), so
  // any order of the elements, and of the partial results combined later, gives the same index.
  V arg_reduction(Reduce r, DType, V v, V index) override {
    const std::string x = names_.at(v.id), i = names_.at(index.id);
    line("if (!ls_arg_keeps(" + std::string(r == Reduce::argmax ? "true" : "false") + ", " + acc + ", " + x + ", " + acc_index + ", " + i +
         ")) " + acc + " = " + x + ", " + acc_index + " = " + i + ";");
    return value(acc_index);
  }
  void store(const std::string& buf, const Expr& index, V v) override {
    const std::string key = buf + "[" + index.str() + "]";
    if (memory_stores && in_memory_.count(buf)) {
      if (auto f = vector_stores.find(key); f != vector_stores.end()) line("ls_set_lane(" + f->second + ", ls_j, " + stored(buf, names_.at(v.id)) + ");");
      else line((store_guard.empty() ? "" : "if (" + store_guard + ") ") + ptrs_.at(buf) + "[" + index.cpp() + "] = " + stored(buf, names_.at(v.id)) + ";");
    }
    scopes_.back()[key] = names_.at(v.id);
  }
  // A scatter's store: skipped where an indirect index of it was out of range (its fault is
  // recorded, and it stands at 0); an add is atomic (parallel iterations may hit one element).
  void scatter_store(const std::string& buf, const Expr& index, V v, StoreMode mode, DType t) override {
    if (!memory_stores || !in_memory_.count(buf)) return;
    std::string guard;
    for (const std::string& var : index.vars())
      if (auto r = in_range_.find(var); r != in_range_.end()) guard += (guard.empty() ? "" : " && ") + r->second;
    const std::string at = ptrs_.at(buf) + "[" + index.cpp() + "]", x = "static_cast<" + std::string(dtype_c(t)) + ">(" + names_.at(v.id) + ")";
    std::vector<std::string> body;
    if (mode == StoreMode::set) body = {at + " = " + stored(buf, names_.at(v.id)) + ";"};
    else if (dialect_ == Dialect::cuda) body = {"atomicAdd(&" + at + ", " + x + ");"};
    else body = {"#pragma omp atomic", at + " += " + x + ";"};
    if (!guard.empty()) line("if (" + guard + ") {");
    for (const std::string& b : body) line((guard.empty() ? "" : "    ") + b);
    if (!guard.empty()) line("}");
  }
  void store_reduction(const std::string& buf, const Expr& index, V v) override {
    pending_reduction[buf + "[" + index.str() + "]|" + index.cpp()] = names_.at(v.id);  // acc, or an arg reduction's acc_index
  }

 private:
  V value(const std::string& s) {
    names_.push_back(s);
    return V{static_cast<int>(names_.size()) - 1};
  }
  // A value rounded to half type t, kept as float (v) beside its half bits (v + "h"), which a
  // store into a buffer of that type takes as they are: rounding the float again costs three
  // instructions an element that the compiler does not fold (softmax at 16384x4096 in bf16: 0.078
  // -> 0.070 ms, 81% -> 91% of copy, tools/gpu/softmax_half_variants.cu).
  V rounded(const std::string& e, DType t) {
    const std::string v = fresh();
    line("auto " + v + "h = " + std::string(t == DType::bf16 ? "ls_to_bf16" : "ls_to_f16") + "(static_cast<float>(" + e + "));");
    line("auto " + v + " = ls_float(" + v + "h);");
    half_bits_[v] = t;
    return value(v);
  }
  // The text that stores value `v` into buffer `buf`: rounded to the buffer's half type.
  std::string stored(const std::string& buf, const std::string& v) const {
    auto h = halves_.find(buf);
    if (h == halves_.end()) return v;
    if (auto r = half_bits_.find(v); r != half_bits_.end() && r->second == h->second) return v + "h";
    return std::string(h->second == DType::bf16 ? "ls_to_bf16" : "ls_to_f16") + "(static_cast<float>(" + v + "))";
  }
  std::map<std::string, DType> halves_;
  std::map<std::string, DType> half_bits_;  // values rounded to a half type -> that type (rounded())
  std::map<std::string, std::string> in_range_;  // indirect index -> its value lies in range (before the fault's 0)
  std::map<std::string, std::string> ptrs_;
  std::set<std::string> in_memory_;
  Dialect dialect_;
  std::vector<std::map<std::string, std::string>> scopes_;
  std::vector<std::string> names_;
  std::map<int, double> consts_;
  int counter_ = 0;
};

// A reduction's start value in type t (an arg reduction's: its value's, beside index 0). An
// integer max or min starts from the type's lowest or highest value (not from an infinity).
inline std::string reduce_identity(Reduce r, DType t, Dialect d = Dialect::cpp) {
  const bool max = r == Reduce::max || r == Reduce::argmax, min = r == Reduce::min || r == Reduce::argmin;
  if ((max || min) && !dtype_is_float(t)) {
    switch (t) {
      case DType::i64: return max ? "(-9223372036854775807LL - 1)" : "9223372036854775807LL";
      case DType::i32: return max ? "(-2147483647 - 1)" : "2147483647";
      case DType::u8: return max ? "0" : "255";
      case DType::b8: return max ? "false" : "true";
      default: break;
    }
  }
  if (max) return literal(-INFINITY, t, d);
  if (min) return literal(INFINITY, t, d);
  if (r == Reduce::prod) return literal(1, t, d);
  return literal(0, t, d);
}

// The prelude a source starts with: the text before the on-demand marker whole, then each
// paragraph after it (one helper: the first ls_ name in it) that `code` calls (a type: whose
// pointers it declares). Helpers added there
// (the newer ops' scalar functions) reach only the sources that use them; other sources stay as
// they were, byte for byte (the process replay).
inline std::string prelude_for(const char* prelude, const std::string& code) {
  const std::string p(prelude);
  const auto at = p.find("// ---- on demand");
  if (at == std::string::npos) return p;
  std::string out = p.substr(0, at);
  while (out.size() >= 2 && out.compare(out.size() - 2, 2, "\n\n") == 0) out.pop_back();  // the blank line before the marker
  size_t from = p.find("\n\n", at);  // the marker's own paragraph is its comment
  while (from != std::string::npos) {
    from += 2;
    const size_t to = std::min(p.find("\n\n", from), p.size());
    const std::string para = p.substr(from, to - from);
    const size_t name_at = para.find("ls_");
    size_t name_end = name_at;
    while (name_end < para.size() && (std::isalnum(static_cast<unsigned char>(para[name_end])) || para[name_end] == '_')) ++name_end;
    const std::string name = name_at == std::string::npos ? "" : para.substr(name_at, name_end - name_at);
    if (!name.empty() && (code.find(name + "(") != std::string::npos || code.find(name + "*") != std::string::npos))
      out += para + (para.empty() || para.back() == '\n' ? "" : "\n");
    from = to < p.size() ? to : std::string::npos;
  }
  return out;
}

// One translation unit: a header line and the prelude, then every kernel of the schedule, in
// order: a library call gets an entry with its buffers and no code; a generated kernel gets the
// lines `write(index, kernel, lines)` appends, with their line range and the loop node behind
// each line recorded. The prelude is written last, in front of the kernels: the helpers it carries
// on demand are those the kernels call (prelude_for).
template <typename Write>
GeneratedSource assemble_source(const Schedule& s, const std::string& header, const char* prelude, Write write) {
  GeneratedSource src;
  std::vector<Emitted> lines;
  lines.push_back({header});
  for (size_t i = 0; i < s.kernels.size(); ++i) {
    const Kernel& k = s.kernels[i];
    GeneratedKernel gk;
    if (k.is_extern) {
      gk.name = k.name;
      gk.args = k.reads;
      gk.args.insert(gk.args.end(), k.writes.begin(), k.writes.end());
      src.kernels.push_back(gk);
      continue;
    }
    lines.push_back({""});
    const int first = static_cast<int>(lines.size()) + 1;
    try {
      gk = write(i, k, lines);
    } catch (const std::out_of_range& e) {
      throw std::logic_error("kernel " + k.name + ": a value it reads has no variable or buffer (" + e.what() + ")");
    }
    gk.first_line = first;
    gk.last_line = static_cast<int>(lines.size());
    for (int l = first; l <= gk.last_line; ++l)
      if (lines[l - 1].node >= 0) gk.line_nodes.emplace_back(l, lines[l - 1].node);
    src.kernels.push_back(gk);
  }
  std::string body;
  for (size_t l = 1; l < lines.size(); ++l) body += lines[l].text + '\n';
  std::vector<Emitted> pre_lines;
  std::istringstream pre(prelude_for(prelude, body));
  for (std::string l; std::getline(pre, l);) pre_lines.push_back({l});
  lines.insert(lines.begin() + 1, pre_lines.begin(), pre_lines.end());
  const int shift = static_cast<int>(pre_lines.size());
  for (GeneratedKernel& gk : src.kernels) {
    if (gk.last_line == 0) continue;  // a library call: no lines
    gk.first_line += shift;
    gk.last_line += shift;
    for (auto& ln : gk.line_nodes) ln.first += shift;
  }
  std::ostringstream os;
  for (const Emitted& e : lines) os << e.text << '\n';
  src.code = os.str();
  return src;
}

}  // namespace ls
