// fp32 <-> E4M3 / E5M2 / bf16 / f16 (fp8.hpp). One encoder, parameterised by the target format,
// does the rounding for all four, so the tie and overflow rules cannot drift between them.
#include "compiler/numerics/fp8.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace kiln::numerics {
namespace {

// A binary float format of at most 16 bits with a sign bit on top.
struct MiniFloat {
  int mant_bits;       // stored mantissa bits
  int bias;            // exponent bias; the smallest normal exponent is 1 - bias
  uint32_t max_code;   // magnitude code of the largest finite value
  uint32_t over_code;  // magnitude code a non-saturating overflow produces (Inf, or NaN without Inf)
  uint32_t nan_code;   // magnitude code produced for a NaN input (sign is kept)
  int sign_shift;      // 7 or 15
};

constexpr MiniFloat kE4m3{3, 7, 0x7E, 0x7F, 0x7F, 7};
constexpr MiniFloat kE5m2{2, 15, 0x7B, 0x7C, 0x7F, 7};
constexpr MiniFloat kBf16{7, 127, 0x7F7F, 0x7F80, 0x7FFF, 15};
constexpr MiniFloat kF16{10, 15, 0x7BFF, 0x7C00, 0x7FFF, 15};

uint32_t encode(float x, const MiniFloat& f, bool saturate) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint32_t sign = (bits >> 31) << f.sign_shift;
  const uint32_t exp = (bits >> 23) & 0xFF;
  const uint32_t frac = bits & 0x7FFFFF;
  if (exp == 0xFF) {
    if (frac != 0) return (f.sign_shift == 15 ? 0 : sign) | f.nan_code;  // bf16/f16: canonical NaN
    return sign | (saturate ? f.max_code : f.over_code);
  }
  if (exp == 0 && frac == 0) return sign;

  // |x| = m * 2^e exactly, with m < 2^24.
  const uint64_t m = exp == 0 ? frac : (frac | 0x800000u);
  const int e = exp == 0 ? -149 : static_cast<int>(exp) - 150;
  const int lead = std::bit_width(m) - 1;             // |x| in [2^(e+lead), 2^(e+lead+1))
  const int binade = std::max(e + lead, 1 - f.bias);  // target binade (the subnormal one at least)
  const int shift = e - (binade - f.mant_bits);       // n = |x| / quantum = m * 2^shift
  uint64_t n;
  if (shift >= 0) {
    n = m << shift;  // shift <= mant_bits - lead: n < 2^(mant_bits+1), exact
  } else {
    const int s = -shift;
    if (s > 40) {
      n = 0;  // far below half the smallest quantum
    } else {
      n = m >> s;
      const uint64_t rem = m & ((uint64_t{1} << s) - 1);
      const uint64_t half = uint64_t{1} << (s - 1);
      if (rem > half || (rem == half && (n & 1))) ++n;  // round to nearest, ties to even
    }
  }
  int out_binade = binade;
  if (n >> (f.mant_bits + 1)) {  // rounded up to the next binade: n == 2^(mant_bits+1)
    n >>= 1;
    ++out_binade;
  }
  const uint64_t implicit = uint64_t{1} << f.mant_bits;
  // Below the implicit bit only in the subnormal binade, where the code is n itself (n == 2^M
  // there is the smallest normal, whose code is also n).
  const uint64_t code =
      n < implicit ? n : (static_cast<uint64_t>(out_binade + f.bias) << f.mant_bits) | (n - implicit);
  if (code > f.max_code) return sign | (saturate ? f.max_code : f.over_code);
  return sign | static_cast<uint32_t>(code);
}

float decode(uint32_t code, const MiniFloat& f, int exp_bits) {
  const bool neg = (code >> f.sign_shift) & 1;
  const uint32_t mag = code & ((1u << f.sign_shift) - 1);
  const uint32_t e = mag >> f.mant_bits;
  const uint32_t mant = mag & ((1u << f.mant_bits) - 1);
  const uint32_t e_all = (1u << exp_bits) - 1;
  const float nan = neg ? -std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::quiet_NaN();
  float v;
  if (f.over_code == f.nan_code) {  // E4M3: no Inf; only S.1111.111 is NaN
    if (mag == f.nan_code) return nan;
  } else if (e == e_all) {
    if (mant != 0) return nan;
    return neg ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  }
  if (e == 0) {
    v = std::ldexp(static_cast<float>(mant), 1 - f.bias - f.mant_bits);
  } else {
    v = std::ldexp(static_cast<float>((1u << f.mant_bits) | mant),
                   static_cast<int>(e) - f.bias - f.mant_bits);
  }
  return neg ? -v : v;
}

}  // namespace

uint8_t e4m3_from_float(float x, bool saturate) { return static_cast<uint8_t>(encode(x, kE4m3, saturate)); }
float e4m3_to_float(uint8_t code) { return decode(code, kE4m3, 4); }
uint8_t e5m2_from_float(float x, bool saturate) { return static_cast<uint8_t>(encode(x, kE5m2, saturate)); }
float e5m2_to_float(uint8_t code) { return decode(code, kE5m2, 5); }

uint16_t bf16_from_float(float x) { return static_cast<uint16_t>(encode(x, kBf16, false)); }
float bf16_to_float(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }
uint16_t f16_from_float(float x) { return static_cast<uint16_t>(encode(x, kF16, false)); }
float f16_to_float(uint16_t bits) { return decode(bits, kF16, 5); }

}  // namespace kiln::numerics
