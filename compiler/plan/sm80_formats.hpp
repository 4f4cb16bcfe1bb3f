// compiler/plan/sm80_formats.hpp — the format pairings of the portable sm80 family and what each
// needs from a problem: which mainloop reads them, whether the accumulator is promoted per K block,
// the bytes of a K tile row, and the size/alignment rules with messages that name the operand.
//
// Pairings (fprop; X = a [M, K], W = b [N, K]):
//   kSameFormat  templates/kernels/sm80_gemm.cuh
//     a=b=bf16 | a=b=f16                                    dense or grouped (offsets, masked)
//     a, b in {e4m3, e5m2} with a:{tensor, m, block1x128}, b:{tensor, n, block128x128} (f32 scales;
//       ue8m0 bytes for the blocks)                          dense
//     a=b=mxfp8                                              dense
//   kMixedInput  templates/kernels/sm80_mixed_gemm.cuh (bf16 activations, weights dequantized in
//                registers)
//     a=bf16, b in {mxfp4, nvfp4}                            dense or grouped
//     a=bf16, b in {e4m3, e5m2}:{tensor, n} (f32)            dense
// Everything else is UNSUPPORTED with the reason (sm80_pairing).
//
//   KILN_ASSIGN_OR_RETURN(Sm80Mainloop ml, sm80_pairing(spec));
//   int a_row = sm80_row_bytes_a(spec, cfg);   // bytes of one K-tile row of a in shared memory
#pragma once

#include <cstdint>

#include "compiler/plan/plan.hpp"

namespace kiln {

enum class Sm80Mainloop : uint8_t {
  kSameFormat,  // sm80_gemm.cuh: both operands through ldmatrix, 32 bytes of K per k-step
  kMixedInput,  // sm80_mixed_gemm.cuh: bf16 x 4/8-bit weights, block_k 64
};

// The mainloop for spec's operands, or UNSUPPORTED naming the operand and what would be accepted.
// Assumes the spec is valid and its problem kind (op, pass, output) was checked.
StatusOr<Sm80Mainloop> sm80_pairing(const KernelSpec& spec);
// Whether some scale of spec changes along K and is promoted into the accumulator per K block
// (FP8 block1x128 / block128x128, MXFP8): kernels/sm80_promotion.cuh.
bool sm80_promotes(const KernelSpec& spec);
// Bytes of one K-tile row in shared memory, per operand.
int sm80_row_bytes_a(const KernelSpec& spec, const TileConfig& cfg);
int sm80_row_bytes_b(const KernelSpec& spec, const TileConfig& cfg);
// B row bytes of one stage in shared memory (16-bit weights with quantized activations: padded rows).
int sm80_smem_row_bytes_b(const KernelSpec& spec, const TileConfig& cfg);
// Bytes of `elems` elements of format f (4-bit formats: elems / 2).
int64_t format_span_bytes(Format f, int64_t elems);
// Row alignment (16-byte cp.async chunks) of a and b for K, and the format-specific K rules.
Status sm80_check_sizes(const KernelSpec& spec, const ProblemSizes& sizes);
// Pairing-specific config rules (block_k of the mixed mainloop; block128x128 warp tiles).
Status sm80_check_pairing_config(const KernelSpec& spec, const TileConfig& cfg);

}  // namespace kiln
