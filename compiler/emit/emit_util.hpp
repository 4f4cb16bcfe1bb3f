// compiler/emit/emit_util.hpp — pieces every family's emitter shares (private to compiler/emit).
// Everything here returns kiln's own strings, never spec text.
#pragma once

#include <string>

#include "compiler/epilogue/epilogue.hpp"
#include "kiln/status.hpp"
#include "kiln/spec.hpp"

namespace kiln::emit_internal {

// Host format -> the device enumerator naming it (templates/common/types.cuh).
const char* device_format(Format f);
// Host gate|up layout -> its device enumerator (kiln_dev::GateUp).
const char* device_gate_up(GateUp g);
// Host scale type -> its device enumerator (kiln_dev::ScaleType).
const char* device_scale_type(ScaleType t);
// A spec's epilogue, for either GEMM family: the generated functor (struct
// KilnEpilogue, placed before KilnConfig) and the config lines naming it (kGateUp, using Epilogue).
// Both empty for a spec without one (epilogue/config.cuh then defaults them). program: the spec's lowered
// epilogue when the caller has it (emit_kernel's), else null and it is lowered from spec.epilogue here.
struct EpilogueParts {
  std::string functor;
  std::string config;
};
StatusOr<EpilogueParts> epilogue_parts(const KernelSpec& spec, const EpilogueProgram* program);
// "  static constexpr TYPE NAME = VALUE;\n" for a generated config struct.
std::string constant(const char* type, const char* name, const std::string& value);
// kTransA / kTransB for the operands the spec's pass reads MN-major, and kAccumulate for accumulate=true
// (templates/common/operand_major.cuh); empty for fprop, so forward kernels keep their source.
std::string backward_constants(const KernelSpec& spec);

}  // namespace kiln::emit_internal
