// compiler/spec/spec.hpp — the kiln DSL's JSON form (the text form, the builder and validation are
// public: include/kiln/spec.hpp).
//
// Owns the text and JSON forms of KernelSpec. Invariants: parse_spec(print_spec(s)) == s for every
// valid s; from_json(to_json(s)) == s; parse errors carry line and column and say what was expected;
// validation errors name the operand/attribute, the value, and what would be accepted.
//
//   auto spec = kiln::parse_spec("gemm a=e4m3:tensor b=e4m3:tensor out=bf16");
//   if (!spec.ok()) return spec.status();          // "1:8: unknown format 'e4m4'; expected one of ..."
//   std::string text = kiln::print_spec(*spec);    // canonical text
//   nlohmann::json j = kiln::spec_to_json(*spec);
//   KILN_RETURN_IF_ERROR(kiln::validate_spec(*spec));
//   KILN_RETURN_IF_ERROR(kiln::validate_sizes(*spec, {.m = 1, .n = 7168, .k = 7168}));
//   auto built = kiln::SpecBuilder().a(kiln::Format::kE4m3, kiln::ScaleGranularity::kTensor)
//                    .b(kiln::Format::kE4m3, kiln::ScaleGranularity::kTensor).out(kiln::Format::kBf16).build();
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include <optional>

#include "compiler/epilogue/epilogue.hpp"  // Epilogue
#include "kiln/spec.hpp"                   // KernelSpec, parse_spec, print_spec, validate_*, SpecBuilder

namespace kiln {

nlohmann::json spec_to_json(const KernelSpec& spec);
StatusOr<KernelSpec> spec_from_json(const nlohmann::json& j);

// validate_spec that hands back the parsed epilogue (nullopt for a spec without one): a plan parses
// the epilogue text once, here, and lowers what it gets (compiler/plan/planner.cpp).
Status validate_spec(const KernelSpec& spec, std::optional<Epilogue>& epilogue);
// validate_sizes for a spec validate_spec accepted: the sizes' rules only, the spec is not checked again.
Status validate_valid_spec_sizes(const KernelSpec& spec, const ProblemSizes& sizes);

}  // namespace kiln
