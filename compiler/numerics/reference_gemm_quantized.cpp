// reference_gemm_quantized (reference_gemm.hpp): the exact CPU fprop of every operand format.
#include <algorithm>
#include <cstring>
#include <string>

#include "compiler/numerics/dequantize.hpp"
#include "compiler/numerics/fp8.hpp"
#include "compiler/numerics/reference_gemm.hpp"
#include "compiler/spec/spec.hpp"

namespace kiln::numerics {
namespace {

int64_t span_bytes(Format f, int64_t elems) { return format_bits(f) == 4 ? elems / 2 : elems * (format_bits(f) / 8); }

// Bytes per scale element of an operand's 2-D scales.
int scale_bytes(ScaleType t) { return t == ScaleType::kF32 ? 4 : 1; }

// The exact values of rows [0, rows) of an operand (expert e), row-major [rows, k].
// global_index: which entry of r.global is the expert's NVFP4 global (0 for a per-tensor global).
StatusOr<std::vector<double>> dequantize_operand(const OperandSpec& o, bool is_a, int64_t rows, int64_t k,
                                                 const RefOperand& r, int expert, int global_index) {
  const uint8_t* data = static_cast<const uint8_t*>(r.data) + span_bytes(o.format, expert * r.expert_stride);
  std::vector<double> out(static_cast<size_t>(rows * k));
  const Format f = o.format;
  if (format_is_high_precision(f) || (format_is_fp8(f) && (o.scale == ScaleGranularity::kTensor ||
                                                           o.scale == ScaleGranularity::kM ||
                                                           o.scale == ScaleGranularity::kN))) {
    const float* s = static_cast<const float*>(r.scales);
    for (int64_t i = 0; i < rows; ++i) {
      double scale = 1.0;
      // Grouped weights: one tensor scale per expert ([E], stride 1), one per channel ([E * N], stride N).
      if (o.scale == ScaleGranularity::kTensor) scale = s[expert * r.scale_expert_stride];
      if (o.scale == ScaleGranularity::kM || o.scale == ScaleGranularity::kN)
        scale = s[expert * r.scale_expert_stride + i];
      for (int64_t c = 0; c < k; ++c) out[i * k + c] = decode_element(f, data, i * r.ld + c) * scale;
    }
    return out;
  }
  // Block-scaled: build the QuantizedTensor the numerics library reads and dequantize it exactly.
  QuantizedTensor q;
  q.format = format_is_fp8(f) ? Format::kE4m3 : f;
  if (f == Format::kE5m2)
    return Unsupported(std::string("reference_gemm_quantized: e5m2 with ") + scale_granularity_name(o.scale) +
                       " scales (the numerics library's FP8 blocks are e4m3)");
  q.rows = rows;
  q.cols = k;
  q.scale_type = o.scale_type;
  switch (o.scale) {
    case ScaleGranularity::kBlock1x128: q.block_rows = 1; q.block_cols = 128; break;
    case ScaleGranularity::kBlock128x128: q.block_rows = 128; q.block_cols = 128; break;
    case ScaleGranularity::kBlock1x32: q.block_rows = 1; q.block_cols = 32; break;
    case ScaleGranularity::kBlock1x16: q.block_rows = 1; q.block_cols = 16; break;
    default:
      return Unsupported(std::string("reference_gemm_quantized: scale ") + scale_granularity_name(o.scale));
  }
  const int64_t row_bytes = span_bytes(f, k);
  q.data.resize(static_cast<size_t>(rows * row_bytes));
  for (int64_t i = 0; i < rows; ++i)
    std::memcpy(q.data.data() + i * row_bytes, data + span_bytes(f, i * r.ld), static_cast<size_t>(row_bytes));
  const int64_t srows = q.scale_rows(), scols = q.scale_cols();
  const uint8_t* sbase = static_cast<const uint8_t*>(r.scales) +
                         (is_a ? 0 : expert * r.scale_expert_stride * scale_bytes(o.scale_type));
  for (int64_t i = 0; i < srows; ++i) {
    const uint8_t* srow = sbase + i * r.lds * scale_bytes(o.scale_type);
    if (o.scale_type == ScaleType::kF32) {
      const float* fr = reinterpret_cast<const float*>(srow);
      q.scales_f32.insert(q.scales_f32.end(), fr, fr + scols);
    } else {
      q.scale_bytes.insert(q.scale_bytes.end(), srow, srow + scols);
    }
  }
  if (f == Format::kNvfp4) {
    if (r.global == nullptr) return InvalidArgument("reference_gemm_quantized: nvfp4 operand without its global scale");
    q.global_decode_scale = r.global[global_index];
  }
  return dequantize_f64(q);
}

}  // namespace

Status reference_gemm_quantized(const KernelSpec& spec, int64_t m, int64_t n, int64_t k, const RefOperand& a,
                                const RefOperand& b, const int32_t* group_rows, int64_t max_m,
                                std::vector<double>& out, std::vector<uint8_t>* written) {
  KILN_RETURN_IF_ERROR(validate_spec(spec));
  if (spec.pass != Pass::kFprop)
    return Unsupported(std::string("reference_gemm_quantized: pass ") + pass_name(spec.pass) + " is not supported");
  if (m < 0 || n < 1 || k < 1) return InvalidArgument("reference_gemm_quantized: sizes must be positive");
  const bool grouped = spec.op == Op::kGroupedGemm;
  if (grouped && group_rows == nullptr)
    return InvalidArgument("reference_gemm_quantized: a grouped spec needs its offsets or counts");
  const int experts = grouped ? spec.experts : 1;
  out.assign(static_cast<size_t>(m * n), 0.0);
  if (written) written->assign(static_cast<size_t>(m), 0);

  // A: all rows at once (its scales are per row of X, not per expert).
  KILN_ASSIGN_OR_RETURN(std::vector<double> da, dequantize_operand(spec.a, true, m, k, a, 0, 0));
  const bool per_expert_global = spec.nvfp4_global == GlobalScale::kExpert;
  int start = 0;
  for (int e = 0; e < experts; ++e) {
    int64_t row0 = 0, rows = m;
    if (spec.layout == GroupLayout::kOffsets) {
      int end = std::clamp<int64_t>(group_rows[e], 0, m);
      end = std::max(end, start);
      row0 = start;
      rows = end - start;
      start = end;
    } else if (spec.layout == GroupLayout::kMasked) {
      row0 = e * max_m;
      rows = std::clamp<int64_t>(group_rows[e], 0, max_m);
    }
    if (rows == 0) continue;
    const int eb = grouped ? e : 0;
    KILN_ASSIGN_OR_RETURN(std::vector<double> db,
                          dequantize_operand(spec.b, false, n, k, b, eb, per_expert_global ? eb : 0));
    for (int64_t i = row0; i < row0 + rows; ++i) {
      if (written) (*written)[static_cast<size_t>(i)] = 1;
      const double* ar = &da[static_cast<size_t>(i * k)];
      for (int64_t j = 0; j < n; ++j) {
        const double* br = &db[static_cast<size_t>(j * k)];
        double acc = 0.0;
        for (int64_t c = 0; c < k; ++c) acc += ar[c] * br[c];
        out[static_cast<size_t>(i * n + j)] = acc;
      }
    }
  }
  return Status::Ok();
}

}  // namespace kiln::numerics
