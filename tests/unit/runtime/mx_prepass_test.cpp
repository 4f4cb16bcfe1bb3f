// unit tier: the MXFP8 pre-pass's planning rules (compiler/plan/sm90_plan.hpp sm90_mx_prepass_*,
// runtime/mx_prepass.hpp): which specs and sizes are offered it, its workspace layout (the split-K
// counters' first MiB left alone), the bf16 spec its GEMM runs and the spec its conversion kernel is
// cached under, and what a Plan reports (Plan::mx_prepass_workspace_bytes, describe_json) without a GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "compiler/plan/sm90_plan.hpp"
#include "compiler/spec/spec.hpp"
#include "kiln/kiln.hpp"

namespace kiln {
namespace {

using ::testing::HasSubstr;

const char* const kMx = "gemm a=mxfp8 b=mxfp8 out=bf16";

KernelSpec spec_of(const std::string& text) {
  auto r = parse_spec(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().to_string();
  return r.ok() ? *r : KernelSpec{};
}

Arch arch_of(const char* name) { return *parse_arch(name); }

TEST(MxPrepassPlanTest, OfferedForMxfp8OnTheSm90FamilyOnly) {
  EXPECT_TRUE(sm90_mx_prepass_supported(spec_of(kMx), arch_of("sm_90a")));
  EXPECT_TRUE(sm90_mx_prepass_supported(
      spec_of("gemm a=mxfp8 b=mxfp8 out=f32 epilogue=\"out = acc + bias[n]\""), arch_of("sm_90a")));
  EXPECT_TRUE(sm90_mx_prepass_supported(
      spec_of("grouped_gemm[experts=8,layout=offsets] a=mxfp8 b=mxfp8 out=bf16"), arch_of("sm_90a")));
  EXPECT_TRUE(sm90_mx_prepass_supported(
      spec_of("grouped_gemm[experts=8,layout=masked] a=mxfp8 b=mxfp8 out=bf16"), arch_of("sm_90a")));
  // Not: other formats, or an arch where the sm90 family does not run.
  EXPECT_FALSE(sm90_mx_prepass_supported(spec_of("gemm a=bf16 b=bf16 out=bf16"), arch_of("sm_90a")));
  EXPECT_FALSE(sm90_mx_prepass_supported(spec_of("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16"),
                                         arch_of("sm_90a")));
  EXPECT_FALSE(sm90_mx_prepass_supported(spec_of("gemm a=bf16 b=mxfp4 out=bf16"), arch_of("sm_90a")));
  EXPECT_FALSE(sm90_mx_prepass_supported(
      spec_of("grouped_gemm[experts=8,layout=offsets] a=e4m3:m b=e4m3:n out=bf16"), arch_of("sm_90a")));
  EXPECT_FALSE(sm90_mx_prepass_supported(spec_of(kMx), arch_of("sm_80")));
  EXPECT_FALSE(sm90_mx_prepass_supported(spec_of(kMx), arch_of("sm_89")));
}

constexpr int64_t kMiB = 1 << 20;  // the split-K counters' region, left alone by the pre-pass

TEST(MxPrepassPlanTest, WorkspaceIsTwoBf16CopiesEach256ByteAligned) {
  const KernelSpec mx = spec_of(kMx);
  const Arch a = arch_of("sm_90a");
  EXPECT_EQ(sm90_mx_prepass_a_offset(), kSm90SplitCounterSlots * 4);
  EXPECT_EQ(sm90_mx_prepass_a_offset(), kMiB);
  // 4096 x 7168 x 16384: 1 MiB + 2 (M + N) K bytes, both copies already 256-byte multiples.
  EXPECT_EQ(sm90_mx_prepass_workspace_bytes(mx, a, {4096, 7168, 16384}), kMiB + 2LL * (4096 + 7168) * 16384);
  EXPECT_EQ(sm90_mx_prepass_b_offset({4096, 7168, 16384}), kMiB + 2LL * 4096 * 16384);
  // M = 1025, K = 96: X's copy is 196800 bytes, W's starts at the next multiple of 256 (196864).
  EXPECT_EQ(sm90_mx_prepass_b_offset({1025, 200, 96}), kMiB + 196864);
  EXPECT_EQ(sm90_mx_prepass_workspace_bytes(mx, a, {1025, 200, 96}), kMiB + 196864 + 38400);
  EXPECT_EQ(sm90_mx_prepass_bytes(mx, {1025, 200, 96}), kMiB + 196864 + 38400);
  // Below kMxPrepassMinM rows, K not a multiple of 32, or a spec without it: none.
  EXPECT_EQ(sm90_mx_prepass_workspace_bytes(mx, a, {kMxPrepassMinM - 1, 7168, 16384}), 0);
  EXPECT_GT(sm90_mx_prepass_workspace_bytes(mx, a, {kMxPrepassMinM, 7168, 16384}), 0);
  EXPECT_EQ(sm90_mx_prepass_workspace_bytes(mx, a, {4096, 7168, 16400}), 0);
  EXPECT_EQ(sm90_mx_prepass_workspace_bytes(spec_of("gemm a=bf16 b=bf16 out=bf16"), a, {4096, 7168, 16384}),
            0);
  EXPECT_EQ(sm90_mx_prepass_workspace_bytes(mx, arch_of("sm_80"), {4096, 7168, 16384}), 0);
}

// Grouped: X's rows of every expert, then W's E x N rows; offered from kMxPrepassMinM rows per expert.
TEST(MxPrepassPlanTest, GroupedWorkspaceHoldsEveryExpertsWeights) {
  const KernelSpec g = spec_of("grouped_gemm[experts=8,layout=offsets] a=mxfp8 b=mxfp8 out=bf16");
  const Arch a = arch_of("sm_90a");
  EXPECT_EQ(sm90_mx_prepass_workspace_bytes(g, a, {8 * 1024, 4096, 7168}),
            kMiB + 2LL * (8 * 1024 + 8 * 4096) * 7168);
  EXPECT_EQ(sm90_mx_prepass_workspace_bytes(g, a, {8 * kMxPrepassMinM - 1, 4096, 7168}), 0);  // just under
  const KernelSpec masked = spec_of("grouped_gemm[experts=4,layout=masked] a=mxfp8 b=mxfp8 out=f32");
  EXPECT_EQ(sm90_mx_prepass_workspace_bytes(masked, a, {4 * 1100, 256, 320}),
            kMiB + 2LL * 4 * 1100 * 320 + 2LL * 4 * 256 * 320);
}

TEST(MxPrepassPlanTest, TheGemmRunsUnscaledBf16OperandsAndKeepsEverythingElse) {
  const KernelSpec mx =
      spec_of("gemm a=mxfp8 b=mxfp8 out=f16 gate_up=interleaved epilogue=\"out = silu(gate) * up\"");
  const KernelSpec g = sm90_mx_prepass_gemm_spec(mx);
  EXPECT_EQ(g.a, OperandSpec{});
  EXPECT_EQ(g.b, OperandSpec{});
  EXPECT_EQ(g.out, mx.out);
  EXPECT_EQ(g.gate_up, mx.gate_up);
  EXPECT_EQ(g.epilogue, mx.epilogue);
  // The conversion kernel: one cache entry for every MXFP8 spec.
  EXPECT_EQ(print_spec(sm90_mx_prepass_convert_spec(mx)), "gemm a=mxfp8 b=mxfp8 out=bf16");
  const KernelSpec grouped = spec_of("grouped_gemm[experts=8,layout=masked] a=mxfp8 b=mxfp8 out=bf16");
  EXPECT_EQ(print_spec(sm90_mx_prepass_convert_spec(grouped)), "gemm a=mxfp8 b=mxfp8 out=bf16");
  const KernelSpec gg = sm90_mx_prepass_gemm_spec(grouped);
  EXPECT_EQ(gg.op, grouped.op);
  EXPECT_EQ(gg.layout, grouped.layout);
  EXPECT_EQ(gg.experts, grouped.experts);
  EXPECT_EQ(print_spec(g).find("mxfp8"), std::string::npos) << print_spec(g);
  EXPECT_THAT(print_spec(g), HasSubstr("a=bf16 b=bf16"));
}

// The conversion kernel's launch: 256 threads, one per 8-element unit of X and W (grouped W: E x N rows);
// the runtime then caps the grid at what the SMs hold.
TEST(MxPrepassPlanTest, ConversionLaunchCoversXAndEveryExpertsW) {
  const KernelSpec mx = spec_of(kMx);
  LaunchShape ls = launch_shape(mx, KernelFamily::kMxDequant, TileConfig{}, {1024, 256, 512});
  EXPECT_EQ(ls.block_x, 256u);
  EXPECT_EQ(ls.dynamic_smem, 0);
  EXPECT_EQ(ls.grid_x, (1024u + 256u) * 512u / 8u / 256u);
  const KernelSpec g = spec_of("grouped_gemm[experts=8,layout=offsets] a=mxfp8 b=mxfp8 out=bf16");
  ls = launch_shape(g, KernelFamily::kMxDequant, TileConfig{}, {4096, 256, 512});
  EXPECT_EQ(ls.grid_x, (4096u + 8u * 256u) * 512u / 8u / 256u);
  ls = launch_shape(mx, KernelFamily::kMxDequant, TileConfig{}, {1, 1, 32});  // rounds up
  EXPECT_EQ(ls.grid_x, 1u);
}

std::shared_ptr<Runtime> runtime() {
  RuntimeOptions o;
  o.disable_cache = true;
  auto rt = Runtime::create(o);
  EXPECT_TRUE(rt.ok()) << rt.status().to_string();
  return rt.ok() ? *rt : nullptr;
}

TEST(MxPrepassPlanTest, PlanReportsItsWorkspaceAndTheBf16Buckets) {
  auto rt = runtime();
  ASSERT_NE(rt, nullptr);
  auto plan = rt->plan(spec_of(kMx), {4096, 7168, 16384}, arch_of("sm_90a"));
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->mx_prepass_workspace_bytes(4096), kMiB + 2LL * (4096 + 7168) * 16384);
  EXPECT_EQ(plan->mx_prepass_workspace_bytes(kMxPrepassMinM - 1), 0u);
  EXPECT_EQ(plan->workspace_bytes(4096), 0u);  // the fused path's own need is unchanged
  // The bf16 kernel's config: what a plain bf16 plan of the problem picks.
  auto bf16 = rt->plan(spec_of("gemm a=bf16 b=bf16 out=bf16"), {4096, 7168, 16384}, arch_of("sm_90a"));
  ASSERT_TRUE(bf16.ok()) << bf16.status().to_string();
  EXPECT_EQ(plan->mx_prepass_config_for(4096).to_string(), bf16->config_for(4096).to_string());
  EXPECT_EQ(bf16->mx_prepass_workspace_bytes(4096), 0u);
  const nlohmann::json j = nlohmann::json::parse(plan->describe_json());
  ASSERT_TRUE(j.contains("mx_prepass")) << j.dump();
  EXPECT_EQ(j["mx_prepass"]["min_m"], kMxPrepassMinM);
  EXPECT_EQ(j["mx_prepass"]["spec"], "gemm a=bf16 b=bf16 out=bf16");
  EXPECT_EQ(j["mx_prepass"]["buckets"].size(), 5u);  // m_max 512, 1024, 2048, 4096, 8192
  EXPECT_FALSE(nlohmann::json::parse(bf16->describe_json()).contains("mx_prepass"));
  // The portable family has none.
  auto portable = rt->plan(spec_of(kMx), {4096, 7168, 16384}, arch_of("sm_89"));
  ASSERT_TRUE(portable.ok()) << portable.status().to_string();
  EXPECT_EQ(portable->mx_prepass_workspace_bytes(4096), 0u);
}

}  // namespace
}  // namespace kiln
