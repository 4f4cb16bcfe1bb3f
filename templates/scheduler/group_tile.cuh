// templates/scheduler/group_tile.cuh — which output tile (of which expert) a block computes.
//
// Dense: tile (m, n) of the tiles_m x tiles_n grid, in the grouped rasterization order of
// common/raster.cuh.
//
// Grouped, offsets layout (docs/architecture.md, "Grouped GEMM contract"): the host knows only the total row
// count M and the number of experts E — never the per-expert counts, which live on the device. An
// expert with r rows needs ceil(r / block_m) tile rows, and sum_e ceil(r_e / block_m) <=
// sum_e (r_e / block_m + 1) <= M / block_m + E, so the host launches tiles_m = ceil(M / block_m) + E
// "virtual" tile rows and each block finds its (expert, local tile row) by scanning the offsets; the
// blocks past the last real tile exit at once. The scan is done by every warp on its own, 32 experts
// per step, with shuffles: no shared memory and no barrier (E = 128 costs 4 steps of one coalesced
// load and two 5-step warp scans). Offsets are sanitized, never trusted: ends are clamped to [0, M]
// and made non-decreasing (a running max), so a malformed tensor yields empty or shortened groups
// but no access outside X, Y or W.
//
// Grouped, masked layout: X [E, max_m, K], an int32 count per expert. tiles_m = E * ceil(max_m /
// block_m); tile row t belongs to expert t / tiles_per_expert; blocks whose rows start at or past the
// (clamped) count exit at once.
//
// Every thread of a block must call tile_work (the offsets scan uses full-warp shuffles).
#pragma once

#include "common/gemm_params.cuh"
#include "common/raster.cuh"
#include "common/types.cuh"
#include "ptx/ld.cuh"
#include "ptx/warp.cuh"

namespace kiln_dev {

// The work of one block: output rows [row_base + m0, row_base + min(m0 + block_m, rows)) of group
// `expert`, columns [n0, n0 + block_n) clipped to N. Rows of X, Y and of per-row scales are counted
// from row_base; W and its scales belong to `expert` (0 when dense).
struct TileWork {
  bool valid;
  int expert;
  long long row_base;
  int rows;  // rows of the group (dense: M)
  int m0;    // first row of the tile within the group
  int n0;
};

// Host and device agree on the virtual tile rows a launch covers (compiler/plan launch_shape).
__host__ __device__ constexpr long long group_tiles_m(Grouping g, long long m, int experts, int max_m,
                                                      int block_m) {
  return g == Grouping::kDense     ? (m + block_m - 1) / block_m
         : g == Grouping::kMasked ? (long long)experts * ((max_m + block_m - 1) / block_m)
                                   : (m + block_m - 1) / block_m + experts;
}

__device__ __forceinline__ int clamp_int(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

// Inclusive prefix sum over the warp's lanes (every lane gets its own).
__device__ __forceinline__ int warp_inclusive_sum(int v, int lane) {
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int o = shfl_up(v, d);
    if (lane >= d) v += o;
  }
  return v;
}

// One 32-expert step of the sanitized offsets walk, shared by every grouped kernel: lane's expert e0 + lane
// gets its rows [start, end), the ends clamped to [0, limit] and made non-decreasing after end_before (an
// inclusive running max), experts past `experts` empty; end_before moves to the step's last end. Every lane
// of the warp must call it (full-warp shuffles).
__device__ __forceinline__ void offsets_step(const int* group_rows, int experts, int e0, int limit, int lane,
                                             int& end_before, int& start, int& end) {
  const int e = e0 + lane;
  end = e < experts ? clamp_int(ldg_s32(group_rows + e), 0, limit) : 0;
  if (end < end_before) end = end_before;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int o = shfl_up(end, d);
    if (lane >= d && o > end) end = o;
  }
  start = shfl_up(end, 1);
  if (lane == 0) start = end_before;
  end_before = shfl_idx(end, 31);
}

// Offsets layout: the expert owning virtual tile row tm, and the tile's place in it.
template <int kBlockM>
__device__ __forceinline__ TileWork find_offsets_tile(const GemmParams& p, long long tm, int n0) {
  TileWork w{false, 0, 0, 0, 0, n0};
  const int lane = threadIdx.x & 31;
  long long tiles_before = 0;  // tile rows of the experts of earlier chunks
  int end_before = 0;          // row end of the last expert of earlier chunks
  for (int e0 = 0; e0 < p.experts; e0 += 32) {
    int start, end;
    offsets_step(p.group_rows, p.experts, e0, p.m, lane, end_before, start, end);
    const int tiles = (end - start + kBlockM - 1) / kBlockM;
    // Inclusive prefix sum of the tile counts (< 2^31: M < 2^31, E <= 65536).
    const int incl = warp_inclusive_sum(tiles, lane);
    const long long target = tm - tiles_before;
    const u32 hit = warp_ballot(target >= 0 && incl > target);
    if (hit != 0) {
      const int src = lowest_set_bit(hit);
      const int excl = shfl_idx(incl - tiles, src);
      w.valid = true;
      w.expert = e0 + src;
      w.row_base = shfl_idx(start, src);
      w.rows = shfl_idx(end, src) - int(w.row_base);
      w.m0 = int(target - excl) * kBlockM;
      return w;
    }
    tiles_before += shfl_idx(incl, 31);
  }
  return w;
}

template <Grouping kGrouping, int kBlockM, int kBlockN>
__device__ __forceinline__ TileWork tile_work(const GemmParams& p, int group_m) {
  const int tiles_n = (p.n - 1) / kBlockN + 1;
  const long long tiles_m = group_tiles_m(kGrouping, p.m, p.experts, p.max_m, kBlockM);
  // tiles_m * tiles_n < 2^31: the planner bounds the grid (blockIdx.x is one block per tile).
  const TileCoord t = grouped_tile(blockIdx.x, int(tiles_m), tiles_n, group_m);
  TileWork w{false, 0, 0, p.m, t.m * kBlockM, t.n * kBlockN};
  if (t.m >= tiles_m) return w;  // launch_shape launches exactly tiles_m * tiles_n blocks
  if constexpr (kGrouping == Grouping::kDense) {
    w.valid = true;
  } else if constexpr (kGrouping == Grouping::kMasked) {
    const int per_expert = (p.max_m - 1) / kBlockM + 1;
    w.expert = t.m / per_expert;
    w.m0 = (t.m - w.expert * per_expert) * kBlockM;
    w.rows = clamp_int(ldg_s32(p.group_rows + w.expert), 0, p.max_m);
    w.row_base = (long long)w.expert * p.max_m;
    w.valid = w.m0 < w.rows;
  } else {
    static_assert(kGrouping == Grouping::kOffsets, "tile_work: dense, offsets or masked");
    w = find_offsets_tile<kBlockM>(p, t.m, t.n * kBlockN);
  }
  return w;
}

}  // namespace kiln_dev
