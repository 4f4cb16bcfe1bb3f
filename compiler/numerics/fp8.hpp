// compiler/numerics/fp8.hpp — bit-exact host conversions between fp32 and the 8/16-bit float
// formats kiln stores: FP8 E4M3 ("e4m3fn") and E5M2, bf16 and f16.
//
// These are the host side of the bitwise contract in docs/numerics.md §1: the tuner's reference,
// the quantizer tests and the dequantizer tests compare device bytes against them exactly. Every
// conversion is round-to-nearest-even computed with integer arithmetic on the fp32 bits (no
// lookup tables, no dependence on the host FPU's rounding mode); subnormals are exact.
//
// FP8 from fp32 (docs/numerics.md §1):
//   satfinite     finite |x| beyond max and +-Inf -> +-max (0x7E / 0x7B); NaN -> NaN.
//   non-saturating a value that rounds past max -> NaN (E4M3 0x7F) or Inf (E5M2 0x7C); the boundary
//                  is the midpoint with ties-to-even (E4M3: 464 -> 448, 464.1 -> NaN;
//                  E5M2: 61439 -> max, 61440 -> Inf).
//   NaN encodes as 0x7F / 0xFF (sign kept) in both formats; zero keeps its sign.
// bf16 / f16 from fp32: RNE, overflow -> +-Inf, NaN -> the canonical NaN 0x7FFF (CUDA's
// CUDART_NAN_BF16 / CUDART_NAN_FP16).
//
//   uint8_t q = kiln::numerics::e4m3_from_float(17.0f, /*saturate=*/true);   // 0x58 (16: tie to even)
//   float v = kiln::numerics::e4m3_to_float(q);                              // 16.0f
//   uint16_t h = kiln::numerics::bf16_from_float(1.00390625f);               // 0x3F80 (tie to even)
#pragma once

#include <cstdint>

namespace kiln::numerics {

uint8_t e4m3_from_float(float x, bool saturate);
float e4m3_to_float(uint8_t code);
uint8_t e5m2_from_float(float x, bool saturate);
float e5m2_to_float(uint8_t code);

uint16_t bf16_from_float(float x);
float bf16_to_float(uint16_t bits);
uint16_t f16_from_float(float x);
float f16_to_float(uint16_t bits);

}  // namespace kiln::numerics
