// The CPU's kept programs (PipelineOptions::keep_program): a compile's code run again on other
// inputs, at the traced sizes, or (dynamic shapes) at any sizes the template's guards admit.
#pragma once
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "compile/cpu_compiler.h"

namespace ls {

std::shared_ptr<CompiledProgram> cpu_program(const CompileResult& r, const Graph& lowered_from, std::unique_ptr<LoadedCode> code);

// A dynamic-shapes compile kept to run again: a new size costs the front half and the check that
// its code is the template's; sizes seen before cost nothing more.
std::shared_ptr<CompiledProgram> dynamic_cpu_program(const CompileResult& r, const PipelineOptions& o, FrontHalf front_half,
                                                     const Graph& lowered_from, std::unique_ptr<LoadedCode> code);

// The size symbols' values as the kernels take them: an array, never empty.
std::vector<int64_t> cpu_sizes_arg(std::vector<int64_t> v);

}  // namespace ls
