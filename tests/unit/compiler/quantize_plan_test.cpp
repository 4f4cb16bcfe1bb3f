// unit tier: planning quantize specs (compiler/plan/quantize_plan.hpp) and their emitted source —
// which specs have a kernel, the modes and blocks, the M / K rules with their messages, the phases
// and launch shapes, the single config, and that the emitted unit holds only kiln's strings.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "compiler/emit/emit.hpp"
#include "compiler/plan/quantize_plan.hpp"
#include "compiler/spec/spec.hpp"
#include "templates/common/quantize_params.cuh"

namespace kiln {
namespace {

using ::testing::HasSubstr;

KernelSpec spec_of(const char* text) {
  auto s = parse_spec(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status().to_string();
  return s.ok() ? *s : KernelSpec{};
}

const Arch kSm90{9, 0, true};
const Arch kSm80{8, 0, false};

TEST(QuantizePlanTest, SelectsTheQuantizeFamily) {
  for (const char* t : {"quantize a=bf16 out=e4m3:block1x128", "quantize a=f32 out=e4m3:tensor",
                        "quantize a=bf16 out=mxfp4", "quantize a=f16 out=nvfp4 transpose=true"}) {
    for (const Arch& a : {kSm90, kSm80}) {
      auto f = select_family(spec_of(t), a);
      ASSERT_TRUE(f.ok()) << t << ": " << f.status().to_string();
      EXPECT_EQ(*f, KernelFamily::kQuantize);
    }
  }
  EXPECT_STREQ(family_name(KernelFamily::kQuantize), "quantize");
}

TEST(QuantizePlanTest, ModesAndBlocks) {
  struct {
    const char* spec;
    QuantizeMode mode;
    int block;
  } cases[] = {
      {"quantize a=bf16 out=e4m3:tensor", QuantizeMode::kTensor, 0},
      {"quantize a=bf16 out=e4m3:m", QuantizeMode::kRow, 0},
      {"quantize a=bf16 out=e4m3:block1x128", QuantizeMode::kBlockK, 128},
      {"quantize a=bf16 out=e4m3:block1x128 transpose=true", QuantizeMode::kTransposed, 128},
      {"quantize a=bf16 out=e4m3:m transpose=true", QuantizeMode::kColumns, 128},
      {"quantize a=bf16 out=e4m3:block128x128", QuantizeMode::kBlock2d, 128},
      {"quantize a=bf16 out=mxfp8", QuantizeMode::kBlockK, 32},
      {"quantize a=bf16 out=mxfp4 transpose=true", QuantizeMode::kTransposed, 32},
      {"quantize a=bf16 out=nvfp4", QuantizeMode::kBlockK, 16},
      {"quantize a=bf16 out=nvfp4 transpose=true", QuantizeMode::kTransposed, 16},
  };
  for (const auto& c : cases) {
    const QuantizeShape s = quantize_shape(spec_of(c.spec));
    EXPECT_EQ(s.mode, c.mode) << c.spec;
    EXPECT_EQ(s.block, c.block) << c.spec;
  }
}

TEST(QuantizePlanTest, UnsupportedSpecsSayWhy) {
  struct {
    const char* spec;
    const char* why;
  } cases[] = {
      {"quantize a=bf16 out=e5m2", "e5m2 quantization is not implemented"},
      {"quantize a=bf16 out=e4m3:tensor fp8_sat=nonsat", "satfinite"},
      {"quantize a=bf16 out=e4m3:tensor transpose=true", "exists for m (one scale per column of the input)"},
      {"quantize a=bf16 out=e4m3:block128x128 transpose=true", "transpose=true"},
  };
  for (const auto& c : cases) {
    auto f = select_family(spec_of(c.spec), kSm90);
    ASSERT_FALSE(f.ok()) << c.spec;
    EXPECT_EQ(f.status().code(), StatusCode::kUnsupported) << c.spec;
    EXPECT_THAT(f.status().message(), HasSubstr(c.why)) << c.spec;
  }
}

TEST(QuantizePlanTest, SizeRules) {
  const KernelSpec row = spec_of("quantize a=bf16 out=e4m3:m");
  EXPECT_TRUE(can_implement(row, kSm90, {77, 0, 200}).ok());
  auto odd_k = can_implement(row, kSm90, {77, 0, 204});
  ASSERT_FALSE(odd_k.ok());
  EXPECT_THAT(odd_k.message(), HasSubstr("K=204 is not a multiple of 8"));
  // Blocks along K: K must hold whole blocks (validate_sizes names the block).
  auto k_blocks = can_implement(spec_of("quantize a=bf16 out=e4m3:block1x128"), kSm90, {4, 0, 200});
  ASSERT_FALSE(k_blocks.ok());
  EXPECT_THAT(k_blocks.message(), HasSubstr("K=200 is not a multiple of 128"));
  // Transposed: M must hold whole blocks; K only the 8-element chunks; M = 0 means any M.
  const KernelSpec t = spec_of("quantize a=bf16 out=mxfp8 transpose=true");
  EXPECT_TRUE(can_implement(t, kSm90, {96, 0, 200}).ok());
  EXPECT_TRUE(can_implement(t, kSm90, {0, 0, 200}).ok());
  auto bad_m = can_implement(t, kSm90, {40, 0, 200});
  ASSERT_FALSE(bad_m.ok());
  EXPECT_THAT(bad_m.message(), HasSubstr("M=40 is not a multiple of 32"));
}

// out=e4m3:m transpose=true: one scale per column of X, reduced in its own launches (the K scales are the
// amax slots); any M (the copy's columns are checked per run); the quantize phase walks 128-row x 64-column
// tiles of a copy up to 127 columns wider than M.
TEST(QuantizePlanTest, PerColumnTransposed) {
  const KernelSpec c = spec_of("quantize a=bf16 out=e4m3:m transpose=true");
  EXPECT_TRUE(can_implement(c, kSm90, {1000, 0, 2048}).ok());
  EXPECT_TRUE(can_implement(c, kSm90, {1, 0, 8}).ok());
  EXPECT_TRUE(quantize_needs_amax(c));
  EXPECT_EQ(quantize_phases(c), (std::vector<int>{kiln_dev::kPhaseInit, kiln_dev::kPhaseAmax,
                                                  kiln_dev::kPhaseQuantize, kiln_dev::kPhaseFinalize}));
  // Init / finalize: one thread per column; amax: 64 columns x 256 rows per CTA; quantize: 128 rows x 64 columns,
  // one tile row more than M needs (the padding columns).
  EXPECT_EQ(quantize_launch_shape(c, {1000, 0, 2048}, kiln_dev::kPhaseInit).grid_x, 8u);
  EXPECT_EQ(quantize_launch_shape(c, {1000, 0, 2048}, kiln_dev::kPhaseFinalize).grid_x, 8u);
  EXPECT_EQ(quantize_launch_shape(c, {1000, 0, 2048}, kiln_dev::kPhaseAmax).grid_x, 4u * 32u);
  EXPECT_EQ(quantize_launch_shape(c, {1000, 0, 2048}, kiln_dev::kPhaseQuantize).grid_x, (8u + 1u) * 32u);
  EXPECT_EQ(quantize_launch_shape(c, {16384, 0, 7168}, kiln_dev::kPhaseAmax).grid_x, 64u * 112u);  // no cap
  EXPECT_EQ(quantize_launch_shape(c, {0, 0, 200}, kiln_dev::kPhaseQuantize).grid_x, 2u * 4u);
  auto k = emit_kernel(c, KernelFamily::kQuantize, quantize_config(), kSm90);
  ASSERT_TRUE(k.ok()) << k.status().to_string();
  EXPECT_THAT(k->source, HasSubstr("kMode = kiln_dev::QuantMode::kColumns"));
}

TEST(QuantizePlanTest, PhasesAndLaunchShapes) {
  const KernelSpec tensor = spec_of("quantize a=bf16 out=e4m3:tensor");
  const KernelSpec nvfp4 = spec_of("quantize a=bf16 out=nvfp4");
  const KernelSpec block = spec_of("quantize a=bf16 out=e4m3:block1x128");
  const std::vector<int> four = {kiln_dev::kPhaseInit, kiln_dev::kPhaseAmax, kiln_dev::kPhaseQuantize,
                                 kiln_dev::kPhaseFinalize};
  EXPECT_EQ(quantize_phases(tensor), four);
  EXPECT_EQ(quantize_phases(nvfp4), four);
  EXPECT_EQ(quantize_phases(block), std::vector<int>{kiln_dev::kPhaseQuantize});
  // 4096 x 7168 bf16 -> 1x128: one thread per 8 elements, 256 per block.
  const ProblemSizes s{4096, 0, 7168};
  EXPECT_EQ(quantize_launch_shape(block, s, kiln_dev::kPhaseQuantize).grid_x, 4096u * 7168 / 8 / 256);
  EXPECT_EQ(quantize_launch_shape(block, s, kiln_dev::kPhaseQuantize).block_x, 256u);
  // NVFP4: one thread per 16-element block.
  EXPECT_EQ(quantize_launch_shape(nvfp4, s, kiln_dev::kPhaseQuantize).grid_x, 4096u * 7168 / 16 / 256);
  EXPECT_EQ(quantize_launch_shape(nvfp4, s, kiln_dev::kPhaseInit).grid_x, 1u);
  EXPECT_LE(quantize_launch_shape(nvfp4, s, kiln_dev::kPhaseAmax).grid_x, 1024u);
  // Per token: a warp per row; 128x128: a block per weight block; transposed: 128 rows x 64 columns.
  EXPECT_EQ(quantize_launch_shape(spec_of("quantize a=bf16 out=e4m3:m"), {77, 0, 200}, 2).grid_x, 10u);
  EXPECT_EQ(quantize_launch_shape(spec_of("quantize a=bf16 out=e4m3:block128x128"), {200, 0, 384}, 2).grid_x, 6u);
  EXPECT_EQ(quantize_launch_shape(spec_of("quantize a=bf16 out=e4m3:block1x128 transpose=true"), {256, 0, 200}, 2)
                .grid_x,
            2u * 4);
}

// quantize[experts=E,...] transpose=true: one CTA per block of the padded copy (ceil(M / 128) + E of them
// at most, whatever the routing) per 64 columns; e4m3 1x128 only; M free.
TEST(QuantizePlanTest, GroupedTransposed) {
  const KernelSpec g = spec_of("quantize[experts=8,layout=offsets] a=bf16 out=e4m3:block1x128 transpose=true");
  EXPECT_TRUE(can_implement(g, kSm90, {1000, 0, 2048}).ok());
  EXPECT_EQ(quantize_launch_shape(g, {1000, 0, 2048}, kiln_dev::kPhaseQuantize).grid_x, (8u + 8u) * 32u);
  EXPECT_EQ(quantize_launch_shape(g, {1, 0, 200}, kiln_dev::kPhaseQuantize).grid_x, (1u + 8u) * 4u);
  EXPECT_EQ(grouped_transposed_cols(g, 1000), 128 * (8 + 8));
  EXPECT_EQ(grouped_transposed_cols(g, 1024), 128 * (8 + 8));
  EXPECT_EQ(grouped_transposed_cols(g, 0), 128 * 8);
  auto mx = can_implement(spec_of("quantize[experts=8,layout=masked] a=bf16 out=mxfp8 transpose=true"), kSm90,
                          {1024, 0, 2048});
  ASSERT_FALSE(mx.ok());
  EXPECT_EQ(mx.code(), StatusCode::kUnsupported);
  EXPECT_THAT(mx.message(), HasSubstr("the grouped transposed quantizer writes e4m3:block1x128"));
}

TEST(QuantizePlanTest, OneConfigOnly) {
  const KernelSpec s = spec_of("quantize a=bf16 out=mxfp8");
  EXPECT_EQ(default_config(s, kSm90, {4096, 0, 7168}), quantize_config());
  EXPECT_TRUE(check_config(s, kSm90, quantize_config()).ok());
  auto bad = check_config(s, kSm90, TileConfig{});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.message(), HasSubstr("takes no tile configuration"));
}

TEST(QuantizePlanTest, EmittedUnitNamesItsConfig) {
  auto k = emit_kernel(spec_of("quantize a=f16 out=nvfp4 four_over_six=mse e4m3_bound=256 transpose=true"),
                       KernelFamily::kQuantize, quantize_config(), kSm90);
  ASSERT_TRUE(k.ok()) << k.status().to_string();
  EXPECT_EQ(k->entry, "kiln_quantize");
  EXPECT_EQ(k->threads, 256);
  EXPECT_THAT(k->source, HasSubstr("#include \"kernels/quantize.cuh\""));
  EXPECT_THAT(k->source, HasSubstr("kIn = kiln_dev::Format::kF16"));
  EXPECT_THAT(k->source, HasSubstr("kOut = kiln_dev::Format::kNvfp4"));
  EXPECT_THAT(k->source, HasSubstr("kMode = kiln_dev::QuantMode::kTransposed"));
  EXPECT_THAT(k->source, HasSubstr("kBlock = 16"));
  EXPECT_THAT(k->source, HasSubstr("kFourOverSix = 2"));
  EXPECT_THAT(k->source, HasSubstr("kBound = 256"));
  EXPECT_THAT(k->source, HasSubstr("kiln_dev::QuantizeParams p"));
}

}  // namespace
}  // namespace kiln
