// compiler/numerics/quantized_tensor.hpp — the host form of a quantized operand: element bytes plus
// block scales, as the CPU quantizers (mx.hpp, nvfp4.hpp, fp8_block.hpp) write them and the
// dequantizers (dequantize.hpp) read them.
//
// One type for every block-scaled format so a reference GEMM can take any operand. The layout is
// the one kernels read (docs/architecture.md, "Formats"): a logical row-major [rows, cols] matrix, cols being
// the quantization (reduction) axis for MX and NVFP4.
//   data         fp8 formats: one byte per element, row-major, cols bytes per row.
//                fp4 formats: two codes per byte, element 2i in the low nibble (docs/numerics.md §1),
//                cols/2 bytes per row.
//   scales       one per block_rows x block_cols block, row-major [scale_rows(), scale_cols()]
//                (not swizzled; scale_swizzle.hpp makes the Blackwell tile layout). A trailing
//                partial block (fp8 blocks only) covers the remaining rows/columns as if zero-padded.
//                scale_type kUe8m0 / kUe4m3: in scale_bytes; kF32: in scales_f32 (decode scales).
//   NVFP4 only   amax (the per-tensor or per-expert amax the quantizer used), e4m3_bound (448 or 256)
//                and global_decode_scale = f32(amax / (6 * e4m3_bound)), the f32 a GEMM receives.
//
// Invariants (checked by check_quantized_tensor in dequantize.hpp): data and scale sizes match the
// shape; MX cols % 32 == 0 with 1x32 blocks; NVFP4 cols % 16 == 0 with 1x16 blocks.
//
//   KILN_ASSIGN_OR_RETURN(QuantizedTensor q, mx_quantize(x, rows, k, Format::kMxfp4, MxRounding::kRceil));
//   uint8_t s = q.scale_bytes[r * q.scale_cols() + k / 32];     // E8M0 byte of element (r, k)
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "kiln/spec.hpp"

namespace kiln::numerics {

struct QuantizedTensor {
  Format format = Format::kMxfp8;  // kE4m3 (FP8 block scales), kMxfp8, kMxfp4 or kNvfp4
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<uint8_t> data;

  int64_t block_rows = 1;
  int64_t block_cols = 32;
  ScaleType scale_type = ScaleType::kUe8m0;
  std::vector<uint8_t> scale_bytes;  // kUe8m0 (E8M0) or kUe4m3
  std::vector<float> scales_f32;     // kF32: decode scales, x ~ q * s

  float amax = 0.0f;  // NVFP4 only
  int e4m3_bound = 448;
  float global_decode_scale = 0.0f;

  int64_t scale_rows() const { return block_rows > 0 ? (rows + block_rows - 1) / block_rows : 0; }
  int64_t scale_cols() const { return block_cols > 0 ? (cols + block_cols - 1) / block_cols : 0; }
  bool packed_fp4() const { return format == Format::kMxfp4 || format == Format::kNvfp4; }
  int64_t row_bytes() const { return packed_fp4() ? (cols + 1) / 2 : cols; }
};

// max |x_i| in fp32; NaN if any x_i is NaN (torch amax semantics, so a NaN reaches the scale rules
// of docs/numerics.md §3 that map it to 0xFF). Exact: no rounding is involved.
inline float abs_max(std::span<const float> x) {
  float m = 0.0f;
  for (float v : x) {
    const float a = std::fabs(v);
    if (std::isnan(a)) return a;
    if (a > m) m = a;
  }
  return m;
}

}  // namespace kiln::numerics
