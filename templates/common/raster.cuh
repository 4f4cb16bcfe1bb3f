// templates/common/raster.cuh — which output tile a block computes (grouped rasterization).
//
// Blocks launch in blockIdx.x order, and blocks resident at the same time share the L2. Walking the
// tile grid row by row makes neighbours share one A row-panel but touch tiles_n different B panels;
// grouping group_m tile rows and walking the group column by column makes a wave of blocks reuse a
// few A panels and a few B panels (the "grouped ordering" of GEMM schedulers). With group_m = 1 it
// degenerates to row-major order; the last group may hold fewer than group_m rows.
#pragma once

#include "common/types.cuh"

namespace kiln_dev {

struct TileCoord {
  int m;  // tile row    (output rows    m * block_m ..)
  int n;  // tile column (output columns n * block_n ..)
};

// Linear block index -> tile, for a tiles_m x tiles_n grid. 64-bit intermediates: group_m * tiles_n
// may exceed 2^31 for huge N; this runs once per block, outside every loop.
__device__ __forceinline__ TileCoord grouped_tile(long long pid, int tiles_m, int tiles_n, int group_m) {
  const long long blocks_per_group = (long long)group_m * tiles_n;
  const long long group = pid / blocks_per_group;
  const long long first_m = group * group_m;
  const long long rows = (tiles_m - first_m) < group_m ? (tiles_m - first_m) : group_m;
  const long long in_group = pid - group * blocks_per_group;
  TileCoord t;
  t.m = int(first_m + in_group % rows);
  t.n = int(in_group / rows);
  return t;
}

}  // namespace kiln_dev
