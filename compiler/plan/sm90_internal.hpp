// compiler/plan/sm90_internal.hpp — private to compiler/plan's sm90 files: the tile arithmetic that
// the config checks (sm90_plan.cpp), the default heuristic and tuning space (sm90_heuristic.cpp) and
// the launch layout (sm90_layout.cpp) share. Every formula mirrors templates/kernels/sm90/config.cuh.
#pragma once

#include <algorithm>

#include "compiler/plan/sm90_plan.hpp"

namespace kiln::sm90_internal {

inline constexpr int kRowBytes = 128;  // one 128-byte swizzle atom of K per stage

inline int elem_bytes(Format f) { return std::max(1, format_bits(f) / 8); }

// Consumer warpgroups: warps_m / 4 x warps_n sharing each tile, or two taking whole tiles in turn
// (pingpong; warps 4 x 1).
inline int consumers(const TileConfig& c) { return c.pingpong ? 2 : (c.warps_m / 4) * c.warps_n; }

// 128-byte swizzle atoms of K per stage (1 or 2 for a valid config; MXFP8 with block_k 64 stages one
// atom of bf16: the kernel's dequantizing producer, sm90/mx_dequant.cuh).
inline int atoms(const KernelSpec& spec, const TileConfig& c) {
  if (sm90_mx_dequant(spec, c)) return 1;
  return c.block_k * elem_bytes(spec.a.format) / kRowBytes;
}

// One consumer warpgroup's tile: block_m / (warps_m / 4) x block_n / warps_n (the whole tile with
// ping-pong's warps 4 x 1).
inline int wg_tile_m(const TileConfig& c) { return c.block_m / std::max(1, c.warps_m / 4); }
inline int wg_tile_n(const TileConfig& c) { return c.block_n / std::max(1, c.warps_n); }

// Accumulator registers per consumer thread: the warpgroup tile over 128 threads.
inline int acc_regs(const TileConfig& c) { return wg_tile_m(c) * wg_tile_n(c) / 128; }

// Columns per TMA-store box (the kernel's TMA-store epilogue, sm90/epilogue_tma_store.cuh): 128 bytes
// of a row where a warpgroup's columns are a whole number of those, else 16.
int out_box_cols(const KernelSpec& spec, const TileConfig& cfg);

// Shared memory of cfg's kernel, with or without the staged block-scale slots (sm90_smem_bytes takes
// them where sm90_staged_scales says so).
int sm90_smem_bytes_with_slots(const KernelSpec& spec, const TileConfig& cfg, bool staged_slots);

// The tile grid of cfg's persistent launch for N = n (block_m, column tiles, clusters, splits,
// consumers): the spec-independent part of make_launch_rule's sm90 rule (launch_rule.cpp).
LaunchRule tile_grid(const TileConfig& cfg, int64_t n);

}  // namespace kiln::sm90_internal
