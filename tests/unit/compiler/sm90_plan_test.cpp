// unit tier: the sm90 planner's v4 config rules (compiler/plan/sm90_plan.cpp; templates/kernels/sm90/producer.cuh, staged scales):
// two-atom stages (block_k 256 FP8) and three consumer warpgroups, their shared memory with staged
// block scales, thread counts, and the block-scaled config space. No CUDA.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "compiler/plan/sm90_plan.hpp"
#include "compiler/spec/spec.hpp"
#include "tests/common/tile_configs.hpp"

namespace kiln {
namespace {

using ::testing::HasSubstr;

Arch sm90a() { return *parse_arch("sm_90a"); }

KernelSpec spec_of(const std::string& text) {
  auto r = parse_spec(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().to_string();
  return r.ok() ? *r : KernelSpec{};
}

TileConfig config(int bm, int bn, int bk, int stages, int wm, int wn, int cluster = 1) {
  return test::tile_config(bm, bn, bk, stages, wm, wn, 8, cluster);
}

const char* const kBlock = "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16";

TEST(Sm90PlanV4Test, TwoAtomStagesAreValidForPromotedFp8) {
  const KernelSpec block = spec_of(kBlock);
  const TileConfig c = config(128, 128, 256, 3, 8, 1);
  EXPECT_TRUE(sm90_check_config(block, sm90a(), c).ok()) << sm90_check_config(block, sm90a(), c).to_string();
  EXPECT_EQ(c.to_string(), "bm128_bn128_bk256_s3_w8x1_g8");
  EXPECT_TRUE(sm90_staged_scales(block, c));
  EXPECT_EQ(sm90_threads(block, c), 384);
  // 3 stages x (2 atoms x 256 rows x 128 bytes + 2 x (128 + 4) scale words) + barriers + slack.
  EXPECT_EQ(sm90_smem_bytes(block, c), 3 * (256 * 256 + 2 * 4 * 132) + 16 * 3 + 1024);
  TileConfig deep = c;
  deep.stages = 4;
  EXPECT_EQ(sm90_check_config(block, sm90a(), deep).code(), StatusCode::kResourceExhausted);
  // Tensor-scaled promoted FP8 takes it too, without staged scales.
  const KernelSpec tensor = spec_of("gemm a=e4m3:tensor b=e4m3:tensor out=bf16");
  EXPECT_TRUE(sm90_check_config(tensor, sm90a(), c).ok());
  EXPECT_FALSE(sm90_staged_scales(tensor, c));
  EXPECT_EQ(sm90_smem_bytes(tensor, c), 3 * 256 * 256 + 16 * 3 + 1024);
}

TEST(Sm90PlanV4Test, TwoAtomStagesForEveryFormatThreeNever) {
  // Unpromoted operands (bf16, and FP8 at 64 x 256 per warpgroup) issue both atoms into the
  // accumulators (256 bytes of every row per stage); promoted FP8 alternates two partials, which every
  // promotable tile (<= 64 accumulators) holds.
  const KernelSpec bf16 = spec_of("gemm a=bf16 b=bf16 out=bf16");
  EXPECT_TRUE(sm90_check_config(bf16, sm90a(), config(128, 128, 128, 3, 8, 1)).ok());
  EXPECT_TRUE(sm90_check_config(bf16, sm90a(), config(64, 64, 128, 6, 4, 1)).ok());
  const KernelSpec tensor = spec_of("gemm a=e4m3:tensor b=e4m3:tensor out=bf16");
  EXPECT_TRUE(sm90_check_config(tensor, sm90a(), config(128, 256, 256, 2, 8, 1)).ok());
  EXPECT_FALSE(sm90_promotes(tensor, config(128, 256, 256, 2, 8, 1)));
  // Three atoms per stage do not exist.
  Status st = sm90_check_config(tensor, sm90a(), config(128, 128, 384, 2, 8, 1));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("block_k=384"));
  st = sm90_check_config(bf16, sm90a(), config(128, 128, 192, 2, 8, 1));
  EXPECT_THAT(st.message(), HasSubstr("block_k=192"));
}

// MXFP8 with block_k 64 (templates/kernels/sm90/mx_dequant.cuh): the dequantizing producer is two warpgroups, so the
// block is 512 threads (the launch and the kernel's __launch_bounds__ both read sm90_threads); every other
// MXFP8 config keeps one producer warpgroup.
TEST(Sm90PlanV4Test, TheDequantizingProducerIsTwoWarpgroups) {
  const KernelSpec mx = spec_of("gemm a=mxfp8 b=mxfp8 out=bf16");
  const TileConfig dq = config(128, 256, 64, 2, 8, 1);
  ASSERT_TRUE(sm90_check_config(mx, sm90a(), dq).ok()) << sm90_check_config(mx, sm90a(), dq).to_string();
  EXPECT_TRUE(sm90_mx_dequant(mx, dq));
  EXPECT_EQ(sm90_threads(mx, dq), 512);
  EXPECT_EQ(sm90_launch_shape(mx, dq, {4096, 7168, 7168}).block_x, 512u);
  const TileConfig promoted = config(128, 128, 128, 5, 8, 1);
  EXPECT_FALSE(sm90_mx_dequant(mx, promoted));
  EXPECT_EQ(sm90_threads(mx, promoted), 384);
  // The same tile shape in bf16 is one producer warpgroup and two consumers.
  EXPECT_EQ(sm90_threads(spec_of("gemm a=bf16 b=bf16 out=bf16"), dq), 384);
}

TEST(Sm90PlanV4Test, ThreeConsumerWarpgroupsStackAlongM) {
  const KernelSpec block = spec_of(kBlock);
  const TileConfig c = config(192, 128, 128, 5, 12, 1);
  EXPECT_TRUE(sm90_check_config(block, sm90a(), c).ok()) << sm90_check_config(block, sm90a(), c).to_string();
  EXPECT_EQ(c.to_string(), "bm192_bn128_bk128_s5_w12x1_g8");
  EXPECT_EQ(sm90_threads(block, c), 512);
  EXPECT_TRUE(sm90_staged_scales(block, c));
  EXPECT_TRUE(sm90_promotes(block, c));
  EXPECT_EQ(sm90_smem_bytes(block, c), 5 * (320 * 128 + 4 * 196) + 16 * 5 + 1024);
  TileConfig clustered = c;
  clustered.cluster_m = 2;
  EXPECT_TRUE(sm90_check_config(block, sm90a(), clustered).ok());
  // 160 registers per consumer: no 64 x 256 warpgroup tiles, no two-atom stages.
  Status st = sm90_check_config(block, sm90a(), config(192, 256, 128, 3, 12, 1));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  st = sm90_check_config(block, sm90a(), config(192, 128, 256, 2, 12, 1));
  EXPECT_THAT(st.message(), HasSubstr("160 registers"));
  // Three warpgroups only along M; four are refused.
  st = sm90_check_config(block, sm90a(), config(256, 128, 128, 4, 16, 1));
  EXPECT_THAT(st.message(), HasSubstr("warps_m=16"));
  st = sm90_check_config(block, sm90a(), config(128, 128, 128, 4, 8, 2));
  EXPECT_THAT(st.message(), HasSubstr("consumer warpgroups"));
  // One-atom tiles stage their scales where the slots fit beside the ring; a ring that
  // fills shared memory keeps the per-thread global scale loads.
  EXPECT_FALSE(sm90_staged_scales(block, config(128, 128, 128, 7, 8, 1)));
  EXPECT_EQ(sm90_smem_bytes(block, config(128, 128, 128, 7, 8, 1)), 7 * 256 * 128 + 16 * 7 + 1024);
  EXPECT_TRUE(sm90_staged_scales(block, config(128, 128, 128, 6, 8, 1)));
  EXPECT_EQ(sm90_smem_bytes(block, config(128, 128, 128, 6, 8, 1)),
            6 * (256 * 128 + 4 * 132) + 16 * 6 + 1024);
  // The same ring with the staged output tile of a TMA store no longer has room for the slots.
  TileConfig tma6 = config(128, 128, 128, 6, 8, 1);
  tma6.tma_store = 1;
  EXPECT_FALSE(sm90_staged_scales(block, tma6));
  EXPECT_TRUE(sm90_check_config(block, sm90a(), tma6).ok())
      << sm90_check_config(block, sm90a(), tma6).to_string();
  // Scales without blocks are never staged.
  EXPECT_FALSE(
      sm90_staged_scales(spec_of("gemm a=e4m3:m b=e4m3:n out=bf16"), config(128, 128, 128, 6, 8, 1)));
}

TEST(Sm90PlanV4Test, BlockScaledSpaceOffersTheV4VariantsAndTheMeasuredDefault) {
  const KernelSpec block = spec_of(kBlock);
  bool two_atoms = false, three = false, old_default = false;
  for (const TileConfig& c : sm90_config_space(block, sm90a())) {
    EXPECT_TRUE(sm90_check_config(block, sm90a(), c).ok()) << c.to_string();
    if (c.to_string() == "bm128_bn128_bk256_s3_w8x1_g8") two_atoms = true;
    if (c.to_string() == "bm192_bn128_bk128_s5_w12x1_g8") three = true;
    if (c.to_string() == "bm128_bn128_bk128_s7_w8x1_g8") old_default = true;
  }
  EXPECT_TRUE(two_atoms);
  EXPECT_TRUE(three);
  EXPECT_TRUE(old_default);
  // Tuned on the H200 (docs/performance.md): large block problems (f32 or ue8m0 scales) whose N
  // fills 256-column tiles default to 128 x 256 promoted in halves, scales staged, TMA stores, clusters
  // of 2 from K = 2048; f32 outputs (no room for the staged output tile) and N that leaves a partial
  // 256 tile keep the earlier rules: the two-atom, clustered 128 x 128, 128 x 192.
  EXPECT_EQ(default_config(block, sm90a(), {4096, 7168, 16384}).to_string(),
            "bm128_bn256_bk128_s3_w8x1_g8_c2_t");
  EXPECT_EQ(default_config(block, sm90a(), {4096, 7168, 7168}).to_string(),
            "bm128_bn256_bk128_s3_w8x1_g8_c2_t");
  EXPECT_EQ(default_config(block, sm90a(), {4096, 7168, 2048}).to_string(),
            "bm128_bn256_bk128_s3_w8x1_g8_c2_t");
  EXPECT_EQ(default_config(block, sm90a(), {4096, 32768, 1024}).to_string(),
            "bm128_bn256_bk128_s3_w8x1_g8_t");
  EXPECT_EQ(default_config(block, sm90a(), {4096, 7040, 7168}).to_string(),
            "bm128_bn128_bk256_s2_w8x1_g8_c2_t");
  const KernelSpec e8 = spec_of("gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=bf16");
  EXPECT_EQ(default_config(e8, sm90a(), {4096, 7168, 16384}).to_string(),
            "bm128_bn256_bk128_s3_w8x1_g8_c2_t");
  EXPECT_EQ(default_config(e8, sm90a(), {4096, 2112, 16384}).block_n, 192);
  EXPECT_EQ(default_config(spec_of("gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=f32"), sm90a(),
                           {4096, 7168, 16384})
                .to_string(),
            "bm128_bn128_bk256_s3_w8x1_g8_c2");
  // The 128 x 128 square gives up a stage so that the block scales are staged beside the ring
  // (10-17% faster at M = 128 .. 512 on the H200, docs/performance.md): 5 stages with TMA stores (from
  // 64 rows) instead of 6, and 6 instead of 7 with direct stores (gate|up outputs keep them).
  const TileConfig square = default_config(block, sm90a(), {128, 7168, 16384});
  EXPECT_EQ(square.to_string(), "bm128_bn128_bk128_s5_w8x1_g8_t");
  EXPECT_TRUE(sm90_staged_scales(block, square));
  const KernelSpec block_glu = spec_of(
      "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16 gate_up=interleaved epilogue=\"out = silu(gate) * "
      "up\"");
  const TileConfig square_direct = default_config(block_glu, sm90a(), {128, 7168, 16384});
  EXPECT_EQ(square_direct.to_string(), "bm128_bn128_bk128_s6_w8x1_g8");
  EXPECT_TRUE(sm90_staged_scales(block_glu, square_direct));
  const TileConfig square_t = default_config(block, sm90a(), {300, 7168, 7168});
  EXPECT_EQ(square_t.to_string(), "bm128_bn128_bk128_s5_w8x1_g8_t");
  EXPECT_TRUE(sm90_staged_scales(block, square_t));
  EXPECT_TRUE(sm90_staged_scales(e8, default_config(e8, sm90a(), {128, 7168, 7168})));
  // Without block scales the ring stays as deep as shared memory allows beside the staged output tile.
  const TileConfig row_square =
      default_config(spec_of("gemm a=e4m3:m b=e4m3:n out=bf16"), sm90a(), {128, 7168, 16384});
  EXPECT_EQ(row_square.to_string(), "bm128_bn128_bk128_s6_w8x1_g8_t");
  // Below 64 rows the direct epilogue stays (TMA stores measured from 64 rows only).
  EXPECT_EQ(default_config(spec_of("gemm a=e4m3:m b=e4m3:n out=bf16"), sm90a(), {48, 7168, 16384}).tma_store,
            0);
  // Specs without block scales do not get the v4 shapes in their space, except the 64-row two-atom
  // tiles (256 bytes of every row per stage for decode; unpromoted ones never split).
  for (const char* text : {"gemm a=e4m3:tensor b=e4m3:tensor out=bf16", "gemm a=bf16 b=bf16 out=bf16"}) {
    bool two_atom = false;
    for (const TileConfig& c : sm90_config_space(spec_of(text), sm90a())) {
      EXPECT_NE(c.warps_m, 12) << text << " " << c.to_string();
      const int bytes = c.block_k * std::max(1, format_bits(spec_of(text).a.format) / 8);
      if (bytes == 256) {
        two_atom = true;
        EXPECT_EQ(c.block_m, 64) << text << " " << c.to_string();
        if (!sm90_promotes(spec_of(text), c)) EXPECT_EQ(c.split_k, 1) << text << " " << c.to_string();
      } else {
        EXPECT_EQ(bytes, 128) << text << " " << c.to_string();
      }
    }
    EXPECT_TRUE(two_atom) << text;
  }
}

// N tiles between the powers of two: the widths the kernel spells out pass, the others name the list;
// block128x128 weight scales and TMA boxes keep their own rules.
TEST(Sm90PlanOddNTest, WidthsBetweenThePowersOfTwo) {
  const KernelSpec bf16 = spec_of("gemm a=bf16 b=bf16 out=bf16");
  for (int n : {96, 112, 144, 160, 176, 192, 208}) {
    EXPECT_TRUE(sm90_check_config(bf16, sm90a(), config(128, n, 64, 3, 8, 1)).ok()) << n;
  }
  const Status bad = sm90_check_config(bf16, sm90a(), config(128, 240, 64, 3, 8, 1));
  EXPECT_THAT(bad.message(), HasSubstr("64, 96, 112, 128, 144, 160, 176, 192, 208 or 256"));
  // FP8 above 128 columns per warpgroup accumulates fast (no room for a promoted partial); 112 promotes.
  const KernelSpec fp8 = spec_of("gemm a=e4m3:tensor b=e4m3:tensor out=bf16");
  EXPECT_FALSE(sm90_promotes(fp8, config(128, 192, 128, 3, 8, 1)));
  EXPECT_TRUE(sm90_promotes(fp8, config(128, 112, 128, 3, 8, 1)));
  // DeepSeek weight blocks need a warpgroup's columns inside one 128-column block.
  EXPECT_FALSE(sm90_check_config(spec_of("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16"), sm90a(),
                                 config(128, 112, 128, 3, 8, 1))
                   .ok());
  // TMA stores write 128-byte boxes (192 bf16 columns are 3), or 16-column boxes where the warpgroup's
  // columns are not a whole number of those (160, 176 bf16 columns); every wgmma N is a multiple of 16.
  TileConfig t = config(128, 192, 64, 3, 8, 1);
  t.tma_store = 1;
  EXPECT_TRUE(sm90_check_config(bf16, sm90a(), t).ok());
  for (int n : {160, 176, 112, 144, 208}) {
    t.block_n = n;
    t.stages = 3;
    EXPECT_TRUE(sm90_check_config(bf16, sm90a(), t).ok()) << n << ": " << sm90_check_config(bf16, sm90a(), t).to_string();
  }
  t.block_n = 160;
  EXPECT_TRUE(sm90_check_config(spec_of("gemm a=bf16 b=bf16 out=f32"), sm90a(), t).ok());  // 32 f32 per box
  // The space offers them.
  int odd = 0;
  for (const TileConfig& c : sm90_config_space(bf16, sm90a())) odd += (c.block_n % 64) != 0;
  EXPECT_GT(odd, 10);
}

// Block scales on 64 x 192 warpgroups: promoted (96 accumulators + 96 partials) with one atom per stage
// and two consumers along M, their columns in 64-column segments of the weight's 128-column blocks. The
// other FP8 scalings keep 192 fast-accumulating, and the block rules still refuse what does not fit.
TEST(Sm90PlanOddNTest, BlockScalesPromote192ColumnWarpgroups) {
  const KernelSpec block = spec_of(kBlock);
  const TileConfig c192 = config(128, 192, 128, 5, 8, 1);
  EXPECT_TRUE(sm90_check_config(block, sm90a(), c192).ok()) << sm90_check_config(block, sm90a(), c192).to_string();
  EXPECT_TRUE(sm90_promotes(block, c192));
  EXPECT_TRUE(sm90_staged_scales(block, c192));  // both blocks' b words in the slot
  EXPECT_TRUE(sm90_check_config(block, sm90a(), config(128, 192, 128, 4, 8, 1, 2)).ok());
  EXPECT_FALSE(sm90_promotes(spec_of("gemm a=e4m3:tensor b=e4m3:tensor out=bf16"), c192));
  EXPECT_FALSE(sm90_promotes(spec_of("gemm a=e4m3:m b=e4m3:n out=bf16"), c192));
  // Two atoms per stage would need a second partial set (288 registers) and staged scales.
  EXPECT_THAT(sm90_check_config(block, sm90a(), config(128, 192, 256, 3, 8, 1)).message(),
              HasSubstr("one atom per stage"));
  // 208 and 160 columns are not whole 64-column segments; 256 promotes in two halves (the kernel's
  // templates/kernels/sm90/mainloop.cuh, half partials) with one atom per stage and no split-K; with f32 scales it stays out of the default
  // (measured level with the two-atom 128 x 128), E8M0 scales take it at long K.
  for (int n : {160, 208}) {
    EXPECT_THAT(sm90_check_config(block, sm90a(), config(128, n, 128, 4, 8, 1)).message(),
                HasSubstr("64-column segments"))
        << n;
  }
  EXPECT_TRUE(sm90_check_config(block, sm90a(), config(128, 256, 128, 4, 8, 1)).ok());
  EXPECT_TRUE(sm90_half_partial(block, config(128, 256, 128, 4, 8, 1)));
  EXPECT_FALSE(sm90_half_partial(spec_of("gemm a=e4m3:tensor b=e4m3:tensor out=bf16"),
                                 config(128, 256, 128, 4, 8, 1)));
  EXPECT_FALSE(sm90_check_config(block, sm90a(), config(128, 256, 256, 2, 8, 1)).ok());
  TileConfig split256 = config(128, 256, 128, 4, 8, 1);
  split256.split_k = 2;
  EXPECT_THAT(sm90_check_config(block, sm90a(), split256).message(), HasSubstr("split_k=2"));
  EXPECT_EQ(default_config(block, sm90a(), {4096, 7168, 16384}).block_n, 256);  // 128 x 256 by default
  // The tuner's space offers the 256-column block tiles (plain, clustered, TMA stores, one consumer).
  int wide_offered = 0;
  for (const TileConfig& c : sm90_config_space(block, sm90a()))
    wide_offered += sm90_half_partial(block, c) ? 1 : 0;
  EXPECT_GE(wide_offered, 4);
  EXPECT_EQ(default_config(spec_of("gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=bf16"),
                           sm90a(), {4224, 2048, 8192})
                .to_string(),
            "bm128_bn256_bk128_s3_w8x1_g8_c2_t");
  // Split-K on 192-column block warpgroups spills (ptxas): refused, naming the way out.
  TileConfig split = config(128, 192, 128, 4, 8, 1);
  split.split_k = 2;
  EXPECT_THAT(sm90_check_config(block, sm90a(), split).message(), HasSubstr("split_k 1 or block_n 64 / 128"));
  split = config(64, 192, 128, 4, 4, 1);
  split.split_k = 4;
  EXPECT_FALSE(sm90_check_config(block, sm90a(), split).ok());
  // The tuner's space offers it, plain, clustered and with TMA stores.
  int offered = 0;
  for (const TileConfig& c : sm90_config_space(block, sm90a())) offered += c.block_n == 192;
  EXPECT_GE(offered, 6);
}

// The default takes a 128 x 176 or 128 x 192 tile where its waves and last tile column waste clearly less
// than 128 x 256's (4096 x 2112: 0.97 of the tile slots useful in 176-column tiles, 0.89 in 192, 0.67 in
// 256; measured 1.2-1.3x for 192 over 256 and 1.05-1.06x for 176 over 192 on the H200), and keeps 128 x 256
// where they tie or 256 wins. Block scales take 128 x 192 against the two-atom 128 x 128 by the same rule.
TEST(Sm90PlanOddNTest, TheDefaultTakesNarrowTilesWhereTheyFillTheWavesBetter) {
  const ProblemSizes others[] = {{4096, 7168, 2048}, {4096, 24576, 1536}, {4096, 4096, 7168},
                                 {8192, 8192, 8192}, {4096, 32768, 512},  {4096, 7168, 16384}};
  for (const char* text : {"gemm a=bf16 b=bf16 out=bf16", "gemm a=e4m3:tensor b=e4m3:tensor out=bf16",
                           "gemm a=e4m3:m b=e4m3:n out=bf16"}) {
    const KernelSpec s = spec_of(text);
    const TileConfig c = sm90_default_config(s, sm90a(), {4096, 2112, 7168});
    EXPECT_EQ(c.block_n, 176) << text;
    EXPECT_EQ(c.tma_store, 1) << text;  // 16-column boxes
    EXPECT_TRUE(sm90_check_config(s, sm90a(), c).ok()) << text;
    for (const ProblemSizes& z : others) EXPECT_EQ(sm90_default_config(s, sm90a(), z).block_n, 256) << text << " n=" << z.n;
  }
  for (const char* text : {kBlock, "gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=f32"}) {
    const KernelSpec s = spec_of(text);
    const TileConfig c = sm90_default_config(s, sm90a(), {4096, 2112, 7168});
    EXPECT_EQ(c.block_n, 192) << text;
    EXPECT_EQ(c.block_k, 128) << text;
    EXPECT_TRUE(sm90_promotes(s, c)) << text;
    EXPECT_TRUE(sm90_check_config(s, sm90a(), c).ok()) << text;
    // Whole 256-column tiles: 128 x 256 with 16-bit outputs, the two-atom 128 x 128 with f32.
    const int wide = s.out.format == Format::kF32 ? 128 : 256;
    for (const ProblemSizes& z : others)
      EXPECT_EQ(sm90_default_config(s, sm90a(), z).block_n, wide) << text << " n=" << z.n;
  }
}

// Grouped problems take 128 x 192 where N fills 192-column tiles clearly better than 256-column ones
// (gpt-oss-20b's down projection: N = 2880 = 15 x 192), tiles counted per expert; never 128 x 176 (measured
// on dense problems only), and 128 x 256 where N fills it. From 64 rows per expert they store through TMA,
// except MXFP8 ones (not measured) and gate|up.
TEST(Sm90PlanOddNTest, GroupedProblemsTake192ColumnsWhereNFillsThem) {
  for (const char* text : {"grouped_gemm[experts=32,layout=offsets] a=bf16 b=bf16 out=bf16",
                           "grouped_gemm[experts=32,layout=offsets] a=e4m3:m b=e4m3:n out=bf16",
                           "grouped_gemm[experts=32,layout=masked] a=e4m3:tensor b=e4m3:tensor out=bf16"}) {
    const KernelSpec s = spec_of(text);
    // Rows per expert (the M bucket a grouped plan is keyed by).
    const TileConfig down = sm90_default_config(s, sm90a(), {512, 2880, 2880});
    EXPECT_EQ(down.block_m, 128) << text;
    EXPECT_EQ(down.block_n, 192) << text;
    EXPECT_EQ(down.tma_store, 1) << text;
    EXPECT_TRUE(sm90_check_config(s, sm90a(), down).ok()) << text;
    EXPECT_EQ(sm90_default_config(s, sm90a(), {32, 2880, 2880}).tma_store, 0) << text;  // under 64 rows
    // 2112 fills 176-column tiles best (the dense default's 128 x 176); grouped stays at 192 there.
    EXPECT_EQ(sm90_default_config(s, sm90a(), {512, 2112, 7168}).block_n, 192) << text;
    for (const ProblemSizes& z :
         {ProblemSizes{512, 5760, 2880}, ProblemSizes{1024, 4096, 7168}, ProblemSizes{512, 7168, 2048}})
      EXPECT_EQ(sm90_default_config(s, sm90a(), z).block_n, 256) << text << " n=" << z.n;
  }
  // FP8 block scales: the 128 x 256 tile promoted in halves, through TMA, unclustered (measured on
  // DeepSeek-V3's MoE layers), where N fills 256-column tiles; the two-atom 128 x 128 with TMA stores where
  // it does not.
  const KernelSpec block =
      spec_of("grouped_gemm[experts=32,layout=offsets] a=e4m3:block1x128 b=e4m3:block128x128 out=bf16");
  // From 128 rows per expert (measured on DeepSeek-V3 at T = 512); 64 rows keep the small-M rules.
  for (const ProblemSizes& z : {ProblemSizes{1024, 4096, 7168}, ProblemSizes{1024, 7168, 2048},
                                ProblemSizes{128, 4096, 7168}, ProblemSizes{128, 7168, 2048}}) {
    const TileConfig c = sm90_default_config(block, sm90a(), z);
    EXPECT_EQ(c.to_string(), "bm128_bn256_bk128_s3_w8x1_g8_t") << z.m << " x " << z.n;
    EXPECT_TRUE(sm90_check_config(block, sm90a(), c).ok()) << z.m << " x " << z.n;
  }
  for (const int64_t rows : {64, 96})  // the M buckets below 128 (96 would take the rule if it began above 64)
    EXPECT_NE(sm90_default_config(block, sm90a(), {rows, 7168, 2048}).block_n, 256) << rows;
  // Dense block-scaled problems keep the 256-row bound of the rule (enough 128 x 256 tiles for it here).
  const KernelSpec dense_block = spec_of("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16");
  EXPECT_NE(sm90_default_config(dense_block, sm90a(), {128, 131072, 2048}).block_n, 256);  // 512 tiles
  EXPECT_EQ(sm90_default_config(block, sm90a(), {1024, 2880, 2880}).to_string(),
            "bm128_bn128_bk256_s2_w8x1_g8_c2_t");
  for (const char* text :
       {"grouped_gemm[experts=32,layout=masked] a=mxfp8 b=mxfp8 out=bf16",
        "grouped_gemm[experts=32,layout=offsets] a=mxfp8 b=mxfp8 out=bf16",
        "grouped_gemm[experts=32,layout=offsets] a=bf16 b=bf16 out=bf16 gate_up=interleaved "
        "epilogue=\"out = silu(gate) * up\""}) {
    const KernelSpec s = spec_of(text);
    EXPECT_EQ(sm90_default_config(s, sm90a(), {512, 4096, 7168}).tma_store, 0) << text;
  }
}

}  // namespace
}  // namespace kiln
