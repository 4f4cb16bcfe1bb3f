// runtime/operands_quantize.cpp — the operands of a quantize spec: a = X [M, K] in; out (codes),
// out_scale and, for nvfp4, out_global written (operands.hpp).
#include <cstdint>
#include <string>

#include "compiler/plan/quantize_plan.hpp"
#include "runtime/operands_internal.hpp"

namespace kiln {

using namespace operands_internal;
using std::string;
using std::to_string;

StatusOr<CheckedQuantize> check_quantize_operands(const KernelSpec& spec, const ProblemSizes& sizes,
                                                  const Operands& ops) {
  CheckedQuantize q;
  for (int vi = 0; vi < kEpVectorCount; ++vi) {
    if (epilogue_tensor(ops, static_cast<EpVector>(vi)) != nullptr)
      return InvalidArgument("operand " + string(ep_vector_name(static_cast<EpVector>(vi))) +
                             ": given, but quantize specs have no epilogue");
  }
  const bool grouped = spec.experts > 0;
  const bool masked = spec.layout == GroupLayout::kMasked;
  // The row vector a grouped spec reads (offsets or counts); any other one is a stray operand.
  const char* stray = ops.b ? "b" : ops.a_scale ? "a_scale" : ops.b_scale ? "b_scale" : ops.b_global ? "b_global"
                      : ops.offsets && !(grouped && !masked) ? "offsets"
                      : ops.counts && !(grouped && masked)   ? "counts"
                                                               : nullptr;
  if (stray != nullptr)
    return InvalidArgument("quantize takes a (the input), out, out_scale, (nvfp4) out_global and (quantize[experts=E,"
                           "layout=offsets|masked]) offsets or counts; operand " + string(stray) + " was given");
  // a: X [M, K]; masked grouped: [E, max_m, K] with the experts' rows contiguous.
  KILN_ASSIGN_OR_RETURN(Mat a, check_matrix("a", ops.a, spec.a.format, grouped && masked ? spec.experts : -1, -1,
                                            sizes.k, grouped && masked ? "max_m" : "M", "K"));
  q.device = ops.a->device.device_id;
  q.m = grouped && masked ? a.rows * spec.experts : a.rows;
  q.in = a.data;
  q.ld_in = a.ld;
  if (q.m > INT32_MAX) return InvalidArgument("operand a: M = " + to_string(q.m) + " exceeds 2^31 - 1");
  if (grouped && masked && a.rows > 0 && a.batch_stride != a.rows * a.ld)
    return InvalidArgument("operand a: expert stride " + to_string(a.batch_stride) +
                           " elements; the masked layout needs the experts' rows contiguous (stride(0) = max_m * "
                           "stride(1) = " + to_string(a.rows * a.ld) + ")");
  const QuantizeShape qs = quantize_shape(spec);
  const bool columns = qs.mode == QuantizeMode::kColumns;  // e4m3:m transpose=true: scales per column of X
  const bool transposed = qs.mode == QuantizeMode::kTransposed || columns;
  if (grouped) {
    q.experts = spec.experts;
    q.max_m = masked ? static_cast<int>(a.rows) : 0;
    q.masked = masked;
    const char* vname = masked ? "counts" : "offsets";
    const DLTensor* v = masked ? ops.counts : ops.offsets;
    if (v == nullptr)
      return InvalidArgument("operand " + string(vname) + ": missing; quantize[experts=" + to_string(spec.experts) +
                             ",layout=" + group_layout_name(spec.layout) + "] needs an int32 [" +
                             to_string(spec.experts) + "] device tensor of " +
                             (masked ? "rows per expert" : "cumulative row ends"));
    KILN_ASSIGN_OR_RETURN(q.group_rows, check_group_rows(Who{vname}, v, spec.experts, q.device,
                                                         masked ? "rows per expert" : "cumulative row ends per expert"));
  }
  if (transposed && !grouped && !columns && q.m % qs.block != 0)
    return InvalidArgument("operand a: M = " + to_string(q.m) + " is not a multiple of " + to_string(qs.block) +
                           "; transpose=true quantizes blocks of " + to_string(qs.block) + " rows");
  // out: codes, written in 4-byte (mxfp4) or 8-byte chunks: rows and base aligned to that. Grouped: the
  // padded copy [K, W], W a whole number of blocks and at least grouped_transposed_cols (its columns are the
  // caller's choice: a buffer sized once for the largest M serves every batch).
  int64_t out_cols = transposed ? q.m : sizes.k;
  if (grouped) {
    if (ops.out == nullptr || ops.out->ndim != 2)
      return InvalidArgument("operand out: " +
                             (ops.out == nullptr ? string("missing") : to_string(ops.out->ndim) + "-D") +
                             "; a grouped transposed quantize writes the padded copy [K, W]");
    out_cols = ops.out->shape[1];
    const int64_t need = grouped_transposed_cols(spec, q.m);
    if (out_cols < need || out_cols % qs.block != 0 || out_cols > INT32_MAX)
      return InvalidArgument("operand out: " + to_string(out_cols) + " columns; the padded copy of M = " +
                             to_string(q.m) + " rows for " + to_string(spec.experts) +
                             " experts needs a multiple of " + to_string(qs.block) + " of at least " +
                             to_string(need) + " (" + to_string(qs.block) + " x (ceil(M / " + to_string(qs.block) +
                             ") + E): every expert's rows rounded up to whole blocks)");
    q.out_cols = out_cols;
  }
  // Per-column scales: the copy [K, W] may be wider than M (W < M + 128, a multiple of 8): columns [M, W) are
  // written as zero codes, so a copy padded to the GEMM's 16-byte rows needs no padded input.
  if (columns) {
    if (ops.out == nullptr || ops.out->ndim != 2)
      return InvalidArgument("operand out: " +
                             (ops.out == nullptr ? string("missing") : to_string(ops.out->ndim) + "-D") +
                             "; out=e4m3:m transpose=true writes the copy [K, W] (W: M, or M padded up to 127 "
                             "columns, a multiple of 8)");
    out_cols = ops.out->shape[1];
    if (out_cols < q.m || out_cols >= q.m + 128 || out_cols % 8 != 0)
      return InvalidArgument("operand out: " + to_string(out_cols) + " columns for M = " + to_string(q.m) +
                             " rows; out=e4m3:m transpose=true writes [K, W] with W a multiple of 8, M <= W < M + "
                             "128 (columns past M are zero codes), e.g. W = " + to_string((q.m + 15) / 16 * 16) +
                             " (M rounded up to 16, the 16-byte rows an FP8 GEMM reads)");
    q.out_cols = out_cols;
    q.columns = true;
  }
  const int64_t out_rows = transposed ? sizes.k : q.m;
  KILN_ASSIGN_OR_RETURN(Mat o, check_matrix("out", ops.out, spec.out.format, -1, out_rows, out_cols,
                                            transposed ? "K" : "M", grouped ? "W" : transposed ? "M" : "K",
                                            /*vector_rows=*/false));
  const int64_t chunk = spec.out.format == Format::kMxfp4 ? 4 : 8;
  const int64_t row_bytes = format_bits(spec.out.format) == 4 ? o.ld / 2 : o.ld;
  if (row_bytes % chunk != 0 || reinterpret_cast<uintptr_t>(o.data) % chunk != 0)
    return InvalidArgument("operand out: row stride " + to_string(row_bytes) + " bytes at address 0x" +
                           hex(reinterpret_cast<uintptr_t>(o.data)) + "; the quantize family stores " +
                           to_string(chunk) + "-byte chunks, so rows must start on " + to_string(chunk) +
                           "-byte boundaries");
  if (ops.out->device.device_id != q.device)
    return InvalidArgument("operands a and out must be on one device; found devices " + to_string(q.device) + ", " +
                           to_string(ops.out->device.device_id));
  q.out = const_cast<void*>(o.data);
  q.ld_out = o.ld;

  // out_scale.
  const Who n{"out_scale"};
  const char* fmt = format_name(spec.out.format);
  if (ops.out_scale == nullptr)
    return InvalidArgument(n() + ": missing; quantize writes the scales of out=" + fmt + " there");
  switch (qs.mode) {
    case QuantizeMode::kTensor: {
      KILN_ASSIGN_OR_RETURN(const float* s, check_f32_vector(n, ops.out_scale, 1, q.device,
                                                             "a per-tensor scale has exactly 1 (written)"));
      q.scale = const_cast<float*>(s);
      q.ld_scale = 1;
      break;
    }
    case QuantizeMode::kColumns: {
      const int64_t k = sizes.k;
      KILN_ASSIGN_OR_RETURN(const float* s, check_f32_vector(n, ops.out_scale, sizes.k, q.device, [k] {
                              return "transpose=true per-token scales: one f32 per column of a, i.e. per row of "
                                     "the copy (K = " + to_string(k) + ")";
                            }));
      q.scale = const_cast<float*>(s);
      q.ld_scale = 1;
      break;
    }
    case QuantizeMode::kRow: {
      const int64_t m = q.m;
      KILN_ASSIGN_OR_RETURN(const float* s, check_f32_vector(n, ops.out_scale, q.m, q.device, [m] {
                              return "per-token scales: one f32 per row of a (M = " + to_string(m) + ")";
                            }));
      q.scale = const_cast<float*>(s);
      q.ld_scale = 1;
      break;
    }
    default: {
      int64_t rows = 0, cols = 0;
      if (qs.mode == QuantizeMode::kBlock2d) {
        rows = (q.m + 127) / 128;
        cols = sizes.k / 128;
      } else if (transposed) {
        rows = sizes.k;
        cols = out_cols / qs.block;
      } else {
        rows = q.m;
        cols = sizes.k / qs.block;
      }
      const QuantizeMode mode = qs.mode;
      const int block = qs.block;
      auto meaning = [mode, transposed, block] {
        if (mode == QuantizeMode::kBlock2d) return string("one scale per 128 x 128 block");
        if (transposed) return "transpose=true: one scale per column of a per " + to_string(block) + " rows";
        return "one scale per row per " + to_string(block) + " K";
      };
      KILN_ASSIGN_OR_RETURN(ScaleView v, check_scale_matrix(n, ops.out_scale, spec.out.scale_type, -1, rows, cols,
                                                            q.device, meaning));
      q.scale = const_cast<float*>(v.data);
      q.ld_scale = v.lds;
      break;
    }
  }
  const bool nvfp4 = spec.out.format == Format::kNvfp4;
  if (!nvfp4 && ops.out_global != nullptr)
    return InvalidArgument("operand out_global: given, but only out=nvfp4 writes a global scale (out=" + string(fmt) +
                           ")");
  if (nvfp4) {
    if (ops.out_global == nullptr)
      return InvalidArgument("operand out_global: missing; out=nvfp4 writes its f32 global decode scale (amax / (6 * " +
                             to_string(spec.e4m3_bound) + ")) to a device f32 [1]");
    KILN_ASSIGN_OR_RETURN(const float* g, check_f32_vector(Who{"out_global"}, ops.out_global, 1, q.device,
                                                           "the nvfp4 global scale is exactly 1 f32 (written)"));
    q.global = const_cast<float*>(g);
  }
  return q;
}

}  // namespace kiln
