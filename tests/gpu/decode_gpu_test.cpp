// gpu tier: the portable family's decode kernel (TileConfig::decode, templates/kernels/sm80_decode.cuh)
// against kiln's reference on fresh random inputs, outputs poisoned (run_check). Each case pins one
// decode config in every M bucket (PlanOptions::config with the sm80 family), whatever family the
// plan would pick: 16-bit and FP8 operands, tensor / per-token / per-channel / DeepSeek block scales
// (f32 and E8M0), every output type, an epilogue functor; M = 1..16 and a second token tile, N not a
// multiple of the CTA's rows, K tails inside a warp step (a partial 64-byte segment set); grouped
// problems (offsets with empty experts, masked) with per-expert scales and epilogue vectors; bf16 x MXFP4 /
// NVFP4 on the 4-bit decode kernel (templates/kernels/sm80_decode_w4.cuh).
// Also: the plan's default dispatch at M <= 16 (whichever kernel it chose) on the decode shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "compiler/plan/plan.hpp"
#include "kiln/kiln.hpp"
#include "compiler/spec/spec.hpp"
#include "verify/check.hpp"
#include "verify/check_inputs.hpp"
#include "runtime/tuned_configs.hpp"
#include "tests/common/gpu_env.hpp"
#include "tests/common/parallel_load.hpp"

namespace kiln {
namespace {

// A decode config: tokens per CTA, weight rows per CTA, 64-byte segments per warp step, warps.
struct Dcfg {
  int bm, bn, segs, warps;
  int in_flight = 2;  // stages: warp steps in flight
  int kind = 1;       // TileConfig::decode: 1 mma.sync, 2 warpgroup (wgmma; segs = 64-byte segments per step)
};

struct Case {
  std::string spec;
  int64_t m, n, k;
  Dcfg cfg;
};

TileConfig decode_config(const KernelSpec& spec, const Dcfg& d) {
  TileConfig c;
  c.block_m = d.bm;
  c.block_n = d.bn;
  c.block_k = d.segs * 64 / (format_bits(spec.a.format) / 8);
  c.stages = d.in_flight;
  c.warps_m = 1;
  c.warps_n = d.warps;
  c.group_m = 1;
  c.decode = d.kind;
  return c;
}

// Every M bucket of the plan runs cfg on the portable family.
PlanOptions pinned(const TileConfig& cfg) {
  PlanOptions o;
  o.config = cfg;
  o.family = KernelFamily::kSm80Gemm;
  return o;
}

std::string case_name(const testing::TestParamInfo<Case>& info) {
  std::string out;
  for (char c : info.param.spec) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  const Dcfg& d = info.param.cfg;
  return out + "_m" + std::to_string(info.param.m) + "_n" + std::to_string(info.param.n) + "_k" +
         std::to_string(info.param.k) + "_bm" + std::to_string(d.bm) + "bn" + std::to_string(d.bn) + "s" +
         std::to_string(d.segs) + "w" + std::to_string(d.warps) + (d.in_flight == 1 ? "one" : "") +
         (d.kind == 2 ? "wg" : "");
}

std::vector<Case> decode_cases() {
  struct Shape {
    int64_t m, n, k;
  };
  // K tails: 544 bf16 = 17 segments, 1056 FP8 = 16.5 segments; block scales need K % 128 == 0.
  const std::vector<Shape> shapes = {{1, 256, 512}, {5, 200, 544}, {16, 77, 1056}, {21, 300, 2048}};
  const std::vector<Shape> block_shapes = {{1, 256, 512}, {5, 200, 1152}, {16, 300, 2304}, {21, 130, 384}};
  const std::vector<Dcfg> cfgs = {{8, 16, 2, 4}, {8, 32, 4, 8}, {16, 64, 1, 8}, {16, 48, 2, 2}};
  const char* plain[] = {"gemm a=bf16 b=bf16 out=bf16",
                         "gemm a=f16 b=f16 out=f32",
                         "gemm a=bf16 b=bf16 out=f16",
                         "gemm a=e4m3:tensor b=e4m3:tensor out=bf16",
                         "gemm a=e4m3:m b=e5m2:n out=f32",
                         "gemm a=e5m2:tensor b=e4m3:n out=f16",
                         "gemm a=bf16 b=bf16 out=bf16 epilogue=\"out = silu(acc + bias[n]) * scale[m]\""};
  const char* blocked[] = {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16",
                           "gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=f32",
                           "gemm a=e4m3:tensor b=e4m3:block128x128 out=bf16",
                           "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16 epilogue=\"out = acc + bias[n]\""};
  std::vector<Case> cases;
  // Grouped (offsets: m is the total, split at random with empty experts; masked: m is max_m per expert).
  cases.push_back({"grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16", 37, 200, 544, {8, 16, 2, 4}});
  cases.push_back({"grouped_gemm[experts=6,layout=masked] a=e4m3:m b=e4m3:n out=f32", 13, 130, 1056, {16, 32, 2, 8}});
  cases.push_back({"grouped_gemm[experts=8,layout=offsets] a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 40, 300,
                   1152, {8, 32, 4, 8}});
  cases.push_back({"grouped_gemm[experts=4,layout=offsets] a=e4m3:tensor b=e4m3:tensor out=bf16 "
                   "epilogue=\"out = acc * expert_scale[e] + bias[e,n]\"",
                   21, 77, 512, {16, 16, 2, 4}});
  // One warp step in flight (stages 1).
  cases.push_back({"gemm a=bf16 b=bf16 out=bf16", 5, 200, 544, {8, 16, 8, 4, 1}});
  cases.push_back({"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 16, 300, 2304, {16, 32, 4, 8, 1}});
  for (const char* s : plain) {
    for (size_t i = 0; i < shapes.size(); ++i) cases.push_back({s, shapes[i].m, shapes[i].n, shapes[i].k, cfgs[i]});
  }
  // The warpgroup decode kernel (sm_90a; FP8 with tensor / m / n scales): 64 weight rows per CTA, 1-4
  // warpgroups splitting K, 2-8 segments per step, one or two steps in flight; N and K tails, M = 1..21.
  const char* wg_specs[] = {"gemm a=e4m3:tensor b=e4m3:tensor out=bf16", "gemm a=e4m3:m b=e5m2:n out=f32",
                            "gemm a=e5m2:tensor b=e4m3:n out=f16",
                            "gemm a=e4m3:tensor b=e4m3:tensor out=bf16 epilogue=\"out = silu(acc + bias[n]) * scale[m]\""};
  const std::vector<Shape> wg_shapes = {{1, 256, 512}, {5, 200, 1056}, {16, 77, 2048}, {21, 300, 4096}, {9, 130, 3072}};
  const std::vector<Dcfg> wg_cfgs = {{8, 64, 2, 4, 1, 2}, {8, 64, 4, 8, 2, 2}, {16, 64, 4, 8, 2, 2}, {16, 64, 8, 4, 1, 2},
                                     {16, 64, 2, 16, 1, 2}};
  for (const char* s : wg_specs) {
    for (size_t i = 0; i < wg_shapes.size(); ++i)
      cases.push_back({s, wg_shapes[i].m, wg_shapes[i].n, wg_shapes[i].k, wg_cfgs[i]});
  }
  // Long K; fewer steps than warpgroups (K = 256 over 4: two run only zero steps); e5m2 x e5m2; 8 tokens
  // with 3 warpgroups and a K tail of 16 mod 32; 8 segments per step with one step in flight.
  cases.push_back({"gemm a=e5m2:tensor b=e5m2:tensor out=bf16", 3, 64, 256, {8, 64, 2, 16, 2, 2}});
  cases.push_back({"gemm a=e4m3:tensor b=e4m3:tensor out=f32", 7, 130, 1040, {8, 64, 2, 12, 2, 2}});
  cases.push_back({"gemm a=e4m3:m b=e4m3:n out=bf16", 16, 64, 4096, {16, 64, 8, 8, 1, 2}});
  cases.push_back({"gemm a=e4m3:tensor b=e4m3:tensor out=bf16", 16, 130, 16384, {16, 64, 4, 8, 2, 2}});
  cases.push_back({"gemm a=e4m3:m b=e5m2:n out=bf16", 9, 77, 15360, {16, 64, 2, 16, 1, 2}});
  cases.push_back({"gemm a=e4m3:tensor b=e4m3:n out=f16", 5, 200, 30720, {8, 64, 8, 4, 2, 2}});
  // 4-bit weights (kernels/sm80_decode_w4.cuh; block_k = 4 or 8 segments of bf16 X: 128 or 256 K): MXFP4 and
  // NVFP4 with an epilogue functor, M = 1..33 (a second token tile at block_m 32), N not a multiple of
  // block_n, K tails inside a 128-K step (544, 1056), grouped offsets and masked with per-expert globals.
  const char* w4[] = {"gemm a=bf16 b=mxfp4 out=bf16", "gemm a=bf16 b=nvfp4 out=f32",
                      "gemm a=bf16 b=mxfp4 out=f16 epilogue=\"out = silu(acc + bias[n]) * scale[m]\""};
  const std::vector<Shape> w4_shapes = {{1, 256, 512}, {5, 200, 544}, {16, 77, 1056}, {21, 300, 2048}, {33, 130, 2880}};
  const std::vector<Dcfg> w4_cfgs = {{8, 32, 4, 4}, {16, 16, 8, 2, 1}, {16, 48, 4, 4}, {8, 64, 8, 4, 1}, {32, 32, 4, 8, 1}};
  for (const char* s : w4) {
    for (size_t i = 0; i < w4_shapes.size(); ++i)
      cases.push_back({s, w4_shapes[i].m, w4_shapes[i].n, w4_shapes[i].k, w4_cfgs[i]});
  }
  cases.push_back({"grouped_gemm[experts=8,layout=offsets] a=bf16 b=mxfp4 out=bf16 epilogue=\"out = acc + bias[e,n]\"", 60,
                   200, 544, {8, 32, 4, 4}});
  cases.push_back({"grouped_gemm[experts=6,layout=masked] a=bf16 b=nvfp4 out=f32 nvfp4_global=expert", 13, 130, 1056,
                   {16, 32, 8, 4, 1}});
  cases.push_back({"grouped_gemm[experts=4,layout=offsets] a=bf16 b=nvfp4 out=bf16", 90, 77, 2880, {32, 16, 4, 2, 1}});
  // Whole 128-element K blocks per warp step (2 segments of FP8 or more).
  const std::vector<Dcfg> block_cfgs = {{8, 16, 2, 4}, {8, 32, 4, 8}, {16, 32, 2, 8}, {16, 48, 2, 2}};
  for (const char* s : blocked) {
    for (size_t i = 0; i < block_shapes.size(); ++i)
      cases.push_back({s, block_shapes[i].m, block_shapes[i].n, block_shapes[i].k, block_cfgs[i]});
  }
  return cases;
}

class DecodeGpuTest : public testing::TestWithParam<Case> {};

TEST_P(DecodeGpuTest, MatchesReference) {
  KILN_REQUIRE_GPU();
  const Case& c = GetParam();
  auto rt = make_test_runtime();
  auto spec = parse_spec(c.spec);
  ASSERT_TRUE(spec.ok()) << spec.status().to_string();
  const TileConfig cfg = decode_config(*spec, c.cfg);
  auto arch = rt->device_arch();
  ASSERT_TRUE(arch.ok()) << arch.status().to_string();
  const Status valid = check_config(*spec, *arch, KernelFamily::kSm80Gemm, cfg);
  if (!valid.ok() && arch->sm() < 89) GTEST_SKIP() << valid.to_string();  // FP8 decode: sm_89+
  if (!valid.ok() && c.cfg.kind == 2 && arch->sm() != 90) GTEST_SKIP() << valid.to_string();  // wgmma: sm_90a
  ASSERT_TRUE(valid.ok()) << valid.to_string();
  auto plan = rt->plan(*spec, {c.m, c.n, c.k}, pinned(cfg));
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->config_for(c.m), cfg);
  ASSERT_EQ(plan->family_for(c.m), KernelFamily::kSm80Gemm);
  CheckOptions o;
  o.m = c.m;
  auto r = run_check(*rt, *plan, o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  std::printf("[ figures ] %s m=%lld n=%lld k=%lld config=%s seed=%llu rel_fro=%.3g tol=%.3g max_abs=%.3g\n",
              c.spec.c_str(), (long long)c.m, (long long)c.n, (long long)c.k, r->config.c_str(),
              (unsigned long long)r->seed, r->rel_fro_err, r->tolerance, r->max_abs_err);
  EXPECT_EQ(r->config, cfg.to_string());
  EXPECT_EQ(r->unwritten, 0) << "seed " << r->seed;
  EXPECT_EQ(r->nonfinite, 0) << "seed " << r->seed;
  EXPECT_LE(r->rel_fro_err, r->tolerance) << "seed " << r->seed;
  EXPECT_TRUE(r->passed);
}

INSTANTIATE_TEST_SUITE_P(DecodeConfigs, DecodeGpuTest, testing::ValuesIn(decode_cases()), case_name);

// Two runs of one decode kernel on the same inputs are bitwise equal (the reduction has a fixed order).
TEST(DecodeRepeatGpuTest, RunsAreBitwiseEqual) {
  KILN_REQUIRE_GPU();
  auto rt = make_test_runtime();
  auto spec = parse_spec("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=f32");
  ASSERT_TRUE(spec.ok());
  const TileConfig cfg = decode_config(*spec, {8, 32, 4, 8});
  auto plan = rt->plan(*spec, {3, 1000, 4096}, pinned(cfg));
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  CheckOptions o;
  o.m = 3;
  o.seed = 77;
  auto r1 = run_check(*rt, *plan, o);
  auto r2 = run_check(*rt, *plan, o);
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_TRUE(r1->passed && r2->passed);
  EXPECT_EQ(r1->max_abs_err, r2->max_abs_err);
  EXPECT_EQ(r1->rel_fro_err, r2->rel_fro_err);
}

// The decode shapes of shapes.json in bf16 and FP8 (tensor, per-token x per-channel, DeepSeek blocks):
// the plan's own kernel, then every decode config check_config allows over block_n 16 / 32 / 64, 2 / 4 / 8
// segments per warp step and 2 / 4 / 8 warps, on one random draw per shape (cold L2, CUDA events, median of 20;
// every run also checked against the reference). Kernels are compiled up front on all host cores.
TEST(DecodeTiming, SweepsDecodeShapes) {
  KILN_REQUIRE_GPU();
  std::setvbuf(stdout, nullptr, _IONBF, 0);  // every row reaches the log, whatever happens next
  RuntimeOptions ro;
  ro.disable_cache = true;
  auto rt_or = Runtime::create(ro);
  ASSERT_TRUE(rt_or.ok()) << rt_or.status().to_string();
  Runtime& rt = **rt_or;
  const char* specs[] = {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", "gemm a=bf16 b=bf16 out=bf16",
                         "gemm a=e4m3:tensor b=e4m3:tensor out=bf16", "gemm a=e4m3:m b=e4m3:n out=bf16"};
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{1, 8192, 8192}, {16, 8192, 8192}, {1, 5760, 2880}, {16, 5760, 2880}};
  struct Row {
    KernelSpec spec;
    Shape shape;
    std::vector<TileConfig> cfgs;
  };
  std::vector<Row> rows;
  std::vector<LoadJob> jobs;
  auto probe = rt.plan(*parse_spec(specs[0]), {1, 256, 256});
  ASSERT_TRUE(probe.ok()) << probe.status().to_string();
  const Arch arch = probe->arch();
  for (const char* text : specs) {
    const KernelSpec spec = *parse_spec(text);
    for (const Shape& sh : shapes) {
      // Block scales need K % 128 == 0 (not 2880).
      if (spec.a.scale == ScaleGranularity::kBlock1x128 && sh.k % 128 != 0) continue;
      Row row{spec, sh, {}};
      for (int bn : {16, 32, 64})
        for (int segs : {2, 4, 8})
          for (int warps : {2, 4, 8}) {
            const TileConfig c = decode_config(spec, {sh.m <= 8 ? 8 : 16, bn, segs, warps});
            if (!check_config(spec, arch, KernelFamily::kSm80Gemm, c).ok()) continue;
            row.cfgs.push_back(c);
            const bool seen = std::any_of(jobs.begin(), jobs.end(),
                                          [&](const LoadJob& j) { return j.spec == spec && j.cfg == c; });
            if (!seen) jobs.push_back({spec, KernelFamily::kSm80Gemm, c});
          }
      rows.push_back(row);
    }
  }
  const LoadSummary loaded = load_in_parallel(rt, jobs, arch);
  std::printf("[ figures ] precompiled %zu decode kernels (%d failed)\n", jobs.size(), loaded.failures);
  EXPECT_EQ(loaded.failures, 0);
  std::printf("[ timing ] %-52s %-18s %-10s %-30s %9s %8s %s\n", "spec", "shape", "family", "config", "us",
              "GB/s", "check");
  for (const Row& row : rows) {
    uint64_t seed = 1;
    auto host = random_operands(row.spec, row.shape.m, row.shape.n, row.shape.k, {}, seed);
    ASSERT_TRUE(host.ok()) << host.status().to_string();
    auto inputs = std::make_shared<const HostOperands>(std::move(*host));
    const std::string shape = std::to_string(row.shape.m) + "x" + std::to_string(row.shape.n) + "x" +
                              std::to_string(row.shape.k);
    auto time_one = [&](const Plan& plan) {
      CheckOptions o;
      o.m = row.shape.m;
      o.seed = 1;
      o.inputs = inputs;
      o.time = true;
      auto r = run_check(rt, plan, o);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      std::printf("[ timing ] %-52s %-18s %-10s %-30s %9.1f %8.0f %s\n", print_spec(row.spec).c_str(), shape.c_str(),
                  family_name(plan.family_for(row.shape.m)), r->config.c_str(), 1000.0 * r->median_ms, r->gbps,
                  r->passed ? "pass" : "FAIL");
      EXPECT_TRUE(r->passed) << shape << " " << r->config;
    };
    {
      auto plan = rt.plan(row.spec, {row.shape.m, row.shape.n, row.shape.k});
      ASSERT_TRUE(plan.ok()) << plan.status().to_string();
      time_one(*plan);
    }
    for (const TileConfig& c : row.cfgs) {
      auto plan = rt.plan(row.spec, {row.shape.m, row.shape.n, row.shape.k}, pinned(c));
      ASSERT_TRUE(plan.ok()) << plan.status().to_string();
      time_one(*plan);
    }
  }
}

}  // namespace
}  // namespace kiln
