// The text and checks the pipeline records around the run: the run stage's table, the
// partition's note under the forward and backward graphs, the reference interpreter's outputs,
// the kernel table and the check against the expected files and the reference.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace ls {

// The run stage's text: each kernel's time, bytes and bandwidth, the whole model, the checks.
std::string run_table(const CompileResult& r);

// The partition as comment lines under the forward and backward graphs.
std::string partition_note(const TrainingRecord& t);
// The saved and recomputed tensors marked on the joint, forward and backward graphs.
DotMarks saved_marks(const Partition& p);

// The reference interpreter's outputs: the ATen graph's, or a training step's joint graph's (with
// the SGD update of each parameter where sgd_lr > 0).
std::vector<Tensor> reference_outputs(const CompileResult& r, const std::vector<Tensor>& user_inputs, double sgd_lr);

// Whether the graph the reference runs (the ATen graph, or the joint graph) computes in bfloat16
// or float16 anywhere; then reference64_outputs: that graph's outputs in float64, inputs
// converted (empty where an op has no float64 form); a training step's from the joint graph of the
// float64 ATen graph, as torch._dynamo runs the model in float64 forward and backward.
bool computes_in_half(const CompileResult& r);
std::vector<Tensor> reference64_outputs(const CompileResult& r, const std::vector<Tensor>& user_inputs);

// The kernel table: each kernel's provenance, bytes, time and how it ran; `launch(k)` is the
// backend's launch column.
std::vector<KernelReport> kernel_reports(const CompileResult& r, const BackendRun& run,
                                         const std::function<std::string(size_t)>& launch);

// r.check: each output against the expected files and the reference, each gradient of a user
// input against grad_in<i>.npy.
void check_outputs(CompileResult& r);

}  // namespace ls
