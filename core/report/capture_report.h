// A capture folder (frontend/capture.h: the graphs the lowerscope torch.compile backend handed
// over) set against our compiler: each graph compiled by run_pipeline on its example inputs and
// checked against PyTorch's eager outputs and the reference interpreter, and the report as JSON
// (lowerscope-cli capture --report). Tests: tests/import/test_import.cpp testCapture*.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "frontend/capture.h"
#include "pipeline/pipeline.h"

namespace ls {

// What our compile of one captured graph gave.
struct CaptureCompile {
  OurCompile ours;              // check, kernels, error (as a trace graph's)
  std::string inputs_from;      // the .npy files, or why inputs were random
  std::string expected_from;    // PyTorch's output files ("" when there were none)
  bool against_pytorch = false;  // compared with PyTorch's outputs
  bool pytorch_ok = false;       // and they matched
};

// Compiles graph `g` of the capture (training step where PyTorch compiled one, or where `o` asks).
// Never throws: a graph that does not load or compile has ours.error.
CaptureCompile compile_capture_graph(const Capture& c, const CaptureGraph& g, const PipelineOptions& o = {});

// Compiles every graph of `c`, in order; also fills each compile's `ours` in `t` (capture_as_trace(c),
// one compile per graph) when given. `progress` (may be null) is called before each graph with
// its index and the count; returning false stops.
std::vector<CaptureCompile> compile_capture_graphs(const Capture& c, const PipelineOptions& o = {}, TorchTrace* t = nullptr,
                                                   const std::function<bool(size_t, size_t)>& progress = nullptr);

// {"path", "torch_version", "graphs": [{index, file, compile_id, name, source, train, inputs,
// guards (bool), recompile_reasons, ours: {check, against_pytorch, kernels, library_calls, error,
// inputs_from, expected_from}}], "graph_breaks", "failures", "warnings"}, pretty-printed.
// `compiled` may be empty (nothing compiled) or one entry per graph.
std::string capture_report_json(const Capture& c, const std::vector<CaptureCompile>& compiled);

}  // namespace ls
