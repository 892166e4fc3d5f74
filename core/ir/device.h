// The devices the compiler generates code for. Names as torch spells them ("cpu", "cuda").
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace ls {

enum class Device : uint8_t { cpu, cuda };

const char* device_name(Device d);
// Throws std::invalid_argument naming the text and the devices there are.
Device parse_device(std::string_view name);

}  // namespace ls
