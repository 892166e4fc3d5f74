#include "ir/index.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>

namespace ls {

// Laws applied, one per line (a, b: expressions; k, m: positive constants; c: integer):
//   v                     -> 0                    when v ranges over 0..0
//   a // 1                -> a
//   a % 1                 -> 0
//   (k*a + b) // k        -> a + b // k           (a integral)
//   (k*a + b) % k         -> b % k
//   a // k                -> 0                    when 0 <= a < k
//   a % k                 -> a                    when 0 <= a < k
//   (a // k) // m         -> a // (k*m)
//   (a % (k*m)) % m       -> a % m
//   (a % (k*m)) // m      -> (a // m) % k
//   (c*a + b) // (c*m)    -> a // m               when 0 <= b < c
//   (c*a + b) % (c*m)     -> c*(a % m) + b        when 0 <= b < c
//   c*k*(a // k) + c*(a % k) -> c*a
//   c*k*((a // k) % m) + c*(a % k) -> c*(a % (k*m))   (an index split into digits, put back)
//   c                     folds: constant terms are summed, like terms are collected

namespace {

int64_t floordiv_i(int64_t a, int64_t k) { return a >= 0 ? a / k : -((-a + k - 1) / k); }
int64_t mod_i(int64_t a, int64_t k) { return a - floordiv_i(a, k) * k; }

int64_t gcd(int64_t a, int64_t b) {
  a = a < 0 ? -a : a;
  b = b < 0 ? -b : b;
  while (b) {
    const int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

int64_t atom_min(const Atom& a) {
  switch (a.kind) {
    case Atom::Kind::var: return 0;
    case Atom::Kind::floordiv: return floordiv_i(a.inner->min(), a.k);
    case Atom::Kind::mod: return 0;
  }
  return 0;
}

int64_t atom_max(const Atom& a) {
  switch (a.kind) {
    case Atom::Kind::var: return a.range - 1;
    case Atom::Kind::floordiv: return floordiv_i(a.inner->max(), a.k);
    case Atom::Kind::mod:
      if (a.inner->min() >= 0) return std::min(a.k - 1, a.inner->max());
      return a.k - 1;
  }
  return 0;
}

}  // namespace

// Finds c > 1 dividing k such that e = c*a + b with 0 <= b < c; returns c (1 if none) and sets a, b.
int64_t split_by_common_factor(const Expr& e, int64_t k, Expr& a, Expr& b) {
  std::vector<int64_t> candidates;
  for (const Expr::Term& t : e.terms()) candidates.push_back(gcd(k, t.coeff));
  std::sort(candidates.rbegin(), candidates.rend());
  for (int64_t c : candidates) {
    if (c <= 1 || c >= k) continue;
    Expr big, small(e.constant() % c < 0 ? e.constant() % c + c : e.constant() % c);
    big = Expr((e.constant() - small.constant()) / c);
    for (const Expr::Term& t : e.terms()) {
      Expr one;
      one = one + Expr::atom(t.atom);
      if (t.coeff % c == 0) big = big + one * (t.coeff / c);
      else small = small + one * t.coeff;
    }
    if (small.min() >= 0 && small.max() < c) {
      a = big;
      b = small;
      return c;
    }
  }
  return 1;
}

std::string Atom::key() const {
  switch (kind) {
    case Kind::var: return var;
    case Kind::floordiv: return "(" + inner->str() + " // " + std::to_string(k) + ")";
    case Kind::mod: return "(" + inner->str() + " % " + std::to_string(k) + ")";
  }
  return "";
}

Expr Expr::atom(const Atom& a) {
  Expr e;
  e.terms_.push_back({1, a});
  return e;
}

Expr Expr::indirect(const std::string& name, int64_t size) {
  if (name.rfind(kIndirectPrefix, 0) != 0) throw std::invalid_argument("indirect index '" + name + "' lacks its prefix");
  if (size <= 0) throw std::invalid_argument("indirect index '" + name + "' into an empty dimension");
  Expr e;
  Atom a;  // a range of 1 still stays a variable: its value is checked, not assumed
  a.kind = Atom::Kind::var;
  a.var = name;
  a.range = size;
  e.terms_.push_back({1, a});
  return e;
}

bool Expr::has_indirect() const {
  for (const std::string& v : vars())
    if (v.rfind(kIndirectPrefix, 0) == 0) return true;
  return false;
}

Expr Expr::var(const std::string& name, int64_t range) {
  if (range <= 0) throw std::invalid_argument("loop variable '" + name + "' has an empty range");
  Expr e;
  if (range == 1) return e;  // v over 0..0 -> 0
  Atom a;
  a.kind = Atom::Kind::var;
  a.var = name;
  a.range = range;
  e.terms_.push_back({1, a});
  return e;
}

void Expr::add_term(int64_t coeff, const Atom& a) {
  if (coeff == 0) return;
  const std::string k = a.key();
  for (Term& t : terms_)
    if (t.atom.key() == k) {
      t.coeff += coeff;
      return;
    }
  terms_.push_back({coeff, a});
}

void Expr::normalize() {
  // c*k*(a // k) + c*(a % k) -> c*a
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t i = 0; i < terms_.size() && !changed; ++i) {
      if (terms_[i].atom.kind != Atom::Kind::mod) continue;
      const Atom& m = terms_[i].atom;
      for (size_t j = 0; j < terms_.size() && !changed; ++j) {
        const Atom& d = terms_[j].atom;
        if (d.kind != Atom::Kind::floordiv || d.k != m.k || *d.inner != *m.inner) continue;
        const int64_t c = terms_[i].coeff;
        if (terms_[j].coeff != c * m.k) continue;
        Expr inner = *m.inner;
        std::vector<Term> rest;
        for (size_t t = 0; t < terms_.size(); ++t)
          if (t != i && t != j) rest.push_back(terms_[t]);
        terms_ = rest;
        for (const Term& t : inner.terms_) add_term(t.coeff * c, t.atom);
        constant_ += inner.constant_ * c;
        changed = true;
      }
      // c*k*((a // k) % m) + c*(a % k) -> c*(a % (k*m))
      for (size_t j = 0; j < terms_.size() && !changed; ++j) {
        const Atom& dm = terms_[j].atom;
        if (j == i || dm.kind != Atom::Kind::mod) continue;
        const Expr& q = *dm.inner;
        if (q.terms_.size() != 1 || q.constant_ != 0 || q.terms_[0].coeff != 1) continue;
        const Atom& d = q.terms_[0].atom;
        if (d.kind != Atom::Kind::floordiv || d.k != m.k || *d.inner != *m.inner) continue;
        const int64_t c = terms_[i].coeff;
        if (terms_[j].coeff != c * m.k) continue;
        const Expr merged = m.inner->mod(m.k * dm.k) * c;
        std::vector<Term> rest;
        for (size_t t = 0; t < terms_.size(); ++t)
          if (t != i && t != j) rest.push_back(terms_[t]);
        terms_ = rest;
        for (const Term& t : merged.terms_) add_term(t.coeff, t.atom);
        constant_ += merged.constant_;
        changed = true;
      }
    }
  }
  terms_.erase(std::remove_if(terms_.begin(), terms_.end(), [](const Term& t) { return t.coeff == 0; }), terms_.end());
  std::sort(terms_.begin(), terms_.end(), [](const Term& a, const Term& b) { return a.atom.key() < b.atom.key(); });
}

Expr Expr::operator+(const Expr& o) const {
  Expr r = *this;
  for (const Term& t : o.terms_) r.add_term(t.coeff, t.atom);
  r.constant_ += o.constant_;
  r.normalize();
  return r;
}

Expr Expr::operator-(const Expr& o) const { return *this + o * -1; }

Expr Expr::operator*(int64_t c) const {
  Expr r;
  if (c == 0) return r;
  for (const Term& t : terms_) r.terms_.push_back({t.coeff * c, t.atom});
  r.constant_ = constant_ * c;
  r.normalize();
  return r;
}

Expr Expr::floordiv(int64_t k) const {
  if (k <= 0) throw std::invalid_argument("floor division of an index by " + std::to_string(k));
  if (k == 1) return *this;
  // (k*a + b) // k -> a + b // k: split off the terms whose coefficient k divides.
  Expr outer, rest;
  for (const Term& t : terms_) {
    if (t.coeff % k == 0) outer.add_term(t.coeff / k, t.atom);
    else rest.add_term(t.coeff, t.atom);
  }
  outer.constant_ = floordiv_i(constant_, k);
  rest.constant_ = mod_i(constant_, k);
  rest.normalize();
  if (rest.min() >= 0 && rest.max() < k) {  // 0 <= b < k -> b // k = 0
    outer.normalize();
    return outer;
  }
  if (rest.constant_ == 0 && rest.terms_.size() == 1 && rest.terms_[0].coeff == 1) {
    const Atom& a = rest.terms_[0].atom;
    if (a.kind == Atom::Kind::floordiv) {  // (a // k) // m -> a // (k*m)
      outer = outer + a.inner->floordiv(a.k * k);
      return outer;
    }
    if (a.kind == Atom::Kind::mod && a.k % k == 0) {  // (a % (k*m)) // m -> (a // m) % k
      outer = outer + a.inner->floordiv(k).mod(a.k / k);
      return outer;
    }
  }
  if (Expr a, b; split_by_common_factor(rest, k, a, b) > 1) {  // (c*a + b) // (c*m) -> a // m
    const int64_t c = split_by_common_factor(rest, k, a, b);
    return outer + a.floordiv(k / c);
  }
  Atom d;
  d.kind = Atom::Kind::floordiv;
  d.inner = std::make_shared<const Expr>(rest);
  d.k = k;
  outer.add_term(1, d);
  outer.normalize();
  return outer;
}

Expr Expr::mod(int64_t k) const {
  if (k <= 0) throw std::invalid_argument("modulo of an index by " + std::to_string(k));
  if (k == 1) return Expr();
  Expr rest;  // (k*a + b) % k -> b % k
  for (const Term& t : terms_)
    if (t.coeff % k != 0) rest.add_term(t.coeff, t.atom);
  rest.constant_ = mod_i(constant_, k);
  rest.normalize();
  if (rest.min() >= 0 && rest.max() < k) return rest;  // 0 <= b < k -> b % k = b
  if (rest.constant_ == 0 && rest.terms_.size() == 1 && rest.terms_[0].coeff == 1) {
    const Atom& a = rest.terms_[0].atom;
    if (a.kind == Atom::Kind::mod && a.k % k == 0) return a.inner->mod(k);  // (a % (k*m)) % m -> a % m
  }
  if (Expr a, b; split_by_common_factor(rest, k, a, b) > 1) {  // (c*a + b) % (c*m) -> c*(a % m) + b
    const int64_t c = split_by_common_factor(rest, k, a, b);
    return a.mod(k / c) * c + b;
  }
  Expr r;
  Atom m;
  m.kind = Atom::Kind::mod;
  m.inner = std::make_shared<const Expr>(rest);
  m.k = k;
  r.add_term(1, m);
  return r;
}

Expr Expr::substitute(const std::map<std::string, Expr>& repl) const {
  Expr r(constant_);
  for (const Term& t : terms_) {
    Expr part;
    switch (t.atom.kind) {
      case Atom::Kind::var: {
        auto it = repl.find(t.atom.var);
        if (it != repl.end()) part = it->second;
        else part.terms_.push_back({1, t.atom});
        break;
      }
      case Atom::Kind::floordiv: part = t.atom.inner->substitute(repl).floordiv(t.atom.k); break;
      case Atom::Kind::mod: part = t.atom.inner->substitute(repl).mod(t.atom.k); break;
    }
    r = r + part * t.coeff;
  }
  return r;
}

int64_t Expr::min() const {
  int64_t v = constant_;
  for (const Term& t : terms_) v += t.coeff >= 0 ? t.coeff * atom_min(t.atom) : t.coeff * atom_max(t.atom);
  return v;
}

int64_t Expr::max() const {
  int64_t v = constant_;
  for (const Term& t : terms_) v += t.coeff >= 0 ? t.coeff * atom_max(t.atom) : t.coeff * atom_min(t.atom);
  return v;
}

std::vector<std::string> Expr::vars() const {
  std::set<std::string> s;
  for (const Term& t : terms_) {
    if (t.atom.kind == Atom::Kind::var) s.insert(t.atom.var);
    else
      for (auto& v : t.atom.inner->vars()) s.insert(v);
  }
  return {s.begin(), s.end()};
}

int64_t Expr::coefficient(const std::string& var) const {
  for (const Term& t : terms_)
    if (t.atom.kind == Atom::Kind::var && t.atom.var == var) return t.coeff;
  return 0;
}

bool Expr::depends_on(const std::string& var) const {
  const auto v = vars();
  return std::find(v.begin(), v.end(), var) != v.end();
}

namespace {
std::string render(const Expr& e, bool cpp) {
  std::ostringstream os;
  bool first = true;
  // Inductor prints the highest-stride term first: "512*p0 + p1".
  std::vector<Expr::Term> terms = e.terms();
  std::stable_sort(terms.begin(), terms.end(), [](const Expr::Term& a, const Expr::Term& b) {
    return std::abs(a.coeff) > std::abs(b.coeff);
  });
  // The operand of // and % is parenthesized unless it is a single atom: (a + b) // k.
  auto operand = [cpp](const Expr& e) {
    const bool single = e.constant() == 0 && e.terms().size() == 1 && e.terms()[0].coeff == 1;
    return single ? render(e, cpp) : "(" + render(e, cpp) + ")";
  };
  for (const Expr::Term& t : terms) {
    std::string atom;
    switch (t.atom.kind) {
      case Atom::Kind::var: atom = t.atom.var; break;
      case Atom::Kind::floordiv:
        atom = "(" + operand(*t.atom.inner) + (cpp ? " / " : " // ") + std::to_string(t.atom.k) + ")";
        if (cpp && t.atom.inner->min() < 0) atom = "ls_floordiv(" + render(*t.atom.inner, cpp) + ", " + std::to_string(t.atom.k) + ")";
        break;
      case Atom::Kind::mod:
        atom = "(" + operand(*t.atom.inner) + " % " + std::to_string(t.atom.k) + ")";
        if (cpp && t.atom.inner->min() < 0) atom = "ls_mod(" + render(*t.atom.inner, cpp) + ", " + std::to_string(t.atom.k) + ")";
        break;
    }
    int64_t c = t.coeff;
    if (!first) os << (c < 0 ? " - " : " + ");
    else if (c < 0) os << "-";
    c = std::abs(c);
    if (c != 1) os << c << '*';
    os << atom;
    first = false;
  }
  if (e.constant() != 0 || first) {
    if (first) os << e.constant();
    else os << (e.constant() < 0 ? " - " : " + ") << std::abs(e.constant());
  }
  return os.str();
}
}  // namespace

// Atoms are equal when they print the same: the same variable (its range is not printed), or the
// same division or modulus of equal operands.
static bool same_atom(const Atom& a, const Atom& b) {
  if (a.kind != b.kind) return false;
  if (a.kind == Atom::Kind::var) return a.var == b.var;
  return a.k == b.k && (a.inner == b.inner || (a.inner && b.inner && *a.inner == *b.inner));
}

bool Expr::operator==(const Expr& o) const {
  if (constant_ != o.constant_ || terms_.size() != o.terms_.size()) return false;
  for (size_t i = 0; i < terms_.size(); ++i)
    if (terms_[i].coeff != o.terms_[i].coeff || !same_atom(terms_[i].atom, o.terms_[i].atom)) return false;
  return true;
}

std::string Expr::str() const { return render(*this, false); }
std::string Expr::cpp() const { return render(*this, true); }

Expr linear_index(const std::vector<Expr>& idx, const std::vector<int64_t>& strides) {
  if (idx.size() != strides.size()) throw std::invalid_argument("index rank differs from stride rank");
  Expr e;
  for (size_t i = 0; i < idx.size(); ++i) e = e + idx[i] * strides[i];
  return e;
}

std::vector<Expr> unflatten(const Expr& flat, const std::vector<int64_t>& sizes) {
  std::vector<Expr> out(sizes.size());
  int64_t inner = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    out[i] = flat.floordiv(inner).mod(std::max<int64_t>(sizes[i], 1));
    inner *= std::max<int64_t>(sizes[i], 1);
  }
  if (!sizes.empty()) {  // the outermost dimension needs no modulo: flat < numel
    int64_t below = 1;
    for (size_t i = 1; i < sizes.size(); ++i) below *= std::max<int64_t>(sizes[i], 1);
    out[0] = flat.floordiv(below);
  }
  return out;
}

}  // namespace ls
