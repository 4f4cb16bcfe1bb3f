// compiler/plan/gemm_view.hpp — the GEMM a kernel computes for each pass of a spec.
//
// Every pass is one GEMM  C[m, n] = sum_k A(m, k) * B(n, k). With the forward's names (Y[M, N] =
// X[M, K] · W[N, K]ᵀ; docs/backward.md) and the tensors as the caller holds them, row-major:
//
//   pass    C (out)     A (operand a)            B (operand b)            m   n   k
//   fprop   Y  [M, N]   X  [M, K]   K-major      W [N, K]   K-major       M   N   K
//   dgrad   dX [M, K]   dY [M, N]   K-major      W [N, K]   MN-major      M   K   N
//   wgrad   dW [N, K]   dY [M, N]   MN-major     X [M, K]   MN-major      N   K   M
//   wgrad, mode quantized:
//           dW [N, K]   dYᵀ [N, M]  K-major      Xᵀ [K, M]  K-major       N   K   M
//   dgrad, mode quantized:
//           dX [M, K]   dY [M, N]   K-major      Wᵀ [K, N]  K-major       M   K   N
//
// A quantized wgrad reduces over the tokens, so both operands are quantized along M: the column-wise
// copies that `quantize ... transpose=true` writes (codes [N, M] / [K, M], 1x128 scales [N, M/128] /
// [K, M/128]). Those copies are K-major for the kernel (FP8 wgmma reads 8-bit operands K-major only).
//
// A quantized dgrad reduces over N, down W's columns. W's codes are quantized along K, but per-tensor and
// 128 x 128 block scales transpose exactly, so the kernel reads Wᵀ: a copy the runtime writes into the
// plan's workspace before the GEMM (runtime/dgrad_transpose.hpp; the caller passes W [N, K] as the
// forward holds it). MXFP8's 1x32 blocks along K and per-channel FP8 scales (one per row of W, along
// dgrad's reduction) do not transpose: such a dgrad takes W's column-wise copy [K, N] from the caller, as it
// is (`quantize a=bf16 out=mxfp8 transpose=true` of the bf16 W: blocks of 32 along N; `quantize a=bf16
// out=e4m3:m transpose=true`: one scale per row of the copy, b=e4m3:n), and an MXFP8 wgrad the column-wise
// copies of dY and X (blocks of 32 along M). Those passes, and an FP8 wgrad with a tensor or per-row scale
// on each copy (dYᵀ a=...:tensor|m, Xᵀ b=...:tensor|n), are the forward GEMM of the copies
// (backward_runs_forward_gemm).
//
// "K-major": the stored rows run along m (or n) and each row is contiguous in k; "MN-major": the stored
// rows run along k and each row is contiguous in m (or n). Nothing is transposed in memory: the kernels
// read MN-major operands as they are (sm90: TMA boxes along the contiguous dimension and wgmma's
// transpose bits, templates/kernels/sm90/config.cuh; the reference kernel: strides).
//
// Sizes stay the forward's (M, N, K) in every pass (a plan of a backward spec is made for the forward's
// N and K); the view says which of them the kernel's m, n, k are. M, the rows the caller brings at run
// time, is the kernel's m in fprop and dgrad and its reduction k in wgrad.
//
//   GemmView v = gemm_view(spec, {4096, 7168, 2048});   // dgrad: v.m = 4096, v.n = 2048, v.k = 7168
#pragma once

#include <cstdint>

#include "kiln/spec.hpp"

namespace kiln {

struct GemmView {
  int64_t m = 0, n = 0, k = 0;
  bool a_mn_major = false;  // A stored [k, m]
  bool b_mn_major = false;  // B stored [k, n]
  bool m_is_reduction = false;  // wgrad: the caller's M is k; m (= N) is fixed by the plan
};

// Whether a wgrad spec reads its operands as the column-wise (along M) copies: mode quantized (a
// quantized dY; validation makes b quantized too).
bool wgrad_reads_columnwise(const KernelSpec& spec);

// Whether a dgrad spec takes W's column-wise copy Wᵀ [K, N] from the caller: mode quantized with MXFP8
// on both sides (W's 1x32 blocks along K cannot be transposed into blocks along N), or FP8 with b=...:n
// (the copy's scales [K], one per row of Wᵀ: a per-channel scale of W runs along the reduction).
bool dgrad_reads_w_copy(const KernelSpec& spec);

// Whether a dgrad spec reads W through the transposed copy the runtime writes: mode quantized with an
// FP8 dY (validation makes W quantized too), W scaled per tensor or in 128 x 128 blocks.
bool dgrad_reads_transposed_w(const KernelSpec& spec);

// Whether a backward spec is the forward GEMM of its operands as given, in the view's (m, n, k): a dgrad
// on W's column-wise copy (dgrad_reads_w_copy), an MXFP8 wgrad on the column-wise copies of dY and X, or
// an FP8 wgrad on dYᵀ [N, M] and Xᵀ [K, M] with a tensor or per-row scale on each (a per-tensor scale
// transposes exactly: those copies are the transposed codes of the forward's X and of dgrad's dY; a
// per-row scale of a copy is one per column of dY or X, from `quantize ... e4m3:m transpose=true`). The
// spec's scales are the forward kernel's (a: tensor | m, b: tensor | n). Its reference and random inputs
// are the forward's.
bool backward_runs_forward_gemm(const KernelSpec& spec);

// The view of a pass with operands as the forward holds them (modes high_precision and dequantized).
GemmView gemm_view(Pass pass, const ProblemSizes& sizes);
// The view of a spec: gemm_view(spec.pass), except a quantized wgrad's and a quantized dgrad's (above).
GemmView gemm_view(const KernelSpec& spec, const ProblemSizes& sizes);

// The kernel's (m, n, k) as ProblemSizes (what the tile heuristics and size rules reason about).
inline ProblemSizes gemm_sizes(const KernelSpec& spec, const ProblemSizes& sizes) {
  const GemmView v = gemm_view(spec, sizes);
  return ProblemSizes{v.m, v.n, v.k};
}

// Rows x columns of one matrix of each tensor (grouped weights and outputs add a leading [E]):
//   fprop  a [M, K]  b [N, K]  out [M, N]
//   dgrad  a [M, N]  b [N, K]  out [M, K]
//   wgrad  a [M, N]  b [M, K]  out [N, K]    (mode quantized: a [N, M], b [K, M])
//   (dgrad_reads_w_copy: b [K, N])
struct TensorShape {
  int64_t rows = 0, cols = 0;
};
struct PassShapes {
  TensorShape a, b, out;
};
PassShapes pass_shapes(Pass pass, const ProblemSizes& sizes);
PassShapes pass_shapes(const KernelSpec& spec, const ProblemSizes& sizes);

}  // namespace kiln
