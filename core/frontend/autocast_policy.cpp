#include "frontend/autocast_policy.h"

#include <map>
#include <stdexcept>

#include "ops/op_table.h"

namespace ls {

namespace {

using P = CastPolicy;

// PyTorch's autocast op lists, one line per registration, as aten/src/ATen/autocast_mode.h's
// AT_FORALL_* macros (CUDA) and autocast_mode.cpp's TORCH_LIBRARY_IMPL(aten, AutocastCPU, m) give
// them. `KERNEL_CUDA(mm, ...)` registers aten::mm, the default overload; `KERNEL_CPU(conv1d,
// padding, ...)` the overload aten::conv1d.padding: the names here are the registered overloads.
// Ops called inside a region that no line names run in their inputs' types.
const std::vector<AutocastEntry>& table() {
  static const std::vector<AutocastEntry> t = [] {
    std::vector<AutocastEntry> v;
    auto add = [&](const char* device, P p, std::initializer_list<const char*> ops) {
      for (const char* op : ops) v.push_back({device, op, p});
    };
    // ---- CUDA (DispatchKey::Autocast) ----
    // AT_FORALL_LOWER_PRECISION_FP, then cudnn_convolution(_transpose)
    add("cuda", P::lower_precision_fp,
        {"aten._convolution.deprecated", "aten._convolution.default", "aten.conv1d.default", "aten.conv2d.default",
         "aten.conv3d.default", "aten.conv_tbc.default", "aten.conv_transpose1d.default", "aten.conv_transpose2d.input",
         "aten.conv_transpose3d.input", "aten.convolution.default", "aten.prelu.default", "aten.addmm.default",
         "aten.addmv.default", "aten.addr.default", "aten.matmul.default", "aten.einsum.default", "aten.mm.default",
         "aten.mv.default", "aten.linalg_vecdot.default", "aten.linear.default", "aten.addbmm.default",
         "aten.baddbmm.default", "aten.bmm.default", "aten.chain_matmul.default", "aten.linalg_multi_dot.default",
         "aten._thnn_fused_lstm_cell.default", "aten._thnn_fused_gru_cell.default", "aten.lstm_cell.default",
         "aten.gru_cell.default", "aten.rnn_tanh_cell.default", "aten.rnn_relu_cell.default",
         "aten._scaled_dot_product_flash_attention.default", "aten.scaled_dot_product_attention.default",
         "aten.cudnn_convolution.default", "aten.cudnn_convolution_transpose.default"});
    // AT_FORALL_FP32
    add("cuda", P::fp32,
        {"aten.acos.default", "aten.asin.default", "aten.cosh.default", "aten.erfinv.default", "aten.exp.default",
         "aten.expm1.default", "aten.log.default", "aten.log10.default", "aten.log2.default", "aten.log1p.default",
         "aten.reciprocal.default", "aten.rsqrt.default", "aten.sinh.default", "aten.tan.default",
         "aten.pow.Tensor_Scalar", "aten.pow.Tensor_Tensor", "aten.pow.Scalar", "aten.softplus.default",
         "aten.layer_norm.default", "aten.native_layer_norm.default", "aten.group_norm.default",
         "aten.frobenius_norm.dim", "aten.nuclear_norm.default", "aten.nuclear_norm.dim",
         "aten.cosine_similarity.default", "aten.poisson_nll_loss.default", "aten.cosine_embedding_loss.default",
         "aten.nll_loss.default", "aten.nll_loss2d.default", "aten.hinge_embedding_loss.default", "aten.kl_div.default",
         "aten.l1_loss.default", "aten.smooth_l1_loss.default", "aten.huber_loss.default", "aten.mse_loss.default",
         "aten.margin_ranking_loss.default", "aten.multilabel_margin_loss.default", "aten.soft_margin_loss.default",
         "aten.triplet_margin_loss.default", "aten.multi_margin_loss.default",
         "aten.binary_cross_entropy_with_logits.default", "aten.dist.default", "aten.pdist.default",
         "aten.cdist.default", "aten.renorm.default", "aten.logsumexp.default", "aten.upsample_nearest1d.default",
         "aten._upsample_nearest_exact1d.default", "aten.upsample_nearest2d.default",
         "aten._upsample_nearest_exact2d.default", "aten.upsample_nearest3d.default",
         "aten._upsample_nearest_exact3d.default", "aten.upsample_linear1d.default",
         "aten.upsample_bilinear2d.default", "aten._upsample_bilinear2d_aa.default",
         "aten.upsample_trilinear3d.default", "aten.upsample_bicubic2d.default",
         "aten._upsample_bicubic2d_aa.default"});
    // AT_FORALL_FP32_SET_OPT_DTYPE
    add("cuda", P::fp32_set_opt_dtype,
        {"aten.prod.default", "aten.prod.dim_int", "aten.prod.dim_Dimname", "aten.softmax.int", "aten.softmax.Dimname",
         "aten.log_softmax.int", "aten.log_softmax.Dimname", "aten.cumprod.default", "aten.cumprod.dimname",
         "aten.cumsum.default", "aten.cumsum.dimname", "aten.linalg_vector_norm.default",
         "aten.linalg_matrix_norm.default", "aten.linalg_matrix_norm.str_ord", "aten.sum.default",
         "aten.sum.dim_IntList", "aten.sum.dim_DimnameList"});
    // AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE (the overloads taking a dtype: redispatch_target)
    add("cuda", P::fp32_append_dtype, {"aten.norm.Scalar", "aten.norm.ScalarOpt_dim", "aten.norm.names_ScalarOpt_dim"});
    // AT_FORALL_PROMOTE
    add("cuda", P::promote,
        {"aten.addcdiv.default", "aten.addcmul.default", "aten.atan2.default", "aten.bilinear.default",
         "aten.cross.default", "aten.dot.default", "aten.vdot.default", "aten.grid_sampler.default",
         "aten.index_put.default", "aten.tensordot.default", "aten.scatter_add.default"});
    add("cuda", P::banned, {"aten.binary_cross_entropy.default"});

    // ---- CPU (DispatchKey::AutocastCPU) ----
    add("cpu", P::lower_precision_fp,
        {"aten.conv1d.default", "aten.conv1d.padding", "aten.conv2d.default", "aten.conv2d.padding",
         "aten.conv3d.default", "aten.conv3d.padding", "aten.bmm.default", "aten.mm.default",
         "aten.linalg_vecdot.default", "aten.baddbmm.default", "aten.addmm.default", "aten._addmm_activation.default",
         "aten.addbmm.default", "aten.linear.default", "aten.mkldnn_reorder_linear_weight.default",
         "aten._convolution.deprecated", "aten.matmul.default", "aten.conv_tbc.default", "aten.mkldnn_rnn_layer.default",
         "aten.conv_transpose1d.default", "aten.conv_transpose2d.input", "aten.conv_transpose3d.input",
         "aten.prelu.default", "aten.scaled_dot_product_attention.default",
         "aten._native_multi_head_attention.default"});
    add("cpu", P::fp32,
        {"aten.avg_pool3d.default", "aten.binary_cross_entropy.default", "aten.grid_sampler.default",
         "aten.polar.default", "aten.prod.default", "aten.prod.dim_int", "aten.prod.dim_Dimname",
         "aten.quantile.default", "aten.quantile.scalar", "aten.nanquantile.default", "aten.nanquantile.scalar",
         "aten.stft.default", "aten.stft.center", "aten.cdist.default", "aten.grid_sampler_2d.default",
         "aten._grid_sampler_2d_cpu_fallback.default", "aten.grid_sampler_3d.default", "aten.trace.default",
         "aten.view_as_complex.default", "aten.cholesky.default", "aten.cholesky_inverse.default",
         "aten.cholesky_solve.default", "aten.inverse.default", "aten.lu_solve.default", "aten.orgqr.default",
         "aten.ormqr.default", "aten.pinverse.default", "aten.max_pool3d.default", "aten.max_unpool2d.default",
         "aten.max_unpool3d.default", "aten.adaptive_avg_pool3d.default", "aten.reflection_pad1d.default",
         "aten.reflection_pad2d.default", "aten.replication_pad1d.default", "aten.replication_pad2d.default",
         "aten.replication_pad3d.default", "aten.mse_loss.default", "aten.cosine_embedding_loss.default",
         "aten.nll_loss.default", "aten.nll_loss2d.default", "aten.hinge_embedding_loss.default",
         "aten.poisson_nll_loss.default", "aten.smooth_l1_loss.default", "aten.cross_entropy_loss.default",
         "aten.l1_loss.default", "aten.huber_loss.default", "aten.margin_ranking_loss.default",
         "aten.soft_margin_loss.default", "aten.triplet_margin_loss.default", "aten.multi_margin_loss.default",
         "aten.ctc_loss.IntList", "aten.ctc_loss.Tensor", "aten.kl_div.default", "aten.multilabel_margin_loss.default",
         "aten.binary_cross_entropy_with_logits.default", "aten.fft_fft.default", "aten.fft_ifft.default",
         "aten.fft_fft2.default", "aten.fft_ifft2.default", "aten.fft_fftn.default", "aten.fft_ifftn.default",
         "aten.fft_rfft.default", "aten.fft_irfft.default", "aten.fft_rfft2.default", "aten.fft_irfft2.default",
         "aten.fft_rfftn.default", "aten.fft_irfftn.default", "aten.fft_hfft.default", "aten.fft_ihfft.default",
         "aten.linalg_cond.default", "aten.linalg_cond.p_str", "aten.linalg_matrix_rank.default",
         "aten.linalg_matrix_rank.tol_tensor", "aten.linalg_matrix_rank.atol_rtol_tensor",
         "aten.linalg_matrix_rank.atol_rtol_float", "aten.linalg_solve.default", "aten.linalg_cholesky.default",
         "aten.linalg_svdvals.default", "aten.linalg_eigvals.default", "aten.linalg_eigvalsh.default",
         "aten.linalg_inv.default", "aten.linalg_householder_product.default", "aten.linalg_tensorinv.default",
         "aten.linalg_tensorsolve.default", "aten.fake_quantize_per_tensor_affine.default", "aten.geqrf.default",
         "aten._lu_with_info.default", "aten.qr.default", "aten.svd.default", "aten.triangular_solve.default",
         "aten.fractional_max_pool2d.default", "aten.fractional_max_pool3d.default",
         "aten.adaptive_max_pool3d.default", "aten.multilabel_margin_loss_forward.default", "aten.linalg_qr.default",
         "aten.linalg_cholesky_ex.default", "aten.linalg_svd.default", "aten.linalg_eig.default",
         "aten.linalg_eigh.default", "aten.linalg_lstsq.default", "aten.linalg_inv_ex.default"});
    add("cpu", P::promote, {"aten.stack.default", "aten.cat.default", "aten.index_copy.default", "aten.index_copy.dimname"});
    return v;
  }();
  return t;
}

// fp32_append_dtype: the overload each one redispatches to, with the dtype appended.
const char* redispatch_target(std::string_view op) {
  if (op == "aten.norm.Scalar") return "aten.norm.ScalarOpt_dtype";
  if (op == "aten.norm.ScalarOpt_dim") return "aten.norm.ScalarOpt_dim_dtype";
  if (op == "aten.norm.names_ScalarOpt_dim") return "aten.norm.names_ScalarOpt_dim_dtype";
  return nullptr;
}

// at::autocast::is_eligible: a floating tensor other than float64.
bool eligible(DType t) { return t == DType::f32 || t == DType::bf16 || t == DType::f16; }

Arg dtype_arg(DType t) { return Arg::of_string(std::string(dtype_torch(t))); }

}  // namespace

std::string_view cast_policy_name(CastPolicy p) {
  switch (p) {
    case P::lower_precision_fp: return "lower_precision_fp";
    case P::fp32: return "fp32";
    case P::fp32_set_opt_dtype: return "fp32_set_opt_dtype";
    case P::fp32_append_dtype: return "fp32_append_dtype";
    case P::promote: return "promote";
    case P::banned: return "banned";
  }
  return "?";
}

const std::vector<AutocastEntry>& autocast_table() { return table(); }

AutocastState autocast_state(const std::string& device, std::optional<DType> dtype, bool enabled) {
  if (device != "cuda" && device != "cpu")
    throw std::invalid_argument("torch.autocast: device_type '" + device + "' is not supported here (cuda and cpu are)");
  AutocastState s;
  s.device = device;
  s.dtype = dtype ? *dtype : (device == "cuda" ? DType::f16 : DType::bf16);
  s.enabled = enabled;
  // torch/amp/autocast_mode.py: CPU autocast supports bfloat16 and float16; any other dtype
  // disables it (with a warning).
  if (device == "cpu" && !dtype_is_half(s.dtype)) s.enabled = false;
  if (!dtype_is_float(s.dtype)) throw std::invalid_argument("torch.autocast: dtype " + std::string(dtype_torch(s.dtype)) + " is not a floating type");
  return s;
}

std::optional<CastPolicy> autocast_policy(std::string_view device, std::string_view op_name) {
  static const std::map<std::pair<std::string, std::string>, CastPolicy> by_name = [] {
    std::map<std::pair<std::string, std::string>, CastPolicy> m;
    for (const AutocastEntry& e : table()) m[{e.device, e.op}] = e.policy;
    return m;
  }();
  auto it = by_name.find({std::string(device), std::string(op_name)});
  if (it == by_name.end()) return std::nullopt;
  return it->second;
}

AutocastCall apply_autocast(const Graph& g, const AutocastState& s, const OpDef& op, std::vector<Arg> args,
                            const std::function<int(int, DType)>& cast) {
  AutocastCall call{&op, std::move(args)};
  if (!s.enabled) return call;
  const auto policy = autocast_policy(s.device, op.name);
  if (!policy) return call;
  auto dtype_of = [&](const Arg& a) { return g.nodes.at(static_cast<size_t>(a.node)).meta().dtype; };
  // cached_cast on every tensor argument (lists and optional tensors included).
  auto cast_all = [&](DType to) {
    std::function<void(Arg&)> one = [&](Arg& a) {
      if (a.is_node()) {
        const DType t = dtype_of(a);
        if (eligible(t) && t != to) a = Arg::of_node(cast(a.node, to));
      } else if (a.kind == Arg::Kind::list) {
        for (Arg& x : a.list) one(x);
      }
    };
    for (Arg& a : call.args) one(a);
  };
  const bool first_eligible = !call.args.empty() && call.args[0].is_node() && eligible(dtype_of(call.args[0]));
  switch (*policy) {
    case P::banned:
      throw std::invalid_argument(op.name + " is unsafe to autocast (PyTorch refuses it under torch.autocast('" + s.device +
                                  "')): use binary_cross_entropy_with_logits");
    case P::lower_precision_fp: cast_all(s.dtype); break;
    case P::fp32: cast_all(DType::f32); break;
    case P::fp32_set_opt_dtype:
      // If the first input is eligible, an unset dtype becomes float32 (a dtype the call gives is
      // kept). The input is also converted here: op(x, dtype=float32) computes op(x.to(float32))
      // in PyTorch (softmax, sum, cumsum convert first; softmax's half_to_float reads the same
      // values), and it spares the ops that take the dtype but compute in their input's type
      // (the table's softmax.int) from getting a half input.
      if (first_eligible)
        for (size_t i = 0; i < op.params.size() && i < call.args.size(); ++i)
          if (op.params[i].name == "dtype" && call.args[i].is_none()) {
            call.args[i] = dtype_arg(DType::f32);
            if (dtype_of(call.args[0]) != DType::f32) call.args[0] = Arg::of_node(cast(call.args[0].node, DType::f32));
          }
      break;
    case P::fp32_append_dtype: {
      const OpDef* target = find_op(redispatch_target(op.name));
      if (!target) break;  // the overload with a dtype is not in the table: left as called
      const DType out = first_eligible ? DType::f32 : dtype_of(call.args[0]);
      call.args = bind_args(*target, call.args, {{"dtype", dtype_arg(out)}});
      call.op = target;
      break;
    }
    case P::promote: {
      // at::autocast::promote_type: start from the lower precision type; float32 wins; float64
      // inputs are ignored; another half type is an error.
      DType to = s.dtype;
      std::function<void(const Arg&)> see = [&](const Arg& a) {
        if (a.is_node()) {
          const DType t = dtype_of(a);
          if (!dtype_is_float(t) || t == DType::f64) return;
          if (to == DType::f32 || t == DType::f32) to = DType::f32;
          else if (t != s.dtype || to != s.dtype)
            throw std::invalid_argument(op.name + " under autocast mixes " + std::string(dtype_torch(t)) + " with " +
                                        std::string(dtype_torch(s.dtype)) + " (PyTorch: Unexpected floating ScalarType in at::autocast::prioritize)");
        } else if (a.kind == Arg::Kind::list) {
          for (const Arg& x : a.list) see(x);
        }
      };
      for (const Arg& a : call.args) see(a);
      cast_all(to);
      break;
    }
  }
  return call;
}

}  // namespace ls
