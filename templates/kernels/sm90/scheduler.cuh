// templates/kernels/sm90/scheduler.cuh — the persistent walk of sm90::Gemm: which tiles a CTA computes,
// in which order, and (grouped GEMMs) which expert each belongs to.
//
// Persistent: the grid is min(tiles, SMs) (runtime/sm90_launch.cpp) and block b takes tiles b, b + grid,
// ... in the grouped order of common/raster.cuh (group_m tile rows walked column by column: the tiles in
// flight at once share few A and B panels in L2). The producer runs ahead into the next tile while the
// consumers store the current one. With split-K the walk's units are (tile, split) pairs
// (sm90/split_k.cuh); with ping-pong the two consumer warpgroups take alternate units (sm90/pingpong.cuh).
//
// Clusters (kClusterM = 2, opt-in): the walk is over cluster tiles (kClusterM tile rows x 1 tile
// column) by cluster id, and the two CTAs of a cluster compute vertically adjacent tiles (tile rows 2i,
// 2i + 1 of one tile column), so they need the same B tile, which they load half each and multicast
// (sm90/producer.cuh). A CTA whose tile row falls past M still loads and multicasts its half of B, and
// stores nothing.
//
// Grouped GEMMs (Config::kGrouping offsets or masked; common/gemm_params.cuh "Grouped GEMMs"). The
// per-expert row counts live on the device, so warp 0 of every CTA builds a table in shared memory before
// the first barrier (build_groups): per expert, its first row of X / Y, its row count (offsets sanitized
// as the portable family does: ends clamped to [0, M], non-decreasing; masked counts clamped to [0,
// max_m]) and the end of its cluster tiles in the walk (an inclusive prefix sum of ceil(ceil(rows /
// kBlockM) / kCluster) * tiles_n). The persistent walk then runs over all experts' cluster tiles at once —
// every SM busy whatever the routing — and tile_of finds a tile's expert with a binary search of the
// table, and its place inside the expert with the same grouped rasterization as a dense problem. X is one
// 2-D map over all M rows (a tile's rows past its expert's end read the next expert's rows or TMA's zeros
// and are never stored); W [E, N, K] is a 3-D map {K, N, E} (b_expert_stride elements apart), so a box
// never reaches into the next expert's weights. Scales follow the portable family: a's per-row / block
// scales by global row, b's tensor scale one per expert and its per-channel / block scales
// b_scale_expert_stride elements apart. The launch covers the worst case, (ceil(M / block_m) + E) *
// tiles_n cluster tiles, capped at the SMs.
//
// Grouped wgrad (kGroupedK: dW[e] = dY_eᵀ · X_e, the kernel's m = N, n = K, and its reduction k runs over
// the tokens). The experts' rows are the reduction, so every expert has the same ceil(N / kBlockM) x
// tiles_n tiles of its dW [N, K] (output rows e * N + ...), and the table's row base and count give a
// tile's K range instead: the expert's first row of dY and X and its row count (offsets sanitized against
// the total rows, masked counts against max_m). dY and X are 2-D maps over all rows; the producer loads
// atoms from the expert's first row on, so only the expert's last atom can reach past its rows (into the
// next expert's, the masked layout's padding, or TMA's zeros), and the consumers zero those rows of that
// stage before reading it (sm90/mainloop.cuh zero_k_tail). An expert without rows gets zero tiles. The
// launch covers E x tiles cluster tiles, capped at the SMs. Quantized (kGroupedKPadded: the FP8 column-wise
// copies dYᵀ [N, W] and Xᵀ [K, W] of the grouped quantizer), the table holds each expert's padded columns
// instead (rows rounded up to 128 after the earlier experts', clamped to W), the tile's K range is those
// absolute atoms (an atom's index is its scale column), and nothing is zeroed: the quantizer wrote zero codes
// in each expert's last block.
#pragma once

#include "common/gemm_params.cuh"
#include "common/raster.cuh"
#include "common/types.cuh"
#include "kernels/sm90/config.cuh"
#include "ptx/cluster.cuh"
#include "ptx/ld.cuh"
#include "ptx/warp.cuh"
#include "scheduler/group_tile.cuh"

namespace kiln_dev {
namespace sm90 {

// One output tile: rows [row0, min(row0 + kBlockM, row_end)) of Y (global rows: offsets and masked
// layouts count Y's rows as X's), tile column n, expert e (0 when dense). Rows >= row_end are computed
// from whatever X holds there (the next expert's rows, or TMA's zero fill) and never stored.
template <class Config>
struct Gemm<Config>::Tile {
  int row0;
  int row_end;
  int n;
  int e;
  int k0;      // grouped wgrad: the expert's first row of dY and X (the reduction's start; 0 when padded)
  int kb0;     // grouped quantized wgrad: the expert's first atom (and scale column) of the padded copies
  int k_rows;  // grouped wgrad: its rows (the reduction's length; padded: whole 128-token blocks)
};

// The persistent walk: cluster tiles (kCluster tile rows x 1 tile column) in grouped order, taken
// first, first + step, ...; this CTA computes tile row rank of each.
template <class Config>
struct Gemm<Config>::Walk {
  int ctiles_m;  // cluster-tile rows: ceil(tiles_m / kCluster)
  int tiles_n;
  int count;  // cluster tiles
  int first, step;
  int rank;  // this CTA's rank in its cluster
};

template <class Config>
__device__ __forceinline__ typename Gemm<Config>::Walk Gemm<Config>::make_walk(int tiles_m, int tiles_n,
                                                                               const Smem& sm) {
  Walk w;
  w.ctiles_m = (tiles_m + kCluster - 1) / kCluster;
  w.tiles_n = tiles_n;
  if constexpr (kGrouped) {
    w.count = int(lds_u32(sm.groups + 4 * (kExperts - 1)));  // the last expert's cluster-tile end
  } else {
    w.count = w.ctiles_m * tiles_n * kSplitK;  // units: cluster tiles x splits
  }
  if constexpr (kCluster == 1) {
    w.first = blockIdx.x;
    w.step = gridDim.x;
    w.rank = 0;
  } else {
    w.first = int(cluster_id_x());
    w.step = int(cluster_count_x());
    w.rank = int(cluster_ctarank());
  }
  return w;
}

template <class Config>
__device__ __forceinline__ typename Gemm<Config>::Tile Gemm<Config>::tile_of(const Walk& w, int ct,
                                                                             const GemmParams& p, const Smem& sm) {
  Tile r;
  r.k0 = r.kb0 = r.k_rows = 0;
  if constexpr (kGroupedK) {
    // Every expert has ctiles_m x tiles_n tiles (its dW [N, K]): the expert is a division away.
    const int per = w.ctiles_m * w.tiles_n;
    const int e = ct / per;
    const TileCoord t = grouped_tile(ct - e * per, w.ctiles_m, w.tiles_n, Config::kGroupM);
    r.row0 = e * p.m + t.m * kBlockM;
    r.row_end = e * p.m + p.m;
    r.n = t.n;
    r.e = e;
    const int base = int(lds_u32(sm.groups + 4 * (kExperts + e)));
    r.k0 = kGroupedKPadded ? 0 : base;
    r.kb0 = kGroupedKPadded ? base / kAtomK : 0;
    r.k_rows = int(lds_u32(sm.groups + 4 * (2 * kExperts + e)));
  } else if constexpr (kGrouped) {
    // The expert: the first whose cluster-tile end exceeds ct (binary search of the shared table).
    int lo = 0, hi = kExperts - 1;
    while (lo < hi) {
      const int mid = (lo + hi) >> 1;
      if (int(lds_u32(sm.groups + 4 * mid)) > ct) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    const int before = lo > 0 ? int(lds_u32(sm.groups + 4 * (lo - 1))) : 0;
    const int base = int(lds_u32(sm.groups + 4 * (kExperts + lo)));
    const int rows = int(lds_u32(sm.groups + 4 * (2 * kExperts + lo)));
    const int ctiles_m = ((rows + kBlockM - 1) / kBlockM + kCluster - 1) / kCluster;
    const TileCoord t = grouped_tile(ct - before, ctiles_m, w.tiles_n, Config::kGroupM);
    r.row0 = base + (t.m * kCluster + w.rank) * kBlockM;
    r.row_end = base + rows;
    r.n = t.n;
    r.e = lo;
  } else {
    const TileCoord t = grouped_tile(ct, w.ctiles_m, w.tiles_n, Config::kGroupM);
    r.row0 = (t.m * kCluster + w.rank) * kBlockM;
    r.row_end = p.m;
    r.n = t.n;
    r.e = 0;
  }
  return r;
}

// The per-expert table, built by warp 0 before the CTA's first barrier. Per expert: the end of its
// cluster tiles in the walk (an inclusive prefix sum of ceil(ceil(rows / kBlockM) / kCluster) *
// tiles_n), its first row of X / Y and its row count. Offsets are sanitized as the portable family does
// (scheduler/group_tile.cuh): ends clamped to [0, M] and made non-decreasing, so a malformed tensor gives
// empty or shortened groups, never an access outside X, Y or W; masked counts are clamped to [0, max_m].
template <class Config>
__device__ __forceinline__ void Gemm<Config>::build_groups(const GemmParams& p, const Smem& sm, int tiles_n,
                                                           int lane) {
  int tiles_before = 0, end_before = 0, padded_before = 0;
  for (int e0 = 0; e0 < kExperts; e0 += 32) {
    const int e = e0 + lane;
    int start = 0, rows = 0;
    if constexpr (kGrouping == Grouping::kOffsets) {
      // (Grouped wgrad: the rows are the reduction's, p.k of them.)
      int end;
      offsets_step(p.group_rows, kExperts, e0, kGroupedK ? p.k : p.m, lane, end_before, start, end);
      rows = end - start;
    } else {
      start = e * p.max_m;
      // (Grouped quantized wgrad: counts bounded by the copies' columns; max_m is not known there.)
      rows = e < kExperts ? clamp_int(ldg_s32(p.group_rows + e), 0, kGroupedKPadded ? p.k : p.max_m) : 0;
    }
    // Grouped quantized wgrad: the expert's columns of the padded copies, [start, start + rows) with rows
    // rounded up to whole 128-token blocks, starts the running sum of those (the grouped quantizer's
    // layout, kernels/quantize.cuh), clamped to the copies' p.k columns (a malformed row vector then reads
    // fewer columns, never past the copies or their scales).
    if constexpr (kGroupedKPadded) {
      const int padded = (rows + kAtomK - 1) / kAtomK * kAtomK;
      const int pend = padded_before + warp_inclusive_sum(padded, lane);
      const int pstart = pend - padded;
      start = pstart < p.k ? pstart : p.k;
      rows = (pend < p.k ? pend : p.k) - start;
      padded_before = shfl_idx(pend, 31);
    }
    // Grouped wgrad: the expert's tiles cover its dW [N, K] (p.m = N rows) whatever its row count.
    const int tile_rows = ((kGroupedK ? p.m : rows) + kBlockM - 1) / kBlockM;
    const int ctiles = (tile_rows + kCluster - 1) / kCluster * tiles_n;
    const int incl = warp_inclusive_sum(ctiles, lane);
    if (e < kExperts) {
      sts_u32(sm.groups + 4 * e, u32(tiles_before + incl));
      sts_u32(sm.groups + 4 * (kExperts + e), u32(start));
      sts_u32(sm.groups + 4 * (2 * kExperts + e), u32(rows));
    }
    tiles_before += shfl_idx(incl, 31);
  }
}

// b's scale tensor of the tile's expert (grouped: b_scale_expert_stride scale elements apart).
template <class Config>
template <ScaleType kType>
__device__ __forceinline__ const float* Gemm<Config>::b_scale_of(const GemmParams& p, int e) {
  if constexpr (!kGrouped || kGroupedK) return p.b_scale;  // grouped wgrad: Xᵀ's scales cover every expert
  return reinterpret_cast<const float*>(reinterpret_cast<const u8*>(p.b_scale) +
                                        i64(e) * p.b_scale_expert_stride * (kType == ScaleType::kF32 ? 4 : 1));
}

}  // namespace sm90
}  // namespace kiln_dev
