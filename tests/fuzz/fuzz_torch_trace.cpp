// libFuzzer target: TORCH_TRACE logs. Any input must parse or fail with runtime_error; every
// graph text it yields is made concrete without a crash, and each graph's kernel map
// (frontend/trace_kernel_map.h: fx_text_nodes over the Dynamo and AOT graphs' text, the backward
// graph's gradient comments, Inductor's kernels by name) is built, as the trace panel, the report
// and `lowerscope-cli trace --diff-inductor` build it, without a crash.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "frontend/torch_trace.h"
#include "frontend/trace_kernel_map.h"

namespace {

// The kernel map of one graph: with no kernels of ours, and with Inductor's own kernels set in as
// ours (so that both sides' paths run on what the reader produced).
void map_kernels(const ls::TraceCompile& c) {
  ls::fx_text_nodes(c.dynamo_graph);
  for (const auto& [kind, text] : c.aot_graphs) ls::fx_text_nodes(text);
  ls::kernel_map_text(ls::map_trace_kernels(c, {}, false));
  std::vector<ls::TraceKernel> ours;
  for (const ls::TraceOutputCode& oc : c.output_code)
    for (ls::TraceKernel k : oc.kernels) {
      k.phase = oc.aot_id.find("backward") != std::string::npos ? "backward" : "forward";
      ours.push_back(std::move(k));
    }
  const ls::KernelMap m = ls::map_trace_kernels(c, ours, true);
  ls::kernel_map_text(m);
  ls::kernel_map_json(m);  // may refuse text that is not UTF-8 (an exception, caught below)
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ls::TraceLimits limits;
    limits.max_payload_bytes = 1 << 20;
    const ls::TorchTrace t = ls::parse_torch_trace(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.log", limits);
    for (const ls::TraceCompile& c : t.compiles) {
      ls::concrete_graph_text(c.dynamo_graph, c.input_sizes);
      try {
        map_kernels(c);
      } catch (const std::exception&) {
      }
    }
  } catch (const std::exception&) {
  }
  return 0;
}
