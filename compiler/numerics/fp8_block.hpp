// compiler/numerics/fp8_block.hpp — FP8 (E4M3) quantization with fp32 or power-of-two (UE8M0)
// scales per tensor, per row, and DeepSeek-V3 style blocks (docs/numerics.md §2).
//
// Blockings (docs/architecture.md names scale granularity by problem dimension; with X[M,K] and W[N,K]):
//   kTensor       one scale                                  ScaleGranularity::kTensor
//   kRow          one per row: per token (m, a row of X) or per channel (n, a row of W)
//   kBlock1x128   1 row x 128 cols: activations along K       (§2)
//   kBlock128x128 128 x 128: weights; transpose-symmetric      (§2, §7 dgrad)
//   kBlock128x1   128 rows x 1 col: the column-wise copy wgrad needs, scales along M (§7). Its codes
//                 are those of quantizing the transpose with kBlock1x128, transposed back.
// A trailing partial block takes its amax over the elements that exist (= zero padding, as DeepGEMM
// pads to multiples of 128). Data stays row-major [rows, cols], one byte per element.
//
// Scale conventions (docs/numerics.md §2), elements always e4m3 RNE satfinite:
//   kDeepGemm (default)  a = max(amax, 1e-4f);  kF32: sf = f32(a / 448), q = e4m3(x * f32(1/sf));
//                        kUe8m0: sf = ceil_to_ue8m0(f32(a / 448)) (exponent + (mantissa != 0),
//                        clamped to [1, 254]: RCEIL), q = e4m3(x * 2^-e) exactly.
//   kTransformerEngine   scale = f32(448 / amax) (scale 1 when amax is 0 or non-finite; FLT_MAX
//                        when the quotient overflows); for kUe8m0 the scale's mantissa is zeroed
//                        (floor); q = e4m3(x * scale); decode scale scale_inv = f32(1 / scale).
// The two agree on every power-of-two scale with a normal amax >= 1e-4 (§2 argument); they
// differ at amax = 0 (2^-22 vs 1) and in the fp32 path (x * (1/(amax/448)) vs x * (448/amax)).
// A NaN amax: DeepGEMM gives a NaN scale (ue8m0 byte 0xFF), TE scale 1 (its non-finite rule);
// NaN elements encode as E4M3 NaN either way.
//
//   Fp8BlockOptions opt{Fp8Blocking::kBlock1x128, ScaleType::kUe8m0};
//   KILN_ASSIGN_OR_RETURN(QuantizedTensor q, fp8_block_quantize(x, m, k, opt));
//   // q.data: m*k e4m3 bytes; q.scale_bytes: m * ceil(k/128) E8M0 bytes (DeepGEMM sf)
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "compiler/numerics/quantized_tensor.hpp"
#include "kiln/spec.hpp"
#include "kiln/status.hpp"

namespace kiln::numerics {

enum class Fp8Blocking : uint8_t { kTensor, kRow, kBlock1x128, kBlock128x128, kBlock128x1 };
enum class Fp8ScaleConvention : uint8_t { kDeepGemm, kTransformerEngine };

struct Fp8BlockOptions {
  Fp8Blocking blocking = Fp8Blocking::kBlock1x128;
  ScaleType scale_type = ScaleType::kF32;  // kF32 or kUe8m0
  Fp8ScaleConvention convention = Fp8ScaleConvention::kDeepGemm;
};

// kTensor -> kTensor, kM / kN -> kRow, kBlock1x128, kBlock128x128; others INVALID_ARGUMENT.
StatusOr<Fp8Blocking> fp8_blocking(ScaleGranularity g);

// The scale of one block (docs/numerics.md §2 table: amax -> sf / byte / scale_inv).
struct Fp8Scale {
  float decode = 1.0f;  // x ~ q * decode (DeepGEMM sf, TE scale_inv)
  float encode = 1.0f;  // the multiplier elements are quantized with (DeepGEMM f32(1/sf), TE scale)
  uint8_t ue8m0 = 0;    // E8M0 byte of decode (power-of-two scales only)
};
Fp8Scale fp8_block_scale(float amax, ScaleType scale_type, Fp8ScaleConvention convention);
// e4m3_satfinite(f32(x * scale.encode)).
uint8_t fp8_block_element(float x, const Fp8Scale& scale);

// x row-major [rows, cols]. Fills format kE4m3, data, block_rows/block_cols, and scales_f32
// (kF32) or scale_bytes (kUe8m0), row-major [scale_rows(), scale_cols()].
StatusOr<QuantizedTensor> fp8_block_quantize(std::span<const float> x, int64_t rows, int64_t cols,
                                             const Fp8BlockOptions& options);
// f32(decode(q) * scale) per element (exact for ue8m0 scales; one rounding for f32 scales; the
// exact values are in dequantize_f64).
StatusOr<std::vector<float>> fp8_block_dequantize(const QuantizedTensor& q);

}  // namespace kiln::numerics
