// templates/kernels/sm80_gemm.cuh — the portable dense GEMM: cp.async ring + ldmatrix + mma.sync.
//
//   Y[M, N] = (X[M, K] . W[N, K]^T) * sa * sb        (fprop; X = operand a, W = operand b)
//
// X and W are row-major with K contiguous, in bf16/f16 (both the same), FP8 (e4m3/e5m2, any mix) or
// MXFP8 (both). Y is bf16/f16/f32, row-major with row stride ldc. Runs on sm_80..sm_90 (the sm90 family
// is the fast path on Hopper; this is its fallback). Scales of FP8 operands (common/gemm_params.cuh):
//   tensor (f32), m / n (f32 per token / per output channel): applied in the epilogue
//       (kernels/sm80_epilogue.cuh): Y = acc * (row_factor(m) * col_factor(n));
//   block1x128 / block128x128 (DeepSeek; f32 or E8M0) and MXFP8's E8M0 per 32: promoted into the f32
//       accumulator per K block (kernels/sm80_promotion.cuh).
// Dense, or grouped over experts (offsets or masked layout; scheduler/group_tile.cuh decides which
// expert and rows a block computes). 16-bit x 4/8-bit mixed inputs are kernels/sm80_mixed_gemm.cuh.
//
// Design (one block = one block_m x block_n output tile; warps_m x warps_n warps, each owning a
// (block_m / warps_m) x (block_n / warps_n) sub-tile of m16 x n8 mma tiles):
//
// 1. Bytes, not elements. A K tile of block_k elements is held as rows of kRowBytes = block_k *
//    elem_bytes bytes (64 or 128). The mma fragments of m16n8k16 .bf16/.f16 and m16n8k32 .e4m3/.e5m2
//    have the same BYTE layout (PTX ISA §9.7.14.5.8 and §9.7.14.5.10): with g = lane / 4 and
//    t = lane % 4, over 32 bytes of K
//        A reg0 = row g,   bytes 4t..4t+3      A reg1 = row g+8, bytes 4t..4t+3
//        A reg2 = row g,   bytes 16+4t..+3     A reg3 = row g+8, bytes 16+4t..+3
//        B reg0 = col g,   bytes 4t..4t+3      B reg1 = col g,   bytes 16+4t..+3
//    (bf16: bytes 4t..4t+3 are k = 2t, 2t+1; fp8: k = 4t..4t+3). So one k-step = 32 bytes of K for
//    every format, one ldmatrix.x4 path feeds all of them, and only the mma differs:
//        bf16/f16:              1 x m16n8k16 per k-step
//        fp8, sm_89:            1 x m16n8k32 (.e4m3/.e5m2 per operand)
//        fp8, sm_90:            cvt to f16 in registers, 2 x m16n8k16 .f16 (mma_step_fp8_converted)
//        fp8, sm_80/sm_86:      integer conversion to bf16, 2 x m16n8k16 .bf16 (the same function)
// 2. Pipeline: kStages shared-memory stages filled by 16-byte cp.async.cg (zero-fill predication for
//    rows past M/N and the partial last K tile), one commit group per K tile, wait_group(kStages-2)
//    + one __syncthreads per K tile. ldmatrix fragments are double-buffered across k-steps: the
//    loads for k-step s+1 are issued before the mmas of k-step s.
// 3. Shared memory: per stage an A tile [block_m][kRowBytes] then a B tile [block_n][kRowBytes]. The
//    16-byte chunks of each row are XOR-swizzled so that the 8 rows one ldmatrix phase reads, and the
//    8 chunks one cp.async phase writes, fall in 8 distinct 4-bank groups (bank conflict free):
//        128-byte rows: chunk ^ (row & 7)           (8 rows -> 8 different chunks of 32 banks)
//        64-byte rows:  chunk ^ ((row >> 1) & 3)    (two rows share the 32 banks; rows 2j, 2j+1 use
//                                                    opposite halves, (row>>1)&3 permutes within)
// 4. Epilogue straight from the accumulators (kernels/sm80_epilogue.cuh): acc * (row_factor *
//    col_factor), rounded (cvt.rn) to the output format, stored two elements at a time where ldc and
//    the base pointer allow it, else one at a time; rows past the group and columns >= N are never
//    written.
// 5. Rasterization: blockIdx.x -> tile through grouped ordering (common/raster.cuh) for L2 reuse; for
//    grouped problems through the expert scan of scheduler/group_tile.cuh.
// 6. Block scales (promotion): with K-blocked scales the mmas of one K block accumulate into tmp, and
//    at the block's last k-step acc += tmp * (sa * sb) (kernels/sm80_promotion.cuh). A K block is 128
//    (FP8 blocks: K % 128 == 0) or 32 (MXFP8) elements = 4 or 1 k-steps of 32 bytes.
// 7. Epilogue functors and gate|up GLUs: kernels/sm80_epilogue.cuh applies the
//    generated functor per stored element; with gate_up=stacked the B tile rows are loaded through the
//    permutation of epilogue/glu.cuh so that every (gate, up) pair is two adjacent accumulator columns.
//
// Preconditions the planner checks (compiler/plan can_implement): K * elem_bytes, lda * elem_bytes
// and ldb * elem_bytes multiples of 16, a/b 16-byte aligned, M, N, K < 2^31; K % 128 == 0 with FP8
// block scales and K % 32 == 0 for MXFP8. The kernel itself handles any M >= 1, N >= 1, K >= 0
// (K = 0 writes zeros).
//
// Instantiated by generated code (compiler/emit) as:
//   struct KilnConfig { static constexpr int kBlockM = 128; ...; static constexpr Format kA = ...; };
//   extern "C" __global__ void __launch_bounds__(256, 1) kiln_sm80_gemm(kiln_dev::GemmParams p) {
//     kiln_dev::sm80_gemm<KilnConfig>(p);
//   }
// launched with grid (tiles_m * tiles_n), block (warps_m * warps_n * 32) and
// stages * (block_m + block_n) * kRowBytes bytes of dynamic shared memory.
#pragma once

#include "common/fp8_to_bf16.cuh"
#include "common/gemm_params.cuh"
#include "common/raster.cuh"
#include "common/types.cuh"
#include "kernels/sm80_epilogue.cuh"
#include "kernels/sm80_promotion.cuh"
#include "kernels/sm80_smem.cuh"
#include "ptx/cp_async.cuh"
#include "ptx/cvt.cuh"
#include "ptx/ldmatrix.cuh"
#include "ptx/mma.cuh"
#include "ptx/warp.cuh"
#include "scheduler/group_tile.cuh"

namespace kiln_dev {
namespace sm80 {

template <class Config>
struct Gemm {
  // MXFP8 elements are e4m3: the element formats below drive conversion and mma.
  static constexpr Format kA = Config::kA == Format::kMxfp8 ? Format::kE4m3 : Config::kA;
  static constexpr Format kB = Config::kB == Format::kMxfp8 ? Format::kE4m3 : Config::kB;
  static constexpr Format kOut = Config::kOut;
  static constexpr int kBlockM = Config::kBlockM;
  static constexpr int kBlockN = Config::kBlockN;
  static constexpr int kStages = Config::kStages;
  static constexpr int kWarpsM = Config::kWarpsM;
  static constexpr int kWarpsN = Config::kWarpsN;
  static constexpr int kThreads = kWarpsM * kWarpsN * 32;
  static constexpr int kElemBytes = format_bytes(kA);
  static constexpr int kRowBytes = Config::kBlockK * kElemBytes;
  static constexpr int kChunks = kRowBytes / 16;  // 16-byte chunks per tile row
  static constexpr int kKSteps = kRowBytes / 32;  // 32-byte k-steps per K tile
  static constexpr int kWarpTileM = kBlockM / kWarpsM;
  static constexpr int kWarpTileN = kBlockN / kWarpsN;
  static constexpr int kMFrags = kWarpTileM / 16;
  static constexpr int kNFrags = kWarpTileN / 8;
  static constexpr int kTileBytesA = kBlockM * kRowBytes;
  static constexpr int kStageBytes = (kBlockM + kBlockN) * kRowBytes;
  static constexpr int kRowsPerPass = kThreads / kChunks;  // tile rows one pass of cp.async covers
  static constexpr int kLoadsA = (kBlockM + kRowsPerPass - 1) / kRowsPerPass;
  static constexpr int kLoadsB = (kBlockN + kRowsPerPass - 1) / kRowsPerPass;
  static constexpr bool kFp8 = format_is_fp8(kA);
  // How FP8 operands reach the tensor cores (see mma_step):
  //   kNativeMma: mma.sync m16n8k32 .e4m3/.e5m2 (sm_89: QMMA.16832 in SASS).
  //   kF16Cvt:    cvt to f16 + f16 mma (sm_90+: FP8 is a wgmma feature there; ptxas 13.0 emulates
  //               FP8 mma.sync with the same conversion plus an f32 add per accumulator).
  //   kBf16Bits:  integer conversion to bf16 + bf16 mma (sm_80, sm_86: no FP8 mma, no FP8 cvt).
  enum class Fp8Path { kNone, kNativeMma, kF16Cvt, kBf16Bits };
  static constexpr Fp8Path kFp8Path = !kFp8                 ? Fp8Path::kNone
                                      : Config::kArch == 89 ? Fp8Path::kNativeMma
                                      : Config::kArch >= 90 ? Fp8Path::kF16Cvt
                                                            : Fp8Path::kBf16Bits;

  static_assert(Config::kArch >= 80, "sm80_gemm needs sm_80+: cp.async and bf16 mma.sync start there");
#if defined(__CUDA_ARCH__)
  static_assert(Config::kArch * 10 <= __CUDA_ARCH__,
                "the config's kArch may not exceed the compile target (its instructions would not assemble)");
#endif
  static_assert((format_is_16bit(kA) && kA == kB) || (format_is_fp8(kA) && format_is_fp8(kB)),
                "operands must be the same 16-bit format, or both FP8 (e4m3/e5m2 in any mix, or both mxfp8)");
  static_assert((Config::kA == Format::kMxfp8) == (Config::kB == Format::kMxfp8),
                "mxfp8 pairs with mxfp8 (both E8M0 per 32 along K)");
  static_assert(kOut == Format::kBf16 || kOut == Format::kF16 || kOut == Format::kF32,
                "the output is bf16, f16 or f32");
  static_assert(Config::kScaleA != Scale::kBlock1x16 && Config::kScaleB != Scale::kBlock1x16,
                "nvfp4 operands are read by the mixed-input family (kernels/sm80_mixed_gemm.cuh)");
  static_assert(kRowBytes == 64 || kRowBytes == 128,
                "a K tile row must be 64 or 128 bytes: the swizzles are defined for those widths");
  static_assert(kKSteps % 2 == 0,
                "the fragment double buffer alternates per k-step and must line up across K tiles");
  static_assert(kBlockM % (16 * kWarpsM) == 0, "each warp owns a whole number of m16 fragments");
  static_assert(kBlockN % (16 * kWarpsN) == 0,
                "each warp owns an even number of n8 fragments: one ldmatrix.x4 loads two of them");
  static_assert(kStages >= 2 && kStages <= 8, "the cp.async ring needs 2..8 stages");
  static_assert(kThreads % kChunks == 0, "every thread copies the same chunk column of each row");
  static_assert(kThreads <= 1024, "a block holds at most 1024 threads");
  static_assert(Config::kGroupM >= 1, "grouped rasterization needs at least one tile row per group");
  static_assert(kMFrags * kNFrags * 4 <= 128,
                "at most 128 f32 accumulators per thread, or the register file spills");
  static_assert(kFp8Path != Fp8Path::kBf16Bits || kMFrags * kNFrags * 4 <= 64,
                "the integer FP8 conversion needs registers for the converted fragments: at most 64 "
                "accumulators per thread (ptxas 13.0 spills a 64x64 warp tile on sm_80)");

  using Promo = Promotion<Config, kMFrags, kNFrags, kWarpTileN>;
  using Epi = Epilogue<Config>;
  static constexpr bool kPromote = Promo::kEnabled;
  static constexpr int kStepsPerPromotion = Promo::kBlockK / 32;  // 32 FP8 elements per k-step
  static_assert(!kPromote || kFp8, "promoted block scales apply to FP8 operands");
  static_assert(!kPromote || kMFrags * kNFrags * 4 <= 64,
                "block-scale promotion doubles the accumulators (acc + tmp): at most 64 per thread");
  static_assert(!kPromote || kKSteps % kStepsPerPromotion == 0 || kStepsPerPromotion % kKSteps == 0,
                "K tiles and promotion blocks must nest");

  // Double-buffered mma fragments of one k-step (32 bytes of K), raw bytes as ldmatrix returns them.
  struct Frags {
    u32 a[kMFrags][4];
    u32 b[kNFrags][2];
  };

  // ---- main loop pieces -------------------------------------------------------------------------

  // One K tile (kRowBytes of every A and B row) -> stage `stage`, as kLoadsA + kLoadsB 16-byte copies.
  // Copies of rows past M/N (ok_* false) and of chunks past K are zero-filled, reading nothing; they
  // still name a valid address (the operand's base) as PTX requires.
  static __device__ __forceinline__ void load_tile(u32 stage_addr, u32 k_off, u32 k_bytes, int chunk,
                                                   const GemmParams& p, const u8* const (&src_a)[kLoadsA],
                                                   const u32 (&dst_a)[kLoadsA], const bool (&ok_a)[kLoadsA],
                                                   const u8* const (&src_b)[kLoadsB],
                                                   const u32 (&dst_b)[kLoadsB], const bool (&ok_b)[kLoadsB]) {
    const bool k_ok = u32(chunk * 16) < k_bytes - k_off;  // k_off < k_bytes: no wrap-around
#pragma unroll
    for (int i = 0; i < kLoadsA; ++i) {
      if (kBlockM % kRowsPerPass == 0 || dst_a[i] != ~0u) {
        const bool ok = ok_a[i] && k_ok;
        cp_async_16(stage_addr + dst_a[i], ok ? src_a[i] + k_off : p.a, ok ? 16u : 0u);
      }
    }
#pragma unroll
    for (int i = 0; i < kLoadsB; ++i) {
      if (kBlockN % kRowsPerPass == 0 || dst_b[i] != ~0u) {
        const bool ok = ok_b[i] && k_ok;
        cp_async_16(stage_addr + kTileBytesA + dst_b[i], ok ? src_b[i] + k_off : p.b, ok ? 16u : 0u);
      }
    }
  }

  // Fragments of k-step ks of the stage at stage_addr. a_lane / b_lane: this lane's ldmatrix row
  // address within a stage; a_xor / b_xor: its swizzle term already merged with its chunk parity.
  static __device__ __forceinline__ void load_frags(Frags& f, u32 stage_addr, int ks, u32 a_lane, u32 a_xor,
                                                    u32 b_lane, u32 b_xor) {
    // Logical chunk 2*ks + h (h = this lane's half of the 32 bytes) swizzles to (2*ks + h) ^ x =
    // (2*ks) ^ (h ^ x) since 2*ks is even and h < 2; in bytes: (32*ks) ^ ((h ^ x) << 4).
    const u32 a_addr = stage_addr + a_lane + (u32(32 * ks) ^ a_xor);
    const u32 b_addr = stage_addr + b_lane + (u32(32 * ks) ^ b_xor);
#pragma unroll
    for (int mf = 0; mf < kMFrags; ++mf) ldmatrix_x4(f.a[mf], a_addr + mf * 16 * kRowBytes);
#pragma unroll
    for (int nf = 0; nf < kNFrags; nf += 2) {
      u32 r[4];
      ldmatrix_x4(r, b_addr + nf * 8 * kRowBytes);
      f.b[nf][0] = r[0];      // n 0-7,  bytes 0-15 of the k-step
      f.b[nf][1] = r[1];      // n 0-7,  bytes 16-31
      f.b[nf + 1][0] = r[2];  // n 8-15, bytes 0-15
      f.b[nf + 1][1] = r[3];  // n 8-15, bytes 16-31
    }
  }

  // One k-step of mmas. Serpentine order over n so consecutive mmas share an A or a B operand.
  static __device__ __forceinline__ void mma_step(float (&acc)[kMFrags][kNFrags][4], const Frags& f) {
    if constexpr (kFp8Path == Fp8Path::kBf16Bits) {
      // Slow path only when some lane holds an Inf/NaN code; warp-uniform (see ptx/warp.cuh).
      u32 specials = 0;
#pragma unroll
      for (int mf = 0; mf < kMFrags; ++mf) {
#pragma unroll
        for (int r = 0; r < 4; ++r) specials |= fp8x4_specials<kA>(f.a[mf][r]);
      }
#pragma unroll
      for (int nf = 0; nf < kNFrags; ++nf) {
#pragma unroll
        for (int r = 0; r < 2; ++r) specials |= fp8x4_specials<kB>(f.b[nf][r]);
      }
      if (warp_any(specials != 0)) {
        mma_step_fp8_converted<true>(acc, f);
      } else {
        mma_step_fp8_converted<false>(acc, f);
      }
    } else if constexpr (kFp8Path == Fp8Path::kF16Cvt) {
      mma_step_fp8_converted<false>(acc, f);
    } else {
#pragma unroll
      for (int mf = 0; mf < kMFrags; ++mf) {
#pragma unroll
        for (int j = 0; j < kNFrags; ++j) {
          const int nf = (mf & 1) ? kNFrags - 1 - j : j;
          if constexpr (kA == Format::kBf16) {
            mma_m16n8k16_bf16(acc[mf][nf], f.a[mf], f.b[nf]);
          } else if constexpr (kA == Format::kF16) {
            mma_m16n8k16_f16(acc[mf][nf], f.a[mf], f.b[nf]);
          } else {
            mma_m16n8k32_fp8<kA, kB>(acc[mf][nf], f.a[mf], f.b[nf]);
          }
        }
      }
    }
  }

  // Four FP8 codes of operand format kFmt -> two 16-bit pairs, lo = {byte 0, 1}, hi = {byte 2, 3}.
  template <Format kFmt, bool kSpecials>
  static __device__ __forceinline__ void convert(u32 w, u32& lo, u32& hi) {
    if constexpr (kFp8Path == Fp8Path::kF16Cvt) {
      fp8x4_to_f16x4<kFmt>(w, lo, hi);
    } else {
      fp8x4_to_bf16x4<kFmt, kSpecials>(w, lo, hi);
    }
  }

  static __device__ __forceinline__ void mma_16bit(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2]) {
    if constexpr (kFp8Path == Fp8Path::kF16Cvt) {
      mma_m16n8k16_f16(d, a, b);
    } else {
      mma_m16n8k16_bf16(d, a, b);
    }
  }

  // FP8 without a (good) FP8 mma: 32 bytes of K = 32 FP8 values per row, converted to 16-bit in
  // registers (bf16 by bit manipulation below sm_89; f16 by cvt on sm_90) and fed as two m16n8k16.
  //
  // Conversion turns each fragment register (4 FP8 bytes at k = 4t..4t+3, or 16+4t..) into two 16-bit
  // pairs, lo = {k 4t, 4t+1} and hi = {k 4t+2, 4t+3}. A 16-bit m16n8k16 fragment instead expects, in
  // lane t, k slots {2t, 2t+1} in A reg0/reg1 and B reg0, and slots {2t+8, 2t+9} in A reg2/reg3 and
  // B reg1. We place, for both A and B,
  //     slot 2t + j     <- actual k 4t + j        (j = 0, 1)   [the lo pairs]
  //     slot 2t + 8 + j <- actual k 4t + 2 + j                 [the hi pairs]
  // (first mma: k 0..15; second: the registers of bytes 16..31, k 16..31, the same way).
  // Proof that the product is unchanged: the mma computes D[m][n] += sum over slots s of
  // A[m][s] * B[s][n]. For fixed t the map s -> k above is a bijection of {2t, 2t+1, 2t+8, 2t+9} onto
  // {4t, .., 4t+3}, and over t = 0..3 a bijection of slots 0..15 onto k 0..15. A's slot s and B's slot
  // s are held by lanes with the same t (A: slot = 2t + (i & 1) (+8); B: the same formula) and were
  // filled by the same map, so both hold the SAME actual k. Hence the sum over slots is the sum over
  // k 0..15 of A[m][k] * B[k][n], reordered: every product is the exact product of the exactly
  // converted values; only the f32 accumulation order changes, which mma does not specify anyway.
  template <bool kSpecials>
  static __device__ __forceinline__ void mma_step_fp8_converted(float (&acc)[kMFrags][kNFrags][4],
                                                                const Frags& f) {
    u32 b_lo[kNFrags][2];  // k 0..15 of each n8 fragment: {lo(reg0), hi(reg0)}
    u32 b_hi[kNFrags][2];  // k 16..31:                     {lo(reg1), hi(reg1)}
#pragma unroll
    for (int nf = 0; nf < kNFrags; ++nf) {
      convert<kB, kSpecials>(f.b[nf][0], b_lo[nf][0], b_lo[nf][1]);
      convert<kB, kSpecials>(f.b[nf][1], b_hi[nf][0], b_hi[nf][1]);
    }
#pragma unroll
    for (int mf = 0; mf < kMFrags; ++mf) {
      u32 a_lo[4], a_hi[4];
      // A reg0 (row g) -> slots 2t.. (reg0) and 2t+8.. (reg2); A reg1 (row g+8) -> reg1 and reg3.
      convert<kA, kSpecials>(f.a[mf][0], a_lo[0], a_lo[2]);
      convert<kA, kSpecials>(f.a[mf][1], a_lo[1], a_lo[3]);
      convert<kA, kSpecials>(f.a[mf][2], a_hi[0], a_hi[2]);
      convert<kA, kSpecials>(f.a[mf][3], a_hi[1], a_hi[3]);
#pragma unroll
      for (int j = 0; j < kNFrags; ++j) {
        const int nf = (mf & 1) ? kNFrags - 1 - j : j;
        mma_16bit(acc[mf][nf], a_lo, b_lo[nf]);
        mma_16bit(acc[mf][nf], a_hi, b_hi[nf]);
      }
    }
  }

  // ---- the kernel -------------------------------------------------------------------------------

  static __device__ __forceinline__ void run(const GemmParams& p) {
    extern __shared__ __align__(128) u8 smem[];
    if (p.m <= 0 || p.n <= 0) return;

    // Which tile (of which expert); blocks without work leave before touching anything else.
    const TileWork w = tile_work<Config::kGrouping, kBlockM, kBlockN>(p, Config::kGroupM);
    if (!w.valid) return;
    const int m0 = w.m0;
    const int n0 = w.n0;
    const int m_end = w.rows;  // rows of the group: tile rows m0 + r < m_end are real

    // Tensor-wide scales first: their latency hides behind the main loop.
    const float a_t = Epi::a_tensor(p);
    const float b_t = Epi::b_tensor(p, w.expert);

    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int warp_m = warp / kWarpsN;
    const int warp_n = warp % kWarpsN;

    // K in bytes fits in 32 bits: K < 2^31 and elem_bytes <= 2.
    const u32 k_bytes = u32(p.k) * kElemBytes;
    const int k_tiles = k_bytes == 0 ? 0 : int((k_bytes - 1) / kRowBytes + 1);

    // cp.async assignment: thread tid copies chunk (tid % kChunks) of rows tid / kChunks + i * kRowsPerPass.
    // Sources are clamped to a valid row; rows past the edge copy zeros (ok = false).
    const int ld_chunk = tid % kChunks;
    const int ld_row = tid / kChunks;
    const u8* src_a[kLoadsA];
    u32 dst_a[kLoadsA];
    bool ok_a[kLoadsA];
    const u8* src_b[kLoadsB];
    u32 dst_b[kLoadsB];
    bool ok_b[kLoadsB];
    {
      const i64 lda_bytes = p.lda * kElemBytes;
      const i64 ldb_bytes = p.ldb * kElemBytes;
      const u8* a_base = static_cast<const u8*>(p.a) + w.row_base * lda_bytes;
      const u8* b_base = static_cast<const u8*>(p.b) + i64(w.expert) * p.b_expert_stride * kElemBytes;
#pragma unroll
      for (int i = 0; i < kLoadsA; ++i) {
        const int r = ld_row + i * kRowsPerPass;
        const int gr = m0 + r;
        ok_a[i] = r < kBlockM && gr < m_end;
        src_a[i] = a_base + i64(gr < m_end ? gr : m_end - 1) * lda_bytes + ld_chunk * 16;
        dst_a[i] = r < kBlockM ? swizzled_offset<kRowBytes>(r, ld_chunk) : ~0u;
      }
#pragma unroll
      for (int i = 0; i < kLoadsB; ++i) {
        const int r = ld_row + i * kRowsPerPass;
        const int gr = n0 + r;
        ok_b[i] = r < kBlockN && gr < p.n;
        // GEMM column gr reads W row glu_w_row(gr): itself, or the stacked gate|up permutation.
        src_b[i] = b_base + i64(glu_w_row<Epi::kGateUp>(gr < p.n ? gr : p.n - 1, p.n)) * ldb_bytes + ld_chunk * 16;
        dst_b[i] = r < kBlockN ? swizzled_offset<kRowBytes>(r, ld_chunk) : ~0u;
      }
    }

    // ldmatrix assignment (ptx/ldmatrix.cuh): lane l addresses row l % 8 of matrix l / 8.
    //   A (m16 x 32 bytes): matrices = {rows 0-7, rows 8-15} x {bytes 0-15, 16-31}
    //       -> row l % 16, half l / 16  => A regs 0..3 as in the table at the top.
    //   B (two n8 fragments x 32 bytes): matrices = {n 0-7: bytes 0-15, 16-31; n 8-15: same}
    //       -> row (l % 8) + 8 * (l / 16), half (l / 8) % 2.
    // Warp tile origins are multiples of 16 rows, so the swizzle term depends on the lane only.
    const u32 smem_base = smem_u32(smem);
    const int a_row = lane & 15;
    const int b_row = (lane & 7) + ((lane >> 4) << 3);
    const u32 a_lane = u32((warp_m * kWarpTileM + a_row) * kRowBytes);
    const u32 b_lane = u32(kTileBytesA + (warp_n * kWarpTileN + b_row) * kRowBytes);
    const u32 a_xor = u32(((lane >> 4) ^ swizzle_xor<kRowBytes>(a_row)) << 4);
    const u32 b_xor = u32((((lane >> 3) & 1) ^ swizzle_xor<kRowBytes>(b_row)) << 4);

    // The lane's first accumulator row (within the group) and column; see the epilogue.
    const int g = lane >> 2;
    const int t = lane & 3;
    const int row0 = m0 + warp_m * kWarpTileM + g;
    const int col0 = n0 + warp_n * kWarpTileN + 2 * t;

    // acc: the result; tmp: one K block's partial sums when scales are promoted (else unused).
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
    typename Promo::Scales promo_cur, promo_next;
    // K blocks of promoted scales (K % block is 0 for FP8 blocks and MX; see the preconditions).
    const int promo_blocks = kPromote ? p.k / Promo::kBlockK : 0;
    // Promoted b scales are read per column (MX) or per warp tile (block128x128: its first column).
    const int promo_col0 = Promo::kPerColumnB ? col0 : col0 - 2 * t;
    if constexpr (kPromote) {
      if (promo_blocks > 0) Promo::load(p, w, row0, promo_col0, 0, promo_next);
    }

    // Prologue: K tiles 0 .. kStages-2 into stages 0 .. kStages-2, one commit group each (empty
    // groups past the last tile keep the group count uniform for wait_group).
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < k_tiles) {
        load_tile(smem_base + s * kStageBytes, u32(s) * kRowBytes, k_bytes, ld_chunk, p, src_a, dst_a, ok_a,
                  src_b, dst_b, ok_b);
      }
      cp_async_commit();
    }
    cp_async_wait<kStages - 2>();  // this thread's copies of tile 0 have landed
    __syncthreads();               // ... and everyone's

    Frags frags[2];
    int read_stage = 0;
    int write_stage = kStages - 1;
    int next_tile = kStages - 1;
    load_frags(frags[0], smem_base, 0, a_lane, a_xor, b_lane, b_xor);

    for (int kt = 0; kt < k_tiles; ++kt) {
#pragma unroll
      for (int ks = 0; ks < kKSteps; ++ks) {
        const int step = kt * kKSteps + ks;  // global k-step (32 bytes of K)
        if constexpr (kPromote) {
          if (step % kStepsPerPromotion == 0) {
            // A new K block: its scales were loaded one block ago; fetch the next block's now.
            const int kb = step / kStepsPerPromotion;
            promo_cur = promo_next;
            if (kb + 1 < promo_blocks)
              Promo::load(p, w, row0, promo_col0, kb + 1, promo_next);
          }
        }
        if (ks == kKSteps - 1) {
          // The last k-step's fragments are in registers. Wait for tile kt+1 (committed groups:
          // tiles 0 .. kt + kStages - 1; at most kStages - 2 pending => tiles 0 .. kt + 1 landed), and
          // the barrier also tells the writers below that every warp is done reading stage kt.
          cp_async_wait<kStages - 2>();
          __syncthreads();
          read_stage = read_stage == kStages - 1 ? 0 : read_stage + 1;
        }
        // Prefetch the next k-step's fragments (past the last tile this reads a stale stage: harmless).
        load_frags(frags[(ks + 1) & 1], smem_base + read_stage * kStageBytes, (ks + 1) % kKSteps, a_lane,
                   a_xor, b_lane, b_xor);
        if (ks == 0) {
          // Refill the stage read during iteration kt-1: every warp passed that iteration's barrier
          // after its last ldmatrix of it, so no warp still reads it.
          if (next_tile < k_tiles) {
            load_tile(smem_base + write_stage * kStageBytes, u32(next_tile) * kRowBytes, k_bytes, ld_chunk, p,
                      src_a, dst_a, ok_a, src_b, dst_b, ok_b);
          }
          cp_async_commit();
          ++next_tile;
          write_stage = write_stage == kStages - 1 ? 0 : write_stage + 1;
        }
        if constexpr (kPromote) {
          mma_step(tmp, frags[ks & 1]);
          if ((step + 1) % kStepsPerPromotion == 0 && step / kStepsPerPromotion < promo_blocks)
            Promo::promote(acc, tmp, promo_cur);
        } else {
          mma_step(acc, frags[ks & 1]);
        }
      }
    }
    cp_async_wait<0>();  // nothing may be in flight when the block exits

    Epi::store(p, w, row0, col0, a_t, b_t, acc);
  }
};

}  // namespace sm80

template <class Config>
__device__ __forceinline__ void sm80_gemm(const GemmParams& p) {
  sm80::Gemm<Config>::run(p);
}

}  // namespace kiln_dev
