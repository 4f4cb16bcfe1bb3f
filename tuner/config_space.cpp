#include "tuner/config_space.hpp"

namespace kiln {

std::vector<TileConfig> config_space(const KernelSpec& spec, const Arch& arch) {
  std::vector<TileConfig> out;
  const int elem_bytes = format_bits(spec.a.format) / 8;
  for (int bm : {32, 64, 128, 256}) {
    for (int bn : {32, 64, 128, 256}) {
      for (int row_bytes : {64, 128}) {
        for (int stages : {2, 3, 4, 5}) {
          for (int wm : {1, 2, 4}) {
            for (int wn : {1, 2, 4}) {
              TileConfig c;
              c.block_m = bm;
              c.block_n = bn;
              c.block_k = row_bytes / elem_bytes;
              c.stages = stages;
              c.warps_m = wm;
              c.warps_n = wn;
              c.group_m = 8;
              if (check_config(spec, arch, c).ok()) out.push_back(c);
            }
          }
        }
      }
    }
  }
  return out;
}

}  // namespace kiln
