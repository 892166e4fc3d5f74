#include "ops/print.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "ops/op_table.h"

namespace ls {
namespace {

// Arguments as PyTorch prints them: positional ones, then keyword-only ones that differ from
// their default, and trailing defaults left out.
void print_call_args(std::ostream& os, const Graph& g, const Node& n) {
  const auto& params = n.op->params;
  size_t last = n.args.size();
  while (last > 0 && last - 1 < params.size() && params[last - 1].has_default &&
         params[last - 1].default_text == arg_text(g, n.args[last - 1]))
    --last;
  bool first = true;
  for (size_t i = 0; i < last; ++i) {
    const bool kw = i < params.size() && params[i].kwarg_only;
    if (kw && params[i].has_default && params[i].default_text == arg_text(g, n.args[i])) continue;
    if (!first) os << ", ";
    first = false;
    if (kw) os << params[i].name << " = ";
    os << arg_text(g, n.args[i]);
  }
}

// Dynamo graphs call Python operators and Tensor methods; FX prints those as Python does.
void print_call(std::ostream& os, const Graph& g, const Node& n) {
  static const std::map<std::string, std::string> infix = {
      {"operator.pow", " ** "}, {"operator.add", " + "}, {"operator.sub", " - "}, {"operator.mul", " * "},
      {"operator.truediv", " / "}, {"operator.lt", " < "}, {"operator.le", " <= "}, {"operator.gt", " > "},
      {"operator.ge", " >= "}, {"operator.eq", " == "}, {"operator.ne", " != "}};
  if (auto it = infix.find(n.target); it != infix.end() && n.args.size() >= 2) {
    os << arg_text(g, n.args[0]);
    os << it->second;
    os << arg_text(g, n.args[1]);
    return;
  }
  if (n.target == "getitem") {
    os << arg_text(g, n.args.at(0));
    os << '[' << n.args.at(1).i << ']';
    return;
  }
  if (n.target == "operator.neg") {
    os << '-';
    os << arg_text(g, n.args.at(0));
    return;
  }
  if (n.target.rfind("method.", 0) == 0) {
    os << arg_text(g, n.args.at(0));
    os << '.' << n.target.substr(7) << "()";
    return;
  }
  os << n.target << '(';
  print_call_args(os, g, n);
  os << ')';
}

// FNV-1a over the bytes, word by word.
struct Hasher {
  uint64_t h = 1469598103934665603ull;
  void word(uint64_t v) {
    for (int i = 0; i < 8; ++i, v >>= 8) h = (h ^ (v & 0xff)) * 1099511628211ull;
  }
  void text(const std::string& s) {
    word(s.size());
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  }
  void arg(const Arg& a) {
    word(static_cast<uint64_t>(a.kind));
    switch (a.kind) {
      case Arg::Kind::none: break;
      case Arg::Kind::node: word(static_cast<uint64_t>(a.node)); break;  // names by position: hashed with the nodes
      case Arg::Kind::integer: word(static_cast<uint64_t>(a.i)); break;
      case Arg::Kind::real: {  // printed with 17 digits: equal text is equal bits, a NaN as "nan" or "-nan"
        uint64_t bits = 0;
        const double v = a.f != a.f ? std::copysign(std::numeric_limits<double>::quiet_NaN(), a.f) : a.f;
        std::memcpy(&bits, &v, sizeof bits);
        word(bits);
        break;
      }
      case Arg::Kind::boolean: word(a.b); break;
      case Arg::Kind::string: text(a.s); break;
      case Arg::Kind::list:
        word(a.list.size());
        for (const Arg& x : a.list) arg(x);
        break;
    }
  }
  void meta(const TensorMeta& m) {
    word(static_cast<uint64_t>(m.dtype));
    word(m.shape.size());
    for (int64_t d : m.shape) word(static_cast<uint64_t>(d));
  }
};

}  // namespace

uint64_t print_hash(const Graph& g, const std::string& trailer) {
  Hasher h;
  h.text(g.name);
  h.word(g.nodes.size());
  for (const Node& n : g.nodes) {
    h.text(n.name);
    h.word(n.is_placeholder());
    h.word(n.outs.size());
    if (n.is_placeholder() || n.outs.size() == 1) h.meta(n.meta());
    if (n.is_placeholder()) continue;
    h.text(n.stack);
    h.text(n.target);
    h.word(n.args.size());
    for (const Arg& a : n.args) h.arg(a);
  }
  h.word(g.tuple_output);
  h.word(g.outputs.size());
  for (int o : g.outputs) h.word(static_cast<uint64_t>(o));
  h.text(trailer);
  return h.h;
}

// What this writes, print_hash hashes: a change here is one there.
std::string print_readable(const Graph& g) {
  std::ostringstream os;
  os << "class " << g.name << "(torch.nn.Module):\n    def forward(self";
  for (int id : g.inputs()) os << ", " << g.nodes[id].name << ": \"" << g.nodes[id].meta().annotation() << '"';
  os << "):\n";
  // Last use of each node, for the "x = None" frees PyTorch prints.
  std::map<int, int> last_use;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int a : node_inputs(g.nodes[i])) last_use[a] = static_cast<int>(i);
  std::set<int> outs(g.outputs.begin(), g.outputs.end());
  std::string stack = "\x01";
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.is_placeholder()) continue;
    if (n.stack != stack) {
      stack = n.stack;
      os << "        " << (stack.empty() ? "# No stacktrace found for following nodes" : stack) << '\n';
    }
    os << "        " << n.name;
    if (n.outs.size() == 1) os << ": \"" << n.meta().annotation() << '"';
    os << " = ";
    print_call(os, g, n);
    std::vector<std::string> freed;
    std::set<int> seen;
    for (int a : node_inputs(n))
      if (last_use[a] == static_cast<int>(i) && !outs.count(a) && seen.insert(a).second) freed.push_back(g.nodes[a].name);
    if (!freed.empty()) {
      os << ";  ";
      for (const auto& f : freed) os << f << " = ";
      os << "None";
    }
    os << '\n';
  }
  os << "        return ";
  if (g.tuple_output) os << '(';
  for (size_t i = 0; i < g.outputs.size(); ++i) os << (i ? ", " : "") << (g.outputs[i] < 0 ? "None" : g.nodes[g.outputs[i]].name);
  if (g.tuple_output) os << (g.outputs.size() == 1 ? ",)" : ")");
  os << '\n';
  return os.str();
}

}  // namespace ls
