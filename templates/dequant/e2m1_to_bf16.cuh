// templates/dequant/e2m1_to_bf16.cuh — packed FP4 E2M1 codes -> bf16 in registers, with the block
// scale folded in EXACTLY.
//
// Why exact: E2M1 has 2 significant bits, E8M0 is a power of two and UE4M3 has 4 significant bits, so
// e2m1 * 2^(b-127) and e2m1 * ue4m3 have at most 6 significant bits: bf16 (8 bits, f32's exponent
// range, subnormals down to 2^-133) holds every such product exactly (docs/architecture.md, kernel families):
//   mxfp4: |e2m1 * 2^(b-127)| lies in [2^-128, 6 * 2^127]. The smallest nonzero values are bf16
//          subnormals (2^-128 = 32 * 2^-133, exact); above 1.5 * 2^127 (b >= 253 with codes 4 and 6)
//          the product overflows to +-Inf — exactly where the f32 value of the reference overflows
//          too, since bf16 and f32 share the exponent range. b = 0xFF gives NaN (docs/numerics.md §3).
//   nvfp4: e2m1 * ue4m3 in [2^-10, 2688]: always a normal bf16; a NaN scale (0x7F) gives NaN.
// The f32 scales that are not exact in bf16 (NVFP4's global, FP8 tensor/row scales) are applied to
// the f32 accumulator in the epilogue instead.
//
// The trick (the same as common/fp8_to_bf16.cuh): the 3 magnitude bits ee.m of a code, written to
// bits 8..6 of a bf16 (the two low exponent bits and the top mantissa bit), form a bf16 worth exactly
// value * 2^-126 — normal codes (ee > 0): 2^(ee-127) * (1 + m/2) vs 2^(ee-1) * (1 + m/2); the
// subnormal code (ee = 0): m * 64 * 2^-133 vs m * 2^-1. One fma.rn.bf16x2 by 2^126 restores the value
// (exact: a power of two, the result is a normal bf16 or zero), a second by the block scale applies
// it (exact as argued above). The fmas add -0 so that -0 stays -0; they honour bf16 subnormal inputs
// and results (PTX ISA §9.7.4: no .ftz for bf16).
#pragma once

#include "common/types.cuh"
#include "ptx/cvt.cuh"

namespace kiln_dev {

constexpr u32 kBf16x2Pow2_126 = 0x7E807E80u;  // 2^126 in both halves (exponent field 253)
constexpr u32 kBf16x2NegZero = 0x80008000u;

// One byte of two E2M1 codes (the even element in the low nibble; bits above 7 must be 0) -> bf16x2
// {even, odd} (even in the low half, as in memory), each worth value * 2^-126.
__device__ __forceinline__ u32 e2m1x2_to_bf16x2_raw(u32 byte) {
  const u32 z = byte | (byte << 12);  // low nibble at bits 0..3, high nibble at bits 16..19
  return ((z & 0x00070007u) << 6) | ((z & 0x00080008u) << 12);  // magnitudes -> 8..6, signs -> 15
}

// Two E2M1 codes, in bits 0..3 and 16..19 of p (the other bits are ignored) -> bf16x2 {first, second},
// each worth value * 2^-126 as above. The two nibbles are masked out, then one multiply by 2^6 + 2^12
// places two disjoint copies of each (no carries): bits 8..6 of each half take the magnitude from the
// copy shifted by 6, bit 15 the sign from the copy shifted by 12; the last mask keeps those. Two logic
// ops and an integer multiply (which issues on the FMA pipe, beside the logic ops).
__device__ __forceinline__ u32 e2m1_lo_pair_to_bf16x2_raw(u32 p) { return ((p & 0x000F000Fu) * 0x1040u) & 0x81C081C0u; }
// The same for codes in bits 4..7 and 20..23 (multiply by 2^2 + 2^8).
__device__ __forceinline__ u32 e2m1_hi_pair_to_bf16x2_raw(u32 p) { return ((p & 0x00F000F0u) * 0x104u) & 0x81C081C0u; }

// A raw bf16x2 (each half worth value * 2^-126) times its scales s (bf16x2, one per half), exactly: 2^126
// first, then s. kFolded: s already holds 2^126 x the scale (e8m0_folded_bf16), one fma.
template <bool kFolded = false>
__device__ __forceinline__ u32 e2m1_raw_scaled(u32 raw, u32 s) {
  if constexpr (kFolded) return fma_bf16x2(raw, s, kBf16x2NegZero);
  return fma_bf16x2(fma_bf16x2(raw, kBf16x2Pow2_126, kBf16x2NegZero), s, kBf16x2NegZero);
}

// The folded factor of an E8M0 byte b <= 128: 2^126 x 2^(b-127) = 2^(b-1), a normal bf16 (exponent field
// b + 126 <= 254). raw x 2^(b-1) is the exact product whenever it is representable, as with two fmas; above
// b = 128 the factor overflows, so callers fold only when every scale they apply is <= 2^1.
__device__ __forceinline__ u32 e8m0_folded_bf16(u32 b) { return (b + 126u) << 7; }

// The same, times the block scale scale_bf16x2 (the scale in both halves), exactly.
__device__ __forceinline__ u32 e2m1x2_to_bf16x2(u32 byte, u32 scale_bf16x2) {
  return e2m1_raw_scaled(e2m1x2_to_bf16x2_raw(byte), scale_bf16x2);
}

}  // namespace kiln_dev
