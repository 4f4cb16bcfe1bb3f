// templates/epilogue/functions.cuh — the functions of kiln's epilogue language, on the device.
//
// Generated epilogue functors (compiler/epilogue/emit.cpp) call these as kiln_dev::ep_<name>; the
// host reference (compiler/epilogue/eval.cpp) implements the same formulas in the same operation
// order. Only built-in device math is used (expf, logf, tanhf, erff, sqrtf, rsqrtf, fabsf: NVRTC
// declares them without any header), so this file compiles under NVRTC alone.
//
// Semantics (docs/epilogue.md):
//   min, max, clamp  NaN in -> NaN out (like torch.minimum / torch.clamp, unlike fminf, which drops
//                    a NaN); min(-0, +0) and max(-0, +0) return the second operand.
//   sigmoid(x)       1 / (1 + exp(-x))                     (torch's formula)
//   silu(x)          x / (1 + exp(-x))                     (torch's formula)
//   gelu(x)          x * 0.5 * (1 + erf(x / sqrt(2)))      (exact GELU, torch approximate='none')
//   gelu_tanh(x)     0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))   (approximate='tanh')
//   relu(x)          max(x, 0) (NaN stays NaN);  relu2(x) = relu(x)^2 (squared ReLU)
//   rsqrt(x)         CUDA rsqrtf (at most 2 ulp, CUDA C++ Programming Guide, math functions)
// Generated code is compiled with NVRTC's defaults (--fmad=true), so a multiply feeding an add may
// become one FMA: results can differ from the host reference by an ulp or so, never more than the
// GEMM's tolerance.
//
// The functor's Ctx (what a kernel family passes as `c`) provides the vector operands by slot:
//   template <int kSlot> __device__ float load(int i) const;         // [m], [n], [e]
//   template <int kSlot> __device__ float load(int r, int col) const; // [e,n], [m,n]
#pragma once

namespace kiln_dev {

__device__ __forceinline__ float ep_min(float a, float b) { return (a < b || a != a) ? a : b; }
__device__ __forceinline__ float ep_max(float a, float b) { return (a > b || a != a) ? a : b; }
__device__ __forceinline__ float ep_clamp(float x, float lo, float hi) { return ep_min(ep_max(x, lo), hi); }

__device__ __forceinline__ float ep_exp(float x) { return expf(x); }
__device__ __forceinline__ float ep_log(float x) { return logf(x); }
__device__ __forceinline__ float ep_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ float ep_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ float ep_rsqrt(float x) { return rsqrtf(x); }
__device__ __forceinline__ float ep_abs(float x) { return fabsf(x); }

__device__ __forceinline__ float ep_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ float ep_silu(float x) { return x / (1.0f + expf(-x)); }

__device__ __forceinline__ float ep_gelu(float x) {
  constexpr float kSqrtHalf = 0.707106781186547524f;  // 1 / sqrt(2)
  return x * 0.5f * (1.0f + erff(x * kSqrtHalf));
}

__device__ __forceinline__ float ep_gelu_tanh(float x) {
  constexpr float kBeta = 0.797884560802865356f;  // sqrt(2 / pi)
  constexpr float kKappa = 0.044715f;
  const float cube = x * x * x;
  return 0.5f * x * (1.0f + tanhf(kBeta * (x + kKappa * cube)));
}

__device__ __forceinline__ float ep_relu(float x) { return ep_max(x, 0.0f); }
__device__ __forceinline__ float ep_relu2(float x) {
  const float r = ep_relu(x);
  return r * r;
}

}  // namespace kiln_dev
