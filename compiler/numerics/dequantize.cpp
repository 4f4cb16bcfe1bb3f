// Generic dequantization and QuantizedTensor checks (dequantize.hpp).
#include "compiler/numerics/dequantize.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "compiler/numerics/e2m1.hpp"
#include "compiler/numerics/e8m0.hpp"
#include "compiler/numerics/fp8.hpp"

namespace kiln::numerics {
namespace {

std::string shape_text(const QuantizedTensor& q) {
  return std::string(format_name(q.format)) + " [" + std::to_string(q.rows) + ", " + std::to_string(q.cols) + "]";
}

Status expect_blocks(const QuantizedTensor& q, int64_t br, int64_t bc, ScaleType st) {
  if (q.block_rows != br || q.block_cols != bc)
    return InvalidArgument("quantized tensor " + shape_text(q) + " has " + std::to_string(q.block_rows) + "x" +
                           std::to_string(q.block_cols) + " blocks; the format needs " + std::to_string(br) + "x" +
                           std::to_string(bc));
  if (q.scale_type != st)
    return InvalidArgument("quantized tensor " + shape_text(q) + " has scale type " + scale_type_name(q.scale_type) +
                           "; the format needs " + scale_type_name(st));
  if (q.cols % bc != 0)
    return InvalidArgument("quantized tensor " + shape_text(q) + ": K=" + std::to_string(q.cols) +
                           " is not a multiple of the " + format_name(q.format) + " block (" + std::to_string(bc) +
                           ")");
  return Status::Ok();
}

Status expect_size(const QuantizedTensor& q, const char* what, size_t have, int64_t need) {
  if (static_cast<int64_t>(have) != need)
    return InvalidArgument("quantized tensor " + shape_text(q) + ": " + what + " has " + std::to_string(have) +
                           " entries, expected " + std::to_string(need));
  return Status::Ok();
}

}  // namespace

Status check_quantized_tensor(const QuantizedTensor& q) {
  if (q.rows < 0 || q.cols < 0) return InvalidArgument("quantized tensor " + shape_text(q) + " has a negative dimension");
  if (q.block_rows < 1 || q.block_cols < 1)
    return InvalidArgument("quantized tensor " + shape_text(q) + " has an empty block shape " +
                           std::to_string(q.block_rows) + "x" + std::to_string(q.block_cols));
  switch (q.format) {
    case Format::kMxfp8:
    case Format::kMxfp4:
      KILN_RETURN_IF_ERROR(expect_blocks(q, 1, 32, ScaleType::kUe8m0));
      break;
    case Format::kNvfp4:
      KILN_RETURN_IF_ERROR(expect_blocks(q, 1, 16, ScaleType::kUe4m3));
      if (q.e4m3_bound != 448 && q.e4m3_bound != 256)
        return InvalidArgument("quantized tensor " + shape_text(q) + " has e4m3_bound=" +
                               std::to_string(q.e4m3_bound) + "; expected 448 or 256");
      break;
    case Format::kE4m3:
      if (q.scale_type != ScaleType::kF32 && q.scale_type != ScaleType::kUe8m0)
        return InvalidArgument("quantized tensor " + shape_text(q) + " has scale type " +
                               scale_type_name(q.scale_type) + "; FP8 blocks take f32 or ue8m0");
      break;
    default:
      return Unsupported("quantized tensor format " + std::string(format_name(q.format)) +
                         " is not block-scaled; expected e4m3, mxfp8, mxfp4 or nvfp4");
  }
  KILN_RETURN_IF_ERROR(expect_size(q, "data", q.data.size(), q.rows * q.row_bytes()));
  const int64_t n_scales = q.scale_rows() * q.scale_cols();
  if (q.scale_type == ScaleType::kF32) return expect_size(q, "scales_f32", q.scales_f32.size(), n_scales);
  return expect_size(q, "scale_bytes", q.scale_bytes.size(), n_scales);
}

StatusOr<std::vector<double>> dequantize_f64(const QuantizedTensor& q) {
  KILN_RETURN_IF_ERROR(check_quantized_tensor(q));
  std::vector<double> out(static_cast<size_t>(q.rows * q.cols));
  for (int64_t r = 0; r < q.rows; ++r) {
    const std::span<const uint8_t> row(q.data.data() + r * q.row_bytes(), static_cast<size_t>(q.row_bytes()));
    for (int64_t c = 0; c < q.cols; ++c) {
      const size_t si = static_cast<size_t>((r / q.block_rows) * q.scale_cols() + c / q.block_cols);
      double v = 0.0;
      switch (q.format) {
        case Format::kMxfp8:
        case Format::kMxfp4: {
          const uint8_t b = q.scale_bytes[si];
          const double e = q.format == Format::kMxfp8 ? e4m3_to_float(row[static_cast<size_t>(c)])
                                                     : e2m1_to_float(e2m1_get(row, c));
          v = b == kE8m0Nan ? std::numeric_limits<double>::quiet_NaN() : std::ldexp(e, static_cast<int>(b) - 127);
          break;
        }
        case Format::kNvfp4:
          v = static_cast<double>(e2m1_to_float(e2m1_get(row, c))) * e4m3_to_float(q.scale_bytes[si]) *
              static_cast<double>(q.global_decode_scale);
          break;
        default: {  // kE4m3 (checked above)
          const double s = q.scale_type == ScaleType::kUe8m0 ? static_cast<double>(e8m0_to_float(q.scale_bytes[si]))
                                                             : static_cast<double>(q.scales_f32[si]);
          v = static_cast<double>(e4m3_to_float(row[static_cast<size_t>(c)])) * s;
          break;
        }
      }
      out[static_cast<size_t>(r * q.cols + c)] = v;
    }
  }
  return out;
}

}  // namespace kiln::numerics
