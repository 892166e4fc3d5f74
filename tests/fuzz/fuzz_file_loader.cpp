// libFuzzer target for the importers that read files (.pt2, .onnx, .npy), built once per format
// with LS_FUZZ_FORMAT set (see CMakeLists.txt). Any input must load or fail with an exception,
// never crash or hang.
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>

#include "frontend/onnx.h"
#include "frontend/pt2.h"
#include "tensor/npy.h"

#define LS_PT2 1
#define LS_ONNX 2
#define LS_NPY 3

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* ext = LS_FUZZ_FORMAT == LS_PT2 ? ".pt2" : LS_FUZZ_FORMAT == LS_ONNX ? ".onnx" : ".npy";
  const std::string path = "/tmp/lowerscope_fuzz_" + std::to_string(getpid()) + ext;
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    if (LS_FUZZ_FORMAT == LS_PT2) ls::import_pt2(path);
    else if (LS_FUZZ_FORMAT == LS_ONNX) ls::import_onnx(path);
    else ls::load_npy(path);
  } catch (const std::exception&) {
  }
  return 0;
}
