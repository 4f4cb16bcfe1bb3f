// templates/kernels/sm90/mx.cuh — MXFP8 in sm90::Gemm with promotion per 32 K: the producer warp's scale
// staging and the consumers' per-k-step mainloop.
//
// MXFP8 (a = b = mxfp8: e4m3 elements, E8M0 scales [rows, K/32] on both operands; docs/numerics.md §3).
// Hopper has no block-scaled MMA, so every wgmma k-step (32 FP8 elements = one scale block of both
// operands) writes a fresh partial that is promoted on its own (mainloop_mx):
//   acc = fma(part, sa[m, kb] * sb[n, kb], acc)
// — per accumulator element one FMUL and one FFMA per 32 K, about what the k-step's wgmma costs the
// tensor cores, so the two consumer warpgroups take turns (one promotes while the other's wgmma runs).
// The producer's warp 0 stages the scales: per stage each lane loads the E8M0 words (4 bytes = the atom's
// 4 k-steps) of its tile rows and columns before waiting for the stage (their latency overlaps the wait),
// decodes them exactly to f32 and stores them where the consumers read them with few instructions: per
// k-step, a's scale per tile row, then b's per column, grouped by the thread quad whose accumulators hold
// that column (16-byte loads); then arrives on full[s] (1 + 32 arrivals). Warpgroup tiles hold at most 64
// accumulators per thread (64 x 128 or 128 x 64), one atom per stage; grouped, split-K and clusters work
// as for the other formats. With block_k = 64 the operands are dequantized to bf16 instead
// (sm90/mx_dequant.cuh), which reuses mx_load.
#pragma once

#include "common/decode.cuh"
#include "common/gemm_params.cuh"
#include "common/types.cuh"
#include "dequant/block_scale.cuh"
#include "kernels/sm90/config.cuh"
#include "ptx/cvt.cuh"
#include "ptx/ld.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/wgmma.cuh"

namespace kiln_dev {
namespace sm90 {

// ---- the producer warp: scale words, loaded and decoded -----------------------------------------

// One K atom's scale words (4 E8M0 bytes: k-steps 0..3) of the rows one producer lane stages: a's tile
// rows lane, lane + 32, ... (clamped to the last valid row) and b's tile columns lane, lane + 32, ...
// (clamped to N - 1; a tile width that is not a multiple of 32 leaves the last run's upper lanes loading
// a clamped column they do not store). The row addresses are recomputed per stage to keep the producer's
// registers few.
template <class Config>
struct Gemm<Config>::MxWords {
  u32 a[kMxRowsA];
  u32 b[kMxColsB];
};

// Whether an atom's 4 scale bytes can be loaded as one aligned word: the tensors' bases, row strides
// (and the experts' stride) are multiples of 4.
template <class Config>
__device__ __forceinline__ bool Gemm<Config>::mx_words_aligned(const GemmParams& p) {
  return ((reinterpret_cast<u64>(p.a_scale) | reinterpret_cast<u64>(p.b_scale) | u64(p.lds_a) | u64(p.lds_b) |
           u64(kGrouped ? p.b_scale_expert_stride : 0)) & 3) == 0;
}

// Bytes 4 kt .. 4 kt + 3 of a scale row (k-step j in byte j): one aligned word, or (unaligned
// tensors, and a partial last atom: K % 128 != 0) byte by byte, blocks past K reading 127 = 1.0 (their
// k-steps' partial sums are TMA's zeros, so they add nothing).
template <class Config>
__device__ __forceinline__ u32 Gemm<Config>::mx_word_bytes(const u8* row, int kb, int k_blocks) {
  u32 w = 0;
#pragma unroll 1
  for (int j = 0; j < 4; ++j) w |= (kb + j < k_blocks ? ldg_u8(row + kb + j) : 127u) << (8 * j);
  return w;
}

// Row r of a's scales (clamped to the tile's last valid row) and column c of b's (clamped to N - 1).
template <class Config>
__device__ __forceinline__ const u8* Gemm<Config>::mx_row_a(const GemmParams& p, const Tile& tile, int r) {
  const int row = tile.row0 + r;
  const int last = tile.row_end > 0 ? tile.row_end - 1 : 0;
  return reinterpret_cast<const u8*>(p.a_scale) + i64(row < tile.row_end ? row : last) * p.lds_a;
}
template <class Config>
__device__ __forceinline__ const u8* Gemm<Config>::mx_row_b(const GemmParams& p, const Tile& tile, int c) {
  const int col = tile.n * kBlockN + c;
  return reinterpret_cast<const u8*>(b_scale_of<ScaleType::kUe8m0>(p, tile.e)) + i64(col < p.n ? col : p.n - 1) * p.lds_b;
}

template <class Config>
__device__ __forceinline__ typename Gemm<Config>::MxWords Gemm<Config>::mx_load(const GemmParams& p, const Tile& tile,
                                                                               int kt, int k_blocks, bool aligned,
                                                                               int lane) {
  MxWords w;
  const int kb = 4 * kt;
  if (aligned && kb + 4 <= k_blocks) {  // uniform across the warp
#pragma unroll
    for (int i = 0; i < kMxRowsA; ++i) w.a[i] = ldg_u32(mx_row_a(p, tile, 32 * i + lane) + kb);
#pragma unroll
    for (int i = 0; i < kMxColsB; ++i) w.b[i] = ldg_u32(mx_row_b(p, tile, 32 * i + lane) + kb);
  } else {
#pragma unroll
    for (int i = 0; i < kMxRowsA; ++i) w.a[i] = mx_word_bytes(mx_row_a(p, tile, 32 * i + lane), kb, k_blocks);
#pragma unroll
    for (int i = 0; i < kMxColsB; ++i) w.b[i] = mx_word_bytes(mx_row_b(p, tile, 32 * i + lane), kb, k_blocks);
  }
  return w;
}

// Decodes the words exactly (dequant/block_scale.cuh: 0 -> 2^-127, 0xFF -> NaN) into the stage's slot:
// k-step j's floats at slot + 4 * j * kMxStepFloats, a's row r at + r, b's column c (of consumer
// column wg = c / kWgTileN, local c' = c % kWgTileN) in the run of the thread quad t = (c' % 8) / 2
// that holds it in its accumulators, at + kBlockM + (4 * wg + t) * kMxColStride + 2 * (c' / 8) + c' % 2.
template <class Config>
__device__ __forceinline__ void Gemm<Config>::mx_store(u32 slot, const MxWords& w, int lane) {
#pragma unroll
  for (int j = 0; j < kKSteps; ++j) {
    const u32 step = slot + 4 * j * kMxStepFloats;
#pragma unroll
    for (int i = 0; i < kMxRowsA; ++i) sts_u32(step + 4 * (32 * i + lane), bits_from_f32(decode_e8m0(w.a[i] >> (8 * j))));
#pragma unroll
    for (int i = 0; i < kMxColsB; ++i) {
      const int c = 32 * i + lane;
      if (kBlockN % 32 != 0 && c >= kBlockN) break;  // the last run's lanes past the tile (i is the last)
      const int wg = c / kWgTileN, cl = c % kWgTileN;
      const int pos = kBlockM + (4 * wg + ((cl & 7) >> 1)) * kMxColStride + 2 * (cl >> 3) + (cl & 1);
      sts_u32(step + 4 * pos, bits_from_f32(decode_e8m0(w.b[i] >> (8 * j))));
    }
  }
}

// ---- the consumers: one wgmma batch and one promotion per k-step --------------------------------

// acc = fma(part, sa[h] * sb[column], acc) for one k-step (the reference's order; sm80_promotion.cuh),
// with the decoded scales read from the stage's slot: 2 per m64 slab (rows g, g + 8) and this thread's
// kAccRegs / 2 columns (promote_col_runs, sm90/promotion.cuh).
template <class Config>
__device__ __forceinline__ void Gemm<Config>::promote_mx(float (&acc)[kMmaM][kAccRegs],
                                                         const float (&part)[kMmaM][kAccRegs], u32 step, u32 b_run,
                                                         int row0) {
  float sa[kMmaM][2];
#pragma unroll
  for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
    for (int h = 0; h < 2; ++h) sa[mi][h] = f32_from_bits(lds_u32(step + 4u * u32(row0 + mi * 64 + h * 8)));
  }
  promote_col_runs(acc, part, sa, step + b_run);
}

template <class Config>
__device__ __forceinline__ void Gemm<Config>::mma_mx_step(float (&d)[kMmaM][kAccRegs], u64 desc_a, u64 desc_b,
                                                          int ks) {
  fence_all(d);
  wgmma_fence();
#pragma unroll
  for (int mi = 0; mi < kMmaM; ++mi)
    wgmma_m64<kWgTileN, kA, kB>(d[mi], desc_a + u64((mi * 64 * kRowBytes + 32 * ks) >> 4), desc_b + u64(2 * ks), 0u);
  wgmma_commit();
}

// One tile's MXFP8 mainloop. Every k-step (32 FP8 elements of K = one E8M0 block of both operands) is its
// own wgmma batch into one of two partials, and while k-step ks + 1's batch runs (wait_group 1) the
// thread promotes k-step ks's:
//   acc = fma(part, sa[m, kb] * sb[n, kb], acc)        (the reference's order; sm80_promotion.cuh)
// with the decoded scales read from the stage's slot: 2 per m64 slab (rows g, g + 8) and this thread's
// kAccRegs / 2 columns (one contiguous run per thread quad). The stage's last k-step drains its batch
// (wait_group 0) before the stage is released, so no batch is in flight across the loop's back edge
// (sm90/mainloop.cuh mainloop_two_atoms says why). A partial last atom (K % 128 != 0) runs all four
// k-steps: TMA zero-filled the K past the end and the producer staged 1.0 for those blocks.
template <class Config>
__device__ __forceinline__ void Gemm<Config>::mainloop_mx(const Smem& sm, float (&acc)[kMmaM][kAccRegs],
                                                          float (&p0)[kMmaM][kAccRegs], KRange kr, int& stage,
                                                          u32& phase, u32 a_off, u32 b_off, int wg_m, int wg_n,
                                                          int warp, int lane) {
  float p1[kMmaM][kAccRegs];
  const int row0 = wg_m * kWgTileM + warp * 16 + (lane >> 2);
  const u32 b_run = 4u * u32(kBlockM + (4 * wg_n + (lane & 3)) * kMxColStride);
  for (int kt = kr.begin; kt < kr.end; ++kt) {
    mbar_wait(sm.full + 8 * stage, phase);
    const u32 slot = sm.scales + stage * kScaleSlotBytes;
    const u64 desc_a = wgmma_desc_sw128(sm.a + stage * kTileBytesA + a_off);
    const u64 desc_b = wgmma_desc_sw128(sm.b + stage * kTileBytesB + b_off);
    mma_mx_step(p0, desc_a, desc_b, 0);
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {
      float (&cur)[kMmaM][kAccRegs] = (ks % 2 == 0) ? p0 : p1;
      float (&nxt)[kMmaM][kAccRegs] = (ks % 2 == 0) ? p1 : p0;
      if (ks + 1 < kKSteps) {
        mma_mx_step(nxt, desc_a, desc_b, ks + 1);
        wgmma_wait<1>();  // k-step ks is done, ks + 1 stays in flight
      } else {
        wgmma_wait<0>();
      }
      fence_all(cur);
      const u32 step = slot + 4u * u32(ks * kMxStepFloats);
      if (ks + 1 == kKSteps) {
        // Every read of the stage (the wgmmas, and the scales below, issued before the arrive) is done.
        promote_mx(acc, cur, step, b_run, row0);
        release(sm, stage, lane);
      } else {
        promote_mx(acc, cur, step, b_run, row0);
      }
    }
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1;
    }
  }
}

}  // namespace sm90
}  // namespace kiln_dev
