// runtime/operands.hpp — checks the DLTensor operands of a run against the spec and the plan.
//
// Every rule names the operand, the value found and what would be accepted, e.g.
// "operand b: dtype bfloat16 but the spec says b=e4m3 (uint8 bytes, or DLPack float8_e4m3fn)".
// Shapes are in logical elements; quantized operands travel as uint8 views (Debian's DLPack 0.6 has
// no FP8 codes) and DLPack >= 1.1 FP8 codes are accepted by value.
#pragma once

#include <cstdint>

#include "kiln/kiln.hpp"

namespace kiln {

struct CheckedOperands {
  int device = 0;
  int64_t m = 0;
  const void* a = nullptr;
  const void* b = nullptr;
  void* out = nullptr;
  const float* a_scale = nullptr;
  const float* b_scale = nullptr;
  int64_t lda = 0, ldb = 0, ldc = 0;  // row strides in elements
};

StatusOr<CheckedOperands> check_operands(const KernelSpec& spec, const ProblemSizes& sizes, const Operands& ops);

}  // namespace kiln
