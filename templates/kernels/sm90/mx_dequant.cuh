// templates/kernels/sm90/mx_dequant.cuh — MXFP8 in sm90::Gemm through a dequantizing producer (block_k =
// 64): FP8 staging, conversion to bf16, and the consumers' register-A mainloop.
//
// Dense and grouped, 2 consumer warpgroups, no clusters, no split-K. Promotion per 32 K (sm90/mx.cuh)
// costs an FMUL and an FFMA per accumulator per 32 K, which keeps the FP8 tensor cores below half their
// rate; here the producer warpgroups turn each operand element into bf16 once per tile: x * 2^(e - 127) is
// exact in bf16 (e4m3's 4 significant bits, f32's exponent range), so the consumers run the plain bf16
// mainloop (m64nNk16 wgmmas accumulating in f32, no promotion, no epilogue scales; sm90/mainloop.cuh) at
// bf16's tensor rate, half of FP8's, with nothing per accumulator. Loading the FP8 with plain global loads
// in the converting threads measured 240-260 TFLOP/s, because every stage's proxy fence waited for those
// loads (H200, docs/performance.md); hence the staging through TMA:
// - Warp 0 stages: per 128-K atom of a tile, lane 0's TMA copies of the A and B boxes (e4m3, 128-byte
//   swizzle) into a ring of kDqStg stages, and the E8M0 words of the tile's rows and columns decoded to 4
//   f32 each beside them (dq_stage). It never fences, so its loads are never waited for.
// - Warps 1-7 of the producer's TWO warpgroups convert (dq_convert_walk): each atom gives two bf16 stages
//   of 64 K; per stage every thread reads 16-byte chunks of the staged rows, converts (hardware e4m3 ->
//   f16 -> f32, one product by the scale, bf16 pack), writes them where TMA would have (chunk j of row r
//   at j ^ (r % 8)), fences the async proxy (only shared-memory accesses outstanding) and arrives on
//   full[s] (224 arrivals). Seven converting warps instead of three: 3.03 -> 2.53 ms at 4096 x 7168 x
//   16384 (H200, docs/performance.md).
// - A in registers (kDqRegA: warpgroup tiles of 64 rows, i.e. warps_m 8 with block_m 128 or warps_m 4
//   with block_m 64): the consumers dequantize their own A rows from the staging ring straight into the
//   register fragments of RS wgmmas (mainloop_dq_rega), so the producer converts B only and the bf16 ring
//   holds B alone (128 x 256: three stages instead of two). The producer stores each B row in the K order
//   the consumers' fragments take (a permutation inside each 64-K stage). One register set of A: each
//   stage's wgmmas drain (wait 0) before the next stage's A is converted, since ptxas serializes every
//   wgmma of a kernel (its note C7513) where A registers are written while a wgmma is in flight; the other
//   consumer warpgroup keeps the tensor cores busy meanwhile. 128 x 256 at 4096 x 7168 x 16384: 2.53 ->
//   2.14 ms (H200, docs/performance.md). Tiles with 128-row warpgroups keep the bf16 A stages.
// Shared memory: the bf16 ring + the staging ring (2 x (block_m + block_n) x 144 bytes), so 128 x 256
// tiles get 3 bf16 stages of B (2 of A and B without register A). 512 threads, so ptxas allows no
// instruction more than 128 registers: the m64n256 (m64n208) wgmmas of 256- (208-) column warpgroups run
// as two, n128 + n128 (n112 + n96) (mma_tile, mainloop_dq_rega). Registers: see kProducerRegs
// (sm90/config.cuh).
#pragma once

#include "common/decode.cuh"
#include "common/fp8_to_bf16.cuh"
#include "common/gemm_params.cuh"
#include "common/sm90_tma_desc.cuh"
#include "common/types.cuh"
#include "dequant/block_scale.cuh"
#include "kernels/sm90/config.cuh"
#include "ptx/cvt.cuh"
#include "ptx/ld.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"

namespace kiln_dev {
namespace sm90 {

// Warp 0 of the producer warpgroup stages: per 128-K atom (a staging position) of each tile, the E8M0
// words of the tile's rows and columns (loaded before waiting for the slot, like sm90/mx.cuh's) decoded
// to 4 f32 per row / column, and lane 0's two TMA boxes (A, B) of e4m3; then 32 arrivals (releases of
// the scale stores) + the TMA bytes complete stg_full[s]. This warp issues no proxy fence, so its
// global loads are never waited for by one.
template <class Config>
__device__ __forceinline__ void Gemm<Config>::dq_stage(const TmaDesc* tma_a, const TmaDesc* tma_b, const Smem& sm,
                                                       const Walk& w, const GemmParams& p, int lane) {
  const int k8 = p.k <= 0 ? 0 : (p.k + 127) / 128;
  const int k_blocks = p.k <= 0 ? 0 : (p.k + 31) / 32;
  const bool aligned = mx_words_aligned(p);
  int s = 0;
  u32 phase = 0;
  for (int u = w.first; u < w.count; u += w.step) {
    const Tile tile = tile_of(w, unit_tile(u), p, sm);
    const int first_b = tile.n * kBlockN;
    const int row_a = tile.row0 < p.m ? tile.row0 : p.m - 1;
    const int row_b = first_b < p.n ? first_b : p.n - 1;
    for (int kt8 = 0; kt8 < k8; ++kt8) {
      const MxWords words = mx_load(p, tile, kt8, k_blocks, aligned, lane);
      mbar_wait(sm.stg_full + 8 * (kDqStg + s), phase ^ 1);  // stg_empty[s]
      const u32 full = sm.stg_full + 8 * s;
      const u32 a_dst = sm.stg + u32(s * (kStgBytesA + kStgBytesB));
      if (lane == 0) {
        mbar_arrive_expect_tx(full, u32(kStgBytesA + kStgBytesB));
        tma_load_2d(a_dst, tma_a, kt8 * 128, row_a, full);
        if constexpr (kGrouped) {
          tma_load_3d(a_dst + kStgBytesA, tma_b, kt8 * 128, row_b, tile.e, full);
        } else {
          tma_load_2d(a_dst + kStgBytesA, tma_b, kt8 * 128, row_b, full);
        }
      }
      const u32 slot = sm.stg_sc + u32(s * kDqScaleBytes);
#pragma unroll
      for (int i = 0; i < kMxRowsA; ++i) {
        const u32 x = words.a[i];
        sts_128(slot + 16u * u32(32 * i + lane), bits_from_f32(decode_e8m0(x & 0xFFu)),
                bits_from_f32(decode_e8m0((x >> 8) & 0xFFu)), bits_from_f32(decode_e8m0((x >> 16) & 0xFFu)),
                bits_from_f32(decode_e8m0(x >> 24)));
      }
#pragma unroll
      for (int i = 0; i < kMxColsB; ++i) {
        const int c = 32 * i + lane;
        if (kBlockN % 32 != 0 && c >= kBlockN) break;
        const u32 x = words.b[i];
        sts_128(slot + 16u * u32(kBlockM + c), bits_from_f32(decode_e8m0(x & 0xFFu)),
                bits_from_f32(decode_e8m0((x >> 8) & 0xFFu)), bits_from_f32(decode_e8m0((x >> 16) & 0xFFu)),
                bits_from_f32(decode_e8m0(x >> 24)));
      }
      mbar_arrive(full);  // release: the decoded scales are visible to whoever waits on stg_full[s]
      if (++s == kDqStg) {
        s = 0;
        phase ^= 1;
      }
    }
  }
}

// 16 e4m3 (w) times f (a power of two) -> 16 bf16 (o, in K order), exactly: e4m3 -> f16 (hardware,
// Inf/NaN included) -> f32, one f32 product, bf16 rounding of a value with 4 significant bits (exact
// unless it leaves f32's range, like the reference's product).
template <class Config>
__device__ __forceinline__ void Gemm<Config>::dq_convert(const u32 (&w)[4], float f, u32 (&o)[8]) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    u32 lo, hi;
    fp8x4_to_f16x4<Format::kE4m3>(w[j], lo, hi);
    float x0, x1, x2, x3;
    f16x2_to_f32x2(lo, x0, x1);
    f16x2_to_f32x2(hi, x2, x3);
    o[2 * j] = cvt_pack_bf16x2(x0 * f, x1 * f);
    o[2 * j + 1] = cvt_pack_bf16x2(x2 * f, x3 * f);
  }
}

// Warps 1-7 of the two producer warpgroups (ct = 0..223) convert. Each staging position (128 K) gives two
// bf16 stages (64 K each; a second one past K is skipped, as the consumers count ceil(K / 64)). Thread ct
// converts 16-byte chunk c = ct % 4 of its half of every tile row r = 8 (ct / 32) + rho + 56 i, where
// rho = ((ct % 32) / 8) ^ 5 ((ct / 4) % 2) is r % 8: the two rows a quarter-warp touches differ in bits 0
// and 2 of r % 8, so the 16-byte reads of the staged atom (chunk (4h + c) ^ rho) and the two 16-byte
// writes of the bf16 row (chunks (2c) ^ rho, (2c + 1) ^ rho) both land in 8 distinct chunks. Per bf16
// stage: wait empty[s], convert, fence.proxy.async (its MEMBAR waits only for shared-memory accesses:
// this thread issues no global load), arrive on full[s] (kDqConvThreads arrivals); after both halves
// each warp releases the staging slot (every lane). Seven warps (ct = 0..223) cover 56 rows per pass.
template <class Config>
__device__ __forceinline__ void Gemm<Config>::dq_convert_walk(const GemmParams& p, const Smem& sm, const Walk& w,
                                                              int k_tiles, int ct) {
  const int l = ct & 31, c = l & 3;
  const int rho = (l >> 3) ^ (((l >> 2) & 1) * 5);
  const int r0 = 8 * (ct >> 5) + rho;
  const int k8 = p.k <= 0 ? 0 : (p.k + 127) / 128;
  int s8 = 0, stage = 0;
  u32 ph8 = 0, phase = 0;
  for (int u = w.first; u < w.count; u += w.step) {
    for (int kt8 = 0; kt8 < k8; ++kt8) {
      mbar_wait(sm.stg_full + 8 * s8, ph8);
      const u32 stg = sm.stg + u32(s8 * (kStgBytesA + kStgBytesB));
      const u32 slot = sm.stg_sc + u32(s8 * kDqScaleBytes);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (2 * kt8 + h >= k_tiles) break;
        mbar_wait(sm.empty + 8 * stage, phase ^ 1);
        const u32 a_st = sm.a + u32(stage * kTileBytesA);
        const u32 b_st = sm.b + u32(stage * kTileBytesB);
#pragma unroll 4
        for (int i = 0; i < kDqRowSteps; ++i) {
          const int ri = r0 + kDqRowsPerPass * i;
          if (kDqRows % kDqRowsPerPass != 0 && ri >= kDqRows) break;
          const int r = kDqRegA ? kBlockM + ri : ri;  // the row in the scale slot: A's rows first
          const bool is_a = r < kBlockM;
          const int rr = is_a ? r : r - kBlockM;
          const u32 src = (is_a ? stg : stg + kStgBytesA) + u32(rr * 128);
          u32 wv[4];
          lds_128(wv, src + (u32((4 * h + c) ^ rho) << 4));
          const float f = f32_from_bits(lds_u32(slot + 16u * u32(r) + 4u * u32(2 * h + (c >> 1))));
          u32 o[8];
          dq_convert(wv, f, o);
          const u32 dst = (is_a ? a_st : b_st) + u32(rr * 128);
          if constexpr (kDqRegA) {
            // K permuted within the 64-K stage (the consumers' A fragments come in the same order):
            // physical k = 16 c + 4 s + m goes to logical k16 step s at j = 2 c + m (m < 2) or
            // 8 + 2 c + m - 2: bytes 32 s + 4 c (chunk 2 s) and 32 s + 16 + 4 c (chunk 2 s + 1).
#pragma unroll
            for (int st = 0; st < 4; ++st) {
              sts_u32(dst + (u32((2 * st) ^ rho) << 4) + 4u * u32(c), o[2 * st]);
              sts_u32(dst + (u32((2 * st + 1) ^ rho) << 4) + 4u * u32(c), o[2 * st + 1]);
            }
          } else {
            sts_128(dst + (u32((2 * c) ^ rho) << 4), o[0], o[1], o[2], o[3]);
            sts_128(dst + (u32((2 * c + 1) ^ rho) << 4), o[4], o[5], o[6], o[7]);
          }
        }
        fence_proxy_async_shared();  // this thread's stores, visible to the wgmmas that read the stage
        mbar_arrive(sm.full + 8 * stage);
        if (++stage == kStages) {
          stage = 0;
          phase ^= 1;
        }
      }
      // Every lane releases its own reads of the staging slot (kDqConvThreads arrivals): a lane-0
      // release after __syncwarp is as correct, but racecheck does not follow it (84 reports on the
      // H200).
      mbar_arrive(sm.stg_full + 8 * (kDqStg + s8));  // stg_empty[s8]
      if (++s8 == kDqStg) {
        s8 = 0;
        ph8 ^= 1;
      }
    }
  }
}

// The consumers' mainloop with A in registers (kDqRegA). Per 64-K stage kt (half h of staging atom kt /
// 2): each thread loads the 16 staged FP8 bytes 16 t .. 16 t + 15 of half h of its rows g and g + 8 (one
// E8M0 block each), converts them with the row's scale, and uses them as the A fragments of the stage's
// four k16 steps in the producer's K permutation (k16 step s, a[0] / a[2] = physical bytes 4 s, 4 s + 1 /
// 4 s + 2, 4 s + 3 of row g; a[1] / a[3] the same of row g + 8). The staging slot is released (every
// consumer lane) once both halves' A bytes are read; B comes from the bf16 ring as before. One register
// set of A, each stage drained before the next is converted (below).
template <class Config>
__device__ __forceinline__ void Gemm<Config>::mainloop_dq_rega(const Smem& sm, float (&acc)[kMmaM][kAccRegs],
                                                               const KRange& kr, int& stage, u32& phase, int& s8,
                                                               u32& ph8, u32 b_off, int wg_m, int warp, int lane) {
  static_assert(kMmaM == 1, "register-A dequantizing: 64-row warpgroup tiles");
  const int g = lane >> 2, t = lane & 3;
  const int r0 = wg_m * 64 + warp * 16 + g;  // r0 % 8 == g
  // One register set: ptxas serializes every wgmma (C7513) if a wgmma's A registers are written while
  // any wgmma is in flight, so each stage's batch drains (wait 0) before the next stage's A is
  // converted; the other consumer warpgroup's wgmmas fill the tensor cores meanwhile.
  u32 a[4][4];
  for (int kt8 = kr.begin / 2; 2 * kt8 < kr.end; ++kt8) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int kt = 2 * kt8 + h;
      if (kt >= kr.end) break;
      if (h == 0) mbar_wait(sm.stg_full + 8 * s8, ph8);
      const u32 stg = sm.stg + u32(s8 * (kStgBytesA + kStgBytesB));
      const u32 slot = sm.stg_sc + u32(s8 * kDqScaleBytes);
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        const int r = r0 + 8 * hr;
        u32 wv[4];
        lds_128(wv, stg + u32(r * 128) + (u32((4 * h + t) ^ g) << 4));
        const float f = f32_from_bits(lds_u32(slot + 16u * u32(r) + 4u * u32(2 * h + (t >> 1))));
        u32 o[8];
        dq_convert(wv, f, o);
#pragma unroll
        for (int st = 0; st < 4; ++st) {
          a[st][hr] = o[2 * st];
          a[st][2 + hr] = o[2 * st + 1];
        }
      }
      if (h == 1 || kt + 1 == kr.end) {
        mbar_arrive(sm.stg_full + 8 * (kDqStg + s8));  // stg_empty: this lane's A reads are done
        if (++s8 == kDqStg) {
          s8 = 0;
          ph8 ^= 1;
        }
      }
      mbar_wait(sm.full + 8 * stage, phase);
      const u64 desc_b = wgmma_desc_sw128(sm.b + stage * kTileBytesB + b_off);
#pragma unroll
      for (int st = 0; st < 4; ++st) wgmma_fence_regs(a[st]);
      fence_all(acc);
      wgmma_fence();
#pragma unroll
      for (int st = 0; st < 4; ++st) {
        const u32 sd = (kt == kr.begin && st == 0) ? 0u : 1u;
        if constexpr (2 * kAccRegs >= 208 && kEntryRegs < 160) {
          // 512 threads: no instruction may need more than 128 registers (see mma_tile).
          constexpr int kN1 = 2 * kAccRegs == 256 ? 128 : 112;
          constexpr int kN2 = 2 * kAccRegs - kN1;
          wgmma_m64_rs16<kN1, Format::kBf16>(*reinterpret_cast<float(*)[kN1 / 2]>(&acc[0][0]), a[st],
                                             desc_b + u64(2 * st), sd);
          wgmma_m64_rs16<kN2, Format::kBf16>(*reinterpret_cast<float(*)[kN2 / 2]>(&acc[0][kN1 / 2]), a[st],
                                             desc_b + u64(2 * st) + u64((kN1 * kRowBytes) >> 4), sd);
        } else {
          wgmma_m64_rs16<2 * kAccRegs, Format::kBf16>(acc[0], a[st], desc_b + u64(2 * st), sd);
        }
      }
      wgmma_commit();
      wgmma_wait<0>();
      fence_all(acc);
#pragma unroll
      for (int st = 0; st < 4; ++st) wgmma_fence_regs(a[st]);
      release(sm, stage, lane);
      if (++stage == kStages) {
        stage = 0;
        phase ^= 1;
      }
    }
  }
}

}  // namespace sm90
}  // namespace kiln_dev
