// templates/kernels/mx_dequant.cuh — the MXFP8 pre-pass: both operands of an MXFP8 GEMM to bf16, so
// that the plain bf16 sm90 kernel can run the product (runtime/mx_prepass.cpp; Hopper has no
// block-scaled MMA, and converting inside the GEMM costs more than this pass: docs/performance.md).
//
// Exact: every e4m3 code times its E8M0 scale becomes the bf16 the fused kernel's dequantizing mainloop
// makes (sm90_gemm.cuh dq_convert: e4m3 -> f16 -> f32 by hardware, Inf/NaN included; one f32 product
// by the decoded scale, 2^-127 as the f32 subnormal; cvt.rn to bf16). A value with 4 significant bits
// rounds only where the product leaves bf16's range, as the reference's f32 product leaves f32's
// (element by element: a block whose scale overflows some products gives +-Inf operands, as in the
// reference; the fused promoted mainloop scales a block's partial sum instead).
//
// Work: a flat grid-stride walk over 8-element units (job 0's, then job 1's; X's and W's bf16 copies are
// dense, so unit c lands at byte 16 c of its copy). Consecutive threads take consecutive units, so a
// warp's 8-byte code loads read 256 contiguous bytes and its 16-byte stores write 512 (an earlier
// version with 16 or 32 elements per thread stored 32 or 64 bytes per thread: half-sector stores, 205
// and 253 us at 4096 x 7168 x 16384 under ncu). Each thread issues kMxDequantUnroll units' loads (codes
// and scale byte) before converting and storing any, to keep more bytes in flight.
// The entry (compiler/emit/emit.cpp) waits for the previous kernel first on sm_90+ (PDL).
#pragma once

#include "common/decode.cuh"
#include "common/fp8_to_bf16.cuh"
#include "common/mx_dequant_params.cuh"
#include "common/types.cuh"
#include "ptx/cvt.cuh"
#include "ptx/ld.cuh"

namespace kiln_dev {

inline constexpr int kMxDequantThreads = 256;

// 8 e4m3 codes (w0 = bytes 0-3, w1 = bytes 4-7) times f -> 8 bf16 in K order (o[j] = elements 2j, 2j + 1).
__device__ __forceinline__ void mx_dequant8(u32 w0, u32 w1, float f, u32 (&o)[4]) {
  u32 lo, hi;
  float x0, x1, x2, x3;
  fp8x4_to_f16x4<Format::kE4m3>(w0, lo, hi);
  f16x2_to_f32x2(lo, x0, x1);
  f16x2_to_f32x2(hi, x2, x3);
  o[0] = cvt_pack_bf16x2(x0 * f, x1 * f);
  o[1] = cvt_pack_bf16x2(x2 * f, x3 * f);
  fp8x4_to_f16x4<Format::kE4m3>(w1, lo, hi);
  f16x2_to_f32x2(lo, x0, x1);
  f16x2_to_f32x2(hi, x2, x3);
  o[2] = cvt_pack_bf16x2(x0 * f, x1 * f);
  o[3] = cvt_pack_bf16x2(x2 * f, x3 * f);
}

__device__ __forceinline__ void ldg_v2(u32& a, u32& b, const void* p) {
  asm volatile("ld.global.nc.v2.u32 {%0, %1}, [%2];\n" : "=r"(a), "=r"(b) : "l"(p));
}

inline constexpr int kMxDequantUnroll = 4;  // units per thread and step, all loads issued before the stores
inline constexpr int kMxDequantUnit = 8;    // elements per unit: an 8-byte load, a 16-byte store
inline constexpr int kMxScaleBlock = 32;    // elements per E8M0 scale (MX)

template <class Config>
__device__ __forceinline__ void mx_dequant(const MxDequantParams& p) {
  static_assert(kMxScaleBlock % kMxDequantUnit == 0,
                "a unit never straddles two scale blocks: unit c of a dense row reads scale byte c / 4");
  static_assert(kMxDequantUnit * 2 == 16,
                "a unit's bf16 is one 16-byte store (the copies are 16-byte aligned)");
  static_assert(kMxDequantUnroll >= 1, "each step converts at least one unit per thread");
  constexpr int kUnitsPerScale = kMxScaleBlock / kMxDequantUnit;
  const long long per_row = p.k / kMxDequantUnit;  // units per row (K % 32 == 0: runtime/mx_prepass.cpp)
  const long long units0 = p.job[0].rows * per_row;
  const long long total = units0 + p.job[1].rows * per_row;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long base = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; base < total;
       base += kMxDequantUnroll * stride) {
    u32 w[kMxDequantUnroll][2];
    u32 sb[kMxDequantUnroll];
    u8* dst[kMxDequantUnroll];
#pragma unroll
    for (int u = 0; u < kMxDequantUnroll; ++u) {
      const long long i = base + u * stride;
      if (i >= total) break;
      const bool second = i >= units0;
      const MxDequantJob& j = p.job[second ? 1 : 0];
      const long long c = second ? i - units0 : i;
      long long src = c * kMxDequantUnit, sc = c / kUnitsPerScale;  // dense: both follow the unit index
      if (!j.dense) {
        const long long row = c / per_row, unit = c - row * per_row;
        const long long g = row / j.group_rows, r = row - g * j.group_rows;
        src = g * j.group_codes + r * j.ld_codes + unit * kMxDequantUnit;
        sc = g * j.group_scales + r * j.ld_scales + unit / kUnitsPerScale;
      }
      ldg_v2(w[u][0], w[u][1], static_cast<const u8*>(j.codes) + src);
      sb[u] = ldg_u8(static_cast<const u8*>(j.scales) + sc);
      dst[u] = static_cast<u8*>(j.out) + c * (2 * kMxDequantUnit);
    }
#pragma unroll
    for (int u = 0; u < kMxDequantUnroll; ++u) {
      if (base + u * stride >= total) break;
      u32 o[4];
      mx_dequant8(w[u][0], w[u][1], decode_e8m0(sb[u]), o);
      stg_v4(dst[u], o[0], o[1], o[2], o[3]);
    }
  }
}

}  // namespace kiln_dev
