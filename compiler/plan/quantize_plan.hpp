// compiler/plan/quantize_plan.hpp — the quantize family's rules (templates/kernels/quantize.cuh):
// which quantize specs have a kernel, how one is decomposed, and its launches.
//
// A quantize spec `quantize a=<bf16|f16|f32> out=<format>[:granularity[:type]] [transpose=true]`
// maps to one QuantMode of the kernel:
//   out=e4m3:tensor (f32)               kTensor      four launches (amax slot: see quantize_params.cuh)
//   out=e4m3:m (f32 | ue8m0)            kRow         one launch, a warp per token
//                                       transpose=true: kColumns 128 (one scale per column of X: the
//                                       copy [K, M] a per-token wgrad or per-channel dgrad reads); four
//                                       launches like kTensor, the amax slots being the scales [K]
//   out=e4m3:block1x128 (f32 | ue8m0)   kBlockK 128  transpose=true: kTransposed 128 (the 128x1 copy)
//   out=e4m3:block128x128               kBlock2d     weights
//   out=mxfp8 | mxfp4                   kBlockK 32   transpose=true: kTransposed 32
//   out=nvfp4 (four_over_six, bound)    kBlockK 16   transpose=true: kTransposed 16; + amax launches
// Grouped: `quantize[experts=E,layout=offsets|masked] a=bf16 out=e4m3:block1x128 transpose=true` writes
// each expert's rows as its own run of 128x1 blocks, every expert from a block boundary of the copy
// [K, W], W >= grouped_transposed_cols(spec, M) (templates/common/quantize_params.cuh; the copies a
// grouped quantized wgrad reads).
// Not implemented (UNSUPPORTED with the reason): e5m2 outputs, fp8_sat=nonsat, per-tensor ue8m0,
// transpose=true of tensor / block128x128 scales.
// TileConfig does not apply to this family: plans hold quantize_config() in every bucket, and
// check_config accepts only it.
//
//   KILN_RETURN_IF_ERROR(quantize_supported(spec, arch));
//   KILN_RETURN_IF_ERROR(quantize_can_implement(spec, sizes));      // M, K rules
//   for (int phase : quantize_phases(spec)) launch(quantize_launch_shape(spec, sizes, phase), phase);
#pragma once

#include <vector>

#include "compiler/plan/plan.hpp"

namespace kiln {

enum class QuantizeMode : uint8_t { kTensor, kRow, kBlockK, kBlock2d, kTransposed, kColumns };

struct QuantizeShape {
  QuantizeMode mode = QuantizeMode::kBlockK;
  int block = 0;  // elements per scale block along K (or M when transposed); 0 for tensor / row; kColumns:
                  // rows of X per CTA of the quantize phase
};

Status quantize_supported(const KernelSpec& spec, const Arch& arch);
QuantizeShape quantize_shape(const KernelSpec& spec);
// Sizes: m rows (0: any, checked per call), k columns; n is ignored.
Status quantize_can_implement(const KernelSpec& spec, const ProblemSizes& sizes);
// The same for a spec validate_spec accepted (the sizes' rules only).
Status quantize_check_sizes(const KernelSpec& spec, const ProblemSizes& sizes);
// A grouped transposed quantize of M rows in all: the columns its copy needs at least, block * (ceil(M /
// block) + E) (every expert's rows rounded up to whole blocks fit in it whatever the routing).
int64_t grouped_transposed_cols(const KernelSpec& spec, int64_t m);
// Whether the spec reduces amaxes in launches before it quantizes (FP8 per tensor, NVFP4's global scale,
// FP8 per-column scales of the transposed per-token form).
bool quantize_needs_amax(const KernelSpec& spec);
// The kernel's phases in launch order (kiln_dev::QuantPhase values).
std::vector<int> quantize_phases(const KernelSpec& spec);
LaunchShape quantize_launch_shape(const KernelSpec& spec, const ProblemSizes& sizes, int phase);
// The one config plans hold for this family.
TileConfig quantize_config();
Status quantize_check_config(const TileConfig& cfg);

}  // namespace kiln
