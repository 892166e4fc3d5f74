// The handler a define-by-run loop body calls. The same body, run under different handlers,
// prints itself, records its memory dependencies, interprets itself and emits C++.
#pragma once
#include <string>
#include <vector>

#include "tensor/dtype.h"
#include "ir/index.h"
#include "ops/math.h"

namespace ls {

// A value inside a loop body; what it stands for is up to the handler that made it.
struct V {
  int id = -1;
};

class OpsHandler {
 public:
  virtual ~OpsHandler() = default;
  virtual V load(const std::string& buffer, const Expr& index) = 0;
  virtual V constant(double value, DType dtype) = 0;
  // The value of an index expression over the loop variables (a position compared with a stored
  // index, as max-pool backward does), converted to dtype.
  virtual V index_expr(const Expr& e, DType dtype) = 0;
  virtual V math(Math m, const std::vector<V>& args, DType dtype) = 0;
  virtual V reduction(Reduce r, DType dtype, V value) = 0;
  virtual void store(const std::string& buffer, const Expr& index, V value) = 0;
  virtual void store_reduction(const std::string& buffer, const Expr& index, V value) = 0;
};

}  // namespace ls
