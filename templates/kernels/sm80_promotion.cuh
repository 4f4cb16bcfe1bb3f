// templates/kernels/sm80_promotion.cuh — promotion of the f32 accumulator per K block, for scales that
// change along K and cannot be folded into the operands exactly (docs/numerics.md §2):
//   DeepSeek FP8 blocks   a = e4m3:block1x128 ([M, K/128]), b = e4m3:block128x128 ([ceil(N/128), K/128]),
//                         f32 or E8M0 scales; K block 128.
//   MXFP8                 a = b = mxfp8, E8M0 [rows, K/32]; K block 32.
// The main loop accumulates one K block's mma results in a temporary accumulator `tmp`, then
//     acc = fma(tmp, sa[m][kb] * sb[n][kb], acc);   tmp = 0
// (an operand whose scale does not change along K contributes 1; its f32 scale goes to the epilogue).
// This is mathematically the dequantize-then-multiply product; in f32 it rounds once per K block more
// than a plain GEMM. The reference kernel promotes the FP8 blocks the same way.
//
// Scale loads are plain global loads into registers, issued one K block ahead (`next`) so their
// latency hides behind a block of mmas. Rows past the group and columns past N read a clamped (valid)
// scale whose products are never stored. Blocks past K (a zero-filled partial last K tile of an MXFP8
// problem) are skipped: their tmp is zero.
//
// b = block128x128 needs every column of a warp tile in one 128-column block: the planner only accepts
// warp tiles whose width divides 128 (their origins are multiples of the width).
#pragma once

#include "common/gemm_params.cuh"
#include "common/types.cuh"
#include "dequant/block_scale.cuh"
#include "epilogue/glu.cuh"
#include "kernels/sm80_epilogue.cuh"
#include "ptx/cvt.cuh"
#include "scheduler/group_tile.cuh"

namespace kiln_dev {
namespace sm80 {

// kFoldsMx: the mainloop folds MX (block1x32) scales into its converted operands (the mixed mainloop,
// kernels/sm80_mixed_gemm.cuh), so only DeepSeek FP8 blocks are promoted.
template <class Config, int kMFrags, int kNFrags, int kWarpTileN, bool kFoldsMx = false>
struct Promotion {
  static constexpr Scale kScaleA = Config::kScaleA;
  static constexpr Scale kScaleB = Config::kScaleB;
  static constexpr bool kPromoteA = kScaleA == Scale::kBlock1x128 || (!kFoldsMx && kScaleA == Scale::kBlock1x32);
  static constexpr bool kPromoteB = kScaleB == Scale::kBlock128x128 || (!kFoldsMx && kScaleB == Scale::kBlock1x32);
  static constexpr bool kEnabled = kPromoteA || kPromoteB;
  static constexpr int kBlockK =
      !kFoldsMx && (kScaleA == Scale::kBlock1x32 || kScaleB == Scale::kBlock1x32) ? 32 : 128;
  static constexpr bool kPerColumnB = kPromoteB && kScaleB == Scale::kBlock1x32;
  static constexpr GateUp kGateUp = ConfigEpilogue<Config>::kGateUp;
  static constexpr int kColsB = kPerColumnB ? 2 * kNFrags : 1;

  static_assert(!(kPromoteA && kPromoteB) || (kScaleA == Scale::kBlock1x32) == (kScaleB == Scale::kBlock1x32),
                "promoted scales of a and b must share one K block (128 for FP8 blocks, 32 for MX)");
  static_assert(kScaleB != Scale::kBlock128x128 || (kWarpTileN <= 128 && 128 % kWarpTileN == 0),
                "block128x128 b scales: a warp tile's columns must lie in one 128-column block");
  static_assert(kScaleB != Scale::kBlock128x128 || kGateUp != GateUp::kStacked,
                "stacked gate|up maps a warp tile's columns to two 128-row scale blocks");

  // One K block's scales for this thread's rows and columns.
  struct Scales {
    float a[kPromoteA ? kMFrags : 1][2];
    float b[kColsB];
  };

  // row0: this lane's first row within the group (rows step 8 and 16); col0: its first column (the
  // warp tile's first column for block128x128; + 2t for per-column scales).
  static __device__ __forceinline__ void load(const GemmParams& p, const TileWork& w, int row0, int col0, int kb,
                                              Scales& s) {
    if constexpr (kPromoteA) {
#pragma unroll
      for (int mf = 0; mf < kMFrags; ++mf) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          int r = row0 + mf * 16 + h * 8;
          r = r < w.rows ? r : w.rows - 1;
          s.a[mf][h] = load_scale_f32<Config::kScaleTypeA>(
              scale_row_bytes(p.a_scale, Config::kScaleTypeA, w.row_base + r, p.lds_a), kb);
        }
      }
    }
    if constexpr (kPromoteB) {
      const float* base = reinterpret_cast<const float*>(
          reinterpret_cast<const u8*>(p.b_scale) +
          (long long)w.expert * p.b_scale_expert_stride * (Config::kScaleTypeB == ScaleType::kF32 ? 4 : 1));
#pragma unroll
      for (int c = 0; c < kColsB; ++c) {
        // Per column: columns col0 + 8 * (c / 2) + (c % 2); block128x128: the warp tile's block.
        int col = kPerColumnB ? col0 + 8 * (c >> 1) + (c & 1) : col0;
        col = col < p.n ? col : p.n - 1;
        // Per-column scales follow W's rows (stacked gate|up, epilogue/glu.cuh; the planner rejects
        // stacked with block128x128 scales).
        const long long srow = kPerColumnB ? glu_w_row<kGateUp>(col, p.n) : col / 128;
        s.b[c] = load_scale_f32<Config::kScaleTypeB>(scale_row_bytes(base, Config::kScaleTypeB, srow, p.lds_b), kb);
      }
    }
  }

  // acc += tmp * (sa * sb); tmp = 0.
  template <class Acc>
  static __device__ __forceinline__ void promote(Acc& acc, Acc& tmp, const Scales& s) {
#pragma unroll
    for (int mf = 0; mf < kMFrags; ++mf) {
#pragma unroll
      for (int nf = 0; nf < kNFrags; ++nf) {
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          float f;
          if constexpr (kPromoteA && kPromoteB) {
            f = s.a[mf][r >> 1] * s.b[kPerColumnB ? 2 * nf + (r & 1) : 0];
          } else if constexpr (kPromoteA) {
            f = s.a[mf][r >> 1];
          } else {
            f = s.b[kPerColumnB ? 2 * nf + (r & 1) : 0];
          }
          acc[mf][nf][r] = fma_rn(tmp[mf][nf][r], f, acc[mf][nf][r]);
          tmp[mf][nf][r] = 0.0f;
        }
      }
    }
  }
};

}  // namespace sm80
}  // namespace kiln_dev
