// NVFP4 quantization in TransformerEngine's fp32 order (nvfp4.hpp, docs/numerics.md §4).
#include "compiler/numerics/nvfp4.hpp"

#include <cfloat>
#include <cmath>
#include <string>

#include "compiler/numerics/dequantize.hpp"
#include "compiler/numerics/e2m1.hpp"
#include "compiler/numerics/four_over_six.hpp"
#include "compiler/numerics/fp32_rn.hpp"
#include "compiler/numerics/fp8.hpp"

namespace kiln::numerics {
namespace {

float bound_times_six(int e4m3_bound) { return 6.0f * static_cast<float>(e4m3_bound); }  // 2688 or 1536: exact

Status check_bound(const char* fn, int e4m3_bound) {
  if (e4m3_bound != 448 && e4m3_bound != 256)
    return InvalidArgument(std::string(fn) + ": e4m3_bound=" + std::to_string(e4m3_bound) +
                           " is not a supported NVFP4 E4M3 bound (448 or 256)");
  return Status::Ok();
}

}  // namespace

float nvfp4_encode_scale(float amax_t, int e4m3_bound) {
  float s_enc = fp32::fmin(fp32::div(bound_times_six(e4m3_bound), amax_t), FLT_MAX);
  if (amax_t == 0.0f || s_enc == 0.0f) s_enc = 1.0f;
  return s_enc;
}

float nvfp4_global_decode_scale(float amax_t, int e4m3_bound) {
  return fp32::div(amax_t, bound_times_six(e4m3_bound));
}

float nvfp4_block_encode_scale(uint8_t sf, float s_enc) {
  const float s_dec = fp32::div(1.0f, s_enc);
  return fp32::fmin(fp32::div(1.0f, fp32::mul(e4m3_to_float(sf), s_dec)), FLT_MAX);  // sf = 0 -> FLT_MAX
}

Nvfp4Block nvfp4_quantize_block(std::span<const float, kNvfp4Block> x, float amax_t, int e4m3_bound) {
  const float s_enc = nvfp4_encode_scale(amax_t, e4m3_bound);
  const float one_sixth = fp32::div(1.0f, 6.0f);  // 0x3E2AAAAB
  const float amax_b = abs_max(x);
  Nvfp4Block out;
  // TE folds 1/6 into the global multiplier first; (amax_b * S_enc) / 6 rounds differently at ties.
  out.scale = e4m3_from_float(fp32::mul(amax_b, fp32::mul(s_enc, one_sixth)), /*saturate=*/true);
  const float inv = nvfp4_block_encode_scale(out.scale, s_enc);
  for (size_t i = 0; i < out.codes.size(); ++i) out.codes[i] = e2m1_from_float(fp32::mul(x[i], inv));
  return out;
}

float nvfp4_dequantize_value(uint8_t code, uint8_t scale, float amax_t, int e4m3_bound) {
  const float inv_6b = fp32::div(1.0f, bound_times_six(e4m3_bound));  // f32(1/2688) = 0x39C30C31
  const float fs = fp32::mul(fp32::mul(e4m3_to_float(scale), amax_t), inv_6b);
  return fp32::mul(e2m1_to_float(code), fs);
}

StatusOr<QuantizedTensor> nvfp4_quantize(std::span<const float> x, int64_t rows, int64_t cols, float amax_t,
                                         const Nvfp4Options& options) {
  KILN_RETURN_IF_ERROR(check_bound("nvfp4_quantize", options.e4m3_bound));
  if (rows < 0 || cols < 0)
    return InvalidArgument("nvfp4_quantize: shape [" + std::to_string(rows) + ", " + std::to_string(cols) +
                           "] has a negative dimension");
  if (cols % kNvfp4Block != 0)
    return InvalidArgument("nvfp4_quantize: K=" + std::to_string(cols) +
                           " is not a multiple of the nvfp4 block (16)");
  if (static_cast<int64_t>(x.size()) != rows * cols)
    return InvalidArgument("nvfp4_quantize: input has " + std::to_string(x.size()) + " elements, shape [" +
                           std::to_string(rows) + ", " + std::to_string(cols) + "] needs " +
                           std::to_string(rows * cols));
  if (std::isnan(amax_t) || amax_t < 0.0f)
    return InvalidArgument("nvfp4_quantize: amax_t=" + std::to_string(amax_t) +
                           " is not a tensor amax (it must be >= 0 and not NaN)");
  QuantizedTensor q;
  q.format = Format::kNvfp4;
  q.rows = rows;
  q.cols = cols;
  q.block_rows = 1;
  q.block_cols = kNvfp4Block;
  q.scale_type = ScaleType::kUe4m3;
  q.amax = amax_t;
  q.e4m3_bound = options.e4m3_bound;
  q.global_decode_scale = nvfp4_global_decode_scale(amax_t, options.e4m3_bound);
  q.data.assign(static_cast<size_t>(rows * q.row_bytes()), 0);
  q.scale_bytes.assign(static_cast<size_t>(rows * q.scale_cols()), 0);
  const int64_t blocks = cols / kNvfp4Block;
  for (int64_t r = 0; r < rows; ++r) {
    std::span<uint8_t> row_data(q.data.data() + r * q.row_bytes(), static_cast<size_t>(q.row_bytes()));
    for (int64_t kb = 0; kb < blocks; ++kb) {
      const std::span<const float, kNvfp4Block> block(x.data() + r * cols + kb * kNvfp4Block, kNvfp4Block);
      const Nvfp4Block b =
          options.four_over_six == FourOverSix::kOff
              ? nvfp4_quantize_block(block, amax_t, options.e4m3_bound)
              : four_over_six_block(block, amax_t, options.e4m3_bound, options.four_over_six).chosen();
      q.scale_bytes[static_cast<size_t>(r * blocks + kb)] = b.scale;
      for (int64_t i = 0; i < kNvfp4Block; ++i)
        e2m1_set(row_data, kb * kNvfp4Block + i, b.codes[static_cast<size_t>(i)]);
    }
  }
  return q;
}

StatusOr<QuantizedTensor> nvfp4_quantize(std::span<const float> x, int64_t rows, int64_t cols,
                                         const Nvfp4Options& options) {
  return nvfp4_quantize(x, rows, cols, abs_max(x), options);
}

StatusOr<std::vector<float>> nvfp4_dequantize(const QuantizedTensor& q) {
  if (q.format != Format::kNvfp4)
    return InvalidArgument(std::string("nvfp4_dequantize: tensor format is ") + format_name(q.format) +
                           ", expected nvfp4");
  KILN_RETURN_IF_ERROR(check_quantized_tensor(q));
  std::vector<float> out(static_cast<size_t>(q.rows * q.cols));
  for (int64_t r = 0; r < q.rows; ++r) {
    const std::span<const uint8_t> row_data(q.data.data() + r * q.row_bytes(), static_cast<size_t>(q.row_bytes()));
    for (int64_t c = 0; c < q.cols; ++c) {
      const uint8_t sf = q.scale_bytes[static_cast<size_t>(r * q.scale_cols() + c / kNvfp4Block)];
      out[static_cast<size_t>(r * q.cols + c)] = nvfp4_dequantize_value(e2m1_get(row_data, c), sf, q.amax, q.e4m3_bound);
    }
  }
  return out;
}

}  // namespace kiln::numerics
