// templates/kernels/sm90/epilogue_direct.cuh — the direct epilogue of sm90::Gemm: scaled (and
// functor-mapped) accumulators stored from registers to global memory.
//
// acc * (sa * sb), rounded to the output format and stored two columns at a time where ldc and the base
// allow (else one); rows >= M and columns >= N are never written. With accumulate=true the stored value
// is the output's own value plus acc, added in f32 and rounded once. With a generated epilogue functor
// (epilogue/config.cuh; docs/epilogue.md) each stored value is Fn::apply(ctx, acc * factors, 0, 0, m, n,
// e) — the portable family's contract (kernels/sm80_epilogue.cuh) — and with gate_up=interleaved a
// thread's column pair (2t, 2t + 1 of every n8 group: wgmma's accumulator layout keeps it in one thread,
// ptx/wgmma.cuh) is one (gate, up) pair, stored as ONE element Y[m, col / 2] = Fn::apply(ctx, 0, gate, up,
// m, col / 2, e). TMA zero-fills the rows past M/N and the K tail, so those parts of the accumulators are
// zeros, never garbage. The store loop is written out at the end of consume (sm90/consumer.cuh), which
// loads the per-row factors when the tile starts; this header holds what it calls per column pair (the
// TMA-store epilogue calls them too). TMA-store configs run the direct epilogue where the output cannot be
// mapped or a grouped slab crosses its expert's last row (sm90/epilogue_tma_store.cuh).
#pragma once

#include "common/gemm_params.cuh"
#include "common/types.cuh"
#include "epilogue/context.cuh"
#include "epilogue/store.cuh"
#include "kernels/sm90/config.cuh"
#include "ptx/ld.cuh"

namespace kiln_dev {
namespace sm90 {

// Two adjacent outputs (row, col), (row, col + 1); col + 1 may be >= n.
template <class Config>
__device__ __forceinline__ void Gemm<Config>::store_pair(const GemmParams& p, bool paired_ok, int row, int col,
                                                         float v0, float v1) {
  if constexpr (kAccumulate) {
    accumulate_out_pair<kOut>(p.out, p.ldc, p.n, paired_ok, row, col, v0, v1);
  } else {
    store_out_pair<kOut>(p.out, p.ldc, p.n, paired_ok, row, col, v0, v1);
  }
}

// The epilogue's per-column factors of columns col, col + 1 (< N): b's tensor scale, or its
// per-channel scales (col + 1 clamped to N - 1; its product is then never stored).
template <class Config>
__device__ __forceinline__ void Gemm<Config>::col_factors(const GemmParams& p, const float* sb_row, float b_tile,
                                                          int col, float& f0, float& f1) {
  f0 = b_tile;
  f1 = b_tile;
  if constexpr (kRowB) {
    f0 = ldg_f32(sb_row + col);
    f1 = ldg_f32(sb_row + (col + 1 < p.n ? col + 1 : col));
  }
}

// The epilogue functor (no gate|up) on the scaled pair (row, col), (row, col + 1) inside M x N: the
// values as stored (column col + 1 >= N gives 0, never stored).
template <class Config>
__device__ __forceinline__ void Gemm<Config>::apply_fn_pair(const GemmParams& p, const Tile& tile, int row, int col,
                                                            float& v0, float& v1) {
  const EpilogueLoads ctx{p};
  v0 = Fn::apply(ctx, v0, 0.0f, 0.0f, row, col, tile.e);
  v1 = col + 1 < p.n ? Fn::apply(ctx, v1, 0.0f, 0.0f, row, col + 1, tile.e) : 0.0f;
}

}  // namespace sm90
}  // namespace kiln_dev
