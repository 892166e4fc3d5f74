// PyTorch 2.11's Core ATen IR: the op overloads tagged torch.Tag.core (189), as
// `[str(op) for op in torch.ops.aten ... if torch.Tag.core in op.tags]` lists them, and those
// our table leaves to the importers, with why. `lowerscope-cli ops --core` reports the coverage;
// test_core (testEveryCoreAtenOpIsInTheTable) holds it.
#pragma once
#include <string_view>
#include <utility>
#include <vector>

namespace ls {

const std::vector<std::string_view>& pytorch_core_aten_ops();
// Core ATen overloads that are not ops of our table, each with the reason.
const std::vector<std::pair<std::string_view, std::string_view>>& core_aten_ops_not_in_table();

}  // namespace ls
