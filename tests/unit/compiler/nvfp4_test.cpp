// Unit tests of the NVFP4 reference (compiler/numerics/nvfp4.hpp, docs/numerics.md §4) and of
// four-over-six block selection (four_over_six.hpp, docs/numerics.md §4). Bitwise against the
// docs/numerics.md vectors, in TransformerEngine's fp32 operation order; no CUDA.
#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "compiler/numerics/dequantize.hpp"
#include "compiler/numerics/e2m1.hpp"
#include "compiler/numerics/four_over_six.hpp"
#include "compiler/numerics/fp32_rn.hpp"
#include "compiler/numerics/fp8.hpp"
#include "compiler/numerics/nvfp4.hpp"

namespace kiln::numerics {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }
float from_bits(uint32_t b) { return std::bit_cast<float>(b); }

using Block = std::array<float, kNvfp4Block>;
using Codes = std::array<uint8_t, kNvfp4Block>;

std::vector<uint8_t> packed(const Codes& c) { return e2m1_pack_codes(c); }

// docs/numerics.md §4, the NVFP4 test vector's input.
const Block kNvfp4VectorBlock = {10.0f, -7.3f, 5.0f, 2.5f, 1.2f, -0.6f, 0.0f, 3.3f,
                                -10.0f, 8.9f, 0.26f, -4.4f, 6.7f, 0.05f, -2.2f, 9.6f};
// docs/numerics.md §4, four-over-six blocks A and B.
const Block kBlockA = {6, 5, 5, 5, -5, 5, 4.9f, 5.1f, 2, 1, 0, -3, 5, 5, 5, 5};
const Block kBlockB = {6, 0.3f, -0.4f, 0.2f, 0.1f, 0.35f, -0.2f, 0.15f, 0.05f, 0.3f, -0.3f, 0.25f, 0.45f, 0.1f, 0, 0.2f};

// ------------------------------------------------------------------------------------------------
// docs/numerics.md §4, exact TE quantization

// §4, the fp32 constants' bit patterns: f32(1/6), f32(1/2688), f32(1/448).
TEST(Nvfp4Test, Fp32ConstantsHaveTheirBitPatterns) {
  EXPECT_EQ(bits(fp32::div(1.0f, 6.0f)), 0x3E2AAAABu);
  EXPECT_EQ(bits(fp32::div(1.0f, 2688.0f)), 0x39C30C31u);
  EXPECT_EQ(bits(fp32::div(1.0f, 448.0f)), 0x3B124925u);
  // The dequantizer's f32(1/(6*448)) is that constant: code 1.0 x scale 1.0 x amax 1.0.
  EXPECT_EQ(bits(nvfp4_dequantize_value(0x2, 0x38, 1.0f, 448)), 0x39C30C31u);
}

// §4: S_enc = fminf(2688/amax_t, FLT_MAX), 1 if amax_t == 0 or S_enc == 0; four-over-six: 1536/amax_t
// with 256.
TEST(Nvfp4Test, EncodeScaleFollowsTheSpecialCases) {
  EXPECT_EQ(bits(nvfp4_encode_scale(20.0f, 448)), 0x43066666u);  // §4 test vector
  EXPECT_EQ(nvfp4_encode_scale(6.0f, 256), 256.0f);               // four-over-six: 1536 / 6
  EXPECT_EQ(nvfp4_encode_scale(0.0f, 448), 1.0f);
  EXPECT_EQ(nvfp4_encode_scale(kInf, 448), 1.0f);                 // 2688 / Inf == 0
  EXPECT_EQ(nvfp4_encode_scale(1e-40f, 448), FLT_MAX);            // quotient overflows
  EXPECT_EQ(nvfp4_global_decode_scale(2688.0f, 448), 1.0f);
  EXPECT_EQ(nvfp4_global_decode_scale(6.0f, 256), 1.0f / 256.0f);
}

// §4, the NVFP4 test vector, every listed quantity: S_enc, S_dec, sf 0x76, inv, scaled values, codes,
// packed bytes `e7 35 91 40 7f d0 06 7b`, dequantized values.
TEST(Nvfp4Test, MatchesTheNvfp4Vector) {
  const float amax_t = 20.0f;
  const float s_enc = nvfp4_encode_scale(amax_t, 448);
  EXPECT_EQ(bits(s_enc), 0x43066666u);  // 134.39999
  EXPECT_EQ(bits(fp32::div(1.0f, s_enc)), 0x3BF3CF3Eu);
  const Nvfp4Block b = nvfp4_quantize_block(kNvfp4VectorBlock, amax_t, 448);
  EXPECT_EQ(b.scale, 0x76);  // 224
  const float inv = nvfp4_block_encode_scale(b.scale, s_enc);
  EXPECT_EQ(bits(inv), 0x3F199999u);  // 0.59999996
  const float scaled[16] = {5.9999995f, -4.38f, 2.9999998f, 1.4999999f, 0.72f, -0.36f, 0.0f, 1.98f,
                            -6.0f,      5.34f,  0.156f,     -2.64f,     4.02f, 0.03f,  -1.32f, 5.76f};
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(fp32::mul(kNvfp4VectorBlock[i], inv), scaled[i], 1e-6) << i;
  const Codes codes = {0x7, 0xE, 0x5, 0x3, 0x1, 0x9, 0x0, 0x4, 0xF, 0x7, 0x0, 0xD, 0x6, 0x0, 0xB, 0x7};
  EXPECT_EQ(b.codes, codes);
  EXPECT_EQ(packed(b.codes), (std::vector<uint8_t>{0xe7, 0x35, 0x91, 0x40, 0x7f, 0xd0, 0x06, 0x7b}));

  StatusOr<QuantizedTensor> q = nvfp4_quantize(kNvfp4VectorBlock, 1, 16, amax_t, Nvfp4Options{});
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_EQ(q->data, (std::vector<uint8_t>{0xe7, 0x35, 0x91, 0x40, 0x7f, 0xd0, 0x06, 0x7b}));
  EXPECT_EQ(q->scale_bytes, std::vector<uint8_t>{0x76});
  EXPECT_EQ(q->scale_type, ScaleType::kUe4m3);
  EXPECT_EQ(q->amax, 20.0f);
  EXPECT_EQ(q->global_decode_scale, fp32::div(20.0f, 2688.0f));
  StatusOr<std::vector<float>> back = nvfp4_dequantize(*q);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  const float want[16] = {10.0f, -6.6666670f, 5.0f, 2.5f, 0.8333334f, -0.8333334f, 0.0f, 3.3333335f,
                          -10.0f, 10.0f, 0.0f, -5.0f, 6.6666670f, 0.0f, -2.5f, 10.0f};
  for (int i = 0; i < 16; ++i) EXPECT_EQ(bits((*back)[i]), bits(want[i])) << i << ": " << (*back)[i];
}

// §4 tie example: amax_t = 0x41BEFB38, amax_b = 0x3E45CD56. TE's order amax_b * (S_enc * f32(1/6))
// gives 3.6250002 -> 0x47; torchao's f32(f32(amax_b/6) / f32(amax_t/2688)) gives the midpoint 3.625,
// which ties to even 0x46. kiln follows TE.
TEST(Nvfp4Test, FollowsTransformerEngineAtTheTie) {
  const float amax_t = from_bits(0x41BEFB38), amax_b = from_bits(0x3E45CD56);
  Block x{};
  x[3] = -amax_b;
  EXPECT_EQ(nvfp4_quantize_block(x, amax_t, 448).scale, 0x47);
  const float s_enc = nvfp4_encode_scale(amax_t, 448);
  EXPECT_EQ(fp32::mul(amax_b, fp32::mul(s_enc, fp32::div(1.0f, 6.0f))), 3.6250002f);
  const float torchao = fp32::div(fp32::div(amax_b, 6.0f), fp32::div(amax_t, 2688.0f));
  EXPECT_EQ(torchao, 3.625f);
  EXPECT_EQ(e4m3_from_float(torchao, true), 0x46);
}

// §4, zero blocks: TE gives an all-zero block sf 0x00 (torchao: 0x08); inv is then FLT_MAX and every
// code 0 (-0 for -0.0 inputs).
TEST(Nvfp4Test, AllZeroBlockGetsScaleZero) {
  Block x{};
  x[5] = -0.0f;
  const Nvfp4Block b = nvfp4_quantize_block(x, 20.0f, 448);
  EXPECT_EQ(b.scale, 0x00);
  EXPECT_EQ(nvfp4_block_encode_scale(0x00, nvfp4_encode_scale(20.0f, 448)), FLT_MAX);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(b.codes[i], i == 5 ? 0x8 : 0x0) << i;
  const Nvfp4Block all_zero = nvfp4_quantize_block(Block{}, 0.0f, 448);  // amax_t == 0: S_enc = 1
  EXPECT_EQ(all_zero.scale, 0x00);
}

// §4: TE may produce subnormal E4M3 block scales (torchao clamps to >= 2^-6).
TEST(Nvfp4Test, SmallBlocksGetSubnormalScales) {
  Block x{};
  x[0] = 0.001f;  // amax_b / amax_t = 1e-5: sf = 0.00448, below the E4M3 min normal 2^-6
  const Nvfp4Block b = nvfp4_quantize_block(x, 100.0f, 448);
  EXPECT_EQ(b.scale, 0x02);    // 2 * 2^-9, the nearest subnormal
  EXPECT_EQ(b.codes[0], 0x7);  // 0.001 * inv = 6.88 saturates to 6
}

// A block above the supplied amax_t saturates: sf clamps to 448 (0x7E), codes to +-6.
TEST(Nvfp4Test, BlocksAboveTheTensorAmaxSaturate) {
  Block x{};
  x[0] = 100.0f;
  x[1] = -50.0f;
  const Nvfp4Block b = nvfp4_quantize_block(x, 10.0f, 448);
  EXPECT_EQ(b.scale, 0x7E);
  EXPECT_EQ(b.codes[0], 0x7);
  EXPECT_EQ(b.codes[1], 0xF);
}

TEST(Nvfp4Test, NanElementMakesItsBlockNan) {
  std::vector<float> x(32, 1.0f);
  x[3] = kNan;
  StatusOr<QuantizedTensor> q = nvfp4_quantize(x, 1, 32, 1.0f, Nvfp4Options{});
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_EQ(q->scale_bytes[0], 0x7F);  // E4M3 NaN
  StatusOr<std::vector<float>> back = nvfp4_dequantize(*q);
  ASSERT_TRUE(back.ok());
  for (int i = 0; i < 16; ++i) EXPECT_TRUE(std::isnan((*back)[i])) << i;
  for (int i = 16; i < 32; ++i) EXPECT_EQ((*back)[i], 1.0f) << i;
}

TEST(Nvfp4Test, RejectsBadArguments) {
  std::vector<float> x(40, 1.0f);
  StatusOr<QuantizedTensor> q = nvfp4_quantize(x, 1, 40, 1.0f, Nvfp4Options{});
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("K=40 is not a multiple of the nvfp4 block (16)"), std::string::npos)
      << q.status().message();
  x.resize(32);
  EXPECT_FALSE(nvfp4_quantize(x, 1, 32, 1.0f, Nvfp4Options{300, FourOverSix::kOff}).ok());
  EXPECT_FALSE(nvfp4_quantize(x, 1, 32, kNan, Nvfp4Options{}).ok());
  EXPECT_FALSE(nvfp4_quantize(x, 1, 32, -1.0f, Nvfp4Options{}).ok());
  EXPECT_FALSE(nvfp4_quantize(x, 2, 32, 1.0f, Nvfp4Options{}).ok());
  QuantizedTensor mx;
  mx.format = Format::kMxfp4;
  EXPECT_FALSE(nvfp4_dequantize(mx).ok());
}

// ------------------------------------------------------------------------------------------------
// docs/numerics.md §4, four over six

struct Candidate {
  uint8_t scale;
  Codes codes;
  std::vector<uint8_t> bytes;
};

void expect_candidate(const Nvfp4Block& got, const Candidate& want, const char* what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(got.scale, want.scale);
  EXPECT_EQ(got.codes, want.codes);
  EXPECT_EQ(packed(got.codes), want.bytes);
}

const Candidate kAMap6 = {0x78,
                          {0x7, 0x6, 0x6, 0x6, 0xE, 0x6, 0x6, 0x7, 0x4, 0x2, 0x0, 0xD, 0x6, 0x6, 0x6, 0x6},
                          {0x67, 0x66, 0x6e, 0x76, 0x24, 0xd0, 0x66, 0x66}};
const Candidate kAMap4 = {0x7C,
                          {0x6, 0x5, 0x5, 0x5, 0xD, 0x5, 0x5, 0x5, 0x3, 0x1, 0x0, 0xC, 0x5, 0x5, 0x5, 0x5},
                          {0x56, 0x55, 0x5d, 0x55, 0x13, 0xc0, 0x55, 0x55}};

// §4 block A (bound 256, amax_t = 6): both candidates, MAE 10.8 vs 6.0 and MSE 10.62 vs 2.895,
// map-to-4 chosen under either metric.
TEST(FourOverSixTest, BlockAChoosesMapToFourUnderBothMetrics) {
  const FourOverSixChoice mae = four_over_six_block(kBlockA, 6.0f, 256, FourOverSix::kMae);
  expect_candidate(mae.map6, kAMap6, "map6");
  expect_candidate(mae.map4, kAMap4, "map4");
  EXPECT_NEAR(mae.error6, 10.8, 1e-5);
  EXPECT_NEAR(mae.error4, 6.0, 1e-5);
  EXPECT_TRUE(mae.map4_chosen);
  const FourOverSixChoice mse = four_over_six_block(kBlockA, 6.0f, 256, FourOverSix::kMse);
  expect_candidate(mse.map6, kAMap6, "map6 mse");
  expect_candidate(mse.map4, kAMap4, "map4 mse");
  EXPECT_NEAR(mse.error6, 10.62, 1e-5);
  EXPECT_NEAR(mse.error4, 2.895, 1e-5);
  EXPECT_TRUE(mse.map4_chosen);
}

// §4 block A with amax_t = 12: same codes, scales map6 0x70 (128) and map4 0x74 (192).
TEST(FourOverSixTest, BlockAWithTensorAmax12HalvesTheScales) {
  const FourOverSixChoice c = four_over_six_block(kBlockA, 12.0f, 256, FourOverSix::kMae);
  EXPECT_EQ(c.map6.scale, 0x70);
  EXPECT_EQ(c.map4.scale, 0x74);
  EXPECT_EQ(c.map6.codes, kAMap6.codes);
  EXPECT_EQ(c.map4.codes, kAMap4.codes);
  EXPECT_TRUE(c.map4_chosen);
}

// §4, the 256 bound: with bound 448 the map-4 scale 1.5 * 448 clamps to 448, both candidates get
// sf 0x7E, the errors tie and map-to-6 is kept (strict <).
TEST(FourOverSixTest, Bound448ClampsMapToFourAndKeepsMapToSix) {
  for (FourOverSix m : {FourOverSix::kMae, FourOverSix::kMse}) {
    const FourOverSixChoice c = four_over_six_block(kBlockA, 6.0f, 448, m);
    EXPECT_EQ(c.map6.scale, 0x7E);
    EXPECT_EQ(c.map4.scale, 0x7E);
    EXPECT_EQ(c.error4, c.error6);
    EXPECT_FALSE(c.map4_chosen);
  }
}

// §4 block B (bound 256, amax_t = 6): map-to-6 kept (sf 0x78, packed 17 09 10 08 10 09 01 00);
// MAE 2.15 vs 3.15, MSE 0.3825 vs 0.8325; map-to-4 would be sf 0x7C, packed 06 09 00 08 00 08 01 00.
TEST(FourOverSixTest, BlockBKeepsMapToSixUnderBothMetrics) {
  const std::vector<uint8_t> map6 = {0x17, 0x09, 0x10, 0x08, 0x10, 0x09, 0x01, 0x00};
  const std::vector<uint8_t> map4 = {0x06, 0x09, 0x00, 0x08, 0x00, 0x08, 0x01, 0x00};
  const FourOverSixChoice mae = four_over_six_block(kBlockB, 6.0f, 256, FourOverSix::kMae);
  EXPECT_EQ(mae.map6.scale, 0x78);
  EXPECT_EQ(packed(mae.map6.codes), map6);
  EXPECT_EQ(mae.map4.scale, 0x7C);
  EXPECT_EQ(packed(mae.map4.codes), map4);
  EXPECT_NEAR(mae.error6, 2.15, 1e-5);
  EXPECT_NEAR(mae.error4, 3.15, 1e-5);
  EXPECT_FALSE(mae.map4_chosen);
  const FourOverSixChoice mse = four_over_six_block(kBlockB, 6.0f, 256, FourOverSix::kMse);
  EXPECT_NEAR(mse.error6, 0.3825, 1e-6);
  EXPECT_NEAR(mse.error4, 0.8325, 1e-6);
  EXPECT_FALSE(mse.map4_chosen);
  EXPECT_EQ(packed(mse.chosen().codes), map6);
}

// The tensor-level quantizer applies the choice per block and the bound everywhere (§4):
// row 0 = block A (map-4), row 1 = block B (map-6); x^ = e2m1 * sf * amax_t / (6 * 256).
TEST(FourOverSixTest, TensorQuantizerAppliesTheChoicePerBlock) {
  std::vector<float> x(kBlockA.begin(), kBlockA.end());
  x.insert(x.end(), kBlockB.begin(), kBlockB.end());
  for (FourOverSix m : {FourOverSix::kMae, FourOverSix::kMse}) {
    StatusOr<QuantizedTensor> q = nvfp4_quantize(x, 2, 16, 6.0f, Nvfp4Options{256, m});
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    EXPECT_EQ(q->scale_bytes, (std::vector<uint8_t>{0x7C, 0x78}));
    EXPECT_EQ(std::vector<uint8_t>(q->data.begin(), q->data.begin() + 8), kAMap4.bytes);
    EXPECT_EQ(std::vector<uint8_t>(q->data.begin() + 8, q->data.end()),
              (std::vector<uint8_t>{0x17, 0x09, 0x10, 0x08, 0x10, 0x09, 0x01, 0x00}));
    EXPECT_EQ(q->e4m3_bound, 256);
    EXPECT_EQ(q->global_decode_scale, 1.0f / 256.0f);  // 6 / 1536
    StatusOr<std::vector<double>> exact = dequantize_f64(*q);
    ASSERT_TRUE(exact.ok());
    EXPECT_EQ((*exact)[0], 6.0);   // code 4 x 384 / 256
    EXPECT_EQ((*exact)[1], 4.5);   // code 3 x 384 / 256
    EXPECT_EQ((*exact)[16], 6.0);  // code 6 x 256 / 256
    StatusOr<std::vector<float>> back = nvfp4_dequantize(*q);
    ASSERT_TRUE(back.ok());
    for (int i = 0; i < 32; ++i) EXPECT_NEAR((*back)[i], (*exact)[i], 1e-6 * std::fabs((*exact)[i])) << i;
  }
  // Without four-over-six, bound 256: block A keeps the map-6 codes.
  StatusOr<QuantizedTensor> plain = nvfp4_quantize(x, 2, 16, 6.0f, Nvfp4Options{256, FourOverSix::kOff});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->scale_bytes, (std::vector<uint8_t>{0x78, 0x78}));
  EXPECT_EQ(std::vector<uint8_t>(plain->data.begin(), plain->data.begin() + 8), kAMap6.bytes);
}

// ------------------------------------------------------------------------------------------------
// Round trips on random data (seeded, printed)

// Plain NVFP4: |x^ - x| <= 0.2 * amax_b per element (half an E2M1 step at the top, 1 * fs, with
// fs = sf / S_enc within 1/16 of amax_b / 6, plus saturation of at most 1/16 * 6 * fs). The fp32
// dequantizer is within a few ulp of the exact product e2m1 * sf * global.
// Four over six (bound 256, MAE): the tensor's total absolute error is below plain NVFP4's at 256.
TEST(Nvfp4Test, RoundTripErrorBoundsOnRandomData) {
  const uint32_t seed = std::random_device{}();
  std::printf("Nvfp4Test.RoundTripErrorBoundsOnRandomData seed=%u\n", seed);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t rows = 64, cols = 128;
  std::vector<float> x(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    const float row_scale = std::ldexp(1.0f, static_cast<int>(r % 9) - 4);
    for (int64_t c = 0; c < cols; ++c) x[r * cols + c] = normal(rng) * row_scale;
  }
  double total_abs[3] = {0, 0, 0};
  const Nvfp4Options options[3] = {{448, FourOverSix::kOff}, {256, FourOverSix::kOff}, {256, FourOverSix::kMae}};
  for (int o = 0; o < 3; ++o) {
    StatusOr<QuantizedTensor> q = nvfp4_quantize(x, rows, cols, options[o]);
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    StatusOr<std::vector<float>> back = nvfp4_dequantize(*q);
    StatusOr<std::vector<double>> exact = dequantize_f64(*q);
    ASSERT_TRUE(back.ok() && exact.ok());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t kb = 0; kb < cols / 16; ++kb) {
        const float* blk = &x[r * cols + kb * 16];
        const float amax_b = abs_max(std::span<const float>(blk, 16));
        for (int i = 0; i < 16; ++i) {
          const int64_t j = r * cols + kb * 16 + i;
          const double err = std::fabs((*back)[j] - x[j]);
          total_abs[o] += err;
          ASSERT_LE(err, 0.2 * amax_b + 1e-30) << "opt " << o << " j=" << j << " seed=" << seed;
          ASSERT_NEAR((*back)[j], (*exact)[j], 4e-7 * std::fabs((*exact)[j])) << "j=" << j << " seed=" << seed;
        }
      }
  }
  EXPECT_LT(total_abs[2], total_abs[1]) << "seed=" << seed;
}

}  // namespace
}  // namespace kiln::numerics
