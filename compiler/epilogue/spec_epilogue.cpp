// The epilogue of a KernelSpec as a lowered program (spec_epilogue_program, epilogue.hpp).
#include "compiler/epilogue/epilogue.hpp"

namespace kiln {

StatusOr<std::optional<EpilogueProgram>> spec_epilogue_program(const KernelSpec& spec) {
  if (spec.epilogue.empty()) return std::optional<EpilogueProgram>();
  StatusOr<Epilogue> ep = parse_epilogue(spec.epilogue, EpilogueContext::of(spec));
  if (!ep.ok()) return ep.status().with_context("epilogue");
  KILN_ASSIGN_OR_RETURN(EpilogueProgram program, spec_epilogue_program(*ep));
  return std::optional<EpilogueProgram>(std::move(program));
}

StatusOr<EpilogueProgram> spec_epilogue_program(const Epilogue& parsed) {
  KILN_ASSIGN_OR_RETURN(EpilogueProgram program, lower_epilogue(parsed));
  static_assert(kEpVectorCount <= kMaxEpilogueOperands,
                "every vector of the language fits the parameter block");
  if (static_cast<int>(program.operands.size()) > kMaxEpilogueOperands)
    return Internal("epilogue: " + std::to_string(program.operands.size()) + " vector operands; at most " +
                    std::to_string(kMaxEpilogueOperands));
  return program;
}

}  // namespace kiln
