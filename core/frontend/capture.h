// Reads a capture folder, what the Python package's torch.compile backend writes
// (`torch.compile(model, backend="lowerscope")`, python/lowerscope/capture.py): capture.json (the
// manifest), graph_<n>.txt (each Dynamo graph as print_readable prints it), graph_<n>_input_<i>.npy
// (its example inputs) and graph_<n>_output_<i>.npy (PyTorch's eager outputs on them), with the
// guards, recompile reasons, graph breaks and failures PyTorch logged. A manifest that is not one
// is an error naming the file and the field; a graph whose entry is bad is kept with its error.
// Tests: tests/import/test_import.cpp testCapture*.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/load_model.h"
#include "frontend/torch_trace.h"

namespace ls {

struct CaptureInput {
  std::string name;   // the placeholder ("L_x_", "s77")
  std::string kind;   // tensor | symint | scalar | ...
  std::string dtype;  // "torch.float32"
  std::string device;
  std::string file;   // its .npy ("" for a SymInt or a tensor not written)
  std::string saved_as;  // "float32" where the dtype was widened for numpy (float16, bfloat16)
  std::vector<int64_t> shape;
  bool requires_grad = false;
  double value = 0;  // a SymInt's or scalar's value
};

struct CaptureOutput {
  std::string file, dtype;
  std::vector<int64_t> shape;
};

struct CaptureGraph {
  int index = 0;
  std::string file;        // graph_<n>.txt
  std::string compile_id;  // "0/1" ("" where the backend ran outside a Dynamo compile)
  int frame_id = -1, frame_compile_id = -1, attempt = 0;
  std::string name;        // the function (co_name)
  std::string source;      // "file:line" of its first line
  std::vector<CaptureInput> inputs;
  std::vector<CaptureOutput> outputs;  // empty: no expected outputs (outputs_note says why)
  std::string outputs_note;
  bool train = false;      // an input needs a gradient: PyTorch compiled a training graph
  std::string guards;      // the guard tree (dynamo_cpp_guards_str)
  std::vector<std::string> recompile_reasons;
  std::string error;       // what is wrong with this graph's entry ("" when it is usable)
};

struct CaptureGraphBreak {
  std::string compile_id, user_frame, reason, explanation, text;
};

struct CaptureFailure {
  std::string compile_id, name, fail_type, reason, user_frame;
};

struct Capture {
  std::string path;  // the folder
  std::string torch_version, created;
  std::vector<CaptureGraph> graphs;
  std::vector<CaptureGraphBreak> graph_breaks;
  std::vector<CaptureFailure> failures;
  std::vector<std::string> warnings;  // fields ignored, graphs with errors
};

// A folder holding capture.json.
bool is_capture_folder(const std::string& path);

// The manifest's text, for the folder `dir` (files are looked up there; their names must be plain
// names inside it). Throws std::runtime_error naming capture.json and the field when the manifest
// is not JSON, not a capture, or not one this reader knows.
Capture parse_capture(std::string_view manifest, const std::string& dir);
// A capture folder (or its capture.json). Throws std::runtime_error naming the path.
Capture read_capture(const std::string& path);

// Graph `g` of the capture as a model: its text (symbolic sizes made concrete from the example
// inputs), its example inputs from the .npy files (random where they were not written), and
// PyTorch's outputs as the expected ones. Throws std::runtime_error naming the graph's file.
LoadedModel capture_graph_model(const Capture& c, const CaptureGraph& g);

// The capture as a trace (frontend/torch_trace.h), one compile per graph in the same order, with
// its Dynamo graph, guards, input sizes, recompiles, graph breaks and failures: what the trace
// panel shows. Compile ids missing from the manifest become "-/<index>".
TorchTrace capture_as_trace(const Capture& c);

}  // namespace ls
