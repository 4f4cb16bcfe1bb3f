// compiler/numerics/nvfp4.hpp — NVFP4 quantization in TransformerEngine's fp32 operation order
// (docs/numerics.md §4), with optional four-over-six block selection (four_over_six.hpp).
//
// x ~ e2m1 * s_block * s_global: 16 contiguous elements along K share one UE4M3 block scale, and
// one fp32 global scale covers the tensor (or one expert). With B the E4M3 bound (448, or 256 for
// four-over-six) every step below is one fp32 operation rounded once (docs/numerics.md §4):
//   S_enc = fminf((6*B) / amax_t, FLT_MAX);  S_enc = 1 if amax_t == 0 or S_enc == 0
//   S_dec = 1 / S_enc
//   sf    = e4m3_satfinite(amax_b * (S_enc * f32(1/6)))        ORDER MATTERS (§4 tie example)
//   inv   = fminf(1 / (float(sf) * S_dec), FLT_MAX)
//   q_i   = e2m1_rn_satfinite(x_i * inv)
// Dequantization (TE dequantize_nvfp4): fs = (float(sf) * amax_t) * f32(1/(6*B)); x^_i = e2m1(q_i) * fs.
// The global decode scale a GEMM receives is f32(amax_t / (6*B)) (amax / (6*448) for plain NVFP4).
//
// Invariants:
//   - bitwise equal to TE at the ties where torchao / fouroversix differ (§4: 0x47, not 0x46);
//   - an all-zero block gets sf = 0x00 (TE), not torchao's 0x08; sf may be an E4M3 subnormal;
//   - quantize, dequantize and the global scale all use the same bound B (§4);
//   - no fused multiply-add: every op goes through fp32_rn.hpp, whatever -ffp-contract says;
//   - block amax propagates NaN: in the plain path a NaN element makes its block's sf NaN (0x7F)
//     and the dequantized block NaN. (Four-over-six clamps with fminf(base, 448), which drops the
//     NaN as C and CUDA fminf do: sf 0x7E, and the NaN element itself encodes as +6.)
//
//   Nvfp4Options opt;                                   // bound 448, four-over-six off
//   KILN_ASSIGN_OR_RETURN(QuantizedTensor q, nvfp4_quantize(x, m, k, /*amax_t=*/20.0f, opt));
//   // q.data: m * k/2 packed E2M1; q.scale_bytes: m * k/16 UE4M3; q.global_decode_scale = 20/2688
//   KILN_ASSIGN_OR_RETURN(std::vector<float> back, nvfp4_dequantize(q));
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "compiler/numerics/quantized_tensor.hpp"
#include "kiln/spec.hpp"
#include "kiln/status.hpp"

namespace kiln::numerics {

inline constexpr int64_t kNvfp4Block = 16;

struct Nvfp4Options {
  int e4m3_bound = 448;                           // 448 or 256 (docs/numerics.md §4 "The 256 bound")
  FourOverSix four_over_six = FourOverSix::kOff;  // kMae / kMse: §4 selection with that metric
};

// One quantized 16-element block: its UE4M3 scale byte and 16 E2M1 codes (low nibbles).
struct Nvfp4Block {
  uint8_t scale = 0;
  std::array<uint8_t, kNvfp4Block> codes{};
};

// docs/numerics.md §4 S_enc (and with bound 256: 1536 / amax_t).
float nvfp4_encode_scale(float amax_t, int e4m3_bound);
// f32(amax_t / (6 * e4m3_bound)): the decode value a GEMM's global-scale tensor holds.
float nvfp4_global_decode_scale(float amax_t, int e4m3_bound);

// docs/numerics.md §4 inv: fminf(1 / (float(sf) * S_dec), FLT_MAX) with S_dec = f32(1 / s_enc); the
// multiplier a block's elements are encoded with (also for both four-over-six candidates).
float nvfp4_block_encode_scale(uint8_t sf, float s_enc);
// docs/numerics.md §4: one block, plain NVFP4 (map-to-6), amax_b taken from x.
Nvfp4Block nvfp4_quantize_block(std::span<const float, kNvfp4Block> x, float amax_t, int e4m3_bound);
// docs/numerics.md §4 "Dequantization": e2m1(code) * ((float(scale) * amax_t) * f32(1/(6*bound))).
float nvfp4_dequantize_value(uint8_t code, uint8_t scale, float amax_t, int e4m3_bound);

// x row-major [rows, cols], cols % 16 == 0, amax_t >= 0 the per-tensor (or per-expert) amax the
// kernel is given; blocks whose amax exceeds it saturate. Fills data, scale_bytes [rows, cols/16],
// amax, e4m3_bound and global_decode_scale.
StatusOr<QuantizedTensor> nvfp4_quantize(std::span<const float> x, int64_t rows, int64_t cols, float amax_t,
                                         const Nvfp4Options& options);
// The same with amax_t = max |x| over the whole input (a NaN in x is then INVALID_ARGUMENT: there
// is no tensor amax to build the global scale from).
StatusOr<QuantizedTensor> nvfp4_quantize(std::span<const float> x, int64_t rows, int64_t cols,
                                         const Nvfp4Options& options);
// Row-major [rows, cols] fp32 values, TE's dequantization order (see above).
StatusOr<std::vector<float>> nvfp4_dequantize(const QuantizedTensor& q);

}  // namespace kiln::numerics
