// torch.export's .pt2 archive: a zip with models/model.json (the serialized ExportedProgram: graph,
// nodes, tensor metadata, graph signature) and raw weight blobs described by
// data/weights/model_weights_config.json. Nothing pickled is ever unpickled.
#pragma once
#include <string>

#include "ir/graph.h"

namespace ls {
bool have_pt2();  // false when the build has no libzip
// Throws std::runtime_error naming the file and the field that is wrong.
Graph import_pt2(const std::string& path);
}
