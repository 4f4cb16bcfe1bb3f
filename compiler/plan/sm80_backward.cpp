// compiler/plan/sm80_backward.cpp — the portable backward kernel's planning rules (sm80_backward.hpp).
#include "compiler/plan/sm80_backward.hpp"

#include <algorithm>
#include <string>

#include "compiler/plan/gemm_view.hpp"
#include "compiler/spec/internal/rules.hpp"  // operand_text
#include "compiler/spec/names.hpp"
#include "compiler/spec/spec.hpp"  // print_spec

namespace kiln {
namespace {

using std::string;
using std::to_string;

bool is16(Format f) { return f == Format::kBf16 || f == Format::kF16; }

// b's scale: what the kernel folds or applies for each quantized format.
bool b_scale_ok(const KernelSpec& spec) {
  const OperandSpec& b = spec.b;
  switch (b.format) {
    case Format::kMxfp4:
    case Format::kMxfp8: return b.scale == ScaleGranularity::kBlock1x32;
    case Format::kNvfp4: return b.scale == ScaleGranularity::kBlock1x16;
    case Format::kE4m3:
    case Format::kE5m2: {
      // W (dgrad) carries the forward's b scales, X (wgrad) the forward's a scales.
      const bool dgrad = spec.pass == Pass::kDgrad;
      const ScaleGranularity row = dgrad ? ScaleGranularity::kN : ScaleGranularity::kM;
      const ScaleGranularity block = dgrad ? ScaleGranularity::kBlock128x128 : ScaleGranularity::kBlock1x128;
      if (b.scale == ScaleGranularity::kTensor || b.scale == row) return b.scale_type == ScaleType::kF32;
      if (b.scale == block) return b.scale_type == ScaleType::kF32 || b.scale_type == ScaleType::kUe8m0;
      return false;
    }
    default: return false;
  }
}

int bits_b(const KernelSpec& spec) { return format_bits(spec.b.format); }

}  // namespace

Status sm80_backward_supports(const KernelSpec& spec) {
  const Format a = spec.a.format, b = spec.b.format, o = spec.out.format;
  const string head = string("pass=") + pass_name(spec.pass) + " a=" + spec_internal::operand_text(spec.a) +
                      " b=" + spec_internal::operand_text(spec.b) + ": ";
  if (!(o == Format::kBf16 || o == Format::kF16 || o == Format::kF32) || spec.out.scale != ScaleGranularity::kNone)
    return Unsupported(head + "backward outputs (dX, dW) are bf16, f16 or f32");
  if (is16(a) && is16(b)) {
    if (a != b)
      return Unsupported(head + "high_precision takes dY and " + (spec.pass == Pass::kDgrad ? "W" : "X") +
                         " in the same 16-bit format");
    return Status::Ok();
  }
  if (a != Format::kBf16)
    return Unsupported(head + "mode dequantized computes in bf16: dY must be bf16 (" + format_name(a) +
                       " given); convert it, or use mode high_precision");
  if (spec.pass == Pass::kWgrad && format_bits(b) == 4)
    return Unsupported(head + "wgrad reads X in its forward format; 4-bit activations (X in " + format_name(b) +
                       ") have no dequantized wgrad: use mode high_precision with the saved bf16 X");
  if (!b_scale_ok(spec))
    return Unsupported(head + "mode dequantized reads b as mxfp4:block1x32, nvfp4:block1x16, mxfp8:block1x32, or "
                              "e4m3 / e5m2 with a tensor, " +
                       (spec.pass == Pass::kDgrad ? "n or block128x128" : "m or block1x128") +
                       " scale (f32; blocks also ue8m0)");
  return Status::Ok();
}

bool sm80_decode_dgrad_supports(const KernelSpec& spec) {
  return spec.pass == Pass::kDgrad && spec.a.format == Format::kBf16 && format_bits(spec.b.format) == 4 &&
         sm80_backward_supports(spec).ok();
}

int sm80_backward_smem_bytes(const KernelSpec& spec, const TileConfig& cfg) {
  // The decode dgrad kernel's cross-warp reduction: f32 [warps][block_m][128 + 4] (kernels/sm80_decode_dgrad.cuh).
  if (cfg.decode == 1) return cfg.warps_n * cfg.block_m * (128 + 4) * 4;
  const int raw = cfg.block_k * cfg.block_n * bits_b(spec) / 8;
  const int conv = is16(spec.b.format) ? 0 : cfg.block_k * cfg.block_n * 2;
  return cfg.stages * (cfg.block_m * cfg.block_k * 2 + raw) + conv;
}

namespace {

// The decode dgrad kernel (decode = 1, templates/kernels/sm80_decode_dgrad.cuh): 4-bit W streamed from global
// memory into mma.sync fragments for a few rows of dY per tile.
Status check_decode_dgrad_config(const KernelSpec& spec, const Arch& arch, const TileConfig& cfg) {
  const string name = "config " + cfg.to_string() + " (decode dgrad): ";
  if (!sm80_decode_dgrad_supports(spec))
    return Unsupported(name + "the decode dgrad kernel takes pass=dgrad with bf16 dY and an MXFP4 or NVFP4 W; " +
                       print_spec(spec) + " runs on the tiled backward kernel (decode 0)");
  KILN_RETURN_IF_ERROR(check_config_ranges(
      name, {{"block_n", cfg.block_n, 128, 128}, {"warps_m", cfg.warps_m, 1, 1}, {"warps_n", cfg.warps_n, 1, 8},
             {"stages", cfg.stages, 1, 2}, {"group_m", cfg.group_m, 1, 1}}));
  if (cfg.block_m != 8 && cfg.block_m != 16 && cfg.block_m != 32)
    return InvalidArgument(name + "block_m=" + to_string(cfg.block_m) + " tokens: must be 8, 16 or 32 (n8 mma fragments)");
  if (cfg.block_k != 16 && cfg.block_k != 32 && cfg.block_k != 64)
    return InvalidArgument(name + "block_k=" + to_string(cfg.block_k) +
                           " rows of W per warp step: must be 16, 32 or 64 (16-row mma k-steps)");
  // Registers (ptxas 13.0, sm_90a): per unit in flight and k-step 8 words of W, 4 scale bytes and 2 words
  // per token fragment; 32 accumulators per fragment; ~48 for addresses, decoded fragments and the store.
  const int steps = cfg.block_k / 16, tok = cfg.block_m / 8;
  const int regs = cfg.stages * steps * (12 + 2 * tok) + 32 * tok + 48;
  const int budget = std::min(240, 65536 / cfg.threads() - 8);
  if (regs > budget)
    return InvalidArgument(name + "an estimated " + to_string(regs) + " registers per thread; " +
                           to_string(cfg.threads()) + " threads allow " + to_string(budget) +
                           " (smaller block_k or block_m, or stages 1)");
  const int smem = sm80_backward_smem_bytes(spec, cfg);
  if (smem > arch.max_smem_per_block())
    return ResourceExhausted(name + to_string(smem) + " bytes of shared memory; " + arch.name() + " allows " +
                             to_string(arch.max_smem_per_block()) + " per block (fewer warps or a smaller block_m)");
  return Status::Ok();
}

}  // namespace

Status sm80_backward_check_config(const KernelSpec& spec, const Arch& arch, const TileConfig& cfg) {
  const string name = "config " + cfg.to_string() + " (backward): ";
  if (cfg.decode == 1) return check_decode_dgrad_config(spec, arch, cfg);
  if (cfg.decode != 0)
    return InvalidArgument(name + "decode=" + to_string(cfg.decode) +
                           "; backward passes run the tiled kernel (decode 0) or, for dgrad of 4-bit weights, the decode "
                           "dgrad kernel (decode 1)");
  if (cfg.block_k != 32 && cfg.block_k != 64 && cfg.block_k != 128)
    return InvalidArgument(name + "block_k=" + to_string(cfg.block_k) +
                           "; the backward kernel stages 32, 64 or 128 reduction rows (block_k)");
  KILN_RETURN_IF_ERROR(check_config_ranges(
      name, {{"block_m", cfg.block_m, 16, 256}, {"block_n", cfg.block_n, 32, 256}, {"warps_m", cfg.warps_m, 1, 8},
             {"warps_n", cfg.warps_n, 1, 8}, {"stages", cfg.stages, 2, 8}, {"group_m", cfg.group_m, 1, 64}}));
  if (cfg.threads() > 1024)
    return InvalidArgument(name + to_string(cfg.warps_m * cfg.warps_n) + " warps is more than a block holds (32)");
  if (cfg.block_m % (16 * cfg.warps_m) != 0)
    return InvalidArgument(name + "block_m=" + to_string(cfg.block_m) + " is not a multiple of 16 * warps_m (" +
                           to_string(16 * cfg.warps_m) + ")");
  if (cfg.block_n % (16 * cfg.warps_n) != 0)
    return InvalidArgument(name + "block_n=" + to_string(cfg.block_n) + " is not a multiple of 16 * warps_n (" +
                           to_string(16 * cfg.warps_n) + ")");
  // Swizzled rows of 16-bit elements: 64 bytes or a multiple of 128.
  if (cfg.block_n != 32 && cfg.block_n % 64 != 0)
    return InvalidArgument(name + "block_n=" + to_string(cfg.block_n) +
                           "; the MN-major B tile's rows are 32 or a multiple of 64 elements");
  if (spec.pass == Pass::kWgrad && cfg.block_m != 32 && cfg.block_m % 64 != 0)
    return InvalidArgument(name + "block_m=" + to_string(cfg.block_m) +
                           "; wgrad reads dY MN-major: block_m is 32 or a multiple of 64");
  const int warp_m = cfg.block_m / cfg.warps_m, warp_n = cfg.block_n / cfg.warps_n;
  const int acc = warp_m * warp_n / 32;
  if (acc > 64)
    return InvalidArgument(name + "warp tile " + to_string(warp_m) + "x" + to_string(warp_n) + " needs " +
                           to_string(acc) + " f32 accumulators per thread; at most 64 (use more warps or smaller blocks)");
  const int smem = sm80_backward_smem_bytes(spec, cfg);
  if (smem > arch.max_smem_per_block())
    return ResourceExhausted(name + to_string(smem) + " bytes of shared memory; " + arch.name() + " allows " +
                             to_string(arch.max_smem_per_block()) + " per block (fewer stages or smaller tiles)");
  return Status::Ok();
}

TileConfig sm80_backward_default_config(const KernelSpec& spec, const Arch& arch, const ProblemSizes& sizes) {
  // Measured on an H200 (frozen MXFP4 grouped dgrad of gpt-oss-20b's experts, graph replay,
  // docs/performance.md): at 8-16 rows per expert 16 x 64 tiles with 32 reduction rows per stage (64 rows
  // took 1.25x longer); at 32 rows 32 x 64; at 1024 rows per expert and on dense 4096-row problems 128 x 256
  // tiles of 16 warps (1.35-1.5x faster than 128 x 128).
  const ProblemSizes v = gemm_sizes(spec, sizes);
  const int64_t m = std::max<int64_t>(v.m, 1);  // a plan's bucket rows: per expert when grouped; wgrad: N
  // Tiles of all experts: a grouped plan's bucket rows are per expert (dgrad), and grouped wgrad tiles N x K per expert.
  const int64_t groups = spec.op == Op::kGroupedGemm ? std::max(spec.experts, 1) : 1;
  auto tiles = [&](const TileConfig& c) {
    return ((m + c.block_m - 1) / c.block_m) * ((v.n + c.block_n - 1) / c.block_n) * groups;
  };
  const bool wgrad = spec.pass == Pass::kWgrad;  // block_m 32 or a multiple of 64
  // A few rows per token tile against a 4-bit W: the decode dgrad kernel (W streamed straight into mma
  // fragments; docs/performance.md).
  if (m <= 32 && sm80_decode_dgrad_supports(spec)) {
    TileConfig d;
    d.decode = 1;
    d.block_m = m <= 8 ? 8 : m <= 16 ? 16 : 32;
    d.block_n = 128;
    d.block_k = 32;
    d.stages = d.block_m == 32 ? 1 : 2;
    d.warps_m = 1;
    // 8 tokens: 8 warps (H100, gpt-oss-20b gate_up at 8 rows per expert, events after an L2 flush: 0.181 ms
    // against 0.201 with 4; 16 and 32 tokens: 4 warps within 2% of the best).
    d.warps_n = d.block_m == 8 ? 8 : 4;
    d.group_m = 1;
    if (check_decode_dgrad_config(spec, arch, d).ok()) return d;
  }
  // {block_m, block_n, block_k, stages, warps_m, warps_n}; group_m 8, the rest at their defaults.
  TileConfig c = m <= 16 && !wgrad ? TileConfig{16, 64, 32, 4, 1, 4}
                 : m <= 32         ? TileConfig{32, 64, 32, 4, 2, 2}
                 : m <= 64         ? TileConfig{64, 64, 32, 4, 2, 2}
                                   : TileConfig{128, 256, 32, 3, 4, 4};
  if (c.block_m == 128 && tiles(c) < arch.sms()) c = TileConfig{128, 128, 32, 4, 2, 4};
  while (!sm80_backward_check_config(spec, arch, c).ok() && c.stages > 2) --c.stages;
  return c;
}

}  // namespace kiln
