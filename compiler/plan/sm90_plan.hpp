// compiler/plan/sm90_plan.hpp — the sm90 family's rules: which specs, which configs, which launch.
//
// The sm90 family (templates/kernels/sm90_gemm.cuh and its parts templates/kernels/sm90/*.cuh, named
// sm90/*.cuh below: TMA + warp-specialized wgmma, persistent) is kiln's dense and grouped (offsets /
// masked) GEMM on sm_90a. plan.cpp's select_family / check_config / default_config / launch_shape call
// into this file for KernelFamily::kSm90Gemm; nothing here touches libcuda. Defined in sm90_plan.cpp
// (supported specs, config checks), sm90_heuristic.cpp (default config, tuning space) and sm90_layout.cpp
// (threads, shared memory, workspace, launch shape, MXFP8 pre-pass).
//
// How a TileConfig reads for this family (the fields are the sm80 family's, reinterpreted):
//   block_m, block_n  the block tile; block_k = K elements per stage: one 128-byte swizzle atom (64
//                     bf16/f16, 128 FP8 elements), or two (256 FP8 elements: promoted FP8 only, the v4
//                     mainloop that overlaps each atom's promotion with the next atom's wgmmas)
//   stages            depth of the TMA ring
//   warps_m, warps_n  the CONSUMER warps: warps_m / 4 warpgroups along M (a warpgroup's 4 warps stack
//                     along M, 16 rows each) x warps_n warpgroups along N; 1..3 warpgroups (3 only as
//                     warps 12 x 1 with warpgroup tiles of at most 64 x 128). One producer warpgroup
//                     comes on top (two for MXFP8's dequantizing producer, block_k 64), so a block has
//                     128 * (1 + warps_m / 4 * warps_n) threads, or 512 there (two consumers; sm90_threads;
//                     TileConfig::threads() counts the consumers only). pingpong = 1 (warps 4 x 1): two
//                     consumer warpgroups that each own whole tiles and take them in turn (384 threads;
//                     sm90/pingpong.cuh).
//   group_m           grouped rasterization of the persistent tile walk
// FP8 accumulators are promoted to f32 every K tile whenever the registers allow it (sm90_promotes);
// block-scaled FP8 (DeepSeek 1x128 x 128x128) needs it, so its configs are warpgroup tiles of at most
// 64 x 128, or 64 x 192 with one atom per stage and 1-2 consumer warpgroups (no split-K), and its
// default is 128 x 128 over two consumer warpgroups (128 x 192 where its waves fill clearly better).
//
//   if (sm90_supports(spec, arch)) ...                    // select_family's hook
//   TileConfig c = sm90_default_config(spec, arch, sizes);
//   KILN_RETURN_IF_ERROR(sm90_check_config(spec, arch, c));
//   LaunchShape ls = sm90_launch_shape(spec, c, sizes);   // grid = tiles: the runtime caps it at the SMs
#pragma once

#include <vector>

#include "compiler/plan/plan.hpp"

namespace kiln {

// Whether the sm90 family computes spec on arch: sm_90a, dense or grouped (offsets / masked, at most
// kSm90MaxExperts experts) fprop, two bf16, two f16 or two FP8
// operands, bf16/f16/f32 out. FP8 scales: a tensor | m | block1x128, b tensor | n | block128x128 (f32;
// the blocks also ue8m0). Assumes select_family's operand and problem checks passed.
// Grouped GEMMs on the sm90 family take at most this many experts (a per-CTA table in shared memory).
inline constexpr int kSm90MaxExperts = 1024;

bool sm90_supports(const KernelSpec& spec, const Arch& arch);
// Whether a plan of the sm90 family runs the bucket of `rows_per_expert` rows on the portable family
// instead: grouped FP8 x FP8 with tensor or per-row scales at <= 16 rows per expert, where the 64-row
// wgmma tile is mostly padding (H200, 2026-11: 1.32-1.47x `_scaled_grouped_mm` on the
// portable family against 1.01-1.26x on sm90 at 2-16 rows per expert; bench/RESULTS.md).
bool sm90_portable_bucket(const KernelSpec& spec, int64_t rows_per_expert);
// Whether spec is MXFP8 x MXFP8 (E8M0 per 32 along K on both operands): the kernel promotes every
// 32-K wgmma k-step's partial with its scales (sm90/mx.cuh).
bool sm90_mx(const KernelSpec& spec);
// Whether cfg runs spec (MXFP8) with the dequantizing producer (block_k 64, sm90/mx_dequant.cuh):
// the producer warpgroup converts both operands to bf16 with their E8M0 scales folded in, and the
// consumers accumulate bf16 wgmmas unpromoted.
bool sm90_mx_dequant(const KernelSpec& spec, const TileConfig& cfg);
// ... and dequantizes A into the consumers' wgmma registers: warpgroup tiles of 64 rows (the kernel's
// kDqRegA); the bf16 ring then holds B only.
bool sm90_mx_reg_a(const KernelSpec& spec, const TileConfig& cfg);
// MXFP8 at large M, the bf16 pre-pass (runtime/mx_prepass.hpp): one launch converts X and W to bf16
// (exactly: the values the dequantizing kernel makes) into the caller's workspace, then the plain bf16
// kernel runs the product. Offered for MXFP8 x MXFP8 GEMMs, dense and grouped, on the sm90 family (not
// KILN_FAMILY=sm80) from kMxPrepassMinM rows (grouped: per expert, on average); it needs 2 (M + N) K
// bytes of workspace (grouped: 2 (M + E N) K), which the caller opts into by passing them
// (Plan::mx_prepass_workspace_bytes). H200 (docs/performance.md): at M = 512 the pre-pass
// was 1.14-1.77x faster than the fused kernel on the four N x K shapes timed; at M = 256 it lost on
// 2112 x 7168 (0.67x) and tied on 4096 x 7168, so it starts at 512.
inline constexpr int64_t kMxPrepassMinM = 512;
bool sm90_mx_prepass_supported(const KernelSpec& spec, const Arch& arch);
// The workspace bytes of the pre-pass for sizes.m rows of X (grouped: all experts' rows; masked: E x
// max_m): the first 1 MiB is left alone (the split-K counters, kSm90SplitCounterSlots words, which a
// caller's workspace may also hold for the plan's small-M buckets: they must stay zero), then the bf16
// copy of X (M x K) and that of W (N x K, or E x N x K), each starting 256-byte aligned; 0 where it is
// not offered (unsupported spec, K % 32 != 0, or fewer than kMxPrepassMinM rows per expert).
int64_t sm90_mx_prepass_workspace_bytes(const KernelSpec& spec, const Arch& arch, const ProblemSizes& sizes);
// The same without the spec / arch check (the runtime's hot path, for plans that have the pre-pass).
int64_t sm90_mx_prepass_bytes(const KernelSpec& spec, const ProblemSizes& sizes);
// Byte offsets of X's and W's bf16 copies in that workspace.
int64_t sm90_mx_prepass_a_offset();
int64_t sm90_mx_prepass_b_offset(const ProblemSizes& sizes);
// The spec the pre-pass's GEMM runs: spec with unscaled bf16 operands (out, epilogue, gate|up, pass kept).
KernelSpec sm90_mx_prepass_gemm_spec(const KernelSpec& spec);
// The spec the conversion kernel is compiled and cached under: spec's operands only (one kernel for every
// MXFP8 spec, whatever its output, epilogue or layout).
KernelSpec sm90_mx_prepass_convert_spec(const KernelSpec& spec);
// Whether spec has DeepSeek block scales (a block1x128 and/or b block128x128): the kernel multiplies
// each 128-K tile's promoted partial by them, so only promoted configs implement it (sm90_promotes).
bool sm90_block_scaled(const KernelSpec& spec);
// Quantized wgrad of two FP8 1x128 column-wise copies (dYᵀ [N, M], Xᵀ [K, M]): b's block scales vary per
// column (kernel n) and 128 K (tokens), staged per column (templates/kernels/sm90/producer.cuh).
bool sm90_col_blocks(const KernelSpec& spec);
// KILN_FAMILY=sm80 (common/env.hpp): select_family plans the portable family instead.
bool sm90_disabled_by_env();
// Problem sizes beyond the shared checks of can_implement (TMA: dimensions < 2^32, boxes <= 256 rows).
Status sm90_can_implement(const KernelSpec& spec, const ProblemSizes& sizes);
Status sm90_check_config(const KernelSpec& spec, const Arch& arch, const TileConfig& cfg);
TileConfig sm90_default_config(const KernelSpec& spec, const Arch& arch, const ProblemSizes& sizes);
LaunchShape sm90_launch_shape(const KernelSpec& spec, const TileConfig& cfg, const ProblemSizes& sizes);
// The heuristic stores through TMA (tma_store, sm90/epilogue_tma_store.cuh) from this many rows,
// per M bucket, and the tuner ranks TMA-store variants first from there (docs/performance.md).
inline constexpr int64_t kSm90TmaStoreMinRows = 64;
// Block size (producer warpgroup(s) + consumers: MXFP8's dequantizing producer is two warpgroups) and
// dynamic shared memory (ring + barriers + 1024 bytes of alignment slack); mirrors
// sm90::Gemm<Config>::kThreads / kSmemBytes (templates/kernels/sm90/config.cuh).
int sm90_threads(const KernelSpec& spec, const TileConfig& cfg);
int sm90_smem_bytes(const KernelSpec& spec, const TileConfig& cfg);
// Device workspace a launch of cfg needs for sizes (split-K's counters and partial sums; 0 without
// split-K). Its counters must be zero before the first launch; every completed launch leaves them zero.
int64_t sm90_workspace_bytes(const KernelSpec& spec, const TileConfig& cfg, const ProblemSizes& sizes);
// Split-K's counters live in a fixed region of kSm90SplitCounterSlots int32 slots at the workspace's start
// (compiler/plan/launch_rule.hpp; one per tile and consumer warpgroup); a launch with more slots is refused.
int64_t sm90_split_slots(const TileConfig& cfg, const ProblemSizes& sizes);
// Whether the kernel adds each K tile's FP8 partial sum into f32 registers (see the kernel's header).
bool sm90_promotes(const KernelSpec& spec, const TileConfig& cfg);
// Block-scaled 64 x 256 warpgroups (one atom per stage, 1 or 2 consumers, no split-K): promoted in two
// 128-column halves through one half-width partial (sm90/mainloop.cuh).
bool sm90_half_partial(const KernelSpec& spec, const TileConfig& cfg);
// K elements of one 128-byte swizzle atom (a TMA box's width): 64 for bf16/f16, 128 for FP8.
int sm90_atom_k(const KernelSpec& spec);
// Whether block scales travel through shared memory, copied by a producer warp (sm90/producer.cuh:
// block-scaled specs on two-atom stages, three consumer warpgroups, or one-atom tiles whose scale slots
// fit in shared memory beside the ring); the other block-scaled configs load them per consumer thread
// from global memory (sm90/promotion.cuh).
bool sm90_staged_scales(const KernelSpec& spec, const TileConfig& cfg);
// The relative Frobenius error run_check should allow for this family: wgmma's FP8 path accumulates in
// a truncated ~e8m13 format (measured models: NVIDIA tensor-core studies, arXiv 2512.07004), so f32
// and f16 outputs of FP8 products cannot meet the exact-accumulation tolerances; 16-bit operands
// accumulate in f32 and keep them. `base` is the family-independent tolerance.
double sm90_check_tolerance(const KernelSpec& spec, const TileConfig& cfg, int64_t k, double base);
// The configs a tuner should try for spec on sm_90a (all pass sm90_check_config).
std::vector<TileConfig> sm90_config_space(const KernelSpec& spec, const Arch& arch);

}  // namespace kiln
