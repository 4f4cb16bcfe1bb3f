// compiler/emit/quantize_emit.hpp — a quantize spec -> the quantize family's translation unit
// (templates/kernels/quantize.cuh). Like every emitter, it writes only kiln's own strings and integers.
//
//   KILN_ASSIGN_OR_RETURN(EmittedKernel k, kiln::emit_quantize_kernel(spec, arch));
//   // k.entry == "kiln_quantize"; launched once per phase (compiler/plan/quantize_plan.hpp)
#pragma once

#include "compiler/emit/emit.hpp"

namespace kiln {

StatusOr<EmittedKernel> emit_quantize_kernel(const KernelSpec& spec, const Arch& arch);

}  // namespace kiln
