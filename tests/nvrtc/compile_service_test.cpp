// nvrtc tier: the compile service (compiler/service/compile_service.hpp) with real NVRTC compiles and a
// kernel cache in a temporary directory, no GPU. Threads asking for one kernel at once compile it
// once; a second service on the same cache finds it; want_ptx bypasses the cache; the lowered
// epilogue a plan hands in gives the kernel that emit_kernel's own lowering gives.
#include "compiler/service/compile_service.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cache/kernel_cache.hpp"
#include "compiler/epilogue/epilogue.hpp"
#include "compiler/plan/plan.hpp"

namespace kiln {
namespace {

namespace fs = std::filesystem;

class CompileServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "kiln-service-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::unique_ptr<KernelCache> open_cache() {
    StatusOr<std::unique_ptr<KernelCache>> cache = KernelCache::open(dir_);
    EXPECT_TRUE(cache.ok()) << cache.status().to_string();
    return cache.ok() ? std::move(*cache) : nullptr;
  }
  std::string dir_;
};

KernelSpec spec_of(const std::string& text) {
  StatusOr<KernelSpec> spec = parse_spec(text);
  EXPECT_TRUE(spec.ok()) << text << ": " << spec.status().to_string();
  return spec.ok() ? *spec : KernelSpec{};
}

Arch arch_named(const std::string& name) {
  StatusOr<Arch> arch = parse_arch(name);
  EXPECT_TRUE(arch.ok()) << arch.status().to_string();
  return arch.ok() ? *arch : Arch{};
}

// The naive reference GEMM: the cheapest family to compile, and one without a tile config.
TEST_F(CompileServiceTest, ConcurrentCallersCompileOnceThenTheCacheServesASecondService) {
  const KernelSpec spec = spec_of("gemm a=bf16 b=bf16 out=f32");
  const Arch arch = arch_named("sm_80");
  constexpr int kThreads = 8;
  std::string key, cubin;
  {
    std::unique_ptr<KernelCache> cache = open_cache();
    ASSERT_NE(cache, nullptr);
    CompileService service(cache.get());
    std::vector<std::optional<StatusOr<CompiledKernel>>> results(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        results[t] = service.compile(spec, KernelFamily::kReferenceGemm, TileConfig{}, arch, nullptr, false);
      });
    }
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(service.compiles(), 1);
    for (int t = 0; t < kThreads; ++t) {
      ASSERT_TRUE(results[t].has_value()) << t;
      ASSERT_TRUE(results[t]->ok()) << t << ": " << results[t]->status().to_string();
      const CompiledKernel& k = **results[t];
      if (t == 0) {
        key = k.key;
        cubin = k.cubin;
      }
      EXPECT_EQ(k.key, key) << t;
      EXPECT_EQ(k.cubin, cubin) << t;
      EXPECT_FALSE(k.entry.empty()) << t;
      EXPECT_FALSE(k.source.empty()) << t;
      EXPECT_GT(k.threads, 0) << t;
    }
    EXPECT_EQ(cubin.substr(0, 4), std::string("\x7f" "ELF"));
    StatusOr<CacheStats> st = cache->stats();
    ASSERT_TRUE(st.ok()) << st.status().to_string();
    EXPECT_EQ(st->kernels, 1);
  }

  // A second service on the same cache directory (as a second process would have) compiles nothing.
  std::unique_ptr<KernelCache> cache = open_cache();
  ASSERT_NE(cache, nullptr);
  CompileService second(cache.get());
  StatusOr<CompiledKernel> hit =
      second.compile(spec, KernelFamily::kReferenceGemm, TileConfig{}, arch, nullptr, false);
  ASSERT_TRUE(hit.ok()) << hit.status().to_string();
  EXPECT_TRUE(hit->from_cache);
  EXPECT_EQ(hit->key, key);
  EXPECT_EQ(hit->cubin, cubin);
  EXPECT_FALSE(hit->source.empty());  // the emitted fields are the service's own
  EXPECT_GT(hit->threads, 0);
  EXPECT_EQ(hit->arch, "sm_80");
  EXPECT_EQ(hit->spec, print_spec(spec));
  EXPECT_EQ(hit->config, "reference_gemm");  // a family without a tile config is named
  EXPECT_EQ(second.compiles(), 0);
  EXPECT_EQ(second.cache_hits(), 1);

  // want_ptx compiles (PTX is never cached) and leaves the cache as it was.
  StatusOr<CompiledKernel> ptx =
      second.compile(spec, KernelFamily::kReferenceGemm, TileConfig{}, arch, nullptr, /*want_ptx=*/true);
  ASSERT_TRUE(ptx.ok()) << ptx.status().to_string();
  EXPECT_FALSE(ptx->from_cache);
  EXPECT_FALSE(ptx->ptx.empty());
  EXPECT_NE(ptx->ptx.find(".entry"), std::string::npos);
  EXPECT_FALSE(ptx->cubin.empty());
  EXPECT_EQ(second.compiles(), 1);
  EXPECT_EQ(second.cache_hits(), 1);
  EXPECT_EQ(cache->stats()->kernels, 1);
}

// Without a cache every call that is not joined to another one compiles.
TEST_F(CompileServiceTest, WithoutACacheEachCallCompiles) {
  const KernelSpec spec = spec_of("gemm a=bf16 b=bf16 out=f32");
  const Arch arch = arch_named("sm_80");
  CompileService service(nullptr);
  EXPECT_EQ(service.cache(), nullptr);
  for (int i = 0; i < 2; ++i) {
    StatusOr<CompiledKernel> k =
        service.compile(spec, KernelFamily::kReferenceGemm, TileConfig{}, arch, nullptr, false);
    ASSERT_TRUE(k.ok()) << k.status().to_string();
    EXPECT_FALSE(k->from_cache);
  }
  EXPECT_EQ(service.compiles(), 2);
  EXPECT_EQ(service.cache_hits(), 0);
}

// A plan hands in the epilogue it lowered once: the kernel is the one emit_kernel's own lowering gives.
TEST_F(CompileServiceTest, LoweredEpilogueGivesTheSameKernel) {
  const KernelSpec spec = spec_of("gemm a=f16 b=f16 out=f16 epilogue=\"out = relu(acc + bias[n])\"");
  const Arch arch = arch_named("sm_80");
  const TileConfig cfg = default_config(spec, arch, {256, 256, 256});
  StatusOr<std::optional<EpilogueProgram>> program = spec_epilogue_program(spec);
  ASSERT_TRUE(program.ok()) << program.status().to_string();
  ASSERT_TRUE(program->has_value());
  std::unique_ptr<KernelCache> cache = open_cache();
  ASSERT_NE(cache, nullptr);
  CompileService service(cache.get());
  StatusOr<CompiledKernel> own = service.compile(spec, KernelFamily::kSm80Gemm, cfg, arch, nullptr, false);
  ASSERT_TRUE(own.ok()) << own.status().to_string();
  const EpilogueProgram* lowered = &**program;
  StatusOr<CompiledKernel> handed = service.compile(spec, KernelFamily::kSm80Gemm, cfg, arch, lowered, false);
  ASSERT_TRUE(handed.ok()) << handed.status().to_string();
  EXPECT_EQ(handed->key, own->key);
  EXPECT_EQ(handed->source, own->source);
  EXPECT_TRUE(handed->from_cache);
  EXPECT_EQ(handed->config, cfg.to_string());
  EXPECT_EQ(service.compiles(), 1);
}

}  // namespace
}  // namespace kiln
