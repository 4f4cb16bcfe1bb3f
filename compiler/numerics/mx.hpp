// compiler/numerics/mx.hpp — OCP Microscaling (MX v1.0) quantization for mxfp8 (E4M3 elements)
// and mxfp4 (E2M1 elements): 32 elements along K share one E8M0 scale (docs/numerics.md §3).
//
// Per block of 32 (docs/numerics.md §3):
//   b   = RCEIL: e8m0_round_up(f32(amax * f32(1/M)))        (kiln default; TE, cuBLAS, torchao MoE)
//         FLOOR: clamp(expbits(amax) - 127 - emax, -127, 128) + 127   (OCP; torchao to_mx default)
//   q_i = RNE_satfinite(x_i * 2^(127-b))            (E4M3: fp8.hpp satfinite; E2M1: e2m1.hpp)
//   x^_i = decode(q_i) * 2^(b-127);  b = 0xFF -> NaN for the whole block
// with (M, emax) = (448, 8) for E4M3 and (6, 2) for E2M1 (docs/numerics.md §3 table).
//
// Invariants:
//   - x_i * 2^(127-b) is computed with ldexp: exact but for the one final rounding to fp32, which
//     can only happen below 2^-126 (encodes to +-0 either way) or above FLT_MAX (saturates either
//     way), so q_i is exactly RNE_satfinite of the real product for every byte b, including those
//     where 2^(127-b) alone is an fp32 subnormal.
//   - amax is NaN-propagating: a NaN in a block gives b = 0xFF (both rules); +Inf gives 0xFF under
//     FLOOR and 0xFE under RCEIL (docs/numerics.md §3).
//   - FLOOR clamps the top binade: FP4 values in (6, 8) * X, E4M3 in (448, 512) * X (§3).
//   - mx_dequantize is exact in fp32 for every byte a quantizer produces.
//
// Blocks run along cols only. For the column-wise copy a wgrad needs (32x1 blocks along M),
// quantize the transposed matrix.
//
//   KILN_ASSIGN_OR_RETURN(QuantizedTensor q,
//                         mx_quantize(x, /*rows=*/m, /*cols=*/k, Format::kMxfp4, MxRounding::kRceil));
//   // q.data: m * k/2 packed bytes; q.scale_bytes: m * k/32 E8M0 bytes.
//   KILN_ASSIGN_OR_RETURN(std::vector<float> back, mx_dequantize(q));
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "compiler/numerics/quantized_tensor.hpp"
#include "kiln/spec.hpp"
#include "kiln/status.hpp"

namespace kiln::numerics {

inline constexpr int64_t kMxBlock = 32;

enum class MxElement : uint8_t { kE4m3, kE2m1 };

// kMxfp8 -> kE4m3, kMxfp4 -> kE2m1; anything else is INVALID_ARGUMENT.
StatusOr<MxElement> mx_element(Format format);
float mx_element_max(MxElement e);  // 448 or 6 (docs/numerics.md §3)
int mx_element_emax(MxElement e);   // 8 or 2

// docs/numerics.md §3: the E8M0 scale byte of a block whose amax is `amax`.
uint8_t mx_scale_byte(float amax, MxElement e, MxRounding rounding);
// docs/numerics.md §3 "Elements": RNE_satfinite(x * 2^(127-b)); an E2M1 code is in the low nibble.
uint8_t mx_element_code(float x, uint8_t scale, MxElement e);
// docs/numerics.md §3 "Decode": decode(q) * 2^(b-127); NaN when b = 0xFF (or q is E4M3 NaN).
float mx_element_value(uint8_t code, uint8_t scale, MxElement e);

// x is row-major [rows, cols]; cols must be a multiple of 32. Fills format, shape, data (fp8: one
// byte per element; fp4: cols/2 packed bytes per row) and scale_bytes [rows, cols/32] (1x32 blocks).
StatusOr<QuantizedTensor> mx_quantize(std::span<const float> x, int64_t rows, int64_t cols, Format format,
                                      MxRounding rounding);
// The row-major [rows, cols] values of an mxfp8 / mxfp4 tensor (exact; see invariants).
StatusOr<std::vector<float>> mx_dequantize(const QuantizedTensor& q);

}  // namespace kiln::numerics
