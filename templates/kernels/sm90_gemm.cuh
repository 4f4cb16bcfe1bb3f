// templates/kernels/sm90_gemm.cuh — the Hopper GEMM (dense and grouped): TMA ring + warp-specialized wgmma,
// persistent.
//
//   Y[M, N] = (X[M, K] . W[N, K]^T) * sa * sb        (fprop; X = operand a, W = operand b)
//
// X and W are row-major with K contiguous, both bf16, both f16, or both FP8 (e4m3/e5m2 in any mix).
// Y is bf16/f16/f32, row-major with row stride ldc. sm_90a only (wgmma, setmaxnreg); the sm80 family
// is the portable fallback. Scales of FP8 operands (layouts: common/gemm_params.cuh; section 7):
//   a: tensor (f32), m (f32 [M]) or block1x128 (f32 or E8M0 [M, ceil(K/128)], row stride lds_a);
//   b: tensor (f32), n (f32 [N]) or block128x128 (f32 or E8M0 [ceil(N/128), ceil(K/128)], lds_b).
//
// Design (DESIGN.md "Kernel families"; numbers are PTX ISA 9.0 sections):
//
// 1. Warp specialization. The block is 1 producer warpgroup (2 for section 13) + kConsumers (1-3)
//    consumer warpgroups. The producer gives registers back (setmaxnreg.dec; kProducerRegs) and one of its
//    threads issues every TMA copy; the consumers take them (setmaxnreg.inc) for their accumulators. Each
//    consumer warpgroup owns a kWgTileM x kWgTileN slab of the block tile (kWarpsM / 4 warpgroups
//    along M, kWarpsN along N: a warpgroup's 4 warps stack along M, 16 rows each, which is how
//    wgmma's m64 accumulator is spread, ptx/wgmma.cuh). A warpgroup's N is one wgmma N: 64, 128, 256, or
//    a width between them (96, 112, 144, 160, 176, 192, 208) so that N's tiles fill the 132 SMs better
//    (N = 2112 = 11 x 192).
// 2. Shared-memory ring of kStages stages, each an A box [kBlockM rows x 128 bytes] and a B box
//    [kBlockN rows x 128 bytes], written by TMA in the 128-byte swizzle (ptx/tma.cuh) and read by wgmma
//    through swizzled K-major descriptors. A K tile is exactly 128 bytes of K (64 bf16/f16 or 128 FP8
//    elements): one swizzle atom wide, four 32-byte wgmma k-steps (m64nNk16 or m64nNk32).
//    Two mbarriers per stage (ptx/mbarrier.cuh):
//      full[s]:  1 arrival (the producer's arrive.expect_tx of the stage's bytes) + the TMA bytes (+ 32
//                lane arrivals when warp 0 stages scales: sections 8 and 11).
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
//    are never written. With a generated epilogue functor (epilogue/config.cuh; docs/epilogue.md) each
//    stored value is Fn::apply(ctx, acc * factors, 0, 0, m, n, e) — the portable family's contract
//    (kernels/sm80_epilogue.cuh) — and with gate_up=interleaved a thread's column pair (2t, 2t + 1 of
//    every n8 group: wgmma's accumulator layout keeps it in one thread, ptx/wgmma.cuh) is one (gate,
//    up) pair, stored as ONE element Y[m, col / 2] = Fn::apply(ctx, 0, gate, up, m, col / 2, e). TMA
//    zero-fills the rows past M/N and the K tail, so those parts of the accumulators are zeros, never
//    garbage.
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
//    empty[s] of each CTA of the cluster (mapa + remote arrive), and empty[s] counts 4 * kStageReaders *
//    kClusterM arrivals (the consumer warpgroups that read a stage: all of them, or one with ping-pong,
//    section 16; ptx/mbarrier.cuh says why the arrive has default semantics). The walk is over
//    cluster tiles (kClusterM tile rows x 1 tile column) by cluster id; a CTA whose tile row falls
//    past M still loads (from the last row of X: see produce) and multicasts its half of B, and
//    stores nothing. A cluster-wide barrier follows the mbarrier inits and precedes exit.
// 7. Scales, the same semantics as the portable family and the reference kernel
//    (kernels/sm80_promotion.cuh, sm80_epilogue.cuh, reference_gemm.cuh; NUMERICS.md §5.1):
//      Y[m, n] = round_out( acc(m, n) * (row_factor(m) * col_factor(n)) ),
//    row_factor = a's tensor scale or a_scale[m]; col_factor = b's tensor scale or b_scale[n]; 1 for a
//    block-scaled operand. Per-row factors are loaded when a tile starts (their latency hides behind
//    its mainloop), per-column ones in the epilogue, column pair by column pair (with TMA stores they
//    too are loaded when the tile starts and staged in shared memory: section 12). Block scales vary
//    along K and are applied to the promoted partial of every K tile: an FP8 K tile is 128 elements,
//    exactly one scale block, so K tile kt is scale column kb = kt and
//      acc = fma(part, sa[m, kb] * sb[n / 128, kb], acc)     (the reference's order and rounding)
//    with sa or sb alone when only one operand is block-scaled. Block scales therefore need the
//    promoted path (the planner refuses block scales on a tile too wide to promote), and a consumer
//    warpgroup's columns lie in one 128-column block of b's scales (kWgTileN divides 128 and tiles
//    start at multiples of it): one sb per thread and K block, two sa (rows g, g + 8) per m64 slab.
//    A 192-column warpgroup spans two blocks in three 64-column segments (kBSegs below): two sb per
//    thread and K block, the middle segment's chosen by where the warpgroup starts. A 256-column
//    warpgroup (section 14) starts on a 256-column edge and spans two whole blocks: two sb, one per half.
//    Where the config stages them (section 8: every block-scaled tile whose scale slots fit beside the
//    ring) the consumers read them from shared memory; otherwise they are plain read-only global loads
//    (tiny, L2-resident tensors), issued one K tile ahead into registers — across tiles too: the last K
//    tile of a tile prefetches the next tile's first — so their latency mostly hides behind a K tile's
//    TMA wait and wgmmas. Rows >= M and columns >= N read the
//    last valid row / column's scales (their products are never stored). A K tail (K % 128 != 0) is a
//    zero-filled partial K tile with its own scale column: ceil(K / 128) blocks.
// 8. v4 mainloops for block scales (bench/NOTES.md "v4"), chosen by the config, the section-7 path staying
//    for the others:
//    - Two-atom stages (block_k = 256 FP8 elements, "bk256"): a stage holds two 128-byte atoms of K
//      (two TMA boxes per operand), and each consumer alternates two partial register sets: while atom
//      t's wgmmas run (wait_group 1 keeps them in flight) the thread promotes atom t-1's partial, so
//      the FFMA promotion no longer leaves the tensor cores to the other warpgroup alone. Registers:
//      accumulators + 2 partials = 192 f32 at 64 x 128, hence the 24 / 240 producer / consumer split.
//    - Three consumer warpgroups (warps 12 x 1: 192 x 128 tiles of 64 x 128 each), 32 / 160 registers:
//      more wgmma work per CTA and three warpgroups to cover each other's promotions.
//    Both stage the block scales through shared memory (kStagedScales), and since session 17 so do
//    one-atom tiles of 1 or 2 consumers wherever the slots fit beside the ring (Config::kStagedScales,
//    set by the host: 3-11% faster than section 7's loads at M = 128 .. 8192, bench/NOTES.md): warp 0
//    of the producer warpgroup (lane 0 also issues the TMA copies) copies each stage's a-scales (per
//    tile row: one 8-byte cp.async for both f32 blocks of a two-atom stage where the tensor is 8-byte
//    aligned, else a word per block; E8M0: the one aligned word holding the stage's bytes) and b-scales
//    (one word per consumer column and 128-column block it touches: two for 192- and 256-column
//    warpgroups) into a slot beside the ring, and arrives on full[s] through
//    cp.async.mbarrier.arrive.noinc (stage_scale_copies). The consumers read 2 * kMmaM + kBBlocks shared
//    words per atom after the full wait instead of issuing global loads; E8M0 words are decoded with a
//    shift.
// 9. Grouped GEMMs (Config::kGrouping offsets or masked; common/gemm_params.cuh "Grouped GEMMs"). The
//    per-expert row counts live on the device, so warp 0 of every CTA builds a table in shared memory
//    before the first barrier (build_groups): per expert, its first row of X / Y, its row count
//    (offsets sanitized as the portable family does: ends clamped to [0, M], non-decreasing; masked
//    counts clamped to [0, max_m]) and the end of its cluster tiles in the walk (an inclusive prefix
//    sum of ceil(ceil(rows / kBlockM) / kCluster) * tiles_n). The persistent walk then runs over all
//    experts' cluster tiles at once — every SM busy whatever the routing — and tile_of finds a tile's
//    expert with a binary search of the table, and its place inside the expert with the same grouped
//    rasterization as a dense problem. X is one 2-D map over all M rows (a tile's rows past its
//    expert's end read the next expert's rows or TMA's zeros and are never stored); W [E, N, K] is a
//    3-D map {K, N, E} (b_expert_stride elements apart), so a box never reaches into the next expert's
//    weights. Scales follow the portable family: a's per-row / block scales by global row, b's tensor
//    scale one per expert and its per-channel / block scales b_scale_expert_stride elements apart. The
//    launch covers the worst case, (ceil(M / block_m) + E) * tiles_n cluster tiles, capped at the SMs.
// 11. MXFP8 (a = b = mxfp8: e4m3 elements, E8M0 scales [rows, K/32] on both operands; NUMERICS.md §2).
//    Hopper has no block-scaled MMA, so every wgmma k-step (32 FP8 elements = one scale block of both
//    operands) writes a fresh partial that is promoted on its own (mainloop_mx):
//      acc = fma(part, sa[m, kb] * sb[n, kb], acc)
//    — per accumulator element one FMUL and one FFMA per 32 K, about what the k-step's wgmma costs the
//    tensor cores, so the two consumer warpgroups take turns (one promotes while the other's wgmma
//    runs). The producer's warp 0 stages the scales: per stage each lane loads the E8M0 words (4 bytes
//    = the atom's 4 k-steps) of its tile rows and columns before waiting for the stage (their latency
//    overlaps the wait), decodes them exactly to f32 and stores them where the consumers read them with
//    few instructions: per k-step, a's scale per tile row, then b's per column, grouped by the thread
//    quad whose accumulators hold that column (16-byte loads); then arrives on full[s] (1 + 32
//    arrivals). Warpgroup tiles hold at most 64 accumulators per thread (64 x 128 or 128 x 64), one atom
//    per stage; grouped, split-K and clusters work as for the other formats.
// 12. TMA-store epilogue (tma_store = 1, 2 or 4; dense or grouped, no gate|up): each consumer
//    warpgroup writes its scaled (and functor-mapped) output slab to shared memory as 128-byte-swizzled TMA
//    boxes, fences the async proxy, and one thread stores the boxes with cp.async.bulk.tensor (clipped at M
//    and N by the map), then the warpgroup goes straight on to its next tile: the stores overlap the next
//    mainloop, and they leave in whole 128-byte lines instead of the direct epilogue's 4-byte pieces per
//    thread. The runtime passes the output's map and out_tma = 1 when the output is TMA-addressable (16-byte
//    aligned base and row stride); otherwise the direct epilogue runs. With tma_store = 2 or 4
//    (kOutChunks) the slab goes out in that many column chunks of ceil(boxes / kOutChunks) boxes (none
//    empty) through a buffer of one chunk: each chunk waits until the previous one's stores have read
//    the buffer, and the smaller buffer leaves room for one more stage. Grouped problems: a box cannot
//    stop at an expert's last row (the map spans all experts' rows), so a warpgroup whose slab crosses
//    it (the expert's last slab, unless the rows fill it) stores that slab directly (tma_slab).
// 13. MXFP8 through a dequantizing producer (block_k = 64; dense and grouped, 2 consumer warpgroups, no
//    clusters, no split-K). Section 11's promotion costs an FMUL and an FFMA per accumulator per 32 K, which
//    keeps the FP8 tensor cores below half their rate; here the producer warpgroup turns each operand
//    element into bf16 once per tile: x * 2^(e - 127) is exact in bf16 (e4m3's 4 significant bits, f32's
//    exponent range), so the consumers run the plain bf16 mainloop (m64nNk16 wgmmas accumulating in f32,
//    no promotion, no epilogue scales) at bf16's tensor rate, half of FP8's, with nothing per accumulator.
//    v2 (this one; v1, which loaded with plain global loads in the converting threads, measured 240-260
//    TFLOP/s because every stage's proxy fence waited for those loads: bench/NOTES.md session 8):
//    - Warp 0 stages: per 128-K atom of a tile, lane 0's TMA copies of the A and B boxes (e4m3, 128-byte
//      swizzle) into a ring of kDqStg stages, and the E8M0 words of the tile's rows and columns decoded to
//      4 f32 each beside them (dq_stage). It never fences, so its loads are never waited for.
//    - Warps 1-7 of the producer's TWO warpgroups convert (dq_convert_walk): each atom gives two bf16
//      stages of 64 K; per stage every thread reads 16-byte chunks of the staged rows, converts (hardware
//      e4m3 -> f16 -> f32, one product by the scale, bf16 pack), writes them where TMA would have (chunk
//      j of row r at j ^ (r % 8)), fences the async proxy (only shared-memory accesses outstanding) and
//      arrives on full[s] (224 arrivals). Seven converting warps instead of three: 3.03 -> 2.53 ms at
//      4096 x 7168 x 16384 (bench/NOTES.md session 14).
//    - A in registers (kDqRegA: warpgroup tiles of 64 rows, i.e. warps_m 8 with block_m 128 or warps_m 4
//      with block_m 64): the consumers dequantize their own A rows from the staging ring straight into
//      the register fragments of RS wgmmas (mainloop_dq_rega), so the producer converts B only and the
//      bf16 ring holds B alone (128 x 256: three stages instead of two). The producer stores each B row
//      in the K order the consumers' fragments take (a permutation inside each 64-K stage). One register
//      set of A: each stage's wgmmas drain (wait 0) before the next stage's A is converted, since ptxas
//      serializes every wgmma of a kernel (its note C7513) where A registers are written while a wgmma
//      is in flight; the other consumer warpgroup keeps the tensor cores busy meanwhile. 128 x 256 at
//      4096 x 7168 x 16384: 2.53 -> 2.14 ms (bench/NOTES.md session 15). Tiles with 128-row warpgroups
//      keep the bf16 A stages.
//    Shared memory: the bf16 ring + the staging ring (2 x (block_m + block_n) x 144 bytes), so 128 x 256
//    tiles get 3 bf16 stages of B (2 of A and B without register A). 512 threads, so ptxas allows no
//    instruction more than 128 registers: the m64n256 (m64n208) wgmmas of 256- (208-) column warpgroups
//    run as two, n128 + n128 (n112 + n96) (mma_tile, mainloop_dq_rega). Registers: see kProducerRegs.
// 14. Block scales on 64 x 256 warpgroups (kHalfPart: one atom per stage, 1 or 2 consumer warpgroups,
//    no split-K; 128 x 256 tiles with warps 8 x 1). 128 accumulators and a full 128-register partial do
//    not fit the consumers' 232 registers, so each K tile runs as two batches of m64n128 wgmmas (the
//    warpgroup's column halves, B rows 0-127 and 128-255 of the stage) into one 64-register partial,
//    each drained and promoted into its half of the accumulators (b's scale block h for half h; the
//    warpgroup starts on a 256-column edge). Why: the 128 x 128 tile, promoted or not, stops near 0.70 ms
//    at 4096 x 7168 x 16384 where 128 x 256 runs 0.62 (bench/NOTES.md session 13).
// 15. Programmatic dependent launch (ptx/griddepcontrol.cuh; always compiled in). The runtime launches
//    with programmatic stream serialization (runtime/sm90_launch.cpp), so this kernel's CTAs may start
//    while the previous kernel on the stream still runs. Before any global-memory access (build_groups
//    reads the expert offsets) every thread executes griddepcontrol.wait: only the mbarrier inits and
//    the prefetch of the tensor maps (kernel parameters) overlap the predecessor. Then each CTA issues
//    griddepcontrol.launch_dependents, so the next kernel's launch and setup overlap this one's tail.
//    Measured on the H200 (bench/NOTES.md session 15): a chain of dependent bf16 GEMMs at M = 64,
//    N = K = 2048 runs 6.50-6.52 us per GEMM against 7.68-8.12 without PDL (M = 128: 13.09-13.19 against
//    14.69-15.17); the benchmark's small-M rows, each call on its own inputs, gain a median 1-2% (per row
//    -11% .. +12%, mostly noise). Prefetching the first B boxes into L2 before the wait measured slower
//    (2.8% median, up to 10%) and is not done.
//    Without a programmatic dependency (KILN_PDL=0, another launcher) the wait returns at once.
// 16. Ping-pong consumers (pingpong = 1; warps 4 x 1, unpromoted accumulation, dense, no split-K): two
//    consumer warpgroups each own whole kBlockM x kBlockN tiles; consumer c takes the CTA's units c, c + 2,
//    ... of the walk. The producer is unchanged (every unit's stages in walk order), each stage is read
//    and released by one warpgroup (empty[s] counts 4 per CTA), and a consumer counts past the other's
//    stages (skip_stages). Named barriers kOrderBarrier + c order the mainloops: a consumer starts a
//    unit's mainloop only after the previous unit's consumer has waited on all of that unit's stages
//    (bar.arrive / bar.sync), so every full[s] it waits on is at most one phase ahead (the parity wait
//    stays exact however many laps a unit spans), and one warpgroup's epilogue runs under the other's
//    wgmmas. Each consumer has its own TMA-store slab and column-scale slab (section 12).
//    Measured on the H200 (bench/NOTES.md session 19, graph replay) with 5 stages: faster than the
//    cooperative tiles where K is short (FP8 row 4096 x 32768 x 512: 130.7 against 141.5 / 142.3 us;
//    4096 x 24576 x 1536 in clusters of 2: 220.5 against 236.2 / 237.5), slower where K is long on
//    128 x 128 tiles. A warpgroup keeps no partials, so its tile may hold up to 192 accumulators per
//    thread: 128 x 176 at N = 2112 (12 x 176), 5 stages with the slab in four chunks, measured 3.6-4%
//    faster than the cooperative 128 x 176 for FP8 at 4096 x 2112 x 7168 (session 20).
//
// Preconditions the planner and runtime check (compiler/plan/sm90_plan.cpp, runtime/operands.cpp):
// a and b 16-byte aligned, lda * elem_bytes and ldb * elem_bytes multiples of 16 (TMA global strides),
// K * elem_bytes a multiple of 16, M, N, K < 2^31; with block scales a promoted config (see 7) and
// K % 128 == 0 (the spec's rule: compiler/spec/sizes.cpp; the kernel itself reads ceil(K / 128) scale
// columns). Any M >= 1, N >= 1, K >= 0 is computed (K = 0 writes zeros).
//
// Instantiated by generated code (compiler/emit/sm90_emit.cpp) as:
//   struct KilnConfig { static constexpr int kBlockM = 128; ...; static constexpr bool kPromote = ...;
//                       static constexpr kiln_dev::Scale kScaleA = ...; kScaleTypeA, kScaleB, kScaleTypeB };
//   extern "C" __global__ void [__cluster_dims__(2, 1, 1)] __launch_bounds__(kThreads, 1)
//   kiln_sm90_gemm(const __grid_constant__ kiln_dev::TmaDesc tma_a,
//                  const __grid_constant__ kiln_dev::TmaDesc tma_b, kiln_dev::GemmParams p) {
//     kiln_dev::sm90_gemm<KilnConfig>(tma_a, tma_b, p);
//   }
// launched with grid min(tiles, SMs) (with clusters: kClusterM x min(cluster tiles, the clusters the
// device holds at once)), block kThreads = 128 * (producer warpgroups + consumers) and
// Gemm<Config>::kSmemBytes of dynamic shared memory (the host mirror is sm90_smem_bytes in
// compiler/plan/sm90_plan.cpp).
#pragma once

#include "common/fp8_to_bf16.cuh"
#include "common/gemm_params.cuh"
#include "common/raster.cuh"
#include "common/sm90_tma_desc.cuh"
#include "common/types.cuh"
#include "dequant/block_scale.cuh"
#include "epilogue/config.cuh"
#include "epilogue/context.cuh"
#include "epilogue/functions.cuh"
#include "epilogue/store.cuh"
#include "ptx/cluster.cuh"
#include "ptx/cp_async.cuh"
#include "ptx/cvt.cuh"
#include "ptx/griddepcontrol.cuh"
#include "ptx/ld.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/sync.cuh"
#include "ptx/tma.cuh"
#include "ptx/warp.cuh"
#include "ptx/wgmma.cuh"
#include "scheduler/group_tile.cuh"

namespace kiln_dev {
namespace sm90 {

// Whether the config asks for the TMA-store epilogue (section 12): `static constexpr bool kTmaStore`,
// emitted only by configs with tma_store = 1, 2 or 4, so every other config compiles to the code it did.
template <class Config, class = void>
struct ConfigTmaStore {
  static constexpr bool kValue = false;
};
template <class Config>
struct ConfigTmaStore<Config, typename VoidOf<decltype(Config::kTmaStore)>::type> {
  static constexpr bool kValue = Config::kTmaStore;
};

// Whether the host stages the block scales (section 8): `static constexpr bool kStagedScales`, emitted
// where sm90_staged_scales says so.
template <class Config, class = void>
struct ConfigStagedScales {
  static constexpr bool kValue = false;
};
template <class Config>
struct ConfigStagedScales<Config, typename VoidOf<decltype(Config::kStagedScales)>::type> {
  static constexpr bool kValue = Config::kStagedScales;
};

// Section 12's slab in chunks (tma_store = 2 or 4): `static constexpr int kOutChunks`, emitted only then.
template <class Config, class = void>
struct ConfigOutChunks {
  static constexpr int kValue = 1;
};
template <class Config>
struct ConfigOutChunks<Config, typename VoidOf<decltype(Config::kOutChunks)>::type> {
  static constexpr int kValue = Config::kOutChunks;
};

// Whether the config asks for ping-pong consumers (section 16): `static constexpr bool kPingPong`,
// emitted only by configs with pingpong = 1.
template <class Config, class = void>
struct ConfigPingPong {
  static constexpr bool kValue = false;
};
template <class Config>
struct ConfigPingPong<Config, typename VoidOf<decltype(Config::kPingPong)>::type> {
  static constexpr bool kValue = Config::kPingPong;
};

// The host's mirror of the kernel's shared memory (compiler/plan/sm90_plan.cpp sm90_smem_bytes, the
// launch's dynamic size): `static constexpr int kHostSmemBytes`, emitted by the generated code; the
// kernel checks that it equals its own layout's size.
template <class Config, class = void>
struct ConfigHostSmem {
  static constexpr int kValue = -1;
};
template <class Config>
struct ConfigHostSmem<Config, typename VoidOf<decltype(Config::kHostSmemBytes)>::type> {
  static constexpr int kValue = Config::kHostSmemBytes;
};

template <class Config>
struct Gemm {
  // MXFP8 (section 11) elements are e4m3: TMA and wgmma see e4m3 bytes. With block_k = 64 (section 13)
  // they are dequantized to bf16 instead (B by the producer warpgroups into bf16 stages, A the same way
  // or, for 64-row warpgroups, by the consumers into wgmma registers): wgmma sees bf16.
  static constexpr bool kMx = Config::kA == Format::kMxfp8;
  static constexpr bool kDq = kMx && Config::kBlockK == 64;
  static constexpr bool kMxPromoted = kMx && !kDq;  // section 11's mainloop
  static constexpr Format kA = kDq ? Format::kBf16 : kMx ? Format::kE4m3 : Config::kA;
  static constexpr Format kB = kDq ? Format::kBf16 : Config::kB == Format::kMxfp8 ? Format::kE4m3 : Config::kB;
  static constexpr Format kOut = Config::kOut;
  static constexpr int kBlockM = Config::kBlockM;
  static constexpr int kBlockN = Config::kBlockN;
  static constexpr int kBlockK = Config::kBlockK;
  static constexpr int kStages = Config::kStages;
  static constexpr int kWgsM = Config::kWarpsM / 4;  // consumer warpgroups along M
  static constexpr int kWgsN = Config::kWarpsN;      // consumer warpgroups along N
  // Section 16, ping-pong: two consumer warpgroups that each own whole tiles (warps 4 x 1: the
  // warpgroup tile is the block tile) and take the CTA's tiles in turn, so that one's epilogue runs
  // while the other's wgmmas do.
  static constexpr bool kPingPong = ConfigPingPong<Config>::kValue;
  static constexpr int kConsumers = kPingPong ? 2 : kWgsM * kWgsN;
  // Consumer warpgroups that read each stage (and release it: empty[s] counts 4 per warpgroup and CTA).
  static constexpr int kStageReaders = kPingPong ? 1 : kConsumers;
  // Named barriers 1 + c: consumer c's epilogue (sections 10, 12); kOrderBarrier + c: consumer c may
  // start its next unit's mainloop (section 16).
  static constexpr int kOrderBarrier = 4;
  // Section 13, A in registers: the consumers dequantize A into the RS wgmmas' register fragments and
  // the producer converts B only (a bf16 ring of B stages), for warpgroup tiles of 64 rows (others keep
  // the bf16 A stages).
  static constexpr bool kDqRegA = kDq && Config::kBlockM / (Config::kWarpsM / 4) == 64;
  static constexpr int kProducerWgs = kDq ? 2 : 1;
  static constexpr int kThreads = 128 * (kProducerWgs + kConsumers);
  static constexpr int kWgTileM = kBlockM / kWgsM;
  static constexpr int kWgTileN = kBlockN / kWgsN;
  static constexpr int kMmaM = kWgTileM / 64;    // m64 wgmmas per k-step and warpgroup
  static constexpr int kAccRegs = kWgTileN / 2;  // f32 accumulators per thread and m64 slab
  static constexpr bool kPromote = Config::kPromote;
  static constexpr int kElemBytes = format_bytes(kA);
  static constexpr int kRowBytes = 128;                   // one 128-byte swizzle atom of K
  static constexpr int kAtomK = kRowBytes / kElemBytes;   // K elements of one atom (a "K tile")
  static constexpr int kAtoms = kBlockK / kAtomK;         // atoms per stage: 1, or 2 (section 8)
  static constexpr int kKSteps = kRowBytes / 32;          // 32 bytes of K per wgmma
  static constexpr int kAtomBytesA = kBlockM * kRowBytes;
  static constexpr int kAtomBytesB = kBlockN * kRowBytes;
  static constexpr int kTileBytesA = kDqRegA ? 0 : kAtoms * kAtomBytesA;
  static constexpr int kTileBytesB = kAtoms * kAtomBytesB;
  static constexpr int kStageBytes = kTileBytesA + kTileBytesB;
  static constexpr int kCluster = Config::kClusterM;
  static constexpr int kBoxRowsB = kBlockN / kCluster;  // rows of B each CTA of a cluster loads
  // Scales (section 7).
  static constexpr Scale kScaleA = Config::kScaleA;
  static constexpr Scale kScaleB = Config::kScaleB;
  static constexpr ScaleType kScaleTypeA = Config::kScaleTypeA;
  static constexpr ScaleType kScaleTypeB = Config::kScaleTypeB;
  static constexpr bool kRowA = kScaleA == Scale::kRow;             // a_scale[m] in the epilogue
  static constexpr bool kRowB = kScaleB == Scale::kRow;             // b_scale[n] in the epilogue
  static constexpr bool kBlockA = kScaleA == Scale::kBlock1x128;    // sa[m, kb] per K tile
  static constexpr bool kBlockB = kScaleB == Scale::kBlock128x128;  // sb[n / 128, kb] per K tile
  static constexpr bool kBlockScaled = kBlockA || kBlockB;
  // b's block scales per consumer thread: one 128-column block per warpgroup when its columns lie in
  // one (64 or 128 columns starting on a block edge). A 192-column warpgroup (tiles and warpgroups
  // start on multiples of 64) spans exactly two blocks in three 64-column segments: the first lies in
  // the first block, the last in the second, the middle in the first when the warpgroup starts on a
  // block edge and in the second otherwise. The promotion multiplies each segment by its own factor,
  // with no per-element select.
  static constexpr bool kBOneBlock = kWgTileN <= 128 && 128 % kWgTileN == 0;
  // A 256-column warpgroup (section 14) spans two whole blocks: two segments of 128 columns.
  static constexpr int kBSegs = kBlockB && !kBOneBlock ? (kWgTileN == 256 ? 2 : 3) : 1;
  static constexpr int kBBlocks = kBSegs == 1 ? 1 : 2;  // b scales loaded per K block
  static constexpr int kBSegCols = kWgTileN / kBSegs;
  // Promoted block-scaled tiles with one atom per stage may hold 64 x 192 per warpgroup: 96
  // accumulators + 96 partials in the 232 registers of two consumers (section 7).
  static constexpr int kMaxPromotedRegs = kBlockScaled && kAtoms == 1 && kConsumers <= 2 ? 192 : 128;
  // Section 14: block-scaled 64 x 256 warpgroups promote each K tile in two 128-column halves through
  // one half-width partial: 128 accumulators + 64 partials.
  static constexpr bool kHalfPart =
      kPromote && kBlockScaled && kAtoms == 1 && kMmaM == 1 && kWgTileN == 256 && kConsumers <= 2;
  static constexpr int kPartRegs = kHalfPart ? kAccRegs / 2 : kAccRegs;  // partial registers per slab
  // Section 8: block scales staged through shared memory (a producer warp copies them into a slot per
  // stage) where the host says so (Config::kStagedScales, sm90_staged_scales: two-atom stages, three
  // consumer warpgroups, and one-atom tiles whose slots fit beside the ring). The rest keep the
  // per-thread global loads of section 7, which the two-atom and three-consumer mainloops do not have.
  static constexpr bool kStagedScales = kBlockScaled && ConfigStagedScales<Config>::kValue;
  static_assert(!kBlockScaled || kStagedScales || (kAtoms == 1 && kConsumers <= 2),
                "block-scaled two-atom stages and three consumer warpgroups read staged scales only: the "
                "config must set kStagedScales (the emitter does, from sm90_staged_scales)");
  static_assert(
      !kStagedScales || !kBlockB || kWgsN * kBBlocks <= 4,
      "staged b scales: at most 4 words per atom (a word per consumer column and 128-column block)");
  // a: one word per tile row; b: one per consumer column and 128-column block it touches (<= 4)
  static constexpr int kScaleAtomWords = kBlockM + 4;
  static constexpr int kScaleAtomBytes = 4 * kScaleAtomWords;
  // Section 11: MXFP8's E8M0 scales, decoded to f32 by the producer warp into a slot per stage: per
  // k-step (one 32-wide scale block), a's scale of every tile row, then b's of every column, each
  // consumer warpgroup's columns grouped by the thread quad that reads them (kMxColStride floats per
  // quad: kWgTileN / 4 columns + 4 floats so the four quads' runs start in different banks).
  static constexpr int kMxColStride = kWgTileN / 4 + 4;
  static constexpr int kMxStepFloats = kBlockM + kWgsN * 4 * kMxColStride;
  static constexpr int kMxSlotBytes = 4 * kKSteps * kMxStepFloats;
  static constexpr int kScaleSlotBytes = kStagedScales ? kAtoms * kScaleAtomBytes : kMxPromoted ? kMxSlotBytes : 0;
  static constexpr bool kScaleWarp = kStagedScales || kMxPromoted;  // the producer's whole warp 0 walks the ring
  // Epilogue functor (section 4): a generated KilnEpilogue, and interleaved gate|up pairs.
  static constexpr bool kHasFn = ConfigEpilogue<Config>::kHas;
  static constexpr GateUp kGateUp = ConfigEpilogue<Config>::kGateUp;
  static constexpr bool kGlu = kGateUp != GateUp::kNone;
  using Fn = typename ConfigEpilogue<Config>::Fn;
  // Section 12: the TMA-store epilogue. Each consumer warpgroup stages its kWgTileM x kWgTileN output
  // slab in shared memory as TMA boxes of kWgTileM rows x 128 bytes (128-byte swizzle), or narrow boxes.
  static constexpr bool kTmaStore = ConfigTmaStore<Config>::kValue;
  static constexpr int kOutBytes = format_bytes(kOut);
  // Output boxes: 128 bytes of a row (the 128-byte swizzle), or 16 columns unswizzled when the warpgroup's
  // columns are not a whole number of those (e.g. 96, 112, 144, 160, 176, 208 columns with 16-bit outputs).
  static constexpr bool kOutNarrow = kWgTileN % (128 / kOutBytes) != 0;
  static constexpr int kOutBoxCols = kOutNarrow ? 16 : 128 / kOutBytes;
  static constexpr int kOutRowBytes = kOutBoxCols * kOutBytes;
  static constexpr int kOutBoxes = kWgTileN / kOutBoxCols;
  static constexpr int kOutBoxBytes = kWgTileM * kOutRowBytes;
  // tma_store = 2 / 4: the slab goes out in kOutChunks column chunks of kChunkBoxes boxes through a buffer of
  // one chunk (each chunk waits until the previous one's stores have read the buffer), which leaves
  // shared memory for a deeper ring.
  static constexpr int kOutChunks = ConfigOutChunks<Config>::kValue;
  // (Chunks of ceil(kOutBoxes / kOutChunks) boxes; the last may hold fewer, never none: 176 columns are 11
  // boxes of 16, 6 + 5 in two chunks, 3 + 3 + 3 + 2 in four.)
  static constexpr int kChunkBoxes = (kOutBoxes + kOutChunks - 1) / kOutChunks;
  static constexpr int kChunkGroups = kChunkBoxes * kOutBoxCols / 8;  // 8-column accumulator groups per chunk
  static constexpr int kOutWgBytes = kChunkBoxes * kOutBoxBytes;
  static constexpr int kOutTileBytes = kTmaStore ? kConsumers * kOutWgBytes : 0;
  // Section 12 with per-column (n) scales: the tile's column scales, loaded into registers when the tile
  // starts (their latency runs under the mainloop) and written to shared memory when its epilogue starts,
  // where the store loop reads them (instead of two global loads per column pair in the epilogue).
  static constexpr bool kColStage = kTmaStore && kRowB;
  // One slab per consumer warpgroup (warpgroups that share tile columns each keep their own copy: no
  // warpgroup writes where another reads).
  static constexpr int kColWgBytes = 4 * kWgTileN;
  static constexpr int kColScaleBytes = kColStage ? kConsumers * kColWgBytes : 0;
  static constexpr int kColRegs = kColStage ? (kWgTileN + 127) / 128 : 1;
  // Grouped GEMMs (section 9): the per-expert table the walk reads, built once per CTA.
  static constexpr Grouping kGrouping = Config::kGrouping;
  static constexpr bool kGrouped = kGrouping != Grouping::kDense;
  static constexpr int kExperts = kGrouped ? Config::kExperts : 0;
  static constexpr int kGroupTableBytes = 12 * kExperts;  // cluster-tile ends, row bases, rows: int [E] each
  // Split-K (section 10): kSplitK CTAs share one tile's K range; one "last arriver" flag per warpgroup.
  static constexpr int kSplitK = Config::kSplitK;
  static constexpr bool kSplit = kSplitK > 1;
  static constexpr int kSplitFlagBytes = kSplit ? 16 : 0;
  static constexpr int kSplitCounterSlots = 1 << 18;  // compiler/plan/sm90_plan.hpp kSm90SplitCounterSlots
  // Ring, then the scale slots, then full[kStages] and empty[kStages] mbarriers; +1024 so the ring can
  // start on a 1024-byte boundary whatever the dynamic shared-memory base is.
  // Section 13: the FP8 staging ring TMA fills (kDqStg stages of one 128-K atom), each with its
  // decoded scales (4 f32 per tile row / column), and its full / empty mbarriers.
  static constexpr int kDqStg = 2;
  static constexpr int kStgBytesA = kBlockM * 128;
  static constexpr int kStgBytesB = kBlockN * 128;
  static constexpr int kDqScaleBytes = (kBlockM + kBlockN) * 16;
  static constexpr int kDqStgBytes = kDq ? kDqStg * (kStgBytesA + kStgBytesB + kDqScaleBytes) + 16 * kDqStg + 1024 : 0;
  static constexpr int kSmemBytes = kStages * (kStageBytes + kScaleSlotBytes) + 16 * kStages +
                                    kGroupTableBytes + kSplitFlagBytes + kOutTileBytes + kColScaleBytes +
                                    kDqStgBytes + 1024;
  // The register split (setmaxnreg; ptxas allocates each role's code within its count): 1 consumer 40 /
  // 240, 2 consumers 40 / 232 (the two-atom mainloop's 3 x 64 f32 at 64 x 128 fit), 3 consumers 32 / 160.
  // MXFP8 (section 11): the producer's warp also loads and decodes the scales and the consumers hold
  // two partials, 56 / 224 with two consumers (what setmaxnreg.dec frees, (168 - 56) * 128, is exactly
  // the increase, (224 - 168) * 256).
  // Section 13 (dequantizing producer: two warpgroups, 2 consumers; 512 threads, 128 each at launch):
  // 72 / 184 or 64 / 192, whichever ptxas (13.0) compiles without spills; a sweep of every valid tile
  // found no tile that spills with both. 72 / 184 where the producer converts >= 368 rows per stage
  // (block_m + block_n), or >= 320 with two consumer warpgroups along N; 64 / 192 elsewhere (72 / 184
  // spilled the consumers of 128 x 176 ... 128 x 208 and 256 x 64 / 96). The nvrtc tier compiles them all.
  static constexpr bool kDqWideProducer =
      kBlockM + kBlockN >= 368 || (kWgsN == 2 && kBlockM + kBlockN >= 320);
  // Register A: the consumers hold 32 more registers (16 bf16x2 fragments and the staged bytes), so the
  // split is 72 / 184 for 128 accumulators per thread, else 64 / 192 (each of the 38 valid block_k-64
  // tiles compiles without spills and without ptxas performance notes: the nvrtc tier).
  static constexpr bool kDqAcc128 = kMmaM * kAccRegs >= 128;
  static constexpr int kProducerRegs = kDq               ? (kDqRegA ? (kDqAcc128 ? 72 : 64) : kDqWideProducer ? 72 : 64)
                                       : kConsumers == 3 ? 32
                                       : kMxPromoted     ? 56
                                                         : 40;
  static constexpr int kConsumerRegs = kDq               ? (kDqRegA ? (kDqAcc128 ? 184 : 192) : kDqWideProducer ? 184 : 192)
                                       : kConsumers == 3 ? 160
                                       : kConsumers == 1 ? 240
                                       : kMxPromoted     ? 224
                                                         : 232;

  // setmaxnreg.inc takes only registers that setmaxnreg.dec released: from the launch's allocation
  // (__launch_bounds__(kThreads, 1): 168 per thread at 384 threads) the producer must give back at least
  // what the consumers add, or their inc waits forever (seen: 112 / 200 hung on the H200).
  static constexpr int kEntryRegs = (65536 / kThreads > 255 ? 255 : 65536 / kThreads) / 8 * 8;
  static_assert(kConsumerRegs <= kEntryRegs || (kEntryRegs - kProducerRegs) * 128 * kProducerWgs >=
                                                   (kConsumerRegs - kEntryRegs) * 128 * kConsumers,
                "the consumers' setmaxnreg.inc must not exceed what the producer's setmaxnreg.dec frees");
  static_assert(Config::kArch == 90, "sm90_gemm needs sm_90a: wgmma and setmaxnreg exist only there");
#if defined(__CUDA_ARCH__)
  static_assert(__CUDA_ARCH__ == 900, "sm90_gemm compiles for sm_90a only");
#endif
  static_assert((format_is_16bit(kA) && kA == kB) || (format_is_fp8(kA) && format_is_fp8(kB)),
                "operands must be the same 16-bit format, or both FP8 (e4m3/e5m2 in any mix)");
  static_assert(kOut == Format::kBf16 || kOut == Format::kF16 || kOut == Format::kF32,
                "the output is bf16, f16 or f32");
  static_assert(kBlockK % kAtomK == 0 && (kAtoms == 1 || kAtoms == 2),
                "a stage holds one or two 128-byte swizzle atoms of K (64 bf16/f16 or 128 FP8 elements "
                "each): the TMA box's inner extent under CU_TENSOR_MAP_SWIZZLE_128B is at most 128 bytes");
  static_assert(kAtoms == 1 || !kPromote || kMmaM * kAccRegs * 3 <= 192,
                "promoted two-atom stages alternate two partial sets (section 8): accumulators + 2 partials "
                "<= 192 f32 registers (warpgroup tiles of at most 64 x 128)");
  static_assert(!kGlu || (kHasFn && kGateUp == GateUp::kInterleaved),
                "gate_up: interleaved (gate, up) W rows combined by an epilogue functor (stacked halves run on "
                "the portable family)");
  static_assert(kOutChunks == 1 || (kTmaStore && (kOutChunks == 2 || kOutChunks == 4) &&
                                    (kOutChunks - 1) * kChunkBoxes < kOutBoxes),
                "the TMA-store slab goes out whole or in 2 or 4 chunks of whole boxes, none empty");
  static_assert(!kTmaStore || (!kGlu && kWgTileM <= 256 && kWgTileN % kOutBoxCols == 0),
                "the TMA-store epilogue (section 12) takes dense and grouped problems without gate|up");
  static_assert(Config::kWarpsM % 4 == 0, "consumer warps come in warpgroups of 4 stacked along M");
  static_assert(kConsumers >= 1 && kConsumers <= 3,
                "1, 2 or 3 consumer warpgroups (the register split above is sized for those)");
  static_assert(kConsumers != 3 || (kMmaM * kAccRegs <= 64 && kAtoms == 1),
                "3 consumer warpgroups have 160 registers each: warpgroup tiles of at most 64 x 128 (64 "
                "accumulators + 64 promoted partials), one atom per stage");
  static_assert(kBlockM % kWgsM == 0 && kWgTileM % 64 == 0, "each consumer warpgroup owns whole m64 slabs");
  static_assert(kBlockN % kWgsN == 0 &&
                    (kWgTileN == 64 || kWgTileN == 96 || kWgTileN == 112 || kWgTileN == 128 || kWgTileN == 144 ||
                     kWgTileN == 160 || kWgTileN == 176 || kWgTileN == 192 || kWgTileN == 208 || kWgTileN == 256),
                "a consumer warpgroup's N extent is one wgmma N: 64, 96, 112, 128, 144, 160, 176, 192, 208 or 256 "
                "(ptx/wgmma.cuh)");
  static_assert(kBlockM <= 256 && kBlockN <= 256, "a TMA box has at most 256 rows");
  static_assert(kPromote ? kMmaM * (kAccRegs + kPartRegs) <= kMaxPromotedRegs
                         : kMmaM * kAccRegs <= (kPingPong ? 192 : 128),
                "at most 128 f32 accumulator registers per consumer thread (partials included; 192 for "
                "block-scaled one-atom tiles of 1 or 2 consumer warpgroups, and for ping-pong tiles)");
  static_assert(!kPromote || format_is_fp8(kA), "promotion exists for the FP8 accumulator only");
  static_assert(kStages >= 2 && kStages <= 16, "the ring needs 2..16 stages");
  static_assert(kSmemBytes <= 232448, "sm_90 grants at most 227 KB of shared memory per block");
  static_assert(ConfigHostSmem<Config>::kValue < 0 || ConfigHostSmem<Config>::kValue == kSmemBytes,
                "the host's shared-memory size for this config (sm90_smem_bytes) differs from the kernel's "
                "layout: the two mirrors have drifted apart");
  static_assert(kTileBytesA % 1024 == 0 && kTileBytesB % 1024 == 0,
                "every stage's A and B boxes start on 1024-byte boundaries (the swizzle period)");
  static_assert(Config::kGroupM >= 1, "grouped rasterization needs at least one tile row per group");
  static_assert(kSplitK >= 1 && kSplitK <= 64 && (!kSplit || (!kGrouped && kCluster == 1)),
                "split-K takes 1..64 splits, on dense problems without clusters");
  static_assert(!kGrouped || (kExperts >= 1 && kExperts <= 1024),
                "grouped GEMMs take 1..1024 experts (the per-CTA table lives in shared memory)");
  static_assert(kProducerRegs * 128 * kProducerWgs + kConsumerRegs * 128 * kConsumers <= 65536,
                "the producer/consumer register split must fit the 64K-register file");
  static_assert(kCluster == 1 || kCluster == 2, "clusters of 1 or 2 CTAs along M");
  static_assert(!kPingPong ||
                    (kWgsM == 1 && kWgsN == 1 && !kPromote && !kBlockScaled && !kMx && !kSplit && !kGrouped),
                "ping-pong consumers (section 16): warps 4 x 1 (each warpgroup owns the whole tile), "
                "unpromoted accumulation (bf16 / f16, FP8 with tensor or per-row scales), dense, no split-K");
  static_assert((kBoxRowsB * kRowBytes) % 1024 == 0,
                "each CTA's share of the B box starts on a 1024-byte boundary (the swizzle period)");
  static_assert(format_is_fp8(kA) || kDq || (kScaleA == Scale::kNone && kScaleB == Scale::kNone),
                "16-bit operands take no scales");
  static_assert((Config::kA == Format::kMxfp8) == (Config::kB == Format::kMxfp8),
                "mxfp8 pairs with mxfp8 (both E8M0 per 32 along K)");
  static_assert(kMx == (kScaleA == Scale::kBlock1x32) && kMx == (kScaleB == Scale::kBlock1x32) &&
                    (!kMx || (kScaleTypeA == ScaleType::kUe8m0 && kScaleTypeB == ScaleType::kUe8m0)),
                "MXFP8 operands, and only they, take E8M0 scales per 32 along K (block1x32)");
  static_assert(kMx || kScaleA == Scale::kNone || kScaleA == Scale::kTensor || kRowA || kBlockA,
                "a takes tensor, per-row (m) or block1x128 scales");
  static_assert(kMx || kScaleB == Scale::kNone || kScaleB == Scale::kTensor || kRowB || kBlockB,
                "b takes tensor, per-row (n) or block128x128 scales");
  static_assert(kMx || ((kBlockA ? (kScaleTypeA == ScaleType::kF32 || kScaleTypeA == ScaleType::kUe8m0)
                                 : (kScaleA == Scale::kNone || kScaleTypeA == ScaleType::kF32)) &&
                        (kBlockB ? (kScaleTypeB == ScaleType::kF32 || kScaleTypeB == ScaleType::kUe8m0)
                                 : (kScaleB == Scale::kNone || kScaleTypeB == ScaleType::kF32))),
                "block scales are f32 or E8M0 bytes; tensor and per-row scales are f32");
  static_assert(!kMxPromoted || (kPromote && kAtoms == 1 && kMmaM * kAccRegs <= 64 && kConsumers <= 2),
                "MXFP8 promotes every k-step (section 11): one atom per stage, warpgroup tiles of at most 64 "
                "accumulators per thread (accumulators + partial + a k-step's column scales fit 232 "
                "registers), 1 or 2 consumer warpgroups");
  static_assert(
      !kDq || (!kPromote && kAtoms == 1 && kConsumers == 2 && kCluster == 1 && !kSplit &&
               kMmaM * kAccRegs <= 128),
      "MXFP8 with block_k 64 (section 13): the operands are dequantized to bf16 (stages of one 64-K atom); "
      "two consumer warpgroups accumulate unpromoted, no clusters, no split-K");
  static_assert(!kBlockScaled || kPromote,
                "block scales multiply each K tile's partial sum: they need the promoted path");
  static_assert(!kBlockScaled || kAtomK == 128,
                "one K tile (atom) is exactly one 128-wide K block of scales (FP8: 128 elements = 128 bytes)");
  static_assert(!kBlockB || kBOneBlock || (kWgTileN == 192 && kBlockN % 64 == 0 && !kSplit) ||
                    (kHalfPart && kBlockN % 256 == 0 && !kSplit),
                "block128x128 b scales: a consumer warpgroup's columns lie in one 128-column scale block, or "
                "in 64-column segments that each do (192 columns, section 7; not with split-K), or 256 "
                "columns in two whole blocks (section 14; no split-K)");

  struct Smem {
    u32 a;       // A boxes, stage s at a + s * kTileBytesA (atom t of it at + t * kAtomBytesA)
    u32 b;       // B boxes, stage s at b + s * kTileBytesB (atom t of it at + t * kAtomBytesB)
    u32 scales;  // staged block scales (section 8), stage s at scales + s * kScaleSlotBytes
    u32 full;    // mbarrier full[s] at full + 8 * s
    u32 empty;  // mbarrier empty[s] at empty + 8 * s
    u32 groups;  // grouped (section 9): int ct_end[E], row_base[E], rows[E] from here
    u32 flags;   // split-K (section 10): one word per consumer warpgroup
    u32 out;     // TMA-store epilogue (section 12): consumer c's slab at out + c * kOutWgBytes
    u32 colsc;   // kColStage: consumer c's column scales at colsc + c * kColWgBytes, f32 per column
    u32 stg;       // section 13: FP8 staging stage s at stg + s * (kStgBytesA + kStgBytesB) (A, then B)
    u32 stg_sc;    // section 13: stage s's decoded scales at stg_sc + s * kDqScaleBytes (16 bytes per row)
    u32 stg_full;  // section 13: mbarriers stg_full[s] at stg_full + 8 * s, stg_empty[s] at + 8 * kDqStg
  };

  // Split-K (section 10): the walk's unit u is split u % kSplitK of cluster tile u / kSplitK, and a
  // split's K range is a contiguous run of whole stages (atoms [begin, end)).
  struct KRange {
    int begin, end;
  };
  static __device__ __forceinline__ int unit_tile(int u) { return kSplit ? u / kSplitK : u; }
  static __device__ __forceinline__ KRange k_range(int u, int k_tiles) {
    if constexpr (!kSplit) {
      return KRange{0, k_tiles};
    } else {
      const int s = u % kSplitK;
      const int steps = (k_tiles + kAtoms - 1) / kAtoms;
      const int b = int(i64(steps) * s / kSplitK) * kAtoms;
      const int e = int(i64(steps) * (s + 1) / kSplitK) * kAtoms;
      return KRange{b, e < k_tiles ? e : k_tiles};
    }
  }

  // One output tile: rows [row0, min(row0 + kBlockM, row_end)) of Y (global rows: offsets and masked
  // layouts count Y's rows as X's), tile column n, expert e (0 when dense). Rows >= row_end are computed
  // from whatever X holds there (the next expert's rows, or TMA's zero fill) and never stored.
  struct Tile {
    int row0;
    int row_end;
    int n;
    int e;
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

  static __device__ __forceinline__ Walk make_walk(int tiles_m, int tiles_n, const Smem& sm) {
    Walk w;
    w.ctiles_m = (tiles_m + kCluster - 1) / kCluster;
    w.tiles_n = tiles_n;
    if constexpr (kGrouped) {
      w.count = int(lds_u32(sm.groups + 4 * (kExperts - 1)));  // the last expert's cluster-tile end
    } else {
      w.count = w.ctiles_m * tiles_n * kSplitK;  // units: cluster tiles x splits
    }
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

  static __device__ __forceinline__ Tile tile_of(const Walk& w, int ct, const GemmParams& p, const Smem& sm) {
    Tile r;
    if constexpr (kGrouped) {
      // The expert: the first whose cluster-tile end exceeds ct (binary search of the shared table).
      int lo = 0, hi = kExperts - 1;
      while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (int(lds_u32(sm.groups + 4 * mid)) > ct) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      const int before = lo > 0 ? int(lds_u32(sm.groups + 4 * (lo - 1))) : 0;
      const int base = int(lds_u32(sm.groups + 4 * (kExperts + lo)));
      const int rows = int(lds_u32(sm.groups + 4 * (2 * kExperts + lo)));
      const int ctiles_m = ((rows + kBlockM - 1) / kBlockM + kCluster - 1) / kCluster;
      const TileCoord t = grouped_tile(ct - before, ctiles_m, w.tiles_n, Config::kGroupM);
      r.row0 = base + (t.m * kCluster + w.rank) * kBlockM;
      r.row_end = base + rows;
      r.n = t.n;
      r.e = lo;
    } else {
      const TileCoord t = grouped_tile(ct, w.ctiles_m, w.tiles_n, Config::kGroupM);
      r.row0 = (t.m * kCluster + w.rank) * kBlockM;
      r.row_end = p.m;
      r.n = t.n;
      r.e = 0;
    }
    return r;
  }

  // Section 9: the per-expert table, built by warp 0 before the CTA's first barrier. Per expert: the
  // end of its cluster tiles in the walk (an inclusive prefix sum of ceil(ceil(rows / kBlockM) /
  // kCluster) * tiles_n), its first row of X / Y and its row count. Offsets are sanitized as the
  // portable family does (scheduler/group_tile.cuh): ends clamped to [0, M] and made non-decreasing,
  // so a malformed tensor gives empty or shortened groups, never an access outside X, Y or W; masked
  // counts are clamped to [0, max_m].
  static __device__ __forceinline__ void build_groups(const GemmParams& p, const Smem& sm, int tiles_n, int lane) {
    int tiles_before = 0, end_before = 0;
    for (int e0 = 0; e0 < kExperts; e0 += 32) {
      const int e = e0 + lane;
      int start = 0, rows = 0;
      if constexpr (kGrouping == Grouping::kOffsets) {
        int end = e < kExperts ? clamp_int(ldg_s32(p.group_rows + e), 0, p.m) : 0;
        if (end < end_before) end = end_before;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
          const int o = shfl_up(end, d);
          if (lane >= d && o > end) end = o;
        }
        start = shfl_up(end, 1);
        if (lane == 0) start = end_before;
        rows = end - start;
        end_before = shfl_idx(end, 31);
      } else {
        start = e * p.max_m;
        rows = e < kExperts ? clamp_int(ldg_s32(p.group_rows + e), 0, p.max_m) : 0;
      }
      const int ctiles = ((rows + kBlockM - 1) / kBlockM + kCluster - 1) / kCluster * tiles_n;
      int incl = ctiles;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const int o = shfl_up(incl, d);
        if (lane >= d) incl += o;
      }
      if (e < kExperts) {
        sts_u32(sm.groups + 4 * e, u32(tiles_before + incl));
        sts_u32(sm.groups + 4 * (kExperts + e), u32(start));
        sts_u32(sm.groups + 4 * (2 * kExperts + e), u32(rows));
      }
      tiles_before += shfl_idx(incl, 31);
    }
  }

  // b's scale tensor of the tile's expert (grouped: b_scale_expert_stride scale elements apart).
  template <ScaleType kType>
  static __device__ __forceinline__ const float* b_scale_of(const GemmParams& p, int e) {
    if constexpr (!kGrouped) return p.b_scale;
    return reinterpret_cast<const float*>(reinterpret_cast<const u8*>(p.b_scale) +
                                          i64(e) * p.b_scale_expert_stride * (kType == ScaleType::kF32 ? 4 : 1));
  }

  // ---- producer ---------------------------------------------------------------------------------

  // rows_a = M, rows_b = N: a box that would start past the tensor (the second CTA of a cluster whose
  // tile row or B half lies wholly past M or N) starts at the last row instead. Its rows feed only
  // outputs that are never stored, so any data will do, and no copy depends on how TMA treats a box
  // entirely out of bounds.
  // Run by thread 0 alone, or with staged block scales (section 8) by its whole warp: lane 0 issues the
  // TMA copies and every lane copies its share of the stage's scales (stage_scale_copies) and arrives
  // on full[s].
  static __device__ __forceinline__ void produce(const TmaDesc* tma_a, const TmaDesc* tma_b, const Smem& sm,
                                                 const Walk& w, int k_tiles, const GemmParams& p, int lane) {
    const bool async = scales_async(p, k_tiles);
    const int k_blocks = p.k <= 0 ? 0 : (p.k + 31) / 32;  // MXFP8: scale blocks along K
    const bool mx_aligned = kMxPromoted && mx_words_aligned(p);
    int stage = 0;
    u32 phase = 0;
    for (int u = w.first; u < w.count; u += w.step) {
      const Tile tile = tile_of(w, unit_tile(u), p, sm);
      const KRange kr = k_range(u, k_tiles);
      const int first_a = tile.row0;
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
              const int k0 = (kt + t) * kAtomK;
              tma_load_2d(sm.a + stage * kTileBytesA + t * kAtomBytesA, tma_a, k0, row_a, full);
              const u32 dst_b = sm.b + stage * kTileBytesB + t * kAtomBytesB + w.rank * kBoxRowsB * kRowBytes;
              if constexpr (kGrouped && kCluster == 1) {
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

  // ---- section 13: the dequantizing producer (MXFP8, block_k 64) ---------------------------------

  // Warp 0 of the producer warpgroup stages: per 128-K atom (a staging position) of each tile, the E8M0
  // words of the tile's rows and columns (loaded before waiting for the slot, like section 11's) decoded
  // to 4 f32 per row / column, and lane 0's two TMA boxes (A, B) of e4m3; then 32 arrivals (releases of
  // the scale stores) + the TMA bytes complete stg_full[s]. This warp issues no proxy fence, so its
  // global loads are never waited for by one.
  static __device__ __forceinline__ void dq_stage(const TmaDesc* tma_a, const TmaDesc* tma_b, const Smem& sm,
                                                  const Walk& w, const GemmParams& p, int lane) {
    const int k8 = p.k <= 0 ? 0 : (p.k + 127) / 128;
    const int k_blocks = p.k <= 0 ? 0 : (p.k + 31) / 32;
    const bool aligned = mx_words_aligned(p);
    int s = 0;
    u32 phase = 0;
    for (int u = w.first; u < w.count; u += w.step) {
      const Tile tile = tile_of(w, unit_tile(u), p, sm);
      const int first_b = tile.n * kBlockN;
      const int row_a = tile.row0 < p.m ? tile.row0 : p.m - 1;
      const int row_b = first_b < p.n ? first_b : p.n - 1;
      for (int kt8 = 0; kt8 < k8; ++kt8) {
        const MxWords words = mx_load(p, tile, kt8, k_blocks, aligned, lane);
        mbar_wait(sm.stg_full + 8 * (kDqStg + s), phase ^ 1);  // stg_empty[s]
        const u32 full = sm.stg_full + 8 * s;
        const u32 a_dst = sm.stg + u32(s * (kStgBytesA + kStgBytesB));
        if (lane == 0) {
          mbar_arrive_expect_tx(full, u32(kStgBytesA + kStgBytesB));
          tma_load_2d(a_dst, tma_a, kt8 * 128, row_a, full);
          if constexpr (kGrouped) {
            tma_load_3d(a_dst + kStgBytesA, tma_b, kt8 * 128, row_b, tile.e, full);
          } else {
            tma_load_2d(a_dst + kStgBytesA, tma_b, kt8 * 128, row_b, full);
          }
        }
        const u32 slot = sm.stg_sc + u32(s * kDqScaleBytes);
#pragma unroll
        for (int i = 0; i < kMxRowsA; ++i) {
          const u32 x = words.a[i];
          sts_128(slot + 16u * u32(32 * i + lane), bits_from_f32(decode_e8m0(x & 0xFFu)),
                  bits_from_f32(decode_e8m0((x >> 8) & 0xFFu)), bits_from_f32(decode_e8m0((x >> 16) & 0xFFu)),
                  bits_from_f32(decode_e8m0(x >> 24)));
        }
#pragma unroll
        for (int i = 0; i < kMxColsB; ++i) {
          const int c = 32 * i + lane;
          if (kBlockN % 32 != 0 && c >= kBlockN) break;
          const u32 x = words.b[i];
          sts_128(slot + 16u * u32(kBlockM + c), bits_from_f32(decode_e8m0(x & 0xFFu)),
                  bits_from_f32(decode_e8m0((x >> 8) & 0xFFu)), bits_from_f32(decode_e8m0((x >> 16) & 0xFFu)),
                  bits_from_f32(decode_e8m0(x >> 24)));
        }
        mbar_arrive(full);  // release: the decoded scales are visible to whoever waits on stg_full[s]
        if (++s == kDqStg) {
          s = 0;
          phase ^= 1;
        }
      }
    }
  }

  // 16 e4m3 (w) times f (a power of two) -> 16 bf16 (o, in K order), exactly: e4m3 -> f16 (hardware,
  // Inf/NaN included) -> f32, one f32 product, bf16 rounding of a value with 4 significant bits (exact
  // unless it leaves f32's range, like the reference's product).
  static __device__ __forceinline__ void dq_convert(const u32 (&w)[4], float f, u32 (&o)[8]) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      u32 lo, hi;
      fp8x4_to_f16x4<Format::kE4m3>(w[j], lo, hi);
      float x0, x1, x2, x3;
      f16x2_to_f32x2(lo, x0, x1);
      f16x2_to_f32x2(hi, x2, x3);
      o[2 * j] = cvt_pack_bf16x2(x0 * f, x1 * f);
      o[2 * j + 1] = cvt_pack_bf16x2(x2 * f, x3 * f);
    }
  }

  // Warps 1-7 of the two producer warpgroups (ct = 0..223) convert. Each staging position (128 K) gives two
  // bf16 stages (64 K each; a second one past K is skipped, as the consumers count ceil(K / 64)). Thread ct
  // converts 16-byte chunk c = ct % 4 of its half of every tile row r = 8 (ct / 32) + rho + 56 i, where
  // rho = ((ct % 32) / 8) ^ 5 ((ct / 4) % 2) is r % 8: the two rows a quarter-warp touches differ in bits 0
  // and 2 of r % 8, so the 16-byte reads of the staged atom (chunk (4h + c) ^ rho) and the two 16-byte
  // writes of the bf16 row (chunks (2c) ^ rho, (2c + 1) ^ rho) both land in 8 distinct chunks. Per bf16
  // stage: wait empty[s], convert, fence.proxy.async (its MEMBAR waits only for shared-memory accesses:
  // this thread issues no global load), arrive on full[s] (kDqConvThreads arrivals); after both halves
  // each warp releases the staging slot (every lane). Seven warps (ct = 0..223) cover 56 rows per pass.
  static constexpr int kDqConvThreads = 128 * kProducerWgs - 32;  // every producer warp but warp 0
  static constexpr int kDqRowsPerPass = kDqConvThreads / 4;       // 8 rows per converting warp
  static constexpr int kDqRows = kDqRegA ? kBlockN : kBlockM + kBlockN;  // the rows the producer converts
  static constexpr int kDqRowSteps = (kDqRows + kDqRowsPerPass - 1) / kDqRowsPerPass;
  static __device__ __forceinline__ void dq_convert_walk(const GemmParams& p, const Smem& sm, const Walk& w,
                                                         int k_tiles, int ct) {
    const int l = ct & 31, c = l & 3;
    const int rho = (l >> 3) ^ (((l >> 2) & 1) * 5);
    const int r0 = 8 * (ct >> 5) + rho;
    const int k8 = p.k <= 0 ? 0 : (p.k + 127) / 128;
    int s8 = 0, stage = 0;
    u32 ph8 = 0, phase = 0;
    for (int u = w.first; u < w.count; u += w.step) {
      for (int kt8 = 0; kt8 < k8; ++kt8) {
        mbar_wait(sm.stg_full + 8 * s8, ph8);
        const u32 stg = sm.stg + u32(s8 * (kStgBytesA + kStgBytesB));
        const u32 slot = sm.stg_sc + u32(s8 * kDqScaleBytes);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if (2 * kt8 + h >= k_tiles) break;
          mbar_wait(sm.empty + 8 * stage, phase ^ 1);
          const u32 a_st = sm.a + u32(stage * kTileBytesA);
          const u32 b_st = sm.b + u32(stage * kTileBytesB);
#pragma unroll 4
          for (int i = 0; i < kDqRowSteps; ++i) {
            const int ri = r0 + kDqRowsPerPass * i;
            if (kDqRows % kDqRowsPerPass != 0 && ri >= kDqRows) break;
            const int r = kDqRegA ? kBlockM + ri : ri;  // the row in the scale slot: A's rows first
            const bool is_a = r < kBlockM;
            const int rr = is_a ? r : r - kBlockM;
            const u32 src = (is_a ? stg : stg + kStgBytesA) + u32(rr * 128);
            u32 wv[4];
            lds_128(wv, src + (u32((4 * h + c) ^ rho) << 4));
            const float f = f32_from_bits(lds_u32(slot + 16u * u32(r) + 4u * u32(2 * h + (c >> 1))));
            u32 o[8];
            dq_convert(wv, f, o);
            const u32 dst = (is_a ? a_st : b_st) + u32(rr * 128);
            if constexpr (kDqRegA) {
              // K permuted within the 64-K stage (the consumers' A fragments come in the same order):
              // physical k = 16 c + 4 s + m goes to logical k16 step s at j = 2 c + m (m < 2) or
              // 8 + 2 c + m - 2: bytes 32 s + 4 c (chunk 2 s) and 32 s + 16 + 4 c (chunk 2 s + 1).
#pragma unroll
              for (int st = 0; st < 4; ++st) {
                sts_u32(dst + (u32((2 * st) ^ rho) << 4) + 4u * u32(c), o[2 * st]);
                sts_u32(dst + (u32((2 * st + 1) ^ rho) << 4) + 4u * u32(c), o[2 * st + 1]);
              }
            } else {
              sts_128(dst + (u32((2 * c) ^ rho) << 4), o[0], o[1], o[2], o[3]);
              sts_128(dst + (u32((2 * c + 1) ^ rho) << 4), o[4], o[5], o[6], o[7]);
            }
          }
          fence_proxy_async_shared();  // this thread's stores, visible to the wgmmas that read the stage
          mbar_arrive(sm.full + 8 * stage);
          if (++stage == kStages) {
            stage = 0;
            phase ^= 1;
          }
        }
        // Every lane releases its own reads of the staging slot (kDqConvThreads arrivals): a lane-0
        // release after __syncwarp is as correct, but racecheck does not follow it (84 reports on the
        // H200, session 9).
        mbar_arrive(sm.stg_full + 8 * (kDqStg + s8));  // stg_empty[s8]
        if (++s8 == kDqStg) {
          s8 = 0;
          ph8 ^= 1;
        }
      }
    }
  }

  // ---- staged block scales (section 8) ----------------------------------------------------------

  // The scale rows one producer lane copies for a tile: a's tile rows lane, lane + 32, ... (clamped to
  // M - 1) and, on lanes j < kWgsN * kBBlocks, b's 128-column block g = j % kBBlocks of consumer column
  // j / kBBlocks (the block of its column 0 or 128, clamped to N - 1).
  static constexpr int kScaleRowsPerLane = kBlockM / 32;
  struct ScaleSrc {
    int a[kScaleRowsPerLane];
    int b;
    const float* b_base;  // b's scales of the tile's expert
  };

  static __device__ __forceinline__ ScaleSrc scale_sources(const GemmParams& p, const Tile& tile, int lane) {
    ScaleSrc r;
#pragma unroll
    for (int i = 0; i < kScaleRowsPerLane; ++i) {
      const int row = tile.row0 + 32 * i + lane;
      r.a[i] = row < tile.row_end ? row : (tile.row_end > 0 ? tile.row_end - 1 : 0);
    }
    // Word j = lane < kWgsN * kBBlocks: block g = j % kBBlocks of consumer column j / kBBlocks (the block of
    // its column 0 or column 128, as ScaleRows::b / b1 clamp them).
    const int j = lane < kWgsN * kBBlocks ? lane : 0;
    const int col = tile.n * kBlockN + (j / kBBlocks) * kWgTileN + (j % kBBlocks) * 128;
    r.b = (col < p.n ? col : p.n - 1) / 128;
    r.b_base = b_scale_of<kScaleTypeB>(p, tile.e);
    return r;
  }

  // Whether every staged scale can be copied as an aligned 4-byte word with cp.async: f32 always (the
  // runtime checks 4-byte alignment); E8M0 bytes when the tensor's base, row stride and row length
  // (k_tiles blocks) are multiples of 4, so the word holding a byte never reaches past the tensor.
  static __device__ __forceinline__ bool scales_async(const GemmParams& p, int k_tiles) {
    bool async = true;
    if constexpr (kBlockA && kScaleTypeA == ScaleType::kUe8m0)
      async = async && ((reinterpret_cast<u64>(p.a_scale) | u64(p.lds_a) | u64(k_tiles)) & 3) == 0;
    if constexpr (kBlockB && kScaleTypeB == ScaleType::kUe8m0)
      async = async && ((reinterpret_cast<u64>(p.b_scale) | u64(p.lds_b) | u64(k_tiles) |
                         u64(kGrouped ? p.b_scale_expert_stride : 0)) & 3) == 0;
    return async;
  }

  // Scale elements (row, kb .. kb + n - 1) of a 2-D scale tensor (row stride lds elements) into the shared
  // word `dst`. f32: element kb itself (n = 1). E8M0: the aligned 4-byte word holding bytes kb .. kb + n -
  // 1 (async; the caller keeps them in one word), or those bytes shifted to their places in that word
  // (sync: ld + st.shared), so the consumers decode both the same way (byte kb % 4).
  template <ScaleType kType>
  static __device__ __forceinline__ void copy_scale(u32 dst, const float* base, int row, long long lds,
                                                    int kb, int n, bool async) {
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
  // (scale_sources' lane j = kBBlocks * c + g). E8M0 scales keep a stage's
  // blocks in the word of atom 0 (kt is even when kAtoms = 2: blocks kt, kt + 1 share an aligned word).
  // f32 a-scales of a whole two-atom stage are one 8-byte copy per row where the tensor allows it: with
  // one 4-byte copy per row and atom, the copies' L1 requests cost the 128 x 128 block kernel ~9% at M =
  // 4096 (bench/NOTES.md session 12). The caller then arrives on full[s] from every lane (full counts 1 +
  // 32 arrivals): cp.async.mbarrier.arrive.noinc once the lane's copies land, or a plain arrive (release)
  // after the synchronous stores.
  static __device__ __forceinline__ void stage_scale_copies(const GemmParams& p, u32 slot, const ScaleSrc& src,
                                                            int kt, int k_end, bool async, int lane) {
    const int n = k_end - kt < kAtoms ? k_end - kt : kAtoms;  // K blocks in this stage
    if constexpr (kBlockA && kScaleTypeA == ScaleType::kUe8m0) {
#pragma unroll
      for (int i = 0; i < kScaleRowsPerLane; ++i)
        copy_scale<kScaleTypeA>(slot + 4 * kAtoms * (32 * i + lane), p.a_scale, src.a[i], p.lds_a, kt, n,
                                async);
    } else if constexpr (kBlockA) {
      if (kAtoms == 2 && n == 2 && async &&
          ((reinterpret_cast<u64>(p.a_scale) | u64(p.lds_a) * 4) & 7) == 0) {
#pragma unroll
        for (int i = 0; i < kScaleRowsPerLane; ++i)
          cp_async_8(slot + 8 * (32 * i + lane), p.a_scale + i64(src.a[i]) * p.lds_a + kt);
      } else {
#pragma unroll
        for (int t = 0; t < kAtoms; ++t) {
          if (t < n) {
#pragma unroll
            for (int i = 0; i < kScaleRowsPerLane; ++i)
              copy_scale<kScaleTypeA>(slot + 4 * (kAtoms * (32 * i + lane) + t), p.a_scale, src.a[i], p.lds_a,
                                      kt + t, 1, async);
          }
        }
      }
    }
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

  // ---- MXFP8 scales (section 11) -----------------------------------------------------------------

  // One K atom's scale words (4 E8M0 bytes: k-steps 0..3) of the rows one producer lane stages: a's tile
  // rows lane, lane + 32, ... (clamped to the last valid row) and b's tile columns lane, lane + 32, ...
  // (clamped to N - 1; a tile width that is not a multiple of 32 leaves the last run's upper lanes
  // loading a clamped column they do not store). The row addresses are recomputed per stage to keep the producer's registers few.
  static constexpr int kMxRowsA = kBlockM / 32;
  static constexpr int kMxColsB = (kBlockN + 31) / 32;  // N tiles of 112, 144, ...: a partial last run
  struct MxWords {
    u32 a[kMxRowsA];
    u32 b[kMxColsB];
  };

  // Whether an atom's 4 scale bytes can be loaded as one aligned word: the tensors' bases, row strides
  // (and the experts' stride) are multiples of 4.
  static __device__ __forceinline__ bool mx_words_aligned(const GemmParams& p) {
    return ((reinterpret_cast<u64>(p.a_scale) | reinterpret_cast<u64>(p.b_scale) | u64(p.lds_a) | u64(p.lds_b) |
             u64(kGrouped ? p.b_scale_expert_stride : 0)) & 3) == 0;
  }

  // Bytes 4 kt .. 4 kt + 3 of a scale row (k-step j in byte j): one aligned word, or (unaligned
  // tensors, and a partial last atom: K % 128 != 0) byte by byte, blocks past K reading 127 = 1.0 (their
  // k-steps' partial sums are TMA's zeros, so they add nothing).
  static __device__ __forceinline__ u32 mx_word_bytes(const u8* row, int kb, int k_blocks) {
    u32 w = 0;
#pragma unroll 1
    for (int j = 0; j < 4; ++j) w |= (kb + j < k_blocks ? ldg_u8(row + kb + j) : 127u) << (8 * j);
    return w;
  }

  // Row r of a's scales (clamped to the tile's last valid row) and column c of b's (clamped to N - 1).
  static __device__ __forceinline__ const u8* mx_row_a(const GemmParams& p, const Tile& tile, int r) {
    const int row = tile.row0 + r;
    const int last = tile.row_end > 0 ? tile.row_end - 1 : 0;
    return reinterpret_cast<const u8*>(p.a_scale) + i64(row < tile.row_end ? row : last) * p.lds_a;
  }
  static __device__ __forceinline__ const u8* mx_row_b(const GemmParams& p, const Tile& tile, int c) {
    const int col = tile.n * kBlockN + c;
    return reinterpret_cast<const u8*>(b_scale_of<ScaleType::kUe8m0>(p, tile.e)) + i64(col < p.n ? col : p.n - 1) * p.lds_b;
  }

  static __device__ __forceinline__ MxWords mx_load(const GemmParams& p, const Tile& tile, int kt, int k_blocks,
                                                    bool aligned, int lane) {
    MxWords w;
    const int kb = 4 * kt;
    if (aligned && kb + 4 <= k_blocks) {  // uniform across the warp
#pragma unroll
      for (int i = 0; i < kMxRowsA; ++i) w.a[i] = ldg_u32(mx_row_a(p, tile, 32 * i + lane) + kb);
#pragma unroll
      for (int i = 0; i < kMxColsB; ++i) w.b[i] = ldg_u32(mx_row_b(p, tile, 32 * i + lane) + kb);
    } else {
#pragma unroll
      for (int i = 0; i < kMxRowsA; ++i) w.a[i] = mx_word_bytes(mx_row_a(p, tile, 32 * i + lane), kb, k_blocks);
#pragma unroll
      for (int i = 0; i < kMxColsB; ++i) w.b[i] = mx_word_bytes(mx_row_b(p, tile, 32 * i + lane), kb, k_blocks);
    }
    return w;
  }

  // Decodes the words exactly (dequant/block_scale.cuh: 0 -> 2^-127, 0xFF -> NaN) into the stage's slot:
  // k-step j's floats at slot + 4 * j * kMxStepFloats, a's row r at + r, b's column c (of consumer
  // column wg = c / kWgTileN, local c' = c % kWgTileN) in the run of the thread quad t = (c' % 8) / 2
  // that holds it in its accumulators, at + kBlockM + (4 * wg + t) * kMxColStride + 2 * (c' / 8) + c' % 2.
  static __device__ __forceinline__ void mx_store(u32 slot, const MxWords& w, int lane) {
#pragma unroll
    for (int j = 0; j < kKSteps; ++j) {
      const u32 step = slot + 4 * j * kMxStepFloats;
#pragma unroll
      for (int i = 0; i < kMxRowsA; ++i) sts_u32(step + 4 * (32 * i + lane), bits_from_f32(decode_e8m0(w.a[i] >> (8 * j))));
#pragma unroll
      for (int i = 0; i < kMxColsB; ++i) {
        const int c = 32 * i + lane;
        if (kBlockN % 32 != 0 && c >= kBlockN) break;  // the last run's lanes past the tile (i is the last)
        const int wg = c / kWgTileN, cl = c % kWgTileN;
        const int pos = kBlockM + (4 * wg + ((cl & 7) >> 1)) * kMxColStride + 2 * (cl >> 3) + (cl & 1);
        sts_u32(step + 4 * pos, bits_from_f32(decode_e8m0(w.b[i] >> (8 * j))));
      }
    }
  }

  // ---- consumers --------------------------------------------------------------------------------

  // Releases stage s to the producers: one arrival per warp on the empty[s] of every CTA of the
  // cluster (empty[s] counts 4 * kStageReaders * kCluster). The other lanes' reads of a staged-scale slot
  // reach the producer's next write through __syncwarp (bar.warp.sync orders memory among the warp)
  // and lane 0's release: correct under the PTX memory model, but compute-sanitizer's racecheck does
  // not follow that chain and reports write-after-read hazards on the slots wherever the ring wraps.
  // With every lane arriving (empty[s] counting 128 per warpgroup) racecheck is clean on the same cases,
  // and the default block kernel 2-4% slower (H200, bench/NOTES.md session 8), so lane 0 it stays.
  static __device__ __forceinline__ void release(const Smem& sm, int s, int lane) {
    __syncwarp();  // every lane's reads of the stage (wgmma waits, staged scales) precede lane 0's arrive
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
  // d holds the warpgroup's columns (kRegs = kAccRegs), or a half of them (section 14: kRegs = kPartRegs,
  // b_base at the half's first B row).
  template <int kRegs>
  static __device__ __forceinline__ void mma_tile(float (&d)[kMmaM][kRegs], u32 a_base, u32 b_base,
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
        if constexpr (2 * kRegs >= 208 && kEntryRegs < 160) {
          // 512 threads (section 13's two producer warpgroups): ptxas gives no single instruction more
          // than the launch's 128 registers, and an m64n256 (m64n208) wgmma needs 154 (130), so it runs
          // as two: n128 + n128 (n112 + n96), the second on B rows 128 (112) onwards.
          constexpr int kN1 = 2 * kRegs == 256 ? 128 : 112;
          constexpr int kN2 = 2 * kRegs - kN1;
          const u32 sd = (first && ks == 0) ? 0u : 1u;
          wgmma_m64<kN1, kA, kB>(*reinterpret_cast<float(*)[kN1 / 2]>(&d[mi][0]), da, db, sd);
          wgmma_m64<kN2, kA, kB>(*reinterpret_cast<float(*)[kN2 / 2]>(&d[mi][kN1 / 2]), da,
                                 db + u64((kN1 * kRowBytes) >> 4), sd);
        } else {
          wgmma_m64<2 * kRegs, kA, kB>(d[mi], da, db, (first && ks == 0) ? 0u : 1u);
        }
      }
    }
  }

  // Section 16: moves a consumer's ring position n stages on (n may be several laps).
  static __device__ __forceinline__ void skip_stages(int n, int& stage, u32& phase) {
    const int t = stage + n;
    phase ^= u32((t / kStages) & 1);
    stage = t % kStages;
  }

  template <int kRegs>
  static __device__ __forceinline__ void fence_all(float (&d)[kMmaM][kRegs]) {
#pragma unroll
    for (int mi = 0; mi < kMmaM; ++mi) wgmma_fence_operands(d[mi]);
  }

  // Two adjacent outputs (row, col), (row, col + 1); col + 1 may be >= n.
  static __device__ __forceinline__ void store_pair(const GemmParams& p, bool paired_ok, int row, int col,
                                                    float v0, float v1) {
    store_out_pair<kOut>(p.out, p.ldc, p.n, paired_ok, row, col, v0, v1);
  }

  // ---- scales (section 7) -----------------------------------------------------------------------

  // The scale rows one consumer thread reads for a tile: the X rows of its accumulators (row g and
  // g + 8 of each m64 slab, clamped to M - 1) and the 128-column block of W its warpgroup's columns
  // lie in (the first column clamped to N - 1, over 128).
  struct ScaleRows {
    int a[kMmaM][2];
    int b;      // the 128-column block of the warpgroup's first column (clamped to N - 1)
    int b1;     // 192 / 256-column warpgroups: the block of its column 128 (clamped): the last segment / half
    bool mid1;  // 192-column warpgroups: whether the middle segment lies in block b1 (a mid-block start)
    const float* b_base;  // b's block scales of the tile's expert
  };
  // One K block's block scales for this thread (unused members stay unread): b of each block the
  // warpgroup's columns touch.
  struct BlockScales {
    float a[kMmaM][2];
    float b[kBBlocks];
  };

  static __device__ __forceinline__ ScaleRows scale_rows(const GemmParams& p, const Tile& tile, int wg_m,
                                                         int wg_n, int warp, int lane) {
    ScaleRows r;
    const int row0 = tile.row0 + wg_m * kWgTileM + warp * 16 + (lane >> 2);
    const int last = tile.row_end > 0 ? tile.row_end - 1 : 0;
#pragma unroll
    for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = row0 + mi * 64 + h * 8;
        r.a[mi][h] = row < tile.row_end ? row : last;
      }
    }
    const int col = tile.n * kBlockN + wg_n * kWgTileN;
    r.b = (col < p.n ? col : p.n - 1) / 128;
    r.b1 = (col + 128 < p.n ? col + 128 : p.n - 1) / 128;
    r.mid1 = col % 128 != 0;
    r.b_base = b_scale_of<kScaleTypeB>(p, tile.e);
    return r;
  }

  // Element kb of row `row` of a 2-D scale tensor (row stride lds scale elements), as f32.
  template <ScaleType kType>
  static __device__ __forceinline__ float block_scale(const float* base, int row, long long lds, int kb) {
    const u8* r = reinterpret_cast<const u8*>(base) + i64(row) * lds * (kType == ScaleType::kF32 ? 4 : 1);
    return load_scale_f32<kType>(r, kb);
  }

  static __device__ __forceinline__ void load_block_scales(const GemmParams& p, const ScaleRows& r, int kb,
                                                           BlockScales& s) {
    if constexpr (kBlockA) {
#pragma unroll
      for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
        for (int h = 0; h < 2; ++h) s.a[mi][h] = block_scale<kScaleTypeA>(p.a_scale, r.a[mi][h], p.lds_a, kb);
      }
    }
    if constexpr (kBlockB) {
      s.b[0] = block_scale<kScaleTypeB>(r.b_base, r.b, p.lds_b, kb);
      if constexpr (kBBlocks == 2) s.b[1] = block_scale<kScaleTypeB>(r.b_base, r.b1, p.lds_b, kb);
    }
  }

  // A staged scale word (section 8) as f32: f32 bits, or byte kb % 4 of an E8M0 word.
  template <ScaleType kType>
  static __device__ __forceinline__ float staged_scale(u32 word, int kb) {
    if constexpr (kType == ScaleType::kF32) {
      return f32_from_bits(word);
    } else {
      return decode_e8m0(word >> (8 * (kb & 3)));
    }
  }

  // This thread's block scales of atom t (K block kb) of the stage whose scale slot is at `slot`: the
  // words of its accumulator rows (rows g, g + 8 of each m64 slab: 8 distinct words per warp, the rest
  // broadcast) and of its warpgroup column. Read after full[s] completed, before the stage is released.
  static __device__ __forceinline__ BlockScales staged_block_scales(u32 slot, int t, int kb, int wg_m, int wg_n,
                                                                    int warp, int lane) {
    BlockScales s{};
    const int ta = kScaleTypeA == ScaleType::kUe8m0 ? 0 : t;  // E8M0: the stage's blocks share atom 0's word
    const int tb = kScaleTypeB == ScaleType::kUe8m0 ? 0 : t;
    if constexpr (kBlockA) {
      const int row0 = wg_m * kWgTileM + warp * 16 + (lane >> 2);
#pragma unroll
      for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
        for (int h = 0; h < 2; ++h)
          s.a[mi][h] =
              staged_scale<kScaleTypeA>(lds_u32(slot + 4 * (kAtoms * (row0 + mi * 64 + h * 8) + ta)), kb);
      }
    }
    if constexpr (kBlockB) {
#pragma unroll
      for (int g = 0; g < kBBlocks; ++g)
        s.b[g] = staged_scale<kScaleTypeB>(
            lds_u32(slot + 4 * (kAtoms * kBlockM + 4 * tb + kBBlocks * wg_n + g)), kb);
    }
    return s;
  }

  // acc = fma(part, sa * sb, acc) for block scales (the reference's order: one f32 product of the
  // two scales, one fma.rn); acc += part otherwise. Register i of slab mi is row half (i / 2) % 2.
  // 192-column warpgroups (kBSegs 3): mid1 says whether the middle segment takes b[1] (ScaleRows::mid1).
  // A partial of kRegs < kAccRegs registers (section 14's halves) holds the columns from accumulator
  // register `off` on (off = 64 h for half h: partial register i is accumulator register off + i).
  template <int kRegs>
  static __device__ __forceinline__ void promote(float (&acc)[kMmaM][kAccRegs],
                                                 const float (&part)[kMmaM][kRegs], const BlockScales& s,
                                                 bool mid1 = false, int off = 0) {
#pragma unroll
    for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float fb[kBBlocks];
#pragma unroll
        for (int g = 0; g < kBBlocks; ++g) {
          if constexpr (kBlockA && kBlockB) {
            fb[g] = s.a[mi][h] * s.b[g];
          } else if constexpr (kBlockA) {
            fb[g] = s.a[mi][h];
          } else if constexpr (kBlockB) {
            fb[g] = s.b[g];
          } else {
            fb[g] = 1.0f;
          }
        }
        float f[kBSegs];
        if constexpr (kBSegs == 1) {
          f[0] = fb[0];
        } else if constexpr (kBSegs == 2) {
          f[0] = fb[0];
          f[1] = fb[kBBlocks - 1];
        } else {
          f[0] = fb[0];
          f[1] = mid1 ? fb[kBBlocks - 1] : fb[0];
          f[2] = fb[kBBlocks - 1];
        }
#pragma unroll
        for (int j = 0; j < kRegs / 4; ++j) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int i = 4 * j + 2 * h + e;
            // Accumulator group off / 4 + j covers the warpgroup's columns 8 (off / 4 + j) .. + 7: segment
            // 8 (off / 4 + j) / kBSegCols.
            if constexpr (kBlockScaled) {
              acc[mi][off + i] = fma_rn(part[mi][i], f[(8 * (off / 4 + j)) / kBSegCols], acc[mi][off + i]);
            } else {
              acc[mi][off + i] += part[mi][i];
            }
          }
        }
      }
    }
  }

  // Section 8: one tile's mainloop over stages of two atoms, with two partial sets so that the
  // promotion of atom 0's partial runs while atom 1's wgmmas are in flight:
  //   per stage:  issue atom 0 -> p0, atom 1 -> p1 | wait_group 1: atom 0 done -> promote p0
  //               wait_group 0: atom 1 done -> release the stage, promote p1
  // (an odd atom count ends with a stage of one atom). Each stage drains its own batches: a batch still
  // in flight across the loop's back edge while the thread reads another partial makes ptxas 13
  // serialize every wgmma (C7514, seen 2026-12 with a fully software-pipelined version), so half of the
  // promotions overlap this warpgroup's own wgmmas and the other half the other warpgroup's, against
  // none and all of them in the one-atom mainloop. Both atoms' scales are read from the stage's slot
  // right after full[s].
  static __device__ __forceinline__ void mainloop_two_atoms(const Smem& sm, float (&acc)[kMmaM][kAccRegs],
                                                            float (&p0)[kMmaM][kAccRegs], KRange kr, int& stage,
                                                            u32& phase, u32 a_off, u32 b_off, int wg_m, int wg_n,
                                                            int warp, int lane) {
    float p1[kMmaM][kAccRegs];
    for (int kt = kr.begin; kt < kr.end; kt += 2) {
      mbar_wait(sm.full + 8 * stage, phase);
      const u32 slot = sm.scales + stage * kScaleSlotBytes;
      BlockScales s0{};
      if constexpr (kStagedScales) s0 = staged_block_scales(slot, 0, kt, wg_m, wg_n, warp, lane);
      const u32 a_base = sm.a + stage * kTileBytesA + a_off;
      const u32 b_base = sm.b + stage * kTileBytesB + b_off;
      fence_all(p0);
      wgmma_fence();
      mma_tile(p0, a_base, b_base, /*first=*/true);
      wgmma_commit();
      if (kt + 1 < kr.end) {
        BlockScales s1{};
        if constexpr (kStagedScales) s1 = staged_block_scales(slot, 1, kt + 1, wg_m, wg_n, warp, lane);
        fence_all(p1);
        wgmma_fence();
        mma_tile(p1, a_base + kAtomBytesA, b_base + kAtomBytesB, /*first=*/true);
        wgmma_commit();
        wgmma_wait<1>();
        fence_all(p0);
        promote(acc, p0, s0);
        wgmma_wait<0>();
        fence_all(p1);
        release(sm, stage, lane);
        promote(acc, p1, s1);
      } else {
        wgmma_wait<0>();
        fence_all(p0);
        release(sm, stage, lane);
        promote(acc, p0, s0);
      }
      if (++stage == kStages) {
        stage = 0;
        phase ^= 1;
      }
    }
  }

  // Section 11: one tile's MXFP8 mainloop. Every k-step (32 FP8 elements of K = one E8M0 block of both
  // operands) is its own wgmma batch into the partial, then
  //   acc = fma(part, sa[m, kb] * sb[n, kb], acc)        (the reference's order; sm80_promotion.cuh)
  // with the decoded scales read from the stage's slot: 2 per m64 slab (rows g, g + 8) and this thread's
  // kAccRegs / 2 columns (one contiguous run per thread quad: kAccRegs / 8 16-byte loads). The other
  // consumer warpgroup's wgmmas run while this one promotes. A partial last atom (K % 128 != 0) runs all
  // four k-steps: TMA zero-filled the K past the end and the producer staged 1.0 for those blocks.
  // acc = fma(part, sa[h] * sb[column], acc) for one k-step: the column scales are read 4 at a time
  // (16-byte shared loads of this thread quad's run) as the promotion reaches them.
  static __device__ __forceinline__ void promote_mx(float (&acc)[kMmaM][kAccRegs], const float (&part)[kMmaM][kAccRegs],
                                                    u32 step, u32 b_run, int row0) {
    float sa[kMmaM][2];
#pragma unroll
    for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
      for (int h = 0; h < 2; ++h) sa[mi][h] = f32_from_bits(lds_u32(step + 4u * u32(row0 + mi * 64 + h * 8)));
    }
#pragma unroll
    for (int q = 0; q < kAccRegs / 8; ++q) {
      u32 sb[4];
      lds_128(sb, step + b_run + 16u * u32(q));
#pragma unroll
      for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
        for (int jj = 0; jj < 2; ++jj) {
          const int j = 2 * q + jj;  // n8 group j: columns 2j, 2j + 1 of the run
#pragma unroll
          for (int h = 0; h < 2; ++h) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int i = 4 * j + 2 * h + e;
              acc[mi][i] = fma_rn(part[mi][i], sa[mi][h] * f32_from_bits(sb[2 * jj + e]), acc[mi][i]);
            }
          }
        }
      }
    }
  }

  static __device__ __forceinline__ void mma_mx_step(float (&d)[kMmaM][kAccRegs], u64 desc_a, u64 desc_b, int ks) {
    fence_all(d);
    wgmma_fence();
#pragma unroll
    for (int mi = 0; mi < kMmaM; ++mi)
      wgmma_m64<kWgTileN, kA, kB>(d[mi], desc_a + u64((mi * 64 * kRowBytes + 32 * ks) >> 4), desc_b + u64(2 * ks), 0u);
    wgmma_commit();
  }

  // Section 11: one tile's MXFP8 mainloop. Every k-step (32 FP8 elements of K = one E8M0 block of both
  // operands) is its own wgmma batch into one of two partials, and while k-step ks + 1's batch runs
  // (wait_group 1) the thread promotes k-step ks's:
  //   acc = fma(part, sa[m, kb] * sb[n, kb], acc)        (the reference's order; sm80_promotion.cuh)
  // with the decoded scales read from the stage's slot: 2 per m64 slab (rows g, g + 8) and this thread's
  // kAccRegs / 2 columns (one contiguous run per thread quad). The stage's last k-step drains its batch
  // (wait_group 0) before the stage is released, so no batch is in flight across the loop's back edge
  // (section 8 says why). A partial last atom (K % 128 != 0) runs all four k-steps: TMA zero-filled the
  // K past the end and the producer staged 1.0 for those blocks.
  static __device__ __forceinline__ void mainloop_mx(const Smem& sm, float (&acc)[kMmaM][kAccRegs],
                                                     float (&p0)[kMmaM][kAccRegs], KRange kr, int& stage,
                                                     u32& phase, u32 a_off, u32 b_off, int wg_m, int wg_n,
                                                     int warp, int lane) {
    float p1[kMmaM][kAccRegs];
    const int row0 = wg_m * kWgTileM + warp * 16 + (lane >> 2);
    const u32 b_run = 4u * u32(kBlockM + (4 * wg_n + (lane & 3)) * kMxColStride);
    for (int kt = kr.begin; kt < kr.end; ++kt) {
      mbar_wait(sm.full + 8 * stage, phase);
      const u32 slot = sm.scales + stage * kScaleSlotBytes;
      const u64 desc_a = wgmma_desc_sw128(sm.a + stage * kTileBytesA + a_off);
      const u64 desc_b = wgmma_desc_sw128(sm.b + stage * kTileBytesB + b_off);
      mma_mx_step(p0, desc_a, desc_b, 0);
#pragma unroll
      for (int ks = 0; ks < kKSteps; ++ks) {
        float (&cur)[kMmaM][kAccRegs] = (ks % 2 == 0) ? p0 : p1;
        float (&nxt)[kMmaM][kAccRegs] = (ks % 2 == 0) ? p1 : p0;
        if (ks + 1 < kKSteps) {
          mma_mx_step(nxt, desc_a, desc_b, ks + 1);
          wgmma_wait<1>();  // k-step ks is done, ks + 1 stays in flight
        } else {
          wgmma_wait<0>();
        }
        fence_all(cur);
        const u32 step = slot + 4u * u32(ks * kMxStepFloats);
        if (ks + 1 == kKSteps) {
          // Every read of the stage (the wgmmas, and the scales below, issued before the arrive) is done.
          promote_mx(acc, cur, step, b_run, row0);
          release(sm, stage, lane);
        } else {
          promote_mx(acc, cur, step, b_run, row0);
        }
      }
      if (++stage == kStages) {
        stage = 0;
        phase ^= 1;
      }
    }
  }

  // Section 10: this warpgroup's part of split s of tile ct. Writes its accumulators to the workspace,
  // takes a ticket on the (tile, warpgroup) counter, and returns false unless it was the last of the
  // kSplitK splits to arrive; the last one resets the counter for the next launch and sums all kSplitK
  // partials IN SPLIT ORDER (its own included), so the result does not depend on which split finished
  // last. Workspace: a FIXED region of kSplitCounterSlots int counters (so no launch, whatever its M or
  // config, ever finds its counters on bytes another launch used for partials; only the counters need
  // to be zero between launches), then f32 partials [ctiles * kConsumers][kSplitK][kMmaM * kAccRegs][128
  // threads] (host mirror: sm90_workspace_bytes; the runtime refuses more tiles than counters).
  static __device__ __forceinline__ bool split_reduce(float (&acc)[kMmaM][kAccRegs], void* ws, int ct,
                                                      int s, int consumer, int tid, const Smem& sm) {
    constexpr int kRegs = kMmaM * kAccRegs;
    const int slot = ct * kConsumers + consumer;
    u8* base = static_cast<u8*>(ws);
    const i64 counter_bytes = i64(kSplitCounterSlots) * 4;
    float* parts = reinterpret_cast<float*>(base + counter_bytes) + i64(slot) * kSplitK * kRegs * 128 + tid;
    float* mine = parts + i64(s) * kRegs * 128;
#pragma unroll
    for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
      for (int i = 0; i < kAccRegs; ++i) stg_f32(mine + (mi * kAccRegs + i) * 128, acc[mi][i]);
    }
    fence_gpu();  // the partial is visible GPU-wide before the ticket is taken
    named_barrier_sync(1 + consumer, 128);
    if (tid == 0) {
      u32* counter = reinterpret_cast<u32*>(base) + slot;
      const bool last = atomic_add_u32(counter, 1u) == u32(kSplitK - 1);
      if (last) stg_u32(counter, 0u);
      sts_u32(sm.flags + 4 * consumer, last ? 1u : 0u);
    }
    named_barrier_sync(1 + consumer, 128);
    if (lds_u32(sm.flags + 4 * consumer) == 0u) return false;
    fence_gpu();
#pragma unroll
    for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
      for (int i = 0; i < kAccRegs; ++i) acc[mi][i] = 0.0f;
    }
    for (int t = 0; t < kSplitK; ++t) {
#pragma unroll
      for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
        for (int i = 0; i < kAccRegs; ++i) acc[mi][i] += ldcg_f32(parts + (i64(t) * kRegs + mi * kAccRegs + i) * 128);
      }
    }
    return true;
  }

  // The epilogue's per-column factors of columns col, col + 1 (< N): b's tensor scale, or its
  // per-channel scales (col + 1 clamped to N - 1; its product is then never stored).
  static __device__ __forceinline__ void col_factors(const GemmParams& p, const float* sb_row, float b_tile, int col,
                                                     float& f0, float& f1) {
    f0 = b_tile;
    f1 = b_tile;
    if constexpr (kRowB) {
      f0 = ldg_f32(sb_row + col);
      f1 = ldg_f32(sb_row + (col + 1 < p.n ? col + 1 : col));
    }
  }

  // The epilogue functor (no gate|up) on the scaled pair (row, col), (row, col + 1) inside M x N: the
  // values as stored (column col + 1 >= N gives 0, never stored).
  static __device__ __forceinline__ void apply_fn_pair(const GemmParams& p, const Tile& tile, int row, int col,
                                                       float& v0, float& v1) {
    const EpilogueLoads ctx{p};
    v0 = Fn::apply(ctx, v0, 0.0f, 0.0f, row, col, tile.e);
    v1 = col + 1 < p.n ? Fn::apply(ctx, v1, 0.0f, 0.0f, row, col + 1, tile.e) : 0.0f;
  }

  // Section 12: whether this warpgroup's slab of the tile goes out through TMA. Grouped: only a slab that
  // ends at or before its expert's last row (a box would write the next expert's rows past it).
  static __device__ __forceinline__ bool tma_slab(const Tile& tile, int wg_m) {
    if constexpr (kGrouped) {
      return tile.row0 + (wg_m + 1) * kWgTileM <= tile.row_end;
    } else {
      return true;
    }
  }

  // Section 12: this warpgroup's output slab through shared memory and TMA stores. The values are
  // those of the direct epilogue (scales, then the functor, only for elements inside M x N: the
  // functor's vector loads stay in bounds; the rest are staged as zeros and clipped by TMA). Box b of
  // the slab holds columns [b * kOutBoxCols, (b + 1) * kOutBoxCols) of its kWgTileM rows, 128 bytes per
  // row, 16-byte chunk q of row r at chunk q ^ (r % 8) (the map's 128-byte swizzle): the 8 rows a warp
  // writes at once land in 8 different chunks, so the 4-byte stores do not conflict. Narrow boxes (16
  // columns, kOutNarrow) are plain rows of kOutRowBytes (the map is unswizzled; 2-way store conflicts
  // for 16-bit outputs, 4-way for f32). The previous tile's stores must have read the slab first
  // (tma_store_wait_read by the thread that issued them, then the warpgroup's barrier); the stores
  // themselves run while the warpgroup goes on to its next tile's mainloop.
  static __device__ __forceinline__ void store_tile_tma(const GemmParams& p, const Smem& sm,
                                                        const TmaDesc* tma_out, const Tile& tile,
                                                        const float (&acc)[kMmaM][kAccRegs],
                                                        const float (&row_f)[kMmaM][2], float b_tile,
                                                        const float (&col_ld)[kColRegs], int wg_m, int wg_n,
                                                        int consumer, int tid) {
    const int warp = tid >> 5, lane = tid & 31;
    const u32 buf = sm.out + u32(consumer * kOutWgBytes);
    // kColStage: this warpgroup's column scales into shared memory. Its previous tile's reads of them
    // all came before that tile's last barrier below; the barrier that follows orders these writes
    // before this tile's reads.
    if constexpr (kColStage) {
#pragma unroll
      for (int r = 0; r < kColRegs; ++r) {
        const int i = tid + 128 * r;
        if (i < kWgTileN) sts_u32(sm.colsc + u32(consumer * kColWgBytes + 4 * i), __float_as_uint(col_ld[r]));
      }
    }
    const int slab_row0 = tile.row0 + wg_m * kWgTileM;
    const int slab_col0 = tile.n * kBlockN + wg_n * kWgTileN;
    const float* sb_row = kRowB ? b_scale_of<ScaleType::kF32>(p, tile.e) : nullptr;
#pragma unroll
    for (int q = 0; q < kOutChunks; ++q) {
      // The buffer's previous stores (the previous chunk's, or the previous tile's last) have read it.
      if (tid == 0) tma_store_wait_read<0>();
      named_barrier_sync(1 + consumer, 128);
#pragma unroll
      for (int jj = 0; jj < kChunkGroups; ++jj) {
        const int j = q * kChunkGroups + jj;
        if (j >= kAccRegs / 4) break;  // a shorter last chunk (compile-time: q and jj are unrolled)
        const int c = 8 * j + 2 * (lane & 3);  // slab column
        const int col = slab_col0 + c;
        float col_f0 = b_tile, col_f1 = b_tile;
        if constexpr (kColStage) {
          u32 lo, hi;
          lds_u64(lo, hi, sm.colsc + u32(consumer * kColWgBytes + 4 * c));
          col_f0 = __uint_as_float(lo);
          col_f1 = __uint_as_float(hi);
        } else {
          if (col < p.n) col_factors(p, sb_row, b_tile, col, col_f0, col_f1);
        }
        const int box = c / kOutBoxCols - q * kChunkBoxes;  // the buffer's box
        const int off = (c % kOutBoxCols) * kOutBytes;
#pragma unroll
        for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const int r = mi * 64 + warp * 16 + (lane >> 2) + half * 8;  // slab row
            const int row = slab_row0 + r;
            float v0 = acc[mi][4 * j + 2 * half] * (row_f[mi][half] * col_f0);
            float v1 = acc[mi][4 * j + 2 * half + 1] * (row_f[mi][half] * col_f1);
            if constexpr (kHasFn) {
              if (row < tile.row_end && col < p.n) {
                apply_fn_pair(p, tile, row, col, v0, v1);
              } else {
                v0 = v1 = 0.0f;
              }
            }
            const u32 addr =
                kOutNarrow ? buf + u32(box * kOutBoxBytes + r * kOutRowBytes + off)
                           : buf + u32(box * kOutBoxBytes + r * 128 + ((((off >> 4) ^ (r & 7)) << 4) | (off & 15)));
            if constexpr (kOut == Format::kBf16) {
              sts_u32(addr, cvt_pack_bf16x2(v0, v1));
            } else if constexpr (kOut == Format::kF16) {
              sts_u32(addr, cvt_pack_f16x2(v0, v1));
            } else {
              sts_u32(addr, bits_from_f32(v0));
              sts_u32(addr + 4, bits_from_f32(v1));
            }
          }
        }
      }
      fence_proxy_async_shared();  // this thread's writes, visible to the TMA unit
      named_barrier_sync(1 + consumer, 128);
      if (tid == 0 && slab_row0 < tile.row_end) {
#pragma unroll
        for (int b = 0; b < kChunkBoxes; ++b) {
          if (q * kChunkBoxes + b >= kOutBoxes) break;
          const int x = slab_col0 + (q * kChunkBoxes + b) * kOutBoxCols;
          if (x < p.n) tma_store_2d(tma_out, buf + u32(b * kOutBoxBytes), x, slab_row0);
        }
        tma_store_commit();
      }
    }
  }

  // Section 13 with A in registers (kDqRegA). Per 64-K stage kt (half h
  // of staging atom kt / 2): each thread loads the 16 staged FP8 bytes 16 t .. 16 t + 15 of half h of its
  // rows g and g + 8 (one E8M0 block each), converts them with the row's scale, and uses them as the A
  // fragments of the stage's four k16 steps in the producer's K permutation (k16 step s, a[0] / a[2] =
  // physical bytes 4 s, 4 s + 1 / 4 s + 2, 4 s + 3 of row g; a[1] / a[3] the same of row g + 8). The
  // staging slot is released (every consumer lane) once both halves' A bytes are read; B comes from the
  // bf16 ring as before. One register set of A, each stage drained before the next is converted (below).
  static __device__ __forceinline__ void mainloop_dq_rega(const Smem& sm, float (&acc)[kMmaM][kAccRegs],
                                                          const KRange& kr, int& stage, u32& phase, int& s8,
                                                          u32& ph8, u32 b_off, int wg_m, int warp, int lane) {
    static_assert(kMmaM == 1, "register-A dequantizing: 64-row warpgroup tiles");
    const int g = lane >> 2, t = lane & 3;
    const int r0 = wg_m * 64 + warp * 16 + g;  // r0 % 8 == g
    // One register set: ptxas serializes every wgmma (C7513) if a wgmma's A registers are written while
    // any wgmma is in flight, so each stage's batch drains (wait 0) before the next stage's A is
    // converted; the other consumer warpgroup's wgmmas fill the tensor cores meanwhile.
    u32 a[4][4];
    for (int kt8 = kr.begin / 2; 2 * kt8 < kr.end; ++kt8) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int kt = 2 * kt8 + h;
        if (kt >= kr.end) break;
        if (h == 0) mbar_wait(sm.stg_full + 8 * s8, ph8);
        const u32 stg = sm.stg + u32(s8 * (kStgBytesA + kStgBytesB));
        const u32 slot = sm.stg_sc + u32(s8 * kDqScaleBytes);
#pragma unroll
        for (int hr = 0; hr < 2; ++hr) {
          const int r = r0 + 8 * hr;
          u32 wv[4];
          lds_128(wv, stg + u32(r * 128) + (u32((4 * h + t) ^ g) << 4));
          const float f = f32_from_bits(lds_u32(slot + 16u * u32(r) + 4u * u32(2 * h + (t >> 1))));
          u32 o[8];
          dq_convert(wv, f, o);
#pragma unroll
          for (int st = 0; st < 4; ++st) {
            a[st][hr] = o[2 * st];
            a[st][2 + hr] = o[2 * st + 1];
          }
        }
        if (h == 1 || kt + 1 == kr.end) {
          mbar_arrive(sm.stg_full + 8 * (kDqStg + s8));  // stg_empty: this lane's A reads are done
          if (++s8 == kDqStg) {
            s8 = 0;
            ph8 ^= 1;
          }
        }
        mbar_wait(sm.full + 8 * stage, phase);
        const u64 desc_b = wgmma_desc_sw128(sm.b + stage * kTileBytesB + b_off);
#pragma unroll
        for (int st = 0; st < 4; ++st) wgmma_fence_regs(a[st]);
        fence_all(acc);
        wgmma_fence();
#pragma unroll
        for (int st = 0; st < 4; ++st) {
          const u32 sd = (kt == kr.begin && st == 0) ? 0u : 1u;
          if constexpr (2 * kAccRegs >= 208 && kEntryRegs < 160) {
            // 512 threads: no instruction may need more than 128 registers (see mma_tile).
            constexpr int kN1 = 2 * kAccRegs == 256 ? 128 : 112;
            constexpr int kN2 = 2 * kAccRegs - kN1;
            wgmma_m64_rs16<kN1, Format::kBf16>(*reinterpret_cast<float(*)[kN1 / 2]>(&acc[0][0]), a[st],
                                               desc_b + u64(2 * st), sd);
            wgmma_m64_rs16<kN2, Format::kBf16>(*reinterpret_cast<float(*)[kN2 / 2]>(&acc[0][kN1 / 2]), a[st],
                                               desc_b + u64(2 * st) + u64((kN1 * kRowBytes) >> 4), sd);
          } else {
            wgmma_m64_rs16<2 * kAccRegs, Format::kBf16>(acc[0], a[st], desc_b + u64(2 * st), sd);
          }
        }
        wgmma_commit();
        wgmma_wait<0>();
        fence_all(acc);
#pragma unroll
        for (int st = 0; st < 4; ++st) wgmma_fence_regs(a[st]);
        release(sm, stage, lane);
        if (++stage == kStages) {
          stage = 0;
          phase ^= 1;
        }
      }
    }
  }

  static __device__ __forceinline__ void consume(const GemmParams& p, const Smem& sm, const Walk& w,
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
    // Section 16 (ping-pong): consumer c takes the CTA's units c, c + 2, ... of the walk (u0, du).
    const int u0 = w.first + (kPingPong ? consumer * w.step : 0);
    const int du = kPingPong ? 2 * w.step : w.step;
    KRange kr_next = k_range(u0, k_tiles);
    if (u0 < w.count) {
      tile_next = tile_of(w, unit_tile(u0), p, sm);
      rows_next = scale_rows(p, tile_next, wg_m, wg_n, warp, lane);
      if constexpr (kBlockScaled && !kStagedScales) {
        if (kr_next.end > kr_next.begin) load_block_scales(p, rows_next, kr_next.begin, bs_next);
      }
    }

    int stage = 0;
    u32 phase = 0;
    int s8 = 0;  // register A: the staging ring, which the consumers read too
    u32 ph8 = 0;
    // Section 16: the producer fills the ring with every unit's stages in walk order; a consumer passes
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
        kr_next = k_range(u + du, k_tiles);
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
      // Section 16: the previous unit's consumer has waited on every stage of it, so each full[s] this
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
        if constexpr (kStagedScales)
          bs = staged_block_scales(sm.scales + stage * kScaleSlotBytes, 0, kt, wg_m, wg_n, warp, lane);
        const u32 a_base = sm.a + stage * kTileBytesA + a_off;
        const u32 b_base = sm.b + stage * kTileBytesB + b_off;
        if constexpr (kHalfPart) {
          // Section 14: one partial, two halves: each half's batch drains before its promotion (the
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
          release(sm, stage, lane);
          promote(acc, part, bs, rows.mid1);
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
      // Section 16: hand the wgmmas to the other consumer (its next unit follows this one in the walk),
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
      }  // one-atom or unpromoted mainloop

      // Split-K: all but the last split of this tile leave their partial sums and move on.
      if constexpr (kSplit) {
        if (!split_reduce(acc, ws, unit_tile(u), u % kSplitK, consumer, tid, sm)) continue;
      }

      // Section 12: through shared memory and TMA stores where the runtime could map the output.
      if constexpr (kTmaStore) {
        if (out_tma && tma_slab(tile, wg_m)) {
          store_tile_tma(p, sm, tma_out, tile, acc, row_f, b_tile, col_ld, wg_m, wg_n, consumer, tid);
          continue;
        }
      }
      // Epilogue: acc * (row_factor * col_factor). Accumulator register i of slab mi: row 16 * warp + g
      // + 8 * ((i / 2) % 2), column 8 * (i / 4) + 2 * t + (i % 2) of the warpgroup tile
      // (ptx/wgmma.cuh). Column pairs outermost, so per-column scales are loaded once per pair.
      // Per-column scales (kRowB) load kColChunk pairs at a time, ahead of that chunk's stores: loaded
      // just before each pair's stores, every load waited behind the previous pair's stores (the program
      // order of global loads and stores the compiler keeps), one global latency per column pair (FP8 row
      // 64 x 7168 x 2048: 9.6 us against FP8 tensor's 7.1 on the same tile, bench/NOTES.md session 24).
      // 8 pairs (16 registers) where a thread holds up to 128 accumulators, 2 above (ping-pong 128 x 192's
      // 192 spilled with 4).
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

  // ---- the kernel -------------------------------------------------------------------------------

  // tma_out / out_tma: the output's tensor map and whether to use it (section 12; TMA-store configs
  // only, and only where the runtime could encode the map: else the direct epilogue runs).
  static __device__ __forceinline__ void run(const TmaDesc& tma_a, const TmaDesc& tma_b,
                                             const GemmParams& p, void* ws, const TmaDesc* tma_out = nullptr,
                                             bool out_tma = false) {
    extern __shared__ __align__(1024) u8 smem[];
    // Uniform, before any barrier and any memory access. (Plan::run launches nothing for M = 0 and plans
    // need N >= 1, so a launched grid never takes it: no grid exits without the PDL wait below.)
    if (p.m <= 0 || p.n <= 0) return;

    Smem sm;
    sm.a = (smem_u32(smem) + 1023u) & ~1023u;
    sm.b = sm.a + kStages * kTileBytesA;
    sm.out = sm.b + kStages * kTileBytesB;  // 1024-byte aligned: the ring's boxes are
    sm.colsc = sm.out + kOutTileBytes;
    sm.scales = sm.colsc + kColScaleBytes;
    sm.full = sm.scales + kStages * kScaleSlotBytes;
    sm.empty = sm.full + 8 * kStages;
    sm.groups = sm.empty + 8 * kStages;
    sm.flags = sm.groups + kGroupTableBytes;
    // Section 13: the staging ring after the output tile (1024-byte aligned: the TMA boxes' swizzle).
    sm.stg = sm.stg_sc = sm.stg_full = 0;
    if constexpr (kDq) {
      sm.stg = (sm.flags + kSplitFlagBytes + 1023u) & ~1023u;
      sm.stg_sc = sm.stg + kDqStg * (kStgBytesA + kStgBytesB);
      sm.stg_full = sm.stg_sc + kDqStg * kDqScaleBytes;
    }

    const int tiles_m = (p.m - 1) / kBlockM + 1;
    const int tiles_n = (p.n - 1) / kBlockN + 1;
    const int k_tiles = p.k <= 0 ? 0 : (p.k - 1) / kAtomK + 1;  // atoms of K (block scales: K blocks)

    if (threadIdx.x == 0) {
      // The maps are kernel parameters (nothing a predecessor writes): fetched while it may still run.
      // Thread 0 is the thread that issues the copies (produce, dq_stage).
      tma_prefetch_desc(&tma_a);
      tma_prefetch_desc(&tma_b);
#pragma unroll 1
      for (int s = 0; s < kStages; ++s) {
        // TMA thread (+ the scale warp's lanes); section 13: every converting thread (warps 1-7).
        mbar_init(sm.full + 8 * s, kDq ? kDqConvThreads : kScaleWarp ? 1 + 32 : 1);
        mbar_init(sm.empty + 8 * s, 4 * kStageReaders * kCluster);
      }
      if constexpr (kDq) {
#pragma unroll 1
        for (int s = 0; s < kDqStg; ++s) {
          mbar_init(sm.stg_full + 8 * s, 1 + 32);       // warp 0: expect_tx + its lanes' scale stores
          // stg_empty: every converting thread (and with register A every consumer thread).
          mbar_init(sm.stg_full + 8 * (kDqStg + s), kDqConvThreads + (kDqRegA ? 128 * kConsumers : 0));
        }
      }
      mbar_fence_init();
    }
    // Section 15 (PDL): only what is above (shared memory, this launch's parameters) may overlap the
    // previous kernel on the stream; every thread waits for it before its first global access
    // (build_groups reads the expert offsets). The trigger fires once every CTA of this grid has issued
    // it, so the next kernel's CTAs never take an SM one of ours still needs.
    griddep_wait();
    griddep_launch_dependents();
    if constexpr (kGrouped) {
      if (threadIdx.x < 32) build_groups(p, sm, tiles_n, int(threadIdx.x));
    }
    if constexpr (kCluster == 1) {
      __syncthreads();
    } else {
      cluster_sync();  // the peers' barriers exist before anyone arrives on them or multicasts
    }
    const Walk w = make_walk(tiles_m, tiles_n, sm);

    // Each warpgroup's role is one branch of a single if/else (setmaxnreg is warpgroup-wide).
    // Warp-uniform by construction; through shfl the compiler knows it too, so values derived from it
    // (the warpgroup's shared-memory offsets, the wgmma descriptors) can live in uniform registers (FP8
    // block 128 x 256: 0.835 -> 0.782 ms, bench/NOTES.md session 15). Not for section 13: there it made
    // nine of the 38 block_k-64 tiles spill.
    const int wg = kDq ? int(threadIdx.x) / 128 : __shfl_sync(0xffffffffu, int(threadIdx.x) / 128, 0);
    if (wg < kProducerWgs) {
      setmaxnreg_dec<kProducerRegs>();
      // Thread 0 issues the TMA copies; with staged block scales (section 8) its whole warp walks along
      // and copies the scales.
      if constexpr (kDq) {
        if (threadIdx.x < 32) {
          dq_stage(&tma_a, &tma_b, sm, w, p, int(threadIdx.x));
        } else {
          dq_convert_walk(p, sm, w, k_tiles, int(threadIdx.x) - 32);
        }
      } else if (threadIdx.x == 0 || (kScaleWarp && threadIdx.x < 32)) {
        produce(&tma_a, &tma_b, sm, w, k_tiles, p, threadIdx.x & 31);
      }
    } else {
      setmaxnreg_inc<kConsumerRegs>();
      consume(p, sm, w, k_tiles, wg - kProducerWgs, ws, tma_out, kTmaStore && out_tma);
      // Section 12: the last tile's TMA stores are complete before the CTA (and its shared memory) goes.
      if constexpr (kTmaStore) {
        if ((threadIdx.x & 127) == 0) tma_store_wait_all<0>();
      }
      // No CTA leaves while a peer may still arrive on its barriers (the producers have exited, and
      // exited threads do not take part).
      if constexpr (kCluster > 1) cluster_sync();
    }
  }
};

}  // namespace sm90

template <class Config>
__device__ __forceinline__ void sm90_gemm(const TmaDesc& tma_a, const TmaDesc& tma_b, const GemmParams& p,
                                          void* workspace) {
  sm90::Gemm<Config>::run(tma_a, tma_b, p, workspace);
}

// The TMA-store configs' entry (section 12): the output's tensor map, and whether the runtime could
// encode it (1) or the direct epilogue must run (0: an output TMA cannot address).
template <class Config>
__device__ __forceinline__ void sm90_gemm_tma_store(const TmaDesc& tma_a, const TmaDesc& tma_b, const GemmParams& p,
                                                    void* workspace, const TmaDesc& tma_out, int out_tma) {
  sm90::Gemm<Config>::run(tma_a, tma_b, p, workspace, &tma_out, out_tma != 0);
}

}  // namespace kiln_dev
