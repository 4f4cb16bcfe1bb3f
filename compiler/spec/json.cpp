// KernelSpec <-> JSON (spec_to_json, spec_from_json). The JSON form writes every field explicitly
// (implied scales filled in, defaults spelled out) so that tools need no knowledge of defaults;
// the reader accepts omitted attributes and scale fields (defaults / implied, like the DSL),
// rejects unknown fields, validates, and names the JSON path of whatever is wrong.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "compiler/epilogue/epilogue.hpp"
#include "compiler/spec/implied.hpp"
#include "compiler/spec/internal/rules.hpp"
#include "compiler/spec/names.hpp"
#include "compiler/spec/spec.hpp"

namespace kiln {
namespace {

using nlohmann::json;
using spec_internal::Role;
using std::string;

constexpr const char* kTopFields =
    "op, pass, layout, experts, a, b, out, gate_up, transpose, accumulate, mx_round, fp8_sat, four_over_six, "
    "e4m3_bound, nvfp4_global, epilogue, mode";

bool is_top_field(const string& k) {
  for (const char* f : {"op", "pass", "layout", "experts", "a", "b", "out", "gate_up", "transpose", "accumulate",
                        "mx_round", "fp8_sat", "four_over_six", "e4m3_bound", "nvfp4_global", "epilogue", "mode"}) {
    if (k == f) return true;
  }
  return false;
}

json operand_to_json(const OperandSpec& o) {
  return json{{"format", format_name(o.format)},
              {"scale", scale_granularity_name(o.scale)},
              {"scale_type", scale_type_name(o.scale_type)}};
}

// User strings echoed in messages: printable ASCII only, cut to a sane length.
string safe(const string& s) {
  string r;
  for (char c : s.substr(0, 40)) r += (c >= 0x20 && c < 0x7F) ? c : '?';
  if (s.size() > 40) r += "...";
  return r;
}

Status at(const string& path, const string& msg) { return InvalidArgument(path + ": " + msg); }

template <typename E, typename FromName>
Status read_enum(const json& obj, const char* field, const string& path, const char* noun,
                 const char* choices, FromName from_name, E& out) {
  const auto it = obj.find(field);
  if (it == obj.end()) return Status::Ok();  // default
  if (!it->is_string())
    return at(path, string("expected a string (one of ") + choices + "), got " + it->type_name());
  const string& s = it->template get_ref<const string&>();
  const auto e = from_name(s);
  if (!e) return at(path, string("unknown ") + noun + " '" + safe(s) + "'; expected one of " + choices);
  out = *e;
  return Status::Ok();
}

Status read_int(const json& obj, const char* field, const string& path, int& out) {
  const auto it = obj.find(field);
  if (it == obj.end()) return Status::Ok();
  if (it->is_number_unsigned()) {
    const auto v = it->get<uint64_t>();
    if (v > static_cast<uint64_t>(INT32_MAX)) return at(path, std::to_string(v) + " is out of range");
    out = static_cast<int>(v);
    return Status::Ok();
  }
  if (it->is_number_integer()) {
    const auto v = it->get<int64_t>();
    if (v < INT32_MIN || v > INT32_MAX) return at(path, std::to_string(v) + " is out of range");
    out = static_cast<int>(v);
    return Status::Ok();
  }
  return at(path, string("expected an integer, got ") + it->type_name());
}

Status read_operand(const json& j, const string& path, OperandSpec& out) {
  if (!j.is_object())
    return at(path,
              string("expected an object {\"format\": ..., \"scale\": ..., \"scale_type\": ...}, got ") +
                  j.type_name());
  for (const auto& item : j.items()) {
    const string& k = item.key();
    if (k != "format" && k != "scale" && k != "scale_type")
      return at(path + "." + safe(k), "unknown field; expected format, scale, scale_type");
  }
  if (!j.contains("format"))
    return at(path + ".format", string("missing; expected one of ") + format_names());
  KILN_RETURN_IF_ERROR(
      read_enum(j, "format", path + ".format", "format", format_names(), format_from_name, out.format));
  KILN_RETURN_IF_ERROR(read_enum(j, "scale", path + ".scale", "granularity",
                                 "none, tensor, m, n, block1x128, block128x128, block1x32, block1x16",
                                 scale_granularity_from_name, out.scale));
  KILN_RETURN_IF_ERROR(read_enum(j, "scale_type", path + ".scale_type", "scale type",
                                 "none, f32, ue8m0, ue4m3", scale_type_from_name, out.scale_type));
  // Omitted scale fields are implied by the format; an explicit "none" is taken literally (and
  // rejected by validation where the format needs a scale), so from_json(to_json(s)) == s exactly.
  if (!j.contains("scale")) out.scale = implied_granularity(out.format);
  if (!j.contains("scale_type")) out.scale_type = implied_scale_type(out.format);
  return Status::Ok();
}

StatusOr<KernelSpec> finish(const KernelSpec& s, const json& j);

StatusOr<KernelSpec> from_json_impl(const json& j) {
  if (!j.is_object()) return at("$", string("expected a JSON object, got ") + j.type_name());
  for (const auto& item : j.items()) {
    const string& k = item.key();
    if (!is_top_field(k)) return at("$." + safe(k), string("unknown field; expected one of ") + kTopFields);
  }
  KernelSpec s;
  if (!j.contains("op")) return at("$.op", string("missing; expected one of ") + op_names());
  KILN_RETURN_IF_ERROR(read_enum(j, "op", "$.op", "op", op_names(), op_from_name, s.op));
  KILN_RETURN_IF_ERROR(read_enum(j, "pass", "$.pass", "pass", pass_names(), pass_from_name, s.pass));
  KILN_RETURN_IF_ERROR(read_enum(j, "layout", "$.layout", "layout", "dense, offsets, masked",
                                 group_layout_from_name, s.layout));
  KILN_RETURN_IF_ERROR(read_int(j, "experts", "$.experts", s.experts));
  const bool has_b_role = s.op != Op::kQuantize;
  if (!has_b_role && j.contains("b"))
    return at("$.b", "quantize takes no operand b; it reads a and writes out");
  for (Role r : {Role::kA, Role::kB, Role::kOut}) {
    if (r == Role::kB && !has_b_role) continue;
    const char* key = spec_internal::role_key(r);
    const string path = string("$.") + key;
    const auto it = j.find(key);
    if (it == j.end())
      return at(path, string("missing; ") + op_name(s.op) + " needs " +
                          (has_b_role ? "a, b and out" : "a and out"));
    OperandSpec& o = r == Role::kA ? s.a : r == Role::kB ? s.b : s.out;
    KILN_RETURN_IF_ERROR(read_operand(*it, path, o));
  }
  KILN_RETURN_IF_ERROR(
      read_enum(j, "gate_up", "$.gate_up", "gate_up value", gate_up_names(), gate_up_from_name, s.gate_up));
  if (const auto it = j.find("transpose"); it != j.end()) {
    if (!it->is_boolean()) return at("$.transpose", string("expected true or false, got ") + it->type_name());
    s.transpose = it->get<bool>();
  }
  if (const auto it = j.find("accumulate"); it != j.end()) {
    if (!it->is_boolean()) return at("$.accumulate", string("expected true or false, got ") + it->type_name());
    s.accumulate = it->get<bool>();
  }
  KILN_RETURN_IF_ERROR(read_enum(j, "mx_round", "$.mx_round", "mx_round value", mx_rounding_names(),
                                 mx_rounding_from_name, s.mx_rounding));
  KILN_RETURN_IF_ERROR(read_enum(j, "fp8_sat", "$.fp8_sat", "fp8_sat value", fp8_saturation_names(),
                                 fp8_saturation_from_name, s.fp8_saturation));
  KILN_RETURN_IF_ERROR(read_enum(j, "four_over_six", "$.four_over_six", "four_over_six value",
                                 four_over_six_names(), four_over_six_from_name, s.four_over_six));
  KILN_RETURN_IF_ERROR(read_int(j, "e4m3_bound", "$.e4m3_bound", s.e4m3_bound));
  KILN_RETURN_IF_ERROR(read_enum(j, "nvfp4_global", "$.nvfp4_global", "nvfp4_global value",
                                 global_scale_names(), global_scale_from_name, s.nvfp4_global));
  // The epilogue: a string in the epilogue language ("" or null: none), stored in canonical form.
  if (const auto it = j.find("epilogue"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return at("$.epilogue", string("expected a string (an epilogue program), got ") + it->type_name());
    const string& text = it->get_ref<const string&>();
    if (text.empty()) return finish(s, j);
    StatusOr<Epilogue> ep = parse_epilogue(text, EpilogueContext::of(s));
    s.epilogue = ep.ok() ? print_epilogue(*ep) : text;  // a parse error is reported below, positioned
  }
  return finish(s, j);
}

// Validation with JSON paths; epilogue errors keep their place in the epilogue text. A stated "mode" is
// checked against the one the formats imply (it is not a KernelSpec field).
StatusOr<KernelSpec> finish(const KernelSpec& s, const json& j) {
  if (auto v = spec_internal::find_violation(s)) {
    if (v->inner_line > 0)
      return at(spec_internal::json_path(v->where), std::to_string(v->inner_line) + ":" +
                                                        std::to_string(v->inner_col) + ": " +
                                                        v->message.substr(string("epilogue: ").size()));
    return at(spec_internal::json_path(v->where), v->message);
  }
  BackwardMode stated{};
  KILN_RETURN_IF_ERROR(
      read_enum(j, "mode", "$.mode", "mode", backward_mode_names(), backward_mode_from_name, stated));
  if (j.contains("mode")) {
    if (auto msg = spec_internal::mode_mismatch(s, stated)) return at("$.mode", *msg);
  }
  return s;
}

}  // namespace

json spec_to_json(const KernelSpec& s) {
  json j;
  j["op"] = op_name(s.op);
  j["pass"] = pass_name(s.pass);
  j["layout"] = group_layout_name(s.layout);
  j["experts"] = s.experts;
  j["a"] = operand_to_json(s.a);
  if (s.op != Op::kQuantize || !(s.b == OperandSpec{})) j["b"] = operand_to_json(s.b);
  j["out"] = operand_to_json(s.out);
  j["gate_up"] = gate_up_name(s.gate_up);
  j["transpose"] = s.transpose;
  j["accumulate"] = s.accumulate;
  j["mx_round"] = mx_rounding_name(s.mx_rounding);
  j["fp8_sat"] = fp8_saturation_name(s.fp8_saturation);
  j["four_over_six"] = four_over_six_name(s.four_over_six);
  j["e4m3_bound"] = s.e4m3_bound;
  j["nvfp4_global"] = global_scale_name(s.nvfp4_global);
  j["epilogue"] = s.epilogue;  // "" for none
  // Backward specs: the mode their formats imply (informative; a reader checks it).
  if (StatusOr<BackwardMode> m = backward_mode(s); m.ok()) j["mode"] = backward_mode_name(*m);
  return j;
}

StatusOr<KernelSpec> spec_from_json(const json& j) {
  // nlohmann reports misuse by exceptions; every access above is type-checked first, and this
  // guard keeps any that remain (allocation failure) from crossing the module boundary.
  try {
    return from_json_impl(j);
  } catch (const std::exception& e) {
    return Internal(string("spec_from_json: ") + e.what());
  }
}

}  // namespace kiln
