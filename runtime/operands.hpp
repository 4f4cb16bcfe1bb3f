// runtime/operands.hpp — checks the DLTensor operands of a run against the spec and the plan, and
// turns them into the kernel arguments (kiln_dev::GemmParams).
//
// Every rule names the operand, the value found and what would be accepted, e.g.
// "operand b: dtype bfloat16 but the spec says b=e4m3 (uint8 bytes, or DLPack float8_e4m3fn)".
// Shapes are in logical elements; quantized operands travel as uint8 views (Debian's DLPack 0.6 has
// no FP8/FP4 codes) and DLPack >= 1.1 FP8/FP4/E8M0 codes are accepted by value. Packed FP4 (mxfp4,
// nvfp4) as uint8 is [rows, K/2] bytes, or gpt-oss's [rows, K/32, 16] (the same memory).
//
// Tensors per spec (X = a, W = b; E = experts; M = total rows); backward passes (compiler/plan/gemm_view.hpp)
// take a = dY [M, N] and, for dgrad, b = W [N, K] (grouped [E, N, K]) and out = dX [M, K] (masked
// [E, max_m, K]); for wgrad (dense), b = X [M, K] and out = dW [N, K]. A quantized dgrad's dY scales run
// along N (a_scale: tensor [1] | m [M] | block1x128 [M, N/128]) and W's are the forward's. Fprop:
//   a        [M, K]; masked layout [E, max_m, K] (contiguous across experts: stride(0) = max_m * stride(1))
//   b        [N, K]; grouped [E, N, K]
//   out      [M, N]; masked [E, max_m, N] (likewise contiguous across experts)
//   a_scale  tensor: f32 [1] | m: f32 [M] | block1x128: [M, K/128] f32 or E8M0 | mxfp8: E8M0 [M, K/32]
//   b_scale  tensor: f32 [1] | n: f32 [N] | block128x128: [ceil(N/128), K/128] f32 or E8M0 |
//            mxfp8/mxfp4: E8M0 [N, K/32] | nvfp4: UE4M3 [N, K/16]; grouped: a leading [E] dimension
//   b_global nvfp4 only: f32 [1] (nvfp4_global=tensor) or [E] (expert), the decode value on the device
//   offsets  layout=offsets: int32 [E] cumulative row ends (torch _grouped_mm)
//   counts   layout=masked:  int32 [E] rows per expert
//   out has N_out = N / 2 columns with gate_up (else N); the epilogue's vectors
//   (bias, scale, colscale, expert_scale, residual, gate_bias, up_bias) as kiln.hpp Operands says,
//   f32 / bf16 / f16, any strides; a vector the epilogue does not read must be absent.
//
//   KILN_ASSIGN_OR_RETURN(CheckedOperands c, check_operands(spec, sizes, ops));
//   kiln_dev::GemmParams gp = gemm_params(c, sizes);
#pragma once

#include <cstdint>

#include <vector>

#include "compiler/epilogue/epilogue.hpp"
#include "kiln/kiln.hpp"
#include "templates/common/gemm_params.cuh"

namespace kiln {

struct CheckedOperands {
  int device = 0;
  Pass pass = Pass::kFprop;  // the spec's: gemm_params maps M, N, K to the kernel's GEMM
  int64_t m = 0;  // rows of X and Y: M, or E * max_m for the masked layout
  const void* a = nullptr;
  const void* b = nullptr;
  void* out = nullptr;
  const float* a_scale = nullptr;  // f32, or E8M0 / UE4M3 bytes reinterpreted (gemm_params.cuh)
  const float* b_scale = nullptr;
  int64_t lda = 0, ldb = 0, ldc = 0;  // row strides in elements
  // scaled and grouped formats
  int64_t lds_a = 0, lds_b = 0;  // row strides of 2-D scales, in scale elements
  const float* b_global = nullptr;
  const int32_t* group_rows = nullptr;  // offsets or counts
  int64_t b_expert_stride = 0, b_scale_expert_stride = 0;
  int experts = 0;
  int max_m = 0;
  // the epilogue's vectors by slot (null data past the epilogue's operands)
  kiln_dev::EpilogueVector ep[kiln_dev::kMaxEpilogueOperands] = {};
};

// epilogue: the spec's epilogue operands in slot order (spec_epilogue_program(spec)->operands; Plan
// keeps them so that a run parses nothing). The three-argument form derives them from the spec.
StatusOr<CheckedOperands> check_operands(const KernelSpec& spec, const ProblemSizes& sizes, const Operands& ops,
                                         const std::vector<EpilogueOperand>& epilogue);
StatusOr<CheckedOperands> check_operands(const KernelSpec& spec, const ProblemSizes& sizes, const Operands& ops);
// Plan::run's form: the same checks, written into `out` (reset first; unspecified on error). It saves
// copying the ~400-byte result through StatusOr twice per launch (dispatch cost).
Status check_operands(const KernelSpec& spec, const ProblemSizes& sizes, const Operands& ops,
                      const std::vector<EpilogueOperand>& epilogue, CheckedOperands& out);
// Columns of Y: N, or N / 2 for a gate|up GLU.
int64_t output_columns(const KernelSpec& spec, int64_t n);
// The Operands field of an epilogue vector (bias -> ops.bias, ...).
const DLTensor* epilogue_tensor(const Operands& ops, EpVector v);

// ---- quantize specs: a = X [M, K] in, out = codes, out_scale / out_global written.
//   out        [M, K] (fp8) or [M, K/2] bytes (mxfp4 / nvfp4); transpose=true: [K, M] (or [K, M/2])
//   out_scale  e4m3:tensor f32 [1] | e4m3:m f32 [M] | e4m3:block1x128 [M, K/128] | block128x128
//              [ceil(M/128), K/128] (f32 or E8M0 bytes) | mxfp8/mxfp4 E8M0 [M, K/32] | nvfp4 UE4M3
//              [M, K/16]; transpose=true: [K, M/block]
//   out_global out=nvfp4: f32 [1]
struct CheckedQuantize {
  int device = 0;
  int64_t m = 0;
  const void* in = nullptr;
  void* out = nullptr;
  void* scale = nullptr;
  float* global = nullptr;
  int64_t ld_in = 0, ld_out = 0, ld_scale = 0;  // elements; scale elements
  // Grouped transposed quantize: the row vector (offsets or counts), masked max_m, the copy's columns.
  const int* group_rows = nullptr;
  int experts = 0, max_m = 0;
  bool masked = false;
  int64_t out_cols = 0;
  // e4m3:m transpose=true: the copy's columns are out_cols (>= m; the rest zero codes).
  bool columns = false;
};
StatusOr<CheckedQuantize> check_quantize_operands(const KernelSpec& spec, const ProblemSizes& sizes,
                                                  const Operands& ops);

// The kernel arguments for checked operands (n and k from the plan's sizes).
kiln_dev::GemmParams gemm_params(const CheckedOperands& c, const ProblemSizes& sizes);

}  // namespace kiln
