// tuner/config_space.hpp — the tile configurations a family may run on an arch, and the ones worth
// timing for one shape on one GPU.
//
// config_space() enumerates the grid of the family select_family picks — sm80_gemm: block_m,
// block_n in 16..256, block_k 16..128 elements, 2..6 stages, 1/2/4 x 1/2/4 warps; sm90_gemm: the
// family's own list (sm90_config_space: warpgroup tilings x rasterization groups x ring depths) —
// and keeps what check_config accepts, so every config it returns compiles. prune_space() then applies the
// static model (tuner/static_model.hpp) for a shape:
//   1. residency: a config that fits no block on an SM is dropped;
//   2. padding: a block_m (block_n) of at least twice the 16-rounded M (N) computes mostly padding;
//      dropped when a smaller one survives;
//   3. waves: a config whose last wave keeps fewer than min_last_wave_fill of the SMs busy (default
//      25%) and whose tail idles the SMs for more than max_tail_idle of the run ((1 - fill) /
//      ceil(waves), default 10%) is dropped when another config passes;
//   4. rank: the survivors are ordered by the model's estimated time and the first max_candidates
//      kept. The heuristic's own config (default_config) is always kept, as the baseline.
// Every dropped config is accounted for by rule, so `kiln tune --dry-run` can show why.
//
//   PrunedSpace s = kiln::prune_space(spec, kiln::gpu_model(arch, 132), {.m = 64, .n = 5760, .k = 2880});
//   for (const PrunedCandidate& c : s.kept) ...   // best estimate first
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <optional>
#include <vector>

#include "compiler/plan/plan.hpp"
#include "tuner/static_model.hpp"

namespace kiln {

// Every config of the family's grid that check_config accepts for arch (empty when the spec has no
// family on arch). dropped_by_rule, when given, counts the rejected ones by reason. family: the grid
// searched (select_family's by default).
std::vector<TileConfig> config_space(const KernelSpec& spec, const Arch& arch,
                                     std::map<std::string, int>* dropped_by_rule = nullptr,
                                     std::optional<KernelFamily> family = std::nullopt);

struct PruneOptions {
  double min_last_wave_fill = 0.25;
  double max_tail_idle = 0.10;  // rule 3 spares many-wave configs whose thin last wave costs little
  size_t max_candidates = 48;  // 0: no cap
  // The family whose space is searched (select_bucket_family: an sm90 plan's grouped FP8 decode
  // buckets are the portable family's); select_family's by default.
  std::optional<KernelFamily> family;
};

struct PrunedCandidate {
  TileConfig config;
  ConfigEstimate estimate;
  bool is_default = false;  // default_config() for this shape: always kept, the baseline
};

struct PrunedSpace {
  KernelFamily family = KernelFamily::kSm80Gemm;
  size_t enumerated = 0;                       // grid points considered
  std::map<std::string, int> dropped_by_rule;  // "shared memory", "registers", "waves", "rank", ...
  std::vector<PrunedCandidate> kept;           // by estimated time, best first
};

PrunedSpace prune_space(const KernelSpec& spec, const GpuModel& gpu, const ProblemSizes& sizes,
                        const PruneOptions& options = {});

}  // namespace kiln
