// FP4 E2M1 encode / decode / packing (e2m1.hpp, docs/numerics.md §1).
#include "compiler/numerics/e2m1.hpp"

#include <bit>
#include <cmath>

namespace kiln::numerics {

uint8_t e2m1_from_float(float x) {
  // NaN: E2M1 has no NaN. PTX cvt.rn.satfinite to a format without NaN gives positive MAX_NORM;
  // follow the hardware so the reference matches what a kernel writes.
  if (std::isnan(x)) return 0x7;
  const uint8_t sign = (std::bit_cast<uint32_t>(x) >> 31) ? 0x8 : 0x0;
  const float a = std::fabs(x);
  // The decision points are the midpoints between neighbouring magnitudes. At a midpoint RNE picks
  // the neighbour with an even mantissa bit (0, 1, 2, 4: codes 0, 2, 4, 6), so the comparison
  // alternates <= / < (docs/numerics.md §1 thresholds). Every midpoint is an exact fp32 value, so the
  // comparisons are exact. Inf falls through to 6 (satfinite).
  uint8_t mag;
  if (a <= 0.25f) mag = 0x0;
  else if (a < 0.75f) mag = 0x1;
  else if (a <= 1.25f) mag = 0x2;
  else if (a < 1.75f) mag = 0x3;
  else if (a <= 2.5f) mag = 0x4;
  else if (a < 3.5f) mag = 0x5;
  else if (a <= 5.0f) mag = 0x6;
  else mag = 0x7;
  return static_cast<uint8_t>(sign | mag);
}

float e2m1_to_float(uint8_t code) {
  static constexpr float kMagnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float m = kMagnitude[code & 0x7];
  return (code & 0x8) ? -m : m;
}

std::vector<uint8_t> e2m1_pack_codes(std::span<const uint8_t> codes) {
  std::vector<uint8_t> out((codes.size() + 1) / 2, 0);
  for (size_t i = 0; i < codes.size(); ++i) e2m1_set(out, static_cast<int64_t>(i), codes[i]);
  return out;
}

std::vector<uint8_t> e2m1_unpack_codes(std::span<const uint8_t> packed, int64_t n) {
  std::vector<uint8_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = e2m1_get(packed, i);
  return out;
}

}  // namespace kiln::numerics
