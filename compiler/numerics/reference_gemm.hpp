// compiler/numerics/reference_gemm.hpp — the CPU reference GEMM that kernels are checked against.
//
// Computes out[M,N] = (sum_k A[m,k] * B[n,k]) * sa * sb in double, from operands stored exactly as
// the kernels read them: A[M,K] and B[N,K] row-major with leading dimensions lda/ldb in elements,
// bf16/f16 as uint16 bit patterns, f32 as float, e4m3/e5m2 as bytes (decoded per NUMERICS.md
// §1.2). Per-tensor f32 scales are one float each; unscaled operands ignore their scale pointer
// (it may be null). Elements decode exactly and the accumulation is double, so the reference is
// independent of summation order to well below any kernel tolerance.
//
// Scope: op gemm, pass fprop, formats bf16/f16/f32/e4m3/e5m2 with tensor scales, high-precision
// out. Anything else returns UNSUPPORTED naming what is missing (block scales, MX and NVFP4 come
// with the kernels that need them). The epilogue (gate_up, activation) is not applied: out is the
// scaled accumulator. round_to_format() turns it into what a kernel stores.
//
//   std::vector<double> ref;
//   KILN_RETURN_IF_ERROR(kiln::numerics::reference_gemm(spec, m, n, k, a, k, b, k, &sa, &sb, ref));
//   double stored = kiln::numerics::round_to_format(ref[0], kiln::Format::kBf16);
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/spec/kernel_spec.hpp"
#include "kiln/status.hpp"

namespace kiln::numerics {

// out is resized to m*n, row-major with leading dimension n.
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
