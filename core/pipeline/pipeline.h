// The pipeline, as one script of stages. Each stage's result is recorded once, here; the GUI,
// the CLI, its --dump folder and the tests all read this record.
//
//   capture -> aten -> core_aten -> prims -> loop_ir -> fused -> source -> asm -> run
//
// In training mode the ATen graph is differentiated and partitioned first, and the training
// step (forward, backward, optional SGD update) is what goes on down the pipeline:
//
//   capture -> aten -> joint -> forward, backward -> core_aten -> prims -> ... -> run
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "record/compile_record.h"

namespace ls {

// Stage names in pipeline order, for documentation and the GUI's list.
const std::vector<std::string>& stage_names(bool train = false);

// Never throws for a bad model: errors land in result.error with the stage that raised them.
// `cancelled` is polled between stages.
CompileResult run_pipeline(LoadedModel model, const PipelineOptions& o = {},
                           const std::function<bool()>& cancelled = nullptr);

}  // namespace ls
