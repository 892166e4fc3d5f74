// The build without an embedded CPython (python3-dev was not found when it was configured).
#include <nlohmann/json.hpp>

#include "script/script.h"

namespace ls {
bool have_python() { return false; }
void interrupt_script() {}
ScriptRun run_script(const std::string&, const std::string& filename, const ScriptOptions&) {
  ScriptRun r;
  r.error = "cannot run " + filename + ": this build has no embedded Python (install python3-dev and rebuild)";
  return r;
}
std::string script_report_json(const ScriptRun& r) {
  return nlohmann::json({{"ok", r.ok}, {"error", r.error}, {"graphs", nlohmann::json::array()}}).dump(2);
}
}  // namespace ls
