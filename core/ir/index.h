// Index expressions of the loop IR: integer affine combinations of loop variables, floor
// divisions and moduli by positive constants. Every Expr is kept in a canonical simplified form
// at construction (small value type, checked construction), so two indices that are equal after
// simplification compare equal. The laws applied, one per line, are listed in index.cpp.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ls {

class Expr;

// A non-affine building block: a loop variable, or (inner // k), or (inner % k).
struct Atom {
  enum class Kind : uint8_t { var, floordiv, mod };
  Kind kind = Kind::var;
  std::string var;       // Kind::var: its name
  int64_t range = 1;     // Kind::var: takes values 0 .. range-1
  std::shared_ptr<const Expr> inner;  // floordiv/mod operand
  int64_t k = 1;                      // floordiv/mod divisor (> 1)
  std::string key() const;  // canonical text, used for ordering and equality
};

class Expr {
 public:
  Expr() = default;
  Expr(int64_t c) : constant_(c) {}  // NOLINT: constants convert implicitly
  static Expr var(const std::string& name, int64_t range);
  // An indirect index: a variable standing for a value the loop body loaded or computed (an
  // element of an index tensor), known to lie in 0 .. size-1 once checked (Inductor's
  // ops.indirect_indexing). Its name starts with kIndirectPrefix.
  static Expr indirect(const std::string& name, int64_t size);
  static constexpr const char* kIndirectPrefix = "ind";
  bool has_indirect() const;  // some variable of it is an indirect index
  static Expr atom(const Atom& a);  // the atom alone, coefficient 1

  Expr operator+(const Expr& o) const;
  Expr operator-(const Expr& o) const;
  Expr operator*(int64_t c) const;
  Expr floordiv(int64_t k) const;  // floor division by a positive constant
  Expr mod(int64_t k) const;       // modulo a positive constant (result in 0..k-1)

  // Replaces variables by expressions (simultaneously) and re-simplifies.
  Expr substitute(const std::map<std::string, Expr>& repl) const;

  bool is_constant() const { return terms_.empty(); }
  int64_t constant() const { return constant_; }
  int64_t min() const;  // bounds over the variables' ranges
  int64_t max() const;
  std::vector<std::string> vars() const;
  // Coefficient of a variable where it appears only as a plain term (0 if absent or nested).
  int64_t coefficient(const std::string& var) const;
  bool depends_on(const std::string& var) const;

  std::string str() const;  // "512*p0 + p1", "(p0 // 512)", as Inductor prints indices
  std::string cpp() const;  // C++ expression over int64_t variables
  // Structural: both are in canonical form (printing both sides to compare them was 15% of the
  // scheduler's instructions on a chain of 10,000 ops).
  bool operator==(const Expr& o) const;
  bool operator!=(const Expr& o) const { return !(*this == o); }

  struct Term {
    int64_t coeff;
    Atom atom;
  };
  const std::vector<Term>& terms() const { return terms_; }

 private:
  void add_term(int64_t coeff, const Atom& a);
  void normalize();
  std::vector<Term> terms_;  // sorted by atom key, no zero coefficients
  int64_t constant_ = 0;
};

// Finds c > 1 dividing k with e = c*a + b and 0 <= b < c; returns c (1 when there is none).
int64_t split_by_common_factor(const Expr& e, int64_t k, Expr& a, Expr& b);

// Row-major index of a multi-dimensional position with the given strides.
Expr linear_index(const std::vector<Expr>& idx, const std::vector<int64_t>& strides);
// The inverse: a flat index over `sizes` (row-major) split into one expression per dimension.
std::vector<Expr> unflatten(const Expr& flat, const std::vector<int64_t>& sizes);

}  // namespace ls
