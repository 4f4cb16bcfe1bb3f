// templates/epilogue/store.cuh — storing two adjacent outputs of an accumulator fragment.
//
// Both GEMM families hold outputs as (row, col), (row, col + 1) pairs (mma.sync and wgmma
// accumulator layouts alike). One 4- or 8-byte store when the caller says the row stride and the base
// pointer allow it (paired_ok) and col + 1 < n; element stores otherwise; columns >= n never written.
// store_out_one writes a single element (GLU outputs: one per (gate, up) pair).
#pragma once

#include "common/types.cuh"
#include "ptx/cvt.cuh"

namespace kiln_dev {

// Two f32 outputs stored as one 8-byte access.
struct alignas(8) F32x2 {
  float x, y;
};

template <Format kOut>
__device__ __forceinline__ void store_out_pair(void* out, long long ldc, int n, bool paired_ok, long long row,
                                               int col, float v0, float v1) {
  static_assert(kOut == Format::kBf16 || kOut == Format::kF16 || kOut == Format::kF32,
                "the output is bf16, f16 or f32");
  const long long idx = row * ldc + col;
  if (paired_ok && col + 1 < n) {
    if constexpr (kOut == Format::kF32) {
      F32x2 v;
      v.x = v0;
      v.y = v1;
      *reinterpret_cast<F32x2*>(static_cast<float*>(out) + idx) = v;
    } else if constexpr (kOut == Format::kBf16) {
      *reinterpret_cast<u32*>(static_cast<u16*>(out) + idx) = cvt_pack_bf16x2(v0, v1);
    } else {
      *reinterpret_cast<u32*>(static_cast<u16*>(out) + idx) = cvt_pack_f16x2(v0, v1);
    }
    return;
  }
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    const float v = e == 0 ? v0 : v1;
    if (col + e < n) {
      if constexpr (kOut == Format::kF32) {
        static_cast<float*>(out)[idx + e] = v;
      } else if constexpr (kOut == Format::kBf16) {
        static_cast<u16*>(out)[idx + e] = cvt_bf16(v);
      } else {
        static_cast<u16*>(out)[idx + e] = cvt_f16(v);
      }
    }
  }
}

// One f32 output at (row, col) (GLU epilogues store one element per (gate, up) pair).
template <Format kOut>
__device__ __forceinline__ void store_out_one(void* out, long long ldc, long long row, int col, float v) {
  static_assert(kOut == Format::kBf16 || kOut == Format::kF16 || kOut == Format::kF32,
                "the output is bf16, f16 or f32");
  const long long idx = row * ldc + col;
  if constexpr (kOut == Format::kF32) {
    static_cast<float*>(out)[idx] = v;
  } else if constexpr (kOut == Format::kBf16) {
    static_cast<u16*>(out)[idx] = cvt_bf16(v);
  } else {
    static_cast<u16*>(out)[idx] = cvt_f16(v);
  }
}

}  // namespace kiln_dev
