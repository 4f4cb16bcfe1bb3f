// unit tier: the operand checks of the scaled formats (runtime/operands.hpp) — packed FP4 weights in
// both layouts (gpt-oss's [.., K/32, 16] included), E8M0 / UE4M3 / f32 scale tensors, the NVFP4 global,
// grouped offsets / counts and the masked layout — accept what they should, name the operand, the
// value and what would be accepted otherwise, and produce the kernel arguments. No GPU needed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "compiler/numerics/fp8_block.hpp"
#include "compiler/plan/launch_rule.hpp"
#include "compiler/numerics/mx.hpp"
#include "compiler/numerics/reference_gemm.hpp"
#include "verify/check_inputs.hpp"
#include "runtime/operands.hpp"

namespace kiln {
namespace {

using ::testing::HasSubstr;

constexpr DLDataType kBf16{kDLBfloat, 16, 1};
constexpr DLDataType kU8{kDLUInt, 8, 1};
constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kI32{kDLInt, 32, 1};

// A DLTensor on fake device memory (never dereferenced: the checks only read the metadata).
struct T {
  std::vector<int64_t> shape;
  DLTensor t{};
  T(std::vector<int64_t> s, DLDataType dt, uintptr_t addr) : shape(std::move(s)) {
    t.data = reinterpret_cast<void*>(addr);
    t.device = {kDLCUDA, 0};
    t.ndim = static_cast<int>(shape.size());
    t.shape = shape.data();
    t.dtype = dt;
  }
};

KernelSpec spec_of(std::string_view text) {
  auto r = parse_spec(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().to_string();
  return r.ok() ? *r : KernelSpec{};
}

TEST(FormatsOperandsTest, Mxfp4WeightsAsBytesOrGptOssBlocks) {
  const KernelSpec s = spec_of("gemm a=bf16 b=mxfp4 out=bf16");
  T a({5, 2880}, kBf16, 0x100000), out({5, 64}, kBf16, 0x300000);
  T b({64, 1440}, kU8, 0x200000), sc({64, 90}, kU8, 0x400000);
  Operands ops{&a.t, &b.t, &out.t, nullptr, &sc.t};
  auto c = check_operands(s, {0, 64, 2880}, ops);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->ldb, 2880);  // elements: 1440 bytes of two codes
  EXPECT_EQ(c->lds_b, 90);  // gpt-oss: 90 E8M0 bytes per row, no alignment needed
  T blocks({64, 90, 16}, kU8, 0x200000);
  ops.b = &blocks.t;
  c = check_operands(s, {0, 64, 2880}, ops);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->ldb, 2880);
  T logical({64, 2880}, kU8, 0x200000);  // one byte per element is not packed FP4
  ops.b = &logical.t;
  c = check_operands(s, {0, 64, 2880}, ops);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("operand b: shape[1] = 2880 but the plan has K = 2880, i.e. 1440 items"));
}

TEST(FormatsOperandsTest, ScaleTensorsNameTheirShape) {
  const KernelSpec s = spec_of("gemm a=bf16 b=mxfp4 out=bf16");
  T a({5, 256}, kBf16, 0x100000), out({5, 64}, kBf16, 0x300000), b({64, 128}, kU8, 0x200000);
  T wrong({64, 16}, kU8, 0x400000);
  Operands ops{&a.t, &b.t, &out.t, nullptr, &wrong.t};
  auto c = check_operands(s, {0, 64, 256}, ops);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              HasSubstr("operand b_scale: shape [64, 16]; expected [64, 8] (mxfp4 E8M0 scales, one per row per 32 K)"));
  T f32({64, 8}, kF32, 0x400000);
  ops.b_scale = &f32.t;
  c = check_operands(s, {0, 64, 256}, ops);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("operand b_scale: dtype float32; expected uint8 E8M0 bytes"));
  ops.b_scale = nullptr;
  c = check_operands(s, {0, 64, 256}, ops);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("operand b_scale: missing"));
}

TEST(FormatsOperandsTest, Nvfp4NeedsItsDeviceGlobal) {
  const KernelSpec s = spec_of("gemm a=bf16 b=nvfp4 out=bf16");
  T a({5, 256}, kBf16, 0x100000), out({5, 64}, kBf16, 0x300000), b({64, 128}, kU8, 0x200000);
  T sc({64, 16}, kU8, 0x400000), g({1}, kF32, 0x500000), g2({2}, kF32, 0x500000);
  Operands ops{&a.t, &b.t, &out.t, nullptr, &sc.t};
  auto c = check_operands(s, {0, 64, 256}, ops);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("operand b_global: missing"));
  ops.b_global = &g2.t;
  c = check_operands(s, {0, 64, 256}, ops);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("operand b_global: 2 elements; nvfp4_global=tensor takes exactly 1"));
  ops.b_global = &g.t;
  c = check_operands(s, {0, 64, 256}, ops);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->b_global, reinterpret_cast<const float*>(0x500000));
  EXPECT_EQ(c->lds_b, 16);
  // A global on a format that has none is an error, not ignored.
  const KernelSpec bf = spec_of("gemm a=bf16 b=bf16 out=bf16");
  T bb({64, 256}, kBf16, 0x200000);
  Operands plain{&a.t, &bb.t, &out.t, nullptr, nullptr};
  plain.b_global = &g.t;
  c = check_operands(bf, {0, 64, 256}, plain);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("operand b_global: given"));
}

TEST(FormatsOperandsTest, Fp8RowAndBlockScales) {
  T a({5, 256}, kU8, 0x100000), out({5, 64}, kBf16, 0x300000), b({64, 256}, kU8, 0x200000);
  T sa({5}, kF32, 0x400000), sb({64}, kF32, 0x500000);
  Operands ops{&a.t, &b.t, &out.t, &sa.t, &sb.t};
  auto c = check_operands(spec_of("gemm a=e4m3:m b=e4m3:n out=bf16"), {0, 64, 256}, ops);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  T sa_bad({4}, kF32, 0x400000);
  ops.a_scale = &sa_bad.t;
  c = check_operands(spec_of("gemm a=e4m3:m b=e4m3:n out=bf16"), {0, 64, 256}, ops);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("operand a_scale: 4 elements; a per-token scale vector has 5 (M)"));
  // DeepSeek blocks with E8M0 bytes: [M, K/128] and [ceil(N/128), K/128].
  T ba({5, 2}, kU8, 0x400000), bb({1, 2}, kU8, 0x500000);
  ops.a_scale = &ba.t;
  ops.b_scale = &bb.t;
  c = check_operands(spec_of("gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=bf16"), {0, 64, 256}, ops);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->lds_a, 2);
  EXPECT_EQ(c->lds_b, 2);
  c = check_operands(spec_of("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16"), {0, 64, 256}, ops);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("operand a_scale: dtype uint8; expected float32"));
}

TEST(FormatsOperandsTest, GroupedOffsetsLayout) {
  const KernelSpec s = spec_of("grouped_gemm[experts=4,layout=offsets] a=bf16 b=mxfp4 out=bf16");
  T a({100, 256}, kBf16, 0x100000), out({100, 64}, kBf16, 0x300000);
  T b({4, 64, 8, 16}, kU8, 0x200000), sc({4, 64, 8}, kU8, 0x400000), off({4}, kI32, 0x500000);
  Operands ops{&a.t, &b.t, &out.t, nullptr, &sc.t};
  auto c = check_operands(s, {0, 64, 256}, ops);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("operand offsets: missing; layout=offsets needs an int32 [4]"));
  ops.offsets = &off.t;
  c = check_operands(s, {0, 64, 256}, ops);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->m, 100);
  EXPECT_EQ(c->experts, 4);
  EXPECT_EQ(c->b_expert_stride, 64 * 256);  // elements
  EXPECT_EQ(c->b_scale_expert_stride, 64 * 8);
  EXPECT_EQ(rows_per_expert(s, c->m), 25);
  kiln_dev::GemmParams gp = gemm_params(*c, {100, 64, 256});
  EXPECT_EQ(gp.experts, 4);
  EXPECT_EQ(gp.group_rows, reinterpret_cast<const int*>(0x500000));
  T off64({4}, {kDLInt, 64, 1}, 0x500000);
  ops.offsets = &off64.t;
  c = check_operands(s, {0, 64, 256}, ops);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("operand offsets: dtype int64; expected int32"));
  ops.offsets = &off.t;
  ops.counts = &off.t;
  c = check_operands(s, {0, 64, 256}, ops);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("operand counts: given, but the spec is not grouped_gemm[layout=masked]"));
}

TEST(FormatsOperandsTest, GroupedMaskedLayout) {
  const KernelSpec s = spec_of("grouped_gemm[experts=3,layout=masked] a=bf16 b=bf16 out=f32");
  T a({3, 7, 64}, kBf16, 0x100000), out({3, 7, 32}, kF32, 0x300000), b({3, 32, 64}, kBf16, 0x200000);
  T counts({3}, kI32, 0x500000);
  Operands ops{&a.t, &b.t, &out.t, nullptr, nullptr};
  ops.counts = &counts.t;
  auto c = check_operands(s, {0, 32, 64}, ops);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->m, 21);
  EXPECT_EQ(c->max_m, 7);
  EXPECT_EQ(c->lda, 64);
  EXPECT_EQ(rows_per_expert(s, c->m), 7);
  // Experts' rows must be contiguous (stride(0) = max_m * stride(1)).
  int64_t strides[3] = {8 * 64, 64, 1};
  a.t.strides = strides;
  c = check_operands(s, {0, 32, 64}, ops);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("operand a: expert stride 512 elements; the masked layout"));
}


// The random operands run_check draws (verify/check_inputs.hpp) pass the operand checks for every
// pairing, and the CPU fp64 reference computes on them. Host memory stands in for the device: the
// checks read only metadata.
struct HostViews {
  DLTensor t[7]{};
  Operands ops;
  explicit HostViews(HostOperands& h) {
    HostTensor* src[7] = {&h.a, &h.b, &h.out, &h.a_scale, &h.b_scale, &h.b_global, &h.group_rows};
    for (int i = 0; i < 7; ++i) {
      if (!src[i]->present()) continue;
      t[i].data = src[i]->bytes.data();
      t[i].device = {kDLCUDA, 0};
      t[i].ndim = static_cast<int>(src[i]->shape.size());
      t[i].shape = src[i]->shape.data();
      t[i].dtype = src[i]->dtype;
    }
    ops.a = &t[0];
    ops.b = &t[1];
    ops.out = &t[2];
    ops.a_scale = src[3]->present() ? &t[3] : nullptr;
    ops.b_scale = src[4]->present() ? &t[4] : nullptr;
    ops.b_global = src[5]->present() ? &t[5] : nullptr;
    if (src[6]->present()) (h.layout == GroupLayout::kMasked ? ops.counts : ops.offsets) = &t[6];
  }
};

TEST(FormatsOperandsTest, RandomOperandsPassTheChecksAndTheCpuReferenceRuns) {
  struct C {
    const char* spec;
    int64_t m;
  };
  const C cases[] = {
      {"gemm a=e4m3:m b=e4m3:n out=bf16", 7},
      {"gemm a=e5m2:m b=e4m3:tensor out=f16", 7},
      {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 7},
      {"gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=f32", 7},
      {"gemm a=mxfp8 b=mxfp8 out=bf16", 7},
      {"gemm a=bf16 b=mxfp4 out=bf16", 7},
      {"gemm a=bf16 b=nvfp4 out=f32", 7},
      {"gemm a=bf16 b=e4m3:n out=bf16", 7},
      {"grouped_gemm[experts=8,layout=offsets] a=bf16 b=mxfp4 out=bf16", 30},
      {"grouped_gemm[experts=4,layout=offsets] a=bf16 b=nvfp4 out=bf16 nvfp4_global=expert", 30},
      {"grouped_gemm[experts=5,layout=masked] a=bf16 b=mxfp4 out=f32", 6},
      {"grouped_gemm[experts=3,layout=masked] a=f16 b=f16 out=f16", 6},
      {"gemm a=f16 b=mxfp4 out=f16", 7},
      {"gemm a=bf16 b=mxfp8 out=bf16", 7},
      {"gemm a=e4m3:m b=mxfp4 out=bf16", 7},
      {"gemm a=e5m2:tensor b=nvfp4 out=f32", 7},
      {"grouped_gemm[experts=4,layout=offsets] a=bf16 b=e4m3:n out=bf16", 30},
      {"grouped_gemm[experts=4,layout=masked] a=e4m3:m b=mxfp4 out=bf16", 6},
      {"gemm a=mxfp8 b=nvfp4 out=bf16", 7},
      {"gemm a=bf16 b=e4m3:block128x128 out=bf16", 7},
      {"gemm a=e4m3:block1x128:ue8m0 b=mxfp4 out=f32", 7},
      {"grouped_gemm[experts=4,layout=offsets] a=f16 b=e4m3:block128x128 out=bf16", 30},
  };
  const int64_t n = 130, k = 256;
  for (const C& c : cases) {
    const KernelSpec s = spec_of(c.spec);
    uint64_t seed = 99;
    auto h = random_operands(s, c.m, n, k, {}, seed);
    ASSERT_TRUE(h.ok()) << c.spec << ": " << h.status().to_string();
    HostViews v(*h);
    auto checked = check_operands(s, {h->rows, n, k}, v.ops);
    ASSERT_TRUE(checked.ok()) << c.spec << ": " << checked.status().to_string();
    EXPECT_EQ(checked->m, h->rows) << c.spec;
    numerics::RefOperand ra, rb;
    ra.data = h->a.bytes.data();
    ra.ld = checked->lda;
    ra.scales = h->a_scale.present() ? h->a_scale.bytes.data() : nullptr;
    ra.lds = checked->lds_a;
    rb.data = h->b.bytes.data();
    rb.ld = checked->ldb;
    rb.expert_stride = checked->b_expert_stride;
    rb.scales = h->b_scale.present() ? h->b_scale.bytes.data() : nullptr;
    rb.lds = checked->lds_b;
    rb.scale_expert_stride = checked->b_scale_expert_stride;
    rb.global = checked->b_global ? reinterpret_cast<const float*>(h->b_global.bytes.data()) : nullptr;
    std::vector<double> out;
    std::vector<uint8_t> written;
    const int32_t* groups = h->group_rows.present() ? reinterpret_cast<const int32_t*>(h->group_rows.bytes.data()) : nullptr;
    Status st = numerics::reference_gemm_quantized(s, h->rows, n, k, ra, rb, groups, h->max_m, out, &written);
    ASSERT_TRUE(st.ok()) << c.spec << ": " << st.to_string();
    double norm = 0;
    int64_t owned = 0;
    for (int64_t i = 0; i < h->rows; ++i) owned += written[static_cast<size_t>(i)];
    for (double x : out) norm += x * x;
    EXPECT_GT(owned, 0) << c.spec;
    EXPECT_GT(norm, 0) << c.spec;
    EXPECT_TRUE(std::isfinite(norm)) << c.spec;
  }
}

// Grouped FP8 weights with f32 scales: expert e reads its own tensor scale (s[e]) or channel scales
// (s[e * N + n]). Two experts of one row each, all elements 1: out = K * scale of the row's expert.
TEST(FormatsOperandsTest, CpuReferenceReadsEachExpertsWeightScales) {
  const int64_t k = 16, n = 2;
  std::vector<uint16_t> a(2 * k, 0x3F80);       // bf16 1.0
  std::vector<uint8_t> b(2 * n * k, 0x38);      // e4m3 1.0, two experts of [N, K]
  const int32_t ends[] = {1, 2};                // offsets: expert 0 owns row 0, expert 1 row 1
  for (const char* text : {"grouped_gemm[experts=2,layout=offsets] a=bf16 b=e4m3:tensor out=f32",
                           "grouped_gemm[experts=2,layout=offsets] a=bf16 b=e4m3:n out=f32"}) {
    const KernelSpec s = spec_of(text);
    const bool per_channel = s.b.scale == ScaleGranularity::kN;
    const std::vector<float> scales = per_channel ? std::vector<float>{2, 5, 3, 7} : std::vector<float>{2, 3};
    numerics::RefOperand ra, rb;
    ra.data = a.data();
    ra.ld = k;
    rb.data = b.data();
    rb.ld = k;
    rb.expert_stride = n * k;
    rb.scales = scales.data();
    rb.scale_expert_stride = per_channel ? n : 1;
    std::vector<double> out;
    ASSERT_TRUE(numerics::reference_gemm_quantized(s, 2, n, k, ra, rb, ends, 0, out).ok()) << text;
    ASSERT_EQ(out.size(), 4u);
    for (int64_t row = 0; row < 2; ++row) {
      for (int64_t col = 0; col < n; ++col) {
        const double want = k * scales[static_cast<size_t>(per_channel ? row * n + col : row)];
        EXPECT_EQ(out[static_cast<size_t>(row * n + col)], want) << text << " row " << row << " col " << col;
      }
    }
  }
}

// reference_gemm_quantized on MXFP4 equals a GEMM of mx_dequantize's (exact) values.
TEST(FormatsOperandsTest, CpuReferenceOfMxfp4IsTheGemmOfTheDequantizedValues) {
  const KernelSpec s = spec_of("gemm a=bf16 b=mxfp4 out=f32");
  uint64_t seed = 5;
  auto h = random_operands(s, 3, 17, 64, {}, seed);
  ASSERT_TRUE(h.ok());
  numerics::QuantizedTensor q;
  q.format = Format::kMxfp4;
  q.rows = 17;
  q.cols = 64;
  q.data = h->b.bytes;
  q.scale_bytes = h->b_scale.bytes;
  auto w = numerics::mx_dequantize(q);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  numerics::RefOperand ra, rb;
  ra.data = h->a.bytes.data();
  ra.ld = 64;
  rb.data = h->b.bytes.data();
  rb.ld = 64;
  rb.scales = h->b_scale.bytes.data();
  rb.lds = 2;
  std::vector<double> out;
  ASSERT_TRUE(numerics::reference_gemm_quantized(s, 3, 17, 64, ra, rb, nullptr, 0, out).ok());
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 17; ++j) {
      double acc = 0;
      for (int kk = 0; kk < 64; ++kk) {
        uint16_t bits;
        std::memcpy(&bits, h->a.bytes.data() + 2 * (i * 64 + kk), 2);
        uint32_t f32 = uint32_t(bits) << 16;
        float av;
        std::memcpy(&av, &f32, 4);
        acc += double(av) * (*w)[static_cast<size_t>(j * 64 + kk)];
      }
      EXPECT_EQ(out[static_cast<size_t>(i * 17 + j)], acc) << i << "," << j;
    }
  }
}

// Operands of >= 2^23 elements are drawn and quantized in parallel row chunks: every chunk's codes and
// scales land where one whole-tensor quantization puts them (dequantize and quantize again gives the
// same bytes: a misplaced scale block would not), a seed fixes the values, and other seeds differ.
TEST(FormatsOperandsTest, LargeOperandsDrawnInParallelChunksStayConsistent) {
  for (const char* text : {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", "gemm a=e4m3:m b=e4m3:n out=bf16",
                           "gemm a=bf16 b=bf16 out=bf16"}) {
    auto spec = parse_spec(text);
    ASSERT_TRUE(spec.ok());
    const int64_t m = 8, n = 1100, k = 8192;  // W: 9 M elements, 128-row blocks with a partial last one
    uint64_t s1 = 7, s2 = 7, s3 = 8;
    auto h1 = random_operands(*spec, m, n, k, {}, s1);
    auto h2 = random_operands(*spec, m, n, k, {}, s2);
    auto h3 = random_operands(*spec, m, n, k, {}, s3);
    ASSERT_TRUE(h1.ok() && h2.ok() && h3.ok()) << text;
    EXPECT_EQ(h1->b.bytes, h2->b.bytes) << text << ": a seed fixes the values";
    EXPECT_EQ(h1->b_scale.bytes, h2->b_scale.bytes) << text;
    EXPECT_NE(h1->b.bytes, h3->b.bytes) << text;
    if (spec->b.format != Format::kE4m3) continue;
    numerics::QuantizedTensor q;
    q.format = Format::kE4m3;
    q.rows = n;
    q.cols = k;
    q.data = h1->b.bytes;
    q.scale_type = ScaleType::kF32;
    numerics::Fp8BlockOptions opt;
    opt.blocking = spec->b.scale == ScaleGranularity::kBlock128x128 ? numerics::Fp8Blocking::kBlock128x128
                                                                    : numerics::Fp8Blocking::kRow;
    q.block_rows = opt.blocking == numerics::Fp8Blocking::kBlock128x128 ? 128 : 1;
    q.block_cols = opt.blocking == numerics::Fp8Blocking::kBlock128x128 ? 128 : k;
    q.scales_f32.resize(h1->b_scale.bytes.size() / 4);
    std::memcpy(q.scales_f32.data(), h1->b_scale.bytes.data(), h1->b_scale.bytes.size());
    auto x = numerics::fp8_block_dequantize(q);
    ASSERT_TRUE(x.ok()) << x.status().to_string();
    auto again = numerics::fp8_block_quantize(*x, n, k, opt);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->data, q.data) << text;
    EXPECT_EQ(again->scales_f32, q.scales_f32) << text;
  }
}

}  // namespace
}  // namespace kiln
