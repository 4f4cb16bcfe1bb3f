// runtime/mx_prepass.hpp — MXFP8 at large M through a bf16 pre-pass.
//
// Hopper has no block-scaled MMA: the fused MXFP8 kernel converts both operands to bf16 inside the
// GEMM (templates/kernels/sm90/mx_dequant.cuh), which costs more than a separate pass over
// memory at large M. So an MXFP8 plan on the sm90 family (compiler/plan/sm90_plan.hpp
// sm90_mx_prepass_supported) holds a second plan, the same problem on bf16 operands, and runs
//   1. kiln_mx_dequant (templates/kernels/mx_dequant.cuh): X and W with their E8M0 scales -> bf16
//      copies in the workspace, exactly the values the fused kernel would feed its wgmmas;
//   2. the bf16 plan's kernel on those copies, with the caller's output and epilogue vectors;
// both on the caller's stream, the second a programmatic dependent launch of the first.
// The workspace is 1 MiB (left alone: split-K counters) + 2 (M + N) K bytes (370 MB at 4096 x 7168 x
// 16384; grouped 2 (M + E N) K), so kiln never takes it by
// itself: Plan::run takes this path only when the caller passes a workspace of at least
// Plan::mx_prepass_workspace_bytes(M) bytes (no zero fill needed), else the fused kernel runs.
//
//   KILN_ASSIGN_OR_RETURN(...);  // in Plan::run, with c = the checked MXFP8 operands:
//   if (mx_prepass_applies(p, c, workspace, workspace_bytes))
//     return mx_prepass_run(p, c, ops, workspace, stream);
#pragma once

#include <cstddef>

#include "kiln/kiln.hpp"
#include "runtime/operands.hpp"
#include "runtime/runtime_impl.hpp"

namespace kiln {

// Whether run() takes the pre-pass for these checked operands: the plan has one, the caller's workspace
// holds sm90_mx_prepass_workspace_bytes for c.m (> 0), the codes are 16-byte aligned (base and row
// stride; else the fused kernel runs), and the bf16 bucket's config needs no workspace of its own (no
// split-K). INVALID_ARGUMENT when it would apply but the workspace is not 16-byte aligned.
StatusOr<bool> mx_prepass_applies(const PlanImpl& p, const CheckedOperands& c, const void* workspace,
                                  size_t workspace_bytes);
// Runs the conversion and the bf16 GEMM on stream (the caller's context is current).
Status mx_prepass_run(const PlanImpl& p, const CheckedOperands& c, const Operands& ops, void* workspace,
                      CUstream stream);
// Loads the conversion kernel (prepare(), and the first run: in_run, NOT_READY during a capture of stream).
StatusOr<LoadedKernel*> mx_prepass_convert_kernel(const PlanImpl& p, int device, CUstream stream,
                                                  bool in_run);

}  // namespace kiln
