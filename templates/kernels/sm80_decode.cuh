// templates/kernels/sm80_decode.cuh — the portable family's decode kernel (a TileConfig with decode = 1):
// a few rows of X against a weight matrix streamed once at the read bandwidth.
//
//   Y[M, N] = (X[M, K] . W[N, K]^T) * sa * sb            (fprop, M small: 1..16 per token tile)
//
// Operands: the same 16-bit format (bf16 / f16), or FP8 (e4m3 / e5m2, any mix) with tensor, per-token
// (m) / per-channel (n) f32 scales, or DeepSeek blocks (a block1x128, b block128x128; f32 or E8M0),
// promoted per 128-K block like the sm80 mainloop (kernels/sm80_promotion.cuh). Outputs bf16 / f16 /
// f32, with an epilogue functor (no gate|up). Dense, or grouped over experts (offsets / masked layouts:
// a CTA takes one token tile of one expert, found by the portable family's expert scan,
// scheduler/group_tile.cuh; W, its scales and a per-expert tensor scale belong to that expert).
//
// Why a kernel of its own: at M <= 16 a GEMM is a read of W (N x K) and nothing else; the tiled
// mainloops stage W through shared memory in tiles whose rows are 64-128 bytes of K, tile by tile,
// and reach ~2.4 TB/s of the H200's 4.4 (bench/RESULTS.md). Here every warp streams W
// straight from global memory into mma.sync fragments, many 16-byte loads in flight, no shared memory
// until the end:
//
// 1. Swap A and B: W is the mma's A operand (16 weight rows = output channels per m16), X its B
//    operand (8 tokens per n8). One CTA owns block_n channels (block_n / 16 row groups) and block_m
//    tokens (8 or 16: one or two n8 fragments); its warps_n warps split K: warp w takes K units w,
//    w + warps_n, ... of block_k elements each (all warps of a CTA read neighbouring bytes of the same
//    rows at once).
// 2. Direct fragments. A unit is block_k * elem_bytes / 64 segments of 64 bytes of K. Lane (g, t)
//    (g = lane / 4, t = lane % 4) loads bytes 16t..16t+15 of the segment for weight rows g and g + 8
//    of each row group and for token g of each n8 fragment: one 16-byte load each (ld.global.nc, W's
//    without L1 allocation). A dot product does not care in which order its K terms are summed, so
//    the mma's k index is a permutation of the real one, the same for both operands: with the lane's
//    16 bytes as 32-bit words v0..v3 and mma q of the segment,
//        16-bit (m16n8k16, 2 per segment):   A = {W_g[2q], W_g+8[2q], W_g[2q+1], W_g+8[2q+1]},
//                                            B = {X_g[2q], X_g[2q+1]}
//        FP8 on sm_89 (m16n8k32, 2 per segment): the same words;
//        FP8 on sm_90 (no native FP8 mma.sync; cvt to f16x2, m16n8k16 .f16, 4 per segment): the
//            words converted to 8 f16x2 registers c0..c7, mma q takes c[2q], c[2q+1] as above.
//    (PTX ISA §9.7.14.5.8: A reg0 = row g, k 2t..2t+1; reg1 = row g+8; reg2 = row g, k 2t+8..2t+9; reg3
//    = row g+8; B reg0 = k 2t..2t+1 of column g, reg1 = k 2t+8..2t+9 — the same byte roles for k32 FP8.)
// 3. Tails: a 16-byte chunk at or past K * elem_bytes is zero for both operands (the planner makes K *
//    elem_bytes a multiple of 16, so a chunk is all in or all out); weight rows past N and tokens past
//    M read a clamped valid row whose results are never stored.
// 4. Reduction and epilogue: each warp writes its accumulators (channel x token) to shared memory,
//    one barrier, then every thread sums one output over the warps, scales it (acc * (row_factor *
//    col_factor), the sm80 epilogue's order), applies the functor and stores it; consecutive threads
//    take consecutive channels (one row of Y) — kernels/decode_store.cuh, shared with the warpgroup decode kernel.
//
// Launched with grid (ceil(M / block_m) * ceil(N / block_n)), block (warps_n * 32) and warps_n *
// block_n * block_m * 4 bytes of dynamic shared memory (compiler/plan launch_shape, smem_bytes).
#pragma once

#include "common/fp8_to_bf16.cuh"
#include "common/gemm_params.cuh"
#include "common/types.cuh"
#include "dequant/block_scale.cuh"
#include "kernels/decode_loop.cuh"
#include "kernels/decode_store.cuh"
#include "kernels/sm80_epilogue.cuh"
#include "ptx/cvt.cuh"
#include "ptx/ld.cuh"
#include "ptx/mma.cuh"
#include "scheduler/group_tile.cuh"

namespace kiln_dev {
namespace sm80 {

template <class Config>
struct Decode {
  static constexpr Format kA = Config::kA;
  static constexpr Format kB = Config::kB;
  static constexpr int kBlockM = Config::kBlockM;  // tokens per CTA
  static constexpr int kBlockN = Config::kBlockN;  // weight rows (output channels) per CTA
  static constexpr int kWarps = Config::kWarpsN;   // warps splitting K
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kInFlight = Config::kStages;  // warp steps in flight: 1 or 2 register sets
  static constexpr int kElemBytes = format_bytes(kA);
  static constexpr int kUnitBytes = Config::kBlockK * kElemBytes;
  static constexpr int kSegs = kUnitBytes / 64;
  static constexpr int kGroups = kBlockN / 16;  // m16 row groups of W
  static constexpr int kTok = kBlockM / 8;      // n8 fragments of X
  static constexpr bool kFp8 = format_is_fp8(kA);
  static constexpr bool kNativeFp8 = kFp8 && Config::kArch == 89;
  static constexpr bool kPromoteA = Config::kScaleA == Scale::kBlock1x128;
  static constexpr bool kPromoteB = Config::kScaleB == Scale::kBlock128x128;
  static constexpr bool kPromote = kPromoteA || kPromoteB;
  // Promoted K blocks per unit (128 FP8 elements = 2 segments each).
  static constexpr int kBlocks = kPromote ? Config::kBlockK / 128 : 1;
  static constexpr int kSegsPerBlock = kSegs / kBlocks;
  using Epi = Epilogue<Config>;

  static_assert(Config::kArch >= 80, "the decode kernel needs mma.sync with bf16 (sm_80+)");
  static_assert((format_is_16bit(kA) && kA == kB) || (kFp8 && format_is_fp8(kB)),
                "decode operands: the same 16-bit format, or FP8 (e4m3 / e5m2) on both sides");
  static_assert(!kFp8 || Config::kArch >= 89, "FP8 decode needs the FP8 cvt / mma of sm_89+");
  static_assert(!Epi::kGlu, "the decode kernel stores one output per channel: no gate|up");
  static_assert(kBlockM == 8 || kBlockM == 16, "block_m (tokens per CTA) is 8 or 16");
  static_assert(kInFlight == 1 || kInFlight == 2, "stages (warp steps in flight) is 1 or 2");
  static_assert(kBlockN % 16 == 0 && kBlockN >= 16 && kBlockN <= 64, "block_n is 16, 32, 48 or 64 weight rows");
  static_assert(kUnitBytes % 64 == 0 && kSegs >= 1 && kSegs <= 8, "block_k is 1..8 segments of 64 bytes");
  static_assert(!kPromote || (kFp8 && Config::kBlockK % 128 == 0),
                "promoted FP8 block scales: block_k a multiple of the 128-element K block");
  static_assert(Config::kScaleA != Scale::kBlock1x32 && Config::kScaleB != Scale::kBlock1x32 &&
                    Config::kScaleA != Scale::kBlock1x16 && Config::kScaleB != Scale::kBlock1x16,
                "MX / NVFP4 scales are not read by the decode kernel");

  // W: streamed once (ptx/ld.cuh ldg_stream_v4: no L1 allocation, 256-byte L2 prefetch). X: read by every
  // CTA (cached).

  // Every mma of one segment: d[rg][fr] += W row group rg x X token fragment fr. FP8 on sm_90 converts
  // each operand's 16 bytes to f16x2 once per segment (not once per mma pairing).
  static __device__ __forceinline__ void mma_segment(float (&d)[kGroups][kTok][4], const u32 (&w)[kGroups][2][4],
                                                     const u32 (&x)[kTok][4]) {
    if constexpr (kFp8 && !kNativeFp8) {
      u32 cx[kTok][8];
#pragma unroll
      for (int fr = 0; fr < kTok; ++fr)
#pragma unroll
        for (int j = 0; j < 4; ++j) fp8x4_to_f16x4<kA>(x[fr][j], cx[fr][2 * j], cx[fr][2 * j + 1]);
#pragma unroll
      for (int rg = 0; rg < kGroups; ++rg) {
        u32 cg[8], cg8[8];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          fp8x4_to_f16x4<kB>(w[rg][0][j], cg[2 * j], cg[2 * j + 1]);
          fp8x4_to_f16x4<kB>(w[rg][1][j], cg8[2 * j], cg8[2 * j + 1]);
        }
#pragma unroll
        for (int fr = 0; fr < kTok; ++fr) {
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            const u32 a[4] = {cg[2 * q], cg8[2 * q], cg[2 * q + 1], cg8[2 * q + 1]};
            const u32 b[2] = {cx[fr][2 * q], cx[fr][2 * q + 1]};
            mma_m16n8k16_f16(d[rg][fr], a, b);
          }
        }
      }
    } else {
#pragma unroll
      for (int rg = 0; rg < kGroups; ++rg) {
#pragma unroll
        for (int fr = 0; fr < kTok; ++fr) {
#pragma unroll
          for (int q = 0; q < 2; ++q) {
            const u32 a[4] = {w[rg][0][2 * q], w[rg][1][2 * q], w[rg][0][2 * q + 1], w[rg][1][2 * q + 1]};
            const u32 b[2] = {x[fr][2 * q], x[fr][2 * q + 1]};
            if constexpr (kNativeFp8) {
              // W is the mma's A operand: its format first.
              mma_m16n8k32_fp8<kB, kA>(d[rg][fr], a, b);
            } else if constexpr (kA == Format::kBf16) {
              mma_m16n8k16_bf16(d[rg][fr], a, b);
            } else {
              mma_m16n8k16_f16(d[rg][fr], a, b);
            }
          }
        }
      }
    }
  }

  // One warp step's registers: every 16-byte load of a unit (kSegs x (2 kGroups + kTok) per lane) and,
  // with block scales, the unit's K blocks' scales for this thread's tokens and row groups.
  struct Unit {
    u32 w[kSegs][kGroups][2][4];
    u32 x[kSegs][kTok][4];
    float sa[kBlocks][kTok][2];
    float sb[kBlocks][kGroups];
  };
  // This lane's row pointers (byte 16t of each row included) and what bounds a unit.
  struct Rows {
    const u8* const (&w)[kGroups][2];
    const u8* const (&x)[kTok];
    const u8* const (&sa)[kTok][2];
    const u8* const (&sb)[kGroups];
    long long k_bytes;
    int k_blocks;
    int t;
  };

  static __device__ __forceinline__ void load_unit(Unit& f, const Rows& r, long long u) {
#pragma unroll
    for (int s = 0; s < kSegs; ++s) {
      const long long off = u * kUnitBytes + 64 * s;
      const bool in = off + 16 * r.t < r.k_bytes;
#pragma unroll
      for (int rg = 0; rg < kGroups; ++rg) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if (in) {
            ldg_stream_v4(f.w[s][rg][h], r.w[rg][h] + off);
          } else {
            f.w[s][rg][h][0] = f.w[s][rg][h][1] = f.w[s][rg][h][2] = f.w[s][rg][h][3] = 0u;
          }
        }
      }
#pragma unroll
      for (int fr = 0; fr < kTok; ++fr) {
        if (in) {
          ldg_v4(f.x[s][fr], r.x[fr] + off);
        } else {
          f.x[s][fr][0] = f.x[s][fr][1] = f.x[s][fr][2] = f.x[s][fr][3] = 0u;
        }
      }
    }
    if constexpr (kPromote) {
      // K blocks of this unit; blocks past K (a partial last unit) hold zeros: their (clamped) scales
      // multiply nothing.
#pragma unroll
      for (int b = 0; b < kBlocks; ++b) {
        int kb = int(u * kBlocks) + b;
        kb = kb < r.k_blocks ? kb : r.k_blocks - 1;
#pragma unroll
        for (int fr = 0; fr < kTok; ++fr)
#pragma unroll
          for (int e = 0; e < 2; ++e)
            f.sa[b][fr][e] = kPromoteA ? load_scale_f32<Config::kScaleTypeA>(r.sa[fr][e], kb) : 1.0f;
#pragma unroll
        for (int rg = 0; rg < kGroups; ++rg)
          f.sb[b][rg] = kPromoteB ? load_scale_f32<Config::kScaleTypeB>(r.sb[rg], kb) : 1.0f;
      }
    }
  }

  static __device__ __forceinline__ void compute_unit(float (&acc)[kGroups][kTok][4], const Unit& f) {
    if constexpr (kPromote) {
#pragma unroll
      for (int b = 0; b < kBlocks; ++b) {
        float tmp[kGroups][kTok][4];
#pragma unroll
        for (int rg = 0; rg < kGroups; ++rg)
#pragma unroll
          for (int fr = 0; fr < kTok; ++fr)
#pragma unroll
            for (int c = 0; c < 4; ++c) tmp[rg][fr][c] = 0.0f;
#pragma unroll
        for (int s = b * kSegsPerBlock; s < (b + 1) * kSegsPerBlock; ++s) mma_segment(tmp, f.w[s], f.x[s]);
        // acc = fma(tmp, sa * sb, acc): accumulator c is channel g (+ 8 for c >= 2), token 2t + (c & 1).
#pragma unroll
        for (int rg = 0; rg < kGroups; ++rg)
#pragma unroll
          for (int fr = 0; fr < kTok; ++fr)
#pragma unroll
            for (int c = 0; c < 4; ++c)
              acc[rg][fr][c] = fma_rn(tmp[rg][fr][c], f.sa[b][fr][c & 1] * f.sb[b][rg], acc[rg][fr][c]);
      }
    } else {
#pragma unroll
      for (int s = 0; s < kSegs; ++s) mma_segment(acc, f.w[s], f.x[s]);
    }
  }

  static __device__ void run(const GemmParams& p) {
    extern __shared__ __align__(16) float red[];  // [kWarps][kBlockN][kBlockM]
    if (p.m <= 0 || p.n <= 0) return;  // no rows to clamp to (Plan::run never launches these; a bare launch might)
    // Which tile: dense (n fastest), or grouped (offsets / masked) through the portable family's expert
    // scan (scheduler/group_tile.cuh; group_m 1 keeps n fastest). Every thread calls it (warp shuffles).
    const TileWork work = tile_work<Config::kGrouping, kBlockM, kBlockN>(p, 1);
    if (!work.valid) return;  // a virtual tile row past the last expert's rows: uniform per CTA
    const int n0 = work.n0, m0 = work.m0;
    const int grp_rows = work.rows;         // rows of this group (dense: M); m0 < grp_rows
    const long long row_base = work.row_base;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    const long long k_bytes = (long long)p.k * kElemBytes;
    const u8* a_bytes = static_cast<const u8*>(p.a);
    const u8* b_bytes = static_cast<const u8*>(p.b) + (long long)work.expert * p.b_expert_stride * kElemBytes;

    // This lane's rows: weight rows n0 + 16 rg + g (+ 8), token rows m0 + 8 f + g of the group (clamped to
    // its last row; their results are never stored).
    const u8* wrow[kGroups][2];
#pragma unroll
    for (int rg = 0; rg < kGroups; ++rg) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        int r = n0 + 16 * rg + 8 * h + g;
        r = r < p.n ? r : p.n - 1;
        wrow[rg][h] = b_bytes + (long long)r * p.ldb * kElemBytes + 16 * t;
      }
    }
    const u8* xrow[kTok];
#pragma unroll
    for (int f = 0; f < kTok; ++f) {
      int r = m0 + 8 * f + g;
      r = r < grp_rows ? r : grp_rows - 1;
      xrow[f] = a_bytes + (row_base + r) * p.lda * kElemBytes + 16 * t;
    }
    // Promotion: this thread's scale rows (tokens 2t, 2t + 1 of each fragment; each row group's block of
    // this expert's b scales).
    const u8* sa_row[kTok][2] = {};
    const u8* sb_row[kGroups] = {};
    if constexpr (kPromoteA) {
#pragma unroll
      for (int f = 0; f < kTok; ++f) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          int r = m0 + 8 * f + 2 * t + e;
          r = r < grp_rows ? r : grp_rows - 1;
          sa_row[f][e] = scale_row_bytes(p.a_scale, Config::kScaleTypeA, row_base + r, p.lds_a);
        }
      }
    }
    if constexpr (kPromoteB) {
      const float* sb_base = reinterpret_cast<const float*>(
          reinterpret_cast<const u8*>(p.b_scale) +
          (long long)work.expert * p.b_scale_expert_stride * (Config::kScaleTypeB == ScaleType::kF32 ? 4 : 1));
#pragma unroll
      for (int rg = 0; rg < kGroups; ++rg) {
        int r = n0 + 16 * rg;
        r = r < p.n ? r : p.n - 1;
        sb_row[rg] = scale_row_bytes(sb_base, Config::kScaleTypeB, r / 128, p.lds_b);
      }
    }

    float acc[kGroups][kTok][4];
#pragma unroll
    for (int rg = 0; rg < kGroups; ++rg)
#pragma unroll
      for (int f = 0; f < kTok; ++f)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[rg][f][c] = 0.0f;

    const long long units = (k_bytes + kUnitBytes - 1) / kUnitBytes;
    const Rows lane_rows{wrow, xrow, sa_row, sb_row, k_bytes, (p.k + 127) / 128, t};
    decode_units<kWarps, kInFlight, Unit>(
        units, warp, [&](Unit& f, long long u) { load_unit(f, lane_rows, u); },
        [&](const Unit& f) { compute_unit(acc, f); });

    decode_stage_partials<kBlockN, kBlockM>(red, acc, warp, g, t);  // red[warp][channel][token]
    __syncthreads();
    const int rows = grp_rows - m0 < kBlockM ? grp_rows - m0 : kBlockM;
    decode_store<Config, kWarps, kBlockN, kBlockM, kThreads>(p, red, work, rows);
  }
};

}  // namespace sm80

template <class Config>
__device__ __forceinline__ void sm80_decode(const GemmParams& p) {
  sm80::Decode<Config>::run(p);
}

}  // namespace kiln_dev
