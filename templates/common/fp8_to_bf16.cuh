// templates/common/fp8_to_bf16.cuh — four packed FP8 values -> four bf16 (or f16), exactly, in registers.
//
// Why: below sm_89 there is neither an FP8 mma nor an FP8 cvt (PTX ISA §9.7.9.21: cvt from e4m3/e5m2
// needs sm_89), so the sm80 family turns FP8 fragments into bf16 fragments with integer operations
// and feeds bf16 mma. Both formats are subsets of bf16 (e4m3: 3 mantissa bits, exponents 2^-9..2^8;
// e5m2: 2 mantissa bits, 2^-16..2^15), so the conversion is exact. bf16 rather than f16 because the
// block-scaled formats that follow fold E8M0 scales into bf16 exactly (docs/architecture.md).
//
// The trick: write the FP8 exponent and mantissa fields straight into the low bits of the bf16
// exponent and mantissa fields. For e4m3 the 7 magnitude bits x = eeee.mmm land at x << 4, which as a
// bf16 bit pattern is worth exactly value * 2^-120:
//   normal  (e > 0): 2^(e-127) * 1.mmm          = 2^(e-7) * 1.mmm * 2^-120
//   subnorm (e = 0): bf16 subnormal (m<<4)*2^-133 = (m * 2^-9)   * 2^-120
// so one fma.rn.bf16x2 by 2^120 (exact: a power of two, result in range) restores the value for
// normals and subnormals alike. e5m2 is the same with x << 5 and 2^112. The fma adds -0 so that -0
// stays -0. The fma needs subnormal bf16 inputs honoured (PTX ISA §9.7.4 half-precision fma: no .ftz
// for bf16; subnormals supported); the gpu tier checks all 256 codes of each format.
//
// Specials: an e4m3 magnitude of 0x7F (NaN) would come out as +-480 and an e5m2 exponent of 31 as a
// finite 2^16 * 1.mm; fix_specials ORs the all-ones exponent back in (e4m3 -> 0x7FF0-ish NaN; e5m2 ->
// Inf when mm == 0, NaN otherwise). Real data almost never holds them, so the kernel asks, once per
// fragment set, whether any lane saw one (has_specials + a warp vote) and only then runs the fix-ups.
#pragma once

#include "common/types.cuh"
#include "ptx/cvt.cuh"

namespace kiln_dev {

// Nonzero iff one of the 4 FP8 bytes of w is an Inf/NaN code of kFmt. Per byte: adding 1 (e4m3,
// magnitude 0x7F) or 4 (e5m2, exponent bits 0x7C) to the masked magnitude carries into bit 7 exactly
// when all the masked bits are ones; the masked value is at most 0x7F so no carry leaves the byte.
template <Format kFmt>
__device__ __forceinline__ u32 fp8x4_specials(u32 w) {
  if constexpr (kFmt == Format::kE4m3) {
    return ((w & 0x7F7F7F7Fu) + 0x01010101u) & 0x80808080u;
  } else {
    static_assert(kFmt == Format::kE5m2, "fp8x4_specials: e4m3 or e5m2");
    return ((w & 0x7C7C7C7Cu) + 0x04040404u) & 0x80808080u;
  }
}

// t holds two FP8 codes as (code << 8) in each 16-bit half; r is the fast conversion of t. Returns r
// with the specials of t turned into bf16 Inf/NaN. Per half: flag = bit 15 set iff the code is
// special (same carry trick as above, one position up); flag - (flag >> k) spreads it into the mask.
template <Format kFmt>
__device__ __forceinline__ u32 fix_specials(u32 t, u32 r) {
  if constexpr (kFmt == Format::kE4m3) {
    const u32 flag = ((t & 0x7F007F00u) + 0x01000100u) & 0x80008000u;
    return r | (flag - (flag >> 9));  // 0x8000 - 0x0040 = 0x7FC0: exponent all ones + quiet bit
  } else {
    const u32 flag = ((t & 0x7C007C00u) + 0x04000400u) & 0x80008000u;
    return r | (flag - (flag >> 8));  // 0x8000 - 0x0080 = 0x7F80: exponent all ones, mantissa kept
  }
}

// Two FP8 codes, each held as (code << 8) in a 16-bit half of t, -> two bf16 in the same halves.
template <Format kFmt, bool kSpecials>
__device__ __forceinline__ u32 fp8x2_hi_to_bf16x2(u32 t) {
  u32 scaled, r;
  if constexpr (kFmt == Format::kE4m3) {
    scaled = ((t >> 4) & 0x07F007F0u) | (t & 0x80008000u);
    r = fma_bf16x2(scaled, 0x7B807B80u /* 2^120 */, 0x80008000u /* -0 */);
  } else {
    static_assert(kFmt == Format::kE5m2, "fp8x2_hi_to_bf16x2: e4m3 or e5m2");
    scaled = ((t >> 3) & 0x0FE00FE0u) | (t & 0x80008000u);
    r = fma_bf16x2(scaled, 0x77807780u /* 2^112 */, 0x80008000u /* -0 */);
  }
  if constexpr (kSpecials) r = fix_specials<kFmt>(t, r);
  return r;
}

// w = four FP8 codes, byte 0 first. lo = bf16x2 {byte 0, byte 1}, hi = bf16x2 {byte 2, byte 3}
// (low half = lower byte, as in memory). kSpecials: also map Inf/NaN codes (see above).
template <Format kFmt, bool kSpecials>
__device__ __forceinline__ void fp8x4_to_bf16x4(u32 w, u32& lo, u32& hi) {
  // prmt selectors: result byte i <- nibble i; 0-3 pick bytes of w, 4 picks a zero byte of 0.
  lo = fp8x2_hi_to_bf16x2<kFmt, kSpecials>(prmt(w, 0u, 0x1404u));  // {b0 << 8, b1 << 8}
  hi = fp8x2_hi_to_bf16x2<kFmt, kSpecials>(prmt(w, 0u, 0x3424u));  // {b2 << 8, b3 << 8}
}

// w = four FP8 codes -> lo = f16x2 {byte 0, byte 1}, hi = f16x2 {byte 2, byte 3}, by the hardware
// conversion (PTX ISA §9.7.9.21: cvt.rn.f16x2.{e4m3x2,e5m2x2}, sm_89+; the upper byte of the .b16
// source goes to the upper half). Exact, Inf/NaN included: e4m3 and e5m2 are subsets of f16.
// Used on sm_90, where ptxas 13.0 lowers FP8 mma.sync to exactly this conversion + f16 HMMA + an
// extra f32 FADD per accumulator (seen in the SASS), so doing the conversion ourselves is cheaper.
template <Format kFmt>
__device__ __forceinline__ void fp8x4_to_f16x4(u32 w, u32& lo, u32& hi) {
  if constexpr (kFmt == Format::kE4m3) {
    asm("{\n .reg .b16 l, h;\n mov.b32 {l, h}, %2;\n cvt.rn.f16x2.e4m3x2 %0, l;\n"
        " cvt.rn.f16x2.e4m3x2 %1, h;\n}\n"
        : "=r"(lo), "=r"(hi)
        : "r"(w));
  } else {
    static_assert(kFmt == Format::kE5m2, "fp8x4_to_f16x4: e4m3 or e5m2");
    asm("{\n .reg .b16 l, h;\n mov.b32 {l, h}, %2;\n cvt.rn.f16x2.e5m2x2 %0, l;\n"
        " cvt.rn.f16x2.e5m2x2 %1, h;\n}\n"
        : "=r"(lo), "=r"(hi)
        : "r"(w));
  }
}

}  // namespace kiln_dev
