// Inductor's kernel counts per compiled graph (tests/data/inductor_counts.tsv, read from the
// fixtures' output_code.py by tools/inductor-counts.py) and the check that ours are within them:
// per graph (inference, forward, backward), our generated kernels no more than Inductor's, and
// our library calls no more than its extern calls plus its ATen fallbacks (attention and
// convolution_backward, which Inductor runs eagerly and its "x" count leaves out). Where the
// fixture has no dump of a training forward (res_block, cifar_net), only the backward is compared.
// Header-only, no Qt: the CPU (Qt Test) and CUDA (plain) suites share it.
#pragma once
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "pipeline/pipeline.h"

namespace ls_test {

struct InductorCount {
  std::string graph;  // inference | forward | backward
  int generated = 0, external = 0, fallback = 0;
};

inline std::vector<InductorCount> inductor_counts(const std::string& tsv, const std::string& model, bool train,
                                                  const std::string& device) {
  std::vector<InductorCount> rows;
  std::ifstream in(tsv);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    std::string c, mode, dev;
    InductorCount r;
    f >> c >> mode >> dev >> r.graph >> r.generated >> r.external >> r.fallback;
    if (c == model && mode == (train ? "train" : "infer") && dev == device) rows.push_back(r);
  }
  return rows;
}

// Empty when ours are within Inductor's; else what is over. `compared` counts the graphs checked.
inline std::string counts_within(const ls::CompileResult& r, const std::vector<InductorCount>& rows, int& compared) {
  compared = 0;
  std::string over;
  for (const InductorCount& ic : rows) {
    int gen = 0, ext = 0;
    for (const ls::Kernel& k : r.schedule.kernels) {
      if (ic.graph == "forward" && k.phase != ls::Phase::forward) continue;
      if (ic.graph == "backward" && k.phase != ls::Phase::backward) continue;
      (k.is_extern ? ext : gen)++;
    }
    ++compared;
    if (gen > ic.generated || ext > ic.external + ic.fallback)
      over += ic.graph + ": ours " + std::to_string(gen) + "k/" + std::to_string(ext) + "x, Inductor " + std::to_string(ic.generated) +
              "k/" + std::to_string(ic.external) + "x + " + std::to_string(ic.fallback) + " fallback; ";
  }
  return over;
}

}  // namespace ls_test
