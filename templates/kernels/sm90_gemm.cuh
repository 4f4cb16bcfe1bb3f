// templates/kernels/sm90_gemm.cuh — the Hopper GEMM (dense and grouped): TMA ring + warp-specialized
// wgmma, persistent. The entry header that generated code includes; the kernel lives in kernels/sm90/.
//
//   Y[M, N] = (X[M, K] . W[N, K]^T) * sa * sb        (fprop; X = operand a, W = operand b)
//
// X and W are row-major with K contiguous, both bf16, both f16, or both FP8 (e4m3/e5m2 in any mix), or
// both MXFP8. Y is bf16/f16/f32, row-major with row stride ldc. sm_90a only (wgmma, setmaxnreg); the sm80
// family is the portable fallback. Scales of FP8 operands (layouts: common/gemm_params.cuh; semantics:
// kernels/sm90/promotion.cuh, docs/numerics.md §2):
//   a: tensor (f32), m (f32 [M]) or block1x128 (f32 or E8M0 [M, ceil(K/128)], row stride lds_a);
//   b: tensor (f32), n (f32 [N]) or block128x128 (f32 or E8M0 [ceil(N/128), ceil(K/128)], lds_b).
// MXFP8 takes E8M0 scales [rows, K/32] on both operands (docs/numerics.md §3).
//
// The parts (docs/architecture.md "Kernel families"; PTX ISA 9.0 sections are cited where used), one
// concern per header, all members of the one struct sm90::Gemm<Config>:
//   sm90/config.cuh             what a config selects: constants, static_asserts, the shared-memory
//                               layout, the register split, the declarations of every member
//   sm90/scheduler.cuh          the persistent walk over (cluster) tiles; grouped GEMMs' expert table
//   sm90/producer.cuh           the ring and its mbarriers, the TMA producer (cluster multicast), and
//                               the block scales it stages in shared memory
//   sm90/promotion.cuh          scale semantics, block scales per K tile, promotion of partial sums
//   sm90/mainloop.cuh           wgmma issue: fast and promoted accumulation, two-atom stages, half
//                               partials, the release of stages
//   sm90/consumer.cuh           a consumer warpgroup's tiles: factors, mainloop, split-K, epilogue
//   sm90/mx.cuh                 MXFP8 promoted per 32 K: scales decoded by the producer warp
//   sm90/mx_dequant.cuh         MXFP8 with block_k 64: the dequantizing producer, register-A mainloop
//   sm90/pingpong.cuh           ping-pong consumers taking whole tiles in turn
//   sm90/split_k.cuh            split-K units and the in-order reduction of their partials
//   sm90/epilogue_direct.cuh    the epilogue from registers (scales, functor, gate|up)
//   sm90/epilogue_tma_store.cuh the epilogue through shared memory and TMA stores
//   sm90/kernel.cuh             setup, warp specialization, programmatic dependent launch
//
// Preconditions the planner and runtime check (compiler/plan/sm90_plan.cpp, runtime/operands.cpp):
// a and b 16-byte aligned, lda * elem_bytes and ldb * elem_bytes multiples of 16 (TMA global strides),
// K * elem_bytes a multiple of 16, M, N, K < 2^31; with block scales a promoted config and K % 128 == 0
// (the spec's rule: compiler/spec/sizes.cpp; the kernel itself reads ceil(K / 128) scale columns). Any
// M >= 1, N >= 1, K >= 0 is computed (K = 0 writes zeros).
//
// Instantiated by generated code (compiler/emit/sm90_emit.cpp) as:
//   struct KilnConfig { static constexpr int kBlockM = 128; ...; static constexpr bool kPromote = ...;
//                       static constexpr kiln_dev::Scale kScaleA = ...; kScaleTypeA, kScaleB, kScaleTypeB };
//   extern "C" __global__ void [__cluster_dims__(2, 1, 1)] __launch_bounds__(kThreads, 1)
//   kiln_sm90_gemm(const __grid_constant__ kiln_dev::TmaDesc tma_a,
//                  const __grid_constant__ kiln_dev::TmaDesc tma_b, kiln_dev::GemmParams p, void* workspace) {
//     kiln_dev::sm90_gemm<KilnConfig>(tma_a, tma_b, p, workspace);
//   }
// (TMA-store configs take the output's map and out_tma too, and call sm90_gemm_tma_store), launched with
// grid min(tiles, SMs) (with clusters: kClusterM x min(cluster tiles, the clusters the device holds at
// once)), block kThreads = 128 * (producer warpgroups + consumers) and Gemm<Config>::kSmemBytes of dynamic
// shared memory (the host mirror is sm90_smem_bytes in compiler/plan/sm90_layout.cpp).
#pragma once

#include "common/gemm_params.cuh"
#include "common/sm90_tma_desc.cuh"
#include "epilogue/functions.cuh"  // what generated epilogue functors call
#include "kernels/sm90/config.cuh"
#include "kernels/sm90/consumer.cuh"
#include "kernels/sm90/epilogue_direct.cuh"
#include "kernels/sm90/epilogue_tma_store.cuh"
#include "kernels/sm90/kernel.cuh"
#include "kernels/sm90/mainloop.cuh"
#include "kernels/sm90/mx.cuh"
#include "kernels/sm90/mx_dequant.cuh"
#include "kernels/sm90/pingpong.cuh"
#include "kernels/sm90/producer.cuh"
#include "kernels/sm90/promotion.cuh"
#include "kernels/sm90/scheduler.cuh"
#include "kernels/sm90/split_k.cuh"

namespace kiln_dev {

template <class Config>
__device__ __forceinline__ void sm90_gemm(const TmaDesc& tma_a, const TmaDesc& tma_b, const GemmParams& p,
                                          void* workspace) {
  sm90::Gemm<Config>::run(tma_a, tma_b, p, workspace);
}

// The TMA-store configs' entry (sm90/epilogue_tma_store.cuh): the output's tensor map, and whether the
// runtime could encode it (1) or the direct epilogue must run (0: an output TMA cannot address).
template <class Config>
__device__ __forceinline__ void sm90_gemm_tma_store(const TmaDesc& tma_a, const TmaDesc& tma_b, const GemmParams& p,
                                                    void* workspace, const TmaDesc& tma_out, int out_tma) {
  sm90::Gemm<Config>::run(tma_a, tma_b, p, workspace, &tma_out, out_tma != 0);
}

}  // namespace kiln_dev
