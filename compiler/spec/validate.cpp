// Structural validation of KernelSpec: format x granularity x scale type x operand role x op, and
// which attributes apply to which specs. Size rules live in sizes.cpp.
//
// Why attributes that do not apply are errors rather than ignored: the canonical text and the
// cache key are functions of the value, so two specs that would run the same kernel must not
// differ in a field the kernel ignores. Writing an attribute's *default* is always allowed.
#include <string>

#include "compiler/epilogue/epilogue.hpp"
#include "compiler/spec/implied.hpp"
#include "compiler/spec/internal/rules.hpp"
#include "compiler/spec/names.hpp"
#include "compiler/spec/spec.hpp"

namespace kiln {
namespace spec_internal {
namespace {

using std::string;

FieldRef at(Field f) { return FieldRef{f, Role::kA, Part::kWhole}; }
FieldRef at(Role r, Part p) { return FieldRef{Field::kOperand, r, p}; }

string kv(Role r, const OperandSpec& o) { return string(role_key(r)) + "=" + operand_text(o); }

// FP8 granularities accepted per role. `out` is the next layer's activation (X-like); a quantize
// output may also use 128x128 blocks (offline weight quantization). In wgrad both operands are
// activations re-quantized along the reduction (tokens) dimension, so b takes 1x128 blocks too
// (docs/numerics.md §7: dY and X both in 1-D blocks along tokens).
bool fp8_granularity_ok(const KernelSpec& s, Role r, ScaleGranularity g) {
  switch (g) {
    case ScaleGranularity::kTensor:
      return true;
    case ScaleGranularity::kM:  // wgrad's b is X, scaled per token like the forward's a
      return r != Role::kB || s.pass == Pass::kWgrad;
    case ScaleGranularity::kBlock1x128:
      return r != Role::kB || s.pass == Pass::kWgrad;
    case ScaleGranularity::kN:
      return r == Role::kB;
    case ScaleGranularity::kBlock128x128:
      return r == Role::kB || (r == Role::kOut && s.op == Op::kQuantize);
    default:
      return false;
  }
}

const char* fp8_granularity_list(const KernelSpec& s, Role r) {
  if (r == Role::kB)
    return s.pass == Pass::kWgrad ? "tensor, m, n, block1x128, block128x128" : "tensor, n, block128x128";
  if (r == Role::kOut && s.op == Op::kQuantize) return "tensor, m, block1x128, block128x128";
  return "tensor, m, block1x128";
}

const char* granularity_meaning(ScaleGranularity g) {
  switch (g) {
    case ScaleGranularity::kTensor:
      return "one scale for the whole operand";
    case ScaleGranularity::kM:
      return "one scale per row of X, i.e. per token";
    case ScaleGranularity::kN:
      return "one scale per row of W, i.e. per output channel";
    case ScaleGranularity::kBlock1x128:
      return "1 row x 128 K blocks of X";
    case ScaleGranularity::kBlock128x128:
      return "128 N x 128 K blocks of W";
    case ScaleGranularity::kBlock1x32:
      return "the MX block of 32 along K";
    case ScaleGranularity::kBlock1x16:
      return "the NVFP4 block of 16 along K";
    case ScaleGranularity::kNone:
      return "unscaled";
  }
  return "?";
}

bool is_block(ScaleGranularity g) {
  return g == ScaleGranularity::kBlock1x128 || g == ScaleGranularity::kBlock128x128;
}

std::optional<Violation> check_operand(const KernelSpec& s, Role r, const OperandSpec& o) {
  const string key = role_key(r);
  const string fmt = format_name(o.format);
  const string g = scale_granularity_name(o.scale);
  const string t = scale_type_name(o.scale_type);
  const string head = kv(r, o) + ": ";
  if (format_is_high_precision(o.format)) {
    if (o.scale != ScaleGranularity::kNone)
      return Violation{at(r, Part::kScale), head + fmt +
                                                " is unscaled and takes no scale granularity (got '" + g +
                                                "'); write " + key + "=" + fmt};
    if (o.scale_type != ScaleType::kNone)
      return Violation{at(r, Part::kScaleType), head + fmt + " is unscaled and takes no scale type (got '" +
                                                    t + "'); write " + key + "=" + fmt};
    return std::nullopt;
  }
  if (format_is_fp8(o.format)) {
    const string list = fp8_granularity_list(s, r);
    if (o.scale == ScaleGranularity::kNone)
      return Violation{at(r, Part::kScale),
                       head + fmt + " needs a scale granularity; operand " + key + " accepts " + list};
    if (!fp8_granularity_ok(s, r, o.scale)) {
      string why;
      if (o.scale == ScaleGranularity::kBlock1x32)
        why = " is intrinsic to mxfp8/mxfp4 and not an FP8 option";
      else if (o.scale == ScaleGranularity::kBlock1x16)
        why = " is intrinsic to nvfp4 and not an FP8 option";
      else
        why = string(" (") + granularity_meaning(o.scale) + ") is not accepted on operand " + key;
      return Violation{at(r, Part::kScale),
                       head + "granularity '" + g + "'" + why + "; operand " + key + " accepts " + list};
    }
    if (o.scale_type == ScaleType::kNone)
      return Violation{at(r, Part::kScaleType),
                       head + fmt + " needs a scale type; write f32 (or ue8m0 with a block granularity)"};
    if (o.scale_type == ScaleType::kUe8m0 && !is_block(o.scale))
      return Violation{at(r, Part::kScaleType),
                       head +
                           "scale type 'ue8m0' needs a block granularity (block1x128 or block128x128), "
                           "got '" +
                           g + "'; use f32 scales with '" + g + "'"};
    if (o.scale_type == ScaleType::kUe4m3)
      return Violation{at(r, Part::kScaleType), head + "scale type 'ue4m3' is only for nvfp4 block scales; " +
                                                    fmt +
                                                    " accepts f32, or ue8m0 with block1x128/block128x128"};
    return std::nullopt;
  }
  // MX and NVFP4: the granularity and scale type are part of the format.
  const ScaleGranularity want_g = implied_granularity(o.format);
  const ScaleType want_t = implied_scale_type(o.format);
  if (o.scale != want_g)
    return Violation{at(r, Part::kScale), head + fmt + " has intrinsic " + scale_granularity_name(want_g) +
                                              " scaling and accepts no other granularity (got '" + g +
                                              "'); write " + key + "=" + fmt};
  if (o.scale_type != want_t)
    return Violation{at(r, Part::kScaleType), head + fmt + " scales are " + scale_type_name(want_t) +
                                                  " only (got '" + t + "'); write " + key + "=" + fmt};
  return std::nullopt;
}

bool uses_b(const KernelSpec& s) { return s.op != Op::kQuantize; }

template <typename Pred>
bool any_operand(const KernelSpec& s, Pred pred) {
  return pred(s.a) || (uses_b(s) && pred(s.b)) || pred(s.out);
}

bool involves_nvfp4(const KernelSpec& s) {
  return any_operand(s, [](const OperandSpec& o) { return o.format == Format::kNvfp4; });
}

// "3:14: rest" -> (3, 14, "rest"); messages of parse_epilogue always start so.
bool split_position(const string& msg, int& line, int& col, string& rest) {
  size_t i = 0;
  auto number = [&](int& out) {
    const size_t start = i;
    long v = 0;
    while (i < msg.size() && msg[i] >= '0' && msg[i] <= '9' && i - start < 9) v = v * 10 + (msg[i++] - '0');
    out = static_cast<int>(v);
    return i > start;
  };
  if (!number(line) || i >= msg.size() || msg[i] != ':') return false;
  ++i;
  if (!number(col) || i + 1 >= msg.size() || msg[i] != ':' || msg[i + 1] != ' ') return false;
  rest = msg.substr(i + 2);
  return true;
}

// The epilogue attribute: gemm / grouped_gemm only, valid in the spec's context (gate_up gives
// gate/up instead of acc; grouped_gemm gives the per-expert vectors), and in canonical form (every
// front end canonicalizes; a KernelSpec built by hand must too, or parse(print(s)) != s).
std::optional<Violation> check_epilogue(const KernelSpec& s, std::optional<Epilogue>* parsed) {
  if (s.epilogue.empty()) return std::nullopt;
  if (s.op == Op::kQuantize)
    return Violation{at(Field::kEpilogue), "epilogue applies to gemm and grouped_gemm, not quantize"};
  StatusOr<Epilogue> ep = parse_epilogue(s.epilogue, EpilogueContext::of(s));
  if (!ep.ok()) {
    Violation v{at(Field::kEpilogue), "epilogue: " + ep.status().message()};
    string rest;
    if (split_position(ep.status().message(), v.inner_line, v.inner_col, rest)) v.message = "epilogue: " + rest;
    return v;
  }
  const string canonical = print_epilogue(*ep);
  if (canonical != s.epilogue)
    return Violation{at(Field::kEpilogue),
                     "epilogue text is not in canonical form; expected \"" + canonical +
                         "\" (print_epilogue; the text, JSON and builder front ends canonicalize)"};
  if (parsed != nullptr) *parsed = std::move(*ep);
  return std::nullopt;
}

}  // namespace

std::optional<Violation> find_violation(const KernelSpec& s, std::optional<Epilogue>* epilogue) {
  if (epilogue != nullptr) epilogue->reset();
  const string op = op_name(s.op);
  // ---- op structure ----
  if (s.op != Op::kGemm && s.op != Op::kGroupedGemm && s.op != Op::kQuantize)
    return Violation{at(Field::kOp), string("unknown op; expected one of ") + op_names()};
  // A grouped quantize (quantize[experts=E,layout=...] ... transpose=true) writes the padded column-wise
  // copies a grouped quantized wgrad reads: each expert's rows quantized along M on their own.
  const bool grouped_quantize = s.op == Op::kQuantize && (s.experts != 0 || s.layout != GroupLayout::kDense);
  if (s.op == Op::kGroupedGemm || grouped_quantize) {
    if (s.experts < 1 || s.experts > kMaxExperts)
      return Violation{at(Field::kExperts), "experts=" + std::to_string(s.experts) + " is out of range; " + op +
                                                " accepts 1.." + std::to_string(kMaxExperts) + " experts"};
    if (s.layout != GroupLayout::kOffsets && s.layout != GroupLayout::kMasked)
      return Violation{at(Field::kLayout), string("layout=") + group_layout_name(s.layout) +
                                               " is not a grouped layout; " + op +
                                               " accepts layout=offsets or layout=masked"};
    if (grouped_quantize && !s.transpose)
      return Violation{at(Field::kExperts),
                       "quantize[experts=" + std::to_string(s.experts) +
                           ",...] writes the per-expert column-wise copies a grouped wgrad reads: it needs "
                           "transpose=true (a row-wise quantize of grouped rows is the plain quantize of all rows)"};
  } else {
    if (s.experts != 0)
      return Violation{at(Field::kExperts), "experts=" + std::to_string(s.experts) +
                                                " is only accepted on grouped_gemm (and quantize[...] "
                                                "transpose=true), not on " + op};
    if (s.layout != GroupLayout::kDense)
      return Violation{at(Field::kLayout), string("layout=") + group_layout_name(s.layout) +
                                               " is only accepted on grouped_gemm (and quantize[...] "
                                               "transpose=true), not on " + op};
  }

  // ---- operand roles per op ----
  if (s.op == Op::kQuantize) {
    if (!format_is_high_precision(s.a.format))
      return Violation{at(Role::kA, Part::kFormat),
                       kv(Role::kA, s.a) +
                           ": quantize reads a high-precision input; operand a accepts "
                           "bf16, f16, f32"};
    if (format_is_high_precision(s.out.format))
      return Violation{at(Role::kOut, Part::kFormat),
                       kv(Role::kOut, s.out) +
                           ": quantize writes a quantized output; out accepts e4m3, "
                           "e5m2, mxfp8, mxfp4, nvfp4"};
    if (!(s.b == OperandSpec{}))
      return Violation{at(Role::kB, Part::kWhole),
                       kv(Role::kB, s.b) + ": quantize takes no operand b; it reads a and writes out"};
  }
  for (Role r : {Role::kA, Role::kB, Role::kOut}) {
    if (r == Role::kB && !uses_b(s)) continue;
    if (auto v = check_operand(s, r, operand_of(s, r))) return v;
  }

  // ---- attributes ----
  if (s.pass != Pass::kFprop && s.op == Op::kQuantize)
    return Violation{at(Field::kPass), string("pass=") + pass_name(s.pass) +
                                           " applies to gemm and grouped_gemm, not quantize (for the "
                                           "128x1 wgrad form use transpose=true)"};
  if (s.pass != Pass::kFprop && !format_is_high_precision(s.a.format) && format_is_high_precision(s.b.format))
    return Violation{at(Field::kPass), string("pass=") + pass_name(s.pass) + " with a quantized a (" +
                                           kv(Role::kA, s.a) + ") and a high-precision b (" + kv(Role::kB, s.b) +
                                           "): no backward mode computes that; high_precision takes two "
                                           "bf16/f16 operands, dequantized a bf16/f16 dY with a quantized b, "
                                           "quantized two quantized operands"};
  if (s.gate_up != GateUp::kNone && s.op == Op::kQuantize)
    return Violation{at(Field::kGateUp), string("gate_up=") + gate_up_name(s.gate_up) +
                                             " applies to gemm and grouped_gemm, not quantize"};
  if (auto v = check_epilogue(s, epilogue)) return v;
  if (s.transpose && s.op != Op::kQuantize)
    return Violation{at(Field::kTranspose), "transpose=true applies to quantize only, not " + op +
                                                "; omit it or write transpose=false"};
  if (s.accumulate && (s.op == Op::kQuantize || s.pass == Pass::kFprop))
    return Violation{at(Field::kAccumulate),
                     "accumulate=true applies to pass=dgrad and pass=wgrad (out += the product), not " +
                         (s.op == Op::kQuantize ? op : string("pass=fprop")) +
                         (s.op == Op::kQuantize ? string("; omit it") : "; a forward adds to its output through an "
                                                                         "epilogue with a residual operand")};
  if (s.mx_rounding != MxRounding::kRceil &&
      !any_operand(s, [](const OperandSpec& o) { return o.scale_type == ScaleType::kUe8m0; }))
    return Violation{at(Field::kMxRound), string("mx_round=") + mx_rounding_name(s.mx_rounding) +
                                              " only applies when an operand has E8M0 scales (mxfp8, mxfp4, "
                                              "or FP8 blocks with ue8m0); this spec has none"};
  if (s.fp8_saturation != Fp8Saturation::kSatfinite && !any_operand(s, [](const OperandSpec& o) {
        return format_is_fp8(o.format) || o.format == Format::kMxfp8 || o.format == Format::kNvfp4;
      }))
    return Violation{at(Field::kFp8Sat), string("fp8_sat=") + fp8_saturation_name(s.fp8_saturation) +
                                             " only applies when FP8 values are involved (e4m3, e5m2, "
                                             "mxfp8, or nvfp4's e4m3 scales); this spec has none"};
  if (s.four_over_six != FourOverSix::kOff && !involves_nvfp4(s))
    return Violation{at(Field::kFourOverSix), string("four_over_six=") + four_over_six_name(s.four_over_six) +
                                                  " only applies when an operand is nvfp4; this spec has "
                                                  "none"};
  if (s.e4m3_bound != 448 && s.e4m3_bound != 256)
    return Violation{at(Field::kE4m3Bound), "e4m3_bound=" + std::to_string(s.e4m3_bound) +
                                                " is not accepted; use 448 (the default) or 256"};
  if (s.e4m3_bound != 448 && !involves_nvfp4(s))
    return Violation{at(Field::kE4m3Bound), "e4m3_bound=" + std::to_string(s.e4m3_bound) +
                                                " only applies when an operand is nvfp4; this spec has none"};
  if (s.nvfp4_global != GlobalScale::kTensor) {
    const string head = string("nvfp4_global=") + global_scale_name(s.nvfp4_global);
    if (!involves_nvfp4(s))
      return Violation{at(Field::kNvfp4Global),
                       head + " only applies when an operand is nvfp4; this spec has none"};
    if (s.op != Op::kGroupedGemm)
      return Violation{at(Field::kNvfp4Global),
                       head + " (one global scale per expert) needs grouped_gemm, not " + op +
                           "; use nvfp4_global=tensor"};
  }
  return std::nullopt;
}

std::optional<std::string> mode_mismatch(const KernelSpec& s, BackwardMode stated) {
  StatusOr<BackwardMode> implied = backward_mode(s);
  if (!implied.ok())
    return string("mode=") + backward_mode_name(stated) + " applies to pass=dgrad and pass=wgrad specs, not " +
           (s.op == Op::kQuantize ? string("quantize") : string("pass=") + pass_name(s.pass));
  if (*implied == stated) return std::nullopt;
  return string("mode=") + backward_mode_name(stated) + " does not match the operands a=" + operand_text(s.a) +
         " b=" + operand_text(s.b) + ", which compute in mode " + backward_mode_name(*implied) +
         " (high_precision: two bf16/f16 operands; dequantized: a bf16/f16 a with a quantized b; quantized: two "
         "quantized operands)";
}

const char* role_key(Role r) {
  switch (r) {
    case Role::kA:
      return "a";
    case Role::kB:
      return "b";
    case Role::kOut:
      return "out";
  }
  return "?";
}

const OperandSpec& operand_of(const KernelSpec& s, Role r) {
  return r == Role::kA ? s.a : r == Role::kB ? s.b : s.out;
}

std::string json_path(const FieldRef& w) {
  switch (w.field) {
    case Field::kOp:
      return "$.op";
    case Field::kExperts:
      return "$.experts";
    case Field::kLayout:
      return "$.layout";
    case Field::kPass:
      return "$.pass";
    case Field::kGateUp:
      return "$.gate_up";
    case Field::kTranspose:
      return "$.transpose";
    case Field::kAccumulate:
      return "$.accumulate";
    case Field::kMxRound:
      return "$.mx_round";
    case Field::kFp8Sat:
      return "$.fp8_sat";
    case Field::kFourOverSix:
      return "$.four_over_six";
    case Field::kE4m3Bound:
      return "$.e4m3_bound";
    case Field::kNvfp4Global:
      return "$.nvfp4_global";
    case Field::kEpilogue:
      return "$.epilogue";
    case Field::kMode:
      return "$.mode";
    case Field::kOperand:
      break;
  }
  string path = string("$.") + role_key(w.role);
  switch (w.part) {
    case Part::kWhole:
      break;
    case Part::kFormat:
      path += ".format";
      break;
    case Part::kScale:
      path += ".scale";
      break;
    case Part::kScaleType:
      path += ".scale_type";
      break;
  }
  return path;
}

}  // namespace spec_internal

StatusOr<BackwardMode> backward_mode(const KernelSpec& s) {
  if (s.op == Op::kQuantize || s.pass == Pass::kFprop)
    return InvalidArgument(std::string("backward_mode: ") + (s.op == Op::kQuantize ? "quantize" : "an fprop") +
                           " spec has no backward mode (only pass=dgrad and pass=wgrad do)");
  const bool a_hp = format_is_high_precision(s.a.format), b_hp = format_is_high_precision(s.b.format);
  if (a_hp && b_hp) return BackwardMode::kHighPrecision;
  if (a_hp) return BackwardMode::kDequantized;
  if (!b_hp) return BackwardMode::kQuantized;
  return InvalidArgument(std::string("backward_mode: pass=") + pass_name(s.pass) +
                         " with a quantized a and a high-precision b: no backward mode computes that");
}

Status validate_spec(const KernelSpec& spec) {
  std::optional<Epilogue> unused;
  return validate_spec(spec, unused);
}

Status validate_spec(const KernelSpec& spec, std::optional<Epilogue>& epilogue) {
  if (auto v = spec_internal::find_violation(spec, &epilogue)) {
    // An epilogue error keeps its place in the epilogue text: "epilogue: 1:7: unknown name ...".
    if (v->inner_line > 0)
      return InvalidArgument("epilogue: " + std::to_string(v->inner_line) + ":" + std::to_string(v->inner_col) +
                             ": " + v->message.substr(std::string("epilogue: ").size()));
    return InvalidArgument(std::move(v->message));
  }
  return Status::Ok();
}

}  // namespace kiln
