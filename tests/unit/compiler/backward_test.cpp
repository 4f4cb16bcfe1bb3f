// unit tier: backward passes (dgrad / wgrad; modes in docs/numerics.md §7): the mode= attribute through
// the DSL, JSON and SpecBuilder for every pass x operand pairing; the GEMM each pass computes
// (compiler/plan/gemm_view.hpp); which backward specs the planner takes on sm_90a and why it refuses the
// rest; row alignment and the sm90 family's backward config rules; every bucket of a backward plan
// (configs that pass check_config, wgrad grids independent of M); the emitted operand-major constants;
// and the CPU reference of both passes against a hand-written loop. No CUDA.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "compiler/emit/emit.hpp"
#include "compiler/numerics/fp8.hpp"
#include "compiler/numerics/reference_gemm.hpp"
#include "compiler/plan/gemm_view.hpp"
#include "compiler/plan/gpus.hpp"
#include "compiler/plan/planner.hpp"
#include "compiler/plan/sm90_plan.hpp"
#include "compiler/spec/spec.hpp"
#include "compiler/plan/launch_rule.hpp"
#include "tests/common/tile_configs.hpp"

namespace kiln {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

KernelSpec spec_of(const std::string& text) {
  auto r = parse_spec(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().to_string();
  return r.ok() ? *r : KernelSpec{};
}

Arch arch_of(std::string_view name) {
  auto r = parse_arch(name);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? *r : Arch{};
}

Arch h200() { return arch_with_gpu(*parse_arch("sm_90a"), *find_gpu("h200")); }

// The INVALID_ARGUMENT message of a status that must fail so.
std::string invalid(const Status& s, const std::string& what) {
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << what << ": " << s.to_string();
  return s.message();
}

const BackwardMode kModes[] = {BackwardMode::kHighPrecision, BackwardMode::kDequantized,
                               BackwardMode::kQuantized};

// ---- mode= ---------------------------------------------------------------------------------------

TEST(BackwardModeTest, EveryPairingRoundTripsThroughTextJsonAndBuilder) {
  int valid = 0;
  for (const char* pass : {"dgrad", "wgrad"}) {
    for (const char* a : {"bf16", "e4m3:tensor", "mxfp8"}) {
      for (const char* b : {"bf16", "mxfp4", "nvfp4", "e4m3:block128x128"}) {
        const std::string text = std::string("gemm a=") + a + " b=" + b + " out=bf16 pass=" + pass;
        const bool a_hp = std::string(a) == "bf16", b_hp = std::string(b) == "bf16";
        if (!a_hp && b_hp) {  // a quantized dY with a bf16 operand: no mode computes it
          EXPECT_THAT(invalid(parse_spec(text).status(), text), HasSubstr("no backward mode")) << text;
          continue;
        }
        ++valid;
        const BackwardMode want = a_hp && b_hp ? BackwardMode::kHighPrecision
                                  : a_hp       ? BackwardMode::kDequantized
                                               : BackwardMode::kQuantized;
        const KernelSpec s = spec_of(text);
        ASSERT_TRUE(backward_mode(s).ok()) << text;
        EXPECT_EQ(*backward_mode(s), want) << text;
        EXPECT_THAT(print_spec(s), Not(HasSubstr("mode"))) << text;
        EXPECT_EQ(spec_of(print_spec(s)), s) << text;
        const nlohmann::json j = spec_to_json(s);
        EXPECT_EQ(j.value("mode", std::string()), backward_mode_name(want)) << text;
        auto back = spec_from_json(j);
        ASSERT_TRUE(back.ok()) << text << ": " << back.status().to_string();
        EXPECT_EQ(*back, s) << text;
        for (BackwardMode m : kModes) {
          const std::string stated = text + " mode=" + backward_mode_name(m);
          nlohmann::json jm = j;
          jm["mode"] = backward_mode_name(m);
          auto built = SpecBuilder()
                           .pass(s.pass)
                           .a(s.a.format, s.a.scale, s.a.scale_type)
                           .b(s.b.format, s.b.scale, s.b.scale_type)
                           .out(s.out.format)
                           .mode(m)
                           .build();
          if (m == want) {
            EXPECT_EQ(spec_of(stated), s) << stated;
            auto from_json = spec_from_json(jm);
            EXPECT_TRUE(from_json.ok() && *from_json == s) << stated;
            EXPECT_TRUE(built.ok() && *built == s) << stated << ": " << built.status().to_string();
          } else {
            EXPECT_THAT(invalid(parse_spec(stated).status(), stated), HasSubstr("does not match"));
            EXPECT_THAT(invalid(spec_from_json(jm).status(), stated), HasSubstr("does not match"));
            EXPECT_THAT(invalid(built.status(), stated), HasSubstr("does not match"));
          }
        }
      }
    }
  }
  EXPECT_EQ(valid, 20);  // per pass: bf16 a x 4 b, and 2 quantized a x 3 quantized b
}

TEST(BackwardModeTest, ModeAppliesToBackwardSpecsOnly) {
  const KernelSpec fprop = spec_of("gemm a=bf16 b=bf16 out=bf16");
  EXPECT_EQ(backward_mode(fprop).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(backward_mode(spec_of("quantize a=bf16 out=e4m3:tensor")).status().code(),
            StatusCode::kInvalidArgument);
  const char* hint = "applies to pass=dgrad and pass=wgrad";
  EXPECT_THAT(invalid(parse_spec("gemm a=bf16 b=bf16 out=bf16 mode=high_precision").status(), "fprop"),
              HasSubstr(hint));
  EXPECT_THAT(invalid(parse_spec("quantize a=bf16 out=e4m3:tensor mode=quantized").status(), "quantize"),
              HasSubstr(hint));
  nlohmann::json j = spec_to_json(fprop);
  EXPECT_FALSE(j.contains("mode"));
  j["mode"] = "high_precision";
  EXPECT_THAT(invalid(spec_from_json(j).status(), "fprop json"), HasSubstr(hint));
  auto built = SpecBuilder()
                   .a(Format::kBf16)
                   .b(Format::kBf16)
                   .out(Format::kBf16)
                   .mode(BackwardMode::kHighPrecision)
                   .build();
  EXPECT_THAT(invalid(built.status(), "fprop builder"), HasSubstr(hint));
  EXPECT_STREQ(backward_mode_name(BackwardMode::kHighPrecision), "high_precision");
  EXPECT_STREQ(backward_mode_name(BackwardMode::kDequantized), "dequantized");
  EXPECT_STREQ(backward_mode_name(BackwardMode::kQuantized), "quantized");
}

// ---- the GEMM of each pass -----------------------------------------------------------------------

TEST(GemmViewTest, EachPassNamesItsGemmAndTensorShapes) {
  const ProblemSizes sz{3, 5, 7};  // M, N, K
  struct Want {
    Pass pass;
    int64_t m, n, k;
    bool a_mn, b_mn, red;
    int64_t a[2], b[2], out[2];
  };
  const Want wants[] = {{Pass::kFprop, 3, 5, 7, false, false, false, {3, 7}, {5, 7}, {3, 5}},
                        {Pass::kDgrad, 3, 7, 5, false, true, false, {3, 5}, {5, 7}, {3, 7}},
                        {Pass::kWgrad, 5, 7, 3, true, true, true, {3, 5}, {3, 7}, {5, 7}}};
  for (const Want& w : wants) {
    const GemmView v = gemm_view(w.pass, sz);
    const char* p = pass_name(w.pass);
    EXPECT_EQ(v.m, w.m) << p;
    EXPECT_EQ(v.n, w.n) << p;
    EXPECT_EQ(v.k, w.k) << p;
    EXPECT_EQ(v.a_mn_major, w.a_mn) << p;
    EXPECT_EQ(v.b_mn_major, w.b_mn) << p;
    EXPECT_EQ(v.m_is_reduction, w.red) << p;
    KernelSpec s = spec_of("gemm a=bf16 b=bf16 out=bf16");
    s.pass = w.pass;
    EXPECT_EQ(gemm_sizes(s, sz), (ProblemSizes{w.m, w.n, w.k})) << p;
    const PassShapes sh = pass_shapes(w.pass, sz);
    EXPECT_EQ(sh.a.rows, w.a[0]) << p;
    EXPECT_EQ(sh.a.cols, w.a[1]) << p;
    EXPECT_EQ(sh.b.rows, w.b[0]) << p;
    EXPECT_EQ(sh.b.cols, w.b[1]) << p;
    EXPECT_EQ(sh.out.rows, w.out[0]) << p;
    EXPECT_EQ(sh.out.cols, w.out[1]) << p;
  }
}

// A quantized wgrad reads the column-wise copies dYᵀ [N, M] and Xᵀ [K, M], both K-major for the kernel.
TEST(GemmViewTest, QuantizedWgradReadsColumnWiseCopies) {
  const ProblemSizes sz{3, 5, 7};  // M, N, K
  const KernelSpec q = spec_of("gemm a=e4m3:block1x128 b=e4m3:block1x128 out=f32 pass=wgrad");
  EXPECT_TRUE(wgrad_reads_columnwise(q));
  const GemmView v = gemm_view(q, sz);
  EXPECT_EQ(v.m, 5);
  EXPECT_EQ(v.n, 7);
  EXPECT_EQ(v.k, 3);
  EXPECT_FALSE(v.a_mn_major);
  EXPECT_FALSE(v.b_mn_major);
  EXPECT_TRUE(v.m_is_reduction);
  const PassShapes sh = pass_shapes(q, sz);
  EXPECT_EQ(sh.a.rows, 5);
  EXPECT_EQ(sh.a.cols, 3);
  EXPECT_EQ(sh.b.rows, 7);
  EXPECT_EQ(sh.b.cols, 3);
  EXPECT_EQ(sh.out.rows, 5);
  EXPECT_EQ(sh.out.cols, 7);
  // Modes high_precision and dequantized keep the forward's tensors.
  for (const char* text : {"gemm a=bf16 b=bf16 out=f32 pass=wgrad", "gemm a=bf16 b=e4m3:block1x128 out=f32 pass=wgrad",
                           "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16"}) {
    const KernelSpec s = spec_of(text);
    EXPECT_FALSE(wgrad_reads_columnwise(s)) << text;
    EXPECT_EQ(gemm_view(s, sz).a_mn_major, s.pass == Pass::kWgrad) << text;
  }
}

// ---- accumulate= ---------------------------------------------------------------------------------

// out += the product: backward passes only, through text, JSON and the builder; planned on both families.
TEST(BackwardAccumulateTest, ParsesPrintsAndValidates) {
  for (const char* text : {"gemm a=bf16 b=bf16 out=f32 pass=wgrad accumulate=true",
                           "grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16 pass=wgrad accumulate=true",
                           "gemm a=bf16 b=mxfp4 out=f32 pass=dgrad accumulate=true"}) {
    auto s = parse_spec(text);
    ASSERT_TRUE(s.ok()) << text << ": " << s.status().to_string();
    EXPECT_TRUE(s->accumulate) << text;
    EXPECT_EQ(print_spec(*s), text);
    const nlohmann::json j = spec_to_json(*s);
    EXPECT_EQ(j.at("accumulate"), true) << text;
    auto back = spec_from_json(j);
    ASSERT_TRUE(back.ok()) << back.status().to_string();
    EXPECT_EQ(*back, *s) << text;
  }
  auto off = parse_spec("gemm a=bf16 b=bf16 out=f32 pass=wgrad accumulate=false");
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->accumulate);
  EXPECT_EQ(print_spec(*off), "gemm a=bf16 b=bf16 out=f32 pass=wgrad");
  auto built = SpecBuilder().pass(Pass::kWgrad).a(Format::kBf16).b(Format::kBf16).out(Format::kF32).accumulate(true).build();
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  EXPECT_EQ(print_spec(*built), "gemm a=bf16 b=bf16 out=f32 pass=wgrad accumulate=true");
  EXPECT_THAT(invalid(parse_spec("gemm a=bf16 b=bf16 out=bf16 accumulate=true").status(), "fprop"),
              HasSubstr("applies to pass=dgrad and pass=wgrad"));
  EXPECT_THAT(invalid(parse_spec("quantize a=bf16 out=e4m3:block1x128 accumulate=true").status(), "quantize"),
              HasSubstr("not quantize"));
  EXPECT_THAT(invalid(parse_spec("gemm a=bf16 b=bf16 out=f32 pass=wgrad accumulate=yes").status(), "value"),
              HasSubstr("true, false"));
  nlohmann::json bad = spec_to_json(*off);
  bad["accumulate"] = "true";
  EXPECT_THAT(invalid(spec_from_json(bad).status(), "json"), HasSubstr("$.accumulate"));
}

TEST(BackwardAccumulateTest, PlansOnBothFamiliesAndTmaStoresAddIntoF32Only) {
  const Arch a = h200();
  const TileConfig tma = *config_from_name("bm128_bn128_bk64_s5_w8x1_g8_t");
  const KernelSpec f32 = spec_of("gemm a=bf16 b=bf16 out=f32 pass=wgrad accumulate=true");
  const KernelSpec b16 = spec_of("gemm a=bf16 b=bf16 out=bf16 pass=wgrad accumulate=true");
  EXPECT_TRUE(check_config(f32, a, tma).ok()) << check_config(f32, a, tma).to_string();
  EXPECT_THAT(invalid(check_config(b16, a, tma), "bf16 accumulate"), HasSubstr("TMA stores add into f32 outputs only"));
  for (const KernelSpec* s : {&f32, &b16}) {
    auto p = make_plan(*s, {4096, 7168, 2048}, a, PlanOptions{}, nullptr);
    ASSERT_TRUE(p.ok()) << print_spec(*s) << ": " << p.status().to_string();
    for (size_t b = 0; b < kMBuckets.size(); ++b) {
      EXPECT_EQ(p->families[b], KernelFamily::kSm90Gemm);
      EXPECT_TRUE(check_config(*s, a, p->families[b], p->configs[b]).ok()) << p->configs[b].to_string();
    }
    auto src = emit_kernel(*s, KernelFamily::kSm90Gemm, p->configs.back(), a);
    ASSERT_TRUE(src.ok()) << src.status().to_string();
    EXPECT_THAT(src->source, HasSubstr("kAccumulate = true"));
  }
  auto plain = emit_kernel(spec_of("gemm a=bf16 b=bf16 out=f32 pass=wgrad"), KernelFamily::kSm90Gemm, tma, a);
  ASSERT_TRUE(plain.ok());
  EXPECT_THAT(plain->source, Not(HasSubstr("kAccumulate")));
  // The portable family (other archs, mode dequantized) takes it too.
  for (const char* text : {"gemm a=bf16 b=mxfp4 out=f32 pass=dgrad accumulate=true",
                           "grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=f32 pass=wgrad accumulate=true"}) {
    const Arch sm80 = arch_of("sm_80");
    auto p = make_plan(spec_of(text), {4096, 2880, 2880}, sm80, PlanOptions{}, nullptr);
    ASSERT_TRUE(p.ok()) << text << ": " << p.status().to_string();
    EXPECT_EQ(p->family, KernelFamily::kSm80Gemm) << text;
    auto src = emit_kernel(spec_of(text), KernelFamily::kSm80Gemm, p->configs.back(), sm80);
    ASSERT_TRUE(src.ok()) << src.status().to_string();
    EXPECT_THAT(src->source, HasSubstr("kAccumulate = true"));
  }
}

// ---- planning ------------------------------------------------------------------------------------

// Every backward spec the sm90 family takes: two equal 16-bit operands, 16-bit or f32 out; dgrad and
// wgrad, dense and grouped.
std::vector<std::string> accepted_specs() {
  std::vector<std::string> out;
  for (const char* ab : {"a=bf16 b=bf16", "a=f16 b=f16"})
    for (const char* o : {"bf16", "f16", "f32"}) {
      const std::string tail = std::string(" ") + ab + " out=" + o;
      out.push_back("gemm" + tail + " pass=dgrad");
      out.push_back("gemm" + tail + " pass=wgrad");
      out.push_back("grouped_gemm[experts=8,layout=offsets]" + tail + " pass=dgrad");
      out.push_back("grouped_gemm[experts=4,layout=masked]" + tail + " pass=dgrad");
      out.push_back("grouped_gemm[experts=8,layout=offsets]" + tail + " pass=wgrad");
      out.push_back("grouped_gemm[experts=4,layout=masked]" + tail + " pass=wgrad");
    }
  return out;
}

std::string unsupported_reason(const std::string& text, std::string_view arch = "sm_90a") {
  auto f = select_family(spec_of(text), arch_of(arch));
  EXPECT_FALSE(f.ok()) << text << " on " << arch;
  if (f.ok()) return "";
  EXPECT_EQ(f.status().code(), StatusCode::kUnsupported) << f.status().to_string();
  return f.status().message();
}

TEST(BackwardPlanTest, Sm90FamilyTakesSixteenBitBackwardSpecs) {
  for (const std::string& text : accepted_specs()) {
    auto f = select_family(spec_of(text), arch_of("sm_90a"));
    ASSERT_TRUE(f.ok()) << text << ": " << f.status().to_string();
    EXPECT_EQ(*f, KernelFamily::kSm90Gemm) << text;
  }
}

// The portable family's backward kernel (compiler/plan/sm80_backward.hpp) takes what the sm90 family does
// not: other archs, KILN_FAMILY=sm80's share, and mode dequantized.
TEST(BackwardPlanTest, PortableFamilyTakesTheRest) {
  for (const char* arch : {"sm_80", "sm_89", "sm_90"}) {
    auto f = select_family(spec_of("gemm a=bf16 b=bf16 out=bf16 pass=dgrad"), arch_of(arch));
    ASSERT_TRUE(f.ok()) << arch << ": " << f.status().to_string();
    EXPECT_EQ(*f, KernelFamily::kSm80Gemm) << arch;
  }
  const char* portable[] = {
      "gemm a=bf16 b=mxfp4 out=bf16 pass=dgrad",
      "gemm a=bf16 b=nvfp4 out=f32 pass=dgrad",
      "grouped_gemm[experts=32,layout=offsets] a=bf16 b=mxfp4 out=bf16 pass=dgrad",
      "gemm a=bf16 b=mxfp8 out=bf16 pass=dgrad",
      "gemm a=bf16 b=e4m3:tensor out=bf16 pass=dgrad",
      "gemm a=bf16 b=e5m2:n out=bf16 pass=dgrad",
      "gemm a=bf16 b=e4m3:block128x128:ue8m0 out=bf16 pass=dgrad",
      "gemm a=bf16 b=e4m3:m out=f32 pass=wgrad",
      "gemm a=bf16 b=e4m3:block1x128 out=f32 pass=wgrad",
      "grouped_gemm[experts=4,layout=masked] a=bf16 b=mxfp8 out=bf16 pass=wgrad",
  };
  for (const char* text : portable) {
    auto f = select_family(spec_of(text), arch_of("sm_90a"));
    ASSERT_TRUE(f.ok()) << text << ": " << f.status().to_string();
    EXPECT_EQ(*f, KernelFamily::kSm80Gemm) << text;
  }
}

// Mode quantized: dense wgrad of two FP8 1x128 column-wise copies on the sm90 family (b's per-column
// scales), every bucket's default legal and staged; the rest refused with what does run.
TEST(BackwardPlanTest, QuantizedWgradPlansOnSm90a) {
  const Arch a = h200();
  for (const char* text : {"gemm a=e4m3:block1x128 b=e4m3:block1x128 out=f32 pass=wgrad",
                           "gemm a=e4m3:block1x128:ue8m0 b=e4m3:block1x128:ue8m0 out=bf16 pass=wgrad",
                           "gemm a=e5m2:block1x128 b=e4m3:block1x128 out=f32 pass=wgrad accumulate=true"}) {
    const KernelSpec s = spec_of(text);
    auto f = select_family(s, a);
    ASSERT_TRUE(f.ok()) << text << ": " << f.status().to_string();
    EXPECT_EQ(*f, KernelFamily::kSm90Gemm) << text;
    for (const ProblemSizes& sz : {ProblemSizes{4096, 7168, 2048}, ProblemSizes{8192, 512, 256}}) {
      auto p = make_plan(s, sz, a, PlanOptions{}, nullptr);
      ASSERT_TRUE(p.ok()) << text << ": " << p.status().to_string();
      for (size_t b = 0; b < kMBuckets.size(); ++b) {
        EXPECT_TRUE(check_config(s, a, p->families[b], p->configs[b]).ok()) << text << " bucket " << b;
        EXPECT_EQ(p->configs[b].block_k, 128) << text;
        EXPECT_TRUE(sm90_staged_scales(s, p->configs[b])) << text;
      }
    }
    auto k = emit_kernel(s, KernelFamily::kSm90Gemm, default_config(s, a, {4096, 7168, 2048}), a);
    ASSERT_TRUE(k.ok()) << text << ": " << k.status().to_string();
    EXPECT_THAT(k->source, HasSubstr("kScaleB = kiln_dev::Scale::kBlock1x128")) << text;
    EXPECT_THAT(k->source, Not(HasSubstr("kTransA"))) << text;
    EXPECT_THAT(k->source, Not(HasSubstr("kTransB"))) << text;
    EXPECT_THAT(k->source, HasSubstr("kStagedScales = true")) << text;
  }
  const KernelSpec q = spec_of("gemm a=e4m3:block1x128 b=e4m3:block1x128 out=f32 pass=wgrad");
  auto why = [&](const char* name) {
    return invalid(check_config(q, a, KernelFamily::kSm90Gemm, *config_from_name(name)), name);
  };
  EXPECT_THAT(why("bm128_bn192_bk128_s4_w8x1_g8"), HasSubstr("per-column scales of b"));
  EXPECT_THAT(why("bm128_bn128_bk256_s3_w8x1_g8"), HasSubstr("one 128-byte atom per stage"));
  EXPECT_THAT(why("bm192_bn128_bk128_s4_w12x1_g8"), HasSubstr("1 or 2 consumer warpgroups"));
  EXPECT_TRUE(check_config(q, a, KernelFamily::kSm90Gemm, *config_from_name("bm128_bn128_bk128_s6_w8x1_g8")).ok());
  EXPECT_TRUE(check_config(q, a, KernelFamily::kSm90Gemm, *config_from_name("bm128_bn128_bk128_s4_w4x2_g8")).ok());
  // The copies' blocks run along M (checked per run): N and K need no multiple of 128.
  for (const char* text : {"gemm a=e4m3:block1x128 b=e4m3:block1x128 out=f32 pass=wgrad",
                           "grouped_gemm[experts=8,layout=offsets] a=e4m3:block1x128 b=e4m3:block1x128 out=bf16 pass=wgrad"})
    EXPECT_TRUE(validate_sizes(spec_of(text), {300, 264, 136}).ok()) << text;
  // Grouped (the padded copies of quantize[experts=E,...] transpose=true): offsets and masked, without
  // clusters; its kernel reads both copies K-major through 2-D maps.
  for (const char* text :
       {"grouped_gemm[experts=8,layout=offsets] a=e4m3:block1x128 b=e4m3:block1x128 out=f32 pass=wgrad",
        "grouped_gemm[experts=32,layout=masked] a=e4m3:block1x128:ue8m0 b=e4m3:block1x128:ue8m0 out=bf16 pass=wgrad"}) {
    const KernelSpec g = spec_of(text);
    auto f = select_family(g, a);
    ASSERT_TRUE(f.ok()) << text << ": " << f.status().to_string();
    EXPECT_EQ(*f, KernelFamily::kSm90Gemm);
    auto p = make_plan(g, {8192, 2048, 1024}, a, PlanOptions{}, nullptr);
    ASSERT_TRUE(p.ok()) << text << ": " << p.status().to_string();
    for (size_t b = 0; b < kMBuckets.size(); ++b) {
      EXPECT_EQ(p->configs[b].cluster_m, 1) << text << " bucket " << b;
      EXPECT_TRUE(check_config(g, a, p->families[b], p->configs[b]).ok()) << text << " bucket " << b;
    }
    auto k = emit_kernel(g, KernelFamily::kSm90Gemm, default_config(g, a, {4096, 2048, 1024}), a);
    ASSERT_TRUE(k.ok()) << k.status().to_string();
    EXPECT_THAT(k->source, Not(HasSubstr("kTransA"))) << text;
  }
  EXPECT_THAT(invalid(check_config(spec_of("grouped_gemm[experts=8,layout=offsets] a=e4m3:block1x128 "
                                           "b=e4m3:block1x128 out=f32 pass=wgrad"),
                                   a, KernelFamily::kSm90Gemm, *config_from_name("bm128_bn128_bk128_s4_w8x1_g8_c2")),
                      "c2"),
              HasSubstr("grouped wgrad runs without clusters"));
  // Other archs and other quantized pairings (per-token scales on X's copy run along the reduction; 1x128
  // blocks on one copy only): refused, naming what runs.
  for (const char* text : {"gemm a=e4m3:block1x128 b=e4m3:m out=f32 pass=wgrad",
                           "gemm a=e4m3:m b=e4m3:block1x128 out=f32 pass=wgrad"}) {
    auto f = select_family(spec_of(text), a);
    ASSERT_FALSE(f.ok()) << text;
    EXPECT_EQ(f.status().code(), StatusCode::kUnsupported) << text;
    EXPECT_THAT(f.status().message(), HasSubstr("mode quantized runs on sm_90a: pass=wgrad (dense or grouped)")) << text;
    EXPECT_THAT(f.status().message(), HasSubstr("pass=dgrad with a=e4m3|e5m2:tensor|m|block1x128")) << text;
  }
  auto f90 = select_family(q, arch_of("sm_90"));
  ASSERT_FALSE(f90.ok());
  EXPECT_THAT(f90.status().message(), HasSubstr("on sm_90a"));
}

// Quantized dgrad: the forward's FP8 kernel on dY and W's transposed copy, which the plan records (its
// workspace bytes and the transpose's grid); W scaled per tensor or in 128x128 blocks, dense and grouped.
TEST(BackwardPlanTest, QuantizedDgradPlansOnSm90aThroughWsTransposedCopy) {
  const Arch a = h200();
  const ProblemSizes sz{4096, 7168, 2048};  // M, N, K
  const KernelSpec q = spec_of("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16 pass=dgrad");
  EXPECT_TRUE(dgrad_reads_transposed_w(q));
  const GemmView v = gemm_view(q, sz);
  EXPECT_EQ(v.m, 4096);
  EXPECT_EQ(v.n, 2048);
  EXPECT_EQ(v.k, 7168);
  EXPECT_FALSE(v.a_mn_major);
  EXPECT_FALSE(v.b_mn_major);  // Wᵀ [K, N] is K-major for the kernel
  const PassShapes sh = pass_shapes(q, sz);  // the caller's tensors are the forward's
  EXPECT_EQ(sh.b.rows, 7168);
  EXPECT_EQ(sh.b.cols, 2048);
  EXPECT_FALSE(dgrad_reads_transposed_w(spec_of("gemm a=bf16 b=e4m3:block128x128 out=bf16 pass=dgrad")));
  EXPECT_FALSE(dgrad_reads_transposed_w(spec_of("gemm a=e4m3:block1x128 b=e4m3:block1x128 out=f32 pass=wgrad")));

  for (const char* text : {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16 pass=dgrad",
                           "gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=f32 pass=dgrad",
                           "gemm a=e5m2:block1x128 b=e4m3:block128x128 out=f32 pass=dgrad accumulate=true",
                           "gemm a=e4m3:tensor b=e4m3:tensor out=bf16 pass=dgrad",
                           "gemm a=e5m2:m b=e4m3:tensor out=f16 pass=dgrad",
                           "grouped_gemm[experts=8,layout=offsets] a=e4m3:block1x128 b=e4m3:block128x128 out=bf16 pass=dgrad",
                           "grouped_gemm[experts=4,layout=masked] a=e4m3:tensor b=e4m3:tensor out=bf16 pass=dgrad"}) {
    const KernelSpec s = spec_of(text);
    auto f = select_family(s, a);
    ASSERT_TRUE(f.ok()) << text << ": " << f.status().to_string();
    EXPECT_EQ(*f, KernelFamily::kSm90Gemm) << text;
    const int64_t experts = s.op == Op::kGroupedGemm ? s.experts : 1;
    const bool blocks = s.b.scale == ScaleGranularity::kBlock128x128;
    const int64_t scale_bytes = !blocks ? 0 : s.b.scale_type == ScaleType::kUe8m0 ? 1 : 4;
    auto p = make_plan(s, sz, a, PlanOptions{}, nullptr);
    ASSERT_TRUE(p.ok()) << text << ": " << p.status().to_string();
    EXPECT_EQ(p->transposed_w.experts, experts) << text;
    EXPECT_EQ(p->transposed_w.bytes(), experts * 7168 * 2048 + (blocks ? experts * 16 * 56 * scale_bytes + 255 : 0) / 256 * 256)
        << text;
    const LaunchShape ls = p->transposed_w.shape();
    EXPECT_EQ(ls.grid_x, 16u) << text;  // K / 128
    EXPECT_EQ(ls.grid_y, 56u) << text;  // N / 128
    EXPECT_EQ(ls.grid_z, static_cast<unsigned>(experts)) << text;
    EXPECT_EQ(ls.block_x, 256u) << text;
    for (size_t b = 0; b < kMBuckets.size(); ++b) {
      // Every bucket on the sm90 family (no portable fallback computes mode quantized).
      EXPECT_EQ(p->families[b], KernelFamily::kSm90Gemm) << text << " bucket " << b;
      EXPECT_TRUE(check_config(s, a, p->families[b], p->configs[b]).ok()) << text << " bucket " << b;
    }
    auto k = emit_kernel(s, KernelFamily::kSm90Gemm, p->configs[bucket_index(4096)], a);
    ASSERT_TRUE(k.ok()) << text << ": " << k.status().to_string();
    EXPECT_THAT(k->source, Not(HasSubstr("kTransB"))) << text;
    auto t = emit_kernel(s, KernelFamily::kFp8Transpose, TileConfig{}, a);
    ASSERT_TRUE(t.ok()) << text << ": " << t.status().to_string();
    EXPECT_EQ(t->entry, "kiln_fp8_transpose");
    EXPECT_THAT(t->source, HasSubstr("kernels/fp8_transpose.cuh"));
  }
  // Plans of other passes and modes have no transposed copy.
  auto hp = make_plan(spec_of("gemm a=bf16 b=bf16 out=bf16 pass=dgrad"), sz, a, PlanOptions{}, nullptr);
  ASSERT_TRUE(hp.ok());
  EXPECT_EQ(hp->transposed_w.experts, 0);
  EXPECT_EQ(hp->transposed_w.bytes(), 0);
  // dY's 1x128 blocks and W's 128x128 blocks run along N, dgrad's reduction.
  const Status n_rule = can_implement(q, a, ProblemSizes{0, 7168 + 64, 2048});
  EXPECT_EQ(n_rule.code(), StatusCode::kInvalidArgument) << n_rule.to_string();
  EXPECT_THAT(n_rule.message(), AllOf(HasSubstr("N=7232"), HasSubstr("dgrad reduces over N")));
  EXPECT_TRUE(can_implement(spec_of("gemm a=e4m3:tensor b=e4m3:tensor out=bf16 pass=dgrad"), a,
                            ProblemSizes{0, 7168 + 64, 2048 + 16})
                  .ok());
  // A per-channel W (its scale runs along the reduction) is not transposed: its dgrad reads W's column-wise
  // copy (Mxfp8PassesAreTheForwardGemmOfColumnWiseCopies). sm_90 (no wgmma): refused.
  EXPECT_FALSE(dgrad_reads_transposed_w(spec_of("gemm a=e4m3:m b=e4m3:n out=bf16 pass=dgrad")));
  auto s90 = select_family(q, arch_of("sm_90"));
  ASSERT_FALSE(s90.ok());
  EXPECT_THAT(s90.status().message(), HasSubstr("on sm_90a"));
  // The transpose family takes FP8 weights only.
  auto bad = emit_kernel(spec_of("gemm a=bf16 b=bf16 out=bf16 pass=dgrad"), KernelFamily::kFp8Transpose, TileConfig{}, a);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("b=bf16"));
}

// A backward spec that runs the forward's kernel on copies (backward_runs_forward_gemm): the sm90 family in
// every bucket with a legal config, no transposed copy of W, no MXFP8 pre-pass, nothing read MN-major.
void expect_forward_kernel_on_copies(const char* text, const Arch& a, const ProblemSizes& sz) {
  const KernelSpec s = spec_of(text);
  EXPECT_TRUE(backward_runs_forward_gemm(s)) << text;
  EXPECT_FALSE(dgrad_reads_transposed_w(s)) << text;
  auto p = make_plan(s, sz, a, PlanOptions{}, nullptr);
  ASSERT_TRUE(p.ok()) << text << ": " << p.status().to_string();
  EXPECT_EQ(p->transposed_w.bytes(), 0) << text;
  EXPECT_EQ(p->prepass_plan, nullptr) << text;
  for (size_t b = 0; b < kMBuckets.size(); ++b) {
    EXPECT_EQ(p->families[b], KernelFamily::kSm90Gemm) << text << " bucket " << b;
    EXPECT_TRUE(check_config(s, a, p->families[b], p->configs[b]).ok()) << text << " bucket " << b;
  }
  auto k = emit_kernel(s, KernelFamily::kSm90Gemm, p->configs[bucket_index(4096)], a);
  ASSERT_TRUE(k.ok()) << text << ": " << k.status().to_string();
  EXPECT_THAT(k->source, AllOf(Not(HasSubstr("kTransA")), Not(HasSubstr("kTransB")))) << text;
}

// MXFP8 in mode quantized: the forward's MXFP8 kernel on the column-wise copies (W's for dgrad, dY's and X's
// for wgrad); no transposed copy in the workspace and no bf16 pre-pass.
TEST(BackwardPlanTest, Mxfp8PassesAreTheForwardGemmOfColumnWiseCopies) {
  const Arch a = h200();
  const ProblemSizes sz{4096, 2048, 7168};  // M, N, K
  const KernelSpec dg = spec_of("gemm a=mxfp8 b=mxfp8 out=bf16 pass=dgrad");
  EXPECT_TRUE(dgrad_reads_w_copy(dg));
  EXPECT_FALSE(dgrad_reads_transposed_w(dg));
  EXPECT_TRUE(backward_runs_forward_gemm(dg));
  const GemmView v = gemm_view(dg, sz);
  EXPECT_EQ(v.m, 4096);
  EXPECT_EQ(v.n, 7168);
  EXPECT_EQ(v.k, 2048);
  EXPECT_FALSE(v.b_mn_major);
  const PassShapes sh = pass_shapes(dg, sz);  // b is W's column-wise copy [K, N]
  EXPECT_EQ(sh.b.rows, 7168);
  EXPECT_EQ(sh.b.cols, 2048);
  const KernelSpec wg = spec_of("gemm a=mxfp8 b=mxfp8 out=f32 pass=wgrad");
  EXPECT_TRUE(wgrad_reads_columnwise(wg));
  EXPECT_TRUE(backward_runs_forward_gemm(wg));
  EXPECT_FALSE(backward_runs_forward_gemm(spec_of("gemm a=e4m3:block1x128 b=e4m3:block1x128 out=f32 pass=wgrad")));
  EXPECT_FALSE(backward_runs_forward_gemm(spec_of("gemm a=bf16 b=mxfp8 out=bf16 pass=dgrad")));
  EXPECT_FALSE(backward_runs_forward_gemm(spec_of("gemm a=mxfp8 b=mxfp8 out=bf16")));

  for (const char* text : {"gemm a=mxfp8 b=mxfp8 out=bf16 pass=dgrad", "gemm a=mxfp8 b=mxfp8 out=f32 pass=dgrad accumulate=true",
                           "grouped_gemm[experts=8,layout=offsets] a=mxfp8 b=mxfp8 out=bf16 pass=dgrad",
                           "grouped_gemm[experts=4,layout=masked] a=mxfp8 b=mxfp8 out=f16 pass=dgrad",
                           "gemm a=mxfp8 b=mxfp8 out=bf16 pass=wgrad", "gemm a=mxfp8 b=mxfp8 out=f32 pass=wgrad accumulate=true"})
    expect_forward_kernel_on_copies(text, a, sz);
  // dY's and the copy's 32-blocks run along N (dgrad's reduction); K is free for the copy.
  const Status n_rule = can_implement(dg, a, ProblemSizes{0, 2048 + 16, 7168});
  EXPECT_EQ(n_rule.code(), StatusCode::kInvalidArgument) << n_rule.to_string();
  EXPECT_THAT(n_rule.message(), AllOf(HasSubstr("N=2064"), HasSubstr("dgrad reduces over N")));
  EXPECT_TRUE(can_implement(dg, a, ProblemSizes{0, 2048, 7168 + 16}).ok());
  // wgrad: N and K free (M checked per run against the copies' columns).
  EXPECT_TRUE(can_implement(wg, a, ProblemSizes{0, 2048 + 16, 7168 + 16}).ok());
  // Grouped wgrad needs each expert's tokens in whole 32-blocks of the copies: refused with the reason.
  auto gw = select_family(spec_of("grouped_gemm[experts=8,layout=offsets] a=mxfp8 b=mxfp8 out=f32 pass=wgrad"), a);
  ASSERT_FALSE(gw.ok());
  EXPECT_EQ(gw.status().code(), StatusCode::kUnsupported);
  EXPECT_THAT(gw.status().message(), HasSubstr("wgrad dense"));
  // Per-tensor FP8 wgrad: the forward's FP8 kernel on dYᵀ [N, M] and Xᵀ [K, M] (the transposed per-tensor
  // codes), dense; grouped refused.
  for (const char* text : {"gemm a=e4m3:tensor b=e4m3:tensor out=f32 pass=wgrad", "gemm a=e5m2 b=e4m3 out=bf16 pass=wgrad",
                           "gemm a=e4m3 b=e4m3 out=f32 pass=wgrad accumulate=true"}) {
    const KernelSpec s = spec_of(text);
    EXPECT_TRUE(backward_runs_forward_gemm(s)) << text;
    auto p = make_plan(s, sz, a, PlanOptions{}, nullptr);
    ASSERT_TRUE(p.ok()) << text << ": " << p.status().to_string();
    EXPECT_EQ(p->families[bucket_index(4096)], KernelFamily::kSm90Gemm) << text;
    EXPECT_TRUE(check_config(s, a, p->families[bucket_index(4096)], p->configs[bucket_index(4096)]).ok()) << text;
  }
  EXPECT_FALSE(backward_runs_forward_gemm(spec_of("gemm a=e4m3:block1x128 b=e4m3:m out=f32 pass=wgrad")));
  // Per-row scales on the copies (a per-token forward's wgrad: dYᵀ and Xᵀ each scaled per row, a=...:m
  // b=...:n), dense; and a per-channel W's dgrad on its column-wise copy [K, N] with scales [K], dense and
  // grouped. Each is the forward's FP8 kernel: no transposed copy of W, nothing read MN-major.
  for (const char* text : {"gemm a=e4m3:m b=e4m3:n out=f32 pass=wgrad", "gemm a=e4m3:tensor b=e4m3:n out=bf16 pass=wgrad",
                           "gemm a=e4m3:m b=e4m3:n out=f32 pass=wgrad accumulate=true",
                           "gemm a=e4m3:m b=e4m3:n out=bf16 pass=dgrad", "gemm a=e4m3:block1x128 b=e4m3:n out=f32 pass=dgrad",
                           "grouped_gemm[experts=8,layout=offsets] a=e4m3:m b=e4m3:n out=bf16 pass=dgrad",
                           "grouped_gemm[experts=4,layout=masked] a=e4m3:tensor b=e4m3:n out=bf16 pass=dgrad accumulate=true"})
    expect_forward_kernel_on_copies(text, a, sz);
  const PassShapes pc = pass_shapes(spec_of("gemm a=e4m3:m b=e4m3:n out=bf16 pass=dgrad"), sz);  // W's copy [K, N]
  EXPECT_EQ(pc.b.rows, 7168);
  EXPECT_EQ(pc.b.cols, 2048);
  // dY's and the copy's rows hold N codes: N % 16; K is free.
  const Status pc_rows = can_implement(spec_of("gemm a=e4m3:m b=e4m3:n out=bf16 pass=dgrad"), a, ProblemSizes{0, 2056, 7168});
  EXPECT_EQ(pc_rows.code(), StatusCode::kInvalidArgument) << pc_rows.to_string();
  EXPECT_THAT(pc_rows.message(), HasSubstr("N=2056"));
  EXPECT_TRUE(can_implement(spec_of("gemm a=e4m3:m b=e4m3:n out=bf16 pass=dgrad"), a, ProblemSizes{0, 2048, 7176}).ok());
  auto gt = select_family(spec_of("grouped_gemm[experts=8,layout=offsets] a=e4m3 b=e4m3 out=f32 pass=wgrad"), a);
  ASSERT_FALSE(gt.ok());
  EXPECT_EQ(gt.status().code(), StatusCode::kUnsupported);
  // The forward keeps its pre-pass.
  auto fwd = make_plan(spec_of("gemm a=mxfp8 b=mxfp8 out=bf16"), sz, a, PlanOptions{}, nullptr);
  ASSERT_TRUE(fwd.ok());
  EXPECT_NE(fwd->prepass_plan, nullptr);
}

TEST(BackwardPlanTest, RefusesWithTheReason) {
  EXPECT_THAT(unsupported_reason("gemm a=e4m3:m b=e4m3:m out=f32 pass=wgrad"), HasSubstr("a per-token X is b=...:n"));
  EXPECT_THAT(unsupported_reason("gemm a=mxfp8 b=mxfp4 out=bf16 pass=wgrad"), HasSubstr("mode quantized"));
  EXPECT_THAT(unsupported_reason("gemm a=mxfp8 b=e4m3:block128x128 out=bf16 pass=dgrad"), HasSubstr("mode quantized"));
  EXPECT_THAT(unsupported_reason("gemm a=bf16 b=bf16 out=bf16 pass=dgrad epilogue=\"out = silu(acc)\""),
              HasSubstr("plain GEMM"));
  EXPECT_THAT(unsupported_reason("gemm a=bf16 b=f16 out=bf16 pass=dgrad"), HasSubstr("same 16-bit format"));
  EXPECT_THAT(unsupported_reason("gemm a=f16 b=mxfp4 out=bf16 pass=dgrad"), HasSubstr("dY must be bf16"));
  EXPECT_THAT(unsupported_reason("gemm a=bf16 b=e4m3:n out=bf16 pass=wgrad"), HasSubstr("m or block1x128"));
  EXPECT_THAT(unsupported_reason("gemm a=bf16 b=nvfp4 out=bf16 pass=wgrad"), HasSubstr("4-bit activations"));
}

// Config rules of the portable backward kernel, and a legal default in every bucket.
TEST(BackwardPlanTest, PortableConfigRules) {
  const Arch a = arch_of("sm_90a");
  const KernelSpec dgrad = spec_of("gemm a=bf16 b=mxfp4 out=bf16 pass=dgrad");
  const KernelSpec wgrad = spec_of("gemm a=bf16 b=bf16 out=f32 pass=wgrad");
  auto why = [&](const KernelSpec& s, const TileConfig& c) {
    const Status st = check_config(s, a, KernelFamily::kSm80Gemm, c);
    EXPECT_FALSE(st.ok()) << c.to_string();
    return st.message();
  };
  EXPECT_TRUE(check_config(dgrad, a, KernelFamily::kSm80Gemm, test::tile_config(16, 64, 32, 4, 1, 4)).ok());
  EXPECT_THAT(why(dgrad, test::tile_config(64, 96, 32, 4, 2, 2)), HasSubstr("32 or a multiple of 64"));
  EXPECT_THAT(why(dgrad, test::tile_config(64, 128, 16, 4, 2, 2)), HasSubstr("block_k"));
  EXPECT_THAT(why(wgrad, test::tile_config(16, 64, 32, 4, 1, 4)), HasSubstr("block_m is 32 or a multiple of 64"));
  EXPECT_THAT(why(dgrad, test::tile_config(128, 256, 32, 3, 2, 4)), HasSubstr("accumulators"));
  // decode = 1: the small-M dgrad kernel of 4-bit weights (kernels/sm80_decode_dgrad.cuh), its own ranges.
  auto decode = [](int bm, int bk, int stages, int warps) {
    TileConfig c = test::tile_config(bm, 128, bk, stages, 1, warps, 1);
    c.decode = 1;
    return c;
  };
  for (int bm : {8, 16, 32})
    for (int bk : {16, 32})
      EXPECT_TRUE(check_config(dgrad, a, KernelFamily::kSm80Gemm, decode(bm, bk, 1, 4)).ok()) << bm << " " << bk;
  EXPECT_THAT(why(dgrad, decode(64, 32, 1, 4)), HasSubstr("block_m=64 tokens: must be 8, 16 or 32"));
  EXPECT_THAT(why(dgrad, decode(16, 128, 1, 4)), HasSubstr("block_k=128 rows of W"));
  TileConfig narrow = decode(16, 32, 2, 4);
  narrow.block_n = 64;
  EXPECT_THAT(why(dgrad, narrow), HasSubstr("block_n=64 is out of range (128)"));
  EXPECT_THAT(why(dgrad, decode(32, 64, 2, 8)), HasSubstr("registers"));
  EXPECT_THAT(why(spec_of("gemm a=bf16 b=e4m3:n out=bf16 pass=dgrad"), decode(16, 32, 2, 4)),
              HasSubstr("MXFP4 or NVFP4 W"));
  EXPECT_THAT(why(wgrad, decode(16, 32, 2, 4)), HasSubstr("decode dgrad kernel takes pass=dgrad"));
  EXPECT_EQ(smem_bytes(dgrad, decode(16, 32, 2, 4)), 4 * 16 * 132 * 4);  // f32 [warps][block_m][128 + 4]
  // The heuristic: the decode kernel up to 32 rows per token tile of 4-bit weights, the tiled kernel above.
  EXPECT_EQ(default_config(dgrad, a, KernelFamily::kSm80Gemm, {16, 2880, 5760}).decode, 1);
  EXPECT_EQ(default_config(dgrad, a, KernelFamily::kSm80Gemm, {32, 2880, 5760}).block_m, 32);
  EXPECT_EQ(default_config(dgrad, a, KernelFamily::kSm80Gemm, {64, 2880, 5760}).decode, 0);
  EXPECT_EQ(default_config(spec_of("gemm a=bf16 b=mxfp8 out=bf16 pass=dgrad"), a, KernelFamily::kSm80Gemm,
                           {16, 2880, 5760}).decode, 0);
  // Shared memory: stages x (A tile + B's stored bytes) + the converted bf16 tile for a quantized b.
  EXPECT_EQ(smem_bytes(dgrad, test::tile_config(64, 128, 32, 4, 2, 2)), 4 * (64 * 64 + 32 * 64) + 32 * 128 * 2);
  EXPECT_EQ(smem_bytes(wgrad, test::tile_config(64, 128, 32, 4, 2, 2)), 4 * (64 * 64 + 32 * 256));
  for (const char* text : {"gemm a=bf16 b=mxfp4 out=bf16 pass=dgrad", "gemm a=bf16 b=e4m3:n out=f32 pass=dgrad",
                           "grouped_gemm[experts=32,layout=offsets] a=bf16 b=nvfp4 out=bf16 pass=dgrad",
                           "gemm a=bf16 b=mxfp8 out=f32 pass=wgrad",
                           "grouped_gemm[experts=8,layout=masked] a=f16 b=f16 out=f16 pass=wgrad"}) {
    const KernelSpec s = spec_of(text);
    for (int64_t m : kMBuckets) {
      const TileConfig c = default_config(s, a, KernelFamily::kSm80Gemm, {m, 2880, 5760});
      EXPECT_TRUE(check_config(s, a, KernelFamily::kSm80Gemm, c).ok()) << text << " m=" << m << " " << c.to_string();
    }
  }
}

TEST(BackwardPlanTest, RowsOfDyWAndXMustBeWholeSixteenBytes) {
  const Arch a = arch_of("sm_90a");
  const KernelSpec dgrad = spec_of("gemm a=bf16 b=bf16 out=bf16 pass=dgrad");
  const KernelSpec wgrad = spec_of("gemm a=f16 b=f16 out=f32 pass=wgrad");
  for (const KernelSpec& s : {dgrad, wgrad}) {
    EXPECT_TRUE(can_implement(s, a, {4096, 7168, 2048}).ok()) << print_spec(s);
    EXPECT_TRUE(can_implement(s, a, {1001, 64, 64}).ok()) << print_spec(s);  // M is free
  }
  EXPECT_EQ(invalid(can_implement(dgrad, a, {16, 1001, 64}), "dgrad N"),
            "operand a (dY): N=1001 elements is 2002 bytes per row; rows must be a multiple of 16 bytes "
            "(N % 8 == 0 for bf16)");
  EXPECT_THAT(invalid(can_implement(dgrad, a, {16, 64, 1001}), "dgrad K"),
              AllOf(HasSubstr("operand b (W)"), HasSubstr("K=1001"), HasSubstr("(K % 8 == 0 for bf16)")));
  EXPECT_THAT(invalid(can_implement(wgrad, a, {16, 1001, 64}), "wgrad N"),
              AllOf(HasSubstr("operand a (dY)"), HasSubstr("N=1001"), HasSubstr("(N % 8 == 0 for f16)")));
  EXPECT_THAT(invalid(can_implement(wgrad, a, {16, 64, 1001}), "wgrad K"),
              AllOf(HasSubstr("operand b (X)"), HasSubstr("K=1001"), HasSubstr("(K % 8 == 0 for f16)")));
}

TEST(BackwardPlanTest, ConfigsReadOneAtomPerStageAndWholeColumnChunks) {
  const Arch a = h200();
  const TileConfig two_atoms = *config_from_name("bm64_bn128_bk128_s4_w4x1_g8");
  const TileConfig n176 = *config_from_name("bm128_bn176_bk64_s4_w8x1_g8");
  for (const char* pass : {"dgrad", "wgrad"}) {
    const KernelSpec s = spec_of(std::string("gemm a=bf16 b=bf16 out=bf16 pass=") + pass);
    EXPECT_THAT(invalid(check_config(s, a, two_atoms), pass), HasSubstr("one 128-byte atom"));
    EXPECT_THAT(invalid(check_config(s, a, n176), pass), HasSubstr("chunks of 64"));
    PlanOptions o;
    o.config = two_atoms;
    EXPECT_EQ(make_plan(s, {4096, 7168, 2048}, a, o, nullptr).status().code(), StatusCode::kInvalidArgument);
  }
  // Grouped wgrad zeroes the rows past an expert's end in its own stages: no clusters.
  const TileConfig clustered = *config_from_name("bm128_bn256_bk64_s4_w8x1_g8_c2");
  const KernelSpec gw = spec_of("grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=f32 pass=wgrad");
  EXPECT_THAT(invalid(check_config(gw, a, clustered), "grouped wgrad"), HasSubstr("without clusters"));
  const KernelSpec gd = spec_of("grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16 pass=dgrad");
  EXPECT_TRUE(check_config(gd, a, clustered).ok()) << check_config(gd, a, clustered).to_string();
  const KernelSpec fprop = spec_of("gemm a=bf16 b=bf16 out=bf16");  // the forward takes both
  EXPECT_TRUE(check_config(fprop, a, two_atoms).ok()) << check_config(fprop, a, two_atoms).to_string();
  EXPECT_TRUE(check_config(fprop, a, n176).ok()) << check_config(fprop, a, n176).to_string();
}

bool same_shape(const LaunchShape& x, const LaunchShape& y) {
  return x.grid_x == y.grid_x && x.grid_y == y.grid_y && x.grid_z == y.grid_z && x.block_x == y.block_x &&
         x.dynamic_smem == y.dynamic_smem;
}

TEST(BackwardPlanTest, EveryBucketPassesCheckConfigAndWgradGridsDoNotDependOnM) {
  const Arch a = h200();
  const ProblemSizes sz{4096, 7168, 2048};
  for (const std::string& text : accepted_specs()) {
    const KernelSpec s = spec_of(text);
    auto p = make_plan(s, sz, a, PlanOptions{}, nullptr);
    ASSERT_TRUE(p.ok()) << text << ": " << p.status().to_string();
    EXPECT_EQ(p->family, KernelFamily::kSm90Gemm) << text;
    const bool wgrad = s.pass == Pass::kWgrad;
    for (size_t b = 0; b < kMBuckets.size(); ++b) {
      const int64_t m = kMBuckets[b];
      const std::string what = text + " bucket " + std::to_string(m) + " " + p->configs[b].to_string();
      EXPECT_EQ(p->families[b], KernelFamily::kSm90Gemm) << what;
      EXPECT_TRUE(check_config(s, a, p->families[b], p->configs[b]).ok())
          << what << ": " << check_config(s, a, p->families[b], p->configs[b]).to_string();
      const LaunchRule& r = p->launch[b];
      EXPECT_TRUE(same_shape(r.shape(m), launch_shape(s, p->families[b], p->configs[b], {m, sz.n, sz.k})))
          << what;
      if (wgrad) {
        // Grouped: every expert's N rows of dW tiled on their own, whatever M; no clusters.
        EXPECT_EQ(r.fixed_m, sz.n * (s.experts > 0 ? s.experts : 1)) << what;
        if (s.op == Op::kGroupedGemm) EXPECT_EQ(p->configs[b].cluster_m, 1) << what;
        EXPECT_TRUE(same_shape(r.shape(1), r.shape(8192))) << what;
      } else {
        EXPECT_EQ(r.fixed_m, 0) << what;
        EXPECT_GT(r.shape(8192).grid_x, r.shape(1).grid_x) << what;
      }
    }
  }
}

// ---- emission ------------------------------------------------------------------------------------

TEST(BackwardEmitTest, MnMajorOperandsAreNamedInTheConfig) {
  const Arch a = h200();
  struct Case {
    const char* text;
    bool trans_a, trans_b;
  };
  const Case cases[] = {
      {"gemm a=bf16 b=bf16 out=bf16", false, false},
      {"gemm a=bf16 b=bf16 out=bf16 pass=dgrad", false, true},
      {"grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16 pass=dgrad", false, true},
      {"gemm a=f16 b=f16 out=f32 pass=wgrad", true, true}};
  for (const Case& c : cases) {
    const KernelSpec s = spec_of(c.text);
    auto sm90 = emit_kernel(s, KernelFamily::kSm90Gemm, default_config(s, a, {4096, 7168, 2048}), a);
    auto ref = emit_kernel(s, KernelFamily::kReferenceGemm, TileConfig{}, a);
    ASSERT_TRUE(sm90.ok()) << c.text << ": " << sm90.status().to_string();
    ASSERT_TRUE(ref.ok()) << c.text << ": " << ref.status().to_string();
    for (const std::string* src : {&sm90->source, &ref->source}) {
      if (c.trans_a)
        EXPECT_THAT(*src, HasSubstr("kTransA = true")) << c.text;
      else
        EXPECT_THAT(*src, Not(HasSubstr("kTransA"))) << c.text;
      if (c.trans_b)
        EXPECT_THAT(*src, HasSubstr("kTransB = true")) << c.text;
      else
        EXPECT_THAT(*src, Not(HasSubstr("kTransB"))) << c.text;
    }
  }
  // Mode dequantized: the reference reads b in its stored format; f16 dY with a quantized b has no math.
  auto q = emit_kernel(spec_of("gemm a=bf16 b=e4m3:tensor out=bf16 pass=dgrad"), KernelFamily::kReferenceGemm,
                       TileConfig{}, a);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_THAT(q->source, HasSubstr("kTransB = true"));
  auto f16 = emit_kernel(spec_of("gemm a=f16 b=e4m3:tensor out=bf16 pass=dgrad"), KernelFamily::kReferenceGemm,
                         TileConfig{}, a);
  ASSERT_FALSE(f16.ok());
  EXPECT_EQ(f16.status().code(), StatusCode::kUnsupported);
}

// ---- the CPU reference ---------------------------------------------------------------------------

// dgrad: dX[i, j] = sum_r dY[i, r] W[r, j]; wgrad: dW[i, j] = sum_t dY[t, i] X[t, j]. Small integers, so
// every product and sum is exact in double and the comparison is bitwise.
template <typename T, typename Enc>
void check_reference(const char* fmt, Enc enc) {
  const int64_t M = 5, N = 7, K = 3, lda = N + 2, ldb = K + 1;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> d(-4, 4);
  std::vector<float> dy(M * lda, 99.0f), w(N * ldb, 99.0f), x(M * ldb, 99.0f);  // 99: padding
  for (int64_t i = 0; i < M; ++i)
    for (int64_t r = 0; r < N; ++r) dy[i * lda + r] = static_cast<float>(d(rng));
  for (int64_t r = 0; r < N; ++r)
    for (int64_t j = 0; j < K; ++j) w[r * ldb + j] = static_cast<float>(d(rng));
  for (int64_t t = 0; t < M; ++t)
    for (int64_t j = 0; j < K; ++j) x[t * ldb + j] = static_cast<float>(d(rng));
  auto stored = [&](const std::vector<float>& v) {
    std::vector<T> out;
    for (float f : v) out.push_back(enc(f));
    return out;
  };
  const std::vector<T> dy_s = stored(dy), w_s = stored(w), x_s = stored(x);
  for (const char* pass : {"dgrad", "wgrad"}) {
    const bool dgrad = std::string(pass) == "dgrad";
    const KernelSpec s = spec_of(std::string("gemm a=") + fmt + " b=" + fmt + " out=f32 pass=" + pass);
    const int64_t rows = dgrad ? M : N;
    std::vector<double> want(static_cast<size_t>(rows * K), 0.0), got;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < K; ++j)
        for (int64_t r = 0; r < (dgrad ? N : M); ++r)
          want[static_cast<size_t>(i * K + j)] +=
              dgrad ? double(dy[i * lda + r]) * w[r * ldb + j] : double(dy[r * lda + i]) * x[r * ldb + j];
    const T* b = dgrad ? w_s.data() : x_s.data();
    Status st = numerics::reference_gemm(s, M, N, K, dy_s.data(), lda, b, ldb, nullptr, nullptr, got);
    ASSERT_TRUE(st.ok()) << fmt << " " << pass << ": " << st.to_string();
    EXPECT_EQ(got, want) << fmt << " " << pass;
    st = numerics::reference_gemm(s, M, N, K, dy_s.data(), N - 1, b, ldb, nullptr, nullptr, got);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << fmt << " " << pass << " lda < N";
  }
}

TEST(BackwardReferenceTest, BothPassesMatchAHandWrittenLoop) {
  check_reference<float>("f32", [](float f) { return f; });
  check_reference<uint16_t>("bf16", [](float f) { return numerics::bf16_from_float(f); });
}

// ---- derive_backward --------------------------------------------------------------------------------

TEST(DeriveBackwardTest, HighPrecisionGivesBf16PassesThatPlanOnSm90a) {
  for (const char* fwd : {"gemm a=bf16 b=bf16 out=bf16", "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16",
                          "grouped_gemm[experts=8,layout=offsets] a=bf16 b=mxfp4 out=bf16",
                          "grouped_gemm[experts=4,layout=masked] a=mxfp8 b=mxfp8 out=f16"}) {
    auto b = derive_backward(spec_of(fwd));
    ASSERT_TRUE(b.ok()) << fwd << ": " << b.status().to_string();
    const KernelSpec f = spec_of(fwd);
    for (const KernelSpec* s : {&b->dgrad, &b->wgrad}) {
      EXPECT_EQ(s->op, f.op) << fwd;
      EXPECT_EQ(s->layout, f.layout) << fwd;
      EXPECT_EQ(s->experts, f.experts) << fwd;
      EXPECT_EQ(s->a.format, Format::kBf16) << fwd;
      EXPECT_EQ(s->b.format, Format::kBf16) << fwd;
      EXPECT_EQ(backward_mode(*s).value(), BackwardMode::kHighPrecision) << fwd;
    }
    EXPECT_EQ(b->dgrad.pass, Pass::kDgrad);
    EXPECT_EQ(b->dgrad.out.format, Format::kBf16);
    EXPECT_EQ(b->wgrad.pass, Pass::kWgrad);
    EXPECT_EQ(b->wgrad.out.format, Format::kF32);
    EXPECT_TRUE(select_family(b->dgrad, arch_of("sm_90a")).ok()) << print_spec(b->dgrad);
    auto wf = select_family(b->wgrad, arch_of("sm_90a"));
    ASSERT_TRUE(wf.ok()) << print_spec(b->wgrad) << ": " << wf.status().to_string();
    EXPECT_EQ(*wf, KernelFamily::kSm90Gemm) << print_spec(b->wgrad);
  }
  BackwardOptions o;
  o.grad = Format::kF16;
  o.wgrad_out = Format::kBf16;
  auto b = derive_backward(spec_of("gemm a=bf16 b=bf16 out=bf16"), o);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_EQ(print_spec(b->dgrad), "gemm a=f16 b=f16 out=f16 pass=dgrad");
  EXPECT_EQ(print_spec(b->wgrad), "gemm a=f16 b=f16 out=bf16 pass=wgrad");
}

TEST(DeriveBackwardTest, DequantizedReadsTheForwardsStoredOperands) {
  BackwardOptions o;
  o.mode = BackwardMode::kDequantized;
  const char* fwd = "grouped_gemm[experts=8,layout=offsets] a=bf16 b=nvfp4 out=bf16 e4m3_bound=256 nvfp4_global=expert";
  auto b = derive_backward(spec_of(fwd), o);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_EQ(b->dgrad.b, spec_of(fwd).b);
  EXPECT_EQ(b->dgrad.e4m3_bound, 256);
  EXPECT_EQ(b->dgrad.nvfp4_global, GlobalScale::kExpert);
  EXPECT_EQ(backward_mode(b->dgrad).value(), BackwardMode::kDequantized);
  // wgrad's b is the forward's bf16 X: the nvfp4 attributes do not carry over.
  EXPECT_EQ(b->wgrad.b.format, Format::kBf16);
  EXPECT_EQ(b->wgrad.e4m3_bound, 448);
  auto fp8 = derive_backward(spec_of("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16"), o);
  ASSERT_TRUE(fp8.ok()) << fp8.status().to_string();
  EXPECT_EQ(print_spec(fp8->dgrad), "gemm a=bf16 b=e4m3:block128x128 out=bf16 pass=dgrad");
  EXPECT_EQ(print_spec(fp8->wgrad), "gemm a=bf16 b=e4m3:block1x128 out=f32 pass=wgrad");
  // Both run on the portable backward kernel, on sm_80 too.
  for (const KernelSpec* s : {&fp8->dgrad, &fp8->wgrad, &b->dgrad})
    for (const char* arch : {"sm_80", "sm_90a"}) {
      auto f = select_family(*s, arch_of(arch));
      ASSERT_TRUE(f.ok()) << print_spec(*s) << " " << arch << ": " << f.status().to_string();
      EXPECT_EQ(*f, KernelFamily::kSm80Gemm) << print_spec(*s);
    }
  // Per-token FP8 X: wgrad's b takes granularity m.
  auto row = derive_backward(spec_of("gemm a=e4m3:m b=e4m3:n out=bf16"), o);
  ASSERT_TRUE(row.ok()) << row.status().to_string();
  EXPECT_EQ(print_spec(row->wgrad), "gemm a=bf16 b=e4m3:m out=f32 pass=wgrad");
}

// Mode quantized: FP8 forwards whose W transposes exactly. dgrad reads the forward's W with dY in e4m3 at
// the forward X's granularity; wgrad the column-wise copies (1x128 along the tokens).
TEST(DeriveBackwardTest, QuantizedFp8BlocksAndTensorScales) {
  BackwardOptions q;
  q.mode = BackwardMode::kQuantized;
  auto b = derive_backward(spec_of("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16"), q);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_EQ(print_spec(b->dgrad), "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16 pass=dgrad");
  EXPECT_EQ(print_spec(b->wgrad), "gemm a=e4m3:block1x128 b=e4m3:block1x128 out=f32 pass=wgrad");
  for (const KernelSpec* s : {&b->dgrad, &b->wgrad}) {
    EXPECT_EQ(backward_mode(*s).value(), BackwardMode::kQuantized);
    auto f = select_family(*s, arch_of("sm_90a"));
    ASSERT_TRUE(f.ok()) << print_spec(*s) << ": " << f.status().to_string();
    EXPECT_EQ(*f, KernelFamily::kSm90Gemm);
  }
  auto g = derive_backward(
      spec_of("grouped_gemm[experts=8,layout=offsets] a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=bf16"), q);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(print_spec(g->dgrad),
            "grouped_gemm[experts=8,layout=offsets] a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=bf16 pass=dgrad");
  EXPECT_TRUE(select_family(g->dgrad, arch_of("sm_90a")).ok());
  // Grouped quantized wgrad reads the grouped quantizer's padded copies.
  EXPECT_EQ(print_spec(g->wgrad),
            "grouped_gemm[experts=8,layout=offsets] a=e4m3:block1x128:ue8m0 b=e4m3:block1x128:ue8m0 out=f32 pass=wgrad");
  EXPECT_TRUE(select_family(g->wgrad, arch_of("sm_90a")).ok());
  auto t = derive_backward(spec_of("gemm a=e4m3:tensor b=e4m3:tensor out=bf16"), q);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(print_spec(t->dgrad), "gemm a=e4m3 b=e4m3 out=bf16 pass=dgrad");  // tensor scales are implied
  EXPECT_EQ(print_spec(t->wgrad), "gemm a=e4m3 b=e4m3 out=f32 pass=wgrad");
  // MXFP8: dY in MXFP8, dgrad on W's column-wise copy, wgrad on the copies of dY and X (dense planned).
  auto mx = derive_backward(spec_of("gemm a=mxfp8 b=mxfp8 out=bf16"), q);
  ASSERT_TRUE(mx.ok()) << mx.status().to_string();
  EXPECT_EQ(print_spec(mx->dgrad), "gemm a=mxfp8 b=mxfp8 out=bf16 pass=dgrad");
  EXPECT_EQ(print_spec(mx->wgrad), "gemm a=mxfp8 b=mxfp8 out=f32 pass=wgrad");
  EXPECT_TRUE(dgrad_reads_w_copy(mx->dgrad));
  for (const KernelSpec* s : {&mx->dgrad, &mx->wgrad}) EXPECT_TRUE(select_family(*s, arch_of("sm_90a")).ok()) << print_spec(*s);
  // Mixed formats and a bf16 X: refused with the reason.
  for (const char* fwd : {"gemm a=mxfp8 b=e4m3:n out=bf16", "gemm a=bf16 b=mxfp4 out=bf16", "gemm a=e4m3:m b=mxfp4 out=bf16"}) {
    auto r = derive_backward(spec_of(fwd), q);
    EXPECT_EQ(r.status().code(), StatusCode::kUnsupported) << fwd;
    EXPECT_THAT(r.status().message(), HasSubstr("derived for FP8 forwards")) << fwd;
  }
}

// Mode quantized for every FP8 forward pairing: a per-channel W is read through its column-wise copy
// (b=...:n in the dgrad spec), a per-token X through Xᵀ scaled per row (b=...:n in the wgrad spec); every
// derived spec plans on sm_90a, dense and grouped dgrad, dense wgrad (grouped wgrad of per-row copies is
// refused with the reason, grouped 1x128 planned).
TEST(DeriveBackwardTest, QuantizedEveryFp8Pairing) {
  BackwardOptions q;
  q.mode = BackwardMode::kQuantized;
  auto row = derive_backward(spec_of("gemm a=e4m3:m b=e4m3:n out=bf16"), q);
  ASSERT_TRUE(row.ok()) << row.status().to_string();
  EXPECT_EQ(print_spec(row->dgrad), "gemm a=e4m3:m b=e4m3:n out=bf16 pass=dgrad");
  EXPECT_EQ(print_spec(row->wgrad), "gemm a=e4m3:m b=e4m3:n out=f32 pass=wgrad");
  EXPECT_TRUE(dgrad_reads_w_copy(row->dgrad));
  EXPECT_TRUE(backward_runs_forward_gemm(row->wgrad));
  const Arch h = arch_of("sm_90a");
  for (const char* a : {"e4m3:tensor", "e4m3:m", "e4m3:block1x128", "e5m2:m", "e4m3:block1x128:ue8m0"})
    for (const char* b : {"e4m3:tensor", "e4m3:n", "e4m3:block128x128"}) {
      const std::string fwd = std::string("gemm a=") + a + " b=" + b + " out=bf16";
      auto d = derive_backward(spec_of(fwd), q);
      ASSERT_TRUE(d.ok()) << fwd << ": " << d.status().to_string();
      for (const KernelSpec* s : {&d->dgrad, &d->wgrad}) {
        EXPECT_EQ(backward_mode(*s).value(), BackwardMode::kQuantized) << fwd;
        auto f = select_family(*s, h);
        EXPECT_TRUE(f.ok()) << print_spec(*s) << ": " << f.status().to_string();
      }
      EXPECT_EQ(dgrad_reads_w_copy(d->dgrad), std::string(b) == "e4m3:n") << fwd;
    }
  auto g = derive_backward(spec_of("grouped_gemm[experts=8,layout=masked] a=e4m3:m b=e4m3:n out=bf16"), q);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_TRUE(select_family(g->dgrad, h).ok()) << print_spec(g->dgrad);
  auto gw = select_family(g->wgrad, h);
  ASSERT_FALSE(gw.ok()) << print_spec(g->wgrad);
  EXPECT_EQ(gw.status().code(), StatusCode::kUnsupported);
  EXPECT_THAT(gw.status().message(), HasSubstr("pass=wgrad dense with a=e4m3|e5m2:tensor|m"));
}

TEST(DeriveBackwardTest, RefusesWhatItDoesNotDerive) {
  auto ep = derive_backward(spec_of("gemm a=bf16 b=bf16 out=bf16 epilogue=\"out = silu(acc)\""));
  EXPECT_EQ(ep.status().code(), StatusCode::kUnsupported);
  EXPECT_THAT(ep.status().message(), HasSubstr("epilogue"));
  EXPECT_EQ(derive_backward(spec_of("gemm a=bf16 b=bf16 out=bf16 pass=dgrad")).status().code(),
            StatusCode::kInvalidArgument);
  BackwardOptions bad;
  bad.grad = Format::kF32;
  EXPECT_EQ(derive_backward(spec_of("gemm a=bf16 b=bf16 out=bf16"), bad).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kiln
