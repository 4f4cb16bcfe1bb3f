// templates/kernels/sm90/producer.cuh — the TMA producer of sm90::Gemm and the block scales it stages.
//
// The ring: kStages stages in shared memory, each an A box [kBlockM rows x 128 bytes] and a B box
// [kBlockN rows x 128 bytes] per atom (one or two atoms per stage), written by TMA in the 128-byte swizzle
// (ptx/tma.cuh) and read by wgmma through swizzled K-major descriptors. A K tile ("atom") is exactly 128
// bytes of K (64 bf16/f16 or 128 FP8 elements): one swizzle atom wide, four 32-byte wgmma k-steps
// (m64nNk16 or m64nNk32). Two mbarriers per stage (ptx/mbarrier.cuh):
//   full[s]:  1 arrival (the producer's arrive.expect_tx of the stage's bytes) + the TMA bytes (+ 32 lane
//             arrivals when warp 0 stages scales: staged block scales below, and MXFP8's, sm90/mx.cuh).
//   empty[s]: one arrival per consumer warp (lane 0, after its wgmma reads of the stage are done;
//             sm90/mainloop.cuh release).
// Producer and consumers walk the same (tile, k-tile) sequence with their own (stage, phase) counters;
// the producer waits empty[s] with the opposite parity, so its first trip round the ring passes without
// waiting (PTX ISA §9.7.13.15.16). One thread of the producer warpgroup issues every TMA copy; the
// warpgroup gives its registers back (setmaxnreg.dec, sm90/kernel.cuh).
//
// Clusters (kClusterM = 2): each CTA loads its own A box and HALF of the B box, multicast into both CTAs'
// shared memory (ptx/tma.cuh): B's L2 -> SM traffic halves (per stage 32 KB instead of 48 KB per CTA at
// 128 x 256). Since a CTA's multicast writes into its peer's ring, a stage may be refilled only when the
// consumers of BOTH CTAs released it: every consumer warp arrives on the empty[s] of each CTA of the
// cluster (mapa + remote arrive), and empty[s] counts 4 * kStageReaders * kClusterM arrivals (the
// consumer warpgroups that read a stage: all of them, or one with ping-pong; ptx/mbarrier.cuh says why
// the arrive has default semantics).
//
// Staged block scales (Config::kStagedScales, set by the host for two-atom stages, three consumer
// warpgroups, and one-atom tiles whose scale slots fit beside the ring; measured 3-11% faster than the
// consumers' own global loads at M = 128 .. 8192 on an H200, docs/performance.md): warp 0 of the producer
// warpgroup (lane 0 also issues the TMA copies) copies each stage's a-scales (per tile row: one 8-byte
// cp.async for both f32 blocks of a two-atom stage where the tensor is 8-byte aligned, else a word per
// block; E8M0: the one aligned word holding the stage's bytes) and b-scales (one word per consumer column
// and 128-column block it touches: two for 192- and 256-column warpgroups) into a slot beside the ring,
// and arrives on full[s] through cp.async.mbarrier.arrive.noinc (stage_scale_copies). The consumers read
// 2 * kMmaM + kBBlocks shared words per atom after the full wait instead of issuing global loads
// (sm90/promotion.cuh staged_block_scales); E8M0 words are decoded with a shift.
//
// Per-column b scales (kColBlockB, quantized wgrad: b = Xᵀ in 1x128 blocks along the tokens): the same
// warp also copies each stage's scale of every tile column, into the MXFP8 slot layout of one k-step
// (a's rows first, then each consumer warpgroup's columns in four runs, one per thread quad:
// stage_col_scales), where promote_col_blocks reads a quad's four columns with one 16-byte load. f32
// scales go by cp.async; E8M0 bytes are loaded, decoded to f32 and stored (the whole stage then
// arrives synchronously: scales_async is false).
#pragma once

#include "common/decode.cuh"
#include "common/gemm_params.cuh"
#include "common/sm90_tma_desc.cuh"
#include "common/types.cuh"
#include "kernels/sm90/config.cuh"
#include "ptx/cp_async.cuh"
#include "ptx/ld.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"

namespace kiln_dev {
namespace sm90 {

// rows_a = M, rows_b = N: a box that would start past the tensor (the second CTA of a cluster whose
// tile row or B half lies wholly past M or N) starts at the last row instead. Its rows feed only
// outputs that are never stored, so any data will do, and no copy depends on how TMA treats a box
// entirely out of bounds.
// Run by thread 0 alone, or with staged block scales or MXFP8 scales by its whole warp: lane 0 issues
// the TMA copies and every lane copies its share of the stage's scales (stage_scale_copies, mx_store)
// and arrives on full[s].
template <class Config>
__device__ __forceinline__ void Gemm<Config>::produce(const TmaDesc* tma_a, const TmaDesc* tma_b, const Smem& sm,
                                                      const Walk& w, int k_tiles, const GemmParams& p, int lane) {
  const bool async = scales_async(p, k_tiles);
  const int k_blocks = p.k <= 0 ? 0 : (p.k + 31) / 32;  // MXFP8: scale blocks along K
  const bool mx_aligned = kMxPromoted && mx_words_aligned(p);
  int stage = 0;
  u32 phase = 0;
  for (int u = w.first; u < w.count; u += w.step) {
    const Tile tile = tile_of(w, unit_tile(u), p, sm);
    const KRange kr = tile_k_range(u, tile, k_tiles);
    // Grouped wgrad: the tile's rows are output rows e * N + ...; A's columns are dY's N.
    const int first_a = kGroupedK ? tile.row0 - tile.e * p.m : tile.row0;
    const int first_b = tile.n * kBlockN + w.rank * kBoxRowsB;
    const int row_a = first_a < p.m ? first_a : p.m - 1;
    const int row_b = first_b < p.n ? first_b : p.n - 1;
    ScaleSrc src{};
    if constexpr (kStagedScales) src = scale_sources(p, tile, lane);
    for (int kt = kr.begin; kt < kr.end; kt += kAtoms) {
      // MXFP8: this stage's scale words are loaded before the wait, so their latency overlaps it.
      MxWords mx_words{};
      if constexpr (kMxPromoted) mx_words = mx_load(p, tile, kt, k_blocks, mx_aligned, lane);
      // The consumers (of every CTA of the cluster) are done with this stage.
      mbar_wait(sm.empty + 8 * stage, phase ^ 1);
      const u32 full = sm.full + 8 * stage;
      if (lane == 0) {
        // A last stage of two atoms past an odd atom count loads (and expects) its first atom only.
        const int atoms = (kAtoms == 2 && kt + 1 == kr.end) ? 1 : kAtoms;
        // Own A + all of B (part of it from the peer).
        mbar_arrive_expect_tx(full, u32(atoms * (kAtomBytesA + kAtomBytesB)));
#pragma unroll
        for (int t = 0; t < kAtoms; ++t) {
          if (t < atoms) {
            const int k0 = tile.k0 + (kt + t) * kAtomK;  // (k0 is 0 but with grouped wgrad)
            const u32 dst_a = sm.a + stage * kTileBytesA + t * kAtomBytesA;
            if constexpr (kTransA) {
              // MN-major: 64-element chunks of the tile's rows, each kAtomK rows of K (a box past the
              // tensor's MN extent lands as zeros and feeds only rows that are never stored).
#pragma unroll
              for (int c = 0; c < kBlockM / kMnChunk; ++c)
                tma_load_2d(dst_a + c * kMnChunkBytes, tma_a, first_a + c * kMnChunk, k0, full);
            } else {
              tma_load_2d(dst_a, tma_a, k0, row_a, full);
            }
            const u32 dst_b = sm.b + stage * kTileBytesB + t * kAtomBytesB + w.rank * kBoxRowsB * kRowBytes;
            if constexpr (kTransB) {
              // The CTA's share of B in 64-element chunks (kBoxRowsB * kRowBytes is whole chunks).
#pragma unroll
              for (int c = 0; c < kBoxRowsB / kMnChunk; ++c) {
                const u32 dst = dst_b + c * kMnChunkBytes;
                const int col = first_b + c * kMnChunk;
                if constexpr (kGroupedK) {
                  tma_load_2d(dst, tma_b, col, k0, full);  // X: every expert's rows in one 2-D map
                } else if constexpr (kGrouped && kCluster == 1) {
                  tma_load_3d(dst, tma_b, col, k0, tile.e, full);
                } else if constexpr (kGrouped) {
                  tma_load_3d_multicast(dst, tma_b, col, k0, tile.e, full, u16((1u << kCluster) - 1));
                } else if constexpr (kCluster == 1) {
                  tma_load_2d(dst, tma_b, col, k0, full);
                } else {
                  tma_load_2d_multicast(dst, tma_b, col, k0, full, u16((1u << kCluster) - 1));
                }
              }
            } else if constexpr (kGroupedK) {
              tma_load_2d(dst_b, tma_b, k0, row_b, full);  // Xᵀ: every expert's tokens in one 2-D map
            } else if constexpr (kGrouped && kCluster == 1) {
              tma_load_3d(dst_b, tma_b, k0, row_b, tile.e, full);
            } else if constexpr (kGrouped) {
              tma_load_3d_multicast(dst_b, tma_b, k0, row_b, tile.e, full, u16((1u << kCluster) - 1));
            } else if constexpr (kCluster == 1) {
              tma_load_2d(dst_b, tma_b, k0, row_b, full);
            } else {
              tma_load_2d_multicast(dst_b, tma_b, k0, row_b, full, u16((1u << kCluster) - 1));
            }
          }
        }
      }
      if constexpr (kStagedScales) {
        stage_scale_copies(p, sm.scales + stage * kScaleSlotBytes, src, kt, kr.end, async, lane);
        if (async) {
          cp_async_mbar_arrive_noinc(full);
        } else {
          mbar_arrive(full);
        }
      }
      if constexpr (kMxPromoted) {
        mx_store(sm.scales + stage * kScaleSlotBytes, mx_words, lane);
        mbar_arrive(full);  // release: the decoded scales are visible to whoever waits on full[s]
      }
      if (++stage == kStages) {
        stage = 0;
        phase ^= 1;
      }
    }
  }
}

// ---- staged block scales ------------------------------------------------------------------------

// The scale rows one producer lane copies for a tile: a's tile rows lane, lane + 32, ... (clamped to
// M - 1) and, on lanes j < kWgsN * kBBlocks, b's 128-column block g = j % kBBlocks of consumer column
// j / kBBlocks (the block of its column 0 or 128, clamped to N - 1).
template <class Config>
struct Gemm<Config>::ScaleSrc {
  int a[kColBlockB ? 1 : kScaleRowsPerLane];
  int a_first, a_last;  // kColBlockB: row lane of the tile's scale rows and its last (rows recomputed per stage)
  int col0;  // kColBlockB: the tile's first column (its columns lane, lane + 32, ... clamped to N - 1 per stage)
  int b;
  const float* b_base;  // b's scales of the tile's expert
};

template <class Config>
__device__ __forceinline__ typename Gemm<Config>::ScaleSrc Gemm<Config>::scale_sources(const GemmParams& p,
                                                                                       const Tile& tile, int lane) {
  ScaleSrc r;
  // Grouped wgrad: the tile's rows are output rows e * N + ...; a's scale rows are dYᵀ's N.
  const int row_base = kGroupedK ? tile.e * p.m : 0;
  if constexpr (kColBlockB) {
    // (Recomputed per stage, as the columns: the E8M0 grouped producer spilled holding them all.)
    r.a_first = tile.row0 + lane - row_base;
    r.a_last = (tile.row_end > 0 ? tile.row_end - 1 : 0) - row_base;
  } else {
#pragma unroll
    for (int i = 0; i < kScaleRowsPerLane; ++i) {
      const int row = tile.row0 + 32 * i + lane;
      r.a[i] = (row < tile.row_end ? row : (tile.row_end > 0 ? tile.row_end - 1 : 0)) - row_base;
    }
  }
  // Word j = lane < kWgsN * kBBlocks: block g = j % kBBlocks of consumer column j / kBBlocks (the block of
  // its column 0 or column 128, as ScaleRows::b / b1 clamp them).
  const int j = lane < kWgsN * kBBlocks ? lane : 0;
  const int col = tile.n * kBlockN + (j / kBBlocks) * kWgTileN + (j % kBBlocks) * 128;
  r.b = (col < p.n ? col : p.n - 1) / 128;
  r.b_base = b_scale_of<kScaleTypeB>(p, tile.e);
  // (The columns are recomputed per stage: holding kMxColsB of them across the K loop spilled the 40-register
  // producer of E8M0 grouped tiles.)
  r.col0 = tile.n * kBlockN;
  return r;
}

// Whether every staged scale can be copied as an aligned 4-byte word with cp.async: f32 always (the
// runtime checks 4-byte alignment); E8M0 bytes when the tensor's base, row stride and row length
// (k_tiles blocks) are multiples of 4, so the word holding a byte never reaches past the tensor.
template <class Config>
__device__ __forceinline__ bool Gemm<Config>::scales_async(const GemmParams& p, int k_tiles) {
  bool async = true;
  if constexpr (kBlockA && kScaleTypeA == ScaleType::kUe8m0)
    async = async && ((reinterpret_cast<u64>(p.a_scale) | u64(p.lds_a) | u64(k_tiles)) & 3) == 0;
  if constexpr (kBlockB && kScaleTypeB == ScaleType::kUe8m0)
    async = async && ((reinterpret_cast<u64>(p.b_scale) | u64(p.lds_b) | u64(k_tiles) |
                       u64(kGrouped ? p.b_scale_expert_stride : 0)) & 3) == 0;
  if constexpr (kColBlockB && kScaleTypeB == ScaleType::kUe8m0) async = false;  // decoded by the warp
  return async;
}

// Scale elements (row, kb .. kb + n - 1) of a 2-D scale tensor (row stride lds elements) into the shared
// word `dst`. f32: element kb itself (n = 1). E8M0: the aligned 4-byte word holding bytes kb .. kb + n -
// 1 (async; the caller keeps them in one word), or those bytes shifted to their places in that word
// (sync: ld + st.shared), so the consumers decode both the same way (byte kb % 4).
template <class Config>
template <ScaleType kType>
__device__ __forceinline__ void Gemm<Config>::copy_scale(u32 dst, const float* base, int row, long long lds, int kb,
                                                         int n, bool async) {
  constexpr int kBytes = kType == ScaleType::kF32 ? 4 : 1;
  const u8* src = reinterpret_cast<const u8*>(base) + (i64(row) * lds + kb) * kBytes;
  if (async) {
    cp_async_4(dst, kBytes == 4 ? src : src - (kb & 3));
  } else if constexpr (kBytes == 4) {
    sts_u32(dst, ldg_u32(src));
  } else {
    u32 w = ldg_u8(src) << (8 * (kb & 3));
    if (n > 1) w |= ldg_u8(src + 1) << (8 * ((kb + 1) & 3));  // n <= 2: a stage has at most two blocks
    sts_u32(dst, w);
  }
}

// A stage's scale slot: a's scales of tile row r at words kAtoms * r + t (atom t = K block kt + t <
// k_end), then b's block g of consumer column c at words kAtoms * kBlockM + 4 * t + kBBlocks * c + g
// (scale_sources' lane j = kBBlocks * c + g). E8M0 scales keep a stage's blocks in the word of atom 0 (kt
// is even when kAtoms = 2: blocks kt, kt + 1 share an aligned word). f32 a-scales of a whole two-atom
// stage are one 8-byte copy per row where the tensor allows it: with one 4-byte copy per row and atom, the
// copies' L1 requests cost the 128 x 128 block kernel ~9% at M = 4096 (H200, docs/performance.md). The
// caller then arrives on full[s] from every lane (full counts 1 + 32 arrivals):
// cp.async.mbarrier.arrive.noinc once the lane's copies land, or a plain arrive (release) after the
// synchronous stores.
// Scale row i of a's tile rows for this lane (scale_sources).
template <class Config>
__device__ __forceinline__ int Gemm<Config>::scale_row_a(const ScaleSrc& src, int i) {
  if constexpr (kColBlockB) {
    return src.a_first + 32 * i < src.a_last ? src.a_first + 32 * i : src.a_last;
  } else {
    return src.a[i];
  }
}

template <class Config>
__device__ __forceinline__ void Gemm<Config>::stage_scale_copies(const GemmParams& p, u32 slot, const ScaleSrc& src,
                                                                 int kt, int k_end, bool async, int lane) {
  const int n = k_end - kt < kAtoms ? k_end - kt : kAtoms;  // K blocks in this stage
  if constexpr (kBlockA && kScaleTypeA == ScaleType::kUe8m0) {
#pragma unroll
    for (int i = 0; i < kScaleRowsPerLane; ++i)
      copy_scale<kScaleTypeA>(slot + 4 * kAtoms * (32 * i + lane), p.a_scale, scale_row_a(src, i), p.lds_a, kt,
                              n, async);
  } else if constexpr (kBlockA) {
    if (kAtoms == 2 && n == 2 && async && ((reinterpret_cast<u64>(p.a_scale) | u64(p.lds_a) * 4) & 7) == 0) {
#pragma unroll
      for (int i = 0; i < kScaleRowsPerLane; ++i)
        cp_async_8(slot + 8 * (32 * i + lane), p.a_scale + i64(scale_row_a(src, i)) * p.lds_a + kt);
    } else {
#pragma unroll
      for (int t = 0; t < kAtoms; ++t) {
        if (t < n) {
#pragma unroll
          for (int i = 0; i < kScaleRowsPerLane; ++i)
            copy_scale<kScaleTypeA>(slot + 4 * (kAtoms * (32 * i + lane) + t), p.a_scale, scale_row_a(src, i), p.lds_a,
                                    kt + t, 1, async);
        }
      }
    }
  }
  if constexpr (kColBlockB) stage_col_scales(p, slot, src, kt, async, lane);
  if constexpr (kBlockB) {
    if (lane < kWgsN * kBBlocks) {
      const u32 words = slot + 4 * (kAtoms * kBlockM + lane);
      if constexpr (kScaleTypeB == ScaleType::kUe8m0) {
        copy_scale<kScaleTypeB>(words, src.b_base, src.b, p.lds_b, kt, n, async);
      } else {
#pragma unroll
        for (int t = 0; t < kAtoms; ++t) {
          if (t < n) copy_scale<kScaleTypeB>(words + 16 * t, src.b_base, src.b, p.lds_b, kt + t, 1, async);
        }
      }
    }
  }
}

// Per-column b scales (kColBlockB; Xᵀ's scales, one tensor whatever the expert): element kt of tile column c's
// scale row goes to the slot's float
// kBlockM + (4 * wg + t) * kMxColStride + 2 * (c' / 8) + c' % 2, c' = c % kWgTileN, wg = c / kWgTileN,
// t = (c' % 8) / 2: the run of the thread quad whose accumulators hold the column (sm90/mx.cuh's layout
// of one k-step). Lanes past a tile width that is not a multiple of 32 store nothing.
template <class Config>
__device__ __forceinline__ void Gemm<Config>::stage_col_scales(const GemmParams& p, u32 slot, const ScaleSrc& src,
                                                               int kt, bool async, int lane) {
#pragma unroll
  for (int i = 0; i < kMxColsB; ++i) {
    const int c = 32 * i + lane;
    if (kBlockN % 32 != 0 && c >= kBlockN) break;
    const int wg = c / kWgTileN, cl = c % kWgTileN;
    const u32 dst = slot + 4 * (kBlockM + (4 * wg + ((cl & 7) >> 1)) * kMxColStride + 2 * (cl >> 3) + (cl & 1));
    const int col = src.col0 + c < p.n ? src.col0 + c : p.n - 1;
    if constexpr (kScaleTypeB == ScaleType::kF32) {
      copy_scale<ScaleType::kF32>(dst, p.b_scale, col, p.lds_b, kt, 1, async);
    } else {
      // A 32-bit offset (the runtime keeps K x lds_b below 2^31): 64-bit addresses of every column in flight
      // spilled the 40-register producer.
      const u32 v = ldg_u8(reinterpret_cast<const u8*>(p.b_scale) + u32(col * int(p.lds_b) + kt));
      sts_u32(dst, bits_from_f32(decode_e8m0(v)));
    }
  }
}

}  // namespace sm90
}  // namespace kiln_dev
