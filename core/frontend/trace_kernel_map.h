// Inductor's kernels for one Dynamo graph of a TORCH_TRACE log (TraceCompile::output_code) set
// against ours for the same graph, grouped by the user-level nodes (the Dynamo graph's) they cover:
// "input_2, input_3 -> Inductor: triton_per_fused_gelu_native_layer_norm_0 | ours: cpp_fused_input_1".
//
// Inductor's origin comments ("Topologically Sorted Source Nodes") name, for each post-grad node a
// kernel holds, the first node of its from_node chain: the Dynamo graph's node for a forward or
// inference graph. A backward kernel also names nodes of AOT's backward graph that have no Dynamo
// node behind them (mul_6, sum_2: the derivative's own ops). Where such a kernel names no Dynamo
// node at all, the backward graph's return comments (`view_1,  # GradAOTOutput(grad_of=
// PlainAOTInput(idx=1))`) tell whose gradient it computes, and that input's users in the Dynamo
// graph are taken as its nodes (marked via_gradient). A kernel without any source-node comment is
// matched by its name to the nodes whose callee it names (marked via_name). Nodes that still map to
// nothing are kept, by name, as unmapped. Our kernels' nodes are their provenance, already the Dynamo graph's.
// Tests: tests/import/test_import.cpp testTorchTraceKernelMap, tests/gui testInductorDiff.
#pragma once
#include <string>
#include <vector>

#include "frontend/torch_trace.h"

namespace ls {

// One kernel as the map places it.
struct MappedKernel {
  std::string name;
  std::string kind;     // triton | cpp | extern | generated ...
  bool library = false; // a library call (extern_kernels.mm, our extern_mm_4)
  std::vector<std::string> nodes;         // the Dynamo graph's nodes it covers, in graph order
  std::vector<std::string> via_gradient;  // of `nodes`, those found through the gradient it computes
  // Of `nodes`, those guessed from its name alone: a kernel the output code gives no source-node
  // comment (Inductor's C++ kernels at times), "cpp_fused__softmax_0" -> the node calling torch.softmax.
  std::vector<std::string> via_name;
  std::vector<std::string> unmapped;      // nodes it names that are not the Dynamo graph's
  int code_index = -1;  // Inductor: index into TraceCompile::output_code
  int line = 0;         // Inductor: 1-based line in that output code
};

// A set of user-level nodes and every kernel of either side that covers one of them: two nodes are
// in one row when a kernel of either side covers both. Rows of one phase never share a node.
struct KernelMapRow {
  std::string phase;               // inference | forward | backward | update
  std::vector<std::string> nodes;  // user-level nodes, in graph order; empty: kernels whose nodes none map
  std::vector<MappedKernel> inductor, ours;
  // Nodes one side fuses with another node of the row and the other side does not.
  std::vector<std::string> fused_by_inductor_only, fused_by_ours_only;
  // same | fusion differs | count differs | only Inductor | only ours | not mapped | ours not compiled
  std::string verdict;
  std::string why;  // a sentence for the verdict ("Inductor fuses input_2+input_3; ours runs them apart")
  bool differs() const { return verdict != "same" && verdict != "ours not compiled"; }
};

struct KernelMap {
  std::vector<KernelMapRow> rows;
  int inductor_generated = 0, inductor_library = 0;
  int ours_generated = 0, ours_library = 0;
  bool ours_compiled = false;  // false: the ours side is empty because nothing was compiled
  int unmapped_inductor_kernels = 0;  // Inductor kernels none of whose nodes could be mapped
  std::vector<std::string> user_nodes;  // the Dynamo graph's call nodes, in order
  int differing_rows() const;
};

// `ours`: our kernels for this graph (OurCompile::kernel_list, or the GUI's record), kind "extern"
// for a library call, phase forward (default) | backward | update. `ours_compiled` false: no
// compile of ours to set against (the ours side of every row is empty, the verdict says so).
KernelMap map_trace_kernels(const TraceCompile& c, const std::vector<TraceKernel>& ours, bool ours_compiled = true);

// The map as a table of text, one row a line (its unmapped nodes on a line below):
//   forward   input_2, input_3 -> Inductor: triton_per_fused_gelu_native_layer_norm_0 | ours: cpp_fused_input_1   same
std::string kernel_map_text(const KernelMap& m);
// The map as JSON (the trace report's `kernel_map` of a graph): {inductor: {generated, library},
// ours: {compiled, generated, library}, unmapped_inductor_kernels, rows: [{phase, nodes, verdict,
// why, fused_by_inductor_only, fused_by_ours_only, inductor: [{name, kind, nodes, via_gradient,
// unmapped}], ours: [...]}]}.
std::string kernel_map_json(const KernelMap& m);

// The names a graph's print_readable text defines by assignment (`name: "f32[8]" = ...`, `name = ...`),
// in order, with the names each reads; placeholders (the forward's parameters) first.
struct FxTextNode {
  std::string name;
  std::vector<std::string> reads;  // identifiers on its right-hand side that are names of this graph
  bool placeholder = false;        // a parameter of forward, or an alias of one (`l_x_ = L_x_`)
  std::string target;              // the callee, as written (`torch.softmax`, `torch.ops.aten.mm.default`); "" for an operator
};
std::vector<FxTextNode> fx_text_nodes(const std::string& text);

}  // namespace ls
