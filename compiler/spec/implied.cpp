// Implied scale fields per format (implied.hpp).
#include "compiler/spec/implied.hpp"

namespace kiln {

bool format_is_mx(Format f) { return f == Format::kMxfp8 || f == Format::kMxfp4; }

ScaleGranularity implied_granularity(Format f) {
  if (format_is_fp8(f)) return ScaleGranularity::kTensor;
  if (format_is_mx(f)) return ScaleGranularity::kBlock1x32;
  if (f == Format::kNvfp4) return ScaleGranularity::kBlock1x16;
  return ScaleGranularity::kNone;
}

ScaleType implied_scale_type(Format f) {
  if (format_is_fp8(f)) return ScaleType::kF32;
  if (format_is_mx(f)) return ScaleType::kUe8m0;
  if (f == Format::kNvfp4) return ScaleType::kUe4m3;
  return ScaleType::kNone;
}

OperandSpec with_implied_scales(OperandSpec op) {
  if (op.scale == ScaleGranularity::kNone) op.scale = implied_granularity(op.format);
  if (op.scale_type == ScaleType::kNone) op.scale_type = implied_scale_type(op.format);
  return op;
}

}  // namespace kiln
