#include "loop/dependencies.h"

namespace ls {
namespace {

class RecordingHandler : public OpsHandler {
 public:
  Dependencies deps;
  V load(const std::string& b, const Expr& i) override {
    for (const MemDep& d : deps.reads)
      if (d.buffer == b && d.index == i) return V{};
    deps.reads.push_back({b, i});
    return V{};
  }
  V constant(double, DType) override { return V{}; }
  V index_expr(const Expr&, DType) override { return V{}; }
  V math(Math, const std::vector<V>&, DType) override { return V{}; }
  Expr indirect(V, int64_t size, bool) override { return Expr::indirect(Expr::kIndirectPrefix + std::to_string(indirect_++), size); }
  V reduction(Reduce, DType, V) override { return V{}; }
  V arg_reduction(Reduce, DType, V, V) override { return V{}; }
  void store(const std::string& b, const Expr& i, V) override { deps.writes.push_back({b, i}); }
  void store_reduction(const std::string& b, const Expr& i, V) override { deps.writes.push_back({b, i}); }
  // A scatter reads the buffer it stores into as well: it keeps (or adds to) what the node that
  // filled it wrote, so it depends on that node.
  void scatter_store(const std::string& b, const Expr& i, V v, StoreMode, DType) override {
    load(b, i);
    store(b, i, v);
  }

 private:
  int indirect_ = 0;
};

}  // namespace

Dependencies extract_dependencies(const LoopNode& n, const std::vector<Expr>& idx, const std::vector<Expr>& ridx) {
  RecordingHandler h;
  n.run(h, idx, ridx);
  return h.deps;
}

Dependencies extract_dependencies(const LoopNode& n) { return extract_dependencies(n, n.default_vars(), n.default_rvars()); }

}  // namespace ls
