// runtime/dgrad_transpose.hpp — a quantized dgrad's pre-pass: W's transposed copy.
//
// dX = dY · W reduces over N, down W's columns. FP8 wgmma reads 8-bit operands K-major only, so the GEMM
// (the forward's FP8 kernel on dY and Wᵀ; compiler/plan/gemm_view.hpp dgrad_reads_transposed_w) reads
// Wᵀ [K, N]. Per-tensor and 128 x 128 block scales transpose exactly, so the copy is exact. Plan::run
// writes it with kiln_fp8_transpose (templates/kernels/fp8_transpose.cuh): codes and, for block scales,
// the transposed scale grid, into the workspace after the bucket's own bytes (compiler/plan/launch_rule.hpp
// TransposedWLayout), then launches the GEMM on the copy as a programmatic dependent launch. The copy
// moves 2 N K bytes (E of them grouped) per run; the caller passes W [N, K] as the forward holds it.
// Plan::workspace_bytes(m) counts the copy, so a caller's own workspace serves it (runs of one plan on
// several streams at once must each pass their own, as for split-K).
//
//   if (p.transposed_w.experts > 0) KILN_RETURN_IF_ERROR(dgrad_transpose_run(p, c, region, stream, gp));
#pragma once

#include "runtime/operands.hpp"
#include "runtime/runtime_impl.hpp"
#include "templates/common/gemm_params.cuh"

namespace kiln {

// Writes W's transposed copy into `region` (TransposedWLayout's bytes, 256-byte aligned) on stream, and
// points gp's b operand (codes, row stride, scales, expert strides) at it. INVALID_ARGUMENT when W's
// base, row stride or expert stride is not 16-byte aligned (the copy reads 16-byte pieces).
Status dgrad_transpose_run(const PlanImpl& p, const CheckedOperands& c, void* region, CUstream stream,
                           kiln_dev::GemmParams& gp);
// Loads the transpose kernel (prepare(), and the first run: in_run, NOT_READY during a capture of stream).
StatusOr<LoadedKernel*> dgrad_transpose_kernel(const PlanImpl& p, int device, CUstream stream, bool in_run);

}  // namespace kiln
