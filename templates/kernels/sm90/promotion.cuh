// templates/kernels/sm90/promotion.cuh — scales in sm90::Gemm: which scales a consumer thread reads, and
// the promotion of a K tile's partial sum into the f32 accumulators (per-128-K FP8 promotion and block
// scales).
//
// Promotion (kPromote, FP8 only): Hopper's FP8 wgmma adds into a truncated ~e8m13 accumulator, so an
// unpromoted sum's error grows with K; each K tile's wgmma batch writes a fresh partial sum instead, which
// the thread adds to the f32 accumulators (the scheme DeepGEMM uses), bounding the error to one K tile of
// 128. The planner enables it where the registers allow (a partial as large as the accumulators:
// kWgTileM * kWgTileN <= 64 * 128; 64 x 192 and 64 x 256 warpgroups of block-scaled tiles, see below).
//
// Scales, the same semantics as the portable family and the reference kernel (kernels/sm80_promotion.cuh,
// sm80_epilogue.cuh, reference_gemm.cuh; docs/numerics.md §2):
//   Y[m, n] = round_out( acc(m, n) * (row_factor(m) * col_factor(n)) ),
// row_factor = a's tensor scale or a_scale[m]; col_factor = b's tensor scale or b_scale[n]; 1 for a
// block-scaled operand. Per-row factors are loaded when a tile starts (their latency hides behind its
// mainloop), per-column ones in the epilogue (sm90/epilogue_direct.cuh; with TMA stores they too are
// loaded when the tile starts and staged in shared memory, sm90/epilogue_tma_store.cuh). Block scales
// vary along K and are applied to the promoted partial of every K tile: an FP8 K tile is 128 elements,
// exactly one scale block, so K tile kt is scale column kb = kt and
//   acc = fma(part, sa[m, kb] * sb[n / 128, kb], acc)     (the reference's order and rounding)
// with sa or sb alone when only one operand is block-scaled. Block scales therefore need the promoted path
// (the planner refuses block scales on a tile too wide to promote), and a consumer warpgroup's columns lie
// in one 128-column block of b's scales (kWgTileN divides 128 and tiles start at multiples of it): one sb
// per thread and K block, two sa (rows g, g + 8) per m64 slab. A 192-column warpgroup spans two blocks in
// three 64-column segments (kBSegs): two sb per thread and K block, the middle segment's chosen by where
// the warpgroup starts. A 256-column warpgroup (half partials, sm90/mainloop.cuh) starts on a 256-column
// edge and spans two whole blocks: two sb, one per half.
//
// Where the config stages them (sm90/producer.cuh: every block-scaled tile whose scale slots fit beside
// the ring) the consumers read the block scales from shared memory (staged_block_scales); otherwise they
// are plain read-only global loads (tiny, L2-resident tensors; load_block_scales), issued one K tile ahead
// into registers — across tiles too: the last K tile of a tile prefetches the next tile's first — so
// their latency mostly hides behind a K tile's TMA wait and wgmmas. Quantized wgrad's b (kColBlockB:
// 1x128 blocks per column, its copy of X quantized along the tokens) has a scale per column and K tile:
//   acc = fma(part, sa[m, kb] * sb[n, kb], acc)
// with both read from the stage's slot (promote_col_blocks). Rows >= M and columns >= N read the
// last valid row / column's scales (their products are never stored). A K tail (K % 128 != 0) is a
// zero-filled partial K tile with its own scale column: ceil(K / 128) blocks.
#pragma once

#include "common/decode.cuh"
#include "common/gemm_params.cuh"
#include "common/types.cuh"
#include "dequant/block_scale.cuh"
#include "kernels/sm90/config.cuh"
#include "ptx/cvt.cuh"
#include "ptx/ld.cuh"

namespace kiln_dev {
namespace sm90 {

// The scale rows one consumer thread reads for a tile: the X rows of its accumulators (row g and
// g + 8 of each m64 slab, clamped to M - 1) and the 128-column block of W its warpgroup's columns
// lie in (the first column clamped to N - 1, over 128).
template <class Config>
struct Gemm<Config>::ScaleRows {
  int a[kMmaM][2];
  int b;      // the 128-column block of the warpgroup's first column (clamped to N - 1)
  int b1;     // 192 / 256-column warpgroups: the block of its column 128 (clamped): the last segment / half
  bool mid1;  // 192-column warpgroups: whether the middle segment lies in block b1 (a mid-block start)
  const float* b_base;  // b's block scales of the tile's expert
};

// One K block's block scales for this thread (unused members stay unread): b of each block the
// warpgroup's columns touch.
template <class Config>
struct Gemm<Config>::BlockScales {
  float a[kMmaM][2];
  float b[kBBlocks];
};

template <class Config>
__device__ __forceinline__ typename Gemm<Config>::ScaleRows Gemm<Config>::scale_rows(const GemmParams& p,
                                                                                     const Tile& tile, int wg_m,
                                                                                     int wg_n, int warp, int lane) {
  ScaleRows r;
  const int row0 = tile.row0 + wg_m * kWgTileM + warp * 16 + (lane >> 2);
  const int last = tile.row_end > 0 ? tile.row_end - 1 : 0;
#pragma unroll
  for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + mi * 64 + h * 8;
      r.a[mi][h] = row < tile.row_end ? row : last;
    }
  }
  const int col = tile.n * kBlockN + wg_n * kWgTileN;
  r.b = (col < p.n ? col : p.n - 1) / 128;
  r.b1 = (col + 128 < p.n ? col + 128 : p.n - 1) / 128;
  r.mid1 = col % 128 != 0;
  r.b_base = b_scale_of<kScaleTypeB>(p, tile.e);
  return r;
}

// Element kb of row `row` of a 2-D scale tensor (row stride lds scale elements), as f32.
template <class Config>
template <ScaleType kType>
__device__ __forceinline__ float Gemm<Config>::block_scale(const float* base, int row, long long lds, int kb) {
  const u8* r = reinterpret_cast<const u8*>(base) + i64(row) * lds * (kType == ScaleType::kF32 ? 4 : 1);
  return load_scale_f32<kType>(r, kb);
}

template <class Config>
__device__ __forceinline__ void Gemm<Config>::load_block_scales(const GemmParams& p, const ScaleRows& r, int kb,
                                                                BlockScales& s) {
  if constexpr (kBlockA) {
#pragma unroll
    for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
      for (int h = 0; h < 2; ++h) s.a[mi][h] = block_scale<kScaleTypeA>(p.a_scale, r.a[mi][h], p.lds_a, kb);
    }
  }
  if constexpr (kBlockB) {
    s.b[0] = block_scale<kScaleTypeB>(r.b_base, r.b, p.lds_b, kb);
    if constexpr (kBBlocks == 2) s.b[1] = block_scale<kScaleTypeB>(r.b_base, r.b1, p.lds_b, kb);
  }
}

// A staged scale word as f32: f32 bits, or byte kb % 4 of an E8M0 word.
template <class Config>
template <ScaleType kType>
__device__ __forceinline__ float Gemm<Config>::staged_scale(u32 word, int kb) {
  if constexpr (kType == ScaleType::kF32) {
    return f32_from_bits(word);
  } else {
    return decode_e8m0(word >> (8 * (kb & 3)));
  }
}

// This thread's block scales of atom t (K block kb) of the stage whose scale slot is at `slot`
// (sm90/producer.cuh stage_scale_copies): the words of its accumulator rows (rows g, g + 8 of each m64
// slab: 8 distinct words per warp, the rest broadcast) and of its warpgroup column. Read after full[s]
// completed, before the stage is released.
template <class Config>
__device__ __forceinline__ typename Gemm<Config>::BlockScales Gemm<Config>::staged_block_scales(
    u32 slot, int t, int kb, int wg_m, int wg_n, int warp, int lane) {
  BlockScales s{};
  const int ta = kScaleTypeA == ScaleType::kUe8m0 ? 0 : t;  // E8M0: the stage's blocks share atom 0's word
  const int tb = kScaleTypeB == ScaleType::kUe8m0 ? 0 : t;
  if constexpr (kBlockA) {
    const int row0 = wg_m * kWgTileM + warp * 16 + (lane >> 2);
#pragma unroll
    for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
      for (int h = 0; h < 2; ++h)
        s.a[mi][h] = staged_scale<kScaleTypeA>(lds_u32(slot + 4 * (kAtoms * (row0 + mi * 64 + h * 8) + ta)), kb);
    }
  }
  if constexpr (kBlockB) {
#pragma unroll
    for (int g = 0; g < kBBlocks; ++g)
      s.b[g] = staged_scale<kScaleTypeB>(lds_u32(slot + 4 * (kAtoms * kBlockM + 4 * tb + kBBlocks * wg_n + g)), kb);
  }
  return s;
}

// acc = fma(part, sa * sb, acc) for block scales (the reference's order: one f32 product of the
// two scales, one fma.rn); acc += part otherwise. Register i of slab mi is row half (i / 2) % 2.
// 192-column warpgroups (kBSegs 3): mid1 says whether the middle segment takes b[1] (ScaleRows::mid1).
// A partial of kRegs < kAccRegs registers (half partials) holds the columns from accumulator register
// `off` on (off = 64 h for half h: partial register i is accumulator register off + i).
template <class Config>
template <int kRegs>
__device__ __forceinline__ void Gemm<Config>::promote(float (&acc)[kMmaM][kAccRegs],
                                                      const float (&part)[kMmaM][kRegs], const BlockScales& s,
                                                      bool mid1, int off) {
#pragma unroll
  for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float fb[kBBlocks];
#pragma unroll
      for (int g = 0; g < kBBlocks; ++g) {
        if constexpr (kBlockA && kBlockB) {
          fb[g] = s.a[mi][h] * s.b[g];
        } else if constexpr (kBlockA) {
          fb[g] = s.a[mi][h];
        } else if constexpr (kBlockB) {
          fb[g] = s.b[g];
        } else {
          fb[g] = 1.0f;
        }
      }
      float f[kBSegs];
      if constexpr (kBSegs == 1) {
        f[0] = fb[0];
      } else if constexpr (kBSegs == 2) {
        f[0] = fb[0];
        f[1] = fb[kBBlocks - 1];
      } else {
        f[0] = fb[0];
        f[1] = mid1 ? fb[kBBlocks - 1] : fb[0];
        f[2] = fb[kBBlocks - 1];
      }
#pragma unroll
      for (int j = 0; j < kRegs / 4; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int i = 4 * j + 2 * h + e;
          // Accumulator group off / 4 + j covers the warpgroup's columns 8 (off / 4 + j) .. + 7: segment
          // 8 (off / 4 + j) / kBSegCols.
          if constexpr (kBlockScaled) {
            acc[mi][off + i] = fma_rn(part[mi][i], f[(8 * (off / 4 + j)) / kBSegCols], acc[mi][off + i]);
          } else {
            acc[mi][off + i] += part[mi][i];
          }
        }
      }
    }
  }
}

// acc = fma(part, sa[mi][h] * sb[column], acc) with this thread's kAccRegs / 2 column scales read from
// its quad's run of f32 at `run` (the MXFP8 slot layout, sm90/mx.cuh mx_store), 4 at a time (16-byte
// shared loads) as the promotion reaches them. Shared by MXFP8's per-k-step promotion and quantized
// wgrad's per-K-tile one.
template <class Config>
__device__ __forceinline__ void Gemm<Config>::promote_col_runs(float (&acc)[kMmaM][kAccRegs],
                                                               const float (&part)[kMmaM][kAccRegs],
                                                               const float (&sa)[kMmaM][2], u32 run) {
#pragma unroll
  for (int q = 0; q < kAccRegs / 8; ++q) {
    u32 sb[4];
    lds_128(sb, run + 16u * u32(q));
#pragma unroll
    for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
      for (int jj = 0; jj < 2; ++jj) {
        const int j = 2 * q + jj;  // n8 group j: columns 2j, 2j + 1 of the quad's run
#pragma unroll
        for (int h = 0; h < 2; ++h) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int i = 4 * j + 2 * h + e;
            acc[mi][i] = fma_rn(part[mi][i], sa[mi][h] * f32_from_bits(sb[2 * jj + e]), acc[mi][i]);
          }
        }
      }
    }
  }
}

// Quantized wgrad (kColBlockB): acc = fma(part, sa[m, kb] * sb[n, kb], acc) for one K tile, the scales
// read from the stage's slot (sm90/producer.cuh stage_col_scales): a's word per tile row (rows g, g + 8 of
// each m64 slab; E8M0 byte kb % 4) and this thread's columns (promote_col_runs). Read before the stage is
// released.
template <class Config>
__device__ __forceinline__ void Gemm<Config>::promote_col_blocks(float (&acc)[kMmaM][kAccRegs],
                                                                 const float (&part)[kMmaM][kAccRegs], u32 slot,
                                                                 int kb, int wg_m, int wg_n, int warp, int lane) {
  const int row0 = wg_m * kWgTileM + warp * 16 + (lane >> 2);
  float sa[kMmaM][2];
#pragma unroll
  for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
    for (int h = 0; h < 2; ++h)
      sa[mi][h] = staged_scale<kScaleTypeA>(lds_u32(slot + 4u * u32(row0 + mi * 64 + h * 8)), kb);
  }
  promote_col_runs(acc, part, sa, slot + 4u * u32(kBlockM + (4 * wg_n + (lane & 3)) * kMxColStride));
}

}  // namespace sm90
}  // namespace kiln_dev
