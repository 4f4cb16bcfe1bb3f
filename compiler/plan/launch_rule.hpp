// compiler/plan/launch_rule.hpp — how one planned kernel launches, as a function of M.
//
// A plan fixes N, K, the spec and, per M bucket, a family and a config; only M (the rows of X, all
// experts' for grouped problems) arrives with each run. Everything a launch needs that depends on M —
// the grid, the split-K tile slots, the workspace bytes, the MXFP8 pre-pass layout, the quantizer's
// phases — is a small closed formula in M whose coefficients the planner knows. The planner records
// those coefficients once (make_launch_rule); Plan::run evaluates them with a few integer operations
// and never calls back into planning. The planner's own size queries (launch_shape,
// sm90_workspace_bytes, quantize_launch_shape, ...) are answered by the same rules, so the two can
// not disagree.
//
//   LaunchRule r = kiln::make_launch_rule(spec, family, cfg, n, k);   // at plan time
//   LaunchShape ls = r.shape(m);                                     // at run time
//   int64_t need = r.workspace_bytes(m);                             // split-K partials and counters
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "kiln/config.hpp"
#include "kiln/spec.hpp"

namespace kiln {

struct LaunchShape {
  unsigned grid_x = 1, grid_y = 1, grid_z = 1;
  unsigned block_x = 1;
  int dynamic_smem = 0;
};

// The M buckets a plan distinguishes: a config per bucket, chosen at run time as the nearest bucket at
// or above the rows (the last one for more rows). Tunings are keyed by the same list.
inline constexpr std::array<int64_t, 17> kMBuckets = {1,   2,   4,   8,    16,   24,   32,   48,  64,
                                                      96,  128, 256, 512,  1024, 2048, 4096, 8192};
inline int bucket_index(int64_t m) {
  for (size_t i = 0; i < kMBuckets.size(); ++i)
    if (m <= kMBuckets[i]) return static_cast<int>(i);
  return static_cast<int>(kMBuckets.size()) - 1;
}
// The rows an M bucket is chosen by, for a problem of m rows of X in all: rows per expert, rounded up
// (ceil(m / E); masked layouts hold E x max_m rows, so max_m), for a grouped problem; m for a dense one.
// Plans, tunings, the tuner's search space and Plan::run all bucket by this one rule.
inline int64_t rows_per_expert(const KernelSpec& spec, int64_t m) {
  if (spec.op == Op::kGroupedGemm && spec.experts > 0)
    return (std::max<int64_t>(m, 1) + spec.experts - 1) / spec.experts;
  return m;
}

// The kernels index rows, columns and K with int.
inline constexpr int64_t kLaunchMaxIndex = (int64_t{1} << 31) - 1;
inline constexpr unsigned kLaunchMaxGridY = 65535;
// The sm90 family's split-K counter region (32-bit counters, one per tile slot), ahead of its partials;
// the MXFP8 pre-pass's copies start after it, so one caller workspace serves both.
inline constexpr int64_t kSm90SplitCounterSlots = 1 << 18;
// The sm90 family's TMA boxes of an MN-major operand are this many elements of its contiguous dimension
// (templates/kernels/sm90/config.cuh kMnChunk).
inline constexpr int kSm90MnChunk = 64;

// One launch of a multi-phase kernel (the quantize family): blocks(m) = min(cap, mult *
// (round(m * num / den) + add)) with round = floor or ceil, at least 1.
struct PhaseRule {
  int phase = 0;
  int64_t num = 0, den = 1, mult = 1, cap = kLaunchMaxIndex, add = 0;
  bool floor = false;
};

struct LaunchRule {
  enum class Grid : uint8_t {
    kTiles,       // sm80 family (and its decode kernel): one CTA per block_m x block_n tile
    kPersistent,  // sm90 family: one CTA per (cluster) tile and split, capped by the runtime at the SMs
    kReference,   // 16 x 16 outputs per CTA on a 2-D grid
    kMxDequant,   // one thread per 8 elements of both operands, capped by the runtime at residency
    kPhases,      // quantize family: one launch per phase (phases[0 .. phase_count))
  };
  Grid grid = Grid::kTiles;
  unsigned block_x = 1;
  int dynamic_smem = 0;
  // Tile grids (kTiles, kPersistent; kReference uses block_m / tiles_n for its 16 x 16 tiles).
  int block_m = 1;
  int64_t tiles_n = 1;   // ceil(N / block_n)
  int cluster_m = 1;
  int split_k = 1;
  int consumers = 1;     // sm90: consumer warpgroups per CTA (split-K tile slots per cluster tile)
  int64_t experts = 0;   // grouped problems: expert count (0 dense)
  // wgrad (compiler/plan/gemm_view.hpp): the kernel's rows are N, fixed by the plan, and the caller's M is
  // the reduction: the grid does not depend on M (0: the kernel's rows are M).
  int64_t fixed_m = 0;
  bool masked = false;   // grouped masked layout ([E, max_m] rows)
  // kPersistent split-K: f32 partial bytes of one consumer's tile (one slot, one split).
  int64_t partial_bytes = 0;
  // kPersistent: the TMA boxes the runtime encodes (A and B rows of box_k elements; the output's
  // warpgroup slab in boxes of out_box_cols columns, 128-byte swizzled or not).
  int box_k = 0, box_b_rows = 0, out_box_rows = 0, out_box_cols = 0;
  bool out_swizzle128() const { return out_box_cols != 16; }  // 16-column boxes go unswizzled
  // kMxDequant: rows of W converted alongside X (N, grouped E x N), and K.
  int64_t w_rows = 0, k = 0;
  // kPhases.
  std::array<PhaseRule, 4> phases{};
  int phase_count = 0;
  int main_phase = 0;  // the phase shape() describes (the quantize pass itself)

  // Tile rows for m rows of X (grouped offsets: one partial tile per expert at most; masked: every
  // expert's max_m rows tiled on their own).
  int64_t rows(int64_t m) const { return fixed_m > 0 ? fixed_m : m; }
  int64_t tiles_m(int64_t m) const {
    const int64_t m1 = std::max<int64_t>(rows(m), 1);
    if (masked && experts > 0) {
      const int64_t max_m = (m1 + experts - 1) / experts;
      return experts * ((max_m + block_m - 1) / block_m);
    }
    return (m1 + block_m - 1) / block_m + experts;
  }
  // sm90: cluster tiles of a dense problem (cluster_m tile rows x 1 tile column).
  int64_t cluster_tiles(int64_t m) const {
    const int64_t m1 = std::max<int64_t>(rows(m), 1);
    const int64_t rows = (m1 + block_m - 1) / block_m;
    return ((rows + cluster_m - 1) / cluster_m) * tiles_n;
  }
  // sm90 split-K: tile slots (one per consumer of every cluster tile) for m rows.
  int64_t split_slots(int64_t m) const { return cluster_tiles(m) * consumers; }
  // Device workspace bytes a launch for m rows needs (split-K's counters and partials; 0 for most).
  int64_t workspace_bytes(int64_t m) const {
    if (grid != Grid::kPersistent || split_k <= 1) return 0;
    return kSm90SplitCounterSlots * 4 + split_slots(m) * split_k * partial_bytes;
  }

  LaunchShape shape(int64_t m) const {
    LaunchShape ls;
    ls.block_x = block_x;
    ls.dynamic_smem = dynamic_smem;
    const int64_t m1 = std::max<int64_t>(m, 1);
    switch (grid) {
      case Grid::kTiles:
        ls.grid_x = static_cast<unsigned>(std::min<int64_t>(tiles_m(m) * tiles_n, kLaunchMaxIndex));
        break;
      case Grid::kPersistent: {
        const int64_t units = experts > 0 ? tiles_m(m) * tiles_n : cluster_tiles(m) * split_k;
        ls.grid_x = static_cast<unsigned>(std::min<int64_t>(units * cluster_m, kLaunchMaxIndex - 1));
        break;
      }
      case Grid::kReference:
        ls.grid_x = static_cast<unsigned>(std::min<int64_t>(tiles_n, kLaunchMaxIndex));
        ls.grid_y = static_cast<unsigned>(
            std::min<int64_t>((std::max<int64_t>(rows(m), 1) + block_m - 1) / block_m, kLaunchMaxGridY));
        break;
      case Grid::kMxDequant: {
        const int64_t chunks = (m1 + w_rows) * std::max<int64_t>(k, 8) / 8;
        ls.grid_x = static_cast<unsigned>(std::min<int64_t>((chunks + 255) / 256, kLaunchMaxIndex));
        break;
      }
      case Grid::kPhases: ls = phase_shape(m, main_phase); break;
    }
    return ls;
  }
  // kPhases: the launch of `phase` for m rows (grid 1 for a phase the rule does not list).
  LaunchShape phase_shape(int64_t m, int phase) const {
    LaunchShape ls;
    ls.block_x = block_x;
    ls.dynamic_smem = dynamic_smem;
    const int64_t m1 = std::max<int64_t>(m, 1);
    int64_t blocks = 1;
    for (int i = 0; i < phase_count; ++i) {
      const PhaseRule& p = phases[static_cast<size_t>(i)];
      if (p.phase != phase) continue;
      const int64_t q = p.floor ? m1 * p.num / p.den : (m1 * p.num + p.den - 1) / p.den;
      blocks = std::min(p.cap, p.mult * (q + p.add));
    }
    ls.grid_x = static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, kLaunchMaxIndex));
    return ls;
  }
};

// The rule of the kernel (family, cfg) of spec for problems of N = n, K = k (grouped: per expert); for a
// backward spec the forward's N and K (the rule tiles the pass's own GEMM, compiler/plan/gemm_view.hpp).
LaunchRule make_launch_rule(const KernelSpec& spec, KernelFamily family, const TileConfig& cfg, int64_t n, int64_t k);

// The MXFP8 pre-pass's workspace layout for m rows of X: the split-K counter region stays untouched,
// then X's bf16 copy, then W's (grouped: every expert's).
// Workspace regions start on 256-byte boundaries.
inline int64_t align256(int64_t v) { return (v + 255) / 256 * 256; }

struct MxPrepassLayout {
  int64_t min_rows = 0;  // no pre-pass below this many rows of X (grouped: per expert on average, times E)
  int64_t n = 0, k = 0, experts = 1;
  bool k_ok = false;     // K % 32 == 0
  int64_t a_offset() const { return kSm90SplitCounterSlots * 4; }
  int64_t b_offset(int64_t m) const { return a_offset() + align256(m * k * 2); }
  // Bytes of workspace the pre-pass takes for m rows (0: no pre-pass at this m).
  int64_t bytes(int64_t m) const {
    if (m < min_rows || !k_ok) return 0;
    return b_offset(m) + align256(experts * n * k * 2);
  }
};
MxPrepassLayout make_mx_prepass_layout(const KernelSpec& spec, int64_t n, int64_t k);

// A quantized dgrad's transposed copy of W (compiler/plan/gemm_view.hpp dgrad_reads_transposed_w;
// runtime/dgrad_transpose.hpp) in the workspace, after what the bucket's kernel needs (split-K's counters
// and partials): the codes Wᵀ [E, K, N], then, for 128 x 128 block scales, their transposed grid
// [E, K/128, ceil(N/128)]. Per-tensor scales stay where the caller holds them. Its size and the transpose's
// grid (kernels/fp8_transpose.cuh: one CTA of 256 threads per 128 x 128 tile) do not depend on M.
struct TransposedWLayout {
  int64_t n = 0, k = 0, experts = 0;  // experts 0: the plan has no transposed copy
  int scale_bytes = 0;                // 4 (f32 blocks), 1 (E8M0 blocks), 0 (tensor scales)
  // The region's offset in a workspace whose first `own` bytes the bucket's kernel uses.
  static int64_t offset(int64_t own) { return align256(own); }
  int64_t n_blocks() const { return (n + 127) / 128; }
  int64_t k_blocks() const { return (k + 127) / 128; }
  int64_t codes_bytes() const { return experts * n * k; }
  int64_t scales_offset() const { return align256(codes_bytes()); }  // from the region's start
  int64_t scales_bytes() const { return experts * k_blocks() * n_blocks() * scale_bytes; }
  int64_t bytes() const { return experts == 0 ? 0 : scales_offset() + align256(scales_bytes()); }
  LaunchShape shape() const {
    LaunchShape ls;
    ls.block_x = 256;  // kiln_dev::kTransposeThreads
    ls.grid_x = static_cast<unsigned>(std::min<int64_t>(k_blocks(), kLaunchMaxIndex));
    ls.grid_y = static_cast<unsigned>(std::min<int64_t>(n_blocks(), kLaunchMaxGridY));
    ls.grid_z = static_cast<unsigned>(std::max<int64_t>(experts, 1));
    return ls;
  }
};
// The layout of spec's copy for the forward's N and K (experts 0 unless dgrad_reads_transposed_w(spec)).
TransposedWLayout make_transposed_w_layout(const KernelSpec& spec, int64_t n, int64_t k);

}  // namespace kiln
