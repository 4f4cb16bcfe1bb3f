// templates/kernels/sm90/mainloop.cuh — wgmma issue in sm90::Gemm's consumers: the K tile's wgmmas, the
// release of each stage, the two-atom mainloop, and the mainloop variants the consumers choose between.
//
// Each consumer warpgroup owns a kWgTileM x kWgTileN slab of the block tile (kWarpsM / 4 warpgroups along
// M, kWarpsN along N: a warpgroup's 4 warps stack along M, 16 rows each, which is how wgmma's m64
// accumulator is spread, ptx/wgmma.cuh). A warpgroup's N is one wgmma N: 64, 128, 256, or a width between
// them (96, 112, 144, 160, 176, 192, 208) so that N's tiles fill the 132 SMs better (N = 2112 = 11 x 192).
//
// The mainloop of one tile (the one-atom mainloop, written out in sm90/consumer.cuh consume): per stage,
// wait full[s]; wgmma.fence; 4 k-steps x (kWgTileM / 64) wgmmas (mma_tile); commit.
// - Fast accumulation (kPromote = false: bf16 / f16, FP8 with tensor or per-row scales): the wgmmas
//   accumulate into the f32 registers directly; wait_group 1 keeps the batch just issued in flight while
//   the previous stage is released. Two atoms per stage go into the accumulators as one batch.
// - Promoted (kPromote = true, FP8 only; sm90/promotion.cuh): each K tile's batch writes a fresh partial
//   sum (scale-d = 0 on its first k-step), wait_group 0, release, then the partial is added to the f32
//   accumulators (FADD, or FFMA by the block scales).
// - Half partials (kHalfPart: block scales on 64 x 256 warpgroups, one atom per stage, 1 or 2 consumer
//   warpgroups, no split-K; 128 x 256 tiles with warps 8 x 1). 128 accumulators and a full 128-register
//   partial do not fit the consumers' 232 registers, so each K tile runs as two batches of m64n128 wgmmas
//   (the warpgroup's column halves, B rows 0-127 and 128-255 of the stage) into one 64-register partial,
//   each drained and promoted into its half of the accumulators (b's scale block h for half h; the
//   warpgroup starts on a 256-column edge). The 128 x 128 tile, promoted or not, stops near 0.70 ms at
//   4096 x 7168 x 16384 where 128 x 256 runs 0.62 (H200, docs/performance.md).
// For block scales the config may instead choose (both with staged scales, sm90/producer.cuh):
// - Two-atom stages (block_k = 256 FP8 elements): a stage holds two 128-byte atoms of K (two TMA boxes
//   per operand), and each consumer alternates two partial register sets: while atom t's wgmmas run
//   (wait_group 1 keeps them in flight) the thread promotes atom t-1's partial, so the FFMA promotion no
//   longer leaves the tensor cores to the other warpgroup alone (mainloop_two_atoms). Registers:
//   accumulators + 2 partials = 192 f32 at 64 x 128, within the consumers' 232 (sm90/config.cuh).
// - Three consumer warpgroups (warps 12 x 1: 192 x 128 tiles of 64 x 128 each), 32 / 160 registers: more
//   wgmma work per CTA and three warpgroups to cover each other's promotions (the one-atom mainloop).
// MXFP8 has its own mainloops (sm90/mx.cuh, sm90/mx_dequant.cuh).
#pragma once

#include "common/gemm_params.cuh"
#include "common/types.cuh"
#include "kernels/sm90/config.cuh"
#include "ptx/cluster.cuh"
#include "ptx/ld.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/sync.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"

namespace kiln_dev {
namespace sm90 {

// Releases stage s to the producers: one arrival per warp on the empty[s] of every CTA of the
// cluster (empty[s] counts 4 * kStageReaders * kCluster). The other lanes' reads of a staged-scale slot
// reach the producer's next write through __syncwarp (bar.warp.sync orders memory among the warp)
// and lane 0's release: correct under the PTX memory model, but compute-sanitizer's racecheck does
// not follow that chain and reports write-after-read hazards on the slots wherever the ring wraps.
// With every lane arriving (empty[s] counting 128 per warpgroup) racecheck is clean on the same cases,
// and the default block kernel 2-4% slower (H200, docs/performance.md), so lane 0 it stays.
template <class Config>
__device__ __forceinline__ void Gemm<Config>::release(const Smem& sm, int s, int lane) {
  __syncwarp();  // every lane's reads of the stage (wgmma waits, staged scales) precede lane 0's arrive
  if (lane == 0) {
    if constexpr (kCluster == 1) {
      mbar_arrive(sm.empty + 8 * s);
    } else {
#pragma unroll
      for (int r = 0; r < kCluster; ++r) mbar_arrive_cluster(cluster_map_shared(sm.empty + 8 * s, u32(r)));
    }
  }
}

// Grouped wgrad (sm90/scheduler.cuh): zeroes rows valid .. kAtomK - 1 of stage s, in every 64-element
// chunk of A and B, so that an expert's partial last atom adds nothing of the rows past its end (the
// next expert's, the masked layout's padding: zeroing one operand would not do, 0 x Inf being NaN). In
// the MN-major 128-byte swizzle a K row of a chunk is 128 contiguous bytes (the swizzle permutes 16-byte
// units within it), so the tail is one contiguous run per chunk. Every consumer thread (consumer_tid of
// 128 * kConsumers) stores 16 bytes at a time; each makes its stores visible to the async proxy
// (fence.proxy.async) before the consumers meet at a named barrier, after which wgmma may read the stage.
template <class Config>
__device__ __forceinline__ void Gemm<Config>::zero_k_tail(const Smem& sm, int s, int valid, int consumer_tid) {
  constexpr int kChunksA = kBlockM / kMnChunk, kChunks = kChunksA + kBlockN / kMnChunk;
  const int tail = (kAtomK - valid) * kRowBytes;  // bytes per chunk
  for (int i = 16 * consumer_tid; i < kChunks * tail; i += 16 * 128 * kConsumers) {
    const int c = i / tail;
    const u32 chunk = c < kChunksA ? sm.a + s * kTileBytesA + c * kMnChunkBytes
                                   : sm.b + s * kTileBytesB + (c - kChunksA) * kMnChunkBytes;
    sts_128(chunk + valid * kRowBytes + (i - c * tail), 0u, 0u, 0u, 0u);
  }
  fence_proxy_async_shared();
  named_barrier_sync(kTailBarrier, 128 * kConsumers);
}

// The wgmmas of one K tile (4 k-steps) into d, reading the stage whose A rows of this warpgroup
// start at a_base and B rows at b_base. first: scale-d = 0 on the first k-step (d is overwritten).
// d holds the warpgroup's columns (kRegs = kAccRegs), or a half of them (half partials: kRegs =
// kPartRegs, b_base at the half's first B row).
template <class Config>
template <int kRegs>
__device__ __forceinline__ void Gemm<Config>::mma_tile(float (&d)[kMmaM][kRegs], u32 a_base, u32 b_base,
                                                       bool first) {
  const u64 desc_a = kTransA ? wgmma_desc_sw128_mn(a_base, kMnChunkBytes) : wgmma_desc_sw128(a_base);
  const u64 desc_b = kTransB ? wgmma_desc_sw128_mn(b_base, kMnChunkBytes) : wgmma_desc_sw128(b_base);
  // A k-step is 32 bytes further along a K-major row, or 16 rows of 128 bytes further in an MN-major
  // chunk (ptx/wgmma.cuh).
  constexpr int kStepA = kTransA ? 16 * kRowBytes : 32, kStepB = kTransB ? 16 * kRowBytes : 32;
#pragma unroll
  for (int ks = 0; ks < kKSteps; ++ks) {
    // Start address + the k-step's offset (the descriptor's address field is in 16-byte units and cannot
    // carry: shared addresses are < 2^18). An m64 slab of A is 64 rows (K-major) or one 64-element
    // chunk (MN-major) further: 64 * 128 bytes either way.
    const u64 db = desc_b + u64((kStepB * ks) >> 4);
#pragma unroll
    for (int mi = 0; mi < kMmaM; ++mi) {
      const u64 da = desc_a + u64((mi * 64 * kRowBytes + kStepA * ks) >> 4);
      if constexpr (2 * kRegs >= 208 && kEntryRegs < 160) {
        // 512 threads (the dequantizing producer's two warpgroups): ptxas gives no single instruction more
        // than the launch's 128 registers, and an m64n256 (m64n208) wgmma needs 154 (130), so it runs
        // as two: n128 + n128 (n112 + n96), the second on B rows 128 (112) onwards.
        constexpr int kN1 = 2 * kRegs == 256 ? 128 : 112;
        constexpr int kN2 = 2 * kRegs - kN1;
        const u32 sd = (first && ks == 0) ? 0u : 1u;
        wgmma_m64<kN1, kA, kB, kTransA, kTransB>(*reinterpret_cast<float(*)[kN1 / 2]>(&d[mi][0]), da, db, sd);
        wgmma_m64<kN2, kA, kB, kTransA, kTransB>(*reinterpret_cast<float(*)[kN2 / 2]>(&d[mi][kN1 / 2]), da,
                                                 db + u64((kN1 * kRowBytes) >> 4), sd);
      } else {
        wgmma_m64<2 * kRegs, kA, kB, kTransA, kTransB>(d[mi], da, db, (first && ks == 0) ? 0u : 1u);
      }
    }
  }
}

template <class Config>
template <int kRegs>
__device__ __forceinline__ void Gemm<Config>::fence_all(float (&d)[kMmaM][kRegs]) {
#pragma unroll
  for (int mi = 0; mi < kMmaM; ++mi) wgmma_fence_operands(d[mi]);
}

// One tile's mainloop over stages of two atoms, with two partial sets so that the promotion of atom 0's
// partial runs while atom 1's wgmmas are in flight:
//   per stage:  issue atom 0 -> p0, atom 1 -> p1 | wait_group 1: atom 0 done -> promote p0
//               wait_group 0: atom 1 done -> release the stage, promote p1
// (an odd atom count ends with a stage of one atom). Each stage drains its own batches: a batch still
// in flight across the loop's back edge while the thread reads another partial makes ptxas 13
// serialize every wgmma (C7514, seen with a fully software-pipelined version), so half of the
// promotions overlap this warpgroup's own wgmmas and the other half the other warpgroup's, against
// none and all of them in the one-atom mainloop. Both atoms' scales are read from the stage's slot
// right after full[s].
template <class Config>
__device__ __forceinline__ void Gemm<Config>::mainloop_two_atoms(const Smem& sm, float (&acc)[kMmaM][kAccRegs],
                                                                 float (&p0)[kMmaM][kAccRegs], KRange kr,
                                                                 int& stage, u32& phase, u32 a_off, u32 b_off,
                                                                 int wg_m, int wg_n, int warp, int lane) {
  float p1[kMmaM][kAccRegs];
  for (int kt = kr.begin; kt < kr.end; kt += 2) {
    mbar_wait(sm.full + 8 * stage, phase);
    const u32 slot = sm.scales + stage * kScaleSlotBytes;
    BlockScales s0{};
    if constexpr (kStagedScales) s0 = staged_block_scales(slot, 0, kt, wg_m, wg_n, warp, lane);
    const u32 a_base = sm.a + stage * kTileBytesA + a_off;
    const u32 b_base = sm.b + stage * kTileBytesB + b_off;
    fence_all(p0);
    wgmma_fence();
    mma_tile(p0, a_base, b_base, /*first=*/true);
    wgmma_commit();
    if (kt + 1 < kr.end) {
      BlockScales s1{};
      if constexpr (kStagedScales) s1 = staged_block_scales(slot, 1, kt + 1, wg_m, wg_n, warp, lane);
      fence_all(p1);
      wgmma_fence();
      mma_tile(p1, a_base + kAtomBytesA, b_base + kAtomBytesB, /*first=*/true);
      wgmma_commit();
      wgmma_wait<1>();
      fence_all(p0);
      promote(acc, p0, s0);
      wgmma_wait<0>();
      fence_all(p1);
      release(sm, stage, lane);
      promote(acc, p1, s1);
    } else {
      wgmma_wait<0>();
      fence_all(p0);
      release(sm, stage, lane);
      promote(acc, p0, s0);
    }
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1;
    }
  }
}

}  // namespace sm90
}  // namespace kiln_dev
