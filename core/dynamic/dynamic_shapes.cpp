#include "dynamic/dynamic_shapes.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "codegen/cpp_codegen.h"

namespace ls {
namespace {

// ---------------------------------------------------------------------------------------------
// Tokens: words, numbers, a `//` comment to the end of its line, and every other character
// (whitespace included) on its own, so two sources agree token for token exactly when they differ
// in numbers only. Comments say what the code is at the traced sizes (a kernel's grid): any two
// agree, and their numbers are not fitted.
// ---------------------------------------------------------------------------------------------

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool digit(char c) { return c >= '0' && c <= '9'; }
bool is_number(const std::string& t) { return !t.empty() && (digit(t[0]) || (t[0] == '.' && t.size() > 1)); }

std::vector<std::string> tokenize(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    const size_t b = i;
    const char c = s[i];
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      while (i < s.size() && word_char(s[i])) ++i;
    } else if (digit(c) || (c == '.' && i + 1 < s.size() && digit(s[i + 1]))) {
      while (i < s.size() && (digit(s[i]) || s[i] == '.')) ++i;
      if (i + 1 < s.size() && (s[i] == 'e' || s[i] == 'E') &&
          (digit(s[i + 1]) || ((s[i + 1] == '-' || s[i + 1] == '+') && i + 2 < s.size() && digit(s[i + 2])))) {
        i += 2;
        while (i < s.size() && digit(s[i])) ++i;
      }
      while (i < s.size() && (s[i] == 'f' || s[i] == 'F' || s[i] == 'u' || s[i] == 'U' || s[i] == 'l' || s[i] == 'L')) ++i;
    } else {
      ++i;
    }
    out.push_back(s.substr(b, i - b));
  }
  return out;
}

bool is_comment(const std::string& t) { return t.size() >= 2 && t[0] == '/' && t[1] == '/'; }
// Tokens that agree: equal, or both comments.
bool same(const std::string& a, const std::string& b) { return a == b || (is_comment(a) && is_comment(b)); }

// Whether token k must be a compile-time constant: on a preprocessor line (`#pragma unroll 4`),
// in `__launch_bounds__(...)`, or a template argument (`ls_warp_reduce<0, 32>`: a `<` right after
// a name, no `>` between). A number there cannot become an expression of the sizes.
bool constant_context(const std::vector<std::string>& toks, size_t k) {
  size_t b = k;
  while (b > 0 && toks[b - 1] != "\n") --b;
  while (b < k && toks[b] == " ") ++b;
  if (toks[b] == "#") return true;
  for (size_t i = b; i < k; ++i)
    if (toks[i] == "__launch_bounds__") return true;
  for (size_t i = k; i-- > b;) {
    if (toks[i] == ">" || toks[i] == ";" || toks[i] == "(" || toks[i] == ")") return false;
    if (toks[i] == "<") return i > b && !toks[i - 1].empty() && (std::isalnum(static_cast<unsigned char>(toks[i - 1].back())) || toks[i - 1].back() == '_');
  }
  return false;
}

bool is_float_literal(const std::string& t) {
  return t.find_first_of(".eEfF") != std::string::npos && !(t.size() > 1 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X'));
}

// The value of a number token, where it is an integer; false otherwise.
bool integer_value(const std::string& t, int64_t& v) {
  try {
    const long double x = std::stold(t);
    if (!std::isfinite(static_cast<double>(x)) || x != std::floor(x) || std::fabs(static_cast<double>(x)) > 9e15) return false;
    v = static_cast<int64_t>(x);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

int line_of(const std::vector<std::string>& toks, size_t k) {
  int line = 1;
  for (size_t i = 0; i < k; ++i)
    if (toks[i] == "\n") ++line;
  return line;
}

std::string line_text(const std::vector<std::string>& toks, size_t k) {
  size_t b = k, e = k;
  while (b > 0 && toks[b - 1] != "\n") --b;
  while (e < toks.size() && toks[e] != "\n") ++e;
  std::string s;
  for (size_t i = b; i < e; ++i) s += toks[i];
  const size_t first = s.find_first_not_of(' ');
  return first == std::string::npos ? s : s.substr(first);
}

// Where two sources differ other than in numbers: empty when they agree.
std::string structure_differs(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    if (same(a[i], b[i]) || (is_number(a[i]) && is_number(b[i]))) continue;
    return "line " + std::to_string(line_of(a, i)) + ": `" + line_text(a, i) + "` becomes `" + line_text(b, i) + "`";
  }
  if (a.size() != b.size()) return "line " + std::to_string(line_of(a, n)) + ": the code's length changes";
  return {};
}

std::string symbol_text(int s) { return "ks" + std::to_string(s); }

std::string expr_text(const std::vector<std::pair<int64_t, std::vector<int>>>& terms) {
  std::string s;
  for (const auto& [c, syms] : terms) {
    std::string mono;
    for (int v : syms) mono += (mono.empty() ? "" : "*") + symbol_text(v);
    const int64_t a = s.empty() ? c : std::llabs(c);
    std::string t = mono.empty() ? std::to_string(a) : a == 1 ? mono : std::to_string(a) + "*" + mono;
    s += s.empty() ? t : (c < 0 ? " - " : " + ") + t;
  }
  return s.empty() ? "0" : s;
}

using Point = std::vector<int64_t>;  // one value per symbol

}  // namespace

int64_t SizeHole::at(const std::vector<int64_t>& values) const {
  int64_t v = 0;
  for (const auto& [c, syms] : terms) {
    int64_t m = c;
    for (int s : syms) m *= values.at(static_cast<size_t>(s));
    v += m;
  }
  return v;
}

bool SizeGeneric::any_dynamic() const {
  for (const SizeSymbol& s : symbols)
    if (s.dynamic) return true;
  return false;
}

std::vector<int64_t> SizeGeneric::values_of(const std::vector<Shape>& shapes, std::string* why) const {
  auto fail = [&](const std::string& w) {
    if (why) *why = w;
    return std::vector<int64_t>{};
  };
  auto dim_name = [&](size_t u, size_t d) { return "L['" + inputs.at(u) + "'].size()[" + std::to_string(d) + "]"; };
  if (shapes.size() != traced.size()) return fail("the graph takes " + std::to_string(traced.size()) + " inputs");
  std::vector<std::vector<int>> owner(traced.size());
  for (size_t u = 0; u < traced.size(); ++u) {
    if (shapes[u].size() != traced[u].size())
      return fail("L['" + inputs[u] + "'].dim() == " + std::to_string(traced[u].size()) + " (it has " + std::to_string(shapes[u].size()) + ")");
    owner[u].assign(traced[u].size(), -1);
  }
  std::vector<int64_t> v(symbols.size());
  for (size_t s = 0; s < symbols.size(); ++s) {
    const SizeSymbol& sym = symbols[s];
    const auto [u0, d0] = sym.dims.at(0);
    v[s] = shapes[u0][d0];
    for (const auto& [u, d] : sym.dims) {
      owner[u][d] = static_cast<int>(s);
      if (shapes[u][d] != v[s]) return fail(dim_name(u, d) + " == " + dim_name(u0, d0) + " (" + std::to_string(shapes[u][d]) + " vs " + std::to_string(v[s]) + ")");
    }
    if (!sym.dynamic && v[s] != sym.hint) return fail(dim_name(u0, d0) + " == " + std::to_string(sym.hint) + " (it is " + std::to_string(v[s]) + "; specialized: " + sym.why_static + ")");
    if (sym.dynamic && v[s] < 2) return fail("2 <= " + dim_name(u0, d0) + " (it is " + std::to_string(v[s]) + ")");
    if (sym.dynamic && sym.step > 1 && v[s] % sym.step)
      return fail(dim_name(u0, d0) + " % " + std::to_string(sym.step) + " == 0 (it is " + std::to_string(v[s]) + ")");
  }
  for (size_t u = 0; u < traced.size(); ++u)
    for (size_t d = 0; d < traced[u].size(); ++d)
      if (owner[u][d] < 0 && shapes[u][d] != traced[u][d])
        return fail(dim_name(u, d) + " == " + std::to_string(traced[u][d]) + " (it is " + std::to_string(shapes[u][d]) + ")");
  return v;
}

std::vector<Shape> SizeGeneric::shapes_at(const std::vector<int64_t>& values) const {
  std::vector<Shape> s = traced;
  for (size_t k = 0; k < symbols.size(); ++k)
    for (const auto& [u, d] : symbols[k].dims) s[u][d] = values.at(k);
  return s;
}

bool SizeGeneric::matches(const std::string& source, const std::vector<int64_t>& values, std::string* why) const {
  const std::vector<std::string> t = tokenize(source);
  for (size_t i = 0; i < std::min(t.size(), base_tokens.size()); ++i) {
    const int h = hole_at[i];
    if (h < 0 ? same(t[i], base_tokens[i]) : [&] { int64_t x; return integer_value(t[i], x) && x == holes[h].at(values); }()) continue;
    if (why)
      *why = "line " + std::to_string(line_of(t, i)) + " is `" + line_text(t, i) + "`, the compiled code's `" + line_text(base_tokens, i) + "`" +
             (h >= 0 ? " with " + holes[h].expr + " = " + std::to_string(holes[h].at(values)) : "");
    return false;
  }
  if (t.size() != base_tokens.size()) {
    if (why) *why = "the code's length differs from the compiled code's";
    return false;
  }
  return true;
}

std::vector<std::string> SizeGeneric::guards() const {
  std::vector<std::string> g;
  auto dim_name = [&](std::pair<int, int> ud) { return "L['" + inputs.at(ud.first) + "'].size()[" + std::to_string(ud.second) + "]"; };
  for (const SizeSymbol& s : symbols) {
    const std::string first = dim_name(s.dims.at(0));
    for (size_t k = 1; k < s.dims.size(); ++k) g.push_back(dim_name(s.dims[k]) + " == " + first);
    if (!s.dynamic) {
      g.push_back(first + " == " + std::to_string(s.hint));
      continue;
    }
    g.push_back("2 <= " + first);
    if (s.step > 1) g.push_back(first + " % " + std::to_string(s.step) + " == 0");
  }
  g.push_back("each kernel's code at the new sizes is this template's (checked once per new size)");
  return g;
}

std::string SizeGeneric::report() const {
  std::ostringstream o;
  o << "# Dynamic shapes: sizes as symbols, the kernels take them as arguments (ks0, ks1, ...)\n\n# Symbols\n";
  auto dim_name = [&](std::pair<int, int> ud) { return "L['" + inputs.at(ud.first) + "'].size()[" + std::to_string(ud.second) + "]"; };
  for (const SizeSymbol& s : symbols) {
    o << s.name << " = " << s.hint << "  (" << dim_name(s.dims.at(0));
    for (size_t k = 1; k < s.dims.size(); ++k) o << ", " << dim_name(s.dims[k]);
    o << ")  " << (s.dynamic ? "dynamic" : "specialized: " + s.why_static) << "\n";
  }
  if (symbols.empty()) o << "(none: every size of the inputs is 0 or 1)\n";
  o << "\n# Guards (what the compiled code assumes)\n";
  for (const std::string& g : guards()) o << g << "\n";
  o << "\n# Sample compiles of the front half (" << samples.size() << ", " << std::fixed;
  o.precision(1);
  o << sample_ms << " ms)\n";
  for (const Point& p : samples) {
    std::string t;
    for (size_t k = 0; k < p.size(); ++k)
      if (p[k] != symbols[k].hint) t += (t.empty() ? "" : ", ") + symbols[k].name + "=" + std::to_string(p[k]);
    o << (t.empty() ? "(traced sizes)" : t) << "\n";
  }
  o << "\n# Numbers of the code that follow the sizes (" << holes.size() << ")\n";
  std::map<std::string, int> seen;
  for (const SizeHole& h : holes) ++seen[h.traced + " -> " + h.expr];
  for (const SizeHole& h : holes) {
    auto it = seen.find(h.traced + " -> " + h.expr);
    if (it == seen.end()) continue;
    o << "line " << h.line << ": " << h.traced << " -> " << h.expr << (it->second > 1 ? "  (and " + std::to_string(it->second - 1) + " more)" : "") << "\n";
    seen.erase(it);
  }
  return o.str();
}

SizeGeneric make_size_generic(const std::vector<std::string>& input_names, const std::vector<Shape>& traced_shapes,
                              const std::vector<bool>& static_inputs, const GeneratedSource& traced, const GenerateAt& generate,
                              SizeArgs style) {
  SizeGeneric g;
  g.inputs = input_names;
  g.traced = traced_shapes;
  // Symbols: every size >= 2 of a user input; equal sizes share one (duck sizing).
  std::map<int64_t, int> by_size;
  for (size_t u = 0; u < traced_shapes.size(); ++u)
    for (size_t d = 0; d < traced_shapes[u].size(); ++d) {
      const int64_t n = traced_shapes[u][d];
      if (n < 2 || (u < static_inputs.size() && static_inputs[u])) continue;
      auto [it, fresh] = by_size.emplace(n, static_cast<int>(g.symbols.size()));
      if (fresh) g.symbols.push_back({"s" + std::to_string(g.symbols.size()), n, {}, true, 1, {}});
      g.symbols[it->second].dims.push_back({static_cast<int>(u), static_cast<int>(d)});
    }
  g.base_tokens = tokenize(traced.code);
  Point base;
  for (const SizeSymbol& s : g.symbols) base.push_back(s.hint);

  const auto t0 = std::chrono::steady_clock::now();
  std::map<Point, std::vector<std::string>> made;  // sample -> its tokens
  std::map<Point, std::string> failed;             // sample -> why it did not compile
  made[base] = g.base_tokens;
  auto sample = [&](const Point& p) -> const std::vector<std::string>* {
    if (auto it = made.find(p); it != made.end()) return &it->second;
    if (failed.count(p)) return nullptr;
    try {
      g.samples.push_back(p);
      return &(made[p] = tokenize(generate(g.shapes_at(p)).code));
    } catch (const std::exception& e) {
      failed[p] = e.what();
      return nullptr;
    }
  };
  auto specialize = [&](size_t s, const std::string& why) {
    g.symbols[s].dynamic = false;
    g.symbols[s].why_static = why;
  };
  auto largest_pow2_step = [](int64_t n) {
    int64_t k = 1;
    while (k < 16 && n % (2 * k) == 0) k *= 2;
    return k;
  };

  for (size_t round = 0; round <= g.symbols.size(); ++round) {
    std::vector<size_t> act;
    for (size_t s = 0; s < g.symbols.size(); ++s)
      if (g.symbols[s].dynamic) act.push_back(s);
    if (act.empty()) break;
    // Each symbol alone: a step that keeps the code's structure (1, else 4, else the largest power
    // of two up to 16 dividing its size), or it is specialized.
    bool changed = false;
    for (size_t s : act) {
      SizeSymbol& sym = g.symbols[s];
      std::string why;
      bool ok = false;
      std::vector<int64_t> steps = {1};
      if (largest_pow2_step(sym.hint) >= 4) steps.push_back(4);  // CUDA's 16-byte accesses: groups of 4 floats
      if (largest_pow2_step(sym.hint) > steps.back()) steps.push_back(largest_pow2_step(sym.hint));
      for (int64_t step : steps) {
        Point p = base;
        p[s] += step;
        const auto* t = sample(p);
        if (!t) {
          why = "a shape rule needs it: " + failed[p];
          break;
        }
        const std::string d = structure_differs(g.base_tokens, *t);
        if (d.empty()) {
          sym.step = step;
          ok = true;
          break;
        }
        why = "the code's structure changes with it (" + sym.name + "=" + std::to_string(p[s]) + ", " + d + ")";
      }
      if (!ok) {
        specialize(s, why);
        changed = true;
      }
    }
    if (changed) continue;
    // The design: the grid of 0, 1 and 2 steps of every symbol (3^k front halves), which fixes a
    // polynomial of degree <= 2 in each symbol (batch * height^2 * channels is one), and a check
    // point at 3 steps of all.
    if (act.size() > 3) {
      for (size_t i = 3; i < act.size(); ++i) specialize(act[i], "at most 3 sizes of a graph are dynamic (the sample grid grows as 3^k)");
      continue;
    }
    std::vector<Point> grid;
    for (size_t n = 0, total = static_cast<size_t>(std::pow(3, act.size())); n < total; ++n) {
      Point p = base;
      for (size_t i = 0, r = n; i < act.size(); ++i, r /= 3) p[act[i]] += static_cast<int64_t>(r % 3) * g.symbols[act[i]].step;
      grid.push_back(p);
    }
    Point check = base;
    for (size_t s : act) check[s] += 3 * g.symbols[s].step;
    for (const Point& p : grid) {
      if (changed) break;
      const auto* t = sample(p);
      const std::string d = t ? structure_differs(g.base_tokens, *t) : std::string();
      if (t && d.empty()) continue;
      for (size_t s : act)
        if (p[s] != base[s]) {
          specialize(s, t ? "the code's structure changes with it (" + d + ")" : "a shape rule needs it: " + failed[p]);
          break;
        }
      changed = true;
    }
    if (!changed) {
      const auto* t = sample(check);
      const std::string d = t ? structure_differs(g.base_tokens, *t) : std::string();
      if (!t || !d.empty()) {
        specialize(act.back(), t ? "the code's structure changes with it (" + d + ")" : "a shape rule needs it: " + failed[check]);
        changed = true;
      }
    }
    if (changed) continue;
    // Per grid point, its Newton coefficient: the tensor product of forward differences
    // (v0; v1 - v0; v2 - 2 v1 + v0) along each symbol; p(u) = sum D[j] prod C(u_i, j_i), with
    // u_i = (s_i - h_i) / step_i and C(u, 2) = u (u - 1) / 2, expanded into monomials of s.
    g.holes.clear();
    g.hole_at.assign(g.base_tokens.size(), -1);
    // Samples taken while a symbol now specialized was still moving no longer count.
    auto relevant = [&](const Point& p) {
      for (size_t s = 0; s < p.size(); ++s)
        if (!g.symbols[s].dynamic && p[s] != base[s]) return false;
      return made.at(p).size() == g.base_tokens.size();
    };
    using Poly = std::map<std::vector<int>, long double>;  // exponents per symbol -> coefficient
    const size_t nsym = g.symbols.size();
    auto mul = [&](const Poly& x, const Poly& y) {
      Poly z;
      for (const auto& [ex, cx] : x)
        for (const auto& [ey, cy] : y) {
          std::vector<int> e(nsym);
          for (size_t i = 0; i < nsym; ++i) e[i] = ex[i] + ey[i];
          z[e] += cx * cy;
        }
      return z;
    };
    const std::vector<int> zero(nsym, 0);
    std::vector<std::array<Poly, 3>> binom(nsym);  // C(u_i, j) as polynomials of s_i
    for (size_t s : act) {
      const long double h = static_cast<long double>(g.symbols[s].hint), d = static_cast<long double>(g.symbols[s].step);
      std::vector<int> e = zero;
      e[s] = 1;
      const Poly u = {{e, 1 / d}, {zero, -h / d}}, u1 = {{e, 1 / d}, {zero, -h / d - 1}};
      binom[s][0] = {{zero, 1}};
      binom[s][1] = u;
      binom[s][2] = mul(u, u1);
      for (auto& [ex, c] : binom[s][2]) c /= 2;
    }
    for (size_t k = 0; k < g.base_tokens.size() && !changed; ++k) {
      const std::string& tok = g.base_tokens[k];
      if (!is_number(tok)) continue;
      bool moves = false;
      for (const Point& p : grid) moves = moves || made.at(p)[k] != tok;
      moves = moves || made.at(check)[k] != tok;
      if (!moves) continue;
      // The symbols this number moves with (each alone), all where none alone moves it.
      auto moved_by = [&] {
        std::vector<size_t> with;
        for (size_t s : act) {
          Point p1 = base, p2 = base;
          p1[s] += g.symbols[s].step;
          p2[s] += 2 * g.symbols[s].step;
          if (made.at(p1)[k] != tok || made.at(p2)[k] != tok) with.push_back(s);
        }
        return with.empty() ? act : with;
      };
      if (constant_context(g.base_tokens, k)) {
        for (size_t s : moved_by())
          specialize(s, "a compile-time constant of the code follows it (line " + std::to_string(line_of(g.base_tokens, k)) + ": `" +
                            line_text(g.base_tokens, k) + "`)");
        changed = true;
        break;
      }
      SizeHole h;
      h.traced = tok;
      h.line = line_of(g.base_tokens, k);
      std::vector<long double> D(grid.size());
      bool ok = true;
      for (size_t n = 0; n < grid.size() && ok; ++n) {
        int64_t v;
        ok = integer_value(made.at(grid[n])[k], v);
        D[n] = static_cast<long double>(v);
      }
      for (size_t i = 0, stride = 1; i < act.size() && ok; ++i, stride *= 3)
        for (size_t n = 0; n < grid.size(); ++n)
          if ((n / stride) % 3 == 0) {
            const long double v0 = D[n], v1 = D[n + stride], v2 = D[n + 2 * stride];
            D[n + stride] = v1 - v0;
            D[n + 2 * stride] = v2 - 2 * v1 + v0;
          }
      Poly poly;
      for (size_t n = 0; n < grid.size() && ok; ++n) {
        if (D[n] == 0) continue;
        Poly term = {{zero, D[n]}};
        for (size_t i = 0, r = n; i < act.size(); ++i, r /= 3) term = mul(term, binom[act[i]][r % 3]);
        for (const auto& [e, c] : term) poly[e] += c;
      }
      // Coefficients rounded to integers, highest degree first, then checked at every sample.
      std::vector<std::pair<std::vector<int>, long double>> ordered(poly.begin(), poly.end());
      auto degree = [](const std::vector<int>& e) { int t = 0; for (int x : e) t += x; return t; };
      std::stable_sort(ordered.begin(), ordered.end(), [&](const auto& x, const auto& y) { return degree(x.first) > degree(y.first); });
      for (const auto& [e, coef] : ordered) {
        const long double r = std::round(coef);
        if (std::fabs(static_cast<double>(coef - r)) > 1e-6) ok = false;
        if (r == 0) continue;
        std::vector<int> syms;
        for (size_t i = 0; i < nsym; ++i)
          for (int x = 0; x < e[i]; ++x) syms.push_back(static_cast<int>(i));
        h.terms.push_back({static_cast<int64_t>(r), syms});
      }
      for (const auto& [p, toks] : made) {
        if (!ok) break;
        int64_t v;
        ok = !relevant(p) || (integer_value(toks[k], v) && v == h.at(p));
      }
      if (!ok) {
        // Not a polynomial of the sizes (a reciprocal, a rounding): the symbols it moves with are specialized.
        for (size_t s : moved_by())
          specialize(s, "the code has a number that is not a polynomial of it (line " + std::to_string(h.line) + ": `" +
                            line_text(g.base_tokens, k) + "`)");
        changed = true;
        break;
      }
      h.expr = expr_text(h.terms);
      g.hole_at[k] = static_cast<int>(g.holes.size());
      g.holes.push_back(std::move(h));
    }
    if (!changed) break;
  }
  g.sample_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!g.any_dynamic()) {
    g.holes.clear();
    g.hole_at.assign(g.base_tokens.size(), -1);
  }

  // The template: holes become expressions of ks0, ks1, ...; each kernel takes the sizes as its
  // last argument (C++: an array, its launcher passing the launch array's last slot; CUDA: one
  // value a symbol). Lines keep their numbers. In a CUDA kernel with 32-bit index arithmetic the
  // sizes' expressions are 32-bit too (the front half chose it because every buffer fits, and a
  // size where they do not changes the code, which fails the template check).
  std::vector<char> narrow_line;
  for (const GeneratedKernel& k : traced.kernels)
    if (k.narrow_index && k.last_line >= k.first_line) {
      if (narrow_line.size() <= static_cast<size_t>(k.last_line)) narrow_line.resize(static_cast<size_t>(k.last_line) + 1, 0);
      std::fill(narrow_line.begin() + k.first_line, narrow_line.begin() + k.last_line + 1, 1);
    }
  std::string code;
  int line_no = 1;
  for (size_t k = 0; k < g.base_tokens.size(); ++k) {
    const int h = g.hole_at[k];
    if (h < 0) {
      code += g.base_tokens[k];
      line_no += g.base_tokens[k] == "\n";
      continue;
    }
    const std::string& t = g.base_tokens[k];
    const std::string e = g.holes[h].expr;
    const bool narrow = style == SizeArgs::cuda_values && static_cast<size_t>(line_no) < narrow_line.size() && narrow_line[line_no];
    if (!is_float_literal(t)) code += narrow ? "static_cast<int>(" + e + ")" : "(" + e + ")";
    else code += (t.back() == 'f' || t.back() == 'F' ? "static_cast<float>(" : "static_cast<double>(") + e + ")";
  }
  std::string decl;
  for (size_t s = 0; s < g.symbols.size(); ++s)
    if (g.symbols[s].dynamic) decl += (decl.empty() ? " [[maybe_unused]] const int64_t " : ", ") + symbol_text(static_cast<int>(s)) + " = ks[" + std::to_string(s) + "]";
  if (!decl.empty()) decl += ";";
  std::istringstream in(code);
  std::string line, out;
  std::map<std::string, size_t> kernels;  // kernel function -> its argument count
  std::map<std::string, std::string> launchers;
  for (const GeneratedKernel& k : traced.kernels)
    if (!k.launcher.empty()) {
      kernels[k.name] = k.args.size();
      launchers[k.launcher] = k.name;
    }
  std::string cuda_params;
  for (size_t s = 0; s < g.symbols.size(); ++s) cuda_params += ", const long long ls_ks" + std::to_string(s);
  std::string cuda_decl;
  for (size_t s = 0; s < g.symbols.size(); ++s)
    if (g.symbols[s].dynamic) cuda_decl += " const int64_t ks" + std::to_string(s) + " = ls_ks" + std::to_string(s) + ";";
  const std::string kernel_head = kCpuKernelHead;  // a CPU kernel's definition (codegen/cpp_codegen.h)
  while (std::getline(in, line)) {
    const std::string head = style == SizeArgs::cuda_values ? "extern \"C\" __global__ void " : "extern \"C\" void ";
    if (style == SizeArgs::cuda_values && line.rfind(head, 0) == 0 && line.size() >= 3 && line.compare(line.size() - 3, 3, ") {") == 0) {
      for (const auto& [name, nargs] : kernels)
        if (line.find(" " + name + "(") != std::string::npos) {
          const bool none = line.find(" " + name + "()") != std::string::npos;
          line = line.substr(0, line.size() - 3) + (none ? cuda_params.substr(cuda_params.empty() ? 0 : 2) : cuda_params) + ") {" + cuda_decl;
          break;
        }
    } else if (style == SizeArgs::cpu_array && (line.rfind(head, 0) == 0 || line.rfind(kernel_head, 0) == 0)) {
      const size_t start = line.rfind(head, 0) == 0 ? head.size() : kernel_head.size();  // a launcher, or a kernel
      const size_t paren = line.find('(', start);
      const std::string name = paren == std::string::npos ? "" : line.substr(start, paren - start);
      if (kernels.count(name) && line.size() >= 3 && line.compare(line.size() - 3, 3, ") {") == 0) {
        const bool none = line[paren + 1] == ')';
        line = line.substr(0, line.size() - 3) + (none ? "" : ", ") + "const int64_t* __restrict ks) {" + decl;
      } else if (auto l = launchers.find(name); l != launchers.end() && line.size() >= 4 && line.compare(line.size() - 4, 4, "); }") == 0) {
        const size_t n = kernels.at(l->second);
        line = line.substr(0, line.size() - 4) + (n ? ", " : "") + "static_cast<const int64_t*>(a[" + std::to_string(n) + "])); }";
      }
    }
    out += line + "\n";
  }
  if (!code.empty() && code.back() != '\n' && !out.empty()) out.pop_back();
  g.code = out;
  return g;
}

}  // namespace ls
