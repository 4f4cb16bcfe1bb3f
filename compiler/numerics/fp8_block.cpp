// FP8 E4M3 per-tensor / per-row / block quantization (fp8_block.hpp, docs/numerics.md §2).
#include "compiler/numerics/fp8_block.hpp"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <limits>
#include <string>

#include "compiler/numerics/dequantize.hpp"
#include "compiler/numerics/e8m0.hpp"
#include "compiler/numerics/fp32_rn.hpp"
#include "compiler/numerics/fp8.hpp"

namespace kiln::numerics {
namespace {

constexpr float kE4m3Max = 448.0f;
constexpr float kDeepGemmAmaxFloor = 1e-4f;  // DeepGEMM per_token/per_block_cast_to_fp8 clamp(1e-4)

// DeepGEMM ceil_to_ue8m0 (docs/numerics.md §2): biased exponent + (mantissa != 0), clamped to [1, 254].
uint8_t ceil_to_ue8m0(float sf) {
  const uint32_t bits = std::bit_cast<uint32_t>(sf) & 0x7FFFFFFFu;
  const uint32_t e = bits >> 23;
  const uint32_t b = e + ((bits & 0x7FFFFF) != 0 ? 1 : 0);
  return static_cast<uint8_t>(std::clamp<uint32_t>(b, 1, 254));
}

Fp8Scale deepgemm_scale(float amax, ScaleType scale_type) {
  const float a = std::max(amax, kDeepGemmAmaxFloor);  // NaN amax stays NaN: std::max keeps its first argument
  const float sf = fp32::div(a, kE4m3Max);
  Fp8Scale s;
  if (scale_type == ScaleType::kUe8m0) {
    s.ue8m0 = std::isnan(sf) ? kE8m0Nan : ceil_to_ue8m0(sf);
    s.decode = e8m0_to_float(s.ue8m0);
    s.encode = std::isnan(sf) ? sf : e8m0_to_float(static_cast<uint8_t>(254 - s.ue8m0));  // exact reciprocal
  } else {
    s.decode = sf;
    s.encode = fp32::div(1.0f, sf);
  }
  return s;
}

Fp8Scale transformer_engine_scale(float amax, ScaleType scale_type) {
  // TE recipe_common.cuh: scale = 448 / amax (__fdiv_rn); amax 0 or non-finite -> 1. docs/numerics.md
  // does not cover a quotient that overflows (subnormal amax); it is capped at FLT_MAX here.
  // The quotient is >= 448 / FLT_MAX, a normal number, so the power of two below keeps e >= 1.
  float scale = 1.0f;
  if (amax != 0.0f && std::isfinite(amax)) scale = fp32::fmin(fp32::div(kE4m3Max, amax), FLT_MAX);
  Fp8Scale s;
  if (scale_type == ScaleType::kUe8m0) {
    scale = std::bit_cast<float>(std::bit_cast<uint32_t>(scale) & 0xFF800000u);  // power of two, floor
    const int e = static_cast<int>(std::bit_cast<uint32_t>(scale) >> 23);         // scale = 2^(e-127)
    s.ue8m0 = static_cast<uint8_t>(254 - e);                                        // scale_inv = 2^(127-e)
  }
  s.encode = scale;
  s.decode = fp32::div(1.0f, scale);
  return s;
}

struct BlockShape {
  int64_t rows, cols;
};

BlockShape block_shape(Fp8Blocking b, int64_t rows, int64_t cols) {
  switch (b) {
    case Fp8Blocking::kTensor: return {std::max<int64_t>(rows, 1), std::max<int64_t>(cols, 1)};
    case Fp8Blocking::kRow: return {1, std::max<int64_t>(cols, 1)};
    case Fp8Blocking::kBlock1x128: return {1, 128};
    case Fp8Blocking::kBlock128x128: return {128, 128};
    case Fp8Blocking::kBlock128x1: return {128, 1};
  }
  return {1, 1};
}

}  // namespace

StatusOr<Fp8Blocking> fp8_blocking(ScaleGranularity g) {
  switch (g) {
    case ScaleGranularity::kTensor: return Fp8Blocking::kTensor;
    case ScaleGranularity::kM:
    case ScaleGranularity::kN: return Fp8Blocking::kRow;
    case ScaleGranularity::kBlock1x128: return Fp8Blocking::kBlock1x128;
    case ScaleGranularity::kBlock128x128: return Fp8Blocking::kBlock128x128;
    default: break;
  }
  return InvalidArgument(std::string("FP8 quantization has no blocking for scale granularity ") +
                         scale_granularity_name(g) + "; expected tensor, m, n, block1x128 or block128x128");
}

Fp8Scale fp8_block_scale(float amax, ScaleType scale_type, Fp8ScaleConvention convention) {
  return convention == Fp8ScaleConvention::kDeepGemm ? deepgemm_scale(amax, scale_type)
                                                      : transformer_engine_scale(amax, scale_type);
}

uint8_t fp8_block_element(float x, const Fp8Scale& scale) {
  return e4m3_from_float(fp32::mul(x, scale.encode), /*saturate=*/true);
}

StatusOr<QuantizedTensor> fp8_block_quantize(std::span<const float> x, int64_t rows, int64_t cols,
                                             const Fp8BlockOptions& options) {
  if (options.scale_type != ScaleType::kF32 && options.scale_type != ScaleType::kUe8m0)
    return InvalidArgument(std::string("fp8_block_quantize: scale type ") + scale_type_name(options.scale_type) +
                           " is not an FP8 scale type; expected f32 or ue8m0");
  if (rows < 0 || cols < 0)
    return InvalidArgument("fp8_block_quantize: shape [" + std::to_string(rows) + ", " + std::to_string(cols) +
                           "] has a negative dimension");
  if (static_cast<int64_t>(x.size()) != rows * cols)
    return InvalidArgument("fp8_block_quantize: input has " + std::to_string(x.size()) + " elements, shape [" +
                           std::to_string(rows) + ", " + std::to_string(cols) + "] needs " +
                           std::to_string(rows * cols));
  const BlockShape bs = block_shape(options.blocking, rows, cols);
  QuantizedTensor q;
  q.format = Format::kE4m3;
  q.rows = rows;
  q.cols = cols;
  q.block_rows = bs.rows;
  q.block_cols = bs.cols;
  q.scale_type = options.scale_type;
  q.data.assign(static_cast<size_t>(rows * cols), 0);
  const int64_t srows = q.scale_rows(), scols = q.scale_cols();
  if (options.scale_type == ScaleType::kUe8m0) q.scale_bytes.assign(static_cast<size_t>(srows * scols), 0);
  else q.scales_f32.assign(static_cast<size_t>(srows * scols), 0.0f);

  for (int64_t br = 0; br < srows; ++br) {
    for (int64_t bc = 0; bc < scols; ++bc) {
      const int64_t r0 = br * bs.rows, r1 = std::min(rows, r0 + bs.rows);
      const int64_t c0 = bc * bs.cols, c1 = std::min(cols, c0 + bs.cols);
      float amax = 0.0f;  // NaN-propagating, like abs_max
      for (int64_t r = r0; r < r1 && !std::isnan(amax); ++r) {
        const float m = abs_max(x.subspan(static_cast<size_t>(r * cols + c0), static_cast<size_t>(c1 - c0)));
        if (std::isnan(m) || m > amax) amax = m;
      }
      const Fp8Scale s = fp8_block_scale(amax, options.scale_type, options.convention);
      const size_t si = static_cast<size_t>(br * scols + bc);
      if (options.scale_type == ScaleType::kUe8m0) q.scale_bytes[si] = s.ue8m0;
      else q.scales_f32[si] = s.decode;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c)
          q.data[static_cast<size_t>(r * cols + c)] = fp8_block_element(x[static_cast<size_t>(r * cols + c)], s);
    }
  }
  return q;
}

StatusOr<std::vector<float>> fp8_block_dequantize(const QuantizedTensor& q) {
  if (q.format != Format::kE4m3)
    return InvalidArgument(std::string("fp8_block_dequantize: tensor format is ") + format_name(q.format) +
                           ", expected e4m3");
  KILN_RETURN_IF_ERROR(check_quantized_tensor(q));
  std::vector<float> out(static_cast<size_t>(q.rows * q.cols));
  for (int64_t r = 0; r < q.rows; ++r) {
    for (int64_t c = 0; c < q.cols; ++c) {
      const size_t si = static_cast<size_t>((r / q.block_rows) * q.scale_cols() + c / q.block_cols);
      const float s = q.scale_type == ScaleType::kUe8m0 ? e8m0_to_float(q.scale_bytes[si]) : q.scales_f32[si];
      const size_t i = static_cast<size_t>(r * q.cols + c);
      out[i] = fp32::mul(e4m3_to_float(q.data[i]), s);
    }
  }
  return out;
}

}  // namespace kiln::numerics
