// Unit tests of the CPU quantization references in compiler/numerics: E2M1 (docs/numerics.md §1),
// E8M0 (§1, §3), MX blocks (§3), the Blackwell scale swizzle (§5) and the generic fp64
// dequantizer. Bitwise against the docs/numerics.md vectors; no CUDA. NVFP4 / four-over-six are in
// nvfp4_test.cpp, FP8 blocks in fp8_block_test.cpp.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "compiler/numerics/dequantize.hpp"
#include "compiler/numerics/e2m1.hpp"
#include "compiler/numerics/e8m0.hpp"
#include "compiler/numerics/fp32_rn.hpp"
#include "compiler/numerics/fp8.hpp"
#include "compiler/numerics/mx.hpp"
#include "compiler/numerics/scale_swizzle.hpp"

namespace kiln::numerics {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }
float from_bits(uint32_t b) { return std::bit_cast<float>(b); }

uint32_t fresh_seed(const char* test) {
  const uint32_t seed = std::random_device{}();
  std::printf("%s seed=%u\n", test, seed);
  return seed;
}

// A block of 32 (or more) elements: the listed values followed by zeros.
std::vector<float> padded(std::vector<float> head, size_t n) {
  head.resize(n, 0.0f);
  return head;
}

// ------------------------------------------------------------------------------------------------
// E2M1, docs/numerics.md §1

// §1, the E2M1 code table: every code's value.
TEST(E2m1Test, DecodesEveryCodeOfTheE2m1Table) {
  const float want[16] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f,
                          -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  for (int c = 0; c < 16; ++c) {
    EXPECT_EQ(bits(e2m1_to_float(static_cast<uint8_t>(c))), bits(want[c])) << "code " << c;
    EXPECT_EQ(bits(e2m1_to_float(static_cast<uint8_t>(0xF0 | c))), bits(want[c])) << "high nibble ignored";
  }
}

// §1, the E2M1 test vectors (x -> code): every row.
TEST(E2m1Test, EncodesTheE2m1Vectors) {
  const struct {
    float x;
    uint8_t code;
  } vectors[] = {
      {0.25f, 0x0}, {0.26f, 0x1}, {0.75f, 0x2},    {1.25f, 0x2},   {1.75f, 0x4},   {2.5f, 0x4},
      {2.75f, 0x5}, {3.5f, 0x6},  {5.0f, 0x6},     {5.0001f, 0x7}, {7.0f, 0x7},    {100.0f, 0x7},
      {-0.1f, 0x8}, {-2.75f, 0xD}, {-5.5f, 0xF},
  };
  for (const auto& v : vectors) EXPECT_EQ(e2m1_from_float(v.x), v.code) << "x=" << v.x;
}

// §1, the E2M1 thresholds: "|x| <= 0.25 -> 0, < 0.75 -> 0.5, <= 1.25 -> 1, < 1.75 -> 1.5, <= 2.5 -> 2,
// < 3.5 -> 3, <= 5 -> 4, else 6", each side of every threshold, both signs.
TEST(E2m1Test, ThresholdsAlternateLikeTiesToEven) {
  const struct {
    float t;
    uint8_t at, above;
  } thresholds[] = {{0.25f, 0, 1}, {0.75f, 2, 2}, {1.25f, 2, 3}, {1.75f, 4, 4},
                    {2.5f, 4, 5},  {3.5f, 6, 6},  {5.0f, 6, 7}};
  for (const auto& t : thresholds) {
    const float below = std::nextafter(t.t, 0.0f), above = std::nextafter(t.t, kInf);
    EXPECT_EQ(e2m1_from_float(t.t), t.at) << t.t;
    EXPECT_EQ(e2m1_from_float(above), t.above) << above;
    EXPECT_EQ(e2m1_from_float(-t.t), t.at | 0x8) << -t.t;
    EXPECT_EQ(e2m1_from_float(-above), t.above | 0x8) << -above;
    EXPECT_EQ(e2m1_from_float(below), t.at == t.above ? t.at - 1 : t.at) << below;
  }
}

TEST(E2m1Test, SaturatesKeepsTheSignOfZeroAndMapsNanToPositiveMax) {
  EXPECT_EQ(e2m1_from_float(kInf), 0x7);
  EXPECT_EQ(e2m1_from_float(-kInf), 0xF);
  EXPECT_EQ(e2m1_from_float(6.0f), 0x7);
  EXPECT_EQ(e2m1_from_float(-1e30f), 0xF);
  EXPECT_EQ(e2m1_from_float(0.0f), 0x0);
  EXPECT_EQ(e2m1_from_float(-0.0f), 0x8);
  EXPECT_EQ(e2m1_from_float(-1e-40f), 0x8);  // negative subnormal -> -0
  EXPECT_EQ(e2m1_from_float(kNan), 0x7);     // PTX: positive MAX_NORM for formats without NaN
  EXPECT_EQ(e2m1_from_float(-kNan), 0x7);
}

// Exhaustive: every code decodes and re-encodes to itself.
TEST(E2m1Test, EveryCodeRoundTrips) {
  for (int c = 0; c < 16; ++c) EXPECT_EQ(e2m1_from_float(e2m1_to_float(static_cast<uint8_t>(c))), c);
}

// Against brute force: nearest of the 8 magnitudes, ties to the even mantissa bit (codes 0,2,4,6),
// beyond 6 saturating. Dense sweep of [0, 8) plus every midpoint and its neighbours.
TEST(E2m1Test, AgreesWithBruteForceNearestEven) {
  auto brute = [](float x) -> uint8_t {
    const double a = std::fabs(static_cast<double>(x));
    int best = 0;
    double best_d = std::numeric_limits<double>::infinity();
    for (int c = 0; c < 8; ++c) {
      const double d = std::fabs(a - e2m1_to_float(static_cast<uint8_t>(c)));
      if (d < best_d || (d == best_d && (c & 1) == 0)) best = c, best_d = d;
    }
    return static_cast<uint8_t>(best | (std::signbit(x) ? 0x8 : 0));
  };
  for (int i = 0; i < 80000; ++i) {
    const float x = static_cast<float>(i) * 1e-4f;
    ASSERT_EQ(e2m1_from_float(x), brute(x)) << x;
    ASSERT_EQ(e2m1_from_float(-x), brute(-x)) << -x;
  }
  for (int c = 0; c < 7; ++c) {
    const float mid = (e2m1_to_float(static_cast<uint8_t>(c)) + e2m1_to_float(static_cast<uint8_t>(c + 1))) / 2;
    for (float x : {std::nextafter(mid, 0.0f), mid, std::nextafter(mid, kInf)}) EXPECT_EQ(e2m1_from_float(x), brute(x));
  }
}

// §1, E2M1 packing: element 2i in the low nibble. Using the NVFP4 test vector's codes and bytes (§4).
TEST(E2m1Test, PacksTheEvenElementInTheLowNibble) {
  EXPECT_EQ(e2m1_pack(0x7, 0xE), 0xE7);
  const std::vector<uint8_t> codes = {0x7, 0xE, 0x5, 0x3, 0x1, 0x9, 0x0, 0x4,
                                      0xF, 0x7, 0x0, 0xD, 0x6, 0x0, 0xB, 0x7};
  const std::vector<uint8_t> packed = {0xe7, 0x35, 0x91, 0x40, 0x7f, 0xd0, 0x06, 0x7b};
  EXPECT_EQ(e2m1_pack_codes(codes), packed);
  EXPECT_EQ(e2m1_unpack_codes(packed, 16), codes);
  EXPECT_EQ(e2m1_get(packed, 0), 0x7);
  EXPECT_EQ(e2m1_get(packed, 1), 0xE);
  std::vector<uint8_t> buf = {0xAB};
  e2m1_set(buf, 1, 0x3);
  EXPECT_EQ(buf[0], 0x3B);
  e2m1_set(buf, 0, 0xF);
  EXPECT_EQ(buf[0], 0x3F);
  EXPECT_EQ(e2m1_pack_codes(std::vector<uint8_t>{0x1, 0x2, 0x3}), (std::vector<uint8_t>{0x21, 0x03}));
}

// ------------------------------------------------------------------------------------------------
// E8M0, docs/numerics.md §1 and §3

// §1: b -> 2^(b-127) exactly; b = 0 is the subnormal 0x00400000; 0xFF is NaN; reciprocal = 254 - b.
TEST(E8m0Test, DecodesTheSpecialCasesExactly) {
  EXPECT_EQ(bits(e8m0_to_float(0x00)), 0x00400000u);
  EXPECT_TRUE(std::isnan(e8m0_to_float(0xFF)));
  EXPECT_EQ(e8m0_to_float(0x7F), 1.0f);
  EXPECT_EQ(e8m0_to_float(0x01), std::ldexp(1.0f, -126));
  EXPECT_EQ(e8m0_to_float(0xFE), std::ldexp(1.0f, 127));
  for (int b = 0; b < 255; ++b) {
    EXPECT_EQ(static_cast<double>(e8m0_to_float(static_cast<uint8_t>(b))), std::ldexp(1.0, b - 127)) << b;
    EXPECT_EQ(e8m0_to_float(static_cast<uint8_t>(b)) * e8m0_to_float(static_cast<uint8_t>(254 - b)), 1.0f) << b;
  }
}

// §3, RCEIL (round up): expbits + (mantissa != 0) capped at 0xFE; subnormal -> 0 if mantissa
// <= 0x400000 else 1; NaN -> 0xFF. §1: 0.3 / 0.75 / 3.0, where torch's nearest cast gives
// 0x7D / 0x7F / 0x81, round up to 0x7E / 0x7F / 0x81.
TEST(E8m0Test, RoundsUpLikeCvtRpSatfinite) {
  EXPECT_EQ(e8m0_round_up(0.3f), 0x7E);
  EXPECT_EQ(e8m0_round_up(0.75f), 0x7F);
  EXPECT_EQ(e8m0_round_up(3.0f), 0x81);
  EXPECT_EQ(e8m0_round_up(1.0f), 0x7F);
  EXPECT_EQ(e8m0_round_up(std::nextafter(1.0f, 2.0f)), 0x80);
  EXPECT_EQ(e8m0_round_up(std::nextafter(1.0f, 0.0f)), 0x7F);
  EXPECT_EQ(e8m0_round_up(0.0f), 0x00);
  EXPECT_EQ(e8m0_round_up(from_bits(0x00000001)), 0x00);
  EXPECT_EQ(e8m0_round_up(from_bits(0x00400000)), 0x00);  // exactly 2^-127
  EXPECT_EQ(e8m0_round_up(from_bits(0x00400001)), 0x01);
  EXPECT_EQ(e8m0_round_up(from_bits(0x007FFFFF)), 0x01);
  EXPECT_EQ(e8m0_round_up(from_bits(0x00800000)), 0x01);  // 2^-126
  EXPECT_EQ(e8m0_round_up(std::ldexp(1.0f, 127)), 0xFE);
  EXPECT_EQ(e8m0_round_up(std::numeric_limits<float>::max()), 0xFE);  // saturates
  EXPECT_EQ(e8m0_round_up(kInf), 0xFE);
  EXPECT_EQ(e8m0_round_up(kNan), 0xFF);
}

// §3, FLOOR: clamp(expbits(amax) - 127 - emax, -127, 128) + 127; non-finite -> 0xFF.
TEST(E8m0Test, FloorReadsTheExponentBits) {
  EXPECT_EQ(e8m0_scale_floor(1.0f, 2), 0x7D);
  EXPECT_EQ(e8m0_scale_floor(7.99f, 2), 0x7F);
  EXPECT_EQ(e8m0_scale_floor(0.0f, 2), 0x00);
  EXPECT_EQ(e8m0_scale_floor(1e-40f, 8), 0x00);  // subnormal amax
  EXPECT_EQ(e8m0_scale_floor(std::ldexp(1.0f, -120), 8), 0x00);  // -128 clamps to -127
  EXPECT_EQ(e8m0_scale_floor(std::numeric_limits<float>::max(), 2), 0xFC);
  EXPECT_EQ(e8m0_scale_floor(kInf, 2), 0xFF);
  EXPECT_EQ(e8m0_scale_floor(kNan, 8), 0xFF);
}

// §3: RCEIL multiplies by f32(1/M) (0x3B124925 for 448, per §4) rather than dividing.
TEST(E8m0Test, RceilMultipliesByTheRoundedReciprocal) {
  EXPECT_EQ(bits(fp32::div(1.0f, 448.0f)), 0x3B124925u);
  EXPECT_EQ(bits(fp32::div(1.0f, 6.0f)), 0x3E2AAAABu);
  EXPECT_EQ(e8m0_scale_rceil(448.0f, 448.0f), 0x7F);
  EXPECT_EQ(e8m0_scale_rceil(449.0f, 448.0f), 0x80);
  EXPECT_EQ(e8m0_scale_rceil(6.0f, 6.0f), 0x7F);
  EXPECT_EQ(e8m0_scale_rceil(0.0f, 6.0f), 0x00);
  EXPECT_EQ(e8m0_scale_rceil(kNan, 6.0f), 0xFF);
  EXPECT_EQ(e8m0_scale_rceil(kInf, 6.0f), 0xFE);
}

// ------------------------------------------------------------------------------------------------
// MX, docs/numerics.md §3

struct MxRow {
  float amax;
  uint8_t floor_fp4_b, floor_fp4_q0, floor_e4m3_b, floor_e4m3_q0;
  uint8_t rceil_fp4_b, rceil_fp4_q0, rceil_e4m3_b, rceil_e4m3_q0;
};

// §3, the MX test-vector table, every row: a block of 32 holding amax then zeros; scale byte and code
// of element 0.
TEST(MxTest, MatchesEveryRowOfTheMxVectorTable) {
  const MxRow rows[] = {
      {1.0f, 0x7D, 0x6, 0x77, 0x78, 0x7D, 0x6, 0x77, 0x78},
      {3.9f, 0x7E, 0x7, 0x78, 0x7E, 0x7F, 0x6, 0x79, 0x78},
      {6.0f, 0x7F, 0x7, 0x79, 0x7C, 0x7F, 0x7, 0x79, 0x7C},
      {7.0f, 0x7F, 0x7, 0x79, 0x7E, 0x80, 0x6, 0x79, 0x7E},
      {0.3f, 0x7B, 0x6, 0x75, 0x7A, 0x7B, 0x6, 0x75, 0x7A},
      {500.0f, 0x85, 0x7, 0x7F, 0x7E, 0x86, 0x6, 0x80, 0x78},
      {1e-3f, 0x73, 0x6, 0x6D, 0x78, 0x73, 0x6, 0x6D, 0x78},
      {0.0f, 0x00, 0x0, 0x00, 0x00, 0x00, 0x0, 0x00, 0x00},
  };
  for (const MxRow& r : rows) {
    const std::vector<float> x = padded({r.amax}, 32);
    const struct {
      Format f;
      MxRounding m;
      uint8_t b, q0;
    } cases[] = {{Format::kMxfp4, MxRounding::kFloor, r.floor_fp4_b, r.floor_fp4_q0},
                 {Format::kMxfp8, MxRounding::kFloor, r.floor_e4m3_b, r.floor_e4m3_q0},
                 {Format::kMxfp4, MxRounding::kRceil, r.rceil_fp4_b, r.rceil_fp4_q0},
                 {Format::kMxfp8, MxRounding::kRceil, r.rceil_e4m3_b, r.rceil_e4m3_q0}};
    for (const auto& c : cases) {
      SCOPED_TRACE("amax=" + std::to_string(r.amax) + " " + format_name(c.f) +
                   (c.m == MxRounding::kFloor ? " floor" : " rceil"));
      StatusOr<QuantizedTensor> q = mx_quantize(x, 1, 32, c.f, c.m);
      ASSERT_TRUE(q.ok()) << q.status().to_string();
      ASSERT_EQ(q->scale_bytes.size(), 1u);
      EXPECT_EQ(q->scale_bytes[0], c.b);
      const uint8_t q0 = c.f == Format::kMxfp4 ? e2m1_get(q->data, 0) : q->data[0];
      EXPECT_EQ(q0, c.q0);
      for (int i = 1; i < 32; ++i)
        EXPECT_EQ(c.f == Format::kMxfp4 ? e2m1_get(q->data, i) : q->data[i], 0) << "zero element " << i;
    }
  }
}

// §3, the worked MXFP4 block: codes, packed bytes and (RCEIL) decoded values.
TEST(MxTest, MatchesTheWorkedMxfp4Block) {
  const std::vector<float> x = padded({1.3f, -0.2f, 2.9f, 0.0f, 7.9f, -3.3f, 0.51f, 6.2f}, 32);
  StatusOr<QuantizedTensor> fl = mx_quantize(x, 1, 32, Format::kMxfp4, MxRounding::kFloor);
  ASSERT_TRUE(fl.ok()) << fl.status().to_string();
  EXPECT_EQ(fl->scale_bytes, std::vector<uint8_t>{0x7F});
  ASSERT_EQ(fl->data.size(), 16u);
  EXPECT_EQ(e2m1_unpack_codes(fl->data, 8), (std::vector<uint8_t>{0x3, 0x8, 0x5, 0x0, 0x7, 0xD, 0x1, 0x7}));
  EXPECT_EQ(std::vector<uint8_t>(fl->data.begin(), fl->data.begin() + 4), (std::vector<uint8_t>{0x83, 0x05, 0xd7, 0x71}));
  for (size_t i = 4; i < 16; ++i) EXPECT_EQ(fl->data[i], 0);

  StatusOr<QuantizedTensor> rc = mx_quantize(x, 1, 32, Format::kMxfp4, MxRounding::kRceil);
  ASSERT_TRUE(rc.ok()) << rc.status().to_string();
  EXPECT_EQ(rc->scale_bytes, std::vector<uint8_t>{0x80});
  EXPECT_EQ(e2m1_unpack_codes(rc->data, 8), (std::vector<uint8_t>{0x1, 0x8, 0x3, 0x0, 0x6, 0xB, 0x1, 0x5}));
  EXPECT_EQ(std::vector<uint8_t>(rc->data.begin(), rc->data.begin() + 4), (std::vector<uint8_t>{0x81, 0x03, 0xb6, 0x51}));
  StatusOr<std::vector<float>> back = mx_dequantize(*rc);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  const float want[8] = {1.0f, -0.0f, 3.0f, 0.0f, 8.0f, -3.0f, 1.0f, 6.0f};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(bits((*back)[i]), bits(want[i])) << i;
}

// §3, the worked MXFP8 (E4M3) block.
TEST(MxTest, MatchesTheWorkedMxfp8Block) {
  const std::vector<float> x = padded({300.0f, -1.0f, 0.01f, 17.0f, 450.0f, 0.0f}, 32);
  StatusOr<QuantizedTensor> fl = mx_quantize(x, 1, 32, Format::kMxfp8, MxRounding::kFloor);
  ASSERT_TRUE(fl.ok()) << fl.status().to_string();
  EXPECT_EQ(fl->scale_bytes, std::vector<uint8_t>{0x7F});
  EXPECT_EQ(std::vector<uint8_t>(fl->data.begin(), fl->data.begin() + 6),
            (std::vector<uint8_t>{0x79, 0xB8, 0x05, 0x58, 0x7E, 0x00}));
  StatusOr<QuantizedTensor> rc = mx_quantize(x, 1, 32, Format::kMxfp8, MxRounding::kRceil);
  ASSERT_TRUE(rc.ok()) << rc.status().to_string();
  EXPECT_EQ(rc->scale_bytes, std::vector<uint8_t>{0x80});
  EXPECT_EQ(std::vector<uint8_t>(rc->data.begin(), rc->data.begin() + 6),
            (std::vector<uint8_t>{0x71, 0xB0, 0x03, 0x50, 0x76, 0x00}));
  ASSERT_EQ(rc->data.size(), 32u);
}

// Several rows and blocks: each block of each row gets its own scale, in row-major [rows, K/32].
TEST(MxTest, ScalesAreRowMajorOnePerBlockAlongK) {
  std::vector<float> x(2 * 64, 0.0f);
  x[0] = 1.0f;        // row 0, block 0
  x[32] = 6.0f;       // row 0, block 1
  x[64 + 5] = 0.3f;   // row 1, block 0
  x[64 + 40] = 500.0f;  // row 1, block 1
  StatusOr<QuantizedTensor> q = mx_quantize(x, 2, 64, Format::kMxfp4, MxRounding::kRceil);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_EQ(q->scale_bytes, (std::vector<uint8_t>{0x7D, 0x7F, 0x7B, 0x86}));  // §3 RCEIL fp4 bytes
  EXPECT_EQ(q->data.size(), 64u);
  EXPECT_EQ(e2m1_get(std::span<const uint8_t>(q->data).subspan(32), 5), 0x6);
  EXPECT_EQ(e2m1_get(std::span<const uint8_t>(q->data).subspan(32), 40), 0x6);
}

// §3: NaN anywhere in a block -> 0xFF under both rules and a NaN block on dequantization;
// +Inf -> 0xFF (FLOOR) / 0xFE (RCEIL).
TEST(MxTest, NonFiniteBlocks) {
  std::vector<float> x = padded({1.0f, kNan}, 64);
  x[40] = kInf;
  for (MxRounding m : {MxRounding::kFloor, MxRounding::kRceil}) {
    StatusOr<QuantizedTensor> q = mx_quantize(x, 1, 64, Format::kMxfp8, m);
    ASSERT_TRUE(q.ok());
    EXPECT_EQ(q->scale_bytes[0], 0xFF);
    EXPECT_EQ(q->scale_bytes[1], m == MxRounding::kFloor ? 0xFF : 0xFE);
    StatusOr<std::vector<float>> back = mx_dequantize(*q);
    ASSERT_TRUE(back.ok());
    for (int i = 0; i < 32; ++i) EXPECT_TRUE(std::isnan((*back)[i])) << i;
  }
}

// Exhaustive: for every scale byte 0..254 and every element code, decode then encode returns the
// code (where the value is finite in fp32), and the fp32 value is the exact product.
TEST(MxTest, EveryCodeAtEveryScaleRoundTrips) {
  for (int b = 0; b < 255; ++b) {
    for (int c = 0; c < 256; ++c) {
      const float v = mx_element_value(static_cast<uint8_t>(c), static_cast<uint8_t>(b), MxElement::kE4m3);
      const float e = e4m3_to_float(static_cast<uint8_t>(c));
      if (std::isnan(e)) {
        EXPECT_TRUE(std::isnan(v));
        continue;
      }
      const double exact = std::ldexp(static_cast<double>(e), b - 127);
      if (std::fabs(exact) > std::numeric_limits<float>::max()) continue;
      ASSERT_EQ(static_cast<double>(v), exact) << "b=" << b << " c=" << c;
      ASSERT_EQ(mx_element_code(v, static_cast<uint8_t>(b), MxElement::kE4m3), c) << "b=" << b << " c=" << c;
    }
    for (int c = 0; c < 16; ++c) {
      const float v = mx_element_value(static_cast<uint8_t>(c), static_cast<uint8_t>(b), MxElement::kE2m1);
      const double exact = std::ldexp(static_cast<double>(e2m1_to_float(static_cast<uint8_t>(c))), b - 127);
      if (std::fabs(exact) > std::numeric_limits<float>::max()) continue;
      ASSERT_EQ(static_cast<double>(v), exact) << "b=" << b << " c=" << c;
      ASSERT_EQ(mx_element_code(v, static_cast<uint8_t>(b), MxElement::kE2m1), c) << "b=" << b << " c=" << c;
    }
  }
  EXPECT_TRUE(std::isnan(mx_element_value(0x38, 0xFF, MxElement::kE4m3)));
}

// Scaling by 2^(127-b) is exact at both ends of the byte range: b = 254 multiplies by 2^-127, which
// alone is an fp32 subnormal, and b = 0 scales subnormal inputs up by 2^127.
TEST(MxTest, ElementScalingIsExactAtTheEdgesOfTheExponentRange) {
  EXPECT_EQ(mx_element_code(std::ldexp(3.0f, 126), 0xFE, MxElement::kE2m1), 0x3);    // 1.5
  EXPECT_EQ(mx_element_code(std::ldexp(3.0f, -127), 0x00, MxElement::kE2m1), 0x5);   // 3 from a subnormal
  EXPECT_EQ(mx_element_code(from_bits(0x00600000), 0x00, MxElement::kE4m3), 0x3C);   // 1.5 * 2^-127 -> 1.5
  EXPECT_EQ(mx_element_code(std::ldexp(-448.0f, 120), 0xF7, MxElement::kE4m3), 0xFE);  // -448
  EXPECT_EQ(mx_element_code(std::ldexp(1.0f, -136), 0x00, MxElement::kE4m3), 0x01);  // 2^-9: E4M3 min subnormal
}

// Round trip on random data (seeded, printed): RCEIL never clamps, so every element is within half
// a step: |x^ - x| <= max(X/4, |x|/4) for E2M1 and <= max(X * 2^-10, |x| * 2^-4) for E4M3; FLOOR
// obeys the same bound except for clamped elements above M * X. The f64 dequantizer agrees exactly.
TEST(MxTest, RoundTripErrorIsWithinHalfAStep) {
  const uint32_t seed = fresh_seed("MxTest.RoundTripErrorIsWithinHalfAStep");
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exp(-30, 30);
  const int64_t rows = 7, cols = 96;
  std::vector<float> x(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    const int e = exp(rng);  // one magnitude per row, so scales span a wide range
    for (int64_t c = 0; c < cols; ++c) x[r * cols + c] = std::ldexp(normal(rng), e);
  }
  for (Format f : {Format::kMxfp4, Format::kMxfp8}) {
    for (MxRounding m : {MxRounding::kRceil, MxRounding::kFloor}) {
      StatusOr<QuantizedTensor> q = mx_quantize(x, rows, cols, f, m);
      ASSERT_TRUE(q.ok()) << q.status().to_string();
      StatusOr<std::vector<float>> back = mx_dequantize(*q);
      StatusOr<std::vector<double>> exact = dequantize_f64(*q);
      ASSERT_TRUE(back.ok() && exact.ok());
      const double elem_max = f == Format::kMxfp4 ? 6.0 : 448.0;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          const int64_t i = r * cols + c;
          const double X = e8m0_to_float(q->scale_bytes[r * (cols / 32) + c / 32]);
          const double xi = x[i], yi = (*back)[i];
          ASSERT_EQ(yi, (*exact)[i]) << "seed=" << seed;
          if (m == MxRounding::kFloor && std::fabs(xi) > elem_max * X) {
            EXPECT_EQ(std::fabs(yi), elem_max * X) << "clamped, seed=" << seed;
            continue;
          }
          const double bound = f == Format::kMxfp4 ? std::max(X / 4, std::fabs(xi) / 4)
                                                   : std::max(X * std::ldexp(1.0, -10), std::fabs(xi) / 16);
          ASSERT_LE(std::fabs(yi - xi), bound) << format_name(f) << " r=" << r << " c=" << c << " seed=" << seed;
        }
      }
    }
  }
}

TEST(MxTest, RejectsBadArguments) {
  std::vector<float> x(1000, 1.0f);
  StatusOr<QuantizedTensor> q = mx_quantize(x, 1, 1000, Format::kMxfp4, MxRounding::kRceil);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(q.status().message().find("K=1000 is not a multiple of the mxfp4 block (32)"), std::string::npos)
      << q.status().message();
  EXPECT_FALSE(mx_quantize(x, 1, 1000, Format::kNvfp4, MxRounding::kRceil).ok());
  EXPECT_FALSE(mx_quantize(x, 2, 512, Format::kMxfp8, MxRounding::kRceil).ok());  // 1024 elements needed
  EXPECT_FALSE(mx_quantize(x, -1, 32, Format::kMxfp8, MxRounding::kRceil).ok());
  QuantizedTensor bad;
  bad.format = Format::kNvfp4;
  EXPECT_FALSE(mx_dequantize(bad).ok());
}

// ------------------------------------------------------------------------------------------------
// Scale swizzle, docs/numerics.md §5

// §5, the swizzle examples with nKt=2: every row.
TEST(ScaleSwizzleTest, MatchesTheSwizzleOffsetTable) {
  const struct {
    int64_t r, c, off;
  } rows[] = {{0, 0, 0},    {0, 3, 3},     {0, 4, 512},   {1, 0, 16},     {31, 0, 496},
              {32, 0, 4},   {33, 2, 22},   {127, 3, 511}, {128, 0, 1024}, {200, 5, 1673}};
  for (const auto& r : rows) EXPECT_EQ(scale_swizzle_offset(r.r, r.c, 2), r.off) << r.r << "," << r.c;
}

TEST(ScaleSwizzleTest, IsABijectionOntoThePaddedTilesAndRoundTrips) {
  const int64_t rows = 201, cols = 6;  // pads to 256 x 8: two row tiles, nKt = 2
  ASSERT_EQ(swizzled_scale_bytes(rows, cols), 256 * 8);
  std::set<int64_t> seen;
  for (int64_t r = 0; r < 256; ++r)
    for (int64_t c = 0; c < 8; ++c) {
      const int64_t o = scale_swizzle_offset(r, c, 2);
      ASSERT_GE(o, 0);
      ASSERT_LT(o, 256 * 8);
      ASSERT_TRUE(seen.insert(o).second) << r << "," << c;
    }
  std::vector<uint8_t> sf(rows * cols);
  for (size_t i = 0; i < sf.size(); ++i) sf[i] = static_cast<uint8_t>(1 + i % 251);  // never 0
  StatusOr<std::vector<uint8_t>> tiled = swizzle_scales(sf, rows, cols);
  ASSERT_TRUE(tiled.ok()) << tiled.status().to_string();
  int64_t zeros = 0;
  for (uint8_t b : *tiled) zeros += b == 0;
  EXPECT_EQ(zeros, 256 * 8 - rows * cols);  // exactly the padding is zero
  EXPECT_EQ((*tiled)[1673], sf[200 * cols + 5]);  // §5: (200, 5) -> 1673
  StatusOr<std::vector<uint8_t>> back = unswizzle_scales(*tiled, rows, cols);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, sf);
  EXPECT_FALSE(swizzle_scales(sf, rows, cols + 1).ok());
  EXPECT_FALSE(unswizzle_scales(sf, rows, cols).ok());
}

// ------------------------------------------------------------------------------------------------
// Generic dequantization (dequantize.hpp)

TEST(DequantizeTest, ChecksTheTensorBeforeReading) {
  std::vector<float> x(64, 0.5f);
  StatusOr<QuantizedTensor> q = mx_quantize(x, 2, 32, Format::kMxfp4, MxRounding::kRceil);
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(check_quantized_tensor(*q).ok());
  QuantizedTensor short_data = *q;
  short_data.data.pop_back();
  Status s = check_quantized_tensor(short_data);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("data has 31 entries, expected 32"), std::string::npos) << s.message();
  QuantizedTensor wrong_block = *q;
  wrong_block.block_cols = 16;
  EXPECT_FALSE(dequantize_f64(wrong_block).ok());
  QuantizedTensor bf16 = *q;
  bf16.format = Format::kBf16;
  EXPECT_EQ(dequantize_f64(bf16).status().code(), StatusCode::kUnsupported);
}

}  // namespace
}  // namespace kiln::numerics
