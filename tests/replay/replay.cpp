// Process replay (after tinygrad's): every fixture compiled for the CPU and CUDA, inference and
// training, and its generated sources held in tests/data/replay/. A refactor must leave them byte
// for byte the same; an intended change updates them in a commit of its own.
//
//   lowerscope-replay check  DATA_DIR REPLAY_DIR   differences as unified diffs, exit 1 if any
//   lowerscope-replay update DATA_DIR REPLAY_DIR   writes what the compiler generates now
//
// The CPU code depends on the machine (threads, vector width): ctest pins it with
// LOWERSCOPE_CPU_TARGET, and the CUDA code is generated for the H100 (sm_90, 132 SMs) where no
// GPU is found. Only the front half runs (stages up to the source); dynamic-shape cases compile
// too, since the template is made from the compiled samples.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "codegen/cpu_target.h"
#include "frontend/load_model.h"
#include "pipeline/pipeline.h"

namespace fs = std::filesystem;
using namespace ls;

namespace {

struct Case {
  std::string id;     // file name in REPLAY_DIR, without .txt
  std::string model;  // relative to DATA_DIR
  std::string device;
  bool train = false;
  bool dynamic = false;
};

std::vector<Case> cases(const fs::path& data) {
  std::vector<std::pair<std::string, std::string>> models;
  for (const char* m : {"attn_block", "cifar_net", "layernorm_gelu", "mlp", "mobilenet_v3_small", "mse_loss", "res_block",
                        "sincos", "softmax"})
    models.emplace_back(m, std::string("stages/") + m + "/3_core_aten.txt");
  std::vector<fs::path> extra;
  for (const auto& e : fs::directory_iterator(data / "stages/extra"))
    if (e.path().extension() == ".txt") extra.push_back(e.path());
  std::sort(extra.begin(), extra.end());
  for (const fs::path& p : extra) models.emplace_back("extra_" + p.stem().string(), "stages/extra/" + p.filename().string());
  // The importers' graphs (weights and names as the files give them).
  for (const char* m : {"mlp", "res_block", "cifar_net", "softmax"})
    models.emplace_back(std::string(m) + "_pt2", std::string("models/") + m + "/model.pt2");
  models.emplace_back("res_block_onnx", "models/res_block/model.onnx");

  std::vector<Case> out;
  for (const auto& [name, path] : models)
    for (const char* device : {"cpu", "cuda"})
      for (bool train : {false, true}) out.push_back({name + "." + device + (train ? ".train" : ""), path, device, train, false});
  for (const char* m : {"softmax", "layernorm_gelu"})
    for (const char* device : {"cpu", "cuda"})
      out.push_back({std::string(m) + "." + device + ".dynamic", std::string("stages/") + m + "/3_core_aten.txt", device, false, true});
  return out;
}

// What a compile generated, as one text: the source, the CUDA launches and attention module, or
// the error that stopped it.
std::string generated(const fs::path& data, const Case& c) {
  std::ostringstream os;
  os << "# " << c.model << ", " << c.device << (c.train ? ", training step" : ", inference") << (c.dynamic ? ", dynamic" : "") << "\n";
  PipelineOptions o;
  o.device = parse_device(c.device);
  o.train = c.train;
  o.dynamic = c.dynamic;
  o.run = false;
  o.reference = false;
  o.sass = false;
  o.record = c.dynamic;  // the source stage holds the compiled template
  o.stop_after_source = !c.dynamic;
  CompileResult r;
  try {
    r = run_pipeline(load_model((data / c.model).string()), o);
  } catch (const std::exception& e) {
    os << "# error while loading: " << e.what() << "\n";
    return os.str();
  }
  if (!r.error.empty()) {
    os << "# error at " << r.error_stage << ": " << r.error << "\n";
    return os.str();
  }
  os << (c.dynamic ? r.dynamic.code : r.source.code);
  if (c.device == "cuda") {
    os << "\n# ---- launches ----\n";
    for (size_t k = 0; k < r.cuda.launch.size(); ++k) {
      const CudaLaunch& l = r.cuda.launch[k];
      os << r.schedule.kernels.at(k).name << ": " << l.form << " grid " << l.grid << " block " << l.block << " threads_per_row "
         << l.threads_per_row << " split " << l.split << " scratch " << l.scratch_bytes << (l.cluster ? " cluster" : "") << (l.vector ? " vector" : "") << "\n";
    }
    if (!r.cuda.attention_source.empty()) os << "\n# ---- attention module ----\n" << r.cuda.attention_source;
  }
  return os.str();
}

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// A unified diff from diff(1) where it is installed, else the first line that differs.
std::string difference(const fs::path& golden, const std::string& now) {
  const fs::path tmp = fs::temp_directory_path() / ("lowerscope-replay-" + golden.filename().string());
  std::ofstream(tmp, std::ios::binary) << now;
  std::string out;
  const std::string cmd = "diff -u '" + golden.string() + "' '" + tmp.string() + "' 2>&1 | head -80";
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
  }
  fs::remove(tmp);
  if (!out.empty()) return out;
  const std::string was = read(golden);
  size_t i = 0, line = 1;
  while (i < was.size() && i < now.size() && was[i] == now[i]) line += was[i++] == '\n';
  return "first difference at line " + std::to_string(line) + "\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 || (std::string(argv[1]) != "check" && std::string(argv[1]) != "update")) {
    std::cerr << "usage: lowerscope-replay check|update DATA_DIR REPLAY_DIR\n";
    return 2;
  }
  const bool update = std::string(argv[1]) == "update";
  const fs::path data = argv[2], dir = argv[3];
  const CpuTarget& t = cpu_target();
  std::cout << "CPU target: " << t.threads << " threads, pool " << t.pool_threads << ", " << t.vector_floats << "-float vectors\n";
  if (update) fs::create_directories(dir);
  int same = 0, changed = 0, added = 0, skipped = 0;
  std::vector<std::string> seen;
  for (const Case& c : cases(data)) {
    const fs::path golden = dir / (c.id + ".txt");
    seen.push_back(golden.filename().string());
    if (!can_compile_for(parse_device(c.device))) {  // a build without NVRTC checks the CPU's sources only
      ++skipped;
      continue;
    }
    const std::string now = generated(data, c);
    const bool exists = fs::exists(golden);
    if (exists && read(golden) == now) {
      ++same;
      continue;
    }
    if (update) {
      std::ofstream(golden, std::ios::binary) << now;
      std::cout << (exists ? "updated " : "added ") << golden.filename().string() << "\n";
      (exists ? changed : added) += 1;
    } else if (!exists) {
      std::cout << "MISSING " << golden.filename().string() << " (run: lowerscope-replay update)\n";
      ++added;
    } else {
      std::cout << "CHANGED " << golden.filename().string() << "\n" << difference(golden, now);
      ++changed;
    }
  }
  int stale = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (std::find(seen.begin(), seen.end(), e.path().filename().string()) == seen.end()) {
      if (update) fs::remove(e.path());
      std::cout << (update ? "removed " : "STALE ") << e.path().filename().string() << "\n";
      ++stale;
    }
  std::cout << same << " unchanged, " << changed << " changed, " << added << (update ? " added, " : " missing, ") << stale
            << (update ? " removed" : " stale") << "\n";
  if (update) return 0;
  std::cout << same << " passed, " << changed + added + stale << " failed" << (skipped ? ", " + std::to_string(skipped) + " skipped" : "")
            << "\n";
  return changed + added + stale ? 1 : 0;
}
