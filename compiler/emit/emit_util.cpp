#include "compiler/emit/emit_util.hpp"

#include "compiler/plan/gemm_view.hpp"

#include <optional>

#include "compiler/epilogue/epilogue.hpp"

namespace kiln::emit_internal {

StatusOr<EpilogueParts> epilogue_parts(const KernelSpec& spec, const EpilogueProgram* program) {
  EpilogueParts parts;
  if (spec.epilogue.empty()) return parts;
  std::optional<EpilogueProgram> lowered;
  if (program == nullptr) {
    KILN_ASSIGN_OR_RETURN(lowered, spec_epilogue_program(spec));
    program = &*lowered;
  }
  KILN_ASSIGN_OR_RETURN(EpilogueCode code, emit_epilogue(*program));
  parts.functor = code.functor;
  parts.config = constant("kiln_dev::GateUp", "kGateUp", device_gate_up(spec.gate_up)) +
                 "  using Epilogue = KilnEpilogue;\n";
  return parts;
}

const char* device_gate_up(GateUp g) {
  switch (g) {
    case GateUp::kNone: return "kiln_dev::GateUp::kNone";
    case GateUp::kInterleaved: return "kiln_dev::GateUp::kInterleaved";
    case GateUp::kStacked: return "kiln_dev::GateUp::kStacked";
  }
  return "kiln_dev::GateUp::kNone";
}

const char* device_format(Format f) {
  switch (f) {
    case Format::kBf16: return "kiln_dev::Format::kBf16";
    case Format::kF16: return "kiln_dev::Format::kF16";
    case Format::kF32: return "kiln_dev::Format::kF32";
    case Format::kE4m3: return "kiln_dev::Format::kE4m3";
    case Format::kE5m2: return "kiln_dev::Format::kE5m2";
    case Format::kMxfp8: return "kiln_dev::Format::kMxfp8";
    case Format::kMxfp4: return "kiln_dev::Format::kMxfp4";
    case Format::kNvfp4: return "kiln_dev::Format::kNvfp4";
  }
  return "kiln_dev::Format::kBf16";  // unreachable: the switch covers the enum
}

const char* device_scale_type(ScaleType t) {
  switch (t) {
    case ScaleType::kNone: return "kiln_dev::ScaleType::kNone";
    case ScaleType::kF32: return "kiln_dev::ScaleType::kF32";
    case ScaleType::kUe8m0: return "kiln_dev::ScaleType::kUe8m0";
    case ScaleType::kUe4m3: return "kiln_dev::ScaleType::kUe4m3";
  }
  return "kiln_dev::ScaleType::kNone";  // unreachable: the switch covers the enum
}

std::string constant(const char* type, const char* name, const std::string& value) {
  return std::string("  static constexpr ") + type + " " + name + " = " + value + ";\n";
}

std::string backward_constants(const KernelSpec& spec) {
  const GemmView v = gemm_view(spec, ProblemSizes{});
  std::string s;
  if (v.a_mn_major) s += constant("bool", "kTransA", "true");
  if (v.b_mn_major) s += constant("bool", "kTransB", "true");
  if (spec.accumulate) s += constant("bool", "kAccumulate", "true");
  return s;
}

}  // namespace kiln::emit_internal
