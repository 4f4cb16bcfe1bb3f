// templates/kernels/decode_store.cuh — the decode kernels' last phase (kernels/sm80_decode.cuh,
// sm80_decode_w4.cuh, sm80_decode_dgrad.cuh, sm90_decode.cuh): after the CTA's barrier, every thread sums one
// output over the kParts warps or warpgroups that split the reduction (red: f32 partials, [kParts][kBlockN]
// [kBlockM] channel x token, or with kTokenRow > 0 [kParts][kBlockM][kTokenRow] token x channel), scales it as
// the sm80 epilogue does (acc * (row_factor * col_factor): tensor scales and NVFP4's global, per-token
// a_scale[m], per-channel b_scale[n]), applies the epilogue functor, adds the output's value for
// accumulate=true, and stores it; consecutive threads take consecutive channels (one row of Y).
#pragma once

#include "common/gemm_params.cuh"
#include "common/operand_major.cuh"
#include "epilogue/store.cuh"
#include "kernels/sm80_epilogue.cuh"
#include "ptx/ld.cuh"
#include "scheduler/group_tile.cuh"

namespace kiln_dev {

// One warp's m16n8 accumulators into its part of red ([kParts][kBlockN][kBlockM], channel x token), before
// the CTA's barrier and decode_store: acc[group][fragment][c] holds channel 16 group + g (+ 8 for c >= 2)
// and token 8 fragment + 2t + (c & 1) (g = lane / 4, t = lane % 4; kernels/sm80_decode.cuh, sm80_decode_w4.cuh).
template <int kBlockN, int kBlockM, int kGroups, int kTok>
__device__ __forceinline__ void decode_stage_partials(float* red, const float (&acc)[kGroups][kTok][4], int warp,
                                                      int g, int t) {
#pragma unroll
  for (int rg = 0; rg < kGroups; ++rg)
#pragma unroll
    for (int fr = 0; fr < kTok; ++fr)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int ch = 16 * rg + g + 8 * (c >> 1), tok = 8 * fr + 2 * t + (c & 1);
        red[(warp * kBlockN + ch) * kBlockM + tok] = acc[rg][fr][c];
      }
}

template <class Config, int kParts, int kBlockN, int kBlockM, int kThreads, int kTokenRow = 0>
__device__ __forceinline__ void decode_store(const GemmParams& p, const float* red, const TileWork& work, int rows) {
  using Epi = sm80::Epilogue<Config>;
  using Fn = typename Epi::Fn;
  const float a_t = Epi::a_tensor(p);
  const float b_t = Epi::b_tensor(p, work.expert);
  for (int i = threadIdx.x; i < rows * kBlockN; i += kThreads) {
    const int ch = i % kBlockN, tok = i / kBlockN;
    const int n = work.n0 + ch;
    if (n >= p.n) continue;
    float v = 0.0f;
#pragma unroll
    for (int wi = 0; wi < kParts; ++wi)
      v += red[kTokenRow > 0 ? (wi * kBlockM + tok) * kTokenRow + ch : (wi * kBlockN + ch) * kBlockM + tok];
    const long long m = work.row_base + work.m0 + tok;  // Y's row (offsets: global; masked: expert * max_m + row)
    float row_f = a_t, col_f = b_t;
    if constexpr (Config::kScaleA == Scale::kRow) row_f = ldg_f32(p.a_scale + m);
    if constexpr (Config::kScaleB == Scale::kRow)
      col_f = ldg_f32(p.b_scale + (long long)work.expert * p.b_scale_expert_stride + n) * b_t;
    v *= row_f * col_f;
    if constexpr (Epi::kHasFn) v = Fn::apply(EpilogueLoads{p}, v, 0.0f, 0.0f, int(m), n, work.expert);
    if constexpr (ConfigAccumulate<Config>::kValue) v += load_out_one<Config::kOut>(p.out, p.ldc, m, n);
    store_out_one<Config::kOut>(p.out, p.ldc, m, n, v);
  }
}

}  // namespace kiln_dev
