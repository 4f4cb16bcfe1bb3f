// tests/unit/compiler/launch_rule_test.cpp — the launch rules a plan records (compiler/plan/launch_rule.hpp): the
// grid, split-K slots, workspace and pre-pass layout as functions of M, against hand-computed values.
#include <gtest/gtest.h>

#include "compiler/plan/launch_rule.hpp"
#include "compiler/plan/plan.hpp"
#include "compiler/plan/quantize_plan.hpp"
#include "templates/common/quantize_params.cuh"

namespace kiln {
namespace {

KernelSpec spec_of(const char* text) {
  auto s = parse_spec(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status().to_string();
  return *s;
}

TileConfig cfg_of(const char* name) {
  auto c = config_from_name(name);
  EXPECT_TRUE(c.ok()) << name;
  return *c;
}

TEST(LaunchRuleTest, BucketsAndRowsPerExpert) {
  EXPECT_EQ(bucket_index(0), 0);
  EXPECT_EQ(bucket_index(1), 0);
  EXPECT_EQ(bucket_index(17), 5);        // 24
  EXPECT_EQ(bucket_index(100000), 16);   // the last bucket (8192)
  const KernelSpec dense = spec_of("gemm a=bf16 b=bf16 out=bf16");
  const KernelSpec grouped = spec_of("grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16");
  EXPECT_EQ(rows_per_expert(dense, 300), 300);
  EXPECT_EQ(rows_per_expert(grouped, 300), 38);  // ceil(300 / 8)
  EXPECT_EQ(rows_per_expert(grouped, 0), 1);
}

TEST(LaunchRuleTest, PortableTilesDenseOffsetsAndMasked) {
  const TileConfig c = cfg_of("bm128_bn128_bk32_s4_w2x4_g8");
  const LaunchRule dense = make_launch_rule(spec_of("gemm a=bf16 b=bf16 out=bf16"), KernelFamily::kSm80Gemm, c, 1000, 512);
  EXPECT_EQ(dense.shape(300).grid_x, 3u * 8u);  // ceil(300 / 128) x ceil(1000 / 128)
  EXPECT_EQ(dense.shape(300).block_x, 256u);
  EXPECT_EQ(dense.workspace_bytes(300), 0);
  const LaunchRule offsets = make_launch_rule(spec_of("grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16"),
                                              KernelFamily::kSm80Gemm, c, 1000, 512);
  EXPECT_EQ(offsets.shape(300).grid_x, (3u + 8u) * 8u);  // one partial tile row per expert at most
  const TileConfig c64 = cfg_of("bm64_bn128_bk32_s4_w2x4_g8");
  const LaunchRule masked = make_launch_rule(spec_of("grouped_gemm[experts=4,layout=masked] a=bf16 b=bf16 out=bf16"),
                                             KernelFamily::kSm80Gemm, c64, 1000, 512);
  EXPECT_EQ(masked.shape(400).grid_x, 4u * 2u * 8u);  // 4 experts x ceil(100 / 64) x 8
}

TEST(LaunchRuleTest, PersistentGridSplitSlotsAndWorkspace) {
  const KernelSpec spec = spec_of("gemm a=bf16 b=bf16 out=bf16");
  // Clusters of 2: ceil(ceil(1000 / 128) / 2) = 4 cluster tiles per column, 9 columns of 256 (N = 2112).
  const LaunchRule c2 = make_launch_rule(spec, KernelFamily::kSm90Gemm, cfg_of("bm128_bn256_bk64_s4_w8x1_g8_c2"), 2112, 4096);
  EXPECT_EQ(c2.shape(1000).grid_x, 4u * 9u * 2u);
  EXPECT_EQ(c2.box_b_rows, 128);  // each CTA of the pair loads half of B and multicasts it
  EXPECT_EQ(c2.box_k, 64);        // one 128-byte atom of bf16
  // Split-K 4 on 64 x 64 tiles with one consumer: 1 x 33 tiles x 4 splits; slots 33; workspace the
  // counter region plus 33 slots x 4 splits x 64 x 64 f32 partials.
  const LaunchRule k4 = make_launch_rule(spec, KernelFamily::kSm90Gemm, cfg_of("bm64_bn64_bk64_s8_w4x1_g8_k4"), 2112, 4096);
  EXPECT_EQ(k4.shape(64).grid_x, 33u * 4u);
  EXPECT_EQ(k4.split_slots(64), 33);
  EXPECT_EQ(k4.workspace_bytes(64), kSm90SplitCounterSlots * 4 + 33 * 4 * 64 * 64 * 4);
  // Grouped: (ceil(M / block_m) + E) tile rows bound every routing of M rows over E experts.
  const LaunchRule g = make_launch_rule(spec_of("grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16"),
                                        KernelFamily::kSm90Gemm, cfg_of("bm128_bn128_bk64_s6_w8x1_g8"), 1024, 1024);
  EXPECT_EQ(g.shape(1000).grid_x, (8u + 8u) * 8u);
}

TEST(LaunchRuleTest, QuantizePhases) {
  const LaunchRule t = make_launch_rule(spec_of("quantize a=bf16 out=e4m3:block1x128 transpose=true"),
                                        KernelFamily::kQuantize, quantize_config(), 0, 200);
  // Transposed 128 x 1 blocks: whole 128-row blocks x ceil(K / 64) column groups.
  EXPECT_EQ(t.phase_shape(300, kiln_dev::kPhaseQuantize).grid_x, 2u * 4u);
  const LaunchRule tensor = make_launch_rule(spec_of("quantize a=bf16 out=e4m3:tensor"), KernelFamily::kQuantize,
                                             quantize_config(), 0, 7168);
  EXPECT_EQ(tensor.phase_count, 4);  // init, amax, quantize, finalize
  EXPECT_EQ(tensor.phase_shape(4096, kiln_dev::kPhaseAmax).grid_x, 1024u);  // capped
  EXPECT_EQ(tensor.phase_shape(4096, kiln_dev::kPhaseInit).grid_x, 1u);
  EXPECT_EQ(tensor.phase_shape(4096, kiln_dev::kPhaseQuantize).grid_x, 4096u * 7168u / 8u / 256u);
}

TEST(LaunchRuleTest, MxPrepassLayout) {
  const MxPrepassLayout l = make_mx_prepass_layout(spec_of("gemm a=mxfp8 b=mxfp8 out=bf16"), 200, 96);
  EXPECT_EQ(l.bytes(511), 0);  // below 512 rows: no pre-pass
  EXPECT_EQ(l.a_offset(), int64_t{1} << 20);
  EXPECT_EQ(l.b_offset(1025), (int64_t{1} << 20) + 196864);  // 1025 x 96 x 2 rounded up to 256
  EXPECT_EQ(l.bytes(1025), (int64_t{1} << 20) + 196864 + 38400);
  const MxPrepassLayout g = make_mx_prepass_layout(
      spec_of("grouped_gemm[experts=4,layout=offsets] a=mxfp8 b=mxfp8 out=bf16"), 200, 96);
  EXPECT_EQ(g.bytes(2047), 0);  // 512 rows per expert on average
  EXPECT_GT(g.bytes(2048), 0);
}

}  // namespace
}  // namespace kiln
