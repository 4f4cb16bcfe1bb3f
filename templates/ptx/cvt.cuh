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
