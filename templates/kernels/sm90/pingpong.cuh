// templates/kernels/sm90/pingpong.cuh — ping-pong consumers in sm90::Gemm: two consumer warpgroups that
// take whole tiles in turn, so that one's epilogue runs under the other's wgmmas.
//
// Ping-pong (pingpong = 1; warps 4 x 1, unpromoted accumulation, dense, no split-K): the two consumer
// warpgroups each own whole kBlockM x kBlockN tiles; consumer c takes the CTA's units c, c + 2, ... of the
// walk (sm90/consumer.cuh consume). The producer is unchanged (every unit's stages in walk order), each
// stage is read and released by one warpgroup (empty[s] counts 4 per CTA), and a consumer counts past the
// other's stages (skip_stages). Named barriers kOrderBarrier + c order the mainloops: a consumer starts a
// unit's mainloop only after the previous unit's consumer has waited on all of that unit's stages
// (bar.arrive / bar.sync around the mainloop in consume), so every full[s] it waits on is at most one
// phase ahead (the parity wait stays exact however many laps a unit spans), and one warpgroup's epilogue
// runs under the other's wgmmas. Each consumer has its own TMA-store slab and column-scale slab
// (sm90/epilogue_tma_store.cuh).
//
// Measured on an H200 (graph replay, docs/performance.md) with 5 stages: faster than the cooperative
// tiles where K is short (FP8 row 4096 x 32768 x 512: 130.7 against 141.5 / 142.3 us; 4096 x 24576 x 1536
// in clusters of 2: 220.5 against 236.2 / 237.5), slower where K is long on 128 x 128 tiles. A warpgroup
// keeps no partials, so its tile may hold up to 192 accumulators per thread: 128 x 176 at N = 2112 (12 x
// 176), 5 stages with the slab in four chunks, measured 3.6-4% faster than the cooperative 128 x 176 for
// FP8 at 4096 x 2112 x 7168.
#pragma once

#include "common/types.cuh"
#include "kernels/sm90/config.cuh"
#include "ptx/sync.cuh"

namespace kiln_dev {
namespace sm90 {

// Moves a consumer's ring position n stages on (n may be several laps).
template <class Config>
__device__ __forceinline__ void Gemm<Config>::skip_stages(int n, int& stage, u32& phase) {
  const int t = stage + n;
  phase ^= u32((t / kStages) & 1);
  stage = t % kStages;
}

}  // namespace sm90
}  // namespace kiln_dev
