// templates/ptx/cvt.cuh — conversions and bit-level helpers on packed 16-bit values.
//
// PTX ISA §9.7.9.21 "cvt": `cvt.rn.bf16x2.f32 d, a, b` and `cvt.rn.f16x2.f32 d, a, b` (sm_80+) round
// both inputs to nearest-even and pack them with a in the UPPER half of d and b in the lower half;
// the wrappers below take (lo, hi) so callers write elements in memory order. Out-of-range values
// become +-Inf under .rn (f16: |x| >= 65520), NaN stays NaN.
// §9.7.4.4 "fma" (half precision): `fma.rn.bf16x2` (sm_80+) is one rounding of a*b+c per half.
// §9.7.8.7 "prmt": byte permute; selector nibble i picks the source byte for result byte i from the
// 8 bytes {b, a} (0-3 = a, 4-7 = b).
#pragma once

#include "common/types.cuh"

namespace kiln_dev {

__device__ __forceinline__ u32 cvt_pack_bf16x2(float lo, float hi) {
  u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

__device__ __forceinline__ u32 cvt_pack_f16x2(float lo, float hi) {
  u32 r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

__device__ __forceinline__ u16 cvt_bf16(float x) {
  u16 r;
  asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(r) : "f"(x));
  return r;
}

__device__ __forceinline__ u16 cvt_f16(float x) {
  u16 r;
  asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(r) : "f"(x));
  return r;
}

__device__ __forceinline__ u32 fma_bf16x2(u32 a, u32 b, u32 c) {
  u32 r;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  return r;
}

// f16x2 -> its two halves as f32 (exact): lo = the lower half, hi = the upper one.
__device__ __forceinline__ void f16x2_to_f32x2(u32 x, float& lo, float& hi) {
  asm("{\n.reg .f16 l, h;\nmov.b32 {l, h}, %2;\ncvt.f32.f16 %0, l;\ncvt.f32.f16 %1, h;\n}\n"
      : "=f"(lo), "=f"(hi)
      : "r"(x));
}

// f16x2 -> two bf16x2, hi and lo, with hi + lo == x exactly per half: hi = x rounded to bf16 (8 of f16's
// 11 significant bits), lo = x - hi (exact in f32, at most 3 significant bits: exact in bf16; f16's
// exponent range lies inside bf16's). Inf and NaN go whole into hi (lo 0), so hi*w + lo*w == x*w.
__device__ __forceinline__ void f16x2_split_bf16x2(u32 x, u32& hi, u32& lo) {
  float a0, a1;
  f16x2_to_f32x2(x, a0, a1);
  hi = cvt_pack_bf16x2(a0, a1);
  const float d0 = a0 - __uint_as_float(hi << 16), d1 = a1 - __uint_as_float(hi & 0xFFFF0000u);
  lo = cvt_pack_bf16x2(d0 == d0 ? d0 : 0.0f, d1 == d1 ? d1 : 0.0f);  // Inf - Inf, NaN: 0
}

__device__ __forceinline__ u32 prmt(u32 a, u32 b, u32 selector) {
  u32 r;
  asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(r) : "r"(a), "r"(b), "r"(selector));
  return r;
}

__device__ __forceinline__ float fma_rn(float a, float b, float c) {
  float r;
  asm("fma.rn.f32 %0, %1, %2, %3;\n" : "=f"(r) : "f"(a), "f"(b), "f"(c));
  return r;
}

}  // namespace kiln_dev
