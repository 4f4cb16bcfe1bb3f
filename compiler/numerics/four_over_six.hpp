// compiler/numerics/four_over_six.hpp — "Four Over Six" (4/6) adaptive NVFP4 block scaling,
// TransformerEngine's compute_scale_pair, accurate error path (docs/numerics.md §4).
//
// FP4 has nothing between 4 and 6, so for each 16-element block two candidates are built and the
// one with the smaller quantization error is kept:
//   S_enc = nvfp4_encode_scale(amax_t, B)            (6*B / amax_t; B = 256 is the 4/6 default)
//   base  = (amax_b / 6.0f) * S_enc                  divide-then-multiply, unlike plain NVFP4
//   sf6   = e4m3(fminf(base, 448))                   map-to-6: amax_b lands on 6
//   sf4   = e4m3(fminf(base * 1.5f, 448))            map-to-4: amax_b lands on 4
//   S_dec = 1 / S_enc;  inv_k = fminf(1 / (float(sf_k) * S_dec), FLT_MAX);  q_k,i = e2m1(x_i * inv_k)
//   val   = ((e2m1(q) * float(sf)) * amax_t) / (6*B)
//   err_k = sum_i |val - x_i| (MAE, TE default)  or  sum_i (val - x_i)^2 (MSE, fouroversix default)
//   map-to-4 is chosen iff err4 < err6 (strict: ties keep map-to-6).
// Every step is one fp32 op rounded once; the sums run i = 0..15 in order, each square and each
// addition rounded separately (no fused multiply-add).
//
// Invariant: with B = 448 and amax_b > 2/3 amax_t, sf4 clamps to 448 like sf6 and map-to-6 wins the
// tie (docs/numerics.md §4 "The 256 bound"). Dequantize either choice with nvfp4_dequantize_value.
//
//   FourOverSixChoice c = four_over_six_block(block, /*amax_t=*/6.0f, 256, FourOverSix::kMae);
//   Nvfp4Block chosen = c.chosen();   // block A of §4: map-to-4, scale 0x7C
#pragma once

#include <cstdint>
#include <span>

#include "compiler/numerics/nvfp4.hpp"
#include "kiln/spec.hpp"

namespace kiln::numerics {

struct FourOverSixChoice {
  Nvfp4Block map6;
  Nvfp4Block map4;
  float error6 = 0.0f;  // in the chosen metric, fp32 as accumulated
  float error4 = 0.0f;
  bool map4_chosen = false;
  const Nvfp4Block& chosen() const { return map4_chosen ? map4 : map6; }
};

// metric must be kMae or kMse (kOff is treated as kMae). amax_b is taken from x.
FourOverSixChoice four_over_six_block(std::span<const float, kNvfp4Block> x, float amax_t, int e4m3_bound,
                                      FourOverSix metric);

}  // namespace kiln::numerics
