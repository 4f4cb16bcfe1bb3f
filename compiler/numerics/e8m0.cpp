// E8M0 scale bytes (e8m0.hpp, docs/numerics.md §1 and §3).
#include "compiler/numerics/e8m0.hpp"

#include <algorithm>
#include <bit>
#include <limits>

#include "compiler/numerics/fp32_rn.hpp"

namespace kiln::numerics {

float e8m0_to_float(uint8_t b) {
  if (b == kE8m0Nan) return std::numeric_limits<float>::quiet_NaN();
  // 2^-127 is below the smallest fp32 normal: it is the subnormal with only mantissa bit 22 set.
  // Building it from bits keeps it exact under any flush-to-zero setting of the host FPU.
  if (b == 0) return std::bit_cast<float>(uint32_t{0x00400000});
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 23);
}

uint8_t e8m0_round_up(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x) & 0x7FFFFFFFu;
  const uint32_t exp = bits >> 23;
  const uint32_t mant = bits & 0x7FFFFF;
  if (exp == 0xFF) return mant != 0 ? kE8m0Nan : 0xFE;  // NaN; +-Inf saturates to 2^127
  if (exp == 0) return mant <= 0x400000 ? 0x00 : 0x01;  // zero and subnormals: 2^-127 or 2^-126
  const uint32_t b = exp + (mant != 0 ? 1 : 0);
  return static_cast<uint8_t>(std::min<uint32_t>(b, 0xFE));
}

uint8_t e8m0_scale_rceil(float amax, float elem_max) {
  const float inv_max = fp32::div(1.0f, elem_max);  // f32(1/M): 0x3E2AAAAB for 6, 0x3B124925 for 448
  return e8m0_round_up(fp32::mul(amax, inv_max));
}

uint8_t e8m0_scale_floor(float amax, int emax_elem) {
  const uint32_t exp = (std::bit_cast<uint32_t>(amax) >> 23) & 0xFF;
  if (exp == 0xFF) return kE8m0Nan;  // Inf or NaN
  // Zero and subnormals have exp == 0 and so read as 2^-127, giving b = 0 after the clamp.
  const int unbiased = static_cast<int>(exp) - 127 - emax_elem;
  return static_cast<uint8_t>(std::clamp(unbiased, -127, 128) + 127);
}

}  // namespace kiln::numerics
