#include "report/html_report.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

namespace ls {

namespace {

std::string esc(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string num(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

// Graphviz writes an XML prologue and a DOCTYPE before <svg>; inline SVG starts at the element.
std::string inline_svg(const std::string& svg) {
  const size_t at = svg.find("<svg");
  return at == std::string::npos ? std::string() : svg.substr(at);
}

std::string anchor(const std::string& stage) { return "stage-" + stage; }

constexpr const char* kStyle = R"(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0; color: #1d2433; background: #fbfbfd; }
header { background: #22304a; color: #fff; padding: 16px 28px; }
header h1 { margin: 0 0 4px; font-size: 20px; }
header .meta { opacity: .85; font-size: 13px; }
nav { position: sticky; top: 0; background: #eef1f6; padding: 8px 28px; border-bottom: 1px solid #d5dbe5; z-index: 2; }
nav a { margin-right: 14px; color: #22304a; text-decoration: none; font-size: 13px; }
main { padding: 8px 28px 40px; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #d5dbe5; padding-bottom: 4px; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0 12px; }
th, td { border: 1px solid #d5dbe5; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #eef1f6; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.ok { color: #1e7e34; font-weight: 600; } .bad { color: #b00020; font-weight: 600; }
.bar { background: #4c78a8; height: 10px; display: inline-block; vertical-align: middle; }
.bar.ext { background: #9d9d9d; }
pre { background: #fff; border: 1px solid #d5dbe5; padding: 10px; overflow: auto; max-height: 520px; font: 12px/1.4 "DejaVu Sans Mono", Menlo, monospace; }
.graph { background: #fff; border: 1px solid #d5dbe5; overflow: auto; max-height: 720px; padding: 6px; }
.graph svg { max-width: 100%; height: auto; }
details > summary { cursor: pointer; color: #22304a; margin: 6px 0; }
.unchanged { color: #7a8599; }
)";

}  // namespace

std::string html_report(const CompileResult& r, const std::map<std::string, std::string>& svgs) {
  std::ostringstream h;
  const std::string model = r.model.path.empty() ? std::string("model") : r.model.path;
  const bool ran = r.not_run.empty() && !r.kernels.empty();
  h << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    << "<meta name=\"generator\" content=\"Lowerscope\">\n<title>Lowerscope report: " << esc(model) << "</title>\n<style>"
    << kStyle << "</style>\n</head>\n<body>\n";
  h << "<header><h1>" << esc(model) << "</h1><div class=\"meta\">" << esc(device_name(r.device)) << " · " << esc(r.compiler)
    << (r.train ? " · training step" : " · inference") << " · compile " << num(r.compile_ms, 1) << " ms";
  if (ran) h << " · run " << num(r.run_ms * 1000.0, 2) << " µs in " << r.kernels.size() << " kernel(s)";
  h << "</div></header>\n<nav><a href=\"#summary\">Summary</a><a href=\"#kernels\">Kernels</a>";
  for (const Stage& s : r.stages) h << "<a href=\"#" << anchor(s.name) << "\">" << esc(s.name) << "</a>";
  h << "</nav>\n<main>\n";

  // Summary: the check, then the stage table.
  h << "<h2 id=\"summary\">Summary</h2>\n<p>";
  if (!r.error.empty()) h << "<span class=\"bad\">Stage '" << esc(r.error_stage) << "' failed:</span> " << esc(r.error);
  else if (!r.not_run.empty()) h << "<b>Not run:</b> " << esc(r.not_run);
  else if (r.stage("run"))
    h << "Check: <span class=\"" << (r.check.ok ? "ok\">passed" : "bad\">FAILED") << "</span> · max abs err "
      << r.check.max_abs_err << " · rel err " << r.check.rel_err;
  h << "</p>\n";
  if (!r.check.outputs.empty() || !r.check.gradients.empty()) {
    h << "<table><tr><th>What</th><th>Against</th><th>Max abs err</th><th>Rel err</th><th>Result</th></tr>\n";
    auto row = [&](const std::string& what, const std::string& against, const Comparison& c) {
      h << "<tr><td>" << esc(what) << "</td><td>" << esc(against) << "</td><td class=\"n\">" << c.max_abs_err
        << "</td><td class=\"n\">" << c.rel_err << "</td><td class=\"" << (c.ok ? "ok\">ok" : "bad\">" + esc(c.why)) << "</td></tr>\n";
    };
    for (size_t i = 0; i < r.check.outputs.size(); ++i) row("output " + std::to_string(i), r.check.outputs[i].against, r.check.outputs[i].cmp);
    for (const auto& g : r.check.gradients) row("gradient of " + g.input, g.against, g.cmp);
    h << "</table>\n";
  }
  h << "<table><tr><th>#</th><th>Stage</th><th>Title</th><th>Nodes</th><th>ms</th><th>Ops</th></tr>\n";
  for (size_t i = 0; i < r.stages.size(); ++i) {
    const Stage& s = r.stages[i];
    std::string ops;
    for (const auto& [op, n] : s.ops) ops += (ops.empty() ? "" : ", ") + op + (n > 1 ? " ×" + std::to_string(n) : "");
    h << "<tr" << (s.changed ? "" : " class=\"unchanged\"") << "><td class=\"n\">" << i + 1 << "</td><td><a href=\"#"
      << anchor(s.name) << "\">" << esc(s.name) << "</a></td><td>" << esc(s.title) << (s.changed ? "" : " (unchanged)")
      << "</td><td class=\"n\">" << s.nodes << "</td><td class=\"n\">" << num(s.ms, 2) << "</td><td>" << esc(ops) << "</td></tr>\n";
  }
  h << "</table>\n";
  if (!r.compile_phases.empty()) {  // below the stages: where the compile's time went
    h << "<table><tr><th>Compile phase</th><th>Times</th><th>ms (summed over threads)</th></tr>\n";
    for (const PhaseTime& t : r.compile_phases)
      h << "<tr><td>" << esc(t.name) << "</td><td class=\"n\">" << t.count << "</td><td class=\"n\">" << num(t.ms, 1) << "</td></tr>\n";
    h << "</table>\n";
  }
  if (r.train && !r.training.partitions.empty()) {
    h << "<table><tr><th>Partitioner</th><th>Saved</th><th>Bytes</th><th>Activations</th><th>Recomputed</th></tr>\n";
    for (const Partition& p : r.training.partitions)
      h << "<tr><td>" << partitioner_name(p.partitioner) << (&p == &r.training.partition() ? " (compiled)" : "")
        << "</td><td class=\"n\">" << p.saved.size() << "</td><td class=\"n\">" << p.saved_bytes << "</td><td class=\"n\">"
        << p.saved_activation_bytes << "</td><td class=\"n\">" << p.recomputed.size() << "</td></tr>\n";
    h << "</table>\n";
  }

  // Kernels, longest first, with their share drawn as a bar.
  h << "<h2 id=\"kernels\">Kernels</h2>\n";
  if (!ran) {
    h << "<p>" << r.source.kernels.size() << " kernel(s) generated; not run.</p>\n";
  } else {
    double total = 0;
    for (const KernelReport& k : r.kernels) total += k.ms;
    std::vector<const KernelReport*> ks;
    for (const KernelReport& k : r.kernels) ks.push_back(&k);
    std::stable_sort(ks.begin(), ks.end(), [](auto* a, auto* b) { return a->ms > b->ms; });
    h << "<p>" << r.kernels.size() << " kernel(s), " << num(total * 1000.0, 2) << " µs in all";
    if (r.bandwidth_gbps > 0) h << "; the device copies at " << num(r.bandwidth_gbps, 1) << " GB/s (measured)";
    h << ".</p>\n<table><tr><th>Kernel</th><th>Kind</th><th>Time (µs)</th><th>Share</th><th>Bytes</th><th>GB/s</th>"
      << "<th>% of bandwidth</th><th>Graph nodes</th></tr>\n";
    for (const KernelReport* k : ks) {
      const double share = total > 0 ? k->ms / total : 0;
      std::string nodes;
      for (const auto& n : k->nodes) nodes += (nodes.empty() ? "" : ", ") + n;
      h << "<tr><td>" << esc(k->name) << "</td><td>" << esc(k->how.empty() ? std::string(kernel_kind_name(k->kind)) : k->how) << "</td><td class=\"n\">"
        << num(k->ms * 1000.0, 2) << "</td><td><span class=\"bar" << (k->kind == KernelKind::extern_call ? " ext" : "") << "\" style=\"width:"
        << num(120.0 * share, 1) << "px\"></span> " << num(100.0 * share, 1) << " %</td><td class=\"n\">" << k->bytes
        << "</td><td class=\"n\">" << num(k->gbps, 2) << "</td><td class=\"n\">"
        << (r.bandwidth_gbps > 0 ? num(100.0 * k->gbps / r.bandwidth_gbps, 1) + " %" : "-") << "</td><td>" << esc(nodes)
        << "</td></tr>\n";
    }
    h << "</table>\n";
  }

  // Each stage: its graph (where drawn) and its text.
  for (size_t i = 0; i < r.stages.size(); ++i) {
    const Stage& s = r.stages[i];
    h << "<h2 id=\"" << anchor(s.name) << "\">" << i + 1 << ". " << esc(s.title) << " <small>(" << esc(s.name) << ", "
      << s.nodes << " nodes, " << num(s.ms, 2) << " ms)</small></h2>\n";
    const auto svg = svgs.find(s.name);
    if (svg != svgs.end() && !inline_svg(svg->second).empty())
      h << "<details open><summary>Graph</summary><div class=\"graph\">" << inline_svg(svg->second) << "</div></details>\n";
    h << "<details" << (s.kind == Stage::Kind::assembly ? "" : " open") << "><summary>Text ("
      << std::count(s.text.begin(), s.text.end(), '\n') << " lines)</summary><pre>" << esc(s.text) << "</pre></details>\n";
  }
  h << "</main>\n</body>\n</html>\n";
  return h.str();
}

}  // namespace ls
