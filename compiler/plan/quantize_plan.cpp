// compiler/plan/quantize_plan.cpp — the quantize family's rules (quantize_plan.hpp).
#include "compiler/plan/quantize_plan.hpp"

#include <algorithm>
#include <string>

#include "compiler/spec/names.hpp"
#include "compiler/spec/spec.hpp"
#include "templates/common/quantize_params.cuh"

namespace kiln {
namespace {

using std::string;
using std::to_string;

constexpr int64_t kMaxIndex = (int64_t{1} << 31) - 1;

string out_text(const KernelSpec& spec) {
  string s = string("out=") + format_name(spec.out.format);
  if (spec.out.scale != ScaleGranularity::kNone) s += string(":") + scale_granularity_name(spec.out.scale);
  if (spec.out.scale_type != ScaleType::kNone) s += string(":") + scale_type_name(spec.out.scale_type);
  return s;
}


}  // namespace

Status quantize_supported(const KernelSpec& spec, const Arch& arch) {
  if (spec.op != Op::kQuantize) return Internal("quantize_supported: not a quantize spec");
  if (arch.sm() < 80) return Unsupported(arch.name() + ": kiln's kernels need sm_80 or newer");
  const Format o = spec.out.format;
  if (o == Format::kE5m2)
    return Unsupported(out_text(spec) +
                       ": e5m2 quantization is not implemented yet; the quantize family writes e4m3 (tensor, m, "
                       "block1x128, block128x128), mxfp8, mxfp4 and nvfp4");
  if (spec.fp8_saturation != Fp8Saturation::kSatfinite)
    return Unsupported(string("fp8_sat=") + fp8_saturation_name(spec.fp8_saturation) +
                       ": the quantize family writes saturating (satfinite) FP8 codes only, as the "
                       "docs/numerics.md references do");
  if (spec.experts > 0 && !(o == Format::kE4m3 && spec.out.scale == ScaleGranularity::kBlock1x128))
    return Unsupported(out_text(spec) + " with quantize[experts=" + to_string(spec.experts) +
                       ",...]: the grouped transposed quantizer writes e4m3:block1x128 (the column-wise copies a "
                       "grouped FP8 wgrad reads)");
  if (o == Format::kE4m3) {
    const ScaleGranularity g = spec.out.scale;
    if (g == ScaleGranularity::kTensor && spec.out.scale_type != ScaleType::kF32)
      return Unsupported(out_text(spec) + ": a per-tensor FP8 scale is written as f32; use out=e4m3:tensor:f32");
    if (g == ScaleGranularity::kM && spec.out.scale_type != ScaleType::kF32)
      return Unsupported(out_text(spec) + ": per-token FP8 scales are written as f32 (what a=e4m3:m reads); use "
                                          "out=e4m3:m:f32");
    if (spec.transpose && g != ScaleGranularity::kBlock1x128 && g != ScaleGranularity::kM)
      return Unsupported(out_text(spec) + " transpose=true: the transposed (along M) form exists for m (one "
                                          "scale per column of the input), block1x128 (the 128x1 wgrad copy), "
                                          "mxfp8, mxfp4 and nvfp4");
    if (g != ScaleGranularity::kTensor && g != ScaleGranularity::kM && g != ScaleGranularity::kBlock1x128 &&
        g != ScaleGranularity::kBlock128x128)
      return Unsupported(out_text(spec) + ": e4m3 quantization takes tensor, m, block1x128 or block128x128 scales");
  }
  return Status::Ok();
}

QuantizeShape quantize_shape(const KernelSpec& spec) {
  QuantizeShape s;
  switch (spec.out.format) {
    case Format::kMxfp8:
    case Format::kMxfp4: s = {QuantizeMode::kBlockK, 32}; break;
    case Format::kNvfp4: s = {QuantizeMode::kBlockK, 16}; break;
    default:
      switch (spec.out.scale) {
        case ScaleGranularity::kTensor: s = {QuantizeMode::kTensor, 0}; break;
        case ScaleGranularity::kM: s = {QuantizeMode::kRow, 0}; break;
        case ScaleGranularity::kBlock128x128: s = {QuantizeMode::kBlock2d, 128}; break;
        default: s = {QuantizeMode::kBlockK, 128}; break;
      }
  }
  if (spec.transpose && s.mode == QuantizeMode::kBlockK) s.mode = QuantizeMode::kTransposed;
  if (spec.transpose && s.mode == QuantizeMode::kRow) s = {QuantizeMode::kColumns, 128};
  return s;
}

Status quantize_can_implement(const KernelSpec& spec, const ProblemSizes& sizes) {
  KILN_RETURN_IF_ERROR(validate_spec(spec));
  return quantize_check_sizes(spec, sizes);
}

Status quantize_check_sizes(const KernelSpec& spec, const ProblemSizes& sizes) {
  KILN_RETURN_IF_ERROR(validate_valid_spec_sizes(spec, sizes));
  if (sizes.k % 8 != 0)
    return InvalidArgument("K=" + to_string(sizes.k) +
                           " is not a multiple of 8; the quantize family reads X in 8-element (16-byte bf16) "
                           "chunks");
  if (sizes.m > kMaxIndex || sizes.k > kMaxIndex)
    return InvalidArgument("M x K = " + to_string(sizes.m) + " x " + to_string(sizes.k) +
                           " is too large; the quantize family indexes rows and columns with 32-bit integers");
  const QuantizeShape qs = quantize_shape(spec);
  // kColumns: any M (the copy's columns are padded per call).
  if (qs.mode == QuantizeMode::kTransposed && spec.experts == 0 && sizes.m > 0 && sizes.m % qs.block != 0)
    return InvalidArgument("M=" + to_string(sizes.m) + " is not a multiple of " + to_string(qs.block) +
                           "; transpose=true quantizes blocks of " + to_string(qs.block) + " rows");
  return Status::Ok();
}

int64_t grouped_transposed_cols(const KernelSpec& spec, int64_t m) {
  const int64_t block = quantize_shape(spec).block;
  if (block <= 0) return 0;
  return block * ((std::max<int64_t>(m, 0) + block - 1) / block + std::max(spec.experts, 0));
}

bool quantize_needs_amax(const KernelSpec& spec) {
  return spec.out.format == Format::kNvfp4 ||
         (spec.out.format == Format::kE4m3 &&
          (spec.out.scale == ScaleGranularity::kTensor || (spec.out.scale == ScaleGranularity::kM && spec.transpose)));
}

std::vector<int> quantize_phases(const KernelSpec& spec) {
  if (quantize_needs_amax(spec))
    return {kiln_dev::kPhaseInit, kiln_dev::kPhaseAmax, kiln_dev::kPhaseQuantize, kiln_dev::kPhaseFinalize};
  return {kiln_dev::kPhaseQuantize};
}

LaunchShape quantize_launch_shape(const KernelSpec& spec, const ProblemSizes& sizes, int phase) {
  return make_launch_rule(spec, KernelFamily::kQuantize, quantize_config(), 0, sizes.k).phase_shape(sizes.m, phase);
}

TileConfig quantize_config() {
  // Not a GEMM tile: the family takes no tuning parameters. One fixed value keeps plans and cache keys
  // uniform (8 warps = the kernel's 256 threads).
  TileConfig c;
  c.block_m = 1;
  c.block_n = 1;
  c.block_k = 8;
  c.stages = 1;
  c.warps_m = 8;
  c.warps_n = 1;
  c.group_m = 1;
  return c;
}

Status quantize_check_config(const TileConfig& cfg) {
  if (cfg == quantize_config()) return Status::Ok();
  return InvalidArgument("config " + cfg.to_string() + ": the quantize family takes no tile configuration; its one "
                         "config is " + quantize_config().to_string());
}

}  // namespace kiln
