// Unit tests of the scaled formats' planning and emission: the pairings the sm80 family accepts
// (FP8 per-token x per-channel, DeepSeek FP8 blocks, MXFP8, bf16 x MXFP4 / NVFP4 / FP8 weights, grouped
// offsets and masked layouts), the ones it rejects with their reasons, the size and config rules, the
// grouped launch grid and the emitted unit. No CUDA.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/emit/emit.hpp"
#include "compiler/plan/plan.hpp"
#include "compiler/plan/sm80_formats.hpp"
#include "compiler/plan/sm90_plan.hpp"
#include "compiler/spec/spec.hpp"
#include "tests/common/tile_configs.hpp"

namespace kiln {
namespace {

using ::testing::HasSubstr;

KernelSpec spec_of(std::string_view text) {
  auto r = parse_spec(text);
  EXPECT_TRUE(r.ok()) << "text: " << text << "\nerror: " << r.status().to_string();
  return r.ok() ? *r : KernelSpec{};
}

Arch arch_of(std::string_view name) { return *parse_arch(name); }

const char* const kArches[] = {"sm_90a", "sm_89", "sm_86", "sm_80"};

// Every scaled-format pairing (specs as users write them).
const std::vector<std::string>& new_pairings() {
  static const std::vector<std::string> k = {
      "gemm a=e4m3:m b=e4m3:n out=bf16",
      "gemm a=e4m3:tensor b=e5m2:n out=f32",
      "gemm a=e5m2:m b=e4m3:tensor out=f16",
      "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16",
      "gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=bf16",
      "gemm a=e4m3:block1x128 b=e4m3:n out=f32",
      "gemm a=mxfp8 b=mxfp8 out=bf16",
      "gemm a=bf16 b=mxfp4 out=bf16",
      "gemm a=bf16 b=nvfp4 out=bf16",
      "gemm a=bf16 b=e4m3:n out=bf16",
      "gemm a=bf16 b=e5m2:tensor out=f32",
      "grouped_gemm[experts=32,layout=offsets] a=bf16 b=mxfp4 out=bf16",
      "grouped_gemm[experts=8,layout=masked] a=bf16 b=mxfp4 out=f32",
      "grouped_gemm[experts=8,layout=offsets] a=bf16 b=nvfp4 out=bf16 nvfp4_global=expert",
      "grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16",
      "grouped_gemm[experts=4,layout=masked] a=f16 b=f16 out=f16",
      "gemm a=f16 b=mxfp4 out=f16",
      "gemm a=f16 b=nvfp4 out=bf16",
      "gemm a=f16 b=e4m3:n out=f32",
      "gemm a=bf16 b=mxfp8 out=bf16",
      "grouped_gemm[experts=8,layout=offsets] a=bf16 b=e4m3:n out=bf16",
      "grouped_gemm[experts=8,layout=masked] a=f16 b=mxfp4 out=bf16",
  };
  return k;
}

TEST(FormatsPlanTest, Sm80FamilyForEveryNewPairingOnEveryArch) {
  for (const char* a : kArches) {
    for (const std::string& text : new_pairings()) {
      auto f = select_family(spec_of(text), arch_of(a));
      ASSERT_TRUE(f.ok()) << text << " on " << a << ": " << f.status().to_string();
      // Mixed inputs never go to the sm90 family; FP8 x FP8 with row and DeepSeek block scales (the
      // dense specs starting "gemm a=e"), MXFP8 x MXFP8 (templates/kernels/sm90/mx.cuh) and grouped same-kind 16-bit
      // pairs do on sm_90a (sm90_supports).
      const bool sm90 = sm90_supports(spec_of(text), arch_of(a));
      const bool sm90_pairing = text.rfind("gemm a=e", 0) == 0 || text.rfind("gemm a=mxfp8", 0) == 0 ||
                                (text.rfind("grouped_gemm", 0) == 0 &&
                                 (text.find("a=bf16 b=bf16") != std::string::npos ||
                                  text.find("a=f16 b=f16") != std::string::npos));
      EXPECT_EQ(sm90, std::string_view(a) == "sm_90a" && sm90_pairing) << text << " on " << a;
      EXPECT_EQ(*f, sm90 ? KernelFamily::kSm90Gemm : KernelFamily::kSm80Gemm) << text << " on " << a;
      EXPECT_TRUE(check_reference_spec(spec_of(text), arch_of(a)).ok()) << text;
    }
  }
}

TEST(FormatsPlanTest, MainloopPerPairing) {
  EXPECT_EQ(*sm80_pairing(spec_of("gemm a=bf16 b=mxfp4 out=bf16")), Sm80Mainloop::kMixedInput);
  EXPECT_EQ(*sm80_pairing(spec_of("gemm a=bf16 b=e4m3:n out=bf16")), Sm80Mainloop::kMixedInput);
  EXPECT_EQ(*sm80_pairing(spec_of("gemm a=mxfp8 b=mxfp8 out=bf16")), Sm80Mainloop::kSameFormat);
  EXPECT_EQ(*sm80_pairing(spec_of("gemm a=e4m3:m b=e4m3:n out=bf16")), Sm80Mainloop::kSameFormat);
  EXPECT_TRUE(sm80_promotes(spec_of("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16")));
  EXPECT_TRUE(sm80_promotes(spec_of("gemm a=mxfp8 b=mxfp8 out=bf16")));
  EXPECT_FALSE(sm80_promotes(spec_of("gemm a=e4m3:m b=e4m3:n out=bf16")));
  EXPECT_FALSE(sm80_promotes(spec_of("gemm a=bf16 b=mxfp4 out=bf16")));
}

std::string unsupported(std::string_view text) {
  auto f = select_family(spec_of(text), arch_of("sm_90a"));
  EXPECT_FALSE(f.ok()) << text;
  if (f.ok()) return "";
  EXPECT_EQ(f.status().code(), StatusCode::kUnsupported);
  return f.status().message();
}

TEST(FormatsPlanTest, RejectedPairingsSayWhatWouldWork) {
  EXPECT_THAT(unsupported("gemm a=nvfp4 b=nvfp4 out=bf16"), HasSubstr("4-bit activations"));
  EXPECT_THAT(unsupported("gemm a=mxfp4 b=f16 out=bf16"), HasSubstr("4-bit activations"));
  EXPECT_THAT(unsupported("gemm a=bf16 b=f16 out=bf16"), HasSubstr("same format"));
  // 16-bit activations take every quantized weight on the mixed mainloop: f16 as well as bf16, mxfp8
  // weights, grouped FP8 weights (per-expert tensor or channel scales).
  for (const char* text : {"gemm a=f16 b=nvfp4 out=bf16", "gemm a=f16 b=mxfp4 out=f16", "gemm a=f16 b=e4m3:n out=f32",
                           "gemm a=bf16 b=mxfp8 out=bf16", "gemm a=f16 b=mxfp8 out=f16",
                           "grouped_gemm[experts=4,layout=offsets] a=bf16 b=e4m3:n out=bf16",
                           "grouped_gemm[experts=4,layout=masked] a=f16 b=e5m2:tensor out=f32",
                           // FP8 activations with tensor / per-token scales x 4-bit weights (W4A8).
                           "gemm a=e4m3:m b=mxfp4 out=bf16", "gemm a=e5m2:tensor b=nvfp4 out=f32",
                           "grouped_gemm[experts=4,layout=offsets] a=e4m3:m b=nvfp4 out=bf16",
                           "gemm a=mxfp8 b=mxfp4 out=bf16", "grouped_gemm[experts=4,layout=masked] a=mxfp8 b=nvfp4 out=f32",
                           // DeepSeek FP8 blocks with a 16-bit or 4-bit partner: promoted per 128 K.
                           "gemm a=bf16 b=e4m3:block128x128 out=bf16", "gemm a=f16 b=e4m3:block128x128:ue8m0 out=f32",
                           "gemm a=e4m3:block1x128 b=mxfp4 out=bf16",
                           "grouped_gemm[experts=4,layout=offsets] a=e4m3:block1x128:ue8m0 b=nvfp4 out=f32",
                           // FP8 / MXFP8 activations x 16-bit weights (f16 split into two bf16).
                           "gemm a=e4m3:m b=bf16 out=bf16", "gemm a=e5m2:tensor b=f16 out=f32",
                           "gemm a=mxfp8 b=bf16 out=bf16", "gemm a=mxfp8 b=f16 out=f16",
                           "gemm a=e4m3:block1x128 b=f16 out=f32",
                           "grouped_gemm[experts=4,layout=offsets] a=e4m3:m b=bf16 out=bf16",
                           // MXFP8 with an FP8 partner (the E8M0 side folded, the FP8 side's scales as always).
                           "gemm a=mxfp8 b=e4m3:n out=bf16", "gemm a=mxfp8 b=e4m3:block128x128:ue8m0 out=f32",
                           "gemm a=e4m3:m b=mxfp8 out=bf16", "gemm a=e4m3:block1x128 b=mxfp8 out=f32",
                           "grouped_gemm[experts=4,layout=masked] a=mxfp8 b=e5m2:tensor out=f32"}) {
    auto ml = sm80_pairing(spec_of(text));
    ASSERT_TRUE(ml.ok()) << text << ": " << ml.status().to_string();
    EXPECT_EQ(*ml, Sm80Mainloop::kMixedInput) << text;
    // MX / NVFP4 block scales fold into the converted values; f32 / ue8m0 FP8 blocks are promoted.
    const bool fp8_blocks = std::string_view(text).find("block1") != std::string_view::npos;
    EXPECT_EQ(sm80_promotes(spec_of(text)), fp8_blocks) << text;
    auto f = select_family(spec_of(text), arch_of("sm_90a"));
    ASSERT_TRUE(f.ok()) << text;
    EXPECT_EQ(*f, KernelFamily::kSm80Gemm) << text;
  }
  // Grouped FP8 x FP8 and MXFP8 x MXFP8 plan (per-expert weight scales); bf16 x FP8 weights do not. On
  // sm_90a they take the sm90 family (its grouped walk); on sm_89 all are portable.
  const struct {
    const char* spec;
    KernelFamily on90a;
  } grouped[] = {{"grouped_gemm[experts=4,layout=offsets] a=mxfp8 b=mxfp8 out=bf16", KernelFamily::kSm90Gemm},
                 {"grouped_gemm[experts=4,layout=masked] a=e4m3:block1x128 b=e4m3:block128x128 out=f32",
                  KernelFamily::kSm90Gemm},
                 {"grouped_gemm[experts=4,layout=offsets] a=e4m3:m b=e4m3:n out=bf16", KernelFamily::kSm90Gemm},
                 {"grouped_gemm[experts=4,layout=offsets] a=e4m3:tensor b=e4m3:tensor out=bf16",
                  KernelFamily::kSm90Gemm}};
  for (const auto& g : grouped) {
    auto f = select_family(spec_of(g.spec), arch_of("sm_90a"));
    ASSERT_TRUE(f.ok()) << g.spec << ": " << f.status().to_string();
    EXPECT_EQ(*f, g.on90a) << g.spec;
    auto p = select_family(spec_of(g.spec), arch_of("sm_89"));
    ASSERT_TRUE(p.ok()) << g.spec << ": " << p.status().to_string();
    EXPECT_EQ(*p, KernelFamily::kSm80Gemm) << g.spec;
  }
  EXPECT_THAT(unsupported("gemm a=e4m3:tensor b=e4m3:block1x128 out=bf16 pass=wgrad"), HasSubstr("pass=wgrad"));
}

std::string cannot(std::string_view text, ProblemSizes sizes) {
  Status s = can_implement(spec_of(text), arch_of("sm_86"), sizes);
  EXPECT_FALSE(s.ok()) << text;
  return s.message();
}

TEST(FormatsPlanTest, SizeRulesNameTheOperandAndTheValue) {
  // gpt-oss: K = 2880 -> 1440-byte rows of packed E2M1 and 90 E8M0 scales per row: fine.
  EXPECT_TRUE(can_implement(spec_of("grouped_gemm[experts=32,layout=offsets] a=bf16 b=mxfp4 out=bf16"),
                            arch_of("sm_86"), {128, 5760, 2880})
                  .ok());
  // NVFP4 K % 16 passes the format rule but K = 48 makes 24-byte rows.
  EXPECT_EQ(cannot("gemm a=bf16 b=nvfp4 out=bf16", {16, 64, 48}),
            "operand b: K=48 elements is 24 bytes per row; rows must be a multiple of 16 bytes (K % 32 == 0 for "
            "nvfp4)");
  EXPECT_THAT(cannot("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", {16, 64, 192}), HasSubstr("K=192"));
  EXPECT_THAT(cannot("gemm a=bf16 b=mxfp4 out=bf16", {16, 64, 48}), HasSubstr("K=48"));
  EXPECT_TRUE(can_implement(spec_of("gemm a=bf16 b=e4m3:n out=bf16"), arch_of("sm_80"), {1, 7, 16}).ok());
  EXPECT_THAT(cannot("gemm a=bf16 b=e4m3:n out=bf16", {1, 7, 8}), HasSubstr("operand b: K=8"));
}

TileConfig config(int bm, int bn, int bk, int stages, int wm, int wn) {
  return test::tile_config(bm, bn, bk, stages, wm, wn);
}

TEST(FormatsPlanTest, ConfigRules) {
  const Arch a = arch_of("sm_90a");
  // The mixed mainloop takes block_k 64 only.
  Status s = check_config(spec_of("gemm a=bf16 b=mxfp4 out=bf16"), a, config(128, 128, 32, 4, 2, 4));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("block_k=32"));
  EXPECT_TRUE(check_config(spec_of("gemm a=bf16 b=mxfp4 out=bf16"), a, config(128, 128, 64, 4, 2, 4)).ok());
  // Promotion doubles the accumulators: 64 x 64 warp tiles are out (the portable family's rules; on
  // sm_90a select_family plans the sm90 family for these specs).
  s = check_config(spec_of("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16"), a, KernelFamily::kSm80Gemm,
                   config(128, 256, 64, 4, 2, 4));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("promoted"));
  // block128x128 b: a warp tile's width must divide 128.
  s = check_config(spec_of("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16"), a, KernelFamily::kSm80Gemm,
                   config(64, 96, 64, 4, 2, 2));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("warp tile width 48"));
  // Shared memory of the mixed mainloop: 128-byte A rows, K/2-byte FP4 rows.
  EXPECT_EQ(smem_bytes(spec_of("gemm a=bf16 b=mxfp4 out=bf16"), config(128, 128, 64, 4, 2, 4)),
            4 * (128 * 128 + 128 * 32));
  EXPECT_EQ(smem_bytes(spec_of("gemm a=bf16 b=e4m3:n out=bf16"), config(128, 128, 64, 4, 2, 4)),
            4 * (128 * 128 + 128 * 64));
  // FP8 activations (64-byte rows) x 16-bit weights: B rows of 128 bytes padded to 160 in shared memory.
  EXPECT_EQ(smem_bytes(spec_of("gemm a=e4m3:m b=bf16 out=bf16"), config(128, 128, 64, 4, 2, 4)),
            4 * (128 * 64 + 128 * 160));
}

TEST(FormatsPlanTest, DefaultConfigsAreValid) {
  for (const char* a : kArches) {
    for (const std::string& text : new_pairings()) {
      for (int64_t m : {1, 16, 64, 512, 4096}) {
        const KernelSpec s = spec_of(text);
        const TileConfig c = default_config(s, arch_of(a), {m, 5760, 2880 + 64});
        EXPECT_TRUE(check_config(s, arch_of(a), c).ok())
            << text << " on " << a << " m=" << m << ": " << c.to_string();
      }
    }
  }
}

// The mixed mainloop's register-heavy pairings (f16 and MXFP8 activations, W4A8 with FP8 converted in
// registers below sm_89) get a planned default in every M bucket, never the 2-stage last resort.
TEST(FormatsPlanTest, MixedDefaultsAreValidAndNotTheLastResort) {
  for (const char* text : {"gemm a=f16 b=mxfp4 out=bf16", "gemm a=f16 b=e4m3:n out=f32", "gemm a=mxfp8 b=mxfp4 out=bf16",
                           "gemm a=mxfp8 b=nvfp4 out=f32", "gemm a=e4m3:m b=mxfp4 out=bf16",
                           "grouped_gemm[experts=8,layout=offsets] a=e5m2:tensor b=nvfp4 out=bf16",
                           "gemm a=bf16 b=mxfp8 out=bf16", "gemm a=bf16 b=e4m3:block128x128 out=bf16",
                           "gemm a=e4m3:block1x128 b=nvfp4 out=bf16"}) {
    const KernelSpec s = spec_of(text);
    for (const char* a : kArches) {
      for (int64_t m : {1, 16, 33, 48, 64, 128, 512, 4096}) {
        const TileConfig c = default_config(s, arch_of(a), KernelFamily::kSm80Gemm, {m, 5760, 2880});
        EXPECT_TRUE(check_config(s, arch_of(a), KernelFamily::kSm80Gemm, c).ok())
            << text << " on " << a << " m=" << m << ": " << c.to_string();
        EXPECT_GT(c.stages, 2) << text << " on " << a << " m=" << m << ": " << c.to_string();
      }
    }
  }
}

TEST(FormatsPlanTest, PromotedDefaultsKeepWarpTilesAt32x32) {
  const KernelSpec s = spec_of("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16");
  for (const char* a : kArches) {
    EXPECT_EQ(default_config(s, arch_of(a), KernelFamily::kSm80Gemm, {4096, 7168, 7168}).to_string(),
              "bm128_bn64_bk64_s4_w4x2_g8")
        << a;
    const TileConfig small = default_config(s, arch_of(a), KernelFamily::kSm80Gemm, {64, 7168, 7168});
    EXPECT_LE((small.block_m / small.warps_m) * (small.block_n / small.warps_n), 32 * 32) << a;
  }
}

TEST(FormatsPlanTest, GroupedLaunchCoversEveryExpertsTiles) {
  TileConfig c = config(64, 128, 64, 4, 2, 4);
  // offsets: ceil(M / block_m) + E virtual tile rows.
  LaunchShape ls = launch_shape(spec_of("grouped_gemm[experts=32,layout=offsets] a=bf16 b=mxfp4 out=bf16"),
                                KernelFamily::kSm80Gemm, c, {1000, 5760, 2880});
  EXPECT_EQ(ls.grid_x, unsigned((16 + 32) * 45));
  // masked: E * ceil(max_m / block_m) with max_m = M / E.
  ls = launch_shape(spec_of("grouped_gemm[experts=8,layout=masked] a=bf16 b=bf16 out=bf16"), KernelFamily::kSm80Gemm,
                    c, {8 * 100, 256, 512});
  EXPECT_EQ(ls.grid_x, unsigned(8 * 2 * 2));
}

// examples/specs: every scaled-format pairing file parses, round-trips and plans on every arch.
TEST(FormatsPlanTest, ExampleSpecFilesPlan) {
  const auto dir = std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().parent_path() / "examples" / "specs";
  for (const char* name : {"fp8_block_gemm.kiln", "fp8_row_gemm.kiln", "gpt_oss_mxfp4_experts.kiln",
                           "nvfp4_experts.kiln", "mxfp8_gemm.kiln", "quantize_fp8_block.kiln",
                           "quantize_nvfp4.kiln", "w4a8_mxfp4_experts.kiln"}) {
    std::ifstream in(dir / name);
    ASSERT_TRUE(in) << name;
    std::stringstream text;
    text << in.rdbuf();
    const KernelSpec s = spec_of(text.str());
    EXPECT_EQ(spec_of(print_spec(s)), s) << name;
    for (const char* a : kArches) EXPECT_TRUE(select_family(s, arch_of(a)).ok()) << name << " on " << a;
  }
  // The gpt-oss-20b expert shape of the MXFP4 example.
  std::ifstream in(dir / "gpt_oss_mxfp4_experts.kiln");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_TRUE(can_implement(spec_of(text.str()), arch_of("sm_90a"), {4096, 5760, 2880}).ok());
}

TEST(FormatsEmitTest, MixedInputUnitUsesItsMainloopAndCarriesTheScales) {
  TileConfig c;
  c.block_k = 64;
  auto k = emit_kernel(spec_of("grouped_gemm[experts=8,layout=offsets] a=bf16 b=nvfp4 out=bf16 nvfp4_global=expert"),
                       KernelFamily::kSm80Gemm, c, arch_of("sm_86"));
  ASSERT_TRUE(k.ok()) << k.status().to_string();
  EXPECT_THAT(k->source, HasSubstr("#include \"kernels/sm80_mixed_gemm.cuh\"\n"));
  EXPECT_THAT(k->source, HasSubstr("  kiln_dev::sm80_mixed_gemm<KilnConfig>(p);\n"));
  EXPECT_EQ(k->entry, "kiln_sm80_gemm");
  for (const char* line : {"kB = kiln_dev::Format::kNvfp4;", "kScaleB = kiln_dev::Scale::kBlock1x16;",
                           "kScaleTypeB = kiln_dev::ScaleType::kUe4m3;", "kScaleA = kiln_dev::Scale::kNone;",
                           "kGrouping = kiln_dev::Grouping::kOffsets;", "kGlobalPerExpert = true;"}) {
    EXPECT_THAT(k->source, HasSubstr(line));
  }
  EXPECT_EQ(k->smem_bytes, 4 * (128 * 128 + 128 * 32));
}

TEST(FormatsEmitTest, BlockScaledUnitUsesTheSameFormatMainloop) {
  TileConfig c = config(128, 64, 64, 4, 4, 2);  // 32 x 32 warp tiles: acc + tmp fit
  auto k = emit_kernel(spec_of("gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128 out=bf16"), KernelFamily::kSm80Gemm,
                       c, arch_of("sm_89"));
  ASSERT_TRUE(k.ok()) << k.status().to_string();
  EXPECT_THAT(k->source, HasSubstr("#include \"kernels/sm80_gemm.cuh\"\n"));
  EXPECT_THAT(k->source, HasSubstr("kScaleA = kiln_dev::Scale::kBlock1x128;"));
  EXPECT_THAT(k->source, HasSubstr("kScaleTypeA = kiln_dev::ScaleType::kUe8m0;"));
  EXPECT_THAT(k->source, HasSubstr("kScaleB = kiln_dev::Scale::kBlock128x128;"));
  EXPECT_THAT(k->source, HasSubstr("kScaleTypeB = kiln_dev::ScaleType::kF32;"));
  EXPECT_THAT(k->source, HasSubstr("kGrouping = kiln_dev::Grouping::kDense;"));
}

}  // namespace
}  // namespace kiln
