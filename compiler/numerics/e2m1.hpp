// compiler/numerics/e2m1.hpp — FP4 E2M1, the element of MXFP4 and NVFP4 (docs/numerics.md §1).
//
// E2M1 is 1 sign, 2 exponent (bias 1) and 1 mantissa bit: magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6.
// It has no Inf and no NaN. Codes live in the low nibble of a uint8_t; 0x8..0xF are the negatives.
//
// Invariants (the bitwise contract; docs/numerics.md §1 "Rounding (production)"):
//   - encoding is round-to-nearest-even with saturation to +-6 (PTX cvt.rn.satfinite.e2m1x2.f32);
//     ties go to the even code: 0.25 -> 0, 0.75 -> 1, 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4;
//   - the sign is kept, also for results that round to zero: -0.1 -> 0x8 (-0);
//   - +-Inf saturates to +-6. NaN has no encoding; it becomes +6 (0x7), PTX's "positive MAX_NORM"
//     for destination formats without NaN (kiln follows the hardware; see the NaN note in e2m1.cpp);
//   - packing: element 2i in the LOW nibble, element 2i+1 in the high nibble (byte = e0 | e1 << 4).
//
//   uint8_t c = kiln::numerics::e2m1_from_float(2.75f);        // 0x5 (3)
//   float v = kiln::numerics::e2m1_to_float(0xD);               // -3.0f
//   uint8_t b = kiln::numerics::e2m1_pack(0x7, 0xE);            // 0xE7: 6 then -4
//   uint8_t e1 = kiln::numerics::e2m1_get(packed, 1);           // high nibble of packed[0]
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace kiln::numerics {

inline constexpr float kE2m1Max = 6.0f;

// docs/numerics.md §1: RNE, saturating, sign kept. The code is in the low nibble.
uint8_t e2m1_from_float(float x);
// docs/numerics.md §1 code table; only the low nibble of `code` is read. Exact.
float e2m1_to_float(uint8_t code);

// docs/numerics.md §1 "Packing": even element in the low nibble.
inline uint8_t e2m1_pack(uint8_t even, uint8_t odd) {
  return static_cast<uint8_t>((even & 0xF) | ((odd & 0xF) << 4));
}
// The code of element i of a packed buffer (byte i/2, low nibble when i is even).
inline uint8_t e2m1_get(std::span<const uint8_t> packed, int64_t i) {
  const uint8_t b = packed[static_cast<size_t>(i >> 1)];
  return (i & 1) ? static_cast<uint8_t>(b >> 4) : static_cast<uint8_t>(b & 0xF);
}
// Writes the code of element i, leaving the other nibble of its byte unchanged.
inline void e2m1_set(std::span<uint8_t> packed, int64_t i, uint8_t code) {
  uint8_t& b = packed[static_cast<size_t>(i >> 1)];
  b = (i & 1) ? static_cast<uint8_t>((b & 0x0F) | ((code & 0xF) << 4))
              : static_cast<uint8_t>((b & 0xF0) | (code & 0xF));
}

// codes.size() codes -> (codes.size() + 1) / 2 bytes; an odd count leaves the last high nibble 0.
std::vector<uint8_t> e2m1_pack_codes(std::span<const uint8_t> codes);
// The first n codes of a packed buffer (packed.size() must be at least (n + 1) / 2).
std::vector<uint8_t> e2m1_unpack_codes(std::span<const uint8_t> packed, int64_t n);

}  // namespace kiln::numerics
