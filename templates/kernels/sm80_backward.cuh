// templates/kernels/sm80_backward.cuh — the portable family's backward kernel: dgrad and wgrad on
// mma.sync, with MN-major operands read through ldmatrix.trans and quantized weights (or saved
// activations) dequantized to bf16 in shared memory.
//
//   dgrad  dX[M, K] = dY[M, N] . dequant(W)[N, K]        kernel GEMM m = M, n = K, k = N
//   wgrad  dW[N, K] = dY[M, N]^T . dequant(X)[M, K]      kernel GEMM m = N, n = K, k = M
//
// (compiler/plan/gemm_view.hpp; docs/backward.md). a = dY is bf16 or f16, read K-major in dgrad and
// MN-major in wgrad; b (W or X) is always MN-major: its stored rows run along the reduction.
//
// b's formats:
//   bf16 / f16 (mode high_precision; the same format as dY): copied into shared memory as stored.
//   mxfp4, nvfp4, e4m3, e5m2 (tensor, per-row, 1x128 or 128x128 scales) or mxfp8 (mode dequantized; dY
//   bf16): the stored codes are copied into a raw stage, then every thread converts its 8-element units
//   to bf16 into one converted tile, folding the block scale that varies along the reduction:
//       b(k, n) = bf16_rn(f32(decode(code) * s(k, n)))
//   (the f32 product rounded once to bf16; docs/backward.md). For E2M1 x E8M0, E2M1 x UE4M3 and FP8 x
//   E8M0 the product fits bf16 exactly (dequant/e2m1_to_bf16.cuh), and the conversion is the exact
//   bf16 fma of that header; f32 scales (per-row, FP8 blocks in f32) round. A tensor scale and NVFP4's
//   global are one factor of the whole sum: applied to the f32 accumulator at the store.
//
// Design (one block = one block_m x block_n output tile, warps_m x warps_n warps of m16 x n8 mmas):
// 1. K tiles of block_k (32, 64 or 128) reduction rows. Per stage: A as [block_m][block_k] (dgrad) or
//    [block_k][block_m] (wgrad), and B's block_k stored rows of block_n elements (16-bit) or their raw bytes. 16-byte cp.async
//    chunks, zero-filled past the reduction's end, past M / N and past the tile's columns.
// 2. Shared tiles of 16-bit elements are swizzled by 16-byte chunk (chunk ^ (row & 7) for rows of a
//    multiple of 128 bytes, chunk ^ ((row >> 1) & 3) for 64-byte rows: kernels/sm80_smem.cuh), so the
//    8 rows one ldmatrix phase reads fall in distinct bank groups.
// 3. Fragments: K-major A with ldmatrix.x4 as in kernels/sm80_gemm.cuh; MN-major A and B with
//    ldmatrix.x4.trans (ptx/ldmatrix.cuh), which hands lane (g, t) the k pair {2t, 2t+1} of row / column
//    g: an 8x8 block of stored [k][m] is exactly an mma fragment after the transpose.
// 4. Pipeline: kStages stages, one commit group per K tile, wait + barrier per tile; quantized b adds
//    the conversion of the current raw stage into the converted tile and a second barrier. The block
//    scales of the next tile are loaded into registers while the current tile's mmas run.
// 5. Scheduling: dgrad and dense wgrad as the portable forward GEMM (scheduler/group_tile.cuh: dense,
//    offsets, masked). Grouped wgrad reduces over each expert's rows: E x ceil(N / block_m) x
//    ceil(K / block_n) blocks, block (e, tile) summing rows [start_e, end_e) of dY and X (offsets: the
//    sanitized cumulative ends; masked: e * max_m + [0, count_e)) into dW[e] (out [E, N, K], experts
//    contiguous); an empty expert writes zeros.
// 6. Store: acc (x the tensor / global factor) rounded to the output format, two columns at a time
//    where the row stride and the base allow it; rows and columns past the output are never written.
//    accumulate=true: each output is read and the product added in f32, rounded once (out += ...).
//
// Preconditions the planner checks (compiler/plan sm80_backward_check_config, check_backward_rows):
// rows of every operand a whole number of 16 bytes; block_k 32, 64 or 128; block_n 32 or a multiple of 64 (and
// of 16 per warp); wgrad block_m 32 or a multiple of 64; dequantized b with bf16 dY.
//
// Instantiated by generated code (compiler/emit) like sm80_gemm, entry kiln_sm80_gemm, with
// stages * block_k * (2 * block_m + block_n * bits(b) / 8) bytes of dynamic shared memory, plus 2 *
// block_k * block_n for the converted tile when b is quantized (compiler/plan smem_bytes).
#pragma once

#include "common/decode.cuh"
#include "common/fp8_to_bf16.cuh"
#include "common/gemm_params.cuh"
#include "common/operand_major.cuh"
#include "common/raster.cuh"
#include "common/types.cuh"
#include "dequant/block_scale.cuh"
#include "dequant/e2m1_to_bf16.cuh"
#include "epilogue/store.cuh"
#include "ptx/cp_async.cuh"
#include "ptx/cvt.cuh"
#include "ptx/ld.cuh"
#include "ptx/ldmatrix.cuh"
#include "ptx/mma.cuh"
#include "ptx/warp.cuh"
#include "scheduler/group_tile.cuh"

namespace kiln_dev {
namespace sm80 {

template <class Config>
struct Backward {
  static constexpr Format kA = Config::kA;
  static constexpr Format kB = Config::kB;
  static constexpr Format kOut = Config::kOut;
  static constexpr bool kWgrad = ConfigTransA<Config>::kValue;  // wgrad reads dY MN-major
  static constexpr bool kKGrouped = kWgrad && Config::kGrouping != Grouping::kDense;
  static constexpr bool kAccumulate = ConfigAccumulate<Config>::kValue;  // out += the product
  static constexpr int kBlockM = Config::kBlockM;
  static constexpr int kBlockN = Config::kBlockN;
  static constexpr int kBlockK = Config::kBlockK;  // reduction rows per stage: 32, 64 or 128
  static constexpr int kStages = Config::kStages;
  static constexpr int kWarpsM = Config::kWarpsM;
  static constexpr int kWarpsN = Config::kWarpsN;
  static constexpr int kThreads = kWarpsM * kWarpsN * 32;
  static constexpr int kWarpTileM = kBlockM / kWarpsM;
  static constexpr int kWarpTileN = kBlockN / kWarpsN;
  static constexpr int kMFrags = kWarpTileM / 16;
  static constexpr int kNFrags = kWarpTileN / 8;

  // b's storage and what its conversion folds.
  static constexpr bool k16B = kB == Format::kBf16 || kB == Format::kF16;
  static constexpr bool kFp4 = kB == Format::kMxfp4 || kB == Format::kNvfp4;
  static constexpr bool kFp8 = kB == Format::kE4m3 || kB == Format::kE5m2 || kB == Format::kMxfp8;
  static constexpr Format kElemB = kB == Format::kMxfp8 ? Format::kE4m3 : kB;
  static constexpr int kBitsB = k16B ? 16 : kFp4 ? 4 : 8;
  static constexpr Scale kScaleB = Config::kScaleB;
  static constexpr ScaleType kScaleTypeB = Config::kScaleTypeB;
  // A scale that varies along the reduction (per row, blocks): folded into the converted values.
  static constexpr bool kFold = !k16B && kScaleB != Scale::kNone && kScaleB != Scale::kTensor;
  // Folded exactly by a bf16 fma: E8M0 / UE4M3 block scales (MX, NVFP4, DeepSeek ue8m0).
  static constexpr bool kFoldBf16 = kFold && kScaleTypeB != ScaleType::kF32;
  // One factor of the whole sum: a tensor scale, NVFP4's global.
  static constexpr bool kTensorScale = kScaleB == Scale::kTensor;
  static constexpr bool kGlobal = kB == Format::kNvfp4;

  // Shared memory: per stage A then B (raw bytes when quantized), then the converted tile.
  static constexpr int kRowBytesA = kWgrad ? kBlockM * 2 : kBlockK * 2;
  static constexpr int kRowsA = kWgrad ? kBlockK : kBlockM;
  static constexpr int kTileBytesA = kBlockM * kBlockK * 2;
  static constexpr int kRowBytesB16 = kBlockN * 2;           // a 16-bit B row (as stored or converted)
  static constexpr int kRawRowBytes = kBlockN * kBitsB / 8;  // a stored B row of the tile
  static constexpr int kStageBytes = kTileBytesA + kBlockK * kRawRowBytes;
  static constexpr int kConvBytes = k16B ? 0 : kBlockK * kRowBytesB16;
  static constexpr int kChunksA = kRowsA * kRowBytesA / 16;
  static constexpr int kChunksB = kBlockK * kRawRowBytes / 16;
  static constexpr int kLoadsA = (kChunksA + kThreads - 1) / kThreads;
  static constexpr int kLoadsB = (kChunksB + kThreads - 1) / kThreads;
  static constexpr int kUnitsPerRow = kBlockN / 8;  // conversion units of 8 elements
  static constexpr int kUnits = kBlockK * kUnitsPerRow;
  static constexpr int kUnitsPerThread = (kUnits + kThreads - 1) / kThreads;

  static_assert(Config::kArch >= 80, "the backward kernel needs sm_80+: cp.async, ldmatrix and bf16 mma.sync");
#if defined(__CUDA_ARCH__)
  static_assert(Config::kArch * 10 <= __CUDA_ARCH__,
                "the config's kArch may not exceed the compile target (its instructions would not assemble)");
#endif
  static_assert(ConfigTransB<Config>::kValue, "backward passes read b (W or X) MN-major");
  static_assert(kA == Format::kBf16 || kA == Format::kF16, "dY is bf16 or f16");
  static_assert((k16B && kB == kA) || (!k16B && kA == Format::kBf16 && (kFp4 || kFp8)),
                "b is dY's 16-bit format (high_precision), or a quantized format with bf16 dY (dequantized)");
  static_assert(kOut == Format::kBf16 || kOut == Format::kF16 || kOut == Format::kF32,
                "the output is bf16, f16 or f32");
  static_assert(kBlockK == 32 || kBlockK == 64 || kBlockK == 128, "block_k is 32, 64 or 128 reduction rows");
  static_assert(kBlockM % (16 * kWarpsM) == 0, "each warp owns a whole number of m16 fragments");
  static_assert(kBlockN % (16 * kWarpsN) == 0, "each warp owns an even number of n8 fragments (ldmatrix.x4)");
  static_assert(kRowBytesB16 == 64 || kRowBytesB16 % 128 == 0, "block_n is 32 or a multiple of 64");
  static_assert(kRowBytesA == 64 || kRowBytesA % 128 == 0, "wgrad: block_m is 32 or a multiple of 64");
  static_assert(kRawRowBytes % 16 == 0, "a raw B row is whole 16-byte chunks");
  static_assert(kStages >= 2 && kStages <= 8, "the cp.async ring needs 2..8 stages");
  static_assert(kMFrags * kNFrags * 4 <= 128, "at most 128 f32 accumulators per thread");
  static_assert(Config::kGroupM >= 1, "grouped rasterization needs at least one tile row per group");

  // Byte offset of 16-byte chunk `chunk` of row `row` in a swizzled tile of kRowBytes-byte rows.
  template <int kRowBytes>
  static __device__ __forceinline__ u32 swz(int row, int chunk) {
    if constexpr (kRowBytes == 64) {
      return u32(row * 64 + ((chunk ^ ((row >> 1) & 3)) << 4));
    } else {
      return u32(row * kRowBytes + ((chunk ^ (row & 7)) << 4));
    }
  }

  // The reduction rows [k_begin, k_end) of this block, its tile and where its rows and W live.
  struct Work {
    bool valid;
    int expert;
    long long row_base;  // dgrad: dY / dX rows of the group start here
    int rows;            // dgrad: rows of the group; wgrad: N
    int m0, n0;
    int k_begin, k_end;
  };

  // Grouped wgrad: the rows of expert e, sanitized as the forward's scan does (ends clamped to [0, M]
  // and made non-decreasing). Every lane computes the same result.
  static __device__ __forceinline__ void expert_rows(const GemmParams& p, int e, int& begin, int& end) {
    if constexpr (Config::kGrouping == Grouping::kMasked) {
      begin = e * p.max_m;
      end = begin + clamp_int(ldg_s32(p.group_rows + e), 0, p.max_m);
    } else {
      const int lane = threadIdx.x & 31;
      int before = 0, upto = 0;
      for (int j0 = 0; j0 <= e; j0 += 32) {
        const int j = j0 + lane;
        const int v = j <= e ? clamp_int(ldg_s32(p.group_rows + j), 0, p.k) : 0;
        if (j < e && v > before) before = v;
        if (v > upto) upto = v;
      }
#pragma unroll
      for (int d = 16; d >= 1; d >>= 1) {
        const int b = int(shfl_xor_u32(u32(before), d)), u = int(shfl_xor_u32(u32(upto), d));
        before = b > before ? b : before;
        upto = u > upto ? u : upto;
      }
      begin = before;
      end = upto;
    }
  }

  static __device__ __forceinline__ Work find_work(const GemmParams& p) {
    Work w{};
    if constexpr (kKGrouped) {
      const int per_expert = (p.m + kBlockM - 1) / kBlockM;
      const int tiles_n = (p.n + kBlockN - 1) / kBlockN;
      const long long per = (long long)per_expert * tiles_n;
      const int e = int(blockIdx.x / per);
      if (e >= p.experts) return w;
      const TileCoord t = grouped_tile(blockIdx.x - e * per, per_expert, tiles_n, Config::kGroupM);
      w.valid = true;
      w.expert = e;
      w.rows = p.m;
      w.m0 = t.m * kBlockM;
      w.n0 = t.n * kBlockN;
      expert_rows(p, e, w.k_begin, w.k_end);
    } else {
      const TileWork t = tile_work<Config::kGrouping, kBlockM, kBlockN>(p, Config::kGroupM);
      w.valid = t.valid;
      w.expert = t.expert;
      w.row_base = t.row_base;
      w.rows = t.rows;
      w.m0 = t.m0;
      w.n0 = t.n0;
      w.k_begin = 0;
      w.k_end = p.k;
    }
    return w;
  }

  // ---- loads ------------------------------------------------------------------------------------

  // K tile starting at reduction row k0 -> the stage at stage_addr.
  static __device__ __forceinline__ void load_tile(u32 stage_addr, const GemmParams& p, const Work& w, int k0,
                                                   const u8* b_base) {
    const int tid = threadIdx.x;
#pragma unroll
    for (int i = 0; i < kLoadsA; ++i) {
      const int idx = tid + i * kThreads;
      if (kChunksA % kThreads == 0 || idx < kChunksA) {
        const int row = idx / (kRowBytesA / 16), chunk = idx % (kRowBytesA / 16);
        bool ok;
        long long src;  // element offset into dY
        if constexpr (kWgrad) {  // [32 reduction rows][block_m columns of dY]
          const int kr = k0 + row, col = w.m0 + chunk * 8;
          ok = kr < w.k_end && col < p.m;
          src = (long long)kr * p.lda + col;
        } else {  // [block_m rows of dY][32 columns of the reduction]
          const int r = w.m0 + row, kc = k0 + chunk * 8;
          ok = r < w.rows && kc < w.k_end;
          src = (w.row_base + r) * p.lda + kc;
        }
        cp_async_16(stage_addr + swz<kRowBytesA>(row, chunk),
                    ok ? static_cast<const u8*>(p.a) + src * 2 : static_cast<const u8*>(p.a), ok ? 16u : 0u);
      }
    }
    constexpr int kChunksPerRowB = kRawRowBytes / 16;
    constexpr int kElemsPerChunk = 128 / kBitsB;
#pragma unroll
    for (int i = 0; i < kLoadsB; ++i) {
      const int idx = tid + i * kThreads;
      if (kChunksB % kThreads == 0 || idx < kChunksB) {
        const int row = idx / kChunksPerRowB, chunk = idx % kChunksPerRowB;
        const int kr = k0 + row, col = w.n0 + chunk * kElemsPerChunk;
        const bool ok = kr < w.k_end && col < p.n;
        const u8* src = b_base + ((long long)kr * p.ldb + col) * kBitsB / 8;
        const u32 dst = k16B ? swz<kRowBytesB16>(row, chunk) : u32(row * kRawRowBytes + chunk * 16);
        cp_async_16(stage_addr + kTileBytesA + dst, ok ? src : b_base, ok ? 16u : 0u);
      }
    }
  }

  // ---- dequantization of a raw B stage ------------------------------------------------------------

  // The scale word of unit u of the tile at k0: a bf16x2 (kFoldBf16) or the f32 bits of the scale
  // (f32 scales) of stored B row k0 + u / kUnitsPerRow, columns n0 + 8 (u % kUnitsPerRow) ..+7.
  // Rows and columns outside the operand take the neutral 1 (their codes are zero-filled; a scale read
  // there could be Inf / NaN and make 0 * s a NaN).
  static __device__ __forceinline__ u32 load_scale(const GemmParams& p, const Work& w, const float* s_base, int k0,
                                                   int u) {
    constexpr u32 kOne = kFoldBf16 ? 0x3F803F80u : 0x3F800000u;
    const int kr = k0 + u / kUnitsPerRow, col = w.n0 + 8 * (u % kUnitsPerRow);
    if (u >= kUnits || kr >= w.k_end || col >= p.n) return kOne;
    if constexpr (kScaleB == Scale::kRow) {
      return bits_from_f32(ldg_f32(s_base + kr));
    } else if constexpr (kScaleB == Scale::kBlock1x32 || kScaleB == Scale::kBlock1x16) {
      const u32 b = ldg_u8(scale_row_bytes(s_base, kScaleTypeB, kr, p.lds_b) + col / (kScaleB == Scale::kBlock1x32 ? 32 : 16));
      return kScaleB == Scale::kBlock1x32 ? bf16_broadcast(e8m0_to_bf16(b)) : ue4m3_to_bf16x2(b);
    } else {
      static_assert(kScaleB == Scale::kBlock1x128 || kScaleB == Scale::kBlock128x128,
                    "folded b scales: per row, 1x128, 128x128, 1x32 (MX) or 1x16 (NVFP4)");
      const int srow = kScaleB == Scale::kBlock128x128 ? kr / 128 : kr;
      const u8* row = scale_row_bytes(s_base, kScaleTypeB, srow, p.lds_b);
      if constexpr (kScaleTypeB == ScaleType::kF32) {
        return bits_from_f32(ldg_f32(reinterpret_cast<const float*>(row) + col / 128));
      } else {
        return bf16_broadcast(e8m0_to_bf16(ldg_u8(row + col / 128)));
      }
    }
  }

  // Two bf16 (a bf16x2) times an f32 scale, each product rounded once to bf16.
  static __device__ __forceinline__ u32 scale_bf16x2_f32(u32 v, float s) {
    return cvt_pack_bf16x2(f32_from_bits(v << 16) * s, f32_from_bits(v & 0xFFFF0000u) * s);
  }

  // Unit u (8 elements of one stored row) of the raw stage -> 16 bytes of the converted tile.
  static __device__ __forceinline__ void convert_unit(u32 raw_addr, u32 conv_addr, int u, u32 scale) {
    const int row = u / kUnitsPerRow, c8 = u % kUnitsPerRow;
    u32 o[4];
    if constexpr (kFp4) {
      const u32 w4 = lds_u32(raw_addr + u32(row * kRawRowBytes + c8 * 4));
      const u32 s = kFold ? scale : 0x3F803F80u;
#pragma unroll
      for (int j = 0; j < 4; ++j) o[j] = e2m1x2_to_bf16x2((w4 >> (8 * j)) & 0xFFu, s);
    } else {
      u32 lo, hi;
      lds_u64(lo, hi, raw_addr + u32(row * kRawRowBytes + c8 * 8));
      fp8x4_to_bf16x4<kElemB, true>(lo, o[0], o[1]);
      fp8x4_to_bf16x4<kElemB, true>(hi, o[2], o[3]);
      if constexpr (kFoldBf16) {
#pragma unroll
        for (int j = 0; j < 4; ++j) o[j] = fma_bf16x2(o[j], scale, kBf16x2NegZero);
      } else if constexpr (kFold) {
        const float s = f32_from_bits(scale);
#pragma unroll
        for (int j = 0; j < 4; ++j) o[j] = scale_bf16x2_f32(o[j], s);
      }
    }
    sts_128(conv_addr + swz<kRowBytesB16>(row, c8), o[0], o[1], o[2], o[3]);
  }

  // ---- fragments and mmas -----------------------------------------------------------------------

  struct Frags {
    u32 a[kMFrags][4];
    u32 b[kNFrags][2];
  };

  // k-step ks (16 reduction rows) of the A tile at a_addr and the 16-bit B tile at b_addr.
  static __device__ __forceinline__ void load_frags(Frags& f, u32 a_addr, u32 b_addr, int ks, int wm0, int wn0) {
    const int lane = threadIdx.x & 31;
    const int j = lane >> 3, r8 = lane & 7;
#pragma unroll
    for (int mf = 0; mf < kMFrags; ++mf) {
      const int m = wm0 + mf * 16;
      if constexpr (kWgrad) {
        // Matrices (k 0-7, m 0-7), (k 0-7, m 8-15), (k 8-15, m 0-7), (k 8-15, m 8-15) = a0..a3.
        const int kr = 16 * ks + r8 + 8 * (j >> 1);
        ldmatrix_x4_trans(f.a[mf], a_addr + swz<kRowBytesA>(kr, (m >> 3) + (j & 1)));
      } else {
        // Rows m + (lane & 15), chunk 2 ks + (lane >> 4): (m 0-7 | 8-15) x (k 0-7 | 8-15) = a0..a3.
        ldmatrix_x4(f.a[mf], a_addr + swz<kRowBytesA>(m + (lane & 15), 2 * ks + (lane >> 4)));
      }
    }
#pragma unroll
    for (int nf = 0; nf < kNFrags; nf += 2) {
      // Matrices (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15).
      const int kr = 16 * ks + r8 + 8 * (j & 1);
      u32 r[4];
      ldmatrix_x4_trans(r, b_addr + swz<kRowBytesB16>(kr, ((wn0 + nf * 8) >> 3) + (j >> 1)));
      f.b[nf][0] = r[0];
      f.b[nf][1] = r[1];
      f.b[nf + 1][0] = r[2];
      f.b[nf + 1][1] = r[3];
    }
  }

  static __device__ __forceinline__ void mma_step(float (&acc)[kMFrags][kNFrags][4], const Frags& f) {
#pragma unroll
    for (int mf = 0; mf < kMFrags; ++mf) {
#pragma unroll
      for (int j = 0; j < kNFrags; ++j) {
        const int nf = (mf & 1) ? kNFrags - 1 - j : j;
        if constexpr (kA == Format::kBf16) {
          mma_m16n8k16_bf16(acc[mf][nf], f.a[mf], f.b[nf]);
        } else {
          mma_m16n8k16_f16(acc[mf][nf], f.a[mf], f.b[nf]);
        }
      }
    }
  }

  // ---- store ------------------------------------------------------------------------------------

  static __device__ __forceinline__ void store(const GemmParams& p, const Work& w, float (&acc)[kMFrags][kNFrags][4],
                                               int wm0, int wn0, float factor) {
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    constexpr int kEb = kOut == Format::kF32 ? 4 : 2;
    u8* out = static_cast<u8*>(p.out);
    int rows_end;
    long long row0;  // output row of tile row 0
    if constexpr (kWgrad) {
      rows_end = p.m;
      row0 = (long long)w.expert * p.m + w.m0;  // grouped dW [E, N, K], experts contiguous
    } else {
      rows_end = w.rows;
      row0 = w.row_base + w.m0;
    }
    const int rows = rows_end - w.m0;
    const bool pairs = (p.ldc % 2 == 0) && (reinterpret_cast<unsigned long long>(out) % (2 * kEb) == 0);
#pragma unroll
    for (int mf = 0; mf < kMFrags; ++mf) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = wm0 + mf * 16 + g + 8 * h;
        if (r >= rows) continue;
        u8* row_ptr = out + ((row0 + r) * p.ldc) * kEb;
#pragma unroll
        for (int nf = 0; nf < kNFrags; ++nf) {
          const int col = w.n0 + wn0 + nf * 8 + 2 * t;
          if (col >= p.n) continue;
          float v0 = acc[mf][nf][2 * h], v1 = acc[mf][nf][2 * h + 1];
          if constexpr (kTensorScale || kGlobal) {
            v0 *= factor;
            v1 *= factor;
          }
          if constexpr (kAccumulate) {  // read, add in f32, round once (epilogue/store.cuh)
            accumulate_out_pair<kOut>(p.out, p.ldc, p.n, pairs, row0 + r, col, v0, v1);
            continue;
          }
          u8* dst = row_ptr + (long long)col * kEb;
          const bool two = col + 1 < p.n;
          if constexpr (kOut == Format::kF32) {
            if (two && pairs) {
              stg_v2(dst, bits_from_f32(v0), bits_from_f32(v1));
            } else {
              stg_f32(dst, v0);
              if (two) stg_f32(dst + 4, v1);
            }
          } else {
            const u32 h0 = kOut == Format::kBf16 ? cvt_bf16(v0) : cvt_f16(v0);
            const u32 h1 = kOut == Format::kBf16 ? cvt_bf16(v1) : cvt_f16(v1);
            if (two && pairs) {
              stg_u32(dst, h0 | (h1 << 16));
            } else {
              st_u16(dst, h0);
              if (two) st_u16(dst + 2, h1);
            }
          }
        }
      }
    }
  }

  static __device__ __forceinline__ void st_u16(u8* p, u32 v) {
    asm volatile("st.global.u16 [%0], %1;\n" ::"l"(p), "h"(static_cast<unsigned short>(v)));
  }

  // ---- the kernel -------------------------------------------------------------------------------

  static __device__ void run(const GemmParams& p) {
    extern __shared__ __align__(128) u8 smem[];
    if (p.m <= 0 || p.n <= 0) return;
    const Work w = find_work(p);
    if (!w.valid) return;

    const int warp = threadIdx.x >> 5;
    const int wm0 = (warp / kWarpsN) * kWarpTileM;
    const int wn0 = (warp % kWarpsN) * kWarpTileN;
    const u32 smem_base = smem_u32(smem);
    const u32 conv_addr = smem_base + kStages * kStageBytes;

    // b of this block: W of the expert (grouped dgrad), else the whole operand (X rows are global).
    const bool b_per_expert = !kWgrad && Config::kGrouping != Grouping::kDense;
    const long long b_off = b_per_expert ? (long long)w.expert * p.b_expert_stride : 0;
    const u8* b_base = static_cast<const u8*>(p.b) + b_off * kBitsB / 8;
    const float* s_base = p.b_scale;
    if (kFold && b_per_expert) {
      s_base = reinterpret_cast<const float*>(reinterpret_cast<const u8*>(p.b_scale) +
                                              (long long)w.expert * p.b_scale_expert_stride *
                                                  (kScaleTypeB == ScaleType::kF32 ? 4 : 1));
    }
    float factor = 1.0f;
    if constexpr (kTensorScale) factor = ldg_f32(p.b_scale + (b_per_expert ? w.expert : 0));
    if constexpr (kGlobal) {
      if (p.b_global != nullptr) factor *= ldg_f32(p.b_global + (Config::kGlobalPerExpert ? w.expert : 0));
    }

    float acc[kMFrags][kNFrags][4];
#pragma unroll
    for (int mf = 0; mf < kMFrags; ++mf)
#pragma unroll
      for (int nf = 0; nf < kNFrags; ++nf)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[mf][nf][c] = 0.0f;

    const int k_len = w.k_end > w.k_begin ? w.k_end - w.k_begin : 0;
    const int k_tiles = (k_len + kBlockK - 1) / kBlockK;
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < k_tiles) load_tile(smem_base + s * kStageBytes, p, w, w.k_begin + s * kBlockK, b_base);
      cp_async_commit();
    }
    u32 scales[kUnitsPerThread];
    if constexpr (kFold) {
#pragma unroll
      for (int i = 0; i < kUnitsPerThread; ++i)
        scales[i] = load_scale(p, w, s_base, w.k_begin, int(threadIdx.x) + i * kThreads);
    }

    for (int kt = 0; kt < k_tiles; ++kt) {
      cp_async_wait<kStages - 2>();
      __syncthreads();
      const u32 stage = smem_base + (kt % kStages) * kStageBytes;
      u32 b_tile = stage + kTileBytesA;
      if constexpr (!k16B) {
#pragma unroll
        for (int i = 0; i < kUnitsPerThread; ++i) {
          const int u = int(threadIdx.x) + i * kThreads;
          if (kUnits % kThreads == 0 || u < kUnits) convert_unit(stage + kTileBytesA, conv_addr, u, kFold ? scales[i] : 0u);
        }
        __syncthreads();
        b_tile = conv_addr;
      }
      // The stage the previous iteration read is free (every thread passed the barrier above).
      const int next = kt + kStages - 1;
      if (next < k_tiles) load_tile(smem_base + (next % kStages) * kStageBytes, p, w, w.k_begin + next * kBlockK, b_base);
      cp_async_commit();
      if constexpr (kFold) {
        if (kt + 1 < k_tiles) {
#pragma unroll
          for (int i = 0; i < kUnitsPerThread; ++i)
            scales[i] = load_scale(p, w, s_base, w.k_begin + (kt + 1) * kBlockK, int(threadIdx.x) + i * kThreads);
        }
      }
#pragma unroll
      for (int ks = 0; ks < kBlockK / 16; ++ks) {
        Frags f;
        load_frags(f, stage, b_tile, ks, wm0, wn0);
        mma_step(acc, f);
      }
    }
    cp_async_wait<0>();
    store(p, w, acc, wm0, wn0, factor);
  }
};

}  // namespace sm80

template <class Config>
__device__ __forceinline__ void sm80_backward(const GemmParams& p) {
  sm80::Backward<Config>::run(p);
}

}  // namespace kiln_dev
