// compiler/numerics/reference_gemm.hpp — the CPU reference GEMM that kernels are checked against.
//
// Computes out[M,N] = (sum_k A[m,k] * B[n,k]) * sa * sb in double, from operands stored exactly as
// the kernels read them: A[M,K] and B[N,K] row-major with leading dimensions lda/ldb in elements,
// bf16/f16 as uint16 bit patterns, f32 as float, e4m3/e5m2 as bytes (decoded per docs/numerics.md
// §1). Per-tensor f32 scales are one float each; unscaled operands ignore their scale pointer
// (it may be null). Elements decode exactly and the accumulation is double, so the reference is
// independent of summation order to well below any kernel tolerance.
//
// Scope of reference_gemm: op gemm, pass fprop, formats bf16/f16/f32/e4m3/e5m2 with tensor scales,
// high-precision out; and the backward passes of bf16/f16/f32 operands in the forward's sizes (a = dY
// [M, N] with lda >= N; dgrad: b = W [N, K], out = dX [M, K]; wgrad: b = X [M, K], out = dW [N, K];
// compiler/plan/gemm_view.hpp); reference_gemm_quantized takes every scale granularity, MX, NVFP4 and grouped
// problems. Anything else returns UNSUPPORTED naming what is missing. The epilogue (gate_up, activation) is not applied: out is the
// scaled accumulator. round_to_format() turns it into what a kernel stores.
//
//   std::vector<double> ref;
//   KILN_RETURN_IF_ERROR(kiln::numerics::reference_gemm(spec, m, n, k, a, k, b, k, &sa, &sb, ref));
//   double stored = kiln::numerics::round_to_format(ref[0], kiln::Format::kBf16);
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/spec.hpp"
#include "kiln/status.hpp"

namespace kiln::numerics {

// One operand as the kernels read it (layouts: templates/common/gemm_params.cuh, runtime/operands.hpp).
struct RefOperand {
  const void* data = nullptr;          // elements; packed FP4: bytes, two codes each
  int64_t ld = 0;                      // row stride in elements
  int64_t expert_stride = 0;           // elements between experts (b of a grouped GEMM)
  const void* scales = nullptr;        // per the spec: f32, or E8M0 / UE4M3 bytes
  int64_t lds = 0;                     // row stride of 2-D scales, in scale elements
  int64_t scale_expert_stride = 0;     // scale elements between experts (b of a grouped GEMM)
  const float* global = nullptr;       // nvfp4: global decode scale(s), [1] or [experts]
};

// The exact fprop of every supported format pairing, for grouped problems too:
//   out[m, n] = sum_k deq(A)[m, k] * deq(B_e)[n, k]        (e = the expert owning row m)
// where deq is the exact value of each stored element with all its scales (dequantize_f64 for the
// block-scaled formats — FP8 blocks, MX, NVFP4 with its global — and decode * scale for tensor / row
// FP8 and the 16-bit formats), accumulated in double. That is the math of per-K-block promotion too.
// m is the row count of X and Y (total rows; masked: experts * max_m). group_rows: offsets
// (cumulative ends; clamped and made non-decreasing as the kernels do) or counts (masked); null for
// a dense GEMM. written (optional) gets 1 for each row some expert owns, 0 for rows no kernel writes.
Status reference_gemm_quantized(const KernelSpec& spec, int64_t m, int64_t n, int64_t k, const RefOperand& a,
                                const RefOperand& b, const int32_t* group_rows, int64_t max_m,
                                std::vector<double>& out, std::vector<uint8_t>* written = nullptr);

// out is resized to m*n, row-major with leading dimension n (backward: the pass's output, dX [M, K] or
// dW [N, K], leading dimension K).
Status reference_gemm(const KernelSpec& spec, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
                      const void* b, int64_t ldb, const float* a_scale, const float* b_scale,
                      std::vector<double>& out);

// The value a kernel storing v in format `out` writes, read back as double: rounded to f32 first,
// then to bf16 / f16 (RNE) or to e4m3 / e5m2 (RNE, satfinite). Formats without a per-element
// meaning (mxfp8, mxfp4, nvfp4: their value depends on block scales) give NaN.
double round_to_format(double v, Format out);

// The exact value of element i of a buffer in an element format supported above (bf16, f16, f32,
// e4m3, e5m2); NaN for other formats.
double decode_element(Format f, const void* data, int64_t i);

}  // namespace kiln::numerics
