// Unit tests of compiler/numerics: FP8 / bf16 / f16 conversions (bitwise, docs/numerics.md §1) and
// the CPU reference GEMM. No CUDA.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "compiler/numerics/fp8.hpp"
#include "compiler/numerics/reference_gemm.hpp"
#include "compiler/spec/spec.hpp"

namespace kiln::numerics {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

float bits_to_float(uint32_t b) { return std::bit_cast<float>(b); }

// ------------------------------------------------------------------------------------------------
// docs/numerics.md §1, the E4M3 / E5M2 test vectors (x -> sat / non-sat): every row.

struct Fp8Vector {
  float x;
  uint8_t sat, nonsat;
};

TEST(Fp8Test, E4m3MatchesTheFp8Vectors) {
  const Fp8Vector vectors[] = {
      {1.0f / 3.0f, 0x2B, 0x2B},
      {0.1f, 0x1D, 0x1D},
      {17.0f, 0x58, 0x58},  // 16: tie to even
      {19.0f, 0x5A, 0x5A},  // 20: tie to even
      {240.0f, 0x77, 0x77},
      {449.0f, 0x7E, 0x7E},
      {464.0f, 0x7E, 0x7E},  // midpoint of 448 and the virtual 480: ties to 448
      {464.1f, 0x7E, 0x7F},  // past the midpoint: NaN when not saturating
      {std::ldexp(1.0f, -10), 0x00, 0x00},
      {1.5f * std::ldexp(1.0f, -10), 0x01, 0x01},
      {-0.0f, 0x80, 0x80},
  };
  for (const auto& v : vectors) {
    EXPECT_EQ(e4m3_from_float(v.x, true), v.sat) << "x=" << v.x;
    EXPECT_EQ(e4m3_from_float(v.x, false), v.nonsat) << "x=" << v.x;
  }
  EXPECT_EQ(e4m3_to_float(0x2B), 0.34375f);
  EXPECT_EQ(e4m3_to_float(0x1D), 0.1015625f);
}

TEST(Fp8Test, E5m2MatchesTheFp8Vectors) {
  const Fp8Vector vectors[] = {
      {1.0f / 3.0f, 0x35, 0x35},  // 0.3125
      {61439.0f, 0x7B, 0x7B},
      {61440.0f, 0x7B, 0x7C},  // tie goes to the even neighbour, the virtual 65536: Inf
      {std::ldexp(1.0f, -17), 0x00, 0x00},
      {1.5f * std::ldexp(1.0f, -17), 0x01, 0x01},
  };
  for (const auto& v : vectors) {
    EXPECT_EQ(e5m2_from_float(v.x, true), v.sat) << "x=" << v.x;
    EXPECT_EQ(e5m2_from_float(v.x, false), v.nonsat) << "x=" << v.x;
  }
  EXPECT_EQ(e5m2_to_float(0x35), 0.3125f);
}

// docs/numerics.md §1, the FP8 format table: bias, max normal, min normal, min subnormal, Inf, NaN, 1.0.
TEST(Fp8Test, E4m3AndE5m2MatchTheFormatTable) {
  EXPECT_EQ(e4m3_to_float(0x7E), 448.0f);
  EXPECT_EQ(e4m3_to_float(0x08), std::ldexp(1.0f, -6));
  EXPECT_EQ(e4m3_to_float(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(e4m3_to_float(0x38), 1.0f);
  EXPECT_TRUE(std::isnan(e4m3_to_float(0x7F)));
  EXPECT_TRUE(std::isnan(e4m3_to_float(0xFF)));
  EXPECT_EQ(e4m3_to_float(0x78), 256.0f);  // S.1111.000 is a normal number in e4m3fn
  int e4m3_nans = 0;
  for (int c = 0; c < 256; ++c) e4m3_nans += std::isnan(e4m3_to_float(static_cast<uint8_t>(c)));
  EXPECT_EQ(e4m3_nans, 2);

  EXPECT_EQ(e5m2_to_float(0x7B), 57344.0f);
  EXPECT_EQ(e5m2_to_float(0x04), std::ldexp(1.0f, -14));
  EXPECT_EQ(e5m2_to_float(0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(e5m2_to_float(0x3C), 1.0f);
  EXPECT_EQ(e5m2_to_float(0x7C), kInf);
  EXPECT_EQ(e5m2_to_float(0xFC), -kInf);
  for (uint8_t c : {0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF}) EXPECT_TRUE(std::isnan(e5m2_to_float(c))) << int(c);
  EXPECT_EQ(e4m3_from_float(1.0f, true), 0x38);
  EXPECT_EQ(e5m2_from_float(1.0f, true), 0x3C);
}

TEST(Fp8Test, SaturationAndSpecialValues) {
  // satfinite: finite beyond max and +-Inf -> +-max; NaN -> NaN with its sign.
  EXPECT_EQ(e4m3_from_float(1e30f, true), 0x7E);
  EXPECT_EQ(e4m3_from_float(-1e30f, true), 0xFE);
  EXPECT_EQ(e4m3_from_float(kInf, true), 0x7E);
  EXPECT_EQ(e4m3_from_float(-kInf, true), 0xFE);
  EXPECT_EQ(e4m3_from_float(std::numeric_limits<float>::max(), true), 0x7E);
  EXPECT_EQ(e4m3_from_float(kNan, true), 0x7F);
  EXPECT_EQ(e4m3_from_float(-kNan, true), 0xFF);
  EXPECT_EQ(e5m2_from_float(1e30f, true), 0x7B);
  EXPECT_EQ(e5m2_from_float(-kInf, true), 0xFB);
  EXPECT_EQ(e5m2_from_float(kNan, true), 0x7F);
  EXPECT_EQ(e5m2_from_float(-kNan, true), 0xFF);
  // non-saturating: past max -> NaN (e4m3) / Inf (e5m2).
  EXPECT_EQ(e4m3_from_float(1e30f, false), 0x7F);
  EXPECT_EQ(e4m3_from_float(-465.0f, false), 0xFF);
  EXPECT_EQ(e4m3_from_float(kInf, false), 0x7F);
  EXPECT_EQ(e5m2_from_float(1e30f, false), 0x7C);
  EXPECT_EQ(e5m2_from_float(-kInf, false), 0xFC);
  EXPECT_EQ(e5m2_from_float(-61440.0f, false), 0xFC);
  EXPECT_EQ(e5m2_from_float(kNan, false), 0x7F);
  // Tiny values and fp32 subnormals round to a signed zero.
  EXPECT_EQ(e4m3_from_float(1e-40f, true), 0x00);
  EXPECT_EQ(e4m3_from_float(-1e-40f, true), 0x80);
  EXPECT_EQ(e5m2_from_float(-std::ldexp(1.0f, -18), false), 0x80);
  EXPECT_EQ(e5m2_from_float(-0.0f, true), 0x80);
  // The subnormal/normal boundary: the largest subnormal rounds up into the smallest normal.
  EXPECT_EQ(e4m3_from_float(std::ldexp(15.5f, -10), true), 0x08);  // 7.75 * 2^-9 -> 8 * 2^-9 = 2^-6
  EXPECT_EQ(e5m2_from_float(std::ldexp(3.5f, -16), true), 0x04);   // tie between 3 and 4 quanta: even (4)
}

// Exhaustive: decode then encode every code gives the code back (NaN codes give the canonical
// NaN of their sign), in both saturation modes.
TEST(Fp8Test, EveryCodeRoundTripsThroughFloat) {
  for (int c = 0; c < 256; ++c) {
    const auto code = static_cast<uint8_t>(c);
    for (bool sat : {true, false}) {
      const float v = e4m3_to_float(code);
      EXPECT_EQ(e4m3_from_float(v, sat), code) << "e4m3 code " << c << " sat " << sat;
      const float w = e5m2_to_float(code);
      uint8_t want = code;
      if (std::isnan(w)) want = static_cast<uint8_t>((code & 0x80) | 0x7F);
      if (std::isinf(w) && sat) want = static_cast<uint8_t>((code & 0x80) | 0x7B);
      EXPECT_EQ(e5m2_from_float(w, sat), want) << "e5m2 code " << c << " sat " << sat;
    }
  }
}

// Independent brute-force encoder: the nearest finite code by value (ties to the even code), plus
// a virtual next value past max for the non-saturating overflow boundary.
uint8_t brute_force(float x, bool e4m3, bool sat) {
  static const std::vector<float> e4m3_values = [] {
    std::vector<float> v(256);
    for (int c = 0; c < 256; ++c) v[c] = e4m3_to_float(static_cast<uint8_t>(c));
    return v;
  }();
  static const std::vector<float> e5m2_values = [] {
    std::vector<float> v(256);
    for (int c = 0; c < 256; ++c) v[c] = e5m2_to_float(static_cast<uint8_t>(c));
    return v;
  }();
  auto decode = [&](int c) { return e4m3 ? e4m3_values[c] : e5m2_values[c]; };
  const int max_code = e4m3 ? 0x7E : 0x7B;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const double ax = std::fabs(static_cast<double>(x));
  if (std::isnan(x)) return sign | 0x7F;
  // Beyond the top finite value the distances below lose precision in double; decide exactly.
  const double virt = e4m3 ? 480.0 : 65536.0;  // the next binade value past max (code 0x7F / 0x7C)
  if (ax >= decode(max_code) && (sat || ax >= virt))
    return static_cast<uint8_t>(sign | (sat ? max_code : (e4m3 ? 0x7F : 0x7C)));
  int best = 0;
  double best_err = ax;
  for (int c = 1; c <= max_code; ++c) {
    const double err = std::fabs(static_cast<double>(decode(c)) - ax);
    if (err < best_err || (err == best_err && (c & 1) == 0)) {
      best = c;
      best_err = err;
    }
  }
  if (!sat) {
    // e4m3's virtual 480 would be code 0x7F (odd), e5m2's 65536 code 0x7C (even)
    const bool virt_even = !e4m3;
    const double err = std::fabs(virt - ax);
    if (err < best_err || (err == best_err && virt_even)) return sign | (e4m3 ? 0x7F : 0x7C);
  }
  return static_cast<uint8_t>(sign | best);
}

TEST(Fp8Test, AgreesWithBruteForceNearestEvenOnASweepOfFloats) {
  int checked = 0;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 9973) {
    const float x = bits_to_float(static_cast<uint32_t>(b));
    if (std::isnan(x)) continue;
    for (bool sat : {true, false}) {
      ASSERT_EQ(e4m3_from_float(x, sat), brute_force(x, true, sat))
          << "x=" << x << " bits=" << b << " sat=" << sat;
      ASSERT_EQ(e5m2_from_float(x, sat), brute_force(x, false, sat))
          << "x=" << x << " bits=" << b << " sat=" << sat;
    }
    ++checked;
  }
  EXPECT_GT(checked, 400000);
}

TEST(Fp8Test, EveryMidpointTiesToEvenAndItsNeighboursRoundToNearest) {
  for (bool e4m3 : {true, false}) {
    const int max_code = e4m3 ? 0x7E : 0x7B;
    for (int c = 0; c < max_code; ++c) {
      const float lo = e4m3 ? e4m3_to_float(static_cast<uint8_t>(c)) : e5m2_to_float(static_cast<uint8_t>(c));
      const float hi =
          e4m3 ? e4m3_to_float(static_cast<uint8_t>(c + 1)) : e5m2_to_float(static_cast<uint8_t>(c + 1));
      const float mid = (lo + hi) / 2;  // exact in fp32
      auto enc = [&](float x) { return e4m3 ? e4m3_from_float(x, true) : e5m2_from_float(x, true); };
      const int even = (c % 2 == 0) ? c : c + 1;
      EXPECT_EQ(enc(mid), even) << (e4m3 ? "e4m3 " : "e5m2 ") << c;
      EXPECT_EQ(enc(std::nextafter(mid, 0.0f)), c);
      EXPECT_EQ(enc(std::nextafter(mid, kInf)), c + 1);
      EXPECT_EQ(enc(-mid), 0x80 | even);
    }
  }
}

// ------------------------------------------------------------------------------------------------
// bf16 / f16

TEST(Bf16Test, RoundsToNearestEvenOnTies) {
  EXPECT_EQ(bf16_from_float(1.0f), 0x3F80);
  EXPECT_EQ(bf16_from_float(bits_to_float(0x3F808000)), 0x3F80);  // 1 + 2^-8: tie, down to even
  EXPECT_EQ(bf16_from_float(bits_to_float(0x3F818000)), 0x3F82);  // tie, up to even
  EXPECT_EQ(bf16_from_float(bits_to_float(0x3F808001)), 0x3F81);  // just above the tie
  EXPECT_EQ(bf16_from_float(bits_to_float(0x3F807FFF)), 0x3F80);
  EXPECT_EQ(bf16_from_float(-0.0f), 0x8000);
  EXPECT_EQ(bf16_from_float(std::numeric_limits<float>::max()), 0x7F80);  // rounds up to Inf
  EXPECT_EQ(bf16_from_float(bits_to_float(0x7F7F7FFF)), 0x7F7F);
  EXPECT_EQ(bf16_from_float(kInf), 0x7F80);
  EXPECT_EQ(bf16_from_float(-kInf), 0xFF80);
  EXPECT_EQ(bf16_from_float(bits_to_float(0x00008000)), 0x0000);  // fp32 subnormal tie -> even (0)
  EXPECT_EQ(bf16_from_float(bits_to_float(0x00018000)), 0x0002);
  EXPECT_EQ(bf16_from_float(bits_to_float(0x007FFFFF)), 0x0080);  // largest subnormal -> min normal
  EXPECT_EQ(bf16_to_float(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_float(0x0001), bits_to_float(0x00010000));
}

TEST(Bf16Test, NanStaysNan) {
  EXPECT_EQ(bf16_from_float(kNan), 0x7FFF);
  EXPECT_EQ(bf16_from_float(bits_to_float(0x7F800001)), 0x7FFF);  // a NaN whose payload would truncate to Inf
  EXPECT_EQ(bf16_from_float(bits_to_float(0xFFC00000)), 0x7FFF);
  EXPECT_TRUE(std::isnan(bf16_to_float(0x7FC0)));
  EXPECT_TRUE(std::isnan(bf16_to_float(0xFF81)));
}

TEST(Bf16Test, MatchesTheCarryTrickOnASweepAndRoundTripsEveryCode) {
  // The classic integer form of RNE, used as an independent check: (bits + 0x7FFF + lsb) >> 16.
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 997) {
    const auto bits = static_cast<uint32_t>(b);
    const float x = bits_to_float(bits);
    if (std::isnan(x)) continue;
    const uint32_t want = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
    ASSERT_EQ(bf16_from_float(x), want) << std::hex << bits;
  }
  for (uint32_t c = 0; c < 65536; ++c) {
    const float v = bf16_to_float(static_cast<uint16_t>(c));
    if (std::isnan(v)) continue;
    ASSERT_EQ(bf16_from_float(v), c) << std::hex << c;
  }
}

TEST(F16Test, RoundsToNearestEvenOnTiesAndOverflowsToInf) {
  EXPECT_EQ(f16_from_float(1.0f), 0x3C00);
  EXPECT_EQ(f16_from_float(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie, down to even
  EXPECT_EQ(f16_from_float(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie, up to even
  EXPECT_EQ(f16_from_float(65504.0f), 0x7BFF);
  EXPECT_EQ(f16_from_float(65519.0f), 0x7BFF);
  EXPECT_EQ(f16_from_float(65520.0f), 0x7C00);  // midpoint to the virtual 65536: even -> Inf
  EXPECT_EQ(f16_from_float(-1e10f), 0xFC00);
  EXPECT_EQ(f16_from_float(kInf), 0x7C00);
  EXPECT_EQ(f16_from_float(std::ldexp(1.0f, -24)), 0x0001);  // min subnormal
  EXPECT_EQ(f16_from_float(std::ldexp(1.0f, -25)), 0x0000);  // half of it: tie to even (0)
  EXPECT_EQ(f16_from_float(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(f16_from_float(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 quanta: tie to even (2)
  EXPECT_EQ(f16_from_float(-std::ldexp(1.0f, -26)), 0x8000);
  EXPECT_EQ(f16_from_float(kNan), 0x7FFF);
  EXPECT_EQ(f16_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(f16_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_float(0xFC00), -kInf);
  EXPECT_TRUE(std::isnan(f16_to_float(0x7C01)));
}

TEST(F16Test, RoundTripsEveryCodeAndAgreesWithTheCompiler) {
  for (uint32_t c = 0; c < 65536; ++c) {
    const float v = f16_to_float(static_cast<uint16_t>(c));
    if (std::isnan(v)) continue;
    ASSERT_EQ(f16_from_float(v), c) << std::hex << c;
  }
#if defined(__FLT16_MAX__)
  // GCC's _Float16 conversion (IEEE RNE) as an independent reference.
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 997) {
    const float x = bits_to_float(static_cast<uint32_t>(b));
    if (std::isnan(x)) continue;
    const _Float16 h = static_cast<_Float16>(x);
    uint16_t want;
    std::memcpy(&want, &h, 2);
    ASSERT_EQ(f16_from_float(x), want) << std::hex << b;
    ASSERT_EQ(f16_to_float(want), static_cast<float>(h));
  }
#endif
}

// ------------------------------------------------------------------------------------------------
// reference_gemm and round_to_format

KernelSpec spec_of(const char* text) {
  auto s = parse_spec(text);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return s.ok() ? *s : KernelSpec{};
}

TEST(ReferenceGemmTest, ComputesAHandCheckedE4m3Case) {
  // A (2x3, lda 4; the padding column holds NaN and must never be read):
  //   [ 1.0  2.0 -0.5 | NaN ]     codes 38 40 B0 | 7F
  //   [ 1.5  0.0  448 | NaN ]     codes 3C 00 7E | 7F
  // B (2x3):
  //   [ 0.5  1.0  2.0 ]           codes 30 38 40
  //   [-1.0  0.25 1.0 ]           codes B8 28 38
  // sa = 0.5, sb = 4 -> factor 2.
  //   out00 = (0.5 + 2 - 1) * 2       = 3
  //   out01 = (-1 + 0.5 - 0.5) * 2    = -2
  //   out10 = (0.75 + 0 + 896) * 2    = 1793.5
  //   out11 = (-1.5 + 0 + 448) * 2    = 893
  const uint8_t a[] = {0x38, 0x40, 0xB0, 0x7F, 0x3C, 0x00, 0x7E, 0x7F};
  const uint8_t b[] = {0x30, 0x38, 0x40, 0xB8, 0x28, 0x38};
  const float sa = 0.5f, sb = 4.0f;
  std::vector<double> out;
  ASSERT_TRUE(
      reference_gemm(spec_of("gemm a=e4m3 b=e4m3 out=bf16"), 2, 2, 3, a, 4, b, 3, &sa, &sb, out).ok());
  EXPECT_EQ(out, (std::vector<double>{3.0, -2.0, 1793.5, 893.0}));
  EXPECT_EQ(round_to_format(out[2], Format::kBf16), 1792.0);  // 8 significant bits: quantum 8
  EXPECT_EQ(round_to_format(out[2], Format::kF16), 1794.0);   // quantum 1, tie to even
  EXPECT_EQ(round_to_format(out[2], Format::kF32), 1793.5);
}

TEST(ReferenceGemmTest, ComputesABf16CaseWithoutScales) {
  // [1 2] x [[3 4] [0.5 -1]]^T = [11, -1.5]
  const uint16_t a[] = {0x3F80, 0x4000};
  const uint16_t b[] = {0x4040, 0x4080, 0x3F00, 0xBF80};
  std::vector<double> out;
  ASSERT_TRUE(
      reference_gemm(spec_of("gemm a=bf16 b=bf16 out=bf16"), 1, 2, 2, a, 2, b, 2, nullptr, nullptr, out)
          .ok());
  EXPECT_EQ(out, (std::vector<double>{11.0, -1.5}));
  // Mixed: f16 activations, e5m2 weights with a tensor scale.
  const uint16_t ah[] = {0x3C00, 0xC000};  // 1, -2
  const uint8_t be[] = {0x3C, 0x40};       // 1, 2
  const float sb = 0.25f;
  ASSERT_TRUE(
      reference_gemm(spec_of("gemm a=f16 b=e5m2 out=f32"), 1, 1, 2, ah, 2, be, 2, nullptr, &sb, out).ok());
  EXPECT_EQ(out, (std::vector<double>{-0.75}));
  const float af[] = {0.1f, 3.0f};
  const float bf[] = {10.0f, 1.0f};
  ASSERT_TRUE(
      reference_gemm(spec_of("gemm a=f32 b=f32 out=f32"), 1, 1, 2, af, 2, bf, 2, nullptr, nullptr, out).ok());
  EXPECT_EQ(out[0], static_cast<double>(0.1f) * 10.0 + 3.0);
}

TEST(ReferenceGemmTest, ReportsUnsupportedAndInvalidArguments) {
  const uint8_t buf[64] = {};
  const float s = 1.0f;
  std::vector<double> out;
  Status st =
      reference_gemm(spec_of("gemm a=bf16 b=mxfp4 out=bf16"), 1, 1, 32, buf, 32, buf, 32, &s, &s, out);
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  EXPECT_NE(st.message().find("mxfp4"), std::string::npos) << st.message();
  st = reference_gemm(spec_of("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16"), 1, 1, 128, buf, 128,
                      buf, 128, &s, &s, out);
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  EXPECT_NE(st.message().find("block1x128"), std::string::npos) << st.message();
  st = reference_gemm(spec_of("gemm a=bf16 b=bf16 out=e4m3"), 1, 1, 1, buf, 1, buf, 1, nullptr, nullptr, out);
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  st = reference_gemm(spec_of("grouped_gemm[experts=2,layout=offsets] a=bf16 b=bf16 out=bf16"), 1, 1, 1, buf,
                      1, buf, 1, nullptr, nullptr, out);
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  st = reference_gemm(spec_of("gemm a=bf16 b=e4m3:tensor out=bf16 pass=dgrad"), 1, 1, 1, buf, 1, buf, 1, nullptr,
                      nullptr, out);
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  st = reference_gemm(spec_of("gemm a=e4m3 b=e4m3 out=bf16"), 1, 1, 1, buf, 1, buf, 1, nullptr, &s, out);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("scale pointer is null"), std::string::npos) << st.message();
  st = reference_gemm(spec_of("gemm a=bf16 b=bf16 out=bf16"), 1, 1, 4, buf, 3, buf, 4, nullptr, nullptr, out);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("lda=3"), std::string::npos) << st.message();
  st = reference_gemm(spec_of("gemm a=bf16 b=bf16 out=bf16"), 0, 1, 4, buf, 4, buf, 4, nullptr, nullptr, out);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  KernelSpec bad = spec_of("gemm a=bf16 b=bf16 out=bf16");
  bad.transpose = true;
  st = reference_gemm(bad, 1, 1, 1, buf, 1, buf, 1, nullptr, nullptr, out);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
}

TEST(ReferenceGemmTest, RoundToFormatGoesThroughF32First) {
  // 1 + 2^-8 + 2^-40: f32 drops the 2^-40, leaving a bf16 tie that goes to even (1.0). Rounding
  // the double straight to bf16 would give 1 + 2^-7.
  EXPECT_EQ(round_to_format(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40), Format::kBf16), 1.0);
  EXPECT_EQ(round_to_format(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -20), Format::kBf16),
            1.0 + std::ldexp(1.0, -7));
  EXPECT_EQ(round_to_format(70000.0, Format::kF16), std::numeric_limits<double>::infinity());
  EXPECT_EQ(round_to_format(500.0, Format::kE4m3), 448.0);  // satfinite
  EXPECT_EQ(round_to_format(1e6, Format::kE5m2), 57344.0);
  EXPECT_TRUE(std::isnan(round_to_format(1.0, Format::kMxfp4)));
  EXPECT_EQ(round_to_format(0.1, Format::kF32), static_cast<double>(0.1f));
}

TEST(ReferenceGemmTest, MatchesANaiveSumOnRandomBf16Data) {
  const uint32_t seed = std::random_device{}();
  std::printf("MatchesANaiveSumOnRandomBf16Data seed=%u\n", seed);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  const int m = 5, n = 7, k = 33;
  std::vector<uint16_t> a(m * k), b(n * k);
  for (auto& v : a) v = bf16_from_float(dist(rng));
  for (auto& v : b) v = bf16_from_float(dist(rng));
  std::vector<double> out;
  ASSERT_TRUE(reference_gemm(spec_of("gemm a=bf16 b=bf16 out=f32"), m, n, k, a.data(), k, b.data(), k,
                             nullptr, nullptr, out)
                  .ok());
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double want = 0;
      for (int kk = 0; kk < k; ++kk)
        want += double(bf16_to_float(a[i * k + kk])) * double(bf16_to_float(b[j * k + kk]));
      EXPECT_EQ(out[i * n + j], want) << "seed=" << seed;
    }
}

}  // namespace
}  // namespace kiln::numerics
