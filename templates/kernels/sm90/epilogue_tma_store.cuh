// templates/kernels/sm90/epilogue_tma_store.cuh — the TMA-store epilogue of sm90::Gemm: the output slab
// staged in shared memory and stored with cp.async.bulk.tensor.
//
// tma_store = 1, 2 or 4 (dense or grouped, no gate|up): each consumer warpgroup writes its scaled (and
// functor-mapped) output slab to shared memory as 128-byte-swizzled TMA boxes, fences the async proxy,
// and one thread stores the boxes with cp.async.bulk.tensor (clipped at M and N by the map), then the
// warpgroup goes straight on to its next tile: the stores overlap the next mainloop, and they leave in
// whole 128-byte lines instead of the direct epilogue's 4-byte pieces per thread. The runtime passes the
// output's map and out_tma = 1 when the output is TMA-addressable (16-byte aligned base and row stride);
// otherwise the direct epilogue runs (sm90/epilogue_direct.cuh). With tma_store = 2 or 4 (kOutChunks) the
// slab goes out in that many column chunks of ceil(boxes / kOutChunks) boxes (none empty) through a
// buffer of one chunk: each chunk waits until the previous one's stores have read the buffer, and the
// smaller buffer leaves room for one more stage. Grouped problems: a box cannot stop at an expert's last
// row (the map spans all experts' rows), so a warpgroup whose slab crosses it (the expert's last slab,
// unless the rows fill it) stores that slab directly (tma_slab). The last tile's stores complete before
// the CTA exits (sm90/kernel.cuh).
#pragma once

#include "common/decode.cuh"
#include "common/gemm_params.cuh"
#include "common/sm90_tma_desc.cuh"
#include "common/types.cuh"
#include "kernels/sm90/config.cuh"
#include "ptx/cvt.cuh"
#include "ptx/ld.cuh"
#include "ptx/sync.cuh"
#include "ptx/tma.cuh"

namespace kiln_dev {
namespace sm90 {

// Whether this warpgroup's slab of the tile goes out through TMA. Grouped: only a slab that ends at or
// before its expert's last row (a box would write the next expert's rows past it).
template <class Config>
__device__ __forceinline__ bool Gemm<Config>::tma_slab(const Tile& tile, int wg_m) {
  if constexpr (kGrouped) {
    return tile.row0 + (wg_m + 1) * kWgTileM <= tile.row_end;
  } else {
    return true;
  }
}

// This warpgroup's output slab through shared memory and TMA stores. The values are those of the direct
// epilogue (scales, then the functor, only for elements inside M x N: the functor's vector loads stay in
// bounds; the rest are staged as zeros and clipped by TMA). Box b of the slab holds columns [b *
// kOutBoxCols, (b + 1) * kOutBoxCols) of its kWgTileM rows, 128 bytes per row, 16-byte chunk q of row r at
// chunk q ^ (r % 8) (the map's 128-byte swizzle): the 8 rows a warp writes at once land in 8 different
// chunks, so the 4-byte stores do not conflict. Narrow boxes (16 columns, kOutNarrow) are plain rows of
// kOutRowBytes (the map is unswizzled; 2-way store conflicts for 16-bit outputs, 4-way for f32). The
// previous tile's stores must have read the slab first (tma_store_wait_read by the thread that issued
// them, then the warpgroup's barrier); the stores themselves run while the warpgroup goes on to its next
// tile's mainloop.
template <class Config>
__device__ __forceinline__ void Gemm<Config>::store_tile_tma(const GemmParams& p, const Smem& sm,
                                                             const TmaDesc* tma_out, const Tile& tile,
                                                             const float (&acc)[kMmaM][kAccRegs],
                                                             const float (&row_f)[kMmaM][2], float b_tile,
                                                             const float (&col_ld)[kColRegs], int wg_m, int wg_n,
                                                             int consumer, int tid) {
  const int warp = tid >> 5, lane = tid & 31;
  const u32 buf = sm.out + u32(consumer * kOutWgBytes);
  // kColStage: this warpgroup's column scales into shared memory. Its previous tile's reads of them
  // all came before that tile's last barrier below; the barrier that follows orders these writes
  // before this tile's reads.
  if constexpr (kColStage) {
#pragma unroll
    for (int r = 0; r < kColRegs; ++r) {
      const int i = tid + 128 * r;
      if (i < kWgTileN) sts_u32(sm.colsc + u32(consumer * kColWgBytes + 4 * i), __float_as_uint(col_ld[r]));
    }
  }
  const int slab_row0 = tile.row0 + wg_m * kWgTileM;
  const int slab_col0 = tile.n * kBlockN + wg_n * kWgTileN;
  const float* sb_row = kRowB ? b_scale_of<ScaleType::kF32>(p, tile.e) : nullptr;
#pragma unroll
  for (int q = 0; q < kOutChunks; ++q) {
    // The buffer's previous stores (the previous chunk's, or the previous tile's last) have read it.
    if (tid == 0) tma_store_wait_read<0>();
    named_barrier_sync(1 + consumer, 128);
#pragma unroll
    for (int jj = 0; jj < kChunkGroups; ++jj) {
      const int j = q * kChunkGroups + jj;
      if (j >= kAccRegs / 4) break;  // a shorter last chunk (compile-time: q and jj are unrolled)
      const int c = 8 * j + 2 * (lane & 3);  // slab column
      const int col = slab_col0 + c;
      float col_f0 = b_tile, col_f1 = b_tile;
      if constexpr (kColStage) {
        u32 lo, hi;
        lds_u64(lo, hi, sm.colsc + u32(consumer * kColWgBytes + 4 * c));
        col_f0 = __uint_as_float(lo);
        col_f1 = __uint_as_float(hi);
      } else {
        if (col < p.n) col_factors(p, sb_row, b_tile, col, col_f0, col_f1);
      }
      const int box = c / kOutBoxCols - q * kChunkBoxes;  // the buffer's box
      const int off = (c % kOutBoxCols) * kOutBytes;
#pragma unroll
      for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int r = mi * 64 + warp * 16 + (lane >> 2) + half * 8;  // slab row
          const int row = slab_row0 + r;
          float v0 = acc[mi][4 * j + 2 * half] * (row_f[mi][half] * col_f0);
          float v1 = acc[mi][4 * j + 2 * half + 1] * (row_f[mi][half] * col_f1);
          if constexpr (kHasFn) {
            if (row < tile.row_end && col < p.n) {
              apply_fn_pair(p, tile, row, col, v0, v1);
            } else {
              v0 = v1 = 0.0f;
            }
          }
          const u32 addr =
              kOutNarrow ? buf + u32(box * kOutBoxBytes + r * kOutRowBytes + off)
                         : buf + u32(box * kOutBoxBytes + r * 128 + ((((off >> 4) ^ (r & 7)) << 4) | (off & 15)));
          if constexpr (kOut == Format::kBf16) {
            sts_u32(addr, cvt_pack_bf16x2(v0, v1));
          } else if constexpr (kOut == Format::kF16) {
            sts_u32(addr, cvt_pack_f16x2(v0, v1));
          } else {
            sts_u32(addr, bits_from_f32(v0));
            sts_u32(addr + 4, bits_from_f32(v1));
          }
        }
      }
    }
    fence_proxy_async_shared();  // this thread's writes, visible to the TMA unit
    named_barrier_sync(1 + consumer, 128);
    if (tid == 0 && slab_row0 < tile.row_end) {
#pragma unroll
      for (int b = 0; b < kChunkBoxes; ++b) {
        if (q * kChunkBoxes + b >= kOutBoxes) break;
        const int x = slab_col0 + (q * kChunkBoxes + b) * kOutBoxCols;
        if (x < p.n) {
          if constexpr (kAccumulate) {
            tma_reduce_add_2d(tma_out, buf + u32(b * kOutBoxBytes), x, slab_row0);  // f32 out += box
          } else {
            tma_store_2d(tma_out, buf + u32(b * kOutBoxBytes), x, slab_row0);
          }
        }
      }
      tma_store_commit();
    }
  }
}

}  // namespace sm90
}  // namespace kiln_dev
