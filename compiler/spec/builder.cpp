// SpecBuilder (spec.hpp): the C++ front end of the spec model. It records what the caller set,
// and build() applies the same completion and rules as the DSL: required operands per op, implied
// scales, validate_spec.
#include "compiler/epilogue/epilogue.hpp"
#include "compiler/spec/implied.hpp"
#include "compiler/spec/internal/rules.hpp"
#include "compiler/spec/spec.hpp"

namespace kiln {

SpecBuilder& SpecBuilder::op(Op op) {
  spec_.op = op;
  return *this;
}

SpecBuilder& SpecBuilder::grouped(int experts, GroupLayout layout) {
  if (spec_.op != Op::kQuantize) spec_.op = Op::kGroupedGemm;  // quantize stays quantize (its grouped form)
  spec_.experts = experts;
  spec_.layout = layout;
  return *this;
}

SpecBuilder& SpecBuilder::pass(Pass p) {
  spec_.pass = p;
  return *this;
}

SpecBuilder& SpecBuilder::a(Format f, ScaleGranularity g, ScaleType t) {
  spec_.a = OperandSpec{f, g, t};
  has_a_ = true;
  return *this;
}

SpecBuilder& SpecBuilder::b(Format f, ScaleGranularity g, ScaleType t) {
  spec_.b = OperandSpec{f, g, t};
  has_b_ = true;
  return *this;
}

SpecBuilder& SpecBuilder::out(Format f, ScaleGranularity g, ScaleType t) {
  spec_.out = OperandSpec{f, g, t};
  has_out_ = true;
  return *this;
}

SpecBuilder& SpecBuilder::gate_up(GateUp g) {
  spec_.gate_up = g;
  return *this;
}

SpecBuilder& SpecBuilder::transpose(bool t) {
  spec_.transpose = t;
  return *this;
}

SpecBuilder& SpecBuilder::accumulate(bool on) {
  spec_.accumulate = on;
  return *this;
}

SpecBuilder& SpecBuilder::mx_rounding(MxRounding r) {
  spec_.mx_rounding = r;
  return *this;
}

SpecBuilder& SpecBuilder::fp8_saturation(Fp8Saturation s) {
  spec_.fp8_saturation = s;
  return *this;
}

SpecBuilder& SpecBuilder::four_over_six(FourOverSix f) {
  spec_.four_over_six = f;
  return *this;
}

SpecBuilder& SpecBuilder::e4m3_bound(int bound) {
  spec_.e4m3_bound = bound;
  return *this;
}

SpecBuilder& SpecBuilder::nvfp4_global(GlobalScale g) {
  spec_.nvfp4_global = g;
  return *this;
}

SpecBuilder& SpecBuilder::mode(BackwardMode m) {
  mode_ = m;
  return *this;
}

SpecBuilder& SpecBuilder::epilogue(std::string_view text) {
  spec_.epilogue = std::string(text);
  return *this;
}

StatusOr<KernelSpec> SpecBuilder::build() const {
  const bool has_b_role = spec_.op != Op::kQuantize;
  const std::string op = op_name(spec_.op);
  const std::string need = has_b_role ? "a(), b() and out()" : "a() and out()";
  if (!has_a_) return InvalidArgument("SpecBuilder: operand a is not set; " + op + " needs " + need);
  if (has_b_role && !has_b_)
    return InvalidArgument("SpecBuilder: operand b is not set; " + op + " needs " + need);
  if (!has_b_role && has_b_)
    return InvalidArgument("SpecBuilder: quantize takes no operand b; it reads a and writes out");
  if (!has_out_) return InvalidArgument("SpecBuilder: operand out is not set; " + op + " needs " + need);
  KernelSpec s = spec_;
  s.a = with_implied_scales(s.a);
  if (has_b_role) s.b = with_implied_scales(s.b);
  s.out = with_implied_scales(s.out);
  if (!s.epilogue.empty()) {
    // Canonical form, in the context of the finished spec; a parse error is reported by validate_spec
    // ("epilogue: 1:7: unknown name ...").
    StatusOr<Epilogue> ep = parse_epilogue(s.epilogue, EpilogueContext::of(s));
    if (ep.ok()) s.epilogue = print_epilogue(*ep);
  }
  KILN_RETURN_IF_ERROR(validate_spec(s));
  if (mode_) {
    if (auto msg = spec_internal::mode_mismatch(s, *mode_)) return InvalidArgument("SpecBuilder: " + *msg);
  }
  return s;
}

}  // namespace kiln
