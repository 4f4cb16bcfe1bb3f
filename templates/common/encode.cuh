// templates/common/encode.cuh — f32 -> stored formats and scale bytes, bitwise equal to kiln's CPU
// references (compiler/numerics: fp8.cpp, e2m1.cpp, e8m0.cpp, fp32_rn.hpp).
//
// The quantizers (kernels/quantize.cuh) are bitwise contracts on an fp32 order of operations
// (docs/numerics.md §2-§4). NVRTC contracts `a * b + c` into an FMA by default (--fmad=true), so every
// arithmetic step here is an explicitly rounded PTX instruction (mul.rn / div.rn / add.rn / sub.rn,
// never contracted, no .ftz: subnormals are kept as the CPU keeps them).
//
// Encoders (RNE; NaN, overflow and subnormal rules of docs/numerics.md §1):
//   encode_e4m3(x, saturate)  satfinite: |x| beyond 448 -> 448, Inf -> 448; NaN -> S.1111.111.
//                             non-saturating: overflow -> NaN (E4M3 has no Inf).
//   encode_e2m1(x)            satfinite to +-6; NaN -> +6 (0x7), what PTX cvt.rn.satfinite does.
//   e8m0_round_up(x)          the smallest power of two >= |x| as an E8M0 byte (RCEIL, docs/numerics.md §3).
// On sm_89+ the satfinite E4M3 path uses `cvt.rn.satfinite.e4m3x2.f32` (PTX ISA §9.7.9.21) for
// finite inputs; its results equal the integer encoder's (both are RNE to E4M3), NaN is handled
// before it so the sign is kept as the CPU keeps it.
#pragma once

#include "common/decode.cuh"
#include "common/types.cuh"

namespace kiln_dev {

// ---- fp32 arithmetic rounded once per operation (fp32_rn.hpp on the host) ----
__device__ __forceinline__ float rn_mul(float a, float b) {
  float r;
  asm("mul.rn.f32 %0, %1, %2;\n" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ float rn_div(float a, float b) {
  float r;
  asm("div.rn.f32 %0, %1, %2;\n" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ float rn_add(float a, float b) {
  float r;
  asm("add.rn.f32 %0, %1, %2;\n" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ float rn_sub(float a, float b) {
  float r;
  asm("sub.rn.f32 %0, %1, %2;\n" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
// C fminf: a NaN operand is ignored (PTX min.f32 returns the other operand).
__device__ __forceinline__ float rn_fmin(float a, float b) {
  float r;
  asm("min.f32 %0, %1, %2;\n" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ float abs_f32(float x) { return f32_from_bits(bits_from_f32(x) & 0x7FFFFFFFu); }
__device__ __forceinline__ bool is_nan_f32(float x) { return (bits_from_f32(x) & 0x7FFFFFFFu) > 0x7F800000u; }
// The bits of |x| order like the magnitudes for every non-NaN x, and a NaN's bits exceed them all:
// a max over these bits is the NaN-propagating amax of quantized_tensor.hpp's abs_max.
__device__ __forceinline__ u32 abs_bits(float x) { return bits_from_f32(x) & 0x7FFFFFFFu; }
constexpr float kFltMax = 3.402823466e+38f;

// 2^e for -127 <= e <= 127, exact (2^-127 is the f32 subnormal 0x00400000).
__device__ __forceinline__ float pow2_wide(int e) {
  return e >= -126 ? pow2_f32(e) : f32_from_bits(0x00400000u >> (-127 - e));
}

// ---- E4M3 ----
// The integer encoder of compiler/numerics/fp8.cpp for E4M3 (3 mantissa bits, bias 7, max 0x7E).
__device__ __forceinline__ u32 encode_e4m3_soft(float x, bool saturate) {
  const u32 bits = bits_from_f32(x);
  const u32 sign = (bits >> 31) << 7;
  const u32 exp = (bits >> 23) & 0xFF;
  const u32 frac = bits & 0x7FFFFF;
  if (exp == 0xFF) return frac != 0 ? (sign | 0x7F) : (sign | (saturate ? 0x7E : 0x7F));
  if (exp == 0 && frac == 0) return sign;
  const u32 m = exp == 0 ? frac : (frac | 0x800000u);
  const int e = exp == 0 ? -149 : int(exp) - 150;
  u32 lz;
  asm("clz.b32 %0, %1;\n" : "=r"(lz) : "r"(m));
  const int lead = 31 - int(lz);
  const int binade = e + lead > -6 ? e + lead : -6;  // at least 1 - bias
  const int shift = e - (binade - 3);
  u32 n;
  if (shift >= 0) {
    n = m << shift;
  } else {
    const int s = -shift;
    if (s > 30) {
      n = 0;
    } else {
      n = m >> s;
      const u32 rem = m & ((1u << s) - 1);
      const u32 half = 1u << (s - 1);
      if (rem > half || (rem == half && (n & 1))) ++n;
    }
  }
  int out_binade = binade;
  if (n >> 4) {
    n >>= 1;
    ++out_binade;
  }
  const u32 code = n < 8 ? n : (u32(out_binade + 7) << 3) | (n - 8);
  if (code > 0x7E) return sign | (saturate ? 0x7E : 0x7F);
  return sign | code;
}

template <int kArch>
__device__ __forceinline__ u32 encode_e4m3(float x, bool saturate) {
  if constexpr (kArch >= 89) {
    if (saturate && !is_nan_f32(x)) {
      u16 r;
      asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(r) : "f"(0.0f), "f"(x));
      return u32(r) & 0xFF;
    }
  }
  return encode_e4m3_soft(x, saturate);
}

// ---- E2M1 (compiler/numerics/e2m1.cpp: the RNE decision points are exact f32 midpoints) ----
__device__ __forceinline__ u32 encode_e2m1(float x) {
  if (is_nan_f32(x)) return 0x7;
  const u32 sign = (bits_from_f32(x) >> 31) ? 0x8 : 0x0;
  const float a = abs_f32(x);
  u32 mag;
  if (a <= 0.25f) mag = 0x0;
  else if (a < 0.75f) mag = 0x1;
  else if (a <= 1.25f) mag = 0x2;
  else if (a < 1.75f) mag = 0x3;
  else if (a <= 2.5f) mag = 0x4;
  else if (a < 3.5f) mag = 0x5;
  else if (a <= 5.0f) mag = 0x6;
  else mag = 0x7;
  return sign | mag;
}

// ---- E8M0 scale bytes (compiler/numerics/e8m0.cpp) ----
__device__ __forceinline__ u32 e8m0_round_up(float x) {
  const u32 bits = bits_from_f32(x) & 0x7FFFFFFFu;
  const u32 exp = bits >> 23;
  const u32 mant = bits & 0x7FFFFF;
  if (exp == 0xFF) return mant != 0 ? 0xFF : 0xFE;
  if (exp == 0) return mant <= 0x400000 ? 0x00 : 0x01;
  const u32 b = exp + (mant != 0 ? 1 : 0);
  return b < 0xFE ? b : 0xFE;
}
// RCEIL: e8m0_round_up(amax * f32(1/elem_max)).
__device__ __forceinline__ u32 e8m0_scale_rceil(float amax, float elem_max) {
  return e8m0_round_up(rn_mul(amax, rn_div(1.0f, elem_max)));
}
// FLOOR (OCP): clamp(expbits(amax) - 127 - emax, -127, 128) + 127.
__device__ __forceinline__ u32 e8m0_scale_floor(float amax, int emax_elem) {
  const u32 exp = (bits_from_f32(amax) >> 23) & 0xFF;
  if (exp == 0xFF) return 0xFF;
  int unbiased = int(exp) - 127 - emax_elem;
  unbiased = unbiased < -127 ? -127 : unbiased > 128 ? 128 : unbiased;
  return u32(unbiased + 127);
}

}  // namespace kiln_dev
