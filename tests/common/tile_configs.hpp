// tests/common/tile_configs.hpp — a TileConfig from its leading fields (the rest at their defaults),
// for the tests that pin configs by hand.
#pragma once

#include "kiln/config.hpp"

namespace kiln::test {

inline TileConfig tile_config(int bm, int bn, int bk, int stages, int wm, int wn, int group_m = 8,
                              int cluster_m = 1) {
  TileConfig c;
  c.block_m = bm;
  c.block_n = bn;
  c.block_k = bk;
  c.stages = stages;
  c.warps_m = wm;
  c.warps_n = wn;
  c.group_m = group_m;
  c.cluster_m = cluster_m;
  return c;
}

}  // namespace kiln::test
