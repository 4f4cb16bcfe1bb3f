// templates/kernels/sm80_epilogue.cuh — the sm80 families' epilogue: output scales and stores.
//
//   Y[m, n] = round_out( acc[m, n] * (row_factor(m) * col_factor(n)) )
//
// row_factor: a's f32 scale — the tensor scale, or a_scale[m] for per-token (`m`) FP8; 1 otherwise.
// col_factor: b's f32 scale — the tensor scale, or b_scale[n] for per-channel (`n`) FP8 — times the
//             NVFP4 global decode scale (b_global[0], or b_global[expert] with nvfp4_global=expert).
// Scales that vary along K never get here: they are folded into dequantized elements (dequant/) or
// promoted into the accumulator per K block (kernels/sm80_promotion.cuh). The reference kernel
// (kernels/reference_gemm.cuh) applies the same two factors in the same order, so tensor x tensor FP8
// keeps the one multiplication acc * (sa * sb) of the first release.
//
// Accumulator (mf, nf) of a warp: c0, c1 at (row g, cols 2t, 2t+1), c2, c3 at row g + 8 (PTX ISA
// §9.7.14.5.8). Stores go two elements at a time where ldc and the base pointer allow it, else one at a
// time; rows past the group's rows and columns >= N are never written.
#pragma once

#include "common/gemm_params.cuh"
#include "common/types.cuh"
#include "epilogue/store.cuh"
#include "ptx/cvt.cuh"
#include "ptx/ld.cuh"
#include "scheduler/group_tile.cuh"

namespace kiln_dev {
namespace sm80 {

template <class Config>
struct Epilogue {
  static constexpr Format kOut = Config::kOut;
  static constexpr Scale kScaleA = Config::kScaleA;
  static constexpr Scale kScaleB = Config::kScaleB;
  static constexpr bool kGlobal = Config::kB == Format::kNvfp4;

  static_assert(kOut == Format::kBf16 || kOut == Format::kF16 || kOut == Format::kF32,
                "the output is bf16, f16 or f32");

  // The per-tensor parts of the two factors (read once, before the main loop).
  static __device__ __forceinline__ float a_tensor(const GemmParams& p) {
    if constexpr (kScaleA == Scale::kTensor) return p.a_scale != nullptr ? ldg_f32(p.a_scale) : 1.0f;
    return 1.0f;
  }
  static __device__ __forceinline__ float b_tensor(const GemmParams& p, int expert) {
    float s = 1.0f;
    if constexpr (kScaleB == Scale::kTensor) {
      // Grouped: one tensor scale per expert (b_scale_expert_stride 1); dense: stride 0.
      if (p.b_scale != nullptr) s = ldg_f32(p.b_scale + (long long)expert * p.b_scale_expert_stride);
    }
    if constexpr (kGlobal) {
      if (p.b_global != nullptr) s *= ldg_f32(p.b_global + (Config::kGlobalPerExpert ? expert : 0));
    }
    return s;
  }

  // Two adjacent outputs (row, col), (row, col + 1) of Y (row counted from Y's first row); col + 1
  // may be >= n.
  static __device__ __forceinline__ void store_pair(const GemmParams& p, bool paired_ok, long long row, int col,
                                                    float v0, float v1) {
    store_out_pair<kOut>(p.out, p.ldc, p.n, paired_ok, row, col, v0, v1);
  }

  // Scales and stores a warp's accumulators. row0 / col0: this lane's first row (within the group) and
  // first column (2t included); rows step 8 (halves) and 16 (m fragments), columns 8 (n fragments).
  template <int kMFrags, int kNFrags>
  static __device__ __forceinline__ void store(const GemmParams& p, const TileWork& w, int row0, int col0,
                                               float a_t, float b_t, const float (&acc)[kMFrags][kNFrags][4]) {
    const bool paired_ok =
        (p.ldc % 2 == 0) && ((reinterpret_cast<u64>(p.out) & u64(2 * format_bytes(kOut) - 1)) == 0);
    float col_f[kNFrags][2];
#pragma unroll
    for (int nf = 0; nf < kNFrags; ++nf) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int col = col0 + nf * 8 + e;
        if constexpr (kScaleB == Scale::kRow) {
          const float* sb = p.b_scale + (long long)w.expert * p.b_scale_expert_stride;
          col_f[nf][e] = (col < p.n ? ldg_f32(sb + col) : 0.0f) * b_t;
        } else {
          col_f[nf][e] = b_t;
        }
      }
    }
#pragma unroll
    for (int mf = 0; mf < kMFrags; ++mf) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = row0 + mf * 16 + half * 8;
        if (row < w.rows) {
          const long long y_row = w.row_base + row;
          float row_f = a_t;
          if constexpr (kScaleA == Scale::kRow) row_f = ldg_f32(p.a_scale + y_row);
#pragma unroll
          for (int nf = 0; nf < kNFrags; ++nf) {
            const int col = col0 + nf * 8;
            if (col < p.n) {
              store_pair(p, paired_ok, y_row, col, acc[mf][nf][2 * half] * (row_f * col_f[nf][0]),
                         acc[mf][nf][2 * half + 1] * (row_f * col_f[nf][1]));
            }
          }
        }
      }
    }
  }
};

}  // namespace sm80
}  // namespace kiln_dev
