// compiler/plan/gemm_view.hpp — the GEMM a kernel computes for each pass of a spec.
//
// Every pass is one GEMM  C[m, n] = sum_k A(m, k) * B(n, k). With the forward's names (Y[M, N] =
// X[M, K] · W[N, K]ᵀ; docs/backward.md) and the tensors as the caller holds them, row-major:
//
//   pass    C (out)     A (operand a)            B (operand b)            m   n   k
//   fprop   Y  [M, N]   X  [M, K]   K-major      W [N, K]   K-major       M   N   K
//   dgrad   dX [M, K]   dY [M, N]   K-major      W [N, K]   MN-major      M   K   N
//   wgrad   dW [N, K]   dY [M, N]   MN-major     X [M, K]   MN-major      N   K   M
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

GemmView gemm_view(Pass pass, const ProblemSizes& sizes);
inline GemmView gemm_view(const KernelSpec& spec, const ProblemSizes& sizes) { return gemm_view(spec.pass, sizes); }

// The kernel's (m, n, k) as ProblemSizes (what the tile heuristics and size rules reason about).
inline ProblemSizes gemm_sizes(const KernelSpec& spec, const ProblemSizes& sizes) {
  const GemmView v = gemm_view(spec, sizes);
  return ProblemSizes{v.m, v.n, v.k};
}

// Rows x columns of one matrix of each tensor (grouped weights and outputs add a leading [E]):
//   fprop  a [M, K]  b [N, K]  out [M, N]
//   dgrad  a [M, N]  b [N, K]  out [M, K]
//   wgrad  a [M, N]  b [M, K]  out [N, K]
struct TensorShape {
  int64_t rows = 0, cols = 0;
};
struct PassShapes {
  TensorShape a, b, out;
};
PassShapes pass_shapes(Pass pass, const ProblemSizes& sizes);

}  // namespace kiln
