// templates/epilogue/store.cuh — storing two adjacent outputs of an accumulator fragment.
//
// Both GEMM families hold outputs as (row, col), (row, col + 1) pairs (mma.sync and wgmma
// accumulator layouts alike). One 4- or 8-byte store when the caller says the row stride and the base
// pointer allow it (paired_ok) and col + 1 < n; element stores otherwise; columns >= n never written.
// store_out_one writes a single element (GLU outputs: one per (gate, up) pair).
#pragma once

#include "common/decode.cuh"
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

// One element of the output at (row, col) as f32 (accumulate=true reads what it adds to).
template <Format kOut>
__device__ __forceinline__ float load_out_one(const void* out, long long ldc, long long row, int col) {
  const long long idx = row * ldc + col;
  if constexpr (kOut == Format::kF32) {
    return static_cast<const float*>(out)[idx];
  } else if constexpr (kOut == Format::kBf16) {
    return decode_bf16(static_cast<const u16*>(out)[idx]);
  } else {
    return decode_f16(static_cast<const u16*>(out)[idx]);
  }
}

// store_out_pair into an output that is added to (accumulate=true): each element is read, v added in f32
// and the sum rounded once to the output format. Columns >= n are neither read nor written.
template <Format kOut>
__device__ __forceinline__ void accumulate_out_pair(void* out, long long ldc, int n, bool paired_ok, long long row,
                                                    int col, float v0, float v1) {
  const long long idx = row * ldc + col;
  auto half = [](u32 h) { return kOut == Format::kBf16 ? decode_bf16(u16(h)) : decode_f16(u16(h)); };
  if (paired_ok && col + 1 < n) {  // one 8- or 4-byte load, as store_out_pair stores
    if constexpr (kOut == Format::kF32) {
      const F32x2 o = *reinterpret_cast<const F32x2*>(static_cast<const float*>(out) + idx);
      v0 += o.x;
      v1 += o.y;
    } else {
      const u32 o = *reinterpret_cast<const u32*>(static_cast<const u16*>(out) + idx);
      v0 += half(o & 0xFFFFu);
      v1 += half(o >> 16);
    }
  } else {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      if (col + e >= n) break;
      (e == 0 ? v0 : v1) += load_out_one<kOut>(out, ldc, row, col + e);
    }
  }
  store_out_pair<kOut>(out, ldc, n, paired_ok, row, col, v0, v1);
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
