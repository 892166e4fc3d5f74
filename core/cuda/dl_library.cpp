#include "cuda/dl_library.h"

#include <dlfcn.h>
#include <link.h>

namespace ls {

std::vector<DlCandidate> cuda_library_candidates(const std::string& base, const std::vector<std::string>& versions) {
  std::vector<DlCandidate> c;
#ifdef LOWERSCOPE_CUDA_LIB
  c.push_back({std::string(LOWERSCOPE_CUDA_LIB) + "/" + base + ".so"});
#endif
  for (const std::string& v : versions) c.push_back({base + ".so." + v});
  c.push_back({base + ".so"});
  c.push_back({"/usr/local/cuda/lib64/" + base + ".so"});
  return c;
}

void* open_first_library(const std::vector<DlCandidate>& candidates, std::string* which) {
  for (const DlCandidate& c : candidates) {
    for (const std::string& p : c.preload) dlopen(p.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (void* lib = dlopen(c.file.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      if (which) {
        *which = c.file;
        link_map* m = nullptr;  // the file the loader found, as a path
        if (dlinfo(lib, RTLD_DI_LINKMAP, &m) == 0 && m && m->l_name && *m->l_name) *which = m->l_name;
      }
      return lib;
    }
  }
  return nullptr;
}

void* DlSymbols::find(const char* name) const { return lib_ ? dlsym(lib_, name) : nullptr; }

namespace {
std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}
}  // namespace

std::string DlSymbols::error() const { return missing_.empty() ? "" : library_ + " lacks " + joined(missing_); }

std::string DlSymbols::absent() const { return joined(absent_); }

}  // namespace ls
