// templates/kernels/fp8_transpose.cuh — the transposed copy of an 8-bit weight that a quantized dgrad
// reads: W [N, K] codes (and its 128 x 128 block scales) -> Wᵀ [K, N] (and the transposed scale grid).
//
// Why: dgrad reduces over N, and FP8 wgmma reads 8-bit operands K-major only, so the GEMM needs W's
// codes contiguous along N. Per-tensor and 128 x 128 block scales transpose exactly (a block's scale
// stays the scale of the same 128 x 128 codes), so the copy computes the same products the forward
// did. The runtime writes it into the plan's workspace before the GEMM (runtime/dgrad_transpose.cpp).
//
// Work: one CTA of 256 threads per 128 x 128 tile of W (grid: K/128 x N/128 x experts; one scale block).
//   1. Each thread loads four 16-byte pieces of W's rows (8 lanes cover one row's 128 bytes, coalesced;
//      the four loads in flight together) into a 128 x 128-byte shared tile, the 16-byte groups of row r
//      XOR-swizzled by 4 * (r / 16) words.
//   2. Each thread owns 4 output rows (word w of the tile: K columns 4w .. 4w + 3) by 16 N (rows
//      16 s .. 16 s + 15). It reads those 16 words (one per tile row: with the swizzle, the 32 lanes of
//      a warp hit 32 different banks), transposes four 4 x 4 byte blocks with prmt, and stores four
//      16-byte pieces; the 8 lanes with the same w write one output row's 128 bytes.
// Tails: N and K are multiples of 16, so a 16-byte piece is wholly inside or outside the matrix;
// pieces outside are neither loaded nor stored.
#pragma once

#include "common/transpose_params.cuh"
#include "common/types.cuh"
#include "ptx/cp_async.cuh"
#include "ptx/cvt.cuh"
#include "ptx/ld.cuh"

namespace kiln_dev {

inline constexpr int kTransposeThreads = 256;
inline constexpr int kTransposeTile = 128;  // rows (N) and bytes (K) of one CTA's tile: one 128 x 128 block

// Rows a, b, c, d of a 4 x 4 byte block (byte j of each word is column j) -> its columns (byte i of
// result i' is row i of column i').
__device__ __forceinline__ void transpose4x4(u32 a, u32 b, u32 c, u32 d, u32 (&o)[4]) {
  const u32 ab_lo = prmt(a, b, 0x5140);  // a0 b0 a1 b1
  const u32 ab_hi = prmt(a, b, 0x7362);  // a2 b2 a3 b3
  const u32 cd_lo = prmt(c, d, 0x5140);  // c0 d0 c1 d1
  const u32 cd_hi = prmt(c, d, 0x7362);  // c2 d2 c3 d3
  o[0] = prmt(ab_lo, cd_lo, 0x5410);     // a0 b0 c0 d0
  o[1] = prmt(ab_lo, cd_lo, 0x7632);     // a1 b1 c1 d1
  o[2] = prmt(ab_hi, cd_hi, 0x5410);
  o[3] = prmt(ab_hi, cd_hi, 0x7632);
}

// Byte offset in the shared tile of word `word` (0..31) of tile row `row`.
__device__ __forceinline__ u32 transpose_smem_offset(int row, int word) {
  return static_cast<u32>(row * kTransposeTile + ((word ^ (4 * (row / 16))) & 31) * 4);
}

template <class Config>
__device__ __forceinline__ void fp8_transpose(const TransposeParams& p) {
  static_assert(kTransposeThreads * 4 * 16 == kTransposeTile * kTransposeTile,
                "four 16-byte pieces per thread cover the tile");
  __shared__ __align__(16) u8 tile[kTransposeTile * kTransposeTile];
  const long long n0 = static_cast<long long>(blockIdx.y) * kTransposeTile;  // W's rows
  const long long k0 = static_cast<long long>(blockIdx.x) * kTransposeTile;  // W's columns (bytes)
  const long long e = blockIdx.z;
  const u8* src = static_cast<const u8*>(p.src) + e * p.src_expert;
  u8* dst = static_cast<u8*>(p.dst) + e * p.rows * p.cols;
  const u32 base = smem_u32(tile);
  const int t = threadIdx.x;

  // 1. Load: piece q of row r (r = t / 8 + 32 i, q = t % 8); all four loads in flight before any store.
  const int q = t % 8;
  const bool col_ok = k0 + 16 * q < p.cols;
  u32 piece[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = t / 8 + 32 * i;
    if (col_ok && n0 + r < p.rows) ldg_v4(piece[i], src + (n0 + r) * p.ld_src + k0 + 16 * q);
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = t / 8 + 32 * i;
    if (col_ok && n0 + r < p.rows) sts_128(base + transpose_smem_offset(r, 4 * q), piece[i][0], piece[i][1], piece[i][2],
                                             piece[i][3]);
  }
  // The block's scale moves to its transposed place.
  if (p.scale_bytes != 0 && t == 0) {
    const long long nb = n0 / kTransposeTile, kb = k0 / kTransposeTile;
    const long long snb = (p.rows + kTransposeTile - 1) / kTransposeTile;
    const long long skb = (p.cols + kTransposeTile - 1) / kTransposeTile;
    const u8* s = static_cast<const u8*>(p.src_scale) + (e * p.src_scale_expert + nb * p.lds_src + kb) * p.scale_bytes;
    u8* d = static_cast<u8*>(p.dst_scale) + ((e * skb + kb) * snb + nb) * p.scale_bytes;
    if (p.scale_bytes == 4) {
      stg_u32(d, ldg_u32(s));
    } else {
      stg_u8(d, ldg_u8(s));
    }
  }
  __syncthreads();

  // 2. Store: output rows 4w .. 4w + 3 (K), bytes 16 s .. 16 s + 15 (N); w = 4 * warp + lane / 8,
  // s = lane % 8.
  const int lane = t % 32, w = 4 * (t / 32) + lane / 8, s = lane % 8;
  if (n0 + 16 * s >= p.rows) return;
  u32 x[16];
#pragma unroll
  for (int j = 0; j < 16; ++j) x[j] = lds_u32(base + transpose_smem_offset(16 * s + j, w));
  u32 out[4][4];  // out[i][g]: output row 4w + i, bytes 4g .. 4g + 3 of the piece
#pragma unroll
  for (int g = 0; g < 4; ++g) {
    u32 o[4];
    transpose4x4(x[4 * g], x[4 * g + 1], x[4 * g + 2], x[4 * g + 3], o);
#pragma unroll
    for (int i = 0; i < 4; ++i) out[i][g] = o[i];
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const long long c = k0 + 4 * w + i;
    if (c < p.cols) stg_v4(dst + c * p.rows + n0 + 16 * s, out[i][0], out[i][1], out[i][2], out[i][3]);
  }
}

}  // namespace kiln_dev
