// libFuzzer target: pt2 files. Any input must load or fail with an exception, never crash or hang.
#include <stdexcept>

#include "fuzz_file.h"
#include "frontend/pt2.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string p = fuzz_file(data, size, ".pt2");
  try {
    ls::import_pt2(p);
  } catch (const std::exception&) {
  }
  return 0;
}
