// MX block quantization (mx.hpp, docs/numerics.md §3).
#include "compiler/numerics/mx.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "compiler/numerics/dequantize.hpp"
#include "compiler/numerics/e2m1.hpp"
#include "compiler/numerics/e8m0.hpp"
#include "compiler/numerics/fp8.hpp"

namespace kiln::numerics {

StatusOr<MxElement> mx_element(Format format) {
  if (format == Format::kMxfp8) return MxElement::kE4m3;
  if (format == Format::kMxfp4) return MxElement::kE2m1;
  return InvalidArgument(std::string("MX quantization takes mxfp8 or mxfp4, not ") + format_name(format));
}

float mx_element_max(MxElement e) { return e == MxElement::kE4m3 ? 448.0f : 6.0f; }
int mx_element_emax(MxElement e) { return e == MxElement::kE4m3 ? 8 : 2; }

uint8_t mx_scale_byte(float amax, MxElement e, MxRounding rounding) {
  return rounding == MxRounding::kFloor ? e8m0_scale_floor(amax, mx_element_emax(e))
                                        : e8m0_scale_rceil(amax, mx_element_max(e));
}

uint8_t mx_element_code(float x, uint8_t scale, MxElement e) {
  // ldexp rounds once, and only outside [2^-126, FLT_MAX] (see the invariant in mx.hpp).
  const float scaled = std::ldexp(x, 127 - static_cast<int>(scale));
  return e == MxElement::kE4m3 ? e4m3_from_float(scaled, /*saturate=*/true) : e2m1_from_float(scaled);
}

float mx_element_value(uint8_t code, uint8_t scale, MxElement e) {
  if (scale == kE8m0Nan) return std::numeric_limits<float>::quiet_NaN();
  const float v = e == MxElement::kE4m3 ? e4m3_to_float(code) : e2m1_to_float(code);
  return std::ldexp(v, static_cast<int>(scale) - 127);
}

StatusOr<QuantizedTensor> mx_quantize(std::span<const float> x, int64_t rows, int64_t cols, Format format,
                                      MxRounding rounding) {
  KILN_ASSIGN_OR_RETURN(const MxElement e, mx_element(format));
  if (rows < 0 || cols < 0)
    return InvalidArgument("mx_quantize: shape [" + std::to_string(rows) + ", " + std::to_string(cols) +
                           "] has a negative dimension");
  if (cols % kMxBlock != 0)
    return InvalidArgument("mx_quantize: K=" + std::to_string(cols) + " is not a multiple of the " +
                           format_name(format) + " block (32)");
  if (static_cast<int64_t>(x.size()) != rows * cols)
    return InvalidArgument("mx_quantize: input has " + std::to_string(x.size()) + " elements, shape [" +
                           std::to_string(rows) + ", " + std::to_string(cols) + "] needs " +
                           std::to_string(rows * cols));
  QuantizedTensor q;
  q.format = format;
  q.rows = rows;
  q.cols = cols;
  q.block_rows = 1;
  q.block_cols = kMxBlock;
  q.scale_type = ScaleType::kUe8m0;
  q.data.assign(static_cast<size_t>(rows * q.row_bytes()), 0);
  q.scale_bytes.assign(static_cast<size_t>(rows * q.scale_cols()), 0);
  const int64_t blocks = cols / kMxBlock;
  for (int64_t r = 0; r < rows; ++r) {
    std::span<uint8_t> row_data(q.data.data() + r * q.row_bytes(), static_cast<size_t>(q.row_bytes()));
    for (int64_t kb = 0; kb < blocks; ++kb) {
      const std::span<const float> block = x.subspan(static_cast<size_t>(r * cols + kb * kMxBlock), kMxBlock);
      const uint8_t b = mx_scale_byte(abs_max(block), e, rounding);
      q.scale_bytes[static_cast<size_t>(r * blocks + kb)] = b;
      for (int64_t i = 0; i < kMxBlock; ++i) {
        const uint8_t code = mx_element_code(block[static_cast<size_t>(i)], b, e);
        const int64_t c = kb * kMxBlock + i;
        if (e == MxElement::kE2m1) e2m1_set(row_data, c, code);
        else row_data[static_cast<size_t>(c)] = code;
      }
    }
  }
  return q;
}

StatusOr<std::vector<float>> mx_dequantize(const QuantizedTensor& q) {
  KILN_ASSIGN_OR_RETURN(const MxElement e, mx_element(q.format));
  KILN_RETURN_IF_ERROR(check_quantized_tensor(q));
  std::vector<float> out(static_cast<size_t>(q.rows * q.cols));
  for (int64_t r = 0; r < q.rows; ++r) {
    const std::span<const uint8_t> row_data(q.data.data() + r * q.row_bytes(), static_cast<size_t>(q.row_bytes()));
    for (int64_t c = 0; c < q.cols; ++c) {
      const uint8_t b = q.scale_bytes[static_cast<size_t>(r * q.scale_cols() + c / kMxBlock)];
      const uint8_t code = e == MxElement::kE2m1 ? e2m1_get(row_data, c) : row_data[static_cast<size_t>(c)];
      out[static_cast<size_t>(r * q.cols + c)] = mx_element_value(code, b, e);
    }
  }
  return out;
}

}  // namespace kiln::numerics
