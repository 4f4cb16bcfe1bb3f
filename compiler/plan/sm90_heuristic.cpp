// compiler/plan/sm90_heuristic.cpp — sm90 family: the config a plan takes without tuning
// (sm90_default_config) and the configs `kiln tune` tries (sm90_config_space).
//
// Each rule of the heuristic states the measurements it rests on (H200; docs/performance.md). The
// config checks are in sm90_plan.cpp, the shared-memory arithmetic in sm90_layout.cpp.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "compiler/plan/sm90_internal.hpp"
#include "compiler/plan/sm90_plan.hpp"

namespace kiln {

using namespace sm90_internal;

namespace {

int64_t tiles(const ProblemSizes& s, const TileConfig& c) {
  const int64_t m = std::max<int64_t>(s.m, 1), n = std::max<int64_t>(s.n, 1);
  return ((m + c.block_m - 1) / c.block_m) * ((n + c.block_n - 1) / c.block_n);
}

// The deepest ring (<= 8 stages) that fits the arch's shared memory.
int max_stages(const KernelSpec& spec, const Arch& arch, const TileConfig& c) {
  TileConfig t = c;
  for (t.stages = 8; t.stages > 2; --t.stages) {
    if (sm90_smem_bytes(spec, t) <= arch.max_smem_per_block()) break;
  }
  return t.stages;
}

TileConfig make(const KernelSpec& spec, int bm, int bn, int warps_m, int warps_n, int atoms = 1) {
  TileConfig c;
  c.block_m = bm;
  c.block_n = bn;
  c.block_k = atoms * kRowBytes / elem_bytes(spec.a.format);
  c.warps_m = warps_m;
  c.warps_n = warps_n;
  c.group_m = 8;
  return c;
}

// The problems the heuristic and the tuner's space give TMA-store configs (the kernel's TMA-store
// epilogue, sm90/epilogue_tma_store.cuh): no gate|up (check_config refuses it), and not grouped MXFP8
// (never run with TMA stores; dense MXFP8 and every other grouped format were measured,
// docs/performance.md).
bool offers_tma_store(const KernelSpec& spec) {
  return spec.gate_up == GateUp::kNone && (spec.layout == GroupLayout::kDense || !sm90_mx(spec));
}

// c one stage shallower where its ring fills shared memory so that its block scales are not staged and one
// stage fewer stages them (the kernel then reads them from the slot instead of issuing per-thread global
// loads); c itself otherwise (every spec without block scales, rings that stage already or cannot).
TileConfig with_staged_scales(const KernelSpec& spec, const TileConfig& c) {
  if (c.stages < 4 || sm90_staged_scales(spec, c)) return c;
  TileConfig fewer = c;
  fewer.stages = c.stages - 1;
  return sm90_staged_scales(spec, fewer) ? fewer : c;
}

}  // namespace

TileConfig sm90_default_config(const KernelSpec& spec, const Arch& arch, const ProblemSizes& sizes) {
  // Tiles are counted against the SMs of the arch the plan is for (the device's, or its named part's:
  // compiler/plan/gpus.hpp), under an SM cap when there is one.
  const int kSms = arch.sms();
  const int64_t m = std::max<int64_t>(sizes.m, 1);
  // Large dense problems without gate|up store through shared memory and TMA (the kernel's TMA-store
  // epilogue), one stage fewer where the staged tile needs it. Measured on the H200 (2026-11, the plan's
  // config against the same config with TMA stores): 4096 x 32768 x 512 bf16 0.357 -> 0.213 ms, FP8 tensor
  // 0.314 -> 0.134, FP8 block 0.306 -> 0.152; 4096 x 24576 x 1536 bf16 0.500 -> 0.404; 4096 x 7168 x 2048 FP8
  // row 0.137 -> 0.098, block 0.136 -> 0.112; 4096 x 7168 x 16384 FP8 tensor 0.677 -> 0.632. From 64 rows
  // (docs/performance.md): the same tile with TMA stores against direct stores, settled graph replay,
  // 64 x 24576 x 1536 FP8 tensor 15.42 -> 14.83 us and FP8 row 22.98 -> 14.38; the block-scaled 128 x 128
  // square at 128 .. 512 rows 6-10% faster; and every one of the 15 bf16 / FP8 tensor / FP8 row M-bucket 64 /
  // 128 rows probed took a TMA-store tile.
  // Grouped problems (rows per expert, bf16 / f16 / FP8 tensor and per-row scales): a warpgroup's slab that
  // crosses its expert's last row goes out directly, the rest through TMA. Settled graph replay on the H200
  // (docs/performance.md), 32 experts x 512 rows (T = 4096, top-4): 16384 x 2880 x 2880 FP8 row 352 -> 269
  // us, bf16 470 -> 429; x 5760 x 2880 FP8 row 684 -> 543, bf16 947 -> 858; 32 x 1024 rows (top-8) x 7168 x
  // 2048 FP8 row 1283 -> 883, bf16 1590 -> 1394; FP8 block scales go through the 128 x 256 rule below. MXFP8
  // grouped problems keep direct stores (not measured).
  const bool tma_store = m >= kSm90TmaStoreMinRows && offers_tma_store(spec);
  // Grouped problems are planned per M bucket of rows PER EXPERT (rows_per_expert):
  // every expert brings its own tiles.
  const int64_t groups = spec.layout == GroupLayout::kDense ? 1 : std::max(1, spec.experts);
  auto tiles = [&](const ProblemSizes& s, const TileConfig& c) { return kiln::tiles(s, c) * groups; };
  // The share of the SMs' tile slots doing useful work, M N / (ceil(tiles / SMs) SMs tile_M tile_N): counts
  // both the last wave and the padding of the last tile column.
  auto useful = [&](const TileConfig& c) {
    const double waves = std::ceil(static_cast<double>(tiles(sizes, c)) / kSms);
    const double slots = waves * kSms * c.block_m * c.block_n;
    return static_cast<double>(m) * static_cast<double>(std::max<int64_t>(sizes.n, 1)) * groups / slots;
  };
  // At most one stage is given up for the staged tile (measured: 4 -> 3 on the wide tile, 3 -> 2 on the
  // two-atom block tile); an f32 tile that would halve the wide ring keeps the direct epilogue.
  // Block-scaled rings that fill shared memory leave no room for the scale slots (the kernel then loads
  // each K block's scales per thread from global memory); one stage fewer stages them. Measured on the
  // H200 for the 128 x 128 square (docs/performance.md, `kiln run --repeats 30`, twice each):
  // 300 x 7168 x 7168 63.6 -> 54.4 us with TMA stores (6 -> 5 stages), 69.0 -> 57.5 without (7 -> 6);
  // 128 x 7168 x 7168 35.3 -> 31.8 / 37.7 -> 31.4; 512 x 4096 x 7168 34.6 -> 31.2 / 38.4 -> 33.2;
  // 300 x 2112 x 7168 32.9 -> 29.0 / 35.2 -> 29.8.
  // (with_staged_scales, applied after the TMA-store choice below, which compares the full rings.)
  auto finish_with = [&](TileConfig c, bool store) {
    c.stages = max_stages(spec, arch, c);
    if (store) {
      TileConfig t = c;
      t.tma_store = 1;
      t.stages = max_stages(spec, arch, t);
      if (t.stages >= c.stages - 1 && sm90_check_config(spec, arch, t).ok())
        return with_staged_scales(spec, t);
    }
    return with_staged_scales(spec, c);
  };
  auto finish = [&](const TileConfig& c) { return finish_with(c, tma_store); };
  // Large problems: 128 x 256, two consumer warpgroups of 64 x 256 (128 accumulators each: the widest
  // wgmma, the least shared-memory traffic per FLOP), 4 stages. FP8 keeps 128 x 256 too (fast
  // accumulation: a promoted partial would need 256 registers); docs/performance.md has the measurements.
  // Not in clusters (cluster_m = 1): clusters of 2 measured slower on the H200 (docs/performance.md;
  // measured with a fence in the remote arrive, which the kernel does not have).
  // MXFP8 at large M and long K: the dequantizing mainloop (block_k 64, sm90/mx_dequant.cuh) with A
  // in registers, 128 x 256 with 3 stages of B. Measured on the H200 against the promoted square that
  // this rule replaces (docs/performance.md): 2.14 vs 2.47 ms at 4096 x 7168 x 16384, 2.50 vs 2.84
  // at 8192^3, 553 vs 614 us at 4096 x 4096 x 7168 (`kiln tune`). Shorter K is left to the tuner
  // (its space holds these tiles; at K = 512 .. 2048 it chose 128 x 160 / 192 with TMA stores, 1.09-1.20x
  // the square). Dense problems without gate|up only: grouped and GLU MXFP8 were not measured with it.
  // Enough tiles for two waves, and waves that waste no more than 128 x 128's (within 5%).
  if (m > 64 && sm90_mx(spec) && sizes.k >= 4096 && spec.layout == GroupLayout::kDense &&
      spec.gate_up == GateUp::kNone) {
    TileConfig dq = make(spec, 128, 256, 8, 1);
    dq.block_k = 64;
    dq = finish(dq);
    if (tiles(sizes, dq) >= 2 * kSms && 1.05 * useful(dq) >= useful(make(spec, 128, 128, 8, 1)) &&
        sm90_check_config(spec, arch, dq).ok())
      return dq;
  }
  const TileConfig wide = finish(make(spec, 128, 256, 8, 1));
  // (Block-scaled 128 x 256 promotes in two halves, the kernel's half partials: block-scaled problems
  // take it by their own rule below, where N fills whole 256-column tiles.)
  if (m > 64 && tiles(sizes, wide) >= kSms && !sm90_half_partial(spec, wide) &&
      sm90_check_config(spec, arch, wide).ok()) {
    // 128 x 192 where its waves waste clearly less: the share of the SMs' tile slots doing useful work,
    // M N / (ceil(tiles / SMs) SMs 128 N_tile), counts both the last wave and the padding of the last
    // tile column. 4096 x 2112: 0.67 in 128 x 256 tiles (9 columns of which the last is 1/4 used, 2.2
    // waves), 0.89 in 128 x 192 (11 exact columns, 2.7 waves); measured on the H200 (`kiln tune`,
    // docs/performance.md): bf16 0.222 -> 0.172 ms, FP8 tensor 0.121 -> 0.094, row
    // 0.124 -> 0.096. The 5% margin keeps the wider tile (less shared-memory traffic per FLOP) on ties.
    // 128 x 176 likewise (2112 = 12 x 176: 0.97 useful, 2.9 waves): with TMA stores in 16-column boxes
    // 5-6% faster than 128 x 192 there for bf16 and FP8 tensor (docs/performance.md).
    // Grouped problems take 128 x 192 by the same rule (tiles counted per expert), not 128 x 176 (measured
    // on dense problems only): gpt-oss-20b's down projection, 32 experts x 512 rows x 2880 x 2880 (2880 =
    // 15 x 192, 11.25 x 256), direct stores, bf16 511 -> 470 us and FP8 row 376 -> 351 by settled graph
    // replay (docs/performance.md).
    const bool dense = spec.layout == GroupLayout::kDense;
    TileConfig narrow = finish(make(spec, 128, 192, 8, 1));
    const TileConfig n176 = finish(make(spec, 128, 176, 8, 1));
    if (dense && useful(n176) > 1.05 * useful(narrow) && sm90_check_config(spec, arch, n176).ok())
      narrow = n176;
    if (useful(narrow) > 1.05 * useful(wide) && sm90_check_config(spec, arch, narrow).ok()) return narrow;
    return wide;
  }
  // Block-scaled problems promote at most 64 x 192 per warpgroup: 128 x 192 (one atom per stage) where
  // its waves waste clearly less than 128 x 128's, as above (4096 x 2112: 0.89 vs 0.80 useful; measured
  // 121 vs 132 us against the two-atom 128 x 128 below, and slower at 4096 x {4096, 7168, 24576},
  // docs/performance.md).
  if (m > 64 && sm90_block_scaled(spec) && spec.layout == GroupLayout::kDense) {
    const TileConfig b192 = finish(make(spec, 128, 192, 8, 1));
    const TileConfig b128 = make(spec, 128, 128, 8, 1);
    if (tiles(sizes, b192) >= kSms && useful(b192) > 1.05 * useful(b128) &&
        sm90_check_config(spec, arch, b192).ok())
      return b192;
  }
  // Medium problems, and large block-scaled ones the rules above did not take (N not a multiple of 256,
  // f32 outputs): 128 x 128, two warpgroups of 64 x 128 (FP8 promoted), 7 stages (6 with block scales, so
  // that their slots fit: with_staged_scales).
  // Large block-scaled problems with f32 scales: 128 x 128 with two 128-K atoms per stage (the second
  // atom's wgmmas overlap the first's promotion) and scales staged in shared memory, in clusters of 2
  // (B multicast). Measured on the H200 (2026-11, docs/performance.md): 1170 vs 967 TFLOP/s at 4096 x 7168 x
  // 7168, 1120 vs 1016 at K = 16384. ue8m0 scales too, their staging copying one word per row and stage
  // (0.86-0.87 ms against 1.03 for the one-atom square at 4096 x 7168 x 16384; two copies per row and stage
  // measured no faster, 910 vs 923 TFLOP/s).
  // Large block-scaled problems whose N fills whole 256-column tiles: 128 x 256 promoted in two halves (the
  // kernel's half partials) with TMA stores, its block scales staged beside the ring, in clusters of 2 from
  // K = 2048, where its waves waste no more than 128 x 128's (within 5%; 128 x 192 keeps the shapes its own
  // rule above prefers). Tuned on the H200 with the one-atom tiles' scales staged (25 candidates per shape):
  // 755 against 793 us for the two-atom 128 x 128 below at 4096 x 7168 x 16384 (f32 scales), and the
  // 128 x 256 tile won at 4096 x {4096 x 7168, 7168 x 2048, 32768 x 512} too. E8M0 scales take it as well
  // (measured ahead with them at K >= 8192). f32 outputs have no room for the staged output tile and keep the
  // two-atom 128 x 128. Grouped problems (rows per expert) take it unclustered: DeepSeek-V3's MoE layers, 32
  // experts x 1024 rows, settled graph replay against the two-atom 128 x 128 in clusters of 2 below
  // (docs/performance.md): 32768 x 7168 x 2048 1129 -> 862 us (908 in clusters of 2), 32768 x 4096 x 7168
  // 1825 -> 1656 (1709). Grouped ones from 128 rows per expert: DeepSeek-V3 at T = 512 (32 experts x 128
  // rows), settled graph replay against the two-atom 128 x 128 in clusters of 2: 4096 x 7168 x 2048
  // 270.6 -> 188.3 us, 4096 x 4096 x 7168 439.8 -> 335.6.
  const int64_t half_min_rows = spec.layout == GroupLayout::kDense ? 256 : 128;
  if (m >= half_min_rows && sm90_block_scaled(spec) && sizes.n % 256 == 0) {
    TileConfig half = finish(make(spec, 128, 256, 8, 1));
    if (half.tma_store && tiles(sizes, half) >= 2 * kSms &&
        1.05 * useful(half) >= useful(make(spec, 128, 128, 8, 1)) &&
        sm90_check_config(spec, arch, half).ok()) {
      TileConfig clustered = half;
      clustered.cluster_m = 2;
      if (spec.layout == GroupLayout::kDense && sizes.k >= 2048 &&
          sm90_check_config(spec, arch, clustered).ok())
        return clustered;
      return half;
    }
  }
  if (m > 64 && sm90_block_scaled(spec) && tiles(sizes, make(spec, 128, 128, 8, 1)) >= 2 * kSms) {
    TileConfig overlapped = make(spec, 128, 128, 8, 1);
    overlapped.block_k = 2 * overlapped.block_k;  // two atoms per stage
    overlapped.cluster_m = 2;
    // TMA stores from 256 rows only here: its two-stage store ring was measured at M = 4096,
    // never below 256 rows, where this tile keeps the three-stage direct ring it had.
    overlapped = finish_with(overlapped, tma_store && m >= 256);
    // Long K: a third stage beats the TMA-store epilogue (whose staged output tile leaves room for two):
    // at 4096 x 7168 x 16384 787 vs 814 us, level at K = 7168 and 8192, and the TMA store stays ahead
    // at K <= 2048 (H200 tuning, docs/performance.md).
    if (overlapped.tma_store && sizes.k >= 8192) {
      TileConfig deep = overlapped;
      deep.tma_store = 0;
      deep.stages = max_stages(spec, arch, deep);
      if (deep.stages > overlapped.stages && sm90_check_config(spec, arch, deep).ok()) overlapped = deep;
    }
    if (sm90_check_config(spec, arch, overlapped).ok()) return overlapped;
  }
  const TileConfig square = finish(make(spec, 128, 128, 8, 1));
  // MXFP8 (pre-tuned for the H200's benchmark shapes): a square that leaves most SMs idle
  // goes to the small-M path below (64-row tiles, split-K), as measured on the H200 (128 x 2112 x 7168:
  // 0.14x of the block path).
  const bool mx_few_tiles = sm90_mx(spec) && tiles(sizes, square) < kSms;
  if (m > 64 && !mx_few_tiles && sm90_check_config(spec, arch, square).ok()) return square;
  // Small M: one consumer warpgroup of 64 rows; narrower N when that leaves SMs idle.
  auto small_tile = [&](bool store) {
    TileConfig c = finish_with(make(spec, 64, 128, 4, 1), store);
    if (tiles(sizes, c) < kSms) c = finish_with(make(spec, 64, 64, 4, 1), store);
    return c;
  };
  TileConfig small = small_tile(tma_store);
  // Still fewer tiles than SMs (decode: M <= 64 with N of a few thousand): split K so that about one
  // unit per SM reads the weights (the kernel's split-K, sm90/split_k.cuh), keeping >= 8 stages of K
  // per split.
  // Dense only; the last split of a tile sums the partials through a workspace. Split tiles keep the
  // direct epilogue (measured that way; the tuner's split-K variants have no TMA-store form).
  if (spec.layout == GroupLayout::kDense) {
    const TileConfig direct = small_tile(false);
    const int64_t t = tiles(sizes, direct);
    const int64_t steps = (std::max<int64_t>(sizes.k, 1) + direct.block_k - 1) / direct.block_k;
    const int64_t split = std::min<int64_t>({kSms / std::max<int64_t>(t, 1), steps / 8, 16});
    if (split >= 2) {
      TileConfig s = direct;
      s.split_k = static_cast<int>(split);
      if (sm90_check_config(spec, arch, s).ok()) small = s;  // its flags need 16 bytes more
    }
  }
  return small;
}
std::vector<TileConfig> sm90_config_space(const KernelSpec& spec, const Arch& arch) {
  std::vector<TileConfig> out;
  const int shapes[][5] = {// block_m, block_n, warps_m, warps_n, atoms per stage
                           {64, 64, 4, 1, 1},   {64, 128, 4, 1, 1},  {64, 256, 4, 1, 1},  {128, 64, 8, 1, 1},
                           {128, 128, 8, 1, 1}, {128, 256, 8, 1, 1}, {128, 128, 4, 1, 1}, {128, 256, 4, 2, 1},
                           {256, 128, 8, 1, 1}, {128, 128, 4, 2, 1},
                           // N tiles between the powers of two (two warpgroups of 64 x N): N = 2112 = 11 x
                           // 192, 7168 = 56 x 128 ~ 34.5 x 208, ... so the last wave fills more SMs.
                           {128, 192, 8, 1, 1}, {128, 160, 8, 1, 1}, {128, 208, 8, 1, 1}, {128, 144, 8, 1, 1},
                           {128, 112, 8, 1, 1},
                           // 2112 = 12 x 176: 2.9 waves of 128-row tiles at M = 4096 (192: 2.7); with TMA
                           // stores in 16-column boxes, 5-6% faster than 128 x 192 there
                           // (docs/performance.md).
                           {128, 176, 8, 1, 1},
                           // v4 (the kernel's block-scale mainloops), offered for block-scaled specs:
                           // two-atom stages with overlapped promotion, and three consumer warpgroups.
                           {128, 128, 8, 1, 2}, {64, 128, 4, 1, 2},  {64, 256, 4, 2, 2},  {192, 128, 12, 1, 1},
                           {64, 64, 4, 1, 2}};
  const bool block = sm90_block_scaled(spec);
  for (const auto& s : shapes) {
    // v4 shapes are for block scales, except the 64-row two-atom tiles: unpromoted, they read 256 bytes of
    // every W row per stage (decode bandwidth) for any spec.
    const bool v4 = s[4] == 2 || s[2] == 12;
    if (v4 && !block && !(s[0] == 64 && s[4] == 2)) continue;
    for (int cluster_m : {1, 2}) {
      for (int group_m : {4, 8, 16}) {
        TileConfig c = make(spec, s[0], s[1], s[2], s[3], s[4]);
        c.group_m = group_m;
        c.cluster_m = cluster_m;
        const int deepest = max_stages(spec, arch, c);
        for (int stages = 3; stages <= deepest; ++stages) {
          c.stages = stages;
          if (sm90_check_config(spec, arch, c).ok()) out.push_back(c);
        }
      }
    }
  }
  // The TMA-store epilogue for problems without gate|up: each non-v4 shape at the deepest ring that fits
  // beside the staged output tile, unclustered and in clusters of 2; and the block-scaled two-atom
  // 128 x 128 at its two stages, as the heuristic takes it at large M (so that the heuristic's config is
  // in the space there and `kiln tune` has it as a baseline).
  if (offers_tma_store(spec)) {
    for (const auto& s : shapes) {
      const bool two_atom_square = block && s[0] == 128 && s[1] == 128 && s[4] == 2;
      if ((s[4] == 2 || s[2] == 12) && !two_atom_square) continue;
      for (int cluster_m : {1, 2}) {
        TileConfig c = make(spec, s[0], s[1], s[2], s[3], s[4]);
        c.cluster_m = cluster_m;
        c.tma_store = 1;
        c.stages = max_stages(spec, arch, c);
        if (c.stages >= (two_atom_square ? 2 : 3) && sm90_check_config(spec, arch, c).ok()) out.push_back(c);
        // Block scales: where the deepest ring leaves no room for the staged scale slots, one stage fewer
        // that has it (128 x 32768 x 512, 128 x 128: 13.2 us staged at 5 stages against 14.3 at 6 with
        // per-thread loads; docs/performance.md).
        const TileConfig fewer = with_staged_scales(spec, c);
        if (fewer.stages != c.stages && sm90_check_config(spec, arch, fewer).ok()) out.push_back(fewer);
      }
    }
  }
  // Ping-pong consumers (sm90/pingpong.cuh) for dense problems that accumulate unpromoted: two
  // warpgroups taking whole 128 x 128, 64 x 256 or 128 x 176 tiles in turn, with direct stores, TMA
  // stores, or TMA stores through a half- or quarter-size buffer (a stage more), at the deepest ring that
  // fits, unclustered and in clusters of 2 (check_config refuses the rest). 128 x 176 is N = 2112's tile
  // (12 x 176; cuBLAS's FP8 kernel there is a 5-stage ping-pong of it).
  if (spec.layout == GroupLayout::kDense) {
    for (const auto& s : {std::pair{128, 128}, std::pair{64, 256}, std::pair{128, 176}}) {
      for (int tma : {0, 1, 2, 4}) {
        if (tma && spec.gate_up != GateUp::kNone) continue;
        for (int cluster_m : {1, 2}) {
          TileConfig c = make(spec, s.first, s.second, 4, 1);
          c.pingpong = 1;
          c.tma_store = tma;
          c.cluster_m = cluster_m;
          c.stages = max_stages(spec, arch, c);
          if (c.stages >= 3 && sm90_check_config(spec, arch, c).ok()) out.push_back(c);
        }
      }
    }
  }
  // MXFP8 through the dequantizing mainloop (block_k 64, sm90/mx_dequant.cuh) on 64-row warpgroups
  // (A in registers): 128 x N for the N tiles above, every ring depth that fits, with and without the
  // TMA store (no clusters, no split-K: check_config refuses them).
  if (sm90_mx(spec)) {
    for (int bn : {128, 144, 160, 176, 192, 208, 256}) {
      for (int tma : {0, 1}) {
        if (tma && !offers_tma_store(spec)) continue;
        TileConfig c = make(spec, 128, bn, 8, 1);
        c.block_k = 64;
        c.tma_store = tma;
        const int deepest = max_stages(spec, arch, c);
        for (int stages = 2; stages <= deepest; ++stages) {
          c.stages = stages;
          if (sm90_check_config(spec, arch, c).ok()) out.push_back(c);
        }
      }
    }
  }
  // Split-K (sm90/split_k.cuh) for small M: the 64-row tiles at their deepest ring, K split 2..16
  // ways (dense problems only: check_config refuses the rest).
  for (const auto& s : shapes) {
    if (s[0] != 64 || ((s[4] == 2 || s[2] == 12) && !block && !(s[0] == 64 && s[4] == 2))) continue;
    for (int split : {2, 4, 8, 16}) {
      TileConfig c = make(spec, s[0], s[1], s[2], s[3], s[4]);
      c.split_k = split;
      c.stages = max_stages(spec, arch, c);
      if (sm90_check_config(spec, arch, c).ok()) out.push_back(c);
    }
  }
  return out;
}

}  // namespace kiln
