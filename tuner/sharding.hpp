// tuner/sharding.hpp — spreading `kiln tune` over several GPUs: one process per device.
//
// `kiln tune --devices 0,1,2,3 ...` starts one child `kiln tune ... --shard i/4` per device with
// CUDA_VISIBLE_DEVICES=<device>; every child computes its own shard from the same shape list with
// shard_shapes() (a pure function), tunes it and writes its winners into the shared user database
// (WAL, BEGIN IMMEDIATE, UPSERT keeping the faster: safe from many processes). The parent waits and
// prints one summary. One device (or none given) runs in the calling process, no children.
// Shards balance the static cost (tuning_cost): greedy longest-first onto the least loaded shard.
//
//   std::vector<std::vector<size_t>> shards = kiln::shard_shapes(shapes, 4);  // indexes into shapes
#pragma once

#include <string_view>
#include <vector>

#include "tuner/tuner.hpp"

namespace kiln {

// Relative cost of tuning a shape: a fixed compile part (the candidates compile whatever the size)
// plus a timing part that grows with the FLOPs. Only ratios matter.
double tuning_cost(const TuneShape& shape);
// shards >= 1. Every index appears in exactly one shard; shard order and the order inside a shard
// follow the input order, so the split is reproducible.
std::vector<std::vector<size_t>> shard_shapes(const std::vector<TuneShape>& shapes, int shards);
// "0,1,3" -> {0, 1, 3}: distinct non-negative ordinals, at least one.
StatusOr<std::vector<int>> parse_device_list(std::string_view text);
// "2/4" -> {2, 4} with 0 <= index < count.
StatusOr<std::pair<int, int>> parse_shard(std::string_view text);

}  // namespace kiln
