// nvrtc tier: the runtime plans and compiles with no GPU, caches cubins by content key, and says
// clearly that no GPU is present when asked to run.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "compiler/plan/plan.hpp"
#include "kiln/kiln.hpp"
#include "runtime/driver/driver.hpp"

namespace kiln {
namespace {

std::string temp_dir() {
  char tmpl[] = "/tmp/kiln-rt-test-XXXXXX";
  EXPECT_NE(mkdtemp(tmpl), nullptr);
  return tmpl;
}

TEST(RuntimeCompileTest, PlansAndCompilesWithoutGpuAndCachesByKey) {
  std::string dir = temp_dir();
  RuntimeOptions o;
  o.cache_dir = dir;
  auto rt = Runtime::create(o);
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  auto spec = parse_spec("gemm a=e4m3:tensor b=e4m3:tensor out=bf16");
  ASSERT_TRUE(spec.ok()) << spec.status().to_string();
  auto arch = parse_arch("sm_90a");
  ASSERT_TRUE(arch.ok());
  auto plan = (*rt)->plan(*spec, {4096, 7168, 7168}, *arch);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->family(), KernelFamily::kSm90Gemm);  // sm_90a plans the sm90 family
  TileConfig cfg = plan->config_for(4096);
  auto k1 = (*rt)->compile(*spec, plan->family(), cfg, *arch);
  ASSERT_TRUE(k1.ok()) << k1.status().to_string();
  EXPECT_FALSE(k1->from_cache);
  EXPECT_EQ(k1->cubin.substr(0, 4), std::string("\x7f" "ELF"));
  EXPECT_EQ(k1->spill_stores, 0);
  auto k2 = (*rt)->compile(*spec, plan->family(), cfg, *arch);
  ASSERT_TRUE(k2.ok());
  EXPECT_TRUE(k2->from_cache);
  EXPECT_EQ(k1->key, k2->key);
  EXPECT_EQ(k1->cubin, k2->cubin);
  EXPECT_EQ((*rt)->counters().compiles, 1);
  EXPECT_EQ((*rt)->counters().cache_hits, 1);

  // A second Runtime (as a second process would) finds the kernel without compiling.
  auto rt2 = Runtime::create(o);
  ASSERT_TRUE(rt2.ok());
  auto k3 = (*rt2)->compile(*spec, plan->family(), cfg, *arch);
  ASSERT_TRUE(k3.ok());
  EXPECT_TRUE(k3->from_cache);
  EXPECT_EQ((*rt2)->counters().compiles, 0);
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST(RuntimeCompileTest, DifferentArchGivesDifferentKey) {
  RuntimeOptions o;
  o.disable_cache = true;
  auto rt = Runtime::create(o);
  ASSERT_TRUE(rt.ok());
  auto spec = parse_spec("gemm a=bf16 b=bf16 out=bf16");
  ASSERT_TRUE(spec.ok());
  TileConfig cfg = default_config(*spec, *parse_arch("sm_80"), {128, 256, 256});
  auto a = (*rt)->compile(*spec, KernelFamily::kSm80Gemm, cfg, *parse_arch("sm_80"));
  auto b = (*rt)->compile(*spec, KernelFamily::kSm80Gemm, cfg, *parse_arch("sm_86"));
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_NE(a->key, b->key);
}

TEST(RuntimeCompileTest, RunWithoutGpuSaysSo) {
  if (Driver::get().ok()) GTEST_SKIP() << "a GPU is present; this checks the no-GPU message";
  RuntimeOptions o;
  o.disable_cache = true;
  auto rt = Runtime::create(o);
  ASSERT_TRUE(rt.ok());
  Status s = (*rt)->device_status();
  EXPECT_EQ(s.code(), StatusCode::kNoDevice);
  EXPECT_FALSE(s.message().empty());
  auto spec = parse_spec("gemm a=bf16 b=bf16 out=bf16");
  auto plan = (*rt)->plan(*spec, {16, 64, 64});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();  // planning needs no GPU
  EXPECT_EQ(plan->arch().name(), "sm_90a");            // the default arch without a device
  int64_t sa[2] = {16, 64}, sb[2] = {64, 64}, so[2] = {16, 64};
  DLTensor a{}, b{}, out{};
  a.device = b.device = out.device = {kDLCUDA, 0};
  a.ndim = b.ndim = out.ndim = 2;
  a.dtype = b.dtype = out.dtype = {kDLBfloat, 16, 1};
  a.data = b.data = out.data = reinterpret_cast<void*>(0x10000);
  a.shape = sa;
  b.shape = sb;
  out.shape = so;
  Status r = plan->run({&a, &b, &out, nullptr, nullptr}, nullptr, 0, nullptr);
  EXPECT_EQ(r.code(), StatusCode::kNoDevice) << r.to_string();
  EXPECT_NE(r.message().find("Plan::run"), std::string::npos) << r.message();
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// One compile per key however many threads ask (single flight), with and without the cache.
TEST(RuntimeCompileTest, ConcurrentCallersCompileOnce) {
  for (bool use_cache : {false, true}) {
    RuntimeOptions o;
    o.disable_cache = !use_cache;
    if (use_cache) o.cache_dir = temp_dir();
    auto rt = Runtime::create(o);
    ASSERT_TRUE(rt.ok()) << rt.status().to_string();
    auto spec = parse_spec("gemm a=f16 b=f16 out=f32");
    ASSERT_TRUE(spec.ok());
    Arch arch = *parse_arch("sm_89");
    TileConfig cfg = default_config(*spec, arch, {256, 256, 256});
    std::vector<std::thread> threads;
    std::vector<std::string> keys(8);
    for (int i = 0; i < 8; ++i) {
      threads.emplace_back([&, i] {
        auto k = (*rt)->compile(*spec, KernelFamily::kSm80Gemm, cfg, arch);
        if (k.ok()) keys[i] = k->key;
      });
    }
    for (auto& t : threads) t.join();
    for (auto& k : keys) EXPECT_EQ(k, keys[0]);
    EXPECT_FALSE(keys[0].empty());
    EXPECT_EQ((*rt)->counters().compiles, 1) << (use_cache ? "with cache" : "without cache");
    if (use_cache) std::system(("rm -rf '" + o.cache_dir + "'").c_str());
  }
}

}  // namespace
}  // namespace kiln
