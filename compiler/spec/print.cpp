// Canonical text of a KernelSpec (print_spec). The form is a function of the value: fixed order
// (op, [experts,layout], a, b, out, then attributes in declaration order, the epilogue last), defaults omitted, and
// each operand in the shortest spelling the parser maps back to the same OperandSpec.
#include <string>

#include "compiler/spec/implied.hpp"
#include "compiler/spec/internal/rules.hpp"
#include "compiler/spec/names.hpp"
#include "compiler/spec/spec.hpp"

namespace kiln {

std::string spec_internal::operand_text(const OperandSpec& op) {
  // The parser fills an omitted granularity and an omitted scale type independently from the
  // format (implied.hpp), and accepts `format:scale_type`; so each part is written iff it differs
  // from what the format implies.
  std::string text = format_name(op.format);
  if (op.scale != implied_granularity(op.format)) {
    text += ':';
    text += scale_granularity_name(op.scale);
  }
  if (op.scale_type != implied_scale_type(op.format)) {
    text += ':';
    text += scale_type_name(op.scale_type);
  }
  return text;
}

std::string print_spec(const KernelSpec& s) {
  using spec_internal::operand_text;
  std::string text = op_name(s.op);
  if (s.op == Op::kGroupedGemm || s.experts != 0 || s.layout != GroupLayout::kDense) {
    text += "[experts=" + std::to_string(s.experts) + ",layout=" + group_layout_name(s.layout) + "]";
  }
  text += " a=" + operand_text(s.a);
  // quantize has no b; an invalid spec that carries one still shows it, so it cannot print as valid.
  if (s.op != Op::kQuantize || !(s.b == OperandSpec{})) text += " b=" + operand_text(s.b);
  text += " out=" + operand_text(s.out);
  const KernelSpec d;  // defaults
  if (s.pass != d.pass) text += std::string(" pass=") + pass_name(s.pass);
  if (s.gate_up != d.gate_up) text += std::string(" gate_up=") + gate_up_name(s.gate_up);
  if (s.transpose != d.transpose) text += " transpose=true";
  if (s.accumulate != d.accumulate) text += " accumulate=true";
  if (s.mx_rounding != d.mx_rounding) text += std::string(" mx_round=") + mx_rounding_name(s.mx_rounding);
  if (s.fp8_saturation != d.fp8_saturation)
    text += std::string(" fp8_sat=") + fp8_saturation_name(s.fp8_saturation);
  if (s.four_over_six != d.four_over_six)
    text += std::string(" four_over_six=") + four_over_six_name(s.four_over_six);
  if (s.e4m3_bound != d.e4m3_bound) text += " e4m3_bound=" + std::to_string(s.e4m3_bound);
  if (s.nvfp4_global != d.nvfp4_global)
    text += std::string(" nvfp4_global=") + global_scale_name(s.nvfp4_global);
  // The canonical epilogue has no '"' (the epilogue language has no such character), so quoting
  // needs no escapes.
  if (!s.epilogue.empty()) text += " epilogue=\"" + s.epilogue + "\"";
  return text;
}

}  // namespace kiln
