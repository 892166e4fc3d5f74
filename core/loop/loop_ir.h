// The define-by-run loop-level IR (Inductor's ComputedBuffer with Pointwise/Reduction bodies):
// each node computes one buffer; its body is a closure over an OpsHandler.
#pragma once
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "loop/ops_handler.h"
#include "tensor/tensor.h"

namespace ls {

struct LoopBuffer {
  std::string name;  // graph input name, or "buf<N>"
  DType dtype = DType::f32;
  Shape shape;
  bool is_input = false;
  bool is_output = false;
  int64_t bytes() const { return numel_of(shape) * dtype_size(dtype); }
};

// Computes the value at one position; idx/ridx are the index expressions of the node's loop
// variables (pointwise dims / reduction dims) in whatever variables the caller chose.
using LoopBody = std::function<V(OpsHandler&, const std::vector<Expr>& idx, const std::vector<Expr>& ridx)>;

struct OpDef;

// A library kernel the loop IR calls as a whole (matrix multiply, convolution, ...): Inductor's
// ExternKernel. Its tensor arguments are whole, contiguous buffers.
struct ExternCall {
  const OpDef* op = nullptr;
  std::vector<Arg> args;                 // the op's arguments; node arguments index `inputs`
  std::vector<std::string> inputs;       // buffer per tensor argument
  std::vector<bool> transposed;          // per input: the buffer holds the operand with its last two dims swapped
  std::vector<Shape> shapes;             // per input: the shape the kernel sees it in (a buffer of the same
                                         // size may hold it under another shape: a flattening view)
  // Per input, where the kernel reads it: no strides: the whole buffer (under `shapes`); else
  // element strides and an offset into the buffer, a strided view read in place (attention takes
  // q, k and v straight out of the qkv projection). Only kernels that take strides get them.
  std::vector<std::vector<int64_t>> strides;
  std::vector<int64_t> offsets;
  std::vector<std::string> outputs;      // buffer per output
  std::vector<TensorMeta> output_metas;
};

// Attention (aten._scaled_dot_product_efficient_attention) writes its output [..., H, L, D] in
// [..., L, H, D] order, as PyTorch's does (its output's strides): the heads' outputs, transposed
// back and flattened for the output projection, are then read in place.
bool attention_output_heads_inner(const ExternCall& c);
// Whether argument `arg` of the call is a tensor whose buffer holds it with its last two dims swapped.
bool transposed_operand(const ExternCall& c, size_t arg);
bool is_attention(const OpDef* op);           // the forward op (nullptr: false)
bool is_attention_backward(const OpDef* op);  // its backward

struct LoopNode {
  // scatter: Inductor's Scatter, a mutation. It iterates the index (or the values), and its body
  // stores through indices read from data (OpsHandler::scatter_store) into `buffer`, which an
  // earlier node of the program filled (the copy of self): it writes the buffer that node wrote,
  // after it and before any reader. Never inlined, never fused with another node.
  enum class Kind : uint8_t { pointwise, reduction, extern_kernel, scatter };
  std::string name;    // "op0"
  std::string buffer;  // the buffer it writes
  Kind kind = Kind::pointwise;
  Shape ranges;            // pointwise iteration sizes (= the buffer's shape, in iteration order)
  // Iteration dim i walks buffer dim iter_order[i]; empty: the buffer's own order. A pointwise
  // node read by a reduction over its leading dim iterates that dim last (loop/reorder_loops.h).
  std::vector<int> iter_order;
  Shape reduction_ranges;  // empty for pointwise
  Reduce reduce = Reduce::none;
  DType dtype = DType::f32;
  DType arg_dtype = DType::f32;  // argmax/argmin: the type of the values compared (dtype: the index's, int64)
  LoopBody inner;
  ExternCall ext;  // Kind::extern_kernel only
  std::string graph_node;            // the graph node it was lowered from
  std::vector<std::string> origins;  // provenance: user-level nodes
  Phase phase = Phase::forward;      // training steps: never fused across phases

  int64_t numel() const { return numel_of(ranges); }
  int64_t rnumel() const { return numel_of(reduction_ranges); }
  // Runs the whole body (value, then store or reduction + store_reduction) at one position.
  void run(OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>& ridx) const;
  // The body with loop variables p0.. / r0.. (as Inductor prints it).
  std::vector<Expr> default_vars() const;
  std::vector<Expr> default_rvars() const;
};

// A name -> position index over a vector the passes edit freely: rebuilt when the vector's size
// changed or an entry no longer matches; thread-safe (kernels' library calls look buffers up from
// several threads); a copy starts empty.
class NameIndex {
 public:
  NameIndex() = default;
  NameIndex(const NameIndex&) {}
  NameIndex& operator=(const NameIndex&) {
    std::lock_guard<std::mutex> lock(m_);
    size_ = kStale;
    return *this;
  }
  // The position of `name` (-1: none) in a vector of `size` entries; at(i, name): entry i has the
  // name; names(i, add) calls add(n) for each name of entry i. `expected`: a name that is not
  // found makes the index rebuilt once before saying so.
  int find(const std::string& name, size_t size, const std::function<bool(size_t, const std::string&)>& at,
           const std::function<void(size_t, const std::function<void(const std::string&)>&)>& names, bool expected) const;

 private:
  static constexpr size_t kStale = ~size_t{0};
  mutable std::mutex m_;
  mutable std::unordered_map<std::string, int> map_;
  mutable size_t size_ = kStale;
};

struct LoopProgram {
  std::vector<LoopBuffer> buffers;
  std::vector<LoopNode> nodes;      // in topological order
  std::vector<std::string> inputs;  // buffer names, in the graph's placeholder order
  std::vector<std::string> outputs; // buffer names, in the graph's output order
  std::string device = "cpu";       // what the buffers live on, as Inductor's FixedLayout names it

  const LoopBuffer& buffer(const std::string& name) const;
  int producer(const std::string& buffer) const;  // node index, -1 for inputs (the first writer: a scatter writes after it)

  // The two look-ups above in constant time on programs of any size (internal to them).
  NameIndex buffer_index, producer_index;
};

// Inductor's ir_pre_fusion.txt style: each node with its ranges and its body as ops calls.
std::string print_loop_program(const LoopProgram& p);
std::string print_loop_node(const LoopProgram& p, const LoopNode& n);
// Past kLoopDotBlocksAbove loop nodes (Graphviz gave up after 30 s on a 20,000-op chain's 46,665),
// a box per run of kLoopDotBlock nodes in node order, an edge where a run reads what an earlier
// one wrote; inputs are left out (the stage's text lists them).
constexpr size_t kLoopDotBlocksAbove = 3000;
constexpr size_t kLoopDotBlock = 500;
std::string loop_program_to_dot(const LoopProgram& p);

}  // namespace ls
