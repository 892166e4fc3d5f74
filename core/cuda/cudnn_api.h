// The entry points of cuDNN that Lowerscope loads at run time (cudnn.cpp opens the library),
// and an execution plan's descriptors: shared by the convolutions (cudnn.cpp) and attention
// (cudnn_sdpa.cpp). Internal to core/cuda.
// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/cudnn.h"

// Where cuDNN's headers are at hand, the constants and the layout declared below are checked
// against them (the library itself is loaded at run time, headers or not).
#if __has_include(<cudnn.h>)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <cudnn.h>
#define LOWERSCOPE_CHECK_CUDNN_HEADER 1
#endif

namespace ls {

// The legacy convolution API of cuDNN 8 and 9 (cudnn_ops.h, cudnn_cnn.h, cudnn_graph.h): opaque
// handles and descriptors are pointers, the constants are the headers' values. cuDNN 9's
// libcudnn.so.9 is a shim that exports all of them and loads its sub-libraries itself.
struct Cudnn::Api {
  static constexpr int kFloat = 0, kHalf = 2, kBfloat16 = 9;           // cudnnDataType_t
  static constexpr int kNchw = 0;                                       // CUDNN_TENSOR_NCHW
  static constexpr int kCrossCorrelation = 1;                           // CUDNN_CROSS_CORRELATION
  static constexpr int kDefaultMath = 0, kTensorOpMath = 1, kFmaMath = 3;  // cudnnMathType_t
  struct Perf {  // cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t: the same layout
    int algo;
    int status;
    float time;
    size_t memory;
    int determinism;
    int math_type;
    int reserved[3];
  };
  using Create = int (*)(void**);
  void* lib = nullptr;
  int (*create)(void**) = nullptr;
  int (*set_stream)(void*, void*) = nullptr;
  size_t (*get_version)() = nullptr;
  const char* (*error_string)(int) = nullptr;
  int (*create_tensor)(void**) = nullptr;
  int (*set_tensor4d)(void*, int, int, int, int, int, int) = nullptr;
  int (*create_filter)(void**) = nullptr;
  int (*set_filter4d)(void*, int, int, int, int, int, int) = nullptr;
  int (*create_conv)(void**) = nullptr;
  int (*set_conv2d)(void*, int, int, int, int, int, int, int, int) = nullptr;
  int (*set_group_count)(void*, int) = nullptr;
  int (*set_math_type)(void*, int) = nullptr;
  int (*output_dim)(void*, void*, void*, int*, int*, int*, int*) = nullptr;
  int (*destroy_tensor)(void*) = nullptr;
  int (*destroy_filter)(void*) = nullptr;
  int (*destroy_conv)(void*) = nullptr;
  // *_v7 heuristics: (handle, three descriptors in the pass's order, conv, requested, returned, perf)
  int (*fwd_algos)(void*, void*, void*, void*, void*, int, int*, Perf*) = nullptr;
  int (*bwd_data_algos)(void*, void*, void*, void*, void*, int, int*, Perf*) = nullptr;
  int (*bwd_filter_algos)(void*, void*, void*, void*, void*, int, int*, Perf*) = nullptr;
  // (handle, alpha, desc, a, desc, b, conv, algo, workspace, bytes, beta, desc, out)
  using Run = int (*)(void*, const void*, void*, const void*, void*, const void*, void*, int, void*, size_t, const void*, void*, void*);
  Run fwd = nullptr, bwd_data = nullptr, bwd_filter = nullptr;

  // The backend (graph) API (cudnn_graph.h), which PyTorch's convolutions go through: an execution
  // plan made once per problem runs with a few microseconds of host time, where the legacy calls
  // above spend tens of microseconds each in cuDNN 9 (ResNet-50 bf16 at batch 32: 7.0 ms a run
  // through them against 2.5 ms of kernels).
  static constexpr int kConvolutionDesc = 1, kEngineDesc = 2, kEngineCfgDesc = 3, kEngineHeurDesc = 4, kExecutionPlanDesc = 5,
                       kConvForwardOp = 10, kConvBackwardFilterOp = 11, kConvBackwardDataOp = 12, kOperationGraphDesc = 15,
                       kVariantPackDesc = 16, kTensorDesc = 17;  // cudnnBackendDescriptorType_t
  static constexpr int kTypeHandle = 0, kTypeDataType = 1, kTypeInt64 = 3, kTypeFloat = 4, kTypeVoidPtr = 6, kTypeConvMode = 7,
                       kTypeHeurMode = 8, kTypeNumericalNote = 11, kTypeDescriptor = 15;  // cudnnBackendAttributeType_t
  static constexpr int kAttrConvCompType = 100, kAttrConvMode = 101, kAttrConvDilations = 102, kAttrConvFilterStrides = 103,
                       kAttrConvPostPaddings = 104, kAttrConvPrePaddings = 105, kAttrConvSpatialDims = 106, kAttrHeurMode = 200,
                       kAttrHeurGraph = 201, kAttrHeurResults = 202, kAttrCfgEngine = 300, kAttrPlanHandle = 400, kAttrPlanConfig = 401,
                       kAttrPlanWorkspace = 402, kAttrFwdAlpha = 700, kAttrGraphHandle = 800, kAttrGraphOps = 801, kAttrTensorAlignment = 900,
                       kAttrTensorDataType = 901, kAttrTensorDims = 902, kAttrTensorStrides = 903, kAttrTensorUid = 906, kAttrPackUids = 1000,
                       kAttrPackPointers = 1001, kAttrPackWorkspace = 1003, kAttrEngineIndex = 1301,
                       kAttrEngineNotes = 1303;  // cudnnBackendAttributeName_t
  static constexpr int kHeurInstant = 0;                                     // CUDNN_HEUR_MODE_INSTANT
  static constexpr int kNoteTensorCore = 0, kNoteDownConvert = 1, kNoteReducedReduction = 2;  // cudnnBackendNumericalNote_t
  int (*b_create)(int, void**) = nullptr;
  int (*b_destroy)(void*) = nullptr;
  int (*b_finalize)(void*) = nullptr;
  int (*b_set)(void*, int, int, int64_t, const void*) = nullptr;
  int (*b_get)(void*, int, int, int64_t, int64_t*, void*) = nullptr;
  int (*b_execute)(void*, void*, void*) = nullptr;
  bool backend() const { return b_create && b_destroy && b_finalize && b_set && b_get && b_execute; }

  std::string error(int status) const {
    const char* s = error_string ? error_string(status) : nullptr;
    return (s ? std::string(s) : "status") + " (" + std::to_string(status) + ")";
  }
  void check(int status, const char* what) const {
    if (status != 0) throw std::runtime_error(std::string(what) + " failed: " + error(status));
  }
};

#ifdef LOWERSCOPE_CHECK_CUDNN_HEADER
static_assert(Cudnn::Api::kFloat == CUDNN_DATA_FLOAT && Cudnn::Api::kHalf == CUDNN_DATA_HALF && Cudnn::Api::kBfloat16 == CUDNN_DATA_BFLOAT16);
static_assert(Cudnn::Api::kNchw == CUDNN_TENSOR_NCHW && Cudnn::Api::kCrossCorrelation == CUDNN_CROSS_CORRELATION);
static_assert(Cudnn::Api::kDefaultMath == CUDNN_DEFAULT_MATH && Cudnn::Api::kTensorOpMath == CUDNN_TENSOR_OP_MATH &&
              Cudnn::Api::kFmaMath == CUDNN_FMA_MATH);
static_assert(sizeof(Cudnn::Api::Perf) == sizeof(cudnnConvolutionFwdAlgoPerf_t) &&
              sizeof(Cudnn::Api::Perf) == sizeof(cudnnConvolutionBwdDataAlgoPerf_t) &&
              sizeof(Cudnn::Api::Perf) == sizeof(cudnnConvolutionBwdFilterAlgoPerf_t));
static_assert(offsetof(Cudnn::Api::Perf, memory) == offsetof(cudnnConvolutionFwdAlgoPerf_t, memory) &&
              offsetof(Cudnn::Api::Perf, math_type) == offsetof(cudnnConvolutionFwdAlgoPerf_t, mathType));
static_assert(CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED == 7 && CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED == 5 &&
              CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING == 6);
static_assert(Cudnn::Api::kTensorDesc == CUDNN_BACKEND_TENSOR_DESCRIPTOR && Cudnn::Api::kVariantPackDesc == CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR &&
              Cudnn::Api::kConvBackwardDataOp == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR &&
              Cudnn::Api::kConvBackwardFilterOp == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR &&
              Cudnn::Api::kExecutionPlanDesc == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR && Cudnn::Api::kEngineCfgDesc == CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
static_assert(Cudnn::Api::kTypeDescriptor == CUDNN_TYPE_BACKEND_DESCRIPTOR && Cudnn::Api::kTypeNumericalNote == CUDNN_TYPE_NUMERICAL_NOTE &&
              Cudnn::Api::kTypeHeurMode == CUDNN_TYPE_HEUR_MODE && Cudnn::Api::kTypeVoidPtr == CUDNN_TYPE_VOID_PTR);
static_assert(Cudnn::Api::kAttrFwdAlpha + 3 == CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W &&
              Cudnn::Api::kAttrFwdAlpha + 6 + 3 == CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W &&
              Cudnn::Api::kAttrFwdAlpha + 6 + 4 == CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX &&
              Cudnn::Api::kAttrFwdAlpha + 12 + 3 == CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW &&
              Cudnn::Api::kAttrFwdAlpha + 12 + 5 == CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY);
static_assert(Cudnn::Api::kAttrPlanWorkspace == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE && Cudnn::Api::kAttrPackWorkspace == CUDNN_ATTR_VARIANT_PACK_WORKSPACE &&
              Cudnn::Api::kAttrEngineNotes == CUDNN_ATTR_ENGINE_NUMERICAL_NOTE && Cudnn::Api::kAttrTensorUid == CUDNN_ATTR_TENSOR_UNIQUE_ID &&
              Cudnn::Api::kAttrConvSpatialDims == CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS && Cudnn::Api::kAttrHeurResults == CUDNN_ATTR_ENGINEHEUR_RESULTS);
static_assert(Cudnn::Api::kHeurInstant == CUDNN_HEUR_MODE_INSTANT && Cudnn::Api::kNoteReducedReduction == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION &&
              Cudnn::Api::kNoteDownConvert == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS);
#pragma GCC diagnostic pop
#endif

// Descriptors of one problem and pass, and the algorithm the heuristic chose.
struct Cudnn::Plan {
  Api* api = nullptr;
  void *x = nullptr, *y = nullptr, *w = nullptr, *conv = nullptr;
  int algo = 0, math = 0;
  size_t workspace = 0;
  std::string text;
  // The backend's: every descriptor made for it (destroyed with it), its execution plan, and the
  // variant pack of the last pointers it ran on (a call site runs on the same buffers every time).
  std::vector<void*> owned;
  void* exec = nullptr;
  std::map<std::vector<void*>, void*> packs;  // variant packs by their pointers (the workspace's last)
  std::array<float, 3> values{};               // the values of by-value scalars (the variant pack points at them)
  ~Plan() {
    if (!api) return;
    for (const auto& kv : packs) api->b_destroy(kv.second);
    for (auto it = owned.rbegin(); it != owned.rend(); ++it) api->b_destroy(*it);
    if (x) api->destroy_tensor(x);
    if (y) api->destroy_tensor(y);
    if (w) api->destroy_filter(w);
    if (conv) api->destroy_conv(conv);
  }
};


// The steps of building a plan's backend descriptors: ok() keeps the first failure's words in
// *why; make() creates a descriptor the plan owns (destroyed with it).
struct Cudnn::PlanSteps {
  Api& a;
  Plan& p;
  std::string* why;
  bool ok(int status, const char* what) const {
    if (status != 0 && why) *why = std::string(what) + " failed: " + a.error(status);
    return status == 0;
  }
  void* make(int type, const char* what) const {
    void* d = nullptr;
    if (!ok(a.b_create(type, &d), what)) return nullptr;
    p.owned.push_back(d);
    return d;
  }
};

}  // namespace ls
