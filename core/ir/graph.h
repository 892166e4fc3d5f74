// The graph IR shared by every graph stage (capture, aten, core_aten, prims): an FX-like list of
// nodes in topological order, each with its op, its arguments and the metadata of its outputs.
#pragma once
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/tensor.h"

namespace ls {

struct OpDef;

struct TensorMeta {
  DType dtype = DType::f32;
  Shape shape;
  Shape strides;
  std::string device = "cpu";

  static TensorMeta contiguous(DType dtype, Shape shape);
  int64_t numel() const { return numel_of(shape); }
  std::string annotation() const;  // "f32[64, 512]", as print_readable writes it
};

// One argument of a node: a reference to another node's output, a Python scalar, or a list.
struct Arg {
  enum class Kind : uint8_t { none, node, integer, real, boolean, string, list };
  Kind kind = Kind::none;
  int node = -1;  // index into Graph::nodes, for Kind::node
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;
  std::vector<Arg> list;

  static Arg none() { return {}; }
  static Arg of_node(int id);
  static Arg of_int(int64_t v);
  static Arg of_real(double v);
  static Arg of_bool(bool v);
  static Arg of_string(std::string v);
  static Arg of_ints(const std::vector<int64_t>& v);

  bool is_node() const { return kind == Kind::node; }
  bool is_none() const { return kind == Kind::none; }
  bool is_number() const { return kind == Kind::integer || kind == Kind::real || kind == Kind::boolean; }
  double number() const;               // a scalar's value; throws for others
  std::vector<int64_t> ints() const;   // an int list (or one int) as a vector; throws for others
};

// Which part of a training step a node belongs to. Inference graphs are all forward; a training
// step runs the forward, then the backward (gradients), then the optimizer's update.
enum class Phase : uint8_t { forward, backward, update };
const char* phase_name(Phase p);  // "forward"

// What a placeholder stands for (torch.export's graph signature).
enum class InputKind : uint8_t { user, parameter, buffer, constant };

struct Node {
  std::string name;
  std::string target;          // the callee as the source spelled it; empty for placeholders
  const OpDef* op = nullptr;   // resolved op; nullptr for placeholders
  std::vector<Arg> args;       // bound to the op's schema: one per parameter, defaults filled in
  std::vector<TensorMeta> outs;
  std::string stack;           // the "# File: ..." line PyTorch prints above the node, if any
  std::vector<std::string> origins;  // provenance: the user-level nodes this one was made from
  InputKind input_kind = InputKind::user;  // placeholders only
  std::string param_name;                  // placeholders: "fc1.weight", where the model names it
  std::string module_path;                 // "fc1" (nn_module_stack), where the model has it
  Phase phase = Phase::forward;

  bool is_placeholder() const { return op == nullptr; }
  const TensorMeta& meta() const { return outs.at(0); }
};

struct Graph {
  std::string name = "GraphModule";
  std::vector<Node> nodes;       // placeholders first, then ops in topological order
  std::vector<int> outputs;      // node ids returned by forward(); -1 for a None (a backward graph's no-gradient)
  bool tuple_output = true;      // `return (a,)` rather than `return a`
  std::map<std::string, Tensor> weights;  // placeholder name -> value (parameters, buffers, constants)

  int add(Node n);
  int find(const std::string& name) const;  // -1 when absent
  std::vector<int> inputs() const;       // every placeholder, in order
  std::vector<int> user_inputs() const;  // placeholders the caller feeds (no weight attached)
  std::vector<int> users(int id) const;
};

// The nodes a node reads (its node arguments, and those inside list arguments).
std::vector<int> node_inputs(const Node& n);

// How print_readable writes one argument ("sin", "2", "[0, 1]").
std::string arg_text(const Graph& g, const Arg& a);


// What a drawing marks on top of the graph: the tensors a training step saves between its forward
// and its backward (drawn red, with a note such as "saved 1.0 MB"), and notes on other nodes.
struct DotMarks {
  std::map<std::string, std::string> saved;  // node name -> note
  std::map<std::string, std::string> notes;  // node name -> extra label line
  std::map<std::string, std::string> failed; // node name -> why a stage failed there (drawn red, the reason below)
};

// A stage failed at one node: the message names it, and `node` lets the drawing mark it.
struct NodeError : std::invalid_argument {
  NodeError(std::string node_name, const std::string& what) : std::invalid_argument(what), node(std::move(node_name)) {}
  std::string node;
};

// A Graphviz description of the graph: one node per FX node labelled op, shape and dtype. A graph
// with more than one phase draws each phase as a cluster, and the edges that cross from the
// forward into the backward in red.
std::string graph_to_dot(const Graph& g, const DotMarks& marks = {});

// A string as it stands inside a quoted Graphviz attribute (quotes and backslashes escaped).
std::string dot_escape(const std::string& s);

// Long edges in large drawings. Each level an edge crosses is a node of its own in Graphviz's
// layout: MobileNetV3-Small's training step drew its forward with 206 edges into the output and
// its loop IR with edges from forward buffers down into the backward, 41,000 such nodes, and dot
// gave up after a minute. Above `kDotFoldAbove` boxes, an edge whose head lies more than
// `kDotLongSpan` levels below its tail (levels: the longest path from a source) is drawn as a
// reference instead: a small dashed box beside the head naming the tail, with the id
// "ref:<tail's id>" (the GUI selects the tail when it is clicked), or, for an edge into the
// output, a box "output" beside the tail.
inline constexpr size_t kDotFoldAbove = 300;
inline constexpr int kDotLongSpan = 6;
// Levels of the nodes 0..n-1 of a DAG given as (tail, head) edges.
std::vector<int> dag_levels(size_t n, const std::vector<std::pair<int, int>>& edges);
// Which of the edges to draw as references (all false for drawings of up to kDotFoldAbove nodes).
std::vector<bool> long_edges(size_t n, const std::vector<std::pair<int, int>>& edges);
// The reference box of an edge drawn that way: `name` is the Graphviz node name of the box.
std::string dot_reference(const std::string& name, const std::string& tail_id, const std::string& text);

// Op histogram: each target, without its "torch.ops." prefix, and how many nodes call it.
std::vector<std::pair<std::string, int>> op_histogram(const Graph& g);

// Checks the invariants every stage relies on; throws std::logic_error with a sentence naming the node.
void verify(const Graph& g);

}  // namespace ls
