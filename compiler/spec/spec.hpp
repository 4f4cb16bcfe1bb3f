// compiler/spec/spec.hpp — the kiln DSL: parse, print, JSON, build, validate.
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

#include "compiler/spec/kernel_spec.hpp"

namespace kiln {

// Parses the text form (see docs/dsl.md). Validates too: a spec that parses is valid.
StatusOr<KernelSpec> parse_spec(std::string_view text);
// Canonical text: fixed key order, defaults omitted. Round-trips through parse_spec.
std::string print_spec(const KernelSpec& spec);

nlohmann::json spec_to_json(const KernelSpec& spec);
StatusOr<KernelSpec> spec_from_json(const nlohmann::json& j);

// Structural validity (format x granularity x operand role x op). Independent of sizes.
Status validate_spec(const KernelSpec& spec);
// Size rules: which dimension breaks which block size ("K=1000 is not a multiple of ...").
// Alignment rules of the kernels (16-byte rows) are checked by the planner, not here.
Status validate_sizes(const KernelSpec& spec, const ProblemSizes& sizes);

class SpecBuilder {
 public:
  SpecBuilder& op(Op op);
  SpecBuilder& grouped(int experts, GroupLayout layout);
  SpecBuilder& pass(Pass p);
  SpecBuilder& a(Format f, ScaleGranularity g = ScaleGranularity::kNone, ScaleType t = ScaleType::kNone);
  SpecBuilder& b(Format f, ScaleGranularity g = ScaleGranularity::kNone, ScaleType t = ScaleType::kNone);
  SpecBuilder& out(Format f, ScaleGranularity g = ScaleGranularity::kNone, ScaleType t = ScaleType::kNone);
  SpecBuilder& gate_up(GateUp g);
  SpecBuilder& transpose(bool t);
  SpecBuilder& mx_rounding(MxRounding r);
  SpecBuilder& fp8_saturation(Fp8Saturation s);
  SpecBuilder& four_over_six(FourOverSix f);
  SpecBuilder& e4m3_bound(int bound);
  SpecBuilder& nvfp4_global(GlobalScale g);
  // An epilogue program in kiln's epilogue language (docs/epilogue.md); build() stores its canonical
  // form and rejects text that does not parse in the spec's context. Empty: none.
  SpecBuilder& epilogue(std::string_view text);
  // Fills implied scales (mxfp8 -> block1x32/ue8m0, fp8 without scale -> tensor/f32, ...) and validates.
  StatusOr<KernelSpec> build() const;

 private:
  KernelSpec spec_;
  // Which operands were given: build() rejects a missing one rather than defaulting it to bf16.
  bool has_a_ = false, has_b_ = false, has_out_ = false;
};

}  // namespace kiln
