// templates/kernels/reference_gemm.cuh — the naive GPU reference GEMM (ground truth on the device).
//
//   Y[m, n] = round_out( (sum over k of decode(X[m, k]) * decode(W[n, k])) * (sa * sb) )
//
// Obviously correct rather than fast: one thread per output element, every element decoded exactly
// to f32 by bit manipulation (common/decode.cuh: zeros, subnormals, Inf and NaN of bf16/f16/e4m3/e5m2),
// products accumulated in f32 in increasing k with one fma.rn each (a fixed, documented order, so
// repeated runs are bitwise identical), the product of the two scales applied once (the sm80 family
// applies it the same way), and the result rounded to nearest-even to the output format by cvt.rn.
// Accumulation is f32 — what the fast kernels do — so the tolerance of a comparison only has to cover
// accumulation order, not a precision gap (runtime/check.hpp check_tolerance).
// No alignment requirement on K, lda, ldb or ldc: the tuner checks any shape against it.
//
// Launch (compiler/plan launch_shape): block 256 threads = 16 x 16 outputs, grid
// (ceil(N / 16), min(ceil(M / 16), 65535)); rows beyond the grid are covered by a grid-stride loop.
// Instantiated by generated code as
//   struct KilnConfig { static constexpr kiln_dev::Format kA = ..., kB = ..., kOut = ...; };
//   extern "C" __global__ void __launch_bounds__(256, 1) kiln_reference_gemm(kiln_dev::GemmParams p) {
//     kiln_dev::reference_gemm<KilnConfig>(p);
//   }
#pragma once

#include "common/decode.cuh"
#include "common/gemm_params.cuh"
#include "common/types.cuh"
#include "ptx/cvt.cuh"

namespace kiln_dev {

constexpr int kReferenceTile = 16;  // outputs per block side; block = 16 x 16 = 256 threads

template <class Config>
__device__ __forceinline__ void reference_gemm(const GemmParams& p) {
  constexpr Format kA = Config::kA;
  constexpr Format kB = Config::kB;
  constexpr Format kOut = Config::kOut;
  static_assert(kA != Format::kF32 && kB != Format::kF32,
                "operands are bf16/f16/e4m3/e5m2 (the planner offers no f32 operand)");
  static_assert(kOut == Format::kBf16 || kOut == Format::kF16 || kOut == Format::kF32,
                "the output is bf16, f16 or f32");

  const int n = blockIdx.x * kReferenceTile + threadIdx.x % kReferenceTile;
  if (n >= p.n) return;

  float scale = 1.0f;
  if (format_is_fp8(kA) && p.a_scale != nullptr) scale = *p.a_scale;
  if (format_is_fp8(kB) && p.b_scale != nullptr) scale *= *p.b_scale;

  const u8* b_row = static_cast<const u8*>(p.b) + i64(n) * p.ldb * format_bytes(kB);
  for (i64 m = i64(blockIdx.y) * kReferenceTile + threadIdx.x / kReferenceTile; m < p.m;
       m += i64(gridDim.y) * kReferenceTile) {
    const u8* a_row = static_cast<const u8*>(p.a) + m * p.lda * format_bytes(kA);
    float acc = 0.0f;
    for (int k = 0; k < p.k; ++k) {
      acc = fma_rn(decode_element<kA>(a_row, k), decode_element<kB>(b_row, k), acc);
    }
    const float y = acc * scale;
    const i64 idx = m * p.ldc + n;
    if constexpr (kOut == Format::kF32) {
      static_cast<float*>(p.out)[idx] = y;
    } else if constexpr (kOut == Format::kBf16) {
      static_cast<u16*>(p.out)[idx] = cvt_bf16(y);
    } else {
      static_cast<u16*>(p.out)[idx] = cvt_f16(y);
    }
  }
}

}  // namespace kiln_dev
