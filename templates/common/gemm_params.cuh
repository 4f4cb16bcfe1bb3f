// templates/common/gemm_params.cuh — the kernel-argument ABI shared by host and device.
//
// Every GEMM kernel kiln generates takes exactly one GemmParams by value. This header is plain C++
// (no CUDA keywords, no includes) so the host runtime includes it too and both sides agree on the
// layout byte for byte. Add fields only at the end and bump kCodegenVersion (cache/cache_key.hpp).
//
// Strides are in logical ELEMENTS of the operand's format (a packed FP4 row of K elements is K / 2
// bytes; its stride counts elements too). Scale tensors are row-major with their own row stride in
// scale elements (f32, or one byte for E8M0 / UE4M3). What a_scale / b_scale point at, per the
// spec's granularity (docs/architecture.md, "Formats"; X = a [M, K], W = b [N, K]):
//   tensor         one f32                              (FP8)
//   m / n          f32 [M] / f32 [N]                    (FP8 per token / per output channel)
//   block1x128     [M, K/128]  f32 or E8M0 bytes        (a: DeepSeek activations)
//   block128x128   [ceil(N/128), K/128] f32 or E8M0     (b: DeepSeek weights)
//   mxfp8 / mxfp4  E8M0 bytes [rows, K/32]
//   nvfp4          UE4M3 bytes [N, K/16], plus b_global (the f32 global decode scale on the device)
// Byte scales travel through the same `const float*` fields and are reinterpreted by the kernel.
//
// Grouped GEMMs (experts > 0; docs/architecture.md, "Grouped GEMM contract"):
//   offsets layout: a = X [M_total, K] with rows sorted by expert, out = Y [M_total, N], group_rows =
//                   int32 [experts] cumulative row ENDS (torch _grouped_mm); m = M_total.
//   masked layout:  a = X [experts, max_m, K] and out = Y [experts, max_m, N], each contiguous across
//                   experts (row e * max_m + r), group_rows = int32 [experts] row COUNTS; m = experts
//                   * max_m. Rows past an expert's count are neither read into results nor written.
//   b = W [experts, N, K] with b_expert_stride elements between experts; b's 2-D scales likewise
//   (b_scale_expert_stride scale elements); b_global holds one f32 per expert for nvfp4_global=expert.
//
// Epilogue vector operands (kCodegenVersion 3; docs/epilogue.md): ep[slot] is the
// vector the generated functor reads as c.load<slot>(...), slots in the order of compiler/epilogue's
// EpilogueProgram::operands. Element (i) of a one-index vector ([m], [n], [e]) is at data + i *
// stride0; element (r, c) of [e,n] / [m,n] at data + r * stride0 + c * stride1 (elements of its
// dtype: f32, bf16 or f16, converted to f32 on load). [m] counts Y's rows as the kernel does (offsets:
// global rows; masked: expert * max_m + row); [n] counts OUTPUT columns (N / 2 with gate_up). Unused
// slots are null. With gate_up, n is still the GEMM's N (rows of W) and Y has n / 2 columns.
#pragma once

namespace kiln_dev {

constexpr int kMaxEpilogueOperands = 8;  // compiler/epilogue kMaxEpilogueOperands

// Element types of epilogue vectors.
enum EpilogueDtype : int { kEpF32 = 0, kEpBf16 = 1, kEpF16 = 2 };

struct EpilogueVector {
  const void* data;
  long long stride0;  // elements between consecutive values of the (first) index
  long long stride1;  // elements between consecutive values of the second index ([e,n], [m,n])
  int dtype;          // EpilogueDtype
  int reserved;
};

struct GemmParams {
  const void* a;          // X [M, K], row stride lda elements (K-contiguous)
  const void* b;          // W [N, K], row stride ldb elements (K-contiguous)
  void* out;              // Y [M, N], row stride ldc elements (N-contiguous)
  const float* a_scale;   // per the spec (see above), or null when the format is unscaled
  const float* b_scale;
  long long lda;
  long long ldb;
  long long ldc;
  int m;
  int n;
  int k;
  int reserved;
  // ---- kCodegenVersion 2: 2-D scale strides, NVFP4 global scale, grouped GEMMs ----
  long long lds_a;                  // row stride of a's 2-D scales, in scale elements
  long long lds_b;                  // row stride of b's 2-D scales, in scale elements
  const float* b_global;            // nvfp4 b: global decode scale(s) on the device, or null
  const int* group_rows;            // grouped: offsets (cumulative ends) or counts, int32 [experts]
  long long b_expert_stride;        // grouped: elements of W between consecutive experts
  long long b_scale_expert_stride;  // grouped: scale elements between consecutive experts' b scales
  int experts;                      // grouped: number of experts (0 for a dense GEMM)
  int max_m;                        // masked layout: row slots per expert
  // ---- kCodegenVersion 3: epilogue vector operands ----
  EpilogueVector ep[kMaxEpilogueOperands];  // the epilogue's vector operands by slot (see above)
};

}  // namespace kiln_dev
