// templates/kernels/sm90/split_k.cuh — split-K in sm90::Gemm: kSplitK CTAs share one tile's K range and
// the last to finish sums the partials.
//
// Split-K (split_k = 2..64; dense, no clusters): the walk's unit u is split u % kSplitK of cluster tile u /
// kSplitK (unit_tile), and a split's K range is a contiguous run of whole stages (k_range). Each consumer
// warpgroup of a split writes its f32 accumulators to the workspace and takes a ticket on its (tile,
// warpgroup) counter; the last of the kSplitK to arrive sums all of them in split order and runs the
// epilogue, the others go on to their next unit (split_reduce). The sum does not depend on which split
// finished last, so results are deterministic. A split with no K (more splits than stages of K) writes
// zeros.
#pragma once

#include "common/types.cuh"
#include "kernels/sm90/config.cuh"
#include "ptx/ld.cuh"
#include "ptx/sync.cuh"

namespace kiln_dev {
namespace sm90 {

// Atoms [begin, end) of K.
template <class Config>
struct Gemm<Config>::KRange {
  int begin, end;
};

// The cluster tile of walk unit u.
template <class Config>
__device__ __forceinline__ int Gemm<Config>::unit_tile(int u) {
  return kSplit ? u / kSplitK : u;
}

// The K range of walk unit u: all k_tiles atoms, or split u % kSplitK's share of whole stages.
template <class Config>
__device__ __forceinline__ typename Gemm<Config>::KRange Gemm<Config>::k_range(int u, int k_tiles) {
  if constexpr (!kSplit) {
    return KRange{0, k_tiles};
  } else {
    const int s = u % kSplitK;
    const int steps = (k_tiles + kAtoms - 1) / kAtoms;
    const int b = int(i64(steps) * s / kSplitK) * kAtoms;
    const int e = int(i64(steps) * (s + 1) / kSplitK) * kAtoms;
    return KRange{b, e < k_tiles ? e : k_tiles};
  }
}

// The K range of walk unit u whose tile is `tile`: k_range, or with grouped wgrad the atoms of the tile's
// expert's rows (sm90/scheduler.cuh): counted from the expert's first row (16-bit, tile.kb0 = 0), or the
// expert's absolute atoms of the padded column-wise copies (quantized), so that an atom's index is also its
// scale column.
template <class Config>
__device__ __forceinline__ typename Gemm<Config>::KRange Gemm<Config>::tile_k_range(int u, const Tile& tile,
                                                                                   int k_tiles) {
  if constexpr (kGroupedK) {
    return KRange{tile.kb0, tile.kb0 + (tile.k_rows + kAtomK - 1) / kAtomK};
  } else {
    return k_range(u, k_tiles);
  }
}

// This warpgroup's part of split s of tile ct. Writes its accumulators to the workspace, takes a ticket
// on the (tile, warpgroup) counter, and returns false unless it was the last of the kSplitK splits to
// arrive; the last one resets the counter for the next launch and sums all kSplitK partials IN SPLIT
// ORDER (its own included), so the result does not depend on which split finished last. Workspace: a
// FIXED region of kSplitCounterSlots int counters (so no launch, whatever its M or config, ever finds its
// counters on bytes another launch used for partials; only the counters need to be zero between
// launches), then f32 partials [ctiles * kConsumers][kSplitK][kMmaM * kAccRegs][128 threads] (host
// mirror: sm90_workspace_bytes; the runtime refuses more tiles than counters).
template <class Config>
__device__ __forceinline__ bool Gemm<Config>::split_reduce(float (&acc)[kMmaM][kAccRegs], void* ws, int ct, int s,
                                                           int consumer, int tid, const Smem& sm) {
  constexpr int kRegs = kMmaM * kAccRegs;
  const int slot = ct * kConsumers + consumer;
  u8* base = static_cast<u8*>(ws);
  const i64 counter_bytes = i64(kSplitCounterSlots) * 4;
  float* parts = reinterpret_cast<float*>(base + counter_bytes) + i64(slot) * kSplitK * kRegs * 128 + tid;
  float* mine = parts + i64(s) * kRegs * 128;
#pragma unroll
  for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
    for (int i = 0; i < kAccRegs; ++i) stg_f32(mine + (mi * kAccRegs + i) * 128, acc[mi][i]);
  }
  fence_gpu();  // the partial is visible GPU-wide before the ticket is taken
  named_barrier_sync(1 + consumer, 128);
  if (tid == 0) {
    u32* counter = reinterpret_cast<u32*>(base) + slot;
    const bool last = atomic_add_u32(counter, 1u) == u32(kSplitK - 1);
    if (last) stg_u32(counter, 0u);
    sts_u32(sm.flags + 4 * consumer, last ? 1u : 0u);
  }
  named_barrier_sync(1 + consumer, 128);
  if (lds_u32(sm.flags + 4 * consumer) == 0u) return false;
  fence_gpu();
#pragma unroll
  for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
    for (int i = 0; i < kAccRegs; ++i) acc[mi][i] = 0.0f;
  }
  for (int t = 0; t < kSplitK; ++t) {
#pragma unroll
    for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
      for (int i = 0; i < kAccRegs; ++i) acc[mi][i] += ldcg_f32(parts + (i64(t) * kRegs + mi * kAccRegs + i) * 128);
    }
  }
  return true;
}

}  // namespace sm90
}  // namespace kiln_dev
