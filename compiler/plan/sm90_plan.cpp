// compiler/plan/sm90_plan.cpp — sm90 family: which specs it computes and which configs it accepts.
//
// The rules mirror the static_asserts of templates/kernels/sm90/config.cuh: a config that passes
// sm90_check_config instantiates and compiles without spills (tests/nvrtc/sm90_gemm_nvrtc_test.cpp).
// The default heuristic and the tuner's space are in sm90_heuristic.cpp; shared memory, threads,
// workspace and the launch shape in sm90_layout.cpp.
#include "compiler/plan/sm90_plan.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "common/env.hpp"
#include "compiler/plan/gemm_view.hpp"
#include "compiler/plan/launch_rule.hpp"
#include "compiler/plan/sm90_internal.hpp"

namespace kiln {

using namespace sm90_internal;

namespace {

using std::string;
using std::to_string;

constexpr int kMaxAccRegs = 128;   // f32 accumulators (+ partials) per consumer thread
// Ping-pong consumers hold one whole tile each and no partials: 128 x 176 and 128 x 192 tiles fit the
// consumers' 232 registers without spills (the nvrtc tier checks).
constexpr int kMaxPingPongAccRegs = 192;
constexpr int kMaxPromotedBlockRegs = 192;  // the same for block-scaled one-atom tiles (64 x 192 per warpgroup)

}  // namespace

bool sm90_supports(const KernelSpec& spec, const Arch& arch) {
  if (!(arch.sm() == 90 && arch.arch_specific)) return false;
  // Dense, and grouped with offsets or masked layouts (the kernel's expert table, sm90/scheduler.cuh)
  // up to kSm90MaxExperts.
  const bool dense = spec.op == Op::kGemm && spec.layout == GroupLayout::kDense;
  const bool grouped = spec.op == Op::kGroupedGemm &&
                       (spec.layout == GroupLayout::kOffsets || spec.layout == GroupLayout::kMasked) &&
                       spec.experts >= 1 && spec.experts <= kSm90MaxExperts;
  if (!(dense || grouped)) return false;
  const Format a = spec.a.format, b = spec.b.format, o = spec.out.format;
  const bool same16 = (a == Format::kBf16 || a == Format::kF16) && a == b &&
                      spec.a.scale == ScaleGranularity::kNone && spec.b.scale == ScaleGranularity::kNone;
  // FP8 scales (sm90/promotion.cuh): tensor or per-row f32 factors in the epilogue, DeepSeek blocks
  // (f32 or ue8m0) promoted per 128-K tile; a: tensor | m | block1x128, b: tensor | n | block128x128.
  auto fp8_scale_ok = [](const OperandSpec& op, bool is_a) {
    if (!format_is_fp8(op.format)) return false;
    const ScaleGranularity row = is_a ? ScaleGranularity::kM : ScaleGranularity::kN;
    const ScaleGranularity block = is_a ? ScaleGranularity::kBlock1x128 : ScaleGranularity::kBlock128x128;
    if (op.scale == ScaleGranularity::kTensor || op.scale == row) return op.scale_type == ScaleType::kF32;
    if (op.scale == block) return op.scale_type == ScaleType::kF32 || op.scale_type == ScaleType::kUe8m0;
    return false;
  };
  // Backward passes (compiler/plan/gemm_view.hpp): bf16 / f16 operands read MN-major, the plain GEMM (no
  // epilogue), dense or grouped (grouped wgrad: the experts' rows are the reduction, sm90/scheduler.cuh).
  // Quantized wgrad (sm90_col_blocks): FP8 1x128 blocks on both column-wise copies, dense or grouped (the
  // grouped quantizer's padded copies: each expert's tokens from a 128-column boundary).
  // Quantized dgrad (dgrad_reads_transposed_w): the forward's FP8 kernel on dY and W's transposed copy,
  // dense or grouped; W scaled per tensor or in 128x128 blocks, the scales that transpose exactly (a
  // per-channel scale runs along dgrad's reduction).
  // Passes that are the forward's kernel on copies (backward_runs_forward_gemm): dgrad on W's column-wise
  // copy (MXFP8, or FP8 b=...:n), dense or grouped (W's copy per expert); MXFP8 wgrad and FP8 wgrad with
  // tensor / per-row scales on the copies, dense (a grouped one needs each expert's tokens in their own K
  // range of the copies, which the forward kernel does not walk). Their scales obey the forward's rules.
  if (spec.pass != Pass::kFprop) {
    const bool quantized_dgrad = dgrad_reads_transposed_w(spec) && fp8_scale_ok(spec.a, true) &&
                                 fp8_scale_ok(spec.b, false) && spec.b.scale != ScaleGranularity::kN;
    const bool copies = backward_runs_forward_gemm(spec) && (spec.pass == Pass::kDgrad || dense) &&
                        (sm90_mx(spec) || (fp8_scale_ok(spec.a, true) && fp8_scale_ok(spec.b, false)));
    return (same16 || sm90_col_blocks(spec) || quantized_dgrad || copies) &&
           (o == Format::kBf16 || o == Format::kF16 || o == Format::kF32) &&
           spec.out.scale == ScaleGranularity::kNone && spec.gate_up == GateUp::kNone && spec.epilogue.empty();
  }
  const bool fp8 = fp8_scale_ok(spec.a, true) && fp8_scale_ok(spec.b, false);
  // MXFP8 x MXFP8 (sm90/mx.cuh): each k-step's partial promoted with its E8M0 scales.
  const bool mx = sm90_mx(spec);
  const bool out_ok = (o == Format::kBf16 || o == Format::kF16 || o == Format::kF32) &&
                      spec.out.scale == ScaleGranularity::kNone;
  // Epilogue functors run in the kernel's epilogue (sm90/epilogue_direct.cuh), gate|up pairs when
  // interleaved: a thread holds columns 2t, 2t + 1 of the wgmma accumulator. Stacked halves stay on the
  // portable family (its cp.async rows are permuted; a TMA box cannot be).
  return (same16 || fp8 || mx) && out_ok && spec.gate_up != GateUp::kStacked;
}

bool sm90_portable_bucket(const KernelSpec& spec, int64_t rows_per_expert) {
  return spec.op == Op::kGroupedGemm && spec.pass == Pass::kFprop && format_is_fp8(spec.a.format) && format_is_fp8(spec.b.format) &&
         !sm90_block_scaled(spec) && rows_per_expert <= 16;
}

bool sm90_mx(const KernelSpec& spec) {
  return spec.a.format == Format::kMxfp8 && spec.b.format == Format::kMxfp8 &&
         spec.a.scale == ScaleGranularity::kBlock1x32 && spec.b.scale == ScaleGranularity::kBlock1x32;
}

bool sm90_mx_dequant(const KernelSpec& spec, const TileConfig& cfg) { return sm90_mx(spec) && cfg.block_k == 64; }

bool sm90_mx_reg_a(const KernelSpec& spec, const TileConfig& cfg) {
  return sm90_mx_dequant(spec, cfg) && cfg.block_m / std::max(1, cfg.warps_m / 4) == 64;
}

bool sm90_block_scaled(const KernelSpec& spec) {
  return spec.a.scale == ScaleGranularity::kBlock1x128 || spec.b.scale == ScaleGranularity::kBlock128x128 ||
         sm90_col_blocks(spec);
}

bool sm90_col_blocks(const KernelSpec& spec) {
  const auto block = [](const OperandSpec& op) {
    return format_is_fp8(op.format) && op.scale == ScaleGranularity::kBlock1x128 &&
           (op.scale_type == ScaleType::kF32 || op.scale_type == ScaleType::kUe8m0);
  };
  return spec.pass == Pass::kWgrad && block(spec.a) && block(spec.b);
}

bool sm90_disabled_by_env() {
  const std::optional<string> v = env::get(env::kFamily);
  return v && *v == "sm80";
}

Status sm90_can_implement(const KernelSpec& spec, const ProblemSizes& sizes) {
  // can_implement already bounds M, N, K below 2^31 (TMA takes dimensions < 2^32) and K * elem_bytes
  // to a multiple of 16 (TMA global strides); row strides and base alignment are per run
  // (runtime/operands.cpp, runtime/sm90_launch.cpp). Nothing else limits this family today.
  (void)spec;
  (void)sizes;
  return Status::Ok();
}

bool sm90_promotes(const KernelSpec& spec, const TileConfig& cfg) {
  if (!format_is_fp8(spec.a.format) && !(sm90_mx(spec) && !sm90_mx_dequant(spec, cfg))) return false;
  if (2 * acc_regs(cfg) <= kMaxAccRegs) return true;
  // Block-scaled tiles with one atom per stage and 1 or 2 consumer warpgroups also promote 64 x 192 per
  // warpgroup: 96 accumulators + 96 partials in the consumers' 232 registers (sm90/promotion.cuh).
  // Other FP8 tiles that wide accumulate fast (unpromoted).
  return (sm90_block_scaled(spec) && !sm90_col_blocks(spec) && atoms(spec, cfg) == 1 && consumers(cfg) <= 2 &&
          2 * acc_regs(cfg) <= kMaxPromotedBlockRegs) ||
         sm90_half_partial(spec, cfg);
}

bool sm90_half_partial(const KernelSpec& spec, const TileConfig& cfg) {
  if (!sm90_block_scaled(spec) || sm90_col_blocks(spec) || atoms(spec, cfg) != 1 || consumers(cfg) > 2 || cfg.split_k != 1)
    return false;
  const int wgs_m = std::max(1, cfg.warps_m / 4), wgs_n = std::max(1, cfg.warps_n);
  return cfg.block_m / wgs_m == 64 && cfg.block_n / wgs_n == 256;
}

int sm90_atom_k(const KernelSpec& spec) { return kRowBytes / elem_bytes(spec.a.format); }

bool sm90_staged_scales(const KernelSpec& spec, const TileConfig& cfg) {
  if (!sm90_block_scaled(spec)) return false;
  // b's per-column scales are read from the staged slot only (sm90/producer.cuh stage_col_scales).
  if (sm90_col_blocks(spec) || atoms(spec, cfg) == 2 || consumers(cfg) == 3) return true;
  // One-atom tiles with 1 or 2 consumers: staged wherever the slots fit beside the ring
  // (4 (block_m + 4) bytes per stage), which was 3-11% faster than the consumers' own global loads at
  // M = 128 .. 8192 on an H200 (docs/performance.md). A ring that fills shared memory keeps those loads.
  // (The sm90 family compiles for sm_90a only.)
  return sm90_smem_bytes_with_slots(spec, cfg, /*staged_slots=*/true) <=
         Arch{9, 0, true}.max_smem_per_block();
}

Status sm90_check_config(const KernelSpec& spec, const Arch& arch, const TileConfig& cfg) {
  const string name = "config " + cfg.to_string() + " (sm90_gemm): ";
  if (cfg.decode != 0)
    return InvalidArgument(name + "decode=" + to_string(cfg.decode) + " names a decode kernel of the portable family (KILN_FAMILY=sm80, or a "
                           "plan's small-M bucket); the sm90 family takes decode 0");
  if (!sm90_supports(spec, arch))
    return Unsupported(name + "the sm90 family needs sm_90a and two bf16, two f16, two FP8 (scales: a tensor, m "
                       "or block1x128; b tensor, n or block128x128) or two MXFP8 operands, and no stacked "
                       "gate|up; backward passes two bf16 or two f16 operands without an epilogue, a quantized "
                       "wgrad of two FP8 block1x128 column-wise copies, of FP8 copies scaled per tensor or per "
                       "row (a tensor|m, b tensor|n) or of two MXFP8 copies, a quantized dgrad of FP8 dY and a W "
                       "scaled per tensor or in 128x128 blocks, or an MXFP8 or per-channel FP8 dgrad on W's "
                       "column-wise copy (" +
                       arch.name() + ")");
  const struct {
    const char* field;
    int v, lo, hi;
  } ranges[] = {{"block_m", cfg.block_m, 64, 256}, {"block_n", cfg.block_n, 64, 256},
                {"warps_m", cfg.warps_m, 4, 12},   {"warps_n", cfg.warps_n, 1, 2},
                {"stages", cfg.stages, 2, 16},     {"group_m", cfg.group_m, 1, 64},
                {"cluster_m", cfg.cluster_m, 1, 2},  {"split_k", cfg.split_k, 1, 64}};
  for (const auto& r : ranges) {
    if (r.v < r.lo || r.v > r.hi)
      return InvalidArgument(name + r.field + "=" + to_string(r.v) + " is out of range (" + to_string(r.lo) +
                             ".." + to_string(r.hi) + ")");
  }
  const int eb = elem_bytes(spec.a.format);
  const bool dq = sm90_mx_dequant(spec, cfg);
  if (!dq && cfg.block_k * eb != kRowBytes && cfg.block_k * eb != 2 * kRowBytes)
    return InvalidArgument(
        name + "block_k=" + to_string(cfg.block_k) + " is " + to_string(cfg.block_k * eb) +
        " bytes of K; a stage of the TMA/wgmma ring holds one or two 128-byte swizzle atoms (block_k " +
        to_string(kRowBytes / eb) + " or " + to_string(2 * kRowBytes / eb) + " for " + format_name(spec.a.format) +
        ")" + (sm90_mx(spec) ? string("; a=mxfp8 also takes block_k 64: the producer dequantizes to bf16") : string()));
  if (cfg.warps_m % 4 != 0)
    return InvalidArgument(name + "warps_m=" + to_string(cfg.warps_m) +
                           " is not a multiple of 4: consumer warps come in warpgroups stacked along M");
  const int n_consumers = consumers(cfg);
  if (n_consumers < 1 || n_consumers > 3 || (n_consumers == 3 && cfg.warps_n != 1))
    return InvalidArgument(name + to_string(n_consumers) + " consumer warpgroups (warps_m / 4 * warps_n = " +
                           to_string(cfg.warps_m) + " / 4 * " + to_string(cfg.warps_n) +
                           "); the kernel takes 1 or 2, or 3 stacked along M (warps 12x1)");
  const int wgs_m = cfg.warps_m / 4, wgs_n = cfg.warps_n;
  if (cfg.block_m % (64 * wgs_m) != 0)
    return InvalidArgument(name + "block_m=" + to_string(cfg.block_m) + " is not a multiple of 64 * " +
                           to_string(wgs_m) + ": each consumer warpgroup owns whole m64 wgmma slabs");
  const int wg_n = cfg.block_n / wgs_n;
  // The wgmma N the kernel spells out (ptx/wgmma.cuh): powers of two, and the widths between them that
  // let 132 SMs fill (e.g. N = 2112 = 11 x 192).
  const bool wg_n_ok = wg_n == 64 || wg_n == 96 || wg_n == 112 || wg_n == 128 || wg_n == 144 || wg_n == 160 ||
                       wg_n == 176 || wg_n == 192 || wg_n == 208 || wg_n == 256;
  if (cfg.block_n % wgs_n != 0 || !wg_n_ok)
    return InvalidArgument(name + "block_n=" + to_string(cfg.block_n) + " over " + to_string(wgs_n) +
                           " warpgroups is not a wgmma N of 64, 96, 112, 128, 144, 160, 176, 192, 208 or 256 per "
                           "warpgroup");
  if (acc_regs(cfg) > (cfg.pingpong ? kMaxPingPongAccRegs : kMaxAccRegs))
    return InvalidArgument(name + "a consumer warpgroup tile of " + to_string(cfg.block_m / wgs_m) + "x" +
                           to_string(wg_n) + " needs " + to_string(acc_regs(cfg)) +
                           " f32 accumulators per thread; at most " +
                           to_string(cfg.pingpong ? kMaxPingPongAccRegs : kMaxAccRegs) +
                           (cfg.pingpong ? string(" for a ping-pong warpgroup (a smaller tile, or pingpong 0 "
                                                  "with two warpgroups sharing it)")
                                         : string(" (use two warpgroups or a smaller tile)")));
  // Three consumer warpgroups have 160 registers each (sm90/config.cuh's register split).
  if (n_consumers == 3 && (acc_regs(cfg) > 64 || atoms(spec, cfg) != 1))
    return InvalidArgument(name + "3 consumer warpgroups of " + to_string(cfg.block_m / wgs_m) + "x" +
                           to_string(wg_n) + " with block_k=" + to_string(cfg.block_k) +
                           ": their 160 registers hold warpgroup tiles of at most 64x128 (64 accumulators + 64 "
                           "partials) and one 128-byte atom per stage");
  // Promoted two-atom stages alternate two partials (sm90/mainloop.cuh); unpromoted ones (bf16, f16,
  // fast-accumulating FP8) issue both atoms into the accumulators.
  if (atoms(spec, cfg) == 2 && sm90_promotes(spec, cfg) && 3 * acc_regs(cfg) > 192)
    return InvalidArgument(name + "block_k=" + to_string(cfg.block_k) +
                           " (two 128-byte atoms per stage) alternates two promoted FP8 partials: warpgroup tiles "
                           "of at most 64x128 (accumulators + 2 partials <= 192 registers), not " +
                           to_string(cfg.block_m / wgs_m) + "x" + to_string(wg_n) + " (use block_k " +
                           to_string(kRowBytes / eb) + ")");
  // Block scales multiply each K tile's promoted partial (sm90/promotion.cuh).
  if (sm90_block_scaled(spec)) {
    const string scales = string("a=") + format_name(spec.a.format) + ":" + scale_granularity_name(spec.a.scale) +
                          " b=" + format_name(spec.b.format) + ":" + scale_granularity_name(spec.b.scale);
    const bool one_block = wg_n <= 128 && 128 % wg_n == 0;
    if (wg_n == 256 && atoms(spec, cfg) == 1 && cfg.split_k != 1)
      return InvalidArgument(name + "split_k=" + to_string(cfg.split_k) + " with " + scales +
                             " on 256-column warpgroups (promoted in two 128-column halves): "
                             "split-K is not supported there; use split_k 1, or block_n 64 / 128");
    if (spec.b.scale == ScaleGranularity::kBlock128x128 && !one_block && !sm90_half_partial(spec, cfg) &&
        (wg_n % 64 != 0 || wg_n > 192 || atoms(spec, cfg) == 2 || consumers(cfg) == 3))
      return InvalidArgument(name + "block_n=" + to_string(cfg.block_n) + " gives each consumer warpgroup " +
                             to_string(wg_n) + " columns; with " + scales +
                             " a warpgroup's columns must lie in one 128-column scale block (64 or 128 per "
                             "warpgroup), or in 64-column segments with one atom per stage and 1 or 2 "
                             "consumer warpgroups (192 per warpgroup: block_n 192 with warps 8x1; 64x256 per "
                             "warpgroup: block_n 256 with warps 8x1 or 4x1, block_k 128)");
    // Quantized wgrad: b's scales vary per column; each consumer thread reads its columns' scales from the
    // stage's slot in runs of 4 (sm90/promotion.cuh promote_col_blocks).
    if (sm90_col_blocks(spec) && (atoms(spec, cfg) != 1 || wg_n > 128 || wg_n % 16 != 0 || n_consumers > 2))
      return InvalidArgument(name + scales + " (per-column scales of b, per 128 K): one 128-byte atom per stage "
                             "(block_k " + to_string(kRowBytes / eb) + "), at most 128 columns per consumer "
                             "warpgroup in multiples of 16, and 1 or 2 consumer warpgroups; this config: block_k " +
                             to_string(cfg.block_k) + ", " + to_string(wg_n) + " columns per warpgroup, " +
                             to_string(n_consumers) + " warpgroups (e.g. 128x128 with warps 8x1)");
    if (!sm90_promotes(spec, cfg))
      return InvalidArgument(
          name + "a consumer warpgroup tile of " + to_string(cfg.block_m / wgs_m) + "x" + to_string(wg_n) +
          " cannot be promoted (" + to_string(2 * acc_regs(cfg)) +
          " f32 registers for accumulators + partials, at most " + to_string(kMaxAccRegs) + ", or " +
          to_string(kMaxPromotedBlockRegs) + " with one atom per stage and 1 or 2 consumer warpgroups); " +
          scales +
          " scales are applied to each 128-K tile's promoted partial: use warpgroup tiles of "
          "at most 64x192 (e.g. 128x128 or 128x192 with warps 8x1), or 64x256 with one atom "
          "per stage (block_n 256, block_k 128, promoted in two halves)");
  }
  // MXFP8 promotes every k-step (sm90/mx.cuh): the accumulators, the partial and a k-step's
  // column scales share the consumer's 232 registers.
  // With block_k 64 (sm90/mx_dequant.cuh) the producer warpgroup dequantizes both operands to bf16
  // stages and two consumer warpgroups accumulate them unpromoted.
  if (dq && (n_consumers != 2 || cfg.cluster_m != 1 || cfg.split_k != 1))
    return InvalidArgument(name + "a=mxfp8 b=mxfp8 with block_k 64 (the producer dequantizes to bf16) takes two "
                           "consumer warpgroups (warps 8x1 or 4x2), no clusters and no split-K (cluster_m 1, "
                           "split_k 1); this config: " + to_string(n_consumers) + " warpgroups, cluster_m " +
                           to_string(cfg.cluster_m) + ", split_k " + to_string(cfg.split_k));
  if (sm90_mx(spec) && !dq && (atoms(spec, cfg) != 1 || acc_regs(cfg) > 64 || n_consumers > 2))
    return InvalidArgument(name + "a=mxfp8 b=mxfp8 promotes every 32-K step: one 128-byte atom per stage "
                           "(block_k " + to_string(kRowBytes / eb) + "), warpgroup tiles of at most 64 "
                           "accumulators per thread (64x128 or 128x64; this config: " +
                           to_string(cfg.block_m / wgs_m) + "x" + to_string(wg_n) + ", block_k " +
                           to_string(cfg.block_k) + ") and 1 or 2 consumer warpgroups (e.g. 128x128 with warps 8x1)");
  // The TMA-store epilogue (sm90/epilogue_tma_store.cuh): a GLU writes N / 2 columns from column pairs. (Grouped
  // problems take it: a warpgroup whose slab crosses its expert's last row stores that slab directly.)
  // Boxes of 128 bytes where the warpgroup's columns are a whole number of them, else of 16 columns.
  if (cfg.tma_store != 0 && wg_n % 16 != 0)
    return InvalidArgument(
        name + "tma_store=" + to_string(cfg.tma_store) + " with " + to_string(wg_n) +
        " columns per warpgroup: the staged slab is stored in boxes of 128 bytes or of 16 columns; use "
        "tma_store 0 or a multiple of 16 columns");
  const bool tma_value_ok = tma_store_value_ok(cfg.tma_store);
  if (cfg.tma_store != 0 && (!tma_value_ok || spec.gate_up != GateUp::kNone))
    return InvalidArgument(name + "tma_store=" + to_string(cfg.tma_store) + " with " +
                           (!tma_value_ok ? string("a value other than 0, 1, 2 or 4") : string("gate_up")) +
                           ": the TMA-store epilogue takes problems without gate|up (tma_store 0)");
  // tma_store = 2 / 4 stores the slab in two / four chunks of whole boxes (128 bytes of a row, or 16
  // columns), each of ceil(boxes / chunks) but the last, which must not be empty (5 boxes in 4 chunks
  // would be 2 + 2 + 1 + 0: a wait and a commit for nothing, through the buffer of 3 chunks).
  if (cfg.tma_store >= 2 && wg_n % 16 == 0) {
    const int box_cols = out_box_cols(spec, cfg);
    const int boxes = wg_n / box_cols, chunks = cfg.tma_store;
    if ((chunks - 1) * ((boxes + chunks - 1) / chunks) >= boxes)
      return InvalidArgument(name + "tma_store=" + to_string(chunks) + " with " + to_string(wg_n) +
                             " columns per warpgroup: " + to_string(boxes) + " output box(es) of " +
                             to_string(box_cols) + " columns do not fill " + to_string(chunks) +
                             " chunks of ceil(" + to_string(boxes) + " / " + to_string(chunks) +
                             ") boxes; use tma_store 1" + (chunks == 4 && boxes >= 2 ? " or 2" : ""));
  }
  // Split-K with unpromoted two-atom stages: ptxas serializes the wgmmas (C7520, the conditional second
  // atom of a split's odd tail), so that pairing is refused.
  if (cfg.split_k > 1 && atoms(spec, cfg) == 2 && !sm90_promotes(spec, cfg))
    return InvalidArgument(name + "split_k=" + to_string(cfg.split_k) + " with block_k=" + to_string(cfg.block_k) +
                           " (two unpromoted atoms per stage): ptxas serializes that kernel's wgmmas; use block_k " +
                           to_string(kRowBytes / eb) + " or split_k 1");
  // Split-K on block-scaled 192-column warpgroups (96 accumulators + 96 partials) spills in ptxas
  // (measured: 24-28 B of spill stores at 128 x 192 and 64 x 192 with k2 / k4): refused.
  if (cfg.split_k > 1 && sm90_block_scaled(spec) && cfg.block_n / std::max(1, cfg.warps_n) == 192)
    return InvalidArgument(name + "split_k=" + to_string(cfg.split_k) + " with block scales on 192 columns per "
                           "warpgroup: the promoted 64x192 tile and the split's partial sums do not fit the "
                           "registers; use split_k 1 or block_n 64 / 128 for split-K");
  // Ping-pong consumers (sm90/pingpong.cuh): each of the two warpgroups owns the whole tile and
  // adds into its accumulators without promotion; the consumers find each tile's stages in the ring by
  // counting, so every tile has the same K range (dense, no split-K).
  if (cfg.pingpong != 0 && (cfg.pingpong != 1 || cfg.warps_m != 4 || cfg.warps_n != 1 ||
                            (cfg.block_m != 64 && cfg.block_m != 128) || sm90_promotes(spec, cfg) ||
                            sm90_mx(spec) || spec.layout != GroupLayout::kDense || cfg.split_k != 1))
    return InvalidArgument(
        name + "pingpong=" + to_string(cfg.pingpong) + ": " +
        (cfg.pingpong != 1 ? string("a value other than 0 or 1")
         : cfg.warps_m != 4 || cfg.warps_n != 1
             ? "warps " + to_string(cfg.warps_m) + "x" + to_string(cfg.warps_n) +
                   " (ping-pong warpgroups each own the whole tile: warps 4x1)"
         : cfg.block_m != 64 && cfg.block_m != 128
             ? "block_m=" + to_string(cfg.block_m) + " (ping-pong tiles have 64 or 128 rows)"
         : sm90_mx(spec) ? string("a=mxfp8 (promoted every 32-K step)")
         : sm90_promotes(spec, cfg)
             ? "a promoted FP8 tile of " + to_string(cfg.block_m) + "x" + to_string(cfg.block_n) +
                   " (block scales, or at most 64 accumulators)"
         : spec.layout != GroupLayout::kDense ? string("a grouped problem")
                                              : "split_k=" + to_string(cfg.split_k)) +
        "; ping-pong consumers need a dense problem, warps 4x1, split_k 1 and unpromoted "
        "accumulation: bf16 or f16, or FP8 with tensor / per-row scales on a tile of more "
        "than 64 accumulators per thread (e.g. 128x128, 64x256, 128x176); otherwise use "
        "pingpong 0");
  // Split-K (sm90/split_k.cuh): dense problems, no clusters.
  if (cfg.split_k > 1 && (spec.layout != GroupLayout::kDense || cfg.cluster_m != 1))
    return InvalidArgument(name + "split_k=" + to_string(cfg.split_k) + " with " +
                           (cfg.cluster_m != 1 ? "cluster_m=" + to_string(cfg.cluster_m)
                                               : string("a grouped problem")) +
                           ": split-K runs on dense problems without clusters (split_k 1, or cluster_m 1)");
  // MN-major operands (backward passes; templates/kernels/sm90/config.cuh): one 128-byte atom of K per
  // stage, and B's columns in whole 64-element chunks per CTA of a cluster and per warpgroup.
  if (spec.pass != Pass::kFprop) {
    const GemmView v = gemm_view(spec, ProblemSizes{});
    // accumulate=true: TMA stores add their boxes (cp.reduce.async.bulk.tensor .add) into f32 outputs; a
    // 16-bit reduce would round the product before the add, so 16-bit outputs store directly.
    if (spec.accumulate && cfg.tma_store != 0 && spec.out.format != Format::kF32)
      return InvalidArgument(name + "tma_store=" + to_string(cfg.tma_store) + " with accumulate=true and out=" +
                             format_name(spec.out.format) + ": TMA stores add into f32 outputs only; use tma_store 0");
    // Grouped wgrad: each CTA zeroes the rows past an expert's end in its own stages, which a peer's
    // multicast also writes (templates/kernels/sm90/scheduler.cuh).
    if (spec.pass == Pass::kWgrad && spec.layout != GroupLayout::kDense && cfg.cluster_m != 1)
      return InvalidArgument(name + "cluster_m=" + to_string(cfg.cluster_m) +
                             ": grouped wgrad runs without clusters (cluster_m 1)");
    if (atoms(spec, cfg) != 1 && (v.a_mn_major || v.b_mn_major))
      return InvalidArgument(name + "block_k=" + to_string(cfg.block_k) + ": pass=" + pass_name(spec.pass) +
                             " reads MN-major operands one 128-byte atom of K per stage (block_k " +
                             to_string(kRowBytes / eb) + ")");
    if (v.b_mn_major && (wg_n % kSm90MnChunk != 0 || (cfg.block_n / cfg.cluster_m) % kSm90MnChunk != 0))
      return InvalidArgument(name + "block_n=" + to_string(cfg.block_n) + " (" + to_string(wg_n) +
                             " columns per warpgroup, cluster_m " + to_string(cfg.cluster_m) + "): pass=" +
                             pass_name(spec.pass) + " reads b MN-major in chunks of " + to_string(kSm90MnChunk) +
                             " columns; each warpgroup's columns and each CTA's share of the tile must be whole "
                             "chunks (block_n 64, 128, 192 or 256)");
  }
  const int smem = sm90_smem_bytes(spec, cfg);
  if (smem > arch.max_smem_per_block())
    return ResourceExhausted(
        name + "stages * (block_m + block_n) * 128 bytes + barriers" +
        (cfg.tma_store ? string(cfg.pingpong ? " + a staged output tile per consumer (tma_store, pingpong)"
                                             : " + the staged output tile (tma_store)") +
                             (spec.b.scale == ScaleGranularity::kN ? " + the staged column scales" : "")
                       : string()) +
        " = " + to_string(smem) + " bytes of shared memory; " + arch.name() + " allows " +
        to_string(arch.max_smem_per_block()) + " per block (fewer stages or smaller tiles)");
  return Status::Ok();
}

double sm90_check_tolerance(const KernelSpec& spec, const TileConfig& cfg, int64_t k, double base) {
  // MXFP8's elements are e4m3 on the same wgmma (each 32-K partial in the truncated accumulator).
  if (!format_is_fp8(spec.a.format) && !sm90_mx(spec)) return base;
  // A model of the truncated accumulator (docs/performance.md: e8m13, truncation, per k32 step)
  // on run_check's data gives ~1e-4 promoted at any K, and 2e-4 .. 1.8e-3 unpromoted for K = 272 ..
  // 7168 (growing ~linearly with K). Allow 5x the promoted figure, and K-proportional slack when not.
  // Per-row and block scales change nothing here: the kernel applies them in the reference's order
  // (acc * (row * col); fma(part, sa * sb, acc) per 128-K block, always promoted: check_config
  // enforces it), so only the wgmma partial sums differ from the reference's. The unpromoted intercept
  // is 7e-4: with 5e-4 a one-row problem (256 outputs, a noisy Frobenius estimate) measured 1.064e-3
  // against 1.02e-3 at K = 1040 (seed 193575209313).
  const double fp8 = sm90_promotes(spec, cfg) ? 5e-4 : 7e-4 + 5e-7 * static_cast<double>(k);
  return std::max(base, fp8);
}

}  // namespace kiln
