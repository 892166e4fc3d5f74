// Attention on cuDNN's fused flash attention (the graph API), as PyTorch's scaled_dot_product_attention
// runs on the H100 in bf16/f16: the operation graphs below are the ones cuDNN's frontend builds for
// its SDPA nodes (cudnn_frontend's scaled_dot_product_flash_attention.h: matmul, scale, causal
// mask as generated indices and a select, softmax as max/sub/exp/sum with the log-sum-exp saved,
// matmul; the backward recomputes P from the saved log-sum-exp), which cuDNN's engines recognise
// and run as one fused kernel. Built through the backend descriptors directly (no frontend).
// SPDX-License-Identifier: GPL-3.0-or-later
#include <algorithm>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/cudnn.h"
#include "cuda/cudnn_api.h"

namespace ls {
namespace {

// cudnn_graph.h's values (checked against the header where it is at hand).
constexpr int kPointwiseDesc = 0, kPointwiseOp = 13, kMatmulDesc = 18, kMatmulOp = 19, kReductionDesc = 21, kReductionOp = 22,
              kReshapeOp = 31;  // cudnnBackendDescriptorType_t
constexpr int kTypeBoolean = 2, kTypePointwiseMode = 14, kTypeReductionOp = 18, kTypeReordering = 20;  // cudnnBackendAttributeType_t
constexpr int kAttrPwMode = 0, kAttrPwPrec = 1, kAttrPwAxis = 9, kAttrPwOpDesc = 750, kAttrPwX = 751, kAttrPwB = 752, kAttrPwY = 753,
              kAttrPwT = 758, kAttrTensorVirtual = 907, kAttrTensorByValue = 908, kAttrTensorReordering = 909, kAttrMatmulComp = 1500,
              kAttrMatmulA = 1520, kAttrMatmulB = 1521, kAttrMatmulC = 1522, kAttrMatmulDesc = 1523, kAttrReduceOp = 1600,
              kAttrReduceComp = 1601, kAttrReduceX = 1610, kAttrReduceY = 1611, kAttrReduceDesc = 1612, kAttrReshapeX = 2200,
              kAttrReshapeY = 2201;  // cudnnBackendAttributeName_t
constexpr int kAdd = 0, kMul = 1, kDiv = 6, kSub = 9, kExp = 13, kLog = 15, kIdentity = 21, kCmpGe = 303, kGenIndex = 501,
              kBinarySelect = 601;  // cudnnPointwiseMode_t
constexpr int kReduceAdd = 0, kReduceMax = 3;  // cudnnReduceTensorOp_t
constexpr int kInt32 = 4, kBoolean = 11;       // cudnnDataType_t
constexpr int kReorderF16x16 = 2;              // cudnnBackendTensorReordering_t
constexpr int kHeurA = 3;                      // CUDNN_HEUR_MODE_A, the frontend's choice for attention

#ifdef LOWERSCOPE_CHECK_CUDNN_HEADER
static_assert(kPointwiseOp == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR && kMatmulOp == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR &&
              kReductionOp == CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR && kReshapeOp == CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR &&
              kMatmulDesc == CUDNN_BACKEND_MATMUL_DESCRIPTOR && kReductionDesc == CUDNN_BACKEND_REDUCTION_DESCRIPTOR &&
              kPointwiseDesc == CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
static_assert(kTypeBoolean == CUDNN_TYPE_BOOLEAN && kTypePointwiseMode == CUDNN_TYPE_POINTWISE_MODE &&
              kTypeReductionOp == CUDNN_TYPE_REDUCTION_OPERATOR_TYPE && kTypeReordering == CUDNN_TYPE_TENSOR_REORDERING_MODE);
static_assert(kAttrPwAxis == CUDNN_ATTR_POINTWISE_AXIS && kAttrPwT == CUDNN_ATTR_OPERATION_POINTWISE_TDESC &&
              kAttrTensorReordering == CUDNN_ATTR_TENSOR_REORDERING_MODE && kAttrMatmulDesc == CUDNN_ATTR_OPERATION_MATMUL_DESC &&
              kAttrReduceDesc == CUDNN_ATTR_OPERATION_REDUCTION_DESC && kAttrReshapeY == CUDNN_ATTR_OPERATION_RESHAPE_YDESC &&
              kAttrTensorByValue == CUDNN_ATTR_TENSOR_IS_BY_VALUE && kAttrReduceComp == CUDNN_ATTR_REDUCTION_COMP_TYPE);
static_assert(kDiv == CUDNN_POINTWISE_DIV && kSub == CUDNN_POINTWISE_SUB && kExp == CUDNN_POINTWISE_EXP && kLog == CUDNN_POINTWISE_LOG &&
              kIdentity == CUDNN_POINTWISE_IDENTITY && kCmpGe == CUDNN_POINTWISE_CMP_GE && kGenIndex == CUDNN_POINTWISE_GEN_INDEX &&
              kBinarySelect == CUDNN_POINTWISE_BINARY_SELECT && kReduceMax == CUDNN_REDUCE_TENSOR_MAX && kInt32 == CUDNN_DATA_INT32 &&
              kBoolean == CUDNN_DATA_BOOLEAN && kReorderF16x16 == CUDNN_TENSOR_REORDERING_F16x16 && kHeurA == CUDNN_HEUR_MODE_A);
#endif

using Dims = std::vector<int64_t>;

// Tensor ids of the variant pack: the operands, then the by-value scalars.
enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV, kDQAccum, kScale = 20, kNegInf, kOne };

// An operation graph under construction: every descriptor belongs to the plan (destroyed with
// it); the first failure is kept and every later step does nothing.
class OpGraphBuilder {
 public:
  OpGraphBuilder(Cudnn::Api& a, Cudnn::Plan& p) : a_(a), p_(p) {}
  std::string error;
  std::vector<void*> ops;

  // A tensor of the variant pack (uid > 0), or a virtual one (uid 0: an id of its own).
  void* tensor(int dtype, const Dims& dims, const Dims& strides, int64_t uid, int reorder = 0) {
    return make_tensor(dtype, dims, strides, uid, false, false, reorder);
  }
  void* virt(int dtype, const Dims& dims, const Dims& strides) { return make_tensor(dtype, dims, strides, next_++, true, false, 0); }
  void* scalar(int64_t uid) { return make_tensor(Cudnn::Api::kFloat, {1, 1, 1, 1}, {1, 1, 1, 1}, uid, false, true, 0); }

  // y = mode(x[, b][, t]) computed in `prec` (axis: GEN_INDEX's dimension).
  void pointwise(int mode, void* x, void* b, void* y, void* t = nullptr, int prec = Cudnn::Api::kFloat, int64_t axis = -1) {
    void* d = make(kPointwiseDesc);
    if (!d) return;
    set(d, kAttrPwMode, kTypePointwiseMode, 1, &mode);
    set(d, kAttrPwPrec, Cudnn::Api::kTypeDataType, 1, &prec);
    if (axis >= 0) set(d, kAttrPwAxis, Cudnn::Api::kTypeInt64, 1, &axis);
    finalize(d, "pointwise");
    void* op = make(kPointwiseOp);
    if (!op) return;
    set(op, kAttrPwOpDesc, Cudnn::Api::kTypeDescriptor, 1, &d);
    set(op, kAttrPwX, Cudnn::Api::kTypeDescriptor, 1, &x);
    if (b) set(op, kAttrPwB, Cudnn::Api::kTypeDescriptor, 1, &b);
    if (t) set(op, kAttrPwT, Cudnn::Api::kTypeDescriptor, 1, &t);
    set(op, kAttrPwY, Cudnn::Api::kTypeDescriptor, 1, &y);
    add(op, "pointwise operation");
  }
  void matmul(void* A, void* B, void* C) {
    void* d = make(kMatmulDesc);
    if (!d) return;
    const int comp = Cudnn::Api::kFloat;
    set(d, kAttrMatmulComp, Cudnn::Api::kTypeDataType, 1, &comp);
    finalize(d, "matmul");
    void* op = make(kMatmulOp);
    if (!op) return;
    set(op, kAttrMatmulA, Cudnn::Api::kTypeDescriptor, 1, &A);
    set(op, kAttrMatmulB, Cudnn::Api::kTypeDescriptor, 1, &B);
    set(op, kAttrMatmulC, Cudnn::Api::kTypeDescriptor, 1, &C);
    set(op, kAttrMatmulDesc, Cudnn::Api::kTypeDescriptor, 1, &d);
    add(op, "matmul operation");
  }
  void reduction(int mode, void* x, void* y) {
    void* d = make(kReductionDesc);
    if (!d) return;
    const int comp = Cudnn::Api::kFloat;
    set(d, kAttrReduceOp, kTypeReductionOp, 1, &mode);
    set(d, kAttrReduceComp, Cudnn::Api::kTypeDataType, 1, &comp);
    finalize(d, "reduction");
    void* op = make(kReductionOp);
    if (!op) return;
    set(op, kAttrReduceX, Cudnn::Api::kTypeDescriptor, 1, &x);
    set(op, kAttrReduceY, Cudnn::Api::kTypeDescriptor, 1, &y);
    set(op, kAttrReduceDesc, Cudnn::Api::kTypeDescriptor, 1, &d);
    add(op, "reduction operation");
  }
  void reshape(void* x, void* y) {
    void* op = make(kReshapeOp);
    if (!op) return;
    set(op, kAttrReshapeX, Cudnn::Api::kTypeDescriptor, 1, &x);
    set(op, kAttrReshapeY, Cudnn::Api::kTypeDescriptor, 1, &y);
    add(op, "reshape operation");
  }
  // The finalized operation graph, or nullptr (error says why).
  void* graph(void* handle) {
    void* g = make(Cudnn::Api::kOperationGraphDesc);
    if (!g) return nullptr;
    set(g, Cudnn::Api::kAttrGraphOps, Cudnn::Api::kTypeDescriptor, static_cast<int64_t>(ops.size()), ops.data());
    set(g, Cudnn::Api::kAttrGraphHandle, Cudnn::Api::kTypeHandle, 1, &handle);
    finalize(g, "operation graph");
    return error.empty() ? g : nullptr;
  }

 private:
  void* make(int type) {
    if (!error.empty()) return nullptr;
    void* d = nullptr;
    if (const int r = a_.b_create(type, &d); r != 0) {
      error = "cudnnBackendCreateDescriptor (" + std::to_string(type) + ") failed: " + a_.error(r);
      return nullptr;
    }
    p_.owned.push_back(d);
    return d;
  }
  void set(void* d, int attr, int type, int64_t n, const void* v) {
    if (!error.empty()) return;
    if (const int r = a_.b_set(d, attr, type, n, v); r != 0) error = "cudnnBackendSetAttribute (" + std::to_string(attr) + ") failed: " + a_.error(r);
  }
  void finalize(void* d, const char* what) {
    if (!error.empty()) return;
    if (const int r = a_.b_finalize(d); r != 0) error = std::string("cudnnBackendFinalize (") + what + ") failed: " + a_.error(r);
  }
  void add(void* op, const char* what) {
    finalize(op, what);
    if (error.empty()) ops.push_back(op);
  }
  void* make_tensor(int dtype, const Dims& dims, const Dims& strides, int64_t uid, bool is_virtual, bool by_value, int reorder) {
    void* d = make(Cudnn::Api::kTensorDesc);
    if (!d) return nullptr;
    const int64_t align = 16;
    set(d, Cudnn::Api::kAttrTensorDataType, Cudnn::Api::kTypeDataType, 1, &dtype);
    set(d, Cudnn::Api::kAttrTensorDims, Cudnn::Api::kTypeInt64, static_cast<int64_t>(dims.size()), dims.data());
    set(d, Cudnn::Api::kAttrTensorStrides, Cudnn::Api::kTypeInt64, static_cast<int64_t>(strides.size()), strides.data());
    set(d, Cudnn::Api::kAttrTensorUid, Cudnn::Api::kTypeInt64, 1, &uid);
    set(d, Cudnn::Api::kAttrTensorAlignment, Cudnn::Api::kTypeInt64, 1, &align);
    if (is_virtual) set(d, kAttrTensorVirtual, kTypeBoolean, 1, &is_virtual);
    if (by_value) set(d, kAttrTensorByValue, kTypeBoolean, 1, &by_value);
    if (reorder) set(d, kAttrTensorReordering, kTypeReordering, 1, &reorder);
    finalize(d, "tensor");
    return error.empty() ? d : nullptr;
  }
  Cudnn::Api& a_;
  Cudnn::Plan& p_;
  int64_t next_ = 1000;
};

int half_type(DType t) { return t == DType::bf16 ? Cudnn::Api::kBfloat16 : t == DType::f16 ? Cudnn::Api::kHalf : -1; }

Dims strides_of(const std::array<int64_t, 4>& s) { return {s[0], s[1], s[2], s[3]}; }
Dims transposed(const std::array<int64_t, 4>& s) { return {s[0], s[1], s[3], s[2]}; }  // [.., rows, cols] read as [.., cols, rows]

// S = Q K^T * scale, causal-masked: the scores both graphs start from ([B, H, L, S], float32).
void* scores(OpGraphBuilder& g, const SdpaShape& s, void* q, void* kt, void* scale, void* neg_inf) {
  const Dims full{s.B, s.H, s.L, s.S}, fs{s.H * s.L * s.S, s.L * s.S, s.S, 1};
  void* qk = g.virt(Cudnn::Api::kFloat, full, fs);
  g.matmul(q, kt, qk);
  void* scaled = g.virt(Cudnn::Api::kFloat, full, fs);
  g.pointwise(kMul, qk, scale, scaled);
  if (!s.causal) return scaled;
  void* row = g.virt(kInt32, full, fs);
  g.pointwise(kGenIndex, scaled, nullptr, row, nullptr, kInt32, 2);
  void* col = g.virt(kInt32, full, fs);
  g.pointwise(kGenIndex, scaled, nullptr, col, nullptr, kInt32, 3);
  void* keep = g.virt(kBoolean, full, fs);
  g.pointwise(kCmpGe, row, col, keep, nullptr, kBoolean);
  void* masked = g.virt(Cudnn::Api::kFloat, full, fs);
  g.pointwise(kBinarySelect, scaled, neg_inf, masked, keep);
  return masked;
}

// The forward: O = softmax(S) V and the log-sum-exp max + log(sum exp(S - max)).
void forward_graph(OpGraphBuilder& g, const SdpaShape& s, int dt) {
  void* q = g.tensor(dt, {s.B, s.H, s.L, s.D}, strides_of(s.q), kQ);
  void* kt = g.tensor(dt, {s.B, s.Hk, s.D, s.S}, transposed(s.k), kK);
  void* v = g.tensor(dt, {s.B, s.Hk, s.S, s.D}, strides_of(s.v), kV);
  void* o = g.tensor(dt, {s.B, s.H, s.L, s.D}, strides_of(s.o), kO);
  const Dims rows{s.B, s.H, s.L, 1}, rs{s.H * s.L, s.L, 1, 1}, full{s.B, s.H, s.L, s.S}, fs{s.H * s.L * s.S, s.L * s.S, s.S, 1};
  void* stats = g.tensor(Cudnn::Api::kFloat, rows, rs, kStats);
  void* sc = scores(g, s, q, kt, g.scalar(kScale), s.causal ? g.scalar(kNegInf) : nullptr);
  void* mx = g.virt(Cudnn::Api::kFloat, rows, rs);
  g.reduction(kReduceMax, sc, mx);
  void* sub = g.virt(Cudnn::Api::kFloat, full, fs);
  g.pointwise(kSub, sc, mx, sub);
  void* e = g.virt(Cudnn::Api::kFloat, full, fs);
  g.pointwise(kExp, sub, nullptr, e);
  void* sum = g.virt(Cudnn::Api::kFloat, rows, rs);
  g.reduction(kReduceAdd, e, sum);
  void* logsum = g.virt(Cudnn::Api::kFloat, rows, rs);
  g.pointwise(kLog, sum, nullptr, logsum);
  g.pointwise(kAdd, mx, logsum, stats);
  void* p = g.virt(dt, full, fs);  // P in the operands' type, as the engine's second product takes it
  g.pointwise(kDiv, e, sum, p);
  g.matmul(p, v, o);
}

// The backward (FlashAttention-2's): P = exp(S - lse) again, dV = P^T dO, dP = dO V^T,
// dS = P (dP - rowsum(dO * O)) * scale, dK = dS^T Q, dQ = dS K (accumulated in float32 in the
// workspace, F16x16-reordered, then copied out). Grouped-query attention: dK and dV per query
// head, summed over each group.
void backward_graph(OpGraphBuilder& g, const SdpaShape& s, int dt) {
  const int F = Cudnn::Api::kFloat;
  const int64_t B = s.B, H = s.H, Hk = s.Hk, L = s.L, S = s.S, D = s.D;
  void* q = g.tensor(dt, {B, H, L, D}, strides_of(s.q), kQ);
  void* kt = g.tensor(dt, {B, Hk, D, S}, transposed(s.k), kK);
  void* vt = g.tensor(dt, {B, Hk, D, S}, transposed(s.v), kV);
  void* o = g.tensor(dt, {B, H, L, D}, strides_of(s.o), kO);
  void* dout = g.tensor(dt, {B, H, L, D}, strides_of(s.grad_out), kDO);
  const Dims rows{B, H, L, 1}, rs{H * L, L, 1, 1}, full{B, H, L, S}, fs{H * L * S, L * S, S, 1};
  void* stats = g.tensor(F, rows, rs, kStats);
  void* dq = g.tensor(dt, {B, H, L, D}, {H * L * D, L * D, D, 1}, kDQ);
  void* dk = g.tensor(dt, {B, Hk, S, D}, {Hk * S * D, S * D, D, 1}, kDK);
  void* dv = g.tensor(dt, {B, Hk, S, D}, {Hk * S * D, S * D, D, 1}, kDV);
  void* dq_accum = g.tensor(F, {B, H, L, D}, {H * L * D, L * D, D, 1}, kDQAccum, kReorderF16x16);
  void* scale = g.scalar(kScale);
  void* one = g.scalar(kOne);
  // softmax_sum = rowsum(dO * O)
  void* dout_o = g.virt(F, {B, H, L, D}, {H * L * D, L * D, H * D, 1});
  g.pointwise(kMul, dout, o, dout_o);
  void* rowsum = g.virt(F, rows, rs);
  g.reduction(kReduceAdd, dout_o, rowsum);
  void* softmax_sum = g.virt(F, rows, rs);
  g.pointwise(kMul, rowsum, one, softmax_sum);
  // P = exp(S - lse)
  void* sc = scores(g, s, q, kt, scale, s.causal ? g.scalar(kNegInf) : nullptr);
  void* centered = g.virt(F, full, fs);
  g.pointwise(kSub, sc, stats, centered);
  void* p = g.virt(F, full, fs);
  g.pointwise(kExp, centered, nullptr, p);
  // a key/value head's gradient: the product per query head, summed over each group (GQA)
  auto per_key_head = [&](void* a, void* b, void* grad) {
    if (H == Hk) return g.matmul(a, b, grad);
    void* heads = g.virt(dt, {B, H, S, D}, {H * S * D, S * D, D, 1});
    g.matmul(a, b, heads);
    g.reduction(kReduceAdd, heads, grad);
  };
  // dV = P^T dO
  void* pt = g.virt(dt, {B, H, S, L}, {H * L * S, L * S, 1, S});
  g.reshape(p, pt);
  per_key_head(pt, dout, dv);
  // dS = P (dP - softmax_sum) * scale, dP = dO V^T
  void* dp = g.virt(F, full, fs);
  g.matmul(dout, vt, dp);
  void* dp1 = g.virt(F, full, fs);
  g.pointwise(kMul, dp, one, dp1);
  void* dp2 = g.virt(F, full, fs);
  g.pointwise(kSub, dp1, softmax_sum, dp2);
  void* ds0 = g.virt(F, full, fs);
  g.pointwise(kMul, dp2, p, ds0);
  void* ds = g.virt(F, full, fs);
  g.pointwise(kMul, ds0, scale, ds);
  // dK = dS^T Q
  void* dst = g.virt(dt, {B, H, S, L}, {H * L * S, L * S, 1, S});
  g.reshape(ds, dst);
  per_key_head(dst, q, dk);
  // dQ = dS K
  void* k = g.virt(dt, {B, Hk, S, D}, strides_of(s.k));
  g.reshape(kt, k);
  g.matmul(ds, k, dq_accum);
  g.pointwise(kIdentity, dq_accum, nullptr, dq);
}

size_t dq_accum_bytes(const SdpaShape& s) { return static_cast<size_t>(s.B * s.H * s.L * s.D) * sizeof(float); }

}  // namespace

std::string sdpa_unsupported(const SdpaShape& s, DType t, bool backward, int version) {
  if (half_type(t) < 0) return "cuDNN attention here takes bfloat16 or float16";
  if (version < 90000) return "cuDNN " + std::to_string(version) + " is older than 9.0";
  if (s.Hk <= 0 || s.H % s.Hk != 0 || s.D % 8 != 0 || s.D > 128 || s.L < 1 || s.S < 1)
    return "cuDNN's flash attention takes head sizes of multiples of 8 up to 128, and query heads a multiple of the key heads";
  // cuDNN before 9.5.1 reads the output's gradient with the output's strides (PyTorch's
  // run_cudnn_SDP_bprop copies grad_output to the output's layout there): other strides would be
  // read wrongly, not refused.
  if (backward && version < 90501 && s.grad_out != s.o)
    return "cuDNN " + std::to_string(version) + " (before 9.5.1) takes the output's gradient only with the output's strides";
  return "";
}

Cudnn::Plan* Cudnn::find_sdpa(const SdpaShape& s, DType t, bool backward, std::string* why) {
  const auto key = std::make_tuple(s, static_cast<int>(t), backward);
  if (auto it = sdpa_plans_.find(key); it != sdpa_plans_.end()) return it->second.get();
  if (auto it = sdpa_refused_.find(key); it != sdpa_refused_.end()) {
    if (why) *why = it->second;
    return nullptr;
  }
  auto refuse = [&](const std::string& reason) -> Plan* {
    sdpa_refused_[key] = reason;
    if (why) *why = reason;
    return nullptr;
  };
  if (!api_->backend()) return refuse("this cuDNN has no graph API");
  if (const std::string no = sdpa_unsupported(s, t, backward, version); !no.empty()) return refuse(no);
  const int dt = half_type(t);
  auto p = std::make_unique<Plan>();
  p->api = api_.get();
  p->values = {s.scale, std::numeric_limits<float>::lowest(), 1.f};  // kScale, kNegInf, kOne
  OpGraphBuilder g(*api_, *p);
  if (backward) backward_graph(g, s, dt);
  else forward_graph(g, s, dt);
  void* graph = g.graph(handle_);
  if (!graph) return refuse("cuDNN refused the attention graph: " + g.error);
  std::string reason;
  if (!engine_plan(*p, graph, t, kHeurA, "attention", &reason)) return refuse(reason);
  if (backward) p->workspace = (p->workspace + 255) / 256 * 256 + dq_accum_bytes(s);  // the float32 dQ accumulator after the engine's own
  return sdpa_plans_.emplace(key, std::move(p)).first->second.get();
}

bool Cudnn::sdpa_plan(const SdpaShape& s, DType t, bool backward, size_t* workspace, std::string* text, std::string* why) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Plan* p = find_sdpa(s, t, backward, why);
  if (p && workspace) *workspace = p->workspace;
  if (p && text) *text = p->text;
  return p != nullptr;
}

void Cudnn::sdpa_forward(const SdpaShape& s, DType t, DevicePtr q, DevicePtr k, DevicePtr v, DevicePtr out, DevicePtr lse, DevicePtr workspace) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string why;
  Plan* p = find_sdpa(s, t, false, &why);
  if (!p) throw std::runtime_error(why);
  use_stream();
  auto ptr = [](DevicePtr d) { return reinterpret_cast<void*>(d); };
  std::vector<int64_t> uids{kQ, kK, kV, kO, kStats, kScale};
  std::vector<void*> ptrs{ptr(q), ptr(k), ptr(v), ptr(out), ptr(lse), &p->values[0]};
  if (s.causal) uids.push_back(kNegInf), ptrs.push_back(&p->values[1]);
  execute(*p, uids, ptrs, workspace);
}

void Cudnn::sdpa_backward(const SdpaShape& s, DType t, DevicePtr grad_out, DevicePtr q, DevicePtr k, DevicePtr v, DevicePtr out, DevicePtr lse,
                          DevicePtr dq, DevicePtr dk, DevicePtr dv, DevicePtr workspace) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string why;
  Plan* p = find_sdpa(s, t, true, &why);
  if (!p) throw std::runtime_error(why);
  use_stream();
  // The dQ accumulator lies past the engine's workspace and starts at zero each call.
  const size_t accum_bytes = dq_accum_bytes(s);
  const DevicePtr accum = workspace + (p->workspace - accum_bytes);
  CudaDriver::get()->zero_async(accum, accum_bytes);
  auto ptr = [](DevicePtr d) { return reinterpret_cast<void*>(d); };
  std::vector<int64_t> uids{kQ, kK, kV, kO, kDO, kStats, kDQ, kDK, kDV, kDQAccum, kScale, kOne};
  std::vector<void*> ptrs{ptr(q), ptr(k), ptr(v), ptr(out), ptr(grad_out), ptr(lse), ptr(dq), ptr(dk), ptr(dv), ptr(accum), &p->values[0], &p->values[2]};
  if (s.causal) uids.push_back(kNegInf), ptrs.push_back(&p->values[1]);
  execute(*p, uids, ptrs, workspace);
}

}  // namespace ls
