// Capture from Python programs: a TorchDynamo-like front end. A PyTorch-style script runs in an
// embedded CPython against a `torch` module of our own (core/script/python/): tensors computed by
// the reference kernels, autograd through our derivative rules, and torch.compile, which records
// the torch-level graph of each compiled call, breaks it where Python needs a tensor's value,
// guards it, and hands each graph to the pipeline (pipeline/pipeline.h) to compile and run.
// Test: tests/test_script.cpp.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/pipeline.h"

namespace ls {

struct ScriptOptions {
  std::string device = "cpu";
  bool fusion = true;
  // Every line the script prints, as it prints it (also collected in ScriptRun::output).
  std::function<void(const std::string&)> on_output;
};

// One compiled graph: what torch.compile captured at one call, and what the pipeline made of it.
struct CapturedGraph {
  int id = 0;                 // in compile order, from 0
  std::string function;       // "toy_example", or "torch_dynamo_resume_in_toy_example_at_21"
  std::string location;       // "script.py:19": where the captured code starts
  std::string graph_text;     // the Dynamo-level graph, as gm.print_readable() prints it
  std::vector<std::string> guards;  // what a later call must satisfy to reuse it
  std::string reason;         // why it was compiled: "first call", or the guard a later call failed
  bool recompile = false;
  bool train = false;         // inputs required grad: compiled as a training step
  int calls = 0;              // how many calls ran it
  bool dynamic = false;       // compiled with symbolic sizes (dynamic=True, or automatic dynamic shapes)
  std::vector<std::string> sizes;  // dynamic: its calls' first tensor argument's sizes ("16x32"), in order
  std::shared_ptr<const CompileResult> result;  // the pipeline's record (stages, kernels, check)
};

struct GraphBreak {
  std::string function;
  std::string reason;    // "generic_jump TensorVariable(): data-dependent branch on a tensor"
  std::string location;  // "script.py:21"
  std::string code;      // the source line
};

struct ScriptRun {
  bool ok = false;
  std::string error;   // the Python traceback, or why the script could not run
  std::string output;  // what it printed
  std::vector<CapturedGraph> graphs;
  std::vector<GraphBreak> breaks;
  int recompiles = 0;
  double ms = 0;
};

// Whether this build embeds CPython (Debian's python3-dev when it was configured).
bool have_python();
// Runs `source` (named `filename` in tracebacks and `# File:` lines) in a fresh namespace. Never
// throws for an error of the script: it lands in ScriptRun::error. One script at a time per process.
ScriptRun run_script(const std::string& source, const std::string& filename, const ScriptOptions& o = {});
// From another thread: raises KeyboardInterrupt in the running script (a `while True:` stops).
void interrupt_script();
// The compile log as JSON: each graph with its text, guards, reason and pipeline summary; breaks.
std::string script_report_json(const ScriptRun& r);

}  // namespace ls
