// libFuzzer target: FX graph text. Any input must parse or fail with ParseError/runtime_error.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "frontend/fx_text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ls::import_fx_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz.txt");
  } catch (const std::exception&) {
  }
  return 0;
}
