// torch.autocast as the importers replay it: PyTorch's per-device op lists (which ops run in the
// lower precision, which in float32, which in the widest type of their inputs) and the casts they
// put on an op's inputs. A graph captured under autocast (torch.export's wrap_with_autocast
// region, Dynamo's _enter_autocast/_exit_autocast) records the ops as the user called them; the
// casts happen below, in ATen's Autocast dispatch keys, so the importer inserts them
// (frontend/pt2.cpp, frontend/fx_text.cpp). Tests: test_import testAutocast*.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace ls {

struct OpDef;

// at::autocast::CastPolicy (aten/src/ATen/autocast_mode.h), plus the ops autocast refuses.
enum class CastPolicy : uint8_t {
  lower_precision_fp,  // floating inputs cast to the region's dtype (mm, linear, conv)
  fp32,                // floating inputs cast to float32 (exp, layer_norm, losses)
  fp32_set_opt_dtype,  // dtype=float32 where the call gives none and the first input is eligible (softmax, sum)
  fp32_append_dtype,   // redispatched to the overload taking a dtype, float32 for an eligible input (norm)
  promote,             // floating inputs cast to the widest among them (cat, addcmul, atan2)
  banned,              // an error under autocast (CUDA's binary_cross_entropy)
};
std::string_view cast_policy_name(CastPolicy p);  // "lower_precision_fp"

// One region's autocast: torch.autocast(device_type, dtype, enabled, cache_enabled).
struct AutocastState {
  std::string device;  // "cuda" or "cpu"
  DType dtype = DType::f16;
  bool enabled = false;
};

// The state torch.autocast's arguments make: no dtype is the device's default (CUDA float16,
// CPU bfloat16, autocast_mode.cpp's autocast_dtype); CPU autocast with a dtype other than bfloat16
// or float16 is disabled, as torch.autocast warns and does. Throws std::invalid_argument for a
// device other than cuda and cpu (the devices this compiler targets).
AutocastState autocast_state(const std::string& device, std::optional<DType> dtype, bool enabled);

// The policy of an op under `device`'s autocast ("cuda", "cpu"), by its name as torch.ops spells
// it ("aten.mm.default"); none for ops outside the lists, which run in their inputs' types.
std::optional<CastPolicy> autocast_policy(std::string_view device, std::string_view op_name);

// Every (device, op, policy) of the table, in its order (for tests and `lowerscope-cli ops`).
struct AutocastEntry {
  const char* device;
  const char* op;
  CastPolicy policy;
};
const std::vector<AutocastEntry>& autocast_table();

// A call as autocast runs it: the op (fp32_append_dtype redispatches to another overload) and its
// bound arguments, tensors cast. `cast(node, dtype)` returns the id of a node converting `node` to
// `dtype` (the importer makes it, with the call's scope); it is asked only where the type differs.
// Only floating tensors other than float64 are cast (at::autocast::is_eligible); integer and bool
// tensors, numbers and float64 stay as they are. Throws std::invalid_argument for a banned op and
// for a promote op mixing float16 and bfloat16 (at::autocast::prioritize's error).
struct AutocastCall {
  const OpDef* op;
  std::vector<Arg> args;
};
AutocastCall apply_autocast(const Graph& g, const AutocastState& s, const OpDef& op, std::vector<Arg> args,
                            const std::function<int(int node, DType to)>& cast);

}  // namespace ls
