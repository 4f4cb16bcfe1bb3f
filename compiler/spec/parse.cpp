// The DSL text form -> KernelSpec (parse_spec). Grammar (docs/dsl.md):
//
//   spec    := op [ '[' prop (',' prop)* ']' ] kv*
//   prop    := 'experts' '=' INT | 'layout' '=' ('offsets' | 'masked')      -- grouped_gemm; quantize
//                                                                            (transpose=true: grouped copies)
//   kv      := key '=' value
//   operand := format [ ':' granularity ] [ ':' scale_type ]
//   epilogue=STRING -- "..." in kiln's closed epilogue language (compiler/epilogue, docs/epilogue.md)
//
// One pass over a one-token lookahead lexer, no recursion, so hostile input (deep brackets, long
// text) costs linear time and constant stack. Every error is "line:col: what; expected what".
// After the syntax, implied scales are filled and the structural rules of validate.cpp run; their
// violations are reported at the token of the field they name. The epilogue string is parsed last,
// in the context the whole spec gives it (gate_up, grouped_gemm), and stored in canonical form;
// its errors are positioned inside the string ("1:52: epilogue: unknown name 'gat'; ...").
#include <array>
#include <optional>
#include <string>

#include "compiler/epilogue/epilogue.hpp"
#include "compiler/spec/implied.hpp"
#include "compiler/spec/internal/lexer.hpp"
#include "compiler/spec/internal/rules.hpp"
#include "compiler/spec/names.hpp"
#include "compiler/spec/spec.hpp"

namespace kiln {
namespace spec_internal {
namespace {

using std::string;

constexpr size_t kMaxSpecBytes = 64 * 1024;

enum class Key : uint8_t {
  kA,
  kB,
  kOut,
  kPass,
  kGateUp,
  kTranspose,
  kAccumulate,
  kMxRound,
  kFp8Sat,
  kFourOverSix,
  kE4m3Bound,
  kNvfp4Global,
  kEpilogue,
  kMode,
  kCount,
};
constexpr std::array<const char*, static_cast<size_t>(Key::kCount)> kKeyNames = {
    "a",        "b",       "out",           "pass",       "gate_up",      "transpose", "accumulate",
    "mx_round", "fp8_sat", "four_over_six", "e4m3_bound", "nvfp4_global", "epilogue",  "mode"};
constexpr const char* kKeyList =
    "a, b, out, pass, gate_up, transpose, accumulate, mx_round, fp8_sat, four_over_six, e4m3_bound, "
    "nvfp4_global, epilogue, mode";

std::optional<Key> key_from_name(std::string_view name) {
  for (size_t i = 0; i < kKeyNames.size(); ++i) {
    if (name == kKeyNames[i]) return static_cast<Key>(i);
  }
  return std::nullopt;
}

// Where each field was written, for positioning validation errors.
struct OperandPos {
  std::optional<Pos> key, format, scale, scale_type;
};
struct Positions {
  Pos op;
  std::optional<Pos> experts, layout;                                    // values
  std::optional<Pos> experts_key, layout_key;                            // property names
  std::array<OperandPos, 3> operand;                                     // a, b, out
  std::array<std::optional<Pos>, static_cast<size_t>(Key::kCount)> key;  // key token
  std::array<std::optional<Pos>, static_cast<size_t>(Key::kCount)> value;
};

// Integer word: optional '-' then digits. Values beyond +-10^12 are reported as `big` so that
// 10^400 cannot overflow anything.
struct IntWord {
  bool ok = false;
  bool big = false;
  long long value = 0;
};
IntWord parse_int(std::string_view w) {
  IntWord r;
  size_t i = 0;
  bool neg = false;
  if (i < w.size() && w[i] == '-') {
    neg = true;
    ++i;
  }
  if (i == w.size()) return r;
  long long v = 0;
  for (; i < w.size(); ++i) {
    if (w[i] < '0' || w[i] > '9') return r;
    if (v > 1000000000000LL) {
      r.big = true;
    } else {
      v = v * 10 + (w[i] - '0');
    }
  }
  r.ok = true;
  r.value = neg ? -v : v;
  return r;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : lex_(text) {}
  StatusOr<KernelSpec> run();

 private:
  Status error(Pos p, const string& msg) const { return InvalidArgument(pos_prefix(p) + msg); }
  Status unexpected(const Token& t, const string& expected) const {
    if (t.kind == Tok::kError) return error(t.pos, t.error);
    return error(t.pos, "expected " + expected + ", got " + describe(t));
  }
  Status parse_props();
  Status parse_kv(const Token& key_tok, Key key);
  Status parse_operand(Role role, OperandSpec& out);
  StatusOr<Token> expect_word(const string& expected);
  Status positioned(const Violation& v) const;

  Lexer lex_;
  KernelSpec spec_;
  Positions pos_;
  std::string_view epilogue_text_;  // as written (canonicalized once the whole spec is known)
  std::optional<BackwardMode> mode_;  // a stated mode= (checked against the formats at the end)
};

// Where (line, col) of a string's contents is in the spec: the contents start one byte after the
// opening quote at `quote`; line 1 continues the quote's line, later lines start at column 1.
Pos inner_pos(Pos quote, int line, int col) {
  if (line <= 1) return Pos{quote.line, quote.col + col};
  return Pos{quote.line + line - 1, col};
}

StatusOr<Token> Parser::expect_word(const string& expected) {
  Token t = lex_.take();
  if (t.kind != Tok::kWord) return unexpected(t, expected);
  return t;
}

StatusOr<KernelSpec> Parser::run() {
  Token t = lex_.take();
  if (t.kind == Tok::kEnd) return error(t.pos, string("empty spec; expected an operation: ") + op_names());
  if (t.kind != Tok::kWord) return unexpected(t, string("an operation (") + op_names() + ")");
  const auto op = op_from_name(t.text);
  if (!op) return error(t.pos, "unknown operation '" + echo(t.text) + "'; expected one of " + op_names());
  spec_.op = *op;
  pos_.op = t.pos;

  if (lex_.peek().kind == Tok::kLBracket) {
    if (spec_.op != Op::kGroupedGemm && spec_.op != Op::kQuantize)
      return error(lex_.peek().pos, "'" + string(op_name(spec_.op)) +
                                        "' takes no [properties]; grouped_gemm has "
                                        "[experts=E,layout=offsets|masked] (and quantize, for its grouped "
                                        "transposed form)");
    KILN_RETURN_IF_ERROR(parse_props());
  } else if (spec_.op == Op::kGroupedGemm) {
    return unexpected(lex_.peek(), "'[' after grouped_gemm: grouped_gemm[experts=E,layout=offsets|masked]");
  }

  for (;;) {
    Token k = lex_.take();
    if (k.kind == Tok::kEnd) break;
    if (k.kind != Tok::kWord) return unexpected(k, string("a key (") + kKeyList + ") or the end of the spec");
    const auto key = key_from_name(k.text);
    if (!key) {
      if (k.text == "experts" || k.text == "layout")
        return error(
            k.pos,
            "'" + string(k.text) +
                "' is a property of grouped_gemm; write grouped_gemm[experts=E,layout=offsets|masked]");
      return error(k.pos, "unknown key '" + echo(k.text) + "'; expected one of " + kKeyList);
    }
    const size_t ki = static_cast<size_t>(*key);
    if (pos_.key[ki]) {
      return error(k.pos,
                   "duplicate key '" + string(k.text) + "' (first given at " + pos_text(*pos_.key[ki]) + ")");
    }
    pos_.key[ki] = k.pos;
    Token eq = lex_.take();
    if (eq.kind != Tok::kEquals) return unexpected(eq, "'=' after key '" + string(k.text) + "'");
    KILN_RETURN_IF_ERROR(parse_kv(k, *key));
  }

  // Required operands per op.
  const Pos end = lex_.after_last();
  const bool has_b_role = spec_.op != Op::kQuantize;
  if (!has_b_role && pos_.key[static_cast<size_t>(Key::kB)])
    return error(
        *pos_.key[static_cast<size_t>(Key::kB)],
        "quantize takes no operand 'b'; it reads a and writes out (quantize a=<bf16|f16|f32> out=<format>)");
  for (Key k : {Key::kA, Key::kB, Key::kOut}) {
    if (k == Key::kB && !has_b_role) continue;
    if (!pos_.key[static_cast<size_t>(k)]) {
      const string need = has_b_role ? "a=, b= and out=" : "a= and out=";
      return error(end, string("missing operand '") + kKeyNames[static_cast<size_t>(k)] + "'; " +
                            op_name(spec_.op) + " needs " + need);
    }
  }

  spec_.a = with_implied_scales(spec_.a);
  if (has_b_role) spec_.b = with_implied_scales(spec_.b);
  spec_.out = with_implied_scales(spec_.out);
  if (const auto& at = pos_.value[static_cast<size_t>(Key::kEpilogue)]; at) {
    // Canonical form, parsed in the context of the whole spec (errors: validation below reports them
    // at their place in the string, with the rules that come first in find_violation's order).
    const EpilogueContext ctx = EpilogueContext::of(spec_);
    if (StatusOr<Epilogue> ep = parse_epilogue(epilogue_text_, ctx); ep.ok()) {
      spec_.epilogue = print_epilogue(*ep);
    } else {
      spec_.epilogue = string(epilogue_text_);
    }
    if (spec_.epilogue.empty())
      return error(*at, "epilogue=\"\" is empty; write a program such as epilogue=\"out = silu(acc)\", or omit "
                        "the key");
  }
  if (auto v = find_violation(spec_)) return positioned(*v);
  if (mode_) {
    if (auto msg = spec_internal::mode_mismatch(spec_, *mode_))
      return error(*pos_.value[static_cast<size_t>(Key::kMode)], *msg);
  }
  return spec_;
}

Status Parser::parse_props() {
  const Token open = lex_.take();  // '['
  const string unterminated = "unterminated '[' opened at " + pos_text(open.pos);
  for (;;) {
    Token name = lex_.take();
    if (name.kind == Tok::kEnd)
      return error(name.pos, unterminated + "; expected a property (experts, layout)");
    if (name.kind != Tok::kWord) return unexpected(name, "a property (experts or layout)");
    const bool is_experts = name.text == "experts";
    if (!is_experts && name.text != "layout")
      return error(name.pos, "unknown property '" + echo(name.text) + "'; expected experts or layout");
    std::optional<Pos>& seen = is_experts ? pos_.experts_key : pos_.layout_key;
    if (seen)
      return error(name.pos,
                   "duplicate property '" + string(name.text) + "' (first given at " + pos_text(*seen) + ")");
    seen = name.pos;
    Token eq = lex_.take();
    if (eq.kind != Tok::kEquals) return unexpected(eq, "'=' after property '" + string(name.text) + "'");
    if (is_experts) {
      KILN_ASSIGN_OR_RETURN(Token v,
                            expect_word("the number of experts (1.." + std::to_string(kMaxExperts) + ")"));
      const IntWord n = parse_int(v.text);
      if (!n.ok) return error(v.pos, "experts expects an integer, got '" + echo(v.text) + "'");
      if (n.big || n.value < 1 || n.value > kMaxExperts)
        return error(v.pos, "experts=" + echo(v.text) + " is out of range; grouped_gemm accepts 1.." +
                                std::to_string(kMaxExperts) + " experts");
      spec_.experts = static_cast<int>(n.value);
      pos_.experts = v.pos;
    } else {
      KILN_ASSIGN_OR_RETURN(Token v, expect_word("a layout (offsets or masked)"));
      const auto l = group_layout_from_name(v.text);
      if (!l || *l == GroupLayout::kDense)
        return error(v.pos, "unknown layout '" + echo(v.text) + "'; expected offsets or masked");
      spec_.layout = *l;
      pos_.layout = v.pos;
    }
    Token sep = lex_.take();
    if (sep.kind == Tok::kRBracket) break;
    if (sep.kind == Tok::kEnd) return error(sep.pos, unterminated + "; expected ',' or ']'");
    if (sep.kind != Tok::kComma) return unexpected(sep, "',' or ']'");
  }
  const string op = op_name(spec_.op);
  if (!pos_.experts) return error(pos_.op, op + " needs experts=E in its [properties]");
  if (!pos_.layout) return error(pos_.op, op + " needs layout=offsets or layout=masked in its [properties]");
  return Status::Ok();
}

template <typename E, typename FromName>
Status parse_enum(Lexer& lex, const string& key, const char* choices, FromName from_name, E& out,
                  std::optional<Pos>& at) {
  Token v = lex.take();
  if (v.kind == Tok::kError) return InvalidArgument(pos_prefix(v.pos) + v.error);
  if (v.kind != Tok::kWord)
    return InvalidArgument(pos_prefix(v.pos) + "expected a value for " + key + " (" + choices + "), got " +
                           describe(v));
  const auto e = from_name(v.text);
  if (!e)
    return InvalidArgument(pos_prefix(v.pos) + "unknown value '" + echo(v.text) + "' for " + key +
                           "; expected one of " + choices);
  out = *e;
  at = v.pos;
  return Status::Ok();
}

Status Parser::parse_kv(const Token& key_tok, Key key) {
  const size_t ki = static_cast<size_t>(key);
  const string k(key_tok.text);
  auto& at = pos_.value[ki];
  switch (key) {
    case Key::kA:
      return parse_operand(Role::kA, spec_.a);
    case Key::kB:
      return parse_operand(Role::kB, spec_.b);
    case Key::kOut:
      return parse_operand(Role::kOut, spec_.out);
    case Key::kPass:
      return parse_enum(lex_, k, pass_names(), pass_from_name, spec_.pass, at);
    case Key::kGateUp:
      return parse_enum(lex_, k, "none, interleaved, stacked", gate_up_from_name, spec_.gate_up, at);
    case Key::kMxRound:
      return parse_enum(lex_, k, mx_rounding_names(), mx_rounding_from_name, spec_.mx_rounding, at);
    case Key::kFp8Sat:
      return parse_enum(lex_, k, fp8_saturation_names(), fp8_saturation_from_name, spec_.fp8_saturation, at);
    case Key::kFourOverSix:
      return parse_enum(lex_, k, four_over_six_names(), four_over_six_from_name, spec_.four_over_six, at);
    case Key::kNvfp4Global:
      return parse_enum(lex_, k, global_scale_names(), global_scale_from_name, spec_.nvfp4_global, at);
    case Key::kMode: {
      BackwardMode m{};
      KILN_RETURN_IF_ERROR(parse_enum(lex_, k, backward_mode_names(), backward_mode_from_name, m, at));
      mode_ = m;
      return Status::Ok();
    }
    case Key::kTranspose:
    case Key::kAccumulate: {
      auto bool_from_name = [](std::string_view n) -> std::optional<bool> {
        if (n == "true") return true;
        if (n == "false") return false;
        return std::nullopt;
      };
      return parse_enum(lex_, k, "true, false", bool_from_name,
                        key == Key::kTranspose ? spec_.transpose : spec_.accumulate, at);
    }
    case Key::kE4m3Bound: {
      KILN_ASSIGN_OR_RETURN(Token v, expect_word("a value for e4m3_bound (448 or 256)"));
      const IntWord n = parse_int(v.text);
      if (!n.ok || n.big || n.value < -(1LL << 30) || n.value > (1LL << 30))
        return error(v.pos, "e4m3_bound=" + echo(v.text) + " is not accepted; use 448 (the default) or 256");
      spec_.e4m3_bound = static_cast<int>(n.value);
      at = v.pos;
      return Status::Ok();
    }
    case Key::kEpilogue: {
      Token v = lex_.take();
      if (v.kind == Tok::kError) return error(v.pos, v.error);
      if (v.kind != Tok::kString)
        return error(v.pos, "expected a quoted epilogue program after epilogue= (epilogue=\"out = silu(acc)\"), got " +
                                describe(v));
      epilogue_text_ = v.text;
      at = v.pos;
      return Status::Ok();
    }
    case Key::kCount:
      break;
  }
  return Internal("parse_kv: unhandled key");
}

Status Parser::parse_operand(Role role, OperandSpec& out) {
  const string key = role_key(role);
  OperandPos& p = pos_.operand[static_cast<size_t>(role)];
  p.key = pos_.key[static_cast<size_t>(role)];
  KILN_ASSIGN_OR_RETURN(Token f,
                        expect_word(string("a format for operand '") + key + "' (" + format_names() + ")"));
  const auto format = format_from_name(f.text);
  if (!format)
    return error(f.pos, "unknown format '" + echo(f.text) + "' for operand '" + key + "'; expected one of " +
                            format_names());
  out.format = *format;
  p.format = f.pos;
  if (lex_.peek().kind != Tok::kColon) return Status::Ok();
  lex_.take();
  KILN_ASSIGN_OR_RETURN(Token second, expect_word("a scale granularity or scale type after ':'"));
  const auto g = scale_granularity_from_name(second.text);
  const auto t = scale_type_from_name(second.text);
  if (g && *g != ScaleGranularity::kNone) {
    out.scale = *g;
    p.scale = second.pos;
  } else if (t && *t != ScaleType::kNone) {
    out.scale_type = *t;
    p.scale_type = second.pos;
    if (lex_.peek().kind == Tok::kColon)
      return error(lex_.peek().pos, "unexpected ':' after scale type '" + string(second.text) +
                                        "'; the order is format:granularity:scale_type");
    return Status::Ok();
  } else {
    return error(second.pos,
                 "unknown granularity or scale type '" + echo(second.text) + "' for operand '" + key +
                     "'; expected a granularity (tensor, m, n, block1x128, block128x128, block1x32, "
                     "block1x16) or a scale type (f32, ue8m0, ue4m3)");
  }
  if (lex_.peek().kind != Tok::kColon) return Status::Ok();
  lex_.take();
  KILN_ASSIGN_OR_RETURN(Token third, expect_word("a scale type after ':' (f32, ue8m0, ue4m3)"));
  const auto t3 = scale_type_from_name(third.text);
  if (!t3 || *t3 == ScaleType::kNone)
    return error(third.pos, "unknown scale type '" + echo(third.text) + "' for operand '" + key +
                                "'; expected one of f32, ue8m0, ue4m3");
  out.scale_type = *t3;
  p.scale_type = third.pos;
  return Status::Ok();
}

Status Parser::positioned(const Violation& v) const {
  std::optional<Pos> at;
  auto value_of = [&](Key k) { return pos_.value[static_cast<size_t>(k)]; };
  switch (v.where.field) {
    case Field::kOp:
      at = pos_.op;
      break;
    case Field::kExperts:
      at = pos_.experts;
      break;
    case Field::kLayout:
      at = pos_.layout;
      break;
    case Field::kPass:
      at = value_of(Key::kPass);
      break;
    case Field::kGateUp:
      at = value_of(Key::kGateUp);
      break;
    case Field::kTranspose:
      at = value_of(Key::kTranspose);
      break;
    case Field::kAccumulate:
      at = value_of(Key::kAccumulate);
      break;
    case Field::kMxRound:
      at = value_of(Key::kMxRound);
      break;
    case Field::kFp8Sat:
      at = value_of(Key::kFp8Sat);
      break;
    case Field::kFourOverSix:
      at = value_of(Key::kFourOverSix);
      break;
    case Field::kE4m3Bound:
      at = value_of(Key::kE4m3Bound);
      break;
    case Field::kNvfp4Global:
      at = value_of(Key::kNvfp4Global);
      break;
    case Field::kMode:
      at = value_of(Key::kMode);
      break;
    case Field::kEpilogue:
      at = value_of(Key::kEpilogue);
      if (at && v.inner_line > 0) at = inner_pos(*at, v.inner_line, v.inner_col);
      break;
    case Field::kOperand: {
      const OperandPos& p = pos_.operand[static_cast<size_t>(v.where.role)];
      switch (v.where.part) {
        case Part::kWhole:
          at = p.key;
          break;
        case Part::kFormat:
          at = p.format;
          break;
        case Part::kScale:
          at = p.scale ? p.scale : p.format;
          break;  // implied: blame the format
        case Part::kScaleType:
          at = p.scale_type ? p.scale_type : p.format;
          break;
      }
      break;
    }
  }
  return error(at.value_or(pos_.op), v.message);
}

}  // namespace
}  // namespace spec_internal

StatusOr<KernelSpec> parse_spec(std::string_view text) {
  using namespace spec_internal;
  if (text.size() > kMaxSpecBytes) {
    return InvalidArgument(pos_prefix(lex::position_of(text, kMaxSpecBytes)) + "spec text is " +
                           std::to_string(text.size()) + " bytes; at most " + std::to_string(kMaxSpecBytes) +
                           " are accepted");
  }
  return Parser(text).run();
}

}  // namespace kiln
