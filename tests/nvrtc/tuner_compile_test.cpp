// nvrtc tier: the tuner compiles a handful of sm_90a candidates in parallel through Runtime::compile
// with no GPU; an injected compile failure and a config the planner rejects are recorded as data
// (their Status, an infinite time) while the others compile; the cubins land in the kernel cache, so
// a later run (the GPU machine's) finds them; and a tuned config is what a Plan compiles.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "compiler/plan/sm90_plan.hpp"
#include "runtime/tuned_configs.hpp"
#include "tuner/tuner.hpp"

namespace kiln {
namespace {

namespace fs = std::filesystem;

TEST(TunerCompileTest, ParallelCompileOfSm90aCandidatesWithAFailureInjected) {
  std::string tmpl = (fs::temp_directory_path() / "kiln-tuner-nvrtc-XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const std::string dir = tmpl;
  RuntimeOptions ro;
  ro.cache_dir = dir;
  auto rt = Runtime::create(ro);
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  auto device = parse_tuning_device("h200");
  ASSERT_TRUE(device.ok()) << device.status().to_string();
  const Arch arch = Tuner::arch_of(*device);
  ASSERT_EQ(arch.name(), "sm_90a");

  TuneShape shape;
  shape.spec = *parse_spec("gemm a=bf16 b=bf16 out=bf16");
  shape.m = 128;
  shape.n = 4096;
  shape.k = 4096;
  shape.label = "nvrtc";
  ASSERT_EQ(*select_family(shape.spec, arch), KernelFamily::kSm90Gemm);

  // Three distinct tilings of the family's own space, one config it rejects, one injected failure.
  std::vector<TileConfig> space = sm90_config_space(shape.spec, arch);
  ASSERT_GE(space.size(), 4u);
  std::vector<TileConfig> picked;
  std::set<std::pair<int, int>> tilings;
  for (const TileConfig& c : space) {
    if (tilings.insert({c.block_m, c.block_n}).second) picked.push_back(c);
    if (picked.size() == 4) break;
  }
  ASSERT_EQ(picked.size(), 4u);
  const TileConfig injected = picked[3];
  TileConfig rejected = picked[0];
  rejected.block_k = 32;  // 64 bytes of K: the sm90 ring takes exactly one 128-byte atom
  picked[3] = rejected;
  picked.push_back(injected);

  std::atomic<int> running{0}, most{0};
  TunerOptions o;
  o.time = false;  // no GPU on this tier
  o.compile_threads = 4;
  o.candidates = picked;
  o.compile = [&](const TileConfig& c) -> StatusOr<CompiledKernel> {
    const int now = ++running;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    StatusOr<CompiledKernel> k = c == injected
                                     ? StatusOr<CompiledKernel>(CompileError("injected: ptxas crashed"))
                                     : (*rt)->compile(shape.spec, KernelFamily::kSm90Gemm, c, arch);
    --running;
    return k;
  };
  Tuner tuner(**rt, o);
  auto r = tuner.tune(shape, *device);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->family, KernelFamily::kSm90Gemm);
  EXPECT_GE(r->candidates.size(), 5u);  // + the heuristic's config unless it was among them
  EXPECT_GE(most.load(), 2) << "compiles ran one at a time";
  int compiled = 0;
  for (const CandidateResult& c : r->candidates) {
    SCOPED_TRACE(c.config.to_string());
    EXPECT_TRUE(std::isinf(c.time_us()));  // nothing timed without a GPU
    if (c.config == injected) {
      EXPECT_EQ(c.outcome, CandidateOutcome::kCompileFailed);
      EXPECT_EQ(c.compile_status.code(), StatusCode::kCompileError);
      EXPECT_NE(c.compile_status.message().find("injected"), std::string::npos);
    } else if (c.config == rejected) {
      EXPECT_EQ(c.outcome, CandidateOutcome::kCompileFailed);
      EXPECT_NE(c.compile_status.message().find("block_k"), std::string::npos) << c.compile_status.message();
    } else {
      EXPECT_EQ(c.outcome, CandidateOutcome::kCompiled) << c.compile_status.to_string();
      EXPECT_GT(c.registers, 0);
      EXPECT_EQ(c.spills, 0);
      EXPECT_FALSE(c.from_cache);
      ++compiled;
    }
  }
  EXPECT_GE(compiled, 3);
  EXPECT_EQ(r->timing_status.code(), StatusCode::kNotReady);
  EXPECT_FALSE(r->record().has_value());

  // The GPU machine's run finds every cubin in the cache.
  o.compile = nullptr;
  o.candidates = {picked[0], picked[1], picked[2]};
  Tuner again(**rt, o);
  auto r2 = again.tune(shape, *device);
  ASSERT_TRUE(r2.ok());
  for (const CandidateResult& c : r2->candidates) {
    EXPECT_EQ(c.outcome, CandidateOutcome::kCompiled) << c.config.to_string();
    EXPECT_TRUE(c.from_cache) << c.config.to_string();
  }

  // A tuned config is what the plan runs: record one for bucket 128 and compile the plan's kernel.
  ::setenv("KILN_TUNING_DEVICE", "h200", 1);
  TuningRecord rec;
  rec.device = *device;
  rec.problem = tuning_problem(shape.spec, {0, shape.n, shape.k});
  rec.m_bucket = 128;
  rec.family = "sm90_gemm";
  rec.config_json = config_to_json(picked[1]).dump();
  rec.median_us = 10;
  ASSERT_TRUE(tuning_store_for(**rt)->record(rec).ok());
  auto plan = (*rt)->plan(shape.spec, {128, shape.n, shape.k}, arch);
  ::unsetenv("KILN_TUNING_DEVICE");
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->config_for(128), picked[1]);
  auto k = (*rt)->compile(shape.spec, plan->family(), plan->config_for(128), arch);
  ASSERT_TRUE(k.ok()) << k.status().to_string();
  EXPECT_TRUE(k->from_cache);

  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
}  // namespace kiln
