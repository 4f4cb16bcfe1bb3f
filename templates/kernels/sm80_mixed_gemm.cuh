// templates/kernels/sm80_mixed_gemm.cuh — mixed-format inputs (W4A16, W8A16, W4A8, W16A8, MXFP8 x FP8):
// cp.async ring + ldmatrix (A) + shared loads and in-register dequantization (B) + bf16 mma.sync.
//
//   Y[M, N] = (X[M, K] . dequant(W)[N, K]^T) * col_factor(n)         (fprop; X = a, W = b)
//
// X is bf16 or f16 [M, K] (f16: every value split into two bf16, hi + lo, that sum to it exactly, and
// each product issued for both: twice the mma work, no rounding of X); W is one of
//   mxfp4  E2M1 codes packed two per byte ([N, K/2], even element in the low nibble; the gpt-oss
//          `*_blocks` [.., N, K/32, 16] is the same memory) with E8M0 scales [N, K/32];
//   nvfp4  E2M1 codes [N, K/2] with UE4M3 scales [N, K/16] and an f32 global decode scale on the
//          device (b_global: one, or one per expert);
//   mxfp8  e4m3 bytes [N, K] with E8M0 scales [N, K/32] (the scale folded in like mxfp4's);
//   e4m3 / e5m2 with a tensor or per-channel (`n`) f32 scale, or DeepSeek 128x128 blocks (promoted);
// or X is FP8 (e4m3 / e5m2 with a tensor or per-token f32 scale, applied in the epilogue, or 1x128
// blocks, promoted) or MXFP8 (its E8M0 scales [M, K/32] folded into the converted values), with any W
// above (W4A8; MXFP8 with an FP8 partner) or with bf16 / f16 W (f16 split into two bf16 like f16 X).
// W is dequantized to bf16 in registers, EXACTLY: block scales are folded into the bf16 values
// (dequant/e2m1_to_bf16.cuh says why that is exact); f32 scales (FP8 tensor/n, the NVFP4 global) go
// to the epilogue (kernels/sm80_epilogue.cuh). Dense or grouped (scheduler/group_tile.cuh).
//
// Design (a sibling of kernels/sm80_gemm.cuh; one block = one block_m x block_n output tile):
// 1. K tiles of block_k = 64 elements: A rows of 128 bytes (swizzled as in sm80_smem.cuh, read with
//    ldmatrix), B rows of 32 (fp4) or 64 (fp8) bytes, unswizzled. One k-step = 32 K = two m16n8k16.
// 2. B fragments. A bf16 m16n8k16 wants, in lane (g = lane / 4, t = lane % 4), column g's k pairs
//    {2t, 2t+1} (b0) and {2t+8, 2t+9} (b1), while A comes from ldmatrix in that same natural order. So
//    B must be gathered into it: every lane reads the whole 16-byte chunk of its row g (ld.shared.v4;
//    the 4 lanes of a row read the same address, which the hardware broadcasts, and the 8 lanes of a
//    phase read rows g, g+1 whose row stride of 16..64 bytes puts them in distinct banks), then picks
//    its bytes with prmt:
//      fp4 (a chunk = 32 K): bytes t, 4+t, 8+t, 12+t = k pairs {2t,2t+1}, {8+2t,..}, {16+2t,..},
//          {24+2t,..}: b0, b1 of the first mma and b0, b1 of the second;
//      fp8 (two chunks = 32 K): bytes {2t, 2t+1} and {8+2t, 9+2t} of each chunk = b0, b1 of the mma
//          of that chunk.
//    Each byte of two E2M1 codes becomes one bf16x2 register (dequant/e2m1_to_bf16.cuh); FP8 pairs
//    become bf16x2 by the exact integer conversion of common/fp8_to_bf16.cuh (specials included).
//    No k permutation is involved: A and B both hold the natural order — except with FP8 activations
//    (W4A8): A rows are 64 bytes of e4m3 / e5m2 (64-byte swizzle), and lane (g, t) reads 4 bytes, k
//    = 4t..4t+3, of rows g and g + 8 per 16-K half (ld.shared.u32, conflict free) and converts them to
//    bf16 exactly. That hands the mma the k pairs {4t, 4t+1} (a0, a1) and {4t+2, 4t+3} (a2, a3) — a
//    permutation of k within each half that B follows: its fp4 bytes 2t, 2t+1, 8+2t, 9+2t hold exactly
//    those pairs. A dot product does not depend on the order of its k terms.
// 3. Block scales (one E8M0 per row per k-step; two UE4M3) are read from global memory into
//    registers with byte loads one K tile ahead — rows of any length and alignment work (gpt-oss has
//    90-byte scale rows); a k-block past K (zero-filled data) takes the neutral scale 1.
// 4. Pipeline, epilogue (incl. epilogue functors and the stacked gate|up row permutation of
//    epilogue/glu.cuh, applied to B rows and their block-scale rows), rasterization: as in sm80_gemm.cuh (kStages cp.async stages, one barrier per
//    K tile, double-buffered fragments across the two k-steps of a tile).
//
// Preconditions the planner checks (compiler/plan can_implement): K % 32 == 0 for 4-bit weights and
// K % 16 == 0 for FP8 weights (so both operands' rows are whole 16-byte chunks), rows 16-byte
// aligned, M, N, K < 2^31.
//
// Instantiated by generated code (compiler/emit) like sm80_gemm, with the entry kiln_sm80_gemm;
// stages * (block_m * 64 * A's bytes per element + block_n * block_k * bits / 8) bytes of dynamic shared
// memory (A rows: 128 bytes of bf16 / f16, 64 of FP8).
#pragma once

#include "common/fp8_to_bf16.cuh"
#include "common/gemm_params.cuh"
#include "common/types.cuh"
#include "dequant/block_scale.cuh"
#include "dequant/e2m1_to_bf16.cuh"
#include "kernels/sm80_epilogue.cuh"
#include "kernels/sm80_promotion.cuh"
#include "kernels/sm80_smem.cuh"
#include "ptx/cp_async.cuh"
#include "ptx/cvt.cuh"
#include "ptx/ld.cuh"
#include "ptx/ldmatrix.cuh"
#include "ptx/mma.cuh"
#include "scheduler/group_tile.cuh"

namespace kiln_dev {
namespace sm80 {

template <class Config>
struct MixedGemm {
  static constexpr Format kA = Config::kA;
  static constexpr Format kB = Config::kB;
  static constexpr int kBlockM = Config::kBlockM;
  static constexpr int kBlockN = Config::kBlockN;
  static constexpr int kBlockK = Config::kBlockK;
  static constexpr int kStages = Config::kStages;
  static constexpr int kWarpsM = Config::kWarpsM;
  static constexpr int kWarpsN = Config::kWarpsN;
  static constexpr int kThreads = kWarpsM * kWarpsN * 32;
  static constexpr bool kFp4 = format_is_fp4(kB);
  static constexpr bool kMx = kB == Format::kMxfp4 || kB == Format::kMxfp8;  // E8M0 per 32 K
  static constexpr bool kNv = kB == Format::kNvfp4;
  static constexpr Format kElemB = kB == Format::kMxfp8 ? Format::kE4m3 : kB;  // FP8 weights' element format
  // f16 activations: each f16 A value is split into two bf16 whose sum is exactly it (11 significant
  // bits = 8 + 3), and every product is issued twice (hi x w + lo x w): the bf16 weights stay exact
  // (an E8M0 scale does not fit f16's exponent range), at twice the tensor-core work.
  static constexpr bool kSplitA = kA == Format::kF16;
  // FP8 activations (e4m3 / e5m2 with a tensor or per-token f32 scale, applied in the epilogue) x 4-bit
  // weights (W4A8): A's bytes are converted to bf16 exactly as they are read from shared memory.
  // MXFP8 activations (kMxA) take the same path, their E8M0 scale per 32 K folded into the converted
  // bf16 values (a power of two: exact, as for MXFP8 weights).
  static constexpr bool kMxA = kA == Format::kMxfp8;
  static constexpr bool kA8 = kA == Format::kE4m3 || kA == Format::kE5m2 || kMxA;
  static constexpr Format kElemA = kMxA ? Format::kE4m3 : kA;
  // 16-bit weights with quantized (FP8 / MXFP8) activations: bf16 B used as is, f16 B split into two
  // bf16 (hi + lo, exact) like f16 activations, each multiplied by the same converted A. B rows are
  // read 8 bytes per lane in A's k order (see 2. above), from rows padded by 32 bytes (conflict free).
  static constexpr bool k16B = kB == Format::kBf16 || kB == Format::kF16;
  static constexpr bool kSplitB = kB == Format::kF16;
  static constexpr int kRowBytesA = kA8 ? kBlockK : kBlockK * 2;
  static constexpr int kRowBytesB = kFp4 ? kBlockK / 2 : k16B ? kBlockK * 2 : kBlockK;
  static constexpr int kRowStrideB = k16B ? kRowBytesB + 32 : kRowBytesB;  // B rows in shared memory
  static constexpr int kChunksA = kRowBytesA / 16;
  static constexpr int kChunksB = kRowBytesB / 16;
  static constexpr int kKSteps = kBlockK / 32;                          // k-steps of 32 K per tile
  static constexpr int kStepBytesB = kFp4 ? 16 : k16B ? 64 : 32;        // B bytes of one row per k-step
  static constexpr int kRegsB = kFp4 ? 1 : k16B ? 4 : 2;                 // B registers per n8 per k-step
  static constexpr int kWarpTileM = kBlockM / kWarpsM;
  static constexpr int kWarpTileN = kBlockN / kWarpsN;
  static constexpr int kMFrags = kWarpTileM / 16;
  static constexpr int kNFrags = kWarpTileN / 8;
  static constexpr int kTileBytesA = kBlockM * kRowBytesA;
  static constexpr int kStageBytes = kTileBytesA + kBlockN * kRowStrideB;
  static constexpr int kRowsPerPassA = kThreads / kChunksA;
  static constexpr int kRowsPerPassB = kThreads / kChunksB;
  static constexpr int kLoadsA = (kBlockM + kRowsPerPassA - 1) / kRowsPerPassA;
  static constexpr int kLoadsB = (kBlockN + kRowsPerPassB - 1) / kRowsPerPassB;
  static constexpr int kScalesPerStep = kMx ? 1 : kNv ? 2 : 0;  // block scales per row per k-step
  static constexpr int kScalesPerTile = kScalesPerStep * kKSteps;
  static constexpr int kScaleK = kMx ? 32 : 16;                 // K per block scale
  static constexpr u32 kNeutralScale = kMx ? 127u : 0x38u;      // 1.0 as E8M0 / UE4M3
  static constexpr int kAScaleFrags = kMxA ? kMFrags : 1;        // MXFP8 A: E8M0 bytes [mf][g, g+8][k-step]

  using Epi = Epilogue<Config>;
  // DeepSeek FP8 blocks (a = e4m3:block1x128 with 4-bit weights, b = e4m3:block128x128 with 16-bit
  // activations): f32 (or ue8m0) scales that do not fold into bf16 exactly, promoted per 128 K as in
  // sm80_gemm (kernels/sm80_promotion.cuh); MX and NVFP4 scales stay folded.
  using Promo = Promotion<Config, kWarpTileM / 16, kWarpTileN / 8, kWarpTileN, /*kFoldsMx=*/true>;
  static constexpr bool kPromote = Promo::kEnabled;
  static constexpr int kStepsPerPromotion = Promo::kBlockK / 32;  // k-steps of 32 K per block (two K tiles)

  static_assert(Config::kArch >= 80, "sm80_mixed_gemm needs sm_80+: cp.async and bf16 mma.sync start there");
#if defined(__CUDA_ARCH__)
  static_assert(Config::kArch * 10 <= __CUDA_ARCH__,
                "the config's kArch may not exceed the compile target (its instructions would not assemble)");
#endif
  static_assert(((kA == Format::kBf16 || kA == Format::kF16) && !k16B) || kA8,
                "mixed inputs take bf16 or f16 activations (f16 split into two bf16: see kSplitA) with quantized "
                "weights, or FP8 / MXFP8 activations (kA8) with any weights");
  static_assert(kFp4 || k16B || kB == Format::kE4m3 || kB == Format::kE5m2 || kB == Format::kMxfp8,
                "mixed-input weights are mxfp4, nvfp4, mxfp8, e4m3, e5m2, bf16 or f16");
  static_assert(kBlockK == 64, "block_k is 64 elements: 128-byte A rows, two k-steps per tile");
  static_assert(kKSteps % 2 == 0,
                "the fragment double buffer alternates per k-step and must line up across K tiles");
  static_assert(kBlockM % (16 * kWarpsM) == 0, "each warp owns a whole number of m16 fragments");
  static_assert(kBlockN % (8 * kWarpsN) == 0, "each warp owns a whole number of n8 fragments");
  static_assert(kStages >= 2 && kStages <= 8, "the cp.async ring needs 2..8 stages");
  static_assert(kThreads % kChunksA == 0 && kThreads % kChunksB == 0,
                "every thread copies the same chunk column of each row");
  static_assert(kThreads <= 1024, "a block holds at most 1024 threads");
  static_assert(kMFrags * kNFrags * 4 <= 64,
                "at most 64 f32 accumulators per thread: the A fragments of a 32-K step are twice those of "
                "sm80_gemm, and the converted B fragments need registers too");
  static_assert(!kPromote || kMFrags * kNFrags * 4 <= 32,
                "promotion keeps acc and tmp: at most 32 accumulators each (32 x 32 warp tiles)");
  static_assert(kMxA ? Config::kScaleA == Scale::kBlock1x32
                : kA8 ? (Config::kScaleA == Scale::kTensor || Config::kScaleA == Scale::kRow ||
                         Config::kScaleA == Scale::kBlock1x128)
                      : Config::kScaleA == Scale::kNone,
                "16-bit activations are unscaled; FP8 activations take a tensor or per-token scale (epilogue), "
                "MXFP8 activations their E8M0 blocks");

  // Double-buffered fragments of one k-step (32 K).
  struct Frags {
    u32 a[kMFrags][2][4];              // two bf16 m16n8k16 A fragments: k 0..15 and 16..31
    u32 b[kNFrags][kRegsB];            // gathered B codes or 16-bit pairs (see 2. above)
  };

  // ---- main loop pieces -------------------------------------------------------------------------

  // One K tile -> stage `stage`. Chunks past K and rows past M/N are zero-filled (they read nothing
  // but still name a valid address).
  static __device__ __forceinline__ void load_tile(u32 stage_addr, int kt, const GemmParams& p, u32 k_bytes_a,
                                                   u32 k_bytes_b, int chunk_a, int chunk_b,
                                                   const u8* const (&src_a)[kLoadsA], const u32 (&dst_a)[kLoadsA],
                                                   const bool (&ok_a)[kLoadsA], const u8* const (&src_b)[kLoadsB],
                                                   const u32 (&dst_b)[kLoadsB], const bool (&ok_b)[kLoadsB]) {
    const u32 off_a = u32(kt) * kRowBytesA;
    const u32 off_b = u32(kt) * kRowBytesB;
    const bool k_ok_a = u32(chunk_a * 16) < k_bytes_a - off_a;  // off < k_bytes: no wrap-around
    const bool k_ok_b = u32(chunk_b * 16) < k_bytes_b - off_b;
#pragma unroll
    for (int i = 0; i < kLoadsA; ++i) {
      if (kBlockM % kRowsPerPassA == 0 || dst_a[i] != ~0u) {
        const bool ok = ok_a[i] && k_ok_a;
        cp_async_16(stage_addr + dst_a[i], ok ? src_a[i] + off_a : p.a, ok ? 16u : 0u);
      }
    }
#pragma unroll
    for (int i = 0; i < kLoadsB; ++i) {
      if (kBlockN % kRowsPerPassB == 0 || dst_b[i] != ~0u) {
        const bool ok = ok_b[i] && k_ok_b;
        cp_async_16(stage_addr + kTileBytesA + dst_b[i], ok ? src_b[i] + off_b : p.b, ok ? 16u : 0u);
      }
    }
  }

  // Fragments of k-step ks of the stage at stage_addr. a_lane / a_xor: as in sm80_gemm; b_lane: this
  // lane's B row (row g of the warp's first n8 fragment) within a stage; sel: its prmt selector.
  static __device__ __forceinline__ void load_frags(Frags& f, u32 stage_addr, int ks, u32 a_lane, u32 a_xor,
                                                    u32 b_lane, u32 sel) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if constexpr (kA8) {
        // 16-K half h of the step = logical chunk 2 ks + h of a 64-byte row; this lane's 4 bytes 4t..4t+3
        // of rows g and g + 8 (a_lane holds row g's offset + 4t, a_xor the row's chunk swizzle (g >> 1) & 3:
        // conflict free). They are the mma's k pairs in the order {4t, 4t+1} -> a0/a1, {4t+2, 4t+3} ->
        // a2/a3; B's bytes are gathered in the same k order (sel), so the products pair up.
        const u32 a_addr = stage_addr + a_lane + (u32((2 * ks + h) ^ a_xor) << 4);
#pragma unroll
        for (int mf = 0; mf < kMFrags; ++mf) {
          const u32 row_g = lds_u32(a_addr + mf * 16 * kRowBytesA);
          const u32 row_g8 = lds_u32(a_addr + (mf * 16 + 8) * kRowBytesA);
          fp8x4_to_bf16x4<kElemA, true>(row_g, f.a[mf][h][0], f.a[mf][h][2]);
          fp8x4_to_bf16x4<kElemA, true>(row_g8, f.a[mf][h][1], f.a[mf][h][3]);
        }
      } else {
        // 16-K half h of the step = logical chunks 2j, 2j + 1 with j = 2 ks + h (see sm80_gemm load_frags).
        const u32 a_addr = stage_addr + a_lane + (u32(32 * (2 * ks + h)) ^ a_xor);
#pragma unroll
        for (int mf = 0; mf < kMFrags; ++mf) ldmatrix_x4(f.a[mf][h], a_addr + mf * 16 * kRowBytesA);
      }
    }
    const u32 b_addr = stage_addr + b_lane + u32(ks * kStepBytesB);
#pragma unroll
    for (int nf = 0; nf < kNFrags; ++nf) {
      if constexpr (k16B) {
        // 16-bit B with FP8 A: half h's elements 4t..4t+3 of row g (b_lane holds the 8t bytes) = A's k
        // pairs {4t, 4t+1} (b0) and {4t+2, 4t+3} (b1). Rows 160 bytes apart: the 4 rows of a half-warp's
        // 8-byte loads lie in distinct 32-byte bank groups.
#pragma unroll
        for (int h = 0; h < 2; ++h) lds_u64(f.b[nf][2 * h], f.b[nf][2 * h + 1], b_addr + nf * 8 * kRowStrideB + h * 32);
      } else {
#pragma unroll
        for (int c = 0; c < (kFp4 ? 1 : 2); ++c) {
          u32 w[4];
          lds_128(w, b_addr + nf * 8 * kRowBytesB + c * 16);
          if constexpr (kA8 && !kFp4) {
            // FP8 B with FP8 A: bytes 4t..4t+3 of the chunk (A's k order); sel picks word t & 1 of a pair.
            f.b[nf][c] = (threadIdx.x & 2) ? prmt(w[2], w[3], sel) : prmt(w[0], w[1], sel);
          } else {
            // prmt indexes the bytes of {w0, w1} as 0..7: sel puts this lane's two bytes in bytes 0, 1.
            f.b[nf][c] = prmt(prmt(w[0], w[1], sel), prmt(w[2], w[3], sel), 0x5410u);
          }
        }
      }
    }
  }

  // One k-step: dequantize B (scales: this thread's block-scale bytes of the step, per n8 fragment),
  // then two m16n8k16 per (m16, n8) pair, serpentine over n.
  static __device__ __forceinline__ void mma_step(float (&acc)[kMFrags][kNFrags][4], const Frags& f,
                                                  const u32 (&scales)[kNFrags][kScalesPerTile > 0 ? kScalesPerTile : 1],
                                                  const u32 (&a_scales)[kAScaleFrags][2][kKSteps], int ks) {
    u32 b[kNFrags][2][2];                     // [nf][mma of k 0..15 / 16..31][b0, b1]
    u32 b_lo[kSplitB ? kNFrags : 1][2][2];    // f16 B: the lo halves (b holds the hi halves)
#pragma unroll
    for (int nf = 0; nf < kNFrags; ++nf) {
      if constexpr (k16B) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            if constexpr (kSplitB) {
              f16x2_split_bf16x2(f.b[nf][2 * h + r], b[nf][h][r], b_lo[nf][h][r]);
            } else {
              b[nf][h][r] = f.b[nf][2 * h + r];
            }
          }
        }
      } else if constexpr (kFp4) {
        const u32 x = f.b[nf][0];
        u32 s0, s1;
        if constexpr (kMx) {
          s0 = s1 = bf16_broadcast(e8m0_to_bf16(scales[nf][ks]));
        } else {
          s0 = ue4m3_to_bf16x2(scales[nf][2 * ks]);
          s1 = ue4m3_to_bf16x2(scales[nf][2 * ks + 1]);
        }
        b[nf][0][0] = e2m1x2_to_bf16x2(x & 0xFFu, s0);
        b[nf][0][1] = e2m1x2_to_bf16x2((x >> 8) & 0xFFu, s0);
        b[nf][1][0] = e2m1x2_to_bf16x2((x >> 16) & 0xFFu, s1);
        b[nf][1][1] = e2m1x2_to_bf16x2(x >> 24, s1);
      } else {
        fp8x4_to_bf16x4<kElemB, true>(f.b[nf][0], b[nf][0][0], b[nf][0][1]);
        fp8x4_to_bf16x4<kElemB, true>(f.b[nf][1], b[nf][1][0], b[nf][1][1]);
        if constexpr (kMx) {
          // MXFP8: the E8M0 scale folded in (a power of two; exact unless the product leaves bf16's
          // normal range: below 2^-126 it rounds to a subnormal, as f32 would at 2^-149).
          const u32 s = bf16_broadcast(e8m0_to_bf16(scales[nf][ks]));
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            b[nf][h][0] = fma_bf16x2(b[nf][h][0], s, kBf16x2NegZero);
            b[nf][h][1] = fma_bf16x2(b[nf][h][1], s, kBf16x2NegZero);
          }
        }
      }
    }
#pragma unroll
    for (int mf = 0; mf < kMFrags; ++mf) {
      // f16 activations: this m16 fragment's hi and lo halves (kSplitA), each multiplied by the same B;
      // split one fragment at a time to keep the registers of one.
      u32 hi[2][4], lo[2][4];
      if constexpr (kSplitA) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
#pragma unroll
          for (int r = 0; r < 4; ++r) f16x2_split_bf16x2(f.a[mf][h][r], hi[h][r], lo[h][r]);
        }
      } else if constexpr (kMxA) {
        // MXFP8 activations: rows g (registers 0, 2) and g + 8 (1, 3) times their E8M0 scale of this k-step.
        const u32 s_g = bf16_broadcast(e8m0_to_bf16(a_scales[mf][0][ks]));
        const u32 s_g8 = bf16_broadcast(e8m0_to_bf16(a_scales[mf][1][ks]));
#pragma unroll
        for (int h = 0; h < 2; ++h) {
#pragma unroll
          for (int r = 0; r < 4; ++r) hi[h][r] = fma_bf16x2(f.a[mf][h][r], (r & 1) ? s_g8 : s_g, kBf16x2NegZero);
        }
      }
#pragma unroll
      for (int j = 0; j < kNFrags; ++j) {
        const int nf = (mf & 1) ? kNFrags - 1 - j : j;
        if constexpr (kSplitA) {
          mma_m16n8k16_bf16(acc[mf][nf], hi[0], b[nf][0]);
          mma_m16n8k16_bf16(acc[mf][nf], hi[1], b[nf][1]);
          mma_m16n8k16_bf16(acc[mf][nf], lo[0], b[nf][0]);
          mma_m16n8k16_bf16(acc[mf][nf], lo[1], b[nf][1]);
        } else if constexpr (kMxA) {
          mma_m16n8k16_bf16(acc[mf][nf], hi[0], b[nf][0]);
          mma_m16n8k16_bf16(acc[mf][nf], hi[1], b[nf][1]);
          if constexpr (kSplitB) {
            mma_m16n8k16_bf16(acc[mf][nf], hi[0], b_lo[nf][0]);
            mma_m16n8k16_bf16(acc[mf][nf], hi[1], b_lo[nf][1]);
          }
        } else {
          mma_m16n8k16_bf16(acc[mf][nf], f.a[mf][0], b[nf][0]);
          mma_m16n8k16_bf16(acc[mf][nf], f.a[mf][1], b[nf][1]);
          if constexpr (kSplitB) {
            mma_m16n8k16_bf16(acc[mf][nf], f.a[mf][0], b_lo[nf][0]);
            mma_m16n8k16_bf16(acc[mf][nf], f.a[mf][1], b_lo[nf][1]);
          }
        }
      }
    }
  }

  // The block-scale bytes of K tile kt for this thread's B rows (rows n_row + 8 nf of the expert's
  // scales at scale_base, clamped to N - 1: their products are never stored); k-blocks past K get the
  // neutral scale.
  static __device__ __forceinline__ void load_scales(const GemmParams& p, const u8* scale_base, int n_row, int kt,
                                                     u32 (&s)[kNFrags][kScalesPerTile > 0 ? kScalesPerTile : 1]) {
    if constexpr (kScalesPerTile > 0) {
      const int kb0 = kt * kScalesPerTile;
      const int kb_end = p.k / kScaleK;
#pragma unroll
      for (int nf = 0; nf < kNFrags; ++nf) {
        const int r = n_row + 8 * nf < p.n ? n_row + 8 * nf : p.n - 1;
        const u8* row = scale_base + i64(glu_w_row<Epi::kGateUp>(r, p.n)) * p.lds_b;  // W's row (epilogue/glu.cuh)
#pragma unroll
        for (int i = 0; i < kScalesPerTile; ++i) {
          s[nf][i] = kb0 + i < kb_end ? ldg_u8(row + kb0 + i) : kNeutralScale;
        }
      }
    }
  }

  // MXFP8 activations: the E8M0 bytes of K tile kt for this lane's A rows row0 + 16 mf + 8 r (rows of
  // the tile's group; clamped to its last row, whose products are never stored); k-blocks past K: 1.
  static __device__ __forceinline__ void load_scales_a(const GemmParams& p, const TileWork& w, int row0, int kt,
                                                       u32 (&s)[kAScaleFrags][2][kKSteps]) {
    if constexpr (kMxA) {
      const int kb0 = kt * kKSteps;
      const int kb_end = p.k / 32;
#pragma unroll
      for (int mf = 0; mf < kMFrags; ++mf) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          int row = row0 + 16 * mf + 8 * r;
          row = row < w.rows ? row : w.rows - 1;
          const u8* base = reinterpret_cast<const u8*>(p.a_scale) + i64(w.row_base + row) * p.lds_a;
#pragma unroll
          for (int i = 0; i < kKSteps; ++i) s[mf][r][i] = kb0 + i < kb_end ? ldg_u8(base + kb0 + i) : 127u;
        }
      }
    }
  }

  // ---- the kernel -------------------------------------------------------------------------------

  static __device__ __forceinline__ void run(const GemmParams& p) {
    extern __shared__ __align__(128) u8 smem[];
    if (p.m <= 0 || p.n <= 0) return;

    const TileWork w = tile_work<Config::kGrouping, kBlockM, kBlockN>(p, Config::kGroupM);
    if (!w.valid) return;
    const int m0 = w.m0;
    const int n0 = w.n0;
    const int m_end = w.rows;

    const float a_t = Epi::a_tensor(p);
    const float b_t = Epi::b_tensor(p, w.expert);

    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int warp_m = warp / kWarpsN;
    const int warp_n = warp % kWarpsN;
    const int g = lane >> 2;
    const int t = lane & 3;

    // K in bytes fits in 32 bits: K < 2^31.
    const u32 k_bytes_a = u32(format_span_bytes(kA, p.k));
    const u32 k_bytes_b = u32(format_span_bytes(kB, p.k));
    const int k_tiles = p.k <= 0 ? 0 : (p.k - 1) / kBlockK + 1;

    // cp.async assignment (per operand): thread tid copies chunk tid % chunks of rows tid / chunks +
    // i * rows_per_pass; sources clamped to a valid row, rows past the edge zero-filled.
    const int chunk_a = tid % kChunksA;
    const int chunk_b = tid % kChunksB;
    const u8* src_a[kLoadsA];
    u32 dst_a[kLoadsA];
    bool ok_a[kLoadsA];
    const u8* src_b[kLoadsB];
    u32 dst_b[kLoadsB];
    bool ok_b[kLoadsB];
    {
      const i64 lda_bytes = format_span_bytes(kA, p.lda);
      const i64 ldb_bytes = format_span_bytes(kB, p.ldb);
      const u8* a_base = static_cast<const u8*>(p.a) + w.row_base * lda_bytes;
      const u8* b_base = static_cast<const u8*>(p.b) + format_span_bytes(kB, i64(w.expert) * p.b_expert_stride);
#pragma unroll
      for (int i = 0; i < kLoadsA; ++i) {
        const int r = tid / kChunksA + i * kRowsPerPassA;
        const int gr = m0 + r;
        ok_a[i] = r < kBlockM && gr < m_end;
        src_a[i] = a_base + i64(gr < m_end ? gr : m_end - 1) * lda_bytes + chunk_a * 16;
        dst_a[i] = r < kBlockM ? swizzled_offset<kRowBytesA>(r, chunk_a) : ~0u;
      }
#pragma unroll
      for (int i = 0; i < kLoadsB; ++i) {
        const int r = tid / kChunksB + i * kRowsPerPassB;
        const int gr = n0 + r;
        ok_b[i] = r < kBlockN && gr < p.n;
        // GEMM column gr reads W row glu_w_row(gr): itself, or the stacked gate|up permutation.
        src_b[i] = b_base + i64(glu_w_row<Epi::kGateUp>(gr < p.n ? gr : p.n - 1, p.n)) * ldb_bytes + chunk_b * 16;
        dst_b[i] = r < kBlockN ? u32(r * kRowStrideB + chunk_b * 16) : ~0u;
      }
    }

    // ldmatrix for A as in sm80_gemm (row l % 16, half l / 16); B: row g of each n8 fragment.
    const u32 smem_base = smem_u32(smem);
    // FP8 A (kA8): row g's bytes 4t.. and the row's chunk swizzle (warp tiles start on multiples of 16
    // rows, so (row >> 1) & 3 of rows g + 16 i and g + 8 + 16 i is (g >> 1) & 3).
    const int a_row = lane & 15;
    const u32 a_lane = kA8 ? u32((warp_m * kWarpTileM + g) * kRowBytesA + 4 * t)
                           : u32((warp_m * kWarpTileM + a_row) * kRowBytesA);
    const u32 a_xor = kA8 ? u32(swizzle_xor<kRowBytesA>(g)) : u32(((lane >> 4) ^ swizzle_xor<kRowBytesA>(a_row)) << 4);
    const u32 b_lane = u32(kTileBytesA + (warp_n * kWarpTileN + g) * kRowStrideB + (k16B ? 8 * t : 0));
    // fp4: bytes t and 4 + t of {w0, w1}; fp8: bytes 2t and 2t + 1 (see 2. above); fp4 with FP8 A: bytes
    // 2t, 2t + 1 of {w0, w1} and of {w2, w3} = k {4t..4t+3} and {16+4t..19+4t}, A's k order; fp8 with
    // FP8 A: word t & 1 of {w0, w1} (t < 2) or {w2, w3} = k 4t..4t+3 of the chunk.
    const u32 sel = kFp4 && !kA8    ? u32(t | ((t + 4) << 4))
                    : !kFp4 && kA8 ? u32(0x3210u + 0x4444u * u32(t & 1))
                                   : u32((2 * t) | ((2 * t + 1) << 4));

    // This thread's block-scale rows: B rows n_row + 8 nf of the expert's scales (clamped to N).
    const int n_row = n0 + warp_n * kWarpTileN + g;
    const u8* scale_base = reinterpret_cast<const u8*>(p.b_scale) + i64(w.expert) * p.b_scale_expert_stride;

    // acc: the result; tmp: one 128-K block's partial sums when FP8 blocks are promoted (else unused).
    float acc[kMFrags][kNFrags][4];
    float tmp[kMFrags][kNFrags][4];
#pragma unroll
    for (int mf = 0; mf < kMFrags; ++mf) {
#pragma unroll
      for (int nf = 0; nf < kNFrags; ++nf) {
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          acc[mf][nf][r] = 0.0f;
          tmp[mf][nf][r] = 0.0f;
        }
      }
    }
    // Promoted FP8 blocks: a's per row (a_row0 + 16 mf + 8 h), b's per warp tile (its first column);
    // loaded one 128-K block ahead. K % 128 == 0 for FP8 blocks (validate_sizes).
    typename Promo::Scales promo_cur, promo_next;
    const int promo_blocks = kPromote ? p.k / Promo::kBlockK : 0;
    const int promo_row0 = m0 + warp_m * kWarpTileM + g;
    const int promo_col0 = n0 + warp_n * kWarpTileN;
    if constexpr (kPromote) {
      if (promo_blocks > 0) Promo::load(p, w, promo_row0, promo_col0, 0, promo_next);
    }

    constexpr int kS = kScalesPerTile > 0 ? kScalesPerTile : 1;
    u32 sc_cur[kNFrags][kS];
    u32 sc_next[kNFrags][kS];
    load_scales(p, scale_base, n_row, 0, sc_next);
    const int a_row0 = m0 + warp_m * kWarpTileM + g;  // MXFP8 A: this lane's first row in the group
    u32 sa_cur[kAScaleFrags][2][kKSteps];
    u32 sa_next[kAScaleFrags][2][kKSteps];
    load_scales_a(p, w, a_row0, 0, sa_next);

    // Prologue: K tiles 0 .. kStages-2, one commit group each.
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < k_tiles) {
        load_tile(smem_base + s * kStageBytes, s, p, k_bytes_a, k_bytes_b, chunk_a, chunk_b, src_a, dst_a, ok_a,
                  src_b, dst_b, ok_b);
      }
      cp_async_commit();
    }
    cp_async_wait<kStages - 2>();
    __syncthreads();

    Frags frags[2];
    int read_stage = 0;
    int write_stage = kStages - 1;
    int next_tile = kStages - 1;
    load_frags(frags[0], smem_base, 0, a_lane, a_xor, b_lane, sel);

    for (int kt = 0; kt < k_tiles; ++kt) {
#pragma unroll
      for (int ks = 0; ks < kKSteps; ++ks) {
        const int step = kt * kKSteps + ks;  // global k-step (32 K)
        if constexpr (kPromote) {
          if (step % kStepsPerPromotion == 0) {
            // A new 128-K block: its scales were loaded one block ago; fetch the next block's now.
            const int kb = step / kStepsPerPromotion;
            promo_cur = promo_next;
            if (kb + 1 < promo_blocks) Promo::load(p, w, promo_row0, promo_col0, kb + 1, promo_next);
          }
        }
        if (ks == 0) {
          // This tile's scales were loaded one tile ago; fetch the next tile's now.
#pragma unroll
          for (int nf = 0; nf < kNFrags; ++nf) {
#pragma unroll
            for (int i = 0; i < kS; ++i) sc_cur[nf][i] = sc_next[nf][i];
          }
          if constexpr (kMxA) {
#pragma unroll
            for (int mf = 0; mf < kMFrags; ++mf) {
#pragma unroll
              for (int i = 0; i < kKSteps; ++i) {
                sa_cur[mf][0][i] = sa_next[mf][0][i];
                sa_cur[mf][1][i] = sa_next[mf][1][i];
              }
            }
          }
          if (kt + 1 < k_tiles) {
            load_scales(p, scale_base, n_row, kt + 1, sc_next);
            load_scales_a(p, w, a_row0, kt + 1, sa_next);
          }
        }
        if (ks == kKSteps - 1) {
          cp_async_wait<kStages - 2>();
          __syncthreads();
          read_stage = read_stage == kStages - 1 ? 0 : read_stage + 1;
        }
        load_frags(frags[(ks + 1) & 1], smem_base + read_stage * kStageBytes, (ks + 1) % kKSteps, a_lane, a_xor,
                   b_lane, sel);
        if (ks == 0) {
          if (next_tile < k_tiles) {
            load_tile(smem_base + write_stage * kStageBytes, next_tile, p, k_bytes_a, k_bytes_b, chunk_a, chunk_b,
                      src_a, dst_a, ok_a, src_b, dst_b, ok_b);
          }
          cp_async_commit();
          ++next_tile;
          write_stage = write_stage == kStages - 1 ? 0 : write_stage + 1;
        }
        if constexpr (kPromote) {
          mma_step(tmp, frags[ks & 1], sc_cur, sa_cur, ks);
          if ((step + 1) % kStepsPerPromotion == 0 && step / kStepsPerPromotion < promo_blocks)
            Promo::promote(acc, tmp, promo_cur);
        } else {
          mma_step(acc, frags[ks & 1], sc_cur, sa_cur, ks);
        }
      }
    }
    cp_async_wait<0>();

    Epi::store(p, w, m0 + warp_m * kWarpTileM + g, n0 + warp_n * kWarpTileN + 2 * t, a_t, b_t, acc);
  }
};

}  // namespace sm80

template <class Config>
__device__ __forceinline__ void sm80_mixed_gemm(const GemmParams& p) {
  sm80::MixedGemm<Config>::run(p);
}

}  // namespace kiln_dev
