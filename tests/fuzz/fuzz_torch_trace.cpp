// libFuzzer target: TORCH_TRACE logs. Any input must parse or fail with runtime_error; every
// graph text it yields is made concrete without a crash.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "frontend/torch_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ls::TraceLimits limits;
    limits.max_payload_bytes = 1 << 20;
    const ls::TorchTrace t = ls::parse_torch_trace(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.log", limits);
    for (const ls::TraceCompile& c : t.compiles) ls::concrete_graph_text(c.dynamo_graph, c.input_sizes);
  } catch (const std::exception&) {
  }
  return 0;
}
