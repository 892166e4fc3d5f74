#include "frontend/fx_text.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include "frontend/autocast_policy.h"
#include "frontend/export_records.h"
#include "frontend/torch_functions.h"
#include "ops/known_ops.h"
#include "ops/op_table.h"
#include "ops/print.h"

namespace ls {

ParseError::ParseError(const std::string& source, int l, int c, const std::string& what)
    : std::runtime_error(source + ":" + std::to_string(l) + ":" + std::to_string(c) + ": " + what), line(l), column(c) {}

namespace {

struct Token {
  enum Kind { name, number, string, punct, end } kind = end;
  std::string text;
  int col = 0;
};

class Lexer {
 public:
  Lexer(const std::string& s, int col0) : s_(s), col0_(col0) {}
  std::vector<Token> run(const std::function<void(int, const std::string&)>& fail) {
    std::vector<Token> out;
    size_t i = 0;
    while (i < s_.size()) {
      const char c = s_[i];
      if (c == ' ' || c == '\t') { ++i; continue; }
      Token t;
      t.col = col0_ + static_cast<int>(i);
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t j = i;
        while (j < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[j])) || s_[j] == '_' || s_[j] == '.')) ++j;
        t.kind = Token::name;
        t.text = s_.substr(i, j - i);
        i = j;
      } else if (std::isdigit(static_cast<unsigned char>(c)) ||
                 (c == '.' && i + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i + 1])))) {
        size_t j = i;
        while (j < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[j])) || s_[j] == '.' ||
                                 ((s_[j] == '-' || s_[j] == '+') && (s_[j - 1] == 'e' || s_[j - 1] == 'E'))))
          ++j;
        t.kind = Token::number;
        t.text = s_.substr(i, j - i);
        i = j;
      } else if (c == '\'' || c == '"') {
        const size_t j = s_.find(c, i + 1);
        if (j == std::string::npos) fail(t.col, "unterminated string");
        t.kind = Token::string;
        t.text = s_.substr(i + 1, j - i - 1);
        i = j + 1;
      } else {
        static const char* two[] = {"**", "<=", ">=", "==", "!=", "//", "+=", "-=", "*=", "/="};
        t.kind = Token::punct;
        t.text = std::string(1, c);
        for (const char* op : two)
          if (s_.compare(i, 2, op) == 0) t.text = op;
        i += t.text.size();
      }
      out.push_back(t);
    }
    Token e;
    e.col = col0_ + static_cast<int>(s_.size());
    // Several end tokens: the parser looks a few tokens ahead and must never run off the list.
    for (int k = 0; k < 8; ++k) out.push_back(e);
    return out;
  }

 private:
  const std::string& s_;
  int col0_;
};

// An open autocast region: the name its _enter_autocast assigns, its state, its casts.
struct AutocastFrame {
  std::string name;
  AutocastState state;
  std::map<std::pair<int, DType>, int> casts;
};

class Parser {
 public:
  Parser(const std::string& source) : source_(source) {}

  Graph parse(const std::string& text) {
    std::istringstream in(text);
    std::string line;
    bool in_forward = false, returned = false;
    while (std::getline(in, line)) {
      ++lineno_;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      const size_t ind = line.find_first_not_of(" \t");
      if (ind == std::string::npos) continue;
      std::string body = line.substr(ind);
      col0_ = static_cast<int>(ind) + 1;
      if (body.rfind("class ", 0) == 0) {
        const auto paren = body.find('(');
        g_.name = body.substr(6, (paren == std::string::npos ? body.find(':') : paren) - 6);
        continue;
      }
      if (body.rfind("def forward(", 0) == 0) {
        parse_signature(body);
        in_forward = true;
        continue;
      }
      if (body.rfind("def ", 0) == 0) fail(col0_, "only the forward() method of a graph module can be read");
      if (body[0] == '#') {
        stack_ = body.rfind("# No stacktrace", 0) == 0 ? "" : body;
        continue;
      }
      if (!in_forward) fail(col0_, "expected 'def forward(self, ...)' before the graph's statements");
      if (returned) fail(col0_, "statement after 'return'");
      if (body.rfind("return", 0) == 0) {
        parse_return(body.substr(6), col0_ + 6);
        returned = true;
        continue;
      }
      // Statements separated by ';' (the "x = y = None" frees PyTorch appends are skipped).
      size_t start = 0;
      while (start < body.size()) {
        size_t semi = body.find(';', start);
        if (semi == std::string::npos) semi = body.size();
        std::string part = body.substr(start, semi - start);
        const size_t lead = part.find_first_not_of(' ');
        const int col = col0_;
        if (lead != std::string::npos) {
          col0_ = col + static_cast<int>(start + lead);
          part = part.substr(lead);
          const bool frees = part.size() >= 6 && part.compare(part.find_last_not_of(' ') - 3, 4, "None") == 0 &&
                             part.find('(') == std::string::npos && part.find('"') == std::string::npos;
          if (!frees) parse_statement(part);
          col0_ = col;
        }
        start = semi + 1;
      }
    }
    if (!in_forward) fail(1, "no 'def forward(self, ...)' found: this is not a graph printed by print_readable()");
    if (!returned) fail(lineno_, "the graph ends without a 'return' statement (truncated?)");
    if (!autocast_.empty()) fail(lineno_, "autocast region '" + autocast_.back().name + "' is never exited (_exit_autocast)");
    verify(g_);
    return std::move(g_);
  }

 private:
  [[noreturn]] void fail(int col, const std::string& what) { throw ParseError(source_, lineno_, col, what); }

  std::vector<Token> lex(const std::string& s, int col0) {
    return Lexer(s, col0).run([&](int c, const std::string& w) { fail(c, w); });
  }

  static std::optional<TensorMeta> parse_annotation(const std::string& a) {
    const auto lb = a.find('['), rb = a.rfind(']');
    if (lb == std::string::npos || rb == std::string::npos || rb != a.size() - 1) return std::nullopt;
    const auto dt = dtype_from_short(a.substr(0, lb));
    if (!dt) return std::nullopt;
    Shape shape;
    std::string dims = a.substr(lb + 1, rb - lb - 1);
    std::istringstream ds(dims);
    std::string d;
    while (std::getline(ds, d, ',')) {
      const size_t b = d.find_first_not_of(' ');
      if (b == std::string::npos) continue;
      d = d.substr(b);
      if (d.empty() || d.size() > 12 || d.find_first_not_of("0123456789 ") != std::string::npos) return std::nullopt;
      shape.push_back(std::stoll(d));
    }
    return TensorMeta::contiguous(*dt, shape);
  }

  TensorMeta annotation_or_fail(const std::string& a, int col) {
    auto m = parse_annotation(a);
    if (!m) fail(col, "cannot read the type annotation \"" + a + "\" (expected e.g. \"f32[64, 512]\")");
    return *m;
  }

  void parse_signature(const std::string& body) {
    const auto close = body.rfind(')');
    if (close == std::string::npos) fail(col0_ + static_cast<int>(body.size()), "unterminated parameter list");
    const auto toks = lex(body.substr(12, close - 12), col0_ + 12);
    size_t i = 0;
    while (toks[i].kind != Token::end) {
      if (toks[i].kind != Token::name) fail(toks[i].col, "expected a parameter name");
      const Token name = toks[i++];
      if (name.text == "self") {
        if (toks[i].text == ",") ++i;
        continue;
      }
      if (toks[i].text != ":" || toks[i + 1].kind != Token::string)
        fail(toks[i].col, "parameter '" + name.text + "' has no type annotation such as \"f32[1000]\"");
      const TensorMeta m = annotation_or_fail(toks[i + 1].text, toks[i + 1].col);
      i += 2;
      Node n;
      n.name = name.text;
      n.outs = {m};
      n.origins = {name.text};
      if (g_.find(n.name) >= 0) fail(name.col, "parameter '" + n.name + "' is declared twice");
      const std::string key = n.name;
      names_[key] = g_.add(std::move(n));
      if (toks[i].text == ",") ++i;
      else if (toks[i].kind != Token::end) fail(toks[i].col, "expected ',' between parameters");
    }
  }

  void parse_return(const std::string& rest, int col) {
    auto toks = lex(rest, col);
    size_t i = 0;
    g_.tuple_output = toks[0].text == "(";
    if (g_.tuple_output) ++i;
    while (toks[i].kind == Token::name) {
      g_.outputs.push_back(toks[i].text == "None" ? -1 : lookup(toks[i]));
      ++i;
      if (toks[i].text == ",") ++i;
    }
    if (g_.tuple_output && toks[i].text != ")") fail(toks[i].col, "expected ')' closing the returned tuple");
    if (g_.outputs.empty()) fail(col, "'return' names no value");
  }

  std::string fresh(const std::string& base) {
    std::string n = base;
    for (int i = 1; names_.count(n) || g_.find(n) >= 0; ++i) n = base + "_" + std::to_string(i);
    return n;
  }

  int lookup(const Token& t) {
    auto it = names_.find(t.text);
    if (it == names_.end()) fail(t.col, "'" + t.text + "' is used before it is defined");
    refuse_stale(t.text, it->second, t.col);
    return it->second;
  }

  // In-place updates are functional here: the updated tensor's names move to a new value. Other
  // values sharing its storage (views of it, or the base it is a view of, as the ops' schemas
  // alias them: "view(Tensor(a) self, ...) -> Tensor(a)") would see the update in PyTorch but
  // not here; a later use of one is refused instead of computed wrong.
  struct Stale {
    std::string updated, where;  // the tensor updated in place and the statement that did it
    int view = -1, view_value = -1;  // that tensor's node before and after the update
  };
  std::map<int, Stale> stale_;
  static bool aliases_first(const OpDef& op) {
    const size_t arrow = op.schema.rfind("->"), open = op.schema.find('(');
    if (arrow == std::string::npos || open == std::string::npos) return false;
    return op.schema.compare(open + 1, 8, "Tensor(a") == 0 && op.schema.find("Tensor(a", arrow) != std::string::npos;
  }
  int storage_root(int n) const {
    for (;;) {
      const Node& x = g_.nodes[static_cast<size_t>(n)];
      if (x.is_placeholder() || !x.op || x.args.empty() || !x.args[0].is_node()) return n;
      if (x.op->kind != OpKind::getitem && !aliases_first(*x.op)) return n;
      n = x.args[0].node;  // a view's base; an output of split/unbind: its source
    }
  }
  void mark_aliases_stale(int self, int updated_value, size_t first_new, const std::string& stmt) {
    const int root = storage_root(self);
    for (const auto& entry : names_) {
      const int n = entry.second;
      if (n == self || n == updated_value || static_cast<size_t>(n) >= first_new || stale_.count(n)) continue;
      if (storage_root(n) == root) stale_[n] = {g_.nodes[static_cast<size_t>(self)].name, stmt, self, updated_value};
    }
  }
  void refuse_stale(const std::string& name, int id, int col) {
    const auto s = stale_.find(id);
    if (s == stale_.end()) return;
    fail(col, "'" + name + "' shares its storage with '" + s->second.updated + "', which '" + s->second.where +
                  "' updated in place: PyTorch's views see such an update, this import does not carry it into other "
                  "views of the same storage (not supported)");
  }

  // value := name | number | string | list | None | True | False | -number
  Arg parse_value(const std::vector<Token>& t, size_t& i) {
    const Token& k = t[i];
    // A hostile file's thousands of '[' or 'slice(' must not exhaust the stack: PyTorch prints
    // nothing nested that deep.
    if (value_depth_ >= kMaxValueDepth) fail(k.col, "values nested deeper than " + std::to_string(kMaxValueDepth) + " levels");
    struct Depth {
      int& d;
      explicit Depth(int& x) : d(++x) {}
      ~Depth() { --d; }
    } depth(value_depth_);
    if (k.text == "[" || k.text == "(") {
      const std::string close = k.text == "[" ? "]" : ")";
      ++i;
      Arg l;
      l.kind = Arg::Kind::list;
      while (t[i].text != close) {
        if (t[i].kind == Token::end) fail(t[i].col, "unterminated list");
        l.list.push_back(parse_value(t, i));
        if (t[i].text == ",") ++i;
        else if (t[i].text != close) fail(t[i].col, "expected ',' or '" + close + "' in a list");
      }
      ++i;
      return l;
    }
    if (k.text == "-" && t[i + 1].kind == Token::name && t[i + 1].text == "inf") {
      i += 2;
      return Arg::of_real(-std::numeric_limits<double>::infinity());
    }
    // device(type='cpu'), device(type='cuda', index=0): how PyTorch prints a creation op's device.
    if (k.kind == Token::name && k.text == "device" && t[i + 1].text == "(" && !names_.count(k.text)) {
      i += 2;
      std::string type;
      while (t[i].text != ")") {
        if (t[i].kind == Token::end) fail(t[i].col, "unterminated device(...)");
        if (t[i].kind == Token::string && type.empty()) type = t[i].text;
        ++i;
      }
      ++i;
      if (type.empty()) fail(k.col, "device(...) names no type");
      return Arg::of_string(type);
    }
    if (k.text == "-" && t[i + 1].kind == Token::number) {
      ++i;
      Arg a = parse_value(t, i);
      if (a.kind == Arg::Kind::integer) a.i = -a.i;
      else a.f = -a.f;
      return a;
    }
    // slice(1, None, None) and Ellipsis: the parts of an index, as print_readable writes them.
    if (k.kind == Token::name && k.text == "slice" && t[i + 1].text == "(" && !names_.count(k.text)) {
      i += 2;
      std::vector<Arg> parts;
      while (t[i].text != ")") {
        if (t[i].kind == Token::end) fail(t[i].col, "unterminated slice(...)");
        parts.push_back(parse_value(t, i));
        if (t[i].text == ",") ++i;
        else if (t[i].text != ")") fail(t[i].col, "expected ',' or ')' in slice(...)");
      }
      ++i;
      if (parts.size() != 3) fail(k.col, "slice(...) takes a start, a stop and a step");
      return py_slice(parts[0], parts[1], parts[2]);
    }
    if (k.kind == Token::name && k.text == "Ellipsis" && !names_.count(k.text)) {
      ++i;
      return py_ellipsis();
    }
    if (k.kind == Token::end) fail(k.col, "expression ends too early");
    ++i;
    switch (k.kind) {
      case Token::number:
        try {
          if (k.text.find_first_of(".eE") != std::string::npos || k.text == "inf") return Arg::of_real(std::stod(k.text));
          return Arg::of_int(std::stoll(k.text));
        } catch (const std::exception&) {
          fail(k.col, "cannot read the number '" + k.text + "'");
        }
      case Token::string: return Arg::of_string(k.text);
      case Token::name:
        if (k.text == "None") return Arg::none();
        if (k.text == "True" || k.text == "False") return Arg::of_bool(k.text == "True");
        if (k.text == "inf") return Arg::of_real(std::numeric_limits<double>::infinity());
        if (k.text.rfind("torch.", 0) == 0 && !names_.count(k.text)) return Arg::of_string(k.text);  // torch.float32, ...
        if (auto s = sizes_.find(k.text); s != sizes_.end()) return s->second;
        return Arg::of_node(lookup(k));
      default: fail(k.col, "unexpected '" + k.text + "'");
    }
  }

  struct Call {
    std::string target;  // as written
    std::string op;      // op table name
    std::vector<Arg> pos;
    std::vector<std::pair<std::string, Arg>> kw;
    int col = 0;
  };

  // Python operators as Dynamo graphs print them: `a ** 2`, `x + y`, `-x`, `s < 0`, `2 / x`.
  struct OperatorExpr {
    std::string symbol;  // empty: a plain value
    std::vector<Arg> operands;
    int col = 0;
  };
  OperatorExpr parse_operator(const std::vector<Token>& t) {
    OperatorExpr e;
    e.col = t[0].col;
    size_t i = 0;
    if ((t[0].text == "-" || t[0].text == "+" || t[0].text == "~") && t[0].kind == Token::punct && t[1].kind == Token::name) {
      e.symbol = t[0].text;
      ++i;
      e.operands = {parse_value(t, i)};
    } else {
      e.operands = {parse_value(t, i)};
      if (t[i].kind != Token::end) {
        const Token op = t[i++];
        if (op.kind != Token::punct || python_operator_name(op.text, 2).empty()) fail(op.col, "unknown operator '" + op.text + "'");
        e.symbol = op.text;
        e.operands.push_back(parse_value(t, i));
      }
    }
    if (t[i].kind != Token::end) fail(t[i].col, "unexpected '" + t[i].text + "' after the expression");
    return e;
  }

  // `callee(args)`: torch.ops.* as the op it names; the torch level (torch.X, methods `x.view(...)`
  // as "method.view", torch.nn.functional.X) as written, for frontend/torch_functions.h.
  Call parse_call(const std::vector<Token>& t) {
    Call c;
    c.col = t[0].col;
    std::string callee = t[0].text;
    size_t i = 1;
    std::optional<Arg> self;
    if (t[1].text != "(") fail(t[1].col, "expected '(' after '" + callee + "'");
    // `x.sum()`: a method call on a value of the graph.
    const auto dot = callee.rfind('.');
    if (dot != std::string::npos && names_.count(callee.substr(0, dot))) {
      Token v = t[0];
      v.text = callee.substr(0, dot);
      self = Arg::of_node(lookup(v));
      callee = "method." + callee.substr(dot + 1);
    }
    ++i;
    if (self) c.pos.push_back(*self);
    while (t[i].text != ")") {
      if (t[i].kind == Token::end) fail(t[i].col, "unterminated argument list of '" + t[0].text + "'");
      if (t[i].kind == Token::name && t[i + 1].text == "=") {
        const std::string key = t[i].text;
        i += 2;
        c.kw.emplace_back(key, parse_value(t, i));
      } else {
        if (!c.kw.empty()) fail(t[i].col, "positional argument after a keyword argument");
        const bool list = t[i].text == "[";
        c.pos.push_back(parse_value(t, i));
        if (list && callee == "operator.getitem" && c.pos.size() == 2) c.pos.back() = py_list(c.pos.back());  // x[[0, 2]]
      }
      if (t[i].text == ",") ++i;
      else if (t[i].text != ")") fail(t[i].col, "expected ',' or ')' in the arguments of '" + t[0].text + "'");
    }
    if (t[i + 1].kind != Token::end) fail(t[i + 1].col, "unexpected '" + t[i + 1].text + "' after the call");
    c.target = callee;
    if (callee.rfind("torch.ops.", 0) == 0) c.op = callee.substr(10);
    return c;
  }

  // An op with several outputs or a list of them (split): `node[0]` picks one.
  static bool multi_output(const OpDef* op) {
    return op && (op->num_outputs > 1 || op->schema.substr(op->schema.rfind("->")).find("[]") != std::string::npos);
  }

  // The graph as frontend/torch_functions.h sees it: each call a node named after the statement
  // (`<name>_<op>`; the last one, the statement's value, gets the name itself).
  class Lowering : public TorchLowering {
   public:
    Lowering(Parser& p, std::string target, std::string stmt, int col) : p_(p), target_(std::move(target)), stmt_(std::move(stmt)), col_(col) {}
    Arg call(const std::string& op, std::vector<Arg> pos, PyKeywords kw) override {
      const OpDef* d = find_op(op);
      if (!d) p_.fail(col_, "internal: the torch-level mapping names '" + op + "', which the op table lacks");
      Call c;
      c.target = target_;
      c.op = op;
      c.col = col_;
      c.pos = std::move(pos);
      c.kw = std::move(kw);
      Node n = p_.make_node(p_.fresh(stmt_ + "_" + std::string(d->base_name())), c, d);
      n.origins = {stmt_};
      return Arg::of_node(p_.g_.add(std::move(n)));
    }
    const TensorMeta& meta(const Arg& t) const override {
      if (!t.is_node()) throw std::invalid_argument("expected a tensor, got a number or a list");
      return p_.g_.nodes.at(static_cast<size_t>(t.node)).meta();
    }
    bool returns_tuple(const Arg& v) const override { return v.is_node() && multi_output(p_.g_.nodes.at(static_cast<size_t>(v.node)).op); }

   private:
    Parser& p_;
    std::string target_, stmt_;
    int col_;
  };

  // A torch-level statement `stmt = <call, operator or index>`: lowered to ATen nodes; the value
  // named `stmt` (a new node renamed to it, an existing node aliased, or a number/size list).
  void lower_statement(const std::string& stmt, const std::string& target, int col, const std::function<TorchValue(TorchLowering&)>& run,
                       const std::optional<TensorMeta>& meta, int meta_col, bool symbolic) {
    // An earlier statement's helper node holding this name gives it up.
    if (const int taken = g_.find(stmt); taken >= 0 && !names_.count(stmt)) g_.nodes[static_cast<size_t>(taken)].name = fresh(stmt + "_");
    const size_t first_new = g_.nodes.size();
    Lowering low(*this, target, stmt, col);
    TorchValue r;
    try {
      r = run(low);
    } catch (const ParseError&) {
      throw;  // placed already (a node the lowering made)
    } catch (const UnknownTorchFunction&) {
      fail(col, "unknown op '" + target + "'");
    } catch (const std::exception& e) {  // invalid_argument, and anything else a lowering throws
      fail(col, e.what());
    }
    if (!r.value.is_node()) {
      if (meta) fail(meta_col, "'" + stmt + "' is annotated " + meta->annotation() + " but " + target + " gives a number");
      sizes_[stmt] = r.value;
      return;
    }
    if (symbolic) fail(meta_col, "'" + stmt + "' is a symbolic integer but " + target + " gives a tensor");
    const int id = r.value.node;
    if (static_cast<size_t>(id) >= first_new) g_.nodes[static_cast<size_t>(id)].name = stmt;
    check_annotation(stmt, target, meta, meta_col, g_.nodes[static_cast<size_t>(id)].meta());
    // In place (`x.add_(y)`, `x += y`): every name of the updated tensor names its new value from
    // now on; other values sharing its storage are stale.
    if (r.mutates_self && r.self.is_node()) {
      mark_aliases_stale(r.self.node, id, first_new, stmt);
      for (auto& entry : names_)
        if (entry.second == r.self.node) entry.second = id;
    }
    names_[stmt] = id;
  }

  // The statement's annotation, where it has one, against the value `what` gives it.
  void check_annotation(const std::string& stmt, const std::string& what, const std::optional<TensorMeta>& meta, int meta_col, const TensorMeta& m) {
    if (meta && (meta->shape != m.shape || meta->dtype != m.dtype))
      fail(meta_col, "'" + stmt + "' is annotated " + meta->annotation() + " but " + what + " gives " + m.annotation());
  }

  // A node calling `op` as `c` spells it: arguments bound to the schema, metadata inferred.
  Node make_node(const std::string& name, const Call& c, const OpDef* op) {
    Node n;
    n.name = name;
    n.target = c.target;
    n.op = op;
    n.stack = stack_;
    n.origins = {name};
    try {
      n.args = bind_args(*op, c.pos, c.kw);
      // Inside `_enter_autocast ... _exit_autocast`, the casts ATen's Autocast key would make
      // (frontend/autocast_policy.h).
      if (AutocastFrame* f = active_autocast()) {
        AutocastCall ac = apply_autocast(g_, f->state, *op, std::move(n.args), [&](int x, DType to) {
          if (auto k = f->casts.find({x, to}); k != f->casts.end()) return k->second;
          static const OpDef* convert = find_op("prims.convert_element_type.default");
          Node cast;
          cast.name = fresh(g_.nodes[static_cast<size_t>(x)].name + "_autocast_" + std::string(dtype_short(to)));
          cast.target = "torch.ops." + convert->name;
          cast.op = convert;
          cast.args = {Arg::of_node(x), Arg::of_string(std::string(dtype_torch(to)))};
          cast.outs = infer_meta(g_, *convert, cast.args);
          cast.stack = stack_;
          cast.origins = {name};
          const std::string key = cast.name;
          return f->casts[{x, to}] = names_[key] = g_.add(std::move(cast));
        });
        n.op = op = ac.op;
        n.args = std::move(ac.args);
      }
      n.outs = infer_meta(g_, *op, n.args);
    } catch (const std::invalid_argument& e) {
      fail(c.col, e.what());
    }
    return n;
  }

  // `_enter_autocast = torch.amp.autocast_mode._enter_autocast('cuda', torch.bfloat16, True, None)`
  // and `_exit_autocast = torch.amp.autocast_mode._exit_autocast(_enter_autocast)`, as Dynamo
  // records `with torch.autocast(...)`: a region whose ops get autocast's casts.
  static bool is_autocast_call(const std::vector<Token>& rhs) {
    return rhs[0].kind == Token::name && rhs[1].text == "(" &&
           (rhs[0].text == "torch.amp.autocast_mode._enter_autocast" || rhs[0].text == "torch.amp.autocast_mode._exit_autocast");
  }
  void autocast_statement(const Token& target, const std::vector<Token>& rhs) {
    if (rhs[0].text == "torch.amp.autocast_mode._exit_autocast") {
      if (rhs[2].kind != Token::name || rhs[3].text != ")" || rhs[4].kind != Token::end)
        fail(rhs[1].col, "_exit_autocast takes the name of its _enter_autocast");
      if (autocast_.empty() || autocast_.back().name != rhs[2].text)
        fail(rhs[2].col, "'" + rhs[2].text + "' is not the innermost open autocast region");
      autocast_.pop_back();
      return;
    }
    // (device_type, dtype=None, enabled=True, cache_enabled=None), positional or by keyword.
    static const char* names[] = {"device_type", "dtype", "enabled", "cache_enabled"};
    std::map<std::string, Arg> by;
    size_t i = 2, k = 0;
    while (rhs[i].text != ")") {
      if (rhs[i].kind == Token::end) fail(rhs[i].col, "unterminated argument list of _enter_autocast");
      std::string key;
      if (rhs[i].kind == Token::name && rhs[i + 1].text == "=") {
        key = rhs[i].text;
        i += 2;
      } else {
        if (k >= 4) fail(rhs[i].col, "_enter_autocast takes at most 4 arguments");
        key = names[k++];
      }
      by[key] = parse_value(rhs, i);
      if (rhs[i].text == ",") ++i;
      else if (rhs[i].text != ")") fail(rhs[i].col, "expected ',' or ')' in the arguments of _enter_autocast");
    }
    const Arg dev = by["device_type"], dt = by.count("dtype") ? by["dtype"] : Arg::none();
    const Arg en = by.count("enabled") ? by["enabled"] : Arg::of_bool(true);
    if (dev.kind != Arg::Kind::string) fail(rhs[2].col, "_enter_autocast: device_type must be a string ('cuda' or 'cpu')");
    std::optional<DType> dtype;
    if (!dt.is_none()) {
      dtype = dt.kind == Arg::Kind::string ? dtype_from_name(dt.s) : std::nullopt;
      if (!dtype) fail(rhs[2].col, "_enter_autocast: cannot read the dtype '" + dt.s + "'");
    }
    if (en.kind != Arg::Kind::boolean) fail(rhs[2].col, "_enter_autocast: enabled must be True or False");
    AutocastFrame f;
    f.name = target.text;
    try {
      f.state = autocast_state(dev.s, dtype, en.b);
    } catch (const std::invalid_argument& e) {
      fail(rhs[2].col, e.what());
    }
    if (model_device_.empty()) model_device_ = f.state.device;  // the text records no device: the first region's
    autocast_.push_back(std::move(f));
  }

  // The innermost region of the model's device, when it is enabled (autocast is per device).
  AutocastFrame* active_autocast() {
    for (auto it = autocast_.rbegin(); it != autocast_.rend(); ++it)
      if (it->state.device == model_device_) return it->state.enabled ? &*it : nullptr;
    return nullptr;
  }

  Node missing_node(const std::string& name, const Call& c, const TensorMeta& meta) {
    Node n;
    n.name = name;
    n.target = c.target;
    n.op = &op::missing();
    n.stack = stack_;
    n.origins = {name};
    n.args = c.pos;
    for (const auto& kw : c.kw) n.args.push_back(kw.second);
    n.outs = {meta};
    return n;
  }

  void parse_statement(const std::string& body) {
    auto toks = lex(body, col0_);
    if (toks[0].kind != Token::name) fail(toks[0].col, "expected an assignment 'name = ...'");
    const Token target = toks[0];
    size_t i = 1;
    // `a += b`: an in-place update (operator.iadd), functionalized: a new node of a's shape and
    // type, and every name of a names it from now on; of a number, the number a + b.
    if (toks[1].kind == Token::punct && toks[1].text.size() == 2 && toks[1].text[1] == '=' &&
        std::string("+-*/").find(toks[1].text[0]) != std::string::npos) {
      std::vector<Token> expr = {toks[0]};
      Token op = toks[1];
      op.text = toks[1].text.substr(0, 1);
      expr.push_back(op);
      expr.insert(expr.end(), toks.begin() + 2, toks.end());
      const OperatorExpr e = parse_operator(expr);
      const std::string callee = "operator.i" + python_operator_name(e.symbol, static_cast<int>(e.operands.size()));
      const std::string stmt = fresh(callee.substr(9));
      lower_statement(stmt, callee, e.col, [&](TorchLowering& b) { return lower_torch_call(b, callee, e.operands, {}); }, std::nullopt, 0, false);
      if (const auto n = sizes_.find(stmt); n != sizes_.end()) sizes_[target.text] = n->second;
      else names_[target.text] = names_.at(stmt);
      // FX names the result in the statement that follows (`a += b;  iadd: "f32[4]" = a`): the
      // name is the text's to assign, not ours (the node keeps it).
      if (target.text != stmt) names_.erase(stmt);
      return;
    }
    // `x[index] = value` (operator.setitem, as FX's codegen prints it): an in-place update of x.
    if (toks[1].text == "[") return setitem_statement(toks);
    std::optional<TensorMeta> meta;
    int meta_col = 0;
    bool symbolic = false;  // "Sym(4)": an integer the graph computes (a size), not a tensor
    if (toks[i].text == ":") {
      if (toks[i + 1].kind != Token::string) fail(toks[i + 1].col, "expected a type annotation string");
      meta_col = toks[i + 1].col;
      symbolic = toks[i + 1].text.rfind("Sym(", 0) == 0;
      if (!symbolic) meta = annotation_or_fail(toks[i + 1].text, meta_col);
      i += 2;
    }
    if (toks[i].text != "=") fail(toks[i].col, "expected '=' after '" + target.text + "'");
    ++i;
    std::vector<Token> rhs(toks.begin() + static_cast<long>(i), toks.end());
    if (rhs[0].kind == Token::end) fail(rhs[0].col, "missing expression after '='");
    if (names_.count(target.text)) fail(target.col, "'" + target.text + "' is assigned twice");
    // `_param_constant0: "f32[256, 784]" = self._param_constant0`: an attribute of the module, a
    // parameter whose value the text does not carry.
    if (rhs[1].kind == Token::end && rhs[0].kind == Token::name && rhs[0].text.rfind("self.", 0) == 0) {
      if (!meta) fail(rhs[0].col, "attribute '" + rhs[0].text + "' needs a type annotation");
      Node n;
      n.name = target.text;
      n.outs = {*meta};
      n.origins = {target.text};
      n.input_kind = InputKind::parameter;
      n.param_name = rhs[0].text.substr(5);
      const std::string key = n.name;
      names_[key] = g_.add(std::move(n));
      return;
    }
    // `l_x_ = L_x_`: Dynamo's alias of an input.
    if (rhs[1].kind == Token::end && rhs[0].kind == Token::name && names_.count(rhs[0].text)) {
      const int id = names_[rhs[0].text];
      refuse_stale(rhs[0].text, id, rhs[0].col);
      check_annotation(target.text, "'" + rhs[0].text + "'", meta, meta_col, g_.nodes[static_cast<size_t>(id)].meta());
      if (symbolic) fail(meta_col, "'" + target.text + "' is a symbolic integer but '" + rhs[0].text + "' is a tensor");
      names_[target.text] = id;
      return;
    }
    if (is_autocast_call(rhs)) return autocast_statement(target, rhs);
    const bool call = rhs[0].kind == Token::name && rhs[1].text == "(" && !names_.count(rhs[0].text);
    const bool method = rhs[0].kind == Token::name && rhs[1].text == "(" && rhs[0].text.find('.') != std::string::npos;
    Call c;
    if (rhs[0].kind == Token::name && rhs[1].text == "[") {
      // `x[...]`: an output of a multi-output node (`getitem = node[0]`), else torch-level indexing.
      size_t j = 0;
      const Arg base = parse_value(rhs, j);
      ++j;
      const bool list = rhs[j].text == "[";  // x[[0, 2]]: a Python list, not the tuple x[0, 2]
      Arg index = parse_value(rhs, j);
      if (list) index = py_list(index);
      if (rhs[j].text != "]" || rhs[j + 1].kind != Token::end) fail(rhs[j].col, "expected ']' closing the index");
      const bool output = base.is_node() && index.kind == Arg::Kind::integer && multi_output(g_.nodes[static_cast<size_t>(base.node)].op);
      if (!output) {
        return lower_statement(target.text, "operator.getitem", rhs[0].col,
                               [&](TorchLowering& b) { return TorchValue{lower_getitem(b, base, index), false, {}}; }, meta, meta_col,
                               symbolic);
      }
      c.target = c.op = "getitem";
      c.col = rhs[0].col;
      c.pos = {base, index};
    } else if (call || method) {
      c = parse_call(rhs);
      if (c.op.empty()) {  // the torch level: frontend/torch_functions.h
        return lower_statement(target.text, c.target, c.col,
                               [&](TorchLowering& b) { return lower_torch_call(b, c.target, c.pos, c.kw); }, meta, meta_col, symbolic);
      }
    } else {
      const OperatorExpr e = parse_operator(rhs);
      if (e.symbol.empty()) {  // a plain value: a number the graph names
        if (e.operands[0].is_node()) {
          check_annotation(target.text, "'" + rhs[0].text + "'", meta, meta_col, g_.nodes[static_cast<size_t>(e.operands[0].node)].meta());
          names_[target.text] = e.operands[0].node;
        } else {
          if (meta) fail(meta_col, "'" + target.text + "' is annotated " + meta->annotation() + " but is given a number");
          sizes_[target.text] = e.operands[0];
        }
        return;
      }
      const std::string name = python_operator_name(e.symbol, static_cast<int>(e.operands.size()));
      return lower_statement(target.text, "operator." + name, e.col,
                             [&](TorchLowering& b) { return TorchValue{lower_operator(b, e.symbol, e.operands), false, {}}; }, meta, meta_col,
                             symbolic);
    }
    // The size queries (aten.sym_size.int, sym_numel, sym_stride.int, sym_storage_offset): with
    // shapes known, the number itself, used where the graph passes it (a view's sizes).
    if (c.op.rfind("aten.sym_", 0) == 0) {
      names_.erase(target.text);
      sizes_[target.text] = Arg::of_int(size_query(c));
      return;
    }
    if (symbolic) fail(meta_col, "'" + target.text + "' is a symbolic integer computed by " + c.target + ": only size queries are read");
    // Metadata checks export leaves (aten._assert_tensor_metadata, _assert_scalar, _assert_async):
    // checked here where they name a tensor's dtype, then dropped, as the .pt2 reader does.
    if (c.op.rfind("aten._assert_", 0) == 0) return check_assert(c);
    const OpDef* op = find_op_functional(c.op);
    if (!op) {
      // An op we lack: kept, with the shape its annotation gives, so the model still opens; the
      // pipeline stops at it (passes/normalize_to_aten.h).
      if (!meta) fail(c.col, "unknown op '" + c.target + "' (and no annotation to give its result's shape)");
      names_[target.text] = g_.add(missing_node(target.text, c, *meta));
      return;
    }
    Node n = make_node(target.text, c, op);
    // An output whose annotation is the shape export's decomposition gives (frontend/export_records.h):
    // our node, then a view to the annotated shape under the annotated name.
    if (meta && c.op == "getitem" && meta->shape != n.meta().shape) {
      const Node& src = g_.nodes[c.pos[0].node];
      if (src.op && record_follows_decomposition(*src.op, static_cast<size_t>(c.pos[1].i), n.meta(), *meta)) {
        n.name = fresh(target.text + "_kernel");
        const int kernel = g_.add(std::move(n));
        static const OpDef* view = find_op("aten.view.default");
        Call vc;
        vc.target = "torch.ops." + view->name;
        vc.op = view->name;
        vc.col = c.col;
        vc.pos = {Arg::of_node(kernel), Arg::of_ints(meta->shape)};
        names_[target.text] = g_.add(make_node(target.text, vc, view));
        return;
      }
    }
    if (meta && (meta->shape != n.meta().shape || meta->dtype != n.meta().dtype))
      fail(meta_col, "'" + n.name + "' is annotated " + meta->annotation() + " but " + op->name + " gives " +
                         n.meta().annotation());
    const std::string key = n.name;
    names_[key] = g_.add(std::move(n));
  }

  // `shifted[(slice(None, None, None), slice(1, None, None))] = clone` (its `setitem = None` is
  // skipped as the frees are): functionalized as `x += y` is, every name of x names the updated
  // value from now on, and values sharing x's storage are stale (frontend/torch_functions.h,
  // lower_setitem).
  void setitem_statement(const std::vector<Token>& toks) {
    const Token target = toks[0];
    size_t j = 0;
    // `x[i] += v` is Python's `t = x[i]; t += v; x[i] = t`: the view t updated in place made x
    // stale, and this statement writes t's new value back where t was taken. That x is read here
    // (checked below: the same view of it); any other use of a stale x is refused.
    const auto named = names_.find(target.text);
    const auto stale = named == names_.end() ? stale_.end() : stale_.find(named->second);
    const bool write_back = stale != stale_.end() && stale->second.view >= 0;
    const Arg base = write_back ? Arg::of_node(named->second) : parse_value(toks, j);
    if (write_back) ++j;
    ++j;  // '['
    const bool list = toks[j].text == "[";  // x[[0, 2]] = v: a Python list, not the tuple x[0, 2]
    Arg index = parse_value(toks, j);
    if (list) index = py_list(index);
    if (toks[j].text != "]") fail(toks[j].col, "expected ']' closing the index");
    ++j;
    if (toks[j].text != "=") fail(toks[j].col, "expected '=' after '" + target.text + "[...]'");
    ++j;
    if (toks[j].kind == Token::end) fail(toks[j].col, "missing expression after '='");
    const bool value_list = toks[j].text == "[";
    Arg value = parse_value(toks, j);
    if (value_list) value = py_list(value);
    if (toks[j].kind != Token::end) fail(toks[j].col, "unexpected '" + toks[j].text + "' after the assigned value");
    // The value written back: the view's value after its update, or after further in-place
    // updates of it (`t += 1; t *= 2`), which move its name along.
    if (write_back) {
      const auto now = names_.find(stale->second.updated);
      const bool updated_view = value.is_node() && (value.node == stale->second.view_value || (now != names_.end() && now->second == value.node));
      if (!updated_view) refuse_stale(target.text, base.node, target.col);
    }
    const std::string stmt = fresh("setitem");
    lower_statement(stmt, "operator.setitem", target.col,
                    [&](TorchLowering& b) {
                      const size_t first = g_.nodes.size();
                      TorchValue r = lower_torch_call(b, "operator.setitem", {base, index, value}, {});
                      if (write_back) {  // the view the index takes of x must be the one updated
                        int view = base.node;
                        for (size_t k = first; k < g_.nodes.size(); ++k) {
                          const Node& n = g_.nodes[k];
                          if (n.op && n.op->kind == OpKind::view && !n.args.empty() && n.args[0].is_node() && n.args[0].node == view)
                            view = static_cast<int>(k);
                        }
                        if (!same_value(view, stale->second.view)) refuse_stale(target.text, base.node, target.col);
                      }
                      return r;
                    },
                    std::nullopt, 0, false);
    // FX names the statement after it: `x[...] = v;  setitem = x` (an alias of the updated x).
    names_.erase(stmt);
  }

  // Whether two nodes compute the same thing: one node, or the same op on the same arguments
  // (nodes among them the same in turn), as two spellings of one view of a tensor are.
  bool same_value(int a, int b, int depth = 0) const {
    if (a == b) return true;
    if (depth > 64) return false;
    const Node &x = g_.nodes[static_cast<size_t>(a)], &y = g_.nodes[static_cast<size_t>(b)];
    if (!x.op || x.op != y.op || x.args.size() != y.args.size()) return false;
    std::function<bool(const Arg&, const Arg&)> same = [&](const Arg& p, const Arg& q) {
      if (p.kind != q.kind) return false;
      switch (p.kind) {
        case Arg::Kind::node: return same_value(p.node, q.node, depth + 1);
        case Arg::Kind::list:
          if (p.list.size() != q.list.size()) return false;
          for (size_t i = 0; i < p.list.size(); ++i)
            if (!same(p.list[i], q.list[i])) return false;
          return true;
        case Arg::Kind::integer: return p.i == q.i;
        case Arg::Kind::real: return p.f == q.f;
        case Arg::Kind::boolean: return p.b == q.b;
        case Arg::Kind::string: return p.s == q.s;
        default: return true;  // None
      }
    };
    for (size_t i = 0; i < x.args.size(); ++i)
      if (!same(x.args[i], y.args[i])) return false;
    return true;
  }

  // _assert_tensor_metadata(a, size=None, stride=None, dtype=None, *, device, layout): a's dtype
  // against the one asserted (positional or keyword); the other checks concern nothing we compute.
  void check_assert(const Call& c) {
    if (c.op != "aten._assert_tensor_metadata.default" || c.pos.empty() || !c.pos[0].is_node()) return;
    const Arg* dtype = c.pos.size() > 3 ? &c.pos[3] : nullptr;
    for (const auto& [k, v] : c.kw)
      if (k == "dtype") dtype = &v;
    if (!dtype || dtype->kind != Arg::Kind::string) return;
    const Node& t = g_.nodes[c.pos[0].node];
    const auto want = dtype_from_name(dtype->s);
    if (want && t.meta().dtype != *want)
      fail(c.col, "'" + t.name + "' is " + std::string(dtype_short(t.meta().dtype)) + " but the graph asserts " + std::string(dtype_short(*want)));
  }

  // The value of a size query of a tensor whose shape the graph knows.
  int64_t size_query(const Call& c) {
    if (c.pos.empty() || !c.pos[0].is_node()) fail(c.col, c.target + " takes a tensor");
    const TensorMeta& m = g_.nodes[c.pos[0].node].meta();
    const int64_t r = static_cast<int64_t>(m.shape.size());
    auto dim = [&]() {
      if (c.pos.size() < 2 || c.pos[1].kind != Arg::Kind::integer) fail(c.col, c.target + " takes a dimension");
      const int64_t d = c.pos[1].i < 0 ? c.pos[1].i + r : c.pos[1].i;
      if (d < 0 || d >= r) fail(c.col, c.target + ": dimension " + std::to_string(c.pos[1].i) + " of a tensor of rank " + std::to_string(r));
      return d;
    };
    if (c.op == "aten.sym_size.int") return m.shape[dim()];
    if (c.op == "aten.sym_stride.int") return contiguous_strides(m.shape)[dim()];
    if (c.op == "aten.sym_numel.default") return numel_of(m.shape);
    if (c.op == "aten.sym_storage_offset.default") return 0;
    fail(c.col, "unknown size query '" + c.target + "'");
  }

  std::string source_;
  std::vector<AutocastFrame> autocast_;  // innermost last
  std::string model_device_;
  Graph g_;
  std::map<std::string, Arg> sizes_;  // numbers the graph names (size queries' values, x.size()), by name
  std::map<std::string, int> names_;
  static constexpr int kMaxValueDepth = 64;
  int value_depth_ = 0;  // the values parse_value is inside (lists, slices)
  std::string stack_;
  int lineno_ = 0;
  int col0_ = 1;
};

}  // namespace

Graph import_fx_text(const std::string& text, const std::string& source) { return Parser(source).parse(text); }

}  // namespace ls
