// nvrtc tier: the sm90 family compiles with NVRTC alone (templates/ as the only headers) for sm_90a,
// for every operand pairing (FP8 tensor, per-row and DeepSeek block scales included) and output format,
// with no register spills and no stack; the PTX holds
// the instructions the design names (wgmma.mma_async, cp.async.bulk.tensor, mbarrier, setmaxnreg) and
// ptxas neither ignores setmaxnreg (C7508) nor serializes the wgmmas. Needs the CUDA toolkit's NVRTC,
// no GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/env.hpp"
#include "compiler/emit/emit.hpp"
#include "compiler/nvrtc/nvrtc.hpp"
#include "compiler/plan/sm90_plan.hpp"
#include "compiler/spec/spec.hpp"
#include "tests/common/tile_configs.hpp"

namespace kiln {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Pairing {
  const char* name;  // test-name fragment
  const char* operands;
};
const Pairing kPairings[] = {
    {"bf16", "a=bf16 b=bf16"},
    {"f16", "a=f16 b=f16"},
    {"e4m3_e4m3", "a=e4m3:tensor b=e4m3:tensor"},
    {"e4m3_e5m2", "a=e4m3:tensor b=e5m2:tensor"},
    {"e5m2_e4m3", "a=e5m2:tensor b=e4m3:tensor"},
    {"e5m2_e5m2", "a=e5m2:tensor b=e5m2:tensor"},
    // v3: per-row scales in the epilogue, DeepSeek block scales on the promoted partials.
    {"e4m3_row", "a=e4m3:m b=e4m3:n"},
    {"e5m2_row_e4m3_tensor", "a=e5m2:m b=e4m3:tensor"},
    {"e4m3_block_f32", "a=e4m3:block1x128 b=e4m3:block128x128"},
    {"e4m3_block_ue8m0", "a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0"},
    {"e4m3_block1x128_row_n", "a=e4m3:block1x128 b=e4m3:n"},
    // templates/kernels/sm90/mx.cuh: E8M0 per 32 along K, every k-step promoted.
    {"mxfp8", "a=mxfp8 b=mxfp8"},
};

Arch sm90a() { return *parse_arch("sm_90a"); }

KernelSpec spec_of(const std::string& text) {
  auto r = parse_spec(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().to_string();
  return r.ok() ? *r : KernelSpec{};
}

StatusOr<CompiledKernel> emit_and_compile(const KernelSpec& spec, const TileConfig& cfg, bool want_ptx) {
  auto k = emit_kernel(spec, KernelFamily::kSm90Gemm, cfg, sm90a());
  if (!k.ok()) return k.status();
  CompileOptions o;
  o.want_ptx = want_ptx;
  return compile_cuda(k->source, sm90a(), o);
}

// Fails on an emit or compile error, a spill, a stack frame, or a ptxas warning that the warp
// specialization did not take effect.
CompiledKernel expect_clean(const StatusOr<CompiledKernel>& r, const std::string& what) {
  EXPECT_TRUE(r.ok()) << what << ": " << r.status().to_string();
  if (!r.ok()) return {};
  EXPECT_EQ(r->spill_stores, 0) << what << "\n" << r->log;
  EXPECT_EQ(r->spill_loads, 0) << what << "\n" << r->log;
  EXPECT_EQ(r->stack_frame, 0) << what << "\n" << r->log;
  EXPECT_GT(r->registers, 0) << what << "\n" << r->log;
  EXPECT_THAT(r->log, Not(HasSubstr("C7508"))) << what << ": ptxas ignored setmaxnreg\n" << r->log;
  EXPECT_THAT(r->log, Not(HasSubstr("serialized"))) << what << ": ptxas serialized the wgmmas\n" << r->log;
  EXPECT_EQ(r->cubin.substr(0, 4), std::string("\x7f"
                                               "ELF"))
      << what;
  // The cubin records what ptxas reported (read where NVRTC's own cache leaves the log empty).
  CompiledKernel from_cubin;
  EXPECT_TRUE(read_cubin_resources(r->cubin, from_cubin)) << what;
  EXPECT_EQ(from_cubin.registers, r->registers) << what;
  EXPECT_EQ(from_cubin.stack_frame, r->stack_frame) << what;
  return *r;
}

// Emits and compiles one sm90 kernel (expect_clean's checks).
CompiledKernel compile_ok(const KernelSpec& spec, const TileConfig& cfg, const std::string& what,
                         bool want_ptx = false) {
  return expect_clean(emit_and_compile(spec, cfg, want_ptx), what);
}

// The config sweeps below compile one kernel in kCiStride (every kernel with KILN_NVRTC_FULL=1): the
// sample keeps CI under its time budget on two cores, changes with nothing but the list, and still takes
// every rule of each test (the plan checks run on every config either way); the gpu tier compiles and
// runs every config it pins on the H200.
constexpr size_t kCiStride = 4;
bool in_sample(size_t i) {
  static const bool full = [] {
    auto v = env::get(env::kNvrtcFull);
    return v && *v == "1";
  }();
  return full || i % kCiStride == 0;
}
template <typename T>
std::vector<T> sampled(const std::vector<T>& all) {
  std::vector<T> out;
  for (size_t i = 0; i < all.size(); ++i)
    if (in_sample(i)) out.push_back(all[i]);
  return out;
}

struct CompileJob {
  KernelSpec spec;
  TileConfig cfg;
  std::string what;
};

// compile_ok over many kernels on every core (NVRTC compiles independent programs concurrently; the
// checks run here, in order, on the test's thread): the config-space sweeps are most of this tier's time.
std::vector<CompiledKernel> compile_all_ok(const std::vector<CompileJob>& jobs, bool want_ptx = false) {
  std::vector<std::optional<StatusOr<CompiledKernel>>> done(jobs.size());
  std::atomic<size_t> next{0};
  const unsigned workers = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < workers; ++t) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < jobs.size(); i = next++)
        done[i].emplace(emit_and_compile(jobs[i].spec, jobs[i].cfg, want_ptx));
    });
  }
  for (std::thread& t : pool) t.join();
  std::vector<CompiledKernel> out;
  out.reserve(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) out.push_back(expect_clean(*done[i], jobs[i].what));
  return out;
}

class Sm90GemmNvrtcTest : public ::testing::TestWithParam<Pairing> {
 protected:
  KernelSpec spec(const char* out) const {
    return spec_of(std::string("gemm ") + GetParam().operands + " out=" + out);
  }
};

TEST_P(Sm90GemmNvrtcTest, DefaultConfigsCompileWithoutSpillsForEveryOutput) {
  struct Run {
    const char* out;
    int64_t m;
  };
  // The large-problem default (128 x 256) for every output, then the medium and small-M defaults.
  const Run runs[] = {{"bf16", 4096}, {"f16", 4096}, {"f32", 4096}, {"bf16", 256}, {"f32", 16}};
  for (const Run& run : runs) {
    const KernelSpec s = spec(run.out);
    const TileConfig cfg = default_config(s, sm90a(), {run.m, 7168, 7168});
    const std::string what = std::string(GetParam().operands) + " out=" + run.out + " " + cfg.to_string();
    const CompiledKernel r = compile_ok(s, cfg, what);
    std::cout << "[ registers ] " << what << ": " << r.registers << " registers, promoted "
              << sm90_promotes(s, cfg) << ", " << r.compile_ms << " ms\n";
  }
}

std::string param_name(const ::testing::TestParamInfo<Pairing>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(AllPairings, Sm90GemmNvrtcTest, ::testing::ValuesIn(kPairings), param_name);

TEST(Sm90GemmNvrtcTest, EveryShapeOfTheConfigSpaceCompiles) {
  // One config per (block_m, block_n, warps) shape of sm90_config_space, for bf16 and e4m3.
  for (const char* text : {"gemm a=bf16 b=bf16 out=bf16", "gemm a=e4m3:tensor b=e4m3:tensor out=bf16"}) {
    const KernelSpec s = spec_of(text);
    std::string seen;
    std::vector<CompileJob> jobs;
    for (const TileConfig& c : sm90_config_space(s, sm90a())) {
      const std::string shape = std::to_string(c.block_m) + "x" + std::to_string(c.block_n) + "w" +
                                std::to_string(c.warps_m) + "x" + std::to_string(c.warps_n) + "c" +
                                std::to_string(c.cluster_m) + ";";
      if (seen.find(shape) != std::string::npos) continue;
      seen += shape;
      jobs.push_back({s, c, std::string(text) + " " + c.to_string()});
    }
    EXPECT_GE(jobs.size(), 16u) << text;
    jobs = sampled(jobs);
    const std::vector<CompiledKernel> rs = compile_all_ok(jobs);
    for (size_t i = 0; i < jobs.size(); ++i)
      std::cout << "[ registers ] " << jobs[i].what << ": " << rs[i].registers << "\n";
  }
}

TEST(Sm90GemmPtxTest, UsesTmaWgmmaMbarriersAndSetmaxnreg) {
  struct Case {
    const char* spec;
    int64_t m;
    std::vector<const char*> expect;
  };
  const Case cases[] = {
      {"gemm a=bf16 b=bf16 out=bf16", 4096, {"wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"}},
      {"gemm a=f16 b=f16 out=f32", 256, {"wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"}},
      {"gemm a=e4m3:tensor b=e5m2:tensor out=bf16",
       4096,
       {"wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e5m2"}},
      {"gemm a=e5m2:tensor b=e4m3:tensor out=f16",
       256,
       {"wgmma.mma_async.sync.aligned.m64n128k32.f32.e5m2.e4m3"}},
  };
  for (const Case& c : cases) {
    const KernelSpec s = spec_of(c.spec);
    const CompiledKernel r =
        compile_ok(s, default_config(s, sm90a(), {c.m, 7168, 7168}), c.spec, /*want_ptx=*/true);
    for (const char* e : c.expect) EXPECT_THAT(r.ptx, HasSubstr(e)) << c.spec;
    for (const char* e : {"cp.async.bulk.tensor.2d", "mbarrier.try_wait.parity", "mbarrier.arrive.expect_tx",
                          "setmaxnreg.dec", "setmaxnreg.inc", "wgmma.fence", "wgmma.commit_group",
                          "wgmma.wait_group", "prefetch.tensormap"}) {
      EXPECT_THAT(r.ptx, HasSubstr(e)) << c.spec;
    }
    EXPECT_THAT(r.ptx, Not(HasSubstr("mma.sync"))) << c.spec;
  }
}

TEST(Sm90GemmPtxTest, ClustersMulticastBAndSynchronizeTheCluster) {
  for (const char* text : {"gemm a=bf16 b=bf16 out=bf16", "gemm a=e4m3:tensor b=e5m2:tensor out=f32"}) {
    const KernelSpec s = spec_of(text);
    TileConfig c = default_config(s, sm90a(), {4096, 7168, 7168});
    c.cluster_m = 2;
    auto k = emit_kernel(s, KernelFamily::kSm90Gemm, c, sm90a());
    ASSERT_TRUE(k.ok()) << k.status().to_string();
    EXPECT_THAT(k->source, HasSubstr("__cluster_dims__(2, 1, 1)"));
    EXPECT_THAT(c.to_string(), HasSubstr("_c2"));
    const CompiledKernel r = compile_ok(s, c, std::string(text) + " " + c.to_string(), /*want_ptx=*/true);
    for (const char* e : {".multicast::cluster", "barrier.cluster.arrive", "mapa.shared::cluster",
                          "mbarrier.arrive.shared::cluster", "%cluster_ctarank"}) {
      EXPECT_THAT(r.ptx, HasSubstr(e)) << text;
    }
    // A cluster-scope release on the per-K-tile arrive costs MEMBAR.ALL.GPU each time (docs/performance.md).
    EXPECT_THAT(r.ptx, Not(HasSubstr("mbarrier.arrive.release.cluster"))) << text;
  }
  // Without clusters none of it is there.
  const KernelSpec s = spec_of("gemm a=bf16 b=bf16 out=bf16");
  TileConfig single = default_config(s, sm90a(), {4096, 7168, 7168});
  single.cluster_m = 1;
  const CompiledKernel r = compile_ok(s, single, "bf16 " + single.to_string(), /*want_ptx=*/true);
  EXPECT_THAT(r.ptx, Not(HasSubstr("multicast")));
  EXPECT_THAT(r.ptx, Not(HasSubstr("barrier.cluster")));
}

// ---- v3: block and per-row scales ---------------------------------------------------------------

// Every promotable shape of the block-scaled config space compiles without spills (f32 and ue8m0
// scales); the PTX promotes with fma.rn.f32 and reads the scales with read-only global loads.
TEST(Sm90BlockScaleNvrtcTest, EveryShapeOfTheBlockConfigSpaceCompiles) {
  struct Case {
    const char* spec;
    const char* scale_load;
  };
  const Case cases[] = {{"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", "ld.global.nc.f32"},
                        {"gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=f32", "ld.global.nc.u8"}};
  for (const Case& c : cases) {
    const KernelSpec s = spec_of(c.spec);
    std::string seen;
    std::vector<CompileJob> jobs;
    for (const TileConfig& cfg : sm90_config_space(s, sm90a())) {
      EXPECT_TRUE(sm90_promotes(s, cfg)) << c.spec << " " << cfg.to_string();
      // One config per shape and scale path: most configs stage their scales, and the
      // deepest rings that leave no room for the slots keep the per-thread loads.
      const std::string shape = std::to_string(cfg.block_m) + "x" + std::to_string(cfg.block_n) + "k" +
                                std::to_string(cfg.block_k) + "w" + std::to_string(cfg.warps_m) + "x" +
                                std::to_string(cfg.warps_n) + "c" + std::to_string(cfg.cluster_m) +
                                (sm90_staged_scales(s, cfg) ? "s" : "g") + ";";
      if (seen.find(shape) != std::string::npos) continue;
      seen += shape;
      jobs.push_back({s, cfg, std::string(c.spec) + " " + cfg.to_string()});
    }
    // 64x64, 64x128, 128x64, 128x128 (w8x1 and w4x2), 64x256 over 2 warpgroups, 128x192 (w8x1); each in
    // clusters too; v4: 128x128 and 64x128 with bk256, 192x128 over 3 warpgroups, each in clusters too.
    EXPECT_GE(jobs.size(), 16u) << c.spec;
    jobs = sampled(jobs);
    const std::vector<CompiledKernel> rs = compile_all_ok(jobs, /*want_ptx=*/true);
    for (size_t i = 0; i < jobs.size(); ++i) {
      const TileConfig& cfg = jobs[i].cfg;
      const CompiledKernel& r = rs[i];
      std::cout << "[ registers ] " << jobs[i].what << ": " << r.registers << "\n";
      for (const char* e : {"wgmma.mma_async.sync.aligned", "cp.async.bulk.tensor.2d", "fma.rn.f32"})
        EXPECT_THAT(r.ptx, HasSubstr(e)) << c.spec << " " << cfg.to_string();
      // v4 configs stage the scales through shared memory (templates/kernels/sm90/producer.cuh, staged scales); E8M0 keeps a
      // synchronous byte path for rows that are not a multiple of 4 bytes.
      if (sm90_staged_scales(s, cfg)) {
        EXPECT_THAT(r.ptx, HasSubstr("cp.async.ca.shared.global")) << cfg.to_string();
        EXPECT_THAT(r.ptx, HasSubstr("cp.async.mbarrier.arrive.noinc")) << cfg.to_string();
        EXPECT_THAT(r.ptx, Not(HasSubstr("ld.global.nc.f32"))) << cfg.to_string();
      } else {
        EXPECT_THAT(r.ptx, HasSubstr(c.scale_load)) << c.spec << " " << cfg.to_string();
      }
    }
  }
}

// ---- v4: two-atom stages and three consumer warpgroups (templates/kernels/sm90/producer.cuh, staged scales) -------------------

TileConfig v4_config(int bm, int bn, int bk, int stages, int wm, int wn, int cluster = 1) {
  return test::tile_config(bm, bn, bk, stages, wm, wn, 8, cluster);
}

// Every block-scaled operand pairing: f32 and E8M0 blocks, blocks x per-channel, tensor x E8M0 blocks.
const char* const kBlockScalePairs[] = {
    "a=e4m3:block1x128 b=e4m3:block128x128", "a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0",
    "a=e4m3:block1x128 b=e4m3:n", "a=e4m3:tensor b=e4m3:block128x128:ue8m0"};

// Every v4 variant the gpu tier pins (tests/gpu/sm90_gemm_gpu_test.cpp, pins 19-23) compiles for every
// block pairing and output with no spills and no serialized wgmma; prints their registers.
TEST(Sm90BlockScaleNvrtcTest, V4VariantsCompileWithoutSpills) {
  const TileConfig configs[] = {v4_config(128, 128, 256, 3, 8, 1), v4_config(64, 128, 256, 4, 4, 1),
                                v4_config(192, 128, 128, 5, 12, 1), v4_config(192, 128, 128, 5, 12, 1, 2),
                                v4_config(128, 128, 256, 3, 8, 1, 2)};
  std::vector<CompileJob> jobs;
  for (const TileConfig& cfg : configs) {
    for (const char* pair : kBlockScalePairs) {
      for (const char* out : {"bf16", "f32"}) {
        const KernelSpec s = spec_of(std::string("gemm ") + pair + " out=" + out);
        ASSERT_TRUE(sm90_check_config(s, sm90a(), cfg).ok()) << sm90_check_config(s, sm90a(), cfg).to_string();
        EXPECT_TRUE(sm90_staged_scales(s, cfg)) << cfg.to_string();
        jobs.push_back({s, cfg, std::string(pair) + " out=" + out + " " + cfg.to_string()});
      }
    }
  }
  jobs = sampled(jobs);
  const std::vector<CompiledKernel> rs = compile_all_ok(jobs, /*want_ptx=*/true);
  for (size_t i = 0; i < jobs.size(); ++i) {
    const std::string& what = jobs[i].what;
    const CompiledKernel& r = rs[i];
    std::cout << "[ registers ] " << what << ": " << r.registers << " registers, " << r.spill_stores
              << " spill stores, " << r.spill_loads << " spill loads, " << r.compile_ms << " ms\n";
    for (const char* e :
         {"wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3", "cp.async.ca.shared.global",
          "cp.async.mbarrier.arrive.noinc", "ld.shared.u32", "fma.rn.f32", "setmaxnreg.inc"})
      EXPECT_THAT(r.ptx, HasSubstr(e)) << what;
    // Two-atom stages keep one batch in flight while promoting the other partial.
    if (jobs[i].cfg.block_k == 256) EXPECT_THAT(r.ptx, HasSubstr("wgmma.wait_group.sync.aligned 1")) << what;
  }
  // The promoted tensor-scaled path takes bk256 too (no scales to stage).
  const KernelSpec t = spec_of("gemm a=e4m3:tensor b=e4m3:tensor out=bf16");
  EXPECT_FALSE(sm90_staged_scales(t, configs[0]));
  compile_ok(t, configs[0], "tensor " + configs[0].to_string());
}

// N = 176 per consumer warpgroup (in the config space; with TMA stores in 16-column boxes it is the
// default at N = 2112, docs/performance.md): 16-bit and FP8 (fast-accumulating; a promoted
// partial does not fit above 128 columns) compile without spills.
TEST(Sm90GemmNvrtcTest, N176TilesCompileWithoutSpills) {
  const struct {
    const char* spec;
    int bk;
    const char* op;
  } runs[] = {{"gemm a=bf16 b=bf16 out=bf16", 64, "m64n176k16.f32.bf16.bf16"},
              {"gemm a=e4m3:m b=e5m2:n out=f32", 128, "m64n176k32.f32.e4m3.e5m2"}};
  for (const auto& r : runs) {
    const KernelSpec s = spec_of(r.spec);
    const TileConfig c = v4_config(128, 176, r.bk, 4, 8, 1);
    ASSERT_TRUE(sm90_check_config(s, sm90a(), c).ok()) << sm90_check_config(s, sm90a(), c).to_string();
    const CompiledKernel res = compile_ok(s, c, std::string(r.spec) + " " + c.to_string(), true);
    EXPECT_THAT(res.ptx, HasSubstr(r.op)) << r.spec;
  }
}

// Block scales on 64 x 192 promoted warpgroups (one atom per stage, two consumers along M; the kernel's
// templates/kernels/sm90/promotion.cuh): every block pairing and output, plain, in clusters of 2 and with TMA stores, compiles
// without spills inside the consumers' 232 registers; the PTX holds the n192 FP8 wgmma and the fma.rn
// promotion.
TEST(Sm90BlockScaleNvrtcTest, Block192TilesCompileWithoutSpills) {
  TileConfig plain = v4_config(128, 192, 128, 5, 8, 1);
  TileConfig clustered = v4_config(128, 192, 128, 4, 8, 1, 2);
  TileConfig tma = v4_config(128, 192, 128, 3, 8, 1);
  tma.tma_store = 1;
  size_t case_index = 0;
  for (const TileConfig& cfg : {plain, clustered, tma}) {
    for (const char* pair : kBlockScalePairs) {
      for (const char* out : {"bf16", "f32"}) {
        const KernelSpec s = spec_of(std::string("gemm ") + pair + " out=" + out);
        ASSERT_TRUE(sm90_check_config(s, sm90a(), cfg).ok()) << sm90_check_config(s, sm90a(), cfg).to_string();
        EXPECT_TRUE(sm90_promotes(s, cfg)) << cfg.to_string();
        // Staged through shared memory: the slots fit beside these rings.
        EXPECT_TRUE(sm90_staged_scales(s, cfg)) << cfg.to_string();
        if (!in_sample(case_index++)) continue;
        const std::string what = std::string(pair) + " out=" + out + " " + cfg.to_string();
        const CompiledKernel r = compile_ok(s, cfg, what, /*want_ptx=*/true);
        std::cout << "[ registers ] " << what << ": " << r.registers << " registers\n";
        for (const char* e : {"wgmma.mma_async.sync.aligned.m64n192k32.f32.e4m3.e4m3", "fma.rn.f32",
                              "cp.async.mbarrier.arrive.noinc", "setmaxnreg.inc.sync.aligned.u32 232"})
          EXPECT_THAT(r.ptx, HasSubstr(e)) << what;
      }
    }
  }
}

// Block scales on 64 x 256 warpgroups (one atom per stage; templates/kernels/sm90/mainloop.cuh, half partials): each K tile runs as
// two m64n128 batches into one half-width partial. Every block pairing and output, plain, one consumer,
// in clusters of 2 and with TMA stores (16-bit outputs: an f32 slab does not fit beside the ring),
// compiles without spills; split-K is refused with a message.
TEST(Sm90BlockScaleNvrtcTest, Block256TilesPromoteInHalvesWithoutSpills) {
  TileConfig plain = v4_config(128, 256, 128, 4, 8, 1);
  TileConfig one = v4_config(64, 256, 128, 5, 4, 1);
  TileConfig clustered = v4_config(128, 256, 128, 4, 8, 1, 2);
  TileConfig tma = v4_config(128, 256, 128, 3, 8, 1);
  tma.tma_store = 1;
  size_t case_index = 0;
  for (const TileConfig& cfg : {plain, one, clustered, tma}) {
    for (const char* pair : kBlockScalePairs) {
      for (const char* out : {"bf16", "f32"}) {
        if (cfg.tma_store && std::string(out) == "f32") continue;
        const KernelSpec s = spec_of(std::string("gemm ") + pair + " out=" + out);
        ASSERT_TRUE(sm90_check_config(s, sm90a(), cfg).ok())
            << sm90_check_config(s, sm90a(), cfg).to_string();
        EXPECT_TRUE(sm90_promotes(s, cfg)) << cfg.to_string();
        EXPECT_TRUE(sm90_half_partial(s, cfg)) << cfg.to_string();
        // Staged through shared memory: the slots fit beside these rings.
        EXPECT_TRUE(sm90_staged_scales(s, cfg)) << cfg.to_string();
        if (!in_sample(case_index++)) continue;
        const std::string what = std::string(pair) + " out=" + out + " " + cfg.to_string();
        const CompiledKernel r = compile_ok(s, cfg, what, /*want_ptx=*/true);
        std::cout << "[ registers ] " << what << ": " << r.registers << " registers\n";
        for (const char* e : {"wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3", "fma.rn.f32",
                              "cp.async.mbarrier.arrive.noinc"})
          EXPECT_THAT(r.ptx, HasSubstr(e)) << what;
        EXPECT_THAT(r.ptx, Not(HasSubstr("m64n256k32"))) << what;
      }
    }
  }
  TileConfig split = plain;
  split.split_k = 2;
  const KernelSpec block = spec_of("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16");
  const Status st = sm90_check_config(block, sm90a(), split);
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.to_string(), HasSubstr("split_k=2"));
  TileConfig two_atoms = v4_config(128, 256, 256, 2, 8, 1);
  EXPECT_FALSE(sm90_check_config(block, sm90a(), two_atoms).ok());
}

// The per-thread global loads of two b blocks (templates/kernels/sm90/promotion.cuh's b1: a 192-column warpgroup) still compile where
// the staged slots do not fit: a grouped 64 x 192 ring of 7 stages whose expert table leaves no room.
TEST(Sm90BlockScaleNvrtcTest, UnstagedTwoBlockWarpgroupsLoadTheirOwnScales) {
  const TileConfig cfg = v4_config(64, 192, 128, 7, 4, 1);
  for (const char* spec :
       {"grouped_gemm[experts=8,layout=offsets] a=e4m3:block1x128 b=e4m3:block128x128 out=bf16",
        "grouped_gemm[experts=8,layout=masked] a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 "
        "out=bf16"}) {
    const KernelSpec s = spec_of(spec);
    ASSERT_TRUE(sm90_check_config(s, sm90a(), cfg).ok()) << sm90_check_config(s, sm90a(), cfg).to_string();
    EXPECT_FALSE(sm90_staged_scales(s, cfg)) << spec;
    const CompiledKernel r = compile_ok(s, cfg, std::string(spec) + " " + cfg.to_string(), /*want_ptx=*/true);
    EXPECT_THAT(r.ptx, HasSubstr("wgmma.mma_async.sync.aligned.m64n192k32.f32.e4m3.e4m3")) << spec;
    EXPECT_THAT(r.ptx, Not(HasSubstr("cp.async.mbarrier.arrive.noinc"))) << spec;
    EXPECT_THAT(r.ptx, HasSubstr(std::string(spec).find("ue8m0") == std::string::npos ? "ld.global.nc.f32"
                                                                                      : "ld.global.nc.u8"))
        << spec;
  }
  // Two experts fewer and the slots fit: staged.
  EXPECT_TRUE(sm90_staged_scales(
      spec_of("grouped_gemm[experts=2,layout=offsets] a=e4m3:block1x128 b=e4m3:block128x128 out=bf16"), cfg));
}

// What `kiln compile --arch sm_90a --emit ptx examples/specs/fp8_block_gemm.kiln` shows: the default
// config at the DeepSeek shape, its resource report and the instructions.
TEST(Sm90BlockScaleNvrtcTest, DefaultBlockConfigUsesWgmmaTmaAndPromotes) {
  for (const char* out : {"bf16", "f16", "f32"}) {
    const KernelSpec s = spec_of(std::string("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=") + out);
    const TileConfig cfg = default_config(s, sm90a(), {4096, 7168, 7168});
    // 16-bit outputs: 128 x 256 promoted in halves, staged scales, clusters of 2, TMA stores.
    // f32 outputs (no room for the staged output tile) keep the two-atom default (docs/performance.md):
    // two 128-K atoms per stage, staged scales, clusters of 2, TMA stores at M >= 256 (the kernel's
    // templates/kernels/sm90/epilogue_tma_store.cuh).
    EXPECT_EQ(cfg.to_string(), std::string(out) == "f32" ? "bm128_bn128_bk256_s2_w8x1_g8_c2_t"
                                                           : "bm128_bn256_bk128_s3_w8x1_g8_c2_t");
    const CompiledKernel r = compile_ok(s, cfg, std::string("block out=") + out + " " + cfg.to_string(),
                                       /*want_ptx=*/true);
    std::cout << "[ registers ] block out=" << out << " " << cfg.to_string() << ": " << r.registers
              << " registers, " << r.spill_stores << " spill stores, " << r.spill_loads << " spill loads, "
              << r.compile_ms << " ms\n";
    for (const char* e : {"wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3", "cp.async.bulk.tensor.2d",
                          "mbarrier.try_wait.parity", "setmaxnreg.inc", "fma.rn.f32",
                          // the producer warp stages the scales: 4-byte cp.async arriving on the stage barrier
                          "cp.async.ca.shared.global", "cp.async.mbarrier.arrive.noinc"}) {
      EXPECT_THAT(r.ptx, HasSubstr(e)) << out;
    }
    EXPECT_THAT(r.ptx, Not(HasSubstr("mma.sync"))) << out;
  }
}

TEST(Sm90BlockScalePlanTest, ConfigRulesNameTheReason) {
  const KernelSpec block = spec_of("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16");
  const KernelSpec row = spec_of("gemm a=e4m3:m b=e4m3:n out=bf16");
  EXPECT_TRUE(sm90_block_scaled(block));
  EXPECT_TRUE(sm90_block_scaled(spec_of("gemm a=e4m3:tensor b=e4m3:block128x128 out=f32")));
  EXPECT_FALSE(sm90_block_scaled(row));
  // Defaults: promoted 128 x 128 over two consumer warpgroups for large problems (the one-atom v3 tile
  // with ue8m0 scales or a grid under two waves; v4's two-atom clustered tile otherwise); 64-row tiles for
  // small M.
  const TileConfig big = default_config(block, sm90a(), {300, 7168, 7168});
  EXPECT_EQ(big.to_string(), "bm128_bn128_bk128_s5_w8x1_g8_t");
  EXPECT_EQ(big.block_m, 128);
  EXPECT_EQ(big.block_n, 128);
  EXPECT_EQ(big.warps_m, 8);
  EXPECT_EQ(big.warps_n, 1);
  EXPECT_TRUE(sm90_promotes(block, big));
  for (int64_t m : {1, 16, 64, 65, 300, 4096}) {
    for (int64_t n : {129, 2112, 7168}) {
      const TileConfig c = default_config(block, sm90a(), {m, n, 7168});
      EXPECT_TRUE(sm90_check_config(block, sm90a(), c).ok()) << m << "x" << n << " " << c.to_string();
      EXPECT_TRUE(sm90_promotes(block, c)) << c.to_string();
    }
  }
  // Per-row scales keep the fast 128 x 256 tile (epilogue only).
  const TileConfig row_big = default_config(row, sm90a(), {4096, 7168, 7168});
  EXPECT_EQ(row_big.block_n, 256);
  EXPECT_FALSE(sm90_promotes(row, row_big));
  // 128 x 256 over one warpgroup along N: 256 columns span two 128-column scale blocks, promoted in two
  // halves with one atom per stage (templates/kernels/sm90/mainloop.cuh, half partials); two atoms per stage are refused.
  Status st = sm90_check_config(block, sm90a(), row_big);
  EXPECT_TRUE(st.ok()) << st.to_string();
  TileConfig wide_two = row_big;
  wide_two.block_k = 256;
  wide_two.stages = 2;
  wide_two.tma_store = 0;
  st = sm90_check_config(block, sm90a(), wide_two);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("128-column scale block"));
  // 256 x 128: warpgroup tiles of 128 x 128 cannot hold a partial.
  TileConfig tall = big;
  tall.block_m = 256;
  tall.stages = 4;
  st = sm90_check_config(block, sm90a(), tall);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("cannot be promoted"));
  // 64 x 256 over two warpgroups along N: each warpgroup owns one 128-column block.
  TileConfig split = big;
  split.tma_store = 0;  // the direct epilogue's shared-memory budget
  split.block_m = 64;
  split.block_n = 256;
  split.warps_m = 4;
  split.warps_n = 2;
  split.stages = 5;
  EXPECT_TRUE(sm90_check_config(block, sm90a(), split).ok()) << sm90_check_config(block, sm90a(), split).to_string();
  // Sizes: block scales need K % 128 == 0 (the spec's rule); per-row scales take K tails.
  EXPECT_THAT(can_implement(block, sm90a(), {257, 384, 1040}).message(), HasSubstr("K=1040"));
  EXPECT_TRUE(can_implement(block, sm90a(), {257, 384, 1152}).ok());
  EXPECT_TRUE(can_implement(row, sm90a(), {257, 384, 1040}).ok());
  // The emitted unit names the scales.
  auto k = emit_kernel(spec_of("gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=f32"),
                       KernelFamily::kSm90Gemm, split, sm90a());
  ASSERT_TRUE(k.ok()) << k.status().to_string();
  for (const char* line : {"kScaleA = kiln_dev::Scale::kBlock1x128;", "kScaleTypeA = kiln_dev::ScaleType::kUe8m0;",
                           "kScaleB = kiln_dev::Scale::kBlock128x128;", "kScaleTypeB = kiln_dev::ScaleType::kUe8m0;",
                           "kPromote = true;"}) {
    EXPECT_THAT(k->source, HasSubstr(line));
  }
  // Tolerances: promoted (block) is K-independent; fast accumulation (row, 128 x 256) grows with K.
  EXPECT_DOUBLE_EQ(sm90_check_tolerance(block, big, 16384, 1e-5), 5e-4);
  EXPECT_GT(sm90_check_tolerance(row, row_big, 16384, 1e-5), sm90_check_tolerance(row, row_big, 1024, 1e-5));
  // MXFP8 runs on the sm90 family (templates/kernels/sm90/mx.cuh); mixed inputs stay on the portable family.
  EXPECT_TRUE(sm90_supports(spec_of("gemm a=mxfp8 b=mxfp8 out=bf16"), sm90a()));
  EXPECT_FALSE(sm90_supports(spec_of("gemm a=bf16 b=e4m3:n out=bf16"), sm90a()));
}

// ---- the dispatcher -----------------------------------------------------------------------------

TEST(Sm90SelectFamilyTest, Sm90OnSm90aForItsFormatsPortableElsewhere) {
  for (const Pairing& p : kPairings) {
    const KernelSpec s = spec_of(std::string("gemm ") + p.operands + " out=bf16");
    auto on90a = select_family(s, sm90a());
    ASSERT_TRUE(on90a.ok()) << on90a.status().to_string();
    EXPECT_EQ(*on90a, KernelFamily::kSm90Gemm) << p.operands;
    for (const char* arch : {"sm_90", "sm_89", "sm_80"}) {
      auto f = select_family(s, *parse_arch(arch));
      ASSERT_TRUE(f.ok()) << f.status().to_string();
      EXPECT_EQ(*f, KernelFamily::kSm80Gemm) << p.operands << " on " << arch;
    }
  }
}

TEST(Sm90PlanTest, ConfigsReadAsConsumerWarpgroups) {
  const KernelSpec bf16 = spec_of("gemm a=bf16 b=bf16 out=bf16");
  const KernelSpec fp8 = spec_of("gemm a=e4m3:tensor b=e4m3:tensor out=bf16");
  const TileConfig wide = default_config(bf16, sm90a(), {4096, 7168, 7168});
  EXPECT_EQ(wide.block_m, 128);
  EXPECT_EQ(wide.block_n, 256);
  EXPECT_EQ(wide.block_k, 64);
  EXPECT_EQ(wide.cluster_m, 1);  // clusters are opt-in until measured faster (docs/performance.md)
  EXPECT_EQ(sm90_threads(bf16, wide), 384);
  const LaunchShape ls = launch_shape(bf16, KernelFamily::kSm90Gemm, wide, {4096, 7168, 7168});
  EXPECT_EQ(ls.block_x, 384u);
  EXPECT_EQ(ls.grid_x, 32u * 28u);  // tiles; the runtime caps it at the SM count
  EXPECT_LE(ls.dynamic_smem, sm90a().max_smem_per_block());
  EXPECT_EQ(default_config(fp8, sm90a(), {4096, 7168, 7168}).block_k, 128);
  // The portable family stays reachable on sm_90a with its own rules.
  const TileConfig portable = default_config(bf16, sm90a(), KernelFamily::kSm80Gemm, {4096, 7168, 7168});
  EXPECT_TRUE(check_config(bf16, sm90a(), KernelFamily::kSm80Gemm, portable).ok());
  EXPECT_FALSE(check_config(bf16, sm90a(), KernelFamily::kSm90Gemm, portable).ok());
  // Rejections name the field.
  TileConfig bad = wide;
  bad.block_k = 32;
  EXPECT_THAT(sm90_check_config(bf16, sm90a(), bad).message(), HasSubstr("block_k=32"));
  bad = wide;
  bad.warps_m = 8;
  bad.warps_n = 2;
  EXPECT_THAT(sm90_check_config(bf16, sm90a(), bad).message(), HasSubstr("consumer warpgroups"));
  bad = wide;
  bad.stages = 6;
  EXPECT_EQ(sm90_check_config(bf16, sm90a(), bad).code(), StatusCode::kResourceExhausted);
  bad = wide;
  bad.cluster_m = 4;
  EXPECT_THAT(sm90_check_config(bf16, sm90a(), bad).message(), HasSubstr("cluster_m=4"));
  // Clusters are an sm90 notion: the portable family refuses them.
  TileConfig clustered = portable;
  clustered.cluster_m = 2;
  EXPECT_THAT(check_config(bf16, sm90a(), KernelFamily::kSm80Gemm, clustered).message(),
              HasSubstr("cluster_m=2"));
  // cluster_m is optional in JSON and in the config text.
  TileConfig c1 = wide;
  c1.cluster_m = 1;
  c1.tma_store = 0;
  EXPECT_EQ(config_to_json(c1).count("cluster_m"), 0u);
  TileConfig c2 = c1;
  c2.cluster_m = 2;
  auto back = config_from_json(config_to_json(c2));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(*back, c2);
  EXPECT_EQ(c2.to_string(), c1.to_string() + "_c2");
  const LaunchShape ls2 = launch_shape(bf16, KernelFamily::kSm90Gemm, c2, {4096 + 128, 7168, 7168});
  EXPECT_EQ(ls2.grid_x, 2u * 17u * 28u);  // 33 tile rows -> 17 cluster rows of 2 CTAs
  // Promotion where the registers allow it: 64 x 128 warpgroup tiles, not 64 x 256.
  TileConfig square = wide;
  square.block_n = 128;
  square.block_k = 128;
  EXPECT_TRUE(sm90_promotes(fp8, square));
  TileConfig wide8 = square;
  wide8.block_n = 256;
  EXPECT_FALSE(sm90_promotes(fp8, wide8));
  EXPECT_FALSE(sm90_promotes(bf16, wide));
}


// ---- grouped GEMMs (templates/kernels/sm90/scheduler.cuh) -------------------------------------------------------

namespace grouped {

const char* const kGroupedSpecs[] = {
    "grouped_gemm[experts=32,layout=offsets] a=bf16 b=bf16 out=bf16",
    "grouped_gemm[experts=6,layout=masked] a=f16 b=f16 out=f32",
    "grouped_gemm[experts=128,layout=offsets] a=e4m3:tensor b=e4m3:tensor out=bf16",
    "grouped_gemm[experts=32,layout=offsets] a=e4m3:m b=e4m3:n out=bf16",
    "grouped_gemm[experts=32,layout=offsets] a=e4m3:block1x128 b=e4m3:block128x128 out=bf16",
    "grouped_gemm[experts=8,layout=masked] a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=f32"};

// Offsets and masked grouped specs take the sm90 family on sm_90a (the portable one elsewhere), and
// their default configs (decode-sized and large rows per expert) and clustered / two-atom pins compile
// without spills, loading W through a 3-D tensor map.
TEST(Sm90GroupedNvrtcTest, GroupedSpecsCompileWithThreeDimensionalWeightMaps) {
  size_t case_index = 0;
  for (const char* text : kGroupedSpecs) {
    const KernelSpec s = spec_of(text);
    auto fam = select_family(s, sm90a());
    ASSERT_TRUE(fam.ok()) << fam.status().to_string();
    EXPECT_EQ(*fam, KernelFamily::kSm90Gemm) << text;
    auto portable = select_family(s, *parse_arch("sm_89"));
    ASSERT_TRUE(portable.ok());
    EXPECT_EQ(*portable, KernelFamily::kSm80Gemm) << text;
    std::vector<TileConfig> configs = {default_config(s, sm90a(), {4, 5760, 2880}),
                                       default_config(s, sm90a(), {512, 5760, 2880})};
    TileConfig clustered = default_config(s, sm90a(), {512, 5760, 2880});
    clustered.cluster_m = 2;
    if (sm90_check_config(s, sm90a(), clustered).ok()) configs.push_back(clustered);
    for (const TileConfig& c : configs) {
      if (!in_sample(case_index++)) continue;
      const CompiledKernel r = compile_ok(s, c, std::string(text) + " " + c.to_string(), /*want_ptx=*/true);
      EXPECT_THAT(r.ptx, HasSubstr("cp.async.bulk.tensor.3d")) << text << " " << c.to_string();
      EXPECT_THAT(r.ptx, HasSubstr("cp.async.bulk.tensor.2d")) << text << " " << c.to_string();
      if (c.cluster_m > 1) EXPECT_THAT(r.ptx, HasSubstr(".multicast::cluster")) << text;
    }
  }
}

// The per-CTA expert table is part of the shared-memory budget, host and kernel alike (12 bytes per
// expert), and the launch covers the worst case of tiles (one partial tile row per expert).
TEST(Sm90GroupedPlanTest, ExpertTableAndGridBound) {
  const KernelSpec dense = spec_of("gemm a=bf16 b=bf16 out=bf16");
  const KernelSpec g = spec_of("grouped_gemm[experts=100,layout=offsets] a=bf16 b=bf16 out=bf16");
  TileConfig c = default_config(dense, sm90a(), {4096, 4096, 4096});
  EXPECT_EQ(sm90_smem_bytes(g, c), sm90_smem_bytes(dense, c) + 12 * 100);
  const LaunchShape ls = sm90_launch_shape(g, c, {1000, 4096, 4096});
  const int64_t tiles_n = (4096 + c.block_n - 1) / c.block_n;
  EXPECT_EQ(ls.grid_x, static_cast<unsigned>(((1000 + c.block_m - 1) / c.block_m + 100) * tiles_n));
  // Beyond the table's limit the portable family takes over.
  const KernelSpec many = spec_of("grouped_gemm[experts=2000,layout=offsets] a=bf16 b=bf16 out=bf16");
  EXPECT_FALSE(sm90_supports(many, sm90a()));
}

}  // namespace grouped

// ---- split-K (templates/kernels/sm90/split_k.cuh) -------------------------------------------------------------

// Split-K configs compile without spills for every scale kind (one- and two-atom stages); the PTX takes a
// ticket with a GPU-scope atomic after a fence and reads the partials past L1; the rules refuse split-K
// with clusters or grouped problems, naming the field.
TEST(Sm90SplitKNvrtcTest, SplitConfigsCompileAndTheRulesNameTheReason) {
  struct Case {
    const char* spec;
    int atoms;
  };
  const Case cases[] = {{"gemm a=bf16 b=bf16 out=bf16", 1},
                        {"gemm a=e4m3:tensor b=e4m3:tensor out=f32", 1},
                        {"gemm a=e4m3:m b=e4m3:n out=bf16", 1},
                        {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 1},
                        {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 2}};
  for (const Case& c : cases) {
    const KernelSpec s = spec_of(c.spec);
    TileConfig cfg = v4_config(64, 64, c.atoms * 128 / std::max(1, format_bits(s.a.format) / 8),
                               c.atoms == 2 ? 4 : 8, 4, 1);
    cfg.split_k = 4;
    ASSERT_TRUE(sm90_check_config(s, sm90a(), cfg).ok()) << c.spec << " " << cfg.to_string();
    EXPECT_THAT(cfg.to_string(), HasSubstr("_k4"));
    const CompiledKernel r =
        compile_ok(s, cfg, std::string(c.spec) + " " + cfg.to_string(), /*want_ptx=*/true);
    for (const char* e : {"atom.global.add.u32", "fence.acq_rel.gpu", "ld.global.cg.f32", "bar.sync"})
      EXPECT_THAT(r.ptx, HasSubstr(e)) << c.spec;
    // Workspace: the fixed counter region, then 33 x 1 tiles of 64 x 64 x 4 splits of f32 partials; the
    // counters never move with M (a larger M only adds partials after them).
    EXPECT_EQ(sm90_workspace_bytes(s, cfg, {64, 2112, 7168}),
              kSm90SplitCounterSlots * 4 + int64_t{33} * 4 * 64 * 64 * 4);
    EXPECT_EQ(sm90_workspace_bytes(s, cfg, {128, 2112, 7168}),
              kSm90SplitCounterSlots * 4 + int64_t{66} * 4 * 64 * 64 * 4);
    EXPECT_EQ(sm90_split_slots(cfg, {128, 2112, 7168}), 66);
    TileConfig clustered = cfg;
    clustered.cluster_m = 2;
    const Status st = sm90_check_config(s, sm90a(), clustered);
    EXPECT_FALSE(st.ok());
    EXPECT_THAT(st.message(), HasSubstr("split_k=4"));
  }
  const KernelSpec g = spec_of("grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16");
  TileConfig gc = default_config(g, sm90a(), {64, 2112, 7168});
  gc.cluster_m = 1;
  gc.split_k = 2;
  EXPECT_FALSE(sm90_check_config(g, sm90a(), gc).ok());
  // No split, no workspace.
  const KernelSpec d = spec_of("gemm a=bf16 b=bf16 out=bf16");
  EXPECT_EQ(sm90_workspace_bytes(d, default_config(d, sm90a(), {4096, 4096, 4096}), {4096, 4096, 4096}), 0);
}

// Unpromoted two-atom stages compile without spills for 16-bit and fast-accumulating FP8 operands (the
// decode tiles and the wide 128 x 256), with and without split-K, and load two boxes of each operand per
// stage.
TEST(Sm90TwoAtomNvrtcTest, UnpromotedTwoAtomStagesCompile) {
  for (const char* text : {"gemm a=bf16 b=bf16 out=bf16", "gemm a=f16 b=f16 out=f32",
                           "gemm a=e4m3:tensor b=e4m3:tensor out=bf16", "gemm a=e4m3:m b=e4m3:n out=bf16"}) {
    const KernelSpec s = spec_of(text);
    const int eb = std::max(1, format_bits(s.a.format) / 8);
    struct Shape {
      int bm, bn, wm, stages, split;
    };
    for (const Shape sh : {Shape{64, 64, 4, 6, 1}, Shape{128, 256, 8, 2, 1}}) {
      TileConfig c = v4_config(sh.bm, sh.bn, 256 / eb, sh.stages, sh.wm, 1);
      c.split_k = sh.split;
      ASSERT_TRUE(sm90_check_config(s, sm90a(), c).ok()) << text << " " << c.to_string();
      const CompiledKernel r = compile_ok(s, c, std::string(text) + " " + c.to_string(), /*want_ptx=*/true);
      EXPECT_THAT(r.ptx, HasSubstr("cp.async.bulk.tensor.2d")) << text;
    }
    // Split-K with two unpromoted atoms is refused (ptxas serializes its wgmmas: C7520); FP8 at 64 x 64 is
    // promoted (the section-8 two-atom mainloop), which splits.
    TileConfig split = v4_config(64, 64, 256 / eb, 6, 4, 1);
    split.split_k = 4;
    const Status st = sm90_check_config(s, sm90a(), split);
    if (sm90_promotes(s, split)) {
      EXPECT_TRUE(st.ok()) << text << ": " << st.to_string();
    } else {
      EXPECT_FALSE(st.ok()) << text;
      EXPECT_THAT(st.message(), HasSubstr("serializes")) << text;
    }
  }
}

// Plans nothing: checks cfg against the spec's rules, compiles it (PTX kept) and prints its registers.
CompiledKernel compile_checked(const std::string& text, const TileConfig& cfg) {
  const KernelSpec k = spec_of(text);
  const Status ok = sm90_check_config(k, sm90a(), cfg);
  EXPECT_TRUE(ok.ok()) << text << " " << cfg.to_string() << ": " << ok.to_string();
  if (!ok.ok()) return {};
  const std::string what = text + " " + cfg.to_string();
  const CompiledKernel r = compile_ok(k, cfg, what, /*want_ptx=*/true);
  std::cout << "[ registers ] " << what << ": " << r.registers << " registers, " << r.compile_ms << " ms\n";
  return r;
}

// ---- MXFP8 (templates/kernels/sm90/mx.cuh) -----------------------------------------------------------

// What `kiln compile --arch sm_90a --emit ptx examples/specs/mxfp8_gemm.kiln` shows, and every MXFP8
// shape the config space offers, dense, grouped, split and clustered: wgmma on e4m3, TMA, the promotion
// (fma.rn after every k-step's wgmma.wait_group 0), the decoded scales read with 16-byte shared loads,
// no spills, no serialized wgmma.
TEST(Sm90MxNvrtcTest, MxConfigsCompileWithoutSpills) {
  const KernelSpec s = spec_of("gemm a=mxfp8 b=mxfp8 out=bf16");
  ASSERT_TRUE(sm90_mx(s));
  ASSERT_TRUE(sm90_supports(s, sm90a()));
  // (K < 4096: the promoted square; longer K takes the dequantizing 128 x 256, tested below.)
  TileConfig def = default_config(s, sm90a(), {4096, 7168, 2048});
  EXPECT_EQ(def.tma_store, 1);  // dense problems of M >= 256 store through TMA (templates/kernels/sm90/epilogue_tma_store.cuh)
  def.tma_store = 0;            // the grouped and GLU runs below take the direct epilogue
  def.stages = 6;
  EXPECT_EQ(def.block_m, 128);
  EXPECT_EQ(def.block_n, 128);
  EXPECT_EQ(def.block_k, 128);
  EXPECT_EQ(def.warps_m, 8);
  EXPECT_TRUE(sm90_promotes(s, def));
  std::vector<std::pair<std::string, TileConfig>> runs = {{"gemm a=mxfp8 b=mxfp8 out=bf16", def}};
  TileConfig split = v4_config(64, 64, 128, 8, 4, 1);
  split.split_k = 4;
  runs.push_back({"gemm a=mxfp8 b=mxfp8 out=f32", split});
  runs.push_back({"gemm a=mxfp8 b=mxfp8 out=f16", v4_config(128, 128, 128, 6, 4, 2)});      // 128 x 64 per warpgroup
  runs.push_back({"gemm a=mxfp8 b=mxfp8 out=bf16", v4_config(128, 128, 128, 6, 8, 1, 2)});  // clusters of 2
  runs.push_back({"gemm a=mxfp8 b=mxfp8 out=bf16", v4_config(64, 128, 128, 8, 4, 1)});
  runs.push_back({"grouped_gemm[experts=32,layout=offsets] a=mxfp8 b=mxfp8 out=bf16", def});
  runs.push_back({"grouped_gemm[experts=8,layout=masked] a=mxfp8 b=mxfp8 out=f32", v4_config(64, 128, 128, 8, 4, 1)});
  runs.push_back({"grouped_gemm[experts=32,layout=offsets] a=mxfp8 b=mxfp8 out=bf16 gate_up=interleaved "
                  "epilogue=\"out = silu(gate) * up\"", def});
  for (const auto& [text, cfg] : runs) {
    const std::string what = text + " " + cfg.to_string();
    const CompiledKernel r = compile_checked(text, cfg);
    for (const char* e : {"wgmma.mma_async.sync.aligned.m64n", "cp.async.bulk.tensor", "wgmma.wait_group.sync.aligned 0",
                          "fma.rn.f32", "ld.shared.v4.u32", "setmaxnreg.inc.sync.aligned.u32", "mbarrier.try_wait.parity"})
      EXPECT_THAT(r.ptx, HasSubstr(e)) << what;
    EXPECT_THAT(r.ptx, HasSubstr(".e4m3.e4m3")) << what;
    EXPECT_THAT(r.ptx, Not(HasSubstr("mma.sync"))) << what;
  }
}

// ---- MXFP8 through the dequantizing producer (templates/kernels/sm90/mx_dequant.cuh) --------------------------------

// The block_k 64 shapes the gpu tier pins (tests/gpu/sm90_gemm_gpu_test.cpp, pins 42-47), dense, grouped
// (offsets, masked) and with an interleaved gate|up epilogue: bf16 wgmmas, TMA loads of the FP8 atoms,
// 16-byte shared reads of them, hardware e4m3 -> f16 conversions, 16-byte shared stores and the proxy
// fence before full[s]; no promotion, no spills, no serialized wgmma. With A in registers (64-row
// warpgroups) the default at large M and K >= 4096 (measured on the H200: 2.14 vs 2.47 ms at
// 4096 x 7168 x 16384, docs/performance.md), and the tuner's space holds those tiles; shorter K keeps
// the promoted default.
TEST(Sm90MxDequantNvrtcTest, DequantConfigsCompileWithoutSpills) {
  const KernelSpec s = spec_of("gemm a=mxfp8 b=mxfp8 out=bf16");
  EXPECT_FALSE(sm90_mx_dequant(s, default_config(s, sm90a(), {4096, 7168, 2048})));
  const TileConfig def = default_config(s, sm90a(), {4096, 7168, 16384});
  EXPECT_TRUE(sm90_mx_dequant(s, def)) << def.to_string();
  EXPECT_EQ(def.block_m, 128);
  EXPECT_EQ(def.block_n, 256);
  EXPECT_EQ(def.stages, 3);
  EXPECT_EQ(def.warps_m, 8);
  EXPECT_FALSE(sm90_mx_dequant(s, default_config(s, sm90a(), {128, 7168, 16384})));  // few tiles: small M
  int dq_tiles = 0;
  for (const TileConfig& c : sm90_config_space(s, sm90a())) {
    if (!sm90_mx_dequant(s, c)) continue;
    ++dq_tiles;
    EXPECT_TRUE(sm90_mx_reg_a(s, c)) << c.to_string();  // A in registers only
  }
  EXPECT_GT(dq_tiles, 7);
  std::vector<std::pair<std::string, TileConfig>> runs;
  // Every tile check_config accepts (the deepest ring that fits), with and without the TMA store: the
  // register split (kProducerRegs) is chosen per tile from what ptxas compiled without spills, so all of
  // them are compiled here (37 tiles; the pinned gpu shapes are among them).
  for (const auto& [wm, wn] : std::vector<std::array<int, 2>>{{8, 1}, {4, 2}}) {
    for (const int bm : {64, 128, 192, 256}) {
      for (const int bn : {64, 96, 112, 128, 144, 160, 176, 192, 208, 256}) {
        for (const int tma : {0, 1}) {
          TileConfig c = v4_config(bm, bn, 64, 4, wm, wn);
          c.tma_store = tma;
          while (c.stages > 2 && !sm90_check_config(s, sm90a(), c).ok()) --c.stages;
          if (!sm90_check_config(s, sm90a(), c).ok()) continue;
          EXPECT_TRUE(sm90_mx_dequant(s, c));
          EXPECT_FALSE(sm90_promotes(s, c));
          runs.push_back({"gemm a=mxfp8 b=mxfp8 out=bf16", c});
        }
      }
    }
  }
  EXPECT_EQ(runs.size(), 38u);  // register A (64-row warpgroups): no bf16 A stages, one more tile fits
  const TileConfig plain = v4_config(128, 256, 64, 2, 8, 1);
  runs.push_back({"gemm a=mxfp8 b=mxfp8 out=f32", plain});
  runs.push_back({"grouped_gemm[experts=32,layout=offsets] a=mxfp8 b=mxfp8 out=bf16", plain});
  runs.push_back({"grouped_gemm[experts=8,layout=masked] a=mxfp8 b=mxfp8 out=f16", plain});
  runs.push_back({"grouped_gemm[experts=32,layout=offsets] a=mxfp8 b=mxfp8 out=bf16 gate_up=interleaved "
                  "epilogue=\"out = silu(gate) * up\"", plain});
  std::vector<CompileJob> jobs;
  for (const auto& [text, cfg] : runs) {
    const Status ok = sm90_check_config(spec_of(text), sm90a(), cfg);
    ASSERT_TRUE(ok.ok()) << text << " " << cfg.to_string() << ": " << ok.to_string();
    jobs.push_back({spec_of(text), cfg, text + " " + cfg.to_string()});
  }
  const std::vector<CompiledKernel> rs = compile_all_ok(jobs, /*want_ptx=*/true);
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& [text, cfg] = runs[i];
    const std::string& what = jobs[i].what;
    const CompiledKernel& r = rs[i];
    std::cout << "[ registers ] " << what << ": " << r.registers << " registers, " << r.compile_ms << " ms\n";
    for (const char* e : {"wgmma.mma_async.sync.aligned.m64n", ".bf16.bf16", "shared::cluster.global.tile",
                          "cvt.rn.f16x2.e4m3x2", "ld.shared.v4.u32", "st.shared.v4.u32", "fence.proxy.async.shared::cta",
                          "setmaxnreg.dec.sync.aligned.u32",
                          "setmaxnreg.inc.sync.aligned.u32"})
      EXPECT_THAT(r.ptx, HasSubstr(e)) << what;
    EXPECT_THAT(r.ptx, Not(HasSubstr(".e4m3.e4m3"))) << what;
    if (text.find("epilogue") == std::string::npos)
      EXPECT_THAT(r.ptx, Not(HasSubstr("fma.rn.f32"))) << what;  // no promotion
    // Two producer warpgroups (warp 0 stages, seven warps convert) beside the two consumers: 512 threads,
    // so no instruction may need more than 128 registers: 256- and 208-column warpgroups issue their
    // wgmmas as two narrower ones.
    EXPECT_EQ(sm90_threads(spec_of(text), cfg), 512) << what;
    EXPECT_THAT(r.ptx, HasSubstr(".maxntid 512")) << what;
    EXPECT_THAT(r.ptx, Not(HasSubstr("m64n256k16"))) << what;
    EXPECT_THAT(r.ptx, Not(HasSubstr("m64n208k16"))) << what;
    // 64-row warpgroups take A from registers: RS wgmmas (a register list after the accumulators).
    if (sm90_mx_reg_a(spec_of(text), cfg)) {
      EXPECT_THAT(r.ptx, HasSubstr("}, {%r")) << what;
    } else {
      EXPECT_THAT(r.ptx, Not(HasSubstr("}, {%r"))) << what;
    }
  }
}

// The rules of block_k 64 for MXFP8, with the reason; other formats still refuse it.
TEST(Sm90MxPlanTest, DequantRulesNameTheReason) {
  const KernelSpec s = spec_of("gemm a=mxfp8 b=mxfp8 out=bf16");
  EXPECT_TRUE(sm90_check_config(s, sm90a(), v4_config(128, 256, 64, 2, 8, 1)).ok());
  EXPECT_TRUE(sm90_check_config(s, sm90a(), v4_config(256, 128, 64, 2, 8, 1)).ok());
  // The bf16 ring beside the FP8 staging ring: 64-row warpgroups take A in registers, so the ring holds
  // B only and 128 x 256 gets 3 stages (not 4); 256 x 128 (128-row warpgroups) keeps A stages: 2.
  EXPECT_TRUE(sm90_check_config(s, sm90a(), v4_config(128, 256, 64, 3, 8, 1)).ok());
  EXPECT_EQ(sm90_check_config(s, sm90a(), v4_config(128, 256, 64, 4, 8, 1)).code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(sm90_check_config(s, sm90a(), v4_config(256, 128, 64, 3, 8, 1)).code(),
            StatusCode::kResourceExhausted);
  Status st = sm90_check_config(s, sm90a(), v4_config(64, 128, 64, 4, 4, 1));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("two consumer warpgroups"));
  st = sm90_check_config(s, sm90a(), v4_config(128, 256, 64, 2, 8, 1, 2));
  EXPECT_THAT(st.message(), HasSubstr("cluster_m 1"));
  TileConfig split = v4_config(128, 256, 64, 2, 8, 1);
  split.split_k = 2;
  EXPECT_THAT(sm90_check_config(s, sm90a(), split).message(), HasSubstr("split_k 1"));
  st = sm90_check_config(spec_of("gemm a=e4m3:tensor b=e4m3:tensor out=bf16"), sm90a(), v4_config(128, 256, 64, 3, 8, 1));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("block_k=64"));
  // bf16 stages of 64 K (128-byte rows, no scale slot; B rows only with A in registers), and the staging
  // ring: 2 x (FP8 atoms + 16 bytes of scales per row), its barriers, its alignment.
  EXPECT_EQ(sm90_smem_bytes(s, v4_config(128, 256, 64, 2, 8, 1)),
            2 * 256 * 128 + 16 * 2 + 2 * (128 + 256) * 144 + 32 + 1024 + 1024);
  EXPECT_EQ(sm90_smem_bytes(s, v4_config(256, 128, 64, 2, 8, 1)),
            2 * (256 + 128) * 128 + 16 * 2 + 2 * (256 + 128) * 144 + 32 + 1024 + 1024);
}

TEST(Sm90MxPlanTest, ConfigRulesNameTheReason) {
  const KernelSpec s = spec_of("gemm a=mxfp8 b=mxfp8 out=bf16");
  // 64 x 256 per warpgroup: 128 accumulators + a partial would not fit with the scales.
  Status st = sm90_check_config(s, sm90a(), v4_config(128, 256, 128, 4, 8, 1));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("promotes every 32-K step"));
  EXPECT_THAT(st.message(), HasSubstr("64x256"));
  // Two atoms per stage and three consumer warpgroups are the block path's; refused with the reason.
  st = sm90_check_config(s, sm90a(), v4_config(128, 128, 256, 3, 8, 1));
  EXPECT_THAT(st.message(), HasSubstr("block_k 128"));
  st = sm90_check_config(s, sm90a(), v4_config(192, 128, 128, 4, 12, 1));
  EXPECT_FALSE(st.ok());
  // The tuner's space holds only configs the kernel takes, split-K ones included.
  int splits = 0, n = 0;
  for (const TileConfig& c : sm90_config_space(s, sm90a())) {
    EXPECT_TRUE(sm90_check_config(s, sm90a(), c).ok()) << c.to_string();
    splits += c.split_k > 1;
    ++n;
  }
  EXPECT_GT(n, 20);
  EXPECT_GT(splits, 0);
  // Per stage: the ring (128 x 128 + 128 x 128 bytes), the decoded scales (4 k-steps x (128 rows + 128
  // columns + 4 x 4 pad floats) x 4 bytes), the barriers, the alignment slack.
  TileConfig c = v4_config(128, 128, 128, 6, 8, 1);
  EXPECT_EQ(sm90_smem_bytes(s, c), 6 * (32768 + 4 * 4 * (128 + 128 + 16)) + 16 * 6 + 1024);
  // The other families' MX path stays where it was: sm_89 and below plan the portable family.
  for (const char* arch : {"sm_90", "sm_89", "sm_80"}) EXPECT_EQ(*select_family(s, *parse_arch(arch)), KernelFamily::kSm80Gemm);
}

// ---- the TMA-store epilogue (templates/kernels/sm90/epilogue_tma_store.cuh) ------------------------------------------------

// Every TMA-store shape of the config space compiles for bf16, FP8 blocks (f32 out) and an epilogue
// functor, with the bulk tensor stores, the proxy fence and the bulk-group waits in the PTX; the extra
// kernel parameters appear only in these kernels.
TEST(Sm90TmaStoreNvrtcTest, TmaStoreConfigsCompileWithoutSpills) {
  std::vector<CompileJob> jobs;
  for (const char* text : {"gemm a=bf16 b=bf16 out=bf16", "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=f32",
                           "gemm a=e4m3:m b=e4m3:n out=f16 epilogue=\"out = silu(acc + bias[n])\""}) {
    const KernelSpec s = spec_of(text);
    for (const TileConfig& c : sm90_config_space(s, sm90a())) {
      // (Ping-pong configs: Sm90PingPongNvrtcTest compiles every one of them.)
      if (!c.tma_store || c.cluster_m != 1 || c.pingpong) continue;
      jobs.push_back({s, c, std::string(text) + " " + c.to_string()});
    }
  }
  EXPECT_GE(jobs.size(), 12u);
  jobs = sampled(jobs);
  const std::vector<CompiledKernel> rs = compile_all_ok(jobs, /*want_ptx=*/true);
  for (size_t i = 0; i < jobs.size(); ++i) {
    std::cout << "[ registers ] " << jobs[i].what << ": " << rs[i].registers << " registers\n";
    for (const char* e :
         {"cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group", "fence.proxy.async.shared::cta",
          "cp.async.bulk.commit_group", "cp.async.bulk.wait_group.read 0", "cp.async.bulk.wait_group 0"})
      EXPECT_THAT(rs[i].ptx, HasSubstr(e)) << jobs[i].what;
  }
  // A plain config's kernel keeps its four parameters and no store path.
  const KernelSpec bf16 = spec_of("gemm a=bf16 b=bf16 out=bf16");
  auto plain = emit_kernel(bf16, KernelFamily::kSm90Gemm, v4_config(128, 128, 64, 6, 8, 1), sm90a());
  ASSERT_TRUE(plain.ok());
  EXPECT_THAT(plain->source, Not(HasSubstr("tma_out")));
  EXPECT_THAT(plain->source, Not(HasSubstr("kTmaStore")));
}

// TMA stores in 16-column unswizzled boxes where a warpgroup's columns are not whole 128-byte boxes.
TEST(Sm90TmaStoreNvrtcTest, NarrowBoxesCompileWithoutSpills) {
  for (const char* text : {"gemm a=bf16 b=bf16 out=bf16", "gemm a=e4m3:m b=e4m3:n out=f32"}) {
    const KernelSpec s = spec_of(text);
    for (int bn : {176, 208, 112}) {
      TileConfig c = v4_config(128, bn, format_is_fp8(s.a.format) ? 128 : 64, 3, 8, 1);
      c.tma_store = 1;
      while (c.stages > 2 && !sm90_check_config(s, sm90a(), c).ok()) --c.stages;  // the deepest ring that fits
      ASSERT_TRUE(sm90_check_config(s, sm90a(), c).ok()) << sm90_check_config(s, sm90a(), c).to_string();
      const CompiledKernel r = compile_ok(s, c, std::string(text) + " " + c.to_string(), true);
      EXPECT_THAT(r.ptx, HasSubstr("cp.async.bulk.tensor.2d.global.shared::cta")) << c.to_string();
    }
  }
}

TEST(Sm90TmaStorePlanTest, RulesAndSharedMemory) {
  const KernelSpec bf16 = spec_of("gemm a=bf16 b=bf16 out=bf16");
  TileConfig c = v4_config(128, 256, 64, 3, 8, 1);
  c.tma_store = 1;
  EXPECT_EQ(c.to_string(), "bm128_bn256_bk64_s3_w8x1_g8_t");
  auto back = config_from_json(config_to_json(c));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, c);
  EXPECT_TRUE(sm90_check_config(bf16, sm90a(), c).ok());
  // The staged output tile: 128 x 256 bf16 = 64 KB beside 3 stages of (128 + 256) x 128 bytes.
  EXPECT_EQ(sm90_smem_bytes(bf16, c), 3 * 49152 + 65536 + 16 * 3 + 1024);
  c.stages = 4;  // 4 stages + the tile do not fit
  EXPECT_EQ(sm90_check_config(bf16, sm90a(), c).code(), StatusCode::kResourceExhausted);
  c.stages = 3;
  // Grouped problems take it (a slab that crosses its expert's last row is stored directly),
  // offsets and masked: the kernel compiles with both epilogues' stores.
  for (const char* text : {"grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16",
                           "grouped_gemm[experts=6,layout=masked] a=e4m3:m b=e4m3:n out=f32"}) {
    const KernelSpec g = spec_of(text);
    TileConfig gc = v4_config(128, 192, format_is_fp8(g.a.format) ? 128 : 64, 3, 8, 1);
    gc.tma_store = 1;
    ASSERT_TRUE(sm90_check_config(g, sm90a(), gc).ok()) << sm90_check_config(g, sm90a(), gc).to_string();
    const CompiledKernel r = compile_ok(g, gc, std::string(text) + " " + gc.to_string(), true);
    EXPECT_THAT(r.ptx, HasSubstr("cp.async.bulk.tensor.2d.global.shared::cta")) << text;
    EXPECT_THAT(r.ptx, HasSubstr("st.global"))
        << text;  // the direct stores of a slab crossing an expert's end
  }
  const Status glu = sm90_check_config(
      spec_of("gemm a=bf16 b=bf16 out=bf16 gate_up=interleaved epilogue=\"out = silu(gate) * up\""), sm90a(), c);
  EXPECT_THAT(glu.message(), HasSubstr("gate|up"));
  // The portable family refuses it.
  EXPECT_THAT(check_config(bf16, *parse_arch("sm_89"), c).message(), HasSubstr("sm90 family only"));
  // The space offers it for dense and grouped problems, never with gate|up.
  int tma = 0;
  for (const TileConfig& x : sm90_config_space(bf16, sm90a())) tma += x.tma_store;
  EXPECT_GT(tma, 8);
  int grouped_tma = 0;
  for (const TileConfig& x : sm90_config_space(spec_of("grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16"), sm90a()))
    grouped_tma += x.tma_store;
  EXPECT_GT(grouped_tma, 8);
  for (const TileConfig& x : sm90_config_space(
           spec_of("gemm a=bf16 b=bf16 out=bf16 gate_up=interleaved epilogue=\"out = silu(gate) * up\""),
           sm90a()))
    EXPECT_EQ(x.tma_store, 0);
}

// ---- ping-pong consumers (templates/kernels/sm90/pingpong.cuh) ----------------------------------------------------

// Every ping-pong config of the space compiles without spills for the unpromoted pairings (bf16, FP8
// tensor, FP8 per-row with staged column scales, e5m2 x e4m3 with an f32 output), with the order
// barrier's bar.arrive in the PTX; a cooperative config of the same tile has none. Clustered configs
// for bf16 and FP8 per-row only (the cluster's code does not depend on the pairing; CI's time does).
TEST(Sm90PingPongNvrtcTest, ConfigsCompileWithoutSpills) {
  std::vector<CompileJob> jobs;
  for (const char* text : {"gemm a=bf16 b=bf16 out=bf16", "gemm a=e4m3:tensor b=e4m3:tensor out=bf16",
                           "gemm a=e4m3:m b=e4m3:n out=bf16", "gemm a=e5m2:m b=e4m3:n out=f32"}) {
    const KernelSpec s = spec_of(text);
    const bool clusters =
        s.a.format == Format::kBf16 || (s.a.format == Format::kE4m3 && s.a.scale == ScaleGranularity::kM);
    for (const TileConfig& c : sm90_config_space(s, sm90a())) {
      if (!c.pingpong || (c.cluster_m != 1 && !clusters)) continue;
      jobs.push_back({s, c, std::string(text) + " " + c.to_string()});
    }
  }
  EXPECT_GE(jobs.size(), 10u);
  jobs = sampled(jobs);
  const std::vector<CompiledKernel> rs = compile_all_ok(jobs, /*want_ptx=*/true);
  for (size_t i = 0; i < jobs.size(); ++i) {
    std::cout << "[ registers ] " << jobs[i].what << ": " << rs[i].registers << " registers\n";
    EXPECT_THAT(rs[i].ptx, HasSubstr("bar.arrive")) << jobs[i].what;
  }
  const KernelSpec bf16 = spec_of("gemm a=bf16 b=bf16 out=bf16");
  const CompiledKernel plain = compile_ok(bf16, v4_config(128, 128, 64, 6, 4, 1), "bf16 128x128 w4x1", true);
  EXPECT_THAT(plain.ptx, Not(HasSubstr("bar.arrive")));
}

// Ping-pong warpgroups own whole tiles, so a tile's accumulators are one thread's: 128 x 176 and 128 x 192
// (176 and 192 per thread) fit the consumers' registers without spills; 128 x 256 (256) is refused.
TEST(Sm90PingPongNvrtcTest, WideTilesCompileWithoutSpills) {
  for (const char* text : {"gemm a=bf16 b=bf16 out=bf16", "gemm a=e4m3:tensor b=e4m3:tensor out=bf16",
                           "gemm a=e4m3:m b=e4m3:n out=bf16"}) {
    const KernelSpec s = spec_of(text);
    const int bk = s.a.format == Format::kBf16 ? 64 : 128;
    // (block_n, tma_store, stages): direct stores, half and quarter slab buffers (the H200 table's
    // 4096 x 2112 x 7168 rows run 128 x 176 at 5 stages with four chunks).
    for (const auto& [bn, tma, stages] :
         {std::tuple{176, 0, 5}, std::tuple{176, 2, 4}, std::tuple{176, 4, 5}, std::tuple{192, 2, 4}}) {
      TileConfig c = v4_config(128, bn, bk, stages, 4, 1);
      c.pingpong = 1;
      c.tma_store = tma;
      const std::string what = std::string(text) + " " + c.to_string();
      ASSERT_TRUE(sm90_check_config(s, sm90a(), c).ok())
          << what << sm90_check_config(s, sm90a(), c).to_string();
      const CompiledKernel r = compile_ok(s, c, what);
      std::cout << "[ registers ] " << what << ": " << r.registers << " registers\n";
    }
    // 192 columns of 16-bit outputs are three 128-byte boxes: not four chunks.
    TileConfig q192 = v4_config(128, 192, bk, 4, 4, 1);
    q192.pingpong = 1;
    q192.tma_store = 4;
    EXPECT_THAT(sm90_check_config(s, sm90a(), q192).message(), HasSubstr("do not fill 4 chunks")) << text;
    // Ping-pong tiles have 64 or 128 rows (the ones the gpu tier runs).
    TileConfig tall = v4_config(192, 128, bk, 3, 4, 1);
    tall.pingpong = 1;
    EXPECT_THAT(sm90_check_config(s, sm90a(), tall).message(), HasSubstr("64 or 128 rows")) << text;
    TileConfig wide = v4_config(128, 256, bk, 3, 4, 1);
    wide.pingpong = 1;
    const Status st = sm90_check_config(s, sm90a(), wide);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(st.message(), HasSubstr("256 f32 accumulators per thread; at most 192")) << text;
  }
}

TEST(Sm90PingPongPlanTest, RulesAndSharedMemory) {
  const KernelSpec row = spec_of("gemm a=e4m3:m b=e4m3:n out=bf16");
  TileConfig c = v4_config(128, 128, 128, 4, 4, 1);
  c.tma_store = 1;
  c.pingpong = 1;
  EXPECT_EQ(c.to_string(), "bm128_bn128_bk128_s4_w4x1_g8_t_p");
  EXPECT_TRUE(sm90_check_config(row, sm90a(), c).ok()) << sm90_check_config(row, sm90a(), c).to_string();
  // 4 stages of (128 + 128) x 128 bytes, their barriers, one staged 128 x 128 bf16 tile per consumer, the
  // column scales of each consumer's tile (f32), the alignment slack; 3 consumer warpgroups' threads.
  EXPECT_EQ(sm90_smem_bytes(row, c), 4 * 32768 + 16 * 4 + 2 * 32768 + 2 * 4 * 128 + 1024);
  EXPECT_EQ(sm90_threads(row, c), 384);
  auto refused = [&](const KernelSpec& s, TileConfig t, const char* why) {
    const Status st = sm90_check_config(s, sm90a(), t);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << t.to_string() << " " << why;
    EXPECT_THAT(st.message(), HasSubstr(why)) << t.to_string();
  };
  TileConfig wide = c;
  wide.warps_m = 8;
  refused(row, wide, "warps 4x1");
  // Block scales: a 128 x 128 warpgroup tile cannot be promoted at all (the block-scale rule says so);
  // a 64 x 128 one is promoted, which ping-pong does not take (nor for row scales).
  const KernelSpec block = spec_of("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16");
  refused(block, c, "cannot be promoted");
  TileConfig narrow = v4_config(64, 128, 128, 6, 4, 1);  // 64 accumulators: the FP8 tile promotes
  narrow.pingpong = 1;
  refused(block, narrow, "promoted FP8 tile");
  refused(row, narrow, "promoted FP8 tile");
  TileConfig split = c;
  split.tma_store = 0;
  split.split_k = 2;
  refused(row, split, "split_k=2");
  TileConfig g = c;
  g.tma_store = 0;
  refused(spec_of("grouped_gemm[experts=8,layout=offsets] a=e4m3:m b=e4m3:n out=bf16"), g, "grouped problem");
  refused(spec_of("gemm a=mxfp8 b=mxfp8 out=bf16"), c, "a=mxfp8");
  EXPECT_THAT(check_config(row, *parse_arch("sm_89"), c).message(), HasSubstr("sm90 family only"));
  // The space offers it for dense unpromoted problems only.
  int pp = 0;
  for (const TileConfig& x : sm90_config_space(spec_of("gemm a=bf16 b=bf16 out=bf16"), sm90a()))
    pp += x.pingpong;
  EXPECT_GE(pp, 6);
  for (const char* text :
       {"grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16",
        "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", "gemm a=mxfp8 b=mxfp8 out=bf16"})
    for (const TileConfig& x : sm90_config_space(spec_of(text), sm90a())) EXPECT_EQ(x.pingpong, 0) << text;
}

// ---- the TMA-store slab in two chunks (tma_store 2) --------------------------------------------------

// Half-size output buffers: the wide cooperative tile and ping-pong gain a stage; they compile without
// spills with the bulk stores in the PTX, and the rules refuse slabs whose boxes do not split in two.
TEST(Sm90HalfSlabNvrtcTest, ConfigsCompileAndRules) {
  struct Run {
    const char* spec;
    TileConfig cfg;
  };
  auto cfg = [](int bm, int bn, int bk, int stages, int wm, int cluster, int pp) {
    TileConfig c = v4_config(bm, bn, bk, stages, wm, 1, cluster);
    c.tma_store = 2;
    c.pingpong = pp;
    return c;
  };
  const Run runs[] = {{"gemm a=bf16 b=bf16 out=bf16", cfg(128, 256, 64, 4, 8, 1, 0)},
                      {"gemm a=e4m3:tensor b=e4m3:tensor out=bf16", cfg(128, 256, 128, 4, 8, 2, 0)},
                      {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", cfg(128, 256, 128, 4, 8, 2, 0)},
                      {"gemm a=e4m3:m b=e4m3:n out=bf16", cfg(128, 128, 128, 6, 4, 1, 1)},
                      {"gemm a=f16 b=f16 out=f32", cfg(128, 128, 64, 5, 4, 1, 1)}};
  for (const Run& r : runs) {
    const KernelSpec s = spec_of(r.spec);
    const std::string what = std::string(r.spec) + " " + r.cfg.to_string();
    ASSERT_TRUE(sm90_check_config(s, sm90a(), r.cfg).ok()) << what << ": " << sm90_check_config(s, sm90a(), r.cfg).to_string();
    const CompiledKernel c = compile_ok(s, r.cfg, what, /*want_ptx=*/true);
    EXPECT_THAT(c.ptx, HasSubstr("cp.async.bulk.tensor.2d.global.shared::cta")) << what;
    // One stage more than the whole-slab store fits.
    TileConfig whole = r.cfg;
    whole.tma_store = 1;
    EXPECT_EQ(sm90_check_config(s, sm90a(), whole).code(), StatusCode::kResourceExhausted) << what;
  }
  const KernelSpec bf16 = spec_of("gemm a=bf16 b=bf16 out=bf16");
  TileConfig wide = cfg(128, 256, 64, 4, 8, 1, 0);
  EXPECT_EQ(wide.to_string(), "bm128_bn256_bk64_s4_w8x1_g8_th");
  EXPECT_EQ(*config_from_name(wide.to_string()), wide);
  // 4 stages of (128 + 256) x 64 bf16 + their barriers + half of the 128 x 256 bf16 tile + the slack.
  EXPECT_EQ(sm90_smem_bytes(bf16, wide), 4 * 49152 + 16 * 4 + 32768 + 1024);
  // 176 columns are 11 boxes of 16: chunks of 6 and 5. FP8 128 x 176 then fits 5 stages (4 with the whole
  // slab).
  const KernelSpec fp8 = spec_of("gemm a=e4m3:tensor b=e4m3:tensor out=bf16");
  TileConfig odd = cfg(128, 176, 128, 5, 8, 1, 0);
  EXPECT_EQ(sm90_smem_bytes(fp8, odd), 5 * 38912 + 16 * 5 + 2 * 6 * 64 * 32 + 1024);
  ASSERT_TRUE(sm90_check_config(fp8, sm90a(), odd).ok()) << sm90_check_config(fp8, sm90a(), odd).to_string();
  const CompiledKernel c176 = compile_ok(fp8, odd, "fp8 128x176 _th", /*want_ptx=*/true);
  EXPECT_THAT(c176.ptx, HasSubstr("cp.async.bulk.tensor.2d.global.shared::cta"));
  TileConfig odd_whole = odd;
  odd_whole.tma_store = 1;
  EXPECT_EQ(sm90_check_config(fp8, sm90a(), odd_whole).code(), StatusCode::kResourceExhausted);
  // One box per warpgroup (64 x 64 bf16: one 128-byte box) has nothing to split.
  TileConfig one_box = cfg(128, 64, 64, 4, 8, 1, 0);
  EXPECT_THAT(sm90_check_config(bf16, sm90a(), one_box).message(), HasSubstr("do not fill 2 chunks"));
  // Four chunks (tma_store 4, "_tq"): the ping-pong 128 x 176 tile (eleven 16-column boxes per consumer,
  // chunks of 3) fits 5 stages, as cuBLAS's N = 2112 FP8 kernel runs; two 128-byte boxes cannot split in 4.
  TileConfig pp176 = cfg(128, 176, 128, 5, 4, 1, 0);
  pp176.pingpong = 1;
  pp176.tma_store = 4;
  EXPECT_EQ(pp176.to_string(), "bm128_bn176_bk128_s5_w4x1_g8_tq_p");
  EXPECT_EQ(*config_from_name(pp176.to_string()), pp176);
  EXPECT_EQ(sm90_smem_bytes(fp8, pp176), 5 * 38912 + 16 * 5 + 2 * 3 * 128 * 32 + 1024);
  ASSERT_TRUE(sm90_check_config(fp8, sm90a(), pp176).ok())
      << sm90_check_config(fp8, sm90a(), pp176).to_string();
  const CompiledKernel cq = compile_ok(fp8, pp176, "fp8 128x176 _tq_p", /*want_ptx=*/true);
  EXPECT_THAT(cq.ptx, HasSubstr("cp.async.bulk.tensor.2d.global.shared::cta"));
  TileConfig pp176_half = pp176;
  pp176_half.tma_store = 2;
  EXPECT_EQ(sm90_check_config(fp8, sm90a(), pp176_half).code(), StatusCode::kResourceExhausted);
  TileConfig two_box = cfg(128, 128, 64, 4, 8, 1, 0);  // 64 x 128 bf16 per warpgroup: two 128-byte boxes
  two_box.tma_store = 4;
  EXPECT_THAT(sm90_check_config(bf16, sm90a(), two_box).message(), HasSubstr("do not fill 4 chunks"));
  // No chunk may be empty: 96 bf16 columns are six 16-column boxes, which 4 chunks of 2 leave the last
  // of empty; 5 boxes in 2 chunks (3 + 2) are fine.
  TileConfig six_box = cfg(128, 96, 64, 4, 4, 1, 0);
  six_box.pingpong = 1;
  six_box.tma_store = 4;
  EXPECT_THAT(sm90_check_config(bf16, sm90a(), six_box).message(),
              HasSubstr("6 output box(es) of 16 columns"));
  six_box.tma_store = 2;
  EXPECT_TRUE(sm90_check_config(bf16, sm90a(), six_box).ok())
      << sm90_check_config(bf16, sm90a(), six_box).to_string();
  two_box.tma_store = 3;
  EXPECT_THAT(sm90_check_config(bf16, sm90a(), two_box).message(), HasSubstr("other than 0, 1, 2 or 4"));
}

// ---- programmatic dependent launch (templates/kernels/sm90/kernel.cuh) ----------------------------------------

// Every variant of the kernel waits for the previous grid on its stream (griddepcontrol.wait) and lets
// the next one launch (griddepcontrol.launch_dependents): dense and grouped, clusters, split-K (the
// small-M defaults), TMA stores, block scales (staged too), MXFP8 promoted and through the dequantizing
// producer. In the PTX the tensor-map
// prefetch (kernel parameters only) comes before the wait, and no global load, store, atomic or TMA
// copy before it: build_groups' reads of the expert offsets included.
TEST(Sm90PdlNvrtcTest, EveryVariantWaitsForThePreviousGridBeforeTouchingGlobalMemory) {
  std::vector<std::pair<std::string, TileConfig>> runs;
  auto add_default = [&](const std::string& text, ProblemSizes sz) {
    runs.push_back({text, default_config(spec_of(text), sm90a(), sz)});
  };
  add_default("gemm a=bf16 b=bf16 out=bf16", {64, 2112, 7168});
  add_default("gemm a=bf16 b=bf16 out=bf16", {4096, 7168, 16384});
  add_default("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", {64, 2112, 7168});
  add_default("gemm a=mxfp8 b=mxfp8 out=bf16", {4096, 7168, 16384});
  add_default("grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16", {512, 5760, 2880});
  add_default("grouped_gemm[experts=6,layout=masked] a=e4m3:block1x128 b=e4m3:block128x128 out=bf16",
              {256, 2048, 2048});
  TileConfig clustered = default_config(spec_of("gemm a=bf16 b=bf16 out=bf16"), sm90a(), {4096, 7168, 7168});
  clustered.cluster_m = 2;
  runs.push_back({"gemm a=bf16 b=bf16 out=bf16", clustered});
  // Staged block scales (templates/kernels/sm90/producer.cuh, staged scales): the producer's whole warp walks along and copies scales.
  runs.push_back({"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", v4_config(128, 128, 256, 3, 8, 1)});
  runs.push_back({"gemm a=mxfp8 b=mxfp8 out=bf16", v4_config(128, 256, 64, 2, 8, 1)});  // templates/kernels/sm90/mx_dequant.cuh
  for (const auto& [text, cfg] : runs) {
    const std::string what = text + " " + cfg.to_string();
    const CompiledKernel r = compile_checked(text, cfg);
    const size_t wait = r.ptx.find("griddepcontrol.wait;");
    ASSERT_NE(wait, std::string::npos) << what;
    EXPECT_THAT(r.ptx, HasSubstr("griddepcontrol.launch_dependents;")) << what;
    EXPECT_LT(r.ptx.find("griddepcontrol.launch_dependents;"), r.ptx.find("setmaxnreg")) << what;
    const size_t prefetch = r.ptx.find("prefetch.tensormap");
    ASSERT_NE(prefetch, std::string::npos) << what;
    EXPECT_LT(prefetch, wait) << what << ": the tensor maps are prefetched before the wait";
    for (const char* global : {"ld.global", "st.global", "atom.global", "red.global", "cp.async.bulk.tensor"})
      EXPECT_GT(r.ptx.find(global), wait) << what << ": " << global << " before griddepcontrol.wait";
  }
}

}  // namespace
}  // namespace kiln
