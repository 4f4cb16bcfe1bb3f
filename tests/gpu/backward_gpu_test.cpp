// gpu tier: the backward passes (docs/backward.md) of the sm90 family against kiln's reference kernel on
// fresh random inputs (verify/check.hpp: outputs poisoned first, unwritten and overwritten elements counted).
// bf16 and f16 dgrad and wgrad (dense, grouped offsets with empty and one-row experts, grouped masked)
// with every output format at the plans' default configs, from M = 1 through odd tails to
// multi-wave shapes; a set of pinned configs (both warpgroup layouts, clusters of 2, split-K, TMA stores,
// ping-pong) on a tail shape and a multi-wave shape; grouped wgrad ignoring NaN in the rows no expert owns;
// accumulate=true (TMA reduce-adds and direct stores); repeat runs of one plan bitwise equal; wgrad with
// no rows writes zeros (accumulating: leaves dW as it was); mode quantized wgrad of two FP8 1x128
// column-wise copies, and mode quantized dgrad through W's transposed copy. Skips without a device or on anything but sm_90.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "compiler/plan/plan.hpp"
#include "kiln/kiln.hpp"
#include "runtime/device_buffer.hpp"
#include "runtime/driver/driver.hpp"
#include "verify/check.hpp"
#include "verify/check_inputs.hpp"
#include "tests/common/check_passes.hpp"
#include "tests/common/gpu_env.hpp"
#include "tests/common/tile_configs.hpp"

namespace kiln {
namespace {

const Arch kSm90a{9, 0, true};

Runtime& runtime() {
  static std::shared_ptr<Runtime> rt = make_test_runtime();
  return *rt;
}

#define KILN_REQUIRE_SM90() KILN_REQUIRE_SM90_OF(runtime())

KernelSpec spec_of(const std::string& text) {
  auto s = parse_spec(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status().to_string();
  return s.ok() ? *s : KernelSpec{};
}

// Plans spec for (m, n, k) (pinned to cfg when given) and checks one run; m: rows (masked: per expert).
void expect_passes(const std::string& text, int64_t m, int64_t n, int64_t k, const TileConfig* cfg = nullptr,
                   std::vector<int32_t> groups = {}) {
  PlanOptions po;
  if (cfg) po.config = *cfg;
  test::expect_check_passes(runtime(), text, m, n, k, po, std::move(groups));
}

struct Shape {
  int64_t m, n, k;
};
// M = 1, odd M against every tile edge, N and K tails (multiples of 8: 16-byte rows), multi-wave.
const Shape kShapes[] = {{1, 64, 64}, {1, 4096, 2048}, {77, 392, 200}, {513, 1032, 776}, {4096, 2048, 1024}};

TEST(BackwardGpu, DenseDefaultConfigs) {
  KILN_REQUIRE_SM90();
  for (const char* pass : {"dgrad", "wgrad"})
    for (const char* ab : {"a=bf16 b=bf16", "a=f16 b=f16"})
      for (const char* out : {"bf16", "f16", "f32"})
        for (const Shape& sh : kShapes)
          expect_passes(std::string("gemm ") + ab + " out=" + out + " pass=" + pass, sh.m, sh.n, sh.k);
}

TEST(BackwardGpu, GroupedDgrad) {
  KILN_REQUIRE_SM90();
  for (const char* ab : {"a=bf16 b=bf16", "a=f16 b=f16"}) {
    const std::string offsets = std::string("grouped_gemm[experts=8,layout=offsets] ") + ab + " out=bf16 pass=dgrad";
    expect_passes(offsets, 1000, 512, 1024);                                   // random split, empty experts
    expect_passes(offsets, 300, 264, 136, nullptr, {0, 1, 0, 150, 1, 0, 148, 0});  // one-row experts
    expect_passes(offsets, 4096, 2880, 2880);
    const std::string masked = std::string("grouped_gemm[experts=4,layout=masked] ") + ab + " out=f32 pass=dgrad";
    expect_passes(masked, 200, 512, 264);  // max_m 200, random counts
    expect_passes(masked, 64, 1024, 512, nullptr, {64, 0, 1, 33});
  }
}

// Grouped wgrad: each expert's rows are its reduction, ragged (an expert's last 64-row atom is partial),
// empty (zeros) or a single row.
TEST(BackwardGpu, GroupedWgrad) {
  KILN_REQUIRE_SM90();
  for (const char* ab : {"a=bf16 b=bf16", "a=f16 b=f16"}) {
    for (const char* out : {"f32", "bf16"}) {
      const std::string offsets =
          std::string("grouped_gemm[experts=8,layout=offsets] ") + ab + " out=" + out + " pass=wgrad";
      expect_passes(offsets, 1000, 512, 1024);                                       // random split, empty experts
      expect_passes(offsets, 300, 264, 136, nullptr, {0, 1, 0, 150, 1, 0, 148, 0});  // one-row experts, tails
      expect_passes(offsets, 4096, 2880, 768);
      const std::string masked =
          std::string("grouped_gemm[experts=4,layout=masked] ") + ab + " out=" + out + " pass=wgrad";
      expect_passes(masked, 200, 512, 264);  // max_m 200, random counts
      expect_passes(masked, 64, 1024, 512, nullptr, {64, 0, 1, 33});
    }
  }
  expect_passes("grouped_gemm[experts=1,layout=offsets] a=bf16 b=bf16 out=f32 pass=wgrad", 1, 64, 64);
  expect_passes("grouped_gemm[experts=32,layout=offsets] a=bf16 b=bf16 out=f32 pass=wgrad", 2048, 384, 320);
}

// Runs grouped wgrad twice on the same inputs, the second time with NaN (0xFF bytes) in every row of dY and X
// that no expert owns: the masked layout's padding past counts[e], and with offsets the rows past the last
// expert's end. The outputs must be bitwise equal and finite: the kernel zeroes what an expert's last atom
// reads past its rows rather than multiplying it by zero.
void expect_rows_outside_experts_ignored(const std::string& text, int64_t m, int64_t n, int64_t k,
                                         const std::vector<int32_t>& groups, int32_t last_end = 0) {
  const KernelSpec s = spec_of(text);
  const bool masked = s.layout == GroupLayout::kMasked;
  ScopedContext ctx;
  ASSERT_TRUE(ctx.enter(*Driver::get(), 0).ok());
  auto plan = runtime().plan(s, {masked ? m * s.experts : m, n, k});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  uint64_t seed = 5;
  auto h = random_operands(plan->spec(), m, n, k, groups, seed);
  ASSERT_TRUE(h.ok()) << h.status().to_string();
  std::vector<int64_t> outside;
  if (masked) {
    for (int64_t e = 0; e < s.experts; ++e)
      for (int64_t r = groups[static_cast<size_t>(e)]; r < m; ++r) outside.push_back(e * m + r);
  } else {
    int32_t* ends = reinterpret_cast<int32_t*>(h->group_rows.bytes.data());
    ends[s.experts - 1] = last_end;  // the last expert ends early: rows last_end .. m - 1 are no one's
    for (int64_t r = last_end; r < m; ++r) outside.push_back(r);
  }
  ASSERT_FALSE(outside.empty());
  const size_t eb = s.a.format == Format::kF32 ? 4 : 2;
  std::vector<std::vector<uint8_t>> outs;
  for (int poison = 0; poison < 2; ++poison) {
    HostOperands hp = *h;
    if (poison) {
      for (int64_t r : outside) {
        std::memset(hp.a.bytes.data() + static_cast<size_t>(r * n) * eb, 0xFF, static_cast<size_t>(n) * eb);
        std::memset(hp.b.bytes.data() + static_cast<size_t>(r * k) * eb, 0xFF, static_cast<size_t>(k) * eb);
      }
    }
    auto dev = DeviceOperands::upload(hp);
    ASSERT_TRUE(dev.ok()) << dev.status().to_string();
    ASSERT_TRUE(dev->out().fill_bytes(0xFF).ok());
    Status st = plan->run(dev->operands(), nullptr, 0, nullptr);
    ASSERT_TRUE(st.ok()) << st.to_string();
    std::vector<uint8_t> o(hp.out.bytes.size());
    ASSERT_TRUE(dev->out().download(o.data(), o.size()).ok());
    outs.push_back(std::move(o));
  }
  EXPECT_EQ(outs[0], outs[1]) << text;
  const float* f = reinterpret_cast<const float*>(outs[1].data());
  int64_t nonfinite = 0;
  for (size_t i = 0; i < outs[1].size() / 4; ++i) nonfinite += !std::isfinite(f[i]);
  EXPECT_EQ(nonfinite, 0) << text;
}

TEST(BackwardGpu, GroupedWgradIgnoresRowsOutsideExperts) {
  KILN_REQUIRE_SM90();
  expect_rows_outside_experts_ignored("grouped_gemm[experts=4,layout=masked] a=bf16 b=bf16 out=f32 pass=wgrad", 200,
                                      256, 192, {37, 0, 200, 65});
  expect_rows_outside_experts_ignored("grouped_gemm[experts=4,layout=offsets] a=bf16 b=bf16 out=f32 pass=wgrad", 300,
                                      320, 128, {50, 0, 77, 173}, 250);
}

// A pinned config: one 128-byte atom of K per stage (block_k 64), the rest as named.
TileConfig cfg(int bm, int bn, int stages, int wm, int wn, int cluster = 1, int split = 1, int tma = 0, int pp = 0) {
  TileConfig c = test::tile_config(bm, bn, 64, stages, wm, wn, 8, cluster);
  c.split_k = split;
  c.tma_store = tma;
  c.pingpong = pp;
  return c;
}

TEST(BackwardGpu, PinnedConfigs) {
  KILN_REQUIRE_SM90();
  const TileConfig pins[] = {
      cfg(128, 256, 4, 8, 1),       cfg(128, 128, 6, 8, 1),        cfg(128, 256, 4, 4, 2),
      cfg(256, 128, 4, 8, 1),       cfg(64, 128, 8, 4, 1),         cfg(64, 64, 8, 4, 1),
      cfg(128, 192, 4, 8, 1),       cfg(128, 256, 4, 8, 1, 2),     cfg(256, 128, 4, 8, 1, 2),
      cfg(64, 128, 8, 4, 1, 1, 4),  cfg(128, 128, 5, 8, 1, 1, 1, 1), cfg(128, 128, 5, 4, 1, 1, 1, 0, 1),
  };
  for (const TileConfig& c : pins) {
    for (const char* pass : {"dgrad", "wgrad"}) {
      const std::string spec = std::string("gemm a=bf16 b=bf16 out=bf16 pass=") + pass;
      if (!check_config(spec_of(spec), kSm90a, c).ok()) {
        ADD_FAILURE() << c.to_string() << " refused for " << spec << ": " << check_config(spec_of(spec), kSm90a, c).to_string();
        continue;
      }
      expect_passes(spec, 333, 1000, 712, &c);
      expect_passes(spec, 2048, 2048, 1024, &c);
    }
  }
  const TileConfig grouped[] = {cfg(128, 256, 4, 8, 1), cfg(128, 128, 6, 8, 1, 2), cfg(64, 128, 8, 4, 1)};
  for (const TileConfig& c : grouped)
    expect_passes("grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16 pass=dgrad", 1000, 512, 1024, &c);
  // Grouped wgrad: both warpgroup layouts (zeroing split over two consumers), one consumer, TMA stores.
  const TileConfig grouped_wgrad[] = {cfg(128, 256, 4, 8, 1), cfg(128, 256, 4, 4, 2), cfg(64, 128, 8, 4, 1),
                                      cfg(256, 128, 4, 8, 1), cfg(128, 128, 5, 8, 1, 1, 1, 1)};
  for (const TileConfig& c : grouped_wgrad) {
    expect_passes("grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=f32 pass=wgrad", 1000, 512, 1024, &c);
    expect_passes("grouped_gemm[experts=4,layout=masked] a=bf16 b=bf16 out=bf16 pass=wgrad", 100, 384, 256, &c,
                  {100, 0, 1, 63});
  }
}

// accumulate=true: out += the product (the check starts the output from random values and expects them
// plus the product; rows no expert owns keep theirs). f32 through TMA reduce-adds and direct stores, 16-bit
// outputs direct; dense and grouped.
TEST(BackwardGpu, Accumulate) {
  KILN_REQUIRE_SM90();
  const TileConfig tma = cfg(128, 128, 5, 8, 1, 1, 1, 1), direct = cfg(128, 256, 4, 8, 1);
  for (const char* out : {"f32", "bf16"}) {
    for (const char* pass : {"dgrad", "wgrad"}) {
      const std::string dense = std::string("gemm a=bf16 b=bf16 out=") + out + " pass=" + pass + " accumulate=true";
      expect_passes(dense, 333, 1000, 712);
      expect_passes(dense, 2048, 2048, 1024, &direct);
      if (std::string(out) == "f32") expect_passes(dense, 2048, 2048, 1024, &tma);
      const std::string grouped = std::string("grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=") + out +
                                  " pass=" + pass + " accumulate=true";
      expect_passes(grouped, 300, 264, 136, nullptr, {0, 1, 0, 150, 1, 0, 148, 0});
      const std::string masked = std::string("grouped_gemm[experts=4,layout=masked] a=f16 b=f16 out=") + out +
                                 " pass=" + pass + " accumulate=true";
      expect_passes(masked, 64, 1024, 512, nullptr, {64, 0, 1, 33});
    }
  }
}

// Runs one plan twice on the same inputs; the outputs must be bitwise equal (no atomics on these paths).
TEST(BackwardGpu, RepeatRunsAreBitwiseEqual) {
  KILN_REQUIRE_SM90();
  for (const char* pass : {"dgrad", "wgrad"})
    test::expect_repeat_runs_bitwise_equal(runtime(), std::string("gemm a=bf16 b=bf16 out=f32 pass=") + pass, 1000,
                                           768, 520);
  test::expect_repeat_runs_bitwise_equal(
      runtime(), "grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=f32 pass=wgrad", 1000, 768, 520);
}

// wgrad over no rows: dW = 0 (the kernel runs with an empty reduction and writes zeros); with
// accumulate=true dW is left as it was.
void expect_wgrad_of_no_rows(bool accumulate) {
  const int64_t n = 256, k = 192;
  ScopedContext ctx;
  ASSERT_TRUE(ctx.enter(*Driver::get(), 0).ok());
  auto plan = runtime().plan(
      spec_of(std::string("gemm a=bf16 b=bf16 out=f32 pass=wgrad") + (accumulate ? " accumulate=true" : "")), {0, n, k});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  uint64_t seed = 11;
  auto h = random_operands(plan->spec(), 1, n, k, {}, seed);  // shapes for one row; run with none
  ASSERT_TRUE(h.ok()) << h.status().to_string();
  auto dev = DeviceOperands::upload(*h);
  ASSERT_TRUE(dev.ok()) << dev.status().to_string();
  Operands ops = dev->operands();
  int64_t a_shape[2] = {0, n}, b_shape[2] = {0, k};
  DLTensor a = *ops.a, b = *ops.b;
  a.shape = a_shape;
  b.shape = b_shape;
  a.strides = b.strides = nullptr;
  ops.a = &a;
  ops.b = &b;
  ASSERT_TRUE(dev->out().fill_bytes(0xFF).ok());
  Status st = plan->run(ops, nullptr, 0, nullptr);
  ASSERT_TRUE(st.ok()) << st.to_string();
  std::vector<float> o(static_cast<size_t>(n * k));
  ASSERT_TRUE(dev->out().download(o.data(), o.size() * 4).ok());
  int64_t nonzero = 0, poisoned = 0;
  for (float v : o) {
    nonzero += v != 0.0f;
    poisoned += std::isnan(v);
  }
  if (accumulate) {
    EXPECT_EQ(poisoned, n * k);  // untouched: still the 0xFF poison
  } else {
    EXPECT_EQ(nonzero, 0);
  }
}

// Mode quantized: wgrad of the column-wise copies dYᵀ [N, M] and Xᵀ [K, M] in FP8 1x128 blocks along the
// tokens (per-column b scales). f32 and E8M0 scales, e4m3 / e5m2, bf16 / f32 outputs, N and K tails, at
// the default configs and pinned ones (one and two consumer warpgroups, 64 / 128 columns, split-K,
// clusters, TMA stores), and accumulate=true.
TEST(BackwardGpu, QuantizedWgrad) {
  KILN_REQUIRE_SM90();
  const Shape shapes[] = {{128, 64, 64}, {384, 392, 200}, {1152, 1032, 776}, {4096, 2048, 1024}};
  for (const char* ab : {"a=e4m3:block1x128 b=e4m3:block1x128", "a=e4m3:block1x128:ue8m0 b=e4m3:block1x128:ue8m0",
                         "a=e5m2:block1x128 b=e4m3:block1x128"})
    for (const char* out : {"bf16", "f32"})
      for (const Shape& sh : shapes) expect_passes(std::string("gemm ") + ab + " out=" + out + " pass=wgrad", sh.m, sh.n, sh.k);
  const std::string spec = "gemm a=e4m3:block1x128 b=e4m3:block1x128 out=f32 pass=wgrad";
  for (const char* name : {"bm128_bn128_bk128_s6_w8x1_g8", "bm64_bn128_bk128_s8_w4x1_g8", "bm128_bn64_bk128_s6_w8x1_g8",
                           "bm128_bn128_bk128_s5_w4x2_g8", "bm64_bn64_bk128_s6_w4x1_g8", "bm64_bn128_bk128_s6_w4x1_g8_k2",
                           "bm128_bn128_bk128_s5_w8x1_g8_c2", "bm128_bn128_bk128_s4_w8x1_g8_t"}) {
    const TileConfig c = *config_from_name(name);
    const Status ok = check_config(spec_of(spec), kSm90a, c);
    if (!ok.ok()) {
      ADD_FAILURE() << name << " refused: " << ok.to_string();
      continue;
    }
    expect_passes(spec, 384, 1000, 712, &c);
    expect_passes(spec, 2048, 2048, 1024, &c);
  }
  for (const char* out : {"f32", "bf16"})
    expect_passes(std::string("gemm a=e4m3:block1x128 b=e4m3:block1x128 out=") + out + " pass=wgrad accumulate=true",
                  512, 1000, 712);
}

// Grouped quantized wgrad: the padded column-wise copies (each expert's tokens from a 128-column boundary,
// zero codes in its last block's padding, NaN codes past the last expert's blocks that no tile may read),
// offsets with empty, one-row and exactly-128-row experts, masked; default and pinned configs, accumulate.
TEST(BackwardGpu, GroupedQuantizedWgrad) {
  KILN_REQUIRE_SM90();
  for (const char* ab : {"a=e4m3:block1x128 b=e4m3:block1x128", "a=e4m3:block1x128:ue8m0 b=e4m3:block1x128:ue8m0"})
    for (const char* out : {"bf16", "f32"}) {
      const std::string offsets = std::string("grouped_gemm[experts=8,layout=offsets] ") + ab + " out=" + out + " pass=wgrad";
      expect_passes(offsets, 1000, 512, 1024);
      expect_passes(offsets, 300, 264, 136, nullptr, {0, 1, 0, 128, 1, 0, 170, 0});
      expect_passes(std::string("grouped_gemm[experts=4,layout=masked] ") + ab + " out=" + out + " pass=wgrad", 200, 392, 200);
    }
  const std::string spec = "grouped_gemm[experts=16,layout=offsets] a=e4m3:block1x128 b=e4m3:block1x128 out=f32 pass=wgrad";
  expect_passes(spec, 4096, 2048, 1024);
  for (const char* name : {"bm64_bn128_bk128_s8_w4x1_g8", "bm128_bn64_bk128_s6_w8x1_g8", "bm128_bn128_bk128_s5_w4x2_g8",
                           "bm128_bn128_bk128_s4_w8x1_g8_t"}) {
    const TileConfig c = *config_from_name(name);
    expect_passes(spec, 2000, 392, 776, &c);
  }
  expect_passes("grouped_gemm[experts=8,layout=offsets] a=e4m3:block1x128 b=e4m3:block1x128 out=f32 pass=wgrad "
                "accumulate=true",
                1000, 512, 256);
}

// Mode quantized dgrad: FP8 dY (1x128 blocks along N, per token, per tensor) times W through its transposed
// copy (128x128 block scales f32 or E8M0, or a tensor scale), against the reference GEMM of dY and a Wᵀ
// transposed on the host. Dense and grouped (offsets with empty and one-row experts, masked), M from 1,
// output tiles past K (block scales: K % 128 == 0), K and N tails for tensor scales (multiples of 16), default and pinned configs (split-K,
// clusters, TMA stores, one and two consumer warpgroups), accumulate=true.
TEST(BackwardGpu, QuantizedDgrad) {
  KILN_REQUIRE_SM90();
  const Shape block_shapes[] = {{1, 128, 128}, {77, 384, 256}, {513, 1024, 640}, {4096, 2048, 1024}};
  for (const char* ab : {"a=e4m3:block1x128 b=e4m3:block128x128", "a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0",
                         "a=e5m2:block1x128 b=e4m3:block128x128"})
    for (const char* out : {"bf16", "f32"})
      for (const Shape& sh : block_shapes)
        expect_passes(std::string("gemm ") + ab + " out=" + out + " pass=dgrad", sh.m, sh.n, sh.k);
  for (const char* ab : {"a=e4m3:tensor b=e4m3:tensor", "a=e5m2:m b=e4m3:tensor"})
    for (const Shape& sh : {Shape{1, 64, 64}, Shape{77, 400, 208}, Shape{2048, 4096, 1024}})
      expect_passes(std::string("gemm ") + ab + " out=bf16 pass=dgrad", sh.m, sh.n, sh.k);
  const std::string offsets = "grouped_gemm[experts=8,layout=offsets] a=e4m3:block1x128 b=e4m3:block128x128 out=bf16 pass=dgrad";
  expect_passes(offsets, 1000, 512, 1024);
  expect_passes(offsets, 300, 256, 384, nullptr, {0, 1, 0, 150, 1, 0, 148, 0});
  expect_passes("grouped_gemm[experts=4,layout=masked] a=e4m3:tensor b=e4m3:tensor out=f32 pass=dgrad", 200, 512, 272);
  expect_passes("grouped_gemm[experts=4,layout=masked] a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=bf16 pass=dgrad",
                64, 1024, 512, nullptr, {64, 0, 1, 33});
  const std::string spec = "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16 pass=dgrad";
  for (const char* name : {"bm128_bn128_bk128_s6_w8x1_g8", "bm128_bn256_bk128_s3_w8x1_g8_c2_t", "bm64_bn128_bk128_s8_w4x1_g8",
                           "bm64_bn64_bk128_s8_w4x1_g8_k4", "bm128_bn128_bk256_s2_w8x1_g8_c2_t"}) {
    const TileConfig c = *config_from_name(name);
    const Status ok = check_config(spec_of(spec), kSm90a, c);
    if (!ok.ok()) {
      ADD_FAILURE() << name << " refused: " << ok.to_string();
      continue;
    }
    expect_passes(spec, 384, 1024, 640, &c);
    expect_passes(spec, 2048, 2048, 1024, &c);
  }
  for (const char* out : {"f32", "bf16"})
    expect_passes(std::string("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=") + out + " pass=dgrad accumulate=true",
                  512, 1024, 640);
}

// MXFP8 in mode quantized: the forward's MXFP8 kernel on column-wise copies. dgrad: dY [M, N] in 1x32 blocks
// along N times W's column-wise copy [K, N] (grouped [E, K, N]); wgrad: dYᵀ [N, M] and Xᵀ [K, M], blocks of
// 32 tokens. Against the reference GEMM of the copies; M from 1 (dgrad), N and K tails where the blocks
// allow, offsets with empty and one-row experts, masked, accumulate.
TEST(BackwardGpu, QuantizedMxfp8DgradAndWgrad) {
  KILN_REQUIRE_SM90();
  for (const char* out : {"bf16", "f32"}) {
    const std::string dgrad = std::string("gemm a=mxfp8 b=mxfp8 out=") + out + " pass=dgrad";
    for (const Shape& sh : {Shape{1, 64, 64}, Shape{77, 384, 200}, Shape{513, 1024, 656}, Shape{4096, 2048, 1024}})
      expect_passes(dgrad, sh.m, sh.n, sh.k);
    const std::string wgrad = std::string("gemm a=mxfp8 b=mxfp8 out=") + out + " pass=wgrad";
    for (const Shape& sh : {Shape{32, 64, 64}, Shape{384, 392, 200}, Shape{1152, 1032, 776}, Shape{4096, 2048, 1024}})
      expect_passes(wgrad, sh.m, sh.n, sh.k);
  }
  const std::string offsets = "grouped_gemm[experts=8,layout=offsets] a=mxfp8 b=mxfp8 out=bf16 pass=dgrad";
  expect_passes(offsets, 1000, 512, 1024);
  expect_passes(offsets, 300, 256, 400, nullptr, {0, 1, 0, 150, 1, 0, 148, 0});
  expect_passes("grouped_gemm[experts=4,layout=masked] a=mxfp8 b=mxfp8 out=f32 pass=dgrad", 200, 512, 272);
  for (const char* pass : {"dgrad", "wgrad"}) {
    expect_passes(std::string("gemm a=mxfp8 b=mxfp8 out=f32 pass=") + pass + " accumulate=true", 512, 1024, 640);
    expect_passes(std::string("gemm a=mxfp8 b=mxfp8 out=bf16 pass=") + pass + " accumulate=true", 512, 1024, 640);
  }
}

// Per-tensor FP8 wgrad: the forward's FP8 kernel on dYᵀ [N, M] and Xᵀ [K, M] with their tensor scales (M a
// multiple of 16: 16-byte rows), e4m3 / e5m2, N and K tails, accumulate.
TEST(BackwardGpu, QuantizedTensorScaledWgrad) {
  KILN_REQUIRE_SM90();
  for (const char* ab : {"a=e4m3 b=e4m3", "a=e5m2 b=e4m3"})
    for (const char* out : {"bf16", "f32"})
      for (const Shape& sh : {Shape{16, 64, 64}, Shape{400, 392, 200}, Shape{4096, 2048, 1024}})
        expect_passes(std::string("gemm ") + ab + " out=" + out + " pass=wgrad", sh.m, sh.n, sh.k);
  expect_passes("gemm a=e4m3 b=e4m3 out=f32 pass=wgrad accumulate=true", 512, 1024, 640);
}

// Per-row FP8 copies (a per-token / per-channel forward's backward): wgrad on dYᵀ [N, M] and Xᵀ [K, M] with
// one scale per row of each (a=...:m b=...:n; mixed with a tensor scale), dense; dgrad on W's column-wise
// copy [K, N] with scales [K] (b=...:n), dY per token, per tensor or in 1x128 blocks, dense, offsets with
// empty and one-row experts, masked; M = 1 for dgrad; N and K tails; accumulate.
TEST(BackwardGpu, QuantizedPerRowCopies) {
  KILN_REQUIRE_SM90();
  for (const char* out : {"bf16", "f32"}) {
    for (const char* ab : {"a=e4m3:m b=e4m3:n", "a=e4m3:tensor b=e4m3:n", "a=e5m2:m b=e4m3:tensor"})
      for (const Shape& sh : {Shape{16, 64, 64}, Shape{400, 392, 200}, Shape{4096, 2048, 1024}})
        expect_passes(std::string("gemm ") + ab + " out=" + out + " pass=wgrad", sh.m, sh.n, sh.k);
    for (const char* ab : {"a=e4m3:m b=e4m3:n", "a=e4m3:tensor b=e4m3:n"})
      for (const Shape& sh : {Shape{1, 64, 64}, Shape{77, 400, 200}, Shape{4096, 2048, 1024}})
        expect_passes(std::string("gemm ") + ab + " out=" + out + " pass=dgrad", sh.m, sh.n, sh.k);
  }
  expect_passes("gemm a=e4m3:block1x128 b=e4m3:n out=bf16 pass=dgrad", 513, 1024, 656);
  const std::string offsets = "grouped_gemm[experts=8,layout=offsets] a=e4m3:m b=e4m3:n out=bf16 pass=dgrad";
  expect_passes(offsets, 1000, 512, 1024);
  expect_passes(offsets, 300, 256, 400, nullptr, {0, 1, 0, 150, 1, 0, 148, 0});
  expect_passes("grouped_gemm[experts=4,layout=masked] a=e4m3:tensor b=e4m3:n out=f32 pass=dgrad", 200, 512, 272);
  for (const char* pass : {"dgrad", "wgrad"})
    expect_passes(std::string("gemm a=e4m3:m b=e4m3:n out=f32 pass=") + pass + " accumulate=true", 512, 1024, 640);
}

// Quantized dgrad with the caller's workspace: Plan::workspace_bytes(m) holds W's transposed copy (plus
// split-K's share at small M); a run with exactly that many bytes gives the same dX, bitwise, as a run on
// the plan's own workspace; one byte less is INVALID_ARGUMENT naming the size, and nothing is written.
TEST(BackwardGpu, QuantizedDgradWithTheCallersWorkspace) {
  KILN_REQUIRE_SM90();
  const KernelSpec s = spec_of("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=f32 pass=dgrad");
  ScopedContext ctx;
  ASSERT_TRUE(ctx.enter(*Driver::get(), 0).ok());
  for (const int64_t m : {int64_t{8}, int64_t{1000}}) {
    const int64_t n = 1024, k = 640;
    auto plan = runtime().plan(s, {m, n, k});
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    const size_t need = plan->workspace_bytes(m);
    EXPECT_GE(need, static_cast<size_t>(n * k + (n / 128) * (k / 128) * 4)) << m;
    uint64_t seed = 11 + m;
    auto h = random_operands(s, m, n, k, {}, seed);
    ASSERT_TRUE(h.ok()) << h.status().to_string();
    auto dev = DeviceOperands::upload(*h);
    ASSERT_TRUE(dev.ok()) << dev.status().to_string();
    auto ws = DeviceBuffer::alloc(need);
    ASSERT_TRUE(ws.ok()) << ws.status().to_string();
    ASSERT_TRUE(ws->fill_bytes(0).ok());
    std::vector<std::vector<uint8_t>> outs;
    for (void* w : {static_cast<void*>(nullptr), ws->data()}) {
      ASSERT_TRUE(dev->out().fill_bytes(0xFF).ok());
      Status st = plan->run(dev->operands(), w, w ? need : 0, nullptr);
      ASSERT_TRUE(st.ok()) << st.to_string();
      ASSERT_TRUE(Driver::get().value()->check(Driver::get().value()->cuCtxSynchronize(), "sync").ok());
      std::vector<uint8_t> o(h->out.bytes.size());
      ASSERT_TRUE(dev->out().download(o.data(), o.size()).ok());
      outs.push_back(std::move(o));
    }
    EXPECT_EQ(outs[0], outs[1]) << "m=" << m;
    ASSERT_TRUE(dev->out().fill_bytes(0xFF).ok());
    Status small = plan->run(dev->operands(), ws->data(), need - 1, nullptr);
    EXPECT_EQ(small.code(), StatusCode::kInvalidArgument) << small.to_string();
    EXPECT_NE(small.message().find(std::to_string(need)), std::string::npos) << small.message();
    std::vector<uint8_t> o(h->out.bytes.size());
    ASSERT_TRUE(dev->out().download(o.data(), o.size()).ok());
    EXPECT_EQ(o, std::vector<uint8_t>(o.size(), 0xFF)) << "m=" << m << ": a refused run wrote dX";
  }
}

TEST(BackwardGpu, WgradOfNoRowsWritesZeros) {
  KILN_REQUIRE_SM90();
  expect_wgrad_of_no_rows(false);
  expect_wgrad_of_no_rows(true);
}

}  // namespace
}  // namespace kiln
