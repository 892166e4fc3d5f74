// libFuzzer target: onnx files. Any input must load or fail with an exception, never crash or hang.
#include <stdexcept>

#include "fuzz_file.h"
#include "frontend/onnx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string p = fuzz_file(data, size, ".onnx");
  try {
    ls::import_onnx(p);
  } catch (const std::exception&) {
  }
  return 0;
}
