// templates/kernels/sm90/consumer.cuh — the consumer warpgroups of sm90::Gemm: per tile, the scale
// factors, the mainloop, the split-K reduction and the epilogue.
//
// A consumer warpgroup walks the CTA's units (sm90/scheduler.cuh; with ping-pong every other one,
// sm90/pingpong.cuh). Per unit it loads the per-row factors (and, with TMA stores and per-column scales,
// the column scales) before its mainloop so that their latency runs under it, runs the mainloop its
// config selects (sm90/mx.cuh, sm90/mainloop.cuh mainloop_two_atoms, sm90/mx_dequant.cuh, or the
// one-atom / unpromoted mainloop below, whose stage and promotion scheme sm90/mainloop.cuh describes),
// reduces split-K partials (sm90/split_k.cuh), and stores the tile through TMA
// (sm90/epilogue_tma_store.cuh) or directly from registers (below; sm90/epilogue_direct.cuh). The
// one-atom mainloop and the direct epilogue are written out here rather than called: moved into
// functions of their own, they compile to different register allocations for some configs.
#pragma once

#include "common/gemm_params.cuh"
#include "common/sm90_tma_desc.cuh"
#include "common/types.cuh"
#include "epilogue/context.cuh"
#include "epilogue/store.cuh"
#include "kernels/sm90/config.cuh"
#include "ptx/ld.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/sync.cuh"
#include "ptx/wgmma.cuh"

namespace kiln_dev {
namespace sm90 {

// One consumer warpgroup's walk: per unit, the per-row factors and (TMA stores) column scales, the
// mainloop, the split-K reduction, and the epilogue (TMA stores or direct).
template <class Config>
__device__ __forceinline__ void Gemm<Config>::consume(const GemmParams& p, const Smem& sm, const Walk& w,
                                                      int k_tiles, int consumer, void* ws, const TmaDesc* tma_out,
                                                      bool out_tma) {
  // Per-tensor scales first: their latency hides behind the first K tile.
  float a_t = 1.0f, b_t = 1.0f;
  if constexpr (kScaleA == Scale::kTensor) {
    if (p.a_scale != nullptr) a_t = ldg_f32(p.a_scale);
  }
  if constexpr (kScaleB == Scale::kTensor) {
    if (p.b_scale != nullptr) b_t = ldg_f32(p.b_scale);
  }
  const int wg_m = consumer % kWgsM;                  // (kWgsM is 1 with ping-pong)
  const int wg_n = kPingPong ? 0 : consumer / kWgsM;  // ping-pong: both own the whole tile
  const int tid = threadIdx.x & 127;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const u32 a_off = u32(wg_m * kWgTileM * kRowBytes);
  const u32 b_off = u32(wg_n * kWgTileN * kRowBytes);
  const bool paired_ok =
      (p.ldc % 2 == 0) && ((reinterpret_cast<u64>(p.out) & u64(2 * format_bytes(kOut) - 1)) == 0);

  float acc[kMmaM][kAccRegs];
  // The promoted path's per-K-tile partial sums; a 1-element dummy otherwise (never touched).
  float part[kPromote ? kMmaM : 1][kPromote ? kPartRegs : 1];
#pragma unroll
  for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
    for (int i = 0; i < kAccRegs; ++i) acc[mi][i] = 0.0f;
  }

  // The walk's next tile and its scale rows; block scales of the next K block to be promoted
  // (loaded one K tile ahead, across tiles as well).
  Tile tile_next{};
  ScaleRows rows_next{};
  BlockScales bs_next{};
  // Ping-pong: consumer c takes the CTA's units c, c + 2, ... of the walk (u0, du).
  const int u0 = w.first + (kPingPong ? consumer * w.step : 0);
  const int du = kPingPong ? 2 * w.step : w.step;
  KRange kr_next = k_range(u0, k_tiles);
  if (u0 < w.count) {
    tile_next = tile_of(w, unit_tile(u0), p, sm);
    kr_next = tile_k_range(u0, tile_next, k_tiles);
    rows_next = scale_rows(p, tile_next, wg_m, wg_n, warp, lane);
    if constexpr (kBlockScaled && !kStagedScales) {
      if (kr_next.end > kr_next.begin) load_block_scales(p, rows_next, kr_next.begin, bs_next);
    }
  }

  int stage = 0;
  u32 phase = 0;
  int s8 = 0;  // register A: the staging ring, which the consumers read too
  u32 ph8 = 0;
  // Ping-pong: the producer fills the ring with every unit's stages in walk order; a consumer passes
  // over the other's (stages_per_unit each: dense, no split-K).
  const int stages_per_unit = (k_tiles + kAtoms - 1) / kAtoms;
  if (kPingPong && consumer == 1) skip_stages(stages_per_unit, stage, phase);
  for (int u = u0; u < w.count; u += du) {
    const Tile tile = tile_next;
    const ScaleRows rows = rows_next;
    const KRange kr = kr_next;
    const bool more = u + du < w.count;
    if (more) {
      tile_next = tile_of(w, unit_tile(u + du), p, sm);
      rows_next = scale_rows(p, tile_next, wg_m, wg_n, warp, lane);
      kr_next = tile_k_range(u + du, tile_next, k_tiles);
    }
    // Grouped: b's tensor scale is the expert's (b_scale_expert_stride 1), read per tile.
    float b_tile = b_t;
    if constexpr (kGrouped && kScaleB == Scale::kTensor) {
      if (p.b_scale != nullptr) b_tile = ldg_f32(p.b_scale + i64(tile.e) * p.b_scale_expert_stride);
    }
    // kColStage: this thread's share of the warpgroup's column scales (stored at the epilogue).
    float col_ld[kColRegs];
#pragma unroll
    for (int r = 0; r < kColRegs; ++r) {
      col_ld[r] = 0.0f;
      if constexpr (kColStage) {
        const int i = tid + 128 * r;
        const int col = tile.n * kBlockN + wg_n * kWgTileN + i;
        // (Where the output could not be mapped, or the slab crosses its expert's last row, the direct
        // epilogue runs and loads its own.)
        if (out_tma && tma_slab(tile, wg_m) && i < kWgTileN && col < p.n)
          col_ld[r] = ldg_f32(b_scale_of<ScaleType::kF32>(p, tile.e) + col);
      }
    }
    // Per-row factors of a (per-token scales, or the tensor scale).
    float row_f[kMmaM][2];
#pragma unroll
    for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if constexpr (kRowA) {
          row_f[mi][h] = ldg_f32(p.a_scale + rows.a[mi][h]);
        } else {
          row_f[mi][h] = a_t;
        }
      }
    }
    if constexpr (kPromote) {
#pragma unroll
      for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
        for (int i = 0; i < kAccRegs; ++i) acc[mi][i] = 0.0f;
      }
    } else if (kr.end == kr.begin) {
#pragma unroll
      for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
        for (int i = 0; i < kAccRegs; ++i) acc[mi][i] = 0.0f;
      }
    }

    int prev_stage = 0;
    if constexpr (kMxPromoted) {
      mainloop_mx(sm, acc, part, kr, stage, phase, a_off, b_off, wg_m, wg_n, warp, lane);
    } else if constexpr (kAtoms == 2 && kPromote) {
      mainloop_two_atoms(sm, acc, part, kr, stage, phase, a_off, b_off, wg_m, wg_n, warp, lane);
    } else if constexpr (kDqRegA) {
      mainloop_dq_rega(sm, acc, kr, stage, phase, s8, ph8, b_off, wg_m, warp, lane);
    } else {
      // One atom per stage, or (unpromoted: bf16 / f16 / fast-accumulating FP8) two atoms whose wgmmas
      // go into the accumulators as one batch: 256 bytes of every W row per stage (decode bandwidth).
      // An empty split (more splits than stages of K) runs no K tile: fetch the next unit's first block
      // scales here, which its last K tile would have done.
      if constexpr (kBlockScaled && !kStagedScales) {
        if (kr.begin == kr.end && more && kr_next.end > kr_next.begin)
          load_block_scales(p, rows_next, kr_next.begin, bs_next);
      }
      // Ping-pong: the previous unit's consumer has waited on every stage of it, so each full[s] this
      // mainloop waits on is at most one phase ahead of its last completed one (the parity wait can
      // tell them apart). Consumer 0's first unit has no predecessor.
      if constexpr (kPingPong) {
        if (u != w.first) named_barrier_sync(kOrderBarrier + consumer, 256);
      }
      for (int kt = kr.begin; kt < kr.end; kt += kAtoms) {
        // This K block's scales arrived during the previous K tile; fetch the next block's now (the
        // next unit's first after the last one), before waiting for the stage.
        BlockScales bs{};
        if constexpr (kBlockScaled && !kStagedScales) {
          bs = bs_next;
          if (kt + 1 < kr.end) {
            load_block_scales(p, rows, kt + 1, bs_next);
          } else if (more && kr_next.end > kr_next.begin) {
            load_block_scales(p, rows_next, kr_next.begin, bs_next);
          }
        }
        mbar_wait(sm.full + 8 * stage, phase);
        // Grouped wgrad: an expert's last atom of rows, when partial, has the rows past its end zeroed.
        if constexpr (kGroupedK && !kGroupedKPadded) {
          if (kt + 1 == kr.end && tile.k_rows < kr.end * kAtomK)
            zero_k_tail(sm, stage, tile.k_rows - kt * kAtomK, int(threadIdx.x) - 128 * kProducerWgs);
        }
        if constexpr (kStagedScales && !kColBlockB)
          bs = staged_block_scales(sm.scales + stage * kScaleSlotBytes, 0, kt, wg_m, wg_n, warp, lane);
        const u32 a_base = sm.a + stage * kTileBytesA + a_off;
        const u32 b_base = sm.b + stage * kTileBytesB + b_off;
        if constexpr (kHalfPart) {
          // Half partials: one partial, two halves: each half's batch drains before its promotion (the
          // other warpgroup's wgmmas run meanwhile).
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            fence_all(part);
            wgmma_fence();
            mma_tile(part, a_base, b_base + u32(h * 128 * kRowBytes), /*first=*/true);
            wgmma_commit();
            wgmma_wait<0>();
            fence_all(part);
            if (h == 1) release(sm, stage, lane);
            promote(acc, part, bs, false, kPartRegs * h);
          }
        } else if constexpr (kPromote) {
          fence_all(part);
          wgmma_fence();
          mma_tile(part, a_base, b_base, /*first=*/true);
          wgmma_commit();
          wgmma_wait<0>();
          fence_all(part);
          if constexpr (kColBlockB) {
            // The scales are read from the stage's slot: promote, then release.
            promote_col_blocks(acc, part, sm.scales + stage * kScaleSlotBytes, kt, wg_m, wg_n, warp, lane);
            release(sm, stage, lane);
          } else {
            release(sm, stage, lane);
            promote(acc, part, bs, rows.mid1);
          }
        } else {
          fence_all(acc);
          wgmma_fence();
          mma_tile(acc, a_base, b_base, /*first=*/kt == kr.begin);
          if constexpr (kAtoms == 2) {
            if (kt + 1 < kr.end) mma_tile(acc, a_base + kAtomBytesA, b_base + kAtomBytesB, /*first=*/false);
          }
          wgmma_commit();
          // The batch just issued stays in flight; the one before it (stage prev_stage) is done.
          wgmma_wait<1>();
          if (kt > kr.begin) release(sm, prev_stage, lane);
        }
        prev_stage = stage;
        if (++stage == kStages) {
          stage = 0;
          phase ^= 1;
        }
      }
      // Ping-pong: hand the wgmmas to the other consumer (its next unit follows this one in the walk),
      // and pass over that unit's stages.
      if constexpr (kPingPong) {
        if (u + w.step < w.count) named_barrier_arrive(kOrderBarrier + (1 - consumer), 256);
        skip_stages(stages_per_unit, stage, phase);
      }
      if constexpr (!kPromote) {
        wgmma_wait<0>();
        fence_all(acc);
        if (kr.end > kr.begin) release(sm, prev_stage, lane);
      }
    }

    // Split-K: all but the last split of this tile leave their partial sums and move on.
    if constexpr (kSplit) {
      if (!split_reduce(acc, ws, unit_tile(u), u % kSplitK, consumer, tid, sm)) continue;
    }

    // Through shared memory and TMA stores where the runtime could map the output.
    if constexpr (kTmaStore) {
      if (out_tma && tma_slab(tile, wg_m)) {
        store_tile_tma(p, sm, tma_out, tile, acc, row_f, b_tile, col_ld, wg_m, wg_n, consumer, tid);
        continue;
      }
    }
    // The direct epilogue (sm90/epilogue_direct.cuh): acc * (row_factor * col_factor). Accumulator
    // register i of slab mi: row 16 * warp + g + 8 * ((i / 2) % 2), column 8 * (i / 4) + 2 * t + (i % 2) of
    // the warpgroup tile (ptx/wgmma.cuh). Column pairs outermost, so per-column scales are loaded once per
    // pair. Per-column scales (kRowB) load kColChunk pairs at a time, ahead of that chunk's stores: loaded
    // just before each pair's stores, every load waited behind the previous pair's stores (the program
    // order of global loads and stores the compiler keeps), one global latency per column pair (FP8 row 64
    // x 7168 x 2048: 9.6 us against FP8 tensor's 7.1 on the same tile; H200, docs/performance.md). 8 pairs
    // (16 registers) where a thread holds up to 128 accumulators, 2 above (ping-pong 128 x 192's 192
    // spilled with 4).
    const int row0 = tile.row0 + wg_m * kWgTileM + warp * 16 + (lane >> 2);
    const int col0 = tile.n * kBlockN + wg_n * kWgTileN + 2 * (lane & 3);
    const float* sb_row = kRowB ? b_scale_of<ScaleType::kF32>(p, tile.e) : nullptr;
    constexpr int kPairs = kAccRegs / 4, kColChunk = !kRowB ? 1 : kMmaM * kAccRegs > 128 ? 2 : 8;
#pragma unroll
    for (int j0 = 0; j0 < kPairs; j0 += kColChunk) {
      float chunk_f0[kColChunk], chunk_f1[kColChunk];
#pragma unroll
      for (int jj = 0; jj < kColChunk; ++jj) {
        chunk_f0[jj] = chunk_f1[jj] = b_tile;
        if (j0 + jj < kPairs && col0 + 8 * (j0 + jj) < p.n)
          col_factors(p, sb_row, b_tile, col0 + 8 * (j0 + jj), chunk_f0[jj], chunk_f1[jj]);
      }
#pragma unroll
      for (int jj = 0; jj < kColChunk; ++jj) {
        const int j = j0 + jj;
        const int col = col0 + 8 * j;
        if (j < kPairs && col < p.n) {
          const float col_f0 = chunk_f0[jj], col_f1 = chunk_f1[jj];
#pragma unroll
          for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
            for (int half = 0; half < 2; ++half) {
              const int row = row0 + mi * 64 + half * 8;
              if (row < tile.row_end) {
                float v0 = acc[mi][4 * j + 2 * half] * (row_f[mi][half] * col_f0);
                float v1 = acc[mi][4 * j + 2 * half + 1] * (row_f[mi][half] * col_f1);
                if constexpr (kGlu) {
                  // col is even and N is even, so col + 1 < N: this thread holds the (gate, up) pair.
                  const int jo = col >> 1;
                  store_out_one<kOut>(p.out, p.ldc, row, jo, Fn::apply(EpilogueLoads{p}, 0.0f, v0, v1, row, jo, tile.e));
                } else {
                  if constexpr (kHasFn) apply_fn_pair(p, tile, row, col, v0, v1);
                  store_pair(p, paired_ok, row, col, v0, v1);
                }
              }
            }
          }
        }
      }  // column pairs of the chunk
    }  // chunks
  }
}

}  // namespace sm90
}  // namespace kiln_dev
