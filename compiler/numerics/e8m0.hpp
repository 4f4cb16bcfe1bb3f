// compiler/numerics/e8m0.hpp — E8M0, the power-of-two scale of MX (and DeepGEMM's "UE8M0").
//
// A byte b in 0..254 means 2^(b-127); 0xFF is NaN; there is no sign, zero or Inf (docs/numerics.md §1).
// This file owns the byte <-> fp32 mapping and the two ways a scale byte is derived from a block
// amax (docs/numerics.md §3):
//   RCEIL  b = e8m0_round_up(f32(amax * f32(1/M)))        torchao RCEIL, TE MXFP8, cuBLAS (kiln default)
//   FLOOR  b = clamp(expbits(amax) - 127 - emax, -127, 128) + 127     OCP / torchao FLOOR
// where M is the element format's max (6 for E2M1, 448 for E4M3) and emax its largest exponent.
//
// Invariants:
//   - e8m0_to_float is exact: b=0 gives the fp32 subnormal 2^-127 (bits 0x00400000), never 0;
//     b=255 gives NaN (docs/numerics.md §1).
//   - e8m0_round_up is PTX cvt.rp.satfinite.ue8m0x2.f32: rounds toward +Inf to a power of two,
//     saturates at 2^127 (0xFE; also for +Inf), NaN -> 0xFF, 0 and subnormals <= 2^-127 -> 0x00.
//
//   uint8_t b = kiln::numerics::e8m0_scale_rceil(3.9f, 6.0f);   // 0x7F: 3.9/6 rounds up to 2^0
//   uint8_t f = kiln::numerics::e8m0_scale_floor(3.9f, 2);      // 0x7E: 2^(1-2)
//   float s = kiln::numerics::e8m0_to_float(0x7E);              // 0.5f
#pragma once

#include <cstdint>

namespace kiln::numerics {

inline constexpr uint8_t kE8m0Nan = 0xFF;

// docs/numerics.md §1: exact; 0x00 -> 2^-127 (fp32 subnormal 0x00400000), 0xFF -> NaN.
float e8m0_to_float(uint8_t b);

// docs/numerics.md §3 RCEIL column, "Round up means": the smallest power of two >= |x| as a byte.
// The sign bit of x is ignored (callers pass an amax). NaN -> 0xFF; >= 2^127 or +Inf -> 0xFE;
// fp32 subnormal: mantissa <= 0x400000 (x <= 2^-127) -> 0x00, else 0x01.
uint8_t e8m0_round_up(float x);

// docs/numerics.md §3 RCEIL: e8m0_round_up(f32(amax * f32(1/elem_max))); both products rounded once.
uint8_t e8m0_scale_rceil(float amax, float elem_max);

// docs/numerics.md §3 FLOOR: the exponent read from the fp32 bits of amax (0 and subnormals give
// -127, so b = 0), minus emax_elem, clamped to [-127, 128], plus 127. Non-finite amax -> 0xFF.
uint8_t e8m0_scale_floor(float amax, int emax_elem);

}  // namespace kiln::numerics
