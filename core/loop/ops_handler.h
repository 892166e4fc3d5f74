// The handler a define-by-run loop body calls. The same body, run under different handlers,
// prints itself, records its memory dependencies, interprets itself and emits C++.
#pragma once
#include <string>
#include <vector>

#include "tensor/dtype.h"
#include "ir/index.h"
#include "ops/math.h"

namespace ls {

// How a scatter stores (Inductor's ops.store mode): `set` overwrites the element, `atomic_add`
// adds to it, atomically where iterations run in parallel (duplicate indices all count).
enum class StoreMode : uint8_t { set, atomic_add };

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
  // An index read from data (an element of an index tensor, integer valued) used in a load's
  // index: the returned expression (Expr::indirect) is that value, a negative one counted from
  // the end where `wrap` (aten.index; not gather), checked to lie in 0 .. size-1. Out of range,
  // the interpreter throws and generated code records the fault (the executor reports it, naming
  // the node, the value and the size) and reads element 0 instead of memory out of bounds.
  virtual Expr indirect(V index, int64_t size, bool wrap) = 0;
  virtual V reduction(Reduce r, DType dtype, V value) = 0;
  // An arg reduction (argmax, argmin): `value` (of value_dtype) at `index` (int64, its position
  // among the elements reduced together); the result is the index kept (ops/math.h: arg_keeps).
  virtual V arg_reduction(Reduce r, DType value_dtype, V value, V index) = 0;
  virtual void store(const std::string& buffer, const Expr& index, V value) = 0;
  virtual void store_reduction(const std::string& buffer, const Expr& index, V value) = 0;
  // A scatter's store (a LoopNode of Kind::scatter: scatter, scatter_add, index_put), into a
  // buffer an earlier node filled, at an index that may hold indirect indices: an index out of
  // range (recorded by `indirect`) skips the store, never writes element 0 or out of bounds. The
  // default reads and writes the element one iteration at a time (handlers that do not run in
  // parallel), and reads it also under `set`: whoever records memory accesses sees that the
  // node depends on what filled the buffer before it. `dtype` is the buffer's.
  virtual void scatter_store(const std::string& buffer, const Expr& index, V value, StoreMode mode, DType dtype) {
    const V old = load(buffer, index);
    store(buffer, index, mode == StoreMode::atomic_add ? math(Math::add, {old, value}, dtype) : value);
  }
};

}  // namespace ls
