// tuner/config_space.hpp — the tile configurations a family may run on an arch, statically pruned.
//
// The autotuner (tuner issue) searches this space; here it is enumerated and pruned by
// check_config (shared memory per arch, warp tiling, block_k bytes), so every config it returns
// compiles. Pure host code.
//
//   std::vector<TileConfig> space = kiln::config_space(spec, arch);
#pragma once

#include <vector>

#include "compiler/plan/plan.hpp"

namespace kiln {

std::vector<TileConfig> config_space(const KernelSpec& spec, const Arch& arch);

}  // namespace kiln
