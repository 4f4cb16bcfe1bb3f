// templates/kernels/sm90_gemm.cuh — the Hopper dense GEMM: TMA ring + warp-specialized wgmma, persistent.
//
//   Y[M, N] = (X[M, K] . W[N, K]^T) * sa * sb        (fprop; X = operand a, W = operand b)
//
// X and W are row-major with K contiguous, both bf16, both f16, or both FP8 (e4m3/e5m2 in any mix);
// sa/sb are per-tensor f32 scales in device memory (FP8 only; null = 1). Y is bf16/f16/f32, row-major
// with row stride ldc. sm_90a only (wgmma, setmaxnreg); the sm80 family is the portable fallback.
//
// Design (DESIGN.md "Kernel families"; numbers are PTX ISA 9.0 sections):
//
// 1. Warp specialization. The block is 1 producer warpgroup + kConsumers (1 or 2) consumer
//    warpgroups. The producer gives registers back (setmaxnreg.dec to 40) and one of its threads
//    issues every TMA copy; the consumers take them (setmaxnreg.inc) for their accumulators. Each
//    consumer warpgroup owns a kWgTileM x kWgTileN slab of the block tile (kWarpsM / 4 warpgroups
//    along M, kWarpsN along N: a warpgroup's 4 warps stack along M, 16 rows each, which is how
//    wgmma's m64 accumulator is spread, ptx/wgmma.cuh).
// 2. Shared-memory ring of kStages stages, each an A box [kBlockM rows x 128 bytes] and a B box
//    [kBlockN rows x 128 bytes], written by TMA in the 128-byte swizzle (ptx/tma.cuh) and read by wgmma
//    through swizzled K-major descriptors. A K tile is exactly 128 bytes of K (64 bf16/f16 or 128 FP8
//    elements): one swizzle atom wide, four 32-byte wgmma k-steps (m64nNk16 or m64nNk32).
//    Two mbarriers per stage (ptx/mbarrier.cuh):
//      full[s]:  1 arrival (the producer's arrive.expect_tx of the stage's bytes) + the TMA bytes.
//      empty[s]: one arrival per consumer warp (lane 0, after its wgmma reads of the stage are done).
//    Producer and consumers walk the same (tile, k-tile) sequence with their own (stage, phase)
//    counters; the producer waits empty[s] with the opposite parity, so its first trip round the
//    ring passes without waiting (§9.7.13.15.16).
// 3. Mainloop (consumer): wait full[s]; wgmma.fence; 4 k-steps x (kWgTileM / 64) wgmmas; commit.
//    Fast accumulation (kPromote = false): the wgmmas accumulate into the f32 registers directly,
//    wait_group 1 keeps the batch just issued in flight while the previous stage is released.
//    Promoted (kPromote = true, FP8 only): each K tile's batch writes a fresh partial sum (scale-d =
//    0 on its first k-step), wait_group 0, release, then the partial is added to the f32 accumulators
//    with FADD. Hopper's FP8 wgmma adds into a truncated ~e8m13 accumulator, so an unpromoted sum's
//    error grows with K; promoting every 128 K bounds it (the scheme DeepGEMM uses; it is also where
//    per-block scales will be applied). The planner enables it where the registers allow (a
//    partial as large as the accumulators: kWgTileM * kWgTileN <= 64 * 128).
// 4. Epilogue straight from the accumulators: acc * (sa * sb), rounded to the output format and
//    stored two columns at a time where ldc and the base allow (else one); rows >= M and columns >= N
//    are never written. TMA zero-fills the rows past M/N and the K tail, so those parts of the
//    accumulators are zeros, never garbage.
// 5. Persistent: the grid is min(tiles, SMs) (runtime/sm90_launch.cpp) and block b takes tiles
//    b, b + grid, ... in the grouped order of common/raster.cuh (group_m tile rows walked column by
//    column: the tiles in flight at once share few A and B panels in L2). The producer runs ahead
//    into the next tile while the consumers store the current one.
// 6. Clusters (kClusterM = 2, opt-in): the kernel is declared __cluster_dims__(2, 1, 1) and the two
//    CTAs of a cluster compute vertically adjacent tiles (tile rows 2i, 2i + 1 of one tile column),
//    so they need the same B tile. Each CTA loads its own A box and HALF of the B box, multicast into
//    both CTAs' shared memory (ptx/tma.cuh): B's L2 -> SM traffic halves (per stage 32 KB instead of
//    48 KB per CTA at 128 x 256). Since a CTA's multicast writes into its peer's ring, a stage may be
//    refilled only when the consumers of BOTH CTAs released it: every consumer warp arrives on the
//    empty[s] of each CTA of the cluster (mapa + remote arrive), and empty[s] counts 4 * kConsumers *
//    kClusterM arrivals (ptx/mbarrier.cuh says why the arrive has default semantics). The walk is over
//    cluster tiles (kClusterM tile rows x 1 tile column) by cluster id; a CTA whose tile row falls
//    past M still loads (from the last row of X: see produce) and multicasts its half of B, and
//    stores nothing. A cluster-wide barrier follows the mbarrier inits and precedes exit.
//
// Preconditions the planner and runtime check (compiler/plan/sm90_plan.cpp, runtime/operands.cpp):
// a and b 16-byte aligned, lda * elem_bytes and ldb * elem_bytes multiples of 16 (TMA global strides),
// K * elem_bytes a multiple of 16, M, N, K < 2^31. Any M >= 1, N >= 1, K >= 0 is computed (K = 0
// writes zeros).
//
// Instantiated by generated code (compiler/emit/sm90_emit.cpp) as:
//   struct KilnConfig { static constexpr int kBlockM = 128; ...; static constexpr bool kPromote = ...; };
//   extern "C" __global__ void [__cluster_dims__(2, 1, 1)] __launch_bounds__(384, 1)
//   kiln_sm90_gemm(const __grid_constant__ kiln_dev::TmaDesc tma_a,
//                  const __grid_constant__ kiln_dev::TmaDesc tma_b, kiln_dev::GemmParams p) {
//     kiln_dev::sm90_gemm<KilnConfig>(tma_a, tma_b, p);
//   }
// launched with grid min(tiles, SMs) (with clusters: kClusterM x min(cluster tiles, the clusters the
// device holds at once)), block 128 * (1 + consumers) and Gemm<Config>::kSmemBytes of dynamic shared
// memory (the host mirror is sm90_smem_bytes in compiler/plan/sm90_plan.cpp).
#pragma once

#include "common/gemm_params.cuh"
#include "common/raster.cuh"
#include "common/sm90_tma_desc.cuh"
#include "common/types.cuh"
#include "epilogue/store.cuh"
#include "ptx/cluster.cuh"
#include "ptx/cp_async.cuh"
#include "ptx/cvt.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"

namespace kiln_dev {
namespace sm90 {

template <class Config>
struct Gemm {
  static constexpr Format kA = Config::kA;
  static constexpr Format kB = Config::kB;
  static constexpr Format kOut = Config::kOut;
  static constexpr int kBlockM = Config::kBlockM;
  static constexpr int kBlockN = Config::kBlockN;
  static constexpr int kBlockK = Config::kBlockK;
  static constexpr int kStages = Config::kStages;
  static constexpr int kWgsM = Config::kWarpsM / 4;  // consumer warpgroups along M
  static constexpr int kWgsN = Config::kWarpsN;      // consumer warpgroups along N
  static constexpr int kConsumers = kWgsM * kWgsN;
  static constexpr int kThreads = 128 * (1 + kConsumers);
  static constexpr int kWgTileM = kBlockM / kWgsM;
  static constexpr int kWgTileN = kBlockN / kWgsN;
  static constexpr int kMmaM = kWgTileM / 64;    // m64 wgmmas per k-step and warpgroup
  static constexpr int kAccRegs = kWgTileN / 2;  // f32 accumulators per thread and m64 slab
  static constexpr bool kPromote = Config::kPromote;
  static constexpr int kElemBytes = format_bytes(kA);
  static constexpr int kRowBytes = kBlockK * kElemBytes;  // one 128-byte swizzle atom
  static constexpr int kKSteps = kRowBytes / 32;          // 32 bytes of K per wgmma
  static constexpr int kTileBytesA = kBlockM * kRowBytes;
  static constexpr int kTileBytesB = kBlockN * kRowBytes;
  static constexpr int kStageBytes = kTileBytesA + kTileBytesB;
  // Ring, then full[kStages] and empty[kStages] mbarriers; +1024 so the ring can start on a 1024-byte
  // boundary whatever the dynamic shared-memory base is.
  static constexpr int kSmemBytes = kStages * kStageBytes + 16 * kStages + 1024;
  static constexpr int kCluster = Config::kClusterM;
  static constexpr int kBoxRowsB = kBlockN / kCluster;  // rows of B each CTA of a cluster loads
  static constexpr int kProducerRegs = 40;
  static constexpr int kConsumerRegs = kConsumers == 1 ? 240 : 232;

  static_assert(Config::kArch == 90, "sm90_gemm needs sm_90a: wgmma and setmaxnreg exist only there");
#if defined(__CUDA_ARCH__)
  static_assert(__CUDA_ARCH__ == 900, "sm90_gemm compiles for sm_90a only");
#endif
  static_assert((format_is_16bit(kA) && kA == kB) || (format_is_fp8(kA) && format_is_fp8(kB)),
                "operands must be the same 16-bit format, or both FP8 (e4m3/e5m2 in any mix)");
  static_assert(kOut == Format::kBf16 || kOut == Format::kF16 || kOut == Format::kF32,
                "the output is bf16, f16 or f32");
  static_assert(kRowBytes == 128,
                "a K tile is one 128-byte swizzle atom (64 bf16/f16 or 128 FP8 elements): the TMA box's "
                "inner extent under CU_TENSOR_MAP_SWIZZLE_128B is at most 128 bytes");
  static_assert(Config::kWarpsM % 4 == 0, "consumer warps come in warpgroups of 4 stacked along M");
  static_assert(kConsumers == 1 || kConsumers == 2,
                "1 or 2 consumer warpgroups (the register split below is sized for those)");
  static_assert(kBlockM % kWgsM == 0 && kWgTileM % 64 == 0, "each consumer warpgroup owns whole m64 slabs");
  static_assert(kBlockN % kWgsN == 0 && (kWgTileN == 64 || kWgTileN == 128 || kWgTileN == 256),
                "a consumer warpgroup's N extent is one wgmma N: 64, 128 or 256");
  static_assert(kBlockM <= 256 && kBlockN <= 256, "a TMA box has at most 256 rows");
  static_assert(kMmaM * kAccRegs * (kPromote ? 2 : 1) <= 128,
                "at most 128 f32 accumulator registers per consumer thread (partials included)");
  static_assert(!kPromote || format_is_fp8(kA), "promotion exists for the FP8 accumulator only");
  static_assert(kStages >= 2 && kStages <= 16, "the ring needs 2..16 stages");
  static_assert(kSmemBytes <= 232448, "sm_90 grants at most 227 KB of shared memory per block");
  static_assert(kTileBytesA % 1024 == 0 && kTileBytesB % 1024 == 0,
                "every stage's A and B boxes start on 1024-byte boundaries (the swizzle period)");
  static_assert(Config::kGroupM >= 1, "grouped rasterization needs at least one tile row per group");
  static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * kConsumers <= 65536,
                "the producer/consumer register split must fit the 64K-register file");
  static_assert(kCluster == 1 || kCluster == 2, "clusters of 1 or 2 CTAs along M");
  static_assert((kBoxRowsB * kRowBytes) % 1024 == 0,
                "each CTA's share of the B box starts on a 1024-byte boundary (the swizzle period)");

  struct Smem {
    u32 a;      // A boxes, stage s at a + s * kTileBytesA
    u32 b;      // B boxes, stage s at b + s * kTileBytesB
    u32 full;   // mbarrier full[s] at full + 8 * s
    u32 empty;  // mbarrier empty[s] at empty + 8 * s
  };

  // The persistent walk: cluster tiles (kCluster tile rows x 1 tile column) in grouped order, taken
  // first, first + step, ...; this CTA computes tile row rank of each.
  struct Walk {
    int ctiles_m;  // cluster-tile rows: ceil(tiles_m / kCluster)
    int tiles_n;
    int count;  // cluster tiles
    int first, step;
    int rank;  // this CTA's rank in its cluster
  };

  static __device__ __forceinline__ Walk make_walk(int tiles_m, int tiles_n) {
    Walk w;
    w.ctiles_m = (tiles_m + kCluster - 1) / kCluster;
    w.tiles_n = tiles_n;
    w.count = w.ctiles_m * tiles_n;
    if constexpr (kCluster == 1) {
      w.first = blockIdx.x;
      w.step = gridDim.x;
      w.rank = 0;
    } else {
      w.first = int(cluster_id_x());
      w.step = int(cluster_count_x());
      w.rank = int(cluster_ctarank());
    }
    return w;
  }

  static __device__ __forceinline__ TileCoord tile_of(const Walk& w, int ct) {
    TileCoord t = grouped_tile(ct, w.ctiles_m, w.tiles_n, Config::kGroupM);
    t.m = t.m * kCluster + w.rank;
    return t;
  }

  // ---- producer ---------------------------------------------------------------------------------

  // rows_a = M, rows_b = N: a box that would start past the tensor (the second CTA of a cluster whose
  // tile row or B half lies wholly past M or N) starts at the last row instead. Its rows feed only
  // outputs that are never stored, so any data will do, and no copy depends on how TMA treats a box
  // entirely out of bounds.
  static __device__ __forceinline__ void produce(const TmaDesc* tma_a, const TmaDesc* tma_b, const Smem& sm,
                                                 const Walk& w, int k_tiles, int rows_a, int rows_b) {
    tma_prefetch_desc(tma_a);
    tma_prefetch_desc(tma_b);
    int stage = 0;
    u32 phase = 0;
    for (int ct = w.first; ct < w.count; ct += w.step) {
      const TileCoord tile = tile_of(w, ct);
      const int first_a = tile.m * kBlockM;
      const int first_b = tile.n * kBlockN + w.rank * kBoxRowsB;
      const int row_a = first_a < rows_a ? first_a : rows_a - 1;
      const int row_b = first_b < rows_b ? first_b : rows_b - 1;
      for (int kt = 0; kt < k_tiles; ++kt) {
        // The consumers (of every CTA of the cluster) are done with this stage.
        mbar_wait(sm.empty + 8 * stage, phase ^ 1);
        const u32 full = sm.full + 8 * stage;
        mbar_arrive_expect_tx(full, kStageBytes);  // own A + all of B (part of it from the peer)
        tma_load_2d(sm.a + stage * kTileBytesA, tma_a, kt * kBlockK, row_a, full);
        if constexpr (kCluster == 1) {
          tma_load_2d(sm.b + stage * kTileBytesB, tma_b, kt * kBlockK, row_b, full);
        } else {
          tma_load_2d_multicast(sm.b + stage * kTileBytesB + w.rank * kBoxRowsB * kRowBytes, tma_b,
                                kt * kBlockK, row_b, full, u16((1u << kCluster) - 1));
        }
        if (++stage == kStages) {
          stage = 0;
          phase ^= 1;
        }
      }
    }
  }

  // ---- consumers --------------------------------------------------------------------------------

  // Releases stage s to the producers: one arrival per warp on the empty[s] of every CTA of the
  // cluster (empty[s] counts 4 * kConsumers * kCluster).
  static __device__ __forceinline__ void release(const Smem& sm, int s, int lane) {
    if (lane == 0) {
      if constexpr (kCluster == 1) {
        mbar_arrive(sm.empty + 8 * s);
      } else {
#pragma unroll
        for (int r = 0; r < kCluster; ++r) mbar_arrive_cluster(cluster_map_shared(sm.empty + 8 * s, u32(r)));
      }
    }
  }

  // The wgmmas of one K tile (4 k-steps) into d, reading the stage whose A rows of this warpgroup
  // start at a_base and B rows at b_base. first: scale-d = 0 on the first k-step (d is overwritten).
  static __device__ __forceinline__ void mma_tile(float (&d)[kMmaM][kAccRegs], u32 a_base, u32 b_base,
                                                  bool first) {
    const u64 desc_a = wgmma_desc_sw128(a_base);
    const u64 desc_b = wgmma_desc_sw128(b_base);
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {
      // Start address + 32 * ks bytes (the descriptor's address field is in 16-byte units and cannot
      // carry: shared addresses are < 2^18).
      const u64 db = desc_b + u64(2 * ks);
#pragma unroll
      for (int mi = 0; mi < kMmaM; ++mi) {
        const u64 da = desc_a + u64((mi * 64 * kRowBytes + 32 * ks) >> 4);
        wgmma_m64<kWgTileN, kA, kB>(d[mi], da, db, (first && ks == 0) ? 0u : 1u);
      }
    }
  }

  static __device__ __forceinline__ void fence_all(float (&d)[kMmaM][kAccRegs]) {
#pragma unroll
    for (int mi = 0; mi < kMmaM; ++mi) wgmma_fence_operands(d[mi]);
  }

  // Two adjacent outputs (row, col), (row, col + 1); col + 1 may be >= n.
  static __device__ __forceinline__ void store_pair(const GemmParams& p, bool paired_ok, int row, int col,
                                                    float v0, float v1) {
    store_out_pair<kOut>(p.out, p.ldc, p.n, paired_ok, row, col, v0, v1);
  }

  static __device__ __forceinline__ void consume(const GemmParams& p, const Smem& sm, const Walk& w,
                                                 int k_tiles, int consumer) {
    // Scales first: their latency hides behind the first K tile. Only FP8 operands are scaled.
    float scale = 1.0f;
    if constexpr (format_is_fp8(kA)) {
      if (p.a_scale != nullptr) scale = *p.a_scale;
    }
    if constexpr (format_is_fp8(kB)) {
      if (p.b_scale != nullptr) scale *= *p.b_scale;
    }
    const int wg_m = consumer % kWgsM;
    const int wg_n = consumer / kWgsM;
    const int tid = threadIdx.x & 127;
    const int warp = tid >> 5;
    const int lane = tid & 31;
    const u32 a_off = u32(wg_m * kWgTileM * kRowBytes);
    const u32 b_off = u32(wg_n * kWgTileN * kRowBytes);
    const bool paired_ok =
        (p.ldc % 2 == 0) && ((reinterpret_cast<u64>(p.out) & u64(2 * format_bytes(kOut) - 1)) == 0);

    float acc[kMmaM][kAccRegs];
    // The promoted path's per-K-tile partial sums; a 1-element dummy otherwise (never touched).
    float part[kPromote ? kMmaM : 1][kPromote ? kAccRegs : 1];
#pragma unroll
    for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
      for (int i = 0; i < kAccRegs; ++i) acc[mi][i] = 0.0f;
    }

    int stage = 0;
    u32 phase = 0;
    for (int ct = w.first; ct < w.count; ct += w.step) {
      const TileCoord tile = tile_of(w, ct);
      if constexpr (kPromote) {
#pragma unroll
        for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
          for (int i = 0; i < kAccRegs; ++i) acc[mi][i] = 0.0f;
        }
      } else if (k_tiles == 0) {
#pragma unroll
        for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
          for (int i = 0; i < kAccRegs; ++i) acc[mi][i] = 0.0f;
        }
      }

      int prev_stage = 0;
      for (int kt = 0; kt < k_tiles; ++kt) {
        mbar_wait(sm.full + 8 * stage, phase);
        const u32 a_base = sm.a + stage * kTileBytesA + a_off;
        const u32 b_base = sm.b + stage * kTileBytesB + b_off;
        if constexpr (kPromote) {
          fence_all(part);
          wgmma_fence();
          mma_tile(part, a_base, b_base, /*first=*/true);
          wgmma_commit();
          wgmma_wait<0>();
          fence_all(part);
          release(sm, stage, lane);
#pragma unroll
          for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
            for (int i = 0; i < kAccRegs; ++i) acc[mi][i] += part[mi][i];
          }
        } else {
          fence_all(acc);
          wgmma_fence();
          mma_tile(acc, a_base, b_base, /*first=*/kt == 0);
          wgmma_commit();
          // The batch just issued stays in flight; the one before it (stage prev_stage) is done.
          wgmma_wait<1>();
          if (kt > 0) release(sm, prev_stage, lane);
        }
        prev_stage = stage;
        if (++stage == kStages) {
          stage = 0;
          phase ^= 1;
        }
      }
      if constexpr (!kPromote) {
        wgmma_wait<0>();
        fence_all(acc);
        if (k_tiles > 0) release(sm, prev_stage, lane);
      }

      // Epilogue. Accumulator register i of slab mi: row 16 * warp + g + 8 * ((i / 2) % 2),
      // column 8 * (i / 4) + 2 * t + (i % 2) of the warpgroup tile (ptx/wgmma.cuh).
      const int row0 = tile.m * kBlockM + wg_m * kWgTileM + warp * 16 + (lane >> 2);
      const int col0 = tile.n * kBlockN + wg_n * kWgTileN + 2 * (lane & 3);
#pragma unroll
      for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int row = row0 + mi * 64 + half * 8;
          if (row < p.m) {
#pragma unroll
            for (int j = 0; j < kAccRegs / 4; ++j) {
              const int col = col0 + 8 * j;
              if (col < p.n) {
                store_pair(p, paired_ok, row, col, acc[mi][4 * j + 2 * half] * scale,
                           acc[mi][4 * j + 2 * half + 1] * scale);
              }
            }
          }
        }
      }
    }
  }

  // ---- the kernel -------------------------------------------------------------------------------

  static __device__ __forceinline__ void run(const TmaDesc& tma_a, const TmaDesc& tma_b,
                                             const GemmParams& p) {
    extern __shared__ __align__(1024) u8 smem[];
    if (p.m <= 0 || p.n <= 0) return;  // uniform: before any barrier

    Smem sm;
    sm.a = (smem_u32(smem) + 1023u) & ~1023u;
    sm.b = sm.a + kStages * kTileBytesA;
    sm.full = sm.b + kStages * kTileBytesB;
    sm.empty = sm.full + 8 * kStages;

    const int tiles_m = (p.m - 1) / kBlockM + 1;
    const int tiles_n = (p.n - 1) / kBlockN + 1;
    const int k_tiles = p.k <= 0 ? 0 : (p.k - 1) / kBlockK + 1;

    if (threadIdx.x == 0) {
#pragma unroll 1
      for (int s = 0; s < kStages; ++s) {
        mbar_init(sm.full + 8 * s, 1);
        mbar_init(sm.empty + 8 * s, 4 * kConsumers * kCluster);
      }
      mbar_fence_init();
    }
    if constexpr (kCluster == 1) {
      __syncthreads();
    } else {
      cluster_sync();  // the peers' barriers exist before anyone arrives on them or multicasts
    }
    const Walk w = make_walk(tiles_m, tiles_n);

    // Each warpgroup's role is one branch of a single if/else (setmaxnreg is warpgroup-wide).
    const int wg = threadIdx.x / 128;
    if (wg == 0) {
      setmaxnreg_dec<kProducerRegs>();
      if (threadIdx.x == 0) produce(&tma_a, &tma_b, sm, w, k_tiles, p.m, p.n);
    } else {
      setmaxnreg_inc<kConsumerRegs>();
      consume(p, sm, w, k_tiles, wg - 1);
      // No CTA leaves while a peer may still arrive on its barriers (the producers have exited, and
      // exited threads do not take part).
      if constexpr (kCluster > 1) cluster_sync();
    }
  }
};

}  // namespace sm90

template <class Config>
__device__ __forceinline__ void sm90_gemm(const TmaDesc& tma_a, const TmaDesc& tma_b, const GemmParams& p) {
  sm90::Gemm<Config>::run(tma_a, tma_b, p);
}

}  // namespace kiln_dev
