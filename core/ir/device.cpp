#include "ir/device.h"

#include <stdexcept>

namespace ls {

const char* device_name(Device d) { return d == Device::cuda ? "cuda" : "cpu"; }

Device parse_device(std::string_view name) {
  if (name == "cpu") return Device::cpu;
  if (name == "cuda") return Device::cuda;
  throw std::invalid_argument("unknown device '" + std::string(name) + "' (cpu or cuda)");
}

}  // namespace ls
