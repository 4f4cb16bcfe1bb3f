// compiler/numerics/scale_swizzle.hpp — the Blackwell block-scaled GEMM scale-factor layout
// ("128x4" tiles, cuBLAS "1D Block Scaling Factors Layout"; docs/numerics.md §5).
//
// A scale matrix SF[R][C] (R = rows of the operand, C = K/16 for NVFP4 or K/32 for MX) is padded
// with zeros to Rp = roundup(R, 128) rows and Cp = roundup(C, 4) columns and stored as 512-byte
// tiles of 128 rows x 4 block-columns, K-tile fastest, then row tile, then batch:
//   off(r, c) = ((r/128)*nKt + c/4)*512 + (r%32)*16 + ((r%128)/32)*4 + (c%4),   nKt = Cp/4
//   batch l adds l*Rp*Cp. Grouped (MoE) operands swizzle each group on its own, padded to whole
//   128-row tiles.
//
//   int64_t o = kiln::numerics::scale_swizzle_offset(200, 5, /*n_kt=*/2);            // 1673
//   KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> tiled, swizzle_scales(q.scale_bytes, m, k / 16));
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kiln/status.hpp"

namespace kiln::numerics {

// docs/numerics.md §5 formula, for a scale matrix with n_kt = roundup(C, 4) / 4 K tiles.
inline int64_t scale_swizzle_offset(int64_t r, int64_t c, int64_t n_kt) {
  return ((r / 128) * n_kt + c / 4) * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + (c % 4);
}

// Bytes of one swizzled (padded) scale matrix: roundup(rows, 128) * roundup(cols, 4).
int64_t swizzled_scale_bytes(int64_t rows, int64_t cols);

// Row-major sf [rows, cols] -> the tiled layout above, padding filled with zeros.
StatusOr<std::vector<uint8_t>> swizzle_scales(std::span<const uint8_t> sf, int64_t rows, int64_t cols);
// The inverse: the row-major [rows, cols] scales held in a tiled buffer.
StatusOr<std::vector<uint8_t>> unswizzle_scales(std::span<const uint8_t> tiled, int64_t rows, int64_t cols);

}  // namespace kiln::numerics
