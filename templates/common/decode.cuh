// templates/common/decode.cuh — exact scalar decoding of stored elements to f32, by bit manipulation.
//
// The slow, obviously-correct path: the reference kernel uses it for every element, so every case is
// spelled out (zero, subnormal, normal, Inf, NaN). All of bf16, f16, e4m3 and e5m2 are subsets of
// f32, so each decode is exact. Formats (docs/numerics.md §1, IEEE 754 binary16):
//   e4m3: s.eeee.mmm, bias 7;  e == 0: m * 2^-9;  0x7F / 0xFF: NaN (no Inf)
//   e5m2: s.eeeee.mm, bias 15; e == 0: m * 2^-16; e == 31: m == 0 ? Inf : NaN
//   f16:  s.eeeee.mmmmmmmmmm, bias 15; e == 0: m * 2^-24; e == 31: m == 0 ? Inf : NaN
//   bf16: the upper half of an f32.
//   e2m1: s.ee.m, bias 1; ee == 0: m * 0.5; no Inf, no NaN (docs/numerics.md §1); two per byte, the
//         even element in the low nibble.
//   e8m0: byte b is 2^(b - 127); b == 0 is the f32 subnormal 2^-127; 0xFF is NaN (docs/numerics.md §1).
//   ue4m3: the e4m3 encoding with the sign bit 0 (NVFP4 block scales, docs/numerics.md §1).
#pragma once

#include "common/types.cuh"

namespace kiln_dev {

__device__ __forceinline__ float f32_from_bits(u32 bits) {
  float f;
  asm("mov.b32 %0, %1;\n" : "=f"(f) : "r"(bits));
  return f;
}

__device__ __forceinline__ u32 bits_from_f32(float f) {
  u32 bits;
  asm("mov.b32 %0, %1;\n" : "=r"(bits) : "f"(f));
  return bits;
}

// A positive power of two 2^e for -126 <= e <= 127, built from its exponent field.
__device__ __forceinline__ float pow2_f32(int e) { return f32_from_bits(u32(e + 127) << 23); }

__device__ __forceinline__ float decode_bf16(u16 h) { return f32_from_bits(u32(h) << 16); }

__device__ __forceinline__ float decode_f16(u16 h) {
  const u32 sign = u32(h >> 15) << 31;
  const int e = (h >> 10) & 0x1F;
  const u32 m = h & 0x3FF;
  if (e == 0x1F) return f32_from_bits(sign | (m == 0 ? 0x7F800000u : 0x7FC00000u));
  if (e == 0) {
    // m * 2^-24 is exact: m < 2^10 and the product is a normal f32.
    const float v = float(int(m)) * pow2_f32(-24);
    return sign ? -v : v;
  }
  return f32_from_bits(sign | (u32(e - 15 + 127) << 23) | (m << 13));
}

__device__ __forceinline__ float decode_e4m3(u8 b) {
  const u32 sign = u32(b >> 7) << 31;
  const int e = (b >> 3) & 0xF;
  const u32 m = b & 0x7;
  if ((b & 0x7F) == 0x7F) return f32_from_bits(sign | 0x7FC00000u);  // the only NaN; no Inf
  if (e == 0) {
    const float v = float(int(m)) * pow2_f32(-9);
    return sign ? -v : v;
  }
  return f32_from_bits(sign | (u32(e - 7 + 127) << 23) | (m << 20));
}

__device__ __forceinline__ float decode_e5m2(u8 b) {
  const u32 sign = u32(b >> 7) << 31;
  const int e = (b >> 2) & 0x1F;
  const u32 m = b & 0x3;
  if (e == 0x1F) return f32_from_bits(sign | (m == 0 ? 0x7F800000u : 0x7FC00000u));
  if (e == 0) {
    const float v = float(int(m)) * pow2_f32(-16);
    return sign ? -v : v;
  }
  return f32_from_bits(sign | (u32(e - 15 + 127) << 23) | (m << 21));
}

// The low nibble of `code` as an E2M1 value (exact).
__device__ __forceinline__ float decode_e2m1(u32 code) {
  const u32 mag = code & 0x7;
  const int e = int(mag >> 1);
  // e == 0: m * 0.5 (0 or 0.5); else 2^(e - 1) * (1 + m / 2), built from its bits (exact, and no
  // floating-point op that NVRTC could contract into a neighbour's FMA).
  const float v = e == 0 ? ((mag & 1) ? 0.5f : 0.0f) : f32_from_bits((u32(e - 1 + 127) << 23) | ((mag & 1) << 22));
  return (code & 0x8) ? -v : v;
}

// An E8M0 scale byte as f32 (exact; 2^-127 is a subnormal, never flushed here).
__device__ __forceinline__ float decode_e8m0(u32 b) {
  b &= 0xFF;
  if (b == 0xFF) return f32_from_bits(0x7FC00000u);
  return f32_from_bits(b == 0 ? 0x00400000u : b << 23);
}

// Element i of a row of format kFmt (for the 4-bit formats: the code's value without its scale).
template <Format kFmt>
__device__ __forceinline__ float decode_element(const void* row, long long i) {
  if constexpr (kFmt == Format::kBf16) {
    return decode_bf16(static_cast<const u16*>(row)[i]);
  } else if constexpr (kFmt == Format::kF16) {
    return decode_f16(static_cast<const u16*>(row)[i]);
  } else if constexpr (kFmt == Format::kF32) {
    return static_cast<const float*>(row)[i];
  } else if constexpr (kFmt == Format::kE4m3 || kFmt == Format::kMxfp8) {
    return decode_e4m3(static_cast<const u8*>(row)[i]);
  } else if constexpr (kFmt == Format::kMxfp4 || kFmt == Format::kNvfp4) {
    const u32 byte = static_cast<const u8*>(row)[i >> 1];
    return decode_e2m1((i & 1) ? byte >> 4 : byte);
  } else {
    static_assert(kFmt == Format::kE5m2, "decode_element: unknown format");
    return decode_e5m2(static_cast<const u8*>(row)[i]);
  }
}

}  // namespace kiln_dev
