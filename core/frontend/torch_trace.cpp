#include "frontend/torch_trace.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include <nlohmann/json.hpp>

#include "ops/op_table.h"

namespace ls {

namespace {

using json = nlohmann::json;

// ---- MD5 (RFC 1321): the envelope's has_payload is the payload's digest, so a truncated or
// altered payload is told from a whole one.
std::string md5_hex(std::string_view data) {
  static const uint32_t K[64] = {
      0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501, 0x698098d8, 0x8b44f7af,
      0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821, 0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa,
      0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8, 0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8,
      0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
      0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665, 0xf4292244, 0x432aff97,
      0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1, 0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1,
      0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391};
  static const int R[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9,  14, 20, 5, 9,
                            14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                            4, 11, 16, 23, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};
  uint32_t h[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
  auto block = [&](const unsigned char* p) {
    uint32_t w[16];
    for (int i = 0; i < 16; ++i)
      w[i] = uint32_t(p[i * 4]) | uint32_t(p[i * 4 + 1]) << 8 | uint32_t(p[i * 4 + 2]) << 16 | uint32_t(p[i * 4 + 3]) << 24;
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
    for (int i = 0; i < 64; ++i) {
      uint32_t f;
      int g;
      if (i < 16) f = (b & c) | (~b & d), g = i;
      else if (i < 32) f = (d & b) | (~d & c), g = (5 * i + 1) % 16;
      else if (i < 48) f = b ^ c ^ d, g = (3 * i + 5) % 16;
      else f = c ^ (b | ~d), g = (7 * i) % 16;
      const uint32_t t = d;
      d = c;
      c = b;
      const uint32_t x = a + f + K[i] + w[g];
      b = b + (x << R[i] | x >> (32 - R[i]));
      a = t;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d;
  };
  const size_t n = data.size();
  size_t i = 0;
  for (; i + 64 <= n; i += 64) block(reinterpret_cast<const unsigned char*>(data.data()) + i);
  unsigned char tail[128] = {};
  const size_t rest = n - i;
  std::memcpy(tail, data.data() + i, rest);
  tail[rest] = 0x80;
  const size_t len = rest + 1 + 8 <= 64 ? 64 : 128;
  const uint64_t bits = uint64_t(n) * 8;
  for (int k = 0; k < 8; ++k) tail[len - 8 + k] = static_cast<unsigned char>(bits >> (8 * k));
  block(tail);
  if (len == 128) block(tail + 64);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (uint32_t v : h)
    for (int k = 0; k < 4; ++k) {
      const unsigned byte = (v >> (8 * k)) & 0xff;
      out += hex[byte >> 4];
      out += hex[byte & 15];
    }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// The glog prefix `V1126 12:34:56.789000 1234 torch/_dynamo/x.py:123] ` (optionally after
// `[rank0]:`); returns where the JSON envelope starts, or nullopt with what is wrong.
std::optional<size_t> glog_prefix(std::string_view l, std::string& why) {
  size_t i = 0;
  if (starts_with(l, "[rank")) {
    const size_t e = l.find("]:");
    if (e == std::string_view::npos || e > 16) return why = "a '[rank' prefix without ']:'", std::nullopt;
    i = e + 2;
  }
  auto digits = [&](size_t n_min, size_t n_max) {
    size_t n = 0;
    while (i < l.size() && n < n_max && std::isdigit(static_cast<unsigned char>(l[i]))) ++i, ++n;
    return n >= n_min;
  };
  auto lit = [&](char c) { return i < l.size() && l[i] == c ? (++i, true) : false; };
  if (i >= l.size() || !std::strchr("VIWEC", l[i]) || l[i] == 0) return why = "no glog prefix (expected e.g. 'V1126 12:34:56.789000 1234 file.py:12] ')", std::nullopt;
  ++i;
  if (!digits(4, 4) || !lit(' ') || !digits(2, 2) || !lit(':') || !digits(2, 2) || !lit(':') || !digits(2, 2) || !lit('.') ||
      !digits(1, 9) || !lit(' '))
    return why = "a malformed glog time stamp", std::nullopt;
  while (lit(' ')) {
  }
  if (!digits(1, 20) || !lit(' ')) return why = "a malformed glog thread id", std::nullopt;
  const size_t close = l.find("] ", i);
  if (close == std::string_view::npos) return why = "a glog prefix without '] '", std::nullopt;
  const size_t colon = l.rfind(':', close);
  if (colon == std::string_view::npos || colon < i || colon + 1 == close) return why = "a glog prefix without 'file:line'", std::nullopt;
  for (size_t k = colon + 1; k < close; ++k)
    if (!std::isdigit(static_cast<unsigned char>(l[k]))) return why = "a glog prefix without 'file:line'", std::nullopt;
  return close + 2;
}

// Deepest nesting of brackets outside strings: a hostile envelope of a million '[' is refused
// before the JSON parser sees it.
int json_depth(std::string_view s) {
  int depth = 0, most = 0;
  bool in_str = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_str) {
      if (c == '\\') ++i;
      else if (c == '"') in_str = false;
    } else if (c == '"') in_str = true;
    else if (c == '[' || c == '{') most = std::max(most, ++depth);
    else if (c == ']' || c == '}') --depth;
  }
  return most;
}

std::string str_of(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

int64_t int_of(const json& j, const char* key, int64_t dflt) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return dflt;
  return it->get<int64_t>();
}

double num_of(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

// "[a, b, c]" at the start of `s` -> {a, b, c}; `s` is advanced past the ']'.
std::vector<std::string> bracket_list(std::string_view& s) {
  std::vector<std::string> out;
  const size_t lb = s.find('['), rb = s.find(']');
  if (lb == std::string_view::npos || rb == std::string_view::npos || rb < lb) return out;
  std::string_view in = s.substr(lb + 1, rb - lb - 1);
  s.remove_prefix(rb + 1);
  while (!in.empty()) {
    const size_t comma = in.find(',');
    const std::string_view item = trim(in.substr(0, comma));
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    in.remove_prefix(comma + 1);
  }
  return out;
}

std::string identifier_at(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && (std::isalnum(static_cast<unsigned char>(s[n])) || s[n] == '_')) ++n;
  return std::string(s.substr(0, n));
}

// Dynamo's placeholder name for a source: "L['self']._modules['0']" -> "L_self_modules_0_"
// (runs of other characters become one '_').
std::string placeholder_name(std::string_view source) {
  std::string out;
  for (char c : source) {
    if (std::isalnum(static_cast<unsigned char>(c))) out += c;
    else if (out.empty() || out.back() != '_') out += '_';
  }
  return out;
}

struct GraphBreakText {
  std::string reason, explanation, detail, file, code;
  int line = 0;
};

// Dynamo's reason text: "Encountered graph break when attempting to trace CALL: ...:\n\nFailed to
// trace builtin operator\n  Explanation: ...\n  Hint: ..." -> {"Failed to trace builtin operator",
// "..."}: the graph-break type (the first line that is no header) and its explanation.
std::pair<std::string, std::string> reason_summary(std::string_view text) {
  std::string title, explanation, header;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view l = trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (l.empty()) continue;
    if (starts_with(l, "Explanation:")) {
      if (explanation.empty()) explanation = std::string(trim(l.substr(12)));
    } else if (starts_with(l, "Hint:") || starts_with(l, "Developer debug context:") || starts_with(l, "For more details")) {
    } else if (header.empty() && title.empty() && l.back() == ':' && starts_with(l, "Encountered graph break")) {
      header = std::string(l);
    } else if (title.empty())
      title = std::string(l);
  }
  if (title.empty()) title = header;
  return {title, explanation};
}

// A dynamo_graph_break_reason artifact: "Graph break in user code at FILE:LINE\nGraph Break
// Reason: ...\nUser code traceback:\n  File "F", line N, in fn\n    code\n..." (or the older
// "Graph break: skip: from user code at:\n  File ..." forms).
GraphBreakText parse_graph_break(const std::string& text) {
  GraphBreakText b;
  std::vector<std::string_view> lines;
  std::string_view rest(text);
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    lines.push_back(rest.substr(0, nl));
    if (nl == std::string_view::npos) break;
    rest.remove_prefix(nl + 1);
  }
  size_t reason_at = lines.size(), traceback_at = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    if (starts_with(lines[i], "Graph Break Reason:") && reason_at == lines.size()) reason_at = i;
    if (starts_with(lines[i], "User code traceback:") && traceback_at == lines.size()) traceback_at = i;
  }
  if (!lines.empty()) {
    const std::string_view first = lines[0];
    const std::string_view at = "Graph break in user code at ";
    if (starts_with(first, at)) {
      const std::string_view loc = first.substr(at.size());
      const size_t colon = loc.rfind(':');
      if (colon != std::string_view::npos) {
        b.file = std::string(loc.substr(0, colon));
        b.line = std::atoi(std::string(loc.substr(colon + 1)).c_str());
      }
    }
  }
  if (reason_at < lines.size()) {
    std::string detail(trim(lines[reason_at].substr(std::strlen("Graph Break Reason:"))));
    for (size_t i = reason_at + 1; i < traceback_at && i < lines.size(); ++i) {
      if (trim(lines[i]).empty()) continue;
      detail += "\n" + std::string(lines[i]);
    }
    b.detail = detail;
    std::tie(b.reason, b.explanation) = reason_summary(detail);
  } else if (!lines.empty()) {
    b.reason = std::string(trim(lines[0]));
    b.detail = text.substr(0, std::min<size_t>(text.size(), 4000));
  }
  // The user's traceback: its last `File "F", line N, in fn` before Python's own traceback is
  // where the break is; the line below it is the source.
  const size_t tb_from = traceback_at < lines.size() ? traceback_at + 1 : 0;
  for (size_t i = tb_from; i < lines.size(); ++i) {
    const std::string_view l = trim(lines[i]);
    if (starts_with(l, "Traceback (most recent call last)")) break;
    if (starts_with(l, "File \"")) {
      const size_t q = l.find('"', 6);
      const size_t ln = l.find(", line ", q == std::string_view::npos ? 0 : q);
      if (q == std::string_view::npos || ln == std::string_view::npos) continue;
      std::string file(l.substr(6, q - 6));
      const int line = std::atoi(std::string(l.substr(ln + 7)).c_str());
      if (file.find("/torch/") != std::string::npos && !b.file.empty()) continue;  // PyTorch's own frames
      if (b.file.empty() || (file == b.file && line == b.line) || traceback_at < lines.size()) {
        b.file = file;
        b.line = line;
        b.code = i + 1 < lines.size() && !starts_with(trim(lines[i + 1]), "File \"") ? std::string(trim(lines[i + 1])) : "";
      }
    }
  }
  if (b.reason.empty()) b.reason = "graph break";
  return b;
}

// ---- integer expressions in sizes ("s0*2", "s77 - 1", "(s0 + 1)//2").
struct SizeExpr {
  std::string_view s;
  size_t i = 0;
  const std::map<std::string, int64_t>& vals;
  bool ok = true;
  void ws() {
    while (i < s.size() && s[i] == ' ') ++i;
  }
  int64_t atom() {
    ws();
    if (i < s.size() && s[i] == '(') {
      ++i;
      const int64_t v = sum();
      ws();
      if (i < s.size() && s[i] == ')') ++i;
      else ok = false;
      return v;
    }
    if (i < s.size() && s[i] == '-') return ++i, -atom();
    if (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      int64_t v = 0;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && v < (int64_t(1) << 40)) v = v * 10 + (s[i++] - '0');
      return v;
    }
    const std::string id = identifier_at(s.substr(i));
    if (id.empty()) return ok = false, 0;
    i += id.size();
    const auto it = vals.find(id);
    if (it == vals.end()) return ok = false, 0;
    return it->second;
  }
  int64_t product() {
    int64_t v = atom();
    for (;;) {
      ws();
      if (s.substr(i, 2) == "//") {
        i += 2;
        const int64_t d = atom();
        v = d ? v / d : (ok = false, 0);
      } else if (i < s.size() && s[i] == '*') {
        ++i;
        v *= atom();
      } else if (i < s.size() && s[i] == '%') {
        ++i;
        const int64_t d = atom();
        v = d ? v % d : (ok = false, 0);
      } else
        return v;
      if (v > (int64_t(1) << 40) || v < -(int64_t(1) << 40)) ok = false, v = 0;
    }
  }
  int64_t sum() {
    int64_t v = product();
    for (;;) {
      ws();
      if (i < s.size() && s[i] == '+') ++i, v += product();
      else if (i < s.size() && s[i] == '-') ++i, v -= product();
      else return v;
    }
  }
};

bool is_symbol(std::string_view id) {
  return id.size() >= 2 && (id[0] == 's' || id[0] == 'u') &&
         std::all_of(id.begin() + 1, id.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// "f32[s0, 3][3, 1]cuda:0" -> dtype "f32", dims {"s0", "3"}; false when it is no tensor annotation.
bool split_annotation(std::string_view a, std::string& dtype, std::vector<std::string>& dims) {
  const size_t lb = a.find('[');
  if (lb == std::string_view::npos || lb == 0 || lb > 8) return false;
  for (size_t k = 0; k < lb; ++k)
    if (!std::isalnum(static_cast<unsigned char>(a[k]))) return false;
  const size_t rb = a.find(']', lb);
  if (rb == std::string_view::npos) return false;
  dtype = std::string(a.substr(0, lb));
  std::string_view rest = a.substr(lb);
  dims = bracket_list(rest);
  return true;
}

// The Trace reader's state while it walks the log.
struct Reader {
  TorchTrace t;
  const TraceLimits& limits;
  std::string source;
  std::map<int64_t, std::string> interned;  // "str" records: id -> file name
  std::map<std::tuple<int, int, int>, size_t> index;  // (compiled autograd, frame, frame compile) -> compiles[i]
  std::map<std::string, std::map<std::string, double>> phase_by_compile;
  std::map<std::string, double> phase_total;
  std::map<std::string, std::vector<double>> open_events;  // chromium "B" times by name (and compile)
  // describe_tensor / describe_source, by compile: (describer, tensor id) -> sizes.
  std::map<std::tuple<size_t, int64_t, int64_t>, std::vector<int64_t>> described;
  size_t dropped_warnings = 0;

  Reader(const TraceLimits& l, std::string src) : limits(l), source(std::move(src)) {}

  void warn(int line, std::string what) {
    if (t.warnings.size() < limits.max_warnings) t.warnings.push_back({line, std::move(what)});
    else ++dropped_warnings;
  }

  TraceCompile* compile_of(const json& env) {
    const auto f = env.find("frame_id");
    if (f == env.end() || !f->is_number_integer() || f->get<int64_t>() < -1) return nullptr;
    const int frame = static_cast<int>(std::clamp<int64_t>(f->get<int64_t>(), -1, 1 << 30));
    const int fc = static_cast<int>(std::clamp<int64_t>(int_of(env, "frame_compile_id", 0), -1, 1 << 30));
    const int ca = static_cast<int>(std::clamp<int64_t>(int_of(env, "compiled_autograd_id", -1), -1, 1 << 30));
    const int attempt = static_cast<int>(std::clamp<int64_t>(int_of(env, "attempt", 0), 0, 1 << 30));
    const auto key = std::make_tuple(ca, frame, fc);
    auto it = index.find(key);
    if (it == index.end()) {
      TraceCompile c;
      c.frame_id = frame, c.frame_compile_id = fc, c.compiled_autograd_id = ca;
      it = index.emplace(key, t.compiles.size()).first;
      t.compiles.push_back(std::move(c));
    }
    TraceCompile& c = t.compiles[it->second];
    c.attempt = std::max(c.attempt, attempt);
    return &c;
  }

  std::vector<TraceStackFrame> stack_of(const json& j) {
    std::vector<TraceStackFrame> out;
    if (!j.is_array()) return out;
    for (const json& f : j) {
      if (!f.is_object()) continue;
      TraceStackFrame s;
      const auto fn = f.find("filename");
      if (fn != f.end() && fn->is_number_integer()) {
        const auto it = interned.find(fn->get<int64_t>());
        s.file = it != interned.end() ? it->second : "(unknown file " + fn->dump() + ")";
      } else if (fn != f.end() && fn->is_string()) s.file = fn->get<std::string>();
      if (const std::string u = str_of(f, "uninterned_filename"); !u.empty()) s.file = u;
      s.line = static_cast<int>(std::clamp<int64_t>(int_of(f, "line", 0), 0, 1 << 30));
      s.name = str_of(f, "name");
      s.code = str_of(f, "loc");
      out.push_back(std::move(s));
    }
    return out;
  }

  void chromium(const std::string& payload, int line) {
    if (json_depth(payload) > 64) return warn(line, "a chromium event nested too deeply; skipped");
    const json ev = json::parse(payload, nullptr, false);
    if (ev.is_discarded() || !ev.is_object()) return warn(line, "a chromium event whose payload is not a JSON object; skipped");
    const std::string name = str_of(ev, "name"), ph = str_of(ev, "ph");
    std::string cid;
    if (const auto a = ev.find("args"); a != ev.end() && a->is_object()) cid = str_of(*a, "compile_id");
    if (!cid.empty() && cid.front() == '[' && cid.back() == ']') cid = cid.substr(1, cid.size() - 2);
    if (cid == "None") cid.clear();
    if (const size_t u = cid.find('_'); u != std::string::npos) cid.resize(u);  // "0/0_1": a restart of 0/0
    const double ts = num_of(ev, "ts");  // microseconds
    auto add = [&](double us) {
      if (!(us >= 0) || us > 1e13) return;
      phase_total[name] += us / 1000.0;
      if (!cid.empty()) phase_by_compile[cid][name] += us / 1000.0;
    };
    if (ph == "B") open_events[name + "\x1f" + cid].push_back(ts);
    else if (ph == "E") {
      auto& open = open_events[name + "\x1f" + cid];
      if (open.empty()) return;
      add(ts - open.back());
      open.pop_back();
    } else if (ph == "X") add(num_of(ev, "dur"));
  }

  void record(const json& env, const std::string& payload, bool has_payload, int line) {
    ++t.records;
    for (const auto& [k, v] : env.items())
      if (v.is_object() || k == "str") ++t.record_kinds[k];
    if (const auto s = env.find("str"); s != env.end()) {
      if (s->is_array() && s->size() == 2 && (*s)[0].is_string() && (*s)[1].is_number_integer())
        interned[(*s)[1].get<int64_t>()] = (*s)[0].get<std::string>();
      else warn(line, "a 'str' record that is not [name, id]; skipped");
      return;
    }
    if (env.contains("chromium_event")) {
      if (has_payload) chromium(payload, line);
      return;
    }
    TraceCompile* c = compile_of(env);
    // A graph logged outside any compile id (torch.export, AOTInductor) goes to compile "-/-", as
    // tlparse files it under an unknown compile id.
    auto need_compile = [&](const char*) {
      if (!c) c = compile_of(json{{"frame_id", -1}, {"frame_compile_id", -1}});
      return c != nullptr;
    };
    if (const auto d = env.find("dynamo_start"); d != env.end() && d->is_object()) {
      if (!need_compile("dynamo_start")) return;
      if (c->stack.empty()) {
        c->stack = stack_of(d->value("stack", json()));
        // Dynamo's own frames at the end (convert_frame.py's __call__, catch_errors) are not the user's.
        while (!c->stack.empty() && c->stack.back().file.find("torch/_dynamo/convert_frame.py") != std::string::npos) c->stack.pop_back();
      }
      return;
    }
    if (env.contains("dynamo_output_graph")) {
      if (!need_compile("dynamo_output_graph")) return;
      c->dynamo_graph = payload;
      c->dynamo_graph_line = line;
      return;
    }
    if (env.contains("dynamo_cpp_guards_str")) {
      if (need_compile("dynamo_cpp_guards_str")) c->guards = payload;
      return;
    }
    for (const char* k : {"aot_inference_graph", "aot_joint_graph", "aot_forward_graph", "aot_backward_graph"})
      if (env.contains(k)) {
        if (need_compile(k)) c->aot_graphs[k] = payload;
        return;
      }
    for (const char* k : {"inductor_pre_grad_graph", "inductor_post_grad_graph"})
      if (env.contains(k)) {
        if (need_compile(k)) c->inductor_graphs[k] = payload;
        return;
      }
    if (const auto o = env.find("inductor_output_code"); o != env.end()) {
      if (!need_compile("inductor_output_code")) return;
      TraceOutputCode code;
      if (o->is_object()) code.filename = str_of(*o, "filename");
      code.code = payload;
      code.log_line = line;
      const std::string_view first(payload.data(), std::min<size_t>(payload.find('\n'), payload.size()));
      if (const size_t a = first.find("AOT ID: ['"); a != std::string_view::npos) {
        const size_t e = first.find('\'', a + 10);
        if (e != std::string_view::npos) code.aot_id = std::string(first.substr(a + 10, e - a - 10));
      }
      code.kernels = parse_inductor_kernels(payload);
      c->output_code.push_back(std::move(code));
      return;
    }
    if (const auto m = env.find("compilation_metrics"); m != env.end() && m->is_object()) {
      if (!need_compile("compilation_metrics")) return;
      if (const std::string n = str_of(*m, "co_name"); !n.empty()) c->name = n;
      if (const std::string f = str_of(*m, "co_filename"); !f.empty()) c->file = f;
      c->first_line = static_cast<int>(std::clamp<int64_t>(int_of(*m, "co_firstlineno", 0), 0, 1 << 30));
      c->graph_op_count = static_cast<int>(std::clamp<int64_t>(int_of(*m, "graph_op_count", c->graph_op_count), -1, 1 << 30));
      c->compile_time_s = num_of(*m, "entire_frame_compile_time_s");
      if (const auto r = m->find("restart_reasons"); r != m->end() && r->is_array())
        for (const json& x : *r)
          if (x.is_string()) c->restart_reasons.push_back(x.get<std::string>());
      c->fail_type = str_of(*m, "fail_type");
      c->fail_reason = str_of(*m, "fail_reason");
      const std::string ff = str_of(*m, "fail_user_frame_filename");
      if (!ff.empty()) c->fail_user_frame = ff + ":" + std::to_string(int_of(*m, "fail_user_frame_lineno", 0));
      if (const std::string rr = str_of(*m, "recompile_reason"); !rr.empty() && c->recompile_reasons.empty())
        c->recompile_reasons.push_back(rr);
      return;
    }
    if (const auto a = env.find("artifact"); a != env.end() && a->is_object()) {
      const std::string name = str_of(*a, "name");
      if (!c) return;  // artifacts outside a compile (cache statistics): nothing to show per graph
      c->artifacts.push_back(name);
      if (name == "inductor_pre_grad_graph" || name == "inductor_post_grad_graph") {  // an artifact since 2.5 or so
        c->inductor_graphs[name] = payload;
      } else if (name == "recompile_reasons") {
        const json r = json_depth(payload) > 64 ? json() : json::parse(payload, nullptr, false);
        std::vector<std::string> reasons;
        if (r.is_array()) {
          for (const json& x : r)
            if (x.is_string()) reasons.push_back(x.get<std::string>());
        } else if (r.is_string()) reasons.push_back(r.get<std::string>());
        else if (!trim(payload).empty()) reasons.push_back(std::string(trim(payload)));
        c->recompile_reasons = reasons;
      } else if (name.find("graph_break") != std::string::npos) {
        const GraphBreakText b = parse_graph_break(payload);
        const std::string first = b.reason.substr(0, b.reason.find('\n'));
        auto same = [&](const TraceGraphBreak& g) { return g.file == b.file && g.line == b.line && g.reason == first; };
        auto it = std::find_if(t.graph_breaks.begin(), t.graph_breaks.end(), same);
        if (it == t.graph_breaks.end()) {
          t.graph_breaks.push_back({first, b.explanation, b.detail, b.file, b.line, b.code, {}, 0});
          it = t.graph_breaks.end() - 1;
        }
        ++it->count;
        if (std::find(it->compiles.begin(), it->compiles.end(), c->id()) == it->compiles.end()) it->compiles.push_back(c->id());
      }
      return;
    }
    if (const auto d = env.find("describe_tensor"); d != env.end() && d->is_object() && c) {
      std::vector<int64_t> sizes;
      if (const auto s = d->find("size"); s != d->end() && s->is_array())
        for (const json& x : *s) sizes.push_back(x.is_number_integer() ? x.get<int64_t>() : -1);
      described[{static_cast<size_t>(c - t.compiles.data()), int_of(*d, "describer_id", 0), int_of(*d, "id", -1)}] = sizes;
      return;
    }
    if (const auto d = env.find("describe_source"); d != env.end() && d->is_object() && c) {
      const auto it = described.find({static_cast<size_t>(c - t.compiles.data()), int_of(*d, "describer_id", 0), int_of(*d, "id", -1)});
      if (it != described.end()) c->input_sizes[placeholder_name(str_of(*d, "source"))] = it->second;
      return;
    }
  }

  void finish() {
    // Frames, with the stack of their first compile.
    std::map<int, size_t> frame_at;
    for (TraceCompile& c : t.compiles) {
      if (c.name.empty() && !c.stack.empty()) c.name = c.stack.back().name;
      if (!frame_at.count(c.frame_id)) {
        frame_at[c.frame_id] = t.frames.size();
        t.frames.push_back({c.frame_id, c.name, c.stack, {}});
      }
      TraceFrame* f = &t.frames[frame_at[c.frame_id]];
      if (f->name.empty()) f->name = c.name;
      if (f->stack.empty()) f->stack = c.stack;
      f->compiles.push_back(c.id());
      if (const auto p = phase_by_compile.find(c.id()); p != phase_by_compile.end()) c.phase_ms = p->second;
      if (!c.recompile_reasons.empty()) t.recompiles.push_back({c.id(), c.name, c.recompile_reasons});
      if (!c.fail_type.empty()) {
        const auto [summary, explanation] = reason_summary(c.fail_reason);
        t.failures.push_back({c.id(), c.name, c.fail_type, c.fail_reason, summary, explanation, c.fail_user_frame});
      }
      // A restart that logged no graph-break artifact (older logs): the reason without a source line.
      for (const std::string& r : c.restart_reasons) {
        const bool logged = std::any_of(t.graph_breaks.begin(), t.graph_breaks.end(), [&](const TraceGraphBreak& g) {
          return std::find(g.compiles.begin(), g.compiles.end(), c.id()) != g.compiles.end();
        });
        if (logged) break;
        auto it = std::find_if(t.graph_breaks.begin(), t.graph_breaks.end(), [&](const TraceGraphBreak& g) { return g.reason == r && g.file.empty(); });
        if (it == t.graph_breaks.end()) t.graph_breaks.push_back({r, "", r, "", 0, "", {}, 0}), it = t.graph_breaks.end() - 1;
        ++it->count;
        it->compiles.push_back(c.id());
      }
    }
    std::sort(t.frames.begin(), t.frames.end(), [](const TraceFrame& a, const TraceFrame& b) { return a.frame_id < b.frame_id; });
    t.phases.assign(phase_total.begin(), phase_total.end());
    std::stable_sort(t.phases.begin(), t.phases.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    if (dropped_warnings) t.warnings.push_back({0, std::to_string(dropped_warnings) + " more problem(s) not listed"});
  }
};

}  // namespace

int TraceOutputCode::generated_kernels() const {
  return static_cast<int>(std::count_if(kernels.begin(), kernels.end(), [](const TraceKernel& k) { return k.kind != "extern"; }));
}

std::string TraceCompile::id() const {
  std::string s;
  if (compiled_autograd_id >= 0) s += "!" + std::to_string(compiled_autograd_id) + "/";
  s += (frame_id >= 0 ? std::to_string(frame_id) : "-") + "/" + (frame_compile_id >= 0 ? std::to_string(frame_compile_id) : "-");
  return s;
}

std::vector<std::string> TraceCompile::stages() const {
  std::vector<std::string> out;
  if (!dynamo_graph.empty()) out.push_back("dynamo");
  for (const char* k : {"aot_inference_graph", "aot_joint_graph", "aot_forward_graph", "aot_backward_graph"})
    if (aot_graphs.count(k)) out.push_back(std::string(k).substr(0, std::strlen(k) - 6));
  for (const char* k : {"inductor_pre_grad_graph", "inductor_post_grad_graph"})
    if (inductor_graphs.count(k)) out.push_back(std::string(k).substr(0, std::strlen(k) - 6));
  if (!output_code.empty()) out.push_back("inductor_output_code");
  return out;
}

int TraceCompile::inductor_kernels() const {
  int n = 0;
  for (const TraceOutputCode& c : output_code) n += c.generated_kernels();
  return n;
}

const TraceCompile* TorchTrace::compile(std::string_view id) const {
  if (id.size() >= 2 && id.front() == '[' && id.back() == ']') id = id.substr(1, id.size() - 2);
  for (const TraceCompile& c : compiles)
    if (c.id() == id) return &c;
  return nullptr;
}

std::vector<TraceKernel> parse_inductor_kernels(std::string_view code) {
  std::vector<TraceKernel> out;
  TraceKernel pending;  // the comment block read since the last kernel
  bool have_pending = false, in_call = false, in_mapping = false;
  int lineno = 0;
  std::string_view rest = code;
  std::vector<std::string> generated;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    const std::string_view raw = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    ++lineno;
    const std::string_view l = trim(raw);
    if (starts_with(l, "#")) {
      std::string_view c = trim(l.substr(1));
      const std::string_view sorted = "Topologically Sorted Source Nodes:", plain = "Source Nodes:";
      if (starts_with(c, sorted) || starts_with(c, plain)) {
        pending = TraceKernel{};
        have_pending = true;
        in_mapping = false;
        c.remove_prefix(starts_with(c, sorted) ? sorted.size() : plain.size());
        pending.source_nodes = bracket_list(c);
        if (const size_t a = c.find("Original ATen:"); a != std::string_view::npos) {
          c.remove_prefix(a);
          pending.aten_ops = bracket_list(c);
        }
      } else if (starts_with(c, "Source node to ATen node mapping:")) {
        in_mapping = have_pending;
      } else if (in_mapping && c.find(" => ") != std::string_view::npos) {
        const size_t arrow = c.find(" => ");
        std::string_view targets = c.substr(arrow + 4);
        std::vector<std::string>& v = pending.node_to_aten[std::string(trim(c.substr(0, arrow)))];
        while (!targets.empty()) {
          const size_t comma = targets.find(',');
          if (const std::string_view x = trim(targets.substr(0, comma)); !x.empty()) v.emplace_back(x);
          if (comma == std::string_view::npos) break;
          targets.remove_prefix(comma + 1);
        }
      } else in_mapping = false;
      continue;
    }
    in_mapping = false;
    if (l.empty()) continue;
    if (starts_with(l, "def call(") || starts_with(l, "def call(args")) in_call = true;
    // `name = async_compile.KIND('name', '''` (or KIND([...], '''): a generated kernel, its
    // source in the string that follows.
    const size_t ac = l.find(" = async_compile.");
    if (ac != std::string_view::npos && !in_call) {
      TraceKernel k = have_pending ? pending : TraceKernel{};
      k.name = std::string(trim(l.substr(0, ac)));
      const std::string kind = identifier_at(l.substr(ac + 17));
      k.kind = kind == "cpp_pybinding" || kind == "cpp" ? "cpp" : kind;
      k.line = lineno;
      if (!k.name.empty() && identifier_at(k.name) == k.name && !kind.empty()) {
        generated.push_back(k.name);
        out.push_back(std::move(k));
      }
      have_pending = false;
      // Skip the kernel's source: from this line's ''' to the closing one.
      const size_t q = l.find("'''");
      if (q != std::string_view::npos && l.find("'''", q + 3) == std::string_view::npos) {
        while (!rest.empty()) {
          const size_t n2 = rest.find('\n');
          const std::string_view body = rest.substr(0, n2);
          rest = n2 == std::string_view::npos ? std::string_view() : rest.substr(n2 + 1);
          ++lineno;
          if (body.find("'''") != std::string_view::npos) break;
        }
      }
      continue;
    }
    if (!in_call) continue;
    // In call(): a library call takes the comment above it; a generated kernel's launch uses it up.
    std::string_view stmt = l;
    if (const size_t eq = stmt.find(" = "); eq != std::string_view::npos && identifier_at(stmt) == trim(stmt.substr(0, eq)))
      stmt = trim(stmt.substr(eq + 3));
    const std::string head = identifier_at(stmt);
    if (std::find(generated.begin(), generated.end(), head) != generated.end()) {
      // C++ kernels carry their comment here, at the call, not above their definition.
      for (TraceKernel& k : out)
        if (k.name == head && k.source_nodes.empty() && have_pending) {
          k.source_nodes = pending.source_nodes;
          k.aten_ops = pending.aten_ops;
          k.node_to_aten = pending.node_to_aten;
        }
      have_pending = false;
      continue;
    }
    for (std::string_view lib : {std::string_view("extern_kernels."), std::string_view("torch.ops.")}) {
      if (!starts_with(stmt, lib)) continue;
      const size_t paren = stmt.find('(');
      if (paren == std::string_view::npos) break;
      TraceKernel k = have_pending ? pending : TraceKernel{};
      k.name = std::string(stmt.substr(0, paren));
      k.kind = "extern";
      k.line = lineno;
      out.push_back(std::move(k));
      have_pending = false;
      break;
    }
  }
  return out;
}

std::string concrete_graph_text(const std::string& text, const std::map<std::string, std::vector<int64_t>>& input_sizes,
                                int64_t fallback) {
  // Bind the symbols: a placeholder annotated "f32[s0, 3]..." whose real sizes are known gives s0.
  std::map<std::string, int64_t> vals;
  std::vector<std::string> lines;
  {
    std::istringstream in(text);
    std::string l;
    while (std::getline(in, l)) lines.push_back(l);
  }
  auto each_annotation = [](const std::string& line, const auto& fn) {
    // `name: "annotation"` pairs on a line.
    size_t p = 0;
    while ((p = line.find(": \"", p)) != std::string::npos) {
      size_t b = p;
      while (b > 0 && (std::isalnum(static_cast<unsigned char>(line[b - 1])) || line[b - 1] == '_')) --b;
      const size_t q = line.find('"', p + 3);
      if (q == std::string::npos) return;
      fn(line.substr(b, p - b), p + 3, q);
      p = q + 1;
    }
  };
  for (const std::string& line : lines) {
    if (trim(line).substr(0, 4) != "def ") continue;
    each_annotation(line, [&](const std::string& name, size_t a, size_t b) {
      std::string dtype;
      std::vector<std::string> dims;
      const auto it = input_sizes.find(name);
      if (it == input_sizes.end() || !split_annotation(std::string_view(line).substr(a, b - a), dtype, dims)) return;
      if (dims.size() != it->second.size()) return;
      for (size_t k = 0; k < dims.size(); ++k)
        if (is_symbol(dims[k]) && it->second[k] >= 0) vals.emplace(dims[k], it->second[k]);
    });
    // `s77: "Sym(s17)"`: the parameter's name stands for the expression's value in the body.
    each_annotation(line, [&](const std::string& name, size_t a, size_t b) {
      const std::string_view ann = std::string_view(line).substr(a, b - a);
      if (!starts_with(ann, "Sym(") || ann.size() < 5 || !is_symbol(name)) return;
      const std::string_view expr = ann.substr(4, ann.size() - 5);
      SizeExpr e{expr, 0, vals};
      const int64_t v = e.sum();
      if (e.ok && e.i >= expr.size()) vals.emplace(name, v);
    });
    break;
  }
  auto value_of = [&](const std::string& sym) {
    const auto it = vals.find(sym);
    return it != vals.end() ? it->second : vals.emplace(sym, fallback).first->second;
  };
  auto concrete_dim = [&](const std::string& d) -> std::string {
    bool symbolic = false;
    for (size_t k = 0; k < d.size(); ++k)
      if (std::isalpha(static_cast<unsigned char>(d[k])) && (k == 0 || !std::isalnum(static_cast<unsigned char>(d[k - 1])))) {
        const std::string id = identifier_at(std::string_view(d).substr(k));
        if (is_symbol(id)) value_of(id), symbolic = true;
      }
    if (!symbolic) return d;
    SizeExpr e{d, 0, vals};
    const int64_t v = e.sum();
    return e.ok && e.i >= d.size() ? std::to_string(v) : d;
  };
  std::string out;
  for (std::string line : lines) {
    const bool is_def = trim(line).substr(0, 4) == "def ";
    std::string rebuilt;
    size_t last = 0;
    // Annotations: strides and device dropped, symbols made concrete; `s0: "Sym(s0)"`
    // parameters dropped from the signature, and other Sym-annotated nodes given their value.
    std::vector<std::tuple<size_t, size_t, std::string>> edits;  // [from, to) -> replacement
    each_annotation(line, [&](const std::string& name, size_t a, size_t b) {
      const std::string_view ann = std::string_view(line).substr(a, b - a);
      if (starts_with(ann, "Sym(")) {
        const size_t from = a - 3 - name.size();
        if (is_def) {
          size_t to = b + 1;
          if (line.compare(to, 2, ", ") == 0) to += 2;
          else if (from >= 2 && line.compare(from - 2, 2, ", ") == 0) return edits.emplace_back(from - 2, b + 1, ""), void();
          edits.emplace_back(from, to, "");
        }
        return;
      }
      std::string dtype;
      std::vector<std::string> dims;
      if (!split_annotation(ann, dtype, dims)) return;
      std::string r = dtype + "[";
      for (size_t k = 0; k < dims.size(); ++k) r += (k ? ", " : "") + concrete_dim(dims[k]);
      edits.emplace_back(a, b, r + "]");
    });
    for (const auto& [from, to, r] : edits) {
      rebuilt += line.substr(last, from - last) + r;
      last = to;
    }
    rebuilt += line.substr(last);
    // Symbols used as values outside strings and comments (`view(x, [s0, 3])`, `s0: "Sym(s0)" = ...`
    // is kept as a node whose value the importer reads).
    std::string code;
    bool in_str = false;
    char quote = 0;
    for (size_t k = 0; k < rebuilt.size();) {
      const char c = rebuilt[k];
      if (in_str) {
        code += c;
        if (c == '\\' && k + 1 < rebuilt.size()) code += rebuilt[++k];
        else if (c == quote) in_str = false;
        ++k;
      } else if (c == '"' || c == '\'') {
        in_str = true, quote = c, code += c, ++k;
      } else if (c == '#') {
        code += rebuilt.substr(k);
        break;
      } else if ((std::isalpha(static_cast<unsigned char>(c)) || c == '_') &&
                 (k == 0 || !(std::isalnum(static_cast<unsigned char>(rebuilt[k - 1])) || rebuilt[k - 1] == '_' || rebuilt[k - 1] == '.'))) {
        const std::string id = identifier_at(std::string_view(rebuilt).substr(k));
        code += is_symbol(id) && vals.count(id) ? std::to_string(vals[id]) : id;
        k += id.size();
      } else
        code += c, ++k;
    }
    out += code + "\n";
  }
  return out;
}

TorchTrace parse_torch_trace(std::string_view text, const std::string& source, const TraceLimits& limits) {
  Reader r(limits, source);
  r.t.path = source;
  int lineno = 0;
  int bad_lines = 0;
  std::string first_problem;
  size_t reported = 0;
  auto next_line = [&](std::string_view& rest) {
    if (limits.progress && text.size() - rest.size() >= reported + (size_t(1) << 20)) {
      reported = text.size() - rest.size();
      if (!limits.progress(reported, text.size())) throw std::runtime_error(source + ": cancelled");
    }
    const size_t nl = rest.find('\n');
    std::string_view l = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    ++lineno;
    return l;
  };
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::string_view l = next_line(rest);
    if (l.empty()) continue;
    const int line = lineno;
    auto problem = [&](const std::string& what) {
      ++bad_lines;
      if (first_problem.empty()) first_problem = source + ":" + std::to_string(line) + ": " + what;
      r.warn(line, what + "; skipped");
    };
    if (l.front() == '\t') {
      int n = 1;
      while (!rest.empty() && rest.front() == '\t') next_line(rest), ++n;
      problem("a payload line (" + std::to_string(n) + " line(s)) that follows no record with has_payload");
      continue;
    }
    std::string why;
    const auto at = glog_prefix(l, why);
    if (!at) {
      problem(why);
      continue;
    }
    const std::string_view body = l.substr(*at);
    if (json_depth(body) > 64) {
      problem("a JSON envelope nested deeper than 64 levels");
      continue;
    }
    json env = json::parse(body, nullptr, false);
    if (env.is_discarded() || !env.is_object()) {
      problem(env.is_discarded() ? "the JSON envelope does not parse" : "the JSON envelope is not an object");
      continue;
    }
    std::string payload;
    const bool has_payload = env.contains("has_payload");
    if (has_payload) {
      size_t bytes = 0;
      bool too_large = false;
      int payload_lines = 0;
      for (;;) {
        // Blank lines are never part of a log (a blank payload line is a lone tab); some log
        // collectors add them, so they are skipped, as tlparse does.
        while (!rest.empty() && (rest.front() == '\n' || starts_with(rest, "\r\n"))) next_line(rest);
        if (rest.empty() || rest.front() != '\t') break;
        std::string_view p = next_line(rest);
        ++payload_lines;
        bytes += p.size();
        if (bytes > limits.max_payload_bytes) too_large = true;
        if (too_large) continue;
        if (payload_lines > 1) payload += '\n';
        payload.append(p.substr(1));
      }
      if (too_large) {
        r.warn(line, "a payload of " + std::to_string(bytes) + " bytes (over the limit of " + std::to_string(limits.max_payload_bytes) +
                         "); its record kept without it");
        payload.clear();
      } else if (const std::string want = str_of(env, "has_payload"); want.size() == 32 && md5_hex(payload) != want) {
        std::string kind = "record";
        for (const auto& [k, v] : env.items())
          if (v.is_object()) {
            kind = k;
            break;
          }
        r.warn(line, "the payload of this '" + kind + "' record (" + std::to_string(payload_lines) +
                         " line(s)) does not match its md5: truncated or altered; kept as it is");
      }
    }
    try {
      r.record(env, payload, has_payload, line);
    } catch (const std::exception& e) {  // a field of an unexpected type
      problem(std::string("a record whose fields could not be read (") + e.what() + ")");
    }
  }
  r.t.lines = lineno;
  if (limits.progress) limits.progress(text.size(), text.size());
  if (r.t.records == 0)
    throw std::runtime_error(first_problem.empty() ? source + ": empty: no TORCH_TRACE record in it"
                                                   : first_problem + " (no TORCH_TRACE record could be read)");
  r.finish();
  return std::move(r.t);
}

TorchTrace read_torch_trace(const std::string& path, const TraceLimits& limits) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string file = path;
  std::string others;
  if (fs::is_directory(path, ec)) {
    std::vector<std::string> logs;
    for (const auto& e : fs::directory_iterator(path, ec))
      if (e.is_regular_file(ec) && e.path().extension() == ".log") logs.push_back(e.path().string());
    std::sort(logs.begin(), logs.end());
    if (logs.empty()) throw std::runtime_error(path + ": no TORCH_TRACE log (*.log) in this folder");
    file = logs.front();
    for (const std::string& l : logs)
      if (fs::path(l).filename().string().find("rank_0") != std::string::npos) file = l;
    for (const std::string& l : logs)
      if (l != file) others += (others.empty() ? "" : ", ") + fs::path(l).filename().string();
  }
  if (!fs::exists(file, ec)) throw std::runtime_error(file + ": no such file or folder");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error(file + ": cannot read the trace");
  std::string text;
  in.seekg(0, std::ios::end);
  const std::streamoff n = in.tellg();
  if (n < 0) throw std::runtime_error(file + ": cannot read the trace");
  text.resize(static_cast<size_t>(n));
  in.seekg(0);
  in.read(text.data(), n);
  TorchTrace t = parse_torch_trace(text, file, limits);
  if (!others.empty()) t.warnings.insert(t.warnings.begin(), {0, "the folder holds other logs too, not read: " + others});
  return t;
}

namespace {

// The arguments whose values an op's output holds, and nothing else: views, copies, casts (to an
// integer type: checked where used), repeats, reads by index (of the first argument, a tensor, or
// a list of tensors for cat and stack); the scatters, where and masked_fill of their tensors.
std::vector<size_t> value_sources(const OpDef& op) {
  static const std::set<std::string_view> first = {
      "view", "_unsafe_view", "reshape", "expand", "expand_as", "slice", "select", "narrow", "unsqueeze", "squeeze", "permute",
      "transpose", "t", "flatten", "unflatten", "alias", "clone", "contiguous", "_to_copy", "to", "convert_element_type", "repeat",
      "cat", "stack", "split", "split_with_sizes", "chunk", "unbind", "lift_fresh_copy", "detach", "movedim", "view_as", "reshape_as",
      "swapaxes", "swapdims", "roll", "flip", "tile", "index", "gather", "index_select", "masked_fill"};
  const std::string_view n = op.base_name();
  if (op.kind == OpKind::getitem || first.count(n)) return {0};
  if (n == "slice_scatter" || n == "select_scatter" || n == "copy") return {0, 1};
  if (n == "index_put" || n == "masked_scatter") return {0, 2};
  if (n == "where") return {1, 2};
  if (n == "scatter") return {0, 3};
  return {};
}

int64_t dim_size(const Graph& g, const Arg& tensor, const Arg& dim) {
  if (!tensor.is_node() || dim.kind != Arg::Kind::integer) return -1;
  const Shape& s = g.nodes[static_cast<size_t>(tensor.node)].meta().shape;
  const int64_t r = static_cast<int64_t>(s.size());
  if (r == 0) return 1;  // a 0-d tensor indexed along dim 0 or -1: one element
  const int64_t d = dim.i < 0 ? dim.i + r : dim.i;
  return d < 0 || d >= r ? -1 : s[static_cast<size_t>(d)];
}

}  // namespace

std::map<int, int64_t> index_input_bounds(const Graph& g) {
  std::map<int, int64_t> bound;  // by node: the smallest size its values index
  auto limit = [&](const Arg& a, int64_t n) {
    if (!a.is_node() || n < 0) return;
    const int id = a.node;
    auto it = bound.find(id);
    if (it == bound.end()) bound[id] = n;
    else it->second = std::min(it->second, n);
  };
  // Users come after the values they use: from the last node back, a node's bound is known
  // before its arguments get it.
  for (size_t k = g.nodes.size(); k-- > 0;) {
    const Node& n = g.nodes[k];
    if (!n.op) continue;
    const std::string_view op = n.op->base_name();
    const std::vector<Arg>& a = n.args;
    auto shape0 = [&](size_t i) -> const Shape* {
      return i < a.size() && a[i].is_node() ? &g.nodes[static_cast<size_t>(a[i].node)].meta().shape : nullptr;
    };
    if (op == "embedding" && a.size() >= 2) {
      if (const Shape* w = shape0(0); w && !w->empty()) limit(a[1], (*w)[0]);
    } else if ((op == "index" || op == "index_put" || op == "_unsafe_index" || op == "_unsafe_index_put") && a.size() >= 2 &&
               a[1].kind == Arg::Kind::list) {
      if (const Shape* x = shape0(0))
        for (size_t d = 0; d < a[1].list.size() && d < x->size(); ++d) limit(a[1].list[d], (*x)[d]);
    } else if ((op == "gather" || op == "index_select" || op == "scatter" || op == "scatter_add" || op == "scatter_reduce" ||
                op == "index_add" || op == "index_copy" || op == "index_fill") && a.size() >= 3) {
      limit(a[2], dim_size(g, a[0], a[1]));
    } else if ((op == "nll_loss" || op == "nll_loss_forward" || op == "nll_loss2d" || op == "nll_loss2d_forward" || op == "cross_entropy_loss" ||
                op == "nll_loss_nd") && a.size() >= 2) {
      const Shape* x = shape0(0);
      if (x && !x->empty() && a[1].is_node() && !dtype_is_float(g.nodes[static_cast<size_t>(a[1].node)].meta().dtype))
        limit(a[1], x->size() == 1 ? (*x)[0] : (*x)[1]);
    } else if (op == "one_hot" && a.size() >= 2 && a[1].kind == Arg::Kind::integer && a[1].i > 0) {
      limit(a[0], a[1].i);
    }
    // What this node's values must respect, its sources' values must too.
    const auto mine = bound.find(static_cast<int>(k));
    if (mine == bound.end()) continue;
    for (size_t i : value_sources(*n.op)) {
      if (i >= a.size()) continue;
      if (a[i].kind == Arg::Kind::list)
        for (const Arg& x : a[i].list) limit(x, mine->second);
      else
        limit(a[i], mine->second);
    }
  }
  std::map<int, int64_t> out;
  for (int id : g.user_inputs()) {
    const auto it = bound.find(id);
    const DType t = g.nodes[static_cast<size_t>(id)].meta().dtype;
    if (it != bound.end() && it->second > 0 && !dtype_is_float(t) && t != DType::b8) out[id] = it->second;
  }
  return out;
}

void bound_index_inputs(const Graph& g, std::vector<Tensor>& inputs) {
  const std::map<int, int64_t> bounds = index_input_bounds(g);
  const std::vector<int> ids = g.user_inputs();
  for (size_t i = 0; i < ids.size() && i < inputs.size(); ++i) {
    const auto it = bounds.find(ids[i]);
    if (it == bounds.end()) continue;
    const Tensor& t = inputs[i];
    Tensor bounded(t.dtype(), t.shape());  // new storage: a copy of `inputs` keeps its values
    const double n = static_cast<double>(it->second);
    for (int64_t j = 0; j < t.numel(); ++j) {
      const double v = std::fmod(t.get(j), n);
      bounded.set(j, v < 0 ? v + n : v);
    }
    inputs[i] = bounded;
  }
}

}  // namespace ls
