// compiler/plan/sm80_backward.hpp — what the portable family's backward kernel
// (templates/kernels/sm80_backward.cuh) takes, its config rules, shared memory and default config.
//
// It computes every backward spec the sm90 family does not, on sm_80 and later:
//   high_precision  a = b = bf16 or f16 (dY and W / X as saved)
//   dequantized     a = bf16 dY; b = mxfp4, nvfp4, mxfp8, or e4m3 / e5m2 with a tensor, per-row (n for W,
//                   m for X), 1x128 or 128x128 scale (f32 or ue8m0 blocks): W (dgrad) or X (wgrad) in
//                   their stored format, dequantized to bf16 in shared memory
// dgrad and wgrad, dense or grouped (offsets, masked; grouped wgrad reduces over each expert's rows).
// Outputs bf16, f16 or f32. Configs: block_k 32, 64 or 128; block_n 32 or a multiple of 64; wgrad block_m 32 or a
// multiple of 64; no cluster, split-K, TMA store or ping-pong fields.
//
// decode = 1 names its small-M dgrad kernel for 4-bit weights (templates/kernels/sm80_decode_dgrad.cuh):
// bf16 dY, W in MXFP4 or NVFP4, block_m 8, 16 or 32 tokens, block_n 128 channels, block_k 16, 32 or 64 rows
// of W per warp step, stages 1 or 2 (steps in flight), warps_n 1..8 warps splitting the reduction.
//
//   if (sm80_backward_supports(spec).ok()) ...                 // backward_family's portable choice
//   KILN_RETURN_IF_ERROR(sm80_backward_check_config(spec, arch, cfg));
#pragma once

#include "compiler/plan/plan.hpp"

namespace kiln {

// Ok, or UNSUPPORTED naming what the portable backward kernel does not take.
Status sm80_backward_supports(const KernelSpec& spec);
Status sm80_backward_check_config(const KernelSpec& spec, const Arch& arch, const TileConfig& cfg);
// The spec is one the decode dgrad kernel computes (pass=dgrad, bf16 dY, MXFP4 or NVFP4 W).
bool sm80_decode_dgrad_supports(const KernelSpec& spec);
int sm80_backward_smem_bytes(const KernelSpec& spec, const TileConfig& cfg);
// sizes: the forward's (M, N, K).
TileConfig sm80_backward_default_config(const KernelSpec& spec, const Arch& arch, const ProblemSizes& sizes);

}  // namespace kiln
