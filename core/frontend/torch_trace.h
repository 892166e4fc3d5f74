// Reads PyTorch's structured trace (TORCH_TRACE=dir, the input of tlparse): per frame and compile
// id, the stack, the Dynamo graph, its guards, the AOT graphs, Inductor's output code with its
// kernels and the nodes each covers, graph breaks, recompiles, failures and where the compile's
// time went. Each record is a glog line (`V1126 12:34:56.789000 1234 torch/_dynamo/x.py:12] `)
// with a JSON envelope, then payload lines that start with a tab (torch/_logging/_internal.py,
// trace_structured). Tests: tests/import/test_import.cpp testTorchTrace*.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "tensor/tensor.h"

namespace ls {

struct TraceStackFrame {
  std::string file;  // as logged (the interned file name resolved)
  int line = 0;
  std::string name;  // the function
  std::string code;  // the source line, where the log gives it ("loc")
};

// One kernel of Inductor's output code: a generated one (`name = async_compile.triton('name', '''`,
// `.cpp_pybinding(...)`) or a library call in call() (`extern_kernels.mm(...)`), with the graph
// nodes it covers from the comments Inductor writes above it.
struct TraceKernel {
  std::string name;
  std::string kind;                       // triton | cpp | cuda | extern (a library call) | ...
  std::vector<std::string> source_nodes;  // "Topologically Sorted Source Nodes: [a, b]": the Dynamo graph's nodes
  std::vector<std::string> aten_ops;      // "Original ATen: [aten.sin, aten.add]"
  std::map<std::string, std::vector<std::string>> node_to_aten;  // "a => sin, add" (post-grad nodes)
  int line = 0;                           // 1-based, in the output code
  std::string phase;                      // ours (OurCompile::kernel_list): forward | backward | update
};

struct TraceOutputCode {
  std::string filename;  // Inductor's cache file
  std::string aot_id;    // "0_forward", "0_backward", "0_inference" (the code's `# AOT ID:` line)
  std::string code;
  std::vector<TraceKernel> kernels;  // generated and library calls, in order
  int log_line = 0;                  // where its record starts in the log
  int generated_kernels() const;
};

// What compiling this Dynamo graph with our own pipeline gave (filled by compile_trace_graphs,
// report/trace_report.h; not by the reader).
struct OurCompile {
  bool attempted = false;
  bool ok = false;        // compiled, ran and matched the reference interpreter
  bool train = false;     // compiled as a training step, as PyTorch did (it logged a joint or backward graph)
  std::string not_run;    // compiled but not run, and why (a CUDA compile where there is no GPU): no check
  int kernels = 0;        // generated kernels
  int library_calls = 0;
  std::string error;      // why it failed: the stage and the message
  double compile_ms = 0;
  std::string graph_text;  // the text we compiled (annotations made concrete)
  // Our kernels, as TraceKernel: kind "generated" or "extern", source_nodes the graph nodes each
  // covers (its provenance), to be set against Inductor's.
  std::vector<TraceKernel> kernel_list;
};

// One compile of a frame: "[0/1]" is frame 0's second compile; attempt > 0 is a restart after a
// graph break (PyTorch shows "[0/1_1]"; its records are folded into "0/1" here). Graphs logged
// outside any compile id (torch.export, AOTInductor) are compile "-/-".
struct TraceCompile {
  int frame_id = -1, frame_compile_id = -1, attempt = 0;
  int compiled_autograd_id = -1;  // -1: none
  std::string id() const;         // "0/1", "0/1_1", "!0/0/1"
  std::string name;               // the function (co_name), where compilation_metrics gives it
  std::string file;               // co_filename:co_firstlineno
  int first_line = 0;
  std::vector<TraceStackFrame> stack;  // dynamo_start's, the user's frames last
  // The real inputs' sizes (describe_tensor, describe_source), by the Dynamo graph's placeholder
  // name ("L['x']" -> "L_x_"): what a symbolic graph is made concrete with.
  std::map<std::string, std::vector<int64_t>> input_sizes;
  std::string dynamo_graph;       // print_readable text (payload of dynamo_output_graph)
  int dynamo_graph_line = 0;      // its record's line in the log
  std::string guards;             // dynamo_cpp_guards_str (the guard tree)
  std::map<std::string, std::string> aot_graphs;  // aot_inference_graph | aot_joint_graph | aot_forward_graph | aot_backward_graph -> text
  std::map<std::string, std::string> inductor_graphs;  // inductor_pre_grad_graph | inductor_post_grad_graph -> text
  std::vector<TraceOutputCode> output_code;  // forward (or inference), then backward
  std::vector<std::string> recompile_reasons;  // the guards the earlier compiles failed (recompile_reasons)
  std::vector<std::string> restart_reasons;    // compilation_metrics: why tracing restarted (graph breaks)
  std::string fail_type, fail_reason;          // compilation_metrics, when the compile failed
  std::string fail_user_frame;                 // "file:line"
  int graph_op_count = -1;                     // compilation_metrics; -1: not logged
  double compile_time_s = 0;                   // entire_frame_compile_time_s
  std::vector<std::string> artifacts;          // names of the artifacts logged for it
  std::map<std::string, double> phase_ms;      // this compile's chromium events: phase -> total ms
  OurCompile ours;
  // PyTorch's stages logged for it, in pipeline order: dynamo, aot_inference | aot_joint,
  // aot_forward, aot_backward, inductor_post_grad, inductor_output_code.
  std::vector<std::string> stages() const;
  int inductor_kernels() const;  // generated kernels over all its output code
};

// A frame (a Python function Dynamo started on), with its stack at the first compile.
struct TraceFrame {
  int frame_id = -1;
  std::string name;
  std::vector<TraceStackFrame> stack;
  std::vector<std::string> compiles;  // compile ids, in order
};

// Graph breaks, de-duplicated by (file, line, reason); `compiles` lists where each was hit.
struct TraceGraphBreak {
  std::string reason;       // "Failed to trace builtin operator", "Data-dependent branching" (Dynamo's graph-break type)
  std::string explanation;  // "Dynamo does not know how to trace builtin operator `print` with ...", where given
  std::string detail;       // the whole reason text (explanation, hints)
  std::string file;       // user source file
  int line = 0;
  std::string code;       // the source line, where the traceback gives it
  std::vector<std::string> compiles;  // compile ids it was logged under
  int count = 0;
};

struct TraceRecompile {
  std::string compile_id;  // the new compile
  std::string name;        // the function
  std::vector<std::string> reasons;  // the guards that failed ("tensor 'x' size mismatch at index 0. expected 8, actual 16")
};

struct TraceFailure {
  std::string compile_id;
  std::string name;
  std::string fail_type;   // "Unsupported"
  std::string reason;      // the whole fail_reason
  std::string summary;     // its first line ("Failed to trace builtin operator")
  std::string explanation; // its "Explanation:" line, where given
  std::string user_frame;  // "file:line"
};

// A problem in the log itself: the record was skipped (bad prefix, bad JSON) or its payload
// kept as it was (truncated, md5 mismatch). 1-based line number.
struct TraceWarning {
  int line = 0;
  std::string what;
};

struct TorchTrace {
  std::string path;  // the log read
  std::vector<TraceFrame> frames;
  std::vector<TraceCompile> compiles;  // in order of first appearance
  std::vector<TraceGraphBreak> graph_breaks;
  std::vector<TraceRecompile> recompiles;
  std::vector<TraceFailure> failures;
  std::vector<std::pair<std::string, double>> phases;  // chromium events: phase name -> total ms, longest first
  std::vector<TraceWarning> warnings;
  std::map<std::string, int> record_kinds;  // envelope key -> records of it
  int records = 0;
  int lines = 0;
  const TraceCompile* compile(std::string_view id) const;  // "0/1" or "[0/1]"; null when absent
};

struct TraceLimits {
  size_t max_payload_bytes = size_t(256) << 20;  // a larger payload is dropped with a warning
  size_t max_warnings = 200;                     // further warnings are counted, not kept
  // Called about every MiB with (bytes read, bytes in all), on the reading thread; returning false
  // stops the reading (std::runtime_error "cancelled"). For a window reading a large log.
  std::function<bool(size_t, size_t)> progress;
};

// Parses a log's text. Malformed records are skipped with a warning naming the line; throws
// std::runtime_error (naming `source` and the line) only when no record at all could be read.
TorchTrace parse_torch_trace(std::string_view text, const std::string& source = "<trace>", const TraceLimits& limits = {});
// A log file, or a TORCH_TRACE folder (its *.log file; with several, rank 0's or the first by
// name, and a warning listing the others). Throws std::runtime_error naming the path.
TorchTrace read_torch_trace(const std::string& path, const TraceLimits& limits = {});

// Inductor's output code (Python with Triton or C++ kernels): its kernels with the nodes each covers.
std::vector<TraceKernel> parse_inductor_kernels(std::string_view code);

// A Dynamo or AOT graph as the trace prints it, made readable by import_fx_text: stride and device
// suffixes dropped (`"f32[8][1]cuda:0"` -> `"f32[8]"`), and size symbols (`s0: "Sym(s0)"`
// parameters, `"f32[s0, 3]"`, `s0` as an argument) replaced by values bound from `input_sizes`
// (placeholder name -> real sizes, TraceCompile::input_sizes); an unbound symbol gets `fallback`.
std::string concrete_graph_text(const std::string& text, const std::map<std::string, std::vector<int64_t>>& input_sizes = {},
                                int64_t fallback = 8);

// A trace logs no input's values: a graph compiled from it runs on random ones. An integer input
// used as indices (by embedding, index, index_put, gather, index_select, scatter, the targets of
// nll_loss / cross_entropy_loss, one_hot), directly or through ops that keep its values (views,
// slices, expand, copies, casts to an integer type, cat, the outputs of split, the scatters of
// setitem, where, masked_fill), needs values in
// [0, n): n the smallest size it indexes. index_input_bounds finds n for each such placeholder
// (by node id); bound_index_inputs maps the random values v of these inputs (`inputs` in the
// order of g.user_inputs()) to v mod n.
std::map<int, int64_t> index_input_bounds(const Graph& g);
void bound_index_inputs(const Graph& g, std::vector<Tensor>& inputs);

}  // namespace ls
