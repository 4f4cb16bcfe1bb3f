// templates/kernels/sm90/kernel.cuh — the kernel body of sm90::Gemm (run): shared-memory setup, barrier
// initialization, programmatic dependent launch, and the split into producer and consumer warpgroups.
//
// Warp specialization. The block is 1 producer warpgroup (2 for the dequantizing producer,
// sm90/mx_dequant.cuh) + kConsumers (1-3) consumer warpgroups. The producer gives registers back
// (setmaxnreg.dec; kProducerRegs) and one of its threads issues every TMA copy (sm90/producer.cuh); the
// consumers take them (setmaxnreg.inc) for their accumulators (sm90/consumer.cuh). Each warpgroup's role
// is one branch of a single if/else (setmaxnreg is warpgroup-wide).
//
// Programmatic dependent launch (ptx/griddepcontrol.cuh; always compiled in). The runtime launches with
// programmatic stream serialization (runtime/sm90_launch.cpp), so this kernel's CTAs may start while the
// previous kernel on the stream still runs. Before any global-memory access (build_groups reads the expert
// offsets) every thread executes griddepcontrol.wait: only the mbarrier inits and the prefetch of the
// tensor maps (kernel parameters) overlap the predecessor. Then each CTA issues
// griddepcontrol.launch_dependents, so the next kernel's launch and setup overlap this one's tail.
// Measured on an H200 (docs/performance.md): a chain of dependent bf16 GEMMs at M = 64, N = K = 2048 runs
// 6.50-6.52 us per GEMM against 7.68-8.12 without PDL (M = 128: 13.09-13.19 against 14.69-15.17); the
// benchmark's small-M rows, each call on its own inputs, gain a median 1-2% (per row -11% .. +12%, mostly
// noise). Prefetching the first B boxes into L2 before the wait measured slower (2.8% median, up to 10%)
// and is not done. Without a programmatic dependency (KILN_PDL=0, another launcher) the wait returns at
// once.
//
// Clusters: a cluster-wide barrier follows the mbarrier inits (the peers' barriers exist before anyone
// arrives on them or multicasts) and precedes exit (no CTA leaves while a peer may still arrive on its
// barriers).
#pragma once

#include "common/gemm_params.cuh"
#include "common/sm90_tma_desc.cuh"
#include "common/types.cuh"
#include "kernels/sm90/config.cuh"
#include "ptx/cluster.cuh"
#include "ptx/cp_async.cuh"
#include "ptx/griddepcontrol.cuh"
#include "ptx/ld.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"

namespace kiln_dev {
namespace sm90 {

template <class Config>
__device__ __forceinline__ void Gemm<Config>::run(const TmaDesc& tma_a, const TmaDesc& tma_b, const GemmParams& p,
                                                  void* ws, const TmaDesc* tma_out, bool out_tma) {
  extern __shared__ __align__(1024) u8 smem[];
  // Uniform, before any barrier and any memory access. (Plan::run launches nothing for M = 0 and plans
  // need N >= 1, so a launched grid never takes it: no grid exits without the PDL wait below.)
  if (p.m <= 0 || p.n <= 0) return;

  Smem sm;
  sm.a = (smem_u32(smem) + 1023u) & ~1023u;
  sm.b = sm.a + kStages * kTileBytesA;
  sm.out = sm.b + kStages * kTileBytesB;  // 1024-byte aligned: the ring's boxes are
  sm.colsc = sm.out + kOutTileBytes;
  sm.scales = sm.colsc + kColScaleBytes;
  sm.full = sm.scales + kStages * kScaleSlotBytes;
  sm.empty = sm.full + 8 * kStages;
  sm.groups = sm.empty + 8 * kStages;
  sm.flags = sm.groups + kGroupTableBytes;
  // The dequantizing producer's staging ring after the output tile (1024-byte aligned: the TMA boxes'
  // swizzle).
  sm.stg = sm.stg_sc = sm.stg_full = 0;
  if constexpr (kDq) {
    sm.stg = (sm.flags + kSplitFlagBytes + 1023u) & ~1023u;
    sm.stg_sc = sm.stg + kDqStg * (kStgBytesA + kStgBytesB);
    sm.stg_full = sm.stg_sc + kDqStg * kDqScaleBytes;
  }

  const int tiles_m = (p.m - 1) / kBlockM + 1;
  const int tiles_n = (p.n - 1) / kBlockN + 1;
  const int k_tiles = p.k <= 0 ? 0 : (p.k - 1) / kAtomK + 1;  // atoms of K (block scales: K blocks)

  if (threadIdx.x == 0) {
    // The maps are kernel parameters (nothing a predecessor writes): fetched while it may still run.
    // Thread 0 is the thread that issues the copies (produce, dq_stage).
    tma_prefetch_desc(&tma_a);
    tma_prefetch_desc(&tma_b);
#pragma unroll 1
    for (int s = 0; s < kStages; ++s) {
      // TMA thread (+ the scale warp's lanes); dequantizing producer: every converting thread (warps 1-7).
      mbar_init(sm.full + 8 * s, kDq ? kDqConvThreads : kScaleWarp ? 1 + 32 : 1);
      mbar_init(sm.empty + 8 * s, 4 * kStageReaders * kCluster);
    }
    if constexpr (kDq) {
#pragma unroll 1
      for (int s = 0; s < kDqStg; ++s) {
        mbar_init(sm.stg_full + 8 * s, 1 + 32);  // warp 0: expect_tx + its lanes' scale stores
        // stg_empty: every converting thread (and with register A every consumer thread).
        mbar_init(sm.stg_full + 8 * (kDqStg + s), kDqConvThreads + (kDqRegA ? 128 * kConsumers : 0));
      }
    }
    mbar_fence_init();
  }
  // PDL: only what is above (shared memory, this launch's parameters) may overlap the previous kernel on
  // the stream; every thread waits for it before its first global access (build_groups reads the expert
  // offsets). The trigger fires once every CTA of this grid has issued it, so the next kernel's CTAs never
  // take an SM one of ours still needs.
  griddep_wait();
  griddep_launch_dependents();
  if constexpr (kGrouped) {
    if (threadIdx.x < 32) build_groups(p, sm, tiles_n, int(threadIdx.x));
  }
  if constexpr (kCluster == 1) {
    __syncthreads();
  } else {
    cluster_sync();  // the peers' barriers exist before anyone arrives on them or multicasts
  }
  const Walk w = make_walk(tiles_m, tiles_n, sm);

  // Each warpgroup's role is one branch of a single if/else (setmaxnreg is warpgroup-wide).
  // Warp-uniform by construction; through shfl the compiler knows it too, so values derived from it
  // (the warpgroup's shared-memory offsets, the wgmma descriptors) can live in uniform registers (FP8
  // block 128 x 256: 0.835 -> 0.782 ms; H200, docs/performance.md). Not for the dequantizing producer:
  // there it made nine of the 38 block_k-64 tiles spill.
  const int wg = kDq ? int(threadIdx.x) / 128 : __shfl_sync(0xffffffffu, int(threadIdx.x) / 128, 0);
  if (wg < kProducerWgs) {
    setmaxnreg_dec<kProducerRegs>();
    // Thread 0 issues the TMA copies; with staged block scales or MXFP8 scales its whole warp walks
    // along and copies the scales.
    if constexpr (kDq) {
      if (threadIdx.x < 32) {
        dq_stage(&tma_a, &tma_b, sm, w, p, int(threadIdx.x));
      } else {
        dq_convert_walk(p, sm, w, k_tiles, int(threadIdx.x) - 32);
      }
    } else if (threadIdx.x == 0 || (kScaleWarp && threadIdx.x < 32)) {
      produce(&tma_a, &tma_b, sm, w, k_tiles, p, threadIdx.x & 31);
    }
  } else {
    setmaxnreg_inc<kConsumerRegs>();
    consume(p, sm, w, k_tiles, wg - kProducerWgs, ws, tma_out, kTmaStore && out_tma);
    // TMA stores: the last tile's stores are complete before the CTA (and its shared memory) goes.
    if constexpr (kTmaStore) {
      if ((threadIdx.x & 127) == 0) tma_store_wait_all<0>();
    }
    // No CTA leaves while a peer may still arrive on its barriers (the producers have exited, and
    // exited threads do not take part).
    if constexpr (kCluster > 1) cluster_sync();
  }
}

}  // namespace sm90
}  // namespace kiln_dev
