// gpu tier: the Hopper sm90 family (TMA + wgmma) against kiln's reference on fresh random inputs.
// Every operand pairing x every output with the default configs at M = 1, odd M, N and K tails; every
// shape of the config space pinned on tail shapes and on a multi-wave persistent shape; repeat runs
// bitwise equal; and a timing table at 4096 x 7168 x 7168 (TFLOP/s, with the portable family timed in
// the same run) to set against cuBLAS; also FP8 per-row scales and DeepSeek block
// scales (f32 and ue8m0; ScaledDefaultConfigs / ScaledPinnedConfigs, BlockScaledRepeatRunsAreBitwiseEqual,
// Sm90GemmTiming.PrintsBlockScaled4096x7168 at K = 7168 and 16384). Skips without a device or on anything but sm_90.
//
// All kernels are compiled up front, in parallel, into one shared Runtime (a global test
// environment), so the tests themselves only load and run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "compiler/plan/sm90_plan.hpp"
#include "kiln/kiln.hpp"
#include "verify/check.hpp"
#include "runtime/runtime_impl.hpp"
#include "runtime/tuned_configs.hpp"
#include "tests/common/gpu_env.hpp"
#include "tests/common/parallel_load.hpp"

namespace kiln {
namespace {

Runtime& runtime() {
  static std::shared_ptr<Runtime> rt = make_test_runtime();
  return *rt;
}

#define KILN_REQUIRE_SM90() KILN_REQUIRE_SM90_OF(runtime())

const Arch kSm90a{9, 0, true};

KernelSpec spec_of(const std::string& text) {
  auto s = parse_spec(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status().to_string();
  return s.ok() ? *s : KernelSpec{};
}

// A pinned sm90 config: block_m x block_n, stages, consumer warps (warps_m along M, warps_n WGs along N),
// CTAs per cluster along M, rasterization group, 128-byte atoms of K per stage (v4: 2 = block_k 256 FP8).
struct Pin {
  int bm, bn, stages, wm, wn, cluster = 1, group = 8, atoms = 1, split = 1, tma = 0;
  int bk = 0;  // block_k when not atoms x 128 bytes (MXFP8's dequantizing producer: 64)
  int pp = 0;  // ping-pong consumers (templates/kernels/sm90/pingpong.cuh): two warpgroups taking whole tiles in turn
};
TileConfig pinned(const KernelSpec& s, const Pin& p) {
  TileConfig c;
  c.block_m = p.bm;
  c.block_n = p.bn;
  c.block_k = p.bk > 0 ? p.bk : p.atoms * 128 / std::max(1, format_bits(s.a.format) / 8);
  c.stages = p.stages;
  c.warps_m = p.wm;
  c.warps_n = p.wn;
  c.group_m = p.group;
  c.cluster_m = p.cluster;
  c.split_k = p.split;
  c.tma_store = p.tma;
  c.pingpong = p.pp;
  return c;
}
// Every M bucket of the plan runs cfg.
PlanOptions pin_options(const TileConfig& cfg) {
  PlanOptions o;
  o.config = cfg;
  return o;
}

const char* const kPairs[] = {"a=bf16 b=bf16",
                              "a=f16 b=f16",
                              "a=e4m3:tensor b=e4m3:tensor",
                              "a=e4m3:tensor b=e5m2:tensor",
                              "a=e5m2:tensor b=e4m3:tensor",
                              "a=e5m2:tensor b=e5m2:tensor"};
const char* const kOuts[] = {"bf16", "f16", "f32"};

// Every shape of the config space (tests/nvrtc/sm90_gemm_nvrtc_test.cpp compiles them); the last ones
// in clusters of 2 (TMA multicast of B).
const Pin kPins[] = {
    {128, 256, 4, 8, 1},
    {128, 128, 7, 8, 1},
    {256, 128, 4, 8, 1},
    {128, 256, 4, 4, 2},
    {128, 128, 6, 4, 2},
    {128, 128, 6, 4, 1},
    {128, 64, 8, 8, 1},
    {64, 256, 5, 4, 1},
    {64, 128, 8, 4, 1},
    {64, 64, 8, 4, 1},
    {128, 256, 4, 8, 1, 2},
    {256, 128, 4, 8, 1, 2},
    {128, 128, 7, 8, 1, 2},
    {64, 128, 8, 4, 1, 2},
    {128, 256, 4, 4, 2, 2},
    // timing only: the default's rasterization group
    {128, 256, 4, 8, 1, 2, 4},
    {128, 256, 4, 8, 1, 2, 16},
    // v3 (block scales): two warpgroups of 64 x 128 side by side along N
    {64, 256, 5, 4, 2},
    {64, 256, 5, 4, 2, 2},
    // v4 (block scales, docs/performance.md): 19-20 two-atom stages (bk256, overlapped
    // promotion), 21-22 three consumer warpgroups (192 x 128), 23 bk256 in clusters;
    // all stage the scales through shared memory.
    {128, 128, 3, 8, 1, 1, 8, 2},
    {64, 128, 4, 4, 1, 1, 8, 2},
    {192, 128, 5, 12, 1},
    {192, 128, 5, 12, 1, 2},
    {128, 128, 3, 8, 1, 2, 8, 2},
    // split-K (templates/kernels/sm90/split_k.cuh): 24-26 64 x 64 / 64 x 128 split 2..8 ways, 27 the
    // two-atom 64 x 128 split 3 ways, 28 a 128 x 128 split 2 ways.
    {64, 64, 8, 4, 1, 1, 8, 1, 4},
    {64, 128, 8, 4, 1, 1, 8, 1, 8},
    {64, 64, 8, 4, 1, 1, 8, 1, 2},
    {64, 128, 4, 4, 1, 1, 8, 2, 3},
    {128, 128, 6, 8, 1, 1, 8, 1, 2},
    // unpromoted two-atom stages (256 bytes of every row per stage): 29 64 x 64, 30 the wide
    // 128 x 256 (never split: sm90_check_config refuses it).
    {64, 64, 6, 4, 1, 1, 8, 2},
    {128, 256, 2, 8, 1, 1, 8, 2},
    // the TMA-store epilogue (templates/kernels/sm90/epilogue_tma_store.cuh): 31 the wide tile at 3 stages (16-bit
    // outputs), 32 128 x 128 at 5, 33 in clusters of 2, 34 64 x 128 split 4 ways.
    {128, 256, 3, 8, 1, 1, 8, 1, 1, 1},
    {128, 128, 5, 8, 1, 1, 8, 1, 1, 1},
    {128, 128, 4, 8, 1, 2, 8, 1, 1, 1},
    {64, 128, 6, 4, 1, 1, 8, 1, 4, 1},
    // N tiles between the powers of two (two warpgroups of 64 x N): 35-39 N = 192, 160, 208,
    // 144, 112; 40 192 in clusters of 2; 41 192 with TMA stores.
    {128, 192, 4, 8, 1},
    {128, 160, 4, 8, 1},
    {128, 208, 3, 8, 1},
    {128, 144, 4, 8, 1},
    {128, 112, 5, 8, 1},
    {128, 192, 4, 8, 1, 2},
    {128, 192, 3, 8, 1, 1, 8, 1, 1, 1},
    // MXFP8 through the dequantizing producer (block_k 64, templates/kernels/sm90/mx_dequant.cuh): 42 the
    // wide tile, 43 128 x 128 with TMA stores, 44 256 x 128 (warpgroups of 128 x 128), 45 128 x 192
    // with TMA stores, 46 128 x 208 (a partial last row group of the producer), 47 128 x 128
    // with its warpgroups side by side along N.
    {128, 256, 2, 8, 1, 1, 8, 1, 1, 0, 64},
    {128, 128, 3, 8, 1, 1, 8, 1, 1, 1, 64},
    {256, 128, 2, 8, 1, 1, 8, 1, 1, 0, 64},
    {128, 192, 2, 8, 1, 1, 8, 1, 1, 1, 64},
    {128, 208, 3, 8, 1, 1, 8, 1, 1, 0, 64},
    {128, 128, 4, 4, 2, 1, 8, 1, 1, 0, 64},
    // 48: N = 176 (2112 = 12 x 176: 2.9 waves of 128-row tiles at M = 4096 against 192's 2.7)
    {128, 176, 4, 8, 1},
    // TMA stores in 16-column boxes (warpgroup columns not a whole number of 128-byte
    // boxes): 49 N = 176, 50 N = 208, 51 N = 112 at two warpgroups along N (64 x 112 each).
    {128, 176, 2, 8, 1, 1, 8, 1, 1, 1},
    {128, 208, 2, 8, 1, 1, 8, 1, 1, 1},
    {128, 224, 2, 4, 2, 1, 8, 1, 1, 1},
    // 52: block scales on one consumer warpgroup of 64 x 192 (240 registers).
    {64, 192, 6, 4, 1},
    // Ping-pong consumers (templates/kernels/sm90/pingpong.cuh), two warpgroups of 4 warps each owning
    // whole tiles: 53 128 x 128 with TMA stores, 54 with direct stores at 6 stages, 55 in
    // clusters of 2, 56 64 x 256 with TMA stores, 57 128 x 128 with TMA stores at 3 stages (f32 outputs).
    {128, 128, 4, 4, 1, 1, 8, 1, 1, 1, 0, 1},
    {128, 128, 6, 4, 1, 1, 8, 1, 1, 0, 0, 1},
    {128, 128, 4, 4, 1, 2, 8, 1, 1, 1, 0, 1},
    {64, 256, 3, 4, 1, 1, 8, 1, 1, 1, 0, 1},
    {128, 128, 3, 4, 1, 1, 8, 1, 1, 1, 0, 1},
    // The TMA-store slab in two column chunks through a half-size buffer (tma_store 2, `_th`): 58 the wide
    // tile at 4 stages, 59 in clusters of 2, 60 ping-pong 128 x 128 at 6 stages, 61 ping-pong at 5 (f32).
    {128, 256, 4, 8, 1, 1, 8, 1, 1, 2},
    {128, 256, 4, 8, 1, 2, 8, 1, 1, 2},
    {128, 128, 6, 4, 1, 1, 8, 1, 1, 2, 0, 1},
    {128, 128, 5, 4, 1, 1, 8, 1, 1, 2, 0, 1},
    // 62: narrow boxes (64 x 160 per warpgroup: ten 16-column boxes, five per chunk); 63: 128 x 176 at 5
    // stages (eleven 16-column boxes: chunks of six and five).
    {128, 160, 5, 8, 1, 1, 8, 1, 1, 2},
    {128, 176, 5, 8, 1, 1, 8, 1, 1, 2},
    // Wide ping-pong tiles (176 and 192 accumulators per thread; N = 2112 = 12 x 176 = 11 x 192): 64
    // 128 x 176 with half-slab TMA stores at 4 stages, 65 the same with direct stores at 5, 66 128 x 192
    // with half-slab TMA stores at 4.
    {128, 176, 4, 4, 1, 1, 8, 1, 1, 2, 0, 1},
    {128, 176, 5, 4, 1, 1, 8, 1, 1, 0, 0, 1},
    {128, 192, 4, 4, 1, 1, 8, 1, 1, 2, 0, 1},
    // 67: the slab in four chunks through a quarter-size buffer (tma_store 4, `_tq`): ping-pong 128 x 176
    // at 5 stages (eleven 16-column boxes: chunks of 3, 3, 3, 2); 68: cooperative 128 x 256 (16-bit
    // outputs: four 128-byte boxes per warpgroup, one per chunk). f32 outputs: 69 the same tile (eight
    // 128-byte boxes, two per chunk), 70 ping-pong 128 x 176 at 4 stages (16-column f32 boxes).
    {128, 176, 5, 4, 1, 1, 8, 1, 1, 4, 0, 1},
    {128, 256, 4, 8, 1, 1, 8, 1, 1, 4},
    {128, 256, 3, 8, 1, 1, 8, 1, 1, 4},
    {128, 176, 4, 4, 1, 1, 8, 1, 1, 4, 0, 1},
    // 71: block scales on one consumer warpgroup of 64 x 256 (halves) with TMA stores at 4 stages (the
    // H200 table's 64 x 32768 x 512 row).
    {64, 256, 4, 4, 1, 1, 8, 1, 1, 1},
    // 72-74: small-M tiles with TMA stores at 8 stages (the H200 table's M-bucket 64 / 128 rows):
    // 128 x 64 (two warpgroups of 64 x 64), 64 x 128 and 64 x 64 (one warpgroup).
    {128, 64, 8, 8, 1, 1, 8, 1, 1, 1},
    {64, 128, 8, 4, 1, 1, 8, 1, 1, 1},
    {64, 64, 8, 4, 1, 1, 8, 1, 1, 1},
    // 75: the two-atom block 128 x 128 (bk256) in clusters of 2 with its two-stage TMA-store ring (the
    // grouped block-scaled default from 256 rows per expert where N does not fill 256-column
    // tiles).
    {128, 128, 2, 8, 1, 2, 8, 2, 1, 1}};
constexpr int kCorrectnessPins = 15;  // the ones pinned_cases() checks
const char* const kPinSpecs[] = {"gemm a=bf16 b=bf16 out=bf16", "gemm a=e4m3:tensor b=e4m3:tensor out=f32",
                                 "gemm a=e5m2:tensor b=e4m3:tensor out=bf16"};

struct Case {
  std::string spec;
  int64_t m, n, k;
  int pin;  // index into kPins, or -1 for the plan's own (default) config
  std::vector<int32_t> groups = {};  // grouped: rows per expert (empty: run_check's random split)
};

std::string case_name(const testing::TestParamInfo<Case>& info) {
  std::string out;
  const std::string& sp = info.param.spec;
  for (char c : sp.substr(sp.rfind("gemm ", 0) == 0 ? 5 : 0)) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (!info.param.groups.empty()) out += "_g" + std::to_string(info.param.groups.size()) + "fixed";
  out += "_m" + std::to_string(info.param.m) + "_n" + std::to_string(info.param.n) + "_k" +
         std::to_string(info.param.k);
  if (info.param.pin >= 0) {
    const Pin& p = kPins[info.param.pin];
    out += "_pin" + std::to_string(p.bm) + "x" + std::to_string(p.bn) + "w" + std::to_string(p.wm) + "x" +
           std::to_string(p.wn) + (p.cluster > 1 ? "c" + std::to_string(p.cluster) : "") +
           (p.atoms > 1 ? "a" + std::to_string(p.atoms) : "") +
           (p.split > 1 ? "k" + std::to_string(p.split) : "") +
           (p.tma == 1   ? "t"
            : p.tma == 2 ? "th"
            : p.tma == 4 ? "tq"
                         : "") +
           (p.bk > 0 ? "bk" + std::to_string(p.bk) : "") + (p.pp ? "p" : "");
  }
  return out;
}

std::vector<Case> default_cases() {
  // M = 1, odd M, a multi-tile M; N tails (not a multiple of any tile, odd); K tails (a multiple of
  // 16 bytes but not of the 128-byte K tile).
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{1, 256, 512}, {77, 200, 528}, {300, 129, 272}, {257, 384, 1040}};
  std::vector<Case> cases;
  for (const char* p : kPairs) {
    for (const char* o : kOuts) {
      for (const Shape& sh : shapes)
        cases.push_back({std::string("gemm ") + p + " out=" + o, sh.m, sh.n, sh.k, -1});
    }
  }
  return cases;
}

std::vector<Case> pinned_cases() {
  std::vector<Case> cases;
  for (const char* s : kPinSpecs) {
    for (int i = 0; i < kCorrectnessPins; ++i) {
      cases.push_back({s, 513, 1000, 1040, i});  // tails in M, N and K (an odd number of tile rows)
      cases.push_back({s, 2000, 3000, 784, i});  // more tiles than SMs: the persistent walk wraps
      // Clusters: one tile row, so the second CTA of every cluster lies wholly past M.
      if (kPins[i].cluster > 1) cases.push_back({s, 77, 3000, 784, i});
    }
  }
  return cases;
}

// ---- v3: per-row and DeepSeek block scales -------------------------------------------------------
// Block scales need K % 128 == 0 (the spec's rule, compiler/spec/sizes.cpp: a scale block is never
// partial), so their K "tails" are K = 128 * k with k odd or not a multiple of the stages; per-row
// scales take the K tails of 16-byte rows (272, 1040) like the tensor-scaled pairings.
const char* const kBlockPairs[] = {"a=e4m3:block1x128 b=e4m3:block128x128",
                                   "a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0",
                                   "a=e4m3:block1x128 b=e4m3:n",
                                   "a=e4m3:tensor b=e4m3:block128x128:ue8m0"};
const char* const kRowPairs[] = {"a=e4m3:m b=e4m3:n", "a=e5m2:m b=e4m3:tensor", "a=e4m3:tensor b=e5m2:n"};

std::vector<Case> scaled_default_cases() {
  struct Shape {
    int64_t m, n, k;
  };
  // M = 1, odd M and N, N not a multiple of 128 (the last scale block of W is partial in N), one K
  // block, an odd number of K blocks, and a multi-wave persistent shape.
  const Shape block_shapes[] = {{1, 256, 512},  {77, 200, 384},     {300, 129, 128},
                                {257, 383, 1152}, {1024, 2048, 2048}};
  const Shape row_shapes[] = {{1, 256, 512}, {77, 200, 528}, {300, 129, 272}, {257, 384, 1040}, {1024, 2048, 2048}};
  std::vector<Case> cases;
  for (const char* o : kOuts) {
    for (const char* p : kBlockPairs) {
      for (const Shape& sh : block_shapes)
        cases.push_back({std::string("gemm ") + p + " out=" + o, sh.m, sh.n, sh.k, -1});
    }
    for (const char* p : kRowPairs) {
      for (const Shape& sh : row_shapes) cases.push_back({std::string("gemm ") + p + " out=" + o, sh.m, sh.n, sh.k, -1});
    }
  }
  // E8M0 block scales at K >= 8192 with whole 256-column tiles over >= 2 waves: the default is 128 x 256
  // promoted in halves with TMA stores (templates/kernels/sm90/mainloop.cuh, half partials).
  cases.push_back({"gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=bf16", 4224, 2048, 8192, -1});
  return cases;
}

// The promotable pins (block scales refuse the others: sm90_check_config), on tails and a
// multi-wave shape; clustered pins with a single tile row too.
const int kBlockPins[] = {1, 4, 6, 8, 9, 12, 13, 17, 18};
const char* const kBlockPinSpecs[] = {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16",
                                      "gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=f32"};

const int kV4Pins[] = {19, 20, 21, 22, 23};
struct Shape {
  int64_t m, n, k;
};
const Shape kV4Shapes[] = {{1, 256, 512},     {77, 200, 384},    {513, 1000, 1152},
                           {1024, 2048, 2048}, {2000, 3000, 768}, {300, 129, 640}};

std::vector<Case> scaled_pinned_cases() {
  std::vector<Case> cases;
  for (const char* s : kBlockPinSpecs) {
    for (int i : kBlockPins) {
      cases.push_back({s, 513, 1000, 1152, i});  // tails in M and N, 9 K blocks
      cases.push_back({s, 2000, 3000, 768, i});  // more tiles than SMs: the walk wraps (and prefetches across)
      if (kPins[i].cluster > 1) cases.push_back({s, 77, 3000, 768, i});
    }
  }
  // v4 pins: every block pairing x output; M = 1, odd M and N, odd K-block counts (a last bk256 stage of
  // one atom), a multi-wave shape, and K = 640 (5 K blocks: E8M0 rows not a multiple of 4 bytes take
  // the synchronous scale copies).
  for (int i : kV4Pins) {
    for (const char* p : kBlockPairs) {
      for (const char* o : {"bf16", "f32"}) {
        const std::string s = std::string("gemm ") + p + " out=" + o;
        for (const Shape& sh : kV4Shapes) cases.push_back({s, sh.m, sh.n, sh.k, i});
        if (kPins[i].cluster > 1) cases.push_back({s, 77, 3000, 768, i});
      }
    }
  }
  // Block scales on promoted 64 x 192 warpgroups (pins 35, 40, 41: plain, clusters of 2, TMA stores; 52:
  // one consumer warpgroup):
  // tiles start on 64-column edges, so a warpgroup's columns fall into two 128-column scale blocks
  // (N = 1000: tiles at 192, 576, 960 start mid-block), with N tails and a multi-wave shape.
  for (int i : {35, 40, 41, 52}) {
    for (const char* p : kBlockPairs) {
      for (const char* o : {"bf16", "f32"}) {
        const std::string s = std::string("gemm ") + p + " out=" + o;
        for (const Shape& sh : {Shape{77, 200, 384}, Shape{513, 1000, 1152}, Shape{300, 129, 640},
                                Shape{2000, 3000, 768}})
          cases.push_back({s, sh.m, sh.n, sh.k, i});
        if (kPins[i].cluster > 1) cases.push_back({s, 77, 3000, 768, i});
      }
    }
  }
  // Block scales on 64 x 256 warpgroups promoted in two halves (templates/kernels/sm90/mainloop.cuh, half partials; pins 0, 7: one
  // consumer warpgroup, 10: clusters of 2, 31: TMA stores, 71: one consumer with TMA stores; 16-bit
  // outputs only with TMA stores): N tails (N = 200, 129: the second half's scale block clamps), M = 1,
  // odd K-block counts, a multi-wave shape.
  for (int i : {0, 7, 10, 31, 71}) {
    for (const char* p : kBlockPairs) {
      for (const char* o : {"bf16", "f32"}) {
        if (kPins[i].tma && std::string(o) == "f32") continue;
        const std::string s = std::string("gemm ") + p + " out=" + o;
        for (const Shape& sh : {Shape{1, 256, 512}, Shape{77, 200, 384}, Shape{513, 1000, 1152},
                                Shape{300, 129, 640}, Shape{2000, 3000, 768}})
          cases.push_back({s, sh.m, sh.n, sh.k, i});
        if (kPins[i].cluster > 1) cases.push_back({s, 77, 3000, 768, i});
      }
    }
  }
  // Per-row scales on the fast (unpromoted) 128 x 256 tile and the promoted 128 x 128 one.
  for (int i : {0, 1}) {
    cases.push_back({"gemm a=e4m3:m b=e4m3:n out=bf16", 513, 1000, 1040, i});
    cases.push_back({"gemm a=e4m3:m b=e4m3:n out=f32", 2000, 3000, 784, i});
  }
  return cases;
}

// ---- grouped GEMMs (templates/kernels/sm90/scheduler.cuh) --------------------------------------------------------
// Offsets and masked layouts, every scale kind, with M = 1 over 8 experts (one expert holds the row),
// random splits with empty experts (run_check draws them), a tail expert of one row, a multi-wave
// shape, 64 experts, and pinned configs: clusters of 2 (an expert with an odd tile-row count leaves the
// second CTA of its last cluster past its rows), two-atom stages, the wide 128 x 256 tile.
std::vector<Case> grouped_cases() {
  const char* const specs[] = {
      "grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16",
      "grouped_gemm[experts=6,layout=masked] a=f16 b=f16 out=f32",
      "grouped_gemm[experts=8,layout=offsets] a=e4m3:tensor b=e4m3:tensor out=bf16",
      "grouped_gemm[experts=8,layout=offsets] a=e4m3:m b=e4m3:n out=f32",
      "grouped_gemm[experts=6,layout=masked] a=e5m2:m b=e4m3:n out=bf16",
      "grouped_gemm[experts=8,layout=offsets] a=e4m3:block1x128 b=e4m3:block128x128 out=bf16",
      "grouped_gemm[experts=6,layout=masked] a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=f32"};
  std::vector<Case> cases;
  for (const char* sp : specs) {
    const bool masked = std::string(sp).find("masked") != std::string::npos;
    const bool block = std::string(sp).find("block") != std::string::npos;
    const int64_t k_tail = block ? 384 : 272, k_big = block ? 768 : 784;
    // offsets: m is the total; masked: m is max_m per expert.
    if (masked) {
      cases.push_back({sp, 1, 256, k_tail, -1, {0, 1, 0, 0, 1, 0}});
      cases.push_back({sp, 77, 203, k_tail, -1});
      cases.push_back({sp, 300, 1000, k_big, -1, {300, 0, 1, 129, 255, 64}});
    } else {
      cases.push_back({sp, 1, 256, k_tail, -1, {0, 0, 0, 1, 0, 0, 0, 0}});
      cases.push_back({sp, 300, 203, k_tail, -1});
      cases.push_back({sp, 2000, 3000, k_big, -1});
      cases.push_back({sp, 513, 1000, k_big, -1, {0, 1, 128, 0, 200, 0, 63, 121}});
    }
  }
  cases.push_back({"grouped_gemm[experts=64,layout=offsets] a=bf16 b=bf16 out=bf16", 1000, 384, 256, -1});
  cases.push_back({"grouped_gemm[experts=64,layout=offsets] a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 1000,
                   384, 256, -1});
  // Pinned: 128 x 256 (0), 64 x 128 (8), 128 x 128 in clusters (12), 128 x 192 (35: the grouped default where
  // N fills 192-column tiles better); TMA stores (a warpgroup whose slab crosses its expert's last row
  // stores it directly): the wide tile (31), 128 x 128 in clusters (33), 128 x 192 (41),
  // the wide tile's slab in two chunks (58) and in four (68: the DeepSeek-V3 bf16 rows at 128 rows per
  // expert); bk256 two-atom in clusters (23),
  // (The wide tile's f32 slab does not fit beside its ring, nor at 4 stages its staged column scales: 31 runs
  // the masked case with bf16 outputs, 58 with tensor scales. 68's quarter buffer would fit per-channel
  // scales with bf16 outputs; it runs tensor scales, as measured on the H200.)
  for (int pin : {0, 8, 12, 35, 31, 33, 41, 58, 68}) {
    cases.push_back({"grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16", 1200, 1000, 784, pin,
                     {0, 1, 129, 0, 300, 0, 513, 257}});
    cases.push_back({pin == 31 ? "grouped_gemm[experts=6,layout=masked] a=e4m3:m b=e4m3:n out=bf16"
                     : pin == 58 || pin == 68
                         ? "grouped_gemm[experts=6,layout=masked] a=e4m3:tensor b=e4m3:tensor out=bf16"
                         : "grouped_gemm[experts=6,layout=masked] a=e4m3:m b=e4m3:n out=f32",
                     300,
                     1000,
                     784,
                     pin,
                     {300, 0, 1, 129, 255, 64}});
  }
  // ... and block scales on 64 x 192 warpgroups (35; 40 in clusters): N = 1000 puts warpgroups mid-block.
  // ... and on 64 x 256 warpgroups promoted in halves (0; 10 in clusters); with TMA stores (33: 128 x 128 in
  // clusters, 41: 64 x 192 warpgroups), where a warpgroup's slab crossing its expert's last row is stored
  // directly.
  for (int pin : {0, 10, 12, 19, 23, 35, 40, 33, 41}) {
    cases.push_back({"grouped_gemm[experts=8,layout=offsets] a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 1200,
                     1000, 1152, pin, {0, 1, 129, 0, 300, 0, 513, 257}});
    cases.push_back({"grouped_gemm[experts=6,layout=masked] a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 "
                     "out=f32", 300, 1000, 640, pin, {300, 0, 1, 129, 255, 64}});
  }
  // ... and the grouped block-scaled defaults from 256 rows per expert: where N fills 256-column
  // tiles 31 (128 x 256 in halves with TMA stores; N = 1024 for offsets, 1000 masked: a partial last tile
  // column), else 75 (the two-atom 128 x 128 in clusters with TMA stores).
  const char* const block_offsets =
      "grouped_gemm[experts=8,layout=offsets] a=e4m3:block1x128 b=e4m3:block128x128 out=bf16";
  const char* const block_masked_bf16 =
      "grouped_gemm[experts=6,layout=masked] a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=bf16";
  const char* const block_masked_f32 =
      "grouped_gemm[experts=6,layout=masked] a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=f32";
  cases.push_back({block_offsets, 1200, 1024, 1152, 31, {0, 1, 129, 0, 300, 0, 513, 257}});
  cases.push_back({block_masked_bf16, 300, 1000, 640, 31, {300, 0, 1, 129, 255, 64}});
  cases.push_back({block_offsets, 1200, 1000, 1152, 75, {0, 1, 129, 0, 300, 0, 513, 257}});
  cases.push_back({block_masked_f32, 300, 1000, 640, 75, {300, 0, 1, 129, 255, 64}});
  return cases;
}

// ---- split-K (templates/kernels/sm90/split_k.cuh) ----------------------------------------------------------------
// Every scale kind, pinned split configs: M = 1 and odd M, N tails, K whose stage count does not divide
// by the splits (and for two-atom stages an odd atom count), more units than SMs (the walk wraps and
// splits of one tile land on different SMs), and the default plan where the heuristic splits (decode
// shapes with few tiles).
std::vector<Case> split_cases() {
  std::vector<Case> cases;
  const char* const specs[] = {"gemm a=bf16 b=bf16 out=bf16", "gemm a=e4m3:tensor b=e4m3:tensor out=f32",
                               "gemm a=e4m3:m b=e4m3:n out=bf16",
                               "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16",
                               "gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=f32"};
  for (const char* sp : specs) {
    const bool block = std::string(sp).find("block") != std::string::npos;
    for (int pin : {24, 25, 26, 28}) {
      cases.push_back({sp, 1, 256, block ? 1152 : 1040, pin});
      cases.push_back({sp, 77, 2112, block ? 7168 : 7184, pin});
      cases.push_back({sp, 130, 3000, block ? 2048 : 2064, pin});  // > 132 units: the walk wraps
    }
    if (block) {
      cases.push_back({sp, 1, 256, 1152, 27});   // 9 atoms over 3 splits of two-atom stages
      cases.push_back({sp, 77, 2112, 7168, 27});
    }
    cases.push_back({sp, 64, 2112, 7168, -1});  // the heuristic splits: 33 tiles of 64 x 64
    cases.push_back({sp, 1, 4096, 7168, -1});
  }
  return cases;
}

// ---- MXFP8 (templates/kernels/sm90/mx.cuh) --------------------------------------------------------------
// E8M0 per 32 along K on both operands, every k-step promoted: the default configs for every output,
// M = 1 and odd M, N tails, K = 32 * odd (a last atom of 1..3 scale blocks, the rest zero-filled), pinned
// 128 x 128 (two warpgroups of 128 x 64), 64-row tiles, clusters, split-K, grouped offsets (empty and
// single-row experts) and masked.
std::vector<Case> mx_cases() {
  std::vector<Case> cases;
  const Shape shapes[] = {{1, 256, 512}, {77, 200, 544}, {300, 129, 288}, {257, 384, 1056}, {1000, 1030, 4096}};
  for (const char* o : kOuts) {
    for (const Shape& sh : shapes) cases.push_back({std::string("gemm a=mxfp8 b=mxfp8 out=") + o, sh.m, sh.n, sh.k, -1});
  }
  for (int pin : {4, 8, 9, 13, 28}) {
    cases.push_back({"gemm a=mxfp8 b=mxfp8 out=bf16", 300, 1000, 1056, pin});
    cases.push_back({"gemm a=mxfp8 b=mxfp8 out=f32", 77, 200, 544, pin});
  }
  for (int pin : {24, 25}) {
    cases.push_back({"gemm a=mxfp8 b=mxfp8 out=bf16", 1, 256, 1056, pin});
    cases.push_back({"gemm a=mxfp8 b=mxfp8 out=f32", 77, 2112, 7168, pin});
    cases.push_back({"gemm a=mxfp8 b=mxfp8 out=bf16", 130, 3000, 2080, pin});
  }
  cases.push_back({"gemm a=mxfp8 b=mxfp8 out=bf16", 64, 2112, 7168, -1});
  const char* const offsets = "grouped_gemm[experts=8,layout=offsets] a=mxfp8 b=mxfp8 out=bf16";
  const char* const masked = "grouped_gemm[experts=6,layout=masked] a=mxfp8 b=mxfp8 out=f32";
  cases.push_back({offsets, 1, 256, 544, -1, {0, 0, 0, 1, 0, 0, 0, 0}});
  cases.push_back({offsets, 300, 203, 288, -1});
  cases.push_back({offsets, 2000, 3000, 1056, -1});
  cases.push_back({offsets, 1200, 1000, 1056, 8, {0, 1, 129, 0, 300, 0, 513, 257}});
  cases.push_back({masked, 77, 203, 544, -1});
  cases.push_back({masked, 300, 1000, 1056, 4, {300, 0, 1, 129, 255, 64}});
  // The dequantizing producer (templates/kernels/sm90/mx_dequant.cuh): every pinned shape on M = 1, odd M, N tails, K = 32 * odd (a
  // last K tile of 32), a multi-wave shape; grouped offsets (empty and single-row experts) and masked.
  const Shape dq_shapes[] = {{1, 256, 544}, {77, 200, 544}, {300, 129, 288}, {257, 384, 1056}, {1000, 1030, 4096}};
  for (int pin : {42, 43, 44, 45, 46, 47}) {
    for (const Shape& sh : dq_shapes) {
      cases.push_back({"gemm a=mxfp8 b=mxfp8 out=bf16", sh.m, sh.n, sh.k, pin});
      // f32 outputs: the direct-store pins (an f32 tile staged for TMA stores does not fit beside the ring)
      if ((sh.m == 77 || sh.m == 1000) && !kPins[pin].tma)
        cases.push_back({"gemm a=mxfp8 b=mxfp8 out=f32", sh.m, sh.n, sh.k, pin});
    }
  }
  cases.push_back({offsets, 1, 256, 544, 42, {0, 0, 0, 1, 0, 0, 0, 0}});
  cases.push_back({offsets, 2000, 3000, 1056, 42});
  cases.push_back({offsets, 1200, 1000, 1056, 46, {0, 1, 129, 0, 300, 0, 513, 257}});
  cases.push_back({masked, 300, 1000, 1056, 44, {300, 0, 1, 129, 255, 64}});
  return cases;
}

// ---- the TMA-store epilogue (templates/kernels/sm90/epilogue_tma_store.cuh) ----------------------------------------------
// Every scale kind and output, an epilogue functor, clusters and split-K; M = 1, tails, a multi-wave
// shape; N = 129 and 1030 give rows TMA cannot address (2 * N not a multiple of 16): those runs take
// the kernel's direct epilogue (out_tma = 0), the others the TMA stores.
std::vector<Case> tma_cases() {
  std::vector<Case> cases;
  const Shape shapes[] = {{1, 256, 512}, {77, 200, 1024}, {300, 129, 512}, {1000, 1032, 1024}, {2000, 3000, 512}};
  const struct {
    const char* spec;
    int pins[3];
  } specs[] = {{"gemm a=bf16 b=bf16 out=bf16", {31, 32, 34}},
               {"gemm a=f16 b=f16 out=f16", {31, 33, 34}},
               {"gemm a=e4m3:tensor b=e4m3:tensor out=f32", {32, 33, 34}},
               {"gemm a=e4m3:m b=e4m3:n out=bf16", {31, 32, 33}},
               {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", {32, 33, 34}},
               {"gemm a=mxfp8 b=mxfp8 out=bf16", {32, 33, 34}},
               {"gemm a=bf16 b=bf16 out=bf16 epilogue=\"out = silu(acc + bias[n]) * scale[m]\"", {31, 32, 34}}};
  for (const auto& sp : specs) {
    for (int pin : sp.pins) {
      for (const Shape& sh : shapes) {
        if (kPins[pin].split > 1 && sh.m > 300) continue;  // split-K: the decode shapes
        cases.push_back({sp.spec, sh.m, sh.n, sh.k, pin});
      }
    }
  }
  // Small-M tiles with TMA stores (pins 72-74): 16-bit and f32 outputs, unscaled and scaled.
  for (const char* sp : {"gemm a=bf16 b=bf16 out=bf16", "gemm a=e4m3:tensor b=e4m3:tensor out=bf16",
                         "gemm a=e4m3:m b=e4m3:n out=bf16", "gemm a=f16 b=f16 out=f32"}) {
    for (int pin : {72, 73, 74}) {
      for (const Shape& sh : shapes) cases.push_back({sp, sh.m, sh.n, sh.k, pin});
    }
  }
  // 16-column boxes (no swizzle) for warpgroup widths that are not whole 128-byte boxes.
  for (const char* sp : {"gemm a=bf16 b=bf16 out=bf16", "gemm a=f16 b=f16 out=f32", "gemm a=e4m3:m b=e4m3:n out=bf16"}) {
    for (int pin : {49, 50, 51}) {
      for (const Shape& sh : shapes) cases.push_back({sp, sh.m, sh.n, sh.k, pin});
    }
  }
  return cases;
}

// ---- N tiles that are not powers of two ------------------------------------------------------------
// Every 16-bit and FP8 pairing on the widths 192, 160, 208, 144, 112 (FP8 fast accumulation above 128,
// promoted at 112), MXFP8 at 112 (its 64-accumulator limit), clusters and TMA stores at 192; N tails that
// are not a multiple of the tile, M = 1, odd M.
std::vector<Case> odd_n_cases() {
  std::vector<Case> cases;
  const Shape shapes[] = {{1, 256, 512}, {77, 200, 528}, {300, 2112, 1040}, {1000, 1030, 1024}};
  const char* const specs[] = {"gemm a=bf16 b=bf16 out=bf16", "gemm a=f16 b=f16 out=f32",
                               "gemm a=e4m3:tensor b=e4m3:tensor out=bf16", "gemm a=e4m3:m b=e5m2:n out=f32"};
  for (const char* sp : specs) {
    for (int pin : {35, 36, 37, 38, 39, 40, 41, 48}) {
      for (const Shape& sh : shapes) cases.push_back({sp, sh.m, sh.n, sh.k, pin});
    }
  }
  for (const Shape& sh : shapes) {
    cases.push_back({"gemm a=mxfp8 b=mxfp8 out=bf16", sh.m, sh.n, (sh.k + 31) / 32 * 32, 39});  // K % 32 == 0
    cases.push_back({"grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16", sh.m, sh.n, sh.k, 35});
  }
  return cases;
}

// Ping-pong consumers (pins 53-57) on every unpromoted pairing: M = 1 (one tile: consumer 1 has none),
// tails in M and N, several tiles per CTA (2000 x 3000: both consumers, odd tile counts; 4096 x 4096 x
// 256: eight tiles per CTA, so the order barriers complete several times), K of one atom (fewer stages
// per tile than the ring holds) and of many; an epilogue functor and gate|up (direct stores).
std::vector<Case> pingpong_cases() {
  std::vector<Case> cases;
  const Shape shapes[] = {{1, 256, 512},     {77, 200, 1024}, {300, 129, 512},  {1000, 1032, 1024},
                          {2000, 3000, 512}, {513, 4000, 64}, {4096, 4096, 256}};
  const char* const specs[] = {"gemm a=bf16 b=bf16 out=bf16", "gemm a=f16 b=f16 out=f32",
                               "gemm a=e4m3:tensor b=e4m3:tensor out=bf16", "gemm a=e4m3:m b=e4m3:n out=bf16",
                               "gemm a=e5m2:m b=e4m3:n out=f32"};
  for (const char* sp : specs) {
    const bool f32_out = std::string(sp).find("out=f32") != std::string::npos;
    // f32 outputs: two staged 128 x 128 f32 tiles leave room for 3 stages (pin 57) only.
    for (int pin : f32_out ? std::vector<int>{54, 57} : std::vector<int>{53, 54, 55, 56}) {
      for (const Shape& sh : shapes) cases.push_back({sp, sh.m, sh.n, sh.k, pin});
    }
  }
  // Wide ping-pong tiles (pins 64-67) and four-chunk slabs (67, 68): bf16, FP8 tensor and per-row scales;
  // f32 outputs through four chunks (69, 70: pins 64-68's stage counts do not fit f32 slabs).
  for (const char* sp : {specs[0], specs[2], specs[3]}) {
    for (int pin : {64, 65, 66, 67, 68}) {
      for (const Shape& sh : shapes) cases.push_back({sp, sh.m, sh.n, sh.k, pin});
    }
  }
  for (const char* sp : {specs[1], specs[4]}) {
    for (int pin : {69, 70}) {
      for (const Shape& sh : shapes) cases.push_back({sp, sh.m, sh.n, sh.k, pin});
    }
  }
  for (const Shape& sh : shapes) {
    cases.push_back({"gemm a=bf16 b=bf16 out=bf16 epilogue=\"out = silu(acc + bias[n]) * scale[m]\"", sh.m,
                     sh.n, sh.k, 53});
    cases.push_back({"gemm a=e4m3:m b=e4m3:n out=bf16 gate_up=interleaved epilogue=\"out = silu(gate) * up\"",
                     sh.m, sh.n + sh.n % 2, sh.k, 54});
  }
  return cases;
}

// The half-size TMA-store buffer (pins 58-61): the same shapes as the ping-pong cases, every unpromoted
// pairing on its pins (f32 outputs: ping-pong at 5 stages; per-row scales: ping-pong only, the wide
// cooperative tile with staged column scales does not fit 4 stages), and the block-scaled wide tile.
std::vector<Case> half_slab_cases() {
  std::vector<Case> cases;
  const Shape shapes[] = {{1, 256, 512},      {77, 200, 1024},   {300, 129, 512},  {1000, 1032, 1024},
                          {2000, 3000, 512}, {513, 4000, 64},   {4096, 4096, 256}};
  const struct {
    const char* spec;
    std::vector<int> pins;
  } specs[] = {{"gemm a=bf16 b=bf16 out=bf16", {58, 59, 60, 62}},
               {"gemm a=e4m3:tensor b=e4m3:tensor out=bf16", {58, 59, 60, 63}},
               {"gemm a=e4m3:m b=e4m3:n out=bf16", {60, 63}},
               {"gemm a=f16 b=f16 out=f32", {61}},
               {"gemm a=f16 b=f16 out=f16", {58, 62}},
               {"gemm a=bf16 b=bf16 out=bf16 epilogue=\"out = silu(acc + bias[n]) * scale[m]\"", {58, 60}},
               {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", {59}}};
  for (const auto& sp : specs) {
    const bool block = std::string(sp.spec).find("block1x128") != std::string::npos;
    for (int pin : sp.pins) {
      for (const Shape& sh : shapes) {
        if (block && sh.k % 128 != 0) continue;  // block scales need K % 128 == 0
        cases.push_back({sp.spec, sh.m, sh.n, sh.k, pin});
      }
    }
  }
  return cases;
}

// Unpromoted two-atom stages (bf16, f16, fast-accumulating FP8 with tensor / row scales): K whose atom
// count is odd (a last stage of one atom), M = 1, tails, a multi-wave shape, and with split-K.
std::vector<Case> two_atom_cases() {
  std::vector<Case> cases;
  const char* const specs[] = {"gemm a=bf16 b=bf16 out=bf16", "gemm a=f16 b=f16 out=f32",
                               "gemm a=e4m3:tensor b=e4m3:tensor out=bf16", "gemm a=e4m3:m b=e4m3:n out=f32",
                               "gemm a=e5m2:tensor b=e4m3:tensor out=f16"};
  for (const char* sp : specs) {
    for (int pin : {20, 29, 30}) {
      cases.push_back({sp, 1, 256, 1040, pin});
      cases.push_back({sp, 77, 200, 528, pin});
      cases.push_back({sp, 513, 1000, 1040, pin});
      cases.push_back({sp, 2000, 3000, 784, pin});
    }
  }
  return cases;
}

// Promoted two-atom stages (kernel templates/kernels/sm90/producer.cuh, staged scales) over longer K: 11 atoms (a last stage of one), 18 and 32,
// block scales (f32, ue8m0), block x per-channel and the tensor-scaled promoted path; M = 1, odd M and N.
std::vector<Case> atom_group_cases() {
  std::vector<Case> cases;
  const char* const specs[] = {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16",
                               "gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=f32",
                               "gemm a=e4m3:block1x128 b=e4m3:n out=f32", "gemm a=e4m3:tensor b=e4m3:tensor out=bf16"};
  for (const char* sp : specs) {
    for (int pin : {19, 20, 23}) {
      cases.push_back({sp, 1, 256, 1408, pin});
      cases.push_back({sp, 77, 200, 2304, pin});
      cases.push_back({sp, 513, 1000, 4096, pin});
    }
  }
  return cases;
}

// The block path's timing rows: the DeepSeek-V3 shapes 4096 x 7168 x 7168 and x 16384.
struct TimedShape {
  const char* spec;
  int64_t k;
  int pin;  // -1: default
};
const TimedShape kTimedScaled[] = {
    {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 7168, -1},
    {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 16384, -1},
    {"gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=bf16", 7168, -1},
    {"gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=bf16", 16384, -1},
    {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 7168, 17},  // 64 x 256, 2 WGs along N
    {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 7168, 12},  // 128 x 128 in clusters of 2
    {"gemm a=e4m3:m b=e4m3:n out=bf16", 7168, -1},
    {"gemm a=e4m3:tensor b=e4m3:tensor out=bf16", 7168, 1},  // promoted, no scales: the block path's floor
    // v4 (docs/performance.md): every v4 variant at K = 7168 and 16384, f32 and ue8m0 scales.
    {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 7168, 19},  // 128 x 128, bk256 s3
    {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 16384, 19},
    {"gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=bf16", 7168, 19},
    {"gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=bf16", 16384, 19},
    {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 7168, 21},  // 192 x 128, 3 consumer WGs
    {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 16384, 21},
    {"gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=bf16", 7168, 21},
    {"gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=bf16", 16384, 21},
    {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 7168, 22},  // 192 x 128 in clusters of 2
    {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 16384, 22},
    {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 7168, 23},  // 128 x 128 bk256 in clusters
    {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 16384, 23},
    {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 7168, 20},  // 64 x 128 bk256 (1 consumer)
    {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 16384, 20},
    {"gemm a=e4m3:tensor b=e4m3:tensor out=bf16", 7168, 19},  // bk256 promoted, no scales
    {"gemm a=e4m3:tensor b=e4m3:tensor out=bf16", 16384, 1},  // the one-atom floor at K = 16384
};

// The timing table: 4096 x 7168 x 7168, default configs and the alternatives worth knowing.
struct Timed {
  const char* spec;
  int pin;  // -1: default
};
const Timed kTimed[] = {{"gemm a=bf16 b=bf16 out=bf16", -1},
                        {"gemm a=bf16 b=bf16 out=bf16", 1},
                        {"gemm a=bf16 b=bf16 out=bf16", 2},
                        {"gemm a=e4m3:tensor b=e4m3:tensor out=bf16", -1},
                        {"gemm a=e4m3:tensor b=e4m3:tensor out=bf16", 1},
                        {"gemm a=e4m3:tensor b=e4m3:tensor out=bf16", 2},
                        {"gemm a=e5m2:tensor b=e4m3:tensor out=f32", -1}};
// Clustered shapes (TMA multicast of B): a separate test (Sm90GemmTiming.Prints4096x7168x7168Clusters),
// so that it can run in its own process.
const Timed kTimedClusters[] = {{"gemm a=bf16 b=bf16 out=bf16", 10},
                                {"gemm a=bf16 b=bf16 out=bf16", 11},
                                {"gemm a=bf16 b=bf16 out=bf16", 14},
                                {"gemm a=bf16 b=bf16 out=bf16", 15},
                                {"gemm a=bf16 b=bf16 out=bf16", 16},
                                {"gemm a=e4m3:tensor b=e4m3:tensor out=bf16", 10},
                                {"gemm a=e4m3:tensor b=e4m3:tensor out=bf16", 11},
                                {"gemm a=e4m3:tensor b=e4m3:tensor out=bf16", 12},
                                {"gemm a=e5m2:tensor b=e4m3:tensor out=f32", 10}};
constexpr int64_t kTm = 4096, kTn = 7168, kTk = 7168;
// MXFP8 at 4096 x 7168 x {7168, 16384}: the plan's default (the promoted path), the promoted square the
// tuner picks (pin 32: 128 x 128 bk128, 5 stages, TMA stores)
// and the dequantizing producer's pins (42-47), with the FP8 block path (its ratio's denominator) and
// bf16 (the dequantized path's tensor-core rate) in the same run.
const TimedShape kTimedMx[] = {
    {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 7168, -1},
    {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 16384, -1},
    {"gemm a=bf16 b=bf16 out=bf16", 7168, -1},
    {"gemm a=mxfp8 b=mxfp8 out=bf16", 7168, -1},
    {"gemm a=mxfp8 b=mxfp8 out=bf16", 16384, -1},
    {"gemm a=mxfp8 b=mxfp8 out=bf16", 7168, 32},
    {"gemm a=mxfp8 b=mxfp8 out=bf16", 16384, 32},
    {"gemm a=mxfp8 b=mxfp8 out=bf16", 7168, 42},
    {"gemm a=mxfp8 b=mxfp8 out=bf16", 16384, 42},
    {"gemm a=mxfp8 b=mxfp8 out=bf16", 7168, 43},
    {"gemm a=mxfp8 b=mxfp8 out=bf16", 16384, 43},
    {"gemm a=mxfp8 b=mxfp8 out=bf16", 7168, 44},
    {"gemm a=mxfp8 b=mxfp8 out=bf16", 7168, 45},
    {"gemm a=mxfp8 b=mxfp8 out=bf16", 7168, 47},
};

// Compiles every kernel the tests use, 16 at a time, before the first test runs.
class PrecompileEnvironment : public testing::Environment {
 public:
  void SetUp() override {
    if (!sm90_skip_reason(runtime()).empty()) return;
    std::vector<LoadJob> jobs;
    auto add_plan_configs = [&](const KernelSpec& s, const ProblemSizes& sz) {
      auto plan = runtime().plan(s, sz, kSm90a);
      if (plan.ok()) jobs.push_back({s, plan->family_for(sz.m), plan->config_for(sz.m)});
      KernelSpec ref = s;
      ref.out = OperandSpec{Format::kF32, ScaleGranularity::kNone, ScaleType::kNone};
      jobs.push_back({ref, KernelFamily::kReferenceGemm, TileConfig{}});
    };
    for (const Case& c : default_cases()) add_plan_configs(spec_of(c.spec), {c.m, c.n, c.k});
    for (const Case& c : scaled_default_cases()) add_plan_configs(spec_of(c.spec), {c.m, c.n, c.k});
    for (const Case& c : scaled_pinned_cases()) {
      const KernelSpec s = spec_of(c.spec);
      jobs.push_back({s, KernelFamily::kSm90Gemm, pinned(s, kPins[c.pin])});
    }
    std::vector<TimedShape> timed_shapes(std::begin(kTimedScaled), std::end(kTimedScaled));
    timed_shapes.insert(timed_shapes.end(), std::begin(kTimedMx), std::end(kTimedMx));
    for (const TimedShape& t : timed_shapes) {
      const KernelSpec s = spec_of(t.spec);
      if (t.pin >= 0) {
        jobs.push_back({s, KernelFamily::kSm90Gemm, pinned(s, kPins[t.pin])});
      } else {
        add_plan_configs(s, {kTm, kTn, t.k});
      }
    }
    for (const Case& c : pinned_cases()) {
      const KernelSpec s = spec_of(c.spec);
      jobs.push_back({s, KernelFamily::kSm90Gemm, pinned(s, kPins[c.pin])});
    }
    for (const Case& c : two_atom_cases()) {
      const KernelSpec s = spec_of(c.spec);
      jobs.push_back({s, KernelFamily::kSm90Gemm, pinned(s, kPins[c.pin])});
    }
    for (const auto& list :
         {split_cases(), grouped_cases(), mx_cases(), tma_cases(), odd_n_cases(), pingpong_cases(),
          half_slab_cases()}) {
      for (const Case& c : list) {
        const KernelSpec s = spec_of(c.spec);
        if (c.pin >= 0) {
          jobs.push_back({s, KernelFamily::kSm90Gemm, pinned(s, kPins[c.pin])});
        } else {
          add_plan_configs(s, {c.m, c.n, c.k});
        }
      }
    }
    auto add_timed = [&](const Timed& t) {
      const KernelSpec s = spec_of(t.spec);
      if (t.pin >= 0) {
        jobs.push_back({s, KernelFamily::kSm90Gemm, pinned(s, kPins[t.pin])});
      } else {
        add_plan_configs(s, {kTm, kTn, kTk});
      }
    };
    for (const Timed& t : kTimed) add_timed(t);
    for (const Timed& t : kTimedClusters) add_timed(t);
    const LoadSummary loaded = load_in_parallel(runtime(), jobs, kSm90a);
    std::printf("[ figures ] precompiled %zu kernel loads on %u threads (%d failed); compiles=%lld\n",
                jobs.size(), loaded.threads, loaded.failures, static_cast<long long>(runtime().counters().compiles));
  }
};
testing::Environment* const kPrecompile = testing::AddGlobalTestEnvironment(new PrecompileEnvironment);

// Plans c (pinned when asked), runs run_check and returns its report.
StatusOr<CheckReport> check_case(const Case& c, uint64_t seed = 0, bool time = false) {
  const KernelSpec s = spec_of(c.spec);
  StatusOr<Plan> plan = InvalidArgument("unset");
  if (c.pin >= 0) {
    plan = runtime().plan(s, {c.m, c.n, c.k}, pin_options(pinned(s, kPins[c.pin])));
  } else {
    plan = runtime().plan(s, {c.m, c.n, c.k});
  }
  if (!plan.ok()) return plan.status();
  if (plan->family() != KernelFamily::kSm90Gemm)
    return Internal("planned " + std::string(family_name(plan->family())) + ", not sm90_gemm");
  CheckOptions o;
  o.m = c.m;
  o.group_rows = c.groups;
  o.seed = seed;
  o.time = time;
  return run_check(runtime(), *plan, o);
}

void expect_passed(const Case& c, const StatusOr<CheckReport>& r) {
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  std::printf("[ figures ] %s m=%lld n=%lld k=%lld config=%s seed=%llu rel_fro=%.3g tol=%.2g max_abs=%.3g\n",
              c.spec.c_str(), (long long)c.m, (long long)c.n, (long long)c.k, r->config.c_str(),
              (unsigned long long)r->seed, r->rel_fro_err, r->tolerance, r->max_abs_err);
  EXPECT_EQ(r->unwritten, 0) << "seed " << r->seed;
  EXPECT_EQ(r->nonfinite, 0) << "seed " << r->seed;
  EXPECT_EQ(r->overwritten, 0) << "seed " << r->seed;
  EXPECT_LE(r->rel_fro_err, r->tolerance) << "seed " << r->seed;
  EXPECT_TRUE(r->passed) << "seed " << r->seed;
}

class Sm90GemmGpuTest : public testing::TestWithParam<Case> {};

TEST_P(Sm90GemmGpuTest, MatchesReference) {
  KILN_REQUIRE_SM90();
  expect_passed(GetParam(), check_case(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(DefaultConfigs, Sm90GemmGpuTest, testing::ValuesIn(default_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(PinnedConfigs, Sm90GemmGpuTest, testing::ValuesIn(pinned_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(ScaledDefaultConfigs, Sm90GemmGpuTest, testing::ValuesIn(scaled_default_cases()),
                         case_name);
INSTANTIATE_TEST_SUITE_P(ScaledPinnedConfigs, Sm90GemmGpuTest, testing::ValuesIn(scaled_pinned_cases()),
                         case_name);
INSTANTIATE_TEST_SUITE_P(GroupedConfigs, Sm90GemmGpuTest, testing::ValuesIn(grouped_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(SplitKConfigs, Sm90GemmGpuTest, testing::ValuesIn(split_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(TwoAtomConfigs, Sm90GemmGpuTest, testing::ValuesIn(two_atom_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(AtomGroupConfigs, Sm90GemmGpuTest, testing::ValuesIn(atom_group_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(MxConfigs, Sm90GemmGpuTest, testing::ValuesIn(mx_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(TmaStoreConfigs, Sm90GemmGpuTest, testing::ValuesIn(tma_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(OddNConfigs, Sm90GemmGpuTest, testing::ValuesIn(odd_n_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(PingPongConfigs, Sm90GemmGpuTest, testing::ValuesIn(pingpong_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(HalfSlabConfigs, Sm90GemmGpuTest, testing::ValuesIn(half_slab_cases()), case_name);

// Every pinned case is a config sm90_check_config accepts (tile rules, shared memory), checked without a GPU,
// so CI catches a pin that could never run (e.g. a grouped FP8 row case whose staged column scales do not
// fit beside a 4-stage ring fails on the device only).
TEST(Sm90GemmGpuCases, EveryPinnedCaseIsAValidConfig) {
  int checked = 0;
  for (const auto& list :
       {pinned_cases(), scaled_pinned_cases(), grouped_cases(), split_cases(), two_atom_cases(),
        atom_group_cases(), mx_cases(), tma_cases(), odd_n_cases(), pingpong_cases(), half_slab_cases()}) {
    for (const Case& c : list) {
      if (c.pin < 0) continue;
      const KernelSpec s = spec_of(c.spec);
      const Status st = sm90_check_config(s, kSm90a, pinned(s, kPins[c.pin]));
      EXPECT_TRUE(st.ok()) << c.spec << " pin " << c.pin << ": " << st.to_string();
      ++checked;
    }
  }
  EXPECT_GT(checked, 500);
}

// One split-K plan run at M = 64, 128, 64 on its own workspace: more tiles at the larger M must not
// find their counters on the partials of the smaller one (the counters sit in a fixed region).
TEST(Sm90GemmRepeatTest, SplitKWorkspaceServesEveryM) {
  KILN_REQUIRE_SM90();
  const KernelSpec s = spec_of("gemm a=bf16 b=bf16 out=bf16");
  StatusOr<Plan> plan = InvalidArgument("unset");
  plan = runtime().plan(s, {64, 2112, 7168}, pin_options(pinned(s, kPins[24])));  // 64 x 64 split 4 ways
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  for (int64_t m : {64, 128, 64, 1, 128}) {
    CheckOptions o;
    o.m = m;
    o.seed = 99;
    auto r = run_check(runtime(), *plan, o);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->unwritten, 0) << "m=" << m;
    EXPECT_TRUE(r->passed) << "m=" << m << " rel " << r->rel_fro_err;
  }
}

// Split-K sums the partials in split order whatever the arrival order: repeat runs are bitwise equal,
// and the counters are back at zero after every run (else a second run would skip or double a split).
TEST(Sm90GemmRepeatTest, SplitKRepeatRunsAreBitwiseEqual) {
  KILN_REQUIRE_SM90();
  for (const char* sp : {"gemm a=bf16 b=bf16 out=f32", "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=f32"}) {
    const Case c{sp, 77, 2112, 7168, 25};
    {
      const KernelSpec s = spec_of(sp);
      auto plan = runtime().plan(s, {c.m, c.n, c.k}, pin_options(pinned(s, kPins[25])));
      ASSERT_TRUE(plan.ok()) << plan.status().to_string();
      EXPECT_GT(plan->workspace_bytes(c.m), 0u) << sp;
    }
    auto r1 = check_case(c, 4242);
    auto r2 = check_case(c, 4242);
    auto r3 = check_case(c, 4242);
    ASSERT_TRUE(r1.ok() && r2.ok() && r3.ok());
    EXPECT_TRUE(r1->passed) << sp;
    EXPECT_EQ(r1->max_abs_err, r2->max_abs_err) << sp;
    EXPECT_EQ(r1->rel_fro_err, r2->rel_fro_err) << sp;
    EXPECT_EQ(r1->rel_fro_err, r3->rel_fro_err) << sp;
  }
}

// Deterministic: the same inputs give bitwise the same output (no atomics, fixed order).
TEST(Sm90GemmRepeatTest, RepeatRunsAreBitwiseEqual) {
  KILN_REQUIRE_SM90();
  const Case c{"gemm a=e4m3:tensor b=e4m3:tensor out=bf16", 2000, 3000, 784, 0};
  auto r1 = check_case(c, 777);
  auto r2 = check_case(c, 777);
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_EQ(r1->max_abs_err, r2->max_abs_err);
  EXPECT_EQ(r1->rel_fro_err, r2->rel_fro_err);
}

TEST(Sm90GemmRepeatTest, BlockScaledRepeatRunsAreBitwiseEqual) {
  KILN_REQUIRE_SM90();
  for (const char* s : kBlockPinSpecs) {
    const Case c{s, 2000, 3000, 768, 1};
    auto r1 = check_case(c, 777);
    auto r2 = check_case(c, 777);
    ASSERT_TRUE(r1.ok() && r2.ok()) << s;
    EXPECT_EQ(r1->max_abs_err, r2->max_abs_err) << s;
    EXPECT_EQ(r1->rel_fro_err, r2->rel_fro_err) << s;
    EXPECT_TRUE(r1->passed) << s;
  }
}

// Not a pass/fail test of speed: prints a timing table (median of 20 CUDA-event
// timed runs after 3 warm-ups, the output checked against the reference on the same data).
void timing_row(const std::string& spec, const std::string& family, const StatusOr<CheckReport>& r) {
  ASSERT_TRUE(r.ok()) << spec << ": " << r.status().to_string();
  std::printf("[ timing ] %-44s %-32s %9.3f %9.1f %s rel_fro=%.2g (%s)\n", spec.c_str(), r->config.c_str(),
              r->median_ms, r->tflops, r->passed ? "pass" : "FAIL", r->rel_fro_err, family.c_str());
  EXPECT_TRUE(r->passed) << spec << " " << r->config;
}

// A header, then one timing row per shape of [first, last) at 4096 x 7168 x its K.
void timing_rows(const TimedShape* first, const TimedShape* last) {
  std::printf("[ timing ] %-44s %-32s %9s %9s %s\n", "spec (k)", "config", "ms", "TFLOP/s", "check");
  for (const TimedShape* t = first; t != last; ++t) {
    const std::string label = std::string(t->spec) + " k=" + std::to_string(t->k);
    timing_row(label, "sm90_gemm", check_case({t->spec, kTm, kTn, t->k, t->pin}, 1, true));
  }
}

TEST(Sm90GemmTiming, Prints4096x7168x7168Clusters) {
  KILN_REQUIRE_SM90();
  for (const Timed& t : kTimedClusters)
    timing_row(t.spec, "sm90_gemm", check_case({t.spec, kTm, kTn, kTk, t.pin}, 1, true));
}

// v3: DeepSeek block scales (and per-row scales) at 4096 x 7168 x {7168, 16384}, with the portable
// family's block path in the same run.
TEST(Sm90GemmTiming, PrintsBlockScaled4096x7168) {
  KILN_REQUIRE_SM90();
  timing_rows(std::begin(kTimedScaled), std::end(kTimedScaled));
  for (int64_t k : {int64_t{7168}, int64_t{16384}}) {
    const char* s = "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16";
    setenv("KILN_FAMILY", "sm80", 1);
    auto plan = runtime().plan(spec_of(s), {kTm, kTn, k});
    unsetenv("KILN_FAMILY");
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    EXPECT_EQ(plan->family(), KernelFamily::kSm80Gemm);
    CheckOptions o;
    o.m = kTm;
    o.seed = 1;
    o.time = true;
    timing_row(std::string(s) + " k=" + std::to_string(k), "sm80_gemm", run_check(runtime(), *plan, o));
  }
}

// Graph timing (CheckOptions::Timing::kGraph, what kiln tune uses): the run still checks, the timing rotates
// over several input copies where one set fits in L2, and it prints beside the event timing of the same plan.
TEST(Sm90GemmTiming, GraphReplayOverInputCopies) {
  KILN_REQUIRE_SM90();
  struct Shape {
    const char* spec;
    int64_t m, n, k;
  } shapes[] = {{"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 128, 7168, 2048},
                {"gemm a=bf16 b=bf16 out=bf16", 16, 4096, 4096},
                {"gemm a=bf16 b=bf16 out=f32 pass=wgrad accumulate=true", 4096, 2048, 1024}};
  for (const Shape& sh : shapes) {
    auto plan = runtime().plan(spec_of(sh.spec), {sh.m, sh.n, sh.k});
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    CheckOptions o;
    o.m = sh.m;
    o.seed = 3;
    o.time = true;
    o.timing = CheckOptions::Timing::kGraph;
    auto g = run_check(runtime(), *plan, o);
    ASSERT_TRUE(g.ok()) << sh.spec << ": " << g.status().to_string();
    EXPECT_TRUE(g->passed) << sh.spec << ": " << g->to_json();
    EXPECT_EQ(g->timing, "graph");
    EXPECT_GT(g->median_ms, 0.0);
    EXPECT_GE(g->copies, 2) << sh.spec << ": one input set is far below 3x the L2";
    o.timing = CheckOptions::Timing::kEvents;
    auto e = run_check(runtime(), *plan, o);
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    std::printf("[ timing ] %-56s %5lldx%5lldx%5lld graph %8.4f ms (%d copies)  events %8.4f ms\n", sh.spec,
                static_cast<long long>(sh.m), static_cast<long long>(sh.n), static_cast<long long>(sh.k), g->median_ms,
                g->copies, e->median_ms);
  }
}

// MXFP8 (kTimedMx): the dequantizing producer against the promoted path and the FP8 block path.
TEST(Sm90GemmTiming, PrintsMxfp84096x7168) {
  KILN_REQUIRE_SM90();
  timing_rows(std::begin(kTimedMx), std::end(kTimedMx));
}

// The TMA-store epilogue against the direct one on large-M shapes, same run: the plan's own config
// (pre-tuned or heuristic) and the same config with tma_store = 1 (stages reduced until the staged
// output tile fits), and the wide tile at 3 stages with TMA stores.
TEST(Sm90GemmTiming, TmaStoreAgainstDirectStores) {
  KILN_REQUIRE_SM90();
  struct Shape {
    const char* spec;
    int64_t m, n, k;
  };
  const Shape shapes[] = {{"gemm a=bf16 b=bf16 out=bf16", 4096, 32768, 512},
                          {"gemm a=e4m3:tensor b=e4m3:tensor out=bf16", 4096, 32768, 512},
                          {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 4096, 32768, 512},
                          {"gemm a=bf16 b=bf16 out=bf16", 4096, 24576, 1536},
                          {"gemm a=e4m3:m b=e4m3:n out=bf16", 4096, 7168, 2048},
                          {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 4096, 7168, 2048},
                          {"gemm a=e4m3:tensor b=e4m3:tensor out=bf16", 4096, 7168, 16384}};
  std::printf("[ timing ] %-44s %-32s %9s %9s %s\n", "spec", "config", "ms", "TFLOP/s", "check");
  for (const Shape& sh : shapes) {
    const KernelSpec s = spec_of(sh.spec);
    auto plan = runtime().plan(s, {sh.m, sh.n, sh.k});
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    CheckOptions o;
    o.m = sh.m;
    o.seed = 1;
    o.time = true;
    const std::string label = std::string(sh.spec) + " " + std::to_string(sh.m) + "x" + std::to_string(sh.n) + "x" +
                              std::to_string(sh.k);
    timing_row(label, "plan", run_check(runtime(), *plan, o));
    std::vector<TileConfig> variants;
    TileConfig t = plan->config_for(sh.m);
    t.tma_store = 1;
    while (t.stages > 2 && !sm90_check_config(s, kSm90a, t).ok()) --t.stages;
    if (sm90_check_config(s, kSm90a, t).ok()) variants.push_back(t);
    TileConfig wide = pinned(s, kPins[31]);
    if (sm90_check_config(s, kSm90a, wide).ok() && !(wide == t)) variants.push_back(wide);
    for (const TileConfig& v : variants) {
      auto p2 = runtime().plan(s, {sh.m, sh.n, sh.k}, pin_options(v));
      ASSERT_TRUE(p2.ok()) << p2.status().to_string();
      timing_row(label, "tma store", run_check(runtime(), *p2, o));
    }
  }
}

TEST(Sm90GemmTiming, Prints4096x7168x7168) {
  KILN_REQUIRE_SM90();
  std::printf("[ timing ] %-44s %-32s %9s %9s %s\n", "spec", "config", "ms", "TFLOP/s", "check");
  auto row = timing_row;
  for (const Timed& t : kTimed) row(t.spec, "sm90_gemm", check_case({t.spec, kTm, kTn, kTk, t.pin}, 1, true));
  // The portable family on the same device, same run (KILN_FAMILY=sm80, common/env.hpp).
  for (const char* s : {"gemm a=bf16 b=bf16 out=bf16", "gemm a=e4m3:tensor b=e4m3:tensor out=bf16"}) {
    setenv("KILN_FAMILY", "sm80", 1);
    auto plan = runtime().plan(spec_of(s), {kTm, kTn, kTk});
    unsetenv("KILN_FAMILY");
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    EXPECT_EQ(plan->family(), KernelFamily::kSm80Gemm);
    CheckOptions o;
    o.m = kTm;
    o.seed = 1;
    o.time = true;
    row(s, "sm80_gemm", run_check(runtime(), *plan, o));
  }
}

}  // namespace
}  // namespace kiln
