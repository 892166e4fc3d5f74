#include "ops/print.h"

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

}  // namespace

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
