// Unit tests of compiler/plan: Arch parsing and limits, select_family reasons, can_implement messages,
// check_config rejections, default_config validity, launch_shape, TileConfig text/JSON. No CUDA.
#include "compiler/plan/plan.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kiln/arch.hpp"
#include "compiler/plan/sm90_plan.hpp"
#include "compiler/spec/spec.hpp"
#include "tests/common/tile_configs.hpp"

namespace kiln {
namespace {

// On sm_90a select_family plans the sm90 family for dense per-tensor pairings; the
// tests below are about the sm80 family's rules, so they name it (compiler/plan/plan.hpp overloads).
Status check_sm80(const KernelSpec& spec, const Arch& arch, const TileConfig& cfg) {
  return check_config(spec, arch, KernelFamily::kSm80Gemm, cfg);
}
TileConfig default_sm80(const KernelSpec& spec, const Arch& arch, const ProblemSizes& sizes) {
  return default_config(spec, arch, KernelFamily::kSm80Gemm, sizes);
}

using ::testing::HasSubstr;

KernelSpec spec_of(std::string_view text) {
  auto r = parse_spec(text);
  EXPECT_TRUE(r.ok()) << "text: " << text << "\nerror: " << r.status().to_string();
  return r.ok() ? *r : KernelSpec{};
}

Arch arch_of(std::string_view name) {
  auto r = parse_arch(name);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? *r : Arch{};
}

const std::vector<std::string>& all_arches() {
  static const std::vector<std::string> k = {"sm_90a", "sm_90", "sm_89", "sm_86", "sm_80"};
  return k;
}

// Every operand pairing the sm80 family supports, with every output format.
std::vector<std::string> supported_specs() {
  std::vector<std::string> out;
  const char* pairs[] = {"a=bf16 b=bf16",
                         "a=f16 b=f16",
                         "a=e4m3:tensor b=e4m3:tensor",
                         "a=e4m3:tensor b=e5m2:tensor",
                         "a=e5m2:tensor b=e4m3:tensor",
                         "a=e5m2:tensor b=e5m2:tensor"};
  for (const char* p : pairs)
    for (const char* o : {"bf16", "f16", "f32"}) out.push_back(std::string("gemm ") + p + " out=" + o);
  return out;
}

// ---- Arch ---------------------------------------------------------------------------------------

TEST(ArchTest, ParsesAcceptedNamesWithAndWithoutPrefix) {
  EXPECT_EQ(arch_of("sm_90a"), (Arch{9, 0, true}));
  EXPECT_EQ(arch_of("90a"), (Arch{9, 0, true}));
  EXPECT_EQ(arch_of("sm_90"), (Arch{9, 0, false}));
  EXPECT_EQ(arch_of("sm_89"), (Arch{8, 9, false}));
  EXPECT_EQ(arch_of("89"), (Arch{8, 9, false}));
  EXPECT_EQ(arch_of("sm_86"), (Arch{8, 6, false}));
  EXPECT_EQ(arch_of("sm_80"), (Arch{8, 0, false}));
}

TEST(ArchTest, NamesRoundTrip) {
  for (const std::string& n : all_arches()) EXPECT_EQ(arch_of(n).name(), n);
  EXPECT_EQ(arch_of("sm_90a").nvrtc_option(), "--gpu-architecture=sm_90a");
  EXPECT_EQ(arch_of("sm_86").nvrtc_option(), "--gpu-architecture=sm_86");
}

TEST(ArchTest, RejectsUnknownNamesListingAcceptedOnes) {
  for (const char* bad : {"sm_75", "sm_90b", "", "sm_", "hopper", "sm_890", " sm_80"}) {
    auto r = parse_arch(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("sm_90a, sm_90, sm_89, sm_86, sm_80"));
  }
}

TEST(ArchTest, SharedMemoryLimitsPerBlock) {
  EXPECT_EQ(arch_of("sm_80").max_smem_per_block(), 166912);
  EXPECT_EQ(arch_of("sm_86").max_smem_per_block(), 101376);
  EXPECT_EQ(arch_of("sm_89").max_smem_per_block(), 101376);
  EXPECT_EQ(arch_of("sm_90").max_smem_per_block(), 232448);
  EXPECT_EQ(arch_of("sm_90a").max_smem_per_block(), 232448);
}

TEST(ArchTest, ArchForDevice) {
  EXPECT_EQ(arch_for_device(9, 0), (Arch{9, 0, true}));
  EXPECT_EQ(arch_for_device(8, 9), (Arch{8, 9, false}));
  EXPECT_EQ(arch_for_device(8, 6), (Arch{8, 6, false}));
  EXPECT_EQ(arch_for_device(8, 0), (Arch{8, 0, false}));
  EXPECT_EQ(arch_for_device(9, 0).name(), "sm_90a");
  EXPECT_FALSE(arch_for_device(10, 0).arch_specific);
}

TEST(ArchTest, Fp8MmaFromSm89) {
  EXPECT_FALSE(arch_of("sm_80").has_fp8_mma());
  EXPECT_FALSE(arch_of("sm_86").has_fp8_mma());
  EXPECT_TRUE(arch_of("sm_89").has_fp8_mma());
  EXPECT_TRUE(arch_of("sm_90a").has_fp8_mma());
}

// ---- select_family ------------------------------------------------------------------------------

TEST(SelectFamilyTest, Sm80GemmForEverySupportedPairingOnEveryArch) {
  for (const std::string& a : all_arches()) {
    for (const std::string& text : supported_specs()) {
      auto f = select_family(spec_of(text), arch_of(a));
      ASSERT_TRUE(f.ok()) << text << " on " << a << ": " << f.status().to_string();
      // sm_90a plans the sm90 family where it applies (compiler/plan/sm90_plan.hpp).
      const bool sm90 = sm90_supports(spec_of(text), arch_of(a));
      EXPECT_EQ(*f, sm90 ? KernelFamily::kSm90Gemm : KernelFamily::kSm80Gemm) << text << " on " << a;
    }
  }
}

// The UNSUPPORTED message of spec on sm_90a.
std::string unsupported_reason(std::string_view text, std::string_view arch = "sm_90a") {
  auto f = select_family(spec_of(text), arch_of(arch));
  EXPECT_FALSE(f.ok()) << text;
  if (f.ok()) return "";
  EXPECT_EQ(f.status().code(), StatusCode::kUnsupported) << f.status().to_string();
  return f.status().message();
}

TEST(SelectFamilyTest, RejectsWithAReasonNamingWhatIsMissing) {
  // Scaled-format pairings that stay out (tests/unit/compiler/formats_plan_test.cpp has the accepted ones).
  EXPECT_THAT(unsupported_reason("gemm a=mxfp4 b=bf16 out=bf16"), HasSubstr("4-bit activations"));
  EXPECT_THAT(unsupported_reason("gemm a=bf16 b=f16 out=bf16"), HasSubstr("same format"));
  EXPECT_THAT(unsupported_reason("gemm a=e4m3:m b=e4m3:block1x128 out=f32 pass=wgrad"), HasSubstr("pass=wgrad"));
  EXPECT_THAT(unsupported_reason("gemm a=bf16 b=bf16 out=bf16 gate_up=interleaved"),
              HasSubstr("gate_up=interleaved"));
}

TEST(SelectFamilyTest, RejectsQuantizedOutputs) {
  auto spec = parse_spec("gemm a=bf16 b=bf16 out=e4m3:block1x128");
  if (!spec.ok()) GTEST_SKIP() << "the DSL does not accept this output: " << spec.status().to_string();
  auto f = select_family(*spec, arch_of("sm_90a"));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kUnsupported);
  EXPECT_THAT(f.status().message(), HasSubstr("out=e4m3"));
}

TEST(SelectFamilyTest, RejectsArchesBeforeSm80) {
  auto f = select_family(spec_of("gemm a=bf16 b=bf16 out=bf16"), arch_for_device(7, 5));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kUnsupported);
  EXPECT_THAT(f.status().message(), HasSubstr("sm_75"));
  EXPECT_THAT(f.status().message(), HasSubstr("sm_80"));
}

TEST(SelectFamilyTest, ReferenceAcceptsAnyDecodablePairing) {
  EXPECT_TRUE(check_reference_spec(spec_of("gemm a=bf16 b=e4m3:tensor out=f32"), arch_of("sm_80")).ok());
  EXPECT_TRUE(check_reference_spec(spec_of("gemm a=f16 b=bf16 out=bf16"), arch_of("sm_80")).ok());
  EXPECT_TRUE(check_reference_spec(spec_of("gemm a=bf16 b=mxfp4 out=bf16"), arch_of("sm_90a")).ok());
  EXPECT_TRUE(check_reference_spec(spec_of("gemm a=bf16 b=bf16 out=bf16 pass=wgrad"), arch_of("sm_90a")).ok());
  EXPECT_TRUE(check_reference_spec(spec_of("gemm a=bf16 b=e4m3:m out=f32 pass=wgrad"), arch_of("sm_90a")).ok());
  Status s = check_reference_spec(spec_of("gemm a=bf16 b=e4m3:n out=bf16 pass=wgrad"), arch_of("sm_90a"));
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("pass=wgrad"));
}

// ---- can_implement ------------------------------------------------------------------------------

std::string cannot_implement(std::string_view text, ProblemSizes sizes) {
  Status s = can_implement(spec_of(text), arch_of("sm_90a"), sizes);
  EXPECT_FALSE(s.ok()) << text;
  return s.message();
}

TEST(CanImplementTest, AcceptsAlignedProblems) {
  EXPECT_TRUE(
      can_implement(spec_of("gemm a=bf16 b=bf16 out=bf16"), arch_of("sm_80"), {4096, 7168, 7168}).ok());
  EXPECT_TRUE(can_implement(spec_of("gemm a=bf16 b=bf16 out=bf16"), arch_of("sm_80"), {1, 1, 8}).ok());
  EXPECT_TRUE(can_implement(spec_of("gemm a=bf16 b=bf16 out=bf16"), arch_of("sm_80"), {0, 3, 8}).ok());
  EXPECT_TRUE(
      can_implement(spec_of("gemm a=e4m3:tensor b=e5m2:tensor out=f32"), arch_of("sm_86"), {3, 5, 16}).ok());
}

TEST(CanImplementTest, NamesTheOperandAndTheRowBytesOfAMisalignedK) {
  EXPECT_EQ(cannot_implement("gemm a=bf16 b=bf16 out=bf16", {16, 16, 1001}),
            "operand a: K=1001 elements is 2002 bytes per row; rows must be a multiple of 16 bytes "
            "(K % 8 == 0 for bf16)");
  EXPECT_EQ(cannot_implement("gemm a=e4m3:tensor b=e4m3:tensor out=bf16", {16, 16, 1000}),
            "operand a: K=1000 elements is 1000 bytes per row; rows must be a multiple of 16 bytes "
            "(K % 16 == 0 for e4m3)");
  EXPECT_THAT(cannot_implement("gemm a=f16 b=f16 out=f32", {16, 16, 4}), HasSubstr("(K % 8 == 0 for f16)"));
}

TEST(CanImplementTest, RejectsSizesOutsideTheIndexRange) {
  EXPECT_THAT(cannot_implement("gemm a=bf16 b=bf16 out=bf16", {int64_t{1} << 31, 16, 16}),
              HasSubstr("M=2147483648"));
  EXPECT_THAT(cannot_implement("gemm a=bf16 b=bf16 out=bf16", {16, int64_t{1} << 31, 16}),
              HasSubstr("N=2147483648"));
  EXPECT_THAT(cannot_implement("gemm a=bf16 b=bf16 out=bf16", {16, 16, int64_t{1} << 32}),
              HasSubstr("K=4294967296"));
  EXPECT_THAT(cannot_implement("gemm a=bf16 b=bf16 out=bf16", {16, 0, 16}), HasSubstr("N=0"));
  EXPECT_THAT(cannot_implement("gemm a=bf16 b=bf16 out=bf16", {16, 16, 0}), HasSubstr("K=0"));
  EXPECT_THAT(cannot_implement("gemm a=bf16 b=bf16 out=bf16", {-1, 16, 16}), HasSubstr("M=-1"));
}

TEST(CanImplementTest, PassesOnSelectFamilyReasons) {
  Status s = can_implement(spec_of("gemm a=nvfp4 b=bf16 out=bf16"), arch_of("sm_90a"), {16, 16, 128});
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("a=nvfp4"));
}

// ---- check_config -------------------------------------------------------------------------------

TileConfig config(int bm, int bn, int bk, int stages, int wm, int wn, int gm = 8) {
  return test::tile_config(bm, bn, bk, stages, wm, wn, gm);
}

std::string config_error(std::string_view text, std::string_view arch, const TileConfig& c) {
  Status s = check_sm80(spec_of(text), arch_of(arch), c);
  EXPECT_FALSE(s.ok()) << c.to_string() << " on " << arch;
  return s.message();
}

TEST(CheckConfigTest, AcceptsTheDefaultShapes) {
  const KernelSpec bf16 = spec_of("gemm a=bf16 b=bf16 out=bf16");
  const KernelSpec fp8 = spec_of("gemm a=e4m3:tensor b=e4m3:tensor out=bf16");
  for (const std::string& a : all_arches()) {
    EXPECT_TRUE(check_sm80(bf16, arch_of(a), config(128, 128, 32, 4, 2, 4)).ok()) << a;
    EXPECT_TRUE(check_sm80(bf16, arch_of(a), config(128, 128, 64, 3, 2, 4)).ok()) << a;
    EXPECT_TRUE(check_sm80(fp8, arch_of(a), config(128, 128, 64, 4, 2, 4)).ok()) << a;
    EXPECT_TRUE(check_sm80(fp8, arch_of(a), config(16, 128, 128, 4, 1, 4)).ok()) << a;
  }
}

TEST(CheckConfigTest, RejectsBlockKThatIsNot64Or128BytesPerRow) {
  const char* bf16 = "gemm a=bf16 b=bf16 out=bf16";
  EXPECT_THAT(
      config_error(bf16, "sm_90a", config(128, 128, 48, 4, 2, 4)),
      HasSubstr("block_k=48 is 96 bytes per row for bf16; must be 64 or 128 bytes (block_k 32 or 64)"));
  EXPECT_THAT(
      config_error("gemm a=e4m3:tensor b=e4m3:tensor out=bf16", "sm_90a", config(128, 128, 32, 4, 2, 4)),
      HasSubstr("block_k=32 is 32 bytes per row for e4m3; must be 64 or 128 bytes (block_k 64 or 128)"));
}

TEST(CheckConfigTest, RejectsWarpTilingThatDoesNotDivide) {
  const char* bf16 = "gemm a=bf16 b=bf16 out=bf16";
  EXPECT_THAT(config_error(bf16, "sm_90a", config(96, 128, 32, 4, 4, 2)), HasSubstr("block_m=96"));
  EXPECT_THAT(config_error(bf16, "sm_90a", config(128, 64, 32, 4, 2, 8)), HasSubstr("block_n=64"));
  EXPECT_THAT(config_error(bf16, "sm_90a", config(128, 64, 32, 4, 2, 8)), HasSubstr("16 * warps_n"));
}

TEST(CheckConfigTest, RejectsOutOfRangeFields) {
  const char* bf16 = "gemm a=bf16 b=bf16 out=bf16";
  EXPECT_THAT(config_error(bf16, "sm_90a", config(128, 128, 32, 1, 2, 4)), HasSubstr("stages=1"));
  EXPECT_THAT(config_error(bf16, "sm_90a", config(128, 128, 32, 9, 2, 4)), HasSubstr("stages=9"));
  EXPECT_THAT(config_error(bf16, "sm_90a", config(128, 128, 32, 4, 2, 4, 0)), HasSubstr("group_m=0"));
  EXPECT_THAT(config_error(bf16, "sm_90a", config(512, 128, 32, 4, 2, 4)), HasSubstr("block_m=512"));
  EXPECT_THAT(config_error(bf16, "sm_90a", config(256, 256, 32, 2, 8, 8)), HasSubstr("64 warps"));
}

TEST(CheckConfigTest, RejectsRegisterBudgetsPtxasWouldSpill) {
  const char* bf16 = "gemm a=bf16 b=bf16 out=bf16";
  // One warp copying a 64x64 tile: 16 copies per stage on top of 128 accumulators.
  EXPECT_THAT(config_error(bf16, "sm_90a", config(64, 64, 32, 4, 1, 1)), HasSubstr("registers per thread"));
  // 512 threads leave 128 registers per thread.
  EXPECT_THAT(config_error(bf16, "sm_90a", config(128, 256, 32, 3, 4, 4)),
              HasSubstr("512 threads allow 120"));
}

TEST(CheckConfigTest, RejectsTooManyAccumulators) {
  const char* bf16 = "gemm a=bf16 b=bf16 out=bf16";
  EXPECT_THAT(config_error(bf16, "sm_90a", config(256, 128, 32, 3, 2, 2)), HasSubstr("warp tile 128x64"));
  // 64 x 64 warp tiles fit natively, but not when FP8 is converted in registers below sm_89.
  const char* fp8 = "gemm a=e4m3:tensor b=e4m3:tensor out=bf16";
  EXPECT_TRUE(check_sm80(spec_of(fp8), arch_of("sm_89"), config(128, 128, 64, 4, 2, 2)).ok());
  EXPECT_THAT(config_error(fp8, "sm_80", config(128, 128, 64, 4, 2, 2)), HasSubstr("at most 64"));
}

TEST(CheckConfigTest, RejectsSharedMemoryBeyondTheArch) {
  // 6 stages * (128 + 128) rows * 128 bytes = 196608: fits sm_90 (232448), not sm_80 (166912) or sm_86.
  const char* bf16 = "gemm a=bf16 b=bf16 out=bf16";
  const TileConfig big = config(128, 128, 64, 6, 2, 4);
  EXPECT_TRUE(check_sm80(spec_of(bf16), arch_of("sm_90a"), big).ok());
  Status s = check_sm80(spec_of(bf16), arch_of("sm_86"), big);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("196608 bytes of shared memory; sm_86 allows 101376"));
  EXPECT_EQ(check_sm80(spec_of(bf16), arch_of("sm_80"), big).code(), StatusCode::kResourceExhausted);
}

TEST(CheckConfigTest, SmemBytesFormula) {
  EXPECT_EQ(smem_bytes(spec_of("gemm a=bf16 b=bf16 out=bf16"), config(128, 128, 32, 4, 2, 4)), 65536);
  EXPECT_EQ(smem_bytes(spec_of("gemm a=e4m3:tensor b=e4m3:tensor out=bf16"), config(128, 64, 128, 3, 2, 4)),
            3 * 192 * 128);
}

// ---- default_config -----------------------------------------------------------------------------

TEST(DefaultConfigTest, ValidForEveryArchFormatAndShape) {
  const std::vector<ProblemSizes> shapes = {
      {1, 7168, 7168},    {16, 4096, 4096}, {33, 128, 256}, {64, 64, 64}, {100, 100, 128},
      {4096, 7168, 7168}, {8192, 128, 64},  {0, 1, 16},     {1, 1, 16},   {65, 16, 32}};
  for (const std::string& a : all_arches()) {
    for (const std::string& text : supported_specs()) {
      const KernelSpec spec = spec_of(text);
      for (const ProblemSizes& s : shapes) {
        const TileConfig c = default_sm80(spec, arch_of(a), s);
        Status st = check_sm80(spec, arch_of(a), c);
        EXPECT_TRUE(st.ok()) << text << " on " << a << " m=" << s.m << " n=" << s.n << " k=" << s.k << ": "
                             << st.to_string();
      }
    }
  }
}

TEST(DefaultConfigTest, LargeProblemsUseWideTiles) {
  const KernelSpec bf16 = spec_of("gemm a=bf16 b=bf16 out=bf16");
  const KernelSpec fp8 = spec_of("gemm a=e4m3:tensor b=e4m3:tensor out=bf16");
  EXPECT_EQ(default_sm80(bf16, arch_of("sm_90a"), {4096, 7168, 7168}).to_string(),
            "bm128_bn256_bk32_s4_w2x4_g8");
  EXPECT_EQ(default_sm80(fp8, arch_of("sm_89"), {4096, 7168, 7168}).to_string(),
            "bm128_bn256_bk64_s4_w2x4_g8");
  EXPECT_EQ(default_sm80(fp8, arch_of("sm_86"), {4096, 7168, 7168}).to_string(),
            "bm128_bn128_bk64_s4_w2x4_g8");
  // Too few wide tiles to fill the SMs: 128 x 128.
  EXPECT_EQ(default_sm80(bf16, arch_of("sm_90a"), {2048, 2048, 4096}).to_string(),
            "bm128_bn128_bk32_s4_w2x4_g8");
}

TEST(DefaultConfigTest, SmallMUsesShortTiles) {
  const KernelSpec spec = spec_of("gemm a=bf16 b=bf16 out=bf16");
  EXPECT_EQ(default_sm80(spec, arch_of("sm_89"), {1, 7168, 7168}).block_m, 16);
  EXPECT_EQ(default_sm80(spec, arch_of("sm_90a"), {32, 7168, 7168}).block_m, 32);
  EXPECT_EQ(default_sm80(spec, arch_of("sm_90a"), {64, 7168, 7168}).block_m, 64);
  EXPECT_EQ(default_sm80(spec, arch_of("sm_90a"), {65, 7168, 7168}).block_m, 128);
  // Where an sm90 plan runs its <= 16-row buckets on the portable family, they take the decode kernel.
  EXPECT_EQ(default_sm80(spec, arch_of("sm_90a"), {1, 7168, 7168}).to_string(), "bm8_bn16_bk64_s2_w1x4_g1_d");
  EXPECT_EQ(default_sm80(spec, arch_of("sm_90a"), {16, 7168, 7168}).to_string(), "bm16_bn16_bk64_s2_w1x4_g1_d");
  EXPECT_TRUE(decode_bucket(spec, arch_of("sm_90a"), 16));
  EXPECT_FALSE(decode_bucket(spec, arch_of("sm_90a"), 17));
  EXPECT_FALSE(decode_bucket(spec, arch_of("sm_89"), 1));
}

TEST(DefaultConfigTest, IsAPureFunction) {
  const KernelSpec spec = spec_of("gemm a=e5m2:tensor b=e4m3:tensor out=f16");
  EXPECT_EQ(default_sm80(spec, arch_of("sm_86"), {300, 500, 512}),
            default_sm80(spec, arch_of("sm_86"), {300, 500, 512}));
}

// ---- launch_shape -------------------------------------------------------------------------------

TEST(LaunchShapeTest, Sm80GridIsOneBlockPerTile) {
  const KernelSpec spec = spec_of("gemm a=bf16 b=bf16 out=bf16");
  const TileConfig c = config(128, 128, 32, 4, 2, 4);
  const LaunchShape ls = launch_shape(spec, KernelFamily::kSm80Gemm, c, {4096, 7168, 7168});
  EXPECT_EQ(ls.grid_x, 32u * 56u);
  EXPECT_EQ(ls.grid_y, 1u);
  EXPECT_EQ(ls.grid_z, 1u);
  EXPECT_EQ(ls.block_x, 256u);
  EXPECT_EQ(ls.dynamic_smem, 65536);
  const LaunchShape tail = launch_shape(spec, KernelFamily::kSm80Gemm, c, {129, 130, 64});
  EXPECT_EQ(tail.grid_x, 4u);
}

TEST(LaunchShapeTest, ReferenceGridCoversNAndM) {
  const KernelSpec spec = spec_of("gemm a=e4m3:tensor b=e4m3:tensor out=f32");
  const LaunchShape ls = launch_shape(spec, KernelFamily::kReferenceGemm, TileConfig{}, {33, 100, 64});
  EXPECT_EQ(ls.grid_x, 7u);
  EXPECT_EQ(ls.grid_y, 3u);
  EXPECT_EQ(ls.block_x, 256u);
  EXPECT_EQ(ls.dynamic_smem, 0);
  // Rows past 65535 blocks are covered by the kernel's grid-stride loop.
  const LaunchShape big =
      launch_shape(spec, KernelFamily::kReferenceGemm, TileConfig{}, {int64_t{1} << 24, 16, 16});
  EXPECT_EQ(big.grid_y, 65535u);
}

// ---- TileConfig text and JSON -------------------------------------------------------------------

TEST(TileConfigTest, ToStringAndFamilyName) {
  EXPECT_EQ(TileConfig{}.to_string(), "bm128_bn128_bk32_s4_w2x4_g8");
  EXPECT_EQ(TileConfig{}.threads(), 256);
  EXPECT_STREQ(family_name(KernelFamily::kSm80Gemm), "sm80_gemm");
  EXPECT_STREQ(family_name(KernelFamily::kReferenceGemm), "reference_gemm");
}

TEST(TileConfigTest, JsonRoundTrip) {
  const TileConfig c = config(64, 256, 128, 3, 1, 4, 16);
  const nlohmann::json j = config_to_json(c);
  EXPECT_EQ(j.at("block_m"), 64);
  EXPECT_EQ(j.at("group_m"), 16);
  auto back = config_from_json(j);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(*back, c);
}

TEST(TileConfigTest, JsonErrorsNameTheField) {
  nlohmann::json j = config_to_json(TileConfig{});
  j.erase("stages");
  EXPECT_THAT(config_from_json(j).status().message(), HasSubstr("missing field 'stages'"));
  j = config_to_json(TileConfig{});
  j["warps_n"] = "four";
  EXPECT_THAT(config_from_json(j).status().message(), HasSubstr("'warps_n' must be an integer"));
  j = config_to_json(TileConfig{});
  j["block_q"] = 1;
  EXPECT_THAT(config_from_json(j).status().message(), HasSubstr("unknown field 'block_q'"));
  j = config_to_json(TileConfig{});
  j["block_m"] = -128;
  EXPECT_THAT(config_from_json(j).status().message(), HasSubstr("block_m=-128"));
  EXPECT_EQ(config_from_json(nlohmann::json::array()).status().code(), StatusCode::kInvalidArgument);
}

// config_from_name inverts to_string on every config the sm90 space offers (clusters, split-K, TMA
// stores, two-atom and three-warpgroup shapes) and on the portable family's default.
TEST(TileConfigTest, NameRoundTrip) {
  int n = 0;
  for (const char* text : {"gemm a=bf16 b=bf16 out=bf16", "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16",
                           "gemm a=mxfp8 b=mxfp8 out=bf16"}) {
    auto spec = parse_spec(text);
    ASSERT_TRUE(spec.ok());
    for (const TileConfig& c : sm90_config_space(*spec, Arch{9, 0, true})) {
      auto back = config_from_name(c.to_string());
      ASSERT_TRUE(back.ok()) << c.to_string() << ": " << back.status().to_string();
      EXPECT_EQ(*back, c) << c.to_string();
      ++n;
    }
  }
  EXPECT_GT(n, 500);
  auto d = config_from_name(TileConfig{}.to_string());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, TileConfig{});
  TileConfig dq = TileConfig{};
  dq.block_k = 64;
  dq.split_k = 4;
  dq.cluster_m = 2;
  dq.tma_store = 1;
  EXPECT_EQ(*config_from_name("bm128_bn128_bk64_s4_w2x4_g8_c2_k4_t"), dq);
  dq.pingpong = 1;  // ping-pong consumers: "_p" after "_t"
  EXPECT_EQ(dq.to_string(), "bm128_bn128_bk64_s4_w2x4_g8_c2_k4_t_p");
  EXPECT_EQ(*config_from_name("bm128_bn128_bk64_s4_w2x4_g8_c2_k4_t_p"), dq);
  EXPECT_EQ(*config_from_json(config_to_json(dq)), dq);
  EXPECT_THAT(config_from_name("bm128_bn128_bk64_s4_w4x1_g8_p_t").status().message(),
              HasSubstr("out of that order"));
  dq.tma_store = 2;  // the slab in two chunks: "_th"
  EXPECT_EQ(dq.to_string(), "bm128_bn128_bk64_s4_w2x4_g8_c2_k4_th_p");
  EXPECT_EQ(*config_from_name(dq.to_string()), dq);
  EXPECT_EQ(*config_from_json(config_to_json(dq)), dq);
  dq.tma_store = 4;  // four chunks: "_tq"
  EXPECT_EQ(dq.to_string(), "bm128_bn128_bk64_s4_w2x4_g8_c2_k4_tq_p");
  EXPECT_EQ(*config_from_name(dq.to_string()), dq);
  EXPECT_EQ(*config_from_json(config_to_json(dq)), dq);
  dq.tma_store = 1;
  nlohmann::json bad = config_to_json(dq);
  bad["tma_store"] = 3;
  EXPECT_THAT(config_from_json(bad).status().message(), HasSubstr("tma_store must be 0, 1, 2 or 4"));
  bad["tma_store"] = 1;
  bad["pingpong"] = 2;
  EXPECT_THAT(config_from_json(bad).status().message(), HasSubstr("pingpong must be 0 or 1"));
}

TEST(TileConfigTest, NameErrorsSayWhatIsWrongAndTheForm) {
  auto e = config_from_name("bm128_bn256_bk64_s3_w8x1");
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(e.status().message(), HasSubstr("5 of the 6 required parts"));
  EXPECT_THAT(e.status().message(), HasSubstr("bm<rows>_bn<cols>"));
  EXPECT_THAT(config_from_name("bm128_bn256_bk64_s3_w8_g8").status().message(), HasSubstr("not w<warps_m>x<warps_n>"));
  EXPECT_THAT(config_from_name("bn128_bm256_bk64_s3_w8x1_g8").status().message(), HasSubstr("'bn128', not bm<n>"));
  EXPECT_THAT(config_from_name("bm128_bn256_bk64_s3_w8x1_g8_t_c2").status().message(), HasSubstr("out of that order"));
  EXPECT_THAT(config_from_name("bm128_bn256_bk64_s3_w8x1_g8_x").status().message(), HasSubstr("'x' is not"));
  EXPECT_THAT(config_from_name("bm128_bn256_bk64_s0_w8x1_g8").status().message(), HasSubstr("stages=0"));
  EXPECT_THAT(config_from_name("bm128_bn256_bk64_s3_w8x1_g8_c99").status().message(), HasSubstr("cluster_m"));
  EXPECT_FALSE(config_from_name("").ok());
  EXPECT_FALSE(config_from_name("bm1234567_bn256_bk64_s3_w8x1_g8").ok());
}

// ---- the decode kernel's configs (small M; templates/kernels/sm80_decode.cuh) --------------------

TileConfig decode_cfg(int bm, int bn, int bk, int warps, int in_flight = 2) {
  TileConfig c = config(bm, bn, bk, in_flight, 1, warps, 1);
  c.decode = 1;
  return c;
}

TEST(DecodeConfigTest, NameAndJsonRoundTrip) {
  const TileConfig c = decode_cfg(8, 32, 128, 8);
  EXPECT_EQ(c.to_string(), "bm8_bn32_bk128_s2_w1x8_g1_d");
  auto back = config_from_name(c.to_string());
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(*back, c);
  const nlohmann::json j = config_to_json(c);
  EXPECT_EQ(j.at("decode"), 1);
  EXPECT_EQ(*config_from_json(j), c);
  EXPECT_FALSE(config_to_json(TileConfig{}).contains("decode"));  // absent when 0: old keys unchanged
  nlohmann::json bad = j;
  bad["decode"] = 3;
  EXPECT_THAT(config_from_json(bad).status().message(), HasSubstr("decode must be 0, 1 or 2"));
  // The warpgroup decode kernel: "_dw", decode 2.
  TileConfig w = decode_cfg(16, 64, 256, 8);
  w.decode = 2;
  EXPECT_EQ(w.to_string(), "bm16_bn64_bk256_s2_w1x8_g1_dw");
  EXPECT_EQ(*config_from_name(w.to_string()), w);
  EXPECT_EQ(config_to_json(w).at("decode"), 2);
  EXPECT_EQ(*config_from_json(config_to_json(w)), w);
  EXPECT_THAT(config_from_name("bm8_bn32_bk128_s2_w1x8_g1_d_t").status().message(), HasSubstr("out of that order"));
}

TEST(DecodeConfigTest, AcceptsTheKernelsShapes) {
  const Arch h200{9, 0, true};
  for (const char* text : {"gemm a=bf16 b=bf16 out=bf16", "gemm a=f16 b=f16 out=f32",
                           "gemm a=e4m3:tensor b=e5m2:tensor out=bf16", "gemm a=e4m3:m b=e4m3:n out=f16",
                           "gemm a=e4m3:block1x128 b=e4m3:block128x128:ue8m0 out=bf16",
                           "gemm a=bf16 b=bf16 out=bf16 epilogue=\"out = acc + bias[n]\""}) {
    const KernelSpec spec = spec_of(text);
    EXPECT_TRUE(decode_supports(spec, h200)) << text;
    const int eb = format_is_fp8(spec.a.format) ? 1 : 2;
    for (const TileConfig& c : {decode_cfg(8, 16, 128 / eb, 4), decode_cfg(16, 32, 128 / eb, 8), decode_cfg(8, 64, 128 / eb, 2)})
      EXPECT_TRUE(check_config(spec, h200, KernelFamily::kSm80Gemm, c).ok())
          << text << " " << c.to_string() << ": " << check_config(spec, h200, KernelFamily::kSm80Gemm, c).to_string();
  }
}

TEST(DecodeConfigTest, RejectsWithTheRuleAndTheValue) {
  const Arch h200{9, 0, true};
  const KernelSpec bf16 = spec_of("gemm a=bf16 b=bf16 out=bf16");
  auto msg = [&](const KernelSpec& s, const TileConfig& c, const Arch& a) {
    return check_config(s, a, KernelFamily::kSm80Gemm, c).message();
  };
  EXPECT_THAT(msg(bf16, decode_cfg(32, 32, 64, 4), h200), HasSubstr("block_m=32 is out of range (8..16)"));
  EXPECT_THAT(msg(bf16, decode_cfg(12, 32, 64, 4), h200), HasSubstr("must be 8 or 16"));
  EXPECT_THAT(msg(bf16, decode_cfg(8, 40, 64, 4), h200), HasSubstr("multiple of 16"));
  EXPECT_THAT(msg(bf16, decode_cfg(8, 32, 48, 4), h200), HasSubstr("segments of 64 bytes"));
  TileConfig ring = decode_cfg(8, 32, 64, 4);
  ring.stages = 3;
  EXPECT_THAT(msg(bf16, ring, h200), HasSubstr("stages=3 is out of range (1..2)"));
  // One warp step in flight halves the load registers: 8 segments x 64 rows fits with 1, not with 2.
  EXPECT_THAT(msg(bf16, decode_cfg(8, 16, 256, 4), h200), HasSubstr("registers per thread"));
  EXPECT_TRUE(check_config(bf16, h200, KernelFamily::kSm80Gemm, decode_cfg(8, 16, 256, 4, 1)).ok());
  TileConfig two_rows = decode_cfg(8, 32, 64, 4);
  two_rows.warps_m = 2;
  EXPECT_THAT(msg(bf16, two_rows, h200), HasSubstr("warps_m=2"));
  EXPECT_THAT(msg(bf16, decode_cfg(16, 64, 256, 8), h200), HasSubstr("registers per thread"));
  const KernelSpec block = spec_of("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16");
  EXPECT_THAT(msg(block, decode_cfg(8, 32, 64, 4), h200), HasSubstr("multiple of 128"));
  // Specs the kernel does not take: the reason and the way out.
  for (const char* text : {"gemm a=mxfp8 b=mxfp8 out=bf16", "gemm a=f16 b=mxfp4 out=bf16",
                           "grouped_gemm[experts=8,layout=offsets] a=e4m3:m b=mxfp4 out=bf16",
                           "gemm a=bf16 b=bf16 out=bf16 gate_up=interleaved epilogue=\"out = silu(gate) * up\""}) {
    const KernelSpec s = spec_of(text);
    EXPECT_FALSE(decode_supports(s, h200)) << text;
    EXPECT_THAT(msg(s, decode_cfg(8, 32, 64, 4), h200), HasSubstr("tiled mainloop (decode 0)")) << text;
  }
  // Grouped problems run on it by an explicit config only: plans keep their tiled kernels there.
  const KernelSpec grouped = spec_of("grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16");
  EXPECT_TRUE(decode_supports(grouped, h200));
  EXPECT_TRUE(check_config(grouped, h200, KernelFamily::kSm80Gemm, decode_cfg(8, 32, 64, 4)).ok());
  EXPECT_FALSE(decode_bucket(grouped, h200, 2));
  // FP8 needs sm_89's conversions; 16-bit operands run from sm_80.
  const KernelSpec fp8 = spec_of("gemm a=e4m3:tensor b=e4m3:tensor out=bf16");
  EXPECT_FALSE(decode_supports(fp8, Arch{8, 6, false}));
  EXPECT_TRUE(decode_supports(fp8, Arch{8, 9, false}));
  EXPECT_TRUE(check_config(bf16, Arch{8, 0, false}, KernelFamily::kSm80Gemm, decode_cfg(8, 32, 64, 4)).ok());
  // The sm90 family does not read decode configs.
  EXPECT_THAT(check_config(bf16, h200, KernelFamily::kSm90Gemm, decode_cfg(8, 32, 64, 4)).message(),
              HasSubstr("decode=1 names a decode kernel of the portable family"));
}

// bf16 x MXFP4 / NVFP4: the 4-bit decode kernel (templates/kernels/sm80_decode_w4.cuh), its own ranges, and
// the heuristic's choice up to 16 rows per token tile (dense and grouped).
TEST(DecodeConfigTest, FourBitWeights) {
  const Arch h200{9, 0, true};
  const KernelSpec mx = spec_of("gemm a=bf16 b=mxfp4 out=bf16");
  const KernelSpec grouped =
      spec_of("grouped_gemm[experts=32,layout=offsets] a=bf16 b=nvfp4 out=f32 epilogue=\"out = acc + bias[e,n]\"");
  for (const KernelSpec& s : {mx, grouped}) {
    EXPECT_TRUE(decode_w4_supports(s, h200));
    EXPECT_FALSE(decode_supports(s, h200));
    for (const TileConfig& c : {decode_cfg(8, 32, 128, 4), decode_cfg(16, 64, 128, 4, 1), decode_cfg(32, 32, 128, 4, 1),
                                decode_cfg(8, 16, 256, 2)})
      EXPECT_TRUE(check_config(s, h200, KernelFamily::kSm80Gemm, c).ok())
          << c.to_string() << ": " << check_config(s, h200, KernelFamily::kSm80Gemm, c).to_string();
    for (int64_t m : {1, 8, 16}) {
      const TileConfig c = default_config(s, h200, KernelFamily::kSm80Gemm, {m, 5760, 2880});
      EXPECT_EQ(c.decode, 1) << m;
      EXPECT_EQ(c.block_m, m <= 8 ? 8 : 16) << m;
      EXPECT_TRUE(check_config(s, h200, KernelFamily::kSm80Gemm, c).ok()) << c.to_string();
    }
    EXPECT_EQ(default_config(s, h200, KernelFamily::kSm80Gemm, {24, 5760, 2880}).decode, 0);
  }
  auto msg = [&](const TileConfig& c) { return check_config(mx, h200, KernelFamily::kSm80Gemm, c).message(); };
  EXPECT_THAT(msg(decode_cfg(8, 32, 64, 4)), HasSubstr("block_k=64: must be 128 or 256"));
  EXPECT_THAT(msg(decode_cfg(64, 32, 128, 4)), HasSubstr("block_m=64 is out of range (8..32)"));
  EXPECT_THAT(msg(decode_cfg(24, 32, 128, 4)), HasSubstr("must be 8, 16 or 32"));
  EXPECT_THAT(msg(decode_cfg(8, 40, 128, 4)), HasSubstr("multiple of 16"));
  EXPECT_THAT(msg(decode_cfg(32, 64, 256, 4)), HasSubstr("registers per thread"));
  // 4-bit weights with f16 X, FP8 X or a gate|up epilogue are not the decode kernel's.
  EXPECT_FALSE(decode_w4_supports(spec_of("gemm a=f16 b=mxfp4 out=bf16"), h200));
  EXPECT_FALSE(decode_w4_supports(spec_of("gemm a=e4m3:m b=mxfp4 out=bf16"), h200));
  EXPECT_FALSE(decode_w4_supports(
      spec_of("gemm a=bf16 b=mxfp4 out=bf16 gate_up=interleaved epilogue=\"out = silu(gate) * up\""), h200));
  EXPECT_EQ(smem_bytes(mx, decode_cfg(16, 32, 128, 4)), 4 * 32 * 16 * 4);  // f32 [warps][block_n][block_m]
}

TileConfig wg_cfg(int bm, int bk, int warps, int in_flight = 2) {
  TileConfig c = decode_cfg(bm, 64, bk, warps, in_flight);
  c.decode = 2;
  return c;
}

TEST(DecodeConfigTest, WarpgroupDecodeRules) {
  const Arch h200{9, 0, true};
  const KernelSpec fp8 = spec_of("gemm a=e4m3:tensor b=e4m3:tensor out=bf16");
  auto msg = [&](const KernelSpec& s, const TileConfig& c, const Arch& a) {
    return check_config(s, a, KernelFamily::kSm80Gemm, c).message();
  };
  for (const char* text : {"gemm a=e4m3:tensor b=e4m3:tensor out=bf16", "gemm a=e4m3:m b=e5m2:n out=f32",
                           "gemm a=e5m2 b=e4m3:n out=f16 epilogue=\"out = acc + bias[n]\""}) {
    for (const TileConfig& c : {wg_cfg(8, 128, 4, 1), wg_cfg(16, 256, 8), wg_cfg(16, 512, 4, 1), wg_cfg(8, 256, 16, 1)})
      EXPECT_TRUE(check_config(spec_of(text), h200, KernelFamily::kSm80Gemm, c).ok())
          << text << " " << c.to_string() << ": " << msg(spec_of(text), c, h200);
  }
  EXPECT_THAT(msg(fp8, wg_cfg(16, 256, 8), Arch{9, 0, false}), HasSubstr("wgmma needs sm_90a"));
  EXPECT_THAT(msg(fp8, wg_cfg(16, 256, 8), Arch{8, 9, false}), HasSubstr("wgmma needs sm_90a"));
  for (const char* text : {"gemm a=bf16 b=bf16 out=bf16", "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16",
                           "grouped_gemm[experts=8,layout=offsets] a=e4m3:m b=e4m3:n out=bf16"})
    EXPECT_THAT(msg(spec_of(text), wg_cfg(16, 256, 8), h200), HasSubstr("two FP8 operands with tensor or m / n")) << text;
  TileConfig narrow = wg_cfg(16, 256, 8);
  narrow.block_n = 32;
  EXPECT_THAT(msg(fp8, narrow, h200), HasSubstr("block_n=32 is out of range (64)"));
  EXPECT_THAT(msg(fp8, wg_cfg(16, 256, 6), h200), HasSubstr("whole warpgroups"));
  EXPECT_THAT(msg(fp8, wg_cfg(16, 192, 8), h200), HasSubstr("block_k=192"));
  EXPECT_THAT(msg(fp8, wg_cfg(16, 512, 16), h200), HasSubstr("registers per thread"));
  // Shared memory: two X buffers and the partials per warpgroup, plus the alignment slack.
  EXPECT_EQ(smem_bytes(fp8, wg_cfg(16, 256, 8)), 2 * 2 * 256 * 16 + 2 * 64 * 16 * 4 + 1024);
  const LaunchShape ls = launch_shape(fp8, KernelFamily::kSm80Gemm, wg_cfg(16, 256, 8), {16, 8192, 8192});
  EXPECT_EQ(ls.grid_x, 128u);
  EXPECT_EQ(ls.block_x, 256u);
}

// The check's allowance: the format's base, more where wgmma accumulates FP8 (sm90; warpgroup decode, per
// promoted step of block_k); the mma.sync decode kernel accumulates in f32 and keeps the base.
TEST(DecodeConfigTest, CheckToleranceFollowsTheKernel) {
  const KernelSpec fp8 = spec_of("gemm a=e4m3:tensor b=e4m3:tensor out=f32");
  EXPECT_EQ(kernel_check_tolerance(fp8, KernelFamily::kSm80Gemm, decode_cfg(16, 32, 256, 8), 8192, 1e-5), 1e-5);
  EXPECT_DOUBLE_EQ(kernel_check_tolerance(fp8, KernelFamily::kSm80Gemm, wg_cfg(16, 256, 8), 8192, 1e-5), 1e-3);
  EXPECT_DOUBLE_EQ(kernel_check_tolerance(fp8, KernelFamily::kSm80Gemm, wg_cfg(16, 128, 8), 8192, 1e-5), 5e-4);
  EXPECT_EQ(kernel_check_tolerance(fp8, KernelFamily::kSm80Gemm, wg_cfg(16, 128, 8), 8192, 8e-3), 8e-3);
  const TileConfig tiled = config(128, 256, 128, 4, 8, 1);
  EXPECT_EQ(kernel_check_tolerance(fp8, KernelFamily::kSm90Gemm, tiled, 8192, 1e-5),
            sm90_check_tolerance(fp8, tiled, 8192, 1e-5));
}

TEST(DecodeConfigTest, LaunchShapeAndSharedMemory) {
  const KernelSpec spec = spec_of("gemm a=bf16 b=bf16 out=bf16");
  const TileConfig c = decode_cfg(8, 32, 128, 8);
  const LaunchShape ls = launch_shape(spec, KernelFamily::kSm80Gemm, c, {1, 8192, 8192});
  EXPECT_EQ(ls.grid_x, 256u);
  EXPECT_EQ(ls.block_x, 256u);
  EXPECT_EQ(ls.dynamic_smem, 8 * 32 * 8 * 4);  // f32 [warps][block_n][block_m]
  EXPECT_EQ(smem_bytes(spec, c), 8 * 32 * 8 * 4);
  // A second token tile and a partial last row block.
  EXPECT_EQ(launch_shape(spec, KernelFamily::kSm80Gemm, c, {9, 8193, 8192}).grid_x, 2u * 257u);
}

}  // namespace
}  // namespace kiln
