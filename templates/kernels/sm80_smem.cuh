// templates/kernels/sm80_smem.cuh — the shared-memory tile swizzle of the sm80 families.
//
// A K tile row of 64 or 128 bytes is stored as 16-byte chunks whose order is XOR-swizzled so that the
// 8 rows one ldmatrix phase reads, and the 8 chunks one cp.async phase writes, fall in 8 distinct
// 4-bank groups (bank conflict free):
//   128-byte rows: chunk ^ (row & 7)           (8 rows -> 8 different chunks of 32 banks)
//   64-byte rows:  chunk ^ ((row >> 1) & 3)    (two rows share the 32 banks; rows 2j, 2j+1 use
//                                               opposite halves, (row >> 1) & 3 permutes within)
#pragma once

#include "common/types.cuh"

namespace kiln_dev {
namespace sm80 {

// The XOR term of the chunk swizzle for a tile row.
template <int kRowBytes>
__device__ __forceinline__ int swizzle_xor(int row) {
  static_assert(kRowBytes == 64 || kRowBytes == 128, "the swizzle is defined for 64- and 128-byte rows");
  return kRowBytes == 128 ? (row & 7) : ((row >> 1) & 3);
}

// Byte offset of logical 16-byte chunk `chunk` of tile row `row`.
template <int kRowBytes>
__device__ __forceinline__ u32 swizzled_offset(int row, int chunk) {
  return u32(row * kRowBytes + ((chunk ^ swizzle_xor<kRowBytes>(row)) << 4));
}

}  // namespace sm80
}  // namespace kiln_dev
