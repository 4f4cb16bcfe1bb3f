// compiler/plan/sm90_heuristic.cpp — sm90 family: the config a plan takes without tuning
// (sm90_default_config) and the configs `kiln tune` tries (sm90_config_space).
//
// The default config is an ordered table of rules (kSm90DefaultRules); the H200 measurements each rule
// rests on are in docs/performance.md §sm90 default-config rules. The config checks are in sm90_plan.cpp,
// the shared-memory arithmetic in sm90_layout.cpp.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "compiler/plan/gemm_view.hpp"
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

// ---- sm90_default_config: an ordered table of rules -------------------------------------------------
// The first rule whose `when` holds and whose `pick` yields a config decides; the last always yields.
// The measurements behind each rule: docs/performance.md §sm90 default-config rules, under its name.

// What every rule sees, built once per call.
struct Sm90Problem {
  const KernelSpec& spec;
  const Arch& arch;
  const ProblemSizes& sizes;
  // Tiles are counted against the SMs of the arch the plan is for (the device's, or its named part's:
  // compiler/plan/gpus.hpp), under an SM cap when there is one.
  int sms;
  int64_t m;       // rows, at least 1 (grouped problems: rows per expert, their M bucket)
  int64_t groups;  // 1, or the experts of a grouped problem: every expert brings its own tiles
  bool dense;
  // Rules whose tile may take the TMA-store epilogue (from kSm90TmaStoreMinRows rows, offers_tma_store).
  bool tma_store;

  Sm90Problem(const KernelSpec& spec, const Arch& arch, const ProblemSizes& sizes)
      : spec(spec),
        arch(arch),
        sizes(sizes),
        sms(arch.sms()),
        m(std::max<int64_t>(sizes.m, 1)),
        groups(spec.layout == GroupLayout::kDense ? 1 : std::max(1, spec.experts)),
        dense(spec.layout == GroupLayout::kDense),
        tma_store(m >= kSm90TmaStoreMinRows && offers_tma_store(spec)) {}

  int64_t tiles(const TileConfig& c) const { return kiln::tiles(sizes, c) * groups; }

  // The share of the SMs' tile slots doing useful work, M N / (ceil(tiles / SMs) SMs tile_M tile_N):
  // counts both the last wave and the padding of the last tile column.
  double useful(const TileConfig& c) const {
    const double waves = std::ceil(static_cast<double>(tiles(c)) / sms);
    const double slots = waves * sms * c.block_m * c.block_n;
    return static_cast<double>(m) * static_cast<double>(std::max<int64_t>(sizes.n, 1)) * groups / slots;
  }

  // c at its deepest ring; with the TMA-store epilogue where store asks for it and the staged tile costs
  // at most one stage (compared on full rings); then one stage fewer where that stages the block scales.
  TileConfig finish_with(TileConfig c, bool store) const {
    c.stages = max_stages(spec, arch, c);
    if (store) {
      TileConfig t = c;
      t.tma_store = 1;
      t.stages = max_stages(spec, arch, t);
      if (t.stages >= c.stages - 1 && sm90_check_config(spec, arch, t).ok())
        return with_staged_scales(spec, t);
    }
    return with_staged_scales(spec, c);
  }
  TileConfig finish(const TileConfig& c) const { return finish_with(c, tma_store); }

  bool ok(const TileConfig& c) const { return sm90_check_config(spec, arch, c).ok(); }
};

struct Sm90Rule {
  const char* name;                                       // as in docs/performance.md
  bool (*when)(const Sm90Problem&);                       // the problems it is for
  const char* tile;                                       // what it takes
  const char* why;                                        // one-line reason
  std::optional<TileConfig> (*pick)(const Sm90Problem&);  // nullopt: declines, the next rule decides
};

// mx-dequant: 128 x 256 on the dequantizing mainloop (block_k 64, sm90/mx_dequant.cuh), where it fills two
// waves and its waves waste no more than 128 x 128's (within 5%).
std::optional<TileConfig> pick_mx_dequant(const Sm90Problem& p) {
  TileConfig dq = make(p.spec, 128, 256, 8, 1);
  dq.block_k = 64;
  dq = p.finish(dq);
  if (p.tiles(dq) >= 2 * p.sms && 1.05 * p.useful(dq) >= p.useful(make(p.spec, 128, 128, 8, 1)) && p.ok(dq))
    return dq;
  return std::nullopt;
}

// wide: 128 x 256 where it fills a wave and does not promote in halves (block scales: block-halves); then
// 128 x 192 (128 x 176 for dense problems) where its waves waste clearly less (5% margin).
std::optional<TileConfig> pick_wide(const Sm90Problem& p) {
  const TileConfig wide = p.finish(make(p.spec, 128, 256, 8, 1));
  if (p.tiles(wide) >= p.sms && !sm90_half_partial(p.spec, wide) && p.ok(wide)) {
    TileConfig narrow = p.finish(make(p.spec, 128, 192, 8, 1));
    const TileConfig n176 = p.finish(make(p.spec, 128, 176, 8, 1));
    if (p.dense && p.useful(n176) > 1.05 * p.useful(narrow) && p.ok(n176)) narrow = n176;
    if (p.useful(narrow) > 1.05 * p.useful(wide) && p.ok(narrow)) return narrow;
    return wide;
  }
  return std::nullopt;
}

// block-192: one atom per stage, where it fills a wave and its waves waste clearly less than 128 x 128's.
std::optional<TileConfig> pick_block_192(const Sm90Problem& p) {
  const TileConfig b192 = p.finish(make(p.spec, 128, 192, 8, 1));
  if (p.tiles(b192) >= p.sms && p.useful(b192) > 1.05 * p.useful(make(p.spec, 128, 128, 8, 1)) && p.ok(b192))
    return b192;
  return std::nullopt;
}

// block-halves: only with TMA stores (f32 outputs have no room for the staged tile), two waves, waves within
// 5% of 128 x 128's; dense problems from K = 2048 in clusters of 2.
std::optional<TileConfig> pick_block_halves(const Sm90Problem& p) {
  const TileConfig half = p.finish(make(p.spec, 128, 256, 8, 1));
  if (half.tma_store && p.tiles(half) >= 2 * p.sms &&
      1.05 * p.useful(half) >= p.useful(make(p.spec, 128, 128, 8, 1)) && p.ok(half)) {
    TileConfig clustered = half;
    clustered.cluster_m = 2;
    if (p.dense && p.sizes.k >= 2048 && p.ok(clustered)) return clustered;
    return half;
  }
  return std::nullopt;
}

// block-two-atom: two atoms per stage, clusters of 2; TMA stores from 256 rows only (measured at M = 4096).
// From K = 8192 the direct epilogue where it gives a deeper ring.
std::optional<TileConfig> pick_block_two_atom(const Sm90Problem& p) {
  TileConfig overlapped = make(p.spec, 128, 128, 8, 1);
  overlapped.block_k = 2 * overlapped.block_k;  // two atoms per stage
  overlapped.cluster_m = 2;
  overlapped = p.finish_with(overlapped, p.tma_store && p.m >= 256);
  if (overlapped.tma_store && p.sizes.k >= 8192) {
    TileConfig deep = overlapped;
    deep.tma_store = 0;
    deep.stages = max_stages(p.spec, p.arch, deep);
    if (deep.stages > overlapped.stages && p.ok(deep)) overlapped = deep;
  }
  if (p.ok(overlapped)) return overlapped;
  return std::nullopt;
}

// square: 128 x 128, two warpgroups of 64 x 128 (FP8 promoted), 7 stages (6 with block scales, so that their
// slots fit: with_staged_scales).
std::optional<TileConfig> pick_square(const Sm90Problem& p) {
  const TileConfig square = p.finish(make(p.spec, 128, 128, 8, 1));
  if (p.ok(square)) return square;
  return std::nullopt;
}

// small-m: one consumer warpgroup of 64 rows, 64 x 64 where 64 x 128 leaves SMs idle. Dense problems with
// still fewer tiles than SMs split K (sm90/split_k.cuh): about one unit per SM, >= 8 stages of K per split,
// at most 16 splits, direct epilogue; the split config only where it passes (its flags need 16 bytes more).
std::optional<TileConfig> pick_small_m(const Sm90Problem& p) {
  auto small_tile = [&](bool store) {
    TileConfig c = p.finish_with(make(p.spec, 64, 128, 4, 1), store);
    if (p.tiles(c) < p.sms) c = p.finish_with(make(p.spec, 64, 64, 4, 1), store);
    return c;
  };
  TileConfig small = small_tile(p.tma_store);
  if (p.dense) {
    const TileConfig direct = small_tile(false);
    const int64_t t = p.tiles(direct);
    const int64_t steps = (std::max<int64_t>(p.sizes.k, 1) + direct.block_k - 1) / direct.block_k;
    const int64_t split = std::min<int64_t>({p.sms / std::max<int64_t>(t, 1), steps / 8, 16});
    if (split >= 2) {
      TileConfig s = direct;
      s.split_k = static_cast<int>(split);
      if (p.ok(s)) small = s;
    }
  }
  return small;
}

// In order: the first rule that yields a config wins.
constexpr Sm90Rule kSm90DefaultRules[] = {
    {"mx-dequant",
     [](const Sm90Problem& p) {
       return p.m > 64 && sm90_mx(p.spec) && p.sizes.k >= 4096 && p.dense && p.spec.gate_up == GateUp::kNone;
     },
     "128 x 256 dequantizing to bf16 (block_k 64, A in registers)",
     "MXFP8 at long K: faster than promoting every 32 K; "
     "docs/performance.md §sm90 default-config rules",
     pick_mx_dequant},
    {"wide", [](const Sm90Problem& p) { return p.m > 64; },
     "128 x 256; 128 x 192 / 128 x 176 where their waves fill the SMs better",
     "the widest wgmma, the least shared-memory traffic per FLOP; "
     "docs/performance.md §sm90 default-config rules",
     pick_wide},
    {"block-192", [](const Sm90Problem& p) { return p.m > 64 && sm90_block_scaled(p.spec) && p.dense; },
     "128 x 192, one atom per stage",
     "block scales: the widest promoted warpgroup, for N such as 2112; "
     "docs/performance.md §sm90 default-config rules",
     pick_block_192},
    {"block-halves",
     [](const Sm90Problem& p) {
       return p.m >= (p.dense ? 256 : 128) && sm90_block_scaled(p.spec) && p.sizes.n % 256 == 0;
     },
     "128 x 256 promoted in two halves, TMA stores; clusters of 2 for dense problems from K = 2048",
     "block scales with N in whole 256-column tiles: the fastest block tile at large M; "
     "docs/performance.md §sm90 default-config rules",
     pick_block_halves},
    {"block-two-atom",
     [](const Sm90Problem& p) {
       return p.m > 64 && sm90_block_scaled(p.spec) && p.tiles(make(p.spec, 128, 128, 8, 1)) >= 2 * p.sms;
     },
     "128 x 128, two atoms per stage, clusters of 2",
     "block scales: the second atom's wgmmas overlap the first's promotion; "
     "docs/performance.md §sm90 default-config rules",
     pick_block_two_atom},
    {"square",
     [](const Sm90Problem& p) {
       // MXFP8 squares that leave SMs idle go to small-m.
       return p.m > 64 && !(sm90_mx(p.spec) && p.tiles(make(p.spec, 128, 128, 8, 1)) < p.sms);
     },
     "128 x 128",
     "medium problems, and what the rules above decline; "
     "docs/performance.md §sm90 default-config rules",
     pick_square},
    {"small-m", [](const Sm90Problem&) { return true; },
     "64 x 128 or 64 x 64; split-K where the tiles leave SMs idle",
     "M <= 64 (and anything left): one 64-row warpgroup reads the weights; "
     "docs/performance.md §sm90 default-config rules",
     pick_small_m},
};

}  // namespace

namespace {

// A backward spec's config (MN-major operands, sm90_check_config): the forward rules' choice for the pass's
// own GEMM (compiler/plan/gemm_view.hpp), with one 128-byte atom per stage and columns in whole 64-element
// chunks per warpgroup (N tiles of 112, 144, 160, 176 or 208 become 128; 96 becomes 64), its ring as deep as
// fits; the plain 128 x 128 tile if that still fails.
TileConfig backward_config(const KernelSpec& spec, const Arch& arch, TileConfig c) {
  if (spec.pass == Pass::kWgrad && spec.layout != GroupLayout::kDense) c.cluster_m = 1;  // no clusters there
  if (spec.accumulate && spec.out.format != Format::kF32) c.tma_store = 0;  // 16-bit outputs add directly
  if (sm90_check_config(spec, arch, c).ok()) return c;
  c.block_k = sm90_atom_k(spec);
  const int wg_n = c.block_n / std::max(1, c.warps_n);
  if (wg_n % kSm90MnChunk != 0) {
    c.warps_n = 1;
    c.block_n = c.block_n >= 128 ? 128 : 64;
  }
  c.stages = max_stages(spec, arch, c);
  if (sm90_check_config(spec, arch, c).ok()) return c;
  TileConfig square = make(spec, 128, 128, 8, 1);
  square.stages = max_stages(spec, arch, square);
  return square;
}

}  // namespace

TileConfig sm90_default_config(const KernelSpec& spec, const Arch& arch, const ProblemSizes& sizes) {
  // Quantized wgrad (per-column b scales, at most 128 columns per warpgroup): 128 x 128 tiles of two
  // promoted 64 x 128 warpgroups, the ring as deep as fits; 64 x 128 when those tiles leave SMs idle
  // (grouped: every expert owns the tiles of its dW, without clusters).
  if (sm90_col_blocks(spec)) {
    const ProblemSizes g = gemm_sizes(spec, sizes);
    const int64_t groups = spec.layout != GroupLayout::kDense ? std::max(spec.experts, 1) : 1;
    const int64_t tiles = ((g.m + 127) / 128) * ((g.n + 127) / 128) * groups;
    TileConfig c = tiles >= arch.sms() ? make(spec, 128, 128, 8, 1) : make(spec, 64, 128, 4, 1);
    if (groups > 1 || spec.layout != GroupLayout::kDense) c.cluster_m = 1;
    c.stages = max_stages(spec, arch, c);
    return c;
  }
  if (spec.pass != Pass::kFprop) {
    KernelSpec fwd = spec;
    fwd.pass = Pass::kFprop;
    return backward_config(spec, arch, sm90_default_config(fwd, arch, gemm_sizes(spec, sizes)));
  }
  const Sm90Problem p(spec, arch, sizes);
  for (const Sm90Rule& rule : kSm90DefaultRules) {
    if (!rule.when(p)) continue;
    if (std::optional<TileConfig> c = rule.pick(p)) return *c;
  }
  return *pick_small_m(p);  // not reached: small-m always yields
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
