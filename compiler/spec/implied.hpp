// compiler/spec/implied.hpp — the scale fields a format implies when the spec leaves them out.
//
// The DSL, JSON reader and SpecBuilder let a caller write just the format where the format
// determines its scaling: `e4m3` means e4m3:tensor:f32, `mxfp4` means mxfp4:block1x32:ue8m0,
// `nvfp4` means nvfp4:block1x16:ue4m3, and bf16/f16/f32 are unscaled. An FP8 operand with a
// granularity but no scale type gets f32. These functions are that rule, in one place; the printer
// uses the same rule in reverse to omit what is implied.
//
//   kiln::OperandSpec op = kiln::with_implied_scales({kiln::Format::kMxfp8});
//   // op.scale == kBlock1x32, op.scale_type == kUe8m0
#pragma once

#include "kiln/spec.hpp"

namespace kiln {

bool format_is_mx(Format f);                     // mxfp8, mxfp4
ScaleGranularity implied_granularity(Format f);  // tensor, block1x32, block1x16 or none
ScaleType implied_scale_type(Format f);          // f32, ue8m0, ue4m3 or none
// Replaces kNone granularity / scale type by the implied ones; leaves explicit fields alone (so a
// wrong explicit choice still reaches validation).
OperandSpec with_implied_scales(OperandSpec op);

}  // namespace kiln
