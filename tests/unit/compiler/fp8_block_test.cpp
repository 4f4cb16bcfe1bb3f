// Unit tests of FP8 E4M3 per-tensor / per-row / block quantization (compiler/numerics/fp8_block.hpp,
// docs/numerics.md §2): DeepGEMM and TransformerEngine scale conventions, f32 and UE8M0 scales. No CUDA.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "compiler/numerics/dequantize.hpp"
#include "compiler/numerics/e8m0.hpp"
#include "compiler/numerics/fp8.hpp"
#include "compiler/numerics/fp8_block.hpp"

namespace kiln::numerics {
namespace {

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }
float from_bits(uint32_t b) { return std::bit_cast<float>(b); }

// §2, the UE8M0 test-vector table: amax -> DeepGEMM ue8m0 sf (byte) | TE scale_inv | DeepGEMM fp32 sf.
TEST(Fp8BlockTest, ScalesMatchTheDeepSeekBlockTable) {
  const struct {
    float amax;
    uint8_t ue8m0;
    float te_scale_inv;
    float f32_sf;  // NaN: not listed
  } rows[] = {
      {1.0f, 0x77, std::ldexp(1.0f, -8), from_bits(0x3B124925)},
      {3.5f, 0x78, std::ldexp(1.0f, -7), std::ldexp(1.0f, -7)},
      {100.0f, 0x7D, 0.25f, from_bits(0x3E649249)},
      {448.0f, 0x7F, 1.0f, 1.0f},
      {449.0f, 0x80, 2.0f, from_bits(0x3F804925)},
      {0.0f, 0x69, 1.0f, std::numeric_limits<float>::quiet_NaN()},  // 2^-22: the 1e-4 clamp
  };
  for (const auto& r : rows) {
    SCOPED_TRACE("amax=" + std::to_string(r.amax));
    const Fp8Scale dg = fp8_block_scale(r.amax, ScaleType::kUe8m0, Fp8ScaleConvention::kDeepGemm);
    EXPECT_EQ(dg.ue8m0, r.ue8m0);
    EXPECT_EQ(dg.decode, e8m0_to_float(r.ue8m0));
    EXPECT_EQ(dg.encode * dg.decode, 1.0f);
    const Fp8Scale te = fp8_block_scale(r.amax, ScaleType::kUe8m0, Fp8ScaleConvention::kTransformerEngine);
    EXPECT_EQ(te.decode, r.te_scale_inv);
    EXPECT_EQ(te.decode, e8m0_to_float(te.ue8m0));
    if (!std::isnan(r.f32_sf)) {
      const Fp8Scale f = fp8_block_scale(r.amax, ScaleType::kF32, Fp8ScaleConvention::kDeepGemm);
      EXPECT_EQ(bits(f.decode), bits(r.f32_sf));
    }
  }
  EXPECT_EQ(fp8_block_scale(0.0f, ScaleType::kUe8m0, Fp8ScaleConvention::kDeepGemm).decode, std::ldexp(1.0f, -22));
}

// §2, the element vectors, each in a 1x128 block (the listed values, then zeros).
TEST(Fp8BlockTest, ElementsMatchTheDeepSeekBlockVectors) {
  auto quantize = [](std::vector<float> head, ScaleType st) {
    head.resize(128, 0.0f);
    StatusOr<QuantizedTensor> q = fp8_block_quantize(head, 1, 128, Fp8BlockOptions{Fp8Blocking::kBlock1x128, st});
    EXPECT_TRUE(q.ok()) << q.status().to_string();
    return q.ok() ? *q : QuantizedTensor{};
  };
  auto head = [](const QuantizedTensor& q, size_t n) { return std::vector<uint8_t>(q.data.begin(), q.data.begin() + n); };
  // amax = 1 with ue8m0 (sf 2^-8).
  QuantizedTensor a = quantize({1.0f, -0.3f, 0.77f}, ScaleType::kUe8m0);
  EXPECT_EQ(head(a, 3), (std::vector<uint8_t>{0x78, 0xEA, 0x74}));
  EXPECT_EQ(a.scale_bytes, std::vector<uint8_t>{0x77});
  // amax = 1 with fp32 sf: x * (1/sf) = [447.99997, -134.4, 344.96].
  QuantizedTensor b = quantize({1.0f, -0.3f, 0.77f}, ScaleType::kF32);
  EXPECT_EQ(head(b, 3), (std::vector<uint8_t>{0x7E, 0xF0, 0x7B}));
  EXPECT_EQ(bits(b.scales_f32[0]), 0x3B124925u);
  const Fp8Scale s = fp8_block_scale(1.0f, ScaleType::kF32, Fp8ScaleConvention::kDeepGemm);
  EXPECT_EQ(1.0f * s.encode, 447.99997f);
  // amax = 3.5, either scale type (sf = 2^-7 exactly).
  for (ScaleType st : {ScaleType::kUe8m0, ScaleType::kF32}) {
    QuantizedTensor c = quantize({1.0f, -0.3f, 0.77f, 3.5f}, st);
    EXPECT_EQ(head(c, 4), (std::vector<uint8_t>{0x70, 0xE2, 0x6C, 0x7E}));
  }
}

// §2: for a normal amax >= 1e-4 DeepGEMM's ceil(amax/448) and TE's 1/floor(448/amax)
// give the same power of two. Checked at every 448 * 2^k, its neighbours, and random amax.
TEST(Fp8BlockTest, DeepGemmAndTransformerEnginePowerOfTwoScalesAgree) {
  std::vector<float> amaxes;
  for (int k = -20; k <= 100; ++k) {
    const float a = std::ldexp(448.0f, k);
    amaxes.insert(amaxes.end(), {a, std::nextafter(a, 0.0f), std::nextafter(a, INFINITY)});
  }
  const uint32_t seed = std::random_device{}();
  std::printf("Fp8BlockTest.DeepGemmAndTransformerEnginePowerOfTwoScalesAgree seed=%u\n", seed);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> exp(-13, 120);
  for (int i = 0; i < 20000; ++i) amaxes.push_back(std::ldexp(mant(rng), exp(rng)));
  for (float a : amaxes) {
    if (a < 1e-4f) continue;
    const Fp8Scale dg = fp8_block_scale(a, ScaleType::kUe8m0, Fp8ScaleConvention::kDeepGemm);
    const Fp8Scale te = fp8_block_scale(a, ScaleType::kUe8m0, Fp8ScaleConvention::kTransformerEngine);
    ASSERT_EQ(dg.ue8m0, te.ue8m0) << "amax=" << a << " bits=" << std::hex << bits(a) << " seed=" << std::dec << seed;
  }
}

// Scale grids: per tensor, per row (m / n), 1x128, 128x128 and 128x1, with partial trailing blocks.
TEST(Fp8BlockTest, ScaleGridShapesFollowTheBlocking) {
  const int64_t rows = 130, cols = 300;
  std::vector<float> x(rows * cols, 1.0f);
  const struct {
    Fp8Blocking b;
    int64_t srows, scols;
  } cases[] = {{Fp8Blocking::kTensor, 1, 1},
               {Fp8Blocking::kRow, 130, 1},
               {Fp8Blocking::kBlock1x128, 130, 3},
               {Fp8Blocking::kBlock128x128, 2, 3},
               {Fp8Blocking::kBlock128x1, 2, 300}};
  for (const auto& c : cases) {
    StatusOr<QuantizedTensor> q = fp8_block_quantize(x, rows, cols, Fp8BlockOptions{c.b, ScaleType::kF32});
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    EXPECT_EQ(q->scale_rows(), c.srows);
    EXPECT_EQ(q->scale_cols(), c.scols);
    EXPECT_EQ(static_cast<int64_t>(q->scales_f32.size()), c.srows * c.scols);
    EXPECT_TRUE(check_quantized_tensor(*q).ok());
  }
  EXPECT_EQ(*fp8_blocking(ScaleGranularity::kM), Fp8Blocking::kRow);
  EXPECT_EQ(*fp8_blocking(ScaleGranularity::kN), Fp8Blocking::kRow);
  EXPECT_EQ(*fp8_blocking(ScaleGranularity::kBlock128x128), Fp8Blocking::kBlock128x128);
  EXPECT_FALSE(fp8_blocking(ScaleGranularity::kNone).ok());
}

std::vector<float> random_matrix(std::mt19937& rng, int64_t rows, int64_t cols) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exp(-12, 12);
  std::vector<float> x(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    const int e = exp(rng);
    for (int64_t c = 0; c < cols; ++c) x[r * cols + c] = std::ldexp(normal(rng), e + static_cast<int>(c / 128));
  }
  return x;
}

std::vector<float> transpose(const std::vector<float>& x, int64_t rows, int64_t cols) {
  std::vector<float> t(x.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = x[r * cols + c];
  return t;
}

// §7: the 128x1 (wgrad) form is the 1x128 quantization of the transpose, transposed back; the
// 128x128 form is transpose-symmetric (the column-wise copy is the transposed data with the
// transposed scales). Also: per-row equals 1x128 when a row is one block.
TEST(Fp8BlockTest, TransposedFormsAgree) {
  const uint32_t seed = std::random_device{}();
  std::printf("Fp8BlockTest.TransposedFormsAgree seed=%u\n", seed);
  std::mt19937 rng(seed);
  const int64_t rows = 200, cols = 260;
  const std::vector<float> x = random_matrix(rng, rows, cols);
  const std::vector<float> xt = transpose(x, rows, cols);
  for (ScaleType st : {ScaleType::kF32, ScaleType::kUe8m0}) {
    StatusOr<QuantizedTensor> col = fp8_block_quantize(x, rows, cols, {Fp8Blocking::kBlock128x1, st});
    StatusOr<QuantizedTensor> row_t = fp8_block_quantize(xt, cols, rows, {Fp8Blocking::kBlock1x128, st});
    ASSERT_TRUE(col.ok() && row_t.ok());
    StatusOr<QuantizedTensor> w = fp8_block_quantize(x, rows, cols, {Fp8Blocking::kBlock128x128, st});
    StatusOr<QuantizedTensor> wt = fp8_block_quantize(xt, cols, rows, {Fp8Blocking::kBlock128x128, st});
    ASSERT_TRUE(w.ok() && wt.ok());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        ASSERT_EQ(col->data[r * cols + c], row_t->data[c * rows + r]) << "seed=" << seed;
        ASSERT_EQ(w->data[r * cols + c], wt->data[c * rows + r]) << "seed=" << seed;
      }
    for (int64_t br = 0; br < col->scale_rows(); ++br)
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t i = br * cols + c, j = c * row_t->scale_cols() + br;
        if (st == ScaleType::kF32) ASSERT_EQ(col->scales_f32[i], row_t->scales_f32[j]);
        else ASSERT_EQ(col->scale_bytes[i], row_t->scale_bytes[j]);
      }
    for (int64_t br = 0; br < w->scale_rows(); ++br)
      for (int64_t bc = 0; bc < w->scale_cols(); ++bc) {
        const int64_t i = br * w->scale_cols() + bc, j = bc * wt->scale_cols() + br;
        if (st == ScaleType::kF32) ASSERT_EQ(w->scales_f32[i], wt->scales_f32[j]);
        else ASSERT_EQ(w->scale_bytes[i], wt->scale_bytes[j]);
      }
  }
  const std::vector<float> narrow(x.begin(), x.begin() + 5 * 128);
  StatusOr<QuantizedTensor> per_row = fp8_block_quantize(narrow, 5, 128, {Fp8Blocking::kRow, ScaleType::kF32});
  StatusOr<QuantizedTensor> blocks = fp8_block_quantize(narrow, 5, 128, {Fp8Blocking::kBlock1x128, ScaleType::kF32});
  ASSERT_TRUE(per_row.ok() && blocks.ok());
  EXPECT_EQ(per_row->data, blocks->data);
  EXPECT_EQ(per_row->scales_f32, blocks->scales_f32);
}

// Round trip (seeded, printed) for every blocking, scale type and convention: each element within
// half an E4M3 step of x (2^-4 relative, or half the smallest subnormal step 2^-10 * scale), since
// RCEIL-like scales never clamp and f32 scales clamp at most 447.99997 -> 448. The f64 dequantizer
// is the exact product, and the fp32 one its rounding.
TEST(Fp8BlockTest, RoundTripErrorIsWithinHalfAStep) {
  const uint32_t seed = std::random_device{}();
  std::printf("Fp8BlockTest.RoundTripErrorIsWithinHalfAStep seed=%u\n", seed);
  std::mt19937 rng(seed);
  const int64_t rows = 150, cols = 300;
  const std::vector<float> x = random_matrix(rng, rows, cols);
  for (Fp8Blocking b : {Fp8Blocking::kTensor, Fp8Blocking::kRow, Fp8Blocking::kBlock1x128,
                        Fp8Blocking::kBlock128x128, Fp8Blocking::kBlock128x1})
    for (ScaleType st : {ScaleType::kF32, ScaleType::kUe8m0})
      for (Fp8ScaleConvention cv : {Fp8ScaleConvention::kDeepGemm, Fp8ScaleConvention::kTransformerEngine}) {
        SCOPED_TRACE("blocking " + std::to_string(static_cast<int>(b)) + " scale " + scale_type_name(st) +
                     " convention " + std::to_string(static_cast<int>(cv)) + " seed=" + std::to_string(seed));
        StatusOr<QuantizedTensor> q = fp8_block_quantize(x, rows, cols, {b, st, cv});
        ASSERT_TRUE(q.ok()) << q.status().to_string();
        StatusOr<std::vector<float>> back = fp8_block_dequantize(*q);
        StatusOr<std::vector<double>> exact = dequantize_f64(*q);
        ASSERT_TRUE(back.ok() && exact.ok());
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c) {
            const int64_t i = r * cols + c;
            const int64_t si = (r / q->block_rows) * q->scale_cols() + c / q->block_cols;
            const double s = st == ScaleType::kF32 ? q->scales_f32[si] : e8m0_to_float(q->scale_bytes[si]);
            const double bound = std::max(std::fabs(x[i]) / 16.0, s * std::ldexp(1.0, -10)) * 1.0000001;
            ASSERT_LE(std::fabs((*exact)[i] - x[i]), bound) << "r=" << r << " c=" << c;
            ASSERT_EQ((*back)[i], static_cast<float>((*exact)[i])) << "r=" << r << " c=" << c;
          }
      }
}

TEST(Fp8BlockTest, ZeroAndNanBlocks) {
  std::vector<float> x(256, 0.0f);
  x[130] = std::numeric_limits<float>::quiet_NaN();
  StatusOr<QuantizedTensor> dg = fp8_block_quantize(x, 1, 256, {Fp8Blocking::kBlock1x128, ScaleType::kUe8m0});
  ASSERT_TRUE(dg.ok());
  EXPECT_EQ(dg->scale_bytes, (std::vector<uint8_t>{0x69, 0xFF}));  // 1e-4 clamp; NaN
  EXPECT_EQ(dg->data[130], 0x7F);
  StatusOr<QuantizedTensor> te = fp8_block_quantize(
      x, 1, 256, {Fp8Blocking::kBlock1x128, ScaleType::kF32, Fp8ScaleConvention::kTransformerEngine});
  ASSERT_TRUE(te.ok());
  EXPECT_EQ(te->scales_f32, (std::vector<float>{1.0f, 1.0f}));  // amax 0 or non-finite -> scale 1
  EXPECT_EQ(te->data[130], 0x7F);
  EXPECT_EQ(te->data[0], 0x00);
}

TEST(Fp8BlockTest, RejectsBadArguments) {
  std::vector<float> x(128, 1.0f);
  EXPECT_FALSE(fp8_block_quantize(x, 1, 128, {Fp8Blocking::kRow, ScaleType::kUe4m3}).ok());
  EXPECT_FALSE(fp8_block_quantize(x, 2, 128, {Fp8Blocking::kRow, ScaleType::kF32}).ok());
  EXPECT_FALSE(fp8_block_quantize(x, -1, 128, {Fp8Blocking::kRow, ScaleType::kF32}).ok());
  StatusOr<QuantizedTensor> q = fp8_block_quantize(x, 1, 128, {Fp8Blocking::kRow, ScaleType::kF32});
  ASSERT_TRUE(q.ok());
  q->scales_f32.clear();
  EXPECT_FALSE(fp8_block_dequantize(*q).ok());
}

}  // namespace
}  // namespace kiln::numerics
