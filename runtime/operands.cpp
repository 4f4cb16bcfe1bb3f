// runtime/operands.cpp — the operands of a GEMM or grouped GEMM run (operands.hpp): a, b and out, their
// scales, nvfp4's global scale and the grouped layouts' row vectors, then the kernel arguments.
// The DLPack tensor checks they share are in operands_tensor.cpp, the epilogue's vectors in
// operands_epilogue.cpp, quantize specs in operands_quantize.cpp.
#include "runtime/operands.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/plan/gemm_view.hpp"
#include "runtime/operands_internal.hpp"

namespace kiln {

using namespace operands_internal;

namespace {

using std::string;
using std::to_string;

// The scale of operand a or b per its spec. rows: M (a) or N (b); experts: b's leading dimension
// (-1 for none). x_as_b: wgrad's b is X, scaled like the forward's a (per token, 1x128 and 1x32 blocks
// along K over its M rows, masked: E * max_m) and passed in b's fields.
// rows_name: what a per-row (m / n) scale vector counts, when not the forward's M (a) or N (b).
Status check_operand_scale(const char* name, const DLTensor* t, const OperandSpec& op, bool is_a, int64_t rows,
                           int64_t k, int64_t experts, int device, CheckedOperands& c, bool x_as_b = false,
                           const char* rows_name = nullptr) {
  const Who n{name};
  const bool into_a = is_a && !x_as_b;
  const float** out = into_a ? &c.a_scale : &c.b_scale;
  if (op.scale == ScaleGranularity::kNone) {
    if (t != nullptr) {
      return InvalidArgument(n() + ": given, but the operand's format " + string(format_name(op.format)) +
                             " takes no scale");
    }
    return Status::Ok();
  }
  if (t == nullptr) {
    const string fmt = format_name(op.format);
    string what;
    switch (op.scale) {
      case ScaleGranularity::kTensor: what = "one f32 scale on the device (decode scale: x = q * s)"; break;
      case ScaleGranularity::kM: what = "f32 [M] per-token scales on the device"; break;
      case ScaleGranularity::kN: what = "f32 [N] per-channel scales on the device"; break;
      case ScaleGranularity::kBlock1x128: what = "[M, K/128] block scales on the device"; break;
      case ScaleGranularity::kBlock128x128: what = "[ceil(N/128), K/128] block scales on the device"; break;
      case ScaleGranularity::kBlock1x32: what = "E8M0 [rows, K/32] block scales on the device"; break;
      case ScaleGranularity::kBlock1x16: what = "UE4M3 [N, K/16] block scales on the device"; break;
      case ScaleGranularity::kNone: break;
    }
    return InvalidArgument(n() + ": missing; the spec's " + fmt + ":" + scale_granularity_name(op.scale) +
                           " needs " + what);
  }
  const int64_t batch = experts;  // -1: no expert dimension
  const int64_t per_expert = batch >= 0 ? batch : 1;
  switch (op.scale) {
    case ScaleGranularity::kTensor: {
      // Grouped weights: one tensor scale per expert.
      const int64_t count = is_a ? 1 : per_expert;
      KILN_ASSIGN_OR_RETURN(*out, check_f32_vector(n, t, count, device, [count] {
                              return count == 1 ? string("a tensor scale has exactly 1")
                                                : "grouped weights take one tensor scale per expert (" +
                                                      to_string(count) + ")";
                            }));
      if (!is_a && batch >= 0) c.b_scale_expert_stride = 1;
      return Status::Ok();
    }
    case ScaleGranularity::kM:
    case ScaleGranularity::kN: {
      const int64_t count = per_expert * rows;
      KILN_ASSIGN_OR_RETURN(*out, check_f32_vector(n, t, count, device, [is_a, count, batch, rows_name] {
                              if (rows_name != nullptr)
                                return string("a per-row scale vector has ") + to_string(count) + " (" + rows_name +
                                       (batch >= 0 ? " per expert" : "") + ")";
                              return string("a per-") + (is_a ? "token" : "channel") + " scale vector has " +
                                     to_string(count) + " (" + (is_a ? "M" : "N") +
                                     (batch >= 0 ? " per expert" : "") + ")";
                            }));
      if (!is_a) c.b_scale_expert_stride = rows;
      return Status::Ok();
    }
    default: break;
  }
  int64_t srows = rows, scols = 0;
  const char* meaning = "";  // kBlock1x32: the format's name goes in front
  switch (op.scale) {
    case ScaleGranularity::kBlock1x128:
      scols = k / 128;
      meaning = "one scale per row per 128 K";
      break;
    case ScaleGranularity::kBlock128x128:
      srows = (rows + 127) / 128;
      scols = k / 128;
      meaning = "one scale per 128 rows of W per 128 K";
      break;
    case ScaleGranularity::kBlock1x32:
      scols = k / 32;
      meaning = " E8M0 scales, one per row per 32 K";
      break;
    default:  // kBlock1x16
      scols = k / 16;
      meaning = "nvfp4 UE4M3 scales, one per row per 16 K";
      break;
  }
  const bool named = op.scale == ScaleGranularity::kBlock1x32;
  const Format format = op.format;
  KILN_ASSIGN_OR_RETURN(ScaleView v, check_scale_matrix(n, t, op.scale_type, batch, srows, scols, device, [=] {
                          return named ? format_name(format) + string(meaning) : string(meaning);
                        }));
  *out = v.data;
  (into_a ? c.lds_a : c.lds_b) = v.lds;
  if (!is_a) c.b_scale_expert_stride = batch >= 0 ? v.batch_stride : 0;
  return Status::Ok();
}

// The per-expert row vector of a grouped spec: offsets (layout=offsets) or counts (layout=masked), int32
// [E] on the device; the other one, or either for a dense spec, is refused.
Status check_group_vector(const KernelSpec& spec, const Operands& ops, CheckedOperands& c) {
  const bool offsets = spec.layout == GroupLayout::kOffsets;
  const bool masked = spec.layout == GroupLayout::kMasked;
  if (!offsets && ops.offsets != nullptr)
    return InvalidArgument("operand offsets: given, but the spec is not grouped_gemm[layout=offsets]");
  if (!masked && ops.counts != nullptr)
    return InvalidArgument("operand counts: given, but the spec is not grouped_gemm[layout=masked]");
  if (offsets) {
    if (ops.offsets == nullptr)
      return InvalidArgument("operand offsets: missing; layout=offsets needs an int32 [" + to_string(spec.experts) +
                             "] device tensor of cumulative row ends");
    KILN_ASSIGN_OR_RETURN(c.group_rows, check_group_rows(Who{"offsets"}, ops.offsets, spec.experts, c.device,
                                                         "cumulative row ends per expert"));
  }
  if (masked) {
    if (ops.counts == nullptr)
      return InvalidArgument("operand counts: missing; layout=masked needs an int32 [" + to_string(spec.experts) +
                             "] device tensor of rows per expert");
    KILN_ASSIGN_OR_RETURN(c.group_rows, check_group_rows(Who{"counts"}, ops.counts, spec.experts, c.device,
                                                         "rows per expert"));
  }
  c.experts = spec.op == Op::kGroupedGemm ? spec.experts : 0;
  return Status::Ok();
}

// Quantized wgrad's operands: a = dYᵀ [N, M], b = Xᵀ [K, M] (quantized along M in 1x128 blocks: scales
// [N, M/128], [K, M/128]), out = dW [N, K]. Grouped: the grouped quantizer's padded copies [N, W], [K, W]
// (each expert's tokens from a 128-column boundary, W >= 128 * (ceil(M / 128) + E)), the row vector the
// quantizer read, and dW [E, N, K].
Status check_columnwise_operands(const KernelSpec& spec, const ProblemSizes& sizes, const Operands& ops,
                                 const std::vector<EpilogueOperand>& epilogue, CheckedOperands& c) {
  const bool grouped = spec.op == Op::kGroupedGemm;
  const char* copy = grouped ? "; a grouped quantized wgrad takes dY's padded column-wise copy [N, W] "
                               "(quantize[experts=E,layout=...] ... transpose=true)"
                             : "; a quantized wgrad takes dY's column-wise copy [N, M] (quantize ... transpose=true)";
  if (ops.a == nullptr || ops.a->ndim != 2)
    return InvalidArgument("operand a: " + (ops.a == nullptr ? string("missing") : to_string(ops.a->ndim) + "-D") +
                           copy);
  const int64_t m = ops.a->shape[1];
  const char* cols_a = grouped ? "W (dY's padded column-wise copy)" : "M (dY's column-wise copy)";
  const char* cols_b = grouped ? "W (X's padded column-wise copy)" : "M (X's column-wise copy)";
  KILN_ASSIGN_OR_RETURN(Mat a, check_matrix("a", ops.a, spec.a.format, -1, sizes.n, m, "N", cols_a));
  KILN_ASSIGN_OR_RETURN(Mat b, check_matrix("b", ops.b, spec.b.format, -1, sizes.k, m, "K", cols_b));
  if (m > INT32_MAX) return InvalidArgument("operand a: M = " + to_string(m) + " exceeds 2^31 - 1");
  const int block = spec.a.scale == ScaleGranularity::kBlock1x128 || spec.b.scale == ScaleGranularity::kBlock1x128 ? 128
                    : spec.a.scale == ScaleGranularity::kBlock1x32                                                   ? 32
                                                                                                                     : 1;
  if (m % block != 0)
    return InvalidArgument("operands a, b: " + string(grouped ? "W=" : "M=") + to_string(m) +
                           " columns is not a multiple of " + to_string(block) + "; the column-wise copies hold 1x" +
                           to_string(block) + " blocks along the tokens (quantize ... transpose=true writes whole "
                           "blocks: pad the tokens with zero rows)");
  c.device = ops.a->device.device_id;
  c.m = m;
  c.a = a.data;
  c.lda = a.ld;
  c.b = b.data;
  c.ldb = b.ld;
  KILN_ASSIGN_OR_RETURN(Mat o, check_matrix("out", ops.out, spec.out.format, grouped ? spec.experts : -1, sizes.n,
                                            sizes.k, "N", "K", /*vector_rows=*/false));
  if (grouped && o.batch_stride != o.rows * o.ld)
    return InvalidArgument("operand out: expert stride " + to_string(o.batch_stride) +
                           " elements; grouped wgrad writes dW [E, N, K] with the experts' rows contiguous "
                           "(stride(0) = N * stride(1) = " +
                           to_string(o.rows * o.ld) + ")");
  c.ldc = o.ld;
  c.out = const_cast<void*>(o.data);
  if (ops.b->device.device_id != c.device || ops.out->device.device_id != c.device)
    return InvalidArgument("operands a, b and out must be on one device; found devices " + to_string(c.device) +
                           ", " + to_string(ops.b->device.device_id) + ", " + to_string(ops.out->device.device_id));
  KILN_RETURN_IF_ERROR(check_operand_scale("a_scale", ops.a_scale, spec.a, true, sizes.n, m, -1, c.device, c,
                                           /*x_as_b=*/false, "N: one per row of dYᵀ, i.e. per column of dY"));
  KILN_RETURN_IF_ERROR(check_operand_scale("b_scale", ops.b_scale, spec.b, true, sizes.k, m, -1, c.device, c,
                                           /*x_as_b=*/true, "K: one per row of Xᵀ, i.e. per column of X"));
  // The kernel's producer addresses E8M0 column scales with 32-bit offsets (templates/kernels/sm90/producer.cuh).
  if (spec.b.scale == ScaleGranularity::kBlock1x128 && spec.b.scale_type == ScaleType::kUe8m0 &&
      sizes.k * c.lds_b > INT32_MAX)
    return InvalidArgument("operand b_scale: K = " + to_string(sizes.k) + " rows of " + to_string(c.lds_b) +
                           " E8M0 bytes span more than 2^31 - 1 bytes; split the tokens into smaller wgrad runs "
                           "(accumulate=true sums them)");
  if (ops.b_global != nullptr) return InvalidArgument("operand b_global: given, but only nvfp4 weights take one");
  KILN_RETURN_IF_ERROR(check_group_vector(spec, ops, c));
  return check_epilogue_operands(spec, epilogue, ops, sizes.k, c);
}

}  // namespace

int64_t output_columns(const KernelSpec& spec, int64_t n) { return spec.gate_up != GateUp::kNone ? n / 2 : n; }

StatusOr<CheckedOperands> check_operands(const KernelSpec& spec, const ProblemSizes& sizes, const Operands& ops) {
  KILN_ASSIGN_OR_RETURN(std::optional<EpilogueProgram> program, spec_epilogue_program(spec));
  return check_operands(spec, sizes, ops, program ? program->operands : std::vector<EpilogueOperand>{});
}

StatusOr<CheckedOperands> check_operands(const KernelSpec& spec, const ProblemSizes& sizes, const Operands& ops,
                                         const std::vector<EpilogueOperand>& epilogue) {
  CheckedOperands c;
  KILN_RETURN_IF_ERROR(check_operands(spec, sizes, ops, epilogue, c));
  return c;
}

Status check_operands(const KernelSpec& spec, const ProblemSizes& sizes, const Operands& ops,
                      const std::vector<EpilogueOperand>& epilogue, CheckedOperands& c) {
  c = CheckedOperands{};
  const bool grouped = spec.op == Op::kGroupedGemm;
  const bool masked = spec.layout == GroupLayout::kMasked;
  const int64_t experts = grouped ? spec.experts : -1;

  c.pass = spec.pass;
  const bool wgrad = spec.pass == Pass::kWgrad;
  const bool fprop = spec.pass == Pass::kFprop;
  // Quantized wgrad (compiler/plan/gemm_view.hpp): a = dYᵀ [N, M] and b = Xᵀ [K, M], the column-wise copies
  // `quantize ... transpose=true` writes; M (the reduction) is their row length.
  if (wgrad_reads_columnwise(spec)) return check_columnwise_operands(spec, sizes, ops, epilogue, c);
  // a: [M, K] (backward: dY [M, N]); masked: [E, max_m, ...].
  KILN_ASSIGN_OR_RETURN(Mat a, check_matrix("a", ops.a, spec.a.format, masked ? experts : -1, -1,
                                            fprop ? sizes.k : sizes.n, masked ? "max_m" : "M", fprop ? "K" : "N"));
  c.device = ops.a->device.device_id;
  if (masked) {
    if (a.batch_stride != a.rows * a.ld && a.rows > 0)
      return InvalidArgument("operand a: expert stride " + to_string(a.batch_stride) +
                             " elements; the masked layout needs the experts' rows contiguous (stride(0) = max_m * "
                             "stride(1) = " +
                             to_string(a.rows * a.ld) + ")");
    c.max_m = static_cast<int>(std::min<int64_t>(a.rows, INT32_MAX));
    c.m = a.rows * spec.experts;
  } else {
    c.m = a.rows;
  }
  c.lda = a.ld;
  c.a = a.data;
  if (c.m > INT32_MAX) return InvalidArgument("operand a: M = " + to_string(c.m) + " exceeds 2^31 - 1");

  // b: [N, K]; grouped: [E, N, K]. wgrad: X [M, K], the same rows as a (masked: [E, max_m, K]).
  // MXFP8 dgrad (dgrad_reads_w_copy): b = W's column-wise copy [K, N] (grouped [E, K, N]), blocks along N.
  const bool w_copy = dgrad_reads_w_copy(spec);
  KILN_ASSIGN_OR_RETURN(Mat b, w_copy   ? check_matrix("b", ops.b, spec.b.format, experts, sizes.k, sizes.n, "K",
                                                       "N (W's column-wise copy [K, N])")
                               : !wgrad ? check_matrix("b", ops.b, spec.b.format, experts, sizes.n, sizes.k, "N", "K")
                               : masked ? check_matrix("b", ops.b, spec.b.format, experts, a.rows, sizes.k, "max_m", "K")
                                        : check_matrix("b", ops.b, spec.b.format, -1, c.m, sizes.k, "M", "K"));
  if (wgrad && masked && a.rows > 0 && b.batch_stride != b.rows * b.ld)
    return InvalidArgument("operand b: expert stride " + to_string(b.batch_stride) +
                           " elements; the masked layout needs the experts' rows contiguous (stride(0) = max_m * "
                           "stride(1) = " +
                           to_string(b.rows * b.ld) + ")");
  c.ldb = b.ld;
  c.b = b.data;
  c.b_expert_stride = grouped && !wgrad ? b.batch_stride : 0;

  // out: [M, N]; masked: [E, max_m, N]; N / 2 columns for a gate|up GLU. dgrad: dX [M, K]; wgrad: dW [N, K].
  const int64_t n_out = fprop ? output_columns(spec, sizes.n) : sizes.k;
  // Grouped wgrad: dW [E, N, K], the experts' rows contiguous.
  KILN_ASSIGN_OR_RETURN(Mat o, wgrad ? check_matrix("out", ops.out, spec.out.format, grouped ? experts : -1, sizes.n,
                                                    sizes.k, "N", "K", /*vector_rows=*/false)
                                     : check_matrix("out", ops.out, spec.out.format, masked ? experts : -1,
                                                    masked ? a.rows : c.m, n_out, masked ? "max_m" : "M",
                                                    !fprop                           ? "K"
                                                    : spec.gate_up != GateUp::kNone ? "N/2 (gate_up)"
                                                                                    : "N",
                                                    /*vector_rows=*/false));
  if (wgrad && grouped && o.batch_stride != o.rows * o.ld)
    return InvalidArgument("operand out: expert stride " + to_string(o.batch_stride) +
                           " elements; grouped wgrad writes dW [E, N, K] with the experts' rows contiguous "
                           "(stride(0) = N * stride(1) = " +
                           to_string(o.rows * o.ld) + ")");
  if (!wgrad && masked && a.rows > 0 && o.batch_stride != o.rows * o.ld)
    return InvalidArgument("operand out: expert stride " + to_string(o.batch_stride) +
                           " elements; the masked layout needs the experts' rows contiguous (stride(0) = max_m * "
                           "stride(1) = " +
                           to_string(o.rows * o.ld) + ")");
  c.ldc = o.ld;
  c.out = const_cast<void*>(o.data);
  if (ops.b->device.device_id != c.device || ops.out->device.device_id != c.device) {
    return InvalidArgument("operands a, b and out must be on one device; found devices " + to_string(c.device) +
                           ", " + to_string(ops.b->device.device_id) + ", " + to_string(ops.out->device.device_id));
  }

  // a's scales run along its rows: K (X), or N (dY of a quantized dgrad, quantized along N).
  KILN_RETURN_IF_ERROR(
      check_operand_scale("a_scale", ops.a_scale, spec.a, true, c.m, fprop ? sizes.k : sizes.n, -1, c.device, c));
  if (wgrad) {  // X's scales: over its M rows (masked: E * max_m) like the forward's a
    KILN_RETURN_IF_ERROR(
        check_operand_scale("b_scale", ops.b_scale, spec.b, true, c.m, sizes.k, -1, c.device, c, /*x_as_b=*/true));
  } else {
    KILN_RETURN_IF_ERROR(check_operand_scale("b_scale", ops.b_scale, spec.b, false, w_copy ? sizes.k : sizes.n,
                                             w_copy ? sizes.n : sizes.k, experts, c.device, c, /*x_as_b=*/false,
                                             w_copy ? "K: one per row of W's column-wise copy [K, N]" : nullptr));
  }

  // The NVFP4 global decode scale.
  const bool nvfp4 = spec.b.format == Format::kNvfp4;
  if (!nvfp4 && ops.b_global != nullptr)
    return InvalidArgument("operand b_global: given, but only nvfp4 weights take a global scale (b=" +
                           string(format_name(spec.b.format)) + ")");
  if (nvfp4) {
    const bool per_expert = spec.nvfp4_global == GlobalScale::kExpert;
    const int64_t count = per_expert ? spec.experts : 1;
    if (ops.b_global == nullptr)
      return InvalidArgument("operand b_global: missing; b=nvfp4 needs its f32 global decode scale (amax / (6 * " +
                             to_string(spec.e4m3_bound) + ")) on the device, " +
                             (per_expert ? "one per expert [" + to_string(count) + "]" : string("[1]")));
    KILN_ASSIGN_OR_RETURN(c.b_global,
                          check_f32_vector(Who{"b_global"}, ops.b_global, count, c.device, [per_expert, count] {
                            return per_expert ? "nvfp4_global=expert takes one per expert (" + to_string(count) + ")"
                                              : string("nvfp4_global=tensor takes exactly 1");
                          }));
  }

  // Grouped: the per-expert row vector.
  KILN_RETURN_IF_ERROR(check_group_vector(spec, ops, c));
  return check_epilogue_operands(spec, epilogue, ops, n_out, c);
}

kiln_dev::GemmParams gemm_params(const CheckedOperands& c, const ProblemSizes& sizes) {
  kiln_dev::GemmParams gp{};
  gp.a = c.a;
  gp.b = c.b;
  gp.out = c.out;
  gp.a_scale = c.a_scale;
  gp.b_scale = c.b_scale;
  gp.lda = c.lda;
  gp.ldb = c.ldb;
  gp.ldc = c.ldc;
  // The kernel's GEMM (compiler/plan/gemm_view.hpp): fprop (M, N, K), dgrad (M, K, N), wgrad (N, K, M).
  const GemmView v = gemm_view(c.pass, ProblemSizes{c.m, sizes.n, sizes.k});
  gp.m = static_cast<int>(v.m);
  gp.n = static_cast<int>(v.n);
  gp.k = static_cast<int>(v.k);
  gp.lds_a = c.lds_a;
  gp.lds_b = c.lds_b;
  gp.b_global = c.b_global;
  gp.group_rows = c.group_rows;
  gp.b_expert_stride = c.b_expert_stride;
  gp.b_scale_expert_stride = c.b_scale_expert_stride;
  gp.experts = c.experts;
  gp.max_m = c.max_m;
  for (int i = 0; i < kiln_dev::kMaxEpilogueOperands; ++i) gp.ep[i] = c.ep[i];
  return gp;
}

}  // namespace kiln
