// A TORCH_TRACE log set against our compiler: each Dynamo graph of the trace (frontend/torch_trace.h)
// compiled by run_pipeline on random inputs of its annotated shapes and checked against the
// reference interpreter (TraceCompile::ours), and the trace's report as JSON (lowerscope-cli trace
// --report). Tests: tests/import/test_import.cpp testTorchTrace*.
#pragma once
#include <functional>
#include <string>

#include "frontend/torch_trace.h"
#include "pipeline/pipeline.h"

namespace ls {

// The Dynamo graph of compile `c` as a model: its text made concrete (sizes from the trace's real
// inputs), imported, with random inputs (seed 0). Throws std::runtime_error naming the compile.
LoadedModel trace_graph_model(const TraceCompile& c);

// What a compile of ours gave, as a trace graph's `ours`: check, kernels with the nodes each covers,
// the error and its stage (attempted is set; train and graph_text are the caller's).
OurCompile summarize_compile(const CompileResult& r);

// Compiles every Dynamo graph of `t` and fills each compile's `ours`. Never throws for a graph:
// an op we lack or a failed stage lands in ours.error, and the next graph goes on. `progress`
// (may be null) is called before each graph with its index and the count; returning false stops.
void compile_trace_graphs(TorchTrace& t, const PipelineOptions& o = {},
                          const std::function<bool(size_t, size_t)>& progress = nullptr);

// {"path", "graphs": [{compile_id, name, stages, ours: {attempted, check, kernels, ...},
// inductor_kernels, inductor: [{name, kind, source_nodes}]}], "graph_breaks", "recompiles",
// "failures", "frames", "phases", "warnings"}, pretty-printed.
std::string trace_report_json(const TorchTrace& t);

}  // namespace ls
