// templates/common/quantize_params.cuh — the kernel-argument ABI of the quantize family, shared by
// host and device (plain C++: no CUDA keywords, no includes), like common/gemm_params.cuh.
//
// A quantize spec reads X [M, K] (bf16 / f16 / f32, row stride ld_in elements) and writes:
//   out    the codes: [M, K] (fp8: one byte per element; mxfp4 / nvfp4: two per byte, [M, K/2]),
//          or with transpose=true the transposed copy [K, M] (blocks then run along M);
//          row stride ld_out in ELEMENTS of the output.
//   scale  tensor: f32 [1]; m: [M]; block1x128: [M, K/128]; block128x128: [ceil(M/128), K/128]
//          (f32, or E8M0 bytes with :ue8m0); mxfp8 / mxfp4: E8M0 [M, K/32]; nvfp4: UE4M3 [M, K/16];
//          transposed: [K, M/128], [K, M/32], [K, M/16]. Row stride ld_scale in scale elements.
//   global nvfp4 only: f32 [1], the global decode scale amax / (6 * e4m3_bound).
// Grouped transposed (quantize[experts=E,layout=offsets|masked] ... transpose=true; group_rows non-null): X's
// rows belong to experts (offsets: cumulative row ends over the M rows; masked: X is [E, max_m, K] and
// group_rows holds each expert's row count), and each expert's rows are quantized along M on their own:
// expert e's r rows land in output columns [P_e, P_e + r) with P_e = the sum over earlier experts of their
// rows rounded up to whole blocks, and columns [P_e + r, P_e + round_up(r, block)) are zero codes (so a
// block never spans two experts and a GEMM over the copy reads whole blocks). out_cols is the copy's width
// (at least block * (ceil(M / block) + E)); columns past the last expert's blocks are not written.
// Scales that need the tensor's amax (FP8 per tensor, the NVFP4 global) take four launches of the
// same kernel, selected by `phase`: kPhaseInit zeroes the amax slot (the f32 that will hold the
// scale: `scale` for FP8 per tensor, `global` for NVFP4), kPhaseAmax max-reduces |x| into it as
// integer bits (atomic max: deterministic), kPhaseQuantize reads the amax from it and writes codes
// and block scales, kPhaseFinalize turns the slot into the decode scale. Block-local formats run
// kPhaseQuantize alone. Add fields only at the end and bump kCodegenVersion.
#pragma once

namespace kiln_dev {

enum QuantPhase : int { kPhaseInit = 0, kPhaseAmax = 1, kPhaseQuantize = 2, kPhaseFinalize = 3 };

struct QuantizeParams {
  const void* in;
  void* out;
  void* scale;
  float* global;
  long long ld_in;
  long long ld_out;
  long long ld_scale;
  int m;
  int k;
  int phase;
  int reserved;
  // ---- grouped transposed quantize ----
  const int* group_rows;  // offsets (cumulative ends) or counts, int32 [experts]; null when not grouped
  int experts;
  int max_m;     // masked layout: row slots per expert
  int out_cols;  // the padded copy's columns (the bound of every write)
  int masked;    // 1: group_rows holds counts (masked layout), 0: cumulative ends (offsets)
};

}  // namespace kiln_dev
