// Four-over-six NVFP4 block selection (four_over_six.hpp, docs/numerics.md §4).
#include "compiler/numerics/four_over_six.hpp"

#include <cmath>

#include "compiler/numerics/e2m1.hpp"
#include "compiler/numerics/fp32_rn.hpp"
#include "compiler/numerics/fp8.hpp"

namespace kiln::numerics {
namespace {

// One candidate: codes for scale byte sf, and its error against x in the chosen metric.
float quantize_candidate(std::span<const float, kNvfp4Block> x, float amax_t, int e4m3_bound, float s_enc,
                         FourOverSix metric, Nvfp4Block& block) {
  const float inv = nvfp4_block_encode_scale(block.scale, s_enc);
  const float sf = e4m3_to_float(block.scale);
  const float six_b = 6.0f * static_cast<float>(e4m3_bound);  // 1536 or 2688, exact
  float err = 0.0f;
  for (size_t i = 0; i < block.codes.size(); ++i) {
    block.codes[i] = e2m1_from_float(fp32::mul(x[i], inv));
    const float val = fp32::div(fp32::mul(fp32::mul(e2m1_to_float(block.codes[i]), sf), amax_t), six_b);
    const float d = fp32::sub(val, x[i]);
    err = fp32::add(err, metric == FourOverSix::kMse ? fp32::mul(d, d) : std::fabs(d));
  }
  return err;
}

}  // namespace

FourOverSixChoice four_over_six_block(std::span<const float, kNvfp4Block> x, float amax_t, int e4m3_bound,
                                      FourOverSix metric) {
  const float s_enc = nvfp4_encode_scale(amax_t, e4m3_bound);
  const float base = fp32::mul(fp32::div(abs_max(x), 6.0f), s_enc);
  FourOverSixChoice c;
  // fminf against 448 (the E4M3 maximum, not the bound): with bound 448 a large block's map-to-4
  // scale clamps to the map-to-6 one.
  c.map6.scale = e4m3_from_float(fp32::fmin(base, 448.0f), /*saturate=*/true);
  c.map4.scale = e4m3_from_float(fp32::fmin(fp32::mul(base, 1.5f), 448.0f), /*saturate=*/true);
  c.error6 = quantize_candidate(x, amax_t, e4m3_bound, s_enc, metric, c.map6);
  c.error4 = quantize_candidate(x, amax_t, e4m3_bound, s_enc, metric, c.map4);
  c.map4_chosen = c.error4 < c.error6;  // ties (and NaN errors) keep map-to-6
  return c;
}

}  // namespace kiln::numerics
