// compiler/numerics/dequantize.hpp — one entry point that turns any block-scaled QuantizedTensor
// back into numbers, for the fp64 reference GEMM and for tests.
//
// dequantize_f64 returns the exact real value each stored element stands for in a GEMM, in double
// (every product below has at most 30 significant bits, so none rounds):
//   mxfp8 / mxfp4  decode(q) * 2^(b-127); NaN for b = 0xFF                          docs/numerics.md §3
//   e4m3 blocks    decode(q) * scale (the f32 scale, or 2^(b-127) for ue8m0)       docs/numerics.md §2
//   nvfp4          e2m1(q) * ue4m3(sf) * global_decode_scale                        docs/numerics.md §4
// For NVFP4 this is the product the block-scaled MMA forms (sum of e2m1 * sf, times the global
// scales), not TE's fp32 dequantizer; nvfp4_dequantize (nvfp4.hpp) is that bitwise contract.
// The per-format fp32 dequantizers (mx_dequantize, nvfp4_dequantize, fp8_block_dequantize) are the
// contracts for dequantization kernels.
//
// Invariant: every function here first checks the tensor with check_quantized_tensor, so a wrong
// size or block shape is an INVALID_ARGUMENT naming the field, never an out-of-bounds read.
//
//   KILN_ASSIGN_OR_RETURN(QuantizedTensor w, nvfp4_quantize(x, n, k, Nvfp4Options{}));
//   KILN_ASSIGN_OR_RETURN(std::vector<double> w_exact, dequantize_f64(w));   // [n, k] row-major
#pragma once

#include <vector>

#include "compiler/numerics/quantized_tensor.hpp"
#include "kiln/status.hpp"

namespace kiln::numerics {

// Shape, block and size consistency of q (see quantized_tensor.hpp invariants).
Status check_quantized_tensor(const QuantizedTensor& q);

// Row-major [rows, cols] exact values (see above).
StatusOr<std::vector<double>> dequantize_f64(const QuantizedTensor& q);

}  // namespace kiln::numerics
