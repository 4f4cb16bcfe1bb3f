// templates/dequant/block_scale.cuh — block-scale bytes and f32 scales, read and decoded exactly.
//
// E8M0 (MX, and DeepSeek-style ue8m0 FP8 block scales): byte b means 2^(b - 127), 0xFF is NaN
// (docs/numerics.md §1). As f32: b << 23, except b = 0 -> 2^-127, the subnormal 0x00400000 (never
// flushed). As bf16: b << 7, except b = 0 -> 0x0040 (bf16 subnormal 64 * 2^-133 = 2^-127) and
// 0xFF -> 0x7FC0 (NaN). bf16 has f32's exponent range, so every E8M0 value is an exact bf16.
// UE4M3 (NVFP4 block scales, docs/numerics.md §1): the e4m3 code with the sign bit 0; as bf16 exactly by
// the FP8 conversion of common/fp8_to_bf16.cuh (0x7F NaN included).
#pragma once

#include "common/decode.cuh"
#include "common/fp8_to_bf16.cuh"
#include "common/types.cuh"
#include "ptx/ld.cuh"

namespace kiln_dev {

// An E8M0 byte as a bf16 pattern (exact).
__device__ __forceinline__ u32 e8m0_to_bf16(u32 b) {
  b &= 0xFF;
  return b == 0xFF ? 0x7FC0u : b == 0 ? 0x0040u : b << 7;
}

// bf16x2 holding the same bf16 in both halves.
__device__ __forceinline__ u32 bf16_broadcast(u32 h) { return h | (h << 16); }

// A UE4M3 byte as bf16x2 (the same value in both halves; exact, NaN kept).
__device__ __forceinline__ u32 ue4m3_to_bf16x2(u32 b) {
  b &= 0xFF;
  return fp8x2_hi_to_bf16x2<Format::kE4m3, true>((b << 8) | (b << 24));
}

// Row `row` of a 2-D scale tensor whose rows are lds scale elements apart: f32 (4 bytes) or one byte
// (E8M0 / UE4M3) per element. The f32 pointer type is the GemmParams field's; byte scales travel in it.
__device__ __forceinline__ const u8* scale_row_bytes(const float* base, ScaleType t, long long row, long long lds) {
  return reinterpret_cast<const u8*>(base) + row * lds * (t == ScaleType::kF32 ? 4 : 1);
}

// Scale element i of a scale row as f32: f32 scales are loaded as they are, E8M0 bytes decoded.
template <ScaleType kType>
__device__ __forceinline__ float load_scale_f32(const void* row, long long i) {
  if constexpr (kType == ScaleType::kF32) {
    return ldg_f32(static_cast<const float*>(row) + i);
  } else if constexpr (kType == ScaleType::kUe8m0) {
    return decode_e8m0(ldg_u8(static_cast<const u8*>(row) + i));
  } else {
    static_assert(kType == ScaleType::kUe4m3, "load_scale_f32: f32, ue8m0 or ue4m3 scales");
    return decode_e4m3(u8(ldg_u8(static_cast<const u8*>(row) + i)));
  }
}

}  // namespace kiln_dev
