// The tuner without a GPU: the search space and its static pruning, the static model, the dry run,
// the compile -> verify -> time orchestration (with a fake compiler and runner: failures are data,
// wrong results never win, the budget stops work, the baseline is always measured), presets and
// shape files, sharding, and how Runtime::plan takes tuned configs (runtime/tuned_configs.hpp).
#include "tuner/tuner.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <map>
#include <set>
#include <thread>

#include "cache/cache_key.hpp"
#include "cache/tuning_store.hpp"
#include "runtime/tuned_configs.hpp"
#include "tuner/config_space.hpp"
#include "tuner/presets.hpp"
#include "tuner/sharding.hpp"
#include "tuner/static_model.hpp"
#include "tests/common/tile_configs.hpp"

namespace kiln {
namespace {

namespace fs = std::filesystem;

KernelSpec spec_of(const std::string& text) {
  auto s = parse_spec(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status().to_string();
  return s.ok() ? *s : KernelSpec{};
}
Arch arch_of(const std::string& name) { return *parse_arch(name); }

TileConfig cfg(int bm, int bn, int bk, int stages, int wm, int wn) {
  return test::tile_config(bm, bn, bk, stages, wm, wn);
}

TuningDevice device_of(const std::string& text) {
  auto d = parse_tuning_device(text, 13);
  EXPECT_TRUE(d.ok()) << d.status().to_string();
  return *d;
}

// Sets an environment variable for a scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string temp_dir() {
  std::string tmpl = (fs::temp_directory_path() / "kiln-tuner-test-XXXXXX").string();
  EXPECT_NE(::mkdtemp(tmpl.data()), nullptr);
  return tmpl;
}

std::shared_ptr<Runtime> runtime(const std::string& dir = "") {
  RuntimeOptions o;
  o.cache_dir = dir;
  o.disable_cache = dir.empty();
  auto rt = Runtime::create(o);
  EXPECT_TRUE(rt.ok()) << rt.status().to_string();
  return *rt;
}

TuneShape tune_shape(const KernelSpec& spec, int64_t m, int64_t n, int64_t k) {
  TuneShape s;
  s.spec = spec;
  s.m = m;
  s.n = n;
  s.k = k;
  return s;
}

// A tuning record of config for (spec, n, k) at bucket on family, timed at 10 us.
TuningRecord record_of(const TuningDevice& device, const KernelSpec& spec, int64_t n, int64_t k, int64_t bucket,
                       const char* family, const TileConfig& config) {
  TuningRecord r;
  r.device = device;
  r.problem = tuning_problem(spec, {0, n, k});
  r.m_bucket = bucket;
  r.family = family;
  r.config_json = config_to_json(config).dump();
  r.median_us = 10;
  r.candidates = 1;
  return r;
}

const KernelSpec kBf16 = *parse_spec("gemm a=bf16 b=bf16 out=bf16");
const KernelSpec kFp8 = *parse_spec("gemm a=e4m3:tensor b=e4m3:tensor out=bf16");

// ---- search space and static pruning ----

TEST(ConfigSpaceTest, EveryConfigPassesCheckConfig) {
  for (const auto& [spec, arch] : {std::pair{kBf16, arch_of("sm_80")}, std::pair{kFp8, arch_of("sm_86")},
                                   std::pair{kFp8, arch_of("sm_89")}, std::pair{kBf16, arch_of("sm_90a")}}) {
    std::vector<TileConfig> space = config_space(spec, arch);
    EXPECT_GT(space.size(), 10u) << arch.name();
    std::set<std::string> seen;
    for (const TileConfig& c : space) {
      EXPECT_TRUE(check_config(spec, arch, c).ok()) << arch.name() << " " << c.to_string();
      EXPECT_TRUE(seen.insert(c.to_string()).second) << "duplicate " << c.to_string();
    }
  }
}

TEST(ConfigSpaceTest, NoFamilyMeansNoSpace) {
  const KernelSpec dgrad = spec_of("gemm a=e4m3:m b=e4m3:block1x128 out=f32 pass=wgrad");  // no kernel
  std::map<std::string, int> dropped;
  EXPECT_TRUE(config_space(dgrad, arch_of("sm_90a"), &dropped).empty());
  EXPECT_EQ(dropped["no family"], 1);
}

TEST(PruneTest, AccountsForEveryConfigKeepsTheHeuristicAndRanksByEstimate) {
  const Arch arch = arch_of("sm_80");
  const GpuModel gpu = gpu_model(arch, 108);
  for (ProblemSizes sizes :
       {ProblemSizes{1, 4096, 4096}, ProblemSizes{64, 5760, 2880}, ProblemSizes{4096, 7168, 7168}}) {
    PruneOptions o;
    o.max_candidates = 16;
    PrunedSpace s = prune_space(kBf16, gpu, sizes, o);
    size_t dropped = 0;
    for (const auto& [rule, n] : s.dropped_by_rule) dropped += static_cast<size_t>(n);
    EXPECT_EQ(dropped + s.kept.size(), s.enumerated) << sizes.m;
    ASSERT_FALSE(s.kept.empty());
    EXPECT_LE(s.kept.size(), 17u);  // the cap, plus the heuristic when it ranked below it
    const TileConfig heuristic = default_config(kBf16, arch, sizes);
    int defaults = 0;
    for (const PrunedCandidate& c : s.kept) defaults += c.is_default && c.config == heuristic;
    EXPECT_EQ(defaults, 1) << "the heuristic's config is always a candidate (M=" << sizes.m << ")";
    // The order is the diversity key: the estimate, times 1 + 10% per earlier variant of the same tile
    // shape (PruneTest.ACapCoversSeveralTileShapes); ties within the model's 1% bins may swap.
    const size_t last = s.kept.back().is_default ? s.kept.size() - 1 : s.kept.size();
    std::map<std::string, int> seen;
    double prev_key = 0;
    for (size_t i = 0; i < last; ++i) {
      const TileConfig& t = s.kept[i].config;
      const std::string shape = std::to_string(t.block_m) + "x" + std::to_string(t.block_n) + "x" +
                                std::to_string(t.block_k) + "w" + std::to_string(t.warps_m * 10 + t.warps_n) +
                                "s" + std::to_string(t.split_k);
      const double key = s.kept[i].estimate.est_us * (1.0 + 0.1 * seen[shape]++);
      EXPECT_LE(prev_key, key * 1.0101) << t.to_string();
      prev_key = key;
    }
  }
}

// The pruned sm_90a space of spec on 132 SMs (the H200), at most cap candidates (0: all).
PrunedSpace h200_space(const char* spec, const ProblemSizes& sizes, size_t cap) {
  PruneOptions o;
  o.max_candidates = cap;
  return prune_space(spec_of(spec), gpu_model(arch_of("sm_90a"), 132), sizes, o);
}

// The sm_90a heuristic is a member of the space at every M bucket it plans (so `kiln tune` always times
// it as the baseline): small M with TMA stores from 64 rows, split-K tiles with direct stores, the
// two-atom block tile's two-stage TMA-store ring at large M, every format.
TEST(PruneTest, TheSm90HeuristicIsAlwaysACandidate) {
  const Arch arch = arch_of("sm_90a");
  for (const char* spec :
       {"gemm a=bf16 b=bf16 out=bf16", "gemm a=e4m3:tensor b=e4m3:tensor out=bf16",
        "gemm a=e4m3:m b=e4m3:n out=bf16", "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16",
        "gemm a=mxfp8 b=mxfp8 out=bf16", "gemm a=f16 b=f16 out=f32"}) {
    for (int64_t m : {24, 48, 64, 96, 128, 192, 300, 4096}) {
      for (const auto& [n, k] : std::vector<std::pair<int64_t, int64_t>>{{2048, 7168},
                                                                         {2112, 7168},
                                                                         {7168, 2048},
                                                                         {24576, 1536},
                                                                         {32768, 512},
                                                                         {4096, 4096},
                                                                         {3000, 2048},
                                                                         {3000, 8192}}) {
        const ProblemSizes sizes{m, n, k};
        const PrunedSpace s = h200_space(spec, sizes, 0);
        const TileConfig heuristic = default_config(spec_of(spec), arch, sizes);
        int defaults = 0;
        for (const PrunedCandidate& c : s.kept) defaults += c.is_default && c.config == heuristic;
        EXPECT_EQ(defaults, 1) << spec << " " << m << "x" << n << "x" << k << ": " << heuristic.to_string();
      }
    }
  }
}

// The model ties the variants of one tile shape (ring depth, raster group, cluster, store path), so a
// cap taken in estimate order alone spent all 24 candidates of 4096 x 2112 x 7168 on 128 x 192. Each
// further variant now ranks as 10% slower: the cap reaches the runner-up shapes.
// The baseline of a grouped shape is the config a plan runs for that bucket: the heuristic of the rows per
// expert, not of all the problem's rows (a 32-row-per-expert frozen MXFP4 dgrad plans 32 x 64 tiles).
TEST(PruneTest, AGroupedShapesBaselineIsThePlansBucketConfig) {
  const Arch a = arch_of("sm_90a");
  for (const char* spec : {"grouped_gemm[experts=32,layout=offsets] a=bf16 b=mxfp4 out=bf16 pass=dgrad",
                           "grouped_gemm[experts=32,layout=offsets] a=bf16 b=mxfp4 out=bf16",
                           "grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16"}) {
    for (int64_t rows : {int64_t{8}, int64_t{32}, int64_t{512}}) {
      const KernelSpec s = spec_of(spec);
      auto plan = make_plan(s, {rows * s.experts, 5760, 2880}, a, PlanOptions{}, nullptr);
      ASSERT_TRUE(plan.ok()) << plan.status().to_string();
      const PrunedSpace p = h200_space(spec, {rows * s.experts, 5760, 2880}, 16);
      ASSERT_FALSE(p.kept.empty()) << spec;
      auto def = std::find_if(p.kept.begin(), p.kept.end(), [](const PrunedCandidate& c) { return c.is_default; });
      ASSERT_NE(def, p.kept.end()) << spec << " rows " << rows;
      const TileConfig& planned = plan->configs[static_cast<size_t>(bucket_index(rows))];
      EXPECT_EQ(def->config, planned) << spec << " rows " << rows << ": " << def->config.to_string() << " vs "
                                      << planned.to_string();
    }
  }
}

TEST(PruneTest, ACapCoversSeveralTileShapes) {
  PrunedSpace s = h200_space("gemm a=bf16 b=bf16 out=bf16", {4096, 2112, 7168}, 24);
  std::set<std::string> shapes;
  for (const PrunedCandidate& c : s.kept) {
    shapes.insert(std::to_string(c.config.block_m) + "x" + std::to_string(c.config.block_n) + "x" +
                  std::to_string(c.config.block_k));
  }
  EXPECT_GE(shapes.size(), 4u);
  // Within the first four candidates, at least two tile shapes.
  std::set<int> first_n;
  for (size_t i = 0; i < 4 && i < s.kept.size(); ++i) first_n.insert(s.kept[i].config.block_n);
  EXPECT_GE(first_n.size(), 2u);
  // At M >= 256 a shape's TMA-store variant leads its plain-store ones.
  std::set<std::string> seen;
  for (const PrunedCandidate& c : s.kept) {
    const std::string shape = std::to_string(c.config.block_n) + "w" + std::to_string(c.config.warps_m);
    if (!seen.insert(shape).second || c.is_default) continue;
    bool any_tma = false;
    for (const PrunedCandidate& d : s.kept) {
      any_tma |= d.config.tma_store && d.config.block_n == c.config.block_n && d.config.warps_m == c.config.warps_m &&
                 d.config.block_m == c.config.block_m && d.config.block_k == c.config.block_k;
    }
    if (any_tma) EXPECT_TRUE(c.config.tma_store) << c.config.to_string();
  }
}

// Ping-pong tiles (templates/kernels/sm90/pingpong.cuh) rank as plain 128 x 128 tiles in the model; where K is short
// and M large (where they measured faster) the cap keeps the best of them, in its last place.
TEST(PruneTest, ShortKLargeMKeepsAPingPongCandidate) {
  auto count_pp = [](const PrunedSpace& s) {
    return std::count_if(s.kept.begin(), s.kept.end(),
                         [](const PrunedCandidate& c) { return c.config.pingpong != 0; });
  };
  for (const char* spec : {"gemm a=e4m3:m b=e4m3:n out=bf16", "gemm a=bf16 b=bf16 out=bf16"}) {
    const PrunedSpace all = h200_space(spec, {4096, 8192, 1024}, 0);
    ASSERT_GT(count_pp(all), 0) << spec;
    // A cap that ends just before the best-ranked ping-pong candidate (128 x 176 ones may rank in on their
    // own under a larger cap): the reservation alone brings one in.
    const auto first_pp = std::find_if(all.kept.begin(), all.kept.end(),
                                       [](const PrunedCandidate& c) { return c.config.pingpong != 0; });
    const int cap = static_cast<int>(first_pp - all.kept.begin());
    ASSERT_GE(cap, 2) << spec;
    const PrunedSpace capped = h200_space(spec, {4096, 8192, 1024}, static_cast<size_t>(cap));
    EXPECT_EQ(count_pp(capped), 1) << spec;
    EXPECT_LE(capped.kept.size(), static_cast<size_t>(cap) + 1) << spec;
    // The one kept is the best-ranked ping-pong candidate of the uncapped order, in the cap's last
    // non-default place.
    auto last = std::find_if(capped.kept.rbegin(), capped.kept.rend(),
                             [](const PrunedCandidate& c) { return !c.is_default; });
    ASSERT_NE(last, capped.kept.rend()) << spec;
    EXPECT_EQ(last->config, first_pp->config) << spec;
    // Nothing is lost from the accounting: kept + dropped = enumerated.
    int dropped = 0;
    for (const auto& [rule, n] : capped.dropped_by_rule) dropped += n;
    EXPECT_EQ(capped.kept.size() + dropped, capped.enumerated) << spec;
  }
  // Long K (ping-pong measured slower) and small M: no place is reserved, the cap is the order's first 24.
  for (const ProblemSizes sizes : {ProblemSizes{4096, 8192, 8192}, ProblemSizes{64, 8192, 1024}}) {
    const PrunedSpace all = h200_space("gemm a=e4m3:m b=e4m3:n out=bf16", sizes, 0);
    const PrunedSpace capped = h200_space("gemm a=e4m3:m b=e4m3:n out=bf16", sizes, 24);
    ASSERT_GE(capped.kept.size(), 24u);
    for (size_t i = 0; i < 24; ++i)
      EXPECT_EQ(capped.kept[i].config, all.kept[i].config) << sizes.m << " " << i;
  }
}

// Many full waves make a thin last wave cheap: 8192^3 FP8 blocks in 128 x 128 tiles (31.03 waves, a 3%
// last wave) survive the last-wave rule, which must not leave only split-K candidates.
TEST(PruneTest, ManyWavesKeepTilesWithAThinLastWave) {
  PrunedSpace s = h200_space("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", {8192, 8192, 8192}, 0);
  bool plain_128 = false;
  for (const PrunedCandidate& c : s.kept) {
    plain_128 |= c.config.block_m == 128 && c.config.block_n == 128 && c.config.split_k == 1 && !c.is_default;
  }
  EXPECT_TRUE(plain_128);
}

TEST(PruneTest, DropsNearlyEmptyLastWavesWhenABetterFillExists) {
  const Arch arch = arch_of("sm_80");
  const GpuModel gpu = gpu_model(arch, 108);
  const ProblemSizes sizes{512, 7168, 7168};  // few waves: a thin last wave costs much
  PruneOptions o;
  o.max_candidates = 0;  // no rank cap: see the rule alone
  PrunedSpace s = prune_space(kBf16, gpu, sizes, o);
  EXPECT_GT(s.dropped_by_rule["waves"], 0);
  for (const PrunedCandidate& c : s.kept) {
    if (c.is_default) continue;
    const double tail_idle = (1.0 - c.estimate.last_wave_fill) / std::ceil(c.estimate.waves);
    EXPECT_TRUE(c.estimate.last_wave_fill >= 0.25 || tail_idle <= 0.10) << c.config.to_string();
  }
  // With the threshold off, those configs come back.
  o.min_last_wave_fill = 0;
  EXPECT_GT(prune_space(kBf16, gpu, sizes, o).kept.size(), s.kept.size());
}

TEST(PruneTest, DropsTilesThatAreMostlyPadding) {
  const Arch arch = arch_of("sm_80");
  PruneOptions o;
  o.max_candidates = 0;
  PrunedSpace s = prune_space(kBf16, gpu_model(arch, 108), {1, 4096, 4096}, o);
  EXPECT_GT(s.dropped_by_rule["padding"], 0);
  for (const PrunedCandidate& c : s.kept) {
    if (!c.is_default) EXPECT_EQ(c.config.block_m, 16) << c.config.to_string();
  }
}

// The model cannot tell a tile's ring depth, raster group or cluster apart: among estimates in one 1%
// bin the deepest ring (among the variants with the same store path), group 8 and no cluster come first, so a small cap covers tile shapes instead of
// the alphabetically first (shallowest) variants of one shape.
TEST(PruneTest, TiedSm90VariantsRankDeepestRingGroup8NoClusterFirst) {
  const Arch arch = arch_of("sm_90a");
  const KernelSpec bf16 = spec_of("gemm a=bf16 b=bf16 out=bf16");
  PruneOptions o;
  o.max_candidates = 0;
  PrunedSpace all = prune_space(bf16, gpu_model(arch, 132), {4096, 7168, 2048}, o);
  ASSERT_GT(all.kept.size(), 8u);
  std::map<std::string, int> deepest;
  auto shape = [](const TileConfig& t) {
    return std::to_string(t.block_m) + "x" + std::to_string(t.block_n) + "w" + std::to_string(t.warps_m) +
           "x" + std::to_string(t.warps_n) + "k" + std::to_string(t.block_k) + "s" +
           std::to_string(t.split_k) + "t" + std::to_string(t.tma_store) + (t.pingpong ? "p" : "");
  };
  for (const PrunedCandidate& c : all.kept) deepest[shape(c.config)] = std::max(deepest[shape(c.config)], c.config.stages);
  // The first candidate of every tile shape is its deepest ring, group 8, no cluster.
  std::set<std::string> seen;
  for (const PrunedCandidate& c : all.kept) {
    if (!seen.insert(shape(c.config)).second || c.is_default) continue;
    EXPECT_EQ(c.config.stages, deepest[shape(c.config)]) << c.config.to_string();
    EXPECT_EQ(c.config.group_m, 8) << c.config.to_string();
    EXPECT_EQ(c.config.cluster_m, 1) << c.config.to_string();
  }
}

TEST(PruneTest, RespectsTheArchsSharedMemoryAndRegisters) {
  const Arch arch = arch_of("sm_86");
  PrunedSpace s = prune_space(kFp8, gpu_model(arch, 82), {4096, 4096, 4096}, {});
  EXPECT_GT(s.dropped_by_rule["shared memory"], 0);
  EXPECT_GT(s.dropped_by_rule["accumulators per thread"] + s.dropped_by_rule["registers"], 0);
  for (const PrunedCandidate& c : s.kept) EXPECT_LE(c.estimate.smem_bytes, arch.max_smem_per_block());
}

TEST(StaticModelTest, ResidencyWavesAndLastWaveFill) {
  const GpuModel gpu = gpu_model(arch_of("sm_80"), 108);
  // sm_80, bf16, 128 x 128 x 32 in 4 stages, 8 warps of 64 x 32: 64 KB of shared memory would allow
  // 2 blocks per SM (164 KB, 1 KB reserved per block), but ~148 registers x 256 threads allow one.
  // 32 x 32 = 1024 tiles over 108 slots: 9.48 waves, the last 52/108 full.
  ConfigEstimate e =
      estimate_config(kBf16, gpu, KernelFamily::kSm80Gemm, cfg(128, 128, 32, 4, 2, 4), {4096, 4096, 4096});
  EXPECT_EQ(e.smem_bytes, 65536);
  EXPECT_EQ(e.accumulators, 64);
  EXPECT_EQ(e.registers, 148);
  EXPECT_EQ(e.blocks_per_sm, 1);
  EXPECT_EQ(e.tiles, 1024);
  EXPECT_NEAR(e.waves, 1024.0 / 108.0, 1e-9);
  EXPECT_NEAR(e.last_wave_fill, (1024.0 - 9 * 108.0) / 108.0, 1e-9);
  EXPECT_DOUBLE_EQ(e.padding, 0.0);
  EXPECT_GT(e.est_us, 0);
  // 64 x 64 x 32, 4 stages, 4 warps: 32 KB -> 4 blocks by shared memory (registers would allow 5).
  ConfigEstimate small =
      estimate_config(kBf16, gpu, KernelFamily::kSm80Gemm, cfg(64, 64, 32, 4, 2, 2), {4096, 4096, 4096});
  EXPECT_EQ(small.smem_bytes, 32768);
  EXPECT_EQ(small.blocks_per_sm, 4);
  // Padding: M = 100 in 64-row tiles computes 128 rows.
  ConfigEstimate padded =
      estimate_config(kBf16, gpu, KernelFamily::kSm80Gemm, cfg(64, 64, 32, 4, 2, 2), {100, 4096, 4096});
  EXPECT_NEAR(padded.padding, 1.0 - 100.0 / 128.0, 1e-9);
}

TEST(StaticModelTest, DecodeFavoursMoreBytesInFlight) {
  // M = 16 reads the weights once: deeper rings keep more bytes in flight per SM.
  const GpuModel gpu = gpu_model(arch_of("sm_80"), 108);
  const ProblemSizes sizes{16, 7168, 7168};
  const double shallow =
      estimate_config(kBf16, gpu, KernelFamily::kSm80Gemm, cfg(16, 64, 32, 2, 1, 4), sizes).est_us;
  const double deep =
      estimate_config(kBf16, gpu, KernelFamily::kSm80Gemm, cfg(16, 64, 64, 6, 1, 4), sizes).est_us;
  EXPECT_LT(deep, shallow);
  // And no config beats reading the weights at the DRAM bandwidth.
  EXPECT_GE(deep, 7168.0 * 7168 * 2 / (gpu.dram_gbps * 1e3));
}

// Split-K turns a few tiles into enough units for every SM (decode: 64 x 2112 x 7168 is
// 33 tiles of 64 x 64 on 132 SMs), and costs partial-sum traffic where the tiles already fill the GPU.
TEST(StaticModelTest, SplitKHelpsFewTilesOnly) {
  const GpuModel gpu = gpu_model(arch_of("sm_90a"), 132);
  const KernelSpec bf16 = spec_of("gemm a=bf16 b=bf16 out=bf16");
  TileConfig c = cfg(64, 64, 64, 8, 4, 1);  // sm90: 64 x 64, one consumer warpgroup, 8 stages
  const ConfigEstimate one = estimate_config(bf16, gpu, KernelFamily::kSm90Gemm, c, {64, 2112, 7168});
  c.split_k = 4;
  const ConfigEstimate four = estimate_config(bf16, gpu, KernelFamily::kSm90Gemm, c, {64, 2112, 7168});
  EXPECT_EQ(four.tiles, one.tiles);
  EXPECT_NEAR(four.waves, 4 * one.waves, 1e-9);
  EXPECT_LT(four.est_us, 0.8 * one.est_us);
  // 4096 x 7168 already fills the SMs many times over: splitting only adds partial sums.
  c.split_k = 1;
  const double big1 = estimate_config(bf16, gpu, KernelFamily::kSm90Gemm, c, {4096, 7168, 7168}).est_us;
  c.split_k = 4;
  const double big4 = estimate_config(bf16, gpu, KernelFamily::kSm90Gemm, c, {4096, 7168, 7168}).est_us;
  EXPECT_GT(big4, big1);
}

// ---- presets, shape files, sharding ----

TEST(PresetsTest, ShapesComeFromTheBenchmarkList) {
  auto oss20 = preset_shapes("gpt-oss-20b");
  ASSERT_TRUE(oss20.ok()) << oss20.status().to_string();
  EXPECT_EQ(oss20->size(), 10u);     // gate_up and down x 5 token counts
  EXPECT_EQ((*oss20)[1].m, 16 * 4);  // 16 tokens x top-4
  EXPECT_EQ((*oss20)[1].n, 5760);
  EXPECT_EQ((*oss20)[1].k, 2880);
  EXPECT_EQ((*oss20)[1].spec.experts, 32);
  auto oss120 = preset_shapes("gpt-oss-120b");
  ASSERT_TRUE(oss120.ok());
  EXPECT_EQ(oss120->size(), 3u);
  auto ds = preset_shapes("deepseek-v3");
  ASSERT_TRUE(ds.ok()) << ds.status().to_string();
  EXPECT_EQ(ds->size(), 6u * 3 + 2u * 4);
  EXPECT_EQ(ds->back().m, 4096 * 8);
  auto unknown = preset_shapes("llama");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("gpt-oss-20b"), std::string::npos);
  auto overridden = preset_shapes("gpt-oss-20b", kBf16);
  ASSERT_TRUE(overridden.ok());
  EXPECT_EQ((*overridden)[0].spec, kBf16);
}

TEST(PresetsTest, ShapesFile) {
  auto s = shapes_from_json_text(
      R"([{"spec": "gemm a=bf16 b=bf16 out=bf16", "m": [1, 16], "n": 4096, "k": 512, "label": "proj"},
          {"spec": "gemm a=e4m3:tensor b=e4m3:tensor out=bf16", "m": 4096, "n": 7168, "k": 7168}])",
      "shapes.json");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_EQ(s->size(), 3u);
  EXPECT_EQ((*s)[1].m, 16);
  EXPECT_EQ((*s)[1].label, "proj, M=16");
  EXPECT_EQ((*s)[2].spec, kFp8);
  auto wrapped = shapes_from_json_text(R"({"shapes": [{"m": 1, "n": 16, "k": 16}]})", "w.json", kBf16);
  ASSERT_TRUE(wrapped.ok()) << wrapped.status().to_string();
  auto no_spec = shapes_from_json_text(R"([{"m": 1, "n": 16, "k": 16}])", "x.json");
  ASSERT_FALSE(no_spec.ok());
  EXPECT_NE(no_spec.status().message().find("x.json: shapes[0].spec"), std::string::npos);
  auto typo =
      shapes_from_json_text(R"([{"spec": "gemm a=bf16 b=bf16 out=bf16", "m": 1, "n": 16, "kk": 16}])", "y");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("kk: unknown field"), std::string::npos);
  EXPECT_FALSE(
      shapes_from_json_text(R"([{"spec": "gemm a=bf16 b=bf16 out=bf16", "m": 0, "n": 1, "k": 1}])", "z")
          .ok());
}

TEST(ShardingTest, OneDeviceTakesEveryShape) {
  auto shapes = preset_shapes("deepseek-v3");
  ASSERT_TRUE(shapes.ok());
  auto one = shard_shapes(*shapes, 1);
  ASSERT_EQ(one.size(), 1u);
  ASSERT_EQ(one[0].size(), shapes->size());
  for (size_t i = 0; i < one[0].size(); ++i) EXPECT_EQ(one[0][i], i);
}

TEST(ShardingTest, ShardsPartitionTheShapesAndBalanceTheCost) {
  auto shapes = preset_shapes("deepseek-v3");
  ASSERT_TRUE(shapes.ok());
  for (int n : {2, 3, 4, 8}) {
    auto shards = shard_shapes(*shapes, n);
    ASSERT_EQ(shards.size(), static_cast<size_t>(n));
    std::vector<int> seen(shapes->size(), 0);
    double lo = 1e300, hi = 0, biggest = 0;
    for (const auto& s : shards) {
      double cost = 0;
      for (size_t i : s) {
        seen[i] += 1;
        cost += tuning_cost((*shapes)[i]);
        biggest = std::max(biggest, tuning_cost((*shapes)[i]));
      }
      lo = std::min(lo, cost);
      hi = std::max(hi, cost);
    }
    for (int c : seen) EXPECT_EQ(c, 1);
    EXPECT_LE(hi - lo, biggest + 1e-9) << n << " shards";  // greedy LPT bound
    EXPECT_EQ(shards, shard_shapes(*shapes, n)) << "deterministic";
  }
}

TEST(ShardingTest, ParsesDevicesAndShards) {
  auto d = parse_device_list("0,1,3");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, (std::vector<int>{0, 1, 3}));
  EXPECT_FALSE(parse_device_list("0,0").ok());
  EXPECT_FALSE(parse_device_list("0,,1").ok());
  EXPECT_FALSE(parse_device_list("gpu0").ok());
  auto s = parse_shard("2/4");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->first, 2);
  EXPECT_EQ(s->second, 4);
  EXPECT_FALSE(parse_shard("4/4").ok());
  EXPECT_FALSE(parse_shard("1").ok());
  EXPECT_FALSE(parse_shard("0/0").ok());
}

// ---- the tuner's loop, with a fake compiler and runner ----

// Times by block_n (wider is faster), rejects one config as wrong, can sleep or report no device.
class FakeRunner : public CandidateRunner {
 public:
  StatusOr<Measurement> measure(Runtime&, const Plan& plan, int64_t m) override {
    const TileConfig c = plan.config_for(m);
    order.push_back(c);
    if (no_device) return NoDevice("fake: no GPU");
    if (sleep_ms) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    Measurement out;
    out.verified = !(c == wrong);
    out.median_us = 1000.0 / c.block_n + c.stages;
    if (!out.verified) out.detail = "fake: wrong";
    return out;
  }
  // The recheck's timings (time_us): recheck_us[config] when set, else measure()'s.
  StatusOr<double> time_us(Runtime& rt, const Plan& plan, int64_t m) override {
    const TileConfig c = plan.config_for(m);
    rechecks.push_back(c);
    if (auto it = recheck_us.find(c.to_string()); it != recheck_us.end()) return it->second;
    KILN_ASSIGN_OR_RETURN(Measurement r, measure(rt, plan, m));
    return r.median_us;
  }
  TileConfig wrong = cfg(16, 16, 16, 16, 1, 1);  // matches nothing by default
  bool no_device = false;
  int sleep_ms = 0;
  std::vector<TileConfig> order;
  std::map<std::string, double> recheck_us;
  std::vector<TileConfig> rechecks;
};

struct LoopFixture {
  std::shared_ptr<Runtime> rt = runtime();
  TuningDevice device = device_of("a100");
  TuneShape shape;
  std::shared_ptr<FakeRunner> runner = std::make_shared<FakeRunner>();
  TunerOptions options;
  std::set<std::string> injected;  // configs whose compile fails

  LoopFixture() {
    shape.spec = kBf16;
    shape.m = 100;  // bucket 128
    shape.n = 4096;
    shape.k = 4096;
    shape.label = "test";
    options.runner = runner;
    options.compile_threads = 3;
    options.compile = [this](const TileConfig& c) -> StatusOr<CompiledKernel> {
      if (injected.count(c.to_string())) return CompileError("injected failure for " + c.to_string());
      // What the real compile does first: the planner's checks (an invalid config never reaches NVRTC).
      KILN_RETURN_IF_ERROR(check_config(shape.spec, Tuner::arch_of(device), c));
      CompiledKernel k;
      k.compile_ms = 1;
      k.registers = 100;
      k.spill_stores = k.spill_loads = 0;
      return k;
    };
  }
};

TEST(TunerLoopTest, PicksTheFastestVerifiedCandidateAndKeepsFailuresAsData) {
  LoopFixture f;
  const TileConfig heuristic = default_config(kBf16, arch_of("sm_80"), {128, 4096, 4096});
  const TileConfig narrow = cfg(64, 64, 32, 3, 2, 2), wide = cfg(128, 256, 32, 3, 2, 4),
                   widest_wrong = cfg(64, 256, 32, 2, 2, 4), broken = cfg(48, 64, 32, 3, 2, 2),
                   injected = cfg(128, 128, 64, 3, 2, 4);
  f.options.candidates = {narrow, wide, widest_wrong, broken, injected, heuristic};
  f.injected.insert(injected.to_string());
  f.runner->wrong = widest_wrong;  // the fastest by time, but wrong: must never win
  std::vector<TuneProgress> progress;
  f.options.on_progress = [&](const TuneProgress& p) { progress.push_back(p); };
  Tuner tuner(*f.rt, f.options);
  auto r = tuner.tune(f.shape, f.device);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->m_bucket, 128);
  ASSERT_EQ(r->candidates.size(), 6u);
  auto at = [&](const TileConfig& c) -> const CandidateResult& {
    for (const CandidateResult& x : r->candidates)
      if (x.config == c) return x;
    ADD_FAILURE() << "no candidate " << c.to_string();
    return r->candidates[0];
  };
  EXPECT_EQ(at(broken).outcome, CandidateOutcome::kCompileFailed);
  EXPECT_EQ(at(broken).compile_status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(at(injected).outcome, CandidateOutcome::kCompileFailed);
  EXPECT_NE(at(injected).compile_status.message().find("injected"), std::string::npos);
  EXPECT_TRUE(std::isinf(at(injected).time_us()));
  EXPECT_EQ(at(widest_wrong).outcome, CandidateOutcome::kRejected);
  EXPECT_TRUE(std::isinf(at(widest_wrong).time_us()));
  EXPECT_EQ(at(wide).outcome, CandidateOutcome::kTimed);
  ASSERT_TRUE(r->best.has_value());
  EXPECT_EQ(r->candidates[*r->best].config, wide);
  ASSERT_TRUE(r->baseline.has_value());
  EXPECT_EQ(r->candidates[*r->baseline].config, heuristic);
  ASSERT_FALSE(f.runner->order.empty());
  EXPECT_EQ(f.runner->order[0], heuristic) << "the baseline is measured first";
  EXPECT_EQ(r->count(CandidateOutcome::kTimed), 3u);

  auto rec = r->record();
  ASSERT_TRUE(rec.has_value());
  EXPECT_EQ(rec->m_bucket, 128);
  EXPECT_EQ(rec->family, "sm80_gemm");
  EXPECT_EQ(rec->problem.spec, "gemm a=bf16 b=bf16 out=bf16");
  EXPECT_EQ(rec->problem.n, 4096);
  EXPECT_EQ(rec->device.key.cc, 80);
  EXPECT_EQ(rec->candidates, 6);
  EXPECT_DOUBLE_EQ(rec->median_us, 1000.0 / 256 + 3);
  auto back = config_from_json(nlohmann::json::parse(rec->config_json));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, wide);
  EXPECT_TRUE(validate_tuning_record(*rec).ok());

  ASSERT_FALSE(progress.empty());
  const TuneProgress& last = progress.back();
  EXPECT_EQ(last.compiled + last.compile_failed, 6u);
  EXPECT_EQ(last.compile_failed, 2u);
  EXPECT_EQ(last.measured, 4u);
  EXPECT_EQ(last.rejected, 1u);
  EXPECT_EQ(last.best_config, wide.to_string());
}

TEST(TunerLoopTest, TheBudgetStopsNewWorkButTheBaselineIsMeasured) {
  LoopFixture f;
  f.options.candidates = config_space(kBf16, arch_of("sm_80"));
  f.options.candidates.resize(40);
  f.options.budget_s = 0.05;
  f.runner->sleep_ms = 30;
  Tuner tuner(*f.rt, f.options);
  auto r = tuner.tune(f.shape, f.device);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_TRUE(r->baseline.has_value());
  EXPECT_EQ(r->candidates[*r->baseline].outcome, CandidateOutcome::kTimed);
  EXPECT_GT(r->count(CandidateOutcome::kSkipped), 0u);
  EXPECT_LT(r->count(CandidateOutcome::kTimed), 10u);
  EXPECT_TRUE(r->best.has_value());
}

// The winner is re-timed against the reference in interleaved rounds (winner, reference, winner, ...) and
// recorded only when its median there is lower: without a record the reference is the heuristic's config.
TEST(TunerLoopTest, TheWinnerIsRecordedOnlyWhenItsRecheckBeatsTheReference) {
  const TileConfig heuristic = default_config(kBf16, arch_of("sm_80"), {128, 4096, 4096});
  const TileConfig wide = cfg(128, 256, 32, 3, 2, 4);
  for (const bool holds : {true, false}) {
    LoopFixture f;
    f.options.candidates = {wide, heuristic};
    // The search's timings say wide is faster; the recheck agrees, or finds it slower.
    f.runner->recheck_us[wide.to_string()] = holds ? 5.0 : 50.0;
    f.runner->recheck_us[heuristic.to_string()] = 20.0;
    Tuner tuner(*f.rt, f.options);
    auto r = tuner.tune(f.shape, f.device);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    ASSERT_TRUE(r->best.has_value());
    EXPECT_EQ(r->candidates[*r->best].config, wide);
    EXPECT_FALSE(r->incumbent.has_value());
    EXPECT_EQ(r->recheck.rounds, 5);
    EXPECT_EQ(r->recheck.reference, *r->baseline);
    ASSERT_EQ(f.runner->rechecks.size(), 10u);
    EXPECT_EQ(f.runner->rechecks[0], wide);
    EXPECT_EQ(f.runner->rechecks[1], heuristic);
    EXPECT_DOUBLE_EQ(r->recheck.reference_us, 20.0);
    auto rec = r->record();
    EXPECT_EQ(rec.has_value(), holds);
    if (rec) EXPECT_DOUBLE_EQ(rec->median_us, 5.0);  // the recheck's figure
    EXPECT_FALSE(r->replaces_incumbent());          // the reference was the heuristic, not a record
    // Online tuning records the reference when the winner did not hold, so the bucket is not searched again.
    auto ref = r->reference_record();
    EXPECT_EQ(ref.has_value(), !holds);
    if (ref) {
      EXPECT_DOUBLE_EQ(ref->median_us, 20.0);
      auto back = config_from_json(nlohmann::json::parse(ref->config_json));
      ASSERT_TRUE(back.ok());
      EXPECT_EQ(*back, heuristic);
    }
  }
  // No recheck when asked for none, or when the winner is the reference itself.
  LoopFixture off;
  off.options.candidates = {wide, heuristic};
  off.options.recheck_rounds = 0;
  auto r0 = Tuner(*off.rt, off.options).tune(off.shape, off.device);
  ASSERT_TRUE(r0.ok());
  EXPECT_EQ(r0->recheck.rounds, 0);
  EXPECT_TRUE(off.runner->rechecks.empty());
  EXPECT_TRUE(r0->record().has_value());
  LoopFixture same;
  same.options.candidates = {heuristic};
  auto r1 = Tuner(*same.rt, same.options).tune(same.shape, same.device);
  ASSERT_TRUE(r1.ok());
  EXPECT_EQ(r1->recheck.rounds, 0);
  EXPECT_TRUE(r1->record().has_value());
}

TEST(TunerLoopTest, NoDeviceEndsTimingAndLeavesCompiledCandidates) {
  LoopFixture f;
  f.runner->no_device = true;
  f.options.candidates = {cfg(64, 64, 32, 3, 2, 2), cfg(128, 128, 32, 3, 2, 4)};
  Tuner tuner(*f.rt, f.options);
  auto r = tuner.tune(f.shape, f.device);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->timing_status.code(), StatusCode::kNoDevice);
  EXPECT_FALSE(r->best.has_value());
  EXPECT_FALSE(r->record().has_value());
  EXPECT_EQ(f.runner->order.size(), 1u);
}

TEST(TunerLoopTest, CompileOnlyCompilesEverythingAndTimesNothing) {
  LoopFixture f;
  f.options.time = false;
  f.options.prune.max_candidates = 8;
  Tuner tuner(*f.rt, f.options);
  auto r = tuner.tune(f.shape, f.device);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->count(CandidateOutcome::kCompiled), r->candidates.size());
  EXPECT_GE(r->candidates.size(), 8u);
  EXPECT_TRUE(f.runner->order.empty());
  EXPECT_EQ(r->timing_status.code(), StatusCode::kNotReady);
}

TEST(TunerLoopTest, UnsupportedShapesAreErrorsNotResults) {
  LoopFixture f;
  f.shape.spec = spec_of("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16 pass=dgrad");
  Tuner tuner(*f.rt, f.options);
  EXPECT_EQ(tuner.tune(f.shape, f.device).status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(tuner.candidates(f.shape, f.device).status().code(), StatusCode::kUnsupported);
}

TEST(TunerTest, DryRunListsPrunedCandidatesForEachFamily) {
  auto rt = runtime();
  TunerOptions o;
  o.prune.max_candidates = 12;
  Tuner tuner(*rt, o);
  TuneShape s;
  s.spec = kBf16;
  s.m = 16;
  s.n = 7168;
  s.k = 7168;
  for (const char* gpu : {"h200", "a100", "l40s"}) {
    auto space = tuner.candidates(s, device_of(gpu));
    ASSERT_TRUE(space.ok()) << gpu << ": " << space.status().to_string();
    EXPECT_GE(space->kept.size(), 2u) << gpu;
    EXPECT_LE(space->kept.size(), 13u) << gpu;
    for (const PrunedCandidate& c : space->kept) {
      EXPECT_TRUE(check_config(s.spec, Tuner::arch_of(device_of(gpu)), space->family, c.config).ok()) << gpu;
      EXPECT_GT(c.estimate.est_us, 0);
    }
  }
}

// Small M: a dense bucket of <= 16 rows that an sm90 plan runs on the decode kernel is
// tuned over the decode grid (the heuristic first), recorded as a portable-family config.
TEST(TunerTest, DecodeBucketsAreTunedOverTheDecodeGrid) {
  auto rt = runtime();
  Tuner tuner(*rt, TunerOptions{});
  for (const char* spec : {"gemm a=bf16 b=bf16 out=bf16", "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16"}) {
    TuneShape s;
    s.spec = *parse_spec(spec);
    s.m = 1;
    s.n = 8192;
    s.k = 8192;
    auto space = tuner.candidates(s, device_of("h200"));
    ASSERT_TRUE(space.ok()) << space.status().to_string();
    EXPECT_EQ(space->family, KernelFamily::kSm80Gemm) << spec;
    ASSERT_GE(space->kept.size(), 8u) << spec;
    // The first is the incumbent (the pre-tuned H200 row for this shape) or the heuristic.
    for (const PrunedCandidate& c : space->kept) {
      EXPECT_EQ(c.config.decode, 1) << spec << " " << c.config.to_string();
      EXPECT_EQ(c.config.block_m, 8) << spec;
      EXPECT_TRUE(check_config(s.spec, arch_of("sm_90a"), KernelFamily::kSm80Gemm, c.config).ok()) << c.config.to_string();
    }
    EXPECT_TRUE(std::any_of(space->kept.begin(), space->kept.end(), [](const PrunedCandidate& c) { return c.is_default; }))
        << spec;
    EXPECT_GT(space->dropped_by_rule["decode rules"], 0) << spec;  // e.g. 8 segments x 64 rows: registers
    s.m = 16;  // 16 rows: token tiles of 16 (the heuristic's) and of 8 (two CTAs per weight-row group)
    auto sixteen = tuner.candidates(s, device_of("h200"));
    ASSERT_TRUE(sixteen.ok()) << sixteen.status().to_string();
    for (int bm : {8, 16}) {
      EXPECT_TRUE(std::any_of(sixteen->kept.begin(), sixteen->kept.end(),
                              [bm](const PrunedCandidate& c) { return c.config.block_m == bm && c.config.decode == 1; }))
          << spec << " block_m " << bm;
    }
    s.m = 17;  // past the decode buckets: the sm90 family's space
    auto wide = tuner.candidates(s, device_of("h200"));
    ASSERT_TRUE(wide.ok());
    EXPECT_EQ(wide->family, KernelFamily::kSm90Gemm) << spec;
  }
}

// The warpgroup decode kernel (decode 2) runs by an explicit config only: the tuner's decode grid keeps
// the mma.sync kernel's configs.
TEST(TunerTest, Fp8DecodeBucketsKeepTheMmaSyncKernel) {
  auto rt = runtime();
  Tuner tuner(*rt, TunerOptions{});
  TuneShape s;
  s.spec = *parse_spec("gemm a=e4m3:tensor b=e4m3:tensor out=bf16");
  s.m = 16;
  s.n = 8192;
  s.k = 8192;
  auto space = tuner.candidates(s, device_of("h200"));
  ASSERT_TRUE(space.ok()) << space.status().to_string();
  ASSERT_FALSE(space->kept.empty());
  for (const PrunedCandidate& c : space->kept) EXPECT_EQ(c.config.decode, 1) << c.config.to_string();
}

TEST(TunerTest, GroupedShapesAreBucketedByRowsPerExpert) {
  TuneShape s;
  s.spec = spec_of("grouped_gemm[experts=32,layout=offsets] a=bf16 b=bf16 out=bf16");
  s.m = 16 * 4;  // 16 tokens x top-4 over 32 experts: 2 rows per expert
  s.n = 5760;
  s.k = 2880;
  EXPECT_EQ(Tuner::bucket_of(s), 2);
  EXPECT_EQ(Tuner::measured_sizes(s).m, 64);
  s.m = 100;  // 3.1 rows per expert -> bucket 4, measured at 4 x 32
  EXPECT_EQ(Tuner::bucket_of(s), 4);
  EXPECT_EQ(Tuner::measured_sizes(s).m, 128);
  TuneShape d;
  d.spec = kBf16;
  d.m = 100;
  EXPECT_EQ(Tuner::bucket_of(d), 128);
  EXPECT_EQ(Tuner::measured_sizes(d).m, 128);
}

// ---- Runtime::plan takes tuned configs ----

class TunedConfigsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir();
    rt_ = runtime(dir_);
  }
  void TearDown() override {
    set_online_tuning(std::nullopt);
    set_online_tuner({});
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  TuningRecord tuned(const TileConfig& c, int64_t bucket, const std::string& family = "sm80_gemm") {
    TuningRecord r = record_of(device_of("a100"), kBf16, 4096, 4096, bucket, family.c_str(), c);
    r.median_us = 42;
    r.candidates = 7;
    return r;
  }
  size_t index_of(int64_t bucket) {
    return static_cast<size_t>(std::find(kTuningMBuckets.begin(), kTuningMBuckets.end(), bucket) -
                               kTuningMBuckets.begin());
  }
  std::string dir_;
  std::shared_ptr<Runtime> rt_;
  ScopedEnv device_{"KILN_TUNING_DEVICE", "cc=80,sms=108,nvrtc=13"};
  const Arch sm80_ = arch_of("sm_80");
};

TEST_F(TunedConfigsTest, PlanUsesTheUserDatabaseAndTheHeuristicElsewhere) {
  const TileConfig mine = cfg(64, 128, 64, 3, 2, 2);
  auto stored = shared_tuning_store(dir_)->record(tuned(mine, 4096));
  ASSERT_TRUE(stored.ok()) << stored.status().to_string();
  auto plan = rt_->plan(kBf16, {4096, 4096, 4096}, sm80_);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->config_for(4096), mine);
  EXPECT_EQ(plan->config_for(3000), mine);  // dispatch bucket 4096
  EXPECT_EQ(plan->config_for(1), default_config(kBf16, sm80_, {1, 4096, 4096}));
  StoreTunings tunings(*rt_);
  BucketChoices tc;
  tunings.apply(kBf16, KernelFamily::kSm80Gemm, {4096, 4096, 4096}, sm80_, tc);
  EXPECT_EQ(tc[index_of(4096)].source, ConfigSource::kUserDb);
  EXPECT_EQ(tc[index_of(1)].source, ConfigSource::kHeuristic);
  ASSERT_TRUE(tunings.device().has_value());
  EXPECT_EQ(tunings.device()->key.sm_count, 108);
  // Another N is another problem.
  auto other = rt_->plan(kBf16, {4096, 2048, 4096}, sm80_);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->config_for(4096), default_config(kBf16, sm80_, {4096, 2048, 4096}));
}

TEST_F(TunedConfigsTest, ASpecWithoutARowBorrowsTheRowOfItsPlainForm) {
  const TileConfig mine = cfg(64, 128, 64, 3, 2, 2);
  ASSERT_TRUE(shared_tuning_store(dir_)->record(tuned(mine, 4096)).ok());
  // The forward of a layer with a bias: the same GEMM with an epilogue.
  const KernelSpec biased = *parse_spec(R"(gemm a=bf16 b=bf16 out=bf16 epilogue="out = acc + bias[n]")");
  BucketChoices tc;
  StoreTunings(*rt_).apply(biased, KernelFamily::kSm80Gemm, {4096, 4096, 4096}, sm80_, tc);
  EXPECT_EQ(tc[index_of(4096)].source, ConfigSource::kBorrowed);
  EXPECT_EQ(tc[index_of(4096)].config, mine);
  EXPECT_EQ(tc[index_of(1)].source, ConfigSource::kHeuristic);
  EXPECT_STREQ(config_source_name(ConfigSource::kBorrowed), "borrowed tuning");
  // Another output format borrows too; its own row, once recorded, wins.
  const KernelSpec f32_out = *parse_spec("gemm a=bf16 b=bf16 out=f32");
  BucketChoices tf;
  StoreTunings(*rt_).apply(f32_out, KernelFamily::kSm80Gemm, {4096, 4096, 4096}, sm80_, tf);
  EXPECT_EQ(tf[index_of(4096)].source, ConfigSource::kBorrowed);
  const TileConfig own = cfg(128, 128, 32, 4, 2, 4);
  TuningRecord r = record_of(device_of("a100"), f32_out, 4096, 4096, 4096, "sm80_gemm", own);
  r.median_us = 40;
  r.candidates = 3;
  ASSERT_TRUE(shared_tuning_store(dir_)->record(r).ok());
  BucketChoices to;
  StoreTunings(*rt_).apply(f32_out, KernelFamily::kSm80Gemm, {4096, 4096, 4096}, sm80_, to);
  EXPECT_EQ(to[index_of(4096)].source, ConfigSource::kUserDb);
  EXPECT_EQ(to[index_of(4096)].config, own);
  // A gate|up GLU's epilogue changes N's meaning: no borrowing from the plain spec.
  EXPECT_TRUE(tuning_kin(*parse_spec(R"(gemm a=bf16 b=bf16 out=bf16 gate_up=interleaved epilogue="out = silu(gate) * up")"))
                  .size() == 2);  // only the other output formats, epilogue kept
  for (const KernelSpec& k : tuning_kin(*parse_spec(
           R"(gemm a=bf16 b=bf16 out=bf16 gate_up=interleaved epilogue="out = silu(gate) * up")")))
    EXPECT_FALSE(k.epilogue.empty());
  EXPECT_TRUE(tuning_kin(*parse_spec("quantize a=bf16 out=mxfp4")).empty());
  // A wgrad that accumulates borrows the row of the wgrad that overwrites, first.
  const std::vector<KernelSpec> acc_kin = tuning_kin(*parse_spec("gemm a=bf16 b=bf16 out=f32 pass=wgrad accumulate=true"));
  ASSERT_FALSE(acc_kin.empty());
  EXPECT_EQ(acc_kin[0], *parse_spec("gemm a=bf16 b=bf16 out=f32 pass=wgrad"));
}

TEST_F(TunedConfigsTest, ConfigsThePlannerRejectsOrOfAnotherFamilyAreIgnored) {
  auto store = shared_tuning_store(dir_);
  ASSERT_TRUE(store->record(tuned(cfg(48, 64, 32, 3, 2, 2), 64)).ok());                // fails check_config
  ASSERT_TRUE(store->record(tuned(cfg(64, 64, 32, 3, 2, 2), 128, "sm90_gemm")).ok());  // another family
  BucketChoices tc;
  StoreTunings(*rt_).apply(kBf16, KernelFamily::kSm80Gemm, {64, 4096, 4096}, sm80_, tc);
  EXPECT_EQ(tc[index_of(64)].source, ConfigSource::kHeuristic);
  EXPECT_EQ(tc[index_of(128)].source, ConfigSource::kHeuristic);
}

TEST_F(TunedConfigsTest, TuningsOfAnotherArchAreNotUsed) {
  ASSERT_TRUE(shared_tuning_store(dir_)->record(tuned(cfg(64, 128, 64, 3, 2, 2), 4096)).ok());
  const Arch sm86 = arch_of("sm_86");
  StoreTunings tunings(*rt_);
  BucketChoices tc;
  tunings.apply(kBf16, KernelFamily::kSm80Gemm, {4096, 4096, 4096}, sm86, tc);
  EXPECT_FALSE(tunings.device().has_value());
  for (const BucketChoice& c : tc) EXPECT_EQ(c.source, ConfigSource::kHeuristic);
}

TEST_F(TunedConfigsTest, MemoryLayerOverridesTheDatabaseForThisProcess) {
  auto store = shared_tuning_store(dir_);
  ASSERT_TRUE(store->record(tuned(cfg(64, 128, 64, 3, 2, 2), 256)).ok());
  ASSERT_TRUE(store->remember(tuned(cfg(128, 128, 32, 4, 2, 4), 256)).ok());
  auto plan = rt_->plan(kBf16, {256, 4096, 4096}, sm80_);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->config_for(256), cfg(128, 128, 32, 4, 2, 4));
}

TEST_F(TunedConfigsTest, PinnedConfigTakesEveryBucketOfThatPlanOnly) {
  const TileConfig pin = cfg(64, 64, 32, 3, 2, 2);
  // A tuning of bucket 1 that the pin must win over.
  ASSERT_TRUE(shared_tuning_store(dir_)->record(tuned(cfg(32, 128, 64, 4, 1, 4), 1)).ok());
  PlanOptions o;
  o.arch = sm80_;
  o.config = pin;
  auto plan = rt_->plan(kBf16, {1, 4096, 4096}, o);
  ASSERT_TRUE(plan.ok());
  for (int64_t b : kTuningMBuckets) EXPECT_EQ(plan->config_for(b), pin);
  auto other = rt_->plan(kBf16, {1, 4096, 4096}, sm80_);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->config_for(1), cfg(32, 128, 64, 4, 1, 4));
  EXPECT_EQ(other->config_for(4096), default_config(kBf16, sm80_, {4096, 4096, 4096}));
  // A pinned config the family refuses fails the plan, naming config, family and arch.
  o.config = cfg(48, 64, 32, 3, 2, 2);
  auto bad = rt_->plan(kBf16, {1, 4096, 4096}, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("config " + o.config->to_string() + " for sm80_gemm on sm_80"),
            std::string::npos)
      << bad.status().message();
}

TEST_F(TunedConfigsTest, OnlineTuningIsOptInAndTunesTheHintBucket) {
  const TileConfig won = cfg(32, 128, 64, 4, 1, 4);
  int calls = 0;
  set_online_tuner([&](Runtime&, const OnlineTuneRequest& req) -> StatusOr<TuningRecord> {
    ++calls;
    EXPECT_EQ(req.sizes.m, 20);
    TuningRecord r = tuned(won, tuning_m_bucket(req.sizes.m));
    r.device = req.device;
    return r;
  });
  set_online_tuning(false);
  {
    ScopedEnv autotune("KILN_AUTOTUNE", "1");  // the API flag wins over the environment
    auto plan = rt_->plan(kBf16, {20, 4096, 4096}, sm80_);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(calls, 0);
  }
  set_online_tuning(true);
  auto plan = rt_->plan(kBf16, {20, 4096, 4096}, sm80_);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(plan->config_for(24), won);
  // Recorded: the next plan (this process or the next) finds it without tuning.
  auto again = rt_->plan(kBf16, {20, 4096, 4096}, sm80_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(again->config_for(24), won);
  TuningStore::Options o;
  o.dir = dir_;
  auto fresh = TuningStore::open(o);
  ASSERT_TRUE(fresh.ok());
  auto hit = (*fresh)->lookup(device_of("a100").key, tuning_problem(kBf16, {0, 4096, 4096}), 24);
  ASSERT_TRUE(hit.ok() && hit->has_value());
}

TEST_F(TunedConfigsTest, UntunedShapesAreRecordedWhenAsked) {
  {
    auto plan = rt_->plan(kBf16, {100, 4096, 1024}, sm80_);
    ASSERT_TRUE(plan.ok());
  }
  ScopedEnv record("KILN_RECORD_UNTUNED", "1");
  auto plan = rt_->plan(kBf16, {100, 4096, 2048}, sm80_);
  ASSERT_TRUE(plan.ok());
  auto again = rt_->plan(kBf16, {100, 4096, 2048}, sm80_);  // once per process
  ASSERT_TRUE(again.ok());
  TuningStore::Options o;
  o.dir = dir_;
  auto store = TuningStore::open(o);
  ASSERT_TRUE(store.ok());
  auto rows = (*store)->untuned();
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].m_bucket, 128);
  EXPECT_EQ((*rows)[0].problem.k, 2048);
  EXPECT_EQ((*rows)[0].seen, 1);
}

// describe_json says per sm90 bucket whether an FP8 kernel promotes its accumulator or adds
// into wgmma's FP8 accumulator (like cuBLAS's fast accumulation), so a benchmark can pick the anchor that
// does the same. No GPU needed: planning only.
TEST(DescribeTest, NamesTheFp8AccumulationOfEachSm90Bucket) {
  auto rt = runtime();
  const Arch sm90a = arch_of("sm_90a");
  auto buckets_of = [&](const char* text, int64_t n, int64_t k) {
    auto p = rt->plan(*parse_spec(text), {4096, n, k}, sm90a);
    EXPECT_TRUE(p.ok()) << text << ": " << p.status().to_string();
    std::map<int64_t, nlohmann::json> out;
    if (!p.ok()) return out;
    const nlohmann::json j = nlohmann::json::parse(p->describe_json());
    for (const auto& b : j["buckets"]) out[b["m_max"].get<int64_t>()] = b;
    return out;
  };
  // FP8 tensor scales: the 128 x 256 tile (128 accumulators) accumulates fast; the 128 x 128 square of
  // medium M (64 accumulators) promotes.
  auto tensor = buckets_of("gemm a=e4m3:tensor b=e4m3:tensor out=bf16", 7168, 16384);
  ASSERT_FALSE(tensor.empty());
  EXPECT_EQ(tensor[4096].value("fp8_accumulation", ""), "fast") << tensor[4096].dump();
  EXPECT_EQ(tensor[512].value("fp8_accumulation", ""), "promoted") << tensor[512].dump();
  // Block scales always promote.
  for (const auto& [m, b] : buckets_of("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 7168, 16384)) {
    if (b.contains("family")) continue;  // a bucket of another family: no field
    EXPECT_EQ(b.value("fp8_accumulation", ""), "promoted") << m << " " << b.dump();
  }
  // bf16 has no field.
  for (const auto& [m, b] : buckets_of("gemm a=bf16 b=bf16 out=bf16", 7168, 16384))
    EXPECT_FALSE(b.contains("fp8_accumulation")) << m << " " << b.dump();
}

// A plan of the sm90 family runs the heuristic's buckets of grouped FP8 (tensor / row)
// at <= 16 rows per expert on the portable family, where it measured faster; tuned or pinned buckets,
// other specs and other archs keep one family. No GPU needed: planning only.
TEST(PerBucketFamilyTest, GroupedFp8DecodeBucketsRunPortableOnSm90a) {
  auto rt = runtime();
  const Arch sm90a = arch_of("sm_90a");
  auto plan_of = [&](const char* text) {
    auto p = rt->plan(*parse_spec(text), {64, 5760, 2944}, sm90a);
    EXPECT_TRUE(p.ok()) << text << ": " << p.status().to_string();
    return *p;
  };
  const Plan row = plan_of("grouped_gemm[experts=32,layout=offsets] a=e4m3:m b=e4m3:n out=bf16");
  EXPECT_EQ(row.family(), KernelFamily::kSm90Gemm);
  for (int64_t m : {1, 2, 8, 16}) EXPECT_EQ(row.family_for(m), KernelFamily::kSm80Gemm) << m;
  for (int64_t m : {24, 64, 512, 4096}) EXPECT_EQ(row.family_for(m), KernelFamily::kSm90Gemm) << m;
  EXPECT_TRUE(check_config(row.spec(), sm90a, KernelFamily::kSm80Gemm, row.config_for(2)).ok());
  EXPECT_TRUE(check_config(row.spec(), sm90a, KernelFamily::kSm90Gemm, row.config_for(512)).ok());
  EXPECT_NE(row.describe_json().find("\"family\":\"sm80_gemm\""), std::string::npos) << row.describe_json();
  const Plan tensor = plan_of("grouped_gemm[experts=8,layout=masked] a=e4m3:tensor b=e4m3:tensor out=f32");
  EXPECT_EQ(tensor.family_for(4), KernelFamily::kSm80Gemm);
  // bf16 and block-scaled grouped specs stay on sm90 in every bucket.
  for (const char* text : {"grouped_gemm[experts=32,layout=offsets] a=bf16 b=bf16 out=bf16",
                           "grouped_gemm[experts=32,layout=offsets] a=e4m3:block1x128 b=e4m3:block128x128 out=bf16"}) {
    const Plan p = plan_of(text);
    for (int64_t m : {1, 16, 4096}) EXPECT_EQ(p.family_for(m), p.family()) << text << " m=" << m;
  }
  // Dense problems of at most 16 rows run the portable family's decode kernel, the rest stay on
  // sm90.
  for (const char* text : {"gemm a=e4m3:m b=e4m3:n out=bf16", "gemm a=bf16 b=bf16 out=bf16",
                           "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16"}) {
    const Plan p = plan_of(text);
    EXPECT_EQ(p.family(), KernelFamily::kSm90Gemm) << text;
    for (int64_t m : {1, 2, 8, 16}) {
      EXPECT_EQ(p.family_for(m), KernelFamily::kSm80Gemm) << text << " m=" << m;
      EXPECT_EQ(p.config_for(m).decode, 1) << text << " m=" << m;
      EXPECT_EQ(p.config_for(m).block_m, m <= 8 ? 8 : 16) << text << " m=" << m;
    }
    for (int64_t m : {24, 4096}) EXPECT_EQ(p.family_for(m), KernelFamily::kSm90Gemm) << text << " m=" << m;
  }
  // A pinned config (how the tuner runs an sm90 candidate) keeps every bucket on the plan's family.
  PlanOptions o;
  o.arch = sm90a;
  o.config = row.config_for(512);
  auto pinned_or = rt->plan(*parse_spec("grouped_gemm[experts=32,layout=offsets] a=e4m3:m b=e4m3:n out=bf16"),
                            {64, 5760, 2944}, o);
  ASSERT_TRUE(pinned_or.ok()) << pinned_or.status().to_string();
  const Plan& pinned = *pinned_or;
  for (int64_t m : {1, 16, 4096}) EXPECT_EQ(pinned.family_for(m), KernelFamily::kSm90Gemm) << m;
  // Elsewhere the portable family is the plan's family anyway.
  auto p89 = rt->plan(*parse_spec("grouped_gemm[experts=32,layout=offsets] a=e4m3:m b=e4m3:n out=bf16"),
                      {64, 5760, 2880}, arch_of("sm_89"));
  ASSERT_TRUE(p89.ok());
  for (int64_t m : {1, 4096}) EXPECT_EQ(p89->family_for(m), KernelFamily::kSm80Gemm);
}

// The tuner searches an sm90 plan's grouped FP8 decode buckets in the portable family's space, pins
// its candidates there, and the plan runs a recorded portable winner on the portable family.
TEST(PerBucketFamilyTest, PortableBucketsAreTunedAndRunOnThePortableFamily) {
  const Arch sm90a = arch_of("sm_90a");
  const KernelSpec row = *parse_spec("grouped_gemm[experts=32,layout=offsets] a=e4m3:m b=e4m3:n out=bf16");
  EXPECT_EQ(*select_bucket_family(row, sm90a, 2), KernelFamily::kSm80Gemm);
  EXPECT_EQ(*select_bucket_family(row, sm90a, 16), KernelFamily::kSm80Gemm);
  EXPECT_EQ(*select_bucket_family(row, sm90a, 64), KernelFamily::kSm90Gemm);
  // Dense: the decode kernel (portable family) up to 16 rows, sm90 past them.
  EXPECT_EQ(*select_bucket_family(kFp8, sm90a, 2), KernelFamily::kSm80Gemm);
  EXPECT_EQ(*select_bucket_family(kFp8, sm90a, 24), KernelFamily::kSm90Gemm);
  EXPECT_EQ(*select_bucket_family(row, arch_of("sm_89"), 64), KernelFamily::kSm80Gemm);

  // The space of a 2-rows-per-expert bucket (64 tokens over 32 experts) is the portable one.
  auto rt = runtime();
  TunerOptions opts;
  opts.prune.max_candidates = 8;
  Tuner tuner(*rt, opts);
  auto device = parse_tuning_device("h200", 13);
  ASSERT_TRUE(device.ok());
  TuneShape shape = tune_shape(row, 64, 5760, 2880);
  auto space = tuner.candidates(shape, *device);
  ASSERT_TRUE(space.ok()) << space.status().to_string();
  EXPECT_EQ(space->family, KernelFamily::kSm80Gemm);
  ASSERT_FALSE(space->kept.empty());
  bool has_default = false;
  for (const PrunedCandidate& c : space->kept) {
    EXPECT_TRUE(check_config(row, sm90a, KernelFamily::kSm80Gemm, c.config).ok()) << c.config.to_string();
    has_default |= c.is_default;
  }
  EXPECT_TRUE(has_default);
  shape.m = 4096;  // 128 rows per expert: the sm90 family's space
  auto big = tuner.candidates(shape, *device);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->family, KernelFamily::kSm90Gemm);

  // A candidate pinned with its family runs every bucket there.
  const TileConfig portable = space->kept.front().config;
  {
    PlanOptions pin;
    pin.arch = sm90a;
    pin.config = portable;
    pin.family = KernelFamily::kSm80Gemm;
    auto p = rt->plan(row, {64, 5760, 2880}, pin);
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    for (int64_t m : {1, 2, 4096}) {
      EXPECT_EQ(p->family_for(m), KernelFamily::kSm80Gemm) << m;
      EXPECT_EQ(p->config_for(m), portable) << m;
    }
  }

  // A recorded portable winner for bucket 2: the sm90 plan runs that bucket on the portable family
  // with the recorded config; an sm90 winner for bucket 64 stays sm90.
  const std::string dir = temp_dir();
  {
    ScopedEnv device_env{"KILN_TUNING_DEVICE", "h200"};
    auto rt2 = runtime(dir);
    ASSERT_TRUE(shared_tuning_store(dir)->record(record_of(*device, row, 5760, 2880, 2, "sm80_gemm", portable)).ok());
    auto p = rt2->plan(row, {64, 5760, 2880}, sm90a);
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    EXPECT_EQ(p->family_for(2), KernelFamily::kSm80Gemm);
    EXPECT_EQ(p->config_for(2), portable);
    EXPECT_EQ(p->family_for(4096), KernelFamily::kSm90Gemm);
    // The reverse, an sm90 record for a portable plan, is still ignored
    // (TunedConfigsTest.ConfigsThePlannerRejectsOrOfAnotherFamilyAreIgnored).
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// A re-tune times the incumbent (the config plans run today, from the user database or the pre-tuned
// table) right after the baseline, even where the candidate cap would not reach it: a smaller cap or a
// grown space must not record something slower than what already runs.
TEST(TunerTest, TheIncumbentIsACandidateEvenBeyondTheCap) {
  const KernelSpec bf16 = *parse_spec("gemm a=bf16 b=bf16 out=bf16");
  auto device = parse_tuning_device("h200", 13);
  ASSERT_TRUE(device.ok());
  TuneShape shape = tune_shape(bf16, 4096, 6144, 2048);  // no pre-tuned row: no incumbent before the record
  TunerOptions opts;
  opts.prune.max_candidates = 2;
  const std::string dir = temp_dir();
  {
    auto rt = runtime(dir);
    Tuner tuner(*rt, opts);
    auto before = tuner.candidates(shape, *device);
    ASSERT_TRUE(before.ok()) << before.status().to_string();
    // A valid config that the cap of 2 leaves out.
    TileConfig odd = cfg(128, 128, 64, 3, 8, 1);
    odd.group_m = 4;
    odd.cluster_m = 2;
    ASSERT_TRUE(check_config(bf16, arch_of("sm_90a"), KernelFamily::kSm90Gemm, odd).ok());
    for (const PrunedCandidate& c : before->kept) ASSERT_NE(c.config, odd);
    ASSERT_TRUE(shared_tuning_store(dir)->record(record_of(*device, bf16, 6144, 2048, 4096, "sm90_gemm", odd)).ok());
    auto after = tuner.candidates(shape, *device);
    ASSERT_TRUE(after.ok());
    ASSERT_EQ(after->kept.size(), before->kept.size() + 1);
    EXPECT_EQ(after->kept.front().config, odd);
    EXPECT_FALSE(after->kept.front().is_default);
    // Another bucket's record is not this bucket's incumbent.
    shape.m = 2048;
    auto other = tuner.candidates(shape, *device);
    ASSERT_TRUE(other.ok());
    for (const PrunedCandidate& c : other->kept) EXPECT_NE(c.config, odd);
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// Every row of the shipped H200 table is usable as recorded: a plan for its problem on sm_90a (tuning
// identity h200) runs the row's bucket with the row's config on the row's family — so a rule change
// (e.g. the large-M TMA-store rows, or the portable-family MoE buckets) cannot silently drop rows.
TEST(PretunedTableTest, EveryShippedH200RowIsPlannedAsRecorded) {
  ScopedEnv device_env{"KILN_TUNING_DEVICE", "h200"};
  const std::string dir = temp_dir();
  auto rt = runtime(dir);
  auto recs = builtin_pretuned_records();
  ASSERT_TRUE(recs.ok()) << recs.status().to_string();
  int checked = 0, portable = 0, tma = 0;
  for (const TuningRecord& r : *recs) {
    if (r.device.gpu_name != "NVIDIA H200") continue;
    // The stored spec has its expert count stripped ("experts=0"): put the problem's back.
    std::string text = r.problem.spec;
    if (const size_t at = text.find("experts=0"); at != std::string::npos)
      text.replace(at, 9, "experts=" + std::to_string(r.problem.experts));
    auto spec = parse_spec(text);
    ASSERT_TRUE(spec.ok()) << text << ": " << spec.status().to_string();
    const int64_t m = r.problem.experts > 0 ? r.m_bucket * r.problem.experts : r.m_bucket;
    auto plan = rt->plan(*spec, {m, r.problem.n, r.problem.k}, arch_of("sm_90a"));
    ASSERT_TRUE(plan.ok()) << r.problem.spec << ": " << plan.status().to_string();
    auto cfg = config_from_json(nlohmann::json::parse(r.config_json));
    ASSERT_TRUE(cfg.ok());
    const std::string what = r.problem.spec + " n=" + std::to_string(r.problem.n) + " k=" +
                             std::to_string(r.problem.k) + " e=" + std::to_string(r.problem.experts) + " bucket " +
                             std::to_string(r.m_bucket);
    EXPECT_EQ(plan->config_for(r.m_bucket), *cfg) << what;
    EXPECT_EQ(family_name(plan->family_for(r.m_bucket)), r.family) << what;
    portable += r.family == "sm80_gemm";
    tma += cfg->tma_store;
    ++checked;
  }
  EXPECT_GE(checked, 100);
  EXPECT_GE(portable, 8);  // the grouped FP8 decode buckets
  EXPECT_GE(tma, 20);      // the large-M dense rows on TMA stores
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST(TuningDeviceTest, ParsesNamesAndFields) {
  auto h = parse_tuning_device("h200", 13);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->key.cc, 90);
  EXPECT_EQ(h->key.sm_count, 132);
  EXPECT_EQ(h->key.codegen_version, kCodegenVersion);
  EXPECT_EQ(h->key.nvrtc_major, 13);
  EXPECT_EQ(h->gpu_name, "NVIDIA H200");
  auto f = parse_tuning_device("cc=89,sms=142,nvrtc=12,name=Mine");
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->key.cc, 89);
  EXPECT_EQ(f->key.sm_count, 142);
  EXPECT_EQ(f->key.nvrtc_major, 12);
  EXPECT_EQ(f->gpu_name, "Mine");
  EXPECT_EQ(parse_tuning_device("cc=90", 13).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parse_tuning_device("h900", 13).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parse_tuning_device("cc=90,sms=x", 13).status().code(), StatusCode::kInvalidArgument);
}

TEST(TuningProblemTest, StripsSizesAndRoundTrips) {
  const KernelSpec g = spec_of("grouped_gemm[experts=32,layout=offsets] a=bf16 b=bf16 out=bf16");
  TuningProblem p = tuning_problem(g, {64, 5760, 2880});
  EXPECT_EQ(p.spec, "grouped_gemm[experts=0,layout=offsets] a=bf16 b=bf16 out=bf16");
  EXPECT_EQ(p.experts, 32);
  EXPECT_EQ(p.n, 5760);
  auto back = tuning_problem_spec(p);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(*back, g);
  EXPECT_EQ(tuning_problem(kBf16, {1, 2, 3}).spec, "gemm a=bf16 b=bf16 out=bf16");
}

}  // namespace
}  // namespace kiln
