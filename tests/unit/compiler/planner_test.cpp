// unit tier: make_plan (compiler/plan/planner.hpp) — every bucket's family, config and launch rule in one
// place; tunings through TunedConfigSource, pinned configs through PlanOptions; the epilogue parsed once.
#include <gtest/gtest.h>

#include "compiler/emit/emit.hpp"
#include "compiler/plan/gpus.hpp"
#include "compiler/plan/planner.hpp"
#include "compiler/plan/sm90_plan.hpp"
#include "compiler/spec/spec.hpp"

namespace kiln {
namespace {

KernelSpec spec_of(const char* text) {
  auto s = parse_spec(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status().to_string();
  return *s;
}

Arch h200() { return arch_with_gpu(*parse_arch("sm_90a"), *find_gpu("h200")); }

// A tuning source that knows one bucket.
class OneBucket final : public TunedConfigSource {
 public:
  OneBucket(int64_t m, TileConfig cfg, KernelFamily family) : m_(m), cfg_(cfg), family_(family) {}
  void apply(const KernelSpec&, KernelFamily, const ProblemSizes&, const Arch&, BucketChoices& buckets) override {
    ++calls;
    buckets[bucket_index(m_)] = BucketChoice{cfg_, family_, ConfigSource::kMemory};
  }
  int calls = 0;

 private:
  int64_t m_;
  TileConfig cfg_;
  KernelFamily family_;
};

TEST(PlannerTest, HeuristicBucketsAndTheirLaunchRules) {
  const KernelSpec s = spec_of("gemm a=bf16 b=bf16 out=bf16");
  const Arch a = h200();
  auto p = make_plan(s, {0, 7168, 2048}, a, PlanOptions{}, nullptr);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->family, KernelFamily::kSm90Gemm);
  EXPECT_EQ(p->canonical, print_spec(s));
  for (size_t b = 0; b < kMBuckets.size(); ++b) {
    const int64_t m = kMBuckets[b];
    EXPECT_EQ(p->sources[b], ConfigSource::kHeuristic);
    if (m <= 16) {  // dense decode buckets run the portable family's decode kernel
      EXPECT_EQ(p->families[b], KernelFamily::kSm80Gemm) << m;
      EXPECT_EQ(p->configs[b], default_config(s, a, KernelFamily::kSm80Gemm, {m, 7168, 2048})) << m;
    } else {
      EXPECT_EQ(p->families[b], KernelFamily::kSm90Gemm) << m;
      EXPECT_EQ(p->configs[b], default_config(s, a, {m, 7168, 2048})) << m;
    }
    const LaunchShape want = launch_shape(s, p->families[b], p->configs[b], {m, 7168, 2048});
    const LaunchShape got = p->launch[b].shape(m);
    EXPECT_EQ(got.grid_x, want.grid_x) << m;
    EXPECT_EQ(got.grid_y, want.grid_y) << m;
    EXPECT_EQ(got.block_x, want.block_x) << m;
    EXPECT_EQ(got.dynamic_smem, want.dynamic_smem) << m;
  }
  EXPECT_FALSE(p->epilogue.has_value());
  EXPECT_EQ(p->prepass_plan, nullptr);
}

TEST(PlannerTest, TuningsReplaceTheirBucketsAndKeepTheirFamily) {
  const KernelSpec s = spec_of("gemm a=bf16 b=bf16 out=bf16");
  const Arch a = h200();
  // A tuned sm90 config for bucket 8 (a decode bucket by default): it stays on the sm90 family.
  const TileConfig tuned = default_config(s, a, {64, 7168, 2048});
  OneBucket source(8, tuned, KernelFamily::kSm90Gemm);
  auto p = make_plan(s, {0, 7168, 2048}, a, PlanOptions{}, &source);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(source.calls, 1);
  const int b8 = bucket_index(8);
  EXPECT_EQ(p->configs[b8], tuned);
  EXPECT_EQ(p->families[b8], KernelFamily::kSm90Gemm);
  EXPECT_EQ(p->sources[b8], ConfigSource::kMemory);
  EXPECT_EQ(p->families[bucket_index(4)], KernelFamily::kSm80Gemm);  // still the heuristic's decode bucket
}

TEST(PlannerTest, PinnedConfigTakesEveryBucketAndSkipsTheTunings) {
  const KernelSpec s = spec_of("gemm a=bf16 b=bf16 out=bf16");
  const Arch a = h200();
  PlanOptions o;
  o.config = default_config(s, a, {4096, 7168, 2048});
  OneBucket source(8, default_config(s, a, {64, 7168, 2048}), KernelFamily::kSm90Gemm);
  auto p = make_plan(s, {0, 7168, 2048}, a, o, &source);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(source.calls, 0);
  for (size_t b = 0; b < kMBuckets.size(); ++b) {
    EXPECT_EQ(p->configs[b], *o.config);
    EXPECT_EQ(p->families[b], KernelFamily::kSm90Gemm);
    EXPECT_EQ(p->sources[b], ConfigSource::kOverride);
  }
  // A decode config goes to the portable family without naming it.
  o.config = default_config(s, a, KernelFamily::kSm80Gemm, {4, 7168, 2048});
  ASSERT_EQ(o.config->decode, 1);
  auto d = make_plan(s, {0, 7168, 2048}, a, o, nullptr);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  for (KernelFamily f : d->families) EXPECT_EQ(f, KernelFamily::kSm80Gemm);
  // A config the family refuses: INVALID_ARGUMENT naming config, family and arch; nothing planned.
  TileConfig bad = *o.config;
  bad.decode = 0;
  bad.block_m = 48;
  o.config = bad;
  o.family = KernelFamily::kSm90Gemm;
  auto e = make_plan(s, {0, 7168, 2048}, a, o, nullptr);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(e.status().message().rfind("config " + bad.to_string() + " for sm90_gemm on sm_90a: ", 0), 0u)
      << e.status().message();
}

TEST(PlannerTest, MxPrepassPlanFollowsTheSameRulesAndIgnoresThePin) {
  const KernelSpec s = spec_of("gemm a=mxfp8 b=mxfp8 out=bf16");
  const Arch a = h200();
  ASSERT_TRUE(sm90_mx_prepass_supported(s, a));
  auto p = make_plan(s, {0, 7168, 7168}, a, PlanOptions{}, nullptr);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  ASSERT_NE(p->prepass_plan, nullptr);
  EXPECT_EQ(p->prepass_plan->spec, sm90_mx_prepass_gemm_spec(s));
  EXPECT_EQ(p->prepass_convert_spec, sm90_mx_prepass_convert_spec(s));
  EXPECT_GT(p->prepass_layout.bytes(4096), 0);
  const KernelSpec bf16 = sm90_mx_prepass_gemm_spec(s);
  EXPECT_EQ(p->prepass_plan->configs[bucket_index(4096)], default_config(bf16, a, {4096, 7168, 7168}));
  PlanOptions o;
  o.config = p->configs[bucket_index(4096)];
  auto pinned = make_plan(s, {0, 7168, 7168}, a, o, nullptr);
  ASSERT_TRUE(pinned.ok()) << pinned.status().to_string();
  ASSERT_NE(pinned->prepass_plan, nullptr);
  EXPECT_EQ(pinned->prepass_plan->configs, p->prepass_plan->configs);
}

TEST(PlannerTest, TheEpilogueIsParsedOncePerPlan) {
  const KernelSpec s = spec_of("gemm a=bf16 b=bf16 out=bf16 epilogue=\"out = silu(acc + bias[n])\"");
  const Arch a = h200();
  const int64_t before = epilogue_parse_count();
  auto p = make_plan(s, {0, 7168, 2048}, a, PlanOptions{}, nullptr);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(epilogue_parse_count() - before, 1);
  ASSERT_TRUE(p->epilogue.has_value());
  ASSERT_EQ(p->epilogue->operands.size(), 1u);
  // Every bucket's kernel is emitted from the plan's program without parsing again, and the source is
  // the one emit_kernel makes when it lowers the text itself.
  const int64_t planned = epilogue_parse_count();
  std::vector<std::string> sources;
  for (size_t b = 0; b < kMBuckets.size(); ++b) {
    auto k = emit_kernel(s, p->families[b], p->configs[b], a, p->epilogue_program());
    ASSERT_TRUE(k.ok()) << k.status().to_string();
    sources.push_back(k->source);
  }
  EXPECT_EQ(epilogue_parse_count(), planned);
  auto lowered_here = emit_kernel(s, p->families.back(), p->configs.back(), a);
  ASSERT_TRUE(lowered_here.ok());
  EXPECT_EQ(epilogue_parse_count(), planned + 1);
  EXPECT_EQ(lowered_here->source, sources.back());
}

TEST(PlannerTest, BadSpecsAndSizesFailWithTheValidatorsMessages) {
  KernelSpec s = spec_of("gemm a=bf16 b=bf16 out=bf16");
  s.epilogue = "out = acc +";
  auto p = make_plan(s, {0, 256, 256}, h200(), PlanOptions{}, nullptr);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), validate_spec(s).message());
  const KernelSpec ok = spec_of("gemm a=bf16 b=bf16 out=bf16");
  auto z = make_plan(ok, {0, 256, 0}, h200(), PlanOptions{}, nullptr);
  ASSERT_FALSE(z.ok());
  EXPECT_EQ(z.status().message(), can_implement(ok, h200(), {0, 256, 0}).message());
}

}  // namespace
}  // namespace kiln
