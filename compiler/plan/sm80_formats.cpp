// The format pairings of the sm80 family (sm80_formats.hpp). The rules mirror the static_asserts of
// templates/kernels/sm80_gemm.cuh, sm80_mixed_gemm.cuh and sm80_promotion.cuh.
#include "compiler/plan/sm80_formats.hpp"

#include <string>

namespace kiln {
namespace {

using std::string;
using std::to_string;

bool is16(Format f) { return f == Format::kBf16 || f == Format::kF16; }
bool is4(Format f) { return f == Format::kMxfp4 || f == Format::kNvfp4; }

string operand_text(const char* role, const OperandSpec& o) {
  string s = string(role) + "=" + format_name(o.format);
  if (format_is_fp8(o.format)) {
    s += string(":") + scale_granularity_name(o.scale);
    if (o.scale_type != ScaleType::kF32) s += string(":") + scale_type_name(o.scale_type);
  }
  return s;
}

// An FP8 operand's scale on the same-format mainloop; empty when accepted.
string fp8_scale_gap(const char* role, const OperandSpec& o, bool is_a) {
  const ScaleGranularity g = o.scale;
  const bool ok = g == ScaleGranularity::kTensor || (is_a ? g == ScaleGranularity::kM : g == ScaleGranularity::kN) ||
                  (is_a ? g == ScaleGranularity::kBlock1x128 : g == ScaleGranularity::kBlock128x128);
  if (!ok)
    return operand_text(role, o) + ": the sm80 family takes " + (is_a ? "tensor, m or block1x128" : "tensor, n or block128x128") +
           " FP8 scales on operand " + role;
  const bool block = g == ScaleGranularity::kBlock1x128 || g == ScaleGranularity::kBlock128x128;
  if (o.scale_type != ScaleType::kF32 && !(block && o.scale_type == ScaleType::kUe8m0))
    return operand_text(role, o) + ": scale type " + scale_type_name(o.scale_type) +
           " is not accepted here; use f32 (or ue8m0 with block scales)";
  return "";
}

}  // namespace

int64_t format_span_bytes(Format f, int64_t elems) {
  return format_bits(f) == 4 ? elems / 2 : elems * (format_bits(f) / 8);
}

StatusOr<Sm80Mainloop> sm80_pairing(const KernelSpec& spec) {
  const OperandSpec& a = spec.a;
  const OperandSpec& b = spec.b;
  const string pair = string("a=") + format_name(a.format) + " b=" + format_name(b.format);
  if (a.format == Format::kF32 || b.format == Format::kF32)
    return Unsupported(pair + ": f32 operands are not supported (use bf16 or f16)");

  // Two 16-bit operands.
  if (is16(a.format) && is16(b.format)) {
    if (a.format != b.format)
      return Unsupported(pair + ": 16-bit operands must have the same format (both bf16 or both f16)");
    return Sm80Mainloop::kSameFormat;
  }
  // 16-bit activations x quantized weights (kernels/sm80_mixed_gemm.cuh): the weights are dequantized
  // to bf16 exactly (block scales folded in); f16 activations are split into two bf16 each.
  if (is16(a.format)) {
    // FP8 weights take the scales they take with FP8 activations: tensor / per-channel f32 scales go to
    // the epilogue, DeepSeek 128x128 blocks (f32 or ue8m0) are promoted per 128 K (sm80_promotion.cuh).
    if (format_is_fp8(b.format)) {
      if (string gap = fp8_scale_gap("b", b, false); !gap.empty()) return Unsupported(gap);
    }
    return Sm80Mainloop::kMixedInput;
  }
  // Quantized activations.
  if (is4(a.format))
    return Unsupported(string("a=") + format_name(a.format) +
                       ": 4-bit activations are not implemented yet; the sm80 family takes 4-bit weights (b) "
                       "with 16-bit, FP8 or mxfp8 activations");
  // FP8 activations take their tensor / per-token / 1x128 scales on every mainloop.
  if (a.format != Format::kMxfp8) {
    if (string gap = fp8_scale_gap("a", a, true); !gap.empty()) return Unsupported(gap);
  }
  // FP8 / MXFP8 activations x 16-bit weights: the mixed mainloop with A converted to bf16 exactly (MXFP8:
  // its E8M0 scales folded in) and B used as bf16 (f16 split into two bf16 that sum to it).
  if (is16(b.format)) return Sm80Mainloop::kMixedInput;
  // MXFP8 activations x 4-bit weights: the mixed mainloop with A's E8M0 scales folded like W's.
  if (a.format == Format::kMxfp8 && is4(b.format)) return Sm80Mainloop::kMixedInput;
  if (a.format == Format::kMxfp8 || b.format == Format::kMxfp8) {
    if (a.format == b.format) return Sm80Mainloop::kSameFormat;  // grouped: b's E8M0 scales [E, N, K/32]
    // MXFP8 with an FP8 partner: the mixed mainloop, the E8M0 side folded into its converted bf16 values,
    // the FP8 side's tensor / per-row scales in the epilogue and its DeepSeek blocks promoted per 128 K.
    if (b.format != Format::kMxfp8) {
      if (string gap = fp8_scale_gap("b", b, false); !gap.empty()) return Unsupported(gap);
    }
    return Sm80Mainloop::kMixedInput;
  }
  // FP8 activations x 4-bit weights (W4A8) on the mixed mainloop: A converted to bf16 exactly; its
  // tensor / per-token scale applied in the epilogue, its 1x128 blocks promoted per 128 K.
  if (is4(b.format)) return Sm80Mainloop::kMixedInput;
  // Two FP8 operands.
  if (string gap = fp8_scale_gap("b", b, false); !gap.empty()) return Unsupported(gap);
  // Grouped: b's scales per expert (tensor [E], n [E, N], block128x128 [E, ceil(N/128), K/128]).
  return Sm80Mainloop::kSameFormat;
}

bool sm80_promotes(const KernelSpec& spec) {
  // The mixed mainloop folds MX / NVFP4 block scales into the converted values; f32 (or ue8m0) FP8
  // blocks do not fold exactly and are promoted there too.
  const bool fp8_blocks =
      spec.a.scale == ScaleGranularity::kBlock1x128 || spec.b.scale == ScaleGranularity::kBlock128x128;
  auto mainloop = sm80_pairing(spec);
  if (mainloop.ok() && *mainloop == Sm80Mainloop::kMixedInput) return fp8_blocks;
  return fp8_blocks || spec.a.format == Format::kMxfp8 || spec.b.format == Format::kMxfp8;
}


int sm80_row_bytes_a(const KernelSpec& spec, const TileConfig& cfg) {
  return static_cast<int>(format_span_bytes(spec.a.format, cfg.block_k));
}

int sm80_row_bytes_b(const KernelSpec& spec, const TileConfig& cfg) {
  return static_cast<int>(format_span_bytes(spec.b.format, cfg.block_k));
}

int sm80_smem_row_bytes_b(const KernelSpec& spec, const TileConfig& cfg) {
  // The mixed mainloop pads 16-bit B rows by 32 bytes (kernels/sm80_mixed_gemm.cuh kRowStrideB).
  const int bytes = sm80_row_bytes_b(spec, cfg);
  if (!is16(spec.b.format) || is16(spec.a.format)) return bytes;
  return bytes + 32;
}

Status sm80_check_sizes(const KernelSpec& spec, const ProblemSizes& sizes) {
  // cp.async copies 16-byte chunks: every operand row must be a whole number of them.
  const struct {
    const char* role;
    Format f;
  } operands[] = {{"a", spec.a.format}, {"b", spec.b.format}};
  for (const auto& o : operands) {
    const int64_t bytes = format_span_bytes(o.f, sizes.k);
    if (bytes % 16 != 0) {
      const int64_t k_mult = format_bits(o.f) == 4 ? 32 : 16 / (format_bits(o.f) / 8);
      return InvalidArgument(string("operand ") + o.role + ": K=" + to_string(sizes.k) + " elements is " +
                             to_string(bytes) + " bytes per row; rows must be a multiple of 16 bytes (K % " +
                             to_string(k_mult) + " == 0 for " + format_name(o.f) + ")");
    }
  }
  return Status::Ok();
}

Status sm80_check_pairing_config(const KernelSpec& spec, const TileConfig& cfg) {
  KILN_ASSIGN_OR_RETURN(Sm80Mainloop ml, sm80_pairing(spec));
  const string name = "config " + cfg.to_string() + ": ";
  if (ml == Sm80Mainloop::kMixedInput && cfg.block_k != 64)
    return InvalidArgument(name + "block_k=" + to_string(cfg.block_k) + " for a=" + format_name(spec.a.format) +
                           " b=" + format_name(spec.b.format) +
                           "; the mixed-input mainloop takes block_k 64 (two 32-K steps per K tile)");
  if (spec.b.scale == ScaleGranularity::kBlock128x128) {
    const int warp_n = cfg.block_n / cfg.warps_n;
    if (warp_n > 128 || 128 % warp_n != 0)
      return InvalidArgument(name + "warp tile width " + to_string(warp_n) +
                             " columns: with b=" + format_name(spec.b.format) +
                             ":block128x128 a warp tile's columns must lie in one 128-column scale block (a "
                             "divisor of 128)");
  }
  return Status::Ok();
}

}  // namespace kiln
