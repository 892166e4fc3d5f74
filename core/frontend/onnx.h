// ONNX models (ModelProto, opsets 13 to 18): nodes mapped onto the ATen-level op table so every
// later stage works on them; initializers become parameters with their values attached. External
// data is read only from inside the model's folder.
#pragma once
#include <string>

#include "ir/graph.h"

namespace ls {
bool have_onnx();  // false when the build has no ONNX protobuf library
// Throws std::runtime_error naming the file, and the node, field or tensor that is wrong.
Graph import_onnx(const std::string& path);
}
