// unit tier: operand checks of Plan::run name the operand, the value and what would be accepted.
// No GPU needed: these checks run before the driver is touched.
#include <gtest/gtest.h>

#include "runtime/operands.hpp"

namespace kiln {
namespace {

struct Mats {
  int64_t sa[2], sb[2], so[2];
  DLTensor a{}, b{}, out{};
  Mats(int64_t m, int64_t n, int64_t k, DLDataType ta, DLDataType tb, DLDataType to) {
    sa[0] = m; sa[1] = k; sb[0] = n; sb[1] = k; so[0] = m; so[1] = n;
    a.shape = sa; b.shape = sb; out.shape = so;
    a.ndim = b.ndim = out.ndim = 2;
    a.device = b.device = out.device = {kDLCUDA, 0};
    a.dtype = ta; b.dtype = tb; out.dtype = to;
    a.data = reinterpret_cast<void*>(0x100000);
    b.data = reinterpret_cast<void*>(0x200000);
    out.data = reinterpret_cast<void*>(0x300000);
  }
  Operands ops() { return Operands{&a, &b, &out, nullptr, nullptr}; }
};

constexpr DLDataType kBf16{kDLBfloat, 16, 1};
constexpr DLDataType kU8{kDLUInt, 8, 1};

KernelSpec bf16_spec() {
  KernelSpec s;
  s.a = s.b = s.out = OperandSpec{Format::kBf16, ScaleGranularity::kNone, ScaleType::kNone};
  return s;
}

KernelSpec fp8_spec() {
  KernelSpec s;
  s.a = s.b = OperandSpec{Format::kE4m3, ScaleGranularity::kTensor, ScaleType::kF32};
  s.out = OperandSpec{Format::kBf16, ScaleGranularity::kNone, ScaleType::kNone};
  return s;
}

TEST(OperandsTest, AcceptsContiguousBf16) {
  Mats m(5, 64, 128, kBf16, kBf16, kBf16);
  auto c = check_operands(bf16_spec(), {0, 64, 128}, m.ops());
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->m, 5);
  EXPECT_EQ(c->lda, 128);
  EXPECT_EQ(c->ldc, 64);
}

TEST(OperandsTest, NamesWrongDtype) {
  Mats m(5, 64, 128, kBf16, kU8, kBf16);
  auto c = check_operands(bf16_spec(), {0, 64, 128}, m.ops());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("operand b: dtype uint8 but the spec says b=bf16"), std::string::npos)
      << c.status().message();
}

TEST(OperandsTest, NamesWrongK) {
  Mats m(5, 64, 96, kBf16, kBf16, kBf16);
  auto c = check_operands(bf16_spec(), {0, 64, 128}, m.ops());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("operand a: shape[1] = 96 but the plan has K = 128"), std::string::npos)
      << c.status().message();
}

TEST(OperandsTest, NamesOutRowMismatch) {
  Mats m(5, 64, 128, kBf16, kBf16, kBf16);
  m.so[0] = 6;
  auto c = check_operands(bf16_spec(), {0, 64, 128}, m.ops());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("operand out: shape[0] = 6 but M = 5"), std::string::npos)
      << c.status().message();
}

TEST(OperandsTest, RejectsMisalignedBase) {
  Mats m(5, 64, 128, kBf16, kBf16, kBf16);
  m.a.byte_offset = 2;
  auto c = check_operands(bf16_spec(), {0, 64, 128}, m.ops());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("operand a: data address"), std::string::npos) << c.status().message();
}

TEST(OperandsTest, RejectsNonContiguousInnerDim) {
  Mats m(5, 64, 128, kBf16, kBf16, kBf16);
  int64_t strides[2] = {1, 5};
  m.a.strides = strides;
  auto c = check_operands(bf16_spec(), {0, 64, 128}, m.ops());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("operand a: inner stride 5"), std::string::npos) << c.status().message();
}

TEST(OperandsTest, RejectsRowStrideNotMultipleOf16Bytes) {
  Mats m(5, 64, 128, kBf16, kBf16, kBf16);
  int64_t strides[2] = {132, 1};
  m.a.strides = strides;
  auto c = check_operands(bf16_spec(), {0, 64, 128}, m.ops());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("operand a: row stride 132 elements = 264 bytes"), std::string::npos)
      << c.status().message();
}

TEST(OperandsTest, RequiresTensorScalesForFp8) {
  Mats m(5, 64, 128, kU8, kU8, kBf16);
  auto c = check_operands(fp8_spec(), {0, 64, 128}, m.ops());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("operand a_scale: missing"), std::string::npos) << c.status().message();
}

TEST(OperandsTest, RejectsScaleForUnscaledFormat) {
  Mats m(5, 64, 128, kBf16, kBf16, kBf16);
  int64_t one[1] = {1};
  DLTensor s{};
  s.device = {kDLCUDA, 0};
  s.ndim = 1;
  s.shape = one;
  s.dtype = {kDLFloat, 32, 1};
  s.data = reinterpret_cast<void*>(0x400000);
  Operands ops = m.ops();
  ops.a_scale = &s;
  auto c = check_operands(bf16_spec(), {0, 64, 128}, ops);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("takes no scale"), std::string::npos) << c.status().message();
}

TEST(OperandsTest, AcceptsDlpack11Fp8Codes) {
  Mats m(5, 64, 128, DLDataType{10, 8, 1}, DLDataType{10, 8, 1}, kBf16);
  int64_t one[1] = {1};
  DLTensor s{};
  s.device = {kDLCUDA, 0};
  s.ndim = 1;
  s.shape = one;
  s.dtype = {kDLFloat, 32, 1};
  s.data = reinterpret_cast<void*>(0x400000);
  Operands ops = m.ops();
  ops.a_scale = &s;
  ops.b_scale = &s;
  auto c = check_operands(fp8_spec(), {0, 64, 128}, ops);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
}

TEST(OperandsTest, RejectsHostTensor) {
  Mats m(5, 64, 128, kBf16, kBf16, kBf16);
  m.b.device = {kDLCPU, 0};
  auto c = check_operands(bf16_spec(), {0, 64, 128}, m.ops());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("operand b: device type 1 is not CUDA"), std::string::npos)
      << c.status().message();
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

TEST(OperandsTest, AcceptsOddOutputRowStride) {
  Mats m(5, 129, 128, kBf16, kBf16, kBf16);
  auto c = check_operands(bf16_spec(), {0, 129, 128}, m.ops());
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->ldc, 129);
}

TEST(OperandsTest, RejectsOutputNotElementAligned) {
  Mats m(5, 64, 128, kBf16, kBf16, kBf16);
  m.out.byte_offset = 1;
  auto c = check_operands(bf16_spec(), {0, 64, 128}, m.ops());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("operand out: data address"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("2-byte aligned"), std::string::npos) << c.status().message();
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// The grouped transposed quantize: a [M, K] with offsets (or [E, max_m, K] with counts), out the padded
// copy [K, W] with W a multiple of 128 of at least 128 (ceil(M / 128) + E), scales [K, W / 128].
TEST(OperandsTest, GroupedTransposedQuantizeNamesTheCopysColumns) {
  KernelSpec s;
  s.op = Op::kQuantize;
  s.experts = 4;
  s.layout = GroupLayout::kOffsets;
  s.transpose = true;
  s.a = OperandSpec{Format::kBf16, ScaleGranularity::kNone, ScaleType::kNone};
  s.b = OperandSpec{};
  s.out = OperandSpec{Format::kE4m3, ScaleGranularity::kBlock1x128, ScaleType::kF32};
  int64_t sa[2] = {300, 256}, so[2] = {256, 128 * (3 + 4)}, ss[2] = {256, 7}, sv[1] = {4};
  DLTensor a{}, out{}, scale{}, offsets{};
  for (DLTensor* t : {&a, &out, &scale, &offsets}) t->device = {kDLCUDA, 0};
  a.ndim = out.ndim = scale.ndim = 2;
  offsets.ndim = 1;
  a.shape = sa;
  out.shape = so;
  scale.shape = ss;
  offsets.shape = sv;
  a.dtype = kBf16;
  out.dtype = kU8;
  scale.dtype = {kDLFloat, 32, 1};
  offsets.dtype = {kDLInt, 32, 1};
  a.data = reinterpret_cast<void*>(0x100000);
  out.data = reinterpret_cast<void*>(0x200000);
  scale.data = reinterpret_cast<void*>(0x300000);
  offsets.data = reinterpret_cast<void*>(0x400000);
  Operands ops;
  ops.a = &a;
  ops.out = &out;
  ops.out_scale = &scale;
  const ProblemSizes sizes{0, 0, 256};
  auto missing = check_quantize_operands(s, sizes, ops);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("operand offsets: missing"), std::string::npos)
      << missing.status().message();
  ops.offsets = &offsets;
  auto ok = check_quantize_operands(s, sizes, ops);
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(ok->out_cols, 128 * 7);
  EXPECT_EQ(ok->experts, 4);
  EXPECT_FALSE(ok->masked);
  so[1] = 128 * 6;  // one block short of ceil(300 / 128) + 4
  ss[1] = 6;
  auto small = check_quantize_operands(s, sizes, ops);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.status().message().find("operand out: 768 columns; the padded copy of M = 300 rows for 4 experts "
                                          "needs a multiple of 128 of at least 896"),
            std::string::npos)
      << small.status().message();
  ops.counts = &offsets;  // the other layout's vector
  auto both = check_quantize_operands(s, sizes, ops);
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("operand counts was given"), std::string::npos) << both.status().message();
}

}  // namespace
}  // namespace kiln
