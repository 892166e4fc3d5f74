#include "backend/backend.h"

#include <iomanip>
#include <sstream>

#include "ops/op_table.h"

namespace ls {

PipelineOptions Backend::sample_options(const BackendJob& job) const { return job.o; }

std::string sizes_text(const SizeGeneric& g, const std::vector<int64_t>& v) {
  std::string t;
  for (size_t k = 0; k < v.size() && k < g.symbols.size(); ++k)
    if (g.symbols[k].dynamic) t += (t.empty() ? "" : ", ") + g.symbols[k].name + "=" + std::to_string(v[k]);
  return t.empty() ? "the traced sizes" : t;
}

AtNewSizes front_half_at(const FrontHalf& front_half, const Graph& aten, const std::vector<Shape>& shapes, const PipelineOptions& o,
                         const SizeGeneric& plan, const std::vector<int64_t>& v) {
  AtNewSizes n{front_half(aten, shapes, o), {}};
  std::string why;
  if (!plan.matches(n.r.source.code, v, &why))
    throw GuardFailed("guard failed: at " + sizes_text(plan, v) + " the code is not the compiled template's: " + why);
  const bool to_prims = o.decompose_to == 0 || o.decompose_to == level::prims;
  n.lowered = to_prims ? std::move(n.r.prims) : std::move(n.r.core_aten);
  return n;
}

std::string new_sizes_note(const SizeGeneric& plan, const std::vector<int64_t>& v, std::chrono::steady_clock::time_point since,
                           const char* kernels) {
  std::ostringstream note;
  note << std::fixed << std::setprecision(1) << "new sizes " << sizes_text(plan, v) << ": the compiled " << kernels
       << " reused, no compile (front half and check "
       << std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count() << " ms)";
  return note.str();
}

}  // namespace ls
