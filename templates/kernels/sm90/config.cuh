// templates/kernels/sm90/config.cuh — sm90::Gemm<Config>: what a config selects, the shared-memory
// layout, the register split, and the declarations of every part of the kernel.
//
// Gemm<Config> is one struct of static members. This header holds its class body: the constants derived
// from the generated KilnConfig, the static_asserts that bound them, the shared-memory layout (Smem) and
// the declarations of the member functions, which the other headers of kernels/sm90/ define, one concern
// each (kernels/sm90_gemm.cuh lists them). Every member function is __forceinline__: the kernel is one
// function after inlining, and which parts it contains is decided by the constants below through
// `if constexpr`.
//
// Shared memory, in order from a 1024-byte-aligned base (run() computes the addresses, Smem holds them):
//   the ring: kStages A stages of kTileBytesA, then kStages B stages of kTileBytesB (1024-byte aligned:
//     the 128-byte swizzle's period);
//   the TMA-store slabs (kOutTileBytes), then the staged column scales (kColScaleBytes);
//   the scale slots: kScaleSlotBytes per stage (staged block scales or decoded MXFP8 scales);
//   full[kStages] and empty[kStages] mbarriers (8 bytes each);
//   the grouped table (kGroupTableBytes) and the split-K flags (kSplitFlagBytes);
//   with the dequantizing producer, its FP8 staging ring (kDqStgBytes, 1024-byte aligned).
// kSmemBytes adds 1024 so the ring can start on a 1024-byte boundary whatever the dynamic base is; the
// host mirror is sm90_smem_bytes (compiler/plan/sm90_layout.cpp), passed as kHostSmemBytes and checked.
#pragma once

#include "common/gemm_params.cuh"
#include "common/operand_major.cuh"
#include "common/sm90_tma_desc.cuh"
#include "common/types.cuh"
#include "epilogue/config.cuh"

namespace kiln_dev {
namespace sm90 {

// Whether the config asks for the TMA-store epilogue (sm90/epilogue_tma_store.cuh): `static constexpr
// bool kTmaStore`, emitted only by configs with tma_store = 1, 2 or 4, so every other config compiles to
// the code it did.
template <class Config, class = void>
struct ConfigTmaStore {
  static constexpr bool kValue = false;
};
template <class Config>
struct ConfigTmaStore<Config, typename VoidOf<decltype(Config::kTmaStore)>::type> {
  static constexpr bool kValue = Config::kTmaStore;
};

// Whether the host stages the block scales (sm90/producer.cuh): `static constexpr bool kStagedScales`,
// emitted where sm90_staged_scales says so.
template <class Config, class = void>
struct ConfigStagedScales {
  static constexpr bool kValue = false;
};
template <class Config>
struct ConfigStagedScales<Config, typename VoidOf<decltype(Config::kStagedScales)>::type> {
  static constexpr bool kValue = Config::kStagedScales;
};

// The TMA-store slab in chunks (tma_store = 2 or 4): `static constexpr int kOutChunks`, emitted only then.
template <class Config, class = void>
struct ConfigOutChunks {
  static constexpr int kValue = 1;
};
template <class Config>
struct ConfigOutChunks<Config, typename VoidOf<decltype(Config::kOutChunks)>::type> {
  static constexpr int kValue = Config::kOutChunks;
};

// Whether the config asks for ping-pong consumers (sm90/pingpong.cuh): `static constexpr bool kPingPong`,
// emitted only by configs with pingpong = 1.
template <class Config, class = void>
struct ConfigPingPong {
  static constexpr bool kValue = false;
};
template <class Config>
struct ConfigPingPong<Config, typename VoidOf<decltype(Config::kPingPong)>::type> {
  static constexpr bool kValue = Config::kPingPong;
};

// The host's mirror of the kernel's shared memory (compiler/plan/sm90_layout.cpp sm90_smem_bytes, the
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
  // MXFP8 elements are e4m3: TMA and wgmma see e4m3 bytes (sm90/mx.cuh). With block_k = 64 they are
  // dequantized to bf16 instead (sm90/mx_dequant.cuh: B by the producer warpgroups into bf16 stages, A the
  // same way or, for 64-row warpgroups, by the consumers into wgmma registers): wgmma sees bf16.
  static constexpr bool kMx = Config::kA == Format::kMxfp8;
  static constexpr bool kDq = kMx && Config::kBlockK == 64;
  static constexpr bool kMxPromoted = kMx && !kDq;  // the MXFP8 mainloop of sm90/mx.cuh
  static constexpr Format kA = kDq ? Format::kBf16 : kMx ? Format::kE4m3 : Config::kA;
  static constexpr Format kB = kDq ? Format::kBf16 : Config::kB == Format::kMxfp8 ? Format::kE4m3 : Config::kB;
  static constexpr Format kOut = Config::kOut;
  static constexpr int kBlockM = Config::kBlockM;
  static constexpr int kBlockN = Config::kBlockN;
  static constexpr int kBlockK = Config::kBlockK;
  static constexpr int kStages = Config::kStages;
  static constexpr int kWgsM = Config::kWarpsM / 4;  // consumer warpgroups along M
  static constexpr int kWgsN = Config::kWarpsN;      // consumer warpgroups along N
  // Ping-pong (sm90/pingpong.cuh): two consumer warpgroups that each own whole tiles (warps 4 x 1: the
  // warpgroup tile is the block tile) and take the CTA's tiles in turn, so that one's epilogue runs
  // while the other's wgmmas do.
  static constexpr bool kPingPong = ConfigPingPong<Config>::kValue;
  static constexpr int kConsumers = kPingPong ? 2 : kWgsM * kWgsN;
  // Consumer warpgroups that read each stage (and release it: empty[s] counts 4 per warpgroup and CTA).
  static constexpr int kStageReaders = kPingPong ? 1 : kConsumers;
  // Named barriers 1 + c: consumer c's epilogue (split-K, TMA stores); kOrderBarrier + c: consumer c may
  // start its next unit's mainloop (ping-pong).
  static constexpr int kOrderBarrier = 4;
  // The dequantizing producer with A in registers: the consumers dequantize A into the RS wgmmas'
  // register fragments and the producer converts B only (a bf16 ring of B stages), for warpgroup tiles
  // of 64 rows (others keep the bf16 A stages).
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
  static constexpr int kAtoms = kBlockK / kAtomK;         // atoms per stage: 1, or 2 (two-atom stages)
  static constexpr int kKSteps = kRowBytes / 32;          // 32 bytes of K per wgmma
  static constexpr int kAtomBytesA = kBlockM * kRowBytes;
  static constexpr int kAtomBytesB = kBlockN * kRowBytes;
  static constexpr int kTileBytesA = kDqRegA ? 0 : kAtoms * kAtomBytesA;
  static constexpr int kTileBytesB = kAtoms * kAtomBytesB;
  static constexpr int kStageBytes = kTileBytesA + kTileBytesB;
  static constexpr int kCluster = Config::kClusterM;
  static constexpr int kBoxRowsB = kBlockN / kCluster;  // rows of B each CTA of a cluster loads
  // MN-major operands (dgrad's W, wgrad's dY and X): the tensor's rows run along K, so an atom of the
  // operand is kAtomK rows of K by the tile's MN extent, copied as TMA boxes of 64 MN elements x kAtomK K
  // rows (kMnChunkBytes each, chunk after chunk: the layout ptx/wgmma.cuh's MN-major descriptor reads).
  // 16-bit elements and one atom per stage; an atom's bytes are the K-major atom's.
  static constexpr bool kTransA = ConfigTransA<Config>::kValue;
  static constexpr bool kTransB = ConfigTransB<Config>::kValue;
  static constexpr int kMnChunk = 64;
  // accumulate=true (backward passes): out += the product. The direct epilogue reads each output pair and
  // adds to it (epilogue/store.cuh accumulate_out_pair); the TMA-store epilogue (f32 outputs only) adds
  // its boxes with cp.reduce.async.bulk.tensor .add: one f32 add per element (split-K partials are summed
  // before the store), the direct path's math, and deterministic. 16-bit outputs keep the direct epilogue
  // (a 16-bit reduce would round the product before the add).
  static constexpr bool kAccumulate = ConfigAccumulate<Config>::kValue;
  static constexpr int kMnChunkBytes = kAtomK * kRowBytes;
  // Scales (sm90/promotion.cuh).
  static constexpr Scale kScaleA = Config::kScaleA;
  static constexpr Scale kScaleB = Config::kScaleB;
  static constexpr ScaleType kScaleTypeA = Config::kScaleTypeA;
  static constexpr ScaleType kScaleTypeB = Config::kScaleTypeB;
  static constexpr bool kRowA = kScaleA == Scale::kRow;             // a_scale[m] in the epilogue
  static constexpr bool kRowB = kScaleB == Scale::kRow;             // b_scale[n] in the epilogue
  static constexpr bool kBlockA = kScaleA == Scale::kBlock1x128;    // sa[m, kb] per K tile
  static constexpr bool kBlockB = kScaleB == Scale::kBlock128x128;  // sb[n / 128, kb] per K tile
  // b in 1x128 blocks as well (quantized wgrad: dYᵀ and Xᵀ quantized along the tokens, the kernel's K):
  // sb[n, kb] per column and K tile, staged per column beside the stage (sm90/producer.cuh
  // stage_col_scales) and applied by promote_col_blocks (sm90/promotion.cuh).
  static constexpr bool kColBlockB = kScaleB == Scale::kBlock1x128;
  static constexpr bool kBlockScaled = kBlockA || kBlockB || kColBlockB;
  // b's block scales per consumer thread: one 128-column block per warpgroup when its columns lie in
  // one (64 or 128 columns starting on a block edge). A 192-column warpgroup (tiles and warpgroups
  // start on multiples of 64) spans exactly two blocks in three 64-column segments: the first lies in
  // the first block, the last in the second, the middle in the first when the warpgroup starts on a
  // block edge and in the second otherwise. The promotion multiplies each segment by its own factor,
  // with no per-element select.
  static constexpr bool kBOneBlock = kWgTileN <= 128 && 128 % kWgTileN == 0;
  // A 256-column warpgroup (half partials) spans two whole blocks: two segments of 128 columns.
  static constexpr int kBSegs = kBlockB && !kBOneBlock ? (kWgTileN == 256 ? 2 : 3) : 1;
  static constexpr int kBBlocks = kBSegs == 1 ? 1 : 2;  // b scales loaded per K block
  static constexpr int kBSegCols = kWgTileN / kBSegs;
  // Promoted block-scaled tiles with one atom per stage may hold 64 x 192 per warpgroup: 96
  // accumulators + 96 partials in the 232 registers of two consumers.
  static constexpr int kMaxPromotedRegs = kBlockScaled && kAtoms == 1 && kConsumers <= 2 ? 192 : 128;
  // Half partials (sm90/mainloop.cuh): block-scaled 64 x 256 warpgroups promote each K tile in two
  // 128-column halves through one half-width partial: 128 accumulators + 64 partials.
  static constexpr bool kHalfPart =
      kPromote && kBlockScaled && kAtoms == 1 && kMmaM == 1 && kWgTileN == 256 && kConsumers <= 2;
  static constexpr int kPartRegs = kHalfPart ? kAccRegs / 2 : kAccRegs;  // partial registers per slab
  // Block scales staged through shared memory (sm90/producer.cuh: a producer warp copies them into a
  // slot per stage) where the host says so (Config::kStagedScales, sm90_staged_scales: two-atom stages,
  // three consumer warpgroups, and one-atom tiles whose slots fit beside the ring). The rest keep the
  // per-thread global loads (sm90/promotion.cuh), which the two-atom and three-consumer mainloops do not
  // have.
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
  // MXFP8's E8M0 scales, decoded to f32 by the producer warp into a slot per stage (sm90/mx.cuh): per
  // k-step (one 32-wide scale block), a's scale of every tile row, then b's of every column, each
  // consumer warpgroup's columns grouped by the thread quad that reads them (kMxColStride floats per
  // quad: kWgTileN / 4 columns + 4 floats so the four quads' runs start in different banks).
  static constexpr int kMxColStride = kWgTileN / 4 + 4;
  static constexpr int kMxStepFloats = kBlockM + kWgsN * 4 * kMxColStride;
  static constexpr int kMxSlotBytes = 4 * kKSteps * kMxStepFloats;
  // Per-column b scales (kColBlockB): one k-step's layout of the MXFP8 slot per (one-atom) stage, f32 values.
  static constexpr int kColSlotBytes = 4 * kMxStepFloats;
  static constexpr int kScaleSlotBytes = kColBlockB      ? kColSlotBytes
                                         : kStagedScales ? kAtoms * kScaleAtomBytes
                                         : kMxPromoted   ? kMxSlotBytes
                                                         : 0;
  static constexpr bool kScaleWarp = kStagedScales || kMxPromoted;  // the producer's whole warp 0 walks the ring
  // The scale rows one producer lane stages (staged block scales; MXFP8).
  static constexpr int kScaleRowsPerLane = kBlockM / 32;
  static constexpr int kMxRowsA = kBlockM / 32;
  static constexpr int kMxColsB = (kBlockN + 31) / 32;  // N tiles of 112, 144, ...: a partial last run
  // Epilogue functor (sm90/epilogue_direct.cuh): a generated KilnEpilogue, and interleaved gate|up pairs.
  static constexpr bool kHasFn = ConfigEpilogue<Config>::kHas;
  static constexpr GateUp kGateUp = ConfigEpilogue<Config>::kGateUp;
  static constexpr bool kGlu = kGateUp != GateUp::kNone;
  using Fn = typename ConfigEpilogue<Config>::Fn;
  // The TMA-store epilogue (sm90/epilogue_tma_store.cuh). Each consumer warpgroup stages its kWgTileM x
  // kWgTileN output slab in shared memory as TMA boxes of kWgTileM rows x 128 bytes (128-byte swizzle),
  // or narrow boxes.
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
  // TMA stores with per-column (n) scales: the tile's column scales, loaded into registers when the tile
  // starts (their latency runs under the mainloop) and written to shared memory when its epilogue starts,
  // where the store loop reads them (instead of two global loads per column pair in the epilogue).
  static constexpr bool kColStage = kTmaStore && kRowB;
  // One slab per consumer warpgroup (warpgroups that share tile columns each keep their own copy: no
  // warpgroup writes where another reads).
  static constexpr int kColWgBytes = 4 * kWgTileN;
  static constexpr int kColScaleBytes = kColStage ? kConsumers * kColWgBytes : 0;
  static constexpr int kColRegs = kColStage ? (kWgTileN + 127) / 128 : 1;
  // Grouped GEMMs (sm90/scheduler.cuh): the per-expert table the walk reads, built once per CTA.
  static constexpr Grouping kGrouping = Config::kGrouping;
  static constexpr bool kGrouped = kGrouping != Grouping::kDense;
  static constexpr int kExperts = kGrouped ? Config::kExperts : 0;
  static constexpr int kGroupTableBytes = 12 * kExperts;  // cluster-tile ends, row bases, rows: int [E] each
  // Grouped wgrad (sm90/scheduler.cuh, "Grouped wgrad"): the experts' rows are the reduction. Every expert
  // has the same tiles (its dW [N, K]); a tile's K range is its expert's rows of dY and X. 16-bit operands
  // (MN-major, every expert's rows as stored): the stage holding an expert's last, partial atom of rows has
  // the rows past its end zeroed by the consumers (zero_k_tail) before any wgmma reads it. Quantized
  // (kGroupedKPadded: the FP8 column-wise copies, K-major, per-column b scales): each expert's tokens start
  // on a 128-column boundary of the copies and its last block is zero-padded by the grouped quantizer, so
  // the K range is whole atoms and nothing is zeroed. (Only wgrad reads A MN-major or b per column.)
  static constexpr bool kGroupedK = kGrouped && (kTransA || kColBlockB);
  static constexpr bool kGroupedKPadded = kGroupedK && kColBlockB;
  // The consumers' named barrier for that zeroing (1 + c: consumer c's epilogue; 4, 5: ping-pong order).
  static constexpr int kTailBarrier = 6;
  // Split-K (sm90/split_k.cuh): kSplitK CTAs share one tile's K range; one "last arriver" flag per
  // warpgroup.
  static constexpr int kSplitK = Config::kSplitK;
  static constexpr bool kSplit = kSplitK > 1;
  static constexpr int kSplitFlagBytes = kSplit ? 16 : 0;
  static constexpr int kSplitCounterSlots = 1 << 18;  // compiler/plan/sm90_plan.hpp kSm90SplitCounterSlots
  // The dequantizing producer (sm90/mx_dequant.cuh): the FP8 staging ring TMA fills (kDqStg stages of one
  // 128-K atom), each with its decoded scales (4 f32 per tile row / column), and its full / empty
  // mbarriers.
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
  // MXFP8: the producer's warp also loads and decodes the scales and the consumers hold two partials,
  // 56 / 224 with two consumers (what setmaxnreg.dec frees, (168 - 56) * 128, is exactly the increase,
  // (224 - 168) * 256).
  // The dequantizing producer (two warpgroups, 2 consumers; 512 threads, 128 each at launch): 72 / 184
  // or 64 / 192, whichever ptxas (13.0) compiles without spills; a sweep of every valid tile found no
  // tile that spills with both. 72 / 184 where the producer converts >= 368 rows per stage (block_m +
  // block_n), or >= 320 with two consumer warpgroups along N; 64 / 192 elsewhere (72 / 184 spilled the
  // consumers of 128 x 176 ... 128 x 208 and 256 x 64 / 96). The nvrtc tier compiles them all.
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
  // The dequantizing producer's converting threads: every producer warp but warp 0 (sm90/mx_dequant.cuh).
  static constexpr int kDqConvThreads = 128 * kProducerWgs - 32;
  static constexpr int kDqRowsPerPass = kDqConvThreads / 4;              // 8 rows per converting warp
  static constexpr int kDqRows = kDqRegA ? kBlockN : kBlockM + kBlockN;  // the rows the producer converts
  static constexpr int kDqRowSteps = (kDqRows + kDqRowsPerPass - 1) / kDqRowsPerPass;

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
                "promoted two-atom stages alternate two partial sets (sm90/mainloop.cuh): accumulators + 2 "
                "partials <= 192 f32 registers (warpgroup tiles of at most 64 x 128)");
  static_assert(!kGlu || (kHasFn && kGateUp == GateUp::kInterleaved),
                "gate_up: interleaved (gate, up) W rows combined by an epilogue functor (stacked halves run on "
                "the portable family)");
  static_assert(kOutChunks == 1 || (kTmaStore && (kOutChunks == 2 || kOutChunks == 4) &&
                                    (kOutChunks - 1) * kChunkBoxes < kOutBoxes),
                "the TMA-store slab goes out whole or in 2 or 4 chunks of whole boxes, none empty");
  static_assert(!kTmaStore || (!kGlu && kWgTileM <= 256 && kWgTileN % kOutBoxCols == 0),
                "the TMA-store epilogue takes dense and grouped problems without gate|up");
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
                "ping-pong consumers: warps 4 x 1 (each warpgroup owns the whole tile), unpromoted "
                "accumulation (bf16 / f16, FP8 with tensor or per-row scales), dense, no split-K");
  static_assert(!(kTransA || kTransB) || (format_is_16bit(kA) && !kMx && kAtoms == 1 && !kPromote),
                "MN-major operands: bf16 / f16, one 128-byte atom of K per stage");
  static_assert(!kAccumulate || (!kHasFn && (!kTmaStore || kOut == Format::kF32)),
                "accumulate=true: no epilogue functor; TMA stores (a reduce-add of the boxes) for f32 outputs only");
  static_assert(!kGroupedK || (kCluster == 1 && (kTransB || kGroupedKPadded)),
                "grouped wgrad: no clusters (each CTA zeroes its own stages' rows past an expert's end)");
  static_assert(!kTransB || (kBoxRowsB % kMnChunk == 0 && kWgTileN % kMnChunk == 0),
                "an MN-major B: each CTA's B rows and each warpgroup's columns are whole 64-element chunks");
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
  static_assert(kMx || kScaleB == Scale::kNone || kScaleB == Scale::kTensor || kRowB || kBlockB || kColBlockB,
                "b takes tensor, per-row (n), block128x128 or (quantized wgrad) block1x128 scales");
  static_assert(kMx || ((kBlockA ? (kScaleTypeA == ScaleType::kF32 || kScaleTypeA == ScaleType::kUe8m0)
                                 : (kScaleA == Scale::kNone || kScaleTypeA == ScaleType::kF32)) &&
                        (kBlockB || kColBlockB ? (kScaleTypeB == ScaleType::kF32 || kScaleTypeB == ScaleType::kUe8m0)
                                 : (kScaleB == Scale::kNone || kScaleTypeB == ScaleType::kF32))),
                "block scales are f32 or E8M0 bytes; tensor and per-row scales are f32");
  static_assert(!kMxPromoted || (kPromote && kAtoms == 1 && kMmaM * kAccRegs <= 64 && kConsumers <= 2),
                "MXFP8 promotes every k-step: one atom per stage, warpgroup tiles of at most 64 accumulators "
                "per thread (accumulators + partial + a k-step's column scales fit 232 registers), 1 or 2 "
                "consumer warpgroups");
  static_assert(
      !kDq || (!kPromote && kAtoms == 1 && kConsumers == 2 && kCluster == 1 && !kSplit &&
               kMmaM * kAccRegs <= 128),
      "MXFP8 with block_k 64: the operands are dequantized to bf16 (stages of one 64-K atom); two consumer "
      "warpgroups accumulate unpromoted, no clusters, no split-K");
  static_assert(!kColBlockB || (kBlockA && kStagedScales && kPromote && kAtoms == 1 && kWgTileN <= 128 &&
                                kWgTileN % 16 == 0 && kConsumers <= 2 && !kTransA && !kTransB),
                "per-column b scales (quantized wgrad): a in 1x128 blocks too, staged scales, one promoted atom per "
                "stage, at most 128 columns per warpgroup in multiples of 16, 1 or 2 consumer warpgroups, K-major "
                "operands");
  static_assert(!kBlockScaled || kPromote,
                "block scales multiply each K tile's partial sum: they need the promoted path");
  static_assert(!kBlockScaled || kAtomK == 128,
                "one K tile (atom) is exactly one 128-wide K block of scales (FP8: 128 elements = 128 bytes)");
  static_assert(!kBlockB || kBOneBlock || (kWgTileN == 192 && kBlockN % 64 == 0 && !kSplit) ||
                    (kHalfPart && kBlockN % 256 == 0 && !kSplit),
                "block128x128 b scales: a consumer warpgroup's columns lie in one 128-column scale block, or "
                "in 64-column segments that each do (192 columns; not with split-K), or 256 columns in two "
                "whole blocks (half partials; no split-K)");

  struct Smem {
    u32 a;         // A boxes, stage s at a + s * kTileBytesA (atom t of it at + t * kAtomBytesA)
    u32 b;         // B boxes, stage s at b + s * kTileBytesB (atom t of it at + t * kAtomBytesB)
    u32 scales;    // scale slots (staged block scales, MXFP8 scales), stage s at scales + s * kScaleSlotBytes
    u32 full;      // mbarrier full[s] at full + 8 * s
    u32 empty;     // mbarrier empty[s] at empty + 8 * s
    u32 groups;    // grouped: int ct_end[E], row_base[E], rows[E] from here
    u32 flags;     // split-K: one word per consumer warpgroup
    u32 out;       // TMA-store epilogue: consumer c's slab at out + c * kOutWgBytes
    u32 colsc;     // kColStage: consumer c's column scales at colsc + c * kColWgBytes, f32 per column
    u32 stg;       // dequantizing producer: FP8 staging stage s at stg + s * (kStgBytesA + kStgBytesB) (A, then B)
    u32 stg_sc;    // dequantizing producer: stage s's decoded scales at stg_sc + s * kDqScaleBytes (16 bytes per row)
    u32 stg_full;  // dequantizing producer: mbarriers stg_full[s] at stg_full + 8 * s, stg_empty[s] at + 8 * kDqStg
  };

  // ---- the persistent walk (sm90/scheduler.cuh, sm90/split_k.cuh) ----
  struct KRange;
  struct Tile;
  struct Walk;
  static __device__ __forceinline__ int unit_tile(int u);
  static __device__ __forceinline__ KRange k_range(int u, int k_tiles);
  static __device__ __forceinline__ KRange tile_k_range(int u, const Tile& tile, int k_tiles);
  static __device__ __forceinline__ Walk make_walk(int tiles_m, int tiles_n, const Smem& sm);
  static __device__ __forceinline__ Tile tile_of(const Walk& w, int ct, const GemmParams& p, const Smem& sm);
  static __device__ __forceinline__ void build_groups(const GemmParams& p, const Smem& sm, int tiles_n, int lane);
  template <ScaleType kType>
  static __device__ __forceinline__ const float* b_scale_of(const GemmParams& p, int e);

  // ---- the producer and its staged block scales (sm90/producer.cuh) ----
  struct ScaleSrc;
  static __device__ __forceinline__ int scale_row_a(const ScaleSrc& src, int i);
  static __device__ __forceinline__ void produce(const TmaDesc* tma_a, const TmaDesc* tma_b, const Smem& sm,
                                                 const Walk& w, int k_tiles, const GemmParams& p, int lane);
  static __device__ __forceinline__ ScaleSrc scale_sources(const GemmParams& p, const Tile& tile, int lane);
  static __device__ __forceinline__ bool scales_async(const GemmParams& p, int k_tiles);
  template <ScaleType kType>
  static __device__ __forceinline__ void copy_scale(u32 dst, const float* base, int row, long long lds, int kb,
                                                    int n, bool async);
  static __device__ __forceinline__ void stage_scale_copies(const GemmParams& p, u32 slot, const ScaleSrc& src,
                                                            int kt, int k_end, bool async, int lane);
  static __device__ __forceinline__ void stage_col_scales(const GemmParams& p, u32 slot, const ScaleSrc& src, int kt,
                                                          bool async, int lane);

  // ---- MXFP8: scale staging and the per-k-step mainloop (sm90/mx.cuh) ----
  struct MxWords;
  static __device__ __forceinline__ bool mx_words_aligned(const GemmParams& p);
  static __device__ __forceinline__ u32 mx_word_bytes(const u8* row, int kb, int k_blocks);
  static __device__ __forceinline__ const u8* mx_row_a(const GemmParams& p, const Tile& tile, int r);
  static __device__ __forceinline__ const u8* mx_row_b(const GemmParams& p, const Tile& tile, int c);
  static __device__ __forceinline__ MxWords mx_load(const GemmParams& p, const Tile& tile, int kt, int k_blocks,
                                                    bool aligned, int lane);
  static __device__ __forceinline__ void mx_store(u32 slot, const MxWords& w, int lane);
  static __device__ __forceinline__ void promote_mx(float (&acc)[kMmaM][kAccRegs],
                                                    const float (&part)[kMmaM][kAccRegs], u32 step, u32 b_run,
                                                    int row0);
  static __device__ __forceinline__ void mma_mx_step(float (&d)[kMmaM][kAccRegs], u64 desc_a, u64 desc_b, int ks);
  static __device__ __forceinline__ void mainloop_mx(const Smem& sm, float (&acc)[kMmaM][kAccRegs],
                                                     float (&p0)[kMmaM][kAccRegs], KRange kr, int& stage,
                                                     u32& phase, u32 a_off, u32 b_off, int wg_m, int wg_n,
                                                     int warp, int lane);

  // ---- MXFP8 through the dequantizing producer (sm90/mx_dequant.cuh) ----
  static __device__ __forceinline__ void dq_stage(const TmaDesc* tma_a, const TmaDesc* tma_b, const Smem& sm,
                                                  const Walk& w, const GemmParams& p, int lane);
  static __device__ __forceinline__ void dq_convert(const u32 (&w)[4], float f, u32 (&o)[8]);
  static __device__ __forceinline__ void dq_convert_walk(const GemmParams& p, const Smem& sm, const Walk& w,
                                                         int k_tiles, int ct);
  static __device__ __forceinline__ void mainloop_dq_rega(const Smem& sm, float (&acc)[kMmaM][kAccRegs],
                                                          const KRange& kr, int& stage, u32& phase, int& s8,
                                                          u32& ph8, u32 b_off, int wg_m, int warp, int lane);

  // ---- scales and promotion (sm90/promotion.cuh) ----
  struct ScaleRows;
  struct BlockScales;
  static __device__ __forceinline__ ScaleRows scale_rows(const GemmParams& p, const Tile& tile, int wg_m, int wg_n,
                                                         int warp, int lane);
  template <ScaleType kType>
  static __device__ __forceinline__ float block_scale(const float* base, int row, long long lds, int kb);
  static __device__ __forceinline__ void load_block_scales(const GemmParams& p, const ScaleRows& r, int kb,
                                                           BlockScales& s);
  template <ScaleType kType>
  static __device__ __forceinline__ float staged_scale(u32 word, int kb);
  static __device__ __forceinline__ BlockScales staged_block_scales(u32 slot, int t, int kb, int wg_m, int wg_n,
                                                                    int warp, int lane);
  template <int kRegs>
  static __device__ __forceinline__ void promote(float (&acc)[kMmaM][kAccRegs], const float (&part)[kMmaM][kRegs],
                                                 const BlockScales& s, bool mid1 = false, int off = 0);
  static __device__ __forceinline__ void promote_col_runs(float (&acc)[kMmaM][kAccRegs],
                                                          const float (&part)[kMmaM][kAccRegs],
                                                          const float (&sa)[kMmaM][2], u32 run);
  static __device__ __forceinline__ void promote_col_blocks(float (&acc)[kMmaM][kAccRegs],
                                                            const float (&part)[kMmaM][kAccRegs], u32 slot, int kb,
                                                            int wg_m, int wg_n, int warp, int lane);

  // ---- wgmma issue and the two-atom mainloop (sm90/mainloop.cuh) ----
  static __device__ __forceinline__ void release(const Smem& sm, int s, int lane);
  static __device__ __forceinline__ void zero_k_tail(const Smem& sm, int stage, int valid, int consumer_tid);
  template <int kRegs>
  static __device__ __forceinline__ void mma_tile(float (&d)[kMmaM][kRegs], u32 a_base, u32 b_base, bool first);
  template <int kRegs>
  static __device__ __forceinline__ void fence_all(float (&d)[kMmaM][kRegs]);
  static __device__ __forceinline__ void mainloop_two_atoms(const Smem& sm, float (&acc)[kMmaM][kAccRegs],
                                                            float (&p0)[kMmaM][kAccRegs], KRange kr, int& stage,
                                                            u32& phase, u32 a_off, u32 b_off, int wg_m, int wg_n,
                                                            int warp, int lane);

  // ---- ping-pong consumers (sm90/pingpong.cuh) ----
  static __device__ __forceinline__ void skip_stages(int n, int& stage, u32& phase);

  // ---- split-K (sm90/split_k.cuh) ----
  static __device__ __forceinline__ bool split_reduce(float (&acc)[kMmaM][kAccRegs], void* ws, int ct, int s,
                                                      int consumer, int tid, const Smem& sm);

  // ---- the direct epilogue (sm90/epilogue_direct.cuh) ----
  static __device__ __forceinline__ void store_pair(const GemmParams& p, bool paired_ok, int row, int col, float v0,
                                                    float v1);
  static __device__ __forceinline__ void col_factors(const GemmParams& p, const float* sb_row, float b_tile, int col,
                                                     float& f0, float& f1);
  static __device__ __forceinline__ void apply_fn_pair(const GemmParams& p, const Tile& tile, int row, int col,
                                                       float& v0, float& v1);

  // ---- the TMA-store epilogue (sm90/epilogue_tma_store.cuh) ----
  static __device__ __forceinline__ bool tma_slab(const Tile& tile, int wg_m);
  static __device__ __forceinline__ void store_tile_tma(const GemmParams& p, const Smem& sm, const TmaDesc* tma_out,
                                                        const Tile& tile, const float (&acc)[kMmaM][kAccRegs],
                                                        const float (&row_f)[kMmaM][2], float b_tile,
                                                        const float (&col_ld)[kColRegs], int wg_m, int wg_n,
                                                        int consumer, int tid);

  // ---- the consumers (sm90/consumer.cuh) and the kernel (sm90/kernel.cuh) ----
  static __device__ __forceinline__ void consume(const GemmParams& p, const Smem& sm, const Walk& w, int k_tiles,
                                                 int consumer, void* ws, const TmaDesc* tma_out, bool out_tma);
  // tma_out / out_tma: the output's tensor map and whether to use it (TMA-store configs only, and only
  // where the runtime could encode the map: else the direct epilogue runs).
  static __device__ __forceinline__ void run(const TmaDesc& tma_a, const TmaDesc& tma_b, const GemmParams& p,
                                             void* ws, const TmaDesc* tma_out = nullptr, bool out_tma = false);
};

}  // namespace sm90
}  // namespace kiln_dev
